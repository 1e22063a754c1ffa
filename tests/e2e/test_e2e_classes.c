/*
 * test_e2e_classes.c - lease classes (LEASE_ALLOC's lease_class,
 * docs/protocol.md) against a real gpuleased on the emulated device.
 *
 * Checked:
 *   - shared leases live in one worker process; each runs kernels and
 *     keeps its own bytes; freeing one leaves the others running; the
 *     shared worker ends a while after its last lease;
 *   - a device fault in a shared lease loses every shared lease of that
 *     context (LEASE_EXPIRED, saying why) and leaves an isolated lease
 *     running; a new shared lease gets a fresh context;
 *   - a device lease is refused while other leases live and keeps every
 *     other lease off the GPU while it lives; partition is refused; limits
 *     on a shared lease are refused;
 *   - 10,000 alloc/free cycles (shared and isolated) leave the daemon's
 *     RSS, file descriptors and worker processes where they were (1,000
 *     on a GPU, where they also leave NVML's free VRAM where it was).
 *
 * With GL_TEST_DEVICE=cuda it runs on the node's real GPU (tests/gpu/
 * check.sh does).
 */
#include <dirent.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "daemon_harness.h"
#include "gpulease/gpulease.h"
#include "lib_check.h"

/* Sanitizer builds: the daemon's RSS holds ASan's quarantine and grows
 * with what it frees, and every cycle is several times slower. */
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

static bool on_gpu(void) {
  const char *dev = getenv("GL_TEST_DEVICE");
  return dev && strcmp(dev, "cuda") == 0;
}

/* The emulated device with 256 MiB, or the node's GPUs. */
static void start(gl_test_daemon *d, const char *warm) {
  const char *extra[] = {"--warm-workers", warm, NULL};
  assert_int_equal(gl_test_daemon_start(d, on_gpu() ? NULL : "256M", extra), 0);
}

static gpulease_lease alloc_class(gpulease_client *c, gpulease_lease_class cls, uint64_t bytes) {
  gpulease_lease_opts o = {.struct_version = GPULEASE_LEASE_OPTS_VERSION, .lease_class = cls};
  gpulease_lease l;
  CHECK(gpulease_lease_alloc_opts(c, GPULEASE_ANY_GPU, bytes, 60, &o, &l, E));
  assert_int_equal(l.lease_class, cls);
  return l;
}

static gpulease_status alloc_status(gpulease_client *c, gpulease_lease_class cls, uint64_t bytes,
                                    const gpulease_lease_opts *extra, gpulease_lease *l,
                                    gpulease_error *err) {
  gpulease_lease_opts o =
      extra ? *extra : (gpulease_lease_opts){.struct_version = GPULEASE_LEASE_OPTS_VERSION};
  o.lease_class = cls;
  return gpulease_lease_alloc_opts(c, GPULEASE_ANY_GPU, bytes, 60, &o, l, err);
}

/* Writes `fill` into the first n bytes of the lease (a session buffer), and
 * checks that a later read gives them back. */
static gpulease_session *fill_lease(gpulease_client *c, const gpulease_lease *l, uint8_t fill,
                                    size_t n, gpulease_buffer *buf) {
  gpulease_session *s;
  CHECK(gpulease_session_open(c, l, &s, E));
  CHECK(gpulease_mem_alloc(s, n, buf, E));
  uint8_t *b = malloc(n);
  memset(b, fill, n);
  CHECK(gpulease_mem_write(s, *buf, 0, b, n, E));
  free(b);
  return s;
}

static void check_fill(gpulease_session *s, gpulease_buffer buf, uint8_t fill, size_t n) {
  uint8_t *b = malloc(n);
  CHECK(gpulease_mem_read(s, buf, 0, b, n, E));
  for (size_t i = 0; i < n; i++) assert_int_equal(b[i], fill);
  free(b);
}

