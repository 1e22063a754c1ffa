/*
 * test_e2e_control.c - the main port served by several control threads
 * (gpuleased --control-threads N, src/daemon/shards.h) against a real
 * gpuleased on the emulated device.
 *
 * Checked:
 *   - the daemon says it serves its main port on N threads;
 *   - a connection's ops stay in order: 32 connections each pipeline 24
 *     shared LEASE_ALLOCs, sent interleaved across the connections; the
 *     lease ids (given out one after the other as the main loop handles
 *     the requests) rise on each connection in the order it sent them, and
 *     every lease frees;
 *   - 1,000 clients on shared leases (bench/cycles.c, as test_e2e_load.c)
 *     all connect and cycle alloc + GPU_SUBMIT + free for 5 s, with no
 *     failure and every client through a cycle; afterwards no lease is
 *     left, the daemon's descriptors and children are back where they
 *     were, and its RSS comes back within 10 MB of where it was before the
 *     clients connected (the malloc_trim after a load peak; not under
 *     ASan, whose allocator keeps what is freed).
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
#include "net/quic.h"
#include "proto/wire.h"

/* ASan's allocator keeps freed memory (its quarantine): the RSS is not
 * checked under it. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

enum { CLIENTS = 1000, THREADS = 4, ORDER_CONNS = 32, ORDER_OPS = 24 };

static gl_qclient *dial(const gl_test_daemon *d) {
  char host[64];
  snprintf(host, sizeof host, "%s", d->addr);
  char *colon = strrchr(host, ':');
  assert_non_null(colon);
  *colon = 0;
  gl_qclient_config cfg = {.host = host,
                           .port = (uint16_t)atoi(colon + 1),
                           .pin_sha256 = d->fingerprint,
                           .timeout_ms = 60000,
                           .max_response_bytes = 1u << 20};
  gl_qclient *q = NULL;
  char err[256];
  int rc = gl_qclient_connect(&cfg, &q, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "connect: %s\n", err);
  assert_int_equal(rc, GL_QC_OK);
  return q;
}

static uint64_t send_req(gl_qclient *q, const gl_request *req) {
  gl_buf b;
  gl_buf_init(&b);
  assert_int_equal(gl_request_encode(req, &b), GPULEASE_OK);
  uint64_t token = 0;
  char err[256];
  int rc = gl_qclient_send(q, b.data, b.len, &token, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "send: %s\n", err);
  assert_int_equal(rc, GL_QC_OK);
  gl_buf_free(&b);
  return token;
}

/* Waits for token's answer, asserts it is OK and of op; *r gets it (its
 * lease fields copied out by the caller before the next call). */
static void wait_ok(gl_qclient *q, uint64_t token, uint16_t op, gl_response *r) {
  uint8_t *raw = NULL;
  size_t len = 0;
  char err[256];
  int rc = gl_qclient_wait(q, token, &raw, &len, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "wait: %s\n", err);
  assert_int_equal(rc, GL_QC_OK);
  assert_int_equal(gl_response_decode(raw, len, len, r, err, sizeof err), GPULEASE_OK);
  if (r->status != GPULEASE_OK)
    fprintf(stderr, "%s: %s '%.*s'\n", gl_op_name(r->op), gpulease_status_name(r->status),
            (int)r->msg_len, r->msg);
  assert_int_equal(r->status, GPULEASE_OK);
  assert_int_equal(r->op, op);
  r->msg = NULL; /* raw goes */
  r->msg_len = 0;
  free(raw);
}

static void start(gl_test_daemon *d, const char *threads, const char *vram) {
  const char *extra[] = {"--control-threads", threads, "--max-connections-per-address", "1100",
                         "--max-leases", "2048", "--log-level", "info", NULL};
  assert_int_equal(gl_test_daemon_start(d, vram, extra), 0);
  char says[64];
  snprintf(says, sizeof says, "main port served by %s control threads", threads);
  assert_int_equal(gl_test_daemon_log_count(d, says), 1);
}

