/*
 * shards.h - the daemon's network threads for striped transfers.
 *
 * One QUIC connection's packets are decrypted and reassembled on one core;
 * a client that wants more bandwidth stripes a large transfer over several
 * connections (NET_INFO lists the ports, docs/protocol.md). Each stripe
 * port is served by a shard: a thread with an event loop and a QUIC server
 * of its own. A shard only moves bytes: every request it receives is handed
 * to the daemon's main loop (an ev_async) with its buffer, and handled there
 * like any other (ops.c); the answer goes back to the shard, which sends
 * it. The daemon's state stays on the main thread.
 *
 * The same threads serve the main port when the daemon runs several
 * control threads (gpuleased --control-threads N, gl_shards_start_shared):
 * N servers share the port (SO_REUSEPORT, net/quic_group.h), so that TLS,
 * QUIC and the requests' decoding of many connections run on N cores,
 * while the leases and sessions stay on the main loop. One connection
 * lives on one thread, whose requests reach the main loop through one
 * queue in the order they were completed, so a connection's ops stay in
 * order.
 */
#ifndef GL_DAEMON_SHARDS_H
#define GL_DAEMON_SHARDS_H

#include <stddef.h>
#include <stdint.h>

#include "net/quic.h"

struct ev_loop;
typedef struct gl_shards gl_shards;
typedef struct gl_shard gl_shard;

/* The most threads one gl_shards runs. */
#define GL_SHARDS_MAX 16

/* Called on the main loop for each request a shard received: msg (len
 * bytes) is valid during the call only. */
typedef void (*gl_shards_request_fn)(void *user, gl_shard *shard, gl_qreq *req,
                                     const uint8_t *msg, size_t len, int err);

/* Starts n (1..GL_SHARDS_MAX) shards serving base (its address,
 * certificate, client CA file and limits; strings are copied) on ports first_port, first_port + 1, ... (0: a
 * free port each). 0, or -1 with err filled (nothing left running). */
int gl_shards_start(struct ev_loop *main, const gl_qserver_config *base, unsigned n,
                    uint16_t first_port, gl_shards_request_fn on_request, void *user,
                    gl_shards **out, char *err, size_t errlen);

/* As gl_shards_start, but the n (1..GL_SHARDS_MAX) servers all serve
 * base->listen_port (0: the free port the first one gets, then
 * gl_shards_port(s, i) is that port for every i) as one group
 * (net/quic_group.h: SO_REUSEPORT; the connection limits, the handshake
 * counts of Retry and the Retry secret are the group's). 0, or -1 with
 * err filled (nothing left running). */
int gl_shards_start_shared(struct ev_loop *main, const gl_qserver_config *base, unsigned n,
                           gl_shards_request_fn on_request, void *user, gl_shards **out,
                           char *err, size_t errlen);

/* Of shards started by gl_shards_start_shared, from any thread: the live
 * connections, the handshakes under way and the Retry packets sent since
 * the start, over all their servers. 0 for NULL or other shards. */
size_t gl_shards_connection_count(const gl_shards *s);
size_t gl_shards_connections_held(const gl_shards *s); /* closing and draining too */
size_t gl_shards_handshake_count(const gl_shards *s);
size_t gl_shards_retries_sent(const gl_shards *s);

/* Main loop: stops and joins the threads, closes their connections;
 * requests not yet handled are dropped, lent reply buffers given back.
 * From then on the gl_shard_reply functions only free the request they
 * are given (and run a lent buffer's release at once), so requests the
 * daemon still holds may be answered until gl_shards_stop. Idempotent;
 * NULL is ignored. */
void gl_shards_close(gl_shards *s);

/* Main loop: gl_shards_close, then frees s; no gl_shard of s may be
 * answered through afterwards. NULL is ignored. */
void gl_shards_stop(gl_shards *s);

/* Main loop: gl_qserver_set_tls on every shard's server (a configuration
 * reload; the client CRL file and policy as gl_qserver_set_tls takes them). 0, or -1 with err at the first that failed (those before it
 * have the new credentials: the caller sets them again, or the old ones
 * back). NULL s: 0. */
int gl_shards_set_tls(gl_shards *s, const char *cert_file, const char *key_file,
                      const char *client_ca_file, const char *client_crl_file,
                      gl_client_policy *client_policy, char *err, size_t errlen);

/* Main loop: gl_qserver_set_limits on every shard's server. */
void gl_shards_set_limits(gl_shards *s, uint32_t max_connections_per_address,
                          uint32_t retry_above_handshakes);

/* The number of shards (threads) of s; 0 for NULL. */
unsigned gl_shards_count(const gl_shards *s);

/* The UDP port shard i serves (every i the same one for shards of
 * gl_shards_start_shared); 0 for NULL, i past the count, or after
 * gl_shards_close. */
uint16_t gl_shards_port(const gl_shards *s, unsigned i);

/* Main loop: answers req (from on_request) through its shard; msg is
 * copied. 0, or -1 out of memory (req is then dropped: the client's
 * request times out). */
int gl_shard_reply(gl_shard *sh, gl_qreq *req, const uint8_t *msg, size_t len);

/* Main loop: as gl_shard_reply, but on the shard's thread first gives
 * req's connection identity (copied; see gl_qreq_set_identity), then
 * replies msg (copied), so that every request the client sends once it has
 * this answer sees the identity. 0 when queued. -1 when the identity is
 * known not to be settable here (NULL, empty, longer than
 * GL_IDENTITY_MAX - 1 bytes, or req's connection had one already when req
 * came: gl_qreq_identity(req) is not ""): msg is still sent, without the
 * identity; or -1 out of memory: req is dropped as with gl_shard_reply.
 * What the shard's thread finds later (the connection gone, or given an
 * identity meanwhile by another request) cannot be returned: it is logged,
 * and msg is sent all the same. */
int gl_shard_reply_identity(gl_shard *sh, gl_qreq *req, const char *identity, const uint8_t *msg,
                            size_t len);

/* Main loop: as gl_shard_reply, msg lent as with gl_qreq_reply_lent;
 * release(ctx) runs later on the main loop. */
int gl_shard_reply_lent(gl_shard *sh, gl_qreq *req, const uint8_t *msg, size_t len,
                        void (*release)(void *ctx), void *ctx);

#endif /* GL_DAEMON_SHARDS_H */
