/*
 * test_wire.c - unit tests of the gpulease/1 codec (src/proto/wire.c).
 *
 * Three kinds of test:
 *   - round trips: every op's request and response is encoded with the
 *     codec, decoded again and compared field by field; every prefix of
 *     each encoding is then fed to the decoder and must be refused;
 *   - a table of hand-built frames, each with the status (and the words of
 *     the message) the decoder must give. The frames are written by a small
 *     byte builder in this file straight from the layout in
 *     docs/protocol.md, not by the codec's encoder, so encoder and decoder
 *     cannot agree on a mistake unnoticed; boundary values that must be
 *     accepted (kernel name of 1024 bytes, 256 params, 4096 param bytes, 64
 *     GPUs) sit in the same table;
 *   - golden bytes: the hex example of docs/protocol.md, and the seed corpus
 *     of fuzz_wire (tests/fuzz-corpus/wire/), whose file names say whether
 *     each file must decode.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

#define MAX_BODY (1u << 20)

enum { DEC_REQ, DEC_RESP };

/* ========================================================================
 * Assertion helpers
 * ====================================================================== */

#define assert_status(got, want) assert_status_at((int)(got), (int)(want), __FILE__, __LINE__)
static void assert_status_at(int got, int want, const char *file, int line) {
  if (got != want)
    fail_msg("%s:%d: status %s (%d), expected %s (%d)", file, line, gpulease_status_name(got),
             got, gpulease_status_name(want), want);
}

#define assert_contains(hay, needle) assert_contains_at((hay), (needle), __FILE__, __LINE__)
static void assert_contains_at(const char *hay, const char *needle, const char *file, int line) {
  if (!strstr(hay, needle))
    fail_msg("%s:%d: message \"%s\" lacks \"%s\"", file, line, hay, needle);
}

/* ========================================================================
 * Independent frame builder (layout from docs/protocol.md)
 * ====================================================================== */

typedef struct frame {
  uint8_t b[80000];
  size_t n;
} frame;

static frame g_frame; /* the table's frame; too big for the stack */

