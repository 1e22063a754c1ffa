/*
 * test_e2e_early.c - the daemon's verdict on a request's 12-byte header
 * (docs/protocol.md, sections 1, 4 and 6), from a raw client against a
 * real gpuleased on the emulated device, over each transport that brings
 * requests: the main QUIC port, a stripe port (a network thread) and the
 * local socket. Only the header is sent (no FIN, no body):
 *   - an internal op (0x7Fxx) with body_len 1000 is UNSUPPORTED within a
 *     second, the message naming the op as internal;
 *   - a MEM_WRITE declaring 1 GiB, sent with 1 MiB of its body, is
 *     TOO_LARGE within 100 ms, the daemon's RSS not growing by what was
 *     sent (on the local socket: its header alone);
 *   - the limit (--max-message, 256 MiB by default) counts the header:
 *     body_len limit - 11 is TOO_LARGE, limit - 12 of a GPU_SUBMIT (whose
 *     body only the message limit bounds) is read on (no answer while
 *     its body does not come);
 *   - each op's own limit (its largest body and 4096 bytes of headroom,
 *     gl_request_body_limit): a MEM_WRITE declaring 128 MiB, sent with 1
 *     MiB of its body, is TOO_LARGE within 100 ms naming the op, the size
 *     and the limit, and the daemon's RSS does not grow by the body sent;
 *     a LEASE_QUERY declaring 1 MiB is TOO_LARGE; one 100 bytes past its
 *     48 is read and refused UNSUPPORTED (a field of a newer release);
 *   - every refusal on the header is counted in /metrics (the op's
 *     errors) and written to the audit log, as handle()'s are;
 * and the connection serves the next request.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "daemon_harness.h"
#include "net/local.h"
#include "net/quic.h"
#include "proto/wire.h"

#define LIMIT (256ull << 20) /* the daemon's default --max-message */

static gl_test_daemon g_d;
static char g_dir[] = "/tmp/gl-early-XXXXXX";
static char g_sock[128];
static char g_audit[160];
/* Refusals on the header this test made, by op (for /metrics). */
static unsigned g_refused_mem_write, g_refused_lease_query, g_refused_worker_init;

static double now_s(void) { return (double)gl_mono_ns() / 1e9; }

/* A request header: op, body_len; nothing follows. */
static void header(uint8_t h[GL_WIRE_HEADER_SIZE], uint16_t op, uint32_t body_len) {
  h[0] = GL_WIRE_MAGIC0;
  h[1] = GL_WIRE_MAGIC1;
  h[2] = GL_WIRE_VERSION;
  h[3] = GL_WIRE_KIND_REQUEST;
  h[4] = (uint8_t)(op >> 8);
  h[5] = (uint8_t)op;
  h[6] = h[7] = 0;
  h[8] = (uint8_t)(body_len >> 24);
  h[9] = (uint8_t)(body_len >> 16);
  h[10] = (uint8_t)(body_len >> 8);
  h[11] = (uint8_t)body_len;
}

/* Checks an answer: op, status, a part of the message. */
static void expect(const uint8_t *raw, size_t len, uint16_t op, gpulease_status st,
                   const char *needle) {
  gl_response r;
  char err[256];
  assert_int_equal(gl_response_decode(raw, len, len, &r, err, sizeof err), GPULEASE_OK);
  printf("  %s -> %s: %.*s\n", gl_op_name(r.op), gpulease_status_name(r.status), (int)r.msg_len,
         r.msg);
  assert_int_equal(r.op, op);
  assert_int_equal(r.status, st);
  assert_non_null(memmem(r.msg, r.msg_len, needle, strlen(needle)));
}

static gl_qclient *dial(uint16_t port) {
  gl_qclient_config cfg = {.host = "127.0.0.1",
                           .port = port,
                           .pin_sha256 = g_d.fingerprint,
                           .timeout_ms = 10000,
                           .max_response_bytes = 1u << 20};
  gl_qclient *q = NULL;
  char err[256];
  int rc = gl_qclient_connect(&cfg, &q, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "connect: %s\n", err);
  assert_int_equal(rc, GL_QC_OK);
  return q;
}

static uint16_t main_port(void) {
  const char *colon = strrchr(g_d.addr, ':');
  assert_non_null(colon);
  return (uint16_t)atoi(colon + 1);
}

