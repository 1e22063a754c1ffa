/*
 * session.h - one session in the worker: its order, its failure, its
 * handles. Shared by session.c (table, seq order, lifecycle) and
 * session_ops.c (the ops).
 *
 * A session is a CUDA stream in the lease's context plus the buffers,
 * modules and functions it created, each under an opaque random handle
 * (kind in the top byte). Its ops run on its own lane, in seq order; the
 * first op that fails is the session's failure until a SYNC acknowledges
 * it (docs/protocol.md, "Sessions").
 *
 * Each lease also has one implicit session, GPU_SUBMIT's (submit.h):
 * started on the first GPU_SUBMIT, never in the lease's table (no id a
 * client can name, not counted against its limits), with no stream of its
 * own (its launches wait on the backend's synchronous path) and a module
 * cache (module_cache.h) over the same module table.
 */
#ifndef GL_WORKER_SESSION_H
#define GL_WORKER_SESSION_H

#include "common/hmap.h"
#include "worker/module_cache.h"
#include "worker/wk_types.h"

/* Handle kinds (top byte), so a handle of the wrong kind is never found. */
#define GL_HANDLE_BUFFER 0xB1u
#define GL_HANDLE_MODULE 0xD1u
#define GL_HANDLE_FUNCTION 0xF1u
#define GL_HANDLE_SEGMENT 0x5Eu
#define GL_HANDLE_GRAPH 0x6Au

/* Per-session limits (CAPACITY_EXCEEDED). */
#define GL_WS_MAX_BUFFERS 65536
#define GL_WS_MAX_MODULES 1024
#define GL_WS_MAX_GRAPHS 1024 /* graphs a session keeps at most */
#define GL_WS_MAX_FUNCTIONS 4096
/* Out-of-order ops a session holds while waiting for a lower seq, the
 * bytes of request they may hold together, and how far ahead of the next
 * expected seq an op may be. */
#define GL_WS_MAX_HELD 4096
#define GL_WS_MAX_HELD_BYTES (512ull << 20)
#define GL_WS_MAX_AHEAD 65536
/* How long held ops wait for a missing seq by default (gpuleased
 * --seq-timeout-ms). */
#define GL_WS_DEFAULT_SEQ_TIMEOUT_MS 10000u

typedef struct gl_wbuffer {
  uint64_t offset; /* in the region */
  uint64_t size;   /* as asked */
} gl_wbuffer;

typedef struct gl_wfunction gl_wfunction;

typedef struct gl_wmodule {
  void *module;          /* the backend's, from the modtab (one reference) */
  gl_wfunction *funcs;   /* functions found in it */
  unsigned graph_refs;   /* launches of its functions in graphs (no unload meanwhile) */
} gl_wmodule;

struct gl_wfunction {
  uint64_t handle;
  void *fn;              /* the backend's */
  gl_wmodule *mod;
  gl_wfunction *next;    /* in mod->funcs */
  char name[GL_WIRE_MAX_KERNEL_NAME + 1];
  bool sizes_known;
  size_t param_count;
  size_t param_sizes[GPULEASE_MAX_PARAMS];
  uint32_t local_bytes;  /* per thread (CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES): charged at launch */
};

struct gl_wsession {
  gl_wk *w;
  uint64_t id;
  gl_wsession *next; /* in w->sessions */
  gl_lane *lane;

  /* Main thread only: the order. */
  uint64_t next_seq;
  gl_job *held; /* ops waiting for a lower seq, in the order they will run */
  gl_job *held_tail;
  size_t held_count;
  uint64_t held_bytes;
  uint64_t gap_deadline_ns; /* when the missing next_seq is given up; 0: none */

  /* Lane thread only. */
  void *stream;
  gl_hmap buffers, modules, functions;
  gl_argbuf args;
  bool args_ready;
  char *err; /* GL_WK_ERR_MAX */
  /* The failure (status 0: none). */
  uint16_t f_status, f_op;
  uint64_t f_seq;
  char f_msg[2048];
  /* First LAUNCH queued since the stream was last known idle: where a
   * fault found later is attributed (0: none). */
  uint64_t unsynced_launch_seq;
  /* Event slots (EVENT_RECORD): the backend's event, NULL until recorded. */
  void *events[GL_WIRE_MAX_EVENTS];
  /* BURST's arguments: every launch's parameters, packed (burst_cap bytes),
   * and the launches (burst_launch_cap). */
  uint8_t *burst_args;
  size_t burst_cap;
  void **burst_ptrs;
  size_t *burst_sizes;
  size_t burst_ptr_cap;
  /* The last BURST prepared (session_exec.c): its encoded launches, and
   * what they became (functions, launches into burst_args), reused while
   * the same bytes come again and no buffer or module went meanwhile
   * (handles_gen unchanged). */
  uint8_t *burst_raw;
  size_t burst_raw_len, burst_raw_cap;
  uint16_t burst_raw_count;
  bool burst_last_ran; /* the backend ran the burst prepared there, last */
  uint64_t burst_raw_gen;
  void **burst_fns;
  gl_launch *burst_ls;
  size_t burst_n_cap;
  uint64_t handles_gen; /* bumped by MEM_FREE and MODULE_UNLOAD */
  /* Graphs (session_exec.c): the one being recorded (GRAPH_BEGIN ..
   * GRAPH_END; NULL: none) and the session's graphs by handle. */
  struct gl_wgraph *capture;
  gl_hmap graphs;

  atomic_bool closed; /* SESSION_CLOSE done: the main thread reaps it */

  /* The implicit session only (NULL in a client's): GPU_SUBMIT's modules
   * (lane thread). */
  gl_module_cache *submit_modules;
};

/* Runs one job of session s (its lane's run function). */
void gl_session_run(void *ctx, gl_job *job);

/* Frees every buffer, function and module of s and its stream (lane
 * thread, or main thread once the lane has stopped). */
void gl_session_release_all(gl_wsession *s);

/* A new random handle of the given kind, not 0. */
uint64_t gl_session_new_handle(unsigned kind);

/* Snapshot of a session's failure once the context is lost and its lane
 * has stopped (main thread): the failure, or the lost context itself when
 * the session had none. */
void gl_session_failure_for_lost(gl_wsession *s, uint16_t *status, uint16_t *op,
                                 uint64_t *seq, const char **msg);

/* ---- the lease's sessions (main thread, for worker.c) ---- */

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

/* ---- the lease's implicit session (main thread, for submit.c and worker.c) ---- */

/* Main thread: lease w's implicit session (w->implicit), started on the
 * first call with run as its lane's function (ctx: the session), not in
 * the table of sessions. NULL when out of memory or no thread could be
 * started (nothing is kept then; a later call tries again). */
gl_wsession *gl_session_implicit(gl_wk *w, gl_lane_run_fn run);

/* Main thread, once the context is lost: stops the implicit session's lane
 * (if any), waiting at most timeout_ms. True when it stopped (or there was
 * none); false when its op still runs (left to the process exit). Either
 * way the lane is no longer the lease's; gl_session_implicit_end frees the
 * rest. */
bool gl_session_implicit_stop_within(gl_wk *w, unsigned timeout_ms);

/* Main thread, at lease end: stops the implicit session's lane (the op it
 * runs finishes, queued ones are dropped unanswered), releases its modules
 * to the module table (unless the context is lost) and frees it. Nothing
 * to do when the lease never had one. */
void gl_session_implicit_end(gl_wk *w);

#endif /* GL_WORKER_SESSION_H */
