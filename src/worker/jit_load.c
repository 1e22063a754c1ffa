/*
 * jit_load.c - PTX through the disk JIT cache (jit_load.h): the cached
 * binary when it loads, else the backend's compile_ptx (the driver's JIT,
 * or nvJitLink for PTX newer than the driver), load, and store.
 */
#include "worker/jit_load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "worker/submit_check.h"

uint8_t *gl_jit_nul_copy(const uint8_t *p, size_t len) {
  if (len == SIZE_MAX) return NULL;
  uint8_t *c = malloc(len + 1);
  if (!c) return NULL;
  memcpy(c, p, len);
  c[len] = 0;
  return c;
}

/* Loads a binary produced by compile_ptx (or read back from the disk
 * cache), whose format is found from its bytes: a cubin (ELF) or fatbin by
 * its magic, PTX text by its ".version"; anything else is taken as PTX
 * text too (an emulating backend's "binary" is the PTX it was given, which
 * need not start with ".version"), which the backend then checks. */
static gpulease_status load_binary(gl_backend *be, const uint8_t *bin, size_t len, void **module,
                                   char *err, size_t errlen) {
  gpulease_image_format f;
  size_t text_len;
  char why[256] = "";
  if (gl_image_resolve(GPULEASE_IMAGE_AUTO, bin, len, &f, &text_len, why, sizeof why) !=
          GPULEASE_OK &&
      gl_image_resolve(GPULEASE_IMAGE_PTX, bin, len, &f, &text_len, why, sizeof why) !=
          GPULEASE_OK) {
    snprintf(err, errlen, "compiled PTX: %s", why);
    return GPULEASE_LOAD_FAILED;
  }
  uint8_t *copy = gl_jit_nul_copy(bin, text_len);
  if (!copy) {
    snprintf(err, errlen, "out of memory copying a %zu-byte compiled module", text_len);
    return GPULEASE_INTERNAL;
  }
  gpulease_status st = be->ops->load_module(be, copy, text_len, f, module, err, errlen);
  free(copy);
  return st;
}

bool gl_jit_load_usable(const gl_backend *be, const gl_jit_cache *jit,
                        gpulease_image_format fmt) {
  return fmt == GPULEASE_IMAGE_PTX && jit && be->ops->compile_ptx && be->ops->cache_tag;
}

gpulease_status gl_jit_load_ptx(gl_backend *be, gl_jit_cache *jit, const uint8_t *copy,
                                size_t len, const uint8_t sha[32], void **module, bool *from_disk,
                                char *err, size_t errlen) {
  *from_disk = false;
  char tag[128] = "";
  be->ops->cache_tag(be, tag, sizeof tag);
  tag[sizeof tag - 1] = 0;

  uint8_t *bin = NULL;
  size_t blen = 0;
  if (gl_jit_cache_get(jit, sha, tag, &bin, &blen)) {
    char why[512] = "";
    gpulease_status st = load_binary(be, bin, blen, module, why, sizeof why);
    free(bin);
    if (st == GPULEASE_OK) {
      *from_disk = true;
      return GPULEASE_OK;
    }
    GL_WARN("JIT cache: the cached binary for a %zu-byte PTX (%s) does not load: %s; "
            "compiling again",
            len, tag, why);
  }

  gpulease_status st = be->ops->compile_ptx(be, copy, len, &bin, &blen, err, errlen);
  if (st != GPULEASE_OK) return st;
  st = load_binary(be, bin, blen, module, err, errlen);
  if (st == GPULEASE_OK) gl_jit_cache_put(jit, sha, tag, bin, blen); /* only a binary that loads */
  free(bin);
  return st;
}

