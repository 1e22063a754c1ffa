/*
 * state.c - the NVML shim's process-wide state: nvmlInit reads the lease
 * from the environment (as the CUDA shim's cuInit does, docs/cuda-driver.md
 * "Without the wrapper"), connects to its daemon, reads the lease and its
 * GPU; nvmlShutdown closes the connection when the last nvmlInit is
 * matched. Also the error strings and the system queries.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvml/nv.h"

gl_nv_state gl_nv = {.mu = PTHREAD_MUTEX_INITIALIZER, .device = {GL_NV_DEVICE_MAGIC}};

static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

static bool env_on(const char *name) {
  const char *v = env(name);
  return v && strcmp(v, "0") != 0;
}

/* The init failure: its status, and one line on stderr, once a process
 * (a program that polls nvmlInit says nothing new the next time). */
static nvmlReturn_t init_fail(nvmlReturn_t st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static nvmlReturn_t init_fail(nvmlReturn_t st, const char *fmt, ...) {
  static atomic_bool said;
  if (!atomic_exchange(&said, true)) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "gpulease: nvmlInit: %s\n", msg);
  }
  return st;
}

static void close_client(void) {
  if (gl_nv.client) gpulease_client_close(gl_nv.client);
  gl_nv.client = NULL;
  gl_nv.refs = 0;
}

static void at_exit(void) {
  pthread_mutex_lock(&gl_nv.mu);
  close_client();
  pthread_mutex_unlock(&gl_nv.mu);
}

/* The first nvmlInit's work, under the lock: the environment, the
 * connection, the lease, its GPU. On failure nothing stays open. */
static nvmlReturn_t do_init(void) {
  const char *lease_id = env("GPULEASE_LEASE"), *secret = env("GPULEASE_SECRET");
  if (!lease_id || !secret)
    return init_fail(NVML_ERROR_DRIVER_NOT_LOADED,
                     "no lease: run the program under `gpulease exec`, or set GPULEASE_ADDR, "
                     "GPULEASE_LEASE and GPULEASE_SECRET (docs/cuda-driver.md)");
  char *end = NULL;
  errno = 0;
  unsigned long long id = strtoull(lease_id, &end, 10);
  if (errno || !end || *end || id == 0)
    return init_fail(NVML_ERROR_DRIVER_NOT_LOADED, "GPULEASE_LEASE is not a lease id: \"%s\"",
                     lease_id);
  gpulease_lease lease;
  memset(&lease, 0, sizeof lease);
  lease.id = id;
  if (gpulease_secret_from_hex(secret, lease.secret) != GPULEASE_OK)
    return init_fail(NVML_ERROR_DRIVER_NOT_LOADED, "GPULEASE_SECRET is not %d hex digits",
                     2 * GPULEASE_SECRET_BYTES);
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  if (env("GPULEASE_ADDR")) o.addr = env("GPULEASE_ADDR");
  o.ca_file = env("GPULEASE_CA");
  o.pin_sha256 = env("GPULEASE_PIN_SHA256");
  o.insecure = env_on("GPULEASE_INSECURE");
  o.cert_file = env("GPULEASE_CERT");
  o.key_file = env("GPULEASE_KEY");
  o.bearer_token = env("GPULEASE_TOKEN");
  o.no_local = env_on("GPULEASE_NO_LOCAL"); /* QUIC even to a daemon on this machine */
  if (env("GPULEASE_TIMEOUT_MS"))
    o.timeout_ms = (uint32_t)strtoul(env("GPULEASE_TIMEOUT_MS"), NULL, 10);
  gpulease_error err;
  gpulease_client *client = NULL;
  if (gpulease_client_connect(&o, &client, &err) != GPULEASE_OK)
    return init_fail(NVML_ERROR_DRIVER_NOT_LOADED, "cannot reach the daemon at %s: %s: %s",
                     o.addr ? o.addr : "(default)", gpulease_status_name(err.status),
                     err.message);
  nvmlReturn_t st = NVML_SUCCESS;
  gpulease_inventory *inv = NULL;
  if (gpulease_lease_query(client, &lease, &err) != GPULEASE_OK) {
    st = init_fail(err.status == GPULEASE_UNAUTHORIZED ? NVML_ERROR_NO_PERMISSION
                                                       : NVML_ERROR_DRIVER_NOT_LOADED,
                   "lease %llu: %s: %s", id, gpulease_status_name(err.status), err.message);
    goto out;
  }
  inv = malloc(sizeof *inv); /* large: not on the caller's stack */
  if (!inv) {
    st = init_fail(NVML_ERROR_MEMORY, "out of memory");
    goto out;
  }
  gpulease_inventory_init(inv);
  if (gpulease_inventory_get(client, inv, &err) != GPULEASE_OK) {
    st = init_fail(NVML_ERROR_DRIVER_NOT_LOADED, "inventory: %s: %s",
                   gpulease_status_name(err.status), err.message);
    goto out;
  }
  bool found = false;
  for (size_t i = 0; i < inv->gpu_count && i < GPULEASE_MAX_GPUS; i++)
    if (inv->gpus[i].index == lease.gpu_index) {
      gl_nv.gpu = inv->gpus[i];
      found = true;
    }
  if (!found) {
    st = init_fail(NVML_ERROR_DRIVER_NOT_LOADED, "the daemon lists no GPU %u (the lease's)",
                   lease.gpu_index);
    goto out;
  }
  if (inv->driver_version[0])
    snprintf(gl_nv.driver_version, sizeof gl_nv.driver_version, "%.63s", inv->driver_version);
  else /* no NVIDIA driver on the node: the emulated device */
    snprintf(gl_nv.driver_version, sizeof gl_nv.driver_version, "gpulease-%s",
             gpulease_version(NULL, NULL, NULL));
  gl_nv.lease = lease;
  gl_nv.client = client;
  client = NULL;
  if (!gl_nv.exit_hook) {
    atexit(at_exit);
    gl_nv.exit_hook = true;
  }
out:
  free(inv);
  if (client) gpulease_client_close(client);
  return st;
}

