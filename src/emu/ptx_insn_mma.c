/*
 * ptx_insn_mma.c - decodes the matrix instructions: mma.sync, ldmatrix,
 * stmatrix, movmatrix and the wgmma family, plus fence.proxy.async (a
 * no-op here). Their mnemonics carry shapes (.m16n8k16), layouts, matrix
 * counts and types the generic decoder does not classify, and an mma or
 * wgmma names up to 128 registers, so this file reads the mnemonic and the
 * operands itself and emits the encoding mma.h describes.
 *
 * Supported (anything else of these families is refused as unsupported):
 *   ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}{.shared{::cta}}.b16
 *   stmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}{.shared{::cta}}.b16
 *   movmatrix.sync.aligned.m8n8.trans.b16
 *   mma.sync.aligned.SHAPE.row.col{.satfinite}.D.A.B.C with
 *     m16n8k16, m16n8k8: f32.f16.f16.f32, f16.f16.f16.f16, f32.bf16.bf16.f32
 *     m16n8k8, m16n8k4:  f32.tf32.tf32.f32
 *     m8n8k4:            f64.f64.f64.f64
 *     m16n8k32, m16n8k16, m8n8k16: s32.{s8,u8}.{s8,u8}.s32
 *   wgmma.fence / commit_group / wait_group N (.sync.aligned): no-ops
 *   wgmma.mma_async.sync.aligned.m64nNk16.{f32,f16}.{f16,bf16}.same and
 *   .m64nNk8.f32.tf32.tf32, N a multiple of 8 up to 256, A from a
 *   descriptor or registers, B from a descriptor (bf16: f32 only).
 */
#include <string.h>

#include "emu/mma.h"
#include "emu/ptx_internal.h"

#define MAX_WORDS 12

typedef struct mn_words {
  const char *s[MAX_WORDS];
  uint32_t n[MAX_WORDS];
  unsigned count;
  uint32_t used; /* bit i: word i understood */
} mn_words;

typedef struct mctx {
  gl_ptx_parser *p;
  const gl_ptx_token *mn;
  mn_words w;
} mctx;

static _Noreturn void unsup(mctx *c) {
  gl_ptx_fail(c->p, GPULEASE_UNSUPPORTED, c->mn->line,
              "'%.*s' is not supported by the emulated device",
              (int)(c->mn->n > 100 ? 100 : c->mn->n), c->mn->s);
}

static _Noreturn void syntax(mctx *c, const char *what) {
  gl_ptx_fail(c->p, GPULEASE_LOAD_FAILED, c->mn->line, "%s in '%.*s'", what,
              (int)(c->mn->n > 100 ? 100 : c->mn->n), c->mn->s);
}

/* Takes modifier word `s` (without its dot) if present. */
static int take(mctx *c, const char *s) {
  size_t l = strlen(s);
  for (unsigned i = 0; i < c->w.count; i++)
    if (!(c->w.used & (1u << i)) && c->w.n[i] == l && memcmp(c->w.s[i], s, l) == 0) {
      c->w.used |= 1u << i;
      return 1;
    }
  return 0;
}

/* The first unused word, or NULL. */
static const char *next_word(mctx *c, uint32_t *n) {
  for (unsigned i = 0; i < c->w.count; i++)
    if (!(c->w.used & (1u << i))) {
      c->w.used |= 1u << i;
      *n = c->w.n[i];
      return c->w.s[i];
    }
  return NULL;
}

static void all_used(mctx *c) {
  if (c->w.used != (c->w.count >= 32 ? UINT32_MAX : (1u << c->w.count) - 1)) unsup(c);
}

/* Element type word -> GL_MMA_T_*, 0 if not one. */
static unsigned type_of(const char *s, uint32_t n) {
  static const struct {
    const char *s;
    unsigned t;
  } tt[] = {{"f16", GL_MMA_T_F16}, {"bf16", GL_MMA_T_BF16}, {"tf32", GL_MMA_T_TF32},
            {"f32", GL_MMA_T_F32}, {"f64", GL_MMA_T_F64},   {"s8", GL_MMA_T_S8},
            {"u8", GL_MMA_T_U8},   {"s32", GL_MMA_T_S32}};
  for (size_t i = 0; i < sizeof tt / sizeof tt[0]; i++)
    if (strlen(tt[i].s) == n && memcmp(tt[i].s, s, n) == 0) return tt[i].t;
  return 0;
}

