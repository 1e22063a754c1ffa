/*
 * daemon.c - gpuleased's start-up, main loop, expiry timer and shutdown.
 */
#include "daemon/daemon.h"
#include "daemon/held.h"

#include <sodium.h>

#include "daemon/admit.h"
#include "daemon/client_auth.h"
#include "daemon/early.h"
#include "daemon/hdrlog.h"
#include "daemon/ctx_admit.h"
#include "daemon/fence.h"
#include "daemon/teardown.h"
#include "daemon/lease_admit.h"
#include "daemon/metrics.h"
#include "daemon/notify.h"
#include "daemon/reload.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/worker_proc.h"
#include "worker/counters.h"
#include "net/tls.h"
#include "proto/wire.h"
#include "daemon/vram_watch.h"

#define EXPIRY_TICK_S 0.05
#define TOMBSTONE_NS (600ull * 1000000000ull)

uint16_t gl_daemon_quic_port(const gl_daemon *d) {
  return d->control ? gl_shards_port(d->control, 0) : gl_qserver_port(d->server);
}

size_t gl_daemon_quic_connections(const gl_daemon *d) {
  return d->control ? gl_shards_connection_count(d->control)
                    : d->server ? gl_qserver_connection_count(d->server) : 0;
}

size_t gl_daemon_quic_held(const gl_daemon *d) {
  return d->control ? gl_shards_connections_held(d->control)
                    : d->server ? gl_qserver_connections_held(d->server) : 0;
}

size_t gl_daemon_quic_handshakes(const gl_daemon *d) {
  return d->control ? gl_shards_handshake_count(d->control)
                    : d->server ? gl_qserver_handshake_count(d->server) : 0;
}

size_t gl_daemon_quic_retries(const gl_daemon *d) {
  return d->control ? gl_shards_retries_sent(d->control)
                    : d->server ? gl_qserver_retries_sent(d->server) : 0;
}

void gl_daemon_config_default(gl_daemon_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  snprintf(cfg->listen_host, sizeof cfg->listen_host, "127.0.0.1");
  cfg->listen_port = GL_DEFAULT_PORT;
  snprintf(cfg->log_level, sizeof cfg->log_level, "info");
  cfg->max_ttl_s = 300;
  cfg->max_leases = 1024;
  cfg->max_message_bytes = 256u << 20;
  cfg->max_connections = 1024;
  cfg->max_requests_per_tenant = 16384;
  cfg->max_buffered_per_connection = 512ull << 20;
  cfg->max_buffered_per_tenant = 1ull << 30;
  cfg->teardown_timeout_ms = 10000;
  cfg->teardown_per_context_ms = GL_TEARDOWN_PER_CONTEXT_MS;
  cfg->max_isolated_contexts = GL_CTX_ADMIT_DEFAULT_LIMIT;
  cfg->isolated_queue_max = GL_CTX_ADMIT_DEFAULT_QUEUE;
  cfg->isolated_queue_ms = GL_CTX_ADMIT_DEFAULT_QUEUE_MS;
  cfg->max_contexts_starting = 4;
  cfg->retry_above_address_handshakes = 8;
  cfg->handshake_timeout_ms = 5000;
  cfg->device_mode = GL_DEVICE_AUTO;
  cfg->emu_vram_bytes = 1ull << 30;
  cfg->emu_threads = 1;
  cfg->emu_gpus = 1;
  cfg->placement = GL_PLACEMENT_SPREAD;
  cfg->seq_timeout_ms = 10000;
  cfg->local_socket_mode = 0660;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  cfg->max_pinned_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 2 : 1ull << 32;
  cfg->max_streams_per_conn = 1024;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  cfg->net_threads = cores >= 16 ? 8 : cores >= 8 ? 4 : cores >= 4 ? 2 : 0;
  /* One: more did not raise the cycle rate on a 16-core H200 node (1,000
   * shared clients: 1,880 cycles/s with 1, 1,934 with 4, 1,869 with 8;
   * the main loop is the ceiling), and they cost a NAT-rebinding client
   * its connection. */
  cfg->control_threads = 1;
  cfg->warm_workers = 2;
  cfg->context_overhead_bytes = UINT64_MAX;
}

