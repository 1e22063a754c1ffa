/*
 * test_footprint.c - the device memory a module image declares
 * (src/backend/footprint.c): PTX texts written here for each form of
 * declaration, and the images nvcc made of tests/data/footprint/globals.cu
 * (gen.sh: 1 MiB + 16 bytes of globals, 256 bytes of constants) as PTX, a
 * cubin and a fatbin; damaged images refused with a reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/footprint.h"

static uint8_t *slurp(const char *name, size_t *len) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", GL_FOOTPRINT_DIR, name);
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

#define HDR ".version 8.0\n.target sm_90\n.address_size 64\n\n"

static gl_footprint ptx(const char *text) {
  gl_footprint f;
  char err[256];
  assert_int_equal(gl_footprint_of((const uint8_t *)text, strlen(text), GPULEASE_IMAGE_PTX, 90, &f,
                                   err, sizeof err),
                   0);
  assert_int_equal(f.code_bytes, 0);
  return f;
}

static void test_ptx_forms(void **state) {
  (void)state;
  /* the first declaration after the line directives (no ';' of their own) */
  assert_int_equal(ptx(HDR ".visible .global .align 4 .b8 big[1073741824];\n").global_bytes,
                   1073741824ull);
  /* a list of declarators, each aligned to its element */
  assert_int_equal(ptx(HDR ".global .u8 a;\n.global .u32 b, c[4];\n").global_bytes, 4 + 4 + 16);
  /* constants with an initializer; two dimensions; vectors; hex sizes */
  gl_footprint f = ptx(HDR ".const .align 8 .f64 k[3] = {1.0, 2.0, 3.0};\n");
  assert_int_equal(f.const_bytes, 24);
  assert_int_equal(f.global_bytes, 0);
  assert_int_equal(ptx(HDR ".global .f32 m[4][8];").global_bytes, 128);
  assert_int_equal(ptx(HDR ".global .v4 .f32 v[2];").global_bytes, 32);
  assert_int_equal(ptx(HDR ".global .b8 h[0x100];").global_bytes, 256);
  /* an unsized array takes its initializer's length, nested or flat */
  assert_int_equal(ptx(HDR ".global .u32 t[] = {1, 2, 3, 4, 5};").global_bytes, 20);
  assert_int_equal(ptx(HDR ".global .u16 t2[][2] = {{1, 2}, {3, 4}, {5, 6}};").global_bytes, 12);
  /* a size that overflows saturates */
  assert_int_equal(ptx(HDR ".global .b64 huge[0xffffffffffffffff];").global_bytes, UINT64_MAX);
  assert_int_equal(ptx(HDR ".global .b8 x[65536][65536][65536][65536][65536];").global_bytes,
                   UINT64_MAX);
}

static void test_ptx_not_counted(void **state) {
  (void)state;
  /* extern, shared, comments, strings, instructions and parameters add nothing */
  const char *text = HDR
      ".file 1 \"a.cu; .global .b8 s[99];\"\n"
      ".extern .global .u32 e[100];\n"
      "// .global .u32 x[1000];\n"
      "/* .global .b8 y[5000]; */\n"
      ".shared .align 4 .b8 sm[4096];\n"
      ".visible .entry k(\n\t.param .u64 k_param_0\n)\n.maxntid 256, 1, 1\n{\n"
      "\t.reg .b32 %r<5>;\n\t.local .align 8 .b8 __local_depot0[64];\n"
      "\tld.global.u32 %r1, [%rd1];\n\tst.global.u32 [%rd1], %r1;\n\tret;\n}\n";
  gl_footprint f = ptx(text);
  assert_int_equal(f.global_bytes, 0);
  assert_int_equal(f.const_bytes, 0);
  /* a .global in a function body is the module's storage too */
  f = ptx(HDR ".visible .entry k()\n{\n\t.global .align 4 .b8 g[64];\n\tret;\n}\n"
              ".global .u32 after[2];\n");
  assert_int_equal(f.global_bytes, 64 + 8);
}

