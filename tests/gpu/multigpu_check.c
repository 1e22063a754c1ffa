/*
 * multigpu_check.c - one daemon driving every GPU of a node (issue 17), and
 * the client pool on the node (issue 16), on a machine with several GPUs;
 * prints one table. With --emu it runs the same on emulated GPUs (--emu-gpus),
 * without nvidia-smi, so the program itself is tested without a GPU.
 *
 *   multigpu_check BUILD_DIR [--emu | --pool-only]
 *
 * Rows: (1) the inventory against nvidia-smi (UUID, name, VRAM, compute
 * capability; free VRAM within 1% of NVML's); (2) placement: spread puts
 * 2N leases evenly on N GPUs, pack fills GPU 0 first, a lease asked for
 * an index or a UUID lands there; (3) one ~1 s kernel on each GPU at once
 * takes about one kernel's time; (4) isolation: an out-of-bounds kernel on
 * GPU 0 leaves a session's data on GPU 1 intact, a device lease on GPU 1
 * leaves GPU 0 leasable, a hung kernel on GPU 0 killed at its TTL leaves
 * GPU 1 serving; (5) accounting: 1,000 alloc/submit/free cycles over all
 * GPUs leave NVML's free VRAM at its baseline and the workers at the warm
 * pool's size; (6) the pool: 1,000 chunks on the node's GPUs (spread)
 * against one GPU (pack), and over two daemons with one killed mid-run.
 * Exit 0 when every row passes.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "gpulease/gpulease.h"
#include "spawn_daemon.h"

static const char *g_build;
static bool g_emu;
static int g_fail, g_pass;
static char g_tmp[64];

/* ---- the table ------------------------------------------------------------ */

static void row(bool ok, const char *item, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void row(bool ok, const char *item, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  printf("| %-4s | %-44s | %s\n", ok ? "PASS" : "FAIL", item, buf);
  fflush(stdout);
  if (ok) g_pass++;
  else g_fail++;
}

/* ---- daemons -------------------------------------------------------------- */

typedef struct {
  pid_t pid;
  char dir[128], addr[64], fp[80];
} daemon_t;

static int daemon_start(daemon_t *d, const char *name, const char *const *extra) {
  memset(d, 0, sizeof *d);
  snprintf(d->dir, sizeof d->dir, "%s/%s", g_tmp, name);
  mkdir(d->dir, 0700);
  char ready[200], logf[200], bin[512];
  snprintf(ready, sizeof ready, "%s/ready", d->dir);
  snprintf(logf, sizeof logf, "%s/log", d->dir);
  unlink(ready); /* a daemon of that name before this one left its own */
  snprintf(bin, sizeof bin, "%s/src/daemon/gpuleased", g_build);
  const char *argv[48];
  int n = 0;
  argv[n++] = bin;
  argv[n++] = "--listen";
  argv[n++] = "127.0.0.1:0";
  argv[n++] = "--state-dir";
  argv[n++] = d->dir;
  argv[n++] = "--ready-file";
  argv[n++] = ready;
  argv[n++] = "--max-ttl";
  argv[n++] = "600";
  if (g_emu) {
    argv[n++] = "--device";
    argv[n++] = "emu";
    argv[n++] = "--emu-gpus";
    argv[n++] = "2";
    argv[n++] = "--emu-vram";
    argv[n++] = "2G";
  } else {
    argv[n++] = "--device";
    argv[n++] = "cuda";
  }
  for (int i = 0; extra && extra[i] && n < 46; i++) argv[n++] = extra[i];
  argv[n] = NULL;
  if (gl_spawn_daemon(argv, ready, logf, &d->pid, d->addr, sizeof d->addr, d->fp) == 0)
    return 0;
  fprintf(stderr, "daemon %s did not start (see %s)\n", name, logf);
  return -1;
}

static void daemon_stop(daemon_t *d, int sig) {
  if (d->pid <= 0) return;
  kill(d->pid, sig);
  int st;
  waitpid(d->pid, &st, 0);
  d->pid = 0;
}

/* Live children (workers) of the daemon. */
static int daemon_children(const daemon_t *d) {
  char cmd[128], line[64];
  snprintf(cmd, sizeof cmd, "pgrep -P %d | wc -l", (int)d->pid);
  FILE *p = popen(cmd, "r");
  int n = -1;
  if (p && fgets(line, sizeof line, p)) n = atoi(line);
  if (p) pclose(p);
  return n;
}

static gpulease_client *connect_to(const daemon_t *d) {
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = d->addr;
  o.pin_sha256 = d->fp;
  o.timeout_ms = 60000;
  o.no_local = 1;
  gpulease_client *c = NULL;
  gpulease_error e;
  if (gpulease_client_connect(&o, &c, &e) != GPULEASE_OK) {
    fprintf(stderr, "connect %s: %s\n", d->addr, e.message);
    return NULL;
  }
  return c;
}

/* ---- kernels -------------------------------------------------------------- */

static char *read_ptx(const char *name, size_t *len) {
  char path[512];
  snprintf(path, sizeof path, "%s/kernels/%s.ptx", g_build, name);
  uint8_t *p;
  if (gl_read_file(path, 1 << 22, &p, len) != 0) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(2);
  }
  return (char *)p;
}

