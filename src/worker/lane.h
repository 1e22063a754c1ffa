/*
 * lane.h - a thread that runs jobs one at a time, in the order queued.
 *
 * The worker gives each session a lane (its ops run in order, while other
 * sessions' lanes run concurrently), and one more to GPU_SUBMIT. A job is a
 * request read from the daemon: its call tag, the message bytes (owned by
 * the job) and the decoded request (borrowing from those bytes).
 */
#ifndef GL_WORKER_LANE_H
#define GL_WORKER_LANE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

typedef struct gl_job {
  struct gl_job *next;
  uint64_t tag;   /* the daemon's call tag, echoed in the reply */
  uint8_t *msg;   /* malloc'd whole message; freed by gl_job_free */
  size_t len;
  gl_request req; /* decoded; borrows from msg */
} gl_job;

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

#endif /* GL_WORKER_LANE_H */
