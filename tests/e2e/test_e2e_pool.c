/*
 * test_e2e_pool.c - warm workers (gpuleased --warm-workers, src/daemon/
 * pool.h): a real gpuleased on the emulated device keeping workers
 * started ahead of leases.
 *
 * Checked: the pool's workers are there once the daemon says it is ready;
 * a lease takes one (its kernel runs, its bytes come back) and a
 * replacement starts; a burst of leases larger than the pool is served
 * (the rest start cold) and the pool fills again; freed leases leave only
 * the pool; a warm worker killed from outside is replaced; the daemon
 * stops with nothing left behind.
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

static void start(gl_test_daemon *d, const char *warm) {
  const char *extra[] = {"--warm-workers", warm, NULL};
  assert_int_equal(gl_test_daemon_start(d, "256M", extra), 0);
}

/* Waits up to 10 s for the daemon to have n worker processes. */
static void wait_children(const gl_test_daemon *d, int n) {
  assert_int_equal(gl_test_daemon_wait_children(d, n, 10000), n);
}

/* Leases the daemon gave a warm worker (its debug log). */
static int warm_takes(const gl_test_daemon *d) {
  return gl_test_daemon_log_count(d, "takes a warm worker");
}

/* iota on lease l (the build's kernels/iota.ptx): 256 floats, checked. */
static void run_iota(gpulease_client *c, const gpulease_lease *l) {
  const char *bin = getenv("GL_TEST_BIN_DIR");
  char path[512];
  snprintf(path, sizeof path, "%s/kernels/iota.ptx", bin ? bin : ".");
  uint8_t *ptx = NULL;
  size_t ptx_len = 0;
  assert_int_equal(gl_read_file(path, 1 << 20, &ptx, &ptx_len), 0);
  gpulease_submit_desc sd;
  gpulease_submit_desc_default(&sd);
  sd.image = ptx;
  sd.image_size = ptx_len;
  sd.kernel = "iota";
  sd.block[0] = 256;
  sd.output_size = 1024;
  gpulease_submit_result r;
  CHECK(gpulease_submit(c, l, &sd, &r, E));
  const float *out = r.output;
  for (int i = 0; i < 256; i++) assert_true(out[i] == (float)(i + 1));
  gpulease_submit_result_release(&r);
  free(ptx);
}

/* POOL_INFO of the one GPU: the pool's size and the workers ready. */
static void pool_state(gpulease_client *c, uint32_t *target, uint32_t *ready) {
  gpulease_pool_info p;
  CHECK(gpulease_pool_get(c, &p, E));
  assert_int_equal(p.gpu_count, 1);
  *target = p.gpus[0].target;
  *ready = p.gpus[0].ready;
  assert_true(p.gpus[0].ready + p.gpus[0].starting <= p.gpus[0].target);
}

static void test_leases_from_the_pool(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "2");
  wait_children(&d, 2); /* ready means warmed */
  gpulease_client *c = gl_test_connect(&d, 30000);
  uint32_t target, ready;
  pool_state(c, &target, &ready);
  assert_int_equal(target, 2);
  assert_int_equal(ready, 2);
  gpulease_lease l;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 16ull << 20, 60, &l, E));
  assert_int_equal(warm_takes(&d), 1);
  run_iota(c, &l);
  wait_children(&d, 3); /* the lease's worker and a full pool again */
  CHECK(gpulease_lease_free(c, &l, E));
  wait_children(&d, 2);
  /* A burst larger than the pool: every lease served, the pool refilled. */
  enum { BURST = 6 };
  gpulease_lease b[BURST];
  for (int i = 0; i < BURST; i++)
    CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 8ull << 20, 60, &b[i], E));
  for (int i = 0; i < BURST; i++) run_iota(c, &b[i]);
  int warm = warm_takes(&d) - 1;
  printf("burst of %d leases: %d from the pool, %d started cold\n", BURST, warm, BURST - warm);
  assert_true(warm >= 2 && warm <= BURST); /* replacements may be ready in time */
  wait_children(&d, BURST + 2);
  for (int i = 0; i < BURST; i++) CHECK(gpulease_lease_free(c, &b[i], E));
  wait_children(&d, 2);
  for (int i = 0; i < 250 && (pool_state(c, &target, &ready), ready < 2); i++) {
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  assert_int_equal(ready, 2); /* the pool full again, as POOL_INFO says */
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

static void test_killed_warm_worker_replaced(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "1");
  wait_children(&d, 1);
  pid_t pid;
  assert_int_equal(gl_test_daemon_child_pids(&d, &pid, 1), 1);
  assert_int_equal(kill(pid, SIGKILL), 0);
  /* Replaced after the pool's pause: a different process. */
  pid_t again = pid;
  for (int i = 0; i < 300 && (again == pid || gl_test_daemon_children(&d) != 1); i++) {
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    if (gl_test_daemon_child_pids(&d, &again, 1) != 1) again = pid;
  }
  assert_true(again != pid);
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease l;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 16ull << 20, 60, &l, E));
  run_iota(c, &l);
  CHECK(gpulease_lease_free(c, &l, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_leases_from_the_pool),
      cmocka_unit_test(test_killed_warm_worker_replaced),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