static char *g_iota, *g_busy, *g_spin, *g_oob, *g_mix;
static size_t g_iota_len, g_busy_len, g_spin_len, g_oob_len, g_mix_len;

/* GPU_SUBMIT of `kernel` with the region's pointer and optional u64 scalar. */
static gpulease_status submit(gpulease_client *c, const gpulease_lease *l, const char *image,
                              size_t len, const char *kernel, const uint64_t *scalar,
                              uint32_t out_bytes, gpulease_error *e) {
  gpulease_submit_desc d;
  gpulease_submit_desc_default(&d);
  d.image = image;
  d.image_size = len;
  d.kernel = kernel;
  d.block[0] = strcmp(kernel, "iota") == 0 ? 256 : 1;
  gpulease_param p[2] = {gpulease_param_pointer(0)};
  if (scalar) {
    p[1] = gpulease_param_scalar(scalar, 8);
    d.params = p;
    d.param_count = 2;
    d.use_params = 1;
  }
  d.output_size = out_bytes;
  gpulease_submit_result r = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
  gpulease_status st = gpulease_submit(c, l, &d, &r, e);
  if (st == GPULEASE_OK) gpulease_submit_result_release(&r);
  return st;
}

/* ---- nvidia-smi ----------------------------------------------------------- */

typedef struct {
  char uuid[96], name[96], cc[16];
  double total_mib, free_mib;
} smi_gpu;

static int smi_query(smi_gpu *g, int max) {
  FILE *p = popen("nvidia-smi --query-gpu=uuid,name,memory.total,memory.free,compute_cap "
                  "--format=csv,noheader,nounits",
                  "r");
  if (!p) return -1;
  char line[512];
  int n = 0;
  while (n < max && fgets(line, sizeof line, p)) {
    char *f[5];
    char *s = line, *save = NULL;
    int k = 0;
    for (char *t = strtok_r(s, ",", &save); t && k < 5; t = strtok_r(NULL, ",", &save)) {
      while (*t == ' ') t++;
      char *z = t + strlen(t);
      while (z > t && (z[-1] == ' ' || z[-1] == '\n')) *--z = 0;
      f[k++] = t;
    }
    if (k < 5) continue;
    snprintf(g[n].uuid, sizeof g[n].uuid, "%s", f[0]);
    snprintf(g[n].name, sizeof g[n].name, "%s", f[1]);
    g[n].total_mib = atof(f[2]);
    g[n].free_mib = atof(f[3]);
    snprintf(g[n].cc, sizeof g[n].cc, "%s", f[4]);
    n++;
  }
  pclose(p);
  return n;
}

/* Free VRAM per GPU in MiB: nvidia-smi's (NVML), or on --emu the inventory's. */
static int free_mib(gpulease_client *c, double *out, int max) {
  if (!g_emu) {
    smi_gpu g[16];
    int n = smi_query(g, 16);
    for (int i = 0; i < n && i < max; i++) out[i] = g[i].free_mib;
    return n;
  }
  static gpulease_inventory inv = {.struct_version = GPULEASE_INVENTORY_VERSION};
  gpulease_error e;
  if (gpulease_inventory_get(c, &inv, &e) != GPULEASE_OK) return -1;
  for (uint32_t i = 0; i < inv.gpu_count && (int)i < max; i++)
    out[i] = (double)inv.gpus[i].free_vram_bytes / 1048576.0;
  return (int)inv.gpu_count;
}

/* ---- 1. inventory --------------------------------------------------------- */

static gpulease_inventory g_inv = {.struct_version = GPULEASE_INVENTORY_VERSION};

static void check_inventory(gpulease_client *c) {
  gpulease_error e;
  if (gpulease_inventory_get(c, &g_inv, &e) != GPULEASE_OK) {
    row(false, "1 inventory", "%s", e.message);
    return;
  }
  if (g_emu) {
    row(g_inv.gpu_count == 2, "1 inventory", "%u emulated GPUs (no nvidia-smi with --emu)",
        g_inv.gpu_count);
    return;
  }
  smi_gpu s[16];
  int n = smi_query(s, 16);
  bool ok = n == (int)g_inv.gpu_count && n >= 2;
  double worst = 0;
  for (int i = 0; i < n && ok; i++) {
    const gpulease_gpu_info *g = &g_inv.gpus[i];
    char cc[16];
    snprintf(cc, sizeof cc, "%u.%u", g->cc_major, g->cc_minor);
    double tot = (double)g->total_vram_bytes / 1048576.0, fr = (double)g->free_vram_bytes / 1048576.0;
    double dfree = fabs(fr - s[i].free_mib) / s[i].total_mib;
    if (dfree > worst) worst = dfree;
    bool gi = strcmp(g->uuid, s[i].uuid) == 0 && strcmp(g->name, s[i].name) == 0 &&
              strcmp(cc, s[i].cc) == 0 && fabs(tot - s[i].total_mib) <= 1.0 && dfree <= 0.01;
    printf("       GPU %d: %s %s cc %s, %.0f MiB (nvidia-smi %.0f), free %.0f MiB (nvidia-smi %.0f)\n",
           i, g->uuid, g->name, cc, tot, s[i].total_mib, fr, s[i].free_mib);
    ok = ok && gi;
  }
  row(ok, "1 inventory = nvidia-smi", "%d GPUs: UUID, name, VRAM, compute capability equal; free "
      "VRAM within %.3f%% of NVML's (<= 1%%)", n, worst * 100);
}

