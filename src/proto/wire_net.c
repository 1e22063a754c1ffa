/*
 * wire_net.c - the codec of NET_INFO (docs/protocol.md): the daemon's
 * extra QUIC ports, each served by a network thread of its own, over which
 * a client stripes large transfers. Request: empty; result: the ports.
 * (gl_wire__op_NET_INFO, called by wire.c's entry points; layout in
 * wire.h.)
 */
#include "proto/wire_internal.h"

static void net_result_decode(gl_wire__rd *r, gl_response *out) {
  gl_net_info *n = &out->u.net_info;
  n->stripe_count = gl_wire__rd_u8(r, "stripe_count");
  if (gl_wire__rd_ok(r) && n->stripe_count > GL_WIRE_MAX_STRIPES)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "stripe_count %u out of range 0..%d",
                     (unsigned)n->stripe_count, GL_WIRE_MAX_STRIPES);
  for (unsigned i = 0; gl_wire__rd_ok(r) && i < n->stripe_count; i++) {
    n->stripe_ports[i] = gl_wire__rd_u16(r, "stripe_port");
    if (gl_wire__rd_ok(r) && n->stripe_ports[i] == 0)
      gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "stripe_port 0 is not a port");
  }
}

static bool net_result_valid(const gl_response *resp) {
  const gl_net_info *n = &resp->u.net_info;
  if (n->stripe_count > GL_WIRE_MAX_STRIPES) return false;
  for (unsigned i = 0; i < n->stripe_count; i++)
    if (n->stripe_ports[i] == 0) return false;
  return true;
}

static void net_result_put(gl_buf *b, const gl_response *resp) {
  const gl_net_info *n = &resp->u.net_info;
  gl_wire__put_u8(b, n->stripe_count);
  for (unsigned i = 0; i < n->stripe_count; i++) gl_wire__put_u16(b, n->stripe_ports[i]);
}

const gl_wire__codec gl_wire__op_NET_INFO = {
    .last_field = "",
    .result_decode = net_result_decode,
    .result_valid = net_result_valid,
    .result_put = net_result_put,
};
