/*
 * wire_shm.c - the codec of the same-host ops (docs/protocol.md, "The
 * local socket"): NODE_INFO (where the daemon's local socket is, and which
 * boot of which machine it runs on), SHM_ATTACH and SHM_DETACH (a shared
 * memory segment of the client's, handed over the local socket, for a
 * lease), and the session ops MEM_WRITE_SHM and MEM_READ_SHM (copies
 * between a buffer and a segment), and their internal twins
 * MEM_WRITE_ARENA and MEM_READ_ARENA (the daemon's arena, same layout).
 * Requests and results: one codec per op (gl_wire__op_<NAME>, at the end,
 * called by wire.c's entry points; the four copies share their
 * functions). Layouts in wire.h.
 */
#include "proto/wire_internal.h"

/* ========================================================================
 * Checks
 * ====================================================================== */

static void check_size(gl_wire__rd *r, const char *field, uint64_t v, uint64_t max) {
  if (gl_wire__rd_ok(r) && (v == 0 || v > max))
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "%s %llu out of range 1..%llu", field,
                     (unsigned long long)v, (unsigned long long)max);
}

static void check_nonzero(gl_wire__rd *r, const char *field, uint64_t v) {
  if (gl_wire__rd_ok(r) && v == 0)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "%s 0 is not valid (ids and handles start at 1)", field);
}

static void check_path_len(gl_wire__rd *r, size_t n) {
  if (gl_wire__rd_ok(r) && n > GL_WIRE_MAX_SOCKET_PATH)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "local_socket of %zu bytes exceeds %d", n,
                     GL_WIRE_MAX_SOCKET_PATH);
}

/* ========================================================================
 * Requests
 * ====================================================================== */

static void attach_decode(gl_wire__rd *r, gl_request *q) {
  gl_wire__auth_decode(r, &q->u.shm_attach.auth);
  q->u.shm_attach.size_bytes = gl_wire__rd_u64(r, "size_bytes");
  check_size(r, "size_bytes", q->u.shm_attach.size_bytes, GL_WIRE_MAX_SEGMENT);
}

static void attach_validate(gl_wire__rd *r, const gl_request *q) {
  check_size(r, "size_bytes", q->u.shm_attach.size_bytes, GL_WIRE_MAX_SEGMENT);
}

static void attach_put(gl_buf *b, const gl_request *q) {
  gl_wire__auth_put(b, &q->u.shm_attach.auth);
  gl_wire__put_u64(b, q->u.shm_attach.size_bytes);
}

static void detach_decode(gl_wire__rd *r, gl_request *q) {
  gl_wire__auth_decode(r, &q->u.shm_detach.auth);
  q->u.shm_detach.segment = gl_wire__rd_u64(r, "segment");
}

static void detach_put(gl_buf *b, const gl_request *q) {
  gl_wire__auth_put(b, &q->u.shm_detach.auth);
  gl_wire__put_u64(b, q->u.shm_detach.segment);
}

/* MEM_WRITE_SHM, MEM_READ_SHM, MEM_WRITE_ARENA, MEM_READ_ARENA. */
static void copy_decode(gl_wire__rd *r, gl_request *q) {
  gl_mem_shm_req *m = &q->u.mem_shm;
  gl_wire__session_ref_decode(r, &m->s);
  m->buffer = gl_wire__rd_u64(r, "buffer");
  m->offset = gl_wire__rd_u64(r, "offset");
  m->segment = gl_wire__rd_u64(r, "segment");
  m->segment_offset = gl_wire__rd_u64(r, "segment_offset");
  m->size_bytes = gl_wire__rd_u64(r, "size_bytes");
  check_size(r, "size_bytes", m->size_bytes, GL_WIRE_MAX_SHM_COPY);
}

static void copy_validate(gl_wire__rd *r, const gl_request *q) {
  check_nonzero(r, "session_id", q->u.mem_shm.s.session_id);
  check_size(r, "size_bytes", q->u.mem_shm.size_bytes, GL_WIRE_MAX_SHM_COPY);
}

