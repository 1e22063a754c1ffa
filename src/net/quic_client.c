/*
 * quic_client.c - the blocking client half of quic.h: one QUIC connection
 * (ngtcp2 + GnuTLS) on a connected UDP socket, driven by poll() inside each
 * call. No threads, no globals: distinct clients may run in parallel
 * threads.
 *
 * A request is one client-opened bidirectional stream: the request bytes
 * (copied, since ngtcp2 may retransmit them after the call returns) go out
 * with FIN, the response is read until FIN into a growing buffer. The
 * stream's send buffer is freed by the stream_close callback, possibly
 * during a later call.
 *
 * Errors that end the connection (peer closed, idle timeout, TLS failure)
 * make the client "dead": every later request fails with the same code and
 * message. A request timeout or an oversized response only abandons that
 * stream (RESET_STREAM + STOP_SENDING) and keeps the connection.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include "common/util.h"
#include "net/ngtcp2_shim.h"
#include "net/quic.h"
#include "net/quic_internal.h"
#include "net/tls.h"

#define DEFAULT_TIMEOUT_MS 10000u
#define DEFAULT_MAX_RESPONSE (64u << 20)
/* Our side of the idle timeout; the effective one is the smaller of both. */
#define CLIENT_IDLE_TIMEOUT_NS (120ull * NGTCP2_SECONDS)
#define SOCKET_BUFFER_BYTES (4 << 20)
#define READ_BATCH 256

enum verify_mode { VERIFY_SYSTEM, VERIFY_CA, VERIFY_PIN, VERIFY_INSECURE };

enum wait_for { WAIT_HANDSHAKE, WAIT_STREAM_SLOT, WAIT_RESPONSE };

/* A stream we opened; lives until ngtcp2 closes it. */
typedef struct cstream {
  struct cstream *prev, *next;
  int64_t id;
  uint8_t *sbuf;
  size_t slen, soff;
  bool send_done; /* everything (and FIN) handed to ngtcp2, or write side dead */
  bool current;   /* the request in progress */
} cstream;

struct gl_qclient {
  int fd;
  struct sockaddr_storage local, remote;
  socklen_t locallen, remotelen;
  ngtcp2_conn *conn;
  gnutls_session_t tls;
  gnutls_certificate_credentials_t cred;
  ngtcp2_crypto_conn_ref ref;

  char host[256];
  uint16_t port;
  bool host_is_ip;
  enum verify_mode verify;
  char pin[GL_TLS_FP_HEX_LEN];
  uint32_t timeout_ms;
  size_t max_response;

  bool handshake_done;
  bool refused;        /* ICMP said nobody listens (try the next address) */
  int sock_err;        /* socket error seen, not yet acted on */
  char tls_err[300];   /* set by the verify function or the ALPN check */
  bool dead;
  int dead_code;
  char dead_msg[1600];

  cstream *streams;
  cstream *cur; /* stream of the request in progress */
  uint8_t *resp;
  size_t resp_len, resp_cap;
  bool resp_fin, resp_too_large, resp_nomem, resp_reset;
  uint64_t resp_reset_code;

  uint8_t pend[GL_Q_MAX_PKT]; /* one packet the socket refused (EAGAIN) */
  size_t pend_len;
  uint8_t rbuf[GL_Q_RECV_BUF];
};

/* ======================================================================
 * Errors
 * ==================================================================== */

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || errlen == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* Marks the connection dead with code and message (first reason wins). */
static void cl_die(gl_qclient *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void cl_die(gl_qclient *c, int code, const char *fmt, ...) {
  if (c->dead) return;
  c->dead = true;
  c->dead_code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->dead_msg, sizeof c->dead_msg, fmt, ap);
  va_end(ap);
}

static int cl_dead_error(gl_qclient *c, char *err, size_t errlen) {
  set_err(err, errlen, "%s", c->dead_msg);
  return c->dead_code;
}

/* Sends CONNECTION_CLOSE (best effort). */
static void cl_send_close(gl_qclient *c, const gl_ng_ccerr *e) {
  if (!c->conn || gl_ng_conn_in_closing_period(c->conn) || gl_ng_conn_in_draining_period(c->conn))
    return;
  uint8_t buf[GL_Q_MAX_PKT];
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  ngtcp2_pkt_info pi;
  ngtcp2_ssize n = ngtcp2_conn_write_connection_close(c->conn, &ps.path, &pi, buf, sizeof buf, e,
                                                      gl_q_now_ns());
  if (n > 0) (void)send(c->fd, buf, (size_t)n, MSG_DONTWAIT);
}

/* Text for a failed certificate check: our own message (pin, ALPN), or
 * GnuTLS's verification status, or the TLS alert. */
