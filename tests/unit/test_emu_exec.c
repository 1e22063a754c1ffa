/*
 * test_emu_exec.c - the emulated device's executor: machine semantics of
 * gl_emu_launch on small kernels compiled by nvcc (tests/emu/exec-samples/
 * *.cu, with the PTX for sm_75 and sm_90 checked in next to them; every
 * test runs once on each). Each result is checked against a C reference:
 * indexing, divergence, barriers, warp primitives, atomics (also with four
 * host threads), calls, local memory, every kind of fault, deadlines,
 * launch limits (static shared memory per kernel) and determinism. A tiled matmul reports the interpreter's
 * speed. Cooperative launches (grid.sync(), co-residency limits, the
 * %envreg workspace, a grid that spins forever) and thread-block clusters
 * (distributed shared memory, cluster registers and barriers, bad cluster
 * shapes; sm_90 only) run on coop.cu and cluster.cu.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/util.h"
#include "emu/emu.h"
#include "emu_fixture.h"

#define REGION (64u << 20)

/* ---- Fixture ------------------------------------------------------------ */

static const char *variant(void **state) { return *state ? (const char *)*state : ""; }

/* The sample's PTX for this test's target (tests/emu/exec-samples/). */
static char *read_sample(const char *name, const char *var, size_t *len) {
  char rel[256];
  snprintf(rel, sizeof rel, "tests/emu/exec-samples/%s%s.ptx", name, var);
  return read_src(rel, len);
}

static void env_open(env *e, const char *sample, void **state) {
  char what[128];
  snprintf(what, sizeof what, "%s%s", sample, variant(state));
  size_t len = 0;
  char *ptx = read_sample(sample, variant(state), &len);
  env_load(e, REGION, ptx, len, what);
  free(ptx);
}

typedef struct lcfg {
  uint32_t grid[3], block[3];
  uint32_t shared;
  unsigned threads;
  uint64_t deadline_ns;
  int cooperative;
  uint32_t cluster[3];
  uint32_t sm_count;
} lcfg;

static gpulease_status run_k(env *e, const char *kernel, lcfg c, void **args,
                             gl_emu_stats *stats) {
  const gl_emu_function *fn = gl_emu_module_function(e->mod, kernel);
  if (!fn)
    fail_msg("no kernel %s", kernel);
  gl_emu_launch_cfg cfg = {.shared_bytes = c.shared, .args = args,
                           .deadline_ns = c.deadline_ns, .threads = c.threads,
                           .cooperative = c.cooperative, .sm_count = c.sm_count};
  memcpy(cfg.cluster, c.cluster, sizeof cfg.cluster);
  for (int i = 0; i < 3; i++) {
    cfg.grid[i] = c.grid[i] ? c.grid[i] : 1;
    cfg.block[i] = c.block[i] ? c.block[i] : 1;
  }
  return gl_emu_launch(e->dev, fn, &cfg, stats, e->err, sizeof e->err);
}

#define RUN_OK(e, k, c, args)                                                                  \
  do {                                                                                         \
    gpulease_status st_ = run_k((e), (k), (c), (args), NULL);                                  \
    if (st_ != GPULEASE_OK)                                                                    \
      fail_msg("%s: status %d: %s", (k), st_, (e)->err);                                      \
  } while (0)

static void expect_fail(env *e, const char *k, lcfg c, void **args, gpulease_status want,
                        const char *needle) {
  gpulease_status st = run_k(e, k, c, args, NULL);
  if (st != want || !strstr(e->err, needle))
    fail_msg("%s: want %d with '%s', got %d: %s", k, want, needle, st, e->err);
}

/* ---- Indexing, divergence, 64-bit --------------------------------------- */

static void test_index3d(void **state) {
  env e;
  env_open(&e, "basic", state);
  lcfg c = {.grid = {2, 3, 2}, .block = {4, 2, 3}};
  size_t nthreads = 12 * 24;
  uint64_t out = dput(&e, NULL, nthreads * 16);
  void *args[] = {&out};
  RUN_OK(&e, "index3d", c, args);
  uint32_t *o = malloc(nthreads * 16);
  dget(&e, out, o, nthreads * 16);
  for (uint32_t bz = 0; bz < 2; bz++)
    for (uint32_t by = 0; by < 3; by++)
      for (uint32_t bx = 0; bx < 2; bx++)
        for (uint32_t tz = 0; tz < 3; tz++)
          for (uint32_t ty = 0; ty < 2; ty++)
            for (uint32_t tx = 0; tx < 4; tx++) {
              uint32_t b = bx + 2 * (by + 3 * bz), t = tx + 4 * (ty + 2 * tz);
              uint32_t *r = o + 4 * (b * 24 + t);
              assert_int_equal(r[0], tx | ty << 10 | tz << 20);
              assert_int_equal(r[1], bx | by << 10 | bz << 20);
              assert_int_equal(r[2], 4u | 2u << 10 | 3u << 20);
              assert_int_equal(r[3], 2u | 3u << 10 | 2u << 20);
            }
  free(o);
  env_close(&e);
}

static void test_diverge(void **state) {
  env e;
  env_open(&e, "basic", state);
  enum { N = 300 };
  int in[N], out[N], ref[N];
  for (int i = 0; i < N; i++)
    in[i] = (i * 37 + 11) % 60;
  uint64_t din = dput(&e, in, sizeof in), dout = dput(&e, NULL, sizeof out);
  int n = N - 5; /* the last threads return at once */
  void *args[] = {&din, &dout, &n};
  RUN_OK(&e, "diverge", ((lcfg){.grid = {3}, .block = {128}}), args);
  dget(&e, dout, out, sizeof out);
  for (int i = 0; i < N; i++) {
    int v = in[i], acc = 0;
    if (i >= n) {
      ref[i] = 0;
      continue;
    }
    if (v % 3 == 0) {
      for (int k = 0; k < v; k++)
        acc += k * (i & 7);
      if (v & 1)
        acc = -acc;
    } else if (v % 3 == 1) {
      int k = v;
      while (k > 1) {
        k = (k & 1) ? 3 * k + 1 : k / 2;
        acc++;
      }
    } else {
      if (i & 1) {
        ref[i] = 12345;
        continue;
      }
      acc = v * 7;
    }
    ref[i] = acc;
  }
  assert_memory_equal(out, ref, sizeof ref);
  env_close(&e);
}

static void test_wide(void **state) {
  env e;
  env_open(&e, "basic", state);
  enum { N = 64 };
  long long a[N], o[2 * N];
  double d[N], od[N];
  for (int i = 0; i < N; i++) {
    a[i] = (long long)((i * 0x123456789ll) ^ (i & 1 ? -1ll : 0)) - 1000 * i;
    d[i] = i * 0.75 - 10.0;
  }
  uint64_t da = dput(&e, a, sizeof a), dd = dput(&e, d, sizeof d);
  uint64_t doo = dput(&e, NULL, sizeof o), dod = dput(&e, NULL, sizeof od);
  void *args[] = {&da, &dd, &doo, &dod};
  RUN_OK(&e, "wide", ((lcfg){.block = {N}}), args);
  dget(&e, doo, o, sizeof o);
  dget(&e, dod, od, sizeof od);
  for (int i = 0; i < N; i++) {
    long long x = a[i];
    unsigned long long u = (unsigned long long)x * 0x9E3779B97F4A7C15ull;
    assert_int_equal(o[2 * i], x / 7 + (x % 5) - (x >> 3));
    assert_int_equal(o[2 * i + 1], (long long)(u ^ (u >> 29)));
    double y = d[i], want = y * y + 1.0 / (y + 3.0) - (double)i;
    double diff = od[i] - want;
    if (diff < 0)
      diff = -diff;
    assert_true(diff <= 1e-12 * (want < 0 ? -want : want) + 1e-12);
  }
  env_close(&e);
}

/* ---- Barriers and shared memory ----------------------------------------- */

static void test_reduce(void **state) {
  env e;
  env_open(&e, "sync", state);
  enum { B = 5, T = 256 };
  float in[B * T], out[B];
  for (int i = 0; i < B * T; i++)
    in[i] = (float)((i * 13) % 17);
  uint64_t din = dput(&e, in, sizeof in), dout = dput(&e, NULL, sizeof out);
  void *args[] = {&din, &dout};
  RUN_OK(&e, "reduce", ((lcfg){.grid = {B}, .block = {T}}), args);
  dget(&e, dout, out, sizeof out);
  for (int b = 0; b < B; b++) {
    float s = 0;
    for (int t = 0; t < T; t++)
      s += in[b * T + t];
    assert_true(out[b] == s);
  }
  env_close(&e);
}

static void test_dyn_shared(void **state) {
  env e;
  env_open(&e, "sync", state);
  enum { B = 3, T = 200 };
  int data[B * T], out[B * T];
  for (int i = 0; i < B * T; i++)
    data[i] = i * 3 + 1;
  uint64_t dd = dput(&e, data, sizeof data);
  void *args[] = {&dd};
  RUN_OK(&e, "reverse_dyn", ((lcfg){.grid = {B}, .block = {T}, .shared = T * 4}), args);
  dget(&e, dd, out, sizeof out);
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++)
      assert_int_equal(out[b * T + t], data[b * T + (T - 1 - t)]);
  /* too little dynamic shared memory: the block reads past its end */
  expect_fail(&e, "reverse_dyn", ((lcfg){.grid = {B}, .block = {T}, .shared = T * 2}), args,
              GPULEASE_LAUNCH_FAILED, "CUDA_ERROR_ILLEGAL_ADDRESS");
  assert_non_null(strstr(e.err, "shared"));
  env_close(&e);
}

