/*
 * backend_view.c - a shared lease's window onto the worker's backend; see
 * backend_view.h.
 *
 * Every op forwards to the real backend. Region offsets are checked against
 * the lease's range and moved by its start. The worker has checked them
 * already (submit_check.h, the sessions' buffers), so a refusal here means a
 * bug upstream, reported instead of letting one lease reach another's
 * memory. Kernel pointers need nothing: the worker gives the lease
 * region_base + the range's start as its region's address.
 *
 * GPU_SUBMIT's ops share the real backend's submit stream, events and
 * staging buffer between every lease of the process, so they run under the
 * worker's submit mutex; session ops have a stream each and module ops are
 * thread-safe (backend.h), so they go straight through.
 *
 * Each view has its own copy of the ops table: launch_runs_inline is the
 * real backend's, and an optional op the real backend lacks stays NULL.
 */
#include "backend/backend_view.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct view_backend {
  gl_backend base;
  gl_backend_ops ops; /* base.ops points here */
  gl_backend *real;
  uint64_t offset, bytes; /* the lease's range of the real region */
  pthread_mutex_t *submit_mu;
} view_backend;

static view_backend *as_view(gl_backend *b) { return (view_backend *)b; }

/* True when [off, off+len) lies inside the lease's range. */
static bool inside(const view_backend *v, uint64_t off, uint64_t len) {
  return off <= v->bytes && len <= v->bytes - off;
}

/* The refusal of a range that leaves the lease's: status st. */
static gpulease_status outside(const view_backend *v, const char *what, uint64_t off,
                               uint64_t len, gpulease_status st, char *err, size_t errlen) {
  snprintf(err, errlen,
           "%s of %" PRIu64 " bytes at offset %" PRIu64 " is outside the lease's range of %" PRIu64
           " bytes",
           what, len, off, v->bytes);
  return st;
}

/* ---- what a view cannot do ---------------------------------------------------- */

static gpulease_status view_probe(gl_backend *b, gl_probe_resp *out, char *err, size_t errlen) {
  (void)b, (void)out;
  snprintf(err, errlen, "a view cannot probe: its device is the real backend's");
  return GPULEASE_INTERNAL;
}

static gpulease_status view_init(gl_backend *b, uint32_t ordinal, uint64_t vram_bytes,
                                 uint64_t *region_base, char *device_name, size_t name_len,
                                 char *err, size_t errlen) {
  (void)b, (void)ordinal, (void)vram_bytes, (void)region_base, (void)device_name, (void)name_len;
  snprintf(err, errlen, "a view cannot init: its range comes from the real backend's region_add");
  return GPULEASE_INTERNAL;
}

/* ---- modules: straight through --------------------------------------------------- */

static gpulease_status view_load_module(gl_backend *b, const uint8_t *image, size_t len,
                                        gpulease_image_format format, void **module, char *err,
                                        size_t errlen) {
  gl_backend *r = as_view(b)->real;
  return r->ops->load_module(r, image, len, format, module, err, errlen);
}

static void view_unload_module(gl_backend *b, void *module) {
  gl_backend *r = as_view(b)->real;
  r->ops->unload_module(r, module);
}

static gpulease_status view_get_function(gl_backend *b, void *module, const char *name, void **fn,
                                         char *err, size_t errlen) {
  gl_backend *r = as_view(b)->real;
  return r->ops->get_function(r, module, name, fn, err, errlen);
}

static gpulease_status view_param_sizes(gl_backend *b, void *fn, size_t *sizes, size_t max,
                                        size_t *count, char *err, size_t errlen) {
  gl_backend *r = as_view(b)->real;
  return r->ops->param_sizes(r, fn, sizes, max, count, err, errlen);
}

static gpulease_status view_func_info(gl_backend *b, void *fn, gl_func_info_resp *out, char *err,
                                      size_t errlen) {
  gl_backend *r = as_view(b)->real;
  return r->ops->func_info(r, fn, out, err, errlen);
}

