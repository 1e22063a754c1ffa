/*
 * alu_round.c - exact rounding of binary numbers to the emulator's float
 * formats (f16, bf16, f32, f64) under the four IEEE rounding modes, done
 * with integer arithmetic so it needs neither _Float16 nor the host's
 * rounding mode. cvt to any float type, int-to-float conversions of 64-bit
 * values, and every f16/bf16 result go through gl_emu__round_bits.
 *
 * A number is (-1)^neg * m * 2^e with m a 64-bit integer. Its result's ulp
 * is 2^q with q = max(ue, emin) - (p - 1), ue being the number's exponent;
 * the bits of m below 2^q decide the rounding. The encoding of a result
 * n * 2^q is ((q + p - 1 - emin) << (p - 1)) + n for normal and subnormal
 * results alike (a carry out of n moves into the exponent by itself), and
 * anything at or past the infinity encoding overflowed.
 */
#include "emu/alu_internal.h"

const gl_emu__fmt gl_emu__fmt_f16 = {11, 5};
const gl_emu__fmt gl_emu__fmt_bf16 = {8, 8};
const gl_emu__fmt gl_emu__fmt_f32 = {24, 8};
const gl_emu__fmt gl_emu__fmt_f64 = {53, 11};

uint64_t gl_emu__round_bits(int neg, uint64_t m, int e, const gl_emu__fmt *fmt, unsigned rnd) {
  const unsigned p = fmt->p;
  const int bias = (1 << (fmt->ebits - 1)) - 1;
  const int emin = 1 - bias;
  const uint64_t sign = (uint64_t)(neg != 0) << (p - 1 + fmt->ebits);
  const uint64_t inf = ((1ull << fmt->ebits) - 1) << (p - 1);
  if (m == 0)
    return sign;
  int ue = e + (63 - __builtin_clzll(m));
  uint64_t bits;
  if (ue > bias) {
    bits = inf; /* overflowed before rounding */
  } else {
    int q = (ue > emin ? ue : emin) - (int)(p - 1);
    int sh = q - e; /* bits of m below the result's ulp */
    uint64_t n;
    int inexact, above, tie;
    if (sh <= 0) {
      n = m << -sh;
      inexact = above = tie = 0;
    } else if (sh < 64) {
      n = m >> sh;
      uint64_t r = m & ((1ull << sh) - 1), half = 1ull << (sh - 1);
      inexact = r != 0;
      above = r > half;
      tie = r == half;
    } else {
      n = 0;
      inexact = 1;
      above = sh == 64 && m > (1ull << 63);
      tie = sh == 64 && m == (1ull << 63);
    }
    int up;
    switch (rnd) {
    case GL_PTX_RND_RZ:
    case GL_PTX_RND_RZI:
      up = 0;
      break;
    case GL_PTX_RND_RP:
    case GL_PTX_RND_RPI:
      up = inexact && !neg;
      break;
    case GL_PTX_RND_RM:
    case GL_PTX_RND_RMI:
      up = inexact && neg;
      break;
    default:
      up = above || (tie && (n & 1));
      break;
    }
    bits = ((uint64_t)(q + (int)p - 1 - emin) << (p - 1)) + n + (uint64_t)up;
  }
  if (bits >= inf) {
    int to_inf;
    switch (rnd) {
    case GL_PTX_RND_RZ:
    case GL_PTX_RND_RZI:
      to_inf = 0;
      break;
    case GL_PTX_RND_RP:
    case GL_PTX_RND_RPI:
      to_inf = !neg;
      break;
    case GL_PTX_RND_RM:
    case GL_PTX_RND_RMI:
      to_inf = neg;
      break;
    default:
      to_inf = 1;
      break;
    }
    bits = to_inf ? inf : inf - 1;
  }
  return sign | bits;
}

uint64_t gl_emu__from_f64(double x, const gl_emu__fmt *fmt, unsigned rnd, uint64_t nan_bits) {
  uint64_t b = gl_emu__b64(x);
  int neg = (int)(b >> 63);
  unsigned ex = (unsigned)(b >> 52) & 0x7ffu;
  uint64_t man = b & 0x000fffffffffffffull;
  if (ex == 0x7ffu) {
    if (man)
      return nan_bits;
    return ((uint64_t)neg << (fmt->p - 1 + fmt->ebits)) |
           (((1ull << fmt->ebits) - 1) << (fmt->p - 1));
  }
  if (ex == 0)
    return gl_emu__round_bits(neg, man, -1074, fmt, rnd);
  return gl_emu__round_bits(neg, man | (1ull << 52), (int)ex - 1075, fmt, rnd);
}

float gl_emu_f16_to_f32(uint16_t h) {
  return gl_emu__h2f(h);
}

uint16_t gl_emu_f32_to_f16_rn(float f) {
  return (uint16_t)gl_emu__from_f64((double)f, &gl_emu__fmt_f16, GL_PTX_RND_RN, GL_EMU__NAN16);
}

uint64_t gl_emu__fma_small(double a, double b, double c, const gl_emu__fmt *fmt, unsigned rnd) {
  double p = a * b; /* exact for f16/bf16 inputs */
  double s = p + c;
  if (s - s != 0.0) /* infinite (inf inputs; a finite sum cannot overflow) */
    return gl_emu__from_f64(s, fmt, rnd, GL_EMU__NAN16);
  /* Two-sum: p + c == s + err exactly. */
  double bb = s - p;
  double err = (p - (s - bb)) + (c - bb);
  if (err != 0.0) {
    /* Round to odd: the truncation of p + c with its last bit set, which
     * keeps enough information for any later rounding to p <= 51 bits. */
    uint64_t sb = gl_emu__b64(s);
    if ((err < 0.0) != (s < 0.0))
      sb -= 1; /* |p + c| < |s|: truncate toward zero */
    sb |= 1;
    s = gl_emu__f64(sb);
  } else if (s == 0.0 && (rnd == GL_PTX_RND_RM || rnd == GL_PTX_RND_RMI)) {
    /* an exact zero sum is -0 when rounding down, unless both are +0 */
    if (!(p == 0.0 && c == 0.0) || signbit(p) || signbit(c))
      s = -0.0;
  }
  return gl_emu__from_f64(s, fmt, rnd, GL_EMU__NAN16);
}
