/*
 * alu_float.c - f32 and f64 arithmetic: add/sub/mul, mad/fma (fused, one
 * rounding), div (IEEE, .approx, .full), abs/neg, min/max with PTX's NaN
 * and signed-zero rules, rcp/sqrt/rsqrt, the .approx transcendentals
 * (sin, cos, lg2, ex2, tanh), copysign, testp and the float compares of
 * setp and set.
 *
 * IEEE-rounded operations (.rn/.rz/.rm/.rp) are the host's own SSE
 * arithmetic (fmaf/fma for fused ones) run under the matching host
 * rounding mode, switched once around the lane loop and only for a
 * directed mode. .ftz flushes f32 subnormal inputs before and results
 * after the operation (sign kept); .sat clamps f32 results to [0, 1] with
 * NaN going to +0. f32 NaN results are PTX's canonical 0x7fffffff; f64
 * NaN results follow gl_emu__out64. The .approx forms are computed in
 * double and rounded once (bounds: alu.c).
 */
#include "emu/alu_internal.h"

typedef struct fctx {
  const gl_ptx_insn *in;
  uint64_t *d;
  const uint64_t *a, *b, *c;
  uint32_t mask;
  int ftz, sat;
} fctx;

/* Reading and writing f32 lanes under the instruction's .ftz/.sat. */
static inline float rd32(const fctx *x, uint64_t v) {
  float f = gl_emu__f32(v);
  return x->ftz ? gl_emu__ftz32(f) : f;
}
static inline uint64_t wr32(const fctx *x, float r) {
  if (x->ftz)
    r = gl_emu__ftz32(r);
  if (x->sat)
    r = gl_emu__sat32(r);
  return gl_emu__out32(r);
}
static inline uint64_t wr64(const fctx *x, double r, double a, double b, double c) {
  if (x->sat)
    r = gl_emu__sat64(r);
  return gl_emu__out64(r, a, b, c, 0);
}

#define F32_LOOP1(EXPR)                                                            \
  GL_EMU__LANES(x->mask, l) {                                                      \
    float a = rd32(x, x->a[l]);                                                    \
    x->d[l] = wr32(x, (EXPR));                                                     \
  }
#define F32_LOOP2(EXPR)                                                            \
  GL_EMU__LANES(x->mask, l) {                                                      \
    float a = rd32(x, x->a[l]), b = rd32(x, x->b[l]);                              \
    x->d[l] = wr32(x, (EXPR));                                                     \
  }
#define F32_LOOP3(EXPR)                                                            \
  GL_EMU__LANES(x->mask, l) {                                                      \
    float a = rd32(x, x->a[l]), b = rd32(x, x->b[l]), c = rd32(x, x->c[l]);        \
    x->d[l] = wr32(x, (EXPR));                                                     \
  }
#define F64_LOOP1(EXPR)                                                            \
  GL_EMU__LANES(x->mask, l) {                                                      \
    double a = gl_emu__f64(x->a[l]);                                               \
    if (x->ftz)                                                                    \
      a = gl_emu__ftz64(a);                                                        \
    double r = (EXPR);                                                             \
    if (x->ftz)                                                                    \
      r = gl_emu__ftz64(r);                                                        \
    x->d[l] = wr64(x, r, a, 0, 0);                                                 \
  }
#define F64_LOOP2(EXPR)                                                            \
  GL_EMU__LANES(x->mask, l) {                                                      \
    double a = gl_emu__f64(x->a[l]), b = gl_emu__f64(x->b[l]);                     \
    x->d[l] = wr64(x, (EXPR), a, b, 0);                                            \
  }
#define F64_LOOP3(EXPR)                                                            \
  GL_EMU__LANES(x->mask, l) {                                                      \
    double a = gl_emu__f64(x->a[l]), b = gl_emu__f64(x->b[l]), c = gl_emu__f64(x->c[l]); \
    x->d[l] = wr64(x, (EXPR), a, b, c);                                            \
  }

/* fma.f64: NaN operands are picked as gl_emu__out64 says for fused ops. */
#define F64_LOOP3_FMA(EXPR)                                                        \
  GL_EMU__LANES(x->mask, l) {                                                      \
    double a = gl_emu__f64(x->a[l]), b = gl_emu__f64(x->b[l]), c = gl_emu__f64(x->c[l]); \
    double r_ = (EXPR);                                                            \
    x->d[l] = gl_emu__out64(x->sat ? gl_emu__sat64(r_) : r_, a, b, c, 1);          \
  }

