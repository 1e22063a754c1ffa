/* hmap.c - see hmap.h. Linear probing; grows at 50% occupancy. */
#include "common/hmap.h"

#include <stdlib.h>

#define DELETED UINT64_MAX

static size_t slot_of(uint64_t key, size_t cap) {
  key ^= key >> 33; /* handles are random already; mix anyway */
  key *= 0xff51afd7ed558ccdull;
  key ^= key >> 33;
  return (size_t)key & (cap - 1);
}

void gl_hmap_init(gl_hmap *m) {
  m->keys = NULL;
  m->vals = NULL;
  m->cap = m->count = m->used = 0;
}

void gl_hmap_free(gl_hmap *m) {
  free(m->keys);
  free(m->vals);
  gl_hmap_init(m);
}

void *gl_hmap_get(const gl_hmap *m, uint64_t key) {
  if (!m->cap || key == 0 || key == DELETED) return NULL;
  for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (m->keys[i] == key) return m->vals[i];
    if (m->keys[i] == 0) return NULL;
  }
}

static int grow(gl_hmap *m) {
  size_t ncap = m->cap ? m->cap * 2 : 16;
  if (m->count * 4 < m->cap) ncap = m->cap; /* mostly tombstones: rehash */
  uint64_t *nk = calloc(ncap, sizeof *nk);
  void **nv = calloc(ncap, sizeof *nv);
  if (!nk || !nv) {
    free(nk);
    free(nv);
    return -1;
  }
  for (size_t i = 0; i < m->cap; i++) {
    uint64_t k = m->keys[i];
    if (k == 0 || k == DELETED) continue;
    size_t j = slot_of(k, ncap);
    while (nk[j]) j = (j + 1) & (ncap - 1);
    nk[j] = k;
    nv[j] = m->vals[i];
  }
  free(m->keys);
  free(m->vals);
  m->keys = nk;
  m->vals = nv;
  m->cap = ncap;
  m->used = m->count;
  return 0;
}

int gl_hmap_put(gl_hmap *m, uint64_t key, void *val) {
  if (key == 0 || key == DELETED) return -1;
  if ((m->used + 1) * 2 > m->cap && grow(m) != 0) return -1;
  size_t i = slot_of(key, m->cap);
  while (m->keys[i] != 0 && m->keys[i] != DELETED) i = (i + 1) & (m->cap - 1);
  if (m->keys[i] == 0) m->used++;
  m->keys[i] = key;
  m->vals[i] = val;
  m->count++;
  return 0;
}

void *gl_hmap_del(gl_hmap *m, uint64_t key) {
  if (!m->cap || key == 0 || key == DELETED) return NULL;
  for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (m->keys[i] == key) {
      void *v = m->vals[i];
      m->keys[i] = DELETED;
      m->vals[i] = NULL;
      m->count--;
      return v;
    }
    if (m->keys[i] == 0) return NULL;
  }
}

bool gl_hmap_next(const gl_hmap *m, size_t *pos, uint64_t *key, void **val) {
  while (*pos < m->cap) {
    size_t i = (*pos)++;
    if (m->keys[i] != 0 && m->keys[i] != DELETED) {
      *key = m->keys[i];
      *val = m->vals[i];
      return true;
    }
  }
  return false;
}
