/*
 * session.c - the worker's sessions: the table, the order of each
 * session's ops, opening and closing (docs/protocol.md, "Sessions").
 *
 * Everything here runs on the worker's main thread, which reads requests:
 * SESSION_OPEN is answered here; every other session op is handed to its
 * session's lane once all ops with a lower seq have been handed over, so a
 * client may pipeline ops on many QUIC streams and still have them run in
 * the order it issued them. What each op does is in session_ops.c.
 */
#include "worker/session.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

/* ---- handles ---------------------------------------------------------------- */

uint64_t gl_session_new_handle(unsigned kind) {
  uint64_t r = 0;
  while ((r & 0x00FFFFFFFFFFFFFFull) == 0) {
    if (gnutls_rnd(GNUTLS_RND_NONCE, &r, sizeof r) != 0) r = 0x5EED; /* cannot fail in practice */
  }
  return ((uint64_t)kind << 56) | (r & 0x00FFFFFFFFFFFFFFull);
}

static uint64_t new_session_id(gl_wk *w) {
  for (;;) {
    uint64_t id = 0;
    if (gnutls_rnd(GNUTLS_RND_NONCE, &id, sizeof id) != 0) id = 1;
    id &= 0x7FFFFFFFFFFFFFFFull;
    if (id == 0) continue;
    bool taken = false;
    for (gl_wsession *s = w->sessions; s; s = s->next) taken |= s->id == id;
    if (!taken) return id;
  }
}

/* ---- table ------------------------------------------------------------------ */

static gl_wsession *find(gl_wk *w, uint64_t id) {
  for (gl_wsession *s = w->sessions; s; s = s->next)
    if (s->id == id) return s;
  return NULL;
}

static void session_free(gl_wsession *s) {
  for (gl_job *j = s->held; j;) {
    gl_job *n = j->next;
    gl_job_free(j);
    j = n;
  }
  gl_hmap_free(&s->buffers);
  gl_hmap_free(&s->modules);
  gl_hmap_free(&s->functions);
  if (s->args_ready) gl_argbuf_free(&s->args);
  free(s->err);
  free(s);
}

static void unlink_session(gl_wk *w, gl_wsession *s) {
  pthread_mutex_lock(&w->sess_mu);
  for (gl_wsession **p = &w->sessions; *p; p = &(*p)->next) {
    if (*p == s) {
      *p = s->next;
      break;
    }
  }
  pthread_mutex_unlock(&w->sess_mu);
}

void gl_session_reap(gl_wk *w) {
  for (;;) {
    gl_wsession *dead = NULL;
    for (gl_wsession *s = w->sessions; s; s = s->next)
      if (atomic_load(&s->closed)) dead = s;
    if (!dead) return;
    unlink_session(w, dead);
    gl_lane_stop(dead->lane);
    session_free(dead);
  }
}

void gl_session_close_all(gl_wk *w) {
  while (w->sessions) {
    gl_wsession *s = w->sessions;
    unlink_session(w, s);
    gl_lane_stop(s->lane); /* finishes the op running now, drops the rest */
    if (!atomic_load(&s->closed)) gl_session_release_all(s);
    session_free(s);
  }
}

/* ---- SESSION_OPEN ----------------------------------------------------------- */

static void open_session(gl_wk *w, gl_job *job) {
  const uint16_t op = GL_OP_SESSION_OPEN;
  char msg[1200];
  if (!w->initialised) {
    gl_wk_reply_error(w, job->tag, op, GPULEASE_INTERNAL, "worker not initialised");
    return;
  }
  if (atomic_load(&w->lost)) {
    pthread_mutex_lock(&w->lost_mu);
    snprintf(msg, sizeof msg,
             "the lease's CUDA context was lost (%s); close the lease's sessions to get a fresh "
             "one",
             w->lost_msg);
    pthread_mutex_unlock(&w->lost_mu);
    gl_wk_reply_error(w, job->tag, op, GPULEASE_LAUNCH_FAILED, msg);
    return;
  }
  size_t open_now = 0;
  for (gl_wsession *s = w->sessions; s; s = s->next) open_now += !atomic_load(&s->closed);
  if (open_now >= GL_WK_MAX_SESSIONS) {
    snprintf(msg, sizeof msg, "the lease already has %d sessions open (the most it may have)",
             GL_WK_MAX_SESSIONS);
    gl_wk_reply_error(w, job->tag, op, GPULEASE_CAPACITY_EXCEEDED, msg);
    return;
  }
  gl_wsession *s = calloc(1, sizeof *s);
  char *err = malloc(GL_WK_ERR_MAX);
  if (!s || !err) {
    free(s);
    free(err);
    gl_wk_reply_error(w, job->tag, op, GPULEASE_INTERNAL, "worker out of memory");
    return;
  }
  s->w = w;
  s->err = err;
  s->next_seq = 1;
  gl_hmap_init(&s->buffers);
  gl_hmap_init(&s->modules);
  gl_hmap_init(&s->functions);
  atomic_init(&s->closed, false);
  err[0] = 0;
  gpulease_status st = w->be->ops->stream_create(w->be, &s->stream, err, GL_WK_ERR_MAX);
  if (st != GPULEASE_OK) {
    gl_wk_reply_error(w, job->tag, op, st, err);
    session_free(s);
    return;
  }
  s->lane = gl_lane_start(gl_session_run, s);
  if (!s->lane) {
    w->be->ops->stream_destroy(w->be, s->stream);
    session_free(s);
    gl_wk_reply_error(w, job->tag, op, GPULEASE_INTERNAL, "cannot start the session's thread");
    return;
  }
  s->id = new_session_id(w);
  pthread_mutex_lock(&w->sess_mu);
  s->next = w->sessions;
  w->sessions = s;
  w->session_count++;
  pthread_mutex_unlock(&w->sess_mu);
  GL_DEBUG("worker: session %" PRIu64 " opened", s->id);
  gl_response r = {.op = op, .status = GPULEASE_OK, .msg = ""};
  r.u.handle = s->id;
  gl_wk_reply(w, job->tag, &r);
}

