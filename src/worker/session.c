/*
 * session.c - the worker's sessions: the table, the order of each
 * session's ops, opening and closing (docs/protocol.md, "Sessions").
 *
 * Everything here runs on the worker's main thread, which reads requests:
 * SESSION_OPEN is answered here; every other session op is handed to its
 * session's lane once all ops with a lower seq have been handed over, so a
 * client may pipeline ops on many QUIC streams and still have them run in
 * the order it issued them. What each op does is in session_ops.c.
 * Here too is the lease's implicit session, GPU_SUBMIT's (made on its
 * first GPU_SUBMIT, ended with the lease; its op is in submit.c).
 *
 * It stands on wk_types.h (the lease's state) and wk_reply.h (replies);
 * worker.c and submit.c call it through session.h.
 */
#include "worker/session.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "worker/batch.h"
#include "worker/wk_reply.h"

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
  gl_hmap_free(&s->graphs);
  if (s->args_ready) gl_argbuf_free(&s->args);
  free(s->submit_modules);
  free(s->err);
  free(s);
}

/* A new session of w with nothing in it yet (no stream, no lane); NULL
 * when out of memory. */
static gl_wsession *session_alloc(gl_wk *w) {
  gl_wsession *s = calloc(1, sizeof *s);
  char *err = malloc(GL_WK_ERR_MAX);
  if (!s || !err) {
    free(s);
    free(err);
    return NULL;
  }
  s->w = w;
  s->err = err;
  s->next_seq = 1;
  gl_hmap_init(&s->buffers);
  gl_hmap_init(&s->modules);
  gl_hmap_init(&s->functions);
  gl_hmap_init(&s->graphs);
  atomic_init(&s->closed, false);
  err[0] = 0;
  return s;
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
    gl_wk_job_error(w, job, op, GPULEASE_INTERNAL, "worker not initialised");
    return;
  }
  if (atomic_load(&w->p->lost)) {
    /* Left unanswered: once this worker has exited, the daemon opens the
     * session on a fresh one. */
    return;
  }
  size_t open_now = 0;
  for (gl_wsession *s = w->sessions; s; s = s->next) open_now += !atomic_load(&s->closed);
  if (open_now >= GL_WK_MAX_SESSIONS) {
    snprintf(msg, sizeof msg, "the lease already has %d sessions open (the most it may have)",
             GL_WK_MAX_SESSIONS);
    gl_wk_job_error(w, job, op, GPULEASE_CAPACITY_EXCEEDED, msg);
    return;
  }
  gl_wsession *s = session_alloc(w);
  if (!s) {
    gl_wk_job_error(w, job, op, GPULEASE_INTERNAL, "worker out of memory");
    return;
  }
  gpulease_status st = w->be->ops->stream_create(w->be, &s->stream, s->err, GL_WK_ERR_MAX);
  if (st != GPULEASE_OK) {
    gl_wk_job_error(w, job, op, st, s->err);
    session_free(s);
    return;
  }
  s->lane = gl_lane_start(gl_session_run, s);
  if (!s->lane) {
    w->be->ops->stream_destroy(w->be, s->stream);
    session_free(s);
    gl_wk_job_error(w, job, op, GPULEASE_INTERNAL, "cannot start the session's thread");
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
  gl_wk_job_reply(w, job, &r);
}

/* ---- the implicit session ------------------------------------------------------
 *
 * GPU_SUBMIT's (submit.c): one a lease, made on the first GPU_SUBMIT and
 * kept until the lease ends. It is not in w->sessions, so no client op
 * finds it, SESSION_OPEN does not count it and WORKER_LOST does not list
 * it; its ops come in arrival order (no seqs) and run on its lane.
 */

gl_wsession *gl_session_implicit(gl_wk *w, gl_lane_run_fn run) {
  if (w->implicit) return w->implicit;
  gl_wsession *s = session_alloc(w);
  if (!s) return NULL;
  s->submit_modules = malloc(sizeof *s->submit_modules);
  if (!s->submit_modules) {
    session_free(s);
    return NULL;
  }
  gl_module_cache_init(s->submit_modules, w->modtab);
  s->lane = gl_lane_start(run, s);
  if (!s->lane) {
    session_free(s);
    return NULL;
  }
  w->implicit = s;
  return s;
}

