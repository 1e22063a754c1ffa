/*
 * backend_stream_smoke.c - the CUDA backend's session ops on a real GPU,
 * without the worker or the daemon.
 *
 *   gl_backend_stream_smoke PTX_FILE      (kernels/vector_add.ptx)
 *
 * PTX_FILE must hold vector_add(const float *a, const float *b, float *c,
 * int n) (examples/kernels/vector_add.cu). Checks, printing one PASS or
 * FAIL line each:
 *   probe, init of device 0 with 64 MiB, cache_tag
 *   load_module (PTX), get_function, param_sizes, func_info (values printed)
 *   two threads, each with its own stream and never having made the
 *     context current itself: write_async (the host buffer is scribbled
 *     over right after the call: the driver must have staged it), memset
 *     D8/D16/D32, copy_async, launch_async vector_add, stream_sync,
 *     read_sync, results checked; then the synchronous write/launch/read
 *     from the same threads at once
 *   shared leases: a second backend on the same device opened with
 *     open_shared (region_base 0), set_limits, two region_add of 64 MiB
 *     (zeroed, disjoint), a view onto each: writes land in the view's own
 *     range, vector_add through a view's stream and through launch_read,
 *     a write past a view's range refused; region_remove, and a range
 *     added again reads zero
 *   launch_async with a 2048-thread block: INVALID_ARGUMENT
 *   compile_ptx: an ELF cubin; loaded as CUBIN and launched from a stream
 *   compile_ptx of bad PTX: LOAD_FAILED with the JIT log (printed)
 *   on a stream of its own (inline PTX kernels, see below):
 *     burst_async of 1000 chain_step launches (prefix sums: in order), cold,
 *       again with the same arguments, again with a third of them changed;
 *       then timed, 11 runs each: cold (11 shapes, so the 8-entry cache
 *       evicts), warm same arguments, warm every argument changed, and
 *       1000 launch_async for comparison (medians printed last, INFO); the
 *       first shape again after its eviction; a burst with a 2048-thread
 *       block is INVALID_ARGUMENT (printed), the same fixed runs; a
 *       cooperative launch in a burst is UNSUPPORTED
 *     event_record / event_elapsed around a vector_add and, re-recorded,
 *       around a burst: a positive time
 *     a cooperative launch (grid.sync) of one block an SM on the stream
 *       and of two an SM through the synchronous launch; a grid too large
 *       to be co-resident is INVALID_ARGUMENT
 *       "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: ..." on both paths
 *     on compute capability 9.0+: a cluster kernel (cluster 2x1x1, peer's
 *       shared memory via map_shared_rank) on both paths; a grid not a
 *       multiple of the cluster and a cluster of 32 blocks are
 *       INVALID_ARGUMENT "CUDA_ERROR_INVALID_CLUSTER_SIZE: ..."; a kernel
 *       compiled with __cluster_dims__(2,1,1) runs in its clusters with
 *       none given and is refused with 4x1x1 (below 9.0: a cluster launch
 *       is UNSUPPORTED)
 *     graphs (inline PTX affine_step and loop_step): graph_build of a
 *       memset, 100 affine_step launches (p[i] = p[i] * a + b, ten on each
 *       of ten elements, distinct arguments) and a copy, its host
 *       arguments scribbled over after the build; graph_launch 3 times,
 *       the elements and the copy checked against the CPU's each time;
 *       graph_set_args on node 37, replayed: only its element changed, as
 *       the CPU's; node 100 is INVALID_ARGUMENT; a recipe with a
 *       2048-thread block at op 51 is INVALID_ARGUMENT naming op 51 and the
 *       first graph still replays; a graph of the 100 kernels replayed
 *       1000 times, each waited for, then 1000 back to back (median us a
 *       replay and a kernel node printed last, INFO)
 *     WHILE loops (CUDA 12.4+ driver; below that graph_build is
 *       UNSUPPORTED): a body of one loop_step (counter -= 1, flag =
 *       counter > 0, passes += 1): counter 10 gives 10 passes in one
 *       graph_launch, then 3 and 1 more; graph_set_args on the body's node
 *       moves its pass count; a body of a memset, loop_step and a copy
 *     the stream destroyed with its cached graphs; context not lost
 *   a kernel storing to address 16: launch_async queues it, stream_sync
 *     reports LAUNCH_FAILED naming the CUDA error (ILLEGAL_ADDRESS
 *     expected), context_lost() is true, the other stream and read_sync
 *     fail too
 * Exit status 0 when every check passed, 1 otherwise (2: usage or setup).
 * Not registered with ctest: it needs a GPU.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "backend/backend.h"
#include "backend/backend_view.h"

#define VRAM (64ull << 20)
#define N 100000 /* elements per vector */
#define ROUNDS 20

static atomic_int g_failures;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (!ok) atomic_fetch_add(&g_failures, 1);
  printf("%s %s\n", ok ? "PASS" : "FAIL", msg);
  fflush(stdout);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (!buf) return NULL;
  buf[n] = 0;
  *len = (size_t)n;
  return buf;
}

/* A kernel that faults: a store to device address 16 (tests/gpu/kernels/
 * oob.cu, inline so that one PTX file is all the program needs). */
static const char k_oob_ptx[] = ".version 7.0\n"
                                ".target sm_75\n"
                                ".address_size 64\n"
                                ".visible .entry oob(.param .u64 p)\n"
                                "{\n"
                                "  .reg .b32 %r<2>;\n"
                                "  .reg .b64 %rd<2>;\n"
                                "  mov.u64 %rd1, 16;\n"
                                "  mov.u32 %r1, -559038737;\n"
                                "  st.volatile.u32 [%rd1], %r1;\n"
                                "  ret;\n"
                                "}\n";

static const char k_bad_ptx[] = ".version 7.0\n"
                                ".target sm_75\n"
                                ".address_size 64\n"
                                ".visible .entry broken()\n"
                                "{\n"
                                "  frobnicate.u32 %r1;\n"
                                "}\n";

static gl_backend *g_b;
static uint64_t g_base;

/* vector_add(a, b, c, n) over n elements. */
typedef struct va_args {
  uint64_t a, b, c;
  int32_t n;
  void *args[4];
  size_t sizes[4];
  gl_launch l;
} va_args;

/* Pointers are base + the offsets. */
static void va_setup_at(va_args *v, uint64_t base, uint64_t a_off, uint64_t b_off, uint64_t c_off,
                        int32_t n) {
  v->a = base + a_off, v->b = base + b_off, v->c = base + c_off, v->n = n;
  v->args[0] = &v->a, v->args[1] = &v->b, v->args[2] = &v->c, v->args[3] = &v->n;
  v->sizes[0] = v->sizes[1] = v->sizes[2] = 8, v->sizes[3] = 4;
  v->l = (gl_launch){.kernel_name = "vector_add",
                     .grid = {(uint32_t)(n + 255) / 256, 1, 1},
                     .block = {256, 1, 1},
                     .args = v->args,
                     .arg_sizes = v->sizes,
                     .arg_count = 4};
}

static void va_setup(va_args *v, uint64_t a_off, uint64_t b_off, uint64_t c_off, int32_t n) {
  va_setup_at(v, g_base, a_off, b_off, c_off, n);
}

/* ---- shared leases ---------------------------------------------------------------- */

#define RANGE (64ull << 20)
#define PROBE_BYTES (1u << 20)

/* True when len bytes at the view's offset read back as zero. */
static int view_zero(gl_backend *v, uint64_t off, size_t len, char *err, size_t errlen) {
  uint8_t *buf = malloc(len);
  int ok = buf && v->ops->read(v, off, buf, len, err, errlen) == GPULEASE_OK;
  for (size_t i = 0; ok && i < len; i++)
    if (buf[i]) {
      snprintf(err, errlen, "byte %zu is 0x%02x", i, buf[i]);
      ok = 0;
    }
  free(buf);
  return ok;
}

/* A second backend on device 0 for shared leases (the primary context is
 * the same one as g_b's), ranges and views onto them. */
static void shared_checks(const char *ptx, size_t ptx_len) {
  char err[4096], name[128];
  pthread_mutex_t submit_mu = PTHREAD_MUTEX_INITIALIZER;
  gl_backend *sb = gl_backend_cuda_new(), *v[2] = {NULL, NULL};
  if (!sb) return;
  const gl_backend_ops *o = sb->ops;
  uint64_t base = 1, off[2] = {0, 0};
  void *mod = NULL, *fn = NULL, *s = NULL;
  gpulease_status st = o->open_shared(sb, 0, &base, name, sizeof name, err, sizeof err);
  check(st == GPULEASE_OK && base == 0, "shared: open_shared device 0: %s (region_base %" PRIu64
        ")", st == GPULEASE_OK ? name : err, base);
  if (st != GPULEASE_OK) goto out;
  st = o->set_limits(sb, 1u << 20, 16u << 20, err, sizeof err);
  check(st == GPULEASE_OK, "shared: set_limits (printf FIFO 1 MiB, malloc heap 16 MiB)%s%s",
        st == GPULEASE_OK ? "" : ": ", st == GPULEASE_OK ? "" : err);
  for (int i = 0; i < 2; i++) {
    st = o->region_add(sb, RANGE, &off[i], err, sizeof err);
    check(st == GPULEASE_OK && off[i] % 256 == 0, "shared: region_add %d of 64 MiB: 0x%" PRIx64
          "%s%s", i, off[i], st == GPULEASE_OK ? "" : ": ", st == GPULEASE_OK ? "" : err);
    if (st != GPULEASE_OK || !(v[i] = gl_backend_view_new(sb, off[i], RANGE, &submit_mu)))
      goto out;
  }
  check(off[0] + RANGE <= off[1] || off[1] + RANGE <= off[0], "shared: the ranges are disjoint");
  for (int i = 0; i < 2; i++) {
    int ok = view_zero(v[i], RANGE - PROBE_BYTES, PROBE_BYTES, err, sizeof err);
    check(ok, "shared: range %d reads zero at its end%s%s", i, ok ? "" : ": ", ok ? "" : err);
  }

  /* each view's writes land in its own range */
  {
    static uint8_t pat[2][4096], got[4096];
    for (int i = 0; i < 2; i++) memset(pat[i], 0xa0 + i, sizeof pat[i]);
    int ok = 1;
    for (int i = 0; ok && i < 2; i++)
      ok = v[i]->ops->write(v[i], 4096, pat[i], sizeof pat[i], err, sizeof err) == GPULEASE_OK;
    for (int i = 0; ok && i < 2; i++) {
      ok = o->read(sb, off[i] + 4096, got, sizeof got, err, sizeof err) == GPULEASE_OK;
      if (ok && memcmp(got, pat[i], sizeof got) != 0) {
        snprintf(err, sizeof err, "range %d holds other bytes", i);
        ok = 0;
      }
    }
    check(ok, "shared: writes through two views, read back from the ranges%s%s", ok ? "" : ": ",
          ok ? "" : err);
    st = v[0]->ops->write(v[0], RANGE - 8, pat[0], 16, err, sizeof err);
    check(st == GPULEASE_WRITE_FAILED, "shared: a write past a view's range: %s: %s",
          gpulease_status_name(st), err);
  }

  /* vector_add through view 0: on a stream of the view, then launch_read */
  st = v[0]->ops->load_module(v[0], (const uint8_t *)ptx, ptx_len, GPULEASE_IMAGE_PTX, &mod, err,
                              sizeof err);
  if (st == GPULEASE_OK)
    st = v[0]->ops->get_function(v[0], mod, "vector_add", &fn, err, sizeof err);
  if (st == GPULEASE_OK) st = v[0]->ops->stream_create(v[0], &s, err, sizeof err);
  check(st == GPULEASE_OK, "shared: load, get_function, stream_create through a view%s%s",
        st == GPULEASE_OK ? "" : ": ", st == GPULEASE_OK ? "" : err);
  if (st == GPULEASE_OK) {
    enum { M = 4096 };
    static float a[M], b[M], c[M];
    for (int i = 0; i < M; i++) a[i] = (float)i, b[i] = 0.5f;
    va_args va;
    va_setup_at(&va, base + off[0], 1u << 20, 2u << 20, 3u << 20, M);
    const gl_backend_ops *vo = v[0]->ops;
    int ok = vo->write_async(v[0], s, 1u << 20, a, sizeof a, err, sizeof err) == GPULEASE_OK &&
             vo->write_async(v[0], s, 2u << 20, b, sizeof b, err, sizeof err) == GPULEASE_OK &&
             vo->launch_async(v[0], s, fn, &va.l, err, sizeof err) == GPULEASE_OK &&
             vo->read_sync(v[0], s, 3u << 20, c, sizeof c, err, sizeof err) == GPULEASE_OK;
    for (int i = 0; ok && i < M; i++)
      if (c[i] != (float)i + 0.5f) {
        snprintf(err, sizeof err, "c[%d] = %g", i, (double)c[i]);
        ok = 0;
      }
    check(ok, "shared: vector_add on a view's stream%s%s", ok ? "" : ": ", ok ? "" : err);
    memset(c, 0, sizeof c);
    uint64_t ns = 0;
    ok = vo->memset_async(v[0], s, 3u << 20, 4, 0, M, err, sizeof err) == GPULEASE_OK &&
         vo->stream_sync(v[0], s, err, sizeof err) == GPULEASE_OK &&
         vo->launch_read(v[0], fn, &va.l, &ns, 3u << 20, c, sizeof c, err, sizeof err) ==
             GPULEASE_OK;
    for (int i = 0; ok && i < M; i++)
      if (c[i] != (float)i + 0.5f) {
        snprintf(err, sizeof err, "c[%d] = %g", i, (double)c[i]);
        ok = 0;
      }
    check(ok, "shared: vector_add by launch_read through a view%s%s", ok ? "" : ": ",
          ok ? "" : err);
    vo->stream_destroy(v[0], s);
  }
  if (mod) v[0]->ops->unload_module(v[0], mod);
  check(!o->context_lost(sb), "shared: context not lost");

  /* removed, and a range added again reads zero (destroy frees it) */
  for (int i = 0; i < 2; i++) {
    v[i]->ops->destroy(v[i]);
    v[i] = NULL;
    o->region_remove(sb, off[i]);
  }
  st = o->region_add(sb, RANGE, &off[0], err, sizeof err);
  if (st == GPULEASE_OK && (v[0] = gl_backend_view_new(sb, off[0], RANGE, &submit_mu))) {
    int ok = view_zero(v[0], 0, 4096 + PROBE_BYTES, err, sizeof err);
    check(ok, "shared: region_remove, region_add again: zero%s%s", ok ? "" : ": ", ok ? "" : err);
  } else {
    check(0, "shared: region_add after region_remove: %s", err);
  }
out:
  for (int i = 0; i < 2; i++)
    if (v[i]) v[i]->ops->destroy(v[i]);
  o->destroy(sb);
}

