/*
 * cuda_device.c - the CUDA backend's device and its context: the driver
 * loaded (probe), the device opened and its primary context retained (warm,
 * init, open_shared), the lease's region or the shared leases' ranges, reset
 * and limits; and the helpers every op calls: the lease's context made
 * current on the calling thread, CUDA errors into messages, the sticky
 * faults that lose the context.
 *
 * Shared leases (open_shared): the context holds no region of its own;
 * region_add gives each lease a cuMemAlloc of its own and returns its
 * device pointer as the "offset" (region_base is 0), so every op's
 * c->region + offset is still the right address. The ranges are listed so
 * that destroy frees those still reserved.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "backend/cuda_compat.h"
#include "backend/cuda_internal.h"

/* The per-thread stack a context starts with (CU_LIMIT_STACK_SIZE): none,
 * or this much where the driver refuses 0. */
#define GL_CUDA_START_STACK_BYTES 256

/* ---- helpers ----------------------------------------------------------------- */

/* Errors after which the context is unusable: every later call fails. */
bool gl_cuda__is_sticky(CUresult r) {
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
void gl_cuda__note_failure(cuda_backend *c, CUresult r) {
  if (!c->have_device || is_lost(c)) return;
  if (gl_cuda__is_sticky(r) || c->cu.cuCtxSynchronize() != CUDA_SUCCESS)
    atomic_store(&c->lost, true);
}

/* The same for the session ops: only a known sticky error marks the
 * context lost (cuCtxSynchronize would wait for every other session's
 * work). */
void gl_cuda__note_sticky(cuda_backend *c, CUresult r) {
  if (c->have_device && gl_cuda__is_sticky(r)) atomic_store(&c->lost, true);
}

/* Makes the lease's context current on the calling thread. Session ops
 * come from threads other than the one init ran on; the driver's current
 * context is per thread. */
static __thread CUcontext tl_current; /* what this thread made current */

CUresult gl_cuda__make_current(cuda_backend *c) {
  if (tl_current == c->ctx && c->ctx) return CUDA_SUCCESS;
  CUcontext cur = NULL;
  CUresult r = CUDA_SUCCESS;
  if (c->cu.cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur != c->ctx)
    r = c->cu.cuCtxSetCurrent(c->ctx);
  if (r == CUDA_SUCCESS) tl_current = c->ctx;
  return r;
}

/* Formats "<what>: CUDA_ERROR_X (description)" into err. */
void gl_cuda__cu_msg(cuda_backend *c, CUresult r, const char *what, char *err, size_t errlen) {
  char name[64];
  gl_cuda_error_name(&c->cu, r, name, sizeof name);
  snprintf(err, errlen, "%s: %s (%s)", what, name, gl_cuda_error_string(&c->cu, r));
}

/* Appends the context-lost note to a failure message. */
void gl_cuda__lost_note(cuda_backend *c, char *err, size_t errlen) {
  if (!is_lost(c)) return;
  size_t n = strlen(err);
  if (n < errlen)
    snprintf(err + n, errlen - n, "; the lease's CUDA context is lost: its next "
                                  "request gets a fresh one, with the region zeroed");
}

/* The failure of a stream-ordered op: a sticky error is an earlier
 * asynchronous fault surfacing (or this op's own, which kills the context
 * just the same): LAUNCH_FAILED, context lost. Anything else is the op's
 * own failure, `status`. */
gpulease_status gl_cuda__stream_fail(cuda_backend *c, CUresult r, const char *what,
                                     gpulease_status status, char *err, size_t errlen) {
  gl_cuda__cu_msg(c, r, what, err, errlen);
  if (gl_cuda__is_sticky(r)) {
    gl_cuda__note_sticky(c, r);
    size_t n = strlen(err);
    if (n < errlen)
      snprintf(err + n, errlen - n, " (a kernel on the lease's context faulted)");
    gl_cuda__lost_note(c, err, errlen);
    return GPULEASE_LAUNCH_FAILED;
  }
  return status;
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
    gl_cuda__cu_msg(c, r, "CUDA driver cannot be initialised: cuInit", err, errlen);
    return GPULEASE_NO_DEVICE;
  }
  c->initialised = true;
  return GPULEASE_OK;
}

/* ---- probe and init ------------------------------------------------------ */

