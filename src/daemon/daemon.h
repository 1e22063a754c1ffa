/*
 * daemon.h - gpuleased's state and lifecycle.
 *
 * One libev loop (the default loop) drives everything: the QUIC server, the
 * lease expiry timer, the workers' sockets and their exits. ops.c turns
 * requests into lease-table changes and worker calls.
 */
#ifndef GL_DAEMON_DAEMON_H
#define GL_DAEMON_DAEMON_H

#include <ev.h>
#include <stddef.h>
#include <stdint.h>

#include "auth/audit.h"
#include "auth/cap.h"
#include "auth/quota.h"
#include "auth/tenants.h"
#include "daemon/access.h"
#include "daemon/lease_table.h"
#include "daemon/tenant_load.h"
#include "daemon/node.h"
#include "daemon/pool.h"
#include "daemon/shards.h"
#include "daemon/shared.h"
#include "daemon/teardown.h"
#include "net/local.h"
#include "net/quic.h"

typedef struct gl_daemon_config {
  char listen_host[256];
  uint16_t listen_port;
  char cert_file[1024];  /* empty: self-signed pair in state_dir */
  char key_file[1024];
  char state_dir[1024];
  char ready_file[1024]; /* empty: none; else "PORT FINGERPRINT\n" when ready */
  char worker_exe[1024]; /* the program run as worker (our own binary) */
  char log_level[16];
  uint32_t max_ttl_s;
  size_t max_leases;
  size_t max_message_bytes;
  size_t max_connections;
  gl_device_mode device_mode;  /* --device */
  uint64_t emu_vram_bytes;     /* --emu-vram */
  unsigned emu_threads;        /* --emu-threads */
  unsigned emu_gpus;           /* --emu-gpus: emulated GPUs offered (1..64) */
  gl_placement placement;      /* --placement: where a lease for any GPU goes */
  unsigned seq_timeout_ms;     /* --seq-timeout-ms: held session ops wait this long */
  unsigned max_streams_per_conn; /* --max-streams: request streams open per connection */
  char local_socket[108];      /* --local-socket: the same-host socket; "" for none */
  unsigned local_socket_mode;  /* --local-socket-mode, e.g. 0660 */
  uint64_t max_pinned_bytes;   /* --max-pinned: shared memory page-locked for leases */
  unsigned net_threads;        /* --net-threads: stripe ports, a thread each (shards.h) */
  unsigned control_threads;    /* --control-threads: threads serving the main port
                                  together (shards.h); 1: the main loop serves it */
  uint16_t stripe_port;        /* --stripe-port: the first; 0: after the listen port */
  unsigned warm_workers;       /* --warm-workers: started ahead of leases, per GPU (pool.h) */
  uint64_t context_overhead_bytes; /* --context-overhead: a CUDA context's VRAM, until
                                      measured (UINT64_MAX: measure, else assume 330 MiB) */
  gl_auth_mode auth_mode;      /* --auth */
  char client_ca[1024];        /* --client-ca: CAs of client certificates (--auth mtls) */
  char client_crl[1024];       /* --client-crl: CRLs of those CAs; "" none */
  char tenants_file[1024];     /* --tenants: bearer tokens, quotas, admins; "" none */
  bool allow_anonymous;        /* --allow-anonymous: --auth none beyond loopback */
  char audit_log[1024];        /* --audit-log: JSON lines; "-" stderr; "" none */
  uint32_t max_requests_per_tenant; /* --max-requests-per-tenant: in flight, and unfinished
                                       (admit.h); beyond: BUSY */
  uint64_t max_buffered_per_connection; /* --max-buffered-per-connection: bytes the headers of
                                           a connection's unfinished requests declare */
  uint64_t max_buffered_per_tenant;     /* --max-buffered-per-tenant: the same, a tenant's */
  uint32_t max_connections_per_address; /* --max-connections-per-address (0: 64) */
  uint32_t retry_above_handshakes;      /* --retry-above-handshakes (0: 64; UINT32_MAX never) */
  uint32_t retry_above_address_handshakes; /* --retry-above-address-handshakes (0: 8) */
  uint32_t handshake_timeout_ms;        /* --handshake-timeout-ms (0: 5000) */
  uint32_t teardown_timeout_ms;  /* --teardown-timeout-ms: a killed worker's deadline when it
                                    tears down alone (teardown.h) */
  uint32_t teardown_per_context_ms; /* --teardown-per-context-ms: added to it (and to a
                                       release's) for each other worker tearing down */
  unsigned max_isolated_contexts; /* --max-isolated-contexts: a GPU's own contexts at most
                                     (lease_admit.h; default 64) */
  unsigned isolated_queue_max;    /* --isolated-queue-max: LEASE_ALLOCs waiting for one */
  unsigned isolated_queue_ms;     /* --isolated-queue-ms: how long each waits; 0: never */
  unsigned max_contexts_starting; /* --max-contexts-starting: new contexts being made at
                                     once per GPU for leases (0: no cap; default 4) */
  char metrics_listen[300];      /* --metrics-listen HOST:PORT: Prometheus /metrics; "" none */
} gl_daemon_config;

