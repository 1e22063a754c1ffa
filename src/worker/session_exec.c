/*
 * session_exec.c - the session ops beyond LAUNCH: BURST (many launches in
 * one op, through the backend's burst_async, a CUDA graph), the events
 * (EVENT_RECORD, EVENT_ELAPSED) and the graphs (GRAPH_BEGIN .. GRAPH_DESTROY:
 * ops recorded between GRAPH_BEGIN and GRAPH_END, built by the backend's
 * graph_build or replayed op by op). docs/protocol.md, "LAUNCH_EX" to "Graphs".
 *
 * It stands on wk_types.h and wk_reply.h, sharing session_ops.h with
 * session_ops.c.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/lat.h"
#include "worker/session.h"
#include "worker/session_ops.h"
#include "worker/wk_reply.h"

/* ======================================================================
 * BURST
 * ==================================================================== */

/* Room for a BURST of `params` parameters in all and `bytes` of values. */
static gpulease_status burst_room(gl_wsession *s, size_t params, size_t bytes) {
  if (bytes > s->burst_cap) {
    uint8_t *p = realloc(s->burst_args, bytes);
    if (!p) return gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory for a BURST");
    s->burst_args = p;
    s->burst_cap = bytes;
  }
  if (params > s->burst_ptr_cap) {
    void **q = realloc(s->burst_ptrs, params * sizeof *q);
    if (q) s->burst_ptrs = q;
    size_t *z = q ? realloc(s->burst_sizes, params * sizeof *z) : NULL;
    if (z) s->burst_sizes = z;
    if (!q || !z) return gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory for a BURST");
    s->burst_ptr_cap = params;
  }
  return GPULEASE_OK;
}

/* Checks every launch of the BURST and packs its parameters (8-byte
 * aligned) into the session's burst area: fns[i] and ls[i] are launch i.
 * A BURST needs the kernels' parameter sizes (the packed values are all the
 * driver may read). *bad receives the failing launch's index. */
gpulease_status gl_sop_prepare_burst(gl_wsession *s, const gl_burst_req *b, void **fns,
                                     gl_launch *ls, size_t *bad) {
  s->burst_raw_len = 0; /* burst_args is rewritten: the last BURST is not kept */
  /* One pass: room for the most parameters the list can hold (each takes
   * at least 3 bytes encoded, and its value no more than its encoding plus
   * the slot's padding). */
  size_t max_params = b->launches_len / 3 + 1;
  gpulease_status st = burst_room(s, max_params, b->launches_len + 8 * max_params);
  if (st != GPULEASE_OK) return st;
  size_t used = 0, k0 = 0, i = 0, pos = 0;
  gl_launch_req r;
  /* Consecutive launches mostly repeat a function and buffers. */
  uint64_t last_fn = 0, last_buf = 0;
  gl_wfunction *f = NULL;
  gl_wbuffer *buf = NULL;
  while (gl_burst_next(b, &pos, &r)) {
    *bad = i;
    if (r.function != last_fn || !f) {
      st = gl_sop_launch_function(s, &r, &f);
      if (st != GPULEASE_OK) return st;
      if (!f->sizes_known)
        return gl_sop_errf(s, GPULEASE_UNSUPPORTED,
                           "kernel '%s': a BURST needs the kernel's parameter sizes, which this "
                           "driver does not report (CUDA 12.4+); use LAUNCH",
                           f->name);
      last_fn = r.function;
    } else if ((st = gl_sop_check_dims(s, &r)) != GPULEASE_OK) {
      return st;
    }
    size_t ppos = 0, k = 0;
    gl_launch_param p;
    while (gl_launch_param_next(&r, &ppos, &p)) {
      uint8_t *slot = s->burst_args + used;
      if (p.kind == GL_LAUNCH_PARAM_BUFFER) {
        if (p.buffer != last_buf || !buf) {
          st = gl_sop_get_buffer(s, p.buffer, &buf);
          if (st != GPULEASE_OK) return st;
          last_buf = p.buffer;
        }
        if (p.offset > buf->size)
          return gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT,
                             "parameter %zu: offset %" PRIu64
                             " is past the end of buffer 0x%016" PRIx64 " (%" PRIu64 " bytes)",
                             k, p.offset, p.buffer, buf->size);
        uint64_t ptr = s->w->region_base + buf->offset + p.offset;
        memcpy(slot, &ptr, sizeof ptr);
        s->burst_sizes[k0 + k] = sizeof ptr;
      } else {
        memcpy(slot, p.value, p.size);
        s->burst_sizes[k0 + k] = p.size;
      }
      s->burst_ptrs[k0 + k] = slot;
      used += (s->burst_sizes[k0 + k] + 7u) & ~(size_t)7u;
      k++;
    }
    st = gl_sop_check_param_sizes(s, f, s->burst_sizes + k0, k);
    if (st != GPULEASE_OK) return st;
    fns[i] = f->fn;
    gl_launch *l = &ls[i];
    memset(l, 0, sizeof *l);
    l->kernel_name = f->name;
    memcpy(l->grid, r.grid, sizeof l->grid);
    memcpy(l->block, r.block, sizeof l->block);
    l->shared_mem_bytes = r.shared_mem_bytes;
    l->args = s->burst_ptrs + k0;
    l->arg_sizes = s->burst_sizes + k0;
    l->arg_count = k;
    k0 += k;
    i++;
  }
  return GPULEASE_OK;
}

