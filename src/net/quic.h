/*
 * quic.h - QUIC transport (ngtcp2 + GnuTLS, TLS 1.3) for gpulease.
 *
 * The transport moves opaque messages: one request and one response per
 * client-initiated bidirectional stream. It knows nothing of the gpulease
 * frame format beyond a per-stream size limit; the codec lives in
 * src/proto/. The server runs on a libev loop (the daemon's); the client is
 * blocking and owns its own poll() loop (no event-loop dependency in
 * libgpulease).
 *
 * ALPN is always "gpulease/1" (GL_WIRE_ALPN). Needs ngtcp2 1.x (on Debian 12
 * from bookworm-backports, see scripts/deps.sh).
 */
#ifndef GL_NET_QUIC_H
#define GL_NET_QUIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/client_policy.h"
#include "net/origin.h"

struct ev_loop;
struct sockaddr;

/* ======================================================================
 * Server
 * ==================================================================== */

typedef struct gl_qserver gl_qserver;
/* One request: one stream of one connection. Owned by the server until
 * gl_qreq_reply() (exactly once per request) is called. */
typedef struct gl_qreq gl_qreq;

enum gl_qreq_err {
  GL_QREQ_OK = 0,
  /* The client sent more than max_message_bytes on the stream. msg holds
   * the first bytes received (at least the 12-byte header when that many
   * arrived); the rest of the stream's input is discarded (STOP_SENDING). */
  GL_QREQ_TOO_LARGE = 1,
};

/* Called once per request stream when the client finished it (FIN), or
 * when it grew past the limit, unless on_header answered it already
 * (below). msg is valid only during the callback.
 * The callee must eventually call gl_qreq_reply(req, ...) exactly once,
 * now or later (e.g. after a worker answered). */
typedef void (*gl_qserver_request_cb)(void *user, gl_qreq *req, const uint8_t *msg,
                                      size_t len, int err /* enum gl_qreq_err */);

/* As gl_qserver_request_cb, but msg (from malloc, cap bytes; NULL for an
 * empty request) becomes the callee's: free() it, or give it back for reuse
 * with gl_qserver_recycle() on the server's thread. Lets another thread
 * handle the request without copying it. */
typedef void (*gl_qserver_request_take_cb)(void *user, gl_qreq *req, uint8_t *msg, size_t len,
                                           size_t cap, int err /* enum gl_qreq_err */);

/* Most bytes of an answer given on a request's header (below). */
#define GL_QSERVER_HEADER_REPLY_MAX 2048

/* The owner's early verdict on a request, called on the server's thread
 * once a request stream's first 12 bytes (its gpulease/1 header, hdr) have
 * arrived, before the rest of the stream is read (nothing past the header
 * is buffered before the verdict), exactly once per stream that gets that
 * far; from says whose connection it is and what it has unfinished.
 * Return 0 to read on (on_request follows as usual; *ticket, NULL
 * before the call, may be set: on_header_end gets it back once the
 * request's body is whole or never will be);
 * or write a whole response message of at most cap
 * (GL_QSERVER_HEADER_REPLY_MAX) bytes into reply and return its length:
 * the request is refused on its header. The transport then stops reading
 * the stream (STOP_SENDING, code 0x101 when the header declares a message
 * over max_message_bytes, header included, else 0x104; what arrives is
 * discarded), sends reply with FIN, and
 * never calls on_request for it. Runs while the server reads packets: it
 * must only compute its answer (no call into the server). */
typedef size_t (*gl_qserver_header_cb)(void *header_user, const gl_req_origin *from,
                                       const uint8_t *hdr, uint8_t *reply, size_t cap,
                                       void **ticket);

