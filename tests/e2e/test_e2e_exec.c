/*
 * test_e2e_exec.c - launches beyond LAUNCH against a real gpuleased: bursts
 * (BURST: many launches in one op, each with its own function, dimensions
 * and arguments, with the same results as the launches one by one; on a GPU
 * the daemon's CUDA graphs, rebuilt, reused and updated), events
 * (EVENT_RECORD, EVENT_ELAPSED), cooperative launches with grid-wide sync
 * and thread-block clusters with distributed shared memory (LAUNCH_EX,
 * GPU_SUBMIT's attributes), and their refusals. On the emulated device in
 * CI; with GL_TEST_DEVICE=cuda on a GPU (tests/gpu/check.sh).
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
#include "daemon_harness.h"
#include "lib_check.h"
#include "gpulease/gpulease.h"

static bool on_gpu(void) {
  const char *d = getenv("GL_TEST_DEVICE");
  return d && strcmp(d, "cuda") == 0;
}

/* p[i] += v and p[i] *= v: one thread each, so that a burst's order shows. */
static const char k_ptx[] =
    ".version 8.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry add_at(.param .u64 p, .param .u32 i, .param .u32 v)\n{\n"
    "  .reg .b32 %r<4>;\n  .reg .b64 %rd<4>;\n"
    "  ld.param.u64 %rd1, [p];\n  ld.param.u32 %r1, [i];\n  ld.param.u32 %r2, [v];\n"
    "  mul.wide.u32 %rd2, %r1, 4;\n  add.s64 %rd3, %rd1, %rd2;\n"
    "  ld.global.u32 %r3, [%rd3];\n  add.u32 %r3, %r3, %r2;\n  st.global.u32 [%rd3], %r3;\n"
    "  ret;\n}\n"
    ".visible .entry mul_at(.param .u64 p, .param .u32 i, .param .u32 v)\n{\n"
    "  .reg .b32 %r<4>;\n  .reg .b64 %rd<4>;\n"
    "  ld.param.u64 %rd1, [p];\n  ld.param.u32 %r1, [i];\n  ld.param.u32 %r2, [v];\n"
    "  mul.wide.u32 %rd2, %r1, 4;\n  add.s64 %rd3, %rd1, %rd2;\n"
    "  ld.global.u32 %r3, [%rd3];\n  mul.lo.u32 %r3, %r3, %r2;\n  st.global.u32 [%rd3], %r3;\n"
    "  ret;\n}\n"
    /* A Newton square-root solver's iteration: st[0] the loop's flag, st[1]
     * the iteration count (solver_begin clears the one, counts the other);
     * newton_step sets the flag while some x still changes (64 at most). */
    ".visible .entry solver_begin(.param .u64 pst)\n{\n"
    "  .reg .b32 %r<3>;\n  .reg .b64 %rd<2>;\n"
    "  ld.param.u64 %rd1, [pst];\n  mov.u32 %r1, 0;\n  st.global.u32 [%rd1], %r1;\n"
    "  ld.global.u32 %r2, [%rd1+4];\n  add.u32 %r2, %r2, 1;\n  st.global.u32 [%rd1+4], %r2;\n"
    "  ret;\n}\n"
    ".visible .entry newton_step(.param .u64 px, .param .u64 pa, .param .u64 pst, "
    ".param .u32 n)\n{\n"
    "  .reg .b32 %r<8>;\n  .reg .f32 %f<6>;\n  .reg .b64 %rd<8>;\n  .reg .pred %p<3>;\n"
    "  ld.param.u64 %rd1, [px];\n  ld.param.u64 %rd2, [pa];\n  ld.param.u64 %rd3, [pst];\n"
    "  ld.param.u32 %r1, [n];\n"
    "  mov.u32 %r2, %ctaid.x;\n  mov.u32 %r3, %ntid.x;\n  mov.u32 %r4, %tid.x;\n"
    "  mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "  setp.ge.u32 %p1, %r5, %r1;\n  @%p1 bra DONE;\n"
    "  mul.wide.u32 %rd4, %r5, 4;\n  add.s64 %rd5, %rd1, %rd4;\n  add.s64 %rd6, %rd2, %rd4;\n"
    "  ld.global.f32 %f1, [%rd5];\n  ld.global.f32 %f2, [%rd6];\n"
    "  div.rn.f32 %f3, %f2, %f1;\n  add.rn.f32 %f4, %f1, %f3;\n"
    "  mul.rn.f32 %f5, %f4, 0f3F000000;\n"
    "  setp.eq.f32 %p2, %f5, %f1;\n  @%p2 bra DONE;\n"
    "  st.global.f32 [%rd5], %f5;\n"
    "  ld.global.u32 %r6, [%rd3+4];\n  setp.ge.u32 %p1, %r6, 64;\n  @%p1 bra DONE;\n"
    "  mov.u32 %r7, 1;\n  st.global.u32 [%rd3], %r7;\n"
    "DONE:\n  ret;\n}\n";

#define SLOTS 64
#define BURST_N 1000

typedef struct fixture {
  gl_test_daemon d;
  gpulease_client *c;
  gpulease_lease l;
  gpulease_session *s;
  gpulease_function add, mul, solver_begin, newton_step;
  gpulease_module mod;
  gpulease_buffer buf;
} fixture;

