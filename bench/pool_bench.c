/*
 * pool_bench.c - benchmark of the client pool (issue 16, docs/scale-out.md):
 * gpulease_pool_map of CHUNKS small chunks over the first 1, 2, 4 ... of
 * the nodes of a nodes file, against the same CHUNKS submits sent one
 * after another to the first node on one lease, and (with a GPU in this
 * process's machine) the same chunks run with the local CUDA driver: copy
 * in, launch, copy out, synchronize, one after another. All in one run.
 *
 *   gl_bench_pool --nodes-file FILE --ptx chunk_mix.ptx [--chunks N]
 *                 [--chunk-bytes B] [--counts 1,2,4,6] [--class shared]
 *                 [--per-node N] [--reps R]
 *
 * The kernel is examples/kernels/chunk_mix.cu. Each configuration runs a
 * first (cold) map, then R more; the table gives the first and the median
 * of the rest: wall seconds end to end (the nodes' inventories, leases,
 * submits, frees), chunks/s, and a chunk's submit time p50 and p99. Every
 * map's output is checked against a CPU reference.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "gpu/cuda_api.h"
#include "gpulease/gpulease.h"
#include "median.h"

#define MAX_COUNTS 16

static uint32_t *g_in, *g_ref, *g_out;
static uint64_t g_words, g_chunk_words, g_nchunks;

static void make_data(uint64_t chunks, uint64_t chunk_bytes) {
  g_chunk_words = chunk_bytes / 4;
  g_words = chunks * g_chunk_words - 1; /* the last chunk one word short */
  g_nchunks = chunks;
  g_in = malloc(g_words * 4);
  g_ref = calloc(chunks * g_chunk_words, 4);
  g_out = malloc(chunks * g_chunk_words * 4);
  uint32_t x = 12345;
  for (uint64_t i = 0; i < g_words; i++) {
    x = x * 1664525u + 1013904223u;
    g_in[i] = x;
  }
  for (uint64_t c = 0; c < chunks; c++)
    for (uint64_t k = 0; k < g_chunk_words; k++) {
      uint64_t i = c * g_chunk_words + k;
      if (i < g_words) g_ref[i] = g_in[i] * 2654435761u + (uint32_t)c;
    }
}

static void desc_for(gpulease_map_desc *d, const uint8_t *ptx, size_t ptx_len,
                     gpulease_map_arg args[5]) {
  gpulease_map_desc_default(d);
  d->image = ptx;
  d->image_size = ptx_len;
  d->kernel = "chunk_mix";
  d->grid[0] = (uint32_t)((g_chunk_words + 255) / 256);
  d->block[0] = 256;
  memset(args, 0, 5 * sizeof *args);
  args[0].kind = GPULEASE_MAP_IN;
  args[1].kind = GPULEASE_MAP_OUT;
  args[2].kind = GPULEASE_MAP_BYTES;
  args[3].kind = GPULEASE_MAP_INDEX;
  args[4].kind = GPULEASE_MAP_SCALAR;
  args[4].size = 4;
  uint32_t w = (uint32_t)g_chunk_words;
  memcpy(args[4].value, &w, 4);
  d->args = args;
  d->arg_count = 5;
  d->input = g_in;
  d->input_bytes = g_words * 4;
  d->chunk_bytes = g_chunk_words * 4;
  d->output = g_out;
  d->output_bytes_per_chunk = g_chunk_words * 4;
}

/* The first n lines of the nodes file, into path. */
static int nodes_prefix(const char *file, int n, const char *path) {
  FILE *in = fopen(file, "r"), *out = fopen(path, "w");
  if (!in || !out) return -1;
  char line[512];
  int k = 0;
  while (k < n && fgets(line, sizeof line, in)) {
    if (line[0] == '#' || line[0] == '\n') continue;
    fputs(line, out);
    k++;
  }
  fclose(in);
  fclose(out);
  return k == n ? 0 : -1;
}

typedef struct {
  double first_s, med_s, med_rate, p50_ms, p99_ms;
  uint64_t retries;
  int ok;
} result;

/* The runs of one configuration: the first kept apart, the rest for
 * medians. */
typedef struct {
  double *secs, *p50, *p99;
  int reps;
} runs;

static void runs_init(runs *x, int reps) {
  x->reps = reps;
  x->secs = calloc((size_t)reps, sizeof *x->secs);
  x->p50 = calloc((size_t)reps, sizeof *x->p50);
  x->p99 = calloc((size_t)reps, sizeof *x->p99);
}

