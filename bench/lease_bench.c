/*
 * lease_bench.c - issue 10's lease figures against one daemon, gathered in
 * one table at the end.
 *
 *   gl_bench_lease --addr HOST:PORT --pin-sha256 HEX [--label TEXT]
 *                  [--iters N] [--gap-ms MS] [--mib N]
 *                  [--classes LIST] [--clients N] [--cycle-s S] [--cycle-mib M]
 *                  [--warmup-s S] [--max-mib M] [--max-leases N]
 *
 * Always (the default lease, isolated):
 *   - LEASE_ALLOC p50/p90: each of N rounds (--iters, default 20) leases
 *     --mib MiB (default 1024), frees it, then waits gap-ms (default 500)
 *     so that a daemon with warm workers (gpuleased --warm-workers) has its
 *     pool full again; the same for N gpulease_call()s on a fresh lease
 *     (lease, GPU_SUBMIT of a 256-thread kernel with 1 KiB back, free).
 *   - three times: the VRAM a lease takes beyond its region (NVML's free
 *     figure in the daemon's inventory before and after LEASE_ALLOC: the
 *     context of a worker started for it, nothing with a warm worker) and
 *     how long a freed lease's VRAM takes to be free again.
 * For each class of --classes (comma list, default "isolated"; e.g.
 * "isolated,shared"):
 *   - with --clients N (default 0: skipped): N threads, each with a client
 *     of its own, loop for --cycle-s seconds (default 5): lease
 *     --cycle-mib MiB (default 64, TTL 60) of the class, GPU_SUBMIT the
 *     iota kernel (output checked), free. Completed cycles/s, p50/p90 of a
 *     cycle and the failures by status (CAPACITY_EXCEEDED, BUSY... are
 *     counted; the thread sleeps 5 ms and goes on). A warm-up pass of
 *     --warmup-s seconds (default 2; 0: none) runs first and is not
 *     counted: the clients' first isolated leases find no spare worker
 *     (gpuleased reuses the workers of ended leases), so the measured pass
 *     is the steady state.
 *   - with --max-mib M (default 0: skipped): leases of M MiB (TTL 120, any
 *     GPU) one after another until one fails or --max-leases (default 400)
 *     are held; the average VRAM each held lease takes beyond its M MiB
 *     (NVML's free figure of the GPUs they are on, before and at the peak);
 *     then frees them all and times how soon that VRAM is free again
 *     (within 1% or 64 MiB of the figure before).
 *
 * Run it against a daemon with --warm-workers 2 and one with
 * --warm-workers 0 in the same run, with the label "warm" or "cold". A
 * benchmark: missing a target is not an error. Exits 1 when a call's output
 * was wrong, a connection failed or the figures of the default part could
 * not be taken; 2 on bad arguments.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "cycles.h"
#include "gpulease/gpulease.h"
#include "iota_ptx.h"
#include "median.h"

#define MIB (1024.0 * 1024.0)

/* ------------------------------------------------------------------------
 * The table printed at the end
 * ---------------------------------------------------------------------- */

typedef struct row {
  char figure[64];
  char cls[16];
  char value[32];
  char target[32];
} row;

enum { MAX_ROWS = 64 };
static row g_rows[MAX_ROWS];
static int g_nrows;

__attribute__((format(printf, 4, 5))) static void add_row(const char *figure, const char *cls,
                                                          const char *target, const char *fmt,
                                                          ...) {
  if (g_nrows == MAX_ROWS) return;
  row *r = &g_rows[g_nrows++];
  snprintf(r->figure, sizeof r->figure, "%s", figure);
  snprintf(r->cls, sizeof r->cls, "%s", cls);
  snprintf(r->target, sizeof r->target, "%s", target);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->value, sizeof r->value, fmt, ap);
  va_end(ap);
}

static void print_table(const char *label) {
  printf("\n== lease figures%s%s%s\n", *label ? " (" : "", label, *label ? ")" : "");
  printf("%-40s%-11s%-13s%s\n", "figure", "class", "value", "target");
  for (int i = 0; i < g_nrows; i++) {
    const row *r = &g_rows[i];
    /* A value wider than its column still keeps one space before the next. */
    printf("%-39s %-10s %-12s %s\n", r->figure, r->cls, r->value, r->target);
  }
}

