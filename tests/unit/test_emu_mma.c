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
#include "emu_fixture.h"

#define REGION (64u << 20)

/* A file under tests/emu/ (NUL-terminated, malloc'd). */
static char *read_file(const char *rel, size_t *len) {
  char path[512];
  snprintf(path, sizeof path, "tests/emu/%s", rel);
  return read_src(path, len);
}

static void env_open(env *e, const char *rel) {
  size_t len = 0;
  char *ptx = read_file(rel, &len);
  env_load(e, REGION, ptx, len, rel);
  free(ptx);
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
  double v = e == 31 ? (man ? NAN : INFINITY) : e ? ldexp(1024 + man, e - 25) : ldexp(man, -24);
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

/* C = A * B, f32 in and out with tf32 products: inputs are multiples of
 * 1/8 (exact in tf32), so the result must be exact. */
static void triton_tf32(const char *rel, uint32_t shared) {
  enum { M = 128, N = 128, K = 128 };
  env e;
  env_open(&e, rel); /* as Triton wrote it, cp.async included */
  static float A[M * K], B[K * N], C[M * N];
  static double R[M * N];
  for (int i = 0; i < M * K; i++)
    A[i] = (float)small_val();
  for (int i = 0; i < K * N; i++)
    B[i] = (float)small_val();
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int k = 0; k < K; k++)
        s += (double)A[i * K + k] * B[k * N + j];
      R[i * N + j] = s;
    }
  uint64_t da = dput(&e, A, sizeof A), db = dput(&e, B, sizeof B), dc = dput(&e, NULL, sizeof C);
  int32_t m = M, n = N, k = K, sam = K, sak = 1, sbk = N, sbn = 1, scm = N, scn = 1;
  uint64_t zero = 0;
  void *args[] = {&da, &db, &dc, &m, &n, &k, &sam, &sak, &sbk, &sbn, &scm, &scn, &zero, &zero};
  RUN_OK(&e, "matmul_kernel", (M / 64) * (N / 64), 128, shared, args);
  dget(&e, dc, C, sizeof C);
  for (int i = 0; i < M * N; i++)
    if ((double)C[i] != R[i])
      fail_msg("%s: C[%d][%d] = %g, want %g", rel, i / N, i % N, (double)C[i], R[i]);
  env_close(&e);
}

static void test_triton_sm80_tf32(void **state) {
  (void)state;
  triton_tf32("triton/sm_80/matmul_tf32.ptx", 32768);
}

static void test_triton_sm90a_tf32(void **state) {
  (void)state;
  triton_tf32("triton/sm_90a/matmul_tf32.ptx", 49152);
}

static void test_triton_sm80_f16(void **state) {
  (void)state;
  triton_f16("triton/sm_80/matmul_f16.ptx", 8192);
}

static void test_triton_sm90a_f16(void **state) {
  (void)state;
  triton_f16("triton/sm_90a/matmul_f16.ptx", 8192);
}


/* ---- Element formats ----------------------------------------------------- */

static double from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static double from_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
/* tf32: the hardware reads an f32 register and ignores its low 13 bits */
static double from_tf32(uint32_t u) { return from_f32(u & ~0x1fffu); }

/* Random finite inputs with full mantissas in about [-2, 2]. */
static uint16_t rand_f16(void) { return (uint16_t)((rnd() & 0x83ffu) | ((13 + rnd() % 4) << 10)); }
static uint16_t rand_bf16(void) { return (uint16_t)((rnd() & 0x807fu) | ((125 + rnd() % 4) << 7)); }
static uint32_t rand_f32(void) {
  return (rnd() & 0x807fffffu) | ((125u + rnd() % 4) << 23);
}

/* ---- mma.sync ------------------------------------------------------------ */

enum { T_F16, T_BF16, T_TF32, T_F64, T_S8, T_U8, T_F32, T_S32 };

typedef struct mma_case {
  const char *kernel;
  int m, n, k;
  int at, bt, ct, dt;
  int na, nb, nc, nd; /* registers a lane */
  int sat;
} mma_case;

/* The PTX ISA's fragment tables for mma.sync, shape by shape: element i of
 * lane l's fragment of A (M x K), B (K x N) and C/D (M x N). */
static void pos_a(const mma_case *c, int l, int i, int *r, int *col) {
  int g = l >> 2, t = l & 3;
  if (c->at == T_F16 || c->at == T_BF16) {
    if (c->k == 16) {
      *r = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
      *col = t * 2 + (i & 1) + (i >= 4 ? 8 : 0);
    } else {
      *r = i < 2 ? g : g + 8;
      *col = t * 2 + (i & 1);
    }
  } else if (c->at == T_TF32) {
    if (c->k == 8) {
      *r = (i == 0 || i == 2) ? g : g + 8;
      *col = i < 2 ? t : t + 4;
    } else {
      *r = i == 0 ? g : g + 8;
      *col = t;
    }
  } else if (c->at == T_F64) {
    *r = g;
    *col = t;
  } else if (c->m == 8) { /* m8n8k16 s8/u8 */
    *r = g;
    *col = t * 4 + i;
  } else if (c->k == 32) {
    *r = (i < 4 || (i >= 8 && i < 12)) ? g : g + 8;
    *col = t * 4 + (i & 3) + (i >= 8 ? 16 : 0);
  } else {
    *r = i < 4 ? g : g + 8;
    *col = t * 4 + (i & 3);
  }
}

static void pos_b(const mma_case *c, int l, int i, int *r, int *col) {
  int g = l >> 2, t = l & 3;
  *col = g;
  if (c->bt == T_F16 || c->bt == T_BF16)
    *r = c->k == 16 ? t * 2 + (i & 1) + (i >= 2 ? 8 : 0) : t * 2 + i;
  else if (c->bt == T_TF32)
    *r = i == 0 ? t : t + 4;
  else if (c->bt == T_F64)
    *r = t;
  else if (c->k == 32)
    *r = t * 4 + (i & 3) + (i >= 4 ? 16 : 0);
  else
    *r = t * 4 + i;
}

static void pos_c(const mma_case *c, int l, int i, int *r, int *col) {
  int g = l >> 2, t = l & 3;
  *r = c->m == 8 ? g : (i < 2 ? g : g + 8);
  *col = t * 2 + (i & 1);
}

static int type_bits(int t) {
  return t == T_F16 || t == T_BF16 ? 16 : t == T_S8 || t == T_U8 ? 8 : t == T_F64 ? 64 : 32;
}

