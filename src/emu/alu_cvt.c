/*
 * alu_cvt.c - cvt between every pair of u8..u64, s8..s64 (.b types count
 * as unsigned), f16, bf16, f32 and f64, plus the packing forms
 * cvt.rn{.relu}.f16x2.f32 / .bf16x2.f32 d, a, b (a goes to the upper half).
 *
 * PTX rules implemented:
 *   - int -> int: the source is read at its width and signedness; without
 *     .sat the value is truncated to the destination width, with .sat it
 *     is clamped to the destination's range.
 *   - float -> int: rounded by .rni/.rzi/.rmi/.rpi (none written: .rzi),
 *     NaN gives 0, values outside the destination's range saturate (PTX
 *     clamps float-to-int conversions whether or not .sat is written).
 *   - int -> float and float -> narrower float: rounded once by
 *     .rn/.rz/.rm/.rp (gl_emu__round_bits, exact for 64-bit integers too).
 *   - float -> float with .rni/.rzi/.rmi/.rpi: rounded to an integral value.
 *   - .ftz flushes an f32 source's and an f32 result's subnormals; .sat on
 *     a float destination clamps to [0, 1] (NaN to +0); .relu clamps
 *     negative results (and -0) to +0, NaN staying NaN.
 *   - NaN results: f32 0x7fffffff, f16/bf16 0x7fff; an f64 result keeps
 *     the source NaN's payload (quieted).
 */
#include "emu/alu_internal.h"

enum { K_INT, K_F16, K_BF16, K_F32, K_F64, K_BAD };

static int kind(unsigned t) {
  switch (t) {
  case GL_PTX_T_F16:
    return K_F16;
  case GL_PTX_T_BF16:
    return K_BF16;
  case GL_PTX_T_F32:
    return K_F32;
  case GL_PTX_T_F64:
    return K_F64;
  default:
    return gl_emu__bits((gl_ptx_type)t) >= 8 && t != GL_PTX_T_PRED && t < GL_PTX_T_F16 ? K_INT
                                                                                     : K_BAD;
  }
}

/* A float source slot to double (exact), with .ftz for f32. */
static inline double src_f(int k, uint64_t v, int ftz) {
  switch (k) {
  case K_F16:
    return gl_emu__f16_to_f64((uint16_t)v);
  case K_BF16:
    return gl_emu__bf16_to_f64((uint16_t)v);
  case K_F32: {
    float f = gl_emu__f32(v);
    return (double)(ftz ? gl_emu__ftz32(f) : f);
  }
  default:
    return gl_emu__f64(v);
  }
}

/* Round a double to an integral double under an integer rounding mode. */
static inline double round_int(double x, unsigned rnd) {
  switch (rnd) {
  case GL_PTX_RND_RNI:
  case GL_PTX_RND_RN:
    return rint(x); /* the host runs in round-to-nearest-even here */
  case GL_PTX_RND_RMI:
  case GL_PTX_RND_RM:
    return floor(x);
  case GL_PTX_RND_RPI:
  case GL_PTX_RND_RP:
    return ceil(x);
  default:
    return trunc(x);
  }
}

static inline int is_int_rnd(unsigned rnd) {
  return rnd >= GL_PTX_RND_RNI && rnd <= GL_PTX_RND_RPI;
}

/* The float rounding mode a conversion to float uses. */
static inline unsigned float_rnd(unsigned rnd) {
  switch (rnd) {
  case GL_PTX_RND_RZ:
  case GL_PTX_RND_RM:
  case GL_PTX_RND_RP:
    return rnd;
  default:
    return GL_PTX_RND_RN;
  }
}

static const gl_emu__fmt *fmt_of(int k) {
  switch (k) {
  case K_F16:
    return &gl_emu__fmt_f16;
  case K_BF16:
    return &gl_emu__fmt_bf16;
  case K_F32:
    return &gl_emu__fmt_f32;
  default:
    return &gl_emu__fmt_f64;
  }
}

