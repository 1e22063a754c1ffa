/*
 * test_ctx_admit.c - the queue of LEASE_ALLOCs waiting for an isolated CUDA
 * context (src/daemon/ctx_admit.c), on a libev loop of its own: round
 * robin across tenants, each tenant's in order; the bounds (all, a tenant's
 * half, deadline 0); deadlines; the limit learned lower and kept by a
 * reload; the waiters answered when it is freed.
 */
#include <ev.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/ctx_admit.h"

/* room: `rooms` contexts to give out, whatever the GPU. */
static int g_rooms;
static int g_after;

static bool room(void *user, uint32_t gpu, bool fresh) {
  (void)user, (void)gpu, (void)fresh;
  return g_rooms > 0;
}

static void after(void *user) {
  (void)user;
  g_after++;
}

/* What happened to the waiters, in order: their ids, positive when
 * admitted, negative when refused. */
static int g_log[64];
static int g_nlog;

static void done(void *ctx, bool admitted) {
  int id = (int)(intptr_t)ctx;
  if (admitted) g_rooms--; /* the served request takes its context */
  g_log[g_nlog++] = admitted ? id : -id;
}

static void reset(void) {
  g_rooms = 0;
  g_after = 0;
  g_nlog = 0;
}

static void turn(struct ev_loop *loop) { ev_run(loop, EVRUN_NOWAIT); }

static int wait(gl_ctx_admit *a, const char *tenant, int id) {
  return gl_ctx_admit_wait(a, tenant, 0, false, done, (void *)(intptr_t)id, NULL);
}

static void test_round_robin(void **state) {
  (void)state;
  reset();
  struct ev_loop *loop = ev_loop_new(0);
  gl_ctx_admit *a = gl_ctx_admit_new(loop, 1, 2, 16, 60000, room, after, NULL);
  assert_non_null(a);
  /* a: 1 2 3, b: 4, c: 5 6 */
  assert_int_equal(wait(a, "a", 1), 0);
  assert_int_equal(wait(a, "a", 2), 0);
  assert_int_equal(wait(a, "a", 3), 0);
  assert_int_equal(wait(a, "b", 4), 0);
  assert_int_equal(wait(a, "c", 5), 0);
  assert_int_equal(wait(a, "c", 6), 0);
  assert_int_equal(gl_ctx_admit_waiting(a, 0), 6);
  assert_int_equal(gl_ctx_admit_waiting(a, GL_CTX_ADMIT_ANY), 6);
  turn(loop);
  assert_int_equal(g_nlog, 0); /* no poke, no room: nothing */
  gl_ctx_admit_poke(a);
  turn(loop);
  assert_int_equal(g_nlog, 0); /* poked without room */
  assert_int_equal(g_after, 2); /* this poke's, and the one gl_ctx_admit_new made */
  g_rooms = 1;
  gl_ctx_admit_poke(a);
  turn(loop);
  assert_int_equal(g_nlog, 1);
  assert_int_equal(g_log[0], 1);
  g_rooms = 3;
  gl_ctx_admit_poke(a);
  turn(loop);
  assert_int_equal(g_nlog, 4);
  assert_int_equal(g_log[1], 4); /* b after a */
  assert_int_equal(g_log[2], 5); /* then c */
  assert_int_equal(g_log[3], 2); /* then a again */
  g_rooms = 5;
  gl_ctx_admit_poke(a);
  turn(loop);
  assert_int_equal(g_nlog, 6);
  assert_int_equal(g_log[4], 6); /* c, whose turn it is */
  assert_int_equal(g_log[5], 3);
  assert_int_equal(gl_ctx_admit_waiting(a, 0), 0);
  uint64_t served, timed_out, refused;
  gl_ctx_admit_totals(a, &served, &timed_out, &refused);
  assert_int_equal(served, 6);
  assert_int_equal(timed_out, 0);
  gl_ctx_admit_free(a);
  ev_loop_destroy(loop);
}

