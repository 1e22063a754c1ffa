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
 * Launch attributes: a launch with GL_LAUNCH_F_COOPERATIVE or cluster
 * dimensions goes through cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_
 * COOPERATIVE / _CLUSTER_DIMENSION, after checks that give a clear error
 * where the driver's is terse (attrs_check): a cooperative grid must fit
 * on the device at once (cuOccupancyMaxActiveBlocksPerMultiprocessor x the
 * SM count, read at open time), a cluster needs compute capability 9.0,
 * grid dimensions that are multiples of the cluster's, the kernel's
 * compiled cluster dimensions if it has them, and no more blocks than
 * cuOccupancyMaxPotentialClusterSize allows. The checks are best effort
 * (a query that fails leaves the verdict to the launch); the driver's own
 * COOPERATIVE_LAUNCH_TOO_LARGE and INVALID_CLUSTER_SIZE are mapped the same
 * way. A plain launch (no flags, no cluster) is a cuLaunchKernel as ever:
 * one test of the launch's flags and cluster on the way.
 *
 * A stream handle (void *) is a cuda_stream: the CUstream and the stream's
 * BURST graphs. A BURST of n launches is one CUDA graph of n kernel nodes
 * in a chain (node i depends on node i-1), instantiated once per shape and
 * kept in a small cache of the stream (BURST_CACHE entries, least recently
 * used goes). The shape is n and, per launch, the function, grid, block,
 * shared memory, flags, cluster, argument count and argument sizes: looked
 * up by a 64-bit hash, then compared in full against the entry's stored
 * shape. An entry also keeps its graph's node handles and a copy of every
 * launch's argument bytes (concatenated); a burst of a known shape
 * compares each launch's bytes with the copy, sets the parameters of the
 * nodes that differ (cuGraphExecKernelNodeSetParams, which affects later
 * launches only) and relaunches (cuGraphLaunch). A miss builds the whole
 * entry before touching the cache, so a failure (cuGraphAddKernelNode of
 * launch i, cuGraphInstantiateWithFlags) frees everything it made and
 * leaves the cache as it was. Function handles may be reused by the driver
 * once a module is unloaded, so every unload_module bumps a generation and
 * entries built before it are dropped at the next lookup. Only the
 * stream's session thread touches its cache: no lock. stream_destroy waits
 * for the stream, then destroys the entries' execs and graphs and the
 * stream.
 *
 * Events (EVENT_RECORD): cuEventCreate (CU_EVENT_DEFAULT: timing on) at
 * first record, cuEventRecord on the stream; elapsed waits for the end
 * event and converts cuEventElapsedTime's milliseconds to nanoseconds.
 *
 * Graphs (GRAPH_BEGIN .. GRAPH_DESTROY): graph_build captures the recipe's
 * ops on a stream created for the build (cuStreamBeginCapture, thread-local
 * mode, so other sessions' threads are not disturbed), issued with the
 * driver calls the *_async ops use; the launch attributes are checked
 * before the capture begins. The kernel nodes are then found in capture
 * order (cuGraphGetNodes gives nodes in the order they were added; those
 * of type CU_GRAPH_NODE_TYPE_KERNEL are kept, and must be as many as the
 * recipe's kernels, with the ops' dimensions, or the build fails INTERNAL
 * rather than number them wrong), and the graph is instantiated
 * (cuGraphInstantiateWithFlags). graph_set_args gives node i new argument
 * values (cuGraphExecKernelNodeSetParams, with the node's function,
 * dimensions and shared memory as built); graph_launch is cuGraphLaunch on
 * the session's stream. A WHILE loop (CUDA 12.4+ driver: the conditional
 * node entry points are optional in the table) is a graph of one
 * conditional node (cuGraphConditionalHandleCreate, 1 assigned at each
 * launch; cuGraphAddNode) whose body graph is filled by capture
 * (cuStreamBeginCaptureToGraph) with the ops and then gl_while_cond, which
 * sets the condition from the u32 flag (cudaGraphSetConditional). That
 * kernel needs libcudadevrt, so it is device-linked when gpulease is built:
 * while_cond_cubins.c holds a cubin for each architecture
 * (scripts/gen_while_cond.sh), and the one for the device's compute
 * capability is loaded into the context at the first loop (cond_mu),
 * unloaded by reset and destroy.
 *
 * Error messages always name the CUDA error ("CUDA_ERROR_ILLEGAL_ADDRESS")
 * and its description. After a fault that leaves the context unusable
 * (sticky errors: illegal address, illegal instruction, assert, ...) the
 * backend reports context_lost and the worker exits.
 */
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "gpu/cuda_api.h"
#include "backend/backend.h"
#include "backend/cuda_compat.h"
#include "backend/fatbin.h"
#include "backend/while_cond.h"

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
  int sm_count;    /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT; 0: unknown */
  int coop_launch; /* CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH */
  /* Bumped by every unload_module: a BURST graph built before refers to
   * function handles that the driver may hand out again. */
  atomic_uint_fast64_t unload_gen;
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
  /* Graph WHILE loops' condition kernel (while_cond_cubins.c), loaded at
   * the first loop graph; NULL until then. */
  pthread_mutex_t cond_mu; /* cond_mod, cond_fn */
  CUmodule cond_mod;
  CUfunction cond_fn;
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

/* Unloads the WHILE loops' condition kernel, if it was loaded. The
 * context is current and no graph uses it any more. */
static void cond_unload(cuda_backend *c) {
  pthread_mutex_lock(&c->cond_mu);
  if (c->cond_mod) c->cu.cuModuleUnload(c->cond_mod);
  c->cond_mod = NULL;
  c->cond_fn = NULL;
  pthread_mutex_unlock(&c->cond_mu);
}

