/*
 * load_bench.c - issue 34's load table: the lease path of one daemon under
 * many concurrent clients.
 *
 *   gl_bench_load --gpuleased PATH [options] [-- DAEMON_ARGS...]
 *   gl_bench_load --addr HOST:PORT --pin-sha256 HEX [--daemon-pid PID] [options]
 *
 * Options:
 *   --classes LIST      lease classes, in order (default shared,isolated)
 *   --clients LIST      client counts, in order (default 32,100,300,1000)
 *   --phase-s S         seconds each measured phase runs (default 10)
 *   --warmup-s S        an uncounted pass first, the same clients (default 2;
 *                       0: none): an isolated client's first lease finds
 *                       no spare worker yet
 *   --shared-mib M      each shared cycle's lease (default 16)
 *   --isolated-mib M    each isolated cycle's lease (default 64)
 *   --settle-s S        after a row, the daemon's figures again S seconds
 *                       later (default 10; 0: not taken)
 *   --connect-parallel N  handshakes at once while the clients connect
 *                       (default 8)
 *   --timeout-ms MS     each request's reply timeout (default 60000)
 *   --token TOKEN       a bearer token (a daemon run with --auth token)
 *   --label TEXT        printed with the table
 *   --keep-dir          keep the started daemon's state folder and log
 *
 * For each class and each client count, one row: that many clients, each
 * its own QUIC connection (the local socket is not used) driven by a
 * thread of its own (cycles.c), connected a few at a time before the
 * clock starts; the warm-up pass, then the measured phase of alloc +
 * GPU_SUBMIT of the iota kernel (output checked) + free per client; the
 * clients closed. The row: completed cycles/s, the cycle's p50 and p90
 * (ms), failures by status name, and the daemon's RSS (MB), open file
 * descriptors and child processes before the clients connect, right
 * after they closed, and --settle-s later (from /proc/PID/status,
 * /proc/PID/fd and every /proc/N/stat's parent). With a started daemon
 * also its log's ERROR and WARN lines during the row.
 *
 * --gpuleased starts the daemon itself, on 127.0.0.1 with a state folder
 * of its own, with --max-connections-per-address and --max-leases large
 * enough for the largest count (2 per client + 16, 4 per client and at
 * least 1024); DAEMON_ARGS after `--` come after those and win (e.g.
 * `-- --device emu --emu-vram 8G`). This process raises its RLIMIT_NOFILE
 * for the clients' sockets first; the daemon inherits it.
 *
 * A benchmark: it prints figures and judges none. Exits 1 when an output
 * was wrong, the clients could not all connect or the daemon died; 2 on
 * bad arguments.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cycles.h"
#include "gpulease/gpulease.h"

enum { MAX_COUNTS = 16, MAX_CLASSES = 4, MAX_DAEMON_ARGS = 48, MAX_ROWS = 64 };

typedef struct config {
  const char *gpuleased, *addr, *pin, *token, *label;
  pid_t daemon_pid;
  gpulease_lease_class classes[MAX_CLASSES];
  int nclasses;
  int counts[MAX_COUNTS];
  int ncounts;
  int phase_s, warmup_s, settle_s, parallel, timeout_ms;
  uint64_t shared_mib, isolated_mib;
  bool keep_dir;
  const char *daemon_args[MAX_DAEMON_ARGS];
  int ndaemon_args;
} config;

/* The daemon this run measures: started here or given. */
typedef struct daemon_ref {
  pid_t pid;       /* 0: unknown (no figures) */
  bool ours;       /* started here: stopped at the end */
  char dir[256];   /* its state folder (ours only) */
  char log[300];
  char addr[64];
  char fp[80];
} daemon_ref;

typedef struct row {
  char cls[16];
  int clients;
  double rate, p50, p90;
  uint64_t nfail;
  char fails[256];
  gl_proc_figures before, after, settled;
  bool have_settled;
  int idle_clients;
  int log_errors, log_warns;
  char note[320];
} row;

static row g_rows[MAX_ROWS];
static int g_nrows;

static int usage(const char *argv0) {
  fprintf(stderr,
          "usage: %s --gpuleased PATH [options] [-- DAEMON_ARGS...]\n"
          "       %s --addr HOST:PORT --pin-sha256 HEX [--daemon-pid PID] [options]\n"
          "options: [--classes LIST] [--clients LIST] [--phase-s S] [--warmup-s S]\n"
          "         [--shared-mib M] [--isolated-mib M] [--settle-s S] [--connect-parallel N]\n"
          "         [--timeout-ms MS] [--token TOKEN] [--label TEXT] [--keep-dir]\n",
          argv0, argv0);
  return 2;
}