/* Fills out with the configuration as it is now (file and command line),
 * for a reload (reload.h): 0, or -1 with err. */
typedef int (*gl_daemon_config_fn)(void *user, gl_daemon_config *out, char *err, size_t errlen);

typedef struct gl_daemon {
  gl_daemon_config cfg;
  struct ev_loop *loop;
  gl_qserver *server;     /* the main port on the main loop, or NULL (control) */
  gl_shards *control;     /* the main port's control threads (--control-threads > 1) */
  gl_lserver *local;      /* the local socket, or NULL */
  gl_shards *shards;      /* the network threads of the stripe ports, or NULL */
  gl_pool *pool;          /* warm workers, or NULL (--warm-workers 0) */
  gl_shared *shared;      /* the shared CUDA contexts (class shared) */
  bool stopping;          /* gl_daemon_stop: workers are ended, not reused */
  uint64_t mig_lease[GPULEASE_MAX_GPUS][GL_NODE_MAX_MIG]; /* the partition lease of each
                                                             MIG instance, 0: free */
  uint64_t free_before_pool[GPULEASE_MAX_GPUS]; /* NVML free VRAM before the pool started */
  ev_timer ready_timer;   /* the ready file waits for the pool's first answers */
  double ready_deadline;
  uint64_t pinned_bytes;  /* attached segments, all leases */
  uint8_t boot_id[16];    /* this boot of this machine (NODE_INFO) */
  gl_lease_table *leases;
  gl_cap_key cap_key;     /* seals lease secrets (access.h); new at every start */
  gl_tenants *tenants;    /* --tenants, or NULL */
  gl_quota *quota;        /* each tenant's use */
  gl_audit *audit;        /* --audit-log, or NULL */
  gl_tenant_load *load;   /* requests in flight per tenant */
  struct gl_admit *admit; /* unfinished requests per tenant (admit.h; any thread) */
  struct gl_hdrlog *hdrlog; /* refusals on the header, to audit and count (hdrlog.h) */
  ev_timer trim_timer;    /* gives freed memory back to the system after a flood */
  unsigned trim_due;      /*   malloc_trim calls still to make */
  size_t trim_conns_peak; /*   the most QUIC connections since the last trim */
  bool trim_peak;         /*   a flood of requests under way: trim when it ends */
  struct gl_fence *fence; /* GPUs fenced after a failed teardown (fence.h) */
  struct gl_teardown *teardown; /* workers tearing down per GPU, their deadlines (teardown.h) */
  struct gl_ctx_admit *ctx_admit; /* each GPU's limit of isolated contexts, and the
                                     LEASE_ALLOCs waiting for one (lease_admit.h) */
  struct gl_metrics *metrics; /* --metrics-listen, or NULL (metrics.h) */
  gl_node node;
  struct gl_vram_watch *vram_watch; /* free VRAM off the main loop (vram_watch.h) */
  ev_timer expiry_timer;
  ev_timer status_timer;  /* STATUS= to the service manager (notify.h) */
  ev_signal sigint, sigterm, sighup;
  gl_daemon_config_fn reload_fn; /* SIGHUP reads the configuration through it (reload.h) */
  void *reload_user;
  bool tenants_reloaded;  /* identities are checked against the tenants file again */
  bool announced;         /* ready: READY=1 and the ready file are out */
  char fingerprint[65];
} gl_daemon;

