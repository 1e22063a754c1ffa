/*
 * session.c - libgpulease sessions (gpulease.h "Sessions"): open, close,
 * sync/acknowledge and the single-request ops (MODULE_LOAD, MODULE_UNLOAD,
 * FUNC_INFO, LAUNCH). The memory ops (MEM_ALLOC, MEM_FREE, MEM_COPY,
 * MEMSET) are in session_mem.c; MEM_WRITE and MEM_READ, which split a
 * transfer into chunks, in transfer.c.
 *
 * Every op of a session carries the next sequence number (1, 2, 3 ... in
 * the order of the calls); the daemon runs them in that order. Pipelined
 * ops are sent and their token queued in the session's FIFO; their replies
 * are read later, oldest first: when the FIFO holds GL_SESSION_WINDOW of
 * them, at sync, close and detach. A failed reply of a pipelined op is only
 * remembered (the daemon's SYNC reports the session's failure
 * authoritatively). Ops that wait send and then wait for their own token,
 * leaving the FIFO alone.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/client_internal.h"

#define set_err gl_lib_set_err

/* ======================================================================
 * Plumbing
 * ==================================================================== */

/* The session_ref of a session request other than SESSION_OPEN (the op
 * table's, through gl_request_session; writable: the caller owns req). */
static gl_session_ref *session_ref(gl_request *req) {
  return (gl_session_ref *)gl_request_session(req);
}

static void fifo_clear(gpulease_session *s, bool cancel) {
  for (size_t i = 0; i < s->fifo_len; i++) {
    const gl_pending *p = &s->fifo[(s->fifo_head + i) % s->fifo_cap];
    if (cancel) gl_qclient_cancel(s->client->q, p->token);
  }
  s->fifo_head = s->fifo_len = s->fifo_ops = 0;
}

gpulease_status gl_session_begin(gpulease_session *s, gpulease_error *err) {
  if (!s) return set_err(err, GPULEASE_INVALID_ARGUMENT, "session is NULL");
  if (s->generation != s->client->generation) {
    /* The client reconnected: the tokens died with the old connection. */
    fifo_clear(s, false);
    s->generation = s->client->generation;
  }
  return GPULEASE_OK;
}

void gl_session_note_failure(gpulease_session *s, uint16_t op, uint64_t seq,
                             const gpulease_error *e) {
  if (s->fail_status != GPULEASE_OK) return;
  s->fail_status = e->status;
  s->fail_op = op;
  s->fail_seq = seq;
  snprintf(s->fail_msg, sizeof s->fail_msg, "%s", e->message);
}

/* Fills the session_ref of req: the session's auth and id, and the next
 * seq (0 for an unordered session). The seq is consumed by the caller. */
static gl_session_ref *fill_ref(gpulease_session *s, gl_request *req, gpulease_error *err) {
  gl_session_ref *ref = session_ref(req);
  if (!ref) {
    set_err(err, GPULEASE_INVALID_ARGUMENT, "not a session op");
    return NULL;
  }
  ref->auth = s->auth;
  ref->session_id = s->id;
  ref->seq = s->unordered ? 0 : s->next_seq;
  return ref;
}

static gpulease_status send_bytes(gpulease_session *s, const uint8_t *msg, size_t len,
                                  uint16_t op, uint64_t *token, gpulease_error *err) {
  char why[sizeof err->message - 64];
  int rc = gl_qclient_send(s->client->q, msg, len, token, why, sizeof why);
  if (rc != GL_QC_OK) return set_err(err, gl_lib_map_qc(rc), "%s: %s", gl_op_name(op), why);
  return GPULEASE_OK;
}

/* ---- batching -----------------------------------------------------------
 * Pipelined ops are encoded into the session's pending batch (the ops of a
 * BATCH request, docs/protocol.md) instead of going out one request each.
 * The batch is sent at once when nothing of the session is in flight (a
 * lone op is not held back), when it holds batch_max ops or
 * GL_SESSION_BATCH_BYTES, and before any op that waits (which rides in the
 * same batch: LAUNCH then SYNC is one request). A batch of one op goes as
 * that op alone. */

/* Sends the pending batch: *token and *count (0 when nothing was pending)
 * name it; the caller queues or waits for it. */
static gpulease_status batch_send(gpulease_session *s, uint64_t *token, uint16_t *count,
                                  uint64_t *first_seq, uint16_t *op, gpulease_error *err) {
  *count = s->batch_count;
  *first_seq = s->batch_seq;
  *op = s->batch_count == 1 ? s->batch_op0 : GL_OP_BATCH;
  if (s->batch_count == 0) return GPULEASE_OK;
  gpulease_status st;
  if (s->batch.oom) {
    st = set_err(err, GPULEASE_NO_MEMORY, "out of memory batching session ops");
  } else if (s->batch_count == 1) { /* the op alone, behind its length */
    st = send_bytes(s, s->batch.data + 4, s->batch.len - 4, s->batch_op0, token, err);
  } else {
    gl_request req = {.op = GL_OP_BATCH};
    req.u.batch.s.auth = s->auth;
    req.u.batch.s.session_id = s->id;
    req.u.batch.s.seq = s->batch_seq;
    req.u.batch.count = s->batch_count;
    req.u.batch.ops = s->batch.data;
    req.u.batch.ops_len = s->batch.len;
    gl_buf b;
    gl_buf_init(&b);
    st = gl_lib_encode(&req, &b, err);
    if (st == GPULEASE_OK) st = send_bytes(s, b.data, b.len, GL_OP_BATCH, token, err);
    gl_buf_free(&b);
  }
  s->batch.len = 0;
  s->batch.oom = false;
  s->batch_count = 0;
  return st;
}

