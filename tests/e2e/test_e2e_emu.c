/*
 * test_e2e_emu.c - GPU_SUBMIT end to end on the emulated device: a real
 * gpuleased (--device emu), its worker processes, and libgpulease over
 * loopback QUIC, running PTX that nvcc produced (build/kernels/).
 *
 * Checks results computed by the emulator (iota, vector_add, scale), the
 * fault path (an illegal address fails the launch with the CUDA error's
 * name, the next submit gets a fresh context with a zeroed region), a hung
 * kernel stopped when the lease expires, PTX the emulator refuses (named
 * instruction and line), cubin images, and the default device mode.
 */
#include <pthread.h>
#include <setjmp.h>
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
#include "gpulease/gpulease.h"

#define MiB (1ull << 20)

/* Reads build/kernels/NAME.ptx (made by the build, from nvcc or the
 * checked-in copy). */
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

static void submit_ok(gpulease_client *c, const gpulease_lease *l, gpulease_submit_desc *sd,
                      gpulease_submit_result *r) {
  gpulease_error err;
  gpulease_status st = gpulease_submit(c, l, sd, r, &err);
  if (st != GPULEASE_OK) fprintf(stderr, "submit: %s\n", err.message);
  assert_int_equal(st, GPULEASE_OK);
}

/* ------------------------------------------------------------- results */

