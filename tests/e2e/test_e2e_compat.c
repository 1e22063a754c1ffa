/*
 * test_e2e_compat.c - a gpulease 0.1 client against this release's daemon
 * (docs/protocol.md section 2, "Compatibility", rule 1): the requests are
 * the golden 0.1 bytes of tests/data/wire/0.1/, as 0.1's encoder made
 * them, with only what a client fills in at run time patched in at its
 * documented offset (lease id and secret, session id, seq, the handles
 * the daemon returned). No encoder of this release is involved; they go
 * over the QUIC transport to a real gpuleased on the emulated device
 * (GL_TEST_DEVICE=cuda: the node's GPUs).
 *
 * The flow: GET_INVENTORY, LEASE_ALLOC, SESSION_OPEN, MEM_ALLOC, MEM_WRITE,
 * MODULE_LOAD (vector_add's PTX), FUNC_INFO, LAUNCH, SYNC, MEM_READ (c = a +
 * b checked), BATCH (MEMSET, MEM_READ, SYNC), EVENT_RECORD twice and
 * EVENT_ELAPSED, GRAPH_BEGIN .. GRAPH_DESTROY (the graph's launch checked),
 * SESSION_CLOSE, LEASE_RENEW, LEASE_QUERY, LEASE_DELEGATE (the derived
 * secret used), GPU_SUBMIT plain and with the kout flag (output checked),
 * LEASE_FREE. Every answer: the expected status, and a body of exactly the
 * 0.1 layout: it decodes with the decoder test_wire_golden pins to the 0.1
 * vectors, re-encodes to the same bytes, and where 0.1's OK result of the
 * op has a fixed size, its result is as long as the golden response's.
 * Also: a 0.1 request with bytes past its last field gets 0.2's UNSUPPORTED
 * (rule 2), over the wire.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon_harness.h"
#include "net/quic.h"
#include "proto/wire.h"

#define MAX_BODY (1u << 30)
#define B GL_WIRE_HEADER_SIZE /* body offset in a message */

/* ======================================================================
 * Golden vectors
 * ==================================================================== */

typedef struct msg {
  uint8_t *p;
  size_t n;
} msg;

static msg golden(const char *name) {
  const char *src = getenv("GL_TEST_SRC_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/wire/0.1/%s", src ? src : ".", name);
  FILE *f = fopen(path, "rb");
  if (!f) fprintf(stderr, "cannot open %s\n", path);
  assert_non_null(f);
  msg m = {malloc(1u << 16), 0};
  size_t cap = 1u << 16, k;
  while ((k = fread(m.p + m.n, 1, cap - m.n, f)) > 0) {
    m.n += k;
    if (m.n == cap) m.p = realloc(m.p, cap *= 2);
  }
  fclose(f);
  assert_true(m.n >= B);
  return m;
}

/* The result bytes of an OK response (after the message). */
static size_t result_len(const uint8_t *p, size_t n) {
  assert_true(n >= B + 2);
  size_t msg_len = (size_t)p[B] << 8 | p[B + 1];
  assert_true(n >= B + 2 + msg_len);
  return n - B - 2 - msg_len;
}

