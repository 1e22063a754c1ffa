/*
 * dreq.h - one request to the daemon, whichever transport brought it: a
 * QUIC stream (src/net/quic.h) or the local socket (src/net/local.h). The
 * request handlers (ops.c) answer through it and need not know which.
 */
#ifndef GL_DAEMON_DREQ_H
#define GL_DAEMON_DREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth/audit.h"
#include "daemon/shards.h"
#include "net/local.h"
#include "net/quic.h"

typedef struct gl_dreq gl_dreq;

/* Wraps a transport's request (owned from here on). NULL when out of
 * memory (the transport's request is then answered INTERNAL). */
gl_dreq *gl_dreq_quic(gl_qreq *q);
gl_dreq *gl_dreq_local(gl_lreq *l);
/* A QUIC request that came through a network thread (shards.h): answered
 * through it. It never counts as orphaned (the stream is the shard's). */
gl_dreq *gl_dreq_shard(gl_shard *sh, gl_qreq *q);

/* Sends msg (copied) as the answer, and frees r. 0, or -1 when the client
 * is gone (r is freed all the same). */
int gl_dreq_reply(gl_dreq *r, const uint8_t *msg, size_t len);

/* As gl_dreq_reply, but msg is lent (QUIC: sent from where it is, see
 * gl_qreq_reply_lent; the local socket copies it): release(ctx) runs once
 * when it is no longer needed, at the latest when the stream closes. */
int gl_dreq_reply_lent(gl_dreq *r, const uint8_t *msg, size_t len, void (*release)(void *ctx),
                       void *ctx);

/* Binds identity (copied; 1 to GL_IDENTITY_MAX - 1 bytes) to the
 * connection r came on, whichever transport: gl_qreq_set_identity on the
 * main QUIC server, gl_shard_reply_identity through a network thread,
 * gl_lreq_set_identity on the local socket; then answers msg (copied)
 * exactly as gl_dreq_reply does, so the client's later requests see the
 * identity. r is freed. 0; -1 when the identity could not be set (the
 * connection has one already, is gone, or identity is empty or too long;
 * msg is still sent when the client is there) or the answer could not be
 * sent. Through a network thread a conflict found later on that thread is
 * only logged (see gl_shard_reply_identity). */
int gl_dreq_reply_identity(gl_dreq *r, const char *identity, const uint8_t *msg, size_t len);

/* The identity of r's connection (gl_qreq_identity, gl_lreq_identity): ""
 * when it has none. Owned by r; valid until r is answered. */
const char *gl_dreq_identity(const gl_dreq *r);

/* r's peer as text into buf (len bytes, NUL-terminated, truncated when
 * short; 64 bytes suffice): "192.0.2.7:40123", "[2001:db8::1]:40123", or
 * for the local socket "unix:pid=P,uid=U". */
void gl_dreq_peer(const gl_dreq *r, char *buf, size_t len);

/* Records r's answer in audit log a when it is sent: op (the request's),
 * lease_id (0: none; a LEASE_ALLOC's granted id is read from its answer),
 * the caller's tenant and peer, the status and, for a refusal, the
 * message. always: every answer; else only the refusals. May be called
 * again (the last call counts). */
void gl_dreq_audit(gl_dreq *r, gl_audit *a, uint16_t op, uint64_t lease_id, bool always);

/* Counts r in *counter until it is answered: increments it now and
 * decrements it when the answer leaves (any gl_dreq_reply*). The counter
 * must outlive r. */
void gl_dreq_hold(gl_dreq *r, uint32_t *counter);

/* Told of an answer: the request's op and bytes, the answer (msg, len:
 * a whole response message) and the seconds since gl_dreq_meter. */
typedef void (*gl_dreq_meter_fn)(void *user, uint16_t op, const uint8_t *msg, size_t len,
                                 uint64_t in_bytes, double seconds);

/* Calls fn(user, ...) when r is answered (any gl_dreq_reply*), once. */
void gl_dreq_meter(gl_dreq *r, gl_dreq_meter_fn fn, void *user, uint16_t op, size_t in_bytes);

/* True when the client has gone (the answer would be dropped). */
bool gl_dreq_orphaned(const gl_dreq *r);

/* True for a request that came over the local socket. */
bool gl_dreq_is_local(const gl_dreq *r);

/* Local socket: the next file descriptor its connection sent (owned by
 * the caller), or -1 (always for QUIC). */
int gl_dreq_take_fd(gl_dreq *r);

/* Local socket: its connection's id; 0 for QUIC. */
uint64_t gl_dreq_conn(const gl_dreq *r);

#endif /* GL_DAEMON_DREQ_H */