static gpulease_status view_local_memory(gl_backend *b, uint64_t *threads,
                                         uint32_t *free_per_thread, char *err, size_t errlen) {
  gl_backend *r = as_view(b)->real;
  return r->ops->local_memory(r, threads, free_per_thread, err, errlen);
}

static gpulease_status view_compile_ptx(gl_backend *b, const uint8_t *ptx, size_t len,
                                        uint8_t **bin, size_t *bin_len, char *err,
                                        size_t errlen) {
  gl_backend *r = as_view(b)->real;
  return r->ops->compile_ptx(r, ptx, len, bin, bin_len, err, errlen);
}

static void view_cache_tag(gl_backend *b, char *buf, size_t len) {
  gl_backend *r = as_view(b)->real;
  r->ops->cache_tag(r, buf, len);
}

static gpulease_status view_host_register(gl_backend *b, void *p, size_t len, char *err,
                                          size_t errlen) {
  gl_backend *r = as_view(b)->real;
  return r->ops->host_register(r, p, len, err, errlen);
}

static void view_host_unregister(gl_backend *b, void *p) {
  gl_backend *r = as_view(b)->real;
  r->ops->host_unregister(r, p);
}

/* ---- GPU_SUBMIT: under the submit mutex ------------------------------------------ */

static gpulease_status view_write(gl_backend *b, uint64_t offset, const void *src, size_t len,
                                  char *err, size_t errlen) {
  view_backend *v = as_view(b);
  if (!inside(v, offset, len))
    return outside(v, "write", offset, len, GPULEASE_WRITE_FAILED, err, errlen);
  pthread_mutex_lock(v->submit_mu);
  gpulease_status st = v->real->ops->write(v->real, v->offset + offset, src, len, err, errlen);
  pthread_mutex_unlock(v->submit_mu);
  return st;
}

static gpulease_status view_read(gl_backend *b, uint64_t offset, void *dst, size_t len, char *err,
                                 size_t errlen) {
  view_backend *v = as_view(b);
  if (!inside(v, offset, len))
    return outside(v, "read", offset, len, GPULEASE_READ_FAILED, err, errlen);
  pthread_mutex_lock(v->submit_mu);
  gpulease_status st = v->real->ops->read(v->real, v->offset + offset, dst, len, err, errlen);
  pthread_mutex_unlock(v->submit_mu);
  return st;
}

static gpulease_status view_launch(gl_backend *b, void *fn, const gl_launch *launch,
                                   uint64_t *gpu_time_ns, char *err, size_t errlen) {
  view_backend *v = as_view(b);
  pthread_mutex_lock(v->submit_mu);
  gpulease_status st = v->real->ops->launch(v->real, fn, launch, gpu_time_ns, err, errlen);
  pthread_mutex_unlock(v->submit_mu);
  return st;
}

static gpulease_status view_launch_read(gl_backend *b, void *fn, const gl_launch *launch,
                                        uint64_t *gpu_time_ns, uint64_t out_offset, void *out,
                                        size_t out_len, char *err, size_t errlen) {
  view_backend *v = as_view(b);
  if (!inside(v, out_offset, out_len)) /* refused before anything runs */
    return outside(v, "read", out_offset, out_len, GPULEASE_READ_FAILED, err, errlen);
  pthread_mutex_lock(v->submit_mu);
  gpulease_status st = v->real->ops->launch_read(v->real, fn, launch, gpu_time_ns,
                                                 v->offset + out_offset, out, out_len, err, errlen);
  pthread_mutex_unlock(v->submit_mu);
  return st;
}

/* ---- sessions: straight through, offsets moved ------------------------------------ */

static gpulease_status view_stream_create(gl_backend *b, void **stream, char *err,
                                          size_t errlen) {
  gl_backend *r = as_view(b)->real;
  return r->ops->stream_create(r, stream, err, errlen);
}