/* Element value from its bits. */
static double value_of(int t, uint64_t v) {
  switch (t) {
  case T_F16: return from_f16((uint16_t)v);
  case T_BF16: return from_bf16((uint16_t)v);
  case T_TF32: return from_tf32((uint32_t)v);
  case T_F32: return from_f32((uint32_t)v);
  case T_S8: return (int8_t)v;
  case T_U8: return (uint8_t)v;
  case T_S32: return (int32_t)v;
  default: {
    double d;
    memcpy(&d, &v, 8);
    return d;
  }
  }
}

static uint64_t rand_elem(int t) {
  switch (t) {
  case T_F16: return rand_f16();
  case T_BF16: return rand_bf16();
  case T_TF32:
  case T_F32: return rand_f32();
  case T_S8:
  case T_U8: return rnd() & 0xffu;
  case T_S32: return rnd() % 2001u - 1000u;
  default: {
    double d = ((int)(rnd() % 2001) - 1000) / 97.0;
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
  }
  }
}

/* Fills a lane-major register file (nregs a lane) from matrix X (rows x
 * cols, bits) through pos(). */
typedef void (*pos_fn)(const mma_case *, int, int, int *, int *);
static void pack(const mma_case *c, pos_fn pos, int t, int nregs, const uint64_t *X, int cols,
                 uint64_t *regs) {
  int bits = type_bits(t), per = bits >= 32 ? 1 : 32 / bits;
  memset(regs, 0, sizeof(uint64_t) * 32 * (size_t)nregs);
  for (int l = 0; l < 32; l++)
    for (int i = 0; i < nregs * per; i++) {
      int r, col;
      pos(c, l, i, &r, &col);
      uint64_t mask = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
      regs[l * nregs + i / per] |= (X[r * cols + col] & mask) << ((i % per) * bits);
    }
}

static void run_mma(env *e, const mma_case *c, int big_c) {
  uint64_t A[16 * 32], B[32 * 8], C[16 * 8];
  for (int i = 0; i < c->m * c->k; i++)
    A[i] = rand_elem(c->at);
  for (int i = 0; i < c->k * c->n; i++)
    B[i] = rand_elem(c->bt);
  for (int i = 0; i < c->m * c->n; i++) {
    C[i] = rand_elem(c->ct == T_F16 ? T_F16 : c->ct);
    if (big_c && c->dt == T_S32) /* near the s32 limits, so sums overflow */
      C[i] = (uint32_t)((i & 1) ? INT32_MIN + (int32_t)(rnd() % 1000) : INT32_MAX - (int32_t)(rnd() % 1000));
  }
  if (big_c && c->at == T_F16 && c->ct == T_F32) {
    /* NaN and infinities: row 0 has a NaN input, row 1 inf * 0 in column
     * 1, row 2 a -inf accumulator, row 3 inf + -inf in column 3 */
    for (int i = 0; i < c->m * c->k; i++)
      A[i] = 0x3c00; /* 1.0 */
    for (int i = 0; i < c->k * c->n; i++)
      B[i] = 0x3c00;
    for (int i = 0; i < c->m * c->n; i++)
      C[i] = 0;
    A[0 * c->k + 3] = 0x7e00;
    A[1 * c->k + 0] = 0x7c00;
    B[0 * c->n + 1] = 0;
    C[2 * c->n + 5] = 0xff800000u;
    A[3 * c->k + 2] = 0x7c00;
    C[3 * c->n + 3] = 0xff800000u;
  }
  uint64_t ra[32 * 4], rb[32 * 2], rc[32 * 4];
  pack(c, pos_a, c->at, c->na, A, c->k, ra);
  pack(c, pos_b, c->bt, c->nb, B, c->n, rb);
  pack(c, pos_c, c->ct, c->nc, C, c->n, rc);
  int w64 = c->at == T_F64;
  size_t es = w64 ? 8 : 4;
  uint8_t buf[32 * 4 * 8];
  uint64_t dev[4];
  const uint64_t *srcs[3] = {ra, rb, rc};
  int ns[3] = {c->na, c->nb, c->nc};
  for (int s = 0; s < 3; s++) {
    for (int i = 0; i < 32 * ns[s]; i++) {
      if (w64)
        memcpy(buf + i * 8, &srcs[s][i], 8);
      else {
        uint32_t v = (uint32_t)srcs[s][i];
        memcpy(buf + i * 4, &v, 4);
      }
    }
    dev[s] = dput(e, buf, 32 * (size_t)ns[s] * es);
  }
  dev[3] = dput(e, NULL, 32 * (size_t)c->nd * es);
  void *args[] = {&dev[0], &dev[1], &dev[2], &dev[3]};
  RUN_OK(e, c->kernel, 1, 32, 0, args);
  dget(e, dev[3], buf, 32 * (size_t)c->nd * es);
  int dbits = type_bits(c->dt), per = dbits >= 32 ? 1 : 32 / dbits;
  for (int l = 0; l < 32; l++)
    for (int i = 0; i < c->nd * per; i++) {
      int r, col;
      pos_c(c, l, i, &r, &col);
      uint64_t reg = 0;
      memcpy(&reg, buf + (size_t)(l * c->nd + i / per) * es, es);
      uint64_t bits = dbits == 64 ? reg : (reg >> ((i % per) * dbits)) & ((1ull << dbits) - 1);
      if (c->dt == T_S32) {
        int64_t want = (int32_t)(uint32_t)C[r * c->n + col];
        for (int k = 0; k < c->k; k++)
          want += (int64_t)value_of(c->at, A[r * c->k + k]) * (int64_t)value_of(c->bt, B[k * c->n + col]);
        if (c->sat)
          want = want > INT32_MAX ? INT32_MAX : want < INT32_MIN ? INT32_MIN : want;
        else
          want = (int32_t)(uint32_t)(uint64_t)want;
        if ((int32_t)bits != (int32_t)want)
          fail_msg("%s: D[%d][%d] = %d, want %lld", c->kernel, r, col, (int32_t)bits,
                   (long long)want);
        continue;
      }
      long double want = value_of(c->ct, C[r * c->n + col]), mag = fabsl(want);
      for (int k = 0; k < c->k; k++) {
        long double p = (long double)value_of(c->at, A[r * c->k + k]) *
                        value_of(c->bt, B[k * c->n + col]);
        want += p;
        mag += fabsl(p);
      }
      double got = value_of(c->dt, bits);
      if (isnan((double)want) || isinf((double)want)) {
        /* a NaN result is the canonical NaN; infinities are exact */
        uint64_t canon = c->dt == T_F16 ? 0x7fff : c->dt == T_F32 ? 0x7fffffff : bits;
        if (isnan((double)want) ? bits != canon || !isnan(got) : got != (double)want)
          fail_msg("%s: D[%d][%d] = %g (0x%llx), want %Lg", c->kernel, r, col, got,
                   (unsigned long long)bits, want);
        continue;
      }
      /* the stated tolerance: a few ulps of the largest terms */
      double tol = c->dt == T_F64 ? ldexp((double)mag, -50)
                   : c->dt == T_F16 ? ldexp((double)mag, -10) : ldexp((double)mag, -21);
      if (!(fabs(got - (double)want) <= tol))
        fail_msg("%s: D[%d][%d] = %.9g, want %.9Lg (tol %g)", c->kernel, r, col, got, want, tol);
    }
}