static void test_exit_then_sync(void **state) {
  env e;
  env_open(&e, "sync", state);
  int out[64];
  for (int i = 0; i < 64; i++)
    out[i] = -1;
  uint64_t d = dput(&e, out, sizeof out);
  void *args[] = {&d};
  RUN_OK(&e, "exit_then_sync", ((lcfg){.block = {64}}), args);
  dget(&e, d, out, sizeof out);
  for (int t = 0; t < 64; t++)
    assert_int_equal(out[t], t < 40 ? 2 * (39 - t) : -1);
  env_close(&e);
}

static void test_sync_count(void **state) {
  env e;
  env_open(&e, "sync", state);
  int out[96];
  uint64_t d = dput(&e, NULL, sizeof out);
  void *args[] = {&d};
  RUN_OK(&e, "sync_count", ((lcfg){.block = {96}}), args);
  dget(&e, d, out, sizeof out);
  for (int t = 0; t < 96; t++)
    assert_int_equal(out[t], 32 * 1000 + 10 + 1);
  env_close(&e);
}

static void test_deadlock(void **state) {
  env e;
  env_open(&e, "sync", state);
  uint64_t d = dput(&e, NULL, 256);
  void *args[] = {&d};
  expect_fail(&e, "deadlock", ((lcfg){.block = {64}}), args, GPULEASE_LAUNCH_FAILED,
              "can never complete");
  expect_fail(&e, "deadlock", ((lcfg){.grid = {8}, .block = {64}, .threads = 4}), args,
              GPULEASE_LAUNCH_FAILED, "can never complete");
  /* one warp alone completes barrier 1 */
  RUN_OK(&e, "deadlock", ((lcfg){.block = {32}}), args);
  env_close(&e);
}

/* ---- Warp primitives ---------------------------------------------------- */

static void test_shfl(void **state) {
  static const int widths[] = {32, 16, 8, 4, 2, 1};
  env e;
  env_open(&e, "warp", state);
  enum { T = 64 };
  int in[T], out[8 * T];
  for (int i = 0; i < T; i++)
    in[i] = i * 1000 + 7;
  uint64_t din = dput(&e, in, sizeof in), dout = dput(&e, NULL, sizeof out);
  for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++) {
    int w = widths[wi];
    void *args[] = {&din, &dout, &w};
    RUN_OK(&e, "shfl_all", ((lcfg){.block = {T}}), args);
    dget(&e, dout, out, sizeof out);
    for (int t = 0; t < T; t++) {
      int base = t & ~31, lane = t & 31, seg = lane & ~(w - 1), end = lane | (w - 1);
      int *o = out + 8 * t;
      int src = seg + (((t * 7 + 3) & 63) % w);
      assert_int_equal(o[0], in[base + src]);
      int up = lane - 3;
      assert_int_equal(o[1], in[base + (up < seg ? lane : up)]);
      int dn = lane + 5;
      assert_int_equal(o[2], in[base + (dn > end ? lane : dn)]);
      int x = lane ^ 6;
      assert_int_equal(o[3], in[base + (x > end ? lane : x)]);
      assert_int_equal(o[4], in[base + seg + (2 % w)]);
      int sum = 0, pref = 0;
      for (int k = 0; k < 32; k++) {
        sum += in[base + k];
        if (k <= lane)
          pref += in[base + k];
      }
      assert_int_equal(o[5], sum);
      assert_int_equal(o[6], pref);
      assert_int_equal(o[7], in[base + (lane == 31 ? 31 : lane + 1)]);
    }
  }
  env_close(&e);
}

static void test_votes(void **state) {
  env e;
  env_open(&e, "warp", state);
  enum { T = 64 };
  int in[T];
  unsigned out[8 * T];
  for (int i = 0; i < T; i++)
    in[i] = (i * 29) % 23 + (i == 40 ? 77 : 0) + (i == 50 ? 5000 : 0);
  uint64_t din = dput(&e, in, sizeof in), dout = dput(&e, NULL, sizeof out);
  void *args[] = {&din, &dout};
  RUN_OK(&e, "votes", ((lcfg){.block = {T}}), args);
  dget(&e, dout, out, sizeof out);
  for (int t = 0; t < T; t++) {
    int base = t & ~31;
    unsigned ballot = 0, any77 = 0, odd = 0, m4 = 0, m3 = 0;
    int same_k = 1;
    for (int k = 0; k < 32; k++) {
      int v = in[base + k];
      ballot |= (unsigned)(v > 10) << k;
      any77 |= v == 77;
      odd |= (unsigned)(v & 1) << k;
      m4 |= (unsigned)(v % 4 == in[t] % 4) << k;
      m3 |= (unsigned)(v % 3 == in[t] % 3) << k;
      same_k &= v / 1000 == in[base] / 1000;
    }
    unsigned *o = out + 8 * t;
    assert_int_equal(o[0], ballot);
    assert_int_equal(o[1], any77);
    assert_int_equal(o[2], 1);
    assert_int_equal(o[3], m4);
    assert_int_equal(o[4], same_k ? 0xffffffffu : 0);
    assert_int_equal(o[5], same_k);
    assert_int_equal(o[6], (in[t] & 1) ? odd : 0xdeadu);
    assert_int_equal(o[7], m3);
  }
  env_close(&e);
}

/* ---- Atomics ------------------------------------------------------------ */

static void atom_mix_run(env *e, unsigned threads) {
  unsigned g[9] = {0};
  int gi[5] = {0, -1000, 0, 0x1234, -1};
  float gf = 0;
  double gd = 0;
  unsigned long long g64 = 0;
  uint64_t dg = dput(e, g, sizeof g), dgf = dput(e, &gf, sizeof gf), dgd = dput(e, &gd, 8);
  uint64_t dg64 = dput(e, &g64, 8), dgi = dput(e, gi, sizeof gi);
  void *args[] = {&dg, &dgf, &dgd, &dg64, &dgi};
  RUN_OK(e, "atom_mix", ((lcfg){.grid = {3}, .block = {64}, .threads = threads}), args);
  dget(e, dg, g, sizeof g);
  dget(e, dgf, &gf, 4);
  dget(e, dgd, &gd, 8);
  dget(e, dg64, &g64, 8);
  dget(e, dgi, gi, sizeof gi);
  assert_int_equal(g[0], 192);
  assert_int_equal(g[1], 3 * 2016);
  assert_int_equal(g[2], 3 * 189);
  assert_int_equal(g[3], 3 * 4);
  assert_int_equal(g[4], 192);
  assert_int_equal(g[5], 192 % 17);
  assert_int_equal(g[6], 0);
  assert_int_equal(g[7], 64);
  assert_int_equal(g[8], 42);
  assert_true(gf == 96.0f);
  assert_true(gd == 48.0);
  assert_true(g64 == 192ull << 33);
  assert_int_equal(gi[0], -191);
  assert_int_equal(gi[1], 127);
  assert_int_equal((unsigned)gi[2], 0xffffffffu);
  assert_int_equal(gi[3], 0x1234);
  assert_int_equal(gi[4], 0);
}

static void test_atomics(void **state) {
  env e;
  env_open(&e, "atomics", state);
  atom_mix_run(&e, 1);
  atom_mix_run(&e, 4);
  env_close(&e);
}

static void test_atomic_count_threads(void **state) {
  env e;
  env_open(&e, "atomics", state);
  for (unsigned threads = 1; threads <= 4; threads += 3) {
    unsigned c = 0;
    unsigned long long sum = 0;
    uint64_t dc = dput(&e, &c, 4), ds = dput(&e, &sum, 8);
    void *args[] = {&dc, &ds};
    gl_emu_stats st;
    lcfg cfg = {.grid = {1000}, .block = {128}, .threads = threads};
    assert_int_equal(run_k(&e, "count", cfg, args, &st), GPULEASE_OK);
    dget(&e, dc, &c, 4);
    dget(&e, ds, &sum, 8);
    assert_int_equal(c, 128000);
    assert_true(sum == 128000ull * 127999ull / 2);
    assert_true(st.thread_insns >= 128000ull * 4);
    assert_int_equal(st.thread_insns % 128, 0);
    assert_true(st.warp_insns * 32 == st.thread_insns);
  }
  env_close(&e);
}

/* ---- Calls and local memory --------------------------------------------- */

static void test_calls(void **state) {
  env e;
  env_open(&e, "calls", state);
  enum { T = 48 };
  int oi[T];
  float of[T];
  double od[T];
  uint64_t di = dput(&e, NULL, sizeof oi), df = dput(&e, NULL, sizeof of);
  uint64_t dd = dput(&e, NULL, sizeof od);
  void *args[] = {&di, &df, &dd};
  RUN_OK(&e, "calls", ((lcfg){.block = {T}}), args);
  dget(&e, di, oi, sizeof oi);
  dget(&e, df, of, sizeof of);
  dget(&e, dd, od, sizeof od);
  for (int t = 0; t < T; t++) {
    assert_int_equal(oi[t], 33 * t - (t << 18));
    float want = (t & 1) ? (float)t * (float)(t % 4) + 2.0f * (float)t : -(float)t * 0.5f + 1.0f;
    assert_true(of[t] == want);
    assert_true(od[t] == t * 0.5 + 3 * t);
  }
  env_close(&e);
}

