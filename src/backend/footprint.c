/*
 * footprint.c - see footprint.h: the PTX declarations scanner, the cubin
 * section sums, and the fatbin's pick.
 */
#include "backend/footprint.h"

#include <elf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/fatbin.h"

#define FATBIN_MAGIC 0xBA55ED50u

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t align_up(uint64_t v, uint64_t a) {
  if (a <= 1 || v == UINT64_MAX) return v;
  uint64_t r = v % a;
  return r ? sat_add(v, a - r) : v;
}

uint64_t gl_footprint_total(const gl_footprint *f) {
  return sat_add(sat_add(f->global_bytes, f->const_bytes), f->code_bytes);
}

/* ======================================================================
 * PTX
 * ==================================================================== */

#define HEAD_MAX 1024 /* a declaration's text before its '=' or ';' */
#define TOK_MAX 64

/* Bytes of a PTX fundamental type (".u32"), 8 for the opaque handle types,
 * 0 for anything else. */
static uint64_t type_bytes(const char *t) {
  static const struct {
    const char *name;
    uint8_t bytes;
  } k[] = {{".b8", 1},  {".u8", 1},   {".s8", 1},   {".b16", 2},    {".u16", 2},
           {".s16", 2}, {".f16", 2},  {".bf16", 2}, {".f16x2", 4},  {".bf16x2", 4},
           {".b32", 4}, {".u32", 4},  {".s32", 4},  {".f32", 4},    {".b64", 8},
           {".u64", 8}, {".s64", 8},  {".f64", 8},  {".b128", 16},  {".texref", 8},
           {".samplerref", 8}, {".surfref", 8}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if (strcmp(t, k[i].name) == 0) return k[i].bytes;
  return 0;
}

/* Splits head into tokens: runs of other characters, and each of , [ ]
 * alone, written NUL-separated into buf (2 * HEAD_MAX + 1 bytes). At most
 * TOK_MAX tokens. */
static size_t tokenize(const char *head, char *buf, const char **tok) {
  size_t n = 0, o = 0;
  bool in_tok = false;
  for (const char *p = head; *p && n < TOK_MAX; p++) {
    if (*p == ' ') {
      if (in_tok) buf[o++] = 0;
      in_tok = false;
    } else if (*p == ',' || *p == '[' || *p == ']') {
      if (in_tok) buf[o++] = 0;
      in_tok = false;
      tok[n++] = buf + o;
      buf[o++] = *p;
      buf[o++] = 0;
    } else {
      if (!in_tok) tok[n++] = buf + o;
      in_tok = true;
      buf[o++] = *p;
    }
  }
  buf[o] = 0;
  return n;
}

/* Adds the declaration in head (collapsed text before '=' or ';') to f.
 * leaves: the initializer's scalar elements (0 without one). What does
 * not read as a declaration of .global or .const storage adds nothing. */
static void ptx_decl(const char *head, uint64_t leaves, gl_footprint *f) {
  char buf[2 * HEAD_MAX + 1];
  const char *tok[TOK_MAX];
  size_t n = tokenize(head, buf, tok), i = 0;
  while (i < n && (!strcmp(tok[i], ".visible") || !strcmp(tok[i], ".weak") ||
                   !strcmp(tok[i], ".common") || !strcmp(tok[i], ".extern"))) {
    if (!strcmp(tok[i], ".extern")) return; /* defined in another module */
    i++;
  }
  if (i >= n) return;
  uint64_t *bucket;
  if (!strcmp(tok[i], ".global")) bucket = &f->global_bytes;
  else if (!strcmp(tok[i], ".const")) bucket = &f->const_bytes;
  else return;
  i++;
  uint64_t align = 1, vec = 1, esize = 0;
  for (; i < n && tok[i][0] == '.'; i++) {
    if (!strcmp(tok[i], ".align") && i + 1 < n) align = strtoull(tok[++i], NULL, 0);
    else if (!strcmp(tok[i], ".v2")) vec = 2;
    else if (!strcmp(tok[i], ".v4")) vec = 4;
    else if (!strcmp(tok[i], ".v8")) vec = 8;
    else if (type_bytes(tok[i])) esize = type_bytes(tok[i]);
    /* .attribute(.managed), .ptr.*: no bearing on the size */
  }
  if (esize == 0) return;
  esize *= vec;
  if (align < esize) align = esize;
  /* Declarators: name [dims] (, name [dims])* */
  while (i < n) {
    if (!strcmp(tok[i], ",")) {
      i++;
      continue;
    }
    i++; /* the name */
    uint64_t count = 1;
    bool unsized = false;
    while (i < n && !strcmp(tok[i], "[")) {
      if (i + 1 < n && !strcmp(tok[i + 1], "]")) {
        unsized = true;
        i += 2;
        continue;
      }
      if (i + 1 < n) count = sat_mul(count, strtoull(tok[i + 1], NULL, 0));
      i += 2;
      if (i < n && !strcmp(tok[i], "]")) i++;
    }
    if (unsized) count = count ? sat_mul(count, (leaves + count - 1) / count) : 0;
    uint64_t size = sat_mul(count, esize);
    *bucket = sat_add(align_up(*bucket, align), size);
    if (i < n && strcmp(tok[i], ",") != 0) return; /* something we do not understand */
  }
}

typedef struct ptx_scan {
  char head[HEAD_MAX + 1];
  size_t hlen;
  bool overflow; /* the head did not fit: not a declaration we count */
  bool in_init;  /* after '=' */
  uint64_t commas;
} ptx_scan;

static void head_put(ptx_scan *s, char c) {
  if (s->in_init) return;
  if (c == ' ' && (s->hlen == 0 || s->head[s->hlen - 1] == ' ')) return;
  if (s->hlen == HEAD_MAX) {
    s->overflow = true;
    return;
  }
  s->head[s->hlen++] = c;
}

static void stmt_end(ptx_scan *s, gl_footprint *f, bool counts) {
  if (counts && !s->overflow && s->hlen) {
    s->head[s->hlen] = 0;
    ptx_decl(s->head, s->in_init ? s->commas + 1 : 0, f);
  }
  s->hlen = 0;
  s->overflow = s->in_init = false;
  s->commas = 0;
}

/* Whether the head so far is a directive that ends with its line, not
 * with ';' (.version, .target, .address_size, .file, .loc). */
static bool line_directive(const ptx_scan *s) {
  static const char *const k[] = {".version", ".target", ".address_size", ".file", ".loc"};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    size_t n = strlen(k[i]);
    if (s->hlen > n && memcmp(s->head, k[i], n) == 0 && s->head[n] == ' ') return true;
  }
  return false;
}