/* Sends a whole request and returns its answer (malloc'd). */
static uint8_t *ask(gl_qclient *q, const gl_request *req, size_t *len) {
  gl_buf b;
  gl_buf_init(&b);
  assert_int_equal(gl_request_encode(req, &b), GPULEASE_OK);
  uint8_t *resp = NULL;
  char err[256];
  int rc = gl_qclient_request(q, b.data, b.len, &resp, len, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "request: %s\n", err);
  assert_int_equal(rc, GL_QC_OK);
  gl_buf_free(&b);
  return resp;
}

/* The daemon's resident memory, KiB (/proc/PID/status VmRSS). */
static long daemon_rss_kib(void) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)g_d.pid);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
  fclose(f);
  return kib;
}

static void count_refusal(uint16_t op) {
  if (op == GL_OP_MEM_WRITE) g_refused_mem_write++;
  if (op == GL_OP_LEASE_QUERY) g_refused_lease_query++;
  if (op == GL_OP_WORKER_INIT) g_refused_worker_init++;
}

/* Sends the header op/body_len and then extra bytes of its body (the
 * stream left open) and expects status with needle within 100 ms;
 * returns the seconds it took. */
static double header_then(gl_qclient *q, uint16_t op, uint32_t body_len, size_t extra,
                          gpulease_status st, const char *needle) {
  uint8_t *m = calloc(1, GL_WIRE_HEADER_SIZE + extra);
  assert_non_null(m);
  header(m, op, body_len);
  memset(m + GL_WIRE_HEADER_SIZE, 0xAB, extra);
  double t0 = now_s();
  uint64_t tok = 0;
  char err[256];
  assert_int_equal(gl_qclient_send_open(q, m, GL_WIRE_HEADER_SIZE + extra, &tok, err, sizeof err),
                   GL_QC_OK);
  free(m);
  uint8_t *resp = NULL;
  size_t len = 0;
  int rc = gl_qclient_wait(q, tok, &resp, &len, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "wait: %s\n", err);
  assert_int_equal(rc, GL_QC_OK);
  double dt = now_s() - t0;
  expect(resp, len, op, st, needle);
  printf("  answered in %.1f ms\n", dt * 1e3);
  assert_true(dt < 0.1);
  free(resp);
  count_refusal(op);
  return dt;
}

/* Sends only the header op/body_len (the stream left open) and expects
 * status with needle within 100 ms. */
static void header_only(gl_qclient *q, uint16_t op, uint32_t body_len, gpulease_status st,
                        const char *needle) {
  uint8_t h[GL_WIRE_HEADER_SIZE];
  header(h, op, body_len);
  double t0 = now_s();
  uint64_t tok = 0;
  char err[256];
  count_refusal(op);
  assert_int_equal(gl_qclient_send_open(q, h, sizeof h, &tok, err, sizeof err), GL_QC_OK);
  uint8_t *resp = NULL;
  size_t len = 0;
  int rc = gl_qclient_wait(q, tok, &resp, &len, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "wait: %s\n", err);
  assert_int_equal(rc, GL_QC_OK);
  double dt = now_s() - t0;
  expect(resp, len, op, st, needle);
  printf("  answered in %.1f ms\n", dt * 1e3);
  assert_true(dt < 0.1);
  free(resp);
}

