/*
 * quic_server.c - the server half of quic.h: ngtcp2 + GnuTLS on a libev
 * loop, one UDP socket, one request/response pair per bidirectional stream.
 * What comes before a connection (the socket, credentials and TLS
 * sessions, client certificates, Retry and refusals) is quic_accept.c's;
 * the connection ID and address tables, the send queue and the write
 * round are quic_conn.c's, shared with the client; the records are in
 * quic_server_int.h.
 *
 * Shape of the code:
 *   - One UDP socket (dual-stack when bound to "::"). Datagrams are read in
 *     batches by srv_on_readable(); each one is routed by its destination
 *     connection ID through a hash table that holds every SCID we issued
 *     plus the client's original DCID (for retransmitted Initials).
 *   - Nothing is sent from inside ngtcp2 callbacks and no user callback runs
 *     inside them but on_header (which only computes a verdict): callbacks
 *     only record state (bytes into a stream buffer, a stream onto the
 *     connection's ready list). A request refused on its header
 *     (on_header's answer kept as the stream's reply) goes on the ready
 *     list too; delivering it stops the stream's reading (STOP_SENDING)
 *     and queues the answer. The header is judged before any of the body
 *     is buffered; a request it lets through counts as the connection's
 *     unfinished (gl_req_origin) until it is delivered or abandoned, when
 *     on_header_end is told (stream_unadmit). After ngtcp2_conn_read_pkt
 *     returns, ready requests are handed to on_request and the connection
 *     is put on the server's "dirty" list. srv_flush() then writes every
 *     dirty connection (stream data, ACKs, retransmissions), re-arms its
 *     timer, and frees connections that are done. Every entry point (read,
 *     write-ready, timer, gl_qreq_reply outside a batch) ends in srv_flush(),
 *     which is the only place connections are freed (besides
 *     gl_qserver_del).
 *   - A connection is ACTIVE, CLOSING (we sent CONNECTION_CLOSE: resend it
 *     to late packets for 3 PTO), DRAINING (the peer closed: stay silent
 *     for 3 PTO), or DEAD (free at the next flush). Leaving ACTIVE orphans
 *     every outstanding gl_qreq.
 *   - Flow control: a stream's window is extended as soon as its bytes are
 *     copied into the request buffer (a request larger than
 *     max_message_bytes is cut, delivered once as GL_QREQ_TOO_LARGE, and
 *     the rest refused with STOP_SENDING). The connection's window is
 *     extended likewise while the connection's undelivered request bytes
 *     stay under a budget (2 x max_message_bytes, at least 64 MiB); past
 *     it, credit is returned only as requests are delivered, so one
 *     connection cannot make the server buffer more than that budget plus
 *     one window.
 *   - Replies keep their bytes until the stream closes (ngtcp2 may need them
 *     for retransmission); unsent parts wait on the connection's send queue,
 *     retried on every flush, so a window update that arrives in any packet
 *     restarts them.
 *   - Client identities: with client_ca_file, each TLS session requires a
 *     client certificate, and verify_client_cert() (quic_accept.c;
 *     GnuTLS's verify function, inside the handshake) checks its chain,
 *     dates and key purpose and works out the connection's identity, or
 *     fails the handshake. ngtcp2 processes no 1-RTT packet before the handshake is
 *     complete, so every request of the connection sees it. A gl_qreq
 *     copies the identity and the peer's address when it is made, so the
 *     daemon may read them on another thread or after the connection went.
 *   - Overload and abuse (gl_qs_admit, quic_accept.c, says the rules): a
 *     first Initial without a Retry token gets a Retry instead of a
 *     connection while retry_above_handshakes connections are in their
 *     handshake, or retry_above_address_handshakes from its IP address (or
 *     always, with always_retry): its token, sealed under a secret drawn
 *     at start, names the client's address and original DCID, and the
 *     Initial that brings it back proves the client receives at that
 *     address (RFC 9000 8.1.2). A Retry token that does not verify is
 *     answered with INVALID_TOKEN, whatever the load. A new connection is
 *     refused (CONNECTION_CLOSE with CONNECTION_REFUSED, no state kept)
 *     beyond max_connections in all or max_connections_per_address
 *     completed ones from one IP address (small hash tables of address ->
 *     count: hs_addrs from conn_accept to the handshake's end, addrs from
 *     then to conn_free). A handshake that does not complete within
 *     handshake_timeout_ms is dropped.
 *   - Packet I/O is udp_io.c's: datagrams come in by recvmmsg (several per
 *     slot with GRO); a connection's write round fills the server's one
 *     transmit buffer with packets (64 KiB each on loopback once path MTU
 *     discovery found it) and hands them over in one go (GSO, sendmmsg).
 *     What a full socket refuses is copied to the connection and sent
 *     first when the socket is writable. A round writes at most
 *     GL_Q_ROUND_BYTES, calling ngtcp2_conn_update_pkt_tx_time after each
 *     send quantum (pacing); a connection with more to send gets a timer at
 *     once, so reads (ACKs) and other connections take turns.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <ev.h>
#include <pthread.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include "common/lat.h"
#include "common/log.h"
#include "common/util.h"
#include "net/quic_server_int.h"

#define DEFAULT_IDLE_TIMEOUT_MS 60000u
#define DEFAULT_MAX_CONNECTIONS 1024u
#define DEFAULT_MAX_STREAMS 256u
#define DEFAULT_MAX_MESSAGE (64u << 20)
#define DEFAULT_HANDSHAKE_TIMEOUT_MS 5000u
#define DEFAULT_RETRY_ABOVE_HANDSHAKES 64u
#define DEFAULT_RETRY_ABOVE_ADDRESS_HANDSHAKES 8u
#define DEFAULT_MAX_CONNS_PER_ADDRESS 64u
/* Least per-connection budget of undelivered request bytes (see above). */
#define RX_BUDGET_FLOOR ((size_t)64 << 20)
/* recvmmsg calls per readiness event before the connections write (ACKs)
 * and other watchers get a turn. */
#define READ_ROUNDS 2

static void srv_flush(gl_qserver *s);
static void conn_close(qconn *c, const ngtcp2_ccerr *e);
static void conn_close_liberr(qconn *c, int liberr);
static void stream_free(qstream *st);

/* ======================================================================
 * Small helpers
 * ==================================================================== */

