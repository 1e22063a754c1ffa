/*
 * ptx_insn_async.c - the parser's decoders for asynchronous copies,
 * mbarriers and the warp-level synchronisation instructions of sm_80 and
 * later:
 *   cp.async.{ca,cg}.shared.global, cp.async.{commit_group, wait_group,
 *   wait_all}, cp.async.mbarrier.arrive{.noinc}, cp.async.bulk (global ->
 *   shared, shared::cta -> shared::cluster, shared::cta -> global,
 *   commit_group, wait_group{.read}, prefetch.L2), mbarrier.*,
 *   st.async, red.async, redux.sync, elect.sync, setmaxnreg,
 *   griddepcontrol, createpolicy, and the fences fence.proxy.* and
 *   fence.mbarrier_init.
 *
 * gl_ptx_parse_insn hands a statement over when its mnemonic's base is one
 * of these (for fence: when .proxy or .mbarrier_init follows). It is
 * decoded here from the mnemonic to the ';', because these mnemonics carry
 * two state spaces and "::" qualifiers that the general modifier table
 * (ptx_optab.c) does not model. Modifiers may come in any order; each must
 * be understood, or the statement fails with a message naming it.
 *
 * What the emulator gets for free becomes a GL_PTX_OP_MEMBAR no-op: the
 * cp.async groups and waits (every copy completes when it is issued, so
 * any wait finds its group complete), the proxy fences (one memory, one
 * proxy: every access is visible to the next in the emulator's
 * sequentially consistent order), setmaxnreg (registers are not a shared
 * resource here) and griddepcontrol (a launch starts only after the
 * previous one on its stream has finished, so the dependency it waits
 * for has always resolved; launching dependents early is a hint).
 */
#include <string.h>

#include "emu/ptx_internal.h"

#define MAX_MODS 16
#define MAX_AOPS 8

enum { AO_REG = 1, AO_SINK, AO_IMM, AO_ADDR, AO_VEC };

/* An operand as written. */
typedef struct aop {
  uint8_t kind;
  uint8_t neg;      /* !p */
  uint8_t has_pair; /* d|p */
  uint8_t is_pred;  /* a register declared .pred */
  uint8_t is_float; /* IMM: a floating-point literal (value not kept) */
  uint32_t reg;     /* REG; ADDR: base register or GL_PTX_NOREG */
  uint32_t pair;    /* the p of d|p, GL_PTX_NOREG for '_' */
  uint8_t ncoord;   /* ADDR [tmap, {c0, ...}]: the coordinates; VEC: size */
  uint32_t coord[5];
  int64_t imm;      /* IMM: the value; ADDR: the offset */
  const gl_ptx_sym *sym; /* ADDR based on a variable */
  uint32_t line;
} aop;

typedef struct actx {
  gl_ptx_parser *p;
  gl_ptx_token mn;
  gl_ptx_insn *in;
  const char *mod[MAX_MODS]; /* modifiers after the base, with their dot */
  uint32_t modn[MAX_MODS];
  unsigned nmods;
  uint32_t used;             /* bit i: mod[i] understood */
  aop ops[MAX_AOPS];
  unsigned nops;
} actx;

static _Noreturn void bad(actx *c, const char *what) {
  gl_ptx_fail(c->p, GPULEASE_LOAD_FAILED, c->in->line, "%s in '%.*s'", what,
              (int)(c->mn.n > 80 ? 80 : c->mn.n), c->mn.s);
}

static _Noreturn void unsupported(actx *c, const char *why) {
  gl_ptx_fail(c->p, GPULEASE_UNSUPPORTED, c->in->line,
              "'%.*s' is not supported by the emulated device (%s)",
              (int)(c->mn.n > 80 ? 80 : c->mn.n), c->mn.s, why);
}

/* ==== Modifiers =========================================================== */

static void split_mods(actx *c, uint32_t base_len) {
  const char *s = c->mn.s + base_len, *end = c->mn.s + c->mn.n;
  while (s < end) {
    const char *q = s + 1;
    while (q < end && *q != '.') q++;
    if (q - s < 2) bad(c, "empty modifier");
    if (c->nmods >= MAX_MODS) bad(c, "too many modifiers");
    c->mod[c->nmods] = s;
    c->modn[c->nmods++] = (uint32_t)(q - s);
    s = q;
  }
}

static int mod_is(const actx *c, unsigned i, const char *w) {
  size_t n = strlen(w);
  return c->modn[i] == n && memcmp(c->mod[i], w, n) == 0;
}

/* Takes modifier w if written (and not yet taken). */
static int take(actx *c, const char *w) {
  for (unsigned i = 0; i < c->nmods; i++)
    if (!(c->used & (1u << i)) && mod_is(c, i, w)) {
      c->used |= 1u << i;
      return 1;
    }
  return 0;
}

/* Index of the first of ws[] written, taken; -1 if none. */
static int take_one(actx *c, const char *const *ws, unsigned n) {
  for (unsigned k = 0; k < n; k++)
    if (take(c, ws[k])) return (int)k;
  return -1;
}

/* Memory-ordering and scope qualifiers: no effect on the emulator, whose
 * accesses are sequentially consistent. */
static void take_order(actx *c) {
  static const char *const ord[] = {".release", ".acquire", ".relaxed", ".acq_rel", ".sc",
                                    ".cta", ".cluster", ".gpu", ".sys", ".aligned"};
  for (unsigned k = 0; k < sizeof ord / sizeof ord[0]; k++) (void)take(c, ord[k]);
}

/* .L2::cache_hint (adds a trailing 64-bit policy operand) and the cache
 * prefetch/eviction qualifiers: hints without effect here. Returns 1 when
 * the policy operand is present. */
static int take_cache_hints(actx *c) {
  int hint = take(c, ".L2::cache_hint");
  for (unsigned i = 0; i < c->nmods; i++)
    if (!(c->used & (1u << i)) && c->modn[i] > 5 &&
        (memcmp(c->mod[i], ".L2::", 5) == 0 || memcmp(c->mod[i], ".L1::", 5) == 0))
      c->used |= 1u << i;
  return hint;
}

static void all_used(actx *c) {
  for (unsigned i = 0; i < c->nmods; i++)
    if (!(c->used & (1u << i)))
      gl_ptx_fail(c->p, GPULEASE_LOAD_FAILED, c->in->line, "unexpected modifier '%.*s' in '%.*s'",
                  (int)(c->modn[i] > 40 ? 40 : c->modn[i]), c->mod[i],
                  (int)(c->mn.n > 80 ? 80 : c->mn.n), c->mn.s);
}

/* The state space of an mbarrier operand: .shared{::cta}, .shared::cluster
 * or generic when none is written. */
static int take_shared_space(actx *c, int cluster_ok) {
  if (take(c, ".shared") || take(c, ".shared::cta")) return GL_PTX_SPACE_SHARED;
  if (take(c, ".shared::cluster")) {
    if (!cluster_ok) bad(c, ".shared::cluster is not allowed");
    return GL_PTX_SPACE_SHARED_CLUSTER;
  }
  return GL_PTX_SPACE_GENERIC;
}

