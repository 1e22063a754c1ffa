/*
 * worker_proc.h - one worker process as the daemon sees it.
 *
 * Each lease's CUDA context lives in a worker process of its own
 * (src/worker/), started here with posix_spawn of the daemon's own binary
 * (`gpuleased --worker FD`) over a socketpair. The daemon's network process
 * never calls CUDA. Calls are wire-format messages (src/proto/wire.h) written
 * to the worker behind an 8-byte call tag (worker/ipc.h); replies carry the
 * tag back and may come in any order.
 *
 * Killing a worker (lease freed or expired) is SIGKILL: the driver then
 * reclaims the context and all its VRAM even when a kernel hangs. Every
 * call still waiting gets its callback with a status and message, exactly
 * once.
 */
#ifndef GL_DAEMON_WORKER_PROC_H
#define GL_DAEMON_WORKER_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpulease/gpulease.h"
#include "proto/wire.h"

struct ev_loop;

typedef struct gl_wproc gl_wproc;

/* A reply: on success (status OK) msg/len is the worker's whole response
 * message (header included), valid during the callback only. Otherwise
 * `why` says what happened: the status given to gl_wproc_kill; INTERNAL
 * when the worker died; BUSY when it exited after a device fault
 * (GL_WORKER_EXIT_CONTEXT_LOST) before reading this call, which therefore
 * had no effect and may be sent to a fresh worker: then msg/len is the
 * call's own request, valid during the callback. msg is NULL otherwise. */
typedef void (*gl_wproc_reply_cb)(void *ctx, gpulease_status status, const uint8_t *msg,
                                  size_t len, const char *why);

/* Called for a message the worker sends unasked (tag GL_IPC_NOTICE_TAG:
 * WORKER_LOST, after a device fault lost its context, before it exits).
 * msg is the whole message, valid during the call only. */
typedef void (*gl_wproc_notice_cb)(void *owner, const uint8_t *msg, size_t len);

/* Called once when the worker process has exited and been reaped, unless it
 * was killed with gl_wproc_kill (then the owner already knows). */
typedef void (*gl_wproc_exit_cb)(void *owner, int exit_code, int signo);

/* A worker's teardown, as the daemon's fencing follows it (fence.h): with
 * exited false when the daemon lets the worker go (gl_wproc_kill, or
 * gl_wproc_retire: once a worker), with exited true when such a worker has
 * exited and been reaped. tag is the worker's (gl_wproc_set_tag;
 * UINT32_MAX when never set). The deadline is the callee's: nothing here
 * waits or times a teardown, and every worker's is its own (a kill is sent
 * at once, each exit is reaped when it comes), so many tear down in
 * parallel as far as the driver allows. */
typedef void (*gl_wproc_teardown_cb)(void *user, uint32_t tag, pid_t pid, bool exited);

/* Sets the teardown callback (NULL: none) for every worker of the process
 * (the daemon's one loop). */
void gl_wproc_set_teardown_watch(gl_wproc_teardown_cb cb, void *user);

/* Called for a WORKER_HELD notice of worker w (what one of its leases
 * makes its context hold beyond its region, docs/protocol.md section 7),
 * instead of the worker's notice callback. msg is the whole message,
 * valid during the call only; it is not yet decoded. */
typedef void (*gl_wproc_held_cb)(void *user, gl_wproc *w, const uint8_t *msg, size_t len);

/* Sets the WORKER_HELD callback for every worker of the process (NULL:
 * such notices are dropped). */
void gl_wproc_set_held_watch(gl_wproc_held_cb cb, void *user);

/* Tags w with a number the teardown callback gets (the daemon's GPU index
 * of the worker). */
void gl_wproc_set_tag(gl_wproc *w, uint32_t tag);

/* Starts a worker. worker_exe is the program to run (the daemon's own
 * binary); its argv will be {exe, "--worker", "<fd>", "--log-level", L}
 * followed by device_args (NULL-terminated, at most 18; NULL for none),
 * which pick its device layer (e.g. "--device", "emu"). loop must be
 * libev's default loop (child watchers need it). on_exit and on_notice
 * (either may be NULL) get `owner`. 0 or -1 with err. */
int gl_wproc_spawn(struct ev_loop *loop, const char *worker_exe, const char *log_level,
                   const char *const *device_args, gl_wproc_exit_cb on_exit,
                   gl_wproc_notice_cb on_notice, void *owner, gl_wproc **out, char *err,
                   size_t errlen);

/* Queues a request message (copied). cb is called exactly once. 0, or -1
 * when the worker is gone (cb is then NOT called). */
int gl_wproc_call(gl_wproc *w, const uint8_t *msg, size_t len, gl_wproc_reply_cb cb, void *ctx);

