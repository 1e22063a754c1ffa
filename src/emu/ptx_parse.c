/*
 * ptx_parse.c - PTX module text to gl_ptx_module: the module's structure.
 *
 * This file reads everything except instruction statements (ptx_insn.c):
 * .version/.target/.address_size, variable declarations and their
 * initialisers, .entry/.func headers and bodies, labels, and the debug
 * directives it skips (.file, .loc, .section). It also owns the memory
 * layout that ptx_ir.h describes:
 *   - .global/.const variables: one data image, mapped at data_base;
 *   - static .shared variables: module-wide offsets (every function's own);
 *     .extern .shared arrays sit at GL_PTX_DYN_SHARED_OFFSET, patched in
 *     once every static one is known. Each entry's static_shared_bytes
 *     counts only the variables it can reach (its own body's and those of
 *     the functions it can call), as ptxas does, for the launch limits;
 *   - per-thread local memory: every function's depots, formal parameters,
 *     return value and call-site .param variables get disjoint offsets, so
 *     an entry's frame needs the module's total (recursion is refused);
 *   - kernel parameters: offsets in the launch's parameter buffer, packed
 *     in order at their alignment, as cuLaunchKernel does.
 * After the last function it resolves branch labels, patches dynamic-shared
 * offsets, checks every call's callee, refuses call-graph cycles, and sums
 * each entry's reachable static shared memory.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/emu.h"
#include "emu/ptx_internal.h"
#include "emu/ptx_parse.h"

/* ==== Errors, tokens, growth ============================================== */

void gl_ptx_fail(gl_ptx_parser *p, gpulease_status st, uint32_t line, const char *fmt, ...) {
  p->status = st;
  if (p->err && p->errlen > 0) {
    int n = snprintf(p->err, p->errlen, "line %u: ", (unsigned)line);
    if (n >= 0 && (size_t)n < p->errlen) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
      va_end(ap);
    }
  }
  longjmp(p->jb, 1);
}

void gl_ptx_grow(gl_ptx_parser *p, void **arr, uint32_t *cap, uint64_t need, size_t elem) {
  if (need <= *cap) return;
  uint64_t c = *cap ? *cap : 16;
  while (c < need) c *= 2;
  if (c > UINT32_MAX) c = UINT32_MAX;
  if (need > c) gl_ptx_fail(p, GPULEASE_NO_MEMORY, p->lx.line, "out of memory");
  void *n = realloc(*arr, (size_t)c * elem);
  if (!n) gl_ptx_fail(p, GPULEASE_NO_MEMORY, p->lx.line, "out of memory");
  *arr = n;
  *cap = (uint32_t)c;
}

static void check_tok(gl_ptx_parser *p, const gl_ptx_token *t) {
  if (t->kind == GL_PTX_TK_ERROR) gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t->line, "%s", t->s);
}

const gl_ptx_token *gl_ptx_peek(gl_ptx_parser *p, unsigned k) {
  const gl_ptx_token *t = gl_ptx_lex_peek(&p->lx, k);
  check_tok(p, t);
  return t;
}

void gl_ptx_next(gl_ptx_parser *p, gl_ptx_token *out) {
  gl_ptx_token t;
  gl_ptx_lex_next(&p->lx, &t);
  check_tok(p, &t);
  if (out) *out = t;
}

static int is_punct(const gl_ptx_token *t, char c) {
  return t->kind == GL_PTX_TK_PUNCT && t->c == c;
}

/* A short printable description of a token for messages. */
const char *gl_ptx_tok_desc(const gl_ptx_token *t, char *buf, size_t n) {
  switch (t->kind) {
  case GL_PTX_TK_EOF: return "end of input";
  case GL_PTX_TK_PUNCT: snprintf(buf, n, "'%c'", t->c); return buf;
  case GL_PTX_TK_STRING: return "a string";
  default: snprintf(buf, n, "'%.*s'", (int)(t->n > 60 ? 60 : t->n), t->s); return buf;
  }
}

void gl_ptx_expect(gl_ptx_parser *p, char c) {
  gl_ptx_token t;
  gl_ptx_next(p, &t);
  if (!is_punct(&t, c)) {
    char b[80];
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "expected '%c', found %s", c,
                gl_ptx_tok_desc(&t, b, sizeof b));
  }
}

int gl_ptx_accept(gl_ptx_parser *p, char c) {
  if (is_punct(gl_ptx_peek(p, 0), c)) {
    gl_ptx_next(p, NULL);
    return 1;
  }
  return 0;
}

gl_ptx_token gl_ptx_expect_word(gl_ptx_parser *p, const char *what) {
  gl_ptx_token t;
  gl_ptx_next(p, &t);
  if (t.kind != GL_PTX_TK_WORD) {
    char b[80];
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "expected %s, found %s", what,
                gl_ptx_tok_desc(&t, b, sizeof b));
  }
  return t;
}

uint64_t gl_ptx_expect_uint(gl_ptx_parser *p, const char *what, uint64_t max) {
  gl_ptx_token t;
  gl_ptx_next(p, &t);
  if (t.kind != GL_PTX_TK_INT) {
    char b[80];
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "expected %s, found %s", what,
                gl_ptx_tok_desc(&t, b, sizeof b));
  }
  if (t.u > max)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "%s %llu is too large (limit %llu)", what,
                (unsigned long long)t.u, (unsigned long long)max);
  return t.u;
}

/* Consumes the rest of a line-terminated directive (.loc, .file, ...). */
static void skip_line(gl_ptx_parser *p, uint32_t line) {
  for (;;) {
    const gl_ptx_token *t = gl_ptx_peek(p, 0);
    if (t->kind == GL_PTX_TK_EOF || t->line != line) return;
    gl_ptx_next(p, NULL);
  }
}

/* Consumes through the next ';' (.pragma "..."; and the like). */
static void skip_statement(gl_ptx_parser *p) {
  for (;;) {
    gl_ptx_token t;
    gl_ptx_next(p, &t);
    if (t.kind == GL_PTX_TK_EOF)
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "unexpected end of input (missing ';')");
    if (is_punct(&t, ';')) return;
  }
}

/* .section NAME { ... }: debug information, skipped with its braces. */
static void skip_section(gl_ptx_parser *p) {
  uint32_t line = gl_ptx_peek(p, 0)->line;
  skip_line(p, line);
  if (!is_punct(gl_ptx_peek(p, 0), '{')) return;
  uint64_t depth = 0;
  for (;;) {
    gl_ptx_token t;
    gl_ptx_next(p, &t);
    if (t.kind == GL_PTX_TK_EOF)
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "unterminated .section");
    if (is_punct(&t, '{')) depth++;
    if (is_punct(&t, '}') && --depth == 0) return;
  }
}

