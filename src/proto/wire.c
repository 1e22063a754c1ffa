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
 * The encoder checks a struct with the very same rules (the GPU_SUBMIT param
 * list is even checked by running the decoder's reader over it), so that
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

/* Reads `count` params and checks each kind, each scalar size and the
 * running total against GL_WIRE_MAX_PARAM_BYTES. Used by the decoder on the
 * body and by the encoder on a caller's params_raw. */
static void params_scan(rd *r, unsigned count) {
  size_t start = r->pos;
  char buf[64];
  r->elem = "param";
  for (unsigned i = 0; i < count && rd_ok(r); i++) {
    r->idx = i;
    uint8_t kind = rd_u8(r, "kind");
    if (!rd_ok(r)) break;
    if (kind == GPULEASE_PARAM_POINTER) {
      rd_u64(r, "offset");
    } else if (kind == GPULEASE_PARAM_SCALAR) {
      uint8_t size = rd_u8(r, "size");
      if (rd_ok(r) && (size < 1 || size > GPULEASE_MAX_SCALAR_BYTES))
        rd_fail(r, GPULEASE_INVALID_ARGUMENT, "%s %u out of range 1..%d",
                rd_field(r, "size", buf, sizeof buf), size, GPULEASE_MAX_SCALAR_BYTES);
      rd_take(r, size, "value");
    } else {
      rd_fail(r, GPULEASE_INVALID_ARGUMENT, "%s %u unknown (1 = pointer, 2 = scalar)",
              rd_field(r, "kind", buf, sizeof buf), kind);
    }
    if (rd_ok(r) && r->pos - start > GL_WIRE_MAX_PARAM_BYTES)
      rd_fail(r, GPULEASE_INVALID_ARGUMENT,
              "param list reaches %zu bytes at param[%u], over the limit of %d",
              r->pos - start, i, GL_WIRE_MAX_PARAM_BYTES);
  }
  r->elem = NULL;
}

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
  if (req->op == GL_OP_GPU_SUBMIT) submit_validate(&r, &req->u.submit);
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
  default: /* GET_INVENTORY, WORKER_PROBE: empty body */
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
  default: /* LEASE_FREE: empty result */
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
  default: return op_known(resp->op);
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
  default: /* LEASE_FREE: empty result */
    break;
  }
}

/* Refusals (not in wire.h's list, which predates them): INVALID_ARGUMENT
 * for a status >= 100, an OK response of an unknown op, a count above 64, a
 * string not NUL-terminated within its array, or a NULL pointer with a
 * non-zero length. Nothing is appended then. */
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