/* Queues the prepared launches: through the backend's burst (a CUDA
 * graph), or one by one. */
static gpulease_status queue_burst(gl_wsession *s, void **fns, const gl_launch *ls, size_t n,
                                   bool same_as_last) {
  gl_wk *w = s->w;
  if (w->be->ops->burst_async)
    return w->be->ops->burst_async(w->be, s->stream, fns, ls, n, same_as_last, s->err,
                                   GL_WK_ERR_MAX);
  for (size_t i = 0; i < n; i++) {
    gpulease_status st =
        w->be->ops->launch_async(w->be, s->stream, fns[i], &ls[i], s->err, GL_WK_ERR_MAX);
    if (st != GPULEASE_OK) {
      char msg[GL_WK_ERR_MAX];
      snprintf(msg, sizeof msg, "launch %zu of the BURST: %s", i, s->err);
      snprintf(s->err, GL_WK_ERR_MAX, "%s", msg);
      return st;
    }
  }
  return GPULEASE_OK;
}

/* Runs BURST and answers it: n launches back to back, answered once
 * queued (on the emulated device, which runs them inline, first). */
/* The arrays a BURST of n launches is prepared into (kept, grown). */
static gpulease_status burst_arrays(gl_wsession *s, size_t n) {
  if (n <= s->burst_n_cap) return GPULEASE_OK;
  void **f = realloc(s->burst_fns, n * sizeof *f);
  if (f) s->burst_fns = f;
  gl_launch *l = f ? realloc(s->burst_ls, n * sizeof *l) : NULL;
  if (l) s->burst_ls = l;
  if (!f || !l) return gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory for a BURST");
  s->burst_n_cap = n;
  return GPULEASE_OK;
}

/* Checks and prepares b into s->burst_fns and s->burst_ls, or finds it
 * prepared already: the same bytes as the last BURST (so checked then),
 * with no buffer or module gone since (a loop that bursts the same
 * launches each step): *again is then true. */
