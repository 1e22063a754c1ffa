/*
 * corpus_emu.h - the emulated device (src/emu) as a gl_corpus_dev.
 *
 * Buffers come from a bump allocator over the device's region (256-byte
 * aligned, like cuMemAlloc); reset unloads the modules and rewinds it.
 * `threads` and `sm_count` are handed to every launch (with the case's
 * cooperative flag and cluster shape); instruction counts add up in
 * `stats`.
 */
#ifndef GL_TESTS_EMU_CORPUS_EMU_H
#define GL_TESTS_EMU_CORPUS_EMU_H

#include "corpus.h"
#include "emu/emu.h"

#define GL_CORPUS_EMU_MAX_MODULES 4

#define GL_CORPUS_EMU_SM_COUNT 132 /* SMs for cooperative launches: an H100 SXM's */

typedef struct gl_corpus_emu {
  gl_emu_device *dev;
  uint64_t region_bytes, used;
  gl_emu_module *mods[GL_CORPUS_EMU_MAX_MODULES];
  unsigned nmods;
  unsigned threads;
  uint32_t sm_count;  /* handed to every launch (GL_CORPUS_EMU_SM_COUNT) */
  gl_emu_stats stats; /* summed over launches */
} gl_corpus_emu;

/* Creates the device (region_bytes of region) and fills *dev with the
 * operations on e. 0, or -1 when out of memory. */
int gl_corpus_emu_init(gl_corpus_emu *e, gl_corpus_dev *dev, uint64_t region_bytes,
                       unsigned threads);
void gl_corpus_emu_fini(gl_corpus_emu *e);

#endif
