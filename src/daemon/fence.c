/*
 * fence.c - see fence.h. A record per teardown, from the kill until the
 * process is reaped and its memory is back, checked by one timer every
 * POLL_S while any is under way: the deadline (teardown.h) against the
 * time since the kill, and past it the memory (worker_mem.h).
 */
#include "daemon/fence.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "daemon/daemon.h"
#include "daemon/teardown.h"
#include "daemon/worker_mem.h"
#include "daemon/worker_proc.h"

#define POLL_S 0.1

/* One worker's teardown. */
typedef struct watch {
  uint32_t gpu;
  pid_t pid;
  double begun;   /* ev_now when the daemon let it go */
  unsigned peak;  /* most of its GPU's teardowns under way at once since */
  bool reaped;    /* the process has exited and been reaped */
  bool warned;    /* late with its memory back: said so once */
  bool fencing;   /* holds its GPU's fence */
} watch;

struct gl_fence {
  gl_daemon *d;
  gl_teardown *td;
  ev_timer poll;
  watch *w;
  size_t n, cap;
  uint32_t holding[GPULEASE_MAX_GPUS]; /* records fencing each GPU */
};

unsigned gl_fence_watching(const gl_fence *f) { return f ? (unsigned)f->n : 0; }

/* Ends the fence when no record holds it any more. */
static void settle(gl_fence *f, uint32_t gpu) {
  if (f->holding[gpu] || !gl_lease_table_fenced(f->d->leases, gpu)) return;
  GL_WARN("GPU %" PRIu32 ": the memory of its ended workers came back; fence lifted", gpu);
  gl_lease_table_unfence(f->d->leases, gpu);
}

/* w is past its deadline of timeout_ms, waited_ms after its kill, and its
 * memory is held (m): its GPU is fenced, and the ERROR says why. */
static void fence_for(gl_fence *f, watch *w, const gl_worker_mem *m, double waited_ms,
                      uint32_t timeout_ms) {
  w->fencing = true;
  f->holding[w->gpu]++;
  gl_teardown_limits lim = gl_teardown_get_limits(f->td);
  unsigned others = w->peak > 1 ? w->peak - 1 : 0;
  char why[256], mem[300];
  if (w->reaped)
    snprintf(why, sizeof why,
             "its worker PID %d exited but its memory is not back %.0f ms after SIGKILL "
             "(timeout %" PRIu32 " ms, %u worker(s) tearing down)",
             (int)w->pid, waited_ms, timeout_ms, w->peak);
  else
    snprintf(why, sizeof why,
             "its worker PID %d did not exit within %" PRIu32 " ms of SIGKILL and its memory "
             "is not back (%u worker(s) tearing down)",
             (int)w->pid, timeout_ms, w->peak);
  gl_worker_mem_describe(m, mem, sizeof mem);
  bool first = !gl_lease_table_fenced(f->d->leases, w->gpu);
  GL_ERROR("GPU %" PRIu32 " %s: its worker PID %d %s %.0f ms after SIGKILL, past its timeout "
           "of %" PRIu32 " ms (%" PRIu32 " ms + %" PRIu32 " ms for each of the %u other "
           "worker(s) tearing down with it; %u tearing down now, measured pace %.0f ms a "
           "context); %s; no new leases until its memory comes back or an admin clears it "
           "(gpulease admin unfence %" PRIu32 ")",
           w->gpu, first ? "fenced" : "stays fenced", (int)w->pid,
           w->reaped ? "exited but its memory is not back" : "has not exited", waited_ms,
           timeout_ms, lim.exit_base_ms, gl_teardown_step_ms(f->td, w->gpu), others,
           gl_teardown_in_flight(f->td, w->gpu), gl_teardown_pace_ms(f->td, w->gpu), mem,
           w->gpu);
  if (first) gl_lease_table_fence(f->d->leases, w->gpu, why);
}

/* The memory of w is back: it no longer holds a fence. */
static void unhold(gl_fence *f, watch *w) {
  if (!w->fencing) return;
  w->fencing = false;
  f->holding[w->gpu]--;
  settle(f, w->gpu);
}

