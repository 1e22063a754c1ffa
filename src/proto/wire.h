/*
 * wire.h - the gpulease/1 wire codec: bytes in, structs out, and back.
 *
 * Pure code: no I/O, no QUIC, no allocation while decoding. Decoded structs
 * BORROW pointers into the input buffer (kernel name, image, input bytes,
 * messages, output bytes): they stay valid as long as that buffer does.
 * docs/protocol.md is the normative description of every byte; this file
 * and that document change together.
 *
 * Framing summary (all integers big-endian / network byte order):
 *
 *   A message is a 12-byte header followed by body_len bytes of body.
 *     off size field
 *       0    2 magic       'G' 'L' (0x47 0x4C)
 *       2    1 version     1
 *       3    1 kind        0 = request, 1 = response
 *       4    2 op          operation code (GL_OP_*)
 *       6    2 status      requests: 0; responses: gpulease_status
 *       8    4 body_len    bytes of body that follow
 *
 *   A response body always starts with
 *       u16 msg_len, msg_len bytes of UTF-8 message (no NUL)
 *   followed, only when status == OK, by the op's result fields.
 *
 *   Each QUIC bidirectional stream carries exactly one request (client
 *   sends it and FIN) and one response (server sends it and FIN).
 *
 * Common pieces:
 *   lease_auth := u64 lease_id, 40 bytes secret (a capability token:
 *                 u32 generation, u32 rights, u64 not_after_s,
 *                 u64 audience, 16 bytes mac; src/auth/cap.h)
 *   str8       := u8 len, len bytes         (no NUL; len <= 255)
 *   str16      := u16 len, len bytes
 *
 * Op bodies (request -> OK response result):
 *
 *   GET_INVENTORY (0x0001)
 *     request: empty, or u32 flags (bit 0: the admission block; 0.2)
 *     result : u32 max_ttl_s, str8 driver_version, u16 gpu_count (<= 64),
 *              gpu_count x { u32 index, str8 uuid, str8 name, u8 cc_major,
 *                            u8 cc_minor, u32 sm_count, u64 total_vram_bytes,
 *                            u64 free_vram_bytes, u64 leased_vram_bytes,
 *                            u32 active_leases, u32 flags,
 *                            u64 context_overhead_bytes,
 *                            u8 ptx_isa_driver_major, u8 ..._minor,
 *                            u8 ptx_isa_nvjitlink_major, u8 ..._minor },
 *              tenant_info (the caller's tenant, quota and use),
 *              with flags bit 0: u32 isolated_queue_max, u32 isolated_queue_ms,
 *              gpu_count x { u32 max_isolated_contexts, u32 isolated_contexts,
 *                            u32 leased, u32 warm, u32 spare,
 *                            u32 tearing_down, u32 queued, u32 flags }
 *
 *   LEASE_ALLOC (0x0101)
 *     request: u32 gpu_index (0xFFFFFFFF = any), u64 vram_bytes, u32 ttl_s,
 *              u8 lease_class (gpulease_lease_class, 0..3),
 *              u32 printf_fifo_bytes, u64 malloc_heap_bytes (0: default)
 *     result : lease_info
 *
 *   LEASE_RENEW (0x0102)
 *     request: lease_auth, u32 ttl_s, u8 flags (bit 0: rotate; others 0)
 *     result : lease_info (with rotate: the new secret)
 *
 *   LEASE_QUERY (0x0103)
 *     request: lease_auth
 *     result : lease_info
 *
 *   LEASE_FREE (0x0104)
 *     request: lease_auth
 *     result : empty
 *
 *   LEASE_DELEGATE (0x0107)
 *     request: lease_auth, u32 rights (1..0xFF), u32 ttl_s (0: as long as
 *              the presented secret), str8 audience ("": the presented
 *              secret's audience)
 *     result : 40 bytes secret
 *
 *   LEASE_REVOKE (0x0108)
 *     request: u64 lease_id, str8 reason
 *     result : empty
 *
 *   ADMIN_UNFENCE (0x0109)
 *     request: u32 gpu_index
 *     result : empty
 *
 *   AUTHENTICATE (0x0005)
 *     request: str8 bearer_token (1..255 bytes)
 *     result : str8 tenant
 *
 *   lease_info := u64 lease_id, 40 bytes secret (LEASE_ALLOC and a
 *                 rotating RENEW: the new secret; else 40 zero bytes),
 *                 u32 gpu_index, u64 vram_bytes, u32 ttl_s,
 *                 u64 remaining_ms, u64 submits, u8 lease_class
 *
 *   GPU_SUBMIT (0x0201)
 *     request: lease_auth,
 *              u8  image_format (gpulease_image_format, 0..3),
 *              u8  flags (bit 0: the param list below is used; bit 1:
 *                  cooperative launch; bit 2: cluster dims follow; others 0),
 *              str16 kernel_name (1..1024 bytes),
 *              u32 grid_x, grid_y, grid_z, u32 block_x, block_y, block_z,
 *              u32 shared_mem_bytes,
 *              [flags bit 2: u32 cluster_x, cluster_y, cluster_z (each >= 1)]
 *              u64 input_offset, u64 output_offset, u64 output_size,
 *              u16 param_count (<= 256),
 *              param_count x { u8 kind (1 = pointer, 2 = scalar),
 *                              pointer: u64 offset
 *                              scalar : u8 size (1..128), size bytes },
 *              u32 image_len (>= 1), image_len bytes,
 *              u32 input_len, input_len bytes
 *              The body must end exactly after the input bytes.
 *     result : u64 gpu_time_ns, u32 output_len, output_len bytes
 *
 *   Session ops (docs/protocol.md section 4, "Sessions"). Every one but
 *   SESSION_OPEN starts with
 *     session_ref := lease_auth, u64 session_id, u64 seq
 *   (seq 0: run after the ops already received; else 1, 2, 3 ... in the
 *   order the client issued them; the worker runs them in seq order).
 *   SESSION_OPEN  (0x0301) req: lease_auth            -> u64 session_id
 *   SESSION_CLOSE (0x0302) req: session_ref           -> empty
 *   SYNC          (0x0303) req: session_ref, u64 ack_seq
 *                          -> u16 error_status, u16 error_op, u64 error_seq
 *   TENSORMAP_ENCODE (0x0305) req: session_ref, u32 data_type (0..12),
 *                          u32 rank (1..5), u64 buffer, u64 offset,
 *                          u64 global_dim[5], u64 global_strides[4],
 *                          u32 box_dim[5], u32 element_strides[5],
 *                          u32 interleave, u32 swizzle, u32 l2_promotion,
 *                          u32 oob_fill (slots past rank, and strides past
 *                          rank - 1, are 0) -> 128 bytes: the tensor map
 *   MEM_ALLOC     (0x0311) req: session_ref, u64 size_bytes (>= 1),
 *                          [u32 flags (0.2; absent: 0): GL_MEM_ALLOC_F_*]
 *                          -> u64 buffer, u64 region_offset,
 *                             [flags bit 0: u64 device_address]
 *   MEM_FREE      (0x0312) req: session_ref, u64 buffer -> empty
 *   MEM_WRITE     (0x0313) req: session_ref, u64 buffer, u64 offset,
 *                          u32 data_len (1..GL_WIRE_MAX_CHUNK), data -> empty
 *   MEM_READ      (0x0314) req: session_ref, u64 buffer, u64 offset,
 *                          u32 size_bytes (1..GL_WIRE_MAX_CHUNK)
 *                          -> u32 data_len, data
 *   MEM_COPY      (0x0315) req: session_ref, u64 dst_buffer, u64 dst_offset,
 *                          u64 src_buffer, u64 src_offset, u64 size_bytes (>= 1)
 *                          -> empty
 *   MEMSET        (0x0316) req: session_ref, u64 buffer, u64 offset,
 *                          u8 element_size (1, 2, 4), u32 value (fits the
 *                          element), u64 count (>= 1 elements) -> empty
 *   MODULE_LOAD   (0x0321) req: session_ref, u8 image_format (0..3),
 *                          u32 image_len (>= 1), image
 *                          -> u64 module, u8 cache (GL_MODULE_CACHE_*)
 *   MODULE_UNLOAD (0x0322) req: session_ref, u64 module -> empty
 *   FUNC_INFO     (0x0323) req: session_ref, u64 module, str16 kernel_name
 *                          -> u64 function, u32 num_regs,
 *                          u32 max_threads_per_block, u32 static_shared_bytes,
 *                          u32 local_bytes, u32 const_bytes, u32 ptx_version,
 *                          u32 binary_version, u16 param_count (0..256, or
 *                          0xFFFF unknown), param_count x u16 param size
 *   LAUNCH        (0x0331) req: session_ref, u64 function, u32 grid[3],
 *                          u32 block[3], u32 shared_mem_bytes,
 *                          u16 param_count (<= 256),
 *                          param_count x { u8 kind (1 = buffer, 2 = scalar),
 *                                          buffer: u64 buffer, u64 offset
 *                                          scalar: u8 size (1..128), bytes },
 *                          (list <= GL_WIRE_MAX_LAUNCH_PARAM_BYTES) -> empty
 *   LAUNCH_EX     (0x0332) req: session_ref, u64 function, u32 grid[3],
 *                          u32 block[3], u32 shared_mem_bytes, u8 flags
 *                          (bit 0: cooperative; others 0), u32 cluster[3]
 *                          (all 0: no cluster; else each >= 1), u16
 *                          param_count, params as LAUNCH's -> empty
 *   BURST         (0x0333) req: session_ref, u16 count (1..GL_WIRE_MAX_BURST),
 *                          count x { u64 function, u32 grid[3], u32 block[3],
 *                          u32 shared_mem_bytes, u16 param_count, params as
 *                          LAUNCH's } -> empty
 *   EVENT_RECORD  (0x0351) req: session_ref, u16 event (< GL_WIRE_MAX_EVENTS)
 *                          -> empty
 *   EVENT_ELAPSED (0x0352) req: session_ref, u16 start_event, u16 end_event
 *                          -> u64 elapsed_ns
 *   GRAPH_BEGIN   (0x0361) req: session_ref, u8 flags (bit 0: WHILE loop),
 *                          u64 flag_buffer, u64 flag_offset (bit 0 clear:
 *                          both 0) -> empty
 *   GRAPH_END     (0x0362) req: session_ref -> u64 graph, u32 kernel_nodes,
 *                          u32 ops
 *   GRAPH_LAUNCH  (0x0363) req: session_ref, u64 graph -> empty
 *   GRAPH_SET_ARGS (0x0364) req: session_ref, u64 graph, u32 node,
 *                          u16 param_count, params as LAUNCH's -> empty
 *   GRAPH_DESTROY (0x0365) req: session_ref, u64 graph -> empty
 *   BATCH         (0x0340) req: session_ref (the first op's), u16 count
 *                          (1..1024), count x { u32 len, len bytes: a whole
 *                          request message of a session op but SESSION_OPEN
 *                          and BATCH, same lease and session, seq = the
 *                          batch's + index, or all 0 }
 *                          -> u16 count, count x { u32 len, a whole response }
 *
 *   Internal ops (worker IPC only; the daemon refuses them from the network
 *   with UNSUPPORTED):
 *   WORKER_INIT (0x7F01)
 *     request: u32 cuda_ordinal, u64 vram_bytes, u64 lease_id, u8 flags
 *              (bit 0: shared worker), u32 printf_fifo_bytes,
 *              u64 malloc_heap_bytes, str8 gpu_uuid (<= 95; "": the
 *              ordinal alone)
 *     result : u64 region_base (device address), str8 device_name
 *   WORKER_RELEASE (0x7F07): one lease of a shared worker ends
 *     request: u64 lease_id
 *     result : empty
 *   WORKER_PROBE (0x7F02)
 *     request: empty
 *     result : u16 count, count x { str8 uuid, str8 name, u8 cc_major,
 *              u8 cc_minor, u32 sm_count, u64 total_vram_bytes },
 *              u32 cuda_driver_version, u8 ptx_isa_driver_major, u8 ..._minor,
 *              u8 ptx_isa_nvjitlink_major, u8 ..._minor
 *              (count may be 0; status NO_DEVICE with a message when the
 *               CUDA driver cannot be loaded or initialised)
 *   WORKER_LOST (0x7F03): a notice from the worker (tag 0), not a reply
 *     request: empty (never sent)
 *     result : u16 count (<= 64), count x { u64 session_id (!= 0),
 *              u16 status (1..99), u16 op, u64 seq, u16 msg_len, msg }
 *              (the message is the reason the context was lost)
 *   WORKER_HELD (0x7F08): a notice from the worker (tag 0), not a reply
 *     request: empty (never sent)
 *     result : u64 lease_id, u64 module_bytes, u64 local_bytes (the device
 *              memory the lease's modules and kernels' local memory make
 *              the context hold beyond its region, now)
 *
 * Limits: a decoder rejects a header whose version is not 1 (UNSUPPORTED),
 * a bad magic or kind (MALFORMED), a body_len different from the bytes
 * present (MALFORMED: truncated or trailing bytes), body_len above the
 * caller's max (TOO_LARGE), an unknown op (UNSUPPORTED), any field that runs
 * past the body, or trailing bytes after the last field (MALFORMED), and
 * out-of-range fields listed above (INVALID_ARGUMENT).
 */
