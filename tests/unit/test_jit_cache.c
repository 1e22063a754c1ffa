/*
 * test_jit_cache.c - the on-disk JIT cache (src/worker/jit_cache.c).
 *
 * Each test works in its own mkdtemp directory: miss, put, hit; keys that
 * differ by tag or hash; damaged files (payload byte, truncation, renamed
 * under another key) are misses and are deleted; a new cache object on the
 * same directory hits (a daemon restart); disabled caches; eviction by
 * max_bytes keeps the newest (and what was read recently); bad tags; and
 * threads writing and reading one key at once.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <gnutls/crypto.h>

#include "common/util.h"
#include "worker/jit_cache.h"

#define TAG "cuda-sm90-drv13000"

typedef struct tmpdir {
  char root[256]; /* the mkdtemp directory */
  char dir[300];  /* the cache directory inside it (created by open) */
} tmpdir;

static int setup_dir(void **state) {
  tmpdir *t = calloc(1, sizeof *t);
  if (!t) return -1;
  const char *base = getenv("TMPDIR");
  snprintf(t->root, sizeof t->root, "%s/gl-jit-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(t->root)) return -1;
  snprintf(t->dir, sizeof t->dir, "%s/a/b/jit", t->root);
  *state = t;
  return 0;
}

static void rm_rf(const char *path) {
  DIR *d = opendir(path);
  if (d) {
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
      if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
      char sub[1024];
      snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
      rm_rf(sub);
    }
    closedir(d);
    rmdir(path);
  } else {
    unlink(path);
  }
}

static int teardown_dir(void **state) {
  tmpdir *t = *state;
  rm_rf(t->root);
  free(t);
  return 0;
}

static void sha(const char *s, uint8_t out[32]) {
  assert_int_equal(gnutls_hash_fast(GNUTLS_DIG_SHA256, s, strlen(s), out), 0);
}

static void entry_path(const tmpdir *t, const uint8_t key[32], const char *tag, char *out,
                       size_t n) {
  char hex[65];
  gl_hex_encode(key, 32, hex);
  snprintf(out, n, "%s/%s-%s.bin", t->dir, hex, tag);
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* Regular files in the cache directory (temporary ones included). */
static int file_count(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) n++;
  closedir(d);
  return n;
}

static void expect_hit(gl_jit_cache *c, const uint8_t key[32], const char *tag, const void *want,
                       size_t want_len) {
  uint8_t *bin = NULL;
  size_t len = 0;
  assert_true(gl_jit_cache_get(c, key, tag, &bin, &len));
  assert_int_equal(len, want_len);
  assert_memory_equal(bin, want, want_len);
  free(bin);
}

static void expect_miss(gl_jit_cache *c, const uint8_t key[32], const char *tag) {
  uint8_t *bin = (uint8_t *)(uintptr_t)1;
  size_t len = 7;
  assert_false(gl_jit_cache_get(c, key, tag, &bin, &len));
  assert_ptr_equal(bin, (uint8_t *)(uintptr_t)1); /* untouched */
  assert_int_equal(len, 7);
}

