/*
 * test_e2e_sandbox.c - a worker confines itself before it opens the device
 * (src/worker/sandbox.c): no_new_privs, no core dumps, a seccomp filter
 * (as /proc shows them), while it runs a kernel; and
 * `gpuleased --no-worker-sandbox` leaves its workers unconfined. On the
 * emulated device in CI, with GL_TEST_DEVICE=cuda on a GPU (the CUDA driver
 * at work under the filter).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/util.h"
#include "daemon_harness.h"
#include "lib_check.h"
#include "gpulease/gpulease.h"

static bool on_gpu(void) {
  const char *d = getenv("GL_TEST_DEVICE");
  return d && strcmp(d, "cuda") == 0;
}

/* The value after `key` on its line of /proc/PID/FILE ("" when absent). */
static void proc_field(pid_t pid, const char *file, const char *key, char *out, size_t len) {
  char path[64], line[512];
  snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
  out[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, key, strlen(key)) != 0) continue;
    const char *v = line + strlen(key);
    while (*v == ' ' || *v == '\t' || *v == ':') v++;
    snprintf(out, len, "%s", v);
    out[strcspn(out, "\n")] = 0;
    break;
  }
  fclose(f);
}

/* Starts a daemon (extra: its flags), runs iota on a lease, and returns
 * the seccomp mode of every worker (all equal, else -1). */
static int workers_seccomp(const char *const *extra, gl_test_daemon *d, int *nworkers) {
  assert_int_equal(gl_test_daemon_start(d, on_gpu() ? NULL : "64M", extra), 0);
  gpulease_client *c = gl_test_connect(d, 60000);
  gpulease_lease l;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 16 * MiB, 60, &l, E));
  gl_test_run_iota(c, &l);
  pid_t pids[16];
  int n = gl_test_daemon_child_pids(d, pids, 16);
  assert_true(n >= 1);
  int mode = -2;
  for (int i = 0; i < n; i++) {
    char v[128];
    proc_field(pids[i], "status", "Seccomp", v, sizeof v);
    int m = atoi(v);
    char nnp[16], core[128];
    proc_field(pids[i], "status", "NoNewPrivs", nnp, sizeof nnp);
    proc_field(pids[i], "limits", "Max core file size", core, sizeof core);
    fprintf(stderr, "worker %d: Seccomp %d, NoNewPrivs %s, core %s\n", (int)pids[i], m, nnp,
            core);
    if (m == 2) {
      assert_string_equal(nnp, "1");
      assert_int_equal(strncmp(core, "0 ", 2), 0);
    }
    mode = mode == -2 || mode == m ? m : -1;
  }
  CHECK(gpulease_lease_free(c, &l, E));
  gpulease_client_close(c);
  *nworkers = n;
  return mode;
}

static void test_workers_confined(void **state) {
  (void)state;
  gl_test_daemon d;
  int n = 0;
  assert_int_equal(workers_seccomp(NULL, &d, &n), 2); /* SECCOMP_MODE_FILTER */
  /* The worker checked it: a refused call (perf_event_open) fails. */
  assert_true(gl_test_daemon_log_count(&d, "sandbox in force") >= 1);
  assert_int_equal(gl_test_daemon_log_count(&d, "perf_event_open ALLOWED"), 0);
  assert_true(gl_test_daemon_log_count(&d, "perf_event_open refused") >= 1);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

static void test_no_worker_sandbox(void **state) {
  (void)state;
  gl_test_daemon d;
  static const char *const extra[] = {"--no-worker-sandbox", NULL};
  int n = 0;
  assert_int_equal(workers_seccomp(extra, &d, &n), 0);
  assert_true(gl_test_daemon_log_count(&d, "no sandbox") >= 1);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_workers_confined),
      cmocka_unit_test(test_no_worker_sandbox),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
