/*
 * test_e2e_teardown.c - teardown under load (issue 34): a real gpuleased
 * on the emulated device, its workers made slow or wedged by the test-only
 * fault injections of src/worker/exit_fault.h and worker_proc.c.
 *
 * Checked:
 *  - many leases ending together whose workers exit one after another
 *    (GL_FAULT_WORKER_EXIT_LOCK: as the driver tears contexts down in
 *    turn), the later ones well past --teardown-timeout-ms, do not fence
 *    the GPU: each deadline grows by --teardown-per-context-ms for each
 *    other worker tearing down with it (src/daemon/teardown.h);
 *  - a lone slow-exiting worker within its deadline does not fence;
 *  - wedged workers (GL_FAULT_WORKER_KILL_IGNORED: they never exit) still
 *    fence, not before the scaled deadline, with an ERROR that names the
 *    figures; the fence lifts once they are gone;
 *  - freed leases whose workers cannot release them (a kernel still
 *    running) are ended after the release deadline, which grows the same
 *    way with the releases under way together.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "daemon_harness.h"
#include "gpulease/gpulease.h"
#include "lib_check.h"

static double now_s(void) { return (double)gl_mono_ns() / 1e9; }

static void sleep_until(double t) {
  double left = t - now_s();
  if (left > 0) usleep((useconds_t)(left * 1e6));
}

static bool gpu0_fenced(gpulease_client *c) {
  static gpulease_inventory inv = {.struct_version = GPULEASE_INVENTORY_VERSION};
  CHECK(gpulease_inventory_get(c, &inv, E));
  return (inv.gpus[0].flags & GPULEASE_GPU_FENCED) != 0;
}

/* Starts d with the fault variables set for its workers only while it
 * starts (the daemon's environment is what its workers inherit). */
static void start_with(gl_test_daemon *d, const char *const *env, const char *const *extra) {
  for (int i = 0; env[i]; i += 2) setenv(env[i], env[i + 1], 1);
  int rc = gl_test_daemon_start(d, "256M", extra);
  for (int i = 0; env[i]; i += 2) unsetenv(env[i]);
  assert_int_equal(rc, 0);
}

/* Allocates n isolated leases of 4 MiB on GPU 0 (each its own worker). */
static void alloc_n(gpulease_client *c, gpulease_lease *l, int n) {
  for (int i = 0; i < n; i++) CHECK(gpulease_lease_alloc(c, 0, 4 * MiB, 60, &l[i], E));
}

#define BURST 8
#define EXIT_DELAY_MS 150

/* BURST workers exit EXIT_DELAY_MS apart, one at a time: the last is
 * gone about 1.2 s after its SIGKILL, three times the base deadline of
 * 400 ms, yet within 400 + 7 x 250 ms. No fence. */