static void copy_put(gl_buf *b, const gl_request *q) {
  const gl_mem_shm_req *m = &q->u.mem_shm;
  gl_wire__session_ref_put(b, &m->s);
  gl_wire__put_u64(b, m->buffer);
  gl_wire__put_u64(b, m->offset);
  gl_wire__put_u64(b, m->segment);
  gl_wire__put_u64(b, m->segment_offset);
  gl_wire__put_u64(b, m->size_bytes);
}

/* ========================================================================
 * Results: NODE_INFO's node, SHM_ATTACH's segment; the others are empty
 * ====================================================================== */

static void node_info_result_decode(gl_wire__rd *r, gl_response *out) {
  gl_node_info *n = &out->u.node_info;
  uint16_t len = gl_wire__rd_u16(r, "local_socket_len");
  check_path_len(r, len);
  const uint8_t *p = gl_wire__rd_take(r, len, "local_socket");
  if (p) {
    if (memchr(p, 0, len))
      gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "local_socket holds a NUL byte");
    memcpy(n->local_socket, p, len);
    n->local_socket[len] = 0;
  }
  const uint8_t *id = gl_wire__rd_take(r, sizeof n->boot_id, "boot_id");
  if (id) memcpy(n->boot_id, id, sizeof n->boot_id);
}

static bool node_info_result_valid(const gl_response *resp) {
  return strnlen(resp->u.node_info.local_socket, sizeof resp->u.node_info.local_socket) <=
         GL_WIRE_MAX_SOCKET_PATH;
}

static void node_info_result_put(gl_buf *b, const gl_response *resp) {
  const gl_node_info *n = &resp->u.node_info;
  size_t len = strnlen(n->local_socket, sizeof n->local_socket);
  gl_wire__put_u16(b, (uint16_t)len);
  gl_wire__put_bytes(b, n->local_socket, len);
  gl_wire__put_bytes(b, n->boot_id, sizeof n->boot_id);
}

static void attach_result_decode(gl_wire__rd *r, gl_response *out) {
  out->u.handle = gl_wire__rd_u64(r, "segment");
  check_nonzero(r, "segment", out->u.handle);
}

static bool attach_result_valid(const gl_response *resp) { return resp->u.handle != 0; }

static void attach_result_put(gl_buf *b, const gl_response *resp) {
  gl_wire__put_u64(b, resp->u.handle);
}

/* ========================================================================
 * The codecs
 * ====================================================================== */

const gl_wire__codec gl_wire__op_NODE_INFO = {
    .last_field = "",
    .result_decode = node_info_result_decode,
    .result_valid = node_info_result_valid,
    .result_put = node_info_result_put,
};

const gl_wire__codec gl_wire__op_SHM_ATTACH = {
    .last_field = "size_bytes",
    .decode = attach_decode,
    .validate = attach_validate,
    .put = attach_put,
    .result_decode = attach_result_decode,
    .result_valid = attach_result_valid,
    .result_put = attach_result_put,
};

const gl_wire__codec gl_wire__op_SHM_DETACH = {
    .last_field = "segment",
    .decode = detach_decode,
    .put = detach_put,
};

const gl_wire__codec gl_wire__op_MEM_WRITE_SHM = {
    .last_field = "size_bytes",
    .decode = copy_decode,
    .validate = copy_validate,
    .put = copy_put,
};

const gl_wire__codec gl_wire__op_MEM_READ_SHM = {
    .last_field = "size_bytes",
    .decode = copy_decode,
    .validate = copy_validate,
    .put = copy_put,
};

const gl_wire__codec gl_wire__op_MEM_WRITE_ARENA = {
    .decode = copy_decode,
    .validate = copy_validate,
    .put = copy_put,
};

const gl_wire__codec gl_wire__op_MEM_READ_ARENA = {
    .decode = copy_decode,
    .validate = copy_validate,
    .put = copy_put,
};