static void view_stream_destroy(gl_backend *b, void *stream) {
  gl_backend *r = as_view(b)->real;
  r->ops->stream_destroy(r, stream);
}

static gpulease_status view_launch_async(gl_backend *b, void *stream, void *fn,
                                         const gl_launch *launch, char *err, size_t errlen) {
  gl_backend *r = as_view(b)->real;
  return r->ops->launch_async(r, stream, fn, launch, err, errlen);
}

static gpulease_status view_burst_async(gl_backend *b, void *stream, void *const *fns,
                                        const gl_launch *launches, size_t n, bool same_as_last,
                                        char *err, size_t errlen) {
  gl_backend *r = as_view(b)->real;
  return r->ops->burst_async(r, stream, fns, launches, n, same_as_last, err, errlen);
}

static gpulease_status view_event_record(gl_backend *b, void *stream, void **event, char *err,
                                         size_t errlen) {
  gl_backend *r = as_view(b)->real;
  return r->ops->event_record(r, stream, event, err, errlen);
}

static gpulease_status view_event_elapsed(gl_backend *b, void *start, void *end, uint64_t *ns,
                                          char *err, size_t errlen) {
  gl_backend *r = as_view(b)->real;
  return r->ops->event_elapsed(r, start, end, ns, err, errlen);
}

static void view_event_destroy(gl_backend *b, void *event) {
  gl_backend *r = as_view(b)->real;
  r->ops->event_destroy(r, event);
}

/* A graph's recipe in the real device's offsets: each memset's and copy's
 * range checked against the view and moved by its start, as the stream
 * ops are; the loop's flag likewise. */
static gpulease_status view_graph_build(gl_backend *b, const gl_graph_op *ops, size_t n,
                                        uint64_t while_flag, void **graph, char *err,
                                        size_t errlen) {
  view_backend *v = as_view(b);
  if (while_flag != GL_GRAPH_NO_LOOP) {
    if (!inside(v, while_flag, 4))
      return outside(v, "graph loop flag", while_flag, 4, GPULEASE_INVALID_ARGUMENT, err, errlen);
    while_flag += v->offset;
  }
  gl_graph_op *real = malloc((n ? n : 1) * sizeof *real);
  if (!real) {
    snprintf(err, errlen, "out of memory for a graph of %zu ops", n);
    return GPULEASE_INTERNAL;
  }
  for (size_t i = 0; i < n; i++) {
    real[i] = ops[i];
    if (ops[i].kind == GL_GRAPH_MEMSET || ops[i].kind == GL_GRAPH_COPY) {
      uint64_t len = ops[i].kind == GL_GRAPH_MEMSET ? ops[i].count * ops[i].element_size
                                                    : ops[i].count;
      if (!inside(v, ops[i].offset, len) ||
          (ops[i].kind == GL_GRAPH_COPY && !inside(v, ops[i].src_offset, len))) {
        free(real);
        return outside(v, "graph op", ops[i].offset, len, GPULEASE_INVALID_ARGUMENT, err, errlen);
      }
      real[i].offset += v->offset;
      if (ops[i].kind == GL_GRAPH_COPY) real[i].src_offset += v->offset;
    }
  }
  gpulease_status st =
      v->real->ops->graph_build(v->real, real, n, while_flag, graph, err, errlen);
  free(real);
  return st;
}

static gpulease_status view_graph_launch(gl_backend *b, void *stream, void *graph, char *err,
                                         size_t errlen) {
  gl_backend *r = as_view(b)->real;
  return r->ops->graph_launch(r, stream, graph, err, errlen);
}

static gpulease_status view_graph_set_args(gl_backend *b, void *graph, uint32_t node,
                                           const gl_launch *l, char *err, size_t errlen) {
  gl_backend *r = as_view(b)->real;
  return r->ops->graph_set_args(r, graph, node, l, err, errlen);
}

