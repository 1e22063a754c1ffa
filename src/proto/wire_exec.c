/*
 * wire_exec.c - the codec of the launch ops beyond LAUNCH: LAUNCH_EX (a
 * launch with attributes: cooperative, thread-block cluster), BURST (many
 * launches in one op), the events (EVENT_RECORD, EVENT_ELAPSED) and the
 * graphs (GRAPH_BEGIN .. GRAPH_DESTROY), one codec per op
 * (gl_wire__op_<NAME>, at the end, called by wire.c's entry points;
 * GRAPH_LAUNCH and GRAPH_DESTROY share theirs); and the body every launch
 * shares after its session_ref, which LAUNCH (wire_session.c) uses too.
 * Layouts in wire.h and docs/protocol.md, "Launch attributes, bursts and
 * events".
 */
#include "proto/wire_internal.h"

/* ========================================================================
 * Checks
 * ====================================================================== */

void gl_wire__check_cluster(gl_wire__rd *r, const uint32_t cluster[3]) {
  if (!gl_wire__rd_ok(r)) return;
  if (cluster[0] == 0 || cluster[1] == 0 || cluster[2] == 0)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "cluster (%u,%u,%u): each dimension must be at least 1", cluster[0],
                     cluster[1], cluster[2]);
}

void gl_wire__rd_dims(gl_wire__rd *r, uint32_t grid[3], uint32_t block[3]) {
  grid[0] = gl_wire__rd_u32(r, "grid_x");
  grid[1] = gl_wire__rd_u32(r, "grid_y");
  grid[2] = gl_wire__rd_u32(r, "grid_z");
  block[0] = gl_wire__rd_u32(r, "block_x");
  block[1] = gl_wire__rd_u32(r, "block_y");
  block[2] = gl_wire__rd_u32(r, "block_z");
}

/* LAUNCH_EX's cluster: all 0 (none) or each >= 1. */
static void check_ex_cluster(gl_wire__rd *r, const uint32_t cluster[3]) {
  if (cluster[0] == 0 && cluster[1] == 0 && cluster[2] == 0) return;
  gl_wire__check_cluster(r, cluster);
}

static void check_ex_flags(gl_wire__rd *r, uint8_t flags) {
  if (gl_wire__rd_ok(r) && (flags & ~GL_LAUNCH_EX_COOPERATIVE))
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "flags 0x%02x has unknown bits 0x%02x (only bit 0, cooperative, is defined)",
                     flags, flags & ~GL_LAUNCH_EX_COOPERATIVE & 0xFF);
}

static void check_param_count(gl_wire__rd *r, uint16_t count) {
  if (gl_wire__rd_ok(r) && count > GPULEASE_MAX_PARAMS)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "param_count %u exceeds %d", count,
                     GPULEASE_MAX_PARAMS);
}

static void check_burst_count(gl_wire__rd *r, uint16_t count) {
  if (gl_wire__rd_ok(r) && (count < 1 || count > GL_WIRE_MAX_BURST))
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "count %u out of range 1..%d", count,
                     GL_WIRE_MAX_BURST);
}

static void check_graph_begin(gl_wire__rd *r, const gl_graph_begin_req *g) {
  if (!gl_wire__rd_ok(r)) return;
  if (g->flags & ~GL_GRAPH_F_WHILE)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "flags 0x%02x has unknown bits (only bit 0, WHILE loop, is defined)",
                     g->flags);
  else if (!(g->flags & GL_GRAPH_F_WHILE) && (g->flag_buffer || g->flag_offset))
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "flag_buffer and flag_offset must be 0 without the WHILE flag");
  else if ((g->flags & GL_GRAPH_F_WHILE) && g->flag_buffer == 0)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "a WHILE loop needs flag_buffer (buffer handles start at 1)");
}

static void check_event(gl_wire__rd *r, const char *field, uint16_t ev) {
  if (gl_wire__rd_ok(r) && ev >= GL_WIRE_MAX_EVENTS)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "%s %u out of range 0..%d", field, ev,
                     GL_WIRE_MAX_EVENTS - 1);
}

