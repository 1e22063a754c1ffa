/*
 * shared.c - see shared.h. One slot per GPU: its worker (or none), its
 * members' lease ids, and the linger timer that ends a worker left without
 * members.
 */
#include "daemon/shared.h"

#include <ev.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "proto/wire.h"

typedef struct ctx_slot {
  struct gl_shared *reg;
  uint32_t gpu;
  gl_wproc *w; /* NULL: no shared context on this GPU now */
  uint64_t *ids;
  size_t n, cap;
  ev_timer linger;
} ctx_slot;

struct gl_shared {
  struct ev_loop *loop;
  const gl_node *node;
  gl_pool *pool;
  const char *worker_exe, *log_level;
  gl_shared_lost_cb on_lost;
  void *user;
  ctx_slot slots[GPULEASE_MAX_GPUS];
};

/* The context is gone: forget the worker and the members, then tell the
 * daemon which leases went with it. */
static void lost(ctx_slot *c, const char *why) {
  uint64_t *ids = c->ids;
  size_t n = c->n;
  c->ids = NULL;
  c->n = c->cap = 0;
  c->w = NULL;
  ev_timer_stop(c->reg->loop, &c->linger);
  GL_WARN("GPU %" PRIu32 ": the shared CUDA context was lost with its %zu lease%s: %s", c->gpu, n,
          n == 1 ? "" : "s", why);
  if (n) c->reg->on_lost(c->reg->user, c->gpu, ids, n, why);
  free(ids);
}

static void on_exit_cb(void *owner, int code, int signo) {
  ctx_slot *c = owner;
  char why[128];
  if (signo)
    snprintf(why, sizeof why, "its worker process was killed by signal %d", signo);
  else
    snprintf(why, sizeof why, "its worker process exited with status %d", code);
  /* gl_wproc frees itself once reaped; it was not killed by us. */
  lost(c, why);
}

static void on_notice_cb(void *owner, const uint8_t *msg, size_t len) {
  ctx_slot *c = owner;
  gl_response resp;
  char err[128], why[1100];
  if (gl_response_decode(msg, len, 1u << 20, &resp, err, sizeof err) == GPULEASE_OK)
    snprintf(why, sizeof why, "a device fault: %.*s", (int)resp.msg_len, resp.msg);
  else
    snprintf(why, sizeof why, "a device fault");
  gl_wproc *w = c->w;
  lost(c, why);
  /* The worker exits on its own, and says so before it answers the
   * request that found the fault: the leases have ended first, and that
   * reply still goes to its client. The calls it leaves get the loss. */
  if (w) gl_wproc_retire(w, GPULEASE_LEASE_EXPIRED, why);
}

static void on_linger(struct ev_loop *loop, ev_timer *t, int revents) {
  (void)loop;
  (void)revents;
  ctx_slot *c = t->data;
  if (c->n || !c->w) return;
  GL_INFO("GPU %" PRIu32 ": ending the shared CUDA context (no lease for %.0f s)", c->gpu,
          GL_SHARED_LINGER_S);
  gl_wproc_kill(c->w, GPULEASE_INTERNAL, "the shared context ended");
  c->w = NULL;
}

gl_shared *gl_shared_new(struct ev_loop *loop, const gl_node *node, gl_pool *pool,
                         const char *worker_exe, const char *log_level, gl_shared_lost_cb on_lost,
                         void *user) {
  gl_shared *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->loop = loop;
  s->node = node;
  s->pool = pool;
  s->worker_exe = worker_exe;
  s->log_level = log_level;
  s->on_lost = on_lost;
  s->user = user;
  for (uint32_t i = 0; i < GPULEASE_MAX_GPUS; i++) {
    ctx_slot *c = &s->slots[i];
    c->reg = s;
    c->gpu = i;
    ev_timer_init(&c->linger, on_linger, GL_SHARED_LINGER_S, 0.0);
    c->linger.data = c;
  }
  return s;
}

void gl_shared_del(gl_shared *s) {
  if (!s) return;
  for (uint32_t i = 0; i < GPULEASE_MAX_GPUS; i++) {
    ctx_slot *c = &s->slots[i];
    ev_timer_stop(s->loop, &c->linger);
    if (c->w) gl_wproc_kill(c->w, GPULEASE_INTERNAL, "the daemon is shutting down");
    free(c->ids);
  }
  free(s);
}

