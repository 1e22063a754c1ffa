/*
 * module_cache.h - the worker's cache of loaded modules.
 *
 * Clients submit the same image again and again; loading (and for PTX,
 * JIT-compiling) it each time would dominate short kernels. The cache keeps
 * up to GL_MODULE_CACHE_SLOTS loaded modules, keyed by format, length,
 * a 64-bit FNV-1a hash AND a full byte comparison against a private copy of
 * the image (a hash collision can never run the wrong code). The least
 * recently used entry is evicted, and entries are also evicted while the
 * copies together exceed GL_MODULE_CACHE_MAX_BYTES (the newest entry is
 * always kept).
 *
 * Backend-neutral: modules are opaque handles released through
 * gl_backend_ops.unload_module.
 */
#ifndef GL_WORKER_MODULE_CACHE_H
#define GL_WORKER_MODULE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "worker/jit_cache.h"

#define GL_MODULE_CACHE_SLOTS 8
#define GL_MODULE_CACHE_MAX_BYTES (256u * 1024 * 1024)

typedef struct gl_module_entry {
  uint8_t *image; /* malloc'd copy, len bytes + a NUL; NULL = free slot */
  size_t len;
  uint64_t hash;
  gpulease_image_format format;
  void *module;
  uint64_t last_use;
} gl_module_entry;

typedef struct gl_module_cache {
  gl_backend *backend; /* borrowed */
  gl_jit_cache *jit;   /* borrowed, may be NULL: PTX goes through it (jit_load.h) */
  gl_module_entry e[GL_MODULE_CACHE_SLOTS];
  uint64_t clock;
  size_t bytes;
  uint64_t hits, misses; /* statistics */
} gl_module_cache;

/* 64-bit FNV-1a of n bytes. */
uint64_t gl_fnv1a64(const uint8_t *p, size_t n);

void gl_module_cache_init(gl_module_cache *c, gl_backend *backend);

/* Unloads every module and frees the copies. */
void gl_module_cache_clear(gl_module_cache *c);

/* Frees the copies WITHOUT unloading the modules: for a lost context,
 * where no unload can succeed and the process exit frees everything. */
void gl_module_cache_forget(gl_module_cache *c);

/* Returns the module for these exact bytes, loading it through the backend
 * on a miss (image is copied with a trailing NUL first, so image need not
 * be NUL-terminated). On failure returns the backend's status with err
 * filled, and nothing is cached. *module is valid until the next call. */
gpulease_status gl_module_cache_get(gl_module_cache *c, const uint8_t *image, size_t len,
                                    gpulease_image_format format, void **module, char *err,
                                    size_t errlen);

#endif /* GL_WORKER_MODULE_CACHE_H */
