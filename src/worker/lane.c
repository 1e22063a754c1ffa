/*
 * lane.c - see lane.h. A mutex-protected FIFO and a condition variable.
 *
 * An idle lane spins for GL_LANE_SPIN_NS, watching for work, before it
 * sleeps on the condition variable: a session's next op usually comes
 * within microseconds (a launch, then its sync), and waking a sleeping
 * thread costs more than that. The thread takes every queued job at once
 * and runs them in order; a pusher signals only a lane that sleeps.
 */
#include "worker/lane.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "common/lat.h"
#include "common/util.h"

/* How long an idle lane watches for work before it sleeps. */
#define GL_LANE_SPIN_NS 100000ull

struct gl_lane {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  gl_job *head, *tail;
  bool stop;
  bool sleeping;        /* in pthread_cond_wait: a push must signal */
  atomic_bool has_work; /* head != NULL or stop, for the spinning thread */
  gl_lane_run_fn run;
  void *ctx;
};

void gl_job_free(gl_job *job) {
  if (!job) return;
  if (job->release) job->release(job);
  free(job->entries);
  free(job->msg);
  free(job);
}

static void spin_for_work(gl_lane *l) {
  uint64_t until = gl_mono_ns() + GL_LANE_SPIN_NS;
  unsigned n = 0;
  while (!atomic_load_explicit(&l->has_work, memory_order_acquire)) {
    /* Mostly PAUSE (a job is seen within ~0.1 us); now and then the clock
     * and a yield, for machines with fewer cores than spinning threads. */
    if ((++n & 63) == 0) {
      if (gl_mono_ns() > until) return;
      sched_yield();
    }
    gl_cpu_relax();
  }
}

static void *lane_main(void *arg) {
  gl_lane *l = arg;
  for (;;) {
    spin_for_work(l);
    pthread_mutex_lock(&l->mu);
    while (!l->head && !l->stop) {
      l->sleeping = true;
      pthread_cond_wait(&l->cv, &l->mu);
      l->sleeping = false;
    }
    if (l->stop) {
      pthread_mutex_unlock(&l->mu);
      break;
    }
    gl_job *chain = l->head;
    l->head = l->tail = NULL;
    atomic_store_explicit(&l->has_work, false, memory_order_relaxed);
    pthread_mutex_unlock(&l->mu);
    while (chain) {
      gl_job *j = chain;
      chain = j->next;
      j->next = NULL;
      GL_LAT(GL_LAT_W_RUN);
      l->run(l->ctx, j);
      if (chain && atomic_load_explicit(&l->has_work, memory_order_acquire)) {
        pthread_mutex_lock(&l->mu);
        bool stop = l->stop;
        pthread_mutex_unlock(&l->mu);
        if (stop) { /* the rest never runs */
          while (chain) {
            gl_job *n = chain->next;
            gl_job_free(chain);
            chain = n;
          }
        }
      }
    }
  }
  return NULL;
}

gl_lane *gl_lane_start(gl_lane_run_fn run, void *ctx) {
  gl_lane *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->run = run;
  l->ctx = ctx;
  atomic_init(&l->has_work, false);
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
  atomic_store_explicit(&l->has_work, true, memory_order_release);
  if (l->sleeping) pthread_cond_signal(&l->cv);
  pthread_mutex_unlock(&l->mu);
}

void gl_lane_request_stop(gl_lane *l) {
  pthread_mutex_lock(&l->mu);
  l->stop = true;
  atomic_store_explicit(&l->has_work, true, memory_order_release);
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
