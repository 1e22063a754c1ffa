/*
 * wire.c - the gpulease/1 wire codec: see wire.h for the API and
 * docs/protocol.md for the normative byte layout.
 *
 * This file holds what every op shares: the output buffer, the reader's
 * out-of-line half (wire_internal.h holds the rest and explains its sticky
 * error), the header and framing, the fields several op families use, and
 * the entry points, which check the frame and hand the body to the op's
 * codec (gl_wire__op_<NAME>, wire_internal.h; NULL functions are nothing
 * to do), defined in the file that ops.def's FAMILY column names
 * (wire_<FAMILY>.c).
 *
 * The decoder never allocates and never reads past `len`; variable-length
 * fields (kernel name, image, input, message, output) are BORROWED pointers
 * into the caller's buffer. Fixed-size strings (str8 in inventory and worker
 * replies) are copied NUL-terminated into the structs' arrays; a string that
 * does not fit, or that holds a NUL byte, is refused.
 *
 * The encoder checks a struct with the very same rules (the GPU_SUBMIT and
 * LAUNCH param lists are even checked by running the decoder's reader over
 * them, and so are the session ops' results), so that
 * anything gl_request_encode() emits, gl_request_decode() accepts, and the
 * other way round: the encoding is canonical, which the fuzz harness
 * (fuzz/fuzz_wire.c) verifies byte for byte.
 */
#include "proto/wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "proto/wire_internal.h"

/* ========================================================================
 * Growable output buffer
 * ====================================================================== */

void gl_buf_init(gl_buf *b) {
  b->data = NULL;
  b->len = 0;
  b->cap = 0;
  b->oom = false;
}

void gl_buf_free(gl_buf *b) {
  if (!b) return;
  free(b->data);
  gl_buf_init(b);
}

uint8_t *gl_buf_steal(gl_buf *b, size_t *len) {
  uint8_t *d = b->data;
  if (len) *len = b->len;
  gl_buf_init(b);
  return d;
}

/* Makes room for n more bytes. false (and b->oom set) when it cannot. */
static bool buf_reserve(gl_buf *b, size_t n) {
  if (b->oom) return false;
  if (b->cap - b->len >= n) return true;
  if (n > SIZE_MAX - b->len) {
    b->oom = true;
    return false;
  }
  size_t need = b->len + n;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  uint8_t *d = realloc(b->data, cap);
  if (!d) {
    b->oom = true;
    return false;
  }
  b->data = d;
  b->cap = cap;
  return true;
}

void gl_wire__put_bytes(gl_buf *b, const void *p, size_t n) {
  if (n == 0 || !buf_reserve(b, n)) return;
  memcpy(b->data + b->len, p, n);
  b->len += n;
}

/* ========================================================================
 * Error messages and the reader
 * ====================================================================== */

static void err_clear(char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
}

void gl_wire__rd_fail(gl_wire__rd *r, gpulease_status st, const char *fmt, ...) {
  if (r->st != GPULEASE_OK) return;
  r->st = st;
  if (!r->err || r->errlen == 0) return;
  const char *name = gl_op_name(r->op);
  int n = strcmp(name, "UNKNOWN") != 0 ? snprintf(r->err, r->errlen, "%s: ", name)
                                       : snprintf(r->err, r->errlen, "op 0x%04x: ", r->op);
  if (n < 0 || (size_t)n >= r->errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
  va_end(ap);
}

const char *gl_wire__rd_field(const gl_wire__rd *r, const char *field, char *buf,
                              size_t buflen) {
  if (!r->elem) return field;
  snprintf(buf, buflen, "%s[%u].%s", r->elem, r->idx, field);
  return buf;
}

void gl_wire__rd_str8(gl_wire__rd *r, const char *field, char *dst, size_t cap) {
  char buf[64];
  uint8_t n = gl_wire__rd_u8(r, field);
  if (!gl_wire__rd_ok(r)) return;
  if (n > cap - 1) {
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "%s length %u exceeds %zu bytes",
                     gl_wire__rd_field(r, field, buf, sizeof buf), n, cap - 1);
    return;
  }
  const uint8_t *s = gl_wire__rd_take(r, n, field);
  if (!s) return;
  if (memchr(s, 0, n)) {
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "%s contains a NUL byte",
                     gl_wire__rd_field(r, field, buf, sizeof buf));
    return;
  }
  memcpy(dst, s, n);
  dst[n] = '\0';
}

