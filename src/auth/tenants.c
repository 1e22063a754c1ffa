/*
 * tenants.c - see tenants.h.
 *
 * libinih splits `key = value` lines (comments, ':' as '=', trimming); this
 * file feeds it line by line through its own reader, which counts lines for
 * the error messages and handles what inih would get wrong here: section
 * lines (inih truncates section names at 49 bytes, and tenant names may be
 * 255), comment and blank lines, over-long lines (inih would split them into
 * two) and leading whitespace (inih would take an indented line as the
 * continuation of the previous value). inih sees only key lines.
 *
 * Errors keep the one with the smallest line number: the reader and the
 * handler report as they go, in line order; duplicate tenants and tokens
 * are found after the whole file, by sorting.
 */
#include "auth/tenants.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>
#include <sodium.h>

#include "common/util.h"

/* The longest key line handed to inih, without leading whitespace. inih's
 * line buffer is 200 bytes by default. */
#define KEY_LINE_MAX 190

#define DIGEST_BYTES crypto_hash_sha256_BYTES

enum key_id { K_TOKEN, K_VRAM, K_LEASES, K_SESSIONS, K_MAX_TTL, K_GPU_SECONDS, K_ADMIN, K_COUNT };

static const char *const key_names[K_COUNT] = {
    [K_TOKEN] = "token",       [K_VRAM] = "vram",
    [K_LEASES] = "leases",     [K_SESSIONS] = "sessions",
    [K_MAX_TTL] = "max_ttl",   [K_GPU_SECONDS] = "gpu_seconds_per_hour",
    [K_ADMIN] = "admin",
};

typedef struct token_rec {
  uint8_t digest[DIGEST_BYTES];
  uint32_t tenant; /* index into gl_tenants.v */
  int line;        /* while parsing */
} token_rec;

struct gl_tenants {
  gl_tenant *v;       /* file order */
  size_t n;
  uint32_t *by_name;  /* indices into v, sorted by name */
  token_rec *tokens;  /* sorted by digest */
  size_t ntokens;
  gl_quota_limits defaults;
  char **deny[2]; /* [deny]: by gl_deny_kind, normalised, file order */
  size_t ndeny[2], deny_cap[2];
};

/* What the parser knows of a [tenant] section beyond gl_tenant. */
typedef struct tenant_info {
  int line;            /* of its section header */
  int key_line[K_COUNT]; /* where each key was set; 0: not set */
} tenant_info;

enum section_kind { SEC_NONE, SEC_BAD, SEC_TENANT, SEC_DEFAULTS, SEC_DENY };

typedef struct parser {
  /* the reader */
  const char *src;
  size_t pos, len;
  int line;
  const char *file; /* for messages */
  /* the section being read */
  enum section_kind sec;
  size_t cur; /* SEC_TENANT: index */
  /* what was read */
  gl_tenants *out;
  size_t cap;
  tenant_info *info;
  size_t tokens_cap;
  int defaults_line;
  int defaults_key_line[K_COUNT];
  /* the first error */
  int err_line; /* 0: none */
  bool oom;
  char msg[512];
} parser;

void gl_quota_limits_unlimited(gl_quota_limits *out) {
  out->vram_bytes = UINT64_MAX;
  out->leases = UINT32_MAX;
  out->sessions = UINT32_MAX;
  out->max_ttl_s = UINT32_MAX;
  out->gpu_seconds_per_hour = UINT64_MAX;
}

/* Records an error at `line` unless one at an earlier line is known. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void fail(parser *p, int line, const char *fmt, ...) {
  if (p->err_line && p->err_line <= line) return;
  p->err_line = line;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->msg, sizeof p->msg, fmt, ap);
  va_end(ap);
}

/* Copies at most 64 bytes of s for a message, '?' for what is not printable
 * ASCII. out has 68 bytes. */
static const char *shown(const char *s, size_t n, char out[68]) {
  size_t k = 0;
  for (size_t i = 0; i < n && s[i]; i++) {
    if (k == 64) {
      memcpy(out + k, "...", 3);
      k += 3;
      break;
    }
    unsigned char c = (unsigned char)s[i];
    out[k++] = (c >= 0x20 && c <= 0x7e) ? (char)c : '?';
  }
  out[k] = 0;
  return out;
}

