/*
 * test_e2e_held.c - device memory a lease makes its context hold beyond
 * its region (docs/security.md, "Device memory outside the region"),
 * against a real gpuleased on the emulated device (GL_TEST_DEVICE=cuda:
 * on the node's GPU, tests/gpu/budget_check.sh).
 *
 * Checked:
 *   - a kernel of 64 KiB of local memory a thread on a 1 MiB lease is
 *     refused at its launch with CAPACITY_EXCEEDED naming what it needs;
 *   - on a lease big enough it runs (its output checked), and the GPU's
 *     leased figure (GET_INVENTORY) grows by its local memory, 64 KiB for
 *     each thread the device holds at once, and stays so;
 *   - a module of 32 MiB of globals (on the GPU 1 GiB) adds what it
 *     declares to the leased figure while loaded, and the figure goes back
 *     at its unload;
 *   - a context heap past the default counts from LEASE_ALLOC on; a
 *     printf FIFO past the lease's VRAM is refused with the figures;
 *   - with every lease freed the leased figure is 0 again;
 *   - on the GPU: NVML's used VRAM grows by no more than the leased figure
 *     plus the leases' contexts (and a little slack), at each step.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon_harness.h"
#include "gpulease/gpulease.h"
#include "lib_check.h"

static const char k_lmem_ptx[] =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry lmem(.param .u64 out)\n{\n"
    "  .local .align 4 .b8 buf[65536];\n"
    "  .reg .b64 %rd<8>;\n  .reg .b32 %r<6>;\n"
    "  ld.param.u64 %rd1, [out];\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  mov.u64 %rd2, buf;\n"
    "  mul.lo.u32 %r2, %r1, 255;\n"
    "  and.b32 %r2, %r2, 16383;\n"
    "  mul.wide.u32 %rd3, %r2, 4;\n"
    "  add.u64 %rd4, %rd2, %rd3;\n"
    "  add.u32 %r3, %r1, 7;\n"
    "  st.local.u32 [%rd4], %r3;\n"
    "  ld.local.u32 %r4, [%rd4];\n"
    "  cvta.to.global.u64 %rd5, %rd1;\n"
    "  mul.wide.u32 %rd6, %r1, 4;\n"
    "  add.u64 %rd7, %rd5, %rd6;\n"
    "  st.global.u32 [%rd7], %r4;\n"
    "  ret;\n}\n";

/* A module declaring `bytes` of globals; its kernel copies g[0] out. */
static char *globals_ptx(uint64_t bytes) {
  char *p = malloc(1024);
  snprintf(p, 1024,
           ".version 8.0\n.target sm_80\n.address_size 64\n"
           ".visible .global .align 4 .b8 g[%llu];\n"
           ".visible .entry k(.param .u64 p)\n{\n"
           "  .reg .b64 %%rd<4>;\n  .reg .b32 %%r<2>;\n"
           "  ld.param.u64 %%rd1, [p];\n  cvta.to.global.u64 %%rd2, %%rd1;\n"
           "  mov.u64 %%rd3, g;\n  ld.global.u32 %%r1, [%%rd3];\n"
           "  st.global.u32 [%%rd2], %%r1;\n  ret;\n}\n",
           (unsigned long long)bytes);
  return p;
}

typedef struct figures {
  uint64_t leased, used, overhead;
  uint32_t sm_count;
} figures;

static figures inventory(gpulease_client *c) {
  gpulease_inventory inv;
  gpulease_inventory_init(&inv);
  CHECK(gpulease_inventory_get(c, &inv, E));
  const gpulease_gpu_info *g = &inv.gpus[0];
  return (figures){.leased = g->leased_vram_bytes,
                   .used = g->total_vram_bytes - g->free_vram_bytes,
                   .overhead = g->context_overhead_bytes,
                   .sm_count = g->sm_count};
}