static const mma_case mma_cases[] = {
    {"mma_f16_16816_f32", 16, 8, 16, T_F16, T_F16, T_F32, T_F32, 4, 2, 4, 4, 0},
    {"mma_f16_16816_f16", 16, 8, 16, T_F16, T_F16, T_F16, T_F16, 4, 2, 2, 2, 0},
    {"mma_f16_1688_f32", 16, 8, 8, T_F16, T_F16, T_F32, T_F32, 2, 1, 4, 4, 0},
    {"mma_bf16_16816", 16, 8, 16, T_BF16, T_BF16, T_F32, T_F32, 4, 2, 4, 4, 0},
    {"mma_bf16_1688", 16, 8, 8, T_BF16, T_BF16, T_F32, T_F32, 2, 1, 4, 4, 0},
    {"mma_tf32_1688", 16, 8, 8, T_TF32, T_TF32, T_F32, T_F32, 4, 2, 4, 4, 0},
    {"mma_tf32_1684", 16, 8, 4, T_TF32, T_TF32, T_F32, T_F32, 2, 1, 4, 4, 0},
    {"mma_f64_884", 8, 8, 4, T_F64, T_F64, T_F64, T_F64, 1, 1, 2, 2, 0},
    {"mma_s8_16832", 16, 8, 32, T_S8, T_S8, T_S32, T_S32, 4, 2, 4, 4, 0},
    {"mma_u8s8_16832_sat", 16, 8, 32, T_U8, T_S8, T_S32, T_S32, 4, 2, 4, 4, 1},
    {"mma_s8u8_16816", 16, 8, 16, T_S8, T_U8, T_S32, T_S32, 2, 1, 4, 4, 0},
    {"mma_s8_8816", 8, 8, 16, T_S8, T_S8, T_S32, T_S32, 1, 1, 2, 2, 0},
};

static void test_mma(void **state) {
  (void)state;
  env e;
  env_open(&e, "mma/mma_sm80.ptx");
  for (size_t i = 0; i < sizeof mma_cases / sizeof mma_cases[0]; i++) {
    for (int rep = 0; rep < 4; rep++)
      run_mma(&e, &mma_cases[i], 0);
    /* s32: wrap-around, or saturation with .satfinite; f16 in, f32 out:
     * NaN and infinities */
    run_mma(&e, &mma_cases[i], 1);
  }
  env_close(&e);
}

/* ---- ldmatrix / stmatrix / movmatrix ------------------------------------- */

/* Element (r, c) of matrix j among 4 random 8x8 b16 matrices. */
#define MAT(mats, j, r, c) ((mats)[(j) * 64 + (r) * 8 + (c)])

static void test_ldmatrix(void **state) {
  (void)state;
  env e;
  env_open(&e, "mma/mma_sm80.ptx");
  static const char *const names[2][3] = {{"ldm_x1", "ldm_x2", "ldm_x4"},
                                          {"ldm_x1_t", "ldm_x2_t", "ldm_x4_t"}};
  for (int tr = 0; tr < 2; tr++)
    for (int v = 0; v < 3; v++) {
      int n = 1 << v;
      uint16_t mats[256];
      for (int i = 0; i < 256; i++)
        mats[i] = (uint16_t)rnd();
      uint64_t dm = dput(&e, mats, sizeof mats), dout = dput(&e, NULL, 32 * 4 * 4);
      void *args[] = {&dm, &dout};
      RUN_OK(&e, names[tr][v], 1, 32, 0, args);
      uint32_t out[128];
      dget(&e, dout, out, sizeof out);
      for (int l = 0; l < 32; l++)
        for (int j = 0; j < 4; j++) {
          uint32_t want = 0;
          if (j < n) {
            /* ISA: thread l gets row l/4, elements 2(l%4) and 2(l%4)+1 of
             * matrix j (of its transpose with .trans) */
            int row = l / 4, col = 2 * (l % 4);
            want = tr ? (uint32_t)MAT(mats, j, col, row) | (uint32_t)MAT(mats, j, col + 1, row) << 16
                      : (uint32_t)MAT(mats, j, row, col) | (uint32_t)MAT(mats, j, row, col + 1) << 16;
          }
          if (out[l * 4 + j] != want)
            fail_msg("%s: lane %d reg %d = 0x%08x, want 0x%08x", names[tr][v], l, j,
                     out[l * 4 + j], want);
        }
    }
  env_close(&e);
}

static void test_movmatrix(void **state) {
  (void)state;
  env e;
  env_open(&e, "mma/mma_sm80.ptx");
  uint32_t in[32], out[32];
  for (int i = 0; i < 32; i++)
    in[i] = rnd() ^ (rnd() << 16);
  uint64_t di = dput(&e, in, sizeof in), dout = dput(&e, NULL, sizeof out);
  void *args[] = {&di, &dout};
  RUN_OK(&e, "movm", 1, 32, 0, args);
  dget(&e, dout, out, sizeof out);
  /* the source: lane l holds M[l/4][2(l%4)] (low) and M[l/4][2(l%4)+1] */
  uint16_t M[8][8];
  for (int l = 0; l < 32; l++) {
    M[l / 4][2 * (l % 4)] = (uint16_t)in[l];
    M[l / 4][2 * (l % 4) + 1] = (uint16_t)(in[l] >> 16);
  }
  for (int l = 0; l < 32; l++) {
    uint32_t want = (uint32_t)M[2 * (l % 4)][l / 4] | (uint32_t)M[2 * (l % 4) + 1][l / 4] << 16;
    if (out[l] != want)
      fail_msg("movmatrix: lane %d = 0x%08x, want 0x%08x", l, out[l], want);
  }
  env_close(&e);
}