static bool printable(unsigned char c) { return c >= 0x20 && c <= 0x7e; }

bool gl_tenant_name_valid(const char *name) {
  if (!name) return false;
  size_t n = strnlen(name, GL_TENANT_NAME_MAX + 1);
  if (n == 0 || n > GL_TENANT_NAME_MAX) return false;
  if (name[0] == ' ' || name[n - 1] == ' ') return false;
  for (size_t i = 0; i < n; i++)
    if (!printable((unsigned char)name[i]) || name[i] == ']') return false;
  return true;
}

/* ---- sections ---- */

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

static void begin_tenant(parser *p, const char *name, size_t n) {
  char shown_buf[68];
  char buf[GL_TENANT_NAME_MAX + 2];
  if (n == 0) {
    fail(p, p->line, "[tenant] needs a name: [tenant NAME]");
    return;
  }
  if (n > GL_TENANT_NAME_MAX) {
    fail(p, p->line, "tenant name of %zu bytes (at most %d)", n, GL_TENANT_NAME_MAX);
    return;
  }
  memcpy(buf, name, n);
  buf[n] = 0;
  if (!gl_tenant_name_valid(buf)) {
    fail(p, p->line, "tenant name \"%s\" is not printable ASCII", shown(name, n, shown_buf));
    return;
  }
  gl_tenants *t = p->out;
  if (t->n == GL_TENANTS_MAX) {
    fail(p, p->line, "too many tenants (at most %d)", GL_TENANTS_MAX);
    return;
  }
  if (t->n == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 16;
    gl_tenant *v = realloc(t->v, cap * sizeof *v);
    if (!v) {
      p->oom = true;
      return;
    }
    t->v = v;
    tenant_info *info = realloc(p->info, cap * sizeof *info);
    if (!info) {
      p->oom = true;
      return;
    }
    p->info = info;
    p->cap = cap;
  }
  gl_tenant *te = &t->v[t->n];
  memset(te, 0, sizeof *te);
  memcpy(te->name, buf, n + 1);
  te->listed = true;
  gl_quota_limits_unlimited(&te->limits);
  memset(&p->info[t->n], 0, sizeof p->info[t->n]);
  p->info[t->n].line = p->line;
  p->cur = t->n++;
  p->sec = SEC_TENANT;
}

/* A line that starts with '[' (s, n bytes, no line end). */
static void section_line(parser *p, const char *s, size_t n) {
  char shown_buf[68];
  p->sec = SEC_BAD; /* until proven otherwise: the keys that follow are skipped */
  const char *close = memchr(s, ']', n);
  if (!close) {
    fail(p, p->line, "section header without ']'");
    return;
  }
  const char *rest = close + 1, *end = s + n;
  while (rest < end && is_blank(*rest)) rest++;
  if (rest < end && *rest != ';' && *rest != '#') {
    fail(p, p->line, "unexpected text after ']'");
    return;
  }
  const char *in = s + 1;
  size_t inlen = (size_t)(close - in);
  if (inlen == 8 && memcmp(in, "defaults", 8) == 0) {
    if (p->defaults_line) {
      fail(p, p->line, "duplicate [defaults] (first at line %d)", p->defaults_line);
      return;
    }
    p->defaults_line = p->line;
    p->sec = SEC_DEFAULTS;
    return;
  }
  if (inlen == 4 && memcmp(in, "deny", 4) == 0) {
    p->sec = SEC_DENY;
    return;
  }
  if (inlen >= 6 && memcmp(in, "tenant", 6) == 0 && (inlen == 6 || is_blank(in[6]))) {
    const char *name = in + 6, *nend = close;
    while (name < nend && is_blank(*name)) name++;
    while (nend > name && is_blank(nend[-1])) nend--;
    begin_tenant(p, name, (size_t)(nend - name));
    return;
  }
  fail(p, p->line, "unknown section [%s] (expected [tenant NAME], [defaults] or [deny])",
       shown(in, inlen, shown_buf));
}

