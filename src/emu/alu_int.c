/*
 * alu_int.c - the integer, bit and predicate side of the ALU: add/sub
 * (with .sat and carries), the mul/mad family (.lo/.hi/.wide, 24-bit),
 * sad, div/rem, abs/neg, min/max, logic, shifts, bit-field ops, prmt,
 * shf, dp4a/dp2a, integer setp/set, and the type-blind moves (mov, selp,
 * slct) for every type.
 *
 * Every operand is read at the instruction type's width and extended to 64
 * bits (gl_emu__ext: sign for .s types, zero otherwise); arithmetic is done
 * on uint64_t, which wraps, so no signed overflow reaches the host; the
 * result is extended again from the destination width when stored.
 *
 * Each opcode is one loop over the lanes; flags that change the loop body
 * (.sat, .cc) pick a separate loop so the plain forms stay minimal.
 */
#include "emu/alu_internal.h"

/* Arguments unpacked once per instruction. */
typedef struct ictx {
  const gl_ptx_insn *in;
  uint64_t *d, *q;         /* dst[0], dst[1] (carry out, or NULL) */
  const uint64_t *a, *b, *c, *e; /* src[0..3] */
  const uint64_t *cc;      /* carry in */
  uint32_t mask;
  unsigned w;              /* operand width in bits */
  int sg;                  /* signed type */
} ictx;

static inline uint64_t ones(unsigned n) {
  return n >= 64 ? UINT64_MAX : (1ull << n) - 1;
}

/* ---- Arithmetic --------------------------------------------------------- */

static int add_sub(const ictx *x, int sub) {
  const unsigned w = x->w, fl = x->in->flags;
  const int sg = x->sg;
  const uint64_t *a = x->a, *b = x->b;
  uint64_t *d = x->d;
  if (fl & GL_PTX_F_SAT) {
    if (x->in->type != GL_PTX_T_S32)
      return -1;
    GL_EMU__LANES(x->mask, l) {
      int64_t r = (int64_t)(int32_t)a[l];
      r = sub ? r - (int32_t)b[l] : r + (int32_t)b[l];
      if (r > INT32_MAX)
        r = INT32_MAX;
      if (r < INT32_MIN)
        r = INT32_MIN;
      d[l] = (uint64_t)r;
    }
    return 0;
  }
  if (!(fl & (GL_PTX_F_CC | GL_PTX_F_CARRY_IN))) {
    if (sub) {
      GL_EMU__LANES(x->mask, l) { d[l] = gl_emu__ext(a[l] - b[l], w, sg); }
    } else {
      GL_EMU__LANES(x->mask, l) { d[l] = gl_emu__ext(a[l] + b[l], w, sg); }
    }
    return 0;
  }
  /* Carry chains: add.cc/addc write the carry out of the w-bit unsigned
   * sum; sub.cc/subc the borrow (PTX: subc computes a - (b + CF)). */
  const int cin = (fl & GL_PTX_F_CARRY_IN) != 0;
  if (cin && !x->cc)
    return -1;
  uint64_t *q = (fl & GL_PTX_F_CC) ? x->q : NULL;
  GL_EMU__LANES(x->mask, l) {
    unsigned __int128 av = gl_emu__ext(a[l], w, 0), bv = gl_emu__ext(b[l], w, 0);
    unsigned __int128 ci = cin ? (x->cc[l] & 1u) : 0, r;
    uint64_t co;
    if (sub) {
      r = av - bv - ci;
      co = av < bv + ci;
    } else {
      r = av + bv + ci;
      co = (uint64_t)(r >> w) & 1u;
    }
    d[l] = gl_emu__ext((uint64_t)r, w, sg);
    if (q)
      q[l] = co;
  }
  return 0;
}

/* High w bits of the 2w-bit product of two w-bit values (already
 * extended to 64 bits by signedness). */
static inline uint64_t mul_hi(uint64_t a, uint64_t b, unsigned w, int sg) {
  if (w == 64) {
    if (sg)
      return (uint64_t)(((__int128)(int64_t)a * (int64_t)b) >> 64);
    return (uint64_t)(((unsigned __int128)a * b) >> 64);
  }
  if (sg)
    return (uint64_t)(((int64_t)a * (int64_t)b) >> w);
  return (a * b) >> w;
}

