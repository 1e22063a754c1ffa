/*
 * client_policy.h - which client certificates a server with client CAs
 * serves, beyond what the TLS chain check decides: a deny list of
 * certificate SHA-256 fingerprints and serial numbers, and (optionally)
 * the identities that are allowed at all (the tenants of the tenants
 * file). The CRL is not here: it is checked by GnuTLS with the chain
 * (gl_qserver_set_tls).
 *
 * A policy is built, then sealed, then shared read-only between threads
 * (every QUIC server and every connection's credential holds a reference;
 * the count is atomic), so a reload replaces it as a whole.
 */
#ifndef GL_NET_CLIENT_POLICY_H
#define GL_NET_CLIENT_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest serial number a deny list takes, as hex digits (RFC 5280:
 * at most 20 octets), without the NUL. */
#define GL_SERIAL_HEX_MAX 40

typedef struct gl_client_policy gl_client_policy;

/* A new, empty policy holding one reference: it denies nothing, and with
 * listed_only true it admits only the identities added with
 * gl_client_policy_allow (none yet), with false every identity. NULL when
 * out of memory. */
gl_client_policy *gl_client_policy_new(bool listed_only);

/* Adds an identity that listed_only admits (copied; a NUL-terminated
 * string). Only before gl_client_policy_seal. 0, or -1 out of memory. */
int gl_client_policy_allow(gl_client_policy *p, const char *identity);

/* Adds a certificate SHA-256 fingerprint to the deny list: 64 hex digits,
 * any case, with or without ':' between bytes (copied, normalised). Only
 * before gl_client_policy_seal. 0; -1 when malformed or out of memory. */
int gl_client_policy_deny_fingerprint(gl_client_policy *p, const char *fingerprint);

/* Adds a certificate serial number to the deny list: 1 to 40 hex digits,
 * any case, with or without ':' between bytes; leading zeros do not count
 * (copied, normalised as gl_client_policy_serial_hex writes it). A serial
 * names one certificate of each CA: it denies that serial whichever of
 * the client CAs issued it. Only before gl_client_policy_seal. 0; -1 when
 * malformed or out of memory. */
int gl_client_policy_deny_serial(gl_client_policy *p, const char *serial);

/* Sorts what was added; after this the policy is read-only and may be
 * shared between threads. */
void gl_client_policy_seal(gl_client_policy *p);

/* Takes one more reference to p (NULL: none) and returns p. */
gl_client_policy *gl_client_policy_ref(gl_client_policy *p);

/* Drops one reference (NULL ignored); the last frees p. */
void gl_client_policy_unref(gl_client_policy *p);

/* The numbers of deny-list entries (fingerprints, serials) and allowed
 * identities, for log lines. Any out pointer may be NULL. */
void gl_client_policy_counts(const gl_client_policy *p, size_t *fingerprints, size_t *serials,
                             size_t *identities);

/* The serial number of the certificate (DER, len bytes) as lower-case hex
 * without leading zeros ("0" for zero) into out (GL_SERIAL_HEX_MAX + 1
 * bytes). 0, or -1 when der is not a certificate. */
int gl_client_policy_serial_hex(const uint8_t *der, size_t len,
                                char out[GL_SERIAL_HEX_MAX + 1]);

/* Whether a sealed policy p (NULL: admits everything) admits the client
 * certificate der (len bytes), whose identity (gl_tls_cert_identity) is
 * `identity`. 0 when it does; -1 with the reason in why (whylen bytes):
 * "its certificate is on the deny list (SHA-256 fingerprint F)", "its
 * certificate is on the deny list (serial S)", "identity 'I' is not a
 * tenant of the tenants file", or "not an X.509 certificate". */
int gl_client_policy_check(const gl_client_policy *p, const uint8_t *der, size_t len,
                           const char *identity, char *why, size_t whylen);

#endif /* GL_NET_CLIENT_POLICY_H */
