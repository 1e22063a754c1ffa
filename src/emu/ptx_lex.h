/*
 * ptx_lex.h - tokenizer for PTX module text (internal to the PTX parser).
 *
 * The lexer walks len bytes of untrusted text (not NUL-terminated) and hands
 * out one token at a time, with up to GL_PTX_LEX_LOOKAHEAD tokens of
 * lookahead. Comments (// and block comments) and whitespace are skipped;
 * every token records the 1-based line it starts on, which is how the
 * parser both reports errors and finds the end of line-terminated
 * directives (.loc, .file, .maxntid ...).
 *
 * A word is [A-Za-z_$%.][A-Za-z0-9_$.]* where "::" also continues a word,
 * so "ld.global.L1::no_allocate.v4.f32", "%tid.x" and ".shared::cta" are one
 * token each, while the single colon of "$L__BB0_2:" is punctuation. Numbers
 * are integers (decimal, 0x hex, 0b binary, leading-0 octal, optional U
 * suffix) or floats (0fXXXXXXXX, 0dXXXXXXXXXXXXXXXX, or decimal with a
 * point or exponent). Token text points into the input and stays valid as
 * long as the input does.
 */
#ifndef GL_EMU_PTX_LEX_H
#define GL_EMU_PTX_LEX_H

#include <stddef.h>
#include <stdint.h>

typedef enum gl_ptx_tok_kind {
  GL_PTX_TK_EOF = 0,
  GL_PTX_TK_WORD,   /* identifier, directive, mnemonic, register, label */
  GL_PTX_TK_INT,    /* u: the value (two's complement when negated later) */
  GL_PTX_TK_FLOAT,  /* fkind says which form; u holds the bits or d the value */
  GL_PTX_TK_STRING, /* s/n: the text between the quotes */
  GL_PTX_TK_PUNCT,  /* c: one of { } ( ) [ ] , ; : < > + - | ! @ = */
  GL_PTX_TK_ERROR   /* s: a static message; lexing stops here */
} gl_ptx_tok_kind;

enum { GL_PTX_FLT_F32BITS = 1, GL_PTX_FLT_F64BITS, GL_PTX_FLT_DECIMAL };

typedef struct gl_ptx_token {
  uint8_t kind;   /* gl_ptx_tok_kind */
  uint8_t fkind;  /* GL_PTX_TK_FLOAT: GL_PTX_FLT_* */
  char c;         /* GL_PTX_TK_PUNCT */
  uint32_t line;  /* 1-based */
  const char *s;  /* WORD, STRING, INT/FLOAT: the token text; ERROR: message */
  uint32_t n;     /* length of s (not for ERROR) */
  uint64_t u;     /* INT value, F32BITS/F64BITS bit patterns */
  double d;       /* DECIMAL float value */
} gl_ptx_token;

#define GL_PTX_LEX_LOOKAHEAD 3

typedef struct gl_ptx_lexer {
  const char *p, *end;
  uint32_t line;
  unsigned nla;                          /* tokens buffered in la[] */
  gl_ptx_token la[GL_PTX_LEX_LOOKAHEAD]; /* la[0] is the next token */
} gl_ptx_lexer;

void gl_ptx_lex_init(gl_ptx_lexer *lx, const char *text, size_t len);

/* The k-th token ahead (0 = next), k < GL_PTX_LEX_LOOKAHEAD. */
const gl_ptx_token *gl_ptx_lex_peek(gl_ptx_lexer *lx, unsigned k);

/* Consumes the next token into *out (may be NULL). EOF and ERROR tokens
 * repeat forever. */
void gl_ptx_lex_next(gl_ptx_lexer *lx, gl_ptx_token *out);

/* Does the token equal the word w (exact, case-sensitive)? */
int gl_ptx_tok_is(const gl_ptx_token *t, const char *w);

#endif /* GL_EMU_PTX_LEX_H */