/* ---- BURST, launch attributes, events ------------------------------------------ */

/* Two kernels for the bursts and the cooperative launches (nvcc -arch=sm_75
 * -ptx, then .version 7.0 and the comments dropped):
 *
 *   // out[idx] = out[idx - 1] + val (out[0] = val): a burst of them, in
 *   // order, leaves prefix sums
 *   extern "C" __global__ void chain_step(unsigned *out, unsigned idx, unsigned val) {
 *     if (threadIdx.x == 0 && blockIdx.x == 0) out[idx] = (idx ? out[idx - 1] : 0u) + val;
 *   }
 *   // block b stores b + 1000 in a[b], then, past a grid-wide barrier,
 *   // out[b] = a[(b + 1) % grid]. grid.sync()'s workspace (%envreg1/2)
 *   // exists only in a cooperative launch: without one it traps.
 *   extern "C" __global__ void coop_rotate(unsigned *a, unsigned *out) {
 *     cg::grid_group g = cg::this_grid();
 *     unsigned b = blockIdx.x;
 *     if (threadIdx.x == 0) a[b] = b + 1000u;
 *     g.sync();
 *     if (threadIdx.x == 0) out[b] = a[(b + 1) % gridDim.x];
 *   }
 */
static const char k_extra_ptx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".visible .entry chain_step(\n"
    " .param .u64 chain_step_param_0,\n"
    " .param .u32 chain_step_param_1,\n"
    " .param .u32 chain_step_param_2\n"
    ")\n"
    "{\n"
    " .reg .pred %p<3>;\n"
    " .reg .b32 %r<12>;\n"
    " .reg .b64 %rd<7>;\n"
    " ld.param.u64 %rd2, [chain_step_param_0];\n"
    " ld.param.u32 %r3, [chain_step_param_1];\n"
    " ld.param.u32 %r4, [chain_step_param_2];\n"
    " cvta.to.global.u64 %rd1, %rd2;\n"
    " mov.u32 %r5, %ctaid.x;\n"
    " mov.u32 %r6, %tid.x;\n"
    " or.b32 %r7, %r6, %r5;\n"
    " setp.ne.s32 %p1, %r7, 0;\n"
    " @%p1 bra $L__BB0_4;\n"
    " setp.eq.s32 %p2, %r3, 0;\n"
    " mov.u32 %r11, 0;\n"
    " @%p2 bra $L__BB0_3;\n"
    " add.s32 %r9, %r3, -1;\n"
    " mul.wide.u32 %rd3, %r9, 4;\n"
    " add.s64 %rd4, %rd1, %rd3;\n"
    " ld.global.u32 %r11, [%rd4];\n"
    "$L__BB0_3:\n"
    " mul.wide.u32 %rd5, %r3, 4;\n"
    " add.s64 %rd6, %rd1, %rd5;\n"
    " add.s32 %r10, %r11, %r4;\n"
    " st.global.u32 [%rd6], %r10;\n"
    "$L__BB0_4:\n"
    " ret;\n"
    "}\n"
    ".visible .entry coop_rotate(\n"
    " .param .u64 coop_rotate_param_0,\n"
    " .param .u64 coop_rotate_param_1\n"
    ")\n"
    "{\n"
    " .reg .pred %p<7>;\n"
    " .reg .b32 %r<30>;\n"
    " .reg .b64 %rd<17>;\n"
    " ld.param.u64 %rd5, [coop_rotate_param_0];\n"
    " ld.param.u64 %rd4, [coop_rotate_param_1];\n"
    " cvta.to.global.u64 %rd1, %rd5;\n"
    " mov.u32 %r4, %envreg2;\n"
    " cvt.u64.u32 %rd6, %r4;\n"
    " mov.u32 %r5, %envreg1;\n"
    " cvt.u64.u32 %rd7, %r5;\n"
    " bfi.b64 %rd2, %rd7, %rd6, 32, 32;\n"
    " mov.u32 %r1, %ctaid.x;\n"
    " mov.u32 %r2, %tid.x;\n"
    " setp.ne.s32 %p1, %r2, 0;\n"
    " @%p1 bra $L__BB0_2;\n"
    " add.s32 %r6, %r1, 1000;\n"
    " mul.wide.u32 %rd8, %r1, 4;\n"
    " add.s64 %rd9, %rd1, %rd8;\n"
    " st.global.u32 [%rd9], %r6;\n"
    "$L__BB0_2:\n"
    " setp.ne.s64 %p2, %rd2, 0;\n"
    " @%p2 bra $L__BB0_4;\n"
    " trap;\n"
    "$L__BB0_4:\n"
    " barrier.sync 0;\n"
    " mov.u32 %r7, %tid.y;\n"
    " add.s32 %r8, %r2, %r7;\n"
    " mov.u32 %r9, %tid.z;\n"
    " neg.s32 %r10, %r9;\n"
    " setp.ne.s32 %p3, %r8, %r10;\n"
    " @%p3 bra $L__BB0_7;\n"
    " add.s64 %rd10, %rd2, 4;\n"
    " mov.u32 %r13, %nctaid.x;\n"
    " mov.u32 %r14, %nctaid.y;\n"
    " mul.lo.s32 %r15, %r13, %r14;\n"
    " mov.u32 %r16, %nctaid.z;\n"
    " mul.lo.s32 %r17, %r15, %r16;\n"
    " mov.u32 %r18, %ctaid.y;\n"
    " add.s32 %r19, %r1, %r18;\n"
    " mov.u32 %r20, %ctaid.z;\n"
    " neg.s32 %r21, %r20;\n"
    " setp.eq.s32 %p4, %r19, %r21;\n"
    " mov.u32 %r22, -2147483647;\n"
    " sub.s32 %r23, %r22, %r17;\n"
    " selp.b32 %r12, %r23, 1, %p4;\n"
    " atom.add.release.gpu.u32 %r11,[%rd10],%r12;\n"
    "$L__BB0_6:\n"
    " ld.acquire.gpu.u32 %r24,[%rd10];\n"
    " xor.b32 %r25, %r24, %r11;\n"
    " setp.gt.s32 %p5, %r25, -1;\n"
    " @%p5 bra $L__BB0_6;\n"
    "$L__BB0_7:\n"
    " barrier.sync 0;\n"
    " @%p1 bra $L__BB0_9;\n"
    " add.s32 %r26, %r1, 1;\n"
    " mov.u32 %r27, %nctaid.x;\n"
    " rem.u32 %r28, %r26, %r27;\n"
    " mul.wide.u32 %rd12, %r28, 4;\n"
    " add.s64 %rd13, %rd1, %rd12;\n"
    " ld.global.u32 %r29, [%rd13];\n"
    " cvta.to.global.u64 %rd14, %rd4;\n"
    " mul.wide.u32 %rd15, %r1, 4;\n"
    " add.s64 %rd16, %rd14, %rd15;\n"
    " st.global.u32 [%rd16], %r29;\n"
    "$L__BB0_9:\n"
    " ret;\n"
    "}\n";

/* A cluster kernel (nvcc -arch=sm_90 -ptx, then .version 7.8): each block
 * puts 100 + blockIdx.x in its shared memory and reads the next rank's
 * through distributed shared memory, so with clusters of 2 along x
 * out[b] = (100 + (b ^ 1)) * 16 + 2 (a cluster of 1 would give
 * (100 + b) * 16 + 1):
 *
 *   extern "C" __global__ void cluster_swap(unsigned *out) {
 *     __shared__ unsigned v;
 *     cg::cluster_group cl = cg::this_cluster();
 *     unsigned r = cl.block_rank();
 *     if (threadIdx.x == 0) v = 100u + blockIdx.x;
 *     cl.sync();
 *     unsigned *peer = cl.map_shared_rank(&v, (r + 1) % cl.num_blocks());
 *     if (threadIdx.x == 0) out[blockIdx.x] = *peer * 16u + cl.num_blocks();
 *     cl.sync();
 *   }
 *
 * and cluster_swap_req, the same with __cluster_dims__(2, 1, 1)
 * (.reqnctapercluster 2, 1, 1): launched with no cluster given it runs in
 * its compiled clusters.
 */
