/*
 * ops_access.c - gpuleased's handlers of AUTHENTICATE, LEASE_DELEGATE and
 * LEASE_REVOKE, and the caller's tenant, quota and use for the inventory
 * (docs/protocol.md; docs/security.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "auth/quota.h"
#include "common/log.h"
#include "daemon/access.h"
#include "daemon/metrics.h"
#include "daemon/ops_internal.h"

const gl_quota_limits *gl_daemon_limits(const gl_daemon *d, const char *tenant,
                                        gl_tenant *scratch) {
  if (!d->tenants) { /* no tenants file: no quotas */
    gl_quota_limits_unlimited(&scratch->limits);
    return &scratch->limits;
  }
  const gl_tenant *t = tenant[0] ? gl_tenants_lookup(d->tenants, tenant, scratch) : NULL;
  /* The anonymous tenant (--auth none), and any name that could never be
   * listed, get the file's [defaults]. */
  return t ? &t->limits : gl_tenants_defaults(d->tenants);
}

const char *gl_daemon_no_identity_msg(const gl_daemon *d, const gl_dreq *req) {
  if (d->cfg.auth_mode == GL_AUTH_TOKEN)
    return "no identity: this daemon runs --auth token; send AUTHENTICATE with a bearer token "
           "from its tenants file first (gpulease --token, $GPULEASE_TOKEN)";
  if (gl_dreq_is_local(req))
    return "no identity: this daemon runs --auth mtls, and its local socket carries no "
           "client certificates; use QUIC with --cert and --key";
  return "no identity: this daemon runs --auth mtls and needs a client certificate (--cert, "
         "--key)";
}

/* ======================================================================
 * AUTHENTICATE
 * ==================================================================== */

void gl_ops_authenticate(gl_daemon *d, gl_dreq *req, const gl_request *r) {
  const char *token = r->u.authenticate.token;
  if (d->cfg.auth_mode != GL_AUTH_TOKEN || !d->tenants) {
    gl_ops_reply_error(req, GL_OP_AUTHENTICATE, GPULEASE_UNSUPPORTED,
                       "this daemon takes no bearer tokens (it runs --auth %s)",
                       gl_auth_mode_name(d->cfg.auth_mode));
    return;
  }
  const char *now = gl_dreq_identity(req);
  if (now[0]) {
    gl_ops_reply_error(req, GL_OP_AUTHENTICATE, GPULEASE_INVALID_ARGUMENT,
                       "this connection is already tenant '%s'", now);
    return;
  }
  const gl_tenant *t = gl_tenants_by_token(d->tenants, token, strlen(token));
  if (!t) {
    gl_ops_reply_error(req, GL_OP_AUTHENTICATE, GPULEASE_UNAUTHORIZED,
                       "unknown bearer token (not in the daemon's tenants file)");
    return;
  }
  gl_response resp = {.op = GL_OP_AUTHENTICATE, .status = GPULEASE_OK};
  snprintf(resp.u.tenant, sizeof resp.u.tenant, "%s", t->name);
  gl_buf b;
  gl_buf_init(&b);
  gl_response_encode(&resp, &b);
  if (b.oom) {
    gl_ops_reply_bytes(req, &b);
    return;
  }
  GL_DEBUG("connection authenticated as tenant '%s'", t->name);
  gl_dreq_reply_identity(req, t->name, b.data, b.len);
  gl_buf_free(&b);
}

bool gl_ops_tenant_gone(const gl_daemon *d, const char *tenant) {
  return d->cfg.auth_mode != GL_AUTH_NONE && d->tenants && tenant && tenant[0] &&
         !gl_tenants_lookup(d->tenants, tenant, NULL);
}

bool gl_ops_lease_tenant_ok(gl_daemon *d, gl_dreq *req, uint16_t op, const gl_lease *l) {
  if (!d->tenants_reloaded || !gl_ops_tenant_gone(d, l->tenant)) return true;
  gl_ops_reply_error(req, op, GPULEASE_UNAUTHORIZED,
                     "lease %" PRIu64 " belongs to tenant '%s', which is no longer in the "
                     "daemon's tenants file (reloaded); its secrets are refused",
                     l->id, l->tenant);
  return false;
}

