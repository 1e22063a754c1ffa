/*
 * modtab.h - the modules loaded in a lease's context, shared by its
 * sessions (GPU_SUBMIT's implicit session among them, through
 * module_cache.h).
 *
 * A lease's sessions (each on its own worker thread) load modules by
 * sending image bytes. Every module stays loaded while some session holds
 * it, and a second session sending the same bytes gets the loaded module
 * (one more reference) instead of another load. Identity is the SHA-256 of
 * the bytes plus the format, so equal images share a module and different
 * ones never do (there is no eviction: sessions decide, by releasing;
 * module_cache.h releases GPU_SUBMIT's least recently used).
 *
 * For PTX on a backend that can compile it (compile_ptx, backend.h), the
 * compiled binary goes through the on-disk JIT cache (jit_cache.h), so a
 * kernel is compiled once per device kind and driver, across leases and
 * daemon restarts.
 *
 * A module's own device memory (its globals, constants and code, as the
 * image declares them: backend/footprint.h) is charged to the lease: past
 * GL_MODTAB_FREE_BYTES for all its modules together (small kernels, their
 * printf strings), a table given an allocator (gl_modtab_charge_to)
 * reserves the bytes in the lease's region for as long as the module
 * stays loaded, so the lease's buffers and modules together never exceed
 * its VRAM by more than that allowance, and a load that would is refused
 * before the driver sees the image.
 *
 * Thread-safe: one mutex per table; loads and unloads happen under it
 * (they are rare, and it keeps one image from being loaded twice at once).
 */
#ifndef GL_WORKER_MODTAB_H
#define GL_WORKER_MODTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "worker/jit_cache.h"
#include "worker/suballoc.h"

typedef struct gl_modtab gl_modtab;

/* Module memory a lease holds free of charge, all its modules together. */
#define GL_MODTAB_FREE_BYTES (1u << 20)

/* Creates an empty table loading through be (initialised). be and jit are
 * borrowed and must outlive the table; jit may be NULL (no disk cache: PTX
 * is then loaded directly). NULL when out of memory. */
gl_modtab *gl_modtab_new(gl_backend *be, gl_jit_cache *jit);

/* From now on, each module loaded anew charges its device memory (the
 * largest any of the image's forms declares: backend/footprint.h) to the
 * lease: what takes the modules past GL_MODTAB_FREE_BYTES is reserved in
 * alloc, the lease's region of vram_bytes, until it is unloaded. alloc is
 * borrowed and must outlive the table; NULL stops charging (modules
 * already charged keep their reservation). */
void gl_modtab_charge_to(gl_modtab *t, gl_suballoc *alloc, uint64_t vram_bytes);

/* From now on, fn(user) is called after each load anew and each unload
 * (what the modules declare changed), outside the table's mutex, before
 * the acquire or release returns. NULL fn: none. */
void gl_modtab_on_change(gl_modtab *t, void (*fn)(void *user), void *user);

/* The device memory the loaded modules declare, in all (bytes; 0 for
 * modules charged to nothing, see gl_modtab_charge_to). */
uint64_t gl_modtab_bytes(gl_modtab *t);

/* Frees the table. Every module still loaded is unloaded first
 * (be->ops->unload_module), whatever its references, unless forget is
 * true: for a lost context, where unloading cannot work, only the
 * bookkeeping is freed. NULL ok. */
void gl_modtab_free(gl_modtab *t, bool forget);

/* Returns, in *module, a referenced loaded module (the backend's opaque
 * handle, for get_function) for the image of len bytes in format fmt: PTX,
 * CUBIN or FATBIN as resolved by gl_image_resolve (submit_check.h); for PTX,
 * len is the text's length without trailing NULs. image is borrowed (and
 * need not be NUL-terminated: it is copied with a trailing NUL for the
 * backend). *source receives how the module was obtained:
 *   GL_MODULE_CACHE_CONTEXT  already loaded: one more reference;
 *   GL_MODULE_CACHE_DISK     PTX whose compiled binary came from the JIT
 *                            cache, then loaded;
 *   GL_MODULE_CACHE_LOADED   loaded now (PTX compiled now, and the binary
 *                            stored in the JIT cache once it has loaded).
 * PTX goes through compile_ptx and the JIT cache only when the backend has
 * compile_ptx and cache_tag and the table has a jit; a cached binary that
 * fails to load is recompiled (and the entry overwritten). Each successful
 * call must be matched by one gl_modtab_release.
 * Errors, with a message in err (errlen bytes), nothing loaded or kept:
 * the backend's status and message (LOAD_FAILED with the JIT log,
 * UNSUPPORTED...), INVALID_ARGUMENT for an empty image or an unresolved
 * format, CAPACITY_EXCEEDED when the module's device memory does not fit
 * in what the lease has free ("loading this module needs N bytes of
 * device memory (G of globals, C of constants, K of code, ...); the
 * lease's modules hold M already, ... and the lease has F of its V bytes
 * free for the rest"), INTERNAL when out of memory. */
gpulease_status gl_modtab_acquire(gl_modtab *t, const uint8_t *image, size_t len,
                                  gpulease_image_format fmt, void **module, uint8_t *source,
                                  char *err, size_t errlen);

/* Drops one reference taken by gl_modtab_acquire; the module is unloaded
 * when none remain. Returns false (and does nothing) for a module that is
 * not in the table. */
bool gl_modtab_release(gl_modtab *t, void *module);

/* Number of modules loaded through the table (distinct images, whatever
 * their references). */
size_t gl_modtab_count(gl_modtab *t);

#endif /* GL_WORKER_MODTAB_H */