/* Runs the cycles of one class on the n clients (cycles.c) and reports
 * them. 0, or -1 when an output was wrong or a connection failed. */
static int run_cycles(gpulease_client **clients, int n, gpulease_lease_class cls,
                      uint64_t mib, int secs, const char *label, bool counted) {
  const char *cname = gpulease_lease_class_name(cls);
  gl_cycle_stats st;
  gl_cycle_opts co = {.cls = cls, .bytes = mib << 20, .secs = secs};
  if (gl_cycles_run(clients, n, &co, &st) != 0 && st.clients == 0) {
    fprintf(stderr, "bench: cannot start the cycles' threads\n");
    return -1;
  }
  int started = st.clients;
  double rate = st.secs > 0 ? (double)st.cycles / st.secs : 0;
  double p50 = gl_cycle_quantile(&st, 0.5), p90 = gl_cycle_quantile(&st, 0.9);
  char fig[64], fails[512];
  gl_cycle_fails_format(&st, fails, sizeof fails);
  printf("| %s: %s: %d clients x %d s of alloc %llu MiB + submit + free | %.1f cycles/s "
         "(%zu in %.2f s) |",
         label, cname, started, secs, (unsigned long long)mib, rate, st.cycles, st.secs);
  if (st.cycles) printf(" cycle p50 %.2f ms | p90 %.2f ms |", p50, p90);
  printf(" failures %llu", (unsigned long long)st.nfail);
  if (st.nfail) printf(": %s", fails);
  printf(" |\n");
  if (st.first_msg[0]) printf("|   %s: first failure: %s |\n", cname, st.first_msg);
  if (!counted) printf("|   (warm-up: the clients' first leases, not in the table) |\n");

  const char *target = "-";
  if (counted) {
    if (started == 32 && cls == GPULEASE_CLASS_SHARED) target = ">= 100";
    else if (started == 32 && cls == GPULEASE_CLASS_ISOLATED) target = ">= 20";
    snprintf(fig, sizeof fig, "cycles/s, %d clients", started);
    add_row(fig, cname, target, "%.1f", rate);
    snprintf(fig, sizeof fig, "cycle p50 / p90 ms, %d clients", started);
    if (st.cycles) add_row(fig, cname, "-", "%.1f / %.1f", p50, p90);
    else add_row(fig, cname, "-", "none completed");
    snprintf(fig, sizeof fig, "cycle failures, %d clients", started);
    add_row(fig, cname, "-", "%llu", (unsigned long long)st.nfail);
  }
  gl_cycle_stats_free(&st);
  if (st.wrong) fprintf(stderr, "bench: %s: %llu cycles' output was wrong\n", cname,
                        (unsigned long long)st.wrong);
  if (st.conn_failed) fprintf(stderr, "bench: %s: a cycle's connection failed\n", cname);
  return st.wrong || st.conn_failed || started < n ? -1 : 0;
}

/* ------------------------------------------------------------------------
 * The most concurrent leases, their VRAM, and its give-back
 * ---------------------------------------------------------------------- */

/* Every GPU's free VRAM (NVML) into free_b[GPULEASE_MAX_GPUS]. */
static gpulease_status read_free(gpulease_client *c, gpulease_inventory *inv, uint64_t *free_b,
                                 gpulease_error *err) {
  gpulease_status st = gpulease_inventory_get(c, inv, err);
  if (st != GPULEASE_OK) return st;
  memset(free_b, 0, GPULEASE_MAX_GPUS * sizeof *free_b);
  for (uint32_t g = 0; g < inv->gpu_count && g < GPULEASE_MAX_GPUS; g++)
    free_b[g] = inv->gpus[g].free_vram_bytes;
  return GPULEASE_OK;
}

static uint64_t sum_used(const uint64_t *v, const unsigned char *used) {
  uint64_t s = 0;
  for (int g = 0; g < GPULEASE_MAX_GPUS; g++)
    if (used[g]) s += v[g];
  return s;
}

/* Waits (at most 5 s) until no warm worker is starting and the free VRAM
 * of every GPU has stopped moving, so that a measurement starts from rest. */
