/*
 * ptx_insn.c - one PTX instruction statement to a gl_ptx_insn.
 *
 * A statement is `[@{!}p] mnemonic operand, ... ;`. The mnemonic is split
 * at its dots: the base ("ld") picks a decoder, and each modifier is
 * classified once (type, rounding, flag, state space, vector width, a
 * cache/scope/ordering hint that the emulator ignores, or an op-specific
 * word such as ".lo" or ".bfly" that the decoder interprets). Operands are
 * read without knowing the opcode (registers, immediates, special
 * registers, {vectors}, [addresses], names) and then checked and encoded
 * by the decoder, following the operand order ptx_ir.h documents.
 *
 * Valid PTX the emulated device does not implement is refused here with
 * GPULEASE_UNSUPPORTED naming the full mnemonic; anything unknown is a
 * GPULEASE_LOAD_FAILED syntax error.
 */
#include <stdlib.h>
#include <string.h>

#include "emu/ptx_internal.h"
#include "emu/ptx_optab.h"

/* ==== Decoding state ====================================================== */

#define MAX_WORDS 8
#define MAX_OPNDS 8

/* An operand as written, before the decoder encodes it. */
typedef struct raw_op {
  gl_ptx_operand o; /* REG, SREG, VEC, ADDR (register part) filled in */
  uint32_t line;
  uint8_t sink;     /* '_' */
  uint8_t has_pair; /* d|p */
  uint32_t pair;    /* the second register (NOREG for '_') */
  uint8_t lit;      /* a numeric literal, converted once the type is known */
  uint8_t lit_neg;
  gl_ptx_token tok;
  uint8_t is_name;  /* a bare name that is not a register: variable,
                       function or label; name/len below */
  const char *name;
  uint32_t len;
  const gl_ptx_sym *sym; /* the variable/function, NULL for a label */
  uint8_t addr_sym;      /* ADDR based on a variable: sym */
  int64_t addr_off;
} raw_op;

typedef struct insn_ctx {
  gl_ptx_parser *p;
  gl_ptx_token mn; /* the mnemonic token */
  const gl_ptx_op_def *def;
  gl_ptx_insn in;
  /* classified modifiers */
  int types[3];
  unsigned ntypes;
  int space; /* -1: none written */
  unsigned vec;
  int hint;
  uint16_t words[MAX_WORDS];
  unsigned nwords;
  raw_op ops[MAX_OPNDS];
  unsigned nops;
  uint64_t words_used; /* bit i: words[i] consumed by the decoder */
} insn_ctx;

static _Noreturn void fail_syntax(insn_ctx *c, const char *what) {
  gl_ptx_fail(c->p, GPULEASE_LOAD_FAILED, c->in.line, "%s in '%.*s'", what,
              (int)(c->mn.n > 80 ? 80 : c->mn.n), c->mn.s);
}

static _Noreturn void fail_unsupported(insn_ctx *c) {
  gl_ptx_fail(c->p, GPULEASE_UNSUPPORTED, c->in.line,
              "'%.*s' is not supported by the emulated device", (int)(c->mn.n > 80 ? 80 : c->mn.n),
              c->mn.s);
}

static int is_punct(const gl_ptx_token *t, char ch) {
  return t->kind == GL_PTX_TK_PUNCT && t->c == ch;
}

/* Takes word w if the mnemonic has it (once). */
static int take_word(insn_ctx *c, uint16_t w) {
  for (unsigned i = 0; i < c->nwords; i++) {
    if (c->words[i] == w && !(c->words_used & (1ull << i))) {
      c->words_used |= 1ull << i;
      return 1;
    }
  }
  return 0;
}

/* Every op-specific word must have been understood. */
static void check_words_used(insn_ctx *c) {
  for (unsigned i = 0; i < c->nwords; i++)
    if (!(c->words_used & (1ull << i))) fail_syntax(c, "unexpected modifier");
}

/* ==== Mnemonic ============================================================ */

static void split_mnemonic(insn_ctx *c) {
  const char *s = c->mn.s, *end = c->mn.s + c->mn.n;
  const char *dot = memchr(s, '.', c->mn.n);
  uint32_t blen = (uint32_t)((dot ? dot : end) - s);
  c->def = gl_ptx_find_op(s, blen);
  if (!c->def)
    gl_ptx_fail(c->p, GPULEASE_LOAD_FAILED, c->in.line, "unknown instruction '%.*s'",
                (int)(c->mn.n > 80 ? 80 : c->mn.n), c->mn.s);
  if (c->def->kind == K_UNSUP) fail_unsupported(c);
  c->space = -1;
  c->vec = 1;
  const char *q = dot;
  while (q && q < end) {
    const char *next = q + 1;
    while (next < end && *next != '.') next++;
    uint32_t n = (uint32_t)(next - q);
    if (n < 2) fail_syntax(c, "empty modifier");
    int ty = gl_ptx_type_from(q, n);
    if (ty < 0) fail_unsupported(c);
    if (ty > 0) {
      if (c->ntypes >= 3) fail_syntax(c, "too many types");
      if (ty == GL_PTX_T_B128) fail_unsupported(c);
      c->types[c->ntypes++] = ty;
    } else {
      const gl_ptx_mod_def *m = gl_ptx_find_mod(q, n);
      if (!m) {
        /* Cache eviction policies and sizes: .L1::evict_last, .L2::256B. */
        if (n > 5 && (memcmp(q, ".L1::", 5) == 0 || memcmp(q, ".L2::", 5) == 0))
          goto next_mod;
        gl_ptx_fail(c->p, GPULEASE_LOAD_FAILED, c->in.line, "unknown modifier '%.*s' in '%.*s'",
                    (int)(n > 40 ? 40 : n), q, (int)(c->mn.n > 80 ? 80 : c->mn.n), c->mn.s);
      }
      switch (m->cls) {
      case MC_RND:
        if (c->in.rnd) fail_syntax(c, "two rounding modifiers");
        c->in.rnd = (uint8_t)m->val;
        break;
      case MC_FLAG: c->in.flags |= m->val; break;
      case MC_SPACE:
        if (c->space >= 0) fail_syntax(c, "two state spaces");
        c->space = m->val;
        break;
      case MC_VEC: c->vec = m->val; break;
      case MC_IGNORE: break;
      case MC_HINT: c->hint = 1; break;
      case MC_WORD:
        if (c->nwords >= MAX_WORDS) fail_syntax(c, "too many modifiers");
        c->words[c->nwords++] = m->val;
        break;
      default: fail_unsupported(c);
      }
    }
  next_mod:
    q = next;
  }
}

