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

/* The table's own self-check: the id map and the per-GPU aggregates agree
 * with a scan. */
static void assert_consistent(const gl_lease_table *t) {
  char err[512] = "";
  int rc = gl_lease_table_check(t, err, sizeof err);
  if (rc != 0) fail_msg("lease table inconsistent: %s", err);
}

static gl_lease_table *table_big(uint32_t gpus, uint64_t overhead) {
  gl_lease_table_config c = {.max_ttl_s = 300, .max_leases = 100000, .tombstone_ns = 50 * S};
  gl_lease_table *t = gl_lease_table_new(&c);
  assert_non_null(t);
  for (uint32_t g = 0; g < gpus; g++) {
    assert_int_equal(gl_lease_table_set_gpu(t, g, 1ull << 50), 0);
    gl_lease_table_set_overhead(t, g, overhead);
  }
  return t;
}

static gl_lease *alloc_class(gl_lease_table *t, uint64_t now, uint32_t gpu, uint8_t cls,
                             uint64_t bytes, const char *tenant) {
  gl_lease *l = NULL;
  char err[256];
  assert_int_equal(gl_lease_table_alloc(t, now, gpu, cls, bytes, 60, tenant, &l, err, sizeof err),
                   GPULEASE_OK);
  return l;
}

/* Many leases, a third of them tombstones, some removed: lookup finds each
 * by id (LEASE_EXPIRED for a tombstone), find only the live ones. */
static void test_lookup_many(void **state) {
  (void)state;
  enum { N = 3000 };
  gl_lease_table *t = table_big(4, 0);
  static uint64_t ids[N];
  for (int i = 0; i < N; i++) {
    gl_lease *l = alloc_class(t, 0, (uint32_t)i % 4, GPULEASE_CLASS_ISOLATED, MiB, "alice");
    ids[i] = l->id;
    if (i % 2) gl_lease_table_activate(t, l, 0);
  }
  for (int i = 0; i < N; i++) {
    gl_lease *l = gl_lease_table_find(t, ids[i]);
    assert_non_null(l);
    if (i % 3 == 1) gl_lease_table_bury(t, l, 10 * S);
    if (i % 3 == 2 && i % 2 == 0) gl_lease_table_remove(t, l);
  }
  assert_consistent(t);
  size_t live = 0;
  for (int i = 0; i < N; i++) {
    gl_lease *got = NULL;
    gpulease_status st = gl_lease_table_lookup(t, ids[i], &got);
    if (i % 3 == 1) {
      assert_int_equal(st, GPULEASE_LEASE_EXPIRED);
      assert_non_null(got);
      assert_int_equal(got->id, ids[i]);
      assert_int_equal(got->state, GL_LEASE_EXPIRED);
      assert_null(gl_lease_table_find(t, ids[i]));
    } else if (i % 3 == 2 && i % 2 == 0) {
      assert_int_equal(st, GPULEASE_NOT_FOUND);
      assert_null(gl_lease_table_find(t, ids[i]));
    } else {
      assert_int_equal(st, GPULEASE_OK);
      assert_int_equal(got->id, ids[i]);
      assert_ptr_equal(gl_lease_table_find(t, ids[i]), got);
      live++;
    }
  }
  assert_int_equal(gl_lease_table_live_count(t), live);
  gl_lease *got = NULL;
  assert_int_equal(gl_lease_table_lookup(t, 0, &got), GPULEASE_NOT_FOUND);
  assert_int_equal(gl_lease_table_lookup(t, ids[N - 1] + 1, &got), GPULEASE_NOT_FOUND);
  assert_int_equal(gl_lease_table_lookup(t, UINT64_MAX, &got), GPULEASE_NOT_FOUND);
  assert_null(gl_lease_table_find(t, 0));
  /* the tombstones' time passes (the live leases' too: they become tombstones) */
  size_t expired = gl_lease_table_expire(t, 60 * S, NULL, NULL);
  assert_int_equal(expired, live);
  assert_consistent(t);
  for (int i = 0; i < N; i++) {
    gpulease_status st = gl_lease_table_lookup(t, ids[i], &got);
    bool was_live = !(i % 3 == 1) && !(i % 3 == 2 && i % 2 == 0);
    assert_int_equal(st, was_live ? GPULEASE_LEASE_EXPIRED : GPULEASE_NOT_FOUND);
  }
  assert_int_equal(gl_lease_table_expire(t, 200 * S, NULL, NULL), 0);
  assert_consistent(t);
  for (int i = 0; i < N; i++)
    assert_int_equal(gl_lease_table_lookup(t, ids[i], &got), GPULEASE_NOT_FOUND);
  assert_int_equal(gl_lease_table_live_count(t), 0);
  gl_lease_table_del(t);
}

