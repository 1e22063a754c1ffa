/*
 * quic_group.h - QUIC servers that share one UDP port (SO_REUSEPORT).
 *
 * Several gl_qserver, each on a thread and event loop of its own, may
 * serve the same port: each binds its own UDP socket with SO_REUSEPORT and
 * the kernel spreads the datagrams over the sockets by a hash of their
 * 4-tuple (source and destination address and port). A connection's
 * packets therefore reach one socket, and one server, from its first
 * Initial to its end, as long as the client keeps its address and port.
 * A client that migrates (a NAT rebinding, a new path) may hash to
 * another socket, whose server does not know the connection's IDs: it
 * drops those packets (the servers never send stateless resets), and the
 * connection ends at its idle timeout, as one that lost its path.
 *
 * What the servers of a group share, so that one port behaves as one
 * server: the Retry secret (a token from one server verifies on any, e.g.
 * when the sockets of the group change between a Retry and the repeated
 * Initial), the counts that max_connections, max_connections_per_address,
 * retry_above_handshakes and retry_above_address_handshakes are checked
 * against, the counters read for metrics, and the bound port (a group
 * whose first server was given port 0 has the others bind the port it got).
 * The group's first server binds only a port no socket has (probed
 * without SO_REUSEPORT first), so a group never shares its port with
 * another process's SO_REUSEPORT sockets (another daemon of the same
 * user, which the kernel would allow), as a plain server would refuse.
 * Each check and its count are taken under the group's mutex but not as
 * one step, so N servers admitting at once may pass a limit by at most
 * N - 1 connections.
 */
#ifndef GL_NET_QUIC_GROUP_H
#define GL_NET_QUIC_GROUP_H

#include <stddef.h>
#include <stdint.h>

typedef struct gl_qgroup gl_qgroup;

/* A new, empty group holding one reference (the caller's), with a Retry
 * secret of its own. NULL when out of memory or without randomness. */
gl_qgroup *gl_qgroup_new(void);

/* Takes one more reference to g (the servers of the group each hold
 * one). Returns g. Any thread. */
gl_qgroup *gl_qgroup_ref(gl_qgroup *g);

/* Drops a reference; the last frees g. NULL is ignored. Any thread. */
void gl_qgroup_unref(gl_qgroup *g);

/* The group's live connections (those gl_qserver_connection_count
 * counts), handshakes under way, Retry packets sent, Retry tokens
 * refused and Initials dropped, over all its servers, now. 0 for NULL.
 * Any thread. */
size_t gl_qgroup_connection_count(const gl_qgroup *g);
size_t gl_qgroup_handshake_count(const gl_qgroup *g);
size_t gl_qgroup_retries_sent(const gl_qgroup *g);
size_t gl_qgroup_tokens_refused(const gl_qgroup *g);
size_t gl_qgroup_initials_dropped(const gl_qgroup *g);

/* The connections the group's servers hold now: live ones and those in
 * their closing or draining period (each still holding its memory). 0
 * for NULL. Any thread. */
size_t gl_qgroup_held_count(const gl_qgroup *g);

/* The UDP port the group's first server bound; 0 before. Any thread. */
uint16_t gl_qgroup_port(const gl_qgroup *g);

#endif /* GL_NET_QUIC_GROUP_H */