#ifndef GL_PROTO_WIRE_H
#define GL_PROTO_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpulease/gpulease.h"

#define GL_WIRE_MAGIC0 0x47 /* 'G' */
#define GL_WIRE_MAGIC1 0x4C /* 'L' */
#define GL_WIRE_VERSION 1
#define GL_WIRE_HEADER_SIZE 12
#define GL_WIRE_KIND_REQUEST 0
#define GL_WIRE_KIND_RESPONSE 1
#define GL_WIRE_ALPN "gpulease/1"

#define GL_WIRE_MAX_KERNEL_NAME 1024
#define GL_WIRE_MAX_MESSAGE 65535
/* Largest encoded GPU_SUBMIT param list (kind bytes, sizes and values). */
#define GL_WIRE_MAX_PARAM_BYTES 4096
/* Largest encoded LAUNCH param list. */
#define GL_WIRE_MAX_LAUNCH_PARAM_BYTES 16384
/* Largest MEM_WRITE data / MEM_READ size in one op (64 MiB); larger
 * transfers are several ops. */
#define GL_WIRE_MAX_CHUNK (64u << 20)
/* SYNC ack_seq that acknowledges whatever failure is pending (the failure
 * of an op sent with seq 0 has no seq to name). */
#define GL_SYNC_ACK_ANY UINT64_MAX

/* FUNC_INFO param_count when the driver cannot report the sizes. */
#define GL_WIRE_PARAMS_UNKNOWN 0xFFFF