static void set_mtime(const char *path, time_t t) {
  struct timespec ts[2] = {{t, 0}, {t, 0}};
  assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static const char k_bin[] = "\x7f"
                            "ELF compiled binary \x00\x01\x02 with bytes";

static void test_miss_put_hit(void **state) {
  tmpdir *t = *state;
  gl_jit_cache *c = gl_jit_cache_open(t->dir, 1 << 20);
  assert_non_null(c);
  struct stat st;
  assert_int_equal(stat(t->dir, &st), 0); /* created, parents too */
  assert_true(S_ISDIR(st.st_mode));
  assert_int_equal(st.st_mode & 0777, 0700);

  uint8_t key[32];
  sha(".version 8.0\n.target sm_90\n", key);
  expect_miss(c, key, TAG);
  gl_jit_cache_put(c, key, TAG, (const uint8_t *)k_bin, sizeof k_bin);
  char path[512];
  entry_path(t, key, TAG, path, sizeof path);
  assert_true(exists(path));
  assert_int_equal(file_count(t->dir), 1); /* no temporary file left */
  expect_hit(c, key, TAG, k_bin, sizeof k_bin);
  /* Storing again replaces the file. */
  static const char other[] = "another binary";
  gl_jit_cache_put(c, key, TAG, (const uint8_t *)other, sizeof other);
  expect_hit(c, key, TAG, other, sizeof other);
  assert_int_equal(file_count(t->dir), 1);

  uint64_t hits, misses, stores;
  gl_jit_cache_stats(c, &hits, &misses, &stores);
  assert_int_equal(hits, 2);
  assert_int_equal(misses, 1);
  assert_int_equal(stores, 2);
  gl_jit_cache_stats(c, NULL, NULL, NULL);
  gl_jit_cache_close(c);
}

static void test_other_keys_miss(void **state) {
  tmpdir *t = *state;
  gl_jit_cache *c = gl_jit_cache_open(t->dir, 1 << 20);
  assert_non_null(c);
  uint8_t key[32], key2[32];
  sha("ptx one", key);
  sha("ptx two", key2);
  gl_jit_cache_put(c, key, TAG, (const uint8_t *)k_bin, sizeof k_bin);
  expect_miss(c, key, "cuda-sm80-drv13000");
  expect_miss(c, key, "emu-1");
  expect_miss(c, key2, TAG);
  expect_hit(c, key, TAG, k_bin, sizeof k_bin);
  gl_jit_cache_close(c);
}

/* Flips one byte of a file at offset (from the end when negative). */
static void flip_byte(const char *path, long offset) {
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  off_t at = offset < 0 ? st.st_size + offset : offset;
  uint8_t b;
  assert_int_equal(pread(fd, &b, 1, at), 1);
  b ^= 0x40;
  assert_int_equal(pwrite(fd, &b, 1, at), 1);
  close(fd);
}

static void test_corrupt_payload(void **state) {
  tmpdir *t = *state;
  gl_jit_cache *c = gl_jit_cache_open(t->dir, 1 << 20);
  assert_non_null(c);
  uint8_t key[32];
  sha("ptx corrupt", key);
  char path[512];
  entry_path(t, key, TAG, path, sizeof path);

  gl_jit_cache_put(c, key, TAG, (const uint8_t *)k_bin, sizeof k_bin);
  flip_byte(path, -3); /* in the payload */
  expect_miss(c, key, TAG);
  assert_false(exists(path));

  /* A header byte (the payload length) too. */
  gl_jit_cache_put(c, key, TAG, (const uint8_t *)k_bin, sizeof k_bin);
  flip_byte(path, 112);
  expect_miss(c, key, TAG);
  assert_false(exists(path));

  /* The magic. */
  gl_jit_cache_put(c, key, TAG, (const uint8_t *)k_bin, sizeof k_bin);
  flip_byte(path, 0);
  expect_miss(c, key, TAG);
  assert_false(exists(path));

  /* Stored again, it hits again. */
  gl_jit_cache_put(c, key, TAG, (const uint8_t *)k_bin, sizeof k_bin);
  expect_hit(c, key, TAG, k_bin, sizeof k_bin);
  gl_jit_cache_close(c);
}

static void test_truncated(void **state) {
  tmpdir *t = *state;
  gl_jit_cache *c = gl_jit_cache_open(t->dir, 1 << 20);
  assert_non_null(c);
  uint8_t key[32];
  sha("ptx truncated", key);
  char path[512];
  entry_path(t, key, TAG, path, sizeof path);
  const off_t sizes[] = {152 + (off_t)sizeof k_bin - 1, 152, 100, 0};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    gl_jit_cache_put(c, key, TAG, (const uint8_t *)k_bin, sizeof k_bin);
    assert_int_equal(truncate(path, sizes[i]), 0);
    expect_miss(c, key, TAG);
    assert_false(exists(path));
  }
  gl_jit_cache_close(c);
}

/* A whole, valid file under another key's name is refused. */
static void test_misplaced_file(void **state) {
  tmpdir *t = *state;
  gl_jit_cache *c = gl_jit_cache_open(t->dir, 1 << 20);
  assert_non_null(c);
  uint8_t key[32], key2[32];
  sha("ptx A", key);
  sha("ptx B", key2);
  char path[512], path2[512], path3[512];
  entry_path(t, key, TAG, path, sizeof path);
  entry_path(t, key2, TAG, path2, sizeof path2);
  entry_path(t, key, "cuda-sm90-drv13001", path3, sizeof path3);
  gl_jit_cache_put(c, key, TAG, (const uint8_t *)k_bin, sizeof k_bin);
  assert_int_equal(link(path, path2), 0);
  assert_int_equal(link(path, path3), 0);
  expect_miss(c, key2, TAG);
  assert_false(exists(path2));
  expect_miss(c, key, "cuda-sm90-drv13001");
  assert_false(exists(path3));
  expect_hit(c, key, TAG, k_bin, sizeof k_bin);
  gl_jit_cache_close(c);
}

