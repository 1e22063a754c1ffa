/*
 * session_ops.c - what each session op does, on the session's lane
 * (docs/protocol.md, "Sessions").
 *
 * Every op checks its handles and ranges against the session's own tables
 * (a handle of another session, a freed one or a forged one is simply not
 * there: INVALID_HANDLE), then calls the backend on the session's stream.
 * The first op that fails becomes the session's failure; until a SYNC
 * acknowledges it, later ops are refused with the same status without
 * running. A kernel fault that shows only later (on a GPU, when the stream
 * next waits) is put down to the first LAUNCH queued since the stream was
 * last known idle.
 *
 * gl_sop_launch is the worker's one launch: LAUNCH and LAUNCH_EX queue
 * through it on the session's stream, and GPU_SUBMIT (submit.c, the
 * implicit session) runs through it on the backend's synchronous path.
 *
 * It stands on wk_types.h, wk_reply.h and wk_check.h (the lost context),
 * sharing session_ops.h with session_exec.c, session_tmap.c and submit.c.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/lat.h"
#include "common/log.h"
#include "worker/session.h"
#include "worker/session_ops.h"
#include "worker/held.h"
#include "worker/segments.h"
#include "worker/submit_check.h"
#include "worker/worker.h"
#include "worker/wk_check.h"
#include "worker/wk_reply.h"

/* ======================================================================
 * The failure
 * ==================================================================== */

void gl_sop_set_failure(gl_wsession *s, uint16_t op, uint64_t seq, gpulease_status st,
                        const char *msg) {
  if (s->f_status != GPULEASE_OK) return;
  s->f_status = (uint16_t)st;
  s->f_op = op;
  s->f_seq = seq;
  snprintf(s->f_msg, sizeof s->f_msg, "%s", msg);
}

void gl_sop_clear_failure(gl_wsession *s) {
  s->f_status = GPULEASE_OK;
  s->f_op = 0;
  s->f_seq = 0;
  s->f_msg[0] = 0;
}

/* The message of a lost context as a session's failure. */
static void lost_failure_msg(gl_wk *w, char *msg, size_t len) {
  pthread_mutex_lock(&w->p->lost_mu);
  snprintf(msg, len, "the lease's CUDA context was lost after a device fault (%s)", w->p->lost_msg);
  pthread_mutex_unlock(&w->p->lost_mu);
}

void gl_session_failure_for_lost(gl_wsession *s, uint16_t *status, uint16_t *op, uint64_t *seq,
                                 const char **msg) {
  if (s->f_status == GPULEASE_OK) {
    char m[1200];
    lost_failure_msg(s->w, m, sizeof m);
    gl_sop_set_failure(s, 0, 0, GPULEASE_LAUNCH_FAILED, m);
  }
  *status = s->f_status;
  *op = s->f_op;
  *seq = s->f_seq;
  *msg = s->f_msg;
}

/* The ops that queue kernels: a fault found later is put down to them. */
static bool is_launch_op(uint16_t op) {
  return op == GL_OP_LAUNCH || op == GL_OP_LAUNCH_EX || op == GL_OP_BURST;
}

void gl_sop_after_backend(gl_wsession *s) {
  gl_wk *w = s->w;
  if (w->be->ops->context_lost(w->be)) gl_wk_check_lost(w, s->err);
}

/* A backend call of op `op` failed with st (message in s->err). A fault
 * found while waiting is the failure of the launch that caused it. */
void gl_sop_fail_from_backend(gl_wsession *s, uint16_t op, uint64_t seq, gpulease_status st) {
  gl_sop_after_backend(s);
  if (st == GPULEASE_LAUNCH_FAILED && !is_launch_op(op) && s->unsynced_launch_seq) {
    char msg[2048];
    snprintf(msg, sizeof msg,
             "%s (found by %s seq %" PRIu64 "; a kernel fault shows when the stream next waits and "
             "is put down to the first launch since the stream was last idle)",
             s->err, gl_op_name(op), seq);
    gl_sop_set_failure(s, GL_OP_LAUNCH, s->unsynced_launch_seq, st, msg);
    s->unsynced_launch_seq = 0;
    return;
  }
  gl_sop_set_failure(s, op, seq, st, s->err);
}

gpulease_status gl_sop_errf(gl_wsession *s, gpulease_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->err, GL_WK_ERR_MAX, fmt, ap);
  va_end(ap);
  return st;
}

/* ======================================================================
 * Handles and ranges
 * ==================================================================== */

gpulease_status gl_sop_get_buffer(gl_wsession *s, uint64_t h, gl_wbuffer **out) {
  *out = gl_hmap_get(&s->buffers, h);
  if (*out) return GPULEASE_OK;
  return gl_sop_errf(s, GPULEASE_INVALID_HANDLE,
              "0x%016" PRIx64 " is not a buffer of session %" PRIu64
              " (never allocated here, freed, or another session's)",
              h, s->id);
}

/* offset + len within the buffer, computed without overflow. */
gpulease_status gl_sop_in_buffer(gl_wsession *s, const gl_wbuffer *b, uint64_t h, uint64_t offset,
                                 uint64_t len) {
  if (offset <= b->size && len <= b->size - offset) return GPULEASE_OK;
  return gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT,
              "bytes %" PRIu64 "..+%" PRIu64 " are outside buffer 0x%016" PRIx64 " of %" PRIu64
              " bytes",
              offset, len, h, b->size);
}

uint64_t gl_sop_put_handle(gl_wsession *s, gl_hmap *m, unsigned kind, void *obj) {
  for (;;) {
    uint64_t h = gl_session_new_handle(kind);
    if (gl_hmap_get(m, h)) continue;
    if (gl_hmap_put(m, h, obj) != 0) return 0;
    (void)s;
    return h;
  }
}

/* ======================================================================
 * Memory
 * ==================================================================== */

