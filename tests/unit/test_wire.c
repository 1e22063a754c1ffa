/*
 * test_wire.c - unit tests of the gpulease/1 codec (src/proto/wire*.c).
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
 *   - golden bytes: the hex examples of docs/protocol.md (LEASE_ALLOC in
 *     section 8, MEM_ALLOC in section 9), and the seed corpus of fuzz_wire
 *     (tests/fuzz-corpus/wire/), whose file names say whether each file
 *     must decode.
 * The session ops (SESSION_OPEN .. LAUNCH) get all three: their own
 * builders (fb_session, fb_session_resp) and table rows for every limit,
 * layout and round-trip tests of each op, and the encoder's refusals.
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

/* A lease's secret on the wire (docs/protocol.md, section 3, lease_auth):
 * 40 bytes. Written out here rather than taken from the header, so that a
 * change of GPULEASE_SECRET_BYTES shows as a change of the layout. */
#define SECRET_LEN 40
_Static_assert(GPULEASE_SECRET_BYTES == SECRET_LEN, "lease_auth's secret is 40 bytes");

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

/* A LEASE_ALLOC request: any GPU, 1 GiB, 300 s, class isolated, the
 * default context limits (29 bytes of body; the class is at frame offset
 * 28). */
static void fb_alloc(frame *f) {
  fb_header(f, GL_WIRE_KIND_REQUEST, GL_OP_LEASE_ALLOC, 0);
  fb_be(f, 0xFFFFFFFFu, 4);
  fb_be(f, 1u << 30, 8);
  fb_be(f, 300, 4);
  fb_be(f, GPULEASE_CLASS_ISOLATED, 1);
  fb_be(f, 0, 4); /* printf_fifo_bytes */
  fb_be(f, 0, 8); /* malloc_heap_bytes */
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
  fb_be(f, 42, 8);                /* lease_id */
  fb_fill(f, 0xAB, SECRET_LEN);   /* secret */
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

/* GET_INVENTORY's tenant_info block: the caller's tenant (name_len bytes
 * of 't', a NUL in the middle with name_nul), its flags, quota and use. */
static void fb_tenant_info(frame *f, unsigned name_len, bool name_nul) {
  fb_str8(f, name_len, 't', name_nul);
  fb_be(f, GPULEASE_TENANT_ADMIN | GPULEASE_TENANT_LISTED, 4); /* flags */
  fb_be(f, UINT64_MAX, 8);                                      /* quota_vram_bytes: none */
  fb_be(f, 16, 4);                                              /* quota_leases */
  fb_be(f, UINT32_MAX, 4);                                      /* quota_sessions: none */
  fb_be(f, 3600, 4);                                            /* quota_max_ttl_s */
  fb_be(f, 36000, 8);                                           /* quota_gpu_seconds_per_hour */
  fb_be(f, 2ull << 30, 8);                                      /* used_vram_bytes */
  fb_be(f, 2, 4);                                               /* used_leases */
  fb_be(f, 5, 4);                                               /* used_sessions */
  fb_be(f, 1234, 8);                                            /* used_gpu_seconds */
}

/* The tenant block's length with a name of T bytes: 1+T+4+8+4+4+4+8+8+4+4+8. */
#define TENANT_INFO_LEN(t) (57 + (t))

static void fb_inventory_t(frame *f, unsigned ngpus, unsigned drv_len, unsigned uuid_len,
                           bool name_nul, unsigned tenant_len, bool tenant_nul) {
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
    fb_be(f, 327ull << 20, 8); /* context_overhead_bytes */
    fb_be(f, 9, 1);            /* ptx_isa_driver 9.0 */
    fb_be(f, 0, 1);
    fb_be(f, 9, 1);            /* ptx_isa_nvjitlink 9.5 */
    fb_be(f, 5, 1);
  }
  fb_tenant_info(f, tenant_len, tenant_nul);
  fb_seal(f);
}