/* ==== Operands ============================================================ */

static int is_punct(const gl_ptx_token *t, char ch) {
  return t->kind == GL_PTX_TK_PUNCT && t->c == ch;
}

/* Register index of a name, with whether it is declared .pred. */
static uint32_t find_reg(actx *c, const gl_ptx_token *t, uint8_t *is_pred) {
  uint32_t r = gl_ptx_find_reg(c->p, t->s, t->n);
  if (r == GL_PTX_NOREG) return r;
  const gl_ptx_sym *e = gl_ptx_symtab_find(&c->p->syms, t->s, t->n);
  if (!e) { /* an element of a %p<N> range */
    uint32_t k = t->n;
    while (k > 0 && t->s[k - 1] >= '0' && t->s[k - 1] <= '9') k--;
    e = gl_ptx_symtab_find(&c->p->syms, t->s, k);
  }
  *is_pred = e && e->type == GL_PTX_T_PRED;
  return r;
}

static uint32_t expect_reg(actx *c, const gl_ptx_token *t, int sink_ok, uint8_t *is_pred) {
  if (t->kind == GL_PTX_TK_WORD) {
    if (sink_ok && t->n == 1 && t->s[0] == '_') return GL_PTX_NOREG;
    uint32_t r = find_reg(c, t, is_pred);
    if (r != GL_PTX_NOREG) return r;
    gl_ptx_fail(c->p, GPULEASE_LOAD_FAILED, t->line, "'%.*s' is not a declared register",
                (int)(t->n > 80 ? 80 : t->n), t->s);
  }
  bad(c, "expected a register");
}

static void parse_addr(actx *c, aop *o) {
  gl_ptx_parser *p = c->p;
  gl_ptx_token t;
  o->kind = AO_ADDR;
  o->reg = GL_PTX_NOREG;
  gl_ptx_next(p, &t);
  if (t.kind == GL_PTX_TK_WORD) {
    uint8_t pr;
    o->reg = find_reg(c, &t, &pr);
    if (o->reg == GL_PTX_NOREG) {
      const gl_ptx_sym *s = gl_ptx_symtab_find(&p->syms, t.s, t.n);
      if (!s || s->kind != GL_PTX_SYM_VAR)
        gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "'%.*s' is not a register or variable",
                    (int)(t.n > 80 ? 80 : t.n), t.s);
      o->sym = s;
    }
    const gl_ptx_token *n = gl_ptx_peek(p, 0);
    if (is_punct(n, '+') || is_punct(n, '-')) {
      int neg = n->c == '-';
      gl_ptx_next(p, NULL);
      if (gl_ptx_accept(p, '-')) neg = !neg;
      gl_ptx_next(p, &t);
      if (t.kind != GL_PTX_TK_INT) bad(c, "bad address offset");
      o->imm = neg ? (int64_t)((uint64_t)0 - t.u) : (int64_t)t.u;
    }
  } else if (t.kind == GL_PTX_TK_INT) {
    o->imm = (int64_t)t.u;
  } else {
    bad(c, "bad address");
  }
  if (gl_ptx_accept(p, ',')) { /* [tensorMap, {c0, c1, ...}] */
    gl_ptx_expect(p, '{');
    for (;;) {
      if (o->ncoord >= 5) bad(c, "more than 5 tensor coordinates");
      gl_ptx_next(p, &t);
      uint8_t pr;
      o->coord[o->ncoord++] = expect_reg(c, &t, 0, &pr);
      if (gl_ptx_accept(p, '}')) break;
      gl_ptx_expect(p, ',');
    }
  }
  gl_ptx_expect(p, ']');
}

static void parse_operand(actx *c, aop *o) {
  gl_ptx_parser *p = c->p;
  gl_ptx_token t;
  gl_ptx_next(p, &t);
  memset(o, 0, sizeof *o);
  o->line = t.line;
  if (is_punct(&t, '!')) {
    gl_ptx_next(p, &t);
    o->kind = AO_REG;
    o->reg = expect_reg(c, &t, 0, &o->is_pred);
    o->neg = 1;
    return;
  }
  int neg = 0;
  if (is_punct(&t, '-')) {
    neg = 1;
    gl_ptx_next(p, &t);
    if (t.kind != GL_PTX_TK_INT && t.kind != GL_PTX_TK_FLOAT)
      bad(c, "expected a number after '-'");
  }
  if (t.kind == GL_PTX_TK_INT) {
    o->kind = AO_IMM;
    o->imm = neg ? (int64_t)((uint64_t)0 - t.u) : (int64_t)t.u;
    return;
  }
  if (t.kind == GL_PTX_TK_FLOAT) { /* createpolicy's fraction: only checked */
    o->kind = AO_IMM;
    o->is_float = 1;
    return;
  }
  if (is_punct(&t, '[')) {
    parse_addr(c, o);
    return;
  }
  if (is_punct(&t, '{')) { /* {%r1, %r2, ...}: registers in coord[] */
    o->kind = AO_VEC;
    for (;;) {
      if (o->ncoord >= 4) bad(c, "more than 4 vector elements");
      gl_ptx_next(p, &t);
      uint8_t pr;
      o->coord[o->ncoord++] = expect_reg(c, &t, 0, &pr);
      if (gl_ptx_accept(p, '}')) break;
      gl_ptx_expect(p, ',');
    }
    return;
  }
  if (t.kind != GL_PTX_TK_WORD) bad(c, "bad operand");
  o->kind = AO_REG;
  if (t.n == 1 && t.s[0] == '_') {
    o->kind = AO_SINK;
    o->reg = GL_PTX_NOREG;
  } else {
    o->reg = expect_reg(c, &t, 0, &o->is_pred);
  }
  if (gl_ptx_accept(p, '|')) {
    gl_ptx_next(p, &t);
    uint8_t pr;
    o->has_pair = 1;
    o->pair = expect_reg(c, &t, 1, &pr);
  }
}

static void parse_operands(actx *c) {
  if (gl_ptx_accept(c->p, ';')) return;
  for (;;) {
    if (c->nops >= MAX_AOPS) bad(c, "too many operands");
    parse_operand(c, &c->ops[c->nops++]);
    if (gl_ptx_accept(c->p, ';')) break;
    gl_ptx_expect(c->p, ',');
  }
}

static void need_ops(actx *c, unsigned lo, unsigned hi) {
  if (c->nops < lo || c->nops > hi) bad(c, "wrong number of operands");
}

/* ==== Operand encoding ==================================================== */

static gl_ptx_operand *src_slot(actx *c, unsigned si) {
  if (c->in->nsrc < si + 1) c->in->nsrc = (uint8_t)(si + 1);
  return &c->in->src[si];
}

