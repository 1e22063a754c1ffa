/* metrics.c - see metrics.h. */
#include "daemon/metrics.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/admit.h"
#include "daemon/ctx_admit.h"
#include "daemon/daemon.h"
#include "daemon/lease_admit.h"
#include "gpu/nvml.h"
#include "daemon/vram_watch.h"
#include "proto/wire.h"
#include "worker/counters.h"

#define SNAPSHOT_S 1.0
#define MAX_OPS 64 /* distinct ops counted; a few dozen exist */
#define MAX_STATUS 128

/* Request latency buckets, seconds (le). */
static const double k_buckets[] = {10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3,
                                   2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3,
                                   500e-3, 1.0, 2.5, 5.0, 10.0};
#define NBUCKETS (sizeof k_buckets / sizeof k_buckets[0])

typedef struct op_stats {
  uint16_t op;
  uint64_t count;
  uint64_t errors;
  uint64_t buckets[NBUCKETS]; /* cumulative at render time, per bucket here */
  double sum_s;
} op_stats;

struct gl_metrics {
  gl_daemon *d;
  struct MHD_Daemon *mhd;
  uint16_t port;
  ev_timer snap;
  /* counters (main thread) */
  uint64_t acquired, dropped[GL_DROP_N];
  uint64_t submits, submit_errors[MAX_STATUS], submit_output_bytes;
  uint64_t in_bytes, out_bytes, worker_faults;
  op_stats ops[MAX_OPS];
  size_t nops;
  uint8_t slot[0x400]; /* ops below 0x400: 1 + their index in ops[]; 0: none yet */
  /* the latest rendering, read by the HTTP thread */
  pthread_mutex_t mu;
  char *text;
  size_t text_len;
  bool serving;
};

static const char *const k_drop_names[GL_DROP_N] = {"freed", "expired", "fault", "revoked"};

void gl_metrics_lease_acquired(gl_metrics *m) {
  if (m) m->acquired++;
}

void gl_metrics_lease_dropped(gl_metrics *m, enum gl_drop_reason why) {
  if (m && (unsigned)why < GL_DROP_N) m->dropped[why]++;
}

void gl_metrics_submit(gl_metrics *m, int status, uint64_t output_bytes) {
  if (!m) return;
  if (status == GPULEASE_OK) {
    m->submits++;
    m->submit_output_bytes += output_bytes;
  } else if (status > 0 && status < MAX_STATUS) {
    m->submit_errors[status]++;
  }
}

void gl_metrics_worker_fault(gl_metrics *m) {
  if (m) m->worker_faults++;
}

void gl_metrics_request(gl_metrics *m, uint16_t op, int status, uint64_t in_bytes,
                        uint64_t out_bytes, double seconds) {
  if (!m) return;
  m->in_bytes += in_bytes;
  m->out_bytes += out_bytes;
  op_stats *s = NULL;
  if (op < sizeof m->slot && m->slot[op]) {
    s = &m->ops[m->slot[op] - 1];
  } else {
    for (size_t i = 0; i < m->nops && !s; i++) /* the few ops above 0x3FF */
      if (m->ops[i].op == op) s = &m->ops[i];
  }
  if (!s) {
    if (m->nops == MAX_OPS) return;
    s = &m->ops[m->nops++];
    s->op = op;
    if (op < sizeof m->slot) m->slot[op] = (uint8_t)m->nops;
  }
  s->count++;
  if (status != GPULEASE_OK) s->errors++;
  s->sum_s += seconds;
  for (size_t b = 0; b < NBUCKETS; b++)
    if (seconds <= k_buckets[b]) {
      s->buckets[b]++;
      break;
    }
}

