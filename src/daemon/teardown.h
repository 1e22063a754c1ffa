/*
 * teardown.h - how many workers of each GPU are tearing down at once, and
 * the deadlines that scale with it (docs/security.md, "Fenced GPUs").
 *
 * When many leases end together, the driver tears their contexts down one
 * after another (a context's teardown is serialised in the driver and can
 * take 100 ms or more each when many exit at once): the last worker of a
 * burst of a hundred exits seconds after its SIGKILL without anything being
 * wrong. So a teardown's deadline is not a constant but
 *
 *   timeout(kind) = base(kind) + (n - 1) * step
 *   step          = max(per_context_ms, 2 * pace_ms)
 *
 * where n is the most workers of the GPU tearing down at once while this
 * one does (itself included: a lone teardown gets the base), base is
 * gpuleased --teardown-timeout-ms for a killed worker's exit (default
 * 10000) and 2000 ms for a freed lease's WORKER_RELEASE (a kernel still
 * running), per_context_ms is --teardown-per-context-ms (default 250), and
 * pace_ms the GPU's measured pace: a moving average (weight 1/8) of the
 * time between one teardown ending and the one before it ending (or its
 * own start when none was under way), i.e. how long the driver takes per
 * context under the load of the moment. Releases and exits count together:
 * both wait for the same driver.
 *
 * Pure bookkeeping: the caller gives the times (seconds, any monotonic
 * clock). Not thread-safe: the daemon's loop thread only.
 */
#ifndef GL_DAEMON_TEARDOWN_H
#define GL_DAEMON_TEARDOWN_H

#include <stdbool.h>
#include <stdint.h>

typedef struct gl_teardown gl_teardown;

/* What is waited for. */
typedef enum gl_teardown_kind {
  GL_TEARDOWN_EXIT = 0, /* a killed (or retiring) worker's exit and its memory */
  GL_TEARDOWN_RELEASE   /* a freed lease's WORKER_RELEASE answered */
} gl_teardown_kind;

/* Default base of a release's deadline, and of the per-context step. */
#define GL_TEARDOWN_RELEASE_BASE_MS 2000u
#define GL_TEARDOWN_PER_CONTEXT_MS 250u

/* The figures of the formula above, in milliseconds. */
typedef struct gl_teardown_limits {
  uint32_t exit_base_ms;    /* --teardown-timeout-ms */
  uint32_t release_base_ms; /* GL_TEARDOWN_RELEASE_BASE_MS */
  uint32_t per_context_ms;  /* --teardown-per-context-ms */
} gl_teardown_limits;

/* A table with no teardown under way, for GPUs 0..GPULEASE_MAX_GPUS-1.
 * NULL when out of memory. Free with gl_teardown_free. */
gl_teardown *gl_teardown_new(const gl_teardown_limits *lim);

/* Frees t (NULL ignored). */
void gl_teardown_free(gl_teardown *t);

/* Changes the limits (a reload): every deadline computed from now on uses
 * them. */
void gl_teardown_set_limits(gl_teardown *t, const gl_teardown_limits *lim);

/* The limits in force. */
gl_teardown_limits gl_teardown_get_limits(const gl_teardown *t);

/* One more worker of GPU gpu starts tearing down at now_s. Returns how
 * many of the GPU's are tearing down now, this one included (0 for a GPU
 * out of range, which is not counted). */
unsigned gl_teardown_begin(gl_teardown *t, uint32_t gpu, double now_s);

/* One teardown of GPU gpu (begun with gl_teardown_begin) is over at now_s.
 * measured: it finished (a release answered, a process reaped), so its
 * time feeds the GPU's pace; false for one given up (ended otherwise). */
void gl_teardown_end(gl_teardown *t, uint32_t gpu, double now_s, bool measured);

/* Teardowns of GPU gpu under way now (0 out of range). */
unsigned gl_teardown_in_flight(const gl_teardown *t, uint32_t gpu);

/* The GPU's measured pace, ms a context (0 before any measure). */
double gl_teardown_pace_ms(const gl_teardown *t, uint32_t gpu);

/* The step of the formula for GPU gpu now, ms: max(per_context_ms,
 * 2 * pace). */
uint32_t gl_teardown_step_ms(const gl_teardown *t, uint32_t gpu);

/* The deadline, ms after its start, of a teardown of that kind on GPU gpu
 * that has seen at most peak of the GPU's teardowns under way at once
 * (the current count is taken when larger; 0 counts as 1). At most the
 * base plus an hour. */
uint32_t gl_teardown_timeout_ms(const gl_teardown *t, uint32_t gpu, gl_teardown_kind kind,
                                unsigned peak);

#endif /* GL_DAEMON_TEARDOWN_H */