typedef struct gl_qserver_config {
  const char *listen_host;   /* "0.0.0.0", "::", "127.0.0.1" ... */
  uint16_t listen_port;      /* 0 = pick a free port (see gl_qserver_port) */
  const char *cert_file;     /* PEM certificate chain */
  const char *key_file;      /* PEM private key */
  /* PEM file of one or more CA certificates, or NULL. When set, every
   * client must present a certificate (mutual TLS) that chains to one of
   * them, is within its validity dates and allows TLS client
   * authentication (when it limits its extended key usage); the handshake
   * fails otherwise (the client's connect: GL_QC_TLS). The certificate
   * also names the connection (gl_qreq_identity), else it is refused too.
   * NULL: no client certificate is asked for; connections have no
   * identity until gl_qreq_set_identity gives them one. */
  const char *client_ca_file;
  /* With client_ca_file: a file of CRLs (PEM or DER; NULL: none) that
   * client certificates are checked against in the handshake, each CRL
   * signed by one of the client CAs (else the server is not made). */
  const char *client_crl_file;
  /* With client_ca_file: the deny list and the identities admitted
   * (client_policy.h; NULL: all that pass the chain check). The server
   * takes a reference. */
  gl_client_policy *client_policy;
  size_t max_message_bytes;  /* per request stream */
  uint32_t idle_timeout_ms;  /* connection idle timeout (default 60000) */
  size_t max_connections;    /* beyond: new connections refused (default 1024) */
  uint32_t max_streams_per_conn; /* concurrent bidi streams (default 256) */
  gl_qserver_request_cb on_request;
  gl_qserver_request_take_cb on_request_take; /* instead of on_request when set */
  void *user;
  /* The verdict on each request's header (NULL: none), with its own user
   * pointer, so a server made from another's configuration with another
   * user (the daemon's network threads) keeps it. */
  gl_qserver_header_cb on_header;
  void *header_user;
  /* With on_header: told (header_user, ticket, whole) when each request
   * on_header let through ends, as origin.h says; NULL: not told. */
  gl_req_end_cb on_header_end;
  /* UDP I/O (see udp_io.h); 0 / false: the default. */
  size_t max_udp_payload_bytes; /* largest UDP payload sent (1200 to 65527; default
                                   65488: 64 KiB datagrams where the path carries
                                   them). Path MTU discovery probes it, then 8952
                                   and 1452; a connection within this host uses the
                                   smaller of both ends' limits from the start */
  size_t socket_buffer_bytes;   /* SO_SNDBUF and SO_RCVBUF (default 32 MiB; past
                                   net.core.[rw]mem_max only with CAP_NET_ADMIN) */
  bool no_gso;                  /* never send with UDP GSO (sendmmsg only) */
  /* ---- overload and abuse protection ----------------------------------
   * Address validation (RFC 9000 8.1.2): while retry_above_handshakes or
   * more connections are in their handshake (one more would exceed it),
   * a client's first Initial packet is answered with a Retry that
   * carries a token (sealed with a random per-server secret, bound to the
   * client's address and port, valid for 10 s); the client repeats its
   * Initial with the token, which proves it receives at its address, and
   * only then gets a connection. An Initial with a Retry token that does
   * not verify (forged, from another address or port, expired, from an
   * earlier server) is refused with CONNECTION_CLOSE INVALID_TOKEN, at
   * any load; tokens of other kinds (never ours) count as none. 0: the
   * default, 64; UINT32_MAX: never send Retry (tokens are still checked).
   * E.g. 1: Retry as soon as one handshake is under way. */
  uint32_t retry_above_handshakes;
  /* The same for the handshakes from one IP address (counted as
   * max_connections_per_address counts addresses): while this many from
   * the client's address are under way, its first Initial gets a Retry
   * (with Retry off, retry_above_handshakes UINT32_MAX: it is dropped). A
   * client that brings a valid Retry token is admitted whatever the
   * number of handshakes under way (up to max_connections and
   * max_connections_per_address), so Initials that never finish, from
   * one address behind a NAT or from many, lock nobody out. 0: the
   * default, 8. */
  uint32_t retry_above_address_handshakes;
  /* Answer every Initial without a valid token with a Retry, whatever the
   * load (tests; or a server that always wants validated addresses, at
   * the cost of one more round trip per connection). */
  bool always_retry;
  /* Most completed connections one IP address (the port does not count;
   * an IPv4-mapped IPv6 address is its IPv4 address) may hold at once,
   * counted from the end of the handshake until the connection is freed
   * (after its closing or draining period, 3 PTO, when it closes); those
   * still in their handshake do not count (see
   * retry_above_address_handshakes for them). A new one
   * beyond it is refused as beyond max_connections is: CONNECTION_CLOSE
   * with CONNECTION_REFUSED, and the client's connect fails with
   * GL_QC_UNREACHABLE: "<host>:<port> refused the connection (transport
   * error 0x2 (CONNECTION_REFUSED): too many connections from this
   * address)". 0: the default, 64. */
  uint32_t max_connections_per_address;
  /* A connection whose handshake has not completed this long (ms) after
   * its first packet is dropped silently, and stops counting as a
   * handshake under way. 0: the default, 5000; at most idle_timeout_ms. */
  uint32_t handshake_timeout_ms;
  /* The servers this one shares its port with (quic_group.h; the server
   * takes a reference): it binds with SO_REUSEPORT (listen_port 0: the
   * port the group's first server got, or a free one for the first), and
   * the limits above count the whole group's connections and handshakes,
   * as do the counts below. NULL: a server alone on its port. */
  struct gl_qgroup *group;
} gl_qserver_config;

