/*
 * ctx_admit.c - see ctx_admit.h. Tenants that have waiters sit in a list in
 * the order they came; a cursor names the one served next, and moves past
 * each tenant served, so that every tenant with a waiter that fits gets
 * one context in turn however many requests it queued. Each waiter has its
 * deadline timer; the poke is a timer of 0 s, so that serving never runs
 * inside the caller's own callback (the lease table may be mid-walk).
 */
#include "daemon/ctx_admit.h"

#include <ev.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "gpulease/gpulease.h"

typedef struct waiter {
  struct tenant_q *t;
  struct gl_ctx_admit *a;
  uint32_t gpu;
  bool fresh;
  gl_ctx_admit_done_fn done;
  void *ctx;
  ev_timer deadline;
  struct waiter *next; /* the tenant's, oldest first */
} waiter;

typedef struct tenant_q {
  char *name;
  waiter *head, *tail;
  unsigned n;
  struct tenant_q *prev, *next; /* the tenants with waiters, in arrival order */
} tenant_q;

struct gl_ctx_admit {
  struct ev_loop *loop;
  uint32_t gpu_count;
  unsigned limit_cfg; /* the flag */
  unsigned limit[GPULEASE_MAX_GPUS];
  bool learned[GPULEASE_MAX_GPUS];
  unsigned queue_max, queue_ms;
  unsigned waiting;
  unsigned waiting_gpu[GPULEASE_MAX_GPUS];
  unsigned waiting_any;
  tenant_q *first, *last, *cursor;
  gl_ctx_admit_room_fn room;
  gl_ctx_admit_after_fn after;
  void *user;
  ev_timer kick;
  uint64_t served, timed_out, refused_full;
};

static unsigned clamp_limit(unsigned v) {
  return v < 1 ? 1 : v > GL_CTX_ADMIT_MAX_LIMIT ? GL_CTX_ADMIT_MAX_LIMIT : v;
}

/* Unlinks w from its tenant (the tenant goes when it has no waiter left);
 * stops its timer. The caller frees w. */
static void unlink_waiter(gl_ctx_admit *a, waiter *w) {
  tenant_q *t = w->t;
  waiter **pp = &t->head, *prev = NULL;
  while (*pp && *pp != w) {
    prev = *pp;
    pp = &(*pp)->next;
  }
  if (*pp) {
    *pp = w->next;
    if (t->tail == w) t->tail = prev;
    t->n--;
  }
  ev_timer_stop(a->loop, &w->deadline);
  a->waiting--;
  if (w->gpu == GL_CTX_ADMIT_ANY) a->waiting_any--;
  else a->waiting_gpu[w->gpu]--;
  if (t->n) return;
  if (a->cursor == t) a->cursor = t->next;
  if (t->prev) t->prev->next = t->next;
  else a->first = t->next;
  if (t->next) t->next->prev = t->prev;
  else a->last = t->prev;
  free(t->name);
  free(t);
}

static void on_deadline(struct ev_loop *loop, ev_timer *tm, int revents) {
  (void)loop;
  (void)revents;
  waiter *w = tm->data;
  gl_ctx_admit *a = w->a;
  gl_ctx_admit_done_fn done = w->done;
  void *ctx = w->ctx;
  unlink_waiter(a, w);
  free(w);
  a->timed_out++;
  done(ctx, false);
  gl_ctx_admit_poke(a); /* fewer waiters: after may use the room (warm workers) */
}

/* One round: serves waiters round robin while some fit; at most as many
 * as waited when it began (a served request that comes back cannot make
 * it spin). */
static void serve(gl_ctx_admit *a) {
  unsigned budget = a->waiting;
  while (budget && a->first) {
    tenant_q *start = a->cursor ? a->cursor : a->first, *t = start;
    waiter *pick = NULL;
    do {
      for (waiter *w = t->head; w && !pick; w = w->next)
        if (a->room(a->user, w->gpu, w->fresh)) pick = w;
      if (!pick) t = t->next ? t->next : a->first;
    } while (!pick && t != start);
    if (!pick) break;
    /* The next round starts after this tenant. */
    a->cursor = t->next;
    gl_ctx_admit_done_fn done = pick->done;
    void *ctx = pick->ctx;
    unlink_waiter(a, pick);
    free(pick);
    a->served++;
    budget--;
    done(ctx, true);
  }
}

static void on_kick(struct ev_loop *loop, ev_timer *tm, int revents) {
  (void)loop;
  (void)revents;
  gl_ctx_admit *a = tm->data;
  if (a->waiting) serve(a);
  if (a->after) a->after(a->user);
}

gl_ctx_admit *gl_ctx_admit_new(struct ev_loop *loop, uint32_t gpu_count, unsigned limit,
                               unsigned queue_max, unsigned queue_ms, gl_ctx_admit_room_fn room,
                               gl_ctx_admit_after_fn after, void *user) {
  if (!room) return NULL;
  gl_ctx_admit *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  a->loop = loop;
  a->gpu_count = gpu_count > GPULEASE_MAX_GPUS ? GPULEASE_MAX_GPUS : gpu_count;
  a->room = room;
  a->after = after;
  a->user = user;
  ev_timer_init(&a->kick, on_kick, 0.0, 0.0);
  a->kick.data = a;
  gl_ctx_admit_configure(a, limit, queue_max, queue_ms);
  return a;
}

void gl_ctx_admit_free(gl_ctx_admit *a) {
  if (!a) return;
  ev_timer_stop(a->loop, &a->kick);
  while (a->first) {
    waiter *w = a->first->head;
    gl_ctx_admit_done_fn done = w->done;
    void *ctx = w->ctx;
    unlink_waiter(a, w);
    free(w);
    done(ctx, false);
  }
  free(a);
}