/* An inventory whose caller is tenant "tttttt" (6 bytes). */
static void fb_inventory(frame *f, unsigned ngpus, unsigned drv_len, unsigned uuid_len,
                         bool name_nul) {
  fb_inventory_t(f, ngpus, drv_len, uuid_len, name_nul, 6, false);
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

/* GET_INVENTORY with flags `flags` (u32). */
static void b_inventory_req_flags(frame *f, long flags) {
  fb_header(f, GL_WIRE_KIND_REQUEST, GL_OP_GET_INVENTORY, 0);
  fb_be(f, (uint64_t)flags, 4);
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

/* An inventory response cut after n body bytes (body_len patched). Its
 * GPU entries end at body offset 232, its tenant block at 295. */
static void b_inv_cut(frame *f, long n) {
  fb_inventory(f, 2, 9, 40, false);
  assert_int_equal(f->n, GL_WIRE_HEADER_SIZE + 232 + TENANT_INFO_LEN(6));
  f->n = GL_WIRE_HEADER_SIZE + (size_t)n;
  fb_seal(f);
}

/* An inventory of 2 GPUs with the admission block (GET_INVENTORY flags bit
 * 0: 8 bytes and 32 a GPU), plus n bytes (n < 0: cut short). */
static void b_inv_admission(frame *f, long n) {
  fb_inventory(f, 2, 9, 40, false);
  fb_be(f, 256, 4);  /* isolated_queue_max */
  fb_be(f, 2000, 4); /* isolated_queue_ms */
  for (int g = 0; g < 2; g++)
    for (int k = 0; k < 8; k++) fb_be(f, (uint64_t)(g * 8 + k), 4);
  if (n >= 0) fb_fill(f, 0, (size_t)n);
  else f->n -= (size_t)-n;
  fb_seal(f);
}

static void b_inv_tenant_len(frame *f, long n) {
  fb_inventory_t(f, 1, 9, 40, false, (unsigned)n, false);
}

static void b_inv_tenant_nul(frame *f, long n) {
  fb_inventory_t(f, 1, 9, 40, false, (unsigned)n, true);
}

/* The inventory of an older daemon: the GPU entries and no tenant block. */
static void b_inv_no_tenant(frame *f, long unused) {
  (void)unused;
  fb_inventory(f, 1, 9, 40, false);
  f->n -= TENANT_INFO_LEN(6);
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
  fb_be(f, 13000, 4); /* cuda_driver_version */
  fb_be(f, 9, 1);     /* ptx_isa_driver 9.0 */
  fb_be(f, 0, 1);
  fb_be(f, 0, 1);     /* no nvJitLink */
  fb_be(f, 0, 1);
  fb_seal(f);
}

/* A LEASE_QUERY OK response, lease_info cut to n of its 81 bytes. */
static void b_resp_lease(frame *f, long n) {
  fb_header(f, GL_WIRE_KIND_RESPONSE, GL_OP_LEASE_QUERY, 0);
  fb_be(f, 0, 2);
  fb_fill(f, 0x01, (size_t)n);
  fb_seal(f);
}

/* ---- session ops (layout from docs/protocol.md, section 4 "Sessions") ---- */

/* Every field a session request can have; fb_session writes those of its
 * op. Lengths say what the length field holds; the bytes behind it are
 * written in full when they fit the frame, else not at all (the decoder
 * refuses the length before it looks for them). */
typedef struct ses_spec {
  uint64_t session_id, seq;
  uint64_t size;         /* MEM_ALLOC, MEM_COPY size_bytes; MEM_READ size_bytes (u32) */
  bool alloc_has_flags;  /* MEM_ALLOC: flags (0.2) written after size_bytes */
  uint32_t alloc_flags;
  uint32_t data_len;     /* MEM_WRITE */
  uint8_t element_size;  /* MEMSET */
  uint32_t value;
  uint64_t count;
  uint8_t fmt;           /* MODULE_LOAD */
  uint32_t image_len;
  unsigned name_len;     /* FUNC_INFO */
  bool name_nul;
  int param_count;       /* LAUNCH: value of the field; -1: the params written */
  unsigned n_buf, n_scalar, scalar_size, extra_scalar;
  int bad_kind;          /* >= 0: one more param of this kind */
  unsigned trailing;
} ses_spec;

static ses_spec ses_default(void) {
  return (ses_spec){.session_id = 3, .seq = 5, .size = 4096, .data_len = 16, .element_size = 4,
                    .value = 0xDEADBEEF, .count = 100, .fmt = 1, .image_len = 24, .name_len = 6,
                    .param_count = -1, .n_buf = 2, .n_scalar = 1, .scalar_size = 4,
                    .bad_kind = -1};
}

#define FB_ROOM 60000 /* longest variable field the builder writes out */

static void fb_session(frame *f, uint16_t op, const ses_spec *s) {
  fb_header(f, GL_WIRE_KIND_REQUEST, op, 0);
  fb_be(f, 42, 8);              /* lease_id */
  fb_fill(f, 0xAB, SECRET_LEN); /* secret */
  if (op != GL_OP_SESSION_OPEN) {
    fb_be(f, s->session_id, 8);
    fb_be(f, s->seq, 8);
  }
  switch (op) {
  case GL_OP_SYNC:
    fb_be(f, 4, 8); /* ack_seq */
    break;
  case GL_OP_MEM_ALLOC:
    fb_be(f, s->size, 8);
    if (s->alloc_has_flags) fb_be(f, s->alloc_flags, 4);
    break;
  case GL_OP_MEM_FREE:
  case GL_OP_MODULE_UNLOAD:
    fb_be(f, 0x1122334455667788ull, 8);
    break;
  case GL_OP_MEM_WRITE:
    fb_be(f, 0x0100000000000001ull, 8); /* buffer */
    fb_be(f, 512, 8);                   /* offset */
    fb_be(f, s->data_len, 4);
    if (s->data_len <= FB_ROOM) fb_fill(f, 0x5D, s->data_len);
    break;
  case GL_OP_MEM_READ:
    fb_be(f, 0x0100000000000001ull, 8);
    fb_be(f, 256, 8);
    fb_be(f, s->size, 4);
    break;
  case GL_OP_MEM_COPY:
    fb_be(f, 0x0100000000000002ull, 8); /* dst_buffer */
    fb_be(f, 8, 8);                     /* dst_offset */
    fb_be(f, 0x0100000000000001ull, 8); /* src_buffer */
    fb_be(f, 16, 8);                    /* src_offset */
    fb_be(f, s->size, 8);
    break;
  case GL_OP_MEMSET:
    fb_be(f, 0x0100000000000001ull, 8);
    fb_be(f, 64, 8);
    fb_be(f, s->element_size, 1);
    fb_be(f, s->value, 4);
    fb_be(f, s->count, 8);
    break;
  case GL_OP_MODULE_LOAD:
    fb_be(f, s->fmt, 1);
    fb_be(f, s->image_len, 4);
    if (s->image_len <= FB_ROOM) fb_fill(f, 'P', s->image_len);
    break;
  case GL_OP_FUNC_INFO:
    fb_be(f, 0x0200000000000001ull, 8); /* module */
    fb_be(f, s->name_len, 2);
    for (unsigned i = 0; i < s->name_len && s->name_len <= FB_ROOM; i++)
      fb_be(f, s->name_nul && i == s->name_len / 2 ? 0 : 'k', 1);
    break;
  case GL_OP_LAUNCH: {
    fb_be(f, 0x0300000000000001ull, 8); /* function */
    const uint32_t dims[7] = {8, 4, 2, 128, 2, 1, 1024}; /* grid, block, shared */
    for (int i = 0; i < 7; i++) fb_be(f, dims[i], 4);
    unsigned n = s->n_buf + s->n_scalar + (s->extra_scalar ? 1 : 0) + (s->bad_kind >= 0 ? 1 : 0);
    fb_be(f, s->param_count < 0 ? n : (unsigned)s->param_count, 2);
    for (unsigned i = 0; i < s->n_buf; i++) {
      fb_be(f, 1, 1);
      fb_be(f, 0x0100000000000001ull + i, 8);
      fb_be(f, 16u * i, 8);
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
      fb_fill(f, 0, 16);
    }
    break;
  }
  default: /* SESSION_OPEN, SESSION_CLOSE */
    break;
  }
  fb_fill(f, 0, s->trailing);
  fb_seal(f);
}

/* The table's builders: arg is the op, or the value of the field tried. */
static void b_ses_default(frame *f, long op) {
  ses_spec s = ses_default();
  fb_session(f, (uint16_t)op, &s);
}

static void b_ses_sid0(frame *f, long op) {
  ses_spec s = ses_default();
  s.session_id = 0;
  fb_session(f, (uint16_t)op, &s);
}

static void b_ses_trailing(frame *f, long op) {
  ses_spec s = ses_default();
  s.trailing = 1;
  fb_session(f, (uint16_t)op, &s);
}

/* session_id and seq at their largest: any u64 but session_id 0. */
static void b_ses_max_ids(frame *f, long op) {
  ses_spec s = ses_default();
  s.session_id = UINT64_MAX;
  s.seq = UINT64_MAX;
  fb_session(f, (uint16_t)op, &s);
}

static void b_ses_seq0(frame *f, long op) {
  ses_spec s = ses_default();
  s.seq = 0;
  fb_session(f, (uint16_t)op, &s);
}

static void b_alloc_size(frame *f, long n) {
  ses_spec s = ses_default();
  s.size = (uint64_t)n;
  fb_session(f, GL_OP_MEM_ALLOC, &s);
}

/* MEM_ALLOC with flags (0.2): arg is the u32's value. */
static void b_alloc_flags(frame *f, long flags) {
  ses_spec s = ses_default();
  s.alloc_has_flags = true;
  s.alloc_flags = (uint32_t)flags;
  fb_session(f, GL_OP_MEM_ALLOC, &s);
}

/* MEM_ALLOC with flags 1 and arg bytes more (arg < 0: |arg| bytes cut). */
static void b_alloc_flags_len(frame *f, long n) {
  ses_spec s = ses_default();
  s.alloc_has_flags = true;
  s.alloc_flags = GL_MEM_ALLOC_F_ADDRESS;
  if (n > 0) s.trailing = (unsigned)n;
  fb_session(f, GL_OP_MEM_ALLOC, &s);
  if (n < 0) {
    f->n -= (size_t)-n;
    fb_seal(f);
  }
}

static void b_alloc_size_max(frame *f, long unused) {
  (void)unused;
  ses_spec s = ses_default();
  s.size = UINT64_MAX;
  fb_session(f, GL_OP_MEM_ALLOC, &s);
}

static void b_write_len(frame *f, long n) {
  ses_spec s = ses_default();
  s.data_len = (uint32_t)n;
  fb_session(f, GL_OP_MEM_WRITE, &s);
}

/* data_len says n more bytes than the body holds. */
static void b_write_short(frame *f, long n) {
  ses_spec s = ses_default();
  fb_session(f, GL_OP_MEM_WRITE, &s);
  f->n -= (size_t)n;
  fb_seal(f);
}

static void b_read_size(frame *f, long n) {
  ses_spec s = ses_default();
  s.size = (uint64_t)n;
  fb_session(f, GL_OP_MEM_READ, &s);
}

static void b_copy_size(frame *f, long n) {
  ses_spec s = ses_default();
  s.size = (uint64_t)n;
  fb_session(f, GL_OP_MEM_COPY, &s);
}

/* arg = element_size << 32 | value */
static void b_memset(frame *f, long arg) {
  ses_spec s = ses_default();
  s.element_size = (uint8_t)((unsigned long)arg >> 32);
  s.value = (uint32_t)arg;
  fb_session(f, GL_OP_MEMSET, &s);
}
#define MEMSET_ARG(size, value) ((long)(((unsigned long)(size) << 32) | (uint32_t)(value)))

static void b_memset_count(frame *f, long n) {
  ses_spec s = ses_default();
  s.count = (uint64_t)n;
  fb_session(f, GL_OP_MEMSET, &s);
}

static void b_load_fmt(frame *f, long fmt) {
  ses_spec s = ses_default();
  s.fmt = (uint8_t)fmt;
  fb_session(f, GL_OP_MODULE_LOAD, &s);
}

static void b_load_len(frame *f, long n) {
  ses_spec s = ses_default();
  s.image_len = (uint32_t)n;
  fb_session(f, GL_OP_MODULE_LOAD, &s);
}

static void b_finfo_name(frame *f, long n) {
  ses_spec s = ses_default();
  s.name_len = (unsigned)n;
  fb_session(f, GL_OP_FUNC_INFO, &s);
}

static void b_finfo_nul(frame *f, long n) {
  ses_spec s = ses_default();
  s.name_len = (unsigned)n;
  s.name_nul = true;
  fb_session(f, GL_OP_FUNC_INFO, &s);
}

static void b_launch_n_buf(frame *f, long n) {
  ses_spec s = ses_default();
  s.n_buf = (unsigned)n;
  s.n_scalar = 0;
  fb_session(f, GL_OP_LAUNCH, &s);
}

static void b_launch_n_scalar64(frame *f, long n) {
  ses_spec s = ses_default();
  s.n_buf = 0;
  s.n_scalar = (unsigned)n;
  s.scalar_size = 64;
  fb_session(f, GL_OP_LAUNCH, &s);
}

static void b_launch_scalar_size(frame *f, long n) {
  ses_spec s = ses_default();
  s.n_buf = 0;
  s.n_scalar = 1;
  s.scalar_size = (unsigned)n;
  fb_session(f, GL_OP_LAUNCH, &s);
}

static void b_launch_kind(frame *f, long kind) {
  ses_spec s = ses_default();
  s.bad_kind = (int)kind;
  fb_session(f, GL_OP_LAUNCH, &s);
}

/* 248 scalars of 64 bytes (248 x 66 = 16368 bytes) and one of `last`
 * bytes: last 14 gives exactly 16384 bytes, last 15 gives 16385. */
static void b_launch_param_bytes(frame *f, long last) {
  ses_spec s = ses_default();
  s.n_buf = 0;
  s.n_scalar = 248;
  s.scalar_size = 64;
  s.extra_scalar = (unsigned)last;
  fb_session(f, GL_OP_LAUNCH, &s);
}

static void b_launch_count_plus_one(frame *f, long unused) {
  (void)unused;
  ses_spec s = ses_default();
  s.param_count = (int)(s.n_buf + s.n_scalar + 1);
  fb_session(f, GL_OP_LAUNCH, &s);
}

/* Session results. */
typedef struct sres_spec {
  uint64_t handle;       /* SESSION_OPEN, MEM_ALLOC, MODULE_LOAD, FUNC_INFO */
  uint16_t error_status; /* SYNC */
  uint32_t data_len;     /* MEM_READ: the field */
  uint32_t data_written; /*   and the bytes after it */
  uint8_t cache;         /* MODULE_LOAD */
  bool device_address;   /* MEM_ALLOC: the 0.2 field after region_offset */
  uint16_t param_count;  /* FUNC_INFO: the field */
  unsigned sizes_written;
  unsigned trailing;
} sres_spec;

static sres_spec sres_default(void) {
  return (sres_spec){.handle = 0x0100000000000001ull, .error_status = GPULEASE_LAUNCH_FAILED,
                     .data_len = 32, .data_written = 32, .cache = GL_MODULE_CACHE_DISK,
                     .param_count = 3, .sizes_written = 3};
}

static void fb_session_resp(frame *f, uint16_t op, const sres_spec *s) {
  fb_header(f, GL_WIRE_KIND_RESPONSE, op, 0);
  fb_be(f, 0, 2); /* msg_len */
  switch (op) {
  case GL_OP_SESSION_OPEN:
    fb_be(f, s->handle, 8);
    break;
  case GL_OP_MEM_ALLOC:
    fb_be(f, s->handle, 8);
    fb_be(f, 0x0000000000012300ull, 8); /* region_offset */
    if (s->device_address) fb_be(f, 0x00007f0000012300ull, 8);
    break;
  case GL_OP_SYNC:
    fb_be(f, s->error_status, 2);
    fb_be(f, GL_OP_LAUNCH, 2);
    fb_be(f, 17, 8);
    break;
  case GL_OP_MEM_READ:
    fb_be(f, s->data_len, 4);
    fb_fill(f, 0xC3, s->data_written);
    break;
  case GL_OP_MODULE_LOAD:
    fb_be(f, s->handle, 8);
    fb_be(f, s->cache, 1);
    break;
  case GL_OP_FUNC_INFO:
    fb_be(f, s->handle, 8);
    for (uint32_t v = 1; v <= 7; v++) fb_be(f, v * 10, 4);
    fb_be(f, s->param_count, 2);
    for (unsigned i = 0; i < s->sizes_written; i++) fb_be(f, 8, 2);
    break;
  default: /* empty results */
    break;
  }
  fb_fill(f, 0, s->trailing);
  fb_seal(f);
}

static void b_sres_default(frame *f, long op) {
  sres_spec s = sres_default();
  fb_session_resp(f, (uint16_t)op, &s);
}

static void b_sres_trailing(frame *f, long op) {
  sres_spec s = sres_default();
  s.trailing = 1;
  fb_session_resp(f, (uint16_t)op, &s);
}

/* MEM_ALLOC's result with device_address and arg trailing bytes (arg < 0:
 * |arg| bytes of it cut). */
static void b_sres_alloc_address(frame *f, long n) {
  sres_spec s = sres_default();
  s.device_address = true;
  if (n > 0) s.trailing = (unsigned)n;
  fb_session_resp(f, GL_OP_MEM_ALLOC, &s);
  if (n < 0) {
    f->n -= (size_t)-n;
    fb_seal(f);
  }
}

static void b_sres_handle0(frame *f, long op) {
  sres_spec s = sres_default();
  s.handle = 0;
  fb_session_resp(f, (uint16_t)op, &s);
}

static void b_sres_sync_status(frame *f, long st) {
  sres_spec s = sres_default();
  s.error_status = (uint16_t)st;
  fb_session_resp(f, GL_OP_SYNC, &s);
}

static void b_sres_cache(frame *f, long cache) {
  sres_spec s = sres_default();
  s.cache = (uint8_t)cache;
  fb_session_resp(f, GL_OP_MODULE_LOAD, &s);
}

/* arg = param_count << 16 | sizes written */
static void b_sres_finfo(frame *f, long arg) {
  sres_spec s = sres_default();
  s.param_count = (uint16_t)(arg >> 16);
  s.sizes_written = (unsigned)(arg & 0xFFFF);
  fb_session_resp(f, GL_OP_FUNC_INFO, &s);
}
#define FINFO_ARG(count, written) (((long)(count) << 16) | (long)(written))

/* arg = data_len field; the bytes written: min(arg, 64). */
static void b_sres_read(frame *f, long arg) {
  sres_spec s = sres_default();
  s.data_len = (uint32_t)arg;
  s.data_written = arg < 64 ? (uint32_t)arg : 64;
  fb_session_resp(f, GL_OP_MEM_READ, &s);
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
     "truncated: header says body_len 30 but 29 bytes present"},
    {"body_len smaller than present", DEC_REQ, b_alloc_body_len_delta, -1, 0, GPULEASE_MALFORMED,
     "trailing bytes: header says body_len 28 but 29 bytes present"},
    {"body_len 0xFFFFFFFF over max_body", DEC_REQ, b_alloc_body_len, 0xFFFFFFFFL, 0,
     GPULEASE_TOO_LARGE, "body_len 4294967295 exceeds the limit of 1048576 bytes"},
    {"alloc body short", DEC_REQ, b_alloc_short_body, 15, 0, GPULEASE_MALFORMED,
     "LEASE_ALLOC: truncated in ttl_s: needs 4 bytes at body offset 12, 3 left"},
    {"alloc body short in lease_class", DEC_REQ, b_alloc_short_body, 16, 0, GPULEASE_MALFORMED,
     "LEASE_ALLOC: truncated in lease_class: needs 1 bytes at body offset 16, 0 left"},
    {"alloc body short in printf_fifo_bytes", DEC_REQ, b_alloc_short_body, 19, 0,
     GPULEASE_MALFORMED,
     "LEASE_ALLOC: truncated in printf_fifo_bytes: needs 4 bytes at body offset 17, 2 left"},
    {"alloc body short in malloc_heap_bytes", DEC_REQ, b_alloc_short_body, 28, 0,
     GPULEASE_MALFORMED,
     "LEASE_ALLOC: truncated in malloc_heap_bytes: needs 8 bytes at body offset 21, 7 left"},
    /* a request body longer than this release knows: UNSUPPORTED (a newer
     * client's field, docs/protocol.md section 2), not MALFORMED */
    {"alloc trailing byte", DEC_REQ, b_alloc_trailing, 1, 0, GPULEASE_UNSUPPORTED,
     "LEASE_ALLOC: 1 bytes after the last field this daemon knows (malloc_heap_bytes): a "
     "field of a newer release? this daemon speaks gpulease 0.2"},
    {"alloc 4 trailing bytes", DEC_REQ, b_alloc_trailing, 4, 0, GPULEASE_UNSUPPORTED,
     "LEASE_ALLOC: 4 bytes after the last field this daemon knows (malloc_heap_bytes)"},
    {"alloc class shared", DEC_REQ, b_alloc_patch, PATCH(28, GPULEASE_CLASS_SHARED), 0,
     GPULEASE_OK, NULL},
    {"alloc class device", DEC_REQ, b_alloc_patch, PATCH(28, GPULEASE_CLASS_DEVICE), 0,
     GPULEASE_OK, NULL},
    {"alloc class partition", DEC_REQ, b_alloc_patch, PATCH(28, GPULEASE_CLASS_PARTITION), 0,
     GPULEASE_OK, NULL},
    {"alloc printf_fifo_bytes set", DEC_REQ, b_alloc_patch, PATCH(31, 0x40), 0, GPULEASE_OK,
     NULL},
    {"alloc malloc_heap_bytes set", DEC_REQ, b_alloc_patch, PATCH(38, 0x10), 0, GPULEASE_OK,
     NULL},
    {"inventory request with a byte", DEC_REQ, b_inventory_req, 1, 0, GPULEASE_MALFORMED,
     "GET_INVENTORY: truncated in flags"},
    {"inventory request with flags", DEC_REQ, b_inventory_req, 4, 0, GPULEASE_OK, NULL},
    {"inventory request with unknown flags", DEC_REQ, b_inventory_req_flags, 2, 0,
     GPULEASE_INVALID_ARGUMENT, "only bit 0 (the admission block) is defined"},
    {"inventory request past flags", DEC_REQ, b_inventory_req, 5, 0, GPULEASE_UNSUPPORTED,
     "GET_INVENTORY: 1 bytes after the last field this daemon knows (flags): a field of a "
     "newer release? this daemon speaks gpulease 0.2"},
    {"inventory request empty", DEC_REQ, b_inventory_req, 0, 0, GPULEASE_OK, NULL},

    /* GPU_SUBMIT limits */
    {"submit default", DEC_REQ, b_sub_default, 0, 0, GPULEASE_OK, NULL},
    {"submit trailing byte", DEC_REQ, b_sub_trailing, 1, 0, GPULEASE_UNSUPPORTED,
     "GPU_SUBMIT: 1 bytes after the last field this daemon knows (input)"},
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
     "param[0].size 0 out of range 1..128"},
    {"scalar size 129", DEC_REQ, b_sub_scalar_size, 129, 0, GPULEASE_INVALID_ARGUMENT,
     "param[0].size 129 out of range 1..128"},
    {"scalar size 1", DEC_REQ, b_sub_scalar_size, 1, 0, GPULEASE_OK, NULL},
    {"scalar size 128", DEC_REQ, b_sub_scalar_size, 128, 0, GPULEASE_OK, NULL},
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
    {"flags 0x10", DEC_REQ, b_sub_flags, 0x10, 0, GPULEASE_INVALID_ARGUMENT,
     "flags 0x10 has unknown bits 0x10"},
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
    {"inventory cut in gpu[1]", DEC_RESP, b_inv_cut, 204, 0, GPULEASE_MALFORMED,
     "truncated in gpu[1]."},
    {"inventory without tenant block", DEC_RESP, b_inv_no_tenant, 0, 0, GPULEASE_MALFORMED,
     "GET_INVENTORY: truncated in tenant: needs 1 bytes at body offset 125, 0 left"},
    {"inventory cut before tenant", DEC_RESP, b_inv_cut, 232, 0, GPULEASE_MALFORMED,
     "GET_INVENTORY: truncated in tenant: needs 1 bytes at body offset 232, 0 left"},
    {"inventory cut in tenant name", DEC_RESP, b_inv_cut, 236, 0, GPULEASE_MALFORMED,
     "GET_INVENTORY: truncated in tenant: needs 6 bytes at body offset 233, 3 left"},
    {"inventory cut in tenant flags", DEC_RESP, b_inv_cut, 241, 0, GPULEASE_MALFORMED,
     "GET_INVENTORY: truncated in tenant_flags: needs 4 bytes at body offset 239, 2 left"},
    {"inventory cut in quota_vram_bytes", DEC_RESP, b_inv_cut, 244, 0, GPULEASE_MALFORMED,
     "truncated in quota_vram_bytes: needs 8 bytes at body offset 243, 1 left"},
    {"inventory cut in quota_gpu_seconds_per_hour", DEC_RESP, b_inv_cut, 263, 0,
     GPULEASE_MALFORMED, "truncated in quota_gpu_seconds_per_hour: needs 8 bytes at body offset 263"},
    {"inventory cut in used_sessions", DEC_RESP, b_inv_cut, 285, 0, GPULEASE_MALFORMED,
     "truncated in used_sessions: needs 4 bytes at body offset 283, 2 left"},
    {"inventory cut in used_gpu_seconds", DEC_RESP, b_inv_cut, 294, 0, GPULEASE_MALFORMED,
     "GET_INVENTORY: truncated in used_gpu_seconds: needs 8 bytes at body offset 287, 7 left"},
    {"inventory whole (cut at its end)", DEC_RESP, b_inv_cut, 295, 0, GPULEASE_OK, NULL},
    {"inventory byte after tenant block", DEC_RESP, b_inv_cut, 296, 0, GPULEASE_MALFORMED,
     "GET_INVENTORY: truncated in isolated_queue_max"},
    {"inventory with the admission block", DEC_RESP, b_inv_admission, 0, 0, GPULEASE_OK, NULL},
    {"inventory admission block cut", DEC_RESP, b_inv_admission, -1, 0, GPULEASE_MALFORMED,
     "GET_INVENTORY: truncated in admission[1].flags"},
    {"inventory byte after the admission block", DEC_RESP, b_inv_admission, 1, 0,
     GPULEASE_MALFORMED, "GET_INVENTORY: 1 trailing bytes after the last field"},
    {"inventory anonymous tenant", DEC_RESP, b_inv_tenant_len, 0, 0, GPULEASE_OK, NULL},
    {"inventory tenant 255 bytes", DEC_RESP, b_inv_tenant_len, 255, 0, GPULEASE_OK, NULL},
    {"inventory tenant with NUL", DEC_RESP, b_inv_tenant_nul, 8, 0, GPULEASE_INVALID_ARGUMENT,
     "GET_INVENTORY: tenant contains a NUL byte"},
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
    {"lease_info whole", DEC_RESP, b_resp_lease, 81, 0, GPULEASE_OK, NULL},
    {"lease_info without lease_class", DEC_RESP, b_resp_lease, 80, 0, GPULEASE_MALFORMED,
     "LEASE_QUERY: truncated in lease_class: needs 1 bytes at body offset 82, 0 left"},
    {"lease_info short", DEC_RESP, b_resp_lease, 79, 0, GPULEASE_MALFORMED,
     "LEASE_QUERY: truncated in submits"},
    {"lease_info cut in the secret", DEC_RESP, b_resp_lease, 47, 0, GPULEASE_MALFORMED,
     "LEASE_QUERY: truncated in secret: needs 40 bytes at body offset 10, 39 left"},
    {"lease_info long", DEC_RESP, b_resp_lease, 82, 0, GPULEASE_MALFORMED, "trailing bytes"},
    {"response over max_body", DEC_RESP, b_inv_gpus, 2, MB_BODY_LESS, GPULEASE_TOO_LARGE,
     "exceeds the limit"},

    /* session ops: every request decodes, refuses a trailing byte and
     * session_id 0, takes any seq and the largest ids */
#define SES_REQ_CASES(op, name)                                                                 \
  {name " request", DEC_REQ, b_ses_default, op, 0, GPULEASE_OK, NULL},                         \
      {name " request trailing byte", DEC_REQ, b_ses_trailing, op, 0, GPULEASE_UNSUPPORTED,    \
       name ": 1 bytes after the last field this daemon knows ("},                              \
      {name " session_id 0", DEC_REQ, b_ses_sid0, op, 0, GPULEASE_INVALID_ARGUMENT,            \
       name ": session_id 0 is not valid"},                                                     \
      {name " seq 0", DEC_REQ, b_ses_seq0, op, 0, GPULEASE_OK, NULL},                          \
      {name " session_id and seq max", DEC_REQ, b_ses_max_ids, op, 0, GPULEASE_OK, NULL}
    {"SESSION_OPEN request", DEC_REQ, b_ses_default, GL_OP_SESSION_OPEN, 0, GPULEASE_OK, NULL},
    {"SESSION_OPEN request trailing byte", DEC_REQ, b_ses_trailing, GL_OP_SESSION_OPEN, 0,
     GPULEASE_UNSUPPORTED, "SESSION_OPEN: 1 bytes after the last field this daemon knows (secret)"},
    SES_REQ_CASES(GL_OP_SESSION_CLOSE, "SESSION_CLOSE"),
    SES_REQ_CASES(GL_OP_SYNC, "SYNC"),
    /* MEM_ALLOC: SES_REQ_CASES but its trailing byte, which is a
     * truncated flags (0.2) now */
    {"MEM_ALLOC request", DEC_REQ, b_ses_default, GL_OP_MEM_ALLOC, 0, GPULEASE_OK, NULL},
    {"MEM_ALLOC request trailing byte", DEC_REQ, b_ses_trailing, GL_OP_MEM_ALLOC, 0,
     GPULEASE_MALFORMED, "MEM_ALLOC: truncated in flags: needs 4 bytes at body offset 72, 1 left"},
    {"MEM_ALLOC session_id 0", DEC_REQ, b_ses_sid0, GL_OP_MEM_ALLOC, 0, GPULEASE_INVALID_ARGUMENT,
     "MEM_ALLOC: session_id 0 is not valid"},
    {"MEM_ALLOC seq 0", DEC_REQ, b_ses_seq0, GL_OP_MEM_ALLOC, 0, GPULEASE_OK, NULL},
    {"MEM_ALLOC session_id and seq max", DEC_REQ, b_ses_max_ids, GL_OP_MEM_ALLOC, 0, GPULEASE_OK,
     NULL},
    SES_REQ_CASES(GL_OP_MEM_FREE, "MEM_FREE"),
    SES_REQ_CASES(GL_OP_MEM_WRITE, "MEM_WRITE"),
    SES_REQ_CASES(GL_OP_MEM_READ, "MEM_READ"),
    SES_REQ_CASES(GL_OP_MEM_COPY, "MEM_COPY"),
    SES_REQ_CASES(GL_OP_MEMSET, "MEMSET"),
    SES_REQ_CASES(GL_OP_MODULE_LOAD, "MODULE_LOAD"),
    SES_REQ_CASES(GL_OP_MODULE_UNLOAD, "MODULE_UNLOAD"),
    SES_REQ_CASES(GL_OP_FUNC_INFO, "FUNC_INFO"),
    SES_REQ_CASES(GL_OP_LAUNCH, "LAUNCH"),
#undef SES_REQ_CASES

    /* session request limits */
    {"MEM_ALLOC size 0", DEC_REQ, b_alloc_size, 0, 0, GPULEASE_INVALID_ARGUMENT,
     "MEM_ALLOC: size_bytes 0: at least 1 byte is required"},
    {"MEM_ALLOC size 1", DEC_REQ, b_alloc_size, 1, 0, GPULEASE_OK, NULL},
    {"MEM_ALLOC size max", DEC_REQ, b_alloc_size_max, 0, 0, GPULEASE_OK, NULL},
    {"MEM_ALLOC flags 0", DEC_REQ, b_alloc_flags, 0, 0, GPULEASE_OK, NULL},
    {"MEM_ALLOC flags address", DEC_REQ, b_alloc_flags, 1, 0, GPULEASE_OK, NULL},
    {"MEM_ALLOC flags bit 1", DEC_REQ, b_alloc_flags, 2, 0, GPULEASE_INVALID_ARGUMENT,
     "MEM_ALLOC: flags 0x00000002: only bit 0 (the device address) is defined"},
    {"MEM_ALLOC flags bit 31", DEC_REQ, b_alloc_flags, 0x80000001L, 0, GPULEASE_INVALID_ARGUMENT,
     "MEM_ALLOC: flags 0x80000001: only bit 0"},
    {"MEM_ALLOC flags cut", DEC_REQ, b_alloc_flags_len, -2, 0, GPULEASE_MALFORMED,
     "MEM_ALLOC: truncated in flags: needs 4 bytes at body offset 72, 2 left"},
    {"MEM_ALLOC byte past flags", DEC_REQ, b_alloc_flags_len, 1, 0, GPULEASE_UNSUPPORTED,
     "MEM_ALLOC: 1 bytes after the last field this daemon knows (flags)"},
    {"MEM_ALLOC flags address, nothing after", DEC_REQ, b_alloc_flags_len, 0, 0, GPULEASE_OK,
     NULL},
    {"MEM_WRITE data_len 0", DEC_REQ, b_write_len, 0, 0, GPULEASE_INVALID_ARGUMENT,
     "MEM_WRITE: data_len 0 out of range 1..67108864"},
    {"MEM_WRITE data_len 1", DEC_REQ, b_write_len, 1, 0, GPULEASE_OK, NULL},
    {"MEM_WRITE data_len 60000", DEC_REQ, b_write_len, 60000, 0, GPULEASE_OK, NULL},
    {"MEM_WRITE data_len 64 MiB, no data", DEC_REQ, b_write_len, 64L << 20, 0,
     GPULEASE_MALFORMED, "MEM_WRITE: truncated in data: needs 67108864 bytes at body offset 84"},
    {"MEM_WRITE data_len 64 MiB + 1", DEC_REQ, b_write_len, (64L << 20) + 1, 0,
     GPULEASE_INVALID_ARGUMENT, "MEM_WRITE: data_len 67108865 out of range 1..67108864"},
    {"MEM_WRITE data_len 0xFFFFFFFF", DEC_REQ, b_write_len, 0xFFFFFFFFL, 0,
     GPULEASE_INVALID_ARGUMENT, "data_len 4294967295 out of range"},
    {"MEM_WRITE data short", DEC_REQ, b_write_short, 1, 0, GPULEASE_MALFORMED,
     "MEM_WRITE: truncated in data: needs 16 bytes at body offset 84, 15 left"},
    {"MEM_READ size 0", DEC_REQ, b_read_size, 0, 0, GPULEASE_INVALID_ARGUMENT,
     "MEM_READ: size_bytes 0 out of range 1..67108864"},
    {"MEM_READ size 1", DEC_REQ, b_read_size, 1, 0, GPULEASE_OK, NULL},
    {"MEM_READ size 64 MiB", DEC_REQ, b_read_size, 64L << 20, 0, GPULEASE_OK, NULL},
    {"MEM_READ size 64 MiB + 1", DEC_REQ, b_read_size, (64L << 20) + 1, 0,
     GPULEASE_INVALID_ARGUMENT, "MEM_READ: size_bytes 67108865 out of range 1..67108864"},
    {"MEM_COPY size 0", DEC_REQ, b_copy_size, 0, 0, GPULEASE_INVALID_ARGUMENT,
     "MEM_COPY: size_bytes 0: at least 1 byte is required"},
    {"MEM_COPY size 1", DEC_REQ, b_copy_size, 1, 0, GPULEASE_OK, NULL},
    {"MEMSET 1-byte 0xff", DEC_REQ, b_memset, MEMSET_ARG(1, 0xFF), 0, GPULEASE_OK, NULL},
    {"MEMSET 1-byte 0x100", DEC_REQ, b_memset, MEMSET_ARG(1, 0x100), 0,
     GPULEASE_INVALID_ARGUMENT, "MEMSET: value 0x100 does not fit element_size 1 (at most 0xff)"},
    {"MEMSET 2-byte 0xffff", DEC_REQ, b_memset, MEMSET_ARG(2, 0xFFFF), 0, GPULEASE_OK, NULL},
    {"MEMSET 2-byte 0x10000", DEC_REQ, b_memset, MEMSET_ARG(2, 0x10000), 0,
     GPULEASE_INVALID_ARGUMENT, "MEMSET: value 0x10000 does not fit element_size 2"},
    {"MEMSET 4-byte 0xffffffff", DEC_REQ, b_memset, MEMSET_ARG(4, 0xFFFFFFFF), 0, GPULEASE_OK,
     NULL},
    {"MEMSET element_size 0", DEC_REQ, b_memset, MEMSET_ARG(0, 0), 0, GPULEASE_INVALID_ARGUMENT,
     "MEMSET: element_size 0 is not 1, 2 or 4"},
    {"MEMSET element_size 3", DEC_REQ, b_memset, MEMSET_ARG(3, 0), 0, GPULEASE_INVALID_ARGUMENT,
     "MEMSET: element_size 3 is not 1, 2 or 4"},
    {"MEMSET element_size 8", DEC_REQ, b_memset, MEMSET_ARG(8, 0), 0, GPULEASE_INVALID_ARGUMENT,
     "element_size 8"},
    {"MEMSET count 0", DEC_REQ, b_memset_count, 0, 0, GPULEASE_INVALID_ARGUMENT,
     "MEMSET: count 0: at least 1 element is required"},
    {"MEMSET count 1", DEC_REQ, b_memset_count, 1, 0, GPULEASE_OK, NULL},
    {"MODULE_LOAD format 0", DEC_REQ, b_load_fmt, 0, 0, GPULEASE_OK, NULL},
    {"MODULE_LOAD format 3", DEC_REQ, b_load_fmt, 3, 0, GPULEASE_OK, NULL},
    {"MODULE_LOAD format 4", DEC_REQ, b_load_fmt, 4, 0, GPULEASE_INVALID_ARGUMENT,
     "MODULE_LOAD: image_format 4 out of range 0..3"},
    {"MODULE_LOAD image_len 0", DEC_REQ, b_load_len, 0, 0, GPULEASE_INVALID_ARGUMENT,
     "MODULE_LOAD: image_len 0"},
    {"MODULE_LOAD image_len 1", DEC_REQ, b_load_len, 1, 0, GPULEASE_OK, NULL},
    {"MODULE_LOAD image past the body", DEC_REQ, b_load_len, 0x7FFFFFFFL, 0, GPULEASE_MALFORMED,
     "MODULE_LOAD: truncated in image"},
    {"FUNC_INFO name 0", DEC_REQ, b_finfo_name, 0, 0, GPULEASE_INVALID_ARGUMENT,
     "FUNC_INFO: kernel_name_len 0 out of range 1..1024"},
    {"FUNC_INFO name 1025", DEC_REQ, b_finfo_name, 1025, 0, GPULEASE_INVALID_ARGUMENT,
     "FUNC_INFO: kernel_name_len 1025 out of range 1..1024"},
    {"FUNC_INFO name 1", DEC_REQ, b_finfo_name, 1, 0, GPULEASE_OK, NULL},
    {"FUNC_INFO name 1024", DEC_REQ, b_finfo_name, 1024, 0, GPULEASE_OK, NULL},
    {"FUNC_INFO name with NUL", DEC_REQ, b_finfo_nul, 6, 0, GPULEASE_INVALID_ARGUMENT,
     "FUNC_INFO: kernel_name contains a NUL byte at offset 3"},
    {"LAUNCH no params", DEC_REQ, b_launch_n_buf, 0, 0, GPULEASE_OK, NULL},
    {"LAUNCH 256 buffer params", DEC_REQ, b_launch_n_buf, 256, 0, GPULEASE_OK, NULL},
    {"LAUNCH param_count 257", DEC_REQ, b_launch_n_buf, 257, 0, GPULEASE_INVALID_ARGUMENT,
     "LAUNCH: param_count 257 exceeds 256"},
    {"LAUNCH scalar size 0", DEC_REQ, b_launch_scalar_size, 0, 0, GPULEASE_INVALID_ARGUMENT,
     "LAUNCH: param[0].size 0 out of range 1..128"},
    {"LAUNCH scalar size 129", DEC_REQ, b_launch_scalar_size, 129, 0, GPULEASE_INVALID_ARGUMENT,
     "LAUNCH: param[0].size 129 out of range 1..128"},
    {"LAUNCH scalar size 1", DEC_REQ, b_launch_scalar_size, 1, 0, GPULEASE_OK, NULL},
    {"LAUNCH scalar size 128", DEC_REQ, b_launch_scalar_size, 128, 0, GPULEASE_OK, NULL},
    {"LAUNCH param kind 0", DEC_REQ, b_launch_kind, 0, 0, GPULEASE_INVALID_ARGUMENT,
     "LAUNCH: param[3].kind 0 unknown (1 = buffer, 2 = scalar)"},
    {"LAUNCH param kind 3", DEC_REQ, b_launch_kind, 3, 0, GPULEASE_INVALID_ARGUMENT,
     "param[3].kind 3 unknown"},
    {"LAUNCH params exactly 16384 bytes", DEC_REQ, b_launch_param_bytes, 14, 0, GPULEASE_OK,
     NULL},
    {"LAUNCH params 16385 bytes", DEC_REQ, b_launch_param_bytes, 15, 0,
     GPULEASE_INVALID_ARGUMENT,
     "LAUNCH: param list reaches 16385 bytes at param[248], over the limit of 16384"},
    {"LAUNCH 256 scalars of 64 bytes", DEC_REQ, b_launch_n_scalar64, 256, 0,
     GPULEASE_INVALID_ARGUMENT, "param list reaches 16434 bytes at param[248]"},
    {"LAUNCH param_count past the list", DEC_REQ, b_launch_count_plus_one, 0, 0,
     GPULEASE_MALFORMED, "LAUNCH: truncated in param[3].kind: needs 1 bytes"},

    /* session responses */
#define SES_RESP_CASES(op, name)                                                               \
  {name " result", DEC_RESP, b_sres_default, op, 0, GPULEASE_OK, NULL},                        \
      {name " result trailing byte", DEC_RESP, b_sres_trailing, op, 0, GPULEASE_MALFORMED,    \
       name ": 1 trailing bytes after the last field"}
    SES_RESP_CASES(GL_OP_SESSION_OPEN, "SESSION_OPEN"),
    SES_RESP_CASES(GL_OP_SESSION_CLOSE, "SESSION_CLOSE"),
    SES_RESP_CASES(GL_OP_SYNC, "SYNC"),
    /* MEM_ALLOC: 16 bytes, or 24 with device_address (0.2); a byte past
     * region_offset starts a device_address cut short */
    {"MEM_ALLOC result", DEC_RESP, b_sres_default, GL_OP_MEM_ALLOC, 0, GPULEASE_OK, NULL},
    {"MEM_ALLOC result trailing byte", DEC_RESP, b_sres_trailing, GL_OP_MEM_ALLOC, 0,
     GPULEASE_MALFORMED,
     "MEM_ALLOC: truncated in device_address: needs 8 bytes at body offset 18, 1 left"},
    {"MEM_ALLOC result with device_address", DEC_RESP, b_sres_alloc_address, 0, 0, GPULEASE_OK,
     NULL},
    {"MEM_ALLOC device_address cut", DEC_RESP, b_sres_alloc_address, -1, 0, GPULEASE_MALFORMED,
     "MEM_ALLOC: truncated in device_address: needs 8 bytes at body offset 18, 7 left"},
    {"MEM_ALLOC byte past device_address", DEC_RESP, b_sres_alloc_address, 1, 0,
     GPULEASE_MALFORMED, "MEM_ALLOC: 1 trailing bytes after the last field"},
    SES_RESP_CASES(GL_OP_MEM_FREE, "MEM_FREE"),
    SES_RESP_CASES(GL_OP_MEM_WRITE, "MEM_WRITE"),
    SES_RESP_CASES(GL_OP_MEM_READ, "MEM_READ"),
    SES_RESP_CASES(GL_OP_MEM_COPY, "MEM_COPY"),
    SES_RESP_CASES(GL_OP_MEMSET, "MEMSET"),
    SES_RESP_CASES(GL_OP_MODULE_LOAD, "MODULE_LOAD"),
    SES_RESP_CASES(GL_OP_MODULE_UNLOAD, "MODULE_UNLOAD"),
    SES_RESP_CASES(GL_OP_FUNC_INFO, "FUNC_INFO"),
    SES_RESP_CASES(GL_OP_LAUNCH, "LAUNCH"),
#undef SES_RESP_CASES
    {"SESSION_OPEN session_id 0", DEC_RESP, b_sres_handle0, GL_OP_SESSION_OPEN, 0,
     GPULEASE_INVALID_ARGUMENT, "SESSION_OPEN: session_id 0 is not valid"},
    {"MEM_ALLOC buffer 0", DEC_RESP, b_sres_handle0, GL_OP_MEM_ALLOC, 0,
     GPULEASE_INVALID_ARGUMENT, "MEM_ALLOC: buffer 0 is not valid"},
    {"MODULE_LOAD module 0", DEC_RESP, b_sres_handle0, GL_OP_MODULE_LOAD, 0,
     GPULEASE_INVALID_ARGUMENT, "MODULE_LOAD: module 0 is not valid"},
    {"FUNC_INFO function 0", DEC_RESP, b_sres_handle0, GL_OP_FUNC_INFO, 0,
     GPULEASE_INVALID_ARGUMENT, "FUNC_INFO: function 0 is not valid"},
    {"SYNC error_status 0", DEC_RESP, b_sres_sync_status, 0, 0, GPULEASE_OK, NULL},
    {"SYNC error_status 99", DEC_RESP, b_sres_sync_status, 99, 0, GPULEASE_OK, NULL},
    {"SYNC error_status 100", DEC_RESP, b_sres_sync_status, 100, 0, GPULEASE_INVALID_ARGUMENT,
     "SYNC: error_status 100 is not a wire status"},
    {"SYNC error_status 0xffff", DEC_RESP, b_sres_sync_status, 0xFFFF, 0,
     GPULEASE_INVALID_ARGUMENT, "error_status 65535"},
    {"MODULE_LOAD cache 0", DEC_RESP, b_sres_cache, 0, 0, GPULEASE_OK, NULL},
    {"MODULE_LOAD cache 1", DEC_RESP, b_sres_cache, 1, 0, GPULEASE_OK, NULL},
    {"MODULE_LOAD cache 3", DEC_RESP, b_sres_cache, 3, 0, GPULEASE_INVALID_ARGUMENT,
     "MODULE_LOAD: cache 3 out of range 0..2"},
    {"FUNC_INFO 0 params", DEC_RESP, b_sres_finfo, FINFO_ARG(0, 0), 0, GPULEASE_OK, NULL},
    {"FUNC_INFO 256 params", DEC_RESP, b_sres_finfo, FINFO_ARG(256, 256), 0, GPULEASE_OK, NULL},
    {"FUNC_INFO param_count 257", DEC_RESP, b_sres_finfo, FINFO_ARG(257, 257), 0,
     GPULEASE_INVALID_ARGUMENT, "FUNC_INFO: param_count 257 exceeds 256 (0xFFFF: unknown)"},
    {"FUNC_INFO param_count 0xfffe", DEC_RESP, b_sres_finfo, FINFO_ARG(0xFFFE, 0), 0,
     GPULEASE_INVALID_ARGUMENT, "param_count 65534 exceeds 256"},
    {"FUNC_INFO sizes unknown", DEC_RESP, b_sres_finfo, FINFO_ARG(0xFFFF, 0), 0, GPULEASE_OK,
     NULL},
    {"FUNC_INFO sizes unknown, one follows", DEC_RESP, b_sres_finfo, FINFO_ARG(0xFFFF, 1), 0,
     GPULEASE_MALFORMED, "FUNC_INFO: 2 trailing bytes"},
    {"FUNC_INFO sizes short", DEC_RESP, b_sres_finfo, FINFO_ARG(3, 2), 0, GPULEASE_MALFORMED,
     "FUNC_INFO: truncated in param[2].size: needs 2 bytes at body offset 44, 0 left"},
    {"MEM_READ data_len 0", DEC_RESP, b_sres_read, 0, 0, GPULEASE_OK, NULL},
    {"MEM_READ data_len 64", DEC_RESP, b_sres_read, 64, 0, GPULEASE_OK, NULL},
    {"MEM_READ data past the body", DEC_RESP, b_sres_read, 65, 0, GPULEASE_MALFORMED,
     "MEM_READ: truncated in data: needs 65 bytes at body offset 6, 64 left"},
    {"MEM_READ data_len 64 MiB + 1", DEC_RESP, b_sres_read, (64L << 20) + 1, 0,
     GPULEASE_INVALID_ARGUMENT, "MEM_READ: data_len 67108865 out of range 0..67108864"},
    {"status 16 (INVALID_HANDLE)", DEC_RESP, b_resp_status, GPULEASE_INVALID_HANDLE, 0,
     GPULEASE_OK, NULL},
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

/* Decodes the k-byte message p and checks it is refused as MALFORMED with a
 * message containing `want`. */
static void check_prefix_refused(const uint8_t *p, size_t k, size_t len, int dec,
                                 const char *how, const char *want) {
  static gl_request req;
  static gl_response resp;
  char err[512];
  gpulease_status st = dec == DEC_REQ ? gl_request_decode(p, k, MAX_BODY, &req, NULL, err, sizeof err)
                                      : gl_response_decode(p, k, MAX_BODY, &resp, err, sizeof err);
  if (st != GPULEASE_MALFORMED)
    fail_msg("prefix %zu/%zu (body_len %s): status %s, expected MALFORMED (\"%s\")", k, len, how,
             gpulease_status_name(st), err);
  if (!strstr(err, want))
    fail_msg("prefix %zu/%zu (body_len %s): message \"%s\" lacks \"%s\"", k, len, how, err, want);
}

/* For every k < len: the first k bytes as they are (the header's body_len
 * then disagrees), and, from k = 12 on, with body_len patched to k - 12, so
 * the body parser itself meets the end inside a field. Both must give
 * MALFORMED and a message, never crash or read past k bytes. */
static void check_all_prefixes(const uint8_t *full, size_t len, int dec) {
  for (size_t k = 0; k < len; k++) {
    /* Exactly k bytes, so ASan catches any read past the end. */
    uint8_t *p = malloc(k ? k : 1);
    assert_non_null(p);
    memcpy(p, full, k);
    if (k < GL_WIRE_HEADER_SIZE) {
      check_prefix_refused(p, k, len, dec, "as sent", k == 0 ? "empty message" : "short header");
    } else {
      check_prefix_refused(p, k, len, dec, "as sent", "truncated: header says body_len");
      uint32_t body = (uint32_t)(k - GL_WIRE_HEADER_SIZE);
      for (size_t i = 0; i < 4; i++) p[8 + i] = (uint8_t)(body >> (8 * (3 - i)));
      check_prefix_refused(p, k, len, dec, "patched", "truncated in");
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

/* The secret of docs/protocol.md's examples (sections 3, 8 and 9): a
 * capability token of generation 1 with every right (0xFF), no expiry,
 * audience 0 (the lease's own tenant), and a made-up MAC. */
static const uint8_t SECRET[SECRET_LEN] = {
    0x00, 0x00, 0x00, 0x01,                         /* generation 1 */
    0x00, 0x00, 0x00, 0xFF,                         /* rights: all */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* not_after_s: none */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* audience: the lease's tenant */
    0x3C, 0x9E, 0x51, 0xD7, 0x08, 0xA2, 0x6B, 0xF4, /* mac */
    0xE0, 0x17, 0xC5, 0x39, 0x8D, 0x72, 0x4A, 0xB6,
};

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

/* Encodes req and checks that it gives exactly the n bytes of want. */
static void req_exact(const gl_request *req, const uint8_t *want, size_t n) {
  gl_buf b;
  gl_buf_init(&b);
  assert_status(gl_request_encode(req, &b), GPULEASE_OK);
  assert_int_equal(b.len, n);
  assert_memory_equal(b.data, want, n);
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
  req.u.alloc.lease_class = GPULEASE_CLASS_DEVICE;
  req.u.alloc.printf_fifo_bytes = 0x01020304u;
  req.u.alloc.malloc_heap_bytes = 0x0A0B0C0D0E0F1011ull;
  req_roundtrip(&req, &out, 12 + 29);
  assert_int_equal(out.u.alloc.gpu_index, 0xFFFFFFFFu);
  assert_int_equal(out.u.alloc.vram_bytes, 0x123456789ABCull);
  assert_int_equal(out.u.alloc.ttl_s, 300);
  assert_int_equal(out.u.alloc.lease_class, GPULEASE_CLASS_DEVICE);
  assert_int_equal(out.u.alloc.printf_fifo_bytes, 0x01020304u);
  assert_int_equal(out.u.alloc.malloc_heap_bytes, 0x0A0B0C0D0E0F1011ull);

  memset(&req, 0, sizeof req);
  req.op = GL_OP_LEASE_RENEW;
  req.u.renew.auth.lease_id = 0xFEDCBA9876543210ull;
  memcpy(req.u.renew.auth.secret, SECRET, SECRET_LEN);
  req.u.renew.ttl_s = 86400;
  req_roundtrip(&req, &out, 12 + 53);
  assert_int_equal(out.u.renew.auth.lease_id, 0xFEDCBA9876543210ull);
  assert_memory_equal(out.u.renew.auth.secret, SECRET, SECRET_LEN);
  assert_int_equal(out.u.renew.ttl_s, 86400);

  const uint16_t auth_ops[] = {GL_OP_LEASE_QUERY, GL_OP_LEASE_FREE};
  for (size_t i = 0; i < 2; i++) {
    memset(&req, 0, sizeof req);
    req.op = auth_ops[i];
    req.u.auth.lease_id = 77 + i;
    memcpy(req.u.auth.secret, SECRET, SECRET_LEN);
    req_roundtrip(&req, &out, 12 + 48);
    assert_int_equal(out.u.auth.lease_id, 77 + i);
    assert_memory_equal(out.u.auth.secret, SECRET, SECRET_LEN);
  }

  memset(&req, 0, sizeof req);
  req.op = GL_OP_WORKER_INIT;
  req.u.worker_init.cuda_ordinal = 3;
  req.u.worker_init.vram_bytes = 1ull << 40;
  req_roundtrip(&req, &out, 12 + 33 + 1);
  assert_int_equal(out.u.worker_init.cuda_ordinal, 3);
  assert_int_equal(out.u.worker_init.vram_bytes, 1ull << 40);
  assert_int_equal(out.u.worker_init.lease_id, 0);
  assert_int_equal(out.u.worker_init.flags, 0);
  assert_string_equal(out.u.worker_init.gpu_uuid, "");
  /* the GPU by UUID, for WORKER_INIT and WORKER_WARM */
  static const char uuid[] = "GPU-f8797ab0-36ca-eda1-5eee-c2a666713a44";
  snprintf(req.u.worker_init.gpu_uuid, sizeof req.u.worker_init.gpu_uuid, "%s", uuid);
  req_roundtrip(&req, &out, 12 + 33 + 1 + strlen(uuid));
  assert_string_equal(out.u.worker_init.gpu_uuid, uuid);
  memset(&req, 0, sizeof req);
  req.op = GL_OP_WORKER_WARM;
  req.u.worker_init.cuda_ordinal = 1;
  snprintf(req.u.worker_init.gpu_uuid, sizeof req.u.worker_init.gpu_uuid, "%s", uuid);
  req_roundtrip(&req, &out, 12 + 4 + 1 + strlen(uuid));
  assert_int_equal(out.u.worker_init.cuda_ordinal, 1);
  assert_string_equal(out.u.worker_init.gpu_uuid, uuid);
  /* a UUID that fills its array is refused before it is sent */
  memset(req.u.worker_init.gpu_uuid, 'A', sizeof req.u.worker_init.gpu_uuid);
  gl_buf b;
  gl_buf_init(&b);
  assert_int_equal(gl_request_encode(&req, &b), GPULEASE_INVALID_ARGUMENT);
  gl_buf_free(&b);
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
  memcpy(s->auth.secret, SECRET, SECRET_LEN);
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
  req_roundtrip(&req, &out, 12 + 114 + s->kernel_name_len + pb.len + s->image_len + 5);

  const gl_submit_req *o = &out.u.submit;
  assert_int_equal(o->auth.lease_id, 9);
  assert_memory_equal(o->auth.secret, SECRET, SECRET_LEN);
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
  req_roundtrip(&req, &out, 12 + 114 + 1 + 4);
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
  memset(s->auth.secret, 0xAB, SECRET_LEN);
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
    g->context_overhead_bytes = (uint64_t)(300 + i) << 20;
    g->active_leases = i;
    g->flags = i == 2 ? GPULEASE_GPU_EMULATED : GPULEASE_GPU_ARCH_SPECIFIC;
    g->ptx_isa_driver[0] = 9;
    g->ptx_isa_driver[1] = (uint8_t)(i == 2 ? 9 : 0);
    g->ptx_isa_nvjitlink[0] = (uint8_t)(i == 0 ? 9 : 0);
    g->ptx_isa_nvjitlink[1] = (uint8_t)(i == 0 ? 5 : 0);
  }
  gl_tenant_info *t = &inv->tenant;
  strcpy(t->tenant, "spiffe://example.org/team-a");
  t->flags = GPULEASE_TENANT_LISTED;
  t->quota_vram_bytes = 40ull << 30;
  t->quota_leases = 8;
  t->quota_sessions = 64;
  t->quota_max_ttl_s = UINT32_MAX; /* no limit */
  t->quota_gpu_seconds_per_hour = UINT64_MAX;
  t->used_vram_bytes = (3ull << 30) + 1;
  t->used_leases = 3;
  t->used_sessions = 7;
  t->used_gpu_seconds = 0x0102030405060708ull;
  size_t len = 12 + 2 + 4 + 1 + 9 + 2;
  for (unsigned i = 0; i < 3; i++)
    len += 4 + 1 + strlen(inv->gpus[i].uuid) + 1 + strlen(inv->gpus[i].name) + 2 + 4 + 24 + 8 + 8 +
           4;
  len += TENANT_INFO_LEN(strlen(t->tenant));
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
    assert_int_equal(g->context_overhead_bytes, a->context_overhead_bytes);
    assert_int_equal(g->active_leases, a->active_leases);
    assert_int_equal(g->flags, a->flags);
    assert_memory_equal(g->ptx_isa_driver, a->ptx_isa_driver, 2);
    assert_memory_equal(g->ptx_isa_nvjitlink, a->ptx_isa_nvjitlink, 2);
  }
  const gl_tenant_info *ot = &o->tenant;
  assert_string_equal(ot->tenant, "spiffe://example.org/team-a");
  assert_int_equal(ot->flags, GPULEASE_TENANT_LISTED);
  assert_true(ot->quota_vram_bytes == 40ull << 30);
  assert_int_equal(ot->quota_leases, 8);
  assert_int_equal(ot->quota_sessions, 64);
  assert_int_equal(ot->quota_max_ttl_s, UINT32_MAX);
  assert_true(ot->quota_gpu_seconds_per_hour == UINT64_MAX);
  assert_true(ot->used_vram_bytes == (3ull << 30) + 1);
  assert_int_equal(ot->used_leases, 3);
  assert_int_equal(ot->used_sessions, 7);
  assert_true(ot->used_gpu_seconds == 0x0102030405060708ull);
}

static void assert_resp_refused(const gl_response *resp);

/* GET_INVENTORY's tenant_info block, byte for byte (docs/protocol.md,
 * GET_INVENTORY): after the GPU entries, str8 tenant, u32 flags, the five
 * quotas and the four uses. Here with no GPU and an anonymous caller, then
 * with a named one; the independent builder's bytes must agree. */
static void test_inventory_tenant(void **state) {
  (void)state;
  static gl_response resp, out;
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_GET_INVENTORY;
  gl_inventory *inv = &resp.u.inventory;
  inv->max_ttl_s = 300;
  gl_tenant_info *t = &inv->tenant;
  t->flags = 0;
  t->quota_vram_bytes = UINT64_MAX;
  t->quota_leases = UINT32_MAX;
  t->quota_sessions = UINT32_MAX;
  t->quota_max_ttl_s = UINT32_MAX;
  t->quota_gpu_seconds_per_hour = UINT64_MAX;
  t->used_vram_bytes = 1ull << 30;
  t->used_leases = 1;
  t->used_sessions = 2;
  t->used_gpu_seconds = 300;
  static const uint8_t want[] = {
      0x47, 0x4C, 0x01, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x42, /* header, 66 */
      0x00, 0x00,                                     /* msg_len */
      0x00, 0x00, 0x01, 0x2C,                         /* max_ttl_s 300 */
      0x00,                                           /* driver_version "" */
      0x00, 0x00,                                     /* gpu_count 0 */
      0x00,                                           /* tenant "" (anonymous) */
      0x00, 0x00, 0x00, 0x00,                         /* flags */
      0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, /* quota_vram_bytes: unlimited */
      0xFF, 0xFF, 0xFF, 0xFF,                         /* quota_leases */
      0xFF, 0xFF, 0xFF, 0xFF,                         /* quota_sessions */
      0xFF, 0xFF, 0xFF, 0xFF,                         /* quota_max_ttl_s */
      0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, /* quota_gpu_seconds_per_hour */
      0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, /* used_vram_bytes 1 GiB */
      0x00, 0x00, 0x00, 0x01,                         /* used_leases */
      0x00, 0x00, 0x00, 0x02,                         /* used_sessions */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x2C, /* used_gpu_seconds 300 */
  };
  gl_buf b;
  gl_buf_init(&b);
  assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
  assert_int_equal(b.len, sizeof want);
  assert_memory_equal(b.data, want, sizeof want);
  gl_buf_free(&b);
  resp_roundtrip(&resp, &out, 12 + 2 + 4 + 1 + 2 + TENANT_INFO_LEN(0));
  assert_string_equal(out.u.inventory.tenant.tenant, "");
  assert_int_equal(out.u.inventory.tenant.quota_leases, UINT32_MAX);
  assert_true(out.u.inventory.tenant.used_vram_bytes == 1ull << 30);

  /* The table builder's inventory, through the codec. */
  memset(&resp, 0, sizeof resp);
  fb_inventory(&g_frame, 1, 9, 40, false);
  char err[256];
  assert_status(gl_response_decode(g_frame.b, g_frame.n, MAX_BODY, &out, err, sizeof err),
                GPULEASE_OK);
  t = &out.u.inventory.tenant;
  assert_string_equal(t->tenant, "tttttt");
  assert_int_equal(t->flags, GPULEASE_TENANT_ADMIN | GPULEASE_TENANT_LISTED);
  assert_true(t->quota_vram_bytes == UINT64_MAX);
  assert_int_equal(t->quota_leases, 16);
  assert_int_equal(t->quota_sessions, UINT32_MAX);
  assert_int_equal(t->quota_max_ttl_s, 3600);
  assert_true(t->quota_gpu_seconds_per_hour == 36000);
  assert_true(t->used_vram_bytes == 2ull << 30);
  assert_int_equal(t->used_leases, 2);
  assert_int_equal(t->used_sessions, 5);
  assert_true(t->used_gpu_seconds == 1234);
  /* Every prefix of it, the tenant block's included, is refused. */
  static uint8_t copy[sizeof g_frame.b];
  size_t n = g_frame.n;
  memcpy(copy, g_frame.b, n);
  check_all_prefixes(copy, n, DEC_RESP);

  /* A tenant name of 255 bytes is the longest; an unterminated one is
   * refused by the encoder. */
  resp = out;
  memset(resp.u.inventory.tenant.tenant, 'x', 255);
  resp.u.inventory.tenant.tenant[255] = '\0';
  resp_roundtrip(&resp, &out, n + 255 - 6);
  assert_int_equal(strlen(out.u.inventory.tenant.tenant), 255);
  memset(resp.u.inventory.tenant.tenant, 'x', sizeof resp.u.inventory.tenant.tenant);
  assert_resp_refused(&resp);
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
    if (ops[i] == GL_OP_LEASE_ALLOC) memcpy(l->secret, SECRET, SECRET_LEN);
    l->gpu_index = 1;
    l->vram_bytes = 256ull << 20;
    l->ttl_s = 300;
    l->remaining_ms = 299999;
    l->submits = 12;
    l->lease_class = (uint8_t)(GPULEASE_CLASS_SHARED + i); /* shared, device, partition */
    resp_roundtrip(&resp, &out, 12 + 2 + 7 + 81);
    assert_memory_equal(out.msg, "granted", 7);
    assert_int_equal(out.u.lease.lease_id, l->lease_id);
    assert_memory_equal(out.u.lease.secret, l->secret, SECRET_LEN);
    assert_int_equal(out.u.lease.gpu_index, 1);
    assert_int_equal(out.u.lease.vram_bytes, 256ull << 20);
    assert_int_equal(out.u.lease.ttl_s, 300);
    assert_int_equal(out.u.lease.remaining_ms, 299999);
    assert_int_equal(out.u.lease.submits, 12);
    assert_int_equal(out.u.lease.lease_class, GPULEASE_CLASS_SHARED + i);
  }
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_LEASE_FREE;
  resp_roundtrip(&resp, &out, 12 + 2);
}

/* GPU_SUBMIT's result with the kernel output block (flags bit 3): its
 * bytes after the output, and what the decoder refuses in it. */
static void test_resp_submit_kout(void **state) {
  (void)state;
  static gl_response resp, out;
  uint8_t output[3] = {1, 2, 3};
  const char text[] = "hello from thread 0\n";
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_GPU_SUBMIT;
  resp.u.submit.gpu_time_ns = 99;
  resp.u.submit.output = output;
  resp.u.submit.output_len = 3;
  resp.u.submit.has_kout = true;
  resp.u.submit.kout.flags = GL_KOUT_F_TRUNCATED;
  resp.u.submit.kout.dropped = 0x0102030405060708ull;
  resp.u.submit.kout.text = (const uint8_t *)text;
  resp.u.submit.kout.len = (uint32_t)strlen(text);
  size_t n = 12 + 2 + 12 + 3 + 13 + strlen(text);
  static gl_request sreq; /* the request that asked for it */
  sreq.op = GL_OP_GPU_SUBMIT;
  sreq.u.submit.flags = GL_SUBMIT_F_KOUT;
  gl_buf b;
  gl_buf_init(&b);
  assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
  assert_int_equal(b.len, n);
  char err[256];
  assert_status(gl_response_decode_for(&sreq, b.data, b.len, MAX_BODY, &out, err, sizeof err),
                GPULEASE_OK);
  assert_true(out.u.submit.has_kout);
  assert_int_equal(out.u.submit.output_len, 3);
  assert_int_equal(out.u.submit.kout.flags, GL_KOUT_F_TRUNCATED);
  assert_int_equal(out.u.submit.kout.dropped, 0x0102030405060708ull);
  assert_int_equal(out.u.submit.kout.len, strlen(text));
  assert_memory_equal(out.u.submit.kout.text, text, strlen(text));
  /* the bytes: u8 flags, u64 dropped, u32 len, text, after the output */
  static const uint8_t block[13] = {0x01, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 20};
  assert_memory_equal(b.data + 12 + 2 + 12 + 3, block, sizeof block);
  /* every shorter body (body_len patched) is refused when kout is asked */
  static uint8_t cut[256];
  for (size_t k = 12; k < n; k++) {
    memcpy(cut, b.data, k);
    uint32_t bl = (uint32_t)(k - 12);
    cut[8] = (uint8_t)(bl >> 24), cut[9] = (uint8_t)(bl >> 16), cut[10] = (uint8_t)(bl >> 8),
    cut[11] = (uint8_t)bl;
    if (gl_response_decode_for(&sreq, cut, k, MAX_BODY, &out, err, sizeof err) !=
        GPULEASE_MALFORMED)
      fail_msg("body of %zu bytes decoded", k - 12);
  }
  /* a reply to a request that did not ask: the block is trailing bytes */
  assert_status(gl_response_decode(b.data, b.len, MAX_BODY, &out, err, sizeof err),
                GPULEASE_MALFORMED);
  gl_buf_free(&b);
  /* without has_kout the result ends after the output */
  resp.u.submit.has_kout = false;
  resp_roundtrip(&resp, &out, 12 + 2 + 12 + 3);
  assert_false(out.u.submit.has_kout);
  gl_buf_init(&b);
  assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
  assert_status(gl_response_decode_for(&sreq, b.data, b.len, MAX_BODY, &out, err, sizeof err),
                GPULEASE_MALFORMED); /* asked for, missing */
  gl_buf_free(&b);
  /* refused: truncated without dropped bytes, dropped bytes without the
   * flag, unknown flags, more than GL_KOUT_MAX bytes */
  resp.u.submit.has_kout = true;
  struct {
    uint8_t flags;
    uint64_t dropped;
    uint32_t len;
  } bad[] = {{GL_KOUT_F_TRUNCATED, 0, 3}, {0, 5, 3}, {0x04, 0, 3}, {0, 0, GL_KOUT_MAX + 1}};
  static uint8_t big[GL_KOUT_MAX + 1];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    resp.u.submit.kout.flags = bad[i].flags;
    resp.u.submit.kout.dropped = bad[i].dropped;
    resp.u.submit.kout.len = bad[i].len;
    resp.u.submit.kout.text = big;
    gl_buf_init(&b);
    assert_int_not_equal(gl_response_encode(&resp, &b), GPULEASE_OK);
    gl_buf_free(&b);
  }
  /* and the same bytes built by hand are refused by the decoder */
  resp.u.submit.kout.flags = GL_KOUT_F_TRUNCATED;
  resp.u.submit.kout.dropped = 1;
  resp.u.submit.kout.len = 0;
  gl_buf_init(&b);
  assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
  b.data[12 + 2 + 12 + 3] = 0x00; /* flag cleared, dropped 1 */
  assert_status(gl_response_decode_for(&sreq, b.data, b.len, MAX_BODY, &out, err, sizeof err),
                GPULEASE_MALFORMED);
  assert_contains(err, "kout_flags bit 0");
  gl_buf_free(&b);
}

