/*
 * image.c - the size of a module image that cuModuleLoadData is given
 * without one: PTX (text up to its NUL), an ELF cubin (its headers say
 * where its last part ends), a fatbin (its header gives its size), or the
 * wrapper nvcc puts around a fatbin (its data pointer). Internal to
 * src/cuda.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "cuda/image.h"

#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_WRAPPER_MAGIC 0x466243B1u

typedef struct fatbin_wrapper {
  uint32_t magic;
  uint32_t version;
  const void *data;
  void *filename_or_fatbins;
} fatbin_wrapper;

static uint64_t rd(const uint8_t *p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static size_t elf_size(const uint8_t *p) {
  if (p[4] != 2 || p[5] != 1) return 0; /* ELF64, little-endian only */
  uint64_t phoff = rd(p + 32, 8), shoff = rd(p + 40, 8);
  uint64_t phentsize = rd(p + 54, 2), phnum = rd(p + 56, 2);
  uint64_t shentsize = rd(p + 58, 2), shnum = rd(p + 60, 2);
  /* Offsets past any real cubin are a bad header, not bytes to read. */
  const uint64_t limit = 1ull << 34;
  if (phoff > limit || shoff > limit) return 0;
  uint64_t end = 64;
  if (phnum && phoff + phnum * phentsize > end) end = phoff + phnum * phentsize;
  if (shnum && shoff + shnum * shentsize > end) end = shoff + shnum * shentsize;
  if (shentsize < 64) return shnum ? 0 : (size_t)end;
  if (end > limit) return 0;
  for (uint64_t i = 0; i < shnum; i++) {
    const uint8_t *sh = p + shoff + i * shentsize;
    uint32_t type = (uint32_t)rd(sh + 4, 4);
    uint64_t off = rd(sh + 24, 8), size = rd(sh + 32, 8);
    if (off > limit || size > limit) return 0;
    if (type != 8 /* SHT_NOBITS */ && off + size > end) end = off + size;
  }
  for (uint64_t i = 0; i < phnum && phentsize >= 56; i++) {
    const uint8_t *ph = p + phoff + i * phentsize;
    uint64_t off = rd(ph + 8, 8), filesz = rd(ph + 32, 8);
    if (off > limit || filesz > limit) return 0;
    if (off + filesz > end) end = off + filesz;
  }
  return end > limit ? 0 : (size_t)end;
}

const void *gl_cu_image_span(const void *image, size_t *size) {
  *size = 0;
  if (!image) return NULL;
  const uint8_t *p = image;
  uint32_t magic = (uint32_t)rd(p, 4);
  if (magic == FATBIN_WRAPPER_MAGIC) {
    const fatbin_wrapper *w = image;
    if (!w->data) return NULL;
    return gl_cu_image_span(w->data, size);
  }
  if (magic == FATBIN_MAGIC) {
    uint64_t header = rd(p + 6, 2), body = rd(p + 8, 8);
    if (header < 16 || body > (1ull << 34)) return NULL;
    *size = (size_t)(header + body);
    return image;
  }
  if (memcmp(p, "\177ELF", 4) == 0) {
    *size = elf_size(p);
    return *size ? image : NULL;
  }
  /* PTX: text, NUL-terminated. */
  *size = strlen((const char *)p) + 1;
  return image;
}

/* A fatbin entry's compression flags (LZ4, Zstandard). */
#define FATBIN_FLAG_COMPRESSED (0x2000u | 0x8000u)

bool gl_cu_image_may_print(const void *bytes, size_t size) {
  if (memmem(bytes, size, "vprintf", 7)) return true;
  const uint8_t *p = bytes;
  if (size < 16 || (uint32_t)rd(p, 4) != FATBIN_MAGIC) return false;
  /* A compressed entry hides its symbols: it may print. */
  size_t off = (size_t)rd(p + 6, 2);
  while (off + 64 <= size) {
    const uint8_t *e = p + off;
    uint64_t eh = rd(e + 4, 4), psize = rd(e + 8, 8);
    if (rd(e + 40, 8) & FATBIN_FLAG_COMPRESSED) return true;
    if (eh < 64 || psize > size || eh + psize > size - off) break;
    off += (size_t)(eh + psize);
  }
  return false;
}