static void settle(gpulease_client *c, gpulease_inventory *inv) {
  gpulease_warm_pool_info pool = {.struct_version = GPULEASE_WARM_POOL_INFO_VERSION};
  uint64_t free_b[GPULEASE_MAX_GPUS];
  double t0 = gl_bench_now_ms(), last = -1;
  while (gl_bench_now_ms() - t0 < 5000) {
    uint32_t starting = 0;
    if (gpulease_warm_pool_get(c, &pool, NULL) == GPULEASE_OK)
      for (uint32_t g = 0; g < pool.gpu_count && g < GPULEASE_MAX_GPUS; g++)
        starting += pool.gpus[g].starting;
    if (read_free(c, inv, free_b, NULL) != GPULEASE_OK) return;
    double f = 0;
    for (int g = 0; g < GPULEASE_MAX_GPUS; g++) f += (double)free_b[g];
    double d = f - last;
    if (!starting && last >= 0 && d < 16 * MIB && d > -16 * MIB) return;
    last = f;
    gl_bench_pause_ms(100);
  }
}

/* One class: as many leases of mib MiB as the daemon grants (at most
 * max_leases), their VRAM overhead, the frees and the give-back. 0, or -1
 * when a connection failed. */
static int run_max(gpulease_client *c, gpulease_lease_class cls, uint64_t mib, int max_leases,
                   const char *label) {
  const char *cname = gpulease_lease_class_name(cls);
  gpulease_inventory *inv = malloc(sizeof *inv);
  gpulease_inventory_init(inv);
  gpulease_lease *ls = calloc((size_t)max_leases, sizeof *ls);
  if (!inv || !ls) {
    free(inv);
    free(ls);
    fprintf(stderr, "bench: out of memory\n");
    return -1;
  }
  int rc = 0;
  gpulease_error err;
  gpulease_status st;
  uint64_t before[GPULEASE_MAX_GPUS], peak[GPULEASE_MAX_GPUS], now_b[GPULEASE_MAX_GPUS];
  unsigned char used[GPULEASE_MAX_GPUS] = {0};
  settle(c, inv);
  if ((st = read_free(c, inv, before, &err)) != GPULEASE_OK) {
    fprintf(stderr, "bench: %s: inventory: %s\n", cname, err.message);
    free(inv);
    free(ls);
    return gl_bench_conn_error(st) ? -1 : 0;
  }
  memcpy(peak, before, sizeof peak);
  gpulease_lease_opts lo;
  gpulease_lease_opts_default(&lo);
  lo.lease_class = cls;
  int held = 0;
  char why[sizeof err.message + 32] = "";
  while (held < max_leases) {
    st = gpulease_lease_alloc_opts(c, GPULEASE_ANY_GPU, mib << 20, 120, &lo, &ls[held], &err);
    if (st != GPULEASE_OK) {
      snprintf(why, sizeof why, "%s: %s", gpulease_status_name(st), err.message);
      if (gl_bench_conn_error(st)) {
        rc = -1;
        gpulease_client_reconnect(c, NULL);
      }
      break;
    }
    if (ls[held].gpu_index < GPULEASE_MAX_GPUS) used[ls[held].gpu_index] = 1;
    held++;
    /* NVML's figure right after each grant: the peak is the last one, taken
     * before the failing alloc (whose worker may still be going away). */
    if ((st = read_free(c, inv, now_b, &err)) == GPULEASE_OK) memcpy(peak, now_b, sizeof peak);
  }
  char fig[64];
  printf("| %s: %s: most concurrent %llu MiB leases | %d%s | %s |\n", label, cname,
         (unsigned long long)mib, held, held == max_leases ? "+ (the --max-leases cap)" : "",
         why[0] ? why : "no failure");
  snprintf(fig, sizeof fig, "most concurrent %llu MiB leases", (unsigned long long)mib);
  add_row(fig, cname, mib == 256 ? (cls == GPULEASE_CLASS_SHARED ? "200" : "-") : "-", "%d%s",
          held, held == max_leases ? "+" : "");
  if (held == 0) {
    free(inv);
    free(ls);
    return rc;
  }
  double over = ((double)sum_used(before, used) - (double)sum_used(peak, used) -
                 (double)held * (double)(mib << 20)) /
                (double)held / MIB;
  printf("| %s: %s: VRAM a lease takes beyond its region, NVML, average of %d held (MiB) | "
         "%.1f |\n",
         label, cname, held, over);
  snprintf(fig, sizeof fig, "VRAM overhead per lease MiB (%d held)", held);
  add_row(fig, cname,
          cls == GPULEASE_CLASS_SHARED     ? "<= 16"
          : cls == GPULEASE_CLASS_ISOLATED ? "<= 320"
                                           : "-",
          "%.1f", over);

  /* Free them all from this thread, then poll until the VRAM is back. */
  double t0 = gl_bench_now_ms();
  int free_fail = 0;
  for (int i = 0; i < held; i++) {
    st = gpulease_lease_free(c, &ls[i], &err);
    if (st != GPULEASE_OK) {
      if (!free_fail++) fprintf(stderr, "bench: %s: lease_free: %s: %s\n", cname,
                                gpulease_status_name(st), err.message);
      if (gl_bench_conn_error(st)) {
        rc = -1;
        if (gpulease_client_reconnect(c, NULL) != GPULEASE_OK) break;
      }
    }
  }
  double t_free = gl_bench_now_ms() - t0;
  /* Two moments: the leases' own VRAM (their regions) free again, and
   * every byte back, contexts included (an isolated lease's worker may wait
   * as a spare for GL_POOL_SPARE_IDLE_S before its context goes). */
  uint64_t want = sum_used(before, used);
  uint64_t tol = want / 100 > (64u << 20) ? want / 100 : (64u << 20);
  uint64_t regions = (uint64_t)held * (mib << 20);
  uint64_t want_regions = sum_used(peak, used) + (regions > tol ? regions - tol : 0);
  double back = -1, back_regions = -1;
  while (gl_bench_now_ms() - t0 < 20000) {
    if ((st = read_free(c, inv, now_b, &err)) != GPULEASE_OK) {
      if (gl_bench_conn_error(st)) rc = -1;
      break;
    }
    uint64_t f = sum_used(now_b, used);
    if (back_regions < 0 && f >= want_regions) back_regions = gl_bench_now_ms() - t0;
    if (f + tol >= want) {
      back = gl_bench_now_ms() - t0;
      break;
    }
    gl_bench_pause_ms(10);
  }
  if (back_regions >= 0)
    printf("| %s: %s: the leases' own %llu MiB free again after %.0f ms |\n", label, cname,
           (unsigned long long)(regions >> 20), back_regions);
  snprintf(fig, sizeof fig, "leases' own VRAM back, %d freed, ms", held);
  if (back_regions >= 0) add_row(fig, cname, "<= 1000", "%.0f", back_regions);
  else add_row(fig, cname, "<= 1000", "> 20000");
  printf("| %s: %s: freeing %d leases took %.1f ms (%d failed) |\n", label, cname, held, t_free,
         free_fail);
  if (back >= 0)
    printf("| %s: %s: VRAM back after freeing %d leases: %.0f ms |\n", label, cname, held, back);
  else
    printf("| %s: %s: VRAM not back after 20 s (freeing %d leases) |\n", label, cname, held);
  snprintf(fig, sizeof fig, "freeing %d leases ms", held);
  add_row(fig, cname, "-", "%.0f", t_free);
  snprintf(fig, sizeof fig, "all VRAM back (contexts too), %d freed, ms", held);
  if (back >= 0) add_row(fig, cname, "-", "%.0f", back);
  else add_row(fig, cname, "-", "> 20000");
  free(inv);
  free(ls);
  return rc;
}

