/*
 * session_exec.c - launches beyond LAUNCH: with attributes (LAUNCH_EX:
 * cooperative, thread-block clusters), many at once (BURST), and the
 * session's events (EVENT_RECORD, EVENT_ELAPSED) and graphs (GRAPH_BEGIN ..
 * GRAPH_DESTROY). docs/protocol.md,
 * "LAUNCH_EX" to "Graphs"; the public calls are in gpulease.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/client_internal.h"

#define set_err gl_lib_set_err

void gpulease_launch_attrs_default(gpulease_launch_attrs *attrs) {
  if (!attrs) return;
  memset(attrs, 0, sizeof *attrs);
  attrs->struct_version = GPULEASE_LAUNCH_ATTRS_VERSION;
}

static gpulease_status check_attrs(const gpulease_launch_attrs *a, gpulease_error *err) {
  if (!gl_lib_version_ok(a->struct_version, GPULEASE_LAUNCH_ATTRS_VERSION))
    return gl_lib_version_err(err, "launch attrs", a->struct_version);
  if (a->flags & ~GPULEASE_LAUNCH_COOPERATIVE)
    return set_err(err, GPULEASE_INVALID_ARGUMENT,
                   "launch flags 0x%" PRIx32 " have unknown bits (only "
                   "GPULEASE_LAUNCH_COOPERATIVE is defined)",
                   a->flags);
  bool any = a->cluster[0] || a->cluster[1] || a->cluster[2];
  if (any && (!a->cluster[0] || !a->cluster[1] || !a->cluster[2]))
    return set_err(err, GPULEASE_INVALID_ARGUMENT,
                   "cluster (%" PRIu32 ",%" PRIu32 ",%" PRIu32
                   "): each dimension must be at least 1 (all 0: no cluster)",
                   a->cluster[0], a->cluster[1], a->cluster[2]);
  return GPULEASE_OK;
}

gpulease_status gpulease_launch_ex(gpulease_session *s, gpulease_function fn,
                                   const uint32_t grid[3], const uint32_t block[3],
                                   uint32_t shared_mem_bytes, const gpulease_launch_attrs *attrs,
                                   const gpulease_arg *args, size_t arg_count,
                                   gpulease_error *err) {
  if (attrs) {
    gpulease_status st = check_attrs(attrs, err);
    if (st != GPULEASE_OK) return st;
  }
  gl_request req;
  gl_buf params;
  gpulease_status st = gl_session_launch_req(s, fn, grid, block, shared_mem_bytes, args,
                                             arg_count, &req, &params, err);
  if (st != GPULEASE_OK) return st;
  if (attrs && (attrs->flags || attrs->cluster[0])) {
    /* A plain launch stays a LAUNCH, which every daemon knows. */
    req.op = GL_OP_LAUNCH_EX;
    req.u.launch.flags = (attrs->flags & GPULEASE_LAUNCH_COOPERATIVE) ? GL_LAUNCH_EX_COOPERATIVE
                                                                      : 0;
    memcpy(req.u.launch.cluster, attrs->cluster, sizeof req.u.launch.cluster);
  }
  st = gl_session_send_pipelined(s, &req, err);
  gl_buf_free(&params);
  return st;
}

/* Big-endian stores into a buffer with room (burst_put): one byte swap
 * (none on a big-endian host) and one unaligned store each. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define GL_BE16(v) (v)
#define GL_BE32(v) (v)
#define GL_BE64(v) (v)
#else
#define GL_BE16(v) __builtin_bswap16(v)
#define GL_BE32(v) __builtin_bswap32(v)
#define GL_BE64(v) __builtin_bswap64(v)
#endif
static uint8_t *be16(uint8_t *p, uint16_t v) {
  v = GL_BE16(v);
  memcpy(p, &v, 2);
  return p + 2;
}
static uint8_t *be32(uint8_t *p, uint32_t v) {
  v = GL_BE32(v);
  memcpy(p, &v, 4);
  return p + 4;
}
static uint8_t *be64(uint8_t *p, uint64_t v) {
  v = GL_BE64(v);
  memcpy(p, &v, 8);
  return p + 8;
}

/* Checks launch i of a burst and appends its encoding (LAUNCH's body from
 * the function on, docs/protocol.md BURST) to list, which has room for
 * 38 + 17 * arg_count bytes. The same checks as gpulease_launch()'s. */