/* The rules on one QUIC port; then NET_INFO on the same connection. */
static void rules_over_quic(uint16_t port) {
  gl_qclient *q = dial(port);
  header_only(q, GL_OP_MEM_WRITE_ARENA, 1000, GPULEASE_UNSUPPORTED, "is internal to the daemon");
  header_only(q, GL_OP_WORKER_INIT, 1000, GPULEASE_UNSUPPORTED, "0x7f01");
  /* 1 GiB, 1 MiB of its body with the header: none of it is kept. */
  long rss_a = daemon_rss_kib();
  header_then(q, GL_OP_MEM_WRITE, 1u << 30, 1u << 20, GPULEASE_TOO_LARGE,
              "larger than the daemon's limit");
  long rss_b = daemon_rss_kib();
  printf("  daemon RSS %ld -> %ld KiB around the refused 1 GiB MEM_WRITE\n", rss_a, rss_b);
  assert_true(rss_b - rss_a < 768); /* the 1 MiB it was sent would show */
  header_only(q, GL_OP_MEM_WRITE, (uint32_t)(LIMIT - 11), GPULEASE_TOO_LARGE,
              "request of 268435457 bytes");
  /* The op's own limit: a MEM_WRITE's body is at most 84 + 64 MiB, with
   * 4096 bytes of headroom. 1 MiB of its body comes with the header; the
   * daemon keeps none of it. */
  long rss0 = daemon_rss_kib();
  header_then(q, GL_OP_MEM_WRITE, 128u << 20, 1u << 20, GPULEASE_TOO_LARGE,
              "MEM_WRITE: body_len 134217728 declared, over the op's limit of 67113044 bytes");
  long rss1 = daemon_rss_kib();
  printf("  daemon RSS %ld -> %ld KiB around the refused 128 MiB MEM_WRITE\n", rss0, rss1);
  assert_true(rss1 - rss0 < 768); /* the 1 MiB it was sent would show */
  header_only(q, GL_OP_MEM_WRITE, 84u + (64u << 20) + 4097u, GPULEASE_TOO_LARGE,
              "over the op's limit of 67113044 bytes");
  header_only(q, GL_OP_LEASE_QUERY, 1u << 20, GPULEASE_TOO_LARGE,
              "LEASE_QUERY: body_len 1048576 declared, over the op's limit of 4144 bytes");
  /* Within the headroom: read, then refused as a field of a newer release. */
  {
    uint8_t m[GL_WIRE_HEADER_SIZE + 148];
    memset(m, 0, sizeof m);
    header(m, GL_OP_LEASE_QUERY, 148);
    uint8_t *resp = NULL;
    size_t len = 0;
    char err[256];
    assert_int_equal(gl_qclient_request(q, m, sizeof m, &resp, &len, err, sizeof err), GL_QC_OK);
    expect(resp, len, GL_OP_LEASE_QUERY, GPULEASE_UNSUPPORTED, "100 bytes after the last field");
    free(resp);
    g_refused_lease_query++;
  }
  /* limit - 12 of an op only the message limit bounds: the whole message
   * is the limit, so the daemon waits for the body; no answer in 300 ms. */
  uint8_t h[GL_WIRE_HEADER_SIZE];
  header(h, GL_OP_GPU_SUBMIT, (uint32_t)(LIMIT - 12));
  uint64_t tok = 0;
  char err[256];
  assert_int_equal(gl_qclient_send_open(q, h, sizeof h, &tok, err, sizeof err), GL_QC_OK);
  double t0 = now_s();
  while (now_s() - t0 < 0.3) {
    /* Drive the connection a little; the request must stay unanswered. */
    gl_request ni = {.op = GL_OP_NET_INFO};
    size_t len = 0;
    uint8_t *resp = ask(q, &ni, &len);
    expect(resp, len, GL_OP_NET_INFO, GPULEASE_OK, "");
    free(resp);
    usleep(50000);
  }
  assert_int_equal(gl_qclient_outstanding(q), 1);
  gl_qclient_cancel(q, tok);
  gl_qclient_del(q);
}

static void test_main_port(void **state) {
  (void)state;
  rules_over_quic(main_port());
}

static void test_stripe_port(void **state) {
  (void)state;
  gl_qclient *q = dial(main_port());
  gl_request ni = {.op = GL_OP_NET_INFO};
  size_t len = 0;
  uint8_t *resp = ask(q, &ni, &len);
  gl_response r;
  assert_int_equal(gl_response_decode(resp, len, len, &r, NULL, 0), GPULEASE_OK);
  assert_int_equal(r.status, GPULEASE_OK);
  assert_int_equal(r.u.net_info.stripe_count, 1);
  uint16_t port = r.u.net_info.stripe_ports[0];
  free(resp);
  gl_qclient_del(q);
  rules_over_quic(port);
}

/* The local socket: an internal op refused on its header, its body
 * skipped as it comes, the connection serving on; a header over the limit
 * refused at once (the connection then closes: a stream socket cannot
 * skip a body it will not read). */