/* Undoes a partial init. */
static void release_device(cuda_backend *c) {
  const gl_cuda *cu = &c->cu;
  cond_unload(c);
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
  if (cu->cuDeviceGetAttribute(&c->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, c->dev) !=
      CUDA_SUCCESS)
    c->sm_count = 0;
  if (cu->cuDeviceGetAttribute(&c->coop_launch, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, c->dev) !=
      CUDA_SUCCESS)
    c->coop_launch = 0;

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
  if (r == CUDA_SUCCESS) cond_unload(c); /* loaded again by the next lease's first loop */
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
  /* PTX is NUL-terminated; cubin and fatbin carry their size (len is
   * used to read a fatbin's images when the driver refuses them all) */
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
  bool fatbin_refused = format == GPULEASE_IMAGE_FATBIN &&
                        (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || r == CUDA_ERROR_NO_BINARY_FOR_GPU);
  if ((r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION && format == GPULEASE_IMAGE_PTX) || fatbin_refused) {
    /* PTX newer than the driver (a fatbin's newest PTX for this GPU when
     * no image in it loads): nvJitLink's cubin, or advice */
    char *fptx = NULL;
    size_t fptx_len = 0;
    unsigned farch = 0;
    const uint8_t *ptx = image;
    size_t ptx_len = format == GPULEASE_IMAGE_PTX ? strlen((const char *)image) : 0;
    if (fatbin_refused) {
      char why[768];
      if (gl_fatbin_pick_ptx(image, len, (unsigned)(c->cc_major * 10 + c->cc_minor), &fptx,
                             &fptx_len, &farch, why, sizeof why) != 0) {
        char name[64];
        gl_cuda_error_name(&c->cu, r, name, sizeof name);
        snprintf(err, errlen, "cuModuleLoadDataEx (fatbin image): %s: no image in it runs on this "
                 "GPU (sm_%d%d): %s", name, c->cc_major, c->cc_minor, why);
        free(logs);
        return GPULEASE_LOAD_FAILED;
      }
      ptx = (const uint8_t *)fptx;
      ptx_len = fptx_len;
    }
    uint8_t *cubin = NULL;
    size_t cubin_len = 0;
    gpulease_status st = gl_cuda_compat_compile(ptx, ptx_len, c->cc_major, c->cc_minor,
                                                c->cu.driver_version, logs->error, &cubin,
                                                &cubin_len, err, errlen);
    free(fptx);
    free(logs);
    if (st != GPULEASE_OK) return st;
    r = c->cu.cuModuleLoadDataEx(&mod, cubin, 0, NULL, NULL);
    free(cubin);
    if (r != CUDA_SUCCESS) {
      cu_msg(c, r, "cuModuleLoadDataEx (the cubin nvJitLink made of a PTX)", err, errlen);
      note_failure(c, r);
      return GPULEASE_LOAD_FAILED;
    }
    if (fatbin_refused) GL_INFO("fatbin: its PTX for sm_%u compiled by nvJitLink", farch);
    *module = mod;
    return GPULEASE_OK;
  }
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
  /* Before the unload: a module loaded after it cannot meet a BURST graph
   * of the old generation (its function handles may be the old ones). */
  atomic_fetch_add(&c->unload_gen, 1);
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

/* TENSORMAP_ENCODE: cuTensorMapEncodeTiled at the region's address +
 * offset, into a CUtensorMap of our own (64-byte aligned) copied to out.
 * The encoder's CUDA_ERROR_INVALID_VALUE is INVALID_ARGUMENT. */
static gpulease_status cuda_tensormap_encode(gl_backend *b, uint64_t offset, const gl_tmap_req *t,
                                             uint8_t out[GL_TMAP_BYTES], char *err,
                                             size_t errlen) {
  cuda_backend *c = as_cuda(b);
  _Static_assert(sizeof(CUtensorMap) == GL_TMAP_BYTES, "a CUtensorMap is 128 bytes");
  if (!c->cu.cuTensorMapEncodeTiled) {
    snprintf(err, errlen, "the CUDA driver (version %d) has no cuTensorMapEncodeTiled (CUDA "
             "12.0+)", c->cu.driver_version);
    return GPULEASE_UNSUPPORTED;
  }
  CUresult r = make_current(c);
  if (r != CUDA_SUCCESS) {
    cu_msg(c, r, "cuTensorMapEncodeTiled: cuCtxSetCurrent", err, errlen);
    return GPULEASE_INTERNAL;
  }
  CUtensorMap map;
  memset(&map, 0, sizeof map);
  cuuint64_t dims[GL_TMAP_MAX_RANK], strides[GL_TMAP_MAX_RANK - 1];
  cuuint32_t box[GL_TMAP_MAX_RANK], es[GL_TMAP_MAX_RANK];
  for (unsigned i = 0; i < GL_TMAP_MAX_RANK; i++) {
    dims[i] = t->global_dim[i];
    box[i] = t->box_dim[i];
    es[i] = t->element_strides[i];
    if (i < GL_TMAP_MAX_RANK - 1) strides[i] = t->global_strides[i];
  }
  r = c->cu.cuTensorMapEncodeTiled(
      &map, (CUtensorMapDataType)t->data_type, t->rank, (void *)(uintptr_t)(c->region + offset),
      dims, strides, box, es, (CUtensorMapInterleave)t->interleave,
      (CUtensorMapSwizzle)t->swizzle, (CUtensorMapL2promotion)t->l2_promotion,
      (CUtensorMapFloatOOBfill)t->oob_fill);
  if (r != CUDA_SUCCESS) {
    cu_msg(c, r, "cuTensorMapEncodeTiled", err, errlen);
    return r == CUDA_ERROR_INVALID_VALUE   ? GPULEASE_INVALID_ARGUMENT
           : r == CUDA_ERROR_NOT_SUPPORTED ? GPULEASE_UNSUPPORTED
                                           : GPULEASE_INTERNAL;
  }
  memcpy(out, &map, GL_TMAP_BYTES);
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
  if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION) {
    /* PTX newer than the driver: nvJitLink's cubin (the caller caches it),
     * or advice */
    jit_finish(logs);
    st = gl_cuda_compat_compile(ptx, len, c->cc_major, c->cc_minor, c->cu.driver_version,
                                logs->error, bin, bin_len, err, errlen);
    goto out;
  }
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

/* ---- launch attributes (cooperative, clusters) ------------------------------- */

static bool has_cluster(const gl_launch *l) {
  return (l->cluster[0] | l->cluster[1] | l->cluster[2]) != 0;
}

/* True when the launch needs cuLaunchKernelEx. */
static inline bool has_attrs(const gl_launch *l) {
  return (l->flags | l->cluster[0] | l->cluster[1] | l->cluster[2]) != 0;
}

/* "CALL('name', grid XxYxZ, block XxYxZ, N bytes of shared memory[,
 * cooperative][, cluster XxYxZ])". */
static void launch_desc(const gl_launch *l, const char *call, char *what, size_t len) {
  char attrs[64] = "";
  if (l->flags & GL_LAUNCH_F_COOPERATIVE) snprintf(attrs, sizeof attrs, ", cooperative");
  if (has_cluster(l)) {
    size_t n = strlen(attrs);
    snprintf(attrs + n, sizeof attrs - n, ", cluster %ux%ux%u", l->cluster[0], l->cluster[1],
             l->cluster[2]);
  }
  snprintf(what, len, "%s('%s', grid %ux%ux%u, block %ux%ux%u, %u bytes of shared memory%s)",
           call, l->kernel_name, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
           l->block[2], l->shared_mem_bytes, attrs);
}

/* The launch as the error messages name it. */
static void launch_what(const gl_launch *l, char *what, size_t len) {
  launch_desc(l, has_attrs(l) ? "cuLaunchKernelEx" : "cuLaunchKernel", what, len);
}

static uint64_t grid_blocks(const gl_launch *l) {
  return (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
}

static uint64_t block_threads(const gl_launch *l) {
  return (uint64_t)l->block[0] * l->block[1] * l->block[2];
}

/* How many blocks of the launch one SM holds at once (*per_sm), by the
 * occupancy calculator. */
static CUresult blocks_per_sm(cuda_backend *c, CUfunction f, const gl_launch *l, int *per_sm) {
  *per_sm = 0;
  uint64_t threads = block_threads(l);
  if (threads == 0 || threads > INT_MAX) return CUDA_ERROR_INVALID_VALUE;
  return c->cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, f, (int)threads,
                                                            l->shared_mem_bytes);
}

/* "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: a cooperative grid of N blocks
 * cannot be co-resident: at most M blocks (K per SM x S SMs) of T threads
 * and D bytes of dynamic shared memory". */
static void coop_msg(cuda_backend *c, const gl_launch *l, int per_sm, char *err, size_t errlen) {
  snprintf(err, errlen,
           "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: a cooperative grid of %" PRIu64
           " blocks cannot be co-resident: at most %" PRIu64 " blocks (%d per SM x %d SMs) of %"
           PRIu64 " threads and %u bytes of dynamic shared memory (kernel '%s', grid %ux%ux%u)",
           grid_blocks(l), (uint64_t)per_sm * (uint64_t)c->sm_count, per_sm, c->sm_count,
           block_threads(l), l->shared_mem_bytes, l->kernel_name, l->grid[0], l->grid[1],
           l->grid[2]);
}

/* cuLaunchKernelEx's configuration of launch l on stream, with nattrs
 * attributes. */
static void launch_config(CUlaunchConfig *cfg, const gl_launch *l, CUstream stream,
                          CUlaunchAttribute *attrs, unsigned nattrs) {
  memset(cfg, 0, sizeof *cfg);
  cfg->gridDimX = l->grid[0];
  cfg->gridDimY = l->grid[1];
  cfg->gridDimZ = l->grid[2];
  cfg->blockDimX = l->block[0];
  cfg->blockDimY = l->block[1];
  cfg->blockDimZ = l->block[2];
  cfg->sharedMemBytes = l->shared_mem_bytes;
  cfg->hStream = stream;
  cfg->attrs = attrs;
  cfg->numAttrs = nattrs;
}

/* Checks a launch with attributes before it is queued: known flags, a
 * cooperative grid that can be co-resident, a cluster the device and the
 * kernel can run. GPULEASE_OK, or the status with err written. A query
 * that fails (other than by a sticky error) leaves the verdict to the
 * launch itself. */
static gpulease_status attrs_check(cuda_backend *c, CUfunction f, const gl_launch *l,
                                   CUstream stream, char *err, size_t errlen) {
  const gl_cuda *cu = &c->cu;
  CUresult r;
  if (l->flags & ~GL_LAUNCH_F_COOPERATIVE) {
    snprintf(err, errlen, "kernel '%s': launch flags 0x%02x: only 0x%02x (cooperative) is known",
             l->kernel_name, l->flags, GL_LAUNCH_F_COOPERATIVE);
    return GPULEASE_INVALID_ARGUMENT;
  }
  if (has_cluster(l)) {
    const uint32_t *k = l->cluster;
    if (c->cc_major < 9) {
      snprintf(err, errlen,
               "thread-block clusters need compute capability 9.0 or newer; this GPU is %d.%d "
               "(kernel '%s', cluster %ux%ux%u)",
               c->cc_major, c->cc_minor, l->kernel_name, k[0], k[1], k[2]);
      return GPULEASE_UNSUPPORTED;
    }
    if (!k[0] || !k[1] || !k[2] || l->grid[0] % k[0] || l->grid[1] % k[1] ||
        l->grid[2] % k[2]) {
      snprintf(err, errlen,
               "CUDA_ERROR_INVALID_CLUSTER_SIZE: kernel '%s': grid %ux%ux%u is not a whole "
               "number of clusters of %ux%ux%u blocks (each cluster dimension must be at least 1 "
               "and divide the grid's)",
               l->kernel_name, l->grid[0], l->grid[1], l->grid[2], k[0], k[1], k[2]);
      return GPULEASE_INVALID_ARGUMENT;
    }
    /* Compiled cluster dimensions (.reqnctapercluster): all 0 when none. */
    int req[3] = {0, 0, 0};
    if (cu->cuFuncGetAttribute(&req[0], CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, f) ==
            CUDA_SUCCESS &&
        cu->cuFuncGetAttribute(&req[1], CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, f) ==
            CUDA_SUCCESS &&
        cu->cuFuncGetAttribute(&req[2], CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, f) ==
            CUDA_SUCCESS &&
        req[0] > 0 &&
        ((uint32_t)req[0] != k[0] || (uint32_t)req[1] != k[1] || (uint32_t)req[2] != k[2])) {
      snprintf(err, errlen,
               "CUDA_ERROR_INVALID_CLUSTER_SIZE: kernel '%s' was compiled for clusters of "
               "%dx%dx%d blocks (.reqnctapercluster); the launch gives %ux%ux%u",
               l->kernel_name, req[0], req[1], req[2], k[0], k[1], k[2]);
      return GPULEASE_INVALID_ARGUMENT;
    }
    /* The configuration without the cluster attribute: with it, a cluster
     * above the limit makes the query itself fail with
     * CUDA_ERROR_INVALID_CLUSTER_SIZE instead of telling the limit (H100,
     * driver 580); the compiled dimensions were checked above. */
    CUlaunchConfig cfg;
    launch_config(&cfg, l, stream, NULL, 0);
    int max = 0;
    r = cu->cuOccupancyMaxPotentialClusterSize(&max, f, &cfg);
    if (r != CUDA_SUCCESS && is_sticky(r))
      return stream_fail(c, r, "cuOccupancyMaxPotentialClusterSize", GPULEASE_LAUNCH_FAILED, err,
                         errlen);
    uint64_t blocks = (uint64_t)k[0] * k[1] * k[2];
    if (r == CUDA_SUCCESS && max > 0 && blocks > (uint64_t)max) {
      snprintf(err, errlen,
               "CUDA_ERROR_INVALID_CLUSTER_SIZE: a cluster of %" PRIu64 " blocks (%ux%ux%u) "
               "exceeds the %d this kernel can run (cuOccupancyMaxPotentialClusterSize for "
               "kernel '%s' with %" PRIu64 " threads and %u bytes of dynamic shared memory a "
               "block%s)",
               blocks, k[0], k[1], k[2], max, l->kernel_name, block_threads(l),
               l->shared_mem_bytes,
               max == 8 ? "; more than 8 is a non-portable cluster size, not enabled here" : "");
      return GPULEASE_INVALID_ARGUMENT;
    }
  }
  if (l->flags & GL_LAUNCH_F_COOPERATIVE) {
    if (!c->coop_launch) {
      snprintf(err, errlen,
               "cooperative launches are not supported by this GPU (%s: "
               "CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH is 0; kernel '%s')",
               c->name, l->kernel_name);
      return GPULEASE_UNSUPPORTED;
    }
    int per_sm = 0;
    r = blocks_per_sm(c, f, l, &per_sm);
    if (r != CUDA_SUCCESS && is_sticky(r))
      return stream_fail(c, r, "cuOccupancyMaxActiveBlocksPerMultiprocessor",
                         GPULEASE_LAUNCH_FAILED, err, errlen);
    /* 0 per SM: the block itself cannot run (too many threads, too much
     * shared memory): the launch says which. */
    if (r == CUDA_SUCCESS && per_sm > 0 && c->sm_count > 0 &&
        grid_blocks(l) > (uint64_t)per_sm * (uint64_t)c->sm_count) {
      coop_msg(c, l, per_sm, err, errlen);
      return GPULEASE_INVALID_ARGUMENT;
    }
  }
  return GPULEASE_OK;
}

/* Queues a launch with its attributes (cuLaunchKernelEx). */
static CUresult launch_ex(cuda_backend *c, CUfunction f, const gl_launch *l, CUstream stream) {
  CUlaunchAttribute attrs[2];
  memset(attrs, 0, sizeof attrs);
  unsigned n = 0;
  if (l->flags & GL_LAUNCH_F_COOPERATIVE) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[n].value.cooperative = 1;
    n++;
  }
  if (has_cluster(l)) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = l->cluster[0];
    attrs[n].value.clusterDim.y = l->cluster[1];
    attrs[n].value.clusterDim.z = l->cluster[2];
    n++;
  }
  CUlaunchConfig cfg;
  launch_config(&cfg, l, stream, attrs, n);
  return c->cu.cuLaunchKernelEx(&cfg, f, l->args, NULL);
}

