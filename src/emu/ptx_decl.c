/*
 * ptx_decl.c - PTX declarations: .reg registers, variables of every state
 * space with their memory layout, and .global/.const initialisers.
 *
 * Registers get module-wide indices (a %r<N> range is one table entry, so
 * its size costs nothing until used). Variables get their offset in their
 * space as ptx_parse.c describes: the data image for .global/.const (their
 * initial bytes are collected in gl_ptx_parser.init_buf and copied into the
 * image at the end), module-wide offsets for .shared, the dynamic-shared
 * marker for .extern .shared x[], and per-thread local offsets for .local
 * and call-site .param variables.
 */
#include <stdlib.h>
#include <string.h>

#include "emu/ptx_internal.h"

static int is_punct(const gl_ptx_token *t, char c) {
  return t->kind == GL_PTX_TK_PUNCT && t->c == c;
}

/* ==== Declarations ======================================================== */

int gl_ptx_space_word(const gl_ptx_token *t) {
  if (gl_ptx_tok_is(t, ".global")) return GL_PTX_SPACE_GLOBAL;
  if (gl_ptx_tok_is(t, ".const")) return GL_PTX_SPACE_CONST;
  if (gl_ptx_tok_is(t, ".shared") || gl_ptx_tok_is(t, ".shared::cta")) return GL_PTX_SPACE_SHARED;
  if (gl_ptx_tok_is(t, ".local")) return GL_PTX_SPACE_LOCAL;
  if (gl_ptx_tok_is(t, ".param")) return GL_PTX_SPACE_PARAM;
  return -1;
}

void gl_ptx_unsupported_word(gl_ptx_parser *p, const gl_ptx_token *t) {
  gl_ptx_fail(p, GPULEASE_UNSUPPORTED, t->line, "'%.*s' is not supported by the emulated device",
              (int)(t->n > 80 ? 80 : t->n), t->s);
}

/* Reads the attribute words of a declaration (.align N, .vN, .type, .ptr
 * with its space and alignment) up to the first name. */
void gl_ptx_parse_decl_attrs(gl_ptx_parser *p, gl_ptx_decl_attrs *a) {
  a->type = GL_PTX_T_NONE;
  a->align = 0;
  a->vec = 1;
  for (;;) {
    const gl_ptx_token *t = gl_ptx_peek(p, 0);
    if (t->kind != GL_PTX_TK_WORD || t->s[0] != '.') break;
    gl_ptx_token w;
    gl_ptx_next(p, &w);
    int ty = gl_ptx_type_from(w.s, w.n);
    if (ty < 0) gl_ptx_unsupported_word(p, &w);
    if (ty > 0) {
      if (a->type != GL_PTX_T_NONE)
        gl_ptx_fail(p, GPULEASE_LOAD_FAILED, w.line, "declaration has two types");
      a->type = ty;
    } else if (gl_ptx_tok_is(&w, ".align")) {
      uint64_t al = gl_ptx_expect_uint(p, "alignment", 1u << 16);
      if (al == 0 || (al & (al - 1)) != 0)
        gl_ptx_fail(p, GPULEASE_LOAD_FAILED, w.line, "alignment %llu is not a power of two",
                    (unsigned long long)al);
      a->align = (uint32_t)al;
    } else if (gl_ptx_tok_is(&w, ".v2")) {
      a->vec = 2;
    } else if (gl_ptx_tok_is(&w, ".v4")) {
      a->vec = 4;
    } else if (gl_ptx_tok_is(&w, ".ptr")) {
      /* .ptr [.space] [.align N]: a hint about what a pointer parameter
       * points to; it changes nothing in the layout. */
      const gl_ptx_token *s = gl_ptx_peek(p, 0);
      if (gl_ptx_space_word(s) >= 0) gl_ptx_next(p, NULL);
      if (gl_ptx_tok_is(gl_ptx_peek(p, 0), ".align")) {
        gl_ptx_next(p, NULL);
        uint64_t al = gl_ptx_expect_uint(p, "alignment", 1u << 16);
        if (al == 0 || (al & (al - 1)) != 0)
          gl_ptx_fail(p, GPULEASE_LOAD_FAILED, w.line, "alignment is not a power of two");
      }
    } else if (gl_ptx_tok_is(&w, ".attribute") || gl_ptx_tok_is(&w, ".v8") ||
               gl_ptx_tok_is(&w, ".shared::cluster")) {
      gl_ptx_unsupported_word(p, &w);
    } else {
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, w.line, "unexpected '%.*s' in a declaration",
                  (int)(w.n > 60 ? 60 : w.n), w.s);
    }
  }
  if (a->type == GL_PTX_T_NONE) {
    const gl_ptx_token *t = gl_ptx_peek(p, 0);
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t->line, "declaration without a type");
  }
}

