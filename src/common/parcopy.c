/*
 * parcopy.c - see parcopy.h. The pool's helpers sleep on a condition
 * variable between copies; a copy hands each helper one part, takes the
 * last part itself, and waits until the helpers report theirs done.
 */
#include "common/parcopy.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define HELPERS 7 /* and the caller: eight parts */

typedef struct part {
  uint8_t *dst;
  const uint8_t *src;
  size_t n;
} part;

static struct {
  pthread_once_t once;
  pthread_mutex_t busy; /* one parallel copy at a time */
  pthread_mutex_t mu;
  pthread_cond_t go, done;
  unsigned generation; /* bumped for each copy */
  unsigned pending;    /* helper parts not finished */
  unsigned helpers;    /* started */
  part parts[HELPERS];
} pool = {.once = PTHREAD_ONCE_INIT,
          .busy = PTHREAD_MUTEX_INITIALIZER,
          .mu = PTHREAD_MUTEX_INITIALIZER,
          .go = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER};

static void *helper(void *arg) {
  unsigned id = (unsigned)(uintptr_t)arg, seen = 0;
  pthread_mutex_lock(&pool.mu);
  for (;;) {
    while (pool.generation == seen) pthread_cond_wait(&pool.go, &pool.mu);
    seen = pool.generation;
    part p = pool.parts[id];
    pthread_mutex_unlock(&pool.mu);
    if (p.n) memcpy(p.dst, p.src, p.n);
    pthread_mutex_lock(&pool.mu);
    if (--pool.pending == 0) pthread_cond_signal(&pool.done);
  }
  return NULL;
}

static void start_pool(void) {
  for (unsigned i = 0; i < HELPERS; i++) {
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &a, helper, (void *)(uintptr_t)i) == 0) pool.helpers++;
    pthread_attr_destroy(&a);
    if (pool.helpers != i + 1) break; /* they must be 0..helpers-1 */
  }
}

void gl_par_memcpy(void *dst, const void *src, size_t n) {
  if (n < GL_PARCOPY_MIN) {
    memcpy(dst, src, n);
    return;
  }
  pthread_once(&pool.once, start_pool);
  if (pool.helpers == 0 || pthread_mutex_trylock(&pool.busy) != 0) {
    memcpy(dst, src, n);
    return;
  }
  unsigned parts = pool.helpers + 1;
  size_t each = (n / parts + 63) & ~(size_t)63;
  uint8_t *d = dst;
  const uint8_t *s = src;
  pthread_mutex_lock(&pool.mu);
  for (unsigned i = 0; i < pool.helpers; i++) {
    size_t off = (size_t)i * each;
    pool.parts[i] = (part){d + off, s + off, off >= n ? 0 : off + each > n ? n - off : each};
  }
  pool.pending = pool.helpers;
  pool.generation++;
  pthread_cond_broadcast(&pool.go);
  pthread_mutex_unlock(&pool.mu);
  size_t mine = (size_t)pool.helpers * each;
  if (mine < n) memcpy(d + mine, s + mine, n - mine);
  pthread_mutex_lock(&pool.mu);
  while (pool.pending) pthread_cond_wait(&pool.done, &pool.mu);
  pthread_mutex_unlock(&pool.mu);
  pthread_mutex_unlock(&pool.busy);
}