/* ---- 2. placement --------------------------------------------------------- */

static int lease_n(gpulease_client *c, int n, uint32_t gpu, uint64_t bytes, gpulease_lease *out,
                   int *per_gpu, gpulease_lease_class cls) {
  gpulease_error e;
  gpulease_lease_opts lo = {.struct_version = GPULEASE_LEASE_OPTS_VERSION, .lease_class = cls};
  for (int i = 0; i < n; i++) {
    if (gpulease_lease_alloc_opts(c, gpu, bytes, 120, &lo, &out[i], &e) != GPULEASE_OK) {
      fprintf(stderr, "lease %d: %s\n", i, e.message);
      return i;
    }
    per_gpu[out[i].gpu_index]++;
  }
  return n;
}

static void free_n(gpulease_client *c, gpulease_lease *l, int n) {
  gpulease_error e;
  for (int i = 0; i < n; i++) gpulease_lease_free(c, &l[i], &e);
}

static void check_placement(gpulease_client *spread) {
  int ng = (int)g_inv.gpu_count;
  gpulease_lease l[64];
  int per[64] = {0};
  int got = lease_n(spread, 2 * ng, GPULEASE_ANY_GPU, 256 << 20, l, per, GPULEASE_CLASS_ISOLATED);
  bool ok = got == 2 * ng;
  char desc[256] = "";
  size_t dl = 0;
  for (int g = 0; g < ng; g++) {
    ok = ok && per[g] == 2;
    dl += (size_t)snprintf(desc + dl, sizeof desc - dl, "%sGPU %d: %d", g ? ", " : "", g, per[g]);
  }
  free_n(spread, l, got);
  row(ok, "2 --placement spread: 2N leases on N GPUs", "%d isolated leases of 256 MiB: %s", got, desc);

  daemon_t dp;
  const char *px[] = {"--placement", "pack", "--warm-workers", "0", NULL};
  if (daemon_start(&dp, "pack", px) != 0) {
    row(false, "2 --placement pack", "the daemon did not start");
    return;
  }
  gpulease_client *c = connect_to(&dp);
  memset(per, 0, sizeof per);
  got = c ? lease_n(c, 2 * ng, GPULEASE_ANY_GPU, 256 << 20, l, per, GPULEASE_CLASS_ISOLATED) : 0;
  row(got == 2 * ng && per[0] == 2 * ng, "2 --placement pack: GPU 0 first",
      "%d isolated leases of 256 MiB: %d on GPU 0", got, per[0]);
  if (c) {
    free_n(c, l, got);
    gpulease_client_close(c);
  }
  daemon_stop(&dp, SIGTERM);

  /* by index, and by UUID through the CLI (it resolves UUIDs from the inventory) */
  gpulease_lease li;
  gpulease_error e;
  uint32_t last = (uint32_t)ng - 1;
  bool by_index = gpulease_lease_alloc(spread, last, 64 << 20, 60, &li, &e) == GPULEASE_OK &&
                  li.gpu_index == last;
  if (by_index) gpulease_lease_free(spread, &li, &e);
  char cmd[1024], out[4096] = "";
  bool by_uuid = false;
  snprintf(cmd, sizeof cmd, "'%s/src/cli/gpulease' --addr %s --pin-sha256 %s --json lease alloc --vram 64M --ttl 30 --gpu %s",
           g_build, getenv("GL_MG_SPREAD_ADDR"), getenv("GL_MG_SPREAD_FP"), g_inv.gpus[last].uuid);
  FILE *p = popen(cmd, "r");
  if (p) {
    size_t k = fread(out, 1, sizeof out - 1, p);
    out[k] = 0;
    pclose(p);
    char want[64];
    snprintf(want, sizeof want, "\"gpu_index\": %u", last);
    by_uuid = strstr(out, want) != NULL;
    /* free it: "lease_id": N, "secret": "HEX" */
    char *id = strstr(out, "\"lease_id\": "), *sec = strstr(out, "\"secret\": \"");
    if (id && sec) {
      gpulease_lease lf = {0};
      lf.id = strtoull(id + 12, NULL, 10);
      char hex[81];
      memcpy(hex, sec + 11, 80);
      hex[80] = 0;
      if (gpulease_secret_from_hex(hex, lf.secret) == GPULEASE_OK) gpulease_lease_free(spread, &lf, &e);
    }
  }
  row(by_index && by_uuid, "2 a lease asked by index or UUID lands there",
      "--gpu %u: %s; --gpu %s: %s", last, by_index ? "GPU matches" : "WRONG", g_inv.gpus[last].uuid,
      by_uuid ? "GPU matches" : out);
}

/* ---- 3. concurrency ------------------------------------------------------- */

typedef struct {
  const daemon_t *d;
  uint32_t gpu;
  uint64_t cycles;
  double secs;
  gpulease_status st;
  pthread_barrier_t *bar;
  char msg[256];
} busy_job;