static void test_local(void **state) {
  env e;
  env_open(&e, "calls", state);
  enum { T = 40 };
  int idx[T], out[T];
  for (int i = 0; i < T; i++)
    idx[i] = (i * 53) & 255;
  uint64_t di = dput(&e, idx, sizeof idx), dout = dput(&e, NULL, sizeof out);
  void *args[] = {&di, &dout};
  RUN_OK(&e, "local_array", ((lcfg){.block = {T}}), args);
  dget(&e, dout, out, sizeof out);
  for (int t = 0; t < T; t++)
    assert_int_equal(out[t], 2 * t * 100 + (idx[t] & 15) + ((idx[t] >> 4) & 15));
  /* in bounds, then out of bounds */
  for (int i = 0; i < T; i++)
    idx[i] = i % 8;
  di = dput(&e, idx, sizeof idx);
  RUN_OK(&e, "local_oob", ((lcfg){.block = {T}}), args);
  idx[17] = 1000000;
  di = dput(&e, idx, sizeof idx);
  expect_fail(&e, "local_oob", ((lcfg){.block = {T}}), args, GPULEASE_LAUNCH_FAILED,
              "CUDA_ERROR_ILLEGAL_ADDRESS");
  assert_non_null(strstr(e.err, "local"));
  assert_non_null(strstr(e.err, "thread (17,0,0)"));
  env_close(&e);
}

/* ---- Module data and special registers ---------------------------------- */

static void test_globals(void **state) {
  env e;
  env_open(&e, "basic", state);
  /* a second copy of the module has its own data */
  size_t len;
  char *ptx = read_sample("basic", variant(state), &len);
  gl_emu_module *m2 = NULL;
  assert_int_equal(gl_emu_module_load(e.dev, ptx, len, &m2, e.err, sizeof e.err), GPULEASE_OK);
  free(ptx);
  int out[64], cnt[2];
  uint64_t d = dput(&e, NULL, sizeof out), dc = dput(&e, NULL, sizeof cnt);
  void *args[] = {&d};
  void *cargs[] = {&dc};
  RUN_OK(&e, "globals", ((lcfg){.grid = {2}, .block = {64}}), args);
  dget(&e, d, out, sizeof out);
  for (int t = 0; t < 64; t++)
    assert_int_equal(out[t], ((t & 3) + 1) * 10 + 5 + (t & 3) + ((t & 3) == 0 ? 100 : 0));
  RUN_OK(&e, "read_counter", ((lcfg){.block = {1}}), cargs);
  dget(&e, dc, cnt, sizeof cnt);
  assert_int_equal(cnt[0], 128);
  assert_int_equal(cnt[1], 205);
  gl_emu_module *m1 = e.mod;
  e.mod = m2;
  RUN_OK(&e, "read_counter", ((lcfg){.block = {1}}), cargs);
  dget(&e, dc, cnt, sizeof cnt);
  assert_int_equal(cnt[0], 0);
  assert_int_equal(cnt[1], 5);
  gl_emu_module_unload(e.dev, m2);
  e.mod = m1;
  env_close(&e);
}

static void test_sregs(void **state) {
  env e;
  env_open(&e, "basic", state);
  enum { T = 70 };
  unsigned out[10 * T];
  uint64_t d = dput(&e, NULL, sizeof out);
  void *args[] = {&d};
  uint32_t shared_static;
  gl_emu_function_info(gl_emu_module_function(e.mod, "sregs"), &shared_static, NULL, NULL);
  RUN_OK(&e, "sregs", ((lcfg){.block = {T}, .shared = 100}), args);
  dget(&e, d, out, sizeof out);
  for (unsigned t = 0; t < T; t++) {
    unsigned *o = out + 10 * t, lane = t & 31;
    assert_int_equal(o[0], lane);
    assert_int_equal(o[1], t / 32);
    assert_int_equal(o[2], 3);
    assert_int_equal(o[3], (1u << lane) - 1);
    assert_int_equal(o[4], ~((1u << lane) - 1));
    assert_int_equal(o[5], 100);
    assert_true(o[6] >= 100);
    assert_int_equal(o[7], 1);
    assert_int_equal(o[8], 1);
  }
  env_close(&e);
}

/* ---- Faults ------------------------------------------------------------- */

static void test_illegal_address(void **state) {
  env e;
  env_open(&e, "faults", state);
  int zero[64] = {0};
  uint64_t p = dput(&e, zero, sizeof zero), out = dput(&e, NULL, 256);
  long long off = 0;
  uint64_t null = 0;
  lcfg c = {.block = {32}};
  void *args[] = {&p, &off, &out};
  RUN_OK(&e, "load_at", c, args);
  off = REGION / 4; /* past the region's end */
  expect_fail(&e, "load_at", c, args, GPULEASE_LAUNCH_FAILED, "CUDA_ERROR_ILLEGAL_ADDRESS");
  assert_non_null(strstr(e.err, "global"));
  assert_non_null(strstr(e.err, "line "));
  off = -(long long)(GL_EMU_REGION_BASE / 4); /* device address 0 */
  expect_fail(&e, "load_at", c, args, GPULEASE_LAUNCH_FAILED, "CUDA_ERROR_ILLEGAL_ADDRESS");
  assert_non_null(strstr(e.err, "at 0x0 "));
  void *nargs[] = {&null, &off, &out};
  off = 0;
  expect_fail(&e, "load_at", c, nargs, GPULEASE_LAUNCH_FAILED, "CUDA_ERROR_ILLEGAL_ADDRESS");
  /* a store straddling the region's end: lanes up to the end store, then it fails */
  uint64_t last = GL_EMU_REGION_BASE + REGION - 8;
  void *sargs[] = {&last, &off};
  expect_fail(&e, "store_at", c, sargs, GPULEASE_LAUNCH_FAILED, "CUDA_ERROR_ILLEGAL_ADDRESS");
  assert_non_null(strstr(e.err, "thread (2,0,0)"));
  /* shared out of bounds */
  int i = 1000;
  void *shargs[] = {&i, &out};
  expect_fail(&e, "shared_at", c, shargs, GPULEASE_LAUNCH_FAILED, "CUDA_ERROR_ILLEGAL_ADDRESS");
  assert_non_null(strstr(e.err, "shared"));
  i = 0;
  RUN_OK(&e, "shared_at", c, shargs);
  /* the same with four host threads and many blocks */
  off = REGION / 4;
  expect_fail(&e, "load_at", ((lcfg){.grid = {64}, .block = {32}, .threads = 4}), args,
              GPULEASE_LAUNCH_FAILED, "CUDA_ERROR_ILLEGAL_ADDRESS");
  env_close(&e);
}

static void test_misaligned_trap(void **state) {
  env e;
  env_open(&e, "faults", state);
  uint64_t p = dput(&e, NULL, 64), out = dput(&e, NULL, 256);
  void *args[] = {&p, &out};
  expect_fail(&e, "misaligned", ((lcfg){.block = {4}}), args, GPULEASE_LAUNCH_FAILED,
              "CUDA_ERROR_MISALIGNED_ADDRESS");
  void *targs[] = {&out};
  expect_fail(&e, "trapper", ((lcfg){.block = {8}}), targs, GPULEASE_LAUNCH_FAILED,
              "CUDA_ERROR_ILLEGAL_INSTRUCTION");
  env_close(&e);
}