/* ========================================================================
 * A launch's body
 * ====================================================================== */

void gl_wire__launch_body_decode(gl_wire__rd *r, gl_launch_req *l, bool ex) {
  l->function = gl_wire__rd_u64(r, "function");
  gl_wire__rd_dims(r, l->grid, l->block);
  l->shared_mem_bytes = gl_wire__rd_u32(r, "shared_mem_bytes");
  if (ex) {
    l->flags = gl_wire__rd_u8(r, "flags");
    check_ex_flags(r, l->flags);
    l->cluster[0] = gl_wire__rd_u32(r, "cluster_x");
    l->cluster[1] = gl_wire__rd_u32(r, "cluster_y");
    l->cluster[2] = gl_wire__rd_u32(r, "cluster_z");
    check_ex_cluster(r, l->cluster);
  }
  l->param_count = gl_wire__rd_u16(r, "param_count");
  check_param_count(r, l->param_count);
  if (gl_wire__rd_ok(r)) {
    size_t start = r->pos;
    gl_wire__param_list_scan(r, l->param_count, true);
    l->params_raw = r->p + start;
    l->params_raw_len = r->pos - start;
  }
}

/* A launch's param list as an encoder's caller gave it (LAUNCH's, a
 * BURST launch's, GRAPH_SET_ARGS's). */
static void check_args_list(gl_wire__rd *r, const gl_launch_req *l) {
  check_param_count(r, l->param_count);
  if (gl_wire__rd_ok(r) && l->params_raw_len > 0 && !l->params_raw)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "params_raw is NULL");
  if (!gl_wire__rd_ok(r)) return;
  gl_wire__rd pr;
  gl_wire__rd_init(&pr, l->params_raw, l->params_raw_len, r->op, r->err, r->errlen);
  gl_wire__param_list_scan(&pr, l->param_count, true);
  if (pr.st != GPULEASE_OK)
    r->st = GPULEASE_INVALID_ARGUMENT; /* message already written */
  else if (pr.pos != l->params_raw_len)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "params_raw_len %zu but the %u params take %zu bytes", l->params_raw_len,
                     l->param_count, pr.pos);
}

void gl_wire__launch_body_validate(gl_wire__rd *r, const gl_launch_req *l, bool ex) {
  if (ex) {
    check_ex_flags(r, l->flags);
    check_ex_cluster(r, l->cluster);
  }
  check_args_list(r, l);
}

void gl_wire__launch_body_put(gl_buf *b, const gl_launch_req *l, bool ex) {
  gl_wire__put_u64(b, l->function);
  for (int i = 0; i < 3; i++) gl_wire__put_u32(b, l->grid[i]);
  for (int i = 0; i < 3; i++) gl_wire__put_u32(b, l->block[i]);
  gl_wire__put_u32(b, l->shared_mem_bytes);
  if (ex) {
    gl_wire__put_u8(b, l->flags);
    for (int i = 0; i < 3; i++) gl_wire__put_u32(b, l->cluster[i]);
  }
  gl_wire__put_u16(b, l->param_count);
  gl_wire__put_bytes(b, l->params_raw, l->params_raw_len);
}

/* ========================================================================
 * BURST's list
 * ====================================================================== */

/* Reads count launches from r (the decoder: r is the body; the walker: r
 * is the list). */
static void burst_scan(gl_wire__rd *r, unsigned count) {
  for (unsigned i = 0; i < count && gl_wire__rd_ok(r); i++) {
    r->elem = "launch"; /* the params' scan names its own elements */
    r->idx = i;
    gl_launch_req l;
    memset(&l, 0, sizeof l);
    gl_wire__launch_body_decode(r, &l, false);
  }
  r->elem = NULL;
}

bool gl_burst_next(const gl_burst_req *b, size_t *pos, gl_launch_req *out) {
  if (!b || *pos >= b->launches_len) return false;
  gl_wire__rd r;
  gl_wire__rd_init(&r, b->launches, b->launches_len, GL_OP_BURST, NULL, 0);
  r.pos = *pos;
  memset(out, 0, sizeof *out);
  out->s = b->s;
  gl_wire__launch_body_decode(&r, out, false);
  if (!gl_wire__rd_ok(&r)) return false;
  *pos = r.pos;
  return true;
}

