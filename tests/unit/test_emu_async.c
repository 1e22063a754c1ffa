/*
 * test_emu_async.c - asynchronous copies, mbarriers, redux and elect on the
 * emulated device. The kernels of tests/emu/async/async.cu run from their
 * nvcc PTX for sm_80 and sm_90a and are checked against C references:
 * cp.async with every cp-size, zero-fill and ignore-src (never reading
 * what a zero-size copy names), cuda_pipeline.h's double buffering,
 * redux.sync, an mbarrier producer/consumer pipeline across warps (also
 * as a co-resident group under a low no-progress limit), the mbarrier
 * phase/arrival/tx-count rules and the object's encoding, waits that time
 * out and waits that can never complete, cp.async.mbarrier.arrive, and on
 * sm_90a cp.async.bulk, remote arrives in a cluster, elect.sync,
 * setmaxnreg, griddepcontrol, and tensor copies (TMA: tile loads with
 * out-of-bounds fill and every swizzle, tile stores) through tensor maps
 * from gl_emu_tensormap_encode_tiled. Hand-written PTX covers the forms nvcc
 * does not emit (redux .f32, Triton's cp.async) and the parser's answers
 * to every new form, to malformed ones and to the ones still refused.
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
#include "emu/ptx_parse.h"
#include "emu_fixture.h"

#define REGION (16u << 20)

extern uint64_t gl_emu__no_progress_limit;

/* ---- Fixture ------------------------------------------------------------ */

static const char *variant(void **state) { return (const char *)*state; }
static int is90(void **state) { return strcmp(variant(state), "sm90a") == 0; }

static void env_text(env *e, const char *ptx, size_t len) { env_load(e, REGION, ptx, len, "PTX"); }

static void env_open(env *e, void **state) {
  char rel[256];
  snprintf(rel, sizeof rel, "tests/emu/async/async_%s.ptx", variant(state));
  size_t len = 0;
  char *ptx = read_src(rel, &len);
  env_text(e, ptx, len);
  free(ptx);
}

typedef struct lcfg {
  uint32_t grid, block, cluster;
  int cooperative;
  unsigned threads;
} lcfg;

static gpulease_status run_k(env *e, const char *kernel, lcfg c, void **args) {
  const gl_emu_function *fn = gl_emu_module_function(e->mod, kernel);
  if (!fn)
    fail_msg("no kernel %s", kernel);
  gl_emu_launch_cfg cfg = {.grid = {c.grid ? c.grid : 1, 1, 1},
                           .block = {c.block ? c.block : 1, 1, 1},
                           .args = args,
                           .threads = c.threads,
                           .cooperative = c.cooperative,
                           .sm_count = 4,
                           .cluster = {c.cluster, c.cluster ? 1 : 0, c.cluster ? 1 : 0}};
  return gl_emu_launch(e->dev, fn, &cfg, NULL, e->err, sizeof e->err);
}

#define RUN_OK(e, k, c, args)                                                                  \
  do {                                                                                         \
    gpulease_status st_ = run_k((e), (k), (c), (args));                                        \
    if (st_ != GPULEASE_OK)                                                                    \
      fail_msg("%s: status %d: %s", (k), st_, (e)->err);                                      \
  } while (0)

static uint32_t rng_state = 12345;
static int32_t rnd(void) {
  rng_state = rng_state * 1103515245u + 12345u;
  return (int32_t)(rng_state >> 1);
}

/* ---- cp.async ------------------------------------------------------------ */

static void check_fill(env *e, const int *in, int n) {
  uint64_t din = dput(e, in, 256 * sizeof(int));
  uint64_t dout = dput(e, NULL, 512 * sizeof(int));
  uint64_t bogus = 16; /* far outside any memory: reading it would fail */
  void *args[] = {&din, &dout, &n, &bogus};
  RUN_OK(e, "cp_async_fill", ((lcfg){.block = 64}), args);
  int out[512];
  dget(e, dout, out, sizeof out);
  for (int i = 0; i < 256; i++) /* 16-byte copies: zero past n */
    assert_int_equal(out[i], i < n ? in[i] : 0);
  for (int i = 0; i < 128; i++) /* 8-byte copies */
    assert_int_equal(out[256 + i], i < n ? in[i] : 0);
  for (int t = 0; t < 64; t++) /* 4 bytes, ignore-src on odd threads */
    assert_int_equal(out[384 + t], (t & 1) ? 0 : in[t]);
  for (int t = 0; t < 64; t++) /* src-size 3: the top byte zeroed */
    assert_int_equal((uint32_t)out[448 + t], (uint32_t)in[t] & 0x00ffffffu);
}

static void test_cp_async_fill(void **state) {
  env e;
  env_open(&e, state);
  int in[256];
  for (int i = 0; i < 256; i++)
    in[i] = rnd() | 0x01000000;
  static const int ns[] = {0, 1, 2, 3, 5, 130, 255, 256};
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
    check_fill(&e, in, ns[k]);
  /* a cache policy from createpolicy */
  uint64_t din = dput(&e, in, 256), dout = dput(&e, NULL, 256);
  void *args[] = {&din, &dout};
  RUN_OK(&e, "cp_async_hint", ((lcfg){.block = 64}), args);
  int out[64];
  dget(&e, dout, out, sizeof out);
  for (int t = 0; t < 64; t++)
    assert_int_equal((uint32_t)out[t], (uint32_t)in[t] & 0x00ffffffu);
  env_close(&e);
}

static void test_pipeline_sum(void **state) {
  env e;
  env_open(&e, state);
  enum { NB = 3, NT = 5 };
  static float in[NB * NT * 128];
  for (int i = 0; i < NB * NT * 128; i++)
    in[i] = (float)(rnd() % 1000) / 8.0f;
  uint64_t din = dput(&e, in, sizeof in);
  uint64_t dout = dput(&e, NULL, NB * 32 * sizeof(float));
  int nt = NT;
  void *args[] = {&din, &dout, &nt};
  RUN_OK(&e, "pipeline_sum", ((lcfg){.grid = NB, .block = 32}), args);
  float out[NB * 32];
  dget(&e, dout, out, sizeof out);
  for (int b = 0; b < NB; b++)
    for (int t = 0; t < 32; t++) {
      float acc = 0.f;
      for (int k = 0; k < NT; k++) {
        const float *v = &in[((b * NT + k) * 32 + ((t + k) & 31)) * 4];
        acc += v[0] + v[1] + v[2] + v[3];
      }
      assert_true(out[b * 32 + t] == acc);
    }
  env_close(&e);
}

static void test_cuda_barrier_copy(void **state) {
  env e;
  env_open(&e, state);
  int in[1024], out[1024];
  for (int i = 0; i < 1024; i++)
    in[i] = rnd();
  uint64_t din = dput(&e, in, sizeof in), dout = dput(&e, NULL, sizeof out);
  static const int ns[] = {4, 256, 1020, 1024};
  static const uint32_t blocks[] = {32, 96, 256, 64};
  for (int k = 0; k < 4; k++) {
    int n = ns[k];
    void *args[] = {&din, &dout, &n};
    RUN_OK(&e, "cuda_barrier_copy", ((lcfg){.block = blocks[k]}), args);
    dget(&e, dout, out, sizeof out);
    for (int i = 0; i < n; i++)
      assert_int_equal(out[i], in[n - 1 - i] + i);
  }
  env_close(&e);
}

/* The cp.async form Triton emits for masked loads: src-size in a register,
 * 0 for masked-off lanes whose address is garbage. */
static const char triton_ptx[] =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".extern .shared .align 16 .b8 global_smem[];\n"
    ".visible .entry k(.param .u64 in, .param .u64 out, .param .u32 n)\n{\n"
    ".reg .b32 %r<10>; .reg .b64 %rd<10>; .reg .pred %p<3>;\n"
    "ld.param.u64 %rd1, [in]; ld.param.u64 %rd2, [out]; ld.param.u32 %r1, [n];\n"
    "mov.u32 %r2, %tid.x; mov.u32 %r3, global_smem;\n"
    "shl.b32 %r4, %r2, 2; add.s32 %r5, %r3, %r4;\n"
    "mul.wide.u32 %rd3, %r2, 4; add.s64 %rd4, %rd1, %rd3;\n"
    "setp.lt.u32 %p1, %r2, %r1; selp.b32 %r6, 4, 0, %p1;\n"
    "selp.b64 %rd5, %rd4, 8, %p1;\n"
    "cp.async.ca.shared.global [ %r5 + 0 ], [ %rd5 + 0 ], 0x4, %r6;\n"
    "cp.async.commit_group;\ncp.async.wait_group 0;\nbar.sync 0;\n"
    "ld.shared.u32 %r7, [%r5]; add.s64 %rd6, %rd2, %rd3; st.global.u32 [%rd6], %r7;\n"
    "ret;\n}\n";

/* Variables as operands: a static and a dynamic (.extern) shared array,
 * read back through ordinary loads of the same names. */