static void test_bounds(void **state) {
  (void)state;
  reset();
  struct ev_loop *loop = ev_loop_new(0);
  gl_ctx_admit *a = gl_ctx_admit_new(loop, 2, 2, 4, 60000, room, NULL, NULL);
  const char *why = NULL;
  /* A tenant holds half the queue at most. */
  assert_int_equal(wait(a, "a", 1), 0);
  assert_int_equal(wait(a, "a", 2), 0);
  assert_int_equal(gl_ctx_admit_wait(a, "a", 0, false, done, (void *)3, &why), -1);
  assert_non_null(strstr(why, "half"));
  assert_int_equal(wait(a, "b", 4), 0);
  assert_int_equal(gl_ctx_admit_wait(a, "", 1, true, done, (void *)5, NULL), 0);
  assert_int_equal(gl_ctx_admit_waiting(a, 1), 1);
  assert_int_equal(gl_ctx_admit_waiting(a, 0), 3);
  /* Full. */
  assert_int_equal(gl_ctx_admit_wait(a, "c", 0, false, done, (void *)6, &why), -1);
  assert_non_null(strstr(why, "full"));
  /* A GPU out of range is refused. */
  assert_int_equal(gl_ctx_admit_wait(a, "c", 64, false, done, (void *)7, NULL), -1);
  /* Freeing answers every waiter, refused. */
  gl_ctx_admit_free(a);
  assert_int_equal(g_nlog, 4);
  for (int i = 0; i < 4; i++) assert_true(g_log[i] < 0);
  /* Deadline 0: nobody waits. */
  a = gl_ctx_admit_new(loop, 1, 2, 4, 0, room, NULL, NULL);
  assert_int_equal(gl_ctx_admit_wait(a, "a", 0, false, done, (void *)1, &why), -1);
  assert_non_null(strstr(why, "do not wait"));
  gl_ctx_admit_free(a);
  ev_loop_destroy(loop);
}

static void test_deadline(void **state) {
  (void)state;
  reset();
  struct ev_loop *loop = ev_loop_new(0);
  gl_ctx_admit *a = gl_ctx_admit_new(loop, 1, 2, 4, 50, room, NULL, NULL);
  assert_int_equal(wait(a, "a", 1), 0);
  assert_int_equal(wait(a, "b", 2), 0);
  ev_tstamp t0 = ev_time();
  while (g_nlog < 2 && ev_time() - t0 < 5) ev_run(loop, EVRUN_ONCE);
  assert_int_equal(g_nlog, 2);
  assert_int_equal(g_log[0] + g_log[1], -3); /* both refused, in either order */
  assert_true(g_log[0] < 0 && g_log[1] < 0);
  assert_true(ev_time() - t0 >= 0.04);
  uint64_t timed_out;
  gl_ctx_admit_totals(a, NULL, &timed_out, NULL);
  assert_int_equal(timed_out, 2);
  gl_ctx_admit_free(a);
  ev_loop_destroy(loop);
}

static void test_learn(void **state) {
  (void)state;
  struct ev_loop *loop = ev_loop_new(0);
  gl_ctx_admit *a = gl_ctx_admit_new(loop, 2, 64, 4, 100, room, NULL, NULL);
  assert_int_equal(gl_ctx_admit_limit(a, 0), 64);
  assert_false(gl_ctx_admit_learned(a, 0));
  assert_false(gl_ctx_admit_learn(a, 0, 70)); /* at or above: stays */
  assert_int_equal(gl_ctx_admit_limit(a, 0), 64);
  assert_true(gl_ctx_admit_learn(a, 0, 40));
  assert_int_equal(gl_ctx_admit_limit(a, 0), 40);
  assert_true(gl_ctx_admit_learned(a, 0));
  assert_int_equal(gl_ctx_admit_limit(a, 1), 64); /* per GPU */
  assert_true(gl_ctx_admit_learn(a, 1, 0));       /* at least 1 */
  assert_int_equal(gl_ctx_admit_limit(a, 1), 1);
  /* A reload: a higher flag keeps what was learned, a lower one wins. */
  gl_ctx_admit_configure(a, 100, 4, 100);
  assert_int_equal(gl_ctx_admit_limit(a, 0), 40);
  assert_int_equal(gl_ctx_admit_limit(a, 2), 100);
  gl_ctx_admit_configure(a, 8, 4, 100);
  assert_int_equal(gl_ctx_admit_limit(a, 0), 8);
  assert_false(gl_ctx_admit_learned(a, 0));
  assert_int_equal(gl_ctx_admit_limit(a, 1), 1);
  assert_int_equal(gl_ctx_admit_limit(a, 64), 0);
  gl_ctx_admit_free(a);
  ev_loop_destroy(loop);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_robin),
      cmocka_unit_test(test_bounds),
      cmocka_unit_test(test_deadline),
      cmocka_unit_test(test_learn),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
