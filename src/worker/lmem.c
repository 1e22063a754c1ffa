/*
 * lmem.c - a lease's charge for its kernels' local memory: see lmem.h.
 *
 * Each new high-water mark reserves what it adds as one more range of the
 * region; past GL_LMEM_MAX_PARTS ranges the charge is moved into one
 * range of the new total (reserved before the old ones go, so a failure
 * leaves the old charge as it was).
 */
#include "worker/lmem.h"

#include <inttypes.h>
#include <stdio.h>

void gl_lmem_init(gl_lmem *m, gl_suballoc *alloc, uint64_t vram_bytes) {
  atomic_store(&m->covered, 0);
  pthread_mutex_init(&m->mu, NULL);
  m->known = false;
  m->threads = 0;
  m->free_per_thread = 0;
  m->alloc = alloc;
  m->vram_bytes = vram_bytes;
  m->charged = 0;
  m->held = 0;
  m->nparts = 0;
}

void gl_lmem_destroy(gl_lmem *m) {
  if (m->alloc)
    for (size_t i = 0; i < m->nparts; i++) gl_suballoc_release(m->alloc, m->part_off[i]);
  m->nparts = 0;
  m->charged = 0;
  m->held = 0;
  pthread_mutex_destroy(&m->mu);
}

uint64_t gl_lmem_charged(gl_lmem *m) {
  pthread_mutex_lock(&m->mu);
  uint64_t c = m->charged;
  pthread_mutex_unlock(&m->mu);
  return c;
}

uint64_t gl_lmem_held(gl_lmem *m) {
  pthread_mutex_lock(&m->mu);
  uint64_t c = m->held;
  pthread_mutex_unlock(&m->mu);
  return c;
}

/* n threads x per bytes, saturating. */
static uint64_t times(uint64_t per, uint64_t n) {
  return n && per > UINT64_MAX / n ? UINT64_MAX : per * n;
}

/* Reserves `more` bytes as one more part (m->mu held). */
static gpulease_status reserve(gl_lmem *m, uint64_t more, uint64_t total, char *why,
                               size_t whylen) {
  uint64_t off;
  if (m->nparts < GL_LMEM_MAX_PARTS) {
    gpulease_status st = gl_suballoc_alloc(m->alloc, more, &off, why, whylen);
    if (st != GPULEASE_OK) return st;
    m->part_off[m->nparts++] = off;
    return GPULEASE_OK;
  }
  gpulease_status st = gl_suballoc_alloc(m->alloc, total, &off, why, whylen);
  if (st != GPULEASE_OK) return st;
  for (size_t i = 0; i < m->nparts; i++) gl_suballoc_release(m->alloc, m->part_off[i]);
  m->part_off[0] = off;
  m->nparts = 1;
  return GPULEASE_OK;
}

gpulease_status gl_lmem_cover(gl_lmem *m, gl_backend *be, uint32_t local_bytes, const char *kernel,
                              bool *grew, char *err, size_t errlen) {
  *grew = false;
  if (local_bytes <= atomic_load_explicit(&m->covered, memory_order_acquire) || !m->alloc ||
      !be->ops->local_memory)
    return GPULEASE_OK;
  pthread_mutex_lock(&m->mu);
  gpulease_status st = GPULEASE_OK;
  char why[256] = "";
  if (!m->known) {
    st = be->ops->local_memory(be, &m->threads, &m->free_per_thread, why, sizeof why);
    if (st != GPULEASE_OK) {
      snprintf(err, errlen, "kernel '%s' needs %" PRIu32 " bytes of local memory a thread, and "
               "the device cannot say how much that takes: %s", kernel, local_bytes, why);
      goto out;
    }
    m->known = true;
    if (m->free_per_thread > atomic_load(&m->covered)) atomic_store(&m->covered, m->free_per_thread);
  }
  uint32_t covered = atomic_load(&m->covered);
  if (local_bytes <= covered) goto out;
  uint64_t per = (uint64_t)(local_bytes - m->free_per_thread); /* what the context adds */
  uint64_t held = times(per, m->threads);
  uint64_t paid = per > GL_LMEM_FREE_PER_THREAD ? per - GL_LMEM_FREE_PER_THREAD : 0;
  uint64_t total = times(paid, m->threads);
  uint64_t more = total - m->charged;
  st = total > m->vram_bytes ? GPULEASE_CAPACITY_EXCEEDED
       : more == 0           ? GPULEASE_OK
                             : reserve(m, more, total, why, sizeof why);
  if (st == GPULEASE_CAPACITY_EXCEEDED || st == GPULEASE_INVALID_ARGUMENT) {
    uint64_t used = gl_suballoc_used(m->alloc);
    uint64_t left = used < m->vram_bytes ? m->vram_bytes - used : 0;
    snprintf(err, errlen,
             "kernel '%s' needs %" PRIu32 " bytes of local memory a thread, which the device "
             "sets aside for each of the %" PRIu64 " threads it holds at once: past the %" PRIu32
             " bytes a thread the context has from its start and %u bytes a thread free of "
             "charge, %" PRIu64 " bytes the lease pays for; its kernels hold %" PRIu64
             " already, and the lease has %" PRIu64 " of its %" PRIu64 " bytes free for the %"
             PRIu64 " more (lease at least %" PRIu64 " bytes, or use less local memory)",
             kernel, local_bytes, m->threads, m->free_per_thread, GL_LMEM_FREE_PER_THREAD, total,
             m->charged, left, m->vram_bytes, more, total);
    st = GPULEASE_CAPACITY_EXCEEDED;
    goto out;
  }
  if (st != GPULEASE_OK) {
    snprintf(err, errlen, "%s", why);
    goto out;
  }
  m->charged = total;
  m->held = held;
  atomic_store_explicit(&m->covered, local_bytes, memory_order_release);
  *grew = true;
out:
  pthread_mutex_unlock(&m->mu);
  return st;
}
