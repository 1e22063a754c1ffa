/*
 * test_udp_io.c - src/net/udp_io.c on loopback: a batch of equal-size
 * datagrams leaves in one UDP GSO message and comes back coalesced by GRO;
 * the sendmmsg path (forced by no_gso, and taken by itself when the kernel
 * refuses GSO); batches of mixed sizes cut into the right runs; the
 * destination address with pktinfo; the route's datagram size; a socket
 * error reported once.
 *
 * Where the kernel has no GSO or GRO at all, the checks that need them are
 * skipped (and say so); every datagram must arrive whole and in order in
 * every case.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/udp_io.h"

#define MAX_DGRAMS 256

/* ======================================================================
 * Helpers
 * ==================================================================== */

/* A non-blocking UDP socket bound to host (port 0), or connected to `to`
 * when given. */
static int udp_socket(int family, const char *host, const struct sockaddr_storage *to,
                      socklen_t tolen) {
  int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  struct sockaddr_storage a;
  memset(&a, 0, sizeof a);
  socklen_t alen;
  if (family == AF_INET) {
    struct sockaddr_in *a4 = (struct sockaddr_in *)&a;
    a4->sin_family = AF_INET;
    assert_int_equal(inet_pton(AF_INET, host, &a4->sin_addr), 1);
    alen = sizeof *a4;
  } else {
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&a;
    a6->sin6_family = AF_INET6;
    assert_int_equal(inet_pton(AF_INET6, host, &a6->sin6_addr), 1);
    alen = sizeof *a6;
  }
  assert_int_equal(bind(fd, (struct sockaddr *)&a, alen), 0);
  if (to) assert_int_equal(connect(fd, (const struct sockaddr *)to, tolen), 0);
  return fd;
}

static gl_udp *udp_new(int fd, const gl_udp_opts *o) {
  gl_udp *u = NULL;
  assert_int_equal(gl_udp_new(fd, o, &u), 0);
  assert_non_null(u);
  return u;
}

/* A receiver on 127.0.0.1 and a sender connected to it. */
typedef struct pair {
  gl_udp *rx, *tx;
} pair;

static pair pair_new(const gl_udp_opts *rxo, const gl_udp_opts *txo) {
  pair p;
  p.rx = udp_new(udp_socket(AF_INET, "127.0.0.1", NULL, 0), rxo);
  socklen_t len;
  const struct sockaddr *at = gl_udp_local(p.rx, &len);
  struct sockaddr_storage to;
  memcpy(&to, at, len);
  p.tx = udp_new(udp_socket(AF_INET, "127.0.0.1", &to, len), txo);
  return p;
}

static void pair_del(pair *p) {
  gl_udp_del(p->rx);
  gl_udp_del(p->tx);
}

/* Datagram i of a batch: its bytes say which one it is and where. */
static uint8_t dgram_byte(size_t i, size_t off) { return (uint8_t)(i * 37u + off * 7u + 1u); }

/* Fills data with count datagrams of lens[i] bytes. Returns the bytes. */
static size_t fill(uint8_t *data, const size_t *lens, size_t count) {
  size_t off = 0;
  for (size_t i = 0; i < count; i++)
    for (size_t k = 0; k < lens[i]; k++) data[off++] = dgram_byte(i, k);
  return off;
}

/* Receives until count datagrams arrived (or 3 s passed) and checks each
 * one's length and bytes, in order. Returns the number of messages they
 * came in (fewer than count when GRO coalesced some). */
static size_t expect_dgrams(gl_udp *rx, const size_t *lens, size_t count) {
  size_t got = 0, msgs = 0;
  for (int waited = 0; got < count && waited < 3000;) {
    gl_udp_msg *m;
    int n = gl_udp_recv(rx, &m);
    assert_true(n >= 0);
    if (n == 0) {
      struct pollfd pfd = {.fd = gl_udp_fd(rx), .events = POLLIN};
      (void)poll(&pfd, 1, 10);
      waited += 10;
      continue;
    }
    for (int i = 0; i < n; i++, msgs++) {
      size_t off = 0, len;
      for (uint8_t *d; (d = gl_udp_msg_next(&m[i], &off, &len)); got++) {
        assert_true(got < count);
        if (len != lens[got]) fail_msg("datagram %zu: %zu bytes, want %zu", got, len, lens[got]);
        for (size_t k = 0; k < len; k++)
          if (d[k] != dgram_byte(got, k)) fail_msg("datagram %zu: byte %zu differs", got, k);
      }
    }
  }
  assert_int_equal(got, count);
  return msgs;
}