/* ==== Operands ============================================================ */

/* A register name (or '_' when sink_ok) -> index; fails otherwise. */
static uint32_t expect_reg(insn_ctx *c, const gl_ptx_token *t, int sink_ok) {
  if (t->kind == GL_PTX_TK_WORD) {
    if (sink_ok && t->n == 1 && t->s[0] == '_') return GL_PTX_NOREG;
    uint32_t r = gl_ptx_find_reg(c->p, t->s, t->n);
    if (r != GL_PTX_NOREG) return r;
    gl_ptx_fail(c->p, GPULEASE_LOAD_FAILED, t->line, "'%.*s' is not a declared register",
                (int)(t->n > 80 ? 80 : t->n), t->s);
  }
  gl_ptx_fail(c->p, GPULEASE_LOAD_FAILED, t->line, "expected a register in '%.*s'",
              (int)(c->mn.n > 80 ? 80 : c->mn.n), c->mn.s);
}

static void parse_addr(insn_ctx *c, raw_op *r) {
  gl_ptx_parser *p = c->p;
  gl_ptx_token t;
  r->o.kind = GL_PTX_O_ADDR;
  r->o.reg = GL_PTX_NOREG;
  gl_ptx_next(p, &t);
  int64_t off = 0;
  if (t.kind == GL_PTX_TK_WORD) {
    uint32_t reg = gl_ptx_find_reg(p, t.s, t.n);
    if (reg != GL_PTX_NOREG) {
      r->o.reg = reg;
    } else {
      const gl_ptx_sym *s = gl_ptx_symtab_find(&p->syms, t.s, t.n);
      if (!s || s->kind != GL_PTX_SYM_VAR)
        gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "'%.*s' is not a register or variable",
                    (int)(t.n > 80 ? 80 : t.n), t.s);
      r->addr_sym = 1;
      r->sym = s;
      r->name = t.s;
      r->len = t.n;
    }
  } else if (t.kind == GL_PTX_TK_INT) {
    off = (int64_t)t.u;
  } else {
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "bad address in '%.*s'",
                (int)(c->mn.n > 80 ? 80 : c->mn.n), c->mn.s);
  }
  /* [base+imm], [base+-imm], [base-imm] */
  const gl_ptx_token *n = gl_ptx_peek(p, 0);
  if (t.kind == GL_PTX_TK_WORD && (is_punct(n, '+') || is_punct(n, '-'))) {
    int neg = n->c == '-';
    gl_ptx_next(p, NULL);
    if (gl_ptx_accept(p, '-')) neg = !neg;
    gl_ptx_next(p, &t);
    if (t.kind != GL_PTX_TK_INT)
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "bad address offset in '%.*s'",
                  (int)(c->mn.n > 80 ? 80 : c->mn.n), c->mn.s);
    off = neg ? (int64_t)((uint64_t)0 - t.u) : (int64_t)t.u;
  }
  gl_ptx_expect(p, ']');
  r->o.imm = off;
  r->addr_off = off;
}

static void parse_operand(insn_ctx *c, raw_op *r) {
  gl_ptx_parser *p = c->p;
  gl_ptx_token t;
  gl_ptx_next(p, &t);
  memset(r, 0, sizeof *r);
  r->line = t.line;
  if (is_punct(&t, '!')) {
    gl_ptx_next(p, &t);
    r->o.kind = GL_PTX_O_REG;
    r->o.reg = expect_reg(c, &t, 0);
    r->o.neg = 1;
    return;
  }
  if (is_punct(&t, '-')) {
    gl_ptx_next(p, &t);
    if (t.kind != GL_PTX_TK_INT && t.kind != GL_PTX_TK_FLOAT)
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "expected a number after '-'");
    r->lit_neg = 1;
  }
  if (t.kind == GL_PTX_TK_INT || t.kind == GL_PTX_TK_FLOAT) {
    r->lit = 1;
    r->tok = t;
    r->o.kind = GL_PTX_O_IMM;
    return;
  }
  if (is_punct(&t, '{')) {
    r->o.kind = GL_PTX_O_VEC;
    for (;;) {
      gl_ptx_token e;
      gl_ptx_next(p, &e);
      if (r->o.vec_n >= 4) fail_unsupported(c);
      r->o.vec[r->o.vec_n++] = expect_reg(c, &e, 1);
      if (gl_ptx_accept(p, '}')) break;
      gl_ptx_expect(p, ',');
    }
    return;
  }
  if (is_punct(&t, '[')) {
    parse_addr(c, r);
    return;
  }
  if (t.kind != GL_PTX_TK_WORD) {
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "bad operand in '%.*s'",
                (int)(c->mn.n > 80 ? 80 : c->mn.n), c->mn.s);
  }
  if (t.n == 1 && t.s[0] == '_') {
    r->sink = 1;
    r->o.kind = GL_PTX_O_REG;
    r->o.reg = GL_PTX_NOREG;
  } else {
    uint32_t reg = gl_ptx_find_reg(p, t.s, t.n);
    if (reg != GL_PTX_NOREG) {
      r->o.kind = GL_PTX_O_REG;
      r->o.reg = reg;
    } else if (t.s[0] == '%') {
      int sr = gl_ptx_find_sreg(t.s, t.n);
      if (sr < 0 && gl_ptx_symtab_find(&p->syms, t.s, t.n) == NULL) {
        /* Special registers the device does not model. */
        static const char *const other[] = {"%envreg", "%pm", "%aggr_smem_size",
                                            "%current_graph_exec", "%reserved_smem",
                                            "%ctaid", "%ntid", "%tid", "%nctaid"};
        for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
          size_t l = strlen(other[i]);
          if (t.n >= l && memcmp(t.s, other[i], l) == 0)
            gl_ptx_fail(p, GPULEASE_UNSUPPORTED, t.line, "special register '%.*s' is not "
                        "supported by the emulated device", (int)(t.n > 80 ? 80 : t.n), t.s);
        }
      }
      if (sr < 0)
        gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "'%.*s' is not a declared register",
                    (int)(t.n > 80 ? 80 : t.n), t.s);
      r->o.kind = GL_PTX_O_SREG;
      r->o.sreg = (uint8_t)sr;
    } else {
      r->is_name = 1;
      r->name = t.s;
      r->len = t.n;
      r->sym = gl_ptx_symtab_find(&p->syms, t.s, t.n);
      /* sym+N as a value */
      const gl_ptx_token *n = gl_ptx_peek(p, 0);
      if (r->sym && r->sym->kind == GL_PTX_SYM_VAR && (is_punct(n, '+') || is_punct(n, '-'))) {
        int neg = n->c == '-';
        gl_ptx_next(p, NULL);
        gl_ptx_next(p, &t);
        if (t.kind != GL_PTX_TK_INT)
          gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "bad offset in '%.*s'",
                      (int)(c->mn.n > 80 ? 80 : c->mn.n), c->mn.s);
        r->addr_off = neg ? (int64_t)((uint64_t)0 - t.u) : (int64_t)t.u;
      }
    }
  }
  if (gl_ptx_accept(p, '|')) {
    gl_ptx_token e;
    gl_ptx_next(p, &e);
    if (r->o.kind != GL_PTX_O_REG) fail_syntax(c, "bad d|p operand");
    r->has_pair = 1;
    r->pair = expect_reg(c, &e, 1);
  }
}