static int mul_mad(const ictx *x, int mad) {
  const unsigned w = x->w, fl = x->in->flags;
  const int sg = x->sg;
  const uint64_t *a = x->a, *b = x->b, *c = x->c;
  uint64_t *d = x->d;
  if (mad && !c)
    return -1;
  switch (x->in->mode) {
  case GL_PTX_MUL_LO:
  case GL_PTX_MUL_HI: {
    const int hi = x->in->mode == GL_PTX_MUL_HI;
    if (fl & GL_PTX_F_SAT) { /* mad.hi.sat.s32 only */
      if (!mad || !hi || x->in->type != GL_PTX_T_S32)
        return -1;
      GL_EMU__LANES(x->mask, l) {
        int64_t r = (int64_t)(int32_t)mul_hi(a[l], b[l], 32, 1) + (int32_t)c[l];
        r = r > INT32_MAX ? INT32_MAX : r < INT32_MIN ? INT32_MIN : r;
        d[l] = (uint64_t)r;
      }
      return 0;
    }
    if (mad && (fl & (GL_PTX_F_CC | GL_PTX_F_CARRY_IN))) {
      const int cin = (fl & GL_PTX_F_CARRY_IN) != 0;
      if (cin && !x->cc)
        return -1;
      uint64_t *q = (fl & GL_PTX_F_CC) ? x->q : NULL;
      GL_EMU__LANES(x->mask, l) {
        uint64_t av = gl_emu__ext(a[l], w, sg), bv = gl_emu__ext(b[l], w, sg);
        uint64_t p = hi ? mul_hi(av, bv, w, sg) : av * bv;
        unsigned __int128 r = (unsigned __int128)gl_emu__ext(p, w, 0) +
                              gl_emu__ext(c[l], w, 0) + (cin ? (x->cc[l] & 1u) : 0);
        d[l] = gl_emu__ext((uint64_t)r, w, sg);
        if (q)
          q[l] = (uint64_t)(r >> w) & 1u;
      }
      return 0;
    }
    if (!hi) {
      if (mad) {
        GL_EMU__LANES(x->mask, l) { d[l] = gl_emu__ext(a[l] * b[l] + c[l], w, sg); }
      } else {
        GL_EMU__LANES(x->mask, l) { d[l] = gl_emu__ext(a[l] * b[l], w, sg); }
      }
      return 0;
    }
    GL_EMU__LANES(x->mask, l) {
      uint64_t p = mul_hi(gl_emu__ext(a[l], w, sg), gl_emu__ext(b[l], w, sg), w, sg);
      d[l] = gl_emu__ext(mad ? p + c[l] : p, w, sg);
    }
    return 0;
  }
  case GL_PTX_MUL_WIDE: {
    if (w > 32 || (fl & (GL_PTX_F_SAT | GL_PTX_F_CC | GL_PTX_F_CARRY_IN)))
      return -1;
    const unsigned w2 = 2 * w;
    GL_EMU__LANES(x->mask, l) {
      uint64_t av = gl_emu__ext(a[l], w, sg), bv = gl_emu__ext(b[l], w, sg);
      uint64_t p = av * bv; /* exact: |a*b| < 2^63 */
      d[l] = gl_emu__ext(mad ? p + c[l] : p, w2, sg);
    }
    return 0;
  }
  default:
    return -1;
  }
}

/* mul24/mad24 (.u32/.s32): 24-bit operands, 48-bit product; .lo is its low
 * 32 bits, .hi bits 47..16. */
static int mul24(const ictx *x, int mad) {
  const int sg = x->sg, hi = x->in->mode == GL_PTX_MUL_HI;
  const int sat = (x->in->flags & GL_PTX_F_SAT) != 0;
  if (x->w != 32 || (mad && !x->c) || x->in->mode == GL_PTX_MUL_WIDE)
    return -1;
  if (sat && (!mad || !hi || !sg))
    return -1;
  GL_EMU__LANES(x->mask, l) {
    int64_t a24 = sg ? (int64_t)gl_emu__ext(x->a[l], 24, 1) : (int64_t)(x->a[l] & 0xffffff);
    int64_t b24 = sg ? (int64_t)gl_emu__ext(x->b[l], 24, 1) : (int64_t)(x->b[l] & 0xffffff);
    uint64_t p = (uint64_t)(a24 * b24);
    uint64_t r = hi ? (p >> 16) & 0xffffffffu : p & 0xffffffffu;
    if (sat) {
      int64_t s = (int64_t)(int32_t)(uint32_t)r + (int32_t)x->c[l];
      s = s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : s;
      x->d[l] = (uint64_t)s;
    } else {
      x->d[l] = gl_emu__ext(mad ? r + x->c[l] : r, 32, sg);
    }
  }
  return 0;
}

