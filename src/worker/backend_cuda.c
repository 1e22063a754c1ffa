/*
 * backend_cuda.c - the worker backend on the CUDA driver API.
 *
 * One worker process holds one lease, so the device's primary context is
 * the lease's private context: init retains it and makes it current on the
 * worker's only thread. The lease's region is a single cuMemAlloc of
 * vram_bytes, zeroed before first use; kernel pointers are the region's
 * base plus an offset. Launches go to the legacy default stream, bracketed
 * by two events for the GPU time, then cuCtxSynchronize.
 *
 * Error messages always name the CUDA error ("CUDA_ERROR_ILLEGAL_ADDRESS")
 * and its description. After a fault that leaves the context unusable
 * (sticky errors: illegal address, illegal instruction, assert, ...) the
 * backend reports context_lost and the worker exits.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "gpu/cuda_api.h"
#include "worker/backend.h"

#define JIT_LOG_BYTES 16384

typedef struct cuda_backend {
  gl_backend base;
  gl_cuda cu;
  bool loaded;      /* cu is filled */
  bool initialised; /* cuInit succeeded */
  bool have_device; /* init succeeded */
  bool lost;
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr region;
  uint64_t region_bytes;
  CUevent ev_start, ev_stop;
  char jit_error[JIT_LOG_BYTES];
  char jit_info[JIT_LOG_BYTES];
} cuda_backend;

static cuda_backend *as_cuda(gl_backend *b) { return (cuda_backend *)b; }

/* ---- helpers ----------------------------------------------------------------- */

/* Errors after which the context is unusable: every later call fails. */
static bool is_sticky(CUresult r) {
  switch (r) {
  case CUDA_ERROR_ECC_UNCORRECTABLE:
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_CONTEXT_IS_DESTROYED:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_UNKNOWN:
    return true;
  default:
    return false;
  }
}

/* Records whether failure r of an operation on a live context killed it:
 * a known sticky error, or a context that no longer synchronises. */
static void note_failure(cuda_backend *c, CUresult r) {
  if (!c->have_device || c->lost) return;
  if (is_sticky(r) || c->cu.cuCtxSynchronize() != CUDA_SUCCESS) c->lost = true;
}

/* Formats "<what>: CUDA_ERROR_X (description)" into err. */
static void cu_msg(cuda_backend *c, CUresult r, const char *what, char *err, size_t errlen) {
  char name[64];
  gl_cuda_error_name(&c->cu, r, name, sizeof name);
  snprintf(err, errlen, "%s: %s (%s)", what, name, gl_cuda_error_string(&c->cu, r));
}

/* Loads the driver and calls cuInit(0), once. NO_DEVICE with the reason. */
static gpulease_status ensure_driver(cuda_backend *c, char *err, size_t errlen) {
  if (c->initialised) return GPULEASE_OK;
  if (!c->loaded) {
    if (gl_cuda_load(&c->cu, err, errlen) != 0) return GPULEASE_NO_DEVICE;
    c->loaded = true;
  }
  CUresult r = c->cu.cuInit(0);
  if (r != CUDA_SUCCESS) {
    cu_msg(c, r, "CUDA driver cannot be initialised: cuInit", err, errlen);
    return GPULEASE_NO_DEVICE;
  }
  c->initialised = true;
  return GPULEASE_OK;
}

/* ---- probe and init ------------------------------------------------------ */

