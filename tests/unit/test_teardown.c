/*
 * test_teardown.c - the teardown deadlines that scale with the workers
 * tearing down at once (src/daemon/teardown.h), with given times: the
 * base alone, the per-context step for each other, the measured pace when
 * it is slower, releases and exits counted together, GPUs apart, caps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "daemon/teardown.h"
#include "gpulease/gpulease.h"

static gl_teardown *table(uint32_t exit_ms, uint32_t per_ms) {
  gl_teardown_limits lim = {.exit_base_ms = exit_ms,
                            .release_base_ms = GL_TEARDOWN_RELEASE_BASE_MS,
                            .per_context_ms = per_ms};
  gl_teardown *t = gl_teardown_new(&lim);
  assert_non_null(t);
  return t;
}

/* Alone: the base. Each other worker under way adds the step. */
static void test_base_and_step(void **state) {
  (void)state;
  gl_teardown *t = table(10000, 250);
  assert_int_equal(gl_teardown_timeout_ms(t, 0, GL_TEARDOWN_EXIT, 0), 10000);
  assert_int_equal(gl_teardown_timeout_ms(t, 0, GL_TEARDOWN_EXIT, 1), 10000);
  assert_int_equal(gl_teardown_timeout_ms(t, 0, GL_TEARDOWN_RELEASE, 1), 2000);
  for (int i = 0; i < 100; i++) assert_int_equal(gl_teardown_begin(t, 0, 1.0), (unsigned)i + 1);
  assert_int_equal(gl_teardown_in_flight(t, 0), 100);
  /* The current count counts even when the caller's peak is lower. */
  assert_int_equal(gl_teardown_timeout_ms(t, 0, GL_TEARDOWN_EXIT, 1), 10000 + 99 * 250);
  assert_int_equal(gl_teardown_timeout_ms(t, 0, GL_TEARDOWN_RELEASE, 1), 2000 + 99 * 250);
  /* Another GPU is apart. */
  assert_int_equal(gl_teardown_in_flight(t, 1), 0);
  assert_int_equal(gl_teardown_timeout_ms(t, 1, GL_TEARDOWN_EXIT, 0), 10000);
  /* A peak seen earlier keeps its deadline once the others are done. */
  for (int i = 0; i < 99; i++) gl_teardown_end(t, 0, 1.0, false);
  assert_int_equal(gl_teardown_in_flight(t, 0), 1);
  assert_int_equal(gl_teardown_timeout_ms(t, 0, GL_TEARDOWN_EXIT, 100), 10000 + 99 * 250);
  assert_int_equal(gl_teardown_timeout_ms(t, 0, GL_TEARDOWN_EXIT, 1), 10000);
  /* More ends than begins change nothing; out of range is not counted. */
  gl_teardown_end(t, 0, 1.0, false);
  gl_teardown_end(t, 0, 1.0, false);
  assert_int_equal(gl_teardown_in_flight(t, 0), 0);
  assert_int_equal(gl_teardown_begin(t, GPULEASE_MAX_GPUS, 1.0), 0);
  assert_int_equal(gl_teardown_in_flight(t, GPULEASE_MAX_GPUS), 0);
  gl_teardown_free(t);
}

/* Teardowns ending 400 ms apart (a driver slower than the step): the pace
 * follows, and twice it becomes the step. */
static void test_measured_pace(void **state) {
  (void)state;
  gl_teardown *t = table(1000, 250);
  assert_true(gl_teardown_pace_ms(t, 0) == 0);
  for (int i = 0; i < 10; i++) gl_teardown_begin(t, 0, 0.0);
  gl_teardown_end(t, 0, 0.4, true); /* the first sample: 400 ms since the start */
  assert_true(gl_teardown_pace_ms(t, 0) > 399 && gl_teardown_pace_ms(t, 0) < 401);
  for (int i = 2; i <= 10; i++) gl_teardown_end(t, 0, 0.4 * i, true);
  assert_true(gl_teardown_pace_ms(t, 0) > 399 && gl_teardown_pace_ms(t, 0) < 401);
  assert_int_equal(gl_teardown_step_ms(t, 0), 800);
  for (int i = 0; i < 5; i++) gl_teardown_begin(t, 0, 10.0);
  assert_int_equal(gl_teardown_timeout_ms(t, 0, GL_TEARDOWN_EXIT, 5), 1000 + 4 * 800);
  /* Fast ones bring it down, a 1/8 at a time; never below the floor. */
  for (int i = 0; i < 5; i++) gl_teardown_end(t, 0, 10.0 + 0.001 * (i + 1), true);
  assert_true(gl_teardown_pace_ms(t, 0) < 400 * 0.6);
  for (int k = 0; k < 40; k++) {
    gl_teardown_begin(t, 0, 20.0 + k);
    gl_teardown_end(t, 0, 20.0 + k + 0.01, true);
  }
  assert_true(gl_teardown_pace_ms(t, 0) < 20);
  assert_int_equal(gl_teardown_step_ms(t, 0), 250);
  /* Given-up teardowns are not samples. */
  double before = gl_teardown_pace_ms(t, 0);
  gl_teardown_begin(t, 0, 100.0);
  gl_teardown_end(t, 0, 200.0, false);
  assert_true(gl_teardown_pace_ms(t, 0) == before);
  gl_teardown_free(t);
}

/* A reload's limits hold from the next deadline on; the extra is capped. */
static void test_limits_and_cap(void **state) {
  (void)state;
  gl_teardown *t = table(10000, 250);
  gl_teardown_limits lim = {.exit_base_ms = 300, .release_base_ms = 50, .per_context_ms = 0};
  gl_teardown_set_limits(t, &lim);
  assert_int_equal(gl_teardown_get_limits(t).exit_base_ms, 300);
  for (int i = 0; i < 3; i++) gl_teardown_begin(t, 2, 0.0);
  assert_int_equal(gl_teardown_timeout_ms(t, 2, GL_TEARDOWN_EXIT, 0), 300); /* step 0 */
  assert_int_equal(gl_teardown_timeout_ms(t, 2, GL_TEARDOWN_RELEASE, 0), 50);
  lim.per_context_ms = 60000;
  gl_teardown_set_limits(t, &lim);
  assert_int_equal(gl_teardown_timeout_ms(t, 2, GL_TEARDOWN_EXIT, 0), 300 + 2 * 60000);
  assert_int_equal(gl_teardown_timeout_ms(t, 2, GL_TEARDOWN_EXIT, 1000000), 300 + 3600000);
  gl_teardown_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_base_and_step),
      cmocka_unit_test(test_measured_pace),
      cmocka_unit_test(test_limits_and_cap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
