/*
 * quic_internal.h - pieces shared by quic_server.c and quic_client.c: TLS
 * priorities, ALPN, application error codes, random numbers, clocks and
 * error-text helpers. No API promise; gl_q_ prefix.
 */
#ifndef GL_NET_QUIC_INTERNAL_H
#define GL_NET_QUIC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>


/* TLS 1.3 only, with the AEADs QUIC defines; no middlebox compatibility
 * mode (QUIC forbids the dummy ChangeCipherSpec). */
#define GL_Q_PRIORITY                                                                      \
  "%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:"   \
  "+AES-256-GCM:+CHACHA20-POLY1305:+AES-128-CCM"

/* Length of the connection IDs the server issues. */
#define GL_Q_SCID_LEN 18
/* Buffer for a packet sent on its own (CONNECTION_CLOSE, version
 * negotiation, refusal): those are small. */
#define GL_Q_CTRL_PKT NGTCP2_MAX_PMTUD_UDP_PAYLOAD_SIZE
/* Largest UDP payload sent by default: 64 KiB datagrams where the path
 * carries them (loopback's MTU of 65536 fits 65488 bytes of UDP payload
 * over IPv6 as over IPv4). Path MTU discovery finds what a path takes. */
#define GL_Q_DEFAULT_MAX_UDP_PAYLOAD 65488
/* Most path MTU discovery probes (see gl_q_settings_udp). */
#define GL_Q_MAX_PROBES 4
/* One write round's buffer: the packets handed to the socket at once (four
 * GSO messages of 1452-byte packets, or four 64 KiB datagrams; larger
 * batches measured no faster). */
#define GL_Q_TX_BYTES (256u << 10)
#define GL_Q_TX_PKTS (GL_Q_TX_BYTES / NGTCP2_MAX_UDP_PAYLOAD_SIZE)
/* Bytes one connection writes per round before the event loop reads
 * again (ACKs, other connections); the rest follows at once after. Reading
 * late makes the peer's loss timers fire for packets that did arrive (and
 * path MTU probes fail). */
#define GL_Q_ROUND_BYTES (1u << 20)

/* Flow-control windows, sized for multi-megabyte messages. */
#define GL_Q_STREAM_WINDOW (2ull << 20)       /* initial per stream */
#define GL_Q_CONN_WINDOW (4ull << 20)         /* initial per connection */
#define GL_Q_MAX_STREAM_WINDOW (16ull << 20)  /* auto-tuning ceiling */
#define GL_Q_MAX_CONN_WINDOW (32ull << 20)   /* auto-tuning ceiling */

/* Application error codes (STOP_SENDING, RESET_STREAM, CONNECTION_CLOSE). */
enum {
  GL_Q_APP_NO_ERROR = 0x0,
  GL_Q_APP_TOO_LARGE = 0x101, /* message over the receiver's limit */
  GL_Q_APP_CANCELLED = 0x102, /* requester gave up (timeout) */
  GL_Q_APP_SHUTDOWN = 0x103,  /* server shutting down */
  GL_Q_APP_REFUSED = 0x104,   /* answered on its header: the rest is not read */
  GL_Q_APP_REVOKED = 0x105,   /* the client's certificate was refused on a reload */
};

/* UDP payload size limit for a configured value (0: the default; at least
 * 1200, at most GL_UDP_MAX_PAYLOAD). */
size_t gl_q_max_udp_payload(size_t configured);

/* Sets up settings for datagrams of up to max_udp bytes: the largest UDP
 * payload ngtcp2 sends, and path MTU discovery probing max_udp, then 8952
 * (jumbo frames) and 1452 (Ethernet). On a local path (this host, over the
 * loopback device) there is nothing to discover: datagrams are as large as
 * both ends allow from the start (the peer's max_udp_payload_size), which
 * also spares probes that an idle blocking client would answer too late.
 * probes must hold GL_Q_MAX_PROBES and outlive the call only (ngtcp2
 * copies). */
void gl_q_settings_udp(ngtcp2_settings *settings, size_t max_udp, bool local_path,
                       uint16_t probes[GL_Q_MAX_PROBES]);

/* True when a datagram from local to remote never leaves this host: remote
 * is a loopback address (127/8, ::1, their v4-mapped forms) or local's own
 * address. */
bool gl_q_path_is_local(const struct sockaddr *local, const struct sockaddr *remote);

/* realloc for message buffers: one of several MiB is asked to use
 * transparent huge pages (MADV_HUGEPAGE), as first touching fresh memory a
 * 4 KiB page at a time costs as much as moving the bytes over loopback. */
void *gl_q_buf_realloc(void *p, size_t size);

/* A few large message buffers kept for reuse by one server or client
 * (one thread): memory fresh from the kernel costs page faults and zeroing
 * on first touch, which on the GPU nodes' VMs is slower than moving the
 * bytes over loopback (about 1.5 GB/s), while a recycled buffer is warm.
 * Buffers under GL_Q_POOL_MIN are not kept; all kept ones together stay
 * within max_bytes (smaller ones are dropped first to make room). */
#define GL_Q_POOL_SLOTS 8
#define GL_Q_POOL_MIN (1u << 20)
/* A server's pool holds up to max_message_bytes, a client's up to
 * max_response_bytes, and at least this much. */
#define GL_Q_POOL_FLOOR (64u << 20)
typedef struct gl_q_pool {
  uint8_t *buf[GL_Q_POOL_SLOTS];
  size_t cap[GL_Q_POOL_SLOTS];
  size_t n, bytes, max_bytes;
} gl_q_pool;

