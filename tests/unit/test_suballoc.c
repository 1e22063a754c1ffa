/*
 * test_suballoc.c - the lease region's allocator (src/worker/suballoc.c).
 *
 * Exact first-fit placement, filling to capacity, coalescing on both
 * sides, the fragmentation message, refused releases, a randomized run
 * checked step by step against a bitmap model, and 8 threads allocating
 * and releasing at once without ever getting overlapping ranges.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "worker/suballoc.h"

#define A 256u

static uint64_t alloc_ok(gl_suballoc *a, uint64_t size) {
  uint64_t off = UINT64_MAX;
  char err[256] = "";
  gpulease_status st = gl_suballoc_alloc(a, size, &off, err, sizeof err);
  if (st != GPULEASE_OK)
    fail_msg("alloc %llu: %s: %s", (unsigned long long)size, gpulease_status_name(st), err);
  assert_int_equal(off % A, 0);
  return off;
}

static void test_new_refuses_bad_align(void **state) {
  (void)state;
  assert_null(gl_suballoc_new(4096, 0));
  assert_null(gl_suballoc_new(4096, 3));
  assert_null(gl_suballoc_new(4096, 768));
  gl_suballoc_free(NULL);
}

static void test_fill_to_capacity(void **state) {
  (void)state;
  gl_suballoc *a = gl_suballoc_new(16 * A, A);
  assert_non_null(a);
  /* Rounded sizes: 1 -> 256, 257 -> 512, 256 -> 256; first fit is
   * address order, so the offsets are consecutive. */
  assert_int_equal(alloc_ok(a, 1), 0);
  assert_int_equal(alloc_ok(a, A + 1), A);
  assert_int_equal(alloc_ok(a, A), 3 * A);
  assert_int_equal(gl_suballoc_used(a), 4 * A);
  assert_int_equal(alloc_ok(a, 12 * A), 4 * A);
  assert_int_equal(gl_suballoc_used(a), 16 * A);

  uint64_t off = 12345;
  char err[256] = "";
  assert_int_equal(gl_suballoc_alloc(a, 1, &off, err, sizeof err), GPULEASE_CAPACITY_EXCEEDED);
  assert_int_equal(off, 12345);
  assert_string_equal(err,
                      "lease VRAM: 256 bytes requested, 0 bytes free, largest free range 0 bytes");
  gl_suballoc_free(a);
}

static void test_invalid_sizes(void **state) {
  (void)state;
  gl_suballoc *a = gl_suballoc_new(16 * A, A);
  assert_non_null(a);
  uint64_t off;
  char err[256] = "";
  assert_int_equal(gl_suballoc_alloc(a, 0, &off, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "0 bytes"));
  assert_int_equal(gl_suballoc_alloc(a, UINT64_MAX, &off, err, sizeof err),
                   GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "overflow"));
  assert_int_equal(gl_suballoc_alloc(a, UINT64_MAX - A + 2, &off, err, sizeof err),
                   GPULEASE_INVALID_ARGUMENT);
  /* The largest size that rounds without overflow is simply too big. */
  assert_int_equal(gl_suballoc_alloc(a, UINT64_MAX - A + 1, &off, err, sizeof err),
                   GPULEASE_CAPACITY_EXCEEDED);
  assert_int_equal(gl_suballoc_alloc(a, 16 * A + 1, &off, err, sizeof err),
                   GPULEASE_CAPACITY_EXCEEDED);
  assert_string_equal(err, "lease VRAM: 4352 bytes requested, 4096 bytes free, largest free "
                           "range 4096 bytes");
  /* NULL error buffer of length 0 is allowed. */
  assert_int_equal(gl_suballoc_alloc(a, 0, &off, NULL, 0), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(gl_suballoc_used(a), 0);
  gl_suballoc_free(a);
}