static void view_graph_destroy(gl_backend *b, void *graph) {
  gl_backend *r = as_view(b)->real;
  r->ops->graph_destroy(r, graph);
}

static gpulease_status view_write_async(gl_backend *b, void *stream, uint64_t offset,
                                        const void *src, size_t len, char *err, size_t errlen) {
  view_backend *v = as_view(b);
  if (!inside(v, offset, len))
    return outside(v, "write", offset, len, GPULEASE_WRITE_FAILED, err, errlen);
  return v->real->ops->write_async(v->real, stream, v->offset + offset, src, len, err, errlen);
}

static gpulease_status view_read_sync(gl_backend *b, void *stream, uint64_t offset, void *dst,
                                      size_t len, char *err, size_t errlen) {
  view_backend *v = as_view(b);
  if (!inside(v, offset, len))
    return outside(v, "read", offset, len, GPULEASE_READ_FAILED, err, errlen);
  return v->real->ops->read_sync(v->real, stream, v->offset + offset, dst, len, err, errlen);
}

static gpulease_status view_copy_async(gl_backend *b, void *stream, uint64_t dst_offset,
                                       uint64_t src_offset, size_t len, char *err,
                                       size_t errlen) {
  view_backend *v = as_view(b);
  if (!inside(v, src_offset, len))
    return outside(v, "copy (source)", src_offset, len, GPULEASE_WRITE_FAILED, err, errlen);
  if (!inside(v, dst_offset, len))
    return outside(v, "copy (destination)", dst_offset, len, GPULEASE_WRITE_FAILED, err, errlen);
  return v->real->ops->copy_async(v->real, stream, v->offset + dst_offset, v->offset + src_offset,
                                  len, err, errlen);
}

static gpulease_status view_memset_async(gl_backend *b, void *stream, uint64_t offset,
                                         unsigned element_size, uint32_t value, size_t count,
                                         char *err, size_t errlen) {
  view_backend *v = as_view(b);
  if (element_size != 1 && element_size != 2 && element_size != 4) {
    snprintf(err, errlen, "memset element size %u: must be 1, 2 or 4", element_size);
    return GPULEASE_WRITE_FAILED;
  }
  if (count > UINT64_MAX / element_size || !inside(v, offset, (uint64_t)count * element_size))
    return outside(v, "memset", offset, (uint64_t)count * element_size, GPULEASE_WRITE_FAILED,
                   err, errlen);
  return v->real->ops->memset_async(v->real, stream, v->offset + offset, element_size, value,
                                    count, err, errlen);
}

/* The tensor's first byte must be the lease's; the worker has checked the
 * rest of its extent against the session's buffer, which is inside the
 * lease's range. */
static gpulease_status view_tensormap_encode(gl_backend *b, uint64_t offset, const gl_tmap_req *t,
                                             uint8_t out[GL_TMAP_BYTES], char *err,
                                             size_t errlen) {
  view_backend *v = as_view(b);
  if (!inside(v, offset, 1))
    return outside(v, "tensor map", offset, 1, GPULEASE_INVALID_ARGUMENT, err, errlen);
  return v->real->ops->tensormap_encode(v->real, v->offset + offset, t, out, err, errlen);
}

static gpulease_status view_stream_sync(gl_backend *b, void *stream, char *err, size_t errlen) {
  gl_backend *r = as_view(b)->real;
  return r->ops->stream_sync(r, stream, err, errlen);
}

/* ---- the rest ---------------------------------------------------------------------- */

static bool view_context_lost(gl_backend *b) {
  gl_backend *r = as_view(b)->real;
  return r->ops->context_lost(r);
}

static void view_destroy(gl_backend *b) { free(as_view(b)); }

/* Every op; gl_backend_view_new drops those the real backend lacks. warm,
 * open_shared, region_add, region_remove and set_limits are the process's,
 * not a lease's: NULL. */
