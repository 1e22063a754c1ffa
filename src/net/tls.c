/*
 * tls.c - TLS credential helpers (see tls.h): a self-signed ECDSA P-256
 * certificate for gpuleased's first start, SHA-256 fingerprints used for
 * certificate pinning, the identity a client certificate names, and a
 * small CA that issues client certificates (tests, small setups).
 *
 * Files are written to a temporary name and renamed into place, key first,
 * so a crash never leaves a certificate whose key is missing.
 */
#include "net/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509-ext.h>
#include <gnutls/x509.h>

#include "common/util.h"

#define CERT_NAME "cert.pem"
#define KEY_NAME "key.pem"
#define CERT_CN "gpuleased"
#define CERT_VALIDITY_S (10ll * 365 * 24 * 3600)
/* Largest certificate file we agree to read for a fingerprint. */
#define CERT_FILE_MAX_BYTES (1u << 20)

static bool file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* Writes data to path via path.tmp + rename, with the given mode. */
static int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode,
                             char *err, size_t errlen) {
  char tmp[4096];
  int n = snprintf(tmp, sizeof tmp, "%s.tmp", path);
  if (n < 0 || (size_t)n >= sizeof tmp) {
    gl_set_err(err, errlen, "path too long: %s", path);
    return -1;
  }
  (void)unlink(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    gl_set_err(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
    return -1;
  }
  /* The umask may have narrowed the mode; make it exact (0600 for keys). */
  if (fchmod(fd, mode) != 0) {
    gl_set_err(err, errlen, "cannot chmod %s: %s", tmp, strerror(errno));
    goto fail;
  }
  const uint8_t *p = data;
  size_t left = len;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      gl_set_err(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
      goto fail;
    }
    p += w;
    left -= (size_t)w;
  }
  if (fsync(fd) != 0) {
    gl_set_err(err, errlen, "cannot sync %s: %s", tmp, strerror(errno));
    goto fail;
  }
  if (close(fd) != 0) {
    fd = -1;
    gl_set_err(err, errlen, "cannot close %s: %s", tmp, strerror(errno));
    goto fail;
  }
  fd = -1;
  if (rename(tmp, path) != 0) {
    gl_set_err(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    goto fail;
  }
  return 0;
fail:
  if (fd >= 0) close(fd);
  (void)unlink(tmp);
  return -1;
}

/* Adds DNS and IP subject alternative names: localhost, this host's name,
 * 127.0.0.1 and ::1. */
static int add_sans(gnutls_x509_crt_t crt) {
  static const char localhost[] = "localhost";
  int rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, localhost,
                                                sizeof localhost - 1, GNUTLS_FSAN_APPEND);
  if (rc < 0) return rc;
  char host[256];
  if (gethostname(host, sizeof host) == 0) {
    host[sizeof host - 1] = 0;
    size_t hl = strlen(host);
    if (hl > 0 && strcmp(host, localhost) != 0) {
      rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, host, (unsigned)hl,
                                                GNUTLS_FSAN_APPEND);
      if (rc < 0) return rc;
    }
  }
  static const uint8_t v4_loopback[4] = {127, 0, 0, 1};
  static const uint8_t v6_loopback[16] = {[15] = 1};
  rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, v4_loopback,
                                            sizeof v4_loopback, GNUTLS_FSAN_APPEND);
  if (rc < 0) return rc;
  return gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, v6_loopback,
                                              sizeof v6_loopback, GNUTLS_FSAN_APPEND);
}

/* What a new certificate says, and who signs it. */
typedef struct cert_spec {
  const char *cn;
  const char *uri_san;   /* a URI subjectAltName, or NULL */
  bool local_sans;       /* localhost, this host's name, 127.0.0.1, ::1 */
  bool ca;               /* CA:TRUE (else CA:FALSE) */
  unsigned key_usage;    /* GNUTLS_KEY_* */
  const char *purpose;   /* an extended key usage OID, or NULL */
  time_t not_before, not_after;
  gnutls_x509_crt_t issuer;    /* NULL: self-signed */
  gnutls_privkey_t issuer_key; /* with issuer */
} cert_spec;

/* Generates a key pair and a certificate as spec says, as PEM datums
 * (gnutls_free them). */