static void test_unaligned_capacity(void **state) {
  (void)state;
  /* 1000 bytes: only 768 usable at alignment 256. */
  gl_suballoc *a = gl_suballoc_new(1000, A);
  assert_non_null(a);
  uint64_t off;
  char err[256];
  assert_int_equal(gl_suballoc_alloc(a, 1000, &off, err, sizeof err), GPULEASE_CAPACITY_EXCEEDED);
  assert_int_equal(alloc_ok(a, 3 * A), 0);
  assert_int_equal(gl_suballoc_alloc(a, 1, &off, err, sizeof err), GPULEASE_CAPACITY_EXCEEDED);
  gl_suballoc_free(a);

  gl_suballoc *z = gl_suballoc_new(100, A); /* nothing usable */
  assert_non_null(z);
  assert_int_equal(gl_suballoc_alloc(z, 1, &off, err, sizeof err), GPULEASE_CAPACITY_EXCEEDED);
  assert_false(gl_suballoc_release(z, 0));
  gl_suballoc_free(z);
}

static void test_free_middle_and_reuse(void **state) {
  (void)state;
  gl_suballoc *a = gl_suballoc_new(8 * A, A);
  assert_non_null(a);
  uint64_t o[4];
  for (int i = 0; i < 4; i++) o[i] = alloc_ok(a, 2 * A);
  assert_true(gl_suballoc_release(a, o[1]));
  assert_int_equal(gl_suballoc_used(a), 6 * A);
  /* A smaller request reuses the hole's start, then the rest of it. */
  assert_int_equal(alloc_ok(a, A), 2 * A);
  assert_int_equal(alloc_ok(a, A), 3 * A);
  uint64_t off;
  char err[256];
  assert_int_equal(gl_suballoc_alloc(a, 1, &off, err, sizeof err), GPULEASE_CAPACITY_EXCEEDED);
  gl_suballoc_free(a);
}

static void test_coalescing(void **state) {
  (void)state;
  gl_suballoc *a = gl_suballoc_new(5 * A, A);
  assert_non_null(a);
  uint64_t o[5];
  for (int i = 0; i < 5; i++) o[i] = alloc_ok(a, A);
  uint64_t off;
  char err[256];

  /* Right neighbour: free 2 then 1 -> [1,3) is one range. */
  assert_true(gl_suballoc_release(a, o[2]));
  assert_true(gl_suballoc_release(a, o[1]));
  assert_int_equal(alloc_ok(a, 2 * A), A);
  assert_true(gl_suballoc_release(a, A));

  /* Left neighbour: [1,3) free, free 3 -> [1,4). */
  assert_true(gl_suballoc_release(a, o[3]));
  assert_int_equal(gl_suballoc_alloc(a, 4 * A, &off, err, sizeof err), GPULEASE_CAPACITY_EXCEEDED);
  assert_string_equal(err, "lease VRAM: 1024 bytes requested, 768 bytes free, largest free range "
                           "768 bytes");

  /* Both sides: free 0 and 4 -> everything is one range again. */
  assert_true(gl_suballoc_release(a, o[0]));
  assert_true(gl_suballoc_release(a, o[4]));
  assert_int_equal(gl_suballoc_used(a), 0);
  assert_int_equal(alloc_ok(a, 5 * A), 0);
  gl_suballoc_free(a);
}

static void test_both_sides_merge(void **state) {
  (void)state;
  gl_suballoc *a = gl_suballoc_new(3 * A, A);
  assert_non_null(a);
  uint64_t o0 = alloc_ok(a, A), o1 = alloc_ok(a, A), o2 = alloc_ok(a, A);
  assert_true(gl_suballoc_release(a, o0));
  assert_true(gl_suballoc_release(a, o2));
  assert_true(gl_suballoc_release(a, o1)); /* joins left and right */
  assert_int_equal(alloc_ok(a, 3 * A), 0);
  gl_suballoc_free(a);
}

