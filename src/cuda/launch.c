/*
 * launch.c - kernel launches, streams and events. cuLaunchKernel's
 * kernelParams carry no sizes: each parameter is copied with the size the
 * node gave at cuModuleGetFunction (FUNC_INFO), as a scalar; device
 * pointers are the GPU's own addresses, so they pass as they are. Every
 * stream is ordered on the session's one stream, launches and event
 * records are pipelined (batched), and a synchronisation waits for the
 * session (SYNC), where a kernel's fault surfaces, as CUDA's sticky error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/entry.h"

/* kernelParams into args (under the lock). */
static CUresult marshal(const char *call, CUfunction f, void **params, void **extra,
                        gpulease_arg *args, size_t *nargs) {
  if (extra)
    return gl_cu_unsupported(call, "the `extra` parameter buffer: pass kernelParams");
  int n = f->info.param_count;
  if (n < 0)
    return gl_cu_unsupported(call, "the node's driver does not give this kernel's parameter "
                                   "sizes (cuFuncGetParamInfo, CUDA 12.4 and up)");
  if (n > 0 && !params) return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < n; i++) {
    uint32_t size = f->info.param_sizes[i];
    if (size > GPULEASE_MAX_SCALAR_BYTES) {
      char why[128];
      snprintf(why, sizeof why, "a by-value parameter of %u bytes (at most %d)", size,
               GPULEASE_MAX_SCALAR_BYTES);
      return gl_cu_unsupported(call, why);
    }
    if (!params[i]) return CUDA_ERROR_INVALID_VALUE;
    args[i] = gpulease_arg_scalar(params[i], size);
  }
  *nargs = (size_t)n;
  return CUDA_SUCCESS;
}

/* The launch held back until the next call (under gl_cu.mu): a launch
 * then a synchronisation travel as one BATCH (gpulease_launch_sync). */
static struct {
  bool held;
  const char *call;
  gpulease_function function;
  uint32_t grid[3], block[3];
  unsigned smem;
  bool has_attrs;
  gpulease_launch_attrs attrs;
  size_t nargs;
  gpulease_arg args[GPULEASE_MAX_PARAMS];
} pending;

void gl_cu_drop_launch(void) { pending.held = false; }

CUresult gl_cu_flush_launch(void) {
  if (!pending.held) return CUDA_SUCCESS;
  pending.held = false;
  gpulease_error err;
  gpulease_status st =
      pending.has_attrs
          ? gpulease_launch_ex(gl_cu.session, pending.function, pending.grid, pending.block,
                               pending.smem, &pending.attrs, pending.args, pending.nargs, &err)
          : gpulease_launch(gl_cu.session, pending.function, pending.grid, pending.block,
                            pending.smem, pending.args, pending.nargs, &err);
  return st == GPULEASE_OK ? CUDA_SUCCESS : gl_cu_fail(pending.call, &err);
}

bool gl_cu_sync_launch(gpulease_status *st, gpulease_op_failure *f, gpulease_error *err) {
  if (!pending.held) return false;
  pending.held = false;
  if (pending.has_attrs) { /* no LAUNCH_EX+SYNC call: two requests */
    *st = gpulease_launch_ex(gl_cu.session, pending.function, pending.grid, pending.block,
                             pending.smem, &pending.attrs, pending.args, pending.nargs, err);
    if (*st == GPULEASE_OK) *st = gpulease_session_sync(gl_cu.session, f, err);
    return true;
  }
  *st = gpulease_launch_sync(gl_cu.session, pending.function, pending.grid, pending.block,
                             pending.smem, pending.args, pending.nargs, f, err);
  return true;
}