static void test_local_socket(void **state) {
  (void)state;
  gl_lclient *c = NULL;
  char err[256];
  assert_int_equal(gl_lclient_connect(g_sock, 5000, &c, err, sizeof err), 0);
  uint8_t h[GL_WIRE_HEADER_SIZE];
  header(h, GL_OP_MEM_WRITE_ARENA, 1000);
  double t0 = now_s();
  uint64_t tok = 0;
  assert_int_equal(gl_lclient_send(c, h, sizeof h, -1, &tok, err, sizeof err), 0);
  uint8_t *resp = NULL;
  size_t len = 0;
  assert_int_equal(gl_lclient_wait(c, tok, &resp, &len, err, sizeof err), 0);
  assert_true(now_s() - t0 < 1.0);
  expect(resp, len, GL_OP_MEM_WRITE_ARENA, GPULEASE_UNSUPPORTED, "is internal to the daemon");
  free(resp);
  /* Its 1000 body bytes: a message of 992 behind its own 8-byte tag. */
  uint8_t body[992];
  memset(body, 0xEE, sizeof body);
  uint64_t ignored = 0;
  assert_int_equal(gl_lclient_send(c, body, sizeof body, -1, &ignored, err, sizeof err), 0);
  gl_buf b;
  gl_buf_init(&b);
  gl_request ni = {.op = GL_OP_NET_INFO};
  assert_int_equal(gl_request_encode(&ni, &b), GPULEASE_OK);
  assert_int_equal(gl_lclient_send(c, b.data, b.len, -1, &tok, err, sizeof err), 0);
  gl_buf_free(&b);
  assert_int_equal(gl_lclient_wait(c, tok, &resp, &len, err, sizeof err), 0);
  expect(resp, len, GL_OP_NET_INFO, GPULEASE_OK, "");
  free(resp);
  /* Over the limit, header included. */
  header(h, GL_OP_MEM_WRITE, (uint32_t)(LIMIT - 11));
  t0 = now_s();
  assert_int_equal(gl_lclient_send(c, h, sizeof h, -1, &tok, err, sizeof err), 0);
  assert_int_equal(gl_lclient_wait(c, tok, &resp, &len, err, sizeof err), 0);
  assert_true(now_s() - t0 < 1.0);
  expect(resp, len, GL_OP_MEM_WRITE, GPULEASE_TOO_LARGE, "request of 268435457 bytes");
  free(resp);
  gl_lclient_del(c);
  g_refused_mem_write++;
  /* 1 GiB, on a connection of its own (closed after the answer). */
  assert_int_equal(gl_lclient_connect(g_sock, 5000, &c, err, sizeof err), 0);
  header(h, GL_OP_MEM_WRITE, 1u << 30);
  t0 = now_s();
  assert_int_equal(gl_lclient_send(c, h, sizeof h, -1, &tok, err, sizeof err), 0);
  assert_int_equal(gl_lclient_wait(c, tok, &resp, &len, err, sizeof err), 0);
  double dt = now_s() - t0;
  printf("  local socket: 1 GiB MEM_WRITE answered in %.1f ms\n", dt * 1e3);
  assert_true(dt < 0.1);
  expect(resp, len, GL_OP_MEM_WRITE, GPULEASE_TOO_LARGE, "larger than the daemon's limit");
  free(resp);
  gl_lclient_del(c);
  g_refused_mem_write++;
  /* Over the op's limit, under the daemon's: refused at once, the body
   * skipped as it comes (the connection would serve on after it). */
  assert_int_equal(gl_lclient_connect(g_sock, 5000, &c, err, sizeof err), 0);
  header(h, GL_OP_MEM_WRITE, 128u << 20);
  t0 = now_s();
  assert_int_equal(gl_lclient_send(c, h, sizeof h, -1, &tok, err, sizeof err), 0);
  assert_int_equal(gl_lclient_wait(c, tok, &resp, &len, err, sizeof err), 0);
  dt = now_s() - t0;
  printf("  local socket: 128 MiB MEM_WRITE answered in %.1f ms\n", dt * 1e3);
  assert_true(dt < 0.1);
  expect(resp, len, GL_OP_MEM_WRITE, GPULEASE_TOO_LARGE,
         "MEM_WRITE: body_len 134217728 declared, over the op's limit of 67113044 bytes");
  free(resp);
  gl_lclient_del(c);
  g_refused_mem_write++;
}

/* GET path from 127.0.0.1:port; the HTTP status, the body in out. */
static int http_get(int port, const char *path, char *out, size_t outlen) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  char req[256];
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n", path);
  assert_int_equal(write(fd, req, (size_t)n), n);
  size_t got = 0;
  ssize_t r;
  while (got + 1 < outlen && (r = read(fd, out + got, outlen - 1 - got)) > 0) got += (size_t)r;
  out[got] = 0;
  close(fd);
  int status = 0;
  sscanf(out, "HTTP/1.%*d %d", &status);
  char *body = strstr(out, "\r\n\r\n");
  if (body) memmove(out, body + 4, strlen(body + 4) + 1);
  return status;
}

/* The value of the sample `series` (name and labels, exactly) in text. */
static double sample(const char *text, const char *series) {
  size_t n = strlen(series);
  for (const char *p = text; (p = strstr(p, series)); p += n)
    if ((p == text || p[-1] == '\n') && p[n] == ' ') return atof(p + n + 1);
  return -1;
}

