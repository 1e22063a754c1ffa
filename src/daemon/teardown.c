/* teardown.c - see teardown.h. */
#include "daemon/teardown.h"

#include <stdlib.h>

#include "gpulease/gpulease.h"

/* Weight of a new sample in the pace's moving average. */
#define PACE_WEIGHT 0.125
/* Above the base, a deadline grows by an hour at most. */
#define MAX_EXTRA_MS 3600000ull

typedef struct gpu_td {
  unsigned in_flight;
  double mark_s;  /* the last end, or the start that found none under way */
  double pace_ms; /* 0: not measured yet */
} gpu_td;

struct gl_teardown {
  gl_teardown_limits lim;
  gpu_td g[GPULEASE_MAX_GPUS];
};

gl_teardown *gl_teardown_new(const gl_teardown_limits *lim) {
  gl_teardown *t = calloc(1, sizeof *t);
  if (t) gl_teardown_set_limits(t, lim);
  return t;
}

void gl_teardown_free(gl_teardown *t) { free(t); }

void gl_teardown_set_limits(gl_teardown *t, const gl_teardown_limits *lim) {
  t->lim = *lim;
}

gl_teardown_limits gl_teardown_get_limits(const gl_teardown *t) { return t->lim; }

unsigned gl_teardown_begin(gl_teardown *t, uint32_t gpu, double now_s) {
  if (gpu >= GPULEASE_MAX_GPUS) return 0;
  gpu_td *g = &t->g[gpu];
  if (g->in_flight++ == 0) g->mark_s = now_s;
  return g->in_flight;
}

void gl_teardown_end(gl_teardown *t, uint32_t gpu, double now_s, bool measured) {
  if (gpu >= GPULEASE_MAX_GPUS) return;
  gpu_td *g = &t->g[gpu];
  if (!g->in_flight) return;
  g->in_flight--;
  if (measured) {
    double sample = (now_s - g->mark_s) * 1000.0;
    if (sample < 0) sample = 0;
    g->pace_ms = g->pace_ms > 0 ? g->pace_ms + PACE_WEIGHT * (sample - g->pace_ms) : sample;
  }
  g->mark_s = now_s;
}

unsigned gl_teardown_in_flight(const gl_teardown *t, uint32_t gpu) {
  return gpu < GPULEASE_MAX_GPUS ? t->g[gpu].in_flight : 0;
}

double gl_teardown_pace_ms(const gl_teardown *t, uint32_t gpu) {
  return gpu < GPULEASE_MAX_GPUS ? t->g[gpu].pace_ms : 0;
}

uint32_t gl_teardown_step_ms(const gl_teardown *t, uint32_t gpu) {
  double twice = 2.0 * gl_teardown_pace_ms(t, gpu);
  if (twice > (double)MAX_EXTRA_MS) twice = (double)MAX_EXTRA_MS;
  uint32_t measured = (uint32_t)(twice + 0.5);
  return measured > t->lim.per_context_ms ? measured : t->lim.per_context_ms;
}

uint32_t gl_teardown_timeout_ms(const gl_teardown *t, uint32_t gpu, gl_teardown_kind kind,
                                unsigned peak) {
  uint64_t base = kind == GL_TEARDOWN_RELEASE ? t->lim.release_base_ms : t->lim.exit_base_ms;
  unsigned now = gl_teardown_in_flight(t, gpu);
  if (now > peak) peak = now;
  uint64_t extra = peak > 1 ? (uint64_t)(peak - 1) * gl_teardown_step_ms(t, gpu) : 0;
  if (extra > MAX_EXTRA_MS) extra = MAX_EXTRA_MS;
  uint64_t ms = base + extra;
  return ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}
