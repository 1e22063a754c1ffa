/*
 * cuda_driver_bench.c - gl_bench_cuda: figures of the plain CUDA driver API
 * (<cuda.h> only, no runtime), so that the same binary runs on the real
 * driver and on our libcuda.so.1 shim (src/cuda/) and the two tables compare
 * line by line. It links libcuda.so.1 by soname with no RPATH/RUNPATH: the
 * dynamic loader takes the system's driver, or the one LD_LIBRARY_PATH names.
 *
 *   gl_bench_cuda [--launches N] [--mib N] [--reps N] [--label TEXT]
 *   gpulease exec --addr H:P --pin-sha256 HEX --vram 2GiB -- gl_bench_cuda --label gpulease
 *   (tests/gpu/cuda_bench.sh runs both, interleaved, and prints the ratios)
 *
 * On device 0's primary context, with an embedded PTX module (gl_empty, an
 * empty kernel; gl_fill(p, v, n): p[i] = v for i < n), it measures:
 *   launch_sync_p50/p90   launch + cuStreamSynchronize of gl_empty, 1x1, on a
 *                         non-blocking stream: --launches iterations after
 *                         100 warm-up ones (us)
 *   launch_pipelined      --launches launches, then one sync (launches/s)
 *   htod/dtoh_pageable    cuMemcpyHtoD/DtoH of --mib MiB, malloc'd (GB/s)
 *   htod/dtoh_pinned      the same from cuMemHostAlloc'd memory (GB/s)
 *   htod/dtoh_pinned_async  cuMemcpy*Async on the stream + its sync (GB/s)
 *   dtod                  cuMemcpyDtoD of --mib MiB (GB/s, bytes copied)
 *   memalloc_free_1mib    cuMemAlloc + cuMemFree of 1 MiB, 1,000 pairs (us)
 *   module_load_first     the first cuModuleLoadData of the PTX (us)
 *   module_load_unload    cuModuleLoadData of it again + cuModuleUnload, 50 (us)
 *   mem_free, mem_total   cuMemGetInfo (bytes)
 * GB/s is 1e9 bytes/s; rates and times are medians over --reps (default 5).
 * Every line is "LABEL<TAB>FIGURE<TAB>VALUE<TAB>UNIT"; the first one is the
 * device (name, compute capability, driver version, total memory), the
 * second the file the loader took for libcuda.so.1 (/proc/self/maps), the last
 * "LABEL<TAB>check ok" after gl_fill through kernelParams (with pointer
 * arithmetic), cuMemsetD32, DtoH and DtoD: "check FAILED at I" and exit 1
 * when a value is wrong. Any CUDA call that fails is printed (the call,
 * cuGetErrorName, cuGetErrorString) and the program exits 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char k_ptx[] =
    ".version 7.8\n"
    ".target sm_52\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry gl_empty()\n"
    "{\n"
    "  ret;\n"
    "}\n"
    "\n"
    ".visible .entry gl_fill(.param .u64 gl_fill_p, .param .u32 gl_fill_v,\n"
    "                        .param .u32 gl_fill_n)\n"
    "{\n"
    "  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<8>;\n"
    "  .reg .b64 %rd<5>;\n"
    "  ld.param.u64 %rd1, [gl_fill_p];\n"
    "  ld.param.u32 %r1, [gl_fill_v];\n"
    "  ld.param.u32 %r2, [gl_fill_n];\n"
    "  mov.u32 %r3, %ctaid.x;\n"
    "  mov.u32 %r4, %ntid.x;\n"
    "  mov.u32 %r5, %tid.x;\n"
    "  mad.lo.s32 %r6, %r3, %r4, %r5;\n"
    "  setp.ge.u32 %p1, %r6, %r2;\n"
    "  @%p1 bra DONE;\n"
    "  cvta.to.global.u64 %rd2, %rd1;\n"
    "  mul.wide.u32 %rd3, %r6, 4;\n"
    "  add.s64 %rd4, %rd2, %rd3;\n"
    "  st.global.u32 [%rd4], %r1;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

#define WARMUP 100
#define ALLOC_PAIRS 1000
#define RELOADS 50
#define FILL_N (1u << 20) /* u32 values */
#define FILL_V 0x1234abcdu
#define FILL_SKIP 16u /* gl_fill starts this many values in; memset fills them */
#define MEMSET_V 7u

