/*
 * backend_cuda.c - the worker backend on the CUDA driver API.
 *
 * One worker process holds one lease, so the device's primary context is
 * the lease's private context: init retains it and makes it current on the
 * worker's main thread. The lease's region is a single cuMemAlloc of
 * vram_bytes, zeroed before first use; kernel pointers are the region's
 * base plus an offset. Synchronous launches (launch) go to the legacy
 * default stream, bracketed by two events for the GPU time, then
 * cuCtxSynchronize; they are serialised by a mutex because the events are
 * shared.
 *
 * Sessions: each session's ops come from its own worker thread and go to
 * its own stream (cuStreamCreate, CU_STREAM_NON_BLOCKING, so they never
 * wait for the legacy default stream or each other). Every op after init
 * first makes the lease's context current on the calling thread
 * (make_current: cuCtxGetCurrent, a thread-local read in the driver, and
 * cuCtxSetCurrent only when it differs). Nothing else is shared between
 * threads but `lost` (atomic) and the synchronous launch's events: JIT
 * logs are per call.
 *
 * Shared leases (open_shared): the context holds no region of its own;
 * region_add gives each lease a cuMemAlloc of its own and returns its
 * device pointer as the "offset" (region_base is 0), so every op's
 * c->region + offset is still the right address. The ranges are listed so
 * that destroy frees those still reserved.
 *
 * Error messages always name the CUDA error ("CUDA_ERROR_ILLEGAL_ADDRESS")
 * and its description. After a fault that leaves the context unusable
 * (sticky errors: illegal address, illegal instruction, assert, ...) the
 * backend reports context_lost and the worker exits.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "gpu/cuda_api.h"
#include "backend/backend.h"

#define JIT_LOG_BYTES 16384

typedef struct cuda_backend {
  gl_backend base;
  gl_cuda cu;
  bool loaded;      /* cu is filled */
  bool initialised; /* cuInit succeeded */
  bool have_device; /* init succeeded */
  atomic_bool lost;  /* a sticky error: the context is unusable */
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr region;
  uint64_t region_bytes;
  int cc_major, cc_minor;
  pthread_mutex_t launch_mu; /* the synchronous launch and its events */
  CUevent ev_start, ev_stop;
  /* GPU_SUBMIT's own stream (input, kernel, output in order, apart from
   * the sessions' streams), and pinned memory for a small output: the
   * kernel and the copy back are waited for together. */
  CUstream submit_stream;
  uint8_t *staging;
  bool staging_pinned;
  /* The device opened (WORKER_WARM, or the first part of init). */
  bool opened;
  uint32_t opened_ordinal;
  char name[96];
  size_t total;
  /* Shared leases: open_shared was called; the ranges region_add reserved. */
  bool shared;
  pthread_mutex_t ranges_mu; /* ranges */
  CUdeviceptr *ranges;
  size_t nranges, cap_ranges;
} cuda_backend;

/* The per-thread stack a context starts with (CU_LIMIT_STACK_SIZE): none,
 * or this much where the driver refuses 0. */
#define GL_CUDA_START_STACK_BYTES 256

/* Outputs up to this size come back through the pinned staging buffer. */
#define SUBMIT_STAGING_BYTES (64u << 10)

/* A compiler's logs, per call (several threads may load modules at once). */
typedef struct jit_logs {
  char error[JIT_LOG_BYTES];
  char info[JIT_LOG_BYTES];
} jit_logs;

static cuda_backend *as_cuda(gl_backend *b) { return (cuda_backend *)b; }

static bool is_lost(cuda_backend *c) { return atomic_load(&c->lost); }

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
  if (!c->have_device || is_lost(c)) return;
  if (is_sticky(r) || c->cu.cuCtxSynchronize() != CUDA_SUCCESS) atomic_store(&c->lost, true);
}

/* The same for the session ops: only a known sticky error marks the
 * context lost (cuCtxSynchronize would wait for every other session's
 * work). */
static void note_sticky(cuda_backend *c, CUresult r) {
  if (c->have_device && is_sticky(r)) atomic_store(&c->lost, true);
}

/* Makes the lease's context current on the calling thread. Session ops
 * come from threads other than the one init ran on; the driver's current
 * context is per thread. */