/* The driver's refusal of a cooperative or cluster launch (r is
 * CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE or CUDA_ERROR_INVALID_CLUSTER_SIZE):
 * INVALID_ARGUMENT, the message led by the error's name; a cooperative
 * grid's message names the most blocks that fit where the occupancy
 * calculator tells. */
static gpulease_status attrs_refused(cuda_backend *c, CUresult r, CUfunction f,
                                     const gl_launch *l, const char *what, char *err,
                                     size_t errlen) {
  char name[64];
  gl_cuda_error_name(&c->cu, r, name, sizeof name);
  snprintf(err, errlen, "%s: %s: %s", name, what, gl_cuda_error_string(&c->cu, r));
  int per_sm = 0;
  if (r == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE && c->sm_count > 0 &&
      blocks_per_sm(c, f, l, &per_sm) == CUDA_SUCCESS) {
    size_t n = strlen(err);
    if (n < errlen)
      snprintf(err + n, errlen - n,
               "; at most %" PRIu64 " blocks (%d per SM x %d SMs) of %" PRIu64 " threads and %u "
               "bytes of dynamic shared memory fit by the occupancy calculator, fewer in "
               "clusters",
               (uint64_t)per_sm * (uint64_t)c->sm_count, per_sm, c->sm_count, block_threads(l),
               l->shared_mem_bytes);
  }
  return GPULEASE_INVALID_ARGUMENT;
}