/* Operands up to ';'. */
static void parse_operands(insn_ctx *c) {
  gl_ptx_parser *p = c->p;
  if (gl_ptx_accept(p, ';')) return;
  for (;;) {
    if (c->nops >= MAX_OPNDS) fail_syntax(c, "too many operands");
    parse_operand(c, &c->ops[c->nops++]);
    if (gl_ptx_accept(p, ';')) break;
    gl_ptx_expect(p, ',');
  }
  /* .L2::cache_hint adds a cache-policy operand; it changes nothing here. */
  if (c->hint && c->nops > 0) c->nops--;
}

/* ==== Operand encoding ==================================================== */

static void add_dyn_fixup(insn_ctx *c, uint8_t slot) {
  gl_ptx_parser *p = c->p;
  gl_ptx_grow(p, (void **)&p->dyn_fix, &p->dyn_fix_cap, (uint64_t)p->ndyn_fix + 1,
              sizeof *p->dyn_fix);
  gl_ptx_fixup *f = &p->dyn_fix[p->ndyn_fix++];
  memset(f, 0, sizeof *f);
  f->insn = p->m->ninsns;
  f->slot = slot;
}

/* A variable used as a value (mov r, var): its address in its space. */
static void encode_sym_value(insn_ctx *c, raw_op *r, gl_ptx_operand *o, uint8_t slot) {
  const gl_ptx_sym *s = r->sym;
  if (!s)
    gl_ptx_fail(c->p, GPULEASE_LOAD_FAILED, r->line, "undefined name '%.*s'",
                (int)(r->len > 80 ? 80 : r->len), r->name);
  if (s->kind == GL_PTX_SYM_FUNC)
    gl_ptx_fail(c->p, GPULEASE_UNSUPPORTED, r->line, "function addresses ('%.*s') are not "
                "supported by the emulated device", (int)(r->len > 80 ? 80 : r->len), r->name);
  if (s->kind != GL_PTX_SYM_VAR)
    gl_ptx_fail(c->p, GPULEASE_LOAD_FAILED, r->line, "'%.*s' is not a value",
                (int)(r->len > 80 ? 80 : r->len), r->name);
  gl_ptx_use_var(c->p, s);
  memset(o, 0, sizeof *o);
  o->reg = GL_PTX_NOREG;
  switch (s->space) {
  case GL_PTX_SPACE_GLOBAL:
  case GL_PTX_SPACE_CONST:
    o->kind = GL_PTX_O_IMM;
    o->imm = (int64_t)(c->p->data_base + s->addr);
    break;
  case GL_PTX_SPACE_LOCAL:
  case GL_PTX_SPACE_FPARAM:
    o->kind = GL_PTX_O_FRAME;
    o->imm = (int64_t)s->addr;
    break;
  default: /* shared, kernel param: the offset in that space */
    o->kind = GL_PTX_O_IMM;
    o->imm = (int64_t)s->addr;
    if (s->dyn_shared) add_dyn_fixup(c, slot);
  }
  o->imm += r->addr_off;
}

/* Source i of an ALU-like instruction: register, immediate (converted for
 * `type`), special register or variable address. */
static void encode_src(insn_ctx *c, unsigned opi, unsigned si, int type) {
  raw_op *r = &c->ops[opi];
  gl_ptx_operand *o = &c->in.src[si];
  if (r->has_pair) fail_syntax(c, "unexpected d|p operand");
  if (r->lit) {
    memset(o, 0, sizeof *o);
    o->kind = GL_PTX_O_IMM;
    o->reg = GL_PTX_NOREG;
    o->imm = (int64_t)gl_ptx_literal_value(c->p, &r->tok, r->lit_neg, type);
    return;
  }
  if (r->is_name) {
    encode_sym_value(c, r, o, (uint8_t)(2 + si));
    return;
  }
  if (r->sink) fail_syntax(c, "'_' used as a source");
  if (r->o.kind == GL_PTX_O_ADDR) fail_syntax(c, "unexpected address operand");
  if (r->o.kind == GL_PTX_O_VEC && c->in.op != GL_PTX_OP_MOV && c->in.op != GL_PTX_OP_ST)
    fail_syntax(c, "unexpected vector operand");
  *o = r->o;
}

/* Destination i: a register, '_', or (mov/ld) a vector; d|p fills dst[1]. */
static void encode_dst(insn_ctx *c, unsigned opi, int vec_ok, int pair_ok) {
  raw_op *r = &c->ops[opi];
  if (r->o.kind == GL_PTX_O_VEC && vec_ok) {
    c->in.dst[0] = r->o;
  } else if (r->o.kind == GL_PTX_O_REG && !r->o.neg) {
    c->in.dst[0] = r->o;
  } else {
    fail_syntax(c, "destination must be a register");
  }
  c->in.ndst = 1;
  if (r->has_pair) {
    if (!pair_ok) fail_syntax(c, "unexpected d|p destination");
    c->in.dst[1].kind = GL_PTX_O_REG;
    c->in.dst[1].reg = r->pair;
    c->in.ndst = 2;
  }
}

