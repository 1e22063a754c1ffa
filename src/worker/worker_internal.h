/*
 * worker_internal.h - the worker's state, shared by worker.c (the channel
 * and the lease's own ops), session.c (sessions: table, order, lifecycle)
 * and session_ops.c (what each session op does).
 *
 * A worker process (gl_wkproc) serves one lease (class isolated or device:
 * the backend's own region) or several (class shared: one CUDA context,
 * each lease a range of it seen through a view backend, backend_view.h).
 * Each lease is a gl_wk: its region, buffers, modules, sessions, segments
 * and submit lane.
 *
 * Threads: the main thread reads requests and dispatches them to their
 * lease; each lease's GPU_SUBMIT runs on its submit lane; each session's
 * ops run on that session's lane. Replies are written by whichever thread
 * finishes the op, under the process's write_mu, each behind its call tag.
 */
#ifndef GL_WORKER_WORKER_INTERNAL_H
#define GL_WORKER_WORKER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "proto/wire.h"
#include "backend/backend.h"
#include "worker/hmap.h"
#include "worker/ipc.h"
#include "worker/jit_cache.h"
#include "worker/kout.h"
#include "worker/launch_args.h"
#include "worker/lane.h"
#include "worker/modtab.h"
#include "worker/module_cache.h"
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

  /* Sessions: the table is changed by the main thread; lanes read the
   * count under sess_mu. */
  pthread_mutex_t sess_mu;
  gl_wsession *sessions;
  size_t session_count;
  bool exiting; /* the main thread is leaving: lanes stop */

  /* Shared memory segments of the lease (segments.h), under seg_mu. */
  pthread_mutex_t seg_mu;
  struct gl_wseg *segs[16];

  /* GPU_SUBMIT: its lane and that lane's state. */
  gl_lane *submit_lane;
  gl_module_cache cache;
  char *err; /* GL_WK_ERR_MAX */
  gl_argbuf submit_args;
  uint64_t submits;

  /* Kernel output captured for this lease (kout.h); none in a shared worker. */
  gl_kout_buf kout;
};

/* ---- replies (any thread) ---- */

/* Writes one encoded message behind tag and frees b. 0, or -1 when the
 * daemon is gone. */
int gl_wk_send(gl_wk *w, uint64_t tag, gl_buf *b);
int gl_wk_reply_error(gl_wk *w, uint64_t tag, uint16_t op, gpulease_status st, const char *msg);
int gl_wk_reply(gl_wk *w, uint64_t tag, const gl_response *resp);
/* An OK reply with no result fields. */
int gl_wk_reply_ok(gl_wk *w, uint64_t tag, uint16_t op);

/* The same for a job: its reply goes behind its tag, or, for an op of a
 * BATCH, to the batch's collector (batch.h). */
int gl_wk_job_error(gl_wk *w, gl_job *job, uint16_t op, gpulease_status st, const char *msg);
int gl_wk_job_reply(gl_wk *w, gl_job *job, const gl_response *resp);
int gl_wk_job_ok(gl_wk *w, gl_job *job, uint16_t op);

/* Notes a lost context (first reason wins) after a backend call, and wakes
 * the main thread, which then stops reading requests, lists the sessions
 * for the daemon (WORKER_LOST) and exits. True when the context is lost
 * now. */
bool gl_wk_check_lost(gl_wk *w, const char *why);

/* ---- kernel output (worker.c, over kout.h) ---- */

/* After a synchronization of the lease's work: moves the kernel output
 * printed since into the lease's pending output (discarded in a shared
 * worker). asserts (may be NULL): receives the lines of failed device-side
 * asserts instead, as gl_kout_drain says. Any thread. */
void gl_wk_kout_collect(gl_wk *w, char *asserts, size_t cap);

/* Takes the lease's pending output into *k for a reply; *owned is the
 * buffer behind k->text, which the caller frees after the reply. A shared
 * worker's: empty, with GL_KOUT_F_DISCARDED. */
void gl_wk_kout_take(gl_wk *w, gl_kout *k, char **owned);

/* ---- sessions (session.c) ---- */

/* Main thread: routes a decoded session request (job owns the bytes) to
 * its session in seq order, or answers it at once (unknown session, bad
 * seq, SESSION_OPEN). */
void gl_session_dispatch(gl_wk *w, gl_job *job);

/* Main thread: frees the sessions whose lanes have finished (closed). */
void gl_session_reap(gl_wk *w);

/* Main thread: the earliest time (gl_mono_ns) at which a session gives up
 * waiting for a missing seq; 0 when no session waits. */
uint64_t gl_session_next_deadline(gl_wk *w);

/* Main thread: gives up the missing seqs whose wait has run out at `now`:
 * each becomes its session's failure (MISSING_SEQ) and the ops held
 * behind it are handed over (to fail fast). */
void gl_session_expire_gaps(gl_wk *w, uint64_t now);

/* Main thread, once the context is lost: stops every lane (waiting at
 * most timeout_ms for each) and encodes the WORKER_LOST notice that lists
 * every open session and its failure, for the daemon to answer their later
 * ops (docs/protocol.md section 7). *busy_lanes counts the lanes whose op
 * was still running (left to the process exit). 0, or -1 when out of
 * memory. */
int gl_session_lost_notice(gl_wk *w, unsigned timeout_ms, gl_buf *out, size_t *busy_lanes);

/* Main thread, at exit: stops every lane and frees every session (its
 * buffers and modules too, unless the context is lost). */
void gl_session_close_all(gl_wk *w);

#endif /* GL_WORKER_WORKER_INTERNAL_H */
