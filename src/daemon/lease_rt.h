/*
 * lease_rt.h - what the daemon keeps for a live lease beside its lease
 * table entry (reached through the entry's `owner`): its worker process,
 * its sessions as counted in the quota, the sessions that ended with a
 * lost context (ended.h), its shared memory segments and QUIC transfers
 * (bulk.h), its context limits and its MIG instance. Made when a
 * LEASE_ALLOC is granted its worker (ops.c), ended with the lease.
 */
#ifndef GL_DAEMON_LEASE_RT_H
#define GL_DAEMON_LEASE_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth/quota.h"
#include "daemon/bulk.h"
#include "daemon/daemon.h"
#include "daemon/dreq.h"
#include "daemon/ended.h"
#include "daemon/lease_table.h"
#include "daemon/worker_proc.h"
#include "proto/wire.h"

/* A shared memory segment attached to a lease through the local socket:
 * detached when that connection closes, and counted in the daemon's
 * budget of page-locked memory. */
typedef struct seg_rec {
  uint64_t id;   /* the worker's */
  uint64_t size_bytes;
  uint64_t conn; /* the local connection that attached it */
} seg_rec;

#define MAX_SEGS 16

typedef struct lease_rt {
  gl_daemon *d;
  uint64_t lease_id;
  uint32_t gpu_index;
  bool shared; /* w is the GPU's shared worker (shared.h), not the lease's own */
  gl_wproc *w; /* NULL after the worker died on its own; respawned on use */
  gl_ended ended; /* sessions that ended with a lost context (ended.h) */
  seg_rec segs[MAX_SEGS];
  size_t nsegs;
  gl_bulk *bulk; /* QUIC transfers through shared memory (bulk.h) */
  uint32_t printf_fifo_bytes; /* the lease's context limits; 0: default */
  uint64_t malloc_heap_bytes;
  bool fresh; /* never a reused worker (its setup failed on one) */
  int mig;    /* partition: the MIG instance of gpu_index it holds; -1 otherwise */
  bool charged;            /* counted in its tenant's quota */
  gl_quota_charge charge;  /* its GPU-seconds reservation */
  uint32_t sessions;       /* live sessions, as counted in the quota */
} lease_rt;

/* The runtime record of lease l, or NULL (l NULL, or no record: pending
 * without one, or ended). */
lease_rt *gl_lease_rt_of(const gl_lease *l);

/* Makes the record of lease l, just granted by the table and the quota:
 * the context limits of a, MIG instance mig (-1: none; marked taken in
 * d), the quota charge, and bulk (owned from here on), with no worker
 * yet; l->owner is set. NULL when out of memory (nothing changed; bulk is
 * still the caller's). */
lease_rt *gl_lease_rt_new(gl_daemon *d, gl_lease *l, const gl_lease_alloc_req *a, int mig,
                          const gl_quota_charge *charge, gl_bulk *bulk);

/* The lease's sessions are gone (its end, or its worker's): they leave
 * the tenant's quota. */
void gl_lease_rt_release_sessions(lease_rt *rt, const char *tenant);

/* The lease's segments are gone with its worker: no longer counted in
 * the daemon's page-locked memory. */
void gl_lease_rt_segs_gone(lease_rt *rt);

/* Forgets segment id (detached), which no longer counts. */
void gl_lease_rt_seg_forget(lease_rt *rt, uint64_t id);

/* Answers an op on a session that ended with a lost context; true when
 * the session is one (the request is then answered). */
bool gl_lease_rt_answer_if_ended(lease_rt *rt, gl_dreq *req, const gl_request *r);

#endif /* GL_DAEMON_LEASE_RT_H */