static void cl_tls_failure_text(gl_qclient *c, char *buf, size_t len) {
  if (c->tls_err[0]) {
    snprintf(buf, len, "%s", c->tls_err);
    return;
  }
  unsigned status = c->tls ? gnutls_session_get_verify_cert_status(c->tls) : 0;
  if (status != 0) {
    gnutls_datum_t out = {NULL, 0};
    if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out, 0) == 0) {
      snprintf(buf, len, "certificate verification failed for %s: %s", c->host,
               (const char *)out.data);
      gnutls_free(out.data);
      return;
    }
  }
  uint8_t alert = ngtcp2_conn_get_tls_alert(c->conn);
  const char *name = gnutls_alert_get_name((gnutls_alert_description_t)alert);
  snprintf(buf, len, "TLS handshake with %s failed (alert %u: %s)", c->host, (unsigned)alert,
           name ? name : "unknown");
}

/* Turns an ngtcp2 error from read/write/expiry into a dead connection. */
static void cl_fail_liberr(gl_qclient *c, int liberr) {
  gl_ng_ccerr e;
  char why[1024];
  switch (liberr) {
  case NGTCP2_ERR_DRAINING: {
    gl_ng_conn_get_ccerr(c->conn, &e);
    gl_q_describe_ccerr(&e, why, sizeof why);
    if (e.type == GL_NG_CCERR_TYPE_TRANSPORT && e.error_code >= NGTCP2_CRYPTO_ERROR &&
        e.error_code <= NGTCP2_CRYPTO_ERROR + 0xff)
      cl_die(c, GL_QC_TLS, "%s:%u rejected the TLS handshake (%s)", c->host, (unsigned)c->port,
             why);
    else if (e.type == GL_NG_CCERR_TYPE_TRANSPORT && e.error_code == NGTCP2_CONNECTION_REFUSED)
      cl_die(c, GL_QC_UNREACHABLE, "%s:%u refused the connection (%s)", c->host,
             (unsigned)c->port, why);
    else
      cl_die(c, GL_QC_UNREACHABLE, "connection closed by %s:%u (%s)", c->host, (unsigned)c->port,
             why);
    return;
  }
  case NGTCP2_ERR_IDLE_CLOSE:
    cl_die(c, GL_QC_UNREACHABLE, "connection to %s:%u closed after the idle timeout", c->host,
           (unsigned)c->port);
    return;
  case NGTCP2_ERR_HANDSHAKE_TIMEOUT:
    cl_die(c, GL_QC_UNREACHABLE, "no QUIC handshake with %s:%u within %u ms", c->host,
           (unsigned)c->port, c->timeout_ms);
    return;
  case NGTCP2_ERR_RECV_VERSION_NEGOTIATION:
    cl_die(c, GL_QC_UNREACHABLE, "%s:%u does not speak QUIC version 1", c->host,
           (unsigned)c->port);
    return;
  case NGTCP2_ERR_CRYPTO:
    cl_tls_failure_text(c, why, sizeof why);
    gl_ng_ccerr_default(&e);
    gl_ng_ccerr_set_tls_alert(&e, ngtcp2_conn_get_tls_alert(c->conn));
    cl_send_close(c, &e);
    cl_die(c, GL_QC_TLS, "%s", why);
    return;
  default:
    gl_ng_ccerr_default(&e);
    gl_ng_ccerr_set_liberr(&e, liberr);
    cl_send_close(c, &e);
    if (liberr == NGTCP2_ERR_CALLBACK_FAILURE && c->tls_err[0])
      cl_die(c, GL_QC_TLS, "%s", c->tls_err);
    else if (liberr == NGTCP2_ERR_NOMEM)
      cl_die(c, GL_QC_NOMEM, "out of memory");
    else
      cl_die(c, GL_QC_UNREACHABLE, "QUIC connection to %s:%u failed: %s", c->host,
             (unsigned)c->port, ngtcp2_strerror(liberr));
    return;
  }
}

static void cl_socket_error(gl_qclient *c, int err) {
  if (c->dead) return;
  if (err == ECONNREFUSED) {
    c->refused = true;
    cl_die(c, GL_QC_UNREACHABLE, "connection refused by %s:%u (nothing listening on UDP port %u?)",
           c->host, (unsigned)c->port, (unsigned)c->port);
  } else {
    if (err == EHOSTUNREACH || err == ENETUNREACH || err == EHOSTDOWN || err == EADDRNOTAVAIL)
      c->refused = true;
    cl_die(c, GL_QC_UNREACHABLE, "%s:%u unreachable: %s", c->host, (unsigned)c->port,
           strerror(err));
  }
}

/* ======================================================================
 * I/O
 * ==================================================================== */

static bool errno_is_busy(int e) { return e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS; }