/* The remaining words as types, in order; returns how many. */
static unsigned take_types(mctx *c, unsigned *t, unsigned max) {
  unsigned k = 0;
  for (unsigned i = 0; i < c->w.count; i++) {
    if (c->w.used & (1u << i)) continue;
    unsigned ty = type_of(c->w.s[i], c->w.n[i]);
    if (!ty) continue;
    if (k >= max) unsup(c);
    t[k++] = ty;
    c->w.used |= 1u << i;
  }
  return k;
}

/* ".mMnNkK" -> m, n, k (k 0 for "mMnN"). 0 if the word is not a shape. */
static int parse_shape(const char *s, uint32_t n, unsigned *m, unsigned *nn, unsigned *k) {
  unsigned v[3] = {0, 0, 0};
  const char keys[3] = {'m', 'n', 'k'};
  uint32_t i = 0;
  unsigned parts = 0;
  for (unsigned j = 0; j < 3 && i < n; j++) {
    if (s[i] != keys[j]) return 0;
    i++;
    if (i >= n || s[i] < '0' || s[i] > '9') return 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
      v[j] = v[j] * 10 + (unsigned)(s[i] - '0');
      if (v[j] > 1000) return 0;
      i++;
    }
    parts++;
  }
  if (i != n || parts < 2) return 0;
  *m = v[0];
  *nn = v[1];
  *k = v[2];
  return 1;
}

static int take_shape(mctx *c, unsigned *m, unsigned *n, unsigned *k) {
  for (unsigned i = 0; i < c->w.count; i++) {
    if (c->w.used & (1u << i)) continue;
    if (parse_shape(c->w.s[i], c->w.n[i], m, n, k)) {
      c->w.used |= 1u << i;
      return 1;
    }
  }
  return 0;
}

/* ---- Operands ------------------------------------------------------------ */

static uint32_t reg_tok(mctx *c, const gl_ptx_token *t, int sink_ok) {
  if (t->kind == GL_PTX_TK_WORD) {
    if (sink_ok && t->n == 1 && t->s[0] == '_') return GL_PTX_NOREG;
    uint32_t r = gl_ptx_find_reg(c->p, t->s, t->n);
    if (r != GL_PTX_NOREG) return r;
    gl_ptx_fail(c->p, GPULEASE_LOAD_FAILED, t->line, "'%.*s' is not a declared register",
                (int)(t->n > 80 ? 80 : t->n), t->s);
  }
  syntax(c, "expected a register");
}

/* {r, r, ...}: up to max registers into regs; returns the count. */
static unsigned parse_vec(mctx *c, uint32_t *regs, unsigned max) {
  gl_ptx_expect(c->p, '{');
  unsigned k = 0;
  for (;;) {
    gl_ptx_token t;
    gl_ptx_next(c->p, &t);
    if (k >= max) syntax(c, "too many registers");
    regs[k++] = reg_tok(c, &t, 0);
    if (gl_ptx_accept(c->p, '}')) break;
    gl_ptx_expect(c->p, ',');
  }
  return k;
}

static uint32_t parse_reg(mctx *c) {
  gl_ptx_token t;
  gl_ptx_next(c->p, &t);
  return reg_tok(c, &t, 0);
}

