/*
 * early.c - see early.h. The same checks as handle() in ops.c (which
 * keeps them, for a request no transport judged early), answered as soon
 * as the header is in: docs/protocol.md promises that internal ops are
 * refused on their header alone and that a request over the limit is
 * refused as soon as its header declares it.
 */
#include "daemon/early.h"

#include <string.h>

#include "common/log.h"
#include "daemon/daemon.h"
#include "daemon/reply.h"
#include "proto/wire.h"

size_t gl_daemon_on_header(void *user, const uint8_t *hdr, uint8_t *reply, size_t cap) {
  const gl_daemon *d = user;
  gl_header h;
  if (gl_header_decode(hdr, GL_WIRE_HEADER_SIZE, &h) != GPULEASE_OK ||
      h.kind != GL_WIRE_KIND_REQUEST)
    return 0;
  uint64_t whole = GL_WIRE_HEADER_SIZE + (uint64_t)h.body_len;
  gl_buf b;
  gl_buf_init(&b);
  gpulease_status st;
  if (gl_op_code_internal(h.op)) {
    st = GPULEASE_UNSUPPORTED;
    gl_response_encode_error(h.op, st, &b, GL_OPS_INTERNAL_MSG, h.op, gl_op_name(h.op));
  } else if (whole > d->cfg.max_message_bytes) {
    st = GPULEASE_TOO_LARGE;
    gl_response_encode_error(h.op, st, &b,
                             "request of %llu bytes (12-byte header and body_len %u) larger "
                             "than the daemon's limit of %zu bytes",
                             (unsigned long long)whole, h.body_len, d->cfg.max_message_bytes);
  } else {
    return 0;
  }
  size_t n = b.len <= cap ? b.len : 0;
  if (n) memcpy(reply, b.data, n);
  gl_buf_free(&b);
  GL_DEBUG("%s -> %s on its header (body_len %u)", gl_op_name(h.op), gpulease_status_name(st),
           h.body_len);
  return n;
}