static gpulease_status op_alloc(gl_wsession *s, const gl_mem_alloc_req *r, gl_response *resp) {
  gl_wk *w = s->w;
  if (s->buffers.count >= GL_WS_MAX_BUFFERS)
    return gl_sop_errf(s, GPULEASE_CAPACITY_EXCEEDED, "session %" PRIu64 " already has %d buffers",
                s->id, GL_WS_MAX_BUFFERS);
  gl_wbuffer *b = malloc(sizeof *b);
  if (!b) return gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory");
  gpulease_status st = gl_suballoc_alloc(w->alloc, r->size_bytes, &b->offset, s->err,
                                         GL_WK_ERR_MAX);
  if (st != GPULEASE_OK) {
    free(b);
    return st;
  }
  b->size = r->size_bytes;
  uint64_t h = gl_sop_put_handle(s, &s->buffers, GL_HANDLE_BUFFER, b);
  if (!h) {
    gl_suballoc_release(w->alloc, b->offset);
    free(b);
    return gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory");
  }
  resp->u.mem_alloc.buffer = h;
  resp->u.mem_alloc.region_offset = b->offset;
  /* The device address only when asked (docs/protocol.md, MEM_ALLOC): what
   * a kernel given it as a raw pointer reaches, as BUFFER params are. */
  resp->u.mem_alloc.has_device_address = (r->flags & GL_MEM_ALLOC_F_ADDRESS) != 0;
  if (resp->u.mem_alloc.has_device_address)
    resp->u.mem_alloc.device_address = w->region_base + b->offset;
  return GPULEASE_OK;
}

gpulease_status gl_sop_wait_stream(gl_wsession *s, uint16_t op, uint64_t seq, bool *failed) {
  gl_wk *w = s->w;
  gpulease_status st = w->be->ops->stream_sync(w->be, s->stream, s->err, GL_WK_ERR_MAX);
  if (st != GPULEASE_OK) {
    gl_sop_fail_from_backend(s, op, seq, st);
    *failed = true;
    return st;
  }
  s->unsynced_launch_seq = 0;
  return GPULEASE_OK;
}

static gpulease_status op_free(gl_wsession *s, const gl_handle_req *r, bool *failed) {
  gl_wbuffer *b;
  gpulease_status st = gl_sop_get_buffer(s, r->handle, &b);
  if (st != GPULEASE_OK) return st;
  /* As cuMemFree: the stream's earlier work may still use it. */
  st = gl_sop_wait_stream(s, GL_OP_MEM_FREE, r->s.seq, failed);
  if (st != GPULEASE_OK) return st;
  gl_hmap_del(&s->buffers, r->handle);
  s->handles_gen++;
  gl_suballoc_release(s->w->alloc, b->offset);
  free(b);
  return GPULEASE_OK;
}

static gpulease_status op_write(gl_wsession *s, const gl_mem_write_req *r) {
  gl_wbuffer *b;
  gpulease_status st = gl_sop_get_buffer(s, r->buffer, &b);
  if (st == GPULEASE_OK) st = gl_sop_in_buffer(s, b, r->buffer, r->offset, r->data_len);
  if (st != GPULEASE_OK) return st;
  gl_wk *w = s->w;
  return w->be->ops->write_async(w->be, s->stream, b->offset + r->offset, r->data, r->data_len,
                                 s->err, GL_WK_ERR_MAX);
}

static gpulease_status op_read(gl_wsession *s, const gl_mem_read_req *r, uint8_t **data) {
  gl_wbuffer *b;
  gpulease_status st = gl_sop_get_buffer(s, r->buffer, &b);
  if (st == GPULEASE_OK) st = gl_sop_in_buffer(s, b, r->buffer, r->offset, r->size_bytes);
  if (st != GPULEASE_OK) return st;
  *data = malloc(r->size_bytes);
  if (!*data) return gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory for %u bytes", r->size_bytes);
  gl_wk *w = s->w;
  st = w->be->ops->read_sync(w->be, s->stream, b->offset + r->offset, *data, r->size_bytes, s->err,
                             GL_WK_ERR_MAX);
  if (st == GPULEASE_OK) s->unsynced_launch_seq = 0;
  return st;
}

/* MEM_WRITE_SHM and MEM_READ_SHM (op; for the daemon's arena ops, the
 * client's MEM_WRITE or MEM_READ): size_bytes between a buffer and a
 * segment, answered once the copy is done (the client may then reuse or
 * read that part of the segment). */
static gpulease_status op_shm(gl_wsession *s, uint16_t op, const gl_mem_shm_req *r,
                              bool *failed) {
  gl_wbuffer *b;
  gpulease_status st = gl_sop_get_buffer(s, r->buffer, &b);
  if (st == GPULEASE_OK) st = gl_sop_in_buffer(s, b, r->buffer, r->offset, r->size_bytes);
  if (st != GPULEASE_OK) return st;
  gl_wk *w = s->w;
  gl_wseg *g = gl_segments_get(w, r->segment);
  if (!g)
    return gl_sop_errf(s, GPULEASE_INVALID_HANDLE,
                "0x%016" PRIx64 " is not a segment of this lease (never attached, detached, or "
                "another lease's)",
                r->segment);
  if (r->segment_offset > g->size || r->size_bytes > g->size - r->segment_offset) {
    st = gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT,
              "bytes %" PRIu64 "..+%" PRIu64 " are outside segment 0x%016" PRIx64 " of %" PRIu64
              " bytes",
              r->segment_offset, r->size_bytes, r->segment, g->size);
  } else if (op == GL_OP_MEM_WRITE_SHM || op == GL_OP_MEM_WRITE) {
    st = w->be->ops->write_async(w->be, s->stream, b->offset + r->offset,
                                 g->ptr + r->segment_offset, (size_t)r->size_bytes, s->err,
                                 GL_WK_ERR_MAX);
    if (st == GPULEASE_OK) st = gl_sop_wait_stream(s, op, r->s.seq, failed);
  } else {
    st = w->be->ops->read_sync(w->be, s->stream, b->offset + r->offset,
                               g->ptr + r->segment_offset, (size_t)r->size_bytes, s->err,
                               GL_WK_ERR_MAX);
    if (st == GPULEASE_OK) s->unsynced_launch_seq = 0;
  }
  gl_segments_put(w, g);
  return st;
}

