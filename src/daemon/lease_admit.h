/*
 * lease_admit.h - the daemon's admission of isolated CUDA contexts (issue
 * 34; docs/protocol.md "Isolated contexts"): what counts against each
 * GPU's limit, when a lease has room, and the figures a refusal gives.
 *
 * Counted on a GPU (gl_wproc_count_context): every worker that holds a
 * CUDA context of its own there, from its spawn until it is reaped: warm
 * workers (starting or ready), spares of ended leases, the workers of
 * isolated and device leases, the GPU's shared context, and all of them
 * while they are torn down. MIG instances are not counted (each is a
 * device of its own). A lease has room when the pool can hand it an idle
 * worker (no new context) or the count is below the limit; the warm pool
 * starts a worker only below the limit and only when no lease waits.
 */
#ifndef GL_DAEMON_LEASE_ADMIT_H
#define GL_DAEMON_LEASE_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/pool.h"

struct gl_daemon;

/* Makes d->ctx_admit from d->cfg (--max-isolated-contexts,
 * --isolated-queue-max, --isolated-queue-ms) and watches the reaping of
 * counted workers. Before the pool starts. 0, or -1 out of memory. */
int gl_lease_admit_start(struct gl_daemon *d);

/* Answers every waiting request and frees d->ctx_admit (shutdown). */
void gl_lease_admit_stop(struct gl_daemon *d);

/* The hooks the pool is made with (pool.h): starts below the limit only,
 * readiness and the driver's refusals reported. */
void gl_lease_admit_pool_hooks(struct gl_daemon *d, gl_pool_hooks *out);

/* Whether a lease that needs a context of its own may get one on gpu now
 * (GL_CTX_ADMIT_ANY: on some GPU that takes leases whole); fresh: it needs
 * a never-used one. A GPU in MIG mode, or out of range, always has room
 * (nothing of it counts). */
bool gl_lease_admit_room(struct gl_daemon *d, uint32_t gpu, bool fresh);

/* A GPU in room (gl_lease_admit_room) other than skip, or UINT32_MAX. */
uint32_t gl_lease_admit_find_room(struct gl_daemon *d, uint32_t skip, bool fresh);

/* The figures of gpu (GL_CTX_ADMIT_ANY: of GPU 0 and the sums), in words,
 * for a CAPACITY_EXCEEDED: its limit (and whether learned), contexts in
 * use (leased, warm, spare, tearing down), requests queued and the
 * queue's bounds. Written NUL-terminated to buf (len bytes). */
void gl_lease_admit_describe(struct gl_daemon *d, uint32_t gpu, char *buf, size_t len);

/* The figures of one GPU, for the inventory and the metrics. */
typedef struct gl_lease_admit_figures {
  unsigned limit;       /* isolated contexts the GPU may hold */
  bool learned;         /* the limit came from the driver's refusal */
  unsigned held;        /* counted contexts now, all kinds */
  unsigned ending;      /* of them, being torn down */
  unsigned warm;        /* of them, warm workers (ready or starting) */
  unsigned spares;      /* of them, released spares */
  unsigned leased;      /* the rest: leases' workers */
  unsigned queued;      /* requests waiting for one (those for any GPU included) */
} gl_lease_admit_figures;

/* Fills *out (caller-owned) with GPU gpu's figures now; all 0 for a gpu
 * out of range. */
void gl_lease_admit_figures_of(struct gl_daemon *d, uint32_t gpu, gl_lease_admit_figures *out);

/* The driver refused a new context on gpu for want of memory while the
 * worker that asked is still counted: the limit is learned from the other
 * contexts held (ctx_admit.h, gl_ctx_admit_learn). */
void gl_lease_admit_context_refused(struct gl_daemon *d, uint32_t gpu);

/* Room may have come back (a lease ended): waiting requests are served on
 * the loop's next turn. */
void gl_lease_admit_poke(struct gl_daemon *d);

#endif /* GL_DAEMON_LEASE_ADMIT_H */