/* Sends one packet; false when the socket is full (packet kept). */
static bool cl_send(gl_qclient *c, const uint8_t *pkt, size_t len) {
  for (;;) {
    if (send(c->fd, pkt, len, MSG_DONTWAIT) >= 0) return true;
    if (errno == EINTR) continue;
    if (errno_is_busy(errno)) {
      if (pkt != c->pend) memcpy(c->pend, pkt, len);
      c->pend_len = len;
      return false;
    }
    /* An ICMP error from an earlier packet; decided after reading what is
     * queued (the server's CONNECTION_CLOSE says more). */
    if (!c->sock_err) c->sock_err = errno;
    return true;
  }
}

/* Writes everything ngtcp2 lets us send now: request bytes, ACKs,
 * retransmissions, handshake packets. */
static void cl_write(gl_qclient *c) {
  if (c->dead) return;
  if (c->pend_len) {
    if (!cl_send(c, c->pend, c->pend_len)) return;
    c->pend_len = 0;
  }
  uint64_t now = gl_q_now_ns();
  uint8_t buf[GL_Q_MAX_PKT];
  size_t maxlen = ngtcp2_conn_get_path_max_tx_udp_payload_size(c->conn);
  if (maxlen > sizeof buf || maxlen == 0) maxlen = sizeof buf;
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  ngtcp2_pkt_info pi;
  cstream *st = (c->cur && !c->cur->send_done) ? c->cur : NULL;
  bool blocked = false;
  for (;;) {
    int64_t sid = -1;
    ngtcp2_vec v = {0};
    size_t vcnt = 0;
    uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_NONE;
    if (st && !blocked) {
      sid = st->id;
      v.base = st->sbuf + st->soff;
      v.len = st->slen - st->soff;
      vcnt = 1;
      flags = NGTCP2_WRITE_STREAM_FLAG_MORE | NGTCP2_WRITE_STREAM_FLAG_FIN;
    }
    ngtcp2_ssize ndata = -1;
    ngtcp2_ssize n = ngtcp2_conn_writev_stream(c->conn, &ps.path, &pi, buf, maxlen, &ndata,
                                               flags, sid, &v, vcnt, now);
    if (sid >= 0 && ndata >= 0) {
      st->soff += (size_t)ndata;
      if (st->soff == st->slen) {
        st->send_done = true;
        st = NULL;
      }
    }
    if (n < 0) {
      if (n == NGTCP2_ERR_WRITE_MORE) continue;
      if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED && sid >= 0) {
        blocked = true;
        continue;
      }
      if ((n == NGTCP2_ERR_STREAM_SHUT_WR || n == NGTCP2_ERR_STREAM_NOT_FOUND) && sid >= 0) {
        /* The server refused the rest (STOP_SENDING); keep reading. */
        st->send_done = true;
        st = NULL;
        continue;
      }
      cl_fail_liberr(c, (int)n);
      return;
    }
    if (n == 0) break;
    if (!cl_send(c, buf, (size_t)n)) break;
  }
  ngtcp2_conn_update_pkt_tx_time(c->conn, now);
}

static void cl_read(gl_qclient *c) {
  ngtcp2_path path = {
      .local = {.addr = (struct sockaddr *)&c->local, .addrlen = c->locallen},
      .remote = {.addr = (struct sockaddr *)&c->remote, .addrlen = c->remotelen},
  };
  for (int i = 0; i < READ_BATCH && !c->dead; i++) {
    ssize_t n = recv(c->fd, c->rbuf, sizeof c->rbuf, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      /* Reported once; datagrams queued before it are still readable. */
      if (!c->sock_err) c->sock_err = errno;
      continue;
    }
    if (n == 0) continue;
    ngtcp2_pkt_info pi = {0};
    int rv = ngtcp2_conn_read_pkt(c->conn, &path, &pi, c->rbuf, (size_t)n, gl_q_now_ns());
    if (rv != 0) {
      cl_fail_liberr(c, rv);
      break;
    }
  }
  if (c->sock_err) {
    cl_socket_error(c, c->sock_err); /* no-op when already dead */
    c->sock_err = 0;
  }
}

static bool cl_cond(gl_qclient *c, enum wait_for what) {
  switch (what) {
  case WAIT_HANDSHAKE: return c->handshake_done;
  case WAIT_STREAM_SLOT: return ngtcp2_conn_get_streams_bidi_left(c->conn) > 0;
  case WAIT_RESPONSE:
    return !c->cur || c->resp_fin || c->resp_too_large || c->resp_nomem || c->resp_reset;
  }
  return true;
}

/* Drives the connection until `what` holds, the connection dies, or the
 * deadline passes. GL_QC_OK, GL_QC_TIMEOUT, or the connection's error. */