static int sad(const ictx *x) {
  const unsigned w = x->w;
  const int sg = x->sg;
  if (!x->c)
    return -1;
  GL_EMU__LANES(x->mask, l) {
    uint64_t av = gl_emu__ext(x->a[l], w, sg), bv = gl_emu__ext(x->b[l], w, sg);
    int lt = sg ? (int64_t)av < (int64_t)bv : av < bv;
    x->d[l] = gl_emu__ext(x->c[l] + (lt ? bv - av : av - bv), w, sg);
  }
  return 0;
}

/* div/rem. By zero: quotient all ones (unsigned) or -1 (signed), remainder
 * the dividend; MIN / -1 wraps to MIN with remainder 0. */
static int div_rem(const ictx *x, int rem) {
  const unsigned w = x->w;
  const int sg = x->sg;
  GL_EMU__LANES(x->mask, l) {
    uint64_t av = gl_emu__ext(x->a[l], w, sg), bv = gl_emu__ext(x->b[l], w, sg), r;
    if (bv == 0) {
      r = rem ? av : UINT64_MAX;
    } else if (sg) {
      int64_t sa = (int64_t)av, sb = (int64_t)bv;
      if (sb == -1)
        r = rem ? 0 : 0 - av; /* wraps at MIN */
      else
        r = (uint64_t)(rem ? sa % sb : sa / sb);
    } else {
      r = rem ? av % bv : av / bv;
    }
    x->d[l] = gl_emu__ext(r, w, sg);
  }
  return 0;
}

static int abs_neg(const ictx *x, int neg) {
  const unsigned w = x->w;
  if (!x->sg && !neg)
    return -1;
  GL_EMU__LANES(x->mask, l) {
    uint64_t v = gl_emu__ext(x->a[l], w, 1);
    uint64_t r = (neg || (int64_t)v < 0) ? 0 - v : v;
    x->d[l] = gl_emu__ext(r, w, x->sg);
  }
  return 0;
}

static int min_max(const ictx *x, int max) {
  const unsigned w = x->w;
  const int sg = x->sg, relu = (x->in->flags & GL_PTX_F_RELU) != 0;
  if (relu && !sg)
    return -1;
  GL_EMU__LANES(x->mask, l) {
    uint64_t av = gl_emu__ext(x->a[l], w, sg), bv = gl_emu__ext(x->b[l], w, sg);
    int lt = sg ? (int64_t)av < (int64_t)bv : av < bv;
    uint64_t r = (lt != max) ? av : bv;
    if (relu && (int64_t)r < 0)
      r = 0;
    x->d[l] = r;
  }
  return 0;
}

/* ---- Logic and shifts --------------------------------------------------- */

static int logic(const ictx *x) {
  const unsigned op = x->in->op, w = x->w;
  const int sg = x->sg;
  const uint64_t *a = x->a, *b = x->b;
  uint64_t *d = x->d;
  if (x->in->type == GL_PTX_T_PRED) {
    switch (op) {
    case GL_PTX_OP_AND:
      GL_EMU__LANES(x->mask, l) { d[l] = (a[l] != 0) & (b[l] != 0); }
      return 0;
    case GL_PTX_OP_OR:
      GL_EMU__LANES(x->mask, l) { d[l] = (a[l] != 0) | (b[l] != 0); }
      return 0;
    case GL_PTX_OP_XOR:
      GL_EMU__LANES(x->mask, l) { d[l] = (a[l] != 0) ^ (b[l] != 0); }
      return 0;
    case GL_PTX_OP_NOT:
    case GL_PTX_OP_CNOT:
      GL_EMU__LANES(x->mask, l) { d[l] = a[l] == 0; }
      return 0;
    default:
      return -1;
    }
  }
  switch (op) {
  case GL_PTX_OP_AND:
    GL_EMU__LANES(x->mask, l) { d[l] = gl_emu__ext(a[l] & b[l], w, sg); }
    return 0;
  case GL_PTX_OP_OR:
    GL_EMU__LANES(x->mask, l) { d[l] = gl_emu__ext(a[l] | b[l], w, sg); }
    return 0;
  case GL_PTX_OP_XOR:
    GL_EMU__LANES(x->mask, l) { d[l] = gl_emu__ext(a[l] ^ b[l], w, sg); }
    return 0;
  case GL_PTX_OP_NOT:
    GL_EMU__LANES(x->mask, l) { d[l] = gl_emu__ext(~a[l], w, sg); }
    return 0;
  case GL_PTX_OP_CNOT:
    GL_EMU__LANES(x->mask, l) { d[l] = gl_emu__ext(a[l], w, 0) == 0; }
    return 0;
  default:
    return -1;
  }
}