/* ==== Types and immediates ================================================= */

static const struct {
  const char *name;
  int type;
} type_names[] = {
    {".pred", GL_PTX_T_PRED},   {".b8", GL_PTX_T_B8},       {".b16", GL_PTX_T_B16},
    {".b32", GL_PTX_T_B32},     {".b64", GL_PTX_T_B64},     {".b128", GL_PTX_T_B128},
    {".u8", GL_PTX_T_U8},       {".u16", GL_PTX_T_U16},     {".u32", GL_PTX_T_U32},
    {".u64", GL_PTX_T_U64},     {".s8", GL_PTX_T_S8},       {".s16", GL_PTX_T_S16},
    {".s32", GL_PTX_T_S32},     {".s64", GL_PTX_T_S64},     {".f16", GL_PTX_T_F16},
    {".f16x2", GL_PTX_T_F16X2}, {".bf16", GL_PTX_T_BF16},   {".bf16x2", GL_PTX_T_BF16X2},
    {".f32", GL_PTX_T_F32},     {".f64", GL_PTX_T_F64},
    /* Valid PTX types the emulated device has no arithmetic for. */
    {".tf32", -1}, {".e4m3", -1}, {".e5m2", -1}, {".e4m3x2", -1}, {".e5m2x2", -1},
    {".e4m3x4", -1}, {".e5m2x4", -1}, {".e2m1x2", -1}, {".e2m3x2", -1}, {".e3m2x2", -1},
    {".e2m1x4", -1}, {".ue8m0x2", -1}, {".s4", -1}, {".u4", -1}, {".b4", -1}, {".b1", -1},
    {".s2f6x2", -1}, {".texref", -1}, {".samplerref", -1}, {".surfref", -1},
};

int gl_ptx_type_from(const char *s, uint32_t n) {
  for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++) {
    size_t l = strlen(type_names[i].name);
    if (l == n && memcmp(type_names[i].name, s, n) == 0) return type_names[i].type;
  }
  return GL_PTX_T_NONE;
}

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
static uint64_t f64_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}
static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static double bits_f64(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

uint64_t gl_ptx_literal_value(gl_ptx_parser *p, const gl_ptx_token *t, int negate, int type) {
  if (t->kind == GL_PTX_TK_INT) {
    uint64_t v = negate ? (uint64_t)0 - t->u : t->u;
    /* An integer written where a float is expected means its value. */
    if (type == GL_PTX_T_F32) return f32_bits((float)(int64_t)v);
    if (type == GL_PTX_T_F64) return f64_bits((double)(int64_t)v);
    return v;
  }
  uint64_t bits;
  unsigned width;
  switch (t->fkind) {
  case GL_PTX_FLT_F32BITS:
    if (type == GL_PTX_T_F64) {
      bits = f64_bits((double)bits_f32((uint32_t)t->u));
      width = 64;
    } else {
      bits = t->u;
      width = 32;
    }
    break;
  case GL_PTX_FLT_F64BITS:
    if (type == GL_PTX_T_F32) {
      bits = f32_bits((float)bits_f64(t->u));
      width = 32;
    } else {
      bits = t->u;
      width = 64;
    }
    break;
  default:
    if (type == GL_PTX_T_F32) {
      bits = f32_bits((float)t->d);
      width = 32;
    } else if (type == GL_PTX_T_F64) {
      bits = f64_bits(t->d);
      width = 64;
    } else {
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t->line,
                  "decimal float literal '%.*s' needs an .f32 or .f64 type",
                  (int)(t->n > 40 ? 40 : t->n), t->s);
    }
  }
  if (negate) bits ^= (uint64_t)1 << (width - 1);
  return bits;
}

/* ==== Modules ============================================================= */

void gl_ptx_module_free(gl_ptx_module *m) {
  if (!m) return;
  for (uint32_t i = 0; i < m->nfuncs; i++) free(m->funcs[i].params);
  free(m->funcs);
  free(m->insns);
  free(m->calls);
  free(m->data);
  free(m);
}

int gl_ptx_module_find(const gl_ptx_module *m, const char *name) {
  if (!m || !name) return -1;
  for (uint32_t i = 0; i < m->nfuncs; i++)
    if (strcmp(m->funcs[i].name, name) == 0) return (int)i;
  return -1;
}

void gl_ptx_push_insn(gl_ptx_parser *p, const gl_ptx_insn *in) {
  gl_ptx_module *m = p->m;
  if (m->ninsns >= GL_PTX_MAX_INSNS)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, in->line, "more than %u instructions",
                GL_PTX_MAX_INSNS);
  gl_ptx_grow(p, (void **)&m->insns, &p->insn_cap, (uint64_t)m->ninsns + 1, sizeof *in);
  m->insns[m->ninsns++] = *in;
}

/* ==== Symbols and registers =============================================== */

static void add_sym(gl_ptx_parser *p, gl_ptx_symtab *tab, const gl_ptx_sym *s, uint32_t line,
                    uint32_t scope_mark) {
  gl_ptx_sym *old = gl_ptx_symtab_find(tab, s->name, s->len);
  if (old && (uint32_t)(old - tab->v) >= scope_mark)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, "'%.*s' is already declared in this scope",
                (int)(s->len > 80 ? 80 : s->len), s->name);
  if (gl_ptx_symtab_add(tab, s) < 0) gl_ptx_fail(p, GPULEASE_NO_MEMORY, line, "out of memory");
}

void gl_ptx_declare(gl_ptx_parser *p, const gl_ptx_sym *s, uint32_t line) {
  add_sym(p, &p->syms, s, line, p->scope_mark[p->depth]);
}

uint32_t gl_ptx_find_reg(gl_ptx_parser *p, const char *s, uint32_t n) {
  const gl_ptx_sym *e = gl_ptx_symtab_find(&p->syms, s, n);
  if (e) return e->kind == GL_PTX_SYM_REG ? e->index : GL_PTX_NOREG;
  /* %r17: an element of the range %r<N>. */
  uint32_t k = n;
  while (k > 0 && s[k - 1] >= '0' && s[k - 1] <= '9') k--;
  if (k == 0 || k == n || n - k > 9) return GL_PTX_NOREG;
  if (s[k] == '0' && n - k > 1) return GL_PTX_NOREG;
  uint32_t num = 0;
  for (uint32_t i = k; i < n; i++) num = num * 10 + (uint32_t)(s[i] - '0');
  e = gl_ptx_symtab_find(&p->syms, s, k);
  if (!e || e->kind != GL_PTX_SYM_RANGE || num >= e->count) return GL_PTX_NOREG;
  return e->index + num;
}

