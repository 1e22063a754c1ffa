/* prom_text.c - see prom_text.h. */
#include "cli/prom_text.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

static bool is_name_start(char c, bool metric) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (metric && c == ':');
}

static bool is_name_char(char c, bool metric) {
  return is_name_start(c, metric) || (c >= '0' && c <= '9');
}

typedef struct cursor {
  const char *p;
  size_t len, i;
  char *out; /* the storage being filled */
  size_t o, cap;
} cursor;

static void skip_blanks(cursor *c) {
  while (c->i < c->len && is_blank(c->p[c->i])) c->i++;
}

/* Copies a name at the cursor into the storage; its start, or NULL. */
static const char *take_name(cursor *c, bool metric) {
  size_t start = c->i;
  if (c->i >= c->len || !is_name_start(c->p[c->i], metric)) return NULL;
  while (c->i < c->len && is_name_char(c->p[c->i], metric)) c->i++;
  size_t n = c->i - start;
  if (n > GL_PROM_MAX_NAME || c->o + n + 1 > c->cap) return NULL;
  char *dst = c->out + c->o;
  memcpy(dst, c->p + start, n);
  dst[n] = 0;
  c->o += n + 1;
  return dst;
}

/* Copies a quoted label value at the cursor, unescaped; its start, or NULL. */
static const char *take_value(cursor *c) {
  if (c->i >= c->len || c->p[c->i] != '"') return NULL;
  c->i++;
  char *dst = c->out + c->o;
  size_t n = 0;
  for (;;) {
    if (c->i >= c->len) return NULL; /* unterminated */
    char ch = c->p[c->i++];
    if (ch == '"') break;
    if (ch == '\\') {
      if (c->i >= c->len) return NULL;
      char e = c->p[c->i++];
      if (e == '\\') ch = '\\';
      else if (e == '"') ch = '"';
      else if (e == 'n') ch = '\n';
      else return NULL;
    }
    if (c->o + n + 1 >= c->cap) return NULL;
    dst[n++] = ch;
  }
  dst[n] = 0;
  c->o += n + 1;
  return dst;
}

/* The end of the token at the cursor (the next blank or the line's end). */
static size_t token_end(const cursor *c) {
  size_t e = c->i;
  while (e < c->len && !is_blank(c->p[e])) e++;
  return e;
}

/* A sample value: a decimal float, or NaN / Inf with an optional sign. */
static int parse_float(const char *s, size_t n, double *out) {
  char buf[64];
  if (n == 0 || n >= sizeof buf) return -1;
  memcpy(buf, s, n);
  buf[n] = 0;
  const char *body = buf + (buf[0] == '+' || buf[0] == '-');
  if (strcasecmp(body, "inf") == 0) {
    *out = buf[0] == '-' ? -INFINITY : INFINITY;
    return 0;
  }
  if (strcasecmp(buf, "nan") == 0) {
    *out = NAN;
    return 0;
  }
  if (strspn(buf, "0123456789+-.eE") != n) return -1; /* no hex, no "infinity", no "nan(...)" */
  char *end;
  errno = 0;
  double v = strtod(buf, &end);
  if (end != buf + n || end == buf) return -1;
  if (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL)) return -1;
  *out = v;
  return 0;
}

/* A timestamp: an optionally signed integer of milliseconds. */
static int parse_timestamp(const char *s, size_t n, int64_t *out) {
  char buf[32];
  if (n == 0 || n >= sizeof buf) return -1;
  memcpy(buf, s, n);
  buf[n] = 0;
  size_t digits = buf[0] == '-' || buf[0] == '+' ? 1 : 0;
  if (buf[digits] == 0 || strspn(buf + digits, "0123456789") != n - digits) return -1;
  char *end;
  errno = 0;
  long long v = strtoll(buf, &end, 10);
  if (errno || *end) return -1;
  *out = (int64_t)v;
  return 0;
}

void gl_prom_sample_free(gl_prom_sample *s) {
  if (!s) return;
  free(s->storage);
  memset(s, 0, sizeof *s);
}