static gpulease_status burst_put(gl_buf *list, const gpulease_burst_launch *b, size_t i,
                                 gpulease_error *err) {
  if (b->function == 0)
    return set_err(err, GPULEASE_INVALID_HANDLE,
                   "launch %zu of the burst: function handle 0 is never valid", i);
  for (int k = 0; k < 3; k++)
    if (b->grid[k] == 0 || b->block[k] == 0)
      return set_err(err, GPULEASE_INVALID_ARGUMENT,
                     "launch %zu of the burst: grid and block dimensions must be >= 1 (grid "
                     "%" PRIu32 ",%" PRIu32 ",%" PRIu32 ", block %" PRIu32 ",%" PRIu32
                     ",%" PRIu32 ")",
                     i, b->grid[0], b->grid[1], b->grid[2], b->block[0], b->block[1],
                     b->block[2]);
  if (b->arg_count > GPULEASE_MAX_PARAMS)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "launch %zu of the burst: %zu args: at most %d",
                   i, b->arg_count, GPULEASE_MAX_PARAMS);
  if (b->arg_count && !b->args)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "launch %zu of the burst: args is NULL", i);
  uint8_t *start = list->data + list->len, *p = start;
  p = be64(p, b->function);
  for (int k = 0; k < 3; k++) p = be32(p, b->grid[k]);
  for (int k = 0; k < 3; k++) p = be32(p, b->block[k]);
  p = be32(p, b->shared_mem_bytes);
  p = be16(p, (uint16_t)b->arg_count);
  uint8_t *params = p;
  for (size_t k = 0; k < b->arg_count; k++) {
    const gpulease_arg *a = &b->args[k];
    if (a->kind == GPULEASE_ARG_BUFFER) {
      if (a->buffer == 0)
        return set_err(err, GPULEASE_INVALID_HANDLE,
                       "launch %zu of the burst: arg %zu: buffer handle 0 is never valid", i, k);
      *p++ = GL_LAUNCH_PARAM_BUFFER;
      p = be64(p, a->buffer);
      p = be64(p, a->offset);
    } else if (a->kind == GPULEASE_ARG_SCALAR) {
      if (a->size == 0 || a->size > GPULEASE_MAX_SCALAR_BYTES)
        return set_err(err, GPULEASE_INVALID_ARGUMENT,
                       "launch %zu of the burst: arg %zu: scalar size %" PRIu32
                       " is not 1..%d bytes",
                       i, k, a->size, GPULEASE_MAX_SCALAR_BYTES);
      *p++ = GL_LAUNCH_PARAM_SCALAR;
      *p++ = (uint8_t)a->size;
      memcpy(p, a->value, a->size);
      p += a->size;
    } else {
      return set_err(err, GPULEASE_INVALID_ARGUMENT,
                     "launch %zu of the burst: arg %zu: unknown kind %d", i, k, (int)a->kind);
    }
  }
  if ((size_t)(p - params) > GL_WIRE_MAX_LAUNCH_PARAM_BYTES)
    return set_err(err, GPULEASE_INVALID_ARGUMENT,
                   "launch %zu of the burst: the args take %zu bytes encoded: at most %d", i,
                   (size_t)(p - params), GL_WIRE_MAX_LAUNCH_PARAM_BYTES);
  list->len += (size_t)(p - start);
  return GPULEASE_OK;
}