/* Binds a UDP socket and starts serving on loop. cfg is copied (strings
 * too). Returns 0, or -1 with a reason in err (also when client_ca_file
 * cannot be read or holds no certificate). */
int gl_qserver_new(struct ev_loop *loop, const gl_qserver_config *cfg, gl_qserver **out,
                   char *err, size_t errlen);

/* Closes every connection (CONNECTION_CLOSE) and frees the server. Pending
 * gl_qreq objects become "orphaned": a later gl_qreq_reply() on them just
 * frees them. */
void gl_qserver_del(gl_qserver *srv);

/* Loads a new certificate chain and key (and client CAs: given exactly
 * when the server was made with client_ca_file, since whether clients
 * must present a certificate cannot change; with them the CRL file
 * client_crl_file, NULL for none, and the client policy, NULL for none,
 * of which the server takes a reference) and makes them the ones new
 * connections get; connections already open keep their server
 * certificate. With client CAs, every open connection's client
 * certificate is then checked again on the server's own loop as a new
 * handshake would check it (chain, dates, CRL, policy), and each one that
 * fails is closed with application error 0x105 and the reason, logged.
 * Safe from any thread. 0, or -1 with err (a file that cannot be read or
 * holds no certificate or CRL, a CRL no client CA signed): the server
 * keeps the credentials it had. */
int gl_qserver_set_tls(gl_qserver *srv, const char *cert_file, const char *key_file,
                       const char *client_ca_file, const char *client_crl_file,
                       gl_client_policy *client_policy, char *err, size_t errlen);

/* Changes max_connections_per_address and retry_above_handshakes (0: the
 * defaults, as in gl_qserver_config) for the connections that come next.
 * Safe from any thread. (retry_above_address_handshakes and
 * handshake_timeout_ms stay as the server was made.) */
void gl_qserver_set_limits(gl_qserver *srv, uint32_t max_connections_per_address,
                           uint32_t retry_above_handshakes);

/* The UDP port actually bound. */
uint16_t gl_qserver_port(const gl_qserver *srv);

/* Number of live connections (for metrics and tests); of the whole group
 * when the server has one (then from any thread). */
size_t gl_qserver_connection_count(const gl_qserver *srv);

/* Number of connections the server holds: live ones and those in their
 * closing or draining period, whose memory is freed at its end (of the
 * whole group with one; any thread). */
size_t gl_qserver_connections_held(const gl_qserver *srv);

/* Number of Retry packets sent since the server started (address
 * validation, see retry_above_handshakes). For metrics and tests; of the
 * whole group with one; any thread. */
size_t gl_qserver_retries_sent(const gl_qserver *srv);

/* Number of Initial packets refused since the server started because
 * their Retry token did not verify (forged, replayed from another
 * address, expired). For metrics and tests; of the whole group with one;
 * any thread. */
