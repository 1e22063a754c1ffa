/*
 * tensormap.h - the emulated device's tensor maps as the executor reads
 * them (the 128-byte encoding is in emu.h; tensormap.c).
 */
#ifndef GL_EMU_TENSORMAP_H
#define GL_EMU_TENSORMAP_H

#include <stdint.h>

typedef struct gl_emu_tmap {
  uint8_t data_type, rank, swizzle, esize, oob_nan;
  uint64_t addr;       /* global address of element 0 */
  uint32_t dim[5];     /* elements; 1 beyond rank */
  uint64_t stride[4];  /* bytes between consecutive indices of dims 1-4 */
  uint32_t box[5];     /* elements; 1 beyond rank */
} gl_emu_tmap;

/* Writes t's 128-byte encoding to dst. */
void gl_emu__tmap_store(void *dst, const gl_emu_tmap *t);
/* Decodes 128 bytes at src; -1 when they are not a valid tensor map. */
int gl_emu__tmap_load(const void *src, gl_emu_tmap *t);

#endif /* GL_EMU_TENSORMAP_H */
