/*
 * burst_bench.c - issue 11's burst table: a BURST of N small kernels end to
 * end from the client, against N pipelined LAUNCHes and against the local
 * CUDA driver's graph launch and plain launches, in the same run on the
 * same node.
 *
 *   gl_bench_burst --addr HOST:PORT --pin-sha256 HEX [--n N] [--rounds R] [--only burst]
 *
 * Rows (medians over R rounds, us per kernel):
 *   - gpulease BURST of N, the same arguments each round (the daemon
 *     relaunches its instantiated graph), then SYNC: one burst call and one
 *     sync call timed together;
 *   - the same with other argument values each round (the graph's kernel
 *     nodes updated: cuGraphExecKernelNodeSetParams);
 *   - the first BURST of the shape (the graph built and instantiated);
 *   - N pipelined gpulease_launch then one SYNC;
 *   - the N launches recorded once as a graph (GRAPH_BEGIN .. GRAPH_END),
 *     then GRAPH_LAUNCH and SYNC;
 *   - local: a CUDA graph of N kernel nodes (cuGraphLaunch +
 *     cuStreamSynchronize), N cuLaunchKernel + cuStreamSynchronize.
 * The kernel adds its argument to one word (one thread), as small as a
 * kernel gets. The target (issue 11) is at most 1 us per kernel for the
 * burst of 1,000.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "gpu/cuda_api.h"
#include "gpulease/gpulease.h"
#include "median.h"

static const char k_ptx[] =
    ".version 8.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry add_at(.param .u64 p, .param .u32 i, .param .u32 v)\n{\n"
    "  .reg .b32 %r<4>;\n  .reg .b64 %rd<4>;\n"
    "  ld.param.u64 %rd1, [p];\n  ld.param.u32 %r1, [i];\n  ld.param.u32 %r2, [v];\n"
    "  mul.wide.u32 %rd2, %r1, 4;\n  add.s64 %rd3, %rd1, %rd2;\n"
    "  ld.global.u32 %r3, [%rd3];\n  add.u32 %r3, %r3, %r2;\n  st.global.u32 [%rd3], %r3;\n"
    "  ret;\n}\n"
    ".visible .entry empty()\n{\n  ret;\n}\n";

#define SLOTS 64

static double now_us(void) { return (double)gl_mono_ns() / 1e3; }

typedef struct figures {
  double send_us; /* gpulease_burst() alone: checks, encoding, sending */
  double burst_same, burst_changed, burst_cold, launches, graph_local, launch_local;
  double graph_replay; /* the N launches recorded once (GRAPH_BEGIN..END), GRAPH_LAUNCH + SYNC */
  bool have_local;
  bool only_burst; /* --only burst: the same-arguments row alone (for GL_LAT_TRACE) */
} figures;

/* ---- the local driver ---------------------------------------------------- */

static int local_figures(int n, int rounds, bool empty, figures *f) {
  gl_cuda cu;
  char err[512];
  if (gl_cuda_load(&cu, err, sizeof err) != 0) {
    printf("local driver: %s\n", err);
    return -1;
  }
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fn;
  CUdeviceptr d;
  CUstream st;
  if (cu.cuInit(0) || cu.cuDeviceGet(&dev, 0) || cu.cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cu.cuCtxSetCurrent(ctx) || cu.cuModuleLoadDataEx(&mod, k_ptx, 0, NULL, NULL) ||
      cu.cuModuleGetFunction(&fn, mod, empty ? "empty" : "add_at") ||
      cu.cuMemAlloc(&d, SLOTS * 4) ||
      cu.cuStreamCreate(&st, CU_STREAM_NON_BLOCKING)) {
    printf("local driver: setup failed\n");
    return -1;
  }
  uint32_t *slot = malloc((size_t)n * sizeof *slot), one = 1;
  void **params = malloc((size_t)n * 3 * sizeof *params);
  double *t = malloc((size_t)rounds * sizeof *t);
  if (!slot || !params || !t) return -1;
  for (int k = 0; k < n; k++) {
    slot[k] = (uint32_t)(k % SLOTS);
    params[3 * k] = &d;
    params[3 * k + 1] = &slot[k];
    params[3 * k + 2] = &one;
  }
  CUgraph g;
  CUgraphExec ge;
  CUgraphNode prev = NULL, node;
  cu.cuGraphCreate(&g, 0);
  for (int k = 0; k < n; k++) {
    CUDA_KERNEL_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    p.func = fn;
    p.gridDimX = p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = p.blockDimY = p.blockDimZ = 1;
    p.kernelParams = empty ? NULL : &params[3 * k];
    if (cu.cuGraphAddKernelNode(&node, g, prev ? &prev : NULL, prev ? 1 : 0, &p)) return -1;
    prev = node;
  }
  if (cu.cuGraphInstantiateWithFlags(&ge, g, 0)) return -1;
  for (int r = 0; r < rounds + 2; r++) {
    double t0 = now_us();
    cu.cuGraphLaunch(ge, st);
    cu.cuStreamSynchronize(st);
    if (r >= 2) t[r - 2] = (now_us() - t0) / n;
  }
  f->graph_local = median(t, (size_t)rounds);
  for (int r = 0; r < rounds + 2; r++) {
    double t0 = now_us();
    for (int k = 0; k < n; k++)
      cu.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, st, empty ? NULL : &params[3 * k], NULL);
    cu.cuStreamSynchronize(st);
    if (r >= 2) t[r - 2] = (now_us() - t0) / n;
  }
  f->launch_local = median(t, (size_t)rounds);
  f->have_local = true;
  cu.cuGraphExecDestroy(ge);
  cu.cuGraphDestroy(g);
  cu.cuStreamDestroy(st);
  cu.cuMemFree(d);
  cu.cuModuleUnload(mod);
  cu.cuDevicePrimaryCtxRelease(dev);
  free(slot);
  free(params);
  free(t);
  return 0;
}

