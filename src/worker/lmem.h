/*
 * lmem.h - a lease's charge for its kernels' local memory
 * (docs/security.md, "Device memory outside the region").
 *
 * At a launch, a CUDA context sets aside the kernel's per-thread local
 * size (CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES) for every thread the GPU holds
 * at once, outside the lease's region, and keeps the most it has set aside
 * until it ends (the backend's local_memory op says how many threads, and
 * what a thread holds from the context's start). The lease pays for it
 * past GL_LMEM_FREE_PER_THREAD a thread: before a kernel needing more per
 * thread than any before runs, the bytes it adds are reserved in the
 * lease's region (so its buffers and this memory together stay within its
 * VRAM), or the launch is refused with CAPACITY_EXCEEDED naming what it
 * needs and what the lease has. All of it, the free part too, is what the
 * context holds for the lease (gl_lmem_held), which the daemon counts.
 *
 * Thread-safe: the common case (a kernel needing no more than paid for)
 * is one atomic load; a new high-water mark takes the charge's mutex.
 */
#ifndef GL_WORKER_LMEM_H
#define GL_WORKER_LMEM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "gpulease/gpulease.h"
#include "worker/suballoc.h"

/* Local memory a thread the lease does not pay for (printf's argument
 * buffer, small register spills): 132 MiB on an H200, counted in the
 * GPU's leased figure all the same. */
#define GL_LMEM_FREE_PER_THREAD 512u

/* Reservations a charge keeps before it merges them into one. */
#define GL_LMEM_MAX_PARTS 16

typedef struct gl_lmem {
  _Atomic uint32_t covered; /* per-thread local bytes paid for (or free) */
  pthread_mutex_t mu;       /* the rest */
  bool known;               /* threads and free_per_thread were read */
  uint64_t threads;
  uint32_t free_per_thread;
  gl_suballoc *alloc; /* borrowed: the lease's region; NULL: nothing charged */
  uint64_t vram_bytes;
  uint64_t charged;   /* bytes reserved in the region, in all */
  uint64_t held;      /* bytes the context holds for the lease's kernels */
  uint64_t part_off[GL_LMEM_MAX_PARTS];
  size_t nparts;
} gl_lmem;

/* Starts a charge for a lease whose region of vram_bytes is alloc (both
 * borrowed; alloc must outlive the charge, NULL charges nothing). */
void gl_lmem_init(gl_lmem *m, gl_suballoc *alloc, uint64_t vram_bytes);

/* Releases what the charge reserved (when the lease's buffers stay; at
 * lease end the allocator goes anyway) and frees the mutex. */
void gl_lmem_destroy(gl_lmem *m);

/* Before a launch of `kernel` (its name, for messages), whose per-thread
 * local size is local_bytes: OK when the context holds that much per
 * thread for the lease already; otherwise reserves what it adds
 * ((local_bytes - the backend's free_per_thread - GL_LMEM_FREE_PER_THREAD)
 * x threads, less what is reserved already) and returns OK with *grew
 * true, or CAPACITY_EXCEEDED with err naming the kernel, the bytes it
 * needs, the threads, what is reserved and what the lease has free. A
 * backend without local_memory charges nothing. */
gpulease_status gl_lmem_cover(gl_lmem *m, gl_backend *be, uint32_t local_bytes, const char *kernel,
                              bool *grew, char *err, size_t errlen);

/* The bytes of local memory reserved in the lease's region. */
uint64_t gl_lmem_charged(gl_lmem *m);

/* The bytes of local memory the context holds for the lease's kernels
 * beyond what it held from its start (the charged part and the free). */
uint64_t gl_lmem_held(gl_lmem *m);

#endif /* GL_WORKER_LMEM_H */