/* ---- min / max ---------------------------------------------------------- */

/* PTX min/max: a NaN operand is ignored (both NaN: NaN); with .NaN any NaN
 * operand gives NaN; -0 counts as less than +0. Returns the value, NaN
 * results being encoded by the caller. */
static inline float minmax32(float a, float b, int max, int nanprop) {
  if (a != a || b != b) {
    if (nanprop || (a != a && b != b))
      return NAN;
    return a != a ? b : a;
  }
  if (a == b) /* equal, or +0 and -0: pick by sign */
    return (signbit(a) != 0) == max ? b : a;
  return (a < b) != max ? a : b;
}
static inline double minmax64(double a, double b, int max, int nanprop) {
  if (a != a || b != b) {
    if (nanprop || (a != a && b != b))
      return a != a ? a : b;
    return a != a ? b : a;
  }
  if (a == b)
    return (signbit(a) != 0) == max ? b : a;
  return (a < b) != max ? a : b;
}

static int min_max(const fctx *x, int f64, int max) {
  const unsigned fl = x->in->flags;
  const int nanp = (fl & GL_PTX_F_NAN) != 0, xs = (fl & GL_PTX_F_XORSIGN_ABS) != 0;
  if (f64) {
    /* of two NaNs the one with the larger raw magnitude bits wins, and
     * on a tie min gives the negative one, max the positive one (as an
     * H200 does); a single NaN operand is ignored */
    GL_EMU__LANES(x->mask, l) {
      uint64_t ua = x->a[l], ub = x->b[l];
      double r = minmax64(gl_emu__f64(ua), gl_emu__f64(ub), max, nanp);
      if (r == r) {
        x->d[l] = gl_emu__b64(r);
        continue;
      }
      uint64_t ma = ua & 0x7fffffffffffffffull, mb = ub & 0x7fffffffffffffffull;
      uint64_t w;
      if (!gl_emu__isnan64(ua)) w = ub;
      else if (!gl_emu__isnan64(ub)) w = ua;
      else if (ma != mb) w = ma > mb ? ua : ub;
      else w = ((ua >> 63) != 0) == !max ? ua : ub;
      x->d[l] = w | 0x0008000000000000ull;
    }
    return 0;
  }
  if (xs) {
    /* .xorsign.abs: min/max of the magnitudes, sign = sign(a) ^ sign(b) */
    GL_EMU__LANES(x->mask, l) {
      float a = rd32(x, x->a[l]), b = rd32(x, x->b[l]);
      float r = minmax32(fabsf(a), fabsf(b), max, nanp);
      if (r == r && (signbit(a) != 0) != (signbit(b) != 0))
        r = -r;
      x->d[l] = wr32(x, r);
    }
    return 0;
  }
  F32_LOOP2(minmax32(a, b, max, nanp));
  return 0;
}

/* ---- Division and the approximations ------------------------------------ */

/* div.approx.f32: a * (1/b) where 1/b flushes to zero for |b| > 2^126, as
 * PTX documents (then a = inf gives NaN, anything else a zero). */
static inline float div_approx32(float a, float b) {
  if (fabsf(b) > 0x1p126f)
    return a * copysignf(0.0f, b);
  return (float)((double)a / (double)b);
}

static inline float rsqrt32(float a) {
  return (float)(1.0 / sqrt((double)a));
}

/* ex2.approx of -inf is +0, lg2.approx of 0 is -inf: the libm results. */
static inline float ex2_32(float a) {
  return (float)exp2((double)a);
}
static inline float lg2_32(float a) {
  return (float)log2((double)a);
}

