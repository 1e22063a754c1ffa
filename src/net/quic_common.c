/* quic_common.c - see quic_internal.h. */
#include "net/quic_internal.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2_crypto.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/util.h"
#include "net/udp_io.h"
#include "proto/wire.h"

uint64_t gl_q_now_ns(void) { return gl_mono_ns(); }

#define HUGE_PAGE (2u << 20)

void *gl_q_buf_realloc(void *p, size_t size) {
  uint8_t *n = realloc(p, size);
  if (n && size >= 2 * HUGE_PAGE) {
    /* The whole huge pages inside the block; best effort (the kernel may
     * not do THP at all). */
    uintptr_t from = ((uintptr_t)n + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
    uintptr_t to = ((uintptr_t)n + size) & ~(uintptr_t)(HUGE_PAGE - 1);
    if (to > from) (void)madvise((void *)from, to - from, MADV_HUGEPAGE);
  }
  return n;
}

void gl_q_pool_init(gl_q_pool *pool, size_t max_bytes) {
  memset(pool, 0, sizeof *pool);
  pool->max_bytes = max_bytes;
}

static void pool_drop(gl_q_pool *pool, size_t i) {
  pool->bytes -= pool->cap[i];
  pool->n--;
  pool->buf[i] = pool->buf[pool->n];
  pool->cap[i] = pool->cap[pool->n];
}

uint8_t *gl_q_pool_get(gl_q_pool *pool, size_t want, size_t most, size_t *cap) {
  size_t best = pool->n;
  for (size_t i = 0; i < pool->n; i++)
    if (pool->cap[i] >= want && pool->cap[i] <= most &&
        (best == pool->n || pool->cap[i] < pool->cap[best]))
      best = i;
  if (best == pool->n) return NULL;
  uint8_t *b = pool->buf[best];
  *cap = pool->cap[best];
  pool_drop(pool, best);
  return b;
}

uint8_t *gl_q_pool_alloc(gl_q_pool *pool, size_t want, size_t *cap) {
  uint8_t *b = want >= GL_Q_POOL_MIN ? gl_q_pool_get(pool, want, SIZE_MAX, cap) : NULL;
  if (b) return b;
  b = gl_q_buf_realloc(NULL, want ? want : 1);
  *cap = want;
  return b;
}

void gl_q_pool_put(gl_q_pool *pool, uint8_t *buf, size_t cap) {
  if (!buf) return;
  if (cap < GL_Q_POOL_MIN || cap > pool->max_bytes) {
    free(buf);
    return;
  }
  /* Make room by dropping smaller buffers (larger ones are worth more: a
   * small one is cheap to make again). */
  while (pool->n == GL_Q_POOL_SLOTS || pool->bytes + cap > pool->max_bytes) {
    size_t small = 0;
    for (size_t i = 1; i < pool->n; i++)
      if (pool->cap[i] < pool->cap[small]) small = i;
    if (pool->n == 0 || pool->cap[small] > cap) {
      free(buf);
      return;
    }
    free(pool->buf[small]);
    pool_drop(pool, small);
  }
  pool->buf[pool->n] = buf;
  pool->cap[pool->n++] = cap;
  pool->bytes += cap;
}

void gl_q_pool_clear(gl_q_pool *pool) {
  for (size_t i = 0; i < pool->n; i++) free(pool->buf[i]);
  pool->n = 0;
  pool->bytes = 0;
}

size_t gl_q_msg_size(const uint8_t *buf, size_t len, const uint8_t *more, size_t n) {
  if (len >= 12 || len + n < 12) return 0; /* sized already, or not yet */
  uint8_t h[12];
  if (len) memcpy(h, buf, len);
  memcpy(h + len, more, 12 - len);
  return 12 + ((size_t)h[8] << 24 | (size_t)h[9] << 16 | (size_t)h[10] << 8 | h[11]);
}

int gl_q_buf_grow(gl_q_pool *pool, uint8_t **buf, size_t *cap, size_t len, size_t need,
                  size_t limit, size_t slack) {
  if (need <= *cap) return 0;
  size_t ncap = *cap ? *cap : 16384;
  while (ncap < need) ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
  if (ncap > limit) ncap = limit;
  if (ncap < need) ncap = need;
  if (ncap >= GL_Q_POOL_MIN) {
    size_t got;
    size_t most = slack && ncap <= SIZE_MAX / slack ? ncap * slack : SIZE_MAX;
    uint8_t *b = gl_q_pool_get(pool, ncap, most, &got);
    if (b) {
      if (len) memcpy(b, *buf, len);
      gl_q_pool_put(pool, *buf, *cap);
      *buf = b;
      *cap = got;
      return 0;
    }
  }
  uint8_t *b = gl_q_buf_realloc(*buf, ncap);
  if (!b) return -1;
  *buf = b;
  *cap = ncap;
  return 0;
}

void gl_q_copy_in(uint8_t *dst, const uint8_t *src, size_t n, size_t cap) {
#if defined(__SSE2__)
  if (cap >= GL_Q_POOL_MIN && n >= 4096) {
    while (((uintptr_t)dst & 15) != 0) {
      *dst++ = *src++;
      n--;
    }
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
      __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
      __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(src + i + 16));
      __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(src + i + 32));
      __m128i d = _mm_loadu_si128((const __m128i *)(const void *)(src + i + 48));
      _mm_stream_si128((__m128i *)(void *)(dst + i), a);
      _mm_stream_si128((__m128i *)(void *)(dst + i + 16), b);
      _mm_stream_si128((__m128i *)(void *)(dst + i + 32), c);
      _mm_stream_si128((__m128i *)(void *)(dst + i + 48), d);
    }
    _mm_sfence(); /* ordered before anything that reads the buffer */
    memcpy(dst + i, src + i, n - i);
    return;
  }
