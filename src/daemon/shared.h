/*
 * shared.h - the shared CUDA contexts: for each GPU, at most one worker
 * process that serves every lease of class shared on it.
 *
 * An isolated lease costs a CUDA context of its own (about 330 MiB of VRAM
 * on an H100). A shared lease is a range of VRAM in the one context of its
 * GPU's shared worker (WORKER_INIT with the shared flag adds it,
 * WORKER_RELEASE removes it; docs/protocol.md section 7), so it costs
 * little beyond its size. The price is isolation: a kernel of one shared
 * lease can address the others' memory, and a device fault loses the
 * context and with it every shared lease of the GPU. Until tenants exist,
 * every client that asks for a shared lease shares.
 *
 * The registry starts the worker (a warm one of the pool when there is
 * one) when the first member joins, keeps it while members remain and for
 * GL_SHARED_LINGER_S after the last leaves (a lease cycle does not pay a
 * context each time), then ends it. When the worker dies or loses its
 * context, the registry forgets it and its members and calls on_lost with
 * their ids, so that the daemon ends those leases.
 */
#ifndef GL_DAEMON_SHARED_H
#define GL_DAEMON_SHARED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/node.h"
#include "daemon/pool.h"
#include "daemon/worker_proc.h"

struct ev_loop;

/* Seconds a shared worker without members is kept before it is ended. */
#define GL_SHARED_LINGER_S 5.0

typedef struct gl_shared gl_shared;

/* The members of a lost shared context, and why (the CUDA error, or how
 * the worker ended). ids is valid during the call only. */
typedef void (*gl_shared_lost_cb)(void *user, uint32_t gpu, const uint64_t *ids, size_t n,
                                  const char *why);

/* node, pool (may be NULL), worker_exe and log_level are borrowed for the
 * registry's life. NULL when out of memory. */
gl_shared *gl_shared_new(struct ev_loop *loop, const gl_node *node, gl_pool *pool,
                         const char *worker_exe, const char *log_level, gl_shared_lost_cb on_lost,
                         void *user);

/* Ends every shared worker (no on_lost). NULL is ignored. */
void gl_shared_del(gl_shared *s);

/* Makes lease_id a member of GPU gpu's shared context and returns its
 * worker (borrowed: valid until the member leaves or on_lost), started now
 * if there is none; the caller then sends it WORKER_INIT. NULL with err
 * when no worker could be started. */
gl_wproc *gl_shared_join(gl_shared *s, uint32_t gpu, uint64_t lease_id, char *err,
                         size_t errlen);

/* lease_id leaves GPU gpu's shared context (freed, expired, or its
 * WORKER_INIT failed): its calls still waiting are answered with status
 * and why, and the worker is sent WORKER_RELEASE. No effect for a lease
 * that is not a member (e.g. after on_lost). */
void gl_shared_leave(gl_shared *s, uint32_t gpu, uint64_t lease_id, gpulease_status status,
                     const char *why);

/* Whether GPU gpu's shared context is ending after a fault (its worker no
 * longer takes calls and has not been reaped): a join fails until then. */
bool gl_shared_ending(const gl_shared *s, uint32_t gpu);

/* Members of GPU gpu's shared context now. */
size_t gl_shared_members(const gl_shared *s, uint32_t gpu);

#endif /* GL_DAEMON_SHARED_H */