void gl_ctx_admit_configure(gl_ctx_admit *a, unsigned limit, unsigned queue_max,
                            unsigned queue_ms) {
  if (!a) return;
  a->limit_cfg = clamp_limit(limit);
  for (uint32_t g = 0; g < GPULEASE_MAX_GPUS; g++)
    if (!a->learned[g] || a->limit[g] > a->limit_cfg) {
      a->limit[g] = a->limit_cfg;
      a->learned[g] = false;
    }
  a->queue_max = queue_max > GL_CTX_ADMIT_MAX_QUEUE ? GL_CTX_ADMIT_MAX_QUEUE : queue_max;
  a->queue_ms = queue_ms > GL_CTX_ADMIT_MAX_QUEUE_MS ? GL_CTX_ADMIT_MAX_QUEUE_MS : queue_ms;
  gl_ctx_admit_poke(a); /* a higher limit may serve some */
}

unsigned gl_ctx_admit_limit(const gl_ctx_admit *a, uint32_t gpu) {
  return a && gpu < GPULEASE_MAX_GPUS ? a->limit[gpu] : 0;
}

bool gl_ctx_admit_learned(const gl_ctx_admit *a, uint32_t gpu) {
  return a && gpu < GPULEASE_MAX_GPUS && a->learned[gpu];
}

bool gl_ctx_admit_learn(gl_ctx_admit *a, uint32_t gpu, unsigned held) {
  if (!a || gpu >= GPULEASE_MAX_GPUS) return false;
  unsigned v = held < 1 ? 1 : held;
  if (v >= a->limit[gpu]) {
    GL_WARN("GPU %" PRIu32 ": the driver refused a CUDA context (out of memory) with %u other "
            "context(s) held, at or above the limit of %u isolated contexts: the limit stays",
            gpu, held, a->limit[gpu]);
    return false;
  }
  GL_WARN("GPU %" PRIu32 ": the driver refused a CUDA context (out of memory) with %u other "
          "context(s) held; the limit of isolated contexts goes from %u to %u (requests beyond "
          "it wait, or get CAPACITY_EXCEEDED)",
          gpu, held, a->limit[gpu], v);
  a->limit[gpu] = v;
  a->learned[gpu] = true;
  return true;
}

int gl_ctx_admit_wait(gl_ctx_admit *a, const char *tenant, uint32_t gpu, bool fresh,
                      gl_ctx_admit_done_fn done, void *ctx, const char **why) {
  const char *dummy;
  if (!why) why = &dummy;
  if (!a || !done || (gpu != GL_CTX_ADMIT_ANY && gpu >= GPULEASE_MAX_GPUS)) {
    *why = "no queue";
    return -1;
  }
  if (!tenant) tenant = "";
  if (a->queue_ms == 0 || a->queue_max == 0) {
    *why = "requests do not wait (--isolated-queue-ms or --isolated-queue-max 0)";
    return -1;
  }
  if (a->waiting >= a->queue_max) {
    *why = "the queue is full";
    return -1;
  }
  tenant_q *t = a->first;
  while (t && strcmp(t->name, tenant) != 0) t = t->next;
  unsigned share = a->queue_max / 2 ? a->queue_max / 2 : 1;
  if (t && t->n >= share) {
    *why = "the tenant holds half of the queue already";
    return -1;
  }
  waiter *w = calloc(1, sizeof *w);
  if (!w) {
    *why = "daemon out of memory";
    return -1;
  }
  if (!t) {
    t = calloc(1, sizeof *t);
    char *name = t ? strdup(tenant) : NULL;
    if (!name) {
      free(t);
      free(w);
      *why = "daemon out of memory";
      return -1;
    }
    t->name = name;
    t->prev = a->last;
    if (a->last) a->last->next = t;
    else a->first = t;
    a->last = t;
  }
  w->t = t;
  w->a = a;
  w->gpu = gpu;
  w->fresh = fresh;
  w->done = done;
  w->ctx = ctx;
  if (t->tail) t->tail->next = w;
  else t->head = w;
  t->tail = w;
  t->n++;
  a->waiting++;
  if (gpu == GL_CTX_ADMIT_ANY) a->waiting_any++;
  else a->waiting_gpu[gpu]++;
  ev_timer_init(&w->deadline, on_deadline, a->queue_ms / 1000.0, 0.0);
  w->deadline.data = w;
  ev_timer_start(a->loop, &w->deadline);
  return 0;
}

unsigned gl_ctx_admit_waiting(const gl_ctx_admit *a, uint32_t gpu) {
  if (!a) return 0;
  if (gpu == GL_CTX_ADMIT_ANY) return a->waiting;
  return gpu < GPULEASE_MAX_GPUS ? a->waiting_gpu[gpu] + a->waiting_any : 0;
}

unsigned gl_ctx_admit_queue_max(const gl_ctx_admit *a) { return a ? a->queue_max : 0; }
unsigned gl_ctx_admit_queue_ms(const gl_ctx_admit *a) { return a ? a->queue_ms : 0; }

void gl_ctx_admit_totals(const gl_ctx_admit *a, uint64_t *served, uint64_t *timed_out,
                         uint64_t *refused_full) {
  if (served) *served = a ? a->served : 0;
  if (timed_out) *timed_out = a ? a->timed_out : 0;
  if (refused_full) *refused_full = a ? a->refused_full : 0;
}

void gl_ctx_admit_count_refusal(gl_ctx_admit *a) {
  if (a) a->refused_full++;
}

void gl_ctx_admit_poke(gl_ctx_admit *a) {
  if (!a || ev_is_active(&a->kick)) return;
  ev_timer_set(&a->kick, 0.0, 0.0);
  ev_timer_start(a->loop, &a->kick);
}
