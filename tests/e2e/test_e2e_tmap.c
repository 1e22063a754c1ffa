/*
 * test_e2e_tmap.c - TENSORMAP_ENCODE through the client library against a
 * real gpuleased on the emulated device: a tensor map built by the daemon
 * for a session buffer drives tests/emu/async/async.cu's TMA kernel
 * (tma_load_2d, passed the 128 bytes as its __grid_constant__ CUtensorMap)
 * to the right data, plain, past the tensor's edges and swizzled, on an
 * isolated lease and on a shared one (whose worker reaches the device
 * through a view); and the refusals: a tensor reaching past its buffer, a
 * buffer of another session, the library's own argument checks, the
 * encoder's reasons, and what the emulated device cannot do.
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
#include "gpulease/gpulease.h"
#include "lib_check.h"
#include "../gpu/tmap_cases.h"

static char *async_ptx(size_t *len) {
  char path[1024];
  const char *src = getenv("GL_TEST_SRC_DIR");
  snprintf(path, sizeof path, "%s/tests/emu/async/async_sm90a.ptx", src ? src : ".");
  uint8_t *data = NULL;
  if (gl_read_file(path, 1 << 24, &data, len) != 0) fail_msg("cannot read %s", path);
  return (char *)data;
}

/* A session on l with the tensor written, the kernel loaded, an output
 * buffer. */
typedef struct rig {
  gpulease_session *s;
  gpulease_buffer buf, out;
  gpulease_function fn;
} rig;

static void rig_open(gpulease_client *c, const gpulease_lease *l, const char *ptx, size_t len,
                     rig *r) {
  CHECK(gpulease_session_open(c, l, &r->s, E));
  CHECK(gpulease_mem_alloc(r->s, TMAP_BUF_BYTES, &r->buf, E));
  CHECK(gpulease_mem_alloc(r->s, TMAP_TILE * 4, &r->out, E));
  CHECK(tmap_write_tensor(r->s, r->buf, E));
  gpulease_module m;
  CHECK(gpulease_module_load(r->s, ptx, len, GPULEASE_IMAGE_PTX, &m, NULL, E));
  CHECK(gpulease_function_get(r->s, m, "tma_load_2d", &r->fn, NULL, E));
}

static void copy_ok(rig *r, int x, int y, uint32_t swz) {
  char why[256];
  if (tmap_copy_case(r->s, r->fn, r->buf, r->out, x, y, swz, why, sizeof why) != 0)
    fail_msg("%s", why);
}

/* st from an encode of desc d at offset off in buf, err's message checked
 * to contain want; then the session's failure acknowledged. */
static void encode_refused(gpulease_session *s, gpulease_buffer buf, uint64_t off,
                           const gpulease_tensormap_desc *d, gpulease_status want_st,
                           const char *want) {
  uint8_t map[GPULEASE_TENSORMAP_BYTES];
  gpulease_error e;
  gpulease_status st = gpulease_tensormap_encode_tiled(s, buf, off, d, map, &e);
  if (st != want_st || !strstr(e.message, want))
    fail_msg("encode: %s \"%s\", want %s \"%s\"", gpulease_status_name(st), e.message,
             gpulease_status_name(want_st), want);
  CHECK(gpulease_session_acknowledge(s, UINT64_MAX, E));
}