/* A comma list of positive ints into out (at most max). The count, or -1. */
static int parse_counts(const char *s, int *out, int max) {
  int n = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *end;
    long v = strtol(tok, &end, 10);
    if (*end || v < 1 || v > 10000 || n == max) return -1;
    out[n++] = (int)v;
  }
  return n ? n : -1;
}

static int parse_classes(const char *s, gpulease_lease_class *out, int max) {
  int n = 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (n == max || gpulease_lease_class_parse(tok, &out[n]) != GPULEASE_OK) return -1;
    n++;
  }
  return n ? n : -1;
}

static int parse_args(int argc, char **argv, config *c) {
  memset(c, 0, sizeof *c);
  c->label = "";
  c->classes[0] = GPULEASE_CLASS_SHARED;
  c->classes[1] = GPULEASE_CLASS_ISOLATED;
  c->nclasses = 2;
  static const int defaults[] = {32, 100, 300, 1000};
  memcpy(c->counts, defaults, sizeof defaults);
  c->ncounts = 4;
  c->phase_s = 10;
  c->warmup_s = 2;
  c->settle_s = 10;
  c->parallel = 8;
  c->timeout_ms = 60000;
  c->shared_mib = 16;
  c->isolated_mib = 64;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) {
      for (i++; i < argc; i++) {
        if (c->ndaemon_args == MAX_DAEMON_ARGS) return -1;
        c->daemon_args[c->ndaemon_args++] = argv[i];
      }
      break;
    }
    if (!strcmp(a, "--keep-dir")) {
      c->keep_dir = true;
      continue;
    }
    if (i + 1 >= argc) return -1;
    const char *v = argv[++i];
    if (!strcmp(a, "--gpuleased")) c->gpuleased = v;
    else if (!strcmp(a, "--addr")) c->addr = v;
    else if (!strcmp(a, "--pin-sha256")) c->pin = v;
    else if (!strcmp(a, "--token")) c->token = v;
    else if (!strcmp(a, "--label")) c->label = v;
    else if (!strcmp(a, "--daemon-pid")) c->daemon_pid = (pid_t)atoi(v);
    else if (!strcmp(a, "--classes")) {
      if ((c->nclasses = parse_classes(v, c->classes, MAX_CLASSES)) < 0) return -1;
    } else if (!strcmp(a, "--clients")) {
      if ((c->ncounts = parse_counts(v, c->counts, MAX_COUNTS)) < 0) return -1;
    } else if (!strcmp(a, "--phase-s")) c->phase_s = atoi(v);
    else if (!strcmp(a, "--warmup-s")) c->warmup_s = atoi(v);
    else if (!strcmp(a, "--settle-s")) c->settle_s = atoi(v);
    else if (!strcmp(a, "--connect-parallel")) c->parallel = atoi(v);
    else if (!strcmp(a, "--timeout-ms")) c->timeout_ms = atoi(v);
    else if (!strcmp(a, "--shared-mib")) c->shared_mib = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--isolated-mib")) c->isolated_mib = strtoull(v, NULL, 10);
    else return -1;
  }
  if (!c->gpuleased == !c->addr) return -1; /* exactly one of them */
  if (c->gpuleased && (c->daemon_pid || c->pin)) return -1;
  if (c->ndaemon_args && !c->gpuleased) return -1;
  if (c->phase_s < 1 || c->phase_s > 3600 || c->warmup_s < 0 || c->warmup_s > 600 ||
      c->settle_s < 0 || c->settle_s > 600 || c->parallel < 1 || c->parallel > 64 ||
      c->timeout_ms < 100 || c->shared_mib < 1 || c->shared_mib > (1u << 24) ||
      c->isolated_mib < 1 || c->isolated_mib > (1u << 24) ||
      c->nclasses * c->ncounts > MAX_ROWS)
    return -1;
  return 0;
}

/* ------------------------------------------------------------------------
 * The daemon
 * ---------------------------------------------------------------------- */

static int max_count(const config *c) {
  int m = 0;
  for (int i = 0; i < c->ncounts; i++)
    if (c->counts[i] > m) m = c->counts[i];
  return m;
}