/* Run i (0: the first) took wall seconds, a chunk p50_ms and p99_ms. */
static void runs_add(runs *x, result *r, int i, double wall, double p50_ms, double p99_ms) {
  if (i == 0) {
    r->first_s = wall;
    return;
  }
  x->secs[i - 1] = wall;
  x->p50[i - 1] = p50_ms;
  x->p99[i - 1] = p99_ms;
}

static void runs_finish(runs *x, result *r) {
  r->med_s = median(x->secs, (size_t)x->reps);
  r->med_rate = (double)g_nchunks / r->med_s;
  r->p50_ms = median(x->p50, (size_t)x->reps);
  r->p99_ms = median(x->p99, (size_t)x->reps);
  free(x->secs);
  free(x->p50);
  free(x->p99);
}

static int run_pool(const char *nodes_file, int n, gpulease_lease_class cls, uint32_t per_node,
                    const uint8_t *ptx, size_t ptx_len, int reps, result *r) {
  char path[256];
  snprintf(path, sizeof path, "/tmp/gl_bench_pool_nodes_%d_%d", (int)getpid(), n);
  if (nodes_prefix(nodes_file, n, path) != 0) {
    fprintf(stderr, "the nodes file has fewer than %d nodes\n", n);
    return -1;
  }
  gpulease_pool_options po;
  gpulease_pool_options_default(&po);
  po.nodes_file = path;
  po.lease_class = cls;
  po.max_leases_per_node = per_node;
  gpulease_pool *p;
  gpulease_error err;
  if (gpulease_pool_open(&po, &p, &err) != GPULEASE_OK) {
    fprintf(stderr, "pool: %s\n", err.message);
    return -1;
  }
  runs x;
  runs_init(&x, reps);
  memset(r, 0, sizeof *r);
  r->ok = 1;
  for (int i = 0; i <= reps; i++) {
    gpulease_map_desc d;
    gpulease_map_arg args[5];
    desc_for(&d, ptx, ptx_len, args);
    memset(g_out, 0, g_nchunks * g_chunk_words * 4);
    gpulease_map_stats st = {.struct_version = GPULEASE_MAP_STATS_VERSION};
    uint64_t t0 = gl_mono_ns();
    gpulease_status s = gpulease_pool_map(p, &d, &st, &err);
    double wall = (double)(gl_mono_ns() - t0) / 1e9;
    if (s != GPULEASE_OK) {
      fprintf(stderr, "map over %d node(s): %s: %s\n", n, gpulease_status_name(s), err.message);
      r->ok = 0;
    } else if (memcmp(g_out, g_ref, g_nchunks * g_chunk_words * 4) != 0) {
      fprintf(stderr, "map over %d node(s): WRONG OUTPUT\n", n);
      r->ok = 0;
    }
    r->retries += st.retries;
    runs_add(&x, r, i, wall, st.chunk_p50_ms, st.chunk_p99_ms);
    gpulease_map_stats_release(&st);
  }
  runs_finish(&x, r);
  gpulease_pool_close(p);
  remove(path);
  return 0;
}

