/*
 * submit_rtt.c - benchmark: round-trip time of GPU_SUBMIT of the iota
 * kernel over QUIC, against a local baseline measured in the same run (the
 * same kernel launched, synchronized and read back with the CUDA driver in
 * this process, when a GPU is present).
 *
 *   gl_bench_submit --addr HOST:PORT --pin-sha256 HEX --ptx iota.ptx [--iters N]
 *
 * Prints medians (and p10/p90) in microseconds and the remote/local ratio.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "gpu/cuda_api.h"
#include "gpulease/gpulease.h"

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static uint64_t pct(uint64_t *v, size_t n, double p) {
  qsort(v, n, sizeof *v, cmp_u64);
  return v[(size_t)(p * (double)(n - 1) + 0.5)];
}

/* Local baseline: cuLaunchKernel + cuCtxSynchronize + cuMemcpyDtoH of the
 * output, like one GPU_SUBMIT without the network. Returns 0 and the
 * median in ns, or -1 without a GPU. */
static int local_baseline(const uint8_t *ptx, size_t ptx_len, int iters, uint64_t *median_ns,
                          uint64_t *launch_sync_ns) {
  gl_cuda cu;
  char err[256];
  if (gl_cuda_load(&cu, err, sizeof err) != 0) {
    printf("local baseline: skipped (%s)\n", err);
    return -1;
  }
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fn;
  CUdeviceptr buf;
  char *img = malloc(ptx_len + 1);
  memcpy(img, ptx, ptx_len);
  img[ptx_len] = 0;
  if (cu.cuInit(0) || cu.cuDeviceGet(&dev, 0) || cu.cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cu.cuCtxSetCurrent(ctx) || cu.cuModuleLoadDataEx(&mod, img, 0, NULL, NULL) ||
      cu.cuModuleGetFunction(&fn, mod, "iota") || cu.cuMemAlloc(&buf, 1024)) {
    printf("local baseline: CUDA setup failed\n");
    free(img);
    return -1;
  }
  free(img);
  uint64_t *t = calloc((size_t)iters, sizeof *t), *u = calloc((size_t)iters, sizeof *u);
  uint8_t out[1024];
  void *args[] = {&buf};
  for (int i = 0; i < iters + 10; i++) {
    uint64_t t0 = gl_mono_ns();
    cu.cuLaunchKernel(fn, 1, 1, 1, 256, 1, 1, 0, NULL, args, NULL);
    cu.cuCtxSynchronize();
    uint64_t t1 = gl_mono_ns();
    cu.cuMemcpyDtoH(out, buf, sizeof out);
    uint64_t t2 = gl_mono_ns();
    if (i >= 10) {
      t[i - 10] = t2 - t0;
      u[i - 10] = t1 - t0;
    }
  }
  float first;
  memcpy(&first, out + 4 * 255, 4);
  if (first != 256.0f) printf("local baseline: WRONG RESULT out[255]=%g\n", (double)first);
  *median_ns = pct(t, (size_t)iters, 0.5);
  *launch_sync_ns = pct(u, (size_t)iters, 0.5);
  free(t);
  free(u);
  return 0;
}

int main(int argc, char **argv) {
  const char *addr = "127.0.0.1:5701", *pin = NULL, *ptx_path = NULL;
  int iters = 100;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--addr")) addr = argv[i + 1];
    else if (!strcmp(argv[i], "--pin-sha256")) pin = argv[i + 1];
    else if (!strcmp(argv[i], "--ptx")) ptx_path = argv[i + 1];
    else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
  }
  if (!ptx_path || iters < 1) {
    fprintf(stderr, "usage: %s --addr HOST:PORT --pin-sha256 HEX --ptx iota.ptx [--iters N]\n",
            argv[0]);
    return 2;
  }
  uint8_t *ptx;
  size_t ptx_len;
  if (gl_read_file(ptx_path, 1 << 24, &ptx, &ptx_len) != 0) {
    perror(ptx_path);
    return 1;
  }
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = addr;
  o.pin_sha256 = pin;
  o.insecure = pin == NULL;
  gpulease_client *c;
  gpulease_error err;
  gpulease_lease lease;
  if (gpulease_client_connect(&o, &c, &err) != GPULEASE_OK ||
      gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 1 << 20, 120, &lease, &err) != GPULEASE_OK) {
    fprintf(stderr, "bench: %s: %s\n", gpulease_status_name(err.status), err.message);
    return 1;
  }
  gpulease_submit_desc d;
  gpulease_submit_desc_default(&d);
  d.image = ptx;
  d.image_size = ptx_len;
  d.kernel = "iota";
  d.block[0] = 256;
  d.output_size = 1024;
  uint64_t *rtt = calloc((size_t)iters, sizeof *rtt), *gpu = calloc((size_t)iters, sizeof *gpu);
  int bad = 0;
  for (int i = 0; i < iters + 5; i++) {
    gpulease_submit_result r = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
    uint64_t t0 = gl_mono_ns();
    gpulease_status st = gpulease_submit(c, &lease, &d, &r, &err);
    uint64_t t1 = gl_mono_ns();
    if (st != GPULEASE_OK) {
      fprintf(stderr, "bench: submit: %s: %s\n", gpulease_status_name(st), err.message);
      return 1;
    }
    float last;
    memcpy(&last, (uint8_t *)r.output + 1020, 4);
    bad += last != 256.0f;
    if (i >= 5) { /* the first calls load the module */
      rtt[i - 5] = t1 - t0;
      gpu[i - 5] = r.gpu_time_ns;
    }
    gpulease_submit_result_release(&r);
  }
  gpulease_lease_free(c, &lease, &err);
  gpulease_client_close(c);
  uint64_t p10 = pct(rtt, (size_t)iters, 0.1), p90 = pct(rtt, (size_t)iters, 0.9);
  uint64_t med = pct(rtt, (size_t)iters, 0.5);
  printf("GPU_SUBMIT iota (256 threads, 1 KiB out), %d calls on one lease over QUIC:\n", iters);
  printf("  round trip: median %.1f us (p10 %.1f, p90 %.1f); kernel GPU time median %.1f us; "
         "wrong results: %d\n",
         med / 1e3, p10 / 1e3, p90 / 1e3, pct(gpu, (size_t)iters, 0.5) / 1e3, bad);
  uint64_t local, launch_sync;
  if (local_baseline(ptx, ptx_len, 1000, &local, &launch_sync) == 0) {
    printf("local baseline (same kernel, this process, CUDA driver): launch+sync median %.1f us, "
           "launch+sync+read 1 KiB median %.1f us\n",
           launch_sync / 1e3, local / 1e3);
    printf("ratio remote/local (launch+sync+read): %.1fx\n", (double)med / (double)local);
  }
  free(rtt);
  free(gpu);
  free(ptx);
  return bad ? 1 : 0;
}