/* MODULE_LOAD result `cache`. */
#define GL_MODULE_CACHE_LOADED 0   /* loaded now (PTX JIT-compiled now) */
#define GL_MODULE_CACHE_CONTEXT 1  /* already loaded in the lease's context */
#define GL_MODULE_CACHE_DISK 2     /* JIT result taken from the disk cache */

/* LAUNCH param kinds. */
#define GL_LAUNCH_PARAM_BUFFER 1
#define GL_LAUNCH_PARAM_SCALAR 2

/* The op codes, one per row of the op table (src/proto/ops.def). */
enum gl_op {
#define GL_OP(NAME, CODE, ...) GL_OP_##NAME = CODE,
#include "proto/ops.def"
#undef GL_OP
};

/* Each op's index in the op table, 0 .. GL_OP_COUNT - 1. */
enum gl_op_index {
#define GL_OP(NAME, ...) GL_OPI_##NAME,
#include "proto/ops.def"
#undef GL_OP
  GL_OP_COUNT
};

/* The local socket's path in NODE_INFO (sun_path holds 108 bytes). */
#define GL_WIRE_MAX_SOCKET_PATH 107
/* A shared memory segment (SHM_ATTACH) and one MEM_*_SHM copy at most. */
#define GL_WIRE_MAX_SEGMENT (1ull << 40)
#define GL_WIRE_MAX_SHM_COPY (1ull << 32)

/* Ops in one BATCH at most, and the bytes its MEM_READs may ask for. */
#define GL_WIRE_MAX_BATCH 1024
#define GL_WIRE_MAX_BATCH_READ_BYTES (16u << 20)

/* Launches in one BURST at most; event slots of a session. */
#define GL_WIRE_MAX_BURST 4096
#define GL_WIRE_MAX_EVENTS 256

/* GRAPH_BEGIN flags. */
#define GL_GRAPH_F_WHILE 0x01

/* LAUNCH_EX flags. */
#define GL_LAUNCH_EX_COOPERATIVE 0x01

/* Sessions a WORKER_LOST notice lists at most (a lease's open sessions). */
#define GL_WIRE_MAX_LOST_SESSIONS 64

/* Bytes a request body may run past the largest this release decodes and
 * still be read (and then refused UNSUPPORTED, "a field of a newer
 * release": docs/protocol.md, "Compatibility"), rather than refused on
 * its header as TOO_LARGE. */
#define GL_WIRE_BODY_HEADROOM 4096u

/* The largest request body of op that this release's decoder accepts
 * (its layout and the decoder's field limits, docs/protocol.md sections 4
 * and 6: a LEASE_QUERY's 48 bytes, a MEM_WRITE's 84 + 64 MiB), or
 * UINT64_MAX where only the message limit bounds it (GPU_SUBMIT,
 * MODULE_LOAD and BATCH, whose images and entries may be any size), for
 * an op code of no row, and for the internal ops. Pure; any thread. */
uint64_t gl_request_body_max(uint16_t op);

/* The most body_len a daemon whose whole requests are at most
 * max_message bytes (header included) reads for op: gl_request_body_max
 * plus GL_WIRE_BODY_HEADROOM, and never more than max_message - 12 (that
 * alone where op's body has no bound of its own). Pure; any thread. */
uint64_t gl_request_body_limit(uint16_t op, uint64_t max_message);

/* Returns "GPU_SUBMIT" etc., or "UNKNOWN". Static string. */
const char *gl_op_name(uint16_t op);

/* ---- the op table (src/proto/ops.def, optable.c) ------------------------ */

/* Who may send an op (ops.def's SERVED column). */
typedef enum gl_op_served {
  GL_OP_SERVED_NET,      /* QUIC and the local socket */
  GL_OP_SERVED_LOCAL,    /* the local socket only (it carries a file descriptor) */
  GL_OP_SERVED_INTERNAL, /* the daemon and its workers only */
} gl_op_served;

/* What an op's request names (TARGET). */
typedef enum gl_op_target {
  GL_OP_TARGET_NONE,    /* nothing: node ops, LEASE_ALLOC, admin ops, internal ops */
  GL_OP_TARGET_LEASE,   /* a lease_auth */
  GL_OP_TARGET_SESSION, /* a session_ref (whose auth names the lease) */
} gl_op_target;

/* Where an op runs (WHERE). */
typedef enum gl_op_where {
  GL_OP_WHERE_DAEMON, /* the daemon's network process */
  GL_OP_WHERE_WORKER, /* the lease's worker, which holds the CUDA context */
} gl_op_where;

/* Op flags (FLAGS). */
#define GL_OPF_SESSION 0x01u /* a session op, ordered by seq */
#define GL_OPF_BATCH 0x02u   /* may ride in a BATCH */
#define GL_OPF_AUDIT 0x04u   /* every answer is audited (else only refusals) */
#define GL_OPF_LATE 0x08u    /* body checked by the worker: refusals consume the seq */

/* One row of the op table. */
typedef struct gl_op_info {
  uint16_t code;
  const char *name;  /* "MEM_ALLOC": logs, metrics labels, the CLI */
  gl_op_served served;
  gl_op_target target;
  size_t ref;        /* offsetof(gl_request, <REF>) where target != NONE */
  uint32_t rights;   /* GPULEASE_RIGHT_* a token needs (BATCH: see access.c) */
  gl_op_where where;
  unsigned flags;    /* GL_OPF_* */
  const char *since; /* the release that added it, "0.1" */
} gl_op_info;

/* True for the internal op codes, 0x7F00..0x7FFF (rows or not): never
 * served over the network (docs/protocol.md section 4). */
static inline bool gl_op_code_internal(uint16_t op) { return (op & 0xFF00) == 0x7F00; }

/* The row of op, or NULL for a code no row has. Constant time. */
const gl_op_info *gl_op_info_of(uint16_t op);

/* The whole table, in ops.def's order (index = enum gl_op_index); *n gets
 * GL_OP_COUNT. Static storage. */
const gl_op_info *gl_op_table(size_t *n);

/* ---- growable output buffer -------------------------------------------- */

typedef struct gl_buf {
  uint8_t *data;
  size_t len;
  size_t cap;
  bool oom; /* set once an allocation failed; further writes are dropped */
} gl_buf;

void gl_buf_init(gl_buf *b);
void gl_buf_free(gl_buf *b);
/* Takes ownership of b->data (malloc'd; caller frees) and resets b. */
uint8_t *gl_buf_steal(gl_buf *b, size_t *len);

/* ---- header ------------------------------------------------------------- */

typedef struct gl_header {
  uint8_t version;
  uint8_t kind;
  uint16_t op;
  uint16_t status;
  uint32_t body_len;
} gl_header;

/* Decodes the first GL_WIRE_HEADER_SIZE bytes of p. Returns GPULEASE_OK,
 * GPULEASE_MALFORMED (len < 12, bad magic, bad kind) or GPULEASE_UNSUPPORTED
 * (version != 1). On UNSUPPORTED, *h is still filled so the caller can echo
 * the op. */
gpulease_status gl_header_decode(const uint8_t *p, size_t len, gl_header *h);

/* gl_header_decode, with the refusal's text of docs/protocol.md section 6
 * ("bad magic 0x...", "unsupported protocol version N ...", "bad kind N
 * ...") written to err (errlen bytes, NUL-terminated; "" on success). */
gpulease_status gl_header_decode_msg(const uint8_t *p, size_t len, gl_header *h, char *err,
                                     size_t errlen);

/* ---- decoded structures -------------------------------------------------- */