static gpulease_lease lease(gpulease_client *c, uint64_t bytes, uint64_t heap) {
  gpulease_lease_opts o = {.struct_version = GPULEASE_LEASE_OPTS_VERSION,
                           .lease_class = GPULEASE_CLASS_ISOLATED,
                           .malloc_heap_bytes = heap};
  gpulease_lease l;
  CHECK(gpulease_lease_alloc_opts(c, GPULEASE_ANY_GPU, bytes, 120, &o, &l, E));
  return l;
}

/* On the GPU: NVML's used VRAM has grown from base by no more than the
 * leased figure plus `contexts` contexts and 64 MiB of slack. */
static void check_nvml(const figures *base, const figures *now, unsigned contexts,
                       const char *when) {
  if (!gl_test_on_gpu()) return;
  uint64_t grew = now->used > base->used ? now->used - base->used : 0;
  uint64_t bound = now->leased - base->leased + contexts * now->overhead + 64 * MiB;
  fprintf(stderr, "%s: NVML used +%llu MiB, leased +%llu MiB, %u context(s) of %llu MiB\n", when,
          (unsigned long long)(grew >> 20),
          (unsigned long long)((now->leased - base->leased) >> 20), contexts,
          (unsigned long long)(now->overhead >> 20));
  assert_true(grew <= bound);
}

/* Launches lmem (block threads) and waits: the status, the message in err. */
static gpulease_status run_lmem(gpulease_session *s, gpulease_function f, gpulease_buffer out,
                                uint32_t threads, gpulease_error *err) {
  uint32_t grid[3] = {1, 1, 1}, block[3] = {threads, 1, 1};
  gpulease_arg a = gpulease_arg_buffer(out, 0);
  gpulease_op_failure fail;
  gpulease_op_failure_init(&fail);
  return gpulease_launch_sync(s, f, grid, block, 0, &a, 1, &fail, err);
}

