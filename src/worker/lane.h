/*
 * lane.h - a thread that runs jobs one at a time, in the order queued.
 *
 * The worker gives each session a lane (its ops run in order, while other
 * sessions' lanes run concurrently), a lease's implicit session, which
 * runs its GPU_SUBMITs, included. A job is a
 * request read from the daemon: its call tag, the message bytes (owned by
 * the job) and the decoded request (borrowing from those bytes).
 */
#ifndef GL_WORKER_LANE_H
#define GL_WORKER_LANE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

/* What a job is. */
enum gl_job_kind {
  GL_JOB_REQUEST = 0, /* a request from the daemon, to be answered */
  GL_JOB_GAP = 1,     /* made by the worker: seqs gap_first..gap_last of a
                         session never arrived (no reply) */
};

typedef struct gl_job {
  struct gl_job *next;
  uint64_t tag;   /* the daemon's call tag, echoed in the reply */
  uint8_t *msg;   /* malloc'd whole message; freed by gl_job_free */
  size_t len;
  gl_request req; /* decoded; borrows from msg */
  gl_request *entries; /* a BATCH's entries as the daemon decoded them
                          (req.u.batch.entries; borrow from msg), or NULL;
                          freed by gl_job_free */
  uint8_t kind;   /* enum gl_job_kind */
  /* While held by its session (session.c): an unordered op (seq 0) runs
   * right after the op with seq after_seq, the last op held when it came. */
  uint64_t after_seq;
  uint64_t gap_first, gap_last; /* GL_JOB_GAP */
  /* An op of a BATCH (batch.h): its replies go to the batch's collector. */
  struct gl_wbatch *batch;
  uint16_t batch_index;
  /* Called by gl_job_free before the job is freed (NULL: nothing). */
  void (*release)(struct gl_job *job);
} gl_job;

/* Frees the job and its message, after its release hook. NULL ignored. */
void gl_job_free(gl_job *job);

/* Runs one job on the lane's thread; takes ownership of job. */
typedef void (*gl_lane_run_fn)(void *ctx, gl_job *job);

typedef struct gl_lane gl_lane;

/* Starts a lane whose thread calls run(ctx, job) for each job. NULL when
 * out of memory or no thread could be started. */
gl_lane *gl_lane_start(gl_lane_run_fn run, void *ctx);

/* Queues job (ownership passes to the lane). */
void gl_lane_push(gl_lane *l, gl_job *job);

/* Asks the thread to stop once the job running now (if any) has finished,
 * without running the rest of the queue; returns at once. */
void gl_lane_request_stop(gl_lane *l);

/* Stops the lane (as above), waits for its thread, frees the jobs never
 * run, and frees l. NULL is ignored. */
void gl_lane_stop(gl_lane *l);

/* As gl_lane_stop, but waits at most timeout_ms for the thread. True when
 * the lane stopped and was freed; false when its job is still running (the
 * lane is then left as it is: only a process exit ends it). */
bool gl_lane_stop_within(gl_lane *l, unsigned timeout_ms);

#endif /* GL_WORKER_LANE_H */