uint32_t gl_ptx_alloc_regs(gl_ptx_parser *p, uint64_t count, uint32_t line) {
  gl_ptx_module *m = p->m;
  if (count > GL_PTX_MAX_REG_RANGE)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, "register declaration of %llu registers "
                "exceeds the limit of %u", (unsigned long long)count, GL_PTX_MAX_REG_RANGE);
  if ((uint64_t)m->nregs + count > GL_PTX_MAX_REGS)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, "module declares more than %u registers",
                GL_PTX_MAX_REGS);
  uint32_t base = m->nregs;
  m->nregs += (uint32_t)count;
  return base;
}

/* Reserves bytes of per-thread local memory, module-wide. */
uint64_t gl_ptx_alloc_local(gl_ptx_parser *p, uint64_t size, uint64_t align, uint32_t line) {
  uint64_t off = gl_ptx_align_up(p->local_cur, align);
  if (off + size > GL_PTX_MAX_LOCAL_BYTES)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line,
                "module needs more than %llu bytes of local memory per thread",
                (unsigned long long)GL_PTX_MAX_LOCAL_BYTES);
  p->local_cur = off + size;
  if (p->local_cur > p->local_hwm) p->local_hwm = p->local_cur;
  return off;
}

/* ==== Static shared memory ================================================ */

void gl_ptx_alloc_shared(gl_ptx_parser *p, gl_ptx_sym *s, uint64_t align, uint32_t line) {
  uint64_t off = gl_ptx_align_up(p->shared_cur, align);
  if (off + s->size > GL_PTX_MAX_SHARED_BYTES)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, "too much .shared memory");
  p->shared_cur = off + s->size;
  s->addr = off;
  gl_ptx_grow(p, (void **)&p->shvars, &p->shvar_cap, (uint64_t)p->nshvars + 1,
              sizeof *p->shvars);
  gl_ptx_shvar *v = &p->shvars[p->nshvars];
  v->size = s->size;
  v->align = align;
  v->last_user = 0;
  s->index = p->nshvars++;
  /* One declared in a body belongs to that function's kernels. */
  gl_ptx_use_var(p, s);
}

void gl_ptx_use_var(gl_ptx_parser *p, const gl_ptx_sym *s) {
  if (!p->in_body || s->kind != GL_PTX_SYM_VAR || s->space != GL_PTX_SPACE_SHARED ||
      s->dyn_shared)
    return;
  /* A body is parsed in one piece: a repeat of its latest user is a
   * repeat of the pair. */
  gl_ptx_shvar *v = &p->shvars[s->index];
  if (v->last_user == p->cur_func + 1) return;
  v->last_user = p->cur_func + 1;
  gl_ptx_grow(p, (void **)&p->shuses, &p->shuse_cap, (uint64_t)p->nshuses + 1,
              sizeof *p->shuses);
  p->shuses[p->nshuses].func = p->cur_func;
  p->shuses[p->nshuses].var = s->index;
  p->nshuses++;
}

/* ==== Scopes ============================================================== */

static void push_scope(gl_ptx_parser *p, uint32_t line) {
  if (p->depth >= GL_PTX_MAX_DEPTH)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, "blocks nested more than %d deep",
                GL_PTX_MAX_DEPTH);
  p->depth++;
  p->scope_mark[p->depth] = p->syms.n;
  p->scope_local[p->depth] = p->local_cur;
}

static void pop_scope(gl_ptx_parser *p) {
  gl_ptx_symtab_pop(&p->syms, p->scope_mark[p->depth]);
  /* A nested block's .param/.local slots are dead after it: the next
   * block of the same function reuses them. A function's own frame is
   * never given back (see end_function). */
  if (p->depth > 1) p->local_cur = p->scope_local[p->depth];
  p->depth--;
}

/* ==== Functions =========================================================== */

typedef struct param_decl {
  const char *name;
  uint32_t len, line;
  uint32_t size, align;
} param_decl;

typedef struct param_list {
  param_decl v[512];
  uint32_t n;
} param_list;

/* One `.param [attrs] .type name[N]` of a parameter list. */
static void parse_param(gl_ptx_parser *p, param_list *l) {
  gl_ptx_token kw;
  gl_ptx_next(p, &kw);
  if (gl_ptx_tok_is(&kw, ".reg"))
    gl_ptx_fail(p, GPULEASE_UNSUPPORTED, kw.line,
                "'.reg' parameters are not supported by the emulated device");
  if (!gl_ptx_tok_is(&kw, ".param")) {
    char b[80];
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, kw.line, "expected .param, found %s",
                gl_ptx_tok_desc(&kw, b, sizeof b));
  }
  gl_ptx_decl_attrs a = {0};
  gl_ptx_parse_decl_attrs(p, &a);
  gl_ptx_token name = gl_ptx_expect_word(p, "a parameter name");
  uint64_t dims[GL_PTX_MAX_DIMS];
  uint32_t ndims;
  int unsized;
  uint64_t count = gl_ptx_parse_dims(p, &unsized, dims, &ndims);
  if (unsized) gl_ptx_fail(p, GPULEASE_LOAD_FAILED, name.line, "parameter without a size");
  uint64_t esize = (uint64_t)gl_ptx_type_size((gl_ptx_type)a.type) * a.vec;
  uint64_t size = count * esize;
  if (size > GL_PTX_MAX_PARAM_BYTES)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, name.line, "parameter larger than %llu bytes",
                (unsigned long long)GL_PTX_MAX_PARAM_BYTES);
  if (l->n >= sizeof l->v / sizeof l->v[0])
    gl_ptx_fail(p, GPULEASE_UNSUPPORTED, name.line, "more than %zu parameters",
                sizeof l->v / sizeof l->v[0]);
  param_decl *d = &l->v[l->n++];
  d->name = name.s;
  d->len = name.n;
  d->line = name.line;
  d->size = (uint32_t)size;
  d->align = a.align ? a.align : (uint32_t)(esize ? esize : 1);
}

/* ( param, param, ... ) */
static void parse_param_list(gl_ptx_parser *p, param_list *l) {
  gl_ptx_expect(p, '(');
  if (gl_ptx_accept(p, ')')) return;
  for (;;) {
    parse_param(p, l);
    if (gl_ptx_accept(p, ')')) return;
    gl_ptx_expect(p, ',');
  }
}