static int cl_wait(gl_qclient *c, enum wait_for what, uint64_t deadline_ns) {
  for (;;) {
    uint64_t now = gl_q_now_ns();
    if (!c->dead && ngtcp2_conn_get_expiry(c->conn) <= now) {
      int rv = ngtcp2_conn_handle_expiry(c->conn, now);
      if (rv != 0) cl_fail_liberr(c, rv);
    }
    cl_write(c);
    if (c->sock_err) cl_read(c);
    if (c->dead) return c->dead_code;
    if (cl_cond(c, what)) return GL_QC_OK;
    now = gl_q_now_ns();
    if (now >= deadline_ns) return GL_QC_TIMEOUT;
    uint64_t until = ngtcp2_conn_get_expiry(c->conn);
    if (until > deadline_ns) until = deadline_ns;
    int ms = 0;
    if (until > now) {
      uint64_t d = (until - now + 999999) / 1000000;
      ms = d > INT_MAX ? INT_MAX : (int)d;
    }
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN | (c->pend_len ? POLLOUT : 0)};
    int pr = poll(&pfd, 1, ms);
    if (pr < 0) {
      if (errno == EINTR) continue;
      cl_die(c, GL_QC_UNREACHABLE, "poll: %s", strerror(errno));
      continue;
    }
    if (pr > 0 && (pfd.revents & (POLLIN | POLLERR | POLLHUP))) cl_read(c);
  }
}

/* ======================================================================
 * ngtcp2 and GnuTLS callbacks
 * ==================================================================== */

static ngtcp2_conn *conn_ref_get(ngtcp2_crypto_conn_ref *ref) {
  return ((gl_qclient *)ref->user_data)->conn;
}

static int cb_handshake_completed(ngtcp2_conn *conn, void *user_data) {
  (void)conn;
  gl_qclient *c = user_data;
  if (!gl_q_alpn_ok(c->tls)) {
    snprintf(c->tls_err, sizeof c->tls_err, "%s:%u did not negotiate ALPN gpulease/1", c->host,
             (unsigned)c->port);
    return NGTCP2_ERR_CALLBACK_FAILURE;
  }
  c->handshake_done = true;
  return 0;
}

static int cb_recv_stream_data(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id,
                               uint64_t offset, const uint8_t *data, size_t datalen,
                               void *user_data, void *stream_user_data) {
  (void)offset;
  gl_qclient *c = user_data;
  cstream *st = stream_user_data;
  ngtcp2_conn_extend_max_offset(conn, datalen);
  if (!st || !st->current || c->resp_too_large || c->resp_nomem) return 0;
  if (datalen > c->max_response - c->resp_len) {
    c->resp_too_large = true;
    return 0;
  }
  if (c->resp_len + datalen > c->resp_cap) {
    size_t cap = c->resp_cap ? c->resp_cap : 16384;
    while (cap < c->resp_len + datalen) cap *= 2;
    if (cap > c->max_response) cap = c->max_response;
    uint8_t *n = realloc(c->resp, cap);
    if (!n) {
      c->resp_nomem = true;
      return 0;
    }
    c->resp = n;
    c->resp_cap = cap;
  }
  if (datalen) memcpy(c->resp + c->resp_len, data, datalen);
  c->resp_len += datalen;
  ngtcp2_conn_extend_max_stream_offset(conn, stream_id, datalen);
  if (flags & NGTCP2_STREAM_DATA_FLAG_FIN) c->resp_fin = true;
  return 0;
}

static void cstream_free(gl_qclient *c, cstream *st) {
  if (st->prev) st->prev->next = st->next;
  else c->streams = st->next;
  if (st->next) st->next->prev = st->prev;
  if (c->cur == st) c->cur = NULL;
  free(st->sbuf);
  free(st);
}

static int cb_stream_close(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id,
                           uint64_t app_error_code, void *user_data, void *stream_user_data) {
  (void)conn;
  (void)stream_id;
  gl_qclient *c = user_data;
  cstream *st = stream_user_data;
  if (!st) return 0;
  if (st->current && !c->resp_fin && !c->resp_reset) {
    c->resp_reset = true;
    c->resp_reset_code =
        (flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET) ? app_error_code : 0;
  }
  cstream_free(c, st);
  return 0;
}

static int cb_stream_reset(ngtcp2_conn *conn, int64_t stream_id, uint64_t final_size,
                           uint64_t app_error_code, void *user_data, void *stream_user_data) {
  (void)conn;
  (void)stream_id;
  (void)final_size;
  gl_qclient *c = user_data;
  cstream *st = stream_user_data;
  if (st && st->current && !c->resp_fin) {
    c->resp_reset = true;
    c->resp_reset_code = app_error_code;
  }
  return 0;
}

