/*
 * cuda_stream.c - the CUDA backend's session streams and the copies on
 * them: each session's ops go to its own stream (cuStreamCreate,
 * CU_STREAM_NON_BLOCKING); writes, reads, device-to-device copies, memsets
 * and the stream's sync.
 *
 * A stream handle (void *) is a cuda_stream (cuda_internal.h): the CUstream
 * and the stream's BURST graphs (cuda_burst.c), destroyed with it.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cuda_internal.h"

/* ---- sessions: streams ------------------------------------------------------ */

gpulease_status gl_cuda__stream_create(gl_backend *b, void **stream, char *err,
                                       size_t errlen) {
  cuda_backend *c = as_cuda(b);
  cuda_stream *cs = calloc(1, sizeof *cs);
  if (!cs) {
    snprintf(err, errlen, "cuStreamCreate: out of memory for the stream's state");
    return GPULEASE_INTERNAL;
  }
  CUresult r = gl_cuda__make_current(c);
  if (r == CUDA_SUCCESS) r = c->cu.cuStreamCreate(&cs->s, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    free(cs);
    gl_cuda__cu_msg(c, r, "cuStreamCreate", err, errlen);
    gl_cuda__note_sticky(c, r);
    gl_cuda__lost_note(c, err, errlen);
    return GPULEASE_INTERNAL;
  }
  *stream = cs;
  return GPULEASE_OK;
}

void gl_cuda__stream_destroy(gl_backend *b, void *stream) {
  cuda_backend *c = as_cuda(b);
  cuda_stream *cs = stream;
  if (!cs) return;
  /* After a fault the worker exits: nothing left to wait for or give back
   * but host memory. */
  bool device = !is_lost(c) && gl_cuda__make_current(c) == CUDA_SUCCESS;
  if (device) {
    gl_cuda__note_sticky(c, c->cu.cuStreamSynchronize(cs->s));
    device = !is_lost(c);
  }
  for (size_t i = 0; i < BURST_CACHE; i++) gl_cuda__burst_free(c, &cs->bursts[i], device);
  if (device) c->cu.cuStreamDestroy(cs->s);
  free(cs);
}

/* ---- sessions: copies, sync ------------------------------------------------- */

gpulease_status gl_cuda__write_async(gl_backend *b, void *stream, uint64_t offset,
                                     const void *src, size_t len, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUresult r = gl_cuda__make_current(c);
  /* From pageable memory the driver stages src before returning, so the
   * caller may reuse it at once. */
  if (r == CUDA_SUCCESS)
    r = c->cu.cuMemcpyHtoDAsync(c->region + offset, src, len, cstream(stream));
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  char what[96];
  snprintf(what, sizeof what, "cuMemcpyHtoDAsync(%zu bytes at offset %" PRIu64 ")", len, offset);
  return gl_cuda__stream_fail(c, r, what, GPULEASE_WRITE_FAILED, err, errlen);
}

gpulease_status gl_cuda__read_sync(gl_backend *b, void *stream, uint64_t offset, void *dst,
                                   size_t len, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  char what[96];
  CUresult r = gl_cuda__make_current(c);
  if (r == CUDA_SUCCESS)
    r = c->cu.cuMemcpyDtoHAsync(dst, c->region + offset, len, cstream(stream));
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuMemcpyDtoHAsync(%zu bytes at offset %" PRIu64 ")", len,
             offset);
    return gl_cuda__stream_fail(c, r, what, GPULEASE_READ_FAILED, err, errlen);
  }
  /* dst is pageable: the copy is done when the stream is. */
  r = c->cu.cuStreamSynchronize(cstream(stream));
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuStreamSynchronize (reading %zu bytes at offset %" PRIu64 ")",
             len, offset);
    return gl_cuda__stream_fail(c, r, what, GPULEASE_READ_FAILED, err, errlen);
  }
  return GPULEASE_OK;
}

gpulease_status gl_cuda__copy_async(gl_backend *b, void *stream, uint64_t dst_offset,
                                    uint64_t src_offset, size_t len, char *err,
                                    size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUresult r = gl_cuda__make_current(c);
  if (r == CUDA_SUCCESS)
    r = c->cu.cuMemcpyDtoDAsync(c->region + dst_offset, c->region + src_offset, len,
                                cstream(stream));
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  char what[128];
  snprintf(what, sizeof what,
           "cuMemcpyDtoDAsync(%zu bytes from offset %" PRIu64 " to offset %" PRIu64 ")", len,
           src_offset, dst_offset);
  return gl_cuda__stream_fail(c, r, what, GPULEASE_WRITE_FAILED, err, errlen);
}

gpulease_status gl_cuda__memset_async(gl_backend *b, void *stream, uint64_t offset,
                                      unsigned element_size, uint32_t value, size_t count,
                                      char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUdeviceptr dst = c->region + offset;
  CUstream s = cstream(stream);
  CUresult r = gl_cuda__make_current(c);
  if (r == CUDA_SUCCESS) {
    switch (element_size) {
    case 1:
      r = c->cu.cuMemsetD8Async(dst, (unsigned char)value, count, s);
      break;
    case 2:
      r = c->cu.cuMemsetD16Async(dst, (unsigned short)value, count, s);
      break;
    case 4:
      r = c->cu.cuMemsetD32Async(dst, value, count, s);
      break;
    default:
      snprintf(err, errlen, "memset element size %u: must be 1, 2 or 4", element_size);
      return GPULEASE_WRITE_FAILED;
    }
  }
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  char what[96];
  snprintf(what, sizeof what, "cuMemsetD%uAsync(%zu elements at offset %" PRIu64 ")",
           element_size * 8, count, offset);
  return gl_cuda__stream_fail(c, r, what, GPULEASE_WRITE_FAILED, err, errlen);
}

gpulease_status gl_cuda__stream_sync(gl_backend *b, void *stream, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUresult r = gl_cuda__make_current(c);
  if (r == CUDA_SUCCESS) r = c->cu.cuStreamSynchronize(cstream(stream));
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  gl_cuda__cu_msg(c, r, "cuStreamSynchronize: the stream's work failed", err, errlen);
  gl_cuda__note_sticky(c, r);
  gl_cuda__lost_note(c, err, errlen);
  return GPULEASE_LAUNCH_FAILED;
}