static int div_rcp_sqrt(const fctx *x, int f64) {
  const unsigned op = x->in->op, fl = x->in->flags;
  const int approx = (fl & (GL_PTX_F_APPROX | GL_PTX_F_FULL)) != 0;
  if (f64) {
    switch (op) {
    case GL_PTX_OP_DIV:
      F64_LOOP2(a / b);
      return 0;
    case GL_PTX_OP_RCP:
      F64_LOOP1(1.0 / a);
      return 0;
    case GL_PTX_OP_SQRT:
      F64_LOOP1(sqrt(a));
      return 0;
    case GL_PTX_OP_RSQRT:
      F64_LOOP1(1.0 / sqrt(a));
      return 0;
    default:
      return -1;
    }
  }
  switch (op) {
  case GL_PTX_OP_DIV:
    if (fl & GL_PTX_F_APPROX) {
      F32_LOOP2(div_approx32(a, b));
    } else if (fl & GL_PTX_F_FULL) {
      F32_LOOP2((float)((double)a / (double)b));
    } else {
      F32_LOOP2(a / b);
    }
    return 0;
  case GL_PTX_OP_RCP:
    if (approx) {
      F32_LOOP1((float)(1.0 / (double)a));
    } else {
      F32_LOOP1(1.0f / a);
    }
    return 0;
  case GL_PTX_OP_SQRT:
    F32_LOOP1(sqrtf(a));
    return 0;
  case GL_PTX_OP_RSQRT:
    F32_LOOP1(rsqrt32(a));
    return 0;
  default:
    return -1;
  }
}

static int transcendental(const fctx *x, int f64) {
  if (f64) {
    switch (x->in->op) {
    case GL_PTX_OP_SIN:
      F64_LOOP1(sin(a));
      return 0;
    case GL_PTX_OP_COS:
      F64_LOOP1(cos(a));
      return 0;
    case GL_PTX_OP_LG2:
      F64_LOOP1(log2(a));
      return 0;
    case GL_PTX_OP_EX2:
      F64_LOOP1(exp2(a));
      return 0;
    case GL_PTX_OP_TANH:
      F64_LOOP1(tanh(a));
      return 0;
    default:
      return -1;
    }
  }
  switch (x->in->op) {
  case GL_PTX_OP_SIN:
    F32_LOOP1((float)sin((double)a));
    return 0;
  case GL_PTX_OP_COS:
    F32_LOOP1((float)cos((double)a));
    return 0;
  case GL_PTX_OP_LG2:
    F32_LOOP1(lg2_32(a));
    return 0;
  case GL_PTX_OP_EX2:
    F32_LOOP1(ex2_32(a));
    return 0;
  case GL_PTX_OP_TANH:
    F32_LOOP1((float)tanh((double)a));
    return 0;
  default:
    return -1;
  }
}

/* ---- Bits: abs, neg, copysign, testp ------------------------------------ */

static int bit_ops(const fctx *x, int f64) {
  const unsigned op = x->in->op;
  const uint64_t sign = f64 ? 0x8000000000000000ull : 0x80000000ull;
  GL_EMU__LANES(x->mask, l) {
    uint64_t a = x->a[l];
    if (!f64) {
      a &= 0xffffffffu;
      if (x->ftz)
        a = gl_emu__b32(gl_emu__ftz32(gl_emu__f32(a)));
    } else if (x->ftz) {
      a = gl_emu__b64(gl_emu__ftz64(gl_emu__f64(a)));
    }
    uint64_t r;
    const int nan = f64 ? (a & 0x7fffffffffffffffull) > 0x7ff0000000000000ull
                         : (a & 0x7fffffffu) > 0x7f800000u;
    if ((op == GL_PTX_OP_ABS || op == GL_PTX_OP_NEG) && nan) {
      /* as an H200 does: f32 gives the canonical NaN, f64 the operand
       * quieted with its sign unchanged */
      r = f64 ? a | 0x0008000000000000ull : GL_EMU__NAN32;
    } else if (op == GL_PTX_OP_ABS) {
      r = a & ~sign;
    } else if (op == GL_PTX_OP_NEG) {
      r = a ^ sign;
    } else { /* copysign d, a, b: b's magnitude with a's sign */
      uint64_t b = f64 ? x->b[l] : x->b[l] & 0xffffffffu;
      r = (a & sign) | (b & ~sign);
    }
    x->d[l] = r;
  }
  return 0;
}