/* Finds or creates the gl_ptx_func for `name`. */
static uint32_t get_func(gl_ptx_parser *p, const gl_ptx_token *name, int is_entry) {
  gl_ptx_module *m = p->m;
  gl_ptx_sym *s = gl_ptx_symtab_find(&p->syms, name->s, name->n);
  if (s && s->kind == GL_PTX_SYM_FUNC) {
    if (m->funcs[s->index].is_entry != is_entry)
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, name->line, "'%.*s' declared both as .entry and .func",
                  (int)(name->n > 80 ? 80 : name->n), name->s);
    return s->index;
  }
  if (name->n >= sizeof m->funcs[0].name && is_entry)
    gl_ptx_fail(p, GPULEASE_UNSUPPORTED, name->line, "kernel name longer than %zu characters",
                sizeof m->funcs[0].name - 1);
  if (m->nfuncs >= GL_PTX_MAX_FUNCS)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, name->line, "more than %u functions", GL_PTX_MAX_FUNCS);
  uint32_t cap = p->func_cap;
  gl_ptx_grow(p, (void **)&m->funcs, &p->func_cap, (uint64_t)m->nfuncs + 1, sizeof *m->funcs);
  if (p->func_cap != cap) {
    uint32_t fcap = cap;
    gl_ptx_grow(p, (void **)&p->fstate, &fcap, p->func_cap, sizeof *p->fstate);
  }
  uint32_t fi = m->nfuncs++;
  gl_ptx_func *f = &m->funcs[fi];
  memset(f, 0, sizeof *f);
  memset(&p->fstate[fi], 0, sizeof p->fstate[fi]);
  /* .func names only label call targets; a long one is kept truncated. */
  size_t n = name->n < sizeof f->name ? name->n : sizeof f->name - 1;
  memcpy(f->name, name->s, n);
  f->name[n] = '\0';
  f->is_entry = is_entry;
  f->ret_off = -1;
  p->fstate[fi].decl_line = name->line;
  gl_ptx_sym fs = {0};
  fs.name = name->s;
  fs.len = name->n;
  fs.kind = GL_PTX_SYM_FUNC;
  fs.index = fi;
  gl_ptx_declare(p, &fs, name->line);
  return fi;
}

/* Lays out (first declaration) or checks (later ones) the parameters. */
static void set_params(gl_ptx_parser *p, uint32_t fi, const param_list *params,
                       const param_list *ret, uint32_t line) {
  gl_ptx_func *f = &p->m->funcs[fi];
  if (p->fstate[fi].params_set) {
    int same = f->nparams == params->n && (ret->n ? f->ret_off >= 0 : f->ret_off < 0);
    for (uint32_t i = 0; same && i < params->n; i++)
      same = f->params[i].size == params->v[i].size;
    if (same && ret->n) same = f->ret_size == ret->v[0].size;
    if (!same)
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, "'%s' redeclared with different parameters",
                  f->name);
    return;
  }
  p->fstate[fi].params_set = 1;
  if (ret->n > 1)
    gl_ptx_fail(p, GPULEASE_UNSUPPORTED, line, "more than one return value");
  if (params->n) {
    f->params = calloc(params->n, sizeof *f->params);
    if (!f->params) gl_ptx_fail(p, GPULEASE_NO_MEMORY, line, "out of memory");
  }
  f->nparams = params->n;
  uint64_t off = 0;
  for (uint32_t i = 0; i < params->n; i++) {
    const param_decl *d = &params->v[i];
    f->params[i].size = d->size;
    f->params[i].align = d->align;
    if (f->is_entry) {
      off = gl_ptx_align_up(off, d->align);
      f->params[i].offset = (uint32_t)off;
      off += d->size;
      if (off > GL_PTX_MAX_PARAM_BYTES)
        gl_ptx_fail(p, GPULEASE_LOAD_FAILED, d->line, "kernel parameters larger than %llu bytes",
                    (unsigned long long)GL_PTX_MAX_PARAM_BYTES);
    } else {
      f->params[i].offset = (uint32_t)gl_ptx_alloc_local(p, d->size, d->align, d->line);
    }
  }
  f->param_bytes = (uint32_t)off;
  if (ret->n) {
    if (f->is_entry) gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, ".entry with a return value");
    f->ret_off = (int32_t)gl_ptx_alloc_local(p, ret->v[0].size, ret->v[0].align, ret->v[0].line);
    f->ret_size = ret->v[0].size;
  }
}

/* Performance directives between an .entry's parameters and its body. */
static void parse_perf_directives(gl_ptx_parser *p, uint32_t fi) {
  gl_ptx_func *f = &p->m->funcs[fi];
  for (;;) {
    const gl_ptx_token *t = gl_ptx_peek(p, 0);
    if (t->kind != GL_PTX_TK_WORD || t->s[0] != '.') return;
    gl_ptx_token w;
    gl_ptx_next(p, &w);
    uint32_t *dims = NULL;
    if (gl_ptx_tok_is(&w, ".maxntid")) {
      dims = f->maxntid;
    } else if (gl_ptx_tok_is(&w, ".reqntid")) {
      dims = f->reqntid;
    } else if (gl_ptx_tok_is(&w, ".reqnctapercluster")) {
      if (!f->is_entry)
        gl_ptx_fail(p, GPULEASE_LOAD_FAILED, w.line, ".reqnctapercluster on a .func");
      for (int i = 0; i < 3; i++) {
        f->reqnctapercluster[i] = (uint32_t)gl_ptx_expect_uint(p, "cluster dimension", 1024);
        if (f->reqnctapercluster[i] == 0)
          gl_ptx_fail(p, GPULEASE_LOAD_FAILED, w.line, "cluster dimension 0");
        if (!gl_ptx_accept(p, ',')) break;
      }
      for (int i = 0; i < 3; i++)
        if (f->reqnctapercluster[i] == 0) f->reqnctapercluster[i] = 1;
      continue;
    } else if (gl_ptx_tok_is(&w, ".maxclusterrank")) {
      f->maxclusterrank = (uint32_t)gl_ptx_expect_uint(p, "directive value", UINT32_MAX);
      continue;
    } else if (gl_ptx_tok_is(&w, ".explicitcluster")) {
      f->explicit_cluster = 1;
      continue;
    } else if (gl_ptx_tok_is(&w, ".minnctapersm") || gl_ptx_tok_is(&w, ".maxnreg") ||
               gl_ptx_tok_is(&w, ".maxnctapersm") || gl_ptx_tok_is(&w, ".abi_preserve") ||
               gl_ptx_tok_is(&w, ".abi_preserve_control")) {
      gl_ptx_expect_uint(p, "directive value", UINT32_MAX);
      continue;
    } else if (gl_ptx_tok_is(&w, ".noreturn")) {
      continue;
    } else if (gl_ptx_tok_is(&w, ".pragma")) {
      skip_statement(p);
      continue;
    } else {
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, w.line, "unexpected '%.*s' before a function body",
                  (int)(w.n > 60 ? 60 : w.n), w.s);
    }
    for (int i = 0; i < 3; i++) {
      dims[i] = (uint32_t)gl_ptx_expect_uint(p, "thread count", 1024);
      if (!gl_ptx_accept(p, ',')) break;
    }
    for (int i = 0; i < 3; i++)
      if (dims[i] == 0) dims[i] = 1;
  }
}