/* Flush a subnormal f32 result (bits) to a signed zero. */
static inline uint64_t ftz32_bits(uint64_t b) {
  return (b & 0x7f800000u) == 0 ? b & 0x80000000u : b;
}

/* A double (already through .sat/.relu) rounded to the destination kind. */
static inline uint64_t to_float(double x, int dk, unsigned frnd, int ftz, uint64_t nan64) {
  switch (dk) {
  case K_F64:
    return x == x ? gl_emu__b64(x) : nan64;
  case K_F32: {
    uint64_t b = gl_emu__from_f64(x, &gl_emu__fmt_f32, frnd, GL_EMU__NAN32);
    return ftz ? ftz32_bits(b) : b;
  }
  default:
    return gl_emu__from_f64(x, fmt_of(dk), frnd, GL_EMU__NAN16);
  }
}

/* .sat and .relu on a float result before rounding (exact: 0 and 1 are
 * representable). */
static inline double clamp_f(double x, int sat, int relu) {
  if (sat)
    return gl_emu__sat64(x);
  if (relu && !(x > 0.0) && x == x)
    return 0.0;
  return x;
}

static int cvt_pack(const gl_ptx_insn *in, uint64_t *d, const uint64_t *a, const uint64_t *b,
                    uint32_t mask) {
  const int dk = in->type == GL_PTX_T_F16X2 ? K_F16 : K_BF16;
  const unsigned fl = in->flags, frnd = float_rnd(in->rnd);
  const int sat = (fl & GL_PTX_F_SAT) != 0, relu = (fl & GL_PTX_F_RELU) != 0;
  const int ftz = (fl & GL_PTX_F_FTZ) != 0;
  if (in->type2 != GL_PTX_T_F32 || !b)
    return -1;
  GL_EMU__LANES(mask, l) {
    double hi = clamp_f(src_f(K_F32, a[l], ftz), sat, relu);
    double lo = clamp_f(src_f(K_F32, b[l], ftz), sat, relu);
    d[l] = (to_float(hi, dk, frnd, 0, 0) << 16) | to_float(lo, dk, frnd, 0, 0);
  }
  return 0;
}