/* [reg], [reg+imm], [reg-imm] or [imm]. */
static gl_ptx_operand parse_addr(mctx *c) {
  gl_ptx_operand o;
  memset(&o, 0, sizeof o);
  o.kind = GL_PTX_O_ADDR;
  o.reg = GL_PTX_NOREG;
  gl_ptx_expect(c->p, '[');
  gl_ptx_token t;
  gl_ptx_next(c->p, &t);
  if (t.kind == GL_PTX_TK_INT) {
    o.imm = (int64_t)t.u;
  } else {
    if (t.kind != GL_PTX_TK_WORD || gl_ptx_find_reg(c->p, t.s, t.n) == GL_PTX_NOREG)
      unsup(c); /* variable-based addresses: not for matrix instructions here */
    o.reg = gl_ptx_find_reg(c->p, t.s, t.n);
    const gl_ptx_token *nx = gl_ptx_peek(c->p, 0);
    if (nx->kind == GL_PTX_TK_PUNCT && (nx->c == '+' || nx->c == '-')) {
      int neg = nx->c == '-';
      gl_ptx_next(c->p, NULL);
      if (gl_ptx_accept(c->p, '-')) neg = !neg;
      gl_ptx_next(c->p, &t);
      if (t.kind != GL_PTX_TK_INT) syntax(c, "bad address offset");
      o.imm = neg ? (int64_t)((uint64_t)0 - t.u) : (int64_t)t.u;
    }
  }
  gl_ptx_expect(c->p, ']');
  return o;
}

/* A register or an integer literal (descriptors, scale-d). */
static gl_ptx_operand parse_reg_or_imm(mctx *c) {
  gl_ptx_operand o;
  memset(&o, 0, sizeof o);
  gl_ptx_token t;
  gl_ptx_next(c->p, &t);
  int neg = 0;
  if (t.kind == GL_PTX_TK_PUNCT && t.c == '-') {
    neg = 1;
    gl_ptx_next(c->p, &t);
  }
  if (t.kind == GL_PTX_TK_INT) {
    o.kind = GL_PTX_O_IMM;
    o.reg = GL_PTX_NOREG;
    o.imm = neg ? (int64_t)((uint64_t)0 - t.u) : (int64_t)t.u;
    return o;
  }
  if (neg) syntax(c, "bad operand");
  o.kind = GL_PTX_O_REG;
  o.reg = reg_tok(c, &t, 0);
  return o;
}

/* An integer literal among allowed values. */
static int64_t parse_imm(mctx *c, int64_t a, int64_t b) {
  gl_ptx_operand o = parse_reg_or_imm(c);
  if (o.kind != GL_PTX_O_IMM || (o.imm != a && o.imm != b))
    syntax(c, "bad immediate operand");
  return o.imm;
}

static void comma(mctx *c) { gl_ptx_expect(c->p, ','); }
static void end(mctx *c) { gl_ptx_expect(c->p, ';'); }

/* Appends main (with mi) and the carriers for regs[0..nregs). */
static void push_with_list(mctx *c, gl_ptx_insn *in, gl_mma_info *mi, const uint32_t *regs,
                           unsigned nregs) {
  unsigned ncar = (nregs + GL_MMA_REGS_PER_CARRIER - 1) / GL_MMA_REGS_PER_CARRIER;
  in->mode = (uint8_t)ncar;
  gl_mma_info_put(in, mi);
  in->dst[0].kind = GL_PTX_O_NONE;
  in->dst[1].kind = GL_PTX_O_NONE;
  in->ndst = 0;
  gl_ptx_push_insn(c->p, in);
  unsigned k = 0;
  for (unsigned ci = 0; ci < ncar; ci++) {
    gl_ptx_insn car;
    memset(&car, 0, sizeof car);
    car.op = GL_PTX_OP_RLIST;
    car.guard = GL_PTX_NOREG;
    car.line = in->line;
    car.vec = 1;
    for (unsigned slot = 0; slot < 6 && k < nregs; slot++) {
      gl_ptx_operand *o = slot < 2 ? &car.dst[slot] : &car.src[slot - 2];
      o->kind = GL_PTX_O_VEC;
      o->reg = GL_PTX_NOREG;
      while (o->vec_n < 4 && k < nregs) o->vec[o->vec_n++] = regs[k++];
      if (slot < 2) car.ndst = (uint8_t)(slot + 1);
      else car.nsrc = (uint8_t)(slot - 1);
    }
    gl_ptx_push_insn(c->p, &car);
  }
}

/* ---- ldmatrix / stmatrix / movmatrix --------------------------------------- */

