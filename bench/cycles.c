/* cycles.c - see cycles.h. */
#include "cycles.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "common/util.h"
#include "iota_ptx.h"
#include "median.h"

double gl_bench_now_ms(void) { return (double)gl_mono_ns() / 1e6; }

void gl_bench_pause_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int gl_bench_conn_error(gpulease_status st) {
  return st == GPULEASE_DISCONNECTED || st == GPULEASE_TLS_FAILED ||
         st == GPULEASE_PROTOCOL_ERROR || st == GPULEASE_TIMEOUT;
}

/* ------------------------------------------------------------------------
 * The iota kernel as a GPU_SUBMIT on a lease
 * ---------------------------------------------------------------------- */

/* Written to the region before the kernel so that a region that still
 * holds an earlier lease's output (a SHARED context reuses freed memory)
 * cannot pass for this kernel's. */
static const unsigned char k_zeros[1024];

static void iota_submit_desc(gpulease_submit_desc *d) {
  gpulease_submit_desc_default(d);
  d->image = k_iota_ptx;
  d->image_size = sizeof k_iota_ptx - 1;
  d->format = GPULEASE_IMAGE_PTX;
  d->kernel = "iota";
  d->grid[0] = d->grid[1] = d->grid[2] = 1;
  d->block[0] = 256;
  d->block[1] = d->block[2] = 1;
  d->input = k_zeros;
  d->input_size = sizeof k_zeros;
  d->input_offset = 0;
  d->output_offset = 0;
  d->output_size = 256 * sizeof(float);
}

/* -1 when out holds out[i] = i + 1 for i < 256, else the first wrong index
 * (256 when the size is wrong). */
static int iota_wrong_at(const void *out, size_t size) {
  if (!out || size != 256 * sizeof(float)) return 256;
  float v[256];
  memcpy(v, out, sizeof v);
  for (int k = 0; k < 256; k++)
    if (v[k] != (float)(k + 1)) return k;
  return -1;
}

/* ------------------------------------------------------------------------
 * One thread's cycles
 * ---------------------------------------------------------------------- */

typedef struct cycler {
  gpulease_client *client;
  gpulease_lease_class cls;
  uint64_t bytes;
  double deadline_ms;  /* the end, once min_cycles are done */
  double hard_end_ms;  /* the end in any case */
  size_t min_cycles;
  double *ms; /* the completed cycles' durations */
  size_t n, cap;
  uint64_t fails[GL_CYCLE_NSTAT];
  uint64_t wrong;
  int conn_failed;
  int dead;
  double end_ms;
  char first_msg[256];
} cycler;

static void note_msg(cycler *t, const char *what, const char *msg) {
  if (!t->first_msg[0])
    snprintf(t->first_msg, sizeof t->first_msg, "%.40s: %.200s", what, msg);
}

/* Counts a failed step; on a connection error reconnects. 0 when the
 * thread cannot go on. */
static int cycle_failed(cycler *t, gpulease_status st, const gpulease_error *err) {
  t->fails[(unsigned)st < GL_CYCLE_NSTAT ? (unsigned)st : GL_CYCLE_NSTAT - 1]++;
  note_msg(t, gpulease_status_name(st), err->message);
  if (!gl_bench_conn_error(st)) return 1;
  t->conn_failed = 1;
  gpulease_error e2;
  if (gpulease_client_reconnect(t->client, &e2) != GPULEASE_OK) {
    note_msg(t, "reconnect", e2.message);
    t->dead = 1;
    return 0;
  }
  return 1;
}

