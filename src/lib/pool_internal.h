/*
 * pool_internal.h - the client pool's shared state (pool.c: nodes, their
 * sources and health; pool_map.c: the fan-out engine).
 *
 * Nodes are heap objects that live as long as the pool: a node dropped by
 * an SRV re-resolution is marked removed (a map's threads may still point
 * at it) and kept until the pool closes.
 */
#ifndef GL_LIB_POOL_INTERNAL_H
#define GL_LIB_POOL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gpulease/gpulease.h"

/* A node's backoff doubles up to this. */
#define GL_POOL_MAX_BACKOFF_MS 30000u

typedef struct gl_pool_node {
  char addr[272];
  char pin[80];  /* from the nodes file, or "" (the pool's connect options) */
  _Atomic bool removed; /* gone from the SRV records (written under the pool's mutex) */
  /* Health, written under the pool's mutex (down is also read without it). */
  _Atomic bool down;
  bool probing;         /* a thread is trying it again now */
  uint64_t retry_at_ns; /* down: when it may be tried again */
  uint32_t backoff_ms;  /* the wait after the last failure; 0 after a success */
  uint32_t failures;    /* in a row */
  gpulease_status last_status;
  char last_msg[256];
} gl_pool_node;

struct gpulease_pool {
  gpulease_connect_options copts; /* strings owned (below) */
  char *ca_file, *pin_sha256, *cert_file, *key_file, *bearer_token;
  char *srv_name, *dns_server;
  uint32_t srv_refresh_s;
  uint64_t resolved_at_ns;
  uint32_t max_per_node, max_leases, lease_ttl_s, backoff_ms;
  gpulease_lease_class lease_class;
  pthread_mutex_t mu;
  gl_pool_node **nodes; /* every node ever listed, removed ones too */
  size_t count, cap;
};

/* Connect options for node n (the pool's, with n's address and pin). */
void gl_pool_node_options(const gpulease_pool *p, const gl_pool_node *n,
                          gpulease_connect_options *o);

/* A down node is probed with a handshake bounded by this (or the connect
 * options' timeout, when shorter), so that a job that ends is not held up
 * by a probe of a dead node (whose ICMP answers the kernel may rate-limit). */
#define GL_POOL_PROBE_TIMEOUT_MS 2000u

/* Connects to n: OK, or the connect error. Marks n up or failed. With
 * probe, first a handshake bounded by GL_POOL_PROBE_TIMEOUT_MS; the
 * connection returned has the connect options' timeout either way. */
gpulease_status gl_pool_connect(gpulease_pool *p, gl_pool_node *n, bool probe,
                                gpulease_client **out, gpulease_error *err);

/* Connects to n and reads its inventory into *inv, marking n up or failed.
 * With keep non-NULL, an OK probe hands its connection over in *keep (the
 * caller closes it); otherwise it is closed. OK, or the failure (err). */
gpulease_status gl_pool_probe(gpulease_pool *p, gl_pool_node *n, gpulease_inventory *inv,
                              gpulease_client **keep, gpulease_error *err);

/* Health, under p->mu. gl_pool_node_failed_locked marks n down with
 * exponential backoff (a failure while already down and not yet due to be
 * tried again only records the message). */
void gl_pool_node_failed_locked(gpulease_pool *p, gl_pool_node *n, gpulease_status st,
                                const char *msg);
void gl_pool_node_up_locked(gl_pool_node *n);

/* Re-resolves the SRV name when it is due (force: now). 0, or -1 with
 * err set (the nodes are kept). Takes p->mu itself. */
int gl_pool_refresh_due(gpulease_pool *p, bool force, gpulease_error *err);

/* Whether status st from a chunk's submit (or its lease's renewal) is
 * retried elsewhere: the node, the connection or the lease failed, not
 * the kernel. */
bool gl_pool_status_retryable(gpulease_status st);

/* Whether st means the connection (not just the lease) is gone. */
bool gl_pool_status_connection(gpulease_status st);

#endif /* GL_LIB_POOL_INTERNAL_H */