static void setup(fixture *f) {
  memset(f, 0, sizeof *f);
  assert_int_equal(gl_test_daemon_start(&f->d, on_gpu() ? NULL : "64M", NULL), 0);
  f->c = gl_test_connect(&f->d, 120000);
  CHECK(gpulease_lease_alloc(f->c, GPULEASE_ANY_GPU, 16 * MiB, 300, &f->l, E));
  CHECK(gpulease_session_open(f->c, &f->l, &f->s, E));
  gpulease_module m;
  CHECK(gpulease_module_load(f->s, k_ptx, sizeof k_ptx - 1, GPULEASE_IMAGE_PTX, &m, NULL, E));
  CHECK(gpulease_function_get(f->s, m, "add_at", &f->add, NULL, E));
  CHECK(gpulease_function_get(f->s, m, "mul_at", &f->mul, NULL, E));
  CHECK(gpulease_function_get(f->s, m, "solver_begin", &f->solver_begin, NULL, E));
  CHECK(gpulease_function_get(f->s, m, "newton_step", &f->newton_step, NULL, E));
  f->mod = m;
  CHECK(gpulease_mem_alloc(f->s, SLOTS * 4, &f->buf, E));
}

static void teardown(fixture *f) {
  CHECK(gpulease_session_close(f->s, E));
  CHECK(gpulease_lease_free(f->c, &f->l, E));
  gpulease_client_close(f->c);
  assert_int_equal(gl_test_daemon_stop(&f->d), 0);
}

static void sync_ok(gpulease_session *s) {
  gpulease_op_failure fl = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  gpulease_error e;
  gpulease_status st = gpulease_session_sync(s, &fl, &e);
  if (st != GPULEASE_OK) fprintf(stderr, "sync: %s: %s\n", gpulease_status_name(st), e.message);
  assert_int_equal(st, GPULEASE_OK);
  assert_int_equal(fl.status, GPULEASE_OK);
}

static void set_slots(fixture *f, const uint32_t *v) {
  CHECK(gpulease_mem_write(f->s, f->buf, 0, v, SLOTS * 4, E));
}

static void get_slots(fixture *f, uint32_t *v) {
  CHECK(gpulease_mem_read(f->s, f->buf, 0, v, SLOTS * 4, E));
}

/* A burst of n launches: launch k adds (or, every 7th, multiplies by)
 * val(k, round) at slot (k * 13) % SLOTS; ref applies the same on the CPU.
 * args holds 3 args a launch. */
static void make_burst(fixture *f, gpulease_burst_launch *b, gpulease_arg *args, size_t n,
                       uint32_t round, uint32_t *ref) {
  for (size_t k = 0; k < n; k++) {
    uint32_t slot = (uint32_t)(k * 13) % SLOTS, v = (uint32_t)(k % 5 + 1 + round);
    bool mul = k % 7 == 3;
    args[3 * k] = gpulease_arg_buffer(f->buf, 0);
    args[3 * k + 1] = gpulease_arg_scalar(&slot, 4);
    args[3 * k + 2] = gpulease_arg_scalar(&v, 4);
    memset(&b[k], 0, sizeof b[k]);
    b[k].function = mul ? f->mul : f->add;
    b[k].grid[0] = b[k].grid[1] = b[k].grid[2] = 1;
    b[k].block[0] = b[k].block[1] = b[k].block[2] = 1;
    b[k].args = &args[3 * k];
    b[k].arg_count = 3;
    if (ref) ref[slot] = mul ? ref[slot] * v : ref[slot] + v;
  }
}

/* ======================================================================
 * Bursts
 * ==================================================================== */

static void test_burst_results(void **state) {
  (void)state;
  static fixture f;
  setup(&f);
  static gpulease_burst_launch b[BURST_N];
  static gpulease_arg args[3 * BURST_N];
  uint32_t init[SLOTS], ref[SLOTS], got[SLOTS];
  for (int i = 0; i < SLOTS; i++) init[i] = (uint32_t)i;
  /* Round 0 builds the graph; round 1 the same shape with the same
   * arguments (a replay); round 2 other values (node updates); then a
   * shorter burst (another shape) and the first shape again. */
  const uint32_t rounds[] = {0, 0, 5, 0};
  for (size_t r = 0; r < sizeof rounds / sizeof rounds[0]; r++) {
    set_slots(&f, init);
    memcpy(ref, init, sizeof ref);
    make_burst(&f, b, args, BURST_N, rounds[r], ref);
    CHECK(gpulease_burst(f.s, b, BURST_N, E));
    sync_ok(f.s);
    get_slots(&f, got);
    assert_memory_equal(got, ref, sizeof ref);
    if (r == 2) {
      set_slots(&f, init);
      memcpy(ref, init, sizeof ref);
      make_burst(&f, b, args, 10, 1, ref);
      CHECK(gpulease_burst(f.s, b, 10, E));
      sync_ok(f.s);
      get_slots(&f, got);
      assert_memory_equal(got, ref, sizeof ref);
    }
  }
  /* The same launches one by one give the same bytes. */
  set_slots(&f, init);
  memcpy(ref, init, sizeof ref);
  make_burst(&f, b, args, 100, 2, ref);
  for (size_t k = 0; k < 100; k++)
    CHECK(gpulease_launch(f.s, b[k].function, b[k].grid, b[k].block, 0, b[k].args, 3, E));
  sync_ok(f.s);
  uint32_t one_by_one[SLOTS];
  get_slots(&f, one_by_one);
  set_slots(&f, init);
  CHECK(gpulease_burst(f.s, b, 100, E));
  sync_ok(f.s);
  get_slots(&f, got);
  assert_memory_equal(got, one_by_one, sizeof got);
  assert_memory_equal(got, ref, sizeof ref);
  teardown(&f);
}

