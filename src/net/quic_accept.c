/*
 * quic_accept.c - the server half of quic.h before a connection exists
 * (see quic_server.c for the rest): binding the UDP socket, certificate
 * credentials (reloadable, counted per connection), each connection's TLS
 * session with the ALPN check and, with client_ca_file, the client
 * certificate's check and identity; and the answers that need no
 * connection: Retry (address validation), CONNECTION_CLOSE refusals and
 * Version Negotiation; and the admission of a client's first Initial
 * (gl_qs_admit) with the counts it reads.
 *
 * Admission (issue 30): a first Initial keeps no state until it is
 * admitted, and a half-open connection never stands in a validated
 * client's way:
 *   - A Retry token must verify (else INVALID_TOKEN); with it the client
 *     has proven its address (validated).
 *   - Without one, the Initial gets a Retry while retry_above_handshakes
 *     handshakes are under way in all, or retry_above_address_handshakes
 *     from its IP address (or always, with always_retry); with Retry
 *     turned off (retry_above_handshakes UINT32_MAX) the latter is
 *     dropped instead. So a flood of Initials that never finish holds at
 *     most that many connections, each for handshake_timeout_ms.
 *   - Then max_connections (everything the server holds) and
 *     max_connections_per_address, which counts completed connections
 *     only (s->addrs): a validated client is admitted while its address
 *     has fewer completed connections than that, whatever number of
 *     handshakes from it are under way (handshakes that complete at once
 *     may pass the limit by their number; the next one is refused).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gnutls/x509.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include "common/log.h"
#include "common/util.h"
#include "net/quic_server_int.h"

void gl_qs_addr_to_str(const struct sockaddr *sa, char *buf, size_t len) {
  char host[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
    snprintf(buf, len, "%s:%u", host, port);
  } else if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
      inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], host, sizeof host);
      snprintf(buf, len, "%s:%u", host, (unsigned)ntohs(in6->sin6_port));
    } else {
      inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
      snprintf(buf, len, "[%s]:%u", host, (unsigned)ntohs(in6->sin6_port));
    }
  } else {
    snprintf(buf, len, "?");
  }
}

/* Adds crl_file's CRLs (PEM, else DER) to q, each checked against the
 * client CAs already loaded. 0, or -1 with err. */
static int cred_add_crls(qcred *q, const char *crl_file, char *err, size_t errlen) {
  gnutls_certificate_set_flags(q->cred, GNUTLS_CERTIFICATE_VERIFY_CRLS);
  int rc = gnutls_certificate_set_x509_crl_file(q->cred, crl_file, GNUTLS_X509_FMT_PEM);
  if (rc <= 0) rc = gnutls_certificate_set_x509_crl_file(q->cred, crl_file, GNUTLS_X509_FMT_DER);
  if (rc <= 0) {
    gl_set_err(err, errlen, "cannot load the CRL %s: %s%s", crl_file,
               rc == 0 ? "no CRL found" : gnutls_strerror(rc),
               rc == GNUTLS_E_CRL_VERIFICATION_ERROR
                   ? " (signed by none of the client CAs, or past its next update)"
                   : "");
    return -1;
  }
  GL_INFO("quic: client certificates are checked against %d CRL%s from %s", rc,
          rc == 1 ? "" : "s", crl_file);
  return 0;
}

qcred *gl_qs_cred_load(const char *cert_file, const char *key_file, const char *ca_file,
                       const char *crl_file, gl_client_policy *policy, char *err,
                       size_t errlen) {
  qcred *q = calloc(1, sizeof *q);
  if (!q) {
    gl_set_err(err, errlen, "out of memory");
    return NULL;
  }
  int rc = gnutls_certificate_allocate_credentials(&q->cred);
  if (rc < 0) {
    gl_set_err(err, errlen, "TLS credentials: %s", gnutls_strerror(rc));
    free(q);
    return NULL;
  }
  q->refs = 1;
  rc = gnutls_certificate_set_x509_key_file(q->cred, cert_file, key_file, GNUTLS_X509_FMT_PEM);
  if (rc < 0) {
    gl_set_err(err, errlen, "cannot load certificate %s / key %s: %s", cert_file, key_file,
               gnutls_strerror(rc));
    goto fail;
  }
  if (ca_file) {
    /* The number of certificates loaded: none is an error too. */
    rc = gnutls_certificate_set_x509_trust_file(q->cred, ca_file, GNUTLS_X509_FMT_PEM);
    if (rc <= 0) {
      gl_set_err(err, errlen, "cannot load client CA certificates from %s: %s", ca_file,
                 rc == 0 ? "no certificate found" : gnutls_strerror(rc));
      goto fail;
    }
    GL_INFO("quic: clients must present a certificate from %s (%d CA certificate%s)", ca_file, rc,
            rc == 1 ? "" : "s");
    if (crl_file && cred_add_crls(q, crl_file, err, errlen) != 0) goto fail;
  }
  q->policy = gl_client_policy_ref(policy);
  return q;
fail:
  gnutls_certificate_free_credentials(q->cred);
  free(q);
  return NULL;
}