/* Fills defaults: listen 127.0.0.1:5701, max TTL 300 s, 1024 leases, 256
 * MiB messages, 1024 connections. */
void gl_daemon_config_default(gl_daemon_config *cfg);


/* The teardown deadlines' figures (teardown.h) of a configuration:
 * --teardown-timeout-ms, GL_TEARDOWN_RELEASE_BASE_MS and
 * --teardown-per-context-ms. */
gl_teardown_limits gl_daemon_teardown_limits(const gl_daemon_config *cfg);

/* Discovers GPUs, loads or creates the TLS credentials, binds the socket.
 * 0, or -1 with a reason in err. */
int gl_daemon_start(gl_daemon *d, const gl_daemon_config *cfg, char *err, size_t errlen);

/* Runs until SIGINT/SIGTERM; then frees every lease (kills workers). */
void gl_daemon_run(gl_daemon *d);

/* The main port's UDP port, its live QUIC connections, handshakes under
 * way and Retry packets sent since the start, whether the main loop
 * (server) or the control threads (control) serve it. Main loop. */
uint16_t gl_daemon_quic_port(const gl_daemon *d);
size_t gl_daemon_quic_connections(const gl_daemon *d);
size_t gl_daemon_quic_held(const gl_daemon *d); /* closing and draining too */
size_t gl_daemon_quic_handshakes(const gl_daemon *d);
size_t gl_daemon_quic_retries(const gl_daemon *d);

void gl_daemon_stop(gl_daemon *d);

/* The certificate and key cfg names, or (naming none) the self-signed pair
 * of its state directory, made there when missing: written to cert and key
 * (len bytes each). 0, or -1 with err (only one of --cert and --key, a
 * state directory or pair that cannot be made). */
int gl_daemon_tls_paths(const gl_daemon_config *cfg, char *cert, char *key, size_t len,
                        char *err, size_t errlen);

/* Writes the ready file ("PORT FINGERPRINT") and tells the service
 * manager READY=1 with a status line beginning with what ("serving",
 * "reloaded"). */
void gl_daemon_announce_ready(gl_daemon *d, const char *what);

/* ops.c: the request callbacks given to the QUIC server and to the local
 * socket, and the local socket's connection-closed callback (it detaches
 * the shared memory that connection attached). */
void gl_daemon_on_request(void *user, gl_qreq *req, const uint8_t *msg, size_t len, int err);
void gl_daemon_on_local_request(void *user, gl_lreq *req, const uint8_t *msg, size_t len);
void gl_daemon_on_local_close(void *user, uint64_t conn_id);
void gl_daemon_on_shard_request(void *user, gl_shard *shard, gl_qreq *req, const uint8_t *msg,
                                size_t len, int err);

/* ops.c: the shared contexts' loss callback (shared.h): ends those leases. */
void gl_daemon_on_shared_lost(void *user, uint32_t gpu, const uint64_t *ids, size_t n,
                              const char *why);

/* lease_rt.c: the live sessions of each GPU's leases (as counted for quotas). */
void gl_daemon_sessions_by_gpu(gl_daemon *d, uint32_t per_gpu[GPULEASE_MAX_GPUS]);

/* lease_rt.c: tears down a live lease's worker (expiry, free, shutdown). */
void gl_daemon_end_lease(gl_daemon *d, gl_lease *l, gpulease_status why_status,
                         const char *why);

#endif /* GL_DAEMON_DAEMON_H */