static const char dynsym_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".shared .align 16 .b8 pad[48];\n"
    ".extern .shared .align 16 .b8 dsm[];\n"
    ".visible .entry k(.param .u64 in, .param .u64 out)\n{\n"
    ".reg .b32 %r<4>; .reg .b64 %rd<12>; .reg .pred %p<2>;\n"
    "ld.param.u64 %rd1, [in]; ld.param.u64 %rd2, [out];\n"
    "mbarrier.init.shared.b64 [dsm+8], 5;\n"
    "mbarrier.init.shared.b64 [pad+32], 7;\n"
    "cp.async.cg.shared.global [dsm+16], [%rd1], 16;\n"
    "cp.async.ca.shared.global [pad+16], [%rd1+16], 16, 8;\n"
    "cp.async.wait_all;\n"
    "mbarrier.arrive.shared.b64 %rd3, [dsm+8], 2;\n"
    "ld.shared.u64 %rd4, [dsm+8]; ld.shared.v2.u64 {%rd5, %rd6}, [dsm+16];\n"
    "ld.shared.u64 %rd7, [pad+32]; ld.shared.v2.u64 {%rd8, %rd9}, [pad+16];\n"
    "st.global.v2.u64 [%rd2], {%rd4, %rd5}; st.global.v2.u64 [%rd2+16], {%rd6, %rd7};\n"
    "st.global.v2.u64 [%rd2+32], {%rd8, %rd9};\n"
    "ret;\n}\n";

static void test_variable_operands(void **state) {
  (void)state;
  env e;
  env_text(&e, dynsym_ptx, sizeof dynsym_ptx - 1);
  uint64_t in[4] = {0x1111222233334444ull, 0x5555666677778888ull, 0x99990000aaaabbbbull,
                    0xccccddddeeeeffffull};
  uint64_t out[6];
  uint64_t din = dput(&e, in, sizeof in), dout = dput(&e, NULL, sizeof out);
  void *args[] = {&din, &dout};
  const gl_emu_function *fn = gl_emu_module_function(e.mod, "k");
  gl_emu_launch_cfg cfg = {.grid = {1, 1, 1}, .block = {1, 1, 1}, .shared_bytes = 64,
                           .args = args};
  if (gl_emu_launch(e.dev, fn, &cfg, NULL, e.err, sizeof e.err) != GPULEASE_OK)
    fail_msg("%s", e.err);
  dget(&e, dout, out, sizeof out);
  assert_int_equal(out[0], 3ull | 5ull << 20 | 1ull << 62); /* 5 - 2 pending */
  assert_int_equal(out[1], in[0]);
  assert_int_equal(out[2], in[1]);
  assert_int_equal(out[3], 7ull | 7ull << 20 | 1ull << 62);
  assert_int_equal(out[4], in[2]);
  assert_int_equal(out[5], 0); /* src-size 8: the second half zeroed */
  env_close(&e);
}

static void test_triton_cp_async(void **state) {
  (void)state;
  env e;
  env_text(&e, triton_ptx, sizeof triton_ptx - 1);
  int in[64], out[64];
  for (int i = 0; i < 64; i++)
    in[i] = rnd();
  uint64_t din = dput(&e, in, sizeof in), dout = dput(&e, NULL, sizeof out);
  const gl_emu_function *fn = gl_emu_module_function(e.mod, "k");
  assert_non_null(fn);
  for (uint32_t n = 0; n <= 64; n += 21) {
    void *args[] = {&din, &dout, &n};
    gl_emu_launch_cfg cfg = {.grid = {1, 1, 1}, .block = {64, 1, 1}, .shared_bytes = 256,
                             .args = args};
    assert_int_equal(gl_emu_launch(e.dev, fn, &cfg, NULL, e.err, sizeof e.err), GPULEASE_OK);
    dget(&e, dout, out, sizeof out);
    for (uint32_t i = 0; i < 64; i++)
      assert_int_equal(out[i], i < n ? in[i] : 0);
  }
  env_close(&e);
}

/* The Triton kernels in the tree parse once the matrix instructions
 * (ldmatrix, mma, wgmma: not this file's) are taken out, and every
 * cp.async in them decodes as one. */
static void test_triton_kernels_parse(void **state) {
  (void)state;
  static const char *const files[] = {
      "sm_80/softmax", "sm_80/matmul_f32", "sm_80/matmul_f16", "sm_80/matmul_tf32",
      "sm_80/layer_norm", "sm_90a/softmax", "sm_90a/matmul_f32", "sm_90a/matmul_f16",
      "sm_90a/matmul_tf32"};
  static const char *const skip[] = {"ldmatrix", "stmatrix", "movmatrix", "mma", "wgmma"};
  size_t total = 0;
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char rel[128];
    snprintf(rel, sizeof rel, "tests/emu/triton/%s.ptx", files[i]);
    size_t len, n = 0, ncp = 0;
    char *ptx = read_src(rel, &len);
    char *keep = malloc(len + 1);
    assert_non_null(keep);
    for (char *line = ptx; line < ptx + len;) {
      char *end = memchr(line, '\n', (size_t)(ptx + len - line));
      end = end ? end + 1 : ptx + len;
      const char *w = line;
      while (w < end && (*w == ' ' || *w == '\t')) w++;
      if (*w == '@') { /* a guard */
        while (w < end && *w != ' ' && *w != '\t') w++;
        while (w < end && (*w == ' ' || *w == '\t')) w++;
      }
      int drop = 0;
      for (size_t k = 0; k < sizeof skip / sizeof skip[0]; k++) {
        size_t sl = strlen(skip[k]);
        if ((size_t)(end - w) > sl && memcmp(w, skip[k], sl) == 0 && w[sl] == '.') drop = 1;
      }
      if ((size_t)(end - w) > 11 && memcmp(w, "cp.async.ca", 11) == 0) ncp++;
      if (!drop) {
        memcpy(keep + n, line, (size_t)(end - line));
        n += (size_t)(end - line);
      }
      line = end;
    }
    gl_ptx_module *m = NULL;
    char err[512] = "";
    gpulease_status st = gl_ptx_parse(keep, n, GL_EMU_MODULE_DATA_BASE, &m, err, sizeof err);
    if (st != GPULEASE_OK)
      fail_msg("%s: %d %s", rel, st, err);
    size_t got = 0;
    for (uint32_t k = 0; k < m->ninsns; k++)
      got += m->insns[k].op == GL_PTX_OP_CPASYNC;
    assert_int_equal(got, ncp);
    total += got;
    gl_ptx_module_free(m);
    free(keep);
    free(ptx);
  }
  assert_true(total >= 300); /* Triton's matmuls are full of them */
}

/* ---- redux, elect --------------------------------------------------------- */

static void test_redux(void **state) {
  env e;
  env_open(&e, state);
  enum { T = 64 };
  int in[T], out[T * 8];
  for (int i = 0; i < T; i++)
    in[i] = rnd() - (1 << 30);
  uint64_t din = dput(&e, in, sizeof in), dout = dput(&e, NULL, sizeof out);
  void *args[] = {&din, &dout};
  RUN_OK(&e, "redux_all", ((lcfg){.block = T}), args);
  dget(&e, dout, out, sizeof out);
  for (int w = 0; w < T / 32; w++) {
    const int *v = in + w * 32;
    uint32_t add = 0, umax = 0, band = ~0u, bor = 0, bxor = 0;
    int32_t smin = INT32_MAX, smax = INT32_MIN;
    uint32_t odd_add = 0, even_min = ~0u;
    for (int l = 0; l < 32; l++) {
      uint32_t u = (uint32_t)v[l];
      add += u;
      umax = u > umax ? u : umax;
      band &= u;
      bor |= u;
      bxor ^= u;
      smin = v[l] < smin ? v[l] : smin;
      smax = v[l] > smax ? v[l] : smax;
      if (l & 1)
        odd_add += u;
      else
        even_min = u < even_min ? u : even_min;
    }
    for (int l = 0; l < 32; l++) {
      const int *o = out + (w * 32 + l) * 8;
      assert_int_equal((uint32_t)o[0], add);
      assert_int_equal(o[1], smin);
      assert_int_equal((uint32_t)o[2], umax);
      assert_int_equal((uint32_t)o[3], band);
      assert_int_equal((uint32_t)o[4], bor);
      assert_int_equal((uint32_t)o[5], bxor);
      assert_int_equal(o[6], smax);
      assert_int_equal((uint32_t)o[7], (l & 1) ? odd_add : even_min);
    }
  }
  env_close(&e);
}

/* redux.sync.{min,max}{.abs}{.NaN}.f32 (sm_100a; the parser does not tie
 * instructions to targets). out[4 * lane + k]. */