/* The release whose request fields this decoder knows, named when it
 * refuses a longer body (docs/protocol.md section 2, "Compatibility"). */
#define GL_WIRE_RELEASE "0.2"

static const gl_wire__codec *codec_of(uint16_t op);

/* After the last field. A response: anything left is MALFORMED (a client
 * refuses result fields it does not know). A request of a network op:
 * UNSUPPORTED, naming how far the body runs past the last field this
 * release knows, so that a newer client can tell an older daemon from a
 * bad request (fields are only ever appended to a request body). The
 * internal ops (0x7Fxx) stay MALFORMED: the daemon and its workers are one
 * binary of one release. */
static void rd_end(gl_wire__rd *r, bool request) {
  if (!gl_wire__rd_ok(r) || r->pos == r->len) return;
  size_t extra = r->len - r->pos;
  if (!request || gl_op_code_internal(r->op)) {
    gl_wire__rd_fail(r, GPULEASE_MALFORMED,
                     "%zu trailing bytes after the last field (body_len %zu)", extra, r->len);
    return;
  }
  const gl_wire__codec *c = codec_of(r->op);
  gl_wire__rd_fail_newer(r, extra, c ? c->last_field : NULL);
}

void gl_wire__rd_fail_newer(gl_wire__rd *r, size_t extra, const char *last) {
  if (last && !*last)
    gl_wire__rd_fail(r, GPULEASE_UNSUPPORTED,
                     "%zu bytes where this daemon knows an empty body: a field of a newer "
                     "release? this daemon speaks gpulease " GL_WIRE_RELEASE,
                     extra);
  else
    gl_wire__rd_fail(r, GPULEASE_UNSUPPORTED,
                     "%zu bytes after the last field this daemon knows (%s): a field of a "
                     "newer release? this daemon speaks gpulease " GL_WIRE_RELEASE,
                     extra, last ? last : "the body");
}

/* ========================================================================
 * Header and framing
 * ====================================================================== */

/* Fills *h from the first 12 bytes when they start with the magic (sets
 * *filled), then checks version and kind. */
static gpulease_status header_decode(const uint8_t *p, size_t len, gl_header *h, bool *filled,
                                     char *err, size_t errlen) {
  memset(h, 0, sizeof *h);
  *filled = false;
  if (!p || len == 0) {
    gl_set_err(err, errlen, "empty message: need a %d-byte header", GL_WIRE_HEADER_SIZE);
    return GPULEASE_MALFORMED;
  }
  if (len < GL_WIRE_HEADER_SIZE) {
    gl_set_err(err, errlen, "short header: %zu bytes, need %d", len, GL_WIRE_HEADER_SIZE);
    return GPULEASE_MALFORMED;
  }
  if (p[0] != GL_WIRE_MAGIC0 || p[1] != GL_WIRE_MAGIC1) {
    gl_set_err(err, errlen, "bad magic 0x%02x%02x, expected 0x%02x%02x ('GL')", p[0], p[1],
               GL_WIRE_MAGIC0, GL_WIRE_MAGIC1);
    return GPULEASE_MALFORMED;
  }
  h->version = p[2];
  h->kind = p[3];
  h->op = (uint16_t)gl_wire__get_be(p + 4, 2);
  h->status = (uint16_t)gl_wire__get_be(p + 6, 2);
  h->body_len = (uint32_t)gl_wire__get_be(p + 8, 4);
  *filled = true;
  if (h->version != GL_WIRE_VERSION) {
    gl_set_err(err, errlen, "unsupported protocol version %u (this side speaks %d)", h->version,
               GL_WIRE_VERSION);
    return GPULEASE_UNSUPPORTED;
  }
  if (h->kind != GL_WIRE_KIND_REQUEST && h->kind != GL_WIRE_KIND_RESPONSE) {
    gl_set_err(err, errlen, "bad kind %u (0 = request, 1 = response)", h->kind);
    return GPULEASE_MALFORMED;
  }
  return GPULEASE_OK;
}

