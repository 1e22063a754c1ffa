/*
 * wk_reply.h - the worker's replies to the daemon (any thread): each
 * encoded message written behind its call tag under the process's
 * write_mu, a job's to its tag or to its BATCH's collector (batch.h), and
 * the kernel output a reply carries (kout.h).
 */
#ifndef GL_WORKER_WK_REPLY_H
#define GL_WORKER_WK_REPLY_H

#include "worker/wk_types.h"

/* ---- the process's replies (main thread and lanes) ---- */

/* Writes one encoded message behind tag and frees b. 0, or -1 when the
 * daemon is gone. */
int gl_wkproc_send(gl_wkproc *p, uint64_t tag, gl_buf *b);
int gl_wkproc_reply_error(gl_wkproc *p, uint64_t tag, uint16_t op, gpulease_status st,
                          const char *msg);
int gl_wkproc_reply(gl_wkproc *p, uint64_t tag, const gl_response *resp);
/* An OK reply with no result fields. */
int gl_wkproc_reply_ok(gl_wkproc *p, uint64_t tag, uint16_t op);

/* ---- a lease's replies: the same, through its process ---- */

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

/* ---- kernel output (over kout.h) ---- */

/* After a synchronization of the lease's work: moves the kernel output
 * printed since into the lease's pending output (discarded in a shared
 * worker). asserts (may be NULL): receives the lines of failed device-side
 * asserts instead, as gl_kout_drain says. Any thread. */
void gl_wk_kout_collect(gl_wk *w, char *asserts, size_t cap);

/* Takes the lease's pending output into *k for a reply; *owned is the
 * buffer behind k->text, which the caller frees after the reply. A shared
 * worker's: empty, with GL_KOUT_F_DISCARDED. */
void gl_wk_kout_take(gl_wk *w, gl_kout *k, char **owned);

#endif /* GL_WORKER_WK_REPLY_H */
