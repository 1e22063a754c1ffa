/*
 * hmap.h - a map from 64-bit handles to pointers (open addressing).
 *
 * Each session of a worker keeps its buffers, modules and functions in maps keyed by
 * the opaque handles the client sees, so every use of a handle is one
 * lookup and a handle that is not in the map (never issued, freed, another
 * session's) is simply not found. Key 0 is reserved (never a handle). Not
 * thread-safe: a session's maps are used by its own thread only.
 */
#ifndef GL_COMMON_HMAP_H
#define GL_COMMON_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gl_hmap {
  uint64_t *keys; /* 0 = empty, UINT64_MAX = deleted */
  void **vals;
  size_t cap;     /* power of two, or 0 */
  size_t count;   /* live entries */
  size_t used;    /* live + deleted slots */
} gl_hmap;

void gl_hmap_init(gl_hmap *m);
void gl_hmap_free(gl_hmap *m); /* frees the table, not the values */

/* The value for key, or NULL. */
void *gl_hmap_get(const gl_hmap *m, uint64_t key);

/* Adds key (not 0, not UINT64_MAX, not present). 0, or -1 out of memory. */
int gl_hmap_put(gl_hmap *m, uint64_t key, void *val);

/* Removes key; returns its value or NULL when absent. */
void *gl_hmap_del(gl_hmap *m, uint64_t key);

/* Iteration: for (size_t i = 0; gl_hmap_next(m, &i, &k, &v);) ... Do not
 * put while iterating; deleting the entry just returned is allowed. */
bool gl_hmap_next(const gl_hmap *m, size_t *pos, uint64_t *key, void **val);

#endif /* GL_COMMON_HMAP_H */