static void test_stmatrix(void **state) {
  (void)state;
  env e;
  env_open(&e, "mma/mma_sm90.ptx");
  static const char *const names[2][3] = {{"stm_x1", "stm_x2", "stm_x4"},
                                          {"stm_x1_t", "stm_x2_t", "stm_x4_t"}};
  for (int tr = 0; tr < 2; tr++)
    for (int v = 0; v < 3; v++) {
      int n = 1 << v;
      uint32_t in[128];
      for (int i = 0; i < 128; i++)
        in[i] = rnd() ^ (rnd() << 16);
      uint64_t di = dput(&e, in, sizeof in), dm = dput(&e, NULL, 512);
      void *args[] = {&di, &dm};
      RUN_OK(&e, names[tr][v], 1, 32, 0, args);
      uint16_t mats[256], want[256];
      dget(&e, dm, mats, sizeof mats);
      for (int i = 0; i < 256; i++)
        want[i] = 0xdead;
      for (int l = 0; l < 32; l++)
        for (int j = 0; j < n; j++) {
          int row = l / 4, col = 2 * (l % 4);
          uint16_t lo = (uint16_t)in[l * 4 + j], hi = (uint16_t)(in[l * 4 + j] >> 16);
          if (tr) {
            MAT(want, j, col, row) = lo;
            MAT(want, j, col + 1, row) = hi;
          } else {
            MAT(want, j, row, col) = lo;
            MAT(want, j, row, col + 1) = hi;
          }
        }
      for (int i = 0; i < 256; i++)
        if (mats[i] != want[i])
          fail_msg("%s: matrix %d (%d,%d) = 0x%04x, want 0x%04x", names[tr][v], i / 64,
                   (i / 8) % 8, i % 8, mats[i], want[i]);
    }
  env_close(&e);
}

/* ---- wgmma.mma_async ------------------------------------------------------ */

/* Where one operand lives in shared memory, and the descriptor fields. */
typedef struct wg_layout {
  int mn_major; /* 0: K-major */
  int W;        /* swizzle width in bytes: 0 (none), 32, 64, 128 */
  uint32_t lbo, sbo;
  uint32_t base, step; /* shared offset of k-step 0, bytes a k-step */
} wg_layout;

typedef struct wg_case {
  const char *kernel;
  int n, k, ksteps;
  int t;        /* T_F16, T_BF16, T_TF32 */
  int dt;       /* T_F32 or T_F16 */
  int nd;       /* accumulator registers a lane */
  int a_regs;   /* A from registers */
  int neg_a;    /* imm-scale-a = -1 */
  int scale_d;
  wg_layout la, lb;
} wg_case;

/* The canonical layouts of the PTX ISA's "Shared memory matrix layout": a
 * swizzled operand is made of rows of W bytes, and inside each 128-byte
 * line of the address space the 16-byte chunk index is XORed with the
 * line number modulo W/16 (rows of 8 x 128 bytes repeat every 1 KiB). */
static uint32_t wg_place(const wg_layout *L, int es, int mn, int k, int kper) {
  int ks = k / kper, kk = k % kper;
  uint32_t o = L->base + (uint32_t)ks * L->step;
  if (!L->mn_major) {
    int kb = kk * es;
    if (L->W == 0)
      o += (uint32_t)((mn % 8) * 16 + kb % 16) + (uint32_t)(mn / 8) * L->sbo + (uint32_t)(kb / 16) * L->lbo;
    else
      o += (uint32_t)((mn % 8) * L->W + kb) + (uint32_t)(mn / 8) * L->sbo;
  } else {
    int mb = mn * es;
    if (L->W == 0)
      o += (uint32_t)(mb % 16 + (kk % 8) * 16) + (uint32_t)(mb / 16) * L->sbo + (uint32_t)(kk / 8) * L->lbo;
    else
      o += (uint32_t)(mb % L->W + (kk % 8) * L->W) + (uint32_t)(mb / L->W) * L->lbo + (uint32_t)(kk / 8) * L->sbo;
  }
  if (L->W) {
    uint32_t line = (o / 128) % (uint32_t)(L->W / 16);
    uint32_t in_row = o % (uint32_t)L->W;
    o = o - in_row + ((in_row / 16) ^ line) * 16 + in_row % 16;
  }
  return o;
}

/* The descriptor of L, its start address relative to the shared memory
 * base (the kernel adds the base). */
static uint64_t wg_desc(const wg_layout *L) {
  uint64_t sw = L->W == 128 ? 1 : L->W == 64 ? 2 : L->W == 32 ? 3 : 0;
  return (uint64_t)(L->base >> 4) | (uint64_t)((L->lbo >> 4) & 0x3fff) << 16 |
         (uint64_t)((L->sbo >> 4) & 0x3fff) << 32 | sw << 62;
}