static bool is_attrs_refusal(CUresult r) {
  return r == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE || r == CUDA_ERROR_INVALID_CLUSTER_SIZE;
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
  char what[GL_WIRE_MAX_KERNEL_NAME + 256];
  CUstream stream = c->submit_stream;
  CUresult r = make_current(c);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuCtxSetCurrent");
    cu_msg(c, r, what, err, errlen);
    return GPULEASE_LAUNCH_FAILED;
  }
  bool attrs = has_attrs(l);
  if (attrs) {
    gpulease_status st = attrs_check(c, (CUfunction)fn, l, stream, err, errlen);
    if (st != GPULEASE_OK) return st;
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
  if (attrs)
    r = launch_ex(c, (CUfunction)fn, l, stream);
  else
    r = cu->cuLaunchKernel((CUfunction)fn, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                           l->block[1], l->block[2], l->shared_mem_bytes, stream, l->args, NULL);
  if (r != CUDA_SUCCESS) {
    launch_what(l, what, sizeof what);
    if (is_attrs_refusal(r)) {
      pthread_mutex_unlock(&c->launch_mu);
      return attrs_refused(c, r, (CUfunction)fn, l, what, err, errlen);
    }
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

/* One BURST shape's graph (see the top comment). exec NULL: an empty slot. */
typedef struct burst_key { /* one launch's shape; no padding, compared with memcmp */
  CUfunction fn;
  uint32_t grid[3], block[3];
  uint32_t shared_mem_bytes;
  uint32_t flags;
  uint32_t cluster[3];
  uint32_t zero;
  uint64_t arg_count;
} burst_key;
_Static_assert(sizeof(burst_key) == sizeof(CUfunction) + 12 * sizeof(uint32_t) + sizeof(uint64_t),
               "burst_key has padding");

typedef struct burst_graph {
  CUgraphExec exec;
  CUgraph graph;
  CUgraphNode *nodes;  /* n, node i is launch i */
  burst_key *keys;     /* n */
  size_t n;
  size_t *arg_sizes;   /* every launch's argument sizes, in order */
  size_t nargs;
  uint8_t *arg_bytes;  /* every launch's argument bytes, in order, as last set */
  size_t nbytes;
  uint64_t hash;
  uint_fast64_t gen;   /* unload_gen when built */
  uint64_t used;       /* the stream's tick at its last use */
} burst_graph;

#define BURST_CACHE 8

/* What the backend's stream handles point at. */
typedef struct cuda_stream {
  CUstream s;
  uint64_t tick;
  burst_graph bursts[BURST_CACHE];
  /* The entry the last burst ran (its `used` then): a burst the worker
   * says is the same goes straight to it. */
  size_t last_slot;
  uint64_t last_used;
} cuda_stream;

static CUstream cstream(void *stream) { return ((cuda_stream *)stream)->s; }

static gpulease_status cuda_stream_create(gl_backend *b, void **stream, char *err,
                                          size_t errlen) {
  cuda_backend *c = as_cuda(b);
  cuda_stream *cs = calloc(1, sizeof *cs);
  if (!cs) {
    snprintf(err, errlen, "cuStreamCreate: out of memory for the stream's state");
    return GPULEASE_INTERNAL;
  }
  CUresult r = make_current(c);
  if (r == CUDA_SUCCESS) r = c->cu.cuStreamCreate(&cs->s, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    free(cs);
    cu_msg(c, r, "cuStreamCreate", err, errlen);
    note_sticky(c, r);
    lost_note(c, err, errlen);
    return GPULEASE_INTERNAL;
  }
  *stream = cs;
  return GPULEASE_OK;
}

/* Frees one burst graph's host memory, and its exec and graph when
 * `device` (not after the context is lost), leaving an empty slot. An exec
 * still running is freed by the driver when it completes. */
static void burst_free(cuda_backend *c, burst_graph *g, bool device) {
  if (device) {
    if (g->exec) c->cu.cuGraphExecDestroy(g->exec);
    if (g->graph) c->cu.cuGraphDestroy(g->graph);
  }
  free(g->nodes);
  free(g->keys);
  free(g->arg_sizes);
  free(g->arg_bytes);
  memset(g, 0, sizeof *g);
}

static void cuda_stream_destroy(gl_backend *b, void *stream) {
  cuda_backend *c = as_cuda(b);
  cuda_stream *cs = stream;
  if (!cs) return;
  /* After a fault the worker exits: nothing left to wait for or give back
   * but host memory. */
  bool device = !is_lost(c) && make_current(c) == CUDA_SUCCESS;
  if (device) {
    note_sticky(c, c->cu.cuStreamSynchronize(cs->s));
    device = !is_lost(c);
  }
  for (size_t i = 0; i < BURST_CACHE; i++) burst_free(c, &cs->bursts[i], device);
  if (device) c->cu.cuStreamDestroy(cs->s);
  free(cs);
}

/* A failed queueing of a launch (r, from `what`): the launch
 * configuration's fault (INVALID_ARGUMENT: nothing ran; cooperative and
 * cluster refusals lead with the CUDA error's name), else the stream's
 * (stream_fail). */
static gpulease_status launch_refused(cuda_backend *c, CUresult r, CUfunction f,
                                      const gl_launch *l, const char *what, char *err,
                                      size_t errlen) {
  if (is_attrs_refusal(r)) return attrs_refused(c, r, f, l, what, err, errlen);
  if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) {
    cu_msg(c, r, what, err, errlen);
    return GPULEASE_INVALID_ARGUMENT;
  }
  return stream_fail(c, r, what, GPULEASE_LAUNCH_FAILED, err, errlen);
}

/* A launch with attributes, out of the common path. */
static gpulease_status launch_attrs_async(cuda_backend *c, CUstream stream, CUfunction f,
                                          const gl_launch *l, char *err, size_t errlen) {
  gpulease_status st = attrs_check(c, f, l, stream, err, errlen);
  if (st != GPULEASE_OK) return st;
  CUresult r = launch_ex(c, f, l, stream);
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  char what[GL_WIRE_MAX_KERNEL_NAME + 256];
  launch_what(l, what, sizeof what);
  return launch_refused(c, r, f, l, what, err, errlen);
}

static gpulease_status cuda_launch_async(gl_backend *b, void *stream, void *fn,
                                         const gl_launch *l, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  char what[GL_WIRE_MAX_KERNEL_NAME + 256];
  CUresult r = make_current(c);
  if (r != CUDA_SUCCESS) {
    cu_msg(c, r, "cuLaunchKernel: cuCtxSetCurrent", err, errlen);
    return GPULEASE_LAUNCH_FAILED;
  }
  if (has_attrs(l)) return launch_attrs_async(c, cstream(stream), (CUfunction)fn, l, err, errlen);
  r = c->cu.cuLaunchKernel((CUfunction)fn, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                           l->block[1], l->block[2], l->shared_mem_bytes, cstream(stream),
                           l->args, NULL);
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  launch_what(l, what, sizeof what);
  /* The launch configuration (dimensions, shared memory, registers for
   * that many threads) is the caller's to fix; nothing ran. */
  return launch_refused(c, r, (CUfunction)fn, l, what, err, errlen);
}

/* ---- sessions: BURST as a cached CUDA graph ------------------------------------ */

static uint64_t hash_mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

static void burst_key_of(burst_key *k, void *fn, const gl_launch *l) {
  memset(k, 0, sizeof *k);
  k->fn = (CUfunction)fn;
  for (int d = 0; d < 3; d++) {
    k->grid[d] = l->grid[d];
    k->block[d] = l->block[d];
    k->cluster[d] = l->cluster[d];
  }
  k->shared_mem_bytes = l->shared_mem_bytes;
  k->flags = l->flags;
  k->arg_count = l->arg_count;
}

/* The shape's hash: n, and each launch's key and argument sizes. */
static uint64_t burst_hash(void *const *fns, const gl_launch *ls, size_t n) {
  uint64_t h = hash_mix(0, n);
  for (size_t i = 0; i < n; i++) {
    const gl_launch *l = &ls[i];
    h = hash_mix(h, (uint64_t)(uintptr_t)fns[i]);
    h = hash_mix(h, (uint64_t)l->grid[0] | (uint64_t)l->grid[1] << 32);
    h = hash_mix(h, (uint64_t)l->grid[2] | (uint64_t)l->block[0] << 32);
    h = hash_mix(h, (uint64_t)l->block[1] | (uint64_t)l->block[2] << 32);
    h = hash_mix(h, (uint64_t)l->shared_mem_bytes | (uint64_t)l->flags << 32);
    h = hash_mix(h, (uint64_t)l->cluster[0] | (uint64_t)l->cluster[1] << 32);
    h = hash_mix(h, (uint64_t)l->cluster[2] | (uint64_t)l->arg_count << 32);
    for (size_t j = 0; j < l->arg_count; j++) h = hash_mix(h, l->arg_sizes[j]);
  }
  return h;
}

/* True when entry g was built for exactly this shape. */
static bool burst_same_shape(const burst_graph *g, void *const *fns, const gl_launch *ls,
                             size_t n) {
  if (g->n != n) return false;
  size_t a = 0;
  for (size_t i = 0; i < n; i++) {
    const gl_launch *l = &ls[i];
    burst_key k;
    burst_key_of(&k, fns[i], l);
    if (memcmp(&g->keys[i], &k, sizeof k) != 0) return false;
    if (l->arg_count > g->nargs - a) return false;
    if (l->arg_count &&
        memcmp(&g->arg_sizes[a], l->arg_sizes, l->arg_count * sizeof *l->arg_sizes) != 0)
      return false;
    a += l->arg_count;
  }
  return a == g->nargs;
}

/* A kernel node's parameters for launch l of fn: the current context, the
 * arguments copied by the driver at the call. */
static CUDA_KERNEL_NODE_PARAMS node_params(void *fn, const gl_launch *l) {
  CUDA_KERNEL_NODE_PARAMS p;
  memset(&p, 0, sizeof p);
  p.func = (CUfunction)fn;
  p.gridDimX = l->grid[0];
  p.gridDimY = l->grid[1];
  p.gridDimZ = l->grid[2];
  p.blockDimX = l->block[0];
  p.blockDimY = l->block[1];
  p.blockDimZ = l->block[2];
  p.sharedMemBytes = l->shared_mem_bytes;
  p.kernelParams = l->args;
  p.extra = NULL;
  p.kern = NULL;
  p.ctx = NULL;
  return p;
}

/* The failure r of `call` on launch i of a burst: "launch i of the burst:
 * call('name', grid ..., ...): CUDA_ERROR_X (...)", mapped as a launch's. */
static gpulease_status burst_launch_fail(cuda_backend *c, CUresult r, size_t i, void *fn,
                                         const gl_launch *l, const char *call, char *err,
                                         size_t errlen) {
  char what[GL_WIRE_MAX_KERNEL_NAME + 320];
  int n = snprintf(what, sizeof what, "launch %zu of the burst: ", i);
  if (n < 0 || (size_t)n >= sizeof what) n = 0;
  launch_desc(l, call, what + n, sizeof what - (size_t)n);
  return launch_refused(c, r, (CUfunction)fn, l, what, err, errlen);
}

/* Builds the graph of a burst of a new shape into *g (empty on failure,
 * everything made freed). */
static gpulease_status burst_build(cuda_backend *c, void *const *fns, const gl_launch *ls,
                                   size_t n, burst_graph *g, char *err, size_t errlen) {
  const gl_cuda *cu = &c->cu;
  memset(g, 0, sizeof *g);
  size_t nargs = 0, nbytes = 0;
  for (size_t i = 0; i < n; i++) {
    const gl_launch *l = &ls[i];
    if (l->arg_count > SIZE_MAX - nargs) goto too_big;
    nargs += l->arg_count;
    for (size_t j = 0; j < l->arg_count; j++) {
      if (l->arg_sizes[j] > SIZE_MAX - nbytes) goto too_big;
      nbytes += l->arg_sizes[j];
    }
  }
  g->n = n;
  g->nargs = nargs;
  g->nbytes = nbytes;
  g->nodes = calloc(n, sizeof *g->nodes);
  g->keys = calloc(n, sizeof *g->keys);
  g->arg_sizes = calloc(nargs ? nargs : 1, sizeof *g->arg_sizes);
  g->arg_bytes = malloc(nbytes ? nbytes : 1);
  if (!g->nodes || !g->keys || !g->arg_sizes || !g->arg_bytes) {
    burst_free(c, g, true);
    snprintf(err, errlen, "out of memory for the graph of a burst of %zu launches", n);
    return GPULEASE_INTERNAL;
  }
  size_t a = 0, off = 0;
  for (size_t i = 0; i < n; i++) {
    const gl_launch *l = &ls[i];
    burst_key_of(&g->keys[i], fns[i], l);
    for (size_t j = 0; j < l->arg_count; j++, a++) {
      g->arg_sizes[a] = l->arg_sizes[j];
      if (l->arg_sizes[j]) memcpy(g->arg_bytes + off, l->args[j], l->arg_sizes[j]);
      off += l->arg_sizes[j];
    }
  }
  CUresult r = cu->cuGraphCreate(&g->graph, 0);
  if (r != CUDA_SUCCESS) {
    g->graph = NULL;
    burst_free(c, g, true);
    return stream_fail(c, r, "cuGraphCreate (for a burst)", GPULEASE_LAUNCH_FAILED, err, errlen);
  }
  for (size_t i = 0; i < n; i++) {
    CUDA_KERNEL_NODE_PARAMS p = node_params(fns[i], &ls[i]);
    r = cu->cuGraphAddKernelNode(&g->nodes[i], g->graph, i ? &g->nodes[i - 1] : NULL, i ? 1 : 0,
                                 &p);
    if (r != CUDA_SUCCESS) {
      burst_free(c, g, true); /* the graph's nodes go with it */
      return burst_launch_fail(c, r, i, fns[i], &ls[i], "cuGraphAddKernelNode", err, errlen);
    }
  }
  r = cu->cuGraphInstantiateWithFlags(&g->exec, g->graph, 0);
  if (r != CUDA_SUCCESS) {
    g->exec = NULL;
    burst_free(c, g, true);
    char what[128];
    snprintf(what, sizeof what, "cuGraphInstantiateWithFlags (a burst of %zu launches)", n);
    if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) {
      cu_msg(c, r, what, err, errlen);
      return GPULEASE_INVALID_ARGUMENT;
    }
    return stream_fail(c, r, what, GPULEASE_LAUNCH_FAILED, err, errlen);
  }
  return GPULEASE_OK;

too_big:
  snprintf(err, errlen, "a burst of %zu launches: its arguments overflow size_t", n);
  return GPULEASE_INVALID_ARGUMENT;
}