static const char redux_f32_ptx[] =
    ".version 8.0\n.target sm_90a\n.address_size 64\n"
    ".visible .entry k(.param .u64 in, .param .u64 out)\n{\n"
    ".reg .b32 %r<12>; .reg .f32 %f<8>; .reg .b64 %rd<8>;\n"
    "ld.param.u64 %rd1, [in]; ld.param.u64 %rd2, [out]; mov.u32 %r1, %tid.x;\n"
    "mul.wide.u32 %rd3, %r1, 4; add.s64 %rd4, %rd1, %rd3; ld.global.f32 %f1, [%rd4];\n"
    "redux.sync.min.f32 %f2, %f1, 0xffffffff;\n"
    "redux.sync.max.f32 %f3, %f1, 0xffffffff;\n"
    "redux.sync.max.abs.f32 %f4, %f1, 0xffffffff;\n"
    "redux.sync.min.NaN.f32 %f5, %f1, 0xffffffff;\n"
    "mul.wide.u32 %rd5, %r1, 16; add.s64 %rd6, %rd2, %rd5;\n"
    "st.global.v4.f32 [%rd6], {%f2, %f3, %f4, %f5};\nret;\n}\n";

static void test_redux_f32(void **state) {
  (void)state;
  env e;
  env_text(&e, redux_f32_ptx, sizeof redux_f32_ptx - 1);
  for (int round = 0; round < 3; round++) {
    float in[32], out[128];
    for (int i = 0; i < 32; i++)
      in[i] = (float)(rnd() % 2001 - 1000) / 4.0f;
    if (round == 1)
      in[7] = NAN;
    if (round == 2) {
      for (int i = 0; i < 32; i++)
        in[i] = (i & 1) ? 0.0f : -0.0f;
    }
    uint64_t din = dput(&e, in, sizeof in), dout = dput(&e, NULL, sizeof out);
    void *args[] = {&din, &dout};
    RUN_OK(&e, "k", ((lcfg){.block = 32}), args);
    dget(&e, dout, out, sizeof out);
    float mn = INFINITY, mx = -INFINITY, amx = 0.0f;
    int nan = 0;
    for (int i = 0; i < 32; i++) {
      if (isnan(in[i])) {
        nan = 1;
        continue;
      }
      mn = fminf(mn, in[i]);
      mx = fmaxf(mx, in[i]);
      amx = fmaxf(amx, fabsf(in[i]));
    }
    for (int l = 0; l < 32; l++) {
      assert_true(out[l * 4 + 0] == mn);
      assert_true(out[l * 4 + 1] == mx);
      assert_true(out[l * 4 + 2] == amx);
      if (nan)
        assert_true(isnan(out[l * 4 + 3]));
      else
        assert_true(out[l * 4 + 3] == mn);
      if (round == 2) { /* -0 is below +0 */
        assert_true(signbit(out[l * 4 + 0]));
        assert_false(signbit(out[l * 4 + 1]));
      }
    }
  }
  env_close(&e);
}

static void test_elect_misc(void **state) {
  env e;
  env_open(&e, state);
  enum { T = 96 };
  int in[T], out[T * 4];
  for (int i = 0; i < T; i++)
    in[i] = rnd() & 0xffff;
  uint64_t din = dput(&e, in, sizeof in), dout = dput(&e, NULL, sizeof out);
  void *args[] = {&din, &dout};
  RUN_OK(&e, "elect_misc", ((lcfg){.block = T}), args);
  dget(&e, dout, out, sizeof out);
  for (int w = 0; w < T / 32; w++) {
    int first = -1; /* lowest lane of the divergent branch */
    for (int l = 0; l < 32 && first < 0; l++)
      if (in[w * 32 + l] % 3 == 1)
        first = l;
    for (int l = 0; l < 32; l++) {
      int t = w * 32 + l;
      assert_int_equal(out[t * 4 + 0], 0);
      assert_int_equal(out[t * 4 + 1], l == 0);
      assert_int_equal(out[t * 4 + 2], in[t] % 3 == 1 ? l == first : -1);
      assert_int_equal(out[t * 4 + 3], in[t] * 5);
    }
  }
  env_close(&e);
}

/* ---- mbarrier -------------------------------------------------------------- */

static void pipeline_ref(const int *in, int nchunks, int *ref) {
  for (int me = 0; me < 96; me++) {
    long long acc = 0;
    for (int c = 0; c < nchunks; c++)
      acc += (long long)(in[c * 96 + me] * 3 + c) * (c + 1);
    ref[me] = (int)acc;
  }
}

static void test_mbar_pipeline(void **state) {
  env e;
  env_open(&e, state);
  enum { NC = 9 };
  int in[NC * 96], out[96], ref[96];
  for (int i = 0; i < NC * 96; i++)
    in[i] = rnd() % 100000;
  pipeline_ref(in, NC, ref);
  uint64_t din = dput(&e, in, sizeof in), dout = dput(&e, NULL, sizeof out);
  int nc = NC;
  void *args[] = {&din, &dout, &nc};
  RUN_OK(&e, "mbar_pipeline", ((lcfg){.block = 128}), args);
  dget(&e, dout, out, sizeof out);
  assert_memory_equal(out, ref, sizeof ref);
  /* As a co-resident group (cooperative grid of 2) with a no-progress limit
   * far below what spinning waits would issue: waits park, so none trips. */
  uint64_t keep = gl_emu__no_progress_limit;
  gl_emu__no_progress_limit = 2000;
  memset(out, 0, sizeof out);
  uint64_t dout2 = dput(&e, NULL, sizeof out);
  void *args2[] = {&din, &dout2, &nc};
  gpulease_status st = run_k(&e, "mbar_pipeline", ((lcfg){.grid = 2, .block = 128,
                                                          .cooperative = 1}), args2);
  gl_emu__no_progress_limit = keep;
  if (st != GPULEASE_OK)
    fail_msg("cooperative mbar_pipeline: %d %s", st, e.err);
  dget(&e, dout2, out, sizeof out);
  assert_memory_equal(out, ref, sizeof ref);
  env_close(&e);
}

static void test_mbar_states(void **state) {
  env e;
  env_open(&e, state);
  long long out[20];
  uint64_t dout = dput(&e, NULL, sizeof out);
  void *args[] = {&dout};
  RUN_OK(&e, "mbar_states", ((lcfg){.block = 1}), args);
  dget(&e, dout, out, sizeof out);
  /* the documented encoding (exec_mbar.c): pending 3, expected 3, tx 0,
   * initialised, phase 0 */
  assert_int_equal((uint64_t)out[0], 3ull | 3ull << 20 | 1ull << 62);
  /* pending_count: the phase's pending arrivals just before the arrive (as
   * an H200 answers) */
  static const long long want[] = {-2, 3, 0, 2, 0, 1, 1, 1, 1, 3, 1, 2};
  for (int i = 1; i < 12; i++)
    assert_int_equal(out[i], want[i]);
  if (is90(state)) {
    static const long long want90[] = {0, 0, 1, 2, 1};
    for (int i = 0; i < 5; i++)
      assert_int_equal(out[12 + i], want90[i]);
  } else {
    for (int i = 12; i < 17; i++)
      assert_int_equal(out[i], -1);
  }
  assert_int_equal(out[17], 0); /* inval */
  env_close(&e);
}

static void test_cp_async_mbar(void **state) {
  env e;
  env_open(&e, state);
  int in[64 * 4], out[64 * 4];
  for (int i = 0; i < 256; i++)
    in[i] = rnd();
  uint64_t din = dput(&e, in, sizeof in), dout = dput(&e, NULL, sizeof out);
  void *args[] = {&din, &dout};
  RUN_OK(&e, "cp_async_mbar", ((lcfg){.block = 64}), args);
  dget(&e, dout, out, sizeof out);
  for (int t = 0; t < 64; t++) {
    const int *s = &in[((t + 1) & 63) * 4];
    assert_int_equal(out[t * 4 + 0], s[0] + 1);
    for (int k = 1; k < 4; k++)
      assert_int_equal(out[t * 4 + k], s[k]);
  }
  env_close(&e);
}

static void test_mbar_timeout(void **state) {
  env e;
  env_open(&e, state);
  int out[64];
  uint64_t dout = dput(&e, NULL, sizeof out);
  void *args[] = {&dout};
  RUN_OK(&e, "mbar_selfarrive", ((lcfg){.block = 64}), args);
  dget(&e, dout, out, sizeof out);
  for (int t = 0; t < 64; t++) /* one failed wait, one arrive, then done */
    assert_int_equal(out[t], 1);
  RUN_OK(&e, "mbar_bounded_spin", ((lcfg){.block = 64}), args);
  dget(&e, dout, out, sizeof out);
  for (int t = 0; t < 64; t++) /* 200 failed waits, then its own arrive */
    assert_int_equal(out[t], 200);
  gpulease_status st = run_k(&e, "mbar_deadlock", ((lcfg){.block = 32}), args);
  assert_int_equal(st, GPULEASE_LAUNCH_FAILED);
  assert_non_null(strstr(e.err, "can never complete"));
  assert_non_null(strstr(e.err, "32 of 64 arrivals pending"));
  /* and as a co-resident group */
  st = run_k(&e, "mbar_deadlock", ((lcfg){.grid = 2, .block = 32, .cooperative = 1}), args);
  assert_int_equal(st, GPULEASE_LAUNCH_FAILED);
  assert_non_null(strstr(e.err, "can never complete"));
  env_close(&e);
}

