/*
 * wire_params.c - the kernel param lists that GPU_SUBMIT and LAUNCH carry
 * (layouts in wire.h): one scanner that decoders and validators run over a
 * list (gl_wire__param_list_scan), and the public walkers and writers of
 * each list (gl_param_next and gl_params_encode for GPU_SUBMIT's,
 * gl_launch_param_next and gl_launch_param_put for LAUNCH's).
 *
 * The walkers check bounds on their own: on a list no scanner has passed
 * they stop at the first param that does not fit, never reading past
 * params_raw_len.
 */
#include <string.h>

#include "proto/wire_internal.h"

/* ========================================================================
 * The scanner, for decoders and validators
 * ====================================================================== */

_Static_assert(GPULEASE_PARAM_POINTER == 1 && GL_LAUNCH_PARAM_BUFFER == 1 &&
                   GPULEASE_PARAM_SCALAR == 2 && GL_LAUNCH_PARAM_SCALAR == 2,
               "both param lists use kind 1 for an address and 2 for a scalar");

void gl_wire__param_list_scan(gl_wire__rd *r, unsigned count, bool launch) {
  const size_t limit = launch ? GL_WIRE_MAX_LAUNCH_PARAM_BYTES : GL_WIRE_MAX_PARAM_BYTES;
  size_t start = r->pos;
  char buf[64];
  r->elem = "param";
  for (unsigned i = 0; i < count && gl_wire__rd_ok(r); i++) {
    r->idx = i;
    uint8_t kind = gl_wire__rd_u8(r, "kind");
    if (!gl_wire__rd_ok(r)) break;
    if (kind == 1) { /* GPULEASE_PARAM_POINTER, GL_LAUNCH_PARAM_BUFFER */
      if (launch) gl_wire__rd_u64(r, "buffer");
      gl_wire__rd_u64(r, "offset");
    } else if (kind == 2) { /* GPULEASE_PARAM_SCALAR, GL_LAUNCH_PARAM_SCALAR */
      uint8_t size = gl_wire__rd_u8(r, "size");
      if (gl_wire__rd_ok(r) && (size < 1 || size > GPULEASE_MAX_SCALAR_BYTES))
        gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "%s %u out of range 1..%d",
                         gl_wire__rd_field(r, "size", buf, sizeof buf), size,
                         GPULEASE_MAX_SCALAR_BYTES);
      gl_wire__rd_take(r, size, "value");
    } else {
      gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "%s %u unknown (1 = %s, 2 = scalar)",
                       gl_wire__rd_field(r, "kind", buf, sizeof buf), kind,
                       launch ? "buffer" : "pointer");
    }
    if (gl_wire__rd_ok(r) && r->pos - start > limit)
      gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                       "param list reaches %zu bytes at param[%u], over the limit of %zu",
                       r->pos - start, i, limit);
  }
  r->elem = NULL;
}

/* ========================================================================
 * GPU_SUBMIT's list: kind 1 = pointer (u64 offset), kind 2 = scalar
 * ====================================================================== */

gpulease_status gl_params_encode(const gpulease_param *params, size_t count, gl_buf *out) {
  if (!out || (count > 0 && !params) || count > GPULEASE_MAX_PARAMS)
    return GPULEASE_INVALID_ARGUMENT;
  if (out->oom) return GPULEASE_NO_MEMORY;
  size_t total = 0;
  for (size_t i = 0; i < count; i++) {
    const gpulease_param *p = &params[i];
    if (p->kind == GPULEASE_PARAM_POINTER)
      total += 9;
    else if (p->kind == GPULEASE_PARAM_SCALAR && p->size >= 1 &&
             p->size <= GPULEASE_MAX_SCALAR_BYTES)
      total += 2 + p->size;
    else
      return GPULEASE_INVALID_ARGUMENT;
  }
  if (total > GL_WIRE_MAX_PARAM_BYTES) return GPULEASE_INVALID_ARGUMENT;
  size_t start = out->len;
  for (size_t i = 0; i < count; i++) {
    const gpulease_param *p = &params[i];
    gl_wire__put_u8(out, (uint8_t)p->kind);
    if (p->kind == GPULEASE_PARAM_POINTER) {
      gl_wire__put_u64(out, p->offset);
    } else {
      gl_wire__put_u8(out, (uint8_t)p->size);
      gl_wire__put_bytes(out, p->value, p->size);
    }
  }
  if (out->oom) {
    if (out->len > start) out->len = start;
    return GPULEASE_NO_MEMORY;
  }
  return GPULEASE_OK;
}

