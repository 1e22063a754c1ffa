/*
 * wire_peek.c - what the daemon reads of an encoded message without
 * decoding it all: the lease a worker's request names, a BATCH entry's op,
 * the session id of a SESSION_OPEN reply. Every read of wire bytes outside
 * the codec goes through these (wire.h), so no other file indexes into a
 * message.
 */
#include "proto/wire_internal.h"

bool gl_request_peek_lease(const uint8_t *msg, size_t len, uint64_t *lease_id) {
  gl_header h;
  if (gl_header_decode(msg, len, &h) != GPULEASE_OK || len < GL_WIRE_HEADER_SIZE + 8) return false;
  const gl_op_info *i = gl_op_info_of(h.op);
  /* The ops a worker serves for a lease: their bodies start with its
   * lease_auth (a session_ref starts with one too). */
  if (!i || i->target == GL_OP_TARGET_NONE || i->where != GL_OP_WHERE_WORKER) return false;
  *lease_id = gl_wire__get_be(msg + GL_WIRE_HEADER_SIZE, 8);
  return true;
}

uint16_t gl_message_peek_op(const uint8_t *msg, size_t len) {
  gl_header h;
  return gl_header_decode(msg, len, &h) == GPULEASE_OK ? h.op : 0;
}

bool gl_response_peek_session_id(const uint8_t *msg, size_t len, uint64_t *session_id) {
  gl_header h;
  if (gl_header_decode(msg, len, &h) != GPULEASE_OK || h.kind != GL_WIRE_KIND_RESPONSE ||
      h.op != GL_OP_SESSION_OPEN || h.status != GPULEASE_OK ||
      (uint64_t)h.body_len != len - GL_WIRE_HEADER_SIZE || h.body_len < 2)
    return false;
  const uint8_t *body = msg + GL_WIRE_HEADER_SIZE;
  size_t msg_len = (size_t)gl_wire__get_be(body, 2);
  /* The result is the session id alone, after the message. */
  if ((size_t)h.body_len != 2 + msg_len + 8) return false;
  *session_id = gl_wire__get_be(body + 2 + msg_len, 8);
  return *session_id != 0;
}
