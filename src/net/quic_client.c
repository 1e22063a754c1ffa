/*
 * quic_client.c - the blocking client half of quic.h: one QUIC connection
 * (ngtcp2 + GnuTLS) on a connected UDP socket, driven by poll() inside each
 * call. No threads, no globals: distinct clients may run in parallel
 * threads.
 *
 * A request is one client-opened bidirectional stream: the request bytes
 * (copied, since ngtcp2 may retransmit them after the call returns) go out
 * with FIN, the response is read until FIN into the stream's own buffer.
 * Many requests may be outstanding (pipelining): each has a token (1, 2,
 * ...) found through a small hash table. The connection is only driven
 * inside calls (send, wait, request); responses that arrive meanwhile are
 * kept on their records until their wait.
 *
 * A record (cstream) lives while either side needs it: ngtcp2 (the stream
 * is open: it may still retransmit the request bytes) or the application
 * (the token is not yet spent by a wait or a cancel). A stream that closes
 * before its wait keeps its response; an abandoned stream (timeout,
 * cancel) stays until ngtcp2 closes it.
 *
 * Packet I/O is udp_io.c's, as for the server: a write round fills the
 * client's transmit buffer with packets (64 KiB each on loopback once path
 * MTU discovery found it) and hands them over at once (GSO, sendmmsg);
 * what a full socket refuses stays there and goes first when it is
 * writable. Reads take several datagrams per recvmmsg (GRO).
 *
 * Errors that end the connection (peer closed, idle timeout, TLS failure)
 * make the client "dead": every later send fails with the same code and
 * message, and so does a wait for a response that was not complete yet. A
 * request timeout, a cancel or an oversized response only abandons that
 * stream (RESET_STREAM + STOP_SENDING) and keeps the connection.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
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

#include "common/lat.h"
#include "common/log.h"
#include "common/util.h"
#include "net/quic.h"
#include "net/quic_conn.h"
#include "net/quic_internal.h"
#include "net/tls.h"
#include "net/udp_io.h"

#define DEFAULT_TIMEOUT_MS 10000u
#define DEFAULT_MAX_RESPONSE (64u << 20)
/* Our side of the idle timeout; the effective one is the smaller of both. */
#define CLIENT_IDLE_TIMEOUT_NS (120ull * NGTCP2_SECONDS)
/* recvmmsg slots (64 KiB each) and calls per read before we write (ACKs). */
#define RX_SLOTS 8
#define READ_ROUNDS 2

enum verify_mode { VERIFY_SYSTEM, VERIFY_CA, VERIFY_PIN, VERIFY_INSECURE };

enum wait_for { WAIT_HANDSHAKE, WAIT_STREAM_SLOT, WAIT_RESPONSE };

/* One request: the stream we opened and its response. */
typedef struct cstream {
  struct cstream *prev, *next;   /* open streams (c->streams), while open */
  struct cstream *hnext;         /* token hash chain, while token != 0 */
  int64_t id;
  uint64_t token;  /* 0: the application gave it up (or never owned it) */
  bool open;       /* ngtcp2 has not closed the stream yet */
  bool shut;       /* we shut the stream down (RESET_STREAM + STOP_SENDING) */
  bool kill;       /* to be shut down after this read (response unwanted) */
  /* The request: sbuf (scap bytes, ours) as out on c->sendq; out.over:
   * everything (and FIN, unless out.no_fin: gl_qclient_send_open) handed
   * to ngtcp2, or the write side dead. */
  uint8_t *sbuf;
  size_t scap;
  gl_q_out out;
  /* response */
  uint8_t *resp;
  size_t resp_len, resp_cap;
  bool fin, too_large, nomem, reset;
  uint64_t reset_code;
} cstream;

struct gl_qclient {
  gl_udp *udp;
  int fd; /* udp's, for poll */
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
  bool cert_requested; /* the server asked for a client certificate */
  bool confirmed;      /* HANDSHAKE_DONE came: the server accepted us */
  bool have_cert;      /* we have one to present (cert_file, key_file) */
  bool refused;        /* ICMP said nobody listens (try the next address) */
  int sock_err;        /* socket error seen, not yet acted on */
  char tls_err[300];   /* set by the verify function or the ALPN check */
  bool dead;
  int dead_code;
  char dead_msg[1600];
  atomic_bool abort; /* gl_qclient_abort: from another thread */
  uint64_t spin_ns; /* a response's wait watches the socket this long (0: default) */

  cstream *streams;          /* open streams */
  gl_q_outq sendq;           /* streams with request bytes to write */
  size_t nkill;               /* streams with kill set */
  cstream **htab;             /* token -> record; power-of-two buckets */
  size_t hcap, nreq;          /* buckets, outstanding requests */
  uint64_t next_token;

  size_t max_udp_cfg;     /* largest UDP payload allowed (config) */
  size_t max_udp;         /* ... and on this connection's route */
  size_t socket_buffer;   /* config */
  bool no_gso;            /* config */
  /* One write round: packets back to back, their lengths. Packets
   * [pend_first, pend_first + pend_count) were refused by a full socket
   * and go first (nothing else is written meanwhile). */
  uint8_t *txbuf;
  size_t txlens[GL_Q_TX_PKTS];
  size_t pend_first, pend_count, pend_off;
  bool more;      /* the last write round stopped at its budget */
  gl_q_pool pool; /* request and response buffers for reuse */
};

/* ======================================================================
 * Errors
 * ==================================================================== */

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
  gl_set_err(err, errlen, "%s", c->dead_msg);
  return c->dead_code;
}