/* KERNEL_OUTPUT (0x0304): a session_ref, and the kout block as result. */
static void test_kernel_output_op(void **state) {
  (void)state;
  static gl_request req, rout;
  memset(&req, 0, sizeof req);
  req.op = GL_OP_KERNEL_OUTPUT;
  req.u.session.auth.lease_id = 7;
  req.u.session.session_id = 9;
  req.u.session.seq = 0;
  gl_buf b;
  gl_buf_init(&b);
  assert_status(gl_request_encode(&req, &b), GPULEASE_OK);
  assert_int_equal(b.len, 12 + 64);
  assert_int_equal(b.data[4], 0x03);
  assert_int_equal(b.data[5], 0x04);
  char err[256];
  assert_status(gl_request_decode(b.data, b.len, MAX_BODY, &rout, NULL, err, sizeof err),
                GPULEASE_OK);
  assert_int_equal(rout.u.session.session_id, 9);
  assert_ptr_equal(gl_request_session(&rout), &rout.u.session);
  /* a byte more is refused */
  uint8_t longer[12 + 65];
  memcpy(longer, b.data, b.len);
  longer[b.len] = 0;
  longer[11] = 65;
  assert_status(gl_request_decode(longer, sizeof longer, MAX_BODY, &rout, NULL, err, sizeof err),
                GPULEASE_UNSUPPORTED);
  gl_buf_free(&b);
  static gl_response resp, out;
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_KERNEL_OUTPUT;
  resp.u.kout.flags = GL_KOUT_F_DISCARDED;
  resp_roundtrip(&resp, &out, 12 + 2 + 13);
  assert_int_equal(out.u.kout.flags, GL_KOUT_F_DISCARDED);
  assert_int_equal(out.u.kout.len, 0);
  resp.u.kout.flags = 0;
  resp.u.kout.text = (const uint8_t *)"ab\n";
  resp.u.kout.len = 3;
  resp_roundtrip(&resp, &out, 12 + 2 + 13 + 3);
  assert_memory_equal(out.u.kout.text, "ab\n", 3);
  resp.u.kout.dropped = 4; /* without the truncated flag */
  gl_buf_init(&b);
  assert_int_not_equal(gl_response_encode(&resp, &b), GPULEASE_OK);
  gl_buf_free(&b);
}

static void assert_req_refused(const gl_request *req, const char *want);

/* TENSORMAP_ENCODE (0x0305): a request of 216 fixed bytes (session_ref,
 * cuTensorMapEncodeTiled's arguments in 5 slots), its refusals, and the
 * 128-byte result. */
static void tmap_fill(gl_request *req) {
  memset(req, 0, sizeof *req);
  req->op = GL_OP_TENSORMAP_ENCODE;
  gl_tmap_req *t = &req->u.tmap;
  t->s.auth.lease_id = 7;
  t->s.session_id = 9;
  t->s.seq = 3;
  t->data_type = 7; /* FLOAT32 */
  t->rank = 2;
  t->buffer = 0x1122334455667788ull;
  t->offset = 256;
  t->global_dim[0] = 64;
  t->global_dim[1] = 32;
  t->global_strides[0] = 256;
  t->box_dim[0] = 16;
  t->box_dim[1] = 8;
  t->element_strides[0] = 1;
  t->element_strides[1] = 1;
  t->swizzle = 3;
  t->l2_promotion = 2;
  t->oob_fill = 1;
}

/* Decodes msg with byte `at` of the body set to v: the status, err set. */
static gpulease_status tmap_decode_with(const gl_buf *b, size_t at, uint8_t v, char *err,
                                        size_t errlen) {
  static uint8_t m[12 + 216];
  static gl_request out;
  memcpy(m, b->data, b->len);
  m[12 + at] = v;
  return gl_request_decode(m, b->len, MAX_BODY, &out, NULL, err, errlen);
}