/* CHUNKS submits one after another on one lease of the first node. */
static int run_serial(const char *nodes_file, gpulease_lease_class cls, const uint8_t *ptx,
                      size_t ptx_len, int reps, result *r) {
  FILE *f = fopen(nodes_file, "r");
  char addr[300] = "", pin[128] = "";
  if (!f || fscanf(f, "%299s %127s", addr, pin) < 1) return -1;
  fclose(f);
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = addr;
  if (pin[0]) o.pin_sha256 = pin;
  else o.insecure = 1;
  gpulease_client *c;
  gpulease_error err;
  if (gpulease_client_connect(&o, &c, &err) != GPULEASE_OK) {
    fprintf(stderr, "serial: %s\n", err.message);
    return -1;
  }
  runs x;
  runs_init(&x, reps);
  double *lat = calloc(g_nchunks, sizeof *lat);
  memset(r, 0, sizeof *r);
  r->ok = 1;
  uint64_t out_off = (g_chunk_words * 4 + 255) / 256 * 256;
  for (int i = 0; i <= reps; i++) {
    uint64_t t0 = gl_mono_ns();
    gpulease_lease lease;
    gpulease_lease_opts lo = {.struct_version = GPULEASE_LEASE_OPTS_VERSION, .lease_class = cls};
    if (gpulease_lease_alloc_opts(c, GPULEASE_ANY_GPU, out_off * 2, 60, &lo, &lease, &err) !=
        GPULEASE_OK) {
      fprintf(stderr, "serial lease: %s\n", err.message);
      r->ok = 0;
      break;
    }
    for (uint64_t k = 0; k < g_nchunks; k++) {
      uint64_t off = k * g_chunk_words;
      uint64_t words = g_words - off < g_chunk_words ? g_words - off : g_chunk_words;
      uint32_t bytes = (uint32_t)(words * 4), idx = (uint32_t)k, w = (uint32_t)g_chunk_words;
      gpulease_param prm[5] = {gpulease_param_pointer(0), gpulease_param_pointer(out_off),
                               gpulease_param_scalar(&bytes, 4), gpulease_param_scalar(&idx, 4),
                               gpulease_param_scalar(&w, 4)};
      gpulease_submit_desc sd;
      gpulease_submit_desc_default(&sd);
      sd.image = ptx;
      sd.image_size = ptx_len;
      sd.kernel = "chunk_mix";
      sd.grid[0] = (uint32_t)((g_chunk_words + 255) / 256);
      sd.block[0] = 256;
      sd.input = g_in + off;
      sd.input_size = bytes;
      sd.output_offset = out_off;
      sd.output_size = g_chunk_words * 4;
      sd.params = prm;
      sd.param_count = 5;
      sd.use_params = 1;
      gpulease_submit_result res = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
      uint64_t s0 = gl_mono_ns();
      if (gpulease_submit(c, &lease, &sd, &res, &err) != GPULEASE_OK) {
        fprintf(stderr, "serial submit: %s\n", err.message);
        r->ok = 0;
        break;
      }
      lat[k] = (double)(gl_mono_ns() - s0) / 1e6;
      memcpy(g_out + off, res.output, g_chunk_words * 4);
      gpulease_submit_result_release(&res);
    }
    gpulease_lease_free(c, &lease, &err);
    double wall = (double)(gl_mono_ns() - t0) / 1e9;
    if (memcmp(g_out, g_ref, g_nchunks * g_chunk_words * 4) != 0) {
      fprintf(stderr, "serial: WRONG OUTPUT\n");
      r->ok = 0;
    }
    runs_add(&x, r, i, wall, percentile(lat, g_nchunks, 0.5), percentile(lat, g_nchunks, 0.99));
  }
  gpulease_client_close(c);
  runs_finish(&x, r);
  free(lat);
  return 0;
}

/* The same chunks with the local driver: HtoD, launch, DtoH, sync each. */
static int run_local(const uint8_t *ptx, size_t ptx_len, int reps, result *r) {
  gl_cuda cu;
  char why[256];
  if (gl_cuda_load(&cu, why, sizeof why) != 0) {
    printf("local driver: skipped (%s)\n", why);
    return -1;
  }
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fn;
  CUdeviceptr din, dout;
  char *img = malloc(ptx_len + 1);
  memcpy(img, ptx, ptx_len);
  img[ptx_len] = 0;
  uint64_t t0 = gl_mono_ns();
  if (cu.cuInit(0) || cu.cuDeviceGet(&dev, 0) || cu.cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cu.cuCtxSetCurrent(ctx) || cu.cuModuleLoadDataEx(&mod, img, 0, NULL, NULL) ||
      cu.cuModuleGetFunction(&fn, mod, "chunk_mix") || cu.cuMemAlloc(&din, g_chunk_words * 4) ||
      cu.cuMemAlloc(&dout, g_chunk_words * 4)) {
    printf("local driver: CUDA setup failed\n");
    free(img);
    return -1;
  }
  double setup = (double)(gl_mono_ns() - t0) / 1e9;
  free(img);
  runs x;
  runs_init(&x, reps);
  double *lat = calloc(g_nchunks, sizeof *lat);
  memset(r, 0, sizeof *r);
  r->ok = 1;
  for (int i = 0; i <= reps; i++) {
    uint64_t w0 = gl_mono_ns();
    for (uint64_t k = 0; k < g_nchunks; k++) {
      uint64_t off = k * g_chunk_words;
      uint64_t words = g_words - off < g_chunk_words ? g_words - off : g_chunk_words;
      unsigned bytes = (unsigned)(words * 4), idx = (unsigned)k, w = (unsigned)g_chunk_words;
      void *args[] = {&din, &dout, &bytes, &idx, &w};
      uint64_t s0 = gl_mono_ns();
      if (cu.cuMemcpyHtoD(din, g_in + off, bytes) ||
          cu.cuLaunchKernel(fn, (unsigned)((g_chunk_words + 255) / 256), 1, 1, 256, 1, 1, 0, NULL,
                            args, NULL) ||
          cu.cuMemcpyDtoH(g_out + off, dout, g_chunk_words * 4) || cu.cuCtxSynchronize()) {
        printf("local driver: a CUDA call failed\n");
        r->ok = 0;
        break;
      }
      lat[k] = (double)(gl_mono_ns() - s0) / 1e6;
    }
    double wall = (double)(gl_mono_ns() - w0) / 1e9;
    if (memcmp(g_out, g_ref, g_nchunks * g_chunk_words * 4) != 0) r->ok = 0;
    runs_add(&x, r, i, i == 0 ? wall + setup : wall, percentile(lat, g_nchunks, 0.5),
             percentile(lat, g_nchunks, 0.99));
  }
  runs_finish(&x, r);
  free(lat);
  return 0;
}