static void fb_be(frame *f, uint64_t v, int n) {
  assert_true(f->n + (size_t)n <= sizeof f->b);
  for (int i = 0; i < n; i++) f->b[f->n++] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static void fb_fill(frame *f, int c, size_t n) {
  assert_true(f->n + n <= sizeof f->b);
  memset(f->b + f->n, c, n);
  f->n += n;
}

static void fb_header(frame *f, int kind, uint16_t op, uint16_t status) {
  f->n = 0;
  fb_be(f, 'G', 1);
  fb_be(f, 'L', 1);
  fb_be(f, 1, 1);
  fb_be(f, (uint64_t)kind, 1);
  fb_be(f, op, 2);
  fb_be(f, status, 2);
  fb_be(f, 0, 4);
}

/* Sets body_len to the bytes written after the header. */
static void fb_seal(frame *f) {
  uint32_t body = (uint32_t)(f->n - GL_WIRE_HEADER_SIZE);
  for (int i = 0; i < 4; i++) f->b[8 + i] = (uint8_t)(body >> (8 * (3 - i)));
}

static void fb_alloc(frame *f) {
  fb_header(f, GL_WIRE_KIND_REQUEST, GL_OP_LEASE_ALLOC, 0);
  fb_be(f, 0xFFFFFFFFu, 4);
  fb_be(f, 1u << 30, 8);
  fb_be(f, 300, 4);
  fb_seal(f);
}

typedef struct sub_spec {
  uint8_t fmt, flags;
  unsigned name_len;
  bool name_nul;      /* a NUL in the middle of the name */
  int param_count;    /* value of the field; -1: the params written */
  unsigned n_ptr;     /* pointer params written */
  unsigned n_scalar;  /* scalar params written, each scalar_size bytes */
  unsigned scalar_size;
  unsigned extra_scalar; /* non-zero: one more scalar of this size */
  int bad_kind;          /* >= 0: one more param of this kind */
  uint32_t image_len, input_len;
  unsigned trailing;
} sub_spec;

static sub_spec sub_default(void) {
  return (sub_spec){.fmt = 1, .flags = 1, .name_len = 6, .param_count = -1, .n_ptr = 1,
                    .n_scalar = 1, .scalar_size = 4, .bad_kind = -1, .image_len = 16, .input_len = 8};
}

static void fb_submit(frame *f, const sub_spec *s) {
  fb_header(f, GL_WIRE_KIND_REQUEST, GL_OP_GPU_SUBMIT, 0);
  fb_be(f, 42, 8);        /* lease_id */
  fb_fill(f, 0xAB, 16);   /* secret */
  fb_be(f, s->fmt, 1);
  fb_be(f, s->flags, 1);
  fb_be(f, s->name_len, 2);
  for (unsigned i = 0; i < s->name_len; i++)
    fb_be(f, s->name_nul && i == s->name_len / 2 ? 0 : 'k', 1);
  const uint32_t dims[7] = {1, 2, 3, 32, 1, 1, 0}; /* grid, block, shared */
  for (int i = 0; i < 7; i++) fb_be(f, dims[i], 4);
  fb_be(f, 0, 8);  /* input_offset */
  fb_be(f, 64, 8); /* output_offset */
  fb_be(f, 8, 8);  /* output_size */
  unsigned n = s->n_ptr + s->n_scalar + (s->extra_scalar ? 1 : 0) + (s->bad_kind >= 0 ? 1 : 0);
  fb_be(f, s->param_count < 0 ? n : (unsigned)s->param_count, 2);
  for (unsigned i = 0; i < s->n_ptr; i++) {
    fb_be(f, 1, 1);
    fb_be(f, 8u * i, 8);
  }
  for (unsigned i = 0; i < s->n_scalar; i++) {
    fb_be(f, 2, 1);
    fb_be(f, s->scalar_size, 1);
    fb_fill(f, 0x11, s->scalar_size);
  }
  if (s->extra_scalar) {
    fb_be(f, 2, 1);
    fb_be(f, s->extra_scalar, 1);
    fb_fill(f, 0x33, s->extra_scalar);
  }
  if (s->bad_kind >= 0) {
    fb_be(f, (uint64_t)s->bad_kind, 1);
    fb_fill(f, 0, 8);
  }
  fb_be(f, s->image_len, 4);
  fb_fill(f, 'P', s->image_len);
  fb_be(f, s->input_len, 4);
  fb_fill(f, 0x22, s->input_len);
  fb_fill(f, 0, s->trailing);
  fb_seal(f);
}

static void fb_str8(frame *f, unsigned len, int c, bool nul) {
  fb_be(f, len, 1);
  for (unsigned i = 0; i < len; i++) fb_be(f, nul && i == len / 2 ? 0 : (uint64_t)c, 1);
}

static void fb_inventory(frame *f, unsigned ngpus, unsigned drv_len, unsigned uuid_len,
                         bool name_nul) {
  fb_header(f, GL_WIRE_KIND_RESPONSE, GL_OP_GET_INVENTORY, 0);
  fb_be(f, 0, 2);     /* msg_len */
  fb_be(f, 3600, 4);  /* max_ttl_s */
  fb_str8(f, drv_len, 'd', false);
  fb_be(f, ngpus, 2);
  for (unsigned i = 0; i < ngpus; i++) {
    fb_be(f, i, 4);
    fb_str8(f, uuid_len, 'u', false);
    fb_str8(f, 11, 'n', name_nul);
    fb_be(f, 9, 1);
    fb_be(f, 0, 1);
    fb_be(f, 132, 4);
    fb_be(f, 85ull << 30, 8);
    fb_be(f, 80ull << 30, 8);
    fb_be(f, 1ull << 30, 8);
    fb_be(f, 1, 4);
    fb_be(f, 0, 4);
  }
  fb_seal(f);
}

static void fb_error_resp(frame *f, uint16_t op, uint16_t status, const char *msg) {
  fb_header(f, GL_WIRE_KIND_RESPONSE, op, status);
  fb_be(f, strlen(msg), 2);
  for (const char *p = msg; *p; p++) fb_be(f, (uint8_t)*p, 1);
  fb_seal(f);
}

/* ========================================================================
 * Table builders: each takes one integer argument
 * ====================================================================== */

/* First n bytes of a LEASE_ALLOC request (n < 12: header only). */
static void b_alloc_prefix(frame *f, long n) {
  fb_alloc(f);
  f->n = (size_t)n;
}

/* A LEASE_ALLOC request with byte (arg >> 8) set to (arg & 0xFF). */
static void b_alloc_patch(frame *f, long arg) {
  fb_alloc(f);
  f->b[arg >> 8] = (uint8_t)(arg & 0xFF);
}

/* Version 2 and the given kind: version is checked first. */
static void b_alloc_v2_kind(frame *f, long kind) {
  fb_alloc(f);
  f->b[2] = 2;
  f->b[3] = (uint8_t)kind;
}

static void b_alloc_op(frame *f, long op) {
  fb_alloc(f);
  f->b[4] = (uint8_t)(op >> 8);
  f->b[5] = (uint8_t)op;
}

static void b_alloc_body_len_delta(frame *f, long delta) {
  fb_alloc(f);
  f->b[11] = (uint8_t)(f->b[11] + delta);
}

static void b_alloc_body_len(frame *f, long body_len) {
  fb_alloc(f);
  for (int i = 0; i < 4; i++) f->b[8 + i] = (uint8_t)((unsigned long)body_len >> (8 * (3 - i)));
}

static void b_alloc_trailing(frame *f, long n) {
  fb_alloc(f);
  fb_fill(f, 0, (size_t)n);
  fb_seal(f);
}

static void b_alloc_short_body(frame *f, long n) {
  fb_alloc(f);
  f->n = GL_WIRE_HEADER_SIZE + (size_t)n;
  fb_seal(f);
}

static void b_inventory_req(frame *f, long body) {
  fb_header(f, GL_WIRE_KIND_REQUEST, GL_OP_GET_INVENTORY, 0);
  fb_fill(f, 0, (size_t)body);
  fb_seal(f);
}

static void b_sub_default(frame *f, long unused) {
  (void)unused;
  sub_spec s = sub_default();
  fb_submit(f, &s);
}

static void b_sub_name_len(frame *f, long n) {
  sub_spec s = sub_default();
  s.name_len = (unsigned)n;
  fb_submit(f, &s);
}

static void b_sub_name_nul(frame *f, long n) {
  sub_spec s = sub_default();
  s.name_len = (unsigned)n;
  s.name_nul = true;
  fb_submit(f, &s);
}

static void b_sub_n_ptr(frame *f, long n) {
  sub_spec s = sub_default();
  s.n_ptr = (unsigned)n;
  s.n_scalar = 0;
  fb_submit(f, &s);
}

static void b_sub_noflag_params(frame *f, long n) {
  sub_spec s = sub_default();
  s.flags = 0;
  s.n_ptr = (unsigned)n;
  s.n_scalar = 0;
  fb_submit(f, &s);
}

static void b_sub_scalar_size(frame *f, long n) {
  sub_spec s = sub_default();
  s.n_ptr = 0;
  s.n_scalar = 1;
  s.scalar_size = (unsigned)n;
  fb_submit(f, &s);
}

static void b_sub_kind(frame *f, long kind) {
  sub_spec s = sub_default();
  s.bad_kind = (int)kind;
  fb_submit(f, &s);
}

/* 62 scalars of 64 bytes (62 x 66 = 4092 bytes) and one of `last` bytes:
 * last 2 gives exactly 4096 bytes, last 3 gives 4097. */
static void b_sub_param_bytes(frame *f, long last) {
  sub_spec s = sub_default();
  s.n_ptr = 0;
  s.n_scalar = 62;
  s.scalar_size = 64;
  s.extra_scalar = (unsigned)last;
  fb_submit(f, &s);
}

static void b_sub_image_len(frame *f, long n) {
  sub_spec s = sub_default();
  s.image_len = (uint32_t)n;
  fb_submit(f, &s);
}

static void b_sub_input_len(frame *f, long n) {
  sub_spec s = sub_default();
  s.input_len = (uint32_t)n;
  fb_submit(f, &s);
}

static void b_sub_format(frame *f, long fmt) {
  sub_spec s = sub_default();
  s.fmt = (uint8_t)fmt;
  fb_submit(f, &s);
}

static void b_sub_flags(frame *f, long flags) {
  sub_spec s = sub_default();
  s.flags = (uint8_t)flags;
  fb_submit(f, &s);
}

static void b_sub_trailing(frame *f, long n) {
  sub_spec s = sub_default();
  s.trailing = (unsigned)n;
  fb_submit(f, &s);
}

/* param_count says one more param than the list holds: the parser takes
 * image_len's first byte (0) as a kind. */
static void b_sub_count_plus_one(frame *f, long unused) {
  (void)unused;
  sub_spec s = sub_default();
  s.param_count = (int)(s.n_ptr + s.n_scalar + 1);
  fb_submit(f, &s);
}

static void b_inv_gpus(frame *f, long n) { fb_inventory(f, (unsigned)n, 9, 40, false); }
static void b_inv_uuid_len(frame *f, long n) { fb_inventory(f, 2, 9, (unsigned)n, false); }
static void b_inv_drv_len(frame *f, long n) { fb_inventory(f, 1, (unsigned)n, 40, false); }
static void b_inv_name_nul(frame *f, long unused) {
  (void)unused;
  fb_inventory(f, 1, 9, 40, true);
}

/* An inventory response cut after n body bytes (body_len patched). */
static void b_inv_cut(frame *f, long n) {
  fb_inventory(f, 2, 9, 40, false);
  f->n = GL_WIRE_HEADER_SIZE + (size_t)n;
  fb_seal(f);
}

static void b_resp_status(frame *f, long status) {
  fb_error_resp(f, GL_OP_LEASE_FREE, (uint16_t)status, "no such lease");
}

static void b_resp_err_op(frame *f, long op) {
  fb_error_resp(f, (uint16_t)op, GPULEASE_UNSUPPORTED, "unknown op");
}

static void b_resp_ok_op(frame *f, long op) {
  fb_header(f, GL_WIRE_KIND_RESPONSE, (uint16_t)op, 0);
  fb_be(f, 0, 2);
  fb_seal(f);
}

static void b_resp_patch(frame *f, long arg) {
  fb_error_resp(f, GL_OP_LEASE_QUERY, GPULEASE_NOT_FOUND, "lease 9 not found");
  f->b[arg >> 8] = (uint8_t)(arg & 0xFF);
}

static void b_resp_err_trailing(frame *f, long n) {
  fb_error_resp(f, GL_OP_LEASE_QUERY, GPULEASE_NOT_FOUND, "lease 9 not found");
  fb_fill(f, 0, (size_t)n);
  fb_seal(f);
}

/* msg_len says n more bytes than the body holds. */
static void b_resp_msg_len_over(frame *f, long n) {
  fb_error_resp(f, GL_OP_LEASE_QUERY, GPULEASE_NOT_FOUND, "abc");
  f->b[13] = (uint8_t)(3 + n);
}

static void b_resp_submit_output(frame *f, long declared) {
  fb_header(f, GL_WIRE_KIND_RESPONSE, GL_OP_GPU_SUBMIT, 0);
  fb_be(f, 0, 2);
  fb_be(f, 1000, 8);
  fb_be(f, (uint64_t)declared, 4);
  fb_fill(f, 0x5A, 8);
  fb_seal(f);
}

static void b_resp_probe(frame *f, long n) {
  fb_header(f, GL_WIRE_KIND_RESPONSE, GL_OP_WORKER_PROBE, 0);
  fb_be(f, 0, 2);
  fb_be(f, (uint64_t)n, 2);
  for (long i = 0; i < n; i++) {
    fb_str8(f, 5, 'u', false);
    fb_str8(f, 5, 'n', false);
    fb_be(f, 8, 1);
    fb_be(f, 9, 1);
    fb_be(f, 108, 4);
    fb_be(f, 40ull << 30, 8);
  }
  fb_seal(f);
}

/* A LEASE_QUERY OK response, lease_info cut to n of its 56 bytes. */
static void b_resp_lease(frame *f, long n) {
  fb_header(f, GL_WIRE_KIND_RESPONSE, GL_OP_LEASE_QUERY, 0);
  fb_be(f, 0, 2);
  fb_fill(f, 0x01, (size_t)n);
  fb_seal(f);
}

/* ========================================================================
 * The malformed-frame table
 * ====================================================================== */

#define MB_BODY -1      /* max_body = the frame's body length */
#define MB_BODY_LESS -2 /* max_body = the frame's body length - 1 */

typedef struct bad_case {
  const char *name;
  int dec; /* DEC_REQ or DEC_RESP */
  void (*build)(frame *, long);
  long arg;
  long max_body; /* 0: MAX_BODY, or MB_* */
  gpulease_status want;
  const char *msg; /* substring the error message must hold; NULL: none */
} bad_case;

#define PATCH(off, val) (((long)(off) << 8) | (val))

static const bad_case bad_cases[] = {
    /* framing */
    {"empty", DEC_REQ, b_alloc_prefix, 0, 0, GPULEASE_MALFORMED, "empty message"},
    {"short header 1", DEC_REQ, b_alloc_prefix, 1, 0, GPULEASE_MALFORMED, "short header: 1 bytes"},
    {"short header 11", DEC_REQ, b_alloc_prefix, 11, 0, GPULEASE_MALFORMED, "need 12"},
    {"bad magic 0", DEC_REQ, b_alloc_patch, PATCH(0, 'X'), 0, GPULEASE_MALFORMED, "bad magic 0x584c"},
    {"bad magic 1", DEC_REQ, b_alloc_patch, PATCH(1, 'l'), 0, GPULEASE_MALFORMED, "bad magic"},
    {"kind 2", DEC_REQ, b_alloc_patch, PATCH(3, 2), 0, GPULEASE_MALFORMED, "bad kind 2"},
    {"kind 255", DEC_RESP, b_alloc_patch, PATCH(3, 255), 0, GPULEASE_MALFORMED, "bad kind 255"},
    {"response to request decoder", DEC_REQ, b_resp_status, GPULEASE_NOT_FOUND, 0,
     GPULEASE_MALFORMED, "expected a request (kind 0), got a response (kind 1)"},
    {"request to response decoder", DEC_RESP, b_alloc_prefix, 28, 0, GPULEASE_MALFORMED,
     "expected a response"},
    {"version 2", DEC_REQ, b_alloc_patch, PATCH(2, 2), 0, GPULEASE_UNSUPPORTED,
     "unsupported protocol version 2"},
    {"version 0", DEC_REQ, b_alloc_patch, PATCH(2, 0), 0, GPULEASE_UNSUPPORTED, "version 0"},
    {"version 2 response", DEC_RESP, b_resp_patch, PATCH(2, 2), 0, GPULEASE_UNSUPPORTED,
     "version 2"},
    {"version checked before kind", DEC_REQ, b_alloc_v2_kind, 9, 0, GPULEASE_UNSUPPORTED,
     "version 2"},
    {"unknown op 0x0999", DEC_REQ, b_alloc_op, 0x0999, 0, GPULEASE_UNSUPPORTED,
     "unknown op 0x0999"},
    {"op 0", DEC_REQ, b_alloc_op, 0, 0, GPULEASE_UNSUPPORTED, "unknown op 0x0000"},
    {"op 0xFFFF", DEC_REQ, b_alloc_op, 0xFFFF, 0, GPULEASE_UNSUPPORTED, "0xffff"},
    {"request status non-zero", DEC_REQ, b_alloc_patch, PATCH(7, 3), 0, GPULEASE_MALFORMED,
     "request header status must be 0, got 3"},
    {"body_len larger than present", DEC_REQ, b_alloc_body_len_delta, 1, 0, GPULEASE_MALFORMED,
     "truncated: header says body_len 17 but 16 bytes present"},
    {"body_len smaller than present", DEC_REQ, b_alloc_body_len_delta, -1, 0, GPULEASE_MALFORMED,
     "trailing bytes: header says body_len 15 but 16 bytes present"},
    {"body_len 0xFFFFFFFF over max_body", DEC_REQ, b_alloc_body_len, 0xFFFFFFFFL, 0,
     GPULEASE_TOO_LARGE, "body_len 4294967295 exceeds the limit of 1048576 bytes"},
    {"alloc body short", DEC_REQ, b_alloc_short_body, 15, 0, GPULEASE_MALFORMED,
     "LEASE_ALLOC: truncated in ttl_s: needs 4 bytes at body offset 12, 3 left"},
    {"alloc trailing byte", DEC_REQ, b_alloc_trailing, 1, 0, GPULEASE_MALFORMED,
     "LEASE_ALLOC: 1 trailing bytes"},
    {"inventory request with body", DEC_REQ, b_inventory_req, 1, 0, GPULEASE_MALFORMED,
     "GET_INVENTORY: 1 trailing bytes"},
    {"inventory request empty", DEC_REQ, b_inventory_req, 0, 0, GPULEASE_OK, NULL},

    /* GPU_SUBMIT limits */
    {"submit default", DEC_REQ, b_sub_default, 0, 0, GPULEASE_OK, NULL},
    {"submit trailing byte", DEC_REQ, b_sub_trailing, 1, 0, GPULEASE_MALFORMED,
     "GPU_SUBMIT: 1 trailing bytes"},
    {"kernel name 0", DEC_REQ, b_sub_name_len, 0, 0, GPULEASE_INVALID_ARGUMENT,
     "GPU_SUBMIT: kernel_name_len 0 out of range 1..1024"},
    {"kernel name 1025", DEC_REQ, b_sub_name_len, 1025, 0, GPULEASE_INVALID_ARGUMENT,
     "kernel_name_len 1025 out of range 1..1024"},
    {"kernel name 65535", DEC_REQ, b_sub_name_len, 65535, 0, GPULEASE_INVALID_ARGUMENT,
     "kernel_name_len 65535"},
    {"kernel name 1", DEC_REQ, b_sub_name_len, 1, 0, GPULEASE_OK, NULL},
    {"kernel name 1024", DEC_REQ, b_sub_name_len, 1024, 0, GPULEASE_OK, NULL},
    {"kernel name with NUL", DEC_REQ, b_sub_name_nul, 6, 0, GPULEASE_INVALID_ARGUMENT,
     "kernel_name contains a NUL byte at offset 3"},
    {"param_count 257", DEC_REQ, b_sub_n_ptr, 257, 0, GPULEASE_INVALID_ARGUMENT,
     "param_count 257 exceeds 256"},
    {"param_count 256", DEC_REQ, b_sub_n_ptr, 256, 0, GPULEASE_OK, NULL},
    {"param_count 0 with flag", DEC_REQ, b_sub_n_ptr, 0, 0, GPULEASE_OK, NULL},
    {"no flag, no params", DEC_REQ, b_sub_noflag_params, 0, 0, GPULEASE_OK, NULL},
    {"params without flag", DEC_REQ, b_sub_noflag_params, 2, 0, GPULEASE_INVALID_ARGUMENT,
     "param_count 2 but flags bit 0"},
    {"param_count past the list", DEC_REQ, b_sub_count_plus_one, 0, 0, GPULEASE_INVALID_ARGUMENT,
     "param[2].kind 0 unknown"},
    {"scalar size 0", DEC_REQ, b_sub_scalar_size, 0, 0, GPULEASE_INVALID_ARGUMENT,
     "param[0].size 0 out of range 1..64"},
    {"scalar size 65", DEC_REQ, b_sub_scalar_size, 65, 0, GPULEASE_INVALID_ARGUMENT,
     "param[0].size 65 out of range 1..64"},
    {"scalar size 1", DEC_REQ, b_sub_scalar_size, 1, 0, GPULEASE_OK, NULL},
    {"scalar size 64", DEC_REQ, b_sub_scalar_size, 64, 0, GPULEASE_OK, NULL},
    {"param kind 0", DEC_REQ, b_sub_kind, 0, 0, GPULEASE_INVALID_ARGUMENT,
     "param[2].kind 0 unknown"},
    {"param kind 3", DEC_REQ, b_sub_kind, 3, 0, GPULEASE_INVALID_ARGUMENT,
     "param[2].kind 3 unknown"},
    {"params exactly 4096 bytes", DEC_REQ, b_sub_param_bytes, 2, 0, GPULEASE_OK, NULL},
    {"params 4097 bytes", DEC_REQ, b_sub_param_bytes, 3, 0, GPULEASE_INVALID_ARGUMENT,
     "param list reaches 4097 bytes at param[62], over the limit of 4096"},
    {"image_len 0", DEC_REQ, b_sub_image_len, 0, 0, GPULEASE_INVALID_ARGUMENT, "image_len 0"},
    {"image_len 1", DEC_REQ, b_sub_image_len, 1, 0, GPULEASE_OK, NULL},
    {"input_len 0", DEC_REQ, b_sub_input_len, 0, 0, GPULEASE_OK, NULL},
    {"image_format 0", DEC_REQ, b_sub_format, 0, 0, GPULEASE_OK, NULL},
    {"image_format 3", DEC_REQ, b_sub_format, 3, 0, GPULEASE_OK, NULL},
    {"image_format 4", DEC_REQ, b_sub_format, 4, 0, GPULEASE_INVALID_ARGUMENT,
     "image_format 4 out of range 0..3"},
    {"image_format 255", DEC_REQ, b_sub_format, 255, 0, GPULEASE_INVALID_ARGUMENT,
     "image_format 255"},
    {"flags 0x02", DEC_REQ, b_sub_flags, 0x02, 0, GPULEASE_INVALID_ARGUMENT,
     "flags 0x02 has unknown bits 0x02"},
    {"flags 0x81", DEC_REQ, b_sub_flags, 0x81, 0, GPULEASE_INVALID_ARGUMENT,
     "flags 0x81 has unknown bits 0x80"},
    {"body == max_body", DEC_REQ, b_sub_default, 0, MB_BODY, GPULEASE_OK, NULL},
    {"body over max_body", DEC_REQ, b_sub_default, 0, MB_BODY_LESS, GPULEASE_TOO_LARGE,
     "exceeds the limit of"},

    /* responses */
    {"inventory 0 GPUs", DEC_RESP, b_inv_gpus, 0, 0, GPULEASE_OK, NULL},
    {"inventory 64 GPUs", DEC_RESP, b_inv_gpus, 64, 0, GPULEASE_OK, NULL},
    {"inventory gpu_count 65", DEC_RESP, b_inv_gpus, 65, 0, GPULEASE_INVALID_ARGUMENT,
     "GET_INVENTORY: gpu_count 65 exceeds 64"},
    {"inventory uuid 95 bytes", DEC_RESP, b_inv_uuid_len, 95, 0, GPULEASE_OK, NULL},
    {"inventory uuid 96 bytes", DEC_RESP, b_inv_uuid_len, 96, 0, GPULEASE_INVALID_ARGUMENT,
     "gpu[0].uuid length 96 exceeds 95 bytes"},
    {"inventory driver 63 bytes", DEC_RESP, b_inv_drv_len, 63, 0, GPULEASE_OK, NULL},
    {"inventory driver 64 bytes", DEC_RESP, b_inv_drv_len, 64, 0, GPULEASE_INVALID_ARGUMENT,
     "driver_version length 64 exceeds 63 bytes"},
    {"inventory name with NUL", DEC_RESP, b_inv_name_nul, 0, 0, GPULEASE_INVALID_ARGUMENT,
     "gpu[0].name contains a NUL byte"},
    {"inventory cut in gpu[1]", DEC_RESP, b_inv_cut, 200, 0, GPULEASE_MALFORMED,
     "truncated in gpu[1]."},
    {"status 15 (INTERNAL)", DEC_RESP, b_resp_status, 15, 0, GPULEASE_OK, NULL},
    {"status 99 (future)", DEC_RESP, b_resp_status, 99, 0, GPULEASE_OK, NULL},
    {"status 100 on the wire", DEC_RESP, b_resp_status, 100, 0, GPULEASE_MALFORMED,
     "status 100 is not a wire status"},
    {"error response, unknown op", DEC_RESP, b_resp_err_op, 0x0999, 0, GPULEASE_OK, NULL},
    {"error response, op 0", DEC_RESP, b_resp_err_op, 0, 0, GPULEASE_OK, NULL},
    {"OK response, unknown op", DEC_RESP, b_resp_ok_op, 0x0999, 0, GPULEASE_UNSUPPORTED,
     "unknown op 0x0999 in an OK response"},
    {"OK response, LEASE_FREE", DEC_RESP, b_resp_ok_op, GL_OP_LEASE_FREE, 0, GPULEASE_OK, NULL},
    {"error response trailing byte", DEC_RESP, b_resp_err_trailing, 1, 0, GPULEASE_MALFORMED,
     "LEASE_QUERY: 1 trailing bytes"},
    {"msg_len past the body", DEC_RESP, b_resp_msg_len_over, 1, 0, GPULEASE_MALFORMED,
     "LEASE_QUERY: truncated in msg: needs 4 bytes at body offset 2, 3 left"},
    {"response body_len larger", DEC_RESP, b_resp_patch, PATCH(11, 200), 0, GPULEASE_MALFORMED,
     "truncated: header says body_len 200"},
    {"submit output_len 8", DEC_RESP, b_resp_submit_output, 8, 0, GPULEASE_OK, NULL},
    {"submit output_len past the body", DEC_RESP, b_resp_submit_output, 9, 0, GPULEASE_MALFORMED,
     "GPU_SUBMIT: truncated in output"},
    {"submit output_len short", DEC_RESP, b_resp_submit_output, 7, 0, GPULEASE_MALFORMED,
     "1 trailing bytes"},
    {"probe 64 GPUs", DEC_RESP, b_resp_probe, 64, 0, GPULEASE_OK, NULL},
    {"probe count 65", DEC_RESP, b_resp_probe, 65, 0, GPULEASE_INVALID_ARGUMENT,
     "WORKER_PROBE: count 65 exceeds 64"},
    {"lease_info whole", DEC_RESP, b_resp_lease, 56, 0, GPULEASE_OK, NULL},
    {"lease_info short", DEC_RESP, b_resp_lease, 55, 0, GPULEASE_MALFORMED,
     "LEASE_QUERY: truncated in submits"},
    {"lease_info long", DEC_RESP, b_resp_lease, 57, 0, GPULEASE_MALFORMED, "trailing bytes"},
    {"response over max_body", DEC_RESP, b_inv_gpus, 2, MB_BODY_LESS, GPULEASE_TOO_LARGE,
     "exceeds the limit"},
};

/* Decodes f with the case's decoder; an accepted frame must re-encode to
 * exactly the same bytes (the encoding is canonical). */
static void run_bad_case(const bad_case *c) {
  static gl_request req;
  static gl_response resp;
  frame *f = &g_frame;
  c->build(f, c->arg);
  size_t body = f->n >= GL_WIRE_HEADER_SIZE ? f->n - GL_WIRE_HEADER_SIZE : 0;
  size_t max_body = c->max_body == MB_BODY        ? body
                    : c->max_body == MB_BODY_LESS ? body - 1
                                                  : MAX_BODY;
  /* An exact-size heap copy, so ASan flags any read past the frame. */
  uint8_t *msg = malloc(f->n ? f->n : 1);
  assert_non_null(msg);
  memcpy(msg, f->b, f->n);
  char err[512];
  gpulease_status st;
  if (c->dec == DEC_REQ)
    st = gl_request_decode(msg, f->n, max_body, &req, NULL, err, sizeof err);
  else
    st = gl_response_decode(msg, f->n, max_body, &resp, err, sizeof err);
  if (st != c->want)
    fail_msg("case \"%s\": status %s, expected %s (message: \"%s\")", c->name,
             gpulease_status_name(st), gpulease_status_name(c->want), err);
  if (st != GPULEASE_OK) {
    assert_true(err[0] != '\0');
    if (c->msg && !strstr(err, c->msg))
      fail_msg("case \"%s\": message \"%s\" lacks \"%s\"", c->name, err, c->msg);
  } else {
    assert_string_equal(err, "");
    gl_buf b;
    gl_buf_init(&b);
    st = c->dec == DEC_REQ ? gl_request_encode(&req, &b) : gl_response_encode(&resp, &b);
    if (st != GPULEASE_OK || b.len != f->n || memcmp(b.data, msg, f->n) != 0)
      fail_msg("case \"%s\": accepted frame does not re-encode to the same bytes", c->name);
    gl_buf_free(&b);
  }
  free(msg);
}

static void test_malformed_table(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) run_bad_case(&bad_cases[i]);
}

