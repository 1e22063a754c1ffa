/*
 * ptx_internal.h - state shared by the PTX parser's files.
 *
 *   ptx_lex.c    bytes -> tokens
 *   ptx_sym.c    scoped name table (registers, variables, functions, labels)
 *   ptx_parse.c  module structure: directives, functions, parameter and
 *                frame layout, and the final checks (labels, calls,
 *                recursion, dynamic-shared offsets, the data image)
 *   ptx_decl.c   .reg and variable declarations, initialisers
 *   ptx_insn.c   one instruction statement -> gl_ptx_insn
 *   ptx_optab.c  the instruction, modifier and special-register tables
 *
 * Error handling: any error calls gl_ptx_fail, which formats "line N: ..."
 * into the caller's buffer and longjmps back to gl_ptx_parse. Everything
 * the parse allocates hangs off gl_ptx_parser or the module being built,
 * so that one cleanup path frees it all.
 */
#ifndef GL_EMU_PTX_INTERNAL_H
#define GL_EMU_PTX_INTERNAL_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/ptx_ir.h"
#include "emu/ptx_lex.h"
#include "gpulease/gpulease.h"

/* ---- Limits on untrusted input ------------------------------------------ */
#define GL_PTX_MAX_TEXT_BYTES (1ull << 30)    /* whole module text */
#define GL_PTX_MAX_REG_RANGE (1u << 20)       /* one %r<N> declaration */
#define GL_PTX_MAX_REGS (1u << 22)            /* registers in a module */
#define GL_PTX_MAX_INSNS (1u << 22)           /* instructions in a module */
#define GL_PTX_MAX_FUNCS (1u << 16)           /* .entry + .func */
#define GL_PTX_MAX_CALLS (1u << 20)           /* call sites */
#define GL_PTX_MAX_VAR_BYTES (1ull << 30)     /* one variable */
#define GL_PTX_MAX_DATA_BYTES (1ull << 30)    /* .global + .const image */
#define GL_PTX_MAX_SHARED_BYTES (1ull << 30)  /* static .shared, module-wide */
#define GL_PTX_MAX_LOCAL_BYTES (16ull << 20)  /* per-thread local, module-wide */
#define GL_PTX_MAX_PARAM_BYTES (1ull << 16)   /* one kernel's parameters */
#define GL_PTX_MAX_DEPTH 256                  /* nested { } blocks */

/* ---- Scoped symbol table (ptx_sym.c) ------------------------------------ */

typedef enum gl_ptx_sym_kind {
  GL_PTX_SYM_REG = 1, /* one register: index */
  GL_PTX_SYM_RANGE,   /* %r<count>: registers index .. index+count-1 */
  GL_PTX_SYM_VAR,     /* a variable in `space` at byte offset addr */
  GL_PTX_SYM_FUNC,    /* a .func or .entry: index into the module's funcs */
  GL_PTX_SYM_LABEL    /* index: instruction index */
} gl_ptx_sym_kind;

typedef struct gl_ptx_sym {
  const char *name; /* points into the PTX text */
  uint32_t len;
  uint32_t hash;
  uint32_t next;      /* older symbol in the same bucket, UINT32_MAX at end */
  uint8_t kind;       /* gl_ptx_sym_kind */
  uint8_t space;      /* VAR: gl_ptx_space */
  uint8_t dyn_shared; /* VAR: .extern .shared array, at the dynamic offset */
  uint8_t type;       /* REG/RANGE/VAR: the declared gl_ptx_type */
  uint32_t index;     /* REG/RANGE: register; FUNC: function; LABEL:
                         instruction; static .shared VAR: its gl_ptx_shvar */
  uint32_t count;
  uint64_t addr;      /* VAR: offset in its space (data image offset for
                         .global/.const) */
  uint64_t size;      /* VAR: bytes */
} gl_ptx_sym;

typedef struct gl_ptx_symtab {
  gl_ptx_sym *v;
  uint32_t n, cap;
  uint32_t *bucket; /* nbucket heads, a power of two */
  uint32_t nbucket;
} gl_ptx_symtab;

/* 0, or -1 when out of memory. The name is not copied. */
int gl_ptx_symtab_add(gl_ptx_symtab *t, const gl_ptx_sym *s);
/* The most recently added live symbol with that name, or NULL. The pointer
 * is valid until the next add. */
gl_ptx_sym *gl_ptx_symtab_find(const gl_ptx_symtab *t, const char *name, uint32_t len);
/* Drops every symbol added since the table had `mark` entries. */
void gl_ptx_symtab_pop(gl_ptx_symtab *t, uint32_t mark);
void gl_ptx_symtab_free(gl_ptx_symtab *t);

