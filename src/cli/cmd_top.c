/*
 * cmd_top.c - `gpulease top`: a live view of one node.
 *
 * Each frame reads the daemon's inventory (GET_INVENTORY, as `gpulease
 * inventory`) and its Prometheus exposition (/metrics, over HTTP with
 * libcurl; prom_text.c parses it). The GPU rows come from the inventory
 * (VRAM, leases, the fenced flag) and the metrics (sessions, NVML
 * utilisation and temperature); rates are the growth of the daemon's
 * counters between two scrapes divided by the time between them, so the
 * first frame of a live view has none and `--once` scrapes twice.
 *
 * The metrics endpoint is optional: one that cannot be read is a one-line
 * note in the frame. The inventory is not: without it --once fails, and a
 * live view that loses its connection notes it and reconnects next frame.
 */
#include <curl/curl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/prom_text.h"
#include "common/util.h"

#define TOP_MAX_BODY ((size_t)8 << 20) /* the largest exposition read */
#define TOP_MAX_OPS 128
#define TOP_OP_NAME 64
#define TOP_TEXT_OPS 12 /* ops listed in the text view */
#define METRICS_PORT 9701

typedef struct top_gpu_metrics {
  double leases, sessions, alloc, fenced, util_ratio, temp_c, warm_ready, warm_starting;
} top_gpu_metrics;

typedef struct top_op {
  char name[TOP_OP_NAME];
  double count, sum_s, errors;
} top_op;

/* What one scrape of /metrics found; NAN where the text had no value. */
typedef struct top_scrape {
  bool ok;
  char note[4096]; /* why not ok, or what was wrong with the text */
  uint64_t t_ns;
  double acquired, dropped, submits, submit_errors, in_bytes, out_bytes, faults, connections;
  top_gpu_metrics gpu[GPULEASE_MAX_GPUS];
  top_op ops[TOP_MAX_OPS];
  size_t nops;
} top_scrape;

typedef struct top_op_rate {
  const char *name;
  double per_s, errors_per_s, mean_ms; /* mean_ms NAN without requests */
} top_op_rate;

typedef struct top_rates {
  bool have;
  double seconds;
  double submits, submit_errors, acquired, dropped, in_bytes, out_bytes, faults;
  top_op_rate ops[TOP_MAX_OPS];
  size_t nops;
} top_rates;

typedef struct top_ctx {
  gl_cli *cli;
  const char *addr; /* for the header */
  char url[2100];   /* "" with --metrics none */
  CURL *curl;
  char curl_err[CURL_ERROR_SIZE];
  char *body;
  size_t body_len;
  bool body_too_large;
  gpulease_client *client;
  bool tty;
  gpulease_error err; /* the last failure of read_inventory */
  const char *err_what;
} top_ctx;

static volatile sig_atomic_t g_stop;

static void on_signal(int sig) {
  (void)sig;
  g_stop = 1;
}

/* ---- helpers ---------------------------------------------------------- */

/* Copies s for a terminal: control bytes (ESC and others) become '?'. */
static const char *printable(const char *s, char *buf, size_t len) {
  size_t i = 0;
  for (; s[i] && i + 1 < len; i++) {
    unsigned char c = (unsigned char)s[i];
    buf[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
  }
  buf[i] = 0;
  return buf;
}

/* Bytes for people: "512 B", "1.0 MiB", "79.6 GiB"; "-" for NAN. */
static const char *human_bytes(double v, char *buf, size_t len) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (isnan(v)) {
    snprintf(buf, len, "-");
    return buf;
  }
  int u = 0;
  while (fabs(v) >= 1024 && u < 5) {
    v /= 1024;
    u++;
  }
  if (u == 0) snprintf(buf, len, "%.0f B", v);
  else snprintf(buf, len, "%.1f %s", v, units[u]);
  return buf;
}

/* v with `decimals` decimals and a suffix; "-" for NAN. */
static const char *fmt_num(double v, int decimals, const char *suffix, char *buf, size_t len) {
  if (isnan(v)) snprintf(buf, len, "-");
  else snprintf(buf, len, "%.*f%s", decimals, v, suffix);
  return buf;
}