static void decode_matrix_move(mctx *c, gl_ptx_insn *in, int ld) {
  gl_mma_info mi;
  memset(&mi, 0, sizeof mi);
  unsigned m = 0, n = 0, k = 0;
  if (!take(c, "sync") || !take(c, "aligned")) unsup(c);
  if (!take_shape(c, &m, &n, &k) || m != 8 || n != 8 || k != 0) unsup(c);
  mi.m = take(c, "x1") ? 1 : take(c, "x2") ? 2 : take(c, "x4") ? 4 : 0;
  if (!mi.m) unsup(c);
  if (take(c, "trans")) mi.flags |= GL_MMA_F_TRANS;
  int shared = take(c, "shared") || take(c, "shared::cta");
  if (!take(c, "b16")) unsup(c);
  all_used(c);
  mi.atype = GL_MMA_T_F16; /* b16 elements */
  in->op = ld ? GL_PTX_OP_LDMATRIX : GL_PTX_OP_STMATRIX;
  in->space = shared ? GL_PTX_SPACE_SHARED : GL_PTX_SPACE_GENERIC;
  uint32_t regs[4];
  gl_ptx_operand v;
  memset(&v, 0, sizeof v);
  v.kind = GL_PTX_O_VEC;
  v.reg = GL_PTX_NOREG;
  if (ld) {
    v.vec_n = (uint8_t)parse_vec(c, regs, 4);
    comma(c);
    in->src[0] = parse_addr(c);
  } else {
    in->src[0] = parse_addr(c);
    comma(c);
    v.vec_n = (uint8_t)parse_vec(c, regs, 4);
  }
  end(c);
  if (v.vec_n != mi.m) syntax(c, "register count does not match the matrix count");
  memcpy(v.vec, regs, sizeof regs);
  in->vec = mi.m;
  in->mode = (mi.flags & GL_MMA_F_TRANS) ? 1 : 0;
  if (ld) {
    in->dst[0] = v;
    in->ndst = 1;
    in->nsrc = 1;
  } else {
    in->src[1] = v;
    in->ndst = 0;
    in->nsrc = 2;
  }
  gl_ptx_push_insn(c->p, in);
}

static void decode_movmatrix(mctx *c, gl_ptx_insn *in) {
  unsigned m = 0, n = 0, k = 0;
  if (!take(c, "sync") || !take(c, "aligned") || !take_shape(c, &m, &n, &k) || m != 8 ||
      n != 8 || k != 0 || !take(c, "trans") || !take(c, "b16"))
    unsup(c);
  all_used(c);
  in->op = GL_PTX_OP_MOVMATRIX;
  in->dst[0].kind = GL_PTX_O_REG;
  in->dst[0].reg = parse_reg(c);
  comma(c);
  in->src[0].kind = GL_PTX_O_REG;
  in->src[0].reg = parse_reg(c);
  end(c);
  in->ndst = 1;
  in->nsrc = 1;
  gl_ptx_push_insn(c->p, in);
}

/* ---- mma.sync -------------------------------------------------------------- */

/* Registers a thread holds of an operand of rows x cols elements of type t
 * spread over 32 lanes. */
static unsigned frag_regs(unsigned rows, unsigned cols, unsigned t) {
  unsigned per = t == GL_MMA_T_F64 ? 1 : 32 / gl_mma_type_bits(t);
  return rows * cols / 32 / per;
}

