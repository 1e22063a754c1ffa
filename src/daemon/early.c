/*
 * early.c - see early.h. The same checks as handle() in ops.c (which
 * keeps them, for a request no transport judged early), answered as soon
 * as the header is in: docs/protocol.md promises that internal ops are
 * refused on their header alone, that a request over the daemon's limit
 * or its op's is refused as soon as its header declares it, and that the
 * requests a connection and a tenant have unfinished are bounded (BUSY).
 * Each refusal goes to the audit log and the metrics through hdrlog.h.
 */
#include "daemon/early.h"

#include <inttypes.h>
#include <string.h>

#include "common/log.h"
#include "daemon/admit.h"
#include "daemon/daemon.h"
#include "daemon/hdrlog.h"
#include "daemon/reply.h"
#include "proto/wire.h"

/* "this tenant" or "the anonymous tenant", as handle()'s BUSY says. */
static const char *who(const gl_req_origin *from) {
  return from && from->identity && from->identity[0] ? "this tenant" : "the anonymous tenant";
}

/* The refusal of h, if any, into b (empty: none); may admit it (ticket). */
static gpulease_status judge(const gl_daemon *d, const gl_req_origin *from, const gl_header *h,
                             gl_buf *b, void **ticket) {
  uint64_t whole = GL_WIRE_HEADER_SIZE + (uint64_t)h->body_len;
  gpulease_status st;
  if (gl_op_code_internal(h->op)) {
    st = GPULEASE_UNSUPPORTED;
    gl_response_encode_error(h->op, st, b, GL_OPS_INTERNAL_MSG, h->op, gl_op_name(h->op));
    return st;
  }
  if (whole > d->cfg.max_message_bytes) {
    st = GPULEASE_TOO_LARGE;
    gl_response_encode_error(h->op, st, b,
                             "request of %" PRIu64 " bytes (12-byte header and body_len %" PRIu32
                             ") larger than the daemon's limit of %zu bytes",
                             whole, h->body_len, d->cfg.max_message_bytes);
    return st;
  }
  uint64_t limit = gl_request_body_limit(h->op, d->cfg.max_message_bytes);
  if (h->body_len > limit) {
    st = GPULEASE_TOO_LARGE;
    gl_response_encode_error(h->op, st, b,
                             "%s: body_len %" PRIu32 " declared, over the op's limit of %" PRIu64
                             " bytes (its largest body, %" PRIu64 ", and %u for the fields of "
                             "a newer release)",
                             gl_op_name(h->op), h->body_len, limit,
                             gl_request_body_max(h->op), GL_WIRE_BODY_HEADROOM);
    return st;
  }
  const gl_req_origin none = {.identity = "", .peer = ""};
  if (!from) from = &none;
  if (from->conn_unfinished &&
      from->conn_unfinished_bytes + whole > d->cfg.max_buffered_per_connection) {
    st = GPULEASE_BUSY;
    gl_response_encode_error(h->op, st, b,
                             "this connection has %" PRIu32 " unfinished requests declaring %"
                             PRIu64 " bytes; %" PRIu64 " more would pass the most a connection "
                             "may (gpuleased --max-buffered-per-connection %" PRIu64
                             "); retry later",
                             from->conn_unfinished, from->conn_unfinished_bytes, whole,
                             d->cfg.max_buffered_per_connection);
    return st;
  }
  gl_admit_refusal why;
  if (d->admit && !gl_admit_begin(d->admit, from->identity ? from->identity : "", whole, ticket,
                                  &why)) {
    st = GPULEASE_BUSY;
    if (why.by_bytes)
      gl_response_encode_error(h->op, st, b,
                               "%s has %" PRIu32 " unfinished requests declaring %" PRIu64
                               " bytes; %" PRIu64 " more would pass the most a tenant may "
                               "(gpuleased --max-buffered-per-tenant %" PRIu64 "); retry later",
                               who(from), why.requests, why.bytes, whole, why.max_bytes);
    else if (why.max_requests)
      gl_response_encode_error(h->op, st, b,
                               "%s has %" PRIu32 " unfinished requests (header in, body not), "
                               "the most a tenant may (gpuleased --max-requests-per-tenant); "
                               "retry later",
                               who(from), why.requests);
    else
      gl_response_encode_error(h->op, st = GPULEASE_INTERNAL, b, "daemon out of memory");
    return st;
  }
  return GPULEASE_OK;
}

size_t gl_daemon_on_header(void *user, const gl_req_origin *from, const uint8_t *hdr,
                           uint8_t *reply, size_t cap, void **ticket) {
  const gl_daemon *d = user;
  gl_header h;
  if (gl_header_decode(hdr, GL_WIRE_HEADER_SIZE, &h) != GPULEASE_OK ||
      h.kind != GL_WIRE_KIND_REQUEST)
    return 0;
  gl_buf b;
  gl_buf_init(&b);
  gpulease_status st = judge(d, from, &h, &b, ticket);
  if (st == GPULEASE_OK) {
    gl_buf_free(&b);
    return 0;
  }
  size_t n = b.len <= cap ? b.len : 0;
  if (n) memcpy(reply, b.data, n);
  if (n) gl_hdrlog_note(d->hdrlog, from, h.op, GL_WIRE_HEADER_SIZE, b.data, n);
  gl_buf_free(&b);
  GL_DEBUG("%s -> %s on its header (body_len %u)", gl_op_name(h.op), gpulease_status_name(st),
           h.body_len);
  return n;
}

void gl_daemon_on_header_end(void *user, void *ticket, uint64_t whole) {
  const gl_daemon *d = user;
  gl_admit_end(d->admit, ticket, whole);
}
