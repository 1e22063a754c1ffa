/*
 * fence.h - GPUs fenced after a failed teardown (docs/security.md, "Fenced
 * GPUs").
 *
 * When a lease ends, its worker is killed and its CUDA context with it, and
 * the driver gives the context's memory back. Each such teardown is
 * watched from the kill (gl_wproc_set_teardown_watch) against a deadline
 * that scales with the teardowns under way on the GPU (teardown.h: the
 * base --teardown-timeout-ms, plus --teardown-per-context-ms or twice the
 * measured pace for each other worker tearing down with it). Past it, the
 * GPU is fenced only if the worker's memory has not come back
 * (worker_mem.h: NVML still lists the worker's PID; without an NVML figure,
 * the process has not exited): it takes no new leases (lease_table.h) and
 * the inventory says so, until that memory comes back (fencing then ends by
 * itself) or an admin clears it (ADMIN_UNFENCE). A worker that is late but
 * whose memory is back is logged and never fences. Leases already on the
 * GPU go on. Every fence is logged as an ERROR with its figures.
 */
#ifndef GL_DAEMON_FENCE_H
#define GL_DAEMON_FENCE_H

struct gl_daemon;
struct gl_teardown;
typedef struct gl_fence gl_fence;

/* Watches the teardowns of d's workers (gl_wproc_set_teardown_watch),
 * counting them in td (borrowed, d's, which must outlive the fence) and
 * taking their deadlines from it. NULL when out of memory. */
gl_fence *gl_fence_new(struct gl_daemon *d, struct gl_teardown *td);

/* Stops watching and frees f (NULL ignored). GPUs it fenced stay fenced. */
void gl_fence_free(gl_fence *f);

/* Teardowns watched now (begun, and not yet reaped with their memory
 * back). For tests and metrics. */
unsigned gl_fence_watching(const gl_fence *f);

#endif /* GL_DAEMON_FENCE_H */