/* Removing the lease at each position of tables of every size up to 9
 * (live or a tombstone) leaves the others found, and the aggregates right. */
static void test_remove_every_position(void **state) {
  (void)state;
  for (int n = 1; n <= 9; n++) {
    for (int pos = 0; pos < n; pos++) {
      for (int tomb = 0; tomb < 2; tomb++) {
        gl_lease_table *t = table_big(2, 7 * MiB);
        gl_lease *ls[9];
        uint64_t ids[9];
        for (int i = 0; i < n; i++) {
          uint8_t cls = i % 2 ? GPULEASE_CLASS_SHARED : GPULEASE_CLASS_ISOLATED;
          ls[i] = alloc_class(t, 0, (uint32_t)i % 2, cls, (uint64_t)(i + 1) * MiB, "alice");
          ids[i] = ls[i]->id;
          gl_lease_table_set_held(t, ls[i], (uint64_t)i, 2 * (uint64_t)i, 3 * (uint64_t)i);
        }
        if (tomb) gl_lease_table_bury(t, ls[pos], 0);
        gl_lease_table_remove(t, ls[pos]);
        assert_consistent(t);
        assert_int_equal(gl_lease_table_live_count(t), (size_t)n - 1);
        uint64_t want[2] = {0, 0};
        uint32_t wantn[2] = {0, 0};
        for (int i = 0; i < n; i++) {
          gl_lease *got = NULL;
          if (i == pos) {
            assert_int_equal(gl_lease_table_lookup(t, ids[i], &got), GPULEASE_NOT_FOUND);
            continue;
          }
          assert_int_equal(gl_lease_table_lookup(t, ids[i], &got), GPULEASE_OK);
          assert_ptr_equal(got, ls[i]);
          want[i % 2] += (uint64_t)(i + 1) * MiB + 6 * (uint64_t)i;
          wantn[i % 2]++;
        }
        for (uint32_t g = 0; g < 2; g++) {
          uint64_t b;
          uint32_t c;
          gl_lease_table_gpu_usage(t, g, &b, &c);
          assert_int_equal(b, want[g]);
          assert_int_equal(c, wantn[g]);
        }
        /* and the rest can still go, in order */
        for (int i = 0; i < n; i++)
          if (i != pos) gl_lease_table_remove(t, ls[i]);
        assert_consistent(t);
        assert_int_equal(gl_lease_table_live_count(t), 0);
        gl_lease_table_del(t);
      }
    }
  }
}

/* What the held bytes change: the GPU's leased figure and its capacity
 * check; a tombstone's count for nothing. */
static void test_set_held(void **state) {
  (void)state;
  gl_lease_table *t = table_2gpus(8);
  gl_lease *a = alloc_ok(t, 0, 0, 400 * MiB, 60, SECRET_A);
  gl_lease_table_set_held(t, a, 100 * MiB, 200 * MiB, 250 * MiB);
  assert_int_equal(a->held_limits_bytes, 100 * MiB);
  assert_int_equal(a->held_module_bytes, 200 * MiB);
  assert_int_equal(a->held_local_bytes, 250 * MiB);
  uint64_t b;
  uint32_t c;
  gl_lease_table_gpu_usage(t, 0, &b, &c);
  assert_int_equal(b, 950 * MiB);
  assert_int_equal(c, 1);
  gl_lease *l;
  char err[256];
  assert_int_equal(gl_lease_table_alloc(t, 0, 0, GPULEASE_CLASS_ISOLATED, 100 * MiB, 60, "x", &l,
                                        err, sizeof err),
                   GPULEASE_CAPACITY_EXCEEDED);
  gl_lease_table_set_held(t, a, 0, 0, 0);
  gl_lease *x = alloc_ok(t, 0, 0, 100 * MiB, 60, SECRET_B);
  gl_lease_table_gpu_usage(t, 0, &b, &c);
  assert_int_equal(b, 500 * MiB);
  assert_int_equal(c, 2);
  /* saturating per lease */
  gl_lease_table_set_held(t, x, UINT64_MAX, 1, 1);
  assert_int_equal(gl_lease_holds(x), UINT64_MAX);
  assert_consistent(t);
  gl_lease_table_set_held(t, x, 0, 0, 0);
  gl_lease_table_bury(t, a, 0);
  gl_lease_table_set_held(t, a, 900 * MiB, 0, 0);
  gl_lease_table_gpu_usage(t, 0, &b, &c);
  assert_int_equal(b, 100 * MiB);
  assert_int_equal(c, 1);
  assert_consistent(t);
  gl_lease_table_del(t);
}