gpulease_status gl_header_decode(const uint8_t *p, size_t len, gl_header *h) {
  bool filled;
  return header_decode(p, len, h, &filled, NULL, 0);
}

gpulease_status gl_header_decode_msg(const uint8_t *p, size_t len, gl_header *h, char *err,
                                     size_t errlen) {
  bool filled;
  if (err && errlen) err[0] = 0;
  return header_decode(p, len, h, &filled, err, errlen);
}

/* Everything that does not depend on the op: header, kind, the status rule
 * for the kind, max_body, and body_len against the bytes present. *op gets
 * the header's op as soon as the header could be read. */
static gpulease_status frame_check(const uint8_t *msg, size_t len, size_t max_body,
                                   uint8_t want_kind, gl_header *h, uint16_t *op, char *err,
                                   size_t errlen) {
  bool filled;
  gpulease_status st = header_decode(msg, len, h, &filled, err, errlen);
  if (filled) *op = h->op;
  if (st != GPULEASE_OK) return st;
  if (h->kind != want_kind) {
    gl_set_err(err, errlen, "expected a %s (kind %u), got a %s (kind %u)",
               want_kind == GL_WIRE_KIND_REQUEST ? "request" : "response", want_kind,
               h->kind == GL_WIRE_KIND_REQUEST ? "request" : "response", h->kind);
    return GPULEASE_MALFORMED;
  }
  if (want_kind == GL_WIRE_KIND_REQUEST && h->status != 0) {
    gl_set_err(err, errlen, "request header status must be 0, got %u", h->status);
    return GPULEASE_MALFORMED;
  }
  if (want_kind == GL_WIRE_KIND_RESPONSE && h->status >= 100) {
    gl_set_err(err, errlen, "status %u is not a wire status (codes from 100 up are client-side)",
               h->status);
    return GPULEASE_MALFORMED;
  }
  if (h->body_len > max_body) {
    gl_set_err(err, errlen, "body_len %u exceeds the limit of %zu bytes", h->body_len, max_body);
    return GPULEASE_TOO_LARGE;
  }
  size_t present = len - GL_WIRE_HEADER_SIZE;
  if (h->body_len != present) {
    gl_set_err(err, errlen, "%s: header says body_len %u but %zu bytes present",
               h->body_len > present ? "truncated" : "trailing bytes", h->body_len, present);
    return GPULEASE_MALFORMED;
  }
  return GPULEASE_OK;
}

static void put_header(gl_buf *b, uint8_t kind, uint16_t op, uint16_t status) {
  gl_wire__put_u8(b, GL_WIRE_MAGIC0);
  gl_wire__put_u8(b, GL_WIRE_MAGIC1);
  gl_wire__put_u8(b, GL_WIRE_VERSION);
  gl_wire__put_u8(b, kind);
  gl_wire__put_u16(b, op);
  gl_wire__put_u16(b, status);
  gl_wire__put_u32(b, 0); /* body_len, patched by frame_finish() */
}

/* Patches body_len of the message that starts at `start`, or undoes the
 * whole message when memory ran out or the body is too long for u32. */
static gpulease_status frame_finish(gl_buf *b, size_t start) {
  if (b->oom) {
    if (b->len > start) b->len = start;
    return GPULEASE_NO_MEMORY;
  }
  size_t body = b->len - start - GL_WIRE_HEADER_SIZE;
  if (body > UINT32_MAX) {
    b->len = start;
    return GPULEASE_INVALID_ARGUMENT;
  }
  uint8_t *p = b->data + start + 8;
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(body >> (8 * (3 - i)));
  return GPULEASE_OK;
}

