/*
 * test_cuda_runtime.c - programs built with nvcc against the CUDA runtime
 * (cudart, static and shared: rt_basic.cu, rt_fault.cu) run unmodified
 * under `gpulease exec` on the CUDA driver shim: a real gpuleased on the
 * emulated device (GL_TEST_DEVICE=cuda: a real GPU of compute capability
 * 9.0 or newer, the programs carrying compute_90 PTX), each program run by
 * the CLI, its exit status and output checked (each checks its own
 * results and prints "ok").
 *
 * The programs are built by nvcc at build time (tests/cuda/CMakeLists.txt)
 * and never committed: where CMake found no nvcc (CI machines), this test
 * is built with GL_RT_NO_NVCC and skips (exit 77, SKIP_RETURN_CODE).
 * Under GL_SANITIZE the shim carries the sanitizers' runtime, which the
 * unsanitized programs lack: it is preloaded for them (GL_RT_PRELOAD).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e/daemon_harness.h"

#ifndef GL_RT_NO_NVCC
/* The shim's directory: $GL_TEST_BIN_DIR/src/cuda where the shim is there
 * (a build carried to a GPU machine), else the build's own. */
static const char *shim_dir(void) {
  static char dir[4096];
  const char *bin = getenv("GL_TEST_BIN_DIR");
  if (bin) {
    snprintf(dir, sizeof dir, "%s/src/cuda/libcuda.so.1", bin);
    if (access(dir, R_OK) == 0) {
      snprintf(dir, sizeof dir, "%s/src/cuda", bin);
      return dir;
    }
  }
  return GL_CUDA_SHIM_DIR;
}

/* Where the nvcc-built programs are: $GL_TEST_RT_DIR (programs carried to
 * a GPU machine), else the build's. */
static const char *prog_dir(void) {
  const char *d = getenv("GL_TEST_RT_DIR");
  return d && *d ? d : GL_RT_PROG_DIR;
}

/* Runs PROG under gpulease exec; its output (stdout and stderr) in out. */
static int run(const gl_test_daemon *dm, const char *prog, char *out, size_t len) {
  return gl_test_cli(dm, out, len, "exec --quiet --vram 64M -- %s/%s", prog_dir(), prog);
}

static void test_runtime_programs(void **state) {
  (void)state;
  bool gpu = gl_test_on_gpu();
  gl_test_daemon dm;
  assert_int_equal(gl_test_daemon_start(&dm, gpu ? NULL : "1G", NULL), 0);
  setenv("GPULEASE_CUDA_LIBDIR", shim_dir(), 1);
  /* The shared cudart (libcudart.so.13) from the toolkit nvcc came with;
   * gpulease exec puts the shim's directory before it. */
  static char ldpath[8192];
  const char *was = getenv("LD_LIBRARY_PATH");
  snprintf(ldpath, sizeof ldpath, "%s%s%s", GL_RT_CUDART_DIR, was && *was ? ":" : "",
           was ? was : "");
  setenv("LD_LIBRARY_PATH", ldpath, 1);
  if (GL_RT_PRELOAD[0]) {
    setenv("LD_PRELOAD", GL_RT_PRELOAD, 1);
    setenv("ASAN_OPTIONS", "detect_leaks=0", 1); /* cudart's own, at exit */
  }
  static char out[65536];
  const char *const forms[] = {"static", "shared"};
  for (int i = 0; i < 2; i++) {
    char prog[64];
    snprintf(prog, sizeof prog, "rt_basic_%s", forms[i]);
    assert_int_equal(run(&dm, prog, out, sizeof out), 0);
    assert_non_null(strstr(out, "kernel printf 42\n"));
    assert_non_null(strstr(out, "ok\n"));
    assert_null(strstr(out, "FAIL"));
    assert_null(strstr(out, "not supported"));
    /* The fault: cudaErrorIllegalAddress, sticky; the shim says why. */
    snprintf(prog, sizeof prog, "rt_fault_%s", forms[i]);
    assert_int_equal(run(&dm, prog, out, sizeof out), 0);
    assert_non_null(strstr(out, "ok\n"));
    assert_non_null(strstr(out, "CUDA_ERROR_ILLEGAL_ADDRESS"));
  }
  /* The runtime's start-up, traced: the tables it asked for. */
  setenv("GPULEASE_CUDA_TRACE", "1", 1);
  assert_int_equal(run(&dm, "rt_basic_static", out, sizeof out), 0);
  unsetenv("GPULEASE_CUDA_TRACE");
  assert_non_null(strstr(out, "gpulease trace: cuGetExportTable 6bd5fb6c-5bf4-e74a-8987-"
                              "d93912fd9df9: given"));
  assert_non_null(strstr(out, "ok\n"));
  assert_int_equal(gl_test_daemon_stop(&dm), 0);
}
#endif

int main(void) {
#ifdef GL_RT_NO_NVCC
  printf("skipped: no nvcc at configure time, so no CUDA runtime programs to run\n");
  return 77;
#else
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_runtime_programs)};
  return cmocka_run_group_tests(tests, NULL, NULL);
#endif
}