void gl_qs_cred_release(gl_qserver *s, qcred *q) {
  if (!q) return;
  pthread_mutex_lock(&s->cred_mu);
  bool last = --q->refs == 0;
  pthread_mutex_unlock(&s->cred_mu);
  if (!last) return;
  gl_client_policy_unref(q->policy);
  gnutls_certificate_free_credentials(q->cred);
  free(q);
}

static ngtcp2_conn *conn_ref_get(ngtcp2_crypto_conn_ref *ref) {
  return ((qconn *)ref->user_data)->conn;
}

/* GnuTLS hook after ClientHello: refuse clients that do not speak our ALPN
 * (no_application_protocol alert). */
static int alpn_hook(gnutls_session_t session, unsigned htype, unsigned when,
                     unsigned incoming, const gnutls_datum_t *msg) {
  (void)htype;
  (void)when;
  (void)incoming;
  (void)msg;
  if (gl_q_alpn_ok(session)) return 0;
  GL_DEBUG("quic: client did not offer ALPN gpulease/1");
  return GNUTLS_E_NO_APPLICATION_PROTOCOL;
}

/* GnuTLS's verify function when client certificates are required, run
 * inside the handshake once the client proved it holds the key: the chain
 * against client_ca_file (dates, signatures, and TLS client authentication
 * where the certificates limit their key purposes), then the identity the
 * leaf names. Non-zero fails the handshake (an alert, then
 * CONNECTION_CLOSE). */
static int verify_client_cert(gnutls_session_t session) {
  ngtcp2_crypto_conn_ref *ref = gnutls_session_get_ptr(session);
  qconn *c = ref->user_data;
  unsigned n = 0;
  const gnutls_datum_t *certs = gnutls_certificate_get_peers(session, &n);
  if (!certs || n == 0) {
    GL_WARN("quic: client %s refused: it sent no certificate", c->peer);
    return -1;
  }
  gnutls_typed_vdata_st purpose = {.type = GNUTLS_DT_KEY_PURPOSE_OID,
                                   .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT};
  unsigned status = 0;
  int rc = gnutls_certificate_verify_peers(session, &purpose, 1, &status);
  if (rc < 0) {
    GL_WARN("quic: client %s refused: its certificate cannot be verified: %s", c->peer,
            gnutls_strerror(rc));
    return -1;
  }
  char why[256];
  if (status != 0) {
    gl_qs_status_text(status, why, sizeof why);
    GL_WARN("quic: client %s refused: %s", c->peer, why);
    if (status & GNUTLS_CERT_REVOKED) snprintf(c->refusal, sizeof c->refusal, "%.120s", why);
    return -1;
  }
  if (gl_tls_cert_identity(certs[0].data, certs[0].size, c->identity, sizeof c->identity, why,
                           sizeof why) != 0) {
    GL_WARN("quic: client %s refused: its certificate names no identity (%s)", c->peer, why);
    return -1;
  }
  /* The deny list and the tenants (the credential's policy). */
  if (gl_client_policy_check(c->cred->policy, certs[0].data, certs[0].size, c->identity, why,
                             sizeof why) != 0) {
    GL_WARN("quic: client %s (%s) refused: %s", c->peer, c->identity, why);
    snprintf(c->refusal, sizeof c->refusal, "client certificate refused: %.96s", why);
    c->identity[0] = 0;
    return -1;
  }
  c->idlen = strlen(c->identity);
  return 0;
}