static const char k_cluster_ptx[] =
    ".version 7.8\n"
    ".target sm_90\n"
    ".address_size 64\n"
    ".visible .entry cluster_swap(\n"
    " .param .u64 cluster_swap_param_0\n"
    ")\n"
    "{\n"
    " .reg .pred %p<3>;\n"
    " .reg .b32 %r<14>;\n"
    " .reg .b64 %rd<7>;\n"
    " .shared .align 4 .u32 _ZZ12cluster_swapE1v;\n"
    " ld.param.u64 %rd1, [cluster_swap_param_0];\n"
    " mov.b32 %r1, %cluster_ctarank;\n"
    " mov.u32 %r2, %tid.x;\n"
    " setp.ne.s32 %p1, %r2, 0;\n"
    " @%p1 bra $L__BB0_2;\n"
    " mov.u32 %r4, %ctaid.x;\n"
    " add.s32 %r5, %r4, 100;\n"
    " st.shared.u32 [_ZZ12cluster_swapE1v], %r5;\n"
    "$L__BB0_2:\n"
    " barrier.cluster.arrive;\n"
    " barrier.cluster.wait;\n"
    " mov.b32 %r6, %cluster_nctarank;\n"
    " add.s32 %r7, %r1, 1;\n"
    " rem.u32 %r3, %r7, %r6;\n"
    " @%p1 bra $L__BB0_4;\n"
    " mov.u32 %r8, _ZZ12cluster_swapE1v;\n"
    " { .reg .b64 %tmp;\n"
    " cvt.u64.u32 %tmp, %r8;\n"
    " cvta.shared.u64 %rd2, %tmp; }\n"
    " mapa.u64 %rd3, %rd2, %r3;\n"
    " ld.u32 %r9, [%rd3];\n"
    " shl.b32 %r10, %r9, 4;\n"
    " mov.b32 %r11, %cluster_nctarank;\n"
    " add.s32 %r12, %r10, %r11;\n"
    " mov.u32 %r13, %ctaid.x;\n"
    " cvta.to.global.u64 %rd4, %rd1;\n"
    " mul.wide.u32 %rd5, %r13, 4;\n"
    " add.s64 %rd6, %rd4, %rd5;\n"
    " st.global.u32 [%rd6], %r12;\n"
    "$L__BB0_4:\n"
    " barrier.cluster.arrive;\n"
    " barrier.cluster.wait;\n"
    " ret;\n"
    "}\n"
    ".visible .entry cluster_swap_req(\n"
    " .param .u64 cluster_swap_req_param_0\n"
    ")\n"
    ".explicitcluster\n"
    ".reqnctapercluster 2, 1, 1\n"
    "{\n"
    " .reg .pred %p<3>;\n"
    " .reg .b32 %r<14>;\n"
    " .reg .b64 %rd<7>;\n"
    " .shared .align 4 .u32 _ZZ16cluster_swap_reqE1v;\n"
    " ld.param.u64 %rd1, [cluster_swap_req_param_0];\n"
    " mov.b32 %r1, %cluster_ctarank;\n"
    " mov.u32 %r2, %tid.x;\n"
    " setp.ne.s32 %p1, %r2, 0;\n"
    " @%p1 bra $L__BB0_2;\n"
    " mov.u32 %r4, %ctaid.x;\n"
    " add.s32 %r5, %r4, 100;\n"
    " st.shared.u32 [_ZZ16cluster_swap_reqE1v], %r5;\n"
    "$L__BB0_2:\n"
    " barrier.cluster.arrive;\n"
    " barrier.cluster.wait;\n"
    " mov.b32 %r6, %cluster_nctarank;\n"
    " add.s32 %r7, %r1, 1;\n"
    " rem.u32 %r3, %r7, %r6;\n"
    " @%p1 bra $L__BB0_4;\n"
    " mov.u32 %r8, _ZZ16cluster_swap_reqE1v;\n"
    " { .reg .b64 %tmp;\n"
    " cvt.u64.u32 %tmp, %r8;\n"
    " cvta.shared.u64 %rd2, %tmp; }\n"
    " mapa.u64 %rd3, %rd2, %r3;\n"
    " ld.u32 %r9, [%rd3];\n"
    " shl.b32 %r10, %r9, 4;\n"
    " mov.b32 %r11, %cluster_nctarank;\n"
    " add.s32 %r12, %r10, %r11;\n"
    " mov.u32 %r13, %ctaid.x;\n"
    " cvta.to.global.u64 %rd4, %rd1;\n"
    " mul.wide.u32 %rd5, %r13, 4;\n"
    " add.s64 %rd6, %rd4, %rd5;\n"
    " st.global.u32 [%rd6], %r12;\n"
    "$L__BB0_4:\n"
    " barrier.cluster.arrive;\n"
    " barrier.cluster.wait;\n"
    " ret;\n"
    "}\n";
#define BURST_N 1000
#define REPS 11 /* timing runs of each kind (the cold ones: 11 shapes, the cache holds 8) */
#define XAREA (48ull << 20) /* above the sessions' areas */
#define CHAIN_OFF (XAREA)
#define COOP_A_OFF (XAREA + (1u << 20))
#define COOP_OUT_OFF (XAREA + (2u << 20))
#define VA_OFF (XAREA + (4u << 20)) /* three vectors of N floats for the events */

/* A burst of BURST_N chain_step launches: the launches point at idx[] and
 * val[], so changing val[] changes the burst's argument values. */
typedef struct chain_burst {
  uint64_t out;
  uint32_t idx[BURST_N], val[BURST_N];
  void *args[BURST_N][3];
  size_t sizes[3];
  gl_launch l[BURST_N];
  void *fns[BURST_N];
} chain_burst;

static chain_burst g_cb;
static char g_timings[1024]; /* printed last, where check.sh's tail shows it */

