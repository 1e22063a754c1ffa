/*
 * wire.c - the gpulease/1 wire codec: see wire.h for the API and
 * docs/protocol.md for the normative byte layout.
 *
 * Decoding goes through one bounds-checked reader (struct rd) over the
 * message body. The reader has a sticky error: the first problem it meets
 * (a field running past the body, or a field out of range) is recorded with
 * its status and a message naming the op, the field and the body offset;
 * every later read returns zero and records nothing. Decoders are therefore
 * written as straight-line code and test rd_ok() only where a value decides
 * what comes next (a length, a count, a kind). Fields are checked as soon as
 * they are read, so the error reported is the first one in body order.
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

/* Body bytes of a GPU_SUBMIT request besides the kernel name, the param
 * list, the image and the input (see wire.h). */
#define SUBMIT_FIXED_BYTES 90

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

static void put_bytes(gl_buf *b, const void *p, size_t n) {
  if (n == 0 || !buf_reserve(b, n)) return;
  memcpy(b->data + b->len, p, n);
  b->len += n;
}

/* Appends the low `n` bytes of v, most significant first. */
static void put_be(gl_buf *b, uint64_t v, size_t n) {
  uint8_t tmp[8];
  for (size_t i = 0; i < n; i++) tmp[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
  put_bytes(b, tmp, n);
}

static void put_u8(gl_buf *b, uint8_t v) { put_be(b, v, 1); }
static void put_u16(gl_buf *b, uint16_t v) { put_be(b, v, 2); }
static void put_u32(gl_buf *b, uint32_t v) { put_be(b, v, 4); }
static void put_u64(gl_buf *b, uint64_t v) { put_be(b, v, 8); }

/* str8 from a NUL-terminated array; the validator made sure it fits. */
static void put_str8(gl_buf *b, const char *s, size_t cap) {
  size_t n = strnlen(s, cap);
  put_u8(b, (uint8_t)n);
  put_bytes(b, s, n);
}

/* ========================================================================
 * Big-endian loads and error messages
 * ====================================================================== */

static uint64_t get_be(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v = v << 8 | p[i];
  return v;
}

/* Writes a message into err (when there is room at all). */
__attribute__((format(printf, 3, 4))) static void errf(char *err, size_t errlen,
                                                       const char *fmt, ...) {
  if (!err || errlen == 0) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

static void err_clear(char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
}

/* ========================================================================
 * The bounds-checked reader
 * ====================================================================== */

typedef struct rd {
  const uint8_t *p;   /* the body */
  size_t len;         /* its length in bytes */
  size_t pos;         /* offset of the next byte to read */
  uint16_t op;        /* names messages */
  const char *elem;   /* array being read ("gpu", "param"), or NULL */
  unsigned idx;       /*   and the element's index */
  gpulease_status st; /* first failure; GPULEASE_OK while none */
  char *err;          /* caller's message buffer (may be NULL) */
  size_t errlen;
} rd;

static void rd_init(rd *r, const uint8_t *p, size_t len, uint16_t op, char *err,
                    size_t errlen) {
  memset(r, 0, sizeof *r);
  r->p = p;
  r->len = len;
  r->op = op;
  r->st = GPULEASE_OK;
  r->err = err;
  r->errlen = errlen;
}

static bool rd_ok(const rd *r) { return r->st == GPULEASE_OK; }

/* Records the first failure as "OP: message". */
__attribute__((format(printf, 3, 4))) static void rd_fail(rd *r, gpulease_status st,
                                                          const char *fmt, ...) {
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

/* The field's full name: "grid_x", or "gpu[3].uuid" inside an array. */
static const char *rd_field(const rd *r, const char *field, char *buf, size_t buflen) {
  if (!r->elem) return field;
  snprintf(buf, buflen, "%s[%u].%s", r->elem, r->idx, field);
  return buf;
}

/* Consumes n bytes and returns a pointer to them, or NULL (failure
 * recorded) when fewer than n are left. */
static const uint8_t *rd_take(rd *r, size_t n, const char *field) {
  if (r->st != GPULEASE_OK) return NULL;
  if (r->len - r->pos < n) {
    char buf[64];
    rd_fail(r, GPULEASE_MALFORMED, "truncated in %s: needs %zu bytes at body offset %zu, %zu left",
            rd_field(r, field, buf, sizeof buf), n, r->pos, r->len - r->pos);
    return NULL;
  }
  const uint8_t *q = r->p + r->pos;
  r->pos += n;
  return q;
}

static uint64_t rd_be(rd *r, size_t n, const char *field) {
  const uint8_t *q = rd_take(r, n, field);
  return q ? get_be(q, n) : 0;
}

static uint8_t rd_u8(rd *r, const char *field) { return (uint8_t)rd_be(r, 1, field); }
static uint16_t rd_u16(rd *r, const char *field) { return (uint16_t)rd_be(r, 2, field); }
static uint32_t rd_u32(rd *r, const char *field) { return (uint32_t)rd_be(r, 4, field); }
static uint64_t rd_u64(rd *r, const char *field) { return rd_be(r, 8, field); }

/* Reads a str8 into dst[cap] NUL-terminated. Longer than cap - 1 bytes, or
 * holding a NUL byte: INVALID_ARGUMENT. */
static void rd_str8(rd *r, const char *field, char *dst, size_t cap) {
  char buf[64];
  uint8_t n = rd_u8(r, field);
  if (!rd_ok(r)) return;
  if (n > cap - 1) {
    rd_fail(r, GPULEASE_INVALID_ARGUMENT, "%s length %u exceeds %zu bytes",
            rd_field(r, field, buf, sizeof buf), n, cap - 1);
    return;
  }
  const uint8_t *s = rd_take(r, n, field);
  if (!s) return;
  if (memchr(s, 0, n)) {
    rd_fail(r, GPULEASE_INVALID_ARGUMENT, "%s contains a NUL byte",
            rd_field(r, field, buf, sizeof buf));
    return;
  }
  memcpy(dst, s, n);
  dst[n] = '\0';
}

/* After the last field: anything left is an error. */
static void rd_end(rd *r) {
  if (rd_ok(r) && r->pos != r->len)
    rd_fail(r, GPULEASE_MALFORMED, "%zu trailing bytes after the last field (body_len %zu)",
            r->len - r->pos, r->len);
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
    errf(err, errlen, "empty message: need a %d-byte header", GL_WIRE_HEADER_SIZE);
    return GPULEASE_MALFORMED;
  }
  if (len < GL_WIRE_HEADER_SIZE) {
    errf(err, errlen, "short header: %zu bytes, need %d", len, GL_WIRE_HEADER_SIZE);
    return GPULEASE_MALFORMED;
  }
  if (p[0] != GL_WIRE_MAGIC0 || p[1] != GL_WIRE_MAGIC1) {
    errf(err, errlen, "bad magic 0x%02x%02x, expected 0x%02x%02x ('GL')", p[0], p[1],
         GL_WIRE_MAGIC0, GL_WIRE_MAGIC1);
    return GPULEASE_MALFORMED;
  }
  h->version = p[2];
  h->kind = p[3];
  h->op = (uint16_t)get_be(p + 4, 2);
  h->status = (uint16_t)get_be(p + 6, 2);
  h->body_len = (uint32_t)get_be(p + 8, 4);
  *filled = true;
  if (h->version != GL_WIRE_VERSION) {
    errf(err, errlen, "unsupported protocol version %u (this side speaks %d)", h->version,
         GL_WIRE_VERSION);
    return GPULEASE_UNSUPPORTED;
  }
  if (h->kind != GL_WIRE_KIND_REQUEST && h->kind != GL_WIRE_KIND_RESPONSE) {
    errf(err, errlen, "bad kind %u (0 = request, 1 = response)", h->kind);
    return GPULEASE_MALFORMED;
  }
  return GPULEASE_OK;
}

gpulease_status gl_header_decode(const uint8_t *p, size_t len, gl_header *h) {
  bool filled;
  return header_decode(p, len, h, &filled, NULL, 0);
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
    errf(err, errlen, "expected a %s (kind %u), got a %s (kind %u)",
         want_kind == GL_WIRE_KIND_REQUEST ? "request" : "response", want_kind,
         h->kind == GL_WIRE_KIND_REQUEST ? "request" : "response", h->kind);
    return GPULEASE_MALFORMED;
  }
  if (want_kind == GL_WIRE_KIND_REQUEST && h->status != 0) {
    errf(err, errlen, "request header status must be 0, got %u", h->status);
    return GPULEASE_MALFORMED;
  }
  if (want_kind == GL_WIRE_KIND_RESPONSE && h->status >= 100) {
    errf(err, errlen, "status %u is not a wire status (codes from 100 up are client-side)",
         h->status);
    return GPULEASE_MALFORMED;
  }
  if (h->body_len > max_body) {
    errf(err, errlen, "body_len %u exceeds the limit of %zu bytes", h->body_len, max_body);
    return GPULEASE_TOO_LARGE;
  }
  size_t present = len - GL_WIRE_HEADER_SIZE;
  if (h->body_len != present) {
    errf(err, errlen, "%s: header says body_len %u but %zu bytes present",
         h->body_len > present ? "truncated" : "trailing bytes", h->body_len, present);
    return GPULEASE_MALFORMED;
  }
  return GPULEASE_OK;
}

static void put_header(gl_buf *b, uint8_t kind, uint16_t op, uint16_t status) {
  put_u8(b, GL_WIRE_MAGIC0);
  put_u8(b, GL_WIRE_MAGIC1);
  put_u8(b, GL_WIRE_VERSION);
  put_u8(b, kind);
  put_u16(b, op);
  put_u16(b, status);
  put_u32(b, 0); /* body_len, patched by frame_finish() */
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
 * Shared pieces: lease_auth, lease_info, the param list
 * ====================================================================== */

static void auth_decode(rd *r, gl_lease_auth *a) {
  a->lease_id = rd_u64(r, "lease_id");
  const uint8_t *s = rd_take(r, GPULEASE_SECRET_BYTES, "secret");
  if (s) memcpy(a->secret, s, GPULEASE_SECRET_BYTES);
}

static void auth_put(gl_buf *b, const gl_lease_auth *a) {
  put_u64(b, a->lease_id);
  put_bytes(b, a->secret, GPULEASE_SECRET_BYTES);
}

static void lease_info_decode(rd *r, gl_lease_info *l) {
  l->lease_id = rd_u64(r, "lease_id");
  const uint8_t *s = rd_take(r, GPULEASE_SECRET_BYTES, "secret");
  if (s) memcpy(l->secret, s, GPULEASE_SECRET_BYTES);
  l->gpu_index = rd_u32(r, "gpu_index");
  l->vram_bytes = rd_u64(r, "vram_bytes");
  l->ttl_s = rd_u32(r, "ttl_s");
  l->remaining_ms = rd_u64(r, "remaining_ms");
  l->submits = rd_u64(r, "submits");
}

static void lease_info_put(gl_buf *b, const gl_lease_info *l) {
  put_u64(b, l->lease_id);
  put_bytes(b, l->secret, GPULEASE_SECRET_BYTES);
  put_u32(b, l->gpu_index);
  put_u64(b, l->vram_bytes);
  put_u32(b, l->ttl_s);
  put_u64(b, l->remaining_ms);
  put_u64(b, l->submits);
}

/* Reads `count` params of a GPU_SUBMIT (launch false: kind 1 is a pointer,
 * u64 offset) or a LAUNCH (launch true: kind 1 is a buffer, u64 buffer and
 * u64 offset), checking each kind, each scalar size and the running total
 * against the op's limit. Used by the decoder on the body and by the
 * encoder on a caller's params_raw. */
_Static_assert(GPULEASE_PARAM_POINTER == 1 && GL_LAUNCH_PARAM_BUFFER == 1 &&
                   GPULEASE_PARAM_SCALAR == 2 && GL_LAUNCH_PARAM_SCALAR == 2,
               "both param lists use kind 1 for an address and 2 for a scalar");

static void scan_param_list(rd *r, unsigned count, bool launch) {
  const size_t limit = launch ? GL_WIRE_MAX_LAUNCH_PARAM_BYTES : GL_WIRE_MAX_PARAM_BYTES;
  size_t start = r->pos;
  char buf[64];
  r->elem = "param";
  for (unsigned i = 0; i < count && rd_ok(r); i++) {
    r->idx = i;
    uint8_t kind = rd_u8(r, "kind");
    if (!rd_ok(r)) break;
    if (kind == 1) { /* GPULEASE_PARAM_POINTER, GL_LAUNCH_PARAM_BUFFER */
      if (launch) rd_u64(r, "buffer");
      rd_u64(r, "offset");
    } else if (kind == 2) { /* GPULEASE_PARAM_SCALAR, GL_LAUNCH_PARAM_SCALAR */
      uint8_t size = rd_u8(r, "size");
      if (rd_ok(r) && (size < 1 || size > GPULEASE_MAX_SCALAR_BYTES))
        rd_fail(r, GPULEASE_INVALID_ARGUMENT, "%s %u out of range 1..%d",
                rd_field(r, "size", buf, sizeof buf), size, GPULEASE_MAX_SCALAR_BYTES);
      rd_take(r, size, "value");
    } else {
      rd_fail(r, GPULEASE_INVALID_ARGUMENT, "%s %u unknown (1 = %s, 2 = scalar)",
              rd_field(r, "kind", buf, sizeof buf), kind, launch ? "buffer" : "pointer");
    }
    if (rd_ok(r) && r->pos - start > limit)
      rd_fail(r, GPULEASE_INVALID_ARGUMENT,
              "param list reaches %zu bytes at param[%u], over the limit of %zu",
              r->pos - start, i, limit);
  }
  r->elem = NULL;
}

static void params_scan(rd *r, unsigned count) { scan_param_list(r, count, false); }

gpulease_status gl_params_encode(const gpulease_param *params, size_t count, gl_buf *out) {
  if (!out || (count > 0 && !params) || count > GPULEASE_MAX_PARAMS)
    return GPULEASE_INVALID_ARGUMENT;
  if (out->oom) return GPULEASE_NO_MEMORY;
  size_t total = 0;
  for (size_t i = 0; i < count; i++) {
    const gpulease_param *p = &params[i];
    if (p->kind == GPULEASE_PARAM_POINTER)
      total += 9;
    else if (p->kind == GPULEASE_PARAM_SCALAR && p->size >= 1 &&
             p->size <= GPULEASE_MAX_SCALAR_BYTES)
      total += 2 + p->size;
    else
      return GPULEASE_INVALID_ARGUMENT;
  }
  if (total > GL_WIRE_MAX_PARAM_BYTES) return GPULEASE_INVALID_ARGUMENT;
  size_t start = out->len;
  for (size_t i = 0; i < count; i++) {
    const gpulease_param *p = &params[i];
    put_u8(out, (uint8_t)p->kind);
    if (p->kind == GPULEASE_PARAM_POINTER) {
      put_u64(out, p->offset);
    } else {
      put_u8(out, (uint8_t)p->size);
      put_bytes(out, p->value, p->size);
    }
  }
  if (out->oom) {
    if (out->len > start) out->len = start;
    return GPULEASE_NO_MEMORY;
  }
  return GPULEASE_OK;
}

bool gl_param_next(const gl_submit_req *req, size_t *pos, gl_param *out) {
  if (!req || !pos || !out || !req->params_raw) return false;
  const uint8_t *p = req->params_raw;
  size_t len = req->params_raw_len, i = *pos;
  if (i >= len) return false;
  memset(out, 0, sizeof *out);
  out->kind = p[i];
  if (p[i] == GPULEASE_PARAM_POINTER) {
    if (len - i < 9) return false;
    out->offset = get_be(p + i + 1, 8);
    *pos = i + 9;
    return true;
  }
  if (p[i] == GPULEASE_PARAM_SCALAR) {
    if (len - i < 2) return false;
    uint8_t size = p[i + 1];
    if (size < 1 || size > GPULEASE_MAX_SCALAR_BYTES || len - i - 2 < size) return false;
    out->size = size;
    out->value = p + i + 2;
    *pos = i + 2 + size;
    return true;
  }
  return false;
}

/* ========================================================================
 * GPU_SUBMIT request
 * ====================================================================== */

static void check_image_format(rd *r, uint8_t fmt) {
  if (rd_ok(r) && fmt > GPULEASE_IMAGE_FATBIN)
    rd_fail(r, GPULEASE_INVALID_ARGUMENT, "image_format %u out of range 0..%d", fmt,
            GPULEASE_IMAGE_FATBIN);
}

static void check_flags(rd *r, uint8_t flags) {
  if (rd_ok(r) && (flags & ~GL_SUBMIT_F_PARAMS))
    rd_fail(r, GPULEASE_INVALID_ARGUMENT,
            "flags 0x%02x has unknown bits 0x%02x (only bit 0 is defined)", flags,
            flags & ~GL_SUBMIT_F_PARAMS & 0xFF);
}

static void check_kernel_name_len(rd *r, uint16_t n) {
  if (rd_ok(r) && (n < 1 || n > GL_WIRE_MAX_KERNEL_NAME))
    rd_fail(r, GPULEASE_INVALID_ARGUMENT, "kernel_name_len %u out of range 1..%d", n,
            GL_WIRE_MAX_KERNEL_NAME);
}

static void check_kernel_name(rd *r, const char *name, size_t n) {
  if (!rd_ok(r)) return;
  const char *nul = memchr(name, 0, n);
  if (nul)
    rd_fail(r, GPULEASE_INVALID_ARGUMENT, "kernel_name contains a NUL byte at offset %zu",
            (size_t)(nul - name));
}

static void check_param_count(rd *r, uint8_t flags, uint16_t count) {
  if (!rd_ok(r)) return;
  if (count > GPULEASE_MAX_PARAMS)
    rd_fail(r, GPULEASE_INVALID_ARGUMENT, "param_count %u exceeds %d", count,
            GPULEASE_MAX_PARAMS);
  else if (count > 0 && !(flags & GL_SUBMIT_F_PARAMS))
    rd_fail(r, GPULEASE_INVALID_ARGUMENT,
            "param_count %u but flags bit 0 (use the param list) is clear", count);
}

static void check_image_len(rd *r, uint32_t n) {
  if (rd_ok(r) && n == 0)
    rd_fail(r, GPULEASE_INVALID_ARGUMENT, "image_len 0: an image of at least 1 byte is required");
}

static void submit_decode(rd *r, gl_submit_req *s) {
  auth_decode(r, &s->auth);
  s->image_format = rd_u8(r, "image_format");
  check_image_format(r, s->image_format);
  s->flags = rd_u8(r, "flags");
  check_flags(r, s->flags);
  s->kernel_name_len = rd_u16(r, "kernel_name_len");
  check_kernel_name_len(r, s->kernel_name_len);
  s->kernel_name = (const char *)rd_take(r, s->kernel_name_len, "kernel_name");
  if (s->kernel_name) check_kernel_name(r, s->kernel_name, s->kernel_name_len);
  s->grid[0] = rd_u32(r, "grid_x");
  s->grid[1] = rd_u32(r, "grid_y");
  s->grid[2] = rd_u32(r, "grid_z");
  s->block[0] = rd_u32(r, "block_x");
  s->block[1] = rd_u32(r, "block_y");
  s->block[2] = rd_u32(r, "block_z");
  s->shared_mem_bytes = rd_u32(r, "shared_mem_bytes");
  s->input_offset = rd_u64(r, "input_offset");
  s->output_offset = rd_u64(r, "output_offset");
  s->output_size = rd_u64(r, "output_size");
  s->param_count = rd_u16(r, "param_count");
  check_param_count(r, s->flags, s->param_count);
  if (rd_ok(r)) {
    size_t start = r->pos;
    params_scan(r, s->param_count);
    s->params_raw = r->p + start;
    s->params_raw_len = r->pos - start;
  }
  s->image_len = rd_u32(r, "image_len");
  check_image_len(r, s->image_len);
  s->image = rd_take(r, s->image_len, "image");
  s->input_len = rd_u32(r, "input_len");
  s->input = rd_take(r, s->input_len, "input");
}

/* The encoder's side: the same checks on a struct a caller filled. */
static void submit_validate(rd *r, const gl_submit_req *s) {
  check_image_format(r, s->image_format);
  check_flags(r, s->flags);
  check_kernel_name_len(r, s->kernel_name_len);
  if (rd_ok(r) && !s->kernel_name)
    rd_fail(r, GPULEASE_INVALID_ARGUMENT, "kernel_name is NULL");
  if (rd_ok(r)) check_kernel_name(r, s->kernel_name, s->kernel_name_len);
  check_param_count(r, s->flags, s->param_count);
  if (rd_ok(r) && s->params_raw_len > 0 && !s->params_raw)
    rd_fail(r, GPULEASE_INVALID_ARGUMENT, "params_raw is NULL");
  if (rd_ok(r)) {
    rd pr;
    rd_init(&pr, s->params_raw, s->params_raw_len, r->op, r->err, r->errlen);
    params_scan(&pr, s->param_count);
    if (pr.st != GPULEASE_OK)
      r->st = GPULEASE_INVALID_ARGUMENT; /* message already written */
    else if (pr.pos != s->params_raw_len)
      rd_fail(r, GPULEASE_INVALID_ARGUMENT,
              "params_raw_len %zu but the %u params take %zu bytes", s->params_raw_len,
              s->param_count, pr.pos);
  }
  check_image_len(r, s->image_len);
  if (rd_ok(r) && !s->image) rd_fail(r, GPULEASE_INVALID_ARGUMENT, "image is NULL");
  if (rd_ok(r) && s->input_len > 0 && !s->input)
    rd_fail(r, GPULEASE_INVALID_ARGUMENT, "input is NULL but input_len is %u", s->input_len);
  if (rd_ok(r)) {
    uint64_t body = (uint64_t)SUBMIT_FIXED_BYTES + s->kernel_name_len + s->params_raw_len +
                    s->image_len + s->input_len;
    if (body > UINT32_MAX)
      rd_fail(r, GPULEASE_INVALID_ARGUMENT, "body of %llu bytes does not fit body_len",
              (unsigned long long)body);
  }
}

static void submit_put(gl_buf *b, const gl_submit_req *s) {
  auth_put(b, &s->auth);
  put_u8(b, s->image_format);
  put_u8(b, s->flags);
  put_u16(b, s->kernel_name_len);
  put_bytes(b, s->kernel_name, s->kernel_name_len);
  for (int i = 0; i < 3; i++) put_u32(b, s->grid[i]);
  for (int i = 0; i < 3; i++) put_u32(b, s->block[i]);
  put_u32(b, s->shared_mem_bytes);
  put_u64(b, s->input_offset);
  put_u64(b, s->output_offset);
  put_u64(b, s->output_size);
  put_u16(b, s->param_count);
  put_bytes(b, s->params_raw, s->params_raw_len);
  put_u32(b, s->image_len);
  put_bytes(b, s->image, s->image_len);
  put_u32(b, s->input_len);
  put_bytes(b, s->input, s->input_len);
}

/* ========================================================================
 * Session ops (SESSION_OPEN .. LAUNCH)
 * ====================================================================== */

/* Body bytes of a MODULE_LOAD request besides the image: session_ref (24 +
 * 8 + 8), image_format, image_len. */
#define MODULE_LOAD_FIXED_BYTES 45

bool gl_op_is_session(uint16_t op) {
  switch (op) {
  case GL_OP_SESSION_OPEN:
  case GL_OP_SESSION_CLOSE:
  case GL_OP_SYNC:
  case GL_OP_MEM_ALLOC:
  case GL_OP_MEM_FREE:
  case GL_OP_MEM_WRITE:
  case GL_OP_MEM_READ:
  case GL_OP_MEM_COPY:
  case GL_OP_MEMSET:
  case GL_OP_MODULE_LOAD:
  case GL_OP_MODULE_UNLOAD:
  case GL_OP_FUNC_INFO:
  case GL_OP_LAUNCH: return true;
  default: return false;
  }
}

const gl_session_ref *gl_request_session(const gl_request *r) {
  if (!r) return NULL;
  switch (r->op) {
  case GL_OP_SESSION_CLOSE: return &r->u.session;
  case GL_OP_SYNC: return &r->u.sync.s;
  case GL_OP_MEM_ALLOC: return &r->u.mem_alloc.s;
  case GL_OP_MEM_FREE:
  case GL_OP_MODULE_UNLOAD: return &r->u.handle.s;
  case GL_OP_MEM_WRITE: return &r->u.mem_write.s;
  case GL_OP_MEM_READ: return &r->u.mem_read.s;
  case GL_OP_MEM_COPY: return &r->u.mem_copy.s;
  case GL_OP_MEMSET: return &r->u.memset.s;
  case GL_OP_MODULE_LOAD: return &r->u.module_load.s;
  case GL_OP_FUNC_INFO: return &r->u.func_info.s;
  case GL_OP_LAUNCH: return &r->u.launch.s;
  default: return NULL; /* SESSION_OPEN (r->u.auth) and the other ops */
  }
}

/* Session ids and the handles a response issues are never 0. (Handles in
 * requests are not checked here: the worker checks them.) */
static void check_id(rd *r, const char *field, uint64_t v) {
  if (rd_ok(r) && v == 0)
    rd_fail(r, GPULEASE_INVALID_ARGUMENT, "%s 0 is not valid (ids and handles start at 1)",
            field);
}

/* A size or count that must be at least 1 (`unit`: "byte", "element"). */
static void check_at_least_1(rd *r, const char *field, uint64_t v, const char *unit) {
  if (rd_ok(r) && v == 0)
    rd_fail(r, GPULEASE_INVALID_ARGUMENT, "%s 0: at least 1 %s is required", field, unit);
}

/* MEM_WRITE data_len, MEM_READ size_bytes and the MEM_READ result. */
static void check_chunk(rd *r, const char *field, uint32_t n, bool may_be_0) {
  if (rd_ok(r) && ((n == 0 && !may_be_0) || n > GL_WIRE_MAX_CHUNK))
    rd_fail(r, GPULEASE_INVALID_ARGUMENT,
            "%s %u out of range %d..%u (one op moves at most 64 MiB; split larger transfers)",
            field, n, may_be_0 ? 0 : 1, GL_WIRE_MAX_CHUNK);
}

static void check_element_size(rd *r, uint8_t n) {
  if (rd_ok(r) && n != 1 && n != 2 && n != 4)
    rd_fail(r, GPULEASE_INVALID_ARGUMENT, "element_size %u is not 1, 2 or 4", n);
}

/* After check_element_size: size is 1, 2 or 4. */
static void check_memset_value(rd *r, uint8_t size, uint32_t value) {
  if (rd_ok(r) && size < 4 && (value >> (8 * size)) != 0)
    rd_fail(r, GPULEASE_INVALID_ARGUMENT,
            "value 0x%x does not fit element_size %u (at most 0x%x)", value, size,
            (1u << (8 * size)) - 1);
}

static void check_launch_param_count(rd *r, uint16_t count) {
  if (rd_ok(r) && count > GPULEASE_MAX_PARAMS)
    rd_fail(r, GPULEASE_INVALID_ARGUMENT, "param_count %u exceeds %d", count,
            GPULEASE_MAX_PARAMS);
}

static void session_ref_decode(rd *r, gl_session_ref *s) {
  auth_decode(r, &s->auth);
  s->session_id = rd_u64(r, "session_id");
  check_id(r, "session_id", s->session_id);
  s->seq = rd_u64(r, "seq");
}

static void session_ref_put(gl_buf *b, const gl_session_ref *s) {
  auth_put(b, &s->auth);
  put_u64(b, s->session_id);
  put_u64(b, s->seq);
}

static void launch_params_scan(rd *r, unsigned count) { scan_param_list(r, count, true); }

bool gl_launch_param_next(const gl_launch_req *req, size_t *pos, gl_launch_param *out) {
  if (!req || !pos || !out || !req->params_raw) return false;
  const uint8_t *p = req->params_raw;
  size_t len = req->params_raw_len, i = *pos;
  if (i >= len) return false;
  memset(out, 0, sizeof *out);
  out->kind = p[i];
  if (p[i] == GL_LAUNCH_PARAM_BUFFER) {
    if (len - i < 17) return false;
    out->buffer = get_be(p + i + 1, 8);
    out->offset = get_be(p + i + 9, 8);
    *pos = i + 17;
    return true;
  }
  if (p[i] == GL_LAUNCH_PARAM_SCALAR) {
    if (len - i < 2) return false;
    uint8_t size = p[i + 1];
    if (size < 1 || size > GPULEASE_MAX_SCALAR_BYTES || len - i - 2 < size) return false;
    out->size = size;
    out->value = p + i + 2;
    *pos = i + 2 + size;
    return true;
  }
  return false;
}

gpulease_status gl_launch_param_put(gl_buf *out, const gl_launch_param *p) {
  if (!out || !p) return GPULEASE_INVALID_ARGUMENT;
  if (p->kind == GL_LAUNCH_PARAM_SCALAR) {
    if (p->size < 1 || p->size > GPULEASE_MAX_SCALAR_BYTES || !p->value)
      return GPULEASE_INVALID_ARGUMENT;
  } else if (p->kind != GL_LAUNCH_PARAM_BUFFER) {
    return GPULEASE_INVALID_ARGUMENT;
  }
  if (out->oom) return GPULEASE_NO_MEMORY;
  size_t start = out->len;
  put_u8(out, p->kind);
  if (p->kind == GL_LAUNCH_PARAM_BUFFER) {
    put_u64(out, p->buffer);
    put_u64(out, p->offset);
  } else {
    put_u8(out, p->size);
    put_bytes(out, p->value, p->size);
  }
  if (out->oom) {
    if (out->len > start) out->len = start;
    return GPULEASE_NO_MEMORY;
  }
  return GPULEASE_OK;
}

static void launch_decode(rd *r, gl_launch_req *l) {
  session_ref_decode(r, &l->s);
  l->function = rd_u64(r, "function");
  l->grid[0] = rd_u32(r, "grid_x");
  l->grid[1] = rd_u32(r, "grid_y");
  l->grid[2] = rd_u32(r, "grid_z");
  l->block[0] = rd_u32(r, "block_x");
  l->block[1] = rd_u32(r, "block_y");
  l->block[2] = rd_u32(r, "block_z");
  l->shared_mem_bytes = rd_u32(r, "shared_mem_bytes");
  l->param_count = rd_u16(r, "param_count");
  check_launch_param_count(r, l->param_count);
  if (rd_ok(r)) {
    size_t start = r->pos;
    launch_params_scan(r, l->param_count);
    l->params_raw = r->p + start;
    l->params_raw_len = r->pos - start;
  }
}

/* The request body of a session op, field by field, each checked as soon
 * as it is read. */
static void session_decode(rd *r, gl_request *q) {
  switch (q->op) {
  case GL_OP_SESSION_OPEN:
    auth_decode(r, &q->u.auth);
    break;
  case GL_OP_SESSION_CLOSE:
    session_ref_decode(r, &q->u.session);
    break;
  case GL_OP_SYNC:
    session_ref_decode(r, &q->u.sync.s);
    q->u.sync.ack_seq = rd_u64(r, "ack_seq");
    break;
  case GL_OP_MEM_ALLOC:
    session_ref_decode(r, &q->u.mem_alloc.s);
    q->u.mem_alloc.size_bytes = rd_u64(r, "size_bytes");
    check_at_least_1(r, "size_bytes", q->u.mem_alloc.size_bytes, "byte");
    break;
  case GL_OP_MEM_FREE:
  case GL_OP_MODULE_UNLOAD:
    session_ref_decode(r, &q->u.handle.s);
    q->u.handle.handle = rd_u64(r, q->op == GL_OP_MEM_FREE ? "buffer" : "module");
    break;
  case GL_OP_MEM_WRITE: {
    gl_mem_write_req *w = &q->u.mem_write;
    session_ref_decode(r, &w->s);
    w->buffer = rd_u64(r, "buffer");
    w->offset = rd_u64(r, "offset");
    w->data_len = rd_u32(r, "data_len");
    check_chunk(r, "data_len", w->data_len, false);
    w->data = rd_take(r, w->data_len, "data");
    break;
  }
  case GL_OP_MEM_READ: {
    gl_mem_read_req *m = &q->u.mem_read;
    session_ref_decode(r, &m->s);
    m->buffer = rd_u64(r, "buffer");
    m->offset = rd_u64(r, "offset");
    m->size_bytes = rd_u32(r, "size_bytes");
    check_chunk(r, "size_bytes", m->size_bytes, false);
    break;
  }
  case GL_OP_MEM_COPY: {
    gl_mem_copy_req *c = &q->u.mem_copy;
    session_ref_decode(r, &c->s);
    c->dst_buffer = rd_u64(r, "dst_buffer");
    c->dst_offset = rd_u64(r, "dst_offset");
    c->src_buffer = rd_u64(r, "src_buffer");
    c->src_offset = rd_u64(r, "src_offset");
    c->size_bytes = rd_u64(r, "size_bytes");
    check_at_least_1(r, "size_bytes", c->size_bytes, "byte");
    break;
  }
  case GL_OP_MEMSET: {
    gl_memset_req *m = &q->u.memset;
    session_ref_decode(r, &m->s);
    m->buffer = rd_u64(r, "buffer");
    m->offset = rd_u64(r, "offset");
    m->element_size = rd_u8(r, "element_size");
    check_element_size(r, m->element_size);
    m->value = rd_u32(r, "value");
    check_memset_value(r, m->element_size, m->value);
    m->count = rd_u64(r, "count");
    check_at_least_1(r, "count", m->count, "element");
    break;
  }
  case GL_OP_MODULE_LOAD: {
    gl_module_load_req *m = &q->u.module_load;
    session_ref_decode(r, &m->s);
    m->image_format = rd_u8(r, "image_format");
    check_image_format(r, m->image_format);
    m->image_len = rd_u32(r, "image_len");
    check_image_len(r, m->image_len);
    m->image = rd_take(r, m->image_len, "image");
    break;
  }
  case GL_OP_FUNC_INFO: {
    gl_func_info_req *f = &q->u.func_info;
    session_ref_decode(r, &f->s);
    f->module = rd_u64(r, "module");
    f->kernel_name_len = rd_u16(r, "kernel_name_len");
    check_kernel_name_len(r, f->kernel_name_len);
    f->kernel_name = (const char *)rd_take(r, f->kernel_name_len, "kernel_name");
    if (f->kernel_name) check_kernel_name(r, f->kernel_name, f->kernel_name_len);
    break;
  }
  case GL_OP_LAUNCH:
    launch_decode(r, &q->u.launch);
    break;
  }
}

/* The encoder's side: the same checks on a struct a caller filled, in the
 * same order, plus the pointers behind non-zero lengths. */
static void session_validate(rd *r, const gl_request *q) {
  const gl_session_ref *s = gl_request_session(q);
  if (s) check_id(r, "session_id", s->session_id);
  switch (q->op) {
  case GL_OP_MEM_ALLOC:
    check_at_least_1(r, "size_bytes", q->u.mem_alloc.size_bytes, "byte");
    break;
  case GL_OP_MEM_WRITE:
    check_chunk(r, "data_len", q->u.mem_write.data_len, false);
    if (rd_ok(r) && !q->u.mem_write.data) rd_fail(r, GPULEASE_INVALID_ARGUMENT, "data is NULL");
    break;
  case GL_OP_MEM_READ:
    check_chunk(r, "size_bytes", q->u.mem_read.size_bytes, false);
    break;
  case GL_OP_MEM_COPY:
    check_at_least_1(r, "size_bytes", q->u.mem_copy.size_bytes, "byte");
    break;
  case GL_OP_MEMSET:
    check_element_size(r, q->u.memset.element_size);
    check_memset_value(r, q->u.memset.element_size, q->u.memset.value);
    check_at_least_1(r, "count", q->u.memset.count, "element");
    break;
  case GL_OP_MODULE_LOAD: {
    const gl_module_load_req *m = &q->u.module_load;
    check_image_format(r, m->image_format);
    check_image_len(r, m->image_len);
    if (rd_ok(r) && !m->image) rd_fail(r, GPULEASE_INVALID_ARGUMENT, "image is NULL");
    if (rd_ok(r) && (uint64_t)MODULE_LOAD_FIXED_BYTES + m->image_len > UINT32_MAX)
      rd_fail(r, GPULEASE_INVALID_ARGUMENT, "body of %llu bytes does not fit body_len",
              (unsigned long long)MODULE_LOAD_FIXED_BYTES + m->image_len);
    break;
  }
  case GL_OP_FUNC_INFO: {
    const gl_func_info_req *f = &q->u.func_info;
    check_kernel_name_len(r, f->kernel_name_len);
    if (rd_ok(r) && !f->kernel_name)
      rd_fail(r, GPULEASE_INVALID_ARGUMENT, "kernel_name is NULL");
    if (rd_ok(r)) check_kernel_name(r, f->kernel_name, f->kernel_name_len);
    break;
  }
  case GL_OP_LAUNCH: {
    const gl_launch_req *l = &q->u.launch;
    check_launch_param_count(r, l->param_count);
    if (rd_ok(r) && l->params_raw_len > 0 && !l->params_raw)
      rd_fail(r, GPULEASE_INVALID_ARGUMENT, "params_raw is NULL");
    if (rd_ok(r)) {
      rd pr;
      rd_init(&pr, l->params_raw, l->params_raw_len, r->op, r->err, r->errlen);
      launch_params_scan(&pr, l->param_count);
      if (pr.st != GPULEASE_OK)
        r->st = GPULEASE_INVALID_ARGUMENT; /* message already written */
      else if (pr.pos != l->params_raw_len)
        rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                "params_raw_len %zu but the %u params take %zu bytes", l->params_raw_len,
                l->param_count, pr.pos);
    }
    break;
  }
  default: /* SESSION_OPEN, SESSION_CLOSE, SYNC, MEM_FREE, MODULE_UNLOAD */
    break;
  }
}

static void session_put(gl_buf *b, const gl_request *q) {
  const gl_session_ref *s = gl_request_session(q);
  if (s) session_ref_put(b, s);
  switch (q->op) {
  case GL_OP_SESSION_OPEN:
    auth_put(b, &q->u.auth);
    break;
  case GL_OP_SYNC:
    put_u64(b, q->u.sync.ack_seq);
    break;
  case GL_OP_MEM_ALLOC:
    put_u64(b, q->u.mem_alloc.size_bytes);
    break;
  case GL_OP_MEM_FREE:
  case GL_OP_MODULE_UNLOAD:
    put_u64(b, q->u.handle.handle);
    break;
  case GL_OP_MEM_WRITE:
    put_u64(b, q->u.mem_write.buffer);
    put_u64(b, q->u.mem_write.offset);
    put_u32(b, q->u.mem_write.data_len);
    put_bytes(b, q->u.mem_write.data, q->u.mem_write.data_len);
    break;
  case GL_OP_MEM_READ:
    put_u64(b, q->u.mem_read.buffer);
    put_u64(b, q->u.mem_read.offset);
    put_u32(b, q->u.mem_read.size_bytes);
    break;
  case GL_OP_MEM_COPY:
    put_u64(b, q->u.mem_copy.dst_buffer);
    put_u64(b, q->u.mem_copy.dst_offset);
    put_u64(b, q->u.mem_copy.src_buffer);
    put_u64(b, q->u.mem_copy.src_offset);
    put_u64(b, q->u.mem_copy.size_bytes);
    break;
  case GL_OP_MEMSET:
    put_u64(b, q->u.memset.buffer);
    put_u64(b, q->u.memset.offset);
    put_u8(b, q->u.memset.element_size);
    put_u32(b, q->u.memset.value);
    put_u64(b, q->u.memset.count);
    break;
  case GL_OP_MODULE_LOAD:
    put_u8(b, q->u.module_load.image_format);
    put_u32(b, q->u.module_load.image_len);
    put_bytes(b, q->u.module_load.image, q->u.module_load.image_len);
    break;
  case GL_OP_FUNC_INFO:
    put_u64(b, q->u.func_info.module);
    put_u16(b, q->u.func_info.kernel_name_len);
    put_bytes(b, q->u.func_info.kernel_name, q->u.func_info.kernel_name_len);
    break;
  case GL_OP_LAUNCH: {
    const gl_launch_req *l = &q->u.launch;
    put_u64(b, l->function);
    for (int i = 0; i < 3; i++) put_u32(b, l->grid[i]);
    for (int i = 0; i < 3; i++) put_u32(b, l->block[i]);
    put_u32(b, l->shared_mem_bytes);
    put_u16(b, l->param_count);
    put_bytes(b, l->params_raw, l->params_raw_len);
    break;
  }
  default: /* SESSION_CLOSE: the session_ref only */
    break;
  }
}

/* ---- session results ---- */

static void check_sync_error_status(rd *r, uint16_t st) {
  if (rd_ok(r) && st >= 100)
    rd_fail(r, GPULEASE_INVALID_ARGUMENT,
            "error_status %u is not a wire status (codes from 100 up are client-side)", st);
}

static void check_cache(rd *r, uint8_t cache) {
  if (rd_ok(r) && cache > GL_MODULE_CACHE_DISK)
    rd_fail(r, GPULEASE_INVALID_ARGUMENT, "cache %u out of range 0..%d", cache,
            GL_MODULE_CACHE_DISK);
}

static void check_func_param_count(rd *r, uint16_t n) {
  if (rd_ok(r) && n > GPULEASE_MAX_PARAMS && n != GL_WIRE_PARAMS_UNKNOWN)
    rd_fail(r, GPULEASE_INVALID_ARGUMENT, "param_count %u exceeds %d (0x%04X: unknown)", n,
            GPULEASE_MAX_PARAMS, GL_WIRE_PARAMS_UNKNOWN);
}

/* The name of the u64 a SESSION_OPEN or MEM_ALLOC result holds. */
static const char *handle_field(uint16_t op) {
  return op == GL_OP_SESSION_OPEN ? "session_id" : "buffer";
}

/* The OK result of a session op. */
static void session_result_decode(rd *r, gl_response *out) {
  switch (out->op) {
  case GL_OP_SESSION_OPEN:
  case GL_OP_MEM_ALLOC:
    out->u.handle = rd_u64(r, handle_field(out->op));
    check_id(r, handle_field(out->op), out->u.handle);
    break;
  case GL_OP_SYNC:
    out->u.sync.error_status = rd_u16(r, "error_status");
    check_sync_error_status(r, out->u.sync.error_status);
    out->u.sync.error_op = rd_u16(r, "error_op");
    out->u.sync.error_seq = rd_u64(r, "error_seq");
    break;
  case GL_OP_MEM_READ:
    out->u.mem_read.data_len = rd_u32(r, "data_len");
    check_chunk(r, "data_len", out->u.mem_read.data_len, true);
    out->u.mem_read.data = rd_take(r, out->u.mem_read.data_len, "data");
    break;
  case GL_OP_MODULE_LOAD:
    out->u.module_load.module = rd_u64(r, "module");
    check_id(r, "module", out->u.module_load.module);
    out->u.module_load.cache = rd_u8(r, "cache");
    check_cache(r, out->u.module_load.cache);
    break;
  case GL_OP_FUNC_INFO: {
    gl_func_info_resp *f = &out->u.func_info;
    f->function = rd_u64(r, "function");
    check_id(r, "function", f->function);
    f->num_regs = rd_u32(r, "num_regs");
    f->max_threads_per_block = rd_u32(r, "max_threads_per_block");
    f->static_shared_bytes = rd_u32(r, "static_shared_bytes");
    f->local_bytes = rd_u32(r, "local_bytes");
    f->const_bytes = rd_u32(r, "const_bytes");
    f->ptx_version = rd_u32(r, "ptx_version");
    f->binary_version = rd_u32(r, "binary_version");
    f->param_count = rd_u16(r, "param_count");
    check_func_param_count(r, f->param_count);
    if (f->param_count == GL_WIRE_PARAMS_UNKNOWN) break;
    r->elem = "param";
    for (unsigned i = 0; i < f->param_count && rd_ok(r); i++) {
      r->idx = i;
      f->param_sizes[i] = rd_u16(r, "size");
    }
    r->elem = NULL;
    break;
  }
  default: /* SESSION_CLOSE, MEM_FREE, MEM_WRITE, MEM_COPY, MEMSET,
            * MODULE_UNLOAD, LAUNCH: empty result */
    break;
  }
}

/* What session_result_decode() refuses, on a struct (for the encoder). */
static bool session_result_valid(const gl_response *resp) {
  rd r;
  rd_init(&r, NULL, 0, resp->op, NULL, 0);
  switch (resp->op) {
  case GL_OP_SESSION_OPEN:
  case GL_OP_MEM_ALLOC:
    check_id(&r, handle_field(resp->op), resp->u.handle);
    break;
  case GL_OP_SYNC:
    check_sync_error_status(&r, resp->u.sync.error_status);
    break;
  case GL_OP_MEM_READ:
    check_chunk(&r, "data_len", resp->u.mem_read.data_len, true);
    if (resp->u.mem_read.data_len > 0 && !resp->u.mem_read.data) return false;
    break;
  case GL_OP_MODULE_LOAD:
    check_id(&r, "module", resp->u.module_load.module);
    check_cache(&r, resp->u.module_load.cache);
    break;
  case GL_OP_FUNC_INFO:
    check_id(&r, "function", resp->u.func_info.function);
    check_func_param_count(&r, resp->u.func_info.param_count);
    break;
  default:
    break;
  }
  return rd_ok(&r);
}

static void session_result_put(gl_buf *b, const gl_response *resp) {
  switch (resp->op) {
  case GL_OP_SESSION_OPEN:
  case GL_OP_MEM_ALLOC:
    put_u64(b, resp->u.handle);
    break;
  case GL_OP_SYNC:
    put_u16(b, resp->u.sync.error_status);
    put_u16(b, resp->u.sync.error_op);
    put_u64(b, resp->u.sync.error_seq);
    break;
  case GL_OP_MEM_READ:
    put_u32(b, resp->u.mem_read.data_len);
    put_bytes(b, resp->u.mem_read.data, resp->u.mem_read.data_len);
    break;
  case GL_OP_MODULE_LOAD:
    put_u64(b, resp->u.module_load.module);
    put_u8(b, resp->u.module_load.cache);
    break;
  case GL_OP_FUNC_INFO: {
    const gl_func_info_resp *f = &resp->u.func_info;
    put_u64(b, f->function);
    put_u32(b, f->num_regs);
    put_u32(b, f->max_threads_per_block);
    put_u32(b, f->static_shared_bytes);
    put_u32(b, f->local_bytes);
    put_u32(b, f->const_bytes);
    put_u32(b, f->ptx_version);
    put_u32(b, f->binary_version);
    put_u16(b, f->param_count);
    if (f->param_count != GL_WIRE_PARAMS_UNKNOWN)
      for (unsigned i = 0; i < f->param_count; i++) put_u16(b, f->param_sizes[i]);
    break;
  }
  default:
    break;
  }
}

/* ========================================================================
 * Requests
 * ====================================================================== */

static bool op_known(uint16_t op) { return strcmp(gl_op_name(op), "UNKNOWN") != 0; }

gpulease_status gl_request_decode(const uint8_t *msg, size_t len, size_t max_body,
                                  gl_request *out, uint16_t *out_op, char *err, size_t errlen) {
  uint16_t op = 0;
  gl_header h;
  err_clear(err, errlen);
  memset(out, 0, sizeof *out);
  gpulease_status st =
      frame_check(msg, len, max_body, GL_WIRE_KIND_REQUEST, &h, &op, err, errlen);
  if (out_op) *out_op = op;
  if (st != GPULEASE_OK) return st;
  if (!op_known(op)) {
    errf(err, errlen, "unknown op 0x%04x", op);
    return GPULEASE_UNSUPPORTED;
  }
  rd r;
  rd_init(&r, msg + GL_WIRE_HEADER_SIZE, h.body_len, op, err, errlen);
  out->op = op;
  switch (op) {
  case GL_OP_GET_INVENTORY:
  case GL_OP_WORKER_PROBE:
    break;
  case GL_OP_LEASE_ALLOC:
    out->u.alloc.gpu_index = rd_u32(&r, "gpu_index");
    out->u.alloc.vram_bytes = rd_u64(&r, "vram_bytes");
    out->u.alloc.ttl_s = rd_u32(&r, "ttl_s");
    break;
  case GL_OP_LEASE_RENEW:
    auth_decode(&r, &out->u.renew.auth);
    out->u.renew.ttl_s = rd_u32(&r, "ttl_s");
    break;
  case GL_OP_LEASE_QUERY:
  case GL_OP_LEASE_FREE:
    auth_decode(&r, &out->u.auth);
    break;
  case GL_OP_GPU_SUBMIT:
    submit_decode(&r, &out->u.submit);
    break;
  case GL_OP_WORKER_INIT:
    out->u.worker_init.cuda_ordinal = rd_u32(&r, "cuda_ordinal");
    out->u.worker_init.vram_bytes = rd_u64(&r, "vram_bytes");
    break;
  default: /* the session ops */
    session_decode(&r, out);
    break;
  }
  rd_end(&r);
  if (r.st != GPULEASE_OK) memset(out, 0, sizeof *out);
  return r.st;
}

gpulease_status gl_request_validate(const gl_request *req, char *err, size_t errlen) {
  err_clear(err, errlen);
  if (!req) {
    errf(err, errlen, "request is NULL");
    return GPULEASE_INVALID_ARGUMENT;
  }
  if (!op_known(req->op)) {
    errf(err, errlen, "unknown op 0x%04x", req->op);
    return GPULEASE_INVALID_ARGUMENT;
  }
  rd r;
  rd_init(&r, NULL, 0, req->op, err, errlen);
  if (req->op == GL_OP_GPU_SUBMIT)
    submit_validate(&r, &req->u.submit);
  else if (gl_op_is_session(req->op))
    session_validate(&r, req);
  return r.st;
}

gpulease_status gl_request_encode(const gl_request *req, gl_buf *out) {
  if (!out || gl_request_validate(req, NULL, 0) != GPULEASE_OK)
    return GPULEASE_INVALID_ARGUMENT;
  if (out->oom) return GPULEASE_NO_MEMORY;
  size_t start = out->len;
  put_header(out, GL_WIRE_KIND_REQUEST, req->op, 0);
  switch (req->op) {
  case GL_OP_LEASE_ALLOC:
    put_u32(out, req->u.alloc.gpu_index);
    put_u64(out, req->u.alloc.vram_bytes);
    put_u32(out, req->u.alloc.ttl_s);
    break;
  case GL_OP_LEASE_RENEW:
    auth_put(out, &req->u.renew.auth);
    put_u32(out, req->u.renew.ttl_s);
    break;
  case GL_OP_LEASE_QUERY:
  case GL_OP_LEASE_FREE:
    auth_put(out, &req->u.auth);
    break;
  case GL_OP_GPU_SUBMIT:
    submit_put(out, &req->u.submit);
    break;
  case GL_OP_WORKER_INIT:
    put_u32(out, req->u.worker_init.cuda_ordinal);
    put_u64(out, req->u.worker_init.vram_bytes);
    break;
  case GL_OP_GET_INVENTORY:
  case GL_OP_WORKER_PROBE: /* empty body */
    break;
  default: /* the session ops */
    session_put(out, req);
    break;
  }
  return frame_finish(out, start);
}

/* ========================================================================
 * Responses
 * ====================================================================== */

static void check_gpu_count(rd *r, const char *field, unsigned n) {
  if (rd_ok(r) && n > GPULEASE_MAX_GPUS)
    rd_fail(r, GPULEASE_INVALID_ARGUMENT, "%s %u exceeds %d", field, n, GPULEASE_MAX_GPUS);
}

static void inventory_decode(rd *r, gl_inventory *inv) {
  inv->max_ttl_s = rd_u32(r, "max_ttl_s");
  rd_str8(r, "driver_version", inv->driver_version, sizeof inv->driver_version);
  inv->gpu_count = rd_u16(r, "gpu_count");
  check_gpu_count(r, "gpu_count", inv->gpu_count);
  r->elem = "gpu";
  for (unsigned i = 0; i < inv->gpu_count && rd_ok(r); i++) {
    gl_gpu_entry *g = &inv->gpus[i];
    r->idx = i;
    g->index = rd_u32(r, "index");
    rd_str8(r, "uuid", g->uuid, sizeof g->uuid);
    rd_str8(r, "name", g->name, sizeof g->name);
    g->cc_major = rd_u8(r, "cc_major");
    g->cc_minor = rd_u8(r, "cc_minor");
    g->sm_count = rd_u32(r, "sm_count");
    g->total_vram_bytes = rd_u64(r, "total_vram_bytes");
    g->free_vram_bytes = rd_u64(r, "free_vram_bytes");
    g->leased_vram_bytes = rd_u64(r, "leased_vram_bytes");
    g->active_leases = rd_u32(r, "active_leases");
    g->flags = rd_u32(r, "flags");
  }
  r->elem = NULL;
}

static void probe_decode(rd *r, gl_probe_resp *pr) {
  pr->count = rd_u16(r, "count");
  check_gpu_count(r, "count", pr->count);
  r->elem = "gpu";
  for (unsigned i = 0; i < pr->count && rd_ok(r); i++) {
    gl_probe_gpu *g = &pr->gpus[i];
    r->idx = i;
    rd_str8(r, "uuid", g->uuid, sizeof g->uuid);
    rd_str8(r, "name", g->name, sizeof g->name);
    g->cc_major = rd_u8(r, "cc_major");
    g->cc_minor = rd_u8(r, "cc_minor");
    g->sm_count = rd_u32(r, "sm_count");
    g->total_vram_bytes = rd_u64(r, "total_vram_bytes");
  }
  r->elem = NULL;
}

static void result_decode(rd *r, gl_response *out) {
  switch (out->op) {
  case GL_OP_GET_INVENTORY:
    inventory_decode(r, &out->u.inventory);
    break;
  case GL_OP_LEASE_ALLOC:
  case GL_OP_LEASE_RENEW:
  case GL_OP_LEASE_QUERY:
    lease_info_decode(r, &out->u.lease);
    break;
  case GL_OP_GPU_SUBMIT:
    out->u.submit.gpu_time_ns = rd_u64(r, "gpu_time_ns");
    out->u.submit.output_len = rd_u32(r, "output_len");
    out->u.submit.output = rd_take(r, out->u.submit.output_len, "output");
    break;
  case GL_OP_WORKER_INIT:
    out->u.worker_init.region_base = rd_u64(r, "region_base");
    rd_str8(r, "device_name", out->u.worker_init.device_name,
            sizeof out->u.worker_init.device_name);
    break;
  case GL_OP_WORKER_PROBE:
    probe_decode(r, &out->u.probe);
    break;
  case GL_OP_LEASE_FREE: /* empty result */
    break;
  default: /* the session ops */
    session_result_decode(r, out);
    break;
  }
}

gpulease_status gl_response_decode(const uint8_t *msg, size_t len, size_t max_body,
                                   gl_response *out, char *err, size_t errlen) {
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
    errf(err, errlen, "unknown op 0x%04x in an OK response", op);
    return GPULEASE_UNSUPPORTED;
  }
  rd r;
  rd_init(&r, msg + GL_WIRE_HEADER_SIZE, h.body_len, op, err, errlen);
  out->op = op;
  out->status = h.status;
  out->msg_len = rd_u16(&r, "msg_len");
  out->msg = (const char *)rd_take(&r, out->msg_len, "msg");
  if (h.status == GPULEASE_OK) result_decode(&r, out);
  rd_end(&r);
  if (r.st != GPULEASE_OK) memset(out, 0, sizeof *out);
  return r.st;
}