static gpulease_status burst_prepared(gl_wsession *s, gl_burst_req *b, size_t *bad,
                                      bool *again) {
  *again = false;
  if (s->burst_raw_len && s->burst_raw_len == b->launches_len &&
      s->burst_raw_gen == s->handles_gen && s->burst_n_cap >= b->count &&
      s->burst_raw_count == b->count && memcmp(s->burst_raw, b->launches, b->launches_len) == 0) {
    *again = true;
    return GPULEASE_OK;
  }
  char why[GL_WK_ERR_MAX];
  gpulease_status st = gl_burst_check(b, why, sizeof why);
  if (st != GPULEASE_OK) {
    *bad = SIZE_MAX; /* the message names the launch */
    snprintf(s->err, GL_WK_ERR_MAX, "%s", why);
    return st;
  }
  st = burst_arrays(s, b->count);
  if (st == GPULEASE_OK) st = gl_sop_prepare_burst(s, b, s->burst_fns, s->burst_ls, bad);
  if (st != GPULEASE_OK) return st;
  if (b->launches_len > s->burst_raw_cap) {
    uint8_t *p = realloc(s->burst_raw, b->launches_len);
    if (!p) return GPULEASE_OK; /* prepared, just not kept */
    s->burst_raw = p;
    s->burst_raw_cap = b->launches_len;
  }
  memcpy(s->burst_raw, b->launches, b->launches_len);
  s->burst_raw_len = b->launches_len;
  s->burst_raw_count = b->count;
  s->burst_raw_gen = s->handles_gen;
  return GPULEASE_OK;
}

/* Runs BURST and answers it: n launches back to back, answered once
 * queued (on the emulated device, which runs them inline, first). */
void gl_sop_burst(gl_wsession *s, gl_job *job) {
  gl_wk *w = s->w;
  gl_burst_req *b = &job->req.u.burst;
  size_t n = b->count, bad = 0;
  bool again = false;
  gpulease_status st = burst_prepared(s, b, &bad, &again);
  /* The backend ran this very burst last, unless something else was
   * prepared or a burst failed since. */
  bool same_as_last = again && s->burst_last_ran;
  s->burst_last_ran = false;
  if (st != GPULEASE_OK) {
    char msg[GL_WK_ERR_MAX];
    if (bad == SIZE_MAX) snprintf(msg, sizeof msg, "%s", s->err);
    else snprintf(msg, sizeof msg, "launch %zu of the BURST: %s", bad, s->err);
    snprintf(s->err, GL_WK_ERR_MAX, "%s", msg);
    gl_sop_set_failure(s, GL_OP_BURST, b->s.seq, st, s->err);
    gl_wk_job_error(w, job, GL_OP_BURST, st, s->err);
    return;
  }
  void **fns = s->burst_fns;
  const gl_launch *ls = s->burst_ls;
  if (w->be->ops->launch_runs_inline) {
    gl_wk_job_ok(w, job, GL_OP_BURST);
    st = queue_burst(s, fns, ls, n, false);
    if (st != GPULEASE_OK) {
      gl_sop_after_backend(s);
      gl_sop_set_failure(s, GL_OP_BURST, b->s.seq, st, s->err);
    }
    return;
  }
  st = queue_burst(s, fns, ls, n, same_as_last);
  GL_LAT(GL_LAT_W_DONE);
  if (st != GPULEASE_OK) {
    gl_sop_fail_from_backend(s, GL_OP_BURST, b->s.seq, st);
    gl_wk_job_error(w, job, GL_OP_BURST, st, s->err);
    return;
  }
  s->burst_last_ran = true;
  if (!s->unsynced_launch_seq) s->unsynced_launch_seq = b->s.seq ? b->s.seq : 1;
  gl_wk_job_ok(w, job, GL_OP_BURST);
}

/* ======================================================================
 * Events
 * ==================================================================== */

static gpulease_status need_events(gl_wsession *s) {
  const gl_backend_ops *o = s->w->be->ops;
  if (o->event_record && o->event_elapsed && o->event_destroy) return GPULEASE_OK;
  return gl_sop_errf(s, GPULEASE_UNSUPPORTED, "the %s device has no events", o->name);
}

gpulease_status gl_sop_event_record(gl_wsession *s, const gl_event_req *r) {
  gpulease_status st = need_events(s);
  if (st != GPULEASE_OK) return st;
  gl_wk *w = s->w;
  return w->be->ops->event_record(w->be, s->stream, &s->events[r->event], s->err,
                                  GL_WK_ERR_MAX);
}