static json_object *json_num(double v) {
  return isnan(v) ? NULL : json_object_new_double(v);
}

/* A count as a JSON integer; null when unknown, and a double where it
 * would not fit (the text is the daemon's: it may say anything). */
static json_object *json_count(double v) {
  if (isnan(v)) return NULL;
  if (v >= 0 && v < 0x1p64 && v == floor(v)) return json_object_new_uint64((uint64_t)v);
  return json_object_new_double(v);
}

/* ---- reading /metrics ------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t n, void *user) {
  top_ctx *t = user;
  size_t len = size * n;
  if (len > TOP_MAX_BODY - t->body_len) {
    t->body_too_large = true;
    return 0; /* aborts the transfer */
  }
  char *b = realloc(t->body, t->body_len + len + 1);
  if (!b) return 0;
  memcpy(b + t->body_len, p, len);
  t->body = b;
  t->body_len += len;
  return len;
}

static int on_progress(void *user, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
  (void)user;
  (void)a;
  (void)b;
  (void)c;
  (void)d;
  return g_stop ? 1 : 0; /* Ctrl-C ends a slow scrape at once */
}

static int curl_setup(top_ctx *t) {
  t->curl = curl_easy_init();
  if (!t->curl) return -1;
  CURL *h = t->curl;
  curl_easy_setopt(h, CURLOPT_URL, t->url);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "gpulease-top");
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, ""); /* whatever curl can decode */
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, t->curl_err);
  return 0;
}

static void scrape_clear(top_scrape *s) {
  memset(s, 0, sizeof *s);
  s->acquired = s->dropped = s->submits = s->submit_errors = NAN;
  s->in_bytes = s->out_bytes = s->faults = s->connections = NAN;
  for (size_t g = 0; g < GPULEASE_MAX_GPUS; g++) {
    top_gpu_metrics *m = &s->gpu[g];
    m->leases = m->sessions = m->alloc = m->fenced = m->util_ratio = m->temp_c = NAN;
    m->warm_ready = m->warm_starting = NAN;
  }
}

/* Values that are not finite count as absent: no rate comes of them. */
static double value_of(const gl_prom_set *set, const char *name) {
  const gl_prom_sample *p = gl_prom_find(set, name, NULL, NULL);
  return p && isfinite(p->value) ? p->value : NAN;
}

/* The GPU index of a sample's gpu label, or -1. */
static int gpu_of(const gl_prom_sample *p) {
  const char *v = gl_prom_label_value(p, "gpu");
  uint64_t g;
  if (!v || gl_parse_u64(v, GPULEASE_MAX_GPUS - 1, &g) != 0) return -1;
  return (int)g;
}

static top_op *op_slot(top_scrape *s, const char *name) {
  if (strlen(name) >= TOP_OP_NAME) return NULL;
  for (size_t i = 0; i < s->nops; i++)
    if (strcmp(s->ops[i].name, name) == 0) return &s->ops[i];
  if (s->nops == TOP_MAX_OPS) return NULL;
  top_op *o = &s->ops[s->nops++];
  snprintf(o->name, sizeof o->name, "%s", name);
  o->count = o->sum_s = o->errors = NAN;
  return o;
}

static void set_once(double *slot, double v) {
  if (isnan(*slot) && isfinite(v)) *slot = v; /* the first sample of a repeated series wins */
}