static void test_shared_leases(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "0");
  gpulease_client *c = gl_test_connect(&d, 30000);
  enum { N = 5 };
  gpulease_lease l[N];
  for (int i = 0; i < N; i++) l[i] = alloc_class(c, GPULEASE_CLASS_SHARED, 4 * MiB);
  assert_int_equal(gl_test_daemon_children(&d), 1); /* one context for all */
  for (int i = 0; i < N; i++) gl_test_run_iota(c, &l[i]); /* writes the region's first KiB */
  gpulease_session *s[N];
  gpulease_buffer b[N];
  for (int i = 0; i < N; i++) s[i] = fill_lease(c, &l[i], (uint8_t)(0x10 + i), 1 << 20, &b[i]);
  for (int i = 0; i < N; i++) check_fill(s[i], b[i], (uint8_t)(0x10 + i), 1 << 20);
  /* One lease's session cannot be reached with another's secret. */
  gpulease_lease q = l[1];
  CHECK(gpulease_lease_query(c, &q, E));
  assert_int_equal(q.lease_class, GPULEASE_CLASS_SHARED);
  /* Freeing two leaves the rest whole. */
  gpulease_session_close(s[0], NULL);
  gpulease_session_close(s[3], NULL);
  CHECK(gpulease_lease_free(c, &l[0], E));
  CHECK(gpulease_lease_free(c, &l[3], E));
  /* Their space is given out again, zeroed. */
  gpulease_lease again = alloc_class(c, GPULEASE_CLASS_SHARED, 8 * MiB);
  gpulease_session *sa;
  CHECK(gpulease_session_open(c, &again, &sa, E));
  gpulease_buffer ba;
  CHECK(gpulease_mem_alloc(sa, 8 * MiB, &ba, E));
  check_fill(sa, ba, 0, 8 * MiB);
  gpulease_session_close(sa, NULL);
  CHECK(gpulease_lease_free(c, &again, E));
  for (int i = 1; i < N; i++) {
    if (i == 3) continue;
    check_fill(s[i], b[i], (uint8_t)(0x10 + i), 1 << 20);
    gpulease_session_close(s[i], NULL);
    CHECK(gpulease_lease_free(c, &l[i], E));
  }
  assert_int_equal(gl_test_daemon_children(&d), 1); /* kept a while */
  assert_int_equal(gl_test_daemon_wait_children(&d, 0, 15000), 0);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* A kernel that stores 7 at the address it is given. */