gpulease_status gl_sop_event_elapsed(gl_wsession *s, const gl_event_req *r, gl_response *resp,
                                     bool *failed) {
  gpulease_status st = need_events(s);
  if (st != GPULEASE_OK) return st;
  uint16_t missing = !s->events[r->event] ? r->event : r->end_event;
  if (!s->events[r->event] || !s->events[r->end_event])
    return gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT,
                "event %u has not been recorded in session %" PRIu64 " (EVENT_RECORD first)",
                missing, s->id);
  gl_wk *w = s->w;
  st = w->be->ops->event_elapsed(w->be, s->events[r->event], s->events[r->end_event],
                                 &resp->u.elapsed_ns, s->err, GL_WK_ERR_MAX);
  if (st != GPULEASE_OK) {
    gl_sop_fail_from_backend(s, GL_OP_EVENT_ELAPSED, r->s.seq, st);
    *failed = true;
  }
  return st;
}

/* ======================================================================
 * Graphs
 *
 * Between GRAPH_BEGIN and GRAPH_END the session's launches, memsets and
 * copies are checked as usual and recorded, not run: the recipe, each
 * kernel launch with a copy of its arguments. GRAPH_END hands the recipe
 * to the backend's graph_build (CUDA: stream capture into a graph, then
 * instantiated); a backend without one (the emulated device) has the
 * recipe replayed op by op at each GRAPH_LAUNCH. Ops that move data to or
 * from the host or wait (MEM_WRITE, MEM_READ, MEM_FREE, MODULE_UNLOAD,
 * events, other graph ops) are refused while recording, and the refusal
 * abandons the recording.
 * ==================================================================== */

typedef struct gl_wgraph_op {
  gl_graph_op op;        /* op.launch.args/arg_sizes point at args/sizes */
  gl_wfunction *f;       /* KERNEL */
  uint8_t *bytes;        /* KERNEL: the argument values, 8-byte slots */
  void **args;
  size_t *sizes;
} gl_wgraph_op;

typedef struct gl_wgraph {
  gl_wgraph_op *ops;
  size_t n, cap;
  uint32_t kernels;
  uint64_t while_flag;   /* region offset of the loop's u32, or GL_GRAPH_NO_LOOP */
  void *graph;           /* the backend's, or NULL: replayed */
} gl_wgraph;

static void graph_free(gl_wsession *s, gl_wgraph *g) {
  gl_wk *w = s->w;
  bool lost = atomic_load(&w->p->lost);
  if (g->graph && !lost) w->be->ops->graph_destroy(w->be, g->graph);
  for (size_t i = 0; i < g->n; i++) {
    gl_wgraph_op *o = &g->ops[i];
    if (o->f) o->f->mod->graph_refs--;
    free(o->bytes);
    free(o->args);
    free(o->sizes);
  }
  free(g->ops);
  free(g);
}

void gl_sop_graphs_free(gl_wsession *s) {
  if (s->capture) graph_free(s, s->capture);
  s->capture = NULL;
  size_t pos = 0;
  uint64_t k;
  void *v;
  while (gl_hmap_next(&s->graphs, &pos, &k, &v)) graph_free(s, v);
  gl_hmap_free(&s->graphs);
  gl_hmap_init(&s->graphs);
}

static gl_wgraph_op *graph_add(gl_wsession *s, gl_wgraph *g) {
  if (g->n == g->cap) {
    size_t cap = g->cap ? 2 * g->cap : 16;
    gl_wgraph_op *p = realloc(g->ops, cap * sizeof *p);
    if (!p) return NULL;
    g->ops = p;
    g->cap = cap;
  }
  gl_wgraph_op *o = &g->ops[g->n++];
  memset(o, 0, sizeof *o);
  (void)s;
  return o;
}

