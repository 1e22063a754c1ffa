/*
 * corpus_cases.c - the cases of the kernel corpus: for each kernel of
 * tests/emu/kernels/, its inputs (pseudo-random from a fixed seed, edge
 * values mixed in) and a C reference that computes the expected outputs.
 *
 * The references must match IEEE arithmetic bit for bit wherever the
 * kernel's operation is correctly rounded, so this file is compiled
 * without contraction (-ffp-contract=off, and the pragma for clang) and
 * with -frounding-math (directed roundings use fesetround). Where nvcc
 * contracts a*b+c into one fma, the reference calls fmaf/fma. Integer
 * references use unsigned arithmetic where the device wraps.
 *
 * Chapters: helpers (random data, conversions with PTX semantics, half
 * precision), then one section per group of kernels, then the case table.
 */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#include <fenv.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "corpus.h"
#include "corpus_setup.h"

/* Instance building, random data and half precision: corpus_setup.h. */

/* A float with a random sign, mantissa and exponent in [emin, emax]
 * (below -126: rounded to a denormal or zero); one time in eight an edge
 * value instead (quiet NaN, inf, zeros, denormals, ...). Never a
 * signaling NaN: C's fmin and PTX min disagree on those. */
static float rng_f32_edge(rng *r, int emin, int emax) {
  static const uint32_t edges[] = {
      0x7fc00000u, 0xffc00000u, 0x7fc12345u, /* quiet NaNs */
      0x7f800000u, 0xff800000u,              /* +-inf */
      0x00000000u, 0x80000000u,              /* +-0 */
      0x00000001u, 0x80000001u, 0x007fffffu, 0x00400000u, /* denormals */
      0x00800000u, 0x80800000u,              /* +-FLT_MIN */
      0x7f7fffffu, 0xff7fffffu,              /* +-FLT_MAX */
      0x3f800000u, 0xbf800000u, 0x3f000000u, 0x4b800001u, 0x4f000000u, 0xcf000000u,
      0x4f800000u, 0x5f000000u, 0xdf000000u, 0x3effffffu, 0x3fc00000u, 0x40200000u,
      0xbfc00000u, 0x4b7fffffu, 0x3f7fffffu};
  if (rng_below(r, 8) == 0) return f32_bits(edges[rng_below(r, sizeof edges / sizeof *edges)]);
  uint32_t m = rng_u32(r) & 0x7fffffu;
  int e = rng_range(r, emin, emax);
  float v = ldexpf((float)(m | 0x800000u), e - 23); /* exact, or a rounded denormal */
  return rng_below(r, 2) ? -v : v;
}

static double rng_f64_edge(rng *r, int emin, int emax) {
  static const uint64_t edges[] = {
      0x7ff8000000000000ull, 0xfff8000000000000ull, 0x7ff0000000000000ull,
      0xfff0000000000000ull, 0x0000000000000000ull, 0x8000000000000000ull,
      0x0000000000000001ull, 0x800fffffffffffffull, 0x0008000000000000ull,
      0x0010000000000000ull, 0x7fefffffffffffffull, 0xffefffffffffffffull,
      0x3ff0000000000000ull, 0xbff0000000000000ull, 0x4340000000000001ull,
      0x3fefffffffffffffull, 0x4000000000000000ull, 0x3fe0000000000000ull};
  if (rng_below(r, 8) == 0) return f64_bits(edges[rng_below(r, sizeof edges / sizeof *edges)]);
  uint64_t m = rng_u64(r) & 0xfffffffffffffull;
  int e = rng_range(r, emin, emax);
  double v = ldexp((double)(m | 0x10000000000000ull), e - 52);
  return rng_below(r, 2) ? -v : v;
}

static int32_t rng_i32_edge(rng *r) {
  static const int32_t edges[] = {0,       1,        -1,      2,          -2,     INT_MIN,
                                  INT_MAX, INT_MIN + 1, 0x7fff, -0x8000, 0xffff, 0x10000,
                                  0x800000, -0x800000, 0x7fffff, 255,     -256};
  uint32_t k = rng_below(r, 8);
  if (k == 0) return edges[rng_below(r, sizeof edges / sizeof *edges)];
  if (k < 3) return rng_range(r, -1000, 1000);
  return (int32_t)rng_u32(r);
}

static int64_t rng_i64_edge(rng *r) {
  static const int64_t edges[] = {0, 1, -1, 2, INT64_MIN, INT64_MAX, INT64_MIN + 1,
                                  0x100000000ll, -0x100000000ll, 0xffffffffll, 0x7fffffffll,
                                  -0x80000000ll, 3, -3, 1000000007ll};
  uint32_t k = rng_below(r, 8);
  if (k == 0) return edges[rng_below(r, sizeof edges / sizeof *edges)];
  if (k == 1) return rng_range(r, -100000, 100000);
  if (k == 2) return (int64_t)(int32_t)rng_u32(r);
  return (int64_t)rng_u64(r);
}

/* ==========================================================================
 * Helpers: conversions and operations with PTX semantics
 * ======================================================================== */

/* cvt.{rni,rzi,rmi,rpi}.s32.f32 etc: round, then saturate; NaN gives 0. */
typedef enum { RN, RZ, RD, RU } rmode;

static double round_to_int(double x, rmode m) {
  switch (m) {
  case RN: return nearbyint(x); /* the default mode: ties to even */
  case RZ: return trunc(x);
  case RD: return floor(x);
  case RU: return ceil(x);
  }
  return x;
}
static int32_t cvt_s32(double x, rmode m) {
  if (isnan(x)) return 0;
  double r = round_to_int(x, m);
  if (r >= 2147483648.0) return INT32_MAX;
  if (r < -2147483648.0) return INT32_MIN;
  return (int32_t)r;
}
static uint32_t cvt_u32(double x, rmode m) {
  if (isnan(x)) return 0;
  double r = round_to_int(x, m);
  if (r >= 4294967296.0) return UINT32_MAX;
  if (r <= 0.0) return 0;
  return (uint32_t)r;
}
/* NaN to a 64-bit integer: PTX's documentation says 0, but NVIDIA GPUs
 * (H200, measured) give 0x8000000000000000, signed or not. */
static int64_t cvt_s64(double x, rmode m) {
  if (isnan(x)) return INT64_MIN;
  double r = round_to_int(x, m);
  if (r >= 9223372036854775808.0) return INT64_MAX;
  if (r < -9223372036854775808.0) return INT64_MIN;
  return (int64_t)r;
}
static uint64_t cvt_u64(double x, rmode m) {
  if (isnan(x)) return 1ull << 63;
  double r = round_to_int(x, m);
  if (r >= 18446744073709551616.0) return UINT64_MAX;
  if (r <= 0.0) return 0;
  return (uint64_t)r;
}

/* An exact double rounded to float in mode m (for int -> float). */
static float f32_round(double exact, rmode m) {
  float f = (float)exact; /* nearest */
  double back = (double)f;
  switch (m) {
  case RN: break;
  case RZ:
    if (fabs(back) > fabs(exact)) f = nextafterf(f, 0.0f);
    break;
  case RD:
    if (back > exact) f = nextafterf(f, -INFINITY);
    break;
  case RU:
    if (back < exact) f = nextafterf(f, INFINITY);
    break;
  }
  return f;
}

/* Directed-rounding float operations: the host FPU in that mode. */
static const int fe_modes[] = {FE_TONEAREST, FE_TOWARDZERO, FE_DOWNWARD, FE_UPWARD};
static float fop_dir(char op, float a, float b, float c, rmode m) {
  volatile float va = a, vb = b, vc = c, r;
  int old = fegetround();
  fesetround(fe_modes[m]);
  switch (op) {
  case '+': r = va + vb; break;
  case '*': r = va * vb; break;
  case '/': r = va / vb; break;
  case 's': r = sqrtf(va); break;
  default: r = fmaf(va, vb, vc); break;
  }
  fesetround(old);
  return r;
}

static uint16_t f2h(float f) { return d2h((double)f, 0.0); }
static uint16_t hadd(uint16_t a, uint16_t b) { return d2h(h2d(a) + h2d(b), 0.0); }
static uint16_t hsub(uint16_t a, uint16_t b) { return d2h(h2d(a) - h2d(b), 0.0); }
static uint16_t hmul(uint16_t a, uint16_t b) { return d2h(h2d(a) * h2d(b), 0.0); }
static uint16_t hfma(uint16_t a, uint16_t b, uint16_t c) {
  double p = h2d(a) * h2d(b), q = h2d(c); /* p is exact */
  double s = p + q;
  if (isnan(s) || isinf(s) || isinf(p) || isinf(q)) return d2h(s, 0.0);
  double bb = s - p, e = (p - (s - bb)) + (q - bb); /* TwoSum: s + e == p + q */
  return d2h(s, e);
}

/* ==========================================================================
 * Element-wise, 2D indexing, matmul
 * ======================================================================== */

static void setup_saxpy(gl_corpus_inst *in) {
  rng r = rng_seed("saxpy");
  const int n = 1 << 20;
  unsigned bx, by;
  float *x = buf_new(in, n * 4u, &bx), *y = buf_new(in, n * 4u, &by);
  float a = 2.5f;
  for (int i = 0; i < n; i++) {
    x[i] = rng_f32_edge(&r, -8, 8);
    y[i] = rng_f32_edge(&r, -8, 8);
  }
  param_i32(in, n);
  param_f32(in, a);
  param_buf(in, bx);
  param_buf(in, by);
  float *e = out_new(in, by, GL_CORPUS_F32, GL_CORPUS_EXACT, "y");
  for (int i = 0; i < n; i++) e[i] = fmaf(a, x[i], y[i]);
  launch1(in, (n + 255) / 256, 256);
}

