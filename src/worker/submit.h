/*
 * submit.h - GPU_SUBMIT (docs/protocol.md, "GPU_SUBMIT") as an implicit
 * one-op session: each GPU_SUBMIT runs, in arrival order, on the lane of
 * its lease's implicit session (session.h), as the session ops it is made
 * of: its module (module_cache.h over the lease's module table), its
 * function, then the one launch of the worker (gl_sop_launch,
 * session_ops.h) with its input and output. Internal to the worker.
 */
#ifndef GL_WORKER_SUBMIT_H
#define GL_WORKER_SUBMIT_H

#include "worker/lane.h"
#include "worker/wk_types.h"

/* Main thread: queues the GPU_SUBMIT job (ownership passes) on lease w's
 * implicit session, starting that session on the lease's first
 * GPU_SUBMIT; its lane answers it. When the session cannot be started
 * (out of memory, no thread) the job is answered INTERNAL here and freed. */
void gl_submit_dispatch(gl_wk *w, gl_job *job);

#endif /* GL_WORKER_SUBMIT_H */
