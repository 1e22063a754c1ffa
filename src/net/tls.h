/*
 * tls.h - TLS credential helpers shared by the QUIC server and client:
 * self-signed certificate generation and SHA-256 fingerprints (GnuTLS).
 */
#ifndef GL_NET_TLS_H
#define GL_NET_TLS_H

#include <stddef.h>
#include <stdint.h>

/* Fingerprint text: 64 lower-case hex digits + NUL. */
#define GL_TLS_FP_HEX_LEN 65

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

#endif /* GL_NET_TLS_H */
