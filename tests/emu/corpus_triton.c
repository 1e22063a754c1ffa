/*
 * corpus_triton.c - Triton's tutorial kernels (tests/emu/triton/, PTX for
 * sm_80 and sm_90a that Triton 3.9 compiled: gen.py) as corpus cases:
 * inputs from a fixed seed and C references, run on the emulated device
 * (test_triton_emu) and on a GPU beside it (gl_corpus_gpu --triton).
 *
 * A Triton kernel is launched with num_warps * 32 threads per block (4
 * warps here: 128) and the dynamic shared memory Triton computed
 * (manifest.txt; the largest of both targets' is given); it takes two
 * trailing pointers after its own parameters, global and profile scratch,
 * both NULL when the compiler asked for no scratch memory (it did not for
 * these kernels).
 *
 * References and tolerances (docs/emulator.md, "Tensor cores"):
 *   vector_add   exact;
 *   softmax      ex2.approx and div.full: within 64 ulps of the double
 *                reference;
 *   layer_norm   sqrt.approx and div.full: within 64 ulps, or 1e-5 apart;
 *   matmul_f32   fp32 FMAs in some order: 1e-4 apart (sums of 80 products
 *                of [-1, 1] values);
 *   matmul_tf32  tensor cores on tf32 inputs: the reference truncates the
 *                inputs to tf32 (their low 13 mantissa bits cleared) and
 *                sums exactly; 5e-3 apart allows for rounding instead;
 *   matmul_f16   products of halves are exact in fp32 and summed in fp32,
 *                then rounded to half: within 2 half ulps of the rounded
 *                exact sum.
 * A wrong fragment layout or a dropped tile errs by O(1), far beyond each.
 */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "corpus.h"
#include "corpus_setup.h"

/* Triton's two trailing scratch pointers: NULL. */
static void param_scratch(gl_corpus_inst *in) {
  uint64_t z = 0;
  param_raw(in, &z, 8);
  param_raw(in, &z, 8);
}

static void triton_shape(gl_corpus_inst *in, uint32_t grid, uint32_t shared) {
  launch1(in, grid, 4 * 32);
  in->shared_bytes = shared;
}

static void setup_vector_add(gl_corpus_inst *in) {
  rng r = rng_seed("triton_vector_add");
  const int n = 5000; /* not a multiple of BLOCK (1024): the tail is masked */
  unsigned bx, by, bo;
  float *x = buf_new(in, n * 4u, &bx), *y = buf_new(in, n * 4u, &by);
  buf_new(in, n * 4u, &bo);
  for (int i = 0; i < n; i++) {
    x[i] = rng_f32(&r, -100, 100);
    y[i] = rng_f32(&r, -100, 100);
  }
  param_buf(in, bx);
  param_buf(in, by);
  param_buf(in, bo);
  param_i32(in, n);
  param_scratch(in);
  float *e = out_new(in, bo, GL_CORPUS_F32, GL_CORPUS_EXACT, "out");
  for (int i = 0; i < n; i++) e[i] = x[i] + y[i];
  triton_shape(in, (n + 1023) / 1024, 0);
}

static void setup_softmax(gl_corpus_inst *in) {
  rng r = rng_seed("triton_softmax");
  const int rows = 48, cols = 200; /* BLOCK 256: 56 masked columns */
  unsigned bi, bo;
  float *x = buf_new(in, (size_t)rows * cols * 4, &bi);
  buf_new(in, (size_t)rows * cols * 4, &bo);
  for (int i = 0; i < rows * cols; i++) x[i] = rng_f32(&r, -6, 6);
  param_buf(in, bo);
  param_buf(in, bi);
  param_i32(in, cols); /* in_stride */
  param_i32(in, cols); /* out_stride */
  param_i32(in, rows);
  param_i32(in, cols);
  param_scratch(in);
  float *e = out_new(in, bo, GL_CORPUS_F32, GL_CORPUS_ULP, "softmax");
  last_out(in)->ulp = 64;
  for (int y = 0; y < rows; y++) {
    const float *row = x + (size_t)y * cols;
    double m = -INFINITY, s = 0;
    for (int c = 0; c < cols; c++) m = fmax(m, row[c]);
    for (int c = 0; c < cols; c++) s += exp((double)row[c] - m);
    for (int c = 0; c < cols; c++) e[(size_t)y * cols + c] = (float)(exp((double)row[c] - m) / s);
  }
  triton_shape(in, 16, 1040); /* 16 programs loop over the 48 rows */
}

static void setup_layer_norm(gl_corpus_inst *in) {
  rng r = rng_seed("triton_layer_norm");
  const int rows = 24, n = 300; /* BLOCK 256: two passes per row, masked */
  const float eps = 1e-5f;
  unsigned bx, by, bw, bb, bm, br;
  float *x = buf_new(in, (size_t)rows * n * 4, &bx);
  buf_new(in, (size_t)rows * n * 4, &by);
  float *w = buf_new(in, n * 4u, &bw), *b = buf_new(in, n * 4u, &bb);
  buf_new(in, rows * 4u, &bm);
  buf_new(in, rows * 4u, &br);
  for (int i = 0; i < rows * n; i++) x[i] = rng_f32(&r, -3, 5);
  for (int i = 0; i < n; i++) {
    w[i] = rng_f32(&r, 0.5f, 1.5f);
    b[i] = rng_f32(&r, -0.5f, 0.5f);
  }
  param_buf(in, bx);
  param_buf(in, by);
  param_buf(in, bw);
  param_buf(in, bb);
  param_buf(in, bm);
  param_buf(in, br);
  param_i32(in, n); /* stride */
  param_i32(in, n);
  param_f32(in, eps);
  param_scratch(in);
  float *ey = out_new(in, by, GL_CORPUS_F32, GL_CORPUS_ULP, "y");
  last_out(in)->ulp = 64;
  last_out(in)->abs_tol = 1e-5;
  float *em = out_new(in, bm, GL_CORPUS_F32, GL_CORPUS_ULP, "mean");
  last_out(in)->ulp = 64;
  last_out(in)->abs_tol = 1e-6;
  float *er = out_new(in, br, GL_CORPUS_F32, GL_CORPUS_ULP, "rstd");
  last_out(in)->ulp = 64;
  for (int y = 0; y < rows; y++) {
    const float *row = x + (size_t)y * n;
    double mean = 0, var = 0;
    for (int c = 0; c < n; c++) mean += row[c];
    mean /= n;
    for (int c = 0; c < n; c++) var += (row[c] - mean) * (row[c] - mean);
    var /= n;
    double rstd = 1.0 / sqrt(var + eps);
    em[y] = (float)mean;
    er[y] = (float)rstd;
    for (int c = 0; c < n; c++) ey[(size_t)y * n + c] = (float)((row[c] - mean) * rstd * w[c] + b[c]);
  }
  triton_shape(in, rows, 16);
}

