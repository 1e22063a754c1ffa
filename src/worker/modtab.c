/*
 * modtab.c - the modules loaded in a lease's context: see modtab.h.
 *
 * A small array of (SHA-256, format, module, references), searched
 * linearly: a lease holds few distinct modules, and the hash makes each
 * comparison cheap.
 */
#include "worker/modtab.h"
#include "worker/counters.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "backend/footprint.h"
#include "common/log.h"
#include "worker/jit_load.h"

typedef struct mod_entry {
  uint8_t sha[32];
  gpulease_image_format fmt;
  void *module;
  uint64_t refs;
  uint64_t bytes;      /* the device memory it declares */
  bool charged;        /* the part of it past the allowance is reserved in the region */
  uint64_t charge_off; /* at this offset */
} mod_entry;

struct gl_modtab {
  gl_backend *be;    /* borrowed */
  gl_jit_cache *jit; /* borrowed, may be NULL */
  pthread_mutex_t mu;
  mod_entry *e;
  size_t n, cap;
  gl_suballoc *alloc; /* borrowed: where modules are charged; NULL: not charged */
  uint64_t vram_bytes;
  uint64_t module_bytes; /* what the loaded modules declare, in all */
  void (*on_change)(void *user);
  void *on_change_user;
};

gl_modtab *gl_modtab_new(gl_backend *be, gl_jit_cache *jit) {
  gl_modtab *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  if (pthread_mutex_init(&t->mu, NULL) != 0) {
    free(t);
    return NULL;
  }
  t->be = be;
  t->jit = jit;
  return t;
}

void gl_modtab_charge_to(gl_modtab *t, gl_suballoc *alloc, uint64_t vram_bytes) {
  pthread_mutex_lock(&t->mu);
  t->alloc = alloc;
  t->vram_bytes = vram_bytes;
  pthread_mutex_unlock(&t->mu);
}

void gl_modtab_on_change(gl_modtab *t, void (*fn)(void *user), void *user) {
  pthread_mutex_lock(&t->mu);
  t->on_change = fn;
  t->on_change_user = user;
  pthread_mutex_unlock(&t->mu);
}

uint64_t gl_modtab_bytes(gl_modtab *t) {
  pthread_mutex_lock(&t->mu);
  uint64_t n = t->module_bytes;
  pthread_mutex_unlock(&t->mu);
  return n;
}

/* Calls the change hook (the table's mutex not held) when the figure
 * changed. */
static void changed(bool yes, void (*fn)(void *), void *user) {
  if (yes && fn) fn(user);
}

/* Charges the device memory image declares to the lease (t->mu held):
 * *bytes receives it; what takes the table's modules past
 * GL_MODTAB_FREE_BYTES in all is reserved in the lease's region (*charged,
 * at *off). Nothing is charged without an allocator or for an image
 * footprint.c cannot read (the driver refuses that one). CAPACITY_EXCEEDED
 * with the figures when the reservation does not fit. */
static gpulease_status charge(gl_modtab *t, const uint8_t *image, size_t len,
                              gpulease_image_format fmt, uint64_t *bytes, bool *charged,
                              uint64_t *off, char *err, size_t errlen) {
  *charged = false;
  *bytes = 0;
  gl_footprint fp;
  char why[256];
  if (!t->alloc || gl_footprint_of(image, len, fmt, 0, &fp, why, sizeof why) != 0)
    return GPULEASE_OK;
  uint64_t need = gl_footprint_total(&fp);
  uint64_t before = t->module_bytes;
  uint64_t after = before > UINT64_MAX - need ? UINT64_MAX : before + need;
  uint64_t past = (after > GL_MODTAB_FREE_BYTES ? after - GL_MODTAB_FREE_BYTES : 0) -
                  (before > GL_MODTAB_FREE_BYTES ? before - GL_MODTAB_FREE_BYTES : 0);
  *bytes = need;
  if (past == 0) return GPULEASE_OK;
  gpulease_status st = gl_suballoc_alloc(t->alloc, past, off, why, sizeof why);
  if (st == GPULEASE_CAPACITY_EXCEEDED || st == GPULEASE_INVALID_ARGUMENT) {
    uint64_t used = gl_suballoc_used(t->alloc);
    uint64_t left = used < t->vram_bytes ? t->vram_bytes - used : 0;
    snprintf(err, errlen,
             "loading this module needs %llu bytes of device memory (%llu of globals, %llu of "
             "constants, %llu of code, as the image declares them); the lease's modules hold %llu "
             "already, %u KiB of modules are free of charge, and the lease has %llu of its %llu "
             "bytes free for the rest",
             (unsigned long long)need, (unsigned long long)fp.global_bytes,
             (unsigned long long)fp.const_bytes, (unsigned long long)fp.code_bytes,
             (unsigned long long)before, GL_MODTAB_FREE_BYTES >> 10, (unsigned long long)left,
             (unsigned long long)t->vram_bytes);
    return GPULEASE_CAPACITY_EXCEEDED;
  }
  if (st != GPULEASE_OK) {
    snprintf(err, errlen, "%s", why);
    return st;
  }
  *charged = true;
  return GPULEASE_OK;
}

void gl_modtab_free(gl_modtab *t, bool forget) {
  if (!t) return;
  if (!forget)
    for (size_t i = 0; i < t->n; i++) t->be->ops->unload_module(t->be, t->e[i].module);
  pthread_mutex_destroy(&t->mu);
  free(t->e);
  free(t);
}