static void test_tmap(void **state) {
  (void)state;
  gl_test_daemon d;
  assert_int_equal(gl_test_daemon_start(&d, "256M", NULL), 0);
  gpulease_client *c = gl_test_connect(&d, 10000);
  assert_non_null(c);
  size_t len;
  char *ptx = async_ptx(&len);
  gpulease_lease a;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 4 * MiB, 60, &a, E));
  rig r;
  rig_open(c, &a, ptx, len, &r);

  /* 1. the copy: inside, across the right and bottom edges, before the
   * start, and with each swizzle */
  copy_ok(&r, 8, 3, 0);
  copy_ok(&r, 80, 30, 0);
  copy_ok(&r, -4, -2, 0);
  copy_ok(&r, 88, 35, 3);
  copy_ok(&r, 16, 8, 2);
  copy_ok(&r, 24, 5, 1);

  /* 2. the map is the emulated device's encoding of the buffer's address
   * + 256: the same bytes twice, other bytes for another offset */
  gpulease_tensormap_desc dsc = tmap_desc(32, 0);
  uint8_t m1[GPULEASE_TENSORMAP_BYTES], m2[GPULEASE_TENSORMAP_BYTES];
  CHECK(gpulease_tensormap_encode_tiled(r.s, r.buf, TMAP_BASE, &dsc, m1, E));
  CHECK(gpulease_tensormap_encode_tiled(r.s, r.buf, TMAP_BASE, &dsc, m2, E));
  assert_memory_equal(m1, m2, sizeof m1);
  CHECK(gpulease_tensormap_encode_tiled(r.s, r.buf, 0, &dsc, m2, E));
  assert_memory_not_equal(m1, m2, sizeof m1);
  /* entries past the rank are not read */
  dsc.global_dim[3] = 99;
  dsc.box_dim[4] = 7;
  dsc.global_strides[2] = 5;
  CHECK(gpulease_tensormap_encode_tiled(r.s, r.buf, TMAP_BASE, &dsc, m2, E));
  assert_memory_equal(m1, m2, sizeof m1);

  /* 3. the extent: the last row's last element is the buffer's last 4
   * bytes; one row more, or 16 bytes further, is past its end */
  dsc = tmap_desc(32, 0);
  dsc.global_dim[1] = TMAP_H + 1;
  encode_refused(r.s, r.buf, TMAP_BASE, &dsc, GPULEASE_INVALID_ARGUMENT, "outside buffer");
  dsc = tmap_desc(32, 0);
  dsc.global_dim[0] = TMAP_PITCH; /* the whole pitch: ends exactly at the buffer's end */
  CHECK(gpulease_tensormap_encode_tiled(r.s, r.buf, TMAP_BASE, &dsc, m2, E));
  encode_refused(r.s, r.buf, TMAP_BASE + 16, &dsc, GPULEASE_INVALID_ARGUMENT,
                 "outside buffer");
  encode_refused(r.s, r.buf, UINT64_MAX - 8, &dsc, GPULEASE_INVALID_ARGUMENT, "outside buffer");
  dsc.global_dim[1] = 1ull << 20;
  dsc.global_strides[0] = 1ull << 39;
  encode_refused(r.s, r.buf, 0, &dsc, GPULEASE_INVALID_ARGUMENT, "outside buffer");
  dsc.global_dim[1] = UINT64_MAX;
  encode_refused(r.s, r.buf, 0, &dsc, GPULEASE_INVALID_ARGUMENT, "overflows");
  dsc = tmap_desc(32, 0);
  dsc.global_dim[1] = 0;
  encode_refused(r.s, r.buf, 0, &dsc, GPULEASE_INVALID_ARGUMENT, "global_dim[1] is 0");

  /* 4. the encoder's own refusals, with its reason */
  dsc = tmap_desc(32, 0);
  encode_refused(r.s, r.buf, TMAP_BASE + 8, &dsc, GPULEASE_INVALID_ARGUMENT, "16-byte aligned");
  dsc.box_dim[1] = 257;
  encode_refused(r.s, r.buf, TMAP_BASE, &dsc, GPULEASE_INVALID_ARGUMENT, "box dim 1");
  dsc = tmap_desc(32, 0);
  dsc.global_strides[0] = 100 * 4 + 4; /* not a multiple of 16 */
  encode_refused(r.s, r.buf, 0, &dsc, GPULEASE_INVALID_ARGUMENT, "CUDA_ERROR_INVALID_VALUE");
  /* what the emulated device cannot do */
  dsc = tmap_desc(32, 0);
  dsc.interleave = 1;
  encode_refused(r.s, r.buf, TMAP_BASE, &dsc, GPULEASE_UNSUPPORTED, "interleaved");

  /* 5. handles: another session's buffer, a freed one */
  gpulease_session *s2;
  CHECK(gpulease_session_open(c, &a, &s2, E));
  gpulease_buffer other;
  CHECK(gpulease_mem_alloc(s2, TMAP_BUF_BYTES, &other, E));
  dsc = tmap_desc(32, 0);
  encode_refused(r.s, other, TMAP_BASE, &dsc, GPULEASE_INVALID_HANDLE, "is not a buffer of");
  CHECK(gpulease_tensormap_encode_tiled(s2, other, TMAP_BASE, &dsc, m2, E));
  CHECK(gpulease_mem_free(s2, other, E));
  encode_refused(s2, other, TMAP_BASE, &dsc, GPULEASE_INVALID_HANDLE, "is not a buffer of");
  CHECK(gpulease_session_close(s2, E));

  /* 6. the library's checks, before anything is sent */
  gpulease_error e;
  dsc.rank = 0;
  assert_int_equal(gpulease_tensormap_encode_tiled(r.s, r.buf, 0, &dsc, m2, &e),
                   GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(e.message, "rank 0"));
  dsc.rank = 6;
  assert_int_equal(gpulease_tensormap_encode_tiled(r.s, r.buf, 0, &dsc, m2, &e),
                   GPULEASE_INVALID_ARGUMENT);
  dsc.rank = 2;
  dsc.data_type = 13;
  assert_int_equal(gpulease_tensormap_encode_tiled(r.s, r.buf, 0, &dsc, m2, &e),
                   GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(gpulease_tensormap_encode_tiled(r.s, r.buf, 0, NULL, m2, &e),
                   GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(gpulease_tensormap_encode_tiled(r.s, 0, 0, &dsc, m2, &e),
                   GPULEASE_INVALID_HANDLE);
  /* and the session still runs */
  copy_ok(&r, 0, 0, 0);
  CHECK(gpulease_session_close(r.s, E));

  /* 7. a shared lease (a view of the shared worker's device): its own
   * range, the same copies */
  gpulease_lease_opts o = {.struct_version = GPULEASE_LEASE_OPTS_VERSION,
                           .lease_class = GPULEASE_CLASS_SHARED};
  gpulease_lease sh1, sh2;
  CHECK(gpulease_lease_alloc_opts(c, GPULEASE_ANY_GPU, 4 * MiB, 60, &o, &sh1, E));
  CHECK(gpulease_lease_alloc_opts(c, GPULEASE_ANY_GPU, 4 * MiB, 60, &o, &sh2, E));
  rig r1, r2;
  rig_open(c, &sh1, ptx, len, &r1);
  rig_open(c, &sh2, ptx, len, &r2);
  copy_ok(&r2, 8, 3, 0);
  copy_ok(&r2, 88, 35, 3);
  copy_ok(&r1, 80, 30, 0);
  CHECK(gpulease_session_close(r1.s, E));
  CHECK(gpulease_session_close(r2.s, E));

  free(ptx);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_tmap)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