/* Starts c->gpuleased and waits (60 s at most) for its ready file. */
static int daemon_start(const config *c, daemon_ref *d) {
  snprintf(d->dir, sizeof d->dir, "/tmp/gl-loadbench-XXXXXX");
  if (!mkdtemp(d->dir)) {
    fprintf(stderr, "bench: mkdtemp: %s\n", strerror(errno));
    return -1;
  }
  char ready[300], conns[24], leases[24];
  snprintf(ready, sizeof ready, "%s/ready", d->dir);
  snprintf(d->log, sizeof d->log, "%s/daemon.log", d->dir);
  int m = max_count(c);
  snprintf(conns, sizeof conns, "%d", 2 * m + 16);
  snprintf(leases, sizeof leases, "%d", 4 * m > 1024 ? 4 * m : 1024);
  const char *argv[MAX_DAEMON_ARGS + 16] = {c->gpuleased, "--listen", "127.0.0.1:0",
                                            "--state-dir", d->dir, "--ready-file", ready,
                                            "--max-connections-per-address", conns,
                                            "--max-leases", leases};
  int n = 11;
  for (int i = 0; i < c->ndaemon_args; i++) argv[n++] = c->daemon_args[i];
  argv[n] = NULL;
  printf("daemon:");
  for (int i = 0; i < n; i++) printf(" %s", argv[i]);
  printf("\n");
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (!freopen(d->log, "a", stderr) || !freopen("/dev/null", "w", stdout)) _exit(126);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  d->pid = pid;
  d->ours = true;
  for (int i = 0; i < 1200; i++) {
    FILE *f = fopen(ready, "r");
    unsigned port;
    if (f) {
      int ok = fscanf(f, "%u %79s", &port, d->fp) == 2;
      fclose(f);
      if (ok) {
        snprintf(d->addr, sizeof d->addr, "127.0.0.1:%u", port);
        return 0;
      }
    }
    if (waitpid(pid, NULL, WNOHANG) == pid) {
      d->pid = 0;
      break;
    }
    gl_bench_pause_ms(50);
  }
  fprintf(stderr, "bench: the daemon did not start; its log is %s\n", d->log);
  return -1;
}

static void daemon_stop(daemon_ref *d, bool keep_dir) {
  if (!d->ours) return;
  if (d->pid > 0) {
    kill(d->pid, SIGTERM);
    int i = 0;
    for (; i < 300 && waitpid(d->pid, NULL, WNOHANG) != d->pid; i++) gl_bench_pause_ms(50);
    if (i == 300) {
      kill(d->pid, SIGKILL);
      waitpid(d->pid, NULL, 0);
    }
  }
  if (keep_dir) {
    printf("daemon's state folder and log kept: %s\n", d->dir);
  } else if (d->dir[0]) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d->dir);
    if (system(cmd) != 0) fprintf(stderr, "bench: could not remove %s\n", d->dir);
  }
}

/* False once the daemon has exited (ours: reaped). */
static bool daemon_alive(daemon_ref *d) {
  if (d->pid <= 0) return !d->ours;
  if (d->ours && waitpid(d->pid, NULL, WNOHANG) == d->pid) {
    d->pid = 0;
    return false;
  }
  return kill(d->pid, 0) == 0 || errno == EPERM;
}

static void figures(const daemon_ref *d, gl_proc_figures *f) {
  if (d->pid <= 0 || gl_proc_figures_read(d->pid, f) != 0) {
    f->rss_kib = -1;
    f->fds = -1;
    f->children = -1;
  }
}

/* The log's size now, to count a row's lines from. */
static long log_size(const daemon_ref *d) {
  struct stat sb;
  return d->ours && stat(d->log, &sb) == 0 ? (long)sb.st_size : -1;
}

/* ERROR and WARN lines of the log past offset `from`; the first ERROR line
 * (else WARN) into first. */
static void log_count(const daemon_ref *d, long from, int *errors, int *warns, char *first,
                      size_t len) {
  *errors = *warns = -1;
  if (from < 0) return;
  FILE *f = fopen(d->log, "r");
  if (!f) return;
  *errors = *warns = 0;
  char warn1[320] = "";
  if (fseek(f, from, SEEK_SET) == 0) {
    char line[2048];
    while (fgets(line, sizeof line, f)) {
      line[strcspn(line, "\n")] = 0;
      if (strstr(line, "] ERROR ")) {
        if (!(*errors)++ && !first[0]) snprintf(first, len, "%.300s", line);
      } else if (strstr(line, "] WARN ")) {
        if (!(*warns)++) snprintf(warn1, sizeof warn1, "%.300s", line);
      }
    }
  }
  if (!first[0] && warn1[0]) snprintf(first, len, "%s", warn1);
  fclose(f);
}