static void test_deadline(void **state) {
  env e;
  env_open(&e, "faults", state);
  uint64_t flag = dput(&e, NULL, 4);
  void *args[] = {&flag};
  for (unsigned threads = 1; threads <= 2; threads++) {
    uint64_t t0 = gl_mono_ns();
    lcfg c = {.grid = {4}, .block = {64}, .threads = threads,
              .deadline_ns = t0 + 200000000ull};
    expect_fail(&e, "spin", c, args, GPULEASE_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_TIMEOUT");
    assert_true(gl_mono_ns() - t0 < 5000000000ull);
  }
  /* the flag set: it ends */
  int one = 1;
  memcpy(gl_emu_device_ptr(e.dev, flag, 4), &one, 4);
  RUN_OK(&e, "spin", ((lcfg){.grid = {4}, .block = {64}, .deadline_ns = gl_mono_ns() + 10000000000ull}),
         args);
  env_close(&e);
}

/* ---- Launch limits ------------------------------------------------------ */

static void test_limits(void **state) {
  env e;
  env_open(&e, "basic", state);
  uint64_t out = dput(&e, NULL, 4096);
  void *args[] = {&out};
  static const struct {
    lcfg c;
  } bad[] = {
      {{.block = {1025}}},
      {{.block = {1, 1025}}},
      {{.block = {1, 1, 65}}},
      {{.block = {32, 32, 2}}},
      {{.grid = {1, 65536}}},
      {{.grid = {1, 1, 65536}}},
      {{.block = {32}, .shared = GL_EMU_MAX_SHARED_BYTES + 1}},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    expect_fail(&e, "index3d", bad[i].c, args, GPULEASE_INVALID_ARGUMENT,
                "CUDA_ERROR_INVALID_VALUE");
  /* zero dimensions */
  const gl_emu_function *fn = gl_emu_module_function(e.mod, "index3d");
  gl_emu_launch_cfg cfg = {.grid = {1, 0, 1}, .block = {1, 1, 1}, .args = args};
  assert_int_equal(gl_emu_launch(e.dev, fn, &cfg, NULL, e.err, sizeof e.err),
                   GPULEASE_INVALID_ARGUMENT);
  cfg = (gl_emu_launch_cfg){.grid = {1, 1, 1}, .block = {0, 1, 1}, .args = args};
  assert_int_equal(gl_emu_launch(e.dev, fn, &cfg, NULL, e.err, sizeof e.err),
                   GPULEASE_INVALID_ARGUMENT);
  /* no arguments for a kernel that takes one */
  cfg = (gl_emu_launch_cfg){.grid = {1, 1, 1}, .block = {1, 1, 1}};
  assert_int_equal(gl_emu_launch(e.dev, fn, &cfg, NULL, e.err, sizeof e.err),
                   GPULEASE_INVALID_ARGUMENT);
  /* the largest legal block and shared size are fine */
  RUN_OK(&e, "index3d", ((lcfg){.block = {1024}, .shared = GL_EMU_MAX_SHARED_BYTES}), args);
  size_t sizes[4];
  assert_int_equal(gl_emu_function_params(fn, sizes, 4), 1);
  assert_int_equal(sizes[0], 8);
  assert_null(gl_emu_module_function(e.mod, "nonexistent"));
  env_close(&e);
}

/* Static shared memory is counted per kernel (tests/emu/exec-samples/
 * smem.cu): fill_a and fill_b own 32 KiB each, 65 KiB with fill_b's callee
 * array in the module, and both launch; the limits see a kernel's own. */
static void test_static_shared_per_kernel(void **state) {
  env e;
  env_open(&e, "smem", state);
  enum { N = 8192, B = 4, T = 256 };
  static int out[B * T];
  uint64_t d = dput(&e, NULL, sizeof out);
  void *args[] = {&d};
  RUN_OK(&e, "fill_a", ((lcfg){.grid = {B}, .block = {T}}), args);
  dget(&e, d, out, sizeof out);
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      int want = 0;
      for (int i = T - 1 - t; i < N; i += T)
        want += i * 3 + b;
      assert_int_equal(out[b * T + t], want);
    }
  /* fill_b through pick() and mix(): lut[x] = 7x, pick(i) = lut[5i & 255] */
  memset(out, 0, sizeof out);
  d = dput(&e, out, sizeof out);
  RUN_OK(&e, "fill_b", ((lcfg){.grid = {B}, .block = {T}, .threads = 2}), args);
  dget(&e, d, out, sizeof out);
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      int want = (((t + 1) * 5) & 255) * 7;
      for (int i = T - 1 - t; i < N; i += T)
        want += (N - i) ^ b;
      assert_int_equal(out[b * T + t], want);
    }

  /* 40 KiB static + dynamic: up to 227 KiB in all */
  enum { DT = 64 };
  uint32_t dyn = GL_EMU_MAX_SHARED_BYTES - 40960;
  int dout[4 * DT];
  uint64_t dd = dput(&e, NULL, sizeof dout);
  void *dargs[] = {&dd};
  RUN_OK(&e, "dyn40", ((lcfg){.block = {DT}, .shared = dyn}), dargs);
  dget(&e, dd, dout, sizeof dout);
  for (int t = 0; t < DT; t++) {
    assert_int_equal(dout[4 * t], ((t + 1) % DT) * 5);
    assert_int_equal(dout[4 * t + 1], (t + 2) % DT + 1000);
    assert_int_equal(dout[4 * t + 2], (int)dyn);
    assert_int_equal(dout[4 * t + 3], 40960 + (int)dyn); /* %total_smem_size */
  }
  expect_fail(&e, "dyn40", ((lcfg){.block = {DT}, .shared = dyn + 1}), dargs,
              GPULEASE_INVALID_ARGUMENT, "CUDA_ERROR_INVALID_VALUE");
  expect_fail(&e, "dyn40", ((lcfg){.block = {DT}, .shared = 200 * 1024}), dargs,
              GPULEASE_INVALID_ARGUMENT, "CUDA_ERROR_INVALID_VALUE");
  /* 50 KiB of static shared memory: over 48 KiB, whatever the launch */
  expect_fail(&e, "big_static", ((lcfg){.block = {32}}), args, GPULEASE_INVALID_ARGUMENT,
              "CUDA_ERROR_INVALID_VALUE");
  assert_non_null(strstr(e.err, "51200 bytes of static shared memory"));
  /* what the kernel reports is its own figure too */
  uint32_t sh;
  gl_emu_function_info(gl_emu_module_function(e.mod, "fill_a"), &sh, NULL, NULL);
  assert_int_equal(sh, 32768);
  gl_emu_function_info(gl_emu_module_function(e.mod, "fill_b"), &sh, NULL, NULL);
  assert_int_equal(sh, 32768 + 1024);
  gl_emu_function_info(gl_emu_module_function(e.mod, "big_static"), &sh, NULL, NULL);
  assert_int_equal(sh, 51200);
  gl_emu_function_info(gl_emu_module_function(e.mod, "dyn40"), &sh, NULL, NULL);
  assert_int_equal(sh, 40960);
  env_close(&e);
}

/* ---- Vectors, sign extension, generic pointers, named barriers ---------- */

static void test_vec_sext(void **state) {
  env e;
  env_open(&e, "more", state);
  enum { T = 64 };
  float in[4 * T], out[4 * T];
  signed char c[T];
  short sh[T];
  int o[2 * T];
  for (int i = 0; i < 4 * T; i++)
    in[i] = (float)i * 0.5f;
  for (int i = 0; i < T; i++) {
    c[i] = (signed char)(i * 5 - 100);
    sh[i] = (short)(i * 1000 - 30000);
  }
  uint64_t din = dput(&e, in, sizeof in), dout = dput(&e, NULL, sizeof out);
  uint64_t dc = dput(&e, c, sizeof c), ds = dput(&e, sh, sizeof sh), dox = dput(&e, NULL, sizeof o);
  void *args[] = {&din, &dout, &dc, &ds, &dox};
  RUN_OK(&e, "vec_sext", ((lcfg){.block = {T}}), args);
  dget(&e, dout, out, sizeof out);
  dget(&e, dox, o, sizeof o);
  for (int t = 0; t < T; t++) {
    for (int k = 0; k < 4; k++)
      assert_true(out[4 * t + k] == in[4 * t + 3 - k]);
    assert_int_equal(o[2 * t], c[t]);
    assert_int_equal(o[2 * t + 1], sh[t]);
  }
  /* a float4 load from an address that is only 4-byte aligned */
  din += 4;
  expect_fail(&e, "vec_sext", ((lcfg){.block = {T}}), args, GPULEASE_LAUNCH_FAILED,
              "CUDA_ERROR_MISALIGNED_ADDRESS");
  assert_non_null(strstr(e.err, "16 bytes"));
  env_close(&e);
}

static void test_generic_shared(void **state) {
  env e;
  env_open(&e, "more", state);
  enum { T = 64 };
  for (int which = 0; which < 2; which++) {
    int g[T];
    for (int i = 0; i < T; i++)
      g[i] = 5 * i;
    uint64_t dg = dput(&e, g, sizeof g);
    void *args[] = {&dg, &which};
    RUN_OK(&e, "generic_ptr", ((lcfg){.block = {T}}), args);
    dget(&e, dg, g, sizeof g);
    for (int t = 0; t < T; t++)
      assert_int_equal(g[t], ((t + which) & 1) ? t + 1000 : 5 * t + 1000);
  }
  env_close(&e);
}

static void test_named_barrier(void **state) {
  env e;
  env_open(&e, "more", state);
  int out[32];
  uint64_t d = dput(&e, NULL, sizeof out);
  void *args[] = {&d};
  RUN_OK(&e, "producer_consumer", ((lcfg){.grid = {3}, .block = {96}}), args);
  dget(&e, d, out, sizeof out);
  for (int i = 0; i < 32; i++)
    assert_int_equal(out[i], (31 - i) * (31 - i));
  env_close(&e);
}

static void test_shfl_pred(void **state) {
  env e;
  env_open(&e, "more", state);
  int out[64];
  uint64_t d = dput(&e, NULL, sizeof out);
  void *args[] = {&d};
  RUN_OK(&e, "shfl_pred", ((lcfg){.block = {32}}), args);
  dget(&e, d, out, sizeof out);
  for (int l = 0; l < 32; l++) {
    int ok = (l & 15) >= 4;
    assert_int_equal(out[2 * l], 3 * (ok ? l - 4 : l));
    assert_int_equal(out[2 * l + 1], ok);
  }
  env_close(&e);
}

static void test_atom16_64(void **state) {
  env e;
  env_open(&e, "more", state);
  for (unsigned threads = 1; threads <= 4; threads += 3) {
    uint32_t h = 0;
    uint64_t c = 0;
    float sf = 0;
    uint64_t dh = dput(&e, &h, 4), dc = dput(&e, &c, 8), dsf = dput(&e, &sf, 4);
    void *args[] = {&dh, &dc, &dsf};
    RUN_OK(&e, "atom16_64", ((lcfg){.grid = {2}, .block = {64}, .threads = threads}), args);
    dget(&e, dh, &h, 4);
    dget(&e, dc, &c, 8);
    dget(&e, dsf, &sf, 4);
    assert_int_equal(h, 0x5800u | 0x5400u << 16); /* (128.0, 64.0) in f16 */
    assert_true(c == 384);
    assert_true(sf == 16.0f);
  }
  env_close(&e);
}