/* ---- the reader inih calls for each line ---- */

static char *read_line(char *str, int num, void *stream) {
  parser *p = stream;
  if (p->pos >= p->len) return NULL;
  const char *s = p->src + p->pos;
  const char *nl = memchr(s, '\n', p->len - p->pos);
  size_t n = nl ? (size_t)(nl - s) : p->len - p->pos;
  p->pos += n + (nl ? 1 : 0);
  p->line++;
  if (n > 0 && s[n - 1] == '\r') n--;
  if (p->line == 1 && n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
    s += 3;
    n -= 3;
  }
  while (n > 0 && is_blank(*s)) {
    s++;
    n--;
  }
  str[0] = 0;
  if (n == 0 || *s == ';' || *s == '#') return str;
  if (*s == '[') {
    section_line(p, s, n);
    return str;
  }
  if (n > KEY_LINE_MAX || n + 1 > (size_t)num) {
    fail(p, p->line, "line too long (%zu bytes; at most %d)", n, KEY_LINE_MAX);
    return str;
  }
  memcpy(str, s, n);
  str[n] = 0;
  return str;
}

/* ---- values ---- */

static int parse_bool(const char *v, bool *out) {
  static const char *const yes[] = {"true", "yes", "on", "1"};
  static const char *const no[] = {"false", "no", "off", "0"};
  for (size_t i = 0; i < 4; i++) {
    if (strcmp(v, yes[i]) == 0) {
      *out = true;
      return 0;
    }
    if (strcmp(v, no[i]) == 0) {
      *out = false;
      return 0;
    }
  }
  return -1;
}

/* "90", "90s", "15m", "2h": seconds in 1..UINT32_MAX-1. */
static int parse_duration(const char *v, uint32_t *out) {
  size_t n = strlen(v);
  if (n == 0) return -1;
  uint64_t mul = 1;
  char num[32];
  switch (v[n - 1]) {
  case 's': mul = 1; n--; break;
  case 'm': mul = 60; n--; break;
  case 'h': mul = 3600; n--; break;
  default: break;
  }
  if (n == 0 || n >= sizeof num) return -1;
  memcpy(num, v, n);
  num[n] = 0;
  uint64_t x;
  if (gl_parse_u64(num, UINT32_MAX, &x) != 0) return -1;
  x *= mul;
  if (x == 0 || x >= UINT32_MAX) return -1;
  *out = (uint32_t)x;
  return 0;
}

static void add_token(parser *p, const char *v) {
  size_t n = strlen(v);
  if (n < GL_TENANT_TOKEN_MIN) {
    fail(p, p->line, "token too short (%zu bytes; at least %d)", n, GL_TENANT_TOKEN_MIN);
    return;
  }
  if (n > GL_TENANT_TOKEN_MAX) {
    fail(p, p->line, "token too long (%zu bytes; at most %d)", n, GL_TENANT_TOKEN_MAX);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    if (!printable((unsigned char)v[i]) || v[i] == ' ') {
      fail(p, p->line, "token byte %zu is not printable ASCII or is a space", i + 1);
      return;
    }
  }
  gl_tenants *t = p->out;
  if (t->ntokens == p->tokens_cap) {
    size_t cap = p->tokens_cap ? p->tokens_cap * 2 : 16;
    token_rec *r = realloc(t->tokens, cap * sizeof *r);
    if (!r) {
      p->oom = true;
      return;
    }
    t->tokens = r;
    p->tokens_cap = cap;
  }
  token_rec *r = &t->tokens[t->ntokens++];
  crypto_hash_sha256(r->digest, (const unsigned char *)v, n);
  r->tenant = (uint32_t)p->cur;
  r->line = p->line;
}

