/*
 * origin.h - what a transport tells its owner about where a request
 * comes from when it asks for a verdict on the request's header (quic.h's
 * on_header, local.h's): shared by the QUIC server and the local socket.
 */
#ifndef GL_NET_ORIGIN_H
#define GL_NET_ORIGIN_H

#include <stddef.h>
#include <stdint.h>

/* The request's connection as it is when the header arrives. Valid only
 * during the call; the strings are the transport's. */
typedef struct gl_req_origin {
  const char *identity; /* the connection's identity, "" when it has none */
  const char *peer;     /* its peer, as gl_qreq_peer / gl_lreq_peer write it */
  /* The connection's other unfinished requests (header in, body not yet
   * whole) that on_header let through, and the sizes their headers
   * declared (12 + body_len each). */
  uint32_t conn_unfinished;
  uint64_t conn_unfinished_bytes;
} gl_req_origin;

/* Told, once, that a request on_header let through has ended: its body
 * is whole (and the request goes to on_request), or it never will be
 * (the stream reset, the connection closed, the stream cut over the
 * limit). ticket is what on_header wrote for it, whole what its header
 * declared (12 + body_len). Runs on the transport's thread. */
typedef void (*gl_req_end_cb)(void *user, void *ticket, uint64_t whole);

#endif /* GL_NET_ORIGIN_H */