static void *busy_main(void *arg) {
  busy_job *b = arg;
  gpulease_client *c = connect_to(b->d);
  gpulease_lease l;
  gpulease_error e;
  b->st = GPULEASE_DISCONNECTED;
  if (!c) return NULL;
  b->st = gpulease_lease_alloc(c, b->gpu, 16 << 20, 120, &l, &e);
  if (b->st == GPULEASE_OK) {
    /* warm: the module loaded once, a short run */
    uint64_t one = 1000;
    submit(c, &l, g_busy, g_busy_len, "busy", &one, 8, &e);
    if (b->bar) pthread_barrier_wait(b->bar);
    uint64_t t0 = gl_mono_ns();
    b->st = submit(c, &l, g_busy, g_busy_len, "busy", &b->cycles, 8, &e);
    b->secs = (double)(gl_mono_ns() - t0) / 1e9;
    gpulease_lease_free(c, &l, &e);
  } else if (b->bar) {
    pthread_barrier_wait(b->bar);
  }
  if (b->st != GPULEASE_OK) snprintf(b->msg, sizeof b->msg, "%.255s", e.message);
  gpulease_client_close(c);
  return NULL;
}

static void check_concurrency(const daemon_t *d) {
  int ng = (int)g_inv.gpu_count;
  uint64_t cycles = g_emu ? 200000ull : 1800000000ull; /* ~1 s at 1.8 GHz */
  busy_job one = {.d = d, .gpu = 0, .cycles = cycles};
  busy_main(&one);
  busy_job jobs[16];
  pthread_t th[16];
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, (unsigned)ng + 1);
  for (int g = 0; g < ng; g++) {
    jobs[g] = (busy_job){.d = d, .gpu = (uint32_t)g, .cycles = cycles, .bar = &bar};
    pthread_create(&th[g], NULL, busy_main, &jobs[g]);
  }
  pthread_barrier_wait(&bar);
  uint64_t t0 = gl_mono_ns();
  for (int g = 0; g < ng; g++) pthread_join(th[g], NULL);
  double wall = (double)(gl_mono_ns() - t0) / 1e9;
  pthread_barrier_destroy(&bar);
  bool ok = one.st == GPULEASE_OK && one.secs > 0;
  for (int g = 0; g < ng; g++) ok = ok && jobs[g].st == GPULEASE_OK;
  double ratio = one.secs > 0 ? wall / one.secs : 0;
  /* The emulated device runs kernels on this machine's CPUs: not judged there. */
  row(ok && (g_emu || ratio < 1.5), "3 a ~1 s kernel on every GPU at once",
      "one kernel alone %.3f s; %d at once (one a GPU) %.3f s wall: %.2fx one kernel's time "
      "(serial would be %dx)%s%s",
      one.secs, ng, wall, ratio, ng, one.st ? " " : "", one.st ? one.msg : "");
}

/* ---- 4. isolation --------------------------------------------------------- */

typedef struct {
  const daemon_t *d;
  gpulease_lease l;
  double secs;
  gpulease_status st;
  char msg[256];
} hang_job;

static void *hang_main(void *arg) {
  hang_job *h = arg;
  gpulease_client *c = connect_to(h->d);
  gpulease_error e;
  if (!c) return NULL;
  uint64_t t0 = gl_mono_ns();
  h->st = submit(c, &h->l, g_spin, g_spin_len, "spin", NULL, 0, &e);
  h->secs = (double)(gl_mono_ns() - t0) / 1e9;
  snprintf(h->msg, sizeof h->msg, "%.255s", e.message);
  gpulease_client_close(c);
  return NULL;
}