/* Takes what top shows out of a parsed exposition. */
static void scrape_take(top_scrape *s, const gl_prom_set *set) {
  s->acquired = value_of(set, "gpulease_leases_acquired_total");
  size_t n;
  double dropped = gl_prom_sum(set, "gpulease_leases_dropped_total", NULL, NULL, &n);
  s->dropped = n && isfinite(dropped) ? dropped : NAN;
  s->submits = value_of(set, "gpulease_submits_total");
  /* Only statuses that occurred are listed: none listed is 0 errors. */
  double errors = gl_prom_sum(set, "gpulease_submit_errors_total", NULL, NULL, NULL);
  s->submit_errors = isnan(s->submits) || !isfinite(errors) ? NAN : errors;
  s->in_bytes = value_of(set, "gpulease_request_bytes_total");
  s->out_bytes = value_of(set, "gpulease_response_bytes_total");
  s->faults = value_of(set, "gpulease_worker_faults_total");
  s->connections = value_of(set, "gpulease_connections");
  for (size_t i = 0; i < set->count; i++) {
    const gl_prom_sample *p = &set->samples[i];
    const char *name = p->name;
    if (strncmp(name, "gpulease_request_", 17) == 0) {
      const char *op = gl_prom_label_value(p, "op");
      top_op *o;
      if (!op) continue;
      if (strcmp(name, "gpulease_request_duration_seconds_count") == 0) {
        if ((o = op_slot(s, op))) set_once(&o->count, p->value);
      } else if (strcmp(name, "gpulease_request_duration_seconds_sum") == 0) {
        if ((o = op_slot(s, op))) set_once(&o->sum_s, p->value);
      } else if (strcmp(name, "gpulease_request_errors_total") == 0) {
        if ((o = op_slot(s, op))) set_once(&o->errors, p->value);
      }
      continue;
    }
    int g = gpu_of(p);
    if (g < 0) continue;
    top_gpu_metrics *m = &s->gpu[g];
    if (strcmp(name, "gpulease_leases") == 0) set_once(&m->leases, p->value);
    else if (strcmp(name, "gpulease_sessions") == 0) set_once(&m->sessions, p->value);
    else if (strcmp(name, "gpulease_vram_allocated_bytes") == 0) set_once(&m->alloc, p->value);
    else if (strcmp(name, "gpulease_gpu_fenced") == 0) set_once(&m->fenced, p->value);
    else if (strcmp(name, "gpulease_gpu_utilization_ratio") == 0) set_once(&m->util_ratio, p->value);
    else if (strcmp(name, "gpulease_gpu_temperature_celsius") == 0) set_once(&m->temp_c, p->value);
    else if (strcmp(name, "gpulease_warm_workers") == 0) {
      const char *st = gl_prom_label_value(p, "state");
      if (st && strcmp(st, "ready") == 0) set_once(&m->warm_ready, p->value);
      else if (st && strcmp(st, "starting") == 0) set_once(&m->warm_starting, p->value);
    }
  }
}

static void scrape(top_ctx *t, top_scrape *s) {
  scrape_clear(s);
  if (!t->url[0]) return;
  t->body_len = 0;
  t->body_too_large = false;
  t->curl_err[0] = 0;
  CURLcode rc = curl_easy_perform(t->curl);
  s->t_ns = gl_mono_ns();
  if (rc != CURLE_OK) {
    if (t->body_too_large)
      snprintf(s->note, sizeof s->note, "metrics: %s is larger than %zu MiB; not read", t->url,
               TOP_MAX_BODY >> 20);
    else
      snprintf(s->note, sizeof s->note, "metrics: cannot read %s: %s", t->url,
               t->curl_err[0] ? t->curl_err : curl_easy_strerror(rc));
    return;
  }
  long code = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
  if (code != 200) {
    snprintf(s->note, sizeof s->note, "metrics: %s answered HTTP %ld", t->url, code);
    return;
  }
  static gl_prom_set set;
  if (gl_prom_parse(t->body ? t->body : "", t->body_len, &set) != 0) {
    snprintf(s->note, sizeof s->note, "metrics: out of memory parsing %s", t->url);
    return;
  }
  if (set.count == 0) {
    snprintf(s->note, sizeof s->note, "metrics: %s has no samples (%zu malformed line(s))",
             t->url, set.malformed);
  } else {
    s->ok = true;
    scrape_take(s, &set);
    if (isnan(s->submits) && isnan(s->acquired))
      snprintf(s->note, sizeof s->note, "metrics: %s has no gpulease_ metrics (not a gpuleased?)",
               t->url);
    else if (set.malformed)
      snprintf(s->note, sizeof s->note,
               "metrics: %zu malformed line(s) of %s skipped (the first: line %zu)",
               set.malformed, t->url, set.first_bad);
  }
  gl_prom_set_free(&set);
}

