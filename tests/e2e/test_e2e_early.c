/*
 * test_e2e_early.c - the daemon's verdict on a request's 12-byte header
 * (docs/protocol.md, sections 1, 4 and 6), from a raw client against a
 * real gpuleased on the emulated device, over each transport that brings
 * requests: the main QUIC port, a stripe port (a network thread) and the
 * local socket. Only the header is sent (no FIN, no body):
 *   - an internal op (0x7Fxx) with body_len 1000 is UNSUPPORTED within a
 *     second, the message naming the op as internal;
 *   - a MEM_WRITE declaring 1 GiB is TOO_LARGE within a second;
 *   - the limit (--max-message, 256 MiB by default) counts the header:
 *     body_len limit - 11 is TOO_LARGE, limit - 12 is read on (no answer
 *     while its body does not come);
 * and the connection serves the next request.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Sends only the header op/body_len (the stream left open) and expects
 * status with needle within a second. */
static void header_only(gl_qclient *q, uint16_t op, uint32_t body_len, gpulease_status st,
                        const char *needle) {
  uint8_t h[GL_WIRE_HEADER_SIZE];
  header(h, op, body_len);
  double t0 = now_s();
  uint64_t tok = 0;
  char err[256];
  assert_int_equal(gl_qclient_send_open(q, h, sizeof h, &tok, err, sizeof err), GL_QC_OK);
  uint8_t *resp = NULL;
  size_t len = 0;
  int rc = gl_qclient_wait(q, tok, &resp, &len, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "wait: %s\n", err);
  assert_int_equal(rc, GL_QC_OK);
  double dt = now_s() - t0;
  expect(resp, len, op, st, needle);
  assert_true(dt < 1.0);
  free(resp);
}

/* The rules on one QUIC port; then NET_INFO on the same connection. */
static void rules_over_quic(uint16_t port) {
  gl_qclient *q = dial(port);
  header_only(q, GL_OP_MEM_WRITE_ARENA, 1000, GPULEASE_UNSUPPORTED, "is internal to the daemon");
  header_only(q, GL_OP_WORKER_INIT, 1000, GPULEASE_UNSUPPORTED, "0x7f01");
  header_only(q, GL_OP_MEM_WRITE, 1u << 30, GPULEASE_TOO_LARGE, "larger than the daemon's limit");
  header_only(q, GL_OP_MEM_WRITE, (uint32_t)(LIMIT - 11), GPULEASE_TOO_LARGE,
              "request of 268435457 bytes");
  /* limit - 12: the whole message is the limit, so the daemon waits for
   * the body; no answer in 300 ms. */
  uint8_t h[GL_WIRE_HEADER_SIZE];
  header(h, GL_OP_MEM_WRITE, (uint32_t)(LIMIT - 12));
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
}

static int setup(void **state) {
  (void)state;
  if (!mkdtemp(g_dir)) return -1;
  if (chmod(g_dir, 0755) != 0) return -1;
  snprintf(g_sock, sizeof g_sock, "%s/gpuleased.sock", g_dir);
  const char *extra[] = {"--net-threads", "1", "--local-socket", g_sock, NULL};
  return gl_test_daemon_start(&g_d, "64M", extra);
}

static int teardown(void **state) {
  (void)state;
  int rc = gl_test_daemon_stop(&g_d);
  unlink(g_sock);
  rmdir(g_dir);
  return rc;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_main_port),
      cmocka_unit_test(test_stripe_port),
      cmocka_unit_test(test_local_socket),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