static void test_kernels_compute(void **state) {
  (void)state;
  gl_test_daemon d;
  assert_int_equal(gl_test_daemon_start(&d, "64M", NULL), 0);
  gpulease_client *c = gl_test_connect(&d, 20000);
  gpulease_error err;
  gpulease_inventory *inv = calloc(1, sizeof *inv);
  gpulease_inventory_init(inv);
  assert_int_equal(gpulease_inventory_get(c, inv, &err), GPULEASE_OK);
  assert_int_equal(inv->gpu_count, 1);
  assert_true(inv->gpus[0].flags & GPULEASE_GPU_EMULATED);
  assert_int_equal(inv->gpus[0].cc_major, 9);
  free(inv);

  gpulease_lease l;
  assert_int_equal(gpulease_lease_alloc(c, 0, 8 * MiB, 60, &l, &err), GPULEASE_OK);

  /* iota over 4 blocks of 256: out[i] = i + 1 */
  size_t len;
  char *iota = kernel_ptx("iota", &len);
  gpulease_submit_desc sd;
  gpulease_submit_desc_default(&sd);
  sd.image = iota;
  sd.image_size = len;
  sd.kernel = "iota";
  sd.grid[0] = 4;
  sd.block[0] = 256;
  sd.output_size = 1024 * sizeof(float);
  gpulease_submit_result r = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
  submit_ok(c, &l, &sd, &r);
  assert_int_equal(r.output_size, 1024 * sizeof(float));
  const float *f = r.output;
  for (int i = 0; i < 1024; i++) assert_true(f[i] == (float)(i + 1));
  gpulease_submit_result_release(&r);

  /* vector_add with a param list: c = a + b over n = 10000 elements */
  enum { N = 10000 };
  float *in = malloc(2 * N * sizeof(float));
  for (int i = 0; i < N; i++) {
    in[i] = (float)i * 0.5f;
    in[N + i] = 1.0f / (float)(i + 1);
  }
  char *vadd = kernel_ptx("vector_add", &len);
  gpulease_param p[4];
  uint64_t a_off = 0, b_off = N * sizeof(float), c_off = 2 * N * sizeof(float);
  uint32_t n = N;
  p[0] = gpulease_param_pointer(a_off);
  p[1] = gpulease_param_pointer(b_off);
  p[2] = gpulease_param_pointer(c_off);
  p[3] = gpulease_param_scalar(&n, sizeof n);
  gpulease_submit_desc_default(&sd);
  sd.image = vadd;
  sd.image_size = len;
  sd.kernel = "vector_add";
  sd.grid[0] = (N + 255) / 256;
  sd.block[0] = 256;
  sd.input = in;
  sd.input_size = 2 * N * sizeof(float);
  sd.output_offset = c_off;
  sd.output_size = N * sizeof(float);
  sd.params = p;
  sd.param_count = 4;
  sd.use_params = 1;
  submit_ok(c, &l, &sd, &r);
  f = r.output;
  for (int i = 0; i < N; i++) assert_true(f[i] == in[i] + in[N + i]);
  gpulease_submit_result_release(&r);

  /* a parameter list that does not match the kernel's is refused */
  sd.param_count = 3;
  assert_int_equal(gpulease_submit(c, &l, &sd, &r, &err), GPULEASE_INVALID_ARGUMENT);
  free(in);
  free(vadd);
  free(iota);
  assert_int_equal(gpulease_lease_free(c, &l, &err), GPULEASE_OK);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* --------------------------------------------------------------- faults */

static void test_fault_and_fresh_context(void **state) {
  (void)state;
  gl_test_daemon d;
  assert_int_equal(gl_test_daemon_start(&d, "64M", NULL), 0);
  gpulease_client *c = gl_test_connect(&d, 20000);
  gpulease_error err;
  gpulease_lease l;
  assert_int_equal(gpulease_lease_alloc(c, 0, MiB, 60, &l, &err), GPULEASE_OK);

  size_t ilen, olen;
  char *iota = kernel_ptx("iota", &ilen);
  char *oob = kernel_ptx("oob", &olen);
  gpulease_submit_desc sd;
  gpulease_submit_result r = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
  gpulease_submit_desc_default(&sd);
  sd.image = iota;
  sd.image_size = ilen;
  sd.kernel = "iota";
  sd.block[0] = 64;
  sd.output_size = 256;
  submit_ok(c, &l, &sd, &r);
  gpulease_submit_result_release(&r);

  /* the store to address 16 faults: the launch fails, naming the error */
  sd.image = oob;
  sd.image_size = olen;
  sd.kernel = "oob";
  sd.output_size = 0;
  assert_int_equal(gpulease_submit(c, &l, &sd, &r, &err), GPULEASE_LAUNCH_FAILED);
  assert_non_null(strstr(err.message, "CUDA_ERROR_ILLEGAL_ADDRESS"));
  assert_non_null(strstr(err.message, "context is lost"));

  /* the next request runs in a fresh context whose region is zeroed: the
   * earlier iota output is gone */
  sd.image = iota;
  sd.image_size = ilen;
  sd.kernel = "iota";
  sd.block[0] = 1;
  sd.output_size = 256;
  submit_ok(c, &l, &sd, &r);
  const float *f = r.output;
  assert_true(f[0] == 1.0f);
  for (int i = 1; i < 64; i++) assert_true(f[i] == 0.0f);
  gpulease_submit_result_release(&r);

  /* PTX the emulator does not implement is refused at load, by name */
  static const char tex_ptx[] =
      ".version 8.0\n.target sm_75\n.address_size 64\n"
      ".visible .entry t(.param .u64 p, .param .u64 tx)\n{\n"
      "  .reg .f32 %f<5>;\n  .reg .b64 %rd<3>;\n"
      "  ld.param.u64 %rd1, [tx];\n"
      "  tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [%rd1, {0}];\n  ret;\n}\n";
  sd.image = tex_ptx;
  sd.image_size = sizeof tex_ptx - 1;
  sd.kernel = "t";
  sd.output_size = 0;
  assert_int_equal(gpulease_submit(c, &l, &sd, &r, &err), GPULEASE_UNSUPPORTED);
  assert_non_null(strstr(err.message, "tex"));
  if (!strstr(err.message, "line 9")) fprintf(stderr, "%s\n", err.message);
  assert_non_null(strstr(err.message, "line 9"));

  /* cubin needs a real GPU */
  static const uint8_t elf[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  sd.image = elf;
  sd.image_size = sizeof elf;
  sd.format = GPULEASE_IMAGE_CUBIN;
  assert_int_equal(gpulease_submit(c, &l, &sd, &r, &err), GPULEASE_UNSUPPORTED);
  assert_non_null(strstr(err.message, "PTX only"));

  free(iota);
  free(oob);
  assert_int_equal(gpulease_lease_free(c, &l, &err), GPULEASE_OK);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* A request that reaches the lease's worker while an earlier one is still
 * running, and that earlier kernel then faults: the worker exits without
 * running the second, and the daemon runs it on a fresh worker. */
static const char k_slow_fault_ptx[] =
    ".version 8.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry slowfault(.param .u64 p)\n{\n"
    "  .reg .pred %p<2>;\n  .reg .b32 %r<2>;\n  .reg .b64 %rd<2>;\n"
    "  mov.u32 %r1, 0;\n"
    "$L_loop:\n  add.u32 %r1, %r1, 1;\n  setp.lt.u32 %p1, %r1, 10000000;\n"
    "  @%p1 bra $L_loop;\n"
    "  mov.u64 %rd1, 16;\n  st.global.u32 [%rd1], %r1;\n  ret;\n}\n";

typedef struct fault_job {
  const gl_test_daemon *d;
  const gpulease_lease *l;
  gpulease_status st;
  char message[1024];
} fault_job;

static void *run_slow_fault(void *arg) {
  fault_job *j = arg;
  gpulease_client *c = gl_test_connect(j->d, 120000);
  gpulease_submit_desc sd;
  gpulease_submit_desc_default(&sd);
  sd.image = k_slow_fault_ptx;
  sd.image_size = sizeof k_slow_fault_ptx - 1;
  sd.kernel = "slowfault";
  gpulease_submit_result r = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
  gpulease_error err;
  j->st = gpulease_submit(c, j->l, &sd, &r, &err);
  snprintf(j->message, sizeof j->message, "%s", err.message);
  gpulease_client_close(c);
  return NULL;
}

static void test_request_behind_fault(void **state) {
  (void)state;
  gl_test_daemon d;
  assert_int_equal(gl_test_daemon_start(&d, "64M", NULL), 0);
  gpulease_client *c = gl_test_connect(&d, 120000);
  gpulease_error err;
  gpulease_lease l;
  assert_int_equal(gpulease_lease_alloc(c, 0, MiB, 120, &l, &err), GPULEASE_OK);
  fault_job job = {.d = &d, .l = &l};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, run_slow_fault, &job), 0);
  usleep(300000); /* the slow kernel is running in the worker by now */
  size_t len;
  char *iota = kernel_ptx("iota", &len);
  gpulease_submit_desc sd;
  gpulease_submit_desc_default(&sd);
  sd.image = iota;
  sd.image_size = len;
  sd.kernel = "iota";
  sd.block[0] = 32;
  sd.output_size = 32 * sizeof(float);
  gpulease_submit_result r = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
  submit_ok(c, &l, &sd, &r);
  const float *f = r.output;
  for (int i = 0; i < 32; i++) assert_true(f[i] == (float)(i + 1));
  gpulease_submit_result_release(&r);
  pthread_join(t, NULL);
  assert_int_equal(job.st, GPULEASE_LAUNCH_FAILED);
  assert_non_null(strstr(job.message, "CUDA_ERROR_ILLEGAL_ADDRESS"));
  free(iota);
  assert_int_equal(gpulease_lease_free(c, &l, &err), GPULEASE_OK);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* A kernel that never ends is stopped when its lease expires. */
static void test_hung_kernel_expires(void **state) {
  (void)state;
  gl_test_daemon d;
  assert_int_equal(gl_test_daemon_start(&d, "64M", NULL), 0);
  gpulease_client *c = gl_test_connect(&d, 20000);
  gpulease_error err;
  gpulease_lease l;
  assert_int_equal(gpulease_lease_alloc(c, 0, MiB, 2, &l, &err), GPULEASE_OK);
  size_t len;
  char *spin = kernel_ptx("spin", &len);
  gpulease_submit_desc sd;
  gpulease_submit_result r = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
  gpulease_submit_desc_default(&sd);
  sd.image = spin;
  sd.image_size = len;
  sd.kernel = "spin";
  uint64_t t0 = gl_mono_ns();
  assert_int_equal(gpulease_submit(c, &l, &sd, &r, &err), GPULEASE_LEASE_EXPIRED);
  uint64_t waited_ms = (gl_mono_ns() - t0) / 1000000;
  assert_true(waited_ms >= 1000 && waited_ms < 10000);
  for (int i = 0; i < 50 && gl_test_daemon_children(&d) > 0; i++) usleep(100000);
  assert_int_equal(gl_test_daemon_children(&d), 0);
  free(spin);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* Without --device, a node with no GPU offers the emulated device. */
static void test_auto_mode(void **state) {
  (void)state;
  gl_test_daemon d;
  const char *extra[] = {"--device", "auto", "--emu-vram", "32M", NULL};
  assert_int_equal(gl_test_daemon_start(&d, NULL, extra), 0);
  gpulease_client *c = gl_test_connect(&d, 20000);
  gpulease_error err;
  gpulease_inventory *inv = calloc(1, sizeof *inv);
  gpulease_inventory_init(inv);
  assert_int_equal(gpulease_inventory_get(c, inv, &err), GPULEASE_OK);
  assert_true(inv->gpu_count >= 1);
  if (access("/dev/nvidia0", F_OK) != 0) { /* no GPU here: only the emulator */
    assert_int_equal(inv->gpu_count, 1);
    assert_true(inv->gpus[0].flags & GPULEASE_GPU_EMULATED);
    assert_int_equal(inv->gpus[0].total_vram_bytes, 32 * MiB);
  }
  free(inv);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernels_compute),
      cmocka_unit_test(test_fault_and_fresh_context),
      cmocka_unit_test(test_request_behind_fault),
      cmocka_unit_test(test_hung_kernel_expires),
      cmocka_unit_test(test_auto_mode),
  };
  if (getenv("GL_TEST_FILTER")) cmocka_set_test_filter(getenv("GL_TEST_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