static void setup_transpose(gl_corpus_inst *in, bool tiled) {
  rng r = rng_seed(tiled ? "transpose_tiled" : "transpose_naive");
  const int rows = tiled ? 100 : 67, cols = tiled ? 70 : 45;
  unsigned bi, bo;
  float *src = buf_new(in, (size_t)rows * cols * 4, &bi);
  buf_new(in, (size_t)rows * cols * 4, &bo);
  for (int i = 0; i < rows * cols; i++) src[i] = rng_f32_edge(&r, -30, 30);
  param_buf(in, bi);
  param_buf(in, bo);
  param_i32(in, rows);
  param_i32(in, cols);
  float *e = out_new(in, bo, GL_CORPUS_F32, GL_CORPUS_EXACT, "out");
  for (int y = 0; y < rows; y++)
    for (int x = 0; x < cols; x++) e[x * rows + y] = src[y * cols + x];
  if (tiled) {
    in->block[0] = 32, in->block[1] = 8;
    in->grid[0] = (cols + 31) / 32, in->grid[1] = (rows + 31) / 32;
  } else {
    in->block[0] = 16, in->block[1] = 8;
    in->grid[0] = (cols + 15) / 16, in->grid[1] = (rows + 7) / 8;
  }
}
static void setup_transpose_naive(gl_corpus_inst *in) { setup_transpose(in, false); }
static void setup_transpose_tiled(gl_corpus_inst *in) { setup_transpose(in, true); }

/* C = A * B exactly as the tiled kernels accumulate: tiles of tw, one fma
 * per step, zeros past the edges. */
static void matmul_ref(const float *A, const float *B, float *C, int m, int n, int k, int tw) {
  for (int row = 0; row < m; row++)
    for (int col = 0; col < n; col++) {
      float acc = 0.0f;
      for (int t = 0; t < (k + tw - 1) / tw; t++)
        for (int p = 0; p < tw; p++) {
          int kk = t * tw + p;
          float a = kk < k ? A[row * k + kk] : 0.0f, b = kk < k ? B[kk * n + col] : 0.0f;
          acc = fmaf(a, b, acc);
        }
      C[row * n + col] = acc;
    }
}

static void setup_matmul(gl_corpus_inst *in, const char *name, int m, int n, int k, int tw,
                         bool dyn) {
  rng r = rng_seed(name);
  unsigned ba, bb, bc;
  float *A = buf_new(in, (size_t)m * k * 4, &ba), *B = buf_new(in, (size_t)k * n * 4, &bb);
  buf_new(in, (size_t)m * n * 4, &bc);
  for (int i = 0; i < m * k; i++) A[i] = rng_f32(&r, -2.0f, 2.0f);
  for (int i = 0; i < k * n; i++) B[i] = rng_f32(&r, -2.0f, 2.0f);
  param_buf(in, ba);
  param_buf(in, bb);
  param_buf(in, bc);
  param_i32(in, m);
  param_i32(in, n);
  param_i32(in, k);
  matmul_ref(A, B, out_new(in, bc, GL_CORPUS_F32, GL_CORPUS_EXACT, "C"), m, n, k, tw);
  in->block[0] = in->block[1] = (uint32_t)tw;
  in->grid[0] = (uint32_t)((n + tw - 1) / tw), in->grid[1] = (uint32_t)((m + tw - 1) / tw);
  if (dyn) in->shared_bytes = (uint32_t)(2 * tw * tw * 4);
}
static void setup_matmul_tiled(gl_corpus_inst *in) {
  setup_matmul(in, "matmul_tiled", 70, 45, 50, 16, false);
}
static void setup_matmul_dyn(gl_corpus_inst *in) {
  setup_matmul(in, "matmul_dyn", 40, 36, 28, 8, true);
}

/* ==========================================================================
 * Reductions, scans, histogram
 * ======================================================================== */

/* In-place shared-memory tree of size nb (a power of two): s[0] = sum. */
static float tree_sum(float *s, unsigned nb) {
  for (unsigned st = nb / 2; st > 0; st >>= 1)
    for (unsigned t = 0; t < st; t++) s[t] += s[t + st];
  return s[0];
}

static void setup_reduce_tree(gl_corpus_inst *in) {
  rng r = rng_seed("reduce_tree");
  const unsigned n = 5000, nb = 128, grid = (n + nb - 1) / nb;
  unsigned bi, bo;
  float *x = buf_new(in, n * 4, &bi);
  buf_new(in, grid * 4, &bo);
  for (unsigned i = 0; i < n; i++) x[i] = rng_f32(&r, -100.0f, 100.0f);
  param_buf(in, bi);
  param_buf(in, bo);
  param_i32(in, (int)n);
  float *e = out_new(in, bo, GL_CORPUS_F32, GL_CORPUS_EXACT, "block sums");
  float s[128];
  for (unsigned b = 0; b < grid; b++) {
    for (unsigned t = 0; t < nb; t++) s[t] = b * nb + t < n ? x[b * nb + t] : 0.0f;
    e[b] = tree_sum(s, nb);
  }
  launch1(in, grid, nb);
  in->shared_bytes = nb * 4;
}

/* A cooperative launch: phases separated by grid.sync(), see the kernel. */
static void setup_coop_grid_sync(gl_corpus_inst *in) {
  rng r = rng_seed("coop_grid_sync");
  const unsigned nb = 12, bs = 128, n = nb * bs;
  const int rounds = 5;
  unsigned bx, bp, by, ba, bb;
  float *x = buf_new(in, n * 4, &bx);
  buf_new(in, nb * 4, &bp);
  buf_new(in, n * 4, &by);
  uint32_t *a = buf_new(in, n * 4, &ba);
  buf_new(in, n * 4, &bb);
  for (unsigned i = 0; i < n; i++) x[i] = rng_f32(&r, 0.5f, 2.0f);
  for (unsigned i = 0; i < n; i++) a[i] = rng_u32(&r);
  param_buf(in, bx);
  param_buf(in, bp);
  param_buf(in, by);
  param_buf(in, ba);
  param_buf(in, bb);
  param_i32(in, rounds);
  float *ep = out_new(in, bp, GL_CORPUS_F32, GL_CORPUS_EXACT, "partial sums");
  float *ey = out_new(in, by, GL_CORPUS_F32, GL_CORPUS_EXACT, "y");
  uint32_t *ea = out_new(in, ba, GL_CORPUS_U32, GL_CORPUS_EXACT, "a");
  uint32_t *eb = out_new(in, bb, GL_CORPUS_U32, GL_CORPUS_EXACT, "b");
  float s[128], total = 0.0f;
  for (unsigned b = 0; b < nb; b++) {
    memcpy(s, x + b * bs, sizeof s);
    ep[b] = tree_sum(s, bs);
  }
  for (unsigned b = 0; b < nb; b++) total += ep[b];
  for (unsigned i = 0; i < n; i++) ey[i] = x[i] / total;
  for (int k = 0; k < rounds; k++) {
    const uint32_t *src = (k & 1) ? eb : ea;
    uint32_t *dst = (k & 1) ? ea : eb;
    for (unsigned i = 0; i < n; i++) dst[i] = src[i] + 3u * src[(i + 1) % n];
  }
  launch1(in, nb, bs);
  in->cooperative = true;
}

/* Thread-block clusters of 2 x 2 blocks reading each other's shared
 * memory (sm_90 PTX only). */
static void setup_cluster_dsmem(gl_corpus_inst *in) {
  rng r = rng_seed("cluster_dsmem");
  const unsigned gx = 4, gy = 4, cx = 2, cy = 2, bs = 128, nb = gx * gy, n = nb * bs;
  unsigned bx, by, bi;
  float *x = buf_new(in, n * 4, &bx);
  buf_new(in, n * 4, &by);
  buf_new(in, nb * 4, &bi);
  for (unsigned i = 0; i < n; i++) x[i] = rng_f32(&r, -4.0f, 4.0f);
  param_buf(in, bx);
  param_buf(in, by);
  param_buf(in, bi);
  float *ey = out_new(in, by, GL_CORPUS_F32, GL_CORPUS_EXACT, "y");
  uint32_t *ei = out_new(in, bi, GL_CORPUS_U32, GL_CORPUS_EXACT, "info");
  for (unsigned yb = 0; yb < gy; yb++)
    for (unsigned xb = 0; xb < gx; xb++) {
      unsigned blk = xb + gx * yb, rx = xb % cx, ry = yb % cy, rank = rx + cx * ry;
      for (unsigned t = 0; t < bs; t++) {
        float acc = 0.0f;
        for (unsigned k = 0; k < cx * cy; k++) {
          unsigned peer = (xb - rx + k % cx) + gx * (yb - ry + k / cx);
          acc = fmaf(acc, 0.5f, x[peer * bs + (t + k) % bs]);
        }
        ey[blk * bs + t] = acc;
      }
      ei[blk] = bs * (bs + 1) / 2 + 100000u * rank + 1000000u * rx + 10000000u * ry;
    }
  in->grid[0] = gx;
  in->grid[1] = gy;
  in->block[0] = bs;
  in->cluster[0] = cx;
  in->cluster[1] = cy;
  in->cluster[2] = 1;
  in->min_sm = 90;
}

/* v[l] += shfl_down(v, off) for off = 16..1, over one warp. */
static void warp_down_sum(float *v) {
  for (int off = 16; off > 0; off >>= 1) {
    float nv[32];
    for (int l = 0; l < 32; l++) nv[l] = v[l] + (l + off < 32 ? v[l + off] : v[l]);
    memcpy(v, nv, sizeof nv);
  }
}