static int cb_get_new_connection_id(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token,
                                    size_t cidlen, void *user_data) {
  (void)conn;
  (void)user_data;
  if (cidlen > NGTCP2_MAX_CIDLEN || gl_q_random(cid->data, cidlen) != 0 ||
      gl_q_random(token, NGTCP2_STATELESS_RESET_TOKENLEN) != 0)
    return NGTCP2_ERR_CALLBACK_FAILURE;
  cid->datalen = cidlen;
  return 0;
}

/* Certificate pinning: SHA-256 of the leaf DER certificate. */
static int verify_pin(gnutls_session_t session) {
  ngtcp2_crypto_conn_ref *ref = gnutls_session_get_ptr(session);
  gl_qclient *c = ref->user_data;
  unsigned n = 0;
  const gnutls_datum_t *certs = gnutls_certificate_get_peers(session, &n);
  if (!certs || n == 0) {
    snprintf(c->tls_err, sizeof c->tls_err, "%s:%u sent no certificate", c->host,
             (unsigned)c->port);
    return -1;
  }
  char got[GL_TLS_FP_HEX_LEN];
  gl_tls_der_fingerprint(certs[0].data, certs[0].size, got);
  if (!gl_ct_equal((const uint8_t *)got, (const uint8_t *)c->pin, GL_TLS_FP_HEX_LEN - 1)) {
    snprintf(c->tls_err, sizeof c->tls_err,
             "certificate fingerprint mismatch: expected %s, got %s", c->pin, got);
    return -1;
  }
  return 0;
}

/* ======================================================================
 * Connecting
 * ==================================================================== */

static void cl_teardown(gl_qclient *c) {
  while (c->streams) cstream_free(c, c->streams);
  if (c->conn) ngtcp2_conn_del(c->conn);
  c->conn = NULL;
  if (c->tls) gnutls_deinit(c->tls);
  c->tls = NULL;
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
  c->pend_len = 0;
}

static int cl_tls_init(gl_qclient *c, char *err, size_t errlen) {
  int rc = gnutls_init(&c->tls, GNUTLS_CLIENT | GNUTLS_NO_END_OF_EARLY_DATA);
  if (rc != 0) {
    c->tls = NULL;
    goto fail;
  }
  const char *errpos = NULL;
  if ((rc = gnutls_priority_set_direct(c->tls, GL_Q_PRIORITY, &errpos)) != 0) goto fail;
  if ((rc = ngtcp2_crypto_gnutls_configure_client_session(c->tls)) != 0) goto fail;
  if ((rc = gnutls_alpn_set_protocols(c->tls, gl_q_alpn(), 1, 0)) != 0) goto fail;
  if (!c->host_is_ip &&
      (rc = gnutls_server_name_set(c->tls, GNUTLS_NAME_DNS, c->host, strlen(c->host))) != 0)
    goto fail;
  if ((rc = gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, c->cred)) != 0) goto fail;
  switch (c->verify) {
  case VERIFY_SYSTEM:
  case VERIFY_CA:
    /* Chain and host name (DNS SAN, or IP SAN for address literals). */
    gnutls_session_set_verify_cert(c->tls, c->host, 0);
    break;
  case VERIFY_PIN:
    gnutls_session_set_verify_function(c->tls, verify_pin);
    break;
  case VERIFY_INSECURE:
    break;
  }
  c->ref.get_conn = conn_ref_get;
  c->ref.user_data = c;
  gnutls_session_set_ptr(c->tls, &c->ref);
  ngtcp2_conn_set_tls_native_handle(c->conn, c->tls);
  return 0;
fail:
  set_err(err, errlen, "TLS session setup failed: %s", gnutls_strerror(rc));
  return -1;
}