/* Binds the parameter names in the function's scope. */
static void bind_params(gl_ptx_parser *p, uint32_t fi, const param_list *params,
                        const param_list *ret) {
  const gl_ptx_func *f = &p->m->funcs[fi];
  for (uint32_t i = 0; i < params->n; i++) {
    gl_ptx_sym s = {0};
    s.name = params->v[i].name;
    s.len = params->v[i].len;
    s.kind = GL_PTX_SYM_VAR;
    s.space = f->is_entry ? GL_PTX_SPACE_PARAM : GL_PTX_SPACE_FPARAM;
    s.addr = f->params[i].offset;
    s.size = f->params[i].size;
    gl_ptx_declare(p, &s, params->v[i].line);
  }
  if (ret->n) {
    gl_ptx_sym s = {0};
    s.name = ret->v[0].name;
    s.len = ret->v[0].len;
    s.kind = GL_PTX_SYM_VAR;
    s.space = GL_PTX_SPACE_FPARAM;
    s.addr = (uint64_t)f->ret_off;
    s.size = f->ret_size;
    gl_ptx_declare(p, &s, ret->v[0].line);
  }
}

/* Resolves the body's branch targets and closes the function. */
static void end_function(gl_ptx_parser *p, uint32_t fi, uint32_t line) {
  gl_ptx_module *m = p->m;
  gl_ptx_func *f = &m->funcs[fi];
  /* Falling off the end returns (a label may point just past the last
   * instruction): make that explicit so no branch leaves the function. */
  int need_ret = 1;
  if (m->ninsns > f->first_insn) {
    const gl_ptx_insn *last = &m->insns[m->ninsns - 1];
    if ((last->op == GL_PTX_OP_RET || last->op == GL_PTX_OP_EXIT ||
         last->op == GL_PTX_OP_BRA || last->op == GL_PTX_OP_TRAP) &&
        last->guard == GL_PTX_NOREG)
      need_ret = 0;
  }
  for (uint32_t i = 0; i < p->labels.n && !need_ret; i++)
    if (p->labels.v[i].index == m->ninsns) need_ret = 1;
  if (need_ret) {
    gl_ptx_insn in;
    memset(&in, 0, sizeof in);
    in.op = GL_PTX_OP_RET;
    in.guard = GL_PTX_NOREG;
    in.line = line;
    gl_ptx_push_insn(p, &in);
  }
  for (uint32_t i = 0; i < p->nbra_fix; i++) {
    const gl_ptx_fixup *x = &p->bra_fix[i];
    const gl_ptx_sym *l = gl_ptx_symtab_find(&p->labels, x->name, x->len);
    if (!l)
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, x->line, "undefined label '%.*s'",
                  (int)(x->len > 80 ? 80 : x->len), x->name);
    m->insns[x->insn].src[0].imm = l->index;
  }
  p->nbra_fix = 0;
  gl_ptx_symtab_pop(&p->labels, 0);
  f->insn_count = m->ninsns - f->first_insn;
  p->in_body = 0;
  /* The function's frame stays reserved: others must not overlap it. */
  p->local_cur = p->local_hwm;
}

static void define_label(gl_ptx_parser *p, const gl_ptx_token *name) {
  gl_ptx_sym s = {0};
  s.name = name->s;
  s.len = name->n;
  s.kind = GL_PTX_SYM_LABEL;
  s.index = p->m->ninsns;
  add_sym(p, &p->labels, &s, name->line, 0);
}

/* Statements of a body, after its '{'. */
static void parse_body(gl_ptx_parser *p, uint32_t fi) {
  for (;;) {
    const gl_ptx_token *t = gl_ptx_peek(p, 0);
    if (t->kind == GL_PTX_TK_EOF)
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t->line, "unexpected end of input in '%s'",
                  p->m->funcs[fi].name);
    if (is_punct(t, '{')) {
      uint32_t line = t->line;
      gl_ptx_next(p, NULL);
      push_scope(p, line);
      continue;
    }
    if (is_punct(t, '}')) {
      uint32_t line = t->line;
      gl_ptx_next(p, NULL);
      pop_scope(p);
      if (p->depth == 0) {
        end_function(p, fi, line);
        return;
      }
      continue;
    }
    if (is_punct(t, ';')) {
      gl_ptx_next(p, NULL);
      continue;
    }
    if (t->kind == GL_PTX_TK_WORD && t->s[0] == '.') {
      gl_ptx_token w;
      gl_ptx_next(p, &w);
      int space = gl_ptx_space_word(&w);
      if (gl_ptx_tok_is(&w, ".reg")) {
        gl_ptx_parse_reg_decl(p);
      } else if (space >= 0) {
        gl_ptx_parse_var_decl(p, space, 0);
      } else if (gl_ptx_tok_is(&w, ".extern")) {
        gl_ptx_token sw = gl_ptx_expect_word(p, "a state space");
        int sp = gl_ptx_space_word(&sw);
        if (sp != GL_PTX_SPACE_SHARED)
          gl_ptx_fail(p, GPULEASE_LOAD_FAILED, sw.line, "unexpected .extern in a function");
        gl_ptx_parse_var_decl(p, sp, GL_PTX_LINK_EXTERN);
      } else if (gl_ptx_tok_is(&w, ".loc") || gl_ptx_tok_is(&w, ".file")) {
        skip_line(p, w.line);
      } else if (gl_ptx_tok_is(&w, ".pragma")) {
        skip_statement(p);
      } else {
        gl_ptx_fail(p, GPULEASE_LOAD_FAILED, w.line, "unknown directive '%.*s' in a function",
                    (int)(w.n > 60 ? 60 : w.n), w.s);
      }
      continue;
    }
    if (t->kind == GL_PTX_TK_WORD && is_punct(gl_ptx_peek(p, 1), ':')) {
      gl_ptx_token name;
      gl_ptx_next(p, &name);
      gl_ptx_next(p, NULL);
      const gl_ptx_token *d = gl_ptx_peek(p, 0);
      if (gl_ptx_tok_is(d, ".callprototype") || gl_ptx_tok_is(d, ".calltargets"))
        gl_ptx_fail(p, GPULEASE_UNSUPPORTED, d->line,
                    "indirect calls ('%.*s') are not supported by the emulated device",
                    (int)d->n, d->s);
      if (gl_ptx_tok_is(d, ".branchtargets"))
        gl_ptx_fail(p, GPULEASE_UNSUPPORTED, d->line,
                    "'.branchtargets' (brx.idx) is not supported by the emulated device");
      define_label(p, &name);
      continue;
    }
    if (t->kind == GL_PTX_TK_WORD || is_punct(t, '@')) {
      gl_ptx_parse_insn(p);
      continue;
    }
    char b[80];
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t->line, "unexpected %s in a function body",
                gl_ptx_tok_desc(t, b, sizeof b));
  }
}