/* Array dimensions after a name: [N][M]..., the first may be empty ([]).
 * Returns the element count (product), *unsized when the first is []. */
uint64_t gl_ptx_parse_dims(gl_ptx_parser *p, int *unsized, uint64_t *dims, uint32_t *ndims) {
  uint64_t count = 1;
  *unsized = 0;
  *ndims = 0;
  while (is_punct(gl_ptx_peek(p, 0), '[')) {
    gl_ptx_token t;
    gl_ptx_next(p, &t);
    if (*ndims >= GL_PTX_MAX_DIMS)
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "too many array dimensions");
    if (is_punct(gl_ptx_peek(p, 0), ']') && *ndims == 0) {
      gl_ptx_next(p, NULL);
      *unsized = 1;
      dims[(*ndims)++] = 0;
      continue;
    }
    uint64_t n = gl_ptx_expect_uint(p, "array size", GL_PTX_MAX_VAR_BYTES);
    gl_ptx_expect(p, ']');
    dims[(*ndims)++] = n;
    count *= n;
    if (count > GL_PTX_MAX_VAR_BYTES)
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "array larger than %llu bytes",
                  (unsigned long long)GL_PTX_MAX_VAR_BYTES);
  }
  return count;
}

/* ---- Initialisers -------------------------------------------------------- */

typedef struct init_ctx {
  uint64_t base;    /* offset of element 0 in init_buf */
  uint32_t esize;   /* bytes per scalar element */
  int type;         /* element type */
  uint64_t limit;   /* scalar elements allowed (UINT64_MAX: unsized) */
  uint64_t cursor;  /* next scalar element */
  uint64_t written; /* elements written (high-water mark) */
  const uint64_t *stride; /* stride[d]: scalars spanned by a brace at depth d */
  uint32_t nstride;
} init_ctx;

static void init_reserve(gl_ptx_parser *p, uint64_t bytes, uint32_t line) {
  if (bytes > GL_PTX_MAX_DATA_BYTES * 2)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, "initialisers too large");
  if (bytes <= p->init_buf_cap) return;
  uint64_t c = p->init_buf_cap ? p->init_buf_cap : 256;
  while (c < bytes) c *= 2;
  uint8_t *n = realloc(p->init_buf, (size_t)c);
  if (!n) gl_ptx_fail(p, GPULEASE_NO_MEMORY, line, "out of memory");
  memset(n + p->init_buf_cap, 0, (size_t)(c - p->init_buf_cap));
  p->init_buf = n;
  p->init_buf_cap = c;
}

static void init_store(gl_ptx_parser *p, init_ctx *c, uint64_t v, uint32_t line) {
  if (c->cursor >= c->limit)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, "too many initialisers");
  uint64_t off = c->base + c->cursor * c->esize;
  init_reserve(p, off + c->esize, line);
  for (uint32_t i = 0; i < c->esize; i++) p->init_buf[off + i] = (uint8_t)(v >> (8 * i));
  c->cursor++;
  if (c->cursor > c->written) c->written = c->cursor;
}

/* One scalar: [-]literal, sym, generic(sym), each address with +/-N. */
static void parse_init_scalar(gl_ptx_parser *p, init_ctx *c) {
  gl_ptx_token t;
  gl_ptx_next(p, &t);
  int neg = 0;
  if (is_punct(&t, '-')) {
    neg = 1;
    gl_ptx_next(p, &t);
  }
  if (t.kind == GL_PTX_TK_INT || t.kind == GL_PTX_TK_FLOAT) {
    init_store(p, c, gl_ptx_literal_value(p, &t, neg, c->type), t.line);
    return;
  }
  if (t.kind != GL_PTX_TK_WORD || neg) {
    char b[80];
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "bad initialiser %s", gl_ptx_tok_desc(&t, b, sizeof b));
  }
  int generic = 0;
  if (gl_ptx_tok_is(&t, "generic")) {
    generic = 1;
    gl_ptx_expect(p, '(');
    t = gl_ptx_expect_word(p, "a variable name");
  } else if (gl_ptx_tok_is(&t, "mask")) {
    gl_ptx_fail(p, GPULEASE_UNSUPPORTED, t.line,
                "'mask()' initialisers are not supported by the emulated device");
  }
  const gl_ptx_sym *s = gl_ptx_symtab_find(&p->syms, t.s, t.n);
  if (!s)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "undefined name '%.*s' in an initialiser",
                (int)(t.n > 80 ? 80 : t.n), t.s);
  if (s->kind == GL_PTX_SYM_FUNC)
    gl_ptx_fail(p, GPULEASE_UNSUPPORTED, t.line, "function addresses ('%.*s') are not "
                "supported by the emulated device", (int)(t.n > 80 ? 80 : t.n), t.s);
  if (s->kind != GL_PTX_SYM_VAR ||
      (s->space != GL_PTX_SPACE_GLOBAL && s->space != GL_PTX_SPACE_CONST))
    gl_ptx_fail(p, GPULEASE_UNSUPPORTED, t.line, "initialiser '%.*s': only addresses of "
                ".global/.const variables are supported", (int)(t.n > 80 ? 80 : t.n), t.s);
  if (generic) gl_ptx_expect(p, ')');
  uint64_t v = p->data_base + s->addr;
  const gl_ptx_token *op = gl_ptx_peek(p, 0);
  if (is_punct(op, '+') || is_punct(op, '-')) {
    int minus = op->c == '-';
    gl_ptx_next(p, NULL);
    uint64_t d = gl_ptx_expect_uint(p, "offset", UINT32_MAX);
    v = minus ? v - d : v + d;
  }
  if (c->esize != 8)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t.line, "address initialiser needs a 64-bit element");
  init_store(p, c, v, t.line);
}

