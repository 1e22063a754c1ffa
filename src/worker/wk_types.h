/*
 * wk_types.h - the worker's state, the floor every worker file stands on:
 * the process (gl_wkproc), its leases (gl_wk) and their limits. Types and
 * constants only; the replies are in wk_reply.h, the lost-context check in
 * wk_check.h.
 *
 * A worker process (gl_wkproc) serves one lease (class isolated or device:
 * the backend's own region) or several (class shared: one CUDA context,
 * each lease a range of it seen through a view backend, backend_view.h).
 * Each lease is a gl_wk: its region, buffers, modules, sessions (its
 * implicit one, GPU_SUBMIT's, among them) and segments.
 *
 * Threads: the main thread reads requests and dispatches them to their
 * lease; each session's ops run on that session's lane, each lease's
 * GPU_SUBMITs on the lane of its implicit session. Replies are written by whichever thread
 * finishes the op, under the process's write_mu, each behind its call tag.
 */
#ifndef GL_WORKER_WK_TYPES_H
#define GL_WORKER_WK_TYPES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "proto/wire.h"
#include "backend/backend.h"
#include "common/hmap.h"
#include "worker/ipc.h"
#include "worker/jit_cache.h"
#include "worker/kout.h"
#include "worker/launch_args.h"
#include "worker/lane.h"
#include "worker/lmem.h"
#include "worker/modtab.h"
#include "worker/suballoc.h"

/* Room for a message with a JIT log in it; the wire caps messages at
 * GL_WIRE_MAX_MESSAGE bytes anyway. */
#define GL_WK_ERR_MAX 24576

/* Bytes of compiled PTX kept in the disk cache. */
#define GL_WK_JIT_CACHE_BYTES (1ull << 30)

/* Sessions a lease may have open at once. */
#define GL_WK_MAX_SESSIONS 64

typedef struct gl_wsession gl_wsession;
typedef struct gl_wk gl_wk;

/* Leases one worker process serves at most (class shared). */
#define GL_WK_MAX_LEASES 1024

/* The worker process: its channel to the daemon, its device, its leases. */
typedef struct gl_wkproc {
  int fd;
  int wake_fd; /* eventfd: a lane lost the context; the main thread winds down */
  gl_backend *be; /* the device itself */
  pthread_mutex_t write_mu;
  uint32_t seq_timeout_ms; /* held ops wait this long for a missing seq */

  /* Set on the main thread. */
  bool warmed; /* WORKER_WARM done: the device is open, no region yet */
  bool opened; /* a WORKER_INIT opened the device */
  bool shared; /* ... for shared leases: each WORKER_INIT adds one */
  uint64_t region_base; /* shared: what region offsets count from */
  uint32_t printf_fifo_bytes; /* the context's limits as set */
  uint64_t malloc_heap_bytes;
  char device_name[96];
  gl_jit_cache *jit; /* PTX compiled earlier, on disk */
  struct gl_probe_resp *probe; /* the devices the worker sees (bind_uuid), once */
  pthread_mutex_t submit_mu; /* shared: the device's one submit path */

  /* A device fault lost the context (CUDA sticky error). */
  atomic_bool lost;
  pthread_mutex_t lost_mu;
  char lost_msg[1024];
  bool notice_sent; /* shared: WORKER_LOST went out at the loss (under lost_mu) */

  gl_ipc_fdq fdq; /* descriptors that came with the message being served */

  /* The leases (main thread): in order of arrival, and by id + 1 (the map
   * reserves key 0) for routing a shared worker's requests. */
  gl_wk **leases;
  size_t nleases, cap;
  gl_hmap by_id;
} gl_wkproc;

struct gl_wk {
  gl_wkproc *p;
  gl_backend *be; /* the process's device, or a view onto this lease's range */
  uint32_t seq_timeout_ms; /* copied from the process */

  /* The lease (set by WORKER_INIT on the main thread, read-only after). */
  bool initialised;
  uint64_t lease_id;
  uint64_t vram_bytes;
  uint64_t region_base;
  uint64_t range_offset; /* shared: where the lease's range lies in the context's */
  gl_suballoc *alloc; /* the sessions' buffers in the region */
  gl_modtab *modtab;  /* modules loaded for sessions */
  gl_lmem lmem;       /* its kernels' local memory, charged to the region (lmem.h) */

  /* What the daemon last heard the lease holds beyond its region
   * (WORKER_HELD, held.h), under held_mu. */
  pthread_mutex_t held_mu;
  uint64_t held_module_sent, held_local_sent;

  /* Sessions: the table is changed by the main thread; lanes read the
   * count under sess_mu. */
  pthread_mutex_t sess_mu;
  gl_wsession *sessions;
  size_t session_count;
  bool exiting; /* the main thread is leaving: lanes stop */

  /* Shared memory segments of the lease (segments.h), under seg_mu. */
  pthread_mutex_t seg_mu;
  struct gl_wseg *segs[16];

  /* GPU_SUBMIT's implicit session (session.h), not in `sessions`; NULL
   * until the first GPU_SUBMIT (main thread). */
  gl_wsession *implicit;

  /* Kernel output captured for this lease (kout.h); none in a shared worker. */
  gl_kout_buf kout;
};

#endif /* GL_WORKER_WK_TYPES_H */
