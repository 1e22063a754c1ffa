/* client_auth.c - see client_auth.h. */
#include "daemon/client_auth.h"

#include <stdio.h>

gl_client_policy *gl_daemon_client_policy(const gl_tenants *t, char *err, size_t errlen) {
  gl_client_policy *p = gl_client_policy_new(t != NULL);
  if (!p) goto oom;
  for (size_t i = 0; i < gl_tenants_count(t); i++)
    if (gl_client_policy_allow(p, gl_tenants_at(t, i)->name) != 0) goto oom;
  for (size_t i = 0; i < gl_tenants_deny_count(t, GL_DENY_FINGERPRINT); i++)
    if (gl_client_policy_deny_fingerprint(p, gl_tenants_deny_at(t, GL_DENY_FINGERPRINT, i)) != 0)
      goto bad;
  for (size_t i = 0; i < gl_tenants_deny_count(t, GL_DENY_SERIAL); i++)
    if (gl_client_policy_deny_serial(p, gl_tenants_deny_at(t, GL_DENY_SERIAL, i)) != 0) goto bad;
  gl_client_policy_seal(p);
  return p;
bad:
  snprintf(err, errlen, "the tenants file's [deny] has an entry the TLS layer refuses");
  gl_client_policy_unref(p);
  return NULL;
oom:
  snprintf(err, errlen, "out of memory");
  gl_client_policy_unref(p);
  return NULL;
}

const char *gl_daemon_crl_file(const char *cfg_crl) {
  return cfg_crl && cfg_crl[0] ? cfg_crl : NULL;
}