typedef struct gl_lease_auth {
  uint64_t lease_id;
  uint8_t secret[GPULEASE_SECRET_BYTES];
} gl_lease_auth;

typedef struct gl_lease_alloc_req {
  uint32_t gpu_index;
  uint64_t vram_bytes;
  uint32_t ttl_s;
  uint8_t lease_class;        /* gpulease_lease_class */
  uint32_t printf_fifo_bytes; /* 0: the daemon's default */
  uint64_t malloc_heap_bytes; /* 0: the daemon's default */
} gl_lease_alloc_req;

typedef struct gl_lease_renew_req {
  gl_lease_auth auth;
  uint32_t ttl_s;
  uint8_t flags; /* GL_RENEW_F_* */
} gl_lease_renew_req;
#define GL_RENEW_F_ROTATE 0x01 /* bump the generation: older secrets become void */

/* The longest str8 (tenant names, bearer tokens, reasons) plus a NUL. */
#define GL_WIRE_STR8_CAP 256

typedef struct gl_lease_delegate_req {
  gl_lease_auth auth;
  uint32_t rights;                  /* GPULEASE_RIGHT_* bits, 1..0xFF */
  uint32_t ttl_s;                   /* 0: as long as auth's secret */
  char audience[GL_WIRE_STR8_CAP];  /* the tenant that may use it; "": the presented
                                       secret's (the lease's own for a root secret) */
} gl_lease_delegate_req;

typedef struct gl_lease_revoke_req {
  uint64_t lease_id;
  char reason[GL_WIRE_STR8_CAP];
} gl_lease_revoke_req;

typedef struct gl_admin_unfence_req {
  uint32_t gpu_index;
} gl_admin_unfence_req;

typedef struct gl_authenticate_req {
  char token[GL_WIRE_STR8_CAP]; /* 1..255 bytes */
} gl_authenticate_req;

typedef struct gl_submit_req {
  gl_lease_auth auth;
  uint8_t image_format;
  uint8_t flags; /* GL_SUBMIT_F_PARAMS */
  const char *kernel_name; /* borrowed, NOT NUL-terminated */
  uint16_t kernel_name_len;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_mem_bytes;
  uint32_t cluster[3]; /* with GL_SUBMIT_F_CLUSTER: blocks a cluster, each >= 1 */
  uint64_t input_offset;
  uint64_t output_offset;
  uint64_t output_size;
  uint16_t param_count;
  const uint8_t *params_raw; /* borrowed: the encoded param list */
  size_t params_raw_len;
  const uint8_t *image; /* borrowed */
  uint32_t image_len;
  const uint8_t *input; /* borrowed */
  uint32_t input_len;
} gl_submit_req;
#define GL_SUBMIT_F_PARAMS 0x01      /* the param list is used */
#define GL_SUBMIT_F_COOPERATIVE 0x02 /* a cooperative launch (grid-wide sync) */
#define GL_SUBMIT_F_CLUSTER 0x04     /* cluster dimensions follow shared_mem_bytes */
#define GL_SUBMIT_F_KOUT 0x08        /* the OK result carries the kernel output */
#define GL_SUBMIT_F_ALL 0x0F

/* One decoded kernel parameter (see gl_param_next). */
typedef struct gl_param {
  uint8_t kind;  /* GPULEASE_PARAM_POINTER or GPULEASE_PARAM_SCALAR */
  uint8_t size;  /* scalar size in bytes */
  uint64_t offset; /* pointer offset */
  const uint8_t *value; /* scalar bytes, borrowed */
} gl_param;

/* Iterates over a submit request's already validated param list:
 *   size_t pos = 0; gl_param p; while (gl_param_next(req, &pos, &p)) ...
 * Returns false at the end. */
bool gl_param_next(const gl_submit_req *req, size_t *pos, gl_param *out);

/* ---- session ops ---- */

/* True for the session ops (SESSION_OPEN .. LAUNCH). */
bool gl_op_is_session(uint16_t op);

/* The lease an encoded request for a worker acts on, without decoding it:
 * every op the op table has running in a worker on a lease (GPU_SUBMIT,
 * SHM_ATTACH, SHM_DETACH and the session ops, whose session_ref starts
 * with the lease_auth) has its lease_id in the body's first 8 bytes. False
 * for other ops or a message too short. */
bool gl_request_peek_lease(const uint8_t *msg, size_t len, uint64_t *lease_id);

/* The op of an encoded message (a request, a response or a BATCH entry)
 * from its header; 0 when the header cannot be read (short, bad magic or
 * version). */
uint16_t gl_message_peek_op(const uint8_t *msg, size_t len);

/* The session id of an OK SESSION_OPEN response (len bytes, the whole
 * message), read from its result. False for anything else: another op, an
 * error, a body of the wrong length, an id of 0. */
bool gl_response_peek_session_id(const uint8_t *msg, size_t len, uint64_t *session_id);

typedef struct gl_session_ref {
  gl_lease_auth auth;
  uint64_t session_id;
  uint64_t seq; /* 0 = after the ops already received */
} gl_session_ref;

typedef struct gl_sync_req {
  gl_session_ref s;
  uint64_t ack_seq; /* 0 = acknowledge nothing */
} gl_sync_req;

/* MEM_ALLOC's request flags (u32 after size_bytes, added in 0.2; absent:
 * 0, the previous release's 72-byte body). */
#define GL_MEM_ALLOC_F_ADDRESS 0x1u /* append the buffer's device address to the result */

typedef struct gl_mem_alloc_req {
  gl_session_ref s;
  uint64_t size_bytes;
  /* flags, present or not (a 72-byte body: flags 0); has_flags makes the
   * encoder write them, so a decoded request re-encodes to its bytes. */
  bool has_flags;
  uint32_t flags; /* GL_MEM_ALLOC_F_* */
} gl_mem_alloc_req;

/* MEM_FREE and MODULE_UNLOAD: one handle. */
typedef struct gl_handle_req {
  gl_session_ref s;
  uint64_t handle;
} gl_handle_req;

typedef struct gl_mem_write_req {
  gl_session_ref s;
  uint64_t buffer;
  uint64_t offset;
  const uint8_t *data; /* borrowed */
  uint32_t data_len;
} gl_mem_write_req;

typedef struct gl_mem_read_req {
  gl_session_ref s;
  uint64_t buffer;
  uint64_t offset;
  uint32_t size_bytes;
} gl_mem_read_req;

typedef struct gl_mem_copy_req {
  gl_session_ref s;
  uint64_t dst_buffer, dst_offset;
  uint64_t src_buffer, src_offset;
  uint64_t size_bytes;
} gl_mem_copy_req;

typedef struct gl_memset_req {
  gl_session_ref s;
  uint64_t buffer;
  uint64_t offset;
  uint8_t element_size; /* 1, 2 or 4 */
  uint32_t value;
  uint64_t count; /* elements */
} gl_memset_req;

/* TENSORMAP_ENCODE: cuTensorMapEncodeTiled's arguments, the address as a
 * buffer of the session and an offset in it. Fixed slots: entries past
 * rank (strides: past rank - 1) are 0 on the wire. */