static void test_restart(void **state) {
  tmpdir *t = *state;
  uint8_t key[32];
  sha("ptx restart", key);
  gl_jit_cache *c = gl_jit_cache_open(t->dir, 1 << 20);
  assert_non_null(c);
  gl_jit_cache_put(c, key, TAG, (const uint8_t *)k_bin, sizeof k_bin);
  gl_jit_cache_close(c);

  gl_jit_cache *c2 = gl_jit_cache_open(t->dir, 1 << 20);
  assert_non_null(c2);
  expect_hit(c2, key, TAG, k_bin, sizeof k_bin);
  uint64_t hits, misses, stores;
  gl_jit_cache_stats(c2, &hits, &misses, &stores);
  assert_int_equal(hits, 1);
  assert_int_equal(misses, 0);
  assert_int_equal(stores, 0);
  gl_jit_cache_close(c2);
}

static void check_disabled(gl_jit_cache *c) {
  assert_non_null(c);
  uint8_t key[32];
  sha("ptx disabled", key);
  gl_jit_cache_put(c, key, TAG, (const uint8_t *)k_bin, sizeof k_bin);
  expect_miss(c, key, TAG);
  uint64_t hits, misses, stores;
  gl_jit_cache_stats(c, &hits, &misses, &stores);
  assert_int_equal(hits, 0);
  assert_int_equal(misses, 1);
  assert_int_equal(stores, 0);
  gl_jit_cache_close(c);
}

static void test_disabled(void **state) {
  tmpdir *t = *state;
  check_disabled(gl_jit_cache_open(NULL, 1 << 20));
  check_disabled(gl_jit_cache_open("", 1 << 20));
  /* A directory that cannot be created: its parent is a regular file. */
  char file[512], bad[600];
  snprintf(file, sizeof file, "%s/plain", t->root);
  FILE *f = fopen(file, "w");
  assert_non_null(f);
  fclose(f);
  snprintf(bad, sizeof bad, "%s/sub", file);
  check_disabled(gl_jit_cache_open(bad, 1 << 20));
  check_disabled(gl_jit_cache_open(file, 1 << 20)); /* not a directory */
  /* NULL objects. */
  uint8_t key[32] = {0};
  uint8_t *bin = NULL;
  size_t len = 0;
  assert_false(gl_jit_cache_get(NULL, key, TAG, &bin, &len));
  gl_jit_cache_put(NULL, key, TAG, (const uint8_t *)k_bin, sizeof k_bin);
  uint64_t h = 9, m = 9, s = 9;
  gl_jit_cache_stats(NULL, &h, &m, &s);
  assert_int_equal(h + m + s, 0);
  gl_jit_cache_close(NULL);
}

static void test_eviction(void **state) {
  tmpdir *t = *state;
  enum { PAYLOAD = 1000, FILE_BYTES = 152 + PAYLOAD };
  uint8_t blob[PAYLOAD];
  for (int i = 0; i < PAYLOAD; i++) blob[i] = (uint8_t)(i * 7);
  /* Room for two files and a half. */
  gl_jit_cache *c = gl_jit_cache_open(t->dir, 2 * FILE_BYTES + FILE_BYTES / 2);
  assert_non_null(c);
  uint8_t ka[32], kb[32], kc[32], kd[32];
  sha("A", ka);
  sha("B", kb);
  sha("C", kc);
  sha("D", kd);
  char pa[512], pb[512], pc[512], pd[512];
  entry_path(t, ka, TAG, pa, sizeof pa);
  entry_path(t, kb, TAG, pb, sizeof pb);
  entry_path(t, kc, TAG, pc, sizeof pc);
  entry_path(t, kd, TAG, pd, sizeof pd);
  time_t now = time(NULL);

  gl_jit_cache_put(c, ka, TAG, blob, sizeof blob);
  set_mtime(pa, now - 300);
  gl_jit_cache_put(c, kb, TAG, blob, sizeof blob);
  set_mtime(pb, now - 200);
  gl_jit_cache_put(c, kc, TAG, blob, sizeof blob); /* three files: A, the oldest, goes */
  assert_false(exists(pa));
  assert_true(exists(pb));
  assert_true(exists(pc));
  set_mtime(pc, now - 100);

  /* Reading B makes it the most recently used: D's put evicts C. */
  expect_hit(c, kb, TAG, blob, sizeof blob);
  gl_jit_cache_put(c, kd, TAG, blob, sizeof blob);
  assert_true(exists(pb));
  assert_false(exists(pc));
  assert_true(exists(pd));

  /* A binary larger than the whole cache is not stored. */
  uint8_t *big = calloc(1, 3 * FILE_BYTES);
  assert_non_null(big);
  gl_jit_cache_put(c, ka, TAG, big, 3 * FILE_BYTES);
  assert_false(exists(pa));
  free(big);
  assert_int_equal(file_count(t->dir), 2);
  gl_jit_cache_close(c);
}

