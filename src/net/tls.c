/*
 * tls.c - TLS credential helpers (see tls.h): a self-signed ECDSA P-256
 * certificate for gpuleased's first start, and SHA-256 fingerprints used
 * for certificate pinning.
 *
 * Files are written to a temporary name and renamed into place, key first,
 * so a crash never leaves a certificate whose key is missing.
 */
#include "net/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
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
#include <gnutls/x509.h>

#include "common/util.h"

#define CERT_NAME "cert.pem"
#define KEY_NAME "key.pem"
#define CERT_CN "gpuleased"
#define CERT_VALIDITY_S (10ll * 365 * 24 * 3600)
/* Largest certificate file we agree to read for a fingerprint. */
#define CERT_FILE_MAX_BYTES (1u << 20)

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || errlen == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

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
    set_err(err, errlen, "path too long: %s", path);
    return -1;
  }
  (void)unlink(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    set_err(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
    return -1;
  }
  /* The umask may have narrowed the mode; make it exact (0600 for keys). */
  if (fchmod(fd, mode) != 0) {
    set_err(err, errlen, "cannot chmod %s: %s", tmp, strerror(errno));
    goto fail;
  }
  const uint8_t *p = data;
  size_t left = len;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      set_err(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
      goto fail;
    }
    p += w;
    left -= (size_t)w;
  }
  if (fsync(fd) != 0) {
    set_err(err, errlen, "cannot sync %s: %s", tmp, strerror(errno));
    goto fail;
  }
  if (close(fd) != 0) {
    fd = -1;
    set_err(err, errlen, "cannot close %s: %s", tmp, strerror(errno));
    goto fail;
  }
  fd = -1;
  if (rename(tmp, path) != 0) {
    set_err(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
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

/* Generates the key pair and certificate as PEM datums (gnutls_free them). */
static int generate_pair(gnutls_datum_t *cert_pem, gnutls_datum_t *key_pem, char *err,
                         size_t errlen) {
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

  time_t now = time(NULL);
  CHECK(gnutls_x509_crt_set_activation_time(crt, now - 3600), "set_activation_time");
  CHECK(gnutls_x509_crt_set_expiration_time(crt, (time_t)(now + CERT_VALIDITY_S)),
        "set_expiration_time");
  CHECK(gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, CERT_CN,
                                      sizeof CERT_CN - 1),
        "set common name");
  CHECK(gnutls_x509_crt_set_key(crt, xkey), "set_key");
  CHECK(add_sans(crt), "subject alternative names");
  /* CA:TRUE so that the certificate can be its own --ca-file. */
  CHECK(gnutls_x509_crt_set_basic_constraints(crt, 1, -1), "basic constraints");
  CHECK(gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE |
                                               GNUTLS_KEY_KEY_CERT_SIGN),
        "key usage");
  CHECK(gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0),
        "extended key usage");

  uint8_t key_id[64];
  size_t key_id_len = sizeof key_id;
  CHECK(gnutls_x509_crt_get_key_id(crt, GNUTLS_KEYID_USE_SHA1, key_id, &key_id_len),
        "key id");
  CHECK(gnutls_x509_crt_set_subject_key_id(crt, key_id, key_id_len), "subject key id");
  CHECK(gnutls_x509_crt_privkey_sign(crt, crt, pkey, GNUTLS_DIG_SHA256, 0),
        "self-signing the certificate");
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
  set_err(err, errlen, "certificate generation failed (%s): %s", what, gnutls_strerror(rc));
  gnutls_free(cert_pem->data);
  gnutls_free(key_pem->data);
  cert_pem->data = key_pem->data = NULL;
  if (crt) gnutls_x509_crt_deinit(crt);
  if (pkey) gnutls_privkey_deinit(pkey);
  if (xkey) gnutls_x509_privkey_deinit(xkey);
  return -1;
}

int gl_tls_ensure_self_signed(const char *state_dir, char *cert_path, char *key_path,
                              size_t pathlen, int *created, char *err, size_t errlen) {
  if (created) *created = 0;
  if (!state_dir || !*state_dir || !cert_path || !key_path || pathlen == 0) {
    set_err(err, errlen, "invalid arguments");
    return -1;
  }
  int n1 = snprintf(cert_path, pathlen, "%s/%s", state_dir, CERT_NAME);
  int n2 = snprintf(key_path, pathlen, "%s/%s", state_dir, KEY_NAME);
  if (n1 < 0 || n2 < 0 || (size_t)n1 >= pathlen || (size_t)n2 >= pathlen) {
    set_err(err, errlen, "state directory path too long: %s", state_dir);
    return -1;
  }

  bool have_cert = file_exists(cert_path), have_key = file_exists(key_path);
  if (have_cert && have_key) return 0;
  if (have_cert) {
    /* Never overwrite a certificate someone put there. */
    set_err(err, errlen, "%s exists but %s is missing", cert_path, key_path);
    return -1;
  }

  if (mkdir(state_dir, 0700) != 0 && errno != EEXIST) {
    set_err(err, errlen, "cannot create %s: %s", state_dir, strerror(errno));
    return -1;
  }

  gnutls_datum_t cert_pem, key_pem;
  if (generate_pair(&cert_pem, &key_pem, err, errlen) != 0) return -1;
  int rc = write_file_atomic(key_path, key_pem.data, key_pem.size, 0600, err, errlen);
  if (rc == 0)
    rc = write_file_atomic(cert_path, cert_pem.data, cert_pem.size, 0644, err, errlen);
  gnutls_memset(key_pem.data, 0, key_pem.size);
  gnutls_free(key_pem.data);
  gnutls_free(cert_pem.data);
  if (rc != 0) return -1;
  if (created) *created = 1;
  return 0;
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
    set_err(err, errlen, "cannot read %s: %s", cert_file ? cert_file : "(null)",
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
  else set_err(err, errlen, "%s: no PEM certificate: %s", cert_file, gnutls_strerror(rc));
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
