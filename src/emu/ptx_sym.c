/*
 * ptx_sym.c - the PTX parser's scoped name table.
 *
 * A hash table of chains whose entries live in one array in the order they
 * were added. Scopes are stack marks: leaving a block drops every entry
 * added since its mark and restores the bucket heads, so a name declared
 * in an inner block shadows an outer one and disappears with its block.
 */
#include <stdlib.h>
#include <string.h>

#include "emu/ptx_internal.h"

#define SYM_END UINT32_MAX

static uint32_t name_hash(const char *s, uint32_t n) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (uint32_t i = 0; i < n; i++) {
    h ^= (uint8_t)s[i];
    h *= 16777619u;
  }
  return h;
}

static int rehash(gl_ptx_symtab *t, uint32_t nbucket) {
  uint32_t *b = malloc((size_t)nbucket * sizeof *b);
  if (!b) return -1;
  memset(b, 0xff, (size_t)nbucket * sizeof *b);
  /* Re-linking in insertion order keeps newer entries in front. */
  for (uint32_t i = 0; i < t->n; i++) {
    uint32_t h = t->v[i].hash & (nbucket - 1);
    t->v[i].next = b[h];
    b[h] = i;
  }
  free(t->bucket);
  t->bucket = b;
  t->nbucket = nbucket;
  return 0;
}

int gl_ptx_symtab_add(gl_ptx_symtab *t, const gl_ptx_sym *s) {
  if (t->n == t->cap) {
    uint32_t cap = t->cap ? t->cap * 2 : 64;
    if (cap > (1u << 28)) return -1;
    gl_ptx_sym *v = realloc(t->v, (size_t)cap * sizeof *v);
    if (!v) return -1;
    t->v = v;
    t->cap = cap;
  }
  if (t->n + 1 > t->nbucket / 2 + t->nbucket / 4 || t->nbucket == 0) {
    if (rehash(t, t->nbucket ? t->nbucket * 2 : 128) < 0) return -1;
  }
  gl_ptx_sym *e = &t->v[t->n];
  *e = *s;
  e->hash = name_hash(s->name, s->len);
  uint32_t h = e->hash & (t->nbucket - 1);
  e->next = t->bucket[h];
  t->bucket[h] = t->n;
  t->n++;
  return 0;
}

gl_ptx_sym *gl_ptx_symtab_find(const gl_ptx_symtab *t, const char *name, uint32_t len) {
  if (t->nbucket == 0) return NULL;
  uint32_t hv = name_hash(name, len);
  for (uint32_t i = t->bucket[hv & (t->nbucket - 1)]; i != SYM_END; i = t->v[i].next) {
    gl_ptx_sym *e = &t->v[i];
    if (e->hash == hv && e->len == len && memcmp(e->name, name, len) == 0) return e;
  }
  return NULL;
}

void gl_ptx_symtab_pop(gl_ptx_symtab *t, uint32_t mark) {
  while (t->n > mark) {
    gl_ptx_sym *e = &t->v[--t->n];
    t->bucket[e->hash & (t->nbucket - 1)] = e->next;
  }
}

void gl_ptx_symtab_free(gl_ptx_symtab *t) {
  free(t->v);
  free(t->bucket);
  memset(t, 0, sizeof *t);
}

/* The parser's view of the emulated device's builtins (ptx_ir.h); the
 * executor runs them (kprintf.c). */
int gl_ptx_builtin_kind(const gl_ptx_func *f) {
  static const uint32_t vprintf_sizes[] = {8, 8};
  static const uint32_t assert_sizes[] = {8, 8, 4, 8, 8};
  const uint32_t *sizes;
  uint32_t n;
  int kind;
  if (strcmp(f->name, "vprintf") == 0) {
    sizes = vprintf_sizes, n = 2, kind = GL_PTX_BUILTIN_VPRINTF;
  } else if (strcmp(f->name, "__assertfail") == 0) {
    sizes = assert_sizes, n = 5, kind = GL_PTX_BUILTIN_ASSERTFAIL;
  } else {
    return 0;
  }
  if (f->nparams != n)
    return 0;
  for (uint32_t i = 0; i < n; i++)
    if (f->params[i].size != sizes[i])
      return 0;
  if (kind == GL_PTX_BUILTIN_VPRINTF && f->ret_off >= 0 && f->ret_size != 4)
    return 0;
  return kind;
}