static size_t send_all(gl_udp *tx, const uint8_t *data, const size_t *lens, size_t count) {
  gl_udp_tx t = {.data = data, .lens = lens, .count = count};
  int err = -1;
  size_t done = gl_udp_send(tx, &t, &err);
  assert_int_equal(err, 0);
  assert_int_equal(done, count);
  return done;
}

static uint8_t g_buf[MAX_DGRAMS * 1500];

/* ======================================================================
 * Tests
 * ==================================================================== */

/* 20 datagrams of 1000 bytes and one of 300: one sendmsg carrying one GSO
 * message; the receiver (UDP_GRO on) gets them back coalesced. */
static void test_gso_batch_gro_receive(void **state) {
  (void)state;
  pair p = pair_new(NULL, NULL);
  size_t lens[21];
  for (size_t i = 0; i < 20; i++) lens[i] = 1000;
  lens[20] = 300;
  fill(g_buf, lens, 21);
  send_all(p.tx, g_buf, lens, 21);
  gl_udp_info ti, ri;
  gl_udp_info_get(p.tx, &ti);
  gl_udp_info_get(p.rx, &ri);
  assert_int_equal(ti.dgrams_sent, 21);
  assert_int_equal(ti.send_calls, 1);
  size_t msgs = expect_dgrams(p.rx, lens, 21);
  gl_udp_info_get(p.rx, &ri);
  assert_int_equal(ri.dgrams_received, 21);
  if (!ti.gso) {
    print_message("no UDP GSO on this kernel: GSO checks skipped\n");
  } else {
    assert_int_equal(ti.gso_msgs, 1);
    if (ri.gro) {
      assert_true(msgs < 21); /* coalesced back by GRO */
      assert_true(ri.gro_msgs >= 1);
    } else {
      print_message("no UDP GRO on this kernel: coalescing not checked\n");
    }
  }
  pair_del(&p);
}

/* no_gso: the same batch leaves as 21 messages of one sendmmsg. */
static void test_sendmmsg_when_gso_off(void **state) {
  (void)state;
  gl_udp_opts txo = {.no_gso = true};
  gl_udp_opts rxo = {.no_gro = true};
  pair p = pair_new(&rxo, &txo);
  size_t lens[21];
  for (size_t i = 0; i < 20; i++) lens[i] = 1000;
  lens[20] = 300;
  fill(g_buf, lens, 21);
  send_all(p.tx, g_buf, lens, 21);
  gl_udp_info ti, ri;
  gl_udp_info_get(p.tx, &ti);
  assert_false(ti.gso);
  assert_int_equal(ti.gso_msgs, 0);
  assert_int_equal(ti.send_calls, 1);
  assert_int_equal(ti.dgrams_sent, 21);
  assert_int_equal(expect_dgrams(p.rx, lens, 21), 21); /* one datagram per message */
  gl_udp_info_get(p.rx, &ri);
  assert_false(ri.gro);
  assert_int_equal(ri.gro_msgs, 0);
  pair_del(&p);
}

/* A socket whose UDP checksums are off (SO_NO_CHECK) cannot use GSO: the
 * kernel refuses the message (EINVAL); the batch goes out by sendmmsg and
 * the object stops trying GSO. */