static void test_burst_refusals(void **state) {
  (void)state;
  static fixture f;
  setup(&f);
  static gpulease_burst_launch b[16];
  static gpulease_arg args[3 * 16];
  gpulease_error e;
  /* Local checks: no round trip. */
  make_burst(&f, b, args, 16, 0, NULL);
  assert_int_equal(gpulease_burst(f.s, b, 0, &e), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(gpulease_burst(f.s, b, GPULEASE_MAX_BURST + 1, &e),
                   GPULEASE_INVALID_ARGUMENT);
  b[3].block[1] = 0;
  assert_int_equal(gpulease_burst(f.s, b, 16, &e), GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(e.message, "launch 3 of the burst"));
  b[3].block[1] = 1;
  /* On the daemon: a forged function at index 5 fails the whole burst
   * before any launch runs. */
  uint32_t init[SLOTS] = {0}, got[SLOTS];
  set_slots(&f, init);
  b[5].function = 0x0300000000001234ull;
  CHECK(gpulease_burst(f.s, b, 16, E)); /* pipelined */
  gpulease_op_failure fl = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  assert_int_equal(gpulease_session_sync(f.s, &fl, &e), GPULEASE_INVALID_HANDLE);
  assert_int_equal(fl.status, GPULEASE_INVALID_HANDLE);
  assert_int_equal(fl.op, 0x0333);
  assert_string_equal(fl.op_name, "BURST");
  assert_non_null(strstr(e.message, "launch 5 of the BURST"));
  CHECK(gpulease_session_acknowledge(f.s, fl.seq, E));
  get_slots(&f, got);
  assert_memory_equal(got, init, sizeof got);
  /* A parameter of the wrong size at index 9. */
  make_burst(&f, b, args, 16, 0, NULL);
  uint64_t wide = 1;
  args[3 * 9 + 2] = gpulease_arg_scalar(&wide, 8);
  CHECK(gpulease_burst(f.s, b, 16, E));
  assert_int_equal(gpulease_session_sync(f.s, &fl, &e), GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(e.message, "launch 9 of the BURST"));
  assert_non_null(strstr(e.message, "parameter 2"));
  CHECK(gpulease_session_acknowledge(f.s, fl.seq, E));
  /* The same bytes twice reuse what the daemon prepared, but not once a
   * buffer they name is gone. */
  gpulease_buffer tmp;
  CHECK(gpulease_mem_alloc(f.s, SLOTS * 4, &tmp, E));
  make_burst(&f, b, args, 16, 0, NULL);
  for (int k = 0; k < 16; k++) args[3 * k] = gpulease_arg_buffer(tmp, 0);
  CHECK(gpulease_burst(f.s, b, 16, E));
  CHECK(gpulease_burst(f.s, b, 16, E));
  sync_ok(f.s);
  CHECK(gpulease_mem_free(f.s, tmp, E));
  CHECK(gpulease_burst(f.s, b, 16, E));
  assert_int_equal(gpulease_session_sync(f.s, &fl, &e), GPULEASE_INVALID_HANDLE);
  assert_non_null(strstr(e.message, "launch 0 of the BURST"));
  CHECK(gpulease_session_acknowledge(f.s, fl.seq, E));
  teardown(&f);
}

/* ======================================================================
 * Events
 * ==================================================================== */

static void test_events(void **state) {
  (void)state;
  static fixture f;
  setup(&f);
  static gpulease_burst_launch b[BURST_N];
  static gpulease_arg args[3 * BURST_N];
  make_burst(&f, b, args, BURST_N, 0, NULL);
  CHECK(gpulease_event_record(f.s, 0, E));
  CHECK(gpulease_burst(f.s, b, BURST_N, E));
  CHECK(gpulease_event_record(f.s, 1, E));
  CHECK(gpulease_burst(f.s, b, 10, E));
  CHECK(gpulease_event_record(f.s, 255, E));
  uint64_t t01 = 0, t0z = 0, t10 = 0;
  CHECK(gpulease_event_elapsed(f.s, 0, 1, &t01, E));
  CHECK(gpulease_event_elapsed(f.s, 0, 255, &t0z, E));
  CHECK(gpulease_event_elapsed(f.s, 1, 0, &t10, E));
  printf("events: 1000 launches %.1f us, 1010 %.1f us\n", (double)t01 / 1e3, (double)t0z / 1e3);
  assert_true(t01 > 0);
  assert_true(t0z >= t01);
  assert_true(t01 < 60ull * 1000 * 1000 * 1000);
  assert_int_equal(t10, 0); /* end before start */
  gpulease_error e;
  uint64_t ns;
  assert_int_equal(gpulease_event_elapsed(f.s, 0, 256, &ns, &e), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(gpulease_event_record(f.s, 256, &e), GPULEASE_INVALID_ARGUMENT);
  /* A slot never recorded: the daemon's refusal, as the op's own error. */
  assert_int_equal(gpulease_event_elapsed(f.s, 0, 7, &ns, &e), GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(e.message, "event 7 has not been recorded"));
  gpulease_op_failure fl = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  assert_int_equal(gpulease_session_sync(f.s, &fl, &e), GPULEASE_INVALID_ARGUMENT);
  CHECK(gpulease_session_acknowledge(f.s, fl.seq, E));
  /* Re-recording a slot moves it. */
  CHECK(gpulease_event_record(f.s, 0, E));
  CHECK(gpulease_event_elapsed(f.s, 0, 1, &ns, E));
  assert_int_equal(ns, 0);
  teardown(&f);
}


/* ======================================================================
 * Graphs: capture, replay, updated arguments, WHILE loops
 * ==================================================================== */

static gpulease_arg u32arg(uint32_t v) { return gpulease_arg_scalar(&v, 4); }

static void test_graph_replay(void **state) {
  (void)state;
  static fixture f;
  setup(&f);
  gpulease_buffer out;
  CHECK(gpulease_mem_alloc(f.s, SLOTS * 4, &out, E));
  uint32_t init[SLOTS], ref[SLOTS], got[SLOTS];
  for (int i = 0; i < SLOTS; i++) init[i] = (uint32_t)(3 * i + 1);
  set_slots(&f, init);
  /* The recipe: 100 launches (add, every 7th a multiply), a burst of 10
   * more, a memset of slot 63 to 5, a copy of the slots to `out`. */
  static gpulease_burst_launch b[110];
  static gpulease_arg args[3 * 110];
  memcpy(ref, init, sizeof ref);
  CHECK(gpulease_graph_begin(f.s, E));
  make_burst(&f, b, args, 110, 0, NULL);
  for (size_t k = 0; k < 100; k++)
    CHECK(gpulease_launch(f.s, b[k].function, b[k].grid, b[k].block, 0, b[k].args, 3, E));
  CHECK(gpulease_burst(f.s, b + 100, 10, E));
  CHECK(gpulease_mem_set(f.s, f.buf, 63 * 4, 4, 5, 1, E));
  CHECK(gpulease_mem_copy(f.s, out, 0, f.buf, 0, SLOTS * 4, E));
  gpulease_graph g = 0;
  uint32_t nodes = 0;
  CHECK(gpulease_graph_end(f.s, &g, &nodes, E));
  assert_true(g != 0);
  assert_int_equal(nodes, 110);
  sync_ok(f.s);
  get_slots(&f, got); /* recorded, not run */
  assert_memory_equal(got, init, sizeof got);
  /* Three replays, each the recipe once more. */
  for (int r = 0; r < 3; r++) {
    make_burst(&f, b, args, 110, 0, ref);
    ref[63] = 5;
    CHECK(gpulease_graph_launch(f.s, g, E));
  }
  sync_ok(f.s);
  uint32_t out_got[SLOTS];
  CHECK(gpulease_mem_read(f.s, out, 0, out_got, sizeof out_got, E));
  get_slots(&f, got);
  assert_memory_equal(got, ref, sizeof ref);
  assert_memory_equal(out_got, ref, sizeof ref);
  /* Node 37 (an add at slot 37*13 % 64) adds 1000 instead, from now on. */
  uint32_t slot37 = (37 * 13) % SLOTS;
  gpulease_arg na[3] = {gpulease_arg_buffer(f.buf, 0), u32arg(slot37), u32arg(1000)};
  CHECK(gpulease_graph_set_args(f.s, g, 37, na, 3, E));
  set_slots(&f, init);
  memcpy(ref, init, sizeof ref);
  make_burst(&f, b, args, 110, 0, NULL);
  for (size_t k = 0; k < 110; k++) {
    uint32_t slot = (uint32_t)(k * 13) % SLOTS, v = (uint32_t)(k % 5 + 1);
    if (k == 37) v = 1000;
    ref[slot] = k % 7 == 3 ? ref[slot] * v : ref[slot] + v;
  }
  ref[63] = 5;
  CHECK(gpulease_graph_launch(f.s, g, E));
  sync_ok(f.s);
  get_slots(&f, got);
  assert_memory_equal(got, ref, sizeof ref);
  /* A second graph beside it, then both go. */
  CHECK(gpulease_graph_begin(f.s, E));
  CHECK(gpulease_mem_set(f.s, f.buf, 0, 4, 7, SLOTS, E));
  gpulease_graph g2 = 0;
  CHECK(gpulease_graph_end(f.s, &g2, &nodes, E));
  assert_int_equal(nodes, 0);
  assert_true(g2 != g);
  CHECK(gpulease_graph_launch(f.s, g2, E));
  sync_ok(f.s);
  get_slots(&f, got);
  for (int i = 0; i < SLOTS; i++) assert_int_equal(got[i], 7);
  CHECK(gpulease_graph_destroy(f.s, g, E));
  CHECK(gpulease_graph_destroy(f.s, g2, E));
  sync_ok(f.s);
  teardown(&f);
}

static void expect_failure(gpulease_session *s, gpulease_status want, uint16_t op,
                           const char *needle) {
  gpulease_op_failure fl = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  gpulease_error e;
  gpulease_status st = gpulease_session_sync(s, &fl, &e);
  if (st != want) fprintf(stderr, "sync: %s: %s\n", gpulease_status_name(st), e.message);
  assert_int_equal(st, want);
  assert_int_equal(fl.op, op);
  if (!strstr(e.message, needle)) fprintf(stderr, "message: %s\n", e.message);
  assert_non_null(strstr(e.message, needle));
  CHECK(gpulease_session_acknowledge(s, fl.seq, E));
}

static void test_graph_refusals(void **state) {
  (void)state;
  static fixture f;
  setup(&f);
  gpulease_error e;
  gpulease_graph g;
  uint32_t init[SLOTS] = {0};
  /* No recording. */
  assert_int_equal(gpulease_graph_end(f.s, &g, NULL, &e), GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(e.message, "no graph is being recorded"));
  expect_failure(f.s, GPULEASE_INVALID_ARGUMENT, 0x0362, "no graph");
  /* A host transfer while recording drops the recording. */
  CHECK(gpulease_graph_begin(f.s, E));
  gpulease_arg a[3] = {gpulease_arg_buffer(f.buf, 0), u32arg(1), u32arg(1)};
  const uint32_t one[3] = {1, 1, 1};
  CHECK(gpulease_launch(f.s, f.add, one, one, 0, a, 3, E));
  assert_int_equal(gpulease_mem_write(f.s, f.buf, 0, init, sizeof init, &e),
                   GPULEASE_INVALID_ARGUMENT);
  expect_failure(f.s, GPULEASE_INVALID_ARGUMENT, 0x0313, "not allowed while recording a graph");
  assert_int_equal(gpulease_graph_end(f.s, &g, NULL, &e), GPULEASE_INVALID_ARGUMENT);
  expect_failure(f.s, GPULEASE_INVALID_ARGUMENT, 0x0362, "no graph");
  /* Nothing recorded; GRAPH_BEGIN twice. */
  CHECK(gpulease_graph_begin(f.s, E));
  assert_int_equal(gpulease_graph_end(f.s, &g, NULL, &e), GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(e.message, "nothing was recorded"));
  expect_failure(f.s, GPULEASE_INVALID_ARGUMENT, 0x0362, "nothing was recorded");
  CHECK(gpulease_graph_begin(f.s, E));
  CHECK(gpulease_graph_begin(f.s, E));
  expect_failure(f.s, GPULEASE_INVALID_ARGUMENT, 0x0361, "not allowed while recording");
  CHECK(gpulease_graph_begin(f.s, E)); /* the refusal dropped the recording */
  CHECK(gpulease_launch(f.s, f.add, one, one, 0, a, 3, E));
  CHECK(gpulease_graph_end(f.s, &g, NULL, E));
  /* The module stays while a graph uses it. */
  CHECK(gpulease_module_unload(f.s, f.mod, E));
  expect_failure(f.s, GPULEASE_INVALID_ARGUMENT, 0x0322, "GRAPH_DESTROY them first");
  /* Handles and nodes. */
  CHECK(gpulease_graph_launch(f.s, g ^ 1, E));
  expect_failure(f.s, GPULEASE_INVALID_HANDLE, 0x0363, "is not a graph of session");
  CHECK(gpulease_graph_set_args(f.s, g, 1, a, 3, E));
  expect_failure(f.s, GPULEASE_INVALID_ARGUMENT, 0x0364, "1 kernel nodes");
  gpulease_arg wrong[2] = {gpulease_arg_buffer(f.buf, 0), u32arg(1)};
  CHECK(gpulease_graph_set_args(f.s, g, 0, wrong, 2, E));
  expect_failure(f.s, GPULEASE_INVALID_ARGUMENT, 0x0364, "takes 3 parameters");
  assert_int_equal(gpulease_graph_launch(f.s, 0, &e), GPULEASE_INVALID_HANDLE);
  /* A WHILE flag outside its buffer. */
  CHECK(gpulease_graph_begin_while(f.s, f.buf, SLOTS * 4, E));
  expect_failure(f.s, GPULEASE_INVALID_ARGUMENT, 0x0361, "outside buffer");
  assert_int_equal(gpulease_graph_begin_while(f.s, f.buf, 2, &e), GPULEASE_INVALID_ARGUMENT);
  CHECK(gpulease_graph_destroy(f.s, g, E));
  CHECK(gpulease_module_unload(f.s, f.mod, E));
  sync_ok(f.s);
  teardown(&f);
}

/* The Newton solver in C, as the kernels do it. */
static uint32_t newton_ref(float *x, const float *a, size_t n) {
  uint32_t iters = 0, flag;
  do {
    flag = 0;
    iters++;
    for (size_t i = 0; i < n; i++) {
      float nx = 0.5f * (x[i] + a[i] / x[i]);
      if (nx != x[i]) {
        x[i] = nx;
        if (iters < 64) flag = 1;
      }
    }
  } while (flag);
  return iters;
}

static void test_graph_while(void **state) {
  (void)state;
  static fixture f;
  setup(&f);
  enum { N = 1000 };
  static float a[N], x[N], got[N];
  for (int i = 0; i < N; i++) a[i] = x[i] = 1.0f + (float)i * 7.25f;
  gpulease_buffer bx, ba, bst;
  CHECK(gpulease_mem_alloc(f.s, sizeof x, &bx, E));
  CHECK(gpulease_mem_alloc(f.s, sizeof a, &ba, E));
  CHECK(gpulease_mem_alloc(f.s, 8, &bst, E));
  CHECK(gpulease_mem_write(f.s, bx, 0, x, sizeof x, E));
  CHECK(gpulease_mem_write(f.s, ba, 0, a, sizeof a, E));
  uint32_t st0[2] = {0, 0};
  CHECK(gpulease_mem_write(f.s, bst, 0, st0, sizeof st0, E));
  /* The loop: solver_begin, newton_step, while st[0] != 0. */
  CHECK(gpulease_graph_begin_while(f.s, bst, 0, E));
  gpulease_arg b1[1] = {gpulease_arg_buffer(bst, 0)};
  gpulease_arg b2[4] = {gpulease_arg_buffer(bx, 0), gpulease_arg_buffer(ba, 0),
                        gpulease_arg_buffer(bst, 0), u32arg(N)};
  const uint32_t one[3] = {1, 1, 1}, grid[3] = {(N + 255) / 256, 1, 1}, block[3] = {256, 1, 1};
  CHECK(gpulease_launch(f.s, f.solver_begin, one, one, 0, b1, 1, E));
  CHECK(gpulease_launch(f.s, f.newton_step, grid, block, 0, b2, 4, E));
  gpulease_graph g;
  gpulease_error e;
  uint32_t nodes;
  gpulease_status st = gpulease_graph_end(f.s, &g, &nodes, &e);
  if (st == GPULEASE_UNSUPPORTED) { /* a driver without conditional nodes */
    printf("graph WHILE loops: %s\n", e.message);
    skip();
  }
  CHECK(st);
  assert_int_equal(nodes, 2);
  CHECK(gpulease_graph_launch(f.s, g, E));
  sync_ok(f.s);
  uint32_t iters_ref = newton_ref(x, a, N);
  CHECK(gpulease_mem_read(f.s, bx, 0, got, sizeof got, E));
  uint32_t stv[2];
  CHECK(gpulease_mem_read(f.s, bst, 0, stv, sizeof stv, E));
  printf("graph WHILE loop: the solver converged in %u iterations (CPU: %u), in one replay\n",
         stv[1], iters_ref);
  assert_int_equal(stv[0], 0);
  assert_int_equal(stv[1], iters_ref);
  assert_true(iters_ref > 3);
  assert_memory_equal(got, x, sizeof got);
  teardown(&f);
}


/* ======================================================================
 * Cooperative and cluster launches (the corpus's kernels, sm_90 PTX)
 * ==================================================================== */


static char *read_ptx(const char *name, size_t *len) {
  char *p = gl_test_read_ptx(name, len);
  if (!p) fail();
  return p;
}

static gpulease_function corpus_kernel(fixture *f, const char *name) {
  size_t len;
  char *ptx = read_ptx(name, &len);
  gpulease_module m;
  CHECK(gpulease_module_load(f->s, ptx, len, GPULEASE_IMAGE_PTX, &m, NULL, E));
  free(ptx);
  gpulease_function fn;
  CHECK(gpulease_function_get(f->s, m, name, &fn, NULL, E));
  return fn;
}

/* coop_grid_sync's ring stencil on the CPU: `rounds` rounds from a. */
static void stencil_ref(uint32_t *a, uint32_t *b, unsigned n, int rounds) {
  for (int r = 0; r < rounds; r++) {
    const uint32_t *src = (r & 1) ? b : a;
    uint32_t *dst = (r & 1) ? a : b;
    for (unsigned i = 0; i < n; i++) dst[i] = src[i] + 3u * src[(i + 1) % n];
  }
}

static void test_cooperative(void **state) {
  (void)state;
  static fixture f;
  setup(&f);
  gpulease_function fn = corpus_kernel(&f, "coop_grid_sync");
  enum { BLOCKS = 8, T = 128, N = BLOCKS * T, ROUNDS = 5 };
  static float x[N], y[N];
  static uint32_t a[N], b[N], ga[N], gb[N];
  for (unsigned i = 0; i < N; i++) {
    x[i] = (float)(i % 17) + 0.5f;
    a[i] = i * 2654435761u;
    b[i] = 0;
  }
  gpulease_buffer bx, bp, by, ba, bb;
  CHECK(gpulease_mem_alloc(f.s, sizeof x, &bx, E));
  CHECK(gpulease_mem_alloc(f.s, BLOCKS * 4, &bp, E));
  CHECK(gpulease_mem_alloc(f.s, sizeof y, &by, E));
  CHECK(gpulease_mem_alloc(f.s, sizeof a, &ba, E));
  CHECK(gpulease_mem_alloc(f.s, sizeof b, &bb, E));
  CHECK(gpulease_mem_write(f.s, bx, 0, x, sizeof x, E));
  CHECK(gpulease_mem_write(f.s, ba, 0, a, sizeof a, E));
  CHECK(gpulease_mem_write(f.s, bb, 0, b, sizeof b, E));
  int32_t rounds = ROUNDS;
  gpulease_arg args[6] = {gpulease_arg_buffer(bx, 0), gpulease_arg_buffer(bp, 0),
                          gpulease_arg_buffer(by, 0), gpulease_arg_buffer(ba, 0),
                          gpulease_arg_buffer(bb, 0), gpulease_arg_scalar(&rounds, 4)};
  const uint32_t grid[3] = {BLOCKS, 1, 1}, block[3] = {T, 1, 1};
  gpulease_launch_attrs coop = {.struct_version = GPULEASE_LAUNCH_ATTRS_VERSION,
                                .flags = GPULEASE_LAUNCH_COOPERATIVE};
  CHECK(gpulease_launch_ex(f.s, fn, grid, block, 0, &coop, args, 6, E));
  sync_ok(f.s);
  CHECK(gpulease_mem_read(f.s, ba, 0, ga, sizeof ga, E));
  CHECK(gpulease_mem_read(f.s, bb, 0, gb, sizeof gb, E));
  CHECK(gpulease_mem_read(f.s, by, 0, y, sizeof y, E));
  stencil_ref(a, b, N, ROUNDS);
  assert_memory_equal(ga, a, sizeof a);
  assert_memory_equal(gb, b, sizeof b);
  double sum = 0;
  for (unsigned i = 0; i < N; i++) sum += y[i];
  assert_true(sum > 0.999 && sum < 1.001); /* every block saw every partial sum */
  /* A grid that cannot be co-resident: refused with the limit. */
  const uint32_t huge[3] = {1u << 20, 1, 1};
  CHECK(gpulease_launch_ex(f.s, fn, huge, block, 0, &coop, args, 6, E));
  gpulease_op_failure fl = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  gpulease_error e;
  assert_int_equal(gpulease_session_sync(f.s, &fl, &e), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(fl.op, 0x0332);
  printf("cooperative refusal: %s\n", e.message);
  assert_non_null(strstr(e.message, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"));
  assert_non_null(strstr(e.message, "at most"));
  CHECK(gpulease_session_acknowledge(f.s, fl.seq, E));
  /* Unknown flags never leave the library. */
  gpulease_launch_attrs bad = {.struct_version = GPULEASE_LAUNCH_ATTRS_VERSION, .flags = 0x80};
  assert_int_equal(gpulease_launch_ex(f.s, fn, grid, block, 0, &bad, args, 6, &e),
                   GPULEASE_INVALID_ARGUMENT);
  teardown(&f);
}

static void test_cluster(void **state) {
  (void)state;
  static fixture f;
  setup(&f);
  gpulease_function fn = corpus_kernel(&f, "cluster_dsmem");
  enum { BLOCKS = 8, T = 128, N = BLOCKS * T, CL = 4 };
  static float x[N], y[N], ref[N];
  static uint32_t info[BLOCKS];
  for (unsigned i = 0; i < N; i++) x[i] = (float)((i * 37) % 101) * 0.25f;
  gpulease_buffer bx, by, bi;
  CHECK(gpulease_mem_alloc(f.s, sizeof x, &bx, E));
  CHECK(gpulease_mem_alloc(f.s, sizeof y, &by, E));
  CHECK(gpulease_mem_alloc(f.s, sizeof info, &bi, E));
  CHECK(gpulease_mem_write(f.s, bx, 0, x, sizeof x, E));
  gpulease_arg args[3] = {gpulease_arg_buffer(bx, 0), gpulease_arg_buffer(by, 0),
                          gpulease_arg_buffer(bi, 0)};
  const uint32_t grid[3] = {BLOCKS, 1, 1}, block[3] = {T, 1, 1};
  gpulease_launch_attrs cl = {.struct_version = GPULEASE_LAUNCH_ATTRS_VERSION,
                              .cluster = {CL, 1, 1}};
  CHECK(gpulease_launch_ex(f.s, fn, grid, block, 0, &cl, args, 3, E));
  sync_ok(f.s);
  CHECK(gpulease_mem_read(f.s, by, 0, y, sizeof y, E));
  CHECK(gpulease_mem_read(f.s, bi, 0, info, sizeof info, E));
  for (unsigned blk = 0; blk < BLOCKS; blk++) {
    unsigned rank = blk % CL, first = blk - rank;
    for (unsigned t = 0; t < T; t++) {
      float acc = 0.0f;
      for (unsigned k = 0; k < CL; k++) acc = acc * 0.5f + x[(first + k) * T + (t + k) % T];
      ref[blk * T + t] = acc;
    }
    assert_int_equal(info[blk], T * (T + 1) / 2 + 100000u * rank + 1000000u * rank);
  }
  assert_memory_equal(y, ref, sizeof y);
  /* Clusters the grid cannot be cut into, or too large. */
  gpulease_op_failure fl = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  gpulease_error e;
  gpulease_launch_attrs three = {.struct_version = GPULEASE_LAUNCH_ATTRS_VERSION,
                                 .cluster = {3, 1, 1}};
  gpulease_launch_attrs big = {.struct_version = GPULEASE_LAUNCH_ATTRS_VERSION,
                               .cluster = {16, 1, 1}};
  CHECK(gpulease_launch_ex(f.s, fn, grid, block, 0, &three, args, 3, E));
  assert_int_equal(gpulease_session_sync(f.s, &fl, &e), GPULEASE_INVALID_ARGUMENT);
  printf("cluster refusal: %s\n", e.message);
  assert_non_null(strstr(e.message, "CUDA_ERROR_INVALID_CLUSTER_SIZE"));
  CHECK(gpulease_session_acknowledge(f.s, fl.seq, E));
  const uint32_t grid16[3] = {16, 1, 1};
  CHECK(gpulease_launch_ex(f.s, fn, grid16, block, 0, &big, args, 3, E));
  assert_int_equal(gpulease_session_sync(f.s, &fl, &e), GPULEASE_INVALID_ARGUMENT);
  printf("cluster refusal: %s\n", e.message);
  assert_non_null(strstr(e.message, "CUDA_ERROR_INVALID_CLUSTER_SIZE"));
  CHECK(gpulease_session_acknowledge(f.s, fl.seq, E));
  gpulease_launch_attrs half = {.struct_version = GPULEASE_LAUNCH_ATTRS_VERSION,
                                .cluster = {2, 0, 1}};
  assert_int_equal(gpulease_launch_ex(f.s, fn, grid, block, 0, &half, args, 3, &e),
                   GPULEASE_INVALID_ARGUMENT);
  teardown(&f);
}

/* GPU_SUBMIT with the cooperative attribute: the stencil in one call. */
static void test_submit_cooperative(void **state) {
  (void)state;
  static fixture f;
  setup(&f);
  size_t len;
  char *ptx = read_ptx("coop_grid_sync", &len);
  enum { BLOCKS = 4, T = 128, N = BLOCKS * T, ROUNDS = 4 };
  /* Region: x at 0, partial at 8192, y at 12288, a at 16384, b right after a. */
  static uint8_t input[24576];
  static uint32_t a[N], b[N];
  for (unsigned i = 0; i < N; i++) {
    float xv = 1.0f;
    memcpy(input + 4 * i, &xv, 4);
    a[i] = i * 7u + 1u;
  }
  memcpy(input + 16384, a, sizeof a);
  int32_t rounds = ROUNDS;
  gpulease_param p[6] = {gpulease_param_pointer(0),     gpulease_param_pointer(8192),
                         gpulease_param_pointer(12288), gpulease_param_pointer(16384),
                         gpulease_param_pointer(16384 + sizeof a), gpulease_param_scalar(&rounds, 4)};
  gpulease_submit_desc d;
  gpulease_submit_desc_default(&d);
  d.image = ptx;
  d.image_size = len;
  d.format = GPULEASE_IMAGE_PTX;
  d.kernel = "coop_grid_sync";
  d.grid[0] = BLOCKS;
  d.block[0] = T;
  d.input = input;
  d.input_size = sizeof input;
  d.output_offset = 16384;
  d.output_size = 2 * sizeof a;
  d.params = p;
  d.param_count = 6;
  d.launch_flags = GPULEASE_LAUNCH_COOPERATIVE;
  gpulease_submit_result r = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
  CHECK(gpulease_submit(f.c, &f.l, &d, &r, E));
  stencil_ref(a, b, N, ROUNDS);
  assert_memory_equal(r.output, a, sizeof a);
  assert_memory_equal((uint8_t *)r.output + sizeof a, b, sizeof b);
  gpulease_submit_result_release(&r);
  d.grid[0] = 1u << 20;
  gpulease_error e;
  assert_int_equal(gpulease_submit(f.c, &f.l, &d, &r, &e), GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(e.message, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"));
  free(ptx);
  teardown(&f);
}

/* The CLI: --cooperative and --cluster on submit, their refusals. */

static const char *ptx_path(const char *name, char *buf, size_t len) {
  const char *dir = getenv("GL_TEST_PTX_DIR");
  const char *src = getenv("GL_TEST_SRC_DIR");
  if (dir && *dir) snprintf(buf, len, "%s/%s.ptx", dir, name);
  else snprintf(buf, len, "%s/tests/emu/kernels/ptx/sm_90/%s.ptx", src ? src : ".", name);
  return buf;
}

static void test_cli_attributes(void **state) {
  (void)state;
  static fixture f;
  setup(&f);
  char secret[2 * GPULEASE_SECRET_BYTES + 1];
  for (int i = 0; i < GPULEASE_SECRET_BYTES; i++)
    snprintf(secret + 2 * i, 3, "%02x", f.l.secret[i]);
  char coop[1200], clus[1200], in[512], out[8192];
  ptx_path("coop_grid_sync", coop, sizeof coop);
  ptx_path("cluster_dsmem", clus, sizeof clus);
  /* coop_grid_sync on 4 blocks: x = 1.0 at 0, a at 16384 (a[i] = i), b
   * after it; two rounds of the stencil leave a as computed on the CPU. */
  enum { N = 512 };
  static uint8_t input[16384 + 8 * N];
  static uint32_t a[N], b[N];
  for (unsigned i = 0; i < N; i++) {
    float one = 1.0f;
    memcpy(input + 4 * i, &one, 4);
    a[i] = i;
  }
  memcpy(input + 16384, a, sizeof a);
  snprintf(in, sizeof in, "%s/coop-input.bin", f.d.dir);
  FILE *fp = fopen(in, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(input, 1, sizeof input, fp), sizeof input);
  fclose(fp);
  const char *args = "--arg ptr:0 --arg ptr:8192 --arg ptr:12288 --arg ptr:16384 --arg ptr:18432 "
                     "--arg i32:2";
  int rc = gl_test_cli(&f.d, out, sizeof out,
               "submit --lease %llu --secret %s --binary %s --kernel coop_grid_sync --grid 4 "
               "--block 128 --cooperative %s --input %s --output-offset 16384 --output-size %zu "
               "--format u32",
               (unsigned long long)f.l.id, secret, coop, args, in, sizeof a);
  assert_int_equal(rc, 0);
  stencil_ref(a, b, N, 2);
  char want[64];
  snprintf(want, sizeof want, "[    0] %10u %10u %10u", a[0], a[1], a[2]);
  assert_non_null(strstr(out, want));
  rc = gl_test_cli(&f.d, out, sizeof out,
           "submit --lease %llu --secret %s --binary %s --kernel coop_grid_sync --grid 1000000 "
           "--block 128 --cooperative %s --output-size 4",
           (unsigned long long)f.l.id, secret, coop, args);
  assert_int_equal(rc, 1);
  assert_non_null(strstr(out, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"));
  /* cluster_dsmem: info of 8 blocks in clusters of 4 through --cluster. */
  rc = gl_test_cli(&f.d, out, sizeof out,
           "submit --lease %llu --secret %s --binary %s --kernel cluster_dsmem --grid 8 "
           "--block 128 --cluster 4,1,1 --arg ptr:0 --arg ptr:8192 --arg ptr:16384 "
           "--output-offset 16384 --output-size 32 --format u32",
           (unsigned long long)f.l.id, secret, clus);
  assert_int_equal(rc, 0);
  assert_non_null(strstr(out, "3308256")); /* block 3: 8256 + 100000*3 + 1000000*3 */
  rc = gl_test_cli(&f.d, out, sizeof out,
           "submit --lease %llu --secret %s --binary %s --kernel cluster_dsmem --grid 8 "
           "--block 128 --cluster 3 --arg ptr:0 --arg ptr:8192 --arg ptr:16384",
           (unsigned long long)f.l.id, secret, clus);
  assert_int_equal(rc, 1);
  assert_non_null(strstr(out, "CUDA_ERROR_INVALID_CLUSTER_SIZE"));
  rc = gl_test_cli(&f.d, out, sizeof out, "submit --binary %s --kernel k --cluster 2,0", clus);
  assert_int_equal(rc, 2); /* usage */
  teardown(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_burst_results),
      cmocka_unit_test(test_burst_refusals),
      cmocka_unit_test(test_events),
      cmocka_unit_test(test_graph_replay),
      cmocka_unit_test(test_graph_refusals),
      cmocka_unit_test(test_graph_while),
      cmocka_unit_test(test_cooperative),
      cmocka_unit_test(test_cluster),
      cmocka_unit_test(test_submit_cooperative),
      cmocka_unit_test(test_cli_attributes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