static __thread CUcontext tl_current; /* what this thread made current */

static CUresult make_current(cuda_backend *c) {
  if (tl_current == c->ctx && c->ctx) return CUDA_SUCCESS;
  CUcontext cur = NULL;
  CUresult r = CUDA_SUCCESS;
  if (c->cu.cuCtxGetCurrent(&cur) != CUDA_SUCCESS || cur != c->ctx)
    r = c->cu.cuCtxSetCurrent(c->ctx);
  if (r == CUDA_SUCCESS) tl_current = c->ctx;
  return r;
}

/* Formats "<what>: CUDA_ERROR_X (description)" into err. */
static void cu_msg(cuda_backend *c, CUresult r, const char *what, char *err, size_t errlen) {
  char name[64];
  gl_cuda_error_name(&c->cu, r, name, sizeof name);
  snprintf(err, errlen, "%s: %s (%s)", what, name, gl_cuda_error_string(&c->cu, r));
}

/* Appends the context-lost note to a failure message. */
static void lost_note(cuda_backend *c, char *err, size_t errlen) {
  if (!is_lost(c)) return;
  size_t n = strlen(err);
  if (n < errlen)
    snprintf(err + n, errlen - n, "; the lease's CUDA context is lost: its next "
                                  "request gets a fresh one, with the region zeroed");
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
  if (cu->cuCtxGetLimit && cu->cuCtxGetLimit(&now, CU_LIMIT_STACK_SIZE) == CUDA_SUCCESS)
    GL_DEBUG("cuda: the context's stack is %zu bytes a thread", now);
  return r;
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
  cu_msg(c, r, what, err, errlen);
  release_device(c);
  /* No room for another context: the GPU is full, not broken. */
  return r == CUDA_ERROR_OUT_OF_MEMORY ? GPULEASE_CAPACITY_EXCEEDED : GPULEASE_INTERNAL;
}

/* WORKER_WARM: the device opened ahead of a lease (cuInit and the context,
 * the slow part of a worker's start), no region yet. */