/* One connection attempt to one resolved address. */
static int cl_attempt(gl_qclient *c, const struct addrinfo *ai, uint64_t deadline_ns, char *err,
                      size_t errlen) {
  c->dead = false;
  c->refused = false;
  c->sock_err = 0;
  c->handshake_done = false;
  c->tls_err[0] = 0;
  c->fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->fd < 0) {
    set_err(err, errlen, "socket: %s", strerror(errno));
    c->refused = true;
    return GL_QC_UNREACHABLE;
  }
  int size = SOCKET_BUFFER_BYTES;
  (void)setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  (void)setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    set_err(err, errlen, "%s:%u unreachable: %s", c->host, (unsigned)c->port, strerror(errno));
    c->refused = true;
    return GL_QC_UNREACHABLE;
  }
  memcpy(&c->remote, ai->ai_addr, ai->ai_addrlen);
  c->remotelen = ai->ai_addrlen;
  c->locallen = sizeof c->local;
  if (getsockname(c->fd, (struct sockaddr *)&c->local, &c->locallen) != 0) {
    set_err(err, errlen, "getsockname: %s", strerror(errno));
    return GL_QC_UNREACHABLE;
  }

  ngtcp2_cid dcid, scid;
  dcid.datalen = GL_Q_SCID_LEN;
  scid.datalen = GL_Q_SCID_LEN;
  if (gl_q_random(dcid.data, dcid.datalen) != 0 || gl_q_random(scid.data, scid.datalen) != 0) {
    set_err(err, errlen, "no randomness for connection IDs");
    return GL_QC_NOMEM;
  }
  ngtcp2_callbacks cb = {
      .client_initial = ngtcp2_crypto_client_initial_cb,
      .recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
      .handshake_completed = cb_handshake_completed,
      .encrypt = ngtcp2_crypto_encrypt_cb,
      .decrypt = ngtcp2_crypto_decrypt_cb,
      .hp_mask = ngtcp2_crypto_hp_mask_cb,
      .recv_stream_data = cb_recv_stream_data,
      .stream_close = cb_stream_close,
      .recv_retry = ngtcp2_crypto_recv_retry_cb,
      .rand = gl_q_rand_cb,
      .get_new_connection_id = cb_get_new_connection_id,
      .update_key = ngtcp2_crypto_update_key_cb,
      .stream_reset = cb_stream_reset,
      .delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb,
      .delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
      .get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb,
      .version_negotiation = ngtcp2_crypto_version_negotiation_cb,
  };
  ngtcp2_settings settings;
  ngtcp2_settings_default(&settings);
  settings.initial_ts = gl_q_now_ns();
  settings.handshake_timeout = (uint64_t)c->timeout_ms * NGTCP2_MILLISECONDS;
  settings.max_window = GL_Q_MAX_CONN_WINDOW;
  settings.max_stream_window = GL_Q_MAX_STREAM_WINDOW;
  ngtcp2_transport_params params;
  ngtcp2_transport_params_default(&params);
  params.initial_max_stream_data_bidi_local = GL_Q_STREAM_WINDOW; /* responses */
  params.initial_max_stream_data_bidi_remote = 0;
  params.initial_max_stream_data_uni = 0;
  params.initial_max_data = GL_Q_CONN_WINDOW;
  params.initial_max_streams_bidi = 0;
  params.initial_max_streams_uni = 0;
  params.max_idle_timeout = CLIENT_IDLE_TIMEOUT_NS;

  ngtcp2_path path = {
      .local = {.addr = (struct sockaddr *)&c->local, .addrlen = c->locallen},
      .remote = {.addr = (struct sockaddr *)&c->remote, .addrlen = c->remotelen},
  };
  int rv = ngtcp2_conn_client_new(&c->conn, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &cb,
                                  &settings, &params, NULL, c);
  if (rv != 0) {
    c->conn = NULL;
    set_err(err, errlen, "QUIC setup failed: %s", ngtcp2_strerror(rv));
    return rv == NGTCP2_ERR_NOMEM ? GL_QC_NOMEM : GL_QC_INVALID;
  }
  if (cl_tls_init(c, err, errlen) != 0) return GL_QC_TLS;

  int rc = cl_wait(c, WAIT_HANDSHAKE, deadline_ns);
  if (rc == GL_QC_TIMEOUT) {
    set_err(err, errlen, "no QUIC handshake with %s:%u within %u ms", c->host, (unsigned)c->port,
            c->timeout_ms);
    return GL_QC_UNREACHABLE;
  }
  if (rc != GL_QC_OK) return cl_dead_error(c, err, errlen);

  /* Keep the connection alive while we wait for slow responses: PING at a
   * third of the effective idle timeout. */
  const ngtcp2_transport_params *rp = ngtcp2_conn_get_remote_transport_params(c->conn);
  uint64_t idle = CLIENT_IDLE_TIMEOUT_NS;
  if (rp && rp->max_idle_timeout && rp->max_idle_timeout < idle) idle = rp->max_idle_timeout;
  ngtcp2_conn_set_keep_alive_timeout(c->conn, idle / 3);
  return GL_QC_OK;
}