static void test_fragmentation_message(void **state) {
  (void)state;
  gl_suballoc *a = gl_suballoc_new(10 * A, A);
  assert_non_null(a);
  uint64_t o[10];
  for (int i = 0; i < 10; i++) o[i] = alloc_ok(a, A);
  /* Holes of 1, 3 and 2 granules: 6 free, largest 3. */
  assert_true(gl_suballoc_release(a, o[1]));
  for (int i = 3; i < 6; i++) assert_true(gl_suballoc_release(a, o[i]));
  for (int i = 8; i < 10; i++) assert_true(gl_suballoc_release(a, o[i]));
  uint64_t off;
  char err[256];
  assert_int_equal(gl_suballoc_alloc(a, 4 * A - 100, &off, err, sizeof err),
                   GPULEASE_CAPACITY_EXCEEDED);
  assert_string_equal(err, "lease VRAM: 1024 bytes requested, 1536 bytes free, largest free "
                           "range 768 bytes");
  /* First fit: 2 granules skip the 1-granule hole and go to the 3 one. */
  assert_int_equal(alloc_ok(a, 2 * A), 3 * A);
  assert_int_equal(alloc_ok(a, A), 1 * A);
  assert_int_equal(alloc_ok(a, A), 5 * A);
  gl_suballoc_free(a);
}

static void test_bogus_release(void **state) {
  (void)state;
  gl_suballoc *a = gl_suballoc_new(8 * A, A);
  assert_non_null(a);
  uint64_t o0 = alloc_ok(a, 2 * A);
  uint64_t o1 = alloc_ok(a, 2 * A);
  assert_false(gl_suballoc_release(a, o0 + A));     /* inside a live one */
  assert_false(gl_suballoc_release(a, o0 + 1));     /* unaligned */
  assert_false(gl_suballoc_release(a, 6 * A));      /* free space */
  assert_false(gl_suballoc_release(a, 1ull << 40)); /* beyond the region */
  assert_false(gl_suballoc_release(a, UINT64_MAX));
  assert_int_equal(gl_suballoc_used(a), 4 * A);
  assert_true(gl_suballoc_release(a, o0));
  assert_false(gl_suballoc_release(a, o0)); /* double release */
  assert_int_equal(gl_suballoc_used(a), 2 * A);
  assert_true(gl_suballoc_release(a, o1));
  assert_false(gl_suballoc_release(a, o1));
  assert_int_equal(gl_suballoc_used(a), 0);
  assert_int_equal(alloc_ok(a, 8 * A), 0);
  gl_suballoc_free(a);
}

/* ---- randomized run against a bitmap model ----------------------------- */

#define MODEL_GRANULES 512

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void) { /* xorshift64* */
  g_rng ^= g_rng >> 12;
  g_rng ^= g_rng << 25;
  g_rng ^= g_rng >> 27;
  return g_rng * 2685821657736338717ull;
}

typedef struct model {
  bool used[MODEL_GRANULES];
  uint32_t size_at[MODEL_GRANULES]; /* granules of the allocation starting here, 0 if none */
} model;

/* First fit in the model: the start of the lowest maximal free run of at
 * least n granules, or -1; also the free total and largest run. */
static long model_fit(const model *m, uint32_t n, uint32_t *free_total, uint32_t *largest) {
  long found = -1;
  *free_total = *largest = 0;
  uint32_t i = 0;
  while (i < MODEL_GRANULES) {
    if (m->used[i]) {
      i++;
      continue;
    }
    uint32_t s = i;
    while (i < MODEL_GRANULES && !m->used[i]) i++;
    uint32_t run = i - s;
    *free_total += run;
    if (run > *largest) *largest = run;
    if (found < 0 && run >= n) found = s;
  }
  return found;
}

