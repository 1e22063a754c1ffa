/*
 * test_e2e_load.c - issue 34's CI load target against a real gpuleased on
 * the emulated device: 1,000 clients on shared leases at once.
 *
 * Checked:
 *   - 1,000 clients, each its own QUIC connection from one address and a
 *     thread of its own (bench/cycles.c, the cycle gl_bench_load
 *     measures), all connect;
 *   - each cycles alloc 1 MiB shared + GPU_SUBMIT of the iota kernel
 *     (output checked) + free for 5 s, and on until it has completed one
 *     cycle (40 s at most): no step fails, whatever its status, and every
 *     client completes at least one cycle;
 *   - afterwards the daemon holds no lease, and its open descriptors and
 *     child processes come back to where they were before the clients
 *     connected (the shared worker ends after its linger time).
 * No timing is asserted: a slow machine only makes the cycles longer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cycles.h"
#include "daemon_harness.h"
#include "gpulease/gpulease.h"

enum { CLIENTS = 1000 };

/* Waits up to timeout_ms for the daemon's descriptors and children to be
 * fds and children again; its figures at the end into *f. */
static void wait_figures(pid_t pid, int fds, int children, int timeout_ms, gl_proc_figures *f) {
  for (int waited = 0;; waited += 100) {
    assert_int_equal(gl_proc_figures_read(pid, f), 0);
    if ((f->fds == fds && f->children == children) || waited >= timeout_ms) return;
    gl_bench_pause_ms(100);
  }
}

static void test_thousand_shared_clients(void **state) {
  (void)state;
  /* A UDP socket a client, and the rest of the process's descriptors. */
  long nofile = gl_raise_nofile(2 * CLIENTS + 256);
  fprintf(stderr, "RLIMIT_NOFILE: %ld\n", nofile);
  assert_true(nofile >= CLIENTS + 128);
  gl_test_daemon d;
  const char *extra[] = {"--max-connections-per-address", "1100", "--max-leases", "2048",
                         "--log-level", "info", NULL};
  double t0 = gl_bench_now_ms();
  assert_int_equal(gl_test_daemon_start(&d, "2G", extra), 0);
  gl_proc_figures base;
  assert_int_equal(gl_proc_figures_read(d.pid, &base), 0);
  fprintf(stderr, "daemon at start: RSS %ld KiB, %d fds, %d children\n", base.rss_kib, base.fds,
          base.children);

  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = d.addr;
  o.pin_sha256 = d.fingerprint;
  o.timeout_ms = 60000;
  o.no_local = 1;
  gpulease_client **cl = calloc(CLIENTS, sizeof *cl);
  assert_non_null(cl);
  gpulease_error err = {0};
  int got = gl_clients_connect(&o, CLIENTS, 8, cl, &err);
  if (got < CLIENTS) fprintf(stderr, "connected %d of %d: %s\n", got, CLIENTS, err.message);
  assert_int_equal(got, CLIENTS);
  double t_conn = gl_bench_now_ms();
  gl_proc_figures mine;
  assert_int_equal(gl_proc_figures_read(getpid(), &mine), 0);
  fprintf(stderr, "%d clients connected in %.1f s; this process holds %d fds\n", CLIENTS,
          (t_conn - t0) / 1000.0, mine.fds);

  gl_cycle_opts co = {.cls = GPULEASE_CLASS_SHARED, .bytes = 1u << 20, .secs = 5,
                      .min_cycles = 1, .max_secs = 40};
  gl_cycle_stats st;
  assert_int_equal(gl_cycles_run(cl, CLIENTS, &co, &st), 0);
  char fails[512];
  gl_cycle_fails_format(&st, fails, sizeof fails);
  double p50 = gl_cycle_quantile(&st, 0.5), p90 = gl_cycle_quantile(&st, 0.9);
  fprintf(stderr,
          "%d clients: %zu cycles in %.1f s (%.1f/s), cycle p50 %.0f ms, p90 %.0f ms; "
          "failures %s; %d clients without a cycle\n",
          st.clients, st.cycles, st.secs, st.secs > 0 ? (double)st.cycles / st.secs : 0.0, p50,
          p90, fails, st.idle_clients);
  if (st.first_msg[0]) fprintf(stderr, "first failure: %s\n", st.first_msg);
  assert_int_equal(st.clients, CLIENTS);
  assert_int_equal(st.nfail, 0);
  assert_int_equal(st.conn_failed, 0);
  assert_int_equal(st.idle_clients, 0);
  assert_true(st.cycles >= CLIENTS);
  gl_cycle_stats_free(&st);
  gl_clients_close(cl, CLIENTS);
  free(cl);

  /* No lease left, by the daemon's own count. */
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_inventory inv = {.struct_version = GPULEASE_INVENTORY_VERSION};
  assert_int_equal(gpulease_inventory_get(c, &inv, &err), GPULEASE_OK);
  assert_int_equal(inv.gpus[0].active_leases, 0);
  assert_int_equal(inv.gpus[0].leased_vram_bytes, 0);
  gpulease_client_close(c);
  /* The shared worker ends its linger time after its last lease; a
   * descriptor of a closing connection or worker may take a moment. */
  gl_proc_figures after;
  wait_figures(d.pid, base.fds, base.children, 30000, &after);
  fprintf(stderr, "daemon after: RSS %ld KiB, %d fds, %d children (%.1f s in all)\n",
          after.rss_kib, after.fds, after.children, (gl_bench_now_ms() - t0) / 1000.0);
  assert_int_equal(after.fds, base.fds);
  assert_int_equal(after.children, base.children);
  assert_int_equal(gl_test_daemon_log_count(&d, "fenced"), 0);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_thousand_shared_clients),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