#define GL_TMAP_MAX_RANK 5
#define GL_TMAP_BYTES 128          /* a CUtensorMap */
#define GL_TMAP_MAX_DATA_TYPE 12   /* CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ */
typedef struct gl_tmap_req {
  gl_session_ref s;
  uint32_t data_type; /* CUtensorMapDataType, 0..12 */
  uint32_t rank;      /* 1..5 */
  uint64_t buffer;
  uint64_t offset;                               /* bytes into the buffer */
  uint64_t global_dim[GL_TMAP_MAX_RANK];         /* elements */
  uint64_t global_strides[GL_TMAP_MAX_RANK - 1]; /* bytes, of dimensions 1.. */
  uint32_t box_dim[GL_TMAP_MAX_RANK];            /* elements */
  uint32_t element_strides[GL_TMAP_MAX_RANK];
  uint32_t interleave, swizzle, l2_promotion, oob_fill; /* CUDA's enums */
} gl_tmap_req;

typedef struct gl_module_load_req {
  gl_session_ref s;
  uint8_t image_format;
  const uint8_t *image; /* borrowed */
  uint32_t image_len;
} gl_module_load_req;

typedef struct gl_func_info_req {
  gl_session_ref s;
  uint64_t module;
  const char *kernel_name; /* borrowed, NOT NUL-terminated */
  uint16_t kernel_name_len;
} gl_func_info_req;

/* LAUNCH and LAUNCH_EX (flags and cluster: 0 for LAUNCH), and one launch
 * of a BURST (gl_burst_next; its session_ref is the BURST's). */
typedef struct gl_launch_req {
  gl_session_ref s;
  uint64_t function;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_mem_bytes;
  uint8_t flags;       /* LAUNCH_EX: GL_LAUNCH_EX_COOPERATIVE */
  uint32_t cluster[3]; /* LAUNCH_EX: 0,0,0 = no cluster, else each >= 1 */
  uint16_t param_count;
  const uint8_t *params_raw; /* borrowed: the encoded, validated list */
  size_t params_raw_len;
} gl_launch_req;

/* BURST: count launches, each LAUNCH's body after the session_ref. */
typedef struct gl_burst_req {
  gl_session_ref s;
  uint16_t count;
  const uint8_t *launches; /* borrowed: the encoded, validated launches */
  size_t launches_len;
  /* The list is known to be well formed: gl_request_decode walked it
   * (and sets this), or an encoder's caller built it checking each launch
   * as gl_burst_add would (the encoder then does not walk it again, but
   * still checks count and the pointer). gl_request_decode_ref leaves it
   * false: see gl_burst_check. */
  bool checked;
} gl_burst_req;

/* Walks a BURST's list that gl_request_decode_ref left unchecked, with
 * gl_request_decode's checks and statuses, the reason in err ("BURST: ...",
 * err may be NULL):
 *   INVALID_ARGUMENT  count out of 1..4096, or a launch's field out of its
 *                     limits (the message names it: "launch[3].param_count");
 *   MALFORMED         the list ends inside one of the count launches;
 *   UNSUPPORTED       bytes after the last launch: a field of a newer
 *                     release (docs/protocol.md section 2, "Compatibility":
 *                     "BURST: N bytes after the last field this daemon
 *                     knows (launches): ...").
 * Sets b->checked on success. OK at once when checked. */
gpulease_status gl_burst_check(gl_burst_req *b, char *err, size_t errlen);

/* Walks a decoded BURST's launches:
 *   size_t pos = 0; gl_launch_req l; while (gl_burst_next(b, &pos, &l)) ...
 * l.s is the BURST's session_ref, flags and cluster 0. False at the end. */
bool gl_burst_next(const gl_burst_req *b, size_t *pos, gl_launch_req *out);

/* Appends one launch (function, dims, shared memory, params; l->s, flags
 * and cluster are not encoded) to a BURST's list, for encoders: the caller
 * points launches/launches_len/count at the result. OK, INVALID_ARGUMENT
 * (a bad param list: nothing appended) or NO_MEMORY. */
gpulease_status gl_burst_add(gl_buf *list, const gl_launch_req *l);

/* GRAPH_BEGIN. */
typedef struct gl_graph_begin_req {
  gl_session_ref s;
  uint8_t flags;         /* GL_GRAPH_F_WHILE */
  uint64_t flag_buffer;  /* WHILE: the buffer holding the loop's u32 flag */
  uint64_t flag_offset;  /*   and its offset in it */
} gl_graph_begin_req;

/* GRAPH_LAUNCH, GRAPH_DESTROY (graph), GRAPH_SET_ARGS (all: the launch's
 * param list, as gl_launch_req's, in `args`). */
typedef struct gl_graph_req {
  gl_session_ref s;
  uint64_t graph;
  uint32_t node;
  gl_launch_req args; /* GRAPH_SET_ARGS: param_count, params_raw(_len) */
} gl_graph_req;

/* EVENT_RECORD (event) and EVENT_ELAPSED (event = start, end_event). */
typedef struct gl_event_req {
  gl_session_ref s;
  uint16_t event;
  uint16_t end_event;
} gl_event_req;

/* BATCH: the ops, each a whole request message behind a u32 length. */
typedef struct gl_batch_req {
  gl_session_ref s; /* the first op's session_ref (seq: its seq, or 0) */
  uint16_t count;
  const uint8_t *ops; /* borrowed: count x { u32 len, message } */
  size_t ops_len;
  /* The count entries as the BATCH's decoder decoded them, their pointers
   * borrowing ops (gl_request_decode_entries; the worker's copy after
   * attach), or NULL: decode them from ops. Never encoded, and not carried
   * by gl_request_detach (the worker's channel carries the entries after
   * the BATCH's decoded request: worker_proc.c). */
  const struct gl_request *entries;
} gl_batch_req;

/* Walks a BATCH's list of messages (requests or replies):
 *   size_t pos = 0; const uint8_t *m; size_t n;
 *   while (gl_batch_next(list, list_len, &pos, &m, &n)) ...
 * Returns false at the end (or at a length running past it). */
bool gl_batch_next(const uint8_t *list, size_t list_len, size_t *pos, const uint8_t **msg,
                   size_t *len);

/* One decoded LAUNCH parameter (see gl_launch_param_next). */
typedef struct gl_launch_param {
  uint8_t kind;   /* GL_LAUNCH_PARAM_BUFFER or GL_LAUNCH_PARAM_SCALAR */
  uint8_t size;   /* scalar bytes */
  uint64_t buffer, offset; /* buffer param */
  const uint8_t *value;    /* scalar bytes, borrowed */
} gl_launch_param;

/* Iterates over a decoded LAUNCH request's param list, like gl_param_next. */
bool gl_launch_param_next(const gl_launch_req *req, size_t *pos, gl_launch_param *out);

/* Appends one LAUNCH param to out (for encoders): kind BUFFER uses
 * buffer/offset, SCALAR size (1..128) and value. OK, INVALID_ARGUMENT or
 * NO_MEMORY. */
gpulease_status gl_launch_param_put(gl_buf *out, const gl_launch_param *p);

/* SHM_ATTACH: the segment itself travels as a file descriptor beside the
 * message (SCM_RIGHTS), never in it. */
typedef struct gl_shm_attach_req {
  gl_lease_auth auth;
  uint64_t size_bytes;
} gl_shm_attach_req;

typedef struct gl_shm_detach_req {
  gl_lease_auth auth;
  uint64_t segment;
} gl_shm_detach_req;

/* MEM_WRITE_SHM, MEM_READ_SHM: size_bytes between a buffer and a segment. */
typedef struct gl_mem_shm_req {
  gl_session_ref s;
  uint64_t buffer, offset;
  uint64_t segment, segment_offset;
  uint64_t size_bytes;
} gl_mem_shm_req;

/* WORKER_INIT flags. */
#define GL_WORKER_INIT_SHARED 0x01u /* the worker serves several shared leases */

