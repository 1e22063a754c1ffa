/*
 * jit_cache.h - the on-disk cache of JIT-compiled PTX.
 *
 * Compiling PTX for the device takes from milliseconds to seconds; clients
 * send the same kernels to every new lease and after every daemon restart.
 * So the worker keeps what compile_ptx (backend.h) produced in a directory
 * shared by all workers of the daemon (and its later runs), one file per
 * (PTX, device) pair:
 *
 *   <dir>/<64 hex digits: SHA-256 of the PTX>-<tag>.bin
 *
 * where the tag names what the binary depends on (backend cache_tag(), e.g.
 * "cuda-sm90-drv13000"). Each file is a fixed header (magic, format
 * version, the key, the payload's length and SHA-256) and the payload; a
 * reader verifies all of it, so a truncated, corrupted or misplaced file
 * is only ever a miss (and is deleted).
 *
 * Concurrency: several threads and processes may use one directory. A
 * writer fills a private temporary file, fsyncs it and renames it into
 * place, so readers see a whole file or none; two writers of one key write
 * the same bytes. Eviction (oldest mtime first, on put, to stay within
 * max_bytes) tolerates files vanishing under it. The object's own state
 * (counters) is behind a mutex.
 *
 * Everything is best effort: failures are logged (common/log.h), never
 * reported to the caller, who then simply compiles.
 */
#ifndef GL_WORKER_JIT_CACHE_H
#define GL_WORKER_JIT_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gl_jit_cache gl_jit_cache;

/* Longest tag accepted (characters, without the NUL). */
#define GL_JIT_CACHE_MAX_TAG 64

/* Opens the cache in directory dir, creating it (and missing parents) with
 * mode 0700. dir NULL or "" gives a disabled cache: get always misses, put
 * does nothing. A directory that cannot be created or written gives a
 * disabled cache too, with a GL_WARN line. max_bytes bounds the total size
 * of the cache's files (headers included): a put that leaves more removes
 * the least recently written or read files first; a binary larger than
 * max_bytes is not stored. Returns NULL only when out of memory. Close
 * with gl_jit_cache_close. */
gl_jit_cache *gl_jit_cache_open(const char *dir, uint64_t max_bytes);

/* Frees the object (the files stay). NULL ok. */
void gl_jit_cache_close(gl_jit_cache *c);

/* Looks up the binary for the PTX whose SHA-256 is ptx_sha256 (32 bytes)
 * compiled for tag (NUL-terminated, 1..GL_JIT_CACHE_MAX_TAG characters of
 * [A-Za-z0-9._-]; any other tag misses). On a hit returns true, *bin a
 * malloc'd copy of the binary (the caller frees it) and *len its length in
 * bytes, and refreshes the file's mtime (so eviction is least recently
 * used). On a miss returns false and leaves *bin and *len alone; a file
 * that fails verification is deleted (logged). c NULL behaves as a
 * disabled cache. */
bool gl_jit_cache_get(gl_jit_cache *c, const uint8_t ptx_sha256[32], const char *tag, uint8_t **bin,
                      size_t *len);

/* Stores bin (len bytes, borrowed) under (ptx_sha256, tag), replacing any
 * file of that key, then evicts down to max_bytes (never the file just
 * written). Does nothing for a disabled cache, a bad tag, len 0 or
 * len > max_bytes. Failures are logged, never fatal. c NULL ok. */
void gl_jit_cache_put(gl_jit_cache *c, const uint8_t ptx_sha256[32], const char *tag,
                      const uint8_t *bin, size_t len);

/* Counters since open, for tests and metrics: gets that hit, gets that
 * missed (a disabled cache's included), puts that stored a file. Any
 * pointer may be NULL. c NULL gives zeros. */
void gl_jit_cache_stats(gl_jit_cache *c, uint64_t *hits, uint64_t *misses, uint64_t *stores);

#endif /* GL_WORKER_JIT_CACHE_H */