static void test_spinlock(void **state) {
  env e;
  env_open(&e, "more", state);
  for (unsigned threads = 1; threads <= 2; threads++) {
    int zero = 0, out[128];
    uint64_t dm = dput(&e, &zero, 4), dc = dput(&e, &zero, 4), dout = dput(&e, NULL, sizeof out);
    void *args[] = {&dm, &dc, &dout};
    lcfg c = {.grid = {2}, .block = {64}, .threads = threads,
              .deadline_ns = gl_mono_ns() + 60000000000ull};
    RUN_OK(&e, "spinlock", c, args);
    int cnt;
    dget(&e, dc, &cnt, 4);
    dget(&e, dout, out, sizeof out);
    assert_int_equal(cnt, 128);
    for (int i = 0; i < 128; i++)
      assert_int_equal(out[i], (i % 64) ^ 1);
  }
  env_close(&e);
}

/* ---- Determinism and speed ---------------------------------------------- */

static void matmul_ref(const float *A, const float *B, float *C, int n) {
  for (int r = 0; r < n; r++)
    for (int c = 0; c < n; c++) {
      float acc = 0;
      for (int k = 0; k < n; k++)
        acc = __builtin_fmaf(A[r * n + k], B[k * n + c], acc);
      C[r * n + c] = acc;
    }
}

static void test_matmul(void **state) {
  env e;
  env_open(&e, "matmul", state);
  const char *nv = getenv("GL_EMU_MATMUL_N");
  int n = nv ? atoi(nv) : 128;
  if (n < 16 || n % 16 || n > 2048)
    n = 128;
  size_t bytes = (size_t)n * n * sizeof(float);
  float *A = malloc(bytes), *B = malloc(bytes), *C = malloc(bytes), *C4 = malloc(bytes);
  float *R = malloc(bytes);
  for (int i = 0; i < n * n; i++) {
    A[i] = (float)((i * 7) % 13) * 0.25f - 1.0f;
    B[i] = (float)((i * 5) % 11) * 0.5f - 2.0f;
  }
  uint64_t da = dput(&e, A, bytes), db = dput(&e, B, bytes), dc = dput(&e, NULL, bytes);
  void *args[] = {&da, &db, &dc, &n};
  lcfg c = {.grid = {(uint32_t)n / 16, (uint32_t)n / 16}, .block = {16, 16}};
  gl_emu_stats st;
  uint64_t t0 = gl_mono_ns();
  assert_int_equal(run_k(&e, "matmul", c, args, &st), GPULEASE_OK);
  uint64_t dt = gl_mono_ns() - t0;
  dget(&e, dc, C, bytes);
  matmul_ref(A, B, R, n);
  assert_memory_equal(C, R, bytes);
  printf("matmul n=%d: %llu thread insns in %.3f s = %.1f M thread-insns/s (one host thread)\n",
         n, (unsigned long long)st.thread_insns, (double)dt / 1e9,
         (double)st.thread_insns / ((double)dt / 1e3));
  /* four host threads: the same bits */
  memset(gl_emu_device_ptr(e.dev, dc, bytes), 0, bytes);
  c.threads = 4;
  t0 = gl_mono_ns();
  gl_emu_stats st4;
  assert_int_equal(run_k(&e, "matmul", c, args, &st4), GPULEASE_OK);
  dt = gl_mono_ns() - t0;
  printf("matmul n=%d: %.1f M thread-insns/s with 4 host threads\n", n,
         (double)st4.thread_insns / ((double)dt / 1e3));
  dget(&e, dc, C4, bytes);
  assert_memory_equal(C4, C, bytes);
  assert_true(st4.thread_insns == st.thread_insns);
  free(A);
  free(B);
  free(C);
  free(C4);
  free(R);
  env_close(&e);
}

static void test_determinism(void **state) {
  env e;
  env_open(&e, "sync", state);
  enum { B = 4, T = 256 };
  float in[B * T], o1[B], o2[B];
  for (int i = 0; i < B * T; i++)
    in[i] = 1.0f / (float)(i + 1);
  uint64_t din = dput(&e, in, sizeof in), d1 = dput(&e, NULL, sizeof o1);
  uint64_t d2 = dput(&e, NULL, sizeof o2);
  void *a1[] = {&din, &d1}, *a2[] = {&din, &d2};
  gl_emu_stats s1, s2;
  assert_int_equal(run_k(&e, "reduce", ((lcfg){.grid = {B}, .block = {T}}), a1, &s1), 0);
  assert_int_equal(run_k(&e, "reduce", ((lcfg){.grid = {B}, .block = {T}}), a2, &s2), 0);
  dget(&e, d1, o1, sizeof o1);
  dget(&e, d2, o2, sizeof o2);
  assert_memory_equal(o1, o2, sizeof o1);
  assert_true(s1.thread_insns == s2.thread_insns && s1.warp_insns == s2.warp_insns);
  env_close(&e);
}

/* ---- Cooperative launches ----------------------------------------------- */

/* Spin limit for co-resident groups (exec_internal.h), lowered by a test. */
extern uint64_t gl_emu__no_progress_limit;

static const gl_emu_function *kfn(env *e, const char *kernel) {
  const gl_emu_function *fn = gl_emu_module_function(e->mod, kernel);
  if (!fn)
    fail_msg("no kernel %s", kernel);
  return fn;
}

/* SMs enough for nblocks co-resident blocks of `kernel`. */
static uint32_t sms_for(env *e, const char *kernel, uint32_t threads, uint32_t nblocks) {
  uint32_t occ = gl_emu_occupancy(kfn(e, kernel), threads, 0);
  assert_true(occ >= 1);
  return (nblocks + occ - 1) / occ;
}

static void test_coop_two_phase(void **state) {
  env e;
  env_open(&e, "coop", state);
  enum { NB = 48, T = 256 };
  uint32_t *in = malloc(NB * T * 4), *out = malloc(NB * T * 4), *out4 = malloc(NB * T * 4);
  uint32_t partial[NB], want_acc = 0;
  for (uint32_t i = 0; i < NB * T; i++)
    in[i] = (i * 2654435761u) >> 7;
  for (uint32_t b = 0; b < NB; b++) {
    partial[b] = 0;
    for (uint32_t t = 0; t < T; t++)
      partial[b] += in[b * T + t];
    want_acc += partial[b] * (b + 1);
  }
  uint64_t din = dput(&e, in, NB * T * 4), dp = dput(&e, NULL, NB * 4);
  uint64_t dout = dput(&e, NULL, NB * T * 4);
  void *args[] = {&din, &dp, &dout};
  lcfg c = {.grid = {NB}, .block = {T}, .cooperative = 1,
            .sm_count = sms_for(&e, "coop_two_phase", T, NB)};
  gl_emu_stats s1, s4;
  assert_int_equal(run_k(&e, "coop_two_phase", c, args, &s1), GPULEASE_OK);
  dget(&e, dout, out, NB * T * 4);
  for (uint32_t b = 0; b < NB; b++)
    for (uint32_t t = 0; t < T; t++)
      if (out[b * T + t] != want_acc + partial[(b + 1) % NB] * t)
        fail_msg("out[%u][%u] = %u, want %u", b, t, out[b * T + t],
                 want_acc + partial[(b + 1) % NB] * t);
  /* threads = 4: a cooperative grid runs on one host thread, the same way */
  memset(gl_emu_device_ptr(e.dev, dout, NB * T * 4), 0, NB * T * 4);
  c.threads = 4;
  if (run_k(&e, "coop_two_phase", c, args, &s4) != GPULEASE_OK)
    fail_msg("threads=4: %s", e.err);
  dget(&e, dout, out4, NB * T * 4);
  assert_memory_equal(out, out4, NB * T * 4);
  assert_true(s1.thread_insns == s4.thread_insns && s1.warp_insns == s4.warp_insns);
  free(in);
  free(out);
  free(out4);
  env_close(&e);
}

static void test_coop_rounds(void **state) {
  env e;
  env_open(&e, "coop", state);
  enum { NB = 16, T = 64, N = NB * T };
  int iters = 7;
  uint32_t a[N], b[N], ra[N], rb[N];
  for (uint32_t i = 0; i < N; i++)
    ra[i] = a[i] = i * 7 + 1;
  memset(rb, 0, sizeof rb);
  for (int it = 0; it < iters; it++) {
    uint32_t *src = (it & 1) ? rb : ra, *dst = (it & 1) ? ra : rb;
    for (uint32_t i = 0; i < N; i++)
      dst[i] = src[i] + 3u * src[(i + 1) % N];
  }
  uint64_t da = dput(&e, a, sizeof a), db = dput(&e, NULL, sizeof b);
  void *args[] = {&da, &db, &iters};
  lcfg c = {.grid = {NB}, .block = {T}, .cooperative = 1,
            .sm_count = sms_for(&e, "coop_rounds", T, NB)};
  RUN_OK(&e, "coop_rounds", c, args);
  dget(&e, da, a, sizeof a);
  dget(&e, db, b, sizeof b);
  assert_memory_equal(a, ra, sizeof a);
  assert_memory_equal(b, rb, sizeof b);
  env_close(&e);
}

