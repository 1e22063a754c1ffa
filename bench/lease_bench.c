/*
 * lease_bench.c - issue 10's lease figures against one daemon: how long
 * LEASE_ALLOC takes, and gpulease_call() on a fresh lease (lease, GPU_SUBMIT
 * of a 256-thread kernel with 1 KiB back, free).
 *
 *   gl_bench_lease --addr HOST:PORT --pin-sha256 HEX [--label TEXT]
 *                  [--iters N] [--gap-ms MS] [--mib N]
 *
 * Then, three times: the VRAM a lease takes beyond its region (NVML's free
 * figure in the daemon's inventory before and after LEASE_ALLOC: the
 * context of a worker started for it, nothing with a warm worker) and
 * how long a freed lease's VRAM takes to be free again.
 *
 * Each of N rounds leases N MiB (default 1024), frees it, then waits
 * gap-ms (default 500) so that a daemon with warm workers
 * (gpuleased --warm-workers) has its pool full again; the same for N
 * calls. Prints p50 and p90 in milliseconds on one line per figure, with
 * the label (e.g. "warm" or "cold": run it against a daemon with
 * --warm-workers 2 and one with --warm-workers 0 in the same run).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "gpulease/gpulease.h"
#include "iota_ptx.h"
#include "median.h"


static double now_ms(void) { return (double)gl_mono_ns() / 1e6; }

static void pause_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
  const char *addr = NULL, *pin = NULL, *label = "";
  int iters = 20, gap_ms = 500;
  uint64_t mib = 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--addr")) addr = argv[i + 1];
    else if (!strcmp(argv[i], "--pin-sha256")) pin = argv[i + 1];
    else if (!strcmp(argv[i], "--label")) label = argv[i + 1];
    else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--gap-ms")) gap_ms = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--mib")) mib = strtoull(argv[i + 1], NULL, 10);
  }
  if (!addr || iters < 1 || iters > 1000 || gap_ms < 0 || mib < 1) {
    fprintf(stderr,
            "usage: %s --addr HOST:PORT --pin-sha256 HEX [--label TEXT] [--iters N] "
            "[--gap-ms MS] [--mib N]\n",
            argv[0]);
    return 2;
  }
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = addr;
  o.pin_sha256 = pin;
  o.insecure = pin == NULL;
  o.timeout_ms = 60000;
  gpulease_client *c;
  gpulease_error err;
  if (gpulease_client_connect(&o, &c, &err) != GPULEASE_OK) {
    fprintf(stderr, "bench: %s\n", err.message);
    return 1;
  }
  double *alloc = calloc((size_t)iters, sizeof *alloc), *call = calloc((size_t)iters, sizeof *call);
  for (int i = 0; i < iters; i++) {
    gpulease_lease l;
    double t0 = now_ms();
    if (gpulease_lease_alloc(c, GPULEASE_ANY_GPU, mib << 20, 60, &l, &err) != GPULEASE_OK) {
      fprintf(stderr, "bench: lease_alloc: %s\n", err.message);
      return 1;
    }
    alloc[i] = now_ms() - t0;
    gpulease_lease_free(c, &l, NULL);
    pause_ms(gap_ms);
  }
  float out[256];
  gpulease_call_arg a = {.kind = GPULEASE_CALL_OUT, .out = out, .size = sizeof out};
  gpulease_call_desc d;
  gpulease_call_desc_default(&d);
  d.image = k_iota_ptx;
  d.image_size = sizeof k_iota_ptx - 1;
  d.format = GPULEASE_IMAGE_PTX;
  d.kernel = "iota";
  d.grid[0] = d.grid[1] = d.grid[2] = 1;
  d.block[0] = 256;
  d.block[1] = d.block[2] = 1;
  d.args = &a;
  d.arg_count = 1;
  for (int i = 0; i < iters; i++) {
    memset(out, 0, sizeof out);
    double t0 = now_ms();
    if (gpulease_call(c, NULL, &d, NULL, &err) != GPULEASE_OK) {
      fprintf(stderr, "bench: call: %s\n", err.message);
      return 1;
    }
    call[i] = now_ms() - t0;
    for (int k = 0; k < 256; k++)
      if (out[k] != (float)(k + 1)) {
        fprintf(stderr, "bench: call's output is wrong at %d\n", k);
        return 1;
      }
    pause_ms(gap_ms);
  }
  /* VRAM a lease costs beyond its region, and how soon a freed lease's
   * VRAM is free again, as the daemon's inventory (NVML) says. */
  enum { VRAM_ROUNDS = 3 };
  double over[VRAM_ROUNDS], back[VRAM_ROUNDS];
  gpulease_inventory *inv = malloc(sizeof *inv);
  for (int k = 0; k < VRAM_ROUNDS; k++) {
    gpulease_lease l;
    if (gpulease_inventory_get(c, inv, &err) != GPULEASE_OK) return 1;
    uint64_t free0 = inv->gpus[0].free_vram_bytes;
    if (gpulease_lease_alloc(c, 0, mib << 20, 60, &l, &err) != GPULEASE_OK) return 1;
    if (gpulease_inventory_get(c, inv, &err) != GPULEASE_OK) return 1;
    over[k] = ((double)free0 - (double)inv->gpus[0].free_vram_bytes - (double)(mib << 20)) /
              (1024.0 * 1024.0);
    double t0 = now_ms();
    gpulease_lease_free(c, &l, NULL);
    back[k] = -1;
    while (now_ms() - t0 < 5000) {
      if (gpulease_inventory_get(c, inv, &err) != GPULEASE_OK) return 1;
      if (inv->gpus[0].free_vram_bytes + (16u << 20) >= free0) {
        back[k] = now_ms() - t0;
        break;
      }
      pause_ms(5);
    }
    pause_ms(gap_ms);
  }
  free(inv);
  printf("| %s: LEASE_ALLOC of %llu MiB (ms) | p50 %.2f | p90 %.2f |\n", label,
         (unsigned long long)mib, median(alloc, (size_t)iters), percentile(alloc, (size_t)iters, 0.9));
  printf("| %s: gpulease_call() on a fresh lease, 1 KiB out (ms) | p50 %.2f | p90 %.2f |\n",
         label, median(call, (size_t)iters), percentile(call, (size_t)iters, 0.9));
  printf("| %s: VRAM a lease takes beyond its region, NVML (MiB) | median %.0f | of %d |\n",
         label, median(over, VRAM_ROUNDS), VRAM_ROUNDS);
  printf("| %s: a freed lease's VRAM free again, NVML (ms) | median %.0f | of %d (-1: not in 5 s) "
         "|\n", label, median(back, VRAM_ROUNDS), VRAM_ROUNDS);
  free(alloc);
  free(call);
  gpulease_client_close(c);
  return 0;
}
