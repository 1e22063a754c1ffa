/*
 * session_ops.h - what session_ops.c (memory, modules, LAUNCH, SYNC, the
 * dispatch) shares with session_exec.c (BURST, events, graphs) and
 * submit.c (GPU_SUBMIT, the implicit session's op): the session's failure,
 * its handles and ranges, a launch's checks and the worker's one launch
 * (gl_sop_launch). All run on the session's lane. Internal to the worker.
 */
#ifndef GL_WORKER_SESSION_OPS_H
#define GL_WORKER_SESSION_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "worker/session.h"

/* ---- the failure ---- */

/* Makes (op, seq, st, msg) the session's failure unless it has one. */
void gl_sop_set_failure(gl_wsession *s, uint16_t op, uint64_t seq, gpulease_status st,
                        const char *msg);
/* After a backend call: notices a lost context. */
void gl_sop_after_backend(gl_wsession *s);
/* A backend call of op failed with st (message in s->err): the session's
 * failure, a fault found while waiting put down to the launch behind it. */
void gl_sop_fail_from_backend(gl_wsession *s, uint16_t op, uint64_t seq, gpulease_status st);
/* Writes the message into s->err and returns st. */
gpulease_status gl_sop_errf(gl_wsession *s, gpulease_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Forgets the session's failure (SYNC's acknowledgement; the implicit
 * session's after each GPU_SUBMIT, which has no SYNC). */
void gl_sop_clear_failure(gl_wsession *s);
/* Waits for the stream (SYNC's wait); a failure is set (*failed = true). */
gpulease_status gl_sop_wait_stream(gl_wsession *s, uint16_t op, uint64_t seq, bool *failed);

/* ---- handles and ranges ---- */

gpulease_status gl_sop_get_buffer(gl_wsession *s, uint64_t h, gl_wbuffer **out);
/* offset + len within the buffer (h names it in messages). */
gpulease_status gl_sop_in_buffer(gl_wsession *s, const gl_wbuffer *b, uint64_t h, uint64_t offset,
                                 uint64_t len);
/* A new handle of kind for obj in m; 0 when out of memory. */
uint64_t gl_sop_put_handle(gl_wsession *s, gl_hmap *m, unsigned kind, void *obj);

/* ---- launches ---- */

/* A launch's grid and block dimensions: each >= 1, at most 1024 threads. */
gpulease_status gl_sop_check_dims(gl_wsession *s, const gl_launch_req *r);
/* The launch's function, its dimensions checked. */
gpulease_status gl_sop_launch_function(gl_wsession *s, const gl_launch_req *r, gl_wfunction **fo);
/* A buffer parameter's device address, checked against its buffer. */
gpulease_status gl_sop_param_pointer(gl_wsession *s, size_t k, const gl_launch_param *p,
                                     uint64_t *ptr);
/* The parameter sizes a launch passes against the kernel's, when known. */
gpulease_status gl_sop_check_param_sizes(gl_wsession *s, const gl_wfunction *f,
                                         const size_t *sizes, size_t k);
/* Checks a launch and builds its arguments in s->args (count in *n):
 * LAUNCH's checks, for a launch recorded in a graph. */
gpulease_status gl_sop_prepare_launch(gl_wsession *s, const gl_launch_req *r, gl_wfunction **fo,
                                      size_t *n);
/* The backend's launch of r after gl_sop_prepare_launch (f, n args in
 * s->args). */
void gl_sop_launch_of(gl_wsession *s, const gl_launch_req *r, const gl_wfunction *f, size_t n,
                      gl_launch *l);

/* GPU_SUBMIT's way through gl_sop_launch: the kernel run and waited for on
 * the backend's synchronous path (write, launch_read or launch then read:
 * the backend's submit stream), between its input and its output. */
typedef struct gl_sop_sync {
  const gl_submit_req *req; /* the GPU_SUBMIT (borrowed): its param list, input, output */
  uint8_t *out;             /* req->output_size bytes (the caller's), NULL for none */
  uint64_t gpu_time_ns;     /* out: the kernel's device time */
} gl_sop_sync;

/* The one launch of the worker: LAUNCH, LAUNCH_EX and GPU_SUBMIT all come
 * here. Checks r's dimensions, builds the arguments in s->args (from r's
 * param list of buffers and scalars, or with sync from the GPU_SUBMIT's
 * list of region offsets and scalars, or the region's pointer alone),
 * checks them against f's parameter sizes where known, builds the
 * backend's gl_launch (r's cooperative flag and cluster included) and runs
 * it:
 *   - job (sync NULL): LAUNCH or LAUNCH_EX (op), queued on s->stream
 *     (launch_async) and answered here, OK or with the error; the failure
 *     is the session's (a fault on a device that runs kernels inline shows
 *     at the next SYNC, as documented for LAUNCH). Returns the status it
 *     answered with.
 *   - sync (job NULL): GPU_SUBMIT: writes req->input at req->input_offset
 *     (backend write), runs the kernel and waits for it, reading
 *     req->output_size bytes at req->output_offset into sync->out: with
 *     one wait through launch_read where the backend offers it, else
 *     launch then read; sync->gpu_time_ns receives the kernel's time.
 *     Nothing is answered: on failure the status is returned with s->err
 *     filled and made the session's failure (the caller checks for a lost
 *     context once it has added what the kernel printed).
 * f, r, job and sync stay the caller's (job is answered, not freed). A
 * GPU_SUBMIT's dimensions were checked before, with its own wording
 * (gl_submit_check): here they always pass. Errors: INVALID_ARGUMENT (dimensions,
 * argument count or sizes, buffer offsets), INVALID_HANDLE (a buffer),
 * INTERNAL (out of memory), and the backend's (WRITE_FAILED,
 * LAUNCH_FAILED, READ_FAILED, UNSUPPORTED...). */
gpulease_status gl_sop_launch(gl_wsession *s, uint16_t op, const gl_launch_req *r,
                              const gl_wfunction *f, gl_job *job, gl_sop_sync *sync);

/* Finds kernel name in the backend's module and fills the new f (its
 * name, the backend's function, its parameter sizes where the backend
 * reports them; f->handle, mod and next are the caller's), as FUNC_INFO
 * does for a session. LAUNCH_FAILED (the backend's message) when the
 * module has no such kernel; the backend's status otherwise. */
gpulease_status gl_sop_function_find(gl_wsession *s, void *module, const char *name,
                                     size_t name_len, gl_wfunction *f);

/* Before a launch of f: its local memory charged to the lease (lmem.h),
 * the daemon told when the charge grew (held.h). CAPACITY_EXCEEDED with
 * s->err naming what it needs and what the lease has. */
gpulease_status gl_sop_cover_local(gl_wsession *s, const gl_wfunction *f);
/* Checks every launch of a BURST and packs its parameters into the
 * session's burst area: fns[i], ls[i] are launch i; *bad the failing one. */
gpulease_status gl_sop_prepare_burst(gl_wsession *s, const gl_burst_req *b, void **fns,
                                     gl_launch *ls, size_t *bad);
/* MEMSET's and MEM_COPY's checks: the region offsets they act on. */
gpulease_status gl_sop_memset_check(gl_wsession *s, const gl_memset_req *r, uint64_t *offset);
gpulease_status gl_sop_copy_check(gl_wsession *s, const gl_mem_copy_req *r, uint64_t *dst,
                                  uint64_t *src);

/* ---- session_tmap.c ---- */

/* TENSORMAP_ENCODE: r's buffer and extent checked, the map encoded by the
 * backend into resp->u.tmap. */
gpulease_status gl_sop_tensormap(gl_wsession *s, const gl_tmap_req *r, gl_response *resp);

/* ---- session_exec.c ---- */

/* BURST, answered (and failed) by itself. */
void gl_sop_burst(gl_wsession *s, gl_job *job);
gpulease_status gl_sop_event_record(gl_wsession *s, const gl_event_req *r);
gpulease_status gl_sop_event_elapsed(gl_wsession *s, const gl_event_req *r, gl_response *resp,
                                     bool *failed);
/* While the session records a graph: takes job when it is recorded or
 * refused (answered and freed; true), or leaves it to the usual dispatch
 * (false: ops that do not touch the stream). */
bool gl_sop_graph_capture(gl_wsession *s, gl_job *job);
/* GRAPH_BEGIN .. GRAPH_DESTROY, answered by itself; frees job. */
void gl_sop_graph(gl_wsession *s, gl_job *job);
/* Frees the session's graphs and any recording (SESSION_CLOSE). */
void gl_sop_graphs_free(gl_wsession *s);

#endif
