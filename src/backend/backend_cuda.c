/*
 * backend_cuda.c - the worker backend on the CUDA driver API: its op
 * table and its life (gl_backend_cuda_new, destroy). The ops are in one
 * file per thing they drive, sharing cuda_internal.h:
 *
 *   cuda_device.c  the device and its context, shared leases' ranges, the
 *                  helpers every op calls (context current, errors)
 *   cuda_module.c  modules, functions, compile_ptx, tensor maps
 *   cuda_launch.c  launches: GPU_SUBMIT's and a session's, attributes
 *   cuda_stream.c  session streams and the copies on them
 *   cuda_burst.c   BURST as a cached CUDA graph
 *   cuda_event.c   events
 *   cuda_graph.c   graphs and WHILE loops
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
 * (gl_cuda__make_current: cuCtxGetCurrent, a thread-local read in the
 * driver, and cuCtxSetCurrent only when it differs). Nothing else is shared between
 * threads but `lost` (atomic) and the synchronous launch's events: JIT
 * logs are per call.
 *
 * Error messages always name the CUDA error ("CUDA_ERROR_ILLEGAL_ADDRESS")
 * and its description. After a fault that leaves the context unusable
 * (sticky errors: illegal address, illegal instruction, assert, ...) the
 * backend reports context_lost and the worker exits.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "backend/cuda_internal.h"

/* ---- the op table and the backend's life ------------------------------------- */

static bool cuda_context_lost(gl_backend *b) { return is_lost(as_cuda(b)); }

static void cuda_destroy(gl_backend *b) {
  cuda_backend *c = as_cuda(b);
  if (c->have_device && !is_lost(c)) {
    gl_cuda__make_current(c);
    gl_cuda__release_device(c);
  }
  pthread_mutex_destroy(&c->launch_mu);
  pthread_mutex_destroy(&c->ranges_mu);
  pthread_mutex_destroy(&c->cond_mu);
  free(c->ranges);
  free(c);
}

static const gl_backend_ops k_cuda_ops = {
    .name = "cuda",
    .tensormap_encode = gl_cuda__tensormap_encode,
    .probe = gl_cuda__probe,
    .warm = gl_cuda__warm,
    .reset = gl_cuda__reset,
    .init = gl_cuda__init,
    .open_shared = gl_cuda__open_shared,
    .region_add = gl_cuda__region_add,
    .region_remove = gl_cuda__region_remove,
    .set_limits = gl_cuda__set_limits,
    .load_module = gl_cuda__load_module,
    .unload_module = gl_cuda__unload_module,
    .get_function = gl_cuda__get_function,
    .param_sizes = gl_cuda__param_sizes,
    .write = gl_cuda__write,
    .launch = gl_cuda__launch,
    .read = gl_cuda__read,
    .launch_read = gl_cuda__launch_read,
    .context_lost = cuda_context_lost,
    .destroy = cuda_destroy,
    .stream_create = gl_cuda__stream_create,
    .stream_destroy = gl_cuda__stream_destroy,
    .launch_runs_inline = false,
    .launch_async = gl_cuda__launch_async,
    .write_async = gl_cuda__write_async,
    .read_sync = gl_cuda__read_sync,
    .copy_async = gl_cuda__copy_async,
    .memset_async = gl_cuda__memset_async,
    .burst_async = gl_cuda__burst_async,
    .event_record = gl_cuda__event_record,
    .event_elapsed = gl_cuda__event_elapsed,
    .event_destroy = gl_cuda__event_destroy,
    .graph_build = gl_cuda__graph_build,
    .graph_launch = gl_cuda__graph_launch,
    .graph_set_args = gl_cuda__graph_set_args,
    .graph_destroy = gl_cuda__graph_destroy,
    .stream_sync = gl_cuda__stream_sync,
    .func_info = gl_cuda__func_info,
    .local_memory = gl_cuda__local_memory,
    .compile_ptx = gl_cuda__compile_ptx,
    .cache_tag = gl_cuda__cache_tag,
    .host_register = gl_cuda__host_register,
    .host_unregister = gl_cuda__host_unregister,
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
