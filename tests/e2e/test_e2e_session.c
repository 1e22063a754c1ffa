/*
 * test_e2e_session.c - sessions end to end: a real gpuleased, its worker
 * processes and libgpulease over loopback QUIC.
 *
 * By default the daemon runs the emulated device (CI has no GPU). With
 * GL_TEST_DEVICE=cuda it runs on the node's real GPUs instead: the same
 * tests, run on the GPU machine by tests/gpu/check.sh. PTX comes from
 * GL_TEST_PTX_DIR, else the checked-in sm_90 corpus
 * (tests/emu/kernels/ptx/sm_90) and the build's kernels/ directory.
 *
 * What is checked: a pipeline over resident data (tiled matmul, then two
 * reductions) against a CPU reference; 10,000 pipelined launches and one
 * SYNC; the order of ops after an injected failure (fail fast, report,
 * acknowledge); a kernel fault; capacity limits; freed, foreign and forged
 * handles; the module caches (context and disk, across a restart); a
 * large chunked transfer; concurrent sessions; buffers' device addresses
 * (gpulease_mem_alloc_address) passed to kernels as raw pointers, with
 * pointer arithmetic, in a lease of its own and in shared leases;
 * gpulease_call (with a retry across a daemon restart) and the renewal
 * helper.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "daemon_harness.h"
#include "lib_check.h"
#include "gpulease/gpulease.h"

/* ======================================================================
 * Helpers
 * ==================================================================== */

static bool on_gpu(void) {
  const char *d = getenv("GL_TEST_DEVICE");
  return d && strcmp(d, "cuda") == 0;
}

static void start(gl_test_daemon *d, const char *emu_vram) {
  assert_int_equal(gl_test_daemon_start(d, on_gpu() ? NULL : emu_vram, NULL), 0);
}



static gpulease_lease lease(gpulease_client *c, uint64_t bytes, uint32_t ttl) {
  gpulease_lease l;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, bytes, ttl, &l, E));
  return l;
}

static gpulease_session *open_session(gpulease_client *c, const gpulease_lease *l) {
  gpulease_session *s = NULL;
  CHECK(gpulease_session_open(c, l, &s, E));
  return s;
}

static char *read_ptx(const char *name, size_t *len) {
  char *p = gl_test_read_ptx(name, len);
  if (!p) fail();
  return p;
}

static gpulease_function kernel(gpulease_session *s, const char *file, const char *name,
                                gpulease_module *mod_out, gpulease_func_info *info) {
  size_t len;
  char *ptx = read_ptx(file, &len);
  gpulease_module m;
  CHECK(gpulease_module_load(s, ptx, len, GPULEASE_IMAGE_PTX, &m, NULL, E));
  free(ptx);
  gpulease_function f;
  CHECK(gpulease_function_get(s, m, name, &f, info, E));
  if (mod_out) *mod_out = m;
  return f;
}

static gpulease_buffer upload(gpulease_session *s, const void *p, size_t n) {
  gpulease_buffer b;
  CHECK(gpulease_mem_alloc(s, n, &b, E));
  CHECK(gpulease_mem_write(s, b, 0, p, n, E));
  return b;
}

static void sync_ok(gpulease_session *s) {
  gpulease_op_failure f = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  CHECK(gpulease_session_sync(s, &f, E));
  assert_int_equal(f.status, GPULEASE_OK);
}

static double now_s(void) { return (double)gl_mono_ns() / 1e9; }

static gpulease_arg i32(int32_t v) { return gpulease_arg_scalar(&v, sizeof v); }
static gpulease_arg f32(float v) { return gpulease_arg_scalar(&v, sizeof v); }
static gpulease_arg buf(gpulease_buffer b) { return gpulease_arg_buffer(b, 0); }

/* ======================================================================
 * A pipeline over resident data
 * ==================================================================== */

/* reduce_tree's order: per block of bs inputs, halve the stride. */
static void ref_reduce(const float *in, int n, int bs, float *out, int blocks) {
  float *s = malloc((size_t)bs * sizeof *s);
  for (int b = 0; b < blocks; b++) {
    for (int t = 0; t < bs; t++) s[t] = b * bs + t < n ? in[b * bs + t] : 0.0f;
    for (int st = bs / 2; st > 0; st >>= 1)
      for (int t = 0; t < st; t++) s[t] += s[t + st];
    out[b] = s[0];
  }
  free(s);
}