/* [address] operand: resolves a variable base against the space. */
static void encode_addr(insn_ctx *c, unsigned opi, unsigned si) {
  raw_op *r = &c->ops[opi];
  gl_ptx_parser *p = c->p;
  if (r->o.kind != GL_PTX_O_ADDR) fail_syntax(c, "expected an [address]");
  gl_ptx_operand *o = &c->in.src[si];
  *o = r->o;
  int space = c->in.space;
  if (!r->addr_sym) {
    if (space == GL_PTX_SPACE_PARAM && !p->m->funcs[p->cur_func].is_entry)
      c->in.space = GL_PTX_SPACE_FPARAM;
    return;
  }
  const gl_ptx_sym *s = r->sym;
  gl_ptx_use_var(p, s);
  int64_t base = (int64_t)s->addr;
  int ss = s->space;
  if (ss == GL_PTX_SPACE_GLOBAL || ss == GL_PTX_SPACE_CONST)
    base = (int64_t)(p->data_base + s->addr);
  if (space == GL_PTX_SPACE_GENERIC) {
    if (ss == GL_PTX_SPACE_SHARED) base += (int64_t)GL_EMU_SHARED_WINDOW;
    if (ss == GL_PTX_SPACE_LOCAL || ss == GL_PTX_SPACE_FPARAM) base += (int64_t)GL_EMU_LOCAL_WINDOW;
    if (ss == GL_PTX_SPACE_PARAM) base += (int64_t)GL_EMU_PARAM_WINDOW;
  } else if (space == GL_PTX_SPACE_PARAM && (ss == GL_PTX_SPACE_PARAM || ss == GL_PTX_SPACE_FPARAM)) {
    c->in.space = (uint8_t)ss;
  } else if (space == GL_PTX_SPACE_SHARED_CLUSTER && ss == GL_PTX_SPACE_SHARED) {
    /* a .shared::cta address is the own block's .shared::cluster address */
  } else if (space != ss) {
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, r->line, "'%.*s' is not in the state space of '%.*s'",
                (int)(r->len > 80 ? 80 : r->len), r->name, (int)(c->mn.n > 80 ? 80 : c->mn.n),
                c->mn.s);
  }
  o->imm = base + r->addr_off;
  if (s->dyn_shared) add_dyn_fixup(c, (uint8_t)(2 + si));
}

static void need_nops(insn_ctx *c, unsigned lo, unsigned hi) {
  if (c->nops < lo || c->nops > hi) fail_syntax(c, "wrong number of operands");
}

static void need_types(insn_ctx *c, unsigned n) {
  if (c->ntypes != n) fail_syntax(c, n == 0 ? "unexpected type" : "missing or extra type");
}

/* ==== Decoders ============================================================ */

static const uint16_t cmp_words[] = {W_EQ, W_NE, W_LT, W_LE, W_GT, W_GE, W_LO, W_LS, W_HI,
                                     W_HS, W_EQU, W_NEU, W_LTU, W_LEU, W_GTU, W_GEU,
                                     W_NUM, W_NAN};

static void decode_alu(insn_ctx *c) {
  gl_ptx_insn *in = &c->in;
  const gl_ptx_op_def *d = c->def;
  unsigned nsrc = d->nsrc;
  int two_types = in->op == GL_PTX_OP_CVT || in->op == GL_PTX_OP_SET ||
                  in->op == GL_PTX_OP_SLCT || in->op == GL_PTX_OP_DP4A ||
                  in->op == GL_PTX_OP_DP2A;
  need_types(c, two_types ? 2 : 1);
  in->type = (uint8_t)c->types[0];
  if (two_types) in->type2 = (uint8_t)c->types[1];
  if (c->space >= 0 || c->vec != 1) fail_syntax(c, "unexpected modifier");
  if (d->carry) in->flags |= GL_PTX_F_CARRY_IN;

  switch (in->op) {
  case GL_PTX_OP_MUL:
  case GL_PTX_OP_MAD:
  case GL_PTX_OP_MUL24:
  case GL_PTX_OP_MAD24:
    if (take_word(c, W_HI))
      in->mode = GL_PTX_MUL_HI;
    else if (take_word(c, W_WIDE))
      in->mode = GL_PTX_MUL_WIDE;
    else
      (void)take_word(c, W_LO);
    break;
  case GL_PTX_OP_DP2A:
    if (take_word(c, W_HI))
      in->mode = 1;
    else if (!take_word(c, W_LO))
      fail_syntax(c, "missing .lo/.hi");
    break;
  case GL_PTX_OP_SETP:
  case GL_PTX_OP_SET: {
    int found = 0;
    for (unsigned i = 0; i < sizeof cmp_words / sizeof cmp_words[0] && !found; i++)
      if (take_word(c, cmp_words[i])) {
        in->mode = (uint8_t)i;
        found = 1;
      }
    if (!found) fail_syntax(c, "missing comparison");
    if (take_word(c, W_AND))
      in->boolop = GL_PTX_BOOL_AND;
    else if (take_word(c, W_OR))
      in->boolop = GL_PTX_BOOL_OR;
    else if (take_word(c, W_XOR))
      in->boolop = GL_PTX_BOOL_XOR;
    if (in->boolop) nsrc = 3;
    break;
  }
  case GL_PTX_OP_TESTP: {
    static const uint16_t tw[] = {W_FINITE, W_INFINITE, W_NUMBER, W_NOTANUMBER, W_NORMAL,
                                  W_SUBNORMAL};
    int found = 0;
    for (unsigned i = 0; i < 6 && !found; i++)
      if (take_word(c, tw[i])) {
        in->mode = (uint8_t)i;
        found = 1;
      }
    if (!found) fail_syntax(c, "missing test");
    break;
  }
  case GL_PTX_OP_PRMT: {
    static const uint16_t pw[] = {W_F4E, W_B4E, W_RC8, W_ECL, W_ECR, W_RC16};
    for (unsigned i = 0; i < 6; i++)
      if (take_word(c, pw[i])) in->mode = (uint8_t)(GL_PTX_PRMT_F4E + i);
    break;
  }
  case GL_PTX_OP_SHF:
    if (take_word(c, W_R))
      in->mode = GL_PTX_SHF_R;
    else if (!take_word(c, W_L))
      fail_syntax(c, "missing .l/.r");
    (void)take_word(c, W_WRAP);
    break;
  case GL_PTX_OP_MIN:
  case GL_PTX_OP_MAX:
    if (take_word(c, W_XORSIGN)) {
      if (!take_word(c, W_ABS)) fail_syntax(c, ".xorsign without .abs");
      in->flags |= GL_PTX_F_XORSIGN_ABS;
    }
    break;
  case GL_PTX_OP_CVT:
    /* cvt.rn.f16x2.f32 d, a, b packs two values. */
    if ((in->type == GL_PTX_T_F16X2 || in->type == GL_PTX_T_BF16X2) &&
        in->type2 == GL_PTX_T_F32)
      nsrc = 2;
    break;
  default:
    break;
  }
  check_words_used(c);
  if (in->flags & (GL_PTX_F_UNI | GL_PTX_F_NONCOHERENT)) fail_syntax(c, "unexpected modifier");
  need_nops(c, 1 + nsrc, 1 + nsrc);

  int is_mov = in->op == GL_PTX_OP_MOV;
  encode_dst(c, 0, is_mov, in->op == GL_PTX_OP_SETP || in->op == GL_PTX_OP_SET);
  if (in->flags & GL_PTX_F_CC) {
    if (in->ndst != 1) fail_syntax(c, "bad destination");
    in->dst[1].kind = GL_PTX_O_REG;
    in->dst[1].reg = GL_PTX_REG_CC;
    in->ndst = 2;
  }
  in->nsrc = (uint8_t)nsrc;
  for (unsigned i = 0; i < nsrc; i++) {
    int ty = in->type;
    if (in->op == GL_PTX_OP_CVT || in->op == GL_PTX_OP_SET) ty = in->type2;
    if ((in->op == GL_PTX_OP_SETP || in->op == GL_PTX_OP_SET || in->op == GL_PTX_OP_SELP) &&
        i == 2)
      ty = GL_PTX_T_PRED;
    if (in->op == GL_PTX_OP_SLCT && i == 2) ty = in->type2;
    encode_src(c, 1 + i, i, ty);
  }
  if (is_mov && in->dst[0].kind == GL_PTX_O_VEC && in->src[0].kind == GL_PTX_O_VEC)
    fail_syntax(c, "vector to vector mov");
}

