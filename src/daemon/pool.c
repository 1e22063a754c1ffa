/*
 * pool.c - see pool.h. A slot per warm worker: empty, starting (spawned,
 * WORKER_WARM sent), or ready. A slot whose worker failed or died waits
 * RETRY_S before it starts another, so a GPU that cannot open does not
 * spin the daemon.
 */
#include "daemon/pool.h"

#include <ev.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "daemon/teardown.h"
#include "proto/wire.h"

#define RETRY_S 1.0
#define MAX_PER_GPU 16

enum slot_state { EMPTY, STARTING, READY };

typedef struct slot {
  struct gl_pool *pool;
  uint32_t gpu;
  enum slot_state state;
  bool answered; /* WARM answered once (or the start failed) */
  gl_wproc *w;
  ev_timer retry;
} slot;

/* A reused worker: being released (WORKER_RELEASE sent), then a spare.
 * release_done runs exactly once (the reply, or the call failing when the
 * worker ends); the record is freed by whoever comes last of it and the
 * worker's end. */
typedef struct spare {
  struct gl_pool *pool;
  uint32_t gpu;
  gl_wproc *w;
  bool keep;     /* kept once released (else ended: its region freed first) */
  bool taken;    /* handed to a lease before its release was answered */
  bool answered; /* release_done has run */
  bool gone;     /* the worker ended before release_done */
  bool ending;   /* spare_end is killing it */
  bool ready;    /* released: may be handed out */
  double since;  /* ev_now when it became ready */
  ev_timer timeout; /* the release must be answered in time */
  double released_at; /* ev_now when WORKER_RELEASE went out */
  unsigned peak;      /* most of the GPU's teardowns under way at once since */
  gl_teardown *counted; /* the release counts there until release_over */
  struct spare *next;
} spare;

/* A release not answered in this time (a kernel still running in the
 * ended lease) ends the worker instead; without a teardown table, and as
 * the base of its deadline with one (teardown.h). */
#define RELEASE_TIMEOUT_S (GL_TEARDOWN_RELEASE_BASE_MS / 1000.0)

struct gl_pool {
  struct ev_loop *loop;
  const gl_node *node;
  const char *worker_exe, *log_level;
  unsigned per_gpu, nslots;
  slot *slots; /* node->gpu_count x per_gpu */
  spare *spares; /* newest first */
  ev_timer retire;
  gl_teardown *td; /* gl_pool_set_teardown, or NULL */
  gl_pool_hooks hooks;
};

void gl_pool_set_teardown(gl_pool *p, gl_teardown *td) {
  if (p) p->td = td;
}

/* sp's release is no longer under way (answered: measured; else given
 * up). */
static void release_over(spare *sp, bool measured) {
  if (!sp->counted) return;
  gl_teardown_end(sp->counted, sp->gpu, ev_now(sp->pool->loop), measured);
  sp->counted = NULL;
}

static void slot_start(slot *s);

/* ---- spares ---------------------------------------------------------------- */

static void spare_unlink(gl_pool *p, spare *sp) {
  for (spare **q = &p->spares; *q; q = &(*q)->next)
    if (*q == sp) {
      *q = sp->next;
      return;
    }
}

/* A spare (or one being released) exited on its own. */
static void on_spare_exit(void *owner, int code, int signo) {
  spare *sp = owner;
  GL_DEBUG("spare worker for GPU %u ended (code %d, signal %d)", (unsigned)sp->gpu, code, signo);
  spare_unlink(sp->pool, sp);
  release_over(sp, false);
  if (!sp->answered) { /* release_done comes next and frees it */
    sp->gone = true;
    return;
  }
  ev_timer_stop(sp->pool->loop, &sp->timeout);
  free(sp);
}

static unsigned spare_count(const gl_pool *p, uint32_t gpu, bool ready_only) {
  unsigned n = 0;
  for (const spare *sp = p ? p->spares : NULL; sp; sp = sp->next)
    n += sp->gpu == gpu && sp->keep && (sp->ready || !ready_only);
  return n;
}