/* shl/shr: the amount is src[1]'s u32 value; at or past the width, shl and
 * shr.u/.b give 0 and shr.s gives the sign fill. */
static int shift(const ictx *x, int right) {
  const unsigned w = x->w;
  const int sg = x->sg;
  const uint64_t *a = x->a, *b = x->b;
  uint64_t *d = x->d;
  if (!right) {
    GL_EMU__LANES(x->mask, l) {
      uint32_t n = (uint32_t)b[l];
      d[l] = n >= w ? 0 : gl_emu__ext(a[l] << n, w, sg);
    }
  } else if (sg) {
    GL_EMU__LANES(x->mask, l) {
      uint32_t n = (uint32_t)b[l];
      int64_t v = (int64_t)gl_emu__ext(a[l], w, 1);
      d[l] = (uint64_t)(v >> (n >= w ? w - 1 : n));
    }
  } else {
    GL_EMU__LANES(x->mask, l) {
      uint32_t n = (uint32_t)b[l];
      d[l] = n >= w ? 0 : gl_emu__ext(a[l], w, 0) >> n;
    }
  }
  return 0;
}

/* ---- Bit operations ----------------------------------------------------- */

static int popc_clz_brev(const ictx *x) {
  const unsigned w = x->w, op = x->in->op;
  if (w != 32 && w != 64)
    return -1;
  GL_EMU__LANES(x->mask, l) {
    uint64_t v = gl_emu__ext(x->a[l], w, 0), r;
    if (op == GL_PTX_OP_POPC) {
      r = (uint64_t)__builtin_popcountll(v);
    } else if (op == GL_PTX_OP_CLZ) {
      r = v ? (uint64_t)__builtin_clzll(v) - (64 - w) : w;
    } else {
      r = 0;
      for (unsigned i = 0; i < w; i++)
        r |= ((v >> i) & 1u) << (w - 1 - i);
    }
    x->d[l] = r;
  }
  return 0;
}

/* bfe d, a, pos, len: pos and len are bytes 0 of b and c. Bits of d past
 * the field (or past a's msb) are 0 for .u types and, for .s types, a's
 * bit min(pos+len-1, msb); len 0 gives 0. */
static int bfe(const ictx *x) {
  const unsigned w = x->w;
  const int sg = x->sg;
  if ((w != 32 && w != 64) || !x->c)
    return -1;
  GL_EMU__LANES(x->mask, l) {
    uint64_t a = gl_emu__ext(x->a[l], w, 0), r;
    unsigned pos = (unsigned)(x->b[l] & 0xff), len = (unsigned)(x->c[l] & 0xff);
    if (len == 0) {
      r = 0;
    } else {
      unsigned top = pos + len - 1 < w - 1 ? pos + len - 1 : w - 1;
      uint64_t sbit = sg ? (a >> top) & 1u : 0;
      if (pos >= w) {
        r = sbit ? UINT64_MAX : 0;
      } else {
        unsigned n = len < w - pos ? len : w - pos;
        r = (a >> pos) & ones(n);
        if (sbit)
          r |= ~ones(n);
      }
    }
    x->d[l] = gl_emu__ext(r, w, sg);
  }
  return 0;
}

/* bfi f, a, b, pos, len: b with its bits [pos, pos+len) (clipped at the
 * msb) replaced by a's low bits. */
static int bfi(const ictx *x) {
  const unsigned w = x->w;
  if ((w != 32 && w != 64) || !x->c || !x->e)
    return -1;
  GL_EMU__LANES(x->mask, l) {
    uint64_t a = x->a[l], b = x->b[l];
    unsigned pos = (unsigned)(x->c[l] & 0xff), len = (unsigned)(x->e[l] & 0xff);
    uint64_t r = b;
    if (len && pos < w) {
      unsigned n = len < w - pos ? len : w - pos;
      uint64_t m = ones(n) << pos;
      r = (b & ~m) | ((a << pos) & m);
    }
    x->d[l] = gl_emu__ext(r, w, 0);
  }
  return 0;
}