static void test_gso_refused_falls_back(void **state) {
  (void)state;
  pair p = pair_new(NULL, NULL);
  gl_udp_info ti;
  gl_udp_info_get(p.tx, &ti);
  if (!ti.gso) {
    print_message("no UDP GSO on this kernel: nothing to refuse\n");
    pair_del(&p);
    skip();
  }
  int one = 1;
  assert_int_equal(setsockopt(gl_udp_fd(p.tx), SOL_SOCKET, SO_NO_CHECK, &one, sizeof one), 0);
  size_t lens[10];
  for (size_t i = 0; i < 10; i++) lens[i] = 1200;
  fill(g_buf, lens, 10);
  send_all(p.tx, g_buf, lens, 10);
  gl_udp_info_get(p.tx, &ti);
  assert_false(ti.gso); /* remembered */
  assert_int_equal(ti.gso_msgs, 0);
  assert_int_equal(ti.dgrams_sent, 10);
  expect_dgrams(p.rx, lens, 10);
  /* Later batches go straight to sendmmsg. */
  uint64_t calls = ti.send_calls;
  send_all(p.tx, g_buf, lens, 10);
  gl_udp_info_get(p.tx, &ti);
  assert_int_equal(ti.send_calls, calls + 1);
  expect_dgrams(p.rx, lens, 10);
  pair_del(&p);
}

/* Mixed sizes: runs of equal size, each ended by a shorter datagram or
 * broken by a larger one, and long runs cut at 64 datagrams or at 65507
 * bytes. */
static void test_mixed_sizes(void **state) {
  (void)state;
  pair p = pair_new(NULL, NULL);
  size_t lens[MAX_DGRAMS], n = 0;
  /* run 1: 3 x 1200 + 700 */
  for (int i = 0; i < 3; i++) lens[n++] = 1200;
  lens[n++] = 700;
  /* run 2: 2 x 1400 + 50; run 3: 1400 + 900; run 4: 2 x 900 */
  lens[n++] = 1400;
  lens[n++] = 1400;
  lens[n++] = 50;
  lens[n++] = 1400;
  lens[n++] = 900;
  lens[n++] = 900;
  lens[n++] = 900;
  /* runs 5-6: 100 x 300 (64 + 36 datagrams) */
  for (int i = 0; i < 100; i++) lens[n++] = 300;
  /* runs 7-8: 50 x 1452 (45 fit in 65507 bytes, then 5) */
  for (int i = 0; i < 50; i++) lens[n++] = 1452;
  /* run 9: a lone datagram larger than everything before */
  lens[n++] = 1472;
  assert_true(n <= MAX_DGRAMS);
  fill(g_buf, lens, n);
  send_all(p.tx, g_buf, lens, n);
  gl_udp_info ti;
  gl_udp_info_get(p.tx, &ti);
  assert_int_equal(ti.dgrams_sent, n);
  if (ti.gso) {
    assert_int_equal(ti.gso_msgs, 8); /* runs 1-8; run 9 is a plain datagram */
    assert_int_equal(ti.send_calls, 1);
  }
  expect_dgrams(p.rx, lens, n);
  pair_del(&p);
}

/* A wildcard-bound socket with pktinfo says where each datagram went; the
 * route to a loopback peer carries 64 KiB datagrams, and one that large
 * arrives whole. */
static void test_pktinfo_and_route_size(void **state) {
  (void)state;
  gl_udp_opts rxo = {.pktinfo = true};
  int rfd = udp_socket(AF_INET, "0.0.0.0", NULL, 0);
  gl_udp *rx = udp_new(rfd, &rxo);
  socklen_t len;
  struct sockaddr_in to;
  memcpy(&to, gl_udp_local(rx, &len), sizeof to);
  assert_int_equal(inet_pton(AF_INET, "127.0.0.1", &to.sin_addr), 1);
  struct sockaddr_storage tss;
  memcpy(&tss, &to, sizeof to);
  gl_udp *tx = udp_new(udp_socket(AF_INET, "127.0.0.1", &tss, sizeof to), NULL);
  size_t route = gl_udp_path_max_payload(tx);
  assert_true(route >= 65000); /* loopback: MTU 65536 */
  assert_int_equal(gl_udp_path_max_payload(rx), 0); /* unconnected: unknown */

  static uint8_t big[GL_UDP_GSO_MAX_BYTES];
  size_t lens[2] = {route, 10};
  fill(big, lens, 1);
  fill(g_buf, lens + 1, 1);
  send_all(tx, big, lens, 1);
  gl_udp_msg *m = NULL;
  int n = 0;
  for (int i = 0; i < 300 && n == 0; i++) {
    n = gl_udp_recv(rx, &m);
    if (n == 0) {
      struct pollfd pfd = {.fd = gl_udp_fd(rx), .events = POLLIN};
      (void)poll(&pfd, 1, 10);
    }
  }
  assert_int_equal(n, 1);
  assert_int_equal(m[0].len, route);
  const struct sockaddr_in *l4 = (const struct sockaddr_in *)&m[0].local;
  assert_int_equal(l4->sin_family, AF_INET);
  assert_int_equal(ntohl(l4->sin_addr.s_addr), INADDR_LOOPBACK);
  assert_int_equal(l4->sin_port, to.sin_port);
  gl_udp_del(rx);
  gl_udp_del(tx);
}

