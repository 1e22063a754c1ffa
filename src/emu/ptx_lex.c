/*
 * ptx_lex.c - PTX tokenizer: bytes to tokens (see ptx_lex.h).
 *
 * Everything here is bounds-checked against lx->end: the input is not
 * NUL-terminated and comes from the network. Malformed input (a stray
 * byte, an unterminated comment or string, an integer that overflows 64
 * bits) yields one GL_PTX_TK_ERROR token that then repeats, so the parser
 * reports it with the line it was found on.
 */
#include "emu/ptx_lex.h"

#include <stdlib.h>
#include <string.h>

static int is_word_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' ||
         c == '%' || c == '.';
}

static int is_word_char(char c) {
  return is_word_start(c) || (c >= '0' && c <= '9');
}

static int hex_val(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static void set_error(gl_ptx_token *t, const char *msg) {
  t->kind = GL_PTX_TK_ERROR;
  t->s = msg;
  t->n = 0;
}

/* Skips whitespace and comments. Returns 0, or -1 with *msg set for an
 * unterminated block comment. */
static int skip_space(gl_ptx_lexer *lx, const char **msg) {
  while (lx->p < lx->end) {
    char c = *lx->p;
    if (c == '\n') {
      lx->line++;
      lx->p++;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      lx->p++;
    } else if (c == '/' && lx->end - lx->p >= 2 && lx->p[1] == '/') {
      while (lx->p < lx->end && *lx->p != '\n') lx->p++;
    } else if (c == '/' && lx->end - lx->p >= 2 && lx->p[1] == '*') {
      lx->p += 2;
      for (;;) {
        if (lx->end - lx->p < 2) {
          *msg = "unterminated /* comment";
          lx->p = lx->end;
          return -1;
        }
        if (lx->p[0] == '*' && lx->p[1] == '/') {
          lx->p += 2;
          break;
        }
        if (*lx->p == '\n') lx->line++;
        lx->p++;
      }
    } else {
      break;
    }
  }
  return 0;
}

/* Integer in base `base` from s[0..n); -1 on a bad digit or overflow. */
static int parse_uint(const char *s, size_t n, unsigned base, uint64_t *out) {
  uint64_t v = 0;
  if (n == 0) return -1;
  for (size_t i = 0; i < n; i++) {
    int d = hex_val(s[i]);
    if (d < 0 || (unsigned)d >= base) return -1;
    if (v > (UINT64_MAX - (unsigned)d) / base) return -1;
    v = v * base + (unsigned)d;
  }
  *out = v;
  return 0;
}

static void lex_number(gl_ptx_lexer *lx, gl_ptx_token *t) {
  const char *s = lx->p, *e = lx->p;
  /* A number is a run of alphanumerics and points, plus exponent signs. */
  while (e < lx->end) {
    char c = *e;
    if (is_word_char(c) && c != '%' && c != '$') {
      e++;
    } else if ((c == '+' || c == '-') && (e[-1] == 'e' || e[-1] == 'E') &&
               !(s[0] == '0' && e - s > 1 && (s[1] == 'x' || s[1] == 'X' || s[1] == 'f' ||
                                              s[1] == 'F' || s[1] == 'd' || s[1] == 'D'))) {
      e++;
    } else {
      break;
    }
  }
  size_t n = (size_t)(e - s);
  lx->p = e;
  t->s = s;
  t->n = (uint32_t)n;
  if (n >= 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' || s[1] == 'D')) {
    size_t want = (s[1] == 'f' || s[1] == 'F') ? 8 : 16;
    if (n != 2 + want || parse_uint(s + 2, want, 16, &t->u) < 0) {
      set_error(t, "malformed hexadecimal float literal");
      return;
    }
    t->kind = GL_PTX_TK_FLOAT;
    t->fkind = want == 8 ? GL_PTX_FLT_F32BITS : GL_PTX_FLT_F64BITS;
    return;
  }
  size_t m = n;
  if (m > 1 && (s[m - 1] == 'U' || s[m - 1] == 'u')) m--;
  int is_float = 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] == '.' || ((s[i] == 'e' || s[i] == 'E') && !(n > 1 && (s[1] == 'x' || s[1] == 'X'))))
      is_float = 1;
  if (is_float) {
    char buf[80];
    char *endp = NULL;
    if (n >= sizeof buf) {
      set_error(t, "malformed number");
      return;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    t->d = strtod(buf, &endp);
    if (endp != buf + n) {
      set_error(t, "malformed number");
      return;
    }
    t->kind = GL_PTX_TK_FLOAT;
    t->fkind = GL_PTX_FLT_DECIMAL;
    return;
  }
  int rc;
  if (m > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    rc = parse_uint(s + 2, m - 2, 16, &t->u);
  else if (m > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B'))
    rc = parse_uint(s + 2, m - 2, 2, &t->u);
  else if (m > 1 && s[0] == '0')
    rc = parse_uint(s + 1, m - 1, 8, &t->u);
  else
    rc = parse_uint(s, m, 10, &t->u);
  if (rc < 0) {
    set_error(t, "malformed or out-of-range integer literal");
    return;
  }
  t->kind = GL_PTX_TK_INT;
}

static void lex_one(gl_ptx_lexer *lx, gl_ptx_token *t) {
  const char *msg = NULL;
  memset(t, 0, sizeof *t);
  if (skip_space(lx, &msg) < 0) {
    t->line = lx->line;
    set_error(t, msg);
    return;
  }
  t->line = lx->line;
  if (lx->p >= lx->end) {
    t->kind = GL_PTX_TK_EOF;
    return;
  }
  char c = *lx->p;
  if (c >= '0' && c <= '9') {
    lex_number(lx, t);
    return;
  }
  if (is_word_start(c)) {
    const char *s = lx->p++;
    while (lx->p < lx->end) {
      if (is_word_char(*lx->p)) {
        lx->p++;
      } else if (*lx->p == ':' && lx->end - lx->p >= 3 && lx->p[1] == ':' &&
                 is_word_char(lx->p[2])) {
        lx->p += 2;
      } else {
        break;
      }
    }
    t->kind = GL_PTX_TK_WORD;
    t->s = s;
    t->n = (uint32_t)(lx->p - s);
    return;
  }
  if (c == '"') {
    const char *s = ++lx->p;
    while (lx->p < lx->end && *lx->p != '"' && *lx->p != '\n') {
      if (*lx->p == '\\' && lx->end - lx->p >= 2 && lx->p[1] != '\n') lx->p++;
      lx->p++;
    }
    if (lx->p >= lx->end || *lx->p != '"') {
      set_error(t, "unterminated string");
      return;
    }
    t->kind = GL_PTX_TK_STRING;
    t->s = s;
    t->n = (uint32_t)(lx->p - s);
    lx->p++;
    return;
  }
  if (strchr("{}()[],;:<>+-|!@=", c) != NULL && c != '\0') {
    lx->p++;
    t->kind = GL_PTX_TK_PUNCT;
    t->c = c;
    return;
  }
  set_error(t, "unexpected character");
}

void gl_ptx_lex_init(gl_ptx_lexer *lx, const char *text, size_t len) {
  memset(lx, 0, sizeof *lx);
  lx->p = text;
  lx->end = text + len;
  lx->line = 1;
}

const gl_ptx_token *gl_ptx_lex_peek(gl_ptx_lexer *lx, unsigned k) {
  if (k >= GL_PTX_LEX_LOOKAHEAD) k = GL_PTX_LEX_LOOKAHEAD - 1;
  while (lx->nla <= k) {
    gl_ptx_token *t = &lx->la[lx->nla];
    /* Once EOF or an error is reached it repeats without consuming. */
    if (lx->nla > 0 && (lx->la[lx->nla - 1].kind == GL_PTX_TK_EOF ||
                        lx->la[lx->nla - 1].kind == GL_PTX_TK_ERROR)) {
      *t = lx->la[lx->nla - 1];
    } else {
      lex_one(lx, t);
      if (t->kind == GL_PTX_TK_ERROR) lx->p = lx->end;
    }
    lx->nla++;
  }
  return &lx->la[k];
}

void gl_ptx_lex_next(gl_ptx_lexer *lx, gl_ptx_token *out) {
  const gl_ptx_token *t = gl_ptx_lex_peek(lx, 0);
  if (out) *out = *t;
  if (t->kind == GL_PTX_TK_EOF || t->kind == GL_PTX_TK_ERROR) return;
  memmove(&lx->la[0], &lx->la[1], (lx->nla - 1) * sizeof lx->la[0]);
  lx->nla--;
}

int gl_ptx_tok_is(const gl_ptx_token *t, const char *w) {
  size_t n = strlen(w);
  return t->kind == GL_PTX_TK_WORD && t->n == n && memcmp(t->s, w, n) == 0;
}
