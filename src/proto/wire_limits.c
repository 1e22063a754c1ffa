/*
 * wire_limits.c - the largest request body of each op that this release's
 * decoder accepts (docs/protocol.md section 6, "Decoder limits"), so that
 * a request whose header declares more can be refused on its header,
 * before its body is read (src/daemon/early.c). The numbers follow from
 * each op's layout (section 4) and the decoder's field limits; the unit
 * test (test_wire.c, test_body_max) holds them to the encoder.
 */
#include <stdint.h>

#include "proto/wire.h"

/* A launch's fixed fields after its session_ref (function .. param_count)
 * and its largest param list. */
#define LAUNCH_FIXED 38u
#define PARAMS GL_WIRE_MAX_LAUNCH_PARAM_BYTES
#define STR8_MAX 256u /* u8 length and 255 bytes */
#define AUTH 48u      /* lease_auth */
#define REF 64u       /* session_ref */

/* n + 1, so that 0 marks an op without an entry (internal, or forgotten:
 * the unit test checks that every network op has one). */
#define B(n) ((uint64_t)(n) + 1)
#define UNBOUNDED UINT64_MAX

static const uint64_t k_body_max[GL_OP_COUNT] = {
    [GL_OPI_GET_INVENTORY] = B(4),
    [GL_OPI_NODE_INFO] = B(0),
    [GL_OPI_NET_INFO] = B(0),
    [GL_OPI_POOL_INFO] = B(0),
    [GL_OPI_AUTHENTICATE] = B(STR8_MAX),
    [GL_OPI_LEASE_ALLOC] = B(29),
    [GL_OPI_LEASE_RENEW] = B(AUTH + 5),
    [GL_OPI_LEASE_QUERY] = B(AUTH),
    [GL_OPI_LEASE_FREE] = B(AUTH),
    [GL_OPI_SHM_ATTACH] = B(AUTH + 8),
    [GL_OPI_SHM_DETACH] = B(AUTH + 8),
    [GL_OPI_LEASE_DELEGATE] = B(AUTH + 8 + STR8_MAX),
    [GL_OPI_LEASE_REVOKE] = B(8 + STR8_MAX),
    [GL_OPI_ADMIN_UNFENCE] = B(4),
    [GL_OPI_GPU_SUBMIT] = UNBOUNDED, /* its image and input */
    [GL_OPI_SESSION_OPEN] = B(AUTH),
    [GL_OPI_SESSION_CLOSE] = B(REF),
    [GL_OPI_SYNC] = B(REF + 8),
    [GL_OPI_KERNEL_OUTPUT] = B(REF),
    [GL_OPI_TENSORMAP_ENCODE] = B(216),
    [GL_OPI_MEM_ALLOC] = B(REF + 12), /* size_bytes, flags */
    [GL_OPI_MEM_FREE] = B(REF + 8),
    [GL_OPI_MEM_WRITE] = B(REF + 20 + (uint64_t)GL_WIRE_MAX_CHUNK),
    [GL_OPI_MEM_READ] = B(REF + 20),
    [GL_OPI_MEM_COPY] = B(REF + 40),
    [GL_OPI_MEMSET] = B(REF + 29),
    [GL_OPI_MEM_WRITE_SHM] = B(REF + 40),
    [GL_OPI_MEM_READ_SHM] = B(REF + 40),
    [GL_OPI_MODULE_LOAD] = UNBOUNDED, /* its image */
    [GL_OPI_MODULE_UNLOAD] = B(REF + 8),
    [GL_OPI_FUNC_INFO] = B(REF + 10 + GL_WIRE_MAX_KERNEL_NAME),
    [GL_OPI_LAUNCH] = B(REF + LAUNCH_FIXED + PARAMS),
    [GL_OPI_LAUNCH_EX] = B(REF + LAUNCH_FIXED + 13 + PARAMS),
    [GL_OPI_BURST] = B(REF + 2 + (uint64_t)GL_WIRE_MAX_BURST * (LAUNCH_FIXED + PARAMS)),
    [GL_OPI_BATCH] = UNBOUNDED, /* up to 1024 whole messages */
    [GL_OPI_EVENT_RECORD] = B(REF + 2),
    [GL_OPI_EVENT_ELAPSED] = B(REF + 4),
    [GL_OPI_GRAPH_BEGIN] = B(REF + 17),
    [GL_OPI_GRAPH_END] = B(REF),
    [GL_OPI_GRAPH_LAUNCH] = B(REF + 8),
    [GL_OPI_GRAPH_SET_ARGS] = B(REF + 14 + PARAMS),
    [GL_OPI_GRAPH_DESTROY] = B(REF + 8),
};

uint64_t gl_request_body_max(uint16_t op) {
  const gl_op_info *i = gl_op_info_of(op);
  if (!i) return UNBOUNDED;
  uint64_t v = k_body_max[i - gl_op_table(NULL)];
  return v == 0 || v == UNBOUNDED ? UNBOUNDED : v - 1;
}

uint64_t gl_request_body_limit(uint16_t op, uint64_t max_message) {
  uint64_t whole = max_message > GL_WIRE_HEADER_SIZE ? max_message - GL_WIRE_HEADER_SIZE : 0;
  uint64_t m = gl_request_body_max(op);
  if (m == UNBOUNDED || m + GL_WIRE_BODY_HEADROOM > whole) return whole;
  return m + GL_WIRE_BODY_HEADROOM;
}