gpulease_status gl_sop_copy_check(gl_wsession *s, const gl_mem_copy_req *r, uint64_t *dst,
                                  uint64_t *src) {
  gl_wbuffer *d, *sb;
  gpulease_status st = gl_sop_get_buffer(s, r->dst_buffer, &d);
  if (st == GPULEASE_OK) st = gl_sop_get_buffer(s, r->src_buffer, &sb);
  if (st == GPULEASE_OK) st = gl_sop_in_buffer(s, d, r->dst_buffer, r->dst_offset, r->size_bytes);
  if (st == GPULEASE_OK) st = gl_sop_in_buffer(s, sb, r->src_buffer, r->src_offset, r->size_bytes);
  if (st != GPULEASE_OK) return st;
  uint64_t a = d->offset + r->dst_offset, bb = sb->offset + r->src_offset;
  if (a != bb && a < bb + r->size_bytes && bb < a + r->size_bytes)
    return gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT,
                       "MEM_COPY ranges overlap (cuMemcpyDtoD leaves the result undefined)");
  *dst = a;
  *src = bb;
  return GPULEASE_OK;
}

static gpulease_status op_copy(gl_wsession *s, const gl_mem_copy_req *r) {
  uint64_t a, bb;
  gpulease_status st = gl_sop_copy_check(s, r, &a, &bb);
  if (st != GPULEASE_OK) return st;
  gl_wk *w = s->w;
  return w->be->ops->copy_async(w->be, s->stream, a, bb, r->size_bytes, s->err, GL_WK_ERR_MAX);
}

gpulease_status gl_sop_memset_check(gl_wsession *s, const gl_memset_req *r, uint64_t *offset) {
  gl_wbuffer *b;
  gpulease_status st = gl_sop_get_buffer(s, r->buffer, &b);
  if (st != GPULEASE_OK) return st;
  if (r->offset % r->element_size)
    return gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT, "MEMSET offset %" PRIu64
                       " is not a multiple of the element size %u", r->offset, r->element_size);
  if (r->count > UINT64_MAX / r->element_size)
    return gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT, "MEMSET count %" PRIu64 " is too large",
                       r->count);
  st = gl_sop_in_buffer(s, b, r->buffer, r->offset, r->count * r->element_size);
  if (st != GPULEASE_OK) return st;
  *offset = b->offset + r->offset;
  return GPULEASE_OK;
}

static gpulease_status op_memset(gl_wsession *s, const gl_memset_req *r) {
  uint64_t off;
  gpulease_status st = gl_sop_memset_check(s, r, &off);
  if (st != GPULEASE_OK) return st;
  gl_wk *w = s->w;
  return w->be->ops->memset_async(w->be, s->stream, off, r->element_size, r->value,
                                  (size_t)r->count, s->err, GL_WK_ERR_MAX);
}

/* ======================================================================
 * Modules and functions
 * ==================================================================== */

static gpulease_status get_module(gl_wsession *s, uint64_t h, gl_wmodule **out) {
  *out = gl_hmap_get(&s->modules, h);
  if (*out) return GPULEASE_OK;
  return gl_sop_errf(s, GPULEASE_INVALID_HANDLE,
              "0x%016" PRIx64 " is not a module of session %" PRIu64
              " (never loaded here, unloaded, or another session's)",
              h, s->id);
}

static void drop_functions(gl_wsession *s, gl_wmodule *m) {
  for (gl_wfunction *f = m->funcs; f;) {
    gl_wfunction *n = f->next;
    gl_hmap_del(&s->functions, f->handle);
    free(f);
    f = n;
  }
  m->funcs = NULL;
}

static gpulease_status op_module_load(gl_wsession *s, const gl_module_load_req *r,
                                      gl_response *resp) {
  gl_wk *w = s->w;
  if (s->modules.count >= GL_WS_MAX_MODULES)
    return gl_sop_errf(s, GPULEASE_CAPACITY_EXCEEDED, "session %" PRIu64 " already has %d modules",
                s->id, GL_WS_MAX_MODULES);
  gpulease_image_format fmt;
  size_t text_len;
  gpulease_status st = gl_image_resolve(r->image_format, r->image, r->image_len, &fmt, &text_len,
                                        s->err, GL_WK_ERR_MAX);
  if (st != GPULEASE_OK) return st;
  gl_wmodule *m = calloc(1, sizeof *m);
  if (!m) return gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory");
  uint8_t source = GL_MODULE_CACHE_LOADED;
  st = gl_modtab_acquire(w->modtab, r->image, text_len, fmt, &m->module, &source, s->err,
                         GL_WK_ERR_MAX);
  if (st != GPULEASE_OK) {
    free(m);
    return st;
  }
  uint64_t h = gl_sop_put_handle(s, &s->modules, GL_HANDLE_MODULE, m);
  if (!h) {
    gl_modtab_release(w->modtab, m->module);
    free(m);
    return gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory");
  }
  resp->u.module_load.module = h;
  resp->u.module_load.cache = source;
  return GPULEASE_OK;
}

static gpulease_status op_module_unload(gl_wsession *s, const gl_handle_req *r, bool *failed) {
  gl_wmodule *m;
  gpulease_status st = get_module(s, r->handle, &m);
  if (st != GPULEASE_OK) return st;
  if (m->graph_refs)
    return gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT,
                       "module 0x%016" PRIx64 " has kernels in %u graph launch%s of this session "
                       "(recorded or being recorded); GRAPH_DESTROY them first",
                       r->handle, m->graph_refs, m->graph_refs == 1 ? "" : "es");
  st = gl_sop_wait_stream(s, GL_OP_MODULE_UNLOAD, r->s.seq, failed);
  if (st != GPULEASE_OK) return st;
  drop_functions(s, m);
  s->handles_gen++;
  gl_hmap_del(&s->modules, r->handle);
  gl_modtab_release(s->w->modtab, m->module);
  free(m);
  return GPULEASE_OK;
}

