/*
 * wk_reply.c - the worker's replies (wk_reply.h): encoding, the write
 * behind the call tag, a BATCH op's reply to its collector, and the
 * kernel output a lease's reply carries.
 */
#include "worker/wk_reply.h"

#include <pthread.h>
#include <string.h>

#include "common/lat.h"
#include "common/log.h"
#include "worker/batch.h"
#include "worker/ipc.h"

int gl_wkproc_send(gl_wkproc *p, uint64_t tag, gl_buf *b) {
  if (b->oom) {
    gl_buf_free(b);
    return -1;
  }
  pthread_mutex_lock(&p->write_mu);
  int rc = gl_ipc_write_call(p->fd, tag, b->data, b->len);
  GL_LAT(GL_LAT_W_REPLY);
  pthread_mutex_unlock(&p->write_mu);
  gl_buf_free(b);
  if (rc != 0) GL_WARN("worker: cannot write a reply: the daemon is gone");
  return rc;
}

int gl_wk_send(gl_wk *w, uint64_t tag, gl_buf *b) { return gl_wkproc_send(w->p, tag, b); }

/* An error reply of op in b (initialised here). 0, or -1 out of memory. */
static int encode_error(gl_buf *b, uint16_t op, gpulease_status st, const char *msg) {
  gl_buf_init(b);
  if (gl_response_encode_error(op, st, b, "%s", msg) != GPULEASE_OK) {
    gl_buf_free(b);
    return -1;
  }
  GL_DEBUG("worker: %s -> %s: %s", gl_op_name(op), gpulease_status_name((int)st), msg);
  return 0;
}

int gl_wkproc_reply_error(gl_wkproc *p, uint64_t tag, uint16_t op, gpulease_status st,
                          const char *msg) {
  gl_buf b;
  return encode_error(&b, op, st, msg) != 0 ? -1 : gl_wkproc_send(p, tag, &b);
}

int gl_wkproc_reply(gl_wkproc *p, uint64_t tag, const gl_response *resp) {
  gl_buf b;
  gl_buf_init(&b);
  if (gl_response_encode(resp, &b) != GPULEASE_OK) {
    gl_buf_free(&b);
    return gl_wkproc_reply_error(p, tag, resp->op, GPULEASE_INTERNAL,
                            "worker out of memory encoding a reply");
  }
  return gl_wkproc_send(p, tag, &b);
}

int gl_wk_reply_error(gl_wk *w, uint64_t tag, uint16_t op, gpulease_status st, const char *msg) {
  return gl_wkproc_reply_error(w->p, tag, op, st, msg);
}

int gl_wk_reply(gl_wk *w, uint64_t tag, const gl_response *resp) {
  return gl_wkproc_reply(w->p, tag, resp);
}

int gl_wkproc_reply_ok(gl_wkproc *p, uint64_t tag, uint16_t op) {
  gl_response r = {.op = op, .status = GPULEASE_OK, .msg = ""};
  return gl_wkproc_reply(p, tag, &r);
}

int gl_wk_reply_ok(gl_wk *w, uint64_t tag, uint16_t op) {
  gl_response r = {.op = op, .status = GPULEASE_OK, .msg = ""};
  return gl_wk_reply(w, tag, &r);
}

/* A job's reply goes to its daemon call, or to its batch's collector. */
static int job_send(gl_wk *w, gl_job *job, gl_buf *b) {
  if (!job->batch) return gl_wk_send(w, job->tag, b);
  if (b->oom) {
    gl_buf_free(b);
    gl_response_encode_error(job->req.op, GPULEASE_INTERNAL, b, "worker out of memory");
  }
  gl_wbatch_put(job, b);
  return 0;
}

int gl_wk_job_error(gl_wk *w, gl_job *job, uint16_t op, gpulease_status st, const char *msg) {
  gl_buf b;
  return encode_error(&b, op, st, msg) != 0 ? -1 : job_send(w, job, &b);
}

int gl_wk_job_reply(gl_wk *w, gl_job *job, const gl_response *resp) {
  gl_buf b;
  gl_buf_init(&b);
  if (gl_response_encode(resp, &b) != GPULEASE_OK) {
    gl_buf_free(&b);
    return gl_wk_job_error(w, job, resp->op, GPULEASE_INTERNAL,
                           "worker out of memory encoding a reply");
  }
  return job_send(w, job, &b);
}

int gl_wk_job_ok(gl_wk *w, gl_job *job, uint16_t op) {
  if (job->batch) {
    gl_wbatch_put_ok(job, op);
    return 0;
  }
  gl_response r = {.op = op, .status = GPULEASE_OK, .msg = ""};
  return gl_wk_job_reply(w, job, &r);
}

/* ---- kernel output ------------------------------------------------------- */

void gl_wk_kout_collect(gl_wk *w, char *asserts, size_t cap) {
  gl_kout_drain(w->p->shared ? NULL : &w->kout, asserts, cap);
}

void gl_wk_kout_take(gl_wk *w, gl_kout *k, char **owned) {
  memset(k, 0, sizeof *k);
  *owned = NULL;
  if (w->p->shared) {
    k->flags = GL_KOUT_F_DISCARDED;
    return;
  }
  gl_kout_buf_take(&w->kout, owned, &k->len, &k->dropped);
  k->text = (const uint8_t *)*owned;
  if (k->dropped) k->flags |= GL_KOUT_F_TRUNCATED;
}
