/*
 * wire_shm.c - the codec of the same-host ops (docs/protocol.md, "The
 * local socket"): NODE_INFO (where the daemon's local socket is, and which
 * boot of which machine it runs on), SHM_ATTACH and SHM_DETACH (a shared
 * memory segment of the client's, handed over the local socket, for a
 * lease), and the session ops MEM_WRITE_SHM and MEM_READ_SHM (copies
 * between a buffer and a segment), and their internal twins
 * MEM_WRITE_ARENA and MEM_READ_ARENA (the daemon's arena, same layout). Requests and results
 * (gl_wire__shm, called by wire.c's entry points). Layouts in wire.h.
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

static void session_ref_decode(gl_wire__rd *r, gl_session_ref *s) {
  gl_wire__auth_decode(r, &s->auth);
  s->session_id = gl_wire__rd_u64(r, "session_id");
  check_nonzero(r, "session_id", s->session_id);
  s->seq = gl_wire__rd_u64(r, "seq");
}

static void shm_decode(gl_wire__rd *r, gl_request *q) {
  switch (q->op) {
  case GL_OP_SHM_ATTACH:
    gl_wire__auth_decode(r, &q->u.shm_attach.auth);
    q->u.shm_attach.size_bytes = gl_wire__rd_u64(r, "size_bytes");
    check_size(r, "size_bytes", q->u.shm_attach.size_bytes, GL_WIRE_MAX_SEGMENT);
    break;
  case GL_OP_SHM_DETACH:
    gl_wire__auth_decode(r, &q->u.shm_detach.auth);
    q->u.shm_detach.segment = gl_wire__rd_u64(r, "segment");
    break;
  case GL_OP_MEM_WRITE_SHM:
  case GL_OP_MEM_READ_SHM:
  case GL_OP_MEM_WRITE_ARENA:
  case GL_OP_MEM_READ_ARENA: {
    gl_mem_shm_req *m = &q->u.mem_shm;
    session_ref_decode(r, &m->s);
    m->buffer = gl_wire__rd_u64(r, "buffer");
    m->offset = gl_wire__rd_u64(r, "offset");
    m->segment = gl_wire__rd_u64(r, "segment");
    m->segment_offset = gl_wire__rd_u64(r, "segment_offset");
    m->size_bytes = gl_wire__rd_u64(r, "size_bytes");
    check_size(r, "size_bytes", m->size_bytes, GL_WIRE_MAX_SHM_COPY);
    break;
  }
  default: /* NODE_INFO: empty body */
    break;
  }
}

static void shm_validate(gl_wire__rd *r, const gl_request *q) {
  switch (q->op) {
  case GL_OP_SHM_ATTACH:
    check_size(r, "size_bytes", q->u.shm_attach.size_bytes, GL_WIRE_MAX_SEGMENT);
    break;
  case GL_OP_MEM_WRITE_SHM:
  case GL_OP_MEM_READ_SHM:
  case GL_OP_MEM_WRITE_ARENA:
  case GL_OP_MEM_READ_ARENA:
    check_nonzero(r, "session_id", q->u.mem_shm.s.session_id);
    check_size(r, "size_bytes", q->u.mem_shm.size_bytes, GL_WIRE_MAX_SHM_COPY);
    break;
  default:
    break;
  }
}

static void shm_put(gl_buf *b, const gl_request *q) {
  switch (q->op) {
  case GL_OP_SHM_ATTACH:
    gl_wire__auth_put(b, &q->u.shm_attach.auth);
    gl_wire__put_u64(b, q->u.shm_attach.size_bytes);
    break;
  case GL_OP_SHM_DETACH:
    gl_wire__auth_put(b, &q->u.shm_detach.auth);
    gl_wire__put_u64(b, q->u.shm_detach.segment);
    break;
  case GL_OP_MEM_WRITE_SHM:
  case GL_OP_MEM_READ_SHM:
  case GL_OP_MEM_WRITE_ARENA:
  case GL_OP_MEM_READ_ARENA: {
    const gl_mem_shm_req *m = &q->u.mem_shm;
    gl_wire__auth_put(b, &m->s.auth);
    gl_wire__put_u64(b, m->s.session_id);
    gl_wire__put_u64(b, m->s.seq);
    gl_wire__put_u64(b, m->buffer);
    gl_wire__put_u64(b, m->offset);
    gl_wire__put_u64(b, m->segment);
    gl_wire__put_u64(b, m->segment_offset);
    gl_wire__put_u64(b, m->size_bytes);
    break;
  }
  default: /* NODE_INFO */
    break;
  }
}

/* ========================================================================
 * Results
 * ====================================================================== */

static void shm_result_decode(gl_wire__rd *r, gl_response *out) {
  switch (out->op) {
  case GL_OP_NODE_INFO: {
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
    break;
  }
  case GL_OP_SHM_ATTACH:
    out->u.handle = gl_wire__rd_u64(r, "segment");
    check_nonzero(r, "segment", out->u.handle);
    break;
  default: /* SHM_DETACH, MEM_WRITE_SHM, MEM_READ_SHM: empty */
    break;
  }
}

static bool shm_result_valid(const gl_response *resp) {
  if (resp->op == GL_OP_NODE_INFO)
    return strnlen(resp->u.node_info.local_socket, sizeof resp->u.node_info.local_socket) <=
           GL_WIRE_MAX_SOCKET_PATH;
  if (resp->op == GL_OP_SHM_ATTACH) return resp->u.handle != 0;
  return true;
}

static void shm_result_put(gl_buf *b, const gl_response *resp) {
  if (resp->op == GL_OP_NODE_INFO) {
    const gl_node_info *n = &resp->u.node_info;
    size_t len = strnlen(n->local_socket, sizeof n->local_socket);
    gl_wire__put_u16(b, (uint16_t)len);
    gl_wire__put_bytes(b, n->local_socket, len);
    gl_wire__put_bytes(b, n->boot_id, sizeof n->boot_id);
  } else if (resp->op == GL_OP_SHM_ATTACH) {
    gl_wire__put_u64(b, resp->u.handle);
  }
}

const gl_wire__family gl_wire__shm = {
    .decode = shm_decode,
    .validate = shm_validate,
    .put = shm_put,
    .result_decode = shm_result_decode,
    .result_valid = shm_result_valid,
    .result_put = shm_result_put,
};