static void decode_ld_st(insn_ctx *c) {
  gl_ptx_insn *in = &c->in;
  need_types(c, 1);
  (void)take_word(c, W_CLUSTER); /* .cluster scope (ld.acquire.cluster) */
  check_words_used(c);
  in->type = (uint8_t)c->types[0];
  in->space = (uint8_t)(c->space < 0 ? GL_PTX_SPACE_GENERIC : c->space);
  in->vec = (uint8_t)c->vec;
  if (c->mn.n >= 3 && memcmp(c->mn.s, "ldu", 3) == 0) in->flags |= GL_PTX_F_NONCOHERENT;
  if (in->flags & ~(uint16_t)GL_PTX_F_NONCOHERENT) fail_syntax(c, "unexpected modifier");
  if (in->rnd) fail_syntax(c, "unexpected rounding modifier");
  need_nops(c, 2, 2);
  if (in->op == GL_PTX_OP_LD) {
    raw_op *r = &c->ops[0];
    if (r->o.kind == GL_PTX_O_VEC) {
      if (r->o.vec_n != c->vec) fail_syntax(c, "vector size does not match");
    } else if (c->vec != 1) {
      fail_syntax(c, "vector load needs {...}");
    }
    encode_dst(c, 0, 1, 0);
    encode_addr(c, 1, 0);
    in->nsrc = 1;
  } else {
    encode_addr(c, 0, 0);
    raw_op *r = &c->ops[1];
    if (r->o.kind == GL_PTX_O_VEC) {
      if (r->o.vec_n != c->vec) fail_syntax(c, "vector size does not match");
      for (unsigned i = 0; i < r->o.vec_n; i++)
        if (r->o.vec[i] == GL_PTX_NOREG) fail_syntax(c, "'_' in a stored vector");
    } else if (c->vec != 1) {
      fail_syntax(c, "vector store needs {...}");
    }
    encode_src(c, 1, 1, in->type);
    in->nsrc = 2;
  }
}

static void decode_cvta(insn_ctx *c) {
  gl_ptx_insn *in = &c->in;
  need_types(c, 1);
  in->type = (uint8_t)c->types[0];
  if (take_word(c, W_TO)) in->mode = GL_PTX_CVTA_TO_SPACE;
  check_words_used(c);
  if (c->space < 0 || c->space == GL_PTX_SPACE_GENERIC) fail_syntax(c, "missing state space");
  in->space = (uint8_t)c->space;
  need_nops(c, 2, 2);
  encode_dst(c, 0, 0, 0);
  encode_src(c, 1, 0, in->type);
  in->nsrc = 1;
}

static void decode_atom(insn_ctx *c) {
  gl_ptx_insn *in = &c->in;
  static const struct {
    uint16_t w;
    uint8_t mode;
  } aw[] = {{W_ADD, GL_PTX_ATOM_ADD},   {W_MIN, GL_PTX_ATOM_MIN}, {W_MAX, GL_PTX_ATOM_MAX},
            {W_EXCH, GL_PTX_ATOM_EXCH}, {W_CAS, GL_PTX_ATOM_CAS}, {W_AND, GL_PTX_ATOM_AND},
            {W_OR, GL_PTX_ATOM_OR},     {W_XOR, GL_PTX_ATOM_XOR}, {W_INC, GL_PTX_ATOM_INC},
            {W_DEC, GL_PTX_ATOM_DEC}};
  int found = 0;
  for (unsigned i = 0; i < sizeof aw / sizeof aw[0] && !found; i++)
    if (take_word(c, aw[i].w)) {
      in->mode = aw[i].mode;
      found = 1;
    }
  if (!found) fail_syntax(c, "missing atomic operation");
  (void)take_word(c, W_CLUSTER); /* .cluster scope: one block per cluster */
  check_words_used(c);
  need_types(c, 1);
  if (c->vec != 1) fail_unsupported(c);
  in->type = (uint8_t)c->types[0];
  int sp = c->space < 0 ? GL_PTX_SPACE_GENERIC : c->space;
  if (sp != GL_PTX_SPACE_GENERIC && sp != GL_PTX_SPACE_GLOBAL && sp != GL_PTX_SPACE_SHARED &&
      sp != GL_PTX_SPACE_SHARED_CLUSTER)
    fail_syntax(c, "atomics need .global, .shared or a generic address");
  in->space = (uint8_t)sp;
  if (in->flags || in->rnd) fail_syntax(c, "unexpected modifier");
  int cas = in->mode == GL_PTX_ATOM_CAS;
  if (in->op == GL_PTX_OP_ATOM) {
    need_nops(c, cas ? 4 : 3, cas ? 4 : 3);
    encode_dst(c, 0, 0, 0);
    encode_addr(c, 1, 0);
    encode_src(c, 2, 1, in->type);
    if (cas) encode_src(c, 3, 2, in->type);
    in->nsrc = (uint8_t)(cas ? 3 : 2);
  } else {
    if (cas || in->mode == GL_PTX_ATOM_EXCH) fail_syntax(c, "red has no .cas/.exch");
    need_nops(c, 2, 2);
    encode_addr(c, 0, 0);
    encode_src(c, 1, 1, in->type);
    in->nsrc = 2;
  }
}

