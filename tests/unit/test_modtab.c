/*
 * test_modtab.c - the lease's table of loaded modules (src/worker/modtab.c)
 * with a fake backend.
 *
 * The fake "compiles" PTX into "\x7fELF " followed by the text (a "cubin")
 * or, like the emulated device, into PTX text again; it loads PTX, ELF and
 * fatbin bytes, refuses images saying "syntax error" or "REJECT", and
 * counts loads, unloads and compiles. Covered: sharing and references,
 * the disk JIT cache across tables (a restart), falling back to compiling
 * when the cached binary is damaged or does not load, cubin and fatbin
 * bypassing the cache, failures leaving nothing behind, lost contexts,
 * and threads sharing modules.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <gnutls/crypto.h>

#include "common/util.h"
#include "worker/jit_cache.h"
#include "worker/modtab.h"

/* ==========================================================================
 * The fake backend
 * ======================================================================== */

#define FAKE_TAG "fake-sm90-drv1"

typedef struct fake {
  gl_backend base;
  int loads, unloads, compiles;
  int live;              /* loaded, not unloaded */
  int loads_by_fmt[4];   /* indexed by gpulease_image_format */
  bool bad_tail;         /* some load saw no NUL at image[len] */
  bool compile_to_ptx;   /* compile like the emulated device: PTX text out */
  bool compile_rejected; /* compile into a binary that load refuses */
} fake;

typedef struct fake_module {
  gpulease_image_format fmt;
  size_t len;
  char text[]; /* the image bytes + NUL */
} fake_module;

static fake *as_fake(gl_backend *b) { return (fake *)b; }

static bool contains(const uint8_t *p, size_t len, const char *needle) {
  size_t n = strlen(needle);
  for (size_t i = 0; i + n <= len; i++)
    if (memcmp(p + i, needle, n) == 0) return true;
  return false;
}

static gpulease_status f_load(gl_backend *b, const uint8_t *image, size_t len,
                              gpulease_image_format fmt, void **module, char *err, size_t errlen) {
  fake *f = as_fake(b);
  if (image[len] != 0) f->bad_tail = true;
  bool ok;
  switch (fmt) {
  case GPULEASE_IMAGE_PTX:
    ok = contains(image, len, ".entry"); /* not picky about what comes first */
    break;
  case GPULEASE_IMAGE_CUBIN:
    ok = len >= 4 && memcmp(image,
                            "\x7f"
                            "ELF",
                            4) == 0;
    break;
  case GPULEASE_IMAGE_FATBIN:
    ok = len >= 4 && image[0] == 0x50 && image[1] == 0xED && image[2] == 0x55 && image[3] == 0xBA;
    break;
  default:
    ok = false;
  }
  if (!ok || contains(image, len, "syntax error") || contains(image, len, "REJECT")) {
    snprintf(err, errlen, "cuModuleLoadDataEx: CUDA_ERROR_INVALID_IMAGE (fake %d bytes)", (int)len);
    return GPULEASE_LOAD_FAILED;
  }
  fake_module *m = malloc(sizeof *m + len + 1);
  assert_non_null(m);
  m->fmt = fmt;
  m->len = len;
  memcpy(m->text, image, len + 1);
  f->loads++;
  f->live++;
  f->loads_by_fmt[fmt]++;
  *module = m;
  return GPULEASE_OK;
}

static void f_unload(gl_backend *b, void *module) {
  fake *f = as_fake(b);
  f->unloads++;
  f->live--;
  free(module);
}

static gpulease_status f_compile(gl_backend *b, const uint8_t *ptx, size_t len, uint8_t **bin,
                                 size_t *bin_len, char *err, size_t errlen) {
  fake *f = as_fake(b);
  f->compiles++;
  if (ptx[len] != 0) f->bad_tail = true;
  if (contains(ptx, len, "syntax error")) {
    snprintf(err, errlen, "ptxas application ptx input, line 3; error   : syntax error");
    return GPULEASE_LOAD_FAILED;
  }
  const char *prefix = f->compile_to_ptx     ? ""
                       : f->compile_rejected ? "\x7f"
                                               "ELF REJECT "
                                             : "\x7f"
                                               "ELF ";
  size_t pl = strlen(prefix), pad = f->compile_to_ptx ? 3 : 0; /* trailing NULs, like a C string */
  uint8_t *out = calloc(1, pl + len + pad);
  assert_non_null(out);
  memcpy(out, prefix, pl);
  memcpy(out + pl, ptx, len);
  *bin = out;
  *bin_len = pl + len + pad;
  return GPULEASE_OK;
}