static inline int testp_class(int cls, unsigned mode) {
  switch (mode) {
  case GL_PTX_TESTP_FINITE:
    return cls != FP_INFINITE && cls != FP_NAN;
  case GL_PTX_TESTP_INFINITE:
    return cls == FP_INFINITE;
  case GL_PTX_TESTP_NUMBER:
    return cls != FP_NAN;
  case GL_PTX_TESTP_NOTANUMBER:
    return cls == FP_NAN;
  case GL_PTX_TESTP_NORMAL:
    return cls == FP_NORMAL;
  case GL_PTX_TESTP_SUBNORMAL:
    return cls == FP_SUBNORMAL;
  default:
    return 0;
  }
}

static int testp(const fctx *x, int f64) {
  const unsigned mode = x->in->mode;
  if (mode > GL_PTX_TESTP_SUBNORMAL)
    return -1;
  GL_EMU__LANES(x->mask, l) {
    int cls = f64 ? fpclassify(gl_emu__f64(x->a[l])) : fpclassify(gl_emu__f32(x->a[l]));
    x->d[l] = (uint64_t)testp_class(cls, mode);
  }
  return 0;
}

/* ---- Compares ----------------------------------------------------------- */

/* One loop per comparison; `a`, `b` are the (flushed) operands. */
#define FCMP_CASES(LOOP)                                                           \
  case GL_PTX_CMP_EQ:                                                              \
    LOOP(a == b);                                                                  \
    break;                                                                         \
  case GL_PTX_CMP_NE:                                                              \
    LOOP(a < b || a > b);                                                          \
    break;                                                                         \
  case GL_PTX_CMP_LT:                                                              \
    LOOP(a < b);                                                                   \
    break;                                                                         \
  case GL_PTX_CMP_LE:                                                              \
    LOOP(a <= b);                                                                  \
    break;                                                                         \
  case GL_PTX_CMP_GT:                                                              \
    LOOP(a > b);                                                                   \
    break;                                                                         \
  case GL_PTX_CMP_GE:                                                              \
    LOOP(a >= b);                                                                  \
    break;                                                                         \
  case GL_PTX_CMP_EQU:                                                             \
    LOOP(!(a < b || a > b));                                                       \
    break;                                                                         \
  case GL_PTX_CMP_NEU:                                                             \
    LOOP(a != b);                                                                  \
    break;                                                                         \
  case GL_PTX_CMP_LTU:                                                             \
    LOOP(!(a >= b));                                                               \
    break;                                                                         \
  case GL_PTX_CMP_LEU:                                                             \
    LOOP(!(a > b));                                                                \
    break;                                                                         \
  case GL_PTX_CMP_GTU:                                                             \
    LOOP(!(a <= b));                                                               \
    break;                                                                         \
  case GL_PTX_CMP_GEU:                                                             \
    LOOP(!(a < b));                                                                \
    break;                                                                         \
  case GL_PTX_CMP_NUM:                                                             \
    LOOP(a == a && b == b);                                                        \
    break;                                                                         \
  case GL_PTX_CMP_NAN:                                                             \
    LOOP(a != a || b != b);                                                        \
    break;                                                                         \
  default:                                                                         \
    return -1;

#define CMP32(EXPR)                                                                \
  GL_EMU__LANES(x->mask, l) {                                                      \
    float a = rd32(x, x->a[l]), b = rd32(x, x->b[l]);                              \
    r |= (uint32_t)(EXPR) << l;                                                    \
  }
#define CMP64(EXPR)                                                                \
  GL_EMU__LANES(x->mask, l) {                                                      \
    double a = gl_emu__f64(x->a[l]), b = gl_emu__f64(x->b[l]);                     \
    r |= (uint32_t)(EXPR) << l;                                                    \
  }

static int compare(const fctx *x, int f64, uint64_t *const dst[2],
                   const uint64_t *const src[4]) {
  uint32_t r = 0;
  if (f64) {
    switch (x->in->mode) { FCMP_CASES(CMP64) }
  } else {
    switch (x->in->mode) { FCMP_CASES(CMP32) }
  }
  return gl_emu__write_cmp(x->in, dst, src, x->mask, r);
}

/* ---- Dispatch ----------------------------------------------------------- */