static void decode_bra(insn_ctx *c) {
  gl_ptx_insn *in = &c->in;
  gl_ptx_parser *p = c->p;
  if (take_word(c, W_UNI)) in->flags |= GL_PTX_F_UNI;
  check_words_used(c);
  need_types(c, 0);
  need_nops(c, 1, 1);
  raw_op *r = &c->ops[0];
  if (!r->is_name) {
    if (r->o.kind == GL_PTX_O_REG) fail_unsupported(c);
    fail_syntax(c, "expected a label");
  }
  in->src[0].kind = GL_PTX_O_LABEL;
  in->src[0].reg = GL_PTX_NOREG;
  in->nsrc = 1;
  gl_ptx_grow(p, (void **)&p->bra_fix, &p->bra_fix_cap, (uint64_t)p->nbra_fix + 1,
              sizeof *p->bra_fix);
  gl_ptx_fixup *f = &p->bra_fix[p->nbra_fix++];
  f->insn = p->m->ninsns;
  f->line = r->line;
  f->name = r->name;
  f->len = r->len;
  f->slot = 2;
}

static void decode_simple(insn_ctx *c) {
  gl_ptx_insn *in = &c->in;
  if ((c->def->kind == K_RET) && take_word(c, W_UNI)) in->flags |= GL_PTX_F_UNI;
  check_words_used(c);
  need_types(c, 0);
  need_nops(c, 0, 0);
}

static void decode_bar(insn_ctx *c) {
  gl_ptx_insn *in = &c->in;
  if (take_word(c, W_CLUSTER)) {
    /* barrier.cluster.arrive{.release|.relaxed}{.aligned},
     * barrier.cluster.wait{.acquire}{.aligned} */
    if (c->mn.n < 7 || memcmp(c->mn.s, "barrier", 7) != 0) fail_syntax(c, "bar.cluster");
    in->op = GL_PTX_OP_BARCLUSTER;
    if (take_word(c, W_ARRIVE))
      in->mode = GL_PTX_BARCLUSTER_ARRIVE;
    else if (take_word(c, W_WAIT))
      in->mode = GL_PTX_BARCLUSTER_WAIT;
    else
      fail_syntax(c, "missing .arrive/.wait");
    check_words_used(c);
    if (c->space >= 0 || c->vec != 1 || in->flags || in->rnd) fail_syntax(c, "unexpected modifier");
    need_types(c, 0);
    need_nops(c, 0, 0);
    return;
  }
  if (take_word(c, W_WARP)) {
    /* bar.warp.sync mask: lanes of a warp already run in lockstep. */
    if (!take_word(c, W_SYNC)) fail_syntax(c, "missing .sync");
    check_words_used(c);
    need_nops(c, 1, 1);
    in->op = GL_PTX_OP_MEMBAR;
    return;
  }
  int red = 0;
  if (take_word(c, W_SYNC)) {
    in->mode = GL_PTX_BAR_SYNC;
  } else if (take_word(c, W_ARRIVE)) {
    in->mode = GL_PTX_BAR_ARRIVE;
  } else if (take_word(c, W_RED)) {
    red = 1;
    if (take_word(c, W_POPC))
      in->mode = GL_PTX_BAR_RED_POPC;
    else if (take_word(c, W_AND))
      in->mode = GL_PTX_BAR_RED_AND;
    else if (take_word(c, W_OR))
      in->mode = GL_PTX_BAR_RED_OR;
    else
      fail_syntax(c, "missing reduction");
  } else if (c->mn.n == 3) {
    in->mode = GL_PTX_BAR_SYNC; /* plain "bar 0" is not PTX; be strict */
    fail_syntax(c, "missing .sync/.arrive/.red");
  } else {
    fail_syntax(c, "missing .sync/.arrive/.red");
  }
  check_words_used(c);
  if (c->space >= 0 || c->vec != 1 || in->flags || in->rnd) fail_syntax(c, "unexpected modifier");
  if (red) {
    need_types(c, 1);
    in->type = (uint8_t)c->types[0];
    need_nops(c, 3, 4);
    encode_dst(c, 0, 0, 0);
    encode_src(c, 1, 0, GL_PTX_T_U32);
    if (c->nops == 4) {
      encode_src(c, 2, 1, GL_PTX_T_U32);
      in->flags |= GL_PTX_F_WAIT;
    } else {
      in->src[1].kind = GL_PTX_O_NONE;
      in->src[1].reg = GL_PTX_NOREG;
    }
    encode_src(c, c->nops - 1, 2, GL_PTX_T_PRED);
    in->nsrc = 3;
    return;
  }
  need_types(c, 0);
  need_nops(c, in->mode == GL_PTX_BAR_ARRIVE ? 2 : 1, 2);
  encode_src(c, 0, 0, GL_PTX_T_U32);
  in->nsrc = 1;
  if (c->nops == 2) {
    encode_src(c, 1, 1, GL_PTX_T_U32);
    in->flags |= GL_PTX_F_WAIT;
    in->nsrc = 2;
  }
}

static void decode_membar(insn_ctx *c) {
  /* membar.{cta,gl,sys}, fence.{sc,acq_rel}.scope: ordering is already
   * sequential on the emulator. fence.proxy.* and fence.mbarrier_init
   * are decoded in ptx_insn_async.c. */
  c->words_used = ~0ull;
  if (c->ntypes || c->space >= 0 || c->vec != 1) fail_syntax(c, "unexpected modifier");
  if (c->nops != 0) fail_unsupported(c);
}

static void decode_shfl(insn_ctx *c) {
  gl_ptx_insn *in = &c->in;
  int sync = take_word(c, W_SYNC);
  static const uint16_t sw[] = {W_UP, W_DOWN, W_BFLY, W_IDX};
  int found = 0;
  for (unsigned i = 0; i < 4 && !found; i++)
    if (take_word(c, sw[i])) {
      in->mode = (uint8_t)i;
      found = 1;
    }
  if (!found) fail_syntax(c, "missing shuffle mode");
  check_words_used(c);
  need_types(c, 1);
  in->type = (uint8_t)c->types[0];
  if (in->type != GL_PTX_T_B32) fail_syntax(c, "shfl needs .b32");
  need_nops(c, sync ? 5 : 4, sync ? 5 : 4);
  encode_dst(c, 0, 0, 1);
  for (unsigned i = 0; i < 3; i++) encode_src(c, 1 + i, i, GL_PTX_T_B32);
  if (sync) {
    encode_src(c, 4, 3, GL_PTX_T_B32);
  } else {
    in->src[3].kind = GL_PTX_O_IMM;
    in->src[3].reg = GL_PTX_NOREG;
    in->src[3].imm = 0xffffffff;
  }
  in->nsrc = 4;
}

