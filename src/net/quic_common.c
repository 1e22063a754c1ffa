/* quic_common.c - see quic_internal.h. */
#include "net/quic_internal.h"

#include <stdio.h>
#include <string.h>

#include <gnutls/crypto.h>

#include "common/util.h"
#include "proto/wire.h"

uint64_t gl_q_now_ns(void) { return gl_mono_ns(); }

int gl_q_random(void *buf, size_t len) {
  return gnutls_rnd(GNUTLS_RND_NONCE, buf, len) == 0 ? 0 : -1;
}

void gl_q_rand_cb(uint8_t *dest, size_t destlen, const ngtcp2_rand_ctx *rand_ctx) {
  (void)rand_ctx;
  /* ngtcp2 uses this for non-secret choices (e.g. PATH_CHALLENGE padding);
   * fall back to zeros rather than leaving memory undefined. */
  if (gl_q_random(dest, destlen) != 0) memset(dest, 0, destlen);
}

static const gnutls_datum_t alpn_datum = {
    .data = (unsigned char *)GL_WIRE_ALPN,
    .size = sizeof GL_WIRE_ALPN - 1,
};

const gnutls_datum_t *gl_q_alpn(void) { return &alpn_datum; }

bool gl_q_alpn_ok(gnutls_session_t session) {
  gnutls_datum_t got;
  if (gnutls_alpn_get_selected_protocol(session, &got) != 0) return false;
  return got.size == alpn_datum.size && memcmp(got.data, alpn_datum.data, got.size) == 0;
}

static const char *transport_error_name(uint64_t code) {
  switch (code) {
  case 0x0: return "NO_ERROR";
  case 0x1: return "INTERNAL_ERROR";
  case 0x2: return "CONNECTION_REFUSED";
  case 0x3: return "FLOW_CONTROL_ERROR";
  case 0x4: return "STREAM_LIMIT_ERROR";
  case 0x5: return "STREAM_STATE_ERROR";
  case 0x6: return "FINAL_SIZE_ERROR";
  case 0x7: return "FRAME_ENCODING_ERROR";
  case 0x8: return "TRANSPORT_PARAMETER_ERROR";
  case 0x9: return "CONNECTION_ID_LIMIT_ERROR";
  case 0xa: return "PROTOCOL_VIOLATION";
  case 0xb: return "INVALID_TOKEN";
  case 0xc: return "APPLICATION_ERROR";
  case 0xd: return "CRYPTO_BUFFER_EXCEEDED";
  case 0xe: return "KEY_UPDATE_ERROR";
  case 0xf: return "AEAD_LIMIT_REACHED";
  case 0x10: return "NO_VIABLE_PATH";
  default: return NULL;
  }
}

void gl_q_describe_ccerr(const gl_ng_ccerr *e, char *buf, size_t buflen) {
  char what[96];
  if (e->type == GL_NG_CCERR_TYPE_APPLICATION) {
    snprintf(what, sizeof what, "application error 0x%llx", (unsigned long long)e->error_code);
  } else if (e->error_code >= 0x100 && e->error_code <= 0x1ff) {
    const char *alert = gnutls_alert_get_name((gnutls_alert_description_t)(e->error_code & 0xff));
    snprintf(what, sizeof what, "TLS alert %u (%s)", (unsigned)(e->error_code & 0xff),
             alert ? alert : "unknown");
  } else {
    const char *name = transport_error_name(e->error_code);
    snprintf(what, sizeof what, "transport error 0x%llx (%s)",
             (unsigned long long)e->error_code, name ? name : "unknown");
  }
  /* The reason phrase comes from the peer: print it, but only the
   * printable ASCII part and at most 128 bytes. */
  char reason[129];
  size_t n = 0;
  for (size_t i = 0; e->reason && i < e->reasonlen && n < sizeof reason - 1; i++) {
    unsigned char ch = e->reason[i];
    reason[n++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
  }
  reason[n] = 0;
  if (n) snprintf(buf, buflen, "%s: %s", what, reason);
  else snprintf(buf, buflen, "%s", what);
}