static void f_tag(gl_backend *b, char *buf, size_t len) {
  (void)b;
  snprintf(buf, len, FAKE_TAG);
}

static const gl_backend_ops k_plain_ops = {
    .name = "fake-plain",
    .load_module = f_load,
    .unload_module = f_unload,
};

static const gl_backend_ops k_jit_ops = {
    .name = "fake-jit",
    .load_module = f_load,
    .unload_module = f_unload,
    .compile_ptx = f_compile,
    .cache_tag = f_tag,
};

/* ==========================================================================
 * Fixture: a fake backend and a JIT cache directory
 * ======================================================================== */

typedef struct fx {
  fake be;
  char dir[256];
  gl_jit_cache *jit;
} fx;

static int setup(void **state) {
  fx *x = calloc(1, sizeof *x);
  if (!x) return -1;
  x->be.base.ops = &k_jit_ops;
  const char *base = getenv("TMPDIR");
  snprintf(x->dir, sizeof x->dir, "%s/gl-modtab-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(x->dir)) return -1;
  x->jit = gl_jit_cache_open(x->dir, 1 << 20);
  if (!x->jit) return -1;
  *state = x;
  return 0;
}

static int teardown(void **state) {
  fx *x = *state;
  gl_jit_cache_close(x->jit);
  DIR *d = opendir(x->dir);
  if (d) {
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
      if (de->d_name[0] == '.' && (!de->d_name[1] || strcmp(de->d_name, "..") == 0)) continue;
      char p[600];
      snprintf(p, sizeof p, "%s/%s", x->dir, de->d_name);
      unlink(p);
    }
    closedir(d);
  }
  rmdir(x->dir);
  assert_int_equal(x->be.live, 0);
  assert_false(x->be.bad_tail);
  free(x);
  return 0;
}

static int file_count(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) n++;
  closedir(d);
  return n;
}