gpulease_status gl_sop_function_find(gl_wsession *s, void *module, const char *name,
                                     size_t name_len, gl_wfunction *f) {
  gl_wk *w = s->w;
  memcpy(f->name, name, name_len);
  f->name[name_len] = 0;
  gpulease_status st = w->be->ops->get_function(w->be, module, f->name, &f->fn, s->err,
                                                GL_WK_ERR_MAX);
  if (st != GPULEASE_OK) return st;
  /* The sizes of the first GPULEASE_MAX_PARAMS parameters, and how many
   * there are: a kernel with more is counted (a GPU_SUBMIT refuses it) but
   * its sizes are not known. A backend that cannot tell leaves them
   * unknown: the launch goes as asked. */
  size_t count = 0;
  f->sizes_known = false;
  f->param_count = 0;
  if (w->be->ops->param_sizes &&
      w->be->ops->param_sizes(w->be, f->fn, f->param_sizes, GPULEASE_MAX_PARAMS, &count, s->err,
                              GL_WK_ERR_MAX) == GPULEASE_OK) {
    f->param_count = count;
    f->sizes_known = count <= GPULEASE_MAX_PARAMS;
  }
  /* Its local memory, charged to the lease at its launches (lmem.h). */
  gl_func_info_resp fi;
  memset(&fi, 0, sizeof fi);
  f->local_bytes = 0;
  if (w->be->ops->local_memory &&
      w->be->ops->func_info(w->be, f->fn, &fi, s->err, GL_WK_ERR_MAX) == GPULEASE_OK)
    f->local_bytes = fi.local_bytes;
  s->err[0] = 0;
  return GPULEASE_OK;
}

gpulease_status gl_sop_cover_local(gl_wsession *s, const gl_wfunction *f) {
  gl_wk *w = s->w;
  if (f->local_bytes <= atomic_load_explicit(&w->lmem.covered, memory_order_acquire))
    return GPULEASE_OK;
  bool grew = false;
  gpulease_status st =
      gl_lmem_cover(&w->lmem, w->be, f->local_bytes, f->name, &grew, s->err, GL_WK_ERR_MAX);
  if (grew) gl_wk_held_report(w);
  return st;
}

static gpulease_status op_func_info(gl_wsession *s, const gl_func_info_req *r, gl_response *resp) {
  gl_wk *w = s->w;
  gl_wmodule *m;
  gpulease_status st = get_module(s, r->module, &m);
  if (st != GPULEASE_OK) return st;
  if (s->functions.count >= GL_WS_MAX_FUNCTIONS)
    return gl_sop_errf(s, GPULEASE_CAPACITY_EXCEEDED, "session %" PRIu64 " already has %d functions",
                s->id, GL_WS_MAX_FUNCTIONS);
  gl_wfunction *f = calloc(1, sizeof *f);
  if (!f) return gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory");
  st = gl_sop_function_find(s, m->module, r->kernel_name, r->kernel_name_len, f);
  if (st == GPULEASE_LAUNCH_FAILED) st = GPULEASE_NOT_FOUND; /* CUDA_ERROR_NOT_FOUND */
  gl_func_info_resp *fi = &resp->u.func_info;
  if (st == GPULEASE_OK) st = w->be->ops->func_info(w->be, f->fn, fi, s->err, GL_WK_ERR_MAX);
  if (st != GPULEASE_OK) {
    free(f);
    return st;
  }
  fi->param_count = GL_WIRE_PARAMS_UNKNOWN;
  if (f->sizes_known) {
    fi->param_count = (uint16_t)f->param_count;
    for (size_t i = 0; i < f->param_count; i++) fi->param_sizes[i] = (uint16_t)f->param_sizes[i];
  }
  f->mod = m;
  f->handle = gl_sop_put_handle(s, &s->functions, GL_HANDLE_FUNCTION, f);
  if (!f->handle) {
    free(f);
    return gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory");
  }
  f->next = m->funcs;
  m->funcs = f;
  fi->function = f->handle;
  return GPULEASE_OK;
}

/* ======================================================================
 * LAUNCH
 * ==================================================================== */

/* The session's function h. */
static gpulease_status find_function(gl_wsession *s, uint64_t h, gl_wfunction **fo) {
  *fo = gl_hmap_get(&s->functions, h);
  if (*fo) return GPULEASE_OK;
  return gl_sop_errf(s, GPULEASE_INVALID_HANDLE,
                     "0x%016" PRIx64 " is not a function of session %" PRIu64
                     " (never returned by FUNC_INFO here, its module unloaded, or another "
                     "session's)",
                     h, s->id);
}

/* The launch's function, its dimensions checked. */
gpulease_status gl_sop_launch_function(gl_wsession *s, const gl_launch_req *r,
                                       gl_wfunction **fo) {
  gl_wfunction *f;
  gpulease_status st = find_function(s, r->function, &f);
  if (st != GPULEASE_OK) return st;
  st = gl_sop_check_dims(s, r);
  if (st == GPULEASE_OK) st = gl_sop_cover_local(s, f);
  if (st != GPULEASE_OK) return st;
  *fo = f;
  return GPULEASE_OK;
}

gpulease_status gl_sop_check_dims(gl_wsession *s, const gl_launch_req *r) {
  for (int i = 0; i < 3; i++)
    if (r->grid[i] == 0 || r->block[i] == 0)
      return gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT, "grid and block dimensions must be at least 1");
  uint64_t threads = (uint64_t)r->block[0] * r->block[1] * r->block[2];
  if (threads > 1024)
    return gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT,
                "a block of %" PRIu64 " threads exceeds the limit of 1024", threads);
  return GPULEASE_OK;
}