static void check_isolation(gpulease_client *c, const daemon_t *d) {
  gpulease_error e;
  /* (a) a fault on GPU 0, a session's data on GPU 1 */
  gpulease_lease l0, l1;
  bool ok = gpulease_lease_alloc(c, 0, 64 << 20, 120, &l0, &e) == GPULEASE_OK &&
            gpulease_lease_alloc(c, 1, 64 << 20, 120, &l1, &e) == GPULEASE_OK;
  gpulease_session *s = NULL;
  gpulease_buffer b = 0;
  enum { N = 1 << 20 };
  uint8_t *pat = malloc(N), *back = calloc(1, N);
  for (size_t i = 0; i < N; i++) pat[i] = (uint8_t)(i * 7 + 3);
  ok = ok && gpulease_session_open(c, &l1, &s, &e) == GPULEASE_OK &&
       gpulease_mem_alloc(s, N, &b, &e) == GPULEASE_OK &&
       gpulease_mem_write(s, b, 0, pat, N, &e) == GPULEASE_OK &&
       gpulease_session_sync(s, NULL, &e) == GPULEASE_OK;
  gpulease_status fst = submit(c, &l0, g_oob, g_oob_len, "oob", NULL, 0, &e);
  char fmsg[160];
  snprintf(fmsg, sizeof fmsg, "%.150s", e.message);
  bool intact = ok && gpulease_mem_read(s, b, 0, back, N, &e) == GPULEASE_OK &&
                memcmp(pat, back, N) == 0 &&
                submit(c, &l1, g_iota, g_iota_len, "iota", NULL, 1024, &e) == GPULEASE_OK;
  if (s) gpulease_session_close(s, &e);
  gpulease_lease_free(c, &l1, &e);
  gpulease_lease_free(c, &l0, &e);
  free(pat);
  free(back);
  row(ok && fst == GPULEASE_LAUNCH_FAILED && intact, "4a out-of-bounds on GPU 0, GPU 1 intact",
      "oob on GPU 0: %s (%s); GPU 1: 1 MiB in a session read back %s, a submit %s",
      gpulease_status_name(fst), fmsg, intact ? "equal" : "DIFFERENT", intact ? "ok" : "failed");

  /* (b) a device lease on GPU 1 */
  gpulease_lease dv, g0;
  gpulease_lease_opts lo = {.struct_version = GPULEASE_LEASE_OPTS_VERSION,
                            .lease_class = GPULEASE_CLASS_DEVICE};
  gpulease_status sd = gpulease_lease_alloc_opts(c, 1, 64 << 20, 60, &lo, &dv, &e);
  gpulease_status s0 = gpulease_lease_alloc(c, 0, 64 << 20, 60, &g0, &e);
  gpulease_lease other;
  gpulease_status s1 = gpulease_lease_alloc(c, 1, 64 << 20, 60, &other, &e);
  char m1[160];
  snprintf(m1, sizeof m1, "%.150s", e.message);
  gpulease_status sub0 = s0 == GPULEASE_OK ? submit(c, &g0, g_iota, g_iota_len, "iota", NULL, 1024, &e)
                                           : s0;
  if (s1 == GPULEASE_OK) gpulease_lease_free(c, &other, &e);
  if (s0 == GPULEASE_OK) gpulease_lease_free(c, &g0, &e);
  if (sd == GPULEASE_OK) gpulease_lease_free(c, &dv, &e);
  row(sd == GPULEASE_OK && s0 == GPULEASE_OK && sub0 == GPULEASE_OK && s1 == GPULEASE_BUSY,
      "4b a device lease on GPU 1, GPU 0 leasable",
      "device lease on GPU 1: %s; a lease on GPU 0: %s, its submit %s; another on GPU 1: %s (%s)",
      gpulease_status_name(sd), gpulease_status_name(s0), gpulease_status_name(sub0),
      gpulease_status_name(s1), m1);

  /* (c) a hung kernel on GPU 0 killed at its TTL, GPU 1 serving meanwhile */
  hang_job h = {.d = d};
  gpulease_lease g1;
  bool okc = gpulease_lease_alloc(c, 0, 16 << 20, 4, &h.l, &e) == GPULEASE_OK &&
             gpulease_lease_alloc(c, 1, 16 << 20, 60, &g1, &e) == GPULEASE_OK;
  pthread_t th;
  pthread_create(&th, NULL, hang_main, &h);
  int subs = 0, bad = 0;
  double worst = 0;
  uint64_t t0 = gl_mono_ns();
  while ((double)(gl_mono_ns() - t0) / 1e9 < 5.5) {
    uint64_t s1t = gl_mono_ns();
    if (submit(c, &g1, g_iota, g_iota_len, "iota", NULL, 1024, &e) == GPULEASE_OK) subs++;
    else bad++;
    double ms = (double)(gl_mono_ns() - s1t) / 1e6;
    if (ms > worst) worst = ms;
    usleep(20000);
  }
  pthread_join(th, NULL);
  gpulease_lease_free(c, &g1, &e);
  row(okc && h.st == GPULEASE_LEASE_EXPIRED && bad == 0 && subs > 50,
      "4c a hung kernel on GPU 0 ended at its TTL",
      "spin on GPU 0 (TTL 4 s) ended after %.2f s: %s; GPU 1 meanwhile: %d submits ok, %d "
      "failed, slowest %.1f ms",
      h.secs, gpulease_status_name(h.st), subs, bad, worst);
}

/* ---- 5. accounting -------------------------------------------------------- */

