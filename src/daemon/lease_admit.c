/* lease_admit.c - see lease_admit.h. */
#include "daemon/lease_admit.h"

#include <inttypes.h>
#include <stdio.h>

#include "daemon/ctx_admit.h"
#include "daemon/daemon.h"
#include "daemon/worker_proc.h"

/* Whether gpu's contexts are counted: a GPU of the node leased whole. */
static bool counted(const gl_daemon *d, uint32_t gpu) {
  return gpu < d->node.gpu_count && gpu < GPULEASE_MAX_GPUS && d->node.gpus[gpu].mig_count == 0;
}

static bool room_on(gl_daemon *d, uint32_t gpu, bool fresh) {
  if (!counted(d, gpu)) return true;
  if (d->pool && gl_pool_has_idle(d->pool, gpu, fresh)) return true;
  unsigned held = 0;
  gl_wproc_contexts(gpu, &held, NULL);
  /* A new context only while few are being made: the driver makes them
   * one at a time, and a request that waits a moment mostly gets a spare
   * of a lease that ends meanwhile (--max-contexts-starting). */
  unsigned cap = d->cfg.max_contexts_starting;
  return held < gl_ctx_admit_limit(d->ctx_admit, gpu) &&
         (cap == 0 || gl_wproc_contexts_starting(gpu) < cap);
}

bool gl_lease_admit_room(gl_daemon *d, uint32_t gpu, bool fresh) {
  if (gpu != GL_CTX_ADMIT_ANY) return room_on(d, gpu, fresh);
  return gl_lease_admit_find_room(d, UINT32_MAX, fresh) != UINT32_MAX ||
         d->node.gpu_count == 0;
}

uint32_t gl_lease_admit_find_room(gl_daemon *d, uint32_t skip, bool fresh) {
  for (uint32_t g = 0; g < d->node.gpu_count; g++)
    if (g != skip && counted(d, g) && room_on(d, g, fresh)) return g;
  return UINT32_MAX;
}

static bool room_cb(void *user, uint32_t gpu, bool fresh) {
  return gl_lease_admit_room(user, gpu, fresh);
}

/* A warm worker may start: below the limit, and no lease waits. */
static bool may_start(void *user, uint32_t gpu) {
  gl_daemon *d = user;
  if (!counted(d, gpu)) return true;
  unsigned held = 0;
  gl_wproc_contexts(gpu, &held, NULL);
  return held < gl_ctx_admit_limit(d->ctx_admit, gpu) &&
         gl_ctx_admit_waiting(d->ctx_admit, gpu) == 0;
}

static void after_serving(void *user) {
  gl_daemon *d = user;
  if (d->pool && !d->stopping) gl_pool_refill(d->pool);
}

static void on_ready(void *user, uint32_t gpu) {
  (void)gpu;
  gl_lease_admit_poke(user);
}

static void on_no_room(void *user, uint32_t gpu) { gl_lease_admit_context_refused(user, gpu); }

/* A counted worker was reaped: its context is gone. */
static void on_reaped(void *user, uint32_t gpu) {
  (void)gpu;
  gl_lease_admit_poke(user);
}

int gl_lease_admit_start(gl_daemon *d) {
  d->ctx_admit = gl_ctx_admit_new(d->loop, d->node.gpu_count, d->cfg.max_isolated_contexts,
                                  d->cfg.isolated_queue_max, d->cfg.isolated_queue_ms, room_cb,
                                  after_serving, d);
  if (!d->ctx_admit) return -1;
  gl_wproc_set_context_watch(on_reaped, d);
  return 0;
}

void gl_lease_admit_stop(gl_daemon *d) {
  gl_wproc_set_context_watch(NULL, NULL);
  gl_ctx_admit *a = d->ctx_admit;
  d->ctx_admit = NULL;
  gl_ctx_admit_free(a); /* answers the waiters */
}

void gl_lease_admit_pool_hooks(gl_daemon *d, gl_pool_hooks *out) {
  *out = (gl_pool_hooks){
      .may_start = may_start, .ready = on_ready, .no_room = on_no_room, .user = d};
}

void gl_lease_admit_figures_of(gl_daemon *d, uint32_t gpu, gl_lease_admit_figures *f) {
  *f = (gl_lease_admit_figures){0};
  if (gpu >= GPULEASE_MAX_GPUS) return;
  f->limit = gl_ctx_admit_limit(d->ctx_admit, gpu);
  f->learned = gl_ctx_admit_learned(d->ctx_admit, gpu);
  gl_wproc_contexts(gpu, &f->held, &f->ending);
  if (d->pool) {
    f->warm = gl_pool_ready(d->pool, gpu) + gl_pool_starting(d->pool, gpu);
    f->spares = gl_pool_spares(d->pool, gpu);
  }
  unsigned other = f->ending + f->warm + f->spares;
  f->leased = f->held > other ? f->held - other : 0;
  f->queued = gl_ctx_admit_waiting(d->ctx_admit, gpu);
}

void gl_lease_admit_describe(gl_daemon *d, uint32_t gpu, char *buf, size_t len) {
  uint32_t g = gpu == GL_CTX_ADMIT_ANY ? 0 : gpu;
  gl_lease_admit_figures f;
  gl_lease_admit_figures_of(d, g, &f);
  unsigned queued = gl_ctx_admit_waiting(d->ctx_admit, gpu);
  snprintf(buf, len,
           "%sGPU %" PRIu32 " holds %u of its limit of %u isolated CUDA contexts%s (%u leased, "
           "%u warm, %u spare, %u tearing down); %u request%s queued for one (at most %u, "
           "%u ms each)",
           gpu == GL_CTX_ADMIT_ANY && d->node.gpu_count > 1 ? "no GPU has room for another "
                                                              "context: "
                                                            : "",
           g, f.held, f.limit, f.learned ? ", learned from the driver's refusal," : "",
           f.leased, f.warm, f.spares, f.ending, queued, queued == 1 ? "" : "s",
           gl_ctx_admit_queue_max(d->ctx_admit), gl_ctx_admit_queue_ms(d->ctx_admit));
}

void gl_lease_admit_context_refused(gl_daemon *d, uint32_t gpu) {
  if (!counted(d, gpu)) return;
  unsigned held = 0;
  gl_wproc_contexts(gpu, &held, NULL);
  /* The refused worker is still counted: the others are what the driver held. */
  gl_ctx_admit_learn(d->ctx_admit, gpu, held ? held - 1 : 0);
}

void gl_lease_admit_poke(gl_daemon *d) {
  if (d && d->ctx_admit) gl_ctx_admit_poke(d->ctx_admit);
}