/* Sending to a port nobody listens on: the ICMP error comes back once, as
 * ECONNREFUSED, from gl_udp_recv or a later gl_udp_send (which then drops
 * the datagram and says why). */
static void test_socket_error_reported(void **state) {
  (void)state;
  int probe = udp_socket(AF_INET, "127.0.0.1", NULL, 0);
  struct sockaddr_storage dead;
  socklen_t dlen = sizeof dead;
  assert_int_equal(getsockname(probe, (struct sockaddr *)&dead, &dlen), 0);
  close(probe); /* its port is now closed */
  gl_udp *tx = udp_new(udp_socket(AF_INET, "127.0.0.1", &dead, dlen), NULL);
  size_t lens[1] = {100};
  fill(g_buf, lens, 1);
  send_all(tx, g_buf, lens, 1);
  struct pollfd pfd = {.fd = gl_udp_fd(tx), .events = POLLIN};
  (void)poll(&pfd, 1, 1000);
  gl_udp_msg *m;
  errno = 0;
  int n = gl_udp_recv(tx, &m);
  if (n < 0) {
    assert_int_equal(errno, ECONNREFUSED);
  } else {
    gl_udp_tx t = {.data = g_buf, .lens = lens, .count = 1};
    int err = 0;
    assert_int_equal(gl_udp_send(tx, &t, &err), 1);
    assert_int_equal(err, ECONNREFUSED);
  }
  assert_int_equal(gl_udp_recv(tx, &m), 0); /* reported once */
  gl_udp_del(tx);
}

/* IPv6 loopback, where the host has it: the GSO batch test again. */
static void test_ipv6_batch(void **state) {
  (void)state;
  int fd = socket(AF_INET6, SOCK_DGRAM, 0);
  struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
  bool have = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
  if (fd >= 0) close(fd);
  if (!have) {
    print_message("no IPv6 loopback here\n");
    skip();
  }
  gl_udp *rx = udp_new(udp_socket(AF_INET6, "::1", NULL, 0), NULL);
  socklen_t len;
  const struct sockaddr *at = gl_udp_local(rx, &len);
  struct sockaddr_storage to;
  memcpy(&to, at, len);
  gl_udp *tx = udp_new(udp_socket(AF_INET6, "::1", &to, len), NULL);
  assert_true(gl_udp_path_max_payload(tx) >= 65000);
  size_t lens[40];
  for (size_t i = 0; i < 40; i++) lens[i] = 1452;
  fill(g_buf, lens, 40);
  send_all(tx, g_buf, lens, 40);
  expect_dgrams(rx, lens, 40);
  gl_udp_del(rx);
  gl_udp_del(tx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gso_batch_gro_receive),
      cmocka_unit_test(test_sendmmsg_when_gso_off),
      cmocka_unit_test(test_gso_refused_falls_back),
      cmocka_unit_test(test_mixed_sizes),
      cmocka_unit_test(test_pktinfo_and_route_size),
      cmocka_unit_test(test_socket_error_reported),
      cmocka_unit_test(test_ipv6_batch),
  };
  if (getenv("GL_TEST_FILTER")) cmocka_set_test_filter(getenv("GL_TEST_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
