/*
 * bulk.h - MEM_WRITE and MEM_READ payloads that came over QUIC cross to
 * the lease's worker through shared memory instead of its pipe.
 *
 * A lease's bulk path owns an arena: a sealed memfd of GL_BULK_SLOTS slots,
 * mapped here and attached to the worker as a segment (SHM_ATTACH, which
 * page-locks it there). A MEM_WRITE's data is copied into a free slot and
 * the worker gets MEM_WRITE_ARENA from it; a MEM_READ becomes
 * MEM_READ_ARENA into a slot, whose bytes then go out as the reply without
 * another copy
 * (the slot is lent to the QUIC stream until the peer has them). The
 * worker's answer goes back under the client's op. Nothing changes for
 * the client (docs/protocol.md, "Internal worker operations").
 *
 * The arena is made on the first transfer of at least GL_BULK_MIN_BYTES,
 * within the daemon's --max-pinned budget, and attached again to a fresh
 * worker; until then, when every slot is busy, or for a request from the
 * local socket, the caller forwards the request as it is.
 */
#ifndef GL_DAEMON_BULK_H
#define GL_DAEMON_BULK_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/dreq.h"
#include "daemon/worker_proc.h"
#include "proto/wire.h"

#define GL_BULK_SLOTS 16
#define GL_BULK_SLOT_DATA (8u << 20) /* the library's chunk size */
#define GL_BULK_MIN_BYTES (1u << 20)

typedef struct gl_bulk gl_bulk;

/* The pinned-memory budget the arenas share with SHM_ATTACH's segments. */
typedef struct gl_bulk_budget {
  uint64_t *in_use;
  uint64_t max;
} gl_bulk_budget;

/* A lease's bulk path, with nothing made yet. NULL when out of memory. */
gl_bulk *gl_bulk_new(const gl_lease_auth *auth, gl_bulk_budget budget);

/* The lease ended: no further use. Slots still lent to QUIC streams stay
 * mapped until they are given back. */
void gl_bulk_del(gl_bulk *b);

/* The lease's worker is gone: the next transfer attaches the arena to the
 * fresh one. */
void gl_bulk_worker_gone(gl_bulk *b);

/* True when segment is the arena's id in the worker: clients may not name
 * it (their MEM_WRITE_SHM and MEM_READ_SHM get INVALID_HANDLE). */
bool gl_bulk_owns_segment(const gl_bulk *b, uint64_t segment);

/* Carries r (MEM_WRITE or MEM_READ, decoded from a QUIC request) through
 * the arena to worker w and answers req when the worker has: true, req is
 * taken. False when the arena cannot carry it now; req is untouched and
 * the caller forwards the request as usual. */
bool gl_bulk_forward(gl_bulk *b, gl_wproc *w, gl_dreq *req, const gl_request *r);

#endif /* GL_DAEMON_BULK_H */
