/*
 * vram_watch.c - free VRAM read by a thread of its own (vram_watch.h).
 *
 * The thread sleeps on a condition variable; a read that finds its GPU's
 * figure older than max_age_ms sets `want` and signals it (with a
 * trylock: when the thread holds the mutex it is about to read anyway).
 * Figures and their times are atomics, so reads take no lock.
 */
#include "daemon/vram_watch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common/util.h"
#include "gpulease/gpulease.h"

struct gl_vram_watch {
  gl_vram_reader read;
  void *ctx;
  uint64_t max_age_ns;
  uint32_t gpus;
  bool known[GPULEASE_MAX_GPUS];          /* NVML gave a figure at the start */
  _Atomic uint64_t free_b[GPULEASE_MAX_GPUS];
  _Atomic uint64_t read_ns;                /* when the last round of readings began */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool want, stop; /* under mu */
  pthread_t thread;
};

static void read_all(gl_vram_watch *w) {
  atomic_store(&w->read_ns, gl_mono_ns());
  for (uint32_t i = 0; i < w->gpus; i++) {
    uint64_t v;
    if (w->known[i] && w->read(w->ctx, i, &v) == 0) atomic_store(&w->free_b[i], v);
  }
}

static void *run(void *arg) {
  gl_vram_watch *w = arg;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->want && !w->stop) pthread_cond_wait(&w->cv, &w->mu);
    if (w->stop) break;
    w->want = false;
    pthread_mutex_unlock(&w->mu);
    read_all(w);
    pthread_mutex_lock(&w->mu);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

gl_vram_watch *gl_vram_watch_new(uint32_t gpus, gl_vram_reader read, void *ctx,
                                 unsigned max_age_ms) {
  gl_vram_watch *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->read = read;
  w->ctx = ctx;
  w->max_age_ns = (uint64_t)(max_age_ms ? max_age_ms : 1) * 1000000ull;
  w->gpus = gpus < GPULEASE_MAX_GPUS ? gpus : GPULEASE_MAX_GPUS;
  for (uint32_t i = 0; i < w->gpus; i++) {
    uint64_t v = 0;
    w->known[i] = read(ctx, i, &v) == 0;
    atomic_init(&w->free_b[i], v);
  }
  atomic_init(&w->read_ns, gl_mono_ns());
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
  if (pthread_create(&w->thread, NULL, run, w) != 0) {
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    return NULL;
  }
  return w;
}

uint64_t gl_vram_watch_free(gl_vram_watch *w, uint32_t index, uint64_t fallback, bool *stale) {
  if (stale) *stale = false;
  if (!w || index >= w->gpus || !w->known[index]) return fallback;
  uint64_t now = gl_mono_ns();
  if (now - atomic_load(&w->read_ns) > w->max_age_ns) {
    if (stale) *stale = true;
    if (pthread_mutex_trylock(&w->mu) == 0) {
      w->want = true;
      pthread_cond_signal(&w->cv);
      pthread_mutex_unlock(&w->mu);
    }
  }
  return atomic_load(&w->free_b[index]);
}

uint64_t gl_vram_watch_read_now(gl_vram_watch *w, uint32_t index, uint64_t fallback) {
  uint64_t v;
  if (!w || index >= w->gpus || !w->known[index] || w->read(w->ctx, index, &v) != 0)
    return fallback;
  atomic_store(&w->free_b[index], v);
  return v;
}

void gl_vram_watch_del(gl_vram_watch *w) {
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  w->stop = true;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->thread, NULL);
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
  free(w);
}