/* .entry / .func, after the keyword. */
static void parse_function(gl_ptx_parser *p, int is_entry, int linkage) {
  param_list pl, rl;
  pl.n = rl.n = 0;
  if (!is_entry && is_punct(gl_ptx_peek(p, 0), '(')) parse_param_list(p, &rl);
  gl_ptx_token name = gl_ptx_expect_word(p, "a function name");
  if (is_punct(gl_ptx_peek(p, 0), '(')) parse_param_list(p, &pl);
  uint32_t fi = get_func(p, &name, is_entry);
  set_params(p, fi, &pl, &rl, name.line);
  parse_perf_directives(p, fi);
  if (gl_ptx_accept(p, ';')) {
    if (linkage & GL_PTX_LINK_EXTERN) p->fstate[fi].is_extern = 1;
    return;
  }
  const gl_ptx_token *t = gl_ptx_peek(p, 0);
  if (!is_punct(t, '{')) {
    char b[80];
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t->line, "expected '{' or ';', found %s",
                gl_ptx_tok_desc(t, b, sizeof b));
  }
  if (p->fstate[fi].defined)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, name.line, "'%.*s' is defined twice",
                (int)(name.n > 80 ? 80 : name.n), name.s);
  p->fstate[fi].defined = 1;
  p->fstate[fi].is_extern = 0;
  uint32_t line = t->line;
  gl_ptx_next(p, NULL);
  push_scope(p, line);
  bind_params(p, fi, &pl, &rl);
  p->in_body = 1;
  p->cur_func = fi;
  p->m->funcs[fi].first_insn = p->m->ninsns;
  parse_body(p, fi);
}

/* ==== Module-level directives ============================================= */

static void parse_version(gl_ptx_parser *p, uint32_t line) {
  gl_ptx_token t;
  gl_ptx_next(p, &t);
  int major = -1, minor = -1;
  if (t.kind == GL_PTX_TK_FLOAT && t.fkind == GL_PTX_FLT_DECIMAL && t.n <= 9) {
    uint32_t i = 0;
    major = minor = 0;
    while (i < t.n && t.s[i] >= '0' && t.s[i] <= '9') major = major * 10 + (t.s[i++] - '0');
    if (i == 0 || i >= t.n || t.s[i] != '.') {
      major = -1;
    } else {
      uint32_t j = ++i;
      while (i < t.n && t.s[i] >= '0' && t.s[i] <= '9') minor = minor * 10 + (t.s[i++] - '0');
      if (i != t.n || i == j) major = -1;
    }
  }
  if (major < 0) gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, "malformed .version");
  if (major > 9)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, "PTX ISA version %d.%d is newer than the "
                "emulated device accepts (up to 9.x)", major, minor);
  p->m->version_major = major;
  p->m->version_minor = minor;
  p->saw_version = 1;
}

static void parse_target(gl_ptx_parser *p, uint32_t line) {
  for (;;) {
    gl_ptx_token w = gl_ptx_expect_word(p, "a target");
    if (w.n >= 4 && memcmp(w.s, "sm_", 3) == 0) {
      uint32_t i = 3;
      int sm = 0;
      while (i < w.n && i < 8 && w.s[i] >= '0' && w.s[i] <= '9') sm = sm * 10 + (w.s[i++] - '0');
      if (i == 3 || (i < w.n && !(i + 1 == w.n && (w.s[i] == 'a' || w.s[i] == 'f'))))
        gl_ptx_fail(p, GPULEASE_LOAD_FAILED, w.line, "unknown target '%.*s'",
                    (int)(w.n > 40 ? 40 : w.n), w.s);
      if (sm > GL_EMU_CC_MAJOR * 10 + GL_EMU_CC_MINOR)
        gl_ptx_fail(p, GPULEASE_LOAD_FAILED, w.line, ".target %.*s is newer than the emulated "
                    "device (compute capability %d.%d)", (int)(w.n > 40 ? 40 : w.n), w.s,
                    GL_EMU_CC_MAJOR, GL_EMU_CC_MINOR);
      p->m->target_sm = sm;
    } else if (gl_ptx_tok_is(&w, "texmode_unified") || gl_ptx_tok_is(&w, "texmode_independent") ||
               gl_ptx_tok_is(&w, "debug") || gl_ptx_tok_is(&w, "map_f64_to_f32")) {
      /* accepted, no effect */
    } else {
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, w.line, "unknown target '%.*s'",
                  (int)(w.n > 40 ? 40 : w.n), w.s);
    }
    if (!gl_ptx_accept(p, ',')) break;
  }
  if (p->m->target_sm == 0) gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, ".target without sm_XX");
  p->saw_target = 1;
}