static void test_nvcc_images(void **state) {
  (void)state;
  char err[256];
  size_t len;
  gl_footprint f;
  /* PTX: big (1 MiB, align 1), init (16 bytes, align 4), c (256 bytes) */
  uint8_t *img = slurp("globals.ptx", &len);
  assert_int_equal(gl_footprint_of(img, len, GPULEASE_IMAGE_AUTO, 90, &f, err, sizeof err), 0);
  assert_int_equal(f.global_bytes, (1u << 20) + 16);
  assert_int_equal(f.const_bytes, 256);
  free(img);
  /* cubin: .nv.global 1 MiB + .nv.global.init 16; .nv.constant3 (c) and
   * .nv.constant4 (the compiler's); .text.k; not the parameter bank
   * .nv.constant0.k */
  img = slurp("globals_sm90.cubin", &len);
  assert_int_equal(gl_footprint_of(img, len, GPULEASE_IMAGE_AUTO, 90, &f, err, sizeof err), 0);
  assert_int_equal(f.global_bytes, (1u << 20) + 16);
  assert_true(f.const_bytes >= 256 && f.const_bytes < 1024);
  assert_true(f.code_bytes > 0);
  gl_footprint cub = f;
  free(img);
  /* fatbin: the sm_90 cubin for sm_90 and sm_90's minor versions; the PTX
   * for another major; the largest with sm 0; nothing for sm_75 */
  img = slurp("globals.fatbin", &len);
  assert_int_equal(gl_footprint_of(img, len, GPULEASE_IMAGE_AUTO, 90, &f, err, sizeof err), 0);
  assert_memory_equal(&f, &cub, sizeof f);
  assert_int_equal(gl_footprint_of(img, len, GPULEASE_IMAGE_FATBIN, 100, &f, err, sizeof err), 0);
  assert_int_equal(f.code_bytes, 0);
  assert_int_equal(f.global_bytes, (1u << 20) + 16);
  assert_int_equal(gl_footprint_of(img, len, GPULEASE_IMAGE_FATBIN, 0, &f, err, sizeof err), 0);
  assert_int_equal(gl_footprint_total(&f), gl_footprint_total(&cub));
  assert_int_equal(gl_footprint_of(img, len, GPULEASE_IMAGE_FATBIN, 75, &f, err, sizeof err), -1);
  assert_non_null(strstr(err, "no image for sm_75"));
  free(img);
}

static void test_damaged(void **state) {
  (void)state;
  char err[256];
  gl_footprint f;
  size_t len;
  uint8_t *img = slurp("globals_sm90.cubin", &len);
  /* the section table moved past the end of the file */
  uint8_t *bad = malloc(len);
  memcpy(bad, img, len);
  uint64_t shoff = (uint64_t)len;
  memcpy(bad + 0x28, &shoff, 8); /* e_shoff */
  assert_int_equal(gl_footprint_of(bad, len, GPULEASE_IMAGE_CUBIN, 90, &f, err, sizeof err), -1);
  assert_non_null(strstr(err, "section table"));
  /* truncated ELF header; a PTX text declared a cubin */
  assert_int_equal(gl_footprint_of(img, 20, GPULEASE_IMAGE_CUBIN, 90, &f, err, sizeof err), -1);
  const char *text = HDR ".global .b8 a[4];";
  assert_int_equal(gl_footprint_of((const uint8_t *)text, strlen(text), GPULEASE_IMAGE_CUBIN, 90,
                                   &f, err, sizeof err),
                   -1);
  /* a fatbin cut short */
  free(img);
  img = slurp("globals.fatbin", &len);
  assert_int_equal(gl_footprint_of(img, len / 2, GPULEASE_IMAGE_FATBIN, 90, &f, err, sizeof err),
                   -1);
  free(img);
  free(bad);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ptx_forms),
      cmocka_unit_test(test_ptx_not_counted),
      cmocka_unit_test(test_nvcc_images),
      cmocka_unit_test(test_damaged),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