/* A buffer parameter's device address, checked against the buffer. */
gpulease_status gl_sop_param_pointer(gl_wsession *s, size_t k, const gl_launch_param *p,
                                     uint64_t *ptr) {
  gl_wbuffer *b;
  gpulease_status st = gl_sop_get_buffer(s, p->buffer, &b);
  if (st != GPULEASE_OK) return st;
  if (p->offset > b->size)
    return gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT,
                "parameter %zu: offset %" PRIu64 " is past the end of buffer 0x%016" PRIx64
                " (%" PRIu64 " bytes)",
                k, p->offset, p->buffer, b->size);
  *ptr = s->w->region_base + b->offset + p->offset;
  return GPULEASE_OK;
}

/* The argument sizes against the kernel's, when known. submit: the
 * GPU_SUBMIT whose arguments these are (the messages name "the request",
 * as GPU_SUBMIT's always did), NULL for a launch ("the launch"). A
 * GPU_SUBMIT also refuses a kernel with more parameters than any list
 * holds. */
static gpulease_status check_sizes(gl_wsession *s, const gl_wfunction *f, const size_t *sizes,
                                   size_t k, const gl_submit_req *submit) {
  bool counted = f->sizes_known || (submit && f->param_count > GPULEASE_MAX_PARAMS);
  if (!counted) return GPULEASE_OK;
  const char *what = submit ? "request" : "launch";
  if (f->param_count != k)
    return gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT,
                       "kernel '%s' takes %zu parameter%s but the %s passes %zu%s", f->name,
                       f->param_count, f->param_count == 1 ? "" : "s", what, k,
                       submit && !(submit->flags & GL_SUBMIT_F_PARAMS)
                           ? " (without a param list the region's pointer is the only parameter)"
                           : "");
  for (size_t i = 0; i < k; i++)
    if (f->param_sizes[i] != sizes[i])
      return gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT,
                         "parameter %zu of kernel '%s' is %zu bytes but the %s passes %zu bytes "
                         "(%s)",
                         i, f->name, f->param_sizes[i], what, sizes[i],
                         submit ? "pointers are 8 bytes" : "buffers are 8-byte pointers");
  return GPULEASE_OK;
}

/* The parameter sizes a launch passes against the kernel's, when known. */
gpulease_status gl_sop_check_param_sizes(gl_wsession *s, const gl_wfunction *f,
                                         const size_t *sizes, size_t k) {
  return check_sizes(s, f, sizes, k, NULL);
}

/* Builds the arguments of a launch of f in s->args (count in *n): from
 * r's param list, or a GPU_SUBMIT's (submit: region offsets, or without
 * a list the region's pointer alone); then checks them against f. */
static gpulease_status build_args(gl_wsession *s, const gl_launch_req *r,
                                  const gl_submit_req *submit, const gl_wfunction *f, size_t *n) {
  if (!s->args_ready) {
    if (gl_argbuf_init(&s->args) != 0) return gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory");
    s->args_ready = true;
  }
  gl_argbuf *a = &s->args;
  const uint64_t base = s->w->region_base;
  gl_launch_args_begin(a);
  if (submit && !(submit->flags & GL_SUBMIT_F_PARAMS)) {
    gl_launch_args_pointer(a, base);
  } else if (submit) {
    size_t pos = 0;
    gl_param p;
    while (a->count < GPULEASE_MAX_PARAMS && gl_param_next(submit, &pos, &p)) {
      if (p.kind == GPULEASE_PARAM_POINTER)
        gl_launch_args_pointer(a, base + p.offset); /* offset < vram: gl_submit_check */
      else
        gl_launch_args_value(a, p.value, p.size);
    }
  } else {
    size_t pos = 0;
    gl_launch_param p;
    while (a->count < GPULEASE_MAX_PARAMS && gl_launch_param_next(r, &pos, &p)) {
      if (p.kind == GL_LAUNCH_PARAM_BUFFER) {
        uint64_t ptr;
        gpulease_status st = gl_sop_param_pointer(s, a->count, &p, &ptr);
        if (st != GPULEASE_OK) return st;
        gl_launch_args_pointer(a, ptr);
      } else {
        gl_launch_args_value(a, p.value, p.size);
      }
    }
  }
  *n = a->count;
  return check_sizes(s, f, a->sizes, a->count, submit);
}

/* Checks the launch and builds its arguments in s->args; the argument
 * count goes to *n. */
gpulease_status gl_sop_prepare_launch(gl_wsession *s, const gl_launch_req *r, gl_wfunction **fo,
                                      size_t *n) {
  gl_wfunction *f;
  gpulease_status st = gl_sop_launch_function(s, r, &f);
  if (st != GPULEASE_OK) return st;
  st = build_args(s, r, NULL, f, n);
  if (st != GPULEASE_OK) return st;
  *fo = f;
  return GPULEASE_OK;
}

void gl_sop_launch_of(gl_wsession *s, const gl_launch_req *r, const gl_wfunction *f, size_t n,
                      gl_launch *l) {
  memset(l, 0, sizeof *l);
  l->kernel_name = f->name;
  memcpy(l->grid, r->grid, sizeof l->grid);
  memcpy(l->block, r->block, sizeof l->block);
  l->shared_mem_bytes = r->shared_mem_bytes;
  l->args = s->args.args;
  l->arg_sizes = s->args.sizes;
  l->arg_count = n;
  if (r->flags & GL_LAUNCH_EX_COOPERATIVE) l->flags |= GL_LAUNCH_F_COOPERATIVE;
  memcpy(l->cluster, r->cluster, sizeof l->cluster);
}

/* GPU_SUBMIT's run of l: input, kernel, output, on the backend's
 * synchronous path. */
