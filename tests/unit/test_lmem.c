/*
 * test_lmem.c - a lease's charge for its kernels' local memory
 * (src/worker/lmem.c) over a fake backend that says 1,000 threads and a
 * starting stack of 64 bytes: the free part, growth in parts reserved in
 * the region, the parts merged past GL_LMEM_MAX_PARTS, the refusal with
 * its figures, and a backend without local_memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "worker/lmem.h"
#include "worker/suballoc.h"

static int g_calls;

static gpulease_status fake_local(gl_backend *b, uint64_t *threads, uint32_t *free_per_thread,
                                  char *err, size_t errlen) {
  (void)b, (void)err, (void)errlen;
  g_calls++;
  *threads = 1000;
  *free_per_thread = 64;
  return GPULEASE_OK;
}

static gl_backend_ops g_ops;
static gl_backend g_be = {.ops = &g_ops};

static void test_charges(void **state) {
  (void)state;
  g_ops = (gl_backend_ops){.name = "fake", .local_memory = fake_local};
  g_calls = 0;
  gl_suballoc *a = gl_suballoc_new(1 << 20, 1);
  gl_lmem m;
  gl_lmem_init(&m, a, 1 << 20);
  char err[1024];
  bool grew;
  /* Within the start and the free part: nothing reserved, the context's
   * extra counted. */
  assert_int_equal(gl_lmem_cover(&m, &g_be, 64, "k", &grew, err, sizeof err), GPULEASE_OK);
  assert_false(grew);
  assert_int_equal(gl_lmem_cover(&m, &g_be, 64 + GL_LMEM_FREE_PER_THREAD, "k", &grew, err,
                                 sizeof err),
                   GPULEASE_OK);
  assert_true(grew);
  assert_int_equal(gl_lmem_charged(&m), 0);
  assert_int_equal(gl_lmem_held(&m), 1000ull * GL_LMEM_FREE_PER_THREAD);
  assert_int_equal(gl_suballoc_used(a), 0);
  /* 100 bytes a thread past the free part: 100,000 bytes. */
  uint32_t l = 64 + GL_LMEM_FREE_PER_THREAD + 100;
  assert_int_equal(gl_lmem_cover(&m, &g_be, l, "k", &grew, err, sizeof err), GPULEASE_OK);
  assert_true(grew);
  assert_int_equal(gl_lmem_charged(&m), 100000);
  assert_int_equal(gl_suballoc_used(a), 100000);
  /* The same or less: nothing more. */
  assert_int_equal(gl_lmem_cover(&m, &g_be, l - 50, "k", &grew, err, sizeof err), GPULEASE_OK);
  assert_false(grew);
  /* Growing 20 times: past GL_LMEM_MAX_PARTS the parts merge, the
   * reservation is always the total. */
  for (int i = 1; i <= 20; i++) {
    assert_int_equal(gl_lmem_cover(&m, &g_be, l + (uint32_t)i * 10, "k", &grew, err, sizeof err),
                     GPULEASE_OK);
    assert_true(grew);
    assert_int_equal(gl_suballoc_used(a), 100000ull + (uint64_t)i * 10000);
    assert_true(m.nparts <= GL_LMEM_MAX_PARTS);
  }
  assert_int_equal(g_calls, 1); /* the device asked once */
  /* Past the lease: refused with the figures, nothing changed. */
  uint64_t before = gl_suballoc_used(a);
  assert_int_equal(gl_lmem_cover(&m, &g_be, 64 + GL_LMEM_FREE_PER_THREAD + 2000, "big", &grew,
                                 err, sizeof err),
                   GPULEASE_CAPACITY_EXCEEDED);
  assert_false(grew);
  assert_non_null(strstr(err, "kernel 'big' needs 2576 bytes of local memory a thread"));
  assert_non_null(strstr(err, "each of the 1000 threads"));
  assert_non_null(strstr(err, "2000000 bytes the lease pays for"));
  assert_non_null(strstr(err, "of its 1048576 bytes free"));
  assert_int_equal(gl_suballoc_used(a), before);
  /* Buffers leave too little room: refused as well. */
  uint64_t offs[64];
  size_t n = 0;
  while (n < 64 && gl_suballoc_alloc(a, 50000, &offs[n], NULL, 0) == GPULEASE_OK) n++;
  assert_true(n > 0 && n < 64);
  assert_int_equal(gl_lmem_cover(&m, &g_be, l + 300, "k", &grew, err, sizeof err),
                   GPULEASE_CAPACITY_EXCEEDED);
  for (size_t i = 0; i < n; i++) assert_true(gl_suballoc_release(a, offs[i]));
  gl_lmem_destroy(&m);
  assert_int_equal(gl_suballoc_used(a), 0);
  gl_suballoc_free(a);
}

static void test_no_backend_op(void **state) {
  (void)state;
  g_ops = (gl_backend_ops){.name = "fake"};
  gl_suballoc *a = gl_suballoc_new(1 << 20, 1);
  gl_lmem m;
  gl_lmem_init(&m, a, 1 << 20);
  char err[256];
  bool grew;
  assert_int_equal(gl_lmem_cover(&m, &g_be, 1 << 20, "k", &grew, err, sizeof err), GPULEASE_OK);
  assert_false(grew);
  assert_int_equal(gl_lmem_held(&m), 0);
  gl_lmem_destroy(&m);
  gl_suballoc_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_charges),
      cmocka_unit_test(test_no_backend_op),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