/* The tenant of a GPU's shared context, as op_lease_alloc asks for it. */
static void test_shared_owner(void **state) {
  (void)state;
  gl_lease_table *t = table_big(2, 0);
  assert_null(gl_lease_table_shared_owner(t, 0, "bob", 0));
  /* isolated leases of another tenant do not count */
  gl_lease *iso = alloc_class(t, 0, 0, GPULEASE_CLASS_ISOLATED, MiB, "carol");
  assert_null(gl_lease_table_shared_owner(t, 0, "bob", 0));
  gl_lease *a1 = alloc_class(t, 0, 0, GPULEASE_CLASS_SHARED, MiB, "alice");
  assert_string_equal(gl_lease_table_shared_owner(t, 0, "bob", 0), "alice");
  assert_null(gl_lease_table_shared_owner(t, 0, "alice", 0));
  assert_null(gl_lease_table_shared_owner(t, 1, "bob", 0)); /* another GPU */
  assert_null(gl_lease_table_shared_owner(t, GPULEASE_MAX_GPUS, "bob", 0));
  assert_null(gl_lease_table_shared_owner(t, UINT32_MAX, "bob", 0));
  /* the lease just allocated is not counted, whoever asks */
  assert_null(gl_lease_table_shared_owner(t, 0, "bob", a1->id));
  gl_lease *a2 = alloc_class(t, 0, 0, GPULEASE_CLASS_SHARED, MiB, "alice");
  gl_lease_table_activate(t, a2, 0);
  assert_string_equal(gl_lease_table_shared_owner(t, 0, "bob", a1->id), "alice");
  /* a second tenant's lease, as alloc grants it before op_lease_alloc's check */
  gl_lease *b = alloc_class(t, 0, 0, GPULEASE_CLASS_SHARED, MiB, "bob");
  assert_string_equal(gl_lease_table_shared_owner(t, 0, "bob", b->id), "alice");
  assert_string_equal(gl_lease_table_shared_owner(t, 0, "alice", a1->id), "bob");
  assert_non_null(gl_lease_table_shared_owner(t, 0, "", 0));
  assert_non_null(gl_lease_table_shared_owner(t, 0, NULL, 0));
  gl_lease_table_remove(t, b);
  assert_null(gl_lease_table_shared_owner(t, 0, "alice", a1->id));
  /* tombstones do not count */
  gl_lease_table_bury(t, a1, 0);
  assert_string_equal(gl_lease_table_shared_owner(t, 0, "bob", 0), "alice");
  assert_null(gl_lease_table_shared_owner(t, 0, "bob", a2->id));
  gl_lease_table_bury(t, a2, 0);
  assert_null(gl_lease_table_shared_owner(t, 0, "bob", 0));
  /* the GPU is anyone's again */
  gl_lease *b2 = alloc_class(t, 0, 0, GPULEASE_CLASS_SHARED, MiB, "bob");
  assert_string_equal(gl_lease_table_shared_owner(t, 0, "alice", 0), "bob");
  assert_null(gl_lease_table_shared_owner(t, 0, "bob", 0));
  /* anonymous is a tenant like any other */
  gl_lease *anon = alloc_class(t, 0, 1, GPULEASE_CLASS_SHARED, MiB, NULL);
  assert_string_equal(gl_lease_table_shared_owner(t, 1, "bob", 0), "");
  assert_null(gl_lease_table_shared_owner(t, 1, "", 0));
  assert_null(gl_lease_table_shared_owner(t, 1, "bob", anon->id));
  (void)iso;
  (void)b2;
  assert_consistent(t);
  gl_lease_table_del(t);
}