static CUresult launch(const char *call, CUfunction f, const uint32_t grid[3],
                       const uint32_t block[3], unsigned smem, CUstream s, void **params,
                       void **extra, const gpulease_launch_attrs *attrs) {
  if (!f || f->magic != GL_CU_FUNC_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  if (!gl_cu_stream_ok(s)) return CUDA_ERROR_INVALID_HANDLE;
  for (int i = 0; i < 3; i++)
    if (grid[i] == 0 || block[i] == 0) return CUDA_ERROR_INVALID_VALUE;
  /* The previous launch was sent by GL_CU_ENTER_CTX: this one is held. */
  size_t nargs = 0;
  CUresult r = marshal(call, f, params, extra, pending.args, &nargs);
  if (r != CUDA_SUCCESS) return r;
  pending.call = call;
  pending.function = f->function;
  memcpy(pending.grid, grid, sizeof pending.grid);
  memcpy(pending.block, block, sizeof pending.block);
  pending.smem = smem;
  pending.has_attrs = attrs && (attrs->flags || attrs->cluster[0] || attrs->cluster[1] ||
                                attrs->cluster[2]);
  if (pending.has_attrs) pending.attrs = *attrs;
  pending.nargs = nargs;
  pending.held = true;
  return CUDA_SUCCESS;
}

#define GL_CU_LAUNCH_KERNEL(NAME)                                                             \
  GL_CU_API CUresult NAME(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,    \
                          unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem, \
                          CUstream hStream, void **kernelParams, void **extra);               \
  CUresult NAME(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,              \
                unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem,         \
                CUstream hStream, void **kernelParams, void **extra) {                        \
    const uint32_t grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};                           \
    GL_CU_ENTER_CTX();                                                                        \
    return gl_cu_leave(                                                                       \
        launch("cuLaunchKernel", f, grid, block, smem, hStream, kernelParams, extra, NULL));  \
  }
GL_CU_LAUNCH_KERNEL(cuLaunchKernel)
GL_CU_LAUNCH_KERNEL(cuLaunchKernel_ptsz)

#define GL_CU_LAUNCH_COOP(NAME)                                                               \
  GL_CU_API CUresult NAME(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,    \
                          unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem, \
                          CUstream hStream, void **kernelParams);                             \
  CUresult NAME(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,              \
                unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem,         \
                CUstream hStream, void **kernelParams) {                                      \
    const uint32_t grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};                           \
    gpulease_launch_attrs attrs;                                                              \
    gpulease_launch_attrs_default(&attrs);                                                    \
    attrs.flags = GPULEASE_LAUNCH_COOPERATIVE;                                                \
    GL_CU_ENTER_CTX();                                                                        \
    return gl_cu_leave(launch("cuLaunchCooperativeKernel", f, grid, block, smem, hStream,     \
                              kernelParams, NULL, &attrs));                                   \
  }
GL_CU_LAUNCH_COOP(cuLaunchCooperativeKernel)
GL_CU_LAUNCH_COOP(cuLaunchCooperativeKernel_ptsz)

static CUresult launch_ex(const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra) {
  if (!cfg) return CUDA_ERROR_INVALID_VALUE;
  const uint32_t grid[3] = {cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ};
  const uint32_t block[3] = {cfg->blockDimX, cfg->blockDimY, cfg->blockDimZ};
  gpulease_launch_attrs attrs;
  gpulease_launch_attrs_default(&attrs);
  for (unsigned i = 0; i < cfg->numAttrs; i++) {
    const CUlaunchAttribute *a = &cfg->attrs[i];
    switch ((int)a->id) {
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
      if (a->value.cooperative) attrs.flags |= GPULEASE_LAUNCH_COOPERATIVE;
      break;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
      attrs.cluster[0] = a->value.clusterDim.x;
      attrs.cluster[1] = a->value.clusterDim.y;
      attrs.cluster[2] = a->value.clusterDim.z;
      break;
    default: {
      char why[96];
      snprintf(why, sizeof why, "launch attribute %d", (int)a->id);
      return gl_cu_unsupported("cuLaunchKernelEx", why);
    }
    }
  }
  GL_CU_ENTER_CTX();
  return gl_cu_leave(launch("cuLaunchKernelEx", f, grid, block, cfg->sharedMemBytes,
                            cfg->hStream, params, extra, &attrs));
}

GL_CU_API CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                    void **kernelParams, void **extra);
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                          void **extra) {
  return launch_ex(config, f, kernelParams, extra);
}
GL_CU_API CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                         void **kernelParams, void **extra);
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                               void **extra) {
  return launch_ex(config, f, kernelParams, extra);
}

