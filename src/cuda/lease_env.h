/*
 * lease_env.h - the lease a program is handed in its environment
 * (docs/cuda-driver.md, "Without the wrapper"; `gpulease exec` sets it):
 * read, connected to, queried, and its GPU found in the daemon's
 * inventory. Shared by the CUDA driver shim (cuInit) and the NVML shim
 * (nvmlInit, src/nvml), which map a failure to their own error codes.
 * Internal; not thread-safe (the callers hold their locks).
 */
#ifndef GL_CUDA_LEASE_ENV_H
#define GL_CUDA_LEASE_ENV_H

#include "gpulease/gpulease.h"

/* How opening failed. */
typedef enum gl_lease_env_failure {
  GL_LEASE_ENV_OK = 0,
  GL_LEASE_ENV_NO_LEASE,    /* GPULEASE_LEASE or GPULEASE_SECRET is unset or empty */
  GL_LEASE_ENV_MALFORMED,   /* one of them is not a lease id, not a secret */
  GL_LEASE_ENV_UNREACHABLE, /* the connection to GPULEASE_ADDR failed */
  GL_LEASE_ENV_LEASE,       /* LEASE_QUERY failed (status says why) */
  GL_LEASE_ENV_INVENTORY,   /* GET_INVENTORY failed, or lists no GPU of the lease */
  GL_LEASE_ENV_NO_MEMORY,
} gl_lease_env_failure;

typedef struct gl_lease_env {
  gpulease_client *client;  /* open on success, NULL on failure; the caller closes it */
  gpulease_lease lease;     /* as LEASE_QUERY answered */
  gpulease_gpu_info gpu;    /* the lease's GPU, from the inventory */
  char driver_version[64];  /* the inventory's ("": no NVIDIA driver on the node) */
  gpulease_status status;   /* on failure: libgpulease's status, where one */
  char message[1200];       /* on failure: one line saying what and what to do */
} gl_lease_env;

/* Fills *e (caller-owned, overwritten) from GPULEASE_LEASE, GPULEASE_SECRET,
 * and the connection variables GPULEASE_ADDR, GPULEASE_CA,
 * GPULEASE_PIN_SHA256, GPULEASE_INSECURE, GPULEASE_CERT, GPULEASE_KEY,
 * GPULEASE_TOKEN, GPULEASE_TIMEOUT_MS (milliseconds), GPULEASE_STRIPES,
 * GPULEASE_NO_LOCAL; connects (gpulease_client_connect), reads the lease
 * (LEASE_QUERY) and its GPU (GET_INVENTORY). Returns GL_LEASE_ENV_OK, or
 * the failure with e->message (and e->status where libgpulease gave one);
 * nothing stays open on failure. */
gl_lease_env_failure gl_lease_env_open(gl_lease_env *e);

#endif /* GL_CUDA_LEASE_ENV_H */