/* Appends a pipelined op to the pending batch, consuming its seq. */
static gpulease_status batch_add(gpulease_session *s, gl_request *req, gpulease_error *err) {
  gl_session_ref *ref = fill_ref(s, req, err);
  if (!ref) return GPULEASE_INVALID_ARGUMENT;
  char why[256];
  if (gl_request_validate(req, why, sizeof why) != GPULEASE_OK)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "%s: %s", gl_op_name(req->op), why);
  gpulease_status st = gl_batch_add(&s->batch, req);
  if (st != GPULEASE_OK) return set_err(err, st, "%s: out of memory", gl_op_name(req->op));
  if (s->batch_count == 0) {
    s->batch_seq = ref->seq;
    s->batch_op0 = req->op;
  }
  s->batch_count++;
  s->next_seq++;
  return GPULEASE_OK;
}

static gpulease_status fifo_pop(gpulease_session *s, gpulease_error *err);

/* Queues a sent request in the FIFO of replies to read later. */
static gpulease_status fifo_push(gpulease_session *s, gl_pending p, gpulease_error *err) {
  while (s->fifo_len >= GL_SESSION_WINDOW ||
         (s->fifo_len && s->fifo_ops + p.count > GL_SESSION_INFLIGHT_OPS)) {
    gpulease_status st = fifo_pop(s, err);
    if (st != GPULEASE_OK) return st;
  }
  s->fifo[(s->fifo_head + s->fifo_len) % s->fifo_cap] = p;
  s->fifo_len++;
  s->fifo_ops += p.count;
  return GPULEASE_OK;
}

/* Sends the pending batch, if any, and queues it. */
static gpulease_status batch_flush(gpulease_session *s, gpulease_error *err) {
  gl_pending p = {0};
  gpulease_status st = batch_send(s, &p.token, &p.count, &p.seq, &p.op, err);
  if (st != GPULEASE_OK || p.count == 0) return st;
  return fifo_push(s, p, err);
}

gpulease_status gl_session_flush_batch(gpulease_session *s, gpulease_error *err) {
  return batch_flush(s, err);
}

gpulease_status gl_session_send(gpulease_session *s, gl_request *req, uint64_t *token,
                                uint64_t *seq, gpulease_error *err) {
  /* The ops batched before it have lower seqs: they go first. */
  gpulease_status st = batch_flush(s, err);
  if (st != GPULEASE_OK) return st;
  gl_session_ref *ref = fill_ref(s, req, err);
  if (!ref) return GPULEASE_INVALID_ARGUMENT;
  if (req->op == GL_OP_MEM_WRITE && req->u.mem_write.data_len >= GL_SESSION_TAKE_BYTES) {
    st = gl_lib_send_write(s->client->q, req, token, err);
    if (st != GPULEASE_OK) return st;
  } else {
    /* Encoded into the session's buffer, which stays warm between ops (a
     * MEM_WRITE chunk in fresh memory would cost a page fault per 4 KiB);
     * the connection copies it into warm buffers of its own. */
    gl_buf *b = &s->sendbuf;
    b->len = 0;
    b->oom = false;
    st = gl_lib_encode(req, b, err);
    if (st == GPULEASE_OK) st = send_bytes(s, b->data, b->len, req->op, token, err);
    if (b->cap > GL_SESSION_SENDBUF_KEEP) gl_buf_free(b); /* an unusually large op */
    if (st != GPULEASE_OK) return st;
  }
  *seq = ref->seq;
  if (!s->unordered) s->next_seq++;
  return GPULEASE_OK;
}

gpulease_status gl_session_wait_for(gpulease_session *s, uint64_t token, const gl_request *req,
                                    gl_response *resp, uint8_t **raw, gpulease_error *err) {
  *raw = NULL;
  size_t len;
  char why[sizeof err->message - 64];
  int rc = gl_qclient_wait(s->client->q, token, raw, &len, why, sizeof why);
  if (rc != GL_QC_OK) {
    *raw = NULL;
    return set_err(err, gl_lib_map_qc(rc), "%s: %s", gl_op_name(req->op), why);
  }
  return gl_lib_decode_reply_for(req, *raw, len, resp, err);
}

gpulease_status gl_session_wait(gpulease_session *s, uint64_t token, uint16_t op,
                                gl_response *resp, uint8_t **raw, gpulease_error *err) {
  gl_request only_op = {.op = op};
  return gl_session_wait_for(s, token, &only_op, resp, raw, err);
}

