/*
 * local.h - the daemon's local socket: gpulease/1 messages over a Unix
 * stream socket on the GPU node itself (docs/protocol.md, "The local
 * socket").
 *
 * It serves clients on the same host, and carries what QUIC cannot: file
 * descriptors (a memfd handed over with SHM_ATTACH, SCM_RIGHTS), so bulk
 * transfers go through shared memory instead of the network stack. Every
 * message is preceded by an 8-byte call tag (u64, big-endian) that the
 * client picks and the daemon echoes, as on the daemon's channel to its
 * workers, so requests are pipelined and answered in any order. A
 * descriptor travels with the first byte of its message's tag; the
 * server queues descriptors per connection and a request takes them in
 * the order they came.
 *
 * Authorisation is the same as over QUIC (each request's lease secret),
 * and the socket's file mode decides who may connect (owner and group by
 * default). The server runs on the daemon's libev loop; the client is
 * blocking, like libgpulease's QUIC client.
 */
#ifndef GL_NET_LOCAL_H
#define GL_NET_LOCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "net/origin.h"

struct ev_loop;

/* ======================================================================
 * Server
 * ==================================================================== */

typedef struct gl_lserver gl_lserver;
/* One request of one connection; owned by the server until
 * gl_lreq_reply() (exactly once). */
typedef struct gl_lreq gl_lreq;

/* Called once per whole request message (msg valid during the call
 * only). The callee calls gl_lreq_reply(req, ...) exactly once, now or
 * later. */
typedef void (*gl_lserver_request_cb)(void *user, gl_lreq *req, const uint8_t *msg, size_t len);
/* Called when a connection closes (its requests still unanswered become
 * orphaned); conn_id as gl_lreq_conn_id() gave it. May be NULL. */
typedef void (*gl_lserver_close_cb)(void *user, uint64_t conn_id);

typedef struct gl_lserver_config {
  const char *path;         /* the socket's path (at most 107 bytes) */
  unsigned mode;            /* its file mode, e.g. 0660 */
  size_t max_message_bytes; /* per request; larger: TOO_LARGE, connection closed */
  size_t max_connections;   /* beyond: refused (closed at once); default 256 */
  gl_lserver_request_cb on_request;
  gl_lserver_close_cb on_close;
  void *user;
  /* The early verdict on a request's 12-byte header, as for QUIC
   * (gl_qserver_header_cb, quic.h; NULL: none; called with user): asked
   * once per request as soon as its header is in. An answer (a whole
   * response message, at most GL_LSERVER_HEADER_REPLY_MAX bytes) is sent
   * at once under the request's tag and its body is skipped as it comes
   * (the connection is closed instead when the header declares more than
   * max_message_bytes); on_request is not called for it. */
  size_t (*on_header)(void *user, const gl_req_origin *from, const uint8_t *hdr, uint8_t *reply,
                      size_t cap, void **ticket);
  /* With on_header: told when a request it let through ends (its whole
   * message delivered, or the connection closed first), as origin.h
   * says; NULL: not told. */
  gl_req_end_cb on_header_end;
} gl_lserver_config;

#define GL_LSERVER_HEADER_REPLY_MAX 2048

/* Creates the socket (replacing a stale one at path), sets its mode and
 * serves on loop. 0, or -1 with err. */
int gl_lserver_new(struct ev_loop *loop, const gl_lserver_config *cfg, gl_lserver **out,
                   char *err, size_t errlen);

/* Closes every connection, removes the socket file, frees srv. Pending
 * requests become orphaned: their gl_lreq_reply() only frees them. */
void gl_lserver_del(gl_lserver *srv);

/* Sends msg (copied) as the answer to req and frees req. 0, or -1 when the
 * connection is gone (req is freed all the same). */
int gl_lreq_reply(gl_lreq *req, const uint8_t *msg, size_t len);

/* True when req's connection has closed. */
bool gl_lreq_orphaned(const gl_lreq *req);

/* The oldest file descriptor the connection sent and no request took yet
 * (the caller owns it), or -1. */
int gl_lreq_take_fd(gl_lreq *req);

/* The connection's id (unique while the daemon runs) and its peer's uid. */
uint64_t gl_lreq_conn_id(const gl_lreq *req);
uid_t gl_lreq_peer_uid(const gl_lreq *req);

/* ---- who is asking (as for QUIC, quic.h) ------------------------------------
 * A connection has no identity until the daemon binds one with
 * gl_lreq_set_identity. A request keeps a copy of its connection's
 * identity from when it arrived; these calls work after the connection
 * closed, as long as req lives. */

#ifndef GL_IDENTITY_MAX
#define GL_IDENTITY_MAX 256 /* bytes of an identity, NUL included (as in quic.h) */
#endif

/* The identity of req's connection as it was when req arrived (or as req
 * set it): "" when none. Owned by req, valid while req is. */
const char *gl_lreq_identity(const gl_lreq *req);

/* Gives req's connection an identity (copied; 1 to GL_IDENTITY_MAX - 1
 * bytes; not looked inside), seen by req from now on and by every request
 * of the connection that arrives after this call. On the server's loop.
 * 0; -1 when the connection already has one, has closed, or identity is
 * NULL, empty or too long. */
int gl_lreq_set_identity(gl_lreq *req, const char *identity);

/* req's peer as text into buf (len bytes, NUL-terminated, truncated when
 * short): "unix:pid=P,uid=U", the process and user that connected
 * (SO_PEERCRED, taken when it connected). */
void gl_lreq_peer(const gl_lreq *req, char *buf, size_t len);

/* ======================================================================
 * Client (blocking)
 * ==================================================================== */

typedef struct gl_lclient gl_lclient;

/* Connects to the socket at path. 0, or -1 with err (errno kept). */
int gl_lclient_connect(const char *path, uint32_t timeout_ms, gl_lclient **out, char *err,
                       size_t errlen);

/* Sends a request (len bytes), with fd (or -1) beside it; *token names it.
 * 0, or -1 with err (the connection is then dead). */
int gl_lclient_send(gl_lclient *c, const uint8_t *req, size_t len, int fd, uint64_t *token,
                    char *err, size_t errlen);

/* Waits for token's answer: *resp is malloc'd (the caller frees it). 0, or
 * -1 with err (timeout: the connection is then dead too, as answers could
 * no longer be matched). Answers to other tokens that come first are kept
 * for their own wait. */
int gl_lclient_wait(gl_lclient *c, uint64_t token, uint8_t **resp, size_t *resp_len, char *err,
                    size_t errlen);

bool gl_lclient_dead(const gl_lclient *c);

void gl_lclient_del(gl_lclient *c);

#endif /* GL_NET_LOCAL_H */