static void chain_setup(chain_burst *cb, void *fn, uint32_t block_x) {
  cb->out = g_base + CHAIN_OFF;
  cb->sizes[0] = 8, cb->sizes[1] = 4, cb->sizes[2] = 4;
  for (uint32_t i = 0; i < BURST_N; i++) {
    cb->idx[i] = i;
    cb->args[i][0] = &cb->out, cb->args[i][1] = &cb->idx[i], cb->args[i][2] = &cb->val[i];
    cb->l[i] = (gl_launch){.kernel_name = "chain_step",
                           .grid = {1, 1, 1},
                           .block = {block_x, 1, 1},
                           .args = cb->args[i],
                           .arg_sizes = cb->sizes,
                           .arg_count = 3};
    cb->fns[i] = fn;
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

/* The chain's results against the prefix sums of val[]. */
static int chain_verify(void *s, const chain_burst *cb, char *err, size_t errlen) {
  static uint32_t got[BURST_N];
  if (g_b->ops->read_sync(g_b, s, CHAIN_OFF, got, sizeof got, err, errlen) != GPULEASE_OK)
    return 0;
  uint32_t sum = 0;
  for (int i = 0; i < BURST_N; i++) {
    sum += cb->val[i];
    if (got[i] != sum) {
      snprintf(err, errlen, "out[%d] = %u, want %u", i, got[i], sum);
      return 0;
    }
  }
  return 1;
}

/* Runs the chain as one burst (plain: BURST_N launch_async) on s, out[]
 * set to 0xffffffff first; *us: microseconds per kernel from the call to
 * the end of the stream_sync. Then checks the results. */
static int chain_run(void *s, chain_burst *cb, int plain, double *us, char *err, size_t errlen) {
  const gl_backend_ops *o = g_b->ops;
  if (o->memset_async(g_b, s, CHAIN_OFF, 4, 0xffffffffu, BURST_N, err, errlen) != GPULEASE_OK ||
      o->stream_sync(g_b, s, err, errlen) != GPULEASE_OK)
    return 0;
  double t0 = now_ms();
  if (plain) {
    for (int i = 0; i < BURST_N; i++)
      if (o->launch_async(g_b, s, cb->fns[i], &cb->l[i], err, errlen) != GPULEASE_OK) return 0;
  } else {
    gpulease_status st = o->burst_async(g_b, s, cb->fns, cb->l, BURST_N, false, err, errlen);
    if (st != GPULEASE_OK) return 0;
  }
  if (o->stream_sync(g_b, s, err, errlen) != GPULEASE_OK) return 0;
  if (us) *us = (now_ms() - t0) * 1e3 / BURST_N;
  return chain_verify(s, cb, err, errlen);
}

static void burst_checks(void *s, void *chain_fn) {
  const gl_backend_ops *o = g_b->ops;
  char err[4096];
  chain_burst *cb = &g_cb;
  if (!o->burst_async) {
    check(0, "burst_async: the CUDA backend has none");
    return;
  }
  chain_setup(cb, chain_fn, 32);
  for (int i = 0; i < BURST_N; i++) cb->val[i] = (uint32_t)i + 1;
  double us = 0;
  int ok = chain_run(s, cb, 0, &us, err, sizeof err);
  check(ok, "burst of %d chain_step launches, cold (graph built, %.2f us a kernel): prefix sums "
        "in order%s%s", BURST_N, us, ok ? "" : ": ", ok ? "" : err);
  ok = chain_run(s, cb, 0, &us, err, sizeof err);
  check(ok, "burst again, same arguments (cached graph, %.2f us a kernel)%s%s", us,
        ok ? "" : ": ", ok ? "" : err);
  for (int i = 0; i < BURST_N; i += 3) cb->val[i] = (uint32_t)i * 7u + 5u;
  ok = chain_run(s, cb, 0, &us, err, sizeof err);
  check(ok, "burst again, every third launch's arguments changed (those nodes updated, %.2f us "
        "a kernel)%s%s", us, ok ? "" : ": ", ok ? "" : err);

  /* timings, each kind REPS times: cold (a new shape each time: another
   * block size), warm with the same arguments, warm with every argument
   * changed, and BURST_N plain launch_async */
  double cold[REPS], same[REPS], changed[REPS], plain[REPS];
  int bad = 0;
  char first[4096 + 64] = "";
  for (int r = 0; r < REPS && !bad; r++) {
    chain_setup(cb, chain_fn, 64 + 32 * (uint32_t)r);
    for (int i = 0; i < BURST_N; i++) cb->val[i] = (uint32_t)(i + r);
    if (!chain_run(s, cb, 0, &cold[r], err, sizeof err)) bad++;
  }
  if (bad) snprintf(first, sizeof first, "cold: %s", err);
  for (int r = 0; r < REPS && !bad; r++)
    if (!chain_run(s, cb, 0, &same[r], err, sizeof err)) {
      bad++;
      snprintf(first, sizeof first, "warm, same arguments: %s", err);
    }
  for (int r = 0; r < REPS && !bad; r++) {
    for (int i = 0; i < BURST_N; i++) cb->val[i] = (uint32_t)(i * 3 + r * 1000 + 1);
    if (!chain_run(s, cb, 0, &changed[r], err, sizeof err)) {
      bad++;
      snprintf(first, sizeof first, "warm, changed arguments: %s", err);
    }
  }
  for (int r = 0; r < REPS && !bad; r++)
    if (!chain_run(s, cb, 1, &plain[r], err, sizeof err)) {
      bad++;
      snprintf(first, sizeof first, "plain launch_async: %s", err);
    }
  /* the first shape was evicted by the 11 newer ones: built again */
  if (!bad) {
    chain_setup(cb, chain_fn, 32);
    for (int i = 0; i < BURST_N; i++) cb->val[i] = 2;
    if (!chain_run(s, cb, 0, NULL, err, sizeof err)) {
      bad++;
      snprintf(first, sizeof first, "the first shape again after its eviction: %s", err);
    }
  }
  check(!bad, "bursts of %d launches, %d shapes (cache of 8: evictions), each checked%s%s",
        BURST_N, REPS + 1, bad ? ": " : "", first);
  if (!bad)
    snprintf(g_timings, sizeof g_timings,
             "INFO burst of %d launches, median us a kernel over %d runs (from the call to the "
             "end of stream_sync): cold (graph built) %.2f, warm same args %.2f, warm changed "
             "args %.2f; %d launch_async + stream_sync %.2f\n",
             BURST_N, REPS, median(cold, REPS), median(same, REPS), median(changed, REPS),
             BURST_N, median(plain, REPS));

  /* a launch the device cannot run (a 2048-thread block) in a burst of a
   * new shape: refused naming it, and the stream goes on */
  chain_setup(cb, chain_fn, 32);
  for (int i = 0; i < BURST_N; i++) cb->val[i] = 3;
  cb->l[17].block[0] = 2048;
  gpulease_status bst = o->burst_async(g_b, s, cb->fns, cb->l, BURST_N, false, err, sizeof err);
  check(bst == GPULEASE_INVALID_ARGUMENT && strstr(err, "CUDA_ERROR_INVALID_VALUE"),
        "burst with a 2048-thread block at launch 17: %s: %s", gpulease_status_name(bst), err);
  cb->l[17].block[0] = 32;
  ok = chain_run(s, cb, 0, NULL, err, sizeof err) && !o->context_lost(g_b);
  check(ok, "the same burst fixed runs%s%s", ok ? "" : ": ", ok ? "" : err);

  /* a cooperative launch in a burst is refused */
  chain_setup(cb, chain_fn, 32);
  cb->l[5].flags = GL_LAUNCH_F_COOPERATIVE;
  gpulease_status st = o->burst_async(g_b, s, cb->fns, cb->l, BURST_N, false, err, sizeof err);
  check(st == GPULEASE_UNSUPPORTED && strstr(err, "a BURST's launches are plain launches"),
        "burst with a cooperative launch: %s: %s", gpulease_status_name(st), err);
  cb->l[5].flags = 0;
}

/* Events around a vector_add launch and around a burst. */
static void event_checks(void *s, void *va_fn, void *chain_fn) {
  const gl_backend_ops *o = g_b->ops;
  char err[4096];
  if (!o->event_record || !o->event_elapsed || !o->event_destroy) {
    check(0, "events: the CUDA backend has no event ops");
    return;
  }
  void *e0 = NULL, *e1 = NULL;
  uint64_t ns = 0, ns_burst = 0;
  va_args v;
  va_setup(&v, VA_OFF, VA_OFF + 4 * N, VA_OFF + 8 * N, N);
  int ok = o->event_record(g_b, s, &e0, err, sizeof err) == GPULEASE_OK && e0 &&
           o->launch_async(g_b, s, va_fn, &v.l, err, sizeof err) == GPULEASE_OK &&
           o->event_record(g_b, s, &e1, err, sizeof err) == GPULEASE_OK && e1 &&
           o->event_elapsed(g_b, e0, e1, &ns, err, sizeof err) == GPULEASE_OK;
  if (ok && ns == 0) {
    ok = 0;
    snprintf(err, sizeof err, "elapsed 0 ns");
  }
  check(ok, "events around a vector_add of %d floats: %" PRIu64 " ns%s%s", N, ns, ok ? "" : ": ",
        ok ? "" : err);
  /* the same two events again (recorded anew), around a burst */
  if (ok) {
    void *keep0 = e0, *keep1 = e1;
    chain_setup(&g_cb, chain_fn, 32);
    for (int i = 0; i < BURST_N; i++) g_cb.val[i] = 1;
    ok = o->event_record(g_b, s, &e0, err, sizeof err) == GPULEASE_OK &&
         o->burst_async(g_b, s, g_cb.fns, g_cb.l, BURST_N, false, err, sizeof err) == GPULEASE_OK &&
         o->event_record(g_b, s, &e1, err, sizeof err) == GPULEASE_OK &&
         o->event_elapsed(g_b, e0, e1, &ns_burst, err, sizeof err) == GPULEASE_OK;
    if (ok && (e0 != keep0 || e1 != keep1)) {
      ok = 0;
      snprintf(err, sizeof err, "event_record replaced an existing event");
    }
    if (ok && ns_burst == 0) {
      ok = 0;
      snprintf(err, sizeof err, "elapsed 0 ns");
    }
    if (ok) ok = chain_verify(s, &g_cb, err, sizeof err);
    check(ok, "events re-recorded around a burst of %d launches: %" PRIu64 " ns (%.2f us a "
          "kernel on the GPU)%s%s", BURST_N, ns_burst, (double)ns_burst / 1e3 / BURST_N,
          ok ? "" : ": ", ok ? "" : err);
  }
  if (e0) o->event_destroy(g_b, e0);
  if (e1) o->event_destroy(g_b, e1);
}

/* coop_rotate over `blocks` blocks of 128 threads, on stream s (or the
 * synchronous launch when s is NULL); checks out[]. */
static int coop_run(void *s, void *fn, uint32_t blocks, char *err, size_t errlen) {
  const gl_backend_ops *o = g_b->ops;
  static uint32_t got[4096];
  if (blocks > 4096) {
    snprintf(err, errlen, "too many blocks for the test: %u", blocks);
    return 0;
  }
  uint64_t a = g_base + COOP_A_OFF, out = g_base + COOP_OUT_OFF;
  void *args[2] = {&a, &out};
  size_t sizes[2] = {8, 8};
  gl_launch l = {.kernel_name = "coop_rotate", .grid = {blocks, 1, 1}, .block = {128, 1, 1},
                 .args = args, .arg_sizes = sizes, .arg_count = 2,
                 .flags = GL_LAUNCH_F_COOPERATIVE};
  uint64_t ns = 0;
  if (s) {
    if (o->memset_async(g_b, s, COOP_OUT_OFF, 4, 0, blocks, err, errlen) != GPULEASE_OK ||
        o->launch_async(g_b, s, fn, &l, err, errlen) != GPULEASE_OK ||
        o->read_sync(g_b, s, COOP_OUT_OFF, got, 4 * (size_t)blocks, err, errlen) != GPULEASE_OK)
      return 0;
  } else {
    memset(got, 0, 4 * (size_t)blocks);
    if (o->write(g_b, COOP_OUT_OFF, got, 4 * (size_t)blocks, err, errlen) != GPULEASE_OK ||
        o->launch(g_b, fn, &l, &ns, err, errlen) != GPULEASE_OK ||
        o->read(g_b, COOP_OUT_OFF, got, 4 * (size_t)blocks, err, errlen) != GPULEASE_OK)
      return 0;
  }
  for (uint32_t b = 0; b < blocks; b++)
    if (got[b] != (b + 1) % blocks + 1000u) {
      snprintf(err, errlen, "out[%u] = %u, want %u", b, got[b], (b + 1) % blocks + 1000u);
      return 0;
    }
  return 1;
}

static void coop_checks(void *s, void *coop_fn, uint32_t sms) {
  const gl_backend_ops *o = g_b->ops;
  char err[4096];
  int ok = coop_run(s, coop_fn, sms, err, sizeof err);
  check(ok, "cooperative launch_async of coop_rotate, %u blocks (grid.sync): rotated%s%s", sms,
        ok ? "" : ": ", ok ? "" : err);
  ok = coop_run(NULL, coop_fn, 2 * sms, err, sizeof err);
  check(ok, "cooperative synchronous launch of coop_rotate, %u blocks: rotated%s%s", 2 * sms,
        ok ? "" : ": ", ok ? "" : err);
  /* 1024-thread blocks: at most 2 an SM (2048 threads an SM on every GPU
   * since Volta), so 4 x SMs + 1 blocks cannot be co-resident */
  uint64_t a = g_base + COOP_A_OFF, out = g_base + COOP_OUT_OFF;
  void *args[2] = {&a, &out};
  size_t sizes[2] = {8, 8};
  gl_launch l = {.kernel_name = "coop_rotate", .grid = {4 * sms + 1, 1, 1},
                 .block = {1024, 1, 1}, .args = args, .arg_sizes = sizes, .arg_count = 2,
                 .flags = GL_LAUNCH_F_COOPERATIVE};
  const char *tok = "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: ";
  gpulease_status st = o->launch_async(g_b, s, coop_fn, &l, err, sizeof err);
  check(st == GPULEASE_INVALID_ARGUMENT && strncmp(err, tok, strlen(tok)) == 0 &&
            strstr(err, "at most "),
        "cooperative launch_async of %u blocks of 1024 threads: %s: %s", l.grid[0],
        gpulease_status_name(st), err);
  uint64_t ns = 0;
  st = o->launch(g_b, coop_fn, &l, &ns, err, sizeof err);
  check(st == GPULEASE_INVALID_ARGUMENT && strncmp(err, tok, strlen(tok)) == 0,
        "the same through the synchronous launch: %s", gpulease_status_name(st));
  ok = o->stream_sync(g_b, s, err, sizeof err) == GPULEASE_OK && !o->context_lost(g_b);
  check(ok, "the stream and the context still fine after the refusals%s%s", ok ? "" : ": ",
        ok ? "" : err);
}

static void cluster_checks(void *s, unsigned cc_major, void *chain_fn) {
  const gl_backend_ops *o = g_b->ops;
  char err[4096];
  uint64_t out = g_base + COOP_OUT_OFF;
  void *args[1] = {&out};
  size_t sizes[1] = {8};
  gl_launch l = {.kernel_name = "cluster_swap", .grid = {8, 1, 1}, .block = {32, 1, 1},
                 .args = args, .arg_sizes = sizes, .arg_count = 1, .cluster = {2, 1, 1}};
  if (cc_major < 9) {
    /* any kernel will do: refused before it is launched */
    uint64_t o0 = g_base + CHAIN_OFF;
    uint32_t idx = 0, val = 1;
    void *cargs[3] = {&o0, &idx, &val};
    size_t csizes[3] = {8, 4, 4};
    gl_launch cl = {.kernel_name = "chain_step", .grid = {2, 1, 1}, .block = {32, 1, 1},
                    .args = cargs, .arg_sizes = csizes, .arg_count = 3, .cluster = {2, 1, 1}};
    gpulease_status st = o->launch_async(g_b, s, chain_fn, &cl, err, sizeof err);
    check(st == GPULEASE_UNSUPPORTED, "cluster launch below compute capability 9.0: %s: %s",
          gpulease_status_name(st), err);
    return;
  }
  void *mod = NULL, *fn = NULL;
  gpulease_status st = o->load_module(g_b, (const uint8_t *)k_cluster_ptx,
                                      sizeof k_cluster_ptx - 1, GPULEASE_IMAGE_PTX, &mod, err,
                                      sizeof err);
  if (st == GPULEASE_OK) st = o->get_function(g_b, mod, "cluster_swap", &fn, err, sizeof err);
  check(st == GPULEASE_OK, "load cluster_swap (sm_90 PTX)%s%s", st == GPULEASE_OK ? "" : ": ",
        st == GPULEASE_OK ? "" : err);
  if (st != GPULEASE_OK) return;
  for (int sync = 0; sync < 2; sync++) {
    uint32_t got[8];
    uint64_t ns = 0;
    memset(got, 0, sizeof got);
    int ok;
    if (!sync)
      ok = o->memset_async(g_b, s, COOP_OUT_OFF, 4, 0, 8, err, sizeof err) == GPULEASE_OK &&
           o->launch_async(g_b, s, fn, &l, err, sizeof err) == GPULEASE_OK &&
           o->read_sync(g_b, s, COOP_OUT_OFF, got, sizeof got, err, sizeof err) == GPULEASE_OK;
    else
      ok = o->write(g_b, COOP_OUT_OFF, got, sizeof got, err, sizeof err) == GPULEASE_OK &&
           o->launch(g_b, fn, &l, &ns, err, sizeof err) == GPULEASE_OK &&
           o->read(g_b, COOP_OUT_OFF, got, sizeof got, err, sizeof err) == GPULEASE_OK;
    for (uint32_t b = 0; ok && b < 8; b++)
      if (got[b] != (100u + (b ^ 1u)) * 16u + 2u) {
        snprintf(err, sizeof err, "out[%u] = %u, want %u (a cluster of 1 gives %u)", b, got[b],
                 (100u + (b ^ 1u)) * 16u + 2u, (100u + b) * 16u + 1u);
        ok = 0;
      }
    check(ok, "cluster_swap, grid 8, cluster 2x1x1, %s: each block read its peer's shared "
          "memory%s%s", sync ? "synchronous launch" : "launch_async", ok ? "" : ": ",
          ok ? "" : err);
  }
  const char *tok = "CUDA_ERROR_INVALID_CLUSTER_SIZE: ";
  gl_launch bad = l;
  bad.grid[0] = 7;
  st = o->launch_async(g_b, s, fn, &bad, err, sizeof err);
  check(st == GPULEASE_INVALID_ARGUMENT && strncmp(err, tok, strlen(tok)) == 0,
        "cluster 2x1x1 over a grid of 7: %s: %s", gpulease_status_name(st), err);
  bad = l;
  bad.grid[0] = 32;
  bad.cluster[0] = 32;
  st = o->launch_async(g_b, s, fn, &bad, err, sizeof err);
  check(st == GPULEASE_INVALID_ARGUMENT && strncmp(err, tok, strlen(tok)) == 0 &&
            strstr(err, "exceeds the "),
        "cluster of 32 blocks: %s: %s", gpulease_status_name(st), err);

  /* compiled cluster dimensions: a plain launch runs in them; other
   * dimensions are refused */
  void *rfn = NULL;
  st = o->get_function(g_b, mod, "cluster_swap_req", &rfn, err, sizeof err);
  if (st == GPULEASE_OK) {
    uint32_t got[8];
    gl_launch rl = l;
    rl.kernel_name = "cluster_swap_req";
    memset(rl.cluster, 0, sizeof rl.cluster);
    int ok = o->memset_async(g_b, s, COOP_OUT_OFF, 4, 0, 8, err, sizeof err) == GPULEASE_OK &&
             o->launch_async(g_b, s, rfn, &rl, err, sizeof err) == GPULEASE_OK &&
             o->read_sync(g_b, s, COOP_OUT_OFF, got, sizeof got, err, sizeof err) ==
                 GPULEASE_OK;
    for (uint32_t b = 0; ok && b < 8; b++)
      if (got[b] != (100u + (b ^ 1u)) * 16u + 2u) {
        snprintf(err, sizeof err, "out[%u] = %u, want %u", b, got[b],
                 (100u + (b ^ 1u)) * 16u + 2u);
        ok = 0;
      }
    check(ok, "cluster_swap_req (__cluster_dims__(2,1,1)) launched with no cluster given: in "
          "its compiled clusters%s%s", ok ? "" : ": ", ok ? "" : err);
    rl.cluster[0] = 4, rl.cluster[1] = 1, rl.cluster[2] = 1;
    st = o->launch_async(g_b, s, rfn, &rl, err, sizeof err);
    check(st == GPULEASE_INVALID_ARGUMENT && strncmp(err, tok, strlen(tok)) == 0,
          "cluster_swap_req launched with cluster 4x1x1: %s: %s", gpulease_status_name(st), err);
  } else {
    check(0, "get_function cluster_swap_req: %s", err);
  }
  int ok = o->stream_sync(g_b, s, err, sizeof err) == GPULEASE_OK && !o->context_lost(g_b);
  check(ok, "the stream and the context still fine after the cluster refusals%s%s",
        ok ? "" : ": ", ok ? "" : err);
  o->unload_module(g_b, mod);
}

/* ---- graphs (graph_build, graph_launch, graph_set_args, graph_destroy) ------------ */

/* Two kernels for the graphs (nvcc -arch=sm_75 -ptx, then .version 7.0 and
 * the comments dropped):
 *
 *   // one step of an affine chain on element i
 *   extern "C" __global__ void affine_step(unsigned *p, unsigned i, unsigned a, unsigned b) {
 *     if (threadIdx.x == 0 && blockIdx.x == 0) p[i] = p[i] * a + b;
 *   }
 *   // a WHILE loop's body: counts down, sets the flag while there is more
 *   // to do, and counts its passes
 *   extern "C" __global__ void loop_step(unsigned *counter, unsigned *flag, unsigned *iters) {
 *     if (threadIdx.x == 0 && blockIdx.x == 0) {
 *       unsigned c = *counter - 1u;
 *       *counter = c;
 *       *flag = c > 0u;
 *       *iters += 1u;
 *     }
 *   }
 */
static const char k_graph_ptx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".visible .entry affine_step(\n"
    " .param .u64 affine_step_param_0,\n"
    " .param .u32 affine_step_param_1,\n"
    " .param .u32 affine_step_param_2,\n"
    " .param .u32 affine_step_param_3\n"
    ")\n"
    "{\n"
    " .reg .pred %p<2>;\n"
    " .reg .b32 %r<9>;\n"
    " .reg .b64 %rd<5>;\n"
    " ld.param.u64 %rd1, [affine_step_param_0];\n"
    " ld.param.u32 %r1, [affine_step_param_1];\n"
    " ld.param.u32 %r2, [affine_step_param_2];\n"
    " ld.param.u32 %r3, [affine_step_param_3];\n"
    " mov.u32 %r4, %tid.x;\n"
    " mov.u32 %r5, %ctaid.x;\n"
    " or.b32 %r6, %r4, %r5;\n"
    " setp.ne.s32 %p1, %r6, 0;\n"
    " @%p1 bra $L__BB0_2;\n"
    " cvta.to.global.u64 %rd2, %rd1;\n"
    " mul.wide.u32 %rd3, %r1, 4;\n"
    " add.s64 %rd4, %rd2, %rd3;\n"
    " ld.global.u32 %r7, [%rd4];\n"
    " mad.lo.s32 %r8, %r7, %r2, %r3;\n"
    " st.global.u32 [%rd4], %r8;\n"
    "$L__BB0_2:\n"
    " ret;\n"
    "}\n"
    ".visible .entry loop_step(\n"
    " .param .u64 loop_step_param_0,\n"
    " .param .u64 loop_step_param_1,\n"
    " .param .u64 loop_step_param_2\n"
    ")\n"
    "{\n"
    " .reg .pred %p<3>;\n"
    " .reg .b32 %r<9>;\n"
    " .reg .b64 %rd<7>;\n"
    " ld.param.u64 %rd1, [loop_step_param_0];\n"
    " ld.param.u64 %rd2, [loop_step_param_1];\n"
    " ld.param.u64 %rd3, [loop_step_param_2];\n"
    " mov.u32 %r1, %ctaid.x;\n"
    " mov.u32 %r2, %tid.x;\n"
    " or.b32 %r3, %r2, %r1;\n"
    " setp.ne.s32 %p1, %r3, 0;\n"
    " @%p1 bra $L__BB1_2;\n"
    " cvta.to.global.u64 %rd4, %rd3;\n"
    " cvta.to.global.u64 %rd5, %rd1;\n"
    " cvta.to.global.u64 %rd6, %rd2;\n"
    " ld.global.u32 %r4, [%rd5];\n"
    " add.s32 %r5, %r4, -1;\n"
    " st.global.u32 [%rd5], %r5;\n"
    " setp.ne.s32 %p2, %r5, 0;\n"
    " selp.u32 %r6, 1, 0, %p2;\n"
    " st.global.u32 [%rd6], %r6;\n"
    " ld.global.u32 %r7, [%rd4];\n"
    " add.s32 %r8, %r7, 1;\n"
    " st.global.u32 [%rd4], %r8;\n"
    "$L__BB1_2:\n"
    " ret;\n"
    "}\n";

#define GRAPH_OFF (XAREA + (8u << 20))
#define GP_OFF (GRAPH_OFF)               /* affine_step's elements */
#define GQ_OFF (GRAPH_OFF + 4096)        /* the recipe's copy of them */
#define GLOOP_OFF (GRAPH_OFF + 8192)     /* a loop's u32s: */
#define GL_COUNTER (GLOOP_OFF)           /*   the counter */
#define GL_FLAG (GLOOP_OFF + 4)          /*   the WHILE flag */
#define GL_ITERS (GLOOP_OFF + 8)         /*   the passes */
#define GL_ITERS2 (GLOOP_OFF + 12)       /*   the passes, after graph_set_args */
#define GL_SCRATCH (GLOOP_OFF + 16)      /*   set by a memset in the body */
#define GL_COUNTER_COPY (GLOOP_OFF + 20) /*   the counter, copied in the body */
#define GK 100                           /* affine_step launches in the recipe */
#define GELEMS 10                        /* launch k updates element k % GELEMS */
#define GINIT 3u                         /* the recipe's memset value */
#define GNODE 37                         /* the node graph_set_args changes */
#define GREPLAYS 1000                    /* timed replays */

/* A memset of the elements, GK affine_step launches with distinct
 * arguments (several on each element, so their order matters), a copy of
 * the elements. */
typedef struct affine_recipe {
  uint64_t p;
  uint32_t idx[GK], a[GK], b[GK];
  void *args[GK][4];
  size_t sizes[4];
  gl_graph_op ops[GK + 2];
} affine_recipe;

static affine_recipe g_ar;
static double g_replay_us[GREPLAYS];

static void affine_setup(affine_recipe *ar, void *fn) {
  memset(ar->ops, 0, sizeof ar->ops);
  ar->p = g_base + GP_OFF;
  ar->sizes[0] = 8, ar->sizes[1] = ar->sizes[2] = ar->sizes[3] = 4;
  ar->ops[0] = (gl_graph_op){.kind = GL_GRAPH_MEMSET, .offset = GP_OFF, .count = GELEMS,
                             .element_size = 4, .value = GINIT};
  for (uint32_t k = 0; k < GK; k++) {
    ar->idx[k] = k % GELEMS, ar->a[k] = 2 * k + 3, ar->b[k] = 7 * k + 1;
    ar->args[k][0] = &ar->p, ar->args[k][1] = &ar->idx[k], ar->args[k][2] = &ar->a[k],
    ar->args[k][3] = &ar->b[k];
    ar->ops[1 + k] = (gl_graph_op){.kind = GL_GRAPH_KERNEL,
                                   .fn = fn,
                                   .launch = {.kernel_name = "affine_step",
                                              .grid = {1, 1, 1},
                                              .block = {32, 1, 1},
                                              .args = ar->args[k],
                                              .arg_sizes = ar->sizes,
                                              .arg_count = 4}};
  }
  ar->ops[GK + 1] = (gl_graph_op){.kind = GL_GRAPH_COPY, .offset = GQ_OFF, .src_offset = GP_OFF,
                                  .count = 4 * GELEMS};
}

/* The recipe's elements, computed on the CPU. */
static void affine_ref(const affine_recipe *ar, uint32_t *want) {
  for (int e = 0; e < GELEMS; e++) want[e] = GINIT;
  for (int k = 0; k < GK; k++) want[ar->idx[k]] = want[ar->idx[k]] * ar->a[k] + ar->b[k];
}

/* One replay of graph g on s, the elements and their copy scribbled over
 * first; both read back into got and checked against want. */
static int affine_replay(void *s, void *g, const uint32_t *want, uint32_t *got, char *err,
                         size_t errlen) {
  const gl_backend_ops *o = g_b->ops;
  uint32_t junk[GELEMS], copy[GELEMS];
  memset(junk, 0xab, sizeof junk);
  if (o->write_async(g_b, s, GP_OFF, junk, sizeof junk, err, errlen) != GPULEASE_OK ||
      o->write_async(g_b, s, GQ_OFF, junk, sizeof junk, err, errlen) != GPULEASE_OK ||
      o->graph_launch(g_b, s, g, err, errlen) != GPULEASE_OK ||
      o->stream_sync(g_b, s, err, errlen) != GPULEASE_OK ||
      o->read_sync(g_b, s, GP_OFF, got, 4 * GELEMS, err, errlen) != GPULEASE_OK ||
      o->read_sync(g_b, s, GQ_OFF, copy, sizeof copy, err, errlen) != GPULEASE_OK)
    return 0;
  for (int e = 0; e < GELEMS; e++) {
    if (got[e] != want[e]) {
      snprintf(err, errlen, "element %d = %u, want %u", e, got[e], want[e]);
      return 0;
    }
    if (copy[e] != want[e]) {
      snprintf(err, errlen, "the copy of element %d = %u, want %u", e, copy[e], want[e]);
      return 0;
    }
  }
  return 1;
}

/* The driver's version from the cache tag ("cuda-sm90-drv13000"); 0 unknown. */
static int driver_version(void) {
  char tag[64];
  g_b->ops->cache_tag(g_b, tag, sizeof tag);
  const char *d = strstr(tag, "-drv");
  return d ? atoi(d + 4) : 0;
}

/* The u32s of a loop: counter, flag, passes, passes after set_args,
 * scratch, the counter's copy. */
static int loop_read(void *s, uint32_t v[6], char *err, size_t errlen) {
  return g_b->ops->read_sync(g_b, s, GLOOP_OFF, v, 6 * sizeof *v, err, errlen) == GPULEASE_OK;
}

static int loop_write(void *s, uint32_t counter, uint32_t iters, uint32_t iters2, char *err,
                      size_t errlen) {
  uint32_t v[6] = {counter, 0, iters, iters2, 0, 0xffffffffu};
  return g_b->ops->write_async(g_b, s, GLOOP_OFF, v, sizeof v, err, errlen) == GPULEASE_OK;
}

/* One replay of loop graph g with the counter at `counter`; v receives the
 * u32s after it. */
static int loop_run(void *s, void *g, uint32_t counter, uint32_t iters, uint32_t iters2,
                    uint32_t v[6], char *err, size_t errlen) {
  const gl_backend_ops *o = g_b->ops;
  return loop_write(s, counter, iters, iters2, err, errlen) &&
         o->graph_launch(g_b, s, g, err, errlen) == GPULEASE_OK &&
         o->stream_sync(g_b, s, err, errlen) == GPULEASE_OK && loop_read(s, v, err, errlen);
}

/* WHILE loops: loop_step alone in the body, then with a memset and a copy. */
static void loop_checks(void *s, void *loop_fn) {
  const gl_backend_ops *o = g_b->ops;
  char err[4096];
  static uint64_t counter, flag, iters, iters2;
  counter = g_base + GL_COUNTER, flag = g_base + GL_FLAG, iters = g_base + GL_ITERS,
  iters2 = g_base + GL_ITERS2;
  static void *args[3], *args2[3];
  static size_t sizes[3] = {8, 8, 8};
  args[0] = &counter, args[1] = &flag, args[2] = &iters;
  args2[0] = &counter, args2[1] = &flag, args2[2] = &iters2;
  gl_launch l = {.kernel_name = "loop_step", .grid = {1, 1, 1}, .block = {32, 1, 1},
                 .args = args, .arg_sizes = sizes, .arg_count = 3};
  gl_graph_op ops[3] = {
      {.kind = GL_GRAPH_MEMSET, .offset = GL_SCRATCH, .count = 1, .element_size = 4,
       .value = 0x55aa55aau},
      {.kind = GL_GRAPH_KERNEL, .fn = loop_fn, .launch = l},
      {.kind = GL_GRAPH_COPY, .offset = GL_COUNTER_COPY, .src_offset = GL_COUNTER, .count = 4},
  };
  void *g = NULL, *g2 = NULL;
  uint32_t v[6];
  int drv = driver_version();
  gpulease_status st = o->graph_build(g_b, &ops[1], 1, GL_FLAG, &g, err, sizeof err);
  if (st == GPULEASE_UNSUPPORTED && drv > 0 && drv < 12040) {
    check(strstr(err, "CUDA 12.4+") != NULL, "graph_build of a WHILE loop on a CUDA %d.%d driver: "
          "%s: %s", drv / 1000, drv % 1000 / 10, gpulease_status_name(st), err);
    return;
  }
  check(st == GPULEASE_OK, "graph_build of a WHILE loop (flag at offset %u), its body one "
        "loop_step%s%s", (unsigned)GL_FLAG, st == GPULEASE_OK ? "" : ": ",
        st == GPULEASE_OK ? "" : err);
  if (st != GPULEASE_OK) return;
  int ok = loop_run(s, g, 10, 0, 0, v, err, sizeof err);
  if (ok && (v[0] != 0 || v[1] != 0 || v[2] != 10)) {
    ok = 0;
    snprintf(err, sizeof err, "counter %u, flag %u, passes %u; want 0, 0, 10", v[0], v[1], v[2]);
  }
  check(ok, "WHILE loop: counter 10, one graph_launch + stream_sync: counter 0, the body ran 10 "
        "times%s%s", ok ? "" : ": ", ok ? "" : err);
  ok = loop_run(s, g, 3, 10, 0, v, err, sizeof err);
  if (ok && (v[0] != 0 || v[2] != 13)) {
    ok = 0;
    snprintf(err, sizeof err, "counter %u, passes %u; want 0, 13", v[0], v[2]);
  }
  check(ok, "WHILE loop replayed, counter 3: 3 more passes%s%s", ok ? "" : ": ", ok ? "" : err);
  ok = loop_run(s, g, 1, 13, 0, v, err, sizeof err);
  if (ok && (v[0] != 0 || v[2] != 14)) {
    ok = 0;
    snprintf(err, sizeof err, "counter %u, passes %u; want 0, 14", v[0], v[2]);
  }
  check(ok, "WHILE loop, counter 1: one pass (the body runs before the flag is read)%s%s",
        ok ? "" : ": ", ok ? "" : err);
  /* node 0 (in the body) counts its passes elsewhere */
  gl_launch l2 = l;
  l2.args = args2;
  st = o->graph_set_args(g_b, g, 0, &l2, err, sizeof err);
  ok = st == GPULEASE_OK && loop_run(s, g, 4, 14, 0, v, err, sizeof err);
  if (ok && (v[0] != 0 || v[2] != 14 || v[3] != 4)) {
    ok = 0;
    snprintf(err, sizeof err, "counter %u, passes %u and %u; want 0, 14 and 4", v[0], v[2],
             v[3]);
  }
  check(ok, "graph_set_args on the WHILE body's kernel node, counter 4: the new pointer counts "
        "4 passes%s%s", ok ? "" : ": ", ok ? "" : err);
  st = o->graph_set_args(g_b, g, 1, &l2, err, sizeof err);
  check(st == GPULEASE_INVALID_ARGUMENT, "graph_set_args on kernel node 1 of a loop of one "
        "kernel (the condition kernel is not numbered): %s: %s", gpulease_status_name(st), err);

  st = o->graph_build(g_b, ops, 3, GL_FLAG, &g2, err, sizeof err);
  ok = st == GPULEASE_OK && loop_run(s, g2, 5, 0, 0, v, err, sizeof err);
  if (ok && (v[0] != 0 || v[1] != 0 || v[2] != 5 || v[4] != 0x55aa55aau || v[5] != 0)) {
    ok = 0;
    snprintf(err, sizeof err,
             "counter %u, flag %u, passes %u, memset 0x%08x, copy %u; want 0, 0, 5, 0x55aa55aa, 0",
             v[0], v[1], v[2], v[4], v[5]);
  }
  check(ok, "WHILE loop with a memset, loop_step and a copy in its body, counter 5%s%s",
        ok ? "" : ": ", ok ? "" : err);
  o->graph_destroy(g_b, g);
  if (g2) o->graph_destroy(g_b, g2);
}

/* Graphs of recipe ops: replays, new arguments for one node, a bad
 * recipe, timing, WHILE loops. */
static void graph_checks(void *s) {
  const gl_backend_ops *o = g_b->ops;
  char err[4096];
  if (!o->graph_build || !o->graph_launch || !o->graph_set_args || !o->graph_destroy) {
    check(0, "graphs: the CUDA backend has no graph ops");
    return;
  }
  void *mod = NULL, *affine_fn = NULL, *loop_fn = NULL, *g = NULL, *tg = NULL;
  gpulease_status st = o->load_module(g_b, (const uint8_t *)k_graph_ptx, sizeof k_graph_ptx - 1,
                                      GPULEASE_IMAGE_PTX, &mod, err, sizeof err);
  if (st == GPULEASE_OK) st = o->get_function(g_b, mod, "affine_step", &affine_fn, err, sizeof err);
  if (st == GPULEASE_OK) st = o->get_function(g_b, mod, "loop_step", &loop_fn, err, sizeof err);
  check(st == GPULEASE_OK, "graphs: load affine_step and loop_step%s%s",
        st == GPULEASE_OK ? "" : ": ", st == GPULEASE_OK ? "" : err);
  if (st != GPULEASE_OK) goto out;

  affine_recipe *ar = &g_ar;
  affine_setup(ar, affine_fn);
  uint32_t want[GELEMS], got[GELEMS], before[GELEMS];
  affine_ref(ar, want);
  double t0 = now_ms();
  st = o->graph_build(g_b, ar->ops, GK + 2, GL_GRAPH_NO_LOOP, &g, err, sizeof err);
  check(st == GPULEASE_OK, "graph_build of a memset, %d affine_step launches and a copy (%.2f ms)"
        "%s%s", GK, now_ms() - t0, st == GPULEASE_OK ? "" : ": ", st == GPULEASE_OK ? "" : err);
  if (st != GPULEASE_OK) goto out;
  /* the arguments were only borrowed: scribbled over, the graph keeps its own */
  uint32_t keep_a[GK], keep_b[GK];
  memcpy(keep_a, ar->a, sizeof keep_a);
  memcpy(keep_b, ar->b, sizeof keep_b);
  memset(ar->a, 0, sizeof ar->a);
  memset(ar->b, 0xff, sizeof ar->b);
  for (int r = 0; r < 3; r++) {
    int ok = affine_replay(s, g, want, got, err, sizeof err);
    check(ok, "graph_launch %d of 3: the elements and their copy match the CPU's%s%s", r + 1,
          ok ? "" : ": ", ok ? "" : err);
  }
  memcpy(ar->a, keep_a, sizeof keep_a);
  memcpy(ar->b, keep_b, sizeof keep_b);
  memcpy(before, want, sizeof before);

  /* node GNODE's new arguments: only its element changes */
  {
    uint32_t na = 1000003u, nb = 12345u;
    void *nargs[4] = {&ar->p, &ar->idx[GNODE], &na, &nb};
    gl_launch l = ar->ops[1 + GNODE].launch;
    l.args = nargs;
    st = o->graph_set_args(g_b, g, GNODE, &l, err, sizeof err);
    check(st == GPULEASE_OK, "graph_set_args on kernel node %d%s%s", GNODE,
          st == GPULEASE_OK ? "" : ": ", st == GPULEASE_OK ? "" : err);
    ar->a[GNODE] = na, ar->b[GNODE] = nb;
    affine_ref(ar, want);
    int ok = st == GPULEASE_OK && affine_replay(s, g, want, got, err, sizeof err);
    for (int e = 0; ok && e < GELEMS; e++)
      if ((got[e] != before[e]) != (e == GNODE % GELEMS)) {
        ok = 0;
        snprintf(err, sizeof err, "element %d: %u before, %u after", e, before[e], got[e]);
      }
    check(ok, "replayed: element %d (node %d's) changed as the CPU's, the others as before%s%s",
          GNODE % GELEMS, GNODE, ok ? "" : ": ", ok ? "" : err);
    st = o->graph_set_args(g_b, g, GK, &l, err, sizeof err);
    check(st == GPULEASE_INVALID_ARGUMENT, "graph_set_args on node %d of %d: %s: %s", GK, GK,
          gpulease_status_name(st), err);
  }

  /* a launch the device cannot run: refused naming its op, the capture
   * ended and freed; the first graph still replays */
  {
    void *bad = NULL;
    ar->ops[1 + 50].launch.block[0] = 2048;
    st = o->graph_build(g_b, ar->ops, GK + 2, GL_GRAPH_NO_LOOP, &bad, err, sizeof err);
    ar->ops[1 + 50].launch.block[0] = 32;
    check(st == GPULEASE_INVALID_ARGUMENT && strstr(err, "op 51 of the graph") &&
              strstr(err, "CUDA_ERROR_INVALID_VALUE") && !bad,
          "graph_build with a 2048-thread block at op 51: %s: %s", gpulease_status_name(st), err);
    if (bad) o->graph_destroy(g_b, bad);
    int ok = !o->context_lost(g_b) && affine_replay(s, g, want, got, err, sizeof err);
    check(ok, "the first graph replays after the failed build%s%s", ok ? "" : ": ",
          ok ? "" : err);
  }

  /* timing: a graph of the GK kernels alone */
  st = o->graph_build(g_b, ar->ops + 1, GK, GL_GRAPH_NO_LOOP, &tg, err, sizeof err);
  if (st == GPULEASE_OK) st = o->graph_launch(g_b, s, tg, err, sizeof err); /* warm */
  if (st == GPULEASE_OK) st = o->stream_sync(g_b, s, err, sizeof err);
  int bad = st != GPULEASE_OK;
  for (int r = 0; r < GREPLAYS && !bad; r++) {
    double r0 = now_ms();
    bad = o->graph_launch(g_b, s, tg, err, sizeof err) != GPULEASE_OK ||
          o->stream_sync(g_b, s, err, sizeof err) != GPULEASE_OK;
    g_replay_us[r] = (now_ms() - r0) * 1e3;
  }
  double b0 = now_ms();
  for (int r = 0; r < GREPLAYS && !bad; r++)
    bad = o->graph_launch(g_b, s, tg, err, sizeof err) != GPULEASE_OK;
  if (!bad) bad = o->stream_sync(g_b, s, err, sizeof err) != GPULEASE_OK;
  double back_us = (now_ms() - b0) * 1e3 / GREPLAYS;
  check(!bad, "a graph of %d affine_step nodes replayed %d times, each waited for, then %d "
        "back to back%s%s", GK, GREPLAYS, GREPLAYS, bad ? ": " : "", bad ? err : "");
  if (!bad) {
    double med = median(g_replay_us, GREPLAYS);
    size_t n = strlen(g_timings);
    snprintf(g_timings + n, sizeof g_timings - n,
             "INFO graph of %d kernel nodes, %d replays: median %.2f us a replay (graph_launch + "
             "stream_sync), %.3f us a kernel node; back to back %.2f us a replay, %.3f us a "
             "kernel node\n",
             GK, GREPLAYS, med, med / GK, back_us, back_us / GK);
  }

  loop_checks(s, loop_fn);

out:
  if (g) o->graph_destroy(g_b, g);
  if (tg) o->graph_destroy(g_b, tg);
  if (mod) o->unload_module(g_b, mod);
  check(!o->context_lost(g_b), "context not lost by the graphs");
}

/* Everything above on a stream of its own, destroyed at the end with its
 * cached graphs. */
static void new_op_checks(void *va_fn, unsigned cc_major, uint32_t sms) {
  const gl_backend_ops *o = g_b->ops;
  char err[4096];
  void *mod = NULL, *chain_fn = NULL, *coop_fn = NULL, *s = NULL;
  gpulease_status st = o->load_module(g_b, (const uint8_t *)k_extra_ptx, sizeof k_extra_ptx - 1,
                                      GPULEASE_IMAGE_PTX, &mod, err, sizeof err);
  if (st == GPULEASE_OK) st = o->get_function(g_b, mod, "chain_step", &chain_fn, err, sizeof err);
  if (st == GPULEASE_OK) st = o->get_function(g_b, mod, "coop_rotate", &coop_fn, err, sizeof err);
  if (st == GPULEASE_OK) st = o->stream_create(g_b, &s, err, sizeof err);
  check(st == GPULEASE_OK, "load chain_step and coop_rotate, a stream for the new ops%s%s",
        st == GPULEASE_OK ? "" : ": ", st == GPULEASE_OK ? "" : err);
  if (st == GPULEASE_OK) {
    burst_checks(s, chain_fn);
    event_checks(s, va_fn, chain_fn);
    coop_checks(s, coop_fn, sms);
    cluster_checks(s, cc_major, chain_fn);
    graph_checks(s);
    o->stream_destroy(g_b, s);
  }
  if (mod) o->unload_module(g_b, mod);
  check(!o->context_lost(g_b), "context not lost by the bursts, events, cooperative and cluster "
        "launches");
}

/* ---- a session thread ------------------------------------------------------- */

typedef struct session {
  int index;
  void *fn;
  void *stream; /* left for the fault checks */
  double ms;
} session;

static void *session_main(void *p) {
  session *ss = p;
  const gl_backend_ops *o = g_b->ops;
  char err[4096];
  const uint64_t area = 16ull << 20; /* each session its own 16 MiB */
  const uint64_t ao = area * (uint64_t)(ss->index + 1), bo = ao + 4 * N, co = bo + 4 * N,
                 mo = co + 4 * N, ko = mo + 4096;
  float *a = malloc(4 * N), *b = malloc(4 * N), *c = malloc(4 * N);
  if (!a || !b || !c) {
    check(0, "session %d: out of memory", ss->index);
    goto out;
  }
  gpulease_status st = o->stream_create(g_b, &ss->stream, err, sizeof err);
  check(st == GPULEASE_OK, "session %d: stream_create on a thread of its own: %s", ss->index,
        st == GPULEASE_OK ? "ok" : err);
  if (st != GPULEASE_OK) goto out;
  double t0 = now_ms();
  int bad_rounds = 0;
  char first[4096 + 256] = "";
  for (int r = 0; r < ROUNDS; r++) {
    for (int i = 0; i < N; i++) a[i] = (float)(i % 1000) * 0.5f, b[i] = (float)(ss->index + r);
    va_args v;
    va_setup(&v, ao, bo, co, N);
    const char *what = "write_async a";
    if ((st = o->write_async(g_b, ss->stream, ao, a, 4 * N, err, sizeof err)) != GPULEASE_OK)
      goto round_fail;
    /* the driver staged the pageable source: reusing it must not matter */
    for (int i = 0; i < N; i++) a[i] = -12345.0f;
    what = "write_async b";
    if ((st = o->write_async(g_b, ss->stream, bo, b, 4 * N, err, sizeof err)) != GPULEASE_OK)
      goto round_fail;
    what = "memset_async D32 c";
    if ((st = o->memset_async(g_b, ss->stream, co, 4, 0xffffffffu, N, err, sizeof err)) !=
        GPULEASE_OK)
      goto round_fail;
    what = "launch_async";
    if ((st = o->launch_async(g_b, ss->stream, ss->fn, &v.l, err, sizeof err)) != GPULEASE_OK)
      goto round_fail;
    what = "stream_sync";
    if ((st = o->stream_sync(g_b, ss->stream, err, sizeof err)) != GPULEASE_OK) goto round_fail;
    what = "read_sync c";
    if ((st = o->read_sync(g_b, ss->stream, co, c, 4 * N, err, sizeof err)) != GPULEASE_OK)
      goto round_fail;
    for (int i = 0; i < N; i++) {
      float want = (float)(i % 1000) * 0.5f + (float)(ss->index + r);
      if (c[i] != want) {
        snprintf(err, sizeof err, "c[%d] = %g, want %g", i, (double)c[i], (double)want);
        what = "result";
        st = GPULEASE_INTERNAL;
        goto round_fail;
      }
    }
    continue;
  round_fail:
    if (!bad_rounds++) snprintf(first, sizeof first, "round %d: %s: %s: %s", r, what,
                                gpulease_status_name(st), err);
  }
  ss->ms = now_ms() - t0;
  check(bad_rounds == 0, "session %d: %d rounds of write/memset/launch/sync/read of %d floats "
        "(%.1f ms)%s%s", ss->index, ROUNDS, N, ss->ms, bad_rounds ? ": " : "", first);

  /* memsets of each size and a device-to-device copy */
  {
    uint8_t pattern[64], got[64], want[64];
    memset(pattern, 0x11, sizeof pattern);
    int ok = o->write_async(g_b, ss->stream, mo, pattern, 64, err, sizeof err) == GPULEASE_OK &&
             o->memset_async(g_b, ss->stream, mo + 4, 1, 0x1ab, 5, err, sizeof err) ==
                 GPULEASE_OK &&
             o->memset_async(g_b, ss->stream, mo + 16, 2, 0xf1234, 3, err, sizeof err) ==
                 GPULEASE_OK &&
             o->memset_async(g_b, ss->stream, mo + 32, 4, 0xdeadbeefu, 4, err, sizeof err) ==
                 GPULEASE_OK &&
             o->copy_async(g_b, ss->stream, ko, mo, 64, err, sizeof err) == GPULEASE_OK &&
             o->read_sync(g_b, ss->stream, ko, got, 64, err, sizeof err) == GPULEASE_OK;
    memset(want, 0x11, sizeof want);
    memset(want + 4, 0xab, 5);
    for (int i = 0; i < 3; i++) want[16 + 2 * i] = 0x34, want[17 + 2 * i] = 0x12;
    for (int i = 0; i < 4; i++)
      want[32 + 4 * i] = 0xef, want[33 + 4 * i] = 0xbe, want[34 + 4 * i] = 0xad,
                    want[35 + 4 * i] = 0xde;
    if (ok && memcmp(got, want, 64) != 0) {
      ok = 0;
      snprintf(err, sizeof err, "bytes differ from the expected pattern");
    }
    check(ok, "session %d: memset D8/D16/D32 + copy_async + read_sync%s%s", ss->index,
          ok ? "" : ": ", ok ? "" : err);
  }

  /* the synchronous ops, from this thread, while the other session runs */
  {
    va_args v;
    va_setup(&v, ao, bo, co, N);
    for (int i = 0; i < N; i++) a[i] = 1.0f, b[i] = (float)i;
    uint64_t ns = 0;
    int ok = g_b->ops->write(g_b, ao, a, 4 * N, err, sizeof err) == GPULEASE_OK &&
             g_b->ops->write(g_b, bo, b, 4 * N, err, sizeof err) == GPULEASE_OK &&
             g_b->ops->launch(g_b, ss->fn, &v.l, &ns, err, sizeof err) == GPULEASE_OK &&
             g_b->ops->read(g_b, co, c, 4 * N, err, sizeof err) == GPULEASE_OK;
    for (int i = 0; ok && i < N; i++)
      if (c[i] != 1.0f + (float)i) {
        ok = 0;
        snprintf(err, sizeof err, "c[%d] = %g", i, (double)c[i]);
      }
    check(ok, "session %d: synchronous write/launch/read from a session thread (%.3f ms GPU)%s%s",
          ss->index, (double)ns / 1e6, ok ? "" : ": ", ok ? "" : err);
  }
out:
  free(a), free(b), free(c);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PTX_FILE   (vector_add.ptx)\n", argv[0]);
    return 2;
  }
  gl_log_init("backend_stream_smoke", GL_LOG_INFO);
  size_t ptx_len = 0;
  char *ptx = read_file(argv[1], &ptx_len);
  if (!ptx) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }
  char err[8192];
  g_b = gl_backend_cuda_new();
  if (!g_b) return 2;
  const gl_backend_ops *o = g_b->ops;

  gl_probe_resp probe;
  gpulease_status st = o->probe(g_b, &probe, err, sizeof err);
  check(st == GPULEASE_OK && probe.count > 0, "probe: %u device(s)%s%s", probe.count,
        st == GPULEASE_OK ? "" : ": ", st == GPULEASE_OK ? "" : err);
  if (st != GPULEASE_OK || probe.count == 0) return 1;
  char name[128];
  st = o->init(g_b, 0, VRAM, &g_base, name, sizeof name, err, sizeof err);
  check(st == GPULEASE_OK, "init device 0, 64 MiB: %s (region at 0x%" PRIx64 ")",
        st == GPULEASE_OK ? name : err, g_base);
  if (st != GPULEASE_OK) return 1;
  char tag[64];
  o->cache_tag(g_b, tag, sizeof tag);
  char want_tag[32];
  snprintf(want_tag, sizeof want_tag, "cuda-sm%u%u-drv", probe.gpus[0].cc_major,
           probe.gpus[0].cc_minor);
  check(strncmp(tag, want_tag, strlen(want_tag)) == 0, "cache_tag: %s", tag);

  void *mod = NULL, *fn = NULL;
  st = o->load_module(g_b, (const uint8_t *)ptx, ptx_len, GPULEASE_IMAGE_PTX, &mod, err,
                      sizeof err);
  check(st == GPULEASE_OK, "load_module %s (PTX)%s%s", argv[1], st == GPULEASE_OK ? "" : ": ",
        st == GPULEASE_OK ? "" : err);
  if (st != GPULEASE_OK) return 1;
  st = o->get_function(g_b, mod, "vector_add", &fn, err, sizeof err);
  check(st == GPULEASE_OK, "get_function vector_add%s%s", st == GPULEASE_OK ? "" : ": ",
        st == GPULEASE_OK ? "" : err);
  if (st != GPULEASE_OK) return 1;
  size_t psizes[8], pcount = 0;
  st = o->param_sizes(g_b, fn, psizes, 8, &pcount, err, sizeof err);
  if (st == GPULEASE_OK)
    check(pcount == 4 && psizes[0] == 8 && psizes[3] == 4, "param_sizes: %zu params", pcount);
  else
    printf("SKIP param_sizes: %s\n", err);

  gl_func_info_resp fi;
  memset(&fi, 0, sizeof fi);
  st = o->func_info(g_b, fn, &fi, err, sizeof err);
  unsigned cc = probe.gpus[0].cc_major * 10u + probe.gpus[0].cc_minor;
  check(st == GPULEASE_OK && fi.num_regs > 0 && fi.max_threads_per_block > 0 &&
            fi.binary_version == cc,
        "func_info vector_add: num_regs %u, max_threads_per_block %u, shared %u, local %u, "
        "const %u, ptx_version %u, binary_version %u (device sm_%u)%s%s",
        fi.num_regs, fi.max_threads_per_block, fi.static_shared_bytes, fi.local_bytes,
        fi.const_bytes, fi.ptx_version, fi.binary_version, cc, st == GPULEASE_OK ? "" : ": ",
        st == GPULEASE_OK ? "" : err);
  printf("INFO ptx_version for .target sm_75 PTX is %u (the emulated device reports the "
         ".target's number, 75)\n", fi.ptx_version);

  shared_checks(ptx, ptx_len);

  /* two sessions on two threads */
  session ss[2] = {{.index = 0, .fn = fn}, {.index = 1, .fn = fn}};
  pthread_t tid[2];
  double t0 = now_ms();
  for (int i = 0; i < 2; i++) pthread_create(&tid[i], NULL, session_main, &ss[i]);
  for (int i = 0; i < 2; i++) pthread_join(tid[i], NULL);
  printf("INFO two sessions took %.1f ms in all\n", now_ms() - t0);
  void *s1 = ss[0].stream, *s2 = ss[1].stream;
  if (!s1 || !s2) return 1;

  /* a bad configuration is refused at enqueue */
  {
    va_args v;
    va_setup(&v, 0, 4096, 8192, 16);
    v.l.block[0] = 2048;
    st = o->launch_async(g_b, s1, fn, &v.l, err, sizeof err);
    check(st == GPULEASE_INVALID_ARGUMENT && strstr(err, "CUDA_ERROR_INVALID_VALUE"),
          "launch_async with a 2048-thread block: %s: %s", gpulease_status_name(st), err);
    check(!o->context_lost(g_b), "context not lost by a bad configuration");
  }

  /* compile_ptx, then the cubin loaded and run */
  {
    uint8_t *bin = NULL;
    size_t bin_len = 0;
    double c0 = now_ms();
    st = o->compile_ptx(g_b, (const uint8_t *)ptx, ptx_len, &bin, &bin_len, err, sizeof err);
    check(st == GPULEASE_OK && bin_len > 4 && memcmp(bin, "\x7f" "ELF", 4) == 0,
          "compile_ptx: %zu-byte ELF cubin in %.1f ms%s%s", bin_len, now_ms() - c0,
          st == GPULEASE_OK ? "" : ": ", st == GPULEASE_OK ? "" : err);
    void *cmod = NULL, *cfn = NULL;
    if (st == GPULEASE_OK) {
      st = o->load_module(g_b, bin, bin_len, GPULEASE_IMAGE_CUBIN, &cmod, err, sizeof err);
      check(st == GPULEASE_OK, "load_module of the cubin (CUBIN)%s%s",
            st == GPULEASE_OK ? "" : ": ", st == GPULEASE_OK ? "" : err);
    }
    if (st == GPULEASE_OK) st = o->get_function(g_b, cmod, "vector_add", &cfn, err, sizeof err);
    if (st == GPULEASE_OK) {
      enum { M = 1000 };
      float a[M], b[M], c[M];
      for (int i = 0; i < M; i++) a[i] = (float)i, b[i] = 2.0f * (float)i;
      va_args v;
      va_setup(&v, 0, 4096, 8192, M);
      int ok = (st = o->write_async(g_b, s2, 0, a, sizeof a, err, sizeof err)) == GPULEASE_OK &&
               (st = o->write_async(g_b, s2, 4096, b, sizeof b, err, sizeof err)) ==
                   GPULEASE_OK &&
               (st = o->launch_async(g_b, s2, cfn, &v.l, err, sizeof err)) == GPULEASE_OK &&
               (st = o->read_sync(g_b, s2, 8192, c, sizeof c, err, sizeof err)) == GPULEASE_OK;
      for (int i = 0; ok && i < M; i++)
        if (c[i] != 3.0f * (float)i) {
          ok = 0;
          snprintf(err, sizeof err, "c[%d] = %g", i, (double)c[i]);
        }
      check(ok, "vector_add from the cubin on a stream%s%s", ok ? "" : ": ", ok ? "" : err);
    }
    if (cmod) o->unload_module(g_b, cmod);
    free(bin);

    bin = NULL;
    st = o->compile_ptx(g_b, (const uint8_t *)k_bad_ptx, sizeof k_bad_ptx - 1, &bin, &bin_len,
                        err, sizeof err);
    check(st == GPULEASE_LOAD_FAILED && !bin, "compile_ptx of bad PTX: %s: %s",
          gpulease_status_name(st), err);
    free(bin);
    check(!o->context_lost(g_b), "context not lost by a compile error");
  }

  new_op_checks(fn, probe.gpus[0].cc_major,
                probe.gpus[0].sm_count ? probe.gpus[0].sm_count : 1);

  /* a fault: reported by the stream's sync, sticky for everything */
  {
    void *omod = NULL, *ofn = NULL;
    st = o->load_module(g_b, (const uint8_t *)k_oob_ptx, sizeof k_oob_ptx - 1,
                        GPULEASE_IMAGE_PTX, &omod, err, sizeof err);
    if (st == GPULEASE_OK) st = o->get_function(g_b, omod, "oob", &ofn, err, sizeof err);
    check(st == GPULEASE_OK, "load the faulting kernel%s%s", st == GPULEASE_OK ? "" : ": ",
          st == GPULEASE_OK ? "" : err);
    if (st == GPULEASE_OK) {
      uint64_t region = g_base;
      void *args[1] = {&region};
      size_t sizes[1] = {8};
      gl_launch l = {.kernel_name = "oob", .grid = {1, 1, 1}, .block = {32, 1, 1},
                     .args = args, .arg_sizes = sizes, .arg_count = 1};
      st = o->launch_async(g_b, s1, ofn, &l, err, sizeof err);
      check(st == GPULEASE_OK, "launch_async of the faulting kernel is queued%s%s",
            st == GPULEASE_OK ? "" : ": ", st == GPULEASE_OK ? "" : err);
      st = o->stream_sync(g_b, s1, err, sizeof err);
      check(st == GPULEASE_LAUNCH_FAILED && strstr(err, "CUDA_ERROR_"),
            "stream_sync after the fault: %s: %s", gpulease_status_name(st), err);
      if (!strstr(err, "CUDA_ERROR_ILLEGAL_ADDRESS"))
        printf("INFO the fault was not CUDA_ERROR_ILLEGAL_ADDRESS (see tests/gpu/kernels/oob.cu "
               "on how GPUs differ)\n");
      check(o->context_lost(g_b), "context_lost() after the fault");
      st = o->stream_sync(g_b, s2, err, sizeof err);
      check(st == GPULEASE_LAUNCH_FAILED, "stream_sync on the other stream: %s: %s",
            gpulease_status_name(st), err);
      uint8_t buf[8];
      st = o->read_sync(g_b, s2, 0, buf, sizeof buf, err, sizeof err);
      check(st == GPULEASE_LAUNCH_FAILED, "read_sync after the fault: %s: %s",
            gpulease_status_name(st), err);
    }
    /* modules are not unloaded from a lost context (the worker exits) */
  }
  o->stream_destroy(g_b, s1);
  o->stream_destroy(g_b, s2);
  o->unload_module(g_b, mod);
  o->destroy(g_b);
  free(ptx);
  int failures = atomic_load(&g_failures);
  if (g_timings[0]) fputs(g_timings, stdout);
  printf("%s: %d failure%s\n", failures ? "FAILED" : "ALL PASSED", failures,
         failures == 1 ? "" : "s");
  return failures ? 1 : 0;
}