static void test_random_vs_model(void **state) {
  (void)state;
  gl_suballoc *a = gl_suballoc_new((uint64_t)MODEL_GRANULES * A + 77, A);
  assert_non_null(a);
  model *m = calloc(1, sizeof *m);
  assert_non_null(m);
  uint32_t live[MODEL_GRANULES];
  size_t nlive = 0;
  uint64_t used = 0;
  for (int step = 0; step < 200000; step++) {
    uint64_t r = rnd();
    if (nlive > 0 && (r % 100) < 45) {
      size_t k = (size_t)(rnd() % nlive);
      uint32_t g = live[k];
      live[k] = live[--nlive];
      assert_true(gl_suballoc_release(a, (uint64_t)g * A));
      for (uint32_t i = 0; i < m->size_at[g]; i++) m->used[g + i] = false;
      used -= (uint64_t)m->size_at[g] * A;
      m->size_at[g] = 0;
      /* A second release of the same offset is refused. */
      assert_false(gl_suballoc_release(a, (uint64_t)g * A));
    } else {
      /* Mostly small sizes, sometimes big ones, in bytes not granules. */
      uint64_t bytes = (r >> 8) % 8 == 0 ? 1 + rnd() % (64ull * A) : 1 + rnd() % (6ull * A);
      uint32_t n = (uint32_t)((bytes + A - 1) / A);
      uint32_t free_total, largest;
      long want = model_fit(m, n, &free_total, &largest);
      uint64_t off = UINT64_MAX;
      char err[256] = "";
      gpulease_status st = gl_suballoc_alloc(a, bytes, &off, err, sizeof err);
      if (want < 0) {
        assert_int_equal(st, GPULEASE_CAPACITY_EXCEEDED);
        char expect[256];
        snprintf(expect, sizeof expect,
                 "lease VRAM: %llu bytes requested, %llu bytes free, largest free range %llu bytes",
                 (unsigned long long)n * A, (unsigned long long)free_total * A,
                 (unsigned long long)largest * A);
        assert_string_equal(err, expect);
      } else {
        assert_int_equal(st, GPULEASE_OK);
        assert_int_equal(off, (uint64_t)want * A);
        for (uint32_t i = 0; i < n; i++) m->used[want + i] = true;
        m->size_at[want] = n;
        live[nlive++] = (uint32_t)want;
        used += (uint64_t)n * A;
      }
    }
    assert_int_equal(gl_suballoc_used(a), used);
    /* A release of an offset that is not a start is refused. */
    if (step % 97 == 0) {
      uint32_t g = (uint32_t)(rnd() % MODEL_GRANULES);
      if (m->size_at[g] == 0) assert_false(gl_suballoc_release(a, (uint64_t)g * A));
    }
  }
  while (nlive > 0) assert_true(gl_suballoc_release(a, (uint64_t)live[--nlive] * A));
  assert_int_equal(gl_suballoc_used(a), 0);
  assert_int_equal(alloc_ok(a, (uint64_t)MODEL_GRANULES * A), 0);
  free(m);
  gl_suballoc_free(a);
}

/* Many live allocations: the tables grow, and everything comes back. */
static void test_many_live(void **state) {
  (void)state;
  enum { N = 65536 };
  gl_suballoc *a = gl_suballoc_new((uint64_t)N * A, A);
  assert_non_null(a);
  for (uint64_t i = 0; i < N; i++) assert_int_equal(alloc_ok(a, 1), i * A);
  /* Free every other one (N/2 holes), then the rest in reverse. */
  for (uint64_t i = 0; i < N; i += 2) assert_true(gl_suballoc_release(a, i * A));
  uint64_t off;
  char err[256];
  assert_int_equal(gl_suballoc_alloc(a, 2 * A, &off, err, sizeof err), GPULEASE_CAPACITY_EXCEEDED);
  for (uint64_t i = N - 1; i < N; i -= 2) assert_true(gl_suballoc_release(a, i * A));
  assert_int_equal(gl_suballoc_used(a), 0);
  assert_int_equal(alloc_ok(a, (uint64_t)N * A), 0);
  gl_suballoc_free(a);
}

/* ---- threads ------------------------------------------------------------ */

#define T_THREADS 8
#define T_GRANULES 4096
#define T_ROUNDS 20000

typedef struct shared {
  gl_suballoc *a;
  _Atomic int owner[T_GRANULES]; /* 0 = free, else thread id + 1 */
  atomic_int failures;
} shared;

typedef struct targ {
  shared *s;
  int id;
} targ;