/* NUL-terminated within its array? (so put_str8 writes all of it) */
static bool str_fits(const char *s, size_t cap) { return strnlen(s, cap) < cap; }

static bool inventory_valid(const gl_inventory *inv) {
  if (inv->gpu_count > GPULEASE_MAX_GPUS) return false;
  if (!str_fits(inv->driver_version, sizeof inv->driver_version)) return false;
  for (unsigned i = 0; i < inv->gpu_count; i++)
    if (!str_fits(inv->gpus[i].uuid, sizeof inv->gpus[i].uuid) ||
        !str_fits(inv->gpus[i].name, sizeof inv->gpus[i].name))
      return false;
  return true;
}

static bool probe_valid(const gl_probe_resp *pr) {
  if (pr->count > GPULEASE_MAX_GPUS) return false;
  for (unsigned i = 0; i < pr->count; i++)
    if (!str_fits(pr->gpus[i].uuid, sizeof pr->gpus[i].uuid) ||
        !str_fits(pr->gpus[i].name, sizeof pr->gpus[i].name))
      return false;
  return true;
}

/* What gl_response_decode() would refuse, the encoder refuses too. */
static bool response_valid(const gl_response *resp) {
  if (resp->status >= 100) return false;
  if (resp->msg_len > 0 && !resp->msg) return false;
  if (resp->status != GPULEASE_OK) return true;
  switch (resp->op) {
  case GL_OP_GET_INVENTORY: return inventory_valid(&resp->u.inventory);
  case GL_OP_WORKER_PROBE: return probe_valid(&resp->u.probe);
  case GL_OP_WORKER_INIT:
    return str_fits(resp->u.worker_init.device_name, sizeof resp->u.worker_init.device_name);
  case GL_OP_GPU_SUBMIT: return resp->u.submit.output_len == 0 || resp->u.submit.output;
  default: return gl_op_is_session(resp->op) ? session_result_valid(resp) : op_known(resp->op);
  }
}