static void check_accounting(void) {
  daemon_t d;
  const char *x[] = {"--warm-workers", "1", NULL};
  if (daemon_start(&d, "acct", x) != 0) {
    row(false, "5 accounting", "the daemon did not start");
    return;
  }
  gpulease_client *c = connect_to(&d);
  int ng = (int)g_inv.gpu_count;
  /* the warm pool ready: one worker a GPU */
  gpulease_warm_pool_info pi = {.struct_version = GPULEASE_WARM_POOL_INFO_VERSION};
  gpulease_error e;
  for (int i = 0; i < 300; i++) {
    if (gpulease_warm_pool_get(c, &pi, &e) == GPULEASE_OK) {
      uint32_t ready = 0;
      for (uint32_t g = 0; g < pi.gpu_count; g++) ready += pi.gpus[g].ready;
      if ((int)ready == ng) break;
    }
    usleep(100000);
  }
  sleep(1);
  double base[16], after[16];
  int nb = free_mib(c, base, 16);
  int workers0 = daemon_children(&d);
  int per[16] = {0}, fails = 0;
  uint64_t t0 = gl_mono_ns();
  int cycles = 0;
  for (int i = 0; i < 1000; i++, cycles++) {
    if (gl_mono_ns() - t0 > 120000000000ull) break; /* a bound for the check itself */
    gpulease_lease l;
    if (gpulease_lease_alloc(c, (uint32_t)(i % ng), 64 << 20, 60, &l, &e) != GPULEASE_OK) {
      fails++;
      continue;
    }
    per[l.gpu_index]++;
    if (submit(c, &l, g_iota, g_iota_len, "iota", NULL, 1024, &e) != GPULEASE_OK) fails++;
    if (gpulease_lease_free(c, &l, &e) != GPULEASE_OK) fails++;
  }
  double secs = (double)(gl_mono_ns() - t0) / 1e9;
  /* spares end after 10 s idle: wait for the pool's own size */
  int workers = daemon_children(&d);
  for (int i = 0; i < 400 && workers > workers0; i++) {
    usleep(100000);
    workers = daemon_children(&d);
  }
  sleep(1);
  int na = free_mib(c, after, 16);
  bool ok = cycles == 1000 && fails == 0 && nb == ng && na == ng && workers == workers0;
  char desc[512] = "";
  size_t dl = 0;
  for (int g = 0; g < ng && g < nb && g < na; g++) {
    double delta = after[g] - base[g];
    ok = ok && fabs(delta) <= base[g] * 0.001 + 2;
    dl += (size_t)snprintf(desc + dl, sizeof desc - dl, "%sGPU %d: %d cycles, free %.0f -> %.0f MiB",
                           g ? "; " : "", g, per[g], base[g], after[g]);
  }
  row(ok, "5 1,000 alloc/submit/free cycles",
      "%d cycles in %.1f s (%.2f ms a cycle), %d failed; %s; workers %d before, %d after (the "
      "warm pool)",
      cycles, secs, cycles ? secs * 1000 / cycles : 0, fails, desc, workers0, workers);
  gpulease_client_close(c);
  daemon_stop(&d, SIGTERM);
}

/* ---- 6. the pool ---------------------------------------------------------- */

static uint32_t *g_in, *g_ref, *g_out;
enum { CHUNKS = 1000, CW = 1024 }; /* 4 KiB chunks */

static void make_chunks(void) {
  g_in = malloc(CHUNKS * CW * 4);
  g_ref = malloc(CHUNKS * CW * 4);
  g_out = malloc(CHUNKS * CW * 4);
  uint32_t x = 99;
  for (size_t i = 0; i < (size_t)CHUNKS * CW; i++) {
    x = x * 1664525u + 1013904223u;
    g_in[i] = x;
    g_ref[i] = x * 2654435761u + (uint32_t)(i / CW);
  }
}

/* What a map's progress callback does once `at` chunks are done: kill a
 * daemon, or fault GPU 0's shared context (an out-of-bounds kernel on a
 * shared lease of GPU 0 of daemon `fault`). */
typedef struct {
  pid_t victim;
  const daemon_t *fault;
  uint64_t at;
  bool killed;
  gpulease_status fault_st;
} kill_plan;

static void on_progress(uint64_t done, uint64_t total, void *user) {
  (void)total;
  kill_plan *k = user;
  if (!k || k->killed || done < k->at) return;
  k->killed = true;
  if (k->victim > 0) {
    kill(k->victim, SIGKILL);
    return;
  }
  gpulease_client *c = connect_to(k->fault);
  gpulease_lease l;
  gpulease_error e;
  gpulease_lease_opts lo = {.struct_version = GPULEASE_LEASE_OPTS_VERSION,
                            .lease_class = GPULEASE_CLASS_SHARED};
  k->fault_st = GPULEASE_DISCONNECTED;
  if (c && gpulease_lease_alloc_opts(c, 0, 1 << 20, 60, &lo, &l, &e) == GPULEASE_OK) {
    k->fault_st = submit(c, &l, g_oob, g_oob_len, "oob", NULL, 0, &e);
    gpulease_lease_free(c, &l, &e);
  }
  gpulease_client_close(c);
}

static gpulease_status pool_map(const char *nodes_file, uint32_t per_node, kill_plan *kp,
                                gpulease_map_stats *st, gpulease_error *e) {
  gpulease_pool_options po;
  gpulease_pool_options_default(&po);
  po.nodes_file = nodes_file;
  po.lease_class = GPULEASE_CLASS_SHARED;
  po.max_leases_per_node = per_node;
  gpulease_pool *p;
  gpulease_status s = gpulease_pool_open(&po, &p, e);
  if (s != GPULEASE_OK) return s;
  gpulease_map_arg a[5] = {{.kind = GPULEASE_MAP_IN}, {.kind = GPULEASE_MAP_OUT},
                           {.kind = GPULEASE_MAP_BYTES}, {.kind = GPULEASE_MAP_INDEX},
                           {.kind = GPULEASE_MAP_SCALAR, .size = 4}};
  uint32_t w = CW;
  memcpy(a[4].value, &w, 4);
  gpulease_map_desc d;
  gpulease_map_desc_default(&d);
  d.image = g_mix;
  d.image_size = g_mix_len;
  d.kernel = "chunk_mix";
  d.grid[0] = CW / 256;
  d.block[0] = 256;
  d.args = a;
  d.arg_count = 5;
  d.input = g_in;
  d.input_bytes = (uint64_t)CHUNKS * CW * 4;
  d.chunk_bytes = CW * 4;
  d.output = g_out;
  d.output_bytes_per_chunk = CW * 4;
  d.max_attempts = 5;
  if (kp) {
    d.progress = on_progress;
    d.progress_user = kp;
  }
  memset(g_out, 0, (size_t)CHUNKS * CW * 4);
  s = gpulease_pool_map(p, &d, st, e);
  gpulease_pool_close(p);
  return s;
}