static gpulease_status cuda_warm(gl_backend *b, uint32_t ordinal, char *err, size_t errlen) {
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

static gpulease_status cuda_init(gl_backend *b, uint32_t ordinal, uint64_t vram_bytes,
                                 uint64_t *region_base, char *device_name, size_t name_len,
                                 char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  gpulease_status st = open_once(c, ordinal, err, errlen);
  if (st != GPULEASE_OK) return st;
  const gl_cuda *cu = &c->cu;
  char what[160];
  CUresult r = make_current(c);
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
  cu_msg(c, r, what, err, errlen);
  release_device(c);
  return GPULEASE_INTERNAL;
}

/* The lease's region goes; the context, its stream, events and staging
 * stay for the next lease of this worker. */
static gpulease_status cuda_reset(gl_backend *b, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  const gl_cuda *cu = &c->cu;
  if (!c->have_device || c->shared || atomic_load(&c->lost)) {
    snprintf(err, errlen, "nothing to reset (no lease region, a shared context, or lost)");
    return GPULEASE_INTERNAL;
  }
  CUresult r = make_current(c);
  if (r == CUDA_SUCCESS) r = cu->cuCtxSynchronize();
  if (r == CUDA_SUCCESS) r = cu->cuMemFree(c->region);
  if (r == CUDA_SUCCESS) r = set_start_stack(c);
  if (r != CUDA_SUCCESS) {
    cu_msg(c, r, "resetting the context for another lease", err, errlen);
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
static gpulease_status cuda_open_shared(gl_backend *b, uint32_t ordinal, uint64_t *region_base,
                                        char *device_name, size_t name_len, char *err,
                                        size_t errlen) {
  cuda_backend *c = as_cuda(b);
  gpulease_status st = open_once(c, ordinal, err, errlen);
  if (st != GPULEASE_OK) return st;
  CUresult r = make_current(c);
  if (r != CUDA_SUCCESS) {
    char what[64];
    snprintf(what, sizeof what, "cuCtxSetCurrent(device %u)", ordinal);
    cu_msg(c, r, what, err, errlen);
    release_device(c);
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
static gpulease_status cuda_region_add(gl_backend *b, uint64_t bytes, uint64_t *offset,
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
  CUresult r = make_current(c);
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
  cu_msg(c, r, what, err, errlen);
  note_sticky(c, r);
  lost_note(c, err, errlen);
  return GPULEASE_INTERNAL;
}

static void cuda_region_remove(gl_backend *b, uint64_t offset) {
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
  if (is_lost(c) || make_current(c) != CUDA_SUCCESS) return;
  note_sticky(c, c->cu.cuMemFree((CUdeviceptr)offset));
}

static gpulease_status cuda_set_limits(gl_backend *b, uint64_t printf_fifo_bytes,
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
  CUresult r = make_current(c);
  if (r != CUDA_SUCCESS) {
    cu_msg(c, r, "cuCtxSetLimit: cuCtxSetCurrent", err, errlen);
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
      cu_msg(c, r, what, err, errlen);
      note_sticky(c, r);
      return GPULEASE_INVALID_ARGUMENT;
    }
  }
  return GPULEASE_OK;
}

/* ---- modules and functions ----------------------------------------------- */

/* Trims trailing whitespace of a NUL-terminated log in place. */
static void trim(char *s) {
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
    s[--n] = 0;
}

static const char *format_name(gpulease_image_format format) {
  return format == GPULEASE_IMAGE_PTX     ? "PTX"
         : format == GPULEASE_IMAGE_CUBIN ? "cubin"
                                          : "fatbin";
}

/* Formats "<what>: CUDA_ERROR_X: <log>" (or the error's description when
 * the log is empty) into err. */
static void jit_msg(cuda_backend *c, CUresult r, const char *what, jit_logs *logs, char *err,
                    size_t errlen) {
  char name[64];
  gl_cuda_error_name(&c->cu, r, name, sizeof name);
  const char *log = logs->error[0] ? logs->error : logs->info;
  snprintf(err, errlen, "%s: %s: %s", what, name, log[0] ? log : gl_cuda_error_string(&c->cu, r));
}

/* Terminates and trims logs the driver wrote into. */
static void jit_finish(jit_logs *logs) {
  logs->error[sizeof logs->error - 1] = 0;
  logs->info[sizeof logs->info - 1] = 0;
  trim(logs->error);
  trim(logs->info);
}

static gpulease_status cuda_load_module(gl_backend *b, const uint8_t *image, size_t len,
                                        gpulease_image_format format, void **module, char *err,
                                        size_t errlen) {
  cuda_backend *c = as_cuda(b);
  (void)len; /* PTX is NUL-terminated; cubin and fatbin carry their size */
  CUresult r = make_current(c);
  if (r != CUDA_SUCCESS) {
    cu_msg(c, r, "cuModuleLoadDataEx: cuCtxSetCurrent", err, errlen);
    return GPULEASE_LOAD_FAILED;
  }
  jit_logs *logs = calloc(1, sizeof *logs);
  if (!logs) {
    snprintf(err, errlen, "cuModuleLoadDataEx: out of memory for the JIT logs");
    return GPULEASE_LOAD_FAILED;
  }
  /* The driver writes the sizes it used back into vals: per call. */
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void *vals[] = {logs->error, (void *)(uintptr_t)(sizeof logs->error - 1), logs->info,
                  (void *)(uintptr_t)(sizeof logs->info - 1)};
  CUmodule mod = NULL;
  r = c->cu.cuModuleLoadDataEx(&mod, image, (unsigned)(sizeof opts / sizeof opts[0]), opts, vals);
  jit_finish(logs);
  if (r != CUDA_SUCCESS) {
    char what[64];
    snprintf(what, sizeof what, "cuModuleLoadDataEx (%s image)", format_name(format));
    jit_msg(c, r, what, logs, err, errlen);
    free(logs);
    note_failure(c, r);
    return GPULEASE_LOAD_FAILED;
  }
  if (logs->info[0]) GL_DEBUG("JIT: %s", logs->info);
  free(logs);
  *module = mod;
  return GPULEASE_OK;
}

static void cuda_unload_module(gl_backend *b, void *module) {
  cuda_backend *c = as_cuda(b);
  if (!module || is_lost(c)) return;
  if (make_current(c) == CUDA_SUCCESS) c->cu.cuModuleUnload((CUmodule)module);
}

static gpulease_status cuda_get_function(gl_backend *b, void *module, const char *name,
                                         void **fn, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUfunction f = NULL;
  CUresult r = make_current(c);
  if (r == CUDA_SUCCESS) r = c->cu.cuModuleGetFunction(&f, (CUmodule)module, name);
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
  CUresult r = make_current(c);
  if (r != CUDA_SUCCESS) {
    cu_msg(c, r, "cuFuncGetParamInfo: cuCtxSetCurrent", err, errlen);
    return GPULEASE_UNSUPPORTED;
  }
  size_t n = 0;
  for (;; n++) {
    size_t off = 0, size = 0;
    r = c->cu.cuFuncGetParamInfo((CUfunction)fn, n, &off, &size);
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

static gpulease_status cuda_func_info(gl_backend *b, void *fn, gl_func_info_resp *out,
                                      char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  static const struct {
    CUfunction_attribute attr;
    const char *name;
    size_t offset;
  } k_attrs[] = {
      {CU_FUNC_ATTRIBUTE_NUM_REGS, "NUM_REGS", offsetof(gl_func_info_resp, num_regs)},
      {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK",
       offsetof(gl_func_info_resp, max_threads_per_block)},
      {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "SHARED_SIZE_BYTES",
       offsetof(gl_func_info_resp, static_shared_bytes)},
      {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "LOCAL_SIZE_BYTES",
       offsetof(gl_func_info_resp, local_bytes)},
      {CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, "CONST_SIZE_BYTES",
       offsetof(gl_func_info_resp, const_bytes)},
      {CU_FUNC_ATTRIBUTE_PTX_VERSION, "PTX_VERSION", offsetof(gl_func_info_resp, ptx_version)},
      {CU_FUNC_ATTRIBUTE_BINARY_VERSION, "BINARY_VERSION",
       offsetof(gl_func_info_resp, binary_version)},
  };
  CUresult r = make_current(c);
  if (r != CUDA_SUCCESS) {
    cu_msg(c, r, "cuFuncGetAttribute: cuCtxSetCurrent", err, errlen);
    return GPULEASE_LAUNCH_FAILED;
  }
  for (size_t i = 0; i < sizeof k_attrs / sizeof k_attrs[0]; i++) {
    int v = 0;
    r = c->cu.cuFuncGetAttribute(&v, k_attrs[i].attr, (CUfunction)fn);
    if (r != CUDA_SUCCESS) {
      char what[96];
      snprintf(what, sizeof what, "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_%s)", k_attrs[i].name);
      cu_msg(c, r, what, err, errlen);
      note_sticky(c, r);
      return GPULEASE_LAUNCH_FAILED;
    }
    uint32_t u = v > 0 ? (uint32_t)v : 0;
    memcpy((char *)out + k_attrs[i].offset, &u, sizeof u);
  }
  return GPULEASE_OK;
}

static gpulease_status cuda_compile_ptx(gl_backend *b, const uint8_t *ptx, size_t len,
                                        uint8_t **bin, size_t *bin_len, char *err,
                                        size_t errlen) {
  cuda_backend *c = as_cuda(b);
  *bin = NULL;
  *bin_len = 0;
  CUresult r = make_current(c);
  if (r != CUDA_SUCCESS) {
    cu_msg(c, r, "cuLinkCreate: cuCtxSetCurrent", err, errlen);
    return GPULEASE_LOAD_FAILED;
  }
  jit_logs *logs = calloc(1, sizeof *logs);
  if (!logs) {
    snprintf(err, errlen, "cuLinkCreate: out of memory for the JIT logs");
    return GPULEASE_LOAD_FAILED;
  }
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_TARGET_FROM_CUCONTEXT};
  void *vals[] = {logs->error, (void *)(uintptr_t)(sizeof logs->error - 1), logs->info,
                  (void *)(uintptr_t)(sizeof logs->info - 1), NULL};
  CUlinkState link = NULL;
  void *cubin = NULL;
  size_t cubin_len = 0;
  const char *what = "cuLinkCreate";
  gpulease_status st = GPULEASE_LOAD_FAILED;
  r = c->cu.cuLinkCreate((unsigned)(sizeof opts / sizeof opts[0]), opts, vals, &link);
  if (r != CUDA_SUCCESS) {
    link = NULL;
    goto fail;
  }
  /* PTX must be NUL-terminated: ptx[len] is, and the size counts it. */
  what = "cuLinkAddData (PTX)";
  r = c->cu.cuLinkAddData(link, CU_JIT_INPUT_PTX, (void *)(uintptr_t)ptx, len + 1, "module.ptx",
                          0, NULL, NULL);
  if (r != CUDA_SUCCESS) goto fail;
  what = "cuLinkComplete";
  r = c->cu.cuLinkComplete(link, &cubin, &cubin_len);
  if (r != CUDA_SUCCESS) goto fail;
  if (!cubin || cubin_len == 0) {
    snprintf(err, errlen, "cuLinkComplete returned an empty image");
    goto out;
  }
  /* The image belongs to the link state: copy it out before destroying. */
  *bin = malloc(cubin_len);
  if (!*bin) {
    snprintf(err, errlen, "out of memory for a %zu-byte cubin", cubin_len);
    st = GPULEASE_INTERNAL;
    goto out;
  }
  memcpy(*bin, cubin, cubin_len);
  *bin_len = cubin_len;
  jit_finish(logs);
  if (logs->info[0]) GL_DEBUG("JIT (link): %s", logs->info);
  st = GPULEASE_OK;
  goto out;

fail:
  jit_finish(logs);
  jit_msg(c, r, what, logs, err, errlen);
  note_failure(c, r);
out:
  if (link) c->cu.cuLinkDestroy(link);
  free(logs);
  return st;
}

static gpulease_status cuda_host_register(gl_backend *b, void *p, size_t len, char *err,
                                          size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUresult r = make_current(c);
  if (r == CUDA_SUCCESS) r = c->cu.cuMemHostRegister(p, len, 0);
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  char what[96];
  snprintf(what, sizeof what, "cuMemHostRegister(%zu bytes)", len);
  cu_msg(c, r, what, err, errlen);
  return GPULEASE_INTERNAL;
}

static void cuda_host_unregister(gl_backend *b, void *p) {
  cuda_backend *c = as_cuda(b);
  if (make_current(c) == CUDA_SUCCESS) c->cu.cuMemHostUnregister(p);
}

static void cuda_cache_tag(gl_backend *b, char *buf, size_t len) {
  cuda_backend *c = as_cuda(b);
  if (!len) return;
  if (!c->have_device) {
    snprintf(buf, len, "cuda-unknown-drv%d", c->cu.driver_version);
    return;
  }
  snprintf(buf, len, "cuda-sm%d%d-drv%d", c->cc_major, c->cc_minor, c->cu.driver_version);
}

/* ---- memory and launch ----------------------------------------------------- */

static gpulease_status cuda_write(gl_backend *b, uint64_t offset, const void *src, size_t len,
                                  char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUresult r = make_current(c);
  /* On the submit stream, before the kernel that reads it; from pageable
   * memory the driver stages src before returning. */
  if (r == CUDA_SUCCESS)
    r = c->cu.cuMemcpyHtoDAsync(c->region + offset, src, len, c->submit_stream);
  if (r != CUDA_SUCCESS) {
    char what[96];
    snprintf(what, sizeof what, "cuMemcpyHtoDAsync(%zu bytes at offset %" PRIu64 ")", len,
             offset);
    cu_msg(c, r, what, err, errlen);
    note_failure(c, r);
    return GPULEASE_WRITE_FAILED;
  }
  return GPULEASE_OK;
}

static gpulease_status cuda_read(gl_backend *b, uint64_t offset, void *dst, size_t len,
                                 char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUresult r = make_current(c);
  if (r == CUDA_SUCCESS)
    r = c->cu.cuMemcpyDtoHAsync(dst, c->region + offset, len, c->submit_stream);
  if (r == CUDA_SUCCESS) r = c->cu.cuStreamSynchronize(c->submit_stream);
  if (r != CUDA_SUCCESS) {
    char what[96];
    snprintf(what, sizeof what, "cuMemcpyDtoHAsync(%zu bytes at offset %" PRIu64 ")", len,
             offset);
    cu_msg(c, r, what, err, errlen);
    note_failure(c, r);
    return GPULEASE_READ_FAILED;
  }
  return GPULEASE_OK;
}

/* "cuLaunchKernel('name', grid XxYxZ, block XxYxZ, N bytes of shared memory)". */
static void launch_what(const gl_launch *l, char *what, size_t len) {
  snprintf(what, len,
           "cuLaunchKernel('%s', grid %ux%ux%u, block %ux%ux%u, %u bytes of shared memory)",
           l->kernel_name, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
           l->block[2], l->shared_mem_bytes);
}

/* GPU_SUBMIT: on the submit stream, events around the kernel (its device
 * time), then the output's copy; one wait. A pageable output larger than
 * the staging buffer is copied after the wait instead, so that a fault of
 * the kernel is reported as the kernel's. */
static gpulease_status cuda_launch_read(gl_backend *b, void *fn, const gl_launch *l,
                                        uint64_t *gpu_time_ns, uint64_t out_offset, void *out,
                                        size_t out_len, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  const gl_cuda *cu = &c->cu;
  char what[GL_WIRE_MAX_KERNEL_NAME + 128];
  CUstream stream = c->submit_stream;
  CUresult r = make_current(c);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuCtxSetCurrent");
    cu_msg(c, r, what, err, errlen);
    return GPULEASE_LAUNCH_FAILED;
  }
  bool staged = out_len > 0 && out_len <= SUBMIT_STAGING_BYTES && c->staging_pinned;
  /* The events and the staging buffer are the backend's: one synchronous
   * launch at a time. */
  pthread_mutex_lock(&c->launch_mu);
  r = cu->cuEventRecord(c->ev_start, stream);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuEventRecord");
    goto fail;
  }
  r = cu->cuLaunchKernel((CUfunction)fn, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                         l->block[1], l->block[2], l->shared_mem_bytes, stream, l->args, NULL);
  if (r != CUDA_SUCCESS) {
    launch_what(l, what, sizeof what);
    goto fail;
  }
  r = cu->cuEventRecord(c->ev_stop, stream);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuEventRecord");
    goto fail;
  }
  CUresult copy = CUDA_SUCCESS;
  if (staged) copy = cu->cuMemcpyDtoHAsync(c->staging, c->region + out_offset, out_len, stream);
  r = cu->cuStreamSynchronize(stream);
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
  if (staged && copy == CUDA_SUCCESS) memcpy(out, c->staging, out_len);
  pthread_mutex_unlock(&c->launch_mu);
  if (out_len > 0 && (!staged || copy != CUDA_SUCCESS))
    return b->ops->read(b, out_offset, out, out_len, err, errlen);
  return GPULEASE_OK;

fail:
  pthread_mutex_unlock(&c->launch_mu);
  cu_msg(c, r, what, err, errlen);
  note_failure(c, r);
  lost_note(c, err, errlen);
  return GPULEASE_LAUNCH_FAILED;
}

static gpulease_status cuda_launch(gl_backend *b, void *fn, const gl_launch *l,
                                   uint64_t *gpu_time_ns, char *err, size_t errlen) {
  return cuda_launch_read(b, fn, l, gpu_time_ns, 0, NULL, 0, err, errlen);
}

/* ---- sessions: streams ------------------------------------------------------ */

/* The failure of a stream-ordered op: a sticky error is an earlier
 * asynchronous fault surfacing (or this op's own, which kills the context
 * just the same): LAUNCH_FAILED, context lost. Anything else is the op's
 * own failure, `status`. */
static gpulease_status stream_fail(cuda_backend *c, CUresult r, const char *what,
                                   gpulease_status status, char *err, size_t errlen) {
  cu_msg(c, r, what, err, errlen);
  if (is_sticky(r)) {
    note_sticky(c, r);
    size_t n = strlen(err);
    if (n < errlen)
      snprintf(err + n, errlen - n, " (a kernel on the lease's context faulted)");
    lost_note(c, err, errlen);
    return GPULEASE_LAUNCH_FAILED;
  }
  return status;
}

static gpulease_status cuda_stream_create(gl_backend *b, void **stream, char *err,
                                          size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUstream s = NULL;
  CUresult r = make_current(c);
  if (r == CUDA_SUCCESS) r = c->cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    cu_msg(c, r, "cuStreamCreate", err, errlen);
    note_sticky(c, r);
    lost_note(c, err, errlen);
    return GPULEASE_INTERNAL;
  }
  *stream = s;
  return GPULEASE_OK;
}

static void cuda_stream_destroy(gl_backend *b, void *stream) {
  cuda_backend *c = as_cuda(b);
  if (!stream || is_lost(c)) return; /* the worker exits; nothing left to wait for */
  if (make_current(c) != CUDA_SUCCESS) return;
  CUresult r = c->cu.cuStreamSynchronize((CUstream)stream);
  note_sticky(c, r);
  c->cu.cuStreamDestroy((CUstream)stream);
}

static gpulease_status cuda_launch_async(gl_backend *b, void *stream, void *fn,
                                         const gl_launch *l, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  char what[GL_WIRE_MAX_KERNEL_NAME + 128];
  CUresult r = make_current(c);
  if (r != CUDA_SUCCESS) {
    cu_msg(c, r, "cuLaunchKernel: cuCtxSetCurrent", err, errlen);
    return GPULEASE_LAUNCH_FAILED;
  }
  r = c->cu.cuLaunchKernel((CUfunction)fn, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                           l->block[1], l->block[2], l->shared_mem_bytes, (CUstream)stream,
                           l->args, NULL);
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  launch_what(l, what, sizeof what);
  /* The launch configuration (dimensions, shared memory, registers for
   * that many threads) is the caller's to fix; nothing ran. */
  if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) {
    cu_msg(c, r, what, err, errlen);
    return GPULEASE_INVALID_ARGUMENT;
  }
  return stream_fail(c, r, what, GPULEASE_LAUNCH_FAILED, err, errlen);
}

