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
