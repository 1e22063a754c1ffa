/*
 * wire_batch.c - the codec of BATCH (docs/protocol.md, "BATCH"): several
 * ops of one session in one request, answered in one response
 * (gl_wire__op_BATCH, called by wire.c's entry points), with gl_batch_next()
 * and gl_batch_add() to walk and build the lists.
 *
 * A BATCH carries whole request messages, each behind a u32 length, and
 * its result whole response messages the same way: every op inside is
 * decoded by the same codec as when it travels alone (a BATCH is never
 * inside a BATCH, so this recursion is one level deep). The decoder checks
 * what makes a batch one unit of one session: every op a session op other
 * than SESSION_OPEN and BATCH, naming the batch's lease (lease_id and
 * secret) and session, with seq = the batch's seq + its index (or 0 when
 * the batch's seq is 0), and at most GL_WIRE_MAX_BATCH_READ_BYTES of
 * MEM_READ in all, so the response stays bounded.
 */
#include <stdlib.h>

#include "proto/wire_internal.h"

/* ========================================================================
 * Walking and building the lists
 * ====================================================================== */

bool gl_batch_next(const uint8_t *list, size_t list_len, size_t *pos, const uint8_t **msg,
                   size_t *len) {
  if (*pos + 4 > list_len) return false;
  uint32_t n = (uint32_t)gl_wire__get_be(list + *pos, 4);
  if (n > list_len - *pos - 4) return false;
  *msg = list + *pos + 4;
  *len = n;
  *pos += 4 + (size_t)n;
  return true;
}

void gl_batch_append(gl_buf *list, const uint8_t *msg, size_t len) {
  gl_wire__put_u32(list, (uint32_t)len);
  gl_wire__put_bytes(list, msg, len);
}

gpulease_status gl_batch_add(gl_buf *list, const gl_request *op) {
  const gl_op_info *info = op ? gl_op_info_of(op->op) : NULL;
  if (!list || !info || !(info->flags & GL_OPF_BATCH)) return GPULEASE_INVALID_ARGUMENT;
  size_t at = list->len;
  gl_wire__put_u32(list, 0); /* patched below */
  gpulease_status st = gl_request_encode(op, list);
  if (st != GPULEASE_OK) {
    if (!list->oom) list->len = at;
    return st;
  }
  if (list->oom) return GPULEASE_NO_MEMORY;
  uint64_t n = list->len - at - 4;
  for (int i = 0; i < 4; i++) list->data[at + i] = (uint8_t)(n >> (8 * (3 - i)));
  return GPULEASE_OK;
}

/* ========================================================================
 * Checks
 * ====================================================================== */

static void check_count(gl_wire__rd *r, uint16_t n) {
  if (gl_wire__rd_ok(r) && (n == 0 || n > GL_WIRE_MAX_BATCH))
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "count %u out of range 1..%d", n,
                     GL_WIRE_MAX_BATCH);
}

/* The ops a batch may hold. */
/* The op table's BATCH flag: the session ops but SESSION_OPEN, BATCH
 * itself and the internal ones. */
static bool op_allowed(uint16_t op) {
  const gl_op_info *i = gl_op_info_of(op);
  return i && (i->flags & GL_OPF_BATCH);
}

/* Reads the `count` request messages that follow in r (each a u32 length
 * and the message) and checks them against the batch's ref s: each
 * decodes, is an allowed op, names the same lease and session, and has the
 * next seq. */
static void check_ops(gl_wire__rd *r, const gl_session_ref *s, uint16_t count) {
  uint64_t read_bytes = 0;
  gl_request one;
  char why[400];
  /* gl_request_decode_entries: each entry is decoded into the array handed
   * out, so that nobody decodes it again. */
  gl_request *all = NULL;
  if (r->entries_out && count) {
    all = calloc(count, sizeof *all);
    if (!all) {
      gl_wire__rd_fail(r, GPULEASE_INTERNAL, "out of memory for the batch's %u entries", count);
      return;
    }
    *r->entries_out = all;
  }
  r->elem = "op";
  for (uint16_t i = 0; i < count && gl_wire__rd_ok(r); i++) {
    r->idx = i;
    gl_request *qp = all ? &all[i] : &one;
    uint32_t len = gl_wire__rd_u32(r, "len");
    const uint8_t *m = gl_wire__rd_take(r, len, "message");
    if (!m) break;
    uint16_t op = 0;
    gpulease_status st = gl_request_decode(m, len, len, qp, &op, why, sizeof why);
    if (st != GPULEASE_OK) {
      gl_wire__rd_fail(r, st, "op %u: %s", i, why);
      break;
    }
    if (!op_allowed(qp->op)) {
      gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                       "op %u: %s cannot be in a batch (only session ops but SESSION_OPEN, "
                       "BATCH and the internal ops)",
                       i, gl_op_name(qp->op));
      break;
    }
    const gl_session_ref *e = gl_request_session(qp);
    uint64_t want = s->seq ? s->seq + i : 0;
    if (e->auth.lease_id != s->auth.lease_id ||
        memcmp(e->auth.secret, s->auth.secret, sizeof e->auth.secret) != 0 ||
        e->session_id != s->session_id)
      gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                       "op %u: its lease or session differs from the batch's", i);
    else if (e->seq != want)
      gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                       "op %u: seq %llu, but the batch gives it seq %llu", i,
                       (unsigned long long)e->seq, (unsigned long long)want);
    if (qp->op == GL_OP_MEM_READ) read_bytes += qp->u.mem_read.size_bytes;
    if (gl_wire__rd_ok(r) && read_bytes > GL_WIRE_MAX_BATCH_READ_BYTES)
      gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                       "its MEM_READs ask for more than %u bytes in all",
                       GL_WIRE_MAX_BATCH_READ_BYTES);
  }
  r->elem = NULL;
  if (gl_wire__rd_ok(r) && s->seq && s->seq > UINT64_MAX - count)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "seq %llu + count overflows",
                     (unsigned long long)s->seq);
}

