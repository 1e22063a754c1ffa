/*
 * emu_fixture.h - what the emulated device's unit tests share
 * (test_emu_exec.c, test_emu_mma.c, test_emu_async.c): a device with one
 * module loaded, files of the source tree, and device memory handed out
 * from the region by a bump allocator. Include after <cmocka.h>; every
 * function is static, so each test has its own copy.
 */
#ifndef GL_TESTS_UNIT_EMU_FIXTURE_H
#define GL_TESTS_UNIT_EMU_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/emu.h"

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#endif

typedef struct env {
  gl_emu_device *dev;
  gl_emu_module *mod;
  uint64_t next; /* bump allocator in the region */
  char err[1024];
} env;

/* The file at rel under the source tree ($GL_TEST_SRC_DIR, else the
 * build's GL_SOURCE_DIR), NUL-terminated (malloc'd, *len bytes before the
 * NUL); fails the test when it cannot be read. */
static char *read_src(const char *rel, size_t *len) {
  const char *src = getenv("GL_TEST_SRC_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", src ? src : GL_SOURCE_DIR, rel);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fail_msg("cannot open %s", path);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = '\0';
  fclose(f);
  *len = (size_t)n;
  return buf;
}

/* A fresh device of `region` bytes with ptx (len bytes) loaded; what
 * names it in the failure message. */
static void env_load(env *e, size_t region, const char *ptx, size_t len, const char *what) {
  memset(e, 0, sizeof *e);
  e->dev = gl_emu_device_new(region);
  assert_non_null(e->dev);
  e->next = GL_EMU_REGION_BASE;
  gpulease_status st = gl_emu_module_load(e->dev, ptx, len, &e->mod, e->err, sizeof e->err);
  if (st != GPULEASE_OK) fail_msg("load %s: %d %s", what, st, e->err);
}

static void env_close(env *e) {
  gl_emu_module_unload(e->dev, e->mod);
  gl_emu_device_free(e->dev);
}

/* Device memory holding a copy of n bytes of src (zeros if NULL). */
static uint64_t dput(env *e, const void *src, size_t n) {
  uint64_t a = e->next;
  e->next += (n + 255) & ~(uint64_t)255;
  uint8_t *p = gl_emu_device_ptr(e->dev, a, n);
  assert_non_null(p);
  if (src)
    memcpy(p, src, n);
  else
    memset(p, 0, n);
  return a;
}

static void dget(env *e, uint64_t a, void *dst, size_t n) {
  uint8_t *p = gl_emu_device_ptr(e->dev, a, n);
  assert_non_null(p);
  memcpy(dst, p, n);
}

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#endif /* GL_TESTS_UNIT_EMU_FIXTURE_H */