int gl_prom_parse_line(const char *line, size_t len, gl_prom_sample *out) {
  memset(out, 0, sizeof *out);
  if (len && line[len - 1] == '\r') len--;
  cursor c = {.p = line, .len = len};
  skip_blanks(&c);
  if (c.i == len || line[c.i] == '#') return 0;
  if (len > GL_PROM_MAX_LINE || memchr(line, 0, len)) return -1;
  /* The strings never take more than the line plus a NUL each. */
  c.cap = len + 2 * (GL_PROM_MAX_LABELS + 1) + 1;
  c.out = malloc(c.cap);
  if (!c.out) return -1;
  out->storage = c.out;
  if (!(out->name = take_name(&c, true))) goto bad;
  skip_blanks(&c);
  if (c.i < len && line[c.i] == '{') {
    c.i++;
    for (;;) {
      skip_blanks(&c);
      if (c.i < len && line[c.i] == '}') {
        c.i++;
        break;
      }
      if (out->label_count == GL_PROM_MAX_LABELS) goto bad;
      gl_prom_label *l = &out->labels[out->label_count];
      if (!(l->name = take_name(&c, false))) goto bad;
      for (size_t k = 0; k < out->label_count; k++)
        if (strcmp(out->labels[k].name, l->name) == 0) goto bad; /* given twice */
      skip_blanks(&c);
      if (c.i >= len || line[c.i] != '=') goto bad;
      c.i++;
      skip_blanks(&c);
      if (!(l->value = take_value(&c))) goto bad;
      out->label_count++;
      skip_blanks(&c);
      if (c.i < len && line[c.i] == ',') {
        c.i++;
        continue;
      }
      if (c.i < len && line[c.i] == '}') {
        c.i++;
        break;
      }
      goto bad;
    }
    skip_blanks(&c);
  } else if (c.i < len && !is_blank(line[c.i - 1])) {
    goto bad; /* the name runs into something that is not a name */
  }
  size_t e = token_end(&c);
  if (parse_float(line + c.i, e - c.i, &out->value) != 0) goto bad;
  c.i = e;
  skip_blanks(&c);
  if (c.i < len) {
    e = token_end(&c);
    if (parse_timestamp(line + c.i, e - c.i, &out->timestamp_ms) != 0) goto bad;
    out->has_timestamp = true;
    c.i = e;
    skip_blanks(&c);
    if (c.i < len) goto bad;
  }
  return 1;
bad:
  gl_prom_sample_free(out);
  return -1;
}

void gl_prom_set_free(gl_prom_set *set) {
  if (!set) return;
  for (size_t i = 0; i < set->count; i++) gl_prom_sample_free(&set->samples[i]);
  free(set->samples);
  memset(set, 0, sizeof *set);
}

int gl_prom_parse(const char *text, size_t len, gl_prom_set *set) {
  memset(set, 0, sizeof *set);
  size_t pos = 0, lineno = 0;
  while (pos < len) {
    const char *nl = memchr(text + pos, '\n', len - pos);
    size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
    lineno++;
    gl_prom_sample s;
    int r = gl_prom_parse_line(text + pos, n, &s);
    pos += n + (nl != NULL);
    if (r < 0) {
      set->malformed++;
      if (!set->first_bad) set->first_bad = lineno;
      continue;
    }
    if (r == 0) continue;
    if (set->count == GL_PROM_MAX_SAMPLES) {
      set->dropped++;
      gl_prom_sample_free(&s);
      continue;
    }
    if (set->count == set->cap) {
      size_t cap = set->cap ? set->cap * 2 : 256;
      if (cap > GL_PROM_MAX_SAMPLES) cap = GL_PROM_MAX_SAMPLES;
      gl_prom_sample *v = realloc(set->samples, cap * sizeof *v);
      if (!v) {
        gl_prom_sample_free(&s);
        gl_prom_set_free(set);
        return -1;
      }
      set->samples = v;
      set->cap = cap;
    }
    set->samples[set->count++] = s;
  }
  return 0;
}

const char *gl_prom_label_value(const gl_prom_sample *s, const char *label) {
  for (size_t i = 0; i < s->label_count; i++)
    if (strcmp(s->labels[i].name, label) == 0) return s->labels[i].value;
  return NULL;
}

static bool matches(const gl_prom_sample *s, const char *name, const char *label,
                    const char *value) {
  if (strcmp(s->name, name) != 0) return false;
  if (!label) return true;
  const char *v = gl_prom_label_value(s, label);
  return v && strcmp(v, value) == 0;
}

const gl_prom_sample *gl_prom_find(const gl_prom_set *set, const char *name, const char *label,
                                   const char *value) {
  for (size_t i = 0; i < set->count; i++)
    if (matches(&set->samples[i], name, label, value)) return &set->samples[i];
  return NULL;
}

double gl_prom_sum(const gl_prom_set *set, const char *name, const char *label, const char *value,
                   size_t *found) {
  double sum = 0;
  size_t n = 0;
  for (size_t i = 0; i < set->count; i++)
    if (matches(&set->samples[i], name, label, value)) {
      sum += set->samples[i].value;
      n++;
    }
  if (found) *found = n;
  return sum;
}
