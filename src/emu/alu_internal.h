/*
 * alu_internal.h - what the ALU's files (alu.c, alu_int.c, alu_float.c,
 * alu_half.c, alu_cvt.c) share: the lane loop, reading and writing 64-bit
 * slots at a type's width, bit casts, PTX's NaN and flush-to-zero rules,
 * the rounding-mode switch, and exact rounding of a binary number to any
 * of the float formats (f16, bf16, f32, f64) under any IEEE rounding mode.
 *
 * Nothing here is part of alu.h's API; names carry the gl_emu__ prefix.
 *
 * Floating point on the host: x86-64 computes float and double in SSE with
 * IEEE single rounding, so host a+b, a*b, a/b, sqrt and fma give PTX's .rn
 * results for finite values; only NaN encodings (and, for directed
 * rounding, the mode) need care. Contraction of a*b+c into one fma is kept
 * off (clang honours the pragma below; gcc does not contract in ISO C
 * mode, which the build uses) so that mul-then-add stays two roundings.
 */
#ifndef GL_EMU_ALU_INTERNAL_H
#define GL_EMU_ALU_INTERNAL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "emu/alu.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

/* Signature shared by the per-area executors (same meaning as
 * gl_emu_alu_exec). Each returns 0, or -1 for an op/type it does not do. */
#define GL_EMU__ALU_ARGS                                                           \
  const gl_ptx_insn *in, uint64_t *const dst[2], const uint64_t *const src[4],     \
      const uint64_t *cc, uint32_t mask

int gl_emu__alu_int(GL_EMU__ALU_ARGS);
int gl_emu__alu_float(GL_EMU__ALU_ARGS);
int gl_emu__alu_half(GL_EMU__ALU_ARGS);
int gl_emu__alu_cvt(GL_EMU__ALU_ARGS);

/* Stores the outcome of a compare for setp or set. rbits has bit l set
 * where lane l's comparison held. setp: dst[0] = r BOP c, and dst[1] (if
 * present) = !r BOP c, c being src[2] when in->boolop is set. set: the
 * same value as 0xffffffff (u32/b32), -1 (s32) or 1.0f (f32), else 0.
 * Returns -1 for a set destination type it does not know. */
int gl_emu__write_cmp(const gl_ptx_insn *in, uint64_t *const dst[2],
                      const uint64_t *const src[4], uint32_t mask, uint32_t rbits);

/* ---- Lanes -------------------------------------------------------------- */

/* for (each lane l whose bit is set in mask): visits lanes in increasing
 * order. Not nestable (one hidden counter name). */
#define GL_EMU__LANES(mask, l)                                                     \
  for (uint32_t gl_m__ = (mask), l = 0;                                            \
       gl_m__ != 0 && ((l = (uint32_t)__builtin_ctz(gl_m__)), 1); gl_m__ &= gl_m__ - 1)

/* ---- Slots at a width --------------------------------------------------- */

/* A value of `bits` (8..64) bits in a slot, extended to 64 bits: sign
 * extension when sgn, else zero extension. This is both how a reader sees
 * an operand and how a writer stores a result (ptx_ir.h). */
static inline uint64_t gl_emu__ext(uint64_t v, unsigned bits, int sgn) {
  unsigned sh = 64u - bits;
  if (sgn)
    return (uint64_t)((int64_t)(v << sh) >> sh);
  return (v << sh) >> sh;
}

/* Width in bits of a type for slot purposes (pred counts as 8: values are
 * 0 or 1 anyway). 0 for NONE and for b128 (not an ALU width). */
static inline unsigned gl_emu__bits(gl_ptx_type t) {
  unsigned n = gl_ptx_type_size(t) * 8u;
  return n > 64 ? 0 : n;
}

/* ---- Bit casts ---------------------------------------------------------- */

