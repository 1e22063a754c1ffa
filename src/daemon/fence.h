/*
 * fence.h - GPUs fenced after a failed teardown (docs/security.md, "Fenced
 * GPUs").
 *
 * When a lease ends, its worker is killed and its CUDA context with it, and
 * the driver gives the context's memory back. Should that fail (the worker
 * does not exit within the teardown deadline, gpuleased
 * --teardown-timeout-ms, as a process stuck in the driver does not; or NVML
 * still lists the ended worker's memory after the deadline), the GPU is
 * fenced: it takes no new leases (lease_table.h) and the inventory says so,
 * until the memory comes back (the worker is reaped and NVML no longer
 * lists it; fencing then ends by itself) or an admin clears it
 * (ADMIN_UNFENCE). Leases already on the GPU go on.
 */
#ifndef GL_DAEMON_FENCE_H
#define GL_DAEMON_FENCE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct gl_daemon;
typedef struct gl_fence gl_fence;

/* Watches the teardowns of d's workers (gl_wproc_set_teardown_watch) with
 * the given deadline. NULL when out of memory. */
gl_fence *gl_fence_new(struct gl_daemon *d, double timeout_s);
void gl_fence_free(gl_fence *f);

/* Changes the teardown deadline (a reload) for the teardowns that start
 * from now on. */
void gl_fence_set_timeout(gl_fence *f, double timeout_s);

#endif /* GL_DAEMON_FENCE_H */