static gpulease_status cuda_probe(gl_backend *b, gl_probe_resp *out, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  memset(out, 0, sizeof *out);
  gpulease_status st = ensure_driver(c, err, errlen);
  if (st != GPULEASE_OK) return st;
  const gl_cuda *cu = &c->cu;
  int count = 0;
  CUresult r = cu->cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS) {
    cu_msg(c, r, "cuDeviceGetCount", err, errlen);
    return GPULEASE_NO_DEVICE;
  }
  for (int i = 0; i < count && out->count < GPULEASE_MAX_GPUS; i++) {
    gl_probe_gpu *g = &out->gpus[out->count];
    CUdevice dev;
    CUuuid uuid;
    size_t total = 0;
    int major = 0, minor = 0, sms = 0;
    char name[96];
    memset(name, 0, sizeof name);
    const char *what = NULL;
    if ((r = cu->cuDeviceGet(&dev, i)) != CUDA_SUCCESS)
      what = "cuDeviceGet";
    else if ((r = cu->cuDeviceGetName(name, (int)sizeof name - 1, dev)) != CUDA_SUCCESS)
      what = "cuDeviceGetName";
    else if ((r = cu->cuDeviceGetUuid(&uuid, dev)) != CUDA_SUCCESS)
      what = "cuDeviceGetUuid";
    else if ((r = cu->cuDeviceTotalMem(&total, dev)) != CUDA_SUCCESS)
      what = "cuDeviceTotalMem";
    else if ((r = cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                           dev)) != CUDA_SUCCESS ||
             (r = cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                           dev)) != CUDA_SUCCESS ||
             (r = cu->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)) !=
                 CUDA_SUCCESS)
      what = "cuDeviceGetAttribute";
    if (what) {
      /* One broken device should not hide the others: skip it, loudly. */
      char msg[256];
      cu_msg(c, r, what, msg, sizeof msg);
      GL_WARN("probe: CUDA device %d skipped: %s", i, msg);
      continue;
    }
    gl_cuda_uuid_format(&uuid, g->uuid, sizeof g->uuid);
    snprintf(g->name, sizeof g->name, "%s", name);
    g->cc_major = (uint8_t)(major > 0 && major < 256 ? major : 0);
    g->cc_minor = (uint8_t)(minor > 0 && minor < 256 ? minor : 0);
    g->sm_count = sms > 0 ? (uint32_t)sms : 0;
    g->total_vram_bytes = total;
    out->count++;
  }
  return GPULEASE_OK;
}

/* Undoes a partial init. */
static void release_device(cuda_backend *c) {
  const gl_cuda *cu = &c->cu;
  if (c->ev_start) cu->cuEventDestroy(c->ev_start);
  if (c->ev_stop) cu->cuEventDestroy(c->ev_stop);
  if (c->region) cu->cuMemFree(c->region);
  if (c->ctx) {
    cu->cuCtxSetCurrent(NULL);
    cu->cuDevicePrimaryCtxRelease(c->dev);
  }
  c->ev_start = c->ev_stop = NULL;
  c->region = 0;
  c->ctx = NULL;
  c->have_device = false;
}