typedef struct gl_worker_init_req {
  uint32_t cuda_ordinal;
  uint64_t vram_bytes;
  uint64_t lease_id;          /* the lease the region is for */
  uint8_t flags;              /* GL_WORKER_INIT_* */
  uint32_t printf_fifo_bytes; /* the context's limits (first init only) */
  uint64_t malloc_heap_bytes;
  /* The GPU's UUID ("GPU-..."), which the worker binds to whatever its own
   * CUDA ordinal for it is; "" (an emulated GPU, a MIG instance): the
   * ordinal alone. WORKER_INIT and WORKER_WARM. */
  char gpu_uuid[96];
} gl_worker_init_req;

/* GET_INVENTORY's request: flags, present or not (an empty body, the
 * previous release's: flags 0). */
typedef struct gl_inventory_req {
  bool has_flags;
  uint32_t flags; /* GL_INVENTORY_F_* */
} gl_inventory_req;

typedef struct gl_request {
  uint16_t op;
  union {
    gl_inventory_req inventory;   /* GET_INVENTORY */
    gl_lease_alloc_req alloc;     /* LEASE_ALLOC */
    gl_lease_renew_req renew;     /* LEASE_RENEW */
    gl_lease_delegate_req delegate; /* LEASE_DELEGATE */
    gl_lease_revoke_req revoke;   /* LEASE_REVOKE */
    gl_authenticate_req authenticate; /* AUTHENTICATE */
    gl_admin_unfence_req unfence; /* ADMIN_UNFENCE */
    gl_lease_auth auth;           /* LEASE_QUERY, LEASE_FREE */
    gl_submit_req submit;         /* GPU_SUBMIT */
    gl_worker_init_req worker_init; /* WORKER_INIT; WORKER_WARM: cuda_ordinal only;
                                       WORKER_RELEASE: lease_id only */
    /* SESSION_OPEN uses auth above. */
    gl_session_ref session;       /* SESSION_CLOSE */
    gl_sync_req sync;             /* SYNC */
    gl_mem_alloc_req mem_alloc;   /* MEM_ALLOC */
    gl_handle_req handle;         /* MEM_FREE, MODULE_UNLOAD */
    gl_mem_write_req mem_write;   /* MEM_WRITE */
    gl_mem_read_req mem_read;     /* MEM_READ */
    gl_mem_copy_req mem_copy;     /* MEM_COPY */
    gl_memset_req memset;         /* MEMSET */
    gl_tmap_req tmap;             /* TENSORMAP_ENCODE */
    gl_module_load_req module_load; /* MODULE_LOAD */
    gl_func_info_req func_info;   /* FUNC_INFO */
    gl_launch_req launch;         /* LAUNCH, LAUNCH_EX */
    gl_burst_req burst;           /* BURST */
    gl_event_req event;           /* EVENT_RECORD, EVENT_ELAPSED */
    gl_graph_begin_req graph_begin; /* GRAPH_BEGIN */
    gl_graph_req graph;           /* GRAPH_LAUNCH, GRAPH_SET_ARGS, GRAPH_DESTROY;
                                     GRAPH_END: s only */
    gl_batch_req batch;           /* BATCH */
    gl_shm_attach_req shm_attach; /* SHM_ATTACH */
    gl_shm_detach_req shm_detach; /* SHM_DETACH */
    gl_mem_shm_req mem_shm;       /* MEM_WRITE_SHM, MEM_READ_SHM */
  } u;
} gl_request;

/* The session part of any decoded session request other than SESSION_OPEN
 * (whose lease_auth is r->u.auth); NULL for other ops. */
const gl_session_ref *gl_request_session(const gl_request *r);

/* The lease_auth of any decoded request that names a lease (the op
 * table's TARGET LEASE or SESSION: the session_ref's auth); NULL for the
 * ops that name none. Points into *r. */
const gl_lease_auth *gl_request_auth(const gl_request *r);

/* Decode once: a request decoded in one process (the daemon) travels to
 * another (its worker, the same program) as its message's bytes plus the
 * gl_request itself, whose borrowed pointers (ops.def's GL_OP_PTR rows)
 * are made offsets into the message first and pointers into the
 * receiver's copy after. gl_request_detach: every borrowed pointer of r,
 * which must point into msg[0..len], becomes its offset + 1 (NULL stays
 * 0); INVALID_ARGUMENT (r partly changed) for one outside. gl_request_attach:
 * the reverse onto the receiver's copy of the message (len bytes);
 * INVALID_ARGUMENT for an op the table lacks or an offset past len. */
gpulease_status gl_request_detach(gl_request *r, const uint8_t *msg, size_t len);
gpulease_status gl_request_attach(gl_request *r, const uint8_t *msg, size_t len);

/* Appends a whole message (len bytes, copied; len < 4 GiB) behind its u32
 * length to a BATCH's list of requests or replies. On failure list->oom. */
void gl_batch_append(gl_buf *list, const uint8_t *msg, size_t len);

/* Appends op (an op the op table marks BATCH: a session op but
 * SESSION_OPEN, BATCH and the internal ones), encoded behind its
 * u32 length, to a BATCH's list. OK, INVALID_ARGUMENT (nothing appended)
 * or NO_MEMORY. */
gpulease_status gl_batch_add(gl_buf *list, const gl_request *op);

typedef struct gl_gpu_entry {
  uint32_t index;
  char uuid[96];  /* NUL-terminated copy; longer str8 is INVALID_ARGUMENT */
  char name[96];
  uint8_t cc_major, cc_minor;
  uint32_t sm_count;
  uint64_t total_vram_bytes;
  uint64_t free_vram_bytes;
  uint64_t leased_vram_bytes;
  uint32_t active_leases;
  uint32_t flags;
  uint64_t context_overhead_bytes;
  /* The newest PTX ISA (major, minor) the node loads for it: through the
   * driver's JIT, and through nvJitLink (0, 0: none). */
  uint8_t ptx_isa_driver[2], ptx_isa_nvjitlink[2];
} gl_gpu_entry;

/* The caller's tenant in the inventory: its quota (UINT*_MAX: unlimited)
 * and what it uses now. */
typedef struct gl_tenant_info {
  char tenant[GL_WIRE_STR8_CAP]; /* "" anonymous */
  uint32_t flags;                /* GPULEASE_TENANT_* */
  uint64_t quota_vram_bytes;
  uint32_t quota_leases, quota_sessions, quota_max_ttl_s;
  uint64_t quota_gpu_seconds_per_hour;
  uint64_t used_vram_bytes;
  uint32_t used_leases, used_sessions;
  uint64_t used_gpu_seconds; /* in the last hour */
} gl_tenant_info;

/* A GPU's admission of isolated CUDA contexts (GET_INVENTORY flags bit 0;
 * docs/protocol.md "Isolated contexts"). */
typedef struct gl_gpu_admission {
  uint32_t max_isolated_contexts; /* the limit (the flag, or learned lower) */
  uint32_t isolated_contexts;     /* counted now: all below */
  uint32_t leased, warm, spare, tearing_down;
  uint32_t queued;                /* LEASE_ALLOCs waiting (those for any GPU included) */
  uint32_t flags;                 /* GL_ADMISSION_F_* */
} gl_gpu_admission;

#define GL_ADMISSION_F_LEARNED 0x1u /* the limit was learned from the driver's refusal */

/* GET_INVENTORY's request flags (u32 after an empty body; absent: 0). */
#define GL_INVENTORY_F_ADMISSION 0x1u /* append the admission block to the result */