static void write_nodes(const char *path, const daemon_t *const *ds, int n) {
  FILE *f = fopen(path, "w");
  for (int i = 0; i < n; i++) fprintf(f, "%s %s\n", ds[i]->addr, ds[i]->fp);
  fclose(f);
}

static void check_pool(void) {
  char nf[200];
  snprintf(nf, sizeof nf, "%s/nodes", g_tmp);
  double secs[2][5];
  const char *pl[2] = {"spread", "pack"};
  bool ok = true;
  double rate[2] = {0};
  for (int k = 0; k < 2; k++) {
    daemon_t d;
    const char *x[] = {"--placement", pl[k], "--warm-workers", "0", NULL};
    char name[32];
    snprintf(name, sizeof name, "pool-%s", pl[k]);
    if (daemon_start(&d, name, x) != 0) {
      ok = false;
      continue;
    }
    const daemon_t *ds[] = {&d};
    write_nodes(nf, ds, 1);
    for (int r = 0; r < 5; r++) {
      gpulease_map_stats st = {.struct_version = GPULEASE_MAP_STATS_VERSION};
      gpulease_error e;
      gpulease_status s = pool_map(nf, 4, NULL, &st, &e);
      secs[k][r] = st.seconds;
      if (s != GPULEASE_OK || memcmp(g_out, g_ref, (size_t)CHUNKS * CW * 4) != 0) {
        fprintf(stderr, "pool %s: %s %s\n", pl[k], gpulease_status_name(s), e.message);
        ok = false;
      }
      gpulease_map_stats_release(&st);
    }
    daemon_stop(&d, SIGTERM);
    /* median of the last four (the first makes the shared contexts) */
    double v[4];
    memcpy(v, &secs[k][1], sizeof v);
    for (int i = 0; i < 4; i++)
      for (int j = i + 1; j < 4; j++)
        if (v[j] < v[i]) {
          double t = v[i];
          v[i] = v[j];
          v[j] = t;
        }
    rate[k] = CHUNKS / ((v[1] + v[2]) / 2);
    printf("       pool map, one daemon, --placement %s: first %.3f s, then median %.3f s "
           "(%.0f chunks/s)\n",
           pl[k], secs[k][0], (v[1] + v[2]) / 2, rate[k]);
  }
  row(ok && (g_emu || rate[0] >= rate[1] * 0.9), "6 pool: 1,000 chunks on every GPU vs one GPU",
      "4 shared leases: spread over the GPUs %.0f chunks/s, packed on GPU 0 %.0f chunks/s "
      "(%.2fx), outputs exact",
      rate[0], rate[1], rate[1] > 0 ? rate[0] / rate[1] : 0);

  /* a fault on GPU 0 while the pool's leases run on every GPU of one daemon */
  {
    daemon_t f;
    const char *fx[] = {"--placement", "spread", "--warm-workers", "0", NULL};
    if (daemon_start(&f, "pool-fault", fx) == 0) {
      const daemon_t *fs[] = {&f};
      write_nodes(nf, fs, 1);
      gpulease_map_stats st = {.struct_version = GPULEASE_MAP_STATS_VERSION};
      gpulease_error e;
      uint32_t ng = g_inv.gpu_count;
      gpulease_status s = pool_map(nf, ng, NULL, &st, &e); /* the shared contexts made */
      gpulease_map_stats_release(&st);
      kill_plan fp = {.fault = &f, .at = 300};
      s = pool_map(nf, ng, &fp, &st, &e);
      bool exact = s == GPULEASE_OK && memcmp(g_out, g_ref, (size_t)CHUNKS * CW * 4) == 0;
      row(exact && fp.fault_st == GPULEASE_LAUNCH_FAILED && st.retries >= 1 && st.retries <= 4 * ng,
          "6 pool: a fault on GPU 0 mid-run, other GPUs on",
          "%u shared leases on %u GPUs; after 300 chunks an out-of-bounds kernel on GPU 0's "
          "shared context (%s): the map %s, %llu retries, output %s",
          ng, ng, gpulease_status_name(fp.fault_st), gpulease_status_name(s),
          (unsigned long long)st.retries, exact ? "exact" : "WRONG");
      if (s != GPULEASE_OK) fprintf(stderr, "pool fault: %s\n", e.message);
      gpulease_map_stats_release(&st);
      daemon_stop(&f, SIGTERM);
    } else {
      row(false, "6 pool: a fault on GPU 0 mid-run, other GPUs on", "the daemon did not start");
    }
  }

}