static void ck(CUresult r, const char *call, int line) {
  if (r == CUDA_SUCCESS) return;
  const char *name = NULL, *str = NULL;
  if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name) name = "?";
  if (cuGetErrorString(r, &str) != CUDA_SUCCESS || !str) str = "?";
  fprintf(stderr, "gl_bench_cuda: line %d: %s: %s (%d): %s\n", line, call, name, (int)r, str);
  exit(1);
}
#define CK(call) ck((call), #call, __LINE__)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The p-th quantile (0..1) of v (n > 0 values), nearest rank; sorts v. */
static double quantile(double *v, size_t n, double p) {
  qsort(v, n, sizeof *v, cmp_double);
  return v[(size_t)(p * (double)(n - 1) + 0.5)];
}

/* The median (the mean of the middle two when n is even); sorts v. */
static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "gl_bench_cuda: out of memory (%zu bytes)\n", n);
    exit(1);
  }
  return p;
}

static const char *g_label = "local";

static void row(const char *figure, double value, const char *unit) {
  printf("%s\t%s\t%.3f\t%s\n", g_label, figure, value, unit);
  fflush(stdout);
}

static void row_u64(const char *figure, uint64_t value, const char *unit) {
  printf("%s\t%s\t%" PRIu64 "\t%s\n", g_label, figure, value, unit);
  fflush(stdout);
}

/* The file the loader took for libcuda.so.1 (the first mapping of a
 * libcuda.so* in /proc/self/maps), so that a run shows which driver it
 * measured: the system's or the shim. */
static void print_libcuda_path(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[4096], found[4096] = "(not found in /proc/self/maps)";
  while (f && fgets(line, sizeof line, f)) {
    char *path = strchr(line, '/');
    if (!path || !strstr(path, "/libcuda.so")) continue;
    path[strcspn(path, "\n")] = 0;
    snprintf(found, sizeof found, "%s", path);
    break;
  }
  if (f) fclose(f);
  printf("%s\tlibcuda\t%s\tpath\n", g_label, found);
  fflush(stdout);
}

static unsigned long parse_count(const char *opt, const char *s, unsigned long max) {
  char *end;
  errno = 0;
  unsigned long v = s ? strtoul(s, &end, 10) : 0;
  if (!s || errno || end == s || *end || s[0] == '-' || v == 0 || v > max) {
    fprintf(stderr, "gl_bench_cuda: %s needs a number from 1 to %lu\n", opt, max);
    exit(2);
  }
  return v;
}

static void usage(FILE *f) {
  fprintf(f, "usage: gl_bench_cuda [--launches N] [--mib N] [--reps N] [--label TEXT]\n"
             "  --launches N  launches of the launch figures (default 20000)\n"
             "  --mib N       transfer size in MiB (default 256)\n"
             "  --reps N      repetitions of each rate (default 5)\n"
             "  --label TEXT  the first column of every line (default local)\n");
}

/* The elapsed time of one synchronous copy direction, reps times: GB/s. */
enum dir { HTOD, DTOH, HTOD_ASYNC, DTOH_ASYNC, DTOD };

static double copy_rate(enum dir d, CUdeviceptr dev, CUdeviceptr dev2, void *host, size_t bytes,
                        CUstream s, unsigned reps) {
  double *v = xmalloc(reps * sizeof *v);
  for (unsigned r = 0; r < reps; r++) {
    double t0 = now_s();
    switch (d) {
    case HTOD: CK(cuMemcpyHtoD(dev, host, bytes)); CK(cuCtxSynchronize()); break;
    case DTOH: CK(cuMemcpyDtoH(host, dev, bytes)); CK(cuCtxSynchronize()); break;
    case HTOD_ASYNC:
      CK(cuMemcpyHtoDAsync(dev, host, bytes, s));
      CK(cuStreamSynchronize(s));
      break;
    case DTOH_ASYNC:
      CK(cuMemcpyDtoHAsync(host, dev, bytes, s));
      CK(cuStreamSynchronize(s));
      break;
    case DTOD: CK(cuMemcpyDtoD(dev2, dev, bytes)); CK(cuCtxSynchronize()); break;
    }
    v[r] = (double)bytes / (now_s() - t0) / 1e9;
  }
  double m = median(v, reps);
  free(v);
  return m;
}

/* Checks the fill pattern in h (FILL_N values); prints and exits on the first
 * wrong one. */