/* bfind: bit index of the most significant non-sign bit, 0xffffffff when
 * there is none; .shiftamt gives the left shift that would bring it to
 * the msb instead. */
static int bfind(const ictx *x) {
  const unsigned w = x->w;
  const int sg = x->sg, amt = (x->in->flags & GL_PTX_F_SHIFTAMT) != 0;
  if (w != 32 && w != 64)
    return -1;
  GL_EMU__LANES(x->mask, l) {
    uint64_t v = gl_emu__ext(x->a[l], w, sg);
    if (sg && (int64_t)v < 0)
      v = ~v;
    v = gl_emu__ext(v, w, 0);
    uint64_t r = 0xffffffffu;
    if (v) {
      unsigned pos = 63u - (unsigned)__builtin_clzll(v);
      r = amt ? w - 1 - pos : pos;
    }
    x->d[l] = r;
  }
  return 0;
}

/* prmt byte indices (d.b0..d.b3) for the named modes by selector c[1:0]. */
static const uint8_t prmt_tab[7][4][4] = {
    [GL_PTX_PRMT_F4E] = {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}},
    [GL_PTX_PRMT_B4E] = {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}},
    [GL_PTX_PRMT_RC8] = {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},
    [GL_PTX_PRMT_ECL] = {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}},
    [GL_PTX_PRMT_ECR] = {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}},
    [GL_PTX_PRMT_RC16] = {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}},
};

/* prmt d, a, b, c: picks bytes of {b, a} (a is bytes 0-3, b bytes 4-7).
 * Default mode: nibble i of c selects d's byte i, its bit 3 replicating
 * the chosen byte's sign instead. */
static int prmt(const ictx *x) {
  const unsigned mode = x->in->mode;
  if (x->w != 32 || !x->c || mode > GL_PTX_PRMT_RC16)
    return -1;
  GL_EMU__LANES(x->mask, l) {
    uint64_t v = ((x->b[l] & 0xffffffffu) << 32) | (x->a[l] & 0xffffffffu);
    uint32_t c = (uint32_t)x->c[l], r = 0;
    for (unsigned i = 0; i < 4; i++) {
      unsigned sel, byte;
      if (mode == GL_PTX_PRMT_DEFAULT) {
        sel = (c >> (4 * i)) & 0xfu;
        byte = (unsigned)(v >> (8 * (sel & 7u))) & 0xffu;
        if (sel & 8u)
          byte = (byte & 0x80u) ? 0xffu : 0;
      } else {
        sel = prmt_tab[mode][c & 3u][i];
        byte = (unsigned)(v >> (8 * sel)) & 0xffu;
      }
      r |= (uint32_t)byte << (8 * i);
    }
    x->d[l] = r;
  }
  return 0;
}

/* shf.l/.r d, a, b, c: the 64-bit {b, a} shifted by c (c & 31 for .wrap,
 * min(c, 32) for .clamp); .l keeps the upper 32 bits, .r the lower. */
static int shf(const ictx *x) {
  const int clamp = (x->in->flags & GL_PTX_F_CLAMP) != 0;
  const int right = x->in->mode == GL_PTX_SHF_R;
  if (x->w != 32 || !x->c)
    return -1;
  GL_EMU__LANES(x->mask, l) {
    uint64_t v = ((x->b[l] & 0xffffffffu) << 32) | (x->a[l] & 0xffffffffu);
    uint32_t n = (uint32_t)x->c[l];
    n = clamp ? (n > 32 ? 32 : n) : (n & 31u);
    uint32_t r = right ? (uint32_t)(v >> n) : (uint32_t)((v << n) >> 32);
    x->d[l] = gl_emu__ext(r, 32, x->sg);
  }
  return 0;
}

/* dp4a.atype.btype d, a, b, c and dp2a.{lo,hi}: byte (dp2a: half-word
 * of a) dot products added to c; d is .u32 when both types are, else .s32. */
