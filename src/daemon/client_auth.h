/*
 * client_auth.h - what the daemon tells its QUIC servers about client
 * certificates under --auth mtls, beyond the client CAs: the deny list of
 * the tenants file ([deny]: fingerprints and serials) and, when there is a
 * tenants file, that only its tenants are served (a certificate whose
 * identity has no [tenant] section is refused at the handshake, and an
 * open connection of a tenant taken out by a reload is closed). The CRL
 * (--client-crl) is GnuTLS's part (quic.h). docs/security.md, "Identity
 * changes and revocation".
 */
#ifndef GL_DAEMON_CLIENT_AUTH_H
#define GL_DAEMON_CLIENT_AUTH_H

#include <stddef.h>

#include "auth/tenants.h"
#include "net/client_policy.h"

/* A sealed client policy (one reference, the caller's) from the tenants
 * file t (NULL: no tenants file: every identity, nothing denied): t's
 * tenants as the only identities admitted, and its [deny] entries. NULL
 * with err when out of memory (or an entry gl_client_policy refuses,
 * which the tenants parser does not let through). */
gl_client_policy *gl_daemon_client_policy(const gl_tenants *t, char *err, size_t errlen);

/* The CRL file for the QUIC servers: cfg_crl when it is not empty, else
 * NULL. */
const char *gl_daemon_crl_file(const char *cfg_crl);

#endif /* GL_DAEMON_CLIENT_AUTH_H */