size_t gl_qserver_tokens_refused(const gl_qserver *srv);

/* Number of completed connections the server holds for the IP address of
 * addr (AF_INET or AF_INET6; its port is ignored), as counted against
 * max_connections_per_address: connections closing or draining count
 * until they are freed; those in their handshake do not. 0 for NULL or
 * another family. Of the whole group with one; any thread. */
size_t gl_qserver_connections_from(const gl_qserver *srv, const struct sockaddr *addr);

/* Number of handshakes under way from the IP address of addr (as
 * gl_qserver_connections_from counts addresses), as counted against
 * retry_above_address_handshakes. 0 for NULL or another family. Of the
 * whole group with one; any thread. */
size_t gl_qserver_handshakes_from(const gl_qserver *srv, const struct sockaddr *addr);

/* Number of connections in their handshake (as counted against
 * retry_above_handshakes). For metrics and tests; of the whole group
 * with one; any thread. */
size_t gl_qserver_handshake_count(const gl_qserver *srv);

/* Number of first Initials dropped without an answer because Retry is
 * off and retry_above_address_handshakes handshakes from their address
 * were under way. For metrics and tests; of the whole group with one;
 * any thread. */
size_t gl_qserver_initials_dropped(const gl_qserver *srv);

/* Sends msg (copied) as the response on req's stream, then FIN, and frees
 * req. If the connection or stream is gone, only frees req. Returns 0, or -1
 * if the reply could not be queued (req is freed all the same). */
int gl_qreq_reply(gl_qreq *req, const uint8_t *msg, size_t len);

/* Keeps buf (from on_request_take) among the server's warm buffers. */
void gl_qserver_recycle(gl_qserver *srv, uint8_t *buf, size_t cap);

/* As gl_qreq_reply, but takes msg (from malloc, len bytes at least; NULL
 * for an empty reply) instead of copying it: it belongs to the server from
 * the call on, even when the reply cannot be queued (-1), and is freed or
 * reused once the stream no longer needs it. Saves a copy of large
 * replies. */
int gl_qreq_reply_take(gl_qreq *req, uint8_t *msg, size_t len);

/* As gl_qreq_reply, but msg is lent, not copied: the server reads it until
 * the stream no longer needs it (every byte acknowledged, or the stream
 * reset), then calls release(ctx) once. Also when the reply cannot be
 * queued (-1): release has then run before the call returns. For large
 * replies that live in memory the caller manages (a shared-memory slot). */
int gl_qreq_reply_lent(gl_qreq *req, const uint8_t *msg, size_t len, void (*release)(void *ctx),
                       void *ctx);

/* True when the connection of req has closed (the reply would be dropped).
 * Lets the daemon skip work for vanished clients. */
bool gl_qreq_orphaned(const gl_qreq *req);

/* As gl_qreq_orphaned, from any thread (a request handed to another
 * thread while its server's thread runs): true once the server knows req's
 * connection or stream is gone. The answer may lag the server's by the
 * time the flag takes to be seen; req must not have been answered. */
bool gl_qreq_gone(const gl_qreq *req);

/* ---- who is asking ---------------------------------------------------------
 * A connection's identity is the tenant it speaks for: the first URI
 * subjectAltName of its client certificate (e.g.
 * "spiffe://example.org/ns/ml/sa/alice"), else the certificate's subject
 * CN, when the server has client_ca_file; or a name the daemon binds to it
 * later with gl_qreq_set_identity (after a bearer token, say). A request
 * keeps a copy of its connection's identity and peer address from when it
 * arrived, so these calls never touch the connection: they work after it
 * closed, and on any thread that owns req. */

#define GL_IDENTITY_MAX 256 /* bytes of an identity, NUL included */

/* The identity of req's connection: its client certificate's (see
 * client_ca_file) or the one given with gl_qreq_set_identity; "" when it
 * has none. Printable text of at most GL_IDENTITY_MAX - 1 bytes; owned by
 * req, valid while req is. */