static void test_pipeline_matmul_reduce(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "64M");
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease l = lease(c, 16 * MiB, 120);
  gpulease_session *s = open_session(c, &l);

  enum { M = 64, K = 48, N = 80 };
  float *A = malloc(M * K * sizeof *A), *B = malloc(K * N * sizeof *B);
  float *C = malloc(M * N * sizeof *C), *Cref = malloc(M * N * sizeof *Cref);
  srand(7);
  for (int i = 0; i < M * K; i++) A[i] = (float)(rand() % 4);
  for (int i = 0; i < K * N; i++) B[i] = (float)(rand() % 4 - 1);
  for (int r = 0; r < M; r++)
    for (int col = 0; col < N; col++) {
      float acc = 0;
      for (int p = 0; p < K; p++) acc = fmaf(A[r * K + p], B[p * N + col], acc);
      Cref[r * N + col] = acc;
    }

  gpulease_func_info info = {.struct_version = GPULEASE_FUNC_INFO_VERSION};
  gpulease_function mm = kernel(s, "matmul_tiled", "matmul_tiled", NULL, &info);
  assert_int_equal(info.static_shared_bytes, 2 * 16 * 16 * 4);
  assert_int_equal(info.param_count, 6);
  assert_int_equal(info.param_sizes[0], 8);
  assert_int_equal(info.param_sizes[3], 4);
  assert_true(info.max_threads_per_block >= 256);
  assert_true(info.ptx_version >= 60);
  gpulease_function red = kernel(s, "reduce_tree", "reduce_tree", NULL, NULL);

  gpulease_buffer dA = upload(s, A, M * K * sizeof *A), dB = upload(s, B, K * N * sizeof *B);
  gpulease_buffer dC, dP, dSum;
  const int n = M * N, bs = 256, blocks = (n + bs - 1) / bs;
  CHECK(gpulease_mem_alloc(s, n * sizeof(float), &dC, E));
  CHECK(gpulease_mem_alloc(s, blocks * sizeof(float), &dP, E));
  CHECK(gpulease_mem_alloc(s, sizeof(float), &dSum, E));

  /* Three kernels back to back, no waiting in between. */
  gpulease_arg mm_args[] = {buf(dA), buf(dB), buf(dC), i32(M), i32(N), i32(K)};
  const uint32_t mm_grid[3] = {N / 16, M / 16, 1}, mm_block[3] = {16, 16, 1};
  CHECK(gpulease_launch(s, mm, mm_grid, mm_block, 0, mm_args, 6, E));
  gpulease_arg r1[] = {buf(dC), buf(dP), i32(n)};
  const uint32_t g1[3] = {(uint32_t)blocks, 1, 1}, b1[3] = {(uint32_t)bs, 1, 1};
  CHECK(gpulease_launch(s, red, g1, b1, bs * sizeof(float), r1, 3, E));
  gpulease_arg r2[] = {buf(dP), buf(dSum), i32(blocks)};
  const uint32_t g2[3] = {1, 1, 1}, b2[3] = {32, 1, 1};
  CHECK(gpulease_launch(s, red, g2, b2, 32 * sizeof(float), r2, 3, E));
  sync_ok(s);

  float partial[32], sum, pref[32], sref;
  CHECK(gpulease_mem_read(s, dC, 0, C, n * sizeof(float), E));
  CHECK(gpulease_mem_read(s, dP, 0, partial, blocks * sizeof(float), E));
  CHECK(gpulease_mem_read(s, dSum, 0, &sum, sizeof sum, E));
  assert_memory_equal(C, Cref, n * sizeof(float));
  ref_reduce(Cref, n, bs, pref, blocks);
  ref_reduce(pref, blocks, 32, &sref, 1);
  assert_memory_equal(partial, pref, blocks * sizeof(float));
  assert_true(sum == sref);
  printf("matmul %dx%dx%d then reductions: sum %.1f (reference %.1f)\n", M, K, N, sum, sref);

  CHECK(gpulease_session_close(s, E));
  CHECK(gpulease_lease_free(c, &l, E));
  free(A), free(B), free(C), free(Cref);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * Pipelined launches
 * ==================================================================== */