bool gl_session_implicit_stop_within(gl_wk *w, unsigned timeout_ms) {
  gl_wsession *s = w->implicit;
  if (!s || !s->lane) return true;
  bool stopped = gl_lane_stop_within(s->lane, timeout_ms);
  s->lane = NULL; /* stopped and freed, or left to the process exit */
  return stopped;
}

void gl_session_implicit_end(gl_wk *w) {
  gl_wsession *s = w->implicit;
  if (!s) return;
  gl_lane_stop(s->lane); /* NULL once stopped for a lost context */
  gl_session_release_all(s);
  session_free(s);
  w->implicit = NULL;
}

/* ---- order ------------------------------------------------------------------
 *
 * A session's ops run in seq order. An op whose seq is ahead of next_seq
 * is held until every lower seq has arrived; an unordered op (seq 0) that
 * comes while ops are held is held too, right after the last of them, so
 * that it runs after every op received before it. The held list is kept in
 * the order the ops will run: numbered ops sorted by seq, each unordered op
 * just after the op it waits for (after_seq). If the missing seq does not
 * come within the seq timeout, it is given up: it becomes the session's
 * failure (MISSING_SEQ) and the held ops go on, failing fast.
 */

static bool closing(const gl_wsession *s);

/* Hands job to the lane; a SESSION_CLOSE marks the session so that nothing
 * is handed over after it. */
static void hand_over(gl_wsession *s, gl_job *job) {
  if (job->kind == GL_JOB_REQUEST && job->req.op == GL_OP_SESSION_CLOSE)
    s->next_seq = UINT64_MAX; /* nothing after it */
  gl_lane_push(s->lane, job);
}

static bool closing(const gl_wsession *s) { return s->next_seq == UINT64_MAX; }

static void reply_gone(gl_wk *w, gl_job *job, uint64_t id) {
  char msg[160];
  snprintf(msg, sizeof msg, "no session %" PRIu64 " on lease %" PRIu64 " (never opened, or closed)",
           id, w->lease_id);
  gl_wk_job_error(w, job, job->req.op, GPULEASE_NOT_FOUND, msg);
  gl_job_free(job);
}

static uint64_t job_seq(const gl_job *j) { return gl_request_session(&j->req)->seq; }

/* The seq a held job sorts by: its own, or for an unordered op the seq it
 * waits for (it sorts after that op). */
static uint64_t held_key(const gl_job *j) { return job_seq(j) ? job_seq(j) : j->after_seq; }

static gl_job *held_pop(gl_wsession *s) {
  gl_job *h = s->held;
  s->held = h->next;
  if (!s->held) s->held_tail = NULL;
  h->next = NULL;
  s->held_count--;
  s->held_bytes -= h->len;
  return h;
}

/* Hands over, in order, every held op whose turn has come; then restarts
 * the wait for the next missing seq (or ends it). */
static void release_held(gl_wk *w, gl_wsession *s, uint64_t now) {
  while (s->held && !closing(s)) {
    gl_job *h = s->held;
    uint64_t seq = job_seq(h);
    if (seq == 0 ? h->after_seq >= s->next_seq : seq != s->next_seq) break;
    held_pop(s);
    if (seq) s->next_seq++;
    hand_over(s, h);
  }
  if (closing(s)) { /* ops after SESSION_CLOSE never run */
    while (s->held) reply_gone(w, held_pop(s), s->id);
  }
  s->gap_deadline_ns = s->held ? now + (uint64_t)w->seq_timeout_ms * 1000000ull : 0;
}

/* Refuses job with INVALID_ARGUMENT or BUSY and the message; frees it. */
static void refuse(gl_wk *w, gl_job *job, gpulease_status st, const char *msg) {
  gl_wk_job_error(w, job, job->req.op, st, msg);
  gl_job_free(job);
}