void gl_metrics_answer(void *user, uint16_t op, const uint8_t *msg, size_t len,
                       uint64_t in_bytes, double seconds) {
  gl_metrics *m = user;
  if (!m) return;
  gl_header h;
  int status = gl_header_decode(msg, len, &h) == GPULEASE_OK ? h.status : GPULEASE_INTERNAL;
  gl_metrics_request(m, op, status, in_bytes, len, seconds);
  if (op != GL_OP_GPU_SUBMIT) return;
  /* output_len read in place (docs/protocol.md, GPU_SUBMIT): a full
   * gl_response_decode would clear its 16 KiB struct for every submit. */
  uint64_t out = 0;
  size_t body = len >= GL_WIRE_HEADER_SIZE ? len - GL_WIRE_HEADER_SIZE : 0;
  const uint8_t *b = msg + GL_WIRE_HEADER_SIZE;
  size_t mlen = body >= 2 ? (size_t)(b[0] << 8 | b[1]) : 0;
  size_t at = 2 + mlen + 8; /* after the message and gpu_time_ns: u32 output_len */
  if (status == GPULEASE_OK && body >= at + 4)
    out = (uint64_t)b[at] << 24 | (uint64_t)b[at + 1] << 16 | (uint64_t)b[at + 2] << 8 | b[at + 3];
  gl_metrics_submit(m, status, out);
}

/* ---- rendering (main thread) --------------------------------------------- */

typedef struct out {
  char *p;
  size_t len, cap;
  bool oom;
} out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out *o, const char *fmt, ...) {
  if (o->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
      o->oom = true;
      return;
    }
    if ((size_t)n < o->cap - o->len) {
      o->len += (size_t)n;
      return;
    }
    size_t cap = o->cap * 2 + (size_t)n;
    char *q = realloc(o->p, cap);
    if (!q) {
      o->oom = true;
      return;
    }
    o->p = q;
    o->cap = cap;
  }
}