static void test_pipelined_launches(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "64M");
  gpulease_client *c = gl_test_connect(&d, 60000);
  gpulease_lease l = lease(c, 1 * MiB, 300);
  gpulease_session *s = open_session(c, &l);
  gpulease_function saxpy = kernel(s, "saxpy", "saxpy", NULL, NULL);
  enum { N = 256, LAUNCHES = 10000 };
  float ones[N], y[N];
  for (int i = 0; i < N; i++) ones[i] = 1.0f;
  gpulease_buffer x = upload(s, ones, sizeof ones), dy;
  CHECK(gpulease_mem_alloc(s, sizeof y, &dy, E));
  CHECK(gpulease_mem_set(s, dy, 0, 4, 0, N, E));
  gpulease_arg a[] = {i32(N), f32(1.0f), buf(x), buf(dy)};
  const uint32_t g[3] = {N / 64, 1, 1}, b[3] = {64, 1, 1};
  double t0 = now_s();
  for (int i = 0; i < LAUNCHES; i++) CHECK(gpulease_launch(s, saxpy, g, b, 0, a, 4, E));
  sync_ok(s);
  double dt = now_s() - t0;
  CHECK(gpulease_mem_read(s, dy, 0, y, sizeof y, E));
  for (int i = 0; i < N; i++) assert_true(y[i] == (float)LAUNCHES);
  printf("%d pipelined launches and one SYNC: %.2f s (%.0f launches/s)\n", LAUNCHES, dt,
         LAUNCHES / dt);
  CHECK(gpulease_session_close(s, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* y += 1 * x over n floats (x all ones, y zeroed), launched as one block:
 * the kernel, y, and the parameter lists of a good launch and of one that
 * names a forged buffer. */
typedef struct saxpy_case {
  gpulease_function fn;
  gpulease_buffer y;
  gpulease_arg good[4], bad[4];
} saxpy_case;

static saxpy_case saxpy_setup(gpulease_session *s, int n) {
  saxpy_case k;
  k.fn = kernel(s, "saxpy", "saxpy", NULL, NULL);
  float *ones = malloc((size_t)n * sizeof *ones);
  assert_non_null(ones);
  for (int i = 0; i < n; i++) ones[i] = 1.0f;
  gpulease_buffer x = upload(s, ones, (size_t)n * sizeof *ones);
  free(ones);
  CHECK(gpulease_mem_alloc(s, (uint64_t)n * 4, &k.y, E));
  CHECK(gpulease_mem_set(s, k.y, 0, 4, 0, (uint64_t)n, E));
  gpulease_arg good[] = {i32(n), f32(1.0f), buf(x), buf(k.y)};
  gpulease_arg bad[] = {i32(n), f32(1.0f), buf(0xB1DEADBEEFull), buf(k.y)};
  memcpy(k.good, good, sizeof good);
  memcpy(k.bad, bad, sizeof bad);
  return k;
}

/* gpulease_launch_sync: launch and wait in one call, after pipelined
 * launches too, with batching on and off; its failure is the session's,
 * reported and acknowledged as sync's. */
static void test_launch_sync(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "64M");
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease l = lease(c, 1 * MiB, 120);
  gpulease_session *s = open_session(c, &l);
  enum { N = 64 };
  float y[N];
  saxpy_case k = saxpy_setup(s, N);
  gpulease_function saxpy = k.fn;
  gpulease_buffer dy = k.y;
  const gpulease_arg *good = k.good, *bad = k.bad;
  const uint32_t g[3] = {1, 1, 1}, b[3] = {N, 1, 1};
  gpulease_op_failure f = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  gpulease_error err;
  for (int i = 0; i < 5; i++) {
    CHECK(gpulease_launch_sync(s, saxpy, g, b, 0, good, 4, &f, E));
    assert_int_equal(f.status, GPULEASE_OK);
  }
  /* Pipelined launches before it are waited for too. */
  for (int i = 0; i < 3; i++) CHECK(gpulease_launch(s, saxpy, g, b, 0, good, 4, E));
  CHECK(gpulease_launch_sync(s, saxpy, g, b, 0, good, 4, &f, E));
  CHECK(gpulease_mem_read(s, dy, 0, y, sizeof y, E));
  for (int i = 0; i < N; i++) assert_true(y[i] == 9.0f);
  /* A failing launch: reported by the call itself, with its seq. */
  assert_int_equal(gpulease_launch_sync(s, saxpy, g, b, 0, bad, 4, &f, &err),
                   GPULEASE_INVALID_HANDLE);
  assert_int_equal(f.status, GPULEASE_INVALID_HANDLE);
  assert_string_equal(f.op_name, "LAUNCH");
  assert_true(f.seq > 0);
  /* Fails fast until acknowledged, then goes on. */
  assert_int_equal(gpulease_launch_sync(s, saxpy, g, b, 0, good, 4, &f, &err),
                   GPULEASE_INVALID_HANDLE);
  CHECK(gpulease_session_acknowledge(s, f.seq, E));
  /* Batching off: two requests, same result. */
  CHECK(gpulease_session_set_batch(s, 1, E));
  CHECK(gpulease_launch_sync(s, saxpy, g, b, 0, good, 4, &f, E));
  CHECK(gpulease_mem_read(s, dy, 0, y, sizeof y, E));
  for (int i = 0; i < N; i++) assert_true(y[i] == 10.0f);
  /* Arguments are checked before anything is sent. */
  const uint32_t zero[3] = {0, 1, 1};
  assert_int_equal(gpulease_launch_sync(s, saxpy, zero, b, 0, good, 4, &f, &err),
                   GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(f.status, GPULEASE_INVALID_ARGUMENT);
  sync_ok(s);
  CHECK(gpulease_session_close(s, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * Failures: order, fail fast, acknowledge; a kernel fault
 * ==================================================================== */

static void test_failure_ordering(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "64M");
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease l = lease(c, 1 * MiB, 120);
  gpulease_session *s = open_session(c, &l);
  enum { N = 64 };
  float y[N];
  saxpy_case k = saxpy_setup(s, N);
  gpulease_function saxpy = k.fn;
  gpulease_buffer dy = k.y;
  const gpulease_arg *good = k.good, *bad = k.bad;
  const uint32_t g[3] = {1, 1, 1}, b[3] = {N, 1, 1};
  /* ops 1-6 were the setup; launches 7, 8 run; 9 fails; 10, 11 never run. */
  CHECK(gpulease_launch(s, saxpy, g, b, 0, good, 4, E));
  CHECK(gpulease_launch(s, saxpy, g, b, 0, good, 4, E));
  CHECK(gpulease_launch(s, saxpy, g, b, 0, bad, 4, E)); /* pipelined: reported later */
  CHECK(gpulease_launch(s, saxpy, g, b, 0, good, 4, E));
  CHECK(gpulease_launch(s, saxpy, g, b, 0, good, 4, E));
  gpulease_op_failure f = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  gpulease_error err;
  assert_int_equal(gpulease_session_sync(s, &f, &err), GPULEASE_INVALID_HANDLE);
  assert_int_equal(f.status, GPULEASE_INVALID_HANDLE);
  assert_string_equal(f.op_name, "LAUNCH");
  uint64_t failed = f.seq;
  printf("failure reported: %s seq %llu: %s\n", f.op_name, (unsigned long long)f.seq,
         err.message);
  /* Still failing fast: a read does not run. */
  assert_int_equal(gpulease_mem_read(s, dy, 0, y, sizeof y, &err), GPULEASE_INVALID_HANDLE);
  assert_non_null(strstr(err.message, "failed earlier"));
  assert_int_equal(gpulease_session_sync(s, &f, &err), GPULEASE_INVALID_HANDLE);
  assert_true(f.seq == failed);
  /* Acknowledged: the session goes on, with exactly two launches done. */
  CHECK(gpulease_session_acknowledge(s, failed, E));
  CHECK(gpulease_mem_read(s, dy, 0, y, sizeof y, E));
  for (int i = 0; i < N; i++) assert_true(y[i] == 2.0f);
  CHECK(gpulease_launch(s, saxpy, g, b, 0, good, 4, E));
  sync_ok(s);
  CHECK(gpulease_mem_read(s, dy, 0, y, sizeof y, E));
  assert_true(y[0] == 3.0f);
  /* A launch whose parameters do not match the kernel is refused too. */
  gpulease_arg short_list[] = {i32(N), f32(1.0f)};
  CHECK(gpulease_launch(s, saxpy, g, b, 0, short_list, 2, E));
  assert_int_equal(gpulease_session_sync(s, &f, &err), GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "takes 4 parameters"));
  CHECK(gpulease_session_acknowledge(s, f.seq, E));
  CHECK(gpulease_session_close(s, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

static const char k_ptx_fault[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry poke(.param .u64 p)\n{\n"
    "  .reg .b64 %rd<2>;\n  .reg .b32 %r<2>;\n"
    "  ld.param.u64 %rd1, [p];\n  mov.u32 %r1, 7;\n  st.global.u32 [%rd1], %r1;\n  ret;\n}\n";

static void test_kernel_fault(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "64M");
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease l = lease(c, 1 * MiB, 120);
  gpulease_session *s1 = open_session(c, &l), *s2 = open_session(c, &l);
  gpulease_module m;
  CHECK(gpulease_module_load(s1, k_ptx_fault, sizeof k_ptx_fault - 1, GPULEASE_IMAGE_PTX, &m,
                             NULL, E));
  gpulease_function poke;
  CHECK(gpulease_function_get(s1, m, "poke", &poke, NULL, E));
  gpulease_buffer b2;
  CHECK(gpulease_mem_alloc(s2, 4096, &b2, E));
  uint64_t bad = 16; /* not device memory */
  gpulease_arg a[] = {gpulease_arg_scalar(&bad, 8)};
  const uint32_t one[3] = {1, 1, 1};
  CHECK(gpulease_launch(s1, poke, one, one, 0, a, 1, E));
  gpulease_op_failure f = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  gpulease_error err;
  assert_int_equal(gpulease_session_sync(s1, &f, &err), GPULEASE_LAUNCH_FAILED);
  printf("fault: %s seq %llu: %s\n", f.op_name, (unsigned long long)f.seq, err.message);
  assert_string_equal(f.op_name, "LAUNCH");
  assert_non_null(strstr(err.message, "CUDA_ERROR_ILLEGAL_ADDRESS"));
  assert_non_null(strstr(err.message, "close it (SESSION_CLOSE) and open a new session"));
  /* The context is lost for every session of the lease: they ended. */
  assert_int_equal(gpulease_session_sync(s2, &f, &err), GPULEASE_LAUNCH_FAILED);
  assert_non_null(strstr(err.message, "ended when the lease's CUDA context was lost"));
  assert_int_equal(f.op, 0);
  /* Their failure cannot be acknowledged; the message says what to do. */
  assert_int_equal(gpulease_session_acknowledge(s1, UINT64_MAX, &err), GPULEASE_LAUNCH_FAILED);
  assert_non_null(strstr(err.message, "open a new session"));
  /* The lease starts over at once, the old sessions still open: a fresh
   * context (the worker is replaced) with all of the lease's VRAM. */
  gpulease_session *s3 = open_session(c, &l);
  gpulease_buffer b3;
  CHECK(gpulease_mem_alloc(s3, 1 * MiB, &b3, E));
  CHECK(gpulease_session_close(s1, E));
  CHECK(gpulease_session_close(s2, E));
  CHECK(gpulease_session_close(s3, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * Capacity and handles
 * ==================================================================== */

static void test_capacity(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "64M");
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease l = lease(c, 1 * MiB, 120);
  gpulease_session *s = open_session(c, &l), *t = open_session(c, &l);
  gpulease_buffer a, b;
  gpulease_error err;
  gpulease_op_failure f = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  CHECK(gpulease_mem_alloc(s, 768 * 1024, &a, E));
  /* The lease's VRAM is shared by its sessions. */
  assert_int_equal(gpulease_mem_alloc(t, 512 * 1024, &b, &err), GPULEASE_CAPACITY_EXCEEDED);
  assert_non_null(strstr(err.message, "free"));
  printf("over the lease: %s\n", err.message);
  /* It is t's failure now: later ops fail fast until acknowledged. */
  assert_int_equal(gpulease_mem_alloc(t, 1024, &b, &err), GPULEASE_CAPACITY_EXCEEDED);
  assert_int_equal(gpulease_session_sync(t, &f, &err), GPULEASE_CAPACITY_EXCEEDED);
  assert_string_equal(f.op_name, "MEM_ALLOC");
  CHECK(gpulease_session_acknowledge(t, f.seq, E));
  CHECK(gpulease_mem_alloc(t, 256 * 1024, &b, E)); /* exactly the rest */
  CHECK(gpulease_mem_free(s, a, E));
  sync_ok(s); /* sessions are not ordered with each other: wait for the free */
  CHECK(gpulease_mem_alloc(t, 768 * 1024, &a, E));
  CHECK(gpulease_session_close(s, E));
  CHECK(gpulease_session_close(t, E)); /* frees t's buffers */

  /* 64 sessions a lease, then CAPACITY_EXCEEDED. */
  gpulease_session *many[64];
  for (int i = 0; i < 64; i++) many[i] = open_session(c, &l);
  gpulease_session *extra = NULL;
  assert_int_equal(gpulease_session_open(c, &l, &extra, &err), GPULEASE_CAPACITY_EXCEEDED);
  for (int i = 0; i < 64; i++) CHECK(gpulease_session_close(many[i], E));
  gpulease_session *again = open_session(c, &l);
  CHECK(gpulease_mem_alloc(again, 1 * MiB, &a, E));
  CHECK(gpulease_session_close(again, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* Expects the op's status, then acknowledges the failure it left. */
static void expect_then_ack(gpulease_session *s, gpulease_status got, gpulease_status want,
                            const gpulease_error *err) {
  if (got != want) fprintf(stderr, "got %s: %s\n", gpulease_status_name(got), err->message);
  assert_int_equal(got, want);
  gpulease_op_failure f = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  gpulease_error e;
  assert_int_equal(gpulease_session_sync(s, &f, &e), want);
  CHECK(gpulease_session_acknowledge(s, f.seq, E));
}

static void test_handle_misuse(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "64M");
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease l = lease(c, 1 * MiB, 120), l2 = lease(c, 1 * MiB, 120);
  gpulease_session *s = open_session(c, &l), *t = open_session(c, &l);
  gpulease_session *u = open_session(c, &l2);
  gpulease_buffer bs, bt, bu;
  CHECK(gpulease_mem_alloc(s, 4096, &bs, E));
  CHECK(gpulease_mem_alloc(t, 4096, &bt, E));
  CHECK(gpulease_mem_alloc(u, 4096, &bu, E));
  uint8_t data[64] = {1};
  gpulease_error err;
  /* Another session's buffer, on the same lease and on another one. */
  expect_then_ack(s, gpulease_mem_write(s, bt, 0, data, sizeof data, &err),
                  GPULEASE_INVALID_HANDLE, &err);
  assert_non_null(strstr(err.message, "not a buffer of session"));
  expect_then_ack(s, gpulease_mem_write(s, bu, 0, data, sizeof data, &err),
                  GPULEASE_INVALID_HANDLE, &err);
  /* Forged. */
  expect_then_ack(s, gpulease_mem_read(s, 0xB100000000001234ull, 0, data, 8, &err),
                  GPULEASE_INVALID_HANDLE, &err);
  /* Freed. */
  gpulease_buffer gone;
  CHECK(gpulease_mem_alloc(s, 4096, &gone, E));
  CHECK(gpulease_mem_free(s, gone, E));
  expect_then_ack(s, gpulease_mem_write(s, gone, 0, data, sizeof data, &err),
                  GPULEASE_INVALID_HANDLE, &err);
  /* A module handle where a buffer belongs, and the other way round. */
  gpulease_module m;
  gpulease_function saxpy = kernel(s, "saxpy", "saxpy", &m, NULL);
  expect_then_ack(s, gpulease_mem_read(s, m, 0, data, 8, &err), GPULEASE_INVALID_HANDLE, &err);
  gpulease_function fn;
  expect_then_ack(s, gpulease_function_get(s, bs, "saxpy", &fn, NULL, &err),
                  GPULEASE_INVALID_HANDLE, &err);
  /* A kernel that is not in the module. */
  expect_then_ack(s, gpulease_function_get(s, m, "nope", &fn, NULL, &err), GPULEASE_NOT_FOUND,
                  &err);
  /* A function of an unloaded module. */
  CHECK(gpulease_module_unload(s, m, E));
  int32_t n = 1;
  float a = 1;
  gpulease_arg args[] = {gpulease_arg_scalar(&n, 4), gpulease_arg_scalar(&a, 4), buf(bs),
                         buf(bs)};
  const uint32_t one[3] = {1, 1, 1};
  CHECK(gpulease_launch(s, saxpy, one, one, 0, args, 4, E));
  gpulease_op_failure f = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  assert_int_equal(gpulease_session_sync(s, &f, &err), GPULEASE_INVALID_HANDLE);
  CHECK(gpulease_session_acknowledge(s, f.seq, E));
  /* Ranges: past the end of a buffer. */
  expect_then_ack(s, gpulease_mem_write(s, bs, 4090, data, 8, &err), GPULEASE_INVALID_ARGUMENT,
                  &err);
  /* The wrong secret opens nothing. */
  gpulease_lease wrong = l;
  wrong.secret[0] ^= 1;
  gpulease_session *x = NULL;
  assert_int_equal(gpulease_session_open(c, &wrong, &x, &err), GPULEASE_UNAUTHORIZED);
  /* Still usable after all that. */
  CHECK(gpulease_mem_write(s, bs, 0, data, sizeof data, E));
  CHECK(gpulease_session_close(s, E));
  CHECK(gpulease_session_close(t, E));
  CHECK(gpulease_session_close(u, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * Module caches
 * ==================================================================== */

static void test_module_cache(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "64M");
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease l = lease(c, 1 * MiB, 120);
  gpulease_session *s = open_session(c, &l), *t = open_session(c, &l);
  size_t len;
  char *ptx = read_ptx("saxpy", &len);
  gpulease_module m1, m2, m3;
  gpulease_module_source src;
  CHECK(gpulease_module_load(s, ptx, len, GPULEASE_IMAGE_PTX, &m1, &src, E));
  assert_int_equal(src, GPULEASE_MODULE_LOADED);
  CHECK(gpulease_module_load(t, ptx, len, GPULEASE_IMAGE_AUTO, &m2, &src, E));
  assert_int_equal(src, GPULEASE_MODULE_IN_CONTEXT);
  assert_true(m1 != m2); /* each session has its own handle */
  CHECK(gpulease_session_close(s, E));
  CHECK(gpulease_session_close(t, E));
  gpulease_client_close(c);

  /* A restarted daemon finds the compiled PTX on disk. */
  assert_int_equal(gl_test_daemon_restart(&d), 0);
  c = gl_test_connect(&d, 30000);
  l = lease(c, 1 * MiB, 120);
  s = open_session(c, &l);
  CHECK(gpulease_module_load(s, ptx, len, GPULEASE_IMAGE_PTX, &m3, &src, E));
  assert_int_equal(src, GPULEASE_MODULE_DISK_CACHE);
  gpulease_function f;
  CHECK(gpulease_function_get(s, m3, "saxpy", &f, NULL, E));
  CHECK(gpulease_session_close(s, E));
  free(ptx);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * Large transfers
 * ==================================================================== */

static uint64_t g_progress_done, g_progress_total;
static int g_progress_calls;

static void on_progress(uint64_t done, uint64_t total, void *user) {
  (void)user;
  assert_true(done >= g_progress_done);
  g_progress_done = done;
  g_progress_total = total;
  g_progress_calls++;
}

static uint64_t fnv(const uint8_t *p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static void test_large_transfer(void **state) {
  (void)state;
  uint64_t bytes = 64 * MiB;
  const char *env = getenv("GL_TEST_BIG_BYTES");
  if (env) bytes = strtoull(env, NULL, 0);
  gl_test_daemon d;
  start(&d, "192M");
  gpulease_client *c = gl_test_connect(&d, 120000);
  gpulease_lease l = lease(c, bytes, 300);
  gpulease_session *s = open_session(c, &l);
  /* Pieces of 256 MiB through one buffer, so the test needs no more host
   * memory than that for any size. */
  const uint64_t piece = bytes < 256 * MiB ? bytes : 256 * MiB;
  uint8_t *p = malloc(piece), *q = malloc(piece);
  assert_non_null(p);
  assert_non_null(q);
  gpulease_buffer b;
  CHECK(gpulease_mem_alloc(s, bytes, &b, E));
  gpulease_session_set_progress(s, on_progress, NULL);
  uint64_t h_in = 0xcbf29ce484222325ull, h_out = h_in, x = 88172645463325252ull;
  double t0 = now_s();
  for (uint64_t off = 0; off < bytes; off += piece) {
    for (uint64_t i = 0; i < piece; i += 8) { /* xorshift */
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      memcpy(p + i, &x, 8);
    }
    h_in = fnv(p, piece, h_in);
    g_progress_done = 0;
    CHECK(gpulease_mem_write(s, b, off, p, piece, E));
    assert_true(g_progress_done == piece && g_progress_total == piece);
  }
  double tw = now_s() - t0;
  t0 = now_s();
  for (uint64_t off = 0; off < bytes; off += piece) {
    g_progress_done = 0;
    CHECK(gpulease_mem_read(s, b, off, q, piece, E));
    h_out = fnv(q, piece, h_out);
  }
  double tr = now_s() - t0;
  assert_true(g_progress_calls > 2);
  printf("%.0f MiB round trip: write %.2f GB/s, read %.2f GB/s, checksum %016llx %s\n",
         (double)bytes / MiB, bytes / tw / 1e9, bytes / tr / 1e9, (unsigned long long)h_out,
         h_in == h_out ? "matches" : "DIFFERS");
  assert_true(h_in == h_out);
  CHECK(gpulease_session_close(s, E));
  free(p);
  free(q);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * Concurrent sessions
 * ==================================================================== */

typedef struct worker_arg {
  const gl_test_daemon *d;
  gpulease_lease lease;
  float scale;
  int ok;
} worker_arg;

static void *session_thread(void *p) {
  worker_arg *wa = p;
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = wa->d->addr;
  o.pin_sha256 = wa->d->fingerprint;
  o.timeout_ms = 30000;
  gpulease_client *c = NULL;
  gpulease_session *s = NULL;
  gpulease_error err;
  enum { N = 128, ROUNDS = 300 };
  float ones[N], y[N];
  for (int i = 0; i < N; i++) ones[i] = 1.0f;
  size_t len;
  uint8_t *ptx = NULL;
  char path[1100];
  const char *src = getenv("GL_TEST_SRC_DIR");
  const char *dir = getenv("GL_TEST_PTX_DIR");
  if (dir) snprintf(path, sizeof path, "%s/saxpy.ptx", dir);
  else snprintf(path, sizeof path, "%s/tests/emu/kernels/ptx/sm_90/saxpy.ptx", src ? src : ".");
  if (gl_read_file(path, 1 << 24, &ptx, &len) != 0) return NULL;
  gpulease_module m;
  gpulease_function f;
  gpulease_buffer x, dy;
  gpulease_op_failure fl = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  if (gpulease_client_connect(&o, &c, &err) || gpulease_session_open(c, &wa->lease, &s, &err) ||
      gpulease_module_load(s, ptx, len, GPULEASE_IMAGE_PTX, &m, NULL, &err) ||
      gpulease_function_get(s, m, "saxpy", &f, NULL, &err) ||
      gpulease_mem_alloc(s, sizeof ones, &x, &err) ||
      gpulease_mem_write(s, x, 0, ones, sizeof ones, &err) ||
      gpulease_mem_alloc(s, sizeof y, &dy, &err) || gpulease_mem_set(s, dy, 0, 4, 0, N, &err)) {
    fprintf(stderr, "session thread: %s\n", err.message);
    goto out;
  }
  int32_t n = N;
  gpulease_arg a[] = {gpulease_arg_scalar(&n, 4), gpulease_arg_scalar(&wa->scale, 4),
                      gpulease_arg_buffer(x, 0), gpulease_arg_buffer(dy, 0)};
  const uint32_t g[3] = {2, 1, 1}, b[3] = {64, 1, 1};
  for (int i = 0; i < ROUNDS; i++)
    if (gpulease_launch(s, f, g, b, 0, a, 4, &err)) goto out;
  if (gpulease_session_sync(s, &fl, &err) || gpulease_mem_read(s, dy, 0, y, sizeof y, &err))
    goto out;
  wa->ok = 1;
  for (int i = 0; i < N; i++) wa->ok &= y[i] == wa->scale * ROUNDS;
out:
  if (s) gpulease_session_close(s, NULL);
  gpulease_client_close(c);
  free(ptx);
  return NULL;
}

static void test_concurrent_sessions(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "64M");
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease l = lease(c, 1 * MiB, 120);
  worker_arg wa[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    wa[i] = (worker_arg){.d = &d, .lease = l, .scale = (float)(i + 1)};
    assert_int_equal(pthread_create(&th[i], NULL, session_thread, &wa[i]), 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 4; i++) assert_int_equal(wa[i].ok, 1);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * GPU_SUBMIT beside sessions
 * ==================================================================== */

/* A GPU_SUBMIT of the build's iota.ptx (its bytes in *ptx) running kernel
 * `name`: 256 threads, 1 KiB out. */
static gpulease_status submit_named(gpulease_client *c, const gpulease_lease *l,
                                    const uint8_t *ptx, size_t len, const char *name,
                                    gpulease_error *err) {
  gpulease_submit_desc sd;
  gpulease_submit_desc_default(&sd);
  sd.image = ptx;
  sd.image_size = len;
  sd.kernel = name;
  sd.block[0] = 256;
  sd.output_size = 1024;
  gpulease_submit_result r = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
  gpulease_status st = gpulease_submit(c, l, &sd, &r, err);
  if (st == GPULEASE_OK) {
    const float *out = r.output;
    for (int i = 0; i < 256; i++) assert_true(out[i] == (float)(i + 1));
    gpulease_submit_result_release(&r);
  }
  return st;
}

/* GPU_SUBMIT runs as the lease's implicit session: concurrently with the
 * lease's sessions, a failed one leaving the next GPU_SUBMITs and the
 * sessions alone, and sharing its module with a session that loads the
 * same image. */
static void test_submit_beside_sessions(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "64M");
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease l = lease(c, 1 * MiB, 120);
  const char *bin = getenv("GL_TEST_BIN_DIR");
  char path[512];
  snprintf(path, sizeof path, "%s/kernels/iota.ptx", bin ? bin : ".");
  uint8_t *ptx = NULL;
  size_t len = 0;
  assert_int_equal(gl_read_file(path, 1 << 20, &ptx, &len), 0);
  /* GPU_SUBMIT's iota writes the region's first KiB: a buffer there keeps
   * the sessions' buffers out of its way. */
  gpulease_session *guard = open_session(c, &l);
  gpulease_buffer first;
  uint64_t first_at = 1;
  CHECK(gpulease_mem_alloc_region(guard, 4096, &first, &first_at, E));
  assert_int_equal(first_at, 0);
  worker_arg wa[2];
  pthread_t th[2];
  for (int i = 0; i < 2; i++) {
    wa[i] = (worker_arg){.d = &d, .lease = l, .scale = (float)(i + 2)};
    assert_int_equal(pthread_create(&th[i], NULL, session_thread, &wa[i]), 0);
  }
  int failed = 0;
  for (int i = 0; i < 40; i++) {
    gpulease_error err;
    if (i % 8 == 3) {
      assert_int_equal(submit_named(c, &l, ptx, len, "no_such_kernel", &err),
                       GPULEASE_LAUNCH_FAILED);
      assert_non_null(strstr(err.message, "CUDA_ERROR_NOT_FOUND"));
      failed++;
    } else {
      gpulease_status st = submit_named(c, &l, ptx, len, "iota", &err);
      if (st != GPULEASE_OK) fail_msg("GPU_SUBMIT %d: %s: %s", i, gpulease_status_name(st),
                                      err.message);
    }
  }
  assert_int_equal(failed, 5);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 2; i++) assert_int_equal(wa[i].ok, 1);
  /* The GPU_SUBMITs keep iota loaded in the lease's context: a session
   * loading the same bytes finds it there and runs it. */
  gpulease_session *s = open_session(c, &l);
  gpulease_module m;
  gpulease_module_source src = GPULEASE_MODULE_LOADED;
  CHECK(gpulease_module_load(s, ptx, len, GPULEASE_IMAGE_PTX, &m, &src, E));
  assert_int_equal(src, GPULEASE_MODULE_IN_CONTEXT);
  gpulease_function f;
  CHECK(gpulease_function_get(s, m, "iota", &f, NULL, E));
  gpulease_buffer out;
  CHECK(gpulease_mem_alloc(s, 1024, &out, E));
  gpulease_arg a[] = {gpulease_arg_buffer(out, 0)};
  const uint32_t g[3] = {1, 1, 1}, b[3] = {256, 1, 1};
  CHECK(gpulease_launch(s, f, g, b, 0, a, 1, E));
  sync_ok(s);
  float y[256];
  CHECK(gpulease_mem_read(s, out, 0, y, sizeof y, E));
  for (int i = 0; i < 256; i++) assert_true(y[i] == (float)(i + 1));
  CHECK(gpulease_session_close(s, E));
  CHECK(gpulease_session_close(guard, E));
  gl_test_run_iota(c, &l);
  CHECK(gpulease_lease_free(c, &l, E));
  free(ptx);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * Device addresses (MEM_ALLOC flags bit 0): raw pointers into buffers
 * ==================================================================== */

/* Two buffers of lease l allocated with their device addresses: both give
 * the same region base (address - region_offset, not 0); kernels given a
 * raw address plus an offset as an 8-byte scalar (not a buffer argument)
 * write exactly where the arithmetic says. Returns the region base. */
static uint64_t raw_pointer_kernels(gpulease_client *c, const gpulease_lease *l) {
  gpulease_session *s = open_session(c, l);
  enum { N = 1024 }; /* floats a buffer */
  gpulease_buffer a, b, x;
  uint64_t off_a = 1, off_b = 1, addr_a = 0, addr_b = 0, addr_x = 0;
  CHECK(gpulease_mem_alloc_address(s, N * 4, &a, &off_a, &addr_a, E));
  CHECK(gpulease_mem_alloc_address(s, N * 4, &b, &off_b, &addr_b, E));
  CHECK(gpulease_mem_alloc_address(s, 256, &x, NULL, &addr_x, E)); /* region_offset NULL */
  const uint64_t base = addr_a - off_a;
  printf("lease %llu: region base 0x%llx, buffers at +0x%llx and +0x%llx\n",
         (unsigned long long)l->id, (unsigned long long)base, (unsigned long long)off_a,
         (unsigned long long)off_b);
  assert_true(addr_a != 0 && base != 0);
  assert_true(addr_a > off_a); /* base = addr - offset does not wrap */
  assert_true(off_a != off_b);
  assert_int_equal(addr_b - off_b, base);
  assert_int_equal(addr_x % 256, 0);
  assert_true(addr_x - base < l->vram_bytes);
  /* The offsets are the ones gpulease_mem_alloc_region gives too. */
  gpulease_buffer y;
  uint64_t off_y;
  CHECK(gpulease_mem_alloc_region(s, 256, &y, &off_y, E));
  assert_true(off_y % 256 == 0 && off_y != off_a && off_y != off_b && off_y != addr_x - base);

  float ha[N], hb[N];
  for (int i = 0; i < N; i++) ha[i] = (float)(i + 1), hb[i] = -1.0f;
  CHECK(gpulease_mem_write(s, a, 0, ha, sizeof ha, E));
  CHECK(gpulease_mem_write(s, b, 0, hb, sizeof hb, E));
  const uint32_t g[3] = {1, 1, 1}, blk[3] = {32, 1, 1};
  /* scale(x, alpha, n): x[i] *= alpha for i < n, x = a's address + 64 floats */
  gpulease_function scale = kernel(s, "scale", "scale", NULL, NULL);
  uint64_t pa = addr_a + 64 * sizeof(float);
  float alpha = 3.0f;
  int32_t n = 16;
  gpulease_arg sa[] = {gpulease_arg_scalar(&pa, 8), gpulease_arg_scalar(&alpha, sizeof alpha),
                       gpulease_arg_scalar(&n, sizeof n)};
  CHECK(gpulease_launch(s, scale, g, blk, 0, sa, 3, E));
  /* iota(out): out[i] = i + 1, out = b's address + 100 floats, reached from
   * a's address: the buffers' addresses differ as their region offsets do. */
  gpulease_function iota = kernel(s, "iota", "iota", NULL, NULL);
  uint64_t pb = addr_a + (off_b - off_a) + 100 * sizeof(float);
  assert_int_equal(pb, addr_b + 100 * sizeof(float));
  gpulease_arg ia[] = {gpulease_arg_scalar(&pb, 8)};
  CHECK(gpulease_launch(s, iota, g, blk, 0, ia, 1, E));
  sync_ok(s);
  float ra[N], rb[N];
  CHECK(gpulease_mem_read(s, a, 0, ra, sizeof ra, E));
  CHECK(gpulease_mem_read(s, b, 0, rb, sizeof rb, E));
  for (int i = 0; i < N; i++) {
    float want = i >= 64 && i < 64 + 16 ? 3.0f * (float)(i + 1) : (float)(i + 1);
    if (ra[i] != want) fail_msg("a[%d] = %g, want %g", i, (double)ra[i], (double)want);
    want = i >= 100 && i < 100 + 32 ? (float)(i - 100 + 1) : -1.0f;
    if (rb[i] != want) fail_msg("b[%d] = %g, want %g", i, (double)rb[i], (double)want);
  }
  /* The library's own checks: nothing sent. */
  gpulease_error err;
  gpulease_buffer z;
  uint64_t za;
  assert_int_equal(gpulease_mem_alloc_address(s, 0, &z, NULL, &za, &err),
                   GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(gpulease_mem_alloc_address(s, 64, &z, NULL, NULL, &err),
                   GPULEASE_INVALID_ARGUMENT);
  /* Freed, the range is handed out again: at the same address. */
  CHECK(gpulease_mem_free(s, x, E));
  uint64_t addr_x2 = 0;
  CHECK(gpulease_mem_alloc_address(s, 256, &x, NULL, &addr_x2, E));
  assert_int_equal(addr_x2, addr_x);
  sync_ok(s);
  CHECK(gpulease_session_close(s, E));
  return base;
}

static void test_mem_alloc_address(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "64M");
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease l = lease(c, 1 * MiB, 120);
  (void)raw_pointer_kernels(c, &l);
  CHECK(gpulease_lease_free(c, &l, E));
  /* Shared leases: an address in the context they share, each lease's
   * region apart from the other's. */
  gpulease_lease_opts o = {.struct_version = GPULEASE_LEASE_OPTS_VERSION,
                           .lease_class = GPULEASE_CLASS_SHARED};
  gpulease_lease sh[2];
  for (int i = 0; i < 2; i++)
    CHECK(gpulease_lease_alloc_opts(c, GPULEASE_ANY_GPU, 1 * MiB, 120, &o, &sh[i], E));
  uint64_t b0 = raw_pointer_kernels(c, &sh[0]), b1 = raw_pointer_kernels(c, &sh[1]);
  assert_true(b0 + sh[0].vram_bytes <= b1 || b1 + sh[1].vram_bytes <= b0);
  for (int i = 0; i < 2; i++) CHECK(gpulease_lease_free(c, &sh[i], E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * gpulease_call and the renewal helper
 * ==================================================================== */

static void test_call(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "64M");
  gpulease_client *c = gl_test_connect(&d, 30000);
  size_t len;
  char *ptx = read_ptx("vector_add", &len);
  enum { N = 1000 };
  float a[N], b[N], out[N];
  for (int i = 0; i < N; i++) a[i] = (float)i, b[i] = 2.0f * (float)i;
  int32_t n = N;
  gpulease_call_arg args[] = {{.kind = GPULEASE_CALL_IN, .data = a, .size = sizeof a},
                              {.kind = GPULEASE_CALL_IN, .data = b, .size = sizeof b},
                              {.kind = GPULEASE_CALL_OUT, .out = out, .size = sizeof out},
                              {.kind = GPULEASE_CALL_SCALAR, .data = &n, .size = 4}};
  gpulease_call_desc cd;
  gpulease_call_desc_default(&cd);
  cd.image = ptx;
  cd.image_size = len;
  cd.kernel = "vector_add";
  cd.grid[0] = (N + 255) / 256;
  cd.block[0] = 256;
  cd.args = args;
  cd.arg_count = 4;
  CHECK(gpulease_call(c, NULL, &cd, NULL, E)); /* a fresh lease, freed after */
  for (int i = 0; i < N; i++) assert_true(out[i] == 3.0f * (float)i);
  gpulease_inventory *inv = calloc(1, sizeof *inv);
  gpulease_inventory_init(inv);
  CHECK(gpulease_inventory_get(c, inv, E));
  assert_int_equal(inv->gpus[0].active_leases, 0);

  /* The daemon restarts under the client: the call reconnects and retries. */
  assert_int_equal(gl_test_daemon_restart(&d), 0);
  memset(out, 0, sizeof out);
  cd.backoff_ms = 50;
  CHECK(gpulease_call(c, NULL, &cd, NULL, E));
  for (int i = 0; i < N; i++) assert_true(out[i] == 3.0f * (float)i);
  free(inv);
  free(ptx);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

static int g_lost_calls;
static gpulease_status g_lost_status;

static void on_lost(const gpulease_lease *l, gpulease_status st, const char *msg, void *user) {
  (void)l, (void)user;
  printf("renewer: lease taken back: %s: %s\n", gpulease_status_name(st), msg);
  g_lost_status = st;
  g_lost_calls++;
}

static void test_renewer(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "64M");
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease l = lease(c, 1 * MiB, 2);
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = d.addr;
  o.pin_sha256 = d.fingerprint;
  gpulease_renewer *r = NULL;
  CHECK(gpulease_renewer_start(&o, &l, 2, on_lost, NULL, &r, E));
  sleep(5); /* two and a half TTLs */
  CHECK(gpulease_lease_query(c, &l, E));
  assert_true(l.remaining_ms > 0);
  CHECK(gpulease_renewer_status(r, E));
  CHECK(gpulease_lease_free(c, &l, E));
  for (int i = 0; i < 50 && !g_lost_calls; i++) usleep(100000);
  assert_int_equal(g_lost_calls, 1);
  assert_int_equal(g_lost_status, GPULEASE_NOT_FOUND);
  gpulease_error err;
  assert_int_equal(gpulease_renewer_status(r, &err), GPULEASE_NOT_FOUND);
  gpulease_renewer_stop(r);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pipeline_matmul_reduce),
      cmocka_unit_test(test_pipelined_launches),
      cmocka_unit_test(test_launch_sync),
      cmocka_unit_test(test_failure_ordering),
      cmocka_unit_test(test_kernel_fault),
      cmocka_unit_test(test_capacity),
      cmocka_unit_test(test_handle_misuse),
      cmocka_unit_test(test_module_cache),
      cmocka_unit_test(test_large_transfer),
      cmocka_unit_test(test_concurrent_sessions),
      cmocka_unit_test(test_submit_beside_sessions),
      cmocka_unit_test(test_mem_alloc_address),
      cmocka_unit_test(test_call),
      cmocka_unit_test(test_renewer),
  };
  if (getenv("GL_TEST_FILTER")) cmocka_set_test_filter(getenv("GL_TEST_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
