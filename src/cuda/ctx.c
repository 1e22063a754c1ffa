/*
 * ctx.c - the lease's context: the device's primary context is a session
 * on the lease (opened at the first retain, or at the first call that
 * needs it; closed, with every allocation and module of it, when the last
 * retain is released or at exit). cuCtxCreate gives the same context: a
 * lease has one. The current context is per thread, as in CUDA.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda/entry.h"

static _Thread_local CUcontext current;
static _Thread_local CUcontext pushed[16]; /* cuCtxPushCurrent's stack */
static _Thread_local unsigned npushed;

static bool ctx_ok(CUcontext c) { return c == &gl_cu.ctx; }

/* Ends the session: CUDA frees a primary context's memory and modules
 * when its last retain goes. */
static void close_session(void) {
  gpulease_error err;
  if (gl_cu.session) gl_cu_flush_launch();
  gl_cu_drop_launch();
  if (gl_cu.session) gpulease_session_close(gl_cu.session, &err);
  gl_cu.session = NULL;
  gl_cu.nallocs = 0;
  gl_cu.charged = 0;
  for (size_t i = 0; i < gl_cu.nmods; i++) {
    struct CUmod_st *m = gl_cu.mods[i];
    for (struct CUfunc_st *f = m->funcs, *next; f; f = next) {
      next = f->next;
      f->magic = 0;
      free(f);
    }
    m->magic = 0;
    free(m);
  }
  gl_cu.nmods = 0;
  memset(gl_cu.event_slots, 0, sizeof gl_cu.event_slots);
  gl_cu.sticky = CUDA_SUCCESS; /* a new context starts clean */
  gl_cu_cls_detach();          /* the runtime's values of it: their destructors run unlocked */
}

GL_CU_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER_CTX();
  if (dev != 0) return gl_cu_leave(CUDA_ERROR_INVALID_DEVICE);
  gl_cu.primary_refs++;
  *pctx = &gl_cu.ctx;
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev);
GL_CU_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  gl_cu_lock();
  if (!gl_cu.init_done) return gl_cu_leave(CUDA_ERROR_NOT_INITIALIZED);
  if (dev != 0) return gl_cu_leave(CUDA_ERROR_INVALID_DEVICE);
  if (gl_cu.primary_refs == 0) return gl_cu_leave(CUDA_ERROR_INVALID_CONTEXT);
  if (--gl_cu.primary_refs == 0) close_session();
  gl_cu_unlock();
  gl_cu_cls_run_dtors();
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }

GL_CU_API CUresult cuDevicePrimaryCtxReset(CUdevice dev);
GL_CU_API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev);
CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  gl_cu_lock();
  if (!gl_cu.init_done) return gl_cu_leave(CUDA_ERROR_NOT_INITIALIZED);
  if (dev != 0) return gl_cu_leave(CUDA_ERROR_INVALID_DEVICE);
  close_session();
  gl_cu.primary_refs = 0;
  gl_cu_unlock();
  gl_cu_cls_run_dtors();
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }

GL_CU_API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active);
CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  if (dev != 0) return gl_cu_leave(CUDA_ERROR_INVALID_DEVICE);
  *flags = 0;
  *active = gl_cu.session != NULL;
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags);
GL_CU_API CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags);
CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  GL_CU_ENTER();
  if (dev != 0) return gl_cu_leave(CUDA_ERROR_INVALID_DEVICE);
  gl_cu_unlock();
  /* Scheduling flags (spin, yield, blocking sync) are the node's business. */
  if (flags & ~(unsigned)CU_CTX_SCHED_MASK)
    return gl_cu_unsupported("cuDevicePrimaryCtxSetFlags",
                             "only the scheduling flags; no mapped host memory");
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

GL_CU_API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (flags & ~(unsigned)CU_CTX_SCHED_MASK)
    return gl_cu_unsupported("cuCtxCreate", "only the scheduling flags; no mapped host memory");
  CUresult r = cuDevicePrimaryCtxRetain(pctx, dev);
  if (r == CUDA_SUCCESS) current = *pctx;
  return r;
}