static void help(out *o, const char *name, const char *type, const char *text) {
  put(o, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

static void render(gl_metrics *m) {
  gl_daemon *d = m->d;
  out o = {.cap = 16384};
  o.p = malloc(o.cap);
  if (!o.p) return;
  help(&o, "gpulease_leases_acquired_total", "counter", "Leases granted.");
  put(&o, "gpulease_leases_acquired_total %" PRIu64 "\n", m->acquired);
  help(&o, "gpulease_leases_dropped_total", "counter",
       "Leases ended, by reason: freed by their holder, expired at their TTL, lost to a device "
       "fault (shared context), revoked.");
  for (int r = 0; r < GL_DROP_N; r++)
    put(&o, "gpulease_leases_dropped_total{reason=\"%s\"} %" PRIu64 "\n", k_drop_names[r],
        m->dropped[r]);
  help(&o, "gpulease_submits_total", "counter", "GPU_SUBMITs answered OK.");
  put(&o, "gpulease_submits_total %" PRIu64 "\n", m->submits);
  help(&o, "gpulease_submit_errors_total", "counter", "GPU_SUBMITs refused or failed, by status.");
  for (int st = 1; st < MAX_STATUS; st++)
    if (m->submit_errors[st])
      put(&o, "gpulease_submit_errors_total{status=\"%s\"} %" PRIu64 "\n",
          gpulease_status_name(st), m->submit_errors[st]);
  help(&o, "gpulease_submit_output_bytes_total", "counter",
       "Output bytes GPU_SUBMITs returned.");
  put(&o, "gpulease_submit_output_bytes_total %" PRIu64 "\n", m->submit_output_bytes);
  help(&o, "gpulease_request_bytes_total", "counter", "Bytes of requests received (all ops).");
  put(&o, "gpulease_request_bytes_total %" PRIu64 "\n", m->in_bytes);
  help(&o, "gpulease_response_bytes_total", "counter", "Bytes of responses sent (all ops).");
  put(&o, "gpulease_response_bytes_total %" PRIu64 "\n", m->out_bytes);
  help(&o, "gpulease_worker_faults_total", "counter",
       "Worker processes that ended on their own (a device fault, a crash); the next use of "
       "their lease starts a fresh one.");
  put(&o, "gpulease_worker_faults_total %" PRIu64 "\n", m->worker_faults);
  help(&o, "gpulease_module_cache_hits_total", "counter",
       "Module loads (GPU_SUBMIT, MODULE_LOAD) whose image was loaded in the lease's context "
       "already.");
  put(&o, "gpulease_module_cache_hits_total %" PRIu64 "\n", gl_worker_counter(GL_WC_MODULE_HIT));
  help(&o, "gpulease_module_cache_misses_total", "counter",
       "Module loads that loaded the image into the context.");
  put(&o, "gpulease_module_cache_misses_total %" PRIu64 "\n",
      gl_worker_counter(GL_WC_MODULE_MISS));
  help(&o, "gpulease_jit_cache_hits_total", "counter",
       "PTX loads that found the image compiled for the GPU in the JIT cache on disk.");
  put(&o, "gpulease_jit_cache_hits_total %" PRIu64 "\n", gl_worker_counter(GL_WC_JIT_HIT));
  help(&o, "gpulease_jit_cache_misses_total", "counter",
       "PTX loads that found no compiled image in the JIT cache (compiled now).");
  put(&o, "gpulease_jit_cache_misses_total %" PRIu64 "\n", gl_worker_counter(GL_WC_JIT_MISS));
  help(&o, "gpulease_jit_cache_stores_total", "counter",
       "Compiled images written to the JIT cache.");
  put(&o, "gpulease_jit_cache_stores_total %" PRIu64 "\n", gl_worker_counter(GL_WC_JIT_STORE));
  help(&o, "gpulease_request_duration_seconds", "histogram",
       "Time from a request's arrival at the daemon to its answer, by op.");
  for (size_t i = 0; i < m->nops; i++) {
    const op_stats *s = &m->ops[i];
    const char *name = gl_op_name(s->op);
    uint64_t cum = 0;
    for (size_t b = 0; b < NBUCKETS; b++) {
      cum += s->buckets[b];
      put(&o, "gpulease_request_duration_seconds_bucket{op=\"%s\",le=\"%g\"} %" PRIu64 "\n",
          name, k_buckets[b], cum);
    }
    put(&o, "gpulease_request_duration_seconds_bucket{op=\"%s\",le=\"+Inf\"} %" PRIu64 "\n",
        name, s->count);
    put(&o, "gpulease_request_duration_seconds_sum{op=\"%s\"} %.9f\n", name, s->sum_s);
    put(&o, "gpulease_request_duration_seconds_count{op=\"%s\"} %" PRIu64 "\n", name, s->count);
  }
  help(&o, "gpulease_request_errors_total", "counter", "Requests answered with a status not OK, by op.");
  for (size_t i = 0; i < m->nops; i++)
    put(&o, "gpulease_request_errors_total{op=\"%s\"} %" PRIu64 "\n", gl_op_name(m->ops[i].op),
        m->ops[i].errors);
  uint64_t unfinished = 0, unfinished_bytes = 0;
  if (d->admit) gl_admit_totals(d->admit, &unfinished, &unfinished_bytes);
  help(&o, "gpulease_unfinished_requests", "gauge",
       "Requests whose header has come and been let through but not yet their whole body, "
       "all tenants (bounded per tenant by --max-requests-per-tenant).");
  put(&o, "gpulease_unfinished_requests %" PRIu64 "\n", unfinished);
  help(&o, "gpulease_unfinished_request_bytes", "gauge",
       "What the headers of those requests declare (12 + body_len each): the most the daemon "
       "buffers for them (bounded by --max-buffered-per-connection and -per-tenant).");
  put(&o, "gpulease_unfinished_request_bytes %" PRIu64 "\n", unfinished_bytes);
  help(&o, "gpulease_connections", "gauge", "QUIC connections open on the main port.");
  put(&o, "gpulease_connections %zu\n", gl_daemon_quic_connections(d));
  help(&o, "gpulease_quic_handshakes", "gauge",
       "QUIC connections on the main port whose handshake is under way.");
  put(&o, "gpulease_quic_handshakes %zu\n", gl_daemon_quic_handshakes(d));
  help(&o, "gpulease_quic_retries_total", "counter",
       "QUIC Retry packets sent on the main port (address validation).");
  put(&o, "gpulease_quic_retries_total %zu\n", gl_daemon_quic_retries(d));
  /* Per GPU, one family after another (the exposition format wants each
   * family's samples together under its HELP and TYPE). */
  uint32_t sessions[GPULEASE_MAX_GPUS];
  gl_daemon_sessions_by_gpu(d, sessions);
  uint32_t ngpu = d->node.gpu_count < GPULEASE_MAX_GPUS ? d->node.gpu_count : GPULEASE_MAX_GPUS;
  struct gpu_now {
    uint64_t leased, free_b;
    uint32_t leases;
    unsigned util_pct, celsius;
    int activity; /* gl_nvml_activity's bits: 1 utilisation, 2 temperature */
  } now[GPULEASE_MAX_GPUS];
  for (uint32_t g = 0; g < ngpu; g++) {
    struct gpu_now *n = &now[g];
    gl_lease_table_gpu_usage(d->leases, g, &n->leased, &n->leases);
    /* Free memory as the inventory gives it: NVML's, or (the emulated
     * device) what the leases leave. */
    uint64_t total = d->node.gpus[g].total_vram_bytes;
    uint64_t fallback = total > n->leased ? total - n->leased : 0;
    n->free_b = gl_vram_watch_read_now(d->vram_watch, g, fallback);
    unsigned mem_pct = 0;
    n->activity = d->node.nvml ? gl_nvml_activity(d->node.nvml, d->node.gpus[g].uuid,
                                                  &n->util_pct, &mem_pct, &n->celsius)
                               : 0;
  }
#define PER_GPU(name, type, text, fmt, value)                                                 \
  do {                                                                                         \
    help(&o, name, type, text);                                                                \
    for (uint32_t g = 0; g < ngpu; g++)                                                        \
      put(&o, name "{gpu=\"%" PRIu32 "\",uuid=\"%s\"} " fmt "\n", g, d->node.gpus[g].uuid,     \
          value);                                                                              \
  } while (0)
  PER_GPU("gpulease_leases", "gauge", "Live leases, by GPU.", "%" PRIu32, now[g].leases);
  PER_GPU("gpulease_sessions", "gauge", "Live sessions of the GPU's leases.", "%" PRIu32,
          sessions[g]);
  PER_GPU("gpulease_vram_allocated_bytes", "gauge",
          "VRAM live leases hold, by GPU: their VRAM and what their contexts hold beyond it.",
          "%" PRIu64, now[g].leased);
  PER_GPU("gpulease_gpu_fenced", "gauge", "1 while the GPU is fenced (a failed teardown).", "%d",
          gl_lease_table_fenced(d->leases, g) != NULL);
  PER_GPU("gpulease_gpu_teardowns", "gauge",
          "Workers of the GPU tearing down now: exiting after their lease, or releasing it "
          "for reuse (their fencing deadline grows with this).",
          "%u", d->teardown ? gl_teardown_in_flight(d->teardown, g) : 0u);
  PER_GPU("gpulease_gpu_memory_total_bytes", "gauge", "The GPU's memory.", "%" PRIu64,
          d->node.gpus[g].total_vram_bytes);
  PER_GPU("gpulease_gpu_memory_free_bytes", "gauge",
          "The GPU's free memory (NVML; the emulated device: what leases leave).", "%" PRIu64,
          now[g].free_b);
  gl_lease_admit_figures adm[GPULEASE_MAX_GPUS];
  for (uint32_t g = 0; g < ngpu && g < GPULEASE_MAX_GPUS; g++) gl_lease_admit_figures_of(d, g, &adm[g]);
  PER_GPU("gpulease_isolated_contexts_limit", "gauge",
          "CUDA contexts of its own the GPU may hold (--max-isolated-contexts, or lower as "
          "learned from the driver).",
          "%u", adm[g].limit);
  PER_GPU("gpulease_isolated_contexts", "gauge",
          "CUDA contexts of its own the GPU holds now: leased, warm, spare and tearing down.",
          "%u", adm[g].held);
  PER_GPU("gpulease_isolated_contexts_ending", "gauge",
          "Of those, the ones being torn down (killed, not reaped yet).", "%u", adm[g].ending);
  PER_GPU("gpulease_isolated_queue", "gauge",
          "LEASE_ALLOCs waiting for a CUDA context on the GPU (those for any GPU included).",
          "%u", adm[g].queued);
#undef PER_GPU
  {
    uint64_t served = 0, timed_out = 0, refused = 0;
    gl_ctx_admit_totals(d->ctx_admit, &served, &timed_out, &refused);
    help(&o, "gpulease_isolated_queue_total", "counter",
         "LEASE_ALLOCs that waited for a CUDA context, by how it ended: served, timed_out "
         "(CAPACITY_EXCEEDED past --isolated-queue-ms), refused (CAPACITY_EXCEEDED at once: "
         "the queue full or no wait).");
    put(&o, "gpulease_isolated_queue_total{result=\"served\"} %" PRIu64 "\n", served);
    put(&o, "gpulease_isolated_queue_total{result=\"timed_out\"} %" PRIu64 "\n", timed_out);
    put(&o, "gpulease_isolated_queue_total{result=\"refused\"} %" PRIu64 "\n", refused);
  }
  help(&o, "gpulease_warm_workers", "gauge", "Warm workers of the GPU, ready or starting.");
  for (uint32_t g = 0; g < ngpu; g++) {
    put(&o, "gpulease_warm_workers{gpu=\"%" PRIu32 "\",state=\"ready\"} %u\n", g,
        d->pool ? (unsigned)gl_pool_ready(d->pool, g) : 0u);
    put(&o, "gpulease_warm_workers{gpu=\"%" PRIu32 "\",state=\"starting\"} %u\n", g,
        d->pool ? (unsigned)gl_pool_starting(d->pool, g) : 0u);
  }
  help(&o, "gpulease_gpu_utilization_ratio", "gauge",
       "Share of the last NVML sample period a kernel ran on the GPU (0..1).");
  for (uint32_t g = 0; g < ngpu; g++)
    if (now[g].activity > 0 && (now[g].activity & 1))
      put(&o, "gpulease_gpu_utilization_ratio{gpu=\"%" PRIu32 "\",uuid=\"%s\"} %.2f\n", g,
          d->node.gpus[g].uuid, now[g].util_pct / 100.0);
  help(&o, "gpulease_gpu_temperature_celsius", "gauge", "The GPU's temperature (NVML).");
  for (uint32_t g = 0; g < ngpu; g++)
    if (now[g].activity > 0 && (now[g].activity & 2))
      put(&o, "gpulease_gpu_temperature_celsius{gpu=\"%" PRIu32 "\",uuid=\"%s\"} %u\n", g,
          d->node.gpus[g].uuid, now[g].celsius);
  if (o.oom) {
    free(o.p);
    return;
  }
  pthread_mutex_lock(&m->mu);
  free(m->text);
  m->text = o.p;
  m->text_len = o.len;
  pthread_mutex_unlock(&m->mu);
}

static void on_snapshot(struct ev_loop *loop, ev_timer *t, int revents) {
  (void)loop;
  (void)revents;
  render(t->data);
}

/* ---- HTTP (libmicrohttpd's thread) --------------------------------------- */

/* host: an IPv4 or IPv6 literal, or "localhost". 0 or -1. */
static int parse_addr(const char *host, uint16_t port, struct sockaddr_storage *ss) {
  memset(ss, 0, sizeof *ss);
  struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
  if (!strcmp(host, "localhost")) host = "127.0.0.1";
  if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    return 0;
  }
  if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    return 0;
  }
  return -1;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_len, void **state) {
  (void)version;
  (void)upload;
  (void)upload_len;
  (void)state;
  gl_metrics *m = cls;
  const char *type = "text/plain; charset=utf-8";
  unsigned code = MHD_HTTP_OK;
  char *body = NULL;
  size_t len = 0;
  if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
    code = MHD_HTTP_METHOD_NOT_ALLOWED;
    body = strdup("GET /metrics or /healthz\n");
  } else if (!strcmp(url, "/metrics")) {
    type = "text/plain; version=0.0.4; charset=utf-8";
    pthread_mutex_lock(&m->mu);
    if (m->text && (body = malloc(m->text_len + 1))) {
      memcpy(body, m->text, m->text_len);
      len = m->text_len;
    }
    pthread_mutex_unlock(&m->mu);
    if (!body) {
      code = MHD_HTTP_SERVICE_UNAVAILABLE;
      body = strdup("no snapshot yet\n");
    }
  } else if (!strcmp(url, "/healthz")) {
    pthread_mutex_lock(&m->mu);
    bool serving = m->serving;
    pthread_mutex_unlock(&m->mu);
    code = serving ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE;
    body = strdup(serving ? "ok\n" : "stopping\n");
  } else {
    code = MHD_HTTP_NOT_FOUND;
    body = strdup("not found: GET /metrics or /healthz\n");
  }
  if (!body) return MHD_NO;
  if (!len) len = strlen(body);
  struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", type);
  enum MHD_Result ret = MHD_queue_response(c, code, r);
  MHD_destroy_response(r);
  return ret;
}