typedef struct gl_inventory {
  uint32_t max_ttl_s;
  char driver_version[64]; /* NUL-terminated copy */
  uint16_t gpu_count;
  gl_gpu_entry gpus[GPULEASE_MAX_GPUS];
  gl_tenant_info tenant;
  /* The admission block, after tenant_info: only for a request with
   * GL_INVENTORY_F_ADMISSION (has_admission). */
  bool has_admission;
  uint32_t isolated_queue_max, isolated_queue_ms;
  gl_gpu_admission admission[GPULEASE_MAX_GPUS]; /* gpu_count of them */
} gl_inventory;


typedef struct gl_lease_info {
  uint64_t lease_id;
  uint8_t secret[GPULEASE_SECRET_BYTES];
  uint32_t gpu_index;
  uint64_t vram_bytes;
  uint32_t ttl_s;
  uint64_t remaining_ms;
  uint64_t submits;
  uint8_t lease_class; /* gpulease_lease_class */
} gl_lease_info;

/* Kernel output (printf text) of a lease, as GPU_SUBMIT's result carries
 * it (docs/protocol.md, "Kernel output"): u8 flags, u64 dropped, u32 len,
 * len bytes. */
typedef struct gl_kout {
  uint8_t flags;       /* GL_KOUT_F_* */
  uint64_t dropped;    /* bytes dropped over the lease's bound since the last delivery */
  const uint8_t *text; /* borrowed; len bytes, not NUL-terminated */
  uint32_t len;        /* at most GL_KOUT_MAX */
} gl_kout;

#define GL_KOUT_F_TRUNCATED 0x01 /* bytes were dropped: exactly when dropped > 0 */
#define GL_KOUT_F_DISCARDED 0x02 /* the lease shares its worker: output is not captured */
#define GL_KOUT_F_ALL 0x03
#define GL_KOUT_MAX 65536u       /* bytes of kernel output a lease keeps pending */

typedef struct gl_submit_resp {
  uint64_t gpu_time_ns;
  const uint8_t *output; /* borrowed */
  uint32_t output_len;
  bool has_kout;         /* the request had GL_SUBMIT_F_KOUT: kout follows output */
  gl_kout kout;
} gl_submit_resp;

typedef struct gl_probe_gpu {
  char uuid[96];
  char name[96];
  uint8_t cc_major, cc_minor;
  uint32_t sm_count;
  uint64_t total_vram_bytes;
} gl_probe_gpu;

typedef struct gl_probe_resp {
  uint16_t count;
  gl_probe_gpu gpus[GPULEASE_MAX_GPUS];
  uint32_t cuda_driver_version; /* cuDriverGetVersion: 13000 */
  uint8_t ptx_isa_driver[2];    /* the newest PTX ISA the driver's JIT takes */
  uint8_t ptx_isa_nvjitlink[2]; /* through nvJitLink; 0, 0: none found */
} gl_probe_resp;

typedef struct gl_worker_init_resp {
  uint64_t region_base;
  char device_name[96];
} gl_worker_init_resp;

/* NET_INFO: at most this many stripe ports. */
#define GL_WIRE_MAX_STRIPES 16

/* NET_INFO's result: the daemon's stripe ports (docs/protocol.md). */
typedef struct gl_net_info {
  uint8_t stripe_count; /* 0..GL_WIRE_MAX_STRIPES */
  uint16_t stripe_ports[GL_WIRE_MAX_STRIPES];
} gl_net_info;

/* POOL_INFO's result: the warm workers of each GPU (docs/protocol.md). */
typedef struct gl_pool_gpu {
  uint32_t index;
  uint16_t target, ready, starting;
} gl_pool_gpu;

typedef struct gl_pool_info {
  uint16_t gpu_count; /* 0..GPULEASE_MAX_GPUS */
  gl_pool_gpu gpus[GPULEASE_MAX_GPUS];
} gl_pool_info;

/* NODE_INFO's result. */
typedef struct gl_node_info {
  char local_socket[GL_WIRE_MAX_SOCKET_PATH + 1]; /* "" when none */
  uint8_t boot_id[16]; /* the host's boot (Linux boot_id); all 0 when unknown */
} gl_node_info;

typedef struct gl_batch_resp {
  uint16_t count;
  const uint8_t *replies; /* borrowed: count x { u32 len, response message } */
  size_t replies_len;
} gl_batch_resp;

typedef struct gl_mem_alloc_resp {
  uint64_t buffer;        /* the handle */
  uint64_t region_offset; /* where it starts in the lease's region */
  /* Only for a request with GL_MEM_ALLOC_F_ADDRESS (has_device_address):
   * the buffer's device address, the region's base + region_offset. */
  bool has_device_address;
  uint64_t device_address;
} gl_mem_alloc_resp;

/* WORKER_HELD: what a lease makes its context hold beyond its region. */
typedef struct gl_worker_held_resp {
  uint64_t lease_id;
  uint64_t module_bytes; /* its loaded modules' globals, constants and code */
  uint64_t local_bytes;  /* its kernels' local memory, set aside at launch */
} gl_worker_held_resp;

/* One session of a WORKER_LOST notice: its failure. */
typedef struct gl_lost_session {
  uint64_t session_id;
  uint16_t status, op;
  uint64_t seq;
  const char *msg; /* borrowed, NOT NUL-terminated */
  uint16_t msg_len;
} gl_lost_session;

typedef struct gl_worker_lost_resp {
  uint16_t count;
  gl_lost_session sessions[GL_WIRE_MAX_LOST_SESSIONS];
} gl_worker_lost_resp;

typedef struct gl_sync_resp {
  uint16_t error_status; /* 0: no failure since the last acknowledgement */
  uint16_t error_op;     /* the failed op's code */
  uint64_t error_seq;    /* the failed op's seq (0 if it had none) */
} gl_sync_resp;

typedef struct gl_module_load_resp {
  uint64_t module;
  uint8_t cache; /* GL_MODULE_CACHE_* */
} gl_module_load_resp;

typedef struct gl_func_info_resp {
  uint64_t function;
  uint32_t num_regs;
  uint32_t max_threads_per_block;
  uint32_t static_shared_bytes;
  uint32_t local_bytes;
  uint32_t const_bytes;
  uint32_t ptx_version;    /* major * 10 + minor, as cuFuncGetAttribute */
  uint32_t binary_version; /* ditto, the compute capability compiled for */
  uint16_t param_count;    /* or GL_WIRE_PARAMS_UNKNOWN */
  uint16_t param_sizes[GPULEASE_MAX_PARAMS];
} gl_func_info_resp;

typedef struct gl_mem_read_resp {
  const uint8_t *data; /* borrowed */
  uint32_t data_len;
} gl_mem_read_resp;

typedef struct gl_graph_end_resp {
  uint64_t graph;        /* the handle */
  uint32_t kernel_nodes; /* GRAPH_SET_ARGS's nodes: 0 .. kernel_nodes - 1 */
  uint32_t ops;          /* ops recorded */
} gl_graph_end_resp;