/* An empty pool (max_bytes 0: keeps nothing). */
void gl_q_pool_init(gl_q_pool *pool, size_t max_bytes);

/* The smallest kept buffer of want to most bytes (its size in *cap), or
 * NULL when none fits. */
uint8_t *gl_q_pool_get(gl_q_pool *pool, size_t want, size_t most, size_t *cap);

/* A buffer of at least want bytes (*cap: its size): a kept one, else a new
 * one (gl_q_buf_realloc). NULL when out of memory. */
uint8_t *gl_q_pool_alloc(gl_q_pool *pool, size_t want, size_t *cap);

/* Keeps buf (from malloc, cap bytes) for reuse, or frees it. NULL ignored. */
void gl_q_pool_put(gl_q_pool *pool, uint8_t *buf, size_t cap);

/* Frees every kept buffer. */
void gl_q_pool_clear(gl_q_pool *pool);

/* A stream carries one gpulease/1 message, whose 12-byte header ends with
 * its body length (u32, big-endian, at offset 8). Once the header is in
 * (len bytes at buf, then n more at more), the message's whole size, to
 * make room for it at once instead of doubling; 0 before that. */
size_t gl_q_msg_size(const uint8_t *buf, size_t len, const uint8_t *more, size_t n);

/* Bytes of that header, and the whole size it declares (12 + body_len). */
#define GL_Q_HEADER_BYTES 12
static inline size_t gl_q_hdr_msg_size(const uint8_t *h) {
  return GL_Q_HEADER_BYTES +
         ((size_t)h[8] << 24 | (size_t)h[9] << 16 | (size_t)h[10] << 8 | (size_t)h[11]);
}

/* Grows *buf (of *cap bytes, len in use) to hold need bytes, at most limit:
 * doubling, through the pool once past GL_Q_POOL_MIN (a kept buffer that
 * fits, and is at most slack times the size wanted unless slack is 0,
 * replaces it; the old one goes back), else realloc. 0 or -1 (out of
 * memory: *buf unchanged). */
int gl_q_buf_grow(gl_q_pool *pool, uint8_t **buf, size_t *cap, size_t len, size_t need,
                  size_t limit, size_t slack);

/* memcpy for received stream bytes: into a large message buffer (cap
 * bytes, past GL_Q_POOL_MIN) with non-temporal stores, which skip reading
 * the cold destination into the cache first (nearly twice as fast into a
 * buffer of hundreds of MiB); plain memcpy otherwise. */
void gl_q_copy_in(uint8_t *dst, const uint8_t *src, size_t n, size_t cap);

/* CLOCK_MONOTONIC nanoseconds (ngtcp2_tstamp). */
uint64_t gl_q_now_ns(void);

/* ngtcp2_callbacks.rand. */
void gl_q_rand_cb(uint8_t *dest, size_t destlen, const ngtcp2_rand_ctx *rand_ctx);

/* Fills buf with len unpredictable bytes. 0 or -1. */
int gl_q_random(void *buf, size_t len);

/* ---- Retry tokens (server address validation, RFC 9000 8.1.2) ----------
 * A token is sealed (AEAD) under a server's secret and holds the client's
 * address (and port), the client's original destination connection ID,
 * the Retry's source connection ID and when it was made. */

/* Bytes of a server's token secret (random, made at start). */
#define GL_Q_RETRY_SECRET_LEN 32
/* How long a Retry token is accepted after it was made (ns). */
#define GL_Q_RETRY_TOKEN_TIMEOUT_NS (10ull * NGTCP2_SECONDS)
/* Room for a token: NGTCP2_CRYPTO_MAX_RETRY_TOKENLEN. */
#define GL_Q_RETRY_TOKEN_MAX 256

/* Makes the token of a Retry (scid: the Retry's source connection ID)
 * answering an Initial of version with destination connection ID odcid
 * from remote, at now (gl_q_now_ns) into token (GL_Q_RETRY_TOKEN_MAX
 * bytes). Its length, or -1. */
ngtcp2_ssize gl_q_retry_token_make(uint8_t *token, const uint8_t *secret, uint32_t version,
                                   const struct sockaddr *remote, socklen_t remotelen,
                                   const ngtcp2_cid *scid, const ngtcp2_cid *odcid,
                                   uint64_t now);

/* Checks a token from an Initial of version with destination connection
 * ID dcid (the Retry's source connection ID) from remote at now: made
 * under secret for remote (address and port), for dcid, and at most
 * GL_Q_RETRY_TOKEN_TIMEOUT_NS ago. 0 with the client's original
 * destination connection ID in *odcid, or -1. */
int gl_q_retry_token_check(ngtcp2_cid *odcid, const uint8_t *token, size_t tokenlen,
                           const uint8_t *secret, uint32_t version,
                           const struct sockaddr *remote, socklen_t remotelen,
                           const ngtcp2_cid *dcid, uint64_t now);

/* The ALPN list we offer/accept ("gpulease/1"). */
const gnutls_datum_t *gl_q_alpn(void);

/* True when the session negotiated our ALPN. */
bool gl_q_alpn_ok(gnutls_session_t session);

/* Describes a received CONNECTION_CLOSE into buf: "transport error 0x2
 * (CONNECTION_REFUSED): too many connections". */
void gl_q_describe_ccerr(const ngtcp2_ccerr *e, char *buf, size_t buflen);

#endif /* GL_NET_QUIC_INTERNAL_H */