static gpulease_status cuda_init(gl_backend *b, uint32_t ordinal, uint64_t vram_bytes,
                                 uint64_t *region_base, char *device_name, size_t name_len,
                                 char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  gpulease_status st = ensure_driver(c, err, errlen);
  if (st != GPULEASE_OK) return st;
  const gl_cuda *cu = &c->cu;
  char what[160];
  int count = 0;
  cu->cuDeviceGetCount(&count);
  CUresult r = CUDA_ERROR_INVALID_DEVICE;
  if (ordinal > INT32_MAX || (r = cu->cuDeviceGet(&c->dev, (int)ordinal)) != CUDA_SUCCESS) {
    char ename[64];
    snprintf(err, errlen, "CUDA device %u: %s (the driver sees %d device%s)", ordinal,
             gl_cuda_error_name(cu, r, ename, sizeof ename), count, count == 1 ? "" : "s");
    return GPULEASE_NO_DEVICE;
  }
  char name[96];
  memset(name, 0, sizeof name);
  if (cu->cuDeviceGetName(name, (int)sizeof name - 1, c->dev) != CUDA_SUCCESS)
    snprintf(name, sizeof name, "CUDA device %u", ordinal);
  size_t total = 0;
  cu->cuDeviceTotalMem(&total, c->dev);

  if ((r = cu->cuDevicePrimaryCtxRetain(&c->ctx, c->dev)) != CUDA_SUCCESS) {
    c->ctx = NULL;
    snprintf(what, sizeof what, "cuDevicePrimaryCtxRetain(device %u)", ordinal);
    goto fail_internal;
  }
  if ((r = cu->cuCtxSetCurrent(c->ctx)) != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuCtxSetCurrent(device %u)", ordinal);
    goto fail_internal;
  }
  if (vram_bytes > SIZE_MAX) {
    r = CUDA_ERROR_OUT_OF_MEMORY;
  } else {
    r = cu->cuMemAlloc(&c->region, (size_t)vram_bytes);
  }
  if (r != CUDA_SUCCESS) {
    c->region = 0;
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      snprintf(err, errlen,
               "cannot reserve %" PRIu64 " bytes on device %u (%s, %zu bytes in total): "
               "CUDA_ERROR_OUT_OF_MEMORY",
               vram_bytes, ordinal, name, total);
      release_device(c);
      return GPULEASE_CAPACITY_EXCEEDED;
    }
    snprintf(what, sizeof what, "cuMemAlloc(%" PRIu64 " bytes)", vram_bytes);
    goto fail_internal;
  }
  /* No earlier tenant's data may ever be visible. */
  if ((r = cu->cuMemsetD8(c->region, 0, (size_t)vram_bytes)) != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuMemsetD8(%" PRIu64 " bytes)", vram_bytes);
    goto fail_internal;
  }
  if ((r = cu->cuEventCreate(&c->ev_start, CU_EVENT_DEFAULT)) != CUDA_SUCCESS ||
      (r = cu->cuEventCreate(&c->ev_stop, CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuEventCreate");
    goto fail_internal;
  }
  if ((r = cu->cuCtxSynchronize()) != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuCtxSynchronize after zeroing the region");
    goto fail_internal;
  }
  c->region_bytes = vram_bytes;
  c->have_device = true;
  *region_base = (uint64_t)c->region;
  snprintf(device_name, name_len, "%s", name);
  return GPULEASE_OK;

fail_internal:
  cu_msg(c, r, what, err, errlen);
  release_device(c);
  return GPULEASE_INTERNAL;
}

/* ---- modules and functions ----------------------------------------------- */

/* Trims trailing whitespace of a NUL-terminated log in place. */
static void trim(char *s) {
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
    s[--n] = 0;
}

static gpulease_status cuda_load_module(gl_backend *b, const uint8_t *image, size_t len,
                                        gpulease_image_format format, void **module, char *err,
                                        size_t errlen) {
  cuda_backend *c = as_cuda(b);
  (void)len; /* PTX is NUL-terminated; cubin and fatbin carry their size */
  memset(c->jit_error, 0, sizeof c->jit_error);
  memset(c->jit_info, 0, sizeof c->jit_info);
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void *vals[] = {c->jit_error, (void *)(uintptr_t)(sizeof c->jit_error - 1), c->jit_info,
                  (void *)(uintptr_t)(sizeof c->jit_info - 1)};
  CUmodule mod = NULL;
  CUresult r = c->cu.cuModuleLoadDataEx(&mod, image, (unsigned)(sizeof opts / sizeof opts[0]),
                                        opts, vals);
  c->jit_error[sizeof c->jit_error - 1] = 0;
  c->jit_info[sizeof c->jit_info - 1] = 0;
  trim(c->jit_error);
  trim(c->jit_info);
  if (r != CUDA_SUCCESS) {
    char name[64];
    gl_cuda_error_name(&c->cu, r, name, sizeof name);
    const char *log = c->jit_error[0] ? c->jit_error : c->jit_info;
    snprintf(err, errlen, "cuModuleLoadDataEx (%s image): %s: %s",
             format == GPULEASE_IMAGE_PTX      ? "PTX"
             : format == GPULEASE_IMAGE_CUBIN ? "cubin"
                                               : "fatbin",
             name, log[0] ? log : gl_cuda_error_string(&c->cu, r));
    note_failure(c, r);
    return GPULEASE_LOAD_FAILED;
  }
  if (c->jit_info[0]) GL_DEBUG("JIT: %s", c->jit_info);
  *module = mod;
  return GPULEASE_OK;
}

static void cuda_unload_module(gl_backend *b, void *module) {
  cuda_backend *c = as_cuda(b);
  if (module && !c->lost) c->cu.cuModuleUnload((CUmodule)module);
}

static gpulease_status cuda_get_function(gl_backend *b, void *module, const char *name,
                                         void **fn, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUfunction f = NULL;
  CUresult r = c->cu.cuModuleGetFunction(&f, (CUmodule)module, name);
  if (r == CUDA_ERROR_NOT_FOUND) {
    snprintf(err, errlen,
             "function '%s' not found in module (CUDA_ERROR_NOT_FOUND); C++ kernels need "
             "extern \"C\" or their mangled name",
             name);
    return GPULEASE_LAUNCH_FAILED;
  }
  if (r != CUDA_SUCCESS) {
    char what[GL_WIRE_MAX_KERNEL_NAME + 32];
    snprintf(what, sizeof what, "cuModuleGetFunction('%s')", name);
    cu_msg(c, r, what, err, errlen);
    note_failure(c, r);
    return GPULEASE_LAUNCH_FAILED;
  }
  *fn = f;
  return GPULEASE_OK;
}

static gpulease_status cuda_param_sizes(gl_backend *b, void *fn, size_t *sizes, size_t max,
                                        size_t *count, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  if (!c->cu.cuFuncGetParamInfo) {
    snprintf(err, errlen, "cuFuncGetParamInfo needs a CUDA 12.4 driver");
    return GPULEASE_UNSUPPORTED;
  }
  size_t n = 0;
  for (;; n++) {
    size_t off = 0, size = 0;
    CUresult r = c->cu.cuFuncGetParamInfo((CUfunction)fn, n, &off, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) break; /* past the last parameter */
    if (r != CUDA_SUCCESS) {
      cu_msg(c, r, "cuFuncGetParamInfo", err, errlen);
      return GPULEASE_UNSUPPORTED;
    }
    if (n < max) sizes[n] = size;
    if (n >= GL_BACKEND_ARG_SLOTS) break; /* cannot be: the parameter space is smaller */
  }
  *count = n;
  return GPULEASE_OK;
}

/* ---- memory and launch ----------------------------------------------------- */

static gpulease_status cuda_write(gl_backend *b, uint64_t offset, const void *src, size_t len,
                                  char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUresult r = c->cu.cuMemcpyHtoD(c->region + offset, src, len);
  if (r != CUDA_SUCCESS) {
    char what[96];
    snprintf(what, sizeof what, "cuMemcpyHtoD(%zu bytes at offset %" PRIu64 ")", len, offset);
    cu_msg(c, r, what, err, errlen);
    note_failure(c, r);
    return GPULEASE_WRITE_FAILED;
  }
  return GPULEASE_OK;
}

static gpulease_status cuda_read(gl_backend *b, uint64_t offset, void *dst, size_t len,
                                 char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUresult r = c->cu.cuMemcpyDtoH(dst, c->region + offset, len);
  if (r != CUDA_SUCCESS) {
    char what[96];
    snprintf(what, sizeof what, "cuMemcpyDtoH(%zu bytes at offset %" PRIu64 ")", len, offset);
    cu_msg(c, r, what, err, errlen);
    note_failure(c, r);
    return GPULEASE_READ_FAILED;
  }
  return GPULEASE_OK;
}

static gpulease_status cuda_launch(gl_backend *b, void *fn, const gl_launch *l,
                                   uint64_t *gpu_time_ns, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  const gl_cuda *cu = &c->cu;
  char what[GL_WIRE_MAX_KERNEL_NAME + 128];
  CUresult r = cu->cuEventRecord(c->ev_start, NULL);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuEventRecord");
    goto fail;
  }
  r = cu->cuLaunchKernel((CUfunction)fn, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                         l->block[1], l->block[2], l->shared_mem_bytes, NULL, l->args, NULL);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuLaunchKernel('%s', grid %ux%ux%u, block %ux%ux%u, %u bytes "
                                "of shared memory)",
             l->kernel_name, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
             l->block[2], l->shared_mem_bytes);
    goto fail;
  }
  r = cu->cuEventRecord(c->ev_stop, NULL);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuEventRecord");
    goto fail;
  }
  r = cu->cuCtxSynchronize();
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "kernel '%s' failed", l->kernel_name);
    goto fail;
  }
  float ms = 0.0f;
  r = cu->cuEventElapsedTime(&ms, c->ev_start, c->ev_stop);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuEventElapsedTime");
    goto fail;
  }
  *gpu_time_ns = ms > 0.0f ? (uint64_t)((double)ms * 1e6) : 0;
  return GPULEASE_OK;

fail:
  cu_msg(c, r, what, err, errlen);
  note_failure(c, r);
  if (c->lost) {
    size_t n = strlen(err);
    if (n < errlen)
      snprintf(err + n, errlen - n, "; the lease's CUDA context is lost: its next "
                                    "request gets a fresh one, with the region zeroed");
  }
  return GPULEASE_LAUNCH_FAILED;
}

static bool cuda_context_lost(gl_backend *b) { return as_cuda(b)->lost; }

static void cuda_destroy(gl_backend *b) {
  cuda_backend *c = as_cuda(b);
  if (c->have_device && !c->lost) release_device(c);
  free(c);
}

static const gl_backend_ops k_cuda_ops = {
    .name = "cuda",
    .probe = cuda_probe,
    .init = cuda_init,
    .load_module = cuda_load_module,
    .unload_module = cuda_unload_module,
    .get_function = cuda_get_function,
    .param_sizes = cuda_param_sizes,
    .write = cuda_write,
    .launch = cuda_launch,
    .read = cuda_read,
    .context_lost = cuda_context_lost,
    .destroy = cuda_destroy,
};

gl_backend *gl_backend_cuda_new(void) {
  cuda_backend *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->base.ops = &k_cuda_ops;
  return &c->base;
}