/* A burst of g's shape: the nodes whose argument bytes differ from g's
 * copy get the new ones (the copy follows each node that was set). */
static gpulease_status burst_update(cuda_backend *c, burst_graph *g, void *const *fns,
                                    const gl_launch *ls, size_t n, char *err, size_t errlen) {
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    const gl_launch *l = &ls[i];
    size_t start = off;
    bool changed = false;
    for (size_t j = 0; j < l->arg_count; j++) {
      size_t len = l->arg_sizes[j];
      if (!changed && len && memcmp(g->arg_bytes + off, l->args[j], len) != 0) changed = true;
      off += len;
    }
    if (!changed) continue;
    CUDA_KERNEL_NODE_PARAMS p = node_params(fns[i], l);
    CUresult r = c->cu.cuGraphExecKernelNodeSetParams(g->exec, g->nodes[i], &p);
    if (r != CUDA_SUCCESS)
      return burst_launch_fail(c, r, i, fns[i], l, "cuGraphExecKernelNodeSetParams", err, errlen);
    for (size_t j = 0, o = start; j < l->arg_count; j++) {
      if (l->arg_sizes[j]) memcpy(g->arg_bytes + o, l->args[j], l->arg_sizes[j]);
      o += l->arg_sizes[j];
    }
  }
  return GPULEASE_OK;
}

static gpulease_status cuda_burst_async(gl_backend *b, void *stream, void *const *fns,
                                        const gl_launch *ls, size_t n, bool same_as_last,
                                        char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  cuda_stream *cs = stream;
  if (n == 0) {
    snprintf(err, errlen, "a burst of 0 launches");
    return GPULEASE_INVALID_ARGUMENT;
  }
  for (size_t i = 0; i < n; i++)
    if (has_attrs(&ls[i])) {
      snprintf(err, errlen,
               "a BURST's launches are plain launches (no cooperative or cluster attributes): "
               "launch %zu of the burst ('%s') has flags 0x%02x, cluster %ux%ux%u",
               i, ls[i].kernel_name, ls[i].flags, ls[i].cluster[0], ls[i].cluster[1],
               ls[i].cluster[2]);
      return GPULEASE_UNSUPPORTED;
    }
  CUresult r = make_current(c);
  if (r != CUDA_SUCCESS) {
    cu_msg(c, r, "a burst: cuCtxSetCurrent", err, errlen);
    return GPULEASE_LAUNCH_FAILED;
  }
  uint_fast64_t gen = atomic_load(&c->unload_gen);
  burst_graph *g = NULL, *empty = NULL, *lru = NULL;
  if (same_as_last && cs->last_used) {
    burst_graph *e = &cs->bursts[cs->last_slot];
    if (e->exec && e->gen == gen && e->used == cs->last_used && e->n == n) {
      g = e;
      goto launch;
    }
  }
  uint64_t h = burst_hash(fns, ls, n);
  for (size_t k = 0; k < BURST_CACHE; k++) {
    burst_graph *e = &cs->bursts[k];
    /* Built before a module went: its function handles may be reused. */
    if (e->exec && e->gen != gen) burst_free(c, e, true);
    if (!e->exec) {
      if (!empty) empty = e;
      continue;
    }
    if (!g && e->hash == h && burst_same_shape(e, fns, ls, n)) g = e;
    if (!lru || e->used < lru->used) lru = e;
  }
  gpulease_status st;
  if (g) {
    st = burst_update(c, g, fns, ls, n, err, errlen);
  } else {
    burst_graph fresh;
    st = burst_build(c, fns, ls, n, &fresh, err, errlen);
    if (st == GPULEASE_OK) {
      g = empty ? empty : lru; /* the cache is full when there is no empty slot */
      burst_free(c, g, true);
      *g = fresh;
      g->hash = h;
      g->gen = gen;
    }
  }
  if (st != GPULEASE_OK) return st;
launch:
  g->used = ++cs->tick;
  cs->last_slot = (size_t)(g - cs->bursts);
  cs->last_used = g->used;
  r = c->cu.cuGraphLaunch(g->exec, cs->s);
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  cs->last_used = 0;
  char what[128];
  snprintf(what, sizeof what, "cuGraphLaunch (a burst of %zu launches)", n);
  if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) {
    cu_msg(c, r, what, err, errlen);
    return GPULEASE_INVALID_ARGUMENT;
  }
  return stream_fail(c, r, what, GPULEASE_LAUNCH_FAILED, err, errlen);
}

/* ---- sessions: copies, sync, events ------------------------------------------- */

