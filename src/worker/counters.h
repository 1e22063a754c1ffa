/*
 * counters.h - counts the workers keep for the daemon's metrics: the
 * module cache (an image already loaded in the lease's context) and the
 * JIT cache on disk (PTX compiled before). They live in one shared memory
 * page the daemon makes (a memfd) and every worker inherits and maps, so
 * that each worker adds to the node's totals as it goes, lock-free, and
 * the daemon reads them when it renders /metrics, whatever path (GPU_SUBMIT,
 * a session's MODULE_LOAD) loaded the module and however the worker ended.
 * A worker could write nonsense there; the page is only ever read as
 * numbers to print.
 */
#ifndef GL_WORKER_COUNTERS_H
#define GL_WORKER_COUNTERS_H

#include <stdint.h>

/* What is counted. */
typedef enum gl_wcount {
  GL_WC_MODULE_HIT,  /* module cache: the image was loaded in this context already */
  GL_WC_MODULE_MISS, /* module cache: loaded now */
  GL_WC_JIT_HIT,     /* JIT cache: a compiled image for this PTX and device found on disk */
  GL_WC_JIT_MISS,    /* JIT cache: none found (compiled now) */
  GL_WC_JIT_STORE,   /* JIT cache: a compiled image written */
  GL_WC_N
} gl_wcount;

/* The environment variable that hands the page's descriptor to workers. */
#define GL_WORKER_COUNTERS_ENV "GL_WORKER_COUNTERS_FD"

/* Daemon: makes the page and leaves its descriptor open across exec, named
 * in the environment for the workers it starts. 0, or -1 (the counts then
 * stay 0). */
int gl_worker_counters_create(void);

/* Worker: maps the page named in the environment and closes the
 * descriptor; without one, counts go nowhere. */
void gl_worker_counters_attach(void);

/* Adds one to what. Thread-safe; a no-op without a page. */
void gl_worker_count(gl_wcount what);

/* The count of what so far, all workers together (0 without a page). */
uint64_t gl_worker_counter(gl_wcount what);

#endif /* GL_WORKER_COUNTERS_H */
