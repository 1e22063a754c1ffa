/*
 * session_tmap.c - TENSORMAP_ENCODE on the session's lane
 * (docs/protocol.md, "TENSORMAP_ENCODE"): resolves the session's buffer
 * handle, checks that every byte the tensor spans lies inside that buffer,
 * and has the backend encode the map at the buffer's device address. So a
 * tensor map a client obtains never reaches outside its own session's
 * memory. Touches neither memory nor the stream: answered at once.
 *
 * It stands on wk_types.h, through session_ops.h.
 */
#include <inttypes.h>
#include <stdio.h>

#include "worker/session.h"
#include "worker/session_ops.h"

/* Bytes of one element of each CUtensorMapDataType (0..12). */
static const uint8_t k_elem_bytes[GL_TMAP_MAX_DATA_TYPE + 1] = {1, 2, 4, 4, 8, 8, 2,
                                                               4, 8, 2, 4, 4, 4};

/* The tensor's span in bytes from its first element: the byte after its
 * last element, offset + sum of (global_dim[i] - 1) * stride_i + element
 * size with stride_0 the element size, computed without overflow. */
static gpulease_status tensor_span(gl_wsession *s, const gl_tmap_req *r, uint64_t *span) {
  const uint64_t esz = k_elem_bytes[r->data_type];
  uint64_t end = esz;
  for (uint32_t i = 0; i < r->rank; i++) {
    if (r->global_dim[i] == 0)
      return gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT,
                         "TENSORMAP_ENCODE global_dim[%u] is 0 (each dimension has at least 1 "
                         "element)",
                         i);
    uint64_t stride = i == 0 ? esz : r->global_strides[i - 1], step;
    if (__builtin_mul_overflow(r->global_dim[i] - 1, stride, &step) ||
        __builtin_add_overflow(end, step, &end))
      return gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT,
                         "TENSORMAP_ENCODE: the tensor's extent overflows 64 bits (dimension %u)",
                         i);
  }
  *span = end;
  return GPULEASE_OK;
}

gpulease_status gl_sop_tensormap(gl_wsession *s, const gl_tmap_req *r, gl_response *resp) {
  gl_wk *w = s->w;
  if (!w->be->ops->tensormap_encode)
    return gl_sop_errf(s, GPULEASE_UNSUPPORTED, "the %s device cannot encode tensor maps",
                       w->be->ops->name);
  gl_wbuffer *b;
  gpulease_status st = gl_sop_get_buffer(s, r->buffer, &b);
  if (st != GPULEASE_OK) return st;
  uint64_t span = 0;
  st = tensor_span(s, r, &span);
  if (st != GPULEASE_OK) return st;
  if (r->offset > b->size || span > b->size - r->offset)
    return gl_sop_errf(s, GPULEASE_INVALID_ARGUMENT,
                       "TENSORMAP_ENCODE: the tensor spans bytes %" PRIu64 "..+%" PRIu64
                       ", outside buffer 0x%016" PRIx64 " of %" PRIu64 " bytes",
                       r->offset, span, r->buffer, b->size);
  return w->be->ops->tensormap_encode(w->be, b->offset + r->offset, r, resp->u.tmap, s->err,
                                      GL_WK_ERR_MAX);
}