/* Sends CONNECTION_CLOSE (best effort). */
static void cl_send_close(gl_qclient *c, const ngtcp2_ccerr *e) {
  if (!c->conn || ngtcp2_conn_in_closing_period(c->conn) ||
      ngtcp2_conn_in_draining_period(c->conn))
    return;
  uint8_t buf[GL_Q_CTRL_PKT];
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  ngtcp2_pkt_info pi;
  ngtcp2_ssize n = ngtcp2_conn_write_connection_close(c->conn, &ps.path, &pi, buf, sizeof buf, e,
                                                      gl_q_now_ns());
  if (n > 0 && c->udp) {
    size_t len = (size_t)n;
    gl_udp_tx tx = {.data = buf, .lens = &len, .count = 1};
    int err;
    (void)gl_udp_send(c->udp, &tx, &err);
  }
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
  ngtcp2_ccerr e;
  char why[1024];
  switch (liberr) {
  case NGTCP2_ERR_DRAINING: {
    e = *ngtcp2_conn_get_ccerr(c->conn); /* reason borrowed from the connection */
    gl_q_describe_ccerr(&e, why, sizeof why);
    if (e.type == NGTCP2_CCERR_TYPE_TRANSPORT && e.error_code >= NGTCP2_CRYPTO_ERROR &&
        e.error_code <= NGTCP2_CRYPTO_ERROR + 0xff)
      cl_die(c, GL_QC_TLS, "%s:%u rejected the TLS handshake (%s)%s", c->host, (unsigned)c->port,
             why,
             !c->cert_requested ? ""
             : c->have_cert     ? "; it asked for a client certificate and refused ours"
                                : "; it requires a client certificate (cert_file and key_file)");
    else if (e.type == NGTCP2_CCERR_TYPE_TRANSPORT && e.error_code == NGTCP2_CONNECTION_REFUSED)
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
    ngtcp2_ccerr_default(&e);
    ngtcp2_ccerr_set_tls_alert(&e, ngtcp2_conn_get_tls_alert(c->conn), NULL, 0);
    cl_send_close(c, &e);
    cl_die(c, GL_QC_TLS, "%s", why);
    return;
  default:
    ngtcp2_ccerr_default(&e);
    ngtcp2_ccerr_set_liberr(&e, liberr, NULL, 0);
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

/* Notes an error from sending that says something about the peer (an
 * ICMP error on the connected socket), decided on after reading what is
 * queued (the server's CONNECTION_CLOSE says more). EMSGSIZE is only a
 * path MTU probe larger than the interface: the probe is lost. */
static void cl_note_send_error(gl_qclient *c, int err) {
  if (err && err != EMSGSIZE && !c->sock_err) c->sock_err = err;
}

/* Sends txbuf's packets [first, first + count) (at byte off). Returns
 * false when the socket filled up: the rest is kept as pending. */
static bool cl_send_batch(gl_qclient *c, size_t first, size_t count, size_t off) {
  gl_udp_tx tx = {.data = c->txbuf + off, .lens = c->txlens + first, .count = count};
  int err;
  GL_LAT(GL_LAT_C_PKT);
  size_t done = gl_udp_send(c->udp, &tx, &err);
  GL_LAT(GL_LAT_C_SENT);
  cl_note_send_error(c, err);
  if (done == count) {
    c->pend_count = 0;
    return true;
  }
  for (size_t i = 0; i < done; i++) off += c->txlens[first + i];
  c->pend_first = first + done;
  c->pend_count = count - done;
  c->pend_off = off;
  return false;
}

/* gl_q_writer.send: packets of txbuf (one path: the connected socket's). */
static bool cl_tx(void *ctx, const ngtcp2_path *path, const uint8_t *data, const size_t *lens,
                  size_t n) {
  (void)path;
  gl_qclient *c = ctx;
  return cl_send_batch(c, (size_t)(lens - c->txlens), n, (size_t)(data - c->txbuf));
}

/* ======================================================================
 * Request records
 * ==================================================================== */

/* No more request bytes of st go out. */
static void cs_send_over(gl_qclient *c, cstream *st) {
  st->out.over = true;
  gl_q_outq_remove(&c->sendq, &st->out);
}

static void cs_destroy(gl_qclient *c, cstream *st) {
  gl_q_pool_put(&c->pool, st->sbuf, st->scap);
  gl_q_pool_put(&c->pool, st->resp, st->resp_cap);
  free(st);
}

/* Frees st once neither ngtcp2 nor the application needs it. */
static void cs_release(gl_qclient *c, cstream *st) {
  if (!st->open && !st->token) cs_destroy(c, st);
}

static cstream **htab_slot(gl_qclient *c, uint64_t token) {
  if (!c->hcap || !token) return NULL;
  cstream **pp = &c->htab[token & (c->hcap - 1)];
  while (*pp && (*pp)->token != token) pp = &(*pp)->hnext;
  return *pp ? pp : NULL;
}

static cstream *cs_find(gl_qclient *c, uint64_t token) {
  cstream **pp = htab_slot(c, token);
  return pp ? *pp : NULL;
}

/* Room in the token table for one more; false when out of memory. A
 * failed growth keeps the old table (longer chains). */
static bool htab_reserve(gl_qclient *c) {
  if (c->hcap && c->nreq < c->hcap) return true;
  size_t ncap = c->hcap ? c->hcap * 2 : 64;
  cstream **n = calloc(ncap, sizeof *n);
  if (!n) return c->hcap != 0;
  for (size_t i = 0; i < c->hcap; i++) {
    cstream *st = c->htab[i];
    while (st) {
      cstream *next = st->hnext;
      cstream **b = &n[st->token & (ncap - 1)];
      st->hnext = *b;
      *b = st;
      st = next;
    }
  }
  free(c->htab);
  c->htab = n;
  c->hcap = ncap;
  return true;
}

/* Gives st a fresh token (htab_reserve first). */
static void cs_own(gl_qclient *c, cstream *st) {
  st->token = ++c->next_token;
  cstream **b = &c->htab[st->token & (c->hcap - 1)];
  st->hnext = *b;
  *b = st;
  c->nreq++;
}

/* Spends st's token: the application is done with it. Frees st unless
 * ngtcp2 still holds the stream. */
static void cs_disown(gl_qclient *c, cstream *st) {
  cstream **pp = htab_slot(c, st->token);
  if (pp) {
    *pp = st->hnext;
    c->nreq--;
  }
  st->hnext = NULL;
  st->token = 0;
  gl_q_pool_put(&c->pool, st->resp, st->resp_cap);
  st->resp = NULL;
  st->resp_len = st->resp_cap = 0;
  if (st->kill) {
    st->kill = false;
    c->nkill--;
  }
  cs_release(c, st);
}

/* Shuts st's stream down in both directions (RESET_STREAM + STOP_SENDING
 * with GL_Q_APP_CANCELLED), once. st stays valid (the caller holds its
 * token or ngtcp2 closes it later, never during this call). */
static void cs_shutdown(gl_qclient *c, cstream *st) {
  cs_send_over(c, st);
  if (st->kill) {
    st->kill = false;
    c->nkill--;
  }
  if (st->shut || !st->open || c->dead) return;
  st->shut = true;
  (void)ngtcp2_conn_shutdown_stream(c->conn, 0, st->id, GL_Q_APP_CANCELLED);
}

/* ngtcp2 closed st's stream. */
static void cs_closed(gl_qclient *c, cstream *st) {
  if (st->prev) st->prev->next = st->next;
  else c->streams = st->next;
  if (st->next) st->next->prev = st->prev;
  st->prev = st->next = NULL;
  st->open = false;
  cs_send_over(c, st);
  if (st->kill) {
    st->kill = false;
    c->nkill--;
  }
  gl_q_pool_put(&c->pool, st->sbuf, st->scap);
  st->sbuf = NULL;
  cs_release(c, st);
}

/* Frees every record (teardown). */
static void cs_free_all(gl_qclient *c) {
  while (c->streams) {
    cstream *st = c->streams;
    c->streams = st->next;
    st->open = false;
    if (!st->token) cs_destroy(c, st);
  }
  for (size_t i = 0; i < c->hcap; i++) {
    while (c->htab[i]) {
      cstream *st = c->htab[i];
      c->htab[i] = st->hnext;
      cs_destroy(c, st);
    }
  }
  c->nreq = 0;
  c->nkill = 0;
  c->sendq = (gl_q_outq){0};
}

/* ======================================================================
 * Writing
 * ==================================================================== */

/* Writes everything ngtcp2 lets us send now (one gl_q_write round into
 * txbuf: request bytes of every stream that has some, taking turns, ACKs,
 * credit, retransmissions, handshake packets; a stream blocked by flow
 * control waits aside for the next call). What a full socket refuses is
 * kept as pending and goes first next time. A round stops after
 * GL_Q_ROUND_BYTES (c->more): cl_wait then reads what came in (ACKs)
 * before it writes on, so the peer's timers see answers. */
static void cl_write(gl_qclient *c) {
  c->more = false;
  if (c->dead) return;
  if (c->pend_count && !cl_send_batch(c, c->pend_first, c->pend_count, c->pend_off)) return;
  gl_q_writer w = {.conn = c->conn, .q = &c->sendq, .buf = c->txbuf, .lens = c->txlens,
                   .max_udp = c->max_udp, .send = cl_tx, .ctx = c};
  int rc = gl_q_write(&w, gl_q_now_ns());
  if (rc == 1) c->more = true;
  else if (rc < 0) cl_fail_liberr(c, rc);
}

static void cl_read(gl_qclient *c) {
  ngtcp2_path path = {
      .local = {.addr = (struct sockaddr *)&c->local, .addrlen = c->locallen},
      .remote = {.addr = (struct sockaddr *)&c->remote, .addrlen = c->remotelen},
  };
  for (int round = 0, errs = 0; round < READ_ROUNDS && !c->dead;) {
    gl_udp_msg *msgs;
    int n = gl_udp_recv(c->udp, &msgs);
    if (n > 0) GL_LAT(GL_LAT_C_RECV);
    if (n < 0) {
      /* An error is reported once (an ICMP error, say): datagrams queued
       * before it (the server's CONNECTION_CLOSE) are still to read. */
      if (!c->sock_err) c->sock_err = errno;
      if (++errs == 8) break;
      continue;
    }
    round++;
    uint64_t now = gl_q_now_ns();
    for (int i = 0; i < n && !c->dead; i++) {
      size_t off = 0, len;
      for (uint8_t *d; !c->dead && (d = gl_udp_msg_next(&msgs[i], &off, &len));) {
        ngtcp2_pkt_info pi = {0};
        int rv = ngtcp2_conn_read_pkt(c->conn, &path, &pi, d, len, now);
        if (rv != 0) cl_fail_liberr(c, rv);
      }
    }
    if (n < RX_SLOTS) break; /* drained */
  }
  if (c->sock_err) {
    cl_socket_error(c, c->sock_err); /* no-op when already dead */
    c->sock_err = 0;
  }
  /* Responses that grew too large (or found no memory) while nobody waited
   * for them: stop them now (outside ngtcp2's callbacks) rather than let
   * them hold a stream of the server's limit until their wait. */
  if (c->nkill && !c->dead) {
    cstream *st = c->streams;
    while (st && c->nkill) {
      cstream *next = st->next;
      if (st->kill) cs_shutdown(c, st);
      st = next;
    }
  }
}

static bool cs_complete(const cstream *st) {
  return st->fin || st->too_large || st->nomem || st->reset;
}

static bool cl_cond(gl_qclient *c, enum wait_for what, const cstream *st) {
  switch (what) {
  /* Asked for a certificate, we learn whether it passed only from
   * HANDSHAKE_DONE (TLS 1.3: the client finishes first). */
  case WAIT_HANDSHAKE: return c->handshake_done && (c->confirmed || !c->cert_requested);
  case WAIT_STREAM_SLOT: return ngtcp2_conn_get_streams_bidi_left(c->conn) > 0;
  case WAIT_RESPONSE: return !st || cs_complete(st);
  }
  return true;
}

/* Runs ngtcp2's timers when due. */
static void cl_expiry(gl_qclient *c) {
  uint64_t now = gl_q_now_ns();
  if (!c->dead && ngtcp2_conn_get_expiry(c->conn) <= now) {
    int rv = ngtcp2_conn_handle_expiry(c->conn, now);
    if (rv != 0) cl_fail_liberr(c, rv);
  }
}

/* Drives the connection until `what` holds (for WAIT_RESPONSE: st's
 * response is complete), the connection dies, or the deadline passes.
 * GL_QC_OK, GL_QC_TIMEOUT, or the connection's error. */
/* How long a wait for a response watches the socket before it sleeps in
 * poll(): an answer usually comes within tens of microseconds, and a
 * wake-up from sleep costs about as much again (gl_qclient_set_spin). */
#define GL_Q_SPIN_NS 60000ull

void gl_qclient_set_spin(gl_qclient *c, uint64_t ns) {
  if (c) c->spin_ns = ns ? ns : GL_Q_SPIN_NS;
}

/* A wait sleeps in poll() at most this long, so that gl_qclient_abort from
 * another thread is seen soon. */
#define GL_Q_ABORT_POLL_MS 50

void gl_qclient_abort(gl_qclient *c) {
  if (c) atomic_store(&c->abort, true);
}

static int cl_wait(gl_qclient *c, enum wait_for what, const cstream *st, uint64_t deadline_ns) {
  uint64_t spin = c->spin_ns ? c->spin_ns : GL_Q_SPIN_NS;
  uint64_t spin_until = what == WAIT_RESPONSE ? gl_q_now_ns() + spin : 0;
  for (;;) {
    if (atomic_load_explicit(&c->abort, memory_order_relaxed))
      cl_die(c, GL_QC_UNREACHABLE, "the wait was aborted (gl_qclient_abort)");
    cl_expiry(c);
    cl_write(c);
    if (c->sock_err) cl_read(c);
    if (c->dead) return c->dead_code;
    if (cl_cond(c, what, st)) return GL_QC_OK;
    uint64_t now = gl_q_now_ns();
    if (now >= deadline_ns) return GL_QC_TIMEOUT;
    uint64_t until = ngtcp2_conn_get_expiry(c->conn);
    if (until > deadline_ns) until = deadline_ns;
    int ms = 0;
    if (until > now && !c->more && now >= spin_until) {
      uint64_t d = (until - now + 999999) / 1000000;
      ms = d > GL_Q_ABORT_POLL_MS ? GL_Q_ABORT_POLL_MS : (int)d;
    }
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN | (c->pend_count ? POLLOUT : 0)};
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
  c->cert_requested = gnutls_certificate_client_get_request_status(c->tls) != 0;
  return 0;
}

static int cb_handshake_confirmed(ngtcp2_conn *conn, void *user_data) {
  (void)conn;
  ((gl_qclient *)user_data)->confirmed = true;
  return 0;
}

static int cb_recv_stream_data(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id,
                               uint64_t offset, const uint8_t *data, size_t datalen,
                               void *user_data, void *stream_user_data) {
  (void)offset;
  gl_qclient *c = user_data;
  cstream *st = stream_user_data;
  ngtcp2_conn_extend_max_offset(conn, datalen);
  if (!st || !st->token || st->too_large || st->nomem || st->shut) return 0;
  if (datalen > c->max_response - st->resp_len) {
    st->too_large = true;
  } else if (st->resp_len + datalen > st->resp_cap) {
    size_t need = st->resp_len + datalen;
    if (!st->resp_cap && (flags & NGTCP2_STREAM_DATA_FLAG_FIN) && need < GL_Q_POOL_MIN) {
      /* Small replies (the common case) get a buffer of their exact size. */
      st->resp = malloc(need);
      st->resp_cap = st->resp ? need : 0;
      st->nomem = !st->resp;
    } else {
      /* Room for the whole message once its header is in; a kept buffer
       * only if not much larger: the caller may hold it long. */
      size_t whole = gl_q_msg_size(st->resp, st->resp_len, data, datalen);
      if (whole > need && whole <= c->max_response) need = whole;
      st->nomem = gl_q_buf_grow(&c->pool, &st->resp, &st->resp_cap, st->resp_len, need,
                                c->max_response, 8) != 0;
    }
  }
  if (st->too_large || st->nomem) {
    st->kill = true;
    c->nkill++;
    return 0;
  }
  if (datalen) gl_q_copy_in(st->resp + st->resp_len, data, datalen, st->resp_cap);
  st->resp_len += datalen;
  ngtcp2_conn_extend_max_stream_offset(conn, stream_id, datalen);
  if (flags & NGTCP2_STREAM_DATA_FLAG_FIN) st->fin = true;
  return 0;
}

static int cb_stream_close(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id,
                           uint64_t app_error_code, void *user_data, void *stream_user_data) {
  (void)conn;
  (void)stream_id;
  gl_qclient *c = user_data;
  cstream *st = stream_user_data;
  if (!st) return 0;
  if (st->token && !cs_complete(st)) {
    st->reset = true;
    st->reset_code =
        (flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET) ? app_error_code : 0;
  }
  cs_closed(c, st);
  return 0;
}

static int cb_stream_reset(ngtcp2_conn *conn, int64_t stream_id, uint64_t final_size,
                           uint64_t app_error_code, void *user_data, void *stream_user_data) {
  (void)conn;
  (void)stream_id;
  (void)final_size;
  (void)user_data;
  cstream *st = stream_user_data;
  if (st && st->token && !cs_complete(st)) {
    st->reset = true;
    st->reset_code = app_error_code;
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
  cs_free_all(c);
  if (c->conn) ngtcp2_conn_del(c->conn);
  c->conn = NULL;
  if (c->tls) gnutls_deinit(c->tls);
  c->tls = NULL;
  if (c->udp) gl_udp_del(c->udp); /* closes fd */
  else if (c->fd >= 0) close(c->fd);
  c->udp = NULL;
  c->fd = -1;
  c->pend_count = 0;
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
  gl_set_err(err, errlen, "TLS session setup failed: %s", gnutls_strerror(rc));
  return -1;
}

/* One connection attempt to one resolved address. */
static int cl_attempt(gl_qclient *c, const struct addrinfo *ai, uint64_t deadline_ns, char *err,
                      size_t errlen) {
  c->dead = false;
  c->refused = false;
  c->sock_err = 0;
  c->handshake_done = false;
  c->cert_requested = false;
  c->confirmed = false;
  c->tls_err[0] = 0;
  c->fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->fd < 0) {
    gl_set_err(err, errlen, "socket: %s", strerror(errno));
    c->refused = true;
    return GL_QC_UNREACHABLE;
  }
  if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    gl_set_err(err, errlen, "%s:%u unreachable: %s", c->host, (unsigned)c->port, strerror(errno));
    c->refused = true;
    return GL_QC_UNREACHABLE;
  }
  /* Buffers, GRO, don't-fragment (udp_io.h); the object owns the fd. */
  gl_udp_opts uo = {
      .buffer_bytes = c->socket_buffer,
      .rx_slots = RX_SLOTS,
      .no_gso = c->no_gso,
  };
  int fd = c->fd;
  c->fd = -1;
  if (gl_udp_new(fd, &uo, &c->udp) != 0) {
    gl_set_err(err, errlen, "UDP socket setup: %s", strerror(errno));
    return errno == ENOMEM ? GL_QC_NOMEM : GL_QC_UNREACHABLE;
  }
  c->fd = gl_udp_fd(c->udp);
  memcpy(&c->remote, ai->ai_addr, ai->ai_addrlen);
  c->remotelen = ai->ai_addrlen;
  /* Datagrams no larger than the route takes (loopback: 64 KiB; Ethernet:
   * 1452 or 1472), and we tell the server so (max_udp_payload_size): path
   * MTU discovery then starts at the right size on both sides. */
  size_t route_max = gl_udp_path_max_payload(c->udp);
  c->max_udp = c->max_udp_cfg;
  if (route_max && route_max < c->max_udp) c->max_udp = gl_q_max_udp_payload(route_max);
  socklen_t llen;
  const struct sockaddr *local = gl_udp_local(c->udp, &llen);
  memcpy(&c->local, local, llen);
  c->locallen = llen;

  ngtcp2_cid dcid, scid;
  dcid.datalen = GL_Q_SCID_LEN;
  scid.datalen = GL_Q_SCID_LEN;
  if (gl_q_random(dcid.data, dcid.datalen) != 0 || gl_q_random(scid.data, scid.datalen) != 0) {
    gl_set_err(err, errlen, "no randomness for connection IDs");
    return GL_QC_NOMEM;
  }
  ngtcp2_callbacks cb = {
      .client_initial = ngtcp2_crypto_client_initial_cb,
      .recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
      .handshake_completed = cb_handshake_completed,
      .handshake_confirmed = cb_handshake_confirmed,
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
  uint16_t probes[GL_Q_MAX_PROBES];
  gl_q_settings_udp(&settings, c->max_udp,
                    gl_q_path_is_local((const struct sockaddr *)&c->local,
                                       (const struct sockaddr *)&c->remote),
                    probes);
  ngtcp2_transport_params params;
  ngtcp2_transport_params_default(&params);
  params.initial_max_stream_data_bidi_local = GL_Q_STREAM_WINDOW; /* responses */
  params.initial_max_stream_data_bidi_remote = 0;
  params.initial_max_stream_data_uni = 0;
  params.initial_max_data = GL_Q_CONN_WINDOW;
  params.initial_max_streams_bidi = 0;
  params.initial_max_streams_uni = 0;
  params.max_idle_timeout = CLIENT_IDLE_TIMEOUT_NS;
  params.max_udp_payload_size = c->max_udp;

  ngtcp2_path path = {
      .local = {.addr = (struct sockaddr *)&c->local, .addrlen = c->locallen},
      .remote = {.addr = (struct sockaddr *)&c->remote, .addrlen = c->remotelen},
  };
  int rv = ngtcp2_conn_client_new(&c->conn, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &cb,
                                  &settings, &params, NULL, c);
  if (rv != 0) {
    c->conn = NULL;
    gl_set_err(err, errlen, "QUIC setup failed: %s", ngtcp2_strerror(rv));
    return rv == NGTCP2_ERR_NOMEM ? GL_QC_NOMEM : GL_QC_INVALID;
  }
  if (cl_tls_init(c, err, errlen) != 0) return GL_QC_TLS;

  int rc = cl_wait(c, WAIT_HANDSHAKE, NULL, deadline_ns);
  if (rc == GL_QC_TIMEOUT) {
    gl_set_err(err, errlen, "no QUIC handshake with %s:%u within %u ms", c->host, (unsigned)c->port,
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
    gl_set_err(err, errlen, "TLS credentials: %s", gnutls_strerror(rc));
    return GL_QC_NOMEM;
  }
  switch (c->verify) {
  case VERIFY_CA:
    rc = gnutls_certificate_set_x509_trust_file(c->cred, cfg->ca_file, GNUTLS_X509_FMT_PEM);
    if (rc <= 0) {
      gl_set_err(err, errlen, "cannot load CA certificates from %s: %s", cfg->ca_file,
                 rc == 0 ? "no certificate found" : gnutls_strerror(rc));
      return GL_QC_INVALID;
    }
    break;
  case VERIFY_SYSTEM:
    rc = gnutls_certificate_set_x509_system_trust(c->cred);
    if (rc < 0) {
      gl_set_err(err, errlen, "cannot load the system trust store: %s", gnutls_strerror(rc));
      return GL_QC_TLS;
    }
    break;
  default:
    break;
  }
  return GL_QC_OK;
}

/* Our own certificate, when cfg has one (both files checked by the
 * caller): presented when the server asks. GL_QC_OK or GL_QC_INVALID with
 * the file named. */
static int cl_load_cert(gl_qclient *c, const gl_qclient_config *cfg, char *err,
                        size_t errlen) {
  if (!cfg->cert_file) return GL_QC_OK;
  const char *files[2] = {cfg->cert_file, cfg->key_file};
  for (int i = 0; i < 2; i++) {
    int fd = open(files[i], O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      gl_set_err(err, errlen, "cannot read client %s %s: %s", i ? "key" : "certificate", files[i],
                 strerror(errno));
      return GL_QC_INVALID;
    }
    close(fd);
  }
  int rc = gnutls_certificate_set_x509_key_file(c->cred, cfg->cert_file, cfg->key_file,
                                                GNUTLS_X509_FMT_PEM);
  if (rc < 0) {
    gl_set_err(err, errlen, "cannot load client certificate %s / key %s: %s", cfg->cert_file,
               cfg->key_file, gnutls_strerror(rc));
    return GL_QC_INVALID;
  }
  c->have_cert = true;
  return GL_QC_OK;
}

int gl_qclient_connect(const gl_qclient_config *cfg, gl_qclient **out, char *err,
                       size_t errlen) {
  if (out) *out = NULL;
  if (!cfg || !out || !cfg->host || !*cfg->host || cfg->port == 0) {
    gl_set_err(err, errlen, "invalid client configuration (host and port required)");
    return GL_QC_INVALID;
  }
  int modes = (cfg->ca_file != NULL) + (cfg->pin_sha256 != NULL) + (cfg->insecure ? 1 : 0);
  if (modes > 1) {
    gl_set_err(err, errlen, "choose one of a CA file, a certificate pin, or insecure");
    return GL_QC_INVALID;
  }
  if ((cfg->cert_file != NULL) != (cfg->key_file != NULL)) {
    gl_set_err(err, errlen, "a client certificate needs both a certificate file and a key file "
                         "(only the %s was given)",
               cfg->cert_file ? "certificate" : "key");
    return GL_QC_INVALID;
  }
  if (strlen(cfg->host) >= sizeof((gl_qclient *)0)->host) {
    gl_set_err(err, errlen, "host name too long");
    return GL_QC_INVALID;
  }
  gl_qclient *c = calloc(1, sizeof *c);
  if (!c) {
    gl_set_err(err, errlen, "out of memory");
    return GL_QC_NOMEM;
  }
  c->fd = -1;
  atomic_init(&c->abort, false);
  snprintf(c->host, sizeof c->host, "%s", cfg->host);
  c->port = cfg->port;
  c->host_is_ip = is_ip_literal(c->host);
  c->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : DEFAULT_TIMEOUT_MS;
  c->max_response = cfg->max_response_bytes ? cfg->max_response_bytes : DEFAULT_MAX_RESPONSE;
  c->max_udp_cfg = gl_q_max_udp_payload(cfg->max_udp_payload_bytes);
  c->socket_buffer = cfg->socket_buffer_bytes;
  c->no_gso = cfg->no_gso;
  c->txbuf = malloc(GL_Q_TX_BYTES);
  /* Keeps request and response buffers up to the largest response. */
  gl_q_pool_init(&c->pool, c->max_response > GL_Q_POOL_FLOOR ? c->max_response
                                                             : GL_Q_POOL_FLOOR);
  if (!c->txbuf) {
    free(c);
    gl_set_err(err, errlen, "out of memory");
    return GL_QC_NOMEM;
  }
  c->verify = cfg->insecure ? VERIFY_INSECURE
              : cfg->pin_sha256 ? VERIFY_PIN
              : cfg->ca_file ? VERIFY_CA
              : VERIFY_SYSTEM;
  int rc;
  if (c->verify == VERIFY_PIN && gl_tls_parse_fingerprint(cfg->pin_sha256, c->pin) != 0) {
    gl_set_err(err, errlen, "bad certificate fingerprint '%s': want 64 hex digits (colons allowed)",
               cfg->pin_sha256);
    rc = GL_QC_INVALID;
    goto fail;
  }
  if ((rc = cl_load_trust(c, cfg, err, errlen)) != GL_QC_OK) goto fail;
  if ((rc = cl_load_cert(c, cfg, err, errlen)) != GL_QC_OK) goto fail;

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
    gl_set_err(err, errlen, "cannot resolve %s: %s", c->host, gai_strerror(gai));
    rc = GL_QC_UNREACHABLE;
    goto fail;
  }
  uint64_t deadline = gl_q_now_ns() + (uint64_t)c->timeout_ms * NGTCP2_MILLISECONDS;
  rc = GL_QC_UNREACHABLE;
  gl_set_err(err, errlen, "no usable address for %s", c->host);
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

/* A few steps of the connection without blocking, for a new request:
 * timers, what we owe (the request first: a round trip's time starts when
 * it leaves), what the socket holds (ACKs, responses, MAX_STREAMS), then
 * what that allows. */
static void cl_pump(gl_qclient *c) {
  cl_expiry(c);
  cl_write(c);
  cl_read(c);
  cl_write(c);
}

/* Opens a stream for req (len bytes): copied, unless owned (a malloc'd
 * buffer that becomes ours to free, also on failure). */
static int cl_send_req(gl_qclient *c, uint8_t *owned, const uint8_t *req, size_t len,
                       bool no_fin, uint64_t deadline, uint64_t *token, char *err,
                       size_t errlen) {
  GL_LAT(GL_LAT_C_SEND);
  if (c->dead) {
    free(owned);
    return cl_dead_error(c, err, errlen);
  }
  cstream *st = calloc(1, sizeof *st);
  size_t cap = len;
  uint8_t *copy = owned ? owned : gl_q_pool_alloc(&c->pool, len, &cap);
  if (!st || !copy || !htab_reserve(c)) {
    free(st);
    gl_q_pool_put(&c->pool, copy, cap);
    gl_set_err(err, errlen, "out of memory");
    return GL_QC_NOMEM;
  }
  if (len && !owned) memcpy(copy, req, len);
  st->sbuf = copy;
  st->scap = cap;
  st->out.data = copy;
  st->out.len = len;
  st->out.no_fin = no_fin;

  /* A new stream; at the server's concurrency limit, wait for a slot. */
  for (;;) {
    int rv = ngtcp2_conn_open_bidi_stream(c->conn, &st->id, st);
    if (rv == 0) break;
    int rc = GL_QC_UNREACHABLE;
    if (rv == NGTCP2_ERR_STREAM_ID_BLOCKED) rc = cl_wait(c, WAIT_STREAM_SLOT, NULL, deadline);
    else gl_set_err(err, errlen, "cannot open a stream: %s", ngtcp2_strerror(rv));
    if (rc == GL_QC_OK) continue;
    cs_destroy(c, st);
    if (rc == GL_QC_TIMEOUT)
      gl_set_err(err, errlen, "no stream available on the connection to %s:%u within %u ms",
                 c->host, (unsigned)c->port, c->timeout_ms);
    else if (c->dead)
      return cl_dead_error(c, err, errlen);
    return rc;
  }
  st->open = true;
  st->next = c->streams;
  if (c->streams) c->streams->prev = st;
  c->streams = st;
  cs_own(c, st); /* the table has room: waits only shrink it */
  st->out.id = st->id;
  gl_q_outq_add(&c->sendq, &st->out);
  cl_pump(c);
  if (c->dead) {
    cs_disown(c, st);
    return cl_dead_error(c, err, errlen);
  }
  *token = st->token;
  if (err && errlen) err[0] = 0;
  return GL_QC_OK;
}

/* Waits for the response of st (owned) until deadline and hands it over;
 * spends the token either way. */
static int cl_wait_req(gl_qclient *c, cstream *st, uint64_t deadline, uint8_t **resp,
                       size_t *resp_len, char *err, size_t errlen) {
  int rc = cs_complete(st) ? GL_QC_OK : cl_wait(c, WAIT_RESPONSE, st, deadline);
  GL_LAT(GL_LAT_C_DONE);
  /* A response that was complete when the connection died is still good. */
  if (rc != GL_QC_OK && rc != GL_QC_TIMEOUT && cs_complete(st)) rc = GL_QC_OK;
  if (rc == GL_QC_OK) {
    if (st->too_large) {
      gl_set_err(err, errlen, "response larger than %zu bytes", c->max_response);
      rc = GL_QC_TOO_LARGE;
    } else if (st->nomem) {
      gl_set_err(err, errlen, "out of memory for the response");
      rc = GL_QC_NOMEM;
    } else if (st->fin) {
      *resp = st->resp ? st->resp : malloc(1);
      *resp_len = st->resp_len;
      st->resp = NULL;
      st->resp_len = st->resp_cap = 0;
      if (!*resp) {
        *resp_len = 0;
        gl_set_err(err, errlen, "out of memory");
        rc = GL_QC_NOMEM;
      }
    } else {
      gl_set_err(err, errlen, "%s:%u reset the request stream (code 0x%llx)", c->host,
                 (unsigned)c->port, (unsigned long long)st->reset_code);
      rc = GL_QC_UNREACHABLE;
    }
  } else if (rc == GL_QC_TIMEOUT) {
    gl_set_err(err, errlen, "no response from %s:%u within %u ms", c->host, (unsigned)c->port,
               c->timeout_ms);
  } else {
    (void)cl_dead_error(c, err, errlen);
  }
  if (st->fin && !st->too_large && !st->nomem) {
    /* A reply before the whole request went out (the server refused the
     * rest): do not leave the stream half open. */
    if (!st->out.over || st->out.no_fin) cs_shutdown(c, st);
  } else {
    cs_shutdown(c, st); /* abandon: RESET_STREAM + STOP_SENDING */
  }
  cs_disown(c, st);
  cl_write(c); /* acknowledge the response (or send the reset) now */
  if (rc == GL_QC_OK && err && errlen) err[0] = 0;
  return rc;
}

int gl_qclient_send(gl_qclient *c, const uint8_t *req, size_t len, uint64_t *token, char *err,
                    size_t errlen) {
  if (token) *token = 0;
  if (!c || !token || (!req && len)) {
    gl_set_err(err, errlen, "invalid request arguments");
    return GL_QC_INVALID;
  }
  uint64_t deadline = gl_q_now_ns() + (uint64_t)c->timeout_ms * NGTCP2_MILLISECONDS;
  return cl_send_req(c, NULL, req, len, false, deadline, token, err, errlen);
}

int gl_qclient_send_open(gl_qclient *c, const uint8_t *req, size_t len, uint64_t *token,
                         char *err, size_t errlen) {
  if (token) *token = 0;
  if (!c || !token || !req || !len) {
    gl_set_err(err, errlen, "invalid request arguments");
    return GL_QC_INVALID;
  }
  uint64_t deadline = gl_q_now_ns() + (uint64_t)c->timeout_ms * NGTCP2_MILLISECONDS;
  return cl_send_req(c, NULL, req, len, true, deadline, token, err, errlen);
}

int gl_qclient_send_take(gl_qclient *c, uint8_t *req, size_t len, uint64_t *token, char *err,
                         size_t errlen) {
  if (token) *token = 0;
  if (!c || !token || (!req && len)) {
    free(req);
    gl_set_err(err, errlen, "invalid request arguments");
    return GL_QC_INVALID;
  }
  uint64_t deadline = gl_q_now_ns() + (uint64_t)c->timeout_ms * NGTCP2_MILLISECONDS;
  return cl_send_req(c, req, req ? req : (const uint8_t *)"", len, false, deadline, token, err,
                     errlen);
}

uint8_t *gl_qclient_buf(gl_qclient *c, size_t len, size_t *cap) {
  *cap = len;
  return gl_q_pool_alloc(&c->pool, len, cap);
}

int gl_qclient_wait(gl_qclient *c, uint64_t token, uint8_t **resp, size_t *resp_len, char *err,
                    size_t errlen) {
  if (resp) *resp = NULL;
  if (resp_len) *resp_len = 0;
  if (!c || !resp || !resp_len) {
    gl_set_err(err, errlen, "invalid wait arguments");
    return GL_QC_INVALID;
  }
  cstream *st = cs_find(c, token);
  if (!st) {
    gl_set_err(err, errlen, "no outstanding request with token %llu", (unsigned long long)token);
    return GL_QC_INVALID;
  }
  uint64_t deadline = gl_q_now_ns() + (uint64_t)c->timeout_ms * NGTCP2_MILLISECONDS;
  return cl_wait_req(c, st, deadline, resp, resp_len, err, errlen);
}

int gl_qclient_request(gl_qclient *c, const uint8_t *req, size_t len, uint8_t **resp,
                       size_t *resp_len, char *err, size_t errlen) {
  if (resp) *resp = NULL;
  if (resp_len) *resp_len = 0;
  if (!c || !resp || !resp_len || (!req && len)) {
    gl_set_err(err, errlen, "invalid request arguments");
    return GL_QC_INVALID;
  }
  /* One deadline for both the stream and the response. */
  uint64_t deadline = gl_q_now_ns() + (uint64_t)c->timeout_ms * NGTCP2_MILLISECONDS;
  uint64_t token = 0;
  int rc = cl_send_req(c, NULL, req, len, false, deadline, &token, err, errlen);
  if (rc != GL_QC_OK) return rc;
  return cl_wait_req(c, cs_find(c, token), deadline, resp, resp_len, err, errlen);
}

void gl_qclient_cancel(gl_qclient *c, uint64_t token) {
  cstream *st = c ? cs_find(c, token) : NULL;
  if (!st) return;
  cs_shutdown(c, st);
  cs_disown(c, st);
  cl_write(c);
}

void gl_qclient_release(gl_qclient *c, uint8_t *resp, size_t resp_len) {
  if (c) gl_q_pool_put(&c->pool, resp, resp_len);
  else free(resp);
}

size_t gl_qclient_outstanding(const gl_qclient *c) { return c ? c->nreq : 0; }

bool gl_qclient_dead(const gl_qclient *c) { return !c || c->dead; }

void gl_qclient_del(gl_qclient *c) {
  if (!c) return;
  if (c->conn && c->udp && c->handshake_done) {
    ngtcp2_conn_info ci;
    gl_udp_info ui;
    ngtcp2_conn_get_conn_info(c->conn, &ci);
    gl_udp_info_get(c->udp, &ui);
    GL_DEBUG("quic: connection to %s:%u: UDP payload %zu, cwnd %llu, ssthresh %llu, srtt %llu "
             "us; sent %llu datagrams in %llu calls (%llu GSO), received %llu in %llu calls",
             c->host, (unsigned)c->port, ngtcp2_conn_get_path_max_tx_udp_payload_size(c->conn),
             (unsigned long long)ci.cwnd, (unsigned long long)ci.ssthresh,
             (unsigned long long)(ci.smoothed_rtt / 1000), (unsigned long long)ui.dgrams_sent,
             (unsigned long long)ui.send_calls, (unsigned long long)ui.gso_msgs,
             (unsigned long long)ui.dgrams_received, (unsigned long long)ui.recv_calls);
  }
  if (c->conn && !c->dead && c->handshake_done) {
    ngtcp2_ccerr e;
    ngtcp2_ccerr_default(&e);
    ngtcp2_ccerr_set_application_error(&e, GL_Q_APP_NO_ERROR, NULL, 0);
    cl_send_close(c, &e);
  }
  cl_teardown(c);
  free(c->htab);
  if (c->cred) gnutls_certificate_free_credentials(c->cred);
  free(c->txbuf);
  gl_q_pool_clear(&c->pool);
  free(c);
}