gpulease_status gpulease_burst(gpulease_session *s, const gpulease_burst_launch *launches,
                               size_t count, gpulease_error *err) {
  if (!s || !launches)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "session and launches are required");
  if (count < 1 || count > GPULEASE_MAX_BURST)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "a burst of %zu launches: 1..%d", count,
                   GPULEASE_MAX_BURST);
  /* The launches are encoded straight into one list, checked as they go,
   * and marked checked so that the encoder does not walk them again. */
  size_t room = 0;
  for (size_t i = 0; i < count; i++)
    room += 38 + 17 * (launches[i].arg_count <= GPULEASE_MAX_PARAMS ? launches[i].arg_count
                                                                    : 0);
  gl_buf *list = &s->burstbuf;
  if (list->cap < room) {
    uint8_t *d = realloc(list->data, room);
    if (!d) return set_err(err, GPULEASE_NO_MEMORY, "out of memory for a burst");
    list->data = d;
    list->cap = room;
  }
  list->len = 0;
  list->oom = false;
  gpulease_status st = GPULEASE_OK;
  for (size_t i = 0; i < count && st == GPULEASE_OK; i++)
    st = burst_put(list, &launches[i], i, err);
  if (st == GPULEASE_OK) {
    gl_request req;
    memset(&req, 0, sizeof req);
    req.op = GL_OP_BURST;
    req.u.burst.count = (uint16_t)count;
    req.u.burst.launches = list->data;
    req.u.burst.launches_len = list->len;
    req.u.burst.checked = true;
    st = gl_session_send_pipelined(s, &req, err);
  }
  if (list->cap > GL_SESSION_SENDBUF_KEEP) gl_buf_free(list); /* an unusually large burst */
  return st;
}

static gpulease_status check_event(unsigned ev, const char *what, gpulease_error *err) {
  if (ev < GPULEASE_MAX_EVENTS) return GPULEASE_OK;
  return set_err(err, GPULEASE_INVALID_ARGUMENT, "%s %u: event slots are 0..%d", what, ev,
                 GPULEASE_MAX_EVENTS - 1);
}

gpulease_status gpulease_event_record(gpulease_session *s, unsigned event, gpulease_error *err) {
  if (!s) return set_err(err, GPULEASE_INVALID_ARGUMENT, "session is NULL");
  gpulease_status st = check_event(event, "event", err);
  if (st != GPULEASE_OK) return st;
  gl_request req;
  memset(&req, 0, sizeof req);
  req.op = GL_OP_EVENT_RECORD;
  req.u.event.event = (uint16_t)event;
  return gl_session_send_pipelined(s, &req, err);
}

gpulease_status gpulease_event_elapsed(gpulease_session *s, unsigned start, unsigned end,
                                       uint64_t *elapsed_ns, gpulease_error *err) {
  if (!s || !elapsed_ns)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "session and elapsed_ns are required");
  gpulease_status st = check_event(start, "start event", err);
  if (st == GPULEASE_OK) st = check_event(end, "end event", err);
  if (st != GPULEASE_OK) return st;
  gl_request req;
  memset(&req, 0, sizeof req);
  req.op = GL_OP_EVENT_ELAPSED;
  req.u.event.event = (uint16_t)start;
  req.u.event.end_event = (uint16_t)end;
  gl_response resp;
  uint8_t *raw = NULL;
  st = gl_session_send_wait(s, &req, &resp, &raw, NULL, err);
  if (st == GPULEASE_OK) *elapsed_ns = resp.u.elapsed_ns;
  free(raw);
  return st;
}

/* ---- graphs --------------------------------------------------------------- */

static gpulease_status graph_begin(gpulease_session *s, uint8_t flags, gpulease_buffer flag,
                                   uint64_t offset, gpulease_error *err) {
  if (!s) return set_err(err, GPULEASE_INVALID_ARGUMENT, "session is NULL");
  gl_request req;
  memset(&req, 0, sizeof req);
  req.op = GL_OP_GRAPH_BEGIN;
  req.u.graph_begin.flags = flags;
  req.u.graph_begin.flag_buffer = flag;
  req.u.graph_begin.flag_offset = offset;
  return gl_session_send_pipelined(s, &req, err);
}