/* A scalar entry at p[i] (kind byte, u8 size 1..GPULEASE_MAX_SCALAR_BYTES,
 * the bytes), the same in both lists: its size, its bytes and the next
 * position. False when it does not fit in len. */
static bool scalar_at(const uint8_t *p, size_t len, size_t i, uint8_t *size, const uint8_t **value,
                      size_t *pos) {
  if (len - i < 2) return false;
  uint8_t n = p[i + 1];
  if (n < 1 || n > GPULEASE_MAX_SCALAR_BYTES || len - i - 2 < n) return false;
  *size = n;
  *value = p + i + 2;
  *pos = i + 2 + n;
  return true;
}

bool gl_param_next(const gl_submit_req *req, size_t *pos, gl_param *out) {
  if (!req || !pos || !out || !req->params_raw) return false;
  const uint8_t *p = req->params_raw;
  size_t len = req->params_raw_len, i = *pos;
  if (i >= len) return false;
  memset(out, 0, sizeof *out);
  out->kind = p[i];
  if (p[i] == GPULEASE_PARAM_POINTER) {
    if (len - i < 9) return false;
    out->offset = gl_wire__get_be(p + i + 1, 8);
    *pos = i + 9;
    return true;
  }
  return p[i] == GPULEASE_PARAM_SCALAR && scalar_at(p, len, i, &out->size, &out->value, pos);
}

/* ========================================================================
 * LAUNCH's list: kind 1 = buffer (u64 buffer, u64 offset), kind 2 = scalar
 * ====================================================================== */

bool gl_launch_param_next(const gl_launch_req *req, size_t *pos, gl_launch_param *out) {
  if (!req || !pos || !out || !req->params_raw) return false;
  const uint8_t *p = req->params_raw;
  size_t len = req->params_raw_len, i = *pos;
  if (i >= len) return false;
  memset(out, 0, sizeof *out);
  out->kind = p[i];
  if (p[i] == GL_LAUNCH_PARAM_BUFFER) {
    if (len - i < 17) return false;
    out->buffer = gl_wire__get_be(p + i + 1, 8);
    out->offset = gl_wire__get_be(p + i + 9, 8);
    *pos = i + 17;
    return true;
  }
  return p[i] == GL_LAUNCH_PARAM_SCALAR && scalar_at(p, len, i, &out->size, &out->value, pos);
}

gpulease_status gl_launch_param_put(gl_buf *out, const gl_launch_param *p) {
  if (!out || !p) return GPULEASE_INVALID_ARGUMENT;
  if (p->kind == GL_LAUNCH_PARAM_SCALAR) {
    if (p->size < 1 || p->size > GPULEASE_MAX_SCALAR_BYTES || !p->value)
      return GPULEASE_INVALID_ARGUMENT;
  } else if (p->kind != GL_LAUNCH_PARAM_BUFFER) {
    return GPULEASE_INVALID_ARGUMENT;
  }
  if (out->oom) return GPULEASE_NO_MEMORY;
  size_t start = out->len;
  gl_wire__put_u8(out, p->kind);
  if (p->kind == GL_LAUNCH_PARAM_BUFFER) {
    gl_wire__put_u64(out, p->buffer);
    gl_wire__put_u64(out, p->offset);
  } else {
    gl_wire__put_u8(out, p->size);
    gl_wire__put_bytes(out, p->value, p->size);
  }
  if (out->oom) {
    if (out->len > start) out->len = start;
    return GPULEASE_NO_MEMORY;
  }
  return GPULEASE_OK;
}
