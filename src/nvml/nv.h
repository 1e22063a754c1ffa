/*
 * nv.h - what the NVML shim's files share: the process-wide state (the
 * lease from the environment, one connection to its daemon while NVML is
 * initialised, the lease's GPU as the daemon's inventory lists it) and the
 * helpers every entry point calls. Internal names use the prefix gl_nv_;
 * the exported names are NVML's own (docs/cuda-driver.md, "NVML").
 *
 * Every entry point that reads the state takes gl_nv.mu: NVML's API is
 * thread-safe, libgpulease's client is one stream of requests.
 */
#ifndef GL_NVML_NV_H
#define GL_NVML_NV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "gpulease/gpulease.h"
#include "nvml/nvml_types.h"

/* The one device's handle: nvmlDevice_t points at gl_nv.device. */
struct nvmlDevice_st {
  unsigned magic;
};
#define GL_NV_DEVICE_MAGIC 0x6e766d6cu /* "nvml" */

typedef struct gl_nv_state {
  pthread_mutex_t mu;
  unsigned refs;              /* nvmlInit* less nvmlShutdown; 0: not initialised */
  gpulease_client *client;    /* while refs > 0 */
  gpulease_lease lease;       /* as the daemon answered at init */
  gpulease_gpu_info gpu;      /* the lease's GPU in the inventory */
  char driver_version[80];    /* the node's NVIDIA driver, or "gpulease-VERSION" */
  bool exit_hook;             /* atexit registered */
  struct nvmlDevice_st device;
} gl_nv_state;

extern gl_nv_state gl_nv;

/* Under gl_nv.mu: NVML_SUCCESS when initialised and dev is the device's
 * handle; else NVML_ERROR_UNINITIALIZED or NVML_ERROR_INVALID_ARGUMENT. */
nvmlReturn_t gl_nv_check(nvmlDevice_t dev);

/* NVML_ERROR_NOT_SUPPORTED, said once on stderr per entry point (*said is
 * that entry point's own flag): "gpulease: NAME is not supported by the
 * gpulease NVML library", with why in parentheses where given. */
nvmlReturn_t gl_nv_unsupported(const char *name, atomic_bool *said, const char *why);

/* Copies s to buf (len bytes): NVML_ERROR_INSUFFICIENT_SIZE when it does
 * not fit with its NUL, NVML_ERROR_INVALID_ARGUMENT for a NULL buffer. */
nvmlReturn_t gl_nv_copy_string(char *buf, unsigned len, const char *s);

#endif /* GL_NVML_NV_H */