/* ======================================================================
 * LEASE_DELEGATE
 * ==================================================================== */

void gl_ops_lease_delegate(gl_daemon *d, gl_dreq *req, const gl_request *r) {
  const gl_lease_delegate_req *q = &r->u.delegate;
  gl_lease *l = NULL;
  gl_cap cap;
  char err[512];
  uint64_t now = gl_unix_s();
  gpulease_status st =
      gl_access_check(&d->cap_key, d->leases, gl_dreq_identity(req), r->op,
                      GPULEASE_RIGHT_DELEGATE, &q->auth, now, &l, &cap, err, sizeof err);
  if (st != GPULEASE_OK) {
    gl_ops_reply_error(req, r->op, st, "%s", err);
    return;
  }
  if (!gl_ops_lease_tenant_ok(d, req, r->op, l)) return;
  /* A derived secret is never stronger than the one presented. */
  uint32_t extra = q->rights & ~cap.rights;
  if (extra) {
    char want[128], has[128];
    gpulease_rights_format(extra, want, sizeof want);
    gpulease_rights_format(cap.rights, has, sizeof has);
    gl_ops_reply_error(req, r->op, GPULEASE_UNAUTHORIZED,
                       "cannot delegate '%s': the presented secret of lease %" PRIu64
                       " carries only %s",
                       want, l->id, has);
    return;
  }
  if (q->audience[0] && !gl_tenant_name_valid(q->audience)) {
    gl_ops_reply_error(req, r->op, GPULEASE_INVALID_ARGUMENT,
                       "audience is not a tenant name (printable ASCII, 1..255 bytes)");
    return;
  }
  uint64_t not_after = q->ttl_s ? now + q->ttl_s : cap.not_after_s;
  if (cap.not_after_s && (not_after == 0 || not_after > cap.not_after_s))
    not_after = cap.not_after_s;
  /* Handed to the lease's own tenant: audience 0, as a root secret's. */
  uint64_t audience = cap.audience;
  if (q->audience[0])
    audience = strcmp(q->audience, l->tenant) == 0 ? 0 : gl_cap_audience(q->audience);
  gl_response resp = {.op = r->op, .status = GPULEASE_OK};
  gl_access_mint(&d->cap_key, l, q->rights, not_after, audience, resp.u.secret);
  char rights[128];
  gpulease_rights_format(q->rights, rights, sizeof rights);
  GL_INFO("lease %" PRIu64 ": delegated %s%s%s, until %s", l->id, rights,
          q->audience[0] ? " to tenant " : "", q->audience,
          not_after ? "a set time" : "the lease ends");
  gl_buf b;
  gl_buf_init(&b);
  gl_response_encode(&resp, &b);
  gl_ops_reply_bytes(req, &b);
}

/* ======================================================================
 * LEASE_REVOKE
 * ==================================================================== */

void gl_ops_lease_revoke(gl_daemon *d, gl_dreq *req, const gl_request *r) {
  const gl_lease_revoke_req *q = &r->u.revoke;
  const char *who = gl_dreq_identity(req);
  if (!who[0]) {
    gl_ops_reply_error(req, r->op, GPULEASE_UNAUTHORIZED,
                       "LEASE_REVOKE acts by identity, and this caller has none (the daemon "
                       "runs --auth none); free the lease with its secret instead");
    return;
  }
  gl_tenant scratch;
  const gl_tenant *t = d->tenants ? gl_tenants_lookup(d->tenants, who, &scratch) : NULL;
  bool admin = t && t->admin;
  gl_lease *l = gl_lease_table_find(d->leases, q->lease_id);
  /* Another tenant's lease looks like no lease at all to a non-admin. */
  if (!l || (!admin && strcmp(l->tenant, who) != 0)) {
    gl_ops_reply_error(req, r->op, GPULEASE_NOT_FOUND,
                       "no live lease with id %" PRIu64 " of tenant '%s'", q->lease_id, who);
    return;
  }
  char why[300];
  snprintf(why, sizeof why, "lease %" PRIu64 " was revoked by %s '%s'%s%s", l->id,
           admin && strcmp(l->tenant, who) ? "admin" : "tenant", who, q->reason[0] ? ": " : "",
           q->reason);
  GL_INFO("%s", why);
  gl_daemon_end_lease(d, l, GPULEASE_LEASE_EXPIRED, why);
  l->end_reason = GL_LEASE_END_REVOKED;
  gl_metrics_lease_dropped(d->metrics, GL_DROP_REVOKED);
  snprintf(l->end_note, sizeof l->end_note, "by '%s'%s%s", who, q->reason[0] ? ": " : "",
           q->reason);
  gl_lease_table_bury(d->leases, l, gl_mono_ns());
  gl_response resp = {.op = r->op, .status = GPULEASE_OK};
  gl_buf b;
  gl_buf_init(&b);
  gl_response_encode(&resp, &b);
  gl_ops_reply_bytes(req, &b);
}

