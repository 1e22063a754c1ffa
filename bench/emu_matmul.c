/*
 * emu_matmul.c - the emulated device's speed on the corpus's shared-memory
 * tiled matmul (tests/emu/kernels/matmul_tiled.cu, 16x16 tiles): prints
 * thread instructions per second, in all and per host thread.
 *
 *   gl_bench_emu [PTX_DIR [N [REPS [HOST_THREADS]]]]
 *
 * PTX_DIR holds matmul_tiled.ptx (default: the build's emu-kernels/sm_75,
 * else tests/emu/kernels/ptx/sm_75 under the current directory); N x N
 * matrices (N a multiple of 16, default 256); the best of REPS runs
 * (default 3) is reported; HOST_THREADS as gl_emu_launch_cfg.threads
 * (default 1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "emu/emu.h"

#ifdef GL_EMU_KERNEL_DIR
#define DEFAULT_DIR GL_EMU_KERNEL_DIR "/sm_75"
#else
#define DEFAULT_DIR "tests/emu/kernels/ptx/sm_75"
#endif

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : DEFAULT_DIR;
  int n = argc > 2 ? atoi(argv[2]) : 256;
  int reps = argc > 3 ? atoi(argv[3]) : 3;
  int threads = argc > 4 ? atoi(argv[4]) : 1;
  if (n < 16 || n % 16 || n > 4096 || reps < 1 || threads < 1 || threads > 256) {
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
  size_t bytes = (size_t)n * n * sizeof(float);
  gl_emu_device *dev = gl_emu_device_new(3 * (uint64_t)bytes);
  if (!dev) {
    fprintf(stderr, "out of memory\n");
    free(ptx);
    return 1;
  }
  char err[1024];
  gl_emu_module *mod;
  gpulease_status st = gl_emu_module_load(dev, (const char *)ptx, len, &mod, err, sizeof err);
  free(ptx);
  const gl_emu_function *fn = st == GPULEASE_OK ? gl_emu_module_function(mod, "matmul_tiled")
                                                : NULL;
  if (!fn) {
    fprintf(stderr, "%s: %s\n", path, st == GPULEASE_OK ? "no kernel matmul_tiled" : err);
    gl_emu_device_free(dev);
    return 1;
  }
  uint64_t a = GL_EMU_REGION_BASE, b = a + bytes, c = b + bytes;
  float *A = (float *)gl_emu_device_ptr(dev, a, bytes);
  float *B = (float *)gl_emu_device_ptr(dev, b, bytes);
  for (int i = 0; i < n * n; i++) {
    A[i] = (float)(i % 7) - 3.0f;
    B[i] = (float)(i % 5) * 0.5f;
  }
  void *args[] = {&a, &b, &c, &n, &n, &n};
  gl_emu_launch_cfg cfg = {.grid = {(uint32_t)n / 16, (uint32_t)n / 16, 1},
                           .block = {16, 16, 1},
                           .args = args,
                           .threads = (unsigned)threads};
  double best = 0;
  gl_emu_stats stats = {0, 0};
  for (int r = 0; r < reps; r++) {
    uint64_t t0 = gl_mono_ns();
    if (gl_emu_launch(dev, fn, &cfg, &stats, err, sizeof err) != GPULEASE_OK) {
      fprintf(stderr, "launch: %s\n", err);
      gl_emu_device_free(dev);
      return 1;
    }
    double s = (double)(gl_mono_ns() - t0) / 1e9;
    double rate = s > 0 ? (double)stats.thread_insns / s : 0;
    if (rate > best)
      best = rate;
  }
  printf("emu matmul_tiled n=%d host-threads=%d: %llu thread-insns (%llu warp-insns) a run; "
         "best %.1f M thread-insns/s (%.1f M per host thread)\n",
         n, threads, (unsigned long long)stats.thread_insns,
         (unsigned long long)stats.warp_insns, best / 1e6, best / 1e6 / threads);
  gl_emu_device_free(dev);
  return 0;
}
