/*
 * test_lease_table.c - the lease book with an injected clock: TTL, renew,
 * expiry, tombstones, capacity, authentication.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/lease_table.h"

#define S (1000000000ull)
#define MiB (1ull << 20)

/* Owners (tenants) of the leases below. */
static const char SECRET_A[] = "alice";
static const char SECRET_B[] = "bob";

static gl_lease_table *table_2gpus(size_t max_leases) {
  gl_lease_table_config c = {.max_ttl_s = 300, .max_leases = max_leases, .tombstone_ns = 600 * S};
  gl_lease_table *t = gl_lease_table_new(&c);
  assert_non_null(t);
  assert_int_equal(gl_lease_table_set_gpu(t, 0, 1000 * MiB), 0);
  assert_int_equal(gl_lease_table_set_gpu(t, 1, 2000 * MiB), 0);
  return t;
}

static gl_lease *alloc_ok(gl_lease_table *t, uint64_t now, uint32_t gpu, uint64_t bytes,
                          uint32_t ttl, const char *secret) {
  gl_lease *l = NULL;
  char err[256];
  assert_int_equal(gl_lease_table_alloc(t, now, gpu, GPULEASE_CLASS_ISOLATED, bytes, ttl, secret, &l, err, sizeof err),
                   GPULEASE_OK);
  assert_non_null(l);
  gl_lease_table_activate(t, l, now);
  return l;
}

static void test_alloc_and_auth(void **state) {
  (void)state;
  gl_lease_table *t = table_2gpus(8);
  gl_lease *a = alloc_ok(t, 0, 0, 100 * MiB, 60, SECRET_A);
  gl_lease *b = alloc_ok(t, 0, 0, 100 * MiB, 60, SECRET_B);
  assert_int_not_equal(a->id, b->id);
  assert_int_not_equal(a->id, 0);
  gl_lease *got = NULL;
  assert_int_equal(gl_lease_table_lookup(t, a->id, &got), GPULEASE_OK);
  assert_ptr_equal(got, a);
  /* each lease keeps its owner and starts at generation 1 */
  assert_string_equal(a->tenant, "alice");
  assert_string_equal(b->tenant, "bob");
  assert_int_equal(a->generation, 1);
  assert_int_equal(gl_lease_table_lookup(t, b->id, &got), GPULEASE_OK);
  assert_ptr_equal(got, b);
  assert_int_equal(gl_lease_table_lookup(t, 424242, &got), GPULEASE_NOT_FOUND);
  gl_lease_table_del(t);
}