gpulease_status gl_burst_check(gl_burst_req *b, char *err, size_t errlen) {
  if (err && errlen) err[0] = 0;
  if (b->checked) return GPULEASE_OK;
  gl_wire__rd r;
  gl_wire__rd_init(&r, b->launches, b->launches_len, GL_OP_BURST, err, errlen);
  check_burst_count(&r, b->count);
  if (gl_wire__rd_ok(&r)) burst_scan(&r, b->count);
  /* Bytes after the last launch: a field of a newer release, as after any
   * request's last field (launches is BURST's last). */
  if (gl_wire__rd_ok(&r) && r.pos != b->launches_len)
    gl_wire__rd_fail_newer(&r, b->launches_len - r.pos, gl_wire__op_BURST.last_field);
  if (r.st == GPULEASE_OK) b->checked = true;
  return r.st;
}

gpulease_status gl_burst_add(gl_buf *list, const gl_launch_req *l) {
  gl_wire__rd r;
  gl_wire__rd_init(&r, NULL, 0, GL_OP_BURST, NULL, 0);
  gl_wire__launch_body_validate(&r, l, false);
  if (!gl_wire__rd_ok(&r)) return GPULEASE_INVALID_ARGUMENT;
  gl_wire__launch_body_put(list, l, false);
  return list->oom ? GPULEASE_NO_MEMORY : GPULEASE_OK;
}

/* ========================================================================
 * Requests
 * ====================================================================== */

/* Each validator starts with the session_id, as the decoder does. */
static void check_session(gl_wire__rd *r, const gl_session_ref *s) {
  if (gl_wire__rd_ok(r) && s->session_id == 0)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "session_id 0 is not valid (ids and handles start at 1)");
}

static void launch_ex_decode(gl_wire__rd *r, gl_request *q) {
  gl_wire__session_ref_decode(r, &q->u.launch.s);
  gl_wire__launch_body_decode(r, &q->u.launch, true);
}

static void launch_ex_validate(gl_wire__rd *r, const gl_request *q) {
  check_session(r, &q->u.launch.s);
  gl_wire__launch_body_validate(r, &q->u.launch, true);
}

static void launch_ex_put(gl_buf *b, const gl_request *q) {
  gl_wire__session_ref_put(b, &q->u.launch.s);
  gl_wire__launch_body_put(b, &q->u.launch, true);
}

static void burst_decode(gl_wire__rd *r, gl_request *q) {
  gl_burst_req *b = &q->u.burst;
  gl_wire__session_ref_decode(r, &b->s);
  b->count = gl_wire__rd_u16(r, "count");
  check_burst_count(r, b->count);
  if (gl_wire__rd_ok(r)) {
    size_t start = r->pos;
    burst_scan(r, b->count);
    b->launches = r->p + start;
    b->launches_len = r->pos - start;
    b->checked = true;
  }
}

static void burst_validate(gl_wire__rd *r, const gl_request *q) {
  const gl_burst_req *b = &q->u.burst;
  check_session(r, &b->s);
  check_burst_count(r, b->count);
  if (gl_wire__rd_ok(r) && !b->launches)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "launches is NULL");
  if (!gl_wire__rd_ok(r) || b->checked) return;
  gl_wire__rd lr;
  gl_wire__rd_init(&lr, b->launches, b->launches_len, r->op, r->err, r->errlen);
  burst_scan(&lr, b->count);
  if (lr.st != GPULEASE_OK)
    r->st = GPULEASE_INVALID_ARGUMENT; /* message already written */
  else if (lr.pos != b->launches_len)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "launches_len %zu but the %u launches take %zu bytes", b->launches_len,
                     b->count, lr.pos);
}

static void burst_put(gl_buf *b, const gl_request *q) {
  gl_wire__session_ref_put(b, &q->u.burst.s);
  gl_wire__put_u16(b, q->u.burst.count);
  gl_wire__put_bytes(b, q->u.burst.launches, q->u.burst.launches_len);
}