static gpulease_status cuda_write_async(gl_backend *b, void *stream, uint64_t offset,
                                        const void *src, size_t len, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUresult r = make_current(c);
  /* From pageable memory the driver stages src before returning, so the
   * caller may reuse it at once. */
  if (r == CUDA_SUCCESS)
    r = c->cu.cuMemcpyHtoDAsync(c->region + offset, src, len, (CUstream)stream);
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  char what[96];
  snprintf(what, sizeof what, "cuMemcpyHtoDAsync(%zu bytes at offset %" PRIu64 ")", len, offset);
  return stream_fail(c, r, what, GPULEASE_WRITE_FAILED, err, errlen);
}

static gpulease_status cuda_read_sync(gl_backend *b, void *stream, uint64_t offset, void *dst,
                                      size_t len, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  char what[96];
  CUresult r = make_current(c);
  if (r == CUDA_SUCCESS)
    r = c->cu.cuMemcpyDtoHAsync(dst, c->region + offset, len, (CUstream)stream);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuMemcpyDtoHAsync(%zu bytes at offset %" PRIu64 ")", len,
             offset);
    return stream_fail(c, r, what, GPULEASE_READ_FAILED, err, errlen);
  }
  /* dst is pageable: the copy is done when the stream is. */
  r = c->cu.cuStreamSynchronize((CUstream)stream);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuStreamSynchronize (reading %zu bytes at offset %" PRIu64 ")",
             len, offset);
    return stream_fail(c, r, what, GPULEASE_READ_FAILED, err, errlen);
  }
  return GPULEASE_OK;
}

