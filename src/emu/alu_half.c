/*
 * alu_half.c - f16, f16x2, bf16 and bf16x2 arithmetic: add/sub/mul,
 * fma (and mad, the same), neg/abs, min/max (.NaN, .relu, .xorsign.abs),
 * setp/set, and the .approx ex2 and tanh.
 *
 * Values are only ever bits here; there is no dependence on _Float16. An
 * element is decoded exactly to double, the operation is done in double,
 * and the result is rounded once to the element format by
 * gl_emu__round_bits. That is the correctly rounded result: sums,
 * differences and products of f16 values are exact in double; for bf16 a
 * sum may be rounded to double first, which cannot change the final
 * rounding because 53 >= 2*8+2; fma goes through a sum rounded to odd
 * (gl_emu__fma_small). NaN results are the canonical 0x7fff.
 *
 * .ftz flushes subnormal inputs and results (sign kept), .sat clamps to
 * [0, 1] (NaN to +0), .relu turns negative results and -0 into +0.
 * x2 types apply the operation to both halves; element 0 is bits 0-15.
 */
#include "emu/alu_internal.h"

typedef struct hctx {
  const gl_ptx_insn *in;
  const gl_emu__fmt *fmt;
  uint64_t *d;
  const uint64_t *a, *b, *c;
  uint32_t mask;
  unsigned n;        /* elements per lane: 1 or 2 */
  unsigned rnd;
  int bf, ftz, sat, relu;
  uint16_t one;      /* 1.0 in the format */
} hctx;

static inline int h_is_nan(uint16_t h) {
  return (h & 0x7fffu) > 0x7c00u;
}
static inline int bf_is_nan(uint16_t h) {
  return (h & 0x7fffu) > 0x7f80u;
}

/* Element bits -> double, with .ftz on the input. */
static inline double hdec(const hctx *x, uint16_t h) {
  uint16_t expmask = x->bf ? 0x7f80u : 0x7c00u;
  if (x->ftz && (h & expmask) == 0)
    h &= 0x8000u;
  return x->bf ? gl_emu__bf16_to_f64(h) : gl_emu__f16_to_f64(h);
}

/* Rounded result bits -> stored bits: canonical NaN, .ftz, .relu, .sat. */
static inline uint16_t hpost(const hctx *x, uint64_t bits) {
  uint16_t h = (uint16_t)bits;
  uint16_t expmask = x->bf ? 0x7f80u : 0x7c00u;
  if ((x->bf ? bf_is_nan(h) : h_is_nan(h)))
    return x->sat ? 0 : GL_EMU__NAN16;
  if (x->ftz && (h & expmask) == 0)
    h &= 0x8000u;
  if ((x->relu || x->sat) && (h & 0x8000u))
    h = 0;
  if (x->sat && h > x->one)
    h = x->one;
  return h;
}

static inline uint16_t henc(const hctx *x, double r) {
  return hpost(x, gl_emu__from_f64(r, x->fmt, x->rnd, GL_EMU__NAN16));
}

/* Loops over lanes and elements; EXPR makes an element's stored bits from
 * doubles a, b, c (b, c are 0 when the op has fewer operands). */
#define H_LOOP(EXPR)                                                               \
  GL_EMU__LANES(x->mask, l) {                                                      \
    uint64_t out = 0;                                                              \
    for (unsigned k = 0; k < x->n; k++) {                                          \
      unsigned sh = 16 * k;                                                        \
      double a = hdec(x, (uint16_t)(x->a[l] >> sh));                               \
      double b = x->b ? hdec(x, (uint16_t)(x->b[l] >> sh)) : 0.0;                  \
      double c = x->c ? hdec(x, (uint16_t)(x->c[l] >> sh)) : 0.0;                  \
      (void)b;                                                                     \
      (void)c;                                                                     \
      out |= (uint64_t)(EXPR) << sh;                                               \
    }                                                                              \
    x->d[l] = out;                                                                 \
  }

/* min/max with PTX's NaN rules (see alu_float.c); NaN result as NaN. */
static inline double hminmax(double a, double b, int max, int nanp) {
  if (a != a || b != b) {
    if (nanp || (a != a && b != b))
      return NAN;
    return a != a ? b : a;
  }
  if (a == b)
    return (signbit(a) != 0) == max ? b : a;
  return (a < b) != max ? a : b;
}