/* ========================================================================
 * Every prefix of a valid message is refused
 * ====================================================================== */

/* For every k < len: the first k bytes as they are (the header's body_len
 * then disagrees), and, from k = 12 on, with body_len patched to k - 12, so
 * the body parser itself meets the end inside a field. Both must give
 * MALFORMED and a message, never crash or read past k bytes. */
static void check_all_prefixes(const uint8_t *full, size_t len, int dec) {
  static gl_request req;
  static gl_response resp;
  char err[512];
  for (size_t k = 0; k < len; k++) {
    uint8_t *p = malloc(k ? k : 1);
    assert_non_null(p);
    memcpy(p, full, k);
    for (int patched = 0; patched <= (k >= GL_WIRE_HEADER_SIZE); patched++) {
      if (patched) {
        uint32_t body = (uint32_t)(k - GL_WIRE_HEADER_SIZE);
        for (int i = 0; i < 4; i++) p[8 + i] = (uint8_t)(body >> (8 * (3 - i)));
      }
      gpulease_status st =
          dec == DEC_REQ ? gl_request_decode(p, k, MAX_BODY, &req, NULL, err, sizeof err)
                         : gl_response_decode(p, k, MAX_BODY, &resp, err, sizeof err);
      if (st != GPULEASE_MALFORMED)
        fail_msg("prefix %zu/%zu (body_len %s): status %s, expected MALFORMED (\"%s\")", k, len,
                 patched ? "patched" : "as sent", gpulease_status_name(st), err);
      const char *want = k == 0 ? "empty message"
                         : k < GL_WIRE_HEADER_SIZE ? "short header"
                         : patched                 ? "truncated in"
                                                   : "truncated: header says body_len";
      if (!strstr(err, want))
        fail_msg("prefix %zu/%zu: message \"%s\" lacks \"%s\"", k, len, err, want);
    }
    free(p);
  }
}