/* ---- rates ------------------------------------------------------------ */

/* A counter's growth per second; a counter that went down was reset (the
 * daemon restarted), so all of its value is growth. */
static double rate_of(double cur, double prev, double secs) {
  if (isnan(cur) || isnan(prev) || !(secs > 0)) return NAN;
  return (cur >= prev ? cur - prev : cur) / secs;
}

static int op_rate_cmp(const void *a, const void *b) {
  const top_op_rate *x = a, *y = b;
  double px = isnan(x->per_s) ? -1 : x->per_s, py = isnan(y->per_s) ? -1 : y->per_s;
  if (px != py) return px > py ? -1 : 1;
  return strcmp(x->name, y->name);
}

static void rates_of(const top_scrape *prev, const top_scrape *cur, top_rates *r) {
  memset(r, 0, sizeof *r);
  if (!prev->ok || !cur->ok || cur->t_ns <= prev->t_ns) return;
  double secs = (double)(cur->t_ns - prev->t_ns) / 1e9;
  r->have = true;
  r->seconds = secs;
  r->submits = rate_of(cur->submits, prev->submits, secs);
  r->submit_errors = rate_of(cur->submit_errors, prev->submit_errors, secs);
  r->acquired = rate_of(cur->acquired, prev->acquired, secs);
  r->dropped = rate_of(cur->dropped, prev->dropped, secs);
  r->in_bytes = rate_of(cur->in_bytes, prev->in_bytes, secs);
  r->out_bytes = rate_of(cur->out_bytes, prev->out_bytes, secs);
  r->faults = rate_of(cur->faults, prev->faults, secs);
  for (size_t i = 0; i < cur->nops; i++) {
    const top_op *c = &cur->ops[i];
    if (isnan(c->count)) continue;
    /* An op the previous text did not list had not been asked for yet. */
    top_op p = {.count = 0, .sum_s = 0, .errors = 0};
    for (size_t j = 0; j < prev->nops; j++)
      if (strcmp(prev->ops[j].name, c->name) == 0) p = prev->ops[j];
    top_op_rate *o = &r->ops[r->nops++];
    o->name = c->name;
    double dc = isnan(p.count) ? NAN : (c->count >= p.count ? c->count - p.count : c->count);
    double ds = isnan(c->sum_s) || isnan(p.sum_s)
                    ? NAN
                    : (c->count >= p.count ? c->sum_s - p.sum_s : c->sum_s);
    o->per_s = isnan(dc) ? 0 : dc / secs;
    o->errors_per_s = rate_of(c->errors, isnan(p.errors) ? 0 : p.errors, secs);
    o->mean_ms = dc > 0 && !isnan(ds) && ds >= 0 ? ds / dc * 1e3 : NAN;
  }
  qsort(r->ops, r->nops, sizeof r->ops[0], op_rate_cmp);
}

/* ---- one frame -------------------------------------------------------- */

typedef struct top_frame {
  const gpulease_inventory *inv; /* NULL: not read */
  char inv_note[4096];
  const top_scrape *s;
  const top_rates *r;
  bool first; /* a live view's first frame: no rates yet */
  uint64_t unix_s;
} top_frame;

static bool fenced_of(const top_frame *f, const gpulease_gpu_info *g) {
  const top_gpu_metrics *m = g->index < GPULEASE_MAX_GPUS ? &f->s->gpu[g->index] : NULL;
  return (g->flags & GPULEASE_GPU_FENCED) || (m && m->fenced == 1);
}