gpulease_status gl_cuda__probe(gl_backend *b, gl_probe_resp *out, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  memset(out, 0, sizeof *out);
  gpulease_status st = ensure_driver(c, err, errlen);
  if (st != GPULEASE_OK) return st;
  const gl_cuda *cu = &c->cu;
  int count = 0;
  CUresult r = cu->cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS) {
    gl_cuda__cu_msg(c, r, "cuDeviceGetCount", err, errlen);
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
      gl_cuda__cu_msg(c, r, what, msg, sizeof msg);
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
  /* What PTX the node loads: the driver's JIT, and nvJitLink's. */
  out->cuda_driver_version = cu->driver_version > 0 ? (uint32_t)cu->driver_version : 0;
  unsigned a, b2;
  gl_cuda_driver_max_ptx(cu->driver_version, &a, &b2);
  out->ptx_isa_driver[0] = (uint8_t)a;
  out->ptx_isa_driver[1] = (uint8_t)b2;
  gl_cuda_compat_nvjitlink_max_ptx(&a, &b2);
  out->ptx_isa_nvjitlink[0] = (uint8_t)a;
  out->ptx_isa_nvjitlink[1] = (uint8_t)b2;
  return GPULEASE_OK;
}

/* Undoes a partial init. */
void gl_cuda__release_device(cuda_backend *c) {
  const gl_cuda *cu = &c->cu;
  gl_cuda__cond_unload(c);
  if (c->ev_start) cu->cuEventDestroy(c->ev_start);
  if (c->ev_stop) cu->cuEventDestroy(c->ev_stop);
  if (c->submit_stream) cu->cuStreamDestroy(c->submit_stream);
  if (c->staging_pinned) cu->cuMemHostUnregister(c->staging);
  free(c->staging);
  c->submit_stream = NULL;
  c->staging = NULL;
  c->staging_pinned = false;
  if (c->region) cu->cuMemFree(c->region);
  pthread_mutex_lock(&c->ranges_mu);
  for (size_t i = 0; i < c->nranges; i++) cu->cuMemFree(c->ranges[i]);
  c->nranges = 0;
  pthread_mutex_unlock(&c->ranges_mu);
  if (c->ctx) {
    cu->cuCtxSetCurrent(NULL);
    tl_current = NULL;
    cu->cuDevicePrimaryCtxRelease(c->dev);
  }
  c->ev_start = c->ev_stop = NULL;
  c->region = 0;
  c->ctx = NULL;
  c->have_device = false;
  c->opened = false;
  c->shared = false;
}

/* The context's stack back to its start: the driver reserves the stack of
 * every thread the GPU can hold (256 bytes: about 66 MiB on an H100) and
 * grows it at the launch of a kernel that needs more, so a context starts
 * with none. The context is current. */
static CUresult set_start_stack(cuda_backend *c) {
  const gl_cuda *cu = &c->cu;
  CUresult r = cu->cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 0);
  if (r != CUDA_SUCCESS) r = cu->cuCtxSetLimit(CU_LIMIT_STACK_SIZE, GL_CUDA_START_STACK_BYTES);
  size_t now = 0;
  c->start_stack = 1024; /* the driver's default, if it cannot tell */
  if (cu->cuCtxGetLimit && cu->cuCtxGetLimit(&now, CU_LIMIT_STACK_SIZE) == CUDA_SUCCESS) {
    GL_DEBUG("cuda: the context's stack is %zu bytes a thread", now);
    c->start_stack = now;
  }
  return r;
}

/* Local memory: the context sets aside (local size - the starting stack)
 * for every thread the GPU holds at once, SMs x threads per SM, and keeps
 * the most it has set aside (an H200, driver 580: a kernel of 64 KiB of
 * local memory a thread made the context hold 16,632 MiB more, 64,512
 * bytes for each of 270,336 threads, after a launch of any grid). */
gpulease_status gl_cuda__local_memory(gl_backend *b, uint64_t *threads, uint32_t *free_per_thread,
                                      char *err, size_t errlen) {
  cuda_backend *c = (cuda_backend *)b;
  if (!c->opened || c->sm_count <= 0 || c->threads_per_sm <= 0) {
    snprintf(err, errlen, "the device's SM count or resident threads per SM is not known");
    return GPULEASE_INTERNAL;
  }
  *threads = (uint64_t)c->sm_count * (uint64_t)c->threads_per_sm;
  *free_per_thread = c->start_stack > UINT32_MAX ? UINT32_MAX : (uint32_t)c->start_stack;
  return GPULEASE_OK;
}

/* Opens device `ordinal`: its primary context (current on this thread),
 * the submit stream, events and staging. Everything but the region. */
