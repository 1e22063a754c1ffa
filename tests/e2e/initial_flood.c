/* initial_flood.c - see initial_flood.h. */
#include "initial_flood.h"

#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include "net/quic_internal.h"

#define FLOOD_MAX_SOCKS 64

static int g_fds[FLOOD_MAX_SOCKS];
static int g_nfds;

typedef struct flood_conn {
  ngtcp2_conn *conn;
  gnutls_session_t tls;
  ngtcp2_crypto_conn_ref ref;
} flood_conn;

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref) {
  return ((flood_conn *)ref->user_data)->conn;
}

static int new_cid(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token, size_t cidlen,
                   void *user) {
  (void)conn;
  (void)user;
  cid->datalen = cidlen;
  if (gl_q_random(cid->data, cidlen) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  if (gl_q_random(token, NGTCP2_STATELESS_RESET_TOKENLEN) != 0) return NGTCP2_ERR_CALLBACK_FAILURE;
  return 0;
}

/* The first datagram of a new client connection from local to remote into
 * buf: its length, or -1. */
static ssize_t first_flight(gnutls_certificate_credentials_t cred, const struct sockaddr *local,
                            socklen_t locallen, const struct sockaddr *remote,
                            socklen_t remotelen, uint8_t *buf, size_t cap) {
  flood_conn fc = {0};
  ssize_t out = -1;
  ngtcp2_cid dcid = {.datalen = 18}, scid = {.datalen = 18};
  if (gl_q_random(dcid.data, dcid.datalen) != 0 || gl_q_random(scid.data, scid.datalen) != 0)
    return -1;
  ngtcp2_callbacks cb = {
      .client_initial = ngtcp2_crypto_client_initial_cb,
      .recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
      .encrypt = ngtcp2_crypto_encrypt_cb,
      .decrypt = ngtcp2_crypto_decrypt_cb,
      .hp_mask = ngtcp2_crypto_hp_mask_cb,
      .recv_retry = ngtcp2_crypto_recv_retry_cb,
      .rand = gl_q_rand_cb,
      .get_new_connection_id = new_cid,
      .update_key = ngtcp2_crypto_update_key_cb,
      .delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb,
      .delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
      .get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb,
      .version_negotiation = ngtcp2_crypto_version_negotiation_cb,
  };
  ngtcp2_settings settings;
  ngtcp2_settings_default(&settings);
  settings.initial_ts = gl_q_now_ns();
  ngtcp2_transport_params params;
  ngtcp2_transport_params_default(&params);
  params.initial_max_data = 1 << 20;
  params.initial_max_stream_data_bidi_local = 1 << 20;
  ngtcp2_path path = {
      .local = {.addr = (struct sockaddr *)local, .addrlen = locallen},
      .remote = {.addr = (struct sockaddr *)remote, .addrlen = remotelen},
  };
  if (ngtcp2_conn_client_new(&fc.conn, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &cb, &settings,
                             &params, NULL, &fc) != 0)
    return -1;
  const char *errpos = NULL;
  if (gnutls_init(&fc.tls, GNUTLS_CLIENT | GNUTLS_NO_END_OF_EARLY_DATA) != 0) {
    fc.tls = NULL;
    goto done;
  }
  if (gnutls_priority_set_direct(fc.tls, GL_Q_PRIORITY, &errpos) != 0 ||
      ngtcp2_crypto_gnutls_configure_client_session(fc.tls) != 0 ||
      gnutls_alpn_set_protocols(fc.tls, gl_q_alpn(), 1, 0) != 0 ||
      gnutls_credentials_set(fc.tls, GNUTLS_CRD_CERTIFICATE, cred) != 0)
    goto done;
  fc.ref.get_conn = get_conn;
  fc.ref.user_data = &fc;
  gnutls_session_set_ptr(fc.tls, &fc.ref);
  ngtcp2_conn_set_tls_native_handle(fc.conn, fc.tls);
  ngtcp2_path_storage ps;
  ngtcp2_path_storage_zero(&ps);
  ngtcp2_pkt_info pi;
  ngtcp2_ssize n = ngtcp2_conn_write_pkt(fc.conn, &ps.path, &pi, buf, cap, gl_q_now_ns());
  if (n > 0) out = n;
done:
  ngtcp2_conn_del(fc.conn);
  if (fc.tls) gnutls_deinit(fc.tls);
  return out;
}

void gl_test_flood_close(void) {
  for (int i = 0; i < g_nfds; i++) close(g_fds[i]);
  g_nfds = 0;
}

int gl_test_initial_flood(const struct sockaddr *to, socklen_t tolen,
                          const struct sockaddr *from, int n, int nsock, int burst) {
  gl_test_flood_close();
  if (nsock < 1) nsock = 1;
  if (nsock > FLOOD_MAX_SOCKS) nsock = FLOOD_MAX_SOCKS;
  struct sockaddr_storage locals[FLOOD_MAX_SOCKS];
  socklen_t locallens[FLOOD_MAX_SOCKS];
  for (int i = 0; i < nsock; i++) {
    int fd = socket(to->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_storage me;
    socklen_t melen = from->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                  : sizeof(struct sockaddr_in);
    memcpy(&me, from, melen);
    if (me.ss_family == AF_INET6) ((struct sockaddr_in6 *)&me)->sin6_port = 0;
    else ((struct sockaddr_in *)&me)->sin_port = 0;
    if (fd < 0 || bind(fd, (struct sockaddr *)&me, melen) != 0) {
      perror("initial flood: socket");
      if (fd >= 0) close(fd);
      gl_test_flood_close();
      return -1;
    }
    locallens[i] = sizeof locals[i];
    getsockname(fd, (struct sockaddr *)&locals[i], &locallens[i]);
    g_fds[g_nfds++] = fd;
  }
  gnutls_certificate_credentials_t cred;
  if (gnutls_certificate_allocate_credentials(&cred) != 0) {
    gl_test_flood_close();
    return -1;
  }
  uint8_t buf[2048];
  int sent = 0;
  for (int i = 0; i < n; i++) {
    int k = i % nsock;
    ssize_t len = first_flight(cred, (struct sockaddr *)&locals[k], locallens[k], to, tolen, buf,
                               sizeof buf);
    if (len < 1200) {
      fprintf(stderr, "initial flood: no first flight for Initial %d (%zd)\n", i, len);
      break;
    }
    if (sendto(g_fds[k], buf, (size_t)len, 0, to, tolen) != len) {
      perror("initial flood: sendto");
      break;
    }
    sent++;
    if (burst > 0 && sent % burst == 0) nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  gnutls_certificate_free_credentials(cred);
  return sent;
}