static void test_held_beyond_region(void **state) {
  (void)state;
  bool gpu = gl_test_on_gpu();
  gl_test_daemon d;
  const char *extra[] = {"--warm-workers", "0", NULL};
  assert_int_equal(gl_test_daemon_start(&d, gpu ? NULL : "1G", extra), 0);
  gpulease_client *c = gl_test_connect(&d, 30000);
  figures base = inventory(c);
  assert_int_equal(base.leased, 0);

  /* The 1 MiB lease: the kernel loads, its launch is refused. */
  gpulease_lease small = lease(c, 1 * MiB, 0);
  gpulease_session *s;
  CHECK(gpulease_session_open(c, &small, &s, E));
  gpulease_module m;
  gpulease_module_source src;
  CHECK(gpulease_module_load(s, k_lmem_ptx, sizeof k_lmem_ptx - 1, GPULEASE_IMAGE_PTX, &m, &src,
                             E));
  gpulease_func_info info;
  gpulease_func_info_init(&info);
  gpulease_function f;
  CHECK(gpulease_function_get(s, m, "lmem", &f, &info, E));
  assert_true(info.local_bytes >= 65536);
  gpulease_buffer out;
  CHECK(gpulease_mem_alloc(s, 4096, &out, E));
  gpulease_error err;
  assert_int_equal(run_lmem(s, f, out, 64, &err), GPULEASE_CAPACITY_EXCEEDED);
  fprintf(stderr, "refused: %s\n", err.message);
  assert_non_null(strstr(err.message, "kernel 'lmem' needs"));
  assert_non_null(strstr(err.message, "bytes of local memory a thread"));
  assert_non_null(strstr(err.message, "of its 1048576 bytes free"));
  figures now = inventory(c);
  assert_int_equal(now.leased, 1 * MiB); /* nothing charged */
  check_nvml(&base, &now, 1, "1 MiB lease, local memory refused");
  CHECK(gpulease_session_close(s, E));
  CHECK(gpulease_lease_free(c, &small, E));

  /* A lease that holds it: emulated, 1,024 threads (one host thread's
   * block) x 64 KiB; on an H200 270,336 threads x 64 KiB, 16.5 GiB. */
  uint64_t big_bytes = gpu ? 24ull << 30 : 256 * MiB;
  gpulease_lease big = lease(c, big_bytes, 0);
  CHECK(gpulease_session_open(c, &big, &s, E));
  CHECK(gpulease_module_load(s, k_lmem_ptx, sizeof k_lmem_ptx - 1, GPULEASE_IMAGE_PTX, &m, &src,
                             E));
  CHECK(gpulease_function_get(s, m, "lmem", &f, &info, E));
  CHECK(gpulease_mem_alloc(s, 4096, &out, E));
  CHECK(run_lmem(s, f, out, 256, E));
  uint32_t got[256];
  CHECK(gpulease_mem_read(s, out, 0, got, sizeof got, E));
  for (uint32_t i = 0; i < 256; i++) assert_int_equal(got[i], i + 7);
  now = inventory(c);
  uint64_t local = now.leased - big_bytes;
  fprintf(stderr, "local memory charged: %llu bytes\n", (unsigned long long)local);
  if (gpu) {
    /* SMs x 2,048 threads (compute capability 9.x) x (64 KiB less the
     * starting stack, at most 1 KiB) */
    uint64_t threads = (uint64_t)now.sm_count * 2048;
    assert_true(local <= threads * info.local_bytes);
    assert_true(local >= threads * (info.local_bytes - 1024));
  } else {
    assert_int_equal(local, 1024ull * info.local_bytes);
  }
  check_nvml(&base, &now, 1, "local memory charged");
  /* A second run adds nothing. */
  CHECK(run_lmem(s, f, out, 256, E));
  assert_int_equal(inventory(c).leased, big_bytes + local);

  /* A module of globals, while it is loaded. */
  uint64_t gbytes = gpu ? 1ull << 30 : 32 * MiB;
  char *gptx = globals_ptx(gbytes);
  gpulease_module gm;
  CHECK(gpulease_module_load(s, gptx, strlen(gptx), GPULEASE_IMAGE_PTX, &gm, &src, E));
  gpulease_function gk;
  CHECK(gpulease_function_get(s, gm, "k", &gk, NULL, E));
  {
    uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
    gpulease_arg a = gpulease_arg_buffer(out, 0);
    CHECK(gpulease_launch_sync(s, gk, grid, block, 0, &a, 1, NULL, E));
  }
  now = inventory(c);
  uint64_t mod = now.leased - big_bytes - local;
  fprintf(stderr, "module held: %llu bytes\n", (unsigned long long)mod);
  assert_true(mod >= gbytes);
  assert_true(mod <= gbytes + 1 * MiB);
  check_nvml(&base, &now, 1, "module loaded");
  CHECK(gpulease_module_unload(s, gm, E));
  CHECK(gpulease_session_sync(s, NULL, E));
  assert_int_equal(inventory(c).leased, big_bytes + local);
  free(gptx);
  CHECK(gpulease_session_close(s, E));
  CHECK(gpulease_lease_free(c, &big, E));
  assert_int_equal(inventory(c).leased, 0);

  /* The context's heap past its 1 MiB default, from LEASE_ALLOC on. */
  gpulease_lease h = lease(c, 16 * MiB, 8 * MiB);
  assert_int_equal(inventory(c).leased, 16 * MiB + 7 * MiB);
  CHECK(gpulease_lease_free(c, &h, E));
  assert_int_equal(inventory(c).leased, 0);
  /* A printf FIFO past the lease's VRAM: refused with the figures. */
  gpulease_lease_opts fifo = {.struct_version = GPULEASE_LEASE_OPTS_VERSION,
                              .lease_class = GPULEASE_CLASS_ISOLATED,
                              .printf_fifo_bytes = 8 * MiB};
  gpulease_lease x;
  assert_int_equal(gpulease_lease_alloc_opts(c, GPULEASE_ANY_GPU, 4 * MiB, 60, &fifo, &x, &err),
                   GPULEASE_CAPACITY_EXCEEDED);
  assert_non_null(strstr(err.message, "printf_fifo_bytes 8388608"));
  assert_non_null(strstr(err.message, "more than the lease's vram_bytes 4194304"));
  assert_int_equal(inventory(c).leased, 0);

  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_held_beyond_region),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