static gpulease_status cuda_copy_async(gl_backend *b, void *stream, uint64_t dst_offset,
                                       uint64_t src_offset, size_t len, char *err,
                                       size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUresult r = make_current(c);
  if (r == CUDA_SUCCESS)
    r = c->cu.cuMemcpyDtoDAsync(c->region + dst_offset, c->region + src_offset, len,
                                (CUstream)stream);
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  char what[128];
  snprintf(what, sizeof what,
           "cuMemcpyDtoDAsync(%zu bytes from offset %" PRIu64 " to offset %" PRIu64 ")", len,
           src_offset, dst_offset);
  return stream_fail(c, r, what, GPULEASE_WRITE_FAILED, err, errlen);
}

static gpulease_status cuda_memset_async(gl_backend *b, void *stream, uint64_t offset,
                                         unsigned element_size, uint32_t value, size_t count,
                                         char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUdeviceptr dst = c->region + offset;
  CUresult r = make_current(c);
  if (r == CUDA_SUCCESS) {
    switch (element_size) {
    case 1:
      r = c->cu.cuMemsetD8Async(dst, (unsigned char)value, count, (CUstream)stream);
      break;
    case 2:
      r = c->cu.cuMemsetD16Async(dst, (unsigned short)value, count, (CUstream)stream);
      break;
    case 4:
      r = c->cu.cuMemsetD32Async(dst, value, count, (CUstream)stream);
      break;
    default:
      snprintf(err, errlen, "memset element size %u: must be 1, 2 or 4", element_size);
      return GPULEASE_WRITE_FAILED;
    }
  }
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  char what[96];
  snprintf(what, sizeof what, "cuMemsetD%uAsync(%zu elements at offset %" PRIu64 ")",
           element_size * 8, count, offset);
  return stream_fail(c, r, what, GPULEASE_WRITE_FAILED, err, errlen);
}