static void parse_module(gl_ptx_parser *p) {
  const gl_ptx_token *first = gl_ptx_peek(p, 0);
  if (!gl_ptx_tok_is(first, ".version"))
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, first->line, "not a PTX module (expected .version)");
  for (;;) {
    gl_ptx_token w;
    gl_ptx_next(p, &w);
    if (w.kind == GL_PTX_TK_EOF) break;
    if (is_punct(&w, ';')) continue;
    if (w.kind != GL_PTX_TK_WORD || w.s[0] != '.') {
      char b[80];
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, w.line, "expected a directive, found %s",
                  gl_ptx_tok_desc(&w, b, sizeof b));
    }
    if (gl_ptx_tok_is(&w, ".version")) {
      if (p->saw_version) gl_ptx_fail(p, GPULEASE_LOAD_FAILED, w.line, "second .version");
      parse_version(p, w.line);
      continue;
    }
    if (gl_ptx_tok_is(&w, ".target")) {
      if (p->saw_target) gl_ptx_fail(p, GPULEASE_LOAD_FAILED, w.line, "second .target");
      parse_target(p, w.line);
      continue;
    }
    if (gl_ptx_tok_is(&w, ".address_size")) {
      uint64_t n = gl_ptx_expect_uint(p, "address size", 64);
      if (n != 64)
        gl_ptx_fail(p, GPULEASE_UNSUPPORTED, w.line,
                    "'.address_size %llu' is not supported by the emulated device (64 only)",
                    (unsigned long long)n);
      continue;
    }
    if (gl_ptx_tok_is(&w, ".file") || gl_ptx_tok_is(&w, ".loc")) {
      skip_line(p, w.line);
      continue;
    }
    if (gl_ptx_tok_is(&w, ".section")) {
      skip_section(p);
      continue;
    }
    if (gl_ptx_tok_is(&w, ".pragma")) {
      skip_statement(p);
      continue;
    }
    if (!p->saw_target)
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, w.line, "'%.*s' before .target",
                  (int)(w.n > 60 ? 60 : w.n), w.s);
    int linkage = 0;
    for (;;) {
      if (gl_ptx_tok_is(&w, ".extern"))
        linkage |= GL_PTX_LINK_EXTERN;
      else if (gl_ptx_tok_is(&w, ".visible"))
        linkage |= GL_PTX_LINK_VISIBLE;
      else if (gl_ptx_tok_is(&w, ".weak"))
        linkage |= GL_PTX_LINK_WEAK;
      else if (gl_ptx_tok_is(&w, ".common"))
        linkage |= GL_PTX_LINK_COMMON;
      else
        break;
      w = gl_ptx_expect_word(p, "a declaration");
    }
    int space = gl_ptx_space_word(&w);
    if (gl_ptx_tok_is(&w, ".entry")) {
      parse_function(p, 1, linkage);
    } else if (gl_ptx_tok_is(&w, ".func")) {
      parse_function(p, 0, linkage);
    } else if (space >= 0 && space != GL_PTX_SPACE_PARAM) {
      gl_ptx_parse_var_decl(p, space, linkage);
    } else if (gl_ptx_tok_is(&w, ".alias") || gl_ptx_tok_is(&w, ".tex") ||
               gl_ptx_tok_is(&w, ".surf") || gl_ptx_tok_is(&w, ".sampler")) {
      gl_ptx_unsupported_word(p, &w);
    } else {
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, w.line, "unknown directive '%.*s'",
                  (int)(w.n > 60 ? 60 : w.n), w.s);
    }
  }
  if (!p->saw_target)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, p->lx.line, "not a PTX module (no .target)");
}

/* ==== Final checks ======================================================== */

/* Every call's callee must have a body, and the call graph no cycle. */
static void check_calls(gl_ptx_parser *p) {
  gl_ptx_module *m = p->m;
  for (uint32_t i = 0; i < p->nedges; i++) {
    const gl_ptx_edge *e = &p->edges[i];
    if (p->fstate[e->callee].defined) continue;
    if (p->fstate[e->callee].is_extern &&
        (m->funcs[e->callee].builtin = gl_ptx_builtin_kind(&m->funcs[e->callee])))
      continue;
    if (p->fstate[e->callee].is_extern)
      gl_ptx_fail(p, GPULEASE_UNSUPPORTED, e->line, "call to external function '%s' "
                  "(not defined in this module) is not supported by the emulated device",
                  m->funcs[e->callee].name);
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, e->line, "call to '%s', which is declared but never "
                "defined", m->funcs[e->callee].name);
  }
  if (p->nedges == 0) return;
  /* Adjacency in CSR form, then an iterative depth-first search. */
  uint32_t n = m->nfuncs;
  uint32_t *start = calloc((size_t)n + 1, sizeof *start);
  uint32_t *adj = malloc((size_t)p->nedges * sizeof *adj);
  uint32_t *stack = malloc(((size_t)n + 1) * sizeof *stack);
  uint32_t *pos = malloc(((size_t)n + 1) * sizeof *pos);
  uint8_t *color = calloc((size_t)n + 1, 1);
  if (!start || !adj || !stack || !pos || !color) {
    free(start), free(adj), free(stack), free(pos), free(color);
    gl_ptx_fail(p, GPULEASE_NO_MEMORY, 0, "out of memory");
  }
  for (uint32_t i = 0; i < p->nedges; i++) start[p->edges[i].caller + 1]++;
  for (uint32_t f = 0; f < n; f++) start[f + 1] += start[f];
  for (uint32_t f = 0; f <= n; f++) pos[f] = start[f];
  for (uint32_t i = 0; i < p->nedges; i++) adj[pos[p->edges[i].caller]++] = i;
  int64_t bad = -1;
  for (uint32_t root = 0; root < n && bad < 0; root++) {
    if (color[root]) continue;
    uint32_t sp = 0;
    stack[sp++] = root;
    color[root] = 1;
    pos[root] = start[root];
    while (sp > 0 && bad < 0) {
      uint32_t f = stack[sp - 1];
      if (pos[f] == start[f + 1]) {
        color[f] = 2;
        sp--;
        continue;
      }
      uint32_t ei = adj[pos[f]++];
      uint32_t g = p->edges[ei].callee;
      if (color[g] == 1) {
        bad = ei;
      } else if (color[g] == 0) {
        color[g] = 1;
        pos[g] = start[g];
        stack[sp++] = g;
      }
    }
  }
  free(start), free(adj), free(stack), free(pos), free(color);
  if (bad >= 0) {
    const gl_ptx_edge *e = &p->edges[bad];
    gl_ptx_fail(p, GPULEASE_UNSUPPORTED, e->line, "recursive call from '%s' to '%s' is not "
                "supported by the emulated device", m->funcs[e->caller].name,
                m->funcs[e->callee].name);
  }
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Each entry's static_shared_bytes, as ptxas counts a kernel's: the static
 * .shared variables that it or any function it can call (transitively)
 * references, laid out in declaration order at their alignment. Addresses
 * stay module-wide; this figure is what the launch limits check. Runs
 * after check_calls: every callee is defined and the graph has no cycle. */
