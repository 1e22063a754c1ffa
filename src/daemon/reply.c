/* reply.c - see reply.h. */
#include "daemon/reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"

void gl_ops_encode_oom(gl_buf *b) {
  gl_buf_init(b);
  gl_response_encode_error(0, GPULEASE_INTERNAL, b, "daemon out of memory");
}

void gl_ops_reply_bytes(gl_dreq *req, gl_buf *b) {
  if (b->oom) {
    gl_buf_free(b);
    gl_ops_encode_oom(b);
  }
  gl_dreq_reply(req, b->data, b->len);
  gl_buf_free(b);
}

void gl_ops_reply_error(gl_dreq *req, uint16_t op, gpulease_status st, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  GL_DEBUG("%s -> %s: %s", gl_op_name(op), gpulease_status_name(st), msg);
  gl_buf b;
  gl_buf_init(&b);
  gl_response_encode_error(op, st, &b, "%s", msg);
  gl_ops_reply_bytes(req, &b);
}

void gl_ops_reply_lease(gl_dreq *req, uint16_t op, const gl_lease *l, const uint8_t *secret) {
  gl_response r = {.op = op, .status = GPULEASE_OK};
  gl_lease_info *li = &r.u.lease;
  li->lease_id = l->id;
  if (secret) memcpy(li->secret, secret, sizeof li->secret);
  li->gpu_index = l->gpu_index;
  li->vram_bytes = l->vram_bytes;
  li->ttl_s = l->ttl_s;
  li->remaining_ms = gl_lease_remaining_ms(l, gl_mono_ns());
  li->submits = l->submits;
  li->lease_class = l->lease_class;
  gl_buf b;
  gl_buf_init(&b);
  gl_response_encode(&r, &b);
  gl_ops_reply_bytes(req, &b);
}

void gl_ops_reply_internal(gl_dreq *req, uint16_t op) {
  gl_ops_reply_error(req, op, GPULEASE_UNSUPPORTED, GL_OPS_INTERNAL_MSG, op, gl_op_name(op));
}