static void event_record_decode(gl_wire__rd *r, gl_request *q) {
  gl_wire__session_ref_decode(r, &q->u.event.s);
  q->u.event.event = gl_wire__rd_u16(r, "event");
  check_event(r, "event", q->u.event.event);
}

static void event_record_validate(gl_wire__rd *r, const gl_request *q) {
  check_session(r, &q->u.event.s);
  check_event(r, "event", q->u.event.event);
}

static void event_record_put(gl_buf *b, const gl_request *q) {
  gl_wire__session_ref_put(b, &q->u.event.s);
  gl_wire__put_u16(b, q->u.event.event);
}

static void event_elapsed_decode(gl_wire__rd *r, gl_request *q) {
  gl_wire__session_ref_decode(r, &q->u.event.s);
  q->u.event.event = gl_wire__rd_u16(r, "start_event");
  check_event(r, "start_event", q->u.event.event);
  q->u.event.end_event = gl_wire__rd_u16(r, "end_event");
  check_event(r, "end_event", q->u.event.end_event);
}

static void event_elapsed_validate(gl_wire__rd *r, const gl_request *q) {
  check_session(r, &q->u.event.s);
  check_event(r, "start_event", q->u.event.event);
  check_event(r, "end_event", q->u.event.end_event);
}

static void event_elapsed_put(gl_buf *b, const gl_request *q) {
  gl_wire__session_ref_put(b, &q->u.event.s);
  gl_wire__put_u16(b, q->u.event.event);
  gl_wire__put_u16(b, q->u.event.end_event);
}

static void graph_begin_decode(gl_wire__rd *r, gl_request *q) {
  gl_graph_begin_req *g = &q->u.graph_begin;
  gl_wire__session_ref_decode(r, &g->s);
  g->flags = gl_wire__rd_u8(r, "flags");
  g->flag_buffer = gl_wire__rd_u64(r, "flag_buffer");
  g->flag_offset = gl_wire__rd_u64(r, "flag_offset");
  check_graph_begin(r, g);
}

static void graph_begin_validate(gl_wire__rd *r, const gl_request *q) {
  check_session(r, &q->u.graph_begin.s);
  check_graph_begin(r, &q->u.graph_begin);
}

static void graph_begin_put(gl_buf *b, const gl_request *q) {
  const gl_graph_begin_req *g = &q->u.graph_begin;
  gl_wire__session_ref_put(b, &g->s);
  gl_wire__put_u8(b, g->flags);
  gl_wire__put_u64(b, g->flag_buffer);
  gl_wire__put_u64(b, g->flag_offset);
}

/* GRAPH_LAUNCH, GRAPH_DESTROY: the session_ref and the graph. */
static void graph_decode(gl_wire__rd *r, gl_request *q) {
  gl_wire__session_ref_decode(r, &q->u.graph.s);
  q->u.graph.graph = gl_wire__rd_u64(r, "graph");
}

static void graph_put(gl_buf *b, const gl_request *q) {
  gl_wire__session_ref_put(b, &q->u.graph.s);
  gl_wire__put_u64(b, q->u.graph.graph);
}

static void graph_set_args_decode(gl_wire__rd *r, gl_request *q) {
  gl_graph_req *g = &q->u.graph;
  gl_wire__session_ref_decode(r, &g->s);
  g->graph = gl_wire__rd_u64(r, "graph");
  g->node = gl_wire__rd_u32(r, "node");
  g->args.s = g->s;
  g->args.param_count = gl_wire__rd_u16(r, "param_count");
  check_param_count(r, g->args.param_count);
  if (gl_wire__rd_ok(r)) {
    size_t start = r->pos;
    gl_wire__param_list_scan(r, g->args.param_count, true);
    g->args.params_raw = r->p + start;
    g->args.params_raw_len = r->pos - start;
  }
}

static void graph_set_args_validate(gl_wire__rd *r, const gl_request *q) {
  check_session(r, &q->u.graph.s);
  check_args_list(r, &q->u.graph.args);
}