int gl_qs_conn_tls_init(qconn *c) {
  gl_qserver *s = c->srv;
  if (gnutls_init(&c->tls, GNUTLS_SERVER | GNUTLS_NO_END_OF_EARLY_DATA) != 0) {
    c->tls = NULL;
    return -1;
  }
  if (gnutls_priority_set(c->tls, s->prio) != 0) return -1;
  pthread_mutex_lock(&s->cred_mu);
  c->cred = s->cred;
  c->cred->refs++;
  pthread_mutex_unlock(&s->cred_mu);
  if (gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, c->cred->cred) != 0) return -1;
  if (ngtcp2_crypto_gnutls_configure_server_session(c->tls) != 0) return -1;
  if (gnutls_alpn_set_protocols(c->tls, gl_q_alpn(), 1, GNUTLS_ALPN_MANDATORY) != 0) return -1;
  gnutls_handshake_set_hook_function(c->tls, GNUTLS_HANDSHAKE_CLIENT_HELLO, GNUTLS_HOOK_POST,
                                     alpn_hook);
  if (s->client_ca_file) {
    gnutls_certificate_server_set_request(c->tls, GNUTLS_CERT_REQUIRE);
    /* No list of our CAs in the request: it would tell anyone who connects
     * whom we trust, and a client that sees its issuer missing sends no
     * certificate at all, where we would rather check it and log why. */
    gnutls_certificate_send_x509_rdn_sequence(c->tls, 1);
    gnutls_session_set_verify_function(c->tls, verify_client_cert);
  }
  c->ref.get_conn = conn_ref_get;
  c->ref.user_data = c;
  gnutls_session_set_ptr(c->tls, &c->ref);
  ngtcp2_conn_set_tls_native_handle(c->conn, c->tls);
  return 0;
}

/* True at most once a second per *last: for log lines about floods. */
bool gl_qs_log_due(uint64_t *last, uint64_t now) {
  if (*last && now - *last < NGTCP2_SECONDS) return false;
  *last = now;
  return true;
}

/* Answers the Initial hd without a connection: CONNECTION_CLOSE with a
 * transport error code (CONNECTION_REFUSED, INVALID_TOKEN) and reason, in
 * an Initial packet the client can read (keys from its DCID). Smaller than
 * the client's Initial (at least 1200 bytes): no amplification. */
void gl_qs_send_stateless_close(gl_qserver *s, const ngtcp2_pkt_hd *hd,
                                const struct sockaddr *local, const struct sockaddr *remote,
                                socklen_t remotelen, uint64_t code, const char *reason) {
  uint8_t buf[GL_Q_CTRL_PKT];
  ngtcp2_ssize n = ngtcp2_crypto_write_connection_close(buf, sizeof buf, hd->version, &hd->scid,
                                                        &hd->dcid, code, (const uint8_t *)reason,
                                                        strlen(reason));
  if (n > 0) gl_qs_send_one(s, local, remote, remotelen, buf, (size_t)n);
}

/* Answers the Initial hd (no token) from remote with a Retry: a fresh
 * source connection ID and a token that brings back hd's DCID. */
void gl_qs_send_retry(gl_qserver *s, const ngtcp2_pkt_hd *hd, const struct sockaddr *local,
                      const struct sockaddr *remote, socklen_t remotelen, uint64_t now) {
  ngtcp2_cid scid;
  scid.datalen = GL_Q_SCID_LEN;
  do {
    if (gl_q_random(scid.data, scid.datalen) != 0) return;
  } while (gl_q_cidtab_get(&s->cids, scid.data, scid.datalen) || ngtcp2_cid_eq(&scid, &hd->dcid));
  uint8_t token[GL_Q_RETRY_TOKEN_MAX];
  ngtcp2_ssize tlen = gl_q_retry_token_make(token, s->grp->retry_secret, hd->version, remote,
                                            remotelen, &scid, &hd->dcid, now);
  if (tlen < 0) {
    GL_DEBUG("quic: cannot make a Retry token");
    return;
  }
  uint8_t buf[GL_Q_CTRL_PKT];
  ngtcp2_ssize n = ngtcp2_crypto_write_retry(buf, sizeof buf, hd->version, &hd->scid, &scid,
                                             &hd->dcid, token, (size_t)tlen);
  if (n <= 0) {
    GL_DEBUG("quic: cannot write a Retry: %s", ngtcp2_strerror((int)n));
    return;
  }
  gl_qs_send_one(s, local, remote, remotelen, buf, (size_t)n);
  __atomic_add_fetch(&s->grp->retries_sent, 1, __ATOMIC_RELAXED);
}