/* Streams. */
static CUresult stream_new(CUstream *out, unsigned flags, int priority) {
  if (!out || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER_CTX();
  struct CUstream_st *s = calloc(1, sizeof *s);
  if (!s) return gl_cu_leave(CUDA_ERROR_OUT_OF_MEMORY);
  *s = (struct CUstream_st){.magic = GL_CU_STREAM_MAGIC, .flags = flags, .priority = priority};
  *out = s;
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuStreamCreate(CUstream *phStream, unsigned int flags);
CUresult cuStreamCreate(CUstream *phStream, unsigned int flags) {
  return stream_new(phStream, flags, 0);
}

GL_CU_API CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
                                              int priority);
CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority) {
  /* One priority (cuCtxGetStreamPriorityRange: 0..0): CUDA clamps. */
  (void)priority;
  return stream_new(phStream, flags, 0);
}

GL_CU_API CUresult cuStreamDestroy_v2(CUstream hStream);
CUresult cuStreamDestroy_v2(CUstream hStream) {
  if ((uintptr_t)hStream <= 2 || hStream->magic != GL_CU_STREAM_MAGIC)
    return CUDA_ERROR_INVALID_HANDLE;
  hStream->magic = 0;
  free(hStream); /* its work goes on: the session's order */
  return CUDA_SUCCESS;
}

static CUresult stream_sync(CUstream s, const char *call) {
  if (!gl_cu_stream_ok(s)) return CUDA_ERROR_INVALID_HANDLE;
  GL_CU_ENTER_SYNC();
  return gl_cu_leave(gl_cu_sync(call));
}

GL_CU_API CUresult cuStreamSynchronize(CUstream hStream);
CUresult cuStreamSynchronize(CUstream hStream) {
  return stream_sync(hStream, "cuStreamSynchronize");
}
GL_CU_API CUresult cuStreamSynchronize_ptsz(CUstream hStream);
CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
  return stream_sync(hStream, "cuStreamSynchronize");
}

/* A query waits for the work and says it is done: what it answers is
 * right, and it never answers CUDA_ERROR_NOT_READY. */
GL_CU_API CUresult cuStreamQuery(CUstream hStream);
CUresult cuStreamQuery(CUstream hStream) { return stream_sync(hStream, "cuStreamQuery"); }
GL_CU_API CUresult cuStreamQuery_ptsz(CUstream hStream);
CUresult cuStreamQuery_ptsz(CUstream hStream) { return stream_sync(hStream, "cuStreamQuery"); }

static CUresult stream_wait(CUstream s, CUevent e, unsigned flags) {
  if (!gl_cu_stream_ok(s) || !e || e->magic != GL_CU_EVENT_MAGIC)
    return CUDA_ERROR_INVALID_HANDLE;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS; /* every stream already follows the event's point */
}
GL_CU_API CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int flags);
CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int flags) {
  return stream_wait(hStream, hEvent, flags);
}
GL_CU_API CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int flags);
CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int flags) {
  return stream_wait(hStream, hEvent, flags);
}

GL_CU_API CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags);
CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags) {
  if (!flags || !gl_cu_stream_ok(hStream)) return CUDA_ERROR_INVALID_VALUE;
  *flags = (uintptr_t)hStream <= 2 ? 0 : hStream->flags;
  return CUDA_SUCCESS;
}

GL_CU_API CUresult cuStreamGetPriority(CUstream hStream, int *priority);
CUresult cuStreamGetPriority(CUstream hStream, int *priority) {
  if (!priority || !gl_cu_stream_ok(hStream)) return CUDA_ERROR_INVALID_VALUE;
  *priority = 0;
  return CUDA_SUCCESS;
}

GL_CU_API CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx);
CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx) {
  if (!pctx || !gl_cu_stream_ok(hStream)) return CUDA_ERROR_INVALID_VALUE;
  *pctx = &gl_cu.ctx;
  return CUDA_SUCCESS;
}

