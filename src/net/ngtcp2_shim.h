/*
 * ngtcp2_shim.h - the few ngtcp2 calls whose names or signatures changed
 * between 0.12.x (Debian 12) and 1.x, behind one spelling (gl_ng_*).
 * Only what src/net uses; everything else is called directly.
 *
 *   0.12                                       1.x
 *   ngtcp2_connection_close_error              ngtcp2_ccerr
 *   ngtcp2_connection_close_error_default      ngtcp2_ccerr_default
 *   ..._set_transport_error_liberr             ngtcp2_ccerr_set_liberr
 *   ..._set_transport_error_tls_alert          ngtcp2_ccerr_set_tls_alert
 *   ..._set_application_error                  ngtcp2_ccerr_set_application_error
 *   NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_*  NGTCP2_CCERR_TYPE_*
 *   ngtcp2_conn_get_connection_close_error     ngtcp2_conn_get_ccerr (returns a pointer)
 *   ngtcp2_conn_is_in_closing_period           ngtcp2_conn_in_closing_period
 *   ngtcp2_conn_is_in_draining_period          ngtcp2_conn_in_draining_period
 *   ngtcp2_conn_shutdown_stream*(conn, id, ec) ngtcp2_conn_shutdown_stream*(conn, flags, id, ec)
 *   (no original_dcid_present)                 ngtcp2_transport_params.original_dcid_present
 */
#ifndef GL_NET_NGTCP2_SHIM_H
#define GL_NET_NGTCP2_SHIM_H

#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/version.h>

#if NGTCP2_VERSION_NUM >= 0x010000

typedef ngtcp2_ccerr gl_ng_ccerr;
#define GL_NG_CCERR_TYPE_TRANSPORT NGTCP2_CCERR_TYPE_TRANSPORT
#define GL_NG_CCERR_TYPE_APPLICATION NGTCP2_CCERR_TYPE_APPLICATION

static inline void gl_ng_ccerr_default(gl_ng_ccerr *e) { ngtcp2_ccerr_default(e); }
static inline void gl_ng_ccerr_set_liberr(gl_ng_ccerr *e, int liberr) {
  ngtcp2_ccerr_set_liberr(e, liberr, NULL, 0);
}
static inline void gl_ng_ccerr_set_tls_alert(gl_ng_ccerr *e, uint8_t alert) {
  ngtcp2_ccerr_set_tls_alert(e, alert, NULL, 0);
}
static inline void gl_ng_ccerr_set_application_error(gl_ng_ccerr *e, uint64_t code,
                                                     const char *reason, size_t len) {
  ngtcp2_ccerr_set_application_error(e, code, (const uint8_t *)reason, len);
}
/* Copies the CONNECTION_CLOSE received from the peer (reason borrowed). */
static inline void gl_ng_conn_get_ccerr(ngtcp2_conn *conn, gl_ng_ccerr *out) {
  *out = *ngtcp2_conn_get_ccerr(conn);
}
static inline int gl_ng_conn_in_closing_period(ngtcp2_conn *conn) {
  return ngtcp2_conn_in_closing_period(conn);
}
static inline int gl_ng_conn_in_draining_period(ngtcp2_conn *conn) {
  return ngtcp2_conn_in_draining_period(conn);
}
static inline int gl_ng_conn_shutdown_stream(ngtcp2_conn *conn, int64_t id, uint64_t ec) {
  return ngtcp2_conn_shutdown_stream(conn, 0, id, ec);
}
static inline int gl_ng_conn_shutdown_stream_read(ngtcp2_conn *conn, int64_t id,
                                                  uint64_t ec) {
  return ngtcp2_conn_shutdown_stream_read(conn, 0, id, ec);
}
static inline void gl_ng_params_set_original_dcid(ngtcp2_transport_params *p,
                                                  const ngtcp2_cid *cid) {
  p->original_dcid = *cid;
  p->original_dcid_present = 1;
}

#else /* ngtcp2 0.12.x */

typedef ngtcp2_connection_close_error gl_ng_ccerr;
#define GL_NG_CCERR_TYPE_TRANSPORT NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT
#define GL_NG_CCERR_TYPE_APPLICATION NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION

static inline void gl_ng_ccerr_default(gl_ng_ccerr *e) {
  ngtcp2_connection_close_error_default(e);
}
static inline void gl_ng_ccerr_set_liberr(gl_ng_ccerr *e, int liberr) {
  ngtcp2_connection_close_error_set_transport_error_liberr(e, liberr, NULL, 0);
}
static inline void gl_ng_ccerr_set_tls_alert(gl_ng_ccerr *e, uint8_t alert) {
  ngtcp2_connection_close_error_set_transport_error_tls_alert(e, alert, NULL, 0);
}
static inline void gl_ng_ccerr_set_application_error(gl_ng_ccerr *e, uint64_t code,
                                                     const char *reason, size_t len) {
  ngtcp2_connection_close_error_set_application_error(e, code, (const uint8_t *)reason, len);
}
static inline void gl_ng_conn_get_ccerr(ngtcp2_conn *conn, gl_ng_ccerr *out) {
  ngtcp2_conn_get_connection_close_error(conn, out);
}
static inline int gl_ng_conn_in_closing_period(ngtcp2_conn *conn) {
  return ngtcp2_conn_is_in_closing_period(conn);
}
static inline int gl_ng_conn_in_draining_period(ngtcp2_conn *conn) {
  return ngtcp2_conn_is_in_draining_period(conn);
}
static inline int gl_ng_conn_shutdown_stream(ngtcp2_conn *conn, int64_t id, uint64_t ec) {
  return ngtcp2_conn_shutdown_stream(conn, id, ec);
}
static inline int gl_ng_conn_shutdown_stream_read(ngtcp2_conn *conn, int64_t id,
                                                  uint64_t ec) {
  return ngtcp2_conn_shutdown_stream_read(conn, id, ec);
}
static inline void gl_ng_params_set_original_dcid(ngtcp2_transport_params *p,
                                                  const ngtcp2_cid *cid) {
  p->original_dcid = *cid; /* 0.12: a server always sends it */
}

#endif

#endif /* GL_NET_NGTCP2_SHIM_H */