static const top_gpu_metrics *metrics_of(const top_frame *f, const gpulease_gpu_info *g) {
  static top_gpu_metrics none = {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
  return g->index < GPULEASE_MAX_GPUS ? &f->s->gpu[g->index] : &none;
}

static void print_text(const top_ctx *t, const top_frame *f) {
  char a[64], b[64], c[64], d[64], e[64], nb[128];
  char when[64];
  time_t now = (time_t)f->unix_s;
  struct tm tm;
  localtime_r(&now, &tm);
  strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
  if (t->tty) fputs("\033[H\033[2J", stdout);
  uint32_t ngpu = f->inv ? f->inv->gpu_count : 0;
  printf("gpulease top: node %s, %s GPU%s, %s connection%s, %s\n",
         printable(t->addr, nb, sizeof nb), fmt_num(f->inv ? ngpu : NAN, 0, "", b, sizeof b),
         ngpu == 1 ? "" : "s", fmt_num(f->s->connections, 0, "", a, sizeof a),
         f->s->connections == 1 ? "" : "s", when);
  if (!f->inv) printf("%s\n", f->inv_note);
  if (f->inv && ngpu == 0) printf("no GPU on this node\n");
  if (f->inv && ngpu > 0) {
    int w = 4;
    for (uint32_t i = 0; i < ngpu; i++) {
      int n = (int)strnlen(f->inv->gpus[i].name, sizeof f->inv->gpus[i].name);
      if (n > w) w = n;
    }
    printf("%-3s %-*s %10s %10s %10s %6s %8s %5s %5s %s\n", "GPU", w, "NAME", "VRAM", "ALLOC",
           "FREE", "LEASES", "SESSIONS", "UTIL", "TEMP", "FENCED");
    for (uint32_t i = 0; i < ngpu; i++) {
      const gpulease_gpu_info *g = &f->inv->gpus[i];
      const top_gpu_metrics *m = metrics_of(f, g);
      char name[sizeof g->name], util[32], temp[32];
      printable(g->name, name, sizeof name);
      fmt_num(m->util_ratio * 100, 0, "%", util, sizeof util);
      fmt_num(m->temp_c, 0, "C", temp, sizeof temp);
      printf("%-3" PRIu32 " %-*s %10s %10s %10s %6" PRIu32 " %8s %5s %5s %s%s\n", g->index, w,
             name, human_bytes((double)g->total_vram_bytes, a, sizeof a),
             human_bytes((double)g->leased_vram_bytes, b, sizeof b),
             human_bytes((double)g->free_vram_bytes, c, sizeof c), g->active_leases,
             fmt_num(m->sessions, 0, "", d, sizeof d), util, temp,
             fenced_of(f, g) ? "yes" : "no",
             (g->flags & GPULEASE_GPU_EMULATED) ? "  (emulated)" : "");
    }
  }
  if (!t->url[0]) {
    printf("metrics: none (--metrics none): no sessions, utilisation, temperature or rates\n");
    return;
  }
  if (f->s->note[0]) printf("%s\n", f->s->note);
  if (!f->s->ok) return;
  const top_rates *r = f->r;
  if (!r->have) {
    printf("rates: %s\n", f->first ? "from the next frame on (they need two scrapes)"
                                   : "none this frame (the previous scrape failed)");
    return;
  }
  printf("over the last %.2f s: submits %s/s, submit errors %s/s, leases acquired %s/s, "
         "dropped %s/s\n",
         r->seconds, fmt_num(r->submits, 1, "", a, sizeof a),
         fmt_num(r->submit_errors, 1, "", b, sizeof b), fmt_num(r->acquired, 1, "", c, sizeof c),
         fmt_num(r->dropped, 1, "", d, sizeof d));
  char in[64], out[64];
  printf("bytes in %s/s, out %s/s; worker faults %s/s\n", human_bytes(r->in_bytes, in, sizeof in),
         human_bytes(r->out_bytes, out, sizeof out), fmt_num(r->faults, 1, "", e, sizeof e));
  size_t busy = 0;
  for (size_t i = 0; i < r->nops; i++) busy += r->ops[i].per_s > 0;
  if (busy == 0) {
    printf("requests: none\n");
    return;
  }
  printf("requests/s by op:\n");
  for (size_t i = 0; i < busy && i < TOP_TEXT_OPS; i++) {
    const top_op_rate *o = &r->ops[i];
    char op[TOP_OP_NAME];
    printf("  %-24s %10.1f/s  mean %s ms", printable(o->name, op, sizeof op), o->per_s,
           fmt_num(o->mean_ms, 3, "", a, sizeof a));
    if (o->errors_per_s > 0) printf("  errors %.1f/s", o->errors_per_s);
    putchar('\n');
  }
  if (busy > TOP_TEXT_OPS) printf("  (%zu more ops)\n", busy - TOP_TEXT_OPS);
}

static json_object *frame_json(const top_ctx *t, const top_frame *f) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "node", json_object_new_string(t->addr));
  json_object_object_add(o, "unix_s", json_object_new_uint64(f->unix_s));
  json_object_object_add(o, "connections", json_count(f->s->connections));
  json_object *m = json_object_new_object();
  json_object_object_add(m, "url", t->url[0] ? json_object_new_string(t->url) : NULL);
  json_object_object_add(m, "ok", json_object_new_boolean(f->s->ok));
  json_object_object_add(m, "note", f->s->note[0] ? json_object_new_string(f->s->note) : NULL);
  json_object_object_add(o, "metrics", m);
  json_object_object_add(o, "inventory_error", f->inv ? NULL : json_object_new_string(f->inv_note));
  json_object *gpus = json_object_new_array();
  for (uint32_t i = 0; f->inv && i < f->inv->gpu_count; i++) {
    const gpulease_gpu_info *g = &f->inv->gpus[i];
    const top_gpu_metrics *gm = metrics_of(f, g);
    json_object *j = json_object_new_object();
    json_object_object_add(j, "index", json_object_new_int64(g->index));
    json_object_object_add(j, "name", json_object_new_string(g->name));
    json_object_object_add(j, "uuid", json_object_new_string(g->uuid));
    json_object_object_add(j, "emulated",
                           json_object_new_boolean((g->flags & GPULEASE_GPU_EMULATED) != 0));
    json_object_object_add(j, "total_vram_bytes", json_object_new_uint64(g->total_vram_bytes));
    json_object_object_add(j, "allocated_vram_bytes", json_object_new_uint64(g->leased_vram_bytes));
    json_object_object_add(j, "free_vram_bytes", json_object_new_uint64(g->free_vram_bytes));
    json_object_object_add(j, "leases", json_object_new_int64(g->active_leases));
    json_object_object_add(j, "sessions", json_count(gm->sessions));
    json_object_object_add(j, "utilization_pct", json_num(gm->util_ratio * 100));
    json_object_object_add(j, "temperature_c", json_num(gm->temp_c));
    json_object_object_add(j, "fenced", json_object_new_boolean(fenced_of(f, g)));
    json_object_object_add(j, "warm_workers_ready", json_count(gm->warm_ready));
    json_object_object_add(j, "warm_workers_starting", json_count(gm->warm_starting));
    json_object_array_add(gpus, j);
  }
  json_object_object_add(o, "gpus", gpus);
  const top_rates *r = f->r;
  if (!r->have) {
    json_object_object_add(o, "rates", NULL);
    return o;
  }
  json_object *rj = json_object_new_object();
  json_object_object_add(rj, "interval_s", json_object_new_double(r->seconds));
  json_object_object_add(rj, "submits_per_s", json_num(r->submits));
  json_object_object_add(rj, "submit_errors_per_s", json_num(r->submit_errors));
  json_object_object_add(rj, "leases_acquired_per_s", json_num(r->acquired));
  json_object_object_add(rj, "leases_dropped_per_s", json_num(r->dropped));
  json_object_object_add(rj, "bytes_in_per_s", json_num(r->in_bytes));
  json_object_object_add(rj, "bytes_out_per_s", json_num(r->out_bytes));
  json_object_object_add(rj, "worker_faults_per_s", json_num(r->faults));
  json_object *ops = json_object_new_array();
  for (size_t i = 0; i < r->nops; i++) {
    json_object *j = json_object_new_object();
    json_object_object_add(j, "op", json_object_new_string(r->ops[i].name));
    json_object_object_add(j, "per_s", json_object_new_double(r->ops[i].per_s));
    json_object_object_add(j, "errors_per_s", json_num(r->ops[i].errors_per_s));
    json_object_object_add(j, "mean_latency_ms", json_num(r->ops[i].mean_ms));
    json_object_array_add(ops, j);
  }
  json_object_object_add(rj, "requests", ops);
  json_object_object_add(o, "rates", rj);
  return o;
}