static gpulease_status cuda_write_async(gl_backend *b, void *stream, uint64_t offset,
                                        const void *src, size_t len, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUresult r = make_current(c);
  /* From pageable memory the driver stages src before returning, so the
   * caller may reuse it at once. */
  if (r == CUDA_SUCCESS)
    r = c->cu.cuMemcpyHtoDAsync(c->region + offset, src, len, cstream(stream));
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
    r = c->cu.cuMemcpyDtoHAsync(dst, c->region + offset, len, cstream(stream));
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuMemcpyDtoHAsync(%zu bytes at offset %" PRIu64 ")", len,
             offset);
    return stream_fail(c, r, what, GPULEASE_READ_FAILED, err, errlen);
  }
  /* dst is pageable: the copy is done when the stream is. */
  r = c->cu.cuStreamSynchronize(cstream(stream));
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
                                cstream(stream));
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
  CUstream s = cstream(stream);
  CUresult r = make_current(c);
  if (r == CUDA_SUCCESS) {
    switch (element_size) {
    case 1:
      r = c->cu.cuMemsetD8Async(dst, (unsigned char)value, count, s);
      break;
    case 2:
      r = c->cu.cuMemsetD16Async(dst, (unsigned short)value, count, s);
      break;
    case 4:
      r = c->cu.cuMemsetD32Async(dst, value, count, s);
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
  if (r == CUDA_SUCCESS) r = c->cu.cuStreamSynchronize(cstream(stream));
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  cu_msg(c, r, "cuStreamSynchronize: the stream's work failed", err, errlen);
  note_sticky(c, r);
  lost_note(c, err, errlen);
  return GPULEASE_LAUNCH_FAILED;
}

static gpulease_status cuda_event_record(gl_backend *b, void *stream, void **event, char *err,
                                         size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUevent e = (CUevent)*event;
  bool created = false;
  const char *what = "cuEventRecord: cuCtxSetCurrent";
  CUresult r = make_current(c);
  if (r == CUDA_SUCCESS && !e) {
    what = "cuEventCreate";
    r = c->cu.cuEventCreate(&e, CU_EVENT_DEFAULT); /* timing enabled */
    created = r == CUDA_SUCCESS;
  }
  if (r == CUDA_SUCCESS) {
    what = "cuEventRecord";
    r = c->cu.cuEventRecord(e, cstream(stream));
  }
  if (r == CUDA_SUCCESS) {
    *event = e;
    return GPULEASE_OK;
  }
  if (created) c->cu.cuEventDestroy(e);
  return stream_fail(c, r, what, GPULEASE_INTERNAL, err, errlen);
}

static gpulease_status cuda_event_elapsed(gl_backend *b, void *start, void *end, uint64_t *ns,
                                          char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  float ms = 0.0f;
  const char *what = "cuEventElapsedTime: cuCtxSetCurrent";
  CUresult r = make_current(c);
  if (r == CUDA_SUCCESS) {
    what = "cuEventSynchronize (the end event)";
    r = c->cu.cuEventSynchronize((CUevent)end);
  }
  if (r == CUDA_SUCCESS) {
    what = "cuEventElapsedTime";
    r = c->cu.cuEventElapsedTime(&ms, (CUevent)start, (CUevent)end);
  }
  if (r != CUDA_SUCCESS) return stream_fail(c, r, what, GPULEASE_INTERNAL, err, errlen);
  *ns = ms > 0.0f ? (uint64_t)((double)ms * 1e6 + 0.5) : 0;
  return GPULEASE_OK;
}

static void cuda_event_destroy(gl_backend *b, void *event) {
  cuda_backend *c = as_cuda(b);
  if (!event || is_lost(c)) return; /* the worker exits */
  if (make_current(c) == CUDA_SUCCESS) c->cu.cuEventDestroy((CUevent)event);
}

/* ---- graphs: a recipe captured, instantiated, replayed ---------------------------- */

/* What graph_build's handle points at. */
typedef struct cuda_graph {
  CUgraph graph;    /* what was instantiated (a loop's: the graph of the WHILE node) */
  CUgraphExec exec;
  size_t nkernels;  /* the recipe's GL_GRAPH_KERNEL ops */
  CUgraphNode *nodes; /* nkernels: kernel node i is the i-th kernel op (in a loop's body) */
  CUDA_KERNEL_NODE_PARAMS *params; /* nkernels: node i's function, dimensions, shared memory */
} cuda_graph;

/* Frees a graph's host memory, and its exec and graph when `device` (not
 * after the context is lost). A loop's body graph goes with its node. */
static void graph_free(cuda_backend *c, cuda_graph *g, bool device) {
  if (!g) return;
  if (device) {
    if (g->exec) c->cu.cuGraphExecDestroy(g->exec);
    if (g->graph) c->cu.cuGraphDestroy(g->graph);
  }
  free(g->nodes);
  free(g->params);
  free(g);
}

/* The failure r of a step of graph_build (`what` names it and the op): the
 * recipe's fault (INVALID_ARGUMENT), an op that cannot be captured
 * (UNSUPPORTED), else stream_fail's verdict with `status`. */
static gpulease_status graph_fail(cuda_backend *c, CUresult r, const char *what,
                                  gpulease_status status, char *err, size_t errlen) {
  if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) {
    cu_msg(c, r, what, err, errlen);
    return GPULEASE_INVALID_ARGUMENT;
  }
  if (r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) {
    cu_msg(c, r, what, err, errlen);
    return GPULEASE_UNSUPPORTED;
  }
  return stream_fail(c, r, what, status, err, errlen);
}

/* Puts "op I of the graph: " before the message in err. */
static void graph_op_prefix(size_t i, char *err, size_t errlen) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", err);
  snprintf(err, errlen, "op %zu of the graph: %s", i, msg);
}

/* The cubin of the WHILE condition kernel for compute capability
 * major.minor: the exact one, else the newest of the same major with a
 * lower minor (a cubin runs on the later minors of its major). NULL: none. */
static const gl_while_cond_cubin *cond_cubin(int major, int minor) {
  const gl_while_cond_cubin *best = NULL;
  for (size_t i = 0; i < gl_while_cond_cubin_count; i++) {
    const gl_while_cond_cubin *k = &gl_while_cond_cubins[i];
    if (k->major != major || k->minor > minor) continue;
    if (!best || k->minor > best->minor) best = k;
  }
  return best;
}

/* The WHILE condition kernel, loaded into the context the first time
 * (cond_mu: several sessions may build at once). UNSUPPORTED when no cubin
 * fits the device or the driver cannot load the one that does. */
static gpulease_status cond_kernel(cuda_backend *c, CUfunction *fn, char *err, size_t errlen) {
  gpulease_status st = GPULEASE_OK;
  pthread_mutex_lock(&c->cond_mu);
  if (!c->cond_fn) {
    const gl_while_cond_cubin *k = cond_cubin(c->cc_major, c->cc_minor);
    if (!k) {
      snprintf(err, errlen,
               "graph WHILE loops: the loop's condition kernel has no build for compute "
               "capability %d.%d (src/backend/while_cond_cubins.c, scripts/gen_while_cond.sh)",
               c->cc_major, c->cc_minor);
      st = GPULEASE_UNSUPPORTED;
    } else {
      CUmodule mod = NULL;
      CUfunction f = NULL;
      const char *call = "cuModuleLoadDataEx";
      CUresult r = c->cu.cuModuleLoadDataEx(&mod, k->bytes, 0, NULL, NULL);
      bool loaded = r == CUDA_SUCCESS;
      if (loaded) {
        call = "cuModuleGetFunction";
        r = c->cu.cuModuleGetFunction(&f, mod, GL_WHILE_COND_KERNEL);
      }
      if (r == CUDA_SUCCESS) {
        c->cond_mod = mod;
        c->cond_fn = f;
      } else {
        if (loaded) c->cu.cuModuleUnload(mod);
        char what[160];
        snprintf(what, sizeof what,
                 "graph WHILE loops: %s of the loop's condition kernel (sm_%d%d cubin)", call,
                 k->major, k->minor);
        st = stream_fail(c, r, what, GPULEASE_UNSUPPORTED, err, errlen);
      }
    }
  }
  *fn = c->cond_fn;
  pthread_mutex_unlock(&c->cond_mu);
  return st;
}

/* Queues op i of a recipe on the capturing stream s, with the driver calls
 * the *_async ops use. */