static void inventory_put(gl_buf *b, const gl_inventory *inv) {
  put_u32(b, inv->max_ttl_s);
  put_str8(b, inv->driver_version, sizeof inv->driver_version);
  put_u16(b, inv->gpu_count);
  for (unsigned i = 0; i < inv->gpu_count; i++) {
    const gl_gpu_entry *g = &inv->gpus[i];
    put_u32(b, g->index);
    put_str8(b, g->uuid, sizeof g->uuid);
    put_str8(b, g->name, sizeof g->name);
    put_u8(b, g->cc_major);
    put_u8(b, g->cc_minor);
    put_u32(b, g->sm_count);
    put_u64(b, g->total_vram_bytes);
    put_u64(b, g->free_vram_bytes);
    put_u64(b, g->leased_vram_bytes);
    put_u32(b, g->active_leases);
    put_u32(b, g->flags);
  }
}

static void probe_put(gl_buf *b, const gl_probe_resp *pr) {
  put_u16(b, pr->count);
  for (unsigned i = 0; i < pr->count; i++) {
    const gl_probe_gpu *g = &pr->gpus[i];
    put_str8(b, g->uuid, sizeof g->uuid);
    put_str8(b, g->name, sizeof g->name);
    put_u8(b, g->cc_major);
    put_u8(b, g->cc_minor);
    put_u32(b, g->sm_count);
    put_u64(b, g->total_vram_bytes);
  }
}

