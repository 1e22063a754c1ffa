/*
 * test_quic.c - loopback tests of src/net: the QUIC server on a libev loop
 * in its own thread, blocking clients in the test thread (or many threads),
 * the TLS helpers, and client identities (mutual TLS, identities bound to
 * a connection later, over QUIC, the daemon's network threads and the local
 * socket; src/daemon/shards.c and dreq.c are built in for that).
 *
 * The test server answers by the request's first bytes:
 *   "DEFER:<ms>"  reply "LATE" after <ms> (a slow worker); records whether
 *                 the request was orphaned by then
 *   "DELAY:<ms>:<payload>"  reply the payload reversed after <ms>; never
 *                 answered when the server stops first
 *   "SIZE:<n>"    reply n bytes of a pattern
 *   "BIG:<n>"     the same, handed over with gl_qreq_reply_take
 *   "CKSUM:<bytes>"  reply "<count>:<FNV-1a 64 hex>" of the bytes
 *   "WHO"         reply "<gl_qreq_identity>|<gl_qreq_peer>"
 *   "WHO_LATER:<ms>"  the same after <ms>, from the request's copies; also
 *                 kept in late_identity / late_peer (the client may be gone)
 *   "BIND:<name>" gl_qreq_set_identity(name); reply "<rc>:<identity now>"
 *   anything else reply the bytes reversed
 *   over max_message_bytes: reply "TOO_LARGE:<bytes delivered>"
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/dreq.h"
#include "daemon/shards.h"
#include "e2e/initial_flood.h"
#include "net/local.h"
#include "net/quic.h"
#include "net/quic_internal.h"
#include "net/tls.h"
#include "proto/wire.h"

/* ======================================================================
 * Test server
 * ==================================================================== */

typedef struct deferred {
  ev_timer timer;
  gl_qreq *req;
  uint8_t *reply; /* NULL: "LATE" */
  size_t reply_len;
  bool hold;      /* DELAY: not answered when the server stops */
  bool who;       /* WHO_LATER */
  struct deferred *prev, *next;
  struct server_fx *fx;
} deferred;

typedef struct server_fx {
  struct ev_loop *loop;
  gl_qserver *srv;
  pthread_t thread;
  ev_async stop;
  ev_timer stats;
  uint16_t port;
  deferred *pending;
  atomic_size_t conn_count;
  /* Also copied by stats_cb: gl_qserver_retries_sent, _tokens_refused,
   * _handshake_count, and gl_qserver_connections_from and
   * _handshakes_from 127.0.0.1. */
  atomic_size_t retries, tokens_refused, from_local, handshakes, hs_local;
  atomic_int too_large;
  atomic_size_t too_large_len;
  atomic_int requests;
  atomic_int deferred_fired;
  atomic_int deferred_orphaned;
  atomic_int headers; /* on_header calls (header_verdict) */
  atomic_int admitted; /* ... that let the request through */
  atomic_int ended;    /* on_header_end calls (header_end) */
  atomic_ullong ended_bytes; /*  and the wholes they gave back */
  atomic_int bad_ticket; /* on_header_end calls with another ticket */
  size_t max_message;
  /* WHO_LATER's last answer, written before deferred_fired counts it. */
  char late_identity[GL_IDENTITY_MAX];
  char late_peer[64];
} server_fx;

static char g_dir[256];
static char g_cert[512], g_key[512], g_fp[GL_TLS_FP_HEX_LEN];

static uint8_t pattern_byte(size_t i) { return (uint8_t)((i * 131u + (i >> 9)) & 0xff); }