static void run_wgmma(env *e, const wg_case *c) {
  int es = c->t == T_TF32 ? 4 : 2, K = c->k * c->ksteps, N = c->n;
  static uint64_t A[64 * 64], B[64 * 256];
  static uint8_t img[32768];
  static uint32_t din[128 * 128], dout[128 * 128], areg[128 * 4];
  memset(img, 0, sizeof img);
  uint32_t img_bytes = 0;
  for (int m = 0; m < 64; m++)
    for (int k = 0; k < K; k++) {
      A[m * K + k] = c->t == T_F16 ? rand_f16() : c->t == T_BF16 ? rand_bf16() : rand_f32();
      if (c->a_regs)
        continue;
      uint32_t o = wg_place(&c->la, es, m, k, c->k);
      assert_true(o + (uint32_t)es <= sizeof img);
      memcpy(img + o, &A[m * K + k], (size_t)es);
      if (o + (uint32_t)es > img_bytes)
        img_bytes = o + (uint32_t)es;
    }
  for (int k = 0; k < K; k++)
    for (int n = 0; n < N; n++) {
      B[k * N + n] = c->t == T_F16 ? rand_f16() : c->t == T_BF16 ? rand_bf16() : rand_f32();
      uint32_t o = wg_place(&c->lb, es, n, k, c->k);
      assert_true(o + (uint32_t)es <= sizeof img);
      memcpy(img + o, &B[k * N + n], (size_t)es);
      if (o + (uint32_t)es > img_bytes)
        img_bytes = o + (uint32_t)es;
    }
  img_bytes = (img_bytes + 15) & ~15u;
  for (int i = 0; i < 128 * c->nd; i++)
    din[i] = c->dt == T_F32 ? rand_f32() : (uint32_t)rand_f16() | (uint32_t)rand_f16() << 16;
  if (c->a_regs) { /* each warp: the m16n8k16 (tf32: m16n8k8) A fragment of its 16 rows */
    mma_case frag = {"", 16, 8, 16, T_F16, T_F16, T_F32, T_F32, 4, 2, 4, 4, 0};
    if (c->t == T_TF32)
      frag = (mma_case){"", 16, 8, 8, T_TF32, T_TF32, T_F32, T_F32, 4, 2, 4, 4, 0};
    int per = c->t == T_TF32 ? 1 : 2;
    memset(areg, 0, sizeof areg);
    for (int t = 0; t < 128; t++)
      for (int i = 0; i < 4 * per; i++) {
        int r, col;
        pos_a(&frag, t % 32, i, &r, &col);
        areg[t * 4 + i / per] |= (uint32_t)A[(16 * (t / 32) + r) * K + col] << (16 * (i % per));
      }
  }
  uint64_t dimg = dput(e, img, img_bytes), ddin = dput(e, din, 128 * 4 * (size_t)c->nd);
  uint64_t ddout = dput(e, NULL, 128 * 4 * (size_t)c->nd), dareg = dput(e, areg, sizeof areg);
  uint32_t img16 = img_bytes / 16, astep = c->la.step >> 4, bstep = c->lb.step >> 4;
  uint64_t da = wg_desc(&c->la), db = wg_desc(&c->lb);
  int32_t ks = c->ksteps, sd = c->scale_d;
  void *args[] = {&dimg, &img16, &da, &db, &astep, &bstep, &ks, &ddin, &ddout, &sd, &dareg};
  RUN_OK(e, c->kernel, 1, 128, img_bytes, args);
  dget(e, ddout, dout, 128 * 4 * (size_t)c->nd);
  int per = c->dt == T_F32 ? 1 : 2;
  for (int t = 0; t < 128; t++)
    for (int i = 0; i < c->nd * per; i++) {
      /* accumulator fragment: warp w holds rows 16w..16w+15; element i of
       * lane l sits at row g (+8 for i%4 >= 2), column 8*(i/4) + 2*(l%4) + i%2 */
      int w = t / 32, l = t % 32;
      int row = 16 * w + l / 4 + ((i % 4) >= 2 ? 8 : 0), col = 8 * (i / 4) + 2 * (l % 4) + i % 2;
      uint32_t rin = din[t * c->nd + i / per], rout = dout[t * c->nd + i / per];
      uint32_t bin = per == 1 ? rin : (rin >> (16 * (i % 2))) & 0xffff;
      uint32_t bout = per == 1 ? rout : (rout >> (16 * (i % 2))) & 0xffff;
      long double want = c->scale_d ? value_of(c->dt, bin) : 0, mag = fabsl(want);
      for (int k = 0; k < K; k++) {
        long double p = (long double)value_of(c->t, A[row * K + k]) * value_of(c->t, B[k * N + col]);
        if (c->neg_a)
          p = -p;
        want += p;
        mag += fabsl(p);
      }
      double got = value_of(c->dt, bout);
      double tol = ldexp((double)mag, c->dt == T_F16 ? -10 : -21);
      if (!(fabs(got - (double)want) <= tol))
        fail_msg("%s: D[%d][%d] = %.9g, want %.9Lg (tol %g)", c->kernel, row, col, got, want, tol);
    }
}

static const wg_case wg_cases[] = {
    /* 128B swizzle, both K-major, four k-steps inside the 128-byte rows */
    {"wg_f16_n64_kk", 64, 16, 4, T_F16, T_F32, 32, 0, 0, 1,
     {0, 128, 16, 1024, 0, 32}, {0, 128, 16, 1024, 8192, 32}},
    /* both MN-major: A 64B swizzle in two 64-byte blocks, B 128B */
    {"wg_f16_n64_mm", 64, 16, 2, T_F16, T_F32, 32, 0, 0, 0,
     {1, 64, 1024, 512, 0, 2048}, {1, 128, 16, 1024, 4096, 2048}},
    /* no swizzle: A K-major, B N-major */
    {"wg_bf16_n16_km", 16, 16, 2, T_BF16, T_F32, 8, 0, 0, 1,
     {0, 0, 128, 256, 0, 2048}, {1, 0, 256, 128, 4096, 512}},
    /* N = 256 (128 accumulators): A 32B swizzle, B 64B swizzle */
    {"wg_f16_n256_kk", 256, 16, 2, T_F16, T_F32, 128, 0, 0, 1,
     {0, 32, 16, 256, 0, 2048}, {0, 64, 16, 512, 4096, 32}},
    /* f16 accumulators, imm-scale-a = -1 */
    {"wg_f16acc_n32", 32, 16, 1, T_F16, T_F16, 8, 0, 1, 1,
     {0, 128, 16, 1024, 0, 0}, {0, 0, 128, 256, 8192, 0}},
    /* tf32 (K-major only), N = 24 */
    {"wg_tf32_n24", 24, 8, 3, T_TF32, T_F32, 12, 0, 0, 1,
     {0, 32, 16, 256, 0, 2048}, {0, 128, 16, 1024, 6144, 32}},
    /* A from registers, scale-d false */
    {"wg_f16_n8_ra", 8, 16, 1, T_F16, T_F32, 4, 1, 0, 0,
     {0, 0, 0, 0, 0, 0}, {0, 0, 128, 256, 0, 0}},
    /* both MN-major with the 32B swizzle: A in four 32-byte blocks */
    {"wg_bf16_n16_mm", 16, 16, 2, T_BF16, T_F32, 8, 0, 0, 1,
     {1, 32, 512, 256, 0, 2048}, {1, 32, 16, 256, 4096, 512}},
    /* tf32 with A from registers */
    {"wg_tf32_n16_ra", 16, 8, 1, T_TF32, T_F32, 8, 1, 0, 1,
     {0, 0, 0, 0, 0, 0}, {0, 64, 16, 512, 0, 0}},
};

static void test_wgmma(void **state) {
  (void)state;
  env e;
  env_open(&e, "mma/mma_sm90.ptx");
  for (size_t i = 0; i < sizeof wg_cases / sizeof wg_cases[0]; i++)
    for (int rep = 0; rep < 2; rep++)
      run_wgmma(&e, &wg_cases[i]);
  env_close(&e);
}

/* ---- What the device refuses, and faults ----------------------------------- */