/* A CUDA context's VRAM when it cannot be measured: an H100's with the
 * worker's small stack, printf FIFO and heap (about 330 MiB). */
#define ASSUMED_CONTEXT_BYTES (330ull << 20)
/* How old a free-VRAM figure may be before a read asks for a new one. */
#define VRAM_MAX_AGE_MS 100u

/* Sets each GPU's context overhead for the capacity check: the configured
 * figure, or what NVML saw the warm pool take (free VRAM before and after,
 * divided by its workers), or the assumed one. Emulated devices have none:
 * their contexts live in host memory. */
static void set_overheads(gl_daemon *d, bool measured) {
  for (uint32_t i = 0; i < d->node.gpu_count; i++) {
    uint64_t bytes = d->cfg.context_overhead_bytes;
    const char *how = "configured";
    if (d->node.gpus[i].flags & GPULEASE_GPU_EMULATED) {
      bytes = 0;
      how = "emulated device";
    } else if (bytes == UINT64_MAX) {
      uint64_t after = gl_node_free_vram(&d->node, i, 0);
      uint64_t before = d->free_before_pool[i];
      unsigned n = d->pool ? gl_pool_ready(d->pool, i) : 0;
      if (measured && n > 0 && before > after && (before - after) / n < (4ull << 30)) {
        bytes = (before - after) / n;
        how = "measured over the warm workers";
      } else {
        bytes = ASSUMED_CONTEXT_BYTES;
        how = "assumed";
      }
    }
    gl_lease_table_set_overhead(d->leases, i, bytes);
    GL_INFO("GPU %" PRIu32 ": a CUDA context takes %" PRIu64 " MiB of VRAM (%s)", i, bytes >> 20,
            how);
  }
}

/* The ready file once the warm pool has answered (or after 10 s): a client
 * told "ready" finds warm workers. */
static void on_ready_timer(struct ev_loop *loop, ev_timer *t, int revents) {
  (void)revents;
  gl_daemon *d = t->data;
  if (!gl_pool_settled(d->pool) && ev_now(loop) < d->ready_deadline) return;
  ev_timer_stop(loop, t);
  set_overheads(d, true);
  gl_daemon_announce_ready(d, "serving");
}

static void on_expiry_one(void *user, gl_lease *l) {
  gl_daemon *d = user;
  char why[160];
  snprintf(why, sizeof why, "lease %" PRIu64 " expired (TTL %" PRIu32 " s); its GPU work was stopped",
           l->id, l->ttl_s);
  GL_INFO("lease %" PRIu64 " expired; freeing its %" PRIu64 " bytes on GPU %" PRIu32, l->id,
          l->vram_bytes, l->gpu_index);
  gl_daemon_end_lease(d, l, GPULEASE_LEASE_EXPIRED, why);
  gl_metrics_lease_dropped(d->metrics, GL_DROP_EXPIRED);
}

static void on_expiry_timer(struct ev_loop *loop, ev_timer *t, int revents) {
  (void)loop;
  (void)revents;
  gl_daemon *d = t->data;
  gl_lease_table_expire(d->leases, gl_mono_ns(), on_expiry_one, d);
}

/* Requests ended, or bytes their headers declared, since the last tick,
 * past which freed memory is handed back to the system: glibc keeps what
 * a flood of small requests freed (the heap's top cannot shrink past a
 * live chunk, and arenas of the network threads keep theirs), so RSS
 * would stay at the flood's peak. */
#define TRIM_AFTER_REQUESTS 1024u
#define TRIM_AFTER_BYTES (16ull << 20)
/* Or connections freed since the most there were: each held its TLS
 * session, ngtcp2 state and buffers until the end of its closing or
 * draining period (3 PTO, seconds under load), after the requests' count
 * went quiet. Measured (gl_bench_load, 1,000 shared clients, emulated
 * device): without this the daemon stayed at 52 MB, 2 MB of it in use,
 * 10 s after; with it 9 MB on the main loop alone, 11.5 to 13 MB with 4
 * control threads (which share one arena: main.c). */
#define TRIM_AFTER_CLOSED 64u
#define TRIM_TICK_S 1.0

