/*
 * state.c - the NVML shim's process-wide state: nvmlInit reads the lease
 * from the environment with the CUDA shim's src/cuda/lease_env.c
 * (docs/cuda-driver.md "Without the wrapper"): its daemon, the lease and
 * its GPU; nvmlShutdown closes the connection when the last nvmlInit is
 * matched. Also the error strings and the system queries.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/lease_env.h"
#include "nvml/nv.h"

gl_nv_state gl_nv = {.mu = PTHREAD_MUTEX_INITIALIZER, .device = {GL_NV_DEVICE_MAGIC}};

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

/* The first nvmlInit's work, under the lock: the lease in the
 * environment, its connection and GPU (src/cuda/lease_env.c). On failure
 * nothing stays open. */
static nvmlReturn_t do_init(void) {
  static gl_lease_env e; /* its message is large: not on the caller's stack */
  gl_lease_env_failure f = gl_lease_env_open(&e);
  if (f != GL_LEASE_ENV_OK) {
    nvmlReturn_t st = NVML_ERROR_DRIVER_NOT_LOADED;
    if (f == GL_LEASE_ENV_NO_MEMORY) st = NVML_ERROR_MEMORY;
    if (f == GL_LEASE_ENV_LEASE && e.status == GPULEASE_UNAUTHORIZED) st = NVML_ERROR_NO_PERMISSION;
    return init_fail(st, "%s", e.message);
  }
  gl_nv.gpu = e.gpu;
  if (e.driver_version[0])
    snprintf(gl_nv.driver_version, sizeof gl_nv.driver_version, "%.63s", e.driver_version);
  else /* no NVIDIA driver on the node: the emulated device */
    snprintf(gl_nv.driver_version, sizeof gl_nv.driver_version, "gpulease-%s",
             gpulease_version(NULL, NULL, NULL));
  gl_nv.lease = e.lease;
  gl_nv.client = e.client;
  if (!gl_nv.exit_hook) {
    atexit(at_exit);
    gl_nv.exit_hook = true;
  }
  return NVML_SUCCESS;
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
