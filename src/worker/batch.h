/*
 * batch.h - a BATCH in the worker (docs/protocol.md, "BATCH").
 *
 * The main thread expands a BATCH into one job per op; the jobs borrow the
 * batch's message and go through the session's order like ops that came
 * one after another. Their replies are not sent: each is kept in the
 * batch's collector, and when the last of its jobs is freed the collector
 * sends one response (the replies in order) behind the BATCH's tag. A job
 * freed unanswered (its lane stopped, the context was lost) leaves the
 * batch unanswered, as a lone op would be.
 */
#ifndef GL_WORKER_BATCH_H
#define GL_WORKER_BATCH_H

#include "worker/lane.h"
#include "worker/wk_types.h"

/* Takes batch_job (a decoded BATCH: its tag and message) and returns its
 * ops as jobs, in order, chained by next (count of them), with ownership;
 * batch_job itself is freed. NULL when out of memory: the BATCH is then
 * answered INTERNAL and freed. */
gl_job *gl_wbatch_expand(gl_wk *w, gl_job *batch_job);

/* Keeps the encoded reply b (taken) of job, an op of a batch. */
void gl_wbatch_put(gl_job *job, gl_buf *b);

/* The same for an OK reply with no result and no message (most LAUNCHes
 * of a batch): nothing is encoded or allocated until the batch answers. */
void gl_wbatch_put_ok(gl_job *job, uint16_t op);

#endif /* GL_WORKER_BATCH_H */