static void setup_reduce_shfl(gl_corpus_inst *in) {
  rng r = rng_seed("reduce_shfl");
  const unsigned n = 5000, nb = 256, grid = (n + nb - 1) / nb;
  unsigned bi, bo;
  float *x = buf_new(in, n * 4, &bi);
  buf_new(in, grid * 4, &bo);
  for (unsigned i = 0; i < n; i++) x[i] = rng_f32(&r, -100.0f, 100.0f);
  param_buf(in, bi);
  param_buf(in, bo);
  param_i32(in, (int)n);
  float *e = out_new(in, bo, GL_CORPUS_F32, GL_CORPUS_EXACT, "block sums");
  for (unsigned b = 0; b < grid; b++) {
    float ws[32], v[32];
    for (unsigned w = 0; w < nb / 32; w++) {
      for (unsigned l = 0; l < 32; l++) {
        unsigned i = b * nb + w * 32 + l;
        v[l] = i < n ? x[i] : 0.0f;
      }
      warp_down_sum(v);
      ws[w] = v[0];
    }
    for (unsigned l = 0; l < 32; l++) v[l] = l < nb / 32 ? ws[l] : 0.0f;
    warp_down_sum(v);
    e[b] = v[0];
  }
  launch1(in, grid, nb);
}

static void setup_reduce_atomic(gl_corpus_inst *in) {
  rng r = rng_seed("reduce_atomic");
  const unsigned n = 5000, nb = 256, grid = (n + nb - 1) / nb;
  unsigned bf, bi, bp, bft, bit;
  float *fx = buf_new(in, n * 4, &bf);
  int32_t *ix = buf_new(in, n * 4, &bi);
  buf_new(in, grid * 4, &bp);
  buf_new(in, 4, &bft);
  buf_new(in, 4, &bit);
  for (unsigned i = 0; i < n; i++) {
    fx[i] = rng_f32(&r, 0.0f, 1.0f);
    ix[i] = rng_range(&r, -100000, 100000);
  }
  param_buf(in, bf);
  param_buf(in, bi);
  param_buf(in, bp);
  param_buf(in, bft);
  param_buf(in, bit);
  param_i32(in, (int)n);
  float *ep = out_new(in, bp, GL_CORPUS_F32, GL_CORPUS_EXACT, "block sums");
  float *eft = out_new(in, bft, GL_CORPUS_F32, GL_CORPUS_REL, "float total");
  last_out(in)->rel_tol = 1e-5;
  uint32_t *eit = out_new(in, bit, GL_CORPUS_U32, GL_CORPUS_EXACT, "int total");
  double total = 0.0;
  uint32_t itotal = 0;
  float s[256];
  for (unsigned b = 0; b < grid; b++) {
    for (unsigned t = 0; t < nb; t++) s[t] = b * nb + t < n ? fx[b * nb + t] : 0.0f;
    ep[b] = tree_sum(s, nb);
    total += ep[b];
  }
  for (unsigned i = 0; i < n; i++) itotal += (uint32_t)ix[i];
  eft[0] = (float)total;
  eit[0] = itotal;
  launch1(in, grid, nb);
}

static void setup_scan_hillis(gl_corpus_inst *in) {
  rng r = rng_seed("scan_hillis");
  const unsigned n = 3000, nb = 128, grid = (n + nb - 1) / nb;
  unsigned bi, bo;
  float *x = buf_new(in, n * 4, &bi);
  buf_new(in, n * 4, &bo);
  for (unsigned i = 0; i < n; i++) x[i] = rng_f32(&r, -10.0f, 10.0f);
  param_buf(in, bi);
  param_buf(in, bo);
  param_i32(in, (int)n);
  float *e = out_new(in, bo, GL_CORPUS_F32, GL_CORPUS_EXACT, "scan");
  for (unsigned b = 0; b < grid; b++) {
    float cur[128], nxt[128];
    for (unsigned t = 0; t < nb; t++) cur[t] = b * nb + t < n ? x[b * nb + t] : 0.0f;
    for (unsigned d = 1; d < nb; d <<= 1) {
      for (unsigned t = 0; t < nb; t++) nxt[t] = t >= d ? cur[t - d] + cur[t] : cur[t];
      memcpy(cur, nxt, sizeof cur);
    }
    for (unsigned t = 0; t < nb && b * nb + t < n; t++) e[b * nb + t] = cur[t];
  }
  launch1(in, grid, nb);
  in->shared_bytes = 2 * nb * 4;
}

static void setup_scan_warp(gl_corpus_inst *in) {
  rng r = rng_seed("scan_warp");
  const unsigned n = 3000, nb = 256, grid = (n + nb - 1) / nb;
  unsigned bi, bo;
  int32_t *x = buf_new(in, n * 4, &bi);
  buf_new(in, n * 4, &bo);
  for (unsigned i = 0; i < n; i++) x[i] = rng_i32_edge(&r);
  param_buf(in, bi);
  param_buf(in, bo);
  param_i32(in, (int)n);
  uint32_t *e = out_new(in, bo, GL_CORPUS_U32, GL_CORPUS_EXACT, "scan");
  for (unsigned b = 0; b < grid; b++) {
    uint32_t acc = 0;
    for (unsigned t = 0; t < nb && b * nb + t < n; t++) {
      acc += (uint32_t)x[b * nb + t];
      e[b * nb + t] = acc;
    }
  }
  launch1(in, grid, nb);
}

static void setup_histogram(gl_corpus_inst *in) {
  rng r = rng_seed("histogram");
  const unsigned n = 20000;
  unsigned bd, bh;
  uint8_t *d = buf_new(in, n, &bd);
  buf_new(in, 64 * 4, &bh);
  for (unsigned i = 0; i < n; i++) d[i] = (uint8_t)(rng_below(&r, 4) ? rng_below(&r, 256) : 7);
  param_buf(in, bd);
  param_buf(in, bh);
  param_i32(in, (int)n);
  uint32_t *e = out_new(in, bh, GL_CORPUS_U32, GL_CORPUS_EXACT, "bins");
  for (unsigned i = 0; i < n; i++) e[d[i] % 64]++;
  launch1(in, 8, 128);
}

/* ==========================================================================
 * Integer arithmetic and bit operations
 * ======================================================================== */

static uint64_t umulhi64(uint64_t a, uint64_t b) {
  uint64_t al = a & 0xffffffffu, ah = a >> 32, bl = b & 0xffffffffu, bh = b >> 32;
  uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
  uint64_t mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
  return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}
static int64_t smulhi64(int64_t a, int64_t b) {
  uint64_t h = umulhi64((uint64_t)a, (uint64_t)b);
  if (a < 0) h -= (uint64_t)b;
  if (b < 0) h -= (uint64_t)a;
  return (int64_t)h;
}
static int64_t sar64(int64_t x, unsigned s) { /* arithmetic shift right */
  return x < 0 ? (int64_t)~(~(uint64_t)x >> s) : (int64_t)((uint64_t)x >> s);
}
static int32_t sar32(int32_t x, unsigned s) {
  return x < 0 ? (int32_t)~(~(uint32_t)x >> s) : (int32_t)((uint32_t)x >> s);
}

static void setup_int64_math(gl_corpus_inst *in) {
  rng r = rng_seed("int64_math");
  const unsigned n = 16384;
  unsigned ba, bb, bc, bo;
  int64_t *a = buf_new(in, n * 8, &ba), *b = buf_new(in, n * 8, &bb);
  int32_t *c = buf_new(in, n * 4, &bc);
  buf_new(in, n * 16 * 8, &bo);
  for (unsigned i = 0; i < n; i++) {
    a[i] = rng_i64_edge(&r);
    do b[i] = rng_i64_edge(&r);
    while (b[i] == 0 || (a[i] == INT64_MIN && b[i] == -1));
    do c[i] = rng_i32_edge(&r);
    while (a[i] == INT64_MIN && (c[i] == -1 || c[i] == -2));
  }
  param_buf(in, ba);
  param_buf(in, bb);
  param_buf(in, bc);
  param_buf(in, bo);
  param_i32(in, (int)n);
  uint64_t *e = out_new(in, bo, GL_CORPUS_U64, GL_CORPUS_EXACT, "out");
  for (unsigned i = 0; i < n; i++) {
    int64_t x = a[i], y = b[i];
    int32_t z = c[i];
    uint64_t ux = (uint64_t)x, uy = (uint64_t)y, *o = e + 16 * i;
    unsigned sh = (unsigned)z & 63;
    o[0] = ux * uy;
    o[1] = (uint64_t)(x / y);
    o[2] = (uint64_t)(x % y);
    o[3] = ux / uy;
    o[4] = ux % uy;
    o[5] = ux << sh;
    o[6] = (uint64_t)sar64(x, sh);
    o[7] = ux >> sh;
    o[8] = (uint64_t)smulhi64(x, y);
    o[9] = umulhi64(ux, uy);
    o[10] = ux + (uint64_t)((int64_t)z * (int64_t)(uint32_t)z);
    o[11] = (uint64_t)((uint32_t)z * (uint32_t)ux);
    o[12] = x < 0 ? 0 - ux : ux;
    o[13] = (uint64_t)(x < y ? y : x);
    o[14] = ux < uy ? ux : uy;
    int64_t zz = (int64_t)(z | 1);
    o[15] = (uint64_t)((int64_t)z * (int64_t)(int32_t)(uint32_t)(uy >> 32)) + (uint64_t)(x / zz);
  }
  launch1(in, n / 128, 128);
}