static uint64_t fnv1a(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static void reply_or_fail(gl_qreq *req, const uint8_t *msg, size_t len) {
  (void)gl_qreq_reply(req, msg, len);
}

/* "<identity>|<peer>" of req into text. */
static int who_text(const gl_qreq *req, char *text, size_t len) {
  char peer[64];
  gl_qreq_peer(req, peer, sizeof peer);
  return snprintf(text, len, "%s|%s", gl_qreq_identity(req), peer);
}

static void deferred_fire(server_fx *fx, deferred *d) {
  ev_timer_stop(fx->loop, &d->timer);
  if (d->prev) d->prev->next = d->next;
  else fx->pending = d->next;
  if (d->next) d->next->prev = d->prev;
  if (d->who) {
    snprintf(fx->late_identity, sizeof fx->late_identity, "%s", gl_qreq_identity(d->req));
    gl_qreq_peer(d->req, fx->late_peer, sizeof fx->late_peer);
    if (gl_qreq_orphaned(d->req)) atomic_fetch_add(&fx->deferred_orphaned, 1);
    atomic_fetch_add(&fx->deferred_fired, 1);
    char text[GL_IDENTITY_MAX + 80];
    int n = who_text(d->req, text, sizeof text);
    reply_or_fail(d->req, (const uint8_t *)text, (size_t)n);
    free(d);
    return;
  }
  /* Count first: the client may see the reply before we return. */
  if (d->reply) {
    reply_or_fail(d->req, d->reply, d->reply_len);
    free(d->reply);
    free(d);
    return;
  }
  if (gl_qreq_orphaned(d->req)) atomic_fetch_add(&fx->deferred_orphaned, 1);
  atomic_fetch_add(&fx->deferred_fired, 1);
  reply_or_fail(d->req, (const uint8_t *)"LATE", 4);
  free(d);
}

static void deferred_cb(struct ev_loop *loop, ev_timer *w, int revents) {
  (void)loop;
  (void)revents;
  deferred *d = w->data;
  deferred_fire(d->fx, d);
}

static void on_request(void *user, gl_qreq *req, const uint8_t *msg, size_t len, int err) {
  server_fx *fx = user;
  atomic_fetch_add(&fx->requests, 1);
  if (err == GL_QREQ_TOO_LARGE) {
    atomic_fetch_add(&fx->too_large, 1);
    atomic_store(&fx->too_large_len, len);
    char text[64];
    int n = snprintf(text, sizeof text, "TOO_LARGE:%zu", len);
    reply_or_fail(req, (const uint8_t *)text, (size_t)n);
    return;
  }
  if (len == 3 && memcmp(msg, "WHO", 3) == 0) {
    char text[GL_IDENTITY_MAX + 80];
    int n = who_text(req, text, sizeof text);
    reply_or_fail(req, (const uint8_t *)text, (size_t)n);
    return;
  }
  if (len >= 5 && memcmp(msg, "BIND:", 5) == 0) {
    char name[2 * GL_IDENTITY_MAX];
    size_t n = len - 5 < sizeof name - 1 ? len - 5 : sizeof name - 1;
    memcpy(name, msg + 5, n);
    name[n] = 0;
    int rc = gl_qreq_set_identity(req, name);
    char text[GL_IDENTITY_MAX + 16];
    int k = snprintf(text, sizeof text, "%d:%s", rc, gl_qreq_identity(req));
    reply_or_fail(req, (const uint8_t *)text, (size_t)k);
    return;
  }
  bool delay = len > 6 && memcmp(msg, "DELAY:", 6) == 0;
  bool who = len > 10 && memcmp(msg, "WHO_LATER:", 10) == 0;
  if (who || delay || (len > 6 && memcmp(msg, "DEFER:", 6) == 0)) {
    char num[16] = {0};
    size_t at = who ? 10 : 6;
    memcpy(num, msg + at, len - at < 15 ? len - at : 15);
    deferred *d = calloc(1, sizeof *d);
    assert_non_null(d);
    d->who = who;
    if (delay) {
      const uint8_t *colon = memchr(msg + 6, ':', len - 6);
      assert_non_null(colon);
      size_t plen = len - (size_t)(colon + 1 - msg);
      d->reply = malloc(plen ? plen : 1);
      assert_non_null(d->reply);
      for (size_t i = 0; i < plen; i++) d->reply[i] = colon[plen - i];
      d->reply_len = plen;
      d->hold = true;
    }
    d->req = req;
    d->fx = fx;
    d->next = fx->pending;
    if (fx->pending) fx->pending->prev = d;
    fx->pending = d;
    ev_timer_init(&d->timer, deferred_cb, atof(num) / 1000.0, 0.0);
    d->timer.data = d;
    ev_timer_start(fx->loop, &d->timer);
    return;
  }
  if (len >= 6 && memcmp(msg, "CKSUM:", 6) == 0) {
    char text[64];
    int n = snprintf(text, sizeof text, "%zu:%016llx", len - 6,
                     (unsigned long long)fnv1a(msg + 6, len - 6));
    reply_or_fail(req, (const uint8_t *)text, (size_t)n);
    return;
  }
  if (len > 4 && memcmp(msg, "BIG:", 4) == 0) {
    char num[24] = {0};
    memcpy(num, msg + 4, len - 4 < 23 ? len - 4 : 23);
    size_t n = (size_t)strtoull(num, NULL, 10);
    uint8_t *out = malloc(n ? n : 1);
    assert_non_null(out);
    for (size_t i = 0; i < n; i++) out[i] = pattern_byte(i);
    assert_int_equal(gl_qreq_reply_take(req, out, n), 0);
    return;
  }
  if (len > 5 && memcmp(msg, "SIZE:", 5) == 0) {
    char num[24] = {0};
    memcpy(num, msg + 5, len - 5 < 23 ? len - 5 : 23);
    size_t n = (size_t)strtoull(num, NULL, 10);
    uint8_t *out = malloc(n ? n : 1);
    assert_non_null(out);
    for (size_t i = 0; i < n; i++) out[i] = pattern_byte(i);
    reply_or_fail(req, out, n);
    free(out);
    return;
  }
  uint8_t *out = malloc(len ? len : 1);
  assert_non_null(out);
  for (size_t i = 0; i < len; i++) out[i] = msg[len - 1 - i];
  reply_or_fail(req, out, len);
  free(out);
}

static void stop_cb(struct ev_loop *loop, ev_async *w, int revents) {
  (void)revents;
  server_fx *fx = w->data;
  for (deferred *d = fx->pending, *next; d; d = next) {
    next = d->next;
    if (!d->hold) deferred_fire(fx, d);
  }
  gl_qserver_del(fx->srv);
  fx->srv = NULL;
  /* Held replies now only free their orphaned requests. */
  while (fx->pending) deferred_fire(fx, fx->pending);
  ev_timer_stop(loop, &fx->stats);
  ev_async_stop(loop, &fx->stop);
  ev_break(loop, EVBREAK_ALL);
}

static void stats_cb(struct ev_loop *loop, ev_timer *w, int revents) {
  (void)loop;
  (void)revents;
  server_fx *fx = w->data;
  atomic_store(&fx->conn_count, gl_qserver_connection_count(fx->srv));
  atomic_store(&fx->retries, gl_qserver_retries_sent(fx->srv));
  atomic_store(&fx->tokens_refused, gl_qserver_tokens_refused(fx->srv));
  struct sockaddr_in lo = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  atomic_store(&fx->from_local, gl_qserver_connections_from(fx->srv, (struct sockaddr *)&lo));
  atomic_store(&fx->hs_local, gl_qserver_handshakes_from(fx->srv, (struct sockaddr *)&lo));
  atomic_store(&fx->handshakes, gl_qserver_handshake_count(fx->srv));
}

/* The test's verdict on a header: a request starting "NOPE" is refused
 * ("REFUSED:<body_len>"), one whose header declares more than the
 * server's limit (12 + body_len, big-endian at 8) too ("BIG:<size>"). */
static size_t header_verdict(void *user, const gl_req_origin *from, const uint8_t *hdr,
                             uint8_t *reply, size_t cap, void **ticket) {
  server_fx *fx = user;
  atomic_fetch_add(&fx->headers, 1);
  uint32_t body =
      (uint32_t)hdr[8] << 24 | (uint32_t)hdr[9] << 16 | (uint32_t)hdr[10] << 8 | hdr[11];
  int n = 0;
  if (memcmp(hdr, "NOPE", 4) == 0)
    n = snprintf((char *)reply, cap, "REFUSED:%u", (unsigned)body);
  else if (memcmp(hdr, "CNTU", 4) == 0) /* what the connection has unfinished */
    n = snprintf((char *)reply, cap, "UNF:%u:%llu", (unsigned)from->conn_unfinished,
                 (unsigned long long)from->conn_unfinished_bytes);
  else if (12 + (uint64_t)body > fx->max_message)
    n = snprintf((char *)reply, cap, "BIG:%llu", (unsigned long long)(12 + (uint64_t)body));
  if (n <= 0) {
    atomic_fetch_add(&fx->admitted, 1);
    *ticket = fx;
  }
  return n > 0 ? (size_t)n : 0;
}

/* on_header_end: counts, and checks the ticket is header_verdict's. */
static void header_end(void *user, void *ticket, uint64_t whole) {
  server_fx *fx = user;
  if (ticket != fx) atomic_fetch_add(&fx->bad_ticket, 1);
  atomic_fetch_add(&fx->ended_bytes, whole);
  atomic_fetch_add(&fx->ended, 1);
}

static void *server_main(void *arg) {
  server_fx *fx = arg;
  ev_run(fx->loop, 0);
  return NULL;
}

typedef struct server_opts {
  const char *listen_host;
  size_t max_message_bytes;
  size_t max_connections;
  uint32_t max_streams;
  uint32_t idle_timeout_ms;
  size_t max_udp_payload_bytes;
  bool no_gso;
  const char *client_ca_file;
  uint32_t retry_above_handshakes;
  bool always_retry;
  uint32_t max_connections_per_address;
  uint32_t handshake_timeout_ms;
  uint32_t retry_above_address_handshakes;
  bool header_verdict; /* on_header = header_verdict */
} server_opts;

static server_fx *server_start(const server_opts *o) {
  server_fx *fx = calloc(1, sizeof *fx);
  assert_non_null(fx);
  fx->loop = ev_loop_new(EVFLAG_AUTO);
  assert_non_null(fx->loop);
  gl_qserver_config cfg = {
      .listen_host = o ? o->listen_host : NULL, /* NULL: "::", dual stack */
      .listen_port = 0,
      .cert_file = g_cert,
      .key_file = g_key,
      .max_message_bytes = o && o->max_message_bytes ? o->max_message_bytes : (16u << 20),
      .idle_timeout_ms = o && o->idle_timeout_ms ? o->idle_timeout_ms : 5000,
      .max_connections = o && o->max_connections ? o->max_connections : 256,
      .max_streams_per_conn = o && o->max_streams ? o->max_streams : 8,
      .on_request = on_request,
      .user = fx,
      .max_udp_payload_bytes = o ? o->max_udp_payload_bytes : 0,
      .no_gso = o && o->no_gso,
      .client_ca_file = o ? o->client_ca_file : NULL,
      .retry_above_handshakes = o ? o->retry_above_handshakes : 0,
      .always_retry = o && o->always_retry,
      .max_connections_per_address = o ? o->max_connections_per_address : 0,
      .handshake_timeout_ms = o ? o->handshake_timeout_ms : 0,
      .retry_above_address_handshakes = o ? o->retry_above_address_handshakes : 0,
      .on_header = o && o->header_verdict ? header_verdict : NULL,
      .on_header_end = o && o->header_verdict ? header_end : NULL,
      .header_user = fx,
  };
  fx->max_message = cfg.max_message_bytes;
  char err[256];
  int rc = gl_qserver_new(fx->loop, &cfg, &fx->srv, err, sizeof err);
  if (rc != 0) fprintf(stderr, "gl_qserver_new: %s\n", err);
  assert_int_equal(rc, 0);
  fx->port = gl_qserver_port(fx->srv);
  assert_true(fx->port != 0);
  ev_async_init(&fx->stop, stop_cb);
  fx->stop.data = fx;
  ev_async_start(fx->loop, &fx->stop);
  ev_timer_init(&fx->stats, stats_cb, 0.02, 0.02);
  fx->stats.data = fx;
  ev_timer_start(fx->loop, &fx->stats);
  assert_int_equal(pthread_create(&fx->thread, NULL, server_main, fx), 0);
  return fx;
}

static void server_stop(server_fx *fx) {
  ev_async_send(fx->loop, &fx->stop);
  pthread_join(fx->thread, NULL);
  ev_loop_destroy(fx->loop);
  free(fx);
}

static void sleep_ms(unsigned ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Waits up to ms for *v == want. */
static bool wait_int(atomic_int *v, int want, unsigned ms) {
  for (unsigned t = 0; t < ms; t += 10) {
    if (atomic_load(v) == want) return true;
    sleep_ms(10);
  }
  return atomic_load(v) == want;
}

/* Waits up to ms for *v == want (a counter stats_cb copies). */
static bool wait_size(atomic_size_t *v, size_t want, unsigned ms) {
  for (unsigned t = 0; t < ms; t += 10) {
    if (atomic_load(v) == want) return true;
    sleep_ms(10);
  }
  return atomic_load(v) == want;
}

static bool wait_count(server_fx *fx, size_t want, unsigned ms) {
  for (unsigned t = 0; t < ms; t += 10) {
    if (atomic_load(&fx->conn_count) == want) return true;
    sleep_ms(10);
  }
  return atomic_load(&fx->conn_count) == want;
}

/* ======================================================================
 * Client helpers
 * ==================================================================== */

static gl_qclient_config pin_config(uint16_t port) {
  gl_qclient_config cfg = {
      .host = "127.0.0.1",
      .port = port,
      .pin_sha256 = g_fp,
      .timeout_ms = 10000,
      .max_response_bytes = 32u << 20,
  };
  return cfg;
}

static gl_qclient *connect_ok(const gl_qclient_config *cfg) {
  gl_qclient *c = NULL;
  char err[512] = "";
  int rc = gl_qclient_connect(cfg, &c, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "connect %s: %d %s\n", cfg->host, rc, err);
  assert_int_equal(rc, GL_QC_OK);
  assert_non_null(c);
  return c;
}

/* Sends msg, expects the reversed bytes. */
static void expect_echo(gl_qclient *c, const uint8_t *msg, size_t len) {
  uint8_t *resp = NULL;
  size_t rlen = 0;
  char err[512] = "";
  int rc = gl_qclient_request(c, msg, len, &resp, &rlen, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "request: %d %s\n", rc, err);
  assert_int_equal(rc, GL_QC_OK);
  assert_non_null(resp);
  assert_int_equal(rlen, len);
  for (size_t i = 0; i < len; i++) {
    if (resp[i] != msg[len - 1 - i]) fail_msg("byte %zu differs", i);
  }
  free(resp);
}

static void expect_text(gl_qclient *c, const char *req, const char *want) {
  uint8_t *resp = NULL;
  size_t rlen = 0;
  char err[512] = "";
  int rc = gl_qclient_request(c, (const uint8_t *)req, strlen(req), &resp, &rlen, err,
                              sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "request: %d %s\n", rc, err);
  assert_int_equal(rc, GL_QC_OK);
  assert_int_equal(rlen, strlen(want));
  assert_memory_equal(resp, want, rlen);
  free(resp);
}

static uint16_t unused_udp_port(void) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t l = sizeof a;
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
  close(fd);
  return ntohs(a.sin_port);
}

/* ======================================================================
 * TLS helper tests
 * ==================================================================== */

static void test_fingerprint_parse(void **state) {
  (void)state;
  char hex[GL_TLS_FP_HEX_LEN];
  const char *lower = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
  assert_int_equal(gl_tls_parse_fingerprint(lower, hex), 0);
  assert_string_equal(hex, lower);
  assert_int_equal(gl_tls_parse_fingerprint("00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:"
                                            "00:11:22:33:44:55:66:77:88:99:aA:Bb:cC:dD:Ee:fF",
                                            hex),
                   0);
  assert_string_equal(hex, lower);
  assert_int_equal(gl_tls_parse_fingerprint("  00112233445566778899AABBCCDDEEFF00112233445566778899"
                                            "AABBCCDDEEFF\n",
                                            hex),
                   0);
  assert_string_equal(hex, lower);
  /* Malformed. */
  assert_int_equal(gl_tls_parse_fingerprint(NULL, hex), -1);
  assert_int_equal(gl_tls_parse_fingerprint("", hex), -1);
  assert_int_equal(gl_tls_parse_fingerprint("0011", hex), -1);
  assert_int_equal(gl_tls_parse_fingerprint(
                       "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00", hex),
                   -1);
  assert_int_equal(gl_tls_parse_fingerprint(
                       "g0112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", hex),
                   -1);
  assert_int_equal(gl_tls_parse_fingerprint(
                       ":00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", hex),
                   -1);
  assert_int_equal(gl_tls_parse_fingerprint(
                       "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff:", hex),
                   -1);
  assert_int_equal(gl_tls_parse_fingerprint(
                       "0:0112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", hex),
                   -1);
  assert_int_equal(gl_tls_parse_fingerprint(
                       "00::112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", hex),
                   -1);
  assert_int_equal(gl_tls_parse_fingerprint(
                       "00112233445566778899aabbccddeeff 00112233445566778899aabbccddeeff", hex),
                   -1);
}

static void test_self_signed_keeps_pair(void **state) {
  (void)state;
  char dir[300];
  snprintf(dir, sizeof dir, "%s/second", g_dir);
  char cert[512], key[512], err[256];
  int created = -1;
  assert_int_equal(gl_tls_ensure_self_signed(dir, cert, key, sizeof cert, &created, err,
                                             sizeof err),
                   0);
  assert_int_equal(created, 1);
  struct stat st;
  assert_int_equal(stat(key, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  char fp1[GL_TLS_FP_HEX_LEN], fp2[GL_TLS_FP_HEX_LEN];
  assert_int_equal(gl_tls_file_fingerprint(cert, fp1, err, sizeof err), 0);
  assert_int_equal(strlen(fp1), 64);

  assert_int_equal(gl_tls_ensure_self_signed(dir, cert, key, sizeof cert, &created, err,
                                             sizeof err),
                   0);
  assert_int_equal(created, 0);
  assert_int_equal(gl_tls_file_fingerprint(cert, fp2, err, sizeof err), 0);
  assert_string_equal(fp1, fp2);

  /* A certificate without its key is an error, never overwritten. */
  assert_int_equal(unlink(key), 0);
  assert_int_equal(gl_tls_ensure_self_signed(dir, cert, key, sizeof cert, &created, err,
                                             sizeof err),
                   -1);
  assert_non_null(strstr(err, "missing"));
  assert_int_equal(gl_tls_file_fingerprint(cert, fp2, err, sizeof err), 0);
  assert_string_equal(fp1, fp2);
  unlink(cert);
  rmdir(dir);

  /* Not a certificate. */
  assert_int_equal(gl_tls_file_fingerprint(g_key, fp2, err, sizeof err), -1);
  assert_int_equal(gl_tls_file_fingerprint("/nonexistent/cert.pem", fp2, err, sizeof err), -1);
}

/* ======================================================================
 * Handshake and verification
 * ==================================================================== */

static void test_pin(void **state) {
  (void)state;
  server_fx *fx = server_start(NULL);
  /* Pin given with colons and in upper case. */
  char pin[200];
  size_t n = 0;
  for (size_t i = 0; i < 64; i += 2) {
    n += (size_t)snprintf(pin + n, sizeof pin - n, "%s%c%c", i ? ":" : "",
                          g_fp[i] >= 'a' ? g_fp[i] - 32 : g_fp[i],
                          g_fp[i + 1] >= 'a' ? g_fp[i + 1] - 32 : g_fp[i + 1]);
  }
  gl_qclient_config cfg = pin_config(fx->port);
  cfg.pin_sha256 = pin;
  gl_qclient *c = connect_ok(&cfg);
  expect_text(c, "hello", "olleh");
  expect_echo(c, (const uint8_t *)"", 0); /* empty request, empty reply */
  gl_qclient_del(c);
  server_stop(fx);
}

static void test_ca_file(void **state) {
  (void)state;
  server_fx *fx = server_start(NULL);
  const char *hosts[] = {"127.0.0.1", "localhost"};
  for (size_t i = 0; i < 2; i++) {
    gl_qclient_config cfg = pin_config(fx->port);
    cfg.pin_sha256 = NULL;
    cfg.ca_file = g_cert;
    cfg.host = hosts[i];
    gl_qclient *c = connect_ok(&cfg);
    expect_text(c, "abc", "cba");
    gl_qclient_del(c);
  }
  /* 127.0.0.2 is loopback too, but not in the certificate. */
  gl_qclient_config cfg = pin_config(fx->port);
  cfg.pin_sha256 = NULL;
  cfg.ca_file = g_cert;
  cfg.host = "127.0.0.2";
  cfg.timeout_ms = 3000;
  gl_qclient *c = NULL;
  char err[512] = "";
  int rc = gl_qclient_connect(&cfg, &c, err, sizeof err);
  assert_int_equal(rc, GL_QC_TLS);
  assert_null(c);
  assert_non_null(strstr(err, "verification failed"));
  /* System trust does not know our self-signed certificate. */
  cfg.ca_file = NULL;
  cfg.host = "127.0.0.1";
  assert_int_equal(gl_qclient_connect(&cfg, &c, err, sizeof err), GL_QC_TLS);
  assert_null(c);
  /* A CA file that does not exist is an option error. */
  cfg.host = "127.0.0.1";
  cfg.ca_file = "/nonexistent/ca.pem";
  assert_int_equal(gl_qclient_connect(&cfg, &c, err, sizeof err), GL_QC_INVALID);
  /* Conflicting options. */
  cfg.ca_file = g_cert;
  cfg.insecure = true;
  assert_int_equal(gl_qclient_connect(&cfg, &c, err, sizeof err), GL_QC_INVALID);
  server_stop(fx);
}

/* IPv4-only and IPv6-only listeners; "localhost" falls back from ::1 to
 * 127.0.0.1 when the first address refuses. */
static void test_listen_families(void **state) {
  (void)state;
  server_opts o4 = {.listen_host = "127.0.0.1"};
  server_fx *fx = server_start(&o4);
  const char *hosts4[] = {"127.0.0.1", "localhost"};
  for (size_t i = 0; i < 2; i++) {
    gl_qclient_config cfg = pin_config(fx->port);
    cfg.host = hosts4[i];
    gl_qclient *c = connect_ok(&cfg);
    expect_text(c, "v4", "4v");
    gl_qclient_del(c);
  }
  server_stop(fx);

  int probe = socket(AF_INET6, SOCK_DGRAM, 0);
  struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
  bool have_v6 = probe >= 0 && bind(probe, (struct sockaddr *)&a6, sizeof a6) == 0;
  if (probe >= 0) close(probe);
  if (!have_v6) return; /* no IPv6 loopback here */
  server_opts o6 = {.listen_host = "::1"};
  fx = server_start(&o6);
  gl_qclient_config cfg = pin_config(fx->port);
  cfg.host = "::1";
  gl_qclient *c = connect_ok(&cfg);
  expect_text(c, "v6", "6v");
  gl_qclient_del(c);
  cfg.pin_sha256 = NULL;
  cfg.ca_file = g_cert; /* ::1 is an IP SAN */
  c = connect_ok(&cfg);
  expect_text(c, "v6", "6v");
  gl_qclient_del(c);
  server_stop(fx);
}

static void test_insecure_and_wrong_pin(void **state) {
  (void)state;
  server_fx *fx = server_start(NULL);
  gl_qclient_config cfg = pin_config(fx->port);
  cfg.pin_sha256 = NULL;
  cfg.insecure = true;
  gl_qclient *c = connect_ok(&cfg);
  expect_text(c, "xyz", "zyx");
  gl_qclient_del(c);

  char bad[GL_TLS_FP_HEX_LEN];
  memcpy(bad, g_fp, sizeof bad);
  bad[10] = bad[10] == '0' ? '1' : '0';
  cfg = pin_config(fx->port);
  cfg.pin_sha256 = bad;
  char err[512] = "";
  c = NULL;
  assert_int_equal(gl_qclient_connect(&cfg, &c, err, sizeof err), GL_QC_TLS);
  assert_null(c);
  assert_non_null(strstr(err, "certificate fingerprint mismatch: expected "));
  assert_non_null(strstr(err, bad));
  assert_non_null(strstr(err, g_fp));

  cfg.pin_sha256 = "not-a-fingerprint";
  assert_int_equal(gl_qclient_connect(&cfg, &c, err, sizeof err), GL_QC_INVALID);
  /* The server dropped the failed handshakes. */
  assert_true(wait_count(fx, 0, 5000));
  server_stop(fx);
}

static void test_nothing_listening(void **state) {
  (void)state;
  gl_qclient_config cfg = pin_config(unused_udp_port());
  cfg.timeout_ms = 1500;
  gl_qclient *c = NULL;
  char err[512] = "";
  uint64_t t0 = gl_mono_ns();
  assert_int_equal(gl_qclient_connect(&cfg, &c, err, sizeof err), GL_QC_UNREACHABLE);
  uint64_t elapsed_ms = (gl_mono_ns() - t0) / 1000000;
  assert_null(c);
  assert_true(err[0] != 0);
  assert_true(elapsed_ms <= 1500 + 500);

  cfg.host = "no-such-host.invalid";
  assert_int_equal(gl_qclient_connect(&cfg, &c, err, sizeof err), GL_QC_UNREACHABLE);
  cfg.host = "";
  assert_int_equal(gl_qclient_connect(&cfg, &c, err, sizeof err), GL_QC_INVALID);
}

static void test_connection_budget(void **state) {
  (void)state;
  server_opts o = {.max_connections = 2};
  server_fx *fx = server_start(&o);
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *a = connect_ok(&cfg), *b = connect_ok(&cfg), *c = NULL;
  char err[512] = "";
  cfg.timeout_ms = 3000;
  assert_int_equal(gl_qclient_connect(&cfg, &c, err, sizeof err), GL_QC_UNREACHABLE);
  assert_non_null(strstr(err, "refused"));
  expect_text(a, "12", "21");
  gl_qclient_del(a);
  gl_qclient_del(b);
  assert_true(wait_count(fx, 0, 5000));
  server_stop(fx);
}

/* ======================================================================
 * Messages
 * ==================================================================== */

static void test_big_roundtrip(void **state) {
  (void)state;
  server_fx *fx = server_start(NULL);
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *c = connect_ok(&cfg);
  size_t len = 8u << 20;
  uint8_t *msg = malloc(len);
  assert_non_null(msg);
  for (size_t i = 0; i < len; i++) msg[i] = pattern_byte(i * 7 + 3);
  expect_echo(c, msg, len);
  free(msg);

  /* An 8 MiB response to a small request. */
  uint8_t *resp = NULL;
  size_t rlen = 0;
  char err[256];
  const char *req = "SIZE:8388608";
  assert_int_equal(gl_qclient_request(c, (const uint8_t *)req, strlen(req), &resp, &rlen, err,
                                      sizeof err),
                   GL_QC_OK);
  assert_int_equal(rlen, 8u << 20);
  for (size_t i = 0; i < rlen; i++)
    if (resp[i] != pattern_byte(i)) fail_msg("byte %zu differs", i);
  free(resp);
  gl_qclient_del(c);
  server_stop(fx);
}

static void test_too_large(void **state) {
  (void)state;
  server_opts o = {.max_message_bytes = 1u << 20};
  server_fx *fx = server_start(&o);
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *c = connect_ok(&cfg);
  size_t len = 3u << 20;
  uint8_t *msg = calloc(1, len);
  assert_non_null(msg);
  uint8_t *resp = NULL;
  size_t rlen = 0;
  char err[256] = "";
  int rc = gl_qclient_request(c, msg, len, &resp, &rlen, err, sizeof err);
  if (rc) fprintf(stderr, "%s\n", err);
  assert_int_equal(rc, GL_QC_OK);
  char want[64];
  snprintf(want, sizeof want, "TOO_LARGE:%u", 1u << 20);
  assert_int_equal(rlen, strlen(want));
  assert_memory_equal(resp, want, rlen);
  free(resp);
  assert_int_equal(atomic_load(&fx->too_large), 1);
  assert_int_equal(atomic_load(&fx->too_large_len), 1u << 20);
  /* Exactly at the limit is fine. */
  expect_echo(c, msg, 1u << 20);
  /* The connection keeps working. */
  expect_text(c, "after", "retfa");
  assert_int_equal(atomic_load(&fx->too_large), 1);
  free(msg);

  /* The client's own response limit. */
  gl_qclient_del(c);
  cfg.max_response_bytes = 1000;
  c = connect_ok(&cfg);
  rc = gl_qclient_request(c, (const uint8_t *)"SIZE:5000", 9, &resp, &rlen, err, sizeof err);
  assert_int_equal(rc, GL_QC_TOO_LARGE);
  assert_null(resp);
  assert_int_equal(gl_qclient_request(c, (const uint8_t *)"SIZE:3", 6, &resp, &rlen, err,
                                      sizeof err),
                   GL_QC_OK);
  assert_int_equal(rlen, 3);
  assert_memory_equal(resp, "\x00\x83\x06", 3);
  free(resp);
  gl_qclient_del(c);
  server_stop(fx);
}

static void test_sequential_1000(void **state) {
  (void)state;
  server_opts o = {.max_streams = 4};
  server_fx *fx = server_start(&o);
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *c = connect_ok(&cfg);
  uint8_t msg[3000];
  for (size_t i = 0; i < sizeof msg; i++) msg[i] = pattern_byte(i);
  for (int i = 0; i < 1000; i++) expect_echo(c, msg, 1 + (size_t)(i * 37) % sizeof msg);
  assert_int_equal(atomic_load(&fx->requests), 1000);
  gl_qclient_del(c);
  server_stop(fx);
}

typedef struct worker_arg {
  uint16_t port;
  int id;
  atomic_int *ok;
} worker_arg;

static void *worker_main(void *p) {
  worker_arg *a = p;
  gl_qclient_config cfg = pin_config(a->port);
  gl_qclient *c = NULL;
  char err[512];
  if (gl_qclient_connect(&cfg, &c, err, sizeof err) != GL_QC_OK) {
    fprintf(stderr, "worker %d: %s\n", a->id, err);
    return NULL;
  }
  for (int i = 0; i < 20; i++) {
    char req[64];
    int n = snprintf(req, sizeof req, "worker %d request %d %s", a->id, i, "padding");
    uint8_t *resp = NULL;
    size_t rlen = 0;
    if (gl_qclient_request(c, (const uint8_t *)req, (size_t)n, &resp, &rlen, err, sizeof err) !=
        GL_QC_OK) {
      fprintf(stderr, "worker %d: %s\n", a->id, err);
      break;
    }
    bool good = rlen == (size_t)n;
    for (size_t k = 0; good && k < rlen; k++) good = resp[k] == (uint8_t)req[n - 1 - (int)k];
    free(resp);
    if (!good) break;
    atomic_fetch_add(a->ok, 1);
  }
  gl_qclient_del(c);
  return NULL;
}

static void test_concurrent_clients(void **state) {
  (void)state;
  server_fx *fx = server_start(NULL);
  enum { NT = 50 };
  pthread_t th[NT];
  worker_arg args[NT];
  atomic_int ok = 0;
  for (int i = 0; i < NT; i++) {
    args[i] = (worker_arg){.port = fx->port, .id = i, .ok = &ok};
    assert_int_equal(pthread_create(&th[i], NULL, worker_main, &args[i]), 0);
  }
  for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
  assert_int_equal(atomic_load(&ok), NT * 20);
  assert_true(wait_count(fx, 0, 5000));
  server_stop(fx);
}

static void test_deferred_and_orphaned(void **state) {
  (void)state;
  server_fx *fx = server_start(NULL);
  gl_qclient_config cfg = pin_config(fx->port);

  /* A slow reply to a patient client arrives, not orphaned. */
  gl_qclient *c = connect_ok(&cfg);
  expect_text(c, "DEFER:300", "LATE");
  assert_int_equal(atomic_load(&fx->deferred_fired), 1);
  assert_int_equal(atomic_load(&fx->deferred_orphaned), 0);

  /* The client gives up first; the connection stays usable. */
  gl_qclient_del(c);
  cfg.timeout_ms = 500;
  c = connect_ok(&cfg);
  uint8_t *resp = NULL;
  size_t rlen = 0;
  char err[256];
  assert_int_equal(gl_qclient_request(c, (const uint8_t *)"DEFER:1500", 10, &resp, &rlen, err,
                                      sizeof err),
                   GL_QC_TIMEOUT);
  assert_null(resp);
  expect_text(c, "ok", "ko");
  /* ... and then disconnects while the request is still held. */
  assert_int_equal(gl_qclient_request(c, (const uint8_t *)"DEFER:1200", 10, &resp, &rlen, err,
                                      sizeof err),
                   GL_QC_TIMEOUT);
  gl_qclient_del(c);
  assert_true(wait_int(&fx->deferred_fired, 3, 5000));
  assert_int_equal(atomic_load(&fx->deferred_orphaned), 2);
  assert_true(wait_count(fx, 0, 5000));

  /* A request still held when the server shuts down is answered by the
   * stop handler (replies to orphans just free them). */
  c = connect_ok(&cfg);
  assert_int_equal(gl_qclient_request(c, (const uint8_t *)"DEFER:60000", 11, &resp, &rlen, err,
                                      sizeof err),
                   GL_QC_TIMEOUT);
  server_stop(fx);
  gl_qclient_del(c);
}

/* Keep-alive holds a connection open through a reply slower than the idle
 * timeout; an idle connection closes and then reports why. */
static void test_idle_and_keepalive(void **state) {
  (void)state;
  server_opts o = {.idle_timeout_ms = 800};
  server_fx *fx = server_start(&o);
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *c = connect_ok(&cfg);
  expect_text(c, "DEFER:2000", "LATE");
  assert_int_equal(atomic_load(&fx->deferred_orphaned), 0);
  sleep_ms(2500); /* nobody talks: both sides time out */
  uint8_t *resp = NULL;
  size_t rlen = 0;
  char err[256] = "";
  assert_int_equal(gl_qclient_request(c, (const uint8_t *)"x", 1, &resp, &rlen, err, sizeof err),
                   GL_QC_UNREACHABLE);
  assert_non_null(strstr(err, "idle"));
  gl_qclient_del(c);
  assert_true(wait_count(fx, 0, 3000));
  server_stop(fx);
}

/* Garbage at the server port must not crash it or leak. */
static void test_garbage_datagrams(void **state) {
  (void)state;
  server_fx *fx = server_start(NULL);
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in to = {.sin_family = AF_INET,
                           .sin_port = htons(fx->port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  assert_int_equal(connect(fd, (struct sockaddr *)&to, sizeof to), 0);
  uint8_t buf[1500];
  unsigned seed = 12345;
  for (int i = 0; i < 3000; i++) {
    size_t len = 1 + (size_t)rand_r(&seed) % sizeof buf;
    for (size_t k = 0; k < len; k++) buf[k] = (uint8_t)rand_r(&seed);
    switch (i % 5) {
    case 0: /* looks like a client Initial: long header, v1, 8..20 byte DCID */
      len = 1200 + (size_t)rand_r(&seed) % 300;
      buf[0] = 0xc0 | (buf[0] & 0x0f);
      buf[1] = 0, buf[2] = 0, buf[3] = 0, buf[4] = 1;
      buf[5] = (uint8_t)(8 + rand_r(&seed) % 13);
      break;
    case 1: /* unknown version: version negotiation */
      len = 1200;
      buf[0] |= 0x80;
      buf[1] = 0x1a, buf[2] = 0x2a, buf[3] = 0x3a, buf[4] = 0x4a;
      buf[5] = 8;
      buf[14] = 8;
      break;
    case 2: /* short header */
      buf[0] = 0x40 | (buf[0] & 0x3f);
      break;
    default:
      break;
    }
    (void)send(fd, buf, len, 0);
    if (i % 200 == 0) sleep_ms(5);
  }
  close(fd);
  /* Still serving. */
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *c = connect_ok(&cfg);
  expect_text(c, "still alive", "evila llits");
  gl_qclient_del(c);
  assert_true(wait_count(fx, 0, 8000));
  server_stop(fx);
}

static void test_server_shutdown(void **state) {
  (void)state;
  server_fx *fx = server_start(NULL);
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *c = connect_ok(&cfg);
  expect_text(c, "1", "1");
  server_stop(fx);
  uint8_t *resp = NULL;
  size_t rlen = 0;
  char err[256] = "";
  assert_int_equal(gl_qclient_request(c, (const uint8_t *)"x", 1, &resp, &rlen, err, sizeof err),
                   GL_QC_UNREACHABLE);
  fprintf(stderr, "after shutdown: %s\n", err);
  assert_non_null(strstr(err, "closed"));
  /* Dead stays dead, with the same reason. */
  assert_int_equal(gl_qclient_request(c, (const uint8_t *)"x", 1, &resp, &rlen, err, sizeof err),
                   GL_QC_UNREACHABLE);
  gl_qclient_del(c);
}

/* ======================================================================
 * Overload and abuse protection
 * ==================================================================== */

static struct sockaddr_storage sa(const char *ip);          /* below */
static void fill_random(uint8_t *p, size_t n, uint64_t seed); /* below */

/* Waits up to ms for *v >= want. */
static bool wait_size_min(atomic_size_t *v, size_t want, unsigned ms) {
  for (unsigned t = 0; t < ms; t += 10) {
    if (atomic_load(v) >= want) return true;
    sleep_ms(10);
  }
  return atomic_load(v) >= want;
}

/* A UDP socket bound to from (an IPv4 literal, any port) and connected to
 * 127.0.0.1 port; -1 when from cannot be bound. */
static int raw_socket_from(const char *from, uint16_t port) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  struct sockaddr_in me = {.sin_family = AF_INET};
  assert_int_equal(inet_pton(AF_INET, from, &me.sin_addr), 1);
  if (bind(fd, (struct sockaddr *)&me, sizeof me) != 0) {
    close(fd);
    return -1;
  }
  struct sockaddr_in to = {.sin_family = AF_INET,
                           .sin_port = htons(port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  assert_int_equal(connect(fd, (struct sockaddr *)&to, sizeof to), 0);
  return fd;
}

/* One datagram within ms: its length, or -1. */
static ssize_t raw_recv(int fd, uint8_t *buf, size_t cap, unsigned ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  if (poll(&p, 1, (int)ms) != 1) return -1;
  return recv(fd, buf, cap, 0);
}

/* A client Initial of 1200 bytes in pkt: long header, version 1, dcid, an
 * 8-byte scid, the token (none when tokenlen is 0), then a junk payload
 * (the server can read the header, not the packet). Its length. */
static size_t craft_initial(uint8_t pkt[1200], const uint8_t *dcid, size_t dcidlen,
                            const uint8_t scid[8], const uint8_t *token, size_t tokenlen) {
  size_t n = 0;
  pkt[n++] = 0xc3; /* long header, fixed bit, Initial, 4-byte packet number */
  pkt[n++] = 0, pkt[n++] = 0, pkt[n++] = 0, pkt[n++] = 1;
  pkt[n++] = (uint8_t)dcidlen;
  memcpy(pkt + n, dcid, dcidlen);
  n += dcidlen;
  pkt[n++] = 8;
  memcpy(pkt + n, scid, 8);
  n += 8;
  pkt[n++] = (uint8_t)(0x40 | (tokenlen >> 8)); /* 2-byte varints */
  pkt[n++] = (uint8_t)tokenlen;
  if (tokenlen) memcpy(pkt + n, token, tokenlen);
  n += tokenlen;
  size_t rest = 1200 - n - 2;
  pkt[n++] = (uint8_t)(0x40 | (rest >> 8));
  pkt[n++] = (uint8_t)rest;
  for (size_t i = 0; i < rest; i++) pkt[n++] = (uint8_t)(i * 7 + 1);
  return n;
}

/* Takes a Retry answering an Initial whose SCID was scid: the Retry's
 * SCID (rscid, *rscidlen) and token (into token, *tokenlen). False when
 * pkt is no such Retry. */
static bool parse_retry(const uint8_t *pkt, size_t len, const uint8_t scid[8], uint8_t *rscid,
                        size_t *rscidlen, uint8_t *token, size_t *tokenlen) {
  if (len < 7 || (pkt[0] & 0xf0) != 0xf0 || memcmp(pkt + 1, "\0\0\0\1", 4) != 0) return false;
  size_t n = 5, dl = pkt[n++];
  if (dl != 8 || n + dl >= len || memcmp(pkt + n, scid, 8) != 0) return false;
  n += dl;
  size_t sl = pkt[n++];
  if (sl == 0 || sl > 20 || n + sl + 16 >= len) return false;
  memcpy(rscid, pkt + n, sl);
  *rscidlen = sl;
  n += sl;
  *tokenlen = len - n - 16; /* then the integrity tag */
  memcpy(token, pkt + n, *tokenlen);
  return true;
}

/* With always_retry every client proves its address first; ours follows
 * the Retry (ngtcp2's recv_retry) and works as ever. */
static void test_retry_always(void **state) {
  (void)state;
  server_opts o = {.always_retry = true};
  server_fx *fx = server_start(&o);
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *c = connect_ok(&cfg);
  expect_text(c, "retry me", "em yrter");
  assert_true(wait_size_min(&fx->retries, 1, 2000));
  gl_qclient *d = connect_ok(&cfg);
  expect_text(d, "and me", "em dna");
  expect_text(c, "still", "llits");
  assert_true(wait_size_min(&fx->retries, 2, 2000));
  assert_int_equal(atomic_load(&fx->tokens_refused), 0);
  gl_qclient_del(c);
  gl_qclient_del(d);
  assert_true(wait_count(fx, 0, 5000));
  server_stop(fx);
}

/* The token helpers: a token holds for its address (and port), its
 * connection ID and 10 s; nothing else passes. */
static void test_retry_token_helper(void **state) {
  (void)state;
  uint8_t secret[GL_Q_RETRY_SECRET_LEN], other[GL_Q_RETRY_SECRET_LEN];
  assert_int_equal(gl_q_random(secret, sizeof secret), 0);
  assert_int_equal(gl_q_random(other, sizeof other), 0);
  struct sockaddr_storage a = sa("127.0.0.1"), a_port = a, b = sa("127.0.0.2"), v6 = sa("::1");
  ((struct sockaddr_in *)&a)->sin_port = htons(4000);
  ((struct sockaddr_in *)&a_port)->sin_port = htons(4001);
  ((struct sockaddr_in *)&b)->sin_port = htons(4000);
  ((struct sockaddr_in6 *)&v6)->sin6_port = htons(4000);
  const socklen_t l4 = sizeof(struct sockaddr_in), l6 = sizeof(struct sockaddr_in6);
  ngtcp2_cid odcid = {.datalen = 16}, rscid = {.datalen = GL_Q_SCID_LEN}, got, wrong = rscid;
  assert_int_equal(gl_q_random(odcid.data, odcid.datalen), 0);
  assert_int_equal(gl_q_random(rscid.data, rscid.datalen), 0);
  wrong = rscid;
  wrong.data[0] ^= 1;
  uint64_t now = gl_q_now_ns();
  uint8_t tok[GL_Q_RETRY_TOKEN_MAX];
  ngtcp2_ssize n = gl_q_retry_token_make(tok, secret, NGTCP2_PROTO_VER_V1,
                                         (struct sockaddr *)&a, l4, &rscid, &odcid, now);
  assert_true(n > 0 && (size_t)n <= sizeof tok);
  size_t len = (size_t)n;
  const struct sockaddr *pa = (struct sockaddr *)&a;
  uint32_t v1 = NGTCP2_PROTO_VER_V1;
  memset(&got, 0, sizeof got);
  assert_int_equal(gl_q_retry_token_check(&got, tok, len, secret, v1, pa, l4, &rscid, now), 0);
  assert_true(ngtcp2_cid_eq(&got, &odcid));
  assert_int_equal(gl_q_retry_token_check(&got, tok, len, secret, v1, pa, l4, &rscid,
                                          now + 9 * NGTCP2_SECONDS),
                   0);
  /* Expired. */
  assert_int_equal(gl_q_retry_token_check(&got, tok, len, secret, v1, pa, l4, &rscid,
                                          now + GL_Q_RETRY_TOKEN_TIMEOUT_NS + 1),
                   -1);
  /* Another port, another address, another family. */
  assert_int_equal(gl_q_retry_token_check(&got, tok, len, secret, v1,
                                          (struct sockaddr *)&a_port, l4, &rscid, now),
                   -1);
  assert_int_equal(gl_q_retry_token_check(&got, tok, len, secret, v1, (struct sockaddr *)&b, l4,
                                          &rscid, now),
                   -1);
  assert_int_equal(gl_q_retry_token_check(&got, tok, len, secret, v1, (struct sockaddr *)&v6, l6,
                                          &rscid, now),
                   -1);
  /* Another connection ID, secret (another server, or a restart). */
  assert_int_equal(gl_q_retry_token_check(&got, tok, len, secret, v1, pa, l4, &wrong, now), -1);
  assert_int_equal(gl_q_retry_token_check(&got, tok, len, other, v1, pa, l4, &rscid, now), -1);
  /* Altered, cut short, forged, empty. */
  for (size_t i = 1; i < len; i += 7) {
    tok[i] ^= 0x10;
    assert_int_equal(gl_q_retry_token_check(&got, tok, len, secret, v1, pa, l4, &rscid, now),
                     -1);
    tok[i] ^= 0x10;
  }
  assert_int_equal(gl_q_retry_token_check(&got, tok, len - 1, secret, v1, pa, l4, &rscid, now),
                   -1);
  uint8_t forged[GL_Q_RETRY_TOKEN_MAX];
  fill_random(forged, len, 99);
  forged[0] = NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY;
  assert_int_equal(gl_q_retry_token_check(&got, forged, len, secret, v1, pa, l4, &rscid, now),
                   -1);
  assert_int_equal(gl_q_retry_token_check(&got, tok, 0, secret, v1, pa, l4, &rscid, now), -1);
  /* Still good after all that. */
  assert_int_equal(gl_q_retry_token_check(&got, tok, len, secret, v1, pa, l4, &rscid, now), 0);
}

/* On the wire: a Retry's token brings a connection only from the address
 * (and port) it was sent to; replayed from elsewhere, altered or forged,
 * the Initial is refused (INVALID_TOKEN) and no connection is made. */
static void test_retry_token_packets(void **state) {
  (void)state;
  server_opts o = {.always_retry = true};
  server_fx *fx = server_start(&o);
  int a = raw_socket_from("127.0.0.1", fx->port);
  int other_port = raw_socket_from("127.0.0.1", fx->port);
  int other_ip = raw_socket_from("127.0.0.2", fx->port); /* -1 without 127/8 */
  assert_true(a >= 0 && other_port >= 0);
  uint8_t dcid[16], scid[8], pkt[1200], in[2048];
  fill_random(dcid, sizeof dcid, 1);
  fill_random(scid, sizeof scid, 2);

  /* No token: a Retry (always_retry). */
  size_t n = craft_initial(pkt, dcid, sizeof dcid, scid, NULL, 0);
  assert_int_equal(send(a, pkt, n, 0), (ssize_t)n);
  ssize_t r = raw_recv(a, in, sizeof in, 3000);
  assert_true(r > 0);
  uint8_t rscid[20], tok[512];
  size_t rscidlen = 0, toklen = 0;
  assert_true(parse_retry(in, (size_t)r, scid, rscid, &rscidlen, tok, &toklen));
  assert_true(toklen > 0 && tok[0] == NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY);
  assert_true(wait_size(&fx->retries, 1, 2000));

  /* Each refused Initial: answered with an Initial (CONNECTION_CLOSE), not
   * a Retry, and counted. */
  size_t refused = 0;
#define EXPECT_REFUSED(fd)                                                                 \
  do {                                                                                      \
    assert_int_equal(send(fd, pkt, n, 0), (ssize_t)n);                                      \
    r = raw_recv(fd, in, sizeof in, 3000);                                                  \
    assert_true(r > 0);                                                                     \
    assert_int_equal(in[0] & 0xf0, 0xc0); /* long header Initial */                         \
    assert_true(wait_size(&fx->tokens_refused, ++refused, 2000));                           \
  } while (0)

  n = craft_initial(pkt, rscid, rscidlen, scid, tok, toklen);
  EXPECT_REFUSED(other_port); /* replayed from another port */
  if (other_ip >= 0) EXPECT_REFUSED(other_ip); /* from another address */
  tok[toklen / 2] ^= 1;                        /* altered */
  n = craft_initial(pkt, rscid, rscidlen, scid, tok, toklen);
  EXPECT_REFUSED(a);
  tok[toklen / 2] ^= 1;
  uint8_t forged[512];
  fill_random(forged, toklen, 3);
  forged[0] = NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY;
  n = craft_initial(pkt, rscid, rscidlen, scid, forged, toklen);
  EXPECT_REFUSED(a);
  uint8_t wrong[20];
  memcpy(wrong, rscid, rscidlen);
  wrong[0] ^= 1; /* the token was made for the Retry's connection ID */
  n = craft_initial(pkt, wrong, rscidlen, scid, tok, toklen);
  EXPECT_REFUSED(a);
  assert_int_equal(atomic_load(&fx->retries), 1);

  /* The genuine token from its own address passes: neither refused nor
   * sent another Retry (the server makes a connection, which our junk
   * payload ends at once). A forged one after it shows it was handled. */
  n = craft_initial(pkt, rscid, rscidlen, scid, tok, toklen);
  assert_int_equal(send(a, pkt, n, 0), (ssize_t)n);
  n = craft_initial(pkt, rscid, rscidlen, scid, forged, toklen);
  assert_int_equal(send(a, pkt, n, 0), (ssize_t)n);
  assert_true(wait_size(&fx->tokens_refused, ++refused, 2000));
  assert_int_equal(atomic_load(&fx->retries), 1);
#undef EXPECT_REFUSED

  close(a);
  close(other_port);
  if (other_ip >= 0) close(other_ip);
  assert_true(wait_count(fx, 0, 8000));
  /* The server still serves. */
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *c = connect_ok(&cfg);
  expect_text(c, "ok", "ko");
  gl_qclient_del(c);
  server_stop(fx);
}

/* max_connections_per_address: the third connection from 127.0.0.1 is
 * refused while two are open; once one closes, a new one gets in. */
static void test_connections_per_address(void **state) {
  (void)state;
  server_opts o = {.max_connections_per_address = 2};
  server_fx *fx = server_start(&o);
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *a = connect_ok(&cfg), *b = connect_ok(&cfg), *c = NULL;
  assert_true(wait_size(&fx->from_local, 2, 2000));
  char err[512] = "";
  cfg.timeout_ms = 3000;
  assert_int_equal(gl_qclient_connect(&cfg, &c, err, sizeof err), GL_QC_UNREACHABLE);
  assert_null(c);
  fprintf(stderr, "third connection: %s\n", err);
  assert_non_null(strstr(err, "refused the connection"));
  assert_non_null(strstr(err, "CONNECTION_REFUSED"));
  assert_non_null(strstr(err, "from this address"));
  expect_text(a, "a", "a");
  expect_text(b, "bc", "cb");

  /* Another address is counted apart (IPv6 loopback, where there is one). */
  int probe = socket(AF_INET6, SOCK_DGRAM, 0);
  struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
  bool have_v6 = probe >= 0 && bind(probe, (struct sockaddr *)&a6, sizeof a6) == 0;
  if (probe >= 0) close(probe);
  if (have_v6) {
    gl_qclient_config cfg6 = cfg;
    cfg6.host = "::1";
    gl_qclient *d = connect_ok(&cfg6);
    expect_text(d, "v6", "6v");
    gl_qclient_del(d);
  }

  gl_qclient_del(a);
  assert_true(wait_size(&fx->from_local, 1, 5000));
  c = connect_ok(&cfg);
  expect_text(c, "again", "niaga");
  expect_text(b, "b", "b");
  assert_true(wait_size(&fx->from_local, 2, 2000));
  gl_qclient_del(b);
  gl_qclient_del(c);
  assert_true(wait_count(fx, 0, 5000));
  assert_true(wait_size(&fx->from_local, 0, 5000));
  server_stop(fx);
}

typedef struct burst_arg {
  uint16_t port;
  int id;
  atomic_int *ok;
  pthread_barrier_t *go;
} burst_arg;

/* Connects once all threads are ready, then asks 3 requests. */
static void *burst_main(void *p) {
  burst_arg *a = p;
  gl_qclient_config cfg = pin_config(a->port);
  gl_qclient *c = NULL;
  char err[512];
  pthread_barrier_wait(a->go);
  if (gl_qclient_connect(&cfg, &c, err, sizeof err) != GL_QC_OK) {
    fprintf(stderr, "burst client %d: %s\n", a->id, err);
    return NULL;
  }
  for (int i = 0; i < 3; i++) {
    char req[64];
    int n = snprintf(req, sizeof req, "burst %d request %d", a->id, i);
    uint8_t *resp = NULL;
    size_t rlen = 0;
    if (gl_qclient_request(c, (const uint8_t *)req, (size_t)n, &resp, &rlen, err, sizeof err) !=
        GL_QC_OK) {
      fprintf(stderr, "burst client %d: %s\n", a->id, err);
      break;
    }
    bool good = rlen == (size_t)n;
    for (size_t k = 0; good && k < rlen; k++) good = resp[k] == (uint8_t)req[n - 1 - (int)k];
    free(resp);
    if (!good) break;
    atomic_fetch_add(a->ok, 1);
  }
  gl_qclient_del(c);
  return NULL;
}

/* nt clients connect at once; the number of requests answered right. */
static int connect_burst(uint16_t port, int nt) {
  pthread_t th[32];
  burst_arg args[32];
  assert_true(nt <= 32);
  atomic_int ok = 0;
  pthread_barrier_t go;
  assert_int_equal(pthread_barrier_init(&go, NULL, (unsigned)nt), 0);
  for (int i = 0; i < nt; i++) {
    args[i] = (burst_arg){.port = port, .id = i, .ok = &ok, .go = &go};
    assert_int_equal(pthread_create(&th[i], NULL, burst_main, &args[i]), 0);
  }
  for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&go);
  return atomic_load(&ok);
}

/* retry_above_handshakes: at the default (64) a burst of 16 connects needs
 * no Retry (with as many allowed from one address); at 1, those that come
 * while another handshake is under way get one, and every client still
 * connects. */
static void test_retry_threshold(void **state) {
  (void)state;
  enum { NT = 16 };
  server_opts o16 = {.retry_above_address_handshakes = NT};
  server_fx *fx = server_start(&o16);
  assert_int_equal(connect_burst(fx->port, NT), NT * 3);
  sleep_ms(60); /* a stats round */
  assert_int_equal(atomic_load(&fx->retries), 0);
  assert_true(wait_count(fx, 0, 5000));
  server_stop(fx);

  server_opts o = {.retry_above_handshakes = 1, .retry_above_address_handshakes = NT};
  fx = server_start(&o);
  /* A burst almost always overlaps; a few more make it certain. */
  for (int round = 0; round < 5 && atomic_load(&fx->retries) == 0; round++) {
    assert_int_equal(connect_burst(fx->port, NT), NT * 3);
    wait_size_min(&fx->retries, 1, 100);
  }
  fprintf(stderr, "threshold 1: %zu Retries for bursts of %d\n", atomic_load(&fx->retries), NT);
  assert_true(atomic_load(&fx->retries) > 0);
  assert_int_equal(atomic_load(&fx->tokens_refused), 0);
  assert_true(wait_count(fx, 0, 5000));
  server_stop(fx);
}

typedef struct hs_client_arg {
  uint16_t port;
  int rc;
} hs_client_arg;

static void *hs_client_main(void *p) {
  hs_client_arg *a = p;
  gl_qclient_config cfg = pin_config(a->port);
  cfg.timeout_ms = 1500;
  gl_qclient *c = NULL;
  char err[512];
  a->rc = gl_qclient_connect(&cfg, &c, err, sizeof err);
  gl_qclient_del(c);
  return NULL;
}

/* A connection whose handshake stalls (the client's first datagram
 * arrives, nothing after it) is dropped after handshake_timeout_ms, long
 * before the idle timeout (5 s here). */
static void test_handshake_timeout(void **state) {
  (void)state;
  server_opts o = {.handshake_timeout_ms = 500};
  server_fx *fx = server_start(&o);
  /* The client talks to a socket of ours; its first datagram (a real
   * Initial) goes on to the server, whose answers go nowhere. */
  int trap = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  assert_true(trap >= 0);
  struct sockaddr_in t = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  assert_int_equal(bind(trap, (struct sockaddr *)&t, sizeof t), 0);
  socklen_t tl = sizeof t;
  assert_int_equal(getsockname(trap, (struct sockaddr *)&t, &tl), 0);
  hs_client_arg arg = {.port = ntohs(t.sin_port), .rc = 0};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, hs_client_main, &arg), 0);
  uint8_t dgram[65536];
  ssize_t n = raw_recv(trap, dgram, sizeof dgram, 3000);
  assert_true(n >= 1200);
  int fwd = raw_socket_from("127.0.0.1", fx->port);
  assert_true(fwd >= 0);
  uint64_t t0 = gl_mono_ns();
  assert_int_equal(send(fwd, dgram, (size_t)n, 0), n);
  assert_true(wait_count(fx, 1, 1000)); /* in its handshake */
  assert_true(wait_size(&fx->hs_local, 1, 1000));
  assert_int_equal(atomic_load(&fx->handshakes), 1);
  /* Not a connection of its address's (max_connections_per_address). */
  assert_int_equal(atomic_load(&fx->from_local), 0);
  assert_true(wait_count(fx, 0, 4000));
  uint64_t ms = (gl_mono_ns() - t0) / 1000000;
  fprintf(stderr, "stalled handshake dropped after %llu ms\n", (unsigned long long)ms);
  assert_true(ms >= 400 && ms < 3000);
  assert_true(wait_size(&fx->hs_local, 0, 1000));
  assert_int_equal(atomic_load(&fx->handshakes), 0);
  pthread_join(th, NULL);
  assert_int_equal(arg.rc, GL_QC_UNREACHABLE);
  close(fwd);
  close(trap);
  server_stop(fx);
}

/* Waits up to ms for *v <= want. */
static bool wait_size_max(atomic_size_t *v, size_t want, unsigned ms) {
  for (unsigned t = 0; t < ms; t += 10) {
    if (atomic_load(v) <= want) return true;
    sleep_ms(10);
  }
  return atomic_load(v) <= want;
}

/* Issue 30: Initials that never finish (real first flights, from one
 * address) hold at most retry_above_address_handshakes connections, the
 * rest get a Retry; they count against no completed-connection limit, so
 * clients from the same address that answer the Retry still get their
 * max_connections_per_address; and the half-open ones go at the handshake
 * timeout. With Retry off the surplus is dropped, unanswered. */
static void test_initial_flood_per_address(void **state) {
  (void)state;
  enum { FLOOD = 200, PER_IP_HS = 4 };
  server_opts o = {.listen_host = "127.0.0.1", .max_connections_per_address = 2,
                   .retry_above_address_handshakes = PER_IP_HS, .handshake_timeout_ms = 1500};
  server_fx *fx = server_start(&o);
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(fx->port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  struct sockaddr_in from = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  uint64_t t0 = gl_mono_ns();
  assert_int_equal(gl_test_initial_flood((struct sockaddr *)&to, sizeof to,
                                         (struct sockaddr *)&from, FLOOD, 8, 25),
                   FLOOD);
  /* Each Initial past the first PER_IP_HS got a Retry (the kernel might
   * drop a few of the flood on a loaded machine). */
  wait_size_min(&fx->retries, FLOOD - PER_IP_HS, 3000);
  fprintf(stderr, "flood of %d: %zu Retries\n", FLOOD, atomic_load(&fx->retries));
  assert_true(atomic_load(&fx->retries) <= FLOOD - PER_IP_HS);
  assert_true(atomic_load(&fx->retries) >= FLOOD / 2);
  assert_true(wait_size(&fx->hs_local, PER_IP_HS, 1000));
  assert_int_equal(atomic_load(&fx->conn_count), PER_IP_HS);
  assert_int_equal(atomic_load(&fx->from_local), 0);

  /* Two clients from the address answer the Retry and get in; a third is
   * refused for the two completed ones, not for the half-open ones. */
  gl_qclient_config cfg = pin_config(fx->port);
  cfg.host = "127.0.0.1";
  gl_qclient *a = connect_ok(&cfg), *b = connect_ok(&cfg), *c = NULL;
  fprintf(stderr, "flood of %d: two clients in after %llu ms\n", FLOOD,
          (unsigned long long)((gl_mono_ns() - t0) / 1000000));
  expect_text(a, "a", "a");
  expect_text(b, "ab", "ba");
  assert_true(wait_size(&fx->from_local, 2, 1000));
  char err[512] = "";
  cfg.timeout_ms = 3000;
  assert_int_equal(gl_qclient_connect(&cfg, &c, err, sizeof err), GL_QC_UNREACHABLE);
  assert_non_null(strstr(err, "from this address"));
  /* The half-open ones go at the handshake timeout; the clients stay. */
  assert_true(wait_size(&fx->hs_local, 0, 4000));
  assert_true(wait_count(fx, 2, 1000));
  expect_text(a, "still", "llits");
  gl_qclient_del(a);
  gl_qclient_del(b);
  assert_true(wait_count(fx, 0, 5000));
  gl_test_flood_close();
  server_stop(fx);

  /* Retry off: the surplus is dropped (no Retry, no connection). */
  server_opts off = o;
  off.retry_above_handshakes = UINT32_MAX;
  fx = server_start(&off);
  to.sin_port = htons(fx->port);
  assert_int_equal(gl_test_initial_flood((struct sockaddr *)&to, sizeof to,
                                         (struct sockaddr *)&from, 50, 8, 25),
                   50);
  assert_true(wait_size(&fx->hs_local, PER_IP_HS, 2000));
  sleep_ms(100);
  assert_int_equal(atomic_load(&fx->conn_count), PER_IP_HS);
  assert_int_equal(atomic_load(&fx->retries), 0);
  assert_true(wait_size_max(&fx->hs_local, 0, 4000));
  gl_test_flood_close();
  server_stop(fx);
}

/* ======================================================================
 * Pipelined requests
 * ==================================================================== */

/* Request number i, len bytes (at least 24): "req <i>:" then a pattern
 * that depends on i. */
static size_t make_req(uint8_t *buf, int i, size_t len) {
  int n = snprintf((char *)buf, len, "req %d:", i);
  assert_true(n > 0 && (size_t)n < len);
  for (size_t k = (size_t)n; k < len; k++) buf[k] = pattern_byte(k * 3 + (size_t)i);
  return len;
}

static uint64_t send_ok(gl_qclient *c, const void *msg, size_t len) {
  uint64_t tok = 0;
  char err[512] = "";
  int rc = gl_qclient_send(c, msg, len, &tok, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "send: %d %s\n", rc, err);
  assert_int_equal(rc, GL_QC_OK);
  assert_true(tok != 0);
  return tok;
}

static uint64_t send_text(gl_qclient *c, const char *msg) { return send_ok(c, msg, strlen(msg)); }

/* Waits for tok and expects exactly want. */
static void wait_bytes(gl_qclient *c, uint64_t tok, const void *want, size_t len) {
  uint8_t *resp = NULL;
  size_t rlen = 0;
  char err[512] = "";
  int rc = gl_qclient_wait(c, tok, &resp, &rlen, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "wait %llu: %d %s\n", (unsigned long long)tok, rc, err);
  assert_int_equal(rc, GL_QC_OK);
  assert_non_null(resp);
  assert_int_equal(rlen, len);
  if (len) assert_memory_equal(resp, want, len);
  free(resp);
}

static void wait_text(gl_qclient *c, uint64_t tok, const char *want) {
  wait_bytes(c, tok, want, strlen(want));
}

/* Waits for tok and expects msg reversed (the echo). */
static void wait_reversed(gl_qclient *c, uint64_t tok, const uint8_t *msg, size_t len) {
  uint8_t *want = malloc(len ? len : 1);
  assert_non_null(want);
  for (size_t i = 0; i < len; i++) want[i] = msg[len - 1 - i];
  wait_bytes(c, tok, want, len);
  free(want);
}

static int wait_rc(gl_qclient *c, uint64_t tok, char *err, size_t errlen) {
  uint8_t *resp = (uint8_t *)"junk";
  size_t rlen = 99;
  int rc = gl_qclient_wait(c, tok, &resp, &rlen, err, errlen);
  if (rc != GL_QC_OK) {
    assert_null(resp);
    assert_int_equal(rlen, 0);
  } else {
    free(resp);
  }
  return rc;
}

/* A 12-byte header declaring body_len, after the 4 bytes of tag. */
static void put_header(uint8_t h[12], const char *tag, uint32_t body_len) {
  memcpy(h, tag, 4);
  memset(h + 4, 'x', 4);
  h[8] = (uint8_t)(body_len >> 24);
  h[9] = (uint8_t)(body_len >> 16);
  h[10] = (uint8_t)(body_len >> 8);
  h[11] = (uint8_t)body_len;
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sends only h (no FIN) and expects want within 1 s. */
static void expect_on_header(gl_qclient *c, const uint8_t h[12], const char *want) {
  uint64_t tok = 0;
  char err[256] = "";
  double t0 = mono_s();
  int rc = gl_qclient_send_open(c, h, 12, &tok, err, sizeof err);
  if (rc) fprintf(stderr, "send_open: %s\n", err);
  assert_int_equal(rc, GL_QC_OK);
  wait_text(c, tok, want);
  assert_true(mono_s() - t0 < 1.0);
}

/* Waits up to 2 s for the server's on_header_end count to reach n. */
static int wait_ended(server_fx *fx, int n) {
  for (int i = 0; i < 200 && atomic_load(&fx->ended) < n; i++) usleep(10000);
  return atomic_load(&fx->ended);
}

/* on_header_end: once for each request on_header let through, with its
 * ticket, when it ends (whole and delivered, reset by the client, or cut
 * by the connection's close); on_header sees the connection's unfinished
 * requests and what their headers declare. */
static void test_header_end(void **state) {
  (void)state;
  server_opts o = {.max_message_bytes = 1u << 20, .header_verdict = true, .max_streams = 16};
  server_fx *fx = server_start(&o);
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *c = connect_ok(&cfg);
  uint8_t h[12];
  uint64_t tok[3];
  char err[256];
  put_header(h, "FINE", 100);
  for (int i = 0; i < 3; i++)
    assert_int_equal(gl_qclient_send_open(c, h, sizeof h, &tok[i], err, sizeof err), GL_QC_OK);
  put_header(h, "CNTU", 0);
  expect_on_header(c, h, "UNF:3:336");
  assert_int_equal(atomic_load(&fx->ended), 0);
  /* One reset: it ends. */
  gl_qclient_cancel(c, tok[0]);
  assert_int_equal(wait_ended(fx, 1), 1);
  expect_on_header(c, h, "UNF:2:224");
  /* A whole one: let through, then delivered (and ended) at once. */
  uint8_t small[16];
  put_header(small, "FINE", 4);
  memcpy(small + 12, "abcd", 4);
  wait_reversed(c, send_ok(c, small, 16), small, 16);
  assert_int_equal(wait_ended(fx, 2), 2);
  expect_on_header(c, h, "UNF:2:224");
  /* The connection closes: the two left end too, each once. */
  gl_qclient_del(c);
  assert_int_equal(wait_ended(fx, 4), 4);
  usleep(100000);
  assert_int_equal(atomic_load(&fx->ended), 4);
  assert_int_equal(atomic_load(&fx->admitted), 4);
  assert_int_equal(atomic_load(&fx->bad_ticket), 0);
  assert_true(atomic_load(&fx->ended_bytes) == 3 * 112 + 16);
  server_stop(fx);
}

/* on_header: a request is answered on its first 12 bytes (no FIN, the body
 * never sent), the rest of one that does come is not read, the connection
 * goes on; headers that pass reach on_request; a stream under 12 bytes is
 * never asked about. */
static void test_header_verdict(void **state) {
  (void)state;
  server_opts o = {.max_message_bytes = 1u << 20, .header_verdict = true};
  server_fx *fx = server_start(&o);
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *c = connect_ok(&cfg);
  uint8_t h[12];

  /* Refused on the header while the body is still to come. */
  put_header(h, "NOPE", 1000);
  expect_on_header(c, h, "REFUSED:1000");
  /* A header declaring 1 GiB: refused, only the header sent. */
  put_header(h, "MEMW", 1u << 30);
  expect_on_header(c, h, "BIG:1073741836");
  /* The limit counts the header: body_len limit - 11 is over it. */
  put_header(h, "MEMW", (1u << 20) - 11);
  expect_on_header(c, h, "BIG:1048577");
  assert_int_equal(atomic_load(&fx->requests), 0);
  assert_int_equal(atomic_load(&fx->headers), 3);

  /* A refused request whose body does come (FIN, 900 KiB): the answer,
   * the body unread, the connection fine. */
  size_t len = 900u << 10;
  uint8_t *msg = calloc(1, len);
  assert_non_null(msg);
  put_header(msg, "NOPE", (uint32_t)(len - 12));
  uint64_t tok = send_ok(c, msg, len);
  wait_text(c, tok, "REFUSED:921588");
  assert_int_equal(atomic_load(&fx->requests), 0);

  /* body_len limit - 12 passes: the whole message is the limit. */
  free(msg);
  len = 1u << 20;
  msg = calloc(1, len);
  assert_non_null(msg);
  put_header(msg, "OKAY", (uint32_t)(len - 12));
  expect_echo(c, msg, len);
  assert_int_equal(atomic_load(&fx->requests), 1);
  free(msg);
  /* Under 12 bytes: no header to judge, delivered whole. */
  expect_text(c, "short", "trohs");
  assert_int_equal(atomic_load(&fx->headers), 5);
  assert_int_equal(atomic_load(&fx->requests), 2);
  /* Many refusals and passes side by side on one connection. */
  uint64_t toks[40];
  uint8_t small[16];
  for (int i = 0; i < 40; i++) {
    put_header(small, i % 2 ? "NOPE" : "FINE", 4);
    memcpy(small + 12, "abcd", 4);
    toks[i] = send_ok(c, small, 16);
  }
  for (int i = 0; i < 40; i++) {
    if (i % 2) {
      wait_text(c, toks[i], "REFUSED:4");
    } else {
      put_header(small, "FINE", 4);
      memcpy(small + 12, "abcd", 4);
      wait_reversed(c, toks[i], small, 16);
    }
  }
  assert_int_equal(atomic_load(&fx->requests), 22);
  gl_qclient_del(c);
  server_stop(fx);
}

/* 500 requests sent before any wait (the server allows 64 streams at a
 * time, so most responses arrive, and their streams close, long before
 * their wait), collected in reverse order. */
static void test_pipeline_500_reverse(void **state) {
  (void)state;
  server_opts o = {.max_streams = 64};
  server_fx *fx = server_start(&o);
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *c = connect_ok(&cfg);
  enum { N = 500 };
  static uint8_t msgs[N][3000];
  size_t lens[N];
  uint64_t toks[N];
  for (int i = 0; i < N; i++) {
    lens[i] = make_req(msgs[i], i, i % 50 == 7 ? 3000 : 24 + (size_t)(i * 37) % 200);
    toks[i] = send_ok(c, msgs[i], lens[i]);
    if (i) assert_true(toks[i] > toks[i - 1]);
    assert_int_equal(gl_qclient_outstanding(c), (size_t)i + 1);
  }
  for (int i = N - 1; i >= 0; i--) {
    wait_reversed(c, toks[i], msgs[i], lens[i]);
    assert_int_equal(gl_qclient_outstanding(c), (size_t)i);
  }
  assert_int_equal(atomic_load(&fx->requests), N);
  assert_false(gl_qclient_dead(c));
  expect_text(c, "after", "retfa");
  gl_qclient_del(c);
  server_stop(fx);
}

/* 2000 requests outstanding at once with a server limit of 256 streams:
 * sending drives the connection (reads, ACKs, MAX_STREAMS) on its own. */
static void test_pipeline_2000_unwaited(void **state) {
  (void)state;
  server_opts o = {.max_streams = 256};
  server_fx *fx = server_start(&o);
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *c = connect_ok(&cfg);
  enum { N = 2000 };
  static uint8_t msgs[N][100];
  uint64_t *toks = calloc(N, sizeof *toks);
  assert_non_null(toks);
  for (int i = 0; i < N; i++) toks[i] = send_ok(c, msgs[i], make_req(msgs[i], i, 100));
  assert_int_equal(gl_qclient_outstanding(c), N);
  for (int i = 0; i < N; i++) wait_reversed(c, toks[i], msgs[i], 100);
  assert_int_equal(gl_qclient_outstanding(c), 0);
  free(toks);
  gl_qclient_del(c);
  server_stop(fx);
}

/* Replies in another order than the requests: each reaches its token. */
static void test_pipeline_out_of_order(void **state) {
  (void)state;
  server_opts o = {.max_streams = 64};
  server_fx *fx = server_start(&o);
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *c = connect_ok(&cfg);
  enum { N = 40 };
  char msgs[N][64], want[N][64];
  uint64_t toks[N];
  for (int i = 0; i < N; i++) {
    char payload[32];
    snprintf(payload, sizeof payload, "payload-%d", i);
    size_t pl = strlen(payload);
    if (i % 3 == 0) /* the earlier sent, the later answered */
      snprintf(msgs[i], sizeof msgs[i], "DELAY:%d:%s", (N - i) * 8, payload);
    else
      snprintf(msgs[i], sizeof msgs[i], "%s", payload);
    for (size_t k = 0; k < pl; k++) want[i][k] = payload[pl - 1 - k];
    want[i][pl] = 0;
    toks[i] = send_text(c, msgs[i]);
  }
  /* In the order sent: the first waits collect the latest replies. */
  for (int i = 0; i < N; i++) wait_text(c, toks[i], want[i]);

  /* Again, waiting in the order the replies come, and then one that the
   * server answers only after the others were all collected. */
  uint64_t slow = send_text(c, "DELAY:300:slow");
  uint64_t mid = send_text(c, "DELAY:150:mid");
  uint64_t fast = send_text(c, "fast");
  wait_text(c, fast, "tsaf");
  wait_text(c, mid, "dim");
  assert_int_equal(gl_qclient_outstanding(c), 1);
  wait_text(c, slow, "wols");
  assert_int_equal(gl_qclient_outstanding(c), 0);
  gl_qclient_del(c);
  server_stop(fx);
}

/* A wait that times out abandons only its own request. */
static void test_pipeline_wait_timeout(void **state) {
  (void)state;
  server_fx *fx = server_start(NULL);
  gl_qclient_config cfg = pin_config(fx->port);
  cfg.timeout_ms = 400;
  gl_qclient *c = connect_ok(&cfg);
  uint64_t stuck = send_text(c, "DEFER:3000");
  uint64_t later = send_text(c, "DELAY:600:later");
  uint64_t now1 = send_text(c, "one");
  uint64_t now2 = send_text(c, "two");
  char err[512] = "";
  uint64_t t0 = gl_mono_ns();
  assert_int_equal(wait_rc(c, stuck, err, sizeof err), GL_QC_TIMEOUT);
  uint64_t ms = (gl_mono_ns() - t0) / 1000000;
  assert_true(ms >= 350 && ms < 2000);
  assert_non_null(strstr(err, "no response"));
  assert_int_equal(gl_qclient_outstanding(c), 3);
  assert_false(gl_qclient_dead(c));
  /* The timeout is counted from each wait: "later" arrives within this
   * one's 400 ms, after the 400 ms already spent. */
  wait_text(c, later, "retal");
  wait_text(c, now2, "owt");
  wait_text(c, now1, "eno");
  /* The abandoned token is spent. */
  assert_int_equal(wait_rc(c, stuck, err, sizeof err), GL_QC_INVALID);
  assert_int_equal(gl_qclient_outstanding(c), 0);
  expect_text(c, "still", "llits");
  gl_qclient_del(c);
  server_stop(fx);
}

/* Cancelled requests are forgotten (answered or not); the rest go on. */
static void test_pipeline_cancel(void **state) {
  (void)state;
  server_fx *fx = server_start(NULL);
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *c = connect_ok(&cfg);
  uint64_t slow = send_text(c, "DEFER:1000");
  uint64_t big = send_text(c, "SIZE:200000");
  uint64_t b = send_text(c, "bbb");
  uint64_t d = send_text(c, "DELAY:200:ddd");
  gl_qclient_cancel(c, slow);
  assert_int_equal(gl_qclient_outstanding(c), 3);
  gl_qclient_cancel(c, slow); /* spent: ignored */
  gl_qclient_cancel(c, 0);
  gl_qclient_cancel(c, 1u << 30);
  gl_qclient_cancel(NULL, b);
  assert_int_equal(gl_qclient_outstanding(c), 3);
  wait_text(c, b, "bbb");
  wait_text(c, d, "ddd"); /* by now the 200000 bytes are in too */
  gl_qclient_cancel(c, big); /* a complete response nobody waits for */
  assert_int_equal(gl_qclient_outstanding(c), 0);
  char err[512];
  assert_int_equal(wait_rc(c, slow, err, sizeof err), GL_QC_INVALID);
  assert_int_equal(wait_rc(c, big, err, sizeof err), GL_QC_INVALID);
  /* Cancel one in the middle of a pipelined batch. */
  uint8_t msgs[30][64];
  uint64_t toks[30];
  for (int i = 0; i < 30; i++) toks[i] = send_ok(c, msgs[i], make_req(msgs[i], i, 64));
  for (int i = 0; i < 30; i += 7) gl_qclient_cancel(c, toks[i]);
  for (int i = 0; i < 30; i++)
    if (i % 7) wait_reversed(c, toks[i], msgs[i], 64);
  assert_int_equal(gl_qclient_outstanding(c), 0);
  for (int i = 0; i < 20; i++) expect_text(c, "go on", "no og");
  assert_false(gl_qclient_dead(c));
  gl_qclient_del(c);
  server_stop(fx);
}

static void test_pipeline_bad_tokens(void **state) {
  (void)state;
  server_fx *fx = server_start(NULL);
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *c = connect_ok(&cfg);
  char err[512] = "";
  assert_int_equal(wait_rc(c, 0, err, sizeof err), GL_QC_INVALID);
  assert_non_null(strstr(err, "token"));
  assert_int_equal(wait_rc(c, 12345, err, sizeof err), GL_QC_INVALID);
  uint64_t t = send_text(c, "x");
  assert_int_equal(wait_rc(c, t + 1, err, sizeof err), GL_QC_INVALID);
  assert_int_equal(gl_qclient_outstanding(c), 1);
  wait_text(c, t, "x");
  assert_int_equal(wait_rc(c, t, err, sizeof err), GL_QC_INVALID); /* spent */
  /* Bad arguments. */
  uint64_t tok = 77;
  uint8_t *resp = NULL;
  size_t rlen = 0;
  assert_int_equal(gl_qclient_send(c, NULL, 5, &tok, err, sizeof err), GL_QC_INVALID);
  assert_int_equal(tok, 0);
  assert_int_equal(gl_qclient_send(c, (const uint8_t *)"x", 1, NULL, err, sizeof err),
                   GL_QC_INVALID);
  assert_int_equal(gl_qclient_send(NULL, (const uint8_t *)"x", 1, &tok, err, sizeof err),
                   GL_QC_INVALID);
  assert_int_equal(gl_qclient_wait(NULL, t, &resp, &rlen, err, sizeof err), GL_QC_INVALID);
  assert_int_equal(gl_qclient_wait(c, t, NULL, &rlen, err, sizeof err), GL_QC_INVALID);
  assert_int_equal(gl_qclient_outstanding(c), 0);
  assert_int_equal(gl_qclient_outstanding(NULL), 0);
  /* Empty requests pipeline too. */
  uint64_t e1 = send_ok(c, NULL, 0), e2 = send_ok(c, "", 0);
  wait_bytes(c, e2, "", 0);
  wait_bytes(c, e1, "", 0);
  gl_qclient_del(c);
  server_stop(fx);
}

/* Oversized responses end only their own request, waited for or not. */
static void test_pipeline_too_large(void **state) {
  (void)state;
  server_fx *fx = server_start(NULL);
  gl_qclient_config cfg = pin_config(fx->port);
  cfg.max_response_bytes = 65536;
  gl_qclient *c = connect_ok(&cfg);
  uint64_t huge = send_text(c, "SIZE:2000000");
  uint64_t fits = send_text(c, "SIZE:65536");
  uint8_t msgs[20][100];
  uint64_t toks[20];
  for (int i = 0; i < 20; i++) toks[i] = send_ok(c, msgs[i], make_req(msgs[i], i, 100));
  for (int i = 0; i < 20; i++) wait_reversed(c, toks[i], msgs[i], 100);
  uint8_t *resp = NULL;
  size_t rlen = 0;
  char err[512] = "";
  assert_int_equal(gl_qclient_wait(c, fits, &resp, &rlen, err, sizeof err), GL_QC_OK);
  assert_int_equal(rlen, 65536);
  for (size_t i = 0; i < rlen; i++)
    if (resp[i] != pattern_byte(i)) fail_msg("byte %zu differs", i);
  free(resp);
  assert_int_equal(gl_qclient_wait(c, huge, &resp, &rlen, err, sizeof err), GL_QC_TOO_LARGE);
  assert_null(resp);
  assert_non_null(strstr(err, "larger than 65536"));
  assert_int_equal(gl_qclient_outstanding(c), 0);
  expect_text(c, "fine", "enif");
  gl_qclient_del(c);
  server_stop(fx);
}

/* A big request does not hold up the small ones sent after it. */
static void test_pipeline_big_and_small(void **state) {
  (void)state;
  server_fx *fx = server_start(NULL);
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *c = connect_ok(&cfg);
  size_t blen = 6u << 20;
  uint8_t *bmsg = malloc(blen);
  assert_non_null(bmsg);
  for (size_t i = 0; i < blen; i++) bmsg[i] = pattern_byte(i * 5 + 1);
  uint64_t bt = send_ok(c, bmsg, blen);
  uint8_t msgs[6][200];
  uint64_t toks[6];
  for (int i = 0; i < 6; i++) toks[i] = send_ok(c, msgs[i], make_req(msgs[i], i, 200));
  for (int i = 5; i >= 0; i--) wait_reversed(c, toks[i], msgs[i], 200);
  wait_reversed(c, bt, bmsg, blen);
  free(bmsg);
  gl_qclient_del(c);
  server_stop(fx);
}

/* The server goes away: waits for answers that never came fail, answers
 * that arrived before are still handed over, then every call fails. */
static void test_pipeline_dead(void **state) {
  (void)state;
  server_fx *fx = server_start(NULL);
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *c = connect_ok(&cfg);
  assert_false(gl_qclient_dead(c));
  uint64_t early = send_text(c, "early");
  uint64_t never = send_text(c, "DELAY:60000:never");
  wait_text(c, send_text(c, "DELAY:300:x"), "x"); /* "early" is in by now */
  assert_false(gl_qclient_dead(c));
  assert_int_equal(gl_qclient_outstanding(c), 2);
  server_stop(fx);

  char err[512] = "";
  assert_int_equal(wait_rc(c, never, err, sizeof err), GL_QC_UNREACHABLE);
  if (!strstr(err, "closed")) fprintf(stderr, "pipeline_dead: %s\n", err);
  assert_non_null(strstr(err, "closed"));
  assert_true(gl_qclient_dead(c));
  assert_int_equal(gl_qclient_outstanding(c), 1);
  wait_text(c, early, "ylrae");
  assert_int_equal(gl_qclient_outstanding(c), 0);
  uint64_t tok = 5;
  char err2[512] = "";
  assert_int_equal(gl_qclient_send(c, (const uint8_t *)"x", 1, &tok, err2, sizeof err2),
                   GL_QC_UNREACHABLE);
  assert_int_equal(tok, 0);
  assert_string_equal(err, err2);
  uint8_t *resp = NULL;
  size_t rlen = 0;
  assert_int_equal(gl_qclient_request(c, (const uint8_t *)"x", 1, &resp, &rlen, err2,
                                      sizeof err2),
                   GL_QC_UNREACHABLE);
  assert_string_equal(err, err2);
  assert_true(gl_qclient_dead(c));
  assert_true(gl_qclient_dead(NULL));
  gl_qclient_del(c);
}

/* The target use: 10,000 small requests, about 200 outstanding. */
static void test_pipeline_10k_window(void **state) {
  (void)state;
  server_opts o = {.max_streams = 256};
  server_fx *fx = server_start(&o);
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *c = connect_ok(&cfg);
  enum { N = 10000, W = 200, LEN = 100 };
  static uint8_t msgs[W][LEN];
  uint64_t toks[W];
  uint64_t t0 = gl_mono_ns();
  for (int i = 0; i < N + W; i++) {
    int slot = i % W;
    if (i >= W) wait_reversed(c, toks[slot], msgs[slot], LEN); /* request i - W */
    if (i < N) toks[slot] = send_ok(c, msgs[slot], make_req(msgs[slot], i, LEN));
  }
  double s = (double)(gl_mono_ns() - t0) / 1e9;
  fprintf(stderr, "pipelined: %d requests, %d outstanding: %.3f s, %.0f requests/s\n", N, W, s,
          N / s);
  assert_int_equal(gl_qclient_outstanding(c), 0);
  assert_int_equal(atomic_load(&fx->requests), N);
  gl_qclient_del(c);
  server_stop(fx);
}

/* ======================================================================
 * Client identities: mutual TLS, identities bound later, peer addresses
 * ==================================================================== */

/* A path in g_dir. */
static void dir_path(char *out, size_t len, const char *name) {
  int n = snprintf(out, len, "%s/%s", g_dir, name);
  assert_true(n > 0 && (size_t)n < len);
}

/* Sends req, returns the response as a string (caller frees). */
static char *ask(gl_qclient *c, const char *req) {
  uint8_t *resp = NULL;
  size_t rlen = 0;
  char err[512] = "";
  int rc = gl_qclient_request(c, (const uint8_t *)req, strlen(req), &resp, &rlen, err,
                              sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "request %s: %d %s\n", req, rc, err);
  assert_int_equal(rc, GL_QC_OK);
  char *text = malloc(rlen + 1);
  assert_non_null(text);
  memcpy(text, resp, rlen);
  text[rlen] = 0;
  free(resp);
  return text;
}

/* Asks WHO; expects identity want and a peer address on 127.0.0.1. */
static void expect_who(gl_qclient *c, const char *want) {
  char *text = ask(c, "WHO");
  char *bar = strrchr(text, '|');
  assert_non_null(bar);
  *bar = 0;
  assert_string_equal(text, want);
  if (strncmp(bar + 1, "127.0.0.1:", 10) != 0) fail_msg("peer %s", bar + 1);
  assert_true(atoi(bar + 11) > 0); /* a port */
  free(text);
}

static void expect_bind(gl_qclient *c, const char *name, const char *want) {
  char req[2 * GL_IDENTITY_MAX];
  snprintf(req, sizeof req, "BIND:%s", name);
  char *text = ask(c, req);
  assert_string_equal(text, want);
  free(text);
}

/* The identity gl_tls_cert_identity finds in a PEM certificate file; -1
 * (and why in err) when none. */
static int file_identity(const char *path, char out[GL_IDENTITY_MAX], char *err, size_t errlen) {
  uint8_t *pem = NULL;
  size_t len = 0;
  assert_int_equal(gl_read_file(path, 1 << 20, &pem, &len), 0);
  gnutls_datum_t in = {.data = pem, .size = (unsigned)len}, der = {NULL, 0};
  assert_true(gnutls_pem_base64_decode2("CERTIFICATE", &in, &der) >= 0);
  int rc = gl_tls_cert_identity(der.data, der.size, out, GL_IDENTITY_MAX, err, errlen);
  gnutls_free(der.data);
  free(pem);
  return rc;
}

/* The certificates of the mutual TLS tests, in g_dir. */
enum { CRT_ALICE, CRT_URI, CRT_SPACE, CRT_OTHER_CA, CRT_EXPIRED, CRT_BAD_CN, CRT_LONG_URI, NCRT };
static const struct {
  const char *name, *cn, *uri;
  bool other_ca, expired;
} g_certs[NCRT] = {
    [CRT_ALICE] = {"alice", "alice", NULL, false, false},
    [CRT_URI] = {"uri", "carol", "spiffe://example.org/alice", false, false},
    [CRT_SPACE] = {"space", "Alice Smith", NULL, false, false},
    [CRT_OTHER_CA] = {"other", "alice", NULL, true, false},
    [CRT_EXPIRED] = {"expired", "alice", NULL, false, true},
    [CRT_BAD_CN] = {"badcn", "bad\tname", NULL, false, false},
    [CRT_LONG_URI] = {"longuri", "dave", NULL, false, false}, /* uri: below */
};

typedef struct mtls_files {
  char ca[512], ca_key[512], other[512], other_key[512];
  char crt[NCRT][512], key[NCRT][512];
} mtls_files;

static void mtls_make(mtls_files *f) {
  char err[256] = "";
  dir_path(f->ca, sizeof f->ca, "ca.pem");
  dir_path(f->ca_key, sizeof f->ca_key, "ca.key");
  dir_path(f->other, sizeof f->other, "other-ca.pem");
  dir_path(f->other_key, sizeof f->other_key, "other-ca.key");
  if (gl_tls_make_ca("gpulease test CA", f->ca, f->ca_key, err, sizeof err) != 0 ||
      gl_tls_make_ca("another CA", f->other, f->other_key, err, sizeof err) != 0)
    fail_msg("gl_tls_make_ca: %s", err);
  struct stat st;
  assert_int_equal(stat(f->ca_key, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  char long_uri[320];
  int n = snprintf(long_uri, sizeof long_uri, "spiffe://example.org/");
  memset(long_uri + n, 'a', 256);
  long_uri[n + 256] = 0;
  for (int i = 0; i < NCRT; i++) {
    char name[64];
    snprintf(name, sizeof name, "%s.pem", g_certs[i].name);
    dir_path(f->crt[i], sizeof f->crt[i], name);
    snprintf(name, sizeof name, "%s.key", g_certs[i].name);
    dir_path(f->key[i], sizeof f->key[i], name);
    bool other = g_certs[i].other_ca;
    if (gl_tls_issue_client_cert(other ? f->other : f->ca, other ? f->other_key : f->ca_key,
                                 g_certs[i].cn, i == CRT_LONG_URI ? long_uri : g_certs[i].uri,
                                 g_certs[i].expired, f->crt[i], f->key[i], err,
                                 sizeof err) != 0)
      fail_msg("gl_tls_issue_client_cert %s: %s", g_certs[i].name, err);
  }
}

static void mtls_remove(mtls_files *f) {
  unlink(f->ca);
  unlink(f->ca_key);
  unlink(f->other);
  unlink(f->other_key);
  for (int i = 0; i < NCRT; i++) {
    unlink(f->crt[i]);
    unlink(f->key[i]);
  }
}

/* Connects with certificate i of f; the rc (c closed unless OK). */
static int connect_with(const mtls_files *f, uint16_t port, int i, gl_qclient **c, char *err,
                        size_t errlen) {
  gl_qclient_config cfg = pin_config(port);
  cfg.timeout_ms = 3000;
  if (i >= 0) {
    cfg.cert_file = f->crt[i];
    cfg.key_file = f->key[i];
  }
  *c = NULL;
  int rc = gl_qclient_connect(&cfg, c, err, errlen);
  if (rc != GL_QC_OK) assert_null(*c);
  return rc;
}

/* What a certificate names: the first URI SAN, else the CN; names that
 * are empty, too long or not printable ASCII name nobody. */
static void test_cert_identity(void **state) {
  (void)state;
  mtls_files f;
  mtls_make(&f);
  char id[GL_IDENTITY_MAX], err[256];
  assert_int_equal(file_identity(f.crt[CRT_ALICE], id, err, sizeof err), 0);
  assert_string_equal(id, "alice");
  assert_int_equal(file_identity(f.crt[CRT_URI], id, err, sizeof err), 0);
  assert_string_equal(id, "spiffe://example.org/alice");
  assert_int_equal(file_identity(f.crt[CRT_SPACE], id, err, sizeof err), 0);
  assert_string_equal(id, "Alice Smith");
  assert_int_equal(file_identity(f.crt[CRT_BAD_CN], id, err, sizeof err), -1);
  assert_non_null(strstr(err, "common name"));
  assert_string_equal(id, "");
  assert_int_equal(file_identity(f.crt[CRT_LONG_URI], id, err, sizeof err), -1);
  assert_non_null(strstr(err, "longer than 255"));
  /* The server's own certificate has DNS and IP SANs, no URI: its CN. */
  assert_int_equal(file_identity(g_cert, id, err, sizeof err), 0);
  assert_string_equal(id, "gpuleased");
  assert_int_equal(gl_tls_cert_identity((const uint8_t *)"junk", 4, id, sizeof id, err,
                                        sizeof err),
                   -1);
  /* A CA file that is not there is named. */
  char missing[600];
  dir_path(missing, sizeof missing, "missing.pem");
  assert_int_equal(gl_tls_issue_client_cert(missing, f.ca_key, "x", NULL, false, f.crt[0],
                                            f.key[0], err, sizeof err),
                   -1);
  assert_non_null(strstr(err, missing));
  mtls_remove(&f);
}

/* A server with client_ca_file: a certificate from that CA names the
 * connection; no certificate, another CA's, an expired one, or one that
 * names nobody fails the handshake, and no request gets through. */
static void test_mtls(void **state) {
  (void)state;
  mtls_files f;
  mtls_make(&f);
  server_opts o = {.client_ca_file = f.ca};
  server_fx *fx = server_start(&o);
  char err[512] = "";
  gl_qclient *c = NULL;

  assert_int_equal(connect_with(&f, fx->port, CRT_ALICE, &c, err, sizeof err), GL_QC_OK);
  expect_who(c, "alice");
  expect_text(c, "abc", "cba");
  expect_bind(c, "mallory", "-1:alice"); /* the certificate's identity stays */
  expect_who(c, "alice");
  gl_qclient_del(c);

  assert_int_equal(connect_with(&f, fx->port, CRT_URI, &c, err, sizeof err), GL_QC_OK);
  expect_who(c, "spiffe://example.org/alice");
  gl_qclient_del(c);

  assert_int_equal(connect_with(&f, fx->port, CRT_SPACE, &c, err, sizeof err), GL_QC_OK);
  expect_who(c, "Alice Smith");
  gl_qclient_del(c);

  int before = atomic_load(&fx->requests);
  int rc = connect_with(&f, fx->port, -1, &c, err, sizeof err);
  if (rc != GL_QC_TLS && rc != GL_QC_UNREACHABLE) fail_msg("no certificate: %d %s", rc, err);
  assert_non_null(strstr(err, "client certificate"));
  const int bad[] = {CRT_OTHER_CA, CRT_EXPIRED, CRT_BAD_CN, CRT_LONG_URI};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    rc = connect_with(&f, fx->port, bad[i], &c, err, sizeof err);
    if (rc != GL_QC_TLS && rc != GL_QC_UNREACHABLE)
      fail_msg("certificate %s: %d %s", g_certs[bad[i]].name, rc, err);
    if (!strstr(err, "refused ours")) fail_msg("certificate %s: %s", g_certs[bad[i]].name, err);
  }
  assert_int_equal(atomic_load(&fx->requests), before);
  assert_true(wait_count(fx, 0, 5000));
  server_stop(fx);

  /* A client certificate the server does not ask for is not sent. */
  fx = server_start(NULL);
  assert_int_equal(connect_with(&f, fx->port, CRT_ALICE, &c, err, sizeof err), GL_QC_OK);
  expect_who(c, "");
  gl_qclient_del(c);
  server_stop(fx);

  /* Options. */
  gl_qclient_config cfg = pin_config(1);
  cfg.cert_file = f.crt[CRT_ALICE];
  assert_int_equal(gl_qclient_connect(&cfg, &c, err, sizeof err), GL_QC_INVALID);
  assert_non_null(strstr(err, "key"));
  cfg.cert_file = NULL;
  cfg.key_file = f.key[CRT_ALICE];
  assert_int_equal(gl_qclient_connect(&cfg, &c, err, sizeof err), GL_QC_INVALID);
  char missing[600];
  dir_path(missing, sizeof missing, "missing.pem");
  cfg.cert_file = missing;
  assert_int_equal(gl_qclient_connect(&cfg, &c, err, sizeof err), GL_QC_INVALID);
  assert_non_null(strstr(err, missing));
  cfg.cert_file = f.crt[CRT_ALICE];
  cfg.key_file = missing;
  assert_int_equal(gl_qclient_connect(&cfg, &c, err, sizeof err), GL_QC_INVALID);
  assert_non_null(strstr(err, missing));
  cfg.key_file = f.crt[CRT_ALICE]; /* not a key */
  assert_int_equal(gl_qclient_connect(&cfg, &c, err, sizeof err), GL_QC_INVALID);
  assert_non_null(strstr(err, f.crt[CRT_ALICE]));

  /* A client CA file that cannot be read stops the server. */
  struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
  assert_non_null(loop);
  gl_qserver_config scfg = {.listen_host = "127.0.0.1", .cert_file = g_cert, .key_file = g_key,
                            .client_ca_file = missing, .on_request = on_request};
  gl_qserver *srv = NULL;
  assert_int_equal(gl_qserver_new(loop, &scfg, &srv, err, sizeof err), -1);
  assert_null(srv);
  assert_non_null(strstr(err, missing));
  scfg.client_ca_file = f.ca_key; /* no certificate in it */
  assert_int_equal(gl_qserver_new(loop, &scfg, &srv, err, sizeof err), -1);
  ev_loop_destroy(loop);
  mtls_remove(&f);
}

/* Without client certificates: no identity until one request binds one;
 * requests that arrive later see it, those that came earlier keep their
 * copy (also after the connection is gone); other connections do not. */
static void test_bound_identity(void **state) {
  (void)state;
  server_fx *fx = server_start(NULL);
  gl_qclient_config cfg = pin_config(fx->port);
  gl_qclient *c = connect_ok(&cfg);
  expect_who(c, "");
  uint64_t early;
  char err[512] = "";
  assert_int_equal(gl_qclient_send(c, (const uint8_t *)"WHO_LATER:100", 13, &early, err,
                                   sizeof err),
                   GL_QC_OK);
  expect_bind(c, "bob", "0:bob");
  expect_who(c, "bob");
  expect_bind(c, "carol", "-1:bob"); /* one identity per connection */
  expect_who(c, "bob");
  uint8_t *resp = NULL;
  size_t rlen = 0;
  assert_int_equal(gl_qclient_wait(c, early, &resp, &rlen, err, sizeof err), GL_QC_OK);
  assert_true(rlen > 11);
  assert_memory_equal(resp, "|127.0.0.1:", 11); /* came before the bind */
  free(resp);

  gl_qclient *d = connect_ok(&cfg);
  expect_who(d, "");
  expect_bind(d, "", "-1:");
  char name[GL_IDENTITY_MAX + 1];
  memset(name, 'x', GL_IDENTITY_MAX);
  name[GL_IDENTITY_MAX] = 0; /* 256 bytes: one too many */
  char want[GL_IDENTITY_MAX + 8];
  expect_bind(d, name, "-1:");
  name[GL_IDENTITY_MAX - 1] = 0; /* 255 */
  snprintf(want, sizeof want, "0:%s", name);
  expect_bind(d, name, want);
  expect_who(d, name);
  expect_who(c, "bob");

  /* A request outlives its connection with its copies. */
  gl_qclient *e = connect_ok(&cfg);
  expect_bind(e, "erin", "0:erin");
  int fired = atomic_load(&fx->deferred_fired);
  uint64_t t;
  assert_int_equal(gl_qclient_send(e, (const uint8_t *)"WHO_LATER:150", 13, &t, err, sizeof err),
                   GL_QC_OK);
  expect_who(e, "erin"); /* sent after it: the server has WHO_LATER */
  gl_qclient_del(e);
  assert_true(wait_int(&fx->deferred_fired, fired + 1, 3000));
  assert_int_equal(atomic_load(&fx->deferred_orphaned), 1);
  assert_string_equal(fx->late_identity, "erin");
  assert_int_equal(strncmp(fx->late_peer, "127.0.0.1:", 10), 0);
  gl_qclient_del(c);
  gl_qclient_del(d);
  server_stop(fx);
}

/* ---- the local socket --------------------------------------------------- */

typedef struct local_fx {
  struct ev_loop *loop;
  gl_lserver *srv;
  pthread_t thread;
  ev_async stop, release;
  char path[600];
  gl_lreq *held;
  atomic_int closed;
  atomic_int released;
  char held_identity[GL_IDENTITY_MAX], held_peer[64];
  bool held_orphaned;
} local_fx;

/* A response message: header (kind response, status 0) + text. */
static void local_answer(gl_lreq *req, const char *text) {
  size_t n = strlen(text);
  uint8_t *m = malloc(GL_WIRE_HEADER_SIZE + n);
  assert_non_null(m);
  const uint8_t head[GL_WIRE_HEADER_SIZE] = {
      GL_WIRE_MAGIC0, GL_WIRE_MAGIC1, GL_WIRE_VERSION, GL_WIRE_KIND_RESPONSE, 0, 1, 0, 0,
      (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};
  memcpy(m, head, sizeof head);
  memcpy(m + GL_WIRE_HEADER_SIZE, text, n);
  (void)gl_lreq_reply(req, m, GL_WIRE_HEADER_SIZE + n);
  free(m);
}

/* Bodies: "WHO", "BIND:<name>", "HOLD" (answered on the release signal). */
static void local_request(void *user, gl_lreq *req, const uint8_t *msg, size_t len) {
  local_fx *fx = user;
  assert_true(len >= GL_WIRE_HEADER_SIZE);
  const char *body = (const char *)msg + GL_WIRE_HEADER_SIZE;
  size_t blen = len - GL_WIRE_HEADER_SIZE;
  char text[2 * GL_IDENTITY_MAX];
  if (blen == 3 && memcmp(body, "WHO", 3) == 0) {
    char peer[64];
    gl_lreq_peer(req, peer, sizeof peer);
    snprintf(text, sizeof text, "%s|%s", gl_lreq_identity(req), peer);
  } else if (blen >= 5 && memcmp(body, "BIND:", 5) == 0) {
    char name[2 * GL_IDENTITY_MAX];
    size_t n = blen - 5 < sizeof name - 1 ? blen - 5 : sizeof name - 1;
    memcpy(name, body + 5, n);
    name[n] = 0;
    int rc = gl_lreq_set_identity(req, name);
    snprintf(text, sizeof text, "%d:%s", rc, gl_lreq_identity(req));
  } else if (blen == 4 && memcmp(body, "HOLD", 4) == 0) {
    fx->held = req;
    return;
  } else {
    snprintf(text, sizeof text, "?");
  }
  local_answer(req, text);
}

static void local_closed(void *user, uint64_t conn_id) {
  (void)conn_id;
  atomic_fetch_add(&((local_fx *)user)->closed, 1);
}

static void local_release_cb(struct ev_loop *loop, ev_async *w, int revents) {
  (void)loop, (void)revents;
  local_fx *fx = w->data;
  if (fx->held) {
    snprintf(fx->held_identity, sizeof fx->held_identity, "%s", gl_lreq_identity(fx->held));
    gl_lreq_peer(fx->held, fx->held_peer, sizeof fx->held_peer);
    fx->held_orphaned = gl_lreq_orphaned(fx->held);
    local_answer(fx->held, "late");
    fx->held = NULL;
  }
  atomic_fetch_add(&fx->released, 1);
}

static void local_stop_cb(struct ev_loop *loop, ev_async *w, int revents) {
  (void)revents;
  local_fx *fx = w->data;
  gl_lserver_del(fx->srv);
  ev_async_stop(loop, &fx->stop);
  ev_async_stop(loop, &fx->release);
  ev_break(loop, EVBREAK_ALL);
}

static void *local_main(void *arg) {
  ev_run(((local_fx *)arg)->loop, 0);
  return NULL;
}

/* Sends body in a request message, returns the answer's body (free it). */
static char *local_ask(gl_lclient *c, const char *body) {
  size_t n = strlen(body);
  uint8_t m[GL_WIRE_HEADER_SIZE + 600];
  assert_true(n <= 600);
  const uint8_t head[GL_WIRE_HEADER_SIZE] = {
      GL_WIRE_MAGIC0, GL_WIRE_MAGIC1, GL_WIRE_VERSION, GL_WIRE_KIND_REQUEST, 0, 1, 0, 0,
      (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};
  memcpy(m, head, sizeof head);
  memcpy(m + GL_WIRE_HEADER_SIZE, body, n);
  uint64_t token;
  char err[256] = "";
  if (gl_lclient_send(c, m, GL_WIRE_HEADER_SIZE + n, -1, &token, err, sizeof err) != 0)
    fail_msg("local send: %s", err);
  uint8_t *resp = NULL;
  size_t rlen = 0;
  if (gl_lclient_wait(c, token, &resp, &rlen, err, sizeof err) != 0) fail_msg("local wait: %s", err);
  assert_true(rlen >= GL_WIRE_HEADER_SIZE);
  char *text = malloc(rlen - GL_WIRE_HEADER_SIZE + 1);
  assert_non_null(text);
  memcpy(text, resp + GL_WIRE_HEADER_SIZE, rlen - GL_WIRE_HEADER_SIZE);
  text[rlen - GL_WIRE_HEADER_SIZE] = 0;
  free(resp);
  return text;
}

static void local_expect(gl_lclient *c, const char *body, const char *want) {
  char *text = local_ask(c, body);
  assert_string_equal(text, want);
  free(text);
}

/* The same rules on the local socket; the peer is "unix:pid=P,uid=U". */
static void test_local_identity(void **state) {
  (void)state;
  local_fx *fx = calloc(1, sizeof *fx);
  assert_non_null(fx);
  dir_path(fx->path, sizeof fx->path, "local.sock");
  fx->loop = ev_loop_new(EVFLAG_AUTO);
  assert_non_null(fx->loop);
  gl_lserver_config cfg = {.path = fx->path, .mode = 0600, .max_message_bytes = 4096,
                           .on_request = local_request, .on_close = local_closed, .user = fx};
  char err[256] = "";
  if (gl_lserver_new(fx->loop, &cfg, &fx->srv, err, sizeof err) != 0) fail_msg("%s", err);
  ev_async_init(&fx->stop, local_stop_cb);
  ev_async_init(&fx->release, local_release_cb);
  fx->stop.data = fx->release.data = fx;
  ev_async_start(fx->loop, &fx->stop);
  ev_async_start(fx->loop, &fx->release);
  assert_int_equal(pthread_create(&fx->thread, NULL, local_main, fx), 0);

  char peer[64], want[300];
  snprintf(peer, sizeof peer, "unix:pid=%ld,uid=%lu", (long)getpid(), (unsigned long)getuid());
  gl_lclient *a = NULL, *b = NULL, *h = NULL;
  assert_int_equal(gl_lclient_connect(fx->path, 3000, &a, err, sizeof err), 0);
  assert_int_equal(gl_lclient_connect(fx->path, 3000, &b, err, sizeof err), 0);
  snprintf(want, sizeof want, "|%s", peer);
  local_expect(a, "WHO", want);
  local_expect(a, "BIND:", "-1:");
  local_expect(a, "BIND:bob", "0:bob");
  snprintf(want, sizeof want, "bob|%s", peer);
  local_expect(a, "WHO", want);
  local_expect(a, "BIND:carol", "-1:bob");
  snprintf(want, sizeof want, "|%s", peer);
  local_expect(b, "WHO", want);

  /* A held request keeps its copies after its connection closed. */
  assert_int_equal(gl_lclient_connect(fx->path, 3000, &h, err, sizeof err), 0);
  local_expect(h, "BIND:erin", "0:erin");
  static const uint8_t hold[GL_WIRE_HEADER_SIZE + 4] = {
      GL_WIRE_MAGIC0, GL_WIRE_MAGIC1, GL_WIRE_VERSION, GL_WIRE_KIND_REQUEST, 0, 1, 0, 0, 0, 0, 0,
      4, 'H', 'O', 'L', 'D'};
  uint64_t token;
  assert_int_equal(gl_lclient_send(h, hold, sizeof hold, -1, &token, err, sizeof err), 0);
  snprintf(want, sizeof want, "erin|%s", peer);
  local_expect(h, "WHO", want); /* answered in order: HOLD is held by now */
  gl_lclient_del(h);
  for (int t = 0; t < 300 && atomic_load(&fx->closed) < 1; t++) sleep_ms(10);
  assert_int_equal(atomic_load(&fx->closed), 1);
  ev_async_send(fx->loop, &fx->release);
  assert_true(wait_int(&fx->released, 1, 3000));
  assert_string_equal(fx->held_identity, "erin");
  assert_string_equal(fx->held_peer, peer);
  assert_true(fx->held_orphaned);

  gl_lclient_del(a);
  gl_lclient_del(b);
  ev_async_send(fx->loop, &fx->stop);
  pthread_join(fx->thread, NULL);
  ev_loop_destroy(fx->loop);
  free(fx);
}


/* ---- the daemon's request wrapper (dreq.c), through every transport ------ */

/* A "main loop" in a thread, as the daemon's: a QUIC server, one network
 * thread (shards.c) and a local socket, each request wrapped in a gl_dreq
 * and answered by dreq_handle: "WHO" -> "<identity>|<peer>", "BIND:<name>"
 * -> gl_dreq_reply_identity(name, "BOUND"), its result counted in binds /
 * bind_fail. */
typedef struct dreq_fx {
  struct ev_loop *loop;
  pthread_t thread;
  ev_async stop;
  gl_qserver *srv;
  gl_shards *shards;
  gl_lserver *lsrv;
  char path[600];
  atomic_int binds, bind_fail;
  gl_shard *seen[GL_SHARDS_MAX]; /* the shards requests came through (main loop) */
  atomic_int nseen;
} dreq_fx;

static void dreq_handle(dreq_fx *fx, gl_dreq *r, const char *body, size_t blen, bool local) {
  char text[2 * GL_IDENTITY_MAX];
  size_t off = local ? GL_WIRE_HEADER_SIZE : 0;
  if (blen == 3 && memcmp(body, "WHO", 3) == 0) {
    char peer[64];
    gl_dreq_peer(r, peer, sizeof peer);
    snprintf(text + off, sizeof text - off, "%s|%s", gl_dreq_identity(r), peer);
  } else {
    snprintf(text + off, sizeof text - off, "BOUND");
  }
  size_t n = strlen(text + off);
  if (local) {
    const uint8_t head[GL_WIRE_HEADER_SIZE] = {
        GL_WIRE_MAGIC0, GL_WIRE_MAGIC1, GL_WIRE_VERSION, GL_WIRE_KIND_RESPONSE, 0, 1, 0, 0,
        (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};
    memcpy(text, head, sizeof head);
  }
  if (blen >= 5 && memcmp(body, "BIND:", 5) == 0) {
    char name[2 * GL_IDENTITY_MAX];
    size_t k = blen - 5 < sizeof name - 1 ? blen - 5 : sizeof name - 1;
    memcpy(name, body + 5, k);
    name[k] = 0;
    if (gl_dreq_reply_identity(r, name, (const uint8_t *)text, off + n) != 0)
      atomic_fetch_add(&fx->bind_fail, 1);
    atomic_fetch_add(&fx->binds, 1);
    return;
  }
  (void)gl_dreq_reply(r, (const uint8_t *)text, off + n);
}

static void dreq_on_quic(void *user, gl_qreq *req, const uint8_t *msg, size_t len, int err) {
  (void)err;
  gl_dreq *r = gl_dreq_quic(req);
  assert_non_null(r);
  dreq_handle(user, r, (const char *)msg, len, false);
}

static void dreq_on_shard(void *user, gl_shard *sh, gl_qreq *req, const uint8_t *msg, size_t len,
                          int err) {
  (void)err;
  dreq_fx *fx = user;
  int n = atomic_load(&fx->nseen), i = 0;
  while (i < n && fx->seen[i] != sh) i++;
  if (i == n && n < GL_SHARDS_MAX) {
    fx->seen[n] = sh;
    atomic_store(&fx->nseen, n + 1);
  }
  gl_dreq *r = gl_dreq_shard(sh, req);
  assert_non_null(r);
  dreq_handle(user, r, (const char *)msg, len, false);
}

static void dreq_on_local(void *user, gl_lreq *req, const uint8_t *msg, size_t len) {
  gl_dreq *r = gl_dreq_local(req);
  assert_non_null(r);
  dreq_handle(user, r, (const char *)msg + GL_WIRE_HEADER_SIZE, len - GL_WIRE_HEADER_SIZE, true);
}

static void dreq_stop_cb(struct ev_loop *loop, ev_async *w, int revents) {
  (void)revents;
  dreq_fx *fx = w->data;
  gl_shards_stop(fx->shards);
  gl_qserver_del(fx->srv);
  gl_lserver_del(fx->lsrv);
  ev_async_stop(loop, &fx->stop);
  ev_break(loop, EVBREAK_ALL);
}

static void *dreq_main(void *arg) {
  ev_run(((dreq_fx *)arg)->loop, 0);
  return NULL;
}

/* Binds a name on each transport and checks that later requests see it,
 * that a second bind fails, and that shards carry client_ca_file. */
static void test_dreq_identity(void **state) {
  (void)state;
  mtls_files f;
  mtls_make(&f);
  dreq_fx *fx = calloc(1, sizeof *fx);
  assert_non_null(fx);
  fx->loop = ev_loop_new(EVFLAG_AUTO);
  assert_non_null(fx->loop);
  char err[512] = "";
  gl_qserver_config qc = {.listen_host = "127.0.0.1", .cert_file = g_cert, .key_file = g_key,
                          .idle_timeout_ms = 5000, .on_request = dreq_on_quic, .user = fx};
  assert_int_equal(gl_qserver_new(fx->loop, &qc, &fx->srv, err, sizeof err), 0);
  /* The shard serves the same configuration, but with client_ca_file (a
   * copy: the buffer is changed once the shard runs). */
  char ca[512];
  snprintf(ca, sizeof ca, "%s", f.ca);
  qc.client_ca_file = ca;
  if (gl_shards_start(fx->loop, &qc, 1, 0, dreq_on_shard, fx, &fx->shards, err, sizeof err) != 0)
    fail_msg("gl_shards_start: %s", err);
  memset(ca, 0, sizeof ca);
  dir_path(fx->path, sizeof fx->path, "dreq.sock");
  gl_lserver_config lc = {.path = fx->path, .mode = 0600, .max_message_bytes = 4096,
                          .on_request = dreq_on_local, .user = fx};
  assert_int_equal(gl_lserver_new(fx->loop, &lc, &fx->lsrv, err, sizeof err), 0);
  ev_async_init(&fx->stop, dreq_stop_cb);
  fx->stop.data = fx;
  ev_async_start(fx->loop, &fx->stop);
  assert_int_equal(pthread_create(&fx->thread, NULL, dreq_main, fx), 0);

  /* The main QUIC server. */
  gl_qclient_config cfg = pin_config(gl_qserver_port(fx->srv));
  gl_qclient *c = connect_ok(&cfg);
  expect_who(c, "");
  expect_text(c, "BIND:bob", "BOUND");
  assert_true(wait_int(&fx->binds, 1, 3000));
  assert_int_equal(atomic_load(&fx->bind_fail), 0);
  expect_who(c, "bob");
  expect_text(c, "BIND:carol", "BOUND"); /* answered, not bound */
  assert_true(wait_int(&fx->binds, 2, 3000));
  assert_int_equal(atomic_load(&fx->bind_fail), 1);
  expect_who(c, "bob");
  gl_qclient_del(c);

  /* The network thread: mutual TLS (its copy of client_ca_file), then a
   * bind refused on the main loop, since the request shows an identity. */
  uint16_t sport = gl_shards_port(fx->shards, 0);
  assert_int_equal(connect_with(&f, sport, -1, &c, err, sizeof err), GL_QC_TLS);
  assert_int_equal(connect_with(&f, sport, CRT_ALICE, &c, err, sizeof err), GL_QC_OK);
  expect_who(c, "alice");
  expect_text(c, "BIND:bob", "BOUND");
  assert_true(wait_int(&fx->binds, 3, 3000));
  assert_int_equal(atomic_load(&fx->bind_fail), 2);
  expect_who(c, "alice");
  gl_qclient_del(c);

  /* The local socket. */
  gl_lclient *l = NULL;
  assert_int_equal(gl_lclient_connect(fx->path, 3000, &l, err, sizeof err), 0);
  local_expect(l, "BIND:dave", "BOUND");
  assert_true(wait_int(&fx->binds, 4, 3000));
  assert_int_equal(atomic_load(&fx->bind_fail), 2);
  char want[128];
  snprintf(want, sizeof want, "dave|unix:pid=%ld,uid=%lu", (long)getpid(),
           (unsigned long)getuid());
  local_expect(l, "WHO", want);
  gl_lclient_del(l);

  ev_async_send(fx->loop, &fx->stop);
  pthread_join(fx->thread, NULL);
  ev_loop_destroy(fx->loop);
  free(fx);
  mtls_remove(&f);
}

/* A network thread without client certificates: the name is bound on the
 * shard's thread before the answer leaves, so the next request sees it. */
static void test_shard_bind(void **state) {
  (void)state;
  dreq_fx *fx = calloc(1, sizeof *fx);
  assert_non_null(fx);
  fx->loop = ev_loop_new(EVFLAG_AUTO);
  assert_non_null(fx->loop);
  char err[512] = "";
  gl_qserver_config qc = {.listen_host = "127.0.0.1", .cert_file = g_cert, .key_file = g_key,
                          .idle_timeout_ms = 5000};
  if (gl_shards_start(fx->loop, &qc, 1, 0, dreq_on_shard, fx, &fx->shards, err, sizeof err) != 0)
    fail_msg("gl_shards_start: %s", err);
  ev_async_init(&fx->stop, dreq_stop_cb);
  fx->stop.data = fx;
  ev_async_start(fx->loop, &fx->stop);
  assert_int_equal(pthread_create(&fx->thread, NULL, dreq_main, fx), 0);
  gl_qclient_config cfg = pin_config(gl_shards_port(fx->shards, 0));
  gl_qclient *c = connect_ok(&cfg);
  gl_qclient *d = connect_ok(&cfg);
  expect_who(c, "");
  expect_text(c, "BIND:bob", "BOUND");
  expect_who(c, "bob");
  expect_who(d, "");
  assert_true(wait_int(&fx->binds, 1, 3000));
  assert_int_equal(atomic_load(&fx->bind_fail), 0);
  expect_text(c, "BIND:", "BOUND"); /* empty: refused at once */
  assert_true(wait_int(&fx->binds, 2, 3000));
  assert_int_equal(atomic_load(&fx->bind_fail), 1);
  expect_who(c, "bob");
  gl_qclient_del(c);
  gl_qclient_del(d);
  ev_async_send(fx->loop, &fx->stop);
  pthread_join(fx->thread, NULL);
  ev_loop_destroy(fx->loop);
  free(fx);
}

/* Shards that serve one port together (gl_shards_start_shared, as the
 * daemon's control threads): every server has the same port, the clients
 * are spread over them (the kernel's SO_REUSEPORT hash), and the limit
 * per address, the connection count and the Retry count are the group's:
 * 12 clients from one address fill a limit of 12 over 3 servers, and the
 * 13th is refused. */
static void test_shard_group(void **state) {
  (void)state;
  enum { LIMIT = 12, SERVERS = 3 };
  dreq_fx *fx = calloc(1, sizeof *fx);
  assert_non_null(fx);
  fx->loop = ev_loop_new(EVFLAG_AUTO);
  assert_non_null(fx->loop);
  char err[512] = "";
  gl_qserver_config qc = {.listen_host = "127.0.0.1", .cert_file = g_cert, .key_file = g_key,
                          .idle_timeout_ms = 5000, .max_connections_per_address = LIMIT,
                          .always_retry = true};
  if (gl_shards_start_shared(fx->loop, &qc, SERVERS, dreq_on_shard, fx, &fx->shards, err,
                             sizeof err) != 0)
    fail_msg("gl_shards_start_shared: %s", err);
  assert_int_equal(gl_shards_count(fx->shards), SERVERS);
  uint16_t port = gl_shards_port(fx->shards, 0);
  assert_true(port != 0);
  for (unsigned i = 1; i < SERVERS; i++) assert_int_equal(gl_shards_port(fx->shards, i), port);
  /* Another group (another daemon) cannot take the port (before the
   * loop runs: gl_shards_start_shared is the loop's own call). */
  gl_shards *other = NULL;
  gl_qserver_config oc = qc;
  oc.listen_port = port;
  assert_int_equal(gl_shards_start_shared(fx->loop, &oc, 2, dreq_on_shard, fx, &other, err,
                                          sizeof err),
                   -1);
  assert_null(other);
  fprintf(stderr, "a second group on port %u: %s\n", (unsigned)port, err);
  assert_non_null(strstr(err, "in use"));
  ev_async_init(&fx->stop, dreq_stop_cb);
  fx->stop.data = fx;
  ev_async_start(fx->loop, &fx->stop);
  assert_int_equal(pthread_create(&fx->thread, NULL, dreq_main, fx), 0);

  gl_qclient_config cfg = pin_config(port);
  gl_qclient *c[LIMIT];
  for (int i = 0; i < LIMIT; i++) {
    c[i] = connect_ok(&cfg);
    expect_text(c[i], "hello", "BOUND");
    expect_who(c[i], "");
  }
  /* Counted once they are complete (the server's side of the handshake
   * may end a moment after the client's). */
  for (int t = 0; t < 300 && gl_shards_connection_count(fx->shards) != LIMIT; t++) sleep_ms(10);
  assert_int_equal(gl_shards_connection_count(fx->shards), LIMIT);
  assert_true(gl_shards_retries_sent(fx->shards) >= LIMIT); /* always_retry, any server */
  fprintf(stderr, "%d clients over %d servers of one port: requests came through %d\n",
          LIMIT, SERVERS, atomic_load(&fx->nseen));
  assert_true(atomic_load(&fx->nseen) >= 2); /* all on one: 3^-11 */
  gl_qclient *extra = NULL;
  cfg.timeout_ms = 3000;
  assert_int_equal(gl_qclient_connect(&cfg, &extra, err, sizeof err), GL_QC_UNREACHABLE);
  assert_non_null(strstr(err, "from this address"));
  for (int i = 0; i < LIMIT; i++) gl_qclient_del(c[i]);
  for (int t = 0; t < 300 && gl_shards_connection_count(fx->shards) != 0; t++) sleep_ms(10);
  assert_int_equal(gl_shards_connection_count(fx->shards), 0);
  ev_async_send(fx->loop, &fx->stop);
  pthread_join(fx->thread, NULL);
  ev_loop_destroy(fx->loop);
  free(fx);
}

/* ======================================================================
 * Setup
 * ==================================================================== */

static int group_setup(void **state) {
  (void)state;
  const char *lvl = getenv("GL_TEST_LOG");
  gl_log_init("test_quic", lvl && gl_log_level_parse(lvl) >= 0
                               ? (enum gl_log_level)gl_log_level_parse(lvl)
                               : GL_LOG_ERROR);
  snprintf(g_dir, sizeof g_dir, "/tmp/gl_test_quic.XXXXXX");
  if (!mkdtemp(g_dir)) return -1;
  char err[256];
  int created = 0;
  if (gl_tls_ensure_self_signed(g_dir, g_cert, g_key, sizeof g_cert, &created, err,
                                sizeof err) != 0) {
    fprintf(stderr, "%s\n", err);
    return -1;
  }
  if (!created) return -1;
  if (gl_tls_file_fingerprint(g_cert, g_fp, err, sizeof err) != 0) return -1;
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  unlink(g_cert);
  unlink(g_key);
  rmdir(g_dir);
  return 0;
}

/* ======================================================================
 * UDP settings
 * ==================================================================== */

/* Path MTU discovery probes the largest size first, then jumbo frames and
 * Ethernet; a path that stays on this host needs none. */
static void test_udp_settings(void **state) {
  (void)state;
  uint16_t probes[GL_Q_MAX_PROBES];
  ngtcp2_settings st;
  ngtcp2_settings_default(&st);
  gl_q_settings_udp(&st, gl_q_max_udp_payload(0), false, probes);
  assert_int_equal(st.max_tx_udp_payload_size, 65488);
  assert_int_equal(st.no_pmtud, 0);
  assert_int_equal(st.pmtud_probeslen, 3);
  assert_int_equal(st.pmtud_probes[0], 65488);
  assert_int_equal(st.pmtud_probes[1], 8952);
  assert_int_equal(st.pmtud_probes[2], 1452);
  ngtcp2_settings_default(&st);
  gl_q_settings_udp(&st, gl_q_max_udp_payload(1452), false, probes);
  assert_int_equal(st.pmtud_probeslen, 1);
  assert_int_equal(st.pmtud_probes[0], 1452);
  ngtcp2_settings_default(&st);
  gl_q_settings_udp(&st, gl_q_max_udp_payload(500), false, probes); /* raised to 1200 */
  assert_int_equal(st.max_tx_udp_payload_size, 1200);
  assert_int_equal(st.no_pmtud, 1);
  ngtcp2_settings_default(&st);
  gl_q_settings_udp(&st, gl_q_max_udp_payload(1u << 20), true, probes); /* capped */
  assert_int_equal(st.max_tx_udp_payload_size, 65527);
  assert_int_equal(st.no_pmtud, 1);
  assert_int_equal(st.no_tx_udp_payload_size_shaping, 1);
}

static struct sockaddr_storage sa(const char *ip) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  if (strchr(ip, ':')) {
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    a6->sin6_family = AF_INET6;
    assert_int_equal(inet_pton(AF_INET6, ip, &a6->sin6_addr), 1);
  } else {
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    a4->sin_family = AF_INET;
    assert_int_equal(inet_pton(AF_INET, ip, &a4->sin_addr), 1);
  }
  return ss;
}

static bool local_path(const char *local, const char *remote) {
  struct sockaddr_storage l = sa(local), r = sa(remote);
  return gl_q_path_is_local((struct sockaddr *)&l, (struct sockaddr *)&r);
}

static void test_local_paths(void **state) {
  (void)state;
  assert_true(local_path("127.0.0.1", "127.0.0.1"));
  assert_true(local_path("0.0.0.0", "127.8.9.10"));
  assert_true(local_path("::1", "::1"));
  assert_true(local_path("::", "::ffff:127.0.0.1"));
  assert_true(local_path("10.1.2.3", "10.1.2.3"));
  assert_true(local_path("::ffff:10.1.2.3", "::ffff:10.1.2.3"));
  assert_true(local_path("fd00::5", "fd00::5"));
  assert_false(local_path("10.1.2.3", "10.1.2.4"));
  assert_false(local_path("::", "::ffff:10.1.2.4"));
  assert_false(local_path("fd00::5", "fd00::6"));
  assert_false(local_path("0.0.0.0", "192.168.1.1"));
}

/* ======================================================================
 * Bulk transfers
 * ==================================================================== */

/* Fills p with n bytes no pattern repeats in (xorshift). */
static void fill_random(uint8_t *p, size_t n, uint64_t seed) {
  uint64_t x = seed | 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p[i] = (uint8_t)(x >> 24);
  }
}

/* Sends "CKSUM:" + n random bytes (handed over with gl_qclient_send_take)
 * and checks the count and checksum the server computed. */
static void upload_checked(gl_qclient *c, size_t n, uint64_t seed) {
  uint8_t *msg = malloc(n + 6);
  assert_non_null(msg);
  memcpy(msg, "CKSUM:", 6);
  fill_random(msg + 6, n, seed);
  char want[64];
  snprintf(want, sizeof want, "%zu:%016llx", n, (unsigned long long)fnv1a(msg + 6, n));
  uint64_t tok = 0;
  char err[512] = "";
  int rc = gl_qclient_send_take(c, msg, n + 6, &tok, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "send_take: %d %s\n", rc, err);
  assert_int_equal(rc, GL_QC_OK);
  wait_text(c, tok, want);
}

/* Asks for n pattern bytes ("BIG:", a taken reply) and checks every one;
 * hands the buffer back with gl_qclient_release. */
static void download_checked(gl_qclient *c, size_t n) {
  char req[32];
  int len = snprintf(req, sizeof req, "BIG:%zu", n);
  uint8_t *resp = NULL;
  size_t rlen = 0;
  char err[512] = "";
  int rc = gl_qclient_request(c, (const uint8_t *)req, (size_t)len, &resp, &rlen, err,
                              sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "request: %d %s\n", rc, err);
  assert_int_equal(rc, GL_QC_OK);
  assert_int_equal(rlen, n);
  for (size_t i = 0; i < n; i++)
    if (resp[i] != pattern_byte(i)) fail_msg("response byte %zu differs", i);
  gl_qclient_release(c, resp, rlen);
}

/* 64 MiB each way on one connection, twice (the second time through the
 * buffers both sides kept), checked byte for byte. */
static void test_transfer_64mib(void **state) {
  (void)state;
  enum { MIB64 = 64u << 20 };
  /* Filling 64 MiB between the connect and the send takes seconds under
   * ASan on a loaded host: longer than the default 5 s idle timeout. */
  server_opts o = {.max_message_bytes = MIB64 + 64, .idle_timeout_ms = 60000};
  server_fx *fx = server_start(&o);
  gl_qclient_config cfg = pin_config(fx->port);
  cfg.max_response_bytes = MIB64;
  cfg.timeout_ms = 60000;
  gl_qclient *c = connect_ok(&cfg);
  for (int round = 0; round < 2; round++) {
    upload_checked(c, MIB64, 0x1234 + (uint64_t)round);
    download_checked(c, MIB64);
  }
  assert_false(gl_qclient_dead(c));
  gl_qclient_del(c);
  server_stop(fx);
}

/* Datagrams of at most 1452 bytes (an Ethernet path): the server sends
 * runs of them with GSO, the client with sendmmsg only; four transfers at
 * once each way, checked. */
static void test_transfer_small_datagrams(void **state) {
  (void)state;
  enum { N = 4, SIZE = 3u << 20 };
  server_opts o = {.max_message_bytes = SIZE + 64, .max_udp_payload_bytes = 1452};
  server_fx *fx = server_start(&o);
  gl_qclient_config cfg = pin_config(fx->port);
  cfg.max_udp_payload_bytes = 1452;
  cfg.no_gso = true;
  cfg.timeout_ms = 60000;
  gl_qclient *c = connect_ok(&cfg);
  uint8_t *msgs[N];
  uint64_t toks[N];
  char want[N][64];
  for (int i = 0; i < N; i++) {
    msgs[i] = malloc(SIZE + 6);
    assert_non_null(msgs[i]);
    memcpy(msgs[i], "CKSUM:", 6);
    fill_random(msgs[i] + 6, SIZE, 77 + (uint64_t)i);
    snprintf(want[i], sizeof want[i], "%u:%016llx", (unsigned)SIZE,
             (unsigned long long)fnv1a(msgs[i] + 6, SIZE));
    toks[i] = send_ok(c, msgs[i], SIZE + 6);
  }
  for (int i = N - 1; i >= 0; i--) {
    wait_text(c, toks[i], want[i]);
    free(msgs[i]);
  }
  char req[32];
  int len = snprintf(req, sizeof req, "SIZE:%u", (unsigned)SIZE);
  for (int i = 0; i < N; i++) toks[i] = send_ok(c, req, (size_t)len);
  for (int i = 0; i < N; i++) {
    uint8_t *resp = NULL;
    size_t rlen = 0;
    char err[512] = "";
    assert_int_equal(gl_qclient_wait(c, toks[i], &resp, &rlen, err, sizeof err), GL_QC_OK);
    assert_int_equal(rlen, SIZE);
    for (size_t k = 0; k < rlen; k++)
      if (resp[k] != pattern_byte(k)) fail_msg("response %d byte %zu differs", i, k);
    free(resp);
  }
  gl_qclient_del(c);
  server_stop(fx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fingerprint_parse),
      cmocka_unit_test(test_self_signed_keeps_pair),
      cmocka_unit_test(test_pin),
      cmocka_unit_test(test_ca_file),
      cmocka_unit_test(test_listen_families),
      cmocka_unit_test(test_insecure_and_wrong_pin),
      cmocka_unit_test(test_cert_identity),
      cmocka_unit_test(test_mtls),
      cmocka_unit_test(test_bound_identity),
      cmocka_unit_test(test_local_identity),
      cmocka_unit_test(test_dreq_identity),
      cmocka_unit_test(test_shard_bind),
      cmocka_unit_test(test_shard_group),
      cmocka_unit_test(test_nothing_listening),
      cmocka_unit_test(test_connection_budget),
      cmocka_unit_test(test_big_roundtrip),
      cmocka_unit_test(test_too_large),
      cmocka_unit_test(test_header_verdict),
      cmocka_unit_test(test_header_end),
      cmocka_unit_test(test_sequential_1000),
      cmocka_unit_test(test_concurrent_clients),
      cmocka_unit_test(test_deferred_and_orphaned),
      cmocka_unit_test(test_idle_and_keepalive),
      cmocka_unit_test(test_garbage_datagrams),
      cmocka_unit_test(test_server_shutdown),
      cmocka_unit_test(test_retry_always),
      cmocka_unit_test(test_retry_token_helper),
      cmocka_unit_test(test_retry_token_packets),
      cmocka_unit_test(test_connections_per_address),
      cmocka_unit_test(test_retry_threshold),
      cmocka_unit_test(test_handshake_timeout),
      cmocka_unit_test(test_initial_flood_per_address),
      cmocka_unit_test(test_pipeline_500_reverse),
      cmocka_unit_test(test_pipeline_2000_unwaited),
      cmocka_unit_test(test_pipeline_out_of_order),
      cmocka_unit_test(test_pipeline_wait_timeout),
      cmocka_unit_test(test_pipeline_cancel),
      cmocka_unit_test(test_pipeline_bad_tokens),
      cmocka_unit_test(test_pipeline_too_large),
      cmocka_unit_test(test_pipeline_big_and_small),
      cmocka_unit_test(test_pipeline_dead),
      cmocka_unit_test(test_pipeline_10k_window),
      cmocka_unit_test(test_udp_settings),
      cmocka_unit_test(test_local_paths),
      cmocka_unit_test(test_transfer_64mib),
      cmocka_unit_test(test_transfer_small_datagrams),
  };
  if (getenv("GL_TEST_FILTER")) cmocka_set_test_filter(getenv("GL_TEST_FILTER"));
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
