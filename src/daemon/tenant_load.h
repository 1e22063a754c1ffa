/*
 * tenant_load.h - requests in flight per tenant, so that one tenant cannot
 * fill the daemon with work (gpuleased --max-requests-per-tenant; the
 * excess is answered BUSY, docs/security.md "Overload").
 *
 * A table of tenant names to counters, bounded: at most GL_TENANT_LOAD_MAX
 * tenants are counted at once; when the table is full, tenants with
 * nothing in flight are dropped to make room, and if none has nothing in
 * flight the newcomer is refused (BUSY). Main loop only.
 */
#ifndef GL_DAEMON_TENANT_LOAD_H
#define GL_DAEMON_TENANT_LOAD_H

#include <stddef.h>
#include <stdint.h>

#define GL_TENANT_LOAD_MAX 4096

typedef struct gl_tenant_load gl_tenant_load;

gl_tenant_load *gl_tenant_load_new(void);
void gl_tenant_load_free(gl_tenant_load *t);

/* The in-flight counter of tenant (a NUL-terminated name, "" anonymous),
 * created at 0 when new. It stays valid while it is above 0, and until the
 * next call otherwise. NULL when the table is full of busy tenants. */
uint32_t *gl_tenant_load_counter(gl_tenant_load *t, const char *tenant);

#endif /* GL_DAEMON_TENANT_LOAD_H */
