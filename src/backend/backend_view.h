/*
 * backend_view.h - one shared lease's window onto the worker's device.
 *
 * Shared leases live in one worker process and one context (backend.h,
 * open_shared); each has its own range of VRAM from region_add. The worker
 * gives each lease a view: a gl_backend whose region is that range, so the
 * lease's code (submit, sessions, segments) runs unchanged over offsets in
 * [0, bytes).
 */
#ifndef GL_WORKER_BACKEND_VIEW_H
#define GL_WORKER_BACKEND_VIEW_H

#include <pthread.h>
#include <stdint.h>

#include "backend/backend.h"

/* A backend that is a window onto another: every region offset is moved by
 * `offset`, so a shared lease's code sees its own range as [0, bytes). The
 * ops that GPU_SUBMIT uses on the real backend's single submit stream and
 * staging buffer (write, read, launch, launch_read) run under *submit_mu,
 * since several leases' submit threads call them; stream ops (each session
 * has its own stream) and module ops go straight through. A range that
 * leaves [0, bytes) is refused (WRITE_FAILED, READ_FAILED), never
 * forwarded. probe and init of a view are INTERNAL; warm, open_shared,
 * region_add, region_remove and set_limits are NULL. `real` and
 * `submit_mu` are borrowed and must outlive the view. NULL when out of
 * memory. destroy frees the view only. */
gl_backend *gl_backend_view_new(gl_backend *real, uint64_t offset, uint64_t bytes,
                                pthread_mutex_t *submit_mu);

#endif /* GL_WORKER_BACKEND_VIEW_H */