/* Deterministic xorshift64*: the random walk below is the same each run. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ull;
}
static uint64_t rnd_below(uint64_t n) { return rnd() % n; }

enum { WALK_GPUS = 3, WALK_MAX = 6000 };
static uint64_t walk_ids[WALK_MAX];
static size_t walk_n;

static gl_lease *walk_pick(gl_lease_table *t, bool live_only) {
  if (!walk_n) return NULL;
  for (int tries = 0; tries < 8; tries++) {
    gl_lease *l = NULL;
    gpulease_status st = gl_lease_table_lookup(t, walk_ids[rnd_below(walk_n)], &l);
    assert_true(st == GPULEASE_OK || st == GPULEASE_LEASE_EXPIRED);
    if (!live_only || st == GPULEASE_OK) return l;
  }
  return NULL;
}

static void walk_forget(uint64_t id) {
  for (size_t i = 0; i < walk_n; i++)
    if (walk_ids[i] == id) {
      walk_ids[i] = walk_ids[--walk_n];
      return;
    }
  fail_msg("lease %llu was not in the walk", (unsigned long long)id);
}

/* What the table should say, from the walk's own list of ids. */
static void walk_verify(gl_lease_table *t) {
  assert_consistent(t);
  uint64_t bytes[WALK_GPUS] = {0};
  uint32_t count[WALK_GPUS] = {0};
  size_t live = 0;
  for (size_t i = 0; i < walk_n; i++) {
    gl_lease *l = NULL;
    gpulease_status st = gl_lease_table_lookup(t, walk_ids[i], &l);
    assert_true(st == GPULEASE_OK || st == GPULEASE_LEASE_EXPIRED);
    assert_int_equal(l->id, walk_ids[i]);
    assert_int_equal(st == GPULEASE_OK, l->state != GL_LEASE_EXPIRED);
    assert_ptr_equal(gl_lease_table_find(t, walk_ids[i]), st == GPULEASE_OK ? l : NULL);
    if (st != GPULEASE_OK) continue;
    live++;
    bytes[l->gpu_index] += gl_lease_holds(l);
    count[l->gpu_index]++;
  }
  assert_int_equal(gl_lease_table_live_count(t), live);
  for (uint32_t g = 0; g < WALK_GPUS; g++) {
    uint64_t b;
    uint32_t c;
    gl_lease_table_gpu_usage(t, g, &b, &c);
    assert_int_equal(b, bytes[g]);
    assert_int_equal(c, count[g]);
  }
  /* the shared owner, against find_shared_owner's scan */
  static const char *const tenants[] = {"alice", "bob", "carol"};
  for (uint32_t g = 0; g < WALK_GPUS; g++) {
    for (size_t k = 0; k < 3; k++) {
      uint64_t self = walk_n && rnd_below(2) ? walk_ids[rnd_below(walk_n)] : 0;
      bool other = false;
      for (size_t i = 0; i < walk_n; i++) {
        gl_lease *l = gl_lease_table_find(t, walk_ids[i]);
        if (l && l->id != self && l->lease_class == GPULEASE_CLASS_SHARED && l->gpu_index == g &&
            strcmp(l->tenant, tenants[k]) != 0)
          other = true;
      }
      const char *who = gl_lease_table_shared_owner(t, g, tenants[k], self);
      assert_int_equal(who != NULL, other);
      if (who) assert_string_not_equal(who, tenants[k]);
    }
  }
}

/* A few thousand random allocs, activations, held changes, renewals,
 * burials, removals and expiries: the aggregates always equal a scan. */