/* Records launch l of f (its args exactly the kernel's parameters). */
static gpulease_status record_kernel(gl_wsession *s, gl_wgraph *g, gl_wfunction *f,
                                     const gl_launch *l) {
  if (!f->sizes_known)
    return gl_sop_errf(s, GPULEASE_UNSUPPORTED,
                       "kernel '%s': recording a graph needs the kernel's parameter sizes, which "
                       "this driver does not report (CUDA 12.4+)",
                       f->name);
  size_t bytes = 0;
  for (size_t i = 0; i < l->arg_count; i++) bytes += (l->arg_sizes[i] + 7u) & ~(size_t)7u;
  gl_wgraph_op *o = graph_add(s, g);
  if (!o) return gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory recording a graph");
  size_t n = l->arg_count ? l->arg_count : 1;
  o->bytes = malloc(bytes ? bytes : 1);
  o->args = malloc(n * sizeof *o->args);
  o->sizes = malloc(n * sizeof *o->sizes);
  if (!o->bytes || !o->args || !o->sizes) {
    g->n--;
    free(o->bytes);
    free(o->args);
    free(o->sizes);
    return gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory recording a graph");
  }
  size_t off = 0;
  for (size_t i = 0; i < l->arg_count; i++) {
    memcpy(o->bytes + off, l->args[i], l->arg_sizes[i]);
    o->args[i] = o->bytes + off;
    o->sizes[i] = l->arg_sizes[i];
    off += (l->arg_sizes[i] + 7u) & ~(size_t)7u;
  }
  o->f = f;
  f->mod->graph_refs++;
  o->op.kind = GL_GRAPH_KERNEL;
  o->op.fn = f->fn;
  o->op.launch = *l;
  o->op.launch.kernel_name = f->name;
  o->op.launch.args = o->args;
  o->op.launch.arg_sizes = o->sizes;
  g->kernels++;
  return GPULEASE_OK;
}

/* A recorded op of the stream (launch, memset, copy); st and s->err say
 * why it was refused. */
static gpulease_status record_op(gl_wsession *s, gl_job *job) {
  gl_wgraph *g = s->capture;
  const uint16_t op = job->req.op;
  gpulease_status st;
  switch (op) {
  case GL_OP_LAUNCH:
  case GL_OP_LAUNCH_EX: {
    const gl_launch_req *r = &job->req.u.launch;
    gl_wfunction *f;
    size_t n;
    st = gl_sop_prepare_launch(s, r, &f, &n);
    if (st != GPULEASE_OK) return st;
    gl_launch l;
    gl_sop_launch_of(s, r, f, n, &l);
    return record_kernel(s, g, f, &l);
  }
  case GL_OP_BURST: {
    gl_burst_req *b = &job->req.u.burst;
    char why[GL_WK_ERR_MAX];
    st = gl_burst_check(b, why, sizeof why);
    if (st != GPULEASE_OK) return gl_sop_errf(s, st, "%s", why);
    size_t n = b->count, bad = 0;
    void **fns = malloc(n * sizeof *fns);
    gl_launch *ls = malloc(n * sizeof *ls);
    st = fns && ls ? gl_sop_prepare_burst(s, b, fns, ls, &bad)
                   : gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory for a BURST");
    size_t pos = 0, i = 0;
    gl_launch_req r;
    while (st == GPULEASE_OK && gl_burst_next(b, &pos, &r)) {
      gl_wfunction *f = gl_hmap_get(&s->functions, r.function);
      st = record_kernel(s, g, f, &ls[i++]);
    }
    free(fns);
    free(ls);
    return st;
  }
  case GL_OP_MEMSET: {
    const gl_memset_req *r = &job->req.u.memset;
    uint64_t off;
    st = gl_sop_memset_check(s, r, &off);
    if (st != GPULEASE_OK) return st;
    gl_wgraph_op *o = graph_add(s, g);
    if (!o) return gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory recording a graph");
    o->op.kind = GL_GRAPH_MEMSET;
    o->op.offset = off;
    o->op.element_size = r->element_size;
    o->op.value = r->value;
    o->op.count = r->count;
    return GPULEASE_OK;
  }
  case GL_OP_MEM_COPY: {
    const gl_mem_copy_req *r = &job->req.u.mem_copy;
    uint64_t dst, src;
    st = gl_sop_copy_check(s, r, &dst, &src);
    if (st != GPULEASE_OK) return st;
    gl_wgraph_op *o = graph_add(s, g);
    if (!o) return gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory recording a graph");
    o->op.kind = GL_GRAPH_COPY;
    o->op.offset = dst;
    o->op.src_offset = src;
    o->op.count = r->size_bytes;
    return GPULEASE_OK;
  }
  default:
    return gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT,
                       "%s is not allowed while recording a graph (GRAPH_BEGIN .. GRAPH_END "
                       "record launches, bursts, memsets and copies); the recording is dropped",
                       gl_op_name(op));
  }
}

