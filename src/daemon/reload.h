/*
 * reload.h - gpuleased's configuration reload (SIGHUP).
 *
 * The daemon reads its configuration file and its command line again
 * (through the function main() gives it) and applies, while it serves:
 * log-level; the tenants file (tokens, quotas, admins); the audit log
 * (closed and opened again, so that logrotate works); the TLS certificate
 * and key, the client CAs and the client CRL (new connections get them,
 * open ones keep their server certificate; under mtls each open
 * connection's client certificate is checked again against the CAs, the
 * CRL, the tenants file's [deny] and its tenants, and closed if it fails:
 * client_auth.h); max-ttl, max-requests-per-tenant, max-connections-per-address,
 * retry-above-handshakes, teardown-timeout-ms and teardown-per-context-ms.
 * Any other option that
 * changed is logged as taking effect at the next start, and left as it
 * is. Leases, sessions and connections are kept. A configuration with an
 * error changes nothing: the error is logged (FILE:LINE for the file).
 * Under systemd the reload is framed by RELOADING=1 and READY=1
 * (notify.h).
 */
#ifndef GL_DAEMON_RELOAD_H
#define GL_DAEMON_RELOAD_H

#include <stddef.h>

#include "daemon/daemon.h"

/* Where a reload gets the configuration from; without it SIGHUP only
 * reopens the audit log and reloads the files named at start. */
void gl_daemon_set_reload(gl_daemon *d, gl_daemon_config_fn fn, void *user);

/* Applies cfg as a reload does: 0, with what changed logged; or -1 with
 * err, and nothing changed. */
int gl_daemon_apply_config(gl_daemon *d, const gl_daemon_config *cfg, char *err, size_t errlen);

/* SIGHUP: reads the configuration (gl_daemon_set_reload) and applies it,
 * logging the outcome and notifying the service manager. */
void gl_daemon_reload(gl_daemon *d);

#endif /* GL_DAEMON_RELOAD_H */