static void parse_init_list(gl_ptx_parser *p, init_ctx *c, uint32_t depth) {
  uint32_t line = gl_ptx_peek(p, 0)->line;
  if (depth > c->nstride + 1 || depth > GL_PTX_MAX_DIMS + 2)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, "initialiser braces nested too deep");
  uint64_t start = c->cursor;
  if (!is_punct(gl_ptx_peek(p, 0), '}')) {
    for (;;) {
      if (gl_ptx_accept(p, '{'))
        parse_init_list(p, c, depth + 1);
      else
        parse_init_scalar(p, c);
      if (!gl_ptx_accept(p, ',')) break;
    }
  }
  gl_ptx_expect(p, '}');
  /* An inner brace stands for one whole sub-array: skip to its end. */
  if (depth >= 2) {
    uint64_t span = c->stride[depth - 2];
    if (c->cursor - start > span)
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, "too many initialisers in a sub-array");
    c->cursor = start + span;
  }
}

/* ---- Variables ------------------------------------------------------------ */

/* One declared name of `.space ... name[dims] = init`. */
static void declare_var(gl_ptx_parser *p, const gl_ptx_decl_attrs *a, const gl_ptx_token *name) {
  uint64_t dims[GL_PTX_MAX_DIMS];
  uint32_t ndims;
  int unsized;
  uint32_t line = name->line;
  uint64_t count = gl_ptx_parse_dims(p, &unsized, dims, &ndims);
  uint32_t tsize = gl_ptx_type_size((gl_ptx_type)a->type);
  uint64_t esize = (uint64_t)tsize * a->vec;
  uint64_t align = a->align ? a->align : esize;
  if (align == 0) align = 1;
  gl_ptx_sym s = {0};
  s.name = name->s;
  s.len = name->n;
  s.kind = GL_PTX_SYM_VAR;
  s.space = (uint8_t)a->space;
  s.type = (uint8_t)a->type;

  if (!unsized && count * esize > GL_PTX_MAX_VAR_BYTES)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, "variable larger than %llu bytes",
                (unsigned long long)GL_PTX_MAX_VAR_BYTES);
  int has_init = 0;
  init_ctx c = {0};
  uint64_t stride[GL_PTX_MAX_DIMS + 1];
  if (gl_ptx_accept(p, '=')) {
    if (a->space != GL_PTX_SPACE_GLOBAL && a->space != GL_PTX_SPACE_CONST)
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, "only .global and .const variables take "
                  "initialisers");
    has_init = 1;
    /* stride[d]: scalars in one element at depth d (dims then the vector). */
    uint32_t n = 0;
    uint64_t all[GL_PTX_MAX_DIMS + 1];
    for (uint32_t i = 0; i < ndims; i++) all[n++] = dims[i];
    if (a->vec > 1) all[n++] = a->vec;
    for (uint32_t d = 0; d < n; d++) {
      uint64_t prod = 1;
      for (uint32_t k = d + 1; k < n; k++) prod *= all[k];
      stride[d] = prod;
    }
    c.stride = stride;
    c.nstride = n;
    c.base = p->init_len;
    c.esize = tsize;
    c.type = a->type;
    c.limit = unsized ? GL_PTX_MAX_VAR_BYTES / (tsize ? tsize : 1) : count * a->vec;
    if (gl_ptx_accept(p, '{'))
      parse_init_list(p, &c, 1);
    else
      parse_init_scalar(p, &c);
    if (unsized) {
      uint64_t per = stride[0] ? stride[0] : 1; /* scalars per outer element */
      count = (c.written + per - 1) / per;
      if (ndims > 1) {
        count = 1;
        for (uint32_t i = 1; i < ndims; i++) count *= dims[i];
        count *= (c.written + per - 1) / per;
      }
      unsized = 0;
    }
  }
  uint64_t size = count * esize;
  if (size > GL_PTX_MAX_VAR_BYTES)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, "variable larger than %llu bytes",
                (unsigned long long)GL_PTX_MAX_VAR_BYTES);
  s.size = size;

  switch (a->space) {
  case GL_PTX_SPACE_GLOBAL:
  case GL_PTX_SPACE_CONST: {
    uint64_t off = gl_ptx_align_up(p->data_cur, align);
    if (off + size > GL_PTX_MAX_DATA_BYTES)
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, "module data larger than %llu bytes",
                  (unsigned long long)GL_PTX_MAX_DATA_BYTES);
    p->data_cur = off + size;
    s.addr = off;
    if (has_init && c.written > 0) {
      gl_ptx_grow(p, (void **)&p->inits, &p->init_cap, (uint64_t)p->ninits + 1, sizeof *p->inits);
      gl_ptx_init_rec *r = &p->inits[p->ninits++];
      r->data_off = off;
      r->buf_off = c.base;
      r->len = c.written * tsize;
      if (r->len > size) r->len = size;
      p->init_len = c.base + r->len;
    }
    break;
  }
  case GL_PTX_SPACE_SHARED:
    if (unsized) {
      if (!(a->linkage & GL_PTX_LINK_EXTERN))
        gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, "unsized .shared array must be .extern");
      s.dyn_shared = 1;
      s.addr = 0;
    } else {
      gl_ptx_alloc_shared(p, &s, align, line);
    }
    break;
  case GL_PTX_SPACE_LOCAL:
    s.addr = gl_ptx_alloc_local(p, size, align, line);
    break;
  case GL_PTX_SPACE_PARAM:
    /* A call-site argument or return slot, in the caller's frame. */
    if (!p->in_body)
      gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, ".param variable outside a function");
    s.space = GL_PTX_SPACE_FPARAM;
    s.addr = gl_ptx_alloc_local(p, size, align, line);
    break;
  default:
    break;
  }
  if (unsized && a->space != GL_PTX_SPACE_SHARED)
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, line, "array size missing");
  gl_ptx_declare(p, &s, line);
}

