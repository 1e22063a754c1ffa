/* reload.c - see reload.h. */
#include "daemon/reload.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "daemon/admit.h"
#include "daemon/client_auth.h"
#include "daemon/teardown.h"
#include "daemon/ctx_admit.h"
#include "daemon/lease_admit.h"
#include "daemon/fence.h"
#include "daemon/notify.h"
#include "net/tls.h"

/* The options a reload does not apply: a changed one is logged. */
typedef struct restart_only {
  const char *name; /* the option's name */
  size_t offset, size;
  bool text; /* a NUL-terminated string, else bytes compared */
} restart_only;

#define STR(n, f) {n, offsetof(gl_daemon_config, f), sizeof(((gl_daemon_config *)0)->f), true}
#define VAL(n, f) {n, offsetof(gl_daemon_config, f), sizeof(((gl_daemon_config *)0)->f), false}
static const restart_only k_restart_only[] = {
    STR("listen", listen_host),
    VAL("listen", listen_port),
    STR("state-dir", state_dir),
    STR("ready-file", ready_file),
    VAL("max-leases", max_leases),
    VAL("max-message", max_message_bytes),
    VAL("device", device_mode),
    VAL("emu-vram", emu_vram_bytes),
    VAL("emu-threads", emu_threads),
    VAL("emu-gpus", emu_gpus),
    VAL("placement", placement),
    VAL("seq-timeout-ms", seq_timeout_ms),
    VAL("max-streams", max_streams_per_conn),
    VAL("max-buffered-per-connection", max_buffered_per_connection),
    STR("local-socket", local_socket),
    VAL("local-socket-mode", local_socket_mode),
    VAL("max-pinned", max_pinned_bytes),
    VAL("net-threads", net_threads),
    VAL("control-threads", control_threads),
    VAL("stripe-port", stripe_port),
    VAL("warm-workers", warm_workers),
    VAL("context-overhead", context_overhead_bytes),
    VAL("auth", auth_mode),
    VAL("allow-anonymous", allow_anonymous),
    STR("metrics-listen", metrics_listen),
    VAL("retry-above-address-handshakes", retry_above_address_handshakes),
    VAL("handshake-timeout-ms", handshake_timeout_ms),
};
#undef STR
#undef VAL

/* gl_qserver_set_tls on the main port: its server on the main loop, or
 * its control threads' (shards.h). */
static int main_port_set_tls(gl_daemon *d, const char *cert, const char *key, const char *ca,
                             const char *crl, gl_client_policy *policy, char *err,
                             size_t errlen) {
  if (d->control) return gl_shards_set_tls(d->control, cert, key, ca, crl, policy, err, errlen);
  return gl_qserver_set_tls(d->server, cert, key, ca, crl, policy, err, errlen);
}

static bool differs(const restart_only *r, const gl_daemon_config *a, const gl_daemon_config *b) {
  const char *x = (const char *)a + r->offset, *y = (const char *)b + r->offset;
  return r->text ? strncmp(x, y, r->size) != 0 : memcmp(x, y, r->size) != 0;
}

void gl_daemon_set_reload(gl_daemon *d, gl_daemon_config_fn fn, void *user) {
  d->reload_fn = fn;
  d->reload_user = user;
}