/* Holds job (ahead of next_seq, or unordered behind held ops). */
static void hold(gl_wk *w, gl_wsession *s, gl_job *job) {
  char msg[256];
  uint64_t seq = job_seq(job);
  if (s->held_count >= GL_WS_MAX_HELD || s->held_bytes + job->len > GL_WS_MAX_HELD_BYTES) {
    snprintf(msg, sizeof msg,
             "session %" PRIu64 " already holds %zu ops (%" PRIu64 " bytes) waiting for seq %" PRIu64
             " (at most %d ops, %llu bytes); this op's seq stays unused: send it again later",
             s->id, s->held_count, s->held_bytes, s->next_seq, GL_WS_MAX_HELD,
             (unsigned long long)GL_WS_MAX_HELD_BYTES);
    refuse(w, job, GPULEASE_BUSY, msg);
    return;
  }
  gl_job **p = &s->held;
  if (seq == 0) {
    job->after_seq = held_key(s->held_tail);
    p = &s->held_tail->next;
  } else {
    /* After every op with a lower key (unordered ops waiting for a lower
     * seq included), before the first op with a higher one. */
    while (*p && held_key(*p) < seq) p = &(*p)->next;
    if (*p && job_seq(*p) == seq) {
      snprintf(msg, sizeof msg, "seq %" PRIu64 " was already used in session %" PRIu64, seq,
               s->id);
      refuse(w, job, GPULEASE_INVALID_ARGUMENT, msg);
      return;
    }
  }
  job->next = *p;
  *p = job;
  if (!job->next) s->held_tail = job;
  s->held_count++;
  s->held_bytes += job->len;
  if (!s->gap_deadline_ns)
    s->gap_deadline_ns = gl_mono_ns() + (uint64_t)w->seq_timeout_ms * 1000000ull;
}

/* Checks a numbered op's seq (or a BATCH's seqs seq .. seq+count-1):
 * unused and not too far ahead. OK, or refuses and frees job. */
static bool seqs_usable(gl_wk *w, gl_wsession *s, gl_job *job, uint64_t seq, uint64_t count) {
  char msg[256];
  if (seq < s->next_seq) {
    snprintf(msg, sizeof msg, "seq %" PRIu64 " was already used in session %" PRIu64
             " (the next is %" PRIu64 ")", seq, s->id, s->next_seq);
    refuse(w, job, GPULEASE_INVALID_ARGUMENT, msg);
    return false;
  }
  if (seq + count - 1 - s->next_seq > GL_WS_MAX_AHEAD) {
    snprintf(msg, sizeof msg, "seq %" PRIu64 " is more than %d ahead of the next (%" PRIu64 ")",
             seq + count - 1, GL_WS_MAX_AHEAD, s->next_seq);
    refuse(w, job, GPULEASE_INVALID_ARGUMENT, msg);
    return false;
  }
  if (count == 1) return true; /* a single op's duplicate is found when it is held */
  for (gl_job *h = s->held; h; h = h->next) {
    uint64_t hs = job_seq(h);
    if (hs >= seq && hs < seq + count) {
      snprintf(msg, sizeof msg, "seq %" PRIu64 " was already used in session %" PRIu64, hs,
               s->id);
      refuse(w, job, GPULEASE_INVALID_ARGUMENT, msg);
      return false;
    }
  }
  if (seq > s->next_seq &&
      (s->held_count + count > GL_WS_MAX_HELD || s->held_bytes + job->len > GL_WS_MAX_HELD_BYTES)) {
    snprintf(msg, sizeof msg,
             "session %" PRIu64 " already holds %zu ops (%" PRIu64 " bytes) waiting for seq %" PRIu64
             " and the batch's %" PRIu64 " ops do not fit (at most %d ops, %llu bytes); its seqs "
             "stay unused: send it again later",
             s->id, s->held_count, s->held_bytes, s->next_seq, count, GL_WS_MAX_HELD,
             (unsigned long long)GL_WS_MAX_HELD_BYTES);
    refuse(w, job, GPULEASE_BUSY, msg);
    return false;
  }
  return true;
}