/* ========================================================================
 * Fields of several op families: lease_auth, counts, images, kernel names
 * ====================================================================== */

void gl_wire__auth_decode(gl_wire__rd *r, gl_lease_auth *a) {
  a->lease_id = gl_wire__rd_u64(r, "lease_id");
  const uint8_t *s = gl_wire__rd_take(r, GPULEASE_SECRET_BYTES, "secret");
  if (s) memcpy(a->secret, s, GPULEASE_SECRET_BYTES);
}

void gl_wire__auth_put(gl_buf *b, const gl_lease_auth *a) {
  gl_wire__put_u64(b, a->lease_id);
  gl_wire__put_bytes(b, a->secret, GPULEASE_SECRET_BYTES);
}

void gl_wire__check_gpu_count(gl_wire__rd *r, const char *field, unsigned n) {
  if (gl_wire__rd_ok(r) && n > GPULEASE_MAX_GPUS)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "%s %u exceeds %d", field, n,
                     GPULEASE_MAX_GPUS);
}

void gl_wire__check_image_format(gl_wire__rd *r, uint8_t fmt) {
  if (gl_wire__rd_ok(r) && fmt > GPULEASE_IMAGE_FATBIN)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "image_format %u out of range 0..%d", fmt,
                     GPULEASE_IMAGE_FATBIN);
}

void gl_wire__check_image_len(gl_wire__rd *r, uint32_t n) {
  if (gl_wire__rd_ok(r) && n == 0)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "image_len 0: an image of at least 1 byte is required");
}

void gl_wire__check_kernel_name_len(gl_wire__rd *r, uint16_t n) {
  if (gl_wire__rd_ok(r) && (n < 1 || n > GL_WIRE_MAX_KERNEL_NAME))
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "kernel_name_len %u out of range 1..%d", n,
                     GL_WIRE_MAX_KERNEL_NAME);
}

void gl_wire__check_kernel_name(gl_wire__rd *r, const char *name, size_t n) {
  if (!gl_wire__rd_ok(r)) return;
  const char *nul = memchr(name, 0, n);
  if (nul)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "kernel_name contains a NUL byte at offset %zu", (size_t)(nul - name));
}

/* ========================================================================
 * The per-op codecs
 * ====================================================================== */

static bool op_known(uint16_t op) { return gl_op_info_of(op) != NULL; }

/* Each op's codec (wire_internal.h), defined in the file of ops.def's
 * FAMILY column. */
static const gl_wire__codec *const k_codec[GL_OP_COUNT] = {
#define GL_OP(NAME, ...) [GL_OPI_##NAME] = &gl_wire__op_##NAME,
#include "proto/ops.def"
#undef GL_OP
};

/* The codec of op; NULL for an op the table does not have, which the
 * entry points refuse. */
static const gl_wire__codec *codec_of(uint16_t op) {
  const gl_op_info *i = gl_op_info_of(op);
  return i ? k_codec[i - gl_op_table(NULL)] : NULL;
}

/* ========================================================================
 * Requests
 * ====================================================================== */

/* gl_request_decode, and with entries non-NULL gl_request_decode_entries:
 * a BATCH's decoder then keeps what it decodes of its entries there. */
