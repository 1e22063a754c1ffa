/*
 * tmap_cases.h - the 2D TMA copy that test_e2e_tmap (emulated device) and
 * tmap_check (a real GPU) both run through the client library: a FLOAT32
 * tensor of TMAP_W x TMAP_H elements with rows TMAP_PITCH floats apart,
 * written TMAP_BASE bytes into a session buffer; a tensor map of it from
 * gpulease_tensormap_encode_tiled; tests/emu/async/async.cu's tma_load_2d
 * (one block of 128 threads) copies a box of 16 rows at (x, y) into a
 * 1024-aligned shared tile and writes the tile's words out; the words are
 * compared with the box computed here (elements outside the tensor read
 * as 0, the tile's 16-byte chunks swizzled as the map says, words beyond a
 * narrow box left at the kernel's -7).
 */
#ifndef GL_TESTS_GPU_TMAP_CASES_H
#define GL_TESTS_GPU_TMAP_CASES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpulease/gpulease.h"

#define TMAP_W 100
#define TMAP_H 40
#define TMAP_PITCH 112 /* floats: 448 bytes, a multiple of 16 */
#define TMAP_BASE 256  /* the tensor's offset in its buffer */
#define TMAP_BUF_BYTES (TMAP_BASE + TMAP_H * TMAP_PITCH * 4)
#define TMAP_TILE 512  /* floats of the kernel's tile: 16 rows of 32 */

/* The tensor's values: distinct small integers, exact as floats. */
static inline float tmap_value(int x, int y) { return (float)(y * 1000 + x + 1); }

/* Writes the tensor (and junk in the row padding) into buf at TMAP_BASE. */
static inline gpulease_status tmap_write_tensor(gpulease_session *s, gpulease_buffer buf,
                                                gpulease_error *err) {
  static float rows[TMAP_H * TMAP_PITCH];
  for (int y = 0; y < TMAP_H; y++)
    for (int x = 0; x < TMAP_PITCH; x++)
      rows[y * TMAP_PITCH + x] = x < TMAP_W ? tmap_value(x, y) : -1.0f;
  return gpulease_mem_write(s, buf, TMAP_BASE, rows, sizeof rows, err);
}

/* The description of the tensor with a box of box_w x 16 and swizzle swz. */
static inline gpulease_tensormap_desc tmap_desc(uint32_t box_w, uint32_t swz) {
  gpulease_tensormap_desc d;
  gpulease_tensormap_desc_default(&d);
  d.data_type = GPULEASE_TENSORMAP_FLOAT32;
  d.rank = 2;
  d.global_dim[0] = TMAP_W;
  d.global_dim[1] = TMAP_H;
  d.global_strides[0] = TMAP_PITCH * 4;
  d.box_dim[0] = box_w;
  d.box_dim[1] = 16;
  d.element_strides[0] = d.element_strides[1] = 1;
  d.swizzle = swz;
  return d;
}

/* The box width each swizzle allows: its span in floats (none: 32). */
static inline uint32_t tmap_box_w(uint32_t swz) { return swz == 1 ? 8 : swz == 2 ? 16 : 32; }

/* Encodes the map of the tensor in buf (swizzle swz), runs tma_load_2d at
 * (x, y) into out (TMAP_TILE floats) and compares. 0 when every word is
 * right; else -1 with the first difference (or the failing call) in why. */
static inline int tmap_copy_case(gpulease_session *s, gpulease_function fn, gpulease_buffer buf,
                                 gpulease_buffer out, int x, int y, uint32_t swz, char *why,
                                 size_t whylen) {
  gpulease_error e;
  uint32_t bw = tmap_box_w(swz);
  gpulease_tensormap_desc d = tmap_desc(bw, swz);
  _Alignas(64) uint8_t map[GPULEASE_TENSORMAP_BYTES];
  gpulease_status st = gpulease_tensormap_encode_tiled(s, buf, TMAP_BASE, &d, map, &e);
  if (st != GPULEASE_OK) {
    snprintf(why, whylen, "encode: %s: %.200s", gpulease_status_name(st), e.message);
    return -1;
  }
  int bytes = (int)(bw * 16 * 4);
  gpulease_arg args[5] = {gpulease_arg_scalar(map, GPULEASE_TENSORMAP_BYTES),
                          gpulease_arg_buffer(out, 0), gpulease_arg_scalar(&x, sizeof x),
                          gpulease_arg_scalar(&y, sizeof y),
                          gpulease_arg_scalar(&bytes, sizeof bytes)};
  const uint32_t grid[3] = {1, 1, 1}, block[3] = {128, 1, 1};
  st = gpulease_launch(s, fn, grid, block, 0, args, 5, &e);
  if (st == GPULEASE_OK) st = gpulease_session_sync(s, NULL, &e);
  float got[TMAP_TILE];
  if (st == GPULEASE_OK) st = gpulease_mem_read(s, out, 0, got, sizeof got, &e);
  if (st != GPULEASE_OK) {
    snprintf(why, whylen, "launch/read: %s: %.200s", gpulease_status_name(st), e.message);
    return -1;
  }
  float want[TMAP_TILE];
  for (int i = 0; i < TMAP_TILE; i++) want[i] = -7.0f;
  static const uint32_t k_mask[4] = {0, 1, 3, 7}; /* rows of 128 bytes a chunk index mixes */
  for (uint32_t r = 0; r < 16; r++)
    for (uint32_t c = 0; c < bw; c++) {
      uint32_t off = (r * bw + c) * 4;
      off ^= ((off >> 7) & k_mask[swz]) << 4;
      int gx = x + (int)c, gy = y + (int)r;
      bool in = gx >= 0 && gx < TMAP_W && gy >= 0 && gy < TMAP_H;
      want[off / 4] = in ? tmap_value(gx, gy) : 0.0f;
    }
  for (int i = 0; i < TMAP_TILE; i++)
    if (memcmp(&got[i], &want[i], sizeof got[i]) != 0) {
      snprintf(why, whylen, "(x %d, y %d, swizzle %u): word %d is %g, want %g", x, y, swz, i,
               (double)got[i], (double)want[i]);
      return -1;
    }
  snprintf(why, whylen, "(x %d, y %d, swizzle %u): %d words right", x, y, swz, TMAP_TILE);
  return 0;
}

#endif
