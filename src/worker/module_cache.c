/* module_cache.c - see module_cache.h. */
#include "worker/module_cache.h"
#include "worker/counters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "worker/jit_load.h"

uint64_t gl_fnv1a64(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

void gl_module_cache_init(gl_module_cache *c, gl_backend *backend) {
  memset(c, 0, sizeof *c);
  c->backend = backend;
}

static void evict(gl_module_cache *c, gl_module_entry *e) {
  if (!e->image) return;
  c->backend->ops->unload_module(c->backend, e->module);
  c->bytes -= e->len;
  free(e->image);
  memset(e, 0, sizeof *e);
}

void gl_module_cache_clear(gl_module_cache *c) {
  for (int i = 0; i < GL_MODULE_CACHE_SLOTS; i++) evict(c, &c->e[i]);
}

void gl_module_cache_forget(gl_module_cache *c) {
  for (int i = 0; i < GL_MODULE_CACHE_SLOTS; i++) free(c->e[i].image);
  memset(c->e, 0, sizeof c->e);
  c->bytes = 0;
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
                                    gpulease_image_format format, void **module, char *err,
                                    size_t errlen) {
  uint64_t h = gl_fnv1a64(image, len);
  for (int i = 0; i < GL_MODULE_CACHE_SLOTS; i++) {
    gl_module_entry *e = &c->e[i];
    if (e->image && e->hash == h && e->len == len && e->format == format &&
        memcmp(e->image, image, len) == 0) {
      e->last_use = ++c->clock;
      c->hits++;
      gl_worker_count(GL_WC_MODULE_HIT);
      *module = e->module;
      return GPULEASE_OK;
    }
  }
  c->misses++;
  gl_worker_count(GL_WC_MODULE_MISS);

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
  gpulease_status st;
  uint8_t sha[32];
  if (gl_jit_load_usable(c->backend, c->jit, format) &&
      gnutls_hash_fast(GNUTLS_DIG_SHA256, copy, len, sha) >= 0) {
    bool from_disk;
    st = gl_jit_load_ptx(c->backend, c->jit, copy, len, sha, &m, &from_disk, err, errlen);
  } else {
    st = c->backend->ops->load_module(c->backend, copy, len, format, &m, err, errlen);
  }
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
  slot->last_use = ++c->clock;
  c->bytes += len;
  /* Stay within the byte budget, keeping the entry just loaded. */
  gl_module_entry *old;
  while (c->bytes > GL_MODULE_CACHE_MAX_BYTES && (old = lru(c, slot)) != NULL) evict(c, old);
  *module = m;
  return GPULEASE_OK;
}
