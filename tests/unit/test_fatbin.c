/*
 * test_fatbin.c - the images of a fatbin (src/backend/fatbin.c), on
 * fatbins nvcc and fatbinary made (tests/data/fatbin/gen.sh): their
 * entries, the PTX picked for a device, each compression, and damaged
 * containers refused with a reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/fatbin.h"

static uint8_t *slurp(const char *name, size_t *len) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", GL_FATBIN_DIR, name);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc((size_t)n);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return buf;
}

/* The three images of ones.cu, whatever the compression. */
static void check_multi(const char *name, int compression) {
  size_t len;
  uint8_t *img = slurp(name, &len);
  gl_fatbin_entry es[8];
  size_t n = 0;
  char err[256];
  assert_int_equal(gl_fatbin_list(img, len, es, 8, &n, err, sizeof err), 0);
  assert_int_equal(n, 3);
  unsigned cubins = 0, ptx = 0;
  for (size_t i = 0; i < n; i++) {
    /* nvcc compresses the PTX; cubins only with --compress-mode=size */
    if (es[i].kind == GL_FATBIN_PTX) assert_int_equal(es[i].compression, compression);
    if (es[i].kind == GL_FATBIN_CUBIN) {
      cubins |= 1u << (es[i].arch == 75 ? 0 : es[i].arch == 90 ? 1 : 2);
    } else {
      assert_int_equal(es[i].kind, GL_FATBIN_PTX);
      assert_int_equal(es[i].arch, 90);
      assert_int_equal(es[i].isa_major, 9);
      ptx++;
    }
  }
  assert_int_equal(cubins, 3);
  assert_int_equal(ptx, 1);
  char *text = NULL;
  size_t tlen = 0;
  unsigned arch = 0;
  assert_int_equal(gl_fatbin_pick_ptx(img, len, 90, &text, &tlen, &arch, err, sizeof err), 0);
  assert_int_equal(arch, 90);
  assert_int_equal(strlen(text), tlen);
  assert_non_null(strstr(text, ".target sm_90"));
  assert_non_null(strstr(text, ".visible .entry k("));
  free(text);
  /* an sm_80 device: the PTX is for a newer one */
  assert_int_equal(gl_fatbin_pick_ptx(img, len, 80, &text, &tlen, &arch, err, sizeof err), -1);
  assert_null(text);
  assert_non_null(strstr(err, "no PTX for sm_80 or older"));
  assert_non_null(strstr(err, "cubin sm_75"));
  assert_non_null(strstr(err, "PTX sm_90 (ISA 9."));
  free(img);
}

static void test_zstd(void **state) {
  (void)state;
  check_multi("multi.fatbin", 2);
}
static void test_lz4(void **state) {
  (void)state;
  check_multi("multi_lz4.fatbin", 1);
}
static void test_plain(void **state) {
  (void)state;
  check_multi("plain.fatbin", 0);
}

static void test_pick(void **state) {
  (void)state;
  size_t len;
  char err[512];
  char *text = NULL;
  size_t tlen;
  unsigned arch;
  /* PTX for compute_75 only: what an sm_90 device compiles */
  uint8_t *img = slurp("ptx75.fatbin", &len);
  assert_int_equal(gl_fatbin_pick_ptx(img, len, 90, &text, &tlen, &arch, err, sizeof err), 0);
  assert_int_equal(arch, 75);
  assert_non_null(strstr(text, ".target sm_75"));
  free(text);
  free(img);
  /* cubins only */
  img = slurp("cubins.fatbin", &len);
  assert_int_equal(gl_fatbin_pick_ptx(img, len, 90, &text, &tlen, &arch, err, sizeof err), -1);
  assert_string_equal(err, "the fatbin holds no PTX for sm_90 or older (it holds: cubin sm_75, "
                           "cubin sm_80); add one with nvcc -gencode arch=compute_XX,code=compute_XX");
  free(img);
  /* fatbinary's container of a PTX of ISA 9.4 */
  img = slurp("isa94.fatbin", &len);
  gl_fatbin_entry e;
  size_t n;
  assert_int_equal(gl_fatbin_list(img, len, &e, 1, &n, err, sizeof err), 0);
  assert_int_equal(n, 1);
  assert_int_equal(e.isa_major, 9);
  assert_int_equal(e.isa_minor, 4);
  assert_int_equal(gl_fatbin_pick_ptx(img, len, 90, &text, &tlen, &arch, err, sizeof err), 0);
  assert_non_null(strstr(text, ".version 9.4"));
  free(text);
  free(img);
}

static void test_damaged(void **state) {
  (void)state;
  size_t len;
  uint8_t *img = slurp("multi.fatbin", &len);
  gl_fatbin_entry es[8];
  size_t n;
  char err[256];
  char *text;
  size_t tlen;
  unsigned arch;
  /* every truncation is refused or lists fewer entries, never read past */
  for (size_t cut = 0; cut < len; cut += 7) {
    uint8_t *c = malloc(cut ? cut : 1);
    memcpy(c, img, cut);
    if (gl_fatbin_list(c, cut, es, 8, &n, err, sizeof err) == 0) assert_true(n < 3);
    free(c);
  }
  assert_int_equal(gl_fatbin_list(img, 15, es, 8, &n, err, sizeof err), -1);
  assert_non_null(strstr(err, "not a fatbin"));
  uint8_t *bad = malloc(len);
  /* entries_size beyond the image */
  memcpy(bad, img, len);
  bad[12] = 0xFF;
  assert_int_equal(gl_fatbin_list(bad, len, es, 8, &n, err, sizeof err), -1);
  assert_non_null(strstr(err, "beyond the image"));
  /* an entry's kind */
  memcpy(bad, img, len);
  bad[16] = 7;
  assert_int_equal(gl_fatbin_list(bad, len, es, 8, &n, err, sizeof err), -1);
  assert_non_null(strstr(err, "kind 7"));
  /* a compressed payload that does not expand to its stated size: the
   * PTX entry's uncompressed size (u64 at 56 of its 80-byte header) + 1 */
  memcpy(bad, img, len);
  assert_int_equal(gl_fatbin_list(bad, len, es, 8, &n, err, sizeof err), 0);
  for (size_t i = 0; i < n; i++)
    if (es[i].kind == GL_FATBIN_PTX) {
      size_t hdr = (size_t)(es[i].payload - bad) - 80;
      assert_int_equal(bad[hdr], GL_FATBIN_PTX);
      bad[hdr + 56]++;
    }
  assert_int_equal(gl_fatbin_pick_ptx(bad, len, 90, &text, &tlen, &arch, err, sizeof err), -1);
  assert_non_null(strstr(err, "does not expand"));
  free(bad);
  free(img);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_zstd),  cmocka_unit_test(test_lz4),     cmocka_unit_test(test_plain),
      cmocka_unit_test(test_pick),  cmocka_unit_test(test_damaged),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