static void check_fill(const uint32_t *h, const char *what) {
  for (uint32_t i = 0; i < FILL_N; i++) {
    uint32_t want = i < FILL_SKIP ? MEMSET_V : FILL_V;
    if (h[i] != want) {
      printf("%s\tcheck FAILED at %" PRIu32 "\n", g_label, i);
      fprintf(stderr, "gl_bench_cuda: %s: value %" PRIu32 " is 0x%08" PRIx32 ", want 0x%08" PRIx32
              "\n", what, i, h[i], want);
      exit(1);
    }
  }
}

int main(int argc, char **argv) {
  unsigned long launches = 20000, mib = 256, reps = 5;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--launches")) launches = parse_count(a, val, 100000000ul), i++;
    else if (!strcmp(a, "--mib")) mib = parse_count(a, val, 1ul << 20), i++;
    else if (!strcmp(a, "--reps")) reps = parse_count(a, val, 100000ul), i++;
    else if (!strcmp(a, "--label")) {
      if (!val) {
        fprintf(stderr, "gl_bench_cuda: --label needs a value\n");
        return 2;
      }
      g_label = val, i++;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "gl_bench_cuda: unknown argument '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  size_t bytes = (size_t)mib << 20;

  /* The device line. */
  CK(cuInit(0));
  int drv = 0, major = 0, minor = 0;
  CK(cuDriverGetVersion(&drv));
  CUdevice dev;
  CK(cuDeviceGet(&dev, 0));
  char name[256];
  CK(cuDeviceGetName(name, (int)sizeof name, dev));
  CK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  size_t total_mem = 0;
  CK(cuDeviceTotalMem(&total_mem, dev));
  printf("%s\tdevice\t%s\tcc %d.%d, driver %d.%d (%d), %zu bytes (%.1f GiB)\n", g_label, name,
         major, minor, drv / 1000, drv % 1000 / 10, drv, total_mem,
         (double)total_mem / (1u << 30));
  fflush(stdout);

  print_libcuda_path();

  CUcontext ctx;
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));

  double t0 = now_s();
  CUmodule mod;
  CK(cuModuleLoadData(&mod, k_ptx));
  double first_load_us = (now_s() - t0) * 1e6;
  CUfunction f_empty, f_fill;
  CK(cuModuleGetFunction(&f_empty, mod, "gl_empty"));
  CK(cuModuleGetFunction(&f_fill, mod, "gl_fill"));
  CUstream s;
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

  /* 1. launch + sync, one at a time. */
  for (int i = 0; i < WARMUP; i++) {
    CK(cuLaunchKernel(f_empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CK(cuStreamSynchronize(s));
  }
  double *lat = xmalloc(launches * sizeof *lat);
  for (unsigned long i = 0; i < launches; i++) {
    double a = now_s();
    CK(cuLaunchKernel(f_empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CK(cuStreamSynchronize(s));
    lat[i] = (now_s() - a) * 1e6;
  }
  row("launch_sync_p50", quantile(lat, launches, 0.5), "us");
  row("launch_sync_p90", quantile(lat, launches, 0.9), "us");
  free(lat);

  /* 2. pipelined launches. */
  double *v = xmalloc((reps > RELOADS ? reps : RELOADS) * sizeof *v);
  for (unsigned long r = 0; r < reps; r++) {
    double a = now_s();
    for (unsigned long i = 0; i < launches; i++)
      CK(cuLaunchKernel(f_empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CK(cuStreamSynchronize(s));
    v[r] = (double)launches / (now_s() - a);
  }
  row("launch_pipelined", median(v, reps), "launches/s");

  /* 3. and 4. copies: pageable, pinned, pinned async; then DtoD. */
  CUdeviceptr d_big, d_big2;
  CK(cuMemAlloc(&d_big, bytes));
  CK(cuMemAlloc(&d_big2, bytes));
  unsigned char *pageable = xmalloc(bytes);
  memset(pageable, 0x5a, bytes);
  unsigned nrep = (unsigned)reps;
  row("htod_pageable", copy_rate(HTOD, d_big, 0, pageable, bytes, s, nrep), "GB/s");
  row("dtoh_pageable", copy_rate(DTOH, d_big, 0, pageable, bytes, s, nrep), "GB/s");
  free(pageable);
  void *pinned;
  CK(cuMemHostAlloc(&pinned, bytes, 0));
  memset(pinned, 0xa5, bytes);
  row("htod_pinned", copy_rate(HTOD, d_big, 0, pinned, bytes, s, nrep), "GB/s");
  row("dtoh_pinned", copy_rate(DTOH, d_big, 0, pinned, bytes, s, nrep), "GB/s");
  row("htod_pinned_async", copy_rate(HTOD_ASYNC, d_big, 0, pinned, bytes, s, nrep), "GB/s");
  row("dtoh_pinned_async", copy_rate(DTOH_ASYNC, d_big, 0, pinned, bytes, s, nrep), "GB/s");
  CK(cuMemFreeHost(pinned));
  row("dtod", copy_rate(DTOD, d_big, d_big2, NULL, bytes, s, nrep), "GB/s");
  CK(cuMemFree(d_big2));
  CK(cuMemFree(d_big));

  /* 5. cuMemAlloc + cuMemFree of 1 MiB. */
  double *pairs = xmalloc(ALLOC_PAIRS * sizeof *pairs);
  for (int i = 0; i < ALLOC_PAIRS; i++) {
    CUdeviceptr p;
    double a = now_s();
    CK(cuMemAlloc(&p, 1u << 20));
    CK(cuMemFree(p));
    pairs[i] = (now_s() - a) * 1e6;
  }
  row("memalloc_free_1mib", median(pairs, ALLOC_PAIRS), "us");
  free(pairs);

  /* 6. the module again: load + unload. */
  row("module_load_first", first_load_us, "us");
  for (int i = 0; i < RELOADS; i++) {
    CUmodule m2;
    double a = now_s();
    CK(cuModuleLoadData(&m2, k_ptx));
    CK(cuModuleUnload(m2));
    v[i] = (now_s() - a) * 1e6;
  }
  row("module_load_unload", median(v, RELOADS), "us");
  free(v);

  /* 7. cuMemGetInfo. */
  size_t mfree = 0, mtotal = 0;
  CK(cuMemGetInfo(&mfree, &mtotal));
  row_u64("mem_free", (uint64_t)mfree, "bytes");
  row_u64("mem_total", (uint64_t)mtotal, "bytes");

  /* 8. correctness: gl_fill past the first FILL_SKIP values (a kernel
   * parameter made by pointer arithmetic), cuMemsetD32 of those, DtoH; then
   * DtoD into a second buffer and DtoH of that. */
  size_t fill_bytes = (size_t)FILL_N * sizeof(uint32_t);
  CUdeviceptr d_fill, d_copy;
  CK(cuMemAlloc(&d_fill, fill_bytes));
  CK(cuMemAlloc(&d_copy, fill_bytes));
  CK(cuMemsetD32(d_fill, 0, FILL_N));
  CK(cuMemsetD32(d_copy, 0, FILL_N));
  CK(cuCtxSynchronize()); /* the memsets ran on the legacy stream; s does not wait for it */
  CUdeviceptr p_arg = d_fill + sizeof(uint32_t) * FILL_SKIP;
  uint32_t v_arg = FILL_V, n_arg = FILL_N - FILL_SKIP;
  void *params[] = {&p_arg, &v_arg, &n_arg};
  unsigned block = 256, grid = (n_arg + block - 1) / block;
  CK(cuLaunchKernel(f_fill, grid, 1, 1, block, 1, 1, 0, s, params, NULL));
  CK(cuStreamSynchronize(s));
  CK(cuMemsetD32(d_fill, MEMSET_V, FILL_SKIP));
  uint32_t *h = xmalloc(fill_bytes);
  memset(h, 0, fill_bytes);
  CK(cuMemcpyDtoH(h, d_fill, fill_bytes));
  check_fill(h, "gl_fill + cuMemsetD32");
  CK(cuMemcpyDtoD(d_copy, d_fill, fill_bytes));
  memset(h, 0, fill_bytes);
  CK(cuMemcpyDtoH(h, d_copy, fill_bytes));
  check_fill(h, "cuMemcpyDtoD");
  free(h);
  CK(cuMemFree(d_copy));
  CK(cuMemFree(d_fill));

  CK(cuStreamDestroy(s));
  CK(cuModuleUnload(mod));
  CK(cuDevicePrimaryCtxRelease(dev));
  printf("%s\tcheck ok\n", g_label);
  return 0;
}