static bool is_ip_literal(const char *host) {
  unsigned char buf[sizeof(struct in6_addr)];
  return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

static int cl_load_trust(gl_qclient *c, const gl_qclient_config *cfg, char *err,
                         size_t errlen) {
  int rc = gnutls_certificate_allocate_credentials(&c->cred);
  if (rc < 0) {
    c->cred = NULL;
    set_err(err, errlen, "TLS credentials: %s", gnutls_strerror(rc));
    return GL_QC_NOMEM;
  }
  switch (c->verify) {
  case VERIFY_CA:
    rc = gnutls_certificate_set_x509_trust_file(c->cred, cfg->ca_file, GNUTLS_X509_FMT_PEM);
    if (rc <= 0) {
      set_err(err, errlen, "cannot load CA certificates from %s: %s", cfg->ca_file,
              rc == 0 ? "no certificate found" : gnutls_strerror(rc));
      return GL_QC_INVALID;
    }
    break;
  case VERIFY_SYSTEM:
    rc = gnutls_certificate_set_x509_system_trust(c->cred);
    if (rc < 0) {
      set_err(err, errlen, "cannot load the system trust store: %s", gnutls_strerror(rc));
      return GL_QC_TLS;
    }
    break;
  default:
    break;
  }
  return GL_QC_OK;
}

int gl_qclient_connect(const gl_qclient_config *cfg, gl_qclient **out, char *err,
                       size_t errlen) {
  if (out) *out = NULL;
  if (!cfg || !out || !cfg->host || !*cfg->host || cfg->port == 0) {
    set_err(err, errlen, "invalid client configuration (host and port required)");
    return GL_QC_INVALID;
  }
  int modes = (cfg->ca_file != NULL) + (cfg->pin_sha256 != NULL) + (cfg->insecure ? 1 : 0);
  if (modes > 1) {
    set_err(err, errlen, "choose one of a CA file, a certificate pin, or insecure");
    return GL_QC_INVALID;
  }
  if (strlen(cfg->host) >= sizeof((gl_qclient *)0)->host) {
    set_err(err, errlen, "host name too long");
    return GL_QC_INVALID;
  }
  gl_qclient *c = calloc(1, sizeof *c);
  if (!c) {
    set_err(err, errlen, "out of memory");
    return GL_QC_NOMEM;
  }
  c->fd = -1;
  snprintf(c->host, sizeof c->host, "%s", cfg->host);
  c->port = cfg->port;
  c->host_is_ip = is_ip_literal(c->host);
  c->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : DEFAULT_TIMEOUT_MS;
  c->max_response = cfg->max_response_bytes ? cfg->max_response_bytes : DEFAULT_MAX_RESPONSE;
  c->verify = cfg->insecure ? VERIFY_INSECURE
              : cfg->pin_sha256 ? VERIFY_PIN
              : cfg->ca_file ? VERIFY_CA
              : VERIFY_SYSTEM;
  int rc;
  if (c->verify == VERIFY_PIN && gl_tls_parse_fingerprint(cfg->pin_sha256, c->pin) != 0) {
    set_err(err, errlen, "bad certificate fingerprint '%s': want 64 hex digits (colons allowed)",
            cfg->pin_sha256);
    rc = GL_QC_INVALID;
    goto fail;
  }
  if ((rc = cl_load_trust(c, cfg, err, errlen)) != GL_QC_OK) goto fail;

  char port[8];
  snprintf(port, sizeof port, "%u", (unsigned)c->port);
  struct addrinfo hints = {
      .ai_family = AF_UNSPEC,
      .ai_socktype = SOCK_DGRAM,
      .ai_protocol = IPPROTO_UDP,
      .ai_flags = AI_NUMERICSERV,
  };
  struct addrinfo *res = NULL;
  int gai = getaddrinfo(c->host, port, &hints, &res);
  if (gai != 0) {
    set_err(err, errlen, "cannot resolve %s: %s", c->host, gai_strerror(gai));
    rc = GL_QC_UNREACHABLE;
    goto fail;
  }
  uint64_t deadline = gl_q_now_ns() + (uint64_t)c->timeout_ms * NGTCP2_MILLISECONDS;
  rc = GL_QC_UNREACHABLE;
  set_err(err, errlen, "no usable address for %s", c->host);
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
    if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
    rc = cl_attempt(c, ai, deadline, err, errlen);
    if (rc == GL_QC_OK) break;
    bool try_next = rc == GL_QC_UNREACHABLE && c->refused && gl_q_now_ns() < deadline;
    cl_teardown(c);
    if (!try_next) break;
  }
  freeaddrinfo(res);
  if (rc != GL_QC_OK) goto fail;
  *out = c;
  if (err && errlen) err[0] = 0;
  return GL_QC_OK;

fail:
  gl_qclient_del(c);
  return rc;
}

/* ======================================================================
 * Requests
 * ==================================================================== */

static void cl_reset_response(gl_qclient *c) {
  free(c->resp);
  c->resp = NULL;
  c->resp_len = c->resp_cap = 0;
  c->resp_fin = c->resp_too_large = c->resp_nomem = c->resp_reset = false;
  c->resp_reset_code = 0;
}