const char *gl_qreq_identity(const gl_qreq *req);

/* req's connection's peer address as text, as it was when req arrived:
 * "192.0.2.7:40123" or "[2001:db8::1]:40123" (an IPv4-mapped address is
 * shown as IPv4). Written to buf (len bytes, NUL-terminated, truncated
 * when short; 64 bytes always suffice). */
void gl_qreq_peer(const gl_qreq *req, char *buf, size_t len);

/* Gives req's connection an identity (copied; 1 to GL_IDENTITY_MAX - 1
 * bytes; the transport does not look inside it), seen by req itself from
 * now on and by every request of the connection that arrives after this
 * call (requests delivered earlier keep the identity they came with).
 * Only on the server's own thread. 0; -1 when the connection already has
 * one (from its certificate or an earlier call), when it is gone (closed,
 * or req's stream reset), or identity is NULL, empty or too long. */
int gl_qreq_set_identity(gl_qreq *req, const char *identity);

/* ======================================================================
 * Client (blocking)
 * ==================================================================== */

typedef struct gl_qclient gl_qclient;

enum gl_qclient_err {
  GL_QC_OK = 0,
  GL_QC_INVALID = -1,      /* bad address or options */
  GL_QC_UNREACHABLE = -2,  /* resolve/connect/handshake timeout, conn lost */
  GL_QC_TLS = -3,          /* handshake failed or certificate not verified */
  GL_QC_TIMEOUT = -4,      /* no complete response within timeout */
  GL_QC_NOMEM = -5,
  GL_QC_TOO_LARGE = -6,    /* response bigger than max_response_bytes */
};

typedef struct gl_qclient_config {
  const char *host;        /* name or address literal (no brackets) */
  uint16_t port;
  const char *ca_file;     /* verify chain + hostname against this CA file */
  const char *pin_sha256;  /* or: 64 hex digits (colons allowed) of the
                              SHA-256 of the server's DER certificate */
  bool insecure;           /* or: no verification at all */
  /* Our own certificate (PEM chain) and its key (PEM), presented when the
   * server asks for one (mutual TLS, see client_ca_file): both or neither
   * (one alone: GL_QC_INVALID). A file that cannot be read or parsed:
   * GL_QC_INVALID naming it. */
  const char *cert_file;
  const char *key_file;
  uint32_t timeout_ms;     /* handshake and per-request timeout */
  size_t max_response_bytes;
  /* UDP I/O, as in gl_qserver_config; 0 / false: the default. The client
   * also stays within its route's MTU and tells the server its limit
   * (max_udp_payload_size). */
  size_t max_udp_payload_bytes;
  size_t socket_buffer_bytes;
  bool no_gso;
} gl_qclient_config;

/* Resolves host, opens a UDP socket and completes the QUIC/TLS handshake.
 * With none of ca_file/pin_sha256/insecure the system trust store is used.
 * When the server asks for a client certificate, connect also waits for
 * the server's verdict on it (HANDSHAKE_DONE, one more round trip), so a
 * certificate the server refuses (or none) fails here, with GL_QC_TLS.
 * Returns GL_QC_OK or a negative gl_qclient_err with a reason in err. */
int gl_qclient_connect(const gl_qclient_config *cfg, gl_qclient **out, char *err,
                       size_t errlen);

/* Sends req (len bytes) on a new bidi stream with FIN and blocks until the
 * whole response arrived (FIN). *resp is malloc'd (caller frees).
 * Returns GL_QC_OK or a negative gl_qclient_err with a reason in err. */
int gl_qclient_request(gl_qclient *c, const uint8_t *req, size_t len, uint8_t **resp,
                       size_t *resp_len, char *err, size_t errlen);

/* ---- pipelined requests ----------------------------------------------------
 * Many requests may be outstanding on one connection: send each with
 * gl_qclient_send (it returns once the request has its stream and its
 * bytes are queued; at the server's stream limit it first drives the
 * connection until a stream frees up), then collect each response, in any
 * order, with gl_qclient_wait. gl_qclient_request is send + wait. A token
 * is spent by the wait or cancel that ends it; waiting on an unknown or
 * spent token is GL_QC_INVALID. */

