/*
 * tmap.c - gpulease_tensormap_encode_tiled: a tensor map built on the node
 * for memory of the session (TENSORMAP_ENCODE, docs/protocol.md). The
 * library checks what it can without the device (rank, data type) and
 * copies the used entries of the description into the op's fixed slots,
 * leaving those past the rank 0 as the wire requires.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/client_internal.h"

_Static_assert(GPULEASE_TENSORMAP_BYTES == GL_TMAP_BYTES, "a tensor map is 128 bytes");
_Static_assert(GPULEASE_TENSORMAP_MAX_RANK == GL_TMAP_MAX_RANK, "ranks 1..5");
_Static_assert(GPULEASE_TENSORMAP_BYTES <= GPULEASE_MAX_SCALAR_BYTES,
               "a tensor map fits a by-value parameter");

void gpulease_tensormap_desc_default(gpulease_tensormap_desc *desc) {
  if (!desc) return;
  memset(desc, 0, sizeof *desc);
  desc->struct_version = GPULEASE_TENSORMAP_DESC_VERSION;
  for (int i = 0; i < GPULEASE_TENSORMAP_MAX_RANK; i++) desc->element_strides[i] = 1;
}

gpulease_status gpulease_tensormap_encode_tiled(gpulease_session *s, gpulease_buffer buffer,
                                                uint64_t offset,
                                                const gpulease_tensormap_desc *desc,
                                                uint8_t out[GPULEASE_TENSORMAP_BYTES],
                                                gpulease_error *err) {
  if (!s || !desc || !out)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "session, desc and out are required");
  if (!gl_lib_version_ok(desc->struct_version, GPULEASE_TENSORMAP_DESC_VERSION))
    return gl_lib_version_err(err, "tensor map desc", desc->struct_version);
  gpulease_status st = gl_session_check_handle(buffer, "buffer", err);
  if (st != GPULEASE_OK) return st;
  if (desc->rank < 1 || desc->rank > GPULEASE_TENSORMAP_MAX_RANK)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "tensor map rank %u is not 1..%d",
                          desc->rank, GPULEASE_TENSORMAP_MAX_RANK);
  if (desc->data_type > GPULEASE_TENSORMAP_TFLOAT32_FTZ)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT,
                          "tensor map data_type %u is not 0..%d (CUtensorMapDataType)",
                          desc->data_type, GPULEASE_TENSORMAP_TFLOAT32_FTZ);
  gl_request req;
  memset(&req, 0, sizeof req);
  req.op = GL_OP_TENSORMAP_ENCODE;
  gl_tmap_req *t = &req.u.tmap;
  t->data_type = desc->data_type;
  t->rank = desc->rank;
  t->buffer = buffer;
  t->offset = offset;
  for (uint32_t i = 0; i < desc->rank; i++) {
    t->global_dim[i] = desc->global_dim[i];
    t->box_dim[i] = desc->box_dim[i];
    t->element_strides[i] = desc->element_strides[i];
    if (i > 0) t->global_strides[i - 1] = desc->global_strides[i - 1];
  }
  t->interleave = desc->interleave;
  t->swizzle = desc->swizzle;
  t->l2_promotion = desc->l2_promotion;
  t->oob_fill = desc->oob_fill;
  gl_response resp;
  uint8_t *raw = NULL;
  st = gl_session_send_wait(s, &req, &resp, &raw, NULL, err);
  if (st != GPULEASE_OK) return st; /* nothing to free, as for every waited op */
  memcpy(out, resp.u.tmap, GPULEASE_TENSORMAP_BYTES);
  free(raw);
  return GPULEASE_OK;
}