static void test_connection_order(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "4", "1G");
  gl_qclient *q[ORDER_CONNS];
  for (int c = 0; c < ORDER_CONNS; c++) q[c] = dial(&d);
  static uint64_t tok[ORDER_CONNS][ORDER_OPS];
  static gl_lease_auth lease[ORDER_CONNS][ORDER_OPS];
  gl_request alloc = {.op = GL_OP_LEASE_ALLOC};
  alloc.u.alloc.gpu_index = GPULEASE_ANY_GPU;
  alloc.u.alloc.vram_bytes = 1u << 20;
  alloc.u.alloc.ttl_s = 120;
  alloc.u.alloc.lease_class = GPULEASE_CLASS_SHARED;
  /* Interleaved: the main loop sees the connections' requests mixed. */
  for (int i = 0; i < ORDER_OPS; i++)
    for (int c = 0; c < ORDER_CONNS; c++) tok[c][i] = send_req(q[c], &alloc);
  int rises = 0;
  for (int c = 0; c < ORDER_CONNS; c++) {
    for (int i = 0; i < ORDER_OPS; i++) {
      gl_response r;
      wait_ok(q[c], tok[c][i], GL_OP_LEASE_ALLOC, &r);
      lease[c][i].lease_id = r.u.lease.lease_id;
      memcpy(lease[c][i].secret, r.u.lease.secret, sizeof lease[c][i].secret);
      if (i > 0) {
        if (lease[c][i].lease_id <= lease[c][i - 1].lease_id)
          fprintf(stderr, "connection %d: op %d got lease %llu after lease %llu\n", c, i,
                  (unsigned long long)lease[c][i].lease_id,
                  (unsigned long long)lease[c][i - 1].lease_id);
        assert_true(lease[c][i].lease_id > lease[c][i - 1].lease_id);
        rises++;
      }
    }
  }
  assert_int_equal(rises, ORDER_CONNS * (ORDER_OPS - 1));
  for (int c = 0; c < ORDER_CONNS; c++) {
    for (int i = 0; i < ORDER_OPS; i++) {
      gl_request fr = {.op = GL_OP_LEASE_FREE};
      fr.u.auth = lease[c][i];
      tok[c][i] = send_req(q[c], &fr);
    }
  }
  for (int c = 0; c < ORDER_CONNS; c++) {
    for (int i = 0; i < ORDER_OPS; i++) {
      gl_response r;
      wait_ok(q[c], tok[c][i], GL_OP_LEASE_FREE, &r);
    }
    gl_qclient_del(q[c]);
  }
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* Waits up to timeout_ms for the daemon's descriptors and children to be
 * fds and children again, and its RSS within slack_kib of rss_kib; its
 * figures at the end into *f. */
static void wait_figures(pid_t pid, const gl_proc_figures *base, long slack_kib, int timeout_ms,
                         gl_proc_figures *f) {
  for (int waited = 0;; waited += 100) {
    assert_int_equal(gl_proc_figures_read(pid, f), 0);
    if ((f->fds == base->fds && f->children == base->children &&
         f->rss_kib <= base->rss_kib + slack_kib) ||
        waited >= timeout_ms)
      return;
    gl_bench_pause_ms(100);
  }
}

static void test_thousand_clients_on_control_threads(void **state) {
  (void)state;
  long nofile = gl_raise_nofile(2 * CLIENTS + 256);
  assert_true(nofile >= CLIENTS + 128);
  gl_test_daemon d;
  double t0 = gl_bench_now_ms();
  start(&d, "4", "2G");
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

  gl_cycle_opts co = {.cls = GPULEASE_CLASS_SHARED, .bytes = 1u << 20, .secs = 5,
                      .min_cycles = 1, .max_secs = 40};
  gl_cycle_stats st;
  assert_int_equal(gl_cycles_run(cl, CLIENTS, &co, &st), 0);
  char fails[512];
  gl_cycle_fails_format(&st, fails, sizeof fails);
  fprintf(stderr,
          "%d clients on %d control threads: %zu cycles in %.1f s (%.1f/s), cycle p50 %.0f ms, "
          "p90 %.0f ms; failures %s; %d clients without a cycle\n",
          st.clients, THREADS, st.cycles, st.secs,
          st.secs > 0 ? (double)st.cycles / st.secs : 0.0, gl_cycle_quantile(&st, 0.5),
          gl_cycle_quantile(&st, 0.9), fails, st.idle_clients);
  if (st.first_msg[0]) fprintf(stderr, "first failure: %s\n", st.first_msg);
  assert_int_equal(st.clients, CLIENTS);
  assert_int_equal(st.nfail, 0);
  assert_int_equal(st.conn_failed, 0);
  assert_int_equal(st.idle_clients, 0);
  assert_true(st.cycles >= CLIENTS);
  gl_cycle_stats_free(&st);
  gl_proc_figures peak;
  assert_int_equal(gl_proc_figures_read(d.pid, &peak), 0);
  gl_clients_close(cl, CLIENTS);
  free(cl);

  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_inventory inv = {.struct_version = GPULEASE_INVENTORY_VERSION};
  assert_int_equal(gpulease_inventory_get(c, &inv, &err), GPULEASE_OK);
  assert_int_equal(inv.gpus[0].active_leases, 0);
  assert_int_equal(inv.gpus[0].leased_vram_bytes, 0);
  gpulease_client_close(c);
  gl_proc_figures after;
  long slack_kib = UNDER_ASAN ? 1L << 30 : 10 * 1024;
  wait_figures(d.pid, &base, slack_kib, 30000, &after);
  fprintf(stderr, "daemon at the peak: RSS %ld KiB; after: RSS %ld KiB, %d fds, %d children "
          "(%.1f s in all)\n", peak.rss_kib, after.rss_kib, after.fds, after.children,
          (gl_bench_now_ms() - t0) / 1000.0);
  assert_int_equal(after.fds, base.fds);
  assert_int_equal(after.children, base.children);
  assert_true(after.rss_kib <= base.rss_kib + slack_kib);
  assert_int_equal(gl_test_daemon_log_count(&d, "fenced"), 0);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_connection_order),
      cmocka_unit_test(test_thousand_clients_on_control_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