/* [address] operand i as src[si] in state space `space`. */
static void enc_addr(actx *c, unsigned i, unsigned si, int space) {
  gl_ptx_parser *p = c->p;
  const aop *a = &c->ops[i];
  if (a->kind != AO_ADDR) bad(c, "expected an [address]");
  if (a->ncoord) bad(c, "unexpected tensor coordinates");
  gl_ptx_operand *o = src_slot(c, si);
  memset(o, 0, sizeof *o);
  o->kind = GL_PTX_O_ADDR;
  o->reg = a->reg;
  o->imm = a->imm;
  const gl_ptx_sym *s = a->sym;
  if (!s) return;
  gl_ptx_use_var(p, s);
  int64_t base = (int64_t)s->addr;
  int ok;
  switch (s->space) {
  case GL_PTX_SPACE_SHARED:
    ok = space == GL_PTX_SPACE_SHARED || space == GL_PTX_SPACE_SHARED_CLUSTER ||
         space == GL_PTX_SPACE_GENERIC;
    if (space == GL_PTX_SPACE_GENERIC) base += (int64_t)GL_EMU_SHARED_WINDOW;
    break;
  case GL_PTX_SPACE_GLOBAL:
  case GL_PTX_SPACE_CONST:
    ok = space == GL_PTX_SPACE_GENERIC || space == s->space;
    base = (int64_t)(p->data_base + s->addr);
    break;
  default:
    ok = 0;
  }
  if (!ok)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, a->line, "variable in the wrong state space in '%.*s'",
                (int)(c->mn.n > 80 ? 80 : c->mn.n), c->mn.s);
  o->imm += base;
  if (s->dyn_shared) {
    gl_ptx_grow(p, (void **)&p->dyn_fix, &p->dyn_fix_cap, (uint64_t)p->ndyn_fix + 1,
                sizeof *p->dyn_fix);
    gl_ptx_fixup *f = &p->dyn_fix[p->ndyn_fix++];
    memset(f, 0, sizeof *f);
    f->insn = p->m->ninsns;
    f->slot = (uint8_t)(2 + si);
  }
}

/* Value operand i (register or integer) as src[si]; a predicate may be
 * negated when pred_ok. */
static void enc_val(actx *c, unsigned i, unsigned si, int pred_ok) {
  const aop *a = &c->ops[i];
  gl_ptx_operand *o = src_slot(c, si);
  memset(o, 0, sizeof *o);
  if (a->has_pair) bad(c, "unexpected d|p operand");
  if (a->is_float) bad(c, "unexpected floating-point operand");
  if (a->kind == AO_VEC) bad(c, "unexpected vector operand");
  if (a->kind == AO_IMM) {
    o->kind = GL_PTX_O_IMM;
    o->reg = GL_PTX_NOREG;
    o->imm = a->imm;
  } else if (a->kind == AO_REG && (!a->neg || pred_ok)) {
    o->kind = GL_PTX_O_REG;
    o->reg = a->reg;
    o->neg = a->neg;
  } else {
    bad(c, a->kind == AO_ADDR ? "unexpected address operand" : "bad source operand");
  }
}

static void enc_imm(actx *c, unsigned si, int64_t v) {
  gl_ptx_operand *o = src_slot(c, si);
  memset(o, 0, sizeof *o);
  o->kind = GL_PTX_O_IMM;
  o->reg = GL_PTX_NOREG;
  o->imm = v;
}

/* The ctaMask operand i of a .multicast::cluster copy, kept in dst[0]
 * (these copies write no register). */
static void enc_ctamask(actx *c, unsigned i) {
  const aop *a = &c->ops[i];
  if ((a->kind != AO_IMM && a->kind != AO_REG) || a->neg || a->has_pair || a->is_float)
    bad(c, "bad ctaMask operand");
  gl_ptx_operand *o = &c->in->dst[0];
  memset(o, 0, sizeof *o);
  o->kind = a->kind == AO_IMM ? GL_PTX_O_IMM : GL_PTX_O_REG;
  o->reg = a->kind == AO_IMM ? GL_PTX_NOREG : a->reg;
  o->imm = a->kind == AO_IMM ? a->imm : 0;
  c->in->flags |= GL_PTX_F_MULTICAST;
}

/* Destination operand i as dst[di]: a register, or '_' when sink_ok. */
static void enc_dst(actx *c, unsigned i, unsigned di, int sink_ok) {
  const aop *a = &c->ops[i];
  gl_ptx_operand *o = &c->in->dst[di];
  memset(o, 0, sizeof *o);
  o->kind = GL_PTX_O_REG;
  if (a->has_pair) bad(c, "unexpected d|p operand");
  if (a->kind == AO_SINK && sink_ok)
    o->reg = GL_PTX_NOREG;
  else if (a->kind == AO_REG && !a->neg)
    o->reg = a->reg;
  else
    bad(c, "destination must be a register");
  if (c->in->ndst < di + 1) c->in->ndst = (uint8_t)(di + 1);
}

/* An immediate operand i in [lo, hi]. */
static int64_t imm_in(actx *c, unsigned i, int64_t lo, int64_t hi, const char *what) {
  const aop *a = &c->ops[i];
  if (a->kind != AO_IMM || a->is_float || a->imm < lo || a->imm > hi) {
    gl_ptx_fail(c->p, GPULEASE_LOAD_FAILED, c->in->line,
                "%s must be an integer constant in %lld..%lld in '%.*s'", what, (long long)lo,
                (long long)hi, (int)(c->mn.n > 80 ? 80 : c->mn.n), c->mn.s);
  }
  return a->imm;
}

static void as_nop(actx *c) {
  c->in->op = GL_PTX_OP_MEMBAR;
  c->in->nsrc = 0;
  c->in->ndst = 0;
}

/* ==== cp.async ============================================================ */

/* cp.async.{ca,cg}.shared{::cta}.global{.L2::...} [d], [s], cp-size
 * {, src-size | , ignore-src}{, cache-policy} */
static void decode_cp_async_copy(actx *c, int cg) {
  gl_ptx_insn *in = c->in;
  for (unsigned i = 0; i < c->nmods; i++) { /* the destination's space comes first */
    if (mod_is(c, i, ".global")) bad(c, "missing .shared destination before .global");
    if (mod_is(c, i, ".shared") || mod_is(c, i, ".shared::cta")) break;
  }
  if (!take(c, ".shared") && !take(c, ".shared::cta")) bad(c, "missing .shared destination");
  if (!take(c, ".global")) bad(c, "missing .global source");
  int hint = take_cache_hints(c);
  all_used(c);
  parse_operands(c);
  if (hint) {
    if (c->nops < 4) bad(c, "missing cache-policy operand");
    c->nops--;
  }
  need_ops(c, 3, 4);
  in->op = GL_PTX_OP_CPASYNC;
  in->space = GL_PTX_SPACE_SHARED;
  int64_t sz = imm_in(c, 2, 4, 16, "cp-size");
  if (sz != 4 && sz != 8 && sz != 16) bad(c, "cp-size must be 4, 8 or 16");
  if (cg && sz != 16) bad(c, "cp.async.cg copies 16 bytes only");
  in->mode = (uint8_t)sz;
  enc_addr(c, 0, 0, GL_PTX_SPACE_SHARED);
  enc_addr(c, 1, 1, GL_PTX_SPACE_GLOBAL);
  src_slot(c, 3);
  in->src[2].kind = in->src[3].kind = GL_PTX_O_NONE;
  in->src[2].reg = in->src[3].reg = GL_PTX_NOREG;
  if (c->nops == 4) {
    const aop *a = &c->ops[3];
    if (a->kind == AO_REG && (a->is_pred || a->neg)) {
      enc_val(c, 3, 3, 1); /* ignore-src */
    } else {
      if (a->kind == AO_IMM) (void)imm_in(c, 3, 0, sz, "src-size");
      enc_val(c, 3, 2, 0); /* src-size */
    }
  }
}