static void on_trim_timer(struct ev_loop *loop, ev_timer *t, int revents) {
  (void)loop;
  (void)revents;
  gl_daemon *d = t->data;
  uint64_t n, bytes;
  gl_admit_take_released(d->admit, &n, &bytes);
  /* Once a flood is over (a tick below the bounds after one past them),
   * and at the next two ticks, for what the connections of the flood free
   * when they close (after their closing period) and what was still live
   * at the first. Not while it lasts: under steady load every tick passes
   * the bounds, and a trim each second (measured: 260 madvise calls a
   * second on the main loop, 300 clients) only hands back memory the next
   * requests fault in again. */
  bool flood = n >= TRIM_AFTER_REQUESTS || bytes >= TRIM_AFTER_BYTES;
  if (flood) {
    d->trim_peak = true;
  } else if (d->trim_peak) {
    d->trim_peak = false;
    d->trim_due = 3;
  }
  size_t conns = gl_daemon_quic_held(d);
  if (conns > d->trim_conns_peak) d->trim_conns_peak = conns;
  if (d->trim_conns_peak - conns >= TRIM_AFTER_CLOSED) {
    d->trim_due = 3;
    d->trim_conns_peak = conns;
  }
  if (!d->trim_due) return;
  d->trim_due--;
  malloc_trim(0);
}

static void on_signal(struct ev_loop *loop, ev_signal *s, int revents) {
  (void)revents;
  GL_INFO("signal %d: shutting down", s->signum);
  gl_notify_stopping();
  ev_break(loop, EVBREAK_ALL);
}

static void on_sighup(struct ev_loop *loop, ev_signal *s, int revents) {
  (void)loop;
  (void)revents;
  gl_daemon_reload(s->data);
}

/* One line for `systemctl status`. */
static void status_line(const gl_daemon *d, char *out, size_t len, const char *what) {
  size_t conns = gl_daemon_quic_connections(d); /* the main port's */
  snprintf(out, len, "%s on %s:%u; %zu live lease%s on %" PRIu32 " GPU%s; %zu connection%s", what,
           d->cfg.listen_host, (unsigned)gl_daemon_quic_port(d),
           gl_lease_table_live_count(d->leases),
           gl_lease_table_live_count(d->leases) == 1 ? "" : "s", d->node.gpu_count,
           d->node.gpu_count == 1 ? "" : "s", conns, conns == 1 ? "" : "s");
}

static void on_status_timer(struct ev_loop *loop, ev_timer *t, int revents) {
  (void)loop;
  (void)revents;
  gl_daemon *d = t->data;
  char line[400];
  status_line(d, line, sizeof line, "serving");
  gl_notify_status("%s", line);
}

static int mkdir_p(const char *dir) {
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", dir);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  return mkdir(tmp, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

int gl_daemon_tls_paths(const gl_daemon_config *c, char *cert, char *key, size_t len,
                        char *err, size_t errlen) {
  if (!c->cert_file[0] != !c->key_file[0]) {
    snprintf(err, errlen, "--cert and --key go together");
    return -1;
  }
  if (c->cert_file[0]) {
    snprintf(cert, len, "%s", c->cert_file);
    snprintf(key, len, "%s", c->key_file);
    return 0;
  }
  if (mkdir_p(c->state_dir) != 0) {
    snprintf(err, errlen, "cannot create state directory %s: %s", c->state_dir, strerror(errno));
    return -1;
  }
  int created = 0;
  if (gl_tls_ensure_self_signed(c->state_dir, cert, key, len, &created, err, errlen) != 0)
    return -1;
  GL_INFO("%s self-signed certificate %s", created ? "generated" : "using", cert);
  return 0;
}

static int setup_tls(gl_daemon *d, char *err, size_t errlen) {
  gl_daemon_config *c = &d->cfg;
  char cert[sizeof c->cert_file], key[sizeof c->key_file];
  if (gl_daemon_tls_paths(c, cert, key, sizeof cert, err, errlen) != 0) return -1;
  snprintf(c->cert_file, sizeof c->cert_file, "%s", cert);
  snprintf(c->key_file, sizeof c->key_file, "%s", key);
  return gl_tls_file_fingerprint(c->cert_file, d->fingerprint, err, errlen);
}

static void write_ready_file(const gl_daemon *d) {
  if (!d->cfg.ready_file[0]) return;
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s.tmp", d->cfg.ready_file);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    GL_WARN("cannot write %s: %s", tmp, strerror(errno));
    return;
  }
  fprintf(f, "%u %s\n", gl_daemon_quic_port(d), d->fingerprint);
  fclose(f);
  rename(tmp, d->cfg.ready_file);
}

