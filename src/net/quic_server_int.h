/*
 * quic_server_int.h - what quic_server.c (connections, streams, requests,
 * packet I/O) and quic_accept.c (what comes before a connection: the
 * socket, credentials and TLS sessions, client certificates, Retry and
 * refusals) share: the server's records and their functions across the
 * two files. No API promise; gl_qs_ prefix.
 */
#ifndef GL_NET_QUIC_SERVER_INT_H
#define GL_NET_QUIC_SERVER_INT_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <ev.h>
#include <pthread.h>

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include "net/client_policy.h"
#include "net/quic.h"
#include "net/quic_conn.h"
#include "net/quic_group.h"
#include "net/quic_internal.h"
#include "net/tls.h"
#include "net/udp_io.h"

/* recvmmsg slots (64 KiB each). */
#define GL_QS_RX_SLOTS 16

/* Text of a peer address: "[v6 address]:port", NUL included. */
#define PEER_LEN (INET6_ADDRSTRLEN + 8)

_Static_assert(GL_TLS_IDENTITY_MAX == GL_IDENTITY_MAX, "one identity size for tls.h and quic.h");

enum conn_state { ST_ACTIVE, ST_CLOSING, ST_DRAINING, ST_DEAD };

typedef struct qconn qconn;
typedef struct qstream qstream;

struct gl_qreq {
  qstream *st; /* NULL once orphaned */
  bool gone;   /* set (__atomic) when orphaned: gl_qreq_gone from any thread */
  /* Copies from the connection, made when the request was delivered
   * (identity only as far as its NUL). */
  char peer[PEER_LEN];
  char identity[GL_IDENTITY_MAX];
};

/* One client-initiated bidirectional stream. */
struct qstream {
  qconn *c;
  int64_t id;
  qstream *prev, *next;   /* c->streams */
  qstream *rnext;         /* c->ready list (request to deliver) */
  bool in_ready;
  bool counted;  /* opened through stream_open: we re-grant its slot on close */
  /* Request side. */
  uint8_t *rbuf;
  size_t rlen, rcap;
  bool too_large, reset_rx, delivered;
  bool hdr_seen; /* its first 12 bytes went to on_header */
  bool refused;  /* ... which answered (sbuf): deliver stops the reading */
  bool admitted; /* ... which let it through: on_header_end is owed (stream_unadmit) */
  void *ticket;  /*   on_header's ticket for it */
  uint64_t whole; /*  and what its header declared (12 + body_len) */
  gl_qreq *req; /* delivered, not answered yet */
  /* Reply side: sbuf lives until the stream closes (retransmissions). A
   * lent sbuf (srelease set) is given back through srelease, not pooled.
   * out: its bytes on c's send queue (out.refused: the peer sent
   * STOP_SENDING or the stream was reset). */
  uint8_t *sbuf;
  size_t scap;
  void (*srelease)(void *ctx);
  void *sctx;
  gl_q_out out;
};

/* A certificate credential (certificate, key, client CAs) and how many
 * hold it: the server while it is current, and each connection whose TLS
 * session uses it. A reload (gl_qserver_set_tls) installs a new one; the
 * old one is freed when its last connection is. */
typedef struct qcred {
  gnutls_certificate_credentials_t cred; /* with the client CAs' CRLs, if any */
  gl_client_policy *policy; /* held; NULL: every certificate the chain check passes */
  unsigned refs;
} qcred;

struct qconn {
  gl_qserver *srv;
  qcred *cred; /* the credential its TLS session was given, held */
  qconn *prev, *next;       /* srv->conns */
  qconn *dnext;             /* srv->dirty */
  qconn *bnext;             /* srv->blocked (socket full) */
  bool in_dirty, in_blocked;
  enum conn_state state;
  bool fresh; /* no packet accepted yet: errors drop it silently */
  bool in_hs;      /* counted in srv->grp->nhandshaking and hs_addrs under ip */
  bool ip_counted; /* completed: counted in srv->grp->addrs under ip */
  uint8_t ip[16];  /* the peer's IP address (IPv4 as v4-mapped IPv6) */
  ngtcp2_conn *conn;
  gnutls_session_t tls;
  ngtcp2_crypto_conn_ref ref;
  ev_timer timer;
  uint64_t close_deadline_ns;
  uint8_t *close_pkt;
  size_t close_len;
  unsigned close_rx;
  /* Where we last sent (close packets go there). */
  struct sockaddr_storage local, remote;
  socklen_t locallen, remotelen;
  /* Connection IDs registered in srv's table for this connection. */
  ngtcp2_cid *cids;
  size_t ncids, cidcap;
  qstream *streams;
  gl_q_outq sendq; /* streams with reply bytes left to hand to ngtcp2 */
  qstream *ready_head, *ready_tail;
  size_t rx_buffered; /* request bytes held in undelivered stream buffers */
  /* Streams on_header let through whose body is not whole yet, and the
   * sizes their headers declared (gl_req_origin). */
  uint32_t unfinished;
  uint64_t unfinished_bytes;
  uint64_t rx_owed;   /* connection credit not yet returned (budget full) */
  /* Datagrams a full socket refused (malloc'd copies), sent first when it
   * is writable; nothing else is written meanwhile. */
  uint8_t *pend;
  size_t *pend_lens;
  size_t pend_count;
  bool more; /* the last write round stopped at its budget */
  char peer[PEER_LEN];
  size_t peerlen;
  /* From the client certificate (verify_client_cert) or
   * gl_qreq_set_identity; idlen 0: none. */
  char identity[GL_IDENTITY_MAX];
  size_t idlen;
  /* Why the client certificate was refused (verify_client_cert), sent as
   * the reason of the handshake's CONNECTION_CLOSE; "" none. */
  char refusal[128];
};