static void set_static_shared(gl_ptx_parser *p) {
  gl_ptx_module *m = p->m;
  uint32_t n = m->nfuncs;
  if (p->nshuses == 0) return;
  /* Callees and used variables of each function, in CSR form. */
  uint32_t *cstart = calloc((size_t)n + 1, sizeof *cstart);
  uint32_t *ustart = calloc((size_t)n + 1, sizeof *ustart);
  uint32_t *callee = malloc(((size_t)p->nedges + 1) * sizeof *callee);
  uint32_t *var = malloc((size_t)p->nshuses * sizeof *var);
  uint32_t *fseen = calloc((size_t)n + 1, sizeof *fseen);
  uint32_t *vseen = calloc((size_t)p->nshvars + 1, sizeof *vseen);
  uint32_t *stack = malloc(((size_t)n + 1) * sizeof *stack);
  uint32_t *found = malloc((size_t)p->nshvars * sizeof *found);
  if (!cstart || !ustart || !callee || !var || !fseen || !vseen || !stack || !found) {
    free(cstart), free(ustart), free(callee), free(var);
    free(fseen), free(vseen), free(stack), free(found);
    gl_ptx_fail(p, GPULEASE_NO_MEMORY, 0, "out of memory");
  }
  for (uint32_t i = 0; i < p->nedges; i++) cstart[p->edges[i].caller + 1]++;
  for (uint32_t i = 0; i < p->nshuses; i++) ustart[p->shuses[i].func + 1]++;
  for (uint32_t f = 0; f < n; f++) {
    cstart[f + 1] += cstart[f];
    ustart[f + 1] += ustart[f];
  }
  /* Fill with stack[] as the insertion cursor, then again for ustart. */
  memcpy(stack, cstart, (size_t)n * sizeof *stack);
  for (uint32_t i = 0; i < p->nedges; i++)
    callee[stack[p->edges[i].caller]++] = p->edges[i].callee;
  memcpy(stack, ustart, (size_t)n * sizeof *stack);
  for (uint32_t i = 0; i < p->nshuses; i++)
    var[stack[p->shuses[i].func]++] = p->shuses[i].var;
  /* Per entry a search over what it can call; marks are the entry + 1. */
  for (uint32_t e = 0; e < n; e++) {
    if (!m->funcs[e].is_entry) continue;
    uint32_t mark = e + 1, sp = 0, nfound = 0;
    stack[sp++] = e;
    fseen[e] = mark;
    while (sp > 0) {
      uint32_t f = stack[--sp];
      for (uint32_t i = ustart[f]; i < ustart[f + 1]; i++) {
        if (vseen[var[i]] == mark) continue;
        vseen[var[i]] = mark;
        found[nfound++] = var[i];
      }
      for (uint32_t i = cstart[f]; i < cstart[f + 1]; i++) {
        if (fseen[callee[i]] == mark) continue;
        fseen[callee[i]] = mark;
        stack[sp++] = callee[i];
      }
    }
    /* Declaration order, as the module-wide layout: no larger than it.
     * Sorting what was found, or for a large share of the module's
     * variables, one pass over their marks. */
    if ((uint64_t)nfound * 32 < p->nshvars) {
      qsort(found, nfound, sizeof *found, cmp_u32);
    } else {
      nfound = 0;
      for (uint32_t v = 0; v < p->nshvars; v++)
        if (vseen[v] == mark) found[nfound++] = v;
    }
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < nfound; i++) {
      const gl_ptx_shvar *v = &p->shvars[found[i]];
      bytes = gl_ptx_align_up(bytes, v->align) + v->size;
    }
    m->funcs[e].static_shared_bytes = (uint32_t)bytes;
  }
  free(cstart), free(ustart), free(callee), free(var);
  free(fseen), free(vseen), free(stack), free(found);
}

static void finish_module(gl_ptx_parser *p) {
  gl_ptx_module *m = p->m;
  for (uint32_t i = 0; i < m->nfuncs; i++)
    if (m->funcs[i].is_entry && !p->fstate[i].defined)
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, p->fstate[i].decl_line, ".entry '%s' has no body",
                  m->funcs[i].name);
  check_calls(p);
  m->shared_bytes = (uint32_t)p->shared_cur;
  uint64_t dyn = GL_PTX_DYN_SHARED_OFFSET(m);
  for (uint32_t i = 0; i < p->ndyn_fix; i++) {
    gl_ptx_insn *in = &m->insns[p->dyn_fix[i].insn];
    uint8_t slot = p->dyn_fix[i].slot;
    gl_ptx_operand *o = slot < 2 ? &in->dst[slot] : &in->src[slot - 2];
    o->imm += (int64_t)dyn;
  }
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    if (!m->funcs[i].is_entry) continue;
    m->funcs[i].local_bytes = (uint32_t)p->local_hwm;
  }
  set_static_shared(p);
  m->data_bytes = p->data_cur;
  m->data = calloc(1, (size_t)(p->data_cur ? p->data_cur : 1));
  if (!m->data) gl_ptx_fail(p, GPULEASE_NO_MEMORY, 0, "out of memory");
  for (uint32_t i = 0; i < p->ninits; i++) {
    const gl_ptx_init_rec *r = &p->inits[i];
    memcpy(m->data + r->data_off, p->init_buf + r->buf_off, (size_t)r->len);
  }
}

/* ==== Entry point ========================================================= */

static void parser_free(gl_ptx_parser *p) {
  gl_ptx_symtab_free(&p->syms);
  gl_ptx_symtab_free(&p->labels);
  free(p->fstate);
  free(p->bra_fix);
  free(p->dyn_fix);
  free(p->edges);
  free(p->shvars);
  free(p->shuses);
  free(p->inits);
  free(p->init_buf);
}

static int run_parse(gl_ptx_parser *p) {
  if (setjmp(p->jb) != 0) return -1;
  parse_module(p);
  finish_module(p);
  return 0;
}

gpulease_status gl_ptx_parse(const char *text, size_t len, uint64_t data_base,
                             gl_ptx_module **out, char *err, size_t errlen) {
  if (out) *out = NULL;
  if (err && errlen) err[0] = '\0';
  if (!out || (!text && len)) {
    if (err && errlen) snprintf(err, errlen, "line 0: invalid arguments");
    return GPULEASE_INVALID_ARGUMENT;
  }
  if (len > GL_PTX_MAX_TEXT_BYTES) {
    if (err && errlen) snprintf(err, errlen, "line 0: PTX text larger than %llu bytes",
                                (unsigned long long)GL_PTX_MAX_TEXT_BYTES);
    return GPULEASE_LOAD_FAILED;
  }
  gl_ptx_parser *p = calloc(1, sizeof *p);
  gl_ptx_module *m = calloc(1, sizeof *m);
  if (!p || !m) {
    free(p);
    free(m);
    if (err && errlen) snprintf(err, errlen, "line 0: out of memory");
    return GPULEASE_NO_MEMORY;
  }
  gl_ptx_lex_init(&p->lx, text ? text : "", len);
  p->m = m;
  p->data_base = data_base;
  p->err = err;
  p->errlen = errlen;
  p->status = GPULEASE_OK;
  m->nregs = 1; /* register 0: the carry flag */
  int rc = run_parse(p);
  gpulease_status st = p->status;
  parser_free(p);
  free(p);
  if (rc < 0) {
    gl_ptx_module_free(m);
    return st == GPULEASE_OK ? GPULEASE_LOAD_FAILED : st;
  }
  *out = m;
  return GPULEASE_OK;
}