/* ------------------------------------------------------------------------
 * The table
 * ---------------------------------------------------------------------- */

static void fmt_rss(const gl_proc_figures *f, char *buf, size_t len) {
  if (f->rss_kib < 0) snprintf(buf, len, "-");
  else snprintf(buf, len, "%.1f", (double)f->rss_kib / 1024.0);
}

static void print_header(void) {
  printf("| class | clients | cycles/s | cycle p50 / p90 ms | failures | "
         "daemon RSS MB before / after / settled | fds | children |\n"
         "| --- | ---: | ---: | ---: | --- | --- | --- | --- |\n");
}

/* "a / b / c" of three figures, "-" for one not taken (negative). */
static void fmt3(int a, int b, int c, bool have_c, char *buf, size_t len) {
  char x[3][16];
  const int v[3] = {a, b, have_c ? c : -1};
  for (int i = 0; i < 3; i++) {
    if (v[i] < 0) snprintf(x[i], sizeof x[i], "-");
    else snprintf(x[i], sizeof x[i], "%d", v[i]);
  }
  snprintf(buf, len, "%s / %s / %s", x[0], x[1], x[2]);
}

static void print_row(const row *r) {
  char rb[24], ra[24], rs[24], fd[64], ch[64], lat[48];
  fmt_rss(&r->before, rb, sizeof rb);
  fmt_rss(&r->after, ra, sizeof ra);
  fmt_rss(&r->settled, rs, sizeof rs);
  if (!r->have_settled) snprintf(rs, sizeof rs, "-");
  fmt3(r->before.fds, r->after.fds, r->settled.fds, r->have_settled, fd, sizeof fd);
  fmt3(r->before.children, r->after.children, r->settled.children, r->have_settled, ch,
       sizeof ch);
  if (r->p50 >= 0) snprintf(lat, sizeof lat, "%.1f / %.1f", r->p50, r->p90);
  else snprintf(lat, sizeof lat, "none completed");
  printf("| %s | %d | %.1f | %s | %s | %s / %s / %s | %s | %s |\n", r->cls, r->clients, r->rate,
         lat, r->fails, rb, ra, rs, fd, ch);
}

/* ------------------------------------------------------------------------
 * One row
 * ---------------------------------------------------------------------- */

/* 0, or -1 when the run cannot go on (clients not connected, an output
 * wrong, the daemon gone). */
static int run_row(const config *c, daemon_ref *d, const gpulease_connect_options *o,
                   gpulease_lease_class cls, int n, row *r) {
  memset(r, 0, sizeof *r);
  snprintf(r->cls, sizeof r->cls, "%s", gpulease_lease_class_name(cls));
  r->clients = n;
  r->p50 = r->p90 = -1;
  uint64_t mib = cls == GPULEASE_CLASS_SHARED ? c->shared_mib : c->isolated_mib;
  long log0 = log_size(d);
  figures(d, &r->before);
  gpulease_client **cl = calloc((size_t)n, sizeof *cl);
  if (!cl) return -1;
  gpulease_error err = {0};
  double t0 = gl_bench_now_ms();
  int got = gl_clients_connect(o, n, c->parallel, cl, &err);
  double connect_s = (gl_bench_now_ms() - t0) / 1000.0;
  int rc = 0;
  if (got < n) {
    snprintf(r->fails, sizeof r->fails, "connect: %d of %d", got, n);
    snprintf(r->note, sizeof r->note, "connecting: %.300s", err.message);
    rc = -1;
  } else {
    printf("# %s, %d clients: connected in %.1f s; %d s of alloc %llu MiB + GPU_SUBMIT + free "
           "each%s\n",
           r->cls, n, connect_s, c->phase_s, (unsigned long long)mib,
           c->warmup_s ? " after a warm-up pass" : "");
    fflush(stdout);
    gl_cycle_stats st;
    gl_cycle_opts co = {.cls = cls, .bytes = mib << 20, .secs = c->warmup_s};
    if (c->warmup_s > 0) {
      gl_cycles_run(cl, n, &co, &st);
      char f[256];
      gl_cycle_fails_format(&st, f, sizeof f);
      printf("#   warm-up: %zu cycles in %.1f s, failures %s\n", st.cycles, st.secs, f);
      if (st.wrong) rc = -1;
      gl_cycle_stats_free(&st);
    }
    co.secs = c->phase_s;
    if (gl_cycles_run(cl, n, &co, &st) != 0 && st.clients < n) rc = -1;
    r->rate = st.secs > 0 ? (double)st.cycles / st.secs : 0;
    r->p50 = gl_cycle_quantile(&st, 0.5);
    r->p90 = gl_cycle_quantile(&st, 0.9);
    r->nfail = st.nfail;
    r->idle_clients = st.idle_clients;
    gl_cycle_fails_format(&st, r->fails, sizeof r->fails);
    if (st.first_msg[0]) snprintf(r->note, sizeof r->note, "first failure: %.300s", st.first_msg);
    if (st.wrong) rc = -1;
    gl_cycle_stats_free(&st);
  }
  gl_clients_close(cl, n);
  free(cl);
  figures(d, &r->after);
  if (c->settle_s > 0) {
    gl_bench_pause_ms(1000 * c->settle_s);
    figures(d, &r->settled);
    r->have_settled = true;
  }
  char first[320] = "";
  log_count(d, log0, &r->log_errors, &r->log_warns, first, sizeof first);
  print_row(r);
  if (r->idle_clients) printf("|   %d of %d clients completed no cycle |\n", r->idle_clients, n);
  if (r->note[0]) printf("|   %s |\n", r->note);
  if (r->log_errors >= 0 && (r->log_errors || r->log_warns))
    printf("|   daemon log: %d ERROR, %d WARN lines, e.g. %s |\n", r->log_errors, r->log_warns,
           first);
  fflush(stdout);
  if (!daemon_alive(d)) {
    fprintf(stderr, "bench: the daemon is gone\n");
    rc = -1;
  }
  return rc;
}