/* Errors that PTX leaves undefined fail the launch with the line. */
static const char mbar_err_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".shared .align 8 .b64 bar;\n"
    ".visible .entry uninit()\n{\n.reg .b64 %rd<2>;\n"
    "mbarrier.arrive.shared.b64 %rd1, [bar];\nret;\n}\n"
    ".visible .entry over()\n{\n.reg .b64 %rd<2>;\n"
    "mbarrier.init.shared.b64 [bar], 2;\nmbarrier.arrive.shared.b64 %rd1, [bar], 3;\nret;\n}\n"
    ".visible .entry nocomplete()\n{\n.reg .b64 %rd<2>;\n"
    "mbarrier.init.shared.b64 [bar], 1;\n"
    "mbarrier.arrive.noComplete.shared.b64 %rd1, [bar], 1;\nret;\n}\n"
    ".visible .entry generic_global(.param .u64 p)\n{\n.reg .b64 %rd<2>;\n"
    "ld.param.u64 %rd1, [p];\nmbarrier.init.b64 [%rd1], 1;\nret;\n}\n"
    ".visible .entry cp_oob(.param .u64 p)\n{\n.reg .b64 %rd<2>;\n"
    "ld.param.u64 %rd1, [p];\ncp.async.ca.shared.global [bar], [%rd1], 8;\nret;\n}\n"
    ".visible .entry bulk_odd(.param .u64 p)\n{\n.reg .b64 %rd<2>;\n"
    "ld.param.u64 %rd1, [p];\nmbarrier.init.shared.b64 [bar], 1;\n"
    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [bar], [%rd1], 24, "
    "[bar];\nret;\n}\n";

static void test_mbar_errors(void **state) {
  (void)state;
  env e;
  env_text(&e, mbar_err_ptx, sizeof mbar_err_ptx - 1);
  static const struct {
    const char *k, *needle;
  } cases[] = {{"uninit", "used before mbarrier.init"},
               {"over", "more arrivals than the phase has pending"},
               {"nocomplete", ".noComplete arrive would complete"},
               {"generic_global", "not in shared memory"},
               {"cp_oob", "CUDA_ERROR_ILLEGAL_ADDRESS"},
               {"bulk_odd", "size not a multiple of 16"}};
  uint64_t p = 8; /* nowhere */
  void *args[] = {&p};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gpulease_status st = run_k(&e, cases[i].k, ((lcfg){.block = 1}), args);
    if (st != GPULEASE_LAUNCH_FAILED || !strstr(e.err, cases[i].needle) || !strstr(e.err, "line "))
      fail_msg("%s: want '%s', got %d: %s", cases[i].k, cases[i].needle, st, e.err);
  }
  env_close(&e);
}

/* ---- sm_90a: bulk copies, clusters ---------------------------------------- */

static void test_bulk_stream(void **state) {
  env e;
  env_open(&e, state);
  enum { NC = 5 };
  static int in[NC * 256], out[NC * 256];
  for (int i = 0; i < NC * 256; i++)
    in[i] = rnd() % 1000000;
  uint64_t din = dput(&e, in, sizeof in), dout = dput(&e, NULL, sizeof out);
  int nc = NC;
  void *args[] = {&din, &dout, &nc};
  RUN_OK(&e, "bulk_stream", ((lcfg){.block = 128}), args);
  dget(&e, dout, out, sizeof out);
  for (int c = 0; c < NC; c++)
    for (int t = 0; t < 128; t++) {
      assert_int_equal(out[c * 256 + t], in[c * 256 + 255 - t] * 2 + c);
      assert_int_equal(out[c * 256 + t + 128], in[c * 256 + 127 - t] - c);
    }
  env_close(&e);
}

static void test_cluster_mbar(void **state) {
  env e;
  env_open(&e, state);
  enum { NB = 4 };
  int in[NB * 64], out[NB * 128];
  for (int i = 0; i < NB * 64; i++)
    in[i] = rnd() % 100000;
  uint64_t din = dput(&e, in, sizeof in), dout = dput(&e, NULL, sizeof out);
  void *args[] = {&din, &dout};
  RUN_OK(&e, "cluster_mbar", ((lcfg){.grid = NB, .block = 64, .cluster = 2}), args);
  dget(&e, dout, out, sizeof out);
  for (int b = 0; b < NB; b++) {
    int peer = b ^ 1;
    for (int t = 0; t < 64; t++) {
      assert_int_equal(out[b * 128 + t], in[peer * 64 + t] * 7);
      assert_int_equal(out[b * 128 + 64 + t], (b & 1) ? -1 : in[peer * 64 + t] + 1000);
    }
  }
  env_close(&e);
}

static void test_cluster_reduce(void **state) {
  env e;
  env_open(&e, state);
  enum { NB = 4 };
  int in[NB * 64], out[NB * 64];
  for (int i = 0; i < NB * 64; i++)
    in[i] = rnd() % 100000;
  uint64_t din = dput(&e, in, sizeof in), dout = dput(&e, NULL, sizeof out);
  void *args[] = {&din, &dout};
  RUN_OK(&e, "cluster_reduce", ((lcfg){.grid = NB, .block = 64, .cluster = 2}), args);
  dget(&e, dout, out, sizeof out);
  for (int b = 0; b < NB; b++)
    for (int t = 0; t < 64; t++)
      assert_int_equal(out[b * 64 + t], in[b * 64 + t] + in[(b ^ 1) * 64 + t] * 3);
  env_close(&e);
}

static void test_st_red_async(void **state) {
  env e;
  env_open(&e, state);
  enum { NB = 4 };
  int in[NB * 64], out[NB * 160];
  for (int i = 0; i < NB * 64; i++)
    in[i] = rnd() % 200000 - 100000;
  uint64_t din = dput(&e, in, sizeof in), dout = dput(&e, NULL, sizeof out);
  void *args[] = {&din, &dout};
  RUN_OK(&e, "st_red_async", ((lcfg){.grid = NB, .block = 64, .cluster = 2}), args);
  dget(&e, dout, out, sizeof out);
  for (int b = 0; b < NB; b++) {
    const int *o = out + b * 160, *pin = in + (b ^ 1) * 64;
    int prank = (b ^ 1) & 1, mx = INT32_MIN;
    for (int t = 0; t < 64; t++) {
      assert_int_equal(o[t], pin[t] * 5);
      int q = t / 4, k = t % 4;
      assert_int_equal(o[64 + t], k == 0 ? q + prank : q + k);
      mx = pin[t] > mx ? pin[t] : mx;
    }
    for (int c = 0; c < 8; c++) { /* threads c, c+8, ..., c+56 add t + 1 */
      int want = 0;
      for (int t = c; t < 64; t += 8)
        want += t + 1;
      assert_int_equal(o[128 + c], want);
    }
    assert_int_equal(o[136], mx);
  }
  env_close(&e);
}

/* ---- sm_90a: tensor maps -------------------------------------------------- */

static void test_tma_load(void **state) {
  env e;
  env_open(&e, state);
  enum { W = 100, H = 40 }; /* a W x H float matrix, rows padded to 112 */
  static float g[H * 112];
  for (int i = 0; i < H * 112; i++)
    g[i] = (float)(rnd() % 100000);
  uint64_t dg = dput(&e, g, sizeof g);
  uint64_t dout = dput(&e, NULL, 16 * 32 * 4);
  static const struct {
    int x, y;
    uint32_t swz;
  } cases[] = {{0, 0, 0}, {8, 3, 0}, {80, 30, 0}, {-4, -2, 0}, {88, 35, 3},
               {4, 1, 3}, {-28, 39, 3}, {200, 0, 0}, {16, 8, 2}, {24, 5, 1}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    _Alignas(64) uint8_t tmap[GL_EMU_TMAP_BYTES];
    uint64_t dims[2] = {W, H}, strides[1] = {112 * 4};
    uint32_t box[2] = {cases[k].swz == 1 ? 8 : cases[k].swz == 2 ? 16 : 32, 16},
             es[2] = {1, 1};
    char err[256];
    gpulease_status st = gl_emu_tensormap_encode_tiled(tmap, 7 /* FLOAT32 */, 2, dg, dims,
                                                      strides, box, es, 0, cases[k].swz, 0, 0,
                                                      err, sizeof err);
    if (st != GPULEASE_OK)
      fail_msg("encode: %d %s", st, err);
    int x = cases[k].x, y = cases[k].y, bytes = (int)(box[0] * 16 * 4);
    void *args[] = {tmap, &dout, &x, &y, &bytes};
    RUN_OK(&e, "tma_load_2d", ((lcfg){.block = 128}), args);
    float out[16 * 32];
    dget(&e, dout, out, sizeof out);
    float want[16 * 32];
    for (int i = 0; i < 16 * 32; i++)
      want[i] = -7.0f; /* beyond a narrow box: untouched */
    uint32_t bw = box[0];
    for (uint32_t r = 0; r < 16; r++)
      for (uint32_t c = 0; c < bw; c++) {
        uint32_t off = (r * bw + c) * 4;
        static const uint32_t mask[4] = {0, 1, 3, 7};
        off ^= ((off >> 7) & mask[cases[k].swz]) << 4; /* the tile is 1024-aligned */
        int gx = x + (int)c, gy = y + (int)r;
        int in = gx >= 0 && gx < W && gy >= 0 && gy < H;
        want[off / 4] = in ? g[gy * 112 + gx] : 0.0f;
      }
    for (int i = 0; i < 16 * 32; i++)
      if (out[i] != want[i])
        fail_msg("case %zu: word %d is %g, want %g", k, i, out[i], want[i]);
  }
  env_close(&e);
}