int gl_emu__alu_float(GL_EMU__ALU_ARGS) {
  (void)cc;
  const unsigned op = in->op, fl = in->flags;
  const unsigned t = op == GL_PTX_OP_SET ? in->type2 : in->type;
  const int f64 = t == GL_PTX_T_F64;
  fctx xs = {
      .in = in,
      .d = dst[0],
      .a = in->nsrc > 0 ? src[0] : NULL,
      .b = in->nsrc > 1 ? src[1] : NULL,
      .c = in->nsrc > 2 ? src[2] : NULL,
      .mask = mask,
      .ftz = (fl & GL_PTX_F_FTZ) != 0,
      .sat = (fl & GL_PTX_F_SAT) != 0 && op != GL_PTX_OP_SET && op != GL_PTX_OP_SETP,
  };
  const fctx *x = &xs;
  if (!x->a || !x->d)
    return -1;
  int binary = op == GL_PTX_OP_ADD || op == GL_PTX_OP_SUB || op == GL_PTX_OP_MUL ||
               op == GL_PTX_OP_DIV || op == GL_PTX_OP_MIN || op == GL_PTX_OP_MAX ||
               op == GL_PTX_OP_COPYSIGN || op == GL_PTX_OP_SETP || op == GL_PTX_OP_SET ||
               op == GL_PTX_OP_MAD || op == GL_PTX_OP_FMA;
  if (binary && !x->b)
    return -1;
  if ((op == GL_PTX_OP_MAD || op == GL_PTX_OP_FMA) && !x->c)
    return -1;

  switch (op) {
  case GL_PTX_OP_MIN:
  case GL_PTX_OP_MAX:
    return min_max(x, f64, op == GL_PTX_OP_MAX);
  case GL_PTX_OP_ABS:
  case GL_PTX_OP_NEG:
  case GL_PTX_OP_COPYSIGN:
    return bit_ops(x, f64);
  case GL_PTX_OP_TESTP:
    return testp(x, f64);
  case GL_PTX_OP_SETP:
  case GL_PTX_OP_SET:
    return compare(x, f64, dst, src);
  case GL_PTX_OP_SIN:
  case GL_PTX_OP_COS:
  case GL_PTX_OP_LG2:
  case GL_PTX_OP_EX2:
  case GL_PTX_OP_TANH:
    return transcendental(x, f64);
  default:
    break;
  }

  /* IEEE-rounded arithmetic: under the instruction's rounding mode. The
   * .approx/.full forms always round to nearest. */
  int rc = 0;
  unsigned rnd = (fl & (GL_PTX_F_APPROX | GL_PTX_F_FULL)) ? GL_PTX_RND_RN : in->rnd;
  int saved = gl_emu__rnd_enter(rnd);
  switch (op) {
  case GL_PTX_OP_ADD:
    if (f64) {
      F64_LOOP2(a + b);
    } else if (!x->ftz && !x->sat) {
      /* the common case, kept minimal */
      GL_EMU__LANES(mask, l) {
        x->d[l] = gl_emu__out32(gl_emu__f32(x->a[l]) + gl_emu__f32(x->b[l]));
      }
    } else {
      F32_LOOP2(a + b);
    }
    break;
  case GL_PTX_OP_SUB:
    if (f64) {
      F64_LOOP2(a - b);
    } else {
      F32_LOOP2(a - b);
    }
    break;
  case GL_PTX_OP_MUL:
    if (f64) {
      F64_LOOP2(a * b);
    } else if (!x->ftz && !x->sat) {
      GL_EMU__LANES(mask, l) {
        x->d[l] = gl_emu__out32(gl_emu__f32(x->a[l]) * gl_emu__f32(x->b[l]));
      }
    } else {
      F32_LOOP2(a * b);
    }
    break;
  case GL_PTX_OP_MAD: /* mad.f32/f64 on sm_20+ is fma */
  case GL_PTX_OP_FMA:
    if (f64) {
      F64_LOOP3_FMA(fma(a, b, c));
    } else {
      F32_LOOP3(fmaf(a, b, c));
    }
    break;
  case GL_PTX_OP_DIV:
  case GL_PTX_OP_RCP:
  case GL_PTX_OP_SQRT:
  case GL_PTX_OP_RSQRT:
    rc = div_rcp_sqrt(x, f64);
    break;
  default:
    rc = -1;
    break;
  }
  gl_emu__rnd_leave(saved);
  return rc;
}