static int generate_pair(const cert_spec *spec, gnutls_datum_t *cert_pem, gnutls_datum_t *key_pem,
                         char *err, size_t errlen) {
  gnutls_x509_privkey_t xkey = NULL;
  gnutls_privkey_t pkey = NULL;
  gnutls_x509_crt_t crt = NULL;
  const char *what = "";
  int rc;
  cert_pem->data = key_pem->data = NULL;

#define CHECK(expr, label)                                                                 \
  do {                                                                                     \
    what = label;                                                                          \
    if ((rc = (expr)) < 0) goto fail;                                                      \
  } while (0)

  CHECK(gnutls_x509_privkey_init(&xkey), "privkey_init");
  CHECK(gnutls_x509_privkey_generate(xkey, GNUTLS_PK_ECDSA,
                                     GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0),
        "generating the ECDSA P-256 key");
  CHECK(gnutls_privkey_init(&pkey), "privkey_init");
  CHECK(gnutls_privkey_import_x509(pkey, xkey, 0), "privkey_import");
  CHECK(gnutls_x509_crt_init(&crt), "crt_init");
  CHECK(gnutls_x509_crt_set_version(crt, 3), "set_version");

  uint8_t serial[16];
  CHECK(gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof serial), "random serial");
  serial[0] = (uint8_t)((serial[0] & 0x7f) | 0x01); /* positive, no leading zero */
  CHECK(gnutls_x509_crt_set_serial(crt, serial, sizeof serial), "set_serial");

  CHECK(gnutls_x509_crt_set_activation_time(crt, spec->not_before), "set_activation_time");
  CHECK(gnutls_x509_crt_set_expiration_time(crt, spec->not_after), "set_expiration_time");
  CHECK(gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, spec->cn,
                                      (unsigned)strlen(spec->cn)),
        "set common name");
  CHECK(gnutls_x509_crt_set_key(crt, xkey), "set_key");
  if (spec->local_sans) CHECK(add_sans(crt), "subject alternative names");
  if (spec->uri_san)
    CHECK(gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_URI, spec->uri_san,
                                               (unsigned)strlen(spec->uri_san),
                                               GNUTLS_FSAN_APPEND),
          "URI subject alternative name");
  CHECK(gnutls_x509_crt_set_basic_constraints(crt, spec->ca ? 1 : 0, -1), "basic constraints");
  CHECK(gnutls_x509_crt_set_key_usage(crt, spec->key_usage), "key usage");
  if (spec->purpose)
    CHECK(gnutls_x509_crt_set_key_purpose_oid(crt, spec->purpose, 0), "extended key usage");

  uint8_t key_id[64];
  size_t key_id_len = sizeof key_id;
  CHECK(gnutls_x509_crt_get_key_id(crt, GNUTLS_KEYID_USE_SHA1, key_id, &key_id_len),
        "key id");
  CHECK(gnutls_x509_crt_set_subject_key_id(crt, key_id, key_id_len), "subject key id");
  if (spec->issuer) {
    uint8_t ca_id[64];
    size_t ca_id_len = sizeof ca_id;
    unsigned critical = 0;
    if (gnutls_x509_crt_get_subject_key_id(spec->issuer, ca_id, &ca_id_len, &critical) >= 0)
      CHECK(gnutls_x509_crt_set_authority_key_id(crt, ca_id, ca_id_len), "authority key id");
    CHECK(gnutls_x509_crt_privkey_sign(crt, spec->issuer, spec->issuer_key, GNUTLS_DIG_SHA256,
                                       0),
          "signing the certificate");
  } else {
    CHECK(gnutls_x509_crt_privkey_sign(crt, crt, pkey, GNUTLS_DIG_SHA256, 0),
          "self-signing the certificate");
  }
  CHECK(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, cert_pem), "exporting the certificate");
  CHECK(gnutls_x509_privkey_export2_pkcs8(xkey, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN,
                                          key_pem),
        "exporting the key");
#undef CHECK

  gnutls_x509_crt_deinit(crt);
  gnutls_privkey_deinit(pkey);
  gnutls_x509_privkey_deinit(xkey);
  return 0;

fail:
  gl_set_err(err, errlen, "certificate generation failed (%s): %s", what, gnutls_strerror(rc));
  gnutls_free(cert_pem->data);
  gnutls_free(key_pem->data);
  cert_pem->data = key_pem->data = NULL;
  if (crt) gnutls_x509_crt_deinit(crt);
  if (pkey) gnutls_privkey_deinit(pkey);
  if (xkey) gnutls_x509_privkey_deinit(xkey);
  return -1;
}

/* Generates a pair as spec says and writes it: key first (0600), then the
 * certificate (0644). 0 or -1 with err. */