/* Checks record i; returns false when it was removed. */
static bool check(gl_fence *f, size_t i, double now) {
  watch *w = &f->w[i];
  if (!w->reaped) {
    unsigned cur = gl_teardown_in_flight(f->td, w->gpu);
    if (cur > w->peak) w->peak = cur;
  }
  uint32_t timeout_ms = gl_teardown_timeout_ms(f->td, w->gpu, GL_TEARDOWN_EXIT, w->peak);
  double waited_ms = (now - w->begun) * 1000.0;
  bool due = waited_ms >= timeout_ms || w->warned || w->fencing; /* once due, it stays */
  if (!due && !w->reaped) return true;
  gl_worker_mem m;
  if (gl_worker_mem_check(&f->d->node, w->gpu, w->pid, w->reaped, &m)) {
    if (due && !w->fencing) fence_for(f, w, &m, waited_ms, timeout_ms);
    return true;
  }
  if (w->reaped) { /* exited, memory back: done */
    unhold(f, w);
    f->w[i] = f->w[--f->n];
    return false;
  }
  /* Still exiting, but its memory is back: no fence. */
  if (!w->warned) {
    char mem[300];
    gl_worker_mem_describe(&m, mem, sizeof mem);
    GL_WARN("GPU %" PRIu32 ": worker PID %d has not exited %.0f ms after SIGKILL (timeout %" PRIu32
            " ms, %u worker(s) tearing down), but its memory is back (%s): not fenced",
            w->gpu, (int)w->pid, waited_ms, timeout_ms, w->peak, mem);
    w->warned = true;
  }
  unhold(f, w);
  return true;
}

static void on_poll(struct ev_loop *loop, ev_timer *t, int revents) {
  (void)revents;
  gl_fence *f = t->data;
  double now = ev_now(loop);
  for (size_t i = 0; i < f->n;)
    if (check(f, i, now)) i++;
  if (!f->n) ev_timer_stop(loop, t);
}

/* The record of pid's teardown not reaped yet (a reaped one whose memory
 * NVML still lists may share the PID with a new worker's). */
static watch *find_unreaped(gl_fence *f, pid_t pid) {
  for (size_t i = 0; i < f->n; i++)
    if (f->w[i].pid == pid && !f->w[i].reaped) return &f->w[i];
  return NULL;
}

static void begin(gl_fence *f, uint32_t gpu, pid_t pid) {
  double now = ev_now(f->d->loop);
  unsigned cur = gl_teardown_begin(f->td, gpu, now);
  if (f->n == f->cap) {
    size_t ncap = f->cap ? f->cap * 2 : 64;
    watch *nw = realloc(f->w, ncap * sizeof *nw);
    if (!nw) { /* unwatched: never fences, never counts */
      GL_ERROR("out of memory watching the teardown of worker PID %d", (int)pid);
      gl_teardown_end(f->td, gpu, now, false);
      return;
    }
    f->w = nw;
    f->cap = ncap;
  }
  /* Those already under way on the GPU wait behind one more. */
  for (size_t i = 0; i < f->n; i++)
    if (f->w[i].gpu == gpu && !f->w[i].reaped && f->w[i].peak < cur) f->w[i].peak = cur;
  f->w[f->n++] = (watch){.gpu = gpu, .pid = pid, .begun = now, .peak = cur};
  if (!ev_is_active(&f->poll)) ev_timer_again(f->d->loop, &f->poll);
}

static void on_teardown(void *user, uint32_t gpu, pid_t pid, bool exited) {
  gl_fence *f = user;
  if (gpu >= GPULEASE_MAX_GPUS) return; /* a worker of no GPU (the probe) */
  if (!exited) {
    begin(f, gpu, pid);
    return;
  }
  watch *w = find_unreaped(f, pid);
  if (!w) return;
  w->reaped = true;
  gl_teardown_end(f->td, gpu, ev_now(f->d->loop), true);
  check(f, (size_t)(w - f->w), ev_now(f->d->loop)); /* gone at once when its memory is back */
}

gl_fence *gl_fence_new(gl_daemon *d, gl_teardown *td) {
  gl_fence *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->d = d;
  f->td = td;
  ev_init(&f->poll, on_poll);
  f->poll.repeat = POLL_S;
  f->poll.data = f;
  gl_wproc_set_teardown_watch(on_teardown, f);
  return f;
}

void gl_fence_free(gl_fence *f) {
  if (!f) return;
  ev_timer_stop(f->d->loop, &f->poll);
  gl_wproc_set_teardown_watch(NULL, NULL);
  free(f->w);
  free(f);
}
