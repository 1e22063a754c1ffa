/*
 * jit_load.h - a PTX module through the worker's disk JIT cache
 * (jit_cache.h), for the lease's module table (modtab.c), which the
 * sessions and GPU_SUBMIT (through module_cache.c) load through.
 */
#ifndef GL_WORKER_JIT_LOAD_H
#define GL_WORKER_JIT_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "worker/jit_cache.h"

/* A malloc'd copy of the len bytes at p with a NUL after them (PTX for
 * the driver must end in one); NULL when out of memory. */
uint8_t *gl_jit_nul_copy(const uint8_t *p, size_t len);

/* Whether images of format fmt go through the cache on this backend: PTX,
 * a cache (jit may be NULL), and a backend that compiles PTX apart from
 * loading it (compile_ptx, cache_tag). */
bool gl_jit_load_usable(const gl_backend *be, const gl_jit_cache *jit, gpulease_image_format fmt);

/* Loads the PTX copy (len bytes, a NUL at copy[len]; sha its SHA-256)
 * through the cache: the binary stored under (sha, the backend's cache
 * tag) when there is one that loads (*from_disk true), else compile_ptx,
 * load, and store the binary (only one that loads). OK with *module, or the
 * status of the compile or the load with err. */
gpulease_status gl_jit_load_ptx(gl_backend *be, gl_jit_cache *jit, const uint8_t *copy,
                                size_t len, const uint8_t sha[32], void **module, bool *from_disk,
                                char *err, size_t errlen);

#endif /* GL_WORKER_JIT_LOAD_H */
