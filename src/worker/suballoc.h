/*
 * suballoc.h - the allocator of a lease's VRAM region.
 *
 * The worker reserves the lease's whole region once (backend init); session
 * buffers are then carved out of it by offset, without further device
 * allocations, so a lease can never use more VRAM than it was granted and
 * a freed buffer is reusable at once. This module only does the
 * bookkeeping: offsets in [0, capacity), nothing touches the device.
 *
 * Policy: first fit over the free ranges in address order, every size
 * rounded up to the alignment (so every offset is aligned), neighbouring
 * free ranges coalesced on release. Free ranges and live allocations are
 * kept in balanced search trees keyed by offset (the free one also knows
 * each subtree's largest range), so alloc and release are O(log n) in the
 * number of live allocations.
 *
 * Thread-safe: every function may be called from several threads at once
 * (one pthread mutex per allocator).
 */
#ifndef GL_WORKER_SUBALLOC_H
#define GL_WORKER_SUBALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpulease/gpulease.h"

typedef struct gl_suballoc gl_suballoc;

/* Creates an allocator for a region of capacity_bytes. align (bytes) must be
 * a non-zero power of two (the worker uses 256); sizes are rounded up to it
 * and offsets are multiples of it. Trailing bytes beyond the last multiple
 * of align are never handed out. Returns NULL when out of memory or when
 * align is not a power of two. Free with gl_suballoc_free. */
gl_suballoc *gl_suballoc_new(uint64_t capacity_bytes, uint64_t align);

/* Frees the allocator (live allocations are simply forgotten). NULL ok. */
void gl_suballoc_free(gl_suballoc *a);

/* Reserves size_bytes (>= 1, rounded up to the alignment) and writes the
 * range's offset, a multiple of the alignment in [0, capacity), to *offset.
 * The lowest-addressed free range large enough is used (first fit).
 * Errors (with a message in err, errlen bytes, NUL-terminated; err may be
 * NULL when errlen is 0), *offset unchanged:
 *   INVALID_ARGUMENT   size_bytes is 0, or rounding it up overflows;
 *   CAPACITY_EXCEEDED  "lease VRAM: X bytes requested, Y bytes free,
 *                      largest free range Z bytes" (X rounded);
 *   INTERNAL           out of host memory for the bookkeeping. */
gpulease_status gl_suballoc_alloc(gl_suballoc *a, uint64_t size_bytes, uint64_t *offset, char *err,
                                  size_t errlen);

/* Releases the allocation starting at offset (as returned by
 * gl_suballoc_alloc) and merges it with free neighbours. Returns false, and
 * changes nothing, when offset is not the start of a live allocation
 * (never allocated, already released, or inside one). Never fails
 * otherwise (no memory is allocated). */
bool gl_suballoc_release(gl_suballoc *a, uint64_t offset);

/* Bytes currently allocated (the sum of the rounded sizes). */
uint64_t gl_suballoc_used(gl_suballoc *a);

#endif /* GL_WORKER_SUBALLOC_H */