static gpulease_status request_decode(const uint8_t *msg, size_t len, size_t max_body,
                                      gl_request *out, uint16_t *out_op, gl_request **entries,
                                      char *err, size_t errlen) {
  uint16_t op = 0;
  gl_header h;
  if (entries) *entries = NULL;
  err_clear(err, errlen);
  memset(out, 0, sizeof *out);
  gpulease_status st =
      frame_check(msg, len, max_body, GL_WIRE_KIND_REQUEST, &h, &op, err, errlen);
  if (out_op) *out_op = op;
  if (st != GPULEASE_OK) return st;
  if (!op_known(op)) {
    gl_set_err(err, errlen, "unknown op 0x%04x", op);
    return GPULEASE_UNSUPPORTED;
  }
  const gl_wire__codec *c = codec_of(op);
  gl_wire__rd r;
  gl_wire__rd_init(&r, msg + GL_WIRE_HEADER_SIZE, h.body_len, op, err, errlen);
  r.entries_out = entries;
  out->op = op;
  if (c->decode) c->decode(&r, out);
  rd_end(&r, true);
  if (r.st != GPULEASE_OK) {
    memset(out, 0, sizeof *out);
    if (entries) {
      free(*entries);
      *entries = NULL;
    }
  }
  return r.st;
}

gpulease_status gl_request_decode(const uint8_t *msg, size_t len, size_t max_body,
                                  gl_request *out, uint16_t *out_op, char *err, size_t errlen) {
  return request_decode(msg, len, max_body, out, out_op, NULL, err, errlen);
}

gpulease_status gl_request_decode_entries(const uint8_t *msg, size_t len, size_t max_body,
                                          gl_request *out, uint16_t *out_op,
                                          gl_request **entries, char *err, size_t errlen) {
  return request_decode(msg, len, max_body, out, out_op, entries, err, errlen);
}

gpulease_status gl_request_decode_ref(const uint8_t *msg, size_t len, size_t max_body,
                                      gl_request *out, uint16_t *out_op, char *err,
                                      size_t errlen) {
  gl_header h;
  if (gl_header_decode(msg, len, &h) != GPULEASE_OK || !gl_op_is_session(h.op) ||
      h.op == GL_OP_SESSION_OPEN || h.op == GL_OP_BATCH)
    return gl_request_decode(msg, len, max_body, out, out_op, err, errlen);
  uint16_t op = 0;
  err_clear(err, errlen);
  memset(out, 0, sizeof *out);
  gpulease_status st =
      frame_check(msg, len, max_body, GL_WIRE_KIND_REQUEST, &h, &op, err, errlen);
  if (out_op) *out_op = op;
  if (st != GPULEASE_OK) return st;
  out->op = op;
  gl_wire__rd r;
  gl_wire__rd_init(&r, msg + GL_WIRE_HEADER_SIZE, h.body_len, op, err, errlen);
  gl_wire__session_ref_decode(&r, (gl_session_ref *)gl_request_session(out));
  if (op == GL_OP_BURST && r.st == GPULEASE_OK) {
    /* The count and the list, unchecked (gl_burst_check). */
    out->u.burst.count = gl_wire__rd_u16(&r, "count");
    if (r.st == GPULEASE_OK) {
      out->u.burst.launches = r.p + r.pos;
      out->u.burst.launches_len = r.len - r.pos;
    }
  }
  if (r.st != GPULEASE_OK) memset(out, 0, sizeof *out);
  return r.st;
}

gpulease_status gl_request_validate(const gl_request *req, char *err, size_t errlen) {
  err_clear(err, errlen);
  if (!req) {
    gl_set_err(err, errlen, "request is NULL");
    return GPULEASE_INVALID_ARGUMENT;
  }
  if (!op_known(req->op)) {
    gl_set_err(err, errlen, "unknown op 0x%04x", req->op);
    return GPULEASE_INVALID_ARGUMENT;
  }
  const gl_wire__codec *c = codec_of(req->op);
  gl_wire__rd r;
  gl_wire__rd_init(&r, NULL, 0, req->op, err, errlen);
  if (c->validate) c->validate(&r, req);
  return r.st;
}

gpulease_status gl_request_encode(const gl_request *req, gl_buf *out) {
  if (!out || gl_request_validate(req, NULL, 0) != GPULEASE_OK)
    return GPULEASE_INVALID_ARGUMENT;
  if (out->oom) return GPULEASE_NO_MEMORY;
  size_t start = out->len;
  put_header(out, GL_WIRE_KIND_REQUEST, req->op, 0);
  const gl_wire__codec *c = codec_of(req->op);
  if (c->put) c->put(out, req);
  return frame_finish(out, start);
}

