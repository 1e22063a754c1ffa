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

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>

#include "net/ngtcp2_shim.h"

/* TLS 1.3 only, with the AEADs QUIC defines; no middlebox compatibility
 * mode (QUIC forbids the dummy ChangeCipherSpec). */
#define GL_Q_PRIORITY                                                                      \
  "%DISABLE_TLS13_COMPAT_MODE:NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:"   \
  "+AES-256-GCM:+CHACHA20-POLY1305:+AES-128-CCM"

/* Length of the connection IDs the server issues. */
#define GL_Q_SCID_LEN 18
/* Largest UDP payload we send (what PMTUD may discover). */
#define GL_Q_MAX_PKT NGTCP2_MAX_PMTUD_UDP_PAYLOAD_SIZE
/* Receive buffer for one datagram: anything UDP can carry. */
#define GL_Q_RECV_BUF 65536

/* Flow-control windows, sized for multi-megabyte messages. */
#define GL_Q_STREAM_WINDOW (16ull << 20)      /* initial per stream */
#define GL_Q_CONN_WINDOW (64ull << 20)        /* initial per connection */
#define GL_Q_MAX_STREAM_WINDOW (64ull << 20)  /* auto-tuning ceiling */
#define GL_Q_MAX_CONN_WINDOW (256ull << 20)   /* auto-tuning ceiling */

/* Application error codes (STOP_SENDING, RESET_STREAM, CONNECTION_CLOSE). */
enum {
  GL_Q_APP_NO_ERROR = 0x0,
  GL_Q_APP_TOO_LARGE = 0x101, /* message over the receiver's limit */
  GL_Q_APP_CANCELLED = 0x102, /* requester gave up (timeout) */
  GL_Q_APP_SHUTDOWN = 0x103,  /* server shutting down */
};

/* CLOCK_MONOTONIC nanoseconds (ngtcp2_tstamp). */
uint64_t gl_q_now_ns(void);

/* ngtcp2_callbacks.rand. */
void gl_q_rand_cb(uint8_t *dest, size_t destlen, const ngtcp2_rand_ctx *rand_ctx);

/* Fills buf with len unpredictable bytes. 0 or -1. */
int gl_q_random(void *buf, size_t len);

/* The ALPN list we offer/accept ("gpulease/1"). */
const gnutls_datum_t *gl_q_alpn(void);

/* True when the session negotiated our ALPN. */
bool gl_q_alpn_ok(gnutls_session_t session);

/* Describes a received CONNECTION_CLOSE into buf: "transport error 0x2
 * (CONNECTION_REFUSED): too many connections". */
void gl_q_describe_ccerr(const gl_ng_ccerr *e, char *buf, size_t buflen);

#endif /* GL_NET_QUIC_INTERNAL_H */