/* cp.async.bulk.dst.src.completion [d], [s], size{, [mbar]}{, policy} */
static void decode_cp_bulk_copy(actx *c) {
  gl_ptx_insn *in = c->in;
  static const char *const sp[] = {".shared::cluster", ".shared::cta", ".global"};
  /* the first space written is the destination */
  int dst = -1, src = -1;
  for (unsigned i = 0; i < c->nmods; i++) {
    for (unsigned k = 0; k < 3; k++) {
      if (!(c->used & (1u << i)) && mod_is(c, i, sp[k])) {
        c->used |= 1u << i;
        if (dst < 0)
          dst = (int)k;
        else if (src < 0)
          src = (int)k;
        else
          bad(c, "three state spaces");
      }
    }
  }
  if (dst < 0 || src < 0) bad(c, "missing destination or source state space");
  int mc = take(c, ".multicast::cluster");
  if (take(c, ".cp_mask")) unsupported(c, "byte-masked bulk copies");
  int hint = take_cache_hints(c);
  in->op = GL_PTX_OP_CPBULK;
  int mbar = 0;
  if (src == 2 && dst != 2) { /* global -> shared */
    in->mode = GL_PTX_BULK_G2S;
    in->space = dst == 0 ? GL_PTX_SPACE_SHARED_CLUSTER : GL_PTX_SPACE_SHARED;
    mbar = 1;
  } else if (src == 1 && dst == 0) {
    in->mode = GL_PTX_BULK_S2S;
    in->space = GL_PTX_SPACE_SHARED_CLUSTER;
    mbar = 1;
  } else if (src == 1 && dst == 2) {
    in->mode = GL_PTX_BULK_S2G;
    in->space = GL_PTX_SPACE_GLOBAL;
    if (!take(c, ".bulk_group")) bad(c, "missing .bulk_group");
  } else {
    bad(c, "unsupported pair of state spaces");
  }
  if (mbar && !take(c, ".mbarrier::complete_tx::bytes"))
    bad(c, "missing .mbarrier::complete_tx::bytes");
  if (mc && (in->mode != GL_PTX_BULK_G2S || in->space != GL_PTX_SPACE_SHARED_CLUSTER))
    bad(c, ".multicast::cluster needs .shared::cluster.global");
  all_used(c);
  parse_operands(c);
  unsigned want = (mbar ? 4u : 3u) + (mc ? 1u : 0u);
  if (hint) {
    if (c->nops != want + 1) bad(c, "missing cache-policy operand");
    c->nops--;
  }
  need_ops(c, want, want);
  if (mc) enc_ctamask(c, 4);
  enc_addr(c, 0, 0, in->mode == GL_PTX_BULK_S2G ? GL_PTX_SPACE_GLOBAL : in->space);
  enc_addr(c, 1, 1, in->mode == GL_PTX_BULK_G2S ? GL_PTX_SPACE_GLOBAL : GL_PTX_SPACE_SHARED);
  enc_val(c, 2, 2, 0);
  if (c->ops[2].kind == AO_IMM) (void)imm_in(c, 2, 16, UINT32_MAX, "size");
  if (mbar) {
    enc_addr(c, 3, 3, in->space);
  } else {
    in->src[3].kind = GL_PTX_O_NONE;
    in->src[3].reg = GL_PTX_NOREG;
  }
}

/* The tensor map operand i, [tmap, {c0, ...}], as src[1] (the map) and
 * src[2] (the coordinates) for a rank-`rank` copy. */
static void enc_tensor(actx *c, unsigned i, unsigned rank) {
  aop a = c->ops[i];
  if (a.kind != AO_ADDR || a.ncoord == 0) bad(c, "expected [tensorMap, {coordinates}]");
  if (a.ncoord != rank) bad(c, "the coordinates do not match the dimension");
  c->ops[i].ncoord = 0;
  enc_addr(c, i, 1, GL_PTX_SPACE_GENERIC);
  gl_ptx_operand *o = src_slot(c, 2);
  memset(o, 0, sizeof *o);
  o->kind = GL_PTX_O_VEC;
  o->vec_n = (uint8_t)(rank > 4 ? 4 : rank);
  o->reg = GL_PTX_NOREG;
  for (unsigned k = 0; k < rank && k < 4; k++) o->vec[k] = a.coord[k];
  if (rank > 4) {
    c->in->dst[1].kind = GL_PTX_O_REG;
    c->in->dst[1].reg = a.coord[4];
  }
}


/* cp.async.bulk.tensor.Nd.{shared::cluster|shared::cta}.global{.tile}
 *   .mbarrier::complete_tx::bytes [dst], [tmap, {c...}], [mbar]{, policy}
 * cp.async.bulk.tensor.Nd.global.shared::cta{.tile}.bulk_group
 *   [tmap, {c...}], [src]{, policy}
 * cp.async.bulk.prefetch.tensor.Nd.L2.global{.tile} [tmap, {c...}]: no-op */