static void test_tma_store(void **state) {
  env e;
  env_open(&e, state);
  enum { X = 20, Y = 10, Z = 6, XP = 24 }; /* ints; rows padded to XP */
  static int g[Z * Y * XP];
  uint64_t dg = dput(&e, NULL, sizeof g);
  static const int cases[][3] = {{0, 0, 0}, {4, 3, 1}, {16, 6, 4}, {12, 2, 2}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    for (int i = 0; i < Z * Y * XP; i++)
      g[i] = -1 - i;
    uint8_t *p = gl_emu_device_ptr(e.dev, dg, sizeof g);
    memcpy(p, g, sizeof g);
    _Alignas(64) uint8_t tmap[GL_EMU_TMAP_BYTES];
    uint64_t dims[3] = {X, Y, Z}, strides[2] = {XP * 4, XP * 4 * Y};
    uint32_t box[3] = {8, 8, 4}, es[3] = {1, 1, 1};
    assert_int_equal(gl_emu_tensormap_encode_tiled(tmap, 3 /* INT32 */, 3, dg, dims, strides,
                                                   box, es, 0, 0, 0, 0, NULL, 0),
                     GPULEASE_OK);
    int x = cases[k][0], y = cases[k][1], z = cases[k][2], base = (int)k * 100000;
    void *args[] = {tmap, &x, &y, &z, &base};
    RUN_OK(&e, "tma_store_3d", ((lcfg){.block = 64}), args);
    int out[Z * Y * XP];
    dget(&e, dg, out, sizeof out);
    for (int zz = 0; zz < Z; zz++)
      for (int yy = 0; yy < Y; yy++)
        for (int xx = 0; xx < XP; xx++) {
          int i = (zz * Y + yy) * XP + xx;
          int bx = xx - x, by = yy - y, bz = zz - z;
          int inbox = xx < X && bx >= 0 && bx < 8 && by >= 0 && by < 8 && bz >= 0 && bz < 4;
          int want = inbox ? ((bz * 8 + by) * 8 + bx) * 10 + base : g[i];
          if (out[i] != want)
            fail_msg("case %zu: (%d,%d,%d) is %d, want %d", k, xx, yy, zz, out[i], want);
        }
  }
  /* dimension 0 of 18 ints (72 bytes): the store writes x 16..19, the
   * whole last 16 bytes (as an H200), and nothing from x = 20 */
  {
    for (int i = 0; i < Z * Y * XP; i++)
      g[i] = -1 - i;
    memcpy(gl_emu_device_ptr(e.dev, dg, sizeof g), g, sizeof g);
    _Alignas(64) uint8_t tmap[GL_EMU_TMAP_BYTES];
    uint64_t dims[3] = {18, Y, Z}, strides[2] = {XP * 4, XP * 4 * Y};
    uint32_t box[3] = {8, 8, 4}, es[3] = {1, 1, 1};
    assert_int_equal(gl_emu_tensormap_encode_tiled(tmap, 3, 3, dg, dims, strides, box, es, 0, 0,
                                                   0, 0, NULL, 0),
                     GPULEASE_OK);
    int x = 16, y = 0, z = 0, base = 5;
    void *args[] = {tmap, &x, &y, &z, &base};
    RUN_OK(&e, "tma_store_3d", ((lcfg){.block = 64}), args);
    int out[Z * Y * XP];
    dget(&e, dg, out, sizeof out);
    for (int xx = 16; xx < XP; xx++) /* row (y 0, z 0) */
      assert_int_equal(out[xx], xx < 20 ? (xx - 16) * 10 + base : g[xx]);
    /* a negative coordinate traps (as an H200), even on a 16-byte boundary */
    x = -4;
    gpulease_status st = run_k(&e, "tma_store_3d", ((lcfg){.block = 64}), args);
    assert_int_equal(st, GPULEASE_LAUNCH_FAILED);
    assert_non_null(strstr(e.err, "negative coordinate"));
  }
  env_close(&e);
}

static void test_tma_5d(void **state) {
  env e;
  env_open(&e, state);
  enum { D0 = 8, D1 = 3, D2 = 4, D3 = 3, D4 = 5 }; /* ints, dimension 0 fastest */
  static int g[D4][D3][D2][D1][D0];
  int *flat = &g[0][0][0][0][0];
  for (int i = 0; i < D0 * D1 * D2 * D3 * D4; i++)
    flat[i] = rnd() % 1000000 + 1;
  uint64_t dg = dput(&e, g, sizeof g), dout = dput(&e, NULL, 64 * 4);
  _Alignas(64) uint8_t tmap[GL_EMU_TMAP_BYTES];
  uint64_t dims[5] = {D0, D1, D2, D3, D4};
  uint64_t strides[4] = {D0 * 4, D0 * D1 * 4, D0 * D1 * D2 * 4, D0 * D1 * D2 * D3 * 4};
  uint32_t box[5] = {4, 2, 2, 2, 2}, es[5] = {1, 1, 1, 1, 1};
  assert_int_equal(gl_emu_tensormap_encode_tiled(tmap, 3, 5, dg, dims, strides, box, es, 0, 0,
                                                 0, 0, NULL, 0),
                   GPULEASE_OK);
  static const int cs[][5] = {{0, 0, 0, 0, 0}, {4, 1, 2, 1, 3}, {8, 2, 3, 2, 4}, {-4, -1, 1, 0, 2}};
  for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
    int c[5];
    memcpy(c, cs[k], sizeof c);
    void *args[] = {tmap, &dout, &c[0], &c[1], &c[2], &c[3], &c[4]};
    RUN_OK(&e, "tma_load_5d", ((lcfg){.block = 32}), args);
    int out[64];
    dget(&e, dout, out, sizeof out);
    for (int i = 0; i < 64; i++) {
      int k0 = i % 4, k1 = (i / 4) % 2, k2 = (i / 8) % 2, k3 = (i / 16) % 2, k4 = i / 32;
      int x0 = c[0] + k0, x1 = c[1] + k1, x2 = c[2] + k2, x3 = c[3] + k3, x4 = c[4] + k4;
      int in = x0 >= 0 && x0 < D0 && x1 >= 0 && x1 < D1 && x2 >= 0 && x2 < D2 && x3 >= 0 &&
               x3 < D3 && x4 >= 0 && x4 < D4;
      assert_int_equal(out[i], in ? g[x4][x3][x2][x1][x0] : 0);
    }
  }
  env_close(&e);
}

static void test_tma_multicast(void **state) {
  env e;
  env_open(&e, state);
  enum { W = 64, H = 32, NB = 4 };
  static float g[H * W], src[128];
  for (int i = 0; i < H * W; i++)
    g[i] = (float)(rnd() % 100000);
  for (int i = 0; i < 128; i++)
    src[i] = (float)(rnd() % 1000);
  uint64_t dg = dput(&e, g, sizeof g), dsrc = dput(&e, src, sizeof src);
  uint64_t dout = dput(&e, NULL, NB * 1024 * 4);
  _Alignas(64) uint8_t tmap[GL_EMU_TMAP_BYTES];
  uint64_t dims[2] = {W, H}, strides[1] = {W * 4};
  uint32_t box[2] = {32, 16}, es[2] = {1, 1};
  assert_int_equal(gl_emu_tensormap_encode_tiled(tmap, 7, 2, dg, dims, strides, box, es, 0, 3,
                                                 0, 0, NULL, 0),
                   GPULEASE_OK);
  int x = 40, y = 20;
  void *args[] = {tmap, &dsrc, &dout, &x, &y};
  RUN_OK(&e, "tma_multicast", ((lcfg){.grid = NB, .block = 32, .cluster = 2}), args);
  static float out[NB * 1024];
  dget(&e, dout, out, sizeof out);
  for (int b = 0; b < NB; b++) {
    for (uint32_t r = 0; r < 16; r++)
      for (uint32_t c = 0; c < 32; c++) {
        uint32_t off = (r * 32 + c) * 4;
        off ^= ((off >> 7) & 7) << 4;
        int gx = x + (int)c, gy = y + (int)r;
        float want = gx < W && gy < H ? g[gy * W + gx] : 0.0f;
        assert_true(out[b * 1024 + off / 4] == want);
      }
    for (int i = 0; i < 128; i++)
      assert_true(out[b * 1024 + 512 + i] == src[i]);
  }
  env_close(&e);
}