static void *cycle_main(void *arg) {
  cycler *t = arg;
  gpulease_lease_opts lo;
  gpulease_lease_opts_default(&lo);
  lo.lease_class = t->cls;
  gpulease_submit_desc d;
  iota_submit_desc(&d);
  for (;;) {
    double now = gl_bench_now_ms();
    if (now >= t->hard_end_ms || (now >= t->deadline_ms && t->n >= t->min_cycles)) break;
    gpulease_lease l;
    gpulease_error err;
    double t0 = gl_bench_now_ms();
    gpulease_status st =
        gpulease_lease_alloc_opts(t->client, GPULEASE_ANY_GPU, t->bytes, 60, &lo, &l, &err);
    if (st != GPULEASE_OK) {
      if (!cycle_failed(t, st, &err)) break;
      gl_bench_pause_ms(5);
      continue;
    }
    int ok = 1;
    gpulease_submit_result r;
    gpulease_submit_result_init(&r);
    st = gpulease_submit(t->client, &l, &d, &r, &err);
    if (st == GPULEASE_OK) {
      int at = iota_wrong_at(r.output, r.output_size);
      if (at >= 0) {
        t->wrong++;
        char m[64];
        snprintf(m, sizeof m, "wrong at %d", at);
        note_msg(t, "WRONG_OUTPUT", m);
        ok = 0;
      }
      gpulease_submit_result_release(&r);
    } else {
      ok = 0;
      if (!cycle_failed(t, st, &err)) break; /* the lease is left to its TTL */
    }
    st = gpulease_lease_free(t->client, &l, &err);
    if (st != GPULEASE_OK) {
      ok = 0;
      if (!cycle_failed(t, st, &err)) break;
    }
    if (!ok) {
      gl_bench_pause_ms(5);
      continue;
    }
    if (t->n == t->cap) {
      size_t cap = t->cap ? 2 * t->cap : 256;
      double *ms = realloc(t->ms, cap * sizeof *ms);
      if (!ms) break;
      t->ms = ms;
      t->cap = cap;
    }
    t->ms[t->n++] = gl_bench_now_ms() - t0;
  }
  t->end_ms = gl_bench_now_ms();
  return NULL;
}

int gl_cycles_run(gpulease_client **clients, int n, const gl_cycle_opts *o, gl_cycle_stats *st) {
  memset(st, 0, sizeof *st);
  cycler *ts = calloc(n > 0 ? (size_t)n : 1, sizeof *ts);
  pthread_t *th = calloc(n > 0 ? (size_t)n : 1, sizeof *th);
  if (!ts || !th) {
    free(ts);
    free(th);
    return -1;
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 1u << 20);
  double t0 = gl_bench_now_ms();
  int started = 0;
  for (int i = 0; i < n; i++) {
    ts[i].client = clients[i];
    ts[i].cls = o->cls;
    ts[i].bytes = o->bytes;
    ts[i].deadline_ms = t0 + 1000.0 * o->secs;
    ts[i].hard_end_ms = t0 + 1000.0 * (o->max_secs > o->secs ? o->max_secs : o->secs);
    ts[i].min_cycles = o->min_cycles > 0 ? (size_t)o->min_cycles : 0;
    if (pthread_create(&th[i], &attr, cycle_main, &ts[i]) != 0) break;
    started++;
  }
  pthread_attr_destroy(&attr);
  double end = t0;
  size_t total = 0;
  for (int i = 0; i < started; i++) {
    pthread_join(th[i], NULL);
    total += ts[i].n;
    if (ts[i].end_ms > end) end = ts[i].end_ms;
  }
  int rc = started < n ? -1 : 0;
  st->clients = started;
  st->secs = (end - t0) / 1000.0;
  st->ms = total ? malloc(total * sizeof *st->ms) : NULL;
  if (total && !st->ms) rc = -1;
  for (int i = 0; i < started; i++) {
    if (st->ms) memcpy(st->ms + st->cycles, ts[i].ms, ts[i].n * sizeof *st->ms);
    if (st->ms) st->cycles += ts[i].n;
    for (int s = 0; s < GL_CYCLE_NSTAT; s++) {
      st->fails[s] += ts[i].fails[s];
      st->nfail += ts[i].fails[s];
    }
    st->wrong += ts[i].wrong;
    st->nfail += ts[i].wrong;
    st->idle_clients += ts[i].n == 0;
    st->conn_failed |= ts[i].conn_failed;
    st->dead_clients += ts[i].dead;
    if (!st->first_msg[0] && ts[i].first_msg[0])
      snprintf(st->first_msg, sizeof st->first_msg, "%s", ts[i].first_msg);
    free(ts[i].ms);
  }
  free(ts);
  free(th);
  return rc;
}

void gl_cycle_stats_free(gl_cycle_stats *st) {
  free(st->ms);
  st->ms = NULL;
  st->cycles = 0;
}

void gl_cycle_fails_format(const gl_cycle_stats *st, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = 0;
  for (int s = 0; s <= GL_CYCLE_NSTAT && at < len; s++) {
    uint64_t v = s < GL_CYCLE_NSTAT ? st->fails[s] : st->wrong;
    if (!v) continue;
    const char *name = s < GL_CYCLE_NSTAT ? gpulease_status_name((gpulease_status)s)
                                          : "WRONG_OUTPUT";
    int k = snprintf(buf + at, len - at, "%s%s %llu", at ? ", " : "", name,
                     (unsigned long long)v);
    if (k < 0) break;
    at += (size_t)k;
  }
  if (!buf[0]) snprintf(buf, len, "0");
}