static void decode_cp_bulk_tensor(actx *c, int prefetch) {
  gl_ptx_insn *in = c->in;
  static const char *const dims[] = {".1d", ".2d", ".3d", ".4d", ".5d"};
  int d = take_one(c, dims, 5);
  if (d < 0) bad(c, "missing .1d-.5d");
  unsigned rank = (unsigned)d + 1;
  static const char *const modes[] = {".im2col", ".im2col::w", ".im2col::w::128",
                                      ".tile::gather4", ".tile::scatter4", ".im2col_no_offs"};
  if (take_one(c, modes, 6) >= 0) unsupported(c, "tensor copies other than .tile");
  (void)take(c, ".tile");
  int mc = take(c, ".multicast::cluster");
  if (take(c, ".cta_group::1") || take(c, ".cta_group::2")) unsupported(c, ".cta_group");
  int hint = take_cache_hints(c);
  if (prefetch) {
    if (!take(c, ".L2") || !take(c, ".global")) bad(c, "expected .L2.global");
    all_used(c);
    parse_operands(c);
    if (hint && c->nops == 2) c->nops--;
    need_ops(c, 1, 1);
    enc_tensor(c, 0, rank);
    as_nop(c);
    return;
  }
  int dst = -1; /* the first space written is the destination */
  for (unsigned i = 0; i < c->nmods && dst < 0; i++) {
    if (mod_is(c, i, ".global")) dst = 0;
    if (mod_is(c, i, ".shared::cluster") || mod_is(c, i, ".shared::cta")) dst = 1;
  }
  in->op = GL_PTX_OP_CPTENSOR;
  in->vec = (uint8_t)rank;
  if (dst == 1) {
    in->mode = GL_PTX_BULK_G2S;
    in->space = take(c, ".shared::cluster") ? GL_PTX_SPACE_SHARED_CLUSTER : GL_PTX_SPACE_SHARED;
    if (in->space == GL_PTX_SPACE_SHARED) (void)take(c, ".shared::cta");
    if (!take(c, ".global")) bad(c, "missing .global source");
    if (!take(c, ".mbarrier::complete_tx::bytes")) bad(c, "missing .mbarrier::complete_tx::bytes");
  } else if (dst == 0) {
    in->mode = GL_PTX_BULK_S2G;
    in->space = GL_PTX_SPACE_SHARED;
    (void)take(c, ".global");
    if (!take(c, ".shared::cta")) bad(c, "missing .shared::cta source");
    if (!take(c, ".bulk_group")) bad(c, "missing .bulk_group");
  } else {
    bad(c, "missing state spaces");
  }
  if (mc && (in->mode != GL_PTX_BULK_G2S || in->space != GL_PTX_SPACE_SHARED_CLUSTER))
    bad(c, ".multicast::cluster needs .shared::cluster.global");
  all_used(c);
  parse_operands(c);
  unsigned want = (in->mode == GL_PTX_BULK_G2S ? 3u : 2u) + (mc ? 1u : 0u);
  if (hint) {
    if (c->nops != want + 1) bad(c, "missing cache-policy operand");
    c->nops--;
  }
  need_ops(c, want, want);
  if (mc) enc_ctamask(c, 3);
  if (in->mode == GL_PTX_BULK_G2S) {
    enc_addr(c, 0, 0, in->space);
    enc_tensor(c, 1, rank);
    enc_addr(c, 2, 3, in->space);
  } else {
    enc_tensor(c, 0, rank);
    enc_addr(c, 1, 0, GL_PTX_SPACE_SHARED);
    src_slot(c, 3);
    in->src[3].kind = GL_PTX_O_NONE;
    in->src[3].reg = GL_PTX_NOREG;
  }
}

/* cp.reduce.async.bulk.{global.shared::cta.bulk_group |
 *   shared::cluster.shared::cta.mbarrier::complete_tx::bytes}.op.type
 *   [dst], [src], size{, [mbar]}{, policy}
 * cp.reduce.async.bulk.tensor.Nd.global.shared::cta.op{.tile}.bulk_group
 *   [tmap, {c...}], [src]{, policy} */
static void decode_cp_reduce(actx *c) {
  gl_ptx_insn *in = c->in;
  if (!take(c, ".async") || !take(c, ".bulk")) bad(c, "expected .async.bulk");
  static const char *const opw[] = {".add", ".min", ".max", ".and", ".or", ".xor", ".inc",
                                    ".dec"};
  static const uint8_t opv[] = {GL_PTX_ATOM_ADD, GL_PTX_ATOM_MIN, GL_PTX_ATOM_MAX,
                                GL_PTX_ATOM_AND, GL_PTX_ATOM_OR,  GL_PTX_ATOM_XOR,
                                GL_PTX_ATOM_INC, GL_PTX_ATOM_DEC};
  int tensor = take(c, ".tensor");
  int k = take_one(c, opw, 8);
  if (k < 0) bad(c, "missing reduction operation");
  in->op = GL_PTX_OP_CPREDUCE;
  in->mode = opv[k];
  (void)take(c, ".noftz");
  int hint = take_cache_hints(c);
  if (tensor) {
    static const char *const dims[] = {".1d", ".2d", ".3d", ".4d", ".5d"};
    int d = take_one(c, dims, 5);
    if (d < 0) bad(c, "missing .1d-.5d");
    if (take(c, ".im2col_no_offs")) unsupported(c, "tensor reductions other than .tile");
    (void)take(c, ".tile");
    if (!take(c, ".global") || !take(c, ".shared::cta") || !take(c, ".bulk_group"))
      bad(c, "expected .global.shared::cta...bulk_group");
    all_used(c);
    in->vec = (uint8_t)(d + 1);
    in->space = GL_PTX_SPACE_SHARED;
    parse_operands(c);
    if (hint) {
      if (c->nops != 3) bad(c, "missing cache-policy operand");
      c->nops--;
    }
    need_ops(c, 2, 2);
    enc_tensor(c, 0, (unsigned)d + 1);
    enc_addr(c, 1, 0, GL_PTX_SPACE_SHARED);
    src_slot(c, 3);
    in->src[3].kind = GL_PTX_O_NONE;
    in->src[3].reg = GL_PTX_NOREG;
    return;
  }
  static const char *const tyw[] = {".u32", ".s32", ".u64", ".s64", ".b32", ".b64",
                                    ".f32", ".f64", ".f16", ".bf16"};
  static const uint8_t tyv[] = {GL_PTX_T_U32, GL_PTX_T_S32, GL_PTX_T_U64, GL_PTX_T_S64,
                                GL_PTX_T_B32, GL_PTX_T_B64, GL_PTX_T_F32, GL_PTX_T_F64,
                                GL_PTX_T_F16, GL_PTX_T_BF16};
  int t = take_one(c, tyw, 10);
  if (t < 0) bad(c, "missing or unsupported type");
  in->type = tyv[t];
  in->vec = 0; /* not a tensor */
  int mbar;
  if (take(c, ".global")) {
    if (!take(c, ".shared::cta") || !take(c, ".bulk_group"))
      bad(c, "expected .global.shared::cta.bulk_group");
    in->space = GL_PTX_SPACE_GLOBAL;
    mbar = 0;
  } else if (take(c, ".shared::cluster")) {
    if (!take(c, ".shared::cta") || !take(c, ".mbarrier::complete_tx::bytes"))
      bad(c, "expected .shared::cluster.shared::cta.mbarrier::complete_tx::bytes");
    in->space = GL_PTX_SPACE_SHARED_CLUSTER;
    mbar = 1;
  } else {
    bad(c, "missing state spaces");
  }
  all_used(c);
  /* the pairs atomics have */
  int logic = k >= 3 && k <= 5, fl = t >= 6, b = t == 4 || t == 5;
  if (logic ? !b : b) bad(c, "operation and type do not match");
  if (fl && k != 0 && !(t <= 7 && (k == 1 || k == 2))) bad(c, "operation and type do not match");
  if ((k == 6 || k == 7) && t != 0) bad(c, "operation and type do not match");
  parse_operands(c);
  unsigned want = mbar ? 4 : 3;
  if (hint) {
    if (c->nops != want + 1) bad(c, "missing cache-policy operand");
    c->nops--;
  }
  need_ops(c, want, want);
  enc_addr(c, 0, 0, in->space);
  enc_addr(c, 1, 1, GL_PTX_SPACE_SHARED);
  enc_val(c, 2, 2, 0);
  if (c->ops[2].kind == AO_IMM) (void)imm_in(c, 2, 16, UINT32_MAX, "size");
  if (mbar) {
    enc_addr(c, 3, 3, in->space);
  } else {
    src_slot(c, 3);
    in->src[3].kind = GL_PTX_O_NONE;
    in->src[3].reg = GL_PTX_NOREG;
  }
}

