/* client_policy.c - see client_policy.h. */
#include "net/client_policy.h"

#include <ctype.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/x509.h>

#include "net/tls.h"

/* A sorted (once sealed) set of strings. */
typedef struct strset {
  char **v;
  size_t n, cap;
} strset;

struct gl_client_policy {
  atomic_uint refs;
  bool listed_only;
  strset allowed, fingerprints, serials;
};

static int set_add(strset *s, const char *text) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 16;
    char **v = realloc(s->v, cap * sizeof *v);
    if (!v) return -1;
    s->v = v;
    s->cap = cap;
  }
  if (!(s->v[s->n] = strdup(text))) return -1;
  s->n++;
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool set_has(const strset *s, const char *text) {
  return s->n && bsearch(&text, s->v, s->n, sizeof *s->v, cmp_str) != NULL;
}

static void set_free(strset *s) {
  for (size_t i = 0; i < s->n; i++) free(s->v[i]);
  free(s->v);
}

gl_client_policy *gl_client_policy_new(bool listed_only) {
  gl_client_policy *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  atomic_init(&p->refs, 1);
  p->listed_only = listed_only;
  return p;
}

int gl_client_policy_allow(gl_client_policy *p, const char *identity) {
  return set_add(&p->allowed, identity);
}

int gl_client_policy_deny_fingerprint(gl_client_policy *p, const char *fingerprint) {
  char hex[GL_TLS_FP_HEX_LEN];
  if (gl_tls_parse_fingerprint(fingerprint, hex) != 0) return -1;
  return set_add(&p->fingerprints, hex);
}

/* hex digits (':' between them ignored) into lower case without leading
 * zeros; -1 when there is something else, none, or too many. */
static int normalise_serial(const char *in, char out[GL_SERIAL_HEX_MAX + 1]) {
  size_t n = 0;
  bool digit = false;
  for (const char *c = in; *c; c++) {
    if (*c == ':') continue;
    if (!isxdigit((unsigned char)*c)) return -1;
    digit = true;
    if (n == 0 && *c == '0') continue;
    if (n == GL_SERIAL_HEX_MAX) return -1;
    out[n++] = (char)tolower((unsigned char)*c);
  }
  if (!digit) return -1;
  if (n == 0) out[n++] = '0';
  out[n] = 0;
  return 0;
}

int gl_client_policy_deny_serial(gl_client_policy *p, const char *serial) {
  char hex[GL_SERIAL_HEX_MAX + 1];
  if (normalise_serial(serial, hex) != 0) return -1;
  return set_add(&p->serials, hex);
}

void gl_client_policy_seal(gl_client_policy *p) {
  strset *sets[] = {&p->allowed, &p->fingerprints, &p->serials};
  for (size_t i = 0; i < 3; i++)
    if (sets[i]->n) qsort(sets[i]->v, sets[i]->n, sizeof *sets[i]->v, cmp_str);
}

gl_client_policy *gl_client_policy_ref(gl_client_policy *p) {
  if (p) atomic_fetch_add(&p->refs, 1);
  return p;
}

void gl_client_policy_unref(gl_client_policy *p) {
  if (!p || atomic_fetch_sub(&p->refs, 1) != 1) return;
  set_free(&p->allowed);
  set_free(&p->fingerprints);
  set_free(&p->serials);
  free(p);
}

void gl_client_policy_counts(const gl_client_policy *p, size_t *fingerprints, size_t *serials,
                             size_t *identities) {
  if (fingerprints) *fingerprints = p ? p->fingerprints.n : 0;
  if (serials) *serials = p ? p->serials.n : 0;
  if (identities) *identities = p ? p->allowed.n : 0;
}

int gl_client_policy_serial_hex(const uint8_t *der, size_t len,
                                char out[GL_SERIAL_HEX_MAX + 1]) {
  if (!der || len > UINT_MAX) return -1;
  gnutls_x509_crt_t crt;
  if (gnutls_x509_crt_init(&crt) < 0) return -1;
  gnutls_datum_t d = {.data = (unsigned char *)der, .size = (unsigned)len};
  uint8_t serial[64];
  size_t n = sizeof serial;
  int rc = gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_DER);
  if (rc >= 0) rc = gnutls_x509_crt_get_serial(crt, serial, &n);
  gnutls_x509_crt_deinit(crt);
  if (rc < 0 || n > GL_SERIAL_HEX_MAX / 2) return -1;
  char hex[GL_SERIAL_HEX_MAX + 1];
  for (size_t i = 0; i < n; i++) snprintf(hex + 2 * i, 3, "%02x", serial[i]);
  hex[2 * n] = 0;
  if (n == 0) snprintf(hex, sizeof hex, "0");
  return normalise_serial(hex, out);
}

int gl_client_policy_check(const gl_client_policy *p, const uint8_t *der, size_t len,
                           const char *identity, char *why, size_t whylen) {
  if (!p) return 0;
  char serial[GL_SERIAL_HEX_MAX + 1], fp[GL_TLS_FP_HEX_LEN];
  if (gl_client_policy_serial_hex(der, len, serial) != 0) {
    snprintf(why, whylen, "not an X.509 certificate");
    return -1;
  }
  gl_tls_der_fingerprint(der, len, fp);
  if (set_has(&p->fingerprints, fp)) {
    snprintf(why, whylen, "its certificate is on the deny list (SHA-256 fingerprint %s)", fp);
    return -1;
  }
  if (set_has(&p->serials, serial)) {
    snprintf(why, whylen, "its certificate is on the deny list (serial %s)", serial);
    return -1;
  }
  if (p->listed_only && !set_has(&p->allowed, identity ? identity : "")) {
    snprintf(why, whylen, "identity '%s' is not a tenant of the tenants file",
             identity ? identity : "");
    return -1;
  }
  return 0;
}