static void setup_int32_math(gl_corpus_inst *in) {
  rng r = rng_seed("int32_math");
  const unsigned n = 16384;
  unsigned ba, bb, bc, bo;
  int32_t *a = buf_new(in, n * 4, &ba), *b = buf_new(in, n * 4, &bb), *c = buf_new(in, n * 4, &bc);
  buf_new(in, n * 16 * 4, &bo);
  for (unsigned i = 0; i < n; i++) {
    a[i] = rng_i32_edge(&r);
    do b[i] = rng_i32_edge(&r);
    while (b[i] == 0 || (a[i] == INT32_MIN && b[i] == -1));
    c[i] = rng_i32_edge(&r);
  }
  param_buf(in, ba);
  param_buf(in, bb);
  param_buf(in, bc);
  param_buf(in, bo);
  param_i32(in, (int)n);
  uint32_t *e = out_new(in, bo, GL_CORPUS_U32, GL_CORPUS_EXACT, "out");
  for (unsigned i = 0; i < n; i++) {
    int32_t x = a[i], y = b[i];
    uint32_t ux = (uint32_t)x, uy = (uint32_t)y, uz = (uint32_t)c[i], *o = e + 16 * i;
    int64_t sx24 = sar32((int32_t)(ux << 8), 8), sy24 = sar32((int32_t)(uy << 8), 8);
    o[0] = ux * uy;
    o[1] = (uint32_t)((uint64_t)((int64_t)x * y) >> 32);
    o[2] = (uint32_t)(((uint64_t)ux * uy) >> 32);
    o[3] = (uint32_t)(sx24 * sy24);
    o[4] = (ux & 0xffffffu) * (uy & 0xffffffu);
    o[5] = (x < y ? uy - ux : ux - uy) + uz;
    o[6] = (ux < uy ? uy - ux : ux - uy) + uz;
    o[7] = (uint32_t)(x / y);
    o[8] = (uint32_t)(x % y);
    o[9] = ux / uy;
    o[10] = ux % uy;
    o[11] = (uint32_t)(int32_t)(((int64_t)x + y) >> 1);
    o[12] = (uint32_t)(int32_t)(((int64_t)x + y + 1) >> 1);
    o[13] = (uint32_t)(((uint64_t)ux + uy) >> 1) ^ (uint32_t)(((uint64_t)ux + uz + 1) >> 1);
    o[14] = x < 0 ? 0u - ux : ux;
    o[15] = ux * uy + uz;
  }
  launch1(in, n / 128, 128);
}

