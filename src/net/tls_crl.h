/*
 * tls_crl.h - certificate revocation lists for tests and small setups:
 * a CA (as gl_tls_make_ca writes it) signs a CRL of the certificates it
 * revoked, which `gpuleased --client-crl` reads (GnuTLS).
 */
#ifndef GL_NET_TLS_CRL_H
#define GL_NET_TLS_CRL_H

#include <stddef.h>

/* Writes a version 2 CRL (PEM) to crl_path (mode 0644, replaced if it
 * exists), signed with SHA-256 by the CA whose certificate and key are the
 * PEM files ca_cert and ca_key: it lists the serials of the n certificates
 * (PEM files) in revoked (n may be 0: a CRL that lists none), revoked a
 * minute ago; this update an hour ago, next update in 30 days. 0, or -1
 * with the reason in err (a file that cannot be read names it). */
int gl_tls_make_crl(const char *ca_cert, const char *ca_key, const char *const *revoked,
                    size_t n, const char *crl_path, char *err, size_t errlen);

#endif /* GL_NET_TLS_CRL_H */