/* Notes the failures among the replies of a BATCH (first op's seq
 * first_seq): every reply but the last `keep` ones. */
static void note_batch_failures(gpulease_session *s, const gl_batch_resp *b, uint64_t first_seq,
                                uint16_t keep) {
  size_t pos = 0;
  const uint8_t *m;
  size_t len;
  gl_response r;
  for (uint16_t i = 0;
       i + keep < b->count && gl_batch_next(b->replies, b->replies_len, &pos, &m, &len); i++) {
    if (gl_response_decode(m, len, len, &r, NULL, 0) != GPULEASE_OK || r.status == GPULEASE_OK)
      continue;
    gpulease_error e;
    set_err(&e, (gpulease_status)r.status, "%.*s", (int)r.msg_len, r.msg);
    gl_session_note_failure(s, r.op, first_seq ? first_seq + i : 0, &e);
  }
}

/* Reads the reply of the oldest pipelined request (an op or a BATCH). A
 * failed reply is recorded; only a connection error is returned (the FIFO
 * is then abandoned: its replies cannot be told apart from lost ones any
 * more). */
static gpulease_status fifo_pop(gpulease_session *s, gpulease_error *err) {
  gl_pending p = s->fifo[s->fifo_head];
  s->fifo_head = (s->fifo_head + 1) % s->fifo_cap;
  s->fifo_len--;
  s->fifo_ops -= p.count;
  gl_response resp;
  uint8_t *raw;
  gpulease_error e;
  gpulease_status st = gl_session_wait(s, p.token, p.op, &resp, &raw, &e);
  if (st == GPULEASE_OK) {
    if (p.op == GL_OP_BATCH) note_batch_failures(s, &resp.u.batch, p.seq, 0);
    free(raw);
    return GPULEASE_OK;
  }
  if (!raw) { /* the transport failed, not the op */
    fifo_clear(s, true);
    if (err) *err = e;
    return st;
  }
  free(raw);
  gl_session_note_failure(s, p.op, p.seq, &e);
  return GPULEASE_OK;
}

gpulease_status gl_session_drain(gpulease_session *s, gpulease_error *err) {
  gpulease_status st = batch_flush(s, err);
  while (st == GPULEASE_OK && s->fifo_len) st = fifo_pop(s, err);
  return st;
}

#define drain gl_session_drain

/* Sends a pipelined op: batched (see above), or alone for an unordered
 * session or with batching off. */
gpulease_status gl_session_send_pipelined(gpulease_session *s, gl_request *req,
                                          gpulease_error *err) {
  gpulease_status st = gl_session_begin(s, err);
  if (st != GPULEASE_OK) return st;
  if (s->unordered || s->batch_max <= 1) {
    gl_pending p = {.op = req->op, .count = 1};
    st = gl_session_send(s, req, &p.token, &p.seq, err);
    if (st == GPULEASE_OK) st = fifo_push(s, p, err);
    return st == GPULEASE_OK ? gl_lib_ok(err) : st;
  }
  st = batch_add(s, req, err);
  if (st != GPULEASE_OK) return st;
  if (s->fifo_len == 0 || s->batch_count >= s->batch_max ||
      s->batch.len >= GL_SESSION_BATCH_BYTES)
    st = batch_flush(s, err);
  return st == GPULEASE_OK ? gl_lib_ok(err) : st;
}

/* An op that waits for its own reply, sent in two steps so that a caller
 * may read older replies in between (other replies stay queued): with ops
 * batched, the op rides as the last of their BATCH. */
typedef struct waiting {
  uint64_t token;
  uint64_t seq;   /* the op's */
  uint64_t first; /* the BATCH's first seq */
  uint16_t count; /* 1: the op went alone */
  uint16_t op;
  const gl_request *req; /* the op's request (borrowed until wait_end): its
                            reply is decoded for it (gl_response_decode_for) */
} waiting;

static gpulease_status wait_begin(gpulease_session *s, gl_request *req, waiting *w,
                                  gpulease_error *err) {
  gpulease_status st = gl_session_begin(s, err);
  if (st != GPULEASE_OK) return st;
  w->op = req->op;
  w->req = req;
  if (s->batch_count == 0 || s->unordered) {
    w->count = 1;
    st = gl_session_send(s, req, &w->token, &w->seq, err);
    w->first = w->seq;
    return st;
  }
  w->seq = s->next_seq;
  st = batch_add(s, req, err);
  if (st != GPULEASE_OK) return st;
  uint16_t op;
  return batch_send(s, &w->token, &w->count, &w->first, &op, err);
}