/* Two daemons sharing the node's GPUs, a pool over both, one killed. */
static void check_pool_two_daemons(void) {
  char nf[200];
  snprintf(nf, sizeof nf, "%s/nodes2", g_tmp);
  daemon_t a, b;
  const char *x[] = {"--warm-workers", "0", NULL};
  if (daemon_start(&a, "pa", x) != 0 || daemon_start(&b, "pb", x) != 0) {
    row(false, "6 pool over 2 daemons, one killed", "a daemon did not start");
    return;
  }
  const daemon_t *ds[] = {&a, &b};
  write_nodes(nf, ds, 2);
  gpulease_map_stats st = {.struct_version = GPULEASE_MAP_STATS_VERSION};
  gpulease_error e;
  gpulease_status s = pool_map(nf, 4, NULL, &st, &e); /* warm: both shared contexts */
  gpulease_map_stats_release(&st);
  s = pool_map(nf, 4, NULL, &st, &e);
  double warm_s = st.seconds;
  gpulease_map_stats_release(&st);
  kill_plan kp = {.victim = b.pid, .at = 300};
  s = pool_map(nf, 1, &kp, &st, &e);
  bool exact = s == GPULEASE_OK && memcmp(g_out, g_ref, (size_t)CHUNKS * CW * 4) == 0;
  row(exact && st.retries + st.backups >= 1 && kp.killed,
      "6 pool over 2 daemons, one SIGKILLed mid-run",
      "1,000 chunks in %.3f s with a daemon killed after 300: %s, %llu retries, %llu backups, "
      "output %s; without a kill %.3f s end to end (target <= 1 s: %s)",
      st.seconds, gpulease_status_name(s), (unsigned long long)st.retries,
      (unsigned long long)st.backups,
      exact ? "exact" : "WRONG", warm_s, warm_s <= 1.0 ? "met" : "NOT met");
  gpulease_map_stats_release(&st);
  int left = 0;
  gpulease_client *c = connect_to(&a);
  if (c) {
    gpulease_inventory inv = {.struct_version = GPULEASE_INVENTORY_VERSION};
    if (gpulease_inventory_get(c, &inv, &e) == GPULEASE_OK)
      for (uint32_t g = 0; g < inv.gpu_count; g++) left += (int)inv.gpus[g].active_leases;
    gpulease_client_close(c);
  }
  row(left == 0, "6 no lease left on the daemon that lived", "%d live leases", left);
  if (kp.killed) {
    b.pid = 0; /* already dead; reap it */
    waitpid(kp.victim, NULL, 0);
  } else {
    daemon_stop(&b, SIGTERM);
  }
  daemon_stop(&a, SIGTERM);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: multigpu_check BUILD_DIR [--emu | --pool-only]\n");
    return 2;
  }
  g_build = argv[1];
  /* --pool-only: on a machine with one GPU, only the pool over two daemons
   * that share it, one killed mid-run (issue 16). */
  bool pool_only = false;
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--emu") == 0) g_emu = true;
    else if (strcmp(argv[i], "--pool-only") == 0) pool_only = true;
    else {
      fprintf(stderr, "multigpu_check: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  snprintf(g_tmp, sizeof g_tmp, "/tmp/gl-mgpu-XXXXXX");
  if (!mkdtemp(g_tmp)) return 2;
  g_iota = read_ptx("iota", &g_iota_len);
  g_busy = read_ptx("busy", &g_busy_len);
  g_spin = read_ptx("spin", &g_spin_len);
  g_oob = read_ptx("oob", &g_oob_len);
  g_mix = read_ptx("chunk_mix", &g_mix_len);
  make_chunks();
  if (pool_only) {
    printf("| %-4s | %-44s | %s\n", "", "item", "figures");
    check_pool_two_daemons();
    printf("multigpu_check --pool-only: %d passed, %d failed\n", g_pass, g_fail);
    char rm0[128];
    snprintf(rm0, sizeof rm0, "rm -rf '%s'", g_tmp);
    if (system(rm0) != 0) fprintf(stderr, "could not remove %s\n", g_tmp);
    return g_fail ? 1 : 0;
  }

  daemon_t d;
  const char *x[] = {"--placement", "spread", "--warm-workers", "0", NULL};
  if (daemon_start(&d, "spread", x) != 0) return 1;
  setenv("GL_MG_SPREAD_ADDR", d.addr, 1);
  setenv("GL_MG_SPREAD_FP", d.fp, 1);
  gpulease_client *c = connect_to(&d);
  if (!c) return 1;
  printf("| %-4s | %-44s | %s\n", "", "item", "figures");
  check_inventory(c);
  if (g_inv.gpu_count < 2) {
    row(false, "GPUs", "%u GPU(s): this check needs at least 2", g_inv.gpu_count);
    return 1;
  }
  check_placement(c);
  check_concurrency(&d);
  check_isolation(c, &d);
  gpulease_client_close(c);
  daemon_stop(&d, SIGTERM);
  check_accounting();
  check_pool();
  check_pool_two_daemons();
  printf("multigpu_check: %d passed, %d failed\n", g_pass, g_fail);
  char rm[128];
  snprintf(rm, sizeof rm, "rm -rf '%s'", g_tmp);
  if (system(rm) != 0) fprintf(stderr, "could not remove %s\n", g_tmp);
  return g_fail ? 1 : 0;
}