static int write_pair(const cert_spec *spec, const char *cert_path, const char *key_path,
                      char *err, size_t errlen) {
  gnutls_datum_t cert_pem, key_pem;
  if (generate_pair(spec, &cert_pem, &key_pem, err, errlen) != 0) return -1;
  int rc = write_file_atomic(key_path, key_pem.data, key_pem.size, 0600, err, errlen);
  if (rc == 0)
    rc = write_file_atomic(cert_path, cert_pem.data, cert_pem.size, 0644, err, errlen);
  gnutls_memset(key_pem.data, 0, key_pem.size);
  gnutls_free(key_pem.data);
  gnutls_free(cert_pem.data);
  return rc;
}

int gl_tls_ensure_self_signed(const char *state_dir, char *cert_path, char *key_path,
                              size_t pathlen, int *created, char *err, size_t errlen) {
  if (created) *created = 0;
  if (!state_dir || !*state_dir || !cert_path || !key_path || pathlen == 0) {
    gl_set_err(err, errlen, "invalid arguments");
    return -1;
  }
  int n1 = snprintf(cert_path, pathlen, "%s/%s", state_dir, CERT_NAME);
  int n2 = snprintf(key_path, pathlen, "%s/%s", state_dir, KEY_NAME);
  if (n1 < 0 || n2 < 0 || (size_t)n1 >= pathlen || (size_t)n2 >= pathlen) {
    gl_set_err(err, errlen, "state directory path too long: %s", state_dir);
    return -1;
  }

  bool have_cert = file_exists(cert_path), have_key = file_exists(key_path);
  if (have_cert && have_key) return 0;
  if (have_cert) {
    /* Never overwrite a certificate someone put there. */
    gl_set_err(err, errlen, "%s exists but %s is missing", cert_path, key_path);
    return -1;
  }

  if (mkdir(state_dir, 0700) != 0 && errno != EEXIST) {
    gl_set_err(err, errlen, "cannot create %s: %s", state_dir, strerror(errno));
    return -1;
  }

  time_t now = time(NULL);
  /* CA:TRUE so that the certificate can be its own --ca-file. */
  cert_spec spec = {
      .cn = CERT_CN,
      .local_sans = true,
      .ca = true,
      .key_usage = GNUTLS_KEY_DIGITAL_SIGNATURE | GNUTLS_KEY_KEY_CERT_SIGN,
      .purpose = GNUTLS_KP_TLS_WWW_SERVER,
      .not_before = now - 3600,
      .not_after = (time_t)(now + CERT_VALIDITY_S),
  };
  if (write_pair(&spec, cert_path, key_path, err, errlen) != 0) return -1;
  if (created) *created = 1;
  return 0;
}

int gl_tls_make_ca(const char *cn, const char *cert_path, const char *key_path, char *err,
                   size_t errlen) {
  if (!cn || !*cn || !cert_path || !key_path) {
    gl_set_err(err, errlen, "invalid arguments");
    return -1;
  }
  time_t now = time(NULL);
  cert_spec spec = {
      .cn = cn,
      .ca = true,
      .key_usage = GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN,
      .not_before = now - 3600,
      .not_after = (time_t)(now + CERT_VALIDITY_S),
  };
  return write_pair(&spec, cert_path, key_path, err, errlen);
}

/* Reads a PEM file (at most CERT_FILE_MAX_BYTES) into *out (free it). */
static int read_pem(const char *path, gnutls_datum_t *out, char *err, size_t errlen) {
  uint8_t *data = NULL;
  size_t len = 0;
  if (gl_read_file(path, CERT_FILE_MAX_BYTES, &data, &len) != 0) {
    gl_set_err(err, errlen, "cannot read %s: %s", path, strerror(errno));
    return -1;
  }
  out->data = data;
  out->size = (unsigned)len;
  return 0;
}

