/*
 * quic_clients.c - the client certificates of open connections, checked
 * again when the server's credential changes (a reload: client CAs, the
 * CRL, the deny list, the tenants): a connection whose certificate a new
 * handshake would refuse is closed. See quic_server_int.h.
 */
#include <stdio.h>
#include <string.h>

#include <gnutls/x509.h>

#include "common/log.h"
#include "net/quic_server_int.h"

#define CHAIN_MAX 16

void gl_qs_status_text(unsigned status, char *buf, size_t len) {
  if (status & GNUTLS_CERT_REVOKED) {
    snprintf(buf, len, "its certificate is revoked (a CRL of --client-crl lists it)");
    return;
  }
  if (status & GNUTLS_CERT_EXPIRED) {
    snprintf(buf, len, "its certificate has expired");
    return;
  }
  gnutls_datum_t text = {NULL, 0};
  if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0) < 0)
    text.data = NULL;
  while (text.data && text.size > 0 && text.data[text.size - 1] == ' ')
    text.data[--text.size] = 0;
  snprintf(buf, len, "%s", text.data ? (const char *)text.data : "certificate not trusted");
  gnutls_free(text.data);
}

int gl_qs_client_still_ok(qconn *c, const qcred *cred, char *why, size_t whylen) {
  if (!c->tls) return 0;
  unsigned n = 0;
  const gnutls_datum_t *certs = gnutls_certificate_get_peers(c->tls, &n);
  if (!certs || n == 0) return 0;
  if (n > CHAIN_MAX) n = CHAIN_MAX;
  gnutls_x509_crt_t chain[CHAIN_MAX];
  unsigned got = 0;
  int rc = 0;
  for (; got < n; got++) {
    if ((rc = gnutls_x509_crt_init(&chain[got])) < 0) break;
    if ((rc = gnutls_x509_crt_import(chain[got], &certs[got], GNUTLS_X509_FMT_DER)) < 0) {
      gnutls_x509_crt_deinit(chain[got]);
      break;
    }
  }
  int ret = 0;
  gnutls_x509_trust_list_t tl = NULL;
  if (rc < 0) {
    snprintf(why, whylen, "its certificate cannot be read: %s", gnutls_strerror(rc));
    ret = -1;
  } else {
    gnutls_certificate_get_trust_list(cred->cred, &tl);
    gnutls_typed_vdata_st purpose = {.type = GNUTLS_DT_KEY_PURPOSE_OID,
                                     .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT};
    unsigned status = 0;
    rc = gnutls_x509_trust_list_verify_crt2(tl, chain, got, &purpose, 1, 0, &status, NULL);
    if (rc < 0) {
      snprintf(why, whylen, "its certificate cannot be verified: %s", gnutls_strerror(rc));
      ret = -1;
    } else if (status) {
      gl_qs_status_text(status, why, whylen);
      ret = -1;
    }
  }
  for (unsigned i = 0; i < got; i++) gnutls_x509_crt_deinit(chain[i]);
  if (ret == 0)
    ret = gl_client_policy_check(cred->policy, certs[0].data, certs[0].size, c->identity, why,
                                 whylen);
  return ret;
}

void gl_qs_recheck_cb(struct ev_loop *loop, ev_async *w, int revents) {
  (void)loop, (void)revents;
  gl_qserver *s = w->data;
  if (!s->client_ca_file) return;
  pthread_mutex_lock(&s->cred_mu);
  qcred *cred = s->cred;
  cred->refs++;
  pthread_mutex_unlock(&s->cred_mu);
  size_t closed = 0;
  for (qconn *c = s->conns; c; c = c->next) {
    if (c->state != ST_ACTIVE || c->fresh || c->in_hs || !c->idlen) continue;
    char why[256];
    if (gl_qs_client_still_ok(c, cred, why, sizeof why) == 0) continue;
    GL_WARN("quic: connection %s (client %s) closed: %s", c->peer, c->identity, why);
    char reason[128];
    snprintf(reason, sizeof reason, "client certificate refused after a reload: %.80s", why);
    gl_qs_conn_close_app(c, GL_Q_APP_REVOKED, reason);
    closed++;
  }
  if (closed) GL_INFO("quic: %zu connection%s closed by the reload", closed, closed == 1 ? "" : "s");
  gl_qs_cred_release(s, cred);
}