/* The state a server shares with the other servers of its port
 * (quic_group.h); a server given no group has one of its own. */
struct gl_qgroup {
  pthread_mutex_t mu;    /* addrs, hs_addrs, nhandshaking, nconns, port */
  gl_q_addrtab addrs;    /* completed connections per peer IP address */
  gl_q_addrtab hs_addrs; /* handshakes under way per peer IP address */
  size_t nhandshaking;   /* ACTIVE connections whose handshake is not complete */
  size_t nconns;         /* all allocated, against max_connections (also __atomic) */
  uint16_t port;         /* bound by the first server; 0 before */
  /* Read and written with __atomic builtins (any thread): */
  size_t nactive; /* ACTIVE only */
  size_t retries_sent, tokens_refused, initials_dropped;
  int refs;
  uint8_t retry_secret[GL_Q_RETRY_SECRET_LEN]; /* set once, at gl_qgroup_new */
};

struct gl_qserver {
  struct ev_loop *loop;
  gl_qserver_config cfg; /* strings point to the copies below */
  char *listen_host, *cert_file, *key_file, *client_ca_file, *client_crl_file;
  gl_udp *udp;
  int fd; /* udp's, for the watchers */
  struct sockaddr_storage bound;
  socklen_t boundlen;
  uint16_t port;
  size_t max_udp; /* largest UDP payload we send */
  ev_io rio, wio;
  qcred *cred;            /* current; new connections take a reference */
  pthread_mutex_t cred_mu; /* cred and its counts: gl_qserver_set_tls comes from any thread */
  gnutls_priority_t prio;
  ev_async recheck; /* gl_qserver_set_tls: check the open connections' certificates again */
  bool recheck_on;
  qconn *conns;
  gl_qgroup *grp;  /* its port's shared counts (one reference) */
  bool grouped;    /* grp was given (cfg.group): SO_REUSEPORT */
  size_t nconns;   /* all allocated by this server */
  size_t rx_budget; /* per connection, see the top of the file */
  uint64_t last_refusal_log_ns;
  uint64_t last_addr_refusal_log_ns, last_retry_log_ns, last_token_log_ns;
  qconn *dirty_head, *dirty_tail;
  qconn *blocked_head;
  bool in_batch;
  gl_q_cidtab cids; /* every SCID issued, and each client's original DCID */
  /* One write round of one connection: packets back to back, and their
   * lengths. */
  uint8_t *txbuf;
  size_t txlens[GL_Q_TX_PKTS];
  /* Request and reply buffers kept for reuse while connections are open
   * (emptied when the last one goes). */
  gl_q_pool pool;
};

/* ---- quic_server.c ------------------------------------------------------- */

/* Sends one datagram from local (the source address, so a wildcard-bound
 * server answers from the address the client used; NULL: any) to remote.
 * Best effort: a full socket drops it. */
void gl_qs_send_one(gl_qserver *s, const struct sockaddr *local, const struct sockaddr *remote,
                    socklen_t remotelen, const uint8_t *pkt, size_t len);

/* Closes c (an established connection) with application error code and
 * reason (NUL-terminated, at most 128 bytes sent), logged. */
void gl_qs_conn_close_app(qconn *c, uint64_t code, const char *reason);

/* ---- quic_clients.c ------------------------------------------------------ */

/* Whether the client certificate chain of c's TLS session still passes
 * what a new handshake on cred would check: the chain against cred's
 * client CAs and CRLs (dates too), and cred's policy for c's identity. 0
 * (also when c presented none); -1 with the reason in why. */