static void ptx_footprint(const uint8_t *text, size_t len, gl_footprint *f) {
  ptx_scan *s = calloc(1, sizeof *s);
  if (!s) return;
  int init_depth = 0;
  for (size_t i = 0; i < len && text[i]; i++) {
    char c = (char)text[i];
    if (c == '/' && i + 1 < len && text[i + 1] == '/') {
      while (i < len && text[i] != '\n') i++;
      head_put(s, ' ');
      continue;
    }
    if (c == '/' && i + 1 < len && text[i + 1] == '*') {
      for (i += 2; i + 1 < len && !(text[i] == '*' && text[i + 1] == '/'); i++) {
      }
      i++;
      head_put(s, ' ');
      continue;
    }
    if (c == '"') {
      for (i++; i < len && text[i] != '"'; i++) {
      }
      head_put(s, ' ');
      continue;
    }
    if (s->in_init) {
      if (c == '{') init_depth++;
      else if (c == '}') init_depth--;
      else if (c == ',') s->commas++;
      else if (c == ';' && init_depth <= 0) {
        stmt_end(s, f, true);
        init_depth = 0;
      }
      continue;
    }
    switch (c) {
    case ';':
      stmt_end(s, f, true);
      break;
    case '=':
      s->in_init = true;
      init_depth = 0;
      break;
    case '{':
    case '}':
      stmt_end(s, f, false); /* a function's header or the end of its body */
      break;
    case '\n':
      if (line_directive(s)) stmt_end(s, f, false);
      else head_put(s, ' ');
      break;
    case '\r':
    case '\t':
      head_put(s, ' ');
      break;
    default:
      head_put(s, c);
    }
  }
  free(s);
}

/* ======================================================================
 * cubin
 * ==================================================================== */