/* *raw backs *resp; the caller frees it. */
static gpulease_status wait_end(gpulease_session *s, const waiting *w, gl_response *resp,
                                uint8_t **raw, gpulease_error *err) {
  *raw = NULL;
  if (w->count == 1) {
    gpulease_status st = gl_session_wait_for(s, w->token, w->req, resp, raw, err);
    if (st != GPULEASE_OK) {
      free(*raw);
      *raw = NULL;
    }
    return st;
  }
  gl_response b;
  gpulease_status st = gl_session_wait(s, w->token, GL_OP_BATCH, &b, raw, err);
  if (st != GPULEASE_OK) { /* the whole batch refused: it is this op's failure too */
    free(*raw);
    *raw = NULL;
    return st;
  }
  note_batch_failures(s, &b.u.batch, w->first, 1);
  size_t pos = 0;
  const uint8_t *m = NULL;
  size_t len = 0;
  for (uint16_t i = 0; i < b.u.batch.count; i++)
    gl_batch_next(b.u.batch.replies, b.u.batch.replies_len, &pos, &m, &len);
  st = gl_lib_decode_reply_for(w->req, m, len, resp, err);
  if (st != GPULEASE_OK) {
    free(*raw);
    *raw = NULL;
  }
  return st;
}

/* Sends an op and waits for its own reply. *raw backs *resp; the caller
 * frees it. */
gpulease_status gl_session_send_wait(gpulease_session *s, gl_request *req, gl_response *resp,
                                     uint8_t **raw, uint64_t *seq_out, gpulease_error *err) {
  *raw = NULL;
  waiting w;
  gpulease_status st = wait_begin(s, req, &w, err);
  if (st != GPULEASE_OK) return st;
  if (seq_out) *seq_out = w.seq;
  return wait_end(s, &w, resp, raw, err);
}

/* Allocates a session object for `lease` on `client` (no request is sent).
 * Returns NULL when out of memory. */
static gpulease_session *session_new(gpulease_client *client, const gpulease_lease *lease) {
  gpulease_session *s = calloc(1, sizeof *s);
  gl_pending *fifo = calloc(GL_SESSION_WINDOW + 1, sizeof *fifo);
  if (!s || !fifo) {
    free(s);
    free(fifo);
    return NULL;
  }
  s->client = client;
  s->generation = client->generation;
  s->auth.lease_id = lease->id;
  memcpy(s->auth.secret, lease->secret, sizeof s->auth.secret);
  s->gpu_index = lease->gpu_index;
  s->next_seq = 1;
  s->fifo = fifo;
  s->fifo_cap = GL_SESSION_WINDOW + 1;
  gl_buf_init(&s->batch);
  gl_buf_init(&s->sendbuf);
  gl_buf_init(&s->burstbuf);
  s->batch_max = GL_SESSION_BATCH_OPS;
  return s;
}

static void session_free(gpulease_session *s) {
  gl_lib_stage_free(s);
  gl_buf_free(&s->batch);
  gl_buf_free(&s->sendbuf);
  gl_buf_free(&s->burstbuf);
  free(s->fifo);
  free(s);
}

/* ======================================================================
 * Open, close, attach, detach
 * ==================================================================== */

gpulease_status gpulease_session_open(gpulease_client *client, const gpulease_lease *lease,
                                      gpulease_session **out, gpulease_error *err) {
  if (!client || !lease || !out)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "client, lease and out are required");
  gpulease_session *s = session_new(client, lease);
  if (!s) return set_err(err, GPULEASE_NO_MEMORY, "out of memory");
  gl_request req = {.op = GL_OP_SESSION_OPEN};
  req.u.auth = s->auth;
  gl_response resp;
  uint8_t *raw;
  gpulease_status st = gl_lib_exchange(client, &req, &resp, &raw, err);
  if (st != GPULEASE_OK) {
    session_free(s);
    return st;
  }
  s->id = resp.u.handle;
  free(raw);
  *out = s;
  return gl_lib_ok(err);
}

gpulease_status gl_session_attach(gpulease_client *client, const gpulease_lease *lease,
                                  uint64_t session_id, bool unordered, gpulease_session **out,
                                  gpulease_error *err) {
  if (!client || !lease || !out)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "client, lease and out are required");
  gpulease_session *s = session_new(client, lease);
  if (!s) return set_err(err, GPULEASE_NO_MEMORY, "out of memory");
  s->id = session_id;
  s->unordered = unordered;
  *out = s;
  return gl_lib_ok(err);
}

gpulease_status gl_session_detach(gpulease_session *s, gpulease_error *err) {
  if (!s) return gl_lib_ok(err);
  gpulease_status st = gl_session_begin(s, err);
  if (st == GPULEASE_OK) st = drain(s, err);
  if (st == GPULEASE_OK && s->fail_status != GPULEASE_OK)
    st = set_err(err, s->fail_status, "%s", s->fail_msg);
  if (st == GPULEASE_OK) gl_lib_ok(err);
  session_free(s);
  return st;
}

gpulease_status gpulease_session_close(gpulease_session *s, gpulease_error *err) {
  if (!s) return gl_lib_ok(err);
  gpulease_status st = gl_session_begin(s, err);
  if (st == GPULEASE_OK) st = drain(s, err);
  if (st == GPULEASE_OK) {
    gl_request req = {.op = GL_OP_SESSION_CLOSE};
    gl_response resp;
    uint8_t *raw;
    st = gl_session_send_wait(s, &req, &resp, &raw, NULL, err);
    free(raw);
  }
  session_free(s);
  return st == GPULEASE_OK ? gl_lib_ok(err) : st;
}

