/*
 * wire_internal.h - what the codec's files share: the bounds-checked
 * reader, the big-endian writers, the fields and checks more than one op
 * family uses, and the per-op codec (gl_wire__codec) through which wire.c
 * hands a message to its op's functions: gl_wire__op_<NAME>, defined by
 * the file that ops.def's FAMILY column names (wire_<FAMILY>.c).
 * wire_params.c reads the param lists of GPU_SUBMIT and of the launches.
 *
 * Nothing here is part of wire.h's API; names carry the gl_wire__ prefix.
 * The tiny readers and writers are static inline, so that a decoder's
 * field reads compile as they did when the codec was one file.
 *
 * Decoding goes through one reader (gl_wire__rd) over the message body.
 * The reader has a sticky error: the first problem it meets (a field
 * running past the body, or a field out of range) is recorded with its
 * status and a message naming the op, the field and the body offset;
 * every later read returns zero and records nothing. Decoders are
 * therefore written as straight-line code and test gl_wire__rd_ok() only
 * where a value decides what comes next (a length, a count, a kind).
 * Fields are checked as soon as they are read, so the error reported is
 * the first one in body order. The encoders' validators run the same
 * check helpers on a reader with no body, to get the same messages.
 */
#ifndef GL_PROTO_WIRE_INTERNAL_H
#define GL_PROTO_WIRE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proto/wire.h"

/* ---- The reader (wire.c) ------------------------------------------------- */

typedef struct gl_wire__rd {
  const uint8_t *p;   /* the body */
  size_t len;         /* its length in bytes */
  size_t pos;         /* offset of the next byte to read */
  uint16_t op;        /* names messages */
  const char *elem;   /* array being read ("gpu", "param"), or NULL */
  unsigned idx;       /*   and the element's index */
  gpulease_status st; /* first failure; GPULEASE_OK while none */
  char *err;          /* caller's message buffer (may be NULL) */
  size_t errlen;
  /* gl_request_decode_entries: where a BATCH's decoder hands out the
   * entries it decodes (a malloc'd array of count); NULL otherwise. */
  gl_request **entries_out;
} gl_wire__rd;

/* Big-endian load of n (1..8) bytes. */
static inline uint64_t gl_wire__get_be(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v = v << 8 | p[i];
  return v;
}

static inline void gl_wire__rd_init(gl_wire__rd *r, const uint8_t *p, size_t len, uint16_t op,
                                    char *err, size_t errlen) {
  memset(r, 0, sizeof *r);
  r->p = p;
  r->len = len;
  r->op = op;
  r->st = GPULEASE_OK;
  r->err = err;
  r->errlen = errlen;
}

static inline bool gl_wire__rd_ok(const gl_wire__rd *r) { return r->st == GPULEASE_OK; }

/* Records the first failure as "OP: message". */
__attribute__((format(printf, 3, 4))) void gl_wire__rd_fail(gl_wire__rd *r, gpulease_status st,
                                                            const char *fmt, ...);

/* Records a request body that runs extra bytes past last, the last field
 * this release knows of r's op ("" for an empty body, NULL: "the body"),
 * as UNSUPPORTED with the compatibility rule's message (docs/protocol.md
 * section 2, "Compatibility", rule 2): "OP: N bytes after the last field
 * this daemon knows (last): a field of a newer release? ...". Used after
 * the last field of a network op's request (wire.c) and after a BURST's
 * last launch (gl_burst_check). */
void gl_wire__rd_fail_newer(gl_wire__rd *r, size_t extra, const char *last);

/* The field's full name: "grid_x", or "gpu[3].uuid" inside an array. */
const char *gl_wire__rd_field(const gl_wire__rd *r, const char *field, char *buf,
                              size_t buflen);

/* Consumes n bytes and returns a pointer to them, or NULL (failure
 * recorded) when fewer than n are left. */
static inline const uint8_t *gl_wire__rd_take(gl_wire__rd *r, size_t n, const char *field) {
  if (r->st != GPULEASE_OK) return NULL;
  if (r->len - r->pos < n) {
    char buf[64];
    gl_wire__rd_fail(r, GPULEASE_MALFORMED,
                     "truncated in %s: needs %zu bytes at body offset %zu, %zu left",
                     gl_wire__rd_field(r, field, buf, sizeof buf), n, r->pos, r->len - r->pos);
    return NULL;
  }
  const uint8_t *q = r->p + r->pos;
  r->pos += n;
  return q;
}