static void test_submit_every_prefix(void **state) {
  (void)state;
  sub_spec s = sub_default();
  s.n_ptr = 2;
  s.n_scalar = 2;
  fb_submit(&g_frame, &s);
  static uint8_t copy[sizeof g_frame.b];
  size_t n = g_frame.n;
  memcpy(copy, g_frame.b, n);
  check_all_prefixes(copy, n, DEC_REQ);
}

/* ========================================================================
 * Round trips through the codec
 * ====================================================================== */

/* Public params as libgpulease's helpers fill them (that library is not
 * linked here). */
static gpulease_param param_pointer(uint64_t offset) {
  gpulease_param p;
  memset(&p, 0, sizeof p);
  p.kind = GPULEASE_PARAM_POINTER;
  p.offset = offset;
  return p;
}

static gpulease_param param_scalar(const void *value, uint32_t size) {
  gpulease_param p;
  memset(&p, 0, sizeof p);
  p.kind = GPULEASE_PARAM_SCALAR;
  p.size = size;
  memcpy(p.value, value, size);
  return p;
}

static const uint8_t SECRET[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                   0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF};

/* Encodes req, decodes it into *out, checks the op, then every prefix. */
static void req_roundtrip(const gl_request *req, gl_request *out, size_t want_len) {
  gl_buf b;
  gl_buf_init(&b);
  assert_status(gl_request_encode(req, &b), GPULEASE_OK);
  assert_int_equal(b.len, want_len);
  char err[256];
  uint16_t op = 0;
  assert_status(gl_request_decode(b.data, b.len, MAX_BODY, out, &op, err, sizeof err),
                GPULEASE_OK);
  assert_int_equal(op, req->op);
  assert_int_equal(out->op, req->op);
  check_all_prefixes(b.data, b.len, DEC_REQ);
  /* The decoded struct borrows from b; keep a copy alive for the caller. */
  static uint8_t keep[1 << 16];
  assert_true(b.len <= sizeof keep);
  memcpy(keep, b.data, b.len);
  assert_status(gl_request_decode(keep, b.len, MAX_BODY, out, NULL, err, sizeof err),
                GPULEASE_OK);
  gl_buf_free(&b);
}

static void resp_roundtrip(const gl_response *resp, gl_response *out, size_t want_len) {
  gl_buf b;
  gl_buf_init(&b);
  assert_status(gl_response_encode(resp, &b), GPULEASE_OK);
  assert_int_equal(b.len, want_len);
  check_all_prefixes(b.data, b.len, DEC_RESP);
  static uint8_t keep[1 << 16];
  assert_true(b.len <= sizeof keep);
  memcpy(keep, b.data, b.len);
  gl_buf_free(&b);
  char err[256];
  assert_status(gl_response_decode(keep, want_len, MAX_BODY, out, err, sizeof err), GPULEASE_OK);
  assert_int_equal(out->op, resp->op);
  assert_int_equal(out->status, resp->status);
  assert_int_equal(out->msg_len, resp->msg_len);
  if (resp->msg_len) assert_memory_equal(out->msg, resp->msg, resp->msg_len);
}

static void test_req_empty_bodies(void **state) {
  (void)state;
  static gl_request req, out;
  const uint16_t ops[] = {GL_OP_GET_INVENTORY, GL_OP_WORKER_PROBE};
  for (size_t i = 0; i < 2; i++) {
    memset(&req, 0, sizeof req);
    req.op = ops[i];
    req_roundtrip(&req, &out, GL_WIRE_HEADER_SIZE);
  }
}

static void test_req_lease_ops(void **state) {
  (void)state;
  static gl_request req, out;

  memset(&req, 0, sizeof req);
  req.op = GL_OP_LEASE_ALLOC;
  req.u.alloc.gpu_index = GPULEASE_ANY_GPU;
  req.u.alloc.vram_bytes = 0x123456789ABCull;
  req.u.alloc.ttl_s = 300;
  req_roundtrip(&req, &out, 12 + 16);
  assert_int_equal(out.u.alloc.gpu_index, 0xFFFFFFFFu);
  assert_int_equal(out.u.alloc.vram_bytes, 0x123456789ABCull);
  assert_int_equal(out.u.alloc.ttl_s, 300);

  memset(&req, 0, sizeof req);
  req.op = GL_OP_LEASE_RENEW;
  req.u.renew.auth.lease_id = 0xFEDCBA9876543210ull;
  memcpy(req.u.renew.auth.secret, SECRET, 16);
  req.u.renew.ttl_s = 86400;
  req_roundtrip(&req, &out, 12 + 28);
  assert_int_equal(out.u.renew.auth.lease_id, 0xFEDCBA9876543210ull);
  assert_memory_equal(out.u.renew.auth.secret, SECRET, 16);
  assert_int_equal(out.u.renew.ttl_s, 86400);

  const uint16_t auth_ops[] = {GL_OP_LEASE_QUERY, GL_OP_LEASE_FREE};
  for (size_t i = 0; i < 2; i++) {
    memset(&req, 0, sizeof req);
    req.op = auth_ops[i];
    req.u.auth.lease_id = 77 + i;
    memcpy(req.u.auth.secret, SECRET, 16);
    req_roundtrip(&req, &out, 12 + 24);
    assert_int_equal(out.u.auth.lease_id, 77 + i);
    assert_memory_equal(out.u.auth.secret, SECRET, 16);
  }

  memset(&req, 0, sizeof req);
  req.op = GL_OP_WORKER_INIT;
  req.u.worker_init.cuda_ordinal = 3;
  req.u.worker_init.vram_bytes = 1ull << 40;
  req_roundtrip(&req, &out, 12 + 12);
  assert_int_equal(out.u.worker_init.cuda_ordinal, 3);
  assert_int_equal(out.u.worker_init.vram_bytes, 1ull << 40);
}