uint64_t gpulease_session_id(const gpulease_session *s) {
  return s ? s->id : 0;
}

gpulease_status gpulease_session_flush(gpulease_session *s, gpulease_error *err) {
  gpulease_status st = gl_session_begin(s, err);
  if (st == GPULEASE_OK) st = batch_flush(s, err);
  return st == GPULEASE_OK ? gl_lib_ok(err) : st;
}

gpulease_status gpulease_session_set_batch(gpulease_session *s, unsigned max_ops,
                                           gpulease_error *err) {
  if (!s) return set_err(err, GPULEASE_INVALID_ARGUMENT, "session is NULL");
  if (max_ops < 1 || max_ops > GL_WIRE_MAX_BATCH)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "max_ops %u out of range 1..%d", max_ops,
                   GL_WIRE_MAX_BATCH);
  gpulease_status st = gpulease_session_flush(s, err);
  if (st != GPULEASE_OK) return st;
  s->batch_max = (uint16_t)max_ops;
  return gl_lib_ok(err);
}

void gpulease_session_set_progress(gpulease_session *s, gpulease_progress_fn fn, void *user) {
  if (!s) return;
  s->progress = fn;
  s->progress_user = fn ? user : NULL;
}

/* ======================================================================
 * SYNC
 * ==================================================================== */

void gpulease_op_failure_init(gpulease_op_failure *failure) {
  if (!failure) return;
  memset(failure, 0, sizeof *failure);
  failure->struct_version = GPULEASE_OP_FAILURE_VERSION;
}

/* A caller's failure struct (NULL is fine) of a version this library
 * knows, checked before anything is sent. */
static gpulease_status failure_check(const gpulease_op_failure *f, gpulease_error *err) {
  if (f && !gl_lib_version_ok(f->struct_version, GPULEASE_OP_FAILURE_VERSION))
    return gl_lib_version_err(err, "op failure", f->struct_version);
  return GPULEASE_OK;
}

static void failure_set(gpulease_op_failure *f, gpulease_status st, uint16_t op, uint64_t seq) {
  if (!f) return;
  GL_LIB_CLEAR_KEEP_VERSION(f);
  f->status = st;
  if (st == GPULEASE_OK) return;
  f->op = op;
  if (op) snprintf(f->op_name, sizeof f->op_name, "%s", gl_op_name(op));
  f->seq = seq;
}

/* KERNEL_OUTPUT, unordered (seq 0: it runs after every op of the session
 * sent before it, and a daemon that predates it refuses it without a seq
 * going missing): hands the lease's pending kernel output to the client's
 * callback. UNSUPPORTED from such a daemon stops asking on this client. */
static void kout_deliver(gpulease_session *s, const gl_kout *k) {
  gpulease_client *c = s->client;
  c->kout_known = true;
  if (c->kout_fn && (k->len || k->dropped || k->flags))
    c->kout_fn(c->kout_user, s->auth.lease_id, (const char *)k->text, k->len, k->dropped,
               k->flags);
}

static gpulease_status kout_fetch(gpulease_session *s, gpulease_error *err) {
  gpulease_client *c = s->client;
  if (!c->kout_fn || c->kout_refused) return gl_lib_ok(err);
  gpulease_status st = batch_flush(s, err);
  if (st != GPULEASE_OK) return st;
  while (s->fifo_len && (st = fifo_pop(s, err)) == GPULEASE_OK) {
  }
  if (st != GPULEASE_OK) return st;
  gl_request req = {.op = GL_OP_KERNEL_OUTPUT};
  bool was = s->unordered;
  s->unordered = true;
  uint64_t token, seq;
  st = gl_session_send(s, &req, &token, &seq, err);
  s->unordered = was;
  if (st != GPULEASE_OK) return st;
  gl_response resp;
  uint8_t *raw = NULL;
  st = gl_session_wait(s, token, GL_OP_KERNEL_OUTPUT, &resp, &raw, err);
  if (st == GPULEASE_UNSUPPORTED) {
    c->kout_refused = true;
    free(raw);
    return gl_lib_ok(err);
  }
  if (st == GPULEASE_OK) kout_deliver(s, &resp.u.kout);
  free(raw);
  return st;
}

gpulease_status gpulease_session_kernel_output(gpulease_session *session, gpulease_error *err) {
  if (!session) return set_err(err, GPULEASE_INVALID_ARGUMENT, "session is NULL");
  gpulease_status st = gl_session_begin(session, err);
  if (st != GPULEASE_OK) return st;
  return kout_fetch(session, err);
}

/* Sends SYNC with ack_seq (in one BATCH with the ops batched before it),
 * reads the older replies still outstanding, then the SYNC's: reports the
 * daemon's failure. One round trip. */