static int cubin_footprint(const uint8_t *b, size_t n, gl_footprint *f, char *err, size_t errlen) {
  Elf64_Ehdr eh;
  if (n < sizeof eh || memcmp(b, ELFMAG, SELFMAG) != 0 || b[EI_CLASS] != ELFCLASS64) {
    snprintf(err, errlen, "cubin: not a 64-bit ELF (%zu bytes)", n);
    return -1;
  }
  memcpy(&eh, b, sizeof eh);
  if (eh.e_shnum == 0) return 0;
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > n ||
      (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > n - eh.e_shoff || eh.e_shstrndx >= eh.e_shnum) {
    snprintf(err, errlen, "cubin: its section table is out of the file (%zu bytes)", n);
    return -1;
  }
  Elf64_Shdr st;
  memcpy(&st, b + eh.e_shoff + (size_t)eh.e_shstrndx * sizeof st, sizeof st);
  if (st.sh_offset > n || st.sh_size > n - st.sh_offset) {
    snprintf(err, errlen, "cubin: its section name table is out of the file");
    return -1;
  }
  const char *names = (const char *)b + st.sh_offset;
  for (unsigned i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh;
    memcpy(&sh, b + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
    if (sh.sh_name >= st.sh_size || !memchr(names + sh.sh_name, 0, st.sh_size - sh.sh_name))
      continue;
    const char *nm = names + sh.sh_name;
    if (!strcmp(nm, ".nv.global") || !strcmp(nm, ".nv.global.init")) {
      f->global_bytes = sat_add(f->global_bytes, sh.sh_size);
    } else if (!strncmp(nm, ".nv.constant", 12)) {
      const char *q = nm + 12;
      while (*q >= '0' && *q <= '9') q++;
      bool params = nm[12] == '0' && q == nm + 13 && *q == '.'; /* .nv.constant0.<kernel> */
      if (!params && q > nm + 12) f->const_bytes = sat_add(f->const_bytes, sh.sh_size);
    } else if (!strncmp(nm, ".text.", 6)) {
      f->code_bytes = sat_add(f->code_bytes, sh.sh_size);
    }
  }
  return 0;
}

/* ======================================================================
 * fatbin
 * ==================================================================== */

static int entry_footprint(const gl_fatbin_entry *e, gl_footprint *f, char *err, size_t errlen) {
  char *x = gl_fatbin_expand(e, err, errlen);
  if (!x) return -1;
  int rc = 0;
  if (e->kind == GL_FATBIN_PTX) ptx_footprint((const uint8_t *)x, e->expanded_len, f);
  else rc = cubin_footprint((const uint8_t *)x, e->expanded_len, f, err, errlen);
  free(x);
  return rc;
}

static int fatbin_footprint(const uint8_t *image, size_t len, unsigned sm, gl_footprint *f,
                            char *err, size_t errlen) {
  gl_fatbin_entry es[GL_FATBIN_MAX_ENTRIES];
  size_t n = 0;
  if (gl_fatbin_list(image, len, es, GL_FATBIN_MAX_ENTRIES, &n, err, errlen) != 0) return -1;
  if (sm == 0) { /* the largest over every image */
    for (size_t i = 0; i < n; i++) {
      gl_footprint one = {0};
      if (entry_footprint(&es[i], &one, err, errlen) != 0) return -1;
      if (gl_footprint_total(&one) > gl_footprint_total(f)) *f = one;
    }
    return 0;
  }
  const gl_fatbin_entry *best = NULL;
  for (size_t i = 0; i < n; i++) { /* a cubin of this SM, or of its major below it */
    const gl_fatbin_entry *e = &es[i];
    if (e->kind != GL_FATBIN_CUBIN || e->arch / 10 != sm / 10 || e->arch > sm) continue;
    if (!best || e->arch > best->arch) best = e;
  }
  for (size_t i = 0; !best && i < n; i++) { /* else the PTX the JIT would compile */
    const gl_fatbin_entry *e = &es[i];
    if (e->kind == GL_FATBIN_PTX && e->arch <= sm) {
      const gl_fatbin_entry *b2 = e;
      for (size_t k = i + 1; k < n; k++)
        if (es[k].kind == GL_FATBIN_PTX && es[k].arch <= sm && es[k].arch > b2->arch) b2 = &es[k];
      best = b2;
    }
  }
  if (!best) {
    char what[256];
    gl_fatbin_describe(image, len, what, sizeof what);
    snprintf(err, errlen, "fatbin: no image for sm_%u in it (it holds: %s)", sm, what);
    return -1;
  }
  return entry_footprint(best, f, err, errlen);
}

int gl_footprint_of(const uint8_t *image, size_t len, gpulease_image_format fmt, unsigned sm,
                    gl_footprint *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (fmt == GPULEASE_IMAGE_AUTO) {
    uint32_t m = 0;
    if (len >= 4) memcpy(&m, image, 4);
    if (len >= SELFMAG && memcmp(image, ELFMAG, SELFMAG) == 0) fmt = GPULEASE_IMAGE_CUBIN;
    else if (m == FATBIN_MAGIC) fmt = GPULEASE_IMAGE_FATBIN;
    else fmt = GPULEASE_IMAGE_PTX;
  }
  switch (fmt) {
  case GPULEASE_IMAGE_CUBIN:
    return cubin_footprint(image, len, out, err, errlen);
  case GPULEASE_IMAGE_FATBIN:
    return fatbin_footprint(image, len, sm, out, err, errlen);
  default:
    ptx_footprint(image, len, out);
    return 0;
  }
}
