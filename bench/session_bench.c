/*
 * session_bench.c - benchmark: sessions over QUIC against the local CUDA
 * driver, measured in the same run on the same GPU.
 *
 *   gl_bench_session --addr HOST:PORT --pin-sha256 HEX [--mib N] [--launches N]
 *
 * Figures (medians of several rounds), remote beside local:
 *   - LAUNCH + SYNC of an empty kernel, round trip (local: cuLaunchKernel +
 *     cuCtxSynchronize);
 *   - pipelined launches per second (N launches, one SYNC; local: N
 *     cuLaunchKernel, one cuCtxSynchronize);
 *   - MEM_WRITE and MEM_READ of N MiB in GB/s (local: cuMemcpyHtoD /
 *     cuMemcpyDtoH from pageable host memory, as the daemon's worker does).
 * Without a GPU in this process the local column says so; the remote one
 * is then whatever device the daemon offers (the emulated one on CI).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "gpu/cuda_api.h"
#include "gpulease/gpulease.h"

static const char k_empty_ptx[] = ".version 7.0\n.target sm_70\n.address_size 64\n"
                                  ".visible .entry empty()\n{\n  ret;\n}\n";

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double now_s(void) { return (double)gl_mono_ns() / 1e9; }

typedef struct figures {
  double launch_sync_us;
  double launches_per_s;
  double write_gbs, read_gbs;
} figures;

#define ROUNDS 5
#define RTT_ITERS 200

/* ---- local: the CUDA driver in this process ---- */

static int local_figures(size_t bytes, int launches, figures *f) {
  gl_cuda cu;
  char err[256];
  if (gl_cuda_load(&cu, err, sizeof err) != 0) {
    printf("local: no CUDA driver here (%s)\n", err);
    return -1;
  }
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fn;
  CUdeviceptr d;
  if (cu.cuInit(0) || cu.cuDeviceGet(&dev, 0) || cu.cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cu.cuCtxSetCurrent(ctx) || cu.cuModuleLoadDataEx(&mod, k_empty_ptx, 0, NULL, NULL) ||
      cu.cuModuleGetFunction(&fn, mod, "empty") || cu.cuMemAlloc(&d, bytes)) {
    printf("local: CUDA setup failed\n");
    return -1;
  }
  double v[RTT_ITERS], r[ROUNDS], w[ROUNDS], rd[ROUNDS];
  for (int i = 0; i < RTT_ITERS + 20; i++) {
    double t0 = now_s();
    cu.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    cu.cuCtxSynchronize();
    if (i >= 20) v[i - 20] = (now_s() - t0) * 1e6;
  }
  f->launch_sync_us = median(v, RTT_ITERS);
  for (int k = 0; k < ROUNDS; k++) {
    double t0 = now_s();
    for (int i = 0; i < launches; i++) cu.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    cu.cuCtxSynchronize();
    r[k] = launches / (now_s() - t0);
  }
  f->launches_per_s = median(r, ROUNDS);
  uint8_t *host = malloc(bytes);
  memset(host, 0x5A, bytes);
  for (int k = 0; k < ROUNDS; k++) {
    double t0 = now_s();
    cu.cuMemcpyHtoD(d, host, bytes);
    w[k] = bytes / (now_s() - t0) / 1e9;
    t0 = now_s();
    cu.cuMemcpyDtoH(host, d, bytes);
    rd[k] = bytes / (now_s() - t0) / 1e9;
  }
  f->write_gbs = median(w, ROUNDS);
  f->read_gbs = median(rd, ROUNDS);
  free(host);
  cu.cuMemFree(d);
  cu.cuModuleUnload(mod);
  cu.cuDevicePrimaryCtxRelease(dev);
  return 0;
}

/* ---- remote: a session on a lease ---- */

#define TRY(call)                                                                       \
  do {                                                                                  \
    if ((call) != GPULEASE_OK) {                                                        \
      fprintf(stderr, "bench: %s: %s: %s\n", #call, gpulease_status_name(err.status),   \
              err.message);                                                             \
      return -1;                                                                        \
    }                                                                                   \
  } while (0)