static void test_bulk_reduce(void **state) {
  env e;
  env_open(&e, state);
  enum { NB = 8 };
  static float fin[NB * 128];
  static int iin[NB * 64];
  static unsigned long long bin[NB * 32];
  for (int i = 0; i < NB * 128; i++)
    fin[i] = (float)(rnd() % 64); /* small integers: every order sums exactly */
  for (int i = 0; i < NB * 64; i++)
    iin[i] = rnd() - (1 << 30);
  for (int i = 0; i < NB * 32; i++)
    bin[i] = ((unsigned long long)(uint32_t)rnd() << 32 | (uint32_t)rnd()) | 0x0101010101010101ull;
  float f0[128];
  int i0[64];
  unsigned long long b0[32];
  for (int i = 0; i < 128; i++)
    f0[i] = (float)i;
  for (int i = 0; i < 64; i++)
    i0[i] = rnd();
  for (int i = 0; i < 32; i++)
    b0[i] = ~0ull;
  uint64_t dfin = dput(&e, fin, sizeof fin), diin = dput(&e, iin, sizeof iin),
           dbin = dput(&e, bin, sizeof bin);
  uint64_t dfs = dput(&e, f0, sizeof f0), dim = dput(&e, i0, sizeof i0),
           dba = dput(&e, b0, sizeof b0);
  void *args[] = {&dfin, &diin, &dbin, &dfs, &dim, &dba};
  lcfg c = {.grid = NB, .block = 128, .threads = 4}; /* blocks reduce concurrently */
  RUN_OK(&e, "bulk_reduce", c, args);
  float fs[128];
  int im[64];
  unsigned long long ba[32];
  dget(&e, dfs, fs, sizeof fs);
  dget(&e, dim, im, sizeof im);
  dget(&e, dba, ba, sizeof ba);
  for (int i = 0; i < 128; i++) {
    float want = f0[i];
    for (int k = 0; k < NB; k++)
      want += fin[k * 128 + i];
    assert_true(fs[i] == want);
  }
  for (int i = 0; i < 64; i++) {
    int want = i0[i];
    for (int k = 0; k < NB; k++)
      want = iin[k * 64 + i] < want ? iin[k * 64 + i] : want;
    assert_int_equal(im[i], want);
  }
  for (int i = 0; i < 32; i++) {
    unsigned long long want = b0[i];
    for (int k = 0; k < NB; k++)
      want &= bin[k * 32 + i];
    assert_int_equal(ba[i], want);
  }
  env_close(&e);
}

static void test_tma_reduce(void **state) {
  env e;
  env_open(&e, state);
  enum { W = 26, H = 12, NB = 6 };
  static int g[H * 32];
  for (int i = 0; i < H * 32; i++)
    g[i] = rnd() % 1000;
  uint64_t dg = dput(&e, g, sizeof g);
  _Alignas(64) uint8_t tmap[GL_EMU_TMAP_BYTES];
  uint64_t dims[2] = {W, H}, strides[1] = {32 * 4};
  uint32_t box[2] = {8, 8}, es[2] = {1, 1};
  assert_int_equal(gl_emu_tensormap_encode_tiled(tmap, 3, 2, dg, dims, strides, box, es, 0, 0,
                                                 0, 0, NULL, 0),
                   GPULEASE_OK);
  int x0 = 0, y0 = 7;
  void *args[] = {tmap, &x0, &y0};
  RUN_OK(&e, "tma_reduce_2d", ((lcfg){.grid = NB, .block = 64, .threads = 3}), args);
  int out[H * 32];
  dget(&e, dg, out, sizeof out);
  for (int y = 0; y < H; y++)
    for (int x = 0; x < 32; x++) {
      int want = g[y * 32 + x];
      for (int blk = 0; blk < NB; blk++) {
        int bx = x - (x0 + 4 * blk), by = y - y0;
        /* written up to x 27: the last 16 bytes of W = 26 ints (as an H200) */
        if (x < 28 && bx >= 0 && bx < 8 && by >= 0 && by < 8)
          want += blk * 1000 + by * 8 + bx;
      }
      assert_int_equal(out[y * 32 + x], want);
    }
  env_close(&e);
}