/* Parses a quota value into the limits; false (with an error) when bad. */
static bool quota_value(parser *p, enum key_id k, const char *v, gl_quota_limits *l) {
  char shown_buf[68];
  bool unlimited = strcmp(v, "unlimited") == 0;
  uint64_t x;
  switch (k) {
  case K_VRAM:
    if (unlimited) {
      l->vram_bytes = UINT64_MAX;
      return true;
    }
    if (gl_parse_size(v, &x) == 0) {
      l->vram_bytes = x;
      return true;
    }
    fail(p, p->line,
         "bad vram \"%s\": expected bytes such as 8589934592, 512M, 16GiB, 10GB, or unlimited",
         shown(v, strlen(v), shown_buf));
    return false;
  case K_LEASES:
  case K_SESSIONS:
    if (unlimited) {
      x = UINT32_MAX;
    } else if (gl_parse_u64(v, UINT32_MAX, &x) != 0) {
      fail(p, p->line, "bad %s \"%s\": expected a whole number 0..%u, or unlimited",
           key_names[k], shown(v, strlen(v), shown_buf), UINT32_MAX);
      return false;
    }
    if (k == K_LEASES)
      l->leases = (uint32_t)x;
    else
      l->sessions = (uint32_t)x;
    return true;
  case K_MAX_TTL: {
    uint32_t s;
    if (unlimited) {
      l->max_ttl_s = UINT32_MAX;
      return true;
    }
    if (parse_duration(v, &s) == 0) {
      l->max_ttl_s = s;
      return true;
    }
    fail(p, p->line,
         "bad max_ttl \"%s\": expected seconds (1 or more) such as 3600, 90s, 15m, 2h, or "
         "unlimited",
         shown(v, strlen(v), shown_buf));
    return false;
  }
  case K_GPU_SECONDS:
    if (unlimited) {
      l->gpu_seconds_per_hour = UINT64_MAX;
      return true;
    }
    if (gl_parse_u64(v, UINT64_MAX, &x) == 0) {
      l->gpu_seconds_per_hour = x;
      return true;
    }
    fail(p, p->line, "bad gpu_seconds_per_hour \"%s\": expected a whole number, or unlimited",
         shown(v, strlen(v), shown_buf));
    return false;
  default: return false;
  }
}

/* v as hex digits, ':' between them ignored, into lower case (without
 * leading zeros when strip): 0, or -1 when v has another byte, no digit,
 * or more than max digits. out has max + 1 bytes. */
static int hex_normalise(const char *v, bool strip, size_t max, char *out) {
  size_t n = 0;
  bool digit = false;
  for (; *v; v++) {
    if (*v == ':') continue;
    if (!isxdigit((unsigned char)*v)) return -1;
    digit = true;
    if (strip && n == 0 && *v == '0') continue;
    if (n == max) return -1;
    out[n++] = (char)tolower((unsigned char)*v);
  }
  if (!digit) return -1;
  if (n == 0) out[n++] = '0';
  out[n] = 0;
  return 0;
}

/* A key of [deny]: fingerprint = 64 hex digits, serial = 1..40. */
static int deny_key(parser *p, const char *name, const char *value) {
  char shown_buf[68], hex[65];
  gl_tenants *t = p->out;
  gl_deny_kind k;
  if (strcmp(name, "fingerprint") == 0) {
    k = GL_DENY_FINGERPRINT;
    if (hex_normalise(value, false, 64, hex) != 0 || strlen(hex) != 64) {
      fail(p, p->line,
           "bad fingerprint \"%s\": expected a certificate's SHA-256, 64 hex digits (':' "
           "between bytes allowed)",
           shown(value, strlen(value), shown_buf));
      return 0;
    }
  } else if (strcmp(name, "serial") == 0) {
    k = GL_DENY_SERIAL;
    if (hex_normalise(value, true, 40, hex) != 0) {
      fail(p, p->line,
           "bad serial \"%s\": expected a certificate's serial number, 1 to 40 hex digits "
           "(':' between bytes allowed)",
           shown(value, strlen(value), shown_buf));
      return 0;
    }
  } else {
    fail(p, p->line, "unknown key \"%s\" in [deny] (expected fingerprint or serial)",
         shown(name, strlen(name), shown_buf));
    return 0;
  }
  if (t->ndeny[k] == t->deny_cap[k]) {
    size_t cap = t->deny_cap[k] ? t->deny_cap[k] * 2 : 8;
    char **v = realloc(t->deny[k], cap * sizeof *v);
    if (!v) {
      p->oom = true;
      return 0;
    }
    t->deny[k] = v;
    t->deny_cap[k] = cap;
  }
  if (!(t->deny[k][t->ndeny[k]] = strdup(hex))) {
    p->oom = true;
    return 0;
  }
  t->ndeny[k]++;
  return 1;
}