static const char k_ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                            ".visible .entry k(.param .u64 p) { ret; }\n";
static const char k_ptx2[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                             ".visible .entry k2(.param .u64 p) { ret; }\n";
static const char k_bad_ptx[] = ".version 8.0\n.target sm_90\n.entry k() syntax error here\n";

static void ptx_sha(const char *ptx, uint8_t out[32]) {
  assert_int_equal(gnutls_hash_fast(GNUTLS_DIG_SHA256, ptx, strlen(ptx), out), 0);
}

static void entry_path(const fx *x, const char *ptx, char *out, size_t n) {
  uint8_t key[32];
  char hex[65];
  ptx_sha(ptx, key);
  gl_hex_encode(key, 32, hex);
  snprintf(out, n, "%s/%s-%s.bin", x->dir, hex, FAKE_TAG);
}

/* Acquires and checks the result; returns the module. */
static void *acquire_ok(gl_modtab *t, const void *image, size_t len, gpulease_image_format fmt,
                        uint8_t want_source) {
  void *m = NULL;
  uint8_t source = 0xFF;
  char err[512] = "";
  gpulease_status st = gl_modtab_acquire(t, image, len, fmt, &m, &source, err, sizeof err);
  if (st != GPULEASE_OK) fail_msg("acquire: %s: %s", gpulease_status_name(st), err);
  if (source != want_source) fail_msg("source %u, expected %u", source, want_source);
  return m;
}

static void *acquire_ptx(gl_modtab *t, const char *ptx, uint8_t want_source) {
  return acquire_ok(t, ptx, strlen(ptx), GPULEASE_IMAGE_PTX, want_source);
}

/* ==========================================================================
 * Tests
 * ======================================================================== */

static void test_shared_and_refcounted(void **state) {
  fx *x = *state;
  x->be.base.ops = &k_plain_ops;
  gl_modtab *t = gl_modtab_new(&x->be.base, NULL);
  assert_non_null(t);
  /* The image need not be NUL-terminated: the backend still sees a NUL. */
  size_t len = strlen(k_ptx);
  char *buf = malloc(len);
  assert_non_null(buf);
  memcpy(buf, k_ptx, len);

  void *m1 = acquire_ok(t, buf, len, GPULEASE_IMAGE_PTX, GL_MODULE_CACHE_LOADED);
  void *m2 = acquire_ptx(t, k_ptx, GL_MODULE_CACHE_CONTEXT); /* same bytes elsewhere */
  assert_ptr_equal(m1, m2);
  assert_int_equal(x->be.loads, 1);
  assert_int_equal(gl_modtab_count(t), 1);
  assert_int_equal(((fake_module *)m1)->fmt, GPULEASE_IMAGE_PTX);
  assert_int_equal(((fake_module *)m1)->len, len);

  /* Other bytes are another module. */
  void *m3 = acquire_ptx(t, k_ptx2, GL_MODULE_CACHE_LOADED);
  assert_ptr_not_equal(m3, m1);
  assert_int_equal(gl_modtab_count(t), 2);

  assert_true(gl_modtab_release(t, m1));
  assert_int_equal(x->be.unloads, 0); /* one reference left */
  assert_true(gl_modtab_release(t, m2));
  assert_int_equal(x->be.unloads, 1);
  assert_int_equal(gl_modtab_count(t), 1);
  assert_false(gl_modtab_release(t, m1)); /* gone */
  assert_int_equal(x->be.unloads, 1);

  /* Acquired again after the last release: loaded again. */
  void *m4 = acquire_ptx(t, k_ptx, GL_MODULE_CACHE_LOADED);
  assert_int_equal(x->be.loads, 3);
  assert_true(gl_modtab_release(t, m4));
  assert_true(gl_modtab_release(t, m3));
  assert_int_equal(gl_modtab_count(t), 0);
  assert_int_equal(x->be.unloads, 3);
  gl_modtab_free(t, false);
  assert_int_equal(x->be.unloads, 3);
  free(buf);
}

static void test_same_bytes_other_format(void **state) {
  fx *x = *state;
  gl_modtab *t = gl_modtab_new(&x->be.base, x->jit);
  assert_non_null(t);
  static const uint8_t elf[] = "\x7f"
                               "ELF .version 8.0 cubin bytes";
  void *a = acquire_ok(t, elf, sizeof elf - 1, GPULEASE_IMAGE_CUBIN, GL_MODULE_CACHE_LOADED);
  void *b = acquire_ok(t, elf, sizeof elf - 1, GPULEASE_IMAGE_CUBIN, GL_MODULE_CACHE_CONTEXT);
  assert_ptr_equal(a, b);
  /* The same bytes declared as a fatbin are another identity (and fail). */
  void *m = NULL;
  uint8_t src = 0;
  char err[256] = "";
  assert_int_equal(
      gl_modtab_acquire(t, elf, sizeof elf - 1, GPULEASE_IMAGE_FATBIN, &m, &src, err, sizeof err),
      GPULEASE_LOAD_FAILED);
  assert_non_null(strstr(err, "CUDA_ERROR_INVALID_IMAGE"));
  assert_int_equal(gl_modtab_count(t), 1);
  gl_modtab_free(t, false); /* unloads the module whatever its references */
  assert_int_equal(x->be.unloads, 1);
}

static void test_jit_disk_cache_restart(void **state) {
  fx *x = *state;
  gl_modtab *t = gl_modtab_new(&x->be.base, x->jit);
  assert_non_null(t);
  void *m = acquire_ptx(t, k_ptx, GL_MODULE_CACHE_LOADED);
  assert_int_equal(x->be.compiles, 1);
  assert_int_equal(x->be.loads_by_fmt[GPULEASE_IMAGE_CUBIN], 1); /* the compiled binary */
  assert_int_equal(x->be.loads_by_fmt[GPULEASE_IMAGE_PTX], 0);
  assert_int_equal(((fake_module *)m)->len, 5 + strlen(k_ptx));
  assert_ptr_equal(acquire_ptx(t, k_ptx, GL_MODULE_CACHE_CONTEXT), m);
  assert_int_equal(x->be.compiles, 1);
  char path[600];
  entry_path(x, k_ptx, path, sizeof path);
  assert_int_equal(access(path, F_OK), 0);
  gl_modtab_free(t, false);
  assert_int_equal(x->be.unloads, 1);

  /* A new table (a new lease) on the same cache: from disk. */
  t = gl_modtab_new(&x->be.base, x->jit);
  assert_non_null(t);
  m = acquire_ptx(t, k_ptx, GL_MODULE_CACHE_DISK);
  assert_int_equal(x->be.compiles, 1);
  assert_int_equal(x->be.loads_by_fmt[GPULEASE_IMAGE_CUBIN], 2);
  assert_true(gl_modtab_release(t, m));
  gl_modtab_free(t, false);

  /* And through a new cache object on the directory (a daemon restart). */
  gl_jit_cache *jit2 = gl_jit_cache_open(x->dir, 1 << 20);
  assert_non_null(jit2);
  t = gl_modtab_new(&x->be.base, jit2);
  assert_non_null(t);
  m = acquire_ptx(t, k_ptx, GL_MODULE_CACHE_DISK);
  assert_int_equal(x->be.compiles, 1);
  assert_true(gl_modtab_release(t, m));
  gl_modtab_free(t, false);
  uint64_t hits, misses, stores;
  gl_jit_cache_stats(jit2, &hits, &misses, &stores);
  assert_int_equal(hits, 1);
  assert_int_equal(misses, 0);
  gl_jit_cache_close(jit2);
}

/* Like the emulated device: the "binary" is PTX text (with trailing NULs),
 * detected as PTX and loaded as such, NUL-terminated at its text length. */
static void test_jit_binary_is_ptx(void **state) {
  fx *x = *state;
  x->be.compile_to_ptx = true;
  gl_modtab *t = gl_modtab_new(&x->be.base, x->jit);
  assert_non_null(t);
  void *m = acquire_ptx(t, k_ptx, GL_MODULE_CACHE_LOADED);
  assert_int_equal(((fake_module *)m)->len, strlen(k_ptx));
  assert_int_equal(x->be.loads_by_fmt[GPULEASE_IMAGE_PTX], 1);
  gl_modtab_free(t, false);
  t = gl_modtab_new(&x->be.base, x->jit);
  assert_non_null(t);
  m = acquire_ptx(t, k_ptx, GL_MODULE_CACHE_DISK);
  assert_int_equal(((fake_module *)m)->len, strlen(k_ptx));
  assert_int_equal(x->be.compiles, 1);
  assert_int_equal(x->be.loads_by_fmt[GPULEASE_IMAGE_PTX], 2);

  /* PTX declared as such that does not start with ".version" (a byte
   * order mark here): its "binary" is not recognised by its bytes, and
   * is loaded as PTX all the same. */
  static const char bom_ptx[] = "\xEF\xBB\xBF.version 8.0\n.entry bom() { ret; }\n";
  m = acquire_ptx(t, bom_ptx, GL_MODULE_CACHE_LOADED);
  assert_int_equal(((fake_module *)m)->len, strlen(bom_ptx));
  gl_modtab_free(t, false);
  t = gl_modtab_new(&x->be.base, x->jit);
  assert_non_null(t);
  m = acquire_ptx(t, bom_ptx, GL_MODULE_CACHE_DISK);
  assert_int_equal(x->be.compiles, 2);
  assert_int_equal(x->be.loads_by_fmt[GPULEASE_IMAGE_PTX], 4);
  gl_modtab_free(t, false);
}

static void flip_last_byte(const char *path) {
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  uint8_t b;
  assert_int_equal(pread(fd, &b, 1, st.st_size - 1), 1);
  b ^= 1;
  assert_int_equal(pwrite(fd, &b, 1, st.st_size - 1), 1);
  close(fd);
}

static void test_corrupt_cache_falls_back(void **state) {
  fx *x = *state;
  char path[600];
  entry_path(x, k_ptx, path, sizeof path);
  gl_modtab *t = gl_modtab_new(&x->be.base, x->jit);
  assert_non_null(t);
  acquire_ptx(t, k_ptx, GL_MODULE_CACHE_LOADED);
  gl_modtab_free(t, false);

  /* A damaged file: a miss, compiled again, stored again. */
  flip_last_byte(path);
  t = gl_modtab_new(&x->be.base, x->jit);
  assert_non_null(t);
  acquire_ptx(t, k_ptx, GL_MODULE_CACHE_LOADED);
  assert_int_equal(x->be.compiles, 2);
  gl_modtab_free(t, false);

  /* An intact entry whose binary the device refuses: compiled again and
   * the entry overwritten with the good binary. */
  uint8_t key[32];
  ptx_sha(k_ptx, key);
  static const uint8_t rejected[] = "\x7f"
                                    "ELF REJECT me";
  gl_jit_cache_put(x->jit, key, FAKE_TAG, rejected, sizeof rejected - 1);
  t = gl_modtab_new(&x->be.base, x->jit);
  assert_non_null(t);
  acquire_ptx(t, k_ptx, GL_MODULE_CACHE_LOADED);
  assert_int_equal(x->be.compiles, 3);
  gl_modtab_free(t, false);
  t = gl_modtab_new(&x->be.base, x->jit);
  assert_non_null(t);
  acquire_ptx(t, k_ptx, GL_MODULE_CACHE_DISK);
  assert_int_equal(x->be.compiles, 3);
  gl_modtab_free(t, false);

  /* An entry of no recognisable format (taken as PTX, which the device
   * refuses), and one that cannot even be PTX (a NUL inside): the same. */
  static const uint8_t junk[] = "not a binary at all";
  gl_jit_cache_put(x->jit, key, FAKE_TAG, junk, sizeof junk - 1);
  t = gl_modtab_new(&x->be.base, x->jit);
  assert_non_null(t);
  acquire_ptx(t, k_ptx, GL_MODULE_CACHE_LOADED);
  assert_int_equal(x->be.compiles, 4);
  gl_modtab_free(t, false);
  static const uint8_t nul_inside[] = "junk\0.entry k() {}";
  gl_jit_cache_put(x->jit, key, FAKE_TAG, nul_inside, sizeof nul_inside - 1);
  t = gl_modtab_new(&x->be.base, x->jit);
  assert_non_null(t);
  acquire_ptx(t, k_ptx, GL_MODULE_CACHE_LOADED);
  assert_int_equal(x->be.compiles, 5);
  gl_modtab_free(t, false);
  t = gl_modtab_new(&x->be.base, x->jit);
  assert_non_null(t);
  acquire_ptx(t, k_ptx, GL_MODULE_CACHE_DISK); /* the good binary is back */
  assert_int_equal(x->be.compiles, 5);
  gl_modtab_free(t, false);
  assert_int_equal(x->be.loads, x->be.unloads);
}

static void test_binaries_skip_disk_cache(void **state) {
  fx *x = *state;
  gl_modtab *t = gl_modtab_new(&x->be.base, x->jit);
  assert_non_null(t);
  static const uint8_t elf[] = "\x7f"
                               "ELF\x02\x01\x01\x00 cubin";
  static const uint8_t fat[] = "\x50\xED\x55\xBA fatbin";
  void *a = acquire_ok(t, elf, sizeof elf - 1, GPULEASE_IMAGE_CUBIN, GL_MODULE_CACHE_LOADED);
  void *b = acquire_ok(t, fat, sizeof fat - 1, GPULEASE_IMAGE_FATBIN, GL_MODULE_CACHE_LOADED);
  assert_int_equal(x->be.compiles, 0);
  uint64_t hits, misses, stores;
  gl_jit_cache_stats(x->jit, &hits, &misses, &stores);
  assert_int_equal(hits + misses + stores, 0);
  assert_int_equal(file_count(x->dir), 0);
  assert_true(gl_modtab_release(t, a));
  assert_true(gl_modtab_release(t, b));
  gl_modtab_free(t, false);
}

static void test_no_jit_loads_ptx_directly(void **state) {
  fx *x = *state;
  gl_modtab *t = gl_modtab_new(&x->be.base, NULL); /* compile_ptx, but no cache */
  assert_non_null(t);
  void *m = acquire_ptx(t, k_ptx, GL_MODULE_CACHE_LOADED);
  assert_int_equal(x->be.compiles, 0);
  assert_int_equal(x->be.loads_by_fmt[GPULEASE_IMAGE_PTX], 1);
  assert_true(gl_modtab_release(t, m));
  gl_modtab_free(t, false);
}

static void expect_fail(gl_modtab *t, const void *image, size_t len, gpulease_image_format fmt,
                        gpulease_status want, const char *msg) {
  void *m = (void *)(uintptr_t)1;
  uint8_t src = 0x77;
  char err[512] = "";
  gpulease_status st = gl_modtab_acquire(t, image, len, fmt, &m, &src, err, sizeof err);
  if (st != want)
    fail_msg("status %s, expected %s (%s)", gpulease_status_name(st), gpulease_status_name(want),
             err);
  if (!strstr(err, msg)) fail_msg("message '%s' lacks '%s'", err, msg);
  assert_ptr_equal(m, (void *)(uintptr_t)1);
  assert_int_equal(src, 0x77);
}

/* A PTX module declaring `bytes` of globals (a distinct image per size). */
static char *ptx_with_globals(unsigned long long bytes) {
  char *p = malloc(256);
  snprintf(p, 256,
           ".version 8.0\n.target sm_90\n.address_size 64\n"
           ".global .align 4 .b8 g[%llu];\n.visible .entry k()\n{\n\tret;\n}\n",
           bytes);
  return p;
}

/* Modules' declared device memory is charged to the lease's region past
 * the allowance: refused with the figures when it does not fit, given back
 * on the last release, never charged twice for a shared image. */
static void test_module_memory_charged(void **state) {
  fx *x = *state;
  x->be.base.ops = &k_plain_ops;
  gl_modtab *t = gl_modtab_new(&x->be.base, NULL);
  const uint64_t lease = 4u << 20;
  gl_suballoc *a = gl_suballoc_new(lease, 256);
  assert_non_null(t);
  assert_non_null(a);
  gl_modtab_charge_to(t, a, lease);
  /* Within the allowance: nothing reserved. */
  char *small = ptx_with_globals(GL_MODTAB_FREE_BYTES / 2);
  void *m1 = acquire_ptx(t, small, GL_MODULE_CACHE_LOADED);
  assert_int_equal(gl_suballoc_used(a), 0);
  /* The same image again: one more reference, no second charge. */
  void *m1b = acquire_ptx(t, small, GL_MODULE_CACHE_CONTEXT);
  assert_ptr_equal(m1, m1b);
  /* Past it: the excess is reserved. */
  char *mid = ptx_with_globals(1u << 20);
  void *m2 = acquire_ptx(t, mid, GL_MODULE_CACHE_LOADED);
  assert_int_equal(gl_suballoc_used(a), (1u << 20) - GL_MODTAB_FREE_BYTES / 2);
  /* A buffer takes most of the rest; a module larger than what is left is
   * refused before the backend sees it, and nothing changes. */
  uint64_t buf;
  assert_int_equal(gl_suballoc_alloc(a, 3u << 20, &buf, NULL, 0), GPULEASE_OK);
  int loads = x->be.loads;
  char *big = ptx_with_globals(1ull << 30);
  expect_fail(t, big, strlen(big), GPULEASE_IMAGE_PTX, GPULEASE_CAPACITY_EXCEEDED,
              "loading this module needs 1073741824 bytes of device memory (1073741824 of "
              "globals");
  expect_fail(t, big, strlen(big), GPULEASE_IMAGE_PTX, GPULEASE_CAPACITY_EXCEEDED,
              "of its 4194304 bytes free");
  assert_int_equal(x->be.loads, loads);
  assert_int_equal(gl_modtab_count(t), 2);
  /* The last release gives the reservation back. */
  assert_true(gl_modtab_release(t, m2));
  assert_int_equal(gl_suballoc_used(a), 3u << 20);
  assert_true(gl_suballoc_release(a, buf));
  /* Now the 1 GiB module still does not fit in a 4 MiB lease; 3 MiB does. */
  expect_fail(t, big, strlen(big), GPULEASE_IMAGE_PTX, GPULEASE_CAPACITY_EXCEEDED, "needs");
  char *fits = ptx_with_globals(3u << 20);
  void *m3 = acquire_ptx(t, fits, GL_MODULE_CACHE_LOADED);
  assert_int_equal(gl_suballoc_used(a), (3u << 20) + GL_MODTAB_FREE_BYTES / 2 - GL_MODTAB_FREE_BYTES);
  assert_true(gl_modtab_release(t, m3));
  assert_true(gl_modtab_release(t, m1));
  assert_true(gl_modtab_release(t, m1b));
  assert_int_equal(gl_suballoc_used(a), 0);
  assert_int_equal(x->be.live, 0);
  gl_modtab_free(t, false);
  gl_suballoc_free(a);
  free(small);
  free(mid);
  free(big);
  free(fits);
}

static void test_failures_leave_nothing(void **state) {
  fx *x = *state;
  gl_modtab *t = gl_modtab_new(&x->be.base, x->jit);
  assert_non_null(t);
  /* The compiler refuses: its log comes back. */
  expect_fail(t, k_bad_ptx, strlen(k_bad_ptx), GPULEASE_IMAGE_PTX, GPULEASE_LOAD_FAILED,
              "syntax error");
  /* It compiles but the binary does not load. */
  x->be.compile_rejected = true;
  expect_fail(t, k_ptx, strlen(k_ptx), GPULEASE_IMAGE_PTX, GPULEASE_LOAD_FAILED,
              "CUDA_ERROR_INVALID_IMAGE");
  x->be.compile_rejected = false;
  assert_int_equal(gl_modtab_count(t), 0);
  uint64_t hits, misses, stores;
  gl_jit_cache_stats(x->jit, &hits, &misses, &stores);
  assert_int_equal(stores, 0);
  assert_int_equal(file_count(x->dir), 0);
  /* Now it works, and is compiled (nothing was cached). */
  void *m = acquire_ptx(t, k_ptx, GL_MODULE_CACHE_LOADED);
  assert_int_equal(x->be.compiles, 3);
  assert_true(gl_modtab_release(t, m));

  /* Without the JIT path, a load failure: nothing kept either. */
  x->be.base.ops = &k_plain_ops;
  expect_fail(t, k_bad_ptx, strlen(k_bad_ptx), GPULEASE_IMAGE_PTX, GPULEASE_LOAD_FAILED,
              "CUDA_ERROR_INVALID_IMAGE");
  assert_int_equal(gl_modtab_count(t), 0);

  /* Refused before the backend. */
  expect_fail(t, k_ptx, 0, GPULEASE_IMAGE_PTX, GPULEASE_INVALID_ARGUMENT, "empty");
  expect_fail(t, NULL, 10, GPULEASE_IMAGE_PTX, GPULEASE_INVALID_ARGUMENT, "empty");
  expect_fail(t, k_ptx, strlen(k_ptx), GPULEASE_IMAGE_AUTO, GPULEASE_INVALID_ARGUMENT,
              "not resolved");
  expect_fail(t, k_ptx, strlen(k_ptx), (gpulease_image_format)9, GPULEASE_INVALID_ARGUMENT,
              "not resolved");
  assert_int_equal(gl_modtab_count(t), 0);
  gl_modtab_free(t, false);
  assert_int_equal(x->be.loads, x->be.unloads);
}

static void test_release_unknown(void **state) {
  fx *x = *state;
  gl_modtab *t = gl_modtab_new(&x->be.base, x->jit);
  assert_non_null(t);
  int dummy;
  assert_false(gl_modtab_release(t, &dummy));
  assert_false(gl_modtab_release(t, NULL));
  void *m = acquire_ptx(t, k_ptx, GL_MODULE_CACHE_LOADED);
  assert_false(gl_modtab_release(t, &dummy));
  assert_true(gl_modtab_release(t, m));
  assert_false(gl_modtab_release(t, m));
  assert_int_equal(x->be.unloads, 1);
  gl_modtab_free(t, false);
  gl_modtab_free(NULL, false);
  gl_modtab_free(NULL, true);
}

static void test_free_forget(void **state) {
  fx *x = *state;
  gl_modtab *t = gl_modtab_new(&x->be.base, x->jit);
  assert_non_null(t);
  void *a = acquire_ptx(t, k_ptx, GL_MODULE_CACHE_LOADED);
  void *b = acquire_ptx(t, k_ptx2, GL_MODULE_CACHE_LOADED);
  gl_modtab_free(t, true); /* lost context: no unload calls */
  assert_int_equal(x->be.unloads, 0);
  /* What a lost context's process exit would free. */
  f_unload(&x->be.base, a);
  f_unload(&x->be.base, b);
}

/* ---- threads ------------------------------------------------------------ */

typedef struct tharg {
  gl_modtab *t;
  int id;
  int errors;
} tharg;

static void *th_main(void *p) {
  tharg *a = p;
  char own[256];
  snprintf(own, sizeof own, ".version 8.0\n.target sm_90\n.entry t%d() { ret; }\n", a->id);
  for (int i = 0; i < 300; i++) {
    const char *img = (i + a->id) % 2 ? k_ptx : own;
    void *m = NULL;
    uint8_t src;
    char err[256];
    if (gl_modtab_acquire(a->t, (const uint8_t *)img, strlen(img), GPULEASE_IMAGE_PTX, &m, &src,
                          err, sizeof err) != GPULEASE_OK) {
      a->errors++;
      continue;
    }
    fake_module *fm = m;
    if (fm->len != 5 + strlen(img) || memcmp(fm->text + 5, img, strlen(img)) != 0) a->errors++;
    if (!gl_modtab_release(a->t, m)) a->errors++;
  }
  return NULL;
}

static void test_threads_share(void **state) {
  fx *x = *state;
  gl_modtab *t = gl_modtab_new(&x->be.base, x->jit);
  assert_non_null(t);
  /* One long-lived reference, so k_ptx stays loaded throughout. */
  void *keep = acquire_ptx(t, k_ptx, GL_MODULE_CACHE_LOADED);
  pthread_t th[8];
  tharg args[8];
  for (int i = 0; i < 8; i++) {
    args[i] = (tharg){t, i, 0};
    assert_int_equal(pthread_create(&th[i], NULL, th_main, &args[i]), 0);
  }
  for (int i = 0; i < 8; i++) {
    assert_int_equal(pthread_join(th[i], NULL), 0);
    assert_int_equal(args[i].errors, 0);
  }
  assert_int_equal(gl_modtab_count(t), 1);
  /* k_ptx and each thread's own image: compiled once each (then disk). */
  assert_int_equal(x->be.compiles, 9);
  assert_true(gl_modtab_release(t, keep));
  assert_int_equal(gl_modtab_count(t), 0);
  gl_modtab_free(t, false);
  assert_int_equal(x->be.loads, x->be.unloads);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_shared_and_refcounted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_same_bytes_other_format, setup, teardown),
      cmocka_unit_test_setup_teardown(test_jit_disk_cache_restart, setup, teardown),
      cmocka_unit_test_setup_teardown(test_jit_binary_is_ptx, setup, teardown),
      cmocka_unit_test_setup_teardown(test_corrupt_cache_falls_back, setup, teardown),
      cmocka_unit_test_setup_teardown(test_binaries_skip_disk_cache, setup, teardown),
      cmocka_unit_test_setup_teardown(test_no_jit_loads_ptx_directly, setup, teardown),
      cmocka_unit_test_setup_teardown(test_failures_leave_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_module_memory_charged, setup, teardown),
      cmocka_unit_test_setup_teardown(test_release_unknown, setup, teardown),
      cmocka_unit_test_setup_teardown(test_free_forget, setup, teardown),
      cmocka_unit_test_setup_teardown(test_threads_share, setup, teardown),
  };
  if (getenv("GL_TEST_FILTER")) cmocka_set_test_filter(getenv("GL_TEST_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