int main(int argc, char **argv) {
  config c;
  if (parse_args(argc, argv, &c) != 0) return usage(argv[0]);
  signal(SIGPIPE, SIG_IGN);
  /* A socket a client, a few descriptors for the rest. */
  long want = 2L * max_count(&c) + 256;
  long have = gl_raise_nofile(want);
  if (have < want)
    fprintf(stderr, "bench: RLIMIT_NOFILE is %ld, under the %ld the clients may need\n", have,
            want);
  daemon_ref d = {0};
  if (c.gpuleased) {
    if (daemon_start(&c, &d) != 0) {
      daemon_stop(&d, true);
      return 1;
    }
  } else {
    snprintf(d.addr, sizeof d.addr, "%s", c.addr);
    if (c.pin) snprintf(d.fp, sizeof d.fp, "%s", c.pin);
    d.pid = c.daemon_pid;
  }
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = d.addr;
  o.pin_sha256 = d.fp[0] ? d.fp : NULL;
  o.insecure = !d.fp[0];
  o.bearer_token = c.token;
  o.timeout_ms = (uint32_t)c.timeout_ms;
  o.no_local = 1; /* QUIC, as remote clients: one UDP socket a client */

  gl_proc_figures base;
  figures(&d, &base);
  printf("== load%s%s%s: daemon pid %d at %s: RSS %.1f MB, %d fds, %d children at start\n",
         c.label[0] ? " (" : "", c.label, c.label[0] ? ")" : "", (int)d.pid, d.addr,
         base.rss_kib >= 0 ? (double)base.rss_kib / 1024.0 : -1.0, base.fds, base.children);
  printf("# each row: %d s measured (after %d s of warm-up), the daemon's figures before the "
         "clients connect, after they closed and %d s later\n",
         c.phase_s, c.warmup_s, c.settle_s);
  print_header();
  fflush(stdout);
  int rc = 0;
  for (int k = 0; k < c.nclasses && !rc; k++)
    for (int i = 0; i < c.ncounts && !rc; i++) {
      if (run_row(&c, &d, &o, c.classes[k], c.counts[i], &g_rows[g_nrows]) != 0) rc = 1;
      g_nrows++;
    }
  printf("\n== load figures%s%s%s (shared %llu MiB, isolated %llu MiB leases; %d s a phase)\n",
         c.label[0] ? " (" : "", c.label, c.label[0] ? ")" : "",
         (unsigned long long)c.shared_mib, (unsigned long long)c.isolated_mib, c.phase_s);
  print_header();
  for (int i = 0; i < g_nrows; i++) print_row(&g_rows[i]);
  fflush(stdout);
  if (d.ours && d.pid <= 0) rc = 1;
  daemon_stop(&d, c.keep_dir || rc != 0);
  return rc;
}