static void spare_end(gl_pool *p, spare *sp, const char *why) {
  spare_unlink(p, sp);
  release_over(sp, false);
  ev_timer_stop(p->loop, &sp->timeout);
  sp->ending = true; /* a release_done from the kill leaves sp to us */
  gl_wproc_kill(sp->w, GPULEASE_INTERNAL, why);
  free(sp);
}

static void release_done(void *ctx, gpulease_status status, const uint8_t *msg, size_t len,
                         const char *why) {
  spare *sp = ctx;
  gl_header h;
  bool ok = status == GPULEASE_OK && gl_header_decode(msg, len, &h) == GPULEASE_OK &&
            h.status == GPULEASE_OK;
  sp->answered = true;
  ev_timer_stop(sp->pool->loop, &sp->timeout);
  release_over(sp, status == GPULEASE_OK);
  if (sp->ending) return;
  if (sp->taken || sp->gone) { /* a lease has it (its WORKER_INIT tells), or it ended */
    free(sp);
    return;
  }
  if (ok && !sp->keep) { /* its region is free now; the context goes */
    spare_end(sp->pool, sp, "enough spares kept");
    return;
  }
  if (!ok) {
    GL_DEBUG("worker for GPU %u not reused: %s", (unsigned)sp->gpu,
             why ? why : "WORKER_RELEASE refused");
    spare_end(sp->pool, sp, "not reusable");
    return;
  }
  sp->ready = true;
  sp->since = ev_now(sp->pool->loop);
}

/* The release took too long: the worker ends (a lease that took it sees
 * its WORKER_INIT fail and is set up on another). */
static void on_release_timeout(struct ev_loop *loop, ev_timer *t, int revents) {
  (void)loop;
  (void)revents;
  spare *sp = t->data;
  double waited_s = ev_now(loop) - sp->released_at;
  if (sp->counted) { /* the deadline grows with the teardowns that came since */
    unsigned cur = gl_teardown_in_flight(sp->counted, sp->gpu);
    if (cur > sp->peak) sp->peak = cur;
    double limit_s =
        gl_teardown_timeout_ms(sp->counted, sp->gpu, GL_TEARDOWN_RELEASE, sp->peak) / 1000.0;
    if (waited_s < limit_s) {
      ev_timer_set(t, limit_s - waited_s, 0.0);
      ev_timer_start(loop, t);
      return;
    }
    gl_teardown_limits lim = gl_teardown_get_limits(sp->counted);
    GL_WARN("GPU %u: a freed lease's worker (PID %d) did not release it in %.0f ms, its "
            "timeout (%" PRIu32 " ms + %" PRIu32 " ms for each of the %u other worker(s) "
            "tearing down with it; %u now); a kernel still running? Ending it",
            (unsigned)sp->gpu, (int)gl_wproc_pid(sp->w), waited_s * 1000.0,
            lim.release_base_ms, gl_teardown_step_ms(sp->counted, sp->gpu),
            sp->peak > 1 ? sp->peak - 1 : 0, cur);
  } else {
    GL_WARN("a freed lease's worker did not release it in %.0f s (a kernel still running?); "
            "ending it", RELEASE_TIMEOUT_S);
  }
  release_over(sp, false);
  if (sp->taken) gl_wproc_kill(sp->w, GPULEASE_INTERNAL, "the worker's last lease did not end");
  else spare_end(sp->pool, sp, "release timed out");
}