static void test_req_gpu_submit_params(void **state) {
  (void)state;
  static gl_request req, out;
  const char *ptx = ".version 8.0\n.target sm_90\n.address_size 64\n";
  const uint8_t input[5] = {1, 2, 3, 4, 5};
  int32_t n = 1024;
  double alpha = 2.5;
  uint8_t big[64];
  for (int i = 0; i < 64; i++) big[i] = (uint8_t)(i * 3);
  gpulease_param params[5] = {
      param_pointer(0),
      param_scalar(&n, sizeof n),
      param_pointer(0x1000),
      param_scalar(&alpha, sizeof alpha),
      param_scalar(big, 64),
  };
  gl_buf pb;
  gl_buf_init(&pb);
  assert_status(gl_params_encode(params, 5, &pb), GPULEASE_OK);
  assert_int_equal(pb.len, 9 + (2 + 4) + 9 + (2 + 8) + (2 + 64));

  memset(&req, 0, sizeof req);
  req.op = GL_OP_GPU_SUBMIT;
  gl_submit_req *s = &req.u.submit;
  s->auth.lease_id = 9;
  memcpy(s->auth.secret, SECRET, 16);
  s->image_format = GPULEASE_IMAGE_PTX;
  s->flags = GL_SUBMIT_F_PARAMS;
  s->kernel_name = "_Z4vaddPfi";
  s->kernel_name_len = (uint16_t)strlen(s->kernel_name);
  s->grid[0] = 128, s->grid[1] = 2, s->grid[2] = 1;
  s->block[0] = 256, s->block[1] = 1, s->block[2] = 4;
  s->shared_mem_bytes = 4096;
  s->input_offset = 16;
  s->output_offset = 0x2000;
  s->output_size = 40;
  s->param_count = 5;
  s->params_raw = pb.data;
  s->params_raw_len = pb.len;
  s->image = (const uint8_t *)ptx;
  s->image_len = (uint32_t)strlen(ptx);
  s->input = input;
  s->input_len = sizeof input;
  req_roundtrip(&req, &out, 12 + 90 + s->kernel_name_len + pb.len + s->image_len + 5);

  const gl_submit_req *o = &out.u.submit;
  assert_int_equal(o->auth.lease_id, 9);
  assert_memory_equal(o->auth.secret, SECRET, 16);
  assert_int_equal(o->image_format, GPULEASE_IMAGE_PTX);
  assert_int_equal(o->flags, GL_SUBMIT_F_PARAMS);
  assert_int_equal(o->kernel_name_len, 10);
  assert_memory_equal(o->kernel_name, "_Z4vaddPfi", 10);
  assert_memory_equal(o->grid, s->grid, sizeof s->grid);
  assert_memory_equal(o->block, s->block, sizeof s->block);
  assert_int_equal(o->shared_mem_bytes, 4096);
  assert_int_equal(o->input_offset, 16);
  assert_int_equal(o->output_offset, 0x2000);
  assert_int_equal(o->output_size, 40);
  assert_int_equal(o->param_count, 5);
  assert_int_equal(o->params_raw_len, pb.len);
  assert_memory_equal(o->params_raw, pb.data, pb.len);
  assert_int_equal(o->image_len, strlen(ptx));
  assert_memory_equal(o->image, ptx, strlen(ptx));
  assert_int_equal(o->input_len, 5);
  assert_memory_equal(o->input, input, 5);

  /* The iterator gives back the params in order, then stops. */
  size_t pos = 0;
  gl_param p;
  assert_true(gl_param_next(o, &pos, &p));
  assert_int_equal(p.kind, GPULEASE_PARAM_POINTER);
  assert_int_equal(p.offset, 0);
  assert_true(gl_param_next(o, &pos, &p));
  assert_int_equal(p.kind, GPULEASE_PARAM_SCALAR);
  assert_int_equal(p.size, 4);
  assert_memory_equal(p.value, &n, 4);
  assert_true(gl_param_next(o, &pos, &p));
  assert_int_equal(p.kind, GPULEASE_PARAM_POINTER);
  assert_int_equal(p.offset, 0x1000);
  assert_true(gl_param_next(o, &pos, &p));
  assert_int_equal(p.size, 8);
  assert_memory_equal(p.value, &alpha, 8);
  assert_true(gl_param_next(o, &pos, &p));
  assert_int_equal(p.size, 64);
  assert_memory_equal(p.value, big, 64);
  assert_false(gl_param_next(o, &pos, &p));
  assert_int_equal(pos, o->params_raw_len);
  gl_buf_free(&pb);
}

static void test_req_gpu_submit_no_params(void **state) {
  (void)state;
  static gl_request req, out;
  const uint8_t cubin[4] = {0x7F, 'E', 'L', 'F'};
  memset(&req, 0, sizeof req);
  req.op = GL_OP_GPU_SUBMIT;
  gl_submit_req *s = &req.u.submit;
  s->image_format = GPULEASE_IMAGE_AUTO;
  s->kernel_name = "k";
  s->kernel_name_len = 1;
  s->grid[0] = s->grid[1] = s->grid[2] = 1;
  s->block[0] = s->block[1] = s->block[2] = 1;
  s->image = cubin;
  s->image_len = 4;
  req_roundtrip(&req, &out, 12 + 90 + 1 + 4);
  assert_int_equal(out.u.submit.flags, 0);
  assert_int_equal(out.u.submit.param_count, 0);
  assert_int_equal(out.u.submit.params_raw_len, 0);
  assert_int_equal(out.u.submit.input_len, 0);
  size_t pos = 0;
  gl_param p;
  assert_false(gl_param_next(&out.u.submit, &pos, &p));
}

/* The codec's encoding of the table's default GPU_SUBMIT equals the bytes
 * the independent builder writes from the documented layout. */
static void test_submit_matches_layout(void **state) {
  (void)state;
  static gl_request req;
  sub_spec spec = sub_default();
  fb_submit(&g_frame, &spec);

  uint8_t params[9 + 6];
  params[0] = 1;
  memset(params + 1, 0, 8);
  params[9] = 2;
  params[10] = 4;
  memset(params + 11, 0x11, 4);
  uint8_t image[16], input[8];
  memset(image, 'P', sizeof image);
  memset(input, 0x22, sizeof input);

  memset(&req, 0, sizeof req);
  req.op = GL_OP_GPU_SUBMIT;
  gl_submit_req *s = &req.u.submit;
  s->auth.lease_id = 42;
  memset(s->auth.secret, 0xAB, 16);
  s->image_format = 1;
  s->flags = 1;
  s->kernel_name = "kkkkkk";
  s->kernel_name_len = 6;
  s->grid[0] = 1, s->grid[1] = 2, s->grid[2] = 3;
  s->block[0] = 32, s->block[1] = 1, s->block[2] = 1;
  s->output_offset = 64;
  s->output_size = 8;
  s->param_count = 2;
  s->params_raw = params;
  s->params_raw_len = sizeof params;
  s->image = image;
  s->image_len = sizeof image;
  s->input = input;
  s->input_len = sizeof input;
  gl_buf b;
  gl_buf_init(&b);
  assert_status(gl_request_encode(&req, &b), GPULEASE_OK);
  assert_int_equal(b.len, g_frame.n);
  assert_memory_equal(b.data, g_frame.b, g_frame.n);
  gl_buf_free(&b);
}

static void test_resp_inventory(void **state) {
  (void)state;
  static gl_response resp, out;
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_GET_INVENTORY;
  gl_inventory *inv = &resp.u.inventory;
  inv->max_ttl_s = 3600;
  strcpy(inv->driver_version, "550.54.15");
  inv->gpu_count = 3;
  for (unsigned i = 0; i < 3; i++) {
    gl_gpu_entry *g = &inv->gpus[i];
    g->index = i;
    snprintf(g->uuid, sizeof g->uuid, "GPU-%08x-1111-2222-3333-444455556666", i * 0x1010101u);
    snprintf(g->name, sizeof g->name, i == 2 ? "Emulated PTX device" : "NVIDIA H100 80GB HBM3");
    g->cc_major = (uint8_t)(9 - i);
    g->cc_minor = (uint8_t)i;
    g->sm_count = 132 - i;
    g->total_vram_bytes = (85ull << 30) + i;
    g->free_vram_bytes = (80ull << 30) - i;
    g->leased_vram_bytes = (uint64_t)i << 30;
    g->active_leases = i;
    g->flags = i == 2 ? GPULEASE_GPU_EMULATED : 0;
  }
  size_t len = 12 + 2 + 4 + 1 + 9 + 2;
  for (unsigned i = 0; i < 3; i++)
    len += 4 + 1 + strlen(inv->gpus[i].uuid) + 1 + strlen(inv->gpus[i].name) + 2 + 4 + 24 + 8;
  resp_roundtrip(&resp, &out, len);
  const gl_inventory *o = &out.u.inventory;
  assert_int_equal(o->max_ttl_s, 3600);
  assert_string_equal(o->driver_version, "550.54.15");
  assert_int_equal(o->gpu_count, 3);
  for (unsigned i = 0; i < 3; i++) {
    const gl_gpu_entry *a = &inv->gpus[i], *g = &o->gpus[i];
    assert_int_equal(g->index, a->index);
    assert_string_equal(g->uuid, a->uuid);
    assert_string_equal(g->name, a->name);
    assert_int_equal(g->cc_major, a->cc_major);
    assert_int_equal(g->cc_minor, a->cc_minor);
    assert_int_equal(g->sm_count, a->sm_count);
    assert_int_equal(g->total_vram_bytes, a->total_vram_bytes);
    assert_int_equal(g->free_vram_bytes, a->free_vram_bytes);
    assert_int_equal(g->leased_vram_bytes, a->leased_vram_bytes);
    assert_int_equal(g->active_leases, a->active_leases);
    assert_int_equal(g->flags, a->flags);
  }
}

static void test_resp_lease_info(void **state) {
  (void)state;
  static gl_response resp, out;
  const uint16_t ops[] = {GL_OP_LEASE_ALLOC, GL_OP_LEASE_RENEW, GL_OP_LEASE_QUERY};
  for (size_t i = 0; i < 3; i++) {
    memset(&resp, 0, sizeof resp);
    resp.op = ops[i];
    resp.msg = "granted";
    resp.msg_len = 7; /* an OK response may carry a message too */
    gl_lease_info *l = &resp.u.lease;
    l->lease_id = 0x0102030405060708ull + i;
    if (ops[i] == GL_OP_LEASE_ALLOC) memcpy(l->secret, SECRET, 16);
    l->gpu_index = 1;
    l->vram_bytes = 256ull << 20;
    l->ttl_s = 300;
    l->remaining_ms = 299999;
    l->submits = 12;
    resp_roundtrip(&resp, &out, 12 + 2 + 7 + 56);
    assert_memory_equal(out.msg, "granted", 7);
    assert_int_equal(out.u.lease.lease_id, l->lease_id);
    assert_memory_equal(out.u.lease.secret, l->secret, 16);
    assert_int_equal(out.u.lease.gpu_index, 1);
    assert_int_equal(out.u.lease.vram_bytes, 256ull << 20);
    assert_int_equal(out.u.lease.ttl_s, 300);
    assert_int_equal(out.u.lease.remaining_ms, 299999);
    assert_int_equal(out.u.lease.submits, 12);
  }
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_LEASE_FREE;
  resp_roundtrip(&resp, &out, 12 + 2);
}