static inline uint64_t gl_wire__rd_be(gl_wire__rd *r, size_t n, const char *field) {
  const uint8_t *q = gl_wire__rd_take(r, n, field);
  return q ? gl_wire__get_be(q, n) : 0;
}

static inline uint8_t gl_wire__rd_u8(gl_wire__rd *r, const char *field) {
  return (uint8_t)gl_wire__rd_be(r, 1, field);
}
static inline uint16_t gl_wire__rd_u16(gl_wire__rd *r, const char *field) {
  return (uint16_t)gl_wire__rd_be(r, 2, field);
}
static inline uint32_t gl_wire__rd_u32(gl_wire__rd *r, const char *field) {
  return (uint32_t)gl_wire__rd_be(r, 4, field);
}
static inline uint64_t gl_wire__rd_u64(gl_wire__rd *r, const char *field) {
  return gl_wire__rd_be(r, 8, field);
}

/* Reads a str8 into dst[cap] NUL-terminated. Longer than cap - 1 bytes, or
 * holding a NUL byte: INVALID_ARGUMENT. */
void gl_wire__rd_str8(gl_wire__rd *r, const char *field, char *dst, size_t cap);

/* ---- The writers (wire.c) ------------------------------------------------ */

/* Appends n bytes; on a failed allocation appends nothing and sets b->oom,
 * after which every write is a no-op (frame_finish() undoes the message). */
void gl_wire__put_bytes(gl_buf *b, const void *p, size_t n);