/* ========================================================================
 * Responses
 * ====================================================================== */

/* The result fields a request asked for that its reply must hold, and
 * none besides (docs/protocol.md section 2, "Result fields only when
 * asked"): MEM_ALLOC's device_address. Runs after the result is read. */
static void result_as_asked(gl_wire__rd *r, const gl_request *req, const gl_response *out) {
  if (!req || req->op != GL_OP_MEM_ALLOC || out->op != GL_OP_MEM_ALLOC ||
      out->status != GPULEASE_OK || !gl_wire__rd_ok(r))
    return;
  bool asked = (req->u.mem_alloc.flags & GL_MEM_ALLOC_F_ADDRESS) != 0;
  if (out->u.mem_alloc.has_device_address && !asked)
    gl_wire__rd_fail(r, GPULEASE_MALFORMED,
                     "8 bytes (device_address) after region_offset, which the request did not "
                     "ask for (flags bit 0 clear)");
  else if (!out->u.mem_alloc.has_device_address && asked)
    gl_wire__rd_fail(r, GPULEASE_MALFORMED,
                     "no device_address after region_offset, which the request asked for "
                     "(flags bit 0)");
}

/* kout: the reply's GPU_SUBMIT result carries the kernel output block.
 * req (NULL: none) is the request the reply answers, for result_as_asked. */
static gpulease_status response_decode(const uint8_t *msg, size_t len, size_t max_body,
                                       bool kout, const gl_request *req, gl_response *out,
                                       char *err, size_t errlen) {
  uint16_t op = 0;
  gl_header h;
  err_clear(err, errlen);
  memset(out, 0, sizeof *out);
  gpulease_status st =
      frame_check(msg, len, max_body, GL_WIRE_KIND_RESPONSE, &h, &op, err, errlen);
  if (st != GPULEASE_OK) return st;
  /* An error response is only a message, so its op need not be known (the
   * daemon echoes whatever op it could not handle, or 0). */
  if (h.status == GPULEASE_OK && !op_known(op)) {
    gl_set_err(err, errlen, "unknown op 0x%04x in an OK response", op);
    return GPULEASE_UNSUPPORTED;
  }
  const gl_wire__codec *c = codec_of(op); /* NULL for an error of an unknown op */
  gl_wire__rd r;
  gl_wire__rd_init(&r, msg + GL_WIRE_HEADER_SIZE, h.body_len, op, err, errlen);
  out->op = op;
  out->status = h.status;
  out->msg_len = gl_wire__rd_u16(&r, "msg_len");
  out->msg = (const char *)gl_wire__rd_take(&r, out->msg_len, "msg");
  out->u.submit.has_kout = kout && op == GL_OP_GPU_SUBMIT; /* read by its result_decode */
  if (h.status == GPULEASE_OK && c->result_decode) c->result_decode(&r, out);
  rd_end(&r, false);
  result_as_asked(&r, req, out);
  if (r.st != GPULEASE_OK) memset(out, 0, sizeof *out);
  return r.st;
}

gpulease_status gl_response_decode(const uint8_t *msg, size_t len, size_t max_body,
                                   gl_response *out, char *err, size_t errlen) {
  return response_decode(msg, len, max_body, false, NULL, out, err, errlen);
}

gpulease_status gl_response_decode_for(const gl_request *req, const uint8_t *msg, size_t len,
                                       size_t max_body, gl_response *out, char *err,
                                       size_t errlen) {
  bool kout = req && req->op == GL_OP_GPU_SUBMIT && (req->u.submit.flags & GL_SUBMIT_F_KOUT);
  return response_decode(msg, len, max_body, kout, req, out, err, errlen);
}