static void print_frame(const top_ctx *t, const top_frame *f, bool once) {
  if (t->cli->json) {
    json_object *o = frame_json(t, f);
    /* a live view: one object a line, for tools that read a stream */
    int flags = once ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN;
    puts(json_object_to_json_string_ext(o, flags | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
  } else {
    print_text(t, f);
    if (!once && !t->tty) putchar('\n'); /* frames apart in a log */
  }
  fflush(stdout);
}

/* Reads the inventory, connecting first when there is no connection. On
 * failure fills note and drops the connection. 0 or -1. */
static int read_inventory(top_ctx *t, gpulease_inventory *inv, char *note, size_t len) {
  gpulease_error *err = &t->err;
  if (!t->client) {
    gpulease_connect_options o;
    gpulease_connect_options_default(&o);
    o.addr = t->addr;
    o.ca_file = t->cli->ca_file;
    o.pin_sha256 = t->cli->pin_sha256;
    o.insecure = t->cli->insecure;
    o.cert_file = t->cli->cert_file;
    o.key_file = t->cli->key_file;
    o.bearer_token = t->cli->bearer_token;
    if (t->cli->timeout_ms) o.timeout_ms = t->cli->timeout_ms;
    if (gpulease_client_connect(&o, &t->client, err) != GPULEASE_OK) {
      t->client = NULL;
      t->err_what = "top: connect";
      snprintf(note, len, "inventory: cannot connect to %s: %s: %s", t->addr,
               gpulease_status_name(err->status), err->message);
      return -1;
    }
  }
  gpulease_inventory_init(inv);
  if (gpulease_inventory_get(t->client, inv, err) != GPULEASE_OK) {
    t->err_what = "top: inventory";
    snprintf(note, len, "inventory: %s: %s", gpulease_status_name(err->status), err->message);
    gpulease_client_close(t->client);
    t->client = NULL;
    return -1;
  }
  return 0;
}

/* Sleeps until the monotonic time deadline_ns, or a signal to stop. */
static void sleep_until(uint64_t deadline_ns) {
  while (!g_stop) {
    uint64_t now = gl_mono_ns();
    if (now >= deadline_ns) return;
    uint64_t left = deadline_ns - now;
    struct timespec ts = {.tv_sec = (time_t)(left / 1000000000u),
                          .tv_nsec = (long)(left % 1000000000u)};
    nanosleep(&ts, NULL); /* EINTR: look at g_stop again */
  }
}

/* ---- the command ------------------------------------------------------ */

static int check_url(const char *u) {
  size_t n = strlen(u);
  if (n == 0 || n >= 2048) return -1;
  if (strncasecmp(u, "http://", 7) != 0 && strncasecmp(u, "https://", 8) != 0) return -1;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)u[i] <= 0x20 || u[i] == 0x7f) return -1;
  return 0;
}