/* ======================================================================
 * ADMIN_UNFENCE
 * ==================================================================== */

void gl_ops_admin_unfence(gl_daemon *d, gl_dreq *req, const gl_request *r) {
  const char *who = gl_dreq_identity(req);
  gl_tenant scratch;
  const gl_tenant *t = who[0] && d->tenants ? gl_tenants_lookup(d->tenants, who, &scratch) : NULL;
  if (!t || !t->admin) {
    gl_ops_reply_error(req, r->op, GPULEASE_UNAUTHORIZED,
                       "ADMIN_UNFENCE is for the daemon's admins (admin = true in its tenants "
                       "file); this caller is %s%s%s",
                       who[0] ? "tenant '" : "anonymous", who, who[0] ? "'" : "");
    return;
  }
  uint32_t g = r->u.unfence.gpu_index;
  if (g >= d->node.gpu_count) {
    gl_ops_reply_error(req, r->op, GPULEASE_NO_DEVICE,
                       "no GPU with index %" PRIu32 " (this node has %" PRIu32 ")", g,
                       d->node.gpu_count);
    return;
  }
  const char *why = gl_lease_table_fenced(d->leases, g);
  if (!why) {
    gl_ops_reply_error(req, r->op, GPULEASE_INVALID_ARGUMENT, "GPU %" PRIu32 " is not fenced", g);
    return;
  }
  GL_WARN("GPU %" PRIu32 " unfenced by admin '%s' (it was fenced: %s)", g, who, why);
  gl_lease_table_unfence(d->leases, g);
  gl_response resp = {.op = r->op, .status = GPULEASE_OK};
  gl_buf b;
  gl_buf_init(&b);
  gl_response_encode(&resp, &b);
  gl_ops_reply_bytes(req, &b);
}

/* ======================================================================
 * The caller's tenant in the inventory
 * ==================================================================== */

void gl_ops_tenant_info(gl_daemon *d, const char *tenant, gl_tenant_info *out) {
  memset(out, 0, sizeof *out);
  snprintf(out->tenant, sizeof out->tenant, "%s", tenant);
  gl_tenant scratch;
  const gl_tenant *t = d->tenants && tenant[0] ? gl_tenants_lookup(d->tenants, tenant, &scratch)
                                               : NULL;
  const gl_quota_limits *lim = gl_daemon_limits(d, tenant, &scratch);
  if (t && t->admin) out->flags |= GPULEASE_TENANT_ADMIN;
  if (t && t->listed) out->flags |= GPULEASE_TENANT_LISTED;
  out->quota_vram_bytes = lim->vram_bytes;
  out->quota_leases = lim->leases;
  out->quota_sessions = lim->sessions;
  out->quota_max_ttl_s = lim->max_ttl_s;
  out->quota_gpu_seconds_per_hour = lim->gpu_seconds_per_hour;
  gl_quota_usage u;
  gl_quota_usage_of(d->quota, tenant, gl_mono_ns(), &u);
  out->used_vram_bytes = u.vram_bytes;
  out->used_leases = u.leases;
  out->used_sessions = u.sessions;
  out->used_gpu_seconds = u.gpu_seconds_last_hour;
}