gl_wproc *gl_shared_join(gl_shared *s, uint32_t gpu, uint64_t lease_id, char *err,
                         size_t errlen) {
  if (gpu >= GPULEASE_MAX_GPUS || gpu >= s->node->gpu_count) {
    snprintf(err, errlen, "no GPU %" PRIu32, gpu);
    return NULL;
  }
  ctx_slot *c = &s->slots[gpu];
  if (c->w && !gl_wproc_usable(c->w)) { /* exiting: its exit reports the loss */
    snprintf(err, errlen, "GPU %" PRIu32 "'s shared context is ending after a fault; retry",
             gpu);
    return NULL;
  }
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 16;
    uint64_t *ids = realloc(c->ids, cap * sizeof *ids);
    if (!ids) {
      snprintf(err, errlen, "daemon out of memory");
      return NULL;
    }
    c->ids = ids;
    c->cap = cap;
  }
  if (!c->w) {
    c->w = gl_pool_take_fresh(s->pool, gpu, on_exit_cb, on_notice_cb, c);
    if (c->w) GL_DEBUG("GPU %" PRIu32 ": a warm worker becomes the shared context", gpu);
    else if (gl_wproc_spawn(s->loop, s->worker_exe, s->log_level,
                            gl_node_worker_args(s->node, gpu), on_exit_cb, on_notice_cb, c, &c->w,
                            err, errlen) != 0)
      return NULL;
  }
  gl_wproc_set_tag(c->w, gpu);
  gl_wproc_count_context(c->w, gpu); /* a context of the GPU's (lease_admit.h) */
  ev_timer_stop(s->loop, &c->linger);
  c->ids[c->n++] = lease_id;
  return c->w;
}

/* WORKER_RELEASE's reply: nothing waits for it; a failure is logged. */
static void release_done(void *ctx, gpulease_status status, const uint8_t *msg, size_t len,
                         const char *why) {
  (void)ctx;
  gl_header h;
  if (status != GPULEASE_OK)
    GL_DEBUG("WORKER_RELEASE not answered: %s", why ? why : gpulease_status_name(status));
  else if (gl_header_decode(msg, len, &h) == GPULEASE_OK && h.status == GPULEASE_NOT_FOUND)
    GL_DEBUG("WORKER_RELEASE: the lease was never set up in the shared worker");
  else if (gl_header_decode(msg, len, &h) == GPULEASE_OK && h.status != GPULEASE_OK)
    GL_WARN("the shared worker refused WORKER_RELEASE (%s)", gpulease_status_name(h.status));
}

void gl_shared_leave(gl_shared *s, uint32_t gpu, uint64_t lease_id, gpulease_status status,
                     const char *why) {
  if (gpu >= GPULEASE_MAX_GPUS) return;
  ctx_slot *c = &s->slots[gpu];
  size_t i = 0;
  while (i < c->n && c->ids[i] != lease_id) i++;
  if (i == c->n) return;
  c->ids[i] = c->ids[--c->n];
  if (!c->w) return;
  gl_wproc_cancel_lease(c->w, lease_id, status, why);
  gl_request q = {.op = GL_OP_WORKER_RELEASE};
  q.u.worker_init.lease_id = lease_id;
  gl_buf b;
  gl_buf_init(&b);
  if (gl_request_encode(&q, &b) != GPULEASE_OK ||
      gl_wproc_call(c->w, b.data, b.len, release_done, NULL) != 0)
    GL_WARN("lease %" PRIu64 ": cannot send WORKER_RELEASE to the shared worker", lease_id);
  gl_buf_free(&b);
  if (c->n == 0) { /* from now: a timer that fired once keeps no time left */
    ev_timer_stop(s->loop, &c->linger);
    ev_timer_set(&c->linger, GL_SHARED_LINGER_S, 0.0);
    ev_timer_start(s->loop, &c->linger);
  }
}

bool gl_shared_ending(const gl_shared *s, uint32_t gpu) {
  return gpu < GPULEASE_MAX_GPUS && s->slots[gpu].w && !gl_wproc_usable(s->slots[gpu].w);
}

size_t gl_shared_members(const gl_shared *s, uint32_t gpu) {
  return gpu < GPULEASE_MAX_GPUS ? s->slots[gpu].n : 0;
}