/* Loads the image (not in the table yet). */
static gpulease_status load_new(gl_modtab *t, const uint8_t *image, size_t len,
                                gpulease_image_format fmt, const uint8_t sha[32], void **module,
                                uint8_t *source, char *err, size_t errlen) {
  uint8_t *copy = gl_jit_nul_copy(image, len);
  if (!copy) {
    snprintf(err, errlen, "out of memory copying a %zu-byte image", len);
    return GPULEASE_INTERNAL;
  }
  const gl_backend_ops *ops = t->be->ops;
  gpulease_status st;
  if (gl_jit_load_usable(t->be, t->jit, fmt)) {
    bool from_disk = false;
    st = gl_jit_load_ptx(t->be, t->jit, copy, len, sha, module, &from_disk, err, errlen);
    if (st == GPULEASE_OK) *source = from_disk ? GL_MODULE_CACHE_DISK : GL_MODULE_CACHE_LOADED;
  } else {
    st = ops->load_module(t->be, copy, len, fmt, module, err, errlen);
    if (st == GPULEASE_OK) *source = GL_MODULE_CACHE_LOADED;
  }
  free(copy);
  return st;
}

gpulease_status gl_modtab_acquire(gl_modtab *t, const uint8_t *image, size_t len,
                                  gpulease_image_format fmt, void **module, uint8_t *source,
                                  char *err, size_t errlen) {
  if (!image || len == 0) {
    snprintf(err, errlen, "module image is empty");
    return GPULEASE_INVALID_ARGUMENT;
  }
  if (fmt != GPULEASE_IMAGE_PTX && fmt != GPULEASE_IMAGE_CUBIN && fmt != GPULEASE_IMAGE_FATBIN) {
    snprintf(err, errlen, "module image format %d is not resolved (expected PTX, cubin or fatbin)",
             (int)fmt);
    return GPULEASE_INVALID_ARGUMENT;
  }
  uint8_t sha[32];
  if (gnutls_hash_fast(GNUTLS_DIG_SHA256, image, len, sha) < 0) {
    snprintf(err, errlen, "SHA-256 of the module image failed");
    return GPULEASE_INTERNAL;
  }

  pthread_mutex_lock(&t->mu);
  for (size_t i = 0; i < t->n; i++) {
    mod_entry *e = &t->e[i];
    if (e->fmt == fmt && memcmp(e->sha, sha, sizeof sha) == 0) {
      e->refs++;
      *module = e->module;
      *source = GL_MODULE_CACHE_CONTEXT;
      pthread_mutex_unlock(&t->mu);
      gl_worker_count(GL_WC_MODULE_HIT);
      return GPULEASE_OK;
    }
  }
  if (t->n == t->cap) {
    size_t ncap = t->cap ? t->cap * 2 : 8;
    mod_entry *ne = realloc(t->e, ncap * sizeof *ne);
    if (!ne) {
      pthread_mutex_unlock(&t->mu);
      snprintf(err, errlen, "out of memory for the module table");
      return GPULEASE_INTERNAL;
    }
    t->e = ne;
    t->cap = ncap;
  }
  void *m = NULL;
  uint8_t src = GL_MODULE_CACHE_LOADED;
  bool charged = false;
  uint64_t off = 0, bytes = 0;
  gpulease_status st = charge(t, image, len, fmt, &bytes, &charged, &off, err, errlen);
  if (st == GPULEASE_OK) {
    st = load_new(t, image, len, fmt, sha, &m, &src, err, errlen);
    gl_worker_count(GL_WC_MODULE_MISS);
    if (st != GPULEASE_OK && charged) gl_suballoc_release(t->alloc, off);
  }
  if (st == GPULEASE_OK) {
    mod_entry *e = &t->e[t->n++];
    memcpy(e->sha, sha, sizeof sha);
    e->fmt = fmt;
    e->module = m;
    e->refs = 1;
    e->bytes = bytes;
    e->charged = charged;
    e->charge_off = off;
    t->module_bytes = t->module_bytes > UINT64_MAX - bytes ? UINT64_MAX : t->module_bytes + bytes;
    *module = m;
    *source = src;
  }
  void (*fn)(void *) = t->on_change;
  void *user = t->on_change_user;
  pthread_mutex_unlock(&t->mu);
  changed(st == GPULEASE_OK && bytes > 0, fn, user);
  return st;
}

bool gl_modtab_release(gl_modtab *t, void *module) {
  pthread_mutex_lock(&t->mu);
  for (size_t i = 0; i < t->n; i++) {
    mod_entry *e = &t->e[i];
    if (e->module != module) continue;
    bool gone = false;
    if (--e->refs == 0) {
      t->be->ops->unload_module(t->be, module);
      if (e->charged && t->alloc) gl_suballoc_release(t->alloc, e->charge_off);
      t->module_bytes -= e->bytes < t->module_bytes ? e->bytes : t->module_bytes;
      gone = e->bytes > 0;
      *e = t->e[--t->n];
    }
    void (*fn)(void *) = t->on_change;
    void *user = t->on_change_user;
    pthread_mutex_unlock(&t->mu);
    changed(gone, fn, user);
    return true;
  }
  pthread_mutex_unlock(&t->mu);
  return false;
}

size_t gl_modtab_count(gl_modtab *t) {
  pthread_mutex_lock(&t->mu);
  size_t n = t->n;
  pthread_mutex_unlock(&t->mu);
  return n;
}