static void *thread_main(void *p) {
  targ *t = p;
  shared *s = t->s;
  uint64_t seed = 0x1234567ull * (uint64_t)(t->id + 1);
  uint64_t offs[64], lens[64];
  int n = 0;
  for (int round = 0; round < T_ROUNDS; round++) {
    seed ^= seed >> 12;
    seed ^= seed << 25;
    seed ^= seed >> 27;
    uint64_t r = seed * 2685821657736338717ull;
    if (n > 0 && (n == 64 || r % 2 == 0)) {
      int k = (int)((r >> 16) % (uint64_t)n);
      uint64_t g0 = offs[k] / A, ng = lens[k] / A;
      for (uint64_t g = g0; g < g0 + ng; g++) {
        int expect = t->id + 1;
        if (!atomic_compare_exchange_strong(&s->owner[g], &expect, 0))
          atomic_fetch_add(&s->failures, 1);
      }
      if (!gl_suballoc_release(s->a, offs[k])) atomic_fetch_add(&s->failures, 1);
      offs[k] = offs[n - 1];
      lens[k] = lens[n - 1];
      n--;
    } else {
      uint64_t bytes = 1 + (r >> 20) % (8 * A);
      uint64_t off;
      char err[256];
      gpulease_status st = gl_suballoc_alloc(s->a, bytes, &off, err, sizeof err);
      if (st == GPULEASE_CAPACITY_EXCEEDED) continue;
      if (st != GPULEASE_OK || off % A != 0) {
        atomic_fetch_add(&s->failures, 1);
        continue;
      }
      uint64_t len = (bytes + A - 1) / A * A;
      if (off + len > (uint64_t)T_GRANULES * A) atomic_fetch_add(&s->failures, 1);
      for (uint64_t g = off / A; g < (off + len) / A && g < T_GRANULES; g++) {
        int expect = 0;
        if (!atomic_compare_exchange_strong(&s->owner[g], &expect, t->id + 1))
          atomic_fetch_add(&s->failures, 1); /* overlapping ranges */
      }
      offs[n] = off;
      lens[n] = len;
      n++;
    }
  }
  for (int k = 0; k < n; k++) {
    for (uint64_t g = offs[k] / A; g < (offs[k] + lens[k]) / A; g++) atomic_store(&s->owner[g], 0);
    if (!gl_suballoc_release(s->a, offs[k])) atomic_fetch_add(&s->failures, 1);
  }
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  shared *s = calloc(1, sizeof *s);
  assert_non_null(s);
  /* Small enough that the threads run it full and compete for space. */
  s->a = gl_suballoc_new((uint64_t)T_GRANULES * A, A);
  assert_non_null(s->a);
  pthread_t th[T_THREADS];
  targ args[T_THREADS];
  for (int i = 0; i < T_THREADS; i++) {
    args[i] = (targ){s, i};
    assert_int_equal(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
  }
  for (int i = 0; i < T_THREADS; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
  assert_int_equal(atomic_load(&s->failures), 0);
  assert_int_equal(gl_suballoc_used(s->a), 0);
  /* Everything coalesced back into one range. */
  assert_int_equal(alloc_ok(s->a, (uint64_t)T_GRANULES * A), 0);
  gl_suballoc_free(s->a);
  free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_new_refuses_bad_align),
      cmocka_unit_test(test_fill_to_capacity),
      cmocka_unit_test(test_invalid_sizes),
      cmocka_unit_test(test_unaligned_capacity),
      cmocka_unit_test(test_free_middle_and_reuse),
      cmocka_unit_test(test_coalescing),
      cmocka_unit_test(test_both_sides_merge),
      cmocka_unit_test(test_fragmentation_message),
      cmocka_unit_test(test_bogus_release),
      cmocka_unit_test(test_random_vs_model),
      cmocka_unit_test(test_many_live),
      cmocka_unit_test(test_threads),
  };
  if (getenv("GL_TEST_FILTER")) cmocka_set_test_filter(getenv("GL_TEST_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
