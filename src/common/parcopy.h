/*
 * parcopy.h - one large memcpy spread over several cores.
 *
 * One core copies about 8-12 GB/s; shared-memory transfers (the library's
 * staging, the daemon's arena) move more than that. gl_par_memcpy splits a
 * copy into parts for a pool of threads kept for the process (started at
 * the first large copy) and copies one part itself. One parallel copy runs
 * at a time; a caller that finds the pool busy copies alone.
 */
#ifndef GL_COMMON_PARCOPY_H
#define GL_COMMON_PARCOPY_H

#include <stddef.h>

/* Copies n bytes from src to dst (not overlapping), in parallel from
 * GL_PARCOPY_MIN bytes on. Returns once every byte is copied. */
void gl_par_memcpy(void *dst, const void *src, size_t n);

#define GL_PARCOPY_MIN (4u << 20)

#endif /* GL_COMMON_PARCOPY_H */