/* Whether a new connection must first prove its address (Retry). */
bool gl_qs_retry_needed(const gl_qserver *s) {
  if (s->cfg.always_retry) return true;
  uint32_t above = __atomic_load_n(&s->cfg.retry_above_handshakes, __ATOMIC_RELAXED);
  if (above == UINT32_MAX) return false;
  return __atomic_load_n(&s->grp->nhandshaking, __ATOMIC_RELAXED) >= above;
}

bool gl_qs_admit(gl_qserver *s, const ngtcp2_pkt_hd *hd, const struct sockaddr *local,
                 const struct sockaddr *remote, socklen_t remotelen, uint64_t now,
                 const char *peer, bool *validated, ngtcp2_cid *odcid, uint8_t ip[16]) {
  *validated = false;
  if (!gl_q_addr_key(remote, ip)) return false;
  /* A Retry token must verify: it is the client's proof of address. Other
   * tokens (NEW_TOKEN, never ours) count as none (RFC 9000 8.1.3). */
  if (hd->tokenlen && hd->token[0] == NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY) {
    if (gl_q_retry_token_check(odcid, hd->token, hd->tokenlen, s->grp->retry_secret, hd->version,
                               remote, remotelen, &hd->dcid, now) != 0) {
      __atomic_add_fetch(&s->grp->tokens_refused, 1, __ATOMIC_RELAXED);
      if (gl_qs_log_due(&s->last_token_log_ns, now))
        GL_WARN("quic: refusing %s: invalid Retry token (forged, expired or from another "
                "address)", peer);
      gl_qs_send_stateless_close(s, hd, local, remote, remotelen, NGTCP2_INVALID_TOKEN,
                                 "invalid Retry token");
      return false;
    }
    *validated = true;
  }

  if (!*validated) {
    pthread_mutex_lock(&s->grp->mu);
    size_t hs_ip = gl_q_addrtab_count(&s->grp->hs_addrs, ip);
    pthread_mutex_unlock(&s->grp->mu);
    uint32_t per_ip_hs =
        __atomic_load_n(&s->cfg.retry_above_address_handshakes, __ATOMIC_RELAXED);
    bool busy_ip = hs_ip >= per_ip_hs;
    if (busy_ip || gl_qs_retry_needed(s)) {
      bool retry_off = !s->cfg.always_retry &&
                       __atomic_load_n(&s->cfg.retry_above_handshakes, __ATOMIC_RELAXED) ==
                           UINT32_MAX;
      if (retry_off) { /* busy_ip: no way to prove the address, so no answer */
        __atomic_add_fetch(&s->grp->initials_dropped, 1, __ATOMIC_RELAXED);
        if (gl_qs_log_due(&s->last_retry_log_ns, now))
          GL_WARN("quic: dropping Initials from %s: %zu handshakes from its address under way "
                  "(Retry is off)", peer, hs_ip);
        return false;
      }
      if (gl_qs_log_due(&s->last_retry_log_ns, now))
        GL_INFO("quic: %zu handshakes under way (%zu from %s): new clients must prove their "
                "address (Retry)", gl_qgroup_handshake_count(s->grp), hs_ip, peer);
      GL_DEBUG("quic: Retry to %s", peer);
      gl_qs_send_retry(s, hd, local, remote, remotelen, now);
      return false;
    }
  }

  pthread_mutex_lock(&s->grp->mu);
  size_t nconns = s->grp->nconns;
  size_t from_ip = gl_q_addrtab_count(&s->grp->addrs, ip);
  pthread_mutex_unlock(&s->grp->mu);
  if (nconns >= s->cfg.max_connections) {
    if (gl_qs_log_due(&s->last_refusal_log_ns, now))
      GL_WARN("quic: refusing connections: %zu open (max %zu)", nconns,
              s->cfg.max_connections);
    gl_qs_send_stateless_close(s, hd, local, remote, remotelen, NGTCP2_CONNECTION_REFUSED,
                               "too many connections");
    return false;
  }
  uint32_t per_addr = __atomic_load_n(&s->cfg.max_connections_per_address, __ATOMIC_RELAXED);
  if (from_ip >= per_addr) {
    if (gl_qs_log_due(&s->last_addr_refusal_log_ns, now))
      GL_WARN("quic: refusing %s: %zu connections from its address (max %u)", peer, from_ip,
              (unsigned)per_addr);
    gl_qs_send_stateless_close(s, hd, local, remote, remotelen, NGTCP2_CONNECTION_REFUSED,
                               "too many connections from this address");
    return false;
  }
  return true;
}

