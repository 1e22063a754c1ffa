/*
 * batch.c - see batch.h. It stands on wk_types.h and wk_reply.h, whose
 * job replies put a BATCH op's reply into its collector here.
 */
#include "worker/batch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "worker/wk_reply.h"

typedef struct gl_wbatch {
  gl_wk *w;
  uint64_t tag;
  uint8_t *msg; /* the BATCH request: the ops' bytes */
  uint16_t count;
  atomic_uint refs; /* jobs not yet freed */
  pthread_mutex_t mu;
  gl_buf *replies; /* count, each empty until answered */
  uint16_t *ok_op; /* per op: an OK reply with no result and no message, of
                      this op (0: none); written by the op's only replier */
} gl_wbatch;

static void batch_free(gl_wbatch *b) {
  for (uint16_t i = 0; i < b->count; i++) gl_buf_free(&b->replies[i]);
  free(b->replies);
  free(b->ok_op);
  free(b->msg);
  pthread_mutex_destroy(&b->mu);
  free(b);
}

/* The last job is gone: answer the batch if every op was answered. */
static void batch_finish(gl_wbatch *b) {
  gl_buf list;
  gl_buf_init(&list);
  for (uint16_t i = 0; i < b->count; i++) {
    if (b->ok_op[i]) {
      uint8_t ok[GL_WIRE_HEADER_SIZE + 2] = {GL_WIRE_MAGIC0, GL_WIRE_MAGIC1, GL_WIRE_VERSION,
                                             GL_WIRE_KIND_RESPONSE, (uint8_t)(b->ok_op[i] >> 8),
                                             (uint8_t)b->ok_op[i], 0, 0, 0, 0, 0, 2, 0, 0};
      gl_batch_append(&list, ok, sizeof ok);
      continue;
    }
    if (b->replies[i].len == 0) { /* dropped unanswered */
      gl_buf_free(&list);
      batch_free(b);
      return;
    }
    gl_batch_append(&list, b->replies[i].data, b->replies[i].len);
  }
  gl_response r = {.op = GL_OP_BATCH, .status = GPULEASE_OK, .msg = ""};
  r.u.batch.count = b->count;
  r.u.batch.replies = list.data;
  r.u.batch.replies_len = list.len;
  gl_buf out;
  gl_buf_init(&out);
  if (list.oom || gl_response_encode(&r, &out) != GPULEASE_OK) {
    gl_buf_free(&out);
    gl_wk_reply_error(b->w, b->tag, GL_OP_BATCH, GPULEASE_INTERNAL,
                      "worker out of memory answering a batch");
  } else {
    gl_wk_send(b->w, b->tag, &out);
  }
  gl_buf_free(&list);
  batch_free(b);
}

static void job_released(gl_job *job) {
  gl_wbatch *b = job->batch;
  if (atomic_fetch_sub(&b->refs, 1) == 1) batch_finish(b);
}

void gl_wbatch_put_ok(gl_job *job, uint16_t op) { job->batch->ok_op[job->batch_index] = op; }

void gl_wbatch_put(gl_job *job, gl_buf *reply) {
  gl_wbatch *b = job->batch;
  pthread_mutex_lock(&b->mu);
  gl_buf *slot = &b->replies[job->batch_index];
  gl_buf_free(slot);
  *slot = *reply; /* taken */
  pthread_mutex_unlock(&b->mu);
  gl_buf_init(reply);
}

gl_job *gl_wbatch_expand(gl_wk *w, gl_job *batch_job) {
  const gl_batch_req *br = &batch_job->req.u.batch;
  gl_wbatch *b = calloc(1, sizeof *b);
  gl_buf *replies = calloc(br->count, sizeof *replies);
  uint16_t *ok_op = calloc(br->count, sizeof *ok_op);
  if (!b || !replies || !ok_op) {
    free(b), free(replies), free(ok_op);
    gl_wk_reply_error(w, batch_job->tag, GL_OP_BATCH, GPULEASE_INTERNAL,
                      "worker out of memory for a batch");
    gl_job_free(batch_job);
    return NULL;
  }
  b->w = w;
  b->tag = batch_job->tag;
  b->count = br->count;
  b->replies = replies;
  b->ok_op = ok_op;
  pthread_mutex_init(&b->mu, NULL);
  atomic_init(&b->refs, br->count);
  gl_job *out = NULL, **tail = &out;
  size_t pos = 0;
  for (uint16_t i = 0; i < br->count; i++) {
    const uint8_t *m = NULL;
    size_t len = 0;
    gl_batch_next(br->ops, br->ops_len, &pos, &m, &len);
    gl_job *j = calloc(1, sizeof *j);
    if (!j) { /* answer this op and the rest INTERNAL, through the collector */
      gl_job tmp = {.batch = b};
      for (uint16_t k = i; k < br->count; k++) {
        gl_buf e;
        gl_buf_init(&e);
        gl_response_encode_error(0, GPULEASE_INTERNAL, &e, "worker out of memory");
        tmp.batch_index = k;
        gl_wbatch_put(&tmp, &e);
      }
      atomic_fetch_sub(&b->refs, (unsigned)(br->count - i));
      break;
    }
    /* As the daemon decoded it (decode once); a BATCH that came without
     * its entries was checked by the BATCH's decoder, so this cannot fail. */
    if (br->entries) j->req = br->entries[i];
    else gl_request_decode(m, len, len, &j->req, NULL, NULL, 0);
    j->tag = b->tag;
    j->batch = b;
    j->batch_index = i;
    j->len = i == 0 ? batch_job->len : 0; /* the batch's bytes count once */
    j->release = job_released;
    *tail = j;
    tail = &j->next;
  }
  b->msg = batch_job->msg; /* the ops borrow it */
  batch_job->msg = NULL;
  gl_job_free(batch_job);
  if (!out) batch_finish(b);
  return out;
}