static void test_resp_submit_and_worker(void **state) {
  (void)state;
  static gl_response resp, out;
  uint8_t output[40];
  for (int i = 0; i < 40; i++) output[i] = (uint8_t)(0xF0 ^ i);
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_GPU_SUBMIT;
  resp.u.submit.gpu_time_ns = 1234567;
  resp.u.submit.output = output;
  resp.u.submit.output_len = 40;
  resp_roundtrip(&resp, &out, 12 + 2 + 12 + 40);
  assert_int_equal(out.u.submit.gpu_time_ns, 1234567);
  assert_int_equal(out.u.submit.output_len, 40);
  assert_memory_equal(out.u.submit.output, output, 40);

  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_WORKER_INIT;
  resp.u.worker_init.region_base = 0x7F1234560000ull;
  strcpy(resp.u.worker_init.device_name, "NVIDIA H200");
  resp_roundtrip(&resp, &out, 12 + 2 + 8 + 1 + 11);
  assert_int_equal(out.u.worker_init.region_base, 0x7F1234560000ull);
  assert_string_equal(out.u.worker_init.device_name, "NVIDIA H200");

  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_WORKER_PROBE;
  resp.u.probe.count = 2;
  for (unsigned i = 0; i < 2; i++) {
    snprintf(resp.u.probe.gpus[i].uuid, 96, "GPU-%u", i);
    snprintf(resp.u.probe.gpus[i].name, 96, "NVIDIA A100-SXM4-40GB");
    resp.u.probe.gpus[i].cc_major = 8;
    resp.u.probe.gpus[i].cc_minor = 0;
    resp.u.probe.gpus[i].sm_count = 108;
    resp.u.probe.gpus[i].total_vram_bytes = 40ull << 30;
  }
  resp_roundtrip(&resp, &out, 12 + 2 + 2 + 2 * (1 + 5 + 1 + 21 + 2 + 4 + 8));
  assert_int_equal(out.u.probe.count, 2);
  assert_string_equal(out.u.probe.gpus[1].uuid, "GPU-1");
  assert_string_equal(out.u.probe.gpus[1].name, "NVIDIA A100-SXM4-40GB");
  assert_int_equal(out.u.probe.gpus[1].sm_count, 108);
  assert_int_equal(out.u.probe.gpus[1].total_vram_bytes, 40ull << 30);

  /* A probe with no GPU is a valid answer. */
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_WORKER_PROBE;
  resp_roundtrip(&resp, &out, 12 + 2 + 2);
  assert_int_equal(out.u.probe.count, 0);
}

/* Error responses of every op (and of ops the decoder does not know) carry
 * only the status and the message, whatever the op's result would be. */
static void test_resp_errors(void **state) {
  (void)state;
  static gl_response out;
  const uint16_t ops[] = {GL_OP_GET_INVENTORY, GL_OP_LEASE_ALLOC, GL_OP_LEASE_RENEW,
                          GL_OP_LEASE_QUERY,   GL_OP_LEASE_FREE,  GL_OP_GPU_SUBMIT,
                          GL_OP_WORKER_INIT,   GL_OP_WORKER_PROBE, 0,
                          0x4242};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    for (int st = GPULEASE_INVALID_ARGUMENT; st <= GPULEASE_INTERNAL; st++) {
      gl_buf b;
      gl_buf_init(&b);
      assert_status(gl_response_encode_error(ops[i], (gpulease_status)st, &b,
                                             "%s failed: %s (lease %d)", gl_op_name(ops[i]),
                                             gpulease_status_name(st), 7),
                    GPULEASE_OK);
      char want[128];
      int n = snprintf(want, sizeof want, "%s failed: %s (lease 7)", gl_op_name(ops[i]),
                       gpulease_status_name(st));
      assert_int_equal(b.len, 12 + 2 + (size_t)n);
      char err[256];
      assert_status(gl_response_decode(b.data, b.len, MAX_BODY, &out, err, sizeof err),
                    GPULEASE_OK);
      assert_int_equal(out.op, ops[i]);
      assert_int_equal(out.status, st);
      assert_int_equal(out.msg_len, n);
      assert_memory_equal(out.msg, want, (size_t)n);
      if (i == 5 && st == GPULEASE_LOAD_FAILED) check_all_prefixes(b.data, b.len, DEC_RESP);
      gl_buf_free(&b);
    }
  }
}