static void decode_vote(insn_ctx *c) {
  gl_ptx_insn *in = &c->in;
  int sync = take_word(c, W_SYNC);
  static const uint16_t vw[] = {W_ALL, W_ANY, W_UNI, W_BALLOT};
  int found = 0;
  for (unsigned i = 0; i < 4 && !found; i++)
    if (take_word(c, vw[i])) {
      in->mode = (uint8_t)i;
      found = 1;
    }
  if (!found) fail_syntax(c, "missing vote mode");
  check_words_used(c);
  need_types(c, 1);
  in->type = (uint8_t)c->types[0];
  if ((in->mode == GL_PTX_VOTE_BALLOT) != (in->type == GL_PTX_T_B32) ||
      (in->type != GL_PTX_T_B32 && in->type != GL_PTX_T_PRED))
    fail_syntax(c, "bad vote type");
  need_nops(c, sync ? 3 : 2, sync ? 3 : 2);
  encode_dst(c, 0, 0, 0);
  encode_src(c, 1, 0, GL_PTX_T_PRED);
  if (sync) {
    encode_src(c, 2, 1, GL_PTX_T_B32);
  } else {
    in->src[1].kind = GL_PTX_O_IMM;
    in->src[1].reg = GL_PTX_NOREG;
    in->src[1].imm = 0xffffffff;
  }
  in->nsrc = 2;
}

static void decode_match(insn_ctx *c) {
  gl_ptx_insn *in = &c->in;
  if (!take_word(c, W_SYNC)) fail_syntax(c, "missing .sync");
  if (take_word(c, W_ANY))
    in->mode = GL_PTX_MATCH_ANY;
  else if (take_word(c, W_ALL))
    in->mode = GL_PTX_MATCH_ALL;
  else
    fail_syntax(c, "missing .any/.all");
  check_words_used(c);
  need_types(c, 1);
  in->type = (uint8_t)c->types[0];
  need_nops(c, 3, 3);
  encode_dst(c, 0, 0, in->mode == GL_PTX_MATCH_ALL);
  encode_src(c, 1, 0, in->type);
  encode_src(c, 2, 1, GL_PTX_T_B32);
  in->nsrc = 2;
}

static void decode_one_src(insn_ctx *c, int dst) {
  gl_ptx_insn *in = &c->in;
  check_words_used(c);
  need_types(c, 1);
  in->type = (uint8_t)c->types[0];
  need_nops(c, 1, 1);
  if (dst)
    encode_dst(c, 0, 0, 0);
  else {
    encode_src(c, 0, 0, in->type);
    in->nsrc = 1;
  }
}

static void decode_prefetch(insn_ctx *c) {
  gl_ptx_insn *in = &c->in;
  check_words_used(c);
  need_types(c, 0);
  int sp = c->space < 0 ? GL_PTX_SPACE_GENERIC : c->space;
  if (sp != GL_PTX_SPACE_GENERIC && sp != GL_PTX_SPACE_GLOBAL && sp != GL_PTX_SPACE_LOCAL)
    fail_syntax(c, "bad state space");
  in->space = (uint8_t)sp;
  need_nops(c, 1, 1);
  encode_addr(c, 0, 0);
  in->nsrc = 1;
}

/* mapa{.shared::cluster}.u32/.u64 d, a, rank; getctarank{...}.u32/.u64 d, a */
static void decode_cluster_addr(insn_ctx *c, int mapa) {
  gl_ptx_insn *in = &c->in;
  check_words_used(c);
  need_types(c, 1);
  in->type = (uint8_t)c->types[0];
  if (in->type != GL_PTX_T_U32 && in->type != GL_PTX_T_U64 && in->type != GL_PTX_T_B32 &&
      in->type != GL_PTX_T_B64)
    fail_syntax(c, "needs .u32 or .u64");
  int sp = c->space < 0 ? GL_PTX_SPACE_GENERIC : c->space;
  if (sp != GL_PTX_SPACE_GENERIC && sp != GL_PTX_SPACE_SHARED_CLUSTER)
    fail_syntax(c, "bad state space");
  if (c->vec != 1 || in->flags || in->rnd) fail_syntax(c, "unexpected modifier");
  in->space = (uint8_t)sp;
  need_nops(c, mapa ? 3 : 2, mapa ? 3 : 2);
  encode_dst(c, 0, 0, 0);
  encode_src(c, 1, 0, in->type);
  /* a shared variable named in a generic mapa stands for its generic address */
  const raw_op *a = &c->ops[1];
  if (sp == GL_PTX_SPACE_GENERIC && a->is_name && a->sym && a->sym->kind == GL_PTX_SYM_VAR &&
      a->sym->space == GL_PTX_SPACE_SHARED)
    in->src[0].imm += (int64_t)GL_EMU_SHARED_WINDOW;
  in->nsrc = 1;
  if (mapa) {
    encode_src(c, 2, 1, GL_PTX_T_U32);
    in->nsrc = 2;
  }
}

/* ==== Calls =============================================================== */

static const gl_ptx_sym *call_param(insn_ctx *c, const gl_ptx_token *t) {
  if (t->kind != GL_PTX_TK_WORD) fail_syntax(c, "bad call operand");
  const gl_ptx_sym *s = gl_ptx_symtab_find(&c->p->syms, t->s, t->n);
  if (s && s->kind == GL_PTX_SYM_VAR && s->space == GL_PTX_SPACE_FPARAM) return s;
  if (gl_ptx_find_reg(c->p, t->s, t->n) != GL_PTX_NOREG)
    gl_ptx_fail(c->p, GPULEASE_UNSUPPORTED, t->line, "register call arguments ('%.*s') are not "
                "supported by the emulated device", (int)(t->n > 80 ? 80 : t->n), t->s);
  gl_ptx_fail(c->p, GPULEASE_LOAD_FAILED, t->line, "'%.*s' is not a .param variable",
              (int)(t->n > 80 ? 80 : t->n), t->s);
}

