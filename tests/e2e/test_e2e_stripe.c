/*
 * test_e2e_stripe.c - striped transfers (gpulease.h connect options
 * "Striping", docs/protocol.md NET_INFO): a real gpuleased on the emulated
 * device with network threads, and the library striping large MEM_WRITEs
 * and MEM_READs over its stripe ports.
 *
 * Checked: the bytes, byte for byte, at offsets; the transfer's place in
 * the session's order (a memset pipelined before it runs before it, one
 * after it runs after); progress up to the total; that the stripe
 * connections were really made (the daemon logs each connection); a failed
 * striped transfer as the session's failure; a daemon without network
 * threads (NET_INFO lists no ports) getting the same transfer over one
 * connection.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon_harness.h"
#include "gpulease/gpulease.h"
#include "lib_check.h"

/* Striping from 4 MiB, over up to 3 connections. */
static gpulease_client *connect_striped(const gl_test_daemon *d) {
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = d->addr;
  o.pin_sha256 = d->fingerprint;
  o.timeout_ms = 60000;
  o.no_local = 1;
  o.stripes = 3;
  o.stripe_min_bytes = 4 * MiB;
  gpulease_client *c = NULL;
  CHECK(gpulease_client_connect(&o, &c, E));
  return c;
}

static void start(gl_test_daemon *d, const char *net_threads) {
  const char *extra[] = {"--net-threads", net_threads, NULL};
  const char *dev = getenv("GL_TEST_DEVICE");
  bool on_gpu = dev && strcmp(dev, "cuda") == 0;
  assert_int_equal(gl_test_daemon_start(d, on_gpu ? NULL : "256M", extra), 0);
}

/* QUIC connections the daemon has seen established. */
static int connections(const gl_test_daemon *d) {
  return gl_test_daemon_log_count(d, "established");
}

typedef struct progress {
  uint64_t last, total;
  int calls;
} progress;

static void on_progress(uint64_t done, uint64_t total, void *user) {
  progress *p = user;
  assert_true(done >= p->last && done <= total);
  p->last = done;
  p->total = total;
  p->calls++;
}

static gpulease_session *open_session(gpulease_client *c, gpulease_lease *l, uint64_t vram) {
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, vram, 120, l, E));
  gpulease_session *s = NULL;
  CHECK(gpulease_session_open(c, l, &s, E));
  return s;
}

static uint8_t pattern(uint64_t i) { return (uint8_t)(i * 131 + (i >> 20) + 7); }

/* Memset, a striped write inside, a striped read of the whole: the memset
 * ran first; a memset after the write ran after it. */
static void round_trip(gpulease_session *s) {
  const uint64_t total = 56 * MiB, at = 8 * MiB, len = 40 * MiB + 12345;
  gpulease_buffer b;
  CHECK(gpulease_mem_alloc(s, total, &b, E));
  CHECK(gpulease_mem_set(s, b, 0, 4, 0x11111111u, total / 4, E)); /* pipelined */
  uint8_t *src = malloc(len), *back = malloc(total);
  assert_non_null(src);
  assert_non_null(back);
  for (uint64_t i = 0; i < len; i++) src[i] = pattern(i);
  progress p = {0};
  gpulease_session_set_progress(s, on_progress, &p);
  CHECK(gpulease_mem_write(s, b, at, src, len, E));
  assert_true(p.calls > 0);
  assert_true(p.last == len && p.total == len);
  p = (progress){0};
  memset(back, 0, total);
  CHECK(gpulease_mem_read(s, b, 0, back, total, E));
  assert_true(p.calls > 0);
  assert_true(p.last == total && p.total == total);
  gpulease_session_set_progress(s, NULL, NULL);
  for (uint64_t i = 0; i < total; i++) {
    uint8_t want = i >= at && i < at + len ? pattern(i - at) : 0x11;
    if (back[i] != want) fprintf(stderr, "byte %llu: %02x, want %02x\n", (unsigned long long)i,
                                 back[i], want);
    assert_int_equal(back[i], want);
  }
  /* After the striped write, in the session's order. */
  CHECK(gpulease_mem_set(s, b, at, 4, 0x22222222u, MiB / 4, E));
  uint8_t small[64];
  CHECK(gpulease_mem_read(s, b, at, small, sizeof small, E));
  for (size_t i = 0; i < sizeof small; i++) assert_int_equal(small[i], 0x22);
  CHECK(gpulease_mem_free(s, b, E));
  free(src);
  free(back);
}

static void test_striped_round_trip(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "3");
  gpulease_client *c = connect_striped(&d);
  gpulease_lease l;
  gpulease_session *s = open_session(c, &l, 128 * MiB);
  round_trip(s);
  round_trip(s); /* the stripe connections stay open */
  /* One main connection and three stripe connections, made once. */
  assert_int_equal(connections(&d), 4);
  CHECK(gpulease_session_close(s, E));
  CHECK(gpulease_lease_free(c, &l, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* A striped transfer the daemon refuses is the session's failure. */
static void test_striped_failure(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "2");
  gpulease_client *c = connect_striped(&d);
  gpulease_lease l;
  gpulease_session *s = open_session(c, &l, 64 * MiB);
  gpulease_buffer b;
  CHECK(gpulease_mem_alloc(s, 16 * MiB, &b, E));
  uint8_t *src = calloc(1, 24 * MiB);
  assert_non_null(src);
  gpulease_error err;
  assert_int_equal(gpulease_mem_write(s, b, 0, src, 24 * MiB, &err), GPULEASE_INVALID_ARGUMENT);
  printf("striped write past the buffer: %s\n", err.message);
  gpulease_op_failure f = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  assert_int_equal(gpulease_session_sync(s, &f, &err), GPULEASE_INVALID_ARGUMENT);
  assert_string_equal(f.op_name, "MEM_WRITE");
  CHECK(gpulease_session_acknowledge(s, UINT64_MAX, E));
  CHECK(gpulease_mem_write(s, b, 0, src, 16 * MiB, E)); /* and on */
  free(src);
  CHECK(gpulease_session_close(s, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* Without network threads there is nothing to stripe over: one
 * connection, the same bytes. */
static void test_no_stripe_ports(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "0");
  gpulease_client *c = connect_striped(&d);
  gpulease_lease l;
  gpulease_session *s = open_session(c, &l, 128 * MiB);
  round_trip(s);
  assert_int_equal(connections(&d), 1);
  CHECK(gpulease_session_close(s, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_striped_round_trip),
      cmocka_unit_test(test_striped_failure),
      cmocka_unit_test(test_no_stripe_ports),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
