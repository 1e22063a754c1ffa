/*
 * session_ops.h - what session_ops.c (memory, modules, LAUNCH, SYNC, the
 * dispatch) shares with session_exec.c (BURST, events, graphs): the
 * session's failure, its handles and ranges, and a launch's checks. All run
 * on the session's lane. Internal to the worker.
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
/* Checks a launch and builds its arguments in s->args (count in *n). */
gpulease_status gl_sop_prepare_launch(gl_wsession *s, const gl_launch_req *r, gl_wfunction **fo,
                                      size_t *n);
/* The backend's launch of r after gl_sop_prepare_launch (f, n args in
 * s->args). */
void gl_sop_launch_of(gl_wsession *s, const gl_launch_req *r, const gl_wfunction *f, size_t n,
                      gl_launch *l);
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