int gl_daemon_apply_config(gl_daemon *d, const gl_daemon_config *cfg, char *err, size_t errlen) {
  int level = gl_log_level_parse(cfg->log_level);
  if (level < 0) {
    snprintf(err, errlen, "log-level '%s' unknown", cfg->log_level);
    return -1;
  }
  if (d->cfg.auth_mode == GL_AUTH_TOKEN && !cfg->tenants_file[0]) {
    snprintf(err, errlen, "--auth token needs --tenants FILE (the tenants and their tokens)");
    return -1;
  }
  if (d->cfg.auth_mode == GL_AUTH_MTLS && !cfg->client_ca[0]) {
    snprintf(err, errlen, "--auth mtls needs --client-ca FILE (the CAs of client certificates)");
    return -1;
  }
  if (d->cfg.auth_mode != GL_AUTH_MTLS && cfg->client_crl[0]) {
    snprintf(err, errlen, "--client-crl is for client certificates: it needs --auth mtls");
    return -1;
  }
  /* Everything that can fail first, into new objects. */
  gl_tenants *tenants = NULL;
  if (cfg->tenants_file[0] && !(tenants = gl_tenants_load(cfg->tenants_file, err, errlen)))
    return -1;
  bool same_audit = strcmp(cfg->audit_log, d->cfg.audit_log) == 0;
  gl_audit *audit = NULL;
  if (!same_audit && cfg->audit_log[0] && !(audit = gl_audit_open(cfg->audit_log, err, errlen))) {
    gl_tenants_free(tenants);
    return -1;
  }
  char cert[sizeof d->cfg.cert_file], key[sizeof d->cfg.key_file], fp[65];
  bool mtls = d->cfg.auth_mode == GL_AUTH_MTLS;
  const char *ca = mtls ? cfg->client_ca : NULL;
  const char *crl = mtls ? gl_daemon_crl_file(cfg->client_crl) : NULL;
  /* Under mtls the new tenants and [deny] go to the servers with the CAs
   * and the CRL; they check the open connections again (client_auth.h). */
  gl_client_policy *policy = NULL;
  if (mtls && !(policy = gl_daemon_client_policy(tenants, err, errlen))) goto fail;
  /* The state directory stays the one the daemon started with. */
  gl_daemon_config paths = *cfg;
  snprintf(paths.state_dir, sizeof paths.state_dir, "%s", d->cfg.state_dir);
  if (gl_daemon_tls_paths(&paths, cert, key, sizeof cert, err, errlen) != 0 ||
      gl_tls_file_fingerprint(cert, fp, err, errlen) != 0 ||
      main_port_set_tls(d, cert, key, ca, crl, policy, err, errlen) != 0)
    goto fail;
  if (gl_shards_set_tls(d->shards, cert, key, ca, crl, policy, err, errlen) != 0) {
    /* Put the main port's credentials back to match the shards'. */
    char why[256];
    const char *old_ca = mtls ? d->cfg.client_ca : NULL;
    const char *old_crl = mtls ? gl_daemon_crl_file(d->cfg.client_crl) : NULL;
    gl_client_policy *old = NULL;
    if (mtls && !(old = gl_daemon_client_policy(d->tenants, why, sizeof why)))
      GL_WARN("reload: the main port keeps the new client policy: %s", why);
    else if (main_port_set_tls(d, d->cfg.cert_file, d->cfg.key_file, old_ca, old_crl, old, why,
                               sizeof why) != 0)
      GL_WARN("reload: the main port keeps the new certificate: %s", why);
    gl_client_policy_unref(old);
    goto fail;
  }
  if (mtls) {
    size_t nfp, nserial;
    gl_client_policy_counts(policy, &nfp, &nserial, NULL);
    GL_INFO("reload: client certificates: CRL %s; deny list %zu fingerprint%s, %zu serial%s; "
            "%s; open connections are checked again",
            crl ? crl : "none", nfp, nfp == 1 ? "" : "s", nserial, nserial == 1 ? "" : "s",
            tenants ? "only the tenants of the tenants file" : "every identity (no tenants file)");
  }
  gl_client_policy_unref(policy);
  policy = NULL;

  /* Nothing fails from here on. */
  if (strcmp(fp, d->fingerprint) != 0)
    GL_INFO("reload: certificate %s, SHA-256 fingerprint %s (was %s); connections open keep "
            "the old one",
            cert, fp, d->fingerprint);
  snprintf(d->fingerprint, sizeof d->fingerprint, "%s", fp);
  snprintf(d->cfg.cert_file, sizeof d->cfg.cert_file, "%s", cert);
  snprintf(d->cfg.key_file, sizeof d->cfg.key_file, "%s", key);
  snprintf(d->cfg.client_ca, sizeof d->cfg.client_ca, "%s", cfg->client_ca);
  snprintf(d->cfg.client_crl, sizeof d->cfg.client_crl, "%s", cfg->client_crl);

  gl_tenants_free(d->tenants);
  d->tenants = tenants;
  d->tenants_reloaded = true;
  snprintf(d->cfg.tenants_file, sizeof d->cfg.tenants_file, "%s", cfg->tenants_file);
  if (tenants)
    GL_INFO("reload: tenants: %zu from %s", gl_tenants_count(tenants), cfg->tenants_file);

  if (same_audit) {
    char why[512];
    if (d->audit && gl_audit_reopen(d->audit, why, sizeof why) != 0)
      GL_WARN("reload: audit log: %s (still writing to the file it had)", why);
  } else {
    gl_audit_close(d->audit);
    d->audit = audit;
    snprintf(d->cfg.audit_log, sizeof d->cfg.audit_log, "%s", cfg->audit_log);
    GL_INFO("reload: audit log %s", cfg->audit_log[0] ? cfg->audit_log : "off");
  }

  if (strcmp(cfg->log_level, d->cfg.log_level) != 0) {
    GL_INFO("reload: log level %s (was %s); workers started from now on use it",
            cfg->log_level, d->cfg.log_level);
    snprintf(d->cfg.log_level, sizeof d->cfg.log_level, "%s", cfg->log_level);
    gl_log_set_level((enum gl_log_level)level);
  }
  if (cfg->max_ttl_s != d->cfg.max_ttl_s) {
    GL_INFO("reload: max-ttl %" PRIu32 " s (was %" PRIu32 ")", cfg->max_ttl_s, d->cfg.max_ttl_s);
    d->cfg.max_ttl_s = cfg->max_ttl_s;
    gl_lease_table_set_max_ttl(d->leases, cfg->max_ttl_s);
  }
  if (cfg->max_requests_per_tenant != d->cfg.max_requests_per_tenant ||
      cfg->max_buffered_per_tenant != d->cfg.max_buffered_per_tenant) {
    GL_INFO("reload: max-requests-per-tenant %" PRIu32 ", max-buffered-per-tenant %" PRIu64,
            cfg->max_requests_per_tenant, cfg->max_buffered_per_tenant);
    d->cfg.max_requests_per_tenant = cfg->max_requests_per_tenant;
    d->cfg.max_buffered_per_tenant = cfg->max_buffered_per_tenant;
    gl_admit_set_limits(d->admit, cfg->max_requests_per_tenant, cfg->max_buffered_per_tenant);
  }
  if (cfg->max_isolated_contexts != d->cfg.max_isolated_contexts ||
      cfg->isolated_queue_max != d->cfg.isolated_queue_max ||
      cfg->isolated_queue_ms != d->cfg.isolated_queue_ms) {
    GL_INFO("reload: max-isolated-contexts %u, isolated-queue-max %u, isolated-queue-ms %u",
            cfg->max_isolated_contexts, cfg->isolated_queue_max, cfg->isolated_queue_ms);
    d->cfg.max_isolated_contexts = cfg->max_isolated_contexts;
    d->cfg.isolated_queue_max = cfg->isolated_queue_max;
    d->cfg.isolated_queue_ms = cfg->isolated_queue_ms;
    gl_ctx_admit_configure(d->ctx_admit, cfg->max_isolated_contexts, cfg->isolated_queue_max,
                           cfg->isolated_queue_ms);
  }
  if (cfg->max_contexts_starting != d->cfg.max_contexts_starting) {
    GL_INFO("reload: max-contexts-starting %u", cfg->max_contexts_starting);
    d->cfg.max_contexts_starting = cfg->max_contexts_starting;
    gl_lease_admit_poke(d); /* a higher cap may serve a waiting request now */
  }
  if (cfg->teardown_timeout_ms != d->cfg.teardown_timeout_ms ||
      cfg->teardown_per_context_ms != d->cfg.teardown_per_context_ms) {
    GL_INFO("reload: teardown-timeout-ms %" PRIu32 ", teardown-per-context-ms %" PRIu32,
            cfg->teardown_timeout_ms, cfg->teardown_per_context_ms);
    d->cfg.teardown_timeout_ms = cfg->teardown_timeout_ms;
    d->cfg.teardown_per_context_ms = cfg->teardown_per_context_ms;
    gl_teardown_limits tl = gl_daemon_teardown_limits(&d->cfg);
    gl_teardown_set_limits(d->teardown, &tl);
  }
  if (cfg->max_connections_per_address != d->cfg.max_connections_per_address ||
      cfg->retry_above_handshakes != d->cfg.retry_above_handshakes) {
    GL_INFO("reload: max-connections-per-address %" PRIu32 ", retry-above-handshakes %s%" PRIu32,
            cfg->max_connections_per_address ? cfg->max_connections_per_address : 64,
            cfg->retry_above_handshakes == UINT32_MAX ? "never: " : "",
            cfg->retry_above_handshakes == UINT32_MAX ? 0 : cfg->retry_above_handshakes);
    d->cfg.max_connections_per_address = cfg->max_connections_per_address;
    d->cfg.retry_above_handshakes = cfg->retry_above_handshakes;
    if (d->server)
      gl_qserver_set_limits(d->server, cfg->max_connections_per_address,
                            cfg->retry_above_handshakes);
    gl_shards_set_limits(d->control, cfg->max_connections_per_address,
                         cfg->retry_above_handshakes);
    gl_shards_set_limits(d->shards, cfg->max_connections_per_address,
                         cfg->retry_above_handshakes);
  }
  const char *last = "";
  for (size_t i = 0; i < sizeof k_restart_only / sizeof *k_restart_only; i++) {
    const restart_only *r = &k_restart_only[i];
    if (differs(r, cfg, &d->cfg) && strcmp(last, r->name) != 0) {
      GL_WARN("reload: %s changed; it takes effect when gpuleased starts again (kept as it was)",
              r->name);
      last = r->name;
    }
  }
  return 0;

fail:
  gl_client_policy_unref(policy);
  gl_tenants_free(tenants);
  gl_audit_close(audit);
  return -1;
}

void gl_daemon_reload(gl_daemon *d) {
  gl_notify_reloading();
  GL_INFO("reload: reading the configuration again (SIGHUP)");
  static gl_daemon_config cfg; /* large: off the stack */
  char err[1024];
  int rc;
  if (d->reload_fn) {
    rc = d->reload_fn(d->reload_user, &cfg, err, sizeof err);
  } else {
    cfg = d->cfg;
    rc = 0;
  }
  if (rc == 0) rc = gl_daemon_apply_config(d, &cfg, err, sizeof err);
  if (rc != 0) GL_ERROR("reload failed, nothing changed: %s", err);
  else GL_INFO("reload: done; %zu live leases kept", gl_lease_table_live_count(d->leases));
  if (d->announced)
    gl_daemon_announce_ready(d, rc == 0 ? "reloaded" : "reload failed; configuration unchanged");
}