void gl_pool_recycle(gl_pool *p, uint32_t gpu, gl_wproc *w, uint64_t lease_id) {
  spare *sp = p ? calloc(1, sizeof *sp) : NULL;
  if (!sp) {
    gl_wproc_kill(w, GPULEASE_INTERNAL, "the lease ended");
    return;
  }
  /* Beyond the spares kept, the worker is still released first: its
   * region's VRAM is free at once, long before the driver has torn the
   * context down. */
  sp->keep = spare_count(p, gpu, false) < GL_POOL_SPARES_MAX;
  sp->pool = p;
  sp->gpu = gpu;
  sp->w = w;
  sp->released_at = ev_now(p->loop);
  double limit_s = RELEASE_TIMEOUT_S;
  if (p->td) {
    sp->counted = p->td;
    sp->peak = gl_teardown_begin(p->td, gpu, sp->released_at);
    limit_s = gl_teardown_timeout_ms(p->td, gpu, GL_TEARDOWN_RELEASE, sp->peak) / 1000.0;
  }
  ev_timer_init(&sp->timeout, on_release_timeout, limit_s, 0.0);
  sp->timeout.data = sp;
  ev_timer_start(p->loop, &sp->timeout);
  gl_wproc_set_owner(w, on_spare_exit, NULL, sp);
  sp->next = p->spares;
  p->spares = sp;
  gl_request q = {.op = GL_OP_WORKER_RELEASE};
  q.u.worker_init.lease_id = lease_id;
  gl_buf b;
  gl_buf_init(&b);
  if (gl_request_encode(&q, &b) != GPULEASE_OK ||
      gl_wproc_call(w, b.data, b.len, release_done, sp) != 0)
    spare_end(p, sp, "cannot release the lease");
  gl_buf_free(&b);
}

/* Ends the spares unused for GL_POOL_SPARE_IDLE_S: their VRAM goes back. */
static void on_retire(struct ev_loop *loop, ev_timer *t, int revents) {
  (void)revents;
  gl_pool *p = t->data;
  double now = ev_now(loop);
  for (spare *sp = p->spares, *next; sp; sp = next) {
    next = sp->next;
    if (sp->ready && now - sp->since >= GL_POOL_SPARE_IDLE_S) spare_end(p, sp, "unused");
  }
}

unsigned gl_pool_spares(const gl_pool *p, uint32_t gpu) { return spare_count(p, gpu, true); }

/* The slot's worker is gone (or doomed: killed when the timer fires). */
static void retry_later(slot *s) {
  s->state = EMPTY;
  s->answered = true;
  ev_timer_set(&s->retry, RETRY_S, 0.0);
  ev_timer_start(s->pool->loop, &s->retry);
}

static void on_retry(struct ev_loop *loop, ev_timer *t, int revents) {
  (void)loop;
  (void)revents;
  slot *s = t->data;
  if (s->w) gl_wproc_kill(s->w, GPULEASE_INTERNAL, "the warm worker failed");
  s->w = NULL;
  slot_start(s);
}

/* A warm worker exited on its own (the exit callback of a pool worker). */
static void on_warm_exit(void *owner, int code, int signo) {
  slot *s = owner;
  GL_WARN("warm worker for GPU %u ended (code %d, signal %d); another starts in %.0f s",
          (unsigned)s->gpu, code, signo, RETRY_S);
  s->w = NULL; /* reaped: freed after this call */
  retry_later(s);
}

static void warm_done(void *ctx, gpulease_status status, const uint8_t *msg, size_t len,
                      const char *why) {
  slot *s = ctx;
  gl_response r;
  bool decoded = status == GPULEASE_OK &&
                 gl_response_decode(msg, len, len, &r, NULL, 0) == GPULEASE_OK;
  bool ok = decoded && r.status == GPULEASE_OK;
  s->answered = true;
  gl_pool *p = s->pool;
  if (ok) {
    s->state = READY;
    GL_DEBUG("warm worker for GPU %u ready", (unsigned)s->gpu);
    if (p->hooks.ready) p->hooks.ready(p->hooks.user, s->gpu);
    return;
  }
  if (decoded && r.status == GPULEASE_CAPACITY_EXCEEDED && p->hooks.no_room)
    p->hooks.no_room(p->hooks.user, s->gpu);
  if (status != GPULEASE_OK)
    GL_WARN("warm worker for GPU %u: %s", (unsigned)s->gpu, why ? why : "it ended");
  else
    GL_WARN("warm worker for GPU %u could not open the device: %s", (unsigned)s->gpu,
            gpulease_status_name(r.status));
  retry_later(s); /* the timer kills it: not from inside its own reply */
}