/* The encoder's checks, and a map the copy refuses. */
static void test_tensormap_encode(void **state) {
  (void)state;
  _Alignas(64) uint8_t tmap[GL_EMU_TMAP_BYTES];
  uint64_t dims[2] = {64, 64}, strides[1] = {256};
  uint32_t box[2] = {32, 8}, es[2] = {1, 1};
  char err[256];
  assert_int_equal(gl_emu_tensormap_encode_tiled(tmap, 7, 2, 0x1000, dims, strides, box, es, 0,
                                                 3, 0, 1, err, sizeof err),
                   GPULEASE_OK);
  uint32_t magic;
  memcpy(&magic, tmap, 4);
  assert_int_equal(magic, GL_EMU_TMAP_MAGIC);
  assert_int_equal(tmap[5], 2);
  assert_int_equal(tmap[6], 3);
  assert_int_equal(tmap[7], 4);
  static const struct {
    uint32_t type, rank, swz, oob, es0;
    uint64_t addr, stride;
    uint32_t box0;
    gpulease_status st;
    const char *needle;
  } bad[] = {{13, 2, 0, 0, 1, 0x1000, 256, 32, GPULEASE_INVALID_ARGUMENT, "data type"},
             {7, 6, 0, 0, 1, 0x1000, 256, 32, GPULEASE_INVALID_ARGUMENT, "rank"},
             {7, 2, 0, 0, 1, 0x1008, 256, 32, GPULEASE_INVALID_ARGUMENT, "aligned"},
             {7, 2, 0, 0, 1, 0x1000, 100, 32, GPULEASE_INVALID_ARGUMENT, "stride"},
             {7, 2, 0, 0, 1, 0x1000, 256, 3, GPULEASE_INVALID_ARGUMENT, "multiple of 16"},
             {7, 2, 3, 0, 1, 0x1000, 256, 64, GPULEASE_INVALID_ARGUMENT, "swizzle span"},
             {3, 2, 0, 1, 1, 0x1000, 256, 32, GPULEASE_INVALID_ARGUMENT, "OOB fill"},
             {7, 2, 0, 0, 2, 0x1000, 256, 32, GPULEASE_UNSUPPORTED, "element stride"},
             {7, 2, 4, 0, 1, 0x1000, 256, 32, GPULEASE_INVALID_ARGUMENT, "swizzle"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint64_t st1[1] = {bad[i].stride};
    uint32_t b2[2] = {bad[i].box0, 8}, e2[2] = {bad[i].es0, 1};
    err[0] = 0;
    gpulease_status st = gl_emu_tensormap_encode_tiled(tmap, bad[i].type, bad[i].rank,
                                                      bad[i].addr, dims, st1, b2, e2, 0,
                                                      bad[i].swz, 0, bad[i].oob, err, sizeof err);
    if (st != bad[i].st || !strstr(err, bad[i].needle))
      fail_msg("case %zu: want %d '%s', got %d '%s'", i, bad[i].st, bad[i].needle, st, err);
  }
  assert_int_equal(gl_emu_tensormap_encode_tiled(tmap, 7, 2, 0x1000, dims, strides, box, es, 1,
                                                 0, 0, 0, NULL, 0),
                   GPULEASE_UNSUPPORTED);
}

static void test_tma_bad_map(void **state) {
  env e;
  env_open(&e, state);
  _Alignas(64) uint8_t tmap[GL_EMU_TMAP_BYTES];
  memset(tmap, 0x5a, sizeof tmap); /* not a map */
  uint64_t dout = dput(&e, NULL, 4096);
  int x = 0, y = 0, bytes = 2048;
  void *args[] = {tmap, &dout, &x, &y, &bytes};
  gpulease_status st = run_k(&e, "tma_load_2d", ((lcfg){.block = 32}), args);
  assert_int_equal(st, GPULEASE_LAUNCH_FAILED);
  assert_non_null(strstr(e.err, "names no tensor map"));
  /* a 3-d map in a 2-d copy */
  uint64_t dims[3] = {64, 64, 2}, strides[2] = {256, 256 * 64};
  uint32_t box[3] = {32, 16, 1}, es[3] = {1, 1, 1};
  assert_int_equal(gl_emu_tensormap_encode_tiled(tmap, 7, 3, GL_EMU_REGION_BASE, dims, strides,
                                                 box, es, 0, 0, 0, 0, NULL, 0),
                   GPULEASE_OK);
  st = run_k(&e, "tma_load_2d", ((lcfg){.block = 32}), args);
  assert_int_equal(st, GPULEASE_LAUNCH_FAILED);
  assert_non_null(strstr(e.err, "rank of the tensor map"));
  /* a box whose first coordinate is not on a 16-byte boundary (an H200
   * raises an illegal instruction), negative or not */
  uint64_t d2[2] = {64, 64}, s2[1] = {256};
  uint32_t b2[2] = {32, 16}, e2[2] = {1, 1};
  assert_int_equal(gl_emu_tensormap_encode_tiled(tmap, 7, 2, GL_EMU_REGION_BASE, d2, s2, b2, e2,
                                                 0, 3, 0, 0, NULL, 0),
                   GPULEASE_OK);
  static const int xs[] = {-3, 5, 62};
  for (int i = 0; i < 3; i++) {
    x = xs[i];
    st = run_k(&e, "tma_load_2d", ((lcfg){.block = 32}), args);
    assert_int_equal(st, GPULEASE_LAUNCH_FAILED);
    assert_non_null(strstr(e.err, "CUDA_ERROR_ILLEGAL_INSTRUCTION"));
    assert_non_null(strstr(e.err, "coordinate 0 is not a multiple of 16 bytes"));
  }
  x = -4; /* aligned: runs, the box partly outside */
  RUN_OK(&e, "tma_load_2d", ((lcfg){.block = 32}), args);
  env_close(&e);
}

/* ---- Parser ------------------------------------------------------------------ */

static gpulease_status parse_body(const char *body, gl_ptx_module **m, char *err, size_t n) {
  char text[4096];
  snprintf(text, sizeof text,
           ".version 8.0\n.target sm_90a\n.address_size 64\n"
           ".shared .align 16 .b8 sm[256];\n"
           ".visible .entry k(.param .u64 pp)\n{\n"
           ".reg .b32 %%r<8>; .reg .b64 %%rd<8>; .reg .pred %%p<4>;\n%s\nret;\n}\n",
           body);
  *m = NULL;
  return gl_ptx_parse(text, strlen(text), GL_EMU_MODULE_DATA_BASE, m, err, n);
}

static void test_parse_forms(void **state) {
  (void)state;
  static const char *const ok[] = {
      "cp.async.ca.shared.global [%r1], [%rd1], 4;",
      "cp.async.ca.shared::cta.global.L2::64B [%r1+16], [%rd1+-8], 8, %r2;",
      "cp.async.cg.shared.global.L2::cache_hint.L2::256B [sm], [%rd1], 16, %rd2;",
      "cp.async.ca.shared.global [sm+4], [%rd1], 4, !%p1;",
      "cp.async.commit_group;", "cp.async.wait_group 3;", "cp.async.wait_all;",
      "cp.async.mbarrier.arrive.b64 [%rd1];",
      "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [sm];",
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], %r2, "
      "[%r3];",
      "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes.L2::cache_hint [%r1], "
      "[%rd1], 64, [%r3], %rd2;",
      "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%r1], [%r2], 32, "
      "[%r3];",
      "cp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r1], 32;",
      "cp.async.bulk.commit_group;", "cp.async.bulk.wait_group 0;",
      "cp.async.bulk.wait_group.read 1;", "cp.async.bulk.prefetch.L2.global [%rd1], 64;",
      "mbarrier.init.shared.b64 [sm], 7;", "mbarrier.init.b64 [%rd1], %r1;",
      "mbarrier.inval.shared::cta.b64 [%r1];",
      "mbarrier.arrive.release.cta.shared::cta.b64 %rd1, [%r1], 2;",
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r1];",
      "mbarrier.arrive.noComplete.shared.b64 %rd1, [%r1], %r2;",
      "mbarrier.arrive_drop.noComplete.shared.b64 %rd1, [%r1], 1;",
      "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], 128;",
      "mbarrier.arrive_drop.expect_tx.release.cta.shared::cta.b64 %rd1, [%r1], %r2, 2;",
      "mbarrier.expect_tx.relaxed.cluster.shared::cluster.b64 [%r1], 16;",
      "mbarrier.complete_tx.shared.b64 [%r1], %r2;",
      "mbarrier.test_wait.shared.b64 %p1, [%r1], %rd1;",
      "mbarrier.test_wait.parity.acquire.cta.shared::cta.b64 %p1, [%r1], %r2;",
      "mbarrier.try_wait.shared::cta.b64 %p1, [%r1], %rd1, 100;",
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %p2, [sm+8], 1;",
      "mbarrier.pending_count.b64 %r1, %rd1;",
      "redux.sync.add.u32 %r1, %r2, 0xffffffff;", "redux.sync.min.s32 %r1, %r2, %r3;",
      "redux.sync.xor.b32 %r1, %r2, -1;", "redux.sync.max.abs.NaN.f32 %r1, %r2, %r3;",
      "elect.sync %r1|%p1, 0xffffffff;", "elect.sync _|%p1, %r2;",
      "setmaxnreg.inc.sync.aligned.u32 240;", "setmaxnreg.dec.sync.aligned.u32 24;",
      "griddepcontrol.launch_dependents;", "griddepcontrol.wait;",
      "fence.proxy.async;", "fence.proxy.async.shared::cta;", "fence.proxy.async.global;",
      "fence.proxy.alias;", "fence.mbarrier_init.release.cluster;",
      "fence.proxy.tensormap::generic.release.gpu;",
      "fence.proxy.tensormap::generic.acquire.gpu [%rd1], 128;",
      "fence.acq_rel.cluster;", "@%p1 cp.async.wait_all;",
      "cp.async.bulk.tensor.1d.shared::cta.global.mbarrier::complete_tx::bytes [%r1], [%rd1, "
      "{%r2}], [%r3];",
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".L2::cache_hint [%r1], [%rd1, {%r2, %r3, %r4, %r5, %r6}], [%r3], %rd2;",
      "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%rd1, {%r2, %r3, %r4, %r5}], "
      "[%r1];",
      "cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%rd1, {%r1, %r2, %r3}];",
      "prefetch.tensormap [%rd1];",
      "st.async.b64 [%r1], %rd1, [%r2];",
      "st.async.weak.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%r1], {%r2, "
      "%r3}, [%r4];",
      "red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.inc.u32 [%r1], "
      "%r2, [%r3];",
      "red.async.add.u64 [%r1], %rd1, [%r3];",
      "createpolicy.fractional.L2::evict_last.b64 %rd1, 1.0;",
      "createpolicy.fractional.L2::evict_last.L2::evict_unchanged.b64 %rd1, [%rd2], 128, 256;",
      "createpolicy.fractional.L2::evict_first.b64 %rd1, 0f3F000000;",
      "createpolicy.cvt.L2.b64 %rd1, %rd2;",
      "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd1], [%r1], 32;",
      "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.noftz.bf16 [%rd1], [%r1], %r2;",
      "cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes.inc.u32 "
      "[%r1], [%r2], 64, [%r3];",
      "cp.reduce.async.bulk.tensor.3d.global.shared::cta.max.tile.bulk_group [%rd1, {%r1, %r2, "
      "%r3}], [%r4];",
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
      "[%r1], [%rd1], 32, [%r2], 3;",
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster.L2::cache_hint [%r1], [%rd1, {%r2, %r3}], [%r4], %r5, %rd2;"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    gl_ptx_module *m;
    char err[512];
    gpulease_status st = parse_body(ok[i], &m, err, sizeof err);
    if (st != GPULEASE_OK)
      fail_msg("'%s': %d %s", ok[i], st, err);
    gl_ptx_module_free(m);
  }
  static const struct {
    const char *body, *needle;
    gpulease_status st;
  } badf[] = {
      {"cp.async.ca.shared.global [%r1], [%rd1], 12;", "cp-size must be 4, 8 or 16",
       GPULEASE_LOAD_FAILED},
      {"cp.async.cg.shared.global [%r1], [%rd1], 8;", "16 bytes only", GPULEASE_LOAD_FAILED},
      {"cp.async.ca.shared.global [%r1], [%rd1], 8, 9;", "src-size", GPULEASE_LOAD_FAILED},
      {"cp.async.ca.global.shared [%r1], [%rd1], 8;", "missing .shared", GPULEASE_LOAD_FAILED},
      {"cp.async.ca.shared.global [%r1], %rd1, 8;", "expected an [address]",
       GPULEASE_LOAD_FAILED},
      {"cp.async.wait_group;", "wrong number of operands", GPULEASE_LOAD_FAILED},
      {"cp.async.commit_group.foo;", "unexpected modifier '.foo'", GPULEASE_LOAD_FAILED},
      {"cp.async.bulk.global.shared::cta [%rd1], [%r1], 32;", "missing .bulk_group",
       GPULEASE_LOAD_FAILED},
      {"cp.async.bulk.shared::cluster.global [%r1], [%rd1], 32, [%r2];",
       "missing .mbarrier::complete_tx::bytes", GPULEASE_LOAD_FAILED},
      {"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 8, "
       "[%r2];",
       "size must be", GPULEASE_LOAD_FAILED},
      {"mbarrier.init.shared.b64 [%r1], 0;", "count must be", GPULEASE_LOAD_FAILED},
      {"mbarrier.init.shared.b32 [%r1], 1;", "unexpected modifier '.b32'", GPULEASE_LOAD_FAILED},
      {"mbarrier.arrive.shared::cluster.b64 %rd1, [%r1];", "returns no state",
       GPULEASE_LOAD_FAILED},
      {"mbarrier.try_wait.shared::cluster.b64 %p1, [%r1], %rd1;", "not allowed",
       GPULEASE_LOAD_FAILED},
      {"mbarrier.test_wait.shared.b64 %r1, [%r1], %rd1;", "must be a .pred",
       GPULEASE_LOAD_FAILED},
      {"mbarrier.arrive.noComplete.shared.b64 %rd1, [%r1];", "wrong number of operands",
       GPULEASE_LOAD_FAILED},
      {"mbarrier.frob.shared.b64 [%r1];", "unknown mbarrier operation", GPULEASE_LOAD_FAILED},
      {"redux.sync.add.b32 %r1, %r2, -1;", "operation and type do not match",
       GPULEASE_LOAD_FAILED},
      {"redux.sync.add.f32 %r1, %r2, -1;", "operation and type do not match",
       GPULEASE_LOAD_FAILED},
      {"redux.add.u32 %r1, %r2, -1;", "missing .sync", GPULEASE_LOAD_FAILED},
      {"elect.sync %r1, -1;", "expected d|p", GPULEASE_LOAD_FAILED},
      {"setmaxnreg.inc.sync.aligned.u32 100;", "multiple of 8", GPULEASE_LOAD_FAILED},
      {"setmaxnreg.inc.sync.aligned.u32 %r1;", "integer constant", GPULEASE_LOAD_FAILED},
      {"griddepcontrol.go;", "unexpected modifier '.go'", GPULEASE_LOAD_FAILED},
      {"st.async.v4.b64 [%r1], {%rd1, %rd2, %rd3, %rd4}, [%r2];", ".v4 needs a 32-bit type",
       GPULEASE_LOAD_FAILED},
      {"st.async.v2.b32 [%r1], %r2, [%r3];", "vector size does not match",
       GPULEASE_LOAD_FAILED},
      {"red.async.and.u32 [%r1], %r2, [%r3];", "operation and type do not match",
       GPULEASE_LOAD_FAILED},
      {"st.async.b32 [%r1], %r2;", "wrong number of operands", GPULEASE_LOAD_FAILED},
      {"createpolicy.fractional.L2::evict_last.b64 %rd1|%p2, 1.0;", "unexpected d|p",
       GPULEASE_LOAD_FAILED},
      {"createpolicy.L2::evict_last.b64 %rd1, 1.0;", "missing .fractional/.cvt",
       GPULEASE_LOAD_FAILED},
      {"cp.async.ca.shared.global [%r1], [%rd1], 4, 1.5;", "src-size must be an integer",
       GPULEASE_LOAD_FAILED},
      {"fence.proxy.weird;", "unknown proxy kind", GPULEASE_LOAD_FAILED},
      {"cp.async.bulk.tensor.2d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes "
       "[%r1], [%rd1, {%r2, %r3}], [%r4], {%rs1};",
       "other than .tile", GPULEASE_UNSUPPORTED},
      {"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
       "[%r1], [%rd1, {%r2}], [%r4];",
       "do not match the dimension", GPULEASE_LOAD_FAILED},
      {"cp.async.bulk.tensor.2d.global.shared::cta.tile [%rd1, {%r2, %r3}], [%r4];",
       "missing .bulk_group", GPULEASE_LOAD_FAILED},
      {"cp.async.ca.shared.global [%r1], [%rd1, {%r2}], 4;", "unexpected tensor coordinates",
       GPULEASE_LOAD_FAILED},
      {"cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes.multicast::cluster "
       "[%r1], [%rd1], 32, [%r2], %r3;",
       "needs .shared::cluster", GPULEASE_LOAD_FAILED},
      {"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
       "[%r1], [%rd1], 32, [%r2];",
       "wrong number of operands", GPULEASE_LOAD_FAILED},
      {"cp.reduce.async.bulk.global.shared::cta.bulk_group.and.u32 [%rd1], [%r1], 32;",
       "operation and type do not match", GPULEASE_LOAD_FAILED},
      {"cp.reduce.async.bulk.global.shared::cta.bulk_group.min.f16 [%rd1], [%r1], 32;",
       "operation and type do not match", GPULEASE_LOAD_FAILED},
      {"cp.reduce.async.bulk.global.shared::cta.add.u32 [%rd1], [%r1], 32;",
       "expected .global.shared::cta.bulk_group", GPULEASE_LOAD_FAILED},
      {"cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.im2col_no_offs.bulk_group "
       "[%rd1, {%r2, %r3}], [%r1];",
       "other than .tile", GPULEASE_UNSUPPORTED},
  };
  for (size_t i = 0; i < sizeof badf / sizeof badf[0]; i++) {
    gl_ptx_module *m;
    char err[512] = "";
    gpulease_status st = parse_body(badf[i].body, &m, err, sizeof err);
    if (st != badf[i].st || !strstr(err, badf[i].needle) || !strstr(err, "line 8"))
      fail_msg("'%s': want %d '%s', got %d %s", badf[i].body, badf[i].st, badf[i].needle, st,
               err);
    gl_ptx_module_free(m);
  }
}