typedef struct gl_response {
  uint16_t op;
  uint16_t status;
  const char *msg; /* borrowed, NOT NUL-terminated */
  uint16_t msg_len;
  union { /* valid only when status == GPULEASE_OK */
    gl_inventory inventory;   /* GET_INVENTORY */
    gl_lease_info lease;      /* LEASE_ALLOC, LEASE_RENEW, LEASE_QUERY */
    uint8_t secret[GPULEASE_SECRET_BYTES]; /* LEASE_DELEGATE */
    char tenant[GL_WIRE_STR8_CAP]; /* AUTHENTICATE */
    gl_submit_resp submit;    /* GPU_SUBMIT */
    gl_probe_resp probe;      /* WORKER_PROBE */
    gl_worker_init_resp worker_init; /* WORKER_INIT */
    uint64_t handle;          /* SESSION_OPEN (session id), SHM_ATTACH (segment) */
    gl_node_info node_info;   /* NODE_INFO */
    gl_net_info net_info;     /* NET_INFO */
    gl_pool_info pool_info;   /* POOL_INFO */
    gl_mem_alloc_resp mem_alloc; /* MEM_ALLOC */
    gl_worker_lost_resp worker_lost; /* WORKER_LOST */
    gl_worker_held_resp worker_held; /* WORKER_HELD */
    gl_batch_resp batch;      /* BATCH */
    gl_sync_resp sync;        /* SYNC */
    gl_kout kout;             /* KERNEL_OUTPUT */
    uint8_t tmap[GL_TMAP_BYTES]; /* TENSORMAP_ENCODE */
    gl_mem_read_resp mem_read; /* MEM_READ */
    gl_module_load_resp module_load; /* MODULE_LOAD */
    gl_func_info_resp func_info; /* FUNC_INFO */
    uint64_t elapsed_ns;      /* EVENT_ELAPSED */
    gl_graph_end_resp graph_end; /* GRAPH_END */
    /* SESSION_CLOSE, MEM_FREE, MEM_WRITE, MEM_COPY, MEMSET, MODULE_UNLOAD,
     * LAUNCH, LAUNCH_EX, BURST, EVENT_RECORD, GRAPH_BEGIN, GRAPH_LAUNCH,
     * GRAPH_SET_ARGS, GRAPH_DESTROY: no result fields. */
  } u;
} gl_response;

/* ---- decode ------------------------------------------------------------- */

/* Decodes one whole request message (header + body, exactly len bytes).
 *   max_body: largest body_len accepted (TOO_LARGE above it).
 *   out: filled on success; borrows from msg.
 *   err/errlen: receives a human-readable reason on failure (may be NULL).
 * Returns GPULEASE_OK, MALFORMED, UNSUPPORTED, TOO_LARGE or
 * INVALID_ARGUMENT. On failure *out_op (if non-NULL) receives the header's
 * op when the header could be read, else 0, so the caller can echo it. */
gpulease_status gl_request_decode(const uint8_t *msg, size_t len, size_t max_body,
                                  gl_request *out, uint16_t *out_op, char *err, size_t errlen);

/* gl_request_decode, keeping what a BATCH's decoder decodes of its
 * entries (it decodes each to check it): for a BATCH decoded OK,
 * *entries receives its count entries (malloc'd, caller frees; their
 * pointers borrow msg, as out's do) and out->u.batch.entries points to
 * them; for any other op, or a failure, *entries is NULL. Errors as
 * gl_request_decode's, and INTERNAL when out of memory for the entries. */
gpulease_status gl_request_decode_entries(const uint8_t *msg, size_t len, size_t max_body,
                                          gl_request *out, uint16_t *out_op,
                                          gl_request **entries, char *err, size_t errlen);

/* Decodes a session request's frame and its session_ref only, leaving
 * the rest of the body unread (out holds op and the session_ref; for a
 * BURST also count and the list, unchecked: gl_burst_check): for the
 * daemon, which forwards a session op whole to the lease's worker, where
 * it is checked in full, and for the worker's BURSTs, whose lane checks the
 * list unless it is the last one's again. Any other op (SESSION_OPEN, BATCH,
 * not a session op) is decoded in full by gl_request_decode. Statuses as
 * gl_request_decode's for the frame; MALFORMED when the body is shorter
 * than a session_ref. */
gpulease_status gl_request_decode_ref(const uint8_t *msg, size_t len, size_t max_body,
                                      gl_request *out, uint16_t *out_op, char *err,
                                      size_t errlen);

/* Decodes one whole response message. For a non-OK status only op, status
 * and msg are filled. Returns GPULEASE_OK when the message is well formed
 * (whatever its status field says), otherwise MALFORMED / UNSUPPORTED /
 * TOO_LARGE / INVALID_ARGUMENT (a count or string out of range) with err
 * filled. */
gpulease_status gl_response_decode(const uint8_t *msg, size_t len, size_t max_body,
                                   gl_response *out, char *err, size_t errlen);

/* gl_response_decode for the reply to req (borrowed), whose result layout
 * can depend on the request: GPU_SUBMIT with GL_SUBMIT_F_KOUT has the
 * kernel output block after its output (gl_submit_resp.has_kout set), and
 * its absence is MALFORMED; plain gl_response_decode takes a GPU_SUBMIT
 * result without it. MEM_ALLOC: a request with GL_MEM_ALLOC_F_ADDRESS
 * needs the 24-byte result (device_address), one without it the 16-byte
 * one, else MALFORMED (a result is never longer than its request asked
 * for); plain gl_response_decode takes either. req NULL: as
 * gl_response_decode. */
gpulease_status gl_response_decode_for(const gl_request *req, const uint8_t *msg, size_t len,
                                       size_t max_body, gl_response *out, char *err,
                                       size_t errlen);

/* ---- encode ------------------------------------------------------------- */

/* Appends a whole request message for req to out. Fields are validated the
 * same way the decoder validates them; returns GPULEASE_OK,
 * INVALID_ARGUMENT (with nothing appended) or NO_MEMORY. */
gpulease_status gl_request_encode(const gl_request *req, gl_buf *out);

/* Checks req the way gl_request_encode() does, without encoding it, and
 * says why it is refused: the client library uses it to report a precise
 * INVALID_ARGUMENT message. err/errlen may be NULL/0. Returns GPULEASE_OK or
 * GPULEASE_INVALID_ARGUMENT. */
gpulease_status gl_request_validate(const gl_request *req, char *err, size_t errlen);

/* Appends a whole response message. When resp->status != OK only op, status
 * and msg are encoded (msg is truncated to GL_WIRE_MAX_MESSAGE bytes).
 * Returns GPULEASE_OK, NO_MEMORY, or INVALID_ARGUMENT (status >= 100, an OK
 * response of an unknown op, a count or string out of range). */
gpulease_status gl_response_encode(const gl_response *resp, gl_buf *out);

/* Convenience: appends an error response (no result fields) with a
 * printf-formatted message. status must not be OK (INVALID_ARGUMENT). */
/* The bytes of an OK MEM_READ response that come before its data (the
 * header, the message, data_len): the data, data_len bytes, go out right
 * after them from wherever they are, so that a large read is not copied
 * into the message. resp->u.mem_read.data must be non-NULL (it is not
 * read). INVALID_ARGUMENT for any other op or an error; NO_MEMORY. */
gpulease_status gl_response_encode_head(const gl_response *resp, gl_buf *out);

gpulease_status gl_response_encode_error(uint16_t op, gpulease_status status, gl_buf *out,
                                         const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Encodes the param list of a GPU_SUBMIT request from public params, into
 * out (appends). Used by encoders of gl_submit_req: the caller points
 * params_raw/params_raw_len/param_count at the result. Returns OK,
 * INVALID_ARGUMENT (kind, size) or NO_MEMORY. */
gpulease_status gl_params_encode(const gpulease_param *params, size_t count, gl_buf *out);

#endif /* GL_PROTO_WIRE_H */