static gpulease_status sync_op(gpulease_session *s, uint64_t ack_seq,
                               gpulease_op_failure *failure, gpulease_error *err) {
  failure_set(failure, GPULEASE_OK, 0, 0);
  if (!s) return set_err(err, GPULEASE_INVALID_ARGUMENT, "session is NULL");
  gl_request req = {.op = GL_OP_SYNC};
  req.u.sync.ack_seq = ack_seq;
  waiting w;
  gpulease_status st = wait_begin(s, &req, &w, err);
  while (st == GPULEASE_OK && s->fifo_len) st = fifo_pop(s, err);
  if (st != GPULEASE_OK) {
    failure_set(failure, st, 0, 0);
    return st;
  }
  /* Kernel output: with a daemon known to answer KERNEL_OUTPUT, it goes
   * right behind the SYNC, in the session's order, and both answers come
   * in one round trip; otherwise it is asked after the SYNC (below). */
  gpulease_client *c = s->client;
  bool kout_piped = false;
  uint64_t ktoken = 0;
  if (c->kout_fn && !c->kout_refused && c->kout_known) {
    gl_request kreq = {.op = GL_OP_KERNEL_OUTPUT};
    uint64_t kseq;
    gpulease_error kerr;
    kout_piped = gl_session_send(s, &kreq, &ktoken, &kseq, &kerr) == GPULEASE_OK;
  }
  gl_response resp;
  uint8_t *raw;
  uint64_t seq = w.seq;
  /* A SYNC waits for the GPU: the answer comes as soon as the stream is
   * done, which a client asleep in poll() would learn a wake-up later. */
  gl_qclient_set_spin(s->client->q, GL_SESSION_SYNC_SPIN_NS);
  st = wait_end(s, &w, &resp, &raw, err);
  gl_qclient_set_spin(s->client->q, 0);
  if (kout_piped) {
    gl_response kresp;
    uint8_t *kraw = NULL;
    gpulease_error kerr;
    if (gl_session_wait(s, ktoken, GL_OP_KERNEL_OUTPUT, &kresp, &kraw, &kerr) == GPULEASE_OK)
      kout_deliver(s, &kresp.u.kout);
    free(kraw);
  }
  if (st != GPULEASE_OK) {
    /* The SYNC itself failed (lease gone, unknown session, connection). */
    failure_set(failure, st, gl_lib_conn_error(st) ? 0 : GL_OP_SYNC, seq);
    return st;
  }
  const gl_sync_resp r = resp.u.sync;
  if (!kout_piped && c->kout_fn && !c->kout_refused) {
    /* what the kernels printed before this SYNC, to the callback */
    gpulease_error kerr;
    (void)kout_fetch(s, &kerr);
  }
  /* The reply reports the failure as it stood when the SYNC ran; the
   * acknowledgement it carried clears it afterwards. */
  bool acked = ack_seq && (r.error_seq == ack_seq || ack_seq == GL_SYNC_ACK_ANY);
  if (r.error_status == GPULEASE_OK || acked) {
    s->fail_status = GPULEASE_OK;
    free(raw);
    return gl_lib_ok(err);
  }
  st = (gpulease_status)r.error_status;
  failure_set(failure, st, r.error_op, r.error_seq);
  if (resp.msg_len)
    set_err(err, st, "%.*s", (int)resp.msg_len, resp.msg);
  else if (s->fail_status == st && s->fail_seq == r.error_seq && s->fail_op == r.error_op &&
           s->fail_msg[0])
    set_err(err, st, "%s", s->fail_msg);
  else
    set_err(err, st, "%s (seq %" PRIu64 ") failed: %s", gl_op_name(r.error_op), r.error_seq,
            gpulease_status_name(st));
  free(raw);
  return st;
}

gpulease_status gpulease_session_sync(gpulease_session *s, gpulease_op_failure *failure,
                                      gpulease_error *err) {
  gpulease_status st = failure_check(failure, err);
  if (st != GPULEASE_OK) return st;
  return sync_op(s, 0, failure, err);
}

gpulease_status gpulease_session_acknowledge(gpulease_session *s, uint64_t failed_seq,
                                             gpulease_error *err) {
  return sync_op(s, failed_seq, NULL, err);
}

/* ======================================================================
 * Modules and functions
 * ==================================================================== */

gpulease_status gpulease_module_load(gpulease_session *s, const void *image, size_t image_size,
                                     gpulease_image_format format, gpulease_module *out,
                                     gpulease_module_source *source, gpulease_error *err) {
  if (!s || !out) return set_err(err, GPULEASE_INVALID_ARGUMENT, "session and out are required");
  if (!image || image_size == 0 || image_size > UINT32_MAX)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "image missing, empty or larger than 4 GiB");
  if ((unsigned)format > GPULEASE_IMAGE_FATBIN)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "unknown image format %u", (unsigned)format);
  if (format == GPULEASE_IMAGE_PTX || format == GPULEASE_IMAGE_AUTO) {
    gpulease_status cst = gl_lib_ptx_precheck(s->client, s->gpu_index, image, image_size, err);
    if (cst != GPULEASE_OK) return cst;
  }
  gl_request req = {.op = GL_OP_MODULE_LOAD};
  req.u.module_load.image_format = (uint8_t)format;
  req.u.module_load.image = image;
  req.u.module_load.image_len = (uint32_t)image_size;
  gl_response resp;
  uint8_t *raw;
  gpulease_status st = gl_session_send_wait(s, &req, &resp, &raw, NULL, err);
  if (st != GPULEASE_OK) return st;
  *out = resp.u.module_load.module;
  if (source) {
    switch (resp.u.module_load.cache) {
    case GL_MODULE_CACHE_CONTEXT: *source = GPULEASE_MODULE_IN_CONTEXT; break;
    case GL_MODULE_CACHE_DISK: *source = GPULEASE_MODULE_DISK_CACHE; break;
    default: *source = GPULEASE_MODULE_LOADED; break;
    }
  }
  free(raw);
  return GPULEASE_OK;
}

