/*
 * ops_internal.h - what the daemon's request handlers share: ops.c (leases,
 * submits, sessions, shared memory) and ops_access.c (identities,
 * delegation, revocation, the caller's quota). Their replies are
 * reply.h's.
 */
#ifndef GL_DAEMON_OPS_INTERNAL_H
#define GL_DAEMON_OPS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "auth/tenants.h"
#include "common/util.h"
#include "daemon/daemon.h"
#include "daemon/dreq.h"
#include "daemon/reply.h"
#include "proto/wire.h"

/* Checks r's lease secret (lease_auth a) for the rights r's op needs;
 * on failure replies and returns NULL. */
gl_lease *gl_ops_auth(gl_daemon *d, gl_dreq *req, const gl_request *r, const gl_lease_auth *a);

/* The handlers of LEASE_RENEW (ops.c), LEASE_DELEGATE, LEASE_REVOKE and
 * AUTHENTICATE (ops_access.c). */
void gl_ops_lease_renew(gl_daemon *d, gl_dreq *req, const gl_request *r);
void gl_ops_lease_delegate(gl_daemon *d, gl_dreq *req, const gl_request *r);
void gl_ops_lease_revoke(gl_daemon *d, gl_dreq *req, const gl_request *r);
void gl_ops_authenticate(gl_daemon *d, gl_dreq *req, const gl_request *r);
void gl_ops_admin_unfence(gl_daemon *d, gl_dreq *req, const gl_request *r);

/* The quota limits of tenant (all unlimited without a tenants file);
 * scratch holds them when the tenant is not listed. */
const gl_quota_limits *gl_daemon_limits(const gl_daemon *d, const char *tenant,
                                        gl_tenant *scratch);

/* The message for a request without an identity under --auth mtls or
 * token: what the client must present. Static storage. */
const char *gl_daemon_no_identity_msg(const gl_daemon *d, const gl_dreq *req);

/* Whether tenant (an identity; "" anonymous) was taken out of the
 * tenants file: under --auth mtls or token, with a tenants file, a
 * non-empty name without a [tenant] section. Meaningful after a reload
 * (d->tenants_reloaded); before it every identity is listed or, under
 * mtls without a tenants file, there is no file to be out of. */
bool gl_ops_tenant_gone(const gl_daemon *d, const char *tenant);

/* After a lease secret passed gl_access_check: refuses it (replies
 * UNAUTHORIZED, returns false) when the lease's tenant was taken out of
 * the tenants file by a reload; true otherwise. */
bool gl_ops_lease_tenant_ok(gl_daemon *d, gl_dreq *req, uint16_t op, const gl_lease *l);

/* Fills the inventory's tenant section for the caller. */
void gl_ops_tenant_info(gl_daemon *d, const char *tenant, gl_tenant_info *out);

#endif /* GL_DAEMON_OPS_INTERNAL_H */