bool gl_sop_graph_capture(gl_wsession *s, gl_job *job) {
  const uint16_t op = job->req.op;
  switch (op) {
  case GL_OP_MEM_ALLOC:
  case GL_OP_MODULE_LOAD:
  case GL_OP_FUNC_INFO:
  case GL_OP_TENSORMAP_ENCODE:
  case GL_OP_GRAPH_END:
    return false; /* not stream ops: as usual (GRAPH_END ends it) */
  default:
    break;
  }
  const uint64_t seq = gl_request_session(&job->req)->seq;
  gpulease_status st = record_op(s, job);
  if (st == GPULEASE_OK) {
    gl_wk_job_ok(s->w, job, op);
  } else {
    graph_free(s, s->capture);
    s->capture = NULL;
    gl_sop_set_failure(s, op, seq, st, s->err);
    gl_wk_job_error(s->w, job, op, st, s->err);
  }
  gl_job_free(job);
  return true;
}

static gl_wgraph *get_graph(gl_wsession *s, uint64_t h) {
  gl_wgraph *g = gl_hmap_get(&s->graphs, h);
  if (!g)
    gl_sop_errf(s, GPULEASE_INVALID_HANDLE,
                "0x%016" PRIx64 " is not a graph of session %" PRIu64
                " (never returned by GRAPH_END here, destroyed, or another session's)",
                h, s->id);
  return g;
}

static gpulease_status graph_begin(gl_wsession *s, const gl_graph_begin_req *r) {
  uint64_t flag = GL_GRAPH_NO_LOOP;
  if (r->flags & GL_GRAPH_F_WHILE) {
    gl_wbuffer *b;
    gpulease_status st = gl_sop_get_buffer(s, r->flag_buffer, &b);
    if (st == GPULEASE_OK) st = gl_sop_in_buffer(s, b, r->flag_buffer, r->flag_offset, 4);
    if (st != GPULEASE_OK) return st;
    if (r->flag_offset % 4)
      return gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT,
                         "the WHILE flag's offset %" PRIu64 " is not 4-byte aligned",
                         r->flag_offset);
    flag = b->offset + r->flag_offset;
  }
  if (s->graphs.count >= GL_WS_MAX_GRAPHS)
    return gl_sop_errf(s, GPULEASE_CAPACITY_EXCEEDED, "session %" PRIu64 " already has %d graphs",
                       s->id, GL_WS_MAX_GRAPHS);
  s->capture = calloc(1, sizeof *s->capture);
  if (!s->capture) return gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory");
  s->capture->while_flag = flag;
  return GPULEASE_OK;
}

