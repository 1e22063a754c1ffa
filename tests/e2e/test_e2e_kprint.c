/*
 * test_e2e_kprint.c - kernel output through the client library against a
 * real gpuleased on the emulated device (kernels of tests/emu/kprint/
 * kprint.cu): the gpulease_client_set_kernel_output callback gets a
 * kernel's printf text from gpulease_submit, from gpulease_session_sync
 * and from gpulease_session_kernel_output, each lease only its own; a
 * client without the callback gets nothing and the text waits, pending,
 * for one that asks; none of it reaches the daemon's log.
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

/* What the callback collected. */
typedef struct seen {
  char text[8192];
  size_t len;
  unsigned calls;
  uint64_t lease;
  uint64_t dropped;
  uint32_t flags;
} seen;

static void collect(void *user, uint64_t lease_id, const char *text, size_t len,
                    uint64_t dropped, uint32_t flags) {
  seen *s = user;
  s->calls++;
  s->lease = lease_id;
  s->dropped += dropped;
  s->flags |= flags;
  if (len > sizeof s->text - 1 - s->len) len = sizeof s->text - 1 - s->len;
  memcpy(s->text + s->len, text, len);
  s->len += len;
  s->text[s->len] = 0;
}

static char *kprint_ptx(size_t *len) {
  char path[1024];
  const char *src = getenv("GL_TEST_SRC_DIR");
  snprintf(path, sizeof path, "%s/tests/emu/kprint/kprint.ptx", src ? src : ".");
  uint8_t *data = NULL;
  if (gl_read_file(path, 1 << 24, &data, len) != 0) fail_msg("cannot read %s", path);
  return (char *)data;
}

/* GPU_SUBMIT of lines(n) on lease l. */
static gpulease_status submit_lines(gpulease_client *c, const gpulease_lease *l, const char *ptx,
                                    size_t len, int n, gpulease_error *err) {
  gpulease_submit_desc d;
  gpulease_submit_desc_default(&d);
  d.image = ptx;
  d.image_size = len;
  d.kernel = "lines";
  gpulease_param p = gpulease_param_scalar(&n, sizeof n);
  d.params = &p;
  d.param_count = 1;
  gpulease_submit_result r = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
  gpulease_status st = gpulease_submit(c, l, &d, &r, err);
  if (st == GPULEASE_OK) gpulease_submit_result_release(&r);
  return st;
}

static void test_kernel_output(void **state) {
  (void)state;
  gl_test_daemon d;
  assert_int_equal(gl_test_daemon_start(&d, "64M", NULL), 0);
  gpulease_client *c = gl_test_connect(&d, 10000);
  assert_non_null(c);
  size_t len;
  char *ptx = kprint_ptx(&len);
  gpulease_lease a, b;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 1 * MiB, 60, &a, E));
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 1 * MiB, 60, &b, E));

  /* 1. no callback: nothing asked, the text waits on the lease */
  CHECK(submit_lines(c, &a, ptx, len, 2, E));
  seen sa = {0};
  gpulease_client_set_kernel_output(c, collect, &sa);
  /* 2. with it: the pending lines and this submit's, in order, once */
  CHECK(submit_lines(c, &a, ptx, len, 3, E));
  assert_string_equal(sa.text, "line 0000000 ..\nline 0000001 ..\n"
                               "line 0000000 ..\nline 0000001 ..\nline 0000002 ..\n");
  assert_int_equal(sa.calls, 1);
  assert_int_equal(sa.lease, a.id);
  assert_int_equal(sa.flags, 0);
  /* 3. the other lease: only its own */
  seen sb = {0};
  gpulease_client_set_kernel_output(c, collect, &sb);
  CHECK(submit_lines(c, &b, ptx, len, 1, E));
  assert_string_equal(sb.text, "line 0000000 ..\n");
  assert_int_equal(sb.lease, b.id);

  /* 4. a session: hello's text arrives with the SYNC */
  seen ss = {0};
  gpulease_client_set_kernel_output(c, collect, &ss);
  gpulease_session *s = NULL;
  CHECK(gpulease_session_open(c, &a, &s, E));
  gpulease_module m;
  CHECK(gpulease_module_load(s, ptx, len, GPULEASE_IMAGE_PTX, &m, NULL, E));
  gpulease_function fn;
  CHECK(gpulease_function_get(s, m, "hello", &fn, NULL, E));
  gpulease_buffer ret;
  CHECK(gpulease_mem_alloc(s, 4096, &ret, E));
  gpulease_arg arg = gpulease_arg_buffer(ret, 0);
  const uint32_t grid[3] = {2, 1, 1}, block[3] = {2, 1, 1};
  CHECK(gpulease_launch(s, fn, grid, block, 0, &arg, 1, E));
  assert_int_equal(ss.calls, 0); /* not before the sync */
  CHECK(gpulease_session_sync(s, NULL, E));
  assert_string_equal(ss.text, "hello from thread 0 of block 0\nhello from thread 1 of block 0\n"
                               "hello from thread 0 of block 1\nhello from thread 1 of block 1\n");
  assert_int_equal(ss.lease, a.id);
  /* 5. read as it comes: KERNEL_OUTPUT without a sync */
  memset(&ss, 0, sizeof ss);
  CHECK(gpulease_launch(s, fn, grid, block, 0, &arg, 1, E));
  CHECK(gpulease_session_kernel_output(s, E));
  assert_int_equal(ss.calls, 1);
  assert_non_null(strstr(ss.text, "hello from thread 1 of block 1\n"));
  /* and nothing twice */
  memset(&ss, 0, sizeof ss);
  CHECK(gpulease_session_sync(s, NULL, E));
  assert_int_equal(ss.calls, 0);
  /* a sync once the daemon is known to answer KERNEL_OUTPUT (it then goes
   * right behind the SYNC): the same text, in order, once */
  CHECK(gpulease_launch(s, fn, grid, block, 0, &arg, 1, E));
  CHECK(gpulease_launch(s, fn, grid, block, 0, &arg, 1, E));
  CHECK(gpulease_session_sync(s, NULL, E));
  assert_int_equal(ss.calls, 1);
  assert_string_equal(ss.text, "hello from thread 0 of block 0\nhello from thread 1 of block 0\n"
                               "hello from thread 0 of block 1\nhello from thread 1 of block 1\n"
                               "hello from thread 0 of block 0\nhello from thread 1 of block 0\n"
                               "hello from thread 0 of block 1\nhello from thread 1 of block 1\n");
  CHECK(gpulease_session_close(s, E));
  /* lease b saw none of a's */
  assert_null(strstr(sb.text, "hello"));

  /* 6. never in the daemon's log */
  assert_int_equal(gl_test_daemon_log_count(&d, "hello from thread"), 0);
  assert_int_equal(gl_test_daemon_log_count(&d, "line 0000000"), 0);
  free(ptx);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_kernel_output)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