/* ---- gpulease ------------------------------------------------------------ */

static int fail(const char *what, const gpulease_error *e) {
  fprintf(stderr, "bench: %s: %s\n", what, e->message);
  return 1;
}

static int remote_figures(gpulease_client *c, int n, int rounds, bool empty, figures *f) {
  gpulease_error e;
  gpulease_lease l;
  gpulease_session *s;
  gpulease_module m;
  gpulease_function fn;
  gpulease_buffer b;
  gpulease_op_failure fl = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  if (gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 1 << 20, 120, &l, &e) ||
      gpulease_session_open(c, &l, &s, &e) ||
      gpulease_module_load(s, k_ptx, sizeof k_ptx - 1, GPULEASE_IMAGE_PTX, &m, NULL, &e) ||
      gpulease_function_get(s, m, empty ? "empty" : "add_at", &fn, NULL, &e) ||
      gpulease_mem_alloc(s, SLOTS * 4, &b, &e))
    return fail("setup", &e);
  gpulease_burst_launch *bl = calloc((size_t)n, sizeof *bl);
  gpulease_arg *args = calloc((size_t)n * 3, sizeof *args);
  double *t = malloc((size_t)rounds * sizeof *t);
  if (!bl || !args || !t) return 1;
  uint32_t one = 1;
  for (int k = 0; k < n; k++) {
    uint32_t slot = (uint32_t)(k % SLOTS);
    args[3 * k] = gpulease_arg_buffer(b, 0);
    args[3 * k + 1] = gpulease_arg_scalar(&slot, 4);
    args[3 * k + 2] = gpulease_arg_scalar(&one, 4);
    bl[k].function = fn;
    bl[k].grid[0] = bl[k].grid[1] = bl[k].grid[2] = 1;
    bl[k].block[0] = bl[k].block[1] = bl[k].block[2] = 1;
    bl[k].args = &args[3 * k];
    bl[k].arg_count = empty ? 0 : 3;
  }
  double t0 = now_us();
  if (gpulease_burst(s, bl, (size_t)n, &e) || gpulease_session_sync(s, &fl, &e))
    return fail("first burst", &e);
  f->burst_cold = (now_us() - t0) / n;
  double *ts = malloc((size_t)rounds * sizeof *ts);
  if (!ts) return 1;
  for (int r = 0; r < rounds + 2; r++) {
    t0 = now_us();
    if (gpulease_burst(s, bl, (size_t)n, &e)) return fail("burst", &e);
    double t1 = now_us();
    if (gpulease_session_sync(s, &fl, &e)) return fail("burst", &e);
    if (r >= 2) t[r - 2] = (now_us() - t0) / n, ts[r - 2] = t1 - t0;
  }
  f->burst_same = median(t, (size_t)rounds);
  f->send_us = median(ts, (size_t)rounds);
  free(ts);
  if (f->only_burst) goto done;
  for (int r = 0; r < rounds + 2; r++) {
    uint32_t v = (uint32_t)r + 2;
    for (int k = 0; k < n; k++) args[3 * k + 2] = gpulease_arg_scalar(&v, 4);
    t0 = now_us();
    if (gpulease_burst(s, bl, (size_t)n, &e) || gpulease_session_sync(s, &fl, &e))
      return fail("burst (changed)", &e);
    if (r >= 2) t[r - 2] = (now_us() - t0) / n;
  }
  f->burst_changed = median(t, (size_t)rounds);
  const uint32_t grid[3] = {1, 1, 1};
  for (int r = 0; r < rounds + 2; r++) {
    t0 = now_us();
    for (int k = 0; k < n; k++)
      if (gpulease_launch(s, fn, grid, grid, 0, &args[3 * k], empty ? 0 : 3, &e))
        return fail("launch", &e);
    if (gpulease_session_sync(s, &fl, &e)) return fail("sync", &e);
    if (r >= 2) t[r - 2] = (now_us() - t0) / n;
  }
  f->launches = median(t, (size_t)rounds);
  /* The same launches recorded as a graph once, then replayed. */
  gpulease_graph g;
  if (gpulease_graph_begin(s, &e) || gpulease_burst(s, bl, (size_t)n, &e) ||
      gpulease_graph_end(s, &g, NULL, &e))
    return fail("graph", &e);
  for (int r = 0; r < rounds + 2; r++) {
    t0 = now_us();
    if (gpulease_graph_launch(s, g, &e) || gpulease_session_sync(s, &fl, &e))
      return fail("graph replay", &e);
    if (r >= 2) t[r - 2] = (now_us() - t0) / n;
  }
  f->graph_replay = median(t, (size_t)rounds);