static void decode_cp(actx *c) {
  if (take(c, ".reduce")) {
    decode_cp_reduce(c);
    return;
  }
  if (!take(c, ".async")) bad(c, "missing .async");
  if (take(c, ".bulk")) {
    if (take(c, ".tensor")) {
      decode_cp_bulk_tensor(c, take(c, ".prefetch"));
      return;
    }
    if (take(c, ".commit_group")) {
      all_used(c);
      parse_operands(c);
      need_ops(c, 0, 0);
      as_nop(c);
      return;
    }
    if (take(c, ".wait_group")) {
      (void)take(c, ".read");
      all_used(c);
      parse_operands(c);
      need_ops(c, 1, 1);
      (void)imm_in(c, 0, 0, 255, "group count");
      as_nop(c);
      return;
    }
    if (take(c, ".prefetch")) {
      if (!take(c, ".L2") || !take(c, ".global")) bad(c, "expected .L2.global");
      int hint = take_cache_hints(c);
      all_used(c);
      parse_operands(c);
      if (hint && c->nops == 3) c->nops--;
      need_ops(c, 2, 2);
      enc_addr(c, 0, 0, GL_PTX_SPACE_GLOBAL);
      enc_val(c, 1, 1, 0);
      as_nop(c);
      return;
    }
    decode_cp_bulk_copy(c);
    return;
  }
  if (take(c, ".commit_group")) {
    all_used(c);
    parse_operands(c);
    need_ops(c, 0, 0);
    as_nop(c);
    return;
  }
  int wait_group = take(c, ".wait_group");
  if (wait_group || take(c, ".wait_all")) {
    all_used(c);
    parse_operands(c);
    need_ops(c, wait_group ? 1 : 0, wait_group ? 1 : 0);
    if (wait_group) (void)imm_in(c, 0, 0, 255, "group count");
    as_nop(c);
    return;
  }
  if (take(c, ".mbarrier")) {
    if (!take(c, ".arrive")) bad(c, "missing .arrive");
    int noinc = take(c, ".noinc");
    int space = take_shared_space(c, 0);
    if (!take(c, ".b64")) {
      all_used(c);
      bad(c, "missing .b64");
    }
    all_used(c);
    parse_operands(c);
    need_ops(c, 1, 1);
    c->in->op = GL_PTX_OP_MBARRIER;
    c->in->mode = noinc ? GL_PTX_MBAR_CP_ARRIVE_NOINC : GL_PTX_MBAR_CP_ARRIVE;
    c->in->space = (uint8_t)space;
    c->in->type = GL_PTX_T_B64;
    enc_addr(c, 0, 0, space);
    return;
  }
  int cg = take(c, ".cg");
  if (cg || take(c, ".ca")) {
    decode_cp_async_copy(c, cg);
    return;
  }
  bad(c, "unknown cp.async form");
}

/* ==== mbarrier ============================================================ */

static void decode_mbarrier(actx *c) {
  gl_ptx_insn *in = c->in;
  static const char *const ops[] = {".init", ".inval", ".arrive", ".arrive_drop",
                                    ".expect_tx", ".complete_tx", ".test_wait", ".try_wait",
                                    ".pending_count"};
  int k = take_one(c, ops, sizeof ops / sizeof ops[0]);
  if (k < 0) bad(c, "unknown mbarrier operation");
  in->op = GL_PTX_OP_MBARRIER;
  in->type = GL_PTX_T_B64;
  unsigned mode = 0;
  switch (k) {
  case 0: mode = GL_PTX_MBAR_INIT; break;
  case 1: mode = GL_PTX_MBAR_INVAL; break;
  case 2:
  case 3:
    mode = GL_PTX_MBAR_ARRIVE | (k == 3 ? GL_PTX_MBAR_DROP : 0);
    if (take(c, ".noComplete")) mode |= GL_PTX_MBAR_NOCOMPLETE;
    if (take(c, ".expect_tx")) mode |= GL_PTX_MBAR_WITH_TX;
    if ((mode & GL_PTX_MBAR_NOCOMPLETE) && (mode & GL_PTX_MBAR_WITH_TX))
      bad(c, ".noComplete with .expect_tx");
    break;
  case 4: mode = GL_PTX_MBAR_EXPECT_TX; break;
  case 5: mode = GL_PTX_MBAR_COMPLETE_TX; break;
  case 6:
  case 7:
    mode = k == 6 ? GL_PTX_MBAR_TEST_WAIT : GL_PTX_MBAR_TRY_WAIT;
    if (take(c, ".parity")) mode |= GL_PTX_MBAR_PARITY;
    break;
  default: mode = GL_PTX_MBAR_PENDING_COUNT; break;
  }
  in->mode = (uint8_t)mode;
  unsigned op = GL_PTX_MBAR_OP(mode);
  take_order(c);
  /* remote (.shared::cluster) forms: arrive without a state, expect_tx,
   * complete_tx */
  int cluster_ok = op == GL_PTX_MBAR_ARRIVE || op == GL_PTX_MBAR_EXPECT_TX ||
                   op == GL_PTX_MBAR_COMPLETE_TX;
  int space = op == GL_PTX_MBAR_PENDING_COUNT ? GL_PTX_SPACE_GENERIC
                                              : take_shared_space(c, cluster_ok);
  in->space = (uint8_t)space;
  if (!take(c, ".b64")) {
    all_used(c);
    bad(c, "missing .b64");
  }
  all_used(c);
  parse_operands(c);
  switch (op) {
  case GL_PTX_MBAR_INIT:
    need_ops(c, 2, 2);
    enc_addr(c, 0, 0, space);
    enc_val(c, 1, 1, 0);
    if (c->ops[1].kind == AO_IMM) (void)imm_in(c, 1, 1, (1 << 20) - 1, "count");
    break;
  case GL_PTX_MBAR_INVAL:
    need_ops(c, 1, 1);
    enc_addr(c, 0, 0, space);
    break;
  case GL_PTX_MBAR_ARRIVE: {
    unsigned want = (mode & GL_PTX_MBAR_WITH_TX) ? 3 : 2;
    need_ops(c, (mode & GL_PTX_MBAR_NOCOMPLETE) ? 3 : want, want + 1);
    enc_dst(c, 0, 0, 1);
    if (space == GL_PTX_SPACE_SHARED_CLUSTER && in->dst[0].reg != GL_PTX_NOREG)
      bad(c, "a .shared::cluster arrive returns no state (use '_')");
    enc_addr(c, 1, 0, space);
    unsigned next = 2;
    if (mode & GL_PTX_MBAR_WITH_TX) {
      enc_val(c, 2, 2, 0);
      next = 3;
    }
    if (c->nops > next) {
      enc_val(c, next, 1, 0);
      if (c->ops[next].kind == AO_IMM) (void)imm_in(c, next, 1, (1 << 20) - 1, "count");
    } else {
      enc_imm(c, 1, 1);
    }
    break;
  }
  case GL_PTX_MBAR_EXPECT_TX:
  case GL_PTX_MBAR_COMPLETE_TX:
    need_ops(c, 2, 2);
    enc_addr(c, 0, 0, space);
    enc_val(c, 1, 1, 0);
    break;
  case GL_PTX_MBAR_TEST_WAIT:
  case GL_PTX_MBAR_TRY_WAIT:
    need_ops(c, 3, op == GL_PTX_MBAR_TRY_WAIT ? 4 : 3);
    enc_dst(c, 0, 0, 0);
    if (c->ops[0].kind != AO_REG || !c->ops[0].is_pred) bad(c, "waitComplete must be a .pred");
    enc_addr(c, 1, 0, space);
    enc_val(c, 2, 1, 0);
    if (c->nops == 4) enc_val(c, 3, 2, 0); /* suspendTimeHint: checked, unused */
    in->nsrc = 2;
    break;
  default: /* pending_count */
    need_ops(c, 2, 2);
    enc_dst(c, 0, 0, 0);
    enc_val(c, 1, 0, 0);
    break;
  }
}

