/*
 * lib_check.h - CHECK(call) for tests of the client library: asserts that a
 * gpulease_* call returns GPULEASE_OK and, when it does not, prints the call,
 * the status and the library's message. The call passes E as its
 * gpulease_error argument:
 *
 *   CHECK(gpulease_mem_alloc(s, 4096, &buf, E));
 */
#ifndef GL_TESTS_E2E_LIB_CHECK_H
#define GL_TESTS_E2E_LIB_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/util.h"
#include "gpulease/gpulease.h"

#define MiB (1ull << 20)

#define CHECK(call)                                                                  \
  do {                                                                               \
    gpulease_error e_;                                                               \
    gpulease_status st_ = (call);                                                    \
    if (st_ != GPULEASE_OK)                                                          \
      fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call,            \
              gpulease_status_name(st_), e_.message);                                \
    assert_int_equal(st_, GPULEASE_OK);                                              \
  } while (0)
#define E &e_

/* GPU_SUBMIT of the build's kernels/iota.ptx ($GL_TEST_BIN_DIR) on lease l:
 * 256 threads; on OK, out[i] == i + 1 is checked (cmocka.h is included
 * first). Returns the status, the message in err. */
static inline gpulease_status gl_test_submit_iota(gpulease_client *c, const gpulease_lease *l,
                                                  gpulease_error *err) {
  const char *bin = getenv("GL_TEST_BIN_DIR");
  char path[512];
  snprintf(path, sizeof path, "%s/kernels/iota.ptx", bin ? bin : ".");
  uint8_t *ptx = NULL;
  size_t ptx_len = 0;
  assert_int_equal(gl_read_file(path, 1 << 20, &ptx, &ptx_len), 0);
  gpulease_submit_desc sd;
  gpulease_submit_desc_default(&sd);
  sd.image = ptx;
  sd.image_size = ptx_len;
  sd.kernel = "iota";
  sd.block[0] = 256;
  sd.output_size = 1024;
  gpulease_submit_result r = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
  gpulease_status st = gpulease_submit(c, l, &sd, &r, err);
  if (st == GPULEASE_OK) {
    const float *out = r.output;
    for (int i = 0; i < 256; i++) assert_true(out[i] == (float)(i + 1));
    gpulease_submit_result_release(&r);
  }
  free(ptx);
  return st;
}

/* The same, asserting OK. */
static inline void gl_test_run_iota(gpulease_client *c, const gpulease_lease *l) {
  CHECK(gl_test_submit_iota(c, l, E));
}

#endif