static gpulease_status run_sync(gl_wsession *s, const gl_wfunction *f, const gl_launch *l,
                                gl_sop_sync *sync) {
  gl_backend *be = s->w->be;
  const gl_submit_req *req = sync->req;
  gpulease_status st;
  if (req->input_len > 0) {
    st = be->ops->write(be, req->input_offset, req->input, req->input_len, s->err, GL_WK_ERR_MAX);
    if (st != GPULEASE_OK) return st;
  }
  size_t out_len = (size_t)req->output_size;
  if (be->ops->launch_read) /* kernel and output with one wait */
    return be->ops->launch_read(be, f->fn, l, &sync->gpu_time_ns, req->output_offset, sync->out,
                                out_len, s->err, GL_WK_ERR_MAX);
  st = be->ops->launch(be, f->fn, l, &sync->gpu_time_ns, s->err, GL_WK_ERR_MAX);
  if (st == GPULEASE_OK && out_len > 0)
    st = be->ops->read(be, req->output_offset, sync->out, out_len, s->err, GL_WK_ERR_MAX);
  return st;
}

/* LAUNCH's queueing of l on the session's stream, answered. */
static gpulease_status run_queued(gl_wsession *s, uint16_t op, uint64_t seq, const gl_wfunction *f,
                                  const gl_launch *l, gl_job *job) {
  gl_wk *w = s->w;
  gpulease_status st;
  bool attrs = l->flags || l->cluster[0] || l->cluster[1] || l->cluster[2];
  if (w->be->ops->launch_runs_inline && attrs) {
    /* Launch attributes are checked by the backend's launch, GPU_SUBMIT's
     * check (emulated device: before the kernel runs): its refusal must be
     * this op's own answer, so the device runs it first. A fault while it
     * runs is put down to it as for LAUNCH, shown at the next SYNC. */
    st = w->be->ops->launch_async(w->be, s->stream, f->fn, l, s->err, GL_WK_ERR_MAX);
    if (st != GPULEASE_OK && !w->be->ops->context_lost(w->be)) {
      gl_sop_fail_from_backend(s, op, seq, st);
      gl_wk_job_error(w, job, op, st, s->err);
      return st;
    }
    gl_wk_job_ok(w, job, op);
    if (st != GPULEASE_OK) {
      gl_sop_after_backend(s);
      gl_sop_set_failure(s, op, seq, st, s->err);
    }
    return GPULEASE_OK;
  }
  if (w->be->ops->launch_runs_inline) {
    /* The device runs it now: "queued" is the truthful answer first. */
    gl_wk_job_ok(w, job, op);
    st = w->be->ops->launch_async(w->be, s->stream, f->fn, l, s->err, GL_WK_ERR_MAX);
    if (st != GPULEASE_OK) {
      gl_sop_after_backend(s);
      gl_sop_set_failure(s, op, seq, st, s->err);
    }
    return GPULEASE_OK;
  }
  st = w->be->ops->launch_async(w->be, s->stream, f->fn, l, s->err, GL_WK_ERR_MAX);
  GL_LAT(GL_LAT_W_DONE);
  if (st != GPULEASE_OK) {
    gl_sop_fail_from_backend(s, op, seq, st);
    gl_wk_job_error(w, job, op, st, s->err);
    return st;
  }
  if (!s->unsynced_launch_seq) s->unsynced_launch_seq = seq ? seq : 1;
  gl_wk_job_ok(w, job, op);
  return GPULEASE_OK;
}

gpulease_status gl_sop_launch(gl_wsession *s, uint16_t op, const gl_launch_req *r,
                              const gl_wfunction *f, gl_job *job, gl_sop_sync *sync) {
  size_t n = 0;
  gpulease_status st = gl_sop_check_dims(s, r);
  if (st == GPULEASE_OK) st = gl_sop_cover_local(s, f);
  if (st == GPULEASE_OK) st = build_args(s, r, sync ? sync->req : NULL, f, &n);
  if (st != GPULEASE_OK) {
    gl_sop_set_failure(s, op, r->s.seq, st, s->err);
    if (job) gl_wk_job_error(s->w, job, op, st, s->err);
    return st;
  }
  gl_launch l;
  gl_sop_launch_of(s, r, f, n, &l);
  if (job) return run_queued(s, op, r->s.seq, f, &l, job);
  GL_LAT(GL_LAT_W_DONE);
  st = run_sync(s, f, &l, sync);
  GL_LAT(GL_LAT_W_DONE);
  if (st != GPULEASE_OK) gl_sop_set_failure(s, op, r->s.seq, st, s->err);
  return st;
}

/* Runs LAUNCH or LAUNCH_EX and answers it. */
static void op_launch(gl_wsession *s, gl_job *job) {
  const uint16_t op = job->req.op;
  const gl_launch_req *r = &job->req.u.launch;
  gl_wfunction *f = NULL;
  gpulease_status st = find_function(s, r->function, &f);
  if (st != GPULEASE_OK) {
    gl_sop_set_failure(s, op, r->s.seq, st, s->err);
    gl_wk_job_error(s->w, job, op, st, s->err);
    return;
  }
  (void)gl_sop_launch(s, op, r, f, job, NULL);
}

/* ======================================================================
 * SYNC, KERNEL_OUTPUT, SESSION_CLOSE
 * ==================================================================== */

/* KERNEL_OUTPUT: after the session's earlier work, the lease's pending
 * kernel output; answered OK whatever the session's failure, as SYNC. */
static void op_kernel_output(gl_wsession *s, gl_job *job) {
  gl_wk *w = s->w;
  bool failed = false;
  if (!atomic_load(&w->p->lost))
    (void)gl_sop_wait_stream(s, GL_OP_KERNEL_OUTPUT, job->req.u.session.seq, &failed);
  gl_wk_kout_collect(w, NULL, 0);
  gl_response resp = {.op = GL_OP_KERNEL_OUTPUT, .status = GPULEASE_OK, .msg = ""};
  char *text = NULL;
  gl_wk_kout_take(w, &resp.u.kout, &text);
  gl_wk_job_reply(w, job, &resp);
  free(text);
}