/* Appends the low `n` bytes of v, most significant first. */
static inline void gl_wire__put_be(gl_buf *b, uint64_t v, size_t n) {
  uint8_t tmp[8];
  for (size_t i = 0; i < n; i++) tmp[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
  gl_wire__put_bytes(b, tmp, n);
}

static inline void gl_wire__put_u8(gl_buf *b, uint8_t v) { gl_wire__put_be(b, v, 1); }
static inline void gl_wire__put_u16(gl_buf *b, uint16_t v) { gl_wire__put_be(b, v, 2); }
static inline void gl_wire__put_u32(gl_buf *b, uint32_t v) { gl_wire__put_be(b, v, 4); }
static inline void gl_wire__put_u64(gl_buf *b, uint64_t v) { gl_wire__put_be(b, v, 8); }

/* str8 from a NUL-terminated array; the validator made sure it fits. */
static inline void gl_wire__put_str8(gl_buf *b, const char *s, size_t cap) {
  size_t n = strnlen(s, cap);
  gl_wire__put_u8(b, (uint8_t)n);
  gl_wire__put_bytes(b, s, n);
}

/* NUL-terminated within its array? (so gl_wire__put_str8 writes all of it) */
static inline bool gl_wire__str_fits(const char *s, size_t cap) { return strnlen(s, cap) < cap; }

/* ---- Fields and checks of several op families (wire.c) ------------------- */

/* lease_auth: u64 lease_id, 16 bytes secret. */
void gl_wire__auth_decode(gl_wire__rd *r, gl_lease_auth *a);
void gl_wire__auth_put(gl_buf *b, const gl_lease_auth *a);

/* Each records an INVALID_ARGUMENT naming the field when the value is out
 * of range (and does nothing once the reader has failed). They serve the
 * decoders, on values just read, and the validators, on a caller's struct. */
void gl_wire__check_gpu_count(gl_wire__rd *r, const char *field, unsigned n); /* <= 64 */
void gl_wire__check_image_format(gl_wire__rd *r, uint8_t fmt);               /* 0..3 */
void gl_wire__check_image_len(gl_wire__rd *r, uint32_t n);                   /* >= 1 */
void gl_wire__check_kernel_name_len(gl_wire__rd *r, uint16_t n);             /* 1..1024 */
void gl_wire__check_kernel_name(gl_wire__rd *r, const char *name, size_t n); /* no NUL */
void gl_wire__check_cluster(gl_wire__rd *r, const uint32_t cluster[3]);    /* each >= 1 */
/* u32 grid_x, grid_y, grid_z, block_x, block_y, block_z. */
void gl_wire__rd_dims(gl_wire__rd *r, uint32_t grid[3], uint32_t block[3]);

/* A session_ref (wire_session.c). */
void gl_wire__session_ref_decode(gl_wire__rd *r, gl_session_ref *s);
void gl_wire__session_ref_put(gl_buf *b, const gl_session_ref *s);

/* A launch's fields after its session_ref (wire_exec.c): function, grid,
 * block, shared_mem_bytes, [ex: flags, cluster], param_count, params. The
 * body of LAUNCH (ex false), LAUNCH_EX (ex true) and one launch of a
 * BURST (false). */
void gl_wire__launch_body_decode(gl_wire__rd *r, gl_launch_req *l, bool ex);
void gl_wire__launch_body_validate(gl_wire__rd *r, const gl_launch_req *l, bool ex);
void gl_wire__launch_body_put(gl_buf *b, const gl_launch_req *l, bool ex);

/* ---- The param lists (wire_params.c) ------------------------------------- */

/* Reads `count` params of a GPU_SUBMIT (launch false: kind 1 is a pointer,
 * u64 offset) or a LAUNCH (launch true: kind 1 is a buffer, u64 buffer and
 * u64 offset), checking each kind, each scalar size and the running total
 * against the op's limit. Used by the decoder on the body and by the
 * encoder on a caller's params_raw. */
void gl_wire__param_list_scan(gl_wire__rd *r, unsigned count, bool launch);

/* ---- The per-op codecs --------------------------------------------------- */

/* The codec of one op: gl_wire__op_<NAME> below, defined by the file that
 * ops.def's FAMILY column names (wire_<FAMILY>.c). wire.c has checked the
 * frame and picked the codec from the op (its k_codec table, built from
 * ops.def) before it calls any of these; the request's or response's op
 * field is set, the rest of a struct being decoded is zero. A NULL member
 * is nothing to do: an empty body (decode, put), nothing a struct could
 * get wrong (validate), an empty result (result_decode, result_put) or
 * none it could refuse (result_valid). Ops of the same layout share the
 * functions; where their field names differ a tiny wrapper passes them. */
typedef struct gl_wire__codec {
  /* The last field of the request body as this release knows it ("" for
   * an empty body; NULL for an internal op): named when a longer body is
   * refused (docs/protocol.md section 2, "Compatibility"). */
  const char *last_field;
  /* The request body, field by field, each checked as soon as it is read. */
  void (*decode)(gl_wire__rd *r, gl_request *q);
  /* The encoder's side: the decoder's checks on a struct a caller filled,
   * in the same order, plus the pointers behind non-zero lengths. */
  void (*validate)(gl_wire__rd *r, const gl_request *q);
  /* The request body of a validated struct. */
  void (*put)(gl_buf *b, const gl_request *q);
  /* The result of an OK response, after the message. */
  void (*result_decode)(gl_wire__rd *r, gl_response *out);
  /* What result_decode refuses, on a struct (for the encoder). */
  bool (*result_valid)(const gl_response *resp);
  void (*result_put)(gl_buf *b, const gl_response *resp);
} gl_wire__codec;

#define GL_OP(NAME, ...) extern const gl_wire__codec gl_wire__op_##NAME;
#include "proto/ops.def"
#undef GL_OP

/* The codec's functions of the ops whose body is a session_ref alone
 * (SESSION_CLOSE, KERNEL_OUTPUT, GRAPH_END), on the session_ref that the
 * op's REF column names (gl_request_session()); the validator (session_id
 * not 0) is also that of the ops with no other check. wire_session.c. */
void gl_wire__ref_only_decode(gl_wire__rd *r, gl_request *q);
void gl_wire__ref_only_validate(gl_wire__rd *r, const gl_request *q);
void gl_wire__ref_only_put(gl_buf *b, const gl_request *q);

/* The kernel output block (gl_kout, wire.h): decode (checked: known
 * flags, truncated exactly when dropped > 0, len <= GL_KOUT_MAX), the same
 * checks on a struct, and encode. wire_submit.c. */
void gl_wire__kout_decode(gl_wire__rd *r, gl_kout *k);
bool gl_wire__kout_valid(const gl_kout *k);
void gl_wire__kout_put(gl_buf *b, const gl_kout *k);

#endif