int gl_qs_hs_begin(qconn *c) {
  gl_qgroup *g = c->srv->grp;
  pthread_mutex_lock(&g->mu);
  int rc = gl_q_addrtab_ref(&g->hs_addrs, c->ip);
  if (rc == 0) __atomic_add_fetch(&g->nhandshaking, 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&g->mu);
  if (rc != 0) return -1;
  c->in_hs = true;
  return 0;
}

void gl_qs_hs_end(qconn *c, bool completed) {
  gl_qgroup *g = c->srv->grp;
  if (!c->in_hs) return;
  c->in_hs = false;
  pthread_mutex_lock(&g->mu);
  __atomic_sub_fetch(&g->nhandshaking, 1, __ATOMIC_RELAXED);
  gl_q_addrtab_unref(&g->hs_addrs, c->ip);
  /* Out of memory: the connection goes uncounted (it is still within
   * max_connections). */
  if (completed && gl_q_addrtab_ref(&g->addrs, c->ip) == 0) c->ip_counted = true;
  pthread_mutex_unlock(&g->mu);
}

void gl_qs_addr_release(qconn *c) {
  if (!c->ip_counted) return;
  c->ip_counted = false;
  pthread_mutex_lock(&c->srv->grp->mu);
  gl_q_addrtab_unref(&c->srv->grp->addrs, c->ip);
  pthread_mutex_unlock(&c->srv->grp->mu);
}

void gl_qs_send_version_negotiation(gl_qserver *s, const ngtcp2_version_cid *vc,
                                    const struct sockaddr *local,
                                    const struct sockaddr *remote, socklen_t remotelen) {
  uint8_t buf[GL_Q_CTRL_PKT];
  uint8_t unused;
  uint32_t versions[] = {NGTCP2_PROTO_VER_V1};
  if (gl_q_random(&unused, 1) != 0) unused = 0;
  ngtcp2_ssize n = ngtcp2_pkt_write_version_negotiation(buf, sizeof buf, unused, vc->scid,
                                                        vc->scidlen, vc->dcid, vc->dcidlen,
                                                        versions, 1);
  if (n > 0) gl_qs_send_one(s, local, remote, remotelen, buf, (size_t)n);
}

/* A UDP socket (non-blocking, close-on-exec) bound to at (IPv6: dual
 * stack when at is the wildcard), with SO_REUSEPORT when reuseport. The
 * descriptor, or -1 with errno. */