static inline uint16_t hminmax_xs(const hctx *x, double a, double b, int max, int nanp) {
  double r = hminmax(fabs(a), fabs(b), max, nanp);
  if (r == r && (signbit(a) != 0) != (signbit(b) != 0))
    r = -r;
  return henc(x, r);
}

static inline int hcmp(unsigned mode, double a, double b) {
  switch (mode) {
  case GL_PTX_CMP_EQ:
    return a == b;
  case GL_PTX_CMP_NE:
    return a < b || a > b;
  case GL_PTX_CMP_LT:
    return a < b;
  case GL_PTX_CMP_LE:
    return a <= b;
  case GL_PTX_CMP_GT:
    return a > b;
  case GL_PTX_CMP_GE:
    return a >= b;
  case GL_PTX_CMP_EQU:
    return !(a < b || a > b);
  case GL_PTX_CMP_NEU:
    return a != b;
  case GL_PTX_CMP_LTU:
    return !(a >= b);
  case GL_PTX_CMP_LEU:
    return !(a > b);
  case GL_PTX_CMP_GTU:
    return !(a <= b);
  case GL_PTX_CMP_GEU:
    return !(a < b);
  case GL_PTX_CMP_NUM:
    return a == a && b == b;
  case GL_PTX_CMP_NAN:
    return a != a || b != b;
  default:
    return 0;
  }
}

/* setp on half types: scalar types write d (and q = !d); x2 types write
 * d from the low halves and q from the high halves, each combined with
 * src[2] by the boolop. set: per element all ones (u32/s32 destination,
 * 16 bits per element for x2 sources) or 1.0 in the destination format. */
static int compare(const hctx *x, uint64_t *const dst[2], const uint64_t *const src[4]) {
  const gl_ptx_insn *in = x->in;
  const unsigned mode = in->mode, bop = in->boolop;
  if (mode > GL_PTX_CMP_NAN || mode == GL_PTX_CMP_LO || mode == GL_PTX_CMP_LS ||
      mode == GL_PTX_CMP_HI || mode == GL_PTX_CMP_HS)
    return -1;
  if (bop && (in->nsrc < 3 || !src[2]))
    return -1;
  if (in->op == GL_PTX_OP_SETP && x->n == 1) {
    uint32_t r = 0;
    GL_EMU__LANES(x->mask, l) {
      r |= (uint32_t)hcmp(mode, hdec(x, (uint16_t)x->a[l]), hdec(x, (uint16_t)x->b[l])) << l;
    }
    return gl_emu__write_cmp(in, dst, src, x->mask, r);
  }
  uint64_t *q = in->ndst > 1 ? dst[1] : NULL;
  uint64_t one_elem;
  switch (in->op == GL_PTX_OP_SET ? in->type : GL_PTX_T_PRED) {
  case GL_PTX_T_PRED:
    one_elem = 1;
    break;
  case GL_PTX_T_U32:
  case GL_PTX_T_S32:
  case GL_PTX_T_B32:
    one_elem = x->n == 2 ? 0xffffu : 0xffffffffu;
    break;
  case GL_PTX_T_F32:
    one_elem = 0x3f800000u;
    break;
  case GL_PTX_T_F16:
  case GL_PTX_T_F16X2:
    one_elem = 0x3c00u;
    break;
  case GL_PTX_T_BF16:
  case GL_PTX_T_BF16X2:
    one_elem = 0x3f80u;
    break;
  default:
    return -1;
  }
  /* an s32 destination holds its value sign-extended */
  const int sext = in->op == GL_PTX_OP_SET && in->type == GL_PTX_T_S32;
  GL_EMU__LANES(x->mask, l) {
    uint64_t out = 0, rr[2] = {0, 0};
    const uint64_t av = x->a[l], bv = x->b[l], cv = bop ? (src[2][l] != 0) : 0;
    for (unsigned k = 0; k < x->n; k++) {
      unsigned sh = 16 * k;
      uint64_t r = (uint64_t)hcmp(mode, hdec(x, (uint16_t)(av >> sh)),
                                  hdec(x, (uint16_t)(bv >> sh)));
      if (bop == GL_PTX_BOOL_AND)
        r &= cv;
      else if (bop == GL_PTX_BOOL_OR)
        r |= cv;
      else if (bop == GL_PTX_BOOL_XOR)
        r ^= cv;
      rr[k] = r;
      out |= (r ? one_elem : 0) << sh;
    }
    if (in->op == GL_PTX_OP_SET) {
      x->d[l] = sext ? gl_emu__ext(out, 32, 1) : out;
    } else {
      dst[0][l] = rr[0];
      if (q)
        q[l] = rr[1];
    }
  }
  return 0;
}