/* True for a listen address that only this host reaches. */
static bool loopback_only(const char *host) {
  return !strcmp(host, "127.0.0.1") || !strcmp(host, "::1") || !strcmp(host, "localhost") ||
         !strncmp(host, "127.", 4);
}

/* Identities, tenants, quotas and the audit log (access.h). */
static int setup_access(gl_daemon *d, char *err, size_t errlen) {
  const gl_daemon_config *c = &d->cfg;
  if (gl_cap_key_init(&d->cap_key) != 0) {
    snprintf(err, errlen, "libsodium failed to start (no random source?)");
    return -1;
  }
  if (c->auth_mode == GL_AUTH_NONE && !loopback_only(c->listen_host) && !c->allow_anonymous) {
    snprintf(err, errlen,
             "--auth none on %s would let anyone who reaches the port lease GPUs anonymously; "
             "choose --auth mtls or --auth token, or say --allow-anonymous",
             c->listen_host);
    return -1;
  }
  if (c->auth_mode == GL_AUTH_MTLS && !c->client_ca[0]) {
    snprintf(err, errlen, "--auth mtls needs --client-ca FILE (the CAs of client certificates)");
    return -1;
  }
  if (c->auth_mode == GL_AUTH_TOKEN && !c->tenants_file[0]) {
    snprintf(err, errlen, "--auth token needs --tenants FILE (the tenants and their tokens)");
    return -1;
  }
  if (c->client_crl[0] && c->auth_mode != GL_AUTH_MTLS) {
    snprintf(err, errlen, "--client-crl is for client certificates: it needs --auth mtls");
    return -1;
  }
  if (c->tenants_file[0]) {
    d->tenants = gl_tenants_load(c->tenants_file, err, errlen);
    if (!d->tenants) return -1;
    GL_INFO("tenants: %zu from %s", gl_tenants_count(d->tenants), c->tenants_file);
  }
  d->quota = gl_quota_new();
  d->load = gl_tenant_load_new();
  d->admit = gl_admit_new(c->max_requests_per_tenant, c->max_buffered_per_tenant);
  d->hdrlog = gl_hdrlog_new(d->loop, d);
  gl_teardown_limits tl = gl_daemon_teardown_limits(c);
  d->teardown = gl_teardown_new(&tl);
  d->fence = d->teardown ? gl_fence_new(d, d->teardown) : NULL;
  gl_wproc_set_held_watch(gl_daemon_on_held, d);
  if (!d->quota || !d->load || !d->admit || !d->hdrlog || !d->fence) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (c->audit_log[0]) {
    d->audit = gl_audit_open(c->audit_log, err, errlen);
    if (!d->audit) return -1;
  }
  GL_INFO("authentication: %s%s", gl_auth_mode_name(c->auth_mode),
          c->auth_mode == GL_AUTH_NONE ? " (every client is the anonymous tenant)" : "");
  return 0;
}

gl_teardown_limits gl_daemon_teardown_limits(const gl_daemon_config *cfg) {
  return (gl_teardown_limits){.exit_base_ms = cfg->teardown_timeout_ms,
                              .release_base_ms = GL_TEARDOWN_RELEASE_BASE_MS,
                              .per_context_ms = cfg->teardown_per_context_ms};
}

static int read_free_vram(void *node, uint32_t index, uint64_t *free_bytes) {
  return gl_node_read_free_vram(node, index, free_bytes);
}