static void test_stale_temp_removed(void **state) {
  tmpdir *t = *state;
  gl_jit_cache *c = gl_jit_cache_open(t->dir, 1 << 20);
  assert_non_null(c);
  char stale[512], fresh[512];
  snprintf(stale, sizeof stale, "%s/.tmp-0123456789abcdef-AbCdEf", t->dir);
  snprintf(fresh, sizeof fresh, "%s/.tmp-0123456789abcdef-XyZxYz", t->dir);
  FILE *f = fopen(stale, "w");
  assert_non_null(f);
  fclose(f);
  f = fopen(fresh, "w");
  assert_non_null(f);
  fclose(f);
  set_mtime(stale, time(NULL) - 2 * 3600);
  uint8_t key[32];
  sha("ptx", key);
  gl_jit_cache_put(c, key, TAG, (const uint8_t *)k_bin, sizeof k_bin);
  assert_false(exists(stale));
  assert_true(exists(fresh)); /* maybe a writer at work */
  gl_jit_cache_close(c);
}

static void test_bad_tags(void **state) {
  tmpdir *t = *state;
  gl_jit_cache *c = gl_jit_cache_open(t->dir, 1 << 20);
  assert_non_null(c);
  uint8_t key[32];
  sha("ptx tags", key);
  char long_tag[66];
  memset(long_tag, 'a', 65);
  long_tag[65] = 0;
  const char *bad[] = {"", "a/b", "../x", "sp ace", "tab\t", "uni\xc3\xa9", long_tag, NULL};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gl_jit_cache_put(c, key, bad[i], (const uint8_t *)k_bin, sizeof k_bin);
    assert_int_equal(file_count(t->dir), 0);
    expect_miss(c, key, bad[i]);
  }
  /* 64 characters of every allowed kind is fine. */
  long_tag[64] = 0;
  memcpy(long_tag, "AZaz09._-", 9);
  gl_jit_cache_put(c, key, long_tag, (const uint8_t *)k_bin, sizeof k_bin);
  expect_hit(c, key, long_tag, k_bin, sizeof k_bin);
  /* An empty binary is not stored. */
  uint8_t key2[32];
  sha("ptx empty", key2);
  gl_jit_cache_put(c, key2, TAG, (const uint8_t *)k_bin, 0);
  expect_miss(c, key2, TAG);
  assert_int_equal(file_count(t->dir), 1);
  gl_jit_cache_close(c);
}

/* ---- threads: writers and readers of one key ---------------------------- */

typedef struct race {
  gl_jit_cache *c;
  uint8_t key[32];
  uint8_t blob[4096];
  int bad;
} race;

static void *race_main(void *p) {
  race *r = p;
  for (int i = 0; i < 200; i++) {
    if (i % 3 == 0) gl_jit_cache_put(r->c, r->key, TAG, r->blob, sizeof r->blob);
    uint8_t *bin = NULL;
    size_t len = 0;
    if (gl_jit_cache_get(r->c, r->key, TAG, &bin, &len)) {
      if (len != sizeof r->blob || memcmp(bin, r->blob, len) != 0)
        __atomic_add_fetch(&r->bad, 1, __ATOMIC_RELAXED);
      free(bin);
    }
  }
  return NULL;
}

static void test_concurrent_same_key(void **state) {
  tmpdir *t = *state;
  race *r = calloc(1, sizeof *r);
  assert_non_null(r);
  r->c = gl_jit_cache_open(t->dir, 1 << 20);
  assert_non_null(r->c);
  sha("ptx race", r->key);
  for (size_t i = 0; i < sizeof r->blob; i++) r->blob[i] = (uint8_t)(i * 13 + 1);
  pthread_t th[6];
  for (int i = 0; i < 6; i++) assert_int_equal(pthread_create(&th[i], NULL, race_main, r), 0);
  for (int i = 0; i < 6; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
  assert_int_equal(r->bad, 0);
  expect_hit(r->c, r->key, TAG, r->blob, sizeof r->blob);
  assert_int_equal(file_count(t->dir), 1);
  uint64_t hits, misses, stores;
  gl_jit_cache_stats(r->c, &hits, &misses, &stores);
  assert_int_equal(stores, 6 * 67);
  assert_int_equal(hits + misses, 6 * 200 + 1);
  gl_jit_cache_close(r->c);
  free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_miss_put_hit, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_other_keys_miss, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_corrupt_payload, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_truncated, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_misplaced_file, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_restart, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_disabled, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_eviction, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_stale_temp_removed, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_bad_tags, setup_dir, teardown_dir),
      cmocka_unit_test_setup_teardown(test_concurrent_same_key, setup_dir, teardown_dir),
  };
  if (getenv("GL_TEST_FILTER")) cmocka_set_test_filter(getenv("GL_TEST_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