static void put_be(uint8_t *p, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static uint64_t get_be(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v = v << 8 | p[i];
  return v;
}

/* ======================================================================
 * The 0.1 client
 * ==================================================================== */

typedef struct client {
  gl_qclient *q;
  gl_lease_auth auth;
  uint64_t session;
  uint64_t seq; /* the session's next seq */
} client;

/* lease_auth at body offset off (protocol.md section 3). */
static void patch_auth(msg *m, size_t off, const gl_lease_auth *a) {
  put_be(m->p + B + off, a->lease_id, 8);
  memcpy(m->p + B + off + 8, a->secret, GPULEASE_SECRET_BYTES);
}

/* session_ref at body offset off: auth, session_id at 48, seq at 56. */
static void patch_sref(client *c, uint8_t *body, uint64_t seq) {
  put_be(body, c->auth.lease_id, 8);
  memcpy(body + 8, c->auth.secret, GPULEASE_SECRET_BYTES);
  put_be(body + 48, c->session, 8);
  put_be(body + 56, seq, 8);
}

/* A session op's golden request with the client's session_ref and the
 * next seq. */
static msg session_req(client *c, const char *name) {
  msg m = golden(name);
  patch_sref(c, m.p + B, c->seq++);
  return m;
}

typedef struct answer {
  uint8_t *raw;
  size_t len;
  gl_response r;
} answer;

/* Sends m (freed), waits for the answer, asserts its status and that it
 * has the 0.1 layout: it decodes (kout: as the reply to a GPU_SUBMIT with
 * the kout flag), re-encodes to the same bytes and, given a golden OK
 * response of fixed size, its result is as long as that one's. */
static answer send_expect(client *c, msg m, gpulease_status want, const char *golden_ok,
                          bool kout) {
  uint16_t op = (uint16_t)get_be(m.p + 4, 2);
  char err[512];
  uint64_t token = 0;
  int rc = gl_qclient_send(c->q, m.p, m.n, &token, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "send: %s\n", err);
  assert_int_equal(rc, GL_QC_OK);
  free(m.p);
  answer a = {0};
  rc = gl_qclient_wait(c->q, token, &a.raw, &a.len, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "wait: %s\n", err);
  assert_int_equal(rc, GL_QC_OK);
  gl_request asked = {.op = GL_OP_GPU_SUBMIT};
  asked.u.submit.flags = GL_SUBMIT_F_KOUT;
  gpulease_status st =
      kout ? gl_response_decode_for(&asked, a.raw, a.len, MAX_BODY, &a.r, err, sizeof err)
           : gl_response_decode(a.raw, a.len, MAX_BODY, &a.r, err, sizeof err);
  if (st != GPULEASE_OK) fprintf(stderr, "%s: the answer does not decode: %s\n", gl_op_name(op), err);
  assert_int_equal(st, GPULEASE_OK);
  assert_int_equal(a.r.op, op);
  if (a.r.status != want)
    fprintf(stderr, "%s: %s '%.*s', want %s\n", gl_op_name(op), gpulease_status_name(a.r.status),
            (int)a.r.msg_len, a.r.msg, gpulease_status_name(want));
  assert_int_equal(a.r.status, want);
  gl_buf re;
  gl_buf_init(&re);
  assert_int_equal(gl_response_encode(&a.r, &re), GPULEASE_OK);
  assert_int_equal(re.len, a.len);
  assert_memory_equal(re.data, a.raw, a.len);
  gl_buf_free(&re);
  if (want == GPULEASE_OK && golden_ok) {
    msg g = golden(golden_ok);
    assert_int_equal(get_be(g.p + 4, 2), op);
    if (result_len(a.raw, a.len) != result_len(g.p, g.n))
      fprintf(stderr, "%s: result of %zu bytes, 0.1's %s has %zu\n", gl_op_name(op),
              result_len(a.raw, a.len), golden_ok, result_len(g.p, g.n));
    assert_int_equal(result_len(a.raw, a.len), result_len(g.p, g.n));
    free(g.p);
  }
  return a;
}

static void expect_ok(client *c, msg m, const char *golden_ok) {
  answer a = send_expect(c, m, GPULEASE_OK, golden_ok, false);
  free(a.raw);
}

static gl_qclient *dial(const gl_test_daemon *d) {
  char host[64];
  snprintf(host, sizeof host, "%s", d->addr);
  char *colon = strrchr(host, ':');
  assert_non_null(colon);
  *colon = 0;
  gl_qclient_config cfg = {.host = host,
                           .port = (uint16_t)atoi(colon + 1),
                           .pin_sha256 = d->fingerprint,
                           .timeout_ms = 30000,
                           .max_response_bytes = 64u << 20};
  gl_qclient *q = NULL;
  char err[256];
  int rc = gl_qclient_connect(&cfg, &q, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "connect: %s\n", err);
  assert_int_equal(rc, GL_QC_OK);
  return q;
}

/* c = a + b of the golden vectors: a[i] = i + 1, b[i] = 100 + i. */
static void check_vadd(const uint8_t *p, size_t n) {
  assert_int_equal(n, 64);
  for (int i = 0; i < 16; i++) {
    float f;
    memcpy(&f, p + 4 * i, 4);
    if (f != (float)(101 + 2 * i)) fprintf(stderr, "c[%d] = %g, want %d\n", i, f, 101 + 2 * i);
    assert_true(f == (float)(101 + 2 * i));
  }
}

/* vector_add's four launch params (buffer, +0 / +64 / +128, n) at body
 * offset off: each buffer param's handle one byte after its kind, 17 bytes
 * apart. */
static void patch_vadd_params(msg *m, size_t off, uint64_t buf) {
  for (int i = 0; i < 3; i++) {
    assert_int_equal(m->p[B + off + 17 * i], GL_LAUNCH_PARAM_BUFFER);
    put_be(m->p + B + off + 17 * i + 1, buf, 8);
  }
}

/* The body offset of a LAUNCH's params: session_ref, function, grid and
 * block, shared_mem_bytes, param_count. */
#define LAUNCH_PARAMS (64 + 8 + 24 + 4 + 2)
/* GRAPH_SET_ARGS's: session_ref, graph, node, param_count. */
#define SET_ARGS_PARAMS (64 + 8 + 4 + 2)

static void test_client_0_1(void **state) {
  (void)state;
  gl_test_daemon d;
  const char *dev = getenv("GL_TEST_DEVICE");
  bool on_gpu = dev && strcmp(dev, "cuda") == 0;
  /* 0.1's LEASE_RENEW vector asks for 600 s */
  const char *extra[] = {"--max-ttl", "3600", NULL};
  assert_int_equal(gl_test_daemon_start(&d, on_gpu ? NULL : "64M", extra), 0);
  client c = {.q = dial(&d)};

  /* GET_INVENTORY: GPUs, each entry with 0.1's ptx_isa bytes. */
  answer a = send_expect(&c, golden("req-get-inventory"), GPULEASE_OK, NULL, false);
  assert_true(a.r.u.inventory.gpu_count >= 1);
  free(a.raw);

  /* LEASE_ALLOC: 16 MiB on any GPU. */
  a = send_expect(&c, golden("req-lease-alloc-16m"), GPULEASE_OK, "resp-lease-alloc-isolated",
                  false);
  c.auth.lease_id = a.r.u.lease.lease_id;
  memcpy(c.auth.secret, a.r.u.lease.secret, sizeof c.auth.secret);
  assert_int_equal(a.r.u.lease.vram_bytes, 16u << 20);
  free(a.raw);

  /* SESSION_OPEN: lease_auth at body offset 0. */
  msg m = golden("req-session-open");
  patch_auth(&m, 0, &c.auth);
  a = send_expect(&c, m, GPULEASE_OK, "resp-session-open", false);
  c.session = a.r.u.handle;
  c.seq = 1;
  free(a.raw);

  /* MEM_ALLOC 4096 bytes. */
  a = send_expect(&c, session_req(&c, "req-mem-alloc-4k"), GPULEASE_OK, "resp-mem-alloc", false);
  uint64_t buf = a.r.u.mem_alloc.buffer;
  free(a.raw);

  /* MEM_WRITE a and b: buffer at body offset 64. */
  m = session_req(&c, "req-mem-write-vector-add");
  put_be(m.p + B + 64, buf, 8);
  expect_ok(&c, m, "resp-mem-write");

  /* MODULE_LOAD vector_add's PTX, FUNC_INFO (module at 64). */
  a = send_expect(&c, session_req(&c, "req-module-load-vector-add"), GPULEASE_OK,
                  "resp-module-load-cache-0", false);
  uint64_t module = a.r.u.module_load.module;
  free(a.raw);
  m = session_req(&c, "req-func-info-vector-add");
  put_be(m.p + B + 64, module, 8);
  a = send_expect(&c, m, GPULEASE_OK, "resp-func-info-vector-add", false);
  uint64_t function = a.r.u.func_info.function;
  assert_int_equal(a.r.u.func_info.param_count, 4);
  free(a.raw);

  /* LAUNCH (function at 64, the buffers in the params), SYNC, MEM_READ c. */
  m = session_req(&c, "req-launch-vector-add");
  put_be(m.p + B + 64, function, 8);
  patch_vadd_params(&m, LAUNCH_PARAMS, buf);
  expect_ok(&c, m, "resp-launch");
  a = send_expect(&c, session_req(&c, "req-sync"), GPULEASE_OK, "resp-sync-ok", false);
  assert_int_equal(a.r.u.sync.error_status, 0);
  free(a.raw);
  m = session_req(&c, "req-mem-read-vector-add");
  put_be(m.p + B + 64, buf, 8);
  a = send_expect(&c, m, GPULEASE_OK, NULL, false);
  check_vadd(a.r.u.mem_read.data, a.r.u.mem_read.data_len);
  assert_int_equal(result_len(a.raw, a.len), 4 + 64); /* u32 data_len, data */
  free(a.raw);

  /* BATCH: MEMSET, MEM_READ, SYNC behind u32 lengths after the batch's
   * session_ref and count; each entry a whole message with its own
   * session_ref (the next seqs) and buffer at 64. */
  m = golden("req-batch-memset-read-sync");
  patch_sref(&c, m.p + B, c.seq);
  size_t pos = B + 64 + 2;
  for (int i = 0; i < 3; i++) {
    size_t len = (size_t)get_be(m.p + pos, 4);
    uint8_t *e = m.p + pos + 4;
    uint16_t op = (uint16_t)get_be(e + 4, 2);
    patch_sref(&c, e + B, c.seq++);
    if (op != GL_OP_SYNC) put_be(e + B + 64, buf, 8);
    pos += 4 + len;
  }
  assert_int_equal(pos, m.n);
  a = send_expect(&c, m, GPULEASE_OK, NULL, false);
  assert_int_equal(a.r.u.batch.count, 3);
  size_t bp = 0;
  const uint8_t *rm;
  size_t rn;
  static const uint16_t ops[3] = {GL_OP_MEMSET, GL_OP_MEM_READ, GL_OP_SYNC};
  for (int i = 0; i < 3; i++) {
    assert_true(gl_batch_next(a.r.u.batch.replies, a.r.u.batch.replies_len, &bp, &rm, &rn));
    gl_response er;
    char err[256];
    assert_int_equal(gl_response_decode(rm, rn, MAX_BODY, &er, err, sizeof err), GPULEASE_OK);
    assert_int_equal(er.op, ops[i]);
    assert_int_equal(er.status, GPULEASE_OK);
    if (er.op == GL_OP_MEM_READ) {
      assert_int_equal(er.u.mem_read.data_len, 64);
      for (int k = 0; k < 16; k++) {
        uint32_t v;
        memcpy(&v, er.u.mem_read.data + 4 * k, 4);
        assert_int_equal(v, 0x01020304);
      }
    } else {
      /* as 0.1's replies of the op */
      msg g = golden(er.op == GL_OP_SYNC ? "resp-sync-ok" : "resp-memset");
      assert_int_equal(result_len(rm, rn), result_len(g.p, g.n));
      free(g.p);
    }
  }
  assert_false(gl_batch_next(a.r.u.batch.replies, a.r.u.batch.replies_len, &bp, &rm, &rn));
  free(a.raw);

  /* EVENT_RECORD 3 and 4, EVENT_ELAPSED 3 .. 4. */
  expect_ok(&c, session_req(&c, "req-event-record"), "resp-event-record");
  expect_ok(&c, session_req(&c, "req-event-record-4"), "resp-event-record");
  expect_ok(&c, session_req(&c, "req-event-elapsed"), "resp-event-elapsed");

  /* A graph of one launch: GRAPH_BEGIN, LAUNCH, GRAPH_END, GRAPH_SET_ARGS
   * (graph at 64, node 0, the params), GRAPH_LAUNCH, its result read,
   * GRAPH_DESTROY. c is cleared first, so the graph's launch writes it. */
  m = session_req(&c, "req-memset-u8");
  put_be(m.p + B + 64, buf, 8);
  put_be(m.p + B + 72, 128, 8);    /* offset */
  put_be(m.p + B + 85, 64, 8);     /* count: element_size at 80, value at 81 */
  expect_ok(&c, m, "resp-memset");
  expect_ok(&c, session_req(&c, "req-graph-begin"), "resp-graph-begin");
  m = session_req(&c, "req-launch-vector-add");
  put_be(m.p + B + 64, function, 8);
  patch_vadd_params(&m, LAUNCH_PARAMS, buf);
  expect_ok(&c, m, "resp-launch");
  a = send_expect(&c, session_req(&c, "req-graph-end"), GPULEASE_OK, "resp-graph-end", false);
  uint64_t graph = a.r.u.graph_end.graph;
  assert_int_equal(a.r.u.graph_end.kernel_nodes, 1);
  free(a.raw);
  m = session_req(&c, "req-graph-set-args-vector-add");
  put_be(m.p + B + 64, graph, 8);
  assert_int_equal(get_be(m.p + B + 72, 4), 0); /* node */
  patch_vadd_params(&m, SET_ARGS_PARAMS, buf);
  expect_ok(&c, m, "resp-graph-set-args");
  m = session_req(&c, "req-graph-launch");
  put_be(m.p + B + 64, graph, 8);
  expect_ok(&c, m, "resp-graph-launch");
  m = session_req(&c, "req-mem-read-vector-add");
  put_be(m.p + B + 64, buf, 8);
  a = send_expect(&c, m, GPULEASE_OK, NULL, false);
  check_vadd(a.r.u.mem_read.data, a.r.u.mem_read.data_len);
  assert_int_equal(result_len(a.raw, a.len), 4 + 64); /* u32 data_len, data */
  free(a.raw);
  m = session_req(&c, "req-graph-destroy");
  put_be(m.p + B + 64, graph, 8);
  expect_ok(&c, m, "resp-graph-destroy");
  a = send_expect(&c, session_req(&c, "req-sync"), GPULEASE_OK, "resp-sync-ok", false);
  assert_int_equal(a.r.u.sync.error_status, 0);
  free(a.raw);

  /* A session op with bytes past its last field: UNSUPPORTED from the
   * daemon's decoder, its seq left unused (a refused request's,
   * "Ordering"). */
  m = golden("bad-session-close-1-more-byte");
  patch_sref(&c, m.p + B, c.seq);
  a = send_expect(&c, m, GPULEASE_UNSUPPORTED, NULL, false);
  assert_non_null(memmem(a.r.msg, a.r.msg_len, "SESSION_CLOSE: 1 bytes after the last field",
                         strlen("SESSION_CLOSE: 1 bytes after the last field")));
  free(a.raw);
  /* MEM_ALLOC has a request field since 0.2 (flags, a u32 after
   * size_bytes): the 4 bytes 00 00 00 04 are flags with an undefined bit,
   * INVALID_ARGUMENT from the decoder, the seq again unused. */
  m = golden("bad-mem-alloc-4-more-bytes");
  patch_sref(&c, m.p + B, c.seq);
  a = send_expect(&c, m, GPULEASE_INVALID_ARGUMENT, NULL, false);
  assert_non_null(memmem(a.r.msg, a.r.msg_len, "MEM_ALLOC: flags 0x00000004: only bit 0",
                         strlen("MEM_ALLOC: flags 0x00000004: only bit 0")));
  free(a.raw);

  /* SESSION_CLOSE. */
  expect_ok(&c, session_req(&c, "req-session-close"), "resp-session-close");

  /* LEASE_RENEW, LEASE_QUERY: lease_auth at 0. */
  m = golden("req-lease-renew");
  patch_auth(&m, 0, &c.auth);
  a = send_expect(&c, m, GPULEASE_OK, "resp-lease-renew", false);
  assert_int_equal(a.r.u.lease.ttl_s, 600);
  free(a.raw);
  m = golden("req-lease-query");
  patch_auth(&m, 0, &c.auth);
  a = send_expect(&c, m, GPULEASE_OK, "resp-lease-query", false);
  assert_int_equal(a.r.u.lease.lease_id, c.auth.lease_id);
  free(a.raw);

  /* LEASE_DELEGATE a query-only secret, and LEASE_QUERY with it. */
  m = golden("req-lease-delegate-query");
  patch_auth(&m, 0, &c.auth);
  a = send_expect(&c, m, GPULEASE_OK, "resp-lease-delegate", false);
  gl_lease_auth weak = {.lease_id = c.auth.lease_id};
  memcpy(weak.secret, a.r.u.secret, sizeof weak.secret);
  free(a.raw);
  m = golden("req-lease-query");
  patch_auth(&m, 0, &weak);
  expect_ok(&c, m, "resp-lease-query");
  m = golden("req-lease-free");
  patch_auth(&m, 0, &weak);
  answer refused = send_expect(&c, m, GPULEASE_UNAUTHORIZED, NULL, false);
  free(refused.raw);

  /* GPU_SUBMIT vector_add: a and b as input, c as output. */
  m = golden("req-gpu-submit-vector-add");
  patch_auth(&m, 0, &c.auth);
  a = send_expect(&c, m, GPULEASE_OK, NULL, false);
  assert_false(a.r.u.submit.has_kout);
  check_vadd(a.r.u.submit.output, a.r.u.submit.output_len);
  /* u64 gpu_time_ns, u32 output_len, output */
  assert_int_equal(result_len(a.raw, a.len), 8 + 4 + 64);
  free(a.raw);
  /* with the kout flag: the kout block follows (0.1's layout, which the
   * plain decoder refuses as trailing bytes) */
  m = golden("req-gpu-submit-vector-add-kout");
  patch_auth(&m, 0, &c.auth);
  a = send_expect(&c, m, GPULEASE_OK, NULL, true);
  assert_true(a.r.u.submit.has_kout);
  check_vadd(a.r.u.submit.output, a.r.u.submit.output_len);
  /* and u8 flags, u64 dropped, u32 len, text */
  assert_int_equal(result_len(a.raw, a.len), 8 + 4 + 64 + 1 + 8 + 4 + a.r.u.submit.kout.len);
  gl_response plain;
  char err[256];
  assert_int_equal(gl_response_decode(a.raw, a.len, MAX_BODY, &plain, err, sizeof err),
                   GPULEASE_MALFORMED);
  free(a.raw);

  /* A 0.1 request with bytes past its last field: UNSUPPORTED (0.2's rule
   * 2), the connection still serving. */
  m = golden("bad-lease-query-8-more-bytes");
  patch_auth(&m, 0, &c.auth);
  a = send_expect(&c, m, GPULEASE_UNSUPPORTED, NULL, false);
  assert_non_null(memmem(a.r.msg, a.r.msg_len, "8 bytes after the last field this daemon knows",
                         strlen("8 bytes after the last field this daemon knows")));
  free(a.raw);
  /* GET_INVENTORY has a request field since 0.2 (flags, a u32): one byte
   * is that field truncated. */
  a = send_expect(&c, golden("bad-get-inventory-1-more-byte"), GPULEASE_MALFORMED, NULL, false);
  free(a.raw);

  /* LEASE_FREE; the lease is gone. */
  m = golden("req-lease-free");
  patch_auth(&m, 0, &c.auth);
  expect_ok(&c, m, "resp-lease-free");
  m = golden("req-lease-query");
  patch_auth(&m, 0, &c.auth);
  a = send_expect(&c, m, GPULEASE_NOT_FOUND, NULL, false);
  free(a.raw);

  gl_qclient_del(c.q);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_client_0_1),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
