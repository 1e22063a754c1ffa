/*
 * module_cache.h - GPU_SUBMIT's modules: the images its implicit session
 * (submit.h) ran lately, each a module of the lease's module table
 * (modtab.h) with the functions found in it.
 *
 * Clients submit the same image again and again; hashing it to SHA-256
 * and asking the table each time would cost more than finding it here. The
 * cache keeps up to GL_MODULE_CACHE_SLOTS images, keyed by format, length,
 * a 64-bit FNV-1a hash AND a full byte comparison against a private copy of
 * the image (a hash collision can never run the wrong code). Each holds one
 * reference to its module in the table, so a session loading the same
 * image (MODULE_LOAD) shares the module, and the other way round. The least
 * recently used entry is evicted (its reference dropped), and entries are
 * also evicted while the copies together exceed GL_MODULE_CACHE_MAX_BYTES
 * (the newest entry is always kept).
 *
 * Used by one thread at a time (the implicit session's lane); the table
 * behind it is thread-safe.
 */
#ifndef GL_WORKER_MODULE_CACHE_H
#define GL_WORKER_MODULE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "worker/modtab.h"

#define GL_MODULE_CACHE_SLOTS 8
#define GL_MODULE_CACHE_MAX_BYTES (256u * 1024 * 1024)

struct gl_wfunction;

typedef struct gl_module_entry {
  uint8_t *image; /* malloc'd copy, len bytes + a NUL; NULL = free slot */
  size_t len;
  uint64_t hash;
  gpulease_image_format format;
  void *module;                /* the table's (one reference) */
  struct gl_wfunction *funcs;  /* found in it (malloc'd, linked by next; the entry's) */
  uint64_t last_use;
} gl_module_entry;

typedef struct gl_module_cache {
  gl_modtab *modtab; /* borrowed */
  gl_module_entry e[GL_MODULE_CACHE_SLOTS];
  uint64_t clock;
  size_t bytes;
  uint64_t hits, misses; /* statistics */
} gl_module_cache;

/* 64-bit FNV-1a of n bytes. */
uint64_t gl_fnv1a64(const uint8_t *p, size_t n);

/* An empty cache whose modules come from t (borrowed: it must outlive the
 * cache's entries). */
void gl_module_cache_init(gl_module_cache *c, gl_modtab *t);

/* Drops every entry: its module's reference in the table (which unloads
 * it when no session holds it), its functions and its copy. */
void gl_module_cache_clear(gl_module_cache *c);

/* Frees the copies and functions WITHOUT releasing the modules: for a lost
 * context, where no unload can succeed and the process exit frees
 * everything. */
void gl_module_cache_forget(gl_module_cache *c);

/* Returns, in *entry, the entry for these exact bytes, taking the module
 * from the table on a miss (gl_modtab_acquire: loaded, or shared with the
 * sessions that hold it). image need not be NUL-terminated; for PTX, len
 * is the text's length as gl_image_resolve gives it. On failure returns
 * the table's status with err filled, and nothing is cached. *entry (its
 * module and functions) is valid until the next call or clear. */
gpulease_status gl_module_cache_get(gl_module_cache *c, const uint8_t *image, size_t len,
                                    gpulease_image_format format, gl_module_entry **entry,
                                    char *err, size_t errlen);

#endif /* GL_WORKER_MODULE_CACHE_H */
