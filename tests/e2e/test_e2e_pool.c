/*
 * test_e2e_pool.c - warm workers (gpuleased --warm-workers, src/daemon/
 * pool.h): a real gpuleased on the emulated device keeping workers
 * started ahead of leases.
 *
 * Checked: the pool's workers are there once the daemon says it is ready;
 * a lease takes one (its kernel runs, its bytes come back) and a
 * replacement starts; a freed lease's worker is kept as a spare and the
 * next lease reuses it (a zeroed region, its kernel right) without a new
 * process; a burst of leases larger than the pool is served (the rest
 * start cold) and the pool fills again; unused spares end after
 * GL_POOL_SPARE_IDLE_S, leaving only the pool; a warm worker killed from
 * outside is replaced; the daemon stops with nothing left behind.
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
#include "daemon/pool.h"
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

/* POOL_INFO of the one GPU: the pool's size and the workers ready. */
static void pool_state(gpulease_client *c, uint32_t *target, uint32_t *ready) {
  gpulease_warm_pool_info p = {.struct_version = GPULEASE_WARM_POOL_INFO_VERSION};
  CHECK(gpulease_warm_pool_get(c, &p, E));
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
  gl_test_run_iota(c, &l);
  wait_children(&d, 3); /* the lease's worker and a full pool again */
  pid_t before[8];
  int nb = gl_test_daemon_child_pids(&d, before, 8);
  CHECK(gpulease_lease_free(c, &l, E));
  /* Its worker is a spare now: the next lease reuses it, zeroed. */
  for (int i = 0; i < 100 && gl_test_daemon_log_count(&d, "stays open for the next lease") < 1; i++) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 16ull << 20, 60, &l, E));
  gpulease_session *s;
  CHECK(gpulease_session_open(c, &l, &s, E));
  gpulease_buffer buf;
  CHECK(gpulease_mem_alloc(s, 4096, &buf, E));
  uint8_t bytes[4096];
  CHECK(gpulease_mem_read(s, buf, 0, bytes, sizeof bytes, E));
  for (size_t i = 0; i < sizeof bytes; i++) assert_int_equal(bytes[i], 0); /* iota's are gone */
  gpulease_session_close(s, NULL);
  gl_test_run_iota(c, &l);
  pid_t after[8];
  assert_int_equal(gl_test_daemon_child_pids(&d, after, 8), nb); /* no new process */
  for (int i = 0; i < nb; i++) assert_int_equal(after[i], before[i]);
  CHECK(gpulease_lease_free(c, &l, E));
  /* A burst larger than the pool: every lease served, the pool refilled. */
  enum { BURST = 6 };
  gpulease_lease b[BURST];
  for (int i = 0; i < BURST; i++)
    CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 8ull << 20, 60, &b[i], E));
  for (int i = 0; i < BURST; i++) gl_test_run_iota(c, &b[i]);
  int warm = warm_takes(&d) - 2; /* the two leases before */
  printf("burst of %d leases: %d from the pool, %d started cold\n", BURST, warm, BURST - warm);
  assert_true(warm >= 2 && warm <= BURST); /* replacements may be ready in time */
  for (int i = 0; i < BURST; i++) CHECK(gpulease_lease_free(c, &b[i], E));
  /* The spares end once unused for GL_POOL_SPARE_IDLE_S (10 s). */
  assert_int_equal(gl_test_daemon_wait_children(&d, 2, 20000), 2);
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
  gl_test_run_iota(c, &l);
  CHECK(gpulease_lease_free(c, &l, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* A kernel that counts to n: long enough to still run when its lease is
 * freed. */
static const char k_spin[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry spin(.param .u64 n)\n{\n"
    "  .reg .b64 %rd<3>;\n  .reg .pred %p<2>;\n"
    "  ld.param.u64 %rd1, [n];\n  mov.u64 %rd2, 0;\n"
    "LOOP:\n  add.u64 %rd2, %rd2, 1;\n  setp.lt.u64 %p1, %rd2, %rd1;\n"
    "  @%p1 bra LOOP;\n  ret;\n}\n";

/* A lease freed while its kernel runs: its worker is offered for reuse but
 * cannot release the lease; after the release timeout it is ended, and a
 * lease that had taken it is set up on a fresh worker. */
static void test_busy_worker_not_reused(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "1");
  wait_children(&d, 1);
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease a;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 8ull << 20, 60, &a, E));
  gpulease_session *s;
  CHECK(gpulease_session_open(c, &a, &s, E));
  gpulease_module m;
  CHECK(gpulease_module_load(s, k_spin, sizeof k_spin - 1, GPULEASE_IMAGE_PTX, &m, NULL, E));
  gpulease_function fn;
  CHECK(gpulease_function_get(s, m, "spin", &fn, NULL, E));
  uint64_t forever = 1ull << 62;
  gpulease_arg arg = gpulease_arg_scalar(&forever, sizeof forever);
  const uint32_t one[3] = {1, 1, 1};
  CHECK(gpulease_launch(s, fn, one, one, 0, &arg, 1, E)); /* queued: answered at once */
  struct timespec ts = {0, 100 * 1000 * 1000};
  nanosleep(&ts, NULL); /* the kernel runs */
  CHECK(gpulease_lease_free(c, &a, E));
  double t0 = (double)gl_mono_ns() / 1e9;
  gpulease_lease b;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 8ull << 20, 60, &b, E));
  printf("a lease after a busy one: set up in %.2f s\n", (double)gl_mono_ns() / 1e9 - t0);
  gl_test_run_iota(c, &b);
  assert_true(gl_test_daemon_log_count(&d, "did not release it") >= 1);
  CHECK(gpulease_lease_free(c, &b, E));
  gpulease_session_close(s, NULL);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_leases_from_the_pool),
      cmocka_unit_test(test_killed_warm_worker_replaced),
      cmocka_unit_test(test_busy_worker_not_reused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