gl_metrics *gl_metrics_start(gl_daemon *d, const char *listen, char *err, size_t errlen) {
  char host[256];
  uint16_t port;
  if (gl_parse_hostport(listen, 9701, host, sizeof host, &port) != 0) {
    snprintf(err, errlen, "--metrics-listen: expected HOST:PORT, got '%s'", listen);
    return NULL;
  }
  gl_metrics *m = calloc(1, sizeof *m);
  if (!m) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  m->d = d;
  pthread_mutex_init(&m->mu, NULL);
  m->serving = true;
  render(m);
  /* One address: resolve it ourselves, MHD binds what it is given. */
  struct sockaddr_storage ss;
  if (parse_addr(host, port, &ss) != 0) {
    snprintf(err, errlen, "--metrics-listen: '%s' is not an IP address", host);
    gl_metrics_stop(m);
    return NULL;
  }
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  if (ss.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
  m->mhd = MHD_start_daemon(flags, port, NULL, NULL, answer, m, MHD_OPTION_SOCK_ADDR,
                            (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, 64u,
                            MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
  if (!m->mhd) {
    snprintf(err, errlen, "--metrics-listen: cannot serve HTTP on %s", listen);
    gl_metrics_stop(m);
    return NULL;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(m->mhd, MHD_DAEMON_INFO_BIND_PORT);
  m->port = info ? info->port : port;
  ev_timer_init(&m->snap, on_snapshot, SNAPSHOT_S, SNAPSHOT_S);
  m->snap.data = m;
  ev_timer_start(d->loop, &m->snap);
  GL_INFO("metrics: http://%s:%u/metrics (and /healthz)", host, (unsigned)m->port);
  return m;
}

uint16_t gl_metrics_port(const gl_metrics *m) {
  return m ? m->port : 0;
}

void gl_metrics_stop(gl_metrics *m) {
  if (!m) return;
  pthread_mutex_lock(&m->mu);
  m->serving = false;
  pthread_mutex_unlock(&m->mu);
  if (m->d && m->d->loop) ev_timer_stop(m->d->loop, &m->snap);
  if (m->mhd) MHD_stop_daemon(m->mhd);
  pthread_mutex_destroy(&m->mu);
  free(m->text);
  free(m);
}