/* Abandons the current stream (both directions) and forgets it. */
static void cl_abandon(gl_qclient *c) {
  if (c->cur) {
    c->cur->current = false;
    c->cur->send_done = true;
    if (!c->dead) gl_ng_conn_shutdown_stream(c->conn, c->cur->id, GL_Q_APP_CANCELLED);
    c->cur = NULL;
  }
  cl_write(c);
}

int gl_qclient_request(gl_qclient *c, const uint8_t *req, size_t len, uint8_t **resp,
                       size_t *resp_len, char *err, size_t errlen) {
  if (resp) *resp = NULL;
  if (resp_len) *resp_len = 0;
  if (!c || !resp || !resp_len || (!req && len)) {
    set_err(err, errlen, "invalid request arguments");
    return GL_QC_INVALID;
  }
  if (c->dead) return cl_dead_error(c, err, errlen);
  uint64_t deadline = gl_q_now_ns() + (uint64_t)c->timeout_ms * NGTCP2_MILLISECONDS;

  cstream *st = calloc(1, sizeof *st);
  uint8_t *copy = malloc(len ? len : 1);
  if (!st || !copy) {
    free(st);
    free(copy);
    set_err(err, errlen, "out of memory");
    return GL_QC_NOMEM;
  }
  if (len) memcpy(copy, req, len);
  st->sbuf = copy;
  st->slen = len;

  /* A new stream; at the server's concurrency limit, wait for a slot. */
  for (;;) {
    int rv = ngtcp2_conn_open_bidi_stream(c->conn, &st->id, st);
    if (rv == 0) break;
    int rc = GL_QC_UNREACHABLE;
    if (rv == NGTCP2_ERR_STREAM_ID_BLOCKED) rc = cl_wait(c, WAIT_STREAM_SLOT, deadline);
    else set_err(err, errlen, "cannot open a stream: %s", ngtcp2_strerror(rv));
    if (rc == GL_QC_OK) continue;
    free(st->sbuf);
    free(st);
    if (rc == GL_QC_TIMEOUT)
      set_err(err, errlen, "no stream available on the connection to %s:%u within %u ms",
              c->host, (unsigned)c->port, c->timeout_ms);
    else if (c->dead)
      return cl_dead_error(c, err, errlen);
    return rc;
  }
  st->current = true;
  st->next = c->streams;
  if (c->streams) c->streams->prev = st;
  c->streams = st;
  c->cur = st;
  cl_reset_response(c);

  int rc = cl_wait(c, WAIT_RESPONSE, deadline);
  if (rc == GL_QC_OK) {
    if (c->resp_too_large) {
      set_err(err, errlen, "response larger than %zu bytes", c->max_response);
      rc = GL_QC_TOO_LARGE;
    } else if (c->resp_nomem) {
      set_err(err, errlen, "out of memory for the response");
      rc = GL_QC_NOMEM;
    } else if (c->resp_fin) {
      *resp = c->resp ? c->resp : malloc(1);
      *resp_len = c->resp_len;
      c->resp = NULL;
      if (!*resp) {
        set_err(err, errlen, "out of memory");
        rc = GL_QC_NOMEM;
      }
    } else {
      set_err(err, errlen, "%s:%u reset the request stream (code 0x%llx)", c->host,
              (unsigned)c->port, (unsigned long long)c->resp_reset_code);
      rc = GL_QC_UNREACHABLE;
    }
  } else if (rc == GL_QC_TIMEOUT) {
    set_err(err, errlen, "no response from %s:%u within %u ms", c->host, (unsigned)c->port,
            c->timeout_ms);
  } else {
    (void)cl_dead_error(c, err, errlen);
  }
  if (rc == GL_QC_OK) {
    if (c->cur) {
      /* A reply before the whole request went out (the server refused
       * the rest): do not leave the stream half open. */
      if (!c->cur->send_done) gl_ng_conn_shutdown_stream(c->conn, c->cur->id, GL_Q_APP_CANCELLED);
      c->cur->send_done = true;
      c->cur->current = false;
    }
    c->cur = NULL;
    cl_write(c); /* acknowledge the response now */
    if (err && errlen) err[0] = 0;
  } else {
    cl_abandon(c);
  }
  cl_reset_response(c);
  return rc;
}

void gl_qclient_del(gl_qclient *c) {
  if (!c) return;
  if (c->conn && !c->dead && c->handshake_done) {
    gl_ng_ccerr e;
    gl_ng_ccerr_default(&e);
    gl_ng_ccerr_set_application_error(&e, GL_Q_APP_NO_ERROR, NULL, 0);
    cl_send_close(c, &e);
  }
  cl_teardown(c);
  cl_reset_response(c);
  if (c->cred) gnutls_certificate_free_credentials(c->cred);
  free(c);
}