static void test_tensormap_op(void **state) {
  (void)state;
  static gl_request req, rout;
  tmap_fill(&req);
  gl_buf b;
  gl_buf_init(&b);
  assert_status(gl_request_encode(&req, &b), GPULEASE_OK);
  assert_int_equal(b.len, 12 + 216);
  assert_int_equal(b.data[4], 0x03);
  assert_int_equal(b.data[5], 0x05);
  const uint8_t *body = b.data + 12;
  /* a few fields at their documented offsets (big-endian) */
  assert_int_equal(body[67], 7);   /* data_type */
  assert_int_equal(body[71], 2);   /* rank */
  assert_int_equal(body[72], 0x11); /* buffer */
  assert_int_equal(body[86], 1);   /* offset 256 */
  assert_int_equal(body[95], 64);  /* global_dim[0] */
  assert_int_equal(body[103], 32); /* global_dim[1] */
  assert_int_equal(body[134], 1);  /* global_strides[0] = 256 */
  assert_int_equal(body[163], 16); /* box_dim[0] */
  assert_int_equal(body[167], 8);  /* box_dim[1] */
  assert_int_equal(body[183], 1);  /* element_strides[0] */
  assert_int_equal(body[207], 3);  /* swizzle */
  assert_int_equal(body[211], 2);  /* l2_promotion */
  assert_int_equal(body[215], 1);  /* oob_fill */
  char err[256];
  assert_status(gl_request_decode(b.data, b.len, MAX_BODY, &rout, NULL, err, sizeof err),
                GPULEASE_OK);
  assert_memory_equal(&rout.u.tmap, &req.u.tmap, sizeof req.u.tmap);
  assert_ptr_equal(gl_request_session(&rout), &rout.u.tmap.s);
  assert_true(gl_op_is_session(GL_OP_TENSORMAP_ENCODE));

  /* malformed bodies */
  assert_status(tmap_decode_with(&b, 71, 0, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
  assert_contains(err, "rank 0 out of range 1..5");
  assert_status(tmap_decode_with(&b, 71, 6, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
  assert_contains(err, "rank 6 out of range 1..5");
  assert_status(tmap_decode_with(&b, 67, 13, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
  assert_contains(err, "data_type 13 out of range 0..12");
  assert_status(tmap_decode_with(&b, 111, 1, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
  assert_contains(err, "dimension 2 is past rank 2");     /* global_dim[2] */
  assert_status(tmap_decode_with(&b, 171, 1, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
  assert_contains(err, "dimension 2 is past rank 2");     /* box_dim[2] */
  assert_status(tmap_decode_with(&b, 199, 1, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
  assert_contains(err, "dimension 4 is past rank 2");     /* element_strides[4] */
  assert_status(tmap_decode_with(&b, 143, 16, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
  assert_contains(err, "global_strides[1] must be 0 with rank 2");
  /* truncated, and a byte too many */
  static uint8_t m[12 + 217];
  memcpy(m, b.data, b.len);
  m[11] = 215;
  assert_status(gl_request_decode(m, 12 + 215, MAX_BODY, &rout, NULL, err, sizeof err),
                GPULEASE_MALFORMED);
  assert_contains(err, "truncated in oob_fill");
  m[11] = 217;
  m[12 + 216] = 0;
  assert_status(gl_request_decode(m, 12 + 217, MAX_BODY, &rout, NULL, err, sizeof err),
                GPULEASE_UNSUPPORTED);
  assert_contains(err, "1 bytes after the last field this daemon knows (oob_fill)");
  gl_buf_free(&b);

  /* the encoder refuses what the decoder refuses */
  gl_buf_init(&b);
  req.u.tmap.rank = 1; /* global_dim[1], box_dim[1] ... now past rank */
  assert_req_refused(&req, "dimension 1 is past rank 1");
  tmap_fill(&req);
  req.u.tmap.rank = 0;
  assert_req_refused(&req, "rank 0 out of range");
  tmap_fill(&req);
  req.u.tmap.s.session_id = 0;
  assert_req_refused(&req, "session_id 0");
  /* rank 5: every slot used */
  tmap_fill(&req);
  req.u.tmap.rank = 5;
  for (int i = 0; i < 5; i++) {
    req.u.tmap.global_dim[i] = 2;
    req.u.tmap.box_dim[i] = 1;
    req.u.tmap.element_strides[i] = 1;
    if (i < 4) req.u.tmap.global_strides[i] = 16u << i;
  }
  assert_status(gl_request_encode(&req, &b), GPULEASE_OK);
  assert_status(gl_request_decode(b.data, b.len, MAX_BODY, &rout, NULL, err, sizeof err),
                GPULEASE_OK);
  assert_memory_equal(&rout.u.tmap, &req.u.tmap, sizeof req.u.tmap);
  gl_buf_free(&b);

  /* the result: 128 bytes after the message */
  static gl_response resp, out;
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_TENSORMAP_ENCODE;
  for (int i = 0; i < 128; i++) resp.u.tmap[i] = (uint8_t)(i * 7 + 1);
  resp_roundtrip(&resp, &out, 12 + 2 + 128);
  assert_memory_equal(out.u.tmap, resp.u.tmap, 128);
  gl_buf_init(&b);
  assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
  b.len--;
  b.data[11]--; /* body one byte short */
  assert_status(gl_response_decode(b.data, b.len, MAX_BODY, &out, err, sizeof err),
                GPULEASE_MALFORMED);
  assert_contains(err, "tensormap");
  gl_buf_free(&b);
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
  resp.u.probe.cuda_driver_version = 13000;
  resp.u.probe.ptx_isa_driver[0] = 9;
  resp.u.probe.ptx_isa_nvjitlink[0] = 9;
  resp.u.probe.ptx_isa_nvjitlink[1] = 5;
  resp_roundtrip(&resp, &out, 12 + 2 + 2 + 2 * (1 + 5 + 1 + 21 + 2 + 4 + 8) + 8);
  assert_int_equal(out.u.probe.cuda_driver_version, 13000);
  assert_int_equal(out.u.probe.ptx_isa_driver[0], 9);
  assert_int_equal(out.u.probe.ptx_isa_nvjitlink[1], 5);
  assert_int_equal(out.u.probe.count, 2);
  assert_string_equal(out.u.probe.gpus[1].uuid, "GPU-1");
  assert_string_equal(out.u.probe.gpus[1].name, "NVIDIA A100-SXM4-40GB");
  assert_int_equal(out.u.probe.gpus[1].sm_count, 108);
  assert_int_equal(out.u.probe.gpus[1].total_vram_bytes, 40ull << 30);

  /* A probe with no GPU is a valid answer. */
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_WORKER_PROBE;
  resp_roundtrip(&resp, &out, 12 + 2 + 2 + 8);
  assert_int_equal(out.u.probe.count, 0);
}

/* Error responses of every op (and of ops the decoder does not know) carry
 * only the status and the message, whatever the op's result would be. */
static void test_resp_errors(void **state) {
  (void)state;
  static gl_response out;
  const uint16_t ops[] = {GL_OP_GET_INVENTORY, GL_OP_LEASE_ALLOC, GL_OP_LEASE_RENEW,
                          GL_OP_LEASE_QUERY,   GL_OP_LEASE_FREE,  GL_OP_GPU_SUBMIT,
                          GL_OP_WORKER_INIT,   GL_OP_WORKER_PROBE, GL_OP_SESSION_OPEN,
                          GL_OP_SESSION_CLOSE, GL_OP_SYNC,        GL_OP_MEM_ALLOC,
                          GL_OP_MEM_FREE,      GL_OP_MEM_WRITE,   GL_OP_MEM_READ,
                          GL_OP_MEM_COPY,      GL_OP_MEMSET,      GL_OP_MODULE_LOAD,
                          GL_OP_MODULE_UNLOAD, GL_OP_FUNC_INFO,   GL_OP_LAUNCH,
                          GL_OP_WORKER_RELEASE, GL_OP_AUTHENTICATE, GL_OP_LEASE_DELEGATE,
                          GL_OP_LEASE_REVOKE,  GL_OP_ADMIN_UNFENCE, 0,        0x4242};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    for (int st = GPULEASE_INVALID_ARGUMENT; st <= GPULEASE_QUOTA_EXCEEDED; st++) {
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
  assert_int_equal(b.len, 12 + 60);
  size_t len = 0;
  uint8_t *data = gl_buf_steal(&b, &len);
  assert_non_null(data);
  assert_int_equal(len, 72);
  assert_null(b.data);
  assert_int_equal(b.len, 0);
  assert_int_equal(b.cap, 0);
  assert_status(gl_request_decode(data, 12, MAX_BODY, &req, NULL, NULL, 0), GPULEASE_OK);
  assert_int_equal(req.op, GL_OP_GET_INVENTORY);
  assert_status(gl_request_decode(data + 12, 60, MAX_BODY, &req, NULL, NULL, 0), GPULEASE_OK);
  assert_int_equal(req.u.auth.lease_id, 5);
  free(data);
  gl_buf_free(&b); /* on an empty buffer: harmless */
  gl_buf_free(NULL);
}

/* ========================================================================
 * Golden bytes: the example in docs/protocol.md
 * ====================================================================== */

static const uint8_t DOC_ALLOC_REQ[] = {
    0x47, 0x4C, 0x01, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1D, /* header */
    0xFF, 0xFF, 0xFF, 0xFF,                         /* gpu_index: any */
    0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, /* vram_bytes 256 MiB */
    0x00, 0x00, 0x01, 0x2C,                         /* ttl_s 300 */
    0x00,                                           /* lease_class isolated */
    0x00, 0x00, 0x00, 0x00,                         /* printf_fifo_bytes: default */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* malloc_heap_bytes: default */
};

static const uint8_t DOC_ALLOC_RESP[] = {
    0x47, 0x4C, 0x01, 0x01, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x53, /* header */
    0x00, 0x00,                                     /* msg_len 0 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2A, /* lease_id 42 */
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0xFF, /* secret: generation 1, rights 0xff */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /*   not_after_s 0 (none) */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /*   audience 0 (the lease's tenant) */
    0x3C, 0x9E, 0x51, 0xD7, 0x08, 0xA2, 0x6B, 0xF4, /*   mac */
    0xE0, 0x17, 0xC5, 0x39, 0x8D, 0x72, 0x4A, 0xB6,
    0x00, 0x00, 0x00, 0x01,                         /* gpu_index 1 */
    0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, /* vram_bytes */
    0x00, 0x00, 0x01, 0x2C,                         /* ttl_s 300 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x93, 0xE0, /* remaining_ms 300000 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* submits 0 */
    0x00,                                           /* lease_class isolated */
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
  memcpy(resp.u.lease.secret, SECRET, SECRET_LEN);
  resp.u.lease.gpu_index = 1;
  resp.u.lease.vram_bytes = 256ull << 20;
  resp.u.lease.ttl_s = 300;
  resp.u.lease.remaining_ms = 300000;
  assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
  assert_int_equal(b.len, sizeof DOC_ALLOC_RESP);
  assert_int_equal(sizeof DOC_ALLOC_RESP, 95);
  assert_memory_equal(b.data, DOC_ALLOC_RESP, sizeof DOC_ALLOC_RESP);
  gl_buf_free(&b);
  static gl_response back;
  assert_status(gl_response_decode(DOC_ALLOC_RESP, sizeof DOC_ALLOC_RESP, MAX_BODY, &back, NULL, 0),
                GPULEASE_OK);
  assert_memory_equal(back.u.lease.secret, SECRET, SECRET_LEN);
  assert_int_equal(back.u.lease.lease_id, 42);

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
  assert_int_equal(h.body_len, 83);
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
      {16, "INVALID_HANDLE"},
      {17, "MISSING_SEQ"},
      {18, "QUOTA_EXCEEDED"},
      {19, "UNKNOWN"},
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
  assert_string_equal(gl_op_name(0x010A), "UNKNOWN");
  assert_string_equal(gl_op_name(GL_OP_ADMIN_UNFENCE), "ADMIN_UNFENCE");
  assert_int_equal(GL_OP_ADMIN_UNFENCE, 0x0109);
  assert_false(gl_op_is_session(GL_OP_ADMIN_UNFENCE));
  assert_string_equal(gl_op_name(0x0006), "UNKNOWN");
  assert_string_equal(gl_op_name(GL_OP_AUTHENTICATE), "AUTHENTICATE");
  assert_string_equal(gl_op_name(GL_OP_LEASE_DELEGATE), "LEASE_DELEGATE");
  assert_string_equal(gl_op_name(GL_OP_LEASE_REVOKE), "LEASE_REVOKE");
  assert_int_equal(GL_OP_AUTHENTICATE, 0x0005);
  assert_int_equal(GL_OP_LEASE_DELEGATE, 0x0107);
  assert_int_equal(GL_OP_LEASE_REVOKE, 0x0108);
  assert_false(gl_op_is_session(GL_OP_AUTHENTICATE));
  assert_false(gl_op_is_session(GL_OP_LEASE_DELEGATE));
  assert_false(gl_op_is_session(GL_OP_LEASE_REVOKE));
  assert_string_equal(gl_op_name(GL_OP_NODE_INFO), "NODE_INFO");
  assert_string_equal(gl_op_name(GL_OP_SHM_ATTACH), "SHM_ATTACH");
  assert_string_equal(gl_op_name(GL_OP_SHM_DETACH), "SHM_DETACH");
  assert_false(gl_op_is_session(GL_OP_SHM_ATTACH));
  assert_true(gl_op_is_session(GL_OP_MEM_WRITE_SHM));
  assert_true(gl_op_is_session(GL_OP_MEM_READ_SHM));

  /* The session ops, and gl_op_is_session() for exactly them. */
  static const struct {
    uint16_t op;
    const char *name;
  } ses[] = {
      {GL_OP_SESSION_OPEN, "SESSION_OPEN"},   {GL_OP_SESSION_CLOSE, "SESSION_CLOSE"},
      {GL_OP_SYNC, "SYNC"},                   {GL_OP_MEM_ALLOC, "MEM_ALLOC"},
      {GL_OP_MEM_FREE, "MEM_FREE"},           {GL_OP_MEM_WRITE, "MEM_WRITE"},
      {GL_OP_MEM_READ, "MEM_READ"},           {GL_OP_MEM_COPY, "MEM_COPY"},
      {GL_OP_MEMSET, "MEMSET"},               {GL_OP_MODULE_LOAD, "MODULE_LOAD"},
      {GL_OP_MODULE_UNLOAD, "MODULE_UNLOAD"}, {GL_OP_FUNC_INFO, "FUNC_INFO"},
      {GL_OP_LAUNCH, "LAUNCH"},               {GL_OP_LAUNCH_EX, "LAUNCH_EX"},
      {GL_OP_BURST, "BURST"},                 {GL_OP_EVENT_RECORD, "EVENT_RECORD"},
      {GL_OP_EVENT_ELAPSED, "EVENT_ELAPSED"}, {GL_OP_KERNEL_OUTPUT, "KERNEL_OUTPUT"},
      {GL_OP_TENSORMAP_ENCODE, "TENSORMAP_ENCODE"},
  };
  for (size_t i = 0; i < sizeof ses / sizeof ses[0]; i++) {
    assert_string_equal(gl_op_name(ses[i].op), ses[i].name);
    assert_true(gl_op_is_session(ses[i].op));
  }
  assert_int_equal(ses[0].op, 0x0301);
  assert_int_equal(ses[3].op, 0x0311);
  assert_int_equal(ses[9].op, 0x0321);
  assert_int_equal(ses[12].op, 0x0331);
  const uint16_t not_ses[] = {0,      GL_OP_GET_INVENTORY, GL_OP_LEASE_FREE, GL_OP_GPU_SUBMIT,
                              0x0300, 0x0306,              0x0319,           0x0330,
                              0x0334, GL_OP_WORKER_INIT,   GL_OP_WORKER_PROBE};
  for (size_t i = 0; i < sizeof not_ses / sizeof not_ses[0]; i++) {
    assert_false(gl_op_is_session(not_ses[i]));
    if (not_ses[i] >= 0x0300 && not_ses[i] < 0x0400)
      assert_string_equal(gl_op_name(not_ses[i]), "UNKNOWN");
  }
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
  static const uint8_t bad_scalar[3] = {2, 129, 0};
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
  assert_req_refused(&req, "param[0].size 129 out of range");
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
  /* At the edge: 114 fixed bytes (lease_auth's 48 included), the name's 4
   * and the image fill body_len's 32 bits exactly, or one byte more. */
  valid_submit(&req);
  req.u.submit.image_len = UINT32_MAX - 114 - 4 + 1;
  assert_req_refused(&req, "GPU_SUBMIT: body of 4294967296 bytes does not fit body_len");
  req.u.submit.image_len = UINT32_MAX - 114 - 4;
  assert_status(gl_request_validate(&req, err, sizeof err), GPULEASE_OK);

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
  p.size = 129;
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
 * Session ops
 * ====================================================================== */

static const uint16_t SESSION_OPS[] = {
    GL_OP_SESSION_OPEN, GL_OP_SESSION_CLOSE, GL_OP_SYNC,          GL_OP_MEM_ALLOC,
    GL_OP_MEM_FREE,     GL_OP_MEM_WRITE,     GL_OP_MEM_READ,      GL_OP_MEM_COPY,
    GL_OP_MEMSET,       GL_OP_MODULE_LOAD,   GL_OP_MODULE_UNLOAD, GL_OP_FUNC_INFO,
    GL_OP_LAUNCH,
};
#define N_SESSION_OPS (sizeof SESSION_OPS / sizeof SESSION_OPS[0])

static uint8_t g_write_data[16], g_image[24], g_read_data[32];

/* Puts one LAUNCH param into b (asserting OK). */
static void put_buffer_param(gl_buf *b, uint64_t buffer, uint64_t offset) {
  gl_launch_param p;
  memset(&p, 0, sizeof p);
  p.kind = GL_LAUNCH_PARAM_BUFFER;
  p.buffer = buffer;
  p.offset = offset;
  assert_status(gl_launch_param_put(b, &p), GPULEASE_OK);
}

static void put_scalar_param(gl_buf *b, const void *value, uint8_t size) {
  gl_launch_param p;
  memset(&p, 0, sizeof p);
  p.kind = GL_LAUNCH_PARAM_SCALAR;
  p.size = size;
  p.value = value;
  assert_status(gl_launch_param_put(b, &p), GPULEASE_OK);
}

/* The request fb_session() writes with ses_default(), as a struct. LAUNCH
 * puts its param list into *params (the caller frees it). */
static void ses_request(uint16_t op, gl_request *q, gl_buf *params) {
  static const uint8_t scalar[4] = {0x11, 0x11, 0x11, 0x11};
  memset(q, 0, sizeof *q);
  memset(g_write_data, 0x5D, sizeof g_write_data);
  memset(g_image, 'P', sizeof g_image);
  q->op = op;
  gl_session_ref ref;
  memset(&ref, 0, sizeof ref);
  ref.auth.lease_id = 42;
  memset(ref.auth.secret, 0xAB, SECRET_LEN);
  ref.session_id = 3;
  ref.seq = 5;
  switch (op) {
  case GL_OP_SESSION_OPEN: q->u.auth = ref.auth; break;
  case GL_OP_SESSION_CLOSE: q->u.session = ref; break;
  case GL_OP_SYNC:
    q->u.sync.s = ref;
    q->u.sync.ack_seq = 4;
    break;
  case GL_OP_MEM_ALLOC:
    q->u.mem_alloc.s = ref;
    q->u.mem_alloc.size_bytes = 4096;
    break;
  case GL_OP_MEM_FREE:
  case GL_OP_MODULE_UNLOAD:
    q->u.handle.s = ref;
    q->u.handle.handle = 0x1122334455667788ull;
    break;
  case GL_OP_MEM_WRITE:
    q->u.mem_write.s = ref;
    q->u.mem_write.buffer = 0x0100000000000001ull;
    q->u.mem_write.offset = 512;
    q->u.mem_write.data = g_write_data;
    q->u.mem_write.data_len = sizeof g_write_data;
    break;
  case GL_OP_MEM_READ:
    q->u.mem_read.s = ref;
    q->u.mem_read.buffer = 0x0100000000000001ull;
    q->u.mem_read.offset = 256;
    q->u.mem_read.size_bytes = 4096;
    break;
  case GL_OP_MEM_COPY:
    q->u.mem_copy.s = ref;
    q->u.mem_copy.dst_buffer = 0x0100000000000002ull;
    q->u.mem_copy.dst_offset = 8;
    q->u.mem_copy.src_buffer = 0x0100000000000001ull;
    q->u.mem_copy.src_offset = 16;
    q->u.mem_copy.size_bytes = 4096;
    break;
  case GL_OP_MEMSET:
    q->u.memset.s = ref;
    q->u.memset.buffer = 0x0100000000000001ull;
    q->u.memset.offset = 64;
    q->u.memset.element_size = 4;
    q->u.memset.value = 0xDEADBEEF;
    q->u.memset.count = 100;
    break;
  case GL_OP_MODULE_LOAD:
    q->u.module_load.s = ref;
    q->u.module_load.image_format = GPULEASE_IMAGE_PTX;
    q->u.module_load.image = g_image;
    q->u.module_load.image_len = sizeof g_image;
    break;
  case GL_OP_FUNC_INFO:
    q->u.func_info.s = ref;
    q->u.func_info.module = 0x0200000000000001ull;
    q->u.func_info.kernel_name = "kkkkkk";
    q->u.func_info.kernel_name_len = 6;
    break;
  case GL_OP_LAUNCH: {
    gl_launch_req *l = &q->u.launch;
    l->s = ref;
    l->function = 0x0300000000000001ull;
    l->grid[0] = 8, l->grid[1] = 4, l->grid[2] = 2;
    l->block[0] = 128, l->block[1] = 2, l->block[2] = 1;
    l->shared_mem_bytes = 1024;
    gl_buf_init(params);
    put_buffer_param(params, 0x0100000000000001ull, 0);
    put_buffer_param(params, 0x0100000000000002ull, 16);
    put_scalar_param(params, scalar, 4);
    l->param_count = 3;
    l->params_raw = params->data;
    l->params_raw_len = params->len;
    break;
  }
  }
}

/* Body length of ses_request(op)'s encoding. */
static size_t ses_request_body(uint16_t op) {
  switch (op) {
  case GL_OP_SESSION_OPEN: return 48;
  case GL_OP_SESSION_CLOSE: return 64;
  case GL_OP_MEM_WRITE: return 84 + 16;
  case GL_OP_MEM_READ: return 84;
  case GL_OP_MEM_COPY: return 104;
  case GL_OP_MEMSET: return 93;
  case GL_OP_MODULE_LOAD: return 69 + 24;
  case GL_OP_FUNC_INFO: return 74 + 6;
  case GL_OP_LAUNCH: return 102 + 17 + 17 + 6;
  default: return 72; /* SYNC, MEM_ALLOC, MEM_FREE, MODULE_UNLOAD */
  }
}

static bool ref_equal(const gl_session_ref *a, const gl_session_ref *b) {
  return a->auth.lease_id == b->auth.lease_id &&
         memcmp(a->auth.secret, b->auth.secret, SECRET_LEN) == 0 && a->session_id == b->session_id &&
         a->seq == b->seq;
}

/* Field by field; borrowed ranges by content. */
static bool ses_req_equal(const gl_request *a, const gl_request *b) {
  if (a->op != b->op) return false;
  const gl_session_ref *ra = gl_request_session(a), *rb = gl_request_session(b);
  if (ra && !ref_equal(ra, rb)) return false;
  switch (a->op) {
  case GL_OP_SESSION_OPEN:
    return a->u.auth.lease_id == b->u.auth.lease_id &&
           memcmp(a->u.auth.secret, b->u.auth.secret, SECRET_LEN) == 0;
  case GL_OP_SESSION_CLOSE: return true;
  case GL_OP_SYNC: return a->u.sync.ack_seq == b->u.sync.ack_seq;
  case GL_OP_MEM_ALLOC:
    return a->u.mem_alloc.size_bytes == b->u.mem_alloc.size_bytes &&
           a->u.mem_alloc.has_flags == b->u.mem_alloc.has_flags &&
           a->u.mem_alloc.flags == b->u.mem_alloc.flags;
  case GL_OP_MEM_FREE:
  case GL_OP_MODULE_UNLOAD: return a->u.handle.handle == b->u.handle.handle;
  case GL_OP_MEM_WRITE:
    return a->u.mem_write.buffer == b->u.mem_write.buffer &&
           a->u.mem_write.offset == b->u.mem_write.offset &&
           a->u.mem_write.data_len == b->u.mem_write.data_len &&
           memcmp(a->u.mem_write.data, b->u.mem_write.data, a->u.mem_write.data_len) == 0;
  case GL_OP_MEM_READ:
    return a->u.mem_read.buffer == b->u.mem_read.buffer &&
           a->u.mem_read.offset == b->u.mem_read.offset &&
           a->u.mem_read.size_bytes == b->u.mem_read.size_bytes;
  case GL_OP_MEM_COPY:
    return a->u.mem_copy.dst_buffer == b->u.mem_copy.dst_buffer &&
           a->u.mem_copy.dst_offset == b->u.mem_copy.dst_offset &&
           a->u.mem_copy.src_buffer == b->u.mem_copy.src_buffer &&
           a->u.mem_copy.src_offset == b->u.mem_copy.src_offset &&
           a->u.mem_copy.size_bytes == b->u.mem_copy.size_bytes;
  case GL_OP_MEMSET:
    return a->u.memset.buffer == b->u.memset.buffer && a->u.memset.offset == b->u.memset.offset &&
           a->u.memset.element_size == b->u.memset.element_size &&
           a->u.memset.value == b->u.memset.value && a->u.memset.count == b->u.memset.count;
  case GL_OP_MODULE_LOAD:
    return a->u.module_load.image_format == b->u.module_load.image_format &&
           a->u.module_load.image_len == b->u.module_load.image_len &&
           memcmp(a->u.module_load.image, b->u.module_load.image, a->u.module_load.image_len) == 0;
  case GL_OP_FUNC_INFO:
    return a->u.func_info.module == b->u.func_info.module &&
           a->u.func_info.kernel_name_len == b->u.func_info.kernel_name_len &&
           memcmp(a->u.func_info.kernel_name, b->u.func_info.kernel_name,
                  a->u.func_info.kernel_name_len) == 0;
  case GL_OP_LAUNCH:
    return a->u.launch.function == b->u.launch.function &&
           memcmp(a->u.launch.grid, b->u.launch.grid, sizeof a->u.launch.grid) == 0 &&
           memcmp(a->u.launch.block, b->u.launch.block, sizeof a->u.launch.block) == 0 &&
           a->u.launch.shared_mem_bytes == b->u.launch.shared_mem_bytes &&
           a->u.launch.param_count == b->u.launch.param_count &&
           a->u.launch.params_raw_len == b->u.launch.params_raw_len &&
           (a->u.launch.params_raw_len == 0 ||
            memcmp(a->u.launch.params_raw, b->u.launch.params_raw, a->u.launch.params_raw_len) ==
                0);
  default: return false;
  }
}

/* The codec's encoding of each session request equals the bytes the
 * independent builder writes from the documented layout. */
static void test_session_matches_layout(void **state) {
  (void)state;
  static gl_request req;
  for (size_t i = 0; i < N_SESSION_OPS; i++) {
    uint16_t op = SESSION_OPS[i];
    ses_spec spec = ses_default();
    fb_session(&g_frame, op, &spec);
    gl_buf params, b;
    gl_buf_init(&params);
    gl_buf_init(&b);
    ses_request(op, &req, &params);
    assert_status(gl_request_encode(&req, &b), GPULEASE_OK);
    if (b.len != g_frame.n || memcmp(b.data, g_frame.b, b.len) != 0)
      fail_msg("%s: the codec's bytes differ from the documented layout", gl_op_name(op));
    assert_int_equal(b.len, 12 + ses_request_body(op));
    gl_buf_free(&b);
    gl_buf_free(&params);
  }
}

/* Every session request: encoded, decoded back equal, every prefix
 * refused; then again with extreme values in every free field. */
static void test_session_request_roundtrips(void **state) {
  (void)state;
  static gl_request req, out;
  for (size_t i = 0; i < N_SESSION_OPS; i++) {
    uint16_t op = SESSION_OPS[i];
    gl_buf params;
    gl_buf_init(&params);
    ses_request(op, &req, &params);
    req_roundtrip(&req, &out, 12 + ses_request_body(op));
    if (!ses_req_equal(&req, &out)) fail_msg("%s: decoded request differs", gl_op_name(op));
    assert_int_equal(gl_request_validate(&out, NULL, 0), GPULEASE_OK);

    /* Largest values: ids, seq and handles are any u64 (session_id not 0). */
    gl_session_ref *ref = (gl_session_ref *)gl_request_session(&req);
    if (ref) {
      ref->auth.lease_id = UINT64_MAX;
      ref->session_id = UINT64_MAX;
      ref->seq = UINT64_MAX;
    }
    switch (op) {
    case GL_OP_SYNC: req.u.sync.ack_seq = UINT64_MAX; break;
    case GL_OP_MEM_ALLOC: req.u.mem_alloc.size_bytes = UINT64_MAX; break;
    case GL_OP_MEM_FREE:
    case GL_OP_MODULE_UNLOAD: req.u.handle.handle = 0; break; /* the worker refuses it */
    case GL_OP_MEM_WRITE: req.u.mem_write.offset = UINT64_MAX; break;
    case GL_OP_MEM_READ: req.u.mem_read.size_bytes = GL_WIRE_MAX_CHUNK; break;
    case GL_OP_MEM_COPY: req.u.mem_copy.size_bytes = UINT64_MAX; break;
    case GL_OP_MEMSET:
      req.u.memset.element_size = 1;
      req.u.memset.value = 0xFF;
      req.u.memset.count = UINT64_MAX;
      break;
    case GL_OP_MODULE_LOAD: req.u.module_load.image_format = GPULEASE_IMAGE_FATBIN; break;
    case GL_OP_FUNC_INFO: req.u.func_info.module = UINT64_MAX; break;
    case GL_OP_LAUNCH:
      req.u.launch.grid[0] = UINT32_MAX;
      req.u.launch.shared_mem_bytes = UINT32_MAX;
      break;
    default: break;
    }
    req_roundtrip(&req, &out, 12 + ses_request_body(op));
    if (!ses_req_equal(&req, &out)) fail_msg("%s: extreme request differs", gl_op_name(op));
    gl_buf_free(&params);
  }
}

/* gl_request_session() points into the request's own union member. */
static void test_request_session(void **state) {
  (void)state;
  static gl_request req;
  for (size_t i = 0; i < N_SESSION_OPS; i++) {
    gl_buf params;
    gl_buf_init(&params);
    ses_request(SESSION_OPS[i], &req, &params);
    const gl_session_ref *r = gl_request_session(&req);
    const void *want;
    switch (req.op) {
    case GL_OP_SESSION_OPEN: want = NULL; break;
    case GL_OP_SESSION_CLOSE: want = &req.u.session; break;
    case GL_OP_SYNC: want = &req.u.sync.s; break;
    case GL_OP_MEM_ALLOC: want = &req.u.mem_alloc.s; break;
    case GL_OP_MEM_FREE:
    case GL_OP_MODULE_UNLOAD: want = &req.u.handle.s; break;
    case GL_OP_MEM_WRITE: want = &req.u.mem_write.s; break;
    case GL_OP_MEM_READ: want = &req.u.mem_read.s; break;
    case GL_OP_MEM_COPY: want = &req.u.mem_copy.s; break;
    case GL_OP_MEMSET: want = &req.u.memset.s; break;
    case GL_OP_MODULE_LOAD: want = &req.u.module_load.s; break;
    case GL_OP_FUNC_INFO: want = &req.u.func_info.s; break;
    default: want = &req.u.launch.s; break;
    }
    assert_ptr_equal(r, want);
    if (r) {
      assert_int_equal(r->session_id, 3);
      assert_int_equal(r->seq, 5);
      assert_int_equal(r->auth.lease_id, 42);
    }
    gl_buf_free(&params);
  }
  memset(&req, 0, sizeof req);
  const uint16_t others[] = {GL_OP_GET_INVENTORY, GL_OP_LEASE_QUERY, GL_OP_GPU_SUBMIT,
                             GL_OP_WORKER_INIT, 0x0999};
  for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
    req.op = others[i];
    assert_null(gl_request_session(&req));
  }
  assert_null(gl_request_session(NULL));
}

/* The OK result fb_session_resp() writes with sres_default(), as a
 * struct. */
static void ses_response(uint16_t op, gl_response *r) {
  memset(r, 0, sizeof *r);
  memset(g_read_data, 0xC3, sizeof g_read_data);
  r->op = op;
  switch (op) {
  case GL_OP_SESSION_OPEN: r->u.handle = 0x0100000000000001ull; break;
  case GL_OP_MEM_ALLOC:
    r->u.mem_alloc.buffer = 0x0100000000000001ull;
    r->u.mem_alloc.region_offset = 0x12300;
    break;
  case GL_OP_SYNC:
    r->u.sync.error_status = GPULEASE_LAUNCH_FAILED;
    r->u.sync.error_op = GL_OP_LAUNCH;
    r->u.sync.error_seq = 17;
    break;
  case GL_OP_MEM_READ:
    r->u.mem_read.data = g_read_data;
    r->u.mem_read.data_len = sizeof g_read_data;
    break;
  case GL_OP_MODULE_LOAD:
    r->u.module_load.module = 0x0100000000000001ull;
    r->u.module_load.cache = GL_MODULE_CACHE_DISK;
    break;
  case GL_OP_FUNC_INFO: {
    gl_func_info_resp *f = &r->u.func_info;
    f->function = 0x0100000000000001ull;
    f->num_regs = 10;
    f->max_threads_per_block = 20;
    f->static_shared_bytes = 30;
    f->local_bytes = 40;
    f->const_bytes = 50;
    f->ptx_version = 60;
    f->binary_version = 70;
    f->param_count = 3;
    f->param_sizes[0] = f->param_sizes[1] = f->param_sizes[2] = 8;
    break;
  }
  default: break; /* empty results */
  }
}

static size_t ses_result_len(uint16_t op) {
  switch (op) {
  case GL_OP_SESSION_OPEN: return 8;
  case GL_OP_MEM_ALLOC: return 16;
  case GL_OP_SYNC: return 12;
  case GL_OP_MEM_READ: return 4 + 32;
  case GL_OP_MODULE_LOAD: return 9;
  case GL_OP_FUNC_INFO: return 8 + 28 + 2 + 6;
  default: return 0;
  }
}

static bool ses_resp_equal(const gl_response *a, const gl_response *b) {
  if (a->op != b->op || a->status != b->status) return false;
  switch (a->op) {
  case GL_OP_SESSION_OPEN: return a->u.handle == b->u.handle;
  case GL_OP_MEM_ALLOC:
    return a->u.mem_alloc.buffer == b->u.mem_alloc.buffer &&
           a->u.mem_alloc.region_offset == b->u.mem_alloc.region_offset &&
           a->u.mem_alloc.has_device_address == b->u.mem_alloc.has_device_address &&
           a->u.mem_alloc.device_address == b->u.mem_alloc.device_address;
  case GL_OP_SYNC:
    return a->u.sync.error_status == b->u.sync.error_status &&
           a->u.sync.error_op == b->u.sync.error_op && a->u.sync.error_seq == b->u.sync.error_seq;
  case GL_OP_MEM_READ:
    return a->u.mem_read.data_len == b->u.mem_read.data_len &&
           (a->u.mem_read.data_len == 0 ||
            memcmp(a->u.mem_read.data, b->u.mem_read.data, a->u.mem_read.data_len) == 0);
  case GL_OP_MODULE_LOAD:
    return a->u.module_load.module == b->u.module_load.module &&
           a->u.module_load.cache == b->u.module_load.cache;
  case GL_OP_FUNC_INFO: {
    const gl_func_info_resp *x = &a->u.func_info, *y = &b->u.func_info;
    if (x->function != y->function || x->num_regs != y->num_regs ||
        x->max_threads_per_block != y->max_threads_per_block ||
        x->static_shared_bytes != y->static_shared_bytes || x->local_bytes != y->local_bytes ||
        x->const_bytes != y->const_bytes || x->ptx_version != y->ptx_version ||
        x->binary_version != y->binary_version || x->param_count != y->param_count)
      return false;
    if (x->param_count == GL_WIRE_PARAMS_UNKNOWN) return true;
    return memcmp(x->param_sizes, y->param_sizes, x->param_count * sizeof x->param_sizes[0]) == 0;
  }
  default: return true;
  }
}

static void test_session_resp_matches_layout(void **state) {
  (void)state;
  static gl_response resp;
  for (size_t i = 0; i < N_SESSION_OPS; i++) {
    uint16_t op = SESSION_OPS[i];
    sres_spec spec = sres_default();
    fb_session_resp(&g_frame, op, &spec);
    ses_response(op, &resp);
    gl_buf b;
    gl_buf_init(&b);
    assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
    if (b.len != g_frame.n || memcmp(b.data, g_frame.b, b.len) != 0)
      fail_msg("%s: the codec's result bytes differ from the documented layout",
               gl_op_name(op));
    gl_buf_free(&b);
  }
}

static void test_session_response_roundtrips(void **state) {
  (void)state;
  static gl_response resp, out;
  for (size_t i = 0; i < N_SESSION_OPS; i++) {
    uint16_t op = SESSION_OPS[i];
    ses_response(op, &resp);
    resp_roundtrip(&resp, &out, 12 + 2 + ses_result_len(op));
    if (!ses_resp_equal(&resp, &out)) fail_msg("%s: decoded result differs", gl_op_name(op));
    /* With a message, as the daemon sends SYNC's failure message. */
    resp.msg = "op 17 (LAUNCH) failed: CUDA_ERROR_ILLEGAL_ADDRESS";
    resp.msg_len = (uint16_t)strlen(resp.msg);
    resp_roundtrip(&resp, &out, 12 + 2 + resp.msg_len + ses_result_len(op));
    if (!ses_resp_equal(&resp, &out)) fail_msg("%s: decoded result differs", gl_op_name(op));
  }

  /* Extremes: handles any non-zero u64; SYNC with no failure; the other
   * cache values; FUNC_INFO with 0, 256 and unknown param sizes. */
  ses_response(GL_OP_MEM_ALLOC, &resp);
  resp.u.mem_alloc.buffer = UINT64_MAX;
  resp.u.mem_alloc.region_offset = UINT64_MAX;
  resp_roundtrip(&resp, &out, 12 + 2 + 16);
  assert_int_equal(out.u.mem_alloc.buffer, UINT64_MAX);
  assert_int_equal(out.u.mem_alloc.region_offset, UINT64_MAX);
  ses_response(GL_OP_SESSION_OPEN, &resp);
  resp.u.handle = 1;
  resp_roundtrip(&resp, &out, 12 + 2 + 8);
  assert_int_equal(out.u.handle, 1);

  ses_response(GL_OP_SYNC, &resp);
  memset(&resp.u.sync, 0, sizeof resp.u.sync);
  resp_roundtrip(&resp, &out, 12 + 2 + 12);
  assert_int_equal(out.u.sync.error_status, 0);
  resp.u.sync.error_status = 99;
  resp.u.sync.error_op = 0xFFFF;
  resp.u.sync.error_seq = UINT64_MAX;
  resp_roundtrip(&resp, &out, 12 + 2 + 12);
  assert_int_equal(out.u.sync.error_op, 0xFFFF);
  assert_int_equal(out.u.sync.error_seq, UINT64_MAX);

  for (uint8_t c = 0; c <= 2; c++) {
    ses_response(GL_OP_MODULE_LOAD, &resp);
    resp.u.module_load.cache = c;
    resp_roundtrip(&resp, &out, 12 + 2 + 9);
    assert_int_equal(out.u.module_load.cache, c);
  }

  ses_response(GL_OP_FUNC_INFO, &resp);
  resp.u.func_info.param_count = 0;
  resp_roundtrip(&resp, &out, 12 + 2 + 38);
  assert_int_equal(out.u.func_info.param_count, 0);
  resp.u.func_info.param_count = GL_WIRE_PARAMS_UNKNOWN; /* no sizes follow */
  resp_roundtrip(&resp, &out, 12 + 2 + 38);
  assert_int_equal(out.u.func_info.param_count, GL_WIRE_PARAMS_UNKNOWN);
  resp.u.func_info.param_count = GPULEASE_MAX_PARAMS;
  for (int i = 0; i < GPULEASE_MAX_PARAMS; i++)
    resp.u.func_info.param_sizes[i] = (uint16_t)(i * 257);
  resp_roundtrip(&resp, &out, 12 + 2 + 38 + 2 * GPULEASE_MAX_PARAMS);
  assert_memory_equal(out.u.func_info.param_sizes, resp.u.func_info.param_sizes,
                      sizeof resp.u.func_info.param_sizes);

  ses_response(GL_OP_MEM_READ, &resp);
  resp.u.mem_read.data = NULL;
  resp.u.mem_read.data_len = 0;
  resp_roundtrip(&resp, &out, 12 + 2 + 4);
  assert_int_equal(out.u.mem_read.data_len, 0);

  /* Error responses of session ops are only the message, e.g. the
   * fail-fast answer to an op after a failure. */
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_MEM_WRITE;
  resp.status = GPULEASE_INVALID_HANDLE;
  resp.msg = "no buffer 0x1 in session 3";
  resp.msg_len = (uint16_t)strlen(resp.msg);
  resp_roundtrip(&resp, &out, 12 + 2 + resp.msg_len);
  assert_int_equal(out.status, GPULEASE_INVALID_HANDLE);
}

/* The encoder refuses what the decoder would refuse, and says why. */
static void test_session_encode_refuses(void **state) {
  (void)state;
  static gl_request req;
  gl_buf params;
  char err[256];

#define SPOIL(op, stmt, want)                                                                  \
  do {                                                                                         \
    ses_request(op, &req, &params);                                                            \
    stmt;                                                                                      \
    assert_req_refused(&req, want);                                                            \
    if ((op) == GL_OP_LAUNCH) gl_buf_free(&params);                                            \
  } while (0)

  for (size_t i = 0; i < N_SESSION_OPS; i++) {
    uint16_t op = SESSION_OPS[i];
    ses_request(op, &req, &params);
    assert_status(gl_request_validate(&req, err, sizeof err), GPULEASE_OK);
    assert_string_equal(err, "");
    gl_session_ref *ref = (gl_session_ref *)gl_request_session(&req);
    if (ref) {
      ref->session_id = 0;
      char want[64];
      snprintf(want, sizeof want, "%s: session_id 0 is not valid", gl_op_name(op));
      assert_req_refused(&req, want);
    }
    if (op == GL_OP_LAUNCH) gl_buf_free(&params);
  }

  SPOIL(GL_OP_MEM_ALLOC, req.u.mem_alloc.size_bytes = 0,
        "MEM_ALLOC: size_bytes 0: at least 1 byte is required");
  SPOIL(GL_OP_MEM_WRITE, req.u.mem_write.data_len = 0,
        "MEM_WRITE: data_len 0 out of range 1..67108864");
  SPOIL(GL_OP_MEM_WRITE, req.u.mem_write.data_len = GL_WIRE_MAX_CHUNK + 1,
        "data_len 67108865 out of range 1..67108864");
  SPOIL(GL_OP_MEM_WRITE, req.u.mem_write.data = NULL, "MEM_WRITE: data is NULL");
  SPOIL(GL_OP_MEM_READ, req.u.mem_read.size_bytes = 0,
        "MEM_READ: size_bytes 0 out of range 1..67108864");
  SPOIL(GL_OP_MEM_READ, req.u.mem_read.size_bytes = UINT32_MAX,
        "size_bytes 4294967295 out of range");
  SPOIL(GL_OP_MEM_COPY, req.u.mem_copy.size_bytes = 0,
        "MEM_COPY: size_bytes 0: at least 1 byte is required");
  SPOIL(GL_OP_MEMSET, req.u.memset.element_size = 3, "MEMSET: element_size 3 is not 1, 2 or 4");
  SPOIL(GL_OP_MEMSET, req.u.memset.element_size = 0, "element_size 0 is not 1, 2 or 4");
  SPOIL(GL_OP_MEMSET, (req.u.memset.element_size = 1, req.u.memset.value = 0x100),
        "MEMSET: value 0x100 does not fit element_size 1");
  SPOIL(GL_OP_MEMSET, (req.u.memset.element_size = 2, req.u.memset.value = 0x12345),
        "value 0x12345 does not fit element_size 2 (at most 0xffff)");
  SPOIL(GL_OP_MEMSET, req.u.memset.count = 0, "MEMSET: count 0: at least 1 element is required");
  SPOIL(GL_OP_MODULE_LOAD, req.u.module_load.image_format = 4,
        "MODULE_LOAD: image_format 4 out of range 0..3");
  SPOIL(GL_OP_MODULE_LOAD, req.u.module_load.image_len = 0, "MODULE_LOAD: image_len 0");
  SPOIL(GL_OP_MODULE_LOAD, req.u.module_load.image = NULL, "MODULE_LOAD: image is NULL");
  SPOIL(GL_OP_MODULE_LOAD, req.u.module_load.image_len = UINT32_MAX - 68,
        "MODULE_LOAD: body of 4294967296 bytes does not fit body_len");
  SPOIL(GL_OP_FUNC_INFO, req.u.func_info.kernel_name_len = 0,
        "FUNC_INFO: kernel_name_len 0 out of range 1..1024");
  SPOIL(GL_OP_FUNC_INFO, req.u.func_info.kernel_name_len = 1025, "kernel_name_len 1025");
  SPOIL(GL_OP_FUNC_INFO, req.u.func_info.kernel_name = NULL, "FUNC_INFO: kernel_name is NULL");
  SPOIL(GL_OP_FUNC_INFO, req.u.func_info.kernel_name = "kk\0kkk",
        "FUNC_INFO: kernel_name contains a NUL byte at offset 2");
  SPOIL(GL_OP_LAUNCH, req.u.launch.param_count = 257, "LAUNCH: param_count 257 exceeds 256");
  SPOIL(GL_OP_LAUNCH, req.u.launch.param_count = 4, "LAUNCH: truncated in param[3].kind");
  SPOIL(GL_OP_LAUNCH, req.u.launch.param_count = 2,
        "LAUNCH: params_raw_len 40 but the 2 params take 34 bytes");
  SPOIL(GL_OP_LAUNCH, req.u.launch.params_raw = NULL, "LAUNCH: params_raw is NULL");
  SPOIL(GL_OP_LAUNCH, req.u.launch.params_raw_len = 39, "truncated in param[2].value");
  SPOIL(GL_OP_LAUNCH, params.data[17] = 3,
        "LAUNCH: param[1].kind 3 unknown (1 = buffer, 2 = scalar)");
  SPOIL(GL_OP_LAUNCH, params.data[35] = 129, "LAUNCH: param[2].size 129 out of range 1..128");
#undef SPOIL

  /* A list over 16384 bytes, each param valid: 249 scalars of 64 bytes. */
  ses_request(GL_OP_LAUNCH, &req, &params);
  gl_buf_free(&params);
  gl_buf_init(&params);
  uint8_t v[64] = {0};
  for (int i = 0; i < 249; i++) put_scalar_param(&params, v, 64);
  req.u.launch.param_count = 249;
  req.u.launch.params_raw = params.data;
  req.u.launch.params_raw_len = params.len;
  assert_req_refused(&req, "LAUNCH: param list reaches 16434 bytes at param[248]");
  req.u.launch.param_count = 248;
  req.u.launch.params_raw_len = 248 * 66;
  assert_status(gl_request_validate(&req, err, sizeof err), GPULEASE_OK);
  gl_buf_free(&params);

  /* The largest accepted values validate. */
  ses_request(GL_OP_MEM_WRITE, &req, &params);
  req.u.mem_write.data_len = GL_WIRE_MAX_CHUNK; /* validate does not read the data */
  assert_status(gl_request_validate(&req, err, sizeof err), GPULEASE_OK);
  ses_request(GL_OP_MODULE_LOAD, &req, &params);
  req.u.module_load.image_len = UINT32_MAX - 69;
  assert_status(gl_request_validate(&req, err, sizeof err), GPULEASE_OK);
  ses_request(GL_OP_MEMSET, &req, &params);
  req.u.memset.element_size = 2;
  req.u.memset.value = 0xFFFF;
  assert_status(gl_request_validate(&req, err, sizeof err), GPULEASE_OK);
}

static void test_session_response_encode_refuses(void **state) {
  (void)state;
  static gl_response resp;
  ses_response(GL_OP_SESSION_OPEN, &resp);
  resp.u.handle = 0;
  assert_resp_refused(&resp);
  ses_response(GL_OP_MEM_ALLOC, &resp);
  resp.u.mem_alloc.buffer = 0;
  assert_resp_refused(&resp);
  ses_response(GL_OP_MODULE_LOAD, &resp);
  resp.u.module_load.module = 0;
  assert_resp_refused(&resp);
  ses_response(GL_OP_MODULE_LOAD, &resp);
  resp.u.module_load.cache = 3;
  assert_resp_refused(&resp);
  ses_response(GL_OP_FUNC_INFO, &resp);
  resp.u.func_info.function = 0;
  assert_resp_refused(&resp);
  ses_response(GL_OP_FUNC_INFO, &resp);
  resp.u.func_info.param_count = 257;
  assert_resp_refused(&resp);
  resp.u.func_info.param_count = 0xFFFE;
  assert_resp_refused(&resp);
  ses_response(GL_OP_SYNC, &resp);
  resp.u.sync.error_status = 100;
  assert_resp_refused(&resp);
  ses_response(GL_OP_MEM_READ, &resp);
  resp.u.mem_read.data = NULL;
  assert_resp_refused(&resp);
  ses_response(GL_OP_MEM_READ, &resp);
  resp.u.mem_read.data_len = GL_WIRE_MAX_CHUNK + 1;
  assert_resp_refused(&resp);
  /* An error response needs no valid result. */
  ses_response(GL_OP_MEM_ALLOC, &resp);
  resp.u.mem_alloc.buffer = 0;
  resp.status = GPULEASE_CAPACITY_EXCEEDED;
  gl_buf b;
  gl_buf_init(&b);
  assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
  assert_int_equal(b.len, 14);
  gl_buf_free(&b);
}

/* gl_launch_param_put writes the documented bytes and refuses bad params;
 * gl_launch_param_next walks a list and never runs past it. */

/* LAUNCH_EX, BURST, EVENT_RECORD, EVENT_ELAPSED (wire_exec.c) and GPU_SUBMIT's
 * launch attributes. */
static void decode_fails(const gl_request *req, gpulease_status want, const char *needle) {
  gl_buf b;
  gl_buf_init(&b);
  assert_status(gl_request_encode(req, &b), want);
  assert_int_equal(b.len, 0);
  char err[256] = "";
  assert_status(gl_request_validate(req, err, sizeof err), want);
  assert_contains(err, needle);
  gl_buf_free(&b);
}

/* A BURST message of count launches whose list is list[0..len), encoded as
 * it stands (checked: the encoder does not walk it). */
static void burst_msg(gl_buf *msg, uint16_t count, const uint8_t *list, size_t len) {
  gl_request q;
  memset(&q, 0, sizeof q);
  q.op = GL_OP_BURST;
  q.u.burst.s.auth.lease_id = 42;
  q.u.burst.s.session_id = 3;
  q.u.burst.s.seq = 9;
  q.u.burst.count = count;
  q.u.burst.launches = list;
  q.u.burst.launches_len = len;
  q.u.burst.checked = true;
  gl_buf_init(msg);
  assert_status(gl_request_encode(&q, msg), GPULEASE_OK);
}

/* The BURST of count launches over list[0..len) as the worker sees it
 * (gl_request_decode_ref, then gl_burst_check) gets want, err containing
 * needle; and gl_request_decode, which walks the list itself, gives the
 * same status, and for bytes past the last launch (UNSUPPORTED) the same
 * message (a truncation's names the offset in the list, not the body). */
static void burst_check_is(uint16_t count, const uint8_t *list, size_t len,
                           gpulease_status want, const char *needle) {
  gl_buf msg;
  burst_msg(&msg, count, list, len);
  static gl_request ref, full;
  char err[256] = "x", err2[256] = "";
  assert_status(gl_request_decode_ref(msg.data, msg.len, MAX_BODY, &ref, NULL, err, sizeof err),
                GPULEASE_OK);
  assert_false(ref.u.burst.checked);
  assert_int_equal(ref.u.burst.count, count);
  assert_int_equal(ref.u.burst.launches_len, len);
  assert_status(gl_burst_check(&ref.u.burst, err, sizeof err), want);
  assert_contains(err, needle);
  assert_int_equal(ref.u.burst.checked, want == GPULEASE_OK);
  assert_status(gl_request_decode(msg.data, msg.len, MAX_BODY, &full, NULL, err2, sizeof err2),
                want);
  assert_contains(err2, needle);
  if (want != GPULEASE_MALFORMED) assert_string_equal(err, err2);
  if (want == GPULEASE_OK) {
    /* checked: OK at once, err cleared */
    assert_status(gl_burst_check(&ref.u.burst, err, sizeof err), GPULEASE_OK);
    assert_string_equal(err, "");
  }
  gl_buf_free(&msg);
}

/* gl_burst_check, the worker's check of a BURST's launch list: bytes after
 * the last launch are a field of a newer release (UNSUPPORTED, the
 * compatibility rule's message naming BURST's last field, launches), as
 * gl_request_decode says for them; a list cut short or a count that claims
 * more launches than the list holds stay MALFORMED, a bad count
 * INVALID_ARGUMENT. */
static void test_burst_check(void **state) {
  (void)state;
  gl_buf list;
  gl_buf_init(&list);
  size_t at[4] = {0}; /* at[i]: where launch i starts */
  for (unsigned i = 0; i < 3; i++) {
    gl_launch_req l;
    memset(&l, 0, sizeof l);
    l.function = 0x0100000000000001ull + i;
    l.grid[0] = l.grid[1] = l.grid[2] = l.block[0] = l.block[1] = l.block[2] = 1;
    static const uint8_t scalar[4] = {1, 2, 3, 4};
    gl_buf params;
    gl_buf_init(&params);
    if (i == 1) {
      gl_launch_param p = {.kind = GL_LAUNCH_PARAM_SCALAR, .size = 4, .value = scalar};
      assert_status(gl_launch_param_put(&params, &p), GPULEASE_OK);
      l.param_count = 1;
      l.params_raw = params.data;
      l.params_raw_len = params.len;
    }
    at[i] = list.len;
    assert_status(gl_burst_add(&list, &l), GPULEASE_OK);
    gl_buf_free(&params);
  }
  at[3] = list.len;
  assert_int_equal(at[1], 38);
  size_t n = at[3];
  uint8_t *more = malloc(n + 1); /* the list and one byte past its last launch */
  assert_non_null(more);
  memcpy(more, list.data, n);
  more[n] = 0xEE;
  gl_buf_free(&list);

  burst_check_is(3, more, n, GPULEASE_OK, "");
  burst_check_is(1, more, at[1], GPULEASE_OK, "");
  /* Past the last launch: UNSUPPORTED, in the words of every other op. */
  burst_check_is(3, more, n + 1, GPULEASE_UNSUPPORTED,
                 "BURST: 1 bytes after the last field this daemon knows (launches): a field "
                 "of a newer release? this daemon speaks gpulease 0.2");
  /* A count below the launches held: the rest is past the last. */
  char want[200];
  snprintf(want, sizeof want,
           "BURST: %zu bytes after the last field this daemon knows (launches)", n - at[2]);
  burst_check_is(2, more, n, GPULEASE_UNSUPPORTED, want);
  snprintf(want, sizeof want,
           "BURST: %zu bytes after the last field this daemon knows (launches)", n - at[1]);
  burst_check_is(1, more, n, GPULEASE_UNSUPPORTED, want);
  /* A list cut short, or a count past the list: MALFORMED. */
  burst_check_is(3, more, n - 1, GPULEASE_MALFORMED, "BURST: truncated in launch[2].");
  burst_check_is(3, more, at[2] + 5, GPULEASE_MALFORMED, "truncated in launch[2].function");
  burst_check_is(4, more, n, GPULEASE_MALFORMED, "truncated in launch[3].function");
  burst_check_is(4, more, n + 1, GPULEASE_MALFORMED, "truncated in launch[3].function");
  /* count out of range: INVALID_ARGUMENT (the daemon's decoder says so
   * before the worker sees it; gl_burst_check says the same). */
  gl_buf msg;
  burst_msg(&msg, 1, more, n);
  msg.data[12 + 64] = 0, msg.data[12 + 65] = 0; /* count 0 */
  static gl_request ref;
  char err[256];
  assert_status(gl_request_decode_ref(msg.data, msg.len, MAX_BODY, &ref, NULL, err, sizeof err),
                GPULEASE_OK);
  assert_status(gl_burst_check(&ref.u.burst, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
  assert_contains(err, "BURST: count 0 out of range 1..4096");
  gl_buf_free(&msg);
  free(more);
}

static void test_exec_ops(void **state) {
  (void)state;
  static gl_request req, out;
  gl_buf params;
  /* LAUNCH_EX: LAUNCH's fields, then flags and the cluster, at 100..112. */
  ses_request(GL_OP_LAUNCH, &req, &params);
  req.op = GL_OP_LAUNCH_EX;
  req.u.launch.flags = GL_LAUNCH_EX_COOPERATIVE;
  req.u.launch.cluster[0] = 2, req.u.launch.cluster[1] = 1, req.u.launch.cluster[2] = 3;
  size_t plen = req.u.launch.params_raw_len;
  req_roundtrip(&req, &out, 12 + 115 + plen);
  assert_int_equal(out.u.launch.flags, GL_LAUNCH_EX_COOPERATIVE);
  assert_int_equal(out.u.launch.cluster[0], 2);
  assert_int_equal(out.u.launch.cluster[2], 3);
  assert_int_equal(out.u.launch.grid[0], 8);
  assert_int_equal(out.u.launch.shared_mem_bytes, 1024);
  assert_int_equal(out.u.launch.param_count, 3);
  assert_int_equal(out.u.launch.s.seq, 5);
  assert_ptr_equal(gl_request_session(&out), &out.u.launch.s);
  {
    gl_buf b;
    gl_buf_init(&b);
    assert_status(gl_request_encode(&req, &b), GPULEASE_OK);
    static const uint8_t attrs[] = {0x01, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 3, 0, 3};
    assert_memory_equal(b.data + 12 + 100, attrs, sizeof attrs);
    gl_buf_free(&b);
  }
  memset(req.u.launch.cluster, 0, sizeof req.u.launch.cluster); /* none */
  req_roundtrip(&req, &out, 12 + 115 + plen);
  req.u.launch.flags = 0x02;
  decode_fails(&req, GPULEASE_INVALID_ARGUMENT, "unknown bits");
  req.u.launch.flags = 0;
  req.u.launch.cluster[0] = 2; /* 2,0,0 */
  decode_fails(&req, GPULEASE_INVALID_ARGUMENT, "at least 1");
  gl_buf_free(&params);

  /* BURST: three launches, walked back. */
  gl_buf list;
  gl_buf_init(&list);
  for (unsigned i = 0; i < 3; i++) {
    gl_request one;
    ses_request(GL_OP_LAUNCH, &one, &params);
    one.u.launch.function = 100 + i;
    one.u.launch.grid[0] = 1 + i;
    if (i == 1) one.u.launch.param_count = 0, one.u.launch.params_raw_len = 0;
    assert_status(gl_burst_add(&list, &one.u.launch), GPULEASE_OK);
    gl_buf_free(&params);
  }
  assert_int_equal(list.len, 3 * 38 + 2 * plen);
  memset(&req, 0, sizeof req);
  req.op = GL_OP_BURST;
  req.u.burst.s.auth.lease_id = 42;
  req.u.burst.s.session_id = 3;
  req.u.burst.s.seq = 9;
  req.u.burst.count = 3;
  req.u.burst.launches = list.data;
  req.u.burst.launches_len = list.len;
  req_roundtrip(&req, &out, 12 + 66 + list.len);
  assert_int_equal(out.u.burst.count, 3);
  size_t pos = 0;
  gl_launch_req l;
  for (unsigned i = 0; i < 3; i++) {
    assert_true(gl_burst_next(&out.u.burst, &pos, &l));
    assert_int_equal(l.function, 100 + i);
    assert_int_equal(l.grid[0], 1 + i);
    assert_int_equal(l.param_count, i == 1 ? 0 : 3);
    assert_int_equal(l.s.session_id, 3);
    assert_int_equal(l.s.seq, 9);
    assert_int_equal(l.flags, 0);
  }
  assert_false(gl_burst_next(&out.u.burst, &pos, &l));
  assert_int_equal(pos, out.u.burst.launches_len);
  req.u.burst.count = 2; /* the list holds three */
  decode_fails(&req, GPULEASE_INVALID_ARGUMENT, "launches take");
  req.u.burst.count = 4; /* runs past the list */
  decode_fails(&req, GPULEASE_INVALID_ARGUMENT, "");
  req.u.burst.count = 0;
  decode_fails(&req, GPULEASE_INVALID_ARGUMENT, "out of range 1..4096");
  req.u.burst.count = GL_WIRE_MAX_BURST + 1;
  decode_fails(&req, GPULEASE_INVALID_ARGUMENT, "out of range 1..4096");
  req.u.burst.count = 3;
  req.u.burst.launches = NULL;
  decode_fails(&req, GPULEASE_INVALID_ARGUMENT, "launches is NULL");
  /* A BURST whose count claims more launches than the body holds. */
  req.u.burst.launches = list.data;
  {
    gl_buf b;
    gl_buf_init(&b);
    assert_status(gl_request_encode(&req, &b), GPULEASE_OK);
    b.data[12 + 65] = 4; /* count 3 -> 4 */
    char err[256];
    assert_status(gl_request_decode(b.data, b.len, MAX_BODY, &out, NULL, err, sizeof err),
                  GPULEASE_MALFORMED);
    gl_buf_free(&b);
  }
  gl_buf_free(&list);
  gl_launch_req bad;
  memset(&bad, 0, sizeof bad);
  bad.param_count = 1; /* and no list */
  gl_buf_init(&list);
  assert_status(gl_burst_add(&list, &bad), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(list.len, 0);
  gl_buf_free(&list);

  /* EVENT_RECORD and EVENT_ELAPSED. */
  memset(&req, 0, sizeof req);
  req.op = GL_OP_EVENT_RECORD;
  req.u.event.s.session_id = 3;
  req.u.event.event = 255;
  req_roundtrip(&req, &out, 12 + 66);
  assert_int_equal(out.u.event.event, 255);
  req.u.event.event = 256;
  decode_fails(&req, GPULEASE_INVALID_ARGUMENT, "event 256 out of range 0..255");
  req.op = GL_OP_EVENT_ELAPSED;
  req.u.event.event = 1;
  req.u.event.end_event = 7;
  req_roundtrip(&req, &out, 12 + 68);
  assert_int_equal(out.u.event.event, 1);
  assert_int_equal(out.u.event.end_event, 7);
  req.u.event.end_event = 300;
  decode_fails(&req, GPULEASE_INVALID_ARGUMENT, "end_event 300");
  static gl_response resp, rout;
  static gl_request one_l;
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_EVENT_ELAPSED;
  resp.msg = "";
  resp.u.elapsed_ns = 0x0102030405060708ull;
  resp_roundtrip(&resp, &rout, 12 + 2 + 8);
  assert_true(rout.u.elapsed_ns == 0x0102030405060708ull);
  resp.op = GL_OP_BURST;
  resp_roundtrip(&resp, &rout, 12 + 2);
  assert_string_equal(gl_op_name(GL_OP_BURST), "BURST");
  assert_string_equal(gl_op_name(GL_OP_LAUNCH_EX), "LAUNCH_EX");
  assert_true(gl_op_is_session(GL_OP_EVENT_ELAPSED));

  /* Graphs. */
  memset(&req, 0, sizeof req);
  req.op = GL_OP_GRAPH_BEGIN;
  req.u.graph_begin.s.session_id = 3;
  req_roundtrip(&req, &out, 12 + 81);
  req.u.graph_begin.flags = GL_GRAPH_F_WHILE;
  req.u.graph_begin.flag_buffer = 0x0100000000000009ull;
  req.u.graph_begin.flag_offset = 12;
  req_roundtrip(&req, &out, 12 + 81);
  assert_true(out.u.graph_begin.flag_buffer == 0x0100000000000009ull);
  assert_int_equal(out.u.graph_begin.flag_offset, 12);
  req.u.graph_begin.flag_buffer = 0;
  decode_fails(&req, GPULEASE_INVALID_ARGUMENT, "needs flag_buffer");
  req.u.graph_begin.flags = 0;
  req.u.graph_begin.flag_offset = 4;
  decode_fails(&req, GPULEASE_INVALID_ARGUMENT, "must be 0 without the WHILE flag");
  req.u.graph_begin.flags = 2;
  decode_fails(&req, GPULEASE_INVALID_ARGUMENT, "unknown bits");
  memset(&req, 0, sizeof req);
  req.op = GL_OP_GRAPH_END;
  req.u.graph.s.session_id = 3;
  req_roundtrip(&req, &out, 12 + 64);
  req.op = GL_OP_GRAPH_LAUNCH;
  req.u.graph.graph = 0x6A00000000000001ull;
  req_roundtrip(&req, &out, 12 + 72);
  assert_true(out.u.graph.graph == 0x6A00000000000001ull);
  req.op = GL_OP_GRAPH_DESTROY;
  req_roundtrip(&req, &out, 12 + 72);
  ses_request(GL_OP_LAUNCH, &one_l, &params);
  req.op = GL_OP_GRAPH_SET_ARGS;
  req.u.graph.node = 37;
  req.u.graph.args.param_count = one_l.u.launch.param_count;
  req.u.graph.args.params_raw = one_l.u.launch.params_raw;
  req.u.graph.args.params_raw_len = one_l.u.launch.params_raw_len;
  req_roundtrip(&req, &out, 12 + 78 + plen);
  assert_int_equal(out.u.graph.node, 37);
  assert_int_equal(out.u.graph.args.param_count, 3);
  req.u.graph.args.param_count = 4;
  decode_fails(&req, GPULEASE_INVALID_ARGUMENT, "");
  gl_buf_free(&params);
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_GRAPH_END;
  resp.msg = "";
  resp.u.graph_end.graph = 5;
  resp.u.graph_end.kernel_nodes = 110;
  resp.u.graph_end.ops = 112;
  resp_roundtrip(&resp, &rout, 12 + 2 + 16);
  assert_int_equal(rout.u.graph_end.kernel_nodes, 110);
  assert_int_equal(rout.u.graph_end.ops, 112);
  resp.u.graph_end.graph = 0;
  {
    gl_buf b;
    gl_buf_init(&b);
    assert_status(gl_response_encode(&resp, &b), GPULEASE_INVALID_ARGUMENT);
    gl_buf_free(&b);
  }

  /* GPU_SUBMIT: flags bit 2 puts the cluster after shared_mem_bytes. */
  static const uint8_t image[] = ".version 8.0";
  memset(&req, 0, sizeof req);
  req.op = GL_OP_GPU_SUBMIT;
  gl_submit_req *sr = &req.u.submit;
  sr->kernel_name = "k";
  sr->kernel_name_len = 1;
  sr->grid[0] = sr->grid[1] = sr->grid[2] = 4;
  sr->block[0] = sr->block[1] = sr->block[2] = 1;
  sr->image = image;
  sr->image_len = sizeof image - 1;
  req_roundtrip(&req, &out, 12 + 114 + 1 + sr->image_len);
  sr->flags = GL_SUBMIT_F_COOPERATIVE | GL_SUBMIT_F_CLUSTER;
  sr->cluster[0] = 2, sr->cluster[1] = 2, sr->cluster[2] = 1;
  sr->output_size = 77;
  req_roundtrip(&req, &out, 12 + 126 + 1 + sr->image_len);
  assert_int_equal(out.u.submit.flags, GL_SUBMIT_F_COOPERATIVE | GL_SUBMIT_F_CLUSTER);
  assert_int_equal(out.u.submit.cluster[1], 2);
  assert_int_equal(out.u.submit.output_size, 77);
  sr->cluster[1] = 0;
  decode_fails(&req, GPULEASE_INVALID_ARGUMENT, "at least 1");
  sr->flags = 0x10;
  decode_fails(&req, GPULEASE_INVALID_ARGUMENT, "unknown bits");
}

static void test_launch_params(void **state) {
  (void)state;
  static gl_request req, out;
  gl_buf b;
  gl_buf_init(&b);
  put_buffer_param(&b, 0x0102030405060708ull, 0x1122);
  static const uint8_t one = 0x7F;
  uint8_t big[64];
  for (int i = 0; i < 64; i++) big[i] = (uint8_t)(200 - i);
  put_scalar_param(&b, &one, 1);
  put_scalar_param(&b, big, 64);
  static const uint8_t head[] = {1, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0x11, 0x22,
                                 2, 1, 0x7F, 2, 64};
  assert_int_equal(b.len, 17 + 3 + 66);
  assert_memory_equal(b.data, head, sizeof head);
  assert_memory_equal(b.data + sizeof head, big, 64);

  gl_launch_param p;
  memset(&p, 0, sizeof p);
  size_t before = b.len;
  p.kind = 0;
  assert_status(gl_launch_param_put(&b, &p), GPULEASE_INVALID_ARGUMENT);
  p.kind = 3;
  assert_status(gl_launch_param_put(&b, &p), GPULEASE_INVALID_ARGUMENT);
  p.kind = GL_LAUNCH_PARAM_SCALAR;
  p.value = big;
  p.size = 0;
  assert_status(gl_launch_param_put(&b, &p), GPULEASE_INVALID_ARGUMENT);
  p.size = 129;
  assert_status(gl_launch_param_put(&b, &p), GPULEASE_INVALID_ARGUMENT);
  p.size = 4;
  p.value = NULL;
  assert_status(gl_launch_param_put(&b, &p), GPULEASE_INVALID_ARGUMENT);
  assert_status(gl_launch_param_put(&b, NULL), GPULEASE_INVALID_ARGUMENT);
  assert_status(gl_launch_param_put(NULL, &p), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(b.len, before);

  /* Through a LAUNCH request and back. */
  gl_buf unused;
  ses_request(GL_OP_LAUNCH, &req, &unused);
  gl_buf_free(&unused);
  req.u.launch.param_count = 3;
  req.u.launch.params_raw = b.data;
  req.u.launch.params_raw_len = b.len;
  req_roundtrip(&req, &out, 12 + 102 + b.len);
  size_t pos = 0;
  gl_launch_param q;
  assert_true(gl_launch_param_next(&out.u.launch, &pos, &q));
  assert_int_equal(q.kind, GL_LAUNCH_PARAM_BUFFER);
  assert_int_equal(q.buffer, 0x0102030405060708ull);
  assert_int_equal(q.offset, 0x1122);
  assert_int_equal(pos, 17);
  assert_true(gl_launch_param_next(&out.u.launch, &pos, &q));
  assert_int_equal(q.kind, GL_LAUNCH_PARAM_SCALAR);
  assert_int_equal(q.size, 1);
  assert_int_equal(q.value[0], 0x7F);
  assert_true(gl_launch_param_next(&out.u.launch, &pos, &q));
  assert_int_equal(q.size, 64);
  assert_memory_equal(q.value, big, 64);
  assert_false(gl_launch_param_next(&out.u.launch, &pos, &q));
  assert_int_equal(pos, out.u.launch.params_raw_len);
  gl_buf_free(&b);

  /* No params: nothing to walk. */
  ses_request(GL_OP_LAUNCH, &req, &unused);
  gl_buf_free(&unused);
  req.u.launch.param_count = 0;
  req.u.launch.params_raw = NULL;
  req.u.launch.params_raw_len = 0;
  req_roundtrip(&req, &out, 12 + 102);
  pos = 0;
  assert_false(gl_launch_param_next(&out.u.launch, &pos, &q));
  assert_int_equal(pos, 0);

  /* Unvalidated lists: never past params_raw_len. */
  gl_launch_req l;
  memset(&l, 0, sizeof l);
  pos = 0;
  assert_false(gl_launch_param_next(&l, &pos, &q)); /* NULL list */
  assert_false(gl_launch_param_next(NULL, &pos, &q));
  const struct {
    uint8_t raw[20];
    size_t len;
  } bad[] = {
      {{1, 0, 0, 0}, 4},                                          /* buffer cut short */
      {{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}, 16},     /* one byte short */
      {{2}, 1},                                                   /* scalar without size */
      {{2, 3, 0, 0}, 4},                                          /* scalar value cut short */
      {{2, 0, 0, 0}, 4},                                          /* scalar size 0 */
      {{2, 65, 0, 0}, 4},                                         /* scalar size 65 */
      {{0, 0, 0, 0}, 4},                                          /* kind 0 */
      {{9, 0, 0, 0}, 4},                                          /* unknown kind */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint8_t *raw = malloc(bad[i].len); /* exact size for ASan */
    assert_non_null(raw);
    memcpy(raw, bad[i].raw, bad[i].len);
    l.params_raw = raw;
    l.params_raw_len = bad[i].len;
    pos = 0;
    assert_false(gl_launch_param_next(&l, &pos, &q));
    assert_int_equal(pos, 0);
    free(raw);
  }
}

/* The largest transfers: 64 MiB in one MEM_WRITE and one MEM_READ result
 * (no prefix walk here: it would take too long). */
static void test_session_max_chunk(void **state) {
  (void)state;
  static gl_request req, out;
  static gl_response resp, rout;
  uint8_t *data = malloc(GL_WIRE_MAX_CHUNK);
  assert_non_null(data);
  for (size_t i = 0; i < GL_WIRE_MAX_CHUNK; i += 4096) data[i] = (uint8_t)(i >> 12);
  data[GL_WIRE_MAX_CHUNK - 1] = 0xEE;
  gl_buf params, b;
  ses_request(GL_OP_MEM_WRITE, &req, &params);
  req.u.mem_write.data = data;
  req.u.mem_write.data_len = GL_WIRE_MAX_CHUNK;
  gl_buf_init(&b);
  assert_status(gl_request_encode(&req, &b), GPULEASE_OK);
  assert_int_equal(b.len, 12 + 84 + (size_t)GL_WIRE_MAX_CHUNK);
  assert_status(gl_request_decode(b.data, b.len, 65u << 20, &out, NULL, NULL, 0), GPULEASE_OK);
  assert_int_equal(out.u.mem_write.data_len, GL_WIRE_MAX_CHUNK);
  assert_ptr_equal(out.u.mem_write.data, b.data + 96);
  assert_int_equal(out.u.mem_write.data[GL_WIRE_MAX_CHUNK - 1], 0xEE);
  assert_status(gl_request_decode(b.data, b.len, 64u << 20, &out, NULL, NULL, 0),
                GPULEASE_TOO_LARGE);
  gl_buf_free(&b);

  ses_response(GL_OP_MEM_READ, &resp);
  resp.u.mem_read.data = data;
  resp.u.mem_read.data_len = GL_WIRE_MAX_CHUNK;
  assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
  assert_int_equal(b.len, 12 + 2 + 4 + (size_t)GL_WIRE_MAX_CHUNK);
  assert_status(gl_response_decode(b.data, b.len, 65u << 20, &rout, NULL, 0), GPULEASE_OK);
  assert_int_equal(rout.u.mem_read.data_len, GL_WIRE_MAX_CHUNK);
  assert_int_equal(rout.u.mem_read.data[GL_WIRE_MAX_CHUNK - 1], 0xEE);
  gl_buf_free(&b);
  free(data);
}

/* The MEM_ALLOC example of docs/protocol.md, section 9. */
static const uint8_t DOC_MEM_ALLOC_REQ[] = {
    0x47, 0x4C, 0x01, 0x00, 0x03, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x48, /* header */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2A, /* lease_id 42 */
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0xFF, /* secret: generation 1, rights 0xff */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /*   not_after_s 0 (none) */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /*   audience 0 (the lease's tenant) */
    0x3C, 0x9E, 0x51, 0xD7, 0x08, 0xA2, 0x6B, 0xF4, /*   mac */
    0xE0, 0x17, 0xC5, 0x39, 0x8D, 0x72, 0x4A, 0xB6,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, /* session_id 1 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, /* seq 1 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, /* size_bytes 1 MiB */
};

static const uint8_t DOC_MEM_ALLOC_RESP[] = {
    0x47, 0x4C, 0x01, 0x01, 0x03, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x12, /* header */
    0x00, 0x00,                                     /* msg_len 0 */
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05, /* buffer */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* region_offset 0 */
};

static const uint8_t DOC_MEM_FREE_ERROR[] = {
    0x47, 0x4C, 0x01, 0x01, 0x03, 0x12, 0x00, 0x10, 0x00, 0x00, 0x00, 0x24, /* header */
    0x00, 0x22, 'n', 'o', ' ', 'b', 'u', 'f', 'f', 'e', 'r', ' ', '0', 'x', '1', '0', '0', '0',
    '0', '0', '0', '0', '5', ' ', 'i', 'n', ' ', 's', 'e', 's', 's', 'i', 'o', 'n', ' ', '1',
};

/* MEM_ALLOC's flags and device_address (0.2; docs/protocol.md "MEM_ALLOC
 * (0x0311)"): the 76-byte request round trips with its flags at body
 * offset 72, the previous release's 72-byte body still decodes (flags 0,
 * re-encoded as 72 bytes), unknown bits are refused by the decoder and the
 * encoder; the 24-byte result round trips with device_address at result
 * offset 16, both results decode plainly, and decoded for their request a
 * result must be the one it asked for. */
static void test_mem_alloc_address(void **state) {
  (void)state;
  static gl_request req, out;
  static gl_response resp, rout;
  char err[256];
  memset(&req, 0, sizeof req);
  req.op = GL_OP_MEM_ALLOC;
  req.u.mem_alloc.s.auth.lease_id = 42;
  memcpy(req.u.mem_alloc.s.auth.secret, SECRET, SECRET_LEN);
  req.u.mem_alloc.s.session_id = 1;
  req.u.mem_alloc.s.seq = 3;
  req.u.mem_alloc.size_bytes = 4096;
  req.u.mem_alloc.has_flags = true;
  req.u.mem_alloc.flags = GL_MEM_ALLOC_F_ADDRESS;
  gl_buf b;
  gl_buf_init(&b);
  assert_status(gl_request_encode(&req, &b), GPULEASE_OK);
  assert_int_equal(b.len, 12 + 76);
  static const uint8_t body_len_76[4] = {0, 0, 0, 76}, flags_1[4] = {0, 0, 0, 1};
  assert_memory_equal(b.data + 8, body_len_76, 4);
  assert_memory_equal(b.data + 12 + 72, flags_1, 4);
  assert_status(gl_request_decode(b.data, b.len, MAX_BODY, &out, NULL, err, sizeof err),
                GPULEASE_OK);
  assert_true(out.u.mem_alloc.has_flags);
  assert_int_equal(out.u.mem_alloc.flags, GL_MEM_ALLOC_F_ADDRESS);
  assert_int_equal(out.u.mem_alloc.size_bytes, 4096);
  assert_int_equal(out.u.mem_alloc.s.seq, 3);
  gl_buf re;
  gl_buf_init(&re);
  assert_status(gl_request_encode(&out, &re), GPULEASE_OK);
  assert_int_equal(re.len, b.len);
  assert_memory_equal(re.data, b.data, b.len);
  gl_buf_free(&re);

  /* The same request as the previous release sends it: 72 bytes. */
  uint8_t old[12 + 72];
  memcpy(old, b.data, sizeof old);
  old[11] = 72;
  assert_status(gl_request_decode(old, sizeof old, MAX_BODY, &out, NULL, err, sizeof err),
                GPULEASE_OK);
  assert_false(out.u.mem_alloc.has_flags);
  assert_int_equal(out.u.mem_alloc.flags, 0);
  assert_int_equal(out.u.mem_alloc.size_bytes, 4096);
  gl_buf_init(&re);
  assert_status(gl_request_encode(&out, &re), GPULEASE_OK);
  assert_int_equal(re.len, sizeof old);
  assert_memory_equal(re.data, old, sizeof old);
  gl_buf_free(&re);

  /* An unknown bit on the wire (and with bit 0), and in the encoder. */
  b.data[12 + 75] = 0x03;
  assert_status(gl_request_decode(b.data, b.len, MAX_BODY, &out, NULL, err, sizeof err),
                GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "MEM_ALLOC: flags 0x00000003: only bit 0 (the device address) is "
                              "defined"));
  gl_buf_free(&b);
  req.u.mem_alloc.flags = 0x4;
  assert_status(gl_request_validate(&req, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "flags 0x00000004: only bit 0"));
  req.u.mem_alloc.has_flags = false; /* flags the 72-byte body cannot carry */
  req.u.mem_alloc.flags = GL_MEM_ALLOC_F_ADDRESS;
  assert_status(gl_request_validate(&req, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "without has_flags"));

  /* The 24-byte result. */
  gl_request asked = {.op = GL_OP_MEM_ALLOC}, plain = {.op = GL_OP_MEM_ALLOC};
  asked.u.mem_alloc.has_flags = true;
  asked.u.mem_alloc.flags = GL_MEM_ALLOC_F_ADDRESS;
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_MEM_ALLOC;
  resp.u.mem_alloc.buffer = 0x0100000000000007ull;
  resp.u.mem_alloc.region_offset = 0x2300;
  resp.u.mem_alloc.has_device_address = true;
  resp.u.mem_alloc.device_address = 0x00007f1234562300ull;
  gl_buf_init(&b);
  assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
  assert_int_equal(b.len, 12 + 2 + 24);
  static const uint8_t addr_be[8] = {0x00, 0x00, 0x7f, 0x12, 0x34, 0x56, 0x23, 0x00};
  assert_memory_equal(b.data + 12 + 2 + 16, addr_be, 8);
  assert_status(gl_response_decode(b.data, b.len, MAX_BODY, &rout, err, sizeof err), GPULEASE_OK);
  assert_true(rout.u.mem_alloc.has_device_address);
  assert_int_equal(rout.u.mem_alloc.buffer, 0x0100000000000007ull);
  assert_int_equal(rout.u.mem_alloc.region_offset, 0x2300);
  assert_int_equal(rout.u.mem_alloc.device_address, 0x00007f1234562300ull);
  gl_buf_init(&re);
  assert_status(gl_response_encode(&rout, &re), GPULEASE_OK);
  assert_int_equal(re.len, b.len);
  assert_memory_equal(re.data, b.data, b.len);
  gl_buf_free(&re);
  assert_status(gl_response_decode_for(&asked, b.data, b.len, MAX_BODY, &rout, err, sizeof err),
                GPULEASE_OK);
  assert_int_equal(rout.u.mem_alloc.device_address, 0x00007f1234562300ull);
  assert_status(gl_response_decode_for(NULL, b.data, b.len, MAX_BODY, &rout, err, sizeof err),
                GPULEASE_OK);
  /* ... to a request that did not ask for it: refused, as unknown bytes */
  assert_status(gl_response_decode_for(&plain, b.data, b.len, MAX_BODY, &rout, err, sizeof err),
                GPULEASE_MALFORMED);
  assert_non_null(strstr(err, "MEM_ALLOC: 8 bytes (device_address) after region_offset, which "
                              "the request did not ask for"));
  assert_int_equal(rout.u.mem_alloc.buffer, 0); /* nothing left behind */
  gl_buf_free(&b);

  /* The 16-byte result: what a request without the flag gets. */
  resp.u.mem_alloc.has_device_address = false;
  resp.u.mem_alloc.device_address = 0;
  gl_buf_init(&b);
  assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
  assert_int_equal(b.len, 12 + 2 + 16);
  assert_status(gl_response_decode(b.data, b.len, MAX_BODY, &rout, err, sizeof err), GPULEASE_OK);
  assert_false(rout.u.mem_alloc.has_device_address);
  assert_status(gl_response_decode_for(&plain, b.data, b.len, MAX_BODY, &rout, err, sizeof err),
                GPULEASE_OK);
  assert_status(gl_response_decode_for(&asked, b.data, b.len, MAX_BODY, &rout, err, sizeof err),
                GPULEASE_MALFORMED);
  assert_non_null(strstr(err, "no device_address after region_offset, which the request asked "
                              "for"));
  gl_buf_free(&b);
  /* An error answer carries no result, asked or not. */
  resp.status = GPULEASE_CAPACITY_EXCEEDED;
  gl_buf_init(&b);
  assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
  assert_status(gl_response_decode_for(&asked, b.data, b.len, MAX_BODY, &rout, err, sizeof err),
                GPULEASE_OK);
  assert_int_equal(rout.status, GPULEASE_CAPACITY_EXCEEDED);
  gl_buf_free(&b);
}

static void test_doc_session_example(void **state) {
  (void)state;
  static gl_request req, out;
  static gl_response resp, rout;
  memset(&req, 0, sizeof req);
  req.op = GL_OP_MEM_ALLOC;
  req.u.mem_alloc.s.auth.lease_id = 42;
  memcpy(req.u.mem_alloc.s.auth.secret, SECRET, SECRET_LEN);
  req.u.mem_alloc.s.session_id = 1;
  req.u.mem_alloc.s.seq = 1;
  req.u.mem_alloc.size_bytes = 1u << 20;
  gl_buf b;
  gl_buf_init(&b);
  assert_status(gl_request_encode(&req, &b), GPULEASE_OK);
  assert_int_equal(b.len, sizeof DOC_MEM_ALLOC_REQ);
  assert_int_equal(sizeof DOC_MEM_ALLOC_REQ, 84);
  assert_memory_equal(b.data, DOC_MEM_ALLOC_REQ, sizeof DOC_MEM_ALLOC_REQ);
  gl_buf_free(&b);
  assert_status(gl_request_decode(DOC_MEM_ALLOC_REQ, sizeof DOC_MEM_ALLOC_REQ, MAX_BODY, &out,
                                  NULL, NULL, 0),
                GPULEASE_OK);
  assert_true(ses_req_equal(&req, &out));

  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_MEM_ALLOC;
  resp.u.mem_alloc.buffer = 0x0000000100000005ull;
  resp.u.mem_alloc.region_offset = 0;
  assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
  assert_int_equal(b.len, sizeof DOC_MEM_ALLOC_RESP);
  assert_memory_equal(b.data, DOC_MEM_ALLOC_RESP, sizeof DOC_MEM_ALLOC_RESP);
  gl_buf_free(&b);
  assert_status(gl_response_decode(DOC_MEM_ALLOC_RESP, sizeof DOC_MEM_ALLOC_RESP, MAX_BODY, &rout,
                                   NULL, 0),
                GPULEASE_OK);
  assert_int_equal(rout.u.mem_alloc.buffer, 0x0000000100000005ull);
  assert_int_equal(rout.u.mem_alloc.region_offset, 0);

  assert_status(gl_response_encode_error(GL_OP_MEM_FREE, GPULEASE_INVALID_HANDLE, &b,
                                         "no buffer 0x%llx in session %d",
                                         (unsigned long long)0x100000005ull, 1),
                GPULEASE_OK);
  assert_int_equal(b.len, sizeof DOC_MEM_FREE_ERROR);
  assert_memory_equal(b.data, DOC_MEM_FREE_ERROR, sizeof DOC_MEM_FREE_ERROR);
  gl_buf_free(&b);
}

/* ========================================================================
 * The hex dumps of docs/protocol.md, sections 8 and 9, are the bytes above
 * ====================================================================== */

/* Reads the hex dumps (``` blocks of "OFFS  hh hh ...  |ascii|" lines)
 * between the headings `from` and `to` of doc into out[], each checked
 * line by line: the offset counts up by 16, 1..16 bytes a line, and the
 * ASCII column shows the bytes. Returns the number of dumps. */
typedef struct doc_dump {
  uint8_t b[256];
  size_t n;
} doc_dump;

static size_t doc_dumps(const char *doc, const char *from, const char *to, doc_dump *out,
                        size_t max) {
  const char *p = strstr(doc, from);
  if (!p) fail_msg("docs/protocol.md has no heading \"%s\"", from);
  const char *end = to ? strstr(p, to) : NULL;
  if (!end) end = p + strlen(p);
  size_t count = 0;
  for (;;) {
    const char *open = strstr(p, "```\n");
    if (!open || open >= end) break;
    const char *line = open + 4;
    const char *close = strstr(line, "```");
    assert_non_null(close);
    assert_true(count < max);
    doc_dump *d = &out[count++];
    d->n = 0;
    while (line < close) {
      const char *nl = strchr(line, '\n');
      assert_non_null(nl);
      unsigned off = 0;
      if (sscanf(line, "%4x", &off) != 1 || off != d->n)
        fail_msg("dump %zu of \"%s\": line \"%.20s\" should start at offset %04zx", count, from,
                 line, d->n);
      const char *bar = strstr(line, "  |");
      assert_true(bar && bar < nl && nl[-1] == '|');
      size_t first = d->n;
      for (const char *h = line + 6; h < bar; h += 3) {
        unsigned v;
        if (sscanf(h, "%2x", &v) != 1) break;
        assert_true(d->n < sizeof d->b);
        d->b[d->n++] = (uint8_t)v;
      }
      size_t k = d->n - first;
      assert_true(k >= 1 && k <= 16);
      assert_int_equal((size_t)(nl - 1 - (bar + 3)), k); /* the ASCII column */
      for (size_t i = 0; i < k; i++) {
        uint8_t c = d->b[first + i];
        assert_int_equal((uint8_t)bar[3 + i], c >= 0x20 && c < 0x7F ? c : '.');
      }
      line = nl + 1;
    }
    p = close + 3;
  }
  return count;
}

static void assert_dump(const doc_dump *d, const uint8_t *want, size_t n, const char *what) {
  if (d->n != n || memcmp(d->b, want, n) != 0)
    fail_msg("docs/protocol.md: the hex dump of %s (%zu bytes) differs from the codec's %zu bytes",
             what, d->n, n);
}

static void test_doc_hex_dumps(void **state) {
  (void)state;
  const char *src = getenv("GL_TEST_SRC_DIR");
  if (!src) src = GL_SOURCE_DIR;
  char path[4096];
  snprintf(path, sizeof path, "%s/docs/protocol.md", src);
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s", path);
  static char doc[1 << 20];
  size_t n = fread(doc, 1, sizeof doc - 1, f);
  fclose(f);
  assert_true(n < sizeof doc - 1);
  doc[n] = '\0';
  static doc_dump d[8];
  assert_int_equal(doc_dumps(doc, "\n## 8. Example: LEASE_ALLOC on the wire",
                             "\n## 9. Example", d, 8),
                   3);
  assert_dump(&d[0], DOC_ALLOC_REQ, sizeof DOC_ALLOC_REQ, "section 8's request");
  assert_dump(&d[1], DOC_ALLOC_RESP, sizeof DOC_ALLOC_RESP, "section 8's response");
  assert_dump(&d[2], DOC_ERROR_RESP, sizeof DOC_ERROR_RESP, "section 8's error response");
  assert_int_equal(doc_dumps(doc, "\n## 9. Example: MEM_ALLOC on the wire", NULL, d, 8), 3);
  assert_dump(&d[0], DOC_MEM_ALLOC_REQ, sizeof DOC_MEM_ALLOC_REQ, "section 9's request");
  assert_dump(&d[1], DOC_MEM_ALLOC_RESP, sizeof DOC_MEM_ALLOC_RESP, "section 9's response");
  assert_dump(&d[2], DOC_MEM_FREE_ERROR, sizeof DOC_MEM_FREE_ERROR, "section 9's error response");
  /* The secret of both examples is the tests' SECRET, behind lease_id. */
  assert_memory_equal(DOC_ALLOC_RESP + 12 + 2 + 8, SECRET, SECRET_LEN);
  assert_memory_equal(DOC_MEM_ALLOC_REQ + 12 + 8, SECRET, SECRET_LEN);
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
  assert_true(seen >= 15 + 26 + 6);
  /* every request op and six responses, then every session op's request
   * and result */
  assert_true(valid >= 9 + 6 + 13 + 13);
}

/* ========================================================================
 * WORKER_LOST (section 7): the worker's notice after a lost context
 * ====================================================================== */

static void test_worker_lost(void **state) {
  (void)state;
  static gl_response resp, out;
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_WORKER_LOST;
  resp.msg = "CUDA_ERROR_ILLEGAL_ADDRESS";
  resp.msg_len = (uint16_t)strlen(resp.msg);
  gl_worker_lost_resp *wl = &resp.u.worker_lost;
  wl->count = 2;
  wl->sessions[0] = (gl_lost_session){.session_id = 0x1122334455667788ull,
                                      .status = GPULEASE_LAUNCH_FAILED, .op = GL_OP_LAUNCH,
                                      .seq = 9, .msg = "fault", .msg_len = 5};
  wl->sessions[1] = (gl_lost_session){.session_id = 7, .status = GPULEASE_MISSING_SEQ,
                                      .op = 0, .seq = 3, .msg = "", .msg_len = 0};
  /* The documented layout: u16 count, then per session u64 id, u16 status,
   * u16 op, u64 seq, u16 msg_len, msg. */
  static const uint8_t want[] = {
      0x47, 0x4C, 0x01, 0x01, 0x7F, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x4F, /* header, 79 */
      0x00, 0x1A, 'C', 'U', 'D', 'A', '_', 'E', 'R', 'R', 'O', 'R', '_', 'I', 'L', 'L', 'E', 'G',
      'A', 'L', '_', 'A', 'D', 'D', 'R', 'E', 'S', 'S',       /* msg */
      0x00, 0x02,                                             /* count */
      0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,         /* session_id */
      0x00, 0x04, 0x03, 0x31,                                 /* LAUNCH_FAILED, LAUNCH */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09,         /* seq 9 */
      0x00, 0x05, 'f', 'a', 'u', 'l', 't',                    /* msg */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07,         /* session_id 7 */
      0x00, 0x11, 0x00, 0x00,                                 /* MISSING_SEQ, op 0 */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03,         /* seq 3 */
      0x00, 0x00,                                             /* no msg */
  };
  gl_buf b;
  gl_buf_init(&b);
  assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
  assert_int_equal(b.len, sizeof want);
  assert_memory_equal(b.data, want, sizeof want);
  gl_buf_free(&b);
  resp_roundtrip(&resp, &out, sizeof want);
  assert_int_equal(out.u.worker_lost.count, 2);
  for (int i = 0; i < 2; i++) {
    const gl_lost_session *a = &wl->sessions[i], *z = &out.u.worker_lost.sessions[i];
    assert_int_equal(z->session_id, a->session_id);
    assert_int_equal(z->status, a->status);
    assert_int_equal(z->op, a->op);
    assert_int_equal(z->seq, a->seq);
    assert_int_equal(z->msg_len, a->msg_len);
    assert_memory_equal(z->msg, a->msg, a->msg_len);
  }
  assert_string_equal(gl_op_name(GL_OP_WORKER_LOST), "WORKER_LOST");
  assert_false(gl_op_is_session(GL_OP_WORKER_LOST));

  /* Refused by the encoder, and by the decoder from patched bytes. */
  static gl_response bad;
  bad = resp;
  bad.u.worker_lost.count = GL_WIRE_MAX_LOST_SESSIONS + 1;
  assert_resp_refused(&bad);
  bad = resp;
  bad.u.worker_lost.sessions[1].session_id = 0;
  assert_resp_refused(&bad);
  bad = resp;
  bad.u.worker_lost.sessions[0].status = GPULEASE_OK;
  assert_resp_refused(&bad);
  bad = resp;
  bad.u.worker_lost.sessions[0].status = 100;
  assert_resp_refused(&bad);
  uint8_t patched[sizeof want];
  char err[256];
  memcpy(patched, want, sizeof want);
  patched[41] = 65; /* count */
  assert_status(gl_response_decode(patched, sizeof patched, MAX_BODY, &out, err, sizeof err),
                GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "count 65 exceeds 64"));
  memcpy(patched, want, sizeof want);
  patched[51] = 0; /* first session's status: 0 */
  assert_status(gl_response_decode(patched, sizeof patched, MAX_BODY, &out, err, sizeof err),
                GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "is not a failure"));
  memcpy(patched, want, sizeof want);
  patched[62] = 0x40; /* first msg_len runs past the end */
  assert_status(gl_response_decode(patched, sizeof patched, MAX_BODY, &out, err, sizeof err),
                GPULEASE_MALFORMED);
}

/* ========================================================================
 * BATCH: whole messages of one session's ops, behind u32 lengths
 * ====================================================================== */

static gl_session_ref batch_ref(uint64_t seq) {
  gl_session_ref r = {.auth = {.lease_id = 42}, .session_id = 9, .seq = seq};
  for (int i = 0; i < SECRET_LEN; i++) r.auth.secret[i] = (uint8_t)(0xA0 + i);
  return r;
}

static gl_request memset_op(uint64_t seq) {
  gl_request q = {.op = GL_OP_MEMSET};
  q.u.memset.s = batch_ref(seq);
  q.u.memset.buffer = 0xB100000000000001ull;
  q.u.memset.element_size = 4;
  q.u.memset.value = (uint32_t)seq;
  q.u.memset.count = 1;
  return q;
}

static gl_request sync_op_req(uint64_t seq) {
  gl_request q = {.op = GL_OP_SYNC};
  q.u.sync.s = batch_ref(seq);
  return q;
}

/* Encodes a BATCH of the given ops (their list built with gl_batch_add). */
static gpulease_status batch_encode(uint64_t seq, const gl_request *ops, int n, gl_buf *out,
                                    gl_buf *list) {
  gl_buf_init(list);
  for (int i = 0; i < n; i++) assert_status(gl_batch_add(list, &ops[i]), GPULEASE_OK);
  gl_request b = {.op = GL_OP_BATCH};
  b.u.batch.s = batch_ref(seq);
  b.u.batch.count = (uint16_t)n;
  b.u.batch.ops = list->data;
  b.u.batch.ops_len = list->len;
  gl_buf_init(out);
  return gl_request_encode(&b, out);
}

static void test_batch(void **state) {
  (void)state;
  static gl_request out, ops[3];
  ops[0] = memset_op(5);
  ops[1] = memset_op(6);
  ops[2] = sync_op_req(7);
  gl_buf b, list;
  assert_status(batch_encode(5, ops, 3, &b, &list), GPULEASE_OK);
  /* Layout: header, session_ref, u16 count, then each op's whole message
   * behind its u32 length, exactly as it is encoded alone. */
  size_t want = 12 + 64 + 2;
  for (int i = 0; i < 3; i++) {
    gl_buf one;
    gl_buf_init(&one);
    assert_status(gl_request_encode(&ops[i], &one), GPULEASE_OK);
    size_t at = want;
    assert_int_equal(b.data[at] << 24 | b.data[at + 1] << 16 | b.data[at + 2] << 8 | b.data[at + 3],
                     one.len);
    assert_memory_equal(b.data + at + 4, one.data, one.len);
    want += 4 + one.len;
    gl_buf_free(&one);
  }
  assert_int_equal(b.len, want);
  assert_int_equal(b.data[4], 0x03);
  assert_int_equal(b.data[5], 0x40);
  assert_int_equal(b.data[12 + 64], 0);
  assert_int_equal(b.data[12 + 64 + 1], 3);
  char err[512];
  assert_status(gl_request_decode(b.data, b.len, MAX_BODY, &out, NULL, err, sizeof err),
                GPULEASE_OK);
  assert_int_equal(out.u.batch.count, 3);
  assert_int_equal(out.u.batch.s.seq, 5);
  assert_ptr_equal(gl_request_session(&out), &out.u.batch.s);
  assert_true(gl_op_is_session(GL_OP_BATCH));
  assert_string_equal(gl_op_name(GL_OP_BATCH), "BATCH");
  size_t pos = 0, len, n = 0;
  const uint8_t *m;
  while (gl_batch_next(out.u.batch.ops, out.u.batch.ops_len, &pos, &m, &len)) {
    static gl_request q;
    assert_status(gl_request_decode(m, len, len, &q, NULL, NULL, 0), GPULEASE_OK);
    assert_int_equal(q.op, ops[n].op);
    assert_int_equal(gl_request_session(&q)->seq, 5 + n);
    n++;
  }
  assert_int_equal(n, 3);
  check_all_prefixes(b.data, b.len, DEC_REQ);
  gl_buf_free(&b);
  gl_buf_free(&list);

  /* Unordered: every op seq 0. */
  ops[0] = memset_op(0), ops[1] = sync_op_req(0);
  assert_status(batch_encode(0, ops, 2, &b, &list), GPULEASE_OK);
  gl_buf_free(&b), gl_buf_free(&list);

  /* Refused, by the encoder (INVALID_ARGUMENT) and, from patched bytes,
   * the decoder, naming the op. */
  struct {
    int n;
    uint64_t seq;
    gl_request a, b;
    const char *want;
  } bad[] = {
      {2, 5, memset_op(5), memset_op(7), "op 1: seq 7, but the batch gives it seq 6"},
      {2, 0, memset_op(0), memset_op(1), "op 1: seq 1, but the batch gives it seq 0"},
      {1, 5, memset_op(6), memset_op(0), "op 0: seq 6, but the batch gives it seq 5"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gl_request two[2] = {bad[i].a, bad[i].b};
    assert_status(batch_encode(bad[i].seq, two, bad[i].n, &b, &list), GPULEASE_INVALID_ARGUMENT);
    gl_request q = {.op = GL_OP_BATCH};
    q.u.batch.s = batch_ref(bad[i].seq);
    q.u.batch.count = (uint16_t)bad[i].n;
    q.u.batch.ops = list.data;
    q.u.batch.ops_len = list.len;
    assert_status(gl_request_validate(&q, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
    if (!strstr(err, bad[i].want)) fail_msg("'%s' lacks '%s'", err, bad[i].want);
    gl_buf_free(&b), gl_buf_free(&list);
  }
  gl_request other = memset_op(6);
  other.u.memset.s.session_id = 10;
  ops[0] = memset_op(5), ops[1] = other;
  assert_status(batch_encode(5, ops, 2, &b, &list), GPULEASE_INVALID_ARGUMENT);
  gl_buf_free(&b), gl_buf_free(&list);
  other = memset_op(6);
  other.u.memset.s.auth.secret[3] ^= 1;
  ops[1] = other;
  assert_status(batch_encode(5, ops, 2, &b, &list), GPULEASE_INVALID_ARGUMENT);
  gl_buf_free(&b), gl_buf_free(&list);
  /* Ops a batch cannot hold, and a count out of range. */
  gl_request open = {.op = GL_OP_SESSION_OPEN};
  gl_buf_init(&list);
  assert_status(gl_batch_add(&list, &open), GPULEASE_INVALID_ARGUMENT);
  gl_request inner = {.op = GL_OP_BATCH};
  assert_status(gl_batch_add(&list, &inner), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(list.len, 0);
  gl_buf_free(&list);
  assert_status(batch_encode(5, ops, 0, &b, &list), GPULEASE_INVALID_ARGUMENT);
  gl_buf_free(&b), gl_buf_free(&list);
  /* MEM_READs of more than 16 MiB in all. */
  gl_request reads[2];
  for (int i = 0; i < 2; i++) {
    reads[i] = (gl_request){.op = GL_OP_MEM_READ};
    reads[i].u.mem_read.s = batch_ref(5 + (uint64_t)i);
    reads[i].u.mem_read.buffer = 1;
    reads[i].u.mem_read.size_bytes = 8u << 20;
  }
  assert_status(batch_encode(5, reads, 2, &b, &list), GPULEASE_OK);
  gl_buf_free(&b), gl_buf_free(&list);
  reads[1].u.mem_read.size_bytes++;
  assert_status(batch_encode(5, reads, 2, &b, &list), GPULEASE_INVALID_ARGUMENT);
  gl_buf_free(&b), gl_buf_free(&list);

  /* The decoder on patched bytes: a length running past the body, an op
   * inside that does not decode, and a count that disagrees. */
  ops[0] = memset_op(5), ops[1] = memset_op(6);
  assert_status(batch_encode(5, ops, 2, &b, &list), GPULEASE_OK);
  uint8_t *raw = malloc(b.len);
  memcpy(raw, b.data, b.len);
  raw[12 + 66] = 0x7F; /* first length: huge */
  assert_status(gl_request_decode(raw, b.len, MAX_BODY, &out, NULL, err, sizeof err),
                GPULEASE_MALFORMED);
  assert_non_null(strstr(err, "BATCH: truncated in op[0].message"));
  memcpy(raw, b.data, b.len);
  raw[12 + 66 + 4] = 0x00; /* the first op's magic */
  assert_status(gl_request_decode(raw, b.len, MAX_BODY, &out, NULL, err, sizeof err),
                GPULEASE_MALFORMED);
  assert_non_null(strstr(err, "BATCH: op 0: "));
  memcpy(raw, b.data, b.len);
  raw[12 + 65] = 1; /* count 1 but two ops */
  assert_status(gl_request_decode(raw, b.len, MAX_BODY, &out, NULL, err, sizeof err),
                GPULEASE_UNSUPPORTED);
  assert_non_null(strstr(err, "BATCH: 109 bytes after the last field this daemon knows (ops)"));
  free(raw);
  gl_buf_free(&b), gl_buf_free(&list);

  /* The result: the replies, each a whole response message. */
  static gl_response resp, rout;
  gl_buf replies, one;
  gl_buf_init(&replies);
  gl_response ok = {.op = GL_OP_MEMSET, .status = GPULEASE_OK, .msg = ""};
  gl_buf_init(&one);
  assert_status(gl_response_encode(&ok, &one), GPULEASE_OK);
  gl_batch_append(&replies, one.data, one.len);
  gl_buf_free(&one);
  gl_buf_init(&one);
  assert_status(gl_response_encode_error(GL_OP_SYNC, GPULEASE_NOT_FOUND, &one, "gone"),
                GPULEASE_OK);
  gl_batch_append(&replies, one.data, one.len);
  gl_buf_free(&one);
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_BATCH;
  resp.u.batch.count = 2;
  resp.u.batch.replies = replies.data;
  resp.u.batch.replies_len = replies.len;
  resp_roundtrip(&resp, &rout, 12 + 2 + 2 + replies.len);
  assert_int_equal(rout.u.batch.count, 2);
  assert_int_equal(rout.u.batch.replies_len, replies.len);
  assert_memory_equal(rout.u.batch.replies, replies.data, replies.len);
  resp.u.batch.count = 3; /* more replies than there are */
  assert_resp_refused(&resp);
  resp.u.batch.count = 0;
  assert_resp_refused(&resp);
  gl_buf_free(&replies);
}

/* ========================================================================
 * The same-host ops: NODE_INFO, SHM_ATTACH, SHM_DETACH, MEM_*_SHM
 * ====================================================================== */

/* NET_INFO: an empty request; a result of stripe ports, round trip and
 * limits (count up to 16, no port 0). */
static void test_net_info(void **state) {
  (void)state;
  gl_request q = {.op = GL_OP_NET_INFO};
  gl_buf b;
  gl_buf_init(&b);
  assert_int_equal(gl_request_encode(&q, &b), GPULEASE_OK);
  assert_int_equal(b.len, GL_WIRE_HEADER_SIZE);
  gl_request back;
  assert_int_equal(gl_request_decode(b.data, b.len, 1024, &back, NULL, NULL, 0), GPULEASE_OK);
  assert_int_equal(back.op, GL_OP_NET_INFO);
  gl_buf_free(&b);
  gl_response r = {.op = GL_OP_NET_INFO, .status = GPULEASE_OK, .msg = ""};
  r.u.net_info.stripe_count = 3;
  r.u.net_info.stripe_ports[0] = 5702;
  r.u.net_info.stripe_ports[1] = 5703;
  r.u.net_info.stripe_ports[2] = 65535;
  gl_buf_init(&b);
  assert_int_equal(gl_response_encode(&r, &b), GPULEASE_OK);
  assert_int_equal(b.len, GL_WIRE_HEADER_SIZE + 2 + 1 + 6);
  const uint8_t body[] = {0, 0, 3, 0x16, 0x46, 0x16, 0x47, 0xFF, 0xFF};
  assert_memory_equal(b.data + GL_WIRE_HEADER_SIZE, body, sizeof body);
  gl_response rb;
  assert_int_equal(gl_response_decode(b.data, b.len, 1024, &rb, NULL, 0), GPULEASE_OK);
  assert_int_equal(rb.u.net_info.stripe_count, 3);
  assert_int_equal(rb.u.net_info.stripe_ports[2], 65535);
  /* A port 0 is refused by the decoder, 17 ports by the encoder. */
  b.data[GL_WIRE_HEADER_SIZE + 5] = 0;
  b.data[GL_WIRE_HEADER_SIZE + 6] = 0;
  char err[256];
  assert_int_equal(gl_response_decode(b.data, b.len, 1024, &rb, err, sizeof err),
                   GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "stripe_port 0"));
  gl_buf_free(&b);
  r.u.net_info.stripe_count = GL_WIRE_MAX_STRIPES + 1;
  gl_buf_init(&b);
  assert_int_equal(gl_response_encode(&r, &b), GPULEASE_INVALID_ARGUMENT);
  gl_buf_free(&b);
  assert_string_equal(gl_op_name(GL_OP_NET_INFO), "NET_INFO");
}

/* POOL_INFO: an empty request; a result per GPU (index, size, ready,
 * starting), round trip and limits. */
static void test_pool_info(void **state) {
  (void)state;
  gl_response r = {.op = GL_OP_POOL_INFO, .status = GPULEASE_OK, .msg = ""};
  r.u.pool_info.gpu_count = 2;
  r.u.pool_info.gpus[0] = (gl_pool_gpu){.index = 0, .target = 2, .ready = 1, .starting = 1};
  r.u.pool_info.gpus[1] = (gl_pool_gpu){.index = 1, .target = 0, .ready = 0, .starting = 0};
  gl_buf b;
  gl_buf_init(&b);
  assert_int_equal(gl_response_encode(&r, &b), GPULEASE_OK);
  assert_int_equal(b.len, GL_WIRE_HEADER_SIZE + 2 + 2 + 2 * 10);
  const uint8_t first[] = {0, 0, 0, 2, 0, 0, 0, 0, 0, 2, 0, 1, 0, 1};
  assert_memory_equal(b.data + GL_WIRE_HEADER_SIZE, first, sizeof first);
  gl_response back;
  assert_int_equal(gl_response_decode(b.data, b.len, 1024, &back, NULL, 0), GPULEASE_OK);
  assert_int_equal(back.u.pool_info.gpu_count, 2);
  assert_int_equal(back.u.pool_info.gpus[0].ready, 1);
  /* More ready and starting than the pool holds: refused both ways. */
  b.data[GL_WIRE_HEADER_SIZE + 11] = 5; /* GPU 0 ready = 5 */
  char err[256];
  assert_int_equal(gl_response_decode(b.data, b.len, 1024, &back, err, sizeof err),
                   GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "exceed the pool's size"));
  gl_buf_free(&b);
  r.u.pool_info.gpus[0].ready = 3;
  gl_buf_init(&b);
  assert_int_equal(gl_response_encode(&r, &b), GPULEASE_INVALID_ARGUMENT);
  gl_buf_free(&b);
  assert_string_equal(gl_op_name(GL_OP_POOL_INFO), "POOL_INFO");
}

/* gl_response_encode_head: the head and then the data are, byte for byte,
 * gl_response_encode's MEM_READ response; other responses are refused. */
static void test_response_head(void **state) {
  (void)state;
  uint8_t data[300];
  for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 13 + 1);
  gl_response r = {.op = GL_OP_MEM_READ, .status = GPULEASE_OK, .msg = ""};
  r.u.mem_read.data = data;
  r.u.mem_read.data_len = sizeof data;
  gl_buf whole, head;
  gl_buf_init(&whole);
  gl_buf_init(&head);
  assert_int_equal(gl_response_encode(&r, &whole), GPULEASE_OK);
  assert_int_equal(gl_response_encode_head(&r, &head), GPULEASE_OK);
  assert_int_equal(head.len, GL_WIRE_HEADER_SIZE + 2 + 4);
  assert_int_equal(head.len + sizeof data, whole.len);
  assert_memory_equal(head.data, whole.data, head.len);
  assert_memory_equal(whole.data + head.len, data, sizeof data);
  gl_response e = {.op = GL_OP_MEM_READ, .status = GPULEASE_READ_FAILED, .msg = "x", .msg_len = 1};
  gl_response w = {.op = GL_OP_MEM_WRITE, .status = GPULEASE_OK, .msg = ""};
  assert_int_equal(gl_response_encode_head(&e, &head), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(gl_response_encode_head(&w, &head), GPULEASE_INVALID_ARGUMENT);
  gl_buf_free(&whole);
  gl_buf_free(&head);
}

static void test_shm_ops(void **state) {
  (void)state;
  static gl_request q, out;
  char err[256];
  /* SHM_ATTACH: lease_auth, u64 size_bytes (56 bytes of body). */
  memset(&q, 0, sizeof q);
  q.op = GL_OP_SHM_ATTACH;
  q.u.shm_attach.auth = batch_ref(0).auth;
  q.u.shm_attach.size_bytes = 1ull << 30;
  req_roundtrip(&q, &out, 12 + 56);
  assert_int_equal(out.u.shm_attach.size_bytes, 1ull << 30);
  assert_int_equal(out.u.shm_attach.auth.lease_id, 42);
  assert_false(gl_op_is_session(GL_OP_SHM_ATTACH));
  q.u.shm_attach.size_bytes = 0;
  assert_status(gl_request_validate(&q, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
  q.u.shm_attach.size_bytes = GL_WIRE_MAX_SEGMENT + 1;
  assert_status(gl_request_validate(&q, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "size_bytes"));
  /* SHM_DETACH: lease_auth, u64 segment. */
  memset(&q, 0, sizeof q);
  q.op = GL_OP_SHM_DETACH;
  q.u.shm_detach.auth = batch_ref(0).auth;
  q.u.shm_detach.segment = 0x5E00000000000007ull;
  req_roundtrip(&q, &out, 12 + 56);
  assert_int_equal(out.u.shm_detach.segment, 0x5E00000000000007ull);
  /* MEM_WRITE_SHM / MEM_READ_SHM: session_ref and five u64 (104 bytes). */
  uint16_t ops[] = {GL_OP_MEM_WRITE_SHM, GL_OP_MEM_READ_SHM};
  for (int i = 0; i < 2; i++) {
    memset(&q, 0, sizeof q);
    q.op = ops[i];
    q.u.mem_shm.s = batch_ref(3);
    q.u.mem_shm.buffer = 1, q.u.mem_shm.offset = 2, q.u.mem_shm.segment = 3;
    q.u.mem_shm.segment_offset = 4, q.u.mem_shm.size_bytes = 5;
    req_roundtrip(&q, &out, 12 + 104);
    assert_true(gl_op_is_session(ops[i]));
    assert_ptr_equal(gl_request_session(&out), &out.u.mem_shm.s);
    assert_int_equal(out.u.mem_shm.segment_offset, 4);
    assert_int_equal(out.u.mem_shm.size_bytes, 5);
    q.u.mem_shm.size_bytes = GL_WIRE_MAX_SHM_COPY + 1;
    assert_status(gl_request_validate(&q, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
  }
  /* In a BATCH, like any session op. */
  gl_request two[2];
  two[0] = q, two[1] = q;
  two[0].u.mem_shm.size_bytes = two[1].u.mem_shm.size_bytes = 64;
  two[1].u.mem_shm.s.seq = 4;
  gl_buf b, list;
  assert_status(batch_encode(3, two, 2, &b, &list), GPULEASE_OK);
  gl_buf_free(&b), gl_buf_free(&list);

  /* NODE_INFO: empty request; str16 path and 16 bytes of boot id. */
  memset(&q, 0, sizeof q);
  q.op = GL_OP_NODE_INFO;
  req_roundtrip(&q, &out, 12);
  static gl_response r, rout;
  memset(&r, 0, sizeof r);
  r.op = GL_OP_NODE_INFO;
  snprintf(r.u.node_info.local_socket, sizeof r.u.node_info.local_socket,
           "/var/lib/gpuleased/gpuleased.sock");
  for (int i = 0; i < 16; i++) r.u.node_info.boot_id[i] = (uint8_t)(0x10 + i);
  resp_roundtrip(&r, &rout, 12 + 2 + 2 + 33 + 16);
  assert_string_equal(rout.u.node_info.local_socket, "/var/lib/gpuleased/gpuleased.sock");
  assert_memory_equal(rout.u.node_info.boot_id, r.u.node_info.boot_id, 16);
  r.u.node_info.local_socket[0] = 0; /* no socket */
  resp_roundtrip(&r, &rout, 12 + 2 + 2 + 16);
  assert_string_equal(rout.u.node_info.local_socket, "");
  /* SHM_ATTACH's result: the segment id, never 0. */
  memset(&r, 0, sizeof r);
  r.op = GL_OP_SHM_ATTACH;
  r.u.handle = 9;
  resp_roundtrip(&r, &rout, 12 + 2 + 8);
  assert_int_equal(rout.u.handle, 9);
  r.u.handle = 0;
  assert_resp_refused(&r);
}

/* ========================================================================
 * Lease classes and context limits (LEASE_ALLOC, lease_info), the shared
 * worker's ops (WORKER_INIT's new fields, WORKER_RELEASE), and
 * gl_request_peek_lease
 * ====================================================================== */

/* LEASE_ALLOC's 29-byte body (docs/protocol.md, LEASE_ALLOC): class shared
 * and both limits set, byte for byte; every class 0..3 encodes, 4 and up
 * are refused by the encoder. */
static void test_lease_alloc_class(void **state) {
  (void)state;
  static gl_request req, out;
  static const uint8_t want[] = {
      0x47, 0x4C, 0x01, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1D, /* header */
      0x00, 0x00, 0x00, 0x02,                         /* gpu_index 2 */
      0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, /* vram_bytes 64 MiB */
      0x00, 0x00, 0x02, 0x58,                         /* ttl_s 600 */
      0x01,                                           /* lease_class shared */
      0x00, 0x10, 0x00, 0x00,                         /* printf_fifo_bytes 1 MiB */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, /* malloc_heap_bytes 8 MiB */
  };
  memset(&req, 0, sizeof req);
  req.op = GL_OP_LEASE_ALLOC;
  req.u.alloc.gpu_index = 2;
  req.u.alloc.vram_bytes = 64ull << 20;
  req.u.alloc.ttl_s = 600;
  req.u.alloc.lease_class = GPULEASE_CLASS_SHARED;
  req.u.alloc.printf_fifo_bytes = 1u << 20;
  req.u.alloc.malloc_heap_bytes = 8ull << 20;
  req_exact(&req, want, sizeof want);
  req_roundtrip(&req, &out, sizeof want);
  assert_int_equal(out.u.alloc.gpu_index, 2);
  assert_int_equal(out.u.alloc.vram_bytes, 64ull << 20);
  assert_int_equal(out.u.alloc.ttl_s, 600);
  assert_int_equal(out.u.alloc.lease_class, GPULEASE_CLASS_SHARED);
  assert_int_equal(out.u.alloc.printf_fifo_bytes, 1u << 20);
  assert_int_equal(out.u.alloc.malloc_heap_bytes, 8ull << 20);

  /* Every class is the codec's to carry (the daemon decides what it
   * grants); the default limits are 0 on the wire. */
  for (uint8_t c = GPULEASE_CLASS_ISOLATED; c <= GPULEASE_CLASS_PARTITION; c++) {
    req.u.alloc.lease_class = c;
    req.u.alloc.printf_fifo_bytes = 0;
    req.u.alloc.malloc_heap_bytes = 0;
    req_roundtrip(&req, &out, 12 + 29);
    assert_int_equal(out.u.alloc.lease_class, c);
    assert_int_equal(out.u.alloc.printf_fifo_bytes, 0);
    assert_int_equal(out.u.alloc.malloc_heap_bytes, 0);
  }

  /* A class above partition is not a class. */
  char err[256];
  req.u.alloc.lease_class = 4;
  assert_status(gl_request_validate(&req, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
  assert_string_equal(err, "LEASE_ALLOC: lease_class 4 is not a class (0 isolated, 1 shared, "
                           "2 device, 3 partition)");
  assert_req_refused(&req, "lease_class 4 is not a class");
  req.u.alloc.lease_class = 255;
  assert_req_refused(&req, "lease_class 255 is not a class (0 isolated, 1 shared, 2 device, "
                           "3 partition)");
}

/* lease_info's 81st byte is the class granted (offset 80 of the result). */
static void test_lease_info_class(void **state) {
  (void)state;
  static gl_response resp, out;
  for (uint8_t c = GPULEASE_CLASS_ISOLATED; c <= GPULEASE_CLASS_PARTITION; c++) {
    memset(&resp, 0, sizeof resp);
    resp.op = GL_OP_LEASE_QUERY;
    resp.u.lease.lease_id = 42;
    resp.u.lease.gpu_index = 1;
    resp.u.lease.vram_bytes = 256ull << 20;
    resp.u.lease.ttl_s = 300;
    resp.u.lease.remaining_ms = 1000;
    resp.u.lease.submits = 5;
    resp.u.lease.lease_class = c;
    gl_buf b;
    gl_buf_init(&b);
    assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
    assert_int_equal(b.len, 12 + 2 + 81);
    assert_int_equal(b.data[12 + 2 + 80], c);
    /* The byte before it is still the last of submits. */
    assert_int_equal(b.data[12 + 2 + 79], 5);
    gl_buf_free(&b);
    resp_roundtrip(&resp, &out, 12 + 2 + 81);
    assert_int_equal(out.u.lease.lease_class, c);
    assert_int_equal(out.u.lease.submits, 5);
    assert_int_equal(out.u.lease.remaining_ms, 1000);
  }
}

/* WORKER_INIT's 33-byte body (docs/protocol.md section 7): the lease, the
 * shared flag and the context's limits, byte for byte. */
static void test_worker_init_fields(void **state) {
  (void)state;
  static gl_request req, out;
  static const uint8_t want[] = {
      0x47, 0x4C, 0x01, 0x00, 0x7F, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x27, /* header */
      0x00, 0x00, 0x00, 0x01,                         /* cuda_ordinal 1 */
      0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, /* vram_bytes 32 MiB */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2A, /* lease_id 42 */
      0x01,                                           /* flags: shared */
      0x00, 0x01, 0x00, 0x00,                         /* printf_fifo_bytes 64 KiB */
      0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, /* malloc_heap_bytes 1 MiB */
      0x05, 'G', 'P', 'U', '-', '7',                  /* gpu_uuid "GPU-7" */
  };
  memset(&req, 0, sizeof req);
  req.op = GL_OP_WORKER_INIT;
  req.u.worker_init.cuda_ordinal = 1;
  req.u.worker_init.vram_bytes = 32ull << 20;
  req.u.worker_init.lease_id = 42;
  req.u.worker_init.flags = GL_WORKER_INIT_SHARED;
  req.u.worker_init.printf_fifo_bytes = 64u << 10;
  req.u.worker_init.malloc_heap_bytes = 1ull << 20;
  snprintf(req.u.worker_init.gpu_uuid, sizeof req.u.worker_init.gpu_uuid, "GPU-7");
  req_exact(&req, want, sizeof want);
  req_roundtrip(&req, &out, sizeof want);
  assert_int_equal(out.u.worker_init.cuda_ordinal, 1);
  assert_int_equal(out.u.worker_init.vram_bytes, 32ull << 20);
  assert_int_equal(out.u.worker_init.lease_id, 42);
  assert_int_equal(out.u.worker_init.flags, GL_WORKER_INIT_SHARED);
  assert_int_equal(out.u.worker_init.printf_fifo_bytes, 64u << 10);
  assert_int_equal(out.u.worker_init.malloc_heap_bytes, 1ull << 20);
  assert_int_equal(GL_WORKER_INIT_SHARED, 0x01);

  /* The codec leaves the other flag bits to the worker. */
  req.u.worker_init.flags = 0xFF;
  req_roundtrip(&req, &out, sizeof want);
  assert_int_equal(out.u.worker_init.flags, 0xFF);

  /* The old 12-byte body is now cut short in lease_id. */
  char err[256];
  uint8_t old[12 + 12];
  memcpy(old, want, sizeof old);
  old[11] = 12;
  assert_status(gl_request_decode(old, sizeof old, MAX_BODY, &out, NULL, err, sizeof err),
                GPULEASE_MALFORMED);
  assert_contains(err, "WORKER_INIT: truncated in lease_id");
}

/* WORKER_RELEASE (0x7F07): u64 lease_id, 8 bytes of body; an error reply
 * carries only its message, like any op's. */
static void test_worker_release(void **state) {
  (void)state;
  static gl_request req, out;
  static gl_response resp, rout;
  static const uint8_t want[] = {
      0x47, 0x4C, 0x01, 0x00, 0x7F, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, /* header */
      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* lease_id */
  };
  assert_int_equal(GL_OP_WORKER_RELEASE, 0x7F07);
  assert_string_equal(gl_op_name(GL_OP_WORKER_RELEASE), "WORKER_RELEASE");
  assert_false(gl_op_is_session(GL_OP_WORKER_RELEASE));
  memset(&req, 0, sizeof req);
  req.op = GL_OP_WORKER_RELEASE;
  req.u.worker_init.lease_id = 0x0102030405060708ull;
  req_exact(&req, want, sizeof want);
  req_roundtrip(&req, &out, sizeof want);
  assert_int_equal(out.u.worker_init.lease_id, 0x0102030405060708ull);

  /* Nothing may follow the lease id. */
  uint8_t longer[sizeof want + 1];
  memcpy(longer, want, sizeof want);
  longer[sizeof want] = 0;
  longer[11] = 9;
  char err[256];
  /* an internal op: MALFORMED (daemon and worker are of one release) */
  assert_status(gl_request_decode(longer, sizeof longer, MAX_BODY, &out, NULL, err, sizeof err),
                GPULEASE_MALFORMED);
  assert_contains(err, "WORKER_RELEASE: 1 trailing bytes");

  /* A worker that holds no such lease answers NOT_FOUND. */
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_WORKER_RELEASE;
  resp.status = GPULEASE_NOT_FOUND;
  resp.msg = "lease 72623859790382856 is not served by this worker";
  resp.msg_len = (uint16_t)strlen(resp.msg);
  resp_roundtrip(&resp, &rout, 12 + 2 + strlen(resp.msg));
}

/* gl_request_peek_lease: the lease_id in the first 8 body bytes of the ops
 * whose body starts with lease_auth, and nothing for the others. */
static void test_request_peek_lease(void **state) {
  (void)state;
  static gl_request req;
  gl_buf b;
  uint64_t id;

  valid_submit(&req);
  req.u.submit.auth.lease_id = 0xFEDCBA9876543210ull;
  gl_buf_init(&b);
  assert_status(gl_request_encode(&req, &b), GPULEASE_OK);
  id = 0;
  assert_true(gl_request_peek_lease(b.data, b.len, &id));
  assert_int_equal(id, 0xFEDCBA9876543210ull);
  /* Too short to hold a lease id: the header alone, or 7 bytes of it. */
  id = 7;
  assert_false(gl_request_peek_lease(b.data, GL_WIRE_HEADER_SIZE, &id));
  assert_false(gl_request_peek_lease(b.data, GL_WIRE_HEADER_SIZE + 7, &id));
  assert_int_equal(id, 7);
  gl_buf_free(&b);

  /* A session op: its session_ref starts with lease_auth. */
  gl_request ms = memset_op(5);
  gl_buf_init(&b);
  assert_status(gl_request_encode(&ms, &b), GPULEASE_OK);
  id = 0;
  assert_true(gl_request_peek_lease(b.data, b.len, &id));
  assert_int_equal(id, 42);
  gl_buf_free(&b);
  memset(&req, 0, sizeof req);
  req.op = GL_OP_SESSION_OPEN;
  req.u.auth.lease_id = 0x1234;
  gl_buf_init(&b);
  assert_status(gl_request_encode(&req, &b), GPULEASE_OK);
  assert_true(gl_request_peek_lease(b.data, b.len, &id));
  assert_int_equal(id, 0x1234);
  gl_buf_free(&b);
  /* SHM_ATTACH too. */
  memset(&req, 0, sizeof req);
  req.op = GL_OP_SHM_ATTACH;
  req.u.shm_attach.auth.lease_id = 99;
  req.u.shm_attach.size_bytes = 4096;
  gl_buf_init(&b);
  assert_status(gl_request_encode(&req, &b), GPULEASE_OK);
  assert_true(gl_request_peek_lease(b.data, b.len, &id));
  assert_int_equal(id, 99);
  gl_buf_free(&b);

  /* LEASE_ALLOC has no lease yet; LEASE_QUERY and WORKER_RELEASE are not
   * routed by it. */
  id = 7;
  assert_false(gl_request_peek_lease(DOC_ALLOC_REQ, sizeof DOC_ALLOC_REQ, &id));
  const uint16_t others[] = {GL_OP_LEASE_QUERY, GL_OP_WORKER_RELEASE};
  for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
    memset(&req, 0, sizeof req);
    req.op = others[i];
    if (others[i] == GL_OP_WORKER_RELEASE)
      req.u.worker_init.lease_id = 5;
    else
      req.u.auth.lease_id = 5;
    gl_buf_init(&b);
    assert_status(gl_request_encode(&req, &b), GPULEASE_OK);
    assert_false(gl_request_peek_lease(b.data, b.len, &id));
    gl_buf_free(&b);
  }
  /* A 12-byte message: a header with no body. */
  static const gl_request inv = {.op = GL_OP_GET_INVENTORY};
  gl_buf_init(&b);
  assert_status(gl_request_encode(&inv, &b), GPULEASE_OK);
  assert_int_equal(b.len, GL_WIRE_HEADER_SIZE);
  assert_false(gl_request_peek_lease(b.data, b.len, &id));
  gl_buf_free(&b);
  assert_false(gl_request_peek_lease(NULL, 0, &id));
  assert_int_equal(id, 7);
}

/* ========================================================================
 * Tenants: AUTHENTICATE, LEASE_DELEGATE, LEASE_REVOKE, LEASE_RENEW's
 * flags, and the rights' names
 * ====================================================================== */

/* lease_auth as the layout gives it: u64 lease_id, the 40 bytes of SECRET. */
static void fb_auth(frame *f, uint64_t lease_id) {
  fb_be(f, lease_id, 8);
  for (int i = 0; i < SECRET_LEN; i++) fb_be(f, SECRET[i], 1);
}

/* Decodes the k-byte request p and checks the status and the message. */
static void assert_req_decode(const uint8_t *p, size_t k, gpulease_status want,
                              const char *needle) {
  static gl_request out;
  char err[512];
  uint8_t *msg = malloc(k); /* exact size for ASan */
  assert_non_null(msg);
  memcpy(msg, p, k);
  gpulease_status st = gl_request_decode(msg, k, MAX_BODY, &out, NULL, err, sizeof err);
  free(msg);
  if (st != want)
    fail_msg("status %s, expected %s (\"%s\")", gpulease_status_name(st),
             gpulease_status_name(want), err);
  if (needle) assert_contains(err, needle);
}

/* AUTHENTICATE (0x0005): request str8 bearer_token (1..255 bytes), OK
 * result str8 tenant. */
static void test_authenticate(void **state) {
  (void)state;
  static gl_request req, out;
  static gl_response resp, rout;
  static const uint8_t want_req[] = {
      0x47, 0x4C, 0x01, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0B, /* header, 11 */
      0x0A, 't', 'o', 'k', '-', '1', '2', '3', '4', '5', '6',                 /* str8 token */
  };
  memset(&req, 0, sizeof req);
  req.op = GL_OP_AUTHENTICATE;
  strcpy(req.u.authenticate.token, "tok-123456");
  req_exact(&req, want_req, sizeof want_req);
  req_roundtrip(&req, &out, sizeof want_req);
  assert_string_equal(out.u.authenticate.token, "tok-123456");
  assert_null(gl_request_session(&out));
  uint64_t id = 7;
  assert_false(gl_request_peek_lease(want_req, sizeof want_req, &id));

  /* The longest token, 255 bytes. */
  memset(req.u.authenticate.token, 'k', 255);
  req.u.authenticate.token[255] = '\0';
  req_roundtrip(&req, &out, 12 + 1 + 255);
  assert_int_equal(strlen(out.u.authenticate.token), 255);

  /* An empty token: refused by the encoder and by the decoder. */
  req.u.authenticate.token[0] = '\0';
  assert_req_refused(&req, "AUTHENTICATE: bearer_token is empty");
  fb_header(&g_frame, GL_WIRE_KIND_REQUEST, GL_OP_AUTHENTICATE, 0);
  fb_str8(&g_frame, 0, 'k', false);
  fb_seal(&g_frame);
  assert_req_decode(g_frame.b, g_frame.n, GPULEASE_INVALID_ARGUMENT,
                    "AUTHENTICATE: bearer_token is empty");
  /* A NUL inside, a length past the body, a byte after it. */
  fb_header(&g_frame, GL_WIRE_KIND_REQUEST, GL_OP_AUTHENTICATE, 0);
  fb_str8(&g_frame, 8, 'k', true);
  fb_seal(&g_frame);
  assert_req_decode(g_frame.b, g_frame.n, GPULEASE_INVALID_ARGUMENT,
                    "AUTHENTICATE: bearer_token contains a NUL byte");
  fb_header(&g_frame, GL_WIRE_KIND_REQUEST, GL_OP_AUTHENTICATE, 0);
  fb_be(&g_frame, 9, 1);
  fb_fill(&g_frame, 'k', 8);
  fb_seal(&g_frame);
  assert_req_decode(g_frame.b, g_frame.n, GPULEASE_MALFORMED,
                    "AUTHENTICATE: truncated in bearer_token: needs 9 bytes at body offset 1, 8 left");
  fb_header(&g_frame, GL_WIRE_KIND_REQUEST, GL_OP_AUTHENTICATE, 0);
  fb_str8(&g_frame, 3, 'k', false);
  fb_be(&g_frame, 0, 1);
  fb_seal(&g_frame);
  assert_req_decode(g_frame.b, g_frame.n, GPULEASE_UNSUPPORTED,
                    "AUTHENTICATE: 1 bytes after the last field this daemon knows (bearer_token)");
  /* No body at all. */
  fb_header(&g_frame, GL_WIRE_KIND_REQUEST, GL_OP_AUTHENTICATE, 0);
  fb_seal(&g_frame);
  assert_req_decode(g_frame.b, g_frame.n, GPULEASE_MALFORMED,
                    "AUTHENTICATE: truncated in bearer_token: needs 1 bytes at body offset 0");

  /* The result: the tenant the connection now is. */
  static const uint8_t want_resp[] = {
      0x47, 0x4C, 0x01, 0x01, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, /* header, 9 */
      0x00, 0x00,                                                             /* msg_len */
      0x06, 't', 'e', 'a', 'm', '-', 'a',                                     /* str8 tenant */
  };
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_AUTHENTICATE;
  strcpy(resp.u.tenant, "team-a");
  gl_buf b;
  gl_buf_init(&b);
  assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
  assert_int_equal(b.len, sizeof want_resp);
  assert_memory_equal(b.data, want_resp, sizeof want_resp);
  gl_buf_free(&b);
  resp_roundtrip(&resp, &rout, sizeof want_resp);
  assert_string_equal(rout.u.tenant, "team-a");
  memset(resp.u.tenant, 'n', 255);
  resp.u.tenant[255] = '\0';
  resp_roundtrip(&resp, &rout, 12 + 2 + 1 + 255);
  assert_int_equal(strlen(rout.u.tenant), 255);
  memset(resp.u.tenant, 'n', sizeof resp.u.tenant); /* not terminated */
  assert_resp_refused(&resp);
  /* Its errors carry only the message, as every op's. */
  gl_buf_init(&b);
  assert_status(gl_response_encode_error(GL_OP_AUTHENTICATE, GPULEASE_UNAUTHORIZED, &b,
                                         "unknown bearer token"),
                GPULEASE_OK);
  assert_int_equal(b.len, 12 + 2 + 20);
  assert_status(gl_response_decode(b.data, b.len, MAX_BODY, &rout, NULL, 0), GPULEASE_OK);
  assert_int_equal(rout.status, GPULEASE_UNAUTHORIZED);
  gl_buf_free(&b);
}

/* LEASE_DELEGATE (0x0107): request lease_auth, u32 rights (1..0xFF), u32
 * ttl_s, str8 audience; OK result the derived secret, 40 bytes. */
static void test_lease_delegate(void **state) {
  (void)state;
  static gl_request req, out;
  static gl_response resp, rout;
  memset(&req, 0, sizeof req);
  req.op = GL_OP_LEASE_DELEGATE;
  req.u.delegate.auth.lease_id = 42;
  memcpy(req.u.delegate.auth.secret, SECRET, SECRET_LEN);
  req.u.delegate.rights = GPULEASE_RIGHT_SUBMIT | GPULEASE_RIGHT_READ;
  req.u.delegate.ttl_s = 600;
  strcpy(req.u.delegate.audience, "team-b");
  /* The layout: lease_auth at 0, rights at 48, ttl_s at 52, audience at 56. */
  fb_header(&g_frame, GL_WIRE_KIND_REQUEST, GL_OP_LEASE_DELEGATE, 0);
  fb_auth(&g_frame, 42);
  fb_be(&g_frame, 0x28, 4);
  fb_be(&g_frame, 600, 4);
  fb_be(&g_frame, 6, 1);
  for (const char *p = "team-b"; *p; p++) fb_be(&g_frame, (uint8_t)*p, 1);
  fb_seal(&g_frame);
  assert_int_equal(g_frame.n, 12 + 63);
  req_exact(&req, g_frame.b, g_frame.n);
  assert_int_equal(g_frame.b[12 + 51], 0x28);
  assert_int_equal(g_frame.b[12 + 56], 6);
  req_roundtrip(&req, &out, 12 + 63);
  assert_int_equal(out.u.delegate.auth.lease_id, 42);
  assert_memory_equal(out.u.delegate.auth.secret, SECRET, SECRET_LEN);
  assert_int_equal(out.u.delegate.rights, 0x28);
  assert_int_equal(out.u.delegate.ttl_s, 600);
  assert_string_equal(out.u.delegate.audience, "team-b");
  assert_null(gl_request_session(&out));

  /* Every right, no TTL of its own, the lease's own tenant. */
  req.u.delegate.rights = GPULEASE_RIGHTS_ALL;
  req.u.delegate.ttl_s = 0;
  req.u.delegate.audience[0] = '\0';
  req_roundtrip(&req, &out, 12 + 57);
  assert_int_equal(out.u.delegate.rights, 0xFF);
  assert_int_equal(out.u.delegate.ttl_s, 0);
  assert_string_equal(out.u.delegate.audience, "");
  /* One right alone; the longest audience, 255 bytes. */
  req.u.delegate.rights = GPULEASE_RIGHT_DELEGATE;
  req.u.delegate.ttl_s = UINT32_MAX;
  memset(req.u.delegate.audience, 'a', 255);
  req.u.delegate.audience[255] = '\0';
  req_roundtrip(&req, &out, 12 + 57 + 255);
  assert_int_equal(strlen(out.u.delegate.audience), 255);
  assert_int_equal(out.u.delegate.ttl_s, UINT32_MAX);

  /* No right, or a bit above the eight rights: INVALID_ARGUMENT from the
   * encoder and the decoder. */
  req.u.delegate.audience[0] = '\0';
  req.u.delegate.rights = 0;
  assert_req_refused(&req, "LEASE_DELEGATE: rights 0x00000000: at least one right");
  req.u.delegate.rights = 0x100;
  assert_req_refused(&req, "LEASE_DELEGATE: rights 0x00000100");
  req.u.delegate.rights = 0x80000001u;
  assert_req_refused(&req, "only bits 0..7 are rights");
  const uint32_t bad_rights[] = {0, 0x100, 0x1FF, 0xFFFFFFFFu};
  for (size_t i = 0; i < sizeof bad_rights / sizeof bad_rights[0]; i++) {
    fb_header(&g_frame, GL_WIRE_KIND_REQUEST, GL_OP_LEASE_DELEGATE, 0);
    fb_auth(&g_frame, 42);
    fb_be(&g_frame, bad_rights[i], 4);
    fb_be(&g_frame, 0, 4);
    fb_be(&g_frame, 0, 1);
    fb_seal(&g_frame);
    assert_req_decode(g_frame.b, g_frame.n, GPULEASE_INVALID_ARGUMENT, "LEASE_DELEGATE: rights");
  }
  /* The 16-byte secret of protocol version 1's first draft is cut short. */
  fb_header(&g_frame, GL_WIRE_KIND_REQUEST, GL_OP_LEASE_DELEGATE, 0);
  fb_be(&g_frame, 42, 8);
  fb_fill(&g_frame, 0xAB, 16);
  fb_be(&g_frame, 0x28, 4);
  fb_be(&g_frame, 0, 4);
  fb_be(&g_frame, 0, 1);
  fb_seal(&g_frame);
  assert_req_decode(g_frame.b, g_frame.n, GPULEASE_MALFORMED,
                    "LEASE_DELEGATE: truncated in secret: needs 40 bytes at body offset 8, 25 left");
  /* An audience with a NUL. */
  fb_header(&g_frame, GL_WIRE_KIND_REQUEST, GL_OP_LEASE_DELEGATE, 0);
  fb_auth(&g_frame, 42);
  fb_be(&g_frame, 0x01, 4);
  fb_be(&g_frame, 0, 4);
  fb_str8(&g_frame, 6, 'a', true);
  fb_seal(&g_frame);
  assert_req_decode(g_frame.b, g_frame.n, GPULEASE_INVALID_ARGUMENT,
                    "LEASE_DELEGATE: audience contains a NUL byte");

  /* The result: 40 bytes, the derived secret. */
  uint8_t derived[SECRET_LEN];
  for (int i = 0; i < SECRET_LEN; i++) derived[i] = (uint8_t)(0xC0 + i);
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_LEASE_DELEGATE;
  memcpy(resp.u.secret, derived, SECRET_LEN);
  gl_buf b;
  gl_buf_init(&b);
  assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
  assert_int_equal(b.len, 12 + 2 + SECRET_LEN);
  assert_int_equal(b.data[11], 2 + SECRET_LEN);
  assert_memory_equal(b.data + 14, derived, SECRET_LEN);
  gl_buf_free(&b);
  resp_roundtrip(&resp, &rout, 12 + 2 + SECRET_LEN);
  assert_memory_equal(rout.u.secret, derived, SECRET_LEN);
  /* One byte more or less is malformed. */
  fb_header(&g_frame, GL_WIRE_KIND_RESPONSE, GL_OP_LEASE_DELEGATE, 0);
  fb_be(&g_frame, 0, 2);
  fb_fill(&g_frame, 0xC0, SECRET_LEN + 1);
  fb_seal(&g_frame);
  char err[256];
  assert_status(gl_response_decode(g_frame.b, g_frame.n, MAX_BODY, &rout, err, sizeof err),
                GPULEASE_MALFORMED);
  assert_contains(err, "LEASE_DELEGATE: 1 trailing bytes");
  g_frame.n -= 2;
  fb_seal(&g_frame);
  assert_status(gl_response_decode(g_frame.b, g_frame.n, MAX_BODY, &rout, err, sizeof err),
                GPULEASE_MALFORMED);
  assert_contains(err, "LEASE_DELEGATE: truncated in secret: needs 40 bytes at body offset 2, 39 left");
}

/* LEASE_REVOKE (0x0108): request u64 lease_id, str8 reason; OK result
 * empty. No lease_auth: it acts by the caller's identity. */
static void test_lease_revoke(void **state) {
  (void)state;
  static gl_request req, out;
  static gl_response resp, rout;
  static const uint8_t want[] = {
      0x47, 0x4C, 0x01, 0x00, 0x01, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, /* header, 20 */
      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,                         /* lease_id */
      0x0B, 'c', 'o', 'm', 'p', 'r', 'o', 'm', 'i', 's', 'e', 'd',             /* reason */
  };
  memset(&req, 0, sizeof req);
  req.op = GL_OP_LEASE_REVOKE;
  req.u.revoke.lease_id = 0x0102030405060708ull;
  strcpy(req.u.revoke.reason, "compromised");
  req_exact(&req, want, sizeof want);
  req_roundtrip(&req, &out, sizeof want);
  assert_true(out.u.revoke.lease_id == 0x0102030405060708ull);
  assert_string_equal(out.u.revoke.reason, "compromised");
  uint64_t id = 7;
  assert_false(gl_request_peek_lease(want, sizeof want, &id));
  /* No reason; the longest reason; any lease id. */
  req.u.revoke.reason[0] = '\0';
  req.u.revoke.lease_id = 0;
  req_roundtrip(&req, &out, 12 + 9);
  assert_string_equal(out.u.revoke.reason, "");
  memset(req.u.revoke.reason, 'r', 255);
  req.u.revoke.reason[255] = '\0';
  req.u.revoke.lease_id = UINT64_MAX;
  req_roundtrip(&req, &out, 12 + 9 + 255);
  assert_int_equal(strlen(out.u.revoke.reason), 255);
  /* A NUL in the reason; the reason missing. */
  fb_header(&g_frame, GL_WIRE_KIND_REQUEST, GL_OP_LEASE_REVOKE, 0);
  fb_be(&g_frame, 42, 8);
  fb_str8(&g_frame, 4, 'r', true);
  fb_seal(&g_frame);
  assert_req_decode(g_frame.b, g_frame.n, GPULEASE_INVALID_ARGUMENT,
                    "LEASE_REVOKE: reason contains a NUL byte");
  fb_header(&g_frame, GL_WIRE_KIND_REQUEST, GL_OP_LEASE_REVOKE, 0);
  fb_be(&g_frame, 42, 8);
  fb_seal(&g_frame);
  assert_req_decode(g_frame.b, g_frame.n, GPULEASE_MALFORMED,
                    "LEASE_REVOKE: truncated in reason: needs 1 bytes at body offset 8, 0 left");

  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_LEASE_REVOKE;
  resp_roundtrip(&resp, &rout, 12 + 2);
  fb_header(&g_frame, GL_WIRE_KIND_RESPONSE, GL_OP_LEASE_REVOKE, 0);
  fb_be(&g_frame, 0, 2);
  fb_be(&g_frame, 0, 1);
  fb_seal(&g_frame);
  char err[256];
  assert_status(gl_response_decode(g_frame.b, g_frame.n, MAX_BODY, &rout, err, sizeof err),
                GPULEASE_MALFORMED);
  assert_contains(err, "LEASE_REVOKE: 1 trailing bytes");
}

/* ADMIN_UNFENCE (0x0109): request u32 gpu_index; OK result empty. */
static void test_admin_unfence(void **state) {
  (void)state;
  static gl_request req, out;
  static gl_response resp, rout;
  static const uint8_t want[] = {
      0x47, 0x4C, 0x01, 0x00, 0x01, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, /* header, 4 */
      0x00, 0x00, 0x00, 0x03,                                                 /* gpu_index 3 */
  };
  memset(&req, 0, sizeof req);
  req.op = GL_OP_ADMIN_UNFENCE;
  req.u.unfence.gpu_index = 3;
  req_exact(&req, want, sizeof want);
  req_roundtrip(&req, &out, sizeof want);
  assert_int_equal(out.u.unfence.gpu_index, 3);
  req.u.unfence.gpu_index = UINT32_MAX; /* any u32: the daemon checks the index */
  req_roundtrip(&req, &out, sizeof want);
  assert_int_equal(out.u.unfence.gpu_index, UINT32_MAX);
  uint64_t id = 7;
  assert_false(gl_request_peek_lease(want, sizeof want, &id));
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_ADMIN_UNFENCE;
  resp_roundtrip(&resp, &rout, 12 + 2);
  assert_int_equal(GPULEASE_GPU_FENCED, 0x4);
}

/* LEASE_RENEW: lease_auth, u32 ttl_s, u8 flags (bit 0 rotate, the others
 * refused); with rotate, lease_info carries the new secret. */
static void test_lease_renew_flags(void **state) {
  (void)state;
  static gl_request req, out;
  static gl_response resp, rout;
  for (uint8_t flags = 0; flags <= GL_RENEW_F_ROTATE; flags++) {
    fb_header(&g_frame, GL_WIRE_KIND_REQUEST, GL_OP_LEASE_RENEW, 0);
    fb_auth(&g_frame, 42);
    fb_be(&g_frame, 300, 4);
    fb_be(&g_frame, flags, 1);
    fb_seal(&g_frame);
    assert_int_equal(g_frame.n, 12 + 53);
    memset(&req, 0, sizeof req);
    req.op = GL_OP_LEASE_RENEW;
    req.u.renew.auth.lease_id = 42;
    memcpy(req.u.renew.auth.secret, SECRET, SECRET_LEN);
    req.u.renew.ttl_s = 300;
    req.u.renew.flags = flags;
    req_exact(&req, g_frame.b, g_frame.n);
    req_roundtrip(&req, &out, 12 + 53);
    assert_int_equal(out.u.renew.flags, flags);
    assert_int_equal(out.u.renew.ttl_s, 300);
    assert_memory_equal(out.u.renew.auth.secret, SECRET, SECRET_LEN);
  }
  assert_int_equal(GL_RENEW_F_ROTATE, 0x01);
  /* Undefined flag bits. */
  const uint8_t bad[] = {0x02, 0x03, 0x80, 0xFF};
  for (size_t i = 0; i < sizeof bad; i++) {
    req.u.renew.flags = bad[i];
    char want[64];
    snprintf(want, sizeof want, "LEASE_RENEW: flags 0x%02x: only bit 0 (rotate) is defined",
             bad[i]);
    assert_req_refused(&req, want);
    fb_header(&g_frame, GL_WIRE_KIND_REQUEST, GL_OP_LEASE_RENEW, 0);
    fb_auth(&g_frame, 42);
    fb_be(&g_frame, 300, 4);
    fb_be(&g_frame, bad[i], 1);
    fb_seal(&g_frame);
    assert_req_decode(g_frame.b, g_frame.n, GPULEASE_INVALID_ARGUMENT, want);
  }
  /* A body without the flags byte is cut short. */
  g_frame.n--;
  fb_seal(&g_frame);
  assert_req_decode(g_frame.b, g_frame.n, GPULEASE_MALFORMED,
                    "LEASE_RENEW: truncated in flags: needs 1 bytes at body offset 52, 0 left");

  /* A rotating renew's answer: lease_info with the new secret. */
  memset(&resp, 0, sizeof resp);
  resp.op = GL_OP_LEASE_RENEW;
  resp.u.lease.lease_id = 42;
  memcpy(resp.u.lease.secret, SECRET, SECRET_LEN);
  resp.u.lease.secret[3] = 2; /* generation 2 */
  resp.u.lease.ttl_s = 300;
  resp_roundtrip(&resp, &rout, 12 + 2 + 81);
  assert_memory_equal(rout.u.lease.secret, resp.u.lease.secret, SECRET_LEN);
  gl_buf b;
  gl_buf_init(&b);
  assert_status(gl_response_encode(&resp, &b), GPULEASE_OK);
  assert_memory_equal(b.data + 14 + 8, resp.u.lease.secret, SECRET_LEN); /* at offset 8 */
  gl_buf_free(&b);
}

/* gpulease_rights_format / gpulease_rights_parse: comma-separated names,
 * "all" for every right, "none" for 0. */
static void test_rights_names(void **state) {
  (void)state;
  static const char *const names[8] = {"query",   "renew", "free",  "submit",
                                       "session", "read",  "write", "delegate"};
  static const uint32_t bits[8] = {GPULEASE_RIGHT_QUERY,   GPULEASE_RIGHT_RENEW,
                                   GPULEASE_RIGHT_FREE,    GPULEASE_RIGHT_SUBMIT,
                                   GPULEASE_RIGHT_SESSION, GPULEASE_RIGHT_READ,
                                   GPULEASE_RIGHT_WRITE,   GPULEASE_RIGHT_DELEGATE};
  char buf[128];
  uint32_t r;
  for (unsigned i = 0; i < 8; i++) {
    assert_int_equal(bits[i], 1u << i); /* the wire's bits (docs/protocol.md, Rights) */
    gpulease_rights_format(bits[i], buf, sizeof buf);
    assert_string_equal(buf, names[i]);
    r = 0;
    assert_status(gpulease_rights_parse(names[i], &r), GPULEASE_OK);
    assert_int_equal(r, bits[i]);
  }
  assert_int_equal(GPULEASE_RIGHTS_ALL, 0xFF);

  gpulease_rights_format(0x28, buf, sizeof buf);
  assert_string_equal(buf, "submit,read");
  assert_status(gpulease_rights_parse("submit,read", &r), GPULEASE_OK);
  assert_int_equal(r, 0x28);
  assert_status(gpulease_rights_parse("read,submit,read", &r), GPULEASE_OK);
  assert_int_equal(r, 0x28);
  gpulease_rights_format(0xFF, buf, sizeof buf);
  assert_string_equal(buf, "all");
  assert_status(gpulease_rights_parse("all", &r), GPULEASE_OK);
  assert_int_equal(r, 0xFF);
  assert_status(gpulease_rights_parse("query,all", &r), GPULEASE_OK);
  assert_int_equal(r, 0xFF);
  gpulease_rights_format(0, buf, sizeof buf);
  assert_string_equal(buf, "none");
  gpulease_rights_format(0x7F, buf, sizeof buf);
  assert_string_equal(buf, "query,renew,free,submit,session,read,write");
  /* Every set of rights survives format and parse. */
  for (uint32_t v = 1; v <= 0xFF; v++) {
    gpulease_rights_format(v, buf, sizeof buf);
    r = 0;
    assert_status(gpulease_rights_parse(buf, &r), GPULEASE_OK);
    assert_int_equal(r, v);
  }

  /* Unknown or empty names are refused, and *rights is left alone. */
  const char *bad[] = {"fly", "submit,fly", "", ",", "read,", ",read", "Read", "submit read",
                       "alll", "al"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    r = 0x5A;
    if (gpulease_rights_parse(bad[i], &r) != GPULEASE_INVALID_ARGUMENT)
      fail_msg("gpulease_rights_parse(\"%s\") was not refused", bad[i]);
    assert_int_equal(r, 0x5A);
  }
  assert_status(gpulease_rights_parse(NULL, &r), GPULEASE_INVALID_ARGUMENT);
  assert_status(gpulease_rights_parse("read", NULL), GPULEASE_INVALID_ARGUMENT);

  /* A short buffer: cut, always terminated. */
  memset(buf, 'Z', sizeof buf);
  gpulease_rights_format(0x7F, buf, 10);
  assert_true(strlen(buf) < 10);
  assert_true(strncmp("query,renew,free", buf, strlen(buf)) == 0);
  gpulease_rights_format(0x7F, buf, 1);
  assert_string_equal(buf, "");
  gpulease_rights_format(0x7F, NULL, 0); /* harmless */
}

/* gl_request_body_max against the encoder: every network op has a bound
 * or is one of the three only the message limit bounds; a request of each
 * fixed-size op, and the string and data ops filled to their maxima,
 * encodes to exactly its bound; the ops with a param list encode to the
 * bound less the largest list (16384 bytes); gl_request_body_limit adds
 * the headroom and stops at the message limit. */
static void test_body_max(void **state) {
  (void)state;
  size_t n;
  const gl_op_info *t = gl_op_table(&n);
  for (size_t i = 0; i < n; i++) {
    uint16_t op = t[i].code;
    uint64_t max = gl_request_body_max(op);
    if (t[i].served == GL_OP_SERVED_INTERNAL) {
      assert_true(max == UINT64_MAX);
      continue;
    }
    bool unbounded = op == GL_OP_GPU_SUBMIT || op == GL_OP_MODULE_LOAD || op == GL_OP_BATCH;
    if (unbounded != (max == UINT64_MAX)) fail_msg("%s: body max %llu", t[i].name,
                                                   (unsigned long long)max);
    if (unbounded) continue;
    gl_request r;
    memset(&r, 0, sizeof r);
    r.op = op;
    gl_session_ref *ref = (gl_session_ref *)gl_request_session(&r);
    if (ref) ref->session_id = 1;
    uint64_t variable = 0; /* what the zero request leaves out */
    switch (op) {
    case GL_OP_AUTHENTICATE: memset(r.u.authenticate.token, 'a', 255); break;
    case GL_OP_GET_INVENTORY: r.u.inventory.has_flags = true; break;
    case GL_OP_LEASE_DELEGATE:
      r.u.delegate.rights = 1;
      memset(r.u.delegate.audience, 'a', 255);
      break;
    case GL_OP_LEASE_REVOKE: memset(r.u.revoke.reason, 'a', 255); break;
    case GL_OP_MEM_ALLOC:
      r.u.mem_alloc.size_bytes = 1;
      r.u.mem_alloc.has_flags = true; /* 0.2's flags */
      break;
    case GL_OP_MEM_READ: r.u.mem_read.size_bytes = 1; break;
    case GL_OP_MEM_COPY: r.u.mem_copy.size_bytes = 1; break;
    case GL_OP_MEMSET:
      r.u.memset.element_size = 1;
      r.u.memset.count = 1;
      break;
    case GL_OP_MEM_WRITE_SHM:
    case GL_OP_MEM_READ_SHM: r.u.mem_shm.size_bytes = 1; break;
    case GL_OP_SHM_ATTACH: r.u.shm_attach.size_bytes = 1; break;
    case GL_OP_LAUNCH:
    case GL_OP_LAUNCH_EX:
    case GL_OP_GRAPH_SET_ARGS: variable = GL_WIRE_MAX_LAUNCH_PARAM_BYTES; break;
    default: break;
    }
    static char name[GL_WIRE_MAX_KERNEL_NAME];
    memset(name, 'k', sizeof name);
    if (op == GL_OP_FUNC_INFO) {
      r.u.func_info.kernel_name = name;
      r.u.func_info.kernel_name_len = GL_WIRE_MAX_KERNEL_NAME;
    }
    uint8_t *data = NULL;
    if (op == GL_OP_MEM_WRITE) {
      data = calloc(1, GL_WIRE_MAX_CHUNK);
      assert_non_null(data);
      r.u.mem_write.data = data;
      r.u.mem_write.data_len = GL_WIRE_MAX_CHUNK;
    }
    gl_buf b;
    gl_buf_init(&b);
    gpulease_status st = gl_request_encode(&r, &b);
    free(data);
    if (st != GPULEASE_OK) { /* a field the zero request gets wrong: no size to compare */
      printf("  %s: not encodable from zeros (%s), bound %llu\n", t[i].name,
             gpulease_status_name(st), (unsigned long long)max);
      assert_true(op == GL_OP_BURST || op == GL_OP_TENSORMAP_ENCODE); /* checked below */
      gl_buf_free(&b);
      continue;
    }
    uint64_t body = b.len - GL_WIRE_HEADER_SIZE;
    gl_buf_free(&b);
    if (body + variable != max)
      fail_msg("%s: encodes to %llu + %llu bytes, bound %llu", t[i].name,
               (unsigned long long)body, (unsigned long long)variable, (unsigned long long)max);
  }
  assert_true(gl_request_body_max(GL_OP_MEM_WRITE) == 84u + GL_WIRE_MAX_CHUNK);
  /* BURST: its session_ref, count and 4096 launches, each LAUNCH's body
   * after the session_ref (102 - 64 bytes) with the largest list;
   * TENSORMAP_ENCODE: docs/protocol.md's 216 bytes. */
  assert_true(gl_request_body_max(GL_OP_BURST) == 66u + 4096u * (38u + 16384u));
  assert_true(gl_request_body_max(GL_OP_LAUNCH) - 16384u - 64u == 38u);
  assert_true(gl_request_body_max(GL_OP_TENSORMAP_ENCODE) == 216u);
  assert_true(gl_request_body_max(GL_OP_MEM_ALLOC) == 76u); /* 72 and flags */
  assert_true(gl_request_body_limit(GL_OP_MEM_ALLOC, 256u << 20) == 4172u);
  assert_true(gl_request_body_max(0x0999) == UINT64_MAX);
  assert_true(gl_request_body_limit(GL_OP_LEASE_QUERY, 256u << 20) == 48 + GL_WIRE_BODY_HEADROOM);
  assert_true(gl_request_body_limit(GL_OP_GPU_SUBMIT, 256u << 20) == (256u << 20) - 12);
  assert_true(gl_request_body_limit(GL_OP_MEM_WRITE, 1u << 20) == (1u << 20) - 12);
  assert_true(gl_request_body_limit(GL_OP_MEM_WRITE, 256u << 20) ==
              84u + GL_WIRE_MAX_CHUNK + GL_WIRE_BODY_HEADROOM);
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
      cmocka_unit_test(test_resp_submit_kout),
      cmocka_unit_test(test_kernel_output_op),
      cmocka_unit_test(test_tensormap_op),
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
      cmocka_unit_test(test_session_matches_layout),
      cmocka_unit_test(test_session_request_roundtrips),
      cmocka_unit_test(test_request_session),
      cmocka_unit_test(test_session_resp_matches_layout),
      cmocka_unit_test(test_session_response_roundtrips),
      cmocka_unit_test(test_session_encode_refuses),
      cmocka_unit_test(test_session_response_encode_refuses),
      cmocka_unit_test(test_launch_params),
      cmocka_unit_test(test_exec_ops),
      cmocka_unit_test(test_burst_check),
      cmocka_unit_test(test_session_max_chunk),
      cmocka_unit_test(test_doc_session_example),
      cmocka_unit_test(test_mem_alloc_address),
      cmocka_unit_test(test_doc_hex_dumps),
      cmocka_unit_test(test_worker_lost),
      cmocka_unit_test(test_batch),
      cmocka_unit_test(test_shm_ops),
      cmocka_unit_test(test_response_head),
      cmocka_unit_test(test_net_info),
      cmocka_unit_test(test_pool_info),
      cmocka_unit_test(test_lease_alloc_class),
      cmocka_unit_test(test_lease_info_class),
      cmocka_unit_test(test_worker_init_fields),
      cmocka_unit_test(test_worker_release),
      cmocka_unit_test(test_request_peek_lease),
      cmocka_unit_test(test_inventory_tenant),
      cmocka_unit_test(test_authenticate),
      cmocka_unit_test(test_lease_delegate),
      cmocka_unit_test(test_lease_revoke),
      cmocka_unit_test(test_admin_unfence),
      cmocka_unit_test(test_lease_renew_flags),
      cmocka_unit_test(test_rights_names),
      cmocka_unit_test(test_corpus_files),
      cmocka_unit_test(test_body_max),
  };
  return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