/* `.reg .type name, %r<N>, ...;` */
void gl_ptx_parse_reg_decl(gl_ptx_parser *p) {
  gl_ptx_decl_attrs a = {0};
  gl_ptx_parse_decl_attrs(p, &a);
  if (a.vec != 1) {
    const gl_ptx_token *t = gl_ptx_peek(p, 0);
    gl_ptx_fail(p, GPULEASE_UNSUPPORTED, t->line,
                "vector registers (.reg .v2/.v4) are not supported by the emulated device");
  }
  if (a.type == GL_PTX_T_B128) {
    const gl_ptx_token *t = gl_ptx_peek(p, 0);
    gl_ptx_fail(p, GPULEASE_UNSUPPORTED, t->line,
                "'.b128' registers are not supported by the emulated device");
  }
  for (;;) {
    gl_ptx_token name = gl_ptx_expect_word(p, "a register name");
    gl_ptx_sym s = {0};
    s.name = name.s;
    s.len = name.n;
    s.type = (uint8_t)a.type;
    if (gl_ptx_accept(p, '<')) {
      uint64_t n = gl_ptx_expect_uint(p, "register count", UINT64_MAX);
      gl_ptx_expect(p, '>');
      s.kind = GL_PTX_SYM_RANGE;
      s.count = (uint32_t)(n > GL_PTX_MAX_REG_RANGE ? GL_PTX_MAX_REG_RANGE : n);
      s.index = gl_ptx_alloc_regs(p, n, name.line);
    } else {
      s.kind = GL_PTX_SYM_REG;
      s.index = gl_ptx_alloc_regs(p, 1, name.line);
    }
    gl_ptx_declare(p, &s, name.line);
    if (!gl_ptx_accept(p, ',')) break;
  }
  gl_ptx_expect(p, ';');
}

/* After the space word: attributes, then one or more names. */
void gl_ptx_parse_var_decl(gl_ptx_parser *p, int space, int linkage) {
  gl_ptx_decl_attrs a = {0};
  a.space = space;
  a.linkage = linkage;
  gl_ptx_parse_decl_attrs(p, &a);
  if (a.type == GL_PTX_T_PRED) {
    const gl_ptx_token *t = gl_ptx_peek(p, 0);
    gl_ptx_fail(p, GPULEASE_LOAD_FAILED, t->line, ".pred variables are not allowed");
  }
  for (;;) {
    gl_ptx_token name = gl_ptx_expect_word(p, "a variable name");
    declare_var(p, &a, &name);
    if (!gl_ptx_accept(p, ',')) break;
  }
  gl_ptx_expect(p, ';');
}