static gpulease_status open_device(cuda_backend *c, uint32_t ordinal, char *err, size_t errlen) {
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
  memset(c->name, 0, sizeof c->name);
  if (cu->cuDeviceGetName(c->name, (int)sizeof c->name - 1, c->dev) != CUDA_SUCCESS)
    snprintf(c->name, sizeof c->name, "CUDA device %u", ordinal);
  c->total = 0;
  cu->cuDeviceTotalMem(&c->total, c->dev);
  if (cu->cuDeviceGetAttribute(&c->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                               c->dev) != CUDA_SUCCESS ||
      cu->cuDeviceGetAttribute(&c->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                               c->dev) != CUDA_SUCCESS)
    c->cc_major = c->cc_minor = 0;
  if (cu->cuDeviceGetAttribute(&c->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, c->dev) !=
      CUDA_SUCCESS)
    c->sm_count = 0;
  if (cu->cuDeviceGetAttribute(&c->coop_launch, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, c->dev) !=
      CUDA_SUCCESS)
    c->coop_launch = 0;
  if (cu->cuDeviceGetAttribute(&c->threads_per_sm,
                               CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
                               c->dev) != CUDA_SUCCESS)
    c->threads_per_sm = 0;

  if ((r = cu->cuDevicePrimaryCtxRetain(&c->ctx, c->dev)) != CUDA_SUCCESS) {
    c->ctx = NULL;
    snprintf(what, sizeof what, "cuDevicePrimaryCtxRetain(device %u)", ordinal);
    goto fail_internal;
  }
  tl_current = NULL; /* a new context: whatever this thread had is stale */
  if ((r = cu->cuCtxSetCurrent(c->ctx)) != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuCtxSetCurrent(device %u)", ordinal);
    goto fail_internal;
  }
  /* A small stack to start with: the driver reserves the stack for every
   * thread the GPU can hold at once (1 KiB each by default, about a
   * quarter of a GiB on an H100) and grows it by itself at the launch of a
   * kernel that needs more. Best effort. */
  set_start_stack(c);
  if ((r = cu->cuEventCreate(&c->ev_start, CU_EVENT_DEFAULT)) != CUDA_SUCCESS ||
      (r = cu->cuEventCreate(&c->ev_stop, CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuEventCreate");
    goto fail_internal;
  }
  if ((r = cu->cuStreamCreate(&c->submit_stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
    c->submit_stream = NULL;
    snprintf(what, sizeof what, "cuStreamCreate");
    goto fail_internal;
  }
  /* Without pinned memory the output is copied straight (two waits). */
  c->staging = aligned_alloc(4096, SUBMIT_STAGING_BYTES);
  c->staging_pinned =
      c->staging && cu->cuMemHostRegister(c->staging, SUBMIT_STAGING_BYTES, 0) == CUDA_SUCCESS;
  c->opened = true;
  c->opened_ordinal = ordinal;
  return GPULEASE_OK;

fail_internal:
  gl_cuda__cu_msg(c, r, what, err, errlen);
  gl_cuda__release_device(c);
  /* No room for another context: the GPU is full, not broken. */
  return r == CUDA_ERROR_OUT_OF_MEMORY ? GPULEASE_CAPACITY_EXCEEDED : GPULEASE_INTERNAL;
}

/* WORKER_WARM: the device opened ahead of a lease (cuInit and the context,
 * the slow part of a worker's start), no region yet. */
gpulease_status gl_cuda__warm(gl_backend *b, uint32_t ordinal, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  if (c->opened) {
    snprintf(err, errlen, "the device is open already");
    return GPULEASE_INTERNAL;
  }
  return open_device(c, ordinal, err, errlen);
}

/* The device opened for init or open_shared: by warm, or now. INTERNAL
 * when it was already initialised or warmed for another device. */
static gpulease_status open_once(cuda_backend *c, uint32_t ordinal, char *err, size_t errlen) {
  if (c->have_device) {
    snprintf(err, errlen, "the device is initialised already");
    return GPULEASE_INTERNAL;
  }
  if (c->opened && c->opened_ordinal != ordinal) {
    snprintf(err, errlen, "this worker was warmed for device %u, not %u", c->opened_ordinal,
             ordinal);
    return GPULEASE_INTERNAL;
  }
  return c->opened ? GPULEASE_OK : open_device(c, ordinal, err, errlen);
}

gpulease_status gl_cuda__init(gl_backend *b, uint32_t ordinal, uint64_t vram_bytes,
                              uint64_t *region_base, char *device_name, size_t name_len,
                              char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  gpulease_status st = open_once(c, ordinal, err, errlen);
  if (st != GPULEASE_OK) return st;
  const gl_cuda *cu = &c->cu;
  char what[160];
  CUresult r = gl_cuda__make_current(c);
  if (r != CUDA_SUCCESS) {
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
               vram_bytes, ordinal, c->name, c->total);
      gl_cuda__release_device(c);
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
  if ((r = cu->cuCtxSynchronize()) != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuCtxSynchronize after zeroing the region");
    goto fail_internal;
  }
  c->region_bytes = vram_bytes;
  c->have_device = true;
  *region_base = (uint64_t)c->region;
  snprintf(device_name, name_len, "%s", c->name);
  return GPULEASE_OK;

fail_internal:
  gl_cuda__cu_msg(c, r, what, err, errlen);
  gl_cuda__release_device(c);
  return GPULEASE_INTERNAL;
}

/* The lease's region goes; the context, its stream, events and staging
 * stay for the next lease of this worker. */
gpulease_status gl_cuda__reset(gl_backend *b, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  const gl_cuda *cu = &c->cu;
  if (!c->have_device || c->shared || atomic_load(&c->lost)) {
    snprintf(err, errlen, "nothing to reset (no lease region, a shared context, or lost)");
    return GPULEASE_INTERNAL;
  }
  CUresult r = gl_cuda__make_current(c);
  if (r == CUDA_SUCCESS) r = cu->cuCtxSynchronize();
  if (r == CUDA_SUCCESS) gl_cuda__cond_unload(c); /* loaded again by the next lease's first loop */
  if (r == CUDA_SUCCESS) r = cu->cuMemFree(c->region);
  if (r == CUDA_SUCCESS) r = set_start_stack(c);
  if (r != CUDA_SUCCESS) {
    gl_cuda__cu_msg(c, r, "resetting the context for another lease", err, errlen);
    return GPULEASE_INTERNAL;
  }
  c->region = 0;
  c->region_bytes = 0;
  c->have_device = false;
  return GPULEASE_OK;
}

/* ---- shared leases ------------------------------------------------------------ */

/* The device and its context, no region: the leases' ranges come from
 * region_add, and their device pointers are the offsets (region_base 0). */
gpulease_status gl_cuda__open_shared(gl_backend *b, uint32_t ordinal, uint64_t *region_base,
                                     char *device_name, size_t name_len, char *err,
                                     size_t errlen) {
  cuda_backend *c = as_cuda(b);
  gpulease_status st = open_once(c, ordinal, err, errlen);
  if (st != GPULEASE_OK) return st;
  CUresult r = gl_cuda__make_current(c);
  if (r != CUDA_SUCCESS) {
    char what[64];
    snprintf(what, sizeof what, "cuCtxSetCurrent(device %u)", ordinal);
    gl_cuda__cu_msg(c, r, what, err, errlen);
    gl_cuda__release_device(c);
    return GPULEASE_INTERNAL;
  }
  c->region = 0;
  c->region_bytes = 0;
  c->shared = true;
  c->have_device = true;
  *region_base = 0;
  snprintf(device_name, name_len, "%s", c->name);
  return GPULEASE_OK;
}

/* One lease's range: its own cuMemAlloc, zeroed, listed for destroy. */
gpulease_status gl_cuda__region_add(gl_backend *b, uint64_t bytes, uint64_t *offset,
                                    char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  const gl_cuda *cu = &c->cu;
  if (!c->shared) {
    snprintf(err, errlen, "region_add needs a device opened for shared leases");
    return GPULEASE_INTERNAL;
  }
  if (bytes == 0) {
    snprintf(err, errlen, "a range of 0 bytes");
    return GPULEASE_INVALID_ARGUMENT;
  }
  char what[96];
  CUdeviceptr p = 0;
  CUresult r = gl_cuda__make_current(c);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuCtxSetCurrent");
    goto fail;
  }
  r = bytes > SIZE_MAX ? CUDA_ERROR_OUT_OF_MEMORY : cu->cuMemAlloc(&p, (size_t)bytes);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    snprintf(err, errlen,
             "cannot reserve %" PRIu64 " bytes on device %u (%s, %zu bytes in total): "
             "CUDA_ERROR_OUT_OF_MEMORY",
             bytes, c->opened_ordinal, c->name, c->total);
    return GPULEASE_CAPACITY_EXCEEDED;
  }
  if (r != CUDA_SUCCESS) {
    p = 0;
    snprintf(what, sizeof what, "cuMemAlloc(%" PRIu64 " bytes)", bytes);
    goto fail;
  }
  /* No earlier tenant's data may ever be visible. The memset goes to the
   * legacy default stream and only that stream is waited for: the other
   * leases' streams are non-blocking, and cuCtxSynchronize would wait for
   * their kernels too. */
  if ((r = cu->cuMemsetD8(p, 0, (size_t)bytes)) != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuMemsetD8(%" PRIu64 " bytes)", bytes);
    goto fail;
  }
  if ((r = cu->cuStreamSynchronize(NULL)) != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuStreamSynchronize after zeroing a range");
    goto fail;
  }
  pthread_mutex_lock(&c->ranges_mu);
  if (c->nranges == c->cap_ranges) {
    size_t cap = c->cap_ranges ? 2 * c->cap_ranges : 16;
    CUdeviceptr *more = realloc(c->ranges, cap * sizeof *more);
    if (more) c->ranges = more, c->cap_ranges = cap;
  }
  bool listed = c->nranges < c->cap_ranges;
  if (listed) c->ranges[c->nranges++] = p;
  pthread_mutex_unlock(&c->ranges_mu);
  if (!listed) {
    cu->cuMemFree(p);
    snprintf(err, errlen, "out of memory for the list of ranges");
    return GPULEASE_INTERNAL;
  }
  *offset = (uint64_t)p;
  return GPULEASE_OK;

fail:
  if (p) cu->cuMemFree(p);
  gl_cuda__cu_msg(c, r, what, err, errlen);
  gl_cuda__note_sticky(c, r);
  gl_cuda__lost_note(c, err, errlen);
  return GPULEASE_INTERNAL;
}

void gl_cuda__region_remove(gl_backend *b, uint64_t offset) {
  cuda_backend *c = as_cuda(b);
  bool found = false;
  pthread_mutex_lock(&c->ranges_mu);
  for (size_t i = 0; i < c->nranges && !found; i++)
    if (c->ranges[i] == (CUdeviceptr)offset) {
      c->ranges[i] = c->ranges[--c->nranges];
      found = true;
    }
  pthread_mutex_unlock(&c->ranges_mu);
  if (!found) {
    GL_WARN("region_remove: no range starts at 0x%" PRIx64, offset);
    return;
  }
  /* After a fault the worker exits: nothing to give back. */
  if (is_lost(c) || gl_cuda__make_current(c) != CUDA_SUCCESS) return;
  gl_cuda__note_sticky(c, c->cu.cuMemFree((CUdeviceptr)offset));
}

gpulease_status gl_cuda__set_limits(gl_backend *b, uint64_t printf_fifo_bytes,
                                    uint64_t malloc_heap_bytes, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  const struct {
    CUlimit limit;
    const char *name;
    uint64_t value;
  } limits[] = {
      {CU_LIMIT_PRINTF_FIFO_SIZE, "CU_LIMIT_PRINTF_FIFO_SIZE", printf_fifo_bytes},
      {CU_LIMIT_MALLOC_HEAP_SIZE, "CU_LIMIT_MALLOC_HEAP_SIZE", malloc_heap_bytes},
  };
  if (!c->have_device) {
    snprintf(err, errlen, "set_limits before the device is open");
    return GPULEASE_INTERNAL;
  }
  CUresult r = gl_cuda__make_current(c);
  if (r != CUDA_SUCCESS) {
    gl_cuda__cu_msg(c, r, "cuCtxSetLimit: cuCtxSetCurrent", err, errlen);
    return GPULEASE_INTERNAL;
  }
  for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
    if (limits[i].value == 0) continue; /* left as it is */
    r = limits[i].value > SIZE_MAX ? CUDA_ERROR_INVALID_VALUE
                                   : c->cu.cuCtxSetLimit(limits[i].limit, (size_t)limits[i].value);
    if (r != CUDA_SUCCESS) {
      char what[96];
      snprintf(what, sizeof what, "cuCtxSetLimit(%s, %" PRIu64 " bytes)", limits[i].name,
               limits[i].value);
      gl_cuda__cu_msg(c, r, what, err, errlen);
      gl_cuda__note_sticky(c, r);
      return GPULEASE_INVALID_ARGUMENT;
    }
  }
  return GPULEASE_OK;
}
