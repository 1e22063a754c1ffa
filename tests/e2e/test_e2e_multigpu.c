/*
 * test_e2e_multigpu.c - every GPU of a node, on emulated GPUs
 * (gpuleased --emu-gpus 3): the inventory lists EMU-0..EMU-2, each with a
 * VRAM budget of its own; a lease asked for any GPU goes by --placement
 * (spread: evenly; pack: as few GPUs as hold the leases); a lease asked
 * for a GPU lands there, or gets NO_DEVICE naming the node's count; a
 * kernel that faults on one GPU leaves a lease on another GPU running with
 * its data intact; a kernel that hangs on one GPU, stopped at its lease's
 * TTL, does not hold up a lease on another; a device lease (a whole GPU)
 * leaves the other GPUs leasable.
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

#include "daemon_harness.h"
#include "gpulease/gpulease.h"
#include "lib_check.h"

static gl_test_daemon start(const char *placement) {
  gl_test_daemon d;
  const char *extra[] = {"--emu-gpus", "3", "--placement", placement, NULL};
  assert_int_equal(gl_test_daemon_start(&d, "64M", extra), 0);
  return d;
}

/* The live leases of each GPU, from the inventory. */
static void leases_by_gpu(gpulease_client *c, uint32_t out[3]) {
  static gpulease_inventory inv = {.struct_version = GPULEASE_INVENTORY_VERSION};
  CHECK(gpulease_inventory_get(c, &inv, E));
  assert_int_equal(inv.gpu_count, 3);
  for (uint32_t g = 0; g < 3; g++) out[g] = inv.gpus[g].active_leases;
}

static void test_inventory_and_spread(void **state) {
  (void)state;
  gl_test_daemon d = start("spread");
  gpulease_client *c = gl_test_connect(&d, 30000);
  static gpulease_inventory inv = {.struct_version = GPULEASE_INVENTORY_VERSION};
  CHECK(gpulease_inventory_get(c, &inv, E));
  assert_int_equal(inv.gpu_count, 3);
  for (uint32_t g = 0; g < 3; g++) {
    char uuid[16];
    snprintf(uuid, sizeof uuid, "EMU-%u", g);
    assert_string_equal(inv.gpus[g].uuid, uuid);
    assert_int_equal(inv.gpus[g].index, g);
    assert_int_equal(inv.gpus[g].total_vram_bytes, 64 * MiB);
    assert_true(inv.gpus[g].flags & GPULEASE_GPU_EMULATED);
  }
  /* Six leases for any GPU: two on each. */
  gpulease_lease l[6];
  for (int i = 0; i < 6; i++) CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 8 * MiB, 60, &l[i], E));
  uint32_t n[3];
  leases_by_gpu(c, n);
  assert_int_equal(n[0], 2);
  assert_int_equal(n[1], 2);
  assert_int_equal(n[2], 2);
  CHECK(gpulease_inventory_get(c, &inv, E));
  for (uint32_t g = 0; g < 3; g++) {
    assert_int_equal(inv.gpus[g].leased_vram_bytes, 16 * MiB);
    assert_int_equal(inv.gpus[g].free_vram_bytes, 48 * MiB);
  }
  /* A lease asked for GPU 2 lands there; GPU 3 does not exist. */
  gpulease_lease on2;
  CHECK(gpulease_lease_alloc(c, 2, MiB, 60, &on2, E));
  assert_int_equal(on2.gpu_index, 2);
  gpulease_lease none;
  gpulease_error err;
  assert_int_equal(gpulease_lease_alloc(c, 3, MiB, 60, &none, &err), GPULEASE_NO_DEVICE);
  assert_non_null(strstr(err.message, "no GPU with index 3 (this node has 3)"));
  /* The CLI takes a GPU's UUID too (through the inventory). */
  char out[4096];
  assert_int_equal(gl_test_cli(&d, out, sizeof out, "lease alloc --vram 1M --ttl 60 --gpu EMU-2"), 0);
  assert_non_null(strstr(out, "gpu        2"));
  assert_int_equal(gl_test_cli(&d, out, sizeof out, "lease alloc --vram 1M --ttl 60 --gpu EMU-9"), 1);
  assert_non_null(strstr(out, "no GPU with UUID 'EMU-9' on this node (its GPUs: EMU-0, EMU-1, EMU-2)"));
  /* Too large for any one GPU, though the node has that much in all. */
  assert_int_equal(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 60 * MiB, 60, &none, &err),
                   GPULEASE_CAPACITY_EXCEEDED);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

static void test_pack(void **state) {
  (void)state;
  gl_test_daemon d = start("pack");
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease l[8];
  /* Six 8 MiB leases fill GPU 0 first. */
  for (int i = 0; i < 6; i++) {
    CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 8 * MiB, 60, &l[i], E));
    assert_int_equal(l[i].gpu_index, 0);
  }
  /* 24 MiB no longer fits GPU 0 (16 MiB left): the next GPU takes it, and
   * the one after stays empty. */
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 24 * MiB, 60, &l[6], E));
  assert_int_equal(l[6].gpu_index, 1);
  /* 16 MiB: GPU 0 has just that left, the fullest that takes it. */
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 16 * MiB, 60, &l[7], E));
  assert_int_equal(l[7].gpu_index, 0);
  uint32_t n[3];
  leases_by_gpu(c, n);
  assert_int_equal(n[0], 7);
  assert_int_equal(n[1], 1);
  assert_int_equal(n[2], 0);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* A faulting kernel on GPU 0 ends that lease's context; a lease on GPU 1
 * keeps its session, its data and its kernels. */