/* Routes one op of session s by its seq. */
static void route(gl_wk *w, gl_wsession *s, gl_job *job) {
  uint64_t seq = job_seq(job);
  if (seq == 0) { /* unordered: after every op received before it */
    if (s->held) hold(w, s, job);
    else hand_over(s, job);
    return;
  }
  if (!seqs_usable(w, s, job, seq, 1)) return;
  if (seq > s->next_seq) { /* early: hold it */
    hold(w, s, job);
    return;
  }
  s->next_seq++;
  hand_over(s, job);
  if (s->held) release_held(w, s, gl_mono_ns());
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
  if (job->req.op != GL_OP_BATCH) {
    route(w, s, job);
    return;
  }
  /* A BATCH takes all its seqs or none; then its ops are routed one by
   * one, as if they had come one after another. */
  uint16_t count = job->req.u.batch.count;
  if (ref->seq && !seqs_usable(w, s, job, ref->seq, count)) return;
  if (!ref->seq && s->held && s->held_count + count > GL_WS_MAX_HELD) {
    refuse(w, job, GPULEASE_BUSY, "the session holds too many ops waiting for a lower seq to "
           "hold this unordered batch behind them; send it again later");
    return;
  }
  for (gl_job *j = gl_wbatch_expand(w, job); j;) {
    gl_job *next = j->next;
    j->next = NULL;
    if (closing(s)) reply_gone(w, j, s->id); /* a SESSION_CLOSE earlier in the batch */
    else route(w, s, j);
    j = next;
  }
}

/* ---- missing seqs ------------------------------------------------------------ */

uint64_t gl_session_next_deadline(gl_wk *w) {
  uint64_t first = 0;
  for (gl_wsession *s = w->sessions; s; s = s->next)
    if (s->gap_deadline_ns && (!first || s->gap_deadline_ns < first)) first = s->gap_deadline_ns;
  return first;
}

void gl_session_expire_gaps(gl_wk *w, uint64_t now) {
  for (gl_wsession *s = w->sessions; s; s = s->next) {
    if (!s->gap_deadline_ns || s->gap_deadline_ns > now) continue;
    if (!s->held || closing(s)) {
      s->gap_deadline_ns = 0;
      continue;
    }
    /* The held list starts with a numbered op above next_seq: the seqs
     * between are missing. */
    uint64_t first = s->next_seq, last = held_key(s->held) - 1;
    gl_job *gap = calloc(1, sizeof *gap);
    if (!gap) { /* try again at the next turn of the loop */
      s->gap_deadline_ns = now + 1000000ull;
      continue;
    }
    gap->kind = GL_JOB_GAP;
    gap->req.op = 0;
    gap->gap_first = first;
    gap->gap_last = last;
    GL_WARN("worker: session %" PRIu64 ": seq %" PRIu64 "..%" PRIu64
            " did not arrive within %u ms; giving it up",
            s->id, first, last, w->seq_timeout_ms);
    gl_lane_push(s->lane, gap);
    s->next_seq = last + 1;
    release_held(w, s, now);
  }
}

/* ---- a lost context ------------------------------------------------------------ */

int gl_session_lost_notice(gl_wk *w, unsigned timeout_ms, gl_buf *out, size_t *busy_lanes) {
  *busy_lanes = 0;
  gl_response *r = calloc(1, sizeof *r);
  if (!r) return -1;
  char reason[1100];
  pthread_mutex_lock(&w->p->lost_mu);
  snprintf(reason, sizeof reason, "%s", w->p->lost_msg);
  pthread_mutex_unlock(&w->p->lost_mu);
  r->op = GL_OP_WORKER_LOST;
  r->status = GPULEASE_OK;
  r->msg = reason;
  r->msg_len = (uint16_t)strlen(reason);
  static const char k_lane_busy[] = "the lease's CUDA context was lost after a device fault";
  gl_worker_lost_resp *wl = &r->u.worker_lost;
  for (gl_wsession *s = w->sessions; s && wl->count < GL_WIRE_MAX_LOST_SESSIONS; s = s->next) {
    bool stopped = gl_lane_stop_within(s->lane, timeout_ms);
    s->lane = NULL; /* stopped and freed, or left to the process exit */
    if (!stopped) ++*busy_lanes;
    if (atomic_load(&s->closed)) continue;
    gl_lost_session *e = &wl->sessions[wl->count++];
    e->session_id = s->id;
    if (stopped) {
      const char *msg;
      gl_session_failure_for_lost(s, &e->status, &e->op, &e->seq, &msg);
      e->msg = msg;
    } else { /* its op still runs: its failure cannot be read safely */
      e->status = GPULEASE_LAUNCH_FAILED;
      e->msg = k_lane_busy;
    }
    e->msg_len = (uint16_t)strnlen(e->msg, GL_WIRE_MAX_MESSAGE);
  }
  gpulease_status st = gl_response_encode(r, out);
  free(r);
  return st == GPULEASE_OK ? 0 : -1;
}