static void test_burst_of_slow_exits(void **state) {
  (void)state;
  if (gl_test_on_gpu()) skip(); /* the fault injection is the emulated device's */
  char lock[] = "/tmp/gl-teardown-lock-XXXXXX";
  int fd = mkstemp(lock);
  assert_true(fd >= 0);
  close(fd);
  char delay[16];
  snprintf(delay, sizeof delay, "%d", EXIT_DELAY_MS);
  const char *env[] = {"GL_FAULT_WORKER_EXIT_DELAY_MS", delay, "GL_FAULT_WORKER_EXIT_LOCK", lock,
                       NULL};
  const char *extra[] = {"--teardown-timeout-ms", "400", "--teardown-per-context-ms", "250",
                         NULL};
  gl_test_daemon d;
  start_with(&d, env, extra);
  gpulease_client *c = gl_test_connect(&d, 30000);

  /* A lone slow exit (150 ms) within its 400 ms. */
  gpulease_lease one;
  alloc_n(c, &one, 1);
  CHECK(gpulease_lease_free(c, &one, E));
  assert_int_equal(gl_test_daemon_wait_children(&d, 0, 10000), 0);
  assert_false(gpu0_fenced(c));

  /* The burst. */
  gpulease_lease l[BURST];
  alloc_n(c, l, BURST);
  assert_int_equal(gl_test_daemon_children(&d), BURST);
  double t0 = now_s();
  for (int i = 0; i < BURST; i++) CHECK(gpulease_lease_free(c, &l[i], E));
  bool fenced = false;
  while (gl_test_daemon_children(&d) > 0 && now_s() - t0 < 10) {
    fenced = fenced || gpu0_fenced(c);
    usleep(50 * 1000);
  }
  double took = now_s() - t0;
  assert_int_equal(gl_test_daemon_children(&d), 0);
  /* The exits did queue: the last came well past the base deadline. */
  fprintf(stderr, "%d serialised exits took %.0f ms\n", BURST, took * 1000);
  assert_true(took >= BURST * EXIT_DELAY_MS / 1000.0 * 0.9);
  assert_true(took > 0.8);
  usleep(300 * 1000); /* a poll of the fence after the last exit */
  assert_false(fenced || gpu0_fenced(c));
  assert_int_equal(gl_test_daemon_log_count(&d, "fenced"), 0);
  /* The GPU takes leases and runs kernels. */
  CHECK(gpulease_lease_alloc(c, 0, 4 * MiB, 60, &one, E));
  gpulease_error err;
  assert_int_equal(gl_test_submit_iota(c, &one, &err), GPULEASE_OK);
  CHECK(gpulease_lease_free(c, &one, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
  unlink(lock);
}

/* Kills every worker of d (they ignore their daemon's kill here). */
static void kill_workers(const gl_test_daemon *d) {
  pid_t pids[16];
  int n = gl_test_daemon_child_pids(d, pids, 16);
  for (int i = 0; i < n; i++) kill(pids[i], SIGKILL);
}

#define WEDGED 3

/* Waits up to 2 s for n lines of d's log holding needle: the count then. */
static int wait_log(const gl_test_daemon *d, const char *needle, int n) {
  int have = gl_test_daemon_log_count(d, needle);
  for (int i = 0; i < 40 && have < n; i++) {
    usleep(50 * 1000);
    have = gl_test_daemon_log_count(d, needle);
  }
  return have;
}

/* WEDGED workers that never exit: their deadline is 300 + 2 x 250 = 800 ms
 * after their kills; the GPU is not fenced before, and fenced after. */
static void test_wedged_workers_fence_after_scaled_timeout(void **state) {
  (void)state;
  if (gl_test_on_gpu()) skip();
  const char *env[] = {"GL_FAULT_WORKER_KILL_IGNORED", "1", NULL};
  const char *extra[] = {"--teardown-timeout-ms", "300", "--teardown-per-context-ms", "250",
                         NULL};
  gl_test_daemon d;
  start_with(&d, env, extra);
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease l[WEDGED];
  alloc_n(c, l, WEDGED);
  double t0 = now_s();
  for (int i = 0; i < WEDGED; i++) CHECK(gpulease_lease_free(c, &l[i], E));
  double frees = now_s() - t0;
  fprintf(stderr, "%d frees took %.0f ms\n", WEDGED, frees * 1000);
  /* Past the base deadline (300 ms) but not the scaled one (800 ms): with
   * the kills close together (each deadline grows when the next comes),
   * nothing is fenced yet. */
  if (frees < 0.2) {
    sleep_until(t0 + 0.55);
    assert_false(gpu0_fenced(c));
  }
  bool fenced = false;
  while (!fenced && now_s() - t0 < 5) {
    usleep(50 * 1000);
    fenced = gpu0_fenced(c);
  }
  assert_true(fenced);
  gpulease_error err;
  gpulease_lease x;
  assert_int_equal(gpulease_lease_alloc(c, 0, 4 * MiB, 60, &x, &err), GPULEASE_BUSY);
  assert_non_null(strstr(err.message, "GPU 0 is fenced (its worker PID"));
  /* The ERROR names the figures. */
  assert_int_equal(gl_test_daemon_log_count(&d, "ERROR GPU 0 fenced: its worker PID"), 1);
  if (frees < 0.2) { /* the three kills came together: each waited for all three */
    assert_true(now_s() - t0 >= 0.8);
    assert_non_null(strstr(err.message, "did not exit within 800 ms of SIGKILL"));
    assert_int_equal(wait_log(&d, "past its timeout of 800 ms (300 ms + 250 ms for each of the 2 "
                                  "other worker(s)", WEDGED),
                     WEDGED);
  }
  assert_int_equal(wait_log(&d, "has not exited and holds", WEDGED), WEDGED);
  assert_true(gl_test_daemon_log_count(&d, "GPU's used/free memory unknown (no NVML)") >= 1);
  /* The wedged workers finally go: the fence lifts by itself. */
  kill_workers(&d);
  for (int i = 0; i < 50 && gpu0_fenced(c); i++) usleep(100 * 1000);
  assert_false(gpu0_fenced(c));
  assert_int_equal(gl_test_daemon_log_count(&d, "fence lifted"), 1);
  CHECK(gpulease_lease_alloc(c, 0, 4 * MiB, 60, &x, E));
  assert_int_equal(gl_test_submit_iota(c, &x, &err), GPULEASE_OK);
  CHECK(gpulease_lease_free(c, &x, E));
  gpulease_client_close(c);
  kill_workers(&d);
  gl_test_daemon_stop(&d);
}

/* A kernel that counts to n: still running when its lease is freed. */
static const char k_spin[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry spin(.param .u64 n)\n{\n"
    "  .reg .b64 %rd<3>;\n  .reg .pred %p<2>;\n"
    "  ld.param.u64 %rd1, [n];\n  mov.u64 %rd2, 0;\n"
    "LOOP:\n  add.u64 %rd2, %rd2, 1;\n  setp.lt.u64 %p1, %rd2, %rd1;\n"
    "  @%p1 bra LOOP;\n  ret;\n}\n";

/* Starts the spin kernel, without end, in a session of lease l. */
static gpulease_session *spin_forever(gpulease_client *c, const gpulease_lease *l) {
  gpulease_session *s;
  CHECK(gpulease_session_open(c, l, &s, E));
  gpulease_module m;
  CHECK(gpulease_module_load(s, k_spin, sizeof k_spin - 1, GPULEASE_IMAGE_PTX, &m, NULL, E));
  gpulease_function fn;
  CHECK(gpulease_function_get(s, m, "spin", &fn, NULL, E));
  uint64_t forever = 1ull << 62;
  gpulease_arg arg = gpulease_arg_scalar(&forever, sizeof forever);
  const uint32_t one[3] = {1, 1, 1};
  CHECK(gpulease_launch(s, fn, one, one, 0, &arg, 1, E)); /* queued: answered at once */
  return s;
}

/* Two leases freed together while their kernels run: their workers are
 * offered for reuse (the pool) and cannot release them. Each release's
 * deadline is 2000 + 1 x 1000 ms: they are ended after 3 s, not 2. */
static void test_release_deadline_scales(void **state) {
  (void)state;
  const char *env[] = {NULL};
  const char *extra[] = {"--warm-workers", "1", "--teardown-per-context-ms", "1000", NULL};
  gl_test_daemon d;
  start_with(&d, env, extra);
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease l[2];
  gpulease_session *s[2];
  alloc_n(c, l, 2);
  for (int i = 0; i < 2; i++) s[i] = spin_forever(c, &l[i]);
  usleep(100 * 1000); /* the kernels run */
  double t0 = now_s();
  for (int i = 0; i < 2; i++) CHECK(gpulease_lease_free(c, &l[i], E));
  double frees = now_s() - t0;
  fprintf(stderr, "2 frees took %.0f ms\n", frees * 1000);
  if (frees < 0.3) { /* released together: neither is ended at the base's 2 s */
    sleep_until(t0 + 2.5);
    assert_int_equal(gl_test_daemon_log_count(&d, "did not release it"), 0);
  }
  const char *ended = "did not release it in";
  for (int i = 0; i < 40 && gl_test_daemon_log_count(&d, ended) < 2; i++) usleep(100 * 1000);
  assert_int_equal(gl_test_daemon_log_count(&d, ended), 2);
  assert_true(now_s() - t0 >= 3.0);
  if (frees < 0.3)
    assert_int_equal(gl_test_daemon_log_count(&d, "(2000 ms + 1000 ms for each of the 1 other "
                                                  "worker(s) tearing down with it"),
                     2);
  /* The GPU is fine: a lease runs its kernel. */
  gpulease_lease x;
  CHECK(gpulease_lease_alloc(c, 0, 4 * MiB, 60, &x, E));
  gpulease_error err;
  assert_int_equal(gl_test_submit_iota(c, &x, &err), GPULEASE_OK);
  CHECK(gpulease_lease_free(c, &x, E));
  assert_int_equal(gl_test_daemon_log_count(&d, "fenced"), 0);
  for (int i = 0; i < 2; i++) gpulease_session_close(s[i], NULL);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_burst_of_slow_exits),
      cmocka_unit_test(test_wedged_workers_fence_after_scaled_timeout),
      cmocka_unit_test(test_release_deadline_scales),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