gpulease_status gpulease_module_unload(gpulease_session *s, gpulease_module module,
                                       gpulease_error *err) {
  if (!s) return set_err(err, GPULEASE_INVALID_ARGUMENT, "session is NULL");
  gpulease_status st = gl_session_check_handle(module, "module", err);
  if (st != GPULEASE_OK) return st;
  gl_request req = {.op = GL_OP_MODULE_UNLOAD};
  req.u.handle.handle = module;
  return gl_session_send_pipelined(s, &req, err);
}

void gpulease_func_info_init(gpulease_func_info *info) {
  if (!info) return;
  memset(info, 0, sizeof *info);
  info->struct_version = GPULEASE_FUNC_INFO_VERSION;
}

gpulease_status gpulease_function_get(gpulease_session *s, gpulease_module module,
                                      const char *name, gpulease_function *out,
                                      gpulease_func_info *info, gpulease_error *err) {
  if (!s || !out) return set_err(err, GPULEASE_INVALID_ARGUMENT, "session and out are required");
  if (info && !gl_lib_version_ok(info->struct_version, GPULEASE_FUNC_INFO_VERSION))
    return gl_lib_version_err(err, "function info", info->struct_version);
  gpulease_status st = gl_session_check_handle(module, "module", err);
  if (st != GPULEASE_OK) return st;
  size_t len = name ? strlen(name) : 0;
  if (len == 0 || len > GL_WIRE_MAX_KERNEL_NAME)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "kernel name missing or longer than %d bytes",
                   GL_WIRE_MAX_KERNEL_NAME);
  gl_request req = {.op = GL_OP_FUNC_INFO};
  req.u.func_info.module = module;
  req.u.func_info.kernel_name = name;
  req.u.func_info.kernel_name_len = (uint16_t)len;
  gl_response resp;
  uint8_t *raw;
  st = gl_session_send_wait(s, &req, &resp, &raw, NULL, err);
  if (st != GPULEASE_OK) return st;
  const gl_func_info_resp *r = &resp.u.func_info;
  *out = r->function;
  if (info) {
    GL_LIB_CLEAR_KEEP_VERSION(info);
    info->num_regs = r->num_regs;
    info->max_threads_per_block = r->max_threads_per_block;
    info->static_shared_bytes = r->static_shared_bytes;
    info->local_bytes = r->local_bytes;
    info->const_bytes = r->const_bytes;
    info->ptx_version = r->ptx_version;
    info->binary_version = r->binary_version;
    if (r->param_count == GL_WIRE_PARAMS_UNKNOWN || r->param_count > GPULEASE_MAX_PARAMS) {
      info->param_count = -1;
    } else {
      info->param_count = r->param_count;
      memcpy(info->param_sizes, r->param_sizes, r->param_count * sizeof r->param_sizes[0]);
    }
  }
  free(raw);
  return GPULEASE_OK;
}

/* ======================================================================
 * Launch
 * ==================================================================== */

gpulease_arg gpulease_arg_buffer(gpulease_buffer buffer, uint64_t offset) {
  gpulease_arg a;
  memset(&a, 0, sizeof a);
  a.kind = GPULEASE_ARG_BUFFER;
  a.buffer = buffer;
  a.offset = offset;
  return a;
}

gpulease_arg gpulease_arg_scalar(const void *value, uint32_t size) {
  gpulease_arg a;
  memset(&a, 0, sizeof a);
  a.kind = GPULEASE_ARG_SCALAR;
  a.size = size <= GPULEASE_MAX_SCALAR_BYTES ? size : 0; /* 0 is refused by launch */
  if (value && a.size) memcpy(a.value, value, a.size);
  return a;
}

/* Checks a launch's arguments and encodes it into *req, its params into
 * *params: the caller frees params on success; on failure there is
 * nothing to free. */