static inline float gl_emu__f32(uint64_t v) {
  uint32_t u = (uint32_t)v;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static inline uint64_t gl_emu__b32(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
static inline double gl_emu__f64(uint64_t v) {
  double d;
  memcpy(&d, &v, sizeof d);
  return d;
}
static inline uint64_t gl_emu__b64(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

/* ---- NaN and flush-to-zero ---------------------------------------------- */

#define GL_EMU__NAN32 0x7fffffffu             /* PTX's canonical f32 NaN */
#define GL_EMU__NAN16 0x7fffu                 /* canonical f16 and bf16 NaN */
#define GL_EMU__NAN64 0xfff8000000000000ull   /* f64 NaN made from non-NaN inputs
                                                 (as an H200 gives) */

/* f32 bits of a result: canonical NaN, else the value. */
static inline uint64_t gl_emu__out32(float r) {
  return r != r ? GL_EMU__NAN32 : gl_emu__b32(r);
}

/* .ftz on an f32: a subnormal becomes a zero of the same sign. */
static inline float gl_emu__ftz32(float x) {
  if (fabsf(x) < 0x1p-126f && x != 0.0f)
    return copysignf(0.0f, x);
  return x;
}
static inline double gl_emu__ftz64(double x) {
  if (fabs(x) < 0x1p-1022 && x != 0.0)
    return copysign(0.0, x);
  return x;
}

/* .sat: clamp to [+0, 1], NaN to +0. */
static inline float gl_emu__sat32(float x) {
  if (!(x > 0.0f))
    return 0.0f;
  return x > 1.0f ? 1.0f : x;
}
static inline double gl_emu__sat64(double x) {
  if (!(x > 0.0))
    return 0.0;
  return x > 1.0 ? 1.0 : x;
}

/* Which NaN an f64 arithmetic operation returns, as measured on an H200
 * (the probes recorded in tests/emu/kernels/nan_rules.cu): a NaN operand
 * comes out quieted; of two NaN operands the one whose quieted magnitude
 * bits (bits & 0x7fff..., quiet bit set) are larger wins, a tie going to
 * x; NaN made from non-NaN operands is GL_EMU__NAN64. (min/max compare
 * the raw bits instead: alu_float.c.) The two-NaN rule fits what the
 * probes saw but cannot match the GPU always: ptxas may swap the operands
 * of commutative instructions, and the GPU's pick follows its order. */
static inline uint64_t gl_emu__nan_mag(uint64_t u) {
  return (u | 0x0008000000000000ull) & 0x7fffffffffffffffull;
}
static inline int gl_emu__isnan64(uint64_t u) {
  return (u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
}
static inline uint64_t gl_emu__nan_pick(uint64_t x, uint64_t y) {
  if (!gl_emu__isnan64(x))
    return y | 0x0008000000000000ull;
  if (!gl_emu__isnan64(y) || gl_emu__nan_mag(x) >= gl_emu__nan_mag(y))
    return x | 0x0008000000000000ull;
  return y | 0x0008000000000000ull;
}

/* An f64 result of r = op(a, b[, c]) (pass 0 for unused operands). For
 * fma/mad (fused != 0): when a and b are both NaN the result is picked
 * from them alone; otherwise from the NaN among a and b against c, a tie
 * going to a over c and to c over b. */
static inline uint64_t gl_emu__out64(double r, double a, double b, double c, int fused) {
  if (r == r)
    return gl_emu__b64(r);
  uint64_t ua = gl_emu__b64(a), ub = gl_emu__b64(b), uc = gl_emu__b64(c);
  int na = gl_emu__isnan64(ua), nb = gl_emu__isnan64(ub), nc = gl_emu__isnan64(uc);
  if (!na && !nb && !nc)
    return GL_EMU__NAN64;
  if (!fused)
    return nc && !na && !nb ? uc | 0x0008000000000000ull
                            : gl_emu__nan_pick(na ? ua : ub, nb ? ub : ua);
  if (na && nb)
    return gl_emu__nan_pick(ua, ub);
  if (na)
    return gl_emu__nan_pick(ua, nc ? uc : ua);
  if (nb)
    return nc ? gl_emu__nan_pick(uc, ub) : ub | 0x0008000000000000ull;
  return uc | 0x0008000000000000ull;
}

/* ---- Rounding modes ----------------------------------------------------- */

/* Switches the host's rounding mode for a float PTX rounding modifier
 * (.rz/.rm/.rp; also .rzi/.rmi/.rpi). Returns the mode to restore, or -1
 * when nothing was changed (.rn, none). Pair with gl_emu__rnd_leave. The
 * loops between read their operands from memory after the switch and store
 * results before the restore, so the compiler cannot move the arithmetic
 * out of the window. */
int gl_emu__rnd_enter(unsigned rnd);
void gl_emu__rnd_leave(int saved);

/* ---- Exact rounding to a float format ------------------------------------ */

/* A binary float format: precision p (significand bits with the hidden
 * one) and exponent width. */
typedef struct gl_emu__fmt {
  unsigned p, ebits;
} gl_emu__fmt;
extern const gl_emu__fmt gl_emu__fmt_f16, gl_emu__fmt_bf16, gl_emu__fmt_f32,
    gl_emu__fmt_f64;

/* Bits (sign at bit p+ebits-1) of (-1)^neg * m * 2^e rounded once to fmt
 * under rnd (GL_PTX_RND_RN/RZ/RM/RP; NONE and the integral modes count as
 * RN): subnormals, overflow to infinity or the largest finite value as the
 * mode says. m == 0 gives a signed zero. */
uint64_t gl_emu__round_bits(int neg, uint64_t m, int e, const gl_emu__fmt *fmt, unsigned rnd);

/* A finite or infinite double rounded to fmt; NaN gives the caller's
 * nan_bits. */
uint64_t gl_emu__from_f64(double x, const gl_emu__fmt *fmt, unsigned rnd, uint64_t nan_bits);

/* f16 / bf16 bits to float (exact; a NaN keeps its payload, shifted). */
static inline float gl_emu__h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t ex = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (ex == 0x1f)
    return gl_emu__f32(sign | 0x7f800000u | (man << 13));
  if (ex == 0) /* subnormal: at most 10 bits, exact */
    return copysignf((float)man * 0x1p-24f, sign ? -1.0f : 1.0f);
  return gl_emu__f32(sign | ((ex + 112u) << 23) | (man << 13));
}
static inline double gl_emu__f16_to_f64(uint16_t h) {
  return (double)gl_emu__h2f(h);
}
static inline double gl_emu__bf16_to_f64(uint16_t h) {
  return (double)gl_emu__f32((uint64_t)h << 16);
}

/* a*b+c rounded once to fmt (f16 or bf16 inputs: a*b is exact in double),
 * via a sum rounded to odd. NaN inputs must be handled by the caller. */
uint64_t gl_emu__fma_small(double a, double b, double c, const gl_emu__fmt *fmt, unsigned rnd);

#endif /* GL_EMU_ALU_INTERNAL_H */