int gl_emu__alu_half(GL_EMU__ALU_ARGS) {
  (void)cc;
  const unsigned op = in->op, fl = in->flags;
  const unsigned t = op == GL_PTX_OP_SET ? in->type2 : in->type;
  const int bf = t == GL_PTX_T_BF16 || t == GL_PTX_T_BF16X2;
  hctx xs = {
      .in = in,
      .fmt = bf ? &gl_emu__fmt_bf16 : &gl_emu__fmt_f16,
      .d = dst[0],
      .a = in->nsrc > 0 ? src[0] : NULL,
      .b = in->nsrc > 1 ? src[1] : NULL,
      .c = in->nsrc > 2 ? src[2] : NULL,
      .mask = mask,
      .n = (t == GL_PTX_T_F16X2 || t == GL_PTX_T_BF16X2) ? 2 : 1,
      .rnd = in->rnd,
      .bf = bf,
      .ftz = (fl & GL_PTX_F_FTZ) != 0,
      .sat = (fl & GL_PTX_F_SAT) != 0,
      .relu = (fl & GL_PTX_F_RELU) != 0,
      .one = bf ? 0x3f80u : 0x3c00u,
  };
  const hctx *x = &xs;
  if (!x->a || !x->d)
    return -1;
  if (op == GL_PTX_OP_SETP || op == GL_PTX_OP_SET) {
    if (!x->b)
      return -1;
    xs.c = NULL;
    return compare(x, dst, src);
  }
  const int nanp = (fl & GL_PTX_F_NAN) != 0;
  switch (op) {
  case GL_PTX_OP_ADD:
  case GL_PTX_OP_SUB:
  case GL_PTX_OP_MUL:
  case GL_PTX_OP_MIN:
  case GL_PTX_OP_MAX:
    if (!x->b)
      return -1;
    xs.c = NULL;
    break;
  case GL_PTX_OP_FMA:
  case GL_PTX_OP_MAD:
    if (!x->b || !x->c)
      return -1;
    break;
  case GL_PTX_OP_NEG:
  case GL_PTX_OP_ABS:
  case GL_PTX_OP_EX2:
  case GL_PTX_OP_TANH:
    xs.b = xs.c = NULL;
    break;
  default:
    return -1;
  }
  switch (op) {
  case GL_PTX_OP_ADD:
    H_LOOP(henc(x, a + b));
    return 0;
  case GL_PTX_OP_SUB:
    H_LOOP(henc(x, a - b));
    return 0;
  case GL_PTX_OP_MUL:
    H_LOOP(henc(x, a * b));
    return 0;
  case GL_PTX_OP_FMA:
  case GL_PTX_OP_MAD:
    H_LOOP(hpost(x, gl_emu__fma_small(a, b, c, x->fmt, x->rnd)));
    return 0;
  case GL_PTX_OP_MIN:
  case GL_PTX_OP_MAX:
    if (fl & GL_PTX_F_XORSIGN_ABS) {
      H_LOOP(hminmax_xs(x, a, b, op == GL_PTX_OP_MAX, nanp));
    } else {
      H_LOOP(henc(x, hminmax(a, b, op == GL_PTX_OP_MAX, nanp)));
    }
    return 0;
  case GL_PTX_OP_EX2:
    H_LOOP(henc(x, exp2(a)));
    return 0;
  case GL_PTX_OP_TANH:
    H_LOOP(henc(x, tanh(a)));
    return 0;
  default:
    break;
  }
  /* neg/abs: the sign bit only (after .ftz), NaN payloads kept */
  const uint16_t expmask = bf ? 0x7f80u : 0x7c00u;
  GL_EMU__LANES(mask, l) {
    uint64_t out = 0;
    for (unsigned k = 0; k < x->n; k++) {
      uint16_t h = (uint16_t)(x->a[l] >> (16 * k));
      if (x->ftz && (h & expmask) == 0)
        h &= 0x8000u;
      h = op == GL_PTX_OP_NEG ? (uint16_t)(h ^ 0x8000u) : (uint16_t)(h & 0x7fffu);
      out |= (uint64_t)h << (16 * k);
    }
    x->d[l] = out;
  }
  return 0;
}
