/*
 * test_backend_emu.c - the session ops of the emulated backend
 * (src/backend/backend_emu.c) called directly, as the worker's session
 * threads call them: stream-ordered writes, memsets, copies and launches of
 * corpus kernels, func_info, compile_ptx, cache_tag, range checks, a kernel
 * fault reported on every stream, and several threads loading modules and
 * launching kernels on one device at once. Shared leases: open_shared,
 * region_add / region_remove, and views (src/backend/backend_view.c) onto
 * the ranges.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "emu/emu.h"
#include "backend/backend.h"
#include "backend/backend_emu.h"
#include "backend/backend_view.h"

#define REGION (4u << 20)

/* ---- helpers ------------------------------------------------------------- */

/* Reads SRC_DIR/rel (GL_TEST_SRC_DIR, set by ctest, else the build's
 * source dir) with a NUL after it. */
static char *read_src(const char *rel, size_t *len) {
  const char *src = getenv("GL_TEST_SRC_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", src ? src : GL_SOURCE_DIR, rel);
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

#define SAXPY "tests/emu/kernels/ptx/sm_90/saxpy.ptx"
#define MATMUL "tests/emu/kernels/ptx/sm_90/matmul_tiled.ptx"
#define VECTOR_ADD "examples/kernels/ptx/vector_add.ptx"
#define OOB "tests/gpu/kernels/ptx/oob.ptx"
#define IOTA "examples/kernels/ptx/iota.ptx" /* iota(float *p): p[i] = i + 1 */

typedef struct env {
  gl_backend *b;
  const gl_backend_ops *ops;
  uint64_t base; /* the region's device address */
  char err[2048];
} env;

static void env_open(env *e, unsigned threads) {
  memset(e, 0, sizeof *e);
  e->b = gl_backend_emu_new(64u << 20, threads);
  assert_non_null(e->b);
  e->ops = e->b->ops;
  char name[128];
  gpulease_status st =
      e->ops->init(e->b, 0, REGION, &e->base, name, sizeof name, e->err, sizeof e->err);
  if (st != GPULEASE_OK) fail_msg("init: %s", e->err);
  assert_int_equal(e->base, GL_EMU_REGION_BASE);
}

static void env_close(env *e) { e->ops->destroy(e->b); }

/* Loads the PTX file rel (must succeed). */
static void *load_file(env *e, const char *rel) {
  size_t len;
  char *ptx = read_src(rel, &len);
  void *mod = NULL;
  gpulease_status st = e->ops->load_module(e->b, (const uint8_t *)ptx, len, GPULEASE_IMAGE_PTX,
                                           &mod, e->err, sizeof e->err);
  free(ptx);
  if (st != GPULEASE_OK) fail_msg("load %s: %s", rel, e->err);
  return mod;
}

static void *load_text(env *e, const char *ptx) {
  void *mod = NULL;
  gpulease_status st = e->ops->load_module(e->b, (const uint8_t *)ptx, strlen(ptx),
                                           GPULEASE_IMAGE_PTX, &mod, e->err, sizeof e->err);
  if (st != GPULEASE_OK) fail_msg("load: %s", e->err);
  return mod;
}

static void *function(env *e, void *mod, const char *name) {
  void *fn = NULL;
  if (e->ops->get_function(e->b, mod, name, &fn, e->err, sizeof e->err) != GPULEASE_OK)
    fail_msg("get_function %s: %s", name, e->err);
  return fn;
}

/* saxpy(n, a, x, y) over n elements, 256 threads a block. */
static gl_launch saxpy_launch(int32_t *n, float *a, uint64_t *x, uint64_t *y, void **args,
                              size_t *sizes) {
  args[0] = n, args[1] = a, args[2] = x, args[3] = y;
  sizes[0] = 4, sizes[1] = 4, sizes[2] = 8, sizes[3] = 8;
  gl_launch l = {.kernel_name = "saxpy",
                 .grid = {(uint32_t)(*n + 255) / 256, 1, 1},
                 .block = {256, 1, 1},
                 .args = args,
                 .arg_sizes = sizes,
                 .arg_count = 4};
  return l;
}

#define OK(call)                                                                                \
  do {                                                                                          \
    gpulease_status st_ = (call);                                                               \
    if (st_ != GPULEASE_OK)                                                                     \
      fail_msg("%s: %s: %s", #call, gpulease_status_name(st_), e->err);                         \
  } while (0)

/* ---- the table ------------------------------------------------------------- */

static void test_ops_table(void **state) {
  (void)state;
  env env_, *e = &env_;
  env_open(e, 1);
  const gl_backend_ops *o = e->ops;
  assert_non_null(o->stream_create);
  assert_non_null(o->stream_destroy);
  assert_non_null(o->launch_async);
  assert_non_null(o->write_async);
  assert_non_null(o->read_sync);
  assert_non_null(o->copy_async);
  assert_non_null(o->memset_async);
  assert_non_null(o->stream_sync);
  assert_non_null(o->func_info);
  assert_non_null(o->compile_ptx);
  assert_non_null(o->cache_tag);
  assert_true(o->launch_runs_inline);
  char tag[64];
  o->cache_tag(e->b, tag, sizeof tag);
  assert_string_equal(tag, "emu-sm90-v1");
  char small[4];
  o->cache_tag(e->b, small, sizeof small);
  assert_string_equal(small, "emu");
  env_close(e);
}

/* ---- stream ops in order ----------------------------------------------------- */

static void test_stream_ops(void **state) {
  (void)state;
  env env_, *e = &env_;
  env_open(e, 1);
  void *s = NULL;
  OK(e->ops->stream_create(e->b, &s, e->err, sizeof e->err));
  assert_non_null(s);

  /* memsets of each element size, with guards around them */
  uint8_t fill[64];
  memset(fill, 0x5a, sizeof fill);
  OK(e->ops->write_async(e->b, s, 0, fill, sizeof fill, e->err, sizeof e->err));
  OK(e->ops->memset_async(e->b, s, 4, 1, 0x1ab, 5, e->err, sizeof e->err));
  OK(e->ops->memset_async(e->b, s, 16, 2, 0xfff1234, 3, e->err, sizeof e->err));
  OK(e->ops->memset_async(e->b, s, 32, 4, 0xdeadbeef, 4, e->err, sizeof e->err));
  OK(e->ops->memset_async(e->b, s, 60, 4, 7, 0, e->err, sizeof e->err)); /* nothing */
  uint8_t got[64];
  OK(e->ops->read_sync(e->b, s, 0, got, sizeof got, e->err, sizeof e->err));
  uint8_t want[64];
  memset(want, 0x5a, sizeof want);
  memset(want + 4, 0xab, 5);
  for (int i = 0; i < 3; i++) want[16 + 2 * i] = 0x34, want[17 + 2 * i] = 0x12;
  for (int i = 0; i < 4; i++) {
    want[32 + 4 * i] = 0xef, want[33 + 4 * i] = 0xbe;
    want[34 + 4 * i] = 0xad, want[35 + 4 * i] = 0xde;
  }
  assert_memory_equal(got, want, sizeof want);

  /* copy (device to device), then saxpy on the copy */
  enum { N = 1000 };
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *out = malloc(N * sizeof *out);
  assert_true(x && y && out);
  for (int i = 0; i < N; i++) x[i] = (float)i * 0.5f - 7.0f, y[i] = 1.0f / (float)(i + 1);
  const uint64_t xo = 4096, yo = 4096 + 8192, yc = 4096 + 16384;
  OK(e->ops->write_async(e->b, s, xo, x, N * sizeof *x, e->err, sizeof e->err));
  OK(e->ops->write_async(e->b, s, yo, y, N * sizeof *y, e->err, sizeof e->err));
  OK(e->ops->copy_async(e->b, s, yc, yo, N * sizeof *y, e->err, sizeof e->err));
  OK(e->ops->memset_async(e->b, s, yo, 4, 0, N, e->err, sizeof e->err)); /* the original */

  void *mod = load_file(e, SAXPY);
  void *fn = function(e, mod, "saxpy");
  int32_t n = N;
  float a = 2.5f;
  uint64_t xp = e->base + xo, yp = e->base + yc;
  void *args[4];
  size_t sizes[4];
  gl_launch l = saxpy_launch(&n, &a, &xp, &yp, args, sizes);
  OK(e->ops->launch_async(e->b, s, fn, &l, e->err, sizeof e->err));
  OK(e->ops->stream_sync(e->b, s, e->err, sizeof e->err));
  OK(e->ops->read_sync(e->b, s, yc, out, N * sizeof *out, e->err, sizeof e->err));
  for (int i = 0; i < N; i++) {
    float r = fmaf(x[i], a, y[i]);
    if (memcmp(&r, &out[i], 4) != 0) fail_msg("y[%d] = %a, want %a", i, out[i], r);
  }
  OK(e->ops->read_sync(e->b, s, yo, out, N * sizeof *out, e->err, sizeof e->err));
  for (int i = 0; i < N; i++) assert_true(out[i] == 0.0f);
  /* the same copy twice in a row (src == dst is allowed) */
  OK(e->ops->copy_async(e->b, s, yc, yc, N * sizeof *y, e->err, sizeof e->err));

  /* a bad launch configuration is INVALID_ARGUMENT and loses nothing */
  gl_launch bad = l;
  bad.block[0] = 2048;
  assert_int_equal(e->ops->launch_async(e->b, s, fn, &bad, e->err, sizeof e->err),
                   GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(e->err, "CUDA_ERROR_INVALID_VALUE"));
  assert_false(e->ops->context_lost(e->b));
  OK(e->ops->stream_sync(e->b, s, e->err, sizeof e->err));

  e->ops->unload_module(e->b, mod);
  e->ops->stream_destroy(e->b, s);
  free(x), free(y), free(out);
  env_close(e);
}

/* ---- func_info ------------------------------------------------------------- */

static const char k_bounds_ptx[] =
    ".version 7.8\n"
    ".target sm_80\n"
    ".address_size 64\n"
    ".visible .entry capped(.param .u64 p) .maxntid 128, 1, 1\n"
    "{\n"
    "  ret;\n"
    "}\n"
    ".visible .entry exact(.param .u64 p) .reqntid 32, 2, 1\n"
    "{\n"
    "  ret;\n"
    "}\n";

static void test_func_info(void **state) {
  (void)state;
  env env_, *e = &env_;
  env_open(e, 1);
  gl_func_info_resp fi;

  void *mm = load_file(e, MATMUL);
  memset(&fi, 0xff, sizeof fi);
  OK(e->ops->func_info(e->b, function(e, mm, "matmul_tiled"), &fi, e->err, sizeof e->err));
  assert_int_equal(fi.static_shared_bytes, 2 * 16 * 16 * 4); /* As and Bs */
  assert_int_equal(fi.local_bytes, 0);
  assert_int_equal(fi.const_bytes, 0);
  assert_int_equal(fi.max_threads_per_block, 1024);
  assert_true(fi.num_regs > 0 && fi.num_regs < 256);
  assert_int_equal(fi.ptx_version, 90);    /* .target sm_90 */
  assert_int_equal(fi.binary_version, 90); /* the device */

  /* PTX for sm_75 JIT-compiled for the device: as CUDA reports it */
  void *va = load_file(e, VECTOR_ADD);
  OK(e->ops->func_info(e->b, function(e, va, "vector_add"), &fi, e->err, sizeof e->err));
  assert_int_equal(fi.ptx_version, 75);
  assert_int_equal(fi.binary_version, 90);
  assert_int_equal(fi.static_shared_bytes, 0);

  void *bm = load_text(e, k_bounds_ptx);
  OK(e->ops->func_info(e->b, function(e, bm, "capped"), &fi, e->err, sizeof e->err));
  assert_int_equal(fi.max_threads_per_block, 128);
  assert_int_equal(fi.ptx_version, 80);
  OK(e->ops->func_info(e->b, function(e, bm, "exact"), &fi, e->err, sizeof e->err));
  assert_int_equal(fi.max_threads_per_block, 64);

  e->ops->unload_module(e->b, bm);
  e->ops->unload_module(e->b, va);
  e->ops->unload_module(e->b, mm);
  env_close(e);
}

/* ---- compile_ptx ------------------------------------------------------------ */

static void test_compile_ptx(void **state) {
  (void)state;
  env env_, *e = &env_;
  env_open(e, 1);
  size_t len;
  char *ptx = read_src(SAXPY, &len);
  uint8_t *bin = NULL;
  size_t bin_len = 0;
  OK(e->ops->compile_ptx(e->b, (const uint8_t *)ptx, len, &bin, &bin_len, e->err,
                         sizeof e->err));
  assert_non_null(bin);
  assert_int_equal(bin_len, len);
  assert_memory_equal(bin, ptx, len);
  assert_int_equal(bin[bin_len], 0);
  /* the "binary" loads and runs */
  void *mod = NULL;
  OK(e->ops->load_module(e->b, bin, bin_len, GPULEASE_IMAGE_PTX, &mod, e->err, sizeof e->err));
  void *fn = function(e, mod, "saxpy");
  float xs[4] = {1, 2, 3, 4}, ys[4] = {10, 20, 30, 40}, out[4];
  OK(e->ops->write(e->b, 0, xs, sizeof xs, e->err, sizeof e->err));
  OK(e->ops->write(e->b, 64, ys, sizeof ys, e->err, sizeof e->err));
  int32_t n = 4;
  float a = 3.0f;
  uint64_t xp = e->base, yp = e->base + 64;
  void *args[4];
  size_t sizes[4];
  gl_launch l = saxpy_launch(&n, &a, &xp, &yp, args, sizes);
  uint64_t ns = 0;
  OK(e->ops->launch(e->b, fn, &l, &ns, e->err, sizeof e->err));
  OK(e->ops->read(e->b, 64, out, sizeof out, e->err, sizeof e->err));
  for (int i = 0; i < 4; i++) assert_true(out[i] == ys[i] + 3.0f * xs[i]);
  e->ops->unload_module(e->b, mod);
  free(bin);

  /* text after a NUL is not part of it */
  char *cut = malloc(len + 16);
  assert_non_null(cut);
  memcpy(cut, ptx, len);
  memcpy(cut + len, "\0garbage", 9);
  bin = NULL;
  OK(e->ops->compile_ptx(e->b, (const uint8_t *)cut, len + 8, &bin, &bin_len, e->err,
                         sizeof e->err));
  assert_int_equal(bin_len, len);
  free(bin);
  free(cut);
  free(ptx);

  /* bad PTX: LOAD_FAILED with the reason, nothing returned */
  static const char bad[] = ".version 7.0\n.target sm_75\n.address_size 64\n"
                            ".visible .entry k()\n{\n  frobnicate.u32 %r1;\n}\n";
  bin = (uint8_t *)1;
  bin_len = 99;
  assert_int_equal(e->ops->compile_ptx(e->b, (const uint8_t *)bad, sizeof bad - 1, &bin,
                                       &bin_len, e->err, sizeof e->err),
                   GPULEASE_LOAD_FAILED);
  assert_null(bin);
  assert_int_equal(bin_len, 0);
  assert_true(strlen(e->err) > 0);
  static const char no_target[] = ".version 7.0\n.address_size 64\n";
  assert_int_equal(e->ops->compile_ptx(e->b, (const uint8_t *)no_target, sizeof no_target - 1,
                                       &bin, &bin_len, e->err, sizeof e->err),
                   GPULEASE_LOAD_FAILED);
  assert_false(e->ops->context_lost(e->b));
  env_close(e);
}

/* ---- ranges ---------------------------------------------------------------- */

static void test_out_of_range(void **state) {
  (void)state;
  env env_, *e = &env_;
  env_open(e, 1);
  void *s = NULL;
  OK(e->ops->stream_create(e->b, &s, e->err, sizeof e->err));
  /* sentinels at both ends */
  uint8_t tail[16], head[16], got[16];
  memset(tail, 0xc3, sizeof tail);
  memset(head, 0x3c, sizeof head);
  OK(e->ops->write_async(e->b, s, REGION - 16, tail, 16, e->err, sizeof e->err));
  OK(e->ops->write_async(e->b, s, 0, head, 16, e->err, sizeof e->err));
  uint8_t big[32];
  memset(big, 0xee, sizeof big);

  assert_int_equal(e->ops->write_async(e->b, s, REGION - 8, big, 16, e->err, sizeof e->err),
                   GPULEASE_WRITE_FAILED);
  assert_non_null(strstr(e->err, "outside the region"));
  assert_int_equal(e->ops->write_async(e->b, s, UINT64_MAX - 4, big, 16, e->err, sizeof e->err),
                   GPULEASE_WRITE_FAILED);
  assert_int_equal(e->ops->write_async(e->b, s, REGION + 1, big, 0, e->err, sizeof e->err),
                   GPULEASE_WRITE_FAILED);
  assert_int_equal(e->ops->read_sync(e->b, s, REGION - 8, got, 16, e->err, sizeof e->err),
                   GPULEASE_READ_FAILED);
  assert_int_equal(e->ops->read_sync(e->b, s, UINT64_MAX, got, 1, e->err, sizeof e->err),
                   GPULEASE_READ_FAILED);
  assert_int_equal(e->ops->copy_async(e->b, s, REGION - 8, 0, 16, e->err, sizeof e->err),
                   GPULEASE_WRITE_FAILED);
  assert_int_equal(e->ops->copy_async(e->b, s, 0, REGION - 8, 16, e->err, sizeof e->err),
                   GPULEASE_WRITE_FAILED);
  assert_int_equal(e->ops->copy_async(e->b, s, 0, UINT64_MAX - 2, 16, e->err, sizeof e->err),
                   GPULEASE_WRITE_FAILED);
  assert_int_equal(e->ops->memset_async(e->b, s, REGION - 8, 4, 1, 4, e->err, sizeof e->err),
                   GPULEASE_WRITE_FAILED);
  assert_int_equal(
      e->ops->memset_async(e->b, s, 0, 4, 1, SIZE_MAX / 2, e->err, sizeof e->err),
      GPULEASE_WRITE_FAILED);
  assert_int_equal(e->ops->memset_async(e->b, s, 2, 4, 1, 1, e->err, sizeof e->err),
                   GPULEASE_WRITE_FAILED); /* misaligned */
  assert_int_equal(e->ops->memset_async(e->b, s, 0, 3, 1, 1, e->err, sizeof e->err),
                   GPULEASE_WRITE_FAILED); /* no such element size */
  /* the sync ops refuse too */
  assert_int_equal(e->ops->write(e->b, REGION, big, 1, e->err, sizeof e->err),
                   GPULEASE_WRITE_FAILED);
  assert_int_equal(e->ops->read(e->b, REGION - 1, got, 2, e->err, sizeof e->err),
                   GPULEASE_READ_FAILED);

  /* exactly up to the end is fine, and nothing above was touched */
  OK(e->ops->read_sync(e->b, s, REGION - 16, got, 16, e->err, sizeof e->err));
  assert_memory_equal(got, tail, 16);
  OK(e->ops->read_sync(e->b, s, 0, got, 16, e->err, sizeof e->err));
  assert_memory_equal(got, head, 16);
  OK(e->ops->read_sync(e->b, s, REGION, got, 0, e->err, sizeof e->err));
  assert_false(e->ops->context_lost(e->b));
  OK(e->ops->stream_sync(e->b, s, e->err, sizeof e->err));
  e->ops->stream_destroy(e->b, s);
  env_close(e);
}

/* ---- a fault ------------------------------------------------------------------ */

static void test_fault_is_sticky(void **state) {
  (void)state;
  env env_, *e = &env_;
  env_open(e, 2);
  void *s1 = NULL, *s2 = NULL;
  OK(e->ops->stream_create(e->b, &s1, e->err, sizeof e->err));
  OK(e->ops->stream_create(e->b, &s2, e->err, sizeof e->err));
  void *mod = load_file(e, OOB);
  void *fn = function(e, mod, "oob");
  uint64_t region = e->base;
  void *args[1] = {&region};
  size_t sizes[1] = {8};
  gl_launch l = {.kernel_name = "oob", .grid = {2, 1, 1}, .block = {32, 1, 1}, .args = args,
                 .arg_sizes = sizes, .arg_count = 1};
  OK(e->ops->stream_sync(e->b, s1, e->err, sizeof e->err));
  assert_false(e->ops->context_lost(e->b));
  /* runs inline: the launch reports the fault itself */
  assert_int_equal(e->ops->launch_async(e->b, s1, fn, &l, e->err, sizeof e->err),
                   GPULEASE_LAUNCH_FAILED);
  assert_non_null(strstr(e->err, "CUDA_ERROR_ILLEGAL_ADDRESS"));
  assert_true(e->ops->context_lost(e->b));
  /* and every later op on any stream */
  assert_int_equal(e->ops->stream_sync(e->b, s1, e->err, sizeof e->err),
                   GPULEASE_LAUNCH_FAILED);
  assert_non_null(strstr(e->err, "CUDA_ERROR_ILLEGAL_ADDRESS"));
  assert_non_null(strstr(e->err, "'oob'"));
  assert_int_equal(e->ops->stream_sync(e->b, s2, e->err, sizeof e->err),
                   GPULEASE_LAUNCH_FAILED);
  assert_non_null(strstr(e->err, "CUDA_ERROR_ILLEGAL_ADDRESS"));
  uint8_t buf[8] = {0};
  assert_int_equal(e->ops->read_sync(e->b, s2, 0, buf, 8, e->err, sizeof e->err),
                   GPULEASE_LAUNCH_FAILED);
  assert_non_null(strstr(e->err, "CUDA_ERROR_ILLEGAL_ADDRESS"));
  assert_int_equal(e->ops->write_async(e->b, s2, 0, buf, 8, e->err, sizeof e->err),
                   GPULEASE_LAUNCH_FAILED);
  assert_int_equal(e->ops->memset_async(e->b, s2, 0, 1, 0, 8, e->err, sizeof e->err),
                   GPULEASE_LAUNCH_FAILED);
  assert_int_equal(e->ops->copy_async(e->b, s2, 0, 8, 8, e->err, sizeof e->err),
                   GPULEASE_LAUNCH_FAILED);
  assert_int_equal(e->ops->launch_async(e->b, s2, fn, &l, e->err, sizeof e->err),
                   GPULEASE_LAUNCH_FAILED);
  assert_non_null(strstr(e->err, "CUDA_ERROR_ILLEGAL_ADDRESS"));
  assert_true(e->ops->context_lost(e->b));
  e->ops->stream_destroy(e->b, s1);
  e->ops->stream_destroy(e->b, s2);
  e->ops->unload_module(e->b, mod);
  env_close(e);
}

/* ---- threads ------------------------------------------------------------------ */

typedef struct session_arg {
  env *e;
  int index;
  int rounds;
  char failure[2048];
} session_arg;

static void *session_main(void *p) {
  session_arg *a = p;
  env *e = a->e;
  char err[1024];
  enum { N = 3000 };
  const uint64_t area = 1u << 20; /* each session its own megabyte */
  const uint64_t xo = area * (uint64_t)(a->index + 1), yo = xo + 4 * N + 256;
  float *x = malloc(N * 4), *y = malloc(N * 4), *out = malloc(N * 4);
  void *s = NULL, *mod = NULL, *fn = NULL;
  if (!x || !y || !out) {
    snprintf(a->failure, sizeof a->failure, "out of memory");
    goto done;
  }
  if (e->ops->stream_create(e->b, &s, err, sizeof err) != GPULEASE_OK) {
    snprintf(a->failure, sizeof a->failure, "stream_create: %s", err);
    goto done;
  }
  for (int r = 0; r < a->rounds && !a->failure[0]; r++) {
    /* every round loads its own module, as a new session would */
    size_t len;
    const char *src = getenv("GL_TEST_SRC_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", src ? src : GL_SOURCE_DIR, SAXPY);
    FILE *f = fopen(path, "rb");
    char text[8192];
    len = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[len] = 0;
    if (e->ops->load_module(e->b, (const uint8_t *)text, len, GPULEASE_IMAGE_PTX, &mod, err,
                            sizeof err) != GPULEASE_OK ||
        e->ops->get_function(e->b, mod, "saxpy", &fn, err, sizeof err) != GPULEASE_OK) {
      snprintf(a->failure, sizeof a->failure, "load: %s", err);
      break;
    }
    gl_func_info_resp fi;
    if (e->ops->func_info(e->b, fn, &fi, err, sizeof err) != GPULEASE_OK) {
      snprintf(a->failure, sizeof a->failure, "func_info: %s", err);
      break;
    }
    float av = (float)(a->index * 100 + r) + 0.25f;
    for (int i = 0; i < N; i++) x[i] = (float)(i % 97) - 3.5f, y[i] = (float)(a->index + r + i);
    int32_t n = N;
    uint64_t xp = e->base + xo, yp = e->base + yo;
    void *args[4];
    size_t sizes[4];
    gl_launch l = saxpy_launch(&n, &av, &xp, &yp, args, sizes);
    if (e->ops->memset_async(e->b, s, yo, 4, 0xffffffffu, N, err, sizeof err) != GPULEASE_OK ||
        e->ops->write_async(e->b, s, xo, x, N * 4, err, sizeof err) != GPULEASE_OK ||
        e->ops->write_async(e->b, s, yo + 4 * N + 64, y, N * 4, err, sizeof err) != GPULEASE_OK ||
        e->ops->copy_async(e->b, s, yo, yo + 4 * N + 64, N * 4, err, sizeof err) != GPULEASE_OK ||
        e->ops->launch_async(e->b, s, fn, &l, err, sizeof err) != GPULEASE_OK ||
        e->ops->stream_sync(e->b, s, err, sizeof err) != GPULEASE_OK ||
        e->ops->read_sync(e->b, s, yo, out, N * 4, err, sizeof err) != GPULEASE_OK) {
      snprintf(a->failure, sizeof a->failure, "round %d: %s", r, err);
      break;
    }
    for (int i = 0; i < N; i++) {
      float want = fmaf(x[i], av, y[i]);
      if (memcmp(&want, &out[i], 4) != 0) {
        snprintf(a->failure, sizeof a->failure, "session %d round %d: y[%d] = %a, want %a",
                 a->index, r, i, out[i], want);
        break;
      }
    }
    e->ops->unload_module(e->b, mod);
    mod = NULL;
  }
done:
  if (mod) e->ops->unload_module(e->b, mod);
  if (s) e->ops->stream_destroy(e->b, s);
  free(x), free(y), free(out);
  return NULL;
}

static void test_concurrent_sessions(void **state) {
  (void)state;
  env env_, *e = &env_;
  env_open(e, 2); /* and two host threads per launch */
  enum { T = 3 };
  pthread_t tid[T];
  session_arg args[T];
  for (int i = 0; i < T; i++) {
    args[i] = (session_arg){.e = e, .index = i, .rounds = 12};
    assert_int_equal(pthread_create(&tid[i], NULL, session_main, &args[i]), 0);
  }
  for (int i = 0; i < T; i++) pthread_join(tid[i], NULL);
  for (int i = 0; i < T; i++)
    if (args[i].failure[0]) fail_msg("session %d: %s", i, args[i].failure);
  assert_false(e->ops->context_lost(e->b));
  env_close(e);
}

/* A kernel that marks [p+4] and then spins until [p] is non-zero. */
static const char k_wait_ptx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".visible .entry wait_flag(.param .u64 p)\n"
    "{\n"
    "  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<3>;\n"
    "  .reg .b64 %rd<3>;\n"
    "  ld.param.u64 %rd1, [p];\n"
    "  cvta.to.global.u64 %rd2, %rd1;\n"
    "  mov.u32 %r1, 1;\n"
    "  st.volatile.global.u32 [%rd2+4], %r1;\n"
    "$L_spin:\n"
    "  ld.volatile.global.u32 %r2, [%rd2];\n"
    "  setp.eq.u32 %p1, %r2, 0;\n"
    "  @%p1 bra $L_spin;\n"
    "  ret;\n"
    "}\n";

typedef struct wait_arg {
  env *e;
  void *fn;
  gpulease_status st;
  char err[512];
} wait_arg;

static void *wait_main(void *p) {
  wait_arg *a = p;
  void *s = NULL;
  a->st = a->e->ops->stream_create(a->e->b, &s, a->err, sizeof a->err);
  if (a->st != GPULEASE_OK) return NULL;
  uint64_t ptr = a->e->base + 256;
  void *args[1] = {&ptr};
  size_t sizes[1] = {8};
  gl_launch l = {.kernel_name = "wait_flag", .grid = {1, 1, 1}, .block = {1, 1, 1},
                 .args = args, .arg_sizes = sizes, .arg_count = 1};
  a->st = a->e->ops->launch_async(a->e->b, s, a->fn, &l, a->err, sizeof a->err);
  a->e->ops->stream_destroy(a->e->b, s);
  return NULL;
}

/* Unloading a module while another session's kernel runs returns at once
 * (the module is freed once no launch can map it), and that session's
 * copies still go through. */
static void test_unload_during_launch(void **state) {
  (void)state;
  env env_, *e = &env_;
  env_open(e, 1);
  void *wait_mod = load_text(e, k_wait_ptx);
  void *other = load_file(e, MATMUL);
  wait_arg wa = {.e = e, .fn = function(e, wait_mod, "wait_flag")};
  pthread_t tid;
  assert_int_equal(pthread_create(&tid, NULL, wait_main, &wa), 0);
  void *s = NULL;
  OK(e->ops->stream_create(e->b, &s, e->err, sizeof e->err));
  /* wait until the kernel runs */
  uint32_t started = 0;
  for (int i = 0; i < 20000 && !started; i++) {
    OK(e->ops->read_sync(e->b, s, 256 + 4, &started, 4, e->err, sizeof e->err));
    if (!started) nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  assert_int_equal(started, 1);
  e->ops->unload_module(e->b, other); /* must not wait for the kernel */
  uint32_t one = 1;
  OK(e->ops->write_async(e->b, s, 256, &one, 4, e->err, sizeof e->err));
  pthread_join(tid, NULL);
  if (wa.st != GPULEASE_OK) fail_msg("wait_flag: %s", wa.err);
  /* the device still works, and loads again */
  void *again = load_file(e, MATMUL);
  e->ops->unload_module(e->b, again);
  e->ops->unload_module(e->b, wait_mod);
  e->ops->stream_destroy(e->b, s);
  assert_false(e->ops->context_lost(e->b));
  env_close(e);
}

/* ---- shared leases: ranges and views ------------------------------------------ */

#define SHARED_CAP (8u << 20)

/* An emulated device opened for shared leases, with SHARED_CAP bytes. */
static void env_open_shared(env *e) {
  memset(e, 0, sizeof *e);
  e->b = gl_backend_emu_new(SHARED_CAP, 1);
  assert_non_null(e->b);
  e->ops = e->b->ops;
  assert_non_null(e->ops->open_shared);
  char name[128];
  OK(e->ops->open_shared(e->b, 0, &e->base, name, sizeof name, e->err, sizeof e->err));
  assert_int_equal(e->base, GL_EMU_REGION_BASE);
  assert_string_equal(name, GL_EMU_NAME);
}

/* True when len bytes of the real region at offset are all zero. */
static bool zero_at(env *e, uint64_t offset, size_t len) {
  uint8_t *buf = malloc(len);
  assert_non_null(buf);
  OK(e->ops->read(e->b, offset, buf, len, e->err, sizeof e->err));
  size_t i = 0;
  while (i < len && buf[i] == 0) i++;
  free(buf);
  return i == len;
}

static void test_shared_ranges(void **state) {
  (void)state;
  env env_, *e = &env_;
  env_open_shared(e);
  /* init and a second open are refused once open */
  uint64_t base2 = 0;
  char name[64];
  assert_int_equal(e->ops->open_shared(e->b, 0, &base2, name, sizeof name, e->err, sizeof e->err),
                   GPULEASE_INTERNAL);
  assert_int_equal(e->ops->init(e->b, 0, 4096, &base2, name, sizeof name, e->err, sizeof e->err),
                   GPULEASE_INTERNAL);

  /* two ranges of different sizes: aligned, disjoint, zeroed */
  const uint64_t a_bytes = (1u << 20) + 100, b_bytes = 3000;
  uint64_t a = 0, b = 0;
  OK(e->ops->region_add(e->b, a_bytes, &a, e->err, sizeof e->err));
  OK(e->ops->region_add(e->b, b_bytes, &b, e->err, sizeof e->err));
  assert_int_equal(a, 0); /* first fit, sizes rounded up to 256 bytes */
  assert_int_equal(b, (a_bytes + 255) / 256 * 256);
  assert_true(a + a_bytes <= SHARED_CAP && b + b_bytes <= SHARED_CAP);
  assert_true(zero_at(e, a, a_bytes));
  assert_true(zero_at(e, b, b_bytes));

  pthread_mutex_t submit_mu = PTHREAD_MUTEX_INITIALIZER;
  gl_backend *va = gl_backend_view_new(e->b, a, a_bytes, &submit_mu);
  gl_backend *vb = gl_backend_view_new(e->b, b, b_bytes, &submit_mu);
  assert_non_null(va);
  assert_non_null(vb);
  const gl_backend_ops *vo = va->ops;
  assert_true(vo->launch_runs_inline); /* the real backend's */
  assert_null(vo->launch_read);        /* the emulated backend has none */
  assert_null(vo->open_shared);
  assert_null(vo->region_add);
  assert_null(vo->set_limits);
  gl_probe_resp probe;
  assert_int_equal(vo->probe(va, &probe, e->err, sizeof e->err), GPULEASE_INTERNAL);
  assert_int_equal(vo->init(va, 0, 4096, &base2, name, sizeof name, e->err, sizeof e->err),
                   GPULEASE_INTERNAL);

  /* written through view A at its offset 10: the real region at a + 10 */
  uint8_t pat[200], got[200];
  for (size_t i = 0; i < sizeof pat; i++) pat[i] = (uint8_t)(i * 7 + 1);
  OK(vo->write(va, 10, pat, sizeof pat, e->err, sizeof e->err));
  OK(e->ops->read(e->b, a + 10, got, sizeof got, e->err, sizeof e->err));
  assert_memory_equal(got, pat, sizeof pat);
  OK(vo->read(va, 10, got, sizeof got, e->err, sizeof e->err));
  assert_memory_equal(got, pat, sizeof pat);
  assert_true(zero_at(e, b, b_bytes)); /* B untouched */
  /* the stream ops move offsets the same way */
  void *s = NULL;
  OK(vo->stream_create(vb, &s, e->err, sizeof e->err));
  OK(vo->write_async(vb, s, b_bytes - sizeof pat, pat, sizeof pat, e->err, sizeof e->err));
  OK(vo->copy_async(vb, s, 0, b_bytes - sizeof pat, sizeof pat, e->err, sizeof e->err));
  OK(vo->memset_async(vb, s, 64, 4, 0x01020304u, 4, e->err, sizeof e->err));
  OK(e->ops->read(e->b, b, got, sizeof got, e->err, sizeof e->err));
  uint8_t want[200];
  memcpy(want, pat, sizeof want);
  for (int i = 0; i < 4; i++) memcpy(want + 64 + 4 * i, "\x04\x03\x02\x01", 4);
  assert_memory_equal(got, want, sizeof want);
  OK(vo->read_sync(vb, s, 0, got, sizeof got, e->err, sizeof e->err));
  assert_memory_equal(got, want, sizeof want);

  /* a view refuses what leaves its range, and forwards nothing */
  uint8_t big[64];
  memset(big, 0xee, sizeof big);
  assert_int_equal(vo->write(vb, b_bytes - 8, big, 16, e->err, sizeof e->err),
                   GPULEASE_WRITE_FAILED);
  assert_non_null(strstr(e->err, "outside the lease's range"));
  assert_int_equal(vo->write(vb, UINT64_MAX - 4, big, 16, e->err, sizeof e->err),
                   GPULEASE_WRITE_FAILED);
  assert_int_equal(vo->read(vb, b_bytes, got, 1, e->err, sizeof e->err), GPULEASE_READ_FAILED);
  assert_int_equal(vo->write_async(vb, s, b_bytes + 1, big, 0, e->err, sizeof e->err),
                   GPULEASE_WRITE_FAILED);
  assert_int_equal(vo->read_sync(vb, s, b_bytes - 4, got, 8, e->err, sizeof e->err),
                   GPULEASE_READ_FAILED);
  assert_int_equal(vo->copy_async(vb, s, b_bytes - 8, 0, 16, e->err, sizeof e->err),
                   GPULEASE_WRITE_FAILED);
  assert_int_equal(vo->copy_async(vb, s, 0, b_bytes - 8, 16, e->err, sizeof e->err),
                   GPULEASE_WRITE_FAILED);
  assert_int_equal(vo->memset_async(vb, s, b_bytes - 8, 4, 1, 4, e->err, sizeof e->err),
                   GPULEASE_WRITE_FAILED);
  assert_int_equal(vo->memset_async(vb, s, 0, 4, 1, SIZE_MAX / 2, e->err, sizeof e->err),
                   GPULEASE_WRITE_FAILED);
  assert_true(zero_at(e, b + b_bytes, 16)); /* just past B: untouched */
  OK(vo->read_sync(vb, s, 0, got, sizeof got, e->err, sizeof e->err));
  assert_memory_equal(got, want, sizeof want); /* nor was B changed */
  vo->stream_destroy(vb, s);

  /* removed and added again: the same space (first fit), zero again,
   * whole pages (given back to the host) and partial ones */
  OK(vo->write(va, a_bytes / 2, pat, sizeof pat, e->err, sizeof e->err));
  OK(vo->write(va, a_bytes - sizeof pat, pat, sizeof pat, e->err, sizeof e->err));
  assert_false(zero_at(e, a, a_bytes));
  vo->destroy(va);
  e->ops->region_remove(e->b, a);
  uint64_t a2 = 0;
  OK(e->ops->region_add(e->b, a_bytes, &a2, e->err, sizeof e->err));
  assert_int_equal(a2, a);
  assert_true(zero_at(e, a2, a_bytes));

  /* beyond the capacity: CAPACITY_EXCEEDED naming the free bytes */
  uint64_t c = 0;
  assert_int_equal(e->ops->region_add(e->b, SHARED_CAP, &c, e->err, sizeof e->err),
                   GPULEASE_CAPACITY_EXCEEDED);
  assert_non_null(strstr(e->err, "the emulated device has"));
  assert_non_null(strstr(e->err, "bytes free"));
  assert_int_equal(e->ops->region_add(e->b, 0, &c, e->err, sizeof e->err),
                   GPULEASE_INVALID_ARGUMENT);
  /* what is left fits exactly */
  uint64_t left = SHARED_CAP - (a_bytes + 255) / 256 * 256 - (b_bytes + 255) / 256 * 256;
  OK(e->ops->region_add(e->b, left, &c, e->err, sizeof e->err));
  assert_int_equal(e->ops->region_add(e->b, 1, &c, e->err, sizeof e->err),
                   GPULEASE_CAPACITY_EXCEEDED);

  vb->ops->destroy(vb); /* vo was va's table, gone with it */
  assert_false(e->ops->context_lost(e->b));
  env_close(e); /* with ranges still added */
}

/* A kernel launched through a view, on a stream of the view and by the
 * synchronous launch, writing to the view's range. */
static void test_view_launch(void **state) {
  (void)state;
  env env_, *e = &env_;
  env_open_shared(e);
  uint64_t a = 0, b = 0;
  OK(e->ops->region_add(e->b, 4096, &a, e->err, sizeof e->err));
  OK(e->ops->region_add(e->b, 8192, &b, e->err, sizeof e->err));
  pthread_mutex_t submit_mu = PTHREAD_MUTEX_INITIALIZER;
  gl_backend *v = gl_backend_view_new(e->b, b, 8192, &submit_mu);
  assert_non_null(v);
  const gl_backend_ops *vo = v->ops;

  size_t len;
  char *ptx = read_src(IOTA, &len);
  void *mod = NULL, *fn = NULL;
  OK(vo->load_module(v, (const uint8_t *)ptx, len, GPULEASE_IMAGE_PTX, &mod, e->err,
                     sizeof e->err));
  free(ptx);
  OK(vo->get_function(v, mod, "iota", &fn, e->err, sizeof e->err));
  gl_func_info_resp fi;
  OK(vo->func_info(v, fn, &fi, e->err, sizeof e->err));
  assert_int_equal(fi.ptx_version, 75);

  enum { N = 512 };
  uint64_t ptr = e->base + b + 1024; /* the lease's region starts at base + b */
  void *args[1] = {&ptr};
  size_t sizes[1] = {8};
  gl_launch l = {.kernel_name = "iota", .grid = {N / 128, 1, 1}, .block = {128, 1, 1},
                 .args = args, .arg_sizes = sizes, .arg_count = 1};
  void *s = NULL;
  OK(vo->stream_create(v, &s, e->err, sizeof e->err));
  OK(vo->launch_async(v, s, fn, &l, e->err, sizeof e->err));
  OK(vo->stream_sync(v, s, e->err, sizeof e->err));
  float out[N];
  OK(vo->read_sync(v, s, 1024, out, sizeof out, e->err, sizeof e->err));
  for (int i = 0; i < N; i++)
    if (out[i] != (float)(i + 1)) fail_msg("out[%d] = %g, want %d", i, (double)out[i], i + 1);
  /* the synchronous launch, then read through the view */
  OK(vo->memset_async(v, s, 1024, 4, 0, N, e->err, sizeof e->err));
  uint64_t ns = 0;
  OK(vo->launch(v, fn, &l, &ns, e->err, sizeof e->err));
  memset(out, 0, sizeof out);
  OK(vo->read(v, 1024, out, sizeof out, e->err, sizeof e->err));
  for (int i = 0; i < N; i++) assert_true(out[i] == (float)(i + 1));
  /* the other range saw nothing */
  assert_true(zero_at(e, a, 4096));
  assert_false(vo->context_lost(v));

  vo->stream_destroy(v, s);
  vo->unload_module(v, mod);
  vo->destroy(v);
  e->ops->region_remove(e->b, b);
  e->ops->region_remove(e->b, a);
  env_close(e);
}

/* TENSORMAP_ENCODE's backend op: the emulated device's encoding of the
 * region's address + offset (the address at bytes 8-15), through a view
 * the same map as the real backend's at the view's range + offset, and a
 * view refuses an offset outside its range; the encoder's refusals come
 * through with their reasons. */
static void test_tensormap_encode(void **state) {
  (void)state;
  env env_, *e = &env_;
  env_open_shared(e);
  uint64_t a = 0, b = 0;
  OK(e->ops->region_add(e->b, 4096, &a, e->err, sizeof e->err));
  OK(e->ops->region_add(e->b, 8192, &b, e->err, sizeof e->err));
  pthread_mutex_t submit_mu = PTHREAD_MUTEX_INITIALIZER;
  gl_backend *v = gl_backend_view_new(e->b, b, 8192, &submit_mu);
  assert_non_null(v);
  assert_non_null(e->ops->tensormap_encode);
  assert_non_null(v->ops->tensormap_encode);
  gl_tmap_req t;
  memset(&t, 0, sizeof t);
  t.data_type = 3; /* INT32 */
  t.rank = 2;
  t.global_dim[0] = 16;
  t.global_dim[1] = 8;
  t.global_strides[0] = 64;
  t.box_dim[0] = 8;
  t.box_dim[1] = 4;
  t.element_strides[0] = t.element_strides[1] = 1;
  uint8_t real[GL_TMAP_BYTES], view[GL_TMAP_BYTES];
  OK(e->ops->tensormap_encode(e->b, b + 256, &t, real, e->err, sizeof e->err));
  OK(v->ops->tensormap_encode(v, 256, &t, view, e->err, sizeof e->err));
  assert_memory_equal(real, view, GL_TMAP_BYTES);
  uint64_t addr;
  memcpy(&addr, view + 8, 8);
  assert_int_equal(addr, e->base + b + 256);
  OK(e->ops->tensormap_encode(e->b, a + 256, &t, real, e->err, sizeof e->err));
  assert_memory_not_equal(real, view, GL_TMAP_BYTES);
  /* outside the view's range: refused, nothing encoded */
  memset(view, 0xAB, sizeof view);
  assert_int_equal(v->ops->tensormap_encode(v, 8192, &t, view, e->err, sizeof e->err),
                   GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(e->err, "outside the lease's range"));
  assert_int_equal(view[0], 0xAB);
  /* the encoder's refusals */
  assert_int_equal(v->ops->tensormap_encode(v, 8, &t, view, e->err, sizeof e->err),
                   GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(e->err, "16-byte aligned"));
  t.interleave = 1;
  assert_int_equal(v->ops->tensormap_encode(v, 0, &t, view, e->err, sizeof e->err),
                   GPULEASE_UNSUPPORTED);
  v->ops->destroy(v);
  e->ops->region_remove(e->b, b);
  e->ops->region_remove(e->b, a);
  env_close(e);
}

int main(void) {
  if (getenv("GL_TEST_FILTER")) cmocka_set_test_filter(getenv("GL_TEST_FILTER"));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ops_table),          cmocka_unit_test(test_stream_ops),
      cmocka_unit_test(test_func_info),          cmocka_unit_test(test_compile_ptx),
      cmocka_unit_test(test_out_of_range),       cmocka_unit_test(test_fault_is_sticky),
      cmocka_unit_test(test_concurrent_sessions), cmocka_unit_test(test_unload_during_launch),
      cmocka_unit_test(test_shared_ranges),      cmocka_unit_test(test_view_launch),
      cmocka_unit_test(test_tensormap_encode),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
