/*
 * cuda_event.c - the CUDA backend's events: EVENT_RECORD on a session's
 * stream, the time between two, their destruction.
 *
 * Events (EVENT_RECORD): cuEventCreate (CU_EVENT_DEFAULT: timing on) at
 * first record, cuEventRecord on the stream; elapsed waits for the end
 * event and converts cuEventElapsedTime's milliseconds to nanoseconds.
 */
#include <stdbool.h>
#include <stdint.h>

#include "backend/cuda_internal.h"

gpulease_status gl_cuda__event_record(gl_backend *b, void *stream, void **event, char *err,
                                      size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUevent e = (CUevent)*event;
  bool created = false;
  const char *what = "cuEventRecord: cuCtxSetCurrent";
  CUresult r = gl_cuda__make_current(c);
  if (r == CUDA_SUCCESS && !e) {
    what = "cuEventCreate";
    r = c->cu.cuEventCreate(&e, CU_EVENT_DEFAULT); /* timing enabled */
    created = r == CUDA_SUCCESS;
  }
  if (r == CUDA_SUCCESS) {
    what = "cuEventRecord";
    r = c->cu.cuEventRecord(e, cstream(stream));
  }
  if (r == CUDA_SUCCESS) {
    *event = e;
    return GPULEASE_OK;
  }
  if (created) c->cu.cuEventDestroy(e);
  return gl_cuda__stream_fail(c, r, what, GPULEASE_INTERNAL, err, errlen);
}

gpulease_status gl_cuda__event_elapsed(gl_backend *b, void *start, void *end, uint64_t *ns,
                                       char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  float ms = 0.0f;
  const char *what = "cuEventElapsedTime: cuCtxSetCurrent";
  CUresult r = gl_cuda__make_current(c);
  if (r == CUDA_SUCCESS) {
    what = "cuEventSynchronize (the end event)";
    r = c->cu.cuEventSynchronize((CUevent)end);
  }
  if (r == CUDA_SUCCESS) {
    what = "cuEventElapsedTime";
    r = c->cu.cuEventElapsedTime(&ms, (CUevent)start, (CUevent)end);
  }
  if (r != CUDA_SUCCESS) return gl_cuda__stream_fail(c, r, what, GPULEASE_INTERNAL, err, errlen);
  *ns = ms > 0.0f ? (uint64_t)((double)ms * 1e6 + 0.5) : 0;
  return GPULEASE_OK;
}

void gl_cuda__event_destroy(gl_backend *b, void *event) {
  cuda_backend *c = as_cuda(b);
  if (!event || is_lost(c)) return; /* the worker exits */
  if (gl_cuda__make_current(c) == CUDA_SUCCESS) c->cu.cuEventDestroy((CUevent)event);
}