/* call{.uni} [(ret),] func [, (args)] ; */
static void decode_call(insn_ctx *c) {
  gl_ptx_parser *p = c->p;
  gl_ptx_insn *in = &c->in;
  gl_ptx_module *m = p->m;
  if (take_word(c, W_UNI)) in->flags |= GL_PTX_F_UNI;
  check_words_used(c);
  need_types(c, 0);
  gl_ptx_call call;
  memset(&call, 0, sizeof call);
  call.ret_off = -1;
  const gl_ptx_sym *ret = NULL;
  gl_ptx_token t;
  if (gl_ptx_accept(p, '(')) {
    gl_ptx_next(p, &t);
    ret = call_param(c, &t);
    if (!gl_ptx_accept(p, ')'))
      gl_ptx_fail(p, GPULEASE_UNSUPPORTED, t.line, "calls with several return values are not "
                  "supported by the emulated device");
    gl_ptx_expect(p, ',');
  }
  gl_ptx_next(p, &t);
  if (t.kind != GL_PTX_TK_WORD) fail_syntax(c, "expected a function name");
  const gl_ptx_sym *fs = gl_ptx_symtab_find(&p->syms, t.s, t.n);
  if (!fs || fs->kind != GL_PTX_SYM_FUNC) {
    if (gl_ptx_find_reg(p, t.s, t.n) != GL_PTX_NOREG)
      gl_ptx_fail(p, GPULEASE_UNSUPPORTED, t.line, "indirect calls ('%.*s') are not supported "
                  "by the emulated device", (int)(c->mn.n > 80 ? 80 : c->mn.n), c->mn.s);
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "call to undefined function '%.*s'",
                (int)(t.n > 80 ? 80 : t.n), t.s);
  }
  const gl_ptx_func *callee = &m->funcs[fs->index];
  if (callee->is_entry)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "call to .entry '%s'", callee->name);
  call.func = fs->index;
  if (gl_ptx_accept(p, ',')) {
    if (!is_punct(gl_ptx_peek(p, 0), '('))
      gl_ptx_fail(p, GPULEASE_UNSUPPORTED, t.line, "indirect calls (prototypes) are not "
                  "supported by the emulated device");
    gl_ptx_expect(p, '(');
    if (!gl_ptx_accept(p, ')')) {
      for (;;) {
        gl_ptx_token a;
        gl_ptx_next(p, &a);
        const gl_ptx_sym *s = call_param(c, &a);
        if (call.nargs >= GL_PTX_MAX_CALL_ARGS)
          gl_ptx_fail(p, GPULEASE_UNSUPPORTED, a.line, "calls with more than %d arguments are "
                      "not supported by the emulated device", GL_PTX_MAX_CALL_ARGS);
        call.arg_off[call.nargs] = (uint32_t)s->addr;
        call.arg_size[call.nargs] = (uint32_t)s->size;
        call.nargs++;
        if (gl_ptx_accept(p, ')')) break;
        gl_ptx_expect(p, ',');
      }
    }
    if (gl_ptx_accept(p, ','))
      gl_ptx_fail(p, GPULEASE_UNSUPPORTED, t.line, "indirect calls (prototypes) are not "
                  "supported by the emulated device");
  }
  gl_ptx_expect(p, ';');
  if (call.nargs != callee->nparams)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, in->line, "call to '%s' with %u arguments, it takes %u",
                callee->name, call.nargs, callee->nparams);
  for (uint32_t i = 0; i < call.nargs; i++)
    if (call.arg_size[i] > callee->params[i].size) call.arg_size[i] = callee->params[i].size;
  if (ret) {
    if (callee->ret_off < 0)
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, in->line, "'%s' returns no value", callee->name);
    if (ret->size < callee->ret_size)
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, in->line, "return value of '%s' does not fit",
                  callee->name);
    call.ret_off = (int32_t)ret->addr;
  }
  if (m->ncalls >= GL_PTX_MAX_CALLS)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, in->line, "more than %u calls", GL_PTX_MAX_CALLS);
  gl_ptx_grow(p, (void **)&m->calls, &p->call_cap, (uint64_t)m->ncalls + 1, sizeof *m->calls);
  gl_ptx_grow(p, (void **)&p->edges, &p->edge_cap, (uint64_t)p->nedges + 1, sizeof *p->edges);
  p->edges[p->nedges].caller = p->cur_func;
  p->edges[p->nedges].callee = fs->index;
  p->edges[p->nedges].line = in->line;
  p->nedges++;
  in->src[0].kind = GL_PTX_O_IMM;
  in->src[0].reg = GL_PTX_NOREG;
  in->src[0].imm = m->ncalls;
  in->nsrc = 1;
  m->calls[m->ncalls++] = call;
}

/* ==== Statement =========================================================== */

void gl_ptx_parse_insn(gl_ptx_parser *p) {
  insn_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  insn_ctx *c = &ctx;
  c->p = p;
  gl_ptx_insn *in = &c->in;
  in->guard = GL_PTX_NOREG;
  in->vec = 1;
  gl_ptx_token t;
  gl_ptx_next(p, &t);
  in->line = t.line;
  if (is_punct(&t, '@')) {
    gl_ptx_next(p, &t);
    if (is_punct(&t, '!')) {
      in->guard_neg = 1;
      gl_ptx_next(p, &t);
    }
    in->guard = expect_reg(c, &t, 0);
    gl_ptx_next(p, &t);
  }
  if (t.kind != GL_PTX_TK_WORD) {
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "expected an instruction");
  }
  c->mn = t;
  in->line = t.line;
  if (gl_ptx_parse_async_insn(p, in, &t)) return; /* cp.async, mbarrier, ... */
  if (gl_ptx_parse_mma(p, in, &t)) return; /* mma, wgmma, ldmatrix, ... */
  split_mnemonic(c);
  in->op = c->def->op;
  if (c->def->kind == K_CALL) {
    decode_call(c);
  } else {
    parse_operands(c);
    switch (c->def->kind) {
    case K_ALU: decode_alu(c); break;
    case K_LD:
    case K_ST: decode_ld_st(c); break;
    case K_CVTA: decode_cvta(c); break;
    case K_ATOM:
    case K_RED: decode_atom(c); break;
    case K_BRA: decode_bra(c); break;
    case K_RET:
    case K_EXIT:
    case K_TRAP: decode_simple(c); break;
    case K_BAR: decode_bar(c); break;
    case K_MEMBAR:
    case K_FENCE: decode_membar(c); break;
    case K_SHFL: decode_shfl(c); break;
    case K_VOTE: decode_vote(c); break;
    case K_MATCH: decode_match(c); break;
    case K_ACTIVEMASK: decode_one_src(c, 1); break;
    case K_NANOSLEEP: decode_one_src(c, 0); break;
    case K_PREFETCH: decode_prefetch(c); break;
    case K_MAPA: decode_cluster_addr(c, 1); break;
    case K_GETCTARANK: decode_cluster_addr(c, 0); break;
    default: fail_unsupported(c);
    }
  }
  if (in->op != GL_PTX_OP_LD && in->op != GL_PTX_OP_ST) in->vec = 1;
  gl_ptx_push_insn(p, in);
}