GL_CU_API CUresult cuCtxDestroy_v2(CUcontext ctx);
CUresult cuCtxDestroy_v2(CUcontext ctx) {
  if (!ctx_ok(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (current == ctx) current = NULL;
  return cuDevicePrimaryCtxRelease_v2(0);
}

GL_CU_API CUresult cuCtxGetCurrent(CUcontext *pctx);
CUresult cuCtxGetCurrent(CUcontext *pctx) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  *pctx = gl_cu.session ? current : NULL;
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxSetCurrent(CUcontext ctx) {
  if (ctx == NULL) {
    current = NULL;
    return CUDA_SUCCESS;
  }
  if (!ctx_ok(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  GL_CU_ENTER_CTX();
  current = ctx;
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuCtxPushCurrent_v2(CUcontext ctx);
CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  if (!ctx_ok(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (npushed == sizeof pushed / sizeof pushed[0]) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = cuCtxSetCurrent(ctx);
  if (r == CUDA_SUCCESS) pushed[npushed++] = ctx;
  return r;
}

GL_CU_API CUresult cuCtxPopCurrent_v2(CUcontext *pctx);
CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
  if (npushed == 0) return CUDA_ERROR_INVALID_CONTEXT;
  CUcontext c = pushed[--npushed];
  if (pctx) *pctx = c;
  current = npushed ? pushed[npushed - 1] : NULL;
  return CUDA_SUCCESS;
}

GL_CU_API CUresult cuCtxGetDevice(CUdevice *device);
CUresult cuCtxGetDevice(CUdevice *device) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  if (!gl_cu.session) return gl_cu_leave(CUDA_ERROR_INVALID_CONTEXT);
  *device = 0;
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version);
CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  if (ctx && !ctx_ok(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *version = 3020; /* the API of the _v2 entry points, as the driver reports */
  return CUDA_SUCCESS;
}

GL_CU_API CUresult cuCtxGetFlags(unsigned int *flags);
CUresult cuCtxGetFlags(unsigned int *flags) {
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  *flags = 0;
  return CUDA_SUCCESS;
}

GL_CU_API CUresult cuCtxSynchronize(void);
CUresult cuCtxSynchronize(void) {
  GL_CU_ENTER_SYNC();
  return gl_cu_leave(gl_cu_sync("cuCtxSynchronize"));
}

GL_CU_API CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest);
CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
  /* One priority: every stream runs in the session's order. */
  if (least) *least = 0;
  if (greatest) *greatest = 0;
  return CUDA_SUCCESS;
}

GL_CU_API CUresult cuCtxGetCacheConfig(CUfunc_cache *config);
CUresult cuCtxGetCacheConfig(CUfunc_cache *config) {
  if (!config) return CUDA_ERROR_INVALID_VALUE;
  *config = CU_FUNC_CACHE_PREFER_NONE;
  return CUDA_SUCCESS;
}

/* A preference the driver may ignore: taken and not applied. */
GL_CU_API CUresult cuCtxSetCacheConfig(CUfunc_cache config);
CUresult cuCtxSetCacheConfig(CUfunc_cache config) {
  (void)config;
  return CUDA_SUCCESS;
}

GL_CU_API CUresult cuCtxGetLimit(size_t *value, CUlimit limit);
CUresult cuCtxGetLimit(size_t *value, CUlimit limit) {
  (void)value;
  (void)limit;
  return gl_cu_unsupported("cuCtxGetLimit", "the node sets the context's limits");
}

GL_CU_API CUresult cuCtxSetLimit(CUlimit limit, size_t value);
CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  (void)limit;
  (void)value;
  return gl_cu_unsupported("cuCtxSetLimit",
                           "set the printf FIFO and malloc heap with the lease: gpulease exec "
                           "--printf-fifo, --malloc-heap");
}

/* CUDA 13's forms that name the context (NULL: the current one). */
GL_CU_API CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx);
CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) {
  if (ctx && !ctx_ok(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  return cuCtxGetDevice(device);
}

GL_CU_API CUresult cuCtxSynchronize_v2(CUcontext ctx);
CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  if (ctx && !ctx_ok(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  return cuCtxSynchronize();
}

/* The context's id: the lease's one context, 1. */
GL_CU_API CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId);
CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId) {
  if (!ctxId) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  if (!ctx) ctx = gl_cu.session ? current : NULL;
  if (!ctx_ok(ctx)) return gl_cu_leave(CUDA_ERROR_INVALID_CONTEXT);
  *ctxId = 1;
  return gl_cu_leave(CUDA_SUCCESS);
}