static void test_ttl_bounds(void **state) {
  (void)state;
  gl_lease_table *t = table_2gpus(8);
  gl_lease *l;
  char err[256];
  assert_int_equal(gl_lease_table_alloc(t, 0, 0, GPULEASE_CLASS_ISOLATED, MiB, 0, SECRET_A, &l, err, sizeof err),
                   GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(gl_lease_table_alloc(t, 0, 0, GPULEASE_CLASS_ISOLATED, MiB, 301, SECRET_A, &l, err, sizeof err),
                   GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "1..300"));
  assert_int_equal(gl_lease_table_alloc(t, 0, 0, GPULEASE_CLASS_ISOLATED, 0, 10, SECRET_A, &l, err, sizeof err),
                   GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(gl_lease_table_live_count(t), 0);
  gl_lease_table_del(t);
}

static int expired_calls;
static uint64_t expired_id;
static void on_expire(void *user, gl_lease *l) {
  (void)user;
  expired_calls++;
  expired_id = l->id;
  assert_int_not_equal(l->state, GL_LEASE_EXPIRED); /* still live during the callback */
}

static void test_expiry_and_tombstone(void **state) {
  (void)state;
  gl_lease_table *t = table_2gpus(8);
  uint64_t now = 1000 * S;
  gl_lease *l = alloc_ok(t, now, 1, 10 * MiB, 5, SECRET_A);
  uint64_t id = l->id;
  assert_int_equal(gl_lease_remaining_ms(l, now + 2 * S), 3000);
  expired_calls = 0;
  assert_int_equal(gl_lease_table_expire(t, now + 5 * S - 1, on_expire, NULL), 0);
  assert_int_equal(expired_calls, 0);
  assert_int_equal(gl_lease_table_expire(t, now + 5 * S, on_expire, NULL), 1);
  assert_int_equal(expired_calls, 1);
  assert_int_equal(expired_id, id);
  gl_lease *got;
  assert_int_equal(gl_lease_table_lookup(t, id, &got), GPULEASE_LEASE_EXPIRED);
  assert_int_equal(got->id, id);
  assert_null(gl_lease_table_find(t, id));
  uint64_t bytes;
  uint32_t n;
  gl_lease_table_gpu_usage(t, 1, &bytes, &n);
  assert_int_equal(bytes, 0);
  assert_int_equal(n, 0);
  /* expiring again does not call back twice */
  assert_int_equal(gl_lease_table_expire(t, now + 6 * S, on_expire, NULL), 0);
  assert_int_equal(expired_calls, 1);
  /* the tombstone is forgotten after its time */
  gl_lease_table_expire(t, now + 5 * S + 600 * S, on_expire, NULL);
  assert_int_equal(gl_lease_table_lookup(t, id, &got), GPULEASE_NOT_FOUND);
  gl_lease_table_del(t);
}

static void test_renew(void **state) {
  (void)state;
  gl_lease_table *t = table_2gpus(8);
  gl_lease *l = alloc_ok(t, 0, 0, MiB, 10, SECRET_A);
  char err[256];
  assert_int_equal(gl_lease_table_renew(t, l, 8 * S, 10, err, sizeof err), GPULEASE_OK);
  assert_int_equal(gl_lease_table_expire(t, 12 * S, on_expire, NULL), 0); /* would have expired at 10 */
  assert_int_equal(gl_lease_remaining_ms(l, 12 * S), 6000);
  assert_int_equal(gl_lease_table_renew(t, l, 12 * S, 301, err, sizeof err),
                   GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(gl_lease_remaining_ms(l, 12 * S), 6000); /* unchanged by a refused renew */
  assert_int_equal(gl_lease_table_expire(t, 18 * S, on_expire, NULL), 1);
  gl_lease_table_del(t);
}

static void test_capacity(void **state) {
  (void)state;
  gl_lease_table *t = table_2gpus(8);
  gl_lease *l;
  char err[256];
  alloc_ok(t, 0, 0, 600 * MiB, 60, SECRET_A);
  assert_int_equal(gl_lease_table_alloc(t, 0, 0, GPULEASE_CLASS_ISOLATED, 401 * MiB, 60, SECRET_A, &l, err, sizeof err),
                   GPULEASE_CAPACITY_EXCEEDED);
  alloc_ok(t, 0, 0, 400 * MiB, 60, SECRET_A); /* exactly fills GPU 0 */
  /* "any GPU" goes where it fits */
  gl_lease *any = alloc_ok(t, 0, GPULEASE_ANY_GPU, 1500 * MiB, 60, SECRET_A);
  assert_int_equal(any->gpu_index, 1);
  assert_int_equal(gl_lease_table_alloc(t, 0, GPULEASE_ANY_GPU, GPULEASE_CLASS_ISOLATED, 501 * MiB, 60, SECRET_A, &l, err,
                                        sizeof err),
                   GPULEASE_CAPACITY_EXCEEDED);
  assert_int_equal(gl_lease_table_alloc(t, 0, 7, GPULEASE_CLASS_ISOLATED, MiB, 60, SECRET_A, &l, err, sizeof err),
                   GPULEASE_NO_DEVICE);
  /* freeing gives the capacity back */
  gl_lease_table_remove(t, any);
  alloc_ok(t, 0, 1, 2000 * MiB, 60, SECRET_A);
  gl_lease_table_del(t);
}

static void test_any_picks_most_free(void **state) {
  (void)state;
  gl_lease_table *t = table_2gpus(8);
  gl_lease *a = alloc_ok(t, 0, GPULEASE_ANY_GPU, MiB, 60, SECRET_A);
  assert_int_equal(a->gpu_index, 1); /* 2000 MiB free beats 1000 */
  alloc_ok(t, 0, 1, 1500 * MiB, 60, SECRET_A);
  gl_lease *b = alloc_ok(t, 0, GPULEASE_ANY_GPU, MiB, 60, SECRET_A);
  assert_int_equal(b->gpu_index, 0);
  gl_lease_table_del(t);
}

static void test_lease_budget_and_no_gpu(void **state) {
  (void)state;
  gl_lease_table *t = table_2gpus(2);
  gl_lease *l;
  char err[256];
  alloc_ok(t, 0, 0, MiB, 60, SECRET_A);
  alloc_ok(t, 0, 0, MiB, 60, SECRET_A);
  assert_int_equal(gl_lease_table_alloc(t, 0, 0, GPULEASE_CLASS_ISOLATED, MiB, 60, SECRET_A, &l, err, sizeof err),
                   GPULEASE_CAPACITY_EXCEEDED);
  assert_non_null(strstr(err, "maximum of 2 leases"));
  gl_lease_table_del(t);

  gl_lease_table_config c = {.max_ttl_s = 300, .max_leases = 4, .tombstone_ns = S};
  t = gl_lease_table_new(&c);
  assert_int_equal(gl_lease_table_alloc(t, 0, GPULEASE_ANY_GPU, GPULEASE_CLASS_ISOLATED, MiB, 60, SECRET_A, &l, err,
                                        sizeof err),
                   GPULEASE_NO_DEVICE);
  gl_lease_table_del(t);
}

static void test_ids_not_reused(void **state) {
  (void)state;
  gl_lease_table *t = table_2gpus(4);
  gl_lease *a = alloc_ok(t, 0, 0, MiB, 60, SECRET_A);
  uint64_t first = a->id;
  gl_lease_table_remove(t, a);
  gl_lease *b = alloc_ok(t, 0, 0, MiB, 60, SECRET_A);
  assert_int_not_equal(b->id, first);
  gl_lease *got;
  assert_int_equal(gl_lease_table_lookup(t, first, &got), GPULEASE_NOT_FOUND);
  gl_lease_table_del(t);
}

static gpulease_status try_alloc(gl_lease_table *t, uint32_t gpu, uint8_t cls, uint64_t bytes,
                                 gl_lease **l, char *err, size_t errlen) {
  gpulease_status st = gl_lease_table_alloc(t, 0, gpu, cls, bytes, 60, SECRET_A, l, err, errlen);
  if (st == GPULEASE_OK) gl_lease_table_activate(t, *l, 0);
  return st;
}

/* A device lease takes a GPU only when it has no lease, and keeps every
 * other lease off it while it lives; ANY_GPU goes around it. */
static void test_device_class(void **state) {
  (void)state;
  gl_lease_table *t = table_2gpus(8);
  gl_lease *a, *dev, *x;
  char err[256];
  assert_int_equal(try_alloc(t, 0, GPULEASE_CLASS_ISOLATED, MiB, &a, err, sizeof err), GPULEASE_OK);
  assert_int_equal(try_alloc(t, 0, GPULEASE_CLASS_DEVICE, MiB, &dev, err, sizeof err), GPULEASE_BUSY);
  assert_non_null(strstr(err, "1 live lease"));
  assert_int_equal(try_alloc(t, 1, GPULEASE_CLASS_DEVICE, MiB, &dev, err, sizeof err), GPULEASE_OK);
  assert_int_equal(dev->lease_class, GPULEASE_CLASS_DEVICE);
  assert_int_equal(try_alloc(t, 1, GPULEASE_CLASS_SHARED, MiB, &x, err, sizeof err), GPULEASE_BUSY);
  assert_non_null(strstr(err, "held whole by device lease"));
  /* Any GPU: GPU 1 has more room but a device lease holds it. */
  assert_int_equal(try_alloc(t, GPULEASE_ANY_GPU, GPULEASE_CLASS_ISOLATED, MiB, &x, err, sizeof err),
                   GPULEASE_OK);
  assert_int_equal(x->gpu_index, 0);
  gl_lease_table_remove(t, dev);
  assert_int_equal(try_alloc(t, 1, GPULEASE_CLASS_SHARED, MiB, &x, err, sizeof err), GPULEASE_OK);
  assert_int_equal(try_alloc(t, 7, 9, MiB, &x, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
  gl_lease_table_del(t);
}

/* Each isolated lease pays a context; the shared leases of a GPU pay one
 * between them. */
static void test_context_overhead(void **state) {
  (void)state;
  gl_lease_table *t = table_2gpus(64);
  gl_lease_table_set_overhead(t, 0, 100 * MiB);
  gl_lease *l;
  char err[256];
  /* GPU 0: 1000 MiB. 400 + 100 and 400 + 100 fit; a third does not. */
  assert_int_equal(try_alloc(t, 0, GPULEASE_CLASS_ISOLATED, 400 * MiB, &l, err, sizeof err), GPULEASE_OK);
  assert_int_equal(try_alloc(t, 0, GPULEASE_CLASS_ISOLATED, 401 * MiB, &l, err, sizeof err),
                   GPULEASE_CAPACITY_EXCEEDED);
  assert_non_null(strstr(err, "CUDA context"));
  /* Shared: 100 for the context, then 50 MiB leases with nothing more. */
  assert_int_equal(try_alloc(t, 0, GPULEASE_CLASS_SHARED, 50 * MiB, &l, err, sizeof err), GPULEASE_OK);
  for (int i = 0; i < 7; i++)
    assert_int_equal(try_alloc(t, 0, GPULEASE_CLASS_SHARED, 50 * MiB, &l, err, sizeof err), GPULEASE_OK);
  assert_int_equal(try_alloc(t, 0, GPULEASE_CLASS_SHARED, 50 * MiB, &l, err, sizeof err),
                   GPULEASE_CAPACITY_EXCEEDED);
  uint64_t leased;
  uint32_t n;
  gl_lease_table_gpu_usage(t, 0, &leased, &n);
  assert_int_equal(leased, 800 * MiB);
  assert_int_equal(n, 9);
  gl_lease_table_del(t);
}

/* A GPU in MIG mode takes partition leases only, and partition leases go
 * only to such GPUs. */
static void test_mig_gpus(void **state) {
  (void)state;
  gl_lease_table *t = table_2gpus(8);
  gl_lease *l;
  char err[256];
  assert_int_equal(try_alloc(t, GPULEASE_ANY_GPU, GPULEASE_CLASS_PARTITION, MiB, &l, err, sizeof err),
                   GPULEASE_UNSUPPORTED);
  assert_non_null(strstr(err, "no GPU of this node is in MIG mode"));
  gl_lease_table_set_mig(t, 0, true);
  assert_int_equal(try_alloc(t, 0, GPULEASE_CLASS_ISOLATED, MiB, &l, err, sizeof err),
                   GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "MIG mode"));
  assert_int_equal(try_alloc(t, 1, GPULEASE_CLASS_PARTITION, MiB, &l, err, sizeof err),
                   GPULEASE_UNSUPPORTED);
  assert_int_equal(try_alloc(t, GPULEASE_ANY_GPU, GPULEASE_CLASS_PARTITION, MiB, &l, err, sizeof err),
                   GPULEASE_OK);
  assert_int_equal(l->gpu_index, 0);
  assert_int_equal(try_alloc(t, GPULEASE_ANY_GPU, GPULEASE_CLASS_SHARED, MiB, &l, err, sizeof err),
                   GPULEASE_OK);
  assert_int_equal(l->gpu_index, 1);
  gl_lease_table_set_mig(t, 1, true);
  assert_int_equal(try_alloc(t, GPULEASE_ANY_GPU, GPULEASE_CLASS_DEVICE, MiB, &l, err, sizeof err),
                   GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "every GPU of this node is in MIG mode"));
  gl_lease_table_del(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_alloc_and_auth),     cmocka_unit_test(test_ttl_bounds),
      cmocka_unit_test(test_expiry_and_tombstone), cmocka_unit_test(test_renew),
      cmocka_unit_test(test_capacity),           cmocka_unit_test(test_any_picks_most_free),
      cmocka_unit_test(test_lease_budget_and_no_gpu), cmocka_unit_test(test_ids_not_reused),
      cmocka_unit_test(test_device_class),       cmocka_unit_test(test_context_overhead),
      cmocka_unit_test(test_mig_gpus),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
