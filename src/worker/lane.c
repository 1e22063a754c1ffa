/* lane.c - see lane.h. A mutex-protected FIFO and a condition variable. */
#include "worker/lane.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

struct gl_lane {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  gl_job *head, *tail;
  bool stop;
  gl_lane_run_fn run;
  void *ctx;
};

void gl_job_free(gl_job *job) {
  if (!job) return;
  if (job->release) job->release(job);
  free(job->msg);
  free(job);
}

static void *lane_main(void *arg) {
  gl_lane *l = arg;
  pthread_mutex_lock(&l->mu);
  for (;;) {
    while (!l->head && !l->stop) pthread_cond_wait(&l->cv, &l->mu);
    if (l->stop) break;
    gl_job *j = l->head;
    l->head = j->next;
    if (!l->head) l->tail = NULL;
    j->next = NULL;
    pthread_mutex_unlock(&l->mu);
    l->run(l->ctx, j);
    pthread_mutex_lock(&l->mu);
  }
  pthread_mutex_unlock(&l->mu);
  return NULL;
}

gl_lane *gl_lane_start(gl_lane_run_fn run, void *ctx) {
  gl_lane *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->run = run;
  l->ctx = ctx;
  pthread_mutex_init(&l->mu, NULL);
  pthread_cond_init(&l->cv, NULL);
  if (pthread_create(&l->thread, NULL, lane_main, l) != 0) {
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
    return NULL;
  }
  return l;
}

void gl_lane_push(gl_lane *l, gl_job *job) {
  job->next = NULL;
  pthread_mutex_lock(&l->mu);
  if (l->tail) l->tail->next = job;
  else l->head = job;
  l->tail = job;
  pthread_cond_signal(&l->cv);
  pthread_mutex_unlock(&l->mu);
}

void gl_lane_request_stop(gl_lane *l) {
  pthread_mutex_lock(&l->mu);
  l->stop = true;
  pthread_cond_signal(&l->cv);
  pthread_mutex_unlock(&l->mu);
}

static void lane_free(gl_lane *l) {
  for (gl_job *j = l->head; j;) {
    gl_job *n = j->next;
    gl_job_free(j);
    j = n;
  }
  pthread_mutex_destroy(&l->mu);
  pthread_cond_destroy(&l->cv);
  free(l);
}

void gl_lane_stop(gl_lane *l) {
  if (!l) return;
  gl_lane_request_stop(l);
  pthread_join(l->thread, NULL);
  lane_free(l);
}

bool gl_lane_stop_within(gl_lane *l, unsigned timeout_ms) {
  if (!l) return true;
  gl_lane_request_stop(l);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += timeout_ms / 1000;
  ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  if (pthread_timedjoin_np(l->thread, NULL, &ts) != 0) return false;
  lane_free(l);
  return true;
}