static void row(const char *label, const result *r, double base_rate) {
  printf("%-34s %9.3f %9.3f %10.0f %8.2fx %9.3f %9.3f %7llu %s\n", label, r->first_s, r->med_s,
         r->med_rate, base_rate > 0 ? r->med_rate / base_rate : 0, r->p50_ms, r->p99_ms,
         (unsigned long long)r->retries, r->ok ? "ok" : "WRONG");
}

int main(int argc, char **argv) {
  const char *nodes = NULL, *ptx_path = NULL, *counts_s = "1,2,4,6";
  uint64_t chunks = 1000, chunk_bytes = 4096;
  int reps = 5;
  uint32_t per_node = 4;
  gpulease_lease_class cls = GPULEASE_CLASS_SHARED;
  for (int i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      fprintf(stderr, "%s needs a value\n", a);
      return 2;
    }
    if (!strcmp(a, "--nodes-file")) nodes = v;
    else if (!strcmp(a, "--ptx")) ptx_path = v;
    else if (!strcmp(a, "--chunks")) chunks = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--chunk-bytes")) chunk_bytes = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--counts")) counts_s = v;
    else if (!strcmp(a, "--reps")) reps = atoi(v);
    else if (!strcmp(a, "--per-node")) per_node = (uint32_t)atoi(v);
    else if (!strcmp(a, "--class")) {
      if (gpulease_lease_class_parse(v, &cls) != GPULEASE_OK) return 2;
    } else {
      fprintf(stderr, "unknown option %s\n", a);
      return 2;
    }
  }
  if (!nodes || !ptx_path || chunks == 0 || chunk_bytes < 8 || chunk_bytes % 4 || reps < 1) {
    fprintf(stderr, "usage: gl_bench_pool --nodes-file FILE --ptx chunk_mix.ptx [--chunks N] "
                    "[--chunk-bytes B (multiple of 4)] [--counts 1,2,4,6] [--class shared] "
                    "[--per-node N] [--reps R]\n");
    return 2;
  }
  uint8_t *ptx;
  size_t ptx_len;
  if (gl_read_file(ptx_path, 1 << 24, &ptx, &ptx_len) != 0) {
    perror(ptx_path);
    return 1;
  }
  make_data(chunks, chunk_bytes);
  printf("pool map of %llu chunks of %llu bytes (the last one 4 bytes short), kernel chunk_mix, "
         "%s leases, up to %u per node; %d runs after the first, medians\n",
         (unsigned long long)chunks, (unsigned long long)chunk_bytes,
         gpulease_lease_class_name(cls), per_node, reps);
  printf("%-34s %9s %9s %10s %9s %9s %9s %7s\n", "configuration", "first-s", "median-s",
         "chunks/s", "vs-serial", "p50-ms", "p99-ms", "retries");
  result base, r;
  int rc = 0;
  if (run_serial(nodes, cls, ptx, ptx_len, reps, &base) != 0) return 1;
  row("serial submits, 1 daemon", &base, base.med_rate);
  rc |= !base.ok;
  if (run_local(ptx, ptx_len, reps, &r) == 0) {
    row("local driver, same chunks", &r, base.med_rate);
    rc |= !r.ok;
  }
  char *list = strdup(counts_s), *save = NULL;
  for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int n = atoi(t);
    if (n < 1) continue;
    if (run_pool(nodes, n, cls, per_node, ptx, ptx_len, reps, &r) != 0) {
      rc = 1;
      continue;
    }
    char label[64];
    snprintf(label, sizeof label, "pool map, %d daemon(s)", n);
    row(label, &r, base.med_rate);
    rc |= !r.ok;
  }
  free(list);
  free(ptx);
  return rc;
}