static void test_fault_on_one_gpu(void **state) {
  (void)state;
  gl_test_daemon d = start("spread");
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease a, b;
  CHECK(gpulease_lease_alloc(c, 0, 4 * MiB, 60, &a, E));
  CHECK(gpulease_lease_alloc(c, 1, 4 * MiB, 60, &b, E));
  assert_int_equal(a.gpu_index, 0);
  assert_int_equal(b.gpu_index, 1);
  gpulease_session *s;
  CHECK(gpulease_session_open(c, &b, &s, E));
  gpulease_buffer buf;
  CHECK(gpulease_mem_alloc(s, 4096, &buf, E));
  uint8_t data[4096], back[4096];
  for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 7 + 3);
  CHECK(gpulease_mem_write(s, buf, 0, data, sizeof data, E));

  size_t len;
  char *oob = gl_test_read_ptx("oob", &len);
  assert_non_null(oob);
  gpulease_submit_desc sd;
  gpulease_submit_desc_default(&sd);
  sd.image = oob;
  sd.image_size = len;
  sd.kernel = "oob";
  gpulease_submit_result r = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
  gpulease_error err;
  gpulease_status st = gpulease_submit(c, &a, &sd, &r, &err);
  fprintf(stderr, "oob on GPU 0: %s: %s\n", gpulease_status_name(st), err.message);
  assert_int_equal(st, GPULEASE_LAUNCH_FAILED);
  free(oob);

  CHECK(gpulease_session_sync(s, NULL, E));
  CHECK(gpulease_mem_read(s, buf, 0, back, sizeof back, E));
  assert_memory_equal(back, data, sizeof data);
  gl_test_run_iota(c, &b); /* GPU 1's lease still runs kernels */
  CHECK(gpulease_session_close(s, E));
  CHECK(gpulease_lease_free(c, &b, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

typedef struct hung {
  gpulease_client *c;
  gpulease_lease lease;
  gpulease_status st;
  gpulease_error err;
} hung;

static void *run_spin(void *arg) {
  hung *h = arg;
  size_t len;
  char *spin = gl_test_read_ptx("spin", &len);
  if (!spin) {
    h->st = GPULEASE_INTERNAL;
    return NULL;
  }
  gpulease_submit_desc sd;
  gpulease_submit_desc_default(&sd);
  sd.image = spin;
  sd.image_size = len;
  sd.kernel = "spin";
  gpulease_submit_result r = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
  h->st = gpulease_submit(h->c, &h->lease, &sd, &r, &h->err);
  if (h->st == GPULEASE_OK) gpulease_submit_result_release(&r);
  free(spin);
  return NULL;
}

static void test_hang_and_device_lease(void **state) {
  (void)state;
  gl_test_daemon d = start("spread");
  gpulease_client *c = gl_test_connect(&d, 30000);
  /* A kernel that never ends on GPU 0, its lease's TTL 2 s. */
  hung h = {.c = gl_test_connect(&d, 30000)};
  CHECK(gpulease_lease_alloc(h.c, 0, 4 * MiB, 2, &h.lease, E));
  gpulease_lease b;
  CHECK(gpulease_lease_alloc(c, 1, 4 * MiB, 60, &b, E));
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, run_spin, &h), 0);
  usleep(300 * 1000);
  /* Meanwhile GPU 1's lease runs kernels, over and over. */
  for (int i = 0; i < 5; i++) gl_test_run_iota(c, &b);
  assert_int_equal(pthread_join(t, NULL), 0);
  fprintf(stderr, "spin on GPU 0: %s: %s\n", gpulease_status_name(h.st), h.err.message);
  assert_int_equal(h.st, GPULEASE_LEASE_EXPIRED);
  gl_test_run_iota(c, &b);
  gpulease_client_close(h.c);

  /* A device lease takes all of GPU 2; GPU 0 still takes leases, GPU 2
   * takes no other. */
  gpulease_lease_opts o = {.struct_version = GPULEASE_LEASE_OPTS_VERSION,
                           .lease_class = GPULEASE_CLASS_DEVICE};
  gpulease_lease dev, a2, none;
  CHECK(gpulease_lease_alloc_opts(c, 2, 8 * MiB, 60, &o, &dev, E));
  CHECK(gpulease_lease_alloc(c, 0, 4 * MiB, 60, &a2, E));
  gl_test_run_iota(c, &a2);
  gpulease_error err;
  assert_int_equal(gpulease_lease_alloc(c, 2, MiB, 60, &none, &err), GPULEASE_BUSY);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_inventory_and_spread),
      cmocka_unit_test(test_pack),
      cmocka_unit_test(test_fault_on_one_gpu),
      cmocka_unit_test(test_hang_and_device_lease),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