static void test_encode_error_limits(void **state) {
  (void)state;
  static gl_response out;
  char *big = malloc(70001);
  assert_non_null(big);
  memset(big, 'x', 70000);
  big[70000] = '\0';
  gl_buf b;
  gl_buf_init(&b);
  assert_status(gl_response_encode_error(GL_OP_GPU_SUBMIT, GPULEASE_LOAD_FAILED, &b, "%s", big),
                GPULEASE_OK);
  assert_int_equal(b.len, 12 + 2 + GL_WIRE_MAX_MESSAGE);
  assert_status(gl_response_decode(b.data, b.len, MAX_BODY, &out, NULL, 0), GPULEASE_OK);
  assert_int_equal(out.msg_len, GL_WIRE_MAX_MESSAGE);
  assert_memory_equal(out.msg, big, GL_WIRE_MAX_MESSAGE);
  free(big);

  /* An empty message is fine; OK and client-side codes are refused. */
  size_t before = b.len;
  assert_status(gl_response_encode_error(GL_OP_LEASE_FREE, GPULEASE_BUSY, &b, "%s", ""),
                GPULEASE_OK);
  assert_int_equal(b.len, before + 14);
  before = b.len;
  assert_status(gl_response_encode_error(GL_OP_LEASE_FREE, GPULEASE_OK, &b, "fine"),
                GPULEASE_INVALID_ARGUMENT);
  assert_status(gl_response_encode_error(GL_OP_LEASE_FREE, GPULEASE_TIMEOUT, &b, "late"),
                GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(b.len, before);
  gl_buf_free(&b);
}

/* Two messages appended to one buffer, then taken out with steal. */
static void test_buf_append_and_steal(void **state) {
  (void)state;
  static gl_request req;
  gl_buf b;
  gl_buf_init(&b);
  memset(&req, 0, sizeof req);
  req.op = GL_OP_GET_INVENTORY;
  assert_status(gl_request_encode(&req, &b), GPULEASE_OK);
  req.op = GL_OP_LEASE_QUERY;
  req.u.auth.lease_id = 5;
  assert_status(gl_request_encode(&req, &b), GPULEASE_OK);
  assert_int_equal(b.len, 12 + 36);
  size_t len = 0;
  uint8_t *data = gl_buf_steal(&b, &len);
  assert_non_null(data);
  assert_int_equal(len, 48);
  assert_null(b.data);
  assert_int_equal(b.len, 0);
  assert_int_equal(b.cap, 0);
  assert_status(gl_request_decode(data, 12, MAX_BODY, &req, NULL, NULL, 0), GPULEASE_OK);
  assert_int_equal(req.op, GL_OP_GET_INVENTORY);
  assert_status(gl_request_decode(data + 12, 36, MAX_BODY, &req, NULL, NULL, 0), GPULEASE_OK);
  assert_int_equal(req.u.auth.lease_id, 5);
  free(data);
  gl_buf_free(&b); /* on an empty buffer: harmless */
  gl_buf_free(NULL);
}

/* ========================================================================
 * Golden bytes: the example in docs/protocol.md
 * ====================================================================== */

static const uint8_t DOC_ALLOC_REQ[] = {
    0x47, 0x4C, 0x01, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, /* header */
    0xFF, 0xFF, 0xFF, 0xFF,                         /* gpu_index: any */
    0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, /* vram_bytes 256 MiB */
    0x00, 0x00, 0x01, 0x2C,                         /* ttl_s 300 */
};

static const uint8_t DOC_ALLOC_RESP[] = {
    0x47, 0x4C, 0x01, 0x01, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3A, /* header */
    0x00, 0x00,                                     /* msg_len 0 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2A, /* lease_id 42 */
    0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, /* secret */
    0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF,
    0x00, 0x00, 0x00, 0x01,                         /* gpu_index 1 */
    0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, /* vram_bytes */
    0x00, 0x00, 0x01, 0x2C,                         /* ttl_s 300 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x93, 0xE0, /* remaining_ms 300000 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* submits 0 */
};

static const uint8_t DOC_ERROR_RESP[] = {
    0x47, 0x4C, 0x01, 0x01, 0x01, 0x01, 0x00, 0x08, 0x00, 0x00, 0x00, 0x2C, /* header */
    0x00, 0x2A, 'g', 'p', 'u', ' ', '1', ' ', 'h', 'a', 's', ' ', '2', '0', '4', '8', ' ',
    'M', 'i', 'B', ' ', 'f', 'r', 'e', 'e', ',', ' ', '2', '5', '6', ' ', 'M', 'i', 'B',
    ' ', 'r', 'e', 'q', 'u', 'e', 's', 't', 'e', 'd',
};

static void test_doc_example(void **state) {
  (void)state;
  static gl_request req;
  static gl_response resp;
  gl_buf b;
  gl_buf_init(&b);
  memset(&req, 0, sizeof req);
  req.op = GL_OP_LEASE_ALLOC;
  req.u.alloc.gpu_index = GPULEASE_ANY_GPU;
  req.u.alloc.vram_bytes = 256ull << 20;
  req.u.alloc.ttl_s = 300;
  assert_status(gl_request_encode(&req, &b), GPULEASE_OK);
  assert_int_equal(b.len, sizeof DOC_ALLOC_REQ);
  assert_memory_equal(b.data, DOC_ALLOC_REQ, sizeof DOC_ALLOC_REQ);
  gl_buf_free(&b);

  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_LEASE_ALLOC;
  resp.u.lease.lease_id = 42;
  memcpy(resp.u.lease.secret, SECRET, 16);
  resp.u.lease.gpu_index = 1;
  resp.u.lease.vram_bytes = 256ull << 20;
  resp.u.lease.ttl_s = 300;
  resp.u.lease.remaining_ms = 300000;
  assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
  assert_int_equal(b.len, sizeof DOC_ALLOC_RESP);
  assert_memory_equal(b.data, DOC_ALLOC_RESP, sizeof DOC_ALLOC_RESP);
  gl_buf_free(&b);

  assert_status(gl_response_encode_error(GL_OP_LEASE_ALLOC, GPULEASE_CAPACITY_EXCEEDED, &b,
                                         "gpu %d has %d MiB free, %d MiB requested", 1, 2048,
                                         256),
                GPULEASE_OK);
  assert_int_equal(b.len, sizeof DOC_ERROR_RESP);
  assert_memory_equal(b.data, DOC_ERROR_RESP, sizeof DOC_ERROR_RESP);
  gl_buf_free(&b);
}

/* ========================================================================
 * Header, op echo, names
 * ====================================================================== */

static void test_header_decode(void **state) {
  (void)state;
  gl_header h;
  assert_status(gl_header_decode(DOC_ALLOC_RESP, sizeof DOC_ALLOC_RESP, &h), GPULEASE_OK);
  assert_int_equal(h.version, 1);
  assert_int_equal(h.kind, GL_WIRE_KIND_RESPONSE);
  assert_int_equal(h.op, GL_OP_LEASE_ALLOC);
  assert_int_equal(h.status, 0);
  assert_int_equal(h.body_len, 58);
  /* Only the first 12 bytes count: body_len need not match here. */
  assert_status(gl_header_decode(DOC_ALLOC_RESP, 12, &h), GPULEASE_OK);
  assert_status(gl_header_decode(DOC_ALLOC_RESP, 11, &h), GPULEASE_MALFORMED);
  assert_status(gl_header_decode(NULL, 0, &h), GPULEASE_MALFORMED);

  uint8_t p[12];
  memcpy(p, DOC_ALLOC_REQ, 12);
  p[2] = 7;
  assert_status(gl_header_decode(p, 12, &h), GPULEASE_UNSUPPORTED);
  assert_int_equal(h.version, 7);
  assert_int_equal(h.op, GL_OP_LEASE_ALLOC); /* filled for the echo */
  p[2] = 1;
  p[3] = 2;
  assert_status(gl_header_decode(p, 12, &h), GPULEASE_MALFORMED);
  p[3] = 0;
  p[0] = 'g';
  assert_status(gl_header_decode(p, 12, &h), GPULEASE_MALFORMED);
}

/* out_op gets the header's op whenever the header could be read. */
static void test_out_op_echo(void **state) {
  (void)state;
  static gl_request req;
  uint16_t op;
  uint8_t p[sizeof DOC_ALLOC_REQ];

  memcpy(p, DOC_ALLOC_REQ, sizeof p);
  p[2] = 2; /* version */
  op = 0xDEAD;
  assert_status(gl_request_decode(p, sizeof p, MAX_BODY, &req, &op, NULL, 0),
                GPULEASE_UNSUPPORTED);
  assert_int_equal(op, GL_OP_LEASE_ALLOC);

  memcpy(p, DOC_ALLOC_REQ, sizeof p);
  p[4] = 0x55; /* op 0x5501 */
  op = 0;
  assert_status(gl_request_decode(p, sizeof p, MAX_BODY, &req, &op, NULL, 0),
                GPULEASE_UNSUPPORTED);
  assert_int_equal(op, 0x5501);

  memcpy(p, DOC_ALLOC_REQ, sizeof p);
  op = 0;
  assert_status(gl_request_decode(p, sizeof p - 1, MAX_BODY, &req, &op, NULL, 0),
                GPULEASE_MALFORMED);
  assert_int_equal(op, GL_OP_LEASE_ALLOC);
  assert_status(gl_request_decode(p, sizeof p, 3, &req, &op, NULL, 0), GPULEASE_TOO_LARGE);
  assert_int_equal(op, GL_OP_LEASE_ALLOC);

  p[0] = 0; /* bad magic: the header cannot be trusted */
  op = 0xDEAD;
  assert_status(gl_request_decode(p, sizeof p, MAX_BODY, &req, &op, NULL, 0), GPULEASE_MALFORMED);
  assert_int_equal(op, 0);
  op = 0xDEAD;
  assert_status(gl_request_decode(p, 5, MAX_BODY, &req, &op, NULL, 0), GPULEASE_MALFORMED);
  assert_int_equal(op, 0);

  /* A field error still echoes the op, and *out is left zeroed. */
  sub_spec s = sub_default();
  s.name_len = 0;
  fb_submit(&g_frame, &s);
  char err[8]; /* small on purpose: the message is cut, still terminated */
  assert_status(gl_request_decode(g_frame.b, g_frame.n, MAX_BODY, &req, &op, err, sizeof err),
                GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(op, GL_OP_GPU_SUBMIT);
  assert_int_equal(req.op, 0);
  assert_string_equal(err, "GPU_SUB");
}

static void test_status_names(void **state) {
  (void)state;
  static const struct {
    int code;
    const char *name;
  } names[] = {
      {0, "OK"},
      {1, "INVALID_ARGUMENT"},
      {2, "UNAUTHORIZED"},
      {3, "LOAD_FAILED"},
      {4, "LAUNCH_FAILED"},
      {5, "NOT_FOUND"},
      {6, "READ_FAILED"},
      {7, "LEASE_EXPIRED"},
      {8, "CAPACITY_EXCEEDED"},
      {9, "UNSUPPORTED"},
      {10, "NO_DEVICE"},
      {11, "MALFORMED"},
      {12, "TOO_LARGE"},
      {13, "BUSY"},
      {14, "WRITE_FAILED"},
      {15, "INTERNAL"},
      {100, "DISCONNECTED"},
      {101, "TLS_FAILED"},
      {102, "PROTOCOL_ERROR"},
      {103, "NO_MEMORY"},
      {104, "TIMEOUT"},
      {-1, "UNKNOWN"},
      {16, "UNKNOWN"},
      {99, "UNKNOWN"},
      {105, "UNKNOWN"},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    assert_string_equal(gpulease_status_name(names[i].code), names[i].name);

  assert_string_equal(gl_op_name(GL_OP_GET_INVENTORY), "GET_INVENTORY");
  assert_string_equal(gl_op_name(GL_OP_LEASE_ALLOC), "LEASE_ALLOC");
  assert_string_equal(gl_op_name(GL_OP_LEASE_RENEW), "LEASE_RENEW");
  assert_string_equal(gl_op_name(GL_OP_LEASE_QUERY), "LEASE_QUERY");
  assert_string_equal(gl_op_name(GL_OP_LEASE_FREE), "LEASE_FREE");
  assert_string_equal(gl_op_name(GL_OP_GPU_SUBMIT), "GPU_SUBMIT");
  assert_string_equal(gl_op_name(GL_OP_WORKER_INIT), "WORKER_INIT");
  assert_string_equal(gl_op_name(GL_OP_WORKER_PROBE), "WORKER_PROBE");
  assert_string_equal(gl_op_name(0), "UNKNOWN");
  assert_string_equal(gl_op_name(0x0105), "UNKNOWN");
}

/* ========================================================================
 * The encoder refuses what the decoder would refuse
 * ====================================================================== */

/* A valid submit request with no param list; tests spoil one field. */
static void valid_submit(gl_request *req) {
  static const uint8_t image[3] = {'p', 't', 'x'};
  memset(req, 0, sizeof *req);
  req->op = GL_OP_GPU_SUBMIT;
  req->u.submit.kernel_name = "kern";
  req->u.submit.kernel_name_len = 4;
  req->u.submit.image = image;
  req->u.submit.image_len = 3;
}

/* Refused with INVALID_ARGUMENT, a message holding `want`, and nothing
 * appended to a buffer that already holds bytes. */
static void assert_req_refused(const gl_request *req, const char *want) {
  char err[256];
  assert_status(gl_request_validate(req, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
  assert_contains(err, want);
  gl_buf b;
  gl_buf_init(&b);
  static const gl_request inv = {.op = GL_OP_GET_INVENTORY};
  assert_status(gl_request_encode(&inv, &b), GPULEASE_OK);
  assert_status(gl_request_encode(req, &b), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(b.len, 12);
  gl_buf_free(&b);
}

static void test_request_encode_refuses(void **state) {
  (void)state;
  static gl_request req;
  char err[256];
  valid_submit(&req);
  assert_status(gl_request_validate(&req, err, sizeof err), GPULEASE_OK);
  assert_string_equal(err, "");

  valid_submit(&req);
  req.u.submit.kernel_name_len = 0;
  assert_req_refused(&req, "GPU_SUBMIT: kernel_name_len 0 out of range 1..1024");
  valid_submit(&req);
  req.u.submit.kernel_name_len = 1025;
  assert_req_refused(&req, "kernel_name_len 1025");
  valid_submit(&req);
  req.u.submit.kernel_name = NULL;
  assert_req_refused(&req, "kernel_name is NULL");
  valid_submit(&req);
  req.u.submit.kernel_name = "ke\0n";
  assert_req_refused(&req, "NUL byte at offset 2");
  valid_submit(&req);
  req.u.submit.image_format = 4;
  assert_req_refused(&req, "image_format 4 out of range 0..3");
  valid_submit(&req);
  req.u.submit.flags = 0x40;
  assert_req_refused(&req, "flags 0x40");
  valid_submit(&req);
  req.u.submit.image_len = 0;
  assert_req_refused(&req, "image_len 0");
  valid_submit(&req);
  req.u.submit.image = NULL;
  assert_req_refused(&req, "image is NULL");
  valid_submit(&req);
  req.u.submit.input_len = 5;
  assert_req_refused(&req, "input is NULL");
  valid_submit(&req);
  req.u.submit.param_count = 1;
  assert_req_refused(&req, "param_count 1 but flags bit 0");
  valid_submit(&req);
  req.u.submit.flags = GL_SUBMIT_F_PARAMS;
  req.u.submit.param_count = 257;
  assert_req_refused(&req, "param_count 257 exceeds 256");

  /* params_raw must hold exactly param_count valid params. */
  static const uint8_t one_ptr[9] = {1, 0, 0, 0, 0, 0, 0, 0, 8};
  static const uint8_t bad_scalar[3] = {2, 65, 0};
  valid_submit(&req);
  req.u.submit.flags = GL_SUBMIT_F_PARAMS;
  req.u.submit.param_count = 2;
  req.u.submit.params_raw = one_ptr;
  req.u.submit.params_raw_len = 9;
  assert_req_refused(&req, "truncated in param[1].kind");
  req.u.submit.param_count = 1;
  req.u.submit.params_raw_len = 8;
  assert_req_refused(&req, "truncated in param[0].offset");
  req.u.submit.param_count = 0;
  req.u.submit.params_raw_len = 9;
  assert_req_refused(&req, "params_raw_len 9 but the 0 params take 0 bytes");
  req.u.submit.param_count = 1;
  req.u.submit.params_raw = bad_scalar;
  req.u.submit.params_raw_len = 3;
  assert_req_refused(&req, "param[0].size 65 out of range");
  req.u.submit.params_raw = NULL;
  assert_req_refused(&req, "params_raw is NULL");
  req.u.submit.params_raw = one_ptr;
  req.u.submit.params_raw_len = 9;
  assert_status(gl_request_validate(&req, err, sizeof err), GPULEASE_OK);

  /* The body must fit body_len's 32 bits. */
  valid_submit(&req);
  req.u.submit.image_len = UINT32_MAX;
  req.u.submit.input_len = 1;
  req.u.submit.input = (const uint8_t *)"x";
  assert_req_refused(&req, "does not fit body_len");

  memset(&req, 0, sizeof req);
  req.op = 0x0999;
  assert_req_refused(&req, "unknown op 0x0999");
  assert_status(gl_request_validate(NULL, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
  assert_status(gl_request_encode(NULL, NULL), GPULEASE_INVALID_ARGUMENT);
}

static void test_params_encode(void **state) {
  (void)state;
  static gpulease_param params[GPULEASE_MAX_PARAMS + 1];
  gl_buf b;
  gl_buf_init(&b);

  for (int i = 0; i <= GPULEASE_MAX_PARAMS; i++) params[i] = param_pointer((uint64_t)i);
  assert_status(gl_params_encode(params, GPULEASE_MAX_PARAMS, &b), GPULEASE_OK);
  assert_int_equal(b.len, 9 * GPULEASE_MAX_PARAMS);
  b.len = 0;
  assert_status(gl_params_encode(params, GPULEASE_MAX_PARAMS + 1, &b), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(b.len, 0);

  /* 62 x (2 + 64) + (2 + 2) = 4096 bytes is the most allowed. */
  uint8_t v[64] = {0};
  for (int i = 0; i < 62; i++) params[i] = param_scalar(v, 64);
  params[62] = param_scalar(v, 2);
  assert_status(gl_params_encode(params, 63, &b), GPULEASE_OK);
  assert_int_equal(b.len, GL_WIRE_MAX_PARAM_BYTES);
  b.len = 0;
  params[62] = param_scalar(v, 3);
  assert_status(gl_params_encode(params, 63, &b), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(b.len, 0);

  gpulease_param p = param_scalar(v, 4);
  p.size = 0;
  assert_status(gl_params_encode(&p, 1, &b), GPULEASE_INVALID_ARGUMENT);
  p.size = 65;
  assert_status(gl_params_encode(&p, 1, &b), GPULEASE_INVALID_ARGUMENT);
  p.size = 4;
  p.kind = (gpulease_param_kind)3;
  assert_status(gl_params_encode(&p, 1, &b), GPULEASE_INVALID_ARGUMENT);
  assert_status(gl_params_encode(NULL, 1, &b), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(b.len, 0);
  assert_status(gl_params_encode(NULL, 0, &b), GPULEASE_OK);
  assert_int_equal(b.len, 0);
  gl_buf_free(&b);
}

static void assert_resp_refused(const gl_response *resp) {
  gl_buf b;
  gl_buf_init(&b);
  assert_status(gl_response_encode(resp, &b), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(b.len, 0);
  gl_buf_free(&b);
}

static void test_response_encode_refuses(void **state) {
  (void)state;
  static gl_response resp;
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_GET_INVENTORY;
  resp.u.inventory.gpu_count = GPULEASE_MAX_GPUS + 1;
  assert_resp_refused(&resp);
  resp.u.inventory.gpu_count = 1;
  memset(resp.u.inventory.gpus[0].uuid, 'u', sizeof resp.u.inventory.gpus[0].uuid);
  assert_resp_refused(&resp); /* uuid not NUL-terminated */
  resp.u.inventory.gpus[0].uuid[95] = '\0';
  gl_buf b;
  gl_buf_init(&b);
  assert_status(gl_response_encode(&resp, &b), GPULEASE_OK); /* 95 bytes fit */
  gl_buf_free(&b);
  memset(resp.u.inventory.driver_version, 'd', sizeof resp.u.inventory.driver_version);
  assert_resp_refused(&resp);

  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_WORKER_PROBE;
  resp.u.probe.count = 65;
  assert_resp_refused(&resp);
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_WORKER_INIT;
  memset(resp.u.worker_init.device_name, 'n', sizeof resp.u.worker_init.device_name);
  assert_resp_refused(&resp);
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_GPU_SUBMIT;
  resp.u.submit.output_len = 4;
  assert_resp_refused(&resp); /* output NULL */
  memset(&resp, 0, sizeof resp);
  resp.op = 0x0999;
  assert_resp_refused(&resp); /* OK response of an unknown op */
  resp.status = GPULEASE_DISCONNECTED;
  assert_resp_refused(&resp);
  resp.status = GPULEASE_NOT_FOUND;
  resp.msg_len = 3;
  assert_resp_refused(&resp); /* msg NULL */
  resp.msg = "abc";
  gl_buf_init(&b);
  assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
  gl_buf_free(&b);
}

/* gl_param_next never runs past params_raw_len, even on a list nobody
 * validated. */
static void test_param_next_bounds(void **state) {
  (void)state;
  gl_submit_req s;
  gl_param p;
  size_t pos;
  memset(&s, 0, sizeof s);
  pos = 0;
  assert_false(gl_param_next(&s, &pos, &p)); /* NULL list */
  const struct {
    uint8_t raw[8];
    size_t len;
  } bad[] = {
      {{1, 0, 0, 0}, 4}, /* pointer cut short */
      {{1, 0, 0, 0, 0, 0, 0, 0}, 8}, /* pointer one byte short */
      {{2}, 1},          /* scalar without size */
      {{2, 3, 0, 0}, 4}, /* scalar value cut short */
      {{2, 0, 0, 0}, 4}, /* scalar size 0 */
      {{9, 0, 0, 0}, 4}, /* unknown kind */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint8_t *raw = malloc(bad[i].len); /* exact size for ASan */
    assert_non_null(raw);
    memcpy(raw, bad[i].raw, bad[i].len);
    s.params_raw = raw;
    s.params_raw_len = bad[i].len;
    pos = 0;
    assert_false(gl_param_next(&s, &pos, &p));
    assert_int_equal(pos, 0);
    free(raw);
  }
  static const uint8_t ok[] = {2, 2, 0xAA, 0xBB, 1, 0, 0, 0, 0, 0, 0, 0x01, 0x00};
  s.params_raw = ok;
  s.params_raw_len = sizeof ok;
  pos = 0;
  assert_true(gl_param_next(&s, &pos, &p));
  assert_int_equal(p.kind, GPULEASE_PARAM_SCALAR);
  assert_int_equal(p.size, 2);
  assert_int_equal(p.value[1], 0xBB);
  assert_true(gl_param_next(&s, &pos, &p));
  assert_int_equal(p.kind, GPULEASE_PARAM_POINTER);
  assert_int_equal(p.offset, 0x100);
  assert_false(gl_param_next(&s, &pos, &p));
  assert_int_equal(pos, sizeof ok);
}

/* ========================================================================
 * The fuzz seed corpus holds what its file names promise
 * ====================================================================== */

static void test_corpus_files(void **state) {
  (void)state;
  static gl_request req;
  static gl_response resp;
  const char *src = getenv("GL_TEST_SRC_DIR");
  if (!src) src = GL_SOURCE_DIR;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/tests/fuzz-corpus/wire", src);
  DIR *d = opendir(dir);
  if (!d) fail_msg("cannot open %s", dir);
  size_t seen = 0, valid = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    const char *name = e->d_name;
    int want_req = strncmp(name, "req-", 4) == 0;
    int want_resp = strncmp(name, "resp-", 5) == 0;
    int want_bad = strncmp(name, "bad-", 4) == 0;
    if (!want_req && !want_resp && !want_bad) continue; /* crash-* and the like */
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static uint8_t data[1 << 16];
    size_t n = fread(data, 1, sizeof data, f);
    fclose(f);
    char err[256];
    gpulease_status rq = gl_request_decode(data, n, MAX_BODY, &req, NULL, err, sizeof err);
    gpulease_status rs = gl_response_decode(data, n, MAX_BODY, &resp, NULL, 0);
    if ((want_req && rq != GPULEASE_OK) || (want_resp && rs != GPULEASE_OK) ||
        (want_bad && (rq == GPULEASE_OK || rs == GPULEASE_OK)))
      fail_msg("corpus file %s: request %s, response %s (%s)", name, gpulease_status_name(rq),
               gpulease_status_name(rs), err);
    seen++;
    valid += !want_bad;
  }
  closedir(d);
  assert_true(seen >= 15);
  assert_true(valid >= 9 + 6); /* every request op and six responses */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_names),
      cmocka_unit_test(test_header_decode),
      cmocka_unit_test(test_req_empty_bodies),
      cmocka_unit_test(test_req_lease_ops),
      cmocka_unit_test(test_req_gpu_submit_params),
      cmocka_unit_test(test_req_gpu_submit_no_params),
      cmocka_unit_test(test_submit_matches_layout),
      cmocka_unit_test(test_resp_inventory),
      cmocka_unit_test(test_resp_lease_info),
      cmocka_unit_test(test_resp_submit_and_worker),
      cmocka_unit_test(test_resp_errors),
      cmocka_unit_test(test_encode_error_limits),
      cmocka_unit_test(test_buf_append_and_steal),
      cmocka_unit_test(test_doc_example),
      cmocka_unit_test(test_out_op_echo),
      cmocka_unit_test(test_malformed_table),
      cmocka_unit_test(test_submit_every_prefix),
      cmocka_unit_test(test_request_encode_refuses),
      cmocka_unit_test(test_params_encode),
      cmocka_unit_test(test_response_encode_refuses),
      cmocka_unit_test(test_param_next_bounds),
      cmocka_unit_test(test_corpus_files),
  };
  return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