/* inih's handler: one key line. section is inih's (always "": the reader
 * hides section lines from it). Returns 0 on error (inih then reports this
 * line, which fail() has already recorded). */
static int on_key(void *user, const char *section, const char *name, const char *value) {
  (void)section;
  parser *p = user;
  char shown_buf[68];
  if (p->oom) return 0;
  if (p->sec == SEC_BAD) return 1; /* the section's own error is reported */
  if (p->sec == SEC_NONE) {
    fail(p, p->line, "key \"%s\" outside a section (start with [tenant NAME] or [defaults])",
         shown(name, strlen(name), shown_buf));
    return 0;
  }
  if (p->sec == SEC_DENY) return deny_key(p, name, value);
  int k = -1;
  for (int i = 0; i < K_COUNT; i++)
    if (strcmp(name, key_names[i]) == 0) k = i;
  if (k < 0) {
    fail(p, p->line,
         "unknown key \"%s\" (expected token, vram, leases, sessions, max_ttl, "
         "gpu_seconds_per_hour or admin)",
         shown(name, strlen(name), shown_buf));
    return 0;
  }
  if (p->sec == SEC_DEFAULTS && (k == K_TOKEN || k == K_ADMIN)) {
    fail(p, p->line, "%s is not allowed in [defaults], only in [tenant NAME]", key_names[k]);
    return 0;
  }
  int *key_line = p->sec == SEC_DEFAULTS ? &p->defaults_key_line[k] : &p->info[p->cur].key_line[k];
  if (k != K_TOKEN && *key_line) {
    fail(p, p->line, "duplicate key %s (first at line %d)", key_names[k], *key_line);
    return 0;
  }
  if (!*key_line) *key_line = p->line;
  if (k == K_TOKEN) {
    int before = p->err_line;
    add_token(p, value);
    return p->err_line == before && !p->oom;
  }
  if (k == K_ADMIN) {
    bool b;
    if (parse_bool(value, &b) != 0) {
      fail(p, p->line, "bad admin \"%s\": expected true or false",
           shown(value, strlen(value), shown_buf));
      return 0;
    }
    p->out->v[p->cur].admin = b;
    return 1;
  }
  gl_quota_limits *l = p->sec == SEC_DEFAULTS ? &p->out->defaults : &p->out->v[p->cur].limits;
  return quota_value(p, (enum key_id)k, value, l) ? 1 : 0;
}

/* ---- after the last line ---- */

static int cmp_name_then_line(const void *a, const void *b, void *ctx) {
  const parser *p = ctx;
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  int c = strcmp(p->out->v[i].name, p->out->v[j].name);
  if (c) return c;
  return (p->info[i].line > p->info[j].line) - (p->info[i].line < p->info[j].line);
}

static int cmp_token(const void *a, const void *b) {
  const token_rec *x = a, *y = b;
  int c = memcmp(x->digest, y->digest, DIGEST_BYTES);
  if (c) return c;
  return (x->line > y->line) - (x->line < y->line);
}

/* Finds duplicate tenants and tokens (sorting), builds the name index and
 * applies [defaults]. qsort_r is glibc's (_GNU_SOURCE). */