static int bound_udp(const struct sockaddr_storage *at, socklen_t len, bool reuseport) {
  int fd = socket(at->ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (at->ss_family == AF_INET6) {
    const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)at;
    int v6only = IN6_IS_ADDR_UNSPECIFIED(&a6->sin6_addr) ? 0 : 1;
    (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
  }
  int on = 1;
  if ((reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0) ||
      bind(fd, (const struct sockaddr *)at, len) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

int gl_qs_bind(gl_qserver *s, char *err, size_t errlen) {
  const char *host = s->listen_host && *s->listen_host ? s->listen_host : "::";
  char port[8];
  /* A group's servers after the first bind the port it got. */
  uint16_t want = s->cfg.listen_port;
  if (s->grouped && !want) want = gl_qgroup_port(s->grp);
  snprintf(port, sizeof port, "%u", (unsigned)want);
  struct addrinfo hints = {
      .ai_family = AF_UNSPEC,
      .ai_socktype = SOCK_DGRAM,
      .ai_protocol = IPPROTO_UDP,
      .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
  };
  struct addrinfo *res = NULL;
  int rc = getaddrinfo(host, port, &hints, &res);
  if (rc != 0 && !(s->listen_host && *s->listen_host)) {
    host = "0.0.0.0"; /* no IPv6 on this host */
    rc = getaddrinfo(host, port, &hints, &res);
  }
  if (rc != 0) {
    gl_set_err(err, errlen, "cannot resolve listen address %s: %s", host, gai_strerror(rc));
    return -1;
  }
  int last_errno = 0;
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
    if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
    struct sockaddr_storage at;
    memcpy(&at, ai->ai_addr, ai->ai_addrlen);
    if (s->grouped && !gl_qgroup_port(s->grp)) {
      /* The group's first socket: its port must be free of every socket.
       * The kernel would let an SO_REUSEPORT socket share a port with
       * those of another process of this user (another daemon, whose
       * clients would then be split with ours), and even pick such a port
       * for port 0; a socket without the option gets a port nobody has. */
      int probe = bound_udp(&at, ai->ai_addrlen, false);
      if (probe < 0) {
        last_errno = errno;
        continue;
      }
      struct sockaddr_storage got;
      socklen_t gotlen = sizeof got;
      int rc2 = getsockname(probe, (struct sockaddr *)&got, &gotlen);
      close(probe);
      if (rc2 != 0) {
        last_errno = errno;
        continue;
      }
      if (at.ss_family == AF_INET6)
        ((struct sockaddr_in6 *)&at)->sin6_port = ((struct sockaddr_in6 *)&got)->sin6_port;
      else
        ((struct sockaddr_in *)&at)->sin_port = ((struct sockaddr_in *)&got)->sin_port;
    }
    int fd = bound_udp(&at, ai->ai_addrlen, s->grouped);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    /* Buffers, GRO, don't-fragment, and, on a wildcard address, the
     * destination address of each datagram (we answer from it; a socket
     * bound to one address answers from that one without being told). */
    bool wildcard =
        ai->ai_family == AF_INET6
            ? IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)ai->ai_addr)->sin6_addr)
            : ((const struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr == htonl(INADDR_ANY);
    gl_udp_opts uo = {
        .buffer_bytes = s->cfg.socket_buffer_bytes,
        .rx_slots = GL_QS_RX_SLOTS,
        .no_gso = s->cfg.no_gso,
        .pktinfo = wildcard,
    };
    if (gl_udp_new(fd, &uo, &s->udp) != 0) { /* closed fd */
      last_errno = errno;
      continue;
    }
    socklen_t blen;
    const struct sockaddr *b = gl_udp_local(s->udp, &blen);
    memcpy(&s->bound, b, blen);
    s->boundlen = blen;
    s->fd = gl_udp_fd(s->udp);
    s->port = ntohs(ai->ai_family == AF_INET6
                        ? ((struct sockaddr_in6 *)&s->bound)->sin6_port
                        : ((struct sockaddr_in *)&s->bound)->sin_port);
    pthread_mutex_lock(&s->grp->mu);
    if (!s->grp->port) __atomic_store_n(&s->grp->port, s->port, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&s->grp->mu);
    break;
  }
  freeaddrinfo(res);
  if (s->fd < 0) {
    gl_set_err(err, errlen, "cannot bind UDP %s port %u: %s", host, (unsigned)want,
               strerror(last_errno ? last_errno : EADDRNOTAVAIL));
    return -1;
  }
  return 0;
}

int gl_qserver_set_tls(gl_qserver *s, const char *cert_file, const char *key_file,
                       const char *client_ca_file, const char *client_crl_file,
                       gl_client_policy *policy, char *err, size_t errlen) {
  if (!cert_file || !key_file || (!client_ca_file != !s->client_ca_file)) {
    gl_set_err(err, errlen, client_ca_file || s->client_ca_file
                             ? "client certificates are asked for from start to stop: "
                               "--auth changes need a restart"
                             : "no certificate or key");
    return -1;
  }
  qcred *q = gl_qs_cred_load(cert_file, key_file, client_ca_file, client_crl_file, policy, err,
                             errlen);
  if (!q) return -1;
  pthread_mutex_lock(&s->cred_mu);
  qcred *old = s->cred;
  s->cred = q;
  pthread_mutex_unlock(&s->cred_mu);
  gl_qs_cred_release(s, old); /* the server's reference; connections keep theirs */
  /* Open connections are checked against the new one on s's own loop. */
  if (s->client_ca_file && s->recheck_on) ev_async_send(s->loop, &s->recheck);
  return 0;
}