static void op_sync(gl_wsession *s, gl_job *job) {
  gl_wk *w = s->w;
  const gl_sync_req *r = &job->req.u.sync;
  bool failed = false;
  (void)gl_sop_wait_stream(s, GL_OP_SYNC, r->s.seq, &failed);
  GL_LAT(GL_LAT_W_DONE);
  if (atomic_load(&w->p->lost)) {
    /* The session ends with the context: report, never clear. */
    uint16_t st, op;
    uint64_t seq;
    const char *fmsg;
    gl_session_failure_for_lost(s, &st, &op, &seq, &fmsg);
    char msg[2600];
    gl_session_ended_msg(msg, sizeof msg, s->id, op, seq, fmsg);
    if (r->ack_seq) {
      gl_wk_job_error(w, job, GL_OP_SYNC, (gpulease_status)st, msg);
      return;
    }
    gl_response resp = {.op = GL_OP_SYNC, .status = GPULEASE_OK, .msg = msg};
    resp.msg_len = (uint16_t)strlen(msg);
    resp.u.sync.error_status = st;
    resp.u.sync.error_op = op;
    resp.u.sync.error_seq = seq;
    gl_wk_job_reply(w, job, &resp);
    return;
  }
  gl_wk_kout_collect(w, NULL, 0); /* what the kernels printed is the lease's now */
  gl_response resp = {.op = GL_OP_SYNC, .status = GPULEASE_OK};
  resp.msg = s->f_status ? s->f_msg : "";
  resp.msg_len = (uint16_t)strlen(resp.msg);
  resp.u.sync.error_status = s->f_status;
  resp.u.sync.error_op = s->f_op;
  resp.u.sync.error_seq = s->f_seq;
  gl_wk_job_reply(w, job, &resp);
  /* ack_seq names the failed op; GL_SYNC_ACK_ANY acknowledges whatever
   * failure is pending (for tools that send ops with seq 0). */
  if (r->ack_seq && s->f_status && (r->ack_seq == s->f_seq || r->ack_seq == GL_SYNC_ACK_ANY)) {
    GL_DEBUG("worker: session %" PRIu64 ": failure of op %" PRIu64 " acknowledged", s->id,
             s->f_seq);
    gl_sop_clear_failure(s);
  }
}

void gl_session_release_all(gl_wsession *s) {
  gl_wk *w = s->w;
  bool lost = atomic_load(&w->p->lost);
  gl_sop_graphs_free(s); /* before the functions and modules they use */
  size_t pos = 0;
  uint64_t k;
  void *v;
  while (gl_hmap_next(&s->functions, &pos, &k, &v)) free(v);
  gl_hmap_free(&s->functions);
  pos = 0;
  while (gl_hmap_next(&s->modules, &pos, &k, &v)) {
    gl_wmodule *m = v;
    if (!lost) gl_modtab_release(w->modtab, m->module);
    free(m);
  }
  gl_hmap_free(&s->modules);
  pos = 0;
  while (gl_hmap_next(&s->buffers, &pos, &k, &v)) {
    gl_wbuffer *b = v;
    gl_suballoc_release(w->alloc, b->offset);
    free(b);
  }
  gl_hmap_free(&s->buffers);
  if (s->submit_modules) {
    if (lost) gl_module_cache_forget(s->submit_modules);
    else gl_module_cache_clear(s->submit_modules);
  }
  for (size_t i = 0; i < GL_WIRE_MAX_EVENTS; i++) {
    if (s->events[i] && !lost) w->be->ops->event_destroy(w->be, s->events[i]);
    s->events[i] = NULL;
  }
  free(s->burst_args);
  free(s->burst_ptrs);
  free(s->burst_sizes);
  free(s->burst_raw);
  free(s->burst_fns);
  free(s->burst_ls);
  s->burst_raw = NULL;
  s->burst_fns = NULL;
  s->burst_ls = NULL;
  s->burst_raw_len = s->burst_raw_cap = s->burst_n_cap = 0;
  s->burst_args = NULL;
  s->burst_ptrs = NULL;
  s->burst_sizes = NULL;
  s->burst_cap = s->burst_ptr_cap = 0;
  if (s->stream && !lost) w->be->ops->stream_destroy(w->be, s->stream);
  s->stream = NULL;
}

static void op_close(gl_wsession *s, gl_job *job) {
  gl_wk *w = s->w;
  if (!atomic_load(&w->p->lost)) w->be->ops->stream_sync(w->be, s->stream, s->err, GL_WK_ERR_MAX);
  gl_sop_after_backend(s);
  gl_session_release_all(s);
  GL_DEBUG("worker: session %" PRIu64 " closed", s->id);
  pthread_mutex_lock(&w->sess_mu);
  w->session_count--;
  pthread_mutex_unlock(&w->sess_mu);
  gl_wk_job_ok(w, job, GL_OP_SESSION_CLOSE);
  gl_job_free(job);
  atomic_store(&s->closed, true); /* the main thread may free s from here on */
}

/* ======================================================================
 * Dispatch on the lane
 * ==================================================================== */

void gl_session_fail_fast_msg(char *buf, size_t len, uint16_t op, uint64_t seq,
                              const char *msg) {
  if (seq)
    snprintf(buf, len, "op %" PRIu64 " (%s) failed earlier: %s; SYNC with ack_seq %" PRIu64
             " to go on", seq, op ? gl_op_name(op) : "missing", msg, seq);
  else
    snprintf(buf, len, "an earlier %s sent with seq 0 failed: %s; SYNC with ack_seq "
             "0xffffffffffffffff (any) to go on", op ? gl_op_name(op) : "op", msg);
}

void gl_session_ended_msg(char *buf, size_t len, uint64_t session_id, uint16_t op, uint64_t seq,
                          const char *msg) {
  char what[64];
  if (seq) snprintf(what, sizeof what, "op %" PRIu64 " (%s)", seq, op ? gl_op_name(op) : "missing");
  else snprintf(what, sizeof what, "%s", op ? gl_op_name(op) : "the device");
  snprintf(buf, len, "session %" PRIu64 " ended when the lease's CUDA context was lost: %s failed: "
           "%s; close it (SESSION_CLOSE) and open a new session", session_id, what, msg);
}