static const gl_backend_ops k_view_ops = {
    .probe = view_probe,
    .init = view_init,
    .load_module = view_load_module,
    .unload_module = view_unload_module,
    .get_function = view_get_function,
    .param_sizes = view_param_sizes,
    .write = view_write,
    .launch = view_launch,
    .read = view_read,
    .launch_read = view_launch_read,
    .context_lost = view_context_lost,
    .destroy = view_destroy,
    .stream_create = view_stream_create,
    .stream_destroy = view_stream_destroy,
    .launch_async = view_launch_async,
    .burst_async = view_burst_async,
    .event_record = view_event_record,
    .event_elapsed = view_event_elapsed,
    .event_destroy = view_event_destroy,
    .graph_build = view_graph_build,
    .graph_launch = view_graph_launch,
    .graph_set_args = view_graph_set_args,
    .graph_destroy = view_graph_destroy,
    .write_async = view_write_async,
    .read_sync = view_read_sync,
    .copy_async = view_copy_async,
    .memset_async = view_memset_async,
    .stream_sync = view_stream_sync,
    .func_info = view_func_info,
    .local_memory = view_local_memory,
    .compile_ptx = view_compile_ptx,
    .host_register = view_host_register,
    .host_unregister = view_host_unregister,
    .cache_tag = view_cache_tag,
    .tensormap_encode = view_tensormap_encode,
};

gl_backend *gl_backend_view_new(gl_backend *real, uint64_t offset, uint64_t bytes,
                                pthread_mutex_t *submit_mu) {
  view_backend *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  const gl_backend_ops *r = real->ops;
  v->ops = k_view_ops;
  v->ops.name = r->name; /* a view of a device is that device to messages */
  v->ops.launch_runs_inline = r->launch_runs_inline;
  /* Optional ops stay optional: NULL where the real backend has none. */
#define VIEW_LIKE_REAL(op)                                                                      \
  if (!r->op) v->ops.op = NULL
  VIEW_LIKE_REAL(load_module);
  VIEW_LIKE_REAL(unload_module);
  VIEW_LIKE_REAL(get_function);
  VIEW_LIKE_REAL(param_sizes);
  VIEW_LIKE_REAL(write);
  VIEW_LIKE_REAL(launch);
  VIEW_LIKE_REAL(read);
  VIEW_LIKE_REAL(launch_read);
  VIEW_LIKE_REAL(context_lost);
  VIEW_LIKE_REAL(stream_create);
  VIEW_LIKE_REAL(stream_destroy);
  VIEW_LIKE_REAL(launch_async);
  VIEW_LIKE_REAL(burst_async);
  VIEW_LIKE_REAL(event_record);
  VIEW_LIKE_REAL(event_elapsed);
  VIEW_LIKE_REAL(event_destroy);
  VIEW_LIKE_REAL(graph_build);
  VIEW_LIKE_REAL(graph_launch);
  VIEW_LIKE_REAL(graph_set_args);
  VIEW_LIKE_REAL(graph_destroy);
  VIEW_LIKE_REAL(write_async);
  VIEW_LIKE_REAL(read_sync);
  VIEW_LIKE_REAL(copy_async);
  VIEW_LIKE_REAL(memset_async);
  VIEW_LIKE_REAL(stream_sync);
  VIEW_LIKE_REAL(func_info);
  VIEW_LIKE_REAL(local_memory);
  VIEW_LIKE_REAL(compile_ptx);
  VIEW_LIKE_REAL(host_register);
  VIEW_LIKE_REAL(host_unregister);
  VIEW_LIKE_REAL(cache_tag);
  VIEW_LIKE_REAL(tensormap_encode);
#undef VIEW_LIKE_REAL
  v->base.ops = &v->ops;
  v->real = real;
  v->offset = offset;
  v->bytes = bytes;
  v->submit_mu = submit_mu;
  return &v->base;
}
