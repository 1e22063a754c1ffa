/* tls_crl.c - see tls_crl.h. */
#include "net/tls_crl.h"

#include <stdio.h>
#include <time.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "common/util.h"

/* Reads a PEM certificate file into *crt. 0, or -1 with err. */
static int load_crt(const char *path, gnutls_x509_crt_t *crt, char *err, size_t errlen) {
  gnutls_datum_t d = {NULL, 0};
  int rc = gnutls_load_file(path, &d);
  if (rc >= 0) rc = gnutls_x509_crt_init(crt);
  if (rc >= 0 && (rc = gnutls_x509_crt_import(*crt, &d, GNUTLS_X509_FMT_PEM)) < 0)
    gnutls_x509_crt_deinit(*crt);
  gnutls_free(d.data);
  if (rc < 0) gl_set_err(err, errlen, "%s: %s", path, gnutls_strerror(rc));
  return rc < 0 ? -1 : 0;
}

int gl_tls_make_crl(const char *ca_cert, const char *ca_key, const char *const *revoked,
                    size_t n, const char *crl_path, char *err, size_t errlen) {
  gnutls_x509_crt_t ca = NULL;
  gnutls_x509_privkey_t key = NULL;
  gnutls_x509_crl_t crl = NULL;
  gnutls_datum_t kd = {NULL, 0}, out = {NULL, 0};
  int ret = -1, rc;
  if (load_crt(ca_cert, &ca, err, errlen) != 0) return -1;
  if ((rc = gnutls_load_file(ca_key, &kd)) < 0 || (rc = gnutls_x509_privkey_init(&key)) < 0 ||
      (rc = gnutls_x509_privkey_import(key, &kd, GNUTLS_X509_FMT_PEM)) < 0) {
    gl_set_err(err, errlen, "%s: %s", ca_key, gnutls_strerror(rc));
    goto out;
  }
  time_t now = time(NULL);
  if ((rc = gnutls_x509_crl_init(&crl)) < 0 || (rc = gnutls_x509_crl_set_version(crl, 2)) < 0 ||
      (rc = gnutls_x509_crl_set_this_update(crl, now - 3600)) < 0 ||
      (rc = gnutls_x509_crl_set_next_update(crl, now + 30 * 86400)) < 0) {
    gl_set_err(err, errlen, "CRL: %s", gnutls_strerror(rc));
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    gnutls_x509_crt_t c;
    if (load_crt(revoked[i], &c, err, errlen) != 0) goto out;
    rc = gnutls_x509_crl_set_crt(crl, c, now - 60);
    gnutls_x509_crt_deinit(c);
    if (rc < 0) {
      gl_set_err(err, errlen, "CRL: %s: %s", revoked[i], gnutls_strerror(rc));
      goto out;
    }
  }
  if ((rc = gnutls_x509_crl_sign2(crl, ca, key, GNUTLS_DIG_SHA256, 0)) < 0 ||
      (rc = gnutls_x509_crl_export2(crl, GNUTLS_X509_FMT_PEM, &out)) < 0) {
    gl_set_err(err, errlen, "CRL: signing: %s", gnutls_strerror(rc));
    goto out;
  }
  FILE *f = fopen(crl_path, "w");
  if (!f || fwrite(out.data, 1, out.size, f) != out.size) {
    gl_set_err(err, errlen, "%s: cannot write", crl_path);
    if (f) fclose(f);
    goto out;
  }
  if (fclose(f) != 0) {
    gl_set_err(err, errlen, "%s: cannot write", crl_path);
    goto out;
  }
  ret = 0;
out:
  gnutls_free(out.data);
  gnutls_free(kd.data);
  if (crl) gnutls_x509_crl_deinit(crl);
  if (key) gnutls_x509_privkey_deinit(key);
  gnutls_x509_crt_deinit(ca);
  return ret;
}