/* ==== Warp-level ========================================================== */

/* redux.sync.op{.abs}{.NaN}.type d, a, membermask */
static void decode_redux(actx *c) {
  gl_ptx_insn *in = c->in;
  static const char *const opw[] = {".add", ".min", ".max", ".and", ".or", ".xor"};
  static const uint8_t opv[] = {GL_PTX_ATOM_ADD, GL_PTX_ATOM_MIN, GL_PTX_ATOM_MAX,
                                GL_PTX_ATOM_AND, GL_PTX_ATOM_OR, GL_PTX_ATOM_XOR};
  static const char *const tyw[] = {".u32", ".s32", ".b32", ".f32"};
  static const uint8_t tyv[] = {GL_PTX_T_U32, GL_PTX_T_S32, GL_PTX_T_B32, GL_PTX_T_F32};
  if (!take(c, ".sync")) bad(c, "missing .sync");
  int k = take_one(c, opw, 6);
  if (k < 0) bad(c, "missing reduction operation");
  int t = take_one(c, tyw, 4);
  if (t < 0) bad(c, "missing or unsupported type");
  in->op = GL_PTX_OP_REDUX;
  in->mode = opv[k];
  in->type = tyv[t];
  if (take(c, ".abs")) in->flags |= GL_PTX_F_ABS;
  if (take(c, ".NaN")) in->flags |= GL_PTX_F_NAN;
  all_used(c);
  int logic = k >= 3, fl = in->type == GL_PTX_T_F32;
  if (fl ? (k != 1 && k != 2) : (logic != (in->type == GL_PTX_T_B32)))
    bad(c, "operation and type do not match");
  if (!fl && in->flags) bad(c, ".abs/.NaN need .f32");
  parse_operands(c);
  need_ops(c, 3, 3);
  enc_dst(c, 0, 0, 0);
  enc_val(c, 1, 0, 0);
  enc_val(c, 2, 1, 0);
}

/* elect.sync d|p, membermask */
static void decode_elect(actx *c) {
  gl_ptx_insn *in = c->in;
  if (!take(c, ".sync")) bad(c, "missing .sync");
  all_used(c);
  parse_operands(c);
  need_ops(c, 2, 2);
  aop *a = &c->ops[0];
  if (!a->has_pair || a->pair == GL_PTX_NOREG) bad(c, "expected d|p destinations");
  in->op = GL_PTX_OP_ELECT;
  in->type = GL_PTX_T_B32;
  uint32_t pred = a->pair;
  a->has_pair = 0;
  enc_dst(c, 0, 0, 1);
  in->dst[1].kind = GL_PTX_O_REG;
  in->dst[1].reg = pred;
  in->ndst = 2;
  enc_val(c, 1, 0, 0);
}

/* setmaxnreg.{inc,dec}.sync.aligned.u32 N */
static void decode_setmaxnreg(actx *c) {
  if (!take(c, ".inc") && !take(c, ".dec")) bad(c, "missing .inc/.dec");
  if (!take(c, ".sync") || !take(c, ".aligned") || !take(c, ".u32"))
    bad(c, "expected .sync.aligned.u32");
  all_used(c);
  parse_operands(c);
  need_ops(c, 1, 1);
  int64_t n = imm_in(c, 0, 24, 256, "register count");
  if (n % 8) bad(c, "register count must be a multiple of 8");
  as_nop(c);
}

/* createpolicy.fractional.L2::primary{.L2::secondary}.b64 d{, [a], size,
 * total}{, fraction}, createpolicy.cvt.L2.b64 d, a: a cache policy is
 * only ever a hint to the cache, so d gets 0 (mov.b64 d, 0). */
static void decode_createpolicy(actx *c) {
  gl_ptx_insn *in = c->in;
  int frac = take(c, ".fractional");
  if (!frac && !take(c, ".cvt")) bad(c, "missing .fractional/.cvt");
  if (!frac && !take(c, ".L2")) bad(c, "missing .L2");
  (void)take_cache_hints(c);
  if (!take(c, ".b64")) {
    all_used(c);
    bad(c, "missing .b64");
  }
  all_used(c);
  parse_operands(c);
  need_ops(c, frac ? 1 : 2, frac ? 4 : 2);
  for (unsigned i = 1; i < c->nops; i++)
    if (c->ops[i].kind == AO_SINK || c->ops[i].has_pair || c->ops[i].ncoord)
      bad(c, "bad operand");
  enc_dst(c, 0, 0, 0);
  in->op = GL_PTX_OP_MOV;
  in->type = GL_PTX_T_B64;
  in->nsrc = 0;
  enc_imm(c, 0, 0);
}

/* st.async{.weak}{.cluster}{.shared::cluster}{.mbarrier::complete_tx::bytes}
 *   {.v2|.v4}.type [a], b, [mbar]
 * red.async{.relaxed}{.cluster}{.shared::cluster}{.mbarrier::complete_tx::bytes}
 *   .op.type [a], b, [mbar] */