static int dp(const ictx *x, int two) {
  const unsigned t2 = x->in->type2;
  const int sa = x->sg, sb = t2 == GL_PTX_T_S32;
  if (x->w != 32 || (t2 != GL_PTX_T_U32 && t2 != GL_PTX_T_S32) || !x->c)
    return -1;
  const int sd = sa || sb;
  const unsigned k = x->in->mode ? 2 : 0; /* dp2a.hi uses bytes 2, 3 of b */
  GL_EMU__LANES(x->mask, l) {
    uint64_t acc = x->c[l];
    for (unsigned i = 0; i < (two ? 2u : 4u); i++) {
      uint64_t av = two ? gl_emu__ext(x->a[l] >> (16 * i), 16, sa)
                        : gl_emu__ext(x->a[l] >> (8 * i), 8, sa);
      uint64_t bv = gl_emu__ext(x->b[l] >> (8 * (two ? k + i : i)), 8, sb);
      acc += av * bv;
    }
    x->d[l] = gl_emu__ext(acc, 32, sd);
  }
  return 0;
}

/* ---- Compares and selects ----------------------------------------------- */

#define CMP_LOOP(T, EXPR)                                                          \
  GL_EMU__LANES(x->mask, l) {                                                      \
    T a = (T)gl_emu__ext(x->a[l], w, sg), b = (T)gl_emu__ext(x->b[l], w, sg);      \
    r |= (uint32_t)(EXPR) << l;                                                    \
  }

static int setp_int(const ictx *x) {
  const gl_ptx_insn *in = x->in;
  const unsigned t = in->op == GL_PTX_OP_SET ? in->type2 : in->type;
  const unsigned w = gl_emu__bits((gl_ptx_type)t);
  const int sg = gl_ptx_type_is_signed((gl_ptx_type)t);
  uint32_t r = 0;
  if (w < 16 || t == GL_PTX_T_PRED)
    return -1;
  switch (in->mode) {
  case GL_PTX_CMP_EQ:
    CMP_LOOP(uint64_t, a == b);
    break;
  case GL_PTX_CMP_NE:
    CMP_LOOP(uint64_t, a != b);
    break;
  case GL_PTX_CMP_LO:
    CMP_LOOP(uint64_t, a < b);
    break;
  case GL_PTX_CMP_LS:
    CMP_LOOP(uint64_t, a <= b);
    break;
  case GL_PTX_CMP_HI:
    CMP_LOOP(uint64_t, a > b);
    break;
  case GL_PTX_CMP_HS:
    CMP_LOOP(uint64_t, a >= b);
    break;
  case GL_PTX_CMP_LT:
    if (sg) {
      CMP_LOOP(int64_t, a < b);
    } else {
      CMP_LOOP(uint64_t, a < b);
    }
    break;
  case GL_PTX_CMP_LE:
    if (sg) {
      CMP_LOOP(int64_t, a <= b);
    } else {
      CMP_LOOP(uint64_t, a <= b);
    }
    break;
  case GL_PTX_CMP_GT:
    if (sg) {
      CMP_LOOP(int64_t, a > b);
    } else {
      CMP_LOOP(uint64_t, a > b);
    }
    break;
  case GL_PTX_CMP_GE:
    if (sg) {
      CMP_LOOP(int64_t, a >= b);
    } else {
      CMP_LOOP(uint64_t, a >= b);
    }
    break;
  default:
    return -1;
  }
  return gl_emu__write_cmp(in, (uint64_t *const[2]){x->d, x->q},
                           (const uint64_t *const[4]){x->a, x->b, x->c, x->e}, x->mask, r);
}

/* mov, selp, slct: move bits at the type's width (any type). */
static int moves(const ictx *x) {
  const unsigned w = x->w;
  const int sg = x->sg;
  uint64_t *d = x->d;
  switch (x->in->op) {
  case GL_PTX_OP_MOV:
    if (x->in->type == GL_PTX_T_PRED) {
      GL_EMU__LANES(x->mask, l) { d[l] = x->a[l] != 0; }
    } else {
      GL_EMU__LANES(x->mask, l) { d[l] = gl_emu__ext(x->a[l], w, sg); }
    }
    return 0;
  case GL_PTX_OP_SELP:
    if (!x->c || x->in->type == GL_PTX_T_PRED)
      return -1;
    GL_EMU__LANES(x->mask, l) { d[l] = gl_emu__ext(x->c[l] ? x->a[l] : x->b[l], w, sg); }
    return 0;
  case GL_PTX_OP_SLCT: {
    if (!x->c)
      return -1;
    if (x->in->type2 == GL_PTX_T_S32) {
      GL_EMU__LANES(x->mask, l) {
        d[l] = gl_emu__ext((int32_t)x->c[l] >= 0 ? x->a[l] : x->b[l], w, sg);
      }
    } else if (x->in->type2 == GL_PTX_T_F32) {
      /* c >= 0.0f (so -0.0 picks a, NaN picks b); .ftz makes a negative
       * subnormal c count as -0. */
      const int ftz = (x->in->flags & GL_PTX_F_FTZ) != 0;
      GL_EMU__LANES(x->mask, l) {
        float c = gl_emu__f32(x->c[l]);
        if (ftz)
          c = gl_emu__ftz32(c);
        d[l] = gl_emu__ext(c >= 0.0f ? x->a[l] : x->b[l], w, sg);
      }
    } else {
      return -1;
    }
    return 0;
  }
  default:
    return -1;
  }
}