static void test_coop_too_large(void **state) {
  env e;
  env_open(&e, "coop", state);
  const gl_emu_function *fn = kfn(&e, "coop_rounds");
  uint32_t occ = gl_emu_occupancy(fn, 128, 0);
  assert_true(occ >= 1);
  uint64_t da = dput(&e, NULL, 65536), db = dput(&e, NULL, 65536);
  int iters = 1;
  void *args[] = {&da, &db, &iters};
  for (uint32_t sms = 1; sms <= 4; sms += 3) {
    lcfg c = {.grid = {occ * sms + 1}, .block = {128}, .cooperative = 1, .sm_count = sms};
    char want[160];
    snprintf(want, sizeof want, "a cooperative grid of %u blocks", occ * sms + 1);
    expect_fail(&e, "coop_rounds", c, args, GPULEASE_INVALID_ARGUMENT, want);
    assert_int_equal(strncmp(e.err, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: ", 41), 0);
    snprintf(want, sizeof want, "at most %u blocks (%u per SM x %u SMs)", occ * sms, occ, sms);
    if (!strstr(e.err, want))
      fail_msg("'%s' lacks '%s'", e.err, want);
    /* one block fewer fits */
    c.grid[0] = occ * sms;
    RUN_OK(&e, "coop_rounds", c, args);
  }
  /* sm_count 0 counts as 1 */
  lcfg c = {.grid = {occ + 1}, .block = {128}, .cooperative = 1};
  expect_fail(&e, "coop_rounds", c, args, GPULEASE_INVALID_ARGUMENT, "x 1 SMs)");
  /* not cooperative: no limit */
  c.cooperative = 0;
  iters = 0;
  RUN_OK(&e, "coop_rounds", c, args);
  env_close(&e);
}

/* grid.sync() in a launch that is not cooperative traps, as on a GPU. */
static void test_coop_not_cooperative(void **state) {
  env e;
  env_open(&e, "coop", state);
  uint64_t din = dput(&e, NULL, 4 * 256 * 4), dp = dput(&e, NULL, 16);
  uint64_t dout = dput(&e, NULL, 4 * 256 * 4);
  void *args[] = {&din, &dp, &dout};
  lcfg c = {.grid = {4}, .block = {256}};
  expect_fail(&e, "coop_two_phase", c, args, GPULEASE_LAUNCH_FAILED,
              "CUDA_ERROR_ILLEGAL_INSTRUCTION");
  assert_non_null(strstr(e.err, "trap"));
  env_close(&e);
}

static void test_coop_envregs(void **state) {
  env e;
  env_open(&e, "coop", state);
  uint32_t out[8];
  uint64_t dout = dput(&e, NULL, sizeof out);
  void *args[] = {&dout};
  RUN_OK(&e, "coop_envregs", ((lcfg){.grid = {2}, .block = {32}, .cooperative = 1, .sm_count = 1}),
         args);
  dget(&e, dout, out, sizeof out);
  assert_int_equal(out[0], 0);
  /* the driver's ABI (cooperative_groups/details/driver_abi.h): %envreg1
   * is the high half, %envreg2 the low half */
  assert_int_equal(((uint64_t)out[1] << 32 | out[2]), GL_EMU_GRID_WORKSPACE_BASE);
  assert_int_equal(out[3], 0);
  assert_int_equal(out[4], 0);
  assert_int_equal(out[5], 1); /* grid_group::is_valid() */
  RUN_OK(&e, "coop_envregs", ((lcfg){.grid = {2}, .block = {32}}), args);
  dget(&e, dout, out, sizeof out);
  for (int i = 0; i < 6; i++)
    assert_int_equal(out[i], 0);
  env_close(&e);
}

/* A block that never reaches grid.sync(): the others spin on the grid
 * barrier. The deadline ends it; so does the no-progress limit. */
static void test_coop_deadlock(void **state) {
  env e;
  env_open(&e, "coop", state);
  uint64_t dout = dput(&e, NULL, 64);
  void *args[] = {&dout};
  uint64_t t0 = gl_mono_ns();
  lcfg c = {.grid = {4}, .block = {64}, .cooperative = 1, .sm_count = 4,
            .deadline_ns = t0 + 200000000ull};
  expect_fail(&e, "coop_deadlock", c, args, GPULEASE_LAUNCH_FAILED,
              "CUDA_ERROR_LAUNCH_TIMEOUT");
  assert_true(gl_mono_ns() - t0 < 5000000000ull);
  uint64_t keep = gl_emu__no_progress_limit;
  gl_emu__no_progress_limit = 1u << 20;
  c.deadline_ns = 0;
  expect_fail(&e, "coop_deadlock", c, args, GPULEASE_LAUNCH_FAILED,
              "without a store, atomic, barrier or exit");
  assert_non_null(strstr(e.err, "cooperative grid of 4 co-resident blocks"));
  gl_emu__no_progress_limit = keep;
  env_close(&e);
}

/* The occupancy figures follow the documented H100 rules. */
static void test_occupancy(void **state) {
  env e;
  env_open(&e, "coop", state);
  const gl_emu_function *fn = kfn(&e, "coop_rounds");
  uint32_t shared, local, nregs;
  gl_emu_function_info(fn, &shared, &local, &nregs);
  assert_int_equal(gl_emu_occupancy(fn, 0, 0), 0);
  assert_int_equal(gl_emu_occupancy(fn, 1025, 0), 0);
  assert_int_equal(gl_emu_occupancy(NULL, 32, 0), 0);
  uint32_t max_threads;
  gl_emu_function_limits(fn, &max_threads, NULL, NULL);
  assert_int_equal(max_threads, 1024); /* no .maxntid: registers capped at 64 */
  for (uint32_t t = 1; t <= 1024; t = t * 2 + 1) {
    uint32_t warps = (t + 31) / 32, regs = nregs > 64 ? 64 : nregs;
    regs = (regs + 7) / 8 * 8;
    uint32_t want = 64 / warps;
    if (want > 32)
      want = 32;
    if (228 * 1024 / (shared + 1024) < want)
      want = 228 * 1024 / (shared + 1024);
    if (65536 / (regs * 32) / warps < want)
      want = 65536 / (regs * 32) / warps;
    assert_int_equal(gl_emu_occupancy(fn, t, 0), want);
  }
  /* shared memory: 100 KiB a block leaves room for two */
  uint32_t two = gl_emu_occupancy(fn, 32, 100 * 1024);
  assert_true(two <= 2 && two >= 1);
  assert_int_equal(gl_emu_occupancy(fn, 32, GL_EMU_MAX_SHARED_BYTES - shared + 1), 0);
  assert_int_equal(gl_emu_max_cluster_size(fn, 32, 0), 8);
  assert_int_equal(gl_emu_max_cluster_size(fn, 0, 0), 0);
  /* any block the emulator launches fits an SM at least once */
  assert_true(gl_emu_occupancy(kfn(&e, "coop_two_phase"), 1024, 0) >= 1);
  env_close(&e);

  /* .maxntid 128: ptxas may give a thread up to 255 registers; 300 PTX
   * registers count as 256 (255 rounded up to 8): 8 warps an SM, so two
   * blocks of 128 threads */
  gl_emu_device *dev = gl_emu_device_new(4096);
  assert_non_null(dev);
  char ptx[16384], err[256];
  int n = snprintf(ptx, sizeof ptx, ".version 8.0\n.target sm_90\n.address_size 64\n"
                                    ".visible .entry k()\n.maxntid 128, 1, 1\n{\n"
                                    ".reg .b32 %%r<301>;\n");
  for (int i = 1; i <= 300; i++)
    n += snprintf(ptx + n, sizeof ptx - (size_t)n, "mov.u32 %%r%d, %d;\n", i, i);
  snprintf(ptx + n, sizeof ptx - (size_t)n, "ret;\n}\n");
  gl_emu_module *m = NULL;
  assert_int_equal(gl_emu_module_load(dev, ptx, strlen(ptx), &m, err, sizeof err), GPULEASE_OK);
  const gl_emu_function *k = gl_emu_module_function(m, "k");
  gl_emu_function_info(k, NULL, NULL, &nregs);
  assert_true(nregs >= 300);
  assert_int_equal(gl_emu_occupancy(k, 128, 0), 2);
  assert_int_equal(gl_emu_occupancy(k, 64, 0), 4);
  assert_int_equal(gl_emu_occupancy(k, 256, 0), 0); /* over .maxntid */
  assert_int_equal(gl_emu_max_cluster_size(k, 256, 0), 0);
  gl_emu_device_free(dev);
}

/* ---- Thread-block clusters (sm_90) ---------------------------------------- */

/* cluster_sum's 8 words a thread, worked out on the host. */
static void cluster_sum_ref(const int32_t *in, int32_t *out, const uint32_t g[3],
                            const uint32_t cd[3], uint32_t n) {
  uint32_t nr = cd[0] * cd[1] * cd[2];
  for (uint32_t bz = 0; bz < g[2]; bz++)
    for (uint32_t by = 0; by < g[1]; by++)
      for (uint32_t bx = 0; bx < g[0]; bx++) {
        uint32_t b = bx + g[0] * (by + g[1] * bz);
        uint32_t rc[3] = {bx % cd[0], by % cd[1], bz % cd[2]};
        uint32_t rank = rc[0] + cd[0] * (rc[1] + cd[1] * rc[2]);
        for (uint32_t t = 0; t < n; t++) {
          int32_t acc = 0;
          for (uint32_t k = 0; k < nr; k++) {
            uint32_t px = bx - rc[0] + k % cd[0], py = by - rc[1] + (k / cd[0]) % cd[1];
            uint32_t pz = bz - rc[2] + k / (cd[0] * cd[1]);
            acc += in[(px + g[0] * (py + g[1] * pz)) * n + t] * (int32_t)(k + 1);
          }
          int32_t *o = out + 8 * (b * n + t);
          o[0] = acc;
          o[1] = (int32_t)(n * (n + 1) / 2);
          o[2] = (int32_t)rank;
          o[3] = (int32_t)nr;
          o[4] = (int32_t)(rc[0] + 10 * rc[1] + 100 * rc[2]);
          o[5] = (int32_t)(cd[0] + 10 * cd[1] + 100 * cd[2]);
          o[6] = (int32_t)(bx / cd[0] + 10 * (g[1] / cd[1]));
          o[7] = (int32_t)((rank + 1) % nr);
        }
      }
}

static void test_cluster_sum(void **state) {
  env e;
  env_open(&e, "cluster", state);
  static const struct {
    uint32_t grid[3], cluster[3];
  } shapes[] = {
      {{8, 2, 1}, {2, 1, 1}}, {{8, 2, 1}, {4, 1, 1}}, {{4, 4, 1}, {2, 2, 1}},
      {{2, 2, 4}, {1, 2, 4}}, {{6, 1, 1}, {1, 1, 1}}, {{3, 1, 1}, {0, 0, 0}},
  };
  enum { T = 128 };
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    const uint32_t *g = shapes[si].grid, *cd0 = shapes[si].cluster;
    uint32_t cd[3] = {cd0[0] ? cd0[0] : 1, cd0[1] ? cd0[1] : 1, cd0[2] ? cd0[2] : 1};
    uint32_t nb = g[0] * g[1] * g[2];
    size_t nin = (size_t)nb * T, nout = nin * 8;
    int32_t *in = malloc(nin * 4), *out = malloc(nout * 4), *ref = malloc(nout * 4);
    int32_t *out2 = malloc(nout * 4);
    for (size_t i = 0; i < nin; i++)
      in[i] = (int32_t)((i * 2654435761u) >> 20) - 2048;
    cluster_sum_ref(in, ref, g, cd, T);
    uint64_t din = dput(&e, in, nin * 4), dout = dput(&e, NULL, nout * 4);
    void *args[] = {&din, &dout};
    lcfg c = {.block = {T}};
    memcpy(c.grid, g, sizeof c.grid);
    memcpy(c.cluster, cd0, sizeof c.cluster);
    RUN_OK(&e, "cluster_sum", c, args);
    dget(&e, dout, out, nout * 4);
    for (size_t i = 0; i < nout; i++)
      if (out[i] != ref[i])
        fail_msg("cluster (%u,%u,%u): word %zu of thread %zu: %d, want %d", cd[0], cd[1], cd[2],
                 i % 8, i / 8, out[i], ref[i]);
    /* clusters spread over host threads, and the grid as one cooperative
     * group with clusters inside: the same words */
    for (int k = 0; k < 2; k++) {
      memset(gl_emu_device_ptr(e.dev, dout, nout * 4), 0, nout * 4);
      lcfg c2 = c;
      if (k == 0)
        c2.threads = 4;
      else
        c2.cooperative = 1, c2.sm_count = sms_for(&e, "cluster_sum", T, nb);
      RUN_OK(&e, "cluster_sum", c2, args);
      dget(&e, dout, out2, nout * 4);
      assert_memory_equal(out2, ref, nout * 4);
    }
    free(in);
    free(out);
    free(out2);
    free(ref);
  }
  env_close(&e);
}

static void test_cluster_fixed(void **state) {
  env e;
  env_open(&e, "cluster", state);
  enum { NB = 6, T = 64 };
  int32_t out[NB * T];
  uint64_t dout = dput(&e, NULL, sizeof out);
  void *args[] = {&dout};
  /* no cluster given: the kernel's .reqnctapercluster 2,1,1; the same
   * given explicitly */
  for (int k = 0; k < 2; k++) {
    lcfg c = {.grid = {NB}, .block = {T}};
    if (k)
      c.cluster[0] = 2, c.cluster[1] = 1, c.cluster[2] = 1;
    RUN_OK(&e, "cluster_fixed", c, args);
    dget(&e, dout, out, sizeof out);
    for (uint32_t b = 0; b < NB; b++)
      for (uint32_t t = 0; t < T; t++)
        assert_int_equal(out[b * T + t], (int32_t)(t + 1000 * ((b % 2) ^ 1)));
  }
  /* another cluster than the kernel's */
  expect_fail(&e, "cluster_fixed", ((lcfg){.grid = {8}, .block = {T}, .cluster = {4, 1, 1}}),
              args, GPULEASE_INVALID_ARGUMENT, "CUDA_ERROR_INVALID_CLUSTER_SIZE: ");
  assert_non_null(strstr(e.err, ".reqnctapercluster"));
  /* the grid must be a multiple of the kernel's cluster too */
  expect_fail(&e, "cluster_fixed", ((lcfg){.grid = {5}, .block = {T}}), args,
              GPULEASE_INVALID_ARGUMENT, "CUDA_ERROR_INVALID_CLUSTER_SIZE: ");
  const gl_emu_function *fn = kfn(&e, "cluster_fixed");
  assert_int_equal(gl_emu_max_cluster_size(fn, T, 0), 2);
  assert_int_equal(gl_emu_max_cluster_size(fn, 2048, 0), 0);
  env_close(&e);
}

static void test_cluster_bad_dims(void **state) {
  env e;
  env_open(&e, "cluster", state);
  uint64_t din = dput(&e, NULL, 64 * 128 * 4), dout = dput(&e, NULL, 64 * 128 * 32);
  void *args[] = {&din, &dout};
  static const struct {
    uint32_t grid[3], cluster[3];
    const char *why;
  } bad[] = {
      {{5, 1, 1}, {2, 1, 1}, "grid dimension x = 5 is not a multiple of the cluster dimension 2"},
      {{4, 3, 1}, {2, 2, 1}, "grid dimension y = 3"},
      {{16, 1, 1}, {16, 1, 1}, "a cluster of 16 blocks (16,1,1) exceeds 8"},
      {{9, 3, 1}, {3, 3, 1}, "a cluster of 9 blocks"},
      {{4, 1, 1}, {2, 0, 1}, "cluster dimension y is 0"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    lcfg c = {.block = {128}};
    memcpy(c.grid, bad[i].grid, sizeof c.grid);
    memcpy(c.cluster, bad[i].cluster, sizeof c.cluster);
    expect_fail(&e, "cluster_sum", c, args, GPULEASE_INVALID_ARGUMENT, bad[i].why);
    assert_int_equal(strncmp(e.err, "CUDA_ERROR_INVALID_CLUSTER_SIZE: ", 33), 0);
  }
  /* 8 blocks is the largest portable cluster */
  RUN_OK(&e, "cluster_sum", ((lcfg){.grid = {4, 2, 2}, .block = {128}, .cluster = {2, 2, 2}}),
         args);
  RUN_OK(&e, "cluster_sum", ((lcfg){.grid = {16}, .block = {128}, .cluster = {8, 1, 1}}), args);
  env_close(&e);
}

static void test_cluster_ptx(void **state) {
  env e;
  env_open(&e, "cluster", state);
  enum { NB = 8, T = 64 };
  uint32_t out[NB * T * 8];
  uint64_t dout = dput(&e, NULL, sizeof out);
  void *args[] = {&dout};
  static const uint32_t sizes[] = {2, 4, 8, 0};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    uint32_t cs = sizes[si], nr = cs ? cs : 1;
    lcfg c = {.grid = {NB}, .block = {T}, .cluster = {cs, cs ? 1 : 0, cs ? 1 : 0}};
    RUN_OK(&e, "cluster_ptx", c, args);
    dget(&e, dout, out, sizeof out);
    for (uint32_t b = 0; b < NB; b++)
      for (uint32_t t = 0; t < T; t++) {
        const uint32_t *o = out + 8 * (b * T + t);
        uint32_t rank = b % nr;
        uint32_t want[8] = {t, t, t + 1100, t + 7, (rank + 1) % nr, cs ? 1 : 0, rank, nr};
        for (int k = 0; k < 8; k++)
          if (o[k] != want[k])
            fail_msg("cluster of %u: block %u thread %u word %d: %u, want %u", nr, b, t, k,
                     o[k], want[k]);
      }
  }
  env_close(&e);
}

static void test_cluster_stuck(void **state) {
  env e;
  env_open(&e, "cluster", state);
  uint64_t dout = dput(&e, NULL, 64);
  void *args[] = {&dout};
  lcfg c = {.grid = {4}, .block = {64}, .cluster = {2, 1, 1},
            .deadline_ns = gl_mono_ns() + 30000000000ull};
  expect_fail(&e, "cluster_stuck", c, args, GPULEASE_LAUNCH_FAILED, "can never complete");
  /* one block alone (no cluster): its cluster barrier is a block barrier,
   * and the block's first warp waits at bar.sync for the rest */
  c.cluster[0] = c.cluster[1] = c.cluster[2] = 0;
  expect_fail(&e, "cluster_stuck", c, args, GPULEASE_LAUNCH_FAILED, "can never complete");
  env_close(&e);
}

/* Hand-written cluster PTX: .shared::cluster loads with a scope, addresses
 * past a peer's shared memory and ranks outside the cluster fault,
 * .maxclusterrank and .explicitcluster are enforced. */
static const char cluster_probe_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry probe(.param .u64 out, .param .u32 rank, .param .u32 off)\n"
    ".maxclusterrank 4\n"
    "{\n"
    "  .reg .b32 %r<9>;\n  .reg .b64 %rd<4>;\n"
    "  .shared .align 4 .b8 s[64];\n"
    "  ld.param.u64 %rd1, [out];\n  ld.param.u32 %r1, [rank];\n  ld.param.u32 %r2, [off];\n"
    "  mov.u32 %r5, %cluster_ctarank;\n"
    "  add.u32 %r5, %r5, 100;\n"
    "  st.shared::cluster.u32 [s], %r5;\n"
    "  barrier.cluster.arrive.release;\n  barrier.cluster.wait.acquire;\n"
    "  mov.u32 %r6, s;\n"
    "  mapa.shared::cluster.u32 %r6, %r6, %r1;\n"
    "  add.u32 %r6, %r6, %r2;\n"
    "  ld.acquire.cluster.shared::cluster.u32 %r7, [%r6];\n"
    "  mov.u32 %r3, %ctaid.x;\n  mov.u32 %r4, %ntid.x;\n  mov.u32 %r8, %tid.x;\n"
    "  mad.lo.u32 %r3, %r3, %r4, %r8;\n"
    "  mul.wide.u32 %rd2, %r3, 4;\n  add.u64 %rd3, %rd1, %rd2;\n"
    "  st.global.u32 [%rd3], %r7;\n"
    "  barrier.cluster.arrive;\n  barrier.cluster.wait;\n"
    "  ret;\n"
    "}\n"
    ".visible .entry must_cluster()\n.explicitcluster\n{\n  ret;\n}\n";

static void test_cluster_probe(void **state) {
  (void)state;
  env e;
  memset(&e, 0, sizeof e);
  e.dev = gl_emu_device_new(REGION);
  assert_non_null(e.dev);
  e.next = GL_EMU_REGION_BASE;
  if (gl_emu_module_load(e.dev, cluster_probe_ptx, sizeof cluster_probe_ptx - 1, &e.mod, e.err,
                         sizeof e.err) != GPULEASE_OK)
    fail_msg("load: %s", e.err);
  uint32_t out[4 * 32];
  uint64_t dout = dput(&e, NULL, sizeof out);
  uint32_t rank = 1, off = 0;
  void *args[] = {&dout, &rank, &off};
  lcfg c = {.grid = {4}, .block = {32}, .cluster = {2, 1, 1}};
  RUN_OK(&e, "probe", c, args);
  dget(&e, dout, out, sizeof out);
  for (int i = 0; i < 4 * 32; i++)
    assert_int_equal(out[i], 101);
  /* a rank outside the cluster */
  rank = 2;
  expect_fail(&e, "probe", c, args, GPULEASE_LAUNCH_FAILED, "CUDA_ERROR_ILLEGAL_ADDRESS");
  assert_non_null(strstr(e.err, "mapa to block rank 2 of a cluster of 2 blocks"));
  /* past the peer's shared memory */
  rank = 1, off = 64;
  expect_fail(&e, "probe", c, args, GPULEASE_LAUNCH_FAILED, "CUDA_ERROR_ILLEGAL_ADDRESS");
  assert_non_null(strstr(e.err, "outside shared memory"));
  /* .maxclusterrank 4 */
  off = 0;
  c.grid[0] = 8, c.cluster[0] = 8;
  expect_fail(&e, "probe", c, args, GPULEASE_INVALID_ARGUMENT, "CUDA_ERROR_INVALID_CLUSTER_SIZE");
  assert_non_null(strstr(e.err, ".maxclusterrank 4"));
  assert_int_equal(gl_emu_max_cluster_size(kfn(&e, "probe"), 32, 0), 4);
  /* without clusters: a cluster of one, rank 0 */
  rank = 0;
  c.grid[0] = 4, c.cluster[0] = 0, c.cluster[1] = 0, c.cluster[2] = 0;
  RUN_OK(&e, "probe", c, args);
  dget(&e, dout, out, sizeof out);
  for (int i = 0; i < 4 * 32; i++)
    assert_int_equal(out[i], 100);
  /* .explicitcluster: a cluster is required */
  expect_fail(&e, "must_cluster", ((lcfg){.grid = {2}, .block = {32}}), NULL,
              GPULEASE_INVALID_ARGUMENT, "CUDA_ERROR_INVALID_CLUSTER_SIZE");
  assert_non_null(strstr(e.err, ".explicitcluster"));
  RUN_OK(&e, "must_cluster", ((lcfg){.grid = {2}, .block = {32}, .cluster = {2, 1, 1}}), NULL);
  env_close(&e);
}

/* ---- Device API --------------------------------------------------------- */

static void test_device_api(void **state) {
  (void)state;
  gl_emu_device *dev = gl_emu_device_new(4096);
  assert_non_null(dev);
  assert_non_null(gl_emu_device_ptr(dev, GL_EMU_REGION_BASE, 4096));
  assert_non_null(gl_emu_device_ptr(dev, GL_EMU_REGION_BASE + 4095, 1));
  assert_null(gl_emu_device_ptr(dev, GL_EMU_REGION_BASE + 4095, 2));
  assert_null(gl_emu_device_ptr(dev, GL_EMU_REGION_BASE - 1, 1));
  assert_null(gl_emu_device_ptr(dev, GL_EMU_REGION_BASE + 1, UINT64_MAX));
  char err[256];
  gl_emu_module *m = NULL;
  static const char junk[] = "this is not PTX";
  assert_int_not_equal(gl_emu_module_load(dev, junk, sizeof junk - 1, &m, err, sizeof err),
                       GPULEASE_OK);
  assert_null(m);
  gl_emu_device_free(dev);
  gl_emu_device_free(NULL);
}

/* Modules a GPU's compiler would refuse, or that would take the host's
 * memory block by block, are refused at load; just under the limits they
 * load. */
static void test_load_limits(void **state) {
  (void)state;
  gl_emu_device *dev = gl_emu_device_new(4096);
  assert_non_null(dev);
  char err[512], ptx[1024];
  gl_emu_module *m = NULL;
  static const char local_fmt[] = ".version 8.0\n.target sm_75\n.address_size 64\n"
                                  ".visible .entry k()\n{\n"
                                  "  .local .align 4 .b8 depot[%u];\n  ret;\n}\n";
  snprintf(ptx, sizeof ptx, local_fmt, GL_EMU_MAX_LOCAL_BYTES + 4);
  assert_int_equal(gl_emu_module_load(dev, ptx, strlen(ptx), &m, err, sizeof err),
                   GPULEASE_LOAD_FAILED);
  assert_non_null(strstr(err, "local memory"));
  snprintf(ptx, sizeof ptx, local_fmt, GL_EMU_MAX_LOCAL_BYTES);
  assert_int_equal(gl_emu_module_load(dev, ptx, strlen(ptx), &m, err, sizeof err), GPULEASE_OK);
  gl_emu_module_unload(dev, m);

  static const char shared_fmt[] = ".version 8.0\n.target sm_75\n.address_size 64\n"
                                   ".shared .align 4 .b8 s1[%u];\n"
                                   ".shared .align 4 .b8 s2[%u];\n"
                                   ".visible .entry k()\n{\n  ret;\n}\n";
  snprintf(ptx, sizeof ptx, shared_fmt, GL_EMU_MAX_MODULE_SHARED_BYTES / 2,
           GL_EMU_MAX_MODULE_SHARED_BYTES / 2 + 4);
  assert_int_equal(gl_emu_module_load(dev, ptx, strlen(ptx), &m, err, sizeof err),
                   GPULEASE_LOAD_FAILED);
  assert_non_null(strstr(err, "static shared memory in all"));
  snprintf(ptx, sizeof ptx, shared_fmt, GL_EMU_MAX_MODULE_SHARED_BYTES / 2,
           GL_EMU_MAX_MODULE_SHARED_BYTES / 2);
  assert_int_equal(gl_emu_module_load(dev, ptx, strlen(ptx), &m, err, sizeof err), GPULEASE_OK);
  gl_emu_module_unload(dev, m);
  gl_emu_device_free(dev);
}

#define BOTH(f)                                                                                \
  cmocka_unit_test_prestate(f, NULL), cmocka_unit_test_prestate(f, (void *)"_sm90")
#define SM90(f) cmocka_unit_test_prestate(f, (void *)"_sm90") /* clusters need sm_90 */

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_device_api),
      cmocka_unit_test(test_load_limits),
      BOTH(test_index3d),
      BOTH(test_diverge),
      BOTH(test_wide),
      BOTH(test_reduce),
      BOTH(test_dyn_shared),
      BOTH(test_exit_then_sync),
      BOTH(test_sync_count),
      BOTH(test_deadlock),
      BOTH(test_shfl),
      BOTH(test_votes),
      BOTH(test_atomics),
      BOTH(test_atomic_count_threads),
      BOTH(test_calls),
      BOTH(test_local),
      BOTH(test_globals),
      BOTH(test_sregs),
      BOTH(test_illegal_address),
      BOTH(test_misaligned_trap),
      BOTH(test_deadline),
      BOTH(test_limits),
      BOTH(test_static_shared_per_kernel),
      BOTH(test_vec_sext),
      BOTH(test_generic_shared),
      BOTH(test_named_barrier),
      BOTH(test_shfl_pred),
      BOTH(test_atom16_64),
      BOTH(test_spinlock),
      BOTH(test_determinism),
      BOTH(test_coop_two_phase),
      BOTH(test_coop_rounds),
      BOTH(test_coop_too_large),
      BOTH(test_coop_not_cooperative),
      BOTH(test_coop_envregs),
      BOTH(test_coop_deadlock),
      BOTH(test_occupancy),
      SM90(test_cluster_sum),
      SM90(test_cluster_fixed),
      SM90(test_cluster_bad_dims),
      SM90(test_cluster_ptx),
      SM90(test_cluster_stuck),
      cmocka_unit_test(test_cluster_probe),
      BOTH(test_matmul),
  };
  if (getenv("GL_TEST_FILTER"))
    cmocka_set_test_filter(getenv("GL_TEST_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