static void decode_st_red_async(actx *c, int red) {
  gl_ptx_insn *in = c->in;
  (void)take(c, ".async");
  (void)take(c, red ? ".relaxed" : ".weak");
  (void)take(c, ".cluster");
  (void)take(c, ".shared::cluster");
  (void)take(c, ".mbarrier::complete_tx::bytes");
  static const char *const tyw[] = {".b32", ".u32", ".s32", ".f32", ".b64", ".u64", ".s64",
                                    ".f64"};
  static const uint8_t tyv[] = {GL_PTX_T_B32, GL_PTX_T_U32, GL_PTX_T_S32, GL_PTX_T_F32,
                                GL_PTX_T_B64, GL_PTX_T_U64, GL_PTX_T_S64, GL_PTX_T_F64};
  in->op = red ? GL_PTX_OP_REDASYNC : GL_PTX_OP_STASYNC;
  in->space = GL_PTX_SPACE_SHARED_CLUSTER;
  in->vec = 1;
  int k = -1;
  if (red) {
    static const char *const opw[] = {".add", ".min", ".max", ".and", ".or", ".xor", ".inc",
                                      ".dec"};
    static const uint8_t opv[] = {GL_PTX_ATOM_ADD, GL_PTX_ATOM_MIN, GL_PTX_ATOM_MAX,
                                  GL_PTX_ATOM_AND, GL_PTX_ATOM_OR,  GL_PTX_ATOM_XOR,
                                  GL_PTX_ATOM_INC, GL_PTX_ATOM_DEC};
    k = take_one(c, opw, 8);
    if (k < 0) bad(c, "missing reduction operation");
    in->mode = opv[k];
  } else if (take(c, ".v2")) {
    in->vec = 2;
  } else if (take(c, ".v4")) {
    in->vec = 4;
  }
  int t = take_one(c, tyw, 8);
  if (t < 0) bad(c, "missing or unsupported type");
  in->type = tyv[t];
  all_used(c);
  if (in->vec == 4 && t >= 4) bad(c, ".v4 needs a 32-bit type");
  if (red) { /* the pairs red.async has */
    int ok = (k == 0 && (t == 1 || t == 2 || t == 5)) ||
             ((k == 1 || k == 2) && (t == 1 || t == 2)) || (k >= 3 && k <= 5 && t == 0) ||
             (k >= 6 && t == 1);
    if (!ok) bad(c, "operation and type do not match");
  }
  parse_operands(c);
  need_ops(c, 3, 3);
  enc_addr(c, 0, 0, GL_PTX_SPACE_SHARED_CLUSTER);
  const aop *v = &c->ops[1];
  if (in->vec > 1) {
    if (v->kind != AO_VEC || v->ncoord != in->vec) bad(c, "vector size does not match");
    gl_ptx_operand *o = src_slot(c, 1);
    memset(o, 0, sizeof *o);
    o->kind = GL_PTX_O_VEC;
    o->reg = GL_PTX_NOREG;
    o->vec_n = in->vec;
    for (unsigned i = 0; i < in->vec; i++) o->vec[i] = v->coord[i];
  } else {
    if (v->kind == AO_VEC) bad(c, "unexpected vector operand");
    enc_val(c, 1, 1, 0);
    if (c->in->src[1].kind == GL_PTX_O_IMM && gl_ptx_type_is_float((gl_ptx_type)in->type))
      bad(c, "floating-point immediates are not supported here");
  }
  enc_addr(c, 2, 2, GL_PTX_SPACE_SHARED_CLUSTER);
}

/* griddepcontrol.launch_dependents, griddepcontrol.wait */
static void decode_griddepcontrol(actx *c) {
  int ok = take(c, ".launch_dependents") || take(c, ".wait");
  all_used(c);
  if (!ok) bad(c, "missing .launch_dependents/.wait");
  parse_operands(c);
  need_ops(c, 0, 0);
  as_nop(c);
}

/* fence.proxy.{alias, async{.space}, tensormap::generic.sem.scope,
 * async::generic.sem.sync_restrict::...}, fence.mbarrier_init.release.cluster */
static void decode_fence(actx *c) {
  int tensormap_acquire = 0;
  if (take(c, ".mbarrier_init")) {
    if (!take(c, ".release") || !take(c, ".cluster")) bad(c, "expected .release.cluster");
  } else {
    if (!take(c, ".proxy")) bad(c, "expected .proxy");
    if (take(c, ".alias")) {
      /* nothing more */
    } else if (take(c, ".async")) {
      (void)(take(c, ".global") || take(c, ".shared::cta") || take(c, ".shared::cluster"));
    } else if (take(c, ".tensormap::generic")) {
      if (take(c, ".acquire"))
        tensormap_acquire = 1;
      else if (!take(c, ".release"))
        bad(c, "missing .release/.acquire");
      static const char *const sc[] = {".cta", ".cluster", ".gpu", ".sys"};
      if (take_one(c, sc, 4) < 0) bad(c, "missing scope");
    } else if (take(c, ".async::generic")) {
      if (!take(c, ".acquire") && !take(c, ".release")) bad(c, "missing .release/.acquire");
      if (!take(c, ".sync_restrict::shared::cluster") && !take(c, ".sync_restrict::shared::cta"))
        bad(c, "missing .sync_restrict");
      (void)take(c, ".cluster");
    } else {
      bad(c, "unknown proxy kind");
    }
  }
  all_used(c);
  parse_operands(c);
  if (tensormap_acquire) {
    need_ops(c, 2, 2);
    enc_addr(c, 0, 0, GL_PTX_SPACE_GENERIC);
    (void)imm_in(c, 1, 128, 128, "size");
  } else {
    need_ops(c, 0, 0);
  }
  as_nop(c);
}

/* ==== Entry =============================================================== */

int gl_ptx_parse_async_insn(gl_ptx_parser *p, gl_ptx_insn *in, const gl_ptx_token *mn) {
  static const char *const bases[] = {"cp",    "mbarrier",       "redux", "elect",
                                      "setmaxnreg", "griddepcontrol", "fence", "createpolicy",
                                      "st",    "red"};
  const char *dot = memchr(mn->s, '.', mn->n);
  uint32_t blen = (uint32_t)(dot ? (uint32_t)(dot - mn->s) : mn->n);
  int which = -1;
  for (unsigned k = 0; k < sizeof bases / sizeof bases[0]; k++)
    if (strlen(bases[k]) == blen && memcmp(bases[k], mn->s, blen) == 0) which = (int)k;
  if (which < 0) return 0;
  if (which == 6) { /* only the proxy and mbarrier_init fences are ours */
    static const char *const fw[] = {".proxy.", ".mbarrier_init."};
    int ours = 0;
    for (unsigned k = 0; k < 2; k++) {
      size_t n = strlen(fw[k]);
      if (mn->n - blen >= n && memcmp(mn->s + blen, fw[k], n) == 0) ours = 1;
    }
    if (!ours) return 0;
  }
  if (which >= 8) { /* st.async, red.async only */
    const char *q = mn->s + blen;
    if (mn->n - blen < 6 || memcmp(q, ".async", 6) != 0 || (mn->n - blen > 6 && q[6] != '.'))
      return 0;
  }
  actx ctx;
  memset(&ctx, 0, sizeof ctx);
  actx *c = &ctx;
  c->p = p;
  c->mn = *mn;
  c->in = in;
  in->vec = 1;
  split_mods(c, blen);
  switch (which) {
  case 0: decode_cp(c); break;
  case 1: decode_mbarrier(c); break;
  case 2: decode_redux(c); break;
  case 3: decode_elect(c); break;
  case 4: decode_setmaxnreg(c); break;
  case 5: decode_griddepcontrol(c); break;
  case 6: decode_fence(c); break;
  case 7: decode_createpolicy(c); break;
  default: decode_st_red_async(c, which == 9); break;
  }
  gl_ptx_push_insn(p, in);
  return 1;
}