static gpulease_status graph_issue(cuda_backend *c, CUstream s, const gl_graph_op *op, size_t i,
                                   char *err, size_t errlen) {
  const gl_cuda *cu = &c->cu;
  char what[GL_WIRE_MAX_KERNEL_NAME + 320];
  int n = snprintf(what, sizeof what, "op %zu of the graph: ", i);
  if (n < 0 || (size_t)n >= sizeof what) n = 0;
  char *rest = what + n;
  size_t restlen = sizeof what - (size_t)n;
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  if (op->kind == GL_GRAPH_KERNEL) {
    const gl_launch *l = &op->launch;
    CUfunction f = (CUfunction)op->fn;
    if (has_attrs(l))
      r = launch_ex(c, f, l, s);
    else
      r = cu->cuLaunchKernel(f, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
                             l->block[2], l->shared_mem_bytes, s, l->args, NULL);
    if (r == CUDA_SUCCESS) return GPULEASE_OK;
    launch_what(l, rest, restlen);
    if (r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
      return graph_fail(c, r, what, GPULEASE_UNSUPPORTED, err, errlen);
    return launch_refused(c, r, f, l, what, err, errlen);
  }
  if (op->kind == GL_GRAPH_MEMSET) {
    CUdeviceptr dst = c->region + op->offset;
    size_t count = (size_t)op->count;
    if (op->element_size == 1)
      r = cu->cuMemsetD8Async(dst, (unsigned char)op->value, count, s);
    else if (op->element_size == 2)
      r = cu->cuMemsetD16Async(dst, (unsigned short)op->value, count, s);
    else if (op->element_size == 4)
      r = cu->cuMemsetD32Async(dst, op->value, count, s);
    if (r == CUDA_SUCCESS) return GPULEASE_OK;
    snprintf(rest, restlen, "cuMemsetD%uAsync(%" PRIu64 " elements at offset %" PRIu64 ")",
             op->element_size * 8, op->count, op->offset);
    return graph_fail(c, r, what, GPULEASE_INTERNAL, err, errlen);
  }
  /* GL_GRAPH_COPY (graph_build checked the kinds) */
  r = cu->cuMemcpyDtoDAsync(c->region + op->offset, c->region + op->src_offset,
                            (size_t)op->count, s);
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  snprintf(rest, restlen,
           "cuMemcpyDtoDAsync(%" PRIu64 " bytes from offset %" PRIu64 " to offset %" PRIu64 ")",
           op->count, op->src_offset, op->offset);
  return graph_fail(c, r, what, GPULEASE_INTERNAL, err, errlen);
}

/* Finds the kernel nodes of captured graph gr in the order they were added
 * (cuGraphGetNodes's order): the recipe's nk kernels, then, in a loop's
 * body (`loop`), the condition kernel. out[k] receives the k-th kernel op's
 * node. INTERNAL when the count or a node's dimensions differ from the
 * recipe's: the nodes cannot be numbered as the ops are. */
static gpulease_status graph_kernel_nodes(cuda_backend *c, CUgraph gr, const gl_graph_op *ops,
                                          size_t n, size_t nk, bool loop, CUgraphNode *out,
                                          char *err, size_t errlen) {
  const gl_cuda *cu = &c->cu;
  size_t count = 0;
  CUresult r = cu->cuGraphGetNodes(gr, NULL, &count);
  if (r != CUDA_SUCCESS) return graph_fail(c, r, "cuGraphGetNodes", GPULEASE_INTERNAL, err, errlen);
  CUgraphNode *all = calloc(count ? count : 1, sizeof *all);
  if (!all) {
    snprintf(err, errlen, "out of memory for the %zu nodes of a graph", count);
    return GPULEASE_INTERNAL;
  }
  r = cu->cuGraphGetNodes(gr, all, &count);
  if (r != CUDA_SUCCESS) {
    free(all);
    return graph_fail(c, r, "cuGraphGetNodes", GPULEASE_INTERNAL, err, errlen);
  }
  size_t k = 0;
  for (size_t j = 0; j < count; j++) {
    CUgraphNodeType t = CU_GRAPH_NODE_TYPE_EMPTY;
    r = cu->cuGraphNodeGetType(all[j], &t);
    if (r != CUDA_SUCCESS) {
      free(all);
      return graph_fail(c, r, "cuGraphNodeGetType", GPULEASE_INTERNAL, err, errlen);
    }
    if (t != CU_GRAPH_NODE_TYPE_KERNEL) continue;
    if (k < nk) out[k] = all[j];
    k++;
  }
  free(all);
  size_t want = nk + (loop ? 1 : 0);
  if (k != want) {
    snprintf(err, errlen,
             "the graph's capture holds %zu kernel nodes (of %zu nodes) where the recipe has %zu "
             "kernel ops%s: its kernel nodes cannot be numbered",
             k, count, nk, loop ? " and the WHILE loop its condition kernel" : "");
    return GPULEASE_INTERNAL;
  }
  /* The order, as far as dimensions tell. */
  k = 0;
  for (size_t i = 0; i < n; i++) {
    if (ops[i].kind != GL_GRAPH_KERNEL) continue;
    const gl_launch *l = &ops[i].launch;
    CUDA_KERNEL_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    r = cu->cuGraphKernelNodeGetParams(out[k], &p);
    if (r != CUDA_SUCCESS)
      return graph_fail(c, r, "cuGraphKernelNodeGetParams", GPULEASE_INTERNAL, err, errlen);
    if (p.gridDimX != l->grid[0] || p.gridDimY != l->grid[1] || p.gridDimZ != l->grid[2] ||
        p.blockDimX != l->block[0] || p.blockDimY != l->block[1] ||
        p.blockDimZ != l->block[2] || p.sharedMemBytes != l->shared_mem_bytes) {
      snprintf(err, errlen,
               "kernel node %zu of the graph's capture has grid %ux%ux%u, block %ux%ux%u, %u "
               "bytes of shared memory, but op %zu ('%s') grid %ux%ux%u, block %ux%ux%u, %u: "
               "the capture's order is not the recipe's",
               k, p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY, p.blockDimZ,
               p.sharedMemBytes, i, l->kernel_name, l->grid[0], l->grid[1], l->grid[2],
               l->block[0], l->block[1], l->block[2], l->shared_mem_bytes);
      return GPULEASE_INTERNAL;
    }
    k++;
  }
  return GPULEASE_OK;
}

/* A loop's graph: one WHILE conditional node, its condition set to 1 at
 * each launch; *body receives the node's body graph (the node owns it) and
 * *h the condition's handle. g->graph holds the graph from its creation. */
static gpulease_status graph_loop_node(cuda_backend *c, cuda_graph *g, CUgraph *body,
                                       CUgraphConditionalHandle *h, char *err, size_t errlen) {
  const gl_cuda *cu = &c->cu;
  CUresult r = cu->cuGraphCreate(&g->graph, 0);
  if (r != CUDA_SUCCESS) {
    g->graph = NULL;
    return graph_fail(c, r, "cuGraphCreate (a WHILE loop)", GPULEASE_INTERNAL, err, errlen);
  }
  r = cu->cuGraphConditionalHandleCreate(h, g->graph, c->ctx, 1, CU_GRAPH_COND_ASSIGN_DEFAULT);
  if (r != CUDA_SUCCESS)
    return graph_fail(c, r, "cuGraphConditionalHandleCreate (a WHILE loop)", GPULEASE_INTERNAL,
                      err, errlen);
  CUgraphNodeParams np;
  memset(&np, 0, sizeof np);
  np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  np.conditional.handle = *h;
  np.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
  np.conditional.size = 1;
  np.conditional.ctx = c->ctx;
  CUgraphNode node = NULL;
  r = cu->cuGraphAddNode(&node, g->graph, NULL, NULL, 0, &np);
  if (r != CUDA_SUCCESS)
    return graph_fail(c, r, "cuGraphAddNode (the WHILE loop's conditional node)",
                      GPULEASE_INTERNAL, err, errlen);
  if (!np.conditional.phGraph_out || !np.conditional.phGraph_out[0]) {
    snprintf(err, errlen, "cuGraphAddNode gave the WHILE loop's conditional node no body graph");
    return GPULEASE_INTERNAL;
  }
  *body = np.conditional.phGraph_out[0];
  return GPULEASE_OK;
}

static gpulease_status cuda_graph_build(gl_backend *b, const gl_graph_op *ops, size_t n,
                                        uint64_t while_flag, void **graph, char *err,
                                        size_t errlen) {
  cuda_backend *c = as_cuda(b);
  const gl_cuda *cu = &c->cu;
  bool loop = while_flag != GL_GRAPH_NO_LOOP;
  if (n == 0) {
    snprintf(err, errlen, "a graph of 0 ops");
    return GPULEASE_INVALID_ARGUMENT;
  }
  size_t nk = 0;
  for (size_t i = 0; i < n; i++) {
    const gl_graph_op *op = &ops[i];
    if (op->kind == GL_GRAPH_KERNEL) {
      nk++;
    } else if (op->kind == GL_GRAPH_MEMSET) {
      if (op->element_size != 1 && op->element_size != 2 && op->element_size != 4) {
        snprintf(err, errlen, "op %zu of the graph: memset element size %u: must be 1, 2 or 4", i,
                 op->element_size);
        return GPULEASE_INVALID_ARGUMENT;
      }
    } else if (op->kind != GL_GRAPH_COPY) {
      snprintf(err, errlen, "op %zu of the graph: unknown kind %d", i, (int)op->kind);
      return GPULEASE_INVALID_ARGUMENT;
    }
  }
  if (loop) {
    if (!cu->cuGraphAddNode || !cu->cuGraphConditionalHandleCreate ||
        !cu->cuStreamBeginCaptureToGraph || cu->driver_version < 12040) {
      snprintf(err, errlen,
               "graph WHILE loops need a CUDA 12.4+ driver (conditional nodes); this driver is "
               "CUDA %d.%d",
               cu->driver_version / 1000, cu->driver_version % 1000 / 10);
      return GPULEASE_UNSUPPORTED;
    }
    if (while_flag % 4 != 0) {
      snprintf(err, errlen, "the WHILE loop's flag at offset %" PRIu64 " is not 4-byte aligned",
               while_flag);
      return GPULEASE_INVALID_ARGUMENT;
    }
  }
  CUresult r = make_current(c);
  if (r != CUDA_SUCCESS) {
    cu_msg(c, r, "graph_build: cuCtxSetCurrent", err, errlen);
    return GPULEASE_INTERNAL;
  }
  CUfunction cond_fn = NULL;
  if (loop) {
    gpulease_status st = cond_kernel(c, &cond_fn, err, errlen);
    if (st != GPULEASE_OK) return st;
  }
  cuda_graph *g = calloc(1, sizeof *g);
  if (g) {
    g->nodes = calloc(nk ? nk : 1, sizeof *g->nodes);
    g->params = calloc(nk ? nk : 1, sizeof *g->params);
  }
  if (!g || !g->nodes || !g->params) {
    graph_free(c, g, false);
    snprintf(err, errlen, "out of memory for a graph of %zu ops", n);
    return GPULEASE_INTERNAL;
  }
  g->nkernels = nk;
  for (size_t i = 0, k = 0; i < n; i++)
    if (ops[i].kind == GL_GRAPH_KERNEL) {
      g->params[k] = node_params(ops[i].fn, &ops[i].launch);
      g->params[k++].kernelParams = NULL; /* set_args's own */
    }

  gpulease_status st = GPULEASE_OK;
  CUstream s = NULL;
  CUgraph body = NULL; /* a loop's: what the capture fills */
  CUgraph captured = NULL;
  CUgraphConditionalHandle h = 0;
  bool capturing = false;
  r = cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    s = NULL;
    st = graph_fail(c, r, "cuStreamCreate (the graph's capture stream)", GPULEASE_INTERNAL, err,
                    errlen);
    goto fail;
  }
  /* The launch attributes' checks (queries, not stream work) before the
   * capture begins. */
  for (size_t i = 0; i < n; i++)
    if (ops[i].kind == GL_GRAPH_KERNEL && has_attrs(&ops[i].launch)) {
      st = attrs_check(c, (CUfunction)ops[i].fn, &ops[i].launch, s, err, errlen);
      if (st != GPULEASE_OK) {
        graph_op_prefix(i, err, errlen);
        goto fail;
      }
    }
  if (loop) {
    st = graph_loop_node(c, g, &body, &h, err, errlen);
    if (st != GPULEASE_OK) goto fail;
    r = cu->cuStreamBeginCaptureToGraph(s, body, NULL, NULL, 0,
                                        CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  } else {
    r = cu->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  }
  if (r != CUDA_SUCCESS) {
    st = graph_fail(c, r, loop ? "cuStreamBeginCaptureToGraph (the WHILE loop's body)"
                               : "cuStreamBeginCapture",
                    GPULEASE_INTERNAL, err, errlen);
    goto fail;
  }
  capturing = true;
  for (size_t i = 0; i < n; i++) {
    st = graph_issue(c, s, &ops[i], i, err, errlen);
    if (st != GPULEASE_OK) goto fail;
  }
  if (loop) {
    /* the body's last node: the condition from the flag */
    CUdeviceptr flag = c->region + while_flag;
    void *args[2] = {&h, &flag};
    r = cu->cuLaunchKernel(cond_fn, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
    if (r != CUDA_SUCCESS) {
      st = graph_fail(c, r, "cuLaunchKernel (the WHILE loop's condition kernel)",
                      GPULEASE_INTERNAL, err, errlen);
      goto fail;
    }
  }
  capturing = false;
  r = cu->cuStreamEndCapture(s, &captured);
  if (r != CUDA_SUCCESS) {
    if (captured && !loop) cu->cuGraphDestroy(captured);
    st = graph_fail(c, r, "cuStreamEndCapture", GPULEASE_INTERNAL, err, errlen);
    goto fail;
  }
  if (!loop) g->graph = captured; /* a loop's body is the node's, filled in place */
  st = graph_kernel_nodes(c, loop ? body : g->graph, ops, n, nk, loop, g->nodes, err, errlen);
  if (st != GPULEASE_OK) goto fail;
  r = cu->cuGraphInstantiateWithFlags(&g->exec, g->graph, 0);
  if (r != CUDA_SUCCESS) {
    g->exec = NULL;
    char what[128];
    snprintf(what, sizeof what, "cuGraphInstantiateWithFlags (a graph of %zu ops%s)", n,
             loop ? " in a WHILE loop" : "");
    st = graph_fail(c, r, what, GPULEASE_LAUNCH_FAILED, err, errlen);
    goto fail;
  }
  cu->cuStreamDestroy(s);
  *graph = g;
  return GPULEASE_OK;

fail:
  /* After a fault the worker exits: only host memory to give back. */
  if (!is_lost(c)) {
    if (capturing) {
      CUgraph partial = NULL;
      cu->cuStreamEndCapture(s, &partial); /* an invalidated capture gives none */
      if (partial && !loop) cu->cuGraphDestroy(partial);
    }
    if (s) cu->cuStreamDestroy(s);
  }
  graph_free(c, g, !is_lost(c));
  return st;
}

static gpulease_status cuda_graph_launch(gl_backend *b, void *stream, void *graph, char *err,
                                         size_t errlen) {
  cuda_backend *c = as_cuda(b);
  cuda_graph *g = graph;
  CUresult r = make_current(c);
  if (r == CUDA_SUCCESS) r = c->cu.cuGraphLaunch(g->exec, cstream(stream));
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  char what[128];
  snprintf(what, sizeof what, "cuGraphLaunch (a graph of %zu kernel nodes)", g->nkernels);
  if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) {
    cu_msg(c, r, what, err, errlen);
    return GPULEASE_INVALID_ARGUMENT;
  }
  return stream_fail(c, r, what, GPULEASE_LAUNCH_FAILED, err, errlen);
}

static gpulease_status cuda_graph_set_args(gl_backend *b, void *graph, uint32_t node,
                                           const gl_launch *l, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  cuda_graph *g = graph;
  if (node >= g->nkernels) {
    snprintf(err, errlen, "kernel node %u: the graph has %zu kernel node%s", node, g->nkernels,
             g->nkernels == 1 ? "" : "s");
    return GPULEASE_INVALID_ARGUMENT;
  }
  CUresult r = make_current(c);
  if (r != CUDA_SUCCESS) {
    cu_msg(c, r, "cuGraphExecKernelNodeSetParams: cuCtxSetCurrent", err, errlen);
    return GPULEASE_INTERNAL;
  }
  CUDA_KERNEL_NODE_PARAMS p = g->params[node];
  p.kernelParams = l->args;
  r = c->cu.cuGraphExecKernelNodeSetParams(g->exec, g->nodes[node], &p);
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  char what[GL_WIRE_MAX_KERNEL_NAME + 320];
  int n = snprintf(what, sizeof what, "kernel node %u of the graph: ", node);
  if (n < 0 || (size_t)n >= sizeof what) n = 0;
  launch_desc(l, "cuGraphExecKernelNodeSetParams", what + n, sizeof what - (size_t)n);
  return launch_refused(c, r, p.func, l, what, err, errlen);
}

static void cuda_graph_destroy(gl_backend *b, void *graph) {
  cuda_backend *c = as_cuda(b);
  if (!graph) return;
  /* After a fault the worker exits: nothing to give back but host memory. */
  graph_free(c, graph, !is_lost(c) && make_current(c) == CUDA_SUCCESS);
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
  pthread_mutex_destroy(&c->cond_mu);
  free(c->ranges);
  free(c);
}

static const gl_backend_ops k_cuda_ops = {
    .name = "cuda",
    .tensormap_encode = cuda_tensormap_encode,
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
    .burst_async = cuda_burst_async,
    .event_record = cuda_event_record,
    .event_elapsed = cuda_event_elapsed,
    .event_destroy = cuda_event_destroy,
    .graph_build = cuda_graph_build,
    .graph_launch = cuda_graph_launch,
    .graph_set_args = cuda_graph_set_args,
    .graph_destroy = cuda_graph_destroy,
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
  if (pthread_mutex_init(&c->cond_mu, NULL) != 0) {
    pthread_mutex_destroy(&c->ranges_mu);
    pthread_mutex_destroy(&c->launch_mu);
    free(c);
    return NULL;
  }
  atomic_init(&c->lost, false);
  atomic_init(&c->unload_gen, 0);
  c->base.ops = &k_cuda_ops;
  return &c->base;
}