int gl_daemon_start(gl_daemon *d, const gl_daemon_config *cfg, char *err, size_t errlen) {
  memset(d, 0, sizeof *d);
  d->cfg = *cfg;
  d->loop = ev_default_loop(0);
  if (setup_access(d, err, errlen) != 0) return -1;
  if (setup_tls(d, err, errlen) != 0) return -1;

  gl_lease_table_config lc = {.max_ttl_s = cfg->max_ttl_s,
                              .max_leases = cfg->max_leases,
                              .placement = cfg->placement,
                              .tombstone_ns = TOMBSTONE_NS};
  d->leases = gl_lease_table_new(&lc);
  if (!d->leases) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  /* Workers keep PTX compiled for the device under the state directory,
   * so a restarted daemon does not compile it again. */
  char jit_dir[sizeof cfg->state_dir + 16] = "";
  if (cfg->state_dir[0]) snprintf(jit_dir, sizeof jit_dir, "%s/jit-cache", cfg->state_dir);
  gl_node_config ncfg = {.worker_exe = cfg->worker_exe, .log_level = cfg->log_level,
                         .mode = cfg->device_mode, .emu_vram_bytes = cfg->emu_vram_bytes,
                         .emu_threads = cfg->emu_threads, .emu_gpus = cfg->emu_gpus,
                         .jit_cache_dir = jit_dir,
                         .seq_timeout_ms = cfg->seq_timeout_ms};
  gl_node_discover(&d->node, &ncfg);
  for (uint32_t i = 0; i < d->node.gpu_count; i++) {
    const gl_node_gpu *g = &d->node.gpus[i];
    gl_lease_table_set_gpu(d->leases, i, g->total_vram_bytes);
    gl_lease_table_set_mig(d->leases, i, g->mig_count > 0);
    GL_INFO("GPU %" PRIu32 ": %s %s, compute capability %u.%u, %" PRIu32 " SMs, %" PRIu64
            " MiB",
            i, g->name, g->uuid, g->cc_major, g->cc_minor, g->sm_count,
            g->total_vram_bytes >> 20);
  }
  if (d->node.gpu_count == 0) GL_WARN("%s; leases will be refused", d->node.no_gpu_reason);
  if (!(d->vram_watch =
            gl_vram_watch_new(d->node.gpu_count, read_free_vram, &d->node, VRAM_MAX_AGE_MS))) {
    snprintf(err, errlen, "cannot start the thread that reads free VRAM (out of memory)");
    return -1;
  }

  gl_qserver_config sc = {
      .listen_host = cfg->listen_host,
      .listen_port = cfg->listen_port,
      .cert_file = d->cfg.cert_file,
      .key_file = d->cfg.key_file,
      .max_message_bytes = cfg->max_message_bytes,
      .idle_timeout_ms = 60000,
      .max_connections = cfg->max_connections,
      .max_streams_per_conn = cfg->max_streams_per_conn,
      .on_request = gl_daemon_on_request,
      .user = d,
      .on_header = gl_daemon_on_header, /* the network threads' servers too */
      .header_user = d,
      .on_header_end = gl_daemon_on_header_end,
      .client_ca_file = cfg->auth_mode == GL_AUTH_MTLS ? d->cfg.client_ca : NULL,
      .max_connections_per_address = cfg->max_connections_per_address,
      .retry_above_handshakes = cfg->retry_above_handshakes,
      .retry_above_address_handshakes = cfg->retry_above_address_handshakes,
      .handshake_timeout_ms = cfg->handshake_timeout_ms,
  };
  /* Under mtls: the deny list and the tenants (client_auth.h), and the CRL. */
  gl_client_policy *policy = NULL;
  if (cfg->auth_mode == GL_AUTH_MTLS) {
    if (!(policy = gl_daemon_client_policy(d->tenants, err, errlen))) return -1;
    sc.client_crl_file = gl_daemon_crl_file(d->cfg.client_crl);
    sc.client_policy = policy;
    size_t nfp, nserial;
    gl_client_policy_counts(policy, &nfp, &nserial, NULL);
    GL_INFO("client certificates: CRL %s; deny list %zu fingerprint%s, %zu serial%s; %s",
            sc.client_crl_file ? sc.client_crl_file : "none", nfp, nfp == 1 ? "" : "s", nserial,
            nserial == 1 ? "" : "s",
            d->tenants ? "only the tenants of the tenants file"
                       : "every identity (no tenants file)");
  }
  /* The main port: on the main loop, or on control threads that hand
   * every request to it (shards.h). */
  int started = cfg->control_threads > 1
                    ? gl_shards_start_shared(d->loop, &sc, cfg->control_threads,
                                             gl_daemon_on_shard_request, d, &d->control, err,
                                             errlen)
                    : gl_qserver_new(d->loop, &sc, &d->server, err, errlen);
  if (started == 0 && d->control)
    GL_INFO("main port served by %u control threads (SO_REUSEPORT)", cfg->control_threads);
  if (started == 0 && cfg->net_threads > 0) {
    uint16_t port = gl_daemon_quic_port(d);
    uint16_t first = cfg->stripe_port            ? cfg->stripe_port
                     : cfg->listen_port && port < 65535 ? (uint16_t)(port + 1)
                                                 : 0;
    started = gl_shards_start(d->loop, &sc, cfg->net_threads, first, gl_daemon_on_shard_request,
                              d, &d->shards, err, errlen);
  }
  gl_client_policy_unref(policy); /* the servers hold theirs */
  if (started != 0) return -1;
  if (cfg->net_threads > 0) {
    char ports[GL_WIRE_MAX_STRIPES * 7] = "";
    for (unsigned i = 0, n = 0; i < gl_shards_count(d->shards); i++)
      n += (unsigned)snprintf(ports + n, sizeof ports - n, "%s%u", i ? "," : "",
                              (unsigned)gl_shards_port(d->shards, i));
    GL_INFO("stripe ports %s (QUIC, a network thread each)", ports);
  }
  gl_boot_id(d->boot_id);
  if (gl_worker_counters_create() != 0)
    GL_WARN("no shared page for the workers' cache counts: module and JIT cache metrics stay 0");
  if (cfg->metrics_listen[0] &&
      !(d->metrics = gl_metrics_start(d, cfg->metrics_listen, err, errlen)))
    return -1;
  if (cfg->local_socket[0]) {
    gl_lserver_config lc2 = {.path = cfg->local_socket,
                             .mode = cfg->local_socket_mode,
                             .max_message_bytes = cfg->max_message_bytes,
                             .on_request = gl_daemon_on_local_request,
                             .on_close = gl_daemon_on_local_close,
                             .user = d,
                             .on_header = gl_daemon_on_header,
                             .on_header_end = gl_daemon_on_header_end};
    if (gl_lserver_new(d->loop, &lc2, &d->local, err, errlen) != 0) return -1;
  }

  ev_timer_init(&d->trim_timer, on_trim_timer, TRIM_TICK_S, TRIM_TICK_S);
  d->trim_timer.data = d;
  ev_timer_start(d->loop, &d->trim_timer);
  ev_timer_init(&d->expiry_timer, on_expiry_timer, EXPIRY_TICK_S, EXPIRY_TICK_S);
  d->expiry_timer.data = d;
  ev_timer_start(d->loop, &d->expiry_timer);
  ev_signal_init(&d->sigint, on_signal, SIGINT);
  ev_signal_init(&d->sigterm, on_signal, SIGTERM);
  ev_signal_start(d->loop, &d->sigint);
  ev_signal_start(d->loop, &d->sigterm);
  ev_signal_init(&d->sighup, on_sighup, SIGHUP);
  d->sighup.data = d;
  ev_signal_start(d->loop, &d->sighup);

  GL_INFO("listening on %s:%u (QUIC, ALPN gpulease/1)", cfg->listen_host,
          gl_daemon_quic_port(d));
  GL_INFO("certificate SHA-256 fingerprint: %s", d->fingerprint);
  for (uint32_t i = 0; i < d->node.gpu_count && i < GPULEASE_MAX_GPUS; i++)
    d->free_before_pool[i] = gl_node_free_vram(&d->node, i, 0);
  if (gl_lease_admit_start(d) != 0) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (uint32_t i = 0; i < d->node.gpu_count && i < GPULEASE_MAX_GPUS; i++)
    if (!d->node.gpus[i].mig_count)
      GL_INFO("GPU %" PRIu32 ": at most %u isolated CUDA contexts at once; beyond, LEASE_ALLOC "
              "waits up to %u ms (%u requests at most)",
              i, gl_ctx_admit_limit(d->ctx_admit, i), cfg->isolated_queue_ms,
              cfg->isolated_queue_max);
  if (cfg->warm_workers > 0 && d->node.gpu_count > 0) {
    gl_pool_hooks hooks;
    gl_lease_admit_pool_hooks(d, &hooks);
    d->pool = gl_pool_new(d->loop, &d->node, d->cfg.worker_exe, d->cfg.log_level,
                          cfg->warm_workers, &hooks);
    if (!d->pool) {
      GL_WARN("out of memory for the warm workers: leases start their own");
    } else {
      gl_pool_set_teardown(d->pool, d->teardown);
      GL_INFO("%u warm worker(s) a GPU", cfg->warm_workers);
    }
  }
  d->shared = gl_shared_new(d->loop, &d->node, d->pool, d->cfg.worker_exe, d->cfg.log_level,
                            gl_daemon_on_shared_lost, d);
  if (!d->shared) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  set_overheads(d, false);
  if (d->pool) {
    d->ready_deadline = ev_now(d->loop) + 10.0;
    ev_timer_init(&d->ready_timer, on_ready_timer, 0.02, 0.02);
    d->ready_timer.data = d;
    ev_timer_start(d->loop, &d->ready_timer);
  } else {
    gl_daemon_announce_ready(d, "serving");
  }
  if (gl_notify_enabled()) {
    ev_timer_init(&d->status_timer, on_status_timer, 5.0, 5.0);
    d->status_timer.data = d;
    ev_timer_start(d->loop, &d->status_timer);
  }
  return 0;
}