static char *dup_str(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* ======================================================================
 * Connection IDs
 * ==================================================================== */

static qconn *cid_lookup(gl_qserver *s, const uint8_t *data, size_t len) {
  return gl_q_cidtab_get(&s->cids, data, len);
}

/* Maps cid to c; remembers it on c so conn_free can unmap it. */
static int conn_add_cid(qconn *c, const ngtcp2_cid *cid) {
  gl_qserver *s = c->srv;
  void *had = gl_q_cidtab_get(&s->cids, cid->data, cid->datalen);
  if (had) return had == c ? 0 : -1;
  if (c->ncids == c->cidcap) {
    size_t cap = c->cidcap ? c->cidcap * 2 : 4;
    ngtcp2_cid *n = realloc(c->cids, cap * sizeof *n);
    if (!n) return -1;
    c->cids = n;
    c->cidcap = cap;
  }
  if (gl_q_cidtab_put(&s->cids, cid, c) != 0) return -1;
  c->cids[c->ncids++] = *cid;
  return 0;
}

static void conn_remove_cid(qconn *c, const ngtcp2_cid *cid) {
  for (size_t i = 0; i < c->ncids; i++) {
    if (ngtcp2_cid_eq(&c->cids[i], cid)) {
      gl_q_cidtab_del(&c->srv->cids, cid);
      c->cids[i] = c->cids[--c->ncids];
      return;
    }
  }
}

static void conn_unmap_all_cids(qconn *c) {
  for (size_t i = 0; i < c->ncids; i++) gl_q_cidtab_del(&c->srv->cids, &c->cids[i]);
  c->ncids = 0;
}

/* ======================================================================
 * Sending
 * ==================================================================== */

/* Sends one datagram from local (the source address, so a wildcard-bound
 * server answers from the address the client used; NULL: any) to remote.
 * Best effort: a full socket drops it. */
void gl_qs_send_one(gl_qserver *s, const struct sockaddr *local,
                    const struct sockaddr *remote, socklen_t remotelen, const uint8_t *pkt,
                    size_t len) {
  gl_udp_tx tx = {.data = pkt, .lens = &len, .count = 1, .remote = remote,
                  .remotelen = remotelen, .local = local};
  int err;
  if (gl_udp_send(s->udp, &tx, &err) != 1 || err)
    GL_DEBUG("quic: a %zu-byte datagram was not sent: %s", len, strerror(err ? err : EAGAIN));
}

/* Drops the datagrams c kept from a full socket. */
static void conn_pend_clear(qconn *c) {
  free(c->pend);
  free(c->pend_lens);
  c->pend = NULL;
  c->pend_lens = NULL;
  c->pend_count = 0;
}

/* Queues c for the socket's next writable event. */
static void conn_block(qconn *c) {
  gl_qserver *s = c->srv;
  if (!c->in_blocked) {
    c->in_blocked = true;
    c->bnext = s->blocked_head;
    s->blocked_head = c;
  }
  ev_io_start(s->loop, &s->wio);
}

/* Sends n datagrams (lens[i] bytes each, back to back at data) to c's
 * peer. Returns false when the socket filled up: the rest is kept on c
 * (copied unless it is c's own queue) for srv_on_writable. Other errors
 * drop datagrams: QUIC loss recovery resends what mattered. */
static bool conn_send_batch(qconn *c, const uint8_t *data, const size_t *lens, size_t n) {
  gl_qserver *s = c->srv;
  gl_udp_tx tx = {.data = data, .lens = lens, .count = n,
                  .remote = (const struct sockaddr *)&c->remote, .remotelen = c->remotelen,
                  .local = (const struct sockaddr *)&c->local};
  int err;
  GL_LAT(GL_LAT_D_PKT);
  size_t done = gl_udp_send(s->udp, &tx, &err);
  GL_LAT(GL_LAT_D_SEND);
  if (err) GL_DEBUG("quic: send to %s failed: %s", c->peer, strerror(err));
  if (done == n) return true;
  size_t skip = 0, bytes = 0;
  for (size_t i = 0; i < done; i++) skip += lens[i];
  for (size_t i = done; i < n; i++) bytes += lens[i];
  if (data == c->pend) { /* our own queue: keep its tail */
    memmove(c->pend, c->pend + skip, bytes);
    memmove(c->pend_lens, c->pend_lens + done, (n - done) * sizeof *lens);
    c->pend_count = n - done;
  } else {
    conn_pend_clear(c);
    c->pend = malloc(bytes);
    c->pend_lens = malloc((n - done) * sizeof *lens);
    if (!c->pend || !c->pend_lens) { /* lost, as if on the wire */
      conn_pend_clear(c);
      return false;
    }
    memcpy(c->pend, data + skip, bytes);
    memcpy(c->pend_lens, lens + done, (n - done) * sizeof *lens);
    c->pend_count = n - done;
  }
  conn_block(c);
  return false;
}

/* Remembers path as c's (where its datagrams go). */
static void conn_set_path(qconn *c, const ngtcp2_path *path) {
  if (path->remote.addrlen <= sizeof c->remote) {
    memcpy(&c->remote, path->remote.addr, path->remote.addrlen);
    c->remotelen = (socklen_t)path->remote.addrlen;
  }
  if (path->local.addrlen <= sizeof c->local) {
    memcpy(&c->local, path->local.addr, path->local.addrlen);
    c->locallen = (socklen_t)path->local.addrlen;
  }
}

/* gl_q_writer.send: a batch for path (where c's datagrams go from now). */
static bool conn_tx(void *ctx, const ngtcp2_path *path, const uint8_t *data, const size_t *lens,
                    size_t n) {
  qconn *c = ctx;
  conn_set_path(c, path);
  return conn_send_batch(c, data, lens, n);
}

/* Writes what ngtcp2 lets us send now, up to GL_Q_ROUND_BYTES (one
 * gl_q_write round into the server's transmit buffer; streams take turns,
 * a packet each). Stops early when the socket is full (c is then blocked)
 * or the connection fails. */
static void conn_write(qconn *c) {
  gl_qserver *s = c->srv;
  c->more = false;
  if (c->state != ST_ACTIVE || c->pend_count) return;
  gl_q_writer w = {.conn = c->conn, .q = &c->sendq, .buf = s->txbuf, .lens = s->txlens,
                   .max_udp = s->max_udp, .send = conn_tx, .ctx = c};
  int rc = gl_q_write(&w, gl_q_now_ns());
  if (rc == 1) {
    c->more = true;
  } else if (rc < 0) {
    GL_DEBUG("quic: write to %s failed: %s", c->peer, ngtcp2_strerror(rc));
    conn_close_liberr(c, rc);
  }
}

/* ======================================================================
 * Connection lifecycle
 * ==================================================================== */

static void conn_mark_dirty(qconn *c) {
  gl_qserver *s = c->srv;
  if (c->in_dirty) return;
  c->in_dirty = true;
  c->dnext = NULL;
  if (s->dirty_tail) s->dirty_tail->dnext = c;
  else s->dirty_head = c;
  s->dirty_tail = c;
}

/* Every outstanding request of c becomes orphaned; undelivered ones are
 * dropped. */
static void stream_unadmit(qstream *st);

static void conn_orphan_all(qconn *c) {
  for (qstream *st = c->streams; st; st = st->next) {
    stream_unadmit(st);
    if (st->req) {
      st->req->st = NULL;
      __atomic_store_n(&st->req->gone, true, __ATOMIC_RELEASE);
      st->req = NULL;
    }
    st->in_ready = false;
  }
  c->ready_head = c->ready_tail = NULL;
}

static void conn_leave_active(qconn *c, enum conn_state to) {
  if (c->state == ST_ACTIVE) __atomic_sub_fetch(&c->srv->grp->nactive, 1, __ATOMIC_RELAXED);
  gl_qs_hs_end(c, false);
  c->state = to;
  conn_orphan_all(c);
  conn_mark_dirty(c);
}

static uint64_t conn_close_period_ns(qconn *c) {
  uint64_t pto = ngtcp2_conn_get_pto(c->conn);
  if (pto < 10 * NGTCP2_MILLISECONDS) pto = 10 * NGTCP2_MILLISECONDS;
  if (pto > 2 * NGTCP2_SECONDS) pto = 2 * NGTCP2_SECONDS;
  return 3 * pto;
}

/* Drops c without a word (garbage, idle timeout). */
static void conn_drop(qconn *c, const char *why) {
  if (c->state == ST_DEAD) return;
  if (!c->fresh) GL_INFO("quic: connection %s closed (%s)", c->peer, why);
  else GL_DEBUG("quic: dropped new connection from %s (%s)", c->peer, why);
  conn_unmap_all_cids(c); /* later packets do not reach it */
  conn_leave_active(c, ST_DEAD);
}

static void conn_start_draining(qconn *c) {
  if (c->state != ST_ACTIVE) return;
  ngtcp2_ccerr e = *ngtcp2_conn_get_ccerr(c->conn);
  char why[200];
  gl_q_describe_ccerr(&e, why, sizeof why);
  GL_INFO("quic: connection %s closed by peer (%s)", c->peer, why);
  c->close_deadline_ns = gl_q_now_ns() + conn_close_period_ns(c);
  conn_leave_active(c, ST_DRAINING);
}

/* Sends CONNECTION_CLOSE with e and enters the closing period. */
static void conn_close(qconn *c, const ngtcp2_ccerr *e) {
  if (c->state != ST_ACTIVE) return;
  uint8_t buf[GL_Q_CTRL_PKT];
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  ngtcp2_pkt_info pi;
  uint64_t now = gl_q_now_ns();
  ngtcp2_ssize n = ngtcp2_conn_write_connection_close(c->conn, &ps.path, &pi, buf, sizeof buf,
                                                      e, now);
  char why[200];
  gl_q_describe_ccerr(e, why, sizeof why);
  if (n <= 0) {
    conn_drop(c, why);
    return;
  }
  GL_INFO("quic: closing connection %s (%s)", c->peer, why);
  free(c->close_pkt);
  c->close_pkt = malloc((size_t)n);
  if (c->close_pkt) {
    memcpy(c->close_pkt, buf, (size_t)n);
    c->close_len = (size_t)n;
  }
  conn_pend_clear(c); /* the close packet replaces anything queued */
  conn_set_path(c, &ps.path);
  gl_qs_send_one(c->srv, (const struct sockaddr *)&c->local, (const struct sockaddr *)&c->remote,
                 c->remotelen, buf, (size_t)n);
  c->close_deadline_ns = now + conn_close_period_ns(c);
  conn_leave_active(c, ST_CLOSING);
}

static void conn_close_liberr(qconn *c, int liberr) {
  if (c->fresh && liberr != NGTCP2_ERR_CRYPTO) {
    conn_drop(c, ngtcp2_strerror(liberr));
    return;
  }
  ngtcp2_ccerr e;
  ngtcp2_ccerr_default(&e);
  if (liberr == NGTCP2_ERR_CRYPTO) /* with why verify_client_cert refused, if it did */
    ngtcp2_ccerr_set_tls_alert(&e, ngtcp2_conn_get_tls_alert(c->conn),
                               (const uint8_t *)c->refusal, strlen(c->refusal));
  else
    ngtcp2_ccerr_set_liberr(&e, liberr, NULL, 0);
  conn_close(c, &e);
}

void gl_qs_conn_close_app(qconn *c, uint64_t code, const char *reason) {
  ngtcp2_ccerr e;
  ngtcp2_ccerr_default(&e);
  size_t n = strnlen(reason, 128);
  ngtcp2_ccerr_set_application_error(&e, code, (const uint8_t *)reason, n);
  conn_close(c, &e);
}

static void conn_free(qconn *c) {
  gl_qserver *s = c->srv;
  if (c->conn && !c->fresh) {
    ngtcp2_conn_info ci;
    ngtcp2_conn_get_conn_info(c->conn, &ci);
    GL_DEBUG("quic: connection %s: UDP payload %zu, cwnd %llu, ssthresh %llu, srtt %llu us",
             c->peer, ngtcp2_conn_get_path_max_tx_udp_payload_size(c->conn),
             (unsigned long long)ci.cwnd, (unsigned long long)ci.ssthresh,
             (unsigned long long)(ci.smoothed_rtt / 1000));
  }
  ev_timer_stop(s->loop, &c->timer);
  conn_unmap_all_cids(c);
  conn_orphan_all(c);
  while (c->streams) stream_free(c->streams);
  if (c->in_dirty) {
    qconn *prev = NULL;
    for (qconn *x = s->dirty_head; x; prev = x, x = x->dnext) {
      if (x == c) {
        if (prev) prev->dnext = x->dnext;
        else s->dirty_head = x->dnext;
        if (s->dirty_tail == x) s->dirty_tail = prev;
        break;
      }
    }
  }
  if (c->in_blocked) {
    for (qconn **pp = &s->blocked_head; *pp; pp = &(*pp)->bnext) {
      if (*pp == c) {
        *pp = c->bnext;
        break;
      }
    }
  }
  if (c->state == ST_ACTIVE) __atomic_sub_fetch(&s->grp->nactive, 1, __ATOMIC_RELAXED);
  gl_qs_hs_end(c, false);
  gl_qs_addr_release(c);
  if (c->prev) c->prev->next = c->next;
  else s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  pthread_mutex_lock(&s->grp->mu);
  __atomic_sub_fetch(&s->grp->nconns, 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&s->grp->mu);
  if (--s->nconns == 0) gl_q_pool_clear(&s->pool); /* idle: give the memory back */
  if (c->conn) ngtcp2_conn_del(c->conn);
  if (c->tls) gnutls_deinit(c->tls);
  gl_qs_cred_release(s, c->cred);
  free(c->close_pkt);
  free(c->cids);
  conn_pend_clear(c);
  free(c);
}

static void conn_arm_timer(qconn *c) {
  gl_qserver *s = c->srv;
  uint64_t exp;
  if (c->state == ST_ACTIVE) exp = ngtcp2_conn_get_expiry(c->conn);
  else exp = c->close_deadline_ns;
  ev_timer_stop(s->loop, &c->timer);
  if (c->more && c->state == ST_ACTIVE && !c->pend_count) exp = 0; /* the rest of a round */
  if (exp == UINT64_MAX) return;
  uint64_t now = gl_q_now_ns();
  double delay = exp > now ? (double)(exp - now) / 1e9 : 0.0;
  ev_timer_set(&c->timer, delay, 0.0);
  ev_timer_start(s->loop, &c->timer);
}

/* Writes, re-arms or frees every dirty connection. */
static void srv_flush(gl_qserver *s) {
  if (s->in_batch) return;
  if (s->dirty_head) ev_now_update(s->loop);
  qconn *c;
  while ((c = s->dirty_head)) {
    s->dirty_head = c->dnext;
    if (!s->dirty_head) s->dirty_tail = NULL;
    c->in_dirty = false;
    c->dnext = NULL;
    if (c->state == ST_ACTIVE) conn_write(c);
    if (c->state == ST_DEAD) conn_free(c);
    else conn_arm_timer(c);
  }
}

static void conn_timer_cb(struct ev_loop *loop, ev_timer *w, int revents) {
  (void)loop;
  (void)revents;
  qconn *c = w->data;
  gl_qserver *s = c->srv;
  uint64_t now = gl_q_now_ns();
  s->in_batch = true;
  if (c->state == ST_ACTIVE) {
    int rv = ngtcp2_conn_handle_expiry(c->conn, now);
    if (rv == NGTCP2_ERR_IDLE_CLOSE) conn_drop(c, "idle timeout");
    else if (rv == NGTCP2_ERR_HANDSHAKE_TIMEOUT) conn_drop(c, "handshake timeout");
    else if (rv != 0) conn_close_liberr(c, rv);
  } else if (now >= c->close_deadline_ns) {
    c->state = ST_DEAD;
  }
  conn_mark_dirty(c);
  s->in_batch = false;
  srv_flush(s);
}

/* ======================================================================
 * Streams and requests
 * ==================================================================== */

static qstream *stream_new(qconn *c, int64_t id) {
  qstream *st = calloc(1, sizeof *st);
  if (!st) return NULL;
  st->c = c;
  st->id = id;
  st->out.id = id;
  st->next = c->streams;
  if (c->streams) c->streams->prev = st;
  c->streams = st;
  return st;
}

static void ready_push(qconn *c, qstream *st) {
  if (st->in_ready || st->delivered) return;
  st->in_ready = true;
  st->rnext = NULL;
  if (c->ready_tail) c->ready_tail->rnext = st;
  else c->ready_head = st;
  c->ready_tail = st;
}

static void ready_remove(qconn *c, qstream *st) {
  if (!st->in_ready) return;
  qstream *prev = NULL;
  for (qstream *x = c->ready_head; x; prev = x, x = x->rnext) {
    if (x == st) {
      if (prev) prev->rnext = x->rnext;
      else c->ready_head = x->rnext;
      if (c->ready_tail == x) c->ready_tail = prev;
      break;
    }
  }
  st->in_ready = false;
}

/* Gives the reply buffer back: to the pool, or to its lender. */
static void sbuf_drop(qstream *st) {
  if (st->srelease) st->srelease(st->sctx);
  else gl_q_pool_put(&st->c->srv->pool, st->sbuf, st->scap);
  st->srelease = NULL;
  st->sctx = NULL;
  st->sbuf = NULL;
  st->scap = 0;
}

/* A request on_header let through has ended (its body whole, or never to
 * be): on_header_end is told, once. */
static void stream_unadmit(qstream *st) {
  if (!st->admitted) return;
  qconn *c = st->c;
  st->admitted = false;
  c->unfinished--;
  c->unfinished_bytes -= st->whole;
  gl_qserver *s = c->srv;
  if (s->cfg.on_header_end) s->cfg.on_header_end(s->cfg.header_user, st->ticket, st->whole);
  st->ticket = NULL;
}

static void stream_free(qstream *st) {
  qconn *c = st->c;
  stream_unadmit(st);
  if (st->req) { /* orphaned */
    st->req->st = NULL;
    __atomic_store_n(&st->req->gone, true, __ATOMIC_RELEASE);
  }
  gl_q_outq_remove(&c->sendq, &st->out);
  ready_remove(c, st);
  c->rx_buffered -= st->rlen;
  if (st->prev) st->prev->next = st->next;
  else c->streams = st->next;
  if (st->next) st->next->prev = st->prev;
  gl_q_pool_put(&c->srv->pool, st->rbuf, st->rcap);
  sbuf_drop(st);
  free(st);
}

/* presize: make room for the whole message its header declares at once
 * (not before the header's verdict). */
static int buf_append(qstream *st, const uint8_t *data, size_t len, size_t limit, bool presize) {
  if (len == 0) return 0;
  size_t need = st->rlen + len, whole = gl_q_msg_size(st->rbuf, st->rlen, data, len);
  if (presize && whole > need && whole <= limit) need = whole; /* room for all of it at once */
  if (gl_q_buf_grow(&st->c->srv->pool, &st->rbuf, &st->rcap, st->rlen, need,
                    limit, 0) != 0)
    return -1;
  gl_q_copy_in(st->rbuf + st->rlen, data, len, st->rcap);
  st->rlen += len;
  return 0;
}

/* Asks on_header about st's header (its first GL_Q_HEADER_BYTES are in).
 * A refusal keeps the answer as st's reply and drops the bytes received;
 * conn_deliver then stops the reading and queues the answer. */
static void stream_verdict(qconn *c, qstream *st) {
  gl_qserver *s = c->srv;
  st->hdr_seen = true;
  uint8_t answer[GL_QSERVER_HEADER_REPLY_MAX];
  gl_req_origin from = {.identity = c->idlen ? c->identity : "",
                        .peer = c->peer,
                        .conn_unfinished = c->unfinished,
                        .conn_unfinished_bytes = c->unfinished_bytes};
  void *ticket = NULL;
  size_t n = s->cfg.on_header(s->cfg.header_user, &from, st->rbuf, answer, sizeof answer, &ticket);
  if (n == 0 || n > sizeof answer) {
    st->admitted = true;
    st->ticket = ticket;
    st->whole = gl_q_hdr_msg_size(st->rbuf);
    c->unfinished++;
    c->unfinished_bytes += st->whole;
    return;
  }
  uint8_t *copy = malloc(n);
  if (!copy) return; /* read on: the request is judged whole instead */
  memcpy(copy, answer, n);
  /* What the header declares decides the STOP_SENDING code. */
  st->too_large = gl_q_hdr_msg_size(st->rbuf) > s->cfg.max_message_bytes;
  st->refused = true;
  c->rx_buffered -= st->rlen;
  gl_q_pool_put(&s->pool, st->rbuf, st->rcap);
  st->rbuf = NULL;
  st->rlen = st->rcap = 0;
  sbuf_drop(st);
  st->sbuf = copy;
  st->scap = n;
  st->out.data = copy;
  st->out.len = n;
  st->out.off = 0;
  ready_push(c, st);
}

/* Gives the peer back n bytes of connection credit, now if the
 * connection's undelivered bytes are within budget, else later. */
static void conn_return_credit(qconn *c, uint64_t n) {
  c->rx_owed += n;
  if (c->rx_owed && c->rx_buffered <= c->srv->rx_budget && c->state == ST_ACTIVE) {
    ngtcp2_conn_extend_max_offset(c->conn, c->rx_owed);
    c->rx_owed = 0;
  }
}

/* Hands finished (or oversized) requests of c to on_request. Runs outside
 * ngtcp2 callbacks; replies made from on_request are queued and written at
 * the next flush. */
static void conn_deliver(qconn *c) {
  gl_qserver *s = c->srv;
  qstream *st;
  while (c->state == ST_ACTIVE && (st = c->ready_head)) {
    c->ready_head = st->rnext;
    if (!c->ready_head) c->ready_tail = NULL;
    st->in_ready = false;
    if (st->delivered) continue;
    st->delivered = true;
    stream_unadmit(st); /* whole, cut, or abandoned: no longer unfinished */
    if (st->refused) {
      /* Answered on its header: read no more of it, send the answer. */
      uint64_t code = st->too_large ? GL_Q_APP_TOO_LARGE : GL_Q_APP_REFUSED;
      ngtcp2_conn_shutdown_stream_read(c->conn, 0, st->id, code);
      GL_DEBUG("quic: request on stream %lld from %s refused on its header", (long long)st->id,
               c->peer);
      gl_q_outq_add(&c->sendq, &st->out);
      continue;
    }
    if (st->reset_rx && !st->too_large) {
      /* The client abandoned the request before finishing it. */
      ngtcp2_conn_shutdown_stream(c->conn, 0, st->id, GL_Q_APP_CANCELLED);
      continue;
    }
    /* Not calloc: only what the copies need is written. */
    gl_qreq *req = malloc(sizeof *req);
    if (!req) {
      GL_ERROR("quic: out of memory for a request from %s", c->peer);
      ngtcp2_conn_shutdown_stream(c->conn, 0, st->id, GL_Q_APP_CANCELLED);
      continue;
    }
    req->st = st;
    req->gone = false;
    memcpy(req->peer, c->peer, c->peerlen + 1);
    if (c->idlen) memcpy(req->identity, c->identity, c->idlen + 1);
    else req->identity[0] = 0;
    st->req = req;
    int err = GL_QREQ_OK;
    if (st->too_large) {
      err = GL_QREQ_TOO_LARGE;
      ngtcp2_conn_shutdown_stream_read(c->conn, 0, st->id, GL_Q_APP_TOO_LARGE);
      GL_DEBUG("quic: request on stream %lld from %s over %zu bytes", (long long)st->id,
               c->peer, s->cfg.max_message_bytes);
    }
    uint8_t *msg = st->rbuf;
    size_t len = st->rlen, cap = st->rcap;
    st->rbuf = NULL;
    st->rlen = st->rcap = 0;
    c->rx_buffered -= len;
    if (s->cfg.on_request_take) {
      s->cfg.on_request_take(s->cfg.user, req, msg, len, cap, err);
    } else {
      s->cfg.on_request(s->cfg.user, req, msg ? msg : (const uint8_t *)"", len, err);
      gl_q_pool_put(&s->pool, msg, cap);
    }
  }
  if (c->state == ST_ACTIVE) conn_return_credit(c, 0);
}

/* A lent reply buffer: handed back through release. */
typedef struct lent {
  void (*release)(void *ctx);
  void *ctx;
} lent;

/* gl_qreq_reply, gl_qreq_reply_take and gl_qreq_reply_lent: msg is copied
 * unless owned (then it is ours to free) or lent. */
static int reply(gl_qreq *req, uint8_t *owned, const lent *ln, const uint8_t *msg, size_t len) {
  qstream *st = req ? req->st : NULL;
  free(req);
  if (st) st->req = NULL;
  bool ok = st && st->c->state == ST_ACTIVE && !st->out.refused;
  if (!ok) {
    free(owned);
    if (ln) ln->release(ln->ctx);
    return -1;
  }
  qconn *c = st->c;
  uint8_t *copy = ln ? (uint8_t *)msg : owned;
  size_t cap = len;
  if (!copy && (copy = gl_q_pool_alloc(&c->srv->pool, len, &cap))) {
    if (len) memcpy(copy, msg, len);
  }
  if (!copy) {
    ngtcp2_conn_shutdown_stream(c->conn, 0, st->id, GL_Q_APP_CANCELLED);
    conn_mark_dirty(c);
    srv_flush(c->srv);
    return -1;
  }
  sbuf_drop(st);
  if (ln) {
    st->srelease = ln->release;
    st->sctx = ln->ctx;
  }
  st->sbuf = copy;
  st->scap = cap;
  st->out.data = copy;
  st->out.len = len;
  st->out.off = 0;
  gl_q_outq_add(&c->sendq, &st->out);
  conn_mark_dirty(c);
  srv_flush(c->srv); /* no-op inside a batch: the batch ends with a flush */
  return 0;
}

void gl_qserver_recycle(gl_qserver *srv, uint8_t *buf, size_t cap) {
  gl_q_pool_put(&srv->pool, buf, cap);
}

int gl_qreq_reply(gl_qreq *req, const uint8_t *msg, size_t len) {
  return reply(req, NULL, NULL, msg, len);
}

int gl_qreq_reply_take(gl_qreq *req, uint8_t *msg, size_t len) {
  if (!msg) return reply(req, NULL, NULL, (const uint8_t *)"", 0);
  return reply(req, msg, NULL, msg, len);
}

int gl_qreq_reply_lent(gl_qreq *req, const uint8_t *msg, size_t len, void (*release)(void *ctx),
                       void *ctx) {
  lent ln = {release, ctx};
  return reply(req, NULL, &ln, msg, len);
}

bool gl_qreq_orphaned(const gl_qreq *req) {
  return !req || !req->st || req->st->c->state != ST_ACTIVE;
}

bool gl_qreq_gone(const gl_qreq *req) {
  return !req || __atomic_load_n(&req->gone, __ATOMIC_ACQUIRE);
}

const char *gl_qreq_identity(const gl_qreq *req) { return req ? req->identity : ""; }

void gl_qreq_peer(const gl_qreq *req, char *buf, size_t len) {
  if (buf && len) snprintf(buf, len, "%s", req ? req->peer : "?");
}

int gl_qreq_set_identity(gl_qreq *req, const char *identity) {
  if (!req || !identity) return -1;
  size_t n = strnlen(identity, GL_IDENTITY_MAX);
  if (n == 0 || n == GL_IDENTITY_MAX) return -1;
  qstream *st = req->st;
  if (!st || st->c->state != ST_ACTIVE) return -1;
  qconn *c = st->c;
  if (c->idlen) return -1;
  memcpy(c->identity, identity, n + 1);
  c->idlen = n;
  memcpy(req->identity, identity, n + 1);
  GL_DEBUG("quic: connection %s was given an identity (%zu bytes)", c->peer, n);
  return 0;
}

/* ======================================================================
 * ngtcp2 callbacks (record state only)
 * ==================================================================== */

static int cb_handshake_completed(ngtcp2_conn *conn, void *user_data) {
  (void)conn;
  qconn *c = user_data;
  gl_qs_hs_end(c, true);
  if (c->idlen) GL_INFO("quic: connection from %s established (client %s)", c->peer, c->identity);
  else GL_INFO("quic: connection from %s established", c->peer);
  /* Verified on a credential a reload has replaced since: checked again on
   * the current one (gl_qs_recheck_cb), outside this callback. */
  pthread_mutex_lock(&c->srv->cred_mu);
  bool stale = c->cred != c->srv->cred;
  pthread_mutex_unlock(&c->srv->cred_mu);
  if (stale && c->idlen && c->srv->recheck_on) ev_async_send(c->srv->loop, &c->srv->recheck);
  return 0;
}

static int cb_stream_open(ngtcp2_conn *conn, int64_t stream_id, void *user_data) {
  qconn *c = user_data;
  if (!ngtcp2_is_bidi_stream(stream_id)) return 0;
  qstream *st = stream_new(c, stream_id);
  if (!st) return NGTCP2_ERR_CALLBACK_FAILURE;
  st->counted = true;
  ngtcp2_conn_set_stream_user_data(conn, stream_id, st);
  return 0;
}

static int cb_recv_stream_data(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id,
                               uint64_t offset, const uint8_t *data, size_t datalen,
                               void *user_data, void *stream_user_data) {
  (void)offset;
  qconn *c = user_data;
  qstream *st = stream_user_data;
  if (!st) {
    st = stream_new(c, stream_id);
    if (!st) return NGTCP2_ERR_CALLBACK_FAILURE;
    ngtcp2_conn_set_stream_user_data(conn, stream_id, st);
  }
  if (st->delivered || st->too_large || st->in_ready) {
    conn_return_credit(c, datalen); /* past the cut: discarded */
    return 0;
  }
  size_t limit = c->srv->cfg.max_message_bytes;
  size_t total = datalen;
  bool judge = c->srv->cfg.on_header && !st->hdr_seen;
  if (judge && st->rlen < GL_Q_HEADER_BYTES) {
    /* The header alone first: its verdict comes before a byte of the
     * body is buffered (or room made for it). */
    size_t n = GL_Q_HEADER_BYTES - st->rlen;
    if (n > datalen) n = datalen;
    if (buf_append(st, data, n, limit, false) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    c->rx_buffered += n;
    ngtcp2_conn_extend_max_stream_offset(conn, stream_id, n);
    data += n;
    datalen -= n;
    if (st->rlen < GL_Q_HEADER_BYTES) {
      if (flags & NGTCP2_STREAM_DATA_FLAG_FIN) ready_push(c, st); /* short: malformed */
      conn_return_credit(c, total);
      return 0;
    }
    stream_verdict(c, st);
    if (st->refused) { /* the rest is discarded */
      conn_return_credit(c, total);
      return 0;
    }
  }
  size_t before = st->rlen;
  if (datalen > limit - st->rlen) {
    if (buf_append(st, data, limit - st->rlen, limit, true) != 0)
      return NGTCP2_ERR_CALLBACK_FAILURE;
    st->too_large = true;
    ready_push(c, st);
  } else {
    if (buf_append(st, data, datalen, limit, true) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    ngtcp2_conn_extend_max_stream_offset(conn, stream_id, datalen);
    if (flags & NGTCP2_STREAM_DATA_FLAG_FIN) ready_push(c, st);
  }
  c->rx_buffered += st->rlen - before;
  conn_return_credit(c, total);
  return 0;
}

static int cb_stream_close(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id,
                           uint64_t app_error_code, void *user_data, void *stream_user_data) {
  (void)flags;
  (void)app_error_code;
  (void)user_data;
  qstream *st = stream_user_data;
  if (!st) return 0;
  bool counted = st->counted;
  qconn *c = st->c;
  stream_free(st);
  conn_return_credit(c, 0);
  if (counted && !ngtcp2_conn_is_local_stream(conn, stream_id) &&
      ngtcp2_is_bidi_stream(stream_id))
    ngtcp2_conn_extend_max_streams_bidi(conn, 1);
  return 0;
}

static int cb_stream_reset(ngtcp2_conn *conn, int64_t stream_id, uint64_t final_size,
                           uint64_t app_error_code, void *user_data, void *stream_user_data) {
  (void)conn;
  (void)stream_id;
  (void)final_size;
  (void)app_error_code;
  qconn *c = user_data;
  qstream *st = stream_user_data;
  if (!st || st->delivered || st->too_large || st->refused) return 0;
  /* Unfinished request: free its bytes now, close our side on delivery. */
  stream_unadmit(st);
  st->reset_rx = true;
  c->rx_buffered -= st->rlen;
  gl_q_pool_put(&c->srv->pool, st->rbuf, st->rcap);
  st->rbuf = NULL;
  st->rlen = st->rcap = 0;
  ready_push(c, st);
  conn_return_credit(c, 0);
  return 0;
}

static int cb_stream_stop_sending(ngtcp2_conn *conn, int64_t stream_id, uint64_t app_error_code,
                                  void *user_data, void *stream_user_data) {
  (void)conn;
  (void)stream_id;
  (void)app_error_code;
  (void)user_data;
  qstream *st = stream_user_data;
  if (st) st->out.refused = true;
  return 0;
}

static int cb_get_new_connection_id(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token,
                                    size_t cidlen, void *user_data) {
  (void)conn;
  qconn *c = user_data;
  if (cidlen > NGTCP2_MAX_CIDLEN) return NGTCP2_ERR_CALLBACK_FAILURE;
  for (int tries = 0;; tries++) {
    if (tries == 8 || gl_q_random(cid->data, cidlen) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
    cid->datalen = cidlen;
    if (!cid_lookup(c->srv, cid->data, cidlen)) break;
  }
  if (gl_q_random(token, NGTCP2_STATELESS_RESET_TOKENLEN) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  if (conn_add_cid(c, cid) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

static int cb_remove_connection_id(ngtcp2_conn *conn, const ngtcp2_cid *cid, void *user_data) {
  (void)conn;
  conn_remove_cid(user_data, cid);
  return 0;
}

/* ======================================================================
 * Accepting connections
 * ==================================================================== */

static qconn *conn_accept(gl_qserver *s, const ngtcp2_path *path, const uint8_t *pkt,
                          size_t len) {
  ngtcp2_pkt_hd hd;
  if (ngtcp2_accept(&hd, pkt, len) != 0 || hd.type != NGTCP2_PKT_INITIAL) {
    GL_DEBUG("quic: dropped a %zu-byte datagram: not a valid first packet", len);
    return NULL;
  }
  const struct sockaddr *local = path->local.addr, *remote = path->remote.addr;
  socklen_t remotelen = (socklen_t)path->remote.addrlen;
  uint64_t now = gl_q_now_ns();
  char peer[PEER_LEN];
  gl_qs_addr_to_str(remote, peer, sizeof peer);

  ngtcp2_cid odcid;
  bool validated;
  uint8_t ip[16];
  if (!gl_qs_admit(s, &hd, local, remote, remotelen, now, peer, &validated, &odcid, ip))
    return NULL;

  qconn *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  memcpy(c->ip, ip, sizeof ip);
  c->srv = s;
  if (gl_qs_hs_begin(c) != 0) {
    free(c);
    return NULL;
  }
  c->state = ST_ACTIVE;
  c->fresh = true;
  ev_timer_init(&c->timer, conn_timer_cb, 0.0, 0.0);
  c->timer.data = c;
  memcpy(c->peer, peer, sizeof peer);
  c->peerlen = strlen(c->peer);
  c->next = s->conns;
  if (s->conns) s->conns->prev = c;
  s->conns = c;
  s->nconns++;
  pthread_mutex_lock(&s->grp->mu);
  __atomic_add_fetch(&s->grp->nconns, 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&s->grp->mu);
  __atomic_add_fetch(&s->grp->nactive, 1, __ATOMIC_RELAXED);

  ngtcp2_cid scid;
  scid.datalen = GL_Q_SCID_LEN;
  do {
    if (gl_q_random(scid.data, scid.datalen) != 0) goto fail;
  } while (cid_lookup(s, scid.data, scid.datalen));

  ngtcp2_callbacks cb = {
      .recv_client_initial = ngtcp2_crypto_recv_client_initial_cb,
      .recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
      .handshake_completed = cb_handshake_completed,
      .encrypt = ngtcp2_crypto_encrypt_cb,
      .decrypt = ngtcp2_crypto_decrypt_cb,
      .hp_mask = ngtcp2_crypto_hp_mask_cb,
      .recv_stream_data = cb_recv_stream_data,
      .stream_open = cb_stream_open,
      .stream_close = cb_stream_close,
      .rand = gl_q_rand_cb,
      .get_new_connection_id = cb_get_new_connection_id,
      .remove_connection_id = cb_remove_connection_id,
      .update_key = ngtcp2_crypto_update_key_cb,
      .stream_reset = cb_stream_reset,
      .delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb,
      .delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
      .get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb,
      .stream_stop_sending = cb_stream_stop_sending,
      .version_negotiation = ngtcp2_crypto_version_negotiation_cb,
  };
  ngtcp2_settings settings;
  ngtcp2_settings_default(&settings);
  settings.initial_ts = now;
  settings.max_window = GL_Q_MAX_CONN_WINDOW;
  settings.max_stream_window = GL_Q_MAX_STREAM_WINDOW;
  uint16_t probes[GL_Q_MAX_PROBES];
  gl_q_settings_udp(&settings, s->max_udp,
                    gl_q_path_is_local(path->local.addr, path->remote.addr), probes);
  uint64_t idle_ns = (uint64_t)s->cfg.idle_timeout_ms * NGTCP2_MILLISECONDS;
  uint64_t hs_ns = (uint64_t)s->cfg.handshake_timeout_ms * NGTCP2_MILLISECONDS;
  settings.handshake_timeout = idle_ns < hs_ns ? idle_ns : hs_ns;
  if (validated) { /* the address is proven: no anti-amplification limit */
    settings.token = hd.token;
    settings.tokenlen = hd.tokenlen;
    settings.token_type = NGTCP2_TOKEN_TYPE_RETRY;
  }

  ngtcp2_transport_params params;
  ngtcp2_transport_params_default(&params);
  params.initial_max_stream_data_bidi_remote = GL_Q_STREAM_WINDOW;
  params.initial_max_stream_data_bidi_local = 0;
  params.initial_max_stream_data_uni = 0;
  params.initial_max_data = GL_Q_CONN_WINDOW;
  params.initial_max_streams_bidi = s->cfg.max_streams_per_conn;
  params.initial_max_streams_uni = 0;
  params.max_idle_timeout = idle_ns;
  params.max_udp_payload_size = GL_UDP_MAX_PAYLOAD; /* what our receive slots take */
  /* The client checks that these name the connection IDs it saw. */
  if (validated) {
    params.original_dcid = odcid;
    params.retry_scid = hd.dcid;
    params.retry_scid_present = 1;
  } else {
    params.original_dcid = hd.dcid;
  }
  params.original_dcid_present = 1;

  int rv = ngtcp2_conn_server_new(&c->conn, &hd.scid, &scid, path, hd.version, &cb, &settings,
                                  &params, NULL, c);
  if (rv != 0) {
    c->conn = NULL;
    GL_WARN("quic: cannot create a connection: %s", ngtcp2_strerror(rv));
    goto fail;
  }
  if (gl_qs_conn_tls_init(c) != 0) {
    GL_WARN("quic: cannot set up a TLS session");
    goto fail;
  }
  if (conn_add_cid(c, &scid) != 0 || conn_add_cid(c, &hd.dcid) != 0) goto fail;
  return c;

fail:
  c->state = ST_DEAD;
  __atomic_sub_fetch(&s->grp->nactive, 1, __ATOMIC_RELAXED);
  conn_free(c);
  return NULL;
}

/* One datagram from remote to local. */
static void srv_handle_datagram(gl_qserver *s, const ngtcp2_path *path, const uint8_t *pkt,
                                size_t len) {
  ngtcp2_version_cid vc;
  int rv = ngtcp2_pkt_decode_version_cid(&vc, pkt, len, GL_Q_SCID_LEN);
  if (rv == NGTCP2_ERR_VERSION_NEGOTIATION) {
    /* Only answer datagrams as large as a client Initial (no amplification). */
    if (len >= NGTCP2_MAX_UDP_PAYLOAD_SIZE)
      gl_qs_send_version_negotiation(s, &vc, path->local.addr, path->remote.addr,
                                     (socklen_t)path->remote.addrlen);
    return;
  }
  if (rv != 0) {
    GL_DEBUG("quic: dropped a %zu-byte datagram: bad header", len);
    return;
  }
  qconn *c = cid_lookup(s, vc.dcid, vc.dcidlen);
  if (!c) {
    if (vc.version == 0) {
      GL_DEBUG("quic: dropped a %zu-byte short-header datagram: unknown connection", len);
      return;
    }
    c = conn_accept(s, path, pkt, len);
    if (!c) return;
  }

  switch (c->state) {
  case ST_ACTIVE:
    break;
  case ST_CLOSING:
    /* Answer late packets with our CONNECTION_CLOSE, ever more rarely. */
    c->close_rx++;
    if (c->close_pkt && (c->close_rx & (c->close_rx - 1)) == 0)
      gl_qs_send_one(s, path->local.addr, path->remote.addr, (socklen_t)path->remote.addrlen,
                     c->close_pkt, c->close_len);
    return;
  default:
    return;
  }

  ngtcp2_pkt_info pi = {0};
  rv = ngtcp2_conn_read_pkt(c->conn, path, &pi, pkt, len, gl_q_now_ns());
  if (rv == 0) {
    c->fresh = false;
  } else if (rv == NGTCP2_ERR_DRAINING) {
    conn_start_draining(c);
  } else if (rv == NGTCP2_ERR_DROP_CONN || rv == NGTCP2_ERR_RETRY) {
    conn_drop(c, ngtcp2_strerror(rv));
  } else {
    GL_DEBUG("quic: packet from %s: %s", c->peer, ngtcp2_strerror(rv));
    conn_close_liberr(c, rv);
  }
  conn_deliver(c);
  conn_mark_dirty(c);
}

static void srv_on_readable(struct ev_loop *loop, ev_io *w, int revents) {
  (void)loop;
  (void)revents;
  gl_qserver *s = w->data;
  s->in_batch = true;
  for (int round = 0; round < READ_ROUNDS; round++) {
    gl_udp_msg *msgs;
    int n = gl_udp_recv(s->udp, &msgs);
    if (n > 0) GL_LAT(GL_LAT_D_RECV);
    if (n < 0) {
      GL_DEBUG("quic: recvmmsg: %s", strerror(errno));
      continue; /* an error the socket reported; more may be queued */
    }
    for (int i = 0; i < n; i++) {
      gl_udp_msg *m = &msgs[i];
      ngtcp2_path path = {
          .local = {.addr = (struct sockaddr *)&m->local, .addrlen = m->locallen},
          .remote = {.addr = (struct sockaddr *)&m->remote, .addrlen = m->remotelen},
      };
      size_t off = 0, len;
      for (uint8_t *d; (d = gl_udp_msg_next(m, &off, &len));)
        srv_handle_datagram(s, &path, d, len);
    }
    if (n < GL_QS_RX_SLOTS) break; /* drained */
  }
  s->in_batch = false;
  srv_flush(s);
}

static void srv_on_writable(struct ev_loop *loop, ev_io *w, int revents) {
  (void)revents;
  gl_qserver *s = w->data;
  s->in_batch = true;
  while (s->blocked_head) {
    qconn *c = s->blocked_head;
    s->blocked_head = c->bnext;
    c->in_blocked = false;
    if (c->pend_count && !conn_send_batch(c, c->pend, c->pend_lens, c->pend_count))
      break; /* still full: c is back at the head */
    conn_pend_clear(c);
    conn_mark_dirty(c);
  }
  if (!s->blocked_head) ev_io_stop(loop, &s->wio);
  s->in_batch = false;
  srv_flush(s);
}

/* ======================================================================
 * Server object
 * ==================================================================== */

void gl_qserver_set_limits(gl_qserver *s, uint32_t max_connections_per_address,
                           uint32_t retry_above_handshakes) {
  __atomic_store_n(&s->cfg.max_connections_per_address,
                   max_connections_per_address ? max_connections_per_address
                                               : DEFAULT_MAX_CONNS_PER_ADDRESS,
                   __ATOMIC_RELAXED);
  __atomic_store_n(&s->cfg.retry_above_handshakes,
                   retry_above_handshakes ? retry_above_handshakes
                                          : DEFAULT_RETRY_ABOVE_HANDSHAKES,
                   __ATOMIC_RELAXED);
}

int gl_qserver_new(struct ev_loop *loop, const gl_qserver_config *cfg, gl_qserver **out,
                   char *err, size_t errlen) {
  if (out) *out = NULL;
  if (!loop || !cfg || !out || (!cfg->on_request && !cfg->on_request_take) || !cfg->cert_file ||
      !cfg->key_file) {
    gl_set_err(err, errlen, "invalid server configuration");
    return -1;
  }
  gl_qserver *s = calloc(1, sizeof *s);
  if (!s) {
    gl_set_err(err, errlen, "out of memory");
    return -1;
  }
  pthread_mutex_init(&s->cred_mu, NULL);
  s->loop = loop;
  s->fd = -1;
  s->cfg = *cfg;
  s->listen_host = dup_str(cfg->listen_host);
  s->cert_file = dup_str(cfg->cert_file);
  s->key_file = dup_str(cfg->key_file);
  s->client_ca_file = dup_str(cfg->client_ca_file);
  s->client_crl_file = dup_str(cfg->client_crl_file);
  s->cfg.listen_host = s->listen_host;
  s->cfg.cert_file = s->cert_file;
  s->cfg.key_file = s->key_file;
  s->cfg.client_ca_file = s->client_ca_file;
  s->cfg.client_crl_file = s->client_crl_file;
  s->cfg.client_policy = NULL; /* the credential holds it */
  if (!s->cfg.idle_timeout_ms) s->cfg.idle_timeout_ms = DEFAULT_IDLE_TIMEOUT_MS;
  if (!s->cfg.max_connections) s->cfg.max_connections = DEFAULT_MAX_CONNECTIONS;
  if (!s->cfg.max_streams_per_conn) s->cfg.max_streams_per_conn = DEFAULT_MAX_STREAMS;
  if (!s->cfg.max_message_bytes) s->cfg.max_message_bytes = DEFAULT_MAX_MESSAGE;
  if (!s->cfg.retry_above_handshakes)
    s->cfg.retry_above_handshakes = DEFAULT_RETRY_ABOVE_HANDSHAKES;
  if (!s->cfg.max_connections_per_address)
    s->cfg.max_connections_per_address = DEFAULT_MAX_CONNS_PER_ADDRESS;
  if (!s->cfg.handshake_timeout_ms) s->cfg.handshake_timeout_ms = DEFAULT_HANDSHAKE_TIMEOUT_MS;
  if (!s->cfg.retry_above_address_handshakes)
    s->cfg.retry_above_address_handshakes = DEFAULT_RETRY_ABOVE_ADDRESS_HANDSHAKES;
  s->rx_budget = s->cfg.max_message_bytes > SIZE_MAX / 2 ? SIZE_MAX : 2 * s->cfg.max_message_bytes;
  if (s->rx_budget < RX_BUDGET_FLOOR) s->rx_budget = RX_BUDGET_FLOOR;
  s->max_udp = gl_q_max_udp_payload(s->cfg.max_udp_payload_bytes);
  size_t keep = s->cfg.max_message_bytes;
  gl_q_pool_init(&s->pool, keep > GL_Q_POOL_FLOOR ? keep : GL_Q_POOL_FLOOR);
  s->txbuf = malloc(GL_Q_TX_BYTES);
  s->grouped = cfg->group != NULL;
  s->grp = s->grouped ? gl_qgroup_ref(cfg->group) : gl_qgroup_new();
  s->cfg.group = NULL; /* s->grp is the server's */
  uint64_t hash_key;
  if ((cfg->listen_host && !s->listen_host) || !s->cert_file || !s->key_file ||
      (cfg->client_ca_file && !s->client_ca_file) ||
      (cfg->client_crl_file && !s->client_crl_file) || !s->txbuf ||
      gl_q_random(&hash_key, sizeof hash_key) != 0 ||
      gl_q_cidtab_init(&s->cids, hash_key) != 0 || !s->grp) {
    gl_set_err(err, errlen, "out of memory");
    goto fail;
  }

  if (!(s->cred = gl_qs_cred_load(s->cert_file, s->key_file, s->client_ca_file,
                                  s->client_crl_file, cfg->client_policy, err, errlen)))
    goto fail;
  const char *errpos = NULL;
  int rc = gnutls_priority_init(&s->prio, GL_Q_PRIORITY, &errpos);
  if (rc < 0) {
    s->prio = NULL;
    gl_set_err(err, errlen, "TLS priorities: %s", gnutls_strerror(rc));
    goto fail;
  }
  if (gl_qs_bind(s, err, errlen) != 0) goto fail;

  ev_io_init(&s->rio, srv_on_readable, s->fd, EV_READ);
  s->rio.data = s;
  ev_io_init(&s->wio, srv_on_writable, s->fd, EV_WRITE);
  s->wio.data = s;
  ev_io_start(loop, &s->rio);
  ev_async_init(&s->recheck, gl_qs_recheck_cb);
  s->recheck.data = s;
  ev_async_start(loop, &s->recheck);
  s->recheck_on = true;
  char addr[INET6_ADDRSTRLEN + 8];
  gl_qs_addr_to_str((const struct sockaddr *)&s->bound, addr, sizeof addr);
  GL_INFO("quic: listening on %s (UDP)", addr);
  *out = s;
  return 0;

fail:
  gl_qserver_del(s);
  return -1;
}

void gl_qserver_del(gl_qserver *srv) {
  if (!srv) return;
  gl_qserver *s = srv;
  while (s->conns) {
    qconn *c = s->conns;
    if (c->state == ST_ACTIVE && !c->fresh) {
      static const char reason[] = "server shutting down";
      ngtcp2_ccerr e;
      ngtcp2_ccerr_default(&e);
      ngtcp2_ccerr_set_application_error(&e, GL_Q_APP_SHUTDOWN, (const uint8_t *)reason,
                                         sizeof reason - 1);
      conn_close(c, &e);
    }
    conn_free(c);
  }
  s->dirty_head = s->dirty_tail = NULL;
  if (s->recheck_on) ev_async_stop(s->loop, &s->recheck);
  if (s->udp) {
    ev_io_stop(s->loop, &s->rio);
    ev_io_stop(s->loop, &s->wio);
    gl_udp_del(s->udp);
  }
  gl_q_cidtab_free(&s->cids);
  gl_qgroup_unref(s->grp);
  if (s->prio) gnutls_priority_deinit(s->prio);
  gl_qs_cred_release(s, s->cred);
  pthread_mutex_destroy(&s->cred_mu);
  free(s->listen_host);
  free(s->cert_file);
  free(s->key_file);
  free(s->client_ca_file);
  free(s->client_crl_file);
  free(s->txbuf);
  gl_q_pool_clear(&s->pool);
  free(s);
}

uint16_t gl_qserver_port(const gl_qserver *srv) { return srv ? srv->port : 0; }

size_t gl_qserver_connection_count(const gl_qserver *srv) {
  return srv ? gl_qgroup_connection_count(srv->grp) : 0;
}

size_t gl_qserver_connections_held(const gl_qserver *srv) {
  return srv ? gl_qgroup_held_count(srv->grp) : 0;
}

size_t gl_qserver_retries_sent(const gl_qserver *srv) {
  return srv ? gl_qgroup_retries_sent(srv->grp) : 0;
}

size_t gl_qserver_tokens_refused(const gl_qserver *srv) {
  return srv ? gl_qgroup_tokens_refused(srv->grp) : 0;
}

size_t gl_qserver_connections_from(const gl_qserver *srv, const struct sockaddr *addr) {
  uint8_t ip[16];
  if (!srv || !addr || !gl_q_addr_key(addr, ip)) return 0;
  pthread_mutex_lock(&srv->grp->mu);
  size_t n = gl_q_addrtab_count(&srv->grp->addrs, ip);
  pthread_mutex_unlock(&srv->grp->mu);
  return n;
}

size_t gl_qserver_handshakes_from(const gl_qserver *srv, const struct sockaddr *addr) {
  uint8_t ip[16];
  if (!srv || !addr || !gl_q_addr_key(addr, ip)) return 0;
  pthread_mutex_lock(&srv->grp->mu);
  size_t n = gl_q_addrtab_count(&srv->grp->hs_addrs, ip);
  pthread_mutex_unlock(&srv->grp->mu);
  return n;
}

size_t gl_qserver_handshake_count(const gl_qserver *srv) {
  return srv ? gl_qgroup_handshake_count(srv->grp) : 0;
}

size_t gl_qserver_initials_dropped(const gl_qserver *srv) {
  return srv ? gl_qgroup_initials_dropped(srv->grp) : 0;
}