/* The metrics port from the daemon's log line "metrics: http://H:P/metrics". */
static int metrics_port(void) {
  char path[300], line[1024];
  snprintf(path, sizeof path, "%s/daemon.log", g_d.dir);
  FILE *f = fopen(path, "r");
  int port = 0;
  while (f && fgets(line, sizeof line, f)) {
    const char *p = strstr(line, "metrics: http://127.0.0.1:");
    if (p) port = atoi(p + strlen("metrics: http://127.0.0.1:"));
  }
  if (f) fclose(f);
  return port;
}

/* The refusals of the tests above in /metrics (each op's errors and
 * answers, as handle()'s refusals count) and in the audit log. */
static void test_bookkeeping(void **state) {
  (void)state;
  int port = metrics_port();
  assert_true(port > 0);
  static char body[1 << 18];
  char want[3][96];
  snprintf(want[0], sizeof want[0], "gpulease_request_errors_total{op=\"MEM_WRITE\"}");
  snprintf(want[1], sizeof want[1], "gpulease_request_errors_total{op=\"LEASE_QUERY\"}");
  snprintf(want[2], sizeof want[2], "gpulease_request_errors_total{op=\"WORKER_INIT\"}");
  double got[3] = {0};
  double t0 = now_s();
  do { /* rendered once a second */
    usleep(200000);
    assert_int_equal(http_get(port, "/metrics", body, sizeof body), 200);
    for (int i = 0; i < 3; i++) got[i] = sample(body, want[i]);
  } while ((got[0] != g_refused_mem_write || got[1] != g_refused_lease_query ||
            got[2] != g_refused_worker_init) &&
           now_s() - t0 < 5.0);
  printf("  /metrics: MEM_WRITE errors %.0f (refused %u), LEASE_QUERY %.0f (%u), WORKER_INIT "
         "%.0f (%u)\n",
         got[0], g_refused_mem_write, got[1], g_refused_lease_query, got[2],
         g_refused_worker_init);
  assert_true(got[0] == g_refused_mem_write);
  assert_true(got[1] == g_refused_lease_query);
  assert_true(got[2] == g_refused_worker_init);
  assert_true(sample(body, "gpulease_request_duration_seconds_count{op=\"MEM_WRITE\"}") ==
              g_refused_mem_write);
  /* The requests let through and then cancelled, or cut by their
   * connection's close, are unfinished no more. */
  assert_true(sample(body, "gpulease_unfinished_requests") == 0);
  assert_true(sample(body, "gpulease_unfinished_request_bytes") == 0);
  /* The audit log: a line per refusal, as handle() writes one. */
  FILE *f = fopen(g_audit, "r");
  assert_non_null(f);
  char line[4096];
  unsigned mem_write = 0, op_limit = 0;
  while (fgets(line, sizeof line, f)) {
    if (strstr(line, "\"op\":\"MEM_WRITE\"") && strstr(line, "\"status\":\"TOO_LARGE\"")) {
      mem_write++;
      if (strstr(line, "over the op's limit") && strstr(line, "\"peer\":\"")) op_limit++;
    }
  }
  fclose(f);
  printf("  audit log: %u MEM_WRITE TOO_LARGE lines, %u of them over the op's limit\n",
         mem_write, op_limit);
  assert_int_equal(mem_write, g_refused_mem_write);
  assert_int_equal(op_limit, 5); /* 2 on each QUIC port, 1 on the local socket */
}

static int setup(void **state) {
  (void)state;
  if (!mkdtemp(g_dir)) return -1;
  if (chmod(g_dir, 0755) != 0) return -1;
  snprintf(g_sock, sizeof g_sock, "%s/gpuleased.sock", g_dir);
  snprintf(g_audit, sizeof g_audit, "%s/audit.log", g_dir);
  const char *extra[] = {"--net-threads",  "1",           "--local-socket", g_sock,
                         "--metrics-listen", "127.0.0.1:0", "--audit-log",    g_audit, NULL};
  return gl_test_daemon_start(&g_d, "64M", extra);
}

static int teardown(void **state) {
  (void)state;
  int rc = gl_test_daemon_stop(&g_d);
  unlink(g_sock);
  unlink(g_audit);
  rmdir(g_dir);
  return rc;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_main_port),
      cmocka_unit_test(test_stripe_port),
      cmocka_unit_test(test_local_socket),
      cmocka_unit_test(test_bookkeeping),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