/* Decoded fields of a few forms (ptx_ir.h's contract). */
static void test_parse_fields(void **state) {
  (void)state;
  gl_ptx_module *m;
  char err[512];
  assert_int_equal(parse_body("cp.async.ca.shared.global [%r1+16], [%rd1], 8, %r2;\n"
                              "mbarrier.arrive.expect_tx.shared::cta.b64 %rd2, [sm+8], 64;\n"
                              "mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], 1, 50;\n"
                              "redux.sync.max.abs.f32 %r3, %r4, %r5;\n"
                              "elect.sync _|%p2, 0xffffffff;\n"
                              "cp.async.wait_group 1;",
                              &m, err, sizeof err),
                   GPULEASE_OK);
  const gl_ptx_insn *in = m->insns;
  assert_int_equal(in[0].op, GL_PTX_OP_CPASYNC);
  assert_int_equal(in[0].mode, 8);
  assert_int_equal(in[0].src[0].kind, GL_PTX_O_ADDR);
  assert_int_equal(in[0].src[0].imm, 16);
  assert_int_equal(in[0].src[2].kind, GL_PTX_O_REG);
  assert_int_equal(in[0].src[3].kind, GL_PTX_O_NONE);
  assert_int_equal(in[1].op, GL_PTX_OP_MBARRIER);
  assert_int_equal(in[1].mode, GL_PTX_MBAR_ARRIVE | GL_PTX_MBAR_WITH_TX);
  assert_int_equal(in[1].space, GL_PTX_SPACE_SHARED);
  assert_int_equal(in[1].src[0].imm, 8); /* sm is the module's first shared variable */
  assert_int_equal(in[1].src[1].imm, 1); /* the count nobody wrote */
  assert_int_equal(in[1].src[2].imm, 64);
  assert_int_equal(in[2].mode, GL_PTX_MBAR_TRY_WAIT | GL_PTX_MBAR_PARITY);
  assert_int_equal(in[2].nsrc, 2);
  assert_int_equal(in[3].op, GL_PTX_OP_REDUX);
  assert_int_equal(in[3].mode, GL_PTX_ATOM_MAX);
  assert_int_equal(in[3].type, GL_PTX_T_F32);
  assert_true(in[3].flags & GL_PTX_F_ABS);
  assert_int_equal(in[4].op, GL_PTX_OP_ELECT);
  assert_int_equal(in[4].dst[0].reg, GL_PTX_NOREG);
  assert_int_equal(in[4].ndst, 2);
  assert_int_equal(in[5].op, GL_PTX_OP_MEMBAR);
  gl_ptx_module_free(m);
}

#define BOTH(f) cmocka_unit_test_prestate(f, (void *)"sm80"), \
                cmocka_unit_test_prestate(f, (void *)"sm90a")
#define SM90(f) cmocka_unit_test_prestate(f, (void *)"sm90a")

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_forms),
      cmocka_unit_test(test_parse_fields),
      BOTH(test_cp_async_fill),
      BOTH(test_pipeline_sum),
      BOTH(test_cuda_barrier_copy),
      cmocka_unit_test(test_triton_cp_async),
      cmocka_unit_test(test_variable_operands),
      cmocka_unit_test(test_triton_kernels_parse),
      BOTH(test_redux),
      cmocka_unit_test(test_redux_f32),
      BOTH(test_mbar_pipeline),
      BOTH(test_mbar_states),
      BOTH(test_cp_async_mbar),
      BOTH(test_mbar_timeout),
      cmocka_unit_test(test_mbar_errors),
      SM90(test_bulk_stream),
      SM90(test_cluster_mbar),
      SM90(test_cluster_reduce),
      SM90(test_st_red_async),
      SM90(test_elect_misc),
      cmocka_unit_test(test_tensormap_encode),
      SM90(test_tma_load),
      SM90(test_tma_store),
      SM90(test_tma_bad_map),
      SM90(test_tma_5d),
      SM90(test_tma_multicast),
      SM90(test_bulk_reduce),
      SM90(test_tma_reduce),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
