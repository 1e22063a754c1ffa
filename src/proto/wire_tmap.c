/*
 * wire_tmap.c - the codec of TENSORMAP_ENCODE (gl_wire__op_TENSORMAP_ENCODE):
 * a request of fixed size carrying cuTensorMapEncodeTiled's arguments with
 * the tensor's address as a buffer handle and an offset, and a result of
 * the 128 bytes of the tensor map. Layout in wire.h and docs/protocol.md,
 * "TENSORMAP_ENCODE". The decoder checks the shape of the request (data
 * type, rank, unused slots 0); the worker checks the buffer and extent,
 * and the device's encoder everything else.
 */
#include "proto/wire_internal.h"

/* Structural checks shared by the decoder and the encoder's validate. */
static void check_tmap(gl_wire__rd *r, const gl_tmap_req *t) {
  if (!gl_wire__rd_ok(r)) return;
  if (t->data_type > GL_TMAP_MAX_DATA_TYPE) {
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "data_type %u out of range 0..%d (CUtensorMapDataType)", t->data_type,
                     GL_TMAP_MAX_DATA_TYPE);
    return;
  }
  if (t->rank < 1 || t->rank > GL_TMAP_MAX_RANK) {
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "rank %u out of range 1..%d", t->rank,
                     GL_TMAP_MAX_RANK);
    return;
  }
  for (unsigned i = t->rank; i < GL_TMAP_MAX_RANK; i++) {
    if (t->global_dim[i] || t->box_dim[i] || t->element_strides[i]) {
      gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                       "dimension %u is past rank %u: its global_dim, box_dim and "
                       "element_strides slots must be 0",
                       i, t->rank);
      return;
    }
  }
  for (unsigned i = t->rank - 1; i < GL_TMAP_MAX_RANK - 1; i++) {
    if (t->global_strides[i]) {
      gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                       "global_strides[%u] must be 0 with rank %u (rank - 1 strides count)", i,
                       t->rank);
      return;
    }
  }
}

static void tmap_decode(gl_wire__rd *r, gl_request *q) {
  gl_tmap_req *t = &q->u.tmap;
  gl_wire__session_ref_decode(r, &t->s);
  t->data_type = gl_wire__rd_u32(r, "data_type");
  t->rank = gl_wire__rd_u32(r, "rank");
  t->buffer = gl_wire__rd_u64(r, "buffer");
  t->offset = gl_wire__rd_u64(r, "offset");
  for (unsigned i = 0; i < GL_TMAP_MAX_RANK; i++) t->global_dim[i] = gl_wire__rd_u64(r, "global_dim");
  for (unsigned i = 0; i < GL_TMAP_MAX_RANK - 1; i++)
    t->global_strides[i] = gl_wire__rd_u64(r, "global_strides");
  for (unsigned i = 0; i < GL_TMAP_MAX_RANK; i++) t->box_dim[i] = gl_wire__rd_u32(r, "box_dim");
  for (unsigned i = 0; i < GL_TMAP_MAX_RANK; i++)
    t->element_strides[i] = gl_wire__rd_u32(r, "element_strides");
  t->interleave = gl_wire__rd_u32(r, "interleave");
  t->swizzle = gl_wire__rd_u32(r, "swizzle");
  t->l2_promotion = gl_wire__rd_u32(r, "l2_promotion");
  t->oob_fill = gl_wire__rd_u32(r, "oob_fill");
  check_tmap(r, t);
}

static void tmap_validate(gl_wire__rd *r, const gl_request *q) {
  if (gl_wire__rd_ok(r) && q->u.tmap.s.session_id == 0)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "session_id 0 is not valid (ids and handles start at 1)");
  check_tmap(r, &q->u.tmap);
}

static void tmap_put(gl_buf *b, const gl_request *q) {
  const gl_tmap_req *t = &q->u.tmap;
  gl_wire__session_ref_put(b, &t->s);
  gl_wire__put_u32(b, t->data_type);
  gl_wire__put_u32(b, t->rank);
  gl_wire__put_u64(b, t->buffer);
  gl_wire__put_u64(b, t->offset);
  for (unsigned i = 0; i < GL_TMAP_MAX_RANK; i++) gl_wire__put_u64(b, t->global_dim[i]);
  for (unsigned i = 0; i < GL_TMAP_MAX_RANK - 1; i++) gl_wire__put_u64(b, t->global_strides[i]);
  for (unsigned i = 0; i < GL_TMAP_MAX_RANK; i++) gl_wire__put_u32(b, t->box_dim[i]);
  for (unsigned i = 0; i < GL_TMAP_MAX_RANK; i++) gl_wire__put_u32(b, t->element_strides[i]);
  gl_wire__put_u32(b, t->interleave);
  gl_wire__put_u32(b, t->swizzle);
  gl_wire__put_u32(b, t->l2_promotion);
  gl_wire__put_u32(b, t->oob_fill);
}

static void tmap_result_decode(gl_wire__rd *r, gl_response *out) {
  const uint8_t *p = gl_wire__rd_take(r, GL_TMAP_BYTES, "tensormap");
  if (p) memcpy(out->u.tmap, p, GL_TMAP_BYTES);
}

static void tmap_result_put(gl_buf *b, const gl_response *resp) {
  gl_wire__put_bytes(b, resp->u.tmap, GL_TMAP_BYTES);
}

const gl_wire__codec gl_wire__op_TENSORMAP_ENCODE = {
    .last_field = "oob_fill",
    .decode = tmap_decode,
    .validate = tmap_validate,
    .put = tmap_put,
    .result_decode = tmap_result_decode,
    .result_put = tmap_result_put,
};