static void finish(parser *p) {
  gl_tenants *t = p->out;
  if (t->n) {
    t->by_name = malloc(t->n * sizeof *t->by_name);
    if (!t->by_name) {
      p->oom = true;
      return;
    }
    for (size_t i = 0; i < t->n; i++) t->by_name[i] = (uint32_t)i;
    qsort_r(t->by_name, t->n, sizeof *t->by_name, cmp_name_then_line, p);
    for (size_t i = 1, first = 0; i < t->n; i++) {
      const gl_tenant *a = &t->v[t->by_name[first]], *b = &t->v[t->by_name[i]];
      if (strcmp(a->name, b->name) == 0) {
        char shown_buf[68];
        fail(p, p->info[t->by_name[i]].line, "duplicate tenant %s (first at line %d)",
             shown(b->name, strlen(b->name), shown_buf), p->info[t->by_name[first]].line);
      } else {
        first = i;
      }
    }
  }
  if (t->ntokens) {
    qsort(t->tokens, t->ntokens, sizeof *t->tokens, cmp_token);
    for (size_t i = 1; i < t->ntokens; i++) {
      const token_rec *a = &t->tokens[i - 1], *b = &t->tokens[i];
      if (memcmp(a->digest, b->digest, DIGEST_BYTES) == 0) {
        char shown_buf[68];
        fail(p, b->line, "duplicate token: tenant %s has it already (line %d)",
             shown(t->v[a->tenant].name, strlen(t->v[a->tenant].name), shown_buf), a->line);
      }
    }
  }
  /* [defaults] fills in what a tenant leaves out */
  const gl_quota_limits *d = &t->defaults;
  for (size_t i = 0; i < t->n; i++) {
    gl_quota_limits *l = &t->v[i].limits;
    const int *kl = p->info[i].key_line;
    if (!kl[K_VRAM]) l->vram_bytes = d->vram_bytes;
    if (!kl[K_LEASES]) l->leases = d->leases;
    if (!kl[K_SESSIONS]) l->sessions = d->sessions;
    if (!kl[K_MAX_TTL]) l->max_ttl_s = d->max_ttl_s;
    if (!kl[K_GPU_SECONDS]) l->gpu_seconds_per_hour = d->gpu_seconds_per_hour;
  }
}

static gl_tenants *parse_n(const char *text, size_t len, const char *file, char *err,
                           size_t errlen) {
  if (errlen) err[0] = 0;
  if (!file) file = "tenants";
  if (sodium_init() < 0) {
    if (errlen) snprintf(err, errlen, "%s: libsodium failed to initialize", file);
    return NULL;
  }
  parser p = {.src = text, .len = len, .file = file, .sec = SEC_NONE};
  p.out = calloc(1, sizeof *p.out);
  if (!p.out) {
    if (errlen) snprintf(err, errlen, "out of memory");
    return NULL;
  }
  gl_quota_limits_unlimited(&p.out->defaults);
  int r = ini_parse_stream(read_line, &p, on_key, &p);
  if (r > 0 && (!p.err_line || r < p.err_line))
    fail(&p, r, "expected key = value, [tenant NAME], [defaults] or [deny]");
  if (r < 0) p.oom = true; /* -2: inih could not allocate its line */
  if (!p.oom) finish(&p); /* even after an error: a duplicate may come before it */
  free(p.info);
  if (p.oom || p.err_line) {
    if (errlen) {
      if (p.oom)
        snprintf(err, errlen, "out of memory");
      else
        snprintf(err, errlen, "%s:%d: %s", file, p.err_line, p.msg);
    }
    gl_tenants_free(p.out);
    return NULL;
  }
  for (size_t i = 0; i < p.out->ntokens; i++) p.out->tokens[i].line = 0;
  return p.out;
}

gl_tenants *gl_tenants_parse(const char *text, const char *name_for_errors, char *err,
                             size_t errlen) {
  if (!text) text = "";
  return parse_n(text, strlen(text), name_for_errors, err, errlen);
}