/* What gl_response_decode() would refuse, the encoder refuses too. */
static bool response_valid(const gl_response *resp) {
  if (resp->status >= 100) return false;
  if (resp->msg_len > 0 && !resp->msg) return false;
  if (resp->status != GPULEASE_OK) return true;
  if (!op_known(resp->op)) return false;
  const gl_wire__codec *c = codec_of(resp->op);
  return !c->result_valid || c->result_valid(resp);
}

/* Refusals (not in wire.h's list, which predates them): INVALID_ARGUMENT
 * for a status >= 100, an OK response of an unknown op, a count above 64, a
 * string not NUL-terminated within its array, a NULL pointer with a
 * non-zero length, or a session result the decoder would refuse (a zero
 * id or handle, cache > 2, SYNC error_status >= 100, MEM_READ data_len over
 * GL_WIRE_MAX_CHUNK, FUNC_INFO param_count over 256 and not 0xFFFF).
 * Nothing is appended then. */
gpulease_status gl_response_encode(const gl_response *resp, gl_buf *out) {
  if (!resp || !out || !response_valid(resp)) return GPULEASE_INVALID_ARGUMENT;
  if (out->oom) return GPULEASE_NO_MEMORY;
  size_t start = out->len;
  put_header(out, GL_WIRE_KIND_RESPONSE, resp->op, resp->status);
  gl_wire__put_u16(out, resp->msg_len);
  gl_wire__put_bytes(out, resp->msg, resp->msg_len);
  const gl_wire__codec *c = codec_of(resp->op); /* NULL for an error of an unknown op */
  if (resp->status == GPULEASE_OK && c->result_put) c->result_put(out, resp);
  return frame_finish(out, start);
}

gpulease_status gl_response_encode_head(const gl_response *resp, gl_buf *out) {
  if (!resp || !out || resp->op != GL_OP_MEM_READ || resp->status != GPULEASE_OK ||
      !response_valid(resp))
    return GPULEASE_INVALID_ARGUMENT;
  if (out->oom) return GPULEASE_NO_MEMORY;
  size_t start = out->len;
  put_header(out, GL_WIRE_KIND_RESPONSE, resp->op, resp->status);
  gl_wire__put_u16(out, resp->msg_len);
  gl_wire__put_bytes(out, resp->msg, resp->msg_len);
  gl_wire__put_u32(out, resp->u.mem_read.data_len);
  gpulease_status st = frame_finish(out, start);
  if (st != GPULEASE_OK) return st;
  /* body_len counts the data that follow. */
  uint64_t body = (uint64_t)(out->len - start - GL_WIRE_HEADER_SIZE) + resp->u.mem_read.data_len;
  uint8_t *p = out->data + start + 8;
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(body >> (8 * (3 - i)));
  return GPULEASE_OK;
}

/* status must be an error (1..99): an OK response needs its result fields,
 * which only gl_response_encode() can write. */
gpulease_status gl_response_encode_error(uint16_t op, gpulease_status status, gl_buf *out,
                                         const char *fmt, ...) {
  if (!out || status == GPULEASE_OK || (unsigned)status >= 100)
    return GPULEASE_INVALID_ARGUMENT;
  va_list ap;
  va_start(ap, fmt);
  int n = fmt ? vsnprintf(NULL, 0, fmt, ap) : 0;
  va_end(ap);
  if (n < 0) n = 0;
  size_t len = (size_t)n > GL_WIRE_MAX_MESSAGE ? GL_WIRE_MAX_MESSAGE : (size_t)n;
  char *text = malloc(len + 1);
  if (!text) return GPULEASE_NO_MEMORY;
  text[0] = '\0';
  if (fmt) {
    va_start(ap, fmt);
    vsnprintf(text, len + 1, fmt, ap);
    va_end(ap);
  }
  gl_response resp;
  resp.op = op;
  resp.status = (uint16_t)status;
  resp.msg = text;
  resp.msg_len = (uint16_t)len;
  gpulease_status st = gl_response_encode(&resp, out);
  free(text);
  return st;
}
