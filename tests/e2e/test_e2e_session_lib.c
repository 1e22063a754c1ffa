/*
 * test_e2e_session_lib.c - the client side of sessions, calls and the
 * renewer against a real gpuleased on the emulated device: what the library
 * checks locally (without a round trip or a sequence number), chunked and
 * pipelined transfers with progress, the window of pipelined ops, failures
 * of pipelined ops reported at sync with their op, seq and message, a
 * session surviving gpulease_client_reconnect(), gpulease_call()'s layout
 * (IN, OUT, INOUT, scalars; with and without a lease), the renewer losing
 * its daemon, and the CLI driving a session step by step.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "daemon_harness.h"
#include "lib_check.h"
#include "gpulease/gpulease.h"


static char *kernel_ptx(const char *name, size_t *len) {
  char path[1024];
  const char *bin = getenv("GL_TEST_BIN_DIR");
  snprintf(path, sizeof path, "%s/kernels/%s.ptx", bin ? bin : ".", name);
  uint8_t *data = NULL;
  if (gl_read_file(path, 1 << 24, &data, len) != 0) {
    fprintf(stderr, "cannot read %s\n", path);
    fail();
  }
  return (char *)data;
}

static void start(gl_test_daemon *d) {
  assert_int_equal(gl_test_daemon_start(d, "64M", NULL), 0);
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

/* ======================================================================
 * Local checks
 * ==================================================================== */

static void expect_local(gpulease_status got, gpulease_status want, const gpulease_error *err,
                         const char *needle) {
  if (got != want || !strstr(err->message, needle))
    fprintf(stderr, "got %s: '%s', want %s with '%s'\n", gpulease_status_name(got), err->message,
            gpulease_status_name(want), needle);
  assert_int_equal(got, want);
  assert_int_equal(err->status, want);
  assert_non_null(strstr(err->message, needle));
}