void gl_daemon_announce_ready(gl_daemon *d, const char *what) {
  d->announced = true;
  write_ready_file(d);
  char line[400];
  status_line(d, line, sizeof line, what);
  gl_notify_ready(line);
}

static void end_one(void *user, gl_lease *l) {
  gl_daemon_end_lease(user, l, GPULEASE_LEASE_EXPIRED, "the daemon is shutting down");
}

void gl_daemon_run(gl_daemon *d) { ev_run(d->loop, 0); }

void gl_daemon_stop(gl_daemon *d) {
  d->stopping = true;
  gl_metrics_stop(d->metrics); /* /healthz answers 503 from here on */
  d->metrics = NULL;
  gl_lease_admit_stop(d); /* the waiting LEASE_ALLOCs are answered */
  if (d->leases) gl_lease_table_foreach(d->leases, end_one, d);
  ev_timer_stop(d->loop, &d->ready_timer);
  gl_shared_del(d->shared);
  d->shared = NULL;
  gl_pool_del(d->pool);
  d->pool = NULL;
  /* Closed, not freed: requests still held (a worker's answer to come as
   * it is reaped below) may be answered into the void until the end. */
  gl_shards_close(d->shards);
  gl_shards_close(d->control);
  if (d->server) gl_qserver_del(d->server);
  d->server = NULL;
  gl_lserver_del(d->local);
  d->local = NULL;
  /* Let the killed workers be reaped so nothing is left behind. */
  for (int i = 0; i < 100 && gl_wproc_live_count() > 0; i++) ev_run(d->loop, EVRUN_ONCE);
  ev_timer_stop(d->loop, &d->expiry_timer);
  ev_timer_stop(d->loop, &d->trim_timer);
  gl_hdrlog_free(d->hdrlog); /* the servers are gone: no more refusals */
  d->hdrlog = NULL;
  gl_admit_free(d->admit);
  d->admit = NULL;
  ev_signal_stop(d->loop, &d->sigint);
  ev_signal_stop(d->loop, &d->sigterm);
  ev_signal_stop(d->loop, &d->sighup);
  ev_timer_stop(d->loop, &d->status_timer);
  gl_lease_table_del(d->leases);
  d->leases = NULL;
  gl_vram_watch_del(d->vram_watch);
  d->vram_watch = NULL;
  gl_node_close(&d->node);
  gl_tenants_free(d->tenants);
  d->tenants = NULL;
  gl_quota_free(d->quota);
  d->quota = NULL;
  gl_audit_close(d->audit);
  d->audit = NULL;
  gl_tenant_load_free(d->load);
  d->load = NULL;
  gl_wproc_set_held_watch(NULL, NULL);
  gl_fence_free(d->fence);
  d->fence = NULL;
  gl_teardown_free(d->teardown);
  d->teardown = NULL;
  gl_shards_stop(d->shards);
  d->shards = NULL;
  gl_shards_stop(d->control);
  d->control = NULL;
  sodium_memzero(&d->cap_key, sizeof d->cap_key);
}