int gl_qs_client_still_ok(qconn *c, const qcred *cred, char *why, size_t whylen);

/* The server's recheck watcher (s->recheck, on s's loop): every
 * established connection with a client certificate is checked with
 * gl_qs_client_still_ok on the current credential; those that fail are
 * closed (GL_Q_APP_REVOKED, the reason logged and sent). */
void gl_qs_recheck_cb(struct ev_loop *loop, ev_async *w, int revents);

/* The words for a refusal of a chain check's GnuTLS status (revoked,
 * expired, not trusted...) into buf. */
void gl_qs_status_text(unsigned status, char *buf, size_t len);

/* ---- quic_accept.c ------------------------------------------------------- */

/* sa as "192.0.2.7:40123" or "[2001:db8::1]:40123" (v4-mapped as IPv4). */
void gl_qs_addr_to_str(const struct sockaddr *sa, char *buf, size_t len);

/* Binds s's UDP socket (cfg.listen_host, listen_port). 0, or -1 with err. */
int gl_qs_bind(gl_qserver *s, char *err, size_t errlen);

/* Loads a certificate chain and key, and the client CAs when ca_file is
 * not NULL (with crl_file's CRLs, PEM or DER, when it is not NULL; each
 * must be signed by one of the CAs), into a new credential holding one
 * reference, and a reference to policy (may be NULL). NULL with err. */
qcred *gl_qs_cred_load(const char *cert_file, const char *key_file, const char *ca_file,
                       const char *crl_file, gl_client_policy *policy, char *err,
                       size_t errlen);

/* Drops a reference to q (NULL ignored); the last frees it. */
void gl_qs_cred_release(gl_qserver *s, qcred *q);

/* Sets up c's TLS session (server side, ALPN, client certificates when
 * asked for) on the current credential. 0 or -1. */
int gl_qs_conn_tls_init(qconn *c);

/* True at most once a second per *last: for log lines about floods. */
bool gl_qs_log_due(uint64_t *last, uint64_t now);

/* Answers the Initial hd without a connection: CONNECTION_CLOSE with a
 * transport error code (CONNECTION_REFUSED, INVALID_TOKEN) and reason. */
void gl_qs_send_stateless_close(gl_qserver *s, const ngtcp2_pkt_hd *hd,
                                const struct sockaddr *local, const struct sockaddr *remote,
                                socklen_t remotelen, uint64_t code, const char *reason);

/* Answers the Initial hd (no token) from remote with a Retry. */
void gl_qs_send_retry(gl_qserver *s, const ngtcp2_pkt_hd *hd, const struct sockaddr *local,
                      const struct sockaddr *remote, socklen_t remotelen, uint64_t now);

/* Whether a new connection must first prove its address (Retry). */
bool gl_qs_retry_needed(const gl_qserver *s);

/* The admission of a client's first Initial hd (from remote, parsed by
 * ngtcp2_accept) before any state is kept for it; see the top of
 * quic_accept.c for the rules. Returns true when a connection may be made
 * for it: then *validated says whether it brought a valid Retry token
 * (and *odcid is the original DCID the token names) and ip holds the
 * peer's address key (gl_q_addr_key). False when it was answered (Retry,
 * CONNECTION_CLOSE) or dropped; nothing to do then. Counts retries_sent
 * and tokens_refused, logs at most once a second per kind. */
bool gl_qs_admit(gl_qserver *s, const ngtcp2_pkt_hd *hd, const struct sockaddr *local,
                 const struct sockaddr *remote, socklen_t remotelen, uint64_t now,
                 const char *peer, bool *validated, ngtcp2_cid *odcid, uint8_t ip[16]);

/* Counts the new connection c (its ip set) as a handshake under way, in
 * total and for its address. 0, or -1 when out of memory (nothing
 * counted). */
int gl_qs_hs_begin(qconn *c);

/* c's handshake is over (completed when completed is true; else c failed
 * or left): it stops counting as a handshake under way; completed, it
 * counts among its address's connections (max_connections_per_address)
 * until gl_qs_addr_release. Idempotent. */
void gl_qs_hs_end(qconn *c, bool completed);

/* Stops counting c under its address (c is being freed). */
void gl_qs_addr_release(qconn *c);

/* Answers a packet of another QUIC version with Version Negotiation. */
void gl_qs_send_version_negotiation(gl_qserver *s, const ngtcp2_version_cid *vc,
                                    const struct sockaddr *local, const struct sockaddr *remote,
                                    socklen_t remotelen);

#endif /* GL_NET_QUIC_SERVER_INT_H */
