/*
 * test_client_policy.c - the client certificate policy of the QUIC
 * servers (src/net/client_policy.c): deny lists by fingerprint and by
 * serial (normalised as the tenants file's), the identities admitted with
 * listed_only, and a CRL written by gl_tls_make_crl that GnuTLS reads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "common/util.h"
#include "net/client_policy.h"
#include "net/tls.h"
#include "net/tls_crl.h"

static char dir[64], ca[128], cak[128], alice[128], alicek[128], bob[128], bobk[128];

/* The DER of the PEM certificate at path (free it). */
static gnutls_datum_t der_of(const char *path) {
  gnutls_datum_t pem = {NULL, 0}, der = {NULL, 0};
  assert_true(gnutls_load_file(path, &pem) >= 0);
  assert_true(gnutls_pem_base64_decode2("CERTIFICATE", &pem, &der) >= 0);
  gnutls_free(pem.data);
  return der;
}

static int setup(void **state) {
  (void)state;
  char err[512];
  snprintf(dir, sizeof dir, "/tmp/gl-policy-XXXXXX");
  if (!mkdtemp(dir)) return -1;
  snprintf(ca, sizeof ca, "%s/ca.pem", dir);
  snprintf(cak, sizeof cak, "%s/ca.key", dir);
  snprintf(alice, sizeof alice, "%s/alice.pem", dir);
  snprintf(alicek, sizeof alicek, "%s/alice.key", dir);
  snprintf(bob, sizeof bob, "%s/bob.pem", dir);
  snprintf(bobk, sizeof bobk, "%s/bob.key", dir);
  if (gl_tls_make_ca("policy CA", ca, cak, err, sizeof err) != 0 ||
      gl_tls_issue_client_cert(ca, cak, "alice", NULL, false, alice, alicek, err, sizeof err) ||
      gl_tls_issue_client_cert(ca, cak, "bob", "spiffe://example.org/bob", false, bob, bobk, err,
                               sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void test_deny_lists(void **state) {
  (void)state;
  gnutls_datum_t a = der_of(alice), b = der_of(bob);
  char fp[GL_TLS_FP_HEX_LEN], serial[GL_SERIAL_HEX_MAX + 1], why[256];
  gl_tls_der_fingerprint(a.data, a.size, fp);
  assert_int_equal(gl_client_policy_serial_hex(b.data, b.size, serial), 0);
  assert_true(strlen(serial) >= 1 && serial[0] != '0');
  /* NULL and an empty policy admit everyone. */
  assert_int_equal(gl_client_policy_check(NULL, a.data, a.size, "alice", why, sizeof why), 0);
  gl_client_policy *p = gl_client_policy_new(false);
  assert_non_null(p);
  gl_client_policy_seal(p);
  assert_int_equal(gl_client_policy_check(p, a.data, a.size, "alice", why, sizeof why), 0);
  gl_client_policy_unref(p);

  /* alice by fingerprint (upper case, with ':'), bob by serial (leading
   * zeros and ':'). */
  p = gl_client_policy_new(false);
  char fpc[200] = "", ser[100] = "00:";
  for (int i = 0; i < 32; i++) {
    char two[4] = {(char)(fp[2 * i] >= 'a' ? fp[2 * i] - 32 : fp[2 * i]),
                   (char)(fp[2 * i + 1] >= 'a' ? fp[2 * i + 1] - 32 : fp[2 * i + 1]),
                   i < 31 ? ':' : 0, 0};
    strcat(fpc, two);
  }
  strcat(ser, serial);
  assert_int_equal(gl_client_policy_deny_fingerprint(p, fpc), 0);
  assert_int_equal(gl_client_policy_deny_serial(p, ser), 0);
  assert_int_equal(gl_client_policy_deny_fingerprint(p, "abc"), -1);
  assert_int_equal(gl_client_policy_deny_serial(p, "nothex"), -1);
  assert_int_equal(gl_client_policy_deny_serial(p, ""), -1);
  gl_client_policy_seal(p);
  size_t nfp, nser, nid;
  gl_client_policy_counts(p, &nfp, &nser, &nid);
  assert_int_equal(nfp, 1);
  assert_int_equal(nser, 1);
  assert_int_equal(nid, 0);
  assert_int_equal(gl_client_policy_check(p, a.data, a.size, "alice", why, sizeof why), -1);
  char want[256];
  snprintf(want, sizeof want, "its certificate is on the deny list (SHA-256 fingerprint %s)", fp);
  assert_string_equal(why, want);
  assert_int_equal(gl_client_policy_check(p, b.data, b.size, "spiffe://example.org/bob", why,
                                          sizeof why),
                   -1);
  snprintf(want, sizeof want, "its certificate is on the deny list (serial %s)", serial);
  assert_string_equal(why, want);
  uint8_t junk[8] = {1, 2, 3};
  assert_int_equal(gl_client_policy_check(p, junk, sizeof junk, "x", why, sizeof why), -1);
  assert_string_equal(why, "not an X.509 certificate");
  /* A reference outlives the first owner's. */
  gl_client_policy *held = gl_client_policy_ref(p);
  gl_client_policy_unref(p);
  assert_int_equal(gl_client_policy_check(held, a.data, a.size, "alice", why, sizeof why), -1);
  gl_client_policy_unref(held);
  gnutls_free(a.data);
  gnutls_free(b.data);
}

static void test_listed_only(void **state) {
  (void)state;
  gnutls_datum_t a = der_of(alice), b = der_of(bob);
  char why[256];
  gl_client_policy *p = gl_client_policy_new(true);
  assert_int_equal(gl_client_policy_allow(p, "spiffe://example.org/bob"), 0);
  assert_int_equal(gl_client_policy_allow(p, "carol"), 0);
  gl_client_policy_seal(p);
  assert_int_equal(gl_client_policy_check(p, b.data, b.size, "spiffe://example.org/bob", why,
                                          sizeof why),
                   0);
  assert_int_equal(gl_client_policy_check(p, a.data, a.size, "alice", why, sizeof why), -1);
  assert_string_equal(why, "identity 'alice' is not a tenant of the tenants file");
  gl_client_policy_unref(p);
  /* listed_only with nobody listed (an empty tenants file) admits nobody. */
  p = gl_client_policy_new(true);
  gl_client_policy_seal(p);
  assert_int_equal(gl_client_policy_check(p, a.data, a.size, "alice", why, sizeof why), -1);
  gl_client_policy_unref(p);
  gnutls_free(a.data);
  gnutls_free(b.data);
}

/* gl_tls_make_crl: a CRL that GnuTLS verifies against the CA and that
 * lists alice's serial, not bob's. */
static void test_make_crl(void **state) {
  (void)state;
  char crl[128], err[512];
  snprintf(crl, sizeof crl, "%s/c.crl", dir);
  const char *revoked[] = {alice};
  assert_int_equal(gl_tls_make_crl(ca, cak, revoked, 1, crl, err, sizeof err), 0);
  gnutls_certificate_credentials_t cred;
  assert_int_equal(gnutls_certificate_allocate_credentials(&cred), 0);
  gnutls_certificate_set_flags(cred, GNUTLS_CERTIFICATE_VERIFY_CRLS);
  assert_int_equal(gnutls_certificate_set_x509_trust_file(cred, ca, GNUTLS_X509_FMT_PEM), 1);
  assert_int_equal(gnutls_certificate_set_x509_crl_file(cred, crl, GNUTLS_X509_FMT_PEM), 1);
  gnutls_x509_trust_list_t tl;
  gnutls_certificate_get_trust_list(cred, &tl);
  const char *who[] = {alice, bob};
  for (int i = 0; i < 2; i++) {
    gnutls_datum_t d = der_of(who[i]);
    gnutls_x509_crt_t crt;
    assert_int_equal(gnutls_x509_crt_init(&crt), 0);
    assert_int_equal(gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_DER), 0);
    unsigned status = 0;
    assert_int_equal(gnutls_x509_trust_list_verify_crt2(tl, &crt, 1, NULL, 0, 0, &status, NULL),
                     0);
    if (i == 0) assert_true(status & GNUTLS_CERT_REVOKED);
    else assert_int_equal(status, 0);
    gnutls_x509_crt_deinit(crt);
    gnutls_free(d.data);
  }
  gnutls_certificate_free_credentials(cred);
  /* A CA file that is not there is named. */
  char missing[160];
  snprintf(missing, sizeof missing, "%s/none.pem", dir);
  assert_int_equal(gl_tls_make_crl(missing, cak, NULL, 0, crl, err, sizeof err), -1);
  assert_non_null(strstr(err, missing));
}

/* A name that could forge a log line (a line break, an escape) names
 * nobody, and the reason does not repeat its bytes: names from
 * certificates reach log lines only as printable ASCII
 * (docs/security.md, "Names from certificates"). */
static void test_names_cannot_forge_lines(void **state) {
  (void)state;
  const char *cns[] = {"alice\nINFO forged line", "bob\x1b[31m", "carol\r"};
  for (int i = 0; i < 3; i++) {
    char crt[128], key[128], err[512], id[GL_TLS_IDENTITY_MAX];
    snprintf(crt, sizeof crt, "%s/forge%d.pem", dir, i);
    snprintf(key, sizeof key, "%s/forge%d.key", dir, i);
    assert_int_equal(gl_tls_issue_client_cert(ca, cak, cns[i], NULL, false, crt, key, err,
                                              sizeof err),
                     0);
    gnutls_datum_t d = der_of(crt);
    assert_int_equal(gl_tls_cert_identity(d.data, d.size, id, sizeof id, err, sizeof err), -1);
    assert_string_equal(id, "");
    for (const char *c = err; *c; c++) assert_true(*c >= 0x20 && *c < 0x7f);
    assert_null(strstr(err, "forged"));
    gnutls_free(d.data);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_deny_lists),
      cmocka_unit_test(test_listed_only),
      cmocka_unit_test(test_make_crl),
      cmocka_unit_test(test_names_cannot_forge_lines),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