gpulease_status gpulease_graph_begin(gpulease_session *s, gpulease_error *err) {
  return graph_begin(s, 0, 0, 0, err);
}

gpulease_status gpulease_graph_begin_while(gpulease_session *s, gpulease_buffer flag,
                                           uint64_t offset, gpulease_error *err) {
  gpulease_status st = gl_session_check_handle(flag, "flag buffer", err);
  if (st != GPULEASE_OK) return st;
  if (offset % 4)
    return set_err(err, GPULEASE_INVALID_ARGUMENT,
                   "the flag's offset %" PRIu64 " is not 4-byte aligned", offset);
  return graph_begin(s, GL_GRAPH_F_WHILE, flag, offset, err);
}

gpulease_status gpulease_graph_end(gpulease_session *s, gpulease_graph *out,
                                   uint32_t *kernel_nodes, gpulease_error *err) {
  if (!s || !out) return set_err(err, GPULEASE_INVALID_ARGUMENT, "session and out are required");
  gl_request req;
  memset(&req, 0, sizeof req);
  req.op = GL_OP_GRAPH_END;
  gl_response resp;
  uint8_t *raw = NULL;
  gpulease_status st = gl_session_send_wait(s, &req, &resp, &raw, NULL, err);
  if (st == GPULEASE_OK) {
    *out = resp.u.graph_end.graph;
    if (kernel_nodes) *kernel_nodes = resp.u.graph_end.kernel_nodes;
  }
  free(raw);
  return st;
}

static gpulease_status graph_op(gpulease_session *s, uint16_t op, gpulease_graph graph,
                                gpulease_error *err) {
  if (!s) return set_err(err, GPULEASE_INVALID_ARGUMENT, "session is NULL");
  gpulease_status st = gl_session_check_handle(graph, "graph", err);
  if (st != GPULEASE_OK) return st;
  gl_request req;
  memset(&req, 0, sizeof req);
  req.op = op;
  req.u.graph.graph = graph;
  return gl_session_send_pipelined(s, &req, err);
}

gpulease_status gpulease_graph_launch(gpulease_session *s, gpulease_graph graph,
                                      gpulease_error *err) {
  return graph_op(s, GL_OP_GRAPH_LAUNCH, graph, err);
}

gpulease_status gpulease_graph_destroy(gpulease_session *s, gpulease_graph graph,
                                       gpulease_error *err) {
  return graph_op(s, GL_OP_GRAPH_DESTROY, graph, err);
}

gpulease_status gpulease_graph_set_args(gpulease_session *s, gpulease_graph graph, uint32_t node,
                                        const gpulease_arg *args, size_t arg_count,
                                        gpulease_error *err) {
  gpulease_status st = gl_session_check_handle(graph, "graph", err);
  if (st != GPULEASE_OK) return st;
  /* The args' checks and encoding are a launch's (of any function). */
  static const uint32_t one[3] = {1, 1, 1};
  gl_request l;
  gl_buf params;
  st = gl_session_launch_req(s, 1, one, one, 0, args, arg_count, &l, &params, err);
  if (st != GPULEASE_OK) return st;
  gl_request req;
  memset(&req, 0, sizeof req);
  req.op = GL_OP_GRAPH_SET_ARGS;
  req.u.graph.graph = graph;
  req.u.graph.node = node;
  req.u.graph.args.param_count = l.u.launch.param_count;
  req.u.graph.args.params_raw = l.u.launch.params_raw;
  req.u.graph.args.params_raw_len = l.u.launch.params_raw_len;
  st = gl_session_send_pipelined(s, &req, err);
  gl_buf_free(&params);
  return st;
}