static gpulease_status load_text(env *e, const char *body) {
  char ptx[4096];
  snprintf(ptx, sizeof ptx,
           ".version 8.0\n.target sm_90a\n.address_size 64\n"
           ".visible .entry k(.param .u64 p)\n{\n.reg .pred %%p<4>;\n.reg .b32 %%r<40>;\n"
           ".reg .b64 %%rd<8>;\n.reg .f64 %%fd<8>;\n%s\nret;\n}\n",
           body);
  memset(e, 0, sizeof *e);
  e->dev = gl_emu_device_new(REGION);
  assert_non_null(e->dev);
  e->next = GL_EMU_REGION_BASE;
  return gl_emu_module_load(e->dev, ptx, strlen(ptx), &e->mod, e->err, sizeof e->err);
}

static void test_refused(void **state) {
  (void)state;
  static const struct {
    const char *insn;
    gpulease_status want;
  } cases[] = {
      /* valid PTX outside what the emulated device runs */
      {"mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%r0,%r1,%r2,%r3,%r4,%r5,%r6,%r7}, "
       "{%r8,%r9}, {%r10,%r11}, {%r12,%r13,%r14,%r15,%r16,%r17,%r18,%r19};",
       GPULEASE_UNSUPPORTED},
      {"mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%r0,%r1,%r2,%r3}, "
       "{%r4,%r5,%r6,%r7}, {%r8,%r9}, {%r10,%r11,%r12,%r13};",
       GPULEASE_UNSUPPORTED},
      {"mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f16 {%r0,%r1,%r2,%r3}, {%r4,%r5}, {%r6}, "
       "{%r7,%r8};",
       GPULEASE_UNSUPPORTED}, /* C and D types differ: ptxas refuses it too */
      {"ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8 {%r0,%r1}, [%r2];", GPULEASE_UNSUPPORTED},
      {"wmma.load.a.sync.aligned.row.m16n16k16.f16 {%r0,%r1,%r2,%r3,%r4,%r5,%r6,%r7}, [%rd0];",
       GPULEASE_UNSUPPORTED},
      {"wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%r0,%r1,%r2,%r3}, %rd0, %rd1, "
       "%p0, 1, 1;",
       GPULEASE_UNSUPPORTED},
      /* malformed */
      {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%r0,%r1,%r2}, {%r4,%r5,%r6,%r7}, "
       "{%r8,%r9}, {%r10,%r11,%r12,%r13};",
       GPULEASE_LOAD_FAILED},
      {"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r0,%r1}, [%r2];", GPULEASE_LOAD_FAILED},
      {"wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%r0,%r1,%r2,%r3}, %rd0, %rd1, "
       "%p0, 1, 1, 0, 2;",
       GPULEASE_LOAD_FAILED},
      /* accepted */
      {"fence.proxy.async.shared::cta;\nwgmma.fence.sync.aligned;\n"
       "wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 1;",
       GPULEASE_OK},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    env e;
    gpulease_status st = load_text(&e, cases[i].insn);
    if (st != cases[i].want)
      fail_msg("'%s': status %d, want %d (%s)", cases[i].insn, st, cases[i].want, e.err);
    if (st == GPULEASE_OK)
      gl_emu_module_unload(e.dev, e.mod);
    gl_emu_device_free(e.dev);
  }
}

/* A .sync.aligned matrix instruction reached by part of the warp (a
 * branch, or a guard false in some lanes) fails the launch. */
static void test_not_converged(void **state) {
  (void)state;
  static const char *const bodies[] = {
      "mov.u32 %r30, %tid.x;\nsetp.lt.u32 %p1, %r30, 16;\n@!%p1 bra DONE;\n"
      "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%r1,%r2,%r3,%r4}, {%r5,%r6}, {%r7}, "
      "{%r8,%r9,%r10,%r11};\nDONE:",
      "mov.u32 %r30, %tid.x;\nsetp.lt.u32 %p1, %r30, 16;\n"
      "@%p1 movmatrix.sync.aligned.m8n8.trans.b16 %r1, %r2;",
  };
  for (size_t i = 0; i < 2; i++) {
    env e;
    gpulease_status st = load_text(&e, bodies[i]);
    if (st != GPULEASE_OK)
      fail_msg("load: %s", e.err);
    uint64_t zero = 0;
    void *args[] = {&zero};
    assert_int_equal(run(&e, "k", 1, 32, 0, args), GPULEASE_LAUNCH_FAILED);
    assert_non_null(strstr(e.err, "CUDA_ERROR_ILLEGAL_INSTRUCTION"));
    assert_non_null(strstr(e.err, "0x0000ffff"));
    env_close(&e);
  }
}

/* wgmma needs its whole warpgroup in the block; a descriptor must stay
 * inside the block's shared memory. */
static void test_wgmma_faults(void **state) {
  (void)state;
  env e;
  env_open(&e, "mma/mma_sm90.ptx");
  static uint32_t zeros[128 * 4];
  uint64_t dz = dput(&e, zeros, sizeof zeros), dout = dput(&e, NULL, sizeof zeros);
  uint64_t img = dput(&e, zeros, 256);
  uint32_t img16 = 16, step = 0;
  int32_t ks = 1, sd = 0;
  uint64_t da = 0, db = (uint64_t)(128 >> 4) << 16 | (uint64_t)(256 >> 4) << 32;
  void *args[] = {&img, &img16, &da, &db, &step, &step, &ks, &dz, &dout, &sd, &dz};
  RUN_OK(&e, "wg_f16_n8_ra", 1, 128, 256, args);
  assert_int_equal(run(&e, "wg_f16_n8_ra", 1, 64, 256, args), GPULEASE_LAUNCH_FAILED);
  assert_non_null(strstr(e.err, "warpgroup"));
  db |= 0x3000; /* start at 0x30000: past the 256 bytes */
  assert_int_equal(run(&e, "wg_f16_n8_ra", 1, 128, 256, args), GPULEASE_LAUNCH_FAILED);
  assert_non_null(strstr(e.err, "CUDA_ERROR_ILLEGAL_ADDRESS"));
  env_close(&e);
}

/* ---- Against recorded GPU results (tests/emu/mma/gpu) ---------------------- */

/* The recording programs' generator, calls in the order their host
 * compiler made them. */
static uint32_t gpu_lcg;
static uint32_t glcg(void) {
  gpu_lcg = gpu_lcg * 1664525u + 1013904223u;
  return gpu_lcg >> 8;
}
static uint32_t g_h(int lo, int n) {
  uint32_t a = glcg(), b = glcg();
  return (a & 0x83ffu) | ((uint32_t)(lo + (int)(b % (uint32_t)n)) << 10);
}
static uint32_t g_f(int lo, int n) {
  uint32_t a = glcg(), b = glcg();
  return (a & 0x807fffffu) | ((uint32_t)(lo + (int)(b % (uint32_t)n)) << 23);
}
static uint32_t g_bf(void) {
  uint32_t a = glcg(), b = glcg();
  return (a & 0x807fu) | ((117u + b % 20u) << 7);
}