static uint32_t brev32(uint32_t x) {
  uint32_t r = 0;
  for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
static unsigned clz32(uint32_t x) {
  unsigned n = 0;
  for (uint32_t m = 0x80000000u; m && !(x & m); m >>= 1) n++;
  return n;
}
static unsigned clz64(uint64_t x) {
  return (x >> 32) ? clz32((uint32_t)(x >> 32)) : 32 + clz32((uint32_t)x);
}
static unsigned popc64(uint64_t x) {
  unsigned n = 0;
  for (; x; x &= x - 1) n++;
  return n;
}
static unsigned ffs64(uint64_t x) {
  if (!x) return 0;
  unsigned n = 1;
  while (!(x & 1)) x >>= 1, n++;
  return n;
}
/* prmt.b32 default mode: byte k of the result is byte (s[4k+2:4k]) of
 * {b, a}; when s bit 4k+3 is set, that byte's sign bit replicated. */
static uint32_t prmt(uint32_t a, uint32_t b, uint32_t s) {
  uint64_t src = ((uint64_t)b << 32) | a;
  uint32_t r = 0;
  for (int k = 0; k < 4; k++) {
    unsigned sel = (s >> (4 * k)) & 15u;
    uint32_t byte = (uint32_t)(src >> (8 * (sel & 7))) & 0xffu;
    if (sel & 8) byte = (byte & 0x80u) ? 0xffu : 0;
    r |= byte << (8 * k);
  }
  return r;
}

static void setup_bitops(gl_corpus_inst *in) {
  rng r = rng_seed("bitops");
  const unsigned n = 16384;
  unsigned ba, bb, bc, bd, bo, bo64;
  uint32_t *a = buf_new(in, n * 4, &ba), *b = buf_new(in, n * 4, &bb), *c = buf_new(in, n * 4, &bc);
  uint64_t *d = buf_new(in, n * 8, &bd);
  buf_new(in, n * 16 * 4, &bo);
  buf_new(in, n * 2 * 8, &bo64);
  for (unsigned i = 0; i < n; i++) {
    a[i] = rng_below(&r, 10) ? (uint32_t)rng_i32_edge(&r) : rng_u32(&r) >> rng_below(&r, 32);
    b[i] = (uint32_t)rng_i32_edge(&r);
    c[i] = rng_u32(&r);
    d[i] = rng_below(&r, 10) ? (uint64_t)rng_i64_edge(&r) : rng_u64(&r) >> rng_below(&r, 64);
    if (i % 97 == 0) a[i] = 0, d[i] = 0;
  }
  param_buf(in, ba);
  param_buf(in, bb);
  param_buf(in, bc);
  param_buf(in, bd);
  param_buf(in, bo);
  param_buf(in, bo64);
  param_i32(in, (int)n);
  uint32_t *e = out_new(in, bo, GL_CORPUS_U32, GL_CORPUS_EXACT, "out");
  uint64_t *e64 = out_new(in, bo64, GL_CORPUS_U64, GL_CORPUS_EXACT, "out64");
  for (unsigned i = 0; i < n; i++) {
    uint32_t x = a[i], y = b[i], s = c[i], *o = e + 16 * i;
    uint64_t w = d[i], fun = ((uint64_t)y << 32) | x;
    unsigned pos = s & 15, len = 1 + ((s >> 8) & 15), sc = s & 63;
    uint32_t mask = (len == 32 ? 0xffffffffu : (1u << len) - 1u);
    o[0] = (uint32_t)popc64(x);
    o[1] = clz32(x);
    o[2] = brev32(x);
    o[3] = prmt(x, y, s & 0x7777u);
    o[4] = prmt(x, y, s);
    o[5] = (uint32_t)((fun << (s & 31)) >> 32);
    o[6] = (uint32_t)(fun >> (s & 31));
    o[7] = sc >= 32 ? x : (uint32_t)((fun << sc) >> 32);
    o[8] = sc >= 32 ? y : (uint32_t)(fun >> sc);
    o[9] = (x >> pos) & mask;
    o[10] = (uint32_t)sar32((int32_t)(x << (32 - pos - len)), 32 - len);
    o[11] = (x & ~(mask << pos)) | ((y << pos) & (mask << pos));
    o[12] = (uint32_t)ffs64(x);
    o[13] = popc64(w);
    o[14] = clz64(w);
    o[15] = ffs64(w);
    uint64_t rev = 0;
    for (int k = 0; k < 64; k++) rev |= ((w >> k) & 1u) << (63 - k);
    e64[2 * i] = rev;
    unsigned rs = s & 63;
    e64[2 * i + 1] = (w << rs) | (w >> ((64 - rs) & 63));
  }
  launch1(in, n / 128, 128);
}

/* ==========================================================================
 * Floating point: correctly rounded, approximate, comparisons, conversions
 * ======================================================================== */

/* Pairs of zeros of opposite signs are avoided in min/max inputs: which
 * zero PTX min/max return is not pinned down by the documentation. */
static void no_mixed_zeros_f(float *p, float q) {
  if (*p == 0.0f && q == 0.0f) *p = q;
}

static void setup_double_math(gl_corpus_inst *in) {
  rng r = rng_seed("double_math");
  const unsigned n = 16384;
  unsigned ba, bb, bc, bo, bf;
  double *a = buf_new(in, n * 8, &ba), *b = buf_new(in, n * 8, &bb), *c = buf_new(in, n * 8, &bc);
  buf_new(in, n * 8 * 8, &bo);
  buf_new(in, n * 2 * 4, &bf);
  for (unsigned i = 0; i < n; i++) {
    a[i] = rng_f64_edge(&r, -40, 40);
    b[i] = rng_f64_edge(&r, -40, 40);
    c[i] = rng_below(&r, 4) ? rng_f64_edge(&r, -40, 40) : -a[i] * b[i];
    if (i % 5 == 0) a[i] = rng_f64_edge(&r, -1060, -1000); /* subnormal results */
    if (i % 7 == 0) b[i] = rng_f64_edge(&r, 100, 140);     /* float overflow */
    if (a[i] == 0.0 && b[i] == 0.0) b[i] = a[i];
    if (a[i] == 0.0 && c[i] == 0.0) c[i] = a[i];
    /* at most one NaN operand: with two, which NaN the GPU returns depends
     * on the operand order ptxas picks (see nan_rules.cu) */
    if (isnan(a[i]) && isnan(b[i])) b[i] = 1.5;
    if ((isnan(a[i]) || isnan(b[i])) && isnan(c[i])) c[i] = -2.25;
  }
  param_buf(in, ba);
  param_buf(in, bb);
  param_buf(in, bc);
  param_buf(in, bo);
  param_buf(in, bf);
  param_i32(in, (int)n);
  double *e = out_new(in, bo, GL_CORPUS_F64, GL_CORPUS_EXACT, "out");
  float *ef = out_new(in, bf, GL_CORPUS_F32, GL_CORPUS_EXACT, "fout");
  for (unsigned i = 0; i < n; i++) {
    double x = a[i], y = b[i], z = c[i], *o = e + 8 * i;
    o[0] = fma(x, y, z);
    o[1] = sqrt(x);
    o[2] = x / y;
    o[3] = x + y;
    o[4] = x - z;
    o[5] = x * y;
    o[6] = fmin(x, y);
    o[7] = fmax(x, z);
    ef[2 * i] = (float)x;
    float f = (float)y;
    if (fabs((double)f) > fabs(y)) f = nextafterf(f, 0.0f);
    ef[2 * i + 1] = f;
  }
  launch1(in, n / 128, 128);
}

static void setup_rounded_math(gl_corpus_inst *in) {
  rng r = rng_seed("rounded_math");
  const unsigned n = 16384;
  unsigned ba, bb, bc, bo;
  float *a = buf_new(in, n * 4, &ba), *b = buf_new(in, n * 4, &bb), *c = buf_new(in, n * 4, &bc);
  buf_new(in, n * 12 * 4, &bo);
  for (unsigned i = 0; i < n; i++) {
    a[i] = rng_f32_edge(&r, -30, 30);
    b[i] = rng_f32_edge(&r, -30, 30);
    c[i] = rng_below(&r, 4) ? rng_f32_edge(&r, -30, 30) : -a[i] * b[i];
    if (i % 6 == 0) a[i] = rng_f32_edge(&r, -140, -110); /* denormal results */
    if (i % 11 == 0) b[i] = rng_f32_edge(&r, 100, 127);  /* overflow */
  }
  param_buf(in, ba);
  param_buf(in, bb);
  param_buf(in, bc);
  param_buf(in, bo);
  param_i32(in, (int)n);
  float *e = out_new(in, bo, GL_CORPUS_F32, GL_CORPUS_EXACT, "out");
  for (unsigned i = 0; i < n; i++) {
    float x = a[i], y = b[i], z = c[i], *o = e + 12 * i;
    o[0] = sqrtf(x);
    o[1] = x / y;
    o[2] = fmaf(x, y, z);
    o[3] = x + y;
    o[4] = x * z;
    o[5] = fop_dir('+', x, z, 0, RZ);
    o[6] = fop_dir('*', x, y, 0, RU);
    o[7] = fop_dir('/', y, z, 0, RD);
    o[8] = fop_dir('s', y, 0, 0, RU);
    o[9] = 1.0f / z;
    o[10] = fop_dir('f', x, y, z, RZ);
    o[11] = y - z;
  }
  launch1(in, n / 128, 128);
}

static void setup_approx_math(gl_corpus_inst *in) {
  rng r = rng_seed("approx_math");
  const unsigned n = 16384;
  unsigned bx, by, bz, bo;
  float *x = buf_new(in, n * 4, &bx), *y = buf_new(in, n * 4, &by), *z = buf_new(in, n * 4, &bz);
  buf_new(in, n * 6 * 4, &bo);
  for (unsigned i = 0; i < n; i++) {
    x[i] = rng_f32(&r, -10.0f, 10.0f);
    y[i] = rng_below(&r, 2) ? rng_f32(&r, 0.5f, 2.0f) : rng_f32(&r, 0.01f, 100.0f);
    z[i] = rng_f32(&r, -3.14159f, 3.14159f);
  }
  param_buf(in, bx);
  param_buf(in, by);
  param_buf(in, bz);
  param_buf(in, bo);
  param_i32(in, (int)n);
  /* Programming guide bounds: __expf 2 + 1.16|x| ulp (|x| <= 10: 14),
   * __logf 2^-21.41 absolute in [0.5, 2] else 3 ulp, __sinf/__cosf
   * 2^-21.41 absolute in [-pi, pi], rsqrtf and __fdividef 2 ulp. One
   * bound per output: the largest of its elements'. */
  float *e = out_new(in, bo, GL_CORPUS_F32, GL_CORPUS_ULP, "out");
  last_out(in)->ulp = 14;
  last_out(in)->abs_tol = 0x1p-21;
  for (unsigned i = 0; i < n; i++) {
    float *o = e + 6 * i;
    o[0] = (float)exp((double)x[i]);
    o[1] = (float)log((double)y[i]);
    o[2] = (float)sin((double)z[i]);
    o[3] = (float)cos((double)z[i]);
    o[4] = (float)(1.0 / sqrt((double)y[i]));
    o[5] = (float)((double)x[i] / (double)y[i]);
  }
  launch1(in, n / 128, 128);
}

/* nan_rules: the NaN bits of f64 and f32 instructions, as an NVIDIA H200
 * returned them (tests/emu/kernels/nan_rules.cu lists the operations). */
static void setup_nan_rules(gl_corpus_inst *in) {
  static const uint64_t in64[10] = {0x7ff0000000000000ull, 0, 0x3ff0000000000000ull,
                                    0x7ff8000000000000ull, 0xfff8000000000000ull,
                                    0x7ff4000000001234ull, 0x7ff4000000001111ull,
                                    0xfff4000000002222ull, 0x7ff4000000003333ull,
                                    0x7ff8000000005678ull};
  static const uint32_t in32[7] = {0x7f800000u, 0, 0x3f800000u, 0x7fc00000u, 0xffc00000u,
                                   0x7fa01234u, 0x7fc12345u};
  /* 64..79: NaN to integers */
  static const uint64_t h200_cvt[16] = {
      0x80000000ull, 0x8000ull, 0x8000ull, 0, 0, 0x80000000ull, 0x80000000ull, 0, 0,
      0x8000000000000000ull, 0, 0xff80ull, 0x8000000000000000ull, 0x8000000000000000ull,
      0x8000000000000000ull, 0x8000000000000000ull};
  static const uint64_t h200[45] = {
      0xfff8000000000000ull, 0xfff8000000000000ull, 0xfff8000000000000ull, 0xfff8000000000000ull,
      0xfff8000000000000ull, 0x7ffc000000001234ull, 0xfff8000000000000ull, 0x7ffc000000001234ull,
      0xfff8000000000000ull, 0x3ff0000000000000ull, 0x7ffc000000001234ull, 0x7ffc000000001234ull,
      0x7ffc000000001234ull, 0xfff8000000000000ull, 0x7fffffffull, 0x7fffffffull,
      0x7fffffffull, 0x7fffffffull, 0x7fffffffull, 0x7fffffffull,
      0x7fffffffull, 0x7fffffffull, 0x7fffffffull, 0x7fffffffull,
      0x7fffffffull, 0x3f800000ull, 0x7fe00000ull, 0x7ffc024680000000ull,
      0x7fffffffull, 0x7fffffffull, 0xfff8000000000000ull, 0x7ffc000000001234ull,
      0x7fffffffull, 0x7fffffffull, 0x7fffffffull, 0x7fffffffull,
      0x3ff0000000000000ull, 0x3f800000ull, 0xffc00000ull, 0x7ffc000000001234ull,
      0x7ffc000000001234ull, 0x7fffffffull, 0x7fffffffull, 0xfff8000000000000ull,
      0x7ff0000000000000ull};
  unsigned b64, b32, bo;
  memcpy(buf_new(in, sizeof in64, &b64), in64, sizeof in64);
  memcpy(buf_new(in, sizeof in32, &b32), in32, sizeof in32);
  buf_new(in, 80 * 8, &bo);
  param_buf(in, b64);
  param_buf(in, b32);
  param_buf(in, bo);
  uint64_t *e = out_new(in, bo, GL_CORPUS_U64, GL_CORPUS_EXACT, "nan bits");
  memcpy(e, h200, sizeof h200);
  e[63] = 45; /* the kernel's count of results */
  memcpy(e + 64, h200_cvt, sizeof h200_cvt);
  launch1(in, 1, 1);
}

static void setup_compare_select(gl_corpus_inst *in) {
  rng r = rng_seed("compare_select");
  const unsigned n = 16384;
  unsigned ba, bb, bx, by, bf, bi;
  float *a = buf_new(in, n * 4, &ba), *b = buf_new(in, n * 4, &bb);
  int32_t *x = buf_new(in, n * 4, &bx), *y = buf_new(in, n * 4, &by);
  buf_new(in, n * 6 * 4, &bf);
  buf_new(in, n * 12 * 4, &bi);
  for (unsigned i = 0; i < n; i++) {
    a[i] = rng_f32_edge(&r, -3, 3);
    b[i] = rng_below(&r, 5) ? rng_f32_edge(&r, -3, 3) : a[i];
    no_mixed_zeros_f(&b[i], a[i]);
    x[i] = rng_i32_edge(&r);
    y[i] = rng_below(&r, 5) ? rng_i32_edge(&r) : x[i];
  }
  param_buf(in, ba);
  param_buf(in, bb);
  param_buf(in, bx);
  param_buf(in, by);
  param_buf(in, bf);
  param_buf(in, bi);
  param_i32(in, (int)n);
  float *ef = out_new(in, bf, GL_CORPUS_F32, GL_CORPUS_EXACT, "fout");
  int32_t *ei = out_new(in, bi, GL_CORPUS_U32, GL_CORPUS_EXACT, "iout");
  for (unsigned i = 0; i < n; i++) {
    float p = a[i], q = b[i], *f = ef + 6 * i;
    int32_t u = x[i], v = y[i], *o = ei + 12 * i;
    f[0] = fminf(p, q);
    f[1] = fmaxf(p, q);
    f[2] = p < q ? p : q;
    f[3] = f32_bits(bits_f32(p) & 0x7fffffffu);
    f[4] = f32_bits((bits_f32(p) & 0x7fffffffu) | (bits_f32(q) & 0x80000000u));
    f[5] = f32_bits(bits_f32(q) ^ 0x80000000u);
    o[0] = p < q;
    o[1] = p <= q;
    o[2] = p == q;
    o[3] = p != q;
    o[4] = !(p >= q);
    o[5] = (isnan(p) ? 1 : 0) | (isinf(q) ? 2 : 0) | (signbit(p) ? 4 : 0);
    o[6] = p > q ? u : v;
    o[7] = u < v ? u : v;
    o[8] = u > v ? u : v;
    o[9] = (int32_t)((uint32_t)u < (uint32_t)v ? (uint32_t)u : (uint32_t)v);
    o[10] = (int32_t)((uint32_t)u > (uint32_t)v ? (uint32_t)u : (uint32_t)v);
    o[11] = (u < v) + 2 * ((uint32_t)u < (uint32_t)v);
  }
  launch1(in, n / 128, 128);
}

static void setup_conversions(gl_corpus_inst *in) {
  rng r = rng_seed("conversions");
  const unsigned n = 16384;
  unsigned bf, bk, bl, bi, bo, blo;
  float *f = buf_new(in, n * 4, &bf);
  int32_t *k = buf_new(in, n * 4, &bk);
  int64_t *l = buf_new(in, n * 8, &bl);
  buf_new(in, n * 8 * 4, &bi);
  buf_new(in, n * 8 * 4, &bo);
  buf_new(in, n * 3 * 8, &blo);
  for (unsigned i = 0; i < n; i++) {
    switch (rng_below(&r, 4)) {
    case 0: f[i] = rng_f32_edge(&r, -5, 70); break;
    case 1: f[i] = (float)rng_range(&r, -20, 20) * 0.5f; break; /* ties */
    case 2: f[i] = rng_f32(&r, -3.0f, 3.0f); break;
    default: f[i] = rng_f32_edge(&r, 20, 34); break; /* near 2^31, 2^32 */
    }
    /* __saturatef(-0): which zero comes back is not documented */
    if (f[i] == 0.0f) f[i] = 0.0f;
    k[i] = rng_i32_edge(&r);
    l[i] = rng_i64_edge(&r);
  }
  param_buf(in, bf);
  param_buf(in, bk);
  param_buf(in, bl);
  param_buf(in, bi);
  param_buf(in, bo);
  param_buf(in, blo);
  param_i32(in, (int)n);
  int32_t *ei = out_new(in, bi, GL_CORPUS_U32, GL_CORPUS_EXACT, "iout");
  float *ef = out_new(in, bo, GL_CORPUS_F32, GL_CORPUS_EXACT, "fout");
  int64_t *el = out_new(in, blo, GL_CORPUS_U64, GL_CORPUS_EXACT, "lout");
  for (unsigned i = 0; i < n; i++) {
    double x = f[i];
    int32_t m = k[i], *o = ei + 8 * i;
    o[0] = cvt_s32(x, RN);
    o[1] = cvt_s32(x, RZ);
    o[2] = cvt_s32(x, RD);
    o[3] = cvt_s32(x, RU);
    o[4] = (int32_t)cvt_u32(x, RN);
    o[5] = cvt_s32(x, RZ);
    o[6] = (int32_t)cvt_u32(x, RZ);
    o[7] = (int32_t)cvt_u32(x, RD);
    float *g = ef + 8 * i;
    g[0] = f32_round(m, RN);
    g[1] = f32_round(m, RZ);
    g[2] = f32_round(m, RD);
    g[3] = f32_round(m, RU);
    g[4] = (float)(uint32_t)m;
    g[5] = (float)l[i];
    g[6] = isnan(x) ? 0.0f : x < 0.0 ? 0.0f : x > 1.0 ? 1.0f : (float)x;
    g[7] = (float)(uint32_t)m;
    int64_t *q = el + 3 * i;
    q[0] = cvt_s64(x, RZ);
    q[1] = cvt_s64(x, RN);
    q[2] = (int64_t)cvt_u64(x, RZ);
  }
  launch1(in, n / 128, 128);
}

static void setup_half_math(gl_corpus_inst *in) {
  rng r = rng_seed("half_math");
  const unsigned n = 16384;
  unsigned ba, bb, bc, bh, bf;
  float *a = buf_new(in, n * 4, &ba), *b = buf_new(in, n * 4, &bb), *c = buf_new(in, n * 4, &bc);
  buf_new(in, n * 8 * 2, &bh);
  buf_new(in, n * 3 * 4, &bf);
  static const float edges[] = {65504.0f, 65520.0f, 65519.99f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f,
                                0x1p-14f, -0x1p-14f, 1.0f, -2.0f, 0.0f, -0.0f};
  for (unsigned i = 0; i < n; i++) {
    float *v[3] = {&a[i], &b[i], &c[i]};
    for (int j = 0; j < 3; j++) {
      unsigned k = rng_below(&r, 10);
      if (k == 0) *v[j] = edges[rng_below(&r, sizeof edges / sizeof *edges)];
      else if (k == 1) *v[j] = rng_f32_edge(&r, -26, 17);
      else *v[j] = rng_f32_edge(&r, -6, 8);
    }
  }
  param_buf(in, ba);
  param_buf(in, bb);
  param_buf(in, bc);
  param_buf(in, bh);
  param_buf(in, bf);
  param_i32(in, (int)n);
  uint16_t *eh = out_new(in, bh, GL_CORPUS_F16, GL_CORPUS_EXACT, "hout");
  float *ef = out_new(in, bf, GL_CORPUS_F32, GL_CORPUS_EXACT, "fout");
  for (unsigned i = 0; i < n; i++) {
    uint16_t x = f2h(a[i]), y = f2h(b[i]), z = f2h(c[i]), *o = eh + 8 * i;
    uint16_t s_lo = hadd(x, z), s_hi = hadd(y, x);
    uint16_t u_lo = hfma(x, z, s_lo), u_hi = hfma(y, x, s_hi);
    o[0] = x;
    o[1] = hadd(x, y);
    o[2] = hmul(x, y);
    o[3] = hfma(x, y, z);
    o[4] = hsub(y, z);
    o[5] = hmul(x, z);
    o[6] = u_hi;
    o[7] = s_hi;
    double dx = h2d(x), dy = h2d(y), dz = h2d(z);
    ef[3 * i] = (float)h2d(o[3]);
    ef[3 * i + 1] = (float)h2d(u_lo) + 0.0f;
    ef[3 * i + 2] = (float)((dx < dy) + 2 * (dy >= dz) + 4 * (isnan(dx) ? 1 : 0));
  }
  launch1(in, n / 128, 128);
}

/* ==========================================================================
 * Warps: votes, shuffles
 * ======================================================================== */

static void setup_warp_vote(gl_corpus_inst *in) {
  rng r = rng_seed("warp_vote");
  const unsigned nb = 48, grid = 4, n = nb * grid;
  unsigned bi, bo;
  int32_t *v = buf_new(in, n * 4, &bi);
  buf_new(in, n * 10 * 4, &bo);
  for (unsigned i = 0; i < n; i++) {
    v[i] = rng_range(&r, -100, 100);
    if (i / 32 == 3) v[i] = 5 + (int32_t)(i & 3); /* a warp where match.all holds */
  }
  v[2 * nb + 7] = 99; /* block 2: the or-barrier is true */
  param_buf(in, bi);
  param_buf(in, bo);
  uint32_t *e = out_new(in, bo, GL_CORPUS_U32, GL_CORPUS_EXACT, "out");
  for (unsigned b = 0; b < grid; b++) {
    uint32_t cnt = 0, all = 1, any = 0;
    for (unsigned t = 0; t < nb; t++) {
      int32_t x = v[b * nb + t];
      cnt += x > 0;
      all &= x > -90;
      any |= x > 95;
    }
    for (unsigned w = 0; w * 32 < nb; w++) {
      unsigned lanes = nb - w * 32 < 32 ? nb - w * 32 : 32;
      uint32_t m = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
      const int32_t *wv = v + b * nb + w * 32;
      uint32_t ballot = 0, vany = 0, vall = 1, same_all = 1;
      for (unsigned l = 0; l < lanes; l++) {
        ballot |= (uint32_t)(wv[l] > 0) << l;
        vany |= wv[l] > 90;
        vall &= wv[l] > -100;
        same_all &= ((wv[l] & 0x100) != 0) == ((wv[0] & 0x100) != 0);
      }
      for (unsigned l = 0; l < lanes; l++) {
        uint32_t *o = e + 10 * (b * nb + w * 32 + l), match = 0;
        for (unsigned j = 0; j < lanes; j++)
          if ((wv[j] & 3) == (wv[l] & 3)) match |= 1u << j;
        o[0] = m;
        o[1] = ballot;
        o[2] = vany;
        o[3] = vall;
        o[4] = match;
        o[5] = same_all ? m ^ 0x80000000u : 0u;
        o[6] = (l & 1) ? (m & 0xaaaaaaaau) : 0xdeadu;
        o[7] = cnt;
        o[8] = all;
        o[9] = any;
      }
    }
  }
  launch1(in, grid, nb);
}

static void setup_shfl_width(gl_corpus_inst *in) {
  rng r = rng_seed("shfl_width");
  const unsigned nb = 64, grid = 4, n = nb * grid;
  unsigned bi, bs, bo;
  int32_t *v = buf_new(in, n * 4, &bi), *s = buf_new(in, n * 4, &bs);
  buf_new(in, n * 8 * 4, &bo);
  for (unsigned i = 0; i < n; i++) {
    v[i] = (int32_t)rng_u32(&r);
    s[i] = rng_range(&r, -40, 40);
  }
  param_buf(in, bi);
  param_buf(in, bs);
  param_buf(in, bo);
  int32_t *e = out_new(in, bo, GL_CORPUS_U32, GL_CORPUS_EXACT, "out");
  for (unsigned w = 0; w < n / 32; w++) {
    const int32_t *wv = v + 32 * w, *ws = s + 32 * w;
    for (unsigned l = 0; l < 32; l++) {
      int32_t *o = e + 8 * (32 * w + l);
      unsigned sl = (unsigned)ws[l];
      o[0] = wv[(l & ~7u) | (sl & 7u)];
      o[1] = wv[sl & 31u];
      o[2] = (l & 15u) < 3 ? wv[l] : wv[l - 3];
      o[3] = (l & 7u) + 5 > 7 ? wv[l] : wv[l + 5];
      o[4] = (l ^ 6u) > (l | 3u) ? wv[l] : wv[l ^ 6u];
      o[5] = wv[l ^ 17u];
      o[6] = (l & 3u) + 2 > 3 ? wv[l] : wv[l + 2];
      o[7] = (l & 7u) < 1 ? wv[l] : wv[l - 1];
    }
  }
  launch1(in, grid, nb);
}

/* ==========================================================================
 * Atomics
 * ======================================================================== */

static void setup_atomics_all(gl_corpus_inst *in) {
  rng r = rng_seed("atomics_all");
  const unsigned nb = 128, grid = 8, n = nb * grid;
  unsigned bi, bc, bc64, bfs, bds, bold, bex;
  int32_t *v = buf_new(in, n * 4, &bi);
  uint32_t *ctr = buf_new(in, 16 * 4, &bc);
  uint64_t *ctr64 = buf_new(in, 4 * 8, &bc64);
  float *fsum = buf_new(in, 4, &bfs);
  double *dsum = buf_new(in, 8, &bds);
  buf_new(in, 3 * n * 4, &bold);
  uint32_t *ex = buf_new(in, (8 + n) * 4, &bex);
  for (unsigned i = 0; i < n; i++) v[i] = rng_range(&r, -100, 100);
  ctr[0] = 17;
  ctr[2] = 1000;
  ctr[3] = (uint32_t)-1000;
  ctr[4] = 0xfffffff0u;
  ctr[6] = 0xffffffffu;
  ctr[8] = 0x12345678u;
  ctr[11] = 5;
  ctr[12] = 1;
  ctr[15] = bits_f32(-1000.0f);
  ctr64[1] = (uint64_t)INT64_MAX;
  fsum[0] = 0.5f;
  dsum[0] = -1.0;
  for (unsigned k = 0; k < 8; k++) ex[k] = 0xabc00000u + k;
  param_buf(in, bi);
  param_buf(in, bc);
  param_buf(in, bc64);
  param_buf(in, bfs);
  param_buf(in, bds);
  param_buf(in, bold);
  param_buf(in, bex);
  uint32_t *ec = out_new(in, bc, GL_CORPUS_U32, GL_CORPUS_EXACT, "ctr");
  uint64_t *ec64 = out_new(in, bc64, GL_CORPUS_U64, GL_CORPUS_EXACT, "ctr64");
  float *efs = out_new(in, bfs, GL_CORPUS_F32, GL_CORPUS_EXACT, "float sum");
  double *eds = out_new(in, bds, GL_CORPUS_F64, GL_CORPUS_EXACT, "double sum");
  uint32_t *eold = out_new(in, bold, GL_CORPUS_U32, GL_CORPUS_UNORDERED, "old values");
  uint32_t *eex = out_new(in, bex, GL_CORPUS_U32, GL_CORPUS_UNORDERED, "exch");
  /* One valid serial order: thread order. */
  for (unsigned g = 0; g < n; g++) {
    int32_t x = v[g];
    uint32_t ux = (uint32_t)x;
    ec[0] += ux;
    ec[1] += ux * 2654435761u;
    if ((int32_t)ec[2] > x) ec[2] = ux;
    if ((int32_t)ec[3] < x) ec[3] = ux;
    if (ec[4] > ux) ec[4] = ux;
    if (ec[5] < ux) ec[5] = ux;
    ec[6] &= ~(1u << (ux & 31));
    ec[7] |= 1u << ((uint32_t)sar32(x, 5) & 31);
    ec[8] ^= ux * 0x9e3779b9u;
    eold[g] = ec[9]++;
    eold[n + g] = ec[10];
    ec[10] = ec[10] >= 100u ? 0 : ec[10] + 1;
    eold[2 * n + g] = ec[11];
    ec[11] = (ec[11] == 0 || ec[11] > 37u) ? 37u : ec[11] - 1;
    ec[12] *= 2u * ux + 1u;
    if (ec[13] == 0) ec[13] = 7, ec[14]++;
    float fv = (float)x * 0.5f;
    if (!(f32_bits(ec[15]) >= fv)) ec[15] = bits_f32(fv);
    ec64[0] += (uint64_t)(int64_t)x * 0x100000001ull;
    int64_t m = (int64_t)x * 1000000007ll;
    if ((int64_t)ec64[1] > m) ec64[1] = (uint64_t)m;
    if (ec64[2] < (uint64_t)(int64_t)x) ec64[2] = (uint64_t)(int64_t)x;
    ec64[3] |= 1ull << (ux & 63);
    efs[0] += (float)x * 0.25f; /* exact: multiples of 1/4, small sums */
    eds[0] += (double)x * 0.0009765625;
    eex[8 + g] = eex[g & 7];
    eex[g & 7] = g + 1000u;
  }
  launch1(in, grid, nb);
}

/* ==========================================================================
 * Control flow, indexing, module data, calls, local memory, parameters
 * ======================================================================== */

static void setup_divergent_loops(gl_corpus_inst *in) {
  rng r = rng_seed("divergent_loops");
  const unsigned n = 1024;
  unsigned bi, bo;
  int32_t *v = buf_new(in, n * 4, &bi);
  buf_new(in, n * 2 * 4, &bo);
  for (unsigned i = 0; i < n; i++) v[i] = rng_range(&r, -(1 << 20), 1 << 20);
  param_buf(in, bi);
  param_buf(in, bo);
  param_i32(in, (int)n);
  int32_t *e = out_new(in, bo, GL_CORPUS_U32, GL_CORPUS_EXACT, "out");
  for (unsigned i = 0; i < n; i++) {
    int32_t x = v[i];
    if (x % 7 == 3) {
      e[2 * i] = e[2 * i + 1] = -1;
      continue;
    }
    int trips = (x & 0x7fffffff) % 40;
    int32_t acc = 0;
    for (int a = 0; a < trips; a++) {
      if ((a ^ x) % 3 == 0) continue;
      for (int b = a; b < trips; b += 1 + (x & 3)) {
        acc += a * b + sar32(x, 4);
        if (acc > 100000) break;
      }
      if ((acc & 255) == (x & 255)) break;
    }
    uint32_t c = (uint32_t)(x & 0xffff) + 1u;
    int steps = 0;
    while (c != 1u && steps < 300) {
      c = (c & 1u) ? 3u * c + 1u : c >> 1;
      steps++;
    }
    e[2 * i] = acc;
    e[2 * i + 1] = steps;
  }
  launch1(in, n / 128, 128);
}

static void setup_grid_stride(gl_corpus_inst *in) {
  rng r = rng_seed("grid_stride");
  const unsigned n = 5000;
  unsigned bi, bo;
  uint32_t *x = buf_new(in, n * 4, &bi);
  buf_new(in, n * 4, &bo);
  for (unsigned i = 0; i < n; i++) x[i] = rng_u32(&r);
  param_buf(in, bi);
  param_buf(in, bo);
  param_i32(in, (int)n);
  uint32_t *e = out_new(in, bo, GL_CORPUS_U32, GL_CORPUS_EXACT, "out");
  for (unsigned i = 0; i < n; i++) e[i] = x[i] * 2654435761u + i;
  launch1(in, 4, 64);
}

static void setup_index3d(gl_corpus_inst *in) {
  const uint32_t g[3] = {3, 2, 2}, b[3] = {4, 3, 2};
  unsigned n = g[0] * g[1] * g[2] * b[0] * b[1] * b[2], bo;
  buf_new(in, n * 2 * 4, &bo);
  param_buf(in, bo);
  uint32_t *e = out_new(in, bo, GL_CORPUS_U32, GL_CORPUS_EXACT, "out");
  for (uint32_t bz = 0; bz < g[2]; bz++)
    for (uint32_t by = 0; by < g[1]; by++)
      for (uint32_t bx = 0; bx < g[0]; bx++)
        for (uint32_t tz = 0; tz < b[2]; tz++)
          for (uint32_t ty = 0; ty < b[1]; ty++)
            for (uint32_t tx = 0; tx < b[0]; tx++) {
              uint32_t blk = (bz * g[1] + by) * g[0] + bx;
              uint32_t t = (tz * b[1] + ty) * b[0] + tx, gi = blk * b[0] * b[1] * b[2] + t;
              e[2 * gi] = (bx << 24) | (by << 16) | (bz << 8) | (tx << 4) | (ty << 2) | tz;
              e[2 * gi + 1] =
                  (g[0] << 24) | (g[1] << 16) | (g[2] << 8) | (b[0] << 4) | (b[1] << 2) | b[2];
            }
  memcpy(in->grid, g, sizeof g);
  memcpy(in->block, b, sizeof b);
}

static void setup_const_lut(gl_corpus_inst *in) {
  static const float c_scale[8] = {1.0f, -2.5f, 0.125f, 3.0e10f, -1.0e-30f, 7.0f, 0.1f, -0.0f};
  static const int32_t c_perm[16] = {3, 14, 1, 5, 9, 2, 6, 13, 0, 15, 8, 12, 7, 4, 11, 10};
  static const uint32_t d_mix[8] = {0x01234567u, 0x89abcdefu, 0xdeadbeefu, 0x0badf00du,
                                    0xffffffffu, 0u,          0x80000000u, 0x7fffffffu};
  static const int16_t d_small[4] = {-3, 300, -32768, 32767};
  rng r = rng_seed("const_lut");
  const unsigned n = 16384;
  unsigned bk, bx, bf, bu;
  uint32_t *k = buf_new(in, n * 4, &bk);
  float *x = buf_new(in, n * 4, &bx);
  buf_new(in, n * 4, &bf);
  buf_new(in, n * 2 * 4, &bu);
  for (unsigned i = 0; i < n; i++) {
    k[i] = rng_u32(&r);
    x[i] = rng_f32_edge(&r, -20, 20);
  }
  param_buf(in, bk);
  param_buf(in, bx);
  param_buf(in, bf);
  param_buf(in, bu);
  param_i32(in, (int)n);
  float *ef = out_new(in, bf, GL_CORPUS_F32, GL_CORPUS_EXACT, "fout");
  uint32_t *eu = out_new(in, bu, GL_CORPUS_U32, GL_CORPUS_EXACT, "uout");
  for (unsigned i = 0; i < n; i++) {
    uint32_t q = k[i];
    ef[i] = c_scale[q & 7] * x[i];
    eu[2 * i] = (uint32_t)c_perm[(q >> 3) & 15] ^ d_mix[(q >> 7) & 7];
    eu[2 * i + 1] = (uint32_t)(int32_t)d_small[q & 3] + (uint32_t)c_perm[c_perm[q & 15]];
  }
  launch1(in, n / 128, 128);
}

static uint32_t nf3(uint32_t a, uint32_t b, int32_t c) { return (a * 31u + b) ^ (uint32_t)sar32(c, 2); }

static void setup_noinline_calls(gl_corpus_inst *in) {
  rng r = rng_seed("noinline_calls");
  const unsigned n = 1024;
  unsigned ba, bb, bo, bs;
  int32_t *a = buf_new(in, n * 4, &ba);
  float *b = buf_new(in, n * 4, &bb);
  buf_new(in, n * 8, &bo);
  buf_new(in, n * 8, &bs);
  for (unsigned i = 0; i < n; i++) {
    a[i] = rng_i32_edge(&r);
    b[i] = rng_f32_edge(&r, -10, 10);
  }
  param_buf(in, ba);
  param_buf(in, bb);
  param_buf(in, bo);
  param_buf(in, bs);
  param_i32(in, (int)n);
  double *eo = out_new(in, bo, GL_CORPUS_F64, GL_CORPUS_EXACT, "out");
  int64_t *es = out_new(in, bs, GL_CORPUS_U64, GL_CORPUS_EXACT, "side");
  for (unsigned i = 0; i < n; i++) {
    int32_t px = a[i], k = (int32_t)i;
    float py = b[i], w = b[(i + 1) % n];
    double pz = (double)a[i] * 0.5;
    int16_t ps = (int16_t)sar32(a[i], 3);
    /* f1 -> f2 -> f3 */
    uint32_t h = nf3((uint32_t)px, (uint32_t)(k + 1), ps);
    float rr = py * w + (float)(h & 0xffffu);
    es[i] = (int64_t)nf3((uint32_t)k, (uint32_t)px, -k) * (int64_t)ps;
    eo[i] = pz + (double)rr;
  }
  launch1(in, n / 128, 128);
}

static void setup_local_array(gl_corpus_inst *in) {
  rng r = rng_seed("local_array");
  const unsigned n = 1024;
  unsigned bi, bx, bo, bf;
  int32_t *v = buf_new(in, n * 4, &bi), *s = buf_new(in, n * 4, &bx);
  buf_new(in, n * 4, &bo);
  buf_new(in, n * 4, &bf);
  for (unsigned i = 0; i < n; i++) {
    v[i] = rng_i32_edge(&r);
    s[i] = (int32_t)rng_u32(&r);
  }
  param_buf(in, bi);
  param_buf(in, bx);
  param_buf(in, bo);
  param_buf(in, bf);
  param_i32(in, (int)n);
  uint32_t *eo = out_new(in, bo, GL_CORPUS_U32, GL_CORPUS_EXACT, "out");
  float *ef = out_new(in, bf, GL_CORPUS_F32, GL_CORPUS_EXACT, "fout");
  for (unsigned i = 0; i < n; i++) {
    uint32_t arr[24];
    float fa[10];
    int32_t x = v[i], sv = s[i];
    for (uint32_t k = 0; k < 24; k++) arr[k] = ((uint32_t)x * (k + 1)) ^ k;
    for (int k = 0; k < 10; k++) fa[k] = fmaf((float)(x % 1000), 0.5f, (float)k);
    uint32_t acc = 0;
    for (uint32_t j = 0; j < 8; j++) {
      uint32_t p = ((uint32_t)sv + j * 7) % 24u;
      acc += arr[p];
      arr[(p * 5 + 1) % 24] = acc;
      fa[((uint32_t)sv ^ j) % 10u] = fa[((uint32_t)sv + j) % 10u] + (float)(int32_t)acc;
    }
    eo[i] = acc ^ arr[(uint32_t)sv % 24u];
    ef[i] = fa[(uint32_t)sar32(sv, 4) % 10u];
  }
  launch1(in, n / 128, 128);
}

static void setup_byval_params(gl_corpus_inst *in) {
  rng r = rng_seed("byval_params");
  const unsigned nb = 64;
  unsigned bi, bo;
  int32_t *v = buf_new(in, nb * 4, &bi);
  buf_new(in, nb * 16 * 8, &bo);
  for (unsigned i = 0; i < nb; i++) v[i] = rng_i32_edge(&r);
  int8_t c = -77;
  int16_t s = -12345;
  int32_t i32 = 0x7654321;
  double d = -3.0e-300;
  /* struct prm { int a; float b; double c; char d[3]; short e; long long f; }:
   * offsets 0, 4, 8, 16, 20, 24; 32 bytes, 8-aligned. */
  uint8_t prm[32] = {0};
  int32_t pa = -424242;
  float pb = 1.5e-40f;
  double pc = 6.02214076e23;
  int8_t pd[3] = {-1, 2, -128};
  int16_t pe = 31000;
  int64_t pf = INT64_MIN + 12345;
  memcpy(prm + 0, &pa, 4);
  memcpy(prm + 4, &pb, 4);
  memcpy(prm + 8, &pc, 8);
  memcpy(prm + 16, pd, 3);
  memcpy(prm + 20, &pe, 2);
  memcpy(prm + 24, &pf, 8);
  uint8_t uc = 250;
  float f = -0.0f;
  param_raw(in, &c, 1);
  param_raw(in, &s, 2);
  param_raw(in, &i32, 4);
  param_raw(in, &d, 8);
  param_raw(in, prm, 32);
  param_buf(in, bi);
  param_buf(in, bo);
  param_raw(in, &uc, 1);
  param_raw(in, &f, 4);
  int64_t *e = out_new(in, bo, GL_CORPUS_U64, GL_CORPUS_EXACT, "out");
  for (unsigned t = 0; t < nb; t++) {
    int64_t *o = e + 16 * t;
    uint64_t u;
    o[0] = c;
    o[1] = s;
    o[2] = i32;
    memcpy(&u, &d, 8);
    o[3] = (int64_t)u;
    o[4] = pa;
    o[5] = (int32_t)bits_f32(pb);
    memcpy(&u, &pc, 8);
    o[6] = (int64_t)u;
    o[7] = pd[0] * 65536 + pd[1] * 256 + pd[2];
    o[8] = pe;
    o[9] = pf;
    o[10] = uc;
    o[11] = (int32_t)bits_f32(f);
    o[12] = (int64_t)v[t] * pa + c;
    o[13] = (int64_t)v[t] + s * (int64_t)uc;
    double m = d * (double)v[t];
    memcpy(&u, &m, 8);
    o[14] = (int64_t)u;
    o[15] = pf ^ (int64_t)t;
  }
  launch1(in, 1, nb);
}

/* ==========================================================================
 * The table
 * ======================================================================== */

const gl_corpus_case gl_corpus_cases[] = {
    {"saxpy", "saxpy", true, setup_saxpy},
    {"transpose_naive", "transpose_naive", true, setup_transpose_naive},
    {"transpose_tiled", "transpose_tiled", true, setup_transpose_tiled},
    {"matmul_tiled", "matmul_tiled", true, setup_matmul_tiled},
    {"matmul_dyn", "matmul_dyn", true, setup_matmul_dyn},
    {"reduce_tree", "reduce_tree", true, setup_reduce_tree},
    {"reduce_shfl", "reduce_shfl", true, setup_reduce_shfl},
    {"reduce_atomic", "reduce_atomic", false, setup_reduce_atomic},
    {"scan_hillis", "scan_hillis", true, setup_scan_hillis},
    {"scan_warp", "scan_warp", true, setup_scan_warp},
    {"histogram", "histogram", true, setup_histogram},
    {"int64_math", "int64_math", true, setup_int64_math},
    {"int32_math", "int32_math", true, setup_int32_math},
    {"double_math", "double_math", true, setup_double_math},
    {"rounded_math", "rounded_math", true, setup_rounded_math},
    {"approx_math", "approx_math", true, setup_approx_math},
    {"bitops", "bitops", true, setup_bitops},
    {"compare_select", "compare_select", true, setup_compare_select},
    {"nan_rules", "nan_rules", true, setup_nan_rules},
    {"conversions", "conversions", true, setup_conversions},
    {"half_math", "half_math", true, setup_half_math},
    {"warp_vote", "warp_vote", true, setup_warp_vote},
    {"shfl_width", "shfl_width", true, setup_shfl_width},
    {"atomics_all", "atomics_all", false, setup_atomics_all},
    {"divergent_loops", "divergent_loops", true, setup_divergent_loops},
    {"grid_stride", "grid_stride", true, setup_grid_stride},
    {"index3d", "index3d", true, setup_index3d},
    {"const_lut", "const_lut", true, setup_const_lut},
    {"noinline_calls", "noinline_calls", true, setup_noinline_calls},
    {"local_array", "local_array", true, setup_local_array},
    {"byval_params", "byval_params", true, setup_byval_params},
    {"coop_grid_sync", "coop_grid_sync", true, setup_coop_grid_sync},
    {"cluster_dsmem", "cluster_dsmem", true, setup_cluster_dsmem},
};
const size_t gl_corpus_ncases = sizeof gl_corpus_cases / sizeof gl_corpus_cases[0];