int gl_tls_issue_client_cert(const char *ca_cert, const char *ca_key, const char *cn,
                             const char *uri_san, bool expired, const char *cert_path,
                             const char *key_path, char *err, size_t errlen) {
  if (!ca_cert || !ca_key || !cn || !*cn || !cert_path || !key_path) {
    gl_set_err(err, errlen, "invalid arguments");
    return -1;
  }
  gnutls_datum_t crt_pem = {NULL, 0}, key_pem = {NULL, 0};
  gnutls_x509_crt_t ca = NULL;
  gnutls_privkey_t ca_pkey = NULL;
  int ret = -1, rc;
  if (read_pem(ca_cert, &crt_pem, err, errlen) != 0 ||
      read_pem(ca_key, &key_pem, err, errlen) != 0)
    goto out;
  if ((rc = gnutls_x509_crt_init(&ca)) < 0 ||
      (rc = gnutls_x509_crt_import(ca, &crt_pem, GNUTLS_X509_FMT_PEM)) < 0) {
    gl_set_err(err, errlen, "%s: no PEM certificate: %s", ca_cert, gnutls_strerror(rc));
    goto out;
  }
  if ((rc = gnutls_privkey_init(&ca_pkey)) < 0 ||
      (rc = gnutls_privkey_import_x509_raw(ca_pkey, &key_pem, GNUTLS_X509_FMT_PEM, NULL, 0)) <
          0) {
    gl_set_err(err, errlen, "%s: no PEM private key: %s", ca_key, gnutls_strerror(rc));
    goto out;
  }
  time_t now = time(NULL);
  cert_spec spec = {
      .cn = cn,
      .uri_san = uri_san,
      .key_usage = GNUTLS_KEY_DIGITAL_SIGNATURE,
      .purpose = GNUTLS_KP_TLS_WWW_CLIENT,
      .not_before = expired ? now - 30 * 86400 : now - 3600,
      .not_after = expired ? now - 2 * 86400 : now + 365 * 86400,
      .issuer = ca,
      .issuer_key = ca_pkey,
  };
  ret = write_pair(&spec, cert_path, key_path, err, errlen);
out:
  if (ca_pkey) gnutls_privkey_deinit(ca_pkey);
  if (ca) gnutls_x509_crt_deinit(ca);
  if (key_pem.data) gnutls_memset(key_pem.data, 0, key_pem.size);
  free(key_pem.data);
  free(crt_pem.data);
  return ret;
}

/* True when the n bytes at p are an identity: 1 to 255 bytes of 0x21..0x7E,
 * and with spaces allowed inside (not at either end). */
static bool identity_ok(const uint8_t *p, size_t n, bool spaces, const char **why) {
  if (n == 0) {
    *why = "it is empty";
    return false;
  }
  if (n >= GL_TLS_IDENTITY_MAX) {
    *why = "it is longer than 255 bytes";
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    if (p[i] >= 0x21 && p[i] <= 0x7e) continue;
    if (p[i] == ' ' && spaces && i > 0 && i + 1 < n) continue;
    *why = p[i] == ' ' && spaces ? "it starts or ends with a space"
                                 : "it holds a byte other than printable ASCII";
    return false;
  }
  return true;
}

/* The first URI subjectAltName of crt into out: 1 when found (0 none, -1
 * unusable, with *why). */
static int first_uri_san(gnutls_x509_crt_t crt, char *out, const char **why) {
  gnutls_datum_t ext = {NULL, 0};
  unsigned critical = 0;
  if (gnutls_x509_crt_get_extension_by_oid2(crt, GNUTLS_X509EXT_OID_SAN, 0, &ext, &critical) < 0)
    return 0; /* no SAN extension */
  gnutls_subject_alt_names_t sans = NULL;
  int found = 0;
  if (gnutls_subject_alt_names_init(&sans) < 0 ||
      gnutls_x509_ext_import_subject_alt_names(&ext, sans, 0) < 0) {
    *why = "its subjectAltName extension cannot be parsed";
    found = -1;
    goto out;
  }
  for (unsigned i = 0;; i++) {
    unsigned type = 0;
    gnutls_datum_t v = {NULL, 0};
    if (gnutls_subject_alt_names_get(sans, i, &type, &v, NULL) < 0) break;
    if (type != GNUTLS_SAN_URI) continue;
    if (!identity_ok(v.data, v.size, false, why)) {
      found = -1;
    } else {
      memcpy(out, v.data, v.size);
      out[v.size] = 0;
      found = 1;
    }
    break;
  }
out:
  if (sans) gnutls_subject_alt_names_deinit(sans);
  gnutls_free(ext.data);
  return found;
}

