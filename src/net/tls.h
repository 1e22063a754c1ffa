/*
 * tls.h - TLS credential helpers shared by the QUIC server and client:
 * self-signed certificate generation, SHA-256 fingerprints, the identity a
 * client certificate names, and (for tests and small setups) a CA that
 * issues client certificates (GnuTLS).
 */
#ifndef GL_NET_TLS_H
#define GL_NET_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Fingerprint text: 64 lower-case hex digits + NUL. */
#define GL_TLS_FP_HEX_LEN 65
/* Bytes of a client certificate's identity, NUL included (as
 * GL_IDENTITY_MAX in quic.h). */
#define GL_TLS_IDENTITY_MAX 256

/* Makes sure state_dir holds a certificate and key: if
 * state_dir/cert.pem and state_dir/key.pem exist they are kept; otherwise
 * a self-signed ECDSA P-256 certificate (CN "gpuleased", SANs: "localhost",
 * this host's name, 127.0.0.1, ::1; valid 10 years; CA:TRUE so it can be
 * used as its own --ca-file) and its key (mode 0600) are written.
 * cert_path/key_path receive the file paths (caller-provided buffers of
 * pathlen bytes). *created is set to 1 when new files were written.
 * Returns 0, or -1 with a reason in err. */
int gl_tls_ensure_self_signed(const char *state_dir, char *cert_path, char *key_path,
                              size_t pathlen, int *created, char *err, size_t errlen);

/* SHA-256 of the first certificate in the PEM file, as hex. 0 or -1. */
int gl_tls_file_fingerprint(const char *cert_file, char hex[GL_TLS_FP_HEX_LEN], char *err,
                            size_t errlen);

/* SHA-256 of DER bytes, as hex. */
void gl_tls_der_fingerprint(const uint8_t *der, size_t len, char hex[GL_TLS_FP_HEX_LEN]);

/* Normalises a user-given fingerprint (hex digits with optional ':'
 * separators, any case) into 64 lower-case hex digits. 0 or -1 if malformed. */
int gl_tls_parse_fingerprint(const char *in, char hex[GL_TLS_FP_HEX_LEN]);

/* The identity of a client certificate (DER, len bytes): its first URI
 * subjectAltName ("spiffe://example.org/ns/ml/sa/alice") when it has one,
 * else its subject's first CN. An identity is 1 to 255 bytes of printable
 * ASCII (0x21..0x7E; a CN may also hold spaces, though not at its start
 * or end). Writes it, NUL-terminated, to out (outlen bytes, at least
 * GL_TLS_IDENTITY_MAX). 0, or -1 with the reason in err (not a
 * certificate, no URI SAN and no CN, empty, too long, or a byte outside
 * those allowed): such a certificate names nobody. */
int gl_tls_cert_identity(const uint8_t *der, size_t len, char *out, size_t outlen, char *err,
                         size_t errlen);

/* Writes a new self-signed CA: an ECDSA P-256 key, subject CN cn,
 * CA:TRUE, key usage keyCertSign and cRLSign, valid 10 years (from an
 * hour ago). The certificate (PEM) goes to cert_path (mode 0644), the key
 * (PEM, PKCS#8) to key_path (mode 0600), each through a temporary file
 * and a rename; existing files are replaced. 0, or -1 with a reason in
 * err. */
int gl_tls_make_ca(const char *cn, const char *cert_path, const char *key_path, char *err,
                   size_t errlen);

/* Issues a client certificate signed by the CA whose certificate and key
 * (PEM files, as gl_tls_make_ca writes them) are ca_cert and ca_key: a new
 * ECDSA P-256 key, subject CN cn, a URI subjectAltName uri_san when it is
 * not NULL, CA:FALSE, key usage digitalSignature, extended key usage TLS
 * client authentication; valid one year (from an hour ago), or, when
 * expired is true, from 30 days ago until 2 days ago. Writes cert_path
 * (PEM, 0644) and key_path (PEM, PKCS#8, 0600) as gl_tls_make_ca does. 0,
 * or -1 with a reason in err (a CA file that cannot be read names it). */
int gl_tls_issue_client_cert(const char *ca_cert, const char *ca_key, const char *cn,
                             const char *uri_san, bool expired, const char *cert_path,
                             const char *key_path, char *err, size_t errlen);

#endif /* GL_NET_TLS_H */
