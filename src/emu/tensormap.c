/*
 * tensormap.c - the emulated device's tensor maps (the 128-byte objects
 * cp.async.bulk.tensor reads; encoding in emu.h): the encoder the driver
 * API's cuTensorMapEncodeTiled maps to, and the decoder the executor uses.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "emu/emu.h"
#include "emu/tensormap.h"

static const uint8_t type_size[13] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};

static gpulease_status bad(char *err, size_t errlen, gpulease_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static gpulease_status bad(char *err, size_t errlen, gpulease_status st, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return st;
}

gpulease_status gl_emu_tensormap_encode_tiled(void *tmap, uint32_t data_type, uint32_t rank,
                                              uint64_t global_address,
                                              const uint64_t *global_dim,
                                              const uint64_t *global_strides,
                                              const uint32_t *box_dim,
                                              const uint32_t *element_strides,
                                              uint32_t interleave, uint32_t swizzle,
                                              uint32_t l2_promotion, uint32_t oob_fill,
                                              char *err, size_t errlen) {
  (void)l2_promotion; /* a cache hint */
  const gpulease_status inval = GPULEASE_INVALID_ARGUMENT;
  if (!tmap || !global_dim || !box_dim || !element_strides || (rank > 1 && !global_strides))
    return bad(err, errlen, inval, "CUDA_ERROR_INVALID_VALUE: NULL argument");
  if (data_type >= sizeof type_size)
    return bad(err, errlen, inval, "CUDA_ERROR_INVALID_VALUE: data type %u", data_type);
  if (rank < 1 || rank > 5)
    return bad(err, errlen, inval, "CUDA_ERROR_INVALID_VALUE: rank %u is not 1-5", rank);
  if (interleave != 0)
    return bad(err, errlen, GPULEASE_UNSUPPORTED, "interleaved tensor maps are not supported "
               "by the emulated device");
  if (swizzle > 3)
    return bad(err, errlen, inval, "CUDA_ERROR_INVALID_VALUE: swizzle %u", swizzle);
  unsigned esz = type_size[data_type];
  int is_float = data_type >= 6;
  if (oob_fill > 1 || (oob_fill == 1 && !is_float))
    return bad(err, errlen, inval, "CUDA_ERROR_INVALID_VALUE: OOB fill %u", oob_fill);
  if (global_address % 16)
    return bad(err, errlen, inval, "CUDA_ERROR_INVALID_VALUE: global address not 16-byte "
               "aligned");
  gl_emu_tmap t;
  memset(&t, 0, sizeof t);
  for (uint32_t i = 0; i < 5; i++) {
    t.dim[i] = 1;
    t.box[i] = 1;
  }
  for (uint32_t i = 0; i < rank; i++) {
    if (global_dim[i] == 0 || global_dim[i] > (1ull << 32))
      return bad(err, errlen, inval, "CUDA_ERROR_INVALID_VALUE: global dim %u is %llu", i,
                 (unsigned long long)global_dim[i]);
    if (box_dim[i] == 0 || box_dim[i] > 256)
      return bad(err, errlen, inval, "CUDA_ERROR_INVALID_VALUE: box dim %u is %u", i,
                 box_dim[i]);
    if (element_strides[i] != 1)
      return bad(err, errlen, element_strides[i] > 8 || element_strides[i] == 0
                                  ? inval
                                  : GPULEASE_UNSUPPORTED,
                 "element stride %u of dimension %u: only 1 is supported by the emulated "
                 "device",
                 element_strides[i], i);
    t.dim[i] = global_dim[i] == (1ull << 32) ? UINT32_MAX : (uint32_t)global_dim[i];
    t.box[i] = box_dim[i];
    if (i > 0) {
      uint64_t s = global_strides[i - 1];
      if (s % 16 || s >= (1ull << 40))
        return bad(err, errlen, inval, "CUDA_ERROR_INVALID_VALUE: global stride %u is %llu",
                   i - 1, (unsigned long long)s);
      t.stride[i - 1] = s;
    }
  }
  uint64_t inner = (uint64_t)box_dim[0] * esz;
  if (inner % 16)
    return bad(err, errlen, inval, "CUDA_ERROR_INVALID_VALUE: the box's inner dimension "
               "(%llu bytes) is not a multiple of 16", (unsigned long long)inner);
  if (swizzle && inner > (16u << swizzle))
    return bad(err, errlen, inval, "CUDA_ERROR_INVALID_VALUE: the box's inner dimension "
               "(%llu bytes) exceeds the swizzle span of %u", (unsigned long long)inner,
               16u << swizzle);
  t.data_type = (uint8_t)data_type;
  t.rank = (uint8_t)rank;
  t.swizzle = (uint8_t)swizzle;
  t.esize = (uint8_t)esz;
  t.oob_nan = (uint8_t)oob_fill;
  t.addr = global_address;
  gl_emu__tmap_store(tmap, &t);
  return GPULEASE_OK;
}

void gl_emu__tmap_store(void *dst, const gl_emu_tmap *t) {
  uint8_t b[GL_EMU_TMAP_BYTES];
  memset(b, 0, sizeof b);
  uint32_t magic = GL_EMU_TMAP_MAGIC;
  memcpy(b, &magic, 4);
  b[4] = t->data_type;
  b[5] = t->rank;
  b[6] = t->swizzle;
  b[7] = t->esize;
  memcpy(b + 8, &t->addr, 8);
  memcpy(b + 16, t->dim, 20);
  memcpy(b + 40, t->stride, 32);
  for (int i = 0; i < 5; i++) {
    uint16_t v = (uint16_t)t->box[i];
    memcpy(b + 72 + 2 * i, &v, 2);
  }
  b[82] = t->oob_nan;
  memcpy(dst, b, sizeof b);
}

int gl_emu__tmap_load(const void *src, gl_emu_tmap *t) {
  const uint8_t *b = src;
  uint32_t magic;
  memcpy(&magic, b, 4);
  if (magic != GL_EMU_TMAP_MAGIC)
    return -1;
  memset(t, 0, sizeof *t);
  t->data_type = b[4];
  t->rank = b[5];
  t->swizzle = b[6];
  t->esize = b[7];
  memcpy(&t->addr, b + 8, 8);
  memcpy(t->dim, b + 16, 20);
  memcpy(t->stride, b + 40, 32);
  for (int i = 0; i < 5; i++) {
    uint16_t v;
    memcpy(&v, b + 72 + 2 * i, 2);
    t->box[i] = v;
  }
  t->oob_nan = b[82];
  if (t->rank < 1 || t->rank > 5 || t->swizzle > 3 || t->data_type > 12 ||
      (t->esize != 1 && t->esize != 2 && t->esize != 4 && t->esize != 8))
    return -1;
  for (int i = 0; i < 5; i++)
    if (t->box[i] == 0 || t->box[i] > 256 || t->dim[i] == 0)
      return -1;
  return 0;
}
