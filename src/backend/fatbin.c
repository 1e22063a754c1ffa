/*
 * fatbin.c - the images inside a CUDA fatbin; see fatbin.h.
 */
#include "backend/fatbin.h"

#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define MAGIC 0xBA55ED50u
#define FLAG_LZ4 0x2000u
#define FLAG_ZSTD 0x8000u

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16; }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

int gl_fatbin_list(const uint8_t *image, size_t len, gl_fatbin_entry *out, size_t max, size_t *n,
                   char *err, size_t errlen) {
  *n = 0;
  if (len < 16 || rd32(image) != MAGIC) {
    snprintf(err, errlen, "not a fatbin (no 0xBA55ED50 magic at offset 0)");
    return -1;
  }
  uint16_t hsize = rd16(image + 6);
  uint64_t body = rd64(image + 8);
  if (hsize < 16 || hsize > len || body > len - hsize) {
    snprintf(err, errlen, "fatbin header: sizes (%u + %llu bytes) beyond the image's %zu", hsize,
             (unsigned long long)body, len);
    return -1;
  }
  size_t off = hsize, end = hsize + (size_t)body;
  while (off < end) {
    if (end - off < 64) {
      snprintf(err, errlen, "fatbin entry at offset %zu: truncated header", off);
      return -1;
    }
    const uint8_t *e = image + off;
    uint16_t kind = rd16(e);
    uint32_t eh = rd32(e + 4);
    uint64_t psize = rd64(e + 8);
    if (eh < 64 || eh > end - off || psize > end - off - eh) {
      snprintf(err, errlen, "fatbin entry at offset %zu: sizes (%u + %llu bytes) beyond the image",
               off, eh, (unsigned long long)psize);
      return -1;
    }
    if (kind != GL_FATBIN_PTX && kind != GL_FATBIN_CUBIN) {
      snprintf(err, errlen, "fatbin entry at offset %zu: kind %u (expected 1 PTX or 2 cubin)", off,
               kind);
      return -1;
    }
    uint64_t flags = rd64(e + 40);
    gl_fatbin_entry x = {.kind = (gl_fatbin_kind)kind,
                         .arch = rd32(e + 28),
                         .payload = e + eh,
                         .stored_len = (size_t)psize,
                         .expanded_len = (size_t)psize};
    if (kind == GL_FATBIN_PTX) {
      uint32_t v = rd32(e + 24);
      x.isa_major = v >> 16;
      x.isa_minor = v & 0xFFFF;
    }
    if (flags & (FLAG_LZ4 | FLAG_ZSTD)) {
      uint32_t csize = rd32(e + 16);
      uint64_t usize = rd64(e + 56);
      if (csize == 0 || csize > psize || usize == 0 || usize > GL_FATBIN_MAX_EXPANDED) {
        snprintf(err, errlen,
                 "fatbin entry at offset %zu: compressed sizes %u -> %llu out of range", off, csize,
                 (unsigned long long)usize);
        return -1;
      }
      x.compression = (flags & FLAG_ZSTD) ? 2 : 1;
      x.stored_len = csize;
      x.expanded_len = (size_t)usize;
    }
    if (*n < max) out[(*n)++] = x;
    off += eh + (size_t)psize;
  }
  return 0;
}

char *gl_fatbin_expand(const gl_fatbin_entry *e, char *err, size_t errlen) {
  char *buf = malloc(e->expanded_len + 1);
  if (!buf) {
    snprintf(err, errlen, "out of memory expanding a fatbin entry of %zu bytes", e->expanded_len);
    return NULL;
  }
  size_t got = 0;
  if (e->compression == 0) {
    memcpy(buf, e->payload, e->stored_len);
    got = e->stored_len;
  } else if (e->compression == 1) {
    int r = LZ4_decompress_safe((const char *)e->payload, buf, (int)e->stored_len,
                                (int)e->expanded_len);
    got = r < 0 ? (size_t)-1 : (size_t)r;
  } else {
    size_t r = ZSTD_decompress(buf, e->expanded_len, e->payload, e->stored_len);
    got = ZSTD_isError(r) ? (size_t)-1 : r;
  }
  if (got != e->expanded_len) {
    snprintf(err, errlen, "fatbin entry (sm_%u): its %s payload does not expand to the %zu bytes "
             "its header says", e->arch, e->compression == 1 ? "LZ4" : e->compression == 2 ?
             "zstd" : "", e->expanded_len);
    free(buf);
    return NULL;
  }
  buf[got] = 0;
  return buf;
}

void gl_fatbin_describe(const uint8_t *image, size_t len, char *out, size_t outlen) {
  gl_fatbin_entry es[GL_FATBIN_MAX_ENTRIES];
  size_t n = 0;
  char err[160];
  if (outlen) out[0] = 0;
  if (gl_fatbin_list(image, len, es, GL_FATBIN_MAX_ENTRIES, &n, err, sizeof err) != 0) return;
  size_t used = 0;
  for (size_t i = 0; i < n && used < outlen; i++) {
    int w = es[i].kind == GL_FATBIN_PTX
                ? snprintf(out + used, outlen - used, "%sPTX sm_%u (ISA %u.%u)", i ? ", " : "",
                           es[i].arch, es[i].isa_major, es[i].isa_minor)
                : snprintf(out + used, outlen - used, "%scubin sm_%u", i ? ", " : "", es[i].arch);
    if (w < 0) break;
    used += (size_t)w;
  }
  if (n == 0) snprintf(out, outlen, "no images");
}

int gl_fatbin_pick_ptx(const uint8_t *image, size_t len, unsigned sm, char **ptx, size_t *ptx_len,
                       unsigned *arch, char *err, size_t errlen) {
  *ptx = NULL;
  *ptx_len = 0;
  gl_fatbin_entry es[GL_FATBIN_MAX_ENTRIES];
  size_t n = 0;
  if (gl_fatbin_list(image, len, es, GL_FATBIN_MAX_ENTRIES, &n, err, errlen) != 0) return -1;
  const gl_fatbin_entry *best = NULL;
  for (size_t i = 0; i < n; i++) {
    const gl_fatbin_entry *e = &es[i];
    if (e->kind != GL_FATBIN_PTX || e->arch > sm) continue;
    if (!best || e->arch > best->arch ||
        (e->arch == best->arch && (e->isa_major > best->isa_major ||
                                   (e->isa_major == best->isa_major &&
                                    e->isa_minor > best->isa_minor))))
      best = e;
  }
  if (!best) {
    char what[512];
    gl_fatbin_describe(image, len, what, sizeof what);
    snprintf(err, errlen,
             "the fatbin holds no PTX for sm_%u or older (it holds: %s); add one with nvcc "
             "-gencode arch=compute_XX,code=compute_XX",
             sm, what);
    return -1;
  }
  char *text = gl_fatbin_expand(best, err, errlen);
  if (!text) return -1;
  *ptx = text;
  *ptx_len = strlen(text); /* a payload may be padded with NULs */
  *arch = best->arch;
  return 0;
}