static void test_aggregates_random_walk(void **state) {
  (void)state;
  gl_lease_table_config c = {.max_ttl_s = 300, .max_leases = 400, .tombstone_ns = 20 * S};
  gl_lease_table *t = gl_lease_table_new(&c);
  assert_non_null(t);
  for (uint32_t g = 0; g < WALK_GPUS; g++) {
    assert_int_equal(gl_lease_table_set_gpu(t, g, (uint64_t)(g + 1) * 4096 * MiB), 0);
    gl_lease_table_set_overhead(t, g, (uint64_t)g * 50 * MiB);
  }
  static const char *const tenants[] = {"alice", "bob", "carol"};
  static const uint8_t classes[] = {GPULEASE_CLASS_ISOLATED, GPULEASE_CLASS_SHARED,
                                    GPULEASE_CLASS_SHARED, GPULEASE_CLASS_DEVICE};
  uint64_t now = 0;
  unsigned granted = 0, refused = 0, expired = 0;
  size_t peak = 0;
  walk_n = 0;
  for (int step = 0; step < 5000; step++) {
    unsigned op = (unsigned)rnd_below(100);
    gl_lease *l;
    if (op < 45) { /* alloc */
      uint32_t gpu = rnd_below(4) == 0 ? GPULEASE_ANY_GPU : (uint32_t)rnd_below(WALK_GPUS);
      uint8_t cls = classes[rnd_below(sizeof classes)];
      if (cls == GPULEASE_CLASS_DEVICE && rnd_below(4)) cls = GPULEASE_CLASS_ISOLATED;
      char err[256];
      l = NULL;
      gpulease_status st =
          gl_lease_table_alloc(t, now, gpu, cls, (rnd_below(200) + 1) * MiB,
                               (uint32_t)rnd_below(40) + 1, tenants[rnd_below(3)], &l, err,
                               sizeof err);
      if (st == GPULEASE_OK) {
        assert_int_equal(l->state, GL_LEASE_PENDING);
        assert_true(walk_n < WALK_MAX);
        walk_ids[walk_n++] = l->id;
        granted++;
        if (walk_n > peak) peak = walk_n;
      } else {
        assert_true(st == GPULEASE_BUSY || st == GPULEASE_CAPACITY_EXCEEDED);
        refused++;
      }
    } else if (op < 57) { /* activate */
      if ((l = walk_pick(t, true)) && l->state == GL_LEASE_PENDING)
        gl_lease_table_activate(t, l, now);
    } else if (op < 69) { /* what it holds */
      if ((l = walk_pick(t, false)))
        gl_lease_table_set_held(t, l, rnd_below(3) ? 0 : rnd_below(64) * MiB,
                                rnd_below(2) ? l->held_module_bytes : rnd_below(32) * MiB,
                                rnd_below(2) ? 0 : rnd_below(1 << 20));
    } else if (op < 73) { /* renew */
      char err[64];
      if ((l = walk_pick(t, true)))
        assert_int_equal(gl_lease_table_renew(t, l, now, (uint32_t)rnd_below(40) + 1, err,
                                              sizeof err),
                         GPULEASE_OK);
    } else if (op < 80) { /* bury (e.g. its worker died), live or a tombstone again */
      if ((l = walk_pick(t, rnd_below(4) != 0))) {
        if (l->state != GL_LEASE_EXPIRED) l->end_reason = GL_LEASE_END_LOST;
        gl_lease_table_bury(t, l, now);
      }
    } else if (op < 91) { /* remove (free, failed alloc) */
      if ((l = walk_pick(t, false))) {
        uint64_t id = l->id;
        gl_lease_table_remove(t, l);
        walk_forget(id);
      }
    } else { /* time passes; expiry */
      now += rnd_below(3 * S);
      /* the tombstones past their time go; the live leases due become tombstones */
      size_t due = 0;
      for (size_t i = 0; i < walk_n;) {
        gl_lease *x = NULL;
        gpulease_status st = gl_lease_table_lookup(t, walk_ids[i], &x);
        if (x->expires_ns <= now && st == GPULEASE_OK) due++;
        if (x->expires_ns <= now && st == GPULEASE_LEASE_EXPIRED)
          walk_ids[i] = walk_ids[--walk_n];
        else
          i++;
      }
      size_t n = gl_lease_table_expire(t, now, NULL, NULL);
      assert_int_equal(n, due);
      expired += (unsigned)n;
    }
    walk_verify(t);
  }
  /* the walk went through every kind of step */
  assert_true(granted > 500);
  assert_true(refused > 10);
  assert_true(expired > 50);
  assert_true(peak > 150); /* the id map grew and shrank under many leases */
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
      cmocka_unit_test(test_lookup_many),        cmocka_unit_test(test_remove_every_position),
      cmocka_unit_test(test_set_held),           cmocka_unit_test(test_shared_owner),
      cmocka_unit_test(test_aggregates_random_walk),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