static gpulease_status graph_end(gl_wsession *s, gl_response *resp) {
  gl_wgraph *g = s->capture;
  if (!g) return gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT, "no graph is being recorded");
  s->capture = NULL;
  gpulease_status st = GPULEASE_OK;
  if (g->n == 0)
    st = gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT,
                     "nothing was recorded between GRAPH_BEGIN and GRAPH_END");
  gl_wk *w = s->w;
  if (st == GPULEASE_OK && w->be->ops->graph_build) {
    gl_graph_op *ops = malloc(g->n * sizeof *ops);
    if (!ops) {
      st = gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory");
    } else {
      for (size_t i = 0; i < g->n; i++) ops[i] = g->ops[i].op;
      st = w->be->ops->graph_build(w->be, ops, g->n, g->while_flag, &g->graph, s->err,
                                   GL_WK_ERR_MAX);
      free(ops);
      gl_sop_after_backend(s);
    }
  }
  uint64_t h = 0;
  if (st == GPULEASE_OK && !(h = gl_sop_put_handle(s, &s->graphs, GL_HANDLE_GRAPH, g)))
    st = gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory");
  if (st != GPULEASE_OK) {
    graph_free(s, g);
    return st;
  }
  resp->u.graph_end.graph = h;
  resp->u.graph_end.kernel_nodes = g->kernels;
  resp->u.graph_end.ops = (uint32_t)g->n;
  return GPULEASE_OK;
}

/* A replay without the backend's graphs: the recipe, op by op (and, for
 * a loop, again while the flag is not 0). */
static gpulease_status graph_replay(gl_wsession *s, const gl_wgraph *g) {
  gl_wk *w = s->w;
  const gl_backend_ops *o = w->be->ops;
  for (;;) {
    for (size_t i = 0; i < g->n; i++) {
      const gl_graph_op *op = &g->ops[i].op;
      gpulease_status st;
      if (op->kind == GL_GRAPH_KERNEL)
        st = o->launch_async(w->be, s->stream, op->fn, &op->launch, s->err, GL_WK_ERR_MAX);
      else if (op->kind == GL_GRAPH_MEMSET)
        st = o->memset_async(w->be, s->stream, op->offset, op->element_size, op->value,
                             (size_t)op->count, s->err, GL_WK_ERR_MAX);
      else
        st = o->copy_async(w->be, s->stream, op->offset, op->src_offset, (size_t)op->count,
                           s->err, GL_WK_ERR_MAX);
      if (st != GPULEASE_OK) {
        char msg[GL_WK_ERR_MAX];
        snprintf(msg, sizeof msg, "op %zu of the graph: %s", i, s->err);
        snprintf(s->err, GL_WK_ERR_MAX, "%s", msg);
        return st;
      }
    }
    if (g->while_flag == GL_GRAPH_NO_LOOP) return GPULEASE_OK;
    uint32_t flag = 0;
    gpulease_status st =
        o->read_sync(w->be, s->stream, g->while_flag, &flag, sizeof flag, s->err, GL_WK_ERR_MAX);
    if (st != GPULEASE_OK) return st;
    if (flag == 0) return GPULEASE_OK;
  }
}

static void graph_launch(gl_wsession *s, gl_job *job) {
  gl_wk *w = s->w;
  const gl_graph_req *r = &job->req.u.graph;
  gl_wgraph *g = get_graph(s, r->graph);
  gpulease_status st = g ? GPULEASE_OK : GPULEASE_INVALID_HANDLE;
  if (st != GPULEASE_OK) {
    gl_sop_set_failure(s, GL_OP_GRAPH_LAUNCH, r->s.seq, st, s->err);
    gl_wk_job_error(w, job, GL_OP_GRAPH_LAUNCH, st, s->err);
    return;
  }
  if (!g->graph && w->be->ops->launch_runs_inline) {
    gl_wk_job_ok(w, job, GL_OP_GRAPH_LAUNCH); /* "queued", then it runs */
    st = graph_replay(s, g);
    if (st != GPULEASE_OK) {
      gl_sop_after_backend(s);
      gl_sop_set_failure(s, GL_OP_GRAPH_LAUNCH, r->s.seq, st, s->err);
    }
    return;
  }
  st = g->graph ? w->be->ops->graph_launch(w->be, s->stream, g->graph, s->err, GL_WK_ERR_MAX)
                : graph_replay(s, g);
  if (st != GPULEASE_OK) {
    gl_sop_fail_from_backend(s, GL_OP_GRAPH_LAUNCH, r->s.seq, st);
    gl_wk_job_error(w, job, GL_OP_GRAPH_LAUNCH, st, s->err);
    return;
  }
  if (!s->unsynced_launch_seq) s->unsynced_launch_seq = r->s.seq ? r->s.seq : 1;
  gl_wk_job_ok(w, job, GL_OP_GRAPH_LAUNCH);
}