static void *read_bin(const char *rel, size_t want) {
  size_t len = 0;
  char *b = read_file(rel, &len);
  if (len != want)
    fail_msg("%s: %zu bytes, want %zu", rel, len, want);
  return b;
}

static float f32v(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Compares emulated results with a GPU's: identical, or within tol_units
 * * 2^-24 of the magnitude sum (|c| + sum |a*b|, from a run on the
 * inputs' absolute values). Returns the worst difference in those units. */
static double compare_gpu(const char *what, const uint32_t *emu, const uint32_t *gpu,
                          const uint32_t *mag, size_t n, double tol_units, size_t *same) {
  double worst = 0;
  *same = 0;
  for (size_t i = 0; i < n; i++) {
    if (emu[i] == gpu[i]) {
      (*same)++;
      continue;
    }
    double d = fabs((double)f32v(emu[i]) - f32v(gpu[i])) / f32v(mag[i]) / ldexp(1, -24);
    if (!(d <= tol_units))
      fail_msg("%s: result %zu = %.9g, the GPU's %.9g (magnitude %g): %.2f x 2^-24", what, i,
               (double)f32v(emu[i]), (double)f32v(gpu[i]), (double)f32v(mag[i]), d);
    if (d > worst)
      worst = d;
  }
  return worst;
}

/* mma.sync f16, tf32, bf16 (acc.cu): 64 blocks x 32 lanes x 3 fragments of
 * 4 results, as an H200 computed them. */
static void test_gpu_mma(void **state) {
  (void)state;
  enum { B = 64, NIN = B * 32 * 30, NOUT = B * 32 * 12 };
  env e;
  env_open(&e, "mma/gpu/acc.ptx");
  static uint32_t in[NIN], emu[NOUT], mag[NOUT];
  uint32_t *gpu = read_bin("mma/gpu/acc_h200.bin", sizeof emu);
  gpu_lcg = 7;
  for (int i = 0; i < NIN; i++) {
    int j = i % 30;
    if (j < 6) {
      uint32_t lo = g_h(5, 21);
      in[i] = lo | g_h(5, 21) << 16;
    } else if (j >= 20 && j < 26) {
      uint32_t lo = g_bf();
      in[i] = lo | g_bf() << 16;
    } else {
      in[i] = j >= 10 && j < 16 ? g_f(117, 20) : g_f(100, 50);
    }
  }
  for (int pass = 0; pass < 2; pass++) {
    static uint32_t ab[NIN];
    for (int i = 0; i < NIN; i++) {
      int j = i % 30;
      ab[i] = pass == 0 ? in[i] : (j < 6 || (j >= 20 && j < 26)) ? in[i] & 0x7fff7fffu : in[i] & 0x7fffffffu;
    }
    uint64_t da = dput(&e, ab, sizeof ab), dd = dput(&e, NULL, sizeof emu);
    void *args[] = {&da, &dd};
    RUN_OK(&e, "k", B, 32, 0, args);
    dget(&e, dd, pass == 0 ? emu : mag, sizeof emu);
  }
  static const char *const names[3] = {"f16 m16n8k16", "tf32 m16n8k8", "bf16 m16n8k16"};
  for (int t = 0; t < 3; t++) {
    static uint32_t ge[NOUT / 3], gg[NOUT / 3], gm[NOUT / 3];
    size_t n = 0, same;
    for (size_t i = 0; i < NOUT; i++)
      if ((i % 12) / 4 == (size_t)t) {
        ge[n] = emu[i];
        gg[n] = gpu[i];
        gm[n++] = mag[i];
      }
    double worst = compare_gpu(names[t], ge, gg, gm, n, 8.0, &same);
    print_message("%s: %zu of %zu results bit-identical to the H200, worst %.2f x 2^-24 of "
                  "sum|terms|\n", names[t], same, n, worst);
    assert_true(same > n / 8); /* the same rounding most of the time */
  }
  free(gpu);
  env_close(&e);
}

/* wgmma m64n64k16 f16 (wg.cu): one random image under eight descriptor
 * layouts, as an H200 computed them. */
static void test_gpu_wgmma(void **state) {
  (void)state;
  env e;
  env_open(&e, "mma/gpu/wg.ptx");
  static uint16_t img[8192], aimg[8192];
  static uint32_t emu[4096], mag[4096];
  uint32_t *gpu = read_bin("mma/gpu/wg_h200.bin", 8 * sizeof emu);
  gpu_lcg = 9;
  for (int i = 0; i < 8192; i++) {
    img[i] = (uint16_t)g_h(5, 21);
    aimg[i] = img[i] & 0x7fff;
  }
  static const int C[8][4] = {{0, 16, 1024, 1}, {0, 128, 256, 0}, {0, 16, 256, 3},
                              {0, 16, 512, 2},  {1, 16, 1024, 1}, {1, 1024, 512, 2},
                              {1, 512, 256, 3}, {1, 1024, 128, 0}};
  static const char *const sw[4] = {"none", "128B", "64B", "32B"};
  for (int k = 0; k < 8; k++) {
    const char *kn = C[k][0] ? "_Z1wILi1ELi1EEvPK5uint4mmPf" : "_Z1wILi0ELi0EEvPK5uint4mmPf";
    for (int pass = 0; pass < 2; pass++) {
      uint64_t dg = dput(&e, pass ? aimg : img, sizeof img), dout = dput(&e, NULL, sizeof emu);
      uint64_t da = (uint64_t)(C[k][1] / 16) << 16 | (uint64_t)(C[k][2] / 16) << 32 |
                    (uint64_t)C[k][3] << 62;
      uint64_t db = da | 8192 / 16;
      void *args[] = {&dg, &da, &db, &dout};
      RUN_OK(&e, kn, 1, 128, 16384, args);
      dget(&e, dout, pass ? mag : emu, sizeof emu);
    }
    char what[64];
    snprintf(what, sizeof what, "%s-major %s", C[k][0] ? "MN" : "K", sw[C[k][3]]);
    size_t same;
    double worst = compare_gpu(what, emu, gpu + k * 4096, mag, 4096, 8.0, &same);
    print_message("wgmma %s: %zu of 4096 bit-identical to the H200, worst %.2f x 2^-24\n", what,
                  same, worst);
    assert_true(same > 4096 / 8);
  }
  free(gpu);
  env_close(&e);
}

/* movmatrix and stmatrix (lay.cu): bit-identical to the H200. */
static void test_gpu_layout(void **state) {
  (void)state;
  enum { B = 64, N = B * 160 };
  env e;
  env_open(&e, "mma/gpu/lay.ptx");
  static uint32_t in[N], o[B * 32];
  static uint16_t m[B * 512];
  uint8_t *gpu = read_bin("mma/gpu/lay_h200.bin", sizeof o + sizeof m);
  gpu_lcg = 5;
  for (int i = 0; i < N; i++) {
    in[i] = glcg();
    in[i] ^= glcg() << 16;
  }
  uint64_t da = dput(&e, in, sizeof in), dout = dput(&e, NULL, sizeof o),
           dm = dput(&e, NULL, sizeof m);
  void *args[] = {&da, &dout, &dm};
  RUN_OK(&e, "_Z1kPKjPjPt", B, 32, 0, args);
  dget(&e, dout, o, sizeof o);
  dget(&e, dm, m, sizeof m);
  for (int i = 0; i < B * 32; i++) {
    uint32_t g;
    memcpy(&g, gpu + 4 * i, 4);
    if (o[i] != g)
      fail_msg("movmatrix: block %d lane %d = 0x%08x, the H200's 0x%08x", i / 32, i % 32, o[i], g);
  }
  for (int i = 0; i < B * 512; i++) {
    uint16_t g;
    memcpy(&g, gpu + sizeof o + 2 * i, 2);
    if (m[i] != g)
      fail_msg("stmatrix%s: block %d half %d = 0x%04x, the H200's 0x%04x",
               (i % 512) >= 256 ? ".trans" : "", i / 512, i % 512, m[i], g);
  }
  free(gpu);
  env_close(&e);
}

static uint32_t ari_h(void) {
  uint32_t m = glcg() & 0x83ffu;
  return m | (8u + glcg() % 10u) << 10;
}

/* u8*s8 .satfinite, f16 accumulators, f64 (ari.cu) against the H200. */
static void test_gpu_arith(void **state) {
  (void)state;
  enum { B = 64, N = B * 32 * 18, P = B * 32 * 4 };
  env e;
  env_open(&e, "mma/gpu/ari.ptx");
  static uint32_t in[N], o[B * 32 * 6];
  static double f[P], q[B * 32 * 2];
  uint8_t *gpu = read_bin("mma/gpu/ari_h200.bin", sizeof o + sizeof q);
  gpu_lcg = 3;
  for (int i = 0; i < N; i++) {
    int j = i % 18;
    uint32_t u = glcg();
    if (j < 6) {
      u ^= glcg() << 16;
    } else if (j < 10) {
      u = (u & 1) ? 0x7fffffffu - u % 65536 : u % 2001 - 1000;
    } else {
      u = ari_h();
      u |= ari_h() << 16;
    }
    in[i] = u;
  }
  for (int i = 0; i < P; i++)
    f[i] = ((int)(glcg() % 2000001) - 1000000) / 977.0;
  uint64_t da = dput(&e, in, sizeof in), df = dput(&e, f, sizeof f),
           dout = dput(&e, NULL, sizeof o), dq = dput(&e, NULL, sizeof q);
  void *args[] = {&da, &df, &dout, &dq};
  RUN_OK(&e, "_Z1kPKjPKdPjPd", B, 32, 0, args);
  dget(&e, dout, o, sizeof o);
  dget(&e, dq, q, sizeof q);
  int sat = 0, f16_same = 0, f16_n = 0, f64_same = 0;
  double f16_worst = 0, f64_worst = 0;
  for (int t = 0; t < B * 32; t++) {
    for (int r = 0; r < 6; r++) {
      uint32_t g;
      memcpy(&g, gpu + 4 * (t * 6 + r), 4);
      if (r < 4) { /* integer: exact */
        if (o[t * 6 + r] != g)
          fail_msg("u8*s8 satfinite: thread %d reg %d = %d, the H200's %d", t, r,
                   (int32_t)o[t * 6 + r], (int32_t)g);
        sat += g == 0x7fffffffu;
        continue;
      }
      for (int h = 0; h < 2; h++, f16_n++) {
        uint16_t a = (uint16_t)(o[t * 6 + r] >> (16 * h)), b = (uint16_t)(g >> (16 * h));
        if (a == b) {
          f16_same++;
          continue;
        }
        double d = fabs(from_f16(a) - from_f16(b)) / ldexp(1, ilogb(fabs(from_f16(b))) - 10);
        if (d > f16_worst)
          f16_worst = d;
      }
    }
    for (int r = 0; r < 2; r++) {
      double g;
      memcpy(&g, gpu + sizeof o + 8 * (t * 2 + r), 8);
      if (q[t * 2 + r] == g) {
        f64_same++;
        continue;
      }
      double d = fabs(q[t * 2 + r] - g) / ldexp(1, ilogb(fabs(g)) - 52);
      if (d > f64_worst)
        f64_worst = d;
    }
  }
  print_message("u8*s8 .satfinite: all %d identical (%d saturated); f16 accumulators: %d of %d "
                "identical, worst %.1f ulp; f64: %d of %d identical, worst %.1f ulp\n",
                B * 32 * 4, sat, f16_same, f16_n, f16_worst, f64_same, B * 32 * 2, f64_worst);
  /* on these inputs the H200 rounds every f16 and f64 result as the
   * emulator does */
  assert_true(sat > 0);
  assert_int_equal(f16_same, f16_n);
  assert_int_equal(f64_same, B * 32 * 2);
  free(gpu);
  env_close(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_triton_sm80_f16),
      cmocka_unit_test(test_triton_sm90a_f16),
      cmocka_unit_test(test_triton_sm80_tf32),
      cmocka_unit_test(test_triton_sm90a_tf32),
      cmocka_unit_test(test_mma),
      cmocka_unit_test(test_ldmatrix),
      cmocka_unit_test(test_movmatrix),
      cmocka_unit_test(test_stmatrix),
      cmocka_unit_test(test_wgmma),
      cmocka_unit_test(test_refused),
      cmocka_unit_test(test_not_converged),
      cmocka_unit_test(test_wgmma_faults),
      cmocka_unit_test(test_gpu_mma),
      cmocka_unit_test(test_gpu_wgmma),
      cmocka_unit_test(test_gpu_layout),
      cmocka_unit_test(test_gpu_arith),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
