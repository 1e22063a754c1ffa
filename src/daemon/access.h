/*
 * access.h - who may do what on this daemon.
 *
 * Identities come from the transport (a client certificate under --auth
 * mtls, an AUTHENTICATE with a bearer token under --auth token; none under
 * --auth none). A lease belongs to the tenant that allocated it, and every
 * op on it carries a secret that is a capability token (src/auth/cap.h):
 * this module mints those secrets, checks them against the lease and the
 * op, and names the rights each op needs (docs/security.md, "Rights").
 */
#ifndef GL_DAEMON_ACCESS_H
#define GL_DAEMON_ACCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth/cap.h"
#include "daemon/lease_table.h"
#include "proto/wire.h"

typedef enum gl_auth_mode {
  GL_AUTH_NONE = 0,  /* everyone is the anonymous tenant "" */
  GL_AUTH_MTLS = 1,  /* client certificates (--client-ca) */
  GL_AUTH_TOKEN = 2, /* bearer tokens of the tenants file, AUTHENTICATE */
} gl_auth_mode;

/* "none", "mtls", "token". */
const char *gl_auth_mode_name(gl_auth_mode m);
/* Parses a mode name. 0, or -1. */
int gl_auth_mode_parse(const char *s, gl_auth_mode *out);

/* The rights an op needs on its lease (GPULEASE_RIGHT_*); 0 for ops that
 * take no lease secret. For BATCH, the union of its entries' (the list is
 * the decoded batch's). For LEASE_RENEW with rotate, RENEW and DELEGATE. */
uint32_t gl_access_op_rights(const gl_request *r);

/* Mints a secret of lease l: rights, expiry (Unix seconds, 0: none) and
 * audience (0: l's own tenant), sealed with key. */
void gl_access_mint(const gl_cap_key *key, const gl_lease *l, uint32_t rights,
                    uint64_t not_after_s, uint64_t audience,
                    uint8_t out[GPULEASE_SECRET_BYTES]);

/* Checks a request's lease_auth: the lease exists (live), the secret's MAC
 * is the daemon's (constant time), and gl_cap_check passes for caller (its
 * tenant, "" anonymous), the op's rights `need` and now_unix_s. OK with *out
 * (the lease) and *cap (the secret's fields), or: NOT_FOUND, UNAUTHORIZED
 * (wrong, rotated out, expired, revoked, another tenant's, a right
 * missing), LEASE_EXPIRED (the right secret of an expired or lost lease);
 * the message in err in every case. */
gpulease_status gl_access_check(const gl_cap_key *key, gl_lease_table *t, const char *caller,
                                uint16_t op, uint32_t need, const gl_lease_auth *auth,
                                uint64_t now_unix_s, gl_lease **out, gl_cap *cap, char *err,
                                size_t errlen);

#endif /* GL_DAEMON_ACCESS_H */