static void slot_start(slot *s) {
  gl_pool *p = s->pool;
  char err[256];
  const gl_node_gpu *g = &p->node->gpus[s->gpu];
  if (p->hooks.may_start && !p->hooks.may_start(p->hooks.user, s->gpu)) {
    /* No room for another context: the slot waits for gl_pool_refill. */
    s->state = EMPTY;
    s->answered = true;
    return;
  }
  if (gl_wproc_spawn(p->loop, p->worker_exe, p->log_level, gl_node_worker_args(p->node, s->gpu),
                     on_warm_exit, NULL, s, &s->w, err, sizeof err) != 0) {
    GL_WARN("cannot start a warm worker for GPU %u: %s", (unsigned)s->gpu, err);
    s->w = NULL;
    retry_later(s);
    return;
  }
  gl_wproc_set_tag(s->w, s->gpu);
  gl_wproc_count_context(s->w, s->gpu);
  gl_request q = {.op = GL_OP_WORKER_WARM};
  q.u.worker_init.cuda_ordinal = (uint32_t)g->cuda_ordinal;
  gl_node_worker_uuid(p->node, s->gpu, false, q.u.worker_init.gpu_uuid,
                      sizeof q.u.worker_init.gpu_uuid);
  gl_buf b;
  gl_buf_init(&b);
  if (gl_request_encode(&q, &b) != GPULEASE_OK ||
      gl_wproc_call(s->w, b.data, b.len, warm_done, s) != 0) {
    gl_buf_free(&b);
    retry_later(s); /* killed when the timer fires */
    return;
  }
  gl_buf_free(&b);
  s->state = STARTING;
}

gl_pool *gl_pool_new(struct ev_loop *loop, const gl_node *node, const char *worker_exe,
                     const char *log_level, unsigned per_gpu, const gl_pool_hooks *hooks) {
  if (per_gpu > MAX_PER_GPU) per_gpu = MAX_PER_GPU;
  gl_pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  if (hooks) p->hooks = *hooks;
  p->loop = loop;
  p->node = node;
  p->worker_exe = worker_exe;
  p->log_level = log_level;
  p->per_gpu = per_gpu;
  p->nslots = node->gpu_count * per_gpu;
  p->slots = calloc(p->nslots ? p->nslots : 1, sizeof *p->slots);
  if (!p->slots) {
    free(p);
    return NULL;
  }
  for (unsigned i = 0; i < p->nslots; i++) {
    slot *s = &p->slots[i];
    s->pool = p;
    s->gpu = i / per_gpu;
    ev_timer_init(&s->retry, on_retry, RETRY_S, 0.0);
    s->retry.data = s;
    if (node->gpus[s->gpu].mig_count) { /* its leases are MIG instances, each its own */
      s->answered = true;
      continue;
    }
    slot_start(s);
  }
  ev_timer_init(&p->retire, on_retire, 1.0, 1.0);
  p->retire.data = p;
  ev_timer_start(loop, &p->retire);
  return p;
}

void gl_pool_del(gl_pool *p) {
  if (!p) return;
  ev_timer_stop(p->loop, &p->retire);
  while (p->spares) spare_end(p, p->spares, "the daemon is shutting down");
  for (unsigned i = 0; i < p->nslots; i++) {
    slot *s = &p->slots[i];
    ev_timer_stop(p->loop, &s->retry);
    if (s->w) gl_wproc_kill(s->w, GPULEASE_INTERNAL, "the daemon is shutting down");
    s->w = NULL;
  }
  free(p->slots);
  free(p);
}