int gl_emu__alu_cvt(GL_EMU__ALU_ARGS) {
  (void)cc;
  const unsigned dt = in->type, st = in->type2, fl = in->flags, rnd = in->rnd;
  uint64_t *d = dst[0];
  const uint64_t *a = in->nsrc > 0 ? src[0] : NULL;
  if (!d || !a)
    return -1;
  if (dt == GL_PTX_T_F16X2 || dt == GL_PTX_T_BF16X2)
    return cvt_pack(in, d, a, in->nsrc > 1 ? src[1] : NULL, mask);
  const int dk = kind(dt), sk = kind(st);
  if (dk == K_BAD || sk == K_BAD)
    return -1;
  const int sat = (fl & GL_PTX_F_SAT) != 0, ftz = (fl & GL_PTX_F_FTZ) != 0;
  const int relu = (fl & GL_PTX_F_RELU) != 0;
  const unsigned dw = gl_emu__bits((gl_ptx_type)dt), sw = gl_emu__bits((gl_ptx_type)st);
  const int dsg = gl_ptx_type_is_signed((gl_ptx_type)dt);
  const int ssg = gl_ptx_type_is_signed((gl_ptx_type)st);

  if (dk == K_INT && sk == K_INT) {
    if (!sat) {
      GL_EMU__LANES(mask, l) { d[l] = gl_emu__ext(gl_emu__ext(a[l], sw, ssg), dw, dsg); }
      return 0;
    }
    const __int128 lo = dsg ? -((__int128)1 << (dw - 1)) : 0;
    const __int128 hi = dsg ? ((__int128)1 << (dw - 1)) - 1 : ((__int128)1 << dw) - 1;
    GL_EMU__LANES(mask, l) {
      uint64_t v = gl_emu__ext(a[l], sw, ssg);
      __int128 x = ssg ? (__int128)(int64_t)v : (__int128)v;
      x = x < lo ? lo : x > hi ? hi : x;
      d[l] = gl_emu__ext((uint64_t)x, dw, dsg);
    }
    return 0;
  }

  if (dk == K_INT) { /* float -> int */
    const double lim = ldexp(1.0, dsg ? (int)dw - 1 : (int)dw);
    const uint64_t maxv = dsg ? (uint64_t)lim - 1 : (dw == 64 ? UINT64_MAX : (uint64_t)lim - 1);
    /* NaN: PTX says 0, and an H200 gives 0 from f16/f32 to 8-32 bits, but
     * the top bit alone (0x80..0) from f64 to any width and from any float
     * to 64 bits, signed or not (the probes in nan_rules.cu) */
    const uint64_t nanv = (sk == K_F64 || dw == 64) ? 1ull << (dw - 1) : 0;
    GL_EMU__LANES(mask, l) {
      double x = round_int(src_f(sk, a[l], ftz), rnd);
      uint64_t v;
      if (x != x)
        v = nanv;
      else if (x >= lim)
        v = maxv;
      else if (dsg)
        v = x < -lim ? (uint64_t)(-(int64_t)(maxv)-1) : (uint64_t)(int64_t)x;
      else
        v = x <= 0.0 ? 0 : (uint64_t)x;
      d[l] = gl_emu__ext(v, dw, dsg);
    }
    return 0;
  }

  const unsigned frnd = float_rnd(rnd);
  if (sk == K_INT) { /* int -> float */
    if (dk == K_F32 && frnd == GL_PTX_RND_RN && sw <= 32 && !sat && !ftz) {
      /* the common case: the host conversion is exact-then-RN */
      if (ssg) {
        GL_EMU__LANES(mask, l) {
          d[l] = gl_emu__b32((float)(int64_t)gl_emu__ext(a[l], sw, 1));
        }
      } else {
        GL_EMU__LANES(mask, l) { d[l] = gl_emu__b32((float)gl_emu__ext(a[l], sw, 0)); }
      }
      return 0;
    }
    const gl_emu__fmt *f = fmt_of(dk);
    const uint64_t one = to_float(1.0, dk, GL_PTX_RND_RN, 0, 0);
    GL_EMU__LANES(mask, l) {
      uint64_t v = gl_emu__ext(a[l], sw, ssg);
      int neg = ssg && (int64_t)v < 0;
      uint64_t bits = gl_emu__round_bits(neg, neg ? 0 - v : v, 0, f, frnd);
      if ((sat || relu) && neg)
        bits = 0; /* negative integers clamp to +0 */
      else if (sat && v)
        bits = one; /* nonzero integers are >= 1 */
      d[l] = bits;
    }
    return 0;
  }

  /* float -> float */
  const int irnd = is_int_rnd(rnd);
  GL_EMU__LANES(mask, l) {
    double x = src_f(sk, a[l], ftz);
    uint64_t nan64 = GL_EMU__NAN64;
    if (x != x) {
      /* an f64 result keeps the payload; so does an f32 result from an f64
       * NaN (sign, quiet bit, the payload's top 22 bits: what an H200 gives
       * for cvt.rn.f32.f64); other narrower results are canonical */
      nan64 = gl_emu__b64(x) | 0x0008000000000000ull;
      if (dk == K_F32 && sk == K_F64) {
        d[l] = ((nan64 >> 32) & 0x80000000u) | 0x7fc00000u | ((nan64 >> 29) & 0x3fffffu);
        continue;
      }
    } else if (irnd) {
      x = round_int(x, rnd);
    }
    x = clamp_f(x, sat, relu);
    d[l] = to_float(x, dk, irnd ? GL_PTX_RND_RN : frnd, ftz, nan64);
  }
  return 0;
}
