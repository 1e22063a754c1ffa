/*
 * config_file.c - gpuleased's configuration file: libinih reads it, a
 * reader of our own counts its lines (this libinih's handler is not told
 * the line) and checks section headers (an empty unknown section calls no
 * handler), and each key goes to the caller's apply function.
 */
#include "daemon/config_file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <ini.h>

typedef struct parser {
  FILE *f;
  const char *path;
  int line;       /* of the line last read */
  int err_line;   /* of the first error; 0: none */
  bool eof;
  char msg[768];
  gl_config_apply_fn apply;
  void *user;
} parser;

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

static void fail(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(parser *p, const char *fmt, ...) {
  if (p->err_line) return; /* the first error is the one told */
  p->err_line = p->line;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->msg, sizeof p->msg, fmt, ap);
  va_end(ap);
}

/* A line at most num - 1 bytes for libinih; NULL at the end or after an
 * error (which ends the parse). */
static char *read_line(char *str, int num, void *stream) {
  parser *p = stream;
  if (p->err_line || p->eof) return NULL;
  size_t n = 0;
  bool too_long = false;
  int c;
  while ((c = getc(p->f)) != EOF && c != '\n') {
    if (c == '\r') continue; /* CRLF files */
    if (c == 0) c = ' ';       /* a NUL would end the line early */
    if (n + 2 < (size_t)num) str[n++] = (char)c;
    else too_long = true;
  }
  if (c == EOF) {
    p->eof = true;
    if (n == 0 && !too_long) return NULL;
  }
  p->line++;
  str[n] = 0;
  if (too_long) {
    fail(p, "line too long (at most %d bytes)", num - 2);
    return NULL;
  }
  const char *s = str;
  if (p->line == 1 && strncmp(s, "\xEF\xBB\xBF", 3) == 0) s += 3;
  while (is_blank(*s)) s++;
  if (*s == '[') {
    const char *end = strchr(s, ']');
    if (end) {
      const char *a = s + 1, *b = end;
      while (a < b && is_blank(*a)) a++;
      while (b > a && is_blank(b[-1])) b--;
      size_t len = (size_t)(b - a);
      if (len != strlen(GL_CONFIG_SECTION) || memcmp(a, GL_CONFIG_SECTION, len) != 0) {
        fail(p, "unknown section '[%.*s]' (keys belong in [" GL_CONFIG_SECTION "])",
             (int)(len > 64 ? 64 : len), a);
        return NULL;
      }
    }
  }
  return str;
}

static int on_key(void *user, const char *section, const char *name, const char *value) {
  parser *p = user;
  if (p->err_line) return 0;
  if (section[0] && strcmp(section, GL_CONFIG_SECTION) != 0) {
    fail(p, "unknown section '[%s]'", section);
    return 0;
  }
  char why[512];
  why[0] = 0;
  if (p->apply(p->user, name, value ? value : "", why, sizeof why) != 0) {
    fail(p, "%s", why[0] ? why : "bad value");
    return 0;
  }
  return 1;
}

int gl_config_file_parse(const char *path, gl_config_apply_fn apply, void *user, char *err,
                         size_t errlen) {
  if (errlen) err[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f) {
    if (errlen) snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
    return -1;
  }
  parser p = {.f = f, .path = path, .apply = apply, .user = user};
  int r = ini_parse_stream(read_line, &p, on_key, &p);
  bool read_error = ferror(f) != 0;
  fclose(f);
  if (r > 0 && (!p.err_line || r < p.err_line)) { /* libinih's own: a line it could not read */
    p.err_line = r;
    snprintf(p.msg, sizeof p.msg, "expected key = value or [" GL_CONFIG_SECTION "]");
  }
  if (p.err_line) {
    if (errlen) snprintf(err, errlen, "%s:%d: %s", path, p.err_line, p.msg);
    return -1;
  }
  if (r < 0 || read_error) {
    if (errlen) snprintf(err, errlen, "%s: cannot read it", path);
    return -1;
  }
  return 0;
}

int gl_config_parse_bool(const char *s, bool *out) {
  static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no", "off", "0"};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
    if (strcasecmp(s, yes[i]) == 0) {
      *out = true;
      return 0;
    }
    if (strcasecmp(s, no[i]) == 0) {
      *out = false;
      return 0;
    }
  }
  return -1;
}