/* ---- Dispatch ----------------------------------------------------------- */

int gl_emu__alu_int(GL_EMU__ALU_ARGS) {
  const unsigned t = in->type, op = in->op;
  ictx x = {
      .in = in,
      .d = dst[0],
      .q = in->ndst > 1 ? dst[1] : NULL,
      .a = in->nsrc > 0 ? src[0] : NULL,
      .b = in->nsrc > 1 ? src[1] : NULL,
      .c = in->nsrc > 2 ? src[2] : NULL,
      .e = in->nsrc > 3 ? src[3] : NULL,
      .cc = cc,
      .mask = mask,
      .w = gl_emu__bits((gl_ptx_type)t),
      .sg = gl_ptx_type_is_signed((gl_ptx_type)t),
  };
  if (!x.w || !x.d || !x.a)
    return -1;
  if (op == GL_PTX_OP_MOV || op == GL_PTX_OP_SELP || op == GL_PTX_OP_SLCT)
    return moves(&x);
  if (op == GL_PTX_OP_SETP || op == GL_PTX_OP_SET)
    return x.b ? setp_int(&x) : -1;
  switch (op) {
  case GL_PTX_OP_AND:
  case GL_PTX_OP_OR:
  case GL_PTX_OP_XOR:
    if (!x.b)
      return -1;
    return logic(&x);
  case GL_PTX_OP_NOT:
  case GL_PTX_OP_CNOT:
    return logic(&x);
  default:
    break;
  }
  /* Everything below is integer arithmetic on 16-64-bit types (b types
   * where PTX allows them: shifts and bit ops). */
  if (t == GL_PTX_T_PRED || gl_ptx_type_is_float((gl_ptx_type)t) || x.w < 16)
    return -1;
  switch (op) {
  case GL_PTX_OP_POPC:
  case GL_PTX_OP_CLZ:
  case GL_PTX_OP_BREV:
    return popc_clz_brev(&x);
  case GL_PTX_OP_BFIND:
    return bfind(&x);
  case GL_PTX_OP_ABS:
    return abs_neg(&x, 0);
  case GL_PTX_OP_NEG:
    return abs_neg(&x, 1);
  default:
    break;
  }
  if (!x.b)
    return -1;
  switch (op) {
  case GL_PTX_OP_ADD:
    return add_sub(&x, 0);
  case GL_PTX_OP_SUB:
    return add_sub(&x, 1);
  case GL_PTX_OP_MUL:
    return mul_mad(&x, 0);
  case GL_PTX_OP_MAD:
    return mul_mad(&x, 1);
  case GL_PTX_OP_MUL24:
    return mul24(&x, 0);
  case GL_PTX_OP_MAD24:
    return mul24(&x, 1);
  case GL_PTX_OP_SAD:
    return sad(&x);
  case GL_PTX_OP_DIV:
    return div_rem(&x, 0);
  case GL_PTX_OP_REM:
    return div_rem(&x, 1);
  case GL_PTX_OP_MIN:
    return min_max(&x, 0);
  case GL_PTX_OP_MAX:
    return min_max(&x, 1);
  case GL_PTX_OP_SHL:
    return shift(&x, 0);
  case GL_PTX_OP_SHR:
    return shift(&x, 1);
  case GL_PTX_OP_BFE:
    return bfe(&x);
  case GL_PTX_OP_BFI:
    return bfi(&x);
  case GL_PTX_OP_PRMT:
    return prmt(&x);
  case GL_PTX_OP_SHF:
    return shf(&x);
  case GL_PTX_OP_DP4A:
    return dp(&x, 0);
  case GL_PTX_OP_DP2A:
    return dp(&x, 1);
  default:
    return -1;
  }
}