static void test_local_checks(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d);
  gpulease_client *c = gl_test_connect(&d, 20000);
  gpulease_lease l = lease(c, 4 * MiB, 60);
  gpulease_session *s = open_session(c, &l);
  gpulease_error err;
  gpulease_buffer b;
  CHECK(gpulease_mem_alloc(s, 4096, &b, E));
  uint8_t host[GPULEASE_MAX_SCALAR_BYTES + 1] = {0};
  const uint32_t one[3] = {1, 1, 1}, zero[3] = {0, 1, 1};

  expect_local(gpulease_mem_alloc(s, 0, &b, &err), GPULEASE_INVALID_ARGUMENT, &err, ">= 1");
  expect_local(gpulease_mem_write(s, b, 0, host, 0, &err), GPULEASE_INVALID_ARGUMENT, &err, ">= 1");
  expect_local(gpulease_mem_write(s, b, 0, NULL, 16, &err), GPULEASE_INVALID_ARGUMENT, &err, "NULL");
  expect_local(gpulease_mem_read(s, b, UINT64_MAX - 4, host, 16, &err), GPULEASE_INVALID_ARGUMENT,
               &err, "overflows");
  expect_local(gpulease_mem_free(s, 0, &err), GPULEASE_INVALID_HANDLE, &err, "never valid");
  expect_local(gpulease_mem_set(s, b, 0, 3, 0, 1, &err), GPULEASE_INVALID_ARGUMENT, &err,
               "not 1, 2 or 4");
  expect_local(gpulease_mem_set(s, b, 0, 1, 256, 1, &err), GPULEASE_INVALID_ARGUMENT, &err,
               "does not fit");
  expect_local(gpulease_mem_set(s, b, 0, 2, 0x10000, 1, &err), GPULEASE_INVALID_ARGUMENT, &err,
               "does not fit");
  expect_local(gpulease_mem_set(s, b, 0, 4, 0, 0, &err), GPULEASE_INVALID_ARGUMENT, &err, "count");
  expect_local(gpulease_mem_copy(s, b, 0, b, 0, 0, &err), GPULEASE_INVALID_ARGUMENT, &err, ">= 1");
  gpulease_module m;
  expect_local(gpulease_module_load(s, host, 0, GPULEASE_IMAGE_PTX, &m, NULL, &err),
               GPULEASE_INVALID_ARGUMENT, &err, "image");
  expect_local(gpulease_module_load(s, host, 4, (gpulease_image_format)9, &m, NULL, &err),
               GPULEASE_INVALID_ARGUMENT, &err, "format");
  gpulease_function f;
  expect_local(gpulease_function_get(s, 5, "", &f, NULL, &err), GPULEASE_INVALID_ARGUMENT, &err,
               "kernel name");
  gpulease_arg args[GPULEASE_MAX_PARAMS + 1];
  for (int i = 0; i <= GPULEASE_MAX_PARAMS; i++) args[i] = gpulease_arg_buffer(b, 0);
  expect_local(gpulease_launch(s, 7, one, one, 0, args, GPULEASE_MAX_PARAMS + 1, &err),
               GPULEASE_INVALID_ARGUMENT, &err, "at most 256");
  expect_local(gpulease_launch(s, 7, zero, one, 0, NULL, 0, &err), GPULEASE_INVALID_ARGUMENT, &err,
               ">= 1");
  args[0] = gpulease_arg_scalar(host, GPULEASE_MAX_SCALAR_BYTES + 1); /* the helper makes it size 0 */
  expect_local(gpulease_launch(s, 7, one, one, 0, args, 1, &err), GPULEASE_INVALID_ARGUMENT, &err,
               "scalar size");
  /* 256 scalars of 64 bytes do not fit the 16 KiB encoded list. */
  for (int i = 0; i < GPULEASE_MAX_PARAMS; i++) args[i] = gpulease_arg_scalar(host, 64);
  expect_local(gpulease_launch(s, 7, one, one, 0, args, GPULEASE_MAX_PARAMS, &err),
               GPULEASE_INVALID_ARGUMENT, &err, "bytes encoded");
  args[0] = gpulease_arg_buffer(0, 0);
  expect_local(gpulease_launch(s, 7, one, one, 0, args, 1, &err), GPULEASE_INVALID_HANDLE, &err,
               "never valid");

  /* Versioned structs (gpulease.h's conventions): 0 and anything newer
   * than the library are refused before anything is sent. */
  for (uint32_t v = 0; v <= 1; v++) {
    uint32_t bad = v ? 99 : 0;
    gpulease_op_failure bf = {.struct_version = bad};
    expect_local(gpulease_session_sync(s, &bf, &err), GPULEASE_INVALID_ARGUMENT, &err,
                 "op failure of unknown version");
    expect_local(gpulease_launch_sync(s, 7, one, one, 0, NULL, 0, &bf, &err),
                 GPULEASE_INVALID_ARGUMENT, &err, "op failure of unknown version");
    gpulease_func_info bi = {.struct_version = bad};
    expect_local(gpulease_function_get(s, 5, "k", &f, &bi, &err), GPULEASE_INVALID_ARGUMENT, &err,
                 "function info of unknown version");
    gpulease_launch_attrs ba = {.struct_version = bad};
    expect_local(gpulease_launch_ex(s, 7, one, one, 0, &ba, NULL, 0, &err),
                 GPULEASE_INVALID_ARGUMENT, &err, "launch attrs of unknown version");
    gpulease_tensormap_desc bt;
    gpulease_tensormap_desc_default(&bt);
    bt.struct_version = bad;
    uint8_t map[GPULEASE_TENSORMAP_BYTES];
    expect_local(gpulease_tensormap_encode_tiled(s, b, 0, &bt, map, &err),
                 GPULEASE_INVALID_ARGUMENT, &err, "tensor map desc of unknown version");
    gpulease_inventory binv = {.struct_version = bad};
    expect_local(gpulease_inventory_get(c, &binv, &err), GPULEASE_INVALID_ARGUMENT, &err,
                 "inventory of unknown version");
    gpulease_warm_pool_info bw = {.struct_version = bad};
    expect_local(gpulease_warm_pool_get(c, &bw, &err), GPULEASE_INVALID_ARGUMENT, &err,
                 "warm pool info of unknown version");
    gpulease_lease_opts bo;
    gpulease_lease_opts_default(&bo);
    bo.struct_version = bad;
    gpulease_lease bl;
    expect_local(gpulease_lease_alloc_opts(c, GPULEASE_ANY_GPU, MiB, 60, &bo, &bl, &err),
                 GPULEASE_INVALID_ARGUMENT, &err, "lease options of unknown version");
    gpulease_submit_desc sd;
    gpulease_submit_desc_default(&sd);
    sd.image = "x";
    sd.image_size = 1;
    sd.kernel = "k";
    gpulease_submit_result br = {.struct_version = bad};
    expect_local(gpulease_submit(c, &l, &sd, &br, &err), GPULEASE_INVALID_ARGUMENT, &err,
                 "submit result of unknown version");
  }
  /* The deprecated names (0.2, for one release) are the same calls. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  expect_local(gpulease_memset(s, b, 0, 3, 0, 1, &err), GPULEASE_INVALID_ARGUMENT, &err,
               "not 1, 2 or 4");
  gpulease_pool_info old_pool; /* struct_version unset: the alias sets it */
  old_pool.struct_version = 0;
  CHECK(gpulease_pool_get(c, &old_pool, E));
  assert_int_equal(old_pool.struct_version, GPULEASE_WARM_POOL_INFO_VERSION);