static void decode_mma(mctx *c, gl_ptx_insn *in) {
  gl_mma_info mi;
  memset(&mi, 0, sizeof mi);
  unsigned m = 0, n = 0, k = 0, t[4];
  if (!take(c, "sync") || !take(c, "aligned") || !take_shape(c, &m, &n, &k)) unsup(c);
  if (!take(c, "row") || !take(c, "col")) unsup(c);
  if (take(c, "satfinite")) mi.flags |= GL_MMA_F_SATFINITE;
  if (take_types(c, t, 4) != 4) unsup(c);
  all_used(c);
  unsigned d = t[0], a = t[1], b = t[2], cc = t[3];
  int ok = 0;
  if (m == 16 && n == 8 && (k == 16 || k == 8)) {
    if (a == GL_MMA_T_F16 && b == a && (d == GL_MMA_T_F32 || d == GL_MMA_T_F16) && cc == d)
      ok = 1; /* ptxas: C and D of one type */
    if (a == GL_MMA_T_BF16 && b == a && d == GL_MMA_T_F32 && cc == GL_MMA_T_F32) ok = 1;
  }
  if (m == 16 && n == 8 && (k == 8 || k == 4) && a == GL_MMA_T_TF32 && b == a &&
      d == GL_MMA_T_F32 && cc == GL_MMA_T_F32)
    ok = 1;
  if (m == 8 && n == 8 && k == 4 && a == GL_MMA_T_F64 && b == a && d == a && cc == a) ok = 1;
  if (((m == 16 && n == 8 && (k == 32 || k == 16)) || (m == 8 && n == 8 && k == 16)) &&
      (a == GL_MMA_T_S8 || a == GL_MMA_T_U8) && (b == GL_MMA_T_S8 || b == GL_MMA_T_U8) &&
      d == GL_MMA_T_S32 && cc == GL_MMA_T_S32)
    ok = 1;
  if (!ok) unsup(c);
  if ((mi.flags & GL_MMA_F_SATFINITE) && d != GL_MMA_T_S32) unsup(c);
  mi.m = (uint8_t)m;
  mi.n = (uint16_t)n;
  mi.k = (uint8_t)k;
  mi.atype = (uint8_t)a;
  mi.btype = (uint8_t)b;
  mi.ctype = (uint8_t)cc;
  mi.dtype = (uint8_t)d;
  mi.nd = (uint8_t)frag_regs(m, n, d);
  mi.na = (uint8_t)frag_regs(m, k, a);
  mi.nb = (uint8_t)frag_regs(k, n, b);
  mi.nc = (uint8_t)frag_regs(m, n, cc);
  uint32_t regs[GL_MMA_MAX_REGS];
  unsigned want[4] = {mi.nd, mi.na, mi.nb, mi.nc}, off = 0;
  for (unsigned i = 0; i < 4; i++) {
    if (i) comma(c);
    unsigned got = parse_vec(c, regs + off, GL_MMA_MAX_REGS - off);
    if (got != want[i]) syntax(c, "wrong number of registers for the shape");
    off += got;
  }
  end(c);
  in->op = GL_PTX_OP_MMA;
  in->nsrc = 0;
  push_with_list(c, in, &mi, regs, off);
}

/* ---- wgmma ------------------------------------------------------------------ */

static void decode_wgmma(mctx *c, gl_ptx_insn *in) {
  uint32_t n0;
  const char *w0 = next_word(c, &n0);
  if (!w0) unsup(c);
  if ((n0 == 5 && memcmp(w0, "fence", 5) == 0) ||
      (n0 == 12 && memcmp(w0, "commit_group", 12) == 0) ||
      (n0 == 10 && memcmp(w0, "wait_group", 10) == 0)) {
    int wait = n0 == 10;
    if (!take(c, "sync") || !take(c, "aligned")) unsup(c);
    all_used(c);
    if (wait) {
      gl_ptx_token t;
      gl_ptx_next(c->p, &t);
      if (t.kind != GL_PTX_TK_INT) syntax(c, "expected an integer");
    }
    end(c);
    in->op = GL_PTX_OP_MEMBAR; /* the mma ran synchronously: nothing to wait for */
    gl_ptx_push_insn(c->p, in);
    return;
  }
  if (!(n0 == 9 && memcmp(w0, "mma_async", 9) == 0)) unsup(c);
  if (!take(c, "sync") || !take(c, "aligned")) unsup(c);
  gl_mma_info mi;
  memset(&mi, 0, sizeof mi);
  unsigned m = 0, n = 0, k = 0, t[3];
  if (!take_shape(c, &m, &n, &k)) unsup(c);
  if (take_types(c, t, 3) != 3) unsup(c);
  all_used(c);
  unsigned d = t[0], a = t[1], b = t[2];
  if (m != 64 || n < 8 || n > 256 || n % 8 || a != b) unsup(c);
  int is16 = a == GL_MMA_T_F16 || a == GL_MMA_T_BF16;
  if (is16 && !(k == 16 && (d == GL_MMA_T_F32 || (d == GL_MMA_T_F16 && a == GL_MMA_T_F16))))
    unsup(c);
  if (!is16 && !(a == GL_MMA_T_TF32 && k == 8 && d == GL_MMA_T_F32)) unsup(c);
  mi.m = 64;
  mi.n = (uint16_t)n;
  mi.k = (uint8_t)k;
  mi.atype = (uint8_t)a;
  mi.btype = (uint8_t)b;
  mi.ctype = mi.dtype = (uint8_t)d;
  mi.nd = (uint8_t)(n / (d == GL_MMA_T_F32 ? 2 : 4)); /* 16 x n a warp over 32 lanes */
  uint32_t regs[GL_MMA_MAX_REGS];
  unsigned got = parse_vec(c, regs, GL_MMA_MAX_REGS);
  if (got != mi.nd) syntax(c, "wrong number of accumulator registers for the shape");
  comma(c);
  const gl_ptx_token *nx = gl_ptx_peek(c->p, 0);
  if (nx->kind == GL_PTX_TK_PUNCT && nx->c == '{') {
    mi.flags |= GL_MMA_F_A_REGS;
    mi.na = 4;
    if (parse_vec(c, regs + got, 4) != 4) syntax(c, "A takes 4 registers");
    in->src[0].kind = GL_PTX_O_NONE;
  } else {
    in->src[0] = parse_reg_or_imm(c);
  }
  comma(c);
  in->src[1] = parse_reg_or_imm(c);
  comma(c);
  in->src[2] = parse_reg_or_imm(c);
  comma(c);
  if (parse_imm(c, 1, -1) < 0) mi.flags |= GL_MMA_F_NEG_A;
  comma(c);
  if (parse_imm(c, 1, -1) < 0) mi.flags |= GL_MMA_F_NEG_B;
  if (is16) {
    if (!(mi.flags & GL_MMA_F_A_REGS)) {
      comma(c);
      if (parse_imm(c, 0, 1)) mi.flags |= GL_MMA_F_TRANS_A;
    }
    comma(c);
    if (parse_imm(c, 0, 1)) mi.flags |= GL_MMA_F_TRANS_B;
  }
  end(c);
  in->op = GL_PTX_OP_WGMMA;
  in->nsrc = 3;
  push_with_list(c, in, &mi, regs, got + mi.na);
}