int gl_tls_cert_identity(const uint8_t *der, size_t len, char *out, size_t outlen, char *err,
                         size_t errlen) {
  if (!der || !out || outlen < GL_TLS_IDENTITY_MAX || len > UINT_MAX) {
    gl_set_err(err, errlen, "invalid arguments");
    return -1;
  }
  out[0] = 0;
  gnutls_x509_crt_t crt = NULL;
  gnutls_datum_t d = {.data = (unsigned char *)der, .size = (unsigned)len};
  int rc = gnutls_x509_crt_init(&crt);
  if (rc >= 0) rc = gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_DER);
  if (rc < 0) {
    gl_set_err(err, errlen, "not an X.509 certificate: %s", gnutls_strerror(rc));
    if (crt) gnutls_x509_crt_deinit(crt);
    return -1;
  }
  const char *why = NULL;
  int ret = -1;
  int uri = first_uri_san(crt, out, &why);
  if (uri < 0) {
    gl_set_err(err, errlen, "its URI subjectAltName is no identity: %s", why);
  } else if (uri > 0) {
    ret = 0;
  } else {
    /* Room for a CN too long to use, so that it is told apart from none. */
    char cn[4 * GL_TLS_IDENTITY_MAX];
    size_t n = sizeof cn;
    rc = gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &n);
    if (rc == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE) {
      gl_set_err(err, errlen, "it has neither a URI subjectAltName nor a common name");
    } else if (rc == GNUTLS_E_SHORT_MEMORY_BUFFER) {
      gl_set_err(err, errlen, "its common name is no identity: it is longer than 255 bytes");
    } else if (rc < 0) {
      gl_set_err(err, errlen, "its common name cannot be read: %s", gnutls_strerror(rc));
    } else if (n >= sizeof cn || !identity_ok((const uint8_t *)cn, n, true, &why) ||
               strlen(cn) != n) {
      gl_set_err(err, errlen, "its common name is no identity: %s",
                 why ? why : "it holds a byte other than printable ASCII");
    } else {
      memcpy(out, cn, n + 1);
      ret = 0;
    }
  }
  gnutls_x509_crt_deinit(crt);
  if (ret != 0) out[0] = 0;
  return ret;
}

void gl_tls_der_fingerprint(const uint8_t *der, size_t len, char hex[GL_TLS_FP_HEX_LEN]) {
  uint8_t digest[32];
  if (gnutls_hash_fast(GNUTLS_DIG_SHA256, der, len, digest) < 0) {
    /* Cannot happen with a working GnuTLS; never hand back a usable pin. */
    memset(hex, 0, GL_TLS_FP_HEX_LEN);
    return;
  }
  gl_hex_encode(digest, sizeof digest, hex);
}

int gl_tls_file_fingerprint(const char *cert_file, char hex[GL_TLS_FP_HEX_LEN], char *err,
                            size_t errlen) {
  uint8_t *data = NULL;
  size_t len = 0;
  if (!cert_file || gl_read_file(cert_file, CERT_FILE_MAX_BYTES, &data, &len) != 0) {
    gl_set_err(err, errlen, "cannot read %s: %s", cert_file ? cert_file : "(null)",
               strerror(errno));
    return -1;
  }
  gnutls_x509_crt_t crt = NULL;
  gnutls_datum_t pem = {.data = data, .size = (unsigned)len};
  gnutls_datum_t der = {NULL, 0};
  int rc = gnutls_x509_crt_init(&crt);
  if (rc >= 0) rc = gnutls_x509_crt_import(crt, &pem, GNUTLS_X509_FMT_PEM);
  if (rc >= 0) rc = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_DER, &der);
  if (rc >= 0) gl_tls_der_fingerprint(der.data, der.size, hex);
  else gl_set_err(err, errlen, "%s: no PEM certificate: %s", cert_file, gnutls_strerror(rc));
  gnutls_free(der.data);
  if (crt) gnutls_x509_crt_deinit(crt);
  free(data);
  return rc >= 0 ? 0 : -1;
}

static int hex_digit(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int gl_tls_parse_fingerprint(const char *in, char hex[GL_TLS_FP_HEX_LEN]) {
  static const char digits[] = "0123456789abcdef";
  if (!in) return -1;
  while (*in == ' ' || *in == '\t') in++;
  size_t n = 0;
  char prev = 0;
  for (const char *p = in; *p; p++) {
    if (*p == ':') {
      /* Separators only between whole bytes: "ab:cd", never ":ab", "a:b", "ab::cd". */
      if (n == 0 || (n & 1) != 0 || prev == ':') return -1;
    } else if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
      for (const char *q = p; *q; q++)
        if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r') return -1;
      break;
    } else {
      int v = hex_digit((unsigned char)*p);
      if (v < 0 || n >= 64) return -1;
      hex[n++] = digits[v];
    }
    prev = *p;
  }
  if (n != 64 || prev == ':') return -1;
  hex[64] = 0;
  return 0;
}