static int top_setup(top_ctx *t, gl_cli *cli) {
  memset(t, 0, sizeof *t);
  t->cli = cli;
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  t->addr = cli->addr ? cli->addr : o.addr;
  t->tty = isatty(STDOUT_FILENO) == 1;
  if (cli->metrics_url && strcmp(cli->metrics_url, "none") == 0) return 0;
  if (cli->metrics_url) {
    if (check_url(cli->metrics_url) != 0)
      return cli_usage_error("--metrics: expected an http:// or https:// URL or 'none', got '%s'",
                             cli->metrics_url);
    snprintf(t->url, sizeof t->url, "%s", cli->metrics_url);
  } else {
    char host[256];
    uint16_t port;
    if (gl_parse_hostport(t->addr, 5701, host, sizeof host, &port) != 0)
      return cli_usage_error("--addr: cannot take a host out of '%s' for --metrics", t->addr);
    bool v6 = strchr(host, ':') != NULL;
    snprintf(t->url, sizeof t->url, "http://%s%s%s:%d/metrics", v6 ? "[" : "", host, v6 ? "]" : "",
             METRICS_PORT);
  }
  return 0;
}

int cmd_top(gl_cli *cli) {
  if (cli->nwords != 1) return cli_usage_error("top takes options only");
  int rc = cli_only(cli, OPT_METRICS | OPT_INTERVAL | OPT_ONCE, "top");
  if (rc) return rc;
  static top_ctx t;
  if ((rc = top_setup(&t, cli))) return rc;
  /* The handlers come first: Ctrl-C during a slow start stops the view. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal; /* no SA_RESTART: a sleep ends at once */
  sigemptyset(&sa.sa_mask);
  g_stop = 0;
  if (!cli->once) {
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
  }

  double interval = cli->interval_s > 0 ? cli->interval_s : 1.0;
  uint64_t interval_ns = (uint64_t)(interval * 1e9);
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    fprintf(stderr, "gpulease: top: cannot start libcurl\n");
    return EXIT_FAILED;
  }
  if (t.url[0] && curl_setup(&t) != 0) {
    fprintf(stderr, "gpulease: top: cannot start libcurl\n");
    curl_global_cleanup();
    return EXIT_FAILED;
  }
  if (cli->insecure)
    fprintf(stderr, "gpulease: warning: --insecure: the daemon's certificate is NOT verified\n");

  static top_scrape scrapes[2];
  static gpulease_inventory inv;
  static top_rates rates;
  top_scrape *prev = &scrapes[0], *cur = &scrapes[1];
  top_frame f;
  memset(&f, 0, sizeof f);
  rc = EXIT_OK;
  /* Connect before the first scrape, so that a wrong address fails at once. */
  if (read_inventory(&t, &inv, f.inv_note, sizeof f.inv_note) != 0) {
    rc = cli_fail(cli, t.err_what, &t.err);
    goto out;
  }
  scrape(&t, cur);
  uint64_t next = gl_mono_ns();
  for (unsigned frame = 0; !g_stop; frame++) {
    if (cli->once || frame > 0) {
      next += interval_ns;
      uint64_t now = gl_mono_ns();
      if (next < now) next = now; /* a slow frame: no catching up */
      sleep_until(next);
      if (g_stop) break;
      top_scrape *tmp = prev;
      prev = cur;
      cur = tmp;
      scrape(&t, cur);
      if (g_stop) break;
      rates_of(prev, cur, &rates);
    } else {
      memset(&rates, 0, sizeof rates);
    }
    if (cli->once || frame > 0) /* a live view's first frame has the one read above */
      f.inv = read_inventory(&t, &inv, f.inv_note, sizeof f.inv_note) == 0 ? &inv : NULL;
    else
      f.inv = &inv;
    if (!f.inv && cli->once) {
      rc = cli_fail(cli, t.err_what, &t.err);
      break;
    }
    f.s = cur;
    f.r = &rates;
    f.first = frame == 0 && !cli->once;
    f.unix_s = gl_unix_s();
    print_frame(&t, &f, cli->once);
    if (cli->once) break;
  }
out:
  /* The handlers stay until the process exits: a second SIGINT may still
   * come (timeout(1) signals the command and then its process group), and
   * must not kill the tool while it closes its connection. */
  if (t.client) gpulease_client_close(t.client);
  if (t.curl) curl_easy_cleanup(t.curl);
  free(t.body);
  curl_global_cleanup();
  return rc;
}