gl_tenants *gl_tenants_load(const char *path, char *err, size_t errlen) {
  if (errlen) err[0] = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errlen) snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return NULL;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    if (errlen) snprintf(err, errlen, "%s: %s", path, strerror(errno));
    close(fd);
    return NULL;
  }
  if (!S_ISREG(st.st_mode)) {
    if (errlen) snprintf(err, errlen, "%s: not a regular file", path);
    close(fd);
    return NULL;
  }
  if ((uint64_t)st.st_size > GL_TENANTS_FILE_MAX) {
    if (errlen) snprintf(err, errlen, "%s: larger than %u bytes", path, GL_TENANTS_FILE_MAX);
    close(fd);
    return NULL;
  }
  size_t cap = (size_t)st.st_size + 1, n = 0; /* +1: sees growth, then the NUL */
  char *buf = malloc(cap + 1);
  if (!buf) {
    if (errlen) snprintf(err, errlen, "out of memory");
    close(fd);
    return NULL;
  }
  for (;;) {
    ssize_t got = read(fd, buf + n, cap - n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      if (errlen) snprintf(err, errlen, "%s: %s", path, strerror(errno));
      sodium_memzero(buf, n);
      free(buf);
      close(fd);
      return NULL;
    }
    if (got == 0) break;
    n += (size_t)got;
    if (n == cap) { /* grew while we read */
      if (errlen) snprintf(err, errlen, "%s: changed while being read", path);
      sodium_memzero(buf, n);
      free(buf);
      close(fd);
      return NULL;
    }
  }
  close(fd);
  buf[n] = 0;
  gl_tenants *t = NULL;
  const char *nul = memchr(buf, 0, n);
  if (nul) {
    int line = 1;
    for (const char *c = buf; c < nul; c++) line += *c == '\n';
    if (errlen) snprintf(err, errlen, "%s:%d: NUL byte", path, line);
  } else {
    t = parse_n(buf, n, path, err, errlen);
  }
  sodium_memzero(buf, n);
  free(buf);
  return t;
}

void gl_tenants_free(gl_tenants *t) {
  if (!t) return;
  if (t->tokens) sodium_memzero(t->tokens, t->ntokens * sizeof *t->tokens);
  free(t->tokens);
  free(t->by_name);
  free(t->v);
  for (int k = 0; k < 2; k++) {
    for (size_t i = 0; i < t->ndeny[k]; i++) free(t->deny[k][i]);
    free(t->deny[k]);
  }
  free(t);
}

const gl_tenant *gl_tenants_by_token(const gl_tenants *t, const char *token, size_t len) {
  if (!t || (!token && len)) return NULL;
  uint8_t d[DIGEST_BYTES];
  crypto_hash_sha256(d, (const unsigned char *)(token ? token : ""), len);
  uint32_t found = 0, idx = 0;
  for (size_t i = 0; i < t->ntokens; i++) {
    /* sodium_memcmp: 0 when equal, -1 otherwise, in constant time */
    uint32_t eq = (uint32_t)(sodium_memcmp(d, t->tokens[i].digest, DIGEST_BYTES) + 1);
    uint32_t mask = 0u - eq; /* all ones when equal */
    found |= mask;
    idx |= mask & t->tokens[i].tenant; /* digests are unique: at most one match */
  }
  sodium_memzero(d, sizeof d);
  return found ? &t->v[idx] : NULL;
}

const gl_tenant *gl_tenants_lookup(const gl_tenants *t, const char *name, gl_tenant *scratch) {
  if (!t || !gl_tenant_name_valid(name)) return NULL;
  size_t lo = 0, hi = t->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const gl_tenant *m = &t->v[t->by_name[mid]];
    int c = strcmp(name, m->name);
    if (c == 0) return m;
    if (c < 0)
      hi = mid;
    else
      lo = mid + 1;
  }
  if (!scratch) return NULL;
  memset(scratch, 0, sizeof *scratch);
  snprintf(scratch->name, sizeof scratch->name, "%s", name);
  scratch->limits = t->defaults;
  scratch->admin = false;
  scratch->listed = false;
  return scratch;
}

size_t gl_tenants_count(const gl_tenants *t) { return t ? t->n : 0; }

const gl_tenant *gl_tenants_at(const gl_tenants *t, size_t i) {
  return t && i < t->n ? &t->v[i] : NULL;
}

const gl_quota_limits *gl_tenants_defaults(const gl_tenants *t) { return &t->defaults; }

size_t gl_tenants_deny_count(const gl_tenants *t, gl_deny_kind k) {
  return t && (unsigned)k < 2 ? t->ndeny[k] : 0;
}

const char *gl_tenants_deny_at(const gl_tenants *t, gl_deny_kind k, size_t i) {
  return t && (unsigned)k < 2 && i < t->ndeny[k] ? t->deny[k][i] : NULL;
}