/* ------------------------------------------------------------------------ */

static int usage(const char *argv0) {
  fprintf(stderr,
          "usage: %s --addr HOST:PORT --pin-sha256 HEX [--label TEXT] [--iters N] "
          "[--gap-ms MS] [--mib N]\n"
          "       [--classes LIST] [--clients N] [--cycle-s S] [--cycle-mib M] "
          "[--warmup-s S] [--max-mib M] [--max-leases N]\n",
          argv0);
  return 2;
}

int main(int argc, char **argv) {
  const char *addr = NULL, *pin = NULL, *label = "", *classes = "isolated";
  const char *token = NULL;
  int iters = 20, gap_ms = 500, clients = 0, cycle_s = 5, max_leases = 400, warmup_s = 2;
  uint64_t mib = 1024, cycle_mib = 64, max_mib = 0;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return usage(argv[0]);
    const char *v = argv[i + 1];
    if (!strcmp(argv[i], "--addr")) addr = v;
    else if (!strcmp(argv[i], "--pin-sha256")) pin = v;
    else if (!strcmp(argv[i], "--token")) token = v;
    else if (!strcmp(argv[i], "--label")) label = v;
    else if (!strcmp(argv[i], "--iters")) iters = atoi(v);
    else if (!strcmp(argv[i], "--gap-ms")) gap_ms = atoi(v);
    else if (!strcmp(argv[i], "--mib")) mib = strtoull(v, NULL, 10);
    else if (!strcmp(argv[i], "--classes")) classes = v;
    else if (!strcmp(argv[i], "--clients")) clients = atoi(v);
    else if (!strcmp(argv[i], "--cycle-s")) cycle_s = atoi(v);
    else if (!strcmp(argv[i], "--warmup-s")) warmup_s = atoi(v);
    else if (!strcmp(argv[i], "--cycle-mib")) cycle_mib = strtoull(v, NULL, 10);
    else if (!strcmp(argv[i], "--max-mib")) max_mib = strtoull(v, NULL, 10);
    else if (!strcmp(argv[i], "--max-leases")) max_leases = atoi(v);
    else return usage(argv[0]);
  }
  if (!addr || iters < 1 || iters > 1000 || gap_ms < 0 || mib < 1 || mib > (1u << 24) ||
      clients < 0 || clients > 1024 || cycle_s < 1 || cycle_s > 3600 || warmup_s < 0 ||
      warmup_s > 600 || cycle_mib < 1 ||
      cycle_mib > (1u << 24) || max_mib > (1u << 24) || max_leases < 1 || max_leases > 100000)
    return usage(argv[0]);
  /* --classes: the new parts' classes, in order. */
  gpulease_lease_class cls[8];
  int ncls = 0;
  {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", classes);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      if (ncls == (int)(sizeof cls / sizeof *cls) ||
          gpulease_lease_class_parse(tok, &cls[ncls]) != GPULEASE_OK) {
        fprintf(stderr, "bench: --classes: unknown class or too many: %s\n", tok);
        return usage(argv[0]);
      }
      ncls++;
    }
    if (!ncls) return usage(argv[0]);
  }
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = addr;
  o.pin_sha256 = pin;
  o.bearer_token = token; /* a daemon run with --auth token */
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
    double t0 = gl_bench_now_ms();
    if (gpulease_lease_alloc(c, GPULEASE_ANY_GPU, mib << 20, 60, &l, &err) != GPULEASE_OK) {
      fprintf(stderr, "bench: lease_alloc: %s\n", err.message);
      return 1;
    }
    alloc[i] = gl_bench_now_ms() - t0;
    gpulease_lease_free(c, &l, NULL);
    gl_bench_pause_ms(gap_ms);
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
    double t0 = gl_bench_now_ms();
    if (gpulease_call(c, NULL, &d, NULL, &err) != GPULEASE_OK) {
      fprintf(stderr, "bench: call: %s\n", err.message);
      return 1;
    }
    call[i] = gl_bench_now_ms() - t0;
    for (int k = 0; k < 256; k++)
      if (out[k] != (float)(k + 1)) {
        fprintf(stderr, "bench: call's output is wrong at %d\n", k);
        return 1;
      }
    gl_bench_pause_ms(gap_ms);
  }
  /* VRAM a lease costs beyond its region, and how soon a freed lease's
   * VRAM is free again, as the daemon's inventory (NVML) says. */
  enum { VRAM_ROUNDS = 3 };
  double over[VRAM_ROUNDS], back[VRAM_ROUNDS];
  gpulease_inventory *inv = malloc(sizeof *inv);
  gpulease_inventory_init(inv);
  for (int k = 0; k < VRAM_ROUNDS; k++) {
    gpulease_lease l;
    if (gpulease_inventory_get(c, inv, &err) != GPULEASE_OK) return 1;
    uint64_t free0 = inv->gpus[0].free_vram_bytes;
    if (gpulease_lease_alloc(c, 0, mib << 20, 60, &l, &err) != GPULEASE_OK) return 1;
    if (gpulease_inventory_get(c, inv, &err) != GPULEASE_OK) return 1;
    over[k] = ((double)free0 - (double)inv->gpus[0].free_vram_bytes - (double)(mib << 20)) / MIB;
    double t0 = gl_bench_now_ms();
    gpulease_lease_free(c, &l, NULL);
    back[k] = -1;
    while (gl_bench_now_ms() - t0 < 5000) {
      if (gpulease_inventory_get(c, inv, &err) != GPULEASE_OK) return 1;
      if (inv->gpus[0].free_vram_bytes + (16u << 20) >= free0) {
        back[k] = gl_bench_now_ms() - t0;
        break;
      }
      gl_bench_pause_ms(5);
    }
    gl_bench_pause_ms(gap_ms);
  }
  free(inv);
  double alloc50 = median(alloc, (size_t)iters), alloc90 = percentile(alloc, (size_t)iters, 0.9);
  double call50 = median(call, (size_t)iters), call90 = percentile(call, (size_t)iters, 0.9);
  double over50 = median(over, VRAM_ROUNDS), back50 = median(back, VRAM_ROUNDS);
  printf("| %s: LEASE_ALLOC of %llu MiB (ms) | p50 %.2f | p90 %.2f |\n", label,
         (unsigned long long)mib, alloc50, alloc90);
  printf("| %s: gpulease_call() on a fresh lease, 1 KiB out (ms) | p50 %.2f | p90 %.2f |\n",
         label, call50, call90);
  printf("| %s: VRAM a lease takes beyond its region, NVML (MiB) | median %.0f | of %d |\n",
         label, over50, VRAM_ROUNDS);
  printf("| %s: a freed lease's VRAM free again, NVML (ms) | median %.0f | of %d (-1: not in 5 s) "
         "|\n", label, back50, VRAM_ROUNDS);
  fflush(stdout);
  const char *iso = gpulease_lease_class_name(GPULEASE_CLASS_ISOLATED);
  char fig[64];
  snprintf(fig, sizeof fig, "alloc p50 / p90 ms, %llu MiB", (unsigned long long)mib);
  add_row(fig, iso, "<= 5 (warm)", "%.1f / %.1f", alloc50, alloc90);
  add_row("fresh-lease call p50 / p90 ms", iso, "<= 10 (warm)", "%.1f / %.1f", call50, call90);
  add_row("VRAM overhead per lease MiB (1)", iso, "<= 320", "%.0f", over50);
  if (back50 >= 0) add_row("VRAM back after freeing 1 ms", iso, "<= 1000", "%.0f", back50);
  else add_row("VRAM back after freeing 1 ms", iso, "<= 1000", "> 5000");
  free(alloc);
  free(call);

  int rc = 0;
  if (clients > 0) {
    /* One client per thread, connected before the clock starts. */
    gpulease_client **cl = calloc((size_t)clients, sizeof *cl);
    int connected = cl ? gl_clients_connect(&o, clients, 8, cl, &err) : 0;
    if (cl && connected < clients)
      fprintf(stderr, "bench: %d of %d clients connected: %s\n", connected, clients, err.message);
    if (!cl || connected < clients) {
      rc = 1;
    } else {
      for (int i = 0; i < ncls; i++) {
        if (i > 0) gl_bench_pause_ms(gap_ms);
        /* Steady state: a warm-up pass first (the clients' first leases
         * find no spare worker yet), then the measured one. */
        if (warmup_s > 0 &&
            run_cycles(cl, clients, cls[i], cycle_mib, warmup_s, "warm-up", false) != 0)
          rc = 1;
        if (run_cycles(cl, clients, cls[i], cycle_mib, cycle_s, label, true) != 0) rc = 1;
        fflush(stdout);
      }
    }
    if (cl) gl_clients_close(cl, clients);
    free(cl);
  }
  if (max_mib > 0) {
    for (int i = 0; i < ncls; i++) {
      gl_bench_pause_ms(gap_ms);
      if (run_max(c, cls[i], max_mib, max_leases, label) != 0) rc = 1;
      fflush(stdout);
    }
  }
  print_table(label);
  gpulease_client_close(c);
  return rc;
}