static gpulease_status cuda_stream_sync(gl_backend *b, void *stream, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUresult r = make_current(c);
  if (r == CUDA_SUCCESS) r = c->cu.cuStreamSynchronize((CUstream)stream);
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  cu_msg(c, r, "cuStreamSynchronize: the stream's work failed", err, errlen);
  note_sticky(c, r);
  lost_note(c, err, errlen);
  return GPULEASE_LAUNCH_FAILED;
}

/* ---- the rest ------------------------------------------------------------------ */

static bool cuda_context_lost(gl_backend *b) { return is_lost(as_cuda(b)); }

static void cuda_destroy(gl_backend *b) {
  cuda_backend *c = as_cuda(b);
  if (c->have_device && !is_lost(c)) {
    make_current(c);
    release_device(c);
  }
  pthread_mutex_destroy(&c->launch_mu);
  pthread_mutex_destroy(&c->ranges_mu);
  free(c->ranges);
  free(c);
}

static const gl_backend_ops k_cuda_ops = {
    .name = "cuda",
    .probe = cuda_probe,
    .warm = cuda_warm,
    .reset = cuda_reset,
    .init = cuda_init,
    .open_shared = cuda_open_shared,
    .region_add = cuda_region_add,
    .region_remove = cuda_region_remove,
    .set_limits = cuda_set_limits,
    .load_module = cuda_load_module,
    .unload_module = cuda_unload_module,
    .get_function = cuda_get_function,
    .param_sizes = cuda_param_sizes,
    .write = cuda_write,
    .launch = cuda_launch,
    .read = cuda_read,
    .launch_read = cuda_launch_read,
    .context_lost = cuda_context_lost,
    .destroy = cuda_destroy,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .launch_runs_inline = false,
    .launch_async = cuda_launch_async,
    .write_async = cuda_write_async,
    .read_sync = cuda_read_sync,
    .copy_async = cuda_copy_async,
    .memset_async = cuda_memset_async,
    .stream_sync = cuda_stream_sync,
    .func_info = cuda_func_info,
    .compile_ptx = cuda_compile_ptx,
    .cache_tag = cuda_cache_tag,
    .host_register = cuda_host_register,
    .host_unregister = cuda_host_unregister,
};

gl_backend *gl_backend_cuda_new(void) {
  cuda_backend *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  if (pthread_mutex_init(&c->launch_mu, NULL) != 0) {
    free(c);
    return NULL;
  }
  if (pthread_mutex_init(&c->ranges_mu, NULL) != 0) {
    pthread_mutex_destroy(&c->launch_mu);
    free(c);
    return NULL;
  }
  atomic_init(&c->lost, false);
  c->base.ops = &k_cuda_ops;
  return &c->base;
}