/* ---- Entry ------------------------------------------------------------------ */

int gl_ptx_parse_mma(gl_ptx_parser *p, gl_ptx_insn *in, const gl_ptx_token *mn) {
  const char *s = mn->s, *e = mn->s + mn->n;
  const char *dot = memchr(s, '.', mn->n);
  uint32_t blen = (uint32_t)((dot ? dot : e) - s);
  static const char *const bases[] = {"mma", "ldmatrix", "stmatrix", "movmatrix", "wgmma",
                                      "fence"};
  int which = -1;
  for (int i = 0; i < 6; i++)
    if (strlen(bases[i]) == blen && memcmp(bases[i], s, blen) == 0) which = i;
  if (which < 0) return 0;
  if (which == 5) {
    /* fence.proxy.async{.shared::cta, ...}: the emulator has one proxy */
    static const char pa[] = "fence.proxy.async";
    if (mn->n < sizeof pa - 1 || memcmp(s, pa, sizeof pa - 1) != 0 ||
        (mn->n > sizeof pa - 1 && s[sizeof pa - 1] != '.'))
      return 0;
    gl_ptx_expect(p, ';');
    in->op = GL_PTX_OP_MEMBAR;
    gl_ptx_push_insn(p, in);
    return 1;
  }
  mctx c;
  memset(&c, 0, sizeof c);
  c.p = p;
  c.mn = mn;
  const char *q = dot;
  while (q && q < e) {
    const char *nx = q + 1;
    while (nx < e && *nx != '.') nx++;
    if (nx == q + 1) syntax(&c, "empty modifier");
    if (c.w.count >= MAX_WORDS) unsup(&c);
    c.w.s[c.w.count] = q + 1;
    c.w.n[c.w.count++] = (uint32_t)(nx - q - 1);
    q = nx;
  }
  in->vec = 1;
  switch (which) {
  case 0: decode_mma(&c, in); break;
  case 1: decode_matrix_move(&c, in, 1); break;
  case 2: decode_matrix_move(&c, in, 0); break;
  case 3: decode_movmatrix(&c, in); break;
  default: decode_wgmma(&c, in); break;
  }
  return 1;
}
