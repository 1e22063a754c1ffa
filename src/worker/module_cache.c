/* module_cache.c - GPU_SUBMIT's modules over the lease's module table: see
 * module_cache.h. */
#include "worker/module_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/counters.h"
#include "worker/session.h"

uint64_t gl_fnv1a64(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

void gl_module_cache_init(gl_module_cache *c, gl_modtab *t) {
  memset(c, 0, sizeof *c);
  c->modtab = t;
}

/* Frees an entry's functions and copy, and empties the slot. */
static void drop(gl_module_cache *c, gl_module_entry *e) {
  for (gl_wfunction *f = e->funcs; f;) {
    gl_wfunction *n = f->next;
    free(f);
    f = n;
  }
  c->bytes -= e->len;
  free(e->image);
  memset(e, 0, sizeof *e);
}

static void evict(gl_module_cache *c, gl_module_entry *e) {
  if (!e->image) return;
  gl_modtab_release(c->modtab, e->module);
  drop(c, e);
}

void gl_module_cache_clear(gl_module_cache *c) {
  for (int i = 0; i < GL_MODULE_CACHE_SLOTS; i++) evict(c, &c->e[i]);
}

void gl_module_cache_forget(gl_module_cache *c) {
  for (int i = 0; i < GL_MODULE_CACHE_SLOTS; i++)
    if (c->e[i].image) drop(c, &c->e[i]);
}

/* The least recently used entry other than `keep` (NULL when none). */
static gl_module_entry *lru(gl_module_cache *c, const gl_module_entry *keep) {
  gl_module_entry *best = NULL;
  for (int i = 0; i < GL_MODULE_CACHE_SLOTS; i++) {
    gl_module_entry *e = &c->e[i];
    if (!e->image || e == keep) continue;
    if (!best || e->last_use < best->last_use) best = e;
  }
  return best;
}

gpulease_status gl_module_cache_get(gl_module_cache *c, const uint8_t *image, size_t len,
                                    gpulease_image_format format, gl_module_entry **entry,
                                    char *err, size_t errlen) {
  uint64_t h = gl_fnv1a64(image, len);
  for (int i = 0; i < GL_MODULE_CACHE_SLOTS; i++) {
    gl_module_entry *e = &c->e[i];
    if (e->image && e->hash == h && e->len == len && e->format == format &&
        memcmp(e->image, image, len) == 0) {
      e->last_use = ++c->clock;
      c->hits++;
      gl_worker_count(GL_WC_MODULE_HIT);
      *entry = e;
      return GPULEASE_OK;
    }
  }
  c->misses++; /* counted by the table, as loaded or found in the context */

  if (len > SIZE_MAX - 1) {
    snprintf(err, errlen, "image too large");
    return GPULEASE_TOO_LARGE;
  }
  uint8_t *copy = malloc(len + 1);
  if (!copy) {
    snprintf(err, errlen, "out of memory copying a %zu-byte image", len);
    return GPULEASE_INTERNAL;
  }
  if (len) memcpy(copy, image, len);
  copy[len] = 0;

  void *m = NULL;
  uint8_t source = 0;
  gpulease_status st = gl_modtab_acquire(c->modtab, image, len, format, &m, &source, err, errlen);
  if (st != GPULEASE_OK) {
    free(copy);
    return st;
  }

  /* A free slot, else the least recently used one. */
  gl_module_entry *slot = NULL;
  for (int i = 0; i < GL_MODULE_CACHE_SLOTS && !slot; i++)
    if (!c->e[i].image) slot = &c->e[i];
  if (!slot) {
    slot = lru(c, NULL);
    evict(c, slot);
  }
  slot->image = copy;
  slot->len = len;
  slot->hash = h;
  slot->format = format;
  slot->module = m;
  slot->funcs = NULL;
  slot->last_use = ++c->clock;
  c->bytes += len;
  /* Stay within the byte budget, keeping the entry just loaded. */
  gl_module_entry *old;
  while (c->bytes > GL_MODULE_CACHE_MAX_BYTES && (old = lru(c, slot)) != NULL) evict(c, old);
  *entry = slot;
  return GPULEASE_OK;
}