#pragma GCC diagnostic pop
  uint32_t vmaj = 9, vmin = 9, vpat = 9;
  assert_string_equal(gpulease_version(&vmaj, &vmin, &vpat), GPULEASE_VERSION_STRING);
  assert_int_equal(vmaj, GPULEASE_VERSION_MAJOR);
  assert_int_equal(vmin, GPULEASE_VERSION_MINOR);
  assert_int_equal(vpat, GPULEASE_VERSION_PATCH);
  assert_non_null(gpulease_version(NULL, NULL, NULL));

  /* None of them reached the daemon or used a sequence number: the
   * session has no failure and runs on. */
  gpulease_op_failure fl = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  CHECK(gpulease_session_sync(s, &fl, E));
  assert_int_equal(fl.status, GPULEASE_OK);
  assert_int_equal(fl.op, 0);
  CHECK(gpulease_mem_set(s, b, 0, 4, 0x01020304, 4, E));
  uint32_t back[4];
  CHECK(gpulease_mem_read(s, b, 0, back, sizeof back, E));
  for (int i = 0; i < 4; i++) assert_int_equal(back[i], 0x01020304);
  CHECK(gpulease_session_close(s, E));
  assert_int_equal(gpulease_session_close(NULL, &err), GPULEASE_OK);
  CHECK(gpulease_lease_free(c, &l, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * Transfers, memset, copy, the window
 * ==================================================================== */

typedef struct prog {
  uint64_t last, total;
  int calls;
  int backwards;
} prog;

static void on_progress(uint64_t done, uint64_t total, void *user) {
  prog *p = user;
  if (done < p->last) p->backwards++;
  p->last = done;
  p->total = total;
  p->calls++;
}

static void test_transfers(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d);
  gpulease_client *c = gl_test_connect(&d, 60000);
  gpulease_lease l = lease(c, 48 * MiB, 120);
  gpulease_session *s = open_session(c, &l);
  const uint64_t size = 20 * MiB + 123, off = 1000; /* 3 chunks, the last short */
  gpulease_buffer b, b2;
  CHECK(gpulease_mem_alloc(s, size + off, &b, E));
  CHECK(gpulease_mem_alloc(s, size + off, &b2, E));
  uint8_t *src = malloc(size), *dst = malloc(size);
  assert_non_null(src);
  assert_non_null(dst);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (uint64_t i = 0; i < size; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    src[i] = (uint8_t)x;
  }
  prog p = {0};
  gpulease_session_set_progress(s, on_progress, &p);
  CHECK(gpulease_mem_write(s, b, off, src, size, E));
  assert_int_equal(p.calls, 3);
  assert_int_equal(p.last, size);
  assert_int_equal(p.total, size);
  assert_int_equal(p.backwards, 0);
  memset(&p, 0, sizeof p);
  CHECK(gpulease_mem_read(s, b, off, dst, size, E));
  assert_int_equal(p.calls, 3);
  assert_int_equal(p.last, size);
  assert_memory_equal(src, dst, size);
  gpulease_session_set_progress(s, NULL, NULL);

  /* Pieces at odd offsets read back the same bytes. */
  uint8_t piece[777];
  CHECK(gpulease_mem_read(s, b, off + 8 * MiB - 300, piece, sizeof piece, E));
  assert_memory_equal(piece, src + 8 * MiB - 300, sizeof piece);

  /* Device-side copy and memsets (pipelined) before a read. */
  CHECK(gpulease_mem_copy(s, b2, 0, b, off, size, E));
  CHECK(gpulease_mem_set(s, b2, 16, 1, 0xab, 4, E));
  CHECK(gpulease_mem_set(s, b2, 20, 2, 0xbeef, 2, E));
  CHECK(gpulease_mem_set(s, b2, 24, 4, 0xdeadbeef, 1, E));
  memset(dst, 0, size);
  CHECK(gpulease_mem_read(s, b2, 0, dst, size, E));
  memset(src + 16, 0xab, 4);
  src[20] = 0xef, src[21] = 0xbe, src[22] = 0xef, src[23] = 0xbe;
  src[24] = 0xef, src[25] = 0xbe, src[26] = 0xad, src[27] = 0xde;
  assert_memory_equal(src, dst, size);

  /* More pipelined ops than the window holds: 600 memsets of one word
   * each, in order; the last value written to each word wins. */
  for (uint32_t i = 0; i < 600; i++) CHECK(gpulease_mem_set(s, b2, 4 * (i % 100), 4, i, 1, E));
  gpulease_op_failure fl = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  CHECK(gpulease_session_sync(s, &fl, E));
  uint32_t words[100];
  CHECK(gpulease_mem_read(s, b2, 0, words, sizeof words, E));
  for (uint32_t i = 0; i < 100; i++) assert_int_equal(words[i], 500 + i);

  /* A write past the buffer's end: the chunk's status comes back, the
   * session keeps the failure until it is acknowledged. */
  gpulease_error err;
  gpulease_status st = gpulease_mem_write(s, b, size + off - 10, src, 20, &err);
  assert_int_equal(st, GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(gpulease_session_sync(s, &fl, &err), GPULEASE_INVALID_ARGUMENT);
  assert_string_equal(fl.op_name, "MEM_WRITE");
  assert_true(fl.seq > 0);
  assert_true(err.message[0] != 0);
  CHECK(gpulease_session_acknowledge(s, fl.seq, E));
  CHECK(gpulease_session_sync(s, &fl, E));
  free(src);
  free(dst);
  CHECK(gpulease_session_close(s, E));
  CHECK(gpulease_lease_free(c, &l, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * Pipelined failures; a session across a reconnect
 * ==================================================================== */

static void test_pipelined_failure_and_reconnect(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d);
  gpulease_client *c = gl_test_connect(&d, 20000);
  gpulease_lease l = lease(c, 4 * MiB, 120);
  gpulease_session *s = open_session(c, &l);
  gpulease_buffer b;
  CHECK(gpulease_mem_alloc(s, 4096, &b, E));          /* seq 1 */
  CHECK(gpulease_mem_set(s, b, 0, 4, 7, 16, E));        /* seq 2 */
  CHECK(gpulease_mem_free(s, b ^ 0x5a5a0000ull, E));    /* seq 3: not a buffer */
  CHECK(gpulease_mem_set(s, b, 0, 4, 9, 16, E));        /* seq 4: fails fast */
  gpulease_op_failure fl = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  gpulease_error err;
  assert_int_equal(gpulease_session_sync(s, &fl, &err), GPULEASE_INVALID_HANDLE);
  assert_int_equal(fl.status, GPULEASE_INVALID_HANDLE);
  assert_int_equal(fl.op, 0x0312);
  assert_string_equal(fl.op_name, "MEM_FREE");
  assert_int_equal(fl.seq, 3);
  assert_non_null(strstr(err.message, "not a buffer"));
  /* Acknowledging another seq leaves the failure in place. */
  assert_int_equal(gpulease_session_acknowledge(s, 2, &err), GPULEASE_INVALID_HANDLE);
  CHECK(gpulease_session_acknowledge(s, 3, E));
  uint32_t w[16];
  CHECK(gpulease_mem_read(s, b, 0, w, sizeof w, E));
  for (int i = 0; i < 16; i++) assert_int_equal(w[i], 7); /* seq 4 never ran */

  /* A new connection under the session: ops carry on with the next seqs. */
  CHECK(gpulease_mem_set(s, b, 0, 4, 11, 16, E));
  CHECK(gpulease_client_reconnect(c, E));
  CHECK(gpulease_session_sync(s, &fl, E));
  CHECK(gpulease_mem_read(s, b, 0, w, sizeof w, E));
  for (int i = 0; i < 16; i++) assert_int_equal(w[i], 11);
  CHECK(gpulease_session_close(s, E));
  CHECK(gpulease_lease_free(c, &l, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * gpulease_call
 * ==================================================================== */

static void test_call_layout(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d);
  gpulease_client *c = gl_test_connect(&d, 20000);
  size_t len;
  char *ptx = kernel_ptx("scale", &len);
  enum { N = 1000 };
  float x[N], y[N], z[N];
  for (int i = 0; i < N; i++) x[i] = (float)i;
  memcpy(y, x, sizeof x);
  float alpha = 3.0f;
  int32_t n = N;
  /* scale(x, alpha, n) in place: INOUT */
  gpulease_call_arg args[] = {{.kind = GPULEASE_CALL_INOUT, .data = x, .out = z, .size = sizeof x},
                              {.kind = GPULEASE_CALL_SCALAR, .data = &alpha, .size = 4},
                              {.kind = GPULEASE_CALL_SCALAR, .data = &n, .size = 4}};
  gpulease_call_desc cd;
  gpulease_call_desc_default(&cd);
  assert_int_equal(cd.fresh_ttl_s, 60);
  assert_int_equal(cd.fresh_gpu_index, GPULEASE_ANY_GPU);
  assert_int_equal(cd.max_attempts, 4);
  assert_int_equal(cd.backoff_ms, 100);
  cd.image = ptx;
  cd.image_size = len;
  cd.kernel = "scale";
  cd.grid[0] = (N + 255) / 256;
  cd.block[0] = 256;
  cd.args = args;
  cd.arg_count = 3;
  uint64_t ns = 0;
  CHECK(gpulease_call(c, NULL, &cd, &ns, E));
  for (int i = 0; i < N; i++) assert_true(z[i] == 3.0f * y[i]);
  assert_true(ns > 0);

  /* On a lease of the caller's: it stays. */
  gpulease_lease l = lease(c, 1 * MiB, 60);
  alpha = 0.5f;
  CHECK(gpulease_call(c, &l, &cd, NULL, E));
  for (int i = 0; i < N; i++) assert_true(z[i] == 0.5f * y[i]);
  CHECK(gpulease_lease_query(c, &l, E));
  assert_int_equal(l.submits, 1);
  CHECK(gpulease_lease_free(c, &l, E));

  /* vector_add with the OUT buffer first: outputs need not come last, and
   * an OUT buffer reads back zeros where the kernel does not write. */
  free(ptx);
  ptx = kernel_ptx("vector_add", &len);
  float out[N + 64], a[N], b[N];
  for (int i = 0; i < N; i++) a[i] = (float)i, b[i] = 1.0f;
  memset(out, 0xff, sizeof out);
  gpulease_call_arg va[] = {{.kind = GPULEASE_CALL_IN, .data = a, .size = sizeof a},
                            {.kind = GPULEASE_CALL_IN, .data = b, .size = sizeof b},
                            {.kind = GPULEASE_CALL_OUT, .out = out, .size = sizeof out},
                            {.kind = GPULEASE_CALL_SCALAR, .data = &n, .size = 4}};
  cd.image = ptx;
  cd.image_size = len;
  cd.kernel = "vector_add";
  cd.args = va;
  cd.arg_count = 4;
  CHECK(gpulease_call(c, NULL, &cd, NULL, E));
  for (int i = 0; i < N; i++) assert_true(out[i] == (float)i + 1.0f);
  for (int i = N; i < N + 64; i++) assert_true(out[i] == 0.0f);

  /* Errors other than connection errors are returned at once. */
  gpulease_error err;
  cd.kernel = "no_such_kernel";
  assert_int_equal(gpulease_call(c, NULL, &cd, NULL, &err), GPULEASE_LAUNCH_FAILED);
  va[3].size = 0;
  cd.kernel = "vector_add";
  assert_int_equal(gpulease_call(c, NULL, &cd, NULL, &err), GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "arg 3"));
  gpulease_inventory *inv = calloc(1, sizeof *inv);
  gpulease_inventory_init(inv);
  CHECK(gpulease_inventory_get(c, inv, E));
  assert_int_equal(inv->gpus[0].active_leases, 0); /* every call's lease freed */
  free(inv);

  /* The daemon is gone for good: the call tries max_attempts times. */
  va[3].size = 4;
  cd.max_attempts = 3;
  cd.backoff_ms = 20;
  assert_int_equal(gl_test_daemon_stop(&d), 0);
  uint64_t t0 = gl_mono_ns();
  gpulease_status st = gpulease_call(c, NULL, &cd, NULL, &err);
  uint64_t ms = (gl_mono_ns() - t0) / 1000000;
  assert_true(st == GPULEASE_DISCONNECTED || st == GPULEASE_TIMEOUT);
  assert_true(ms >= 60); /* 20 + 40 ms of backoff at least */
  free(ptx);
  gpulease_client_close(c);
}

/* ======================================================================
 * Renewer
 * ==================================================================== */

static int g_lost;
static gpulease_status g_lost_status;

static void on_lost(const gpulease_lease *l, gpulease_status st, const char *msg, void *user) {
  (void)l;
  (void)user;
  fprintf(stderr, "renewer: lost: %s: %s\n", gpulease_status_name(st), msg);
  g_lost++;
  g_lost_status = st;
}

static void test_renewer_unreachable(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d);
  gpulease_client *c = gl_test_connect(&d, 20000);
  gpulease_lease l = lease(c, 1 * MiB, 3);
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = d.addr;
  o.pin_sha256 = d.fingerprint;
  o.timeout_ms = 500;
  gpulease_renewer *r = NULL;
  gpulease_error err;
  assert_int_equal(gpulease_renewer_start(&o, &l, 0, on_lost, NULL, NULL, &err),
                   GPULEASE_INVALID_ARGUMENT);
  CHECK(gpulease_renewer_start(&o, &l, 0, on_lost, NULL, &r, E)); /* the lease's 3 s */
  /* The daemon freezes: renewals time out until the lease's expiry. */
  assert_int_equal(kill(d.pid, SIGSTOP), 0);
  for (int i = 0; i < 100 && !g_lost; i++) usleep(100000);
  assert_int_equal(kill(d.pid, SIGCONT), 0);
  assert_int_equal(g_lost, 1);
  assert_int_equal(g_lost_status, GPULEASE_DISCONNECTED);
  assert_int_equal(gpulease_renewer_status(r, &err), GPULEASE_DISCONNECTED);
  assert_non_null(strstr(err.message, "before expiry"));
  gpulease_renewer_stop(r);

  /* stop is prompt while the thread sleeps. */
  gpulease_lease l2 = lease(c, 1 * MiB, 60);
  CHECK(gpulease_renewer_start(&o, &l2, 60, on_lost, NULL, &r, E));
  CHECK(gpulease_renewer_status(r, E));
  uint64_t t0 = gl_mono_ns();
  gpulease_renewer_stop(r);
  assert_true(gl_mono_ns() - t0 < 1000000000ull);
  gpulease_renewer_stop(NULL);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * The CLI, step by step
 * ==================================================================== */

/* Runs the CLI with args; its stdout (first 4 KiB) into out. Exit code. */

static void test_cli_session(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d);
  gpulease_client *c = gl_test_connect(&d, 20000);
  gpulease_lease l = lease(c, 8 * MiB, 120);
  char hex[2 * GPULEASE_SECRET_BYTES + 1], L[160], out[4096], sid[32], buf[32], mod[32];
  gpulease_secret_to_hex(l.secret, hex);
  snprintf(L, sizeof L, "--lease %llu --secret %s", (unsigned long long)l.id, hex);
  const char *bin = getenv("GL_TEST_BIN_DIR");
  char tmp[] = "/tmp/gl-cli-session-XXXXXX";
  int fd = mkstemp(tmp);
  assert_true(fd >= 0);
  float v[256];
  for (int i = 0; i < 256; i++) v[i] = (float)i;
  assert_int_equal(write(fd, v, sizeof v), (ssize_t)sizeof v);
  close(fd);

  assert_int_equal(gl_test_cli(&d, out, sizeof out, "session open %s", L), 0);
  assert_int_equal(sscanf(out, "%31s", sid), 1);
  assert_int_equal(gl_test_cli(&d, out, sizeof out, "mem alloc --session %s --size 1K %s", sid, L), 0);
  assert_int_equal(sscanf(out, "%31s", buf), 1);
  assert_int_equal(strncmp(buf, "0x", 2), 0);
  assert_int_equal(gl_test_cli(&d, out, sizeof out, "mem write %s --session %s --input %s %s", buf, sid,
                       tmp, L), 0);
  assert_non_null(strstr(out, "wrote 1024 bytes"));
  assert_int_equal(gl_test_cli(&d, out, sizeof out, "module load --session %s --binary %s/kernels/scale.ptx %s",
                       sid, bin ? bin : ".", L), 0);
  assert_int_equal(sscanf(out, "%31s", mod), 1);
  assert_non_null(strstr(out, "cache: "));
  assert_int_equal(gl_test_cli(&d, out, sizeof out, "--json func info --session %s --module %s --kernel scale %s",
                       sid, mod, L), 0);
  assert_non_null(strstr(out, "\"param_count\": 3"));
  assert_int_equal(gl_test_cli(&d, out, sizeof out,
                       "launch --session %s --module %s --kernel scale --grid 1 --block 256 "
                       "--arg buf:%s --arg f32:2 --arg i32:256 %s",
                       sid, mod, buf, L), 0);
  assert_non_null(strstr(out, "completed"));
  assert_int_equal(gl_test_cli(&d, out, sizeof out,
                       "mem read %s --session %s --size 16 --offset 16 --format f32 %s", buf, sid, L), 0);
  assert_non_null(strstr(out, "[    0]            8           10           12           14"));
  assert_int_equal(gl_test_cli(&d, out, sizeof out, "launch --session %s --module %s --kernel scale "
                       "--arg ptr:0 %s", sid, mod, L), 2);
  assert_int_equal(gl_test_cli(&d, out, sizeof out, "session sync %s %s", sid, L), 0);
  assert_non_null(strstr(out, "no failure"));
  /* A failure: sync names the op. */
  assert_int_equal(gl_test_cli(&d, out, sizeof out, "mem free 0x1234 --session %s %s", sid, L), 1);
  assert_non_null(strstr(out, "INVALID_HANDLE"));
  assert_int_equal(gl_test_cli(&d, out, sizeof out, "--json session sync %s %s", sid, L), 1);
  assert_non_null(strstr(out, "\"failed_op\": \"MEM_FREE\""));
  assert_int_equal(gl_test_cli(&d, out, sizeof out, "session close %s %s", sid, L), 0);
  assert_non_null(strstr(out, "closed"));
  assert_int_equal(gl_test_cli(&d, out, sizeof out, "mem alloc --session %s --size 1K %s", sid, L), 1);
  unlink(tmp);
  CHECK(gpulease_lease_free(c, &l, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * Batching of pipelined ops
 * ==================================================================== */

static const char k_ptx_nop[] = ".version 8.0\n.target sm_75\n.address_size 64\n"
                                ".visible .entry nop(.param .u64 p)\n{\n  ret;\n}\n";

/* The u32 at region offset off, read by a GPU_SUBMIT on the lease (its
 * implicit session's lane, beside the session's). */
static uint32_t region_u32(gpulease_client *c, const gpulease_lease *l, uint64_t off) {
  gpulease_submit_desc d;
  gpulease_submit_desc_default(&d);
  d.image = k_ptx_nop;
  d.image_size = sizeof k_ptx_nop - 1;
  d.format = GPULEASE_IMAGE_PTX;
  d.kernel = "nop";
  d.output_offset = off;
  d.output_size = 4;
  gpulease_submit_result r = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
  CHECK(gpulease_submit(c, l, &d, &r, E));
  uint32_t v;
  memcpy(&v, r.output, 4);
  gpulease_submit_result_release(&r);
  return v;
}

static void test_batching(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d);
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease l = lease(c, 1 * MiB, 120);
  gpulease_session *s = open_session(c, &l);
  gpulease_error err;
  assert_int_equal(gpulease_session_set_batch(s, 0, &err), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(gpulease_session_set_batch(s, 1025, &err), GPULEASE_INVALID_ARGUMENT);
  gpulease_buffer b;
  uint64_t off;
  CHECK(gpulease_mem_alloc_region(s, 4096, &b, &off, E));

  /* A lone op goes at once; the next, while the first is in flight, waits
   * in the batch until a call that waits, or gpulease_session_flush(). */
  CHECK(gpulease_mem_set(s, b, 0, 4, 11, 1, E));
  for (int i = 0; i < 100 && region_u32(c, &l, off) != 11; i++) usleep(20000);
  assert_int_equal(region_u32(c, &l, off), 11);
  CHECK(gpulease_mem_set(s, b, 0, 4, 22, 1, E));
  usleep(300000);
  assert_int_equal(region_u32(c, &l, off), 11); /* still held by the library */
  CHECK(gpulease_session_flush(s, E));
  for (int i = 0; i < 100 && region_u32(c, &l, off) != 22; i++) usleep(20000);
  assert_int_equal(region_u32(c, &l, off), 22);

  /* Batched or not, the ops run in order, and a failure is reported with
   * its op and seq. */
  for (unsigned batch = 1; batch <= 64; batch += 63) {
    CHECK(gpulease_session_set_batch(s, batch, E));
    for (uint32_t i = 1; i <= 1000; i++) CHECK(gpulease_mem_set(s, b, 0, 4, i, 1, E));
    gpulease_op_failure f = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
    CHECK(gpulease_session_sync(s, &f, E));
    uint32_t v = 0;
    CHECK(gpulease_mem_read(s, b, 0, &v, 4, E));
    assert_int_equal(v, 1000);
    for (uint32_t i = 1; i <= 300; i++)
      CHECK(gpulease_mem_set(s, i == 200 ? b ^ 1 : b, 0, 4, i, 1, E));
    assert_int_equal(gpulease_session_sync(s, &f, &err), GPULEASE_INVALID_HANDLE);
    assert_string_equal(f.op_name, "MEMSET");
    uint64_t bad_seq = f.seq;
    CHECK(gpulease_session_acknowledge(s, bad_seq, E));
    CHECK(gpulease_mem_read(s, b, 0, &v, 4, E));
    assert_int_equal(v, 199); /* the ops after the failure failed fast */
    printf("batch %u: the failed MEMSET was seq %llu\n", batch, (unsigned long long)bad_seq);
  }
  CHECK(gpulease_session_close(s, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_local_checks),
      cmocka_unit_test(test_transfers),
      cmocka_unit_test(test_pipelined_failure_and_reconnect),
      cmocka_unit_test(test_call_layout),
      cmocka_unit_test(test_renewer_unreachable),
      cmocka_unit_test(test_cli_session),
      cmocka_unit_test(test_batching),
  };
  if (getenv("GL_TEST_FILTER")) cmocka_set_test_filter(getenv("GL_TEST_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