/* ---- order ------------------------------------------------------------------ */

static bool closing(const gl_wsession *s);

/* Hands job to the lane; a SESSION_CLOSE marks the session so that nothing
 * is handed over after it. */
static void hand_over(gl_wsession *s, gl_job *job) {
  if (job->req.op == GL_OP_SESSION_CLOSE) s->next_seq = UINT64_MAX; /* nothing after it */
  gl_lane_push(s->lane, job);
}

static bool closing(const gl_wsession *s) { return s->next_seq == UINT64_MAX; }

static void reply_gone(gl_wk *w, gl_job *job, uint64_t id) {
  char msg[160];
  snprintf(msg, sizeof msg, "no session %" PRIu64 " on this lease (never opened, or closed)", id);
  gl_wk_reply_error(w, job->tag, job->req.op, GPULEASE_NOT_FOUND, msg);
  gl_job_free(job);
}

void gl_session_dispatch(gl_wk *w, gl_job *job) {
  if (job->req.op == GL_OP_SESSION_OPEN) {
    open_session(w, job);
    gl_job_free(job);
    return;
  }
  const gl_session_ref *ref = gl_request_session(&job->req);
  gl_wsession *s = ref ? find(w, ref->session_id) : NULL;
  if (!s || closing(s) || atomic_load(&s->closed)) {
    reply_gone(w, job, ref ? ref->session_id : 0);
    return;
  }
  uint64_t seq = ref->seq;
  char msg[256];
  if (seq == 0) { /* unordered: after what was handed over already */
    hand_over(s, job);
    return;
  }
  if (seq < s->next_seq) {
    snprintf(msg, sizeof msg, "seq %" PRIu64 " was already used in session %" PRIu64
             " (the next is %" PRIu64 ")", seq, s->id, s->next_seq);
    gl_wk_reply_error(w, job->tag, job->req.op, GPULEASE_INVALID_ARGUMENT, msg);
    gl_job_free(job);
    return;
  }
  if (seq - s->next_seq > GL_WS_MAX_AHEAD) {
    snprintf(msg, sizeof msg, "seq %" PRIu64 " is more than %d ahead of the next (%" PRIu64 ")",
             seq, GL_WS_MAX_AHEAD, s->next_seq);
    gl_wk_reply_error(w, job->tag, job->req.op, GPULEASE_INVALID_ARGUMENT, msg);
    gl_job_free(job);
    return;
  }
  if (seq > s->next_seq) { /* early: hold it, sorted by seq */
    gl_job **p = &s->held;
    while (*p && gl_request_session(&(*p)->req)->seq < seq) p = &(*p)->next;
    if (*p && gl_request_session(&(*p)->req)->seq == seq) {
      snprintf(msg, sizeof msg, "seq %" PRIu64 " was already used in session %" PRIu64, seq, s->id);
      gl_wk_reply_error(w, job->tag, job->req.op, GPULEASE_INVALID_ARGUMENT, msg);
      gl_job_free(job);
      return;
    }
    if (s->held_count >= GL_WS_MAX_HELD) {
      snprintf(msg, sizeof msg, "session %" PRIu64 " already holds %d ops waiting for seq %" PRIu64,
               s->id, GL_WS_MAX_HELD, s->next_seq);
      gl_wk_reply_error(w, job->tag, job->req.op, GPULEASE_BUSY, msg);
      gl_job_free(job);
      return;
    }
    job->next = *p;
    *p = job;
    s->held_count++;
    return;
  }
  s->next_seq++;
  hand_over(s, job);
  while (s->held && !closing(s) && gl_request_session(&s->held->req)->seq == s->next_seq) {
    gl_job *h = s->held;
    s->held = h->next;
    s->held_count--;
    s->next_seq++;
    hand_over(s, h);
  }
  if (closing(s)) { /* ops after SESSION_CLOSE never run */
    while (s->held) {
      gl_job *h = s->held;
      s->held = h->next;
      s->held_count--;
      reply_gone(w, h, s->id);
    }
  }
}