done:
  gpulease_session_close(s, &e);
  gpulease_lease_free(c, &l, &e);
  free(bl);
  free(args);
  free(t);
  return 0;
}

int main(int argc, char **argv) {
  const char *addr = "127.0.0.1:5701", *pin = NULL;
  const char *token = NULL;
  int n = 1000, rounds = 30;
  const char *only = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--addr")) addr = argv[i + 1];
    else if (!strcmp(argv[i], "--pin-sha256")) pin = argv[i + 1];
    else if (!strcmp(argv[i], "--token")) token = argv[i + 1];
    else if (!strcmp(argv[i], "--n")) n = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--only")) only = argv[i + 1];
  }
  if (n < 1 || n > GPULEASE_MAX_BURST || rounds < 1) {
    fprintf(stderr, "usage: %s --addr HOST:PORT --pin-sha256 HEX [--n 1..%d] [--rounds R]\n",
            argv[0], GPULEASE_MAX_BURST);
    return 2;
  }
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = addr;
  o.pin_sha256 = pin;
  o.bearer_token = token; /* a daemon run with --auth token */
  o.insecure = pin == NULL;
  o.timeout_ms = 120000;
  o.no_local = 1;
  gpulease_client *c;
  gpulease_error e;
  if (gpulease_client_connect(&o, &c, &e) != GPULEASE_OK) return fail("connect", &e);
  const char *names[2] = {"add_at (one word read, added to, written)", "empty (no parameters)"};
  bool met = false;
  for (int kk = 0; kk < 2; kk++) {
    bool empty = kk == 1;
    figures f;
    memset(&f, 0, sizeof f);
    f.only_burst = only && !strcmp(only, "burst");
    if (remote_figures(c, n, rounds, empty, &f) != 0) return 1;
    if (f.only_burst) {
      printf("%s: BURST of %d + SYNC: %.3f us a kernel; gpulease_burst() itself %.1f us "
             "(median of %d)\n", names[kk], n, f.burst_same, f.send_us, rounds);
      continue;
    }
    local_figures(n, rounds, empty, &f);
    printf("\nburst of %d kernels %s, us per kernel (median of %d rounds)\n", n, names[kk],
           rounds);
    printf("%-52s %10s %10s\n", "", "gpulease", "local");
    printf("%-52s %10.3f %10s\n", "BURST + SYNC, same arguments (graph relaunched)",
           f.burst_same, "");
    printf("%-52s %10.3f %10s\n", "  of which gpulease_burst() (check, encode, send)",
           f.send_us / n, "");
    printf("%-52s %10.3f %10s\n", "BURST + SYNC, other arguments (nodes updated)",
           f.burst_changed, "");
    printf("%-52s %10.3f %10s\n", "first BURST of the shape (graph built)", f.burst_cold, "");
    char g[32] = "n/a", l[32] = "n/a";
    if (f.have_local) {
      snprintf(g, sizeof g, "%.3f", f.graph_local);
      snprintf(l, sizeof l, "%.3f", f.launch_local);
    }
    printf("%-52s %10.3f %10s\n", "recorded graph (once), GRAPH_LAUNCH + SYNC",
           f.graph_replay, "");
    printf("%-52s %10s %10s\n", "CUDA graph of the N kernels, launch + sync", "", g);
    printf("%-52s %10.3f %10s\n", "N pipelined launches + sync", f.launches, l);
    if (f.have_local)
      printf("ratios: BURST %.2fx the local graph launch; %.1fx faster than pipelined LAUNCHes\n",
             f.burst_same / f.graph_local, f.launches / f.burst_same);
    printf("target (issue 11): <= 1 us per kernel for a burst of 1,000: %s (%.3f)\n",
           f.burst_same <= 1.0 ? "MET" : "NOT MET", f.burst_same);
    met = met || f.burst_same <= 1.0;
  }
  gpulease_client_close(c);
  (void)met;
  return 0;
}