#else
  (void)cap;
#endif
  memcpy(dst, src, n);
}

/* The IPv4 address in a (possibly v4-mapped) address, in network order;
 * false for other IPv6 addresses. */
static bool addr_v4(const struct sockaddr *sa, uint32_t *out) {
  if (sa->sa_family == AF_INET) {
    *out = ((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr;
    return true;
  }
  const struct in6_addr *a6 = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
  if (sa->sa_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(a6)) return false;
  memcpy(out, &a6->s6_addr[12], 4);
  return true;
}

bool gl_q_path_is_local(const struct sockaddr *local, const struct sockaddr *remote) {
  uint32_t r4, l4;
  if (addr_v4(remote, &r4)) {
    if ((ntohl(r4) >> 24) == 127) return true;
    return addr_v4(local, &l4) && l4 == r4;
  }
  if (remote->sa_family != AF_INET6) return false;
  const struct in6_addr *r6 = &((const struct sockaddr_in6 *)(const void *)remote)->sin6_addr;
  if (IN6_IS_ADDR_LOOPBACK(r6)) return true;
  if (local->sa_family != AF_INET6) return false;
  const struct in6_addr *l6 = &((const struct sockaddr_in6 *)(const void *)local)->sin6_addr;
  return memcmp(l6, r6, sizeof *r6) == 0;
}

size_t gl_q_max_udp_payload(size_t configured) {
  if (!configured) return GL_Q_DEFAULT_MAX_UDP_PAYLOAD;
  if (configured < NGTCP2_MAX_UDP_PAYLOAD_SIZE) return NGTCP2_MAX_UDP_PAYLOAD_SIZE;
  return configured > GL_UDP_MAX_PAYLOAD ? GL_UDP_MAX_PAYLOAD : configured;
}

void gl_q_settings_udp(ngtcp2_settings *settings, size_t max_udp, bool local_path,
                       uint16_t probes[GL_Q_MAX_PROBES]) {
  settings->max_tx_udp_payload_size = max_udp;
  if (local_path) {
    settings->no_tx_udp_payload_size_shaping = 1;
    settings->no_pmtud = 1;
    return;
  }
  /* Largest first: where the peer's max_udp_payload_size or our own limit
   * rules a size out, ngtcp2 skips it, so loopback (65488) or a jumbo-frame
   * LAN (8952) get their size in one round trip; an Ethernet path sees the
   * larger probes fail (a few PTOs) and settles on 1452. */
  static const uint16_t steps[] = {8952, 1452};
  size_t n = 0;
  if (max_udp > NGTCP2_MAX_UDP_PAYLOAD_SIZE) probes[n++] = (uint16_t)max_udp;
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
    if (steps[i] < max_udp) probes[n++] = steps[i];
  settings->no_pmtud = n == 0;
  settings->pmtud_probes = n ? probes : NULL;
  settings->pmtud_probeslen = n;
}

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

void gl_q_describe_ccerr(const ngtcp2_ccerr *e, char *buf, size_t buflen) {
  char what[96];
  if (e->type == NGTCP2_CCERR_TYPE_APPLICATION) {
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

_Static_assert(NGTCP2_CRYPTO_MAX_RETRY_TOKENLEN <= GL_Q_RETRY_TOKEN_MAX, "room for a Retry token");

ngtcp2_ssize gl_q_retry_token_make(uint8_t *token, const uint8_t *secret, uint32_t version,
                                   const struct sockaddr *remote, socklen_t remotelen,
                                   const ngtcp2_cid *scid, const ngtcp2_cid *odcid,
                                   uint64_t now) {
  return ngtcp2_crypto_generate_retry_token(token, secret, GL_Q_RETRY_SECRET_LEN, version,
                                            (const ngtcp2_sockaddr *)remote,
                                            (ngtcp2_socklen)remotelen, scid, odcid, now);
}

int gl_q_retry_token_check(ngtcp2_cid *odcid, const uint8_t *token, size_t tokenlen,
                           const uint8_t *secret, uint32_t version,
                           const struct sockaddr *remote, socklen_t remotelen,
                           const ngtcp2_cid *dcid, uint64_t now) {
  if (!token || tokenlen == 0 || token[0] != NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY) return -1;
  return ngtcp2_crypto_verify_retry_token(odcid, token, tokenlen, secret, GL_Q_RETRY_SECRET_LEN,
                                          version, (const ngtcp2_sockaddr *)remote,
                                          (ngtcp2_socklen)remotelen, dcid,
                                          GL_Q_RETRY_TOKEN_TIMEOUT_NS, now) == 0
             ? 0
             : -1;
}