gpulease_status gl_session_launch_req(gpulease_session *s, gpulease_function fn,
                                      const uint32_t grid[3], const uint32_t block[3],
                                      uint32_t shared_mem_bytes, const gpulease_arg *args,
                                      size_t arg_count, gl_request *req, gl_buf *params,
                                      gpulease_error *err) {
  if (!s || !grid || !block)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "session, grid and block are required");
  gpulease_status st = gl_session_check_handle(fn, "function", err);
  if (st != GPULEASE_OK) return st;
  for (int i = 0; i < 3; i++)
    if (grid[i] == 0 || block[i] == 0)
      return set_err(err, GPULEASE_INVALID_ARGUMENT,
                     "grid and block dimensions must be >= 1 (grid %" PRIu32 ",%" PRIu32
                     ",%" PRIu32 ", block %" PRIu32 ",%" PRIu32 ",%" PRIu32 ")",
                     grid[0], grid[1], grid[2], block[0], block[1], block[2]);
  if (arg_count > GPULEASE_MAX_PARAMS)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "%zu args: at most %d", arg_count,
                   GPULEASE_MAX_PARAMS);
  if (arg_count && !args) return set_err(err, GPULEASE_INVALID_ARGUMENT, "args is NULL");
  gl_buf_init(params);
  for (size_t i = 0; i < arg_count; i++) {
    const gpulease_arg *a = &args[i];
    gl_launch_param p;
    memset(&p, 0, sizeof p);
    if (a->kind == GPULEASE_ARG_BUFFER) {
      if (a->buffer == 0) {
        gl_buf_free(params);
        return set_err(err, GPULEASE_INVALID_HANDLE, "arg %zu: buffer handle 0 is never valid", i);
      }
      p.kind = GL_LAUNCH_PARAM_BUFFER;
      p.buffer = a->buffer;
      p.offset = a->offset;
    } else if (a->kind == GPULEASE_ARG_SCALAR) {
      if (a->size == 0 || a->size > GPULEASE_MAX_SCALAR_BYTES) {
        gl_buf_free(params);
        return set_err(err, GPULEASE_INVALID_ARGUMENT,
                       "arg %zu: scalar size %" PRIu32 " is not 1..%d bytes", i, a->size,
                       GPULEASE_MAX_SCALAR_BYTES);
      }
      p.kind = GL_LAUNCH_PARAM_SCALAR;
      p.size = (uint8_t)a->size;
      p.value = a->value;
    } else {
      gl_buf_free(params);
      return set_err(err, GPULEASE_INVALID_ARGUMENT, "arg %zu: unknown kind %d", i, (int)a->kind);
    }
    st = gl_launch_param_put(params, &p);
    if (st != GPULEASE_OK) {
      gl_buf_free(params);
      return set_err(err, st, "arg %zu: %s", i,
                     st == GPULEASE_NO_MEMORY ? "out of memory" : "refused by the encoder");
    }
  }
  if (params->oom) {
    gl_buf_free(params);
    return set_err(err, GPULEASE_NO_MEMORY, "out of memory");
  }
  if (params->len > GL_WIRE_MAX_LAUNCH_PARAM_BYTES) {
    size_t n = params->len;
    gl_buf_free(params);
    return set_err(err, GPULEASE_INVALID_ARGUMENT,
                   "the args take %zu bytes encoded: at most %d", n,
                   GL_WIRE_MAX_LAUNCH_PARAM_BYTES);
  }
  memset(req, 0, sizeof *req);
  req->op = GL_OP_LAUNCH;
  gl_launch_req *l = &req->u.launch;
  l->function = fn;
  memcpy(l->grid, grid, sizeof l->grid);
  memcpy(l->block, block, sizeof l->block);
  l->shared_mem_bytes = shared_mem_bytes;
  l->param_count = (uint16_t)arg_count;
  l->params_raw = params->data;
  l->params_raw_len = params->len;
  return GPULEASE_OK;
}

gpulease_status gpulease_launch(gpulease_session *s, gpulease_function fn, const uint32_t grid[3],
                                const uint32_t block[3], uint32_t shared_mem_bytes,
                                const gpulease_arg *args, size_t arg_count,
                                gpulease_error *err) {
  gl_request req;
  gl_buf params;
  gpulease_status st =
      gl_session_launch_req(s, fn, grid, block, shared_mem_bytes, args, arg_count, &req, &params, err);
  if (st != GPULEASE_OK) return st;
  st = gl_session_send_pipelined(s, &req, err);
  gl_buf_free(&params);
  return st;
}

gpulease_status gpulease_launch_sync(gpulease_session *s, gpulease_function fn,
                                     const uint32_t grid[3], const uint32_t block[3],
                                     uint32_t shared_mem_bytes, const gpulease_arg *args,
                                     size_t arg_count, gpulease_op_failure *failure,
                                     gpulease_error *err) {
  gpulease_status st = failure_check(failure, err);
  if (st != GPULEASE_OK) return st;
  failure_set(failure, GPULEASE_OK, 0, 0);
  gl_request req;
  gl_buf params;
  st = gl_session_launch_req(s, fn, grid, block, shared_mem_bytes, args, arg_count, &req, &params, err);
  if (st != GPULEASE_OK) { /* params was freed, or never filled */
    failure_set(failure, st, 0, 0);
    return st;
  }
  st = gl_session_begin(s, err);
  if (st == GPULEASE_OK) {
    /* Held in the pending batch, where the SYNC joins it: one BATCH. An
     * unordered session or one with batching off sends it alone. */
    if (!s->unordered && s->batch_max > 1) st = batch_add(s, &req, err);
    else st = gl_session_send_pipelined(s, &req, err);
  }
  gl_buf_free(&params);
  if (st != GPULEASE_OK) {
    failure_set(failure, st, 0, 0);
    return st;
  }
  return sync_op(s, 0, failure, err);
}