static int remote_figures(gpulease_client *c, size_t bytes, int launches, figures *f) {
  gpulease_error err;
  gpulease_lease l;
  gpulease_session *s;
  gpulease_module m;
  gpulease_function fn;
  gpulease_buffer b;
  gpulease_op_failure fl;
  TRY(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, bytes + (1 << 20), 120, &l, &err));
  TRY(gpulease_session_open(c, &l, &s, &err));
  TRY(gpulease_module_load(s, k_empty_ptx, sizeof k_empty_ptx - 1, GPULEASE_IMAGE_PTX, &m, NULL,
                           &err));
  TRY(gpulease_function_get(s, m, "empty", &fn, NULL, &err));
  TRY(gpulease_mem_alloc(s, bytes, &b, &err));
  const uint32_t one[3] = {1, 1, 1};
  double v[RTT_ITERS], r[ROUNDS], w[ROUNDS], rd[ROUNDS];
  for (int i = 0; i < RTT_ITERS + 20; i++) {
    double t0 = now_s();
    TRY(gpulease_launch(s, fn, one, one, 0, NULL, 0, &err));
    TRY(gpulease_session_sync(s, &fl, &err));
    if (i >= 20) v[i - 20] = (now_s() - t0) * 1e6;
  }
  f->launch_sync_us = median(v, RTT_ITERS);
  for (int k = 0; k < ROUNDS; k++) {
    double t0 = now_s();
    for (int i = 0; i < launches; i++) TRY(gpulease_launch(s, fn, one, one, 0, NULL, 0, &err));
    TRY(gpulease_session_sync(s, &fl, &err));
    r[k] = launches / (now_s() - t0);
  }
  f->launches_per_s = median(r, ROUNDS);
  uint8_t *host = malloc(bytes), *back = malloc(bytes);
  for (size_t i = 0; i < bytes; i++) host[i] = (uint8_t)(i * 131 + 7);
  int bad = 0;
  for (int k = 0; k < ROUNDS; k++) {
    double t0 = now_s();
    TRY(gpulease_mem_write(s, b, 0, host, bytes, &err));
    w[k] = bytes / (now_s() - t0) / 1e9;
    t0 = now_s();
    TRY(gpulease_mem_read(s, b, 0, back, bytes, &err));
    rd[k] = bytes / (now_s() - t0) / 1e9;
    bad |= memcmp(host, back, bytes) != 0;
  }
  f->write_gbs = median(w, ROUNDS);
  f->read_gbs = median(rd, ROUNDS);
  free(host);
  free(back);
  gpulease_session_close(s, NULL);
  gpulease_lease_free(c, &l, NULL);
  if (bad) {
    fprintf(stderr, "bench: data read back differs from what was written\n");
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *addr = "127.0.0.1:5701", *pin = NULL;
  size_t mib = 256;
  int launches = 10000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--addr")) addr = argv[i + 1];
    else if (!strcmp(argv[i], "--pin-sha256")) pin = argv[i + 1];
    else if (!strcmp(argv[i], "--mib")) mib = (size_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--launches")) launches = atoi(argv[i + 1]);
  }
  if (mib < 1 || launches < 1) {
    fprintf(stderr, "usage: %s --addr HOST:PORT --pin-sha256 HEX [--mib N] [--launches N]\n",
            argv[0]);
    return 2;
  }
  size_t bytes = mib << 20;
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = addr;
  o.pin_sha256 = pin;
  o.insecure = pin == NULL;
  o.timeout_ms = 120000;
  gpulease_client *c;
  gpulease_error err;
  if (gpulease_client_connect(&o, &c, &err) != GPULEASE_OK) {
    fprintf(stderr, "bench: %s\n", err.message);
    return 1;
  }
  figures rem, loc;
  if (remote_figures(c, bytes, launches, &rem) != 0) return 1;
  gpulease_client_close(c);
  int have_local = local_figures(bytes, launches, &loc) == 0;
  printf("\nsessions over QUIC (loopback) vs the local CUDA driver, medians of %d rounds\n",
         ROUNDS);
  printf("| figure | remote (gpulease) | local (CUDA driver) | remote/local |\n");
  printf("| --- | ---: | ---: | ---: |\n");
#define ROW(name, fmt, field)                                                          \
  if (have_local)                                                                      \
    printf("| " name " | " fmt " | " fmt " | %.2fx |\n", rem.field, loc.field,         \
           rem.field / loc.field);                                                     \
  else                                                                                 \
    printf("| " name " | " fmt " | (no GPU here) | |\n", rem.field)
  ROW("LAUNCH+SYNC round trip, empty kernel (us)", "%.1f", launch_sync_us);
  ROW("pipelined launches per second", "%.0f", launches_per_s);
  ROW("MEM_WRITE GB/s", "%.2f", write_gbs);
  ROW("MEM_READ GB/s", "%.2f", read_gbs);
  printf("(%d launches per round; %zu MiB per transfer, pageable host memory)\n", launches, mib);
  return 0;
}