static void graph_set_args_put(gl_buf *b, const gl_request *q) {
  const gl_graph_req *g = &q->u.graph;
  gl_wire__session_ref_put(b, &g->s);
  gl_wire__put_u64(b, g->graph);
  gl_wire__put_u32(b, g->node);
  gl_wire__put_u16(b, g->args.param_count);
  gl_wire__put_bytes(b, g->args.params_raw, g->args.params_raw_len);
}

/* ========================================================================
 * Results: EVENT_ELAPSED's u64 elapsed_ns, GRAPH_END's graph; the others
 * are empty
 * ====================================================================== */

static void elapsed_result_decode(gl_wire__rd *r, gl_response *out) {
  out->u.elapsed_ns = gl_wire__rd_u64(r, "elapsed_ns");
}

static void elapsed_result_put(gl_buf *b, const gl_response *resp) {
  gl_wire__put_u64(b, resp->u.elapsed_ns);
}

static void graph_end_result_decode(gl_wire__rd *r, gl_response *out) {
  out->u.graph_end.graph = gl_wire__rd_u64(r, "graph");
  if (gl_wire__rd_ok(r) && out->u.graph_end.graph == 0)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "graph 0 is not valid (ids and handles start at 1)");
  out->u.graph_end.kernel_nodes = gl_wire__rd_u32(r, "kernel_nodes");
  out->u.graph_end.ops = gl_wire__rd_u32(r, "ops");
}

static bool graph_end_result_valid(const gl_response *resp) {
  return resp->u.graph_end.graph != 0;
}

static void graph_end_result_put(gl_buf *b, const gl_response *resp) {
  gl_wire__put_u64(b, resp->u.graph_end.graph);
  gl_wire__put_u32(b, resp->u.graph_end.kernel_nodes);
  gl_wire__put_u32(b, resp->u.graph_end.ops);
}

/* ========================================================================
 * The codecs
 * ====================================================================== */

const gl_wire__codec gl_wire__op_LAUNCH_EX = {
    .last_field = "params",
    .decode = launch_ex_decode,
    .validate = launch_ex_validate,
    .put = launch_ex_put,
};

const gl_wire__codec gl_wire__op_BURST = {
    .last_field = "launches",
    .decode = burst_decode,
    .validate = burst_validate,
    .put = burst_put,
};

const gl_wire__codec gl_wire__op_EVENT_RECORD = {
    .last_field = "event",
    .decode = event_record_decode,
    .validate = event_record_validate,
    .put = event_record_put,
};

const gl_wire__codec gl_wire__op_EVENT_ELAPSED = {
    .last_field = "end_event",
    .decode = event_elapsed_decode,
    .validate = event_elapsed_validate,
    .put = event_elapsed_put,
    .result_decode = elapsed_result_decode,
    .result_put = elapsed_result_put,
};

const gl_wire__codec gl_wire__op_GRAPH_BEGIN = {
    .last_field = "flag_offset",
    .decode = graph_begin_decode,
    .validate = graph_begin_validate,
    .put = graph_begin_put,
};

const gl_wire__codec gl_wire__op_GRAPH_END = {
    .last_field = "seq",
    .decode = gl_wire__ref_only_decode,
    .validate = gl_wire__ref_only_validate,
    .put = gl_wire__ref_only_put,
    .result_decode = graph_end_result_decode,
    .result_valid = graph_end_result_valid,
    .result_put = graph_end_result_put,
};

const gl_wire__codec gl_wire__op_GRAPH_LAUNCH = {
    .last_field = "graph",
    .decode = graph_decode,
    .validate = gl_wire__ref_only_validate,
    .put = graph_put,
};

const gl_wire__codec gl_wire__op_GRAPH_SET_ARGS = {
    .last_field = "params",
    .decode = graph_set_args_decode,
    .validate = graph_set_args_validate,
    .put = graph_set_args_put,
};

const gl_wire__codec gl_wire__op_GRAPH_DESTROY = {
    .last_field = "graph",
    .decode = graph_decode,
    .validate = gl_wire__ref_only_validate,
    .put = graph_put,
};
