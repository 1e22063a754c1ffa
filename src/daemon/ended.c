/* ended.c - see ended.h. A small array per lease, searched linearly (at
 * most GL_ENDED_MAX entries, and only touched after a lost context). */
#include "daemon/ended.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "worker/worker.h"

static void forget_at(gl_ended *e, size_t i) {
  memmove(&e->v[i], &e->v[i + 1], (e->n - i - 1) * sizeof e->v[0]);
  e->n--;
}

void gl_ended_add_notice(gl_ended *e, const uint8_t *msg, size_t len) {
  gl_response *r = malloc(sizeof *r);
  char err[256];
  if (!r) {
    GL_ERROR("out of memory reading a worker's WORKER_LOST notice");
    return;
  }
  if (gl_response_decode(msg, len, len, r, err, sizeof err) != GPULEASE_OK ||
      r->op != GL_OP_WORKER_LOST || r->status != GPULEASE_OK) {
    GL_ERROR("a worker sent a notice that is not WORKER_LOST (%s); ignored", err);
    free(r);
    return;
  }
  if (!e->v) {
    e->v = calloc(GL_ENDED_MAX, sizeof *e->v);
    if (!e->v) {
      GL_ERROR("out of memory keeping the sessions of a lost context");
      free(r);
      return;
    }
  }
  const gl_worker_lost_resp *wl = &r->u.worker_lost;
  GL_WARN("a lease's CUDA context was lost (%.*s); %u session(s) ended with it",
          (int)r->msg_len, r->msg, (unsigned)wl->count);
  for (uint16_t i = 0; i < wl->count; i++) {
    const gl_lost_session *ls = &wl->sessions[i];
    gl_ended_remove(e, ls->session_id);
    if (e->n == GL_ENDED_MAX) forget_at(e, 0);
    gl_ended_session *es = &e->v[e->n++];
    es->id = ls->session_id;
    es->status = ls->status;
    es->op = ls->op;
    es->seq = ls->seq;
    snprintf(es->msg, sizeof es->msg, "%.*s", (int)ls->msg_len, ls->msg);
  }
  free(r);
}

const gl_ended_session *gl_ended_find(const gl_ended *e, uint64_t id) {
  for (size_t i = 0; i < e->n; i++)
    if (e->v[i].id == id) return &e->v[i];
  return NULL;
}

void gl_ended_remove(gl_ended *e, uint64_t id) {
  for (size_t i = 0; i < e->n; i++) {
    if (e->v[i].id == id) {
      forget_at(e, i);
      return;
    }
  }
}

void gl_ended_free(gl_ended *e) {
  free(e->v);
  e->v = NULL;
  e->n = 0;
}

/* The answer to one op (not BATCH) of ended session es (a copy). */
static void answer_one(gl_ended *e, const gl_ended_session *es, const gl_request *req,
                       gl_buf *out) {
  gl_response r = {.op = req->op, .status = GPULEASE_OK};
  if (req->op == GL_OP_SESSION_CLOSE) {
    r.msg = "the session had ended with the lease's lost CUDA context";
    r.msg_len = (uint16_t)strlen(r.msg);
    gl_ended_remove(e, es->id);
    gl_response_encode(&r, out);
    return;
  }
  char msg[1600];
  gl_session_ended_msg(msg, sizeof msg, es->id, es->op, es->seq, es->msg);
  if (req->op == GL_OP_SYNC && req->u.sync.ack_seq == 0) {
    r.msg = msg;
    r.msg_len = (uint16_t)strlen(msg);
    r.u.sync.error_status = es->status;
    r.u.sync.error_op = es->op;
    r.u.sync.error_seq = es->seq;
    gl_response_encode(&r, out);
    return;
  }
  gl_response_encode_error(req->op, (gpulease_status)es->status, out, "%s", msg);
}

void gl_ended_answer(gl_ended *e, const gl_ended_session *es_in, const gl_request *req,
                     gl_buf *out) {
  gl_ended_session es = *es_in; /* es_in goes stale once a SESSION_CLOSE forgets it */
  if (req->op != GL_OP_BATCH) {
    answer_one(e, &es, req, out);
    return;
  }
  /* Each op of the batch answered on its own, in one BATCH response. */
  const gl_batch_req *b = &req->u.batch;
  gl_buf list, one;
  gl_buf_init(&list);
  gl_request q;
  size_t pos = 0;
  const uint8_t *m;
  size_t len;
  while (gl_batch_next(b->ops, b->ops_len, &pos, &m, &len)) {
    gl_buf_init(&one);
    if (gl_request_decode(m, len, len, &q, NULL, NULL, 0) == GPULEASE_OK)
      answer_one(e, &es, &q, &one);
    gl_batch_append(&list, one.data, one.len);
    gl_buf_free(&one);
  }
  gl_response r = {.op = GL_OP_BATCH, .status = GPULEASE_OK, .msg = ""};
  r.u.batch.count = b->count;
  r.u.batch.replies = list.data;
  r.u.batch.replies_len = list.len;
  if (list.oom || gl_response_encode(&r, out) != GPULEASE_OK)
    gl_response_encode_error(GL_OP_BATCH, GPULEASE_INTERNAL, out, "daemon out of memory");
  gl_buf_free(&list);
}
