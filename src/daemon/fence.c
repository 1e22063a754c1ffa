/* fence.c - see fence.h. */
#include "daemon/fence.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "daemon/daemon.h"
#include "daemon/worker_proc.h"
#include "gpu/nvml.h"

#define MAX_WATCHES 256
#define POLL_S 0.25

/* An ended worker whose memory NVML still lists. */
typedef struct watch {
  uint32_t gpu;
  pid_t pid;
  double deadline;
  bool counted; /* past its deadline: counts in held[] */
} watch;

struct gl_fence {
  gl_daemon *d;
  double timeout_s;
  ev_timer poll;
  watch w[MAX_WATCHES];
  size_t n;
  uint32_t stuck[GPULEASE_MAX_GPUS]; /* workers that did not exit in time */
  uint32_t held[GPULEASE_MAX_GPUS];  /* exited, memory still listed past the deadline */
};

static void fence(gl_fence *f, uint32_t gpu, const char *why) {
  if (!gl_lease_table_fenced(f->d->leases, gpu))
    GL_ERROR("GPU %" PRIu32 " fenced: %s; no new leases until its memory comes back or an "
             "admin clears it (gpulease admin unfence %" PRIu32 ")",
             gpu, why, gpu);
  gl_lease_table_fence(f->d->leases, gpu, why);
}

/* Ends the fence when nothing holds it any more. */
static void settle(gl_fence *f, uint32_t gpu) {
  if (f->stuck[gpu] || f->held[gpu] || !gl_lease_table_fenced(f->d->leases, gpu)) return;
  GL_WARN("GPU %" PRIu32 ": the memory of its ended workers came back; fence lifted", gpu);
  gl_lease_table_unfence(f->d->leases, gpu);
}

/* 0: pid still holds memory on gpu (*mib), 1: it does not, -1: cannot tell. */
static int nvml_holds(gl_fence *f, uint32_t gpu, pid_t pid, uint64_t *bytes) {
  const gl_node *n = &f->d->node;
  if (!n->nvml || gpu >= n->gpu_count) return -1;
  return gl_nvml_process_memory(n->nvml, n->gpus[gpu].uuid, (unsigned)pid, bytes);
}

static void on_poll(struct ev_loop *loop, ev_timer *t, int revents) {
  (void)revents;
  gl_fence *f = t->data;
  double now = ev_now(loop);
  for (size_t i = 0; i < f->n;) {
    watch *w = &f->w[i];
    uint64_t bytes = 0;
    if (nvml_holds(f, w->gpu, w->pid, &bytes) != 0) { /* gone (or NVML cannot tell) */
      uint32_t gpu = w->gpu;
      if (w->counted) f->held[gpu]--;
      f->w[i] = f->w[--f->n];
      settle(f, gpu);
      continue;
    }
    if (!w->counted && now >= w->deadline) {
      w->counted = true;
      f->held[w->gpu]++;
      char why[200];
      snprintf(why, sizeof why,
               "NVML still lists %" PRIu64 " MiB of the ended worker PID %d %.0f s after its "
               "teardown",
               bytes >> 20, (int)w->pid, f->timeout_s);
      fence(f, w->gpu, why);
    }
    i++;
  }
  if (!f->n) ev_timer_stop(loop, t);
}

static void on_teardown(void *user, uint32_t gpu, pid_t pid, bool exited, bool stuck) {
  gl_fence *f = user;
  if (gpu >= GPULEASE_MAX_GPUS) return;
  if (!exited) {
    f->stuck[gpu]++;
    char why[160];
    snprintf(why, sizeof why, "its worker PID %d did not exit within %.0f s of SIGKILL",
             (int)pid, f->timeout_s);
    fence(f, gpu, why);
    return;
  }
  if (stuck && f->stuck[gpu]) f->stuck[gpu]--;
  /* Reaped: the driver should now give its memory back; NVML says when. */
  if (nvml_holds(f, gpu, pid, NULL) == 0 && f->n < MAX_WATCHES) {
    f->w[f->n++] = (watch){.gpu = gpu, .pid = pid,
                           .deadline = ev_now(f->d->loop) + f->timeout_s};
    if (!ev_is_active(&f->poll)) ev_timer_again(f->d->loop, &f->poll);
  }
  settle(f, gpu);
}

gl_fence *gl_fence_new(gl_daemon *d, double timeout_s) {
  gl_fence *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->d = d;
  f->timeout_s = timeout_s;
  ev_init(&f->poll, on_poll);
  f->poll.repeat = POLL_S;
  f->poll.data = f;
  gl_wproc_set_teardown_watch(timeout_s, on_teardown, f);
  return f;
}

void gl_fence_free(gl_fence *f) {
  if (!f) return;
  ev_timer_stop(f->d->loop, &f->poll);
  gl_wproc_set_teardown_watch(f->timeout_s, NULL, NULL);
  free(f);
}

void gl_fence_set_timeout(gl_fence *f, double timeout_s) {
  if (!f || timeout_s <= 0) return;
  f->timeout_s = timeout_s;
  gl_wproc_set_teardown_watch(timeout_s, on_teardown, f);
}