/* GRAPH_SET_ARGS: kernel node `node` gets new argument values. */
static gpulease_status graph_set_args(gl_wsession *s, const gl_graph_req *r) {
  gl_wgraph *g = get_graph(s, r->graph);
  if (!g) return GPULEASE_INVALID_HANDLE;
  if (r->node >= g->kernels)
    return gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT,
                       "node %u: the graph has %u kernel nodes (0..%u)", r->node, g->kernels,
                       g->kernels ? g->kernels - 1 : 0);
  gl_wgraph_op *o = NULL;
  for (size_t i = 0, k = 0; i < g->n; i++)
    if (g->ops[i].op.kind == GL_GRAPH_KERNEL && k++ == r->node) o = &g->ops[i];
  /* The node's own dimensions, the new values: LAUNCH's checks. */
  gl_launch_req l = r->args;
  l.function = o->f->handle;
  memcpy(l.grid, o->op.launch.grid, sizeof l.grid);
  memcpy(l.block, o->op.launch.block, sizeof l.block);
  gl_wfunction *f;
  size_t n;
  gpulease_status st = gl_sop_prepare_launch(s, &l, &f, &n);
  if (st != GPULEASE_OK) return st;
  for (size_t i = 0; i < n; i++) memcpy(o->args[i], s->args.args[i], o->sizes[i]);
  gl_wk *w = s->w;
  if (g->graph) {
    st = w->be->ops->graph_set_args(w->be, g->graph, r->node, &o->op.launch, s->err,
                                    GL_WK_ERR_MAX);
    gl_sop_after_backend(s);
  }
  return st;
}

static gpulease_status graph_destroy(gl_wsession *s, const gl_graph_req *r, bool *failed) {
  gl_wgraph *g = get_graph(s, r->graph);
  if (!g) return GPULEASE_INVALID_HANDLE;
  /* As cuGraphExecDestroy after its launches: the stream's earlier work
   * may still run it. */
  gpulease_status st = gl_sop_wait_stream(s, GL_OP_GRAPH_DESTROY, r->s.seq, failed);
  if (st != GPULEASE_OK) return st;
  gl_hmap_del(&s->graphs, r->graph);
  graph_free(s, g);
  return GPULEASE_OK;
}

void gl_sop_graph(gl_wsession *s, gl_job *job) {
  gl_wk *w = s->w;
  const uint16_t op = job->req.op;
  if (op == GL_OP_GRAPH_LAUNCH) {
    graph_launch(s, job);
    gl_job_free(job);
    return;
  }
  gl_response resp;
  memset(&resp, 0, sizeof resp);
  resp.op = op;
  resp.status = GPULEASE_OK;
  resp.msg = "";
  bool failed = false;
  gpulease_status st;
  switch (op) {
  case GL_OP_GRAPH_BEGIN: st = graph_begin(s, &job->req.u.graph_begin); break;
  case GL_OP_GRAPH_END: st = graph_end(s, &resp); break;
  case GL_OP_GRAPH_SET_ARGS: st = graph_set_args(s, &job->req.u.graph); break;
  default: st = graph_destroy(s, &job->req.u.graph, &failed); break;
  }
  if (st != GPULEASE_OK) {
    if (!failed) gl_sop_fail_from_backend(s, op, gl_request_session(&job->req)->seq, st);
    gl_wk_job_error(w, job, op, st, s->err);
  } else {
    gl_wk_job_reply(w, job, &resp);
  }
  gl_job_free(job);
}