double gl_cycle_quantile(gl_cycle_stats *st, double p) {
  if (!st->cycles || !st->ms) return -1;
  return p == 0.5 ? median(st->ms, st->cycles) : percentile(st->ms, st->cycles, p);
}

/* ------------------------------------------------------------------------
 * Many clients
 * ---------------------------------------------------------------------- */

typedef struct connector {
  const gpulease_connect_options *o;
  gpulease_client **clients;
  int n;
  atomic_int next;     /* the next index to connect */
  atomic_int ok;       /* connected */
  atomic_int failed;   /* set at the first failure: the others stop taking */
  pthread_mutex_t mu;
  gpulease_error first;
} connector;

static void *connect_main(void *arg) {
  connector *k = arg;
  for (;;) {
    if (atomic_load(&k->failed)) break;
    int i = atomic_fetch_add(&k->next, 1);
    if (i >= k->n) break;
    gpulease_error err;
    if (gpulease_client_connect(k->o, &k->clients[i], &err) == GPULEASE_OK) {
      atomic_fetch_add(&k->ok, 1);
      continue;
    }
    k->clients[i] = NULL;
    pthread_mutex_lock(&k->mu);
    if (!atomic_exchange(&k->failed, 1)) k->first = err;
    pthread_mutex_unlock(&k->mu);
  }
  return NULL;
}

int gl_clients_connect(const gpulease_connect_options *o, int n, int parallel,
                       gpulease_client **clients, gpulease_error *err) {
  if (parallel < 1) parallel = 1;
  if (parallel > 64) parallel = 64;
  if (parallel > n) parallel = n > 0 ? n : 1;
  for (int i = 0; i < n; i++) clients[i] = NULL;
  connector k = {.o = o, .clients = clients, .n = n};
  atomic_init(&k.next, 0);
  atomic_init(&k.ok, 0);
  atomic_init(&k.failed, 0);
  pthread_mutex_init(&k.mu, NULL);
  pthread_t th[64];
  int started = 0;
  for (; started < parallel; started++)
    if (pthread_create(&th[started], NULL, connect_main, &k) != 0) break;
  if (!started) connect_main(&k);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  pthread_mutex_destroy(&k.mu);
  int got = atomic_load(&k.ok);
  if (err) {
    if (got < n && atomic_load(&k.failed)) *err = k.first;
    else if (got < n) snprintf(err->message, sizeof err->message, "not every client connected");
  }
  return got;
}

void gl_clients_close(gpulease_client **clients, int n) {
  for (int i = 0; i < n; i++)
    if (clients[i]) {
      gpulease_client_close(clients[i]);
      clients[i] = NULL;
    }
}

long gl_raise_nofile(long want) {
  struct rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return -1;
  if (r.rlim_cur != RLIM_INFINITY && (long)r.rlim_cur < want) {
    rlim_t to = (rlim_t)want;
    if (r.rlim_max != RLIM_INFINITY && to > r.rlim_max) to = r.rlim_max;
    r.rlim_cur = to;
    setrlimit(RLIMIT_NOFILE, &r);
    getrlimit(RLIMIT_NOFILE, &r);
  }
  return r.rlim_cur == RLIM_INFINITY ? (long)1 << 30 : (long)r.rlim_cur;
}

/* ------------------------------------------------------------------------
 * /proc
 * ---------------------------------------------------------------------- */

int gl_proc_children(pid_t pid) {
  DIR *dir = opendir("/proc");
  if (!dir) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(dir))) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    char path[300], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    char *rp = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
    int ppid;
    char state;
    if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && ppid == (int)pid && state != 'Z')
      n++;
  }
  closedir(dir);
  return n;
}

int gl_proc_figures_read(pid_t pid, gl_proc_figures *f) {
  char path[64], line[256];
  f->rss_kib = -1;
  f->fds = -1;
  f->children = 0;
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *s = fopen(path, "r");
  if (!s) return -1;
  while (fgets(line, sizeof line, s))
    if (sscanf(line, "VmRSS: %ld kB", &f->rss_kib) == 1) break;
  fclose(s);
  snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
  DIR *dir = opendir(path);
  if (dir) {
    f->fds = 0;
    for (struct dirent *e; (e = readdir(dir));) f->fds += e->d_name[0] != '.';
    closedir(dir);
  }
  f->children = gl_proc_children(pid);
  return 0;
}