/* A GL_JOB_GAP: the seqs gap_first..gap_last never came. */
static void run_gap(gl_wsession *s, const gl_job *job) {
  char msg[512];
  if (job->gap_first == job->gap_last)
    snprintf(msg, sizeof msg, "no op with seq %" PRIu64 " arrived within %u ms while later ops "
             "waited for it; the seq counts as used", job->gap_first, s->w->seq_timeout_ms);
  else
    snprintf(msg, sizeof msg, "no ops with seqs %" PRIu64 "..%" PRIu64 " arrived within %u ms "
             "while later ops waited for them; those seqs count as used",
             job->gap_first, job->gap_last, s->w->seq_timeout_ms);
  gl_sop_set_failure(s, 0, job->gap_first, GPULEASE_MISSING_SEQ, msg);
}

void gl_session_run(void *ctx, gl_job *job) {
  gl_wsession *s = ctx;
  gl_wk *w = s->w;
  if (atomic_load(&w->p->lost)) {
    /* The session ends with the context: the daemon answers this op from
     * the worker's last notice once the worker has exited. */
    gl_job_free(job);
    return;
  }
  if (job->kind == GL_JOB_GAP) {
    run_gap(s, job);
    gl_job_free(job);
    return;
  }
  /* The daemon's arena ops stand for the client's MEM_WRITE and MEM_READ:
   * answered, and remembered as a failure, under those. */
  const uint16_t wire_op = job->req.op;
  const uint16_t op = wire_op == GL_OP_MEM_WRITE_ARENA  ? GL_OP_MEM_WRITE
                      : wire_op == GL_OP_MEM_READ_ARENA ? GL_OP_MEM_READ
                                                        : wire_op;
  const gl_session_ref *ref = gl_request_session(&job->req);
  const uint64_t seq = ref->seq;
  s->err[0] = 0;
  if (op == GL_OP_SESSION_CLOSE) {
    op_close(s, job); /* frees job */
    return;
  }
  if (op == GL_OP_SYNC) {
    op_sync(s, job);
    gl_job_free(job);
    return;
  }
  if (op == GL_OP_KERNEL_OUTPUT) {
    op_kernel_output(s, job);
    gl_job_free(job);
    return;
  }
  if (s->f_status != GPULEASE_OK) { /* fail fast */
    char msg[2600];
    gl_session_fail_fast_msg(msg, sizeof msg, s->f_op, s->f_seq, s->f_msg);
    gl_wk_job_error(w, job, op, (gpulease_status)s->f_status, msg);
    gl_job_free(job);
    return;
  }
  if (s->capture && gl_sop_graph_capture(s, job)) return;
  if (op >= GL_OP_GRAPH_BEGIN && op <= GL_OP_GRAPH_DESTROY) {
    gl_sop_graph(s, job);
    return;
  }
  if (op == GL_OP_LAUNCH || op == GL_OP_LAUNCH_EX) {
    op_launch(s, job);
    gl_job_free(job);
    return;
  }
  if (op == GL_OP_BURST) {
    gl_sop_burst(s, job);
    gl_job_free(job);
    return;
  }
  gl_response resp;
  memset(&resp, 0, sizeof resp);
  resp.op = wire_op; /* an arena op's OK result is empty, as MEM_*_SHM's */
  resp.status = GPULEASE_OK;
  resp.msg = "";
  uint8_t *data = NULL;
  bool failed = false; /* set_failure already done (waits) */
  gpulease_status st;
  switch (wire_op) {
  case GL_OP_MEM_ALLOC: st = op_alloc(s, &job->req.u.mem_alloc, &resp); break;
  case GL_OP_MEM_FREE: st = op_free(s, &job->req.u.handle, &failed); break;
  case GL_OP_MEM_WRITE: st = op_write(s, &job->req.u.mem_write); break;
  case GL_OP_MEM_READ:
    st = op_read(s, &job->req.u.mem_read, &data);
    if (st == GPULEASE_OK) {
      resp.u.mem_read.data = data;
      resp.u.mem_read.data_len = job->req.u.mem_read.size_bytes;
    }
    break;
  case GL_OP_MEM_COPY: st = op_copy(s, &job->req.u.mem_copy); break;
  case GL_OP_MEM_WRITE_SHM:
  case GL_OP_MEM_READ_SHM: st = op_shm(s, op, &job->req.u.mem_shm, &failed); break;
  case GL_OP_MEM_WRITE_ARENA:
  case GL_OP_MEM_READ_ARENA: st = op_shm(s, op, &job->req.u.mem_shm, &failed); break;
  case GL_OP_MEMSET: st = op_memset(s, &job->req.u.memset); break;
  case GL_OP_TENSORMAP_ENCODE: st = gl_sop_tensormap(s, &job->req.u.tmap, &resp); break;
  case GL_OP_MODULE_LOAD: st = op_module_load(s, &job->req.u.module_load, &resp); break;
  case GL_OP_MODULE_UNLOAD: st = op_module_unload(s, &job->req.u.handle, &failed); break;
  case GL_OP_FUNC_INFO: st = op_func_info(s, &job->req.u.func_info, &resp); break;
  case GL_OP_EVENT_RECORD: st = gl_sop_event_record(s, &job->req.u.event); break;
  case GL_OP_EVENT_ELAPSED:
    st = gl_sop_event_elapsed(s, &job->req.u.event, &resp, &failed);
    break;
  default:
    st = gl_sop_errf(s, GPULEASE_UNSUPPORTED, "op 0x%04x is not a session op", op);
    break;
  }
  if (st != GPULEASE_OK) {
    if (!failed) gl_sop_fail_from_backend(s, op, seq, st);
    gl_wk_job_error(w, job, op, st, s->err);
  } else {
    gl_wk_job_reply(w, job, &resp);
  }
  free(data);
  gl_job_free(job);
}