/* ========================================================================
 * Requests
 * ====================================================================== */

static void batch_decode(gl_wire__rd *r, gl_request *q) {
  gl_batch_req *b = &q->u.batch;
  gl_wire__session_ref_decode(r, &b->s);
  b->count = gl_wire__rd_u16(r, "count");
  check_count(r, b->count);
  if (!gl_wire__rd_ok(r)) return;
  size_t start = r->pos;
  check_ops(r, &b->s, b->count);
  b->ops = r->p + start;
  b->ops_len = r->pos - start; /* trailing bytes: the frame's end check refuses them */
  if (r->entries_out) b->entries = *r->entries_out;
}

static void batch_validate(gl_wire__rd *r, const gl_request *q) {
  const gl_batch_req *b = &q->u.batch;
  if (gl_wire__rd_ok(r) && b->s.session_id == 0)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "session_id 0 is not valid (ids and handles start at 1)");
  check_count(r, b->count);
  if (gl_wire__rd_ok(r) && !b->ops)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "ops is NULL");
  if (gl_wire__rd_ok(r) && b->ops_len > UINT32_MAX - 64)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "ops of %zu bytes do not fit body_len",
                     b->ops_len);
  if (!gl_wire__rd_ok(r)) return;
  /* Malformed ops are the caller's mistake here. */
  gl_wire__rd ops;
  gl_wire__rd_init(&ops, b->ops, b->ops_len, r->op, r->err, r->errlen);
  check_ops(&ops, &b->s, b->count);
  if (ops.st == GPULEASE_OK && ops.pos != b->ops_len)
    gl_wire__rd_fail(&ops, GPULEASE_INVALID_ARGUMENT, "%zu bytes after its %u ops",
                     b->ops_len - ops.pos, b->count);
  if (ops.st != GPULEASE_OK) r->st = GPULEASE_INVALID_ARGUMENT; /* message written */
}

static void batch_put(gl_buf *out, const gl_request *q) {
  const gl_batch_req *b = &q->u.batch;
  gl_wire__session_ref_put(out, &b->s);
  gl_wire__put_u16(out, b->count);
  gl_wire__put_bytes(out, b->ops, b->ops_len);
}

/* ========================================================================
 * Results
 * ====================================================================== */

/* Reads the `count` response messages that follow in r: each decodes,
 * and is a reply to an op a batch may hold (or has op 0, the op of an
 * error reply to an undecodable request). */
static void check_replies(gl_wire__rd *r, uint16_t count) {
  char why[400];
  gl_response reply;
  r->elem = "reply";
  for (uint16_t i = 0; i < count && gl_wire__rd_ok(r); i++) {
    r->idx = i;
    uint32_t len = gl_wire__rd_u32(r, "len");
    const uint8_t *m = gl_wire__rd_take(r, len, "message");
    if (!m) break;
    gpulease_status st = gl_response_decode(m, len, len, &reply, why, sizeof why);
    if (st != GPULEASE_OK)
      gl_wire__rd_fail(r, st, "reply %u: %s", i, why);
    else if (!op_allowed(reply.op) && !(reply.op == 0 && reply.status != GPULEASE_OK))
      gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "reply %u: %s cannot be in a batch", i,
                       gl_op_name(reply.op));
  }
  r->elem = NULL;
}

static void batch_result_decode(gl_wire__rd *r, gl_response *out) {
  gl_batch_resp *b = &out->u.batch;
  b->count = gl_wire__rd_u16(r, "count");
  check_count(r, b->count);
  if (!gl_wire__rd_ok(r)) return;
  size_t start = r->pos;
  check_replies(r, b->count);
  b->replies = r->p + start;
  b->replies_len = r->pos - start;
}

static bool batch_result_valid(const gl_response *resp) {
  const gl_batch_resp *b = &resp->u.batch;
  if (b->replies_len > 0 && !b->replies) return false;
  gl_wire__rd r;
  gl_wire__rd_init(&r, NULL, 0, resp->op, NULL, 0);
  check_count(&r, b->count);
  if (!gl_wire__rd_ok(&r)) return false;
  gl_wire__rd_init(&r, b->replies, b->replies_len, resp->op, NULL, 0);
  check_replies(&r, b->count);
  return gl_wire__rd_ok(&r) && r.pos == b->replies_len;
}

static void batch_result_put(gl_buf *out, const gl_response *resp) {
  gl_wire__put_u16(out, resp->u.batch.count);
  gl_wire__put_bytes(out, resp->u.batch.replies, resp->u.batch.replies_len);
}

const gl_wire__codec gl_wire__op_BATCH = {
    .last_field = "ops",
    .decode = batch_decode,
    .validate = batch_validate,
    .put = batch_put,
    .result_decode = batch_result_decode,
    .result_valid = batch_result_valid,
    .result_put = batch_result_put,
};