/* Sends req (len bytes, copied) on a new bidi stream with FIN. *token
 * (never 0) names the request. GL_QC_OK, or GL_QC_TIMEOUT (no stream within
 * the timeout), GL_QC_NOMEM, or the connection's error. */
int gl_qclient_send(gl_qclient *c, const uint8_t *req, size_t len, uint64_t *token, char *err,
                    size_t errlen);

/* As gl_qclient_send, but the stream stays open after req: no FIN follows,
 * so the server sees an unfinished request (its verdict on a header, in
 * tests). Waited for and cancelled as any request; a server that answers
 * completes it. */
int gl_qclient_send_open(gl_qclient *c, const uint8_t *req, size_t len, uint64_t *token,
                         char *err, size_t errlen);

/* As gl_qclient_send, but takes req (from malloc, len bytes at least)
 * instead of copying it: it belongs to c from the call on, failures too,
 * and is freed or reused once the stream no longer needs it. Saves a copy
 * of large requests. */
int gl_qclient_send_take(gl_qclient *c, uint8_t *req, size_t len, uint64_t *token, char *err,
                         size_t errlen);

/* A buffer of at least len bytes (*cap receives its size) from the
 * connection's pool of warm buffers, to build a large request in and hand
 * over with gl_qclient_send_take (or free). Saves gl_qclient_send's copy
 * without the page faults of fresh memory. NULL when out of memory. */
uint8_t *gl_qclient_buf(gl_qclient *c, size_t len, size_t *cap);

/* Drives the connection until the response of token is complete (or the
 * timeout, counted from this call, passes: the request is then abandoned,
 * GL_QC_TIMEOUT) and hands it over: *resp is malloc'd (caller frees).
 * Responses of other outstanding requests that arrive meanwhile are kept
 * for their own wait. */
/* How long a wait for a response watches the socket before it sleeps
 * (nanoseconds; 0: the default, 60 us). A caller that waits for the GPU
 * (SYNC) watches longer, as cuStreamSynchronize spins by default. */
void gl_qclient_set_spin(gl_qclient *c, uint64_t ns);

/* Makes the connection's current or next wait (from any thread) end at
 * once, within about 50 ms, as if the connection were lost
 * (GL_QC_UNREACHABLE, "the wait was aborted"); the connection is dead
 * from then on. NULL is ignored. The one call of gl_qclient that another
 * thread may make while a wait runs. */
void gl_qclient_abort(gl_qclient *c);

int gl_qclient_wait(gl_qclient *c, uint64_t token, uint8_t **resp, size_t *resp_len, char *err,
                    size_t errlen);

/* Optional, instead of free(resp): hands a response (from
 * gl_qclient_wait or gl_qclient_request, resp_len as returned) back to c,
 * which reuses the memory for later requests and responses. Memory fresh
 * from the kernel costs page faults on first touch, slower than loopback
 * QUIC on some machines; the client keeps at most max_response_bytes (64
 * MiB at least) in 8 buffers of 1 MiB or more and frees them in
 * gl_qclient_del. NULL resp ignored; a NULL c just frees resp. */
void gl_qclient_release(gl_qclient *c, uint8_t *resp, size_t resp_len);

/* Abandons an outstanding request (RESET_STREAM + STOP_SENDING with
 * 0x102); its response, if any, is dropped. Unknown tokens are ignored. */
void gl_qclient_cancel(gl_qclient *c, uint64_t token);

/* Number of requests sent and not yet waited for or cancelled. */
size_t gl_qclient_outstanding(const gl_qclient *c);

/* True once the connection has died (peer closed, idle timeout, TLS or
 * socket error): every later call fails. */
bool gl_qclient_dead(const gl_qclient *c);

/* Closes the connection (CONNECTION_CLOSE) and frees c. NULL ignored. */
void gl_qclient_del(gl_qclient *c);

#endif /* GL_NET_QUIC_H */