/* A stream's id: unique while the process runs (the default streams 0,
 * legacy 1, per-thread 2; the shim's streams their address). */
static CUresult stream_id(CUstream s, unsigned long long *id) {
  if (!id || !gl_cu_stream_ok(s)) return CUDA_ERROR_INVALID_HANDLE;
  *id = (unsigned long long)(uintptr_t)s;
  return CUDA_SUCCESS;
}
GL_CU_API CUresult cuStreamGetId(CUstream hStream, unsigned long long *streamId);
CUresult cuStreamGetId(CUstream hStream, unsigned long long *streamId) {
  return stream_id(hStream, streamId);
}
GL_CU_API CUresult cuStreamGetId_ptsz(CUstream hStream, unsigned long long *streamId);
CUresult cuStreamGetId_ptsz(CUstream hStream, unsigned long long *streamId) {
  return stream_id(hStream, streamId);
}

static CUresult stream_device(CUstream s, CUdevice *dev) {
  if (!dev) return CUDA_ERROR_INVALID_VALUE;
  if (!gl_cu_stream_ok(s)) return CUDA_ERROR_INVALID_HANDLE;
  *dev = 0;
  return CUDA_SUCCESS;
}
GL_CU_API CUresult cuStreamGetDevice(CUstream hStream, CUdevice *device);
CUresult cuStreamGetDevice(CUstream hStream, CUdevice *device) {
  return stream_device(hStream, device);
}
GL_CU_API CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice *device);
CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice *device) {
  return stream_device(hStream, device);
}

/* Events: each holds one of the session's event slots. */
GL_CU_API CUresult cuEventCreate(CUevent *phEvent, unsigned int flags);
CUresult cuEventCreate(CUevent *phEvent, unsigned int flags) {
  if (!phEvent) return CUDA_ERROR_INVALID_VALUE;
  if (flags & CU_EVENT_INTERPROCESS)
    return gl_cu_unsupported("cuEventCreate", "CU_EVENT_INTERPROCESS: no IPC handles");
  GL_CU_ENTER_CTX();
  for (unsigned i = 0; i < GPULEASE_MAX_EVENTS; i++)
    if (!(gl_cu.event_slots[i / 64] & (1ull << (i % 64)))) {
      struct CUevent_st *e = calloc(1, sizeof *e);
      if (!e) return gl_cu_leave(CUDA_ERROR_OUT_OF_MEMORY);
      *e = (struct CUevent_st){.magic = GL_CU_EVENT_MAGIC, .flags = flags, .slot = i};
      gl_cu.event_slots[i / 64] |= 1ull << (i % 64);
      *phEvent = e;
      return gl_cu_leave(CUDA_SUCCESS);
    }
  fprintf(stderr, "gpulease: cuEventCreate: the context has its %d events already\n",
          GPULEASE_MAX_EVENTS);
  return gl_cu_leave(CUDA_ERROR_OUT_OF_MEMORY);
}

static bool event_ok(CUevent e) { return e && e->magic == GL_CU_EVENT_MAGIC; }

static CUresult event_record(CUevent e, CUstream s) {
  if (!event_ok(e) || !gl_cu_stream_ok(s)) return CUDA_ERROR_INVALID_HANDLE;
  GL_CU_ENTER_CTX();
  gpulease_error err;
  if (gpulease_event_record(gl_cu.session, e->slot, &err) != GPULEASE_OK)
    return gl_cu_leave(gl_cu_fail("cuEventRecord", &err));
  e->recorded = true;
  return gl_cu_leave(CUDA_SUCCESS);
}
GL_CU_API CUresult cuEventRecord(CUevent hEvent, CUstream hStream);
CUresult cuEventRecord(CUevent hEvent, CUstream hStream) { return event_record(hEvent, hStream); }
GL_CU_API CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream);
CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  return event_record(hEvent, hStream);
}
GL_CU_API CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags);
CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
  if (flags != 0) return gl_cu_unsupported("cuEventRecordWithFlags", "flags other than 0");
  return event_record(hEvent, hStream);
}
GL_CU_API CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream,
                                               unsigned int flags);
CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags) {
  return cuEventRecordWithFlags(hEvent, hStream, flags);
}

static CUresult event_wait(CUevent e, const char *call) {
  if (!event_ok(e)) return CUDA_ERROR_INVALID_HANDLE;
  GL_CU_ENTER_CTX();
  if (!e->recorded) return gl_cu_leave(CUDA_SUCCESS); /* nothing to wait for */
  return gl_cu_leave(gl_cu_sync(call));
}
GL_CU_API CUresult cuEventSynchronize(CUevent hEvent);
CUresult cuEventSynchronize(CUevent hEvent) { return event_wait(hEvent, "cuEventSynchronize"); }
GL_CU_API CUresult cuEventQuery(CUevent hEvent);
CUresult cuEventQuery(CUevent hEvent) { return event_wait(hEvent, "cuEventQuery"); }

static CUresult elapsed(float *ms, CUevent a, CUevent b) {
  if (!ms) return CUDA_ERROR_INVALID_VALUE;
  if (!event_ok(a) || !event_ok(b)) return CUDA_ERROR_INVALID_HANDLE;
  if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  GL_CU_ENTER_CTX();
  if (!a->recorded || !b->recorded) return gl_cu_leave(CUDA_ERROR_INVALID_HANDLE);
  uint64_t ns = 0;
  gpulease_error err;
  if (gpulease_event_elapsed(gl_cu.session, a->slot, b->slot, &ns, &err) != GPULEASE_OK)
    return gl_cu_leave(gl_cu_fail("cuEventElapsedTime", &err));
  *ms = (float)((double)ns / 1e6);
  return gl_cu_leave(CUDA_SUCCESS);
}
GL_CU_API CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
  return elapsed(pMilliseconds, hStart, hEnd);
}
GL_CU_API CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd) {
  return elapsed(pMilliseconds, hStart, hEnd);
}

GL_CU_API CUresult cuEventDestroy_v2(CUevent hEvent);
CUresult cuEventDestroy_v2(CUevent hEvent) {
  if (!event_ok(hEvent)) return CUDA_ERROR_INVALID_HANDLE;
  gl_cu_lock();
  gl_cu.event_slots[hEvent->slot / 64] &= ~(1ull << (hEvent->slot % 64));
  hEvent->magic = 0;
  free(hEvent);
  return gl_cu_leave(CUDA_SUCCESS);
}

/* Host functions run on the client when the stream reaches them: the
 * call waits for the session's earlier work, then calls fn on this thread,
 * outside the shim's lock (fn may not call CUDA, as with the driver; what
 * follows in the stream waits for it, since nothing is issued meanwhile). */
static CUresult host_fn(const char *call, CUstream s, CUhostFn fn, CUstreamCallback cb,
                        void *user, unsigned flags) {
  if ((!fn && !cb) || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!gl_cu_stream_ok(s)) return CUDA_ERROR_INVALID_HANDLE;
  GL_CU_ENTER_SYNC();
  CUresult r = gl_cu_sync(call);
  gl_cu_unlock();
  if (fn) {
    if (r == CUDA_SUCCESS) fn(user); /* a failed stream skips host functions */
  } else {
    cb(s, r, user); /* a callback is told the stream's error */
  }
  return r == CUDA_SUCCESS || cb ? CUDA_SUCCESS : r;
}

GL_CU_API CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData);
CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData) {
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  return host_fn("cuLaunchHostFunc", hStream, fn, NULL, userData, 0);
}
GL_CU_API CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData);
CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData) {
  return cuLaunchHostFunc(hStream, fn, userData);
}
GL_CU_API CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback,
                                       void *userData, unsigned int flags);
CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
                             unsigned int flags) {
  if (!callback) return CUDA_ERROR_INVALID_VALUE;
  return host_fn("cuStreamAddCallback", hStream, NULL, callback, userData, flags);
}
GL_CU_API CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback,
                                            void *userData, unsigned int flags);
CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback, void *userData,
                                  unsigned int flags) {
  return cuStreamAddCallback(hStream, callback, userData, flags);
}