GL_NV_API nvmlReturn_t nvmlInitWithFlags(unsigned int flags);
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
  /* NO_GPUS, NO_ATTACH: the lease's one GPU is there or init fails; the
   * shim attaches to nothing either way. */
  if (flags & ~(unsigned)(NVML_INIT_FLAG_NO_GPUS | NVML_INIT_FLAG_NO_ATTACH))
    return NVML_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&gl_nv.mu);
  nvmlReturn_t st = NVML_SUCCESS;
  if (gl_nv.refs == 0) st = do_init();
  if (st == NVML_SUCCESS) gl_nv.refs++;
  pthread_mutex_unlock(&gl_nv.mu);
  return st;
}

GL_NV_API nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }

GL_NV_API nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }

GL_NV_API nvmlReturn_t nvmlShutdown(void);
nvmlReturn_t nvmlShutdown(void) {
  pthread_mutex_lock(&gl_nv.mu);
  nvmlReturn_t st = NVML_SUCCESS;
  if (gl_nv.refs == 0) st = NVML_ERROR_UNINITIALIZED;
  else if (--gl_nv.refs == 0) close_client();
  pthread_mutex_unlock(&gl_nv.mu);
  return st;
}

nvmlReturn_t gl_nv_check(nvmlDevice_t dev) {
  if (gl_nv.refs == 0) return NVML_ERROR_UNINITIALIZED;
  if (dev != &gl_nv.device) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_SUCCESS;
}

nvmlReturn_t gl_nv_unsupported(const char *name, atomic_bool *said, const char *why) {
  if (!atomic_exchange(said, true)) {
    if (why)
      fprintf(stderr, "gpulease: %s is not supported by the gpulease NVML library (%s)\n", name,
              why);
    else
      fprintf(stderr, "gpulease: %s is not supported by the gpulease NVML library\n", name);
  }
  return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t gl_nv_copy_string(char *buf, unsigned len, const char *s) {
  if (!buf) return NVML_ERROR_INVALID_ARGUMENT;
  size_t n = strlen(s);
  if (n >= len) return NVML_ERROR_INSUFFICIENT_SIZE;
  memcpy(buf, s, n + 1);
  return NVML_SUCCESS;
}

GL_NV_API const char *nvmlErrorString(nvmlReturn_t result);
const char *nvmlErrorString(nvmlReturn_t result) {
  switch ((int)result) {
  case NVML_SUCCESS: return "Success";
  case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
  case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
  case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
  case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
  case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
  case NVML_ERROR_NOT_FOUND: return "Not Found";
  case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
  case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
  case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
  case NVML_ERROR_TIMEOUT: return "Timeout";
  case NVML_ERROR_IRQ_ISSUE: return "Interrupt Request Issue";
  case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
  case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
  case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
  case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
  case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
  case NVML_ERROR_OPERATING_SYSTEM: return "The operating system has blocked the request";
  case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "NVML/RM version mismatch";
  case NVML_ERROR_IN_USE: return "In use by another client";
  case NVML_ERROR_MEMORY: return "Insufficient Memory";
  case NVML_ERROR_NO_DATA: return "No data";
  case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED: return "vGPU ECC not supported";
  case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient resources";
  case NVML_ERROR_FREQ_NOT_SUPPORTED: return "Frequency not supported";
  case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
  case NVML_ERROR_DEPRECATED: return "Deprecated";
  case NVML_ERROR_NOT_READY: return "Not ready";
  case NVML_ERROR_GPU_NOT_FOUND: return "GPU not found";
  case NVML_ERROR_INVALID_STATE: return "Invalid state";
  default: return "Unknown Error";
  }
}

GL_NV_API nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length);
nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
  pthread_mutex_lock(&gl_nv.mu);
  nvmlReturn_t st = gl_nv.refs ? gl_nv_copy_string(version, length, gl_nv.driver_version)
                               : NVML_ERROR_UNINITIALIZED;
  pthread_mutex_unlock(&gl_nv.mu);
  return st;
}

/* As NVML writes it: the API version, then the driver's ("13.580.65.06"). */
GL_NV_API nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length);
nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
  pthread_mutex_lock(&gl_nv.mu);
  nvmlReturn_t st = NVML_ERROR_UNINITIALIZED;
  if (gl_nv.refs) {
    char v[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE + 8];
    snprintf(v, sizeof v, "%d.%s", GL_NV_API_VERSION, gl_nv.driver_version);
    st = gl_nv_copy_string(version, length, v);
  }
  pthread_mutex_unlock(&gl_nv.mu);
  return st;
}

/* The CUDA driver API the node's programs get: the CUDA shim's. */
GL_NV_API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion);
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion) {
  if (!cudaDriverVersion) return NVML_ERROR_INVALID_ARGUMENT;
  *cudaDriverVersion = GL_NV_CUDA_DRIVER_VERSION;
  return NVML_SUCCESS;
}

GL_NV_API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion);
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion) {
  return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}