static void result_put(gl_buf *b, const gl_response *resp) {
  switch (resp->op) {
  case GL_OP_GET_INVENTORY:
    inventory_put(b, &resp->u.inventory);
    break;
  case GL_OP_LEASE_ALLOC:
  case GL_OP_LEASE_RENEW:
  case GL_OP_LEASE_QUERY:
    lease_info_put(b, &resp->u.lease);
    break;
  case GL_OP_GPU_SUBMIT:
    put_u64(b, resp->u.submit.gpu_time_ns);
    put_u32(b, resp->u.submit.output_len);
    put_bytes(b, resp->u.submit.output, resp->u.submit.output_len);
    break;
  case GL_OP_WORKER_INIT:
    put_u64(b, resp->u.worker_init.region_base);
    put_str8(b, resp->u.worker_init.device_name, sizeof resp->u.worker_init.device_name);
    break;
  case GL_OP_WORKER_PROBE:
    probe_put(b, &resp->u.probe);
    break;
  case GL_OP_LEASE_FREE: /* empty result */
    break;
  default: /* the session ops */
    session_result_put(b, resp);
    break;
  }
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
  put_u16(out, resp->msg_len);
  put_bytes(out, resp->msg, resp->msg_len);
  if (resp->status == GPULEASE_OK) result_put(out, resp);
  return frame_finish(out, start);
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