gl_wproc *gl_pool_take(gl_pool *p, uint32_t gpu, gl_wproc_exit_cb on_exit,
                       gl_wproc_notice_cb on_notice, void *owner) {
  /* A released spare; else one still being released: the lease's
   * WORKER_INIT queues behind the WORKER_RELEASE on the same channel. */
  for (int pass = 0; pass < 2; pass++)
    for (spare *sp = p ? p->spares : NULL; sp; sp = sp->next) {
      if (sp->gpu != gpu || !sp->keep || sp->ready != (pass == 0) || !gl_wproc_usable(sp->w))
        continue;
      gl_wproc *w = sp->w;
      spare_unlink(p, sp);
      if (sp->ready) free(sp);
      else sp->taken = true; /* freed by release_done */
      gl_wproc_set_owner(w, on_exit, on_notice, owner);
      return w;
    }
  return gl_pool_take_fresh(p, gpu, on_exit, on_notice, owner);
}

gl_wproc *gl_pool_take_fresh(gl_pool *p, uint32_t gpu, gl_wproc_exit_cb on_exit,
                             gl_wproc_notice_cb on_notice, void *owner) {
  if (!p) return NULL;
  for (unsigned i = 0; i < p->nslots; i++) {
    slot *s = &p->slots[i];
    if (s->gpu != gpu || s->state != READY || !gl_wproc_usable(s->w)) continue;
    gl_wproc *w = s->w;
    gl_wproc_set_owner(w, on_exit, on_notice, owner);
    s->w = NULL;
    s->state = EMPTY;
    slot_start(s); /* the replacement */
    return w;
  }
  return NULL;
}

void gl_pool_refill(gl_pool *p) {
  for (unsigned i = 0; p && i < p->nslots; i++) {
    slot *s = &p->slots[i];
    if (s->state != EMPTY || s->w || ev_is_active(&s->retry) || p->node->gpus[s->gpu].mig_count)
      continue;
    if (p->hooks.may_start && !p->hooks.may_start(p->hooks.user, s->gpu)) continue;
    slot_start(s);
  }
}

bool gl_pool_has_idle(const gl_pool *p, uint32_t gpu, bool fresh) {
  if (!p) return false;
  /* As gl_pool_take and gl_pool_take_fresh choose. */
  for (const spare *sp = fresh ? NULL : p->spares; sp; sp = sp->next)
    if (sp->gpu == gpu && sp->keep && gl_wproc_usable(sp->w)) return true;
  for (unsigned i = 0; i < p->nslots; i++) {
    const slot *s = &p->slots[i];
    if (s->gpu == gpu && s->state == READY && gl_wproc_usable(s->w)) return true;
  }
  return false;
}

bool gl_pool_end_spare(gl_pool *p, uint32_t gpu) {
  spare *oldest = NULL;
  for (spare *sp = p ? p->spares : NULL; sp; sp = sp->next)
    if (sp->gpu == gpu && sp->ready) oldest = sp;
  if (!oldest) return false;
  spare_end(p, oldest, "its context makes room for a lease");
  return true;
}

static unsigned count(const gl_pool *p, uint32_t gpu, enum slot_state st) {
  unsigned n = 0;
  for (unsigned i = 0; p && i < p->nslots; i++)
    n += p->slots[i].gpu == gpu && p->slots[i].state == st;
  return n;
}

unsigned gl_pool_ready(const gl_pool *p, uint32_t gpu) { return count(p, gpu, READY); }
unsigned gl_pool_starting(const gl_pool *p, uint32_t gpu) { return count(p, gpu, STARTING); }

int gl_pool_settled(const gl_pool *p) {
  for (unsigned i = 0; p && i < p->nslots; i++)
    if (!p->slots[i].answered) return 0;
  return 1;
}
