/*
 * pool.h - warm workers: worker processes started ahead of leases.
 *
 * A worker's start is slow on a GPU (cuInit and a CUDA context: a few
 * hundred milliseconds), and a lease waits for it. The pool keeps, for each
 * GPU of the node, up to N workers that have opened the device
 * (WORKER_WARM, docs/protocol.md section 7) but reserved no VRAM yet; a
 * LEASE_ALLOC takes one and sends it only WORKER_INIT (the region), and a
 * replacement starts at once in the background. A warm worker that dies is
 * replaced after a pause. Nothing here waits: spawns and WORKER_WARM are
 * asynchronous, like every worker call.
 *
 * Beside the N, the pool keeps spares: workers of ended isolated leases,
 * released (WORKER_RELEASE) with their device open, handed to the next
 * leases first. A context start and a context teardown each take a few
 * hundred milliseconds in the driver, one at a time, so reuse is what lets
 * many clients cycle isolated leases quickly. A spare serves the daemon's
 * one tenant (there are no tenants yet); its region is zeroed for each
 * lease like a fresh one's.
 */
#ifndef GL_DAEMON_POOL_H
#define GL_DAEMON_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/node.h"
#include "daemon/worker_proc.h"

struct ev_loop;
struct gl_teardown;
typedef struct gl_pool gl_pool;

/* What the daemon's admission of isolated contexts (ctx_admit.h) tells
 * the pool and hears from it; any member may be NULL. */
typedef struct gl_pool_hooks {
  /* Whether a warm worker may start a CUDA context on gpu now (the count
   * below the GPU's limit, no lease waiting for one). A slot refused
   * waits, empty, for gl_pool_refill. */
  bool (*may_start)(void *user, uint32_t gpu);
  /* A worker of gpu became ready to hand out (a warm one answered). */
  void (*ready)(void *user, uint32_t gpu);
  /* The driver refused a warm worker's context for want of memory
   * (WORKER_WARM answered CAPACITY_EXCEEDED); the worker is still live. */
  void (*no_room)(void *user, uint32_t gpu);
  void *user;
} gl_pool_hooks;

/* Starts per_gpu (1..16) warm workers for each GPU of node (borrowed, as
 * are worker_exe and log_level, for the pool's life), as hooks (copied;
 * NULL: none) allow; each counts as one of its GPU's contexts
 * (gl_wproc_count_context). NULL when out of memory. */
gl_pool *gl_pool_new(struct ev_loop *loop, const gl_node *node, const char *worker_exe,
                     const char *log_level, unsigned per_gpu, const gl_pool_hooks *hooks);

/* Starts the warm workers of the empty slots that hooks' may_start allows
 * now (after room came back). */
void gl_pool_refill(gl_pool *p);

/* Whether gl_pool_take (fresh false) or gl_pool_take_fresh (fresh true)
 * would hand out a worker of gpu now. */
bool gl_pool_has_idle(const gl_pool *p, uint32_t gpu, bool fresh);

/* Ends one released spare of gpu (the oldest), so that its context makes
 * room for a lease that needs a fresh one. true when there was one. */
bool gl_pool_end_spare(gl_pool *p, uint32_t gpu);

/* Kills the warm workers. NULL is ignored. */
void gl_pool_del(gl_pool *p);

/* A warm worker of GPU gpu, handed over with its callbacks set to on_exit,
 * on_notice and owner: a reused one (gl_pool_recycle) when there is one,
 * else one of the pool's, and a replacement starts. NULL when none is
 * ready. */
gl_wproc *gl_pool_take(gl_pool *p, uint32_t gpu, gl_wproc_exit_cb on_exit,
                       gl_wproc_notice_cb on_notice, void *owner);

/* The same, never a reused worker (a lease with context limits of its
 * own, which a used context may no longer take). */
gl_wproc *gl_pool_take_fresh(gl_pool *p, uint32_t gpu, gl_wproc_exit_cb on_exit,
                             gl_wproc_notice_cb on_notice, void *owner);

/* Spare workers kept for reuse per GPU at most, and how long one is kept
 * unused before it is ended (its context's VRAM back to the GPU). */
#define GL_POOL_SPARES_MAX 32
#define GL_POOL_SPARE_IDLE_S 10.0

/* Takes over the worker of an isolated lease that ended with nothing
 * running: sends it WORKER_RELEASE for lease_id (the worker frees the
 * lease's region, modules and sessions and keeps its device open) and, once
 * it answers OK, keeps it as a spare that the next gl_pool_take hands out
 * instead of a fresh worker: a lease then costs no CUDA context start and
 * no context teardown. A worker still being released may be handed out
 * too (the lease's WORKER_INIT queues behind the release). The worker is
 * ended instead when the release fails or takes longer than its deadline
 * (a kernel still running: the lease that took it then sees its
 * WORKER_INIT fail), GL_POOL_SPARES_MAX spares wait already, or it stays
 * unused GL_POOL_SPARE_IDLE_S. The deadline is 2 s, and with a teardown
 * table (gl_pool_set_teardown) it scales with the GPU's workers releasing
 * or exiting at the same time, whose driver work queues with it
 * (teardown.h, GL_TEARDOWN_RELEASE); each release counts there while it
 * is under way. */
void gl_pool_recycle(gl_pool *p, uint32_t gpu, gl_wproc *w, uint64_t lease_id);

/* Counts the pool's releases in td (borrowed; it must outlive the pool,
 * NULL: none) and takes their deadlines from it. For the releases that
 * start from now on. */
void gl_pool_set_teardown(gl_pool *p, struct gl_teardown *td);

/* Spares of GPU gpu waiting now. */
unsigned gl_pool_spares(const gl_pool *p, uint32_t gpu);

/* Warm workers of GPU gpu ready now, and being started. */
unsigned gl_pool_ready(const gl_pool *p, uint32_t gpu);
unsigned gl_pool_starting(const gl_pool *p, uint32_t gpu);

/* Every slot has answered at least once (ready, or failed): the daemon
 * says it is ready then. */
int gl_pool_settled(const gl_pool *p);

#endif /* GL_DAEMON_POOL_H */