/* The tutorial's matmul: C (M x N) = A (M x K) . B (K x N), row-major,
 * 64 x 64 tiles in groups of 8 along M, K in steps of 32. */
enum mm_kind { MM_F32, MM_TF32, MM_F16 };
enum { MM_M = 96, MM_N = 128, MM_K = 80 }; /* M and K not multiples of the tiles */

static float tf32_trunc(float f) { return f32_bits(bits_f32(f) & 0xFFFFE000u); }

static void setup_matmul(gl_corpus_inst *in, enum mm_kind kind) {
  rng r = rng_seed(kind == MM_F32 ? "triton_matmul_f32" : kind == MM_TF32 ? "triton_matmul_tf32"
                                                                           : "triton_matmul_f16");
  size_t es = kind == MM_F16 ? 2 : 4;
  unsigned ba, bb, bc;
  uint8_t *a = buf_new(in, (size_t)MM_M * MM_K * es, &ba);
  uint8_t *b = buf_new(in, (size_t)MM_K * MM_N * es, &bb);
  buf_new(in, (size_t)MM_M * MM_N * es, &bc);
  double *A = malloc(sizeof(double) * MM_M * MM_K), *B = malloc(sizeof(double) * MM_K * MM_N);
  if (!A || !B) abort();
  for (int i = 0; i < MM_M * MM_K + MM_K * MM_N; i++) {
    float v = rng_f32(&r, -1, 1);
    bool in_a = i < MM_M * MM_K;
    int j = in_a ? i : i - MM_M * MM_K;
    double *d = in_a ? A : B;
    uint8_t *buf = in_a ? a : b;
    if (kind == MM_F16) {
      uint16_t h = d2h(v, 0.0);
      memcpy(buf + (size_t)j * 2, &h, 2);
      d[j] = h2d(h);
    } else {
      memcpy(buf + (size_t)j * 4, &v, 4);
      d[j] = kind == MM_TF32 ? tf32_trunc(v) : v;
    }
  }
  param_buf(in, ba);
  param_buf(in, bb);
  param_buf(in, bc);
  const int32_t shape[] = {MM_M, MM_N, MM_K, MM_K, 1, MM_N, 1, MM_N, 1};
  for (size_t i = 0; i < sizeof shape / sizeof shape[0]; i++) param_i32(in, shape[i]);
  param_scratch(in);
  void *e = out_new(in, bc, kind == MM_F16 ? GL_CORPUS_F16 : GL_CORPUS_F32, GL_CORPUS_ULP, "C");
  gl_corpus_out *o = last_out(in);
  o->ulp = kind == MM_F16 ? 2 : 64;
  o->abs_tol = kind == MM_F32 ? 1e-4 : kind == MM_TF32 ? 5e-3 : 0;
  for (int i = 0; i < MM_M; i++)
    for (int j = 0; j < MM_N; j++) {
      double s = 0; /* the products are exact in double; 80 terms of |x| <= 1 */
      for (int k = 0; k < MM_K; k++) s += A[i * MM_K + k] * B[k * MM_N + j];
      if (kind == MM_F16) {
        uint16_t h = d2h(s, 0.0);
        memcpy((uint8_t *)e + ((size_t)i * MM_N + j) * 2, &h, 2);
      } else {
        ((float *)e)[i * MM_N + j] = (float)s;
      }
    }
  free(A);
  free(B);
  /* programs: cdiv(M, 64) * cdiv(N, 64); shared: the larger target's */
  triton_shape(in, ((MM_M + 63) / 64) * ((MM_N + 63) / 64),
               kind == MM_F32 ? 32768 : kind == MM_TF32 ? 49152 : 8192);
}
static void setup_matmul_f32(gl_corpus_inst *in) { setup_matmul(in, MM_F32); }
static void setup_matmul_tf32(gl_corpus_inst *in) { setup_matmul(in, MM_TF32); }
static void setup_matmul_f16(gl_corpus_inst *in) { setup_matmul(in, MM_F16); }

const gl_corpus_case gl_corpus_triton_cases[] = {
    {"vector_add", "add_kernel", true, setup_vector_add},
    {"softmax", "softmax_kernel", true, setup_softmax},
    {"layer_norm", "layer_norm_fwd", true, setup_layer_norm},
    {"matmul_f32", "matmul_kernel", true, setup_matmul_f32},
    {"matmul_tf32", "matmul_kernel", true, setup_matmul_tf32},
    {"matmul_f16", "matmul_kernel", true, setup_matmul_f16},
};
const size_t gl_corpus_triton_ncases = sizeof gl_corpus_triton_cases / sizeof gl_corpus_triton_cases[0];
