/*
 * exec_redux.c - redux.sync (a reduction across the lanes of a warp:
 * add/min/max of .u32/.s32, and/or/xor of .b32, min/max{.abs}{.NaN} of
 * .f32) and elect.sync (one leader lane of a member mask).
 *
 * The participants are found as for vote and match (exec_warp.c): the
 * executing lanes that are in the lane's membermask, or the executing
 * lanes themselves when the mask names none of them (hardware would hang
 * or be undefined there). Under lockstep every participant is at this
 * instruction, so each one's source value is the one it holds now.
 */
#include <math.h>
#include <string.h>

#include "emu/exec_internal.h"

static inline uint32_t members(const uint64_t *maskrow, unsigned l, uint32_t m) {
  uint32_t p = m & (uint32_t)maskrow[l];
  return p ? p : m;
}

static float f32_of(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* min or max of two f32 bit patterns: -0 below +0; a NaN loses to a
 * number unless nan_wins, which makes the result the canonical NaN. */
static uint32_t f32_minmax(uint32_t a, uint32_t b, int is_max, int nan_wins) {
  float fa = f32_of(a), fb = f32_of(b);
  int na = isnan(fa), nb = isnan(fb);
  if (na || nb) {
    if (nan_wins || (na && nb))
      return 0x7fffffffu;
    return na ? b : a;
  }
  if (fa == fb) { /* equal, or +0 and -0: the sign bit decides */
    int a_neg = (int)(a >> 31), b_neg = (int)(b >> 31);
    if (a_neg == b_neg)
      return a;
    return (is_max ? !a_neg : a_neg) ? a : b;
  }
  return (is_max ? fa > fb : fa < fb) ? a : b;
}

static uint32_t combine(const gl_ptx_insn *in, uint32_t acc, uint32_t v) {
  switch (in->mode) {
  case GL_PTX_ATOM_ADD:
    return acc + v;
  case GL_PTX_ATOM_AND:
    return acc & v;
  case GL_PTX_ATOM_OR:
    return acc | v;
  case GL_PTX_ATOM_XOR:
    return acc ^ v;
  default: {
    int is_max = in->mode == GL_PTX_ATOM_MAX;
    if (in->type == GL_PTX_T_F32)
      return f32_minmax(acc, v, is_max, (in->flags & GL_PTX_F_NAN) != 0);
    if (in->type == GL_PTX_T_S32) {
      int32_t x = (int32_t)acc, y = (int32_t)v;
      return (uint32_t)(is_max ? (x > y ? x : y) : (x < y ? x : y));
    }
    return is_max ? (acc > v ? acc : v) : (acc < v ? acc : v);
  }
  }
}

int gl_emu__exec_redux(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m) {
  const uint64_t *a = gl_emu__src_row(b, w, &in->src[0], 0);
  const uint64_t *mk = gl_emu__src_row(b, w, &in->src[1], 1);
  uint32_t val[GL_EMU_WARP];
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    uint32_t v = (uint32_t)a[l];
    if (in->flags & GL_PTX_F_ABS)
      v &= 0x7fffffffu;
    val[l] = v;
  }
  uint64_t res[GL_EMU_WARP];
  uint32_t last_part = 0;
  uint32_t last = 0;
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    uint32_t part = members(mk, l, m);
    if (part != last_part) { /* usually one mask for all: reduce once */
      uint32_t pp = part;
      unsigned k = (unsigned)__builtin_ctz(pp);
      uint32_t acc = val[k];
      for (pp &= pp - 1; pp; pp &= pp - 1)
        acc = combine(in, acc, val[__builtin_ctz(pp)]);
      last_part = part;
      last = acc;
    }
    res[l] = last;
  }
  uint64_t *d = in->dst[0].reg != GL_PTX_NOREG ? gl_emu__row(b, w, in->dst[0].reg) : b->sink[0];
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    d[l] = in->type == GL_PTX_T_S32 ? (uint64_t)(int64_t)(int32_t)res[l] : res[l];
  }
  return 0;
}

int gl_emu__exec_elect(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m) {
  const uint64_t *mk = gl_emu__src_row(b, w, &in->src[0], 0);
  uint64_t *d0 = in->dst[0].reg != GL_PTX_NOREG ? gl_emu__row(b, w, in->dst[0].reg) : b->sink[0];
  uint64_t *d1 = in->dst[1].reg != GL_PTX_NOREG ? gl_emu__row(b, w, in->dst[1].reg) : b->sink[1];
  uint64_t lead[GL_EMU_WARP];
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    lead[l] = (unsigned)__builtin_ctz(members(mk, l, m));
  }
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    d0[l] = lead[l];
    d1[l] = lead[l] == l;
  }
  return 0;
}