/* ---- Parser state ------------------------------------------------------- */

typedef struct gl_ptx_fixup {
  uint32_t insn;     /* instruction index */
  uint32_t line;
  uint8_t slot;      /* dyn-shared fixups: 0,1 = dst[i]; 2..5 = src[i-2] */
  const char *name;  /* label fixups: the label */
  uint32_t len;
} gl_ptx_fixup;

typedef struct gl_ptx_edge {
  uint32_t caller, callee, line;
} gl_ptx_edge;

/* A static .shared variable, for the per-kernel sizes (ptx_parse.c). */
typedef struct gl_ptx_shvar {
  uint64_t size;
  uint64_t align;
  uint32_t last_user; /* function index + 1 of its latest use, 0 none */
} gl_ptx_shvar;

/* Function `func` references static .shared variable `var`. */
typedef struct gl_ptx_shuse {
  uint32_t func, var;
} gl_ptx_shuse;

typedef struct gl_ptx_init_rec {
  uint64_t data_off; /* where in the data image */
  uint64_t buf_off;  /* where in gl_ptx_parser.init_buf */
  uint64_t len;
} gl_ptx_init_rec;

typedef struct gl_ptx_fstate {
  uint32_t decl_line;
  uint8_t defined;    /* has a body */
  uint8_t params_set; /* formal parameters laid out */
  uint8_t is_extern;  /* .extern prototype without a body */
} gl_ptx_fstate;

typedef struct gl_ptx_parser {
  gl_ptx_lexer lx;
  gl_ptx_module *m;
  uint64_t data_base;
  char *err;
  size_t errlen;
  jmp_buf jb;
  gpulease_status status;

  gl_ptx_symtab syms;   /* scoped: module, function, nested blocks */
  gl_ptx_symtab labels; /* the current function's labels */
  uint32_t depth;       /* 0 at module level */
  uint32_t scope_mark[GL_PTX_MAX_DEPTH + 1];
  uint64_t scope_local[GL_PTX_MAX_DEPTH + 1]; /* local cursor at block entry */

  uint32_t insn_cap, func_cap, call_cap;
  gl_ptx_fstate *fstate; /* func_cap entries, parallel to m->funcs */

  /* The function whose body is being parsed. */
  int in_body;
  uint32_t cur_func;

  gl_ptx_fixup *bra_fix;
  uint32_t nbra_fix, bra_fix_cap;
  gl_ptx_fixup *dyn_fix;
  uint32_t ndyn_fix, dyn_fix_cap;
  gl_ptx_edge *edges;
  uint32_t nedges, edge_cap;
  gl_ptx_shvar *shvars; /* static .shared variables, in declaration order */
  uint32_t nshvars, shvar_cap;
  gl_ptx_shuse *shuses; /* each (function, variable) pair once */
  uint32_t nshuses, shuse_cap;
  gl_ptx_init_rec *inits;
  uint32_t ninits, init_cap;
  uint8_t *init_buf;
  uint64_t init_len, init_buf_cap;

  uint64_t data_cur, shared_cur, local_cur, local_hwm;
  int saw_version, saw_target;
} gl_ptx_parser;

/* ---- Shared helpers (ptx_parse.c) ---------------------------------------- */

static inline uint64_t gl_ptx_align_up(uint64_t v, uint64_t a) {
  return (v + a - 1) & ~(a - 1);
}
gl_ptx_token gl_ptx_expect_word(gl_ptx_parser *p, const char *what);
uint64_t gl_ptx_expect_uint(gl_ptx_parser *p, const char *what, uint64_t max);
/* Printable description of a token for messages, in buf. */
const char *gl_ptx_tok_desc(const gl_ptx_token *t, char *buf, size_t n);
/* Reserves per-thread local memory (module-wide) / register indices. */
uint64_t gl_ptx_alloc_local(gl_ptx_parser *p, uint64_t size, uint64_t align, uint32_t line);
uint32_t gl_ptx_alloc_regs(gl_ptx_parser *p, uint64_t count, uint32_t line);
/* Adds a symbol to the current scope; a duplicate there is an error. */
void gl_ptx_declare(gl_ptx_parser *p, const gl_ptx_sym *s, uint32_t line);
/* Lays out a static .shared variable module-wide: sets s->addr and
 * s->index (and counts it as used by the function being parsed, if any). */
void gl_ptx_alloc_shared(gl_ptx_parser *p, gl_ptx_sym *s, uint64_t align, uint32_t line);
/* Notes that the function being parsed references variable s (a no-op
 * unless s is a static .shared variable). */
void gl_ptx_use_var(gl_ptx_parser *p, const gl_ptx_sym *s);

