/*
 * reply.h - how the daemon's request handlers (ops.c, ops_access.c)
 * answer: an encoded response, an error of an op with a printf message, a
 * lease's lease_info, the refusal of an internal op, and the INTERNAL
 * answer of a daemon out of memory. The transport is the request's
 * (dreq.h).
 */
#ifndef GL_DAEMON_REPLY_H
#define GL_DAEMON_REPLY_H

#include <stdint.h>

#include "common/util.h"
#include "daemon/dreq.h"
#include "daemon/lease_table.h"
#include "proto/wire.h"

/* Sends b (an encoded response; INTERNAL instead when it ran out of
 * memory) and frees it. */
void gl_ops_reply_bytes(gl_dreq *req, gl_buf *b);

/* Sends an error response of op with status st and a printf message. */
void gl_ops_reply_error(gl_dreq *req, uint16_t op, gpulease_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Sends lease_info of l; secret (GPULEASE_SECRET_BYTES) or NULL (zeros). */
void gl_ops_reply_lease(gl_dreq *req, uint16_t op, const gl_lease *l, const uint8_t *secret);

/* Refuses an internal op (0x7Fxx) from the network, in the words of
 * docs/protocol.md section 7, whichever path refuses it. */
void gl_ops_reply_internal(gl_dreq *req, uint16_t op);

/* The text of that refusal, for a printf of (op, gl_op_name(op)): the one
 * docs/protocol.md quotes, also sent by the header verdict (early.c). */
#define GL_OPS_INTERNAL_MSG                                                                       \
  "op 0x%04x (%s) is internal to the daemon and its workers, not served over the network"

/* Initializes b with the INTERNAL "daemon out of memory" answer (for a
 * transport's request that could not be wrapped, or a response that ran
 * out of memory). */
void gl_ops_encode_oom(gl_buf *b);

#endif /* GL_DAEMON_REPLY_H */