static const char k_poke[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry poke(.param .u64 p)\n{\n"
    "  .reg .b64 %rd<2>;\n  .reg .b32 %r<2>;\n"
    "  ld.param.u64 %rd1, [p];\n  mov.u32 %r1, 7;\n  st.global.u32 [%rd1], %r1;\n  ret;\n}\n";

static void test_shared_fault(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "0");
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease a = alloc_class(c, GPULEASE_CLASS_SHARED, 4 * MiB);
  gpulease_lease b = alloc_class(c, GPULEASE_CLASS_SHARED, 4 * MiB);
  gpulease_lease iso = alloc_class(c, GPULEASE_CLASS_ISOLATED, 4 * MiB);
  gl_test_run_iota(c, &b);
  /* A faults: address 16 is no device address. */
  uint64_t bad = 16;
  gpulease_param p = gpulease_param_scalar(&bad, sizeof bad);
  gpulease_submit_desc sd;
  gpulease_submit_desc_default(&sd);
  sd.image = k_poke;
  sd.image_size = sizeof k_poke - 1;
  sd.kernel = "poke";
  sd.params = &p;
  sd.param_count = 1;
  gpulease_submit_result r = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
  gpulease_error err;
  assert_int_equal(gpulease_submit(c, &a, &sd, &r, &err), GPULEASE_LAUNCH_FAILED);
  printf("the fault: %s\n", err.message);
  assert_non_null(strstr(err.message, "CUDA_ERROR_ILLEGAL_ADDRESS"));
  assert_non_null(strstr(err.message, "class shared"));
  /* B went with the context; it says so. */
  gpulease_lease qb = b;
  gpulease_status st = GPULEASE_OK;
  for (int i = 0; i < 200 && (st = gpulease_lease_query(c, &qb, &err)) == GPULEASE_OK; i++) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  assert_int_equal(st, GPULEASE_LEASE_EXPIRED);
  printf("the other shared lease: %s\n", err.message);
  assert_non_null(strstr(err.message, "lost with its shared CUDA context"));
  assert_int_equal(gpulease_lease_query(c, &a, &err), GPULEASE_LEASE_EXPIRED);
  /* The isolated lease is untouched; a new shared lease gets a new context. */
  gl_test_run_iota(c, &iso);
  gpulease_lease fresh = alloc_class(c, GPULEASE_CLASS_SHARED, 4 * MiB);
  gl_test_run_iota(c, &fresh);
  CHECK(gpulease_lease_free(c, &fresh, E));
  CHECK(gpulease_lease_free(c, &iso, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

static void test_device_and_refusals(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "0");
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease sh = alloc_class(c, GPULEASE_CLASS_SHARED, 4 * MiB);
  gpulease_lease x;
  gpulease_error err;
  assert_int_equal(alloc_status(c, GPULEASE_CLASS_DEVICE, 4 * MiB, NULL, &x, &err), GPULEASE_BUSY);
  assert_non_null(strstr(err.message, "a device lease needs the whole GPU"));
  CHECK(gpulease_lease_free(c, &sh, E));
  gpulease_lease dev = alloc_class(c, GPULEASE_CLASS_DEVICE, 64 * MiB);
  gl_test_run_iota(c, &dev);
  assert_int_equal(alloc_status(c, GPULEASE_CLASS_ISOLATED, 4 * MiB, NULL, &x, &err),
                   GPULEASE_BUSY);
  assert_non_null(strstr(err.message, "held whole by device lease"));
  assert_int_equal(alloc_status(c, GPULEASE_CLASS_SHARED, 4 * MiB, NULL, &x, &err),
                   GPULEASE_BUSY);
  CHECK(gpulease_lease_free(c, &dev, E));
  gpulease_lease after = alloc_class(c, GPULEASE_CLASS_ISOLATED, 4 * MiB);
  CHECK(gpulease_lease_free(c, &after, E));
  /* Partition needs MIG; limits belong to a context of the lease's own. */
  assert_int_equal(alloc_status(c, GPULEASE_CLASS_PARTITION, 4 * MiB, NULL, &x, &err),
                   GPULEASE_UNSUPPORTED);
  assert_non_null(strstr(err.message, "MIG"));
  gpulease_lease_opts lim = {.struct_version = GPULEASE_LEASE_OPTS_VERSION,
                             .printf_fifo_bytes = 1 << 20};
  assert_int_equal(alloc_status(c, GPULEASE_CLASS_SHARED, 4 * MiB, &lim, &x, &err),
                   GPULEASE_INVALID_ARGUMENT);
  /* An isolated lease may ask for bigger limits, within its VRAM: past the
   * defaults they are the context's VRAM beyond the region (16 MiB - 1 MiB
   * of heap, 1 MiB - 64 KiB of FIFO here). */
  lim.malloc_heap_bytes = 16 * MiB;
  assert_int_equal(alloc_status(c, GPULEASE_CLASS_ISOLATED, 4 * MiB, &lim, &x, &err),
                   GPULEASE_CAPACITY_EXCEEDED);
  assert_non_null(strstr(err.message, "take 16711680 bytes of the context's VRAM beyond the "
                                      "defaults"));
  assert_int_equal(alloc_status(c, GPULEASE_CLASS_ISOLATED, 16 * MiB, &lim, &x, &err),
                   GPULEASE_OK);
  gl_test_run_iota(c, &x);
  CHECK(gpulease_lease_free(c, &x, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* Partition leases on a GPU in MIG mode, its instances given by an
 * injected table (GPULEASED_MIG_TABLE): the emulated device stands for
 * each instance, with the instance's size. */
static void test_partition(void **state) {
  (void)state;
  if (on_gpu()) {
    printf("partition: checked on the emulated device only (no GPU here is in MIG mode)\n");
    return;
  }
  char table[] = "/tmp/gl-mig-XXXXXX";
  int fd = mkstemp(table);
  assert_true(fd >= 0);
  const char rows[] = "# gpu uuid bytes\n0 MIG-11111111-aaaa-bbbb-cccc-000000000001 67108864\n"
                      "0 MIG-22222222-aaaa-bbbb-cccc-000000000002 134217728\n"
                      "7 MIG-33333333-no-such-gpu 67108864\n0 MIG-44444444-no-size\n";
  assert_int_equal(write(fd, rows, sizeof rows - 1), (ssize_t)(sizeof rows - 1));
  close(fd);
  setenv("GPULEASED_MIG_TABLE", table, 1);
  gl_test_daemon d;
  start(&d, "2");
  unsetenv("GPULEASED_MIG_TABLE");
  gpulease_client *c = gl_test_connect(&d, 30000);
  /* The two bad lines are skipped with a warning each; the rest serve. */
  assert_int_equal(gl_test_daemon_log_count(&d, "line ignored"), 2);
  assert_int_equal(gl_test_daemon_log_count(&d, "MIG-33333333"), 0);
  gpulease_inventory inv = {.struct_version = GPULEASE_INVENTORY_VERSION};
  CHECK(gpulease_inventory_get(c, &inv, E));
  assert_true(inv.gpus[0].flags & GPULEASE_GPU_MIG);
  gpulease_warm_pool_info pool = {.struct_version = GPULEASE_WARM_POOL_INFO_VERSION};
  CHECK(gpulease_warm_pool_get(c, &pool, E));
  assert_int_equal(pool.gpus[0].target, 0); /* no warm workers for whole-GPU leases */
  gpulease_lease x;
  gpulease_error err;
  assert_int_equal(alloc_status(c, GPULEASE_CLASS_ISOLATED, 4 * MiB, NULL, &x, &err),
                   GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "MIG mode"));
  assert_int_equal(alloc_status(c, GPULEASE_CLASS_SHARED, 4 * MiB, NULL, &x, &err),
                   GPULEASE_INVALID_ARGUMENT);
  /* 100 MiB: only the 128 MiB instance holds it; 32 MiB: the smallest free. */
  gpulease_lease big = alloc_class(c, GPULEASE_CLASS_PARTITION, 100 * MiB);
  gpulease_lease small = alloc_class(c, GPULEASE_CLASS_PARTITION, 32 * MiB);
  assert_int_equal(gl_test_daemon_log_count(&d, "bound to MIG-22222222"), 1);
  assert_int_equal(gl_test_daemon_log_count(&d, "bound to MIG-11111111"), 1);
  gl_test_run_iota(c, &big);
  gl_test_run_iota(c, &small);
  assert_int_equal(alloc_status(c, GPULEASE_CLASS_PARTITION, 1 * MiB, NULL, &x, &err),
                   GPULEASE_CAPACITY_EXCEEDED);
  assert_non_null(strstr(err.message, "no free MIG instance"));
  /* Freed, the instance serves the next partition lease (a new worker). */
  CHECK(gpulease_lease_free(c, &big, E));
  assert_int_equal(alloc_status(c, GPULEASE_CLASS_PARTITION, 200 * MiB, NULL, &x, &err),
                   GPULEASE_CAPACITY_EXCEEDED);
  big = alloc_class(c, GPULEASE_CLASS_PARTITION, 64 * MiB + 1);
  assert_int_equal(gl_test_daemon_log_count(&d, "bound to MIG-22222222"), 2);
  gl_test_run_iota(c, &big);
  CHECK(gpulease_lease_free(c, &big, E));
  CHECK(gpulease_lease_free(c, &small, E));
  assert_int_equal(gl_test_daemon_wait_children(&d, 0, 10000), 0);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
  unlink(table);
}

/* The daemon's resident memory (KiB) and open descriptors. */
static void daemon_usage(pid_t pid, long *rss_kib, int *fds) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  *rss_kib = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", rss_kib) == 1) break;
  fclose(f);
  snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
  DIR *dir = opendir(path);
  assert_non_null(dir);
  *fds = 0;
  for (struct dirent *e; (e = readdir(dir));) *fds += e->d_name[0] != '.';
  closedir(dir);
}

static void test_cycles_leave_nothing(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "2");
  assert_int_equal(gl_test_daemon_wait_children(&d, 2, 10000), 2);
  gpulease_client *c = gl_test_connect(&d, 30000);
  /* Warm up: the first of each kind allocates what is kept (caches, the
   * shared context's registry), then measure. */
  gpulease_lease w = alloc_class(c, GPULEASE_CLASS_SHARED, MiB);
  CHECK(gpulease_lease_free(c, &w, E));
  w = alloc_class(c, GPULEASE_CLASS_ISOLATED, MiB);
  CHECK(gpulease_lease_free(c, &w, E));
  /* The pool full again, the shared context ended after its linger time. */
  assert_int_equal(gl_test_daemon_wait_children(&d, 2, 15000), 2);
  long rss0, rss1;
  int fd0, fd1;
  daemon_usage(d.pid, &rss0, &fd0);
  int SHARED = 9000, ISOLATED = 1000;
  if (on_gpu()) SHARED = ISOLATED = 500;
  if (UNDER_ASAN) SHARED = 1800, ISOLATED = 200;
  gpulease_inventory inv = {.struct_version = GPULEASE_INVENTORY_VERSION};
  CHECK(gpulease_inventory_get(c, &inv, E));
  uint64_t free0 = inv.gpus[0].free_vram_bytes;
  for (int i = 0; i < SHARED + ISOLATED; i++) {
    gpulease_lease_class cls = i < SHARED ? GPULEASE_CLASS_SHARED : GPULEASE_CLASS_ISOLATED;
    gpulease_lease l = alloc_class(c, cls, MiB + (uint64_t)(i % 7) * 4096);
    if (i % 1000 == 0) gl_test_run_iota(c, &l);
    CHECK(gpulease_lease_free(c, &l, E));
  }
  /* Every isolated worker reaped, the pool full again, the shared context
   * kept for its linger time, then ended. */
  assert_int_equal(gl_test_daemon_wait_children(&d, 2, 15000), 2);
  /* A worker still being started or reaped holds a descriptor for a
   * moment; a leaked one stays. */
  daemon_usage(d.pid, &rss1, &fd1);
  for (int t = 0; t < 50 && fd1 != fd0; t++) {
    usleep(100 * 1000);
    daemon_usage(d.pid, &rss1, &fd1);
  }
  printf("%d cycles: daemon RSS %ld -> %ld KiB, descriptors %d -> %d\n", SHARED + ISOLATED, rss0,
         rss1, fd0, fd1);
  assert_int_equal(fd1, fd0);
  if (!UNDER_ASAN) /* no growth with the cycles (allocator noise only) */
    assert_true(rss1 - rss0 < 8 * 1024);
  CHECK(gpulease_inventory_get(c, &inv, E));
  assert_int_equal(inv.gpus[0].active_leases, 0);
  assert_int_equal(inv.gpus[0].leased_vram_bytes, 0);
  /* NVML: back where it was, within 64 MiB of other users' noise. A context
   * the driver is still tearing down (the last worker's, reaped a moment
   * ago) shows as used for a while; a leaked one stays. */
  for (int t = 0; on_gpu() && t < 150 && inv.gpus[0].free_vram_bytes + (64ull << 20) < free0;
       t++) {
    usleep(100 * 1000);
    CHECK(gpulease_inventory_get(c, &inv, E));
  }
  printf("free VRAM %llu -> %llu MiB\n", (unsigned long long)(free0 >> 20),
         (unsigned long long)(inv.gpus[0].free_vram_bytes >> 20));
  if (on_gpu()) assert_true(inv.gpus[0].free_vram_bytes + (64ull << 20) >= free0);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shared_leases),
      cmocka_unit_test(test_shared_fault),
      cmocka_unit_test(test_device_and_refusals),
      cmocka_unit_test(test_partition),
      cmocka_unit_test(test_cycles_leave_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
