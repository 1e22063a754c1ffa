/*
 * emu_matmul.c - the emulated device's speed on the corpus's shared-memory
 * tiled matmul (tests/emu/kernels/matmul_tiled.cu, 16x16 tiles).
 *
 *   gl_bench_emu [PTX_DIR [N [REPS [HOST_THREADS]]]]
 *
 * Runs C = A * B on N x N matrices REPS times with one host thread (the
 * deterministic default), then REPS times with HOST_THREADS (default: the
 * machine's cores), and prints for each the median launch time and thread
 * instructions per second, in all and per host thread, and the speed-up
 * of the second over the first, measured in the same run. The product is
 * checked against a C reference computed the same way (one fma a step, in
 * order), bit for bit, and both runs must agree.
 *
 * PTX_DIR holds matmul_tiled.ptx (default: the build's emu-kernels/sm_75,
 * else tests/emu/kernels/ptx/sm_75); N is a multiple of 16 (default 256);
 * REPS defaults to 5.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "emu/emu.h"
#include "median.h"

#ifdef GL_EMU_KERNEL_DIR
#define DEFAULT_DIR GL_EMU_KERNEL_DIR "/sm_75"
#else
#define DEFAULT_DIR "tests/emu/kernels/ptx/sm_75"
#endif

typedef struct run {
  double median_s;
  uint64_t thread_insns, warp_insns;
} run;

/* Launches REPS times; 0 or -1 (message printed). */
static int measure(gl_emu_device *dev, const gl_emu_function *fn, gl_emu_launch_cfg *cfg,
                   int reps, run *out) {
  double *t = calloc((size_t)reps, sizeof *t);
  if (!t) return -1;
  char err[1024];
  for (int r = 0; r < reps; r++) {
    gl_emu_stats stats = {0, 0};
    uint64_t t0 = gl_mono_ns();
    if (gl_emu_launch(dev, fn, cfg, &stats, err, sizeof err) != GPULEASE_OK) {
      fprintf(stderr, "launch: %s\n", err);
      free(t);
      return -1;
    }
    t[r] = (double)(gl_mono_ns() - t0) / 1e9;
    out->thread_insns = stats.thread_insns;
    out->warp_insns = stats.warp_insns;
  }
  out->median_s = median(t, (size_t)reps);
  free(t);
  return 0;
}

static void print_run(const char *what, int n, unsigned threads, const run *r) {
  double rate = (double)r->thread_insns / r->median_s;
  printf("%-12s n=%d host threads=%-3u median %8.2f ms  %7.1f M thread-insns/s  "
         "(%6.1f M per host thread)\n",
         what, n, threads, r->median_s * 1e3, rate / 1e6, rate / 1e6 / threads);
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : DEFAULT_DIR;
  int n = argc > 2 ? atoi(argv[2]) : 256;
  int reps = argc > 3 ? atoi(argv[3]) : 5;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int threads = argc > 4 ? atoi(argv[4]) : (int)(cores > 0 ? cores : 1);
  if (n < 16 || n % 16 || n > 4096 || reps < 1 || reps > 1000 || threads < 1 ||
      threads > 1024) {
    fprintf(stderr, "usage: %s [PTX_DIR [N [REPS [HOST_THREADS]]]]\n", argv[0]);
    return 2;
  }
  char path[1024];
  snprintf(path, sizeof path, "%s/matmul_tiled.ptx", dir);
  uint8_t *ptx;
  size_t len;
  if (gl_read_file(path, 1u << 24, &ptx, &len)) {
    fprintf(stderr, "cannot read %s\n", path);
    return 1;
  }
  size_t elems = (size_t)n * (size_t)n, bytes = elems * sizeof(float);
  gl_emu_device *dev = gl_emu_device_new(3 * (uint64_t)bytes);
  float *ref = malloc(bytes), *first = malloc(bytes);
  if (!dev || !ref || !first) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  char err[1024];
  gl_emu_module *mod;
  gpulease_status st = gl_emu_module_load(dev, (const char *)ptx, len, &mod, err, sizeof err);
  free(ptx);
  const gl_emu_function *fn =
      st == GPULEASE_OK ? gl_emu_module_function(mod, "matmul_tiled") : NULL;
  if (!fn) {
    fprintf(stderr, "%s: %s\n", path, st == GPULEASE_OK ? "no kernel matmul_tiled" : err);
    return 1;
  }
  uint64_t a = GL_EMU_REGION_BASE, b = a + bytes, c = b + bytes;
  float *A = (float *)gl_emu_device_ptr(dev, a, bytes);
  float *B = (float *)gl_emu_device_ptr(dev, b, bytes);
  float *C = (float *)gl_emu_device_ptr(dev, c, bytes);
  for (size_t i = 0; i < elems; i++) {
    A[i] = (float)(i % 7) - 3.0f + 0.125f * (float)(i % 3);
    B[i] = (float)(i % 5) * 0.5f - 0.75f;
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int p = 0; p < n; p++) acc = fmaf(A[(size_t)i * n + p], B[(size_t)p * n + j], acc);
      ref[(size_t)i * n + j] = acc;
    }
  void *args[] = {&a, &b, &c, &n, &n, &n};
  gl_emu_launch_cfg cfg = {.grid = {(uint32_t)n / 16, (uint32_t)n / 16, 1},
                           .block = {16, 16, 1},
                           .args = args,
                           .threads = 1};
  run one, many;
  if (measure(dev, fn, &cfg, reps, &one) != 0) return 1;
  memcpy(first, C, bytes);
  memset(C, 0, bytes);
  cfg.threads = (unsigned)threads;
  if (measure(dev, fn, &cfg, reps, &many) != 0) return 1;
  int ok_ref = memcmp(first, ref, bytes) == 0, ok_same = memcmp(first, C, bytes) == 0;

  printf("emulated device, tiled matmul (16x16 tiles, shared memory), %d x %d f32, %d runs "
         "each; %llu thread instructions (%llu warp instructions) a launch\n",
         n, n, reps, (unsigned long long)one.thread_insns, (unsigned long long)one.warp_insns);
  print_run("sequential", n, 1, &one);
  print_run("parallel", n, (unsigned)threads, &many);
  printf("speed-up with %d host threads: %.2fx; result %s the C reference, runs %s\n", threads,
         one.median_s / many.median_s, ok_ref ? "bit-identical to" : "DIFFERS from",
         ok_same ? "identical" : "DIFFER");
  gl_emu_device_free(dev);
  free(ref);
  free(first);
  return ok_ref && ok_same ? 0 : 1;
}
