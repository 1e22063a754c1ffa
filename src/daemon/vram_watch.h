/*
 * vram_watch.h - each GPU's free VRAM as NVML last saw it, kept fresh by a
 * thread of its own, so the main loop never waits on NVML.
 *
 * NVML's memory query takes the driver's locks: measured on an H200 with
 * 36 isolated contexts churning (issue 34), it took 1.3 ms at the median
 * and 15 ms at p90, and the daemon made it on every LEASE_ALLOC, so the
 * main loop spent nearly all its time there. LEASE_ALLOC reads the figure
 * from here instead: at most `max_age_ms` old when the thread keeps up (a
 * read of an older one wakes the thread and returns what it has), and it
 * may predate the latest leases' cuMemAlloc. So it is an early check only:
 * a worker's cuMemAlloc that finds less memory answers CAPACITY_EXCEEDED
 * all the same. What a client or an operator reads (GET_INVENTORY, the
 * metrics) and what must be exact (the warm pool's context overhead) is
 * read now (gl_vram_watch_read_now, gl_node_free_vram).
 */
#ifndef GL_DAEMON_VRAM_WATCH_H
#define GL_DAEMON_VRAM_WATCH_H

#include <stdbool.h>
#include <stdint.h>


typedef struct gl_vram_watch gl_vram_watch;

/* Reads GPU index's free VRAM (bytes) into *free_bytes: 0, or -1 when
 * there is no figure for it. The daemon's is gl_node_read_free_vram. */
typedef int (*gl_vram_reader)(void *ctx, uint32_t index, uint64_t *free_bytes);

/* Starts watching GPUs 0..gpus-1 through read(ctx, ...) (ctx must outlive
 * the watch; read is called from the watch's thread and the callers' of
 * gl_vram_watch_read_now): takes a first reading of each now, on the
 * calling thread, then starts the thread. A GPU without a first figure
 * (an emulated one, no NVML) is never asked again: its reads give the
 * caller's fallback. max_age_ms: how old a figure may be before a read
 * asks for a new one (0 is taken as 1). NULL when out of memory or when
 * the thread cannot start. */
gl_vram_watch *gl_vram_watch_new(uint32_t gpus, gl_vram_reader read, void *ctx,
                                 unsigned max_age_ms);

/* GPU index's free VRAM in bytes, as last read; `fallback` for a GPU NVML
 * does not know, an index out of range or a NULL watch. *stale (may be
 * NULL) says the figure is older than max_age_ms: nobody read it for a
 * while, and a new reading has been asked for. Never blocks on NVML. */
uint64_t gl_vram_watch_free(gl_vram_watch *w, uint32_t index, uint64_t fallback, bool *stale);

/* A reading now, on the calling thread (it blocks on NVML), kept as the
 * latest: for confirming a stale figure before refusing on it. `fallback`
 * as for gl_vram_watch_free, or when NVML fails. */
uint64_t gl_vram_watch_read_now(gl_vram_watch *w, uint32_t index, uint64_t fallback);

/* Stops the thread (waiting for a reading in progress) and frees w. NULL
 * is a no-op. */
void gl_vram_watch_del(gl_vram_watch *w);

#endif /* GL_DAEMON_VRAM_WATCH_H */