/* ---- Declarations (ptx_decl.c) ------------------------------------------- */

enum { GL_PTX_LINK_EXTERN = 1, GL_PTX_LINK_VISIBLE = 2, GL_PTX_LINK_WEAK = 4,
       GL_PTX_LINK_COMMON = 8 };
#define GL_PTX_MAX_DIMS 8

typedef struct gl_ptx_decl_attrs {
  int space;      /* gl_ptx_space, or -1 for .reg */
  int type;       /* gl_ptx_type */
  uint32_t align; /* 0: natural */
  uint32_t vec;   /* 1, 2, 4 */
  int linkage;    /* LINK_* */
} gl_ptx_decl_attrs;

/* A state-space word (.global ...) -> gl_ptx_space, or -1. */
int gl_ptx_space_word(const gl_ptx_token *t);
/* Fails with UNSUPPORTED naming the token. */
_Noreturn void gl_ptx_unsupported_word(gl_ptx_parser *p, const gl_ptx_token *t);
/* .align/.vN/.type/.ptr words of a declaration, up to its first name. */
void gl_ptx_parse_decl_attrs(gl_ptx_parser *p, gl_ptx_decl_attrs *a);
/* [N][M]... after a name: the element count; *unsized for a leading []. */
uint64_t gl_ptx_parse_dims(gl_ptx_parser *p, int *unsized, uint64_t *dims, uint32_t *ndims);
/* After `.reg`: the rest of the statement. */
void gl_ptx_parse_reg_decl(gl_ptx_parser *p);
/* After a state-space word: attributes, names, initialisers, ';'. */
void gl_ptx_parse_var_decl(gl_ptx_parser *p, int space, int linkage);

/* Formats "line N: ..." and unwinds to gl_ptx_parse. */
_Noreturn void gl_ptx_fail(gl_ptx_parser *p, gpulease_status st, uint32_t line,
                           const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Grows *arr (elements of `elem` bytes, *cap of them) to hold `need`. */
void gl_ptx_grow(gl_ptx_parser *p, void **arr, uint32_t *cap, uint64_t need, size_t elem);

/* Token helpers: next token must be the punctuation c / a word. */
void gl_ptx_expect(gl_ptx_parser *p, char c);
int gl_ptx_accept(gl_ptx_parser *p, char c); /* consumes c if next */
const gl_ptx_token *gl_ptx_peek(gl_ptx_parser *p, unsigned k);
void gl_ptx_next(gl_ptx_parser *p, gl_ptx_token *out);

/* A type suffix (".u32") -> gl_ptx_type; GL_PTX_T_NONE if not a type we
 * know; -1 when it is a valid PTX type the emulator does not support. */
int gl_ptx_type_from(const char *s, uint32_t n);

/* The value of a numeric literal token written for an operand or element
 * of `type`: integers as two's complement (converted to float bits for
 * .f32/.f64), 0f/0d literals as their bits (converted between f32 and f64
 * when the type asks), decimal floats converted; negate flips the sign. */
uint64_t gl_ptx_literal_value(gl_ptx_parser *p, const gl_ptx_token *t, int negate, int type);

/* Parses one instruction statement (guard to ';') inside a body
 * (ptx_insn.c) and appends it to the module. */
void gl_ptx_parse_insn(gl_ptx_parser *p);

/* The matrix instructions (ptx_insn_mma.c): when mnemonic token mn is
 * mma, wgmma, ldmatrix, stmatrix, movmatrix or fence.proxy.async, parses
 * its operands up to ';', fills *in and appends it (with its register list
 * carriers, mma.h) and returns 1; returns 0 for any other mnemonic. */
int gl_ptx_parse_mma(gl_ptx_parser *p, gl_ptx_insn *in, const gl_ptx_token *mn);

/* Asynchronous copies, mbarriers, redux, elect and the other sm_80+
 * synchronisation instructions (ptx_insn_async.c): when the mnemonic mn
 * is one of them, decodes the rest of the statement into *in (guard and
 * line already set), appends it and returns 1; returns 0, consuming
 * nothing, for any other instruction. Errors unwind via gl_ptx_fail. */
int gl_ptx_parse_async_insn(gl_ptx_parser *p, gl_ptx_insn *in, const gl_ptx_token *mn);

/* Appends *in to the module (checks the instruction limit). */
void gl_ptx_push_insn(gl_ptx_parser *p, const gl_ptx_insn *in);

/* Looks a name up as a register: a .reg scalar or an element of a %r<N>
 * range. GL_PTX_NOREG when it is not one. */
uint32_t gl_ptx_find_reg(gl_ptx_parser *p, const char *s, uint32_t n);

#endif /* GL_EMU_PTX_INTERNAL_H */