/* SIGKILLs the worker; every pending call gets cb(ctx, status, NULL, 0,
 * why). The object is freed once the process is reaped; the caller must not
 * use w afterwards. */
void gl_wproc_kill(gl_wproc *w, gpulease_status status, const char *why);

/* The worker ends by itself (it said so: a lost shared context): it takes
 * no more calls, the replies it still sends are delivered, and the calls
 * left when it exits get cb(ctx, status, NULL, 0, why), as do those left
 * when it has not exited within a second (it is then killed as by
 * gl_wproc_kill). Its exit callback is not called; the caller must not use
 * w afterwards. */
void gl_wproc_retire(gl_wproc *w, gpulease_status status, const char *why);

/* Calls sent and not answered yet. */
size_t gl_wproc_pending(const gl_wproc *w);

/* Answers every call still waiting whose request acts on lease lease_id
 * (gl_request_peek_lease) with cb(ctx, status, NULL, 0, why) now; the
 * worker's replies to them, if any come, are dropped. For one lease of a
 * worker that serves several (class shared) when it ends. */
void gl_wproc_cancel_lease(gl_wproc *w, uint64_t lease_id, gpulease_status status,
                           const char *why);

/* As gl_wproc_call, for a request the daemon has decoded (decoded, from
 * msg's bytes, borrowed for the call): the worker gets the decoded request
 * beside the message and does not decode it again (GL_IPC_TAG_DECODED). A
 * BATCH's count entries follow it, each decoded (decoded->u.batch.entries,
 * from gl_request_decode_entries; a BATCH without them goes undecoded). -1 when the
 * worker cannot take calls, out of memory, or a pointer of the request
 * lies outside msg. */
int gl_wproc_call_req(gl_wproc *w, const uint8_t *msg, size_t len, const gl_request *decoded,
                      gl_wproc_reply_cb cb, void *ctx);

/* As gl_wproc_call, with file descriptor fd (duplicated; the caller keeps
 * its own) sent beside the message (SCM_RIGHTS): SHM_ATTACH's segment. */
int gl_wproc_call_fd(gl_wproc *w, const uint8_t *msg, size_t len, int fd, gl_wproc_reply_cb cb,
                     void *ctx);

pid_t gl_wproc_pid(const gl_wproc *w);

/* Whether the worker still takes calls: not once it was killed or retired, or once
 * the loop saw it close its end (it exits after a fatal device error),
 * even before it is reaped. */
bool gl_wproc_usable(gl_wproc *w);

/* Hands w to another owner: its exit and notice callbacks from now on (a
 * warm worker of the pool taken by a lease). */
void gl_wproc_set_owner(gl_wproc *w, gl_wproc_exit_cb on_exit, gl_wproc_notice_cb on_notice,
                        void *owner);

/* Starts a worker process without a watcher: *fd_out is the daemon's end
 * of the socketpair (blocking, close-on-exec). For the start-up probe. */
int gl_worker_spawn_raw(const char *worker_exe, const char *log_level,
                        const char *const *device_args, pid_t *pid_out, int *fd_out, char *err,
                        size_t errlen);

/* Marks w as holding one of GPU gpu's isolated CUDA contexts (a warm
 * worker's, an isolated or device lease's) from now until its process is
 * reaped, whoever owns it meanwhile (the pool, a lease, a teardown): the
 * count the daemon's admission holds to its limit (ctx_admit.h). Once per
 * worker; gpu below GPULEASE_MAX_GPUS (else ignored). */
void gl_wproc_count_context(gl_wproc *w, uint32_t gpu);

/* The counted contexts of GPU gpu now: *held those of live workers (not
 * reaped yet), *ending those of them being torn down (killed or retired,
 * not reaped yet); either pointer may be NULL. 0 for a gpu out of range. */
void gl_wproc_contexts(uint32_t gpu, unsigned *held, unsigned *ending);

/* The counted contexts of GPU gpu being made now: workers that have not
 * answered their first request (WORKER_WARM or WORKER_INIT) and are not
 * ending. 0 for a gpu out of range. */
unsigned gl_wproc_contexts_starting(uint32_t gpu);

/* cb(user, gpu) runs (on the loop) each time a counted worker of GPU gpu
 * has been reaped, its context gone, and each time one that was starting
 * answers its first request; NULL cb for none. One watch for the
 * process. */
void gl_wproc_set_context_watch(void (*cb)(void *user, uint32_t gpu), void *user);

/* Number of live worker objects (spawned, not yet reaped). For tests and
 * metrics. */
size_t gl_wproc_live_count(void);

#endif /* GL_DAEMON_WORKER_PROC_H */
