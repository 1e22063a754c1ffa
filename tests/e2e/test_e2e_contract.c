/*
 * test_e2e_contract.c - the session rules of docs/protocol.md, checked the
 * way a client written from that document alone sees them: raw requests
 * built with the wire codec, sent over the QUIC transport (no libgpulease
 * session logic in between), against a real gpuleased on the emulated
 * device (GL_TEST_DEVICE=cuda: on the node's real GPUs; tests/gpu/check.sh
 * runs them there, where a lost context is CUDA's own sticky error).
 *
 * Each test is one rule as the document states it:
 *   - an unordered op (seq 0) runs after every op received before it, held
 *     ones included ("Ordering");
 *   - a missing seq is given up after the seq timeout: MISSING_SEQ, naming
 *     it, as the session's failure; the held ops go on (fail fast);
 *   - a refused request leaves its seq unused; sending it again fills the gap;
 *   - pipelining past 256 and past the 1024-stream window on one connection,
 *     in seq order, and 1000 ops sent in reverse order inside the window;
 *   - the held-op limit answers BUSY and leaves the seq unused;
 *   - a lost context ends every session of the lease; the daemon answers
 *     their ops as "Failures" says, and a new session works at once;
 *   - MEM_ALLOC gives each buffer's offset in the region, which GPU_SUBMIT
 *     addresses ("Memory"), and with flags bit 0 its device address (24
 *     bytes; 16 without, as before), alone and in a BATCH; an unknown flag
 *     bit or a byte past the flags leaves the seq unused;
 *   - the smaller rules: FUNC_INFO's ptx_version, a module loaded twice,
 *     ops after SESSION_CLOSE, the fail-fast message forms;
 *   - the messages the document quotes, word for word, and the statuses
 *     its op sections give; section 6's decoder limits, row by row;
 *   - which refusals use their seq: LAUNCH_EX's attribute checks (its own
 *     answer, the session's failure) do, every decoder refusal (a BURST's
 *     count included) does not;
 *   - a fault in a shared lease ends its siblings before it is answered;
 *   - LEASE_DELEGATE of everything gives back the presented secret.
 * Issue 9's faster pipeline must keep passing these unchanged.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "daemon_harness.h"
#include "net/quic.h"
#include "proto/wire.h"

/* ======================================================================
 * A client from the document
 * ==================================================================== */

typedef struct peer {
  gl_qclient *q;
  gl_lease_auth auth;
  uint64_t session;
} peer;

/* One received response: the bytes and the decoded view into them. */
typedef struct reply {
  uint8_t *raw;
  gl_response r;
} reply;

static void reply_free(reply *p) {
  free(p->raw);
  p->raw = NULL;
}

static gl_qclient *dial(const gl_test_daemon *d, uint32_t timeout_ms) {
  char host[64];
  snprintf(host, sizeof host, "%s", d->addr);
  char *colon = strrchr(host, ':');
  assert_non_null(colon);
  *colon = 0;
  gl_qclient_config cfg = {.host = host,
                           .port = (uint16_t)atoi(colon + 1),
                           .pin_sha256 = d->fingerprint,
                           .timeout_ms = timeout_ms,
                           .max_response_bytes = 64u << 20};
  gl_qclient *q = NULL;
  char err[256];
  int rc = gl_qclient_connect(&cfg, &q, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "connect: %s\n", err);
  assert_int_equal(rc, GL_QC_OK);
  return q;
}

static uint64_t send_req(gl_qclient *q, const gl_request *req) {
  gl_buf b;
  gl_buf_init(&b);
  assert_int_equal(gl_request_encode(req, &b), GPULEASE_OK);
  uint64_t token = 0;
  char err[256];
  int rc = gl_qclient_send(q, b.data, b.len, &token, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "send: %s\n", err);
  assert_int_equal(rc, GL_QC_OK);
  gl_buf_free(&b);
  return token;
}

static reply wait_reply(gl_qclient *q, uint64_t token) {
  reply p = {0};
  size_t len = 0;
  char err[256];
  int rc = gl_qclient_wait(q, token, &p.raw, &len, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "wait: %s\n", err);
  assert_int_equal(rc, GL_QC_OK);
  assert_int_equal(gl_response_decode(p.raw, len, 1u << 30, &p.r, err, sizeof err), GPULEASE_OK);
  return p;
}

static reply call(gl_qclient *q, const gl_request *req) { return wait_reply(q, send_req(q, req)); }

/* Asserts the reply's status (and, when given, a part of its message). */
static void expect(const reply *p, gpulease_status st, const char *needle) {
  if (p->r.status != st || (needle && !memmem(p->r.msg, p->r.msg_len, needle, strlen(needle))))
    fprintf(stderr, "%s: got %s '%.*s', want %s with '%s'\n", gl_op_name(p->r.op),
            gpulease_status_name(p->r.status), (int)p->r.msg_len, p->r.msg,
            gpulease_status_name(st), needle ? needle : "");
  assert_int_equal(p->r.status, st);
  if (needle) assert_non_null(memmem(p->r.msg, p->r.msg_len, needle, strlen(needle)));
}

/* Waits for a request's reply and asserts it is OK. */
static void wait_ok(gl_qclient *q, uint64_t token) {
  reply x = wait_reply(q, token);
  expect(&x, GPULEASE_OK, NULL);
  reply_free(&x);
}

static void call_ok(gl_qclient *q, const gl_request *req) { wait_ok(q, send_req(q, req)); }

static gl_lease_auth lease_alloc(gl_qclient *q, uint64_t bytes) {
  gl_request req = {.op = GL_OP_LEASE_ALLOC};
  req.u.alloc.gpu_index = GPULEASE_ANY_GPU;
  req.u.alloc.vram_bytes = bytes;
  req.u.alloc.ttl_s = 120;
  reply p = call(q, &req);
  expect(&p, GPULEASE_OK, NULL);
  gl_lease_auth a = {.lease_id = p.r.u.lease.lease_id};
  memcpy(a.secret, p.r.u.lease.secret, sizeof a.secret);
  reply_free(&p);
  return a;
}

static uint64_t session_open(gl_qclient *q, const gl_lease_auth *a) {
  gl_request req = {.op = GL_OP_SESSION_OPEN};
  req.u.auth = *a;
  reply p = call(q, &req);
  expect(&p, GPULEASE_OK, NULL);
  uint64_t id = p.r.u.handle;
  reply_free(&p);
  return id;
}

static peer open_peer(const gl_test_daemon *d, uint64_t vram) {
  peer p;
  p.q = dial(d, 30000);
  p.auth = lease_alloc(p.q, vram);
  p.session = session_open(p.q, &p.auth);
  return p;
}

static gl_session_ref ref(const peer *p, uint64_t seq) {
  gl_session_ref r = {.auth = p->auth, .session_id = p->session, .seq = seq};
  return r;
}

/* ---- session ops ---- */

static gl_request r_alloc(const peer *p, uint64_t seq, uint64_t size) {
  gl_request q = {.op = GL_OP_MEM_ALLOC};
  q.u.mem_alloc.s = ref(p, seq);
  q.u.mem_alloc.size_bytes = size;
  return q;
}

static gl_request r_memset32(const peer *p, uint64_t seq, uint64_t buf, uint32_t value) {
  gl_request q = {.op = GL_OP_MEMSET};
  q.u.memset.s = ref(p, seq);
  q.u.memset.buffer = buf;
  q.u.memset.offset = 0;
  q.u.memset.element_size = 4;
  q.u.memset.value = value;
  q.u.memset.count = 1;
  return q;
}

static gl_request r_write(const peer *p, uint64_t seq, uint64_t buf, const void *data,
                          uint32_t len) {
  gl_request q = {.op = GL_OP_MEM_WRITE};
  q.u.mem_write.s = ref(p, seq);
  q.u.mem_write.buffer = buf;
  q.u.mem_write.data = data;
  q.u.mem_write.data_len = len;
  return q;
}

static gl_request r_read(const peer *p, uint64_t seq, uint64_t buf, uint32_t len) {
  gl_request q = {.op = GL_OP_MEM_READ};
  q.u.mem_read.s = ref(p, seq);
  q.u.mem_read.buffer = buf;
  q.u.mem_read.size_bytes = len;
  return q;
}

static gl_request r_sync(const peer *p, uint64_t seq, uint64_t ack) {
  gl_request q = {.op = GL_OP_SYNC};
  q.u.sync.s = ref(p, seq);
  q.u.sync.ack_seq = ack;
  return q;
}

static gl_request r_close(const peer *p, uint64_t seq) {
  gl_request q = {.op = GL_OP_SESSION_CLOSE};
  q.u.session = ref(p, seq);
  return q;
}

static uint64_t alloc_buf(const peer *p, uint64_t seq, uint64_t size, uint64_t *region_offset) {
  gl_request q = r_alloc(p, seq, size);
  reply rp = call(p->q, &q);
  expect(&rp, GPULEASE_OK, NULL);
  uint64_t b = rp.r.u.mem_alloc.buffer;
  if (region_offset) *region_offset = rp.r.u.mem_alloc.region_offset;
  reply_free(&rp);
  return b;
}

static uint32_t read_u32(const peer *p, uint64_t seq, uint64_t buf) {
  gl_request q = r_read(p, seq, buf, 4);
  reply rp = call(p->q, &q);
  expect(&rp, GPULEASE_OK, NULL);
  assert_int_equal(rp.r.u.mem_read.data_len, 4);
  uint32_t v;
  memcpy(&v, rp.r.u.mem_read.data, 4);
  reply_free(&rp);
  return v;
}

static void close_peer(peer *p, uint64_t seq) {
  gl_request q = r_close(p, seq);
  call_ok(p->q, &q);
  gl_request f = {.op = GL_OP_LEASE_FREE};
  f.u.auth = p->auth;
  call_ok(p->q, &f);
  gl_qclient_del(p->q);
}

static void start(gl_test_daemon *d, const char *seq_timeout_ms) {
  const char *extra[] = {"--seq-timeout-ms", seq_timeout_ms, NULL};
  const char *dev = getenv("GL_TEST_DEVICE");
  bool on_gpu = dev && strcmp(dev, "cuda") == 0;
  assert_int_equal(gl_test_daemon_start(d, on_gpu ? NULL : "64M", extra), 0);
}

static double now_s(void) { return (double)gl_mono_ns() / 1e9; }

/* ======================================================================
 * Ordering
 * ==================================================================== */

/* "seq 0 ... runs after every op of the session the daemon received before
 * it, ops still held for a lower seq included." */
static void test_unordered_runs_after_held_ops(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "10000");
  peer p = open_peer(&d, 1 << 20);
  uint64_t b = alloc_buf(&p, 1, 4096, NULL);

  /* seq 3 comes before seq 2: it is held. Then an unordered read. */
  gl_request w3 = r_write(&p, 3, b, "NEW!", 4);
  uint64_t t3 = send_req(p.q, &w3);
  gl_request rd0 = r_read(&p, 0, b, 4);
  uint64_t t0 = send_req(p.q, &rd0);
  usleep(200000); /* the read must not run meanwhile */
  gl_request m2 = r_memset32(&p, 2, b, 0x41414141);
  uint64_t t2 = send_req(p.q, &m2);
  reply r0 = wait_reply(p.q, t0), r2 = wait_reply(p.q, t2), r3 = wait_reply(p.q, t3);
  expect(&r2, GPULEASE_OK, NULL);
  expect(&r3, GPULEASE_OK, NULL);
  expect(&r0, GPULEASE_OK, NULL);
  /* Ran after seq 2 and seq 3, not at once (old bytes) nor between. */
  assert_memory_equal(r0.r.u.mem_read.data, "NEW!", 4);
  reply_free(&r0), reply_free(&r2), reply_free(&r3);

  /* Two unordered ops behind a held one keep their order, after it. */
  gl_request m5 = r_memset32(&p, 5, b, 0x43434343); /* 'CCCC', held: 4 missing */
  uint64_t t5 = send_req(p.q, &m5);
  gl_request mb = r_memset32(&p, 0, b, 0x42424242); /* 'BBBB' */
  uint64_t tb = send_req(p.q, &mb);
  gl_request rb = r_read(&p, 0, b, 4);
  uint64_t tr = send_req(p.q, &rb);
  gl_request s4 = r_sync(&p, 4, 0);
  call_ok(p.q, &s4);
  reply x5 = wait_reply(p.q, t5), xb = wait_reply(p.q, tb), xr = wait_reply(p.q, tr);
  expect(&x5, GPULEASE_OK, NULL);
  expect(&xb, GPULEASE_OK, NULL);
  expect(&xr, GPULEASE_OK, NULL);
  assert_memory_equal(xr.r.u.mem_read.data, "BBBB", 4);
  reply_free(&x5), reply_free(&xb), reply_free(&xr);
  close_peer(&p, 6);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* A missing seq is given up after the seq timeout; it becomes the
 * session's failure with MISSING_SEQ, and the held ops fail fast. */
static void test_missing_seq_times_out(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "800");
  peer p = open_peer(&d, 1 << 20);
  uint64_t b = alloc_buf(&p, 1, 4096, NULL);
  double t0 = now_s();
  gl_request m3 = r_memset32(&p, 3, b, 3), m4 = r_memset32(&p, 4, b, 4);
  uint64_t t3 = send_req(p.q, &m3), t4 = send_req(p.q, &m4);
  reply x3 = wait_reply(p.q, t3), x4 = wait_reply(p.q, t4);
  double waited = now_s() - t0;
  printf("held ops answered after %.2f s\n", waited);
  assert_true(waited > 0.6 && waited < 5.0);
  expect(&x3, GPULEASE_MISSING_SEQ, "op 2 (missing) failed earlier");
  expect(&x3, GPULEASE_MISSING_SEQ, "SYNC with ack_seq 2 to go on");
  expect(&x4, GPULEASE_MISSING_SEQ, "no op with seq 2 arrived within 800 ms");
  reply_free(&x3), reply_free(&x4);

  /* SYNC reports it: status 17, error_op 0, error_seq 2. */
  gl_request s5 = r_sync(&p, 5, 0);
  reply y = call(p.q, &s5);
  expect(&y, GPULEASE_OK, "seq 2");
  assert_int_equal(y.r.u.sync.error_status, GPULEASE_MISSING_SEQ);
  assert_int_equal(y.r.u.sync.error_op, 0);
  assert_int_equal(y.r.u.sync.error_seq, 2);
  reply_free(&y);
  /* The given-up seq counts as used. */
  gl_request late = r_memset32(&p, 2, b, 2);
  reply z = call(p.q, &late);
  expect(&z, GPULEASE_INVALID_ARGUMENT, "seq 2 was already used");
  reply_free(&z);
  /* Acknowledged, the session goes on. */
  gl_request s6 = r_sync(&p, 6, 2);
  call_ok(p.q, &s6);
  gl_request m7 = r_memset32(&p, 7, b, 77);
  call_ok(p.q, &m7);
  assert_int_equal(read_u32(&p, 8, b), 77);
  close_peer(&p, 9);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* "A refused request does not use its seq": refused for its secret, its
 * session or by the decoder, seq 2 is sent again and the held op runs. */
static void test_refused_request_leaves_seq_unused(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "10000");
  peer p = open_peer(&d, 1 << 20);
  uint64_t b = alloc_buf(&p, 1, 4096, NULL);
  gl_request m3 = r_memset32(&p, 3, b, 0x58585858);
  uint64_t t3 = send_req(p.q, &m3);

  gl_request bad = r_memset32(&p, 2, b, 1);
  bad.u.memset.s.auth.secret[0] ^= 1;
  reply x = call(p.q, &bad);
  expect(&x, GPULEASE_UNAUTHORIZED, NULL);
  reply_free(&x);
  bad = r_memset32(&p, 2, b, 1);
  bad.u.memset.s.session_id ^= 0x10;
  x = call(p.q, &bad);
  expect(&x, GPULEASE_NOT_FOUND, "no session");
  reply_free(&x);
  /* A MEMSET whose element size the decoder refuses (3), built by hand
   * from an encoded one: element_size sits at body offset 80 (session_ref
   * 64, buffer 8, offset 8). */
  gl_request good = r_memset32(&p, 2, b, 1);
  gl_buf enc;
  gl_buf_init(&enc);
  assert_int_equal(gl_request_encode(&good, &enc), GPULEASE_OK);
  enc.data[GL_WIRE_HEADER_SIZE + 80] = 3;
  uint64_t tok;
  char err[256];
  assert_int_equal(gl_qclient_send(p.q, enc.data, enc.len, &tok, err, sizeof err), GL_QC_OK);
  gl_buf_free(&enc);
  x = wait_reply(p.q, tok);
  expect(&x, GPULEASE_INVALID_ARGUMENT, "element_size");
  reply_free(&x);

  /* Seq 2 is still missing: a SYNC fills the gap, and seq 3 runs. */
  double t0 = now_s();
  gl_request s2 = r_sync(&p, 2, 0);
  reply y = call(p.q, &s2);
  expect(&y, GPULEASE_OK, NULL);
  assert_int_equal(y.r.u.sync.error_status, 0);
  reply_free(&y);
  wait_ok(p.q, t3);
  assert_true(now_s() - t0 < 5.0); /* not the 10 s seq timeout */
  assert_int_equal(read_u32(&p, 4, b), 0x58585858);
  /* A BURST whose count claims two launches and whose body holds one: the
   * daemon reads only its session_ref and forwards it; the session refuses
   * the list (MALFORMED), its seq used, as the session's failure. */
  gl_buf one;
  gl_buf_init(&one);
  gl_launch_req l1;
  memset(&l1, 0, sizeof l1);
  l1.function = 0x0100000000000001ull;
  l1.grid[0] = l1.grid[1] = l1.grid[2] = l1.block[0] = l1.block[1] = l1.block[2] = 1;
  assert_int_equal(gl_burst_add(&one, &l1), GPULEASE_OK);
  gl_request burst = {.op = GL_OP_BURST};
  burst.u.burst.s = ref(&p, 5);
  burst.u.burst.count = 2;
  burst.u.burst.launches = one.data;
  burst.u.burst.launches_len = one.len;
  burst.u.burst.checked = true; /* the encoder takes the list as it is */
  x = call(p.q, &burst);
  expect(&x, GPULEASE_MALFORMED, "launch[1]");
  reply_free(&x);
  gl_request s6 = r_sync(&p, 6, 5);
  y = call(p.q, &s6);
  expect(&y, GPULEASE_OK, NULL);
  assert_int_equal(y.r.u.sync.error_status, GPULEASE_MALFORMED);
  assert_int_equal(y.r.u.sync.error_seq, 5);
  reply_free(&y);
  /* A BURST whose body runs past its last launch (count 1, two launches):
   * the compatibility rule's UNSUPPORTED, naming BURST's last field, in
   * the op's turn (the seq used, the session's failure). */
  assert_int_equal(gl_burst_add(&one, &l1), GPULEASE_OK);
  burst.u.burst.s = ref(&p, 7);
  burst.u.burst.count = 1;
  burst.u.burst.launches = one.data;
  burst.u.burst.launches_len = one.len;
  x = call(p.q, &burst);
  expect(&x, GPULEASE_UNSUPPORTED,
         "BURST: 38 bytes after the last field this daemon knows (launches): a field of a "
         "newer release? this daemon speaks gpulease 0.2");
  reply_free(&x);
  gl_buf_free(&one);
  gl_request s8 = r_sync(&p, 8, 7);
  y = call(p.q, &s8);
  expect(&y, GPULEASE_OK, NULL);
  assert_int_equal(y.r.u.sync.error_status, GPULEASE_UNSUPPORTED);
  assert_int_equal(y.r.u.sync.error_seq, 7);
  reply_free(&y);
  close_peer(&p, 9);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* Pipelining on one connection: 2000 ops in seq order (past 256 and past
 * the 1024-stream window), then 1000 ops opened in reverse seq order
 * (inside the window), all held until the lowest comes. */
static void test_pipeline_past_the_window(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "20000");
  peer p = open_peer(&d, 1 << 20);
  uint64_t b = alloc_buf(&p, 1, 4096, NULL);
  enum { N1 = 2000, N2 = 1000 };
  uint64_t *tok = calloc(N1 + N2, sizeof *tok);
  double t0 = now_s();
  for (uint32_t i = 0; i < N1; i++) {
    gl_request m = r_memset32(&p, 2 + i, b, 2 + i);
    tok[i] = send_req(p.q, &m);
  }
  assert_true(gl_qclient_outstanding(p.q) > 256);
  for (uint32_t i = 0; i < N1; i++) {
    wait_ok(p.q, tok[i]);
  }
  assert_int_equal(read_u32(&p, 2 + N1, b), 1 + N1); /* the last seq wrote last */
  uint64_t base = 3 + N1;
  for (uint32_t i = 0; i < N2; i++) { /* highest seq first */
    uint64_t seq = base + N2 - 1 - i;
    gl_request m = r_memset32(&p, seq, b, (uint32_t)seq);
    tok[N1 + i] = send_req(p.q, &m);
  }
  for (uint32_t i = 0; i < N2; i++) {
    wait_ok(p.q, tok[N1 + i]);
  }
  printf("%d pipelined ops in %.2f s\n", N1 + N2, now_s() - t0);
  assert_int_equal(read_u32(&p, base + N2, b), base + N2 - 1);
  free(tok);
  close_peer(&p, base + N2 + 1);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* "a session holds at most 4096 ops waiting ... one more is refused with
 * BUSY" and its seq stays unused. 4097 held ops need more streams than one
 * connection's window: five connections share the work. */
static void test_held_limit_is_busy(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "60000");
  peer p = open_peer(&d, 1 << 20);
  uint64_t b = alloc_buf(&p, 1, 4096, NULL);
  enum { HELD = 4096, CONNS = 5 };
  gl_qclient *q[CONNS];
  for (int i = 0; i < CONNS; i++) q[i] = dial(&d, 60000);
  uint64_t *tok = calloc(HELD + 1, sizeof *tok);
  /* seqs 3 .. 3+HELD-1 are held (2 is missing); the next one is refused. */
  for (uint32_t i = 0; i < HELD; i++) {
    gl_request m = r_memset32(&p, 3 + i, b, 3 + i);
    tok[i] = send_req(q[i % CONNS], &m);
  }
  /* Let each connection deliver its ops: a request sent after them on the
   * same connection is answered once they have been read. */
  for (int i = 0; i < CONNS; i++) {
    gl_request inv = {.op = GL_OP_GET_INVENTORY};
    call_ok(q[i], &inv);
  }
  gl_request over = r_memset32(&p, 3 + HELD, b, 3 + HELD);
  reply x = call(p.q, &over);
  expect(&x, GPULEASE_BUSY, "seq stays unused");
  reply_free(&x);
  gl_request s2 = r_sync(&p, 2, 0);
  call_ok(p.q, &s2);
  for (uint32_t i = 0; i < HELD; i++) {
    wait_ok(q[i % CONNS], tok[i]);
  }
  /* The refused seq was not used: sent again, it runs. */
  call_ok(p.q, &over);
  assert_int_equal(read_u32(&p, 4 + HELD, b), 3 + HELD);
  for (int i = 0; i < CONNS; i++) gl_qclient_del(q[i]);
  free(tok);
  close_peer(&p, 5 + HELD);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * BATCH
 * ==================================================================== */

/* A BATCH of the n ops (refs filled), its first seq that of ops[0]. */
static uint64_t send_batch(const peer *p, gl_request *ops, int n, gl_buf *list) {
  gl_buf_init(list);
  for (int i = 0; i < n; i++) assert_int_equal(gl_batch_add(list, &ops[i]), GPULEASE_OK);
  gl_request b = {.op = GL_OP_BATCH};
  b.u.batch.s = *gl_request_session(&ops[0]);
  b.u.batch.count = (uint16_t)n;
  b.u.batch.ops = list->data;
  b.u.batch.ops_len = list->len;
  return send_req(p->q, &b);
}

/* The i-th reply of a BATCH reply. */
static gl_response batch_reply(const reply *x, int i) {
  size_t pos = 0, len = 0;
  const uint8_t *m = NULL;
  for (int k = 0; k <= i; k++)
    assert_true(gl_batch_next(x->r.u.batch.replies, x->r.u.batch.replies_len, &pos, &m, &len));
  gl_response r;
  assert_int_equal(gl_response_decode(m, len, len, &r, NULL, 0), GPULEASE_OK);
  return r;
}

static void expect_r(const gl_response *r, uint16_t op, gpulease_status st, const char *needle) {
  if (r->op != op || r->status != st ||
      (needle && !memmem(r->msg, r->msg_len, needle, strlen(needle))))
    fprintf(stderr, "reply: got %s %s '%.*s', want %s %s with '%s'\n", gl_op_name(r->op),
            gpulease_status_name(r->status), (int)r->msg_len, r->msg, gl_op_name(op),
            gpulease_status_name(st), needle ? needle : "");
  assert_int_equal(r->op, op);
  assert_int_equal(r->status, st);
  if (needle) assert_non_null(memmem(r->msg, r->msg_len, needle, strlen(needle)));
}


/* ======================================================================
 * A lost context
 * ==================================================================== */

static const char k_ptx_poke[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry poke(.param .u64 p)\n{\n"
    "  .reg .b64 %rd<2>;\n  .reg .b32 %r<2>;\n"
    "  ld.param.u64 %rd1, [p];\n  mov.u32 %r1, 7;\n  st.global.u32 [%rd1], %r1;\n  ret;\n}\n";

static const char k_ptx_nop[] =
    ".version 8.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry nop(.param .u64 p)\n{\n  ret;\n}\n";

static uint64_t load_module(const peer *p, uint64_t seq, const char *ptx, uint8_t *cache) {
  gl_request q = {.op = GL_OP_MODULE_LOAD};
  q.u.module_load.s = ref(p, seq);
  q.u.module_load.image_format = GPULEASE_IMAGE_PTX;
  q.u.module_load.image = (const uint8_t *)ptx;
  q.u.module_load.image_len = (uint32_t)strlen(ptx);
  reply x = call(p->q, &q);
  expect(&x, GPULEASE_OK, NULL);
  uint64_t m = x.r.u.module_load.module;
  if (cache) *cache = x.r.u.module_load.cache;
  reply_free(&x);
  return m;
}

static gl_func_info_resp func_info(const peer *p, uint64_t seq, uint64_t module,
                                   const char *name) {
  gl_request q = {.op = GL_OP_FUNC_INFO};
  q.u.func_info.s = ref(p, seq);
  q.u.func_info.module = module;
  q.u.func_info.kernel_name = name;
  q.u.func_info.kernel_name_len = (uint16_t)strlen(name);
  reply x = call(p->q, &q);
  expect(&x, GPULEASE_OK, NULL);
  gl_func_info_resp fi = x.r.u.func_info;
  reply_free(&x);
  return fi;
}

static gl_request r_launch1(const peer *p, uint64_t seq, uint64_t fn, gl_buf *params,
                            uint64_t scalar) {
  gl_request q = {.op = GL_OP_LAUNCH};
  q.u.launch.s = ref(p, seq);
  q.u.launch.function = fn;
  for (int i = 0; i < 3; i++) q.u.launch.grid[i] = q.u.launch.block[i] = 1;
  gl_buf_init(params);
  gl_launch_param lp = {.kind = GL_LAUNCH_PARAM_SCALAR, .size = 8, .value = (uint8_t *)&scalar};
  assert_int_equal(gl_launch_param_put(params, &lp), GPULEASE_OK);
  q.u.launch.param_count = 1;
  q.u.launch.params_raw = params->data;
  q.u.launch.params_raw_len = params->len;
  return q;
}

/* "A lost context ends every session of the lease"; the lease goes on. */
static void test_lost_context_ends_sessions(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "10000");
  peer a = open_peer(&d, 1 << 20);
  peer bp = a;
  bp.session = session_open(a.q, &a.auth);
  uint64_t buf_b = alloc_buf(&bp, 1, 4096, NULL);
  gl_request mb = r_memset32(&bp, 2, buf_b, 5);
  call_ok(a.q, &mb);

  uint64_t mod = load_module(&a, 1, k_ptx_poke, NULL);
  uint64_t fn = func_info(&a, 2, mod, "poke").function;
  gl_buf params;
  gl_request l3 = r_launch1(&a, 3, fn, &params, 16); /* 16 is no device address */
  reply x = call(a.q, &l3);
  gl_buf_free(&params);
  expect(&x, GPULEASE_OK, NULL); /* answered once queued */
  reply_free(&x);

  /* A's SYNC reports the fault, put down to its LAUNCH. */
  gl_request s4 = r_sync(&a, 4, 0);
  x = call(a.q, &s4);
  expect(&x, GPULEASE_OK, "CUDA_ERROR_ILLEGAL_ADDRESS");
  expect(&x, GPULEASE_OK, "close it (SESSION_CLOSE) and open a new session");
  assert_int_equal(x.r.u.sync.error_status, GPULEASE_LAUNCH_FAILED);
  assert_int_equal(x.r.u.sync.error_op, GL_OP_LAUNCH);
  assert_int_equal(x.r.u.sync.error_seq, 3);
  reply_free(&x);

  /* A new session works at once, with all of the lease's VRAM. */
  peer c = a;
  c.session = session_open(a.q, &a.auth);
  alloc_buf(&c, 1, 1 << 20, NULL);

  /* B ended too: its ops fail with a message that says what to do. */
  char want[128];
  snprintf(want, sizeof want, "session %" PRIu64 " ended when the lease's CUDA context was lost",
           bp.session);
  gl_request rb = r_read(&bp, 3, buf_b, 4);
  x = call(a.q, &rb);
  expect(&x, GPULEASE_LAUNCH_FAILED, want);
  expect(&x, GPULEASE_LAUNCH_FAILED, "close it (SESSION_CLOSE) and open a new session");
  reply_free(&x);
  gl_request sb = r_sync(&bp, 4, 0);
  x = call(a.q, &sb);
  expect(&x, GPULEASE_OK, want);
  assert_int_equal(x.r.u.sync.error_status, GPULEASE_LAUNCH_FAILED);
  assert_int_equal(x.r.u.sync.error_op, 0);
  assert_int_equal(x.r.u.sync.error_seq, 0);
  reply_free(&x);
  /* A BATCH on the ended session: each op answered as alone. */
  gl_request bb[2] = {r_memset32(&bp, 5, buf_b, 1), r_sync(&bp, 6, 0)};
  gl_buf blist;
  x = wait_reply(a.q, send_batch(&bp, bb, 2, &blist));
  gl_buf_free(&blist);
  expect(&x, GPULEASE_OK, NULL);
  gl_response e0 = batch_reply(&x, 0), e1 = batch_reply(&x, 1);
  expect_r(&e0, GL_OP_MEMSET, GPULEASE_LAUNCH_FAILED, want);
  expect_r(&e1, GL_OP_SYNC, GPULEASE_OK, want);
  assert_int_equal(e1.u.sync.error_status, GPULEASE_LAUNCH_FAILED);
  reply_free(&x);
  /* The failure cannot be acknowledged. */
  gl_request ack = r_sync(&a, 5, GL_SYNC_ACK_ANY);
  x = call(a.q, &ack);
  expect(&x, GPULEASE_LAUNCH_FAILED, "close it");
  reply_free(&x);
  /* Closing forgets it; later ops get NOT_FOUND. */
  gl_request ca = r_close(&a, 6);
  call_ok(a.q, &ca);
  gl_request after = r_sync(&a, 7, 0);
  x = call(a.q, &after);
  expect(&x, GPULEASE_NOT_FOUND, NULL);
  reply_free(&x);
  gl_request cb = r_close(&bp, 5);
  call_ok(a.q, &cb);

  /* GPU_SUBMIT runs on the fresh context too. */
  gl_request sub = {.op = GL_OP_GPU_SUBMIT};
  sub.u.submit.auth = a.auth;
  sub.u.submit.image_format = GPULEASE_IMAGE_PTX;
  sub.u.submit.kernel_name = "nop";
  sub.u.submit.kernel_name_len = 3;
  for (int i = 0; i < 3; i++) sub.u.submit.grid[i] = sub.u.submit.block[i] = 1;
  sub.u.submit.image = (const uint8_t *)k_ptx_nop;
  sub.u.submit.image_len = (uint32_t)strlen(k_ptx_nop);
  call_ok(a.q, &sub);
  close_peer(&c, 2);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * Memory: region offsets
 * ==================================================================== */

static void test_region_offsets(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "10000");
  peer p = open_peer(&d, 1 << 20);
  uint64_t off[3], buf[3];
  for (int i = 0; i < 3; i++) buf[i] = alloc_buf(&p, 1 + (uint64_t)i, 1000, &off[i]);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(off[i] % 256, 0);
    for (int j = 0; j < i; j++) /* 1000 bytes each, apart */
      assert_true(off[i] >= off[j] + 1000 || off[j] >= off[i] + 1000);
  }
  /* GPU_SUBMIT reads a session buffer at its region offset ... */
  uint8_t pattern[1000];
  for (int i = 0; i < 1000; i++) pattern[i] = (uint8_t)(i * 7 + 1);
  gl_request w = r_write(&p, 4, buf[1], pattern, sizeof pattern);
  call_ok(p.q, &w);
  gl_request s5 = r_sync(&p, 5, 0);
  call_ok(p.q, &s5);
  gl_request sub = {.op = GL_OP_GPU_SUBMIT};
  sub.u.submit.auth = p.auth;
  sub.u.submit.image_format = GPULEASE_IMAGE_PTX;
  sub.u.submit.kernel_name = "nop";
  sub.u.submit.kernel_name_len = 3;
  for (int i = 0; i < 3; i++) sub.u.submit.grid[i] = sub.u.submit.block[i] = 1;
  sub.u.submit.image = (const uint8_t *)k_ptx_nop;
  sub.u.submit.image_len = (uint32_t)strlen(k_ptx_nop);
  sub.u.submit.output_offset = off[1];
  sub.u.submit.output_size = sizeof pattern;
  /* ... and writes its input into another one. */
  uint8_t in[64];
  memset(in, 0xA5, sizeof in);
  sub.u.submit.input = in;
  sub.u.submit.input_len = sizeof in;
  sub.u.submit.input_offset = off[2];
  reply x = call(p.q, &sub);
  expect(&x, GPULEASE_OK, NULL);
  assert_int_equal(x.r.u.submit.output_len, sizeof pattern);
  assert_memory_equal(x.r.u.submit.output, pattern, sizeof pattern);
  reply_free(&x);
  gl_request rd = r_read(&p, 6, buf[2], sizeof in);
  x = call(p.q, &rd);
  expect(&x, GPULEASE_OK, NULL);
  assert_memory_equal(x.r.u.mem_read.data, in, sizeof in);
  reply_free(&x);
  close_peer(&p, 7);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * The smaller rules
 * ==================================================================== */

static void test_smaller_rules(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "10000");
  peer p = open_peer(&d, 1 << 20);
  /* FUNC_INFO's ptx_version is the virtual architecture (.target), not the
   * PTX ISA version (.version 8.0). */
  uint8_t cache1, cache2;
  uint64_t m1 = load_module(&p, 1, k_ptx_nop, &cache1);
  gl_func_info_resp fi = func_info(&p, 2, m1, "nop");
  assert_int_equal(fi.ptx_version, 75);
  assert_int_equal(fi.binary_version, 90);
  /* The same image twice: a new handle, found in the context. */
  uint64_t m2 = load_module(&p, 3, k_ptx_nop, &cache2);
  assert_true(m2 != m1);
  assert_int_equal(cache2, GL_MODULE_CACHE_CONTEXT);
  gl_request un = {.op = GL_OP_MODULE_UNLOAD};
  un.u.handle.s = ref(&p, 4);
  un.u.handle.handle = m1;
  call_ok(p.q, &un);
  uint64_t fn2 = func_info(&p, 5, m2, "nop").function; /* m2 still loaded */
  assert_true(fn2 != 0);

  /* Fail-fast forms: a numbered op ... */
  uint64_t b = alloc_buf(&p, 6, 64, NULL);
  gl_request bad = {.op = GL_OP_MEM_FREE};
  bad.u.handle.s = ref(&p, 7);
  bad.u.handle.handle = b ^ 1;
  reply x = call(p.q, &bad);
  expect(&x, GPULEASE_INVALID_HANDLE, NULL);
  reply_free(&x);
  gl_request m8 = r_memset32(&p, 8, b, 1);
  x = call(p.q, &m8);
  expect(&x, GPULEASE_INVALID_HANDLE,
         "op 7 (MEM_FREE) failed earlier: ");
  expect(&x, GPULEASE_INVALID_HANDLE, "; SYNC with ack_seq 7 to go on");
  reply_free(&x);
  gl_request s9 = r_sync(&p, 9, 7);
  call_ok(p.q, &s9);
  /* ... and an op sent with seq 0. */
  bad.u.handle.s = ref(&p, 0);
  x = call(p.q, &bad);
  expect(&x, GPULEASE_INVALID_HANDLE, NULL);
  reply_free(&x);
  gl_request m0 = r_memset32(&p, 0, b, 1);
  x = call(p.q, &m0);
  expect(&x, GPULEASE_INVALID_HANDLE, "an earlier MEM_FREE sent with seq 0 failed: ");
  expect(&x, GPULEASE_INVALID_HANDLE,
         "; SYNC with ack_seq 0xffffffffffffffff (any) to go on");
  reply_free(&x);
  gl_request s10 = r_sync(&p, 10, GL_SYNC_ACK_ANY);
  call_ok(p.q, &s10);

  /* After SESSION_CLOSE: an op held behind it, and one sent after it. */
  gl_request m13 = r_memset32(&p, 13, b, 1); /* held: 11, 12 missing */
  uint64_t t13 = send_req(p.q, &m13);
  gl_request s11 = r_sync(&p, 11, 0);
  call_ok(p.q, &s11);
  gl_request c12 = r_close(&p, 12);
  call_ok(p.q, &c12);
  x = wait_reply(p.q, t13);
  expect(&x, GPULEASE_NOT_FOUND, "no session");
  reply_free(&x);
  gl_request m14 = r_memset32(&p, 14, b, 1);
  x = call(p.q, &m14);
  expect(&x, GPULEASE_NOT_FOUND, "no session");
  reply_free(&x);
  gl_request f = {.op = GL_OP_LEASE_FREE};
  f.u.auth = p.auth;
  call_ok(p.q, &f);
  gl_qclient_del(p.q);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* "BATCH": its ops run as if they came one after another, and it is
 * answered with their replies in order; it takes its seqs at once or not. */
static void test_batch_rules(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "10000");
  peer p = open_peer(&d, 1 << 20);
  uint64_t b = alloc_buf(&p, 1, 4096, NULL);
  gl_buf list;

  /* MEMSET, MEM_READ, SYNC in one request. */
  gl_request ops[3] = {r_memset32(&p, 2, b, 0x41414141), r_read(&p, 3, b, 4), r_sync(&p, 4, 0)};
  reply x = wait_reply(p.q, send_batch(&p, ops, 3, &list));
  gl_buf_free(&list);
  expect(&x, GPULEASE_OK, NULL);
  assert_int_equal(x.r.u.batch.count, 3);
  gl_response r0 = batch_reply(&x, 0), r1 = batch_reply(&x, 1), r2 = batch_reply(&x, 2);
  expect_r(&r0, GL_OP_MEMSET, GPULEASE_OK, NULL);
  expect_r(&r1, GL_OP_MEM_READ, GPULEASE_OK, NULL);
  assert_memory_equal(r1.u.mem_read.data, "AAAA", 4);
  expect_r(&r2, GL_OP_SYNC, GPULEASE_OK, NULL);
  assert_int_equal(r2.u.sync.error_status, 0);
  reply_free(&x);

  /* Held while seq 5 is missing, then run after it. */
  gl_request held[2] = {r_memset32(&p, 6, b, 6), r_read(&p, 7, b, 4)};
  uint64_t th = send_batch(&p, held, 2, &list);
  gl_buf_free(&list);
  gl_request m5 = r_memset32(&p, 5, b, 5);
  call_ok(p.q, &m5);
  x = wait_reply(p.q, th);
  expect(&x, GPULEASE_OK, NULL);
  r1 = batch_reply(&x, 1);
  uint32_t v;
  memcpy(&v, r1.u.mem_read.data, 4);
  assert_int_equal(v, 6);
  reply_free(&x);

  /* A used seq refuses the whole batch, which uses none of its seqs. */
  gl_request reuse[2] = {r_sync(&p, 7, 0), r_sync(&p, 8, 0)};
  x = wait_reply(p.q, send_batch(&p, reuse, 2, &list));
  gl_buf_free(&list);
  expect(&x, GPULEASE_INVALID_ARGUMENT, "seq 7 was already used");
  reply_free(&x);

  /* A failure inside: the ops after it fail fast, SYNC reports it. */
  gl_request fail[3] = {r_memset32(&p, 8, b ^ 1, 1), r_memset32(&p, 9, b, 2), r_sync(&p, 10, 0)};
  x = wait_reply(p.q, send_batch(&p, fail, 3, &list));
  gl_buf_free(&list);
  expect(&x, GPULEASE_OK, NULL);
  r0 = batch_reply(&x, 0), r1 = batch_reply(&x, 1), r2 = batch_reply(&x, 2);
  expect_r(&r0, GL_OP_MEMSET, GPULEASE_INVALID_HANDLE, "is not a buffer");
  expect_r(&r1, GL_OP_MEMSET, GPULEASE_INVALID_HANDLE, "op 8 (MEMSET) failed earlier");
  expect_r(&r2, GL_OP_SYNC, GPULEASE_OK, NULL);
  assert_int_equal(r2.u.sync.error_status, GPULEASE_INVALID_HANDLE);
  assert_int_equal(r2.u.sync.error_op, GL_OP_MEMSET);
  assert_int_equal(r2.u.sync.error_seq, 8);
  reply_free(&x);
  gl_request ack = r_sync(&p, 11, 8);
  call_ok(p.q, &ack);

  /* An unordered batch (every seq 0). */
  gl_request un[2] = {r_memset32(&p, 0, b, 0x77), r_read(&p, 0, b, 4)};
  x = wait_reply(p.q, send_batch(&p, un, 2, &list));
  gl_buf_free(&list);
  r1 = batch_reply(&x, 1);
  memcpy(&v, r1.u.mem_read.data, 4);
  assert_int_equal(v, 0x77);
  reply_free(&x);

  /* SESSION_CLOSE inside: the ops after it get NOT_FOUND. */
  gl_request last[3] = {r_sync(&p, 12, 0), r_close(&p, 13), r_memset32(&p, 14, b, 1)};
  x = wait_reply(p.q, send_batch(&p, last, 3, &list));
  gl_buf_free(&list);
  expect(&x, GPULEASE_OK, NULL);
  r1 = batch_reply(&x, 1), r2 = batch_reply(&x, 2);
  expect_r(&r1, GL_OP_SESSION_CLOSE, GPULEASE_OK, NULL);
  expect_r(&r2, GL_OP_MEMSET, GPULEASE_NOT_FOUND, "no session");
  reply_free(&x);
  gl_request f = {.op = GL_OP_LEASE_FREE};
  f.u.auth = p.auth;
  call_ok(p.q, &f);
  gl_qclient_del(p.q);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* The whole message of a reply is `want`. */
static void expect_msg(const reply *p, gpulease_status st, const char *want) {
  if (p->r.status != st || p->r.msg_len != strlen(want) || memcmp(p->r.msg, want, p->r.msg_len))
    fprintf(stderr, "got %s '%.*s', want %s '%s'\n", gpulease_status_name(p->r.status),
            (int)p->r.msg_len, p->r.msg, gpulease_status_name(st), want);
  assert_int_equal(p->r.status, st);
  assert_int_equal(p->r.msg_len, strlen(want));
  assert_memory_equal(p->r.msg, want, p->r.msg_len);
}

/* The messages protocol.md quotes, word for word: an internal op from the
 * network (on its header, whatever its body), a session that is not
 * there, the fail-fast forms naming the op. */
static void test_doc_messages(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "10000");
  peer p = open_peer(&d, 1 << 20);
  char want[1024];
  /* Internal ops: a WORKER_INIT cut short, a whole MEM_WRITE_ARENA, a
   * WORKER_RELEASE. */
  uint8_t m[GL_WIRE_HEADER_SIZE + 8] = {GL_WIRE_MAGIC0, GL_WIRE_MAGIC1, GL_WIRE_VERSION,
                                        GL_WIRE_KIND_REQUEST, 0x7F, 0x01, 0, 0, 0, 0, 0, 8};
  uint64_t tok;
  char err[256];
  assert_int_equal(gl_qclient_send(p.q, m, sizeof m, &tok, err, sizeof err), GL_QC_OK);
  reply x = wait_reply(p.q, tok);
  expect_msg(&x, GPULEASE_UNSUPPORTED,
             "op 0x7f01 (WORKER_INIT) is internal to the daemon and its workers, not served "
             "over the network");
  reply_free(&x);
  gl_request q = {.op = GL_OP_MEM_WRITE_ARENA};
  q.u.mem_shm.s = ref(&p, 0);
  q.u.mem_shm.buffer = q.u.mem_shm.segment = 1;
  q.u.mem_shm.size_bytes = 4096;
  x = call(p.q, &q);
  expect_msg(&x, GPULEASE_UNSUPPORTED,
             "op 0x7f04 (MEM_WRITE_ARENA) is internal to the daemon and its workers, not "
             "served over the network");
  reply_free(&x);
  gl_request rel = {.op = GL_OP_WORKER_RELEASE};
  rel.u.worker_init.lease_id = p.auth.lease_id;
  x = call(p.q, &rel);
  expect_msg(&x, GPULEASE_UNSUPPORTED,
             "op 0x7f07 (WORKER_RELEASE) is internal to the daemon and its workers, not "
             "served over the network");
  reply_free(&x);
  /* A session never opened. */
  peer other = p;
  other.session = p.session + 1000;
  gl_request s1 = r_sync(&other, 1, 0);
  x = call(p.q, &s1);
  snprintf(want, sizeof want, "no session %" PRIu64 " on lease %" PRIu64
           " (never opened, or closed)", other.session, p.auth.lease_id);
  expect_msg(&x, GPULEASE_NOT_FOUND, want);
  reply_free(&x);
  /* Fail fast after a numbered op, named by its name. */
  gl_request bad = {.op = GL_OP_MEM_FREE};
  bad.u.handle.s = ref(&p, 1);
  bad.u.handle.handle = 0x12345;
  x = call(p.q, &bad);
  expect(&x, GPULEASE_INVALID_HANDLE, NULL);
  char first[512];
  snprintf(first, sizeof first, "%.*s", (int)x.r.msg_len, x.r.msg);
  reply_free(&x);
  gl_request m2 = r_memset32(&p, 2, 0x12345, 1);
  x = call(p.q, &m2);
  snprintf(want, sizeof want, "op 1 (MEM_FREE) failed earlier: %s; SYNC with ack_seq 1 to go on",
           first);
  expect_msg(&x, GPULEASE_INVALID_HANDLE, want);
  reply_free(&x);
  gl_request ack = r_sync(&p, 3, 1);
  call_ok(p.q, &ack);
  /* A closed session: the same words. */
  gl_request c4 = r_close(&p, 4);
  call_ok(p.q, &c4);
  gl_request s5 = r_sync(&p, 5, 0);
  x = call(p.q, &s5);
  snprintf(want, sizeof want, "no session %" PRIu64 " on lease %" PRIu64
           " (never opened, or closed)", p.session, p.auth.lease_id);
  expect_msg(&x, GPULEASE_NOT_FOUND, want);
  reply_free(&x);
  gl_request f = {.op = GL_OP_LEASE_FREE};
  f.u.auth = p.auth;
  call_ok(p.q, &f);
  gl_qclient_del(p.q);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

static gl_request r_launch_ex(const peer *p, uint64_t seq, uint64_t fn, gl_buf *params,
                              uint32_t grid_x, uint8_t flags, uint32_t cluster_x) {
  gl_request q = r_launch1(p, seq, fn, params, 0);
  q.op = GL_OP_LAUNCH_EX;
  q.u.launch.grid[0] = grid_x;
  q.u.launch.flags = flags;
  if (cluster_x) q.u.launch.cluster[0] = cluster_x, q.u.launch.cluster[1] = 1,
                 q.u.launch.cluster[2] = 1;
  return q;
}

/* A request refused by the daemon before the session sees it: its
 * encoded bytes, one byte changed at body offset `at`, sent raw. */
static reply call_patched(const peer *p, const gl_request *good, size_t at, uint8_t v) {
  gl_buf enc;
  gl_buf_init(&enc);
  assert_int_equal(gl_request_encode(good, &enc), GPULEASE_OK);
  enc.data[GL_WIRE_HEADER_SIZE + at] = v;
  uint64_t tok;
  char err[256];
  assert_int_equal(gl_qclient_send(p->q, enc.data, enc.len, &tok, err, sizeof err), GL_QC_OK);
  gl_buf_free(&enc);
  return wait_reply(p->q, tok);
}

/* "MEM_ALLOC (0x0311)": the 72-byte body's result is 16 bytes, as before
 * the flags; flags bit 0 gives 24, device_address - region_offset the same
 * region base for every buffer, in a BATCH too; an unknown flag bit and a
 * byte past the flags are decoder refusals, which leave the seq unused. */
static uint32_t result_len(const reply *x) {
  gl_header h;
  assert_int_equal(gl_header_decode(x->raw, GL_WIRE_HEADER_SIZE, &h), GPULEASE_OK);
  return h.body_len - 2 - x->r.msg_len; /* after msg_len and msg */
}

static void test_mem_alloc_address_contract(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "10000");
  peer p = open_peer(&d, 1 << 20);
  gl_request q = r_alloc(&p, 1, 1000);
  reply x = call(p.q, &q);
  expect(&x, GPULEASE_OK, NULL);
  assert_int_equal(result_len(&x), 16);
  assert_false(x.r.u.mem_alloc.has_device_address);
  reply_free(&x);
  uint64_t base = 0;
  for (uint64_t seq = 2; seq <= 3; seq++) {
    q = r_alloc(&p, seq, 1000);
    q.u.mem_alloc.has_flags = true;
    q.u.mem_alloc.flags = GL_MEM_ALLOC_F_ADDRESS;
    x = call(p.q, &q);
    expect(&x, GPULEASE_OK, NULL);
    assert_int_equal(result_len(&x), 24);
    assert_true(x.r.u.mem_alloc.has_device_address);
    uint64_t b = x.r.u.mem_alloc.device_address - x.r.u.mem_alloc.region_offset;
    assert_true(x.r.u.mem_alloc.region_offset >= 1024 * (seq - 1)); /* after the 1000 bytes */
    if (seq == 2) base = b;
    assert_true(base != 0);
    assert_int_equal(b, base);
    reply_free(&x);
  }
  /* Flags 0 written out (76 bytes): the 16-byte result. */
  q = r_alloc(&p, 4, 256);
  q.u.mem_alloc.has_flags = true;
  x = call(p.q, &q);
  expect(&x, GPULEASE_OK, NULL);
  assert_int_equal(result_len(&x), 16);
  reply_free(&x);
  /* Flags bit 1 (the u32 at body offset 72, its low byte at 75). */
  q = r_alloc(&p, 5, 256);
  q.u.mem_alloc.has_flags = true;
  q.u.mem_alloc.flags = GL_MEM_ALLOC_F_ADDRESS;
  x = call_patched(&p, &q, 75, 0x02);
  expect(&x, GPULEASE_INVALID_ARGUMENT,
         "MEM_ALLOC: flags 0x00000002: only bit 0 (the device address) is defined");
  reply_free(&x);
  /* A byte past the flags: a field of a newer release. */
  gl_buf enc;
  gl_buf_init(&enc);
  assert_int_equal(gl_request_encode(&q, &enc), GPULEASE_OK);
  assert_int_equal(enc.len, GL_WIRE_HEADER_SIZE + 76);
  uint8_t longer[GL_WIRE_HEADER_SIZE + 77];
  memcpy(longer, enc.data, enc.len);
  gl_buf_free(&enc);
  longer[sizeof longer - 1] = 0;
  longer[11] = 77; /* body_len */
  uint64_t tok;
  char err[256];
  assert_int_equal(gl_qclient_send(p.q, longer, sizeof longer, &tok, err, sizeof err), GL_QC_OK);
  x = wait_reply(p.q, tok);
  expect(&x, GPULEASE_UNSUPPORTED, "MEM_ALLOC: 1 bytes after the last field this daemon knows "
                                   "(flags): a field of a newer release?");
  reply_free(&x);
  /* Neither used seq 5: a SYNC fills it at once. */
  gl_request s5 = r_sync(&p, 5, 0);
  x = call(p.q, &s5);
  expect(&x, GPULEASE_OK, NULL);
  assert_int_equal(x.r.u.sync.error_status, 0);
  reply_free(&x);
  /* In a BATCH: each MEM_ALLOC's result as its own request asked. */
  gl_request ops[3] = {r_alloc(&p, 6, 512), r_alloc(&p, 7, 512), r_sync(&p, 8, 0)};
  ops[0].u.mem_alloc.has_flags = true;
  ops[0].u.mem_alloc.flags = GL_MEM_ALLOC_F_ADDRESS;
  gl_buf list;
  x = wait_reply(p.q, send_batch(&p, ops, 3, &list));
  gl_buf_free(&list);
  expect(&x, GPULEASE_OK, NULL);
  gl_response r0 = batch_reply(&x, 0), r1 = batch_reply(&x, 1);
  expect_r(&r0, GL_OP_MEM_ALLOC, GPULEASE_OK, NULL);
  expect_r(&r1, GL_OP_MEM_ALLOC, GPULEASE_OK, NULL);
  assert_true(r0.u.mem_alloc.has_device_address);
  assert_int_equal(r0.u.mem_alloc.device_address - r0.u.mem_alloc.region_offset, base);
  assert_false(r1.u.mem_alloc.has_device_address);
  reply_free(&x);
  close_peer(&p, 9);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* Section 6's field limits, one row each, as the daemon's decoder applies
 * them (built by hand where the encoder would refuse them first). */
static void test_decoder_limits_table(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "10000");
  peer p = open_peer(&d, 1 << 20);
  gl_request sub = {.op = GL_OP_GPU_SUBMIT};
  sub.u.submit.auth = p.auth;
  sub.u.submit.image_format = GPULEASE_IMAGE_PTX;
  sub.u.submit.kernel_name = "nop";
  sub.u.submit.kernel_name_len = 3;
  for (int i = 0; i < 3; i++) sub.u.submit.grid[i] = sub.u.submit.block[i] = 1;
  sub.u.submit.image = (const uint8_t *)k_ptx_nop;
  sub.u.submit.image_len = (uint32_t)strlen(k_ptx_nop);
  /* GPU_SUBMIT flags: bits 0..3 (bit 3, the kernel output, taken) ... */
  sub.u.submit.flags = GL_SUBMIT_F_KOUT;
  {
    uint8_t *raw = NULL;
    size_t rlen = 0;
    char err[256];
    assert_int_equal(gl_qclient_wait(p.q, send_req(p.q, &sub), &raw, &rlen, err, sizeof err),
                     GL_QC_OK);
    gl_header h;
    assert_int_equal(gl_header_decode(raw, rlen, &h), GPULEASE_OK);
    assert_int_equal(h.status, GPULEASE_OK);
    /* msg_len 0, gpu_time_ns, output_len 0, then the 13-byte kout block */
    assert_int_equal(h.body_len, 2 + 8 + 4 + 13);
    free(raw);
  }
  reply x;
  /* ... and no other (flags at body offset 49). */
  x = call_patched(&p, &sub, 49, 0x10);
  expect(&x, GPULEASE_INVALID_ARGUMENT, "flags 0x10 has unknown bits 0x10");
  reply_free(&x);
  /* Its cluster (flags bit 2: u32 x3 at 80 + N, N = 3): each >= 1. */
  sub.u.submit.flags = GL_SUBMIT_F_CLUSTER;
  sub.u.submit.cluster[0] = sub.u.submit.cluster[1] = sub.u.submit.cluster[2] = 1;
  x = call_patched(&p, &sub, 83 + 7, 0);
  expect(&x, GPULEASE_INVALID_ARGUMENT, "cluster (1,0,1): each dimension must be at least 1");
  reply_free(&x);
  /* LAUNCH_EX's cluster (u32 x3 at 101): all 0, or each >= 1. */
  uint64_t mod = load_module(&p, 1, k_ptx_nop, NULL);
  uint64_t fn = func_info(&p, 2, mod, "nop").function;
  gl_buf params;
  gl_request l = r_launch_ex(&p, 3, fn, &params, 2, 0, 2);
  x = call_patched(&p, &l, 105 + 3, 0);
  gl_buf_free(&params);
  expect(&x, GPULEASE_INVALID_ARGUMENT, "cluster (2,0,1): each dimension must be at least 1");
  reply_free(&x);
  /* EVENT_ELAPSED end_event (u16 at 66): 0..255. */
  gl_request e = {.op = GL_OP_EVENT_ELAPSED};
  e.u.event.s = ref(&p, 3);
  x = call_patched(&p, &e, 66, 1);
  expect(&x, GPULEASE_INVALID_ARGUMENT, "end_event 256 out of range 0..255");
  reply_free(&x);
  /* GRAPH_BEGIN without WHILE: flag_offset (u64 at 73) must be 0. */
  gl_request g = {.op = GL_OP_GRAPH_BEGIN};
  g.u.graph_begin.s = ref(&p, 3);
  x = call_patched(&p, &g, 80, 4);
  expect(&x, GPULEASE_INVALID_ARGUMENT, "must be 0 without the WHILE flag");
  reply_free(&x);
  /* TENSORMAP_ENCODE: data_type (u32 at 64) 0..12, rank (u32 at 68) 1..5. */
  gl_request t = {.op = GL_OP_TENSORMAP_ENCODE};
  t.u.tmap.s = ref(&p, 3);
  t.u.tmap.data_type = 7;
  t.u.tmap.rank = 1;
  t.u.tmap.buffer = 1;
  t.u.tmap.global_dim[0] = 16;
  t.u.tmap.box_dim[0] = 16;
  t.u.tmap.element_strides[0] = 1;
  x = call_patched(&p, &t, 67, 13);
  expect(&x, GPULEASE_INVALID_ARGUMENT, "data_type 13 out of range 0..12");
  reply_free(&x);
  x = call_patched(&p, &t, 71, 6);
  expect(&x, GPULEASE_INVALID_ARGUMENT, "rank 6 out of range 1..5");
  reply_free(&x);
  /* A slot past the rank (global_dim[1], u64 at 96) must be 0. */
  x = call_patched(&p, &t, 103, 1);
  expect(&x, GPULEASE_INVALID_ARGUMENT, "is past rank 1");
  reply_free(&x);
  /* None of these used seq 3. */
  gl_request s3 = r_sync(&p, 3, 0);
  call_ok(p.q, &s3);
  close_peer(&p, 4);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * Refusals and their seqs ("Ordering": which refusals use the seq)
 * ==================================================================== */

/* SYNC with ack_seq `failed` at seq `seq`: answered at once (the session
 * does not wait for a refused seq), reporting the failure of op `op`. */
static void sync_reports(const peer *p, uint64_t seq, uint64_t failed, gpulease_status st,
                         uint16_t op) {
  double t0 = now_s();
  gl_request s = r_sync(p, seq, failed);
  reply y = call(p->q, &s);
  expect(&y, GPULEASE_OK, NULL);
  assert_int_equal(y.r.u.sync.error_status, st);
  assert_int_equal(y.r.u.sync.error_op, op);
  assert_int_equal(y.r.u.sync.error_seq, failed);
  reply_free(&y);
  assert_true(now_s() - t0 < 5.0); /* not the 10 s seq timeout */
}

/* "LAUNCH_EX": a cooperative grid too large for the device, a grid that is
 * not a whole number of clusters, a cluster over the portable 8 blocks are
 * refused in LAUNCH_EX's own answer (not at the next SYNC), as GPU_SUBMIT
 * refuses them; each refusal uses its seq (the session's failure), so the
 * next seq goes on at once. */
static void test_launch_ex_refused_up_front(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "10000");
  peer p = open_peer(&d, 1 << 20);
  uint64_t mod = load_module(&p, 1, k_ptx_nop, NULL);
  uint64_t fn = func_info(&p, 2, mod, "nop").function;
  uint64_t seq = 3;
  struct {
    uint32_t grid;
    uint8_t flags;
    uint32_t cluster;
    const char *why;
  } bad[] = {
      {1u << 20, GL_LAUNCH_EX_COOPERATIVE, 0, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"},
      {8, 0, 3, "CUDA_ERROR_INVALID_CLUSTER_SIZE"},
      {16, 0, 16, "CUDA_ERROR_INVALID_CLUSTER_SIZE"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gl_buf params;
    gl_request l = r_launch_ex(&p, seq, fn, &params, bad[i].grid, bad[i].flags, bad[i].cluster);
    reply x = call(p.q, &l);
    gl_buf_free(&params);
    expect(&x, GPULEASE_INVALID_ARGUMENT, bad[i].why);
    assert_int_equal(x.r.op, GL_OP_LAUNCH_EX);
    reply_free(&x);
    /* Its seq is used: sent again, it is refused as such ... */
    gl_request again = r_sync(&p, seq, 0);
    x = call(p.q, &again);
    expect(&x, GPULEASE_INVALID_ARGUMENT, "already used");
    reply_free(&x);
    /* ... and the next seq runs at once, the refusal its failure. */
    sync_reports(&p, seq + 1, seq, GPULEASE_INVALID_ARGUMENT, GL_OP_LAUNCH_EX);
    seq += 2;
  }
  /* What fits runs. */
  gl_buf params;
  gl_request ok = r_launch_ex(&p, seq++, fn, &params, 4, GL_LAUNCH_EX_COOPERATIVE, 2);
  call_ok(p.q, &ok);
  gl_buf_free(&params);
  sync_reports(&p, seq++, 0, GPULEASE_OK, 0);
  /* GPU_SUBMIT with the same attributes: the same check, the same answer. */
  gl_request sub = {.op = GL_OP_GPU_SUBMIT};
  sub.u.submit.auth = p.auth;
  sub.u.submit.image_format = GPULEASE_IMAGE_PTX;
  sub.u.submit.kernel_name = "nop";
  sub.u.submit.kernel_name_len = 3;
  for (int i = 0; i < 3; i++) sub.u.submit.grid[i] = sub.u.submit.block[i] = 1;
  sub.u.submit.grid[0] = 16;
  sub.u.submit.flags = GL_SUBMIT_F_CLUSTER;
  sub.u.submit.cluster[0] = 16;
  sub.u.submit.cluster[1] = sub.u.submit.cluster[2] = 1;
  sub.u.submit.image = (const uint8_t *)k_ptx_nop;
  sub.u.submit.image_len = (uint32_t)strlen(k_ptx_nop);
  reply x = call(p.q, &sub);
  expect(&x, GPULEASE_INVALID_ARGUMENT, "CUDA_ERROR_INVALID_CLUSTER_SIZE");
  reply_free(&x);
  close_peer(&p, seq);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* "A refused request does not use its seq" for every refusal of the
 * daemon's decoder: LAUNCH_EX's flags, an EVENT slot, GRAPH_BEGIN's
 * flags, a BATCH's count and a BURST's count (the daemon reads only a
 * BURST's session_ref and count). Each time the same seq is sent again and
 * the op held behind it runs, without MISSING_SEQ. */
static void test_decoder_refusals_leave_seq_unused(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "10000");
  peer p = open_peer(&d, 1 << 20);
  uint64_t b = alloc_buf(&p, 1, 4096, NULL);
  uint64_t mod = load_module(&p, 2, k_ptx_nop, NULL);
  uint64_t fn = func_info(&p, 3, mod, "nop").function;
  uint64_t seq = 4;
  for (int k = 0; k < 6; k++) {
    /* seq + 1 is held behind seq */
    gl_request held = r_memset32(&p, seq + 1, b, 0x100 + (uint32_t)k);
    uint64_t th = send_req(p.q, &held);
    reply x;
    gl_buf tmp;
    gl_buf_init(&tmp);
    switch (k) {
    case 0: { /* LAUNCH_EX flags (body offset 100) */
      gl_buf params;
      gl_request l = r_launch_ex(&p, seq, fn, &params, 1, GL_LAUNCH_EX_COOPERATIVE, 0);
      x = call_patched(&p, &l, 100, 0x80);
      gl_buf_free(&params);
      expect(&x, GPULEASE_INVALID_ARGUMENT, "flags 0x80 has unknown bits");
      break;
    }
    case 1: { /* EVENT_RECORD slot 256 (u16 at 64) */
      gl_request e = {.op = GL_OP_EVENT_RECORD};
      e.u.event.s = ref(&p, seq);
      x = call_patched(&p, &e, 64, 0x01);
      expect(&x, GPULEASE_INVALID_ARGUMENT, "event 256 out of range 0..255");
      break;
    }
    case 2: { /* GRAPH_BEGIN flags (64) */
      gl_request g = {.op = GL_OP_GRAPH_BEGIN};
      g.u.graph_begin.s = ref(&p, seq);
      x = call_patched(&p, &g, 64, 0x02);
      expect(&x, GPULEASE_INVALID_ARGUMENT, "flags 0x02 has unknown bits");
      break;
    }
    case 3: { /* BATCH count 0 (u16 at 64) */
      gl_request one = r_sync(&p, seq, 0);
      assert_int_equal(gl_batch_add(&tmp, &one), GPULEASE_OK);
      gl_request bt = {.op = GL_OP_BATCH};
      bt.u.batch.s = ref(&p, seq);
      bt.u.batch.count = 1;
      bt.u.batch.ops = tmp.data;
      bt.u.batch.ops_len = tmp.len;
      x = call_patched(&p, &bt, 65, 0x00);
      expect(&x, GPULEASE_INVALID_ARGUMENT, "count 0 out of range 1..1024");
      break;
    }
    case 4:
    case 5: { /* BURST count 0 and 4097 (u16 at 64) */
      gl_launch_req l1;
      memset(&l1, 0, sizeof l1);
      l1.function = fn;
      l1.grid[0] = l1.grid[1] = l1.grid[2] = l1.block[0] = l1.block[1] = l1.block[2] = 1;
      assert_int_equal(gl_burst_add(&tmp, &l1), GPULEASE_OK);
      gl_request bu = {.op = GL_OP_BURST};
      bu.u.burst.s = ref(&p, seq);
      bu.u.burst.count = 1;
      bu.u.burst.launches = tmp.data;
      bu.u.burst.launches_len = tmp.len;
      bu.u.burst.checked = true;
      x = k == 4 ? call_patched(&p, &bu, 65, 0x00) : call_patched(&p, &bu, 64, 0x10);
      expect(&x, GPULEASE_INVALID_ARGUMENT, k == 4 ? "count 0 out of range 1..4096"
                                                   : "count 4097 out of range 1..4096");
      break;
    }
    }
    gl_buf_free(&tmp);
    reply_free(&x);
    /* The same seq again: a SYNC, which finds no failure; the held op runs. */
    sync_reports(&p, seq, 0, GPULEASE_OK, 0);
    wait_ok(p.q, th);
    assert_int_equal(read_u32(&p, seq + 2, b), 0x100 + (uint32_t)k);
    seq += 3;
  }
  close_peer(&p, seq);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* Statuses the op sections give: BUSY for an any-GPU LEASE_ALLOC while a
 * device lease holds the node's only GPU; a fatbin that is not one
 * (UNSUPPORTED on the emulated device); INVALID_HANDLE for a destroyed
 * graph; INVALID_ARGUMENT for a BATCH reading more than 16 MiB, its seqs
 * unused. */
static void test_op_statuses(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "10000");
  const char *dev = getenv("GL_TEST_DEVICE");
  bool on_gpu = dev && strcmp(dev, "cuda") == 0;
  peer p = open_peer(&d, 1 << 20);
  uint64_t b = alloc_buf(&p, 1, 4096, NULL);
  /* MODULE_LOAD of PTX text declared a fatbin (format 3). */
  gl_request ml = {.op = GL_OP_MODULE_LOAD};
  ml.u.module_load.s = ref(&p, 2);
  ml.u.module_load.image_format = GPULEASE_IMAGE_FATBIN;
  ml.u.module_load.image = (const uint8_t *)k_ptx_nop;
  ml.u.module_load.image_len = (uint32_t)strlen(k_ptx_nop);
  reply x;
  if (on_gpu) { /* the driver's verdict: not pinned here */
    gl_request s2 = r_sync(&p, 2, 0), s3 = r_sync(&p, 3, 0);
    call_ok(p.q, &s2);
    call_ok(p.q, &s3);
  } else {
    x = call(p.q, &ml);
    expect(&x, GPULEASE_UNSUPPORTED, "not a fatbin (no 0xBA55ED50 magic at offset 0)");
    reply_free(&x);
    sync_reports(&p, 3, 2, GPULEASE_UNSUPPORTED, GL_OP_MODULE_LOAD);
  }
  /* A graph of one MEMSET, launched, destroyed, then named again. */
  gl_request gb = {.op = GL_OP_GRAPH_BEGIN};
  gb.u.graph_begin.s = ref(&p, 4);
  call_ok(p.q, &gb);
  gl_request m5 = r_memset32(&p, 5, b, 9);
  call_ok(p.q, &m5);
  gl_request ge = {.op = GL_OP_GRAPH_END};
  ge.u.session = ref(&p, 6);
  x = call(p.q, &ge);
  expect(&x, GPULEASE_OK, NULL);
  uint64_t graph = x.r.u.graph_end.graph;
  reply_free(&x);
  gl_request gl = {.op = GL_OP_GRAPH_LAUNCH};
  gl.u.graph.s = ref(&p, 7);
  gl.u.graph.graph = graph;
  call_ok(p.q, &gl);
  assert_int_equal(read_u32(&p, 8, b), 9);
  gl_request gd = gl;
  gd.op = GL_OP_GRAPH_DESTROY;
  gd.u.graph.s = ref(&p, 9);
  call_ok(p.q, &gd);
  gl.u.graph.s = ref(&p, 10);
  x = call(p.q, &gl);
  expect(&x, GPULEASE_INVALID_HANDLE, "is not a graph of session");
  reply_free(&x);
  sync_reports(&p, 11, 10, GPULEASE_INVALID_HANDLE, GL_OP_GRAPH_LAUNCH);
  /* A BATCH of MEM_READs of 8 and 9 MiB (built as 8 and 8, which the
   * encoder takes, the second's size_bytes then patched: body offset 66 +
   * 100 + 4 + 12 + 80): refused whole, seqs 12 and 13 unused. */
  gl_request reads[2] = {r_read(&p, 12, b, 8u << 20), r_read(&p, 13, b, 8u << 20)};
  gl_buf list;
  gl_buf_init(&list);
  for (int i = 0; i < 2; i++) assert_int_equal(gl_batch_add(&list, &reads[i]), GPULEASE_OK);
  gl_request bt = {.op = GL_OP_BATCH};
  bt.u.batch.s = ref(&p, 12);
  bt.u.batch.count = 2;
  bt.u.batch.ops = list.data;
  bt.u.batch.ops_len = list.len;
  x = call_patched(&p, &bt, 66 + 100 + 4 + 12 + 80 + 1, 0x90);
  gl_buf_free(&list);
  expect(&x, GPULEASE_INVALID_ARGUMENT, "BATCH: its MEM_READs ask for more than 16777216 bytes");
  reply_free(&x);
  sync_reports(&p, 12, 0, GPULEASE_OK, 0);
  close_peer(&p, 13);
  /* A device lease holds the only GPU: any GPU is BUSY. */
  gl_qclient *q = dial(&d, 30000);
  gl_request dv = {.op = GL_OP_LEASE_ALLOC};
  dv.u.alloc.gpu_index = GPULEASE_ANY_GPU;
  dv.u.alloc.vram_bytes = 1 << 20;
  dv.u.alloc.ttl_s = 60;
  dv.u.alloc.lease_class = GPULEASE_CLASS_DEVICE;
  x = call(q, &dv);
  expect(&x, GPULEASE_OK, NULL);
  gl_request fr = {.op = GL_OP_LEASE_FREE};
  fr.u.auth.lease_id = x.r.u.lease.lease_id;
  memcpy(fr.u.auth.secret, x.r.u.lease.secret, sizeof fr.u.auth.secret);
  reply_free(&x);
  if (!on_gpu) { /* the emulated node has one GPU */
    gl_request any = dv;
    any.u.alloc.lease_class = GPULEASE_CLASS_ISOLATED;
    x = call(q, &any);
    expect(&x, GPULEASE_BUSY, "is held whole by device lease");
    reply_free(&x);
  }
  call_ok(q, &fr);
  gl_qclient_del(q);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* "LEASE_DELEGATE": every right, ttl_s 0 and no audience give back the
 * presented secret byte for byte; any weaker request gives another. */
static void test_delegate_identity(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "10000");
  gl_qclient *q = dial(&d, 30000);
  gl_lease_auth a = lease_alloc(q, 1 << 20);
  gl_request dg = {.op = GL_OP_LEASE_DELEGATE};
  dg.u.delegate.auth = a;
  dg.u.delegate.rights = GPULEASE_RIGHTS_ALL;
  reply x = call(q, &dg);
  expect(&x, GPULEASE_OK, NULL);
  assert_memory_equal(x.r.u.secret, a.secret, sizeof a.secret);
  reply_free(&x);
  dg.u.delegate.ttl_s = 60;
  x = call(q, &dg);
  expect(&x, GPULEASE_OK, NULL);
  assert_memory_not_equal(x.r.u.secret, a.secret, sizeof a.secret);
  reply_free(&x);
  dg.u.delegate.ttl_s = 0;
  dg.u.delegate.rights = GPULEASE_RIGHTS_ALL & ~0x80u;
  x = call(q, &dg);
  expect(&x, GPULEASE_OK, NULL);
  assert_memory_not_equal(x.r.u.secret, a.secret, sizeof a.secret);
  reply_free(&x);
  gl_request f = {.op = GL_OP_LEASE_FREE};
  f.u.auth = a;
  call_ok(q, &f);
  gl_qclient_del(q);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * Shared leases: a fault ends the siblings before its answer goes out
 * ==================================================================== */

static gl_lease_auth lease_alloc_shared(gl_qclient *q) {
  for (int tries = 0;; tries++) {
    gl_request req = {.op = GL_OP_LEASE_ALLOC};
    req.u.alloc.gpu_index = GPULEASE_ANY_GPU;
    req.u.alloc.vram_bytes = 1 << 20;
    req.u.alloc.ttl_s = 120;
    req.u.alloc.lease_class = GPULEASE_CLASS_SHARED;
    reply p = call(q, &req);
    if (p.r.status == GPULEASE_BUSY && tries < 200) { /* the last context still ending */
      reply_free(&p);
      usleep(20000);
      continue;
    }
    expect(&p, GPULEASE_OK, NULL);
    gl_lease_auth a = {.lease_id = p.r.u.lease.lease_id};
    memcpy(a.secret, p.r.u.lease.secret, sizeof a.secret);
    reply_free(&p);
    return a;
  }
}

/* "a device fault loses the context and every shared lease of it. Their
 * later requests get LEASE_EXPIRED": a LEASE_QUERY of lease B sent the
 * moment lease A's LAUNCH_FAILED answer arrives gets LEASE_EXPIRED, every
 * time (the daemon ends B before it answers A). */
static void test_shared_fault_ends_siblings_first(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "10000");
  gl_qclient *q = dial(&d, 30000);
  const uint8_t bad_ptr[10] = {2, 8, 16, 0, 0, 0, 0, 0, 0, 0}; /* scalar 16: no address */
  for (int round = 0; round < 5; round++) {
    gl_lease_auth a = lease_alloc_shared(q), b = lease_alloc_shared(q);
    gl_request sub = {.op = GL_OP_GPU_SUBMIT};
    sub.u.submit.auth = a;
    sub.u.submit.image_format = GPULEASE_IMAGE_PTX;
    sub.u.submit.flags = GL_SUBMIT_F_PARAMS;
    sub.u.submit.kernel_name = "poke";
    sub.u.submit.kernel_name_len = 4;
    for (int i = 0; i < 3; i++) sub.u.submit.grid[i] = sub.u.submit.block[i] = 1;
    sub.u.submit.param_count = 1;
    sub.u.submit.params_raw = bad_ptr;
    sub.u.submit.params_raw_len = sizeof bad_ptr;
    sub.u.submit.image = (const uint8_t *)k_ptx_poke;
    sub.u.submit.image_len = (uint32_t)strlen(k_ptx_poke);
    reply x = call(q, &sub);
    expect(&x, GPULEASE_LAUNCH_FAILED, "CUDA_ERROR_ILLEGAL_ADDRESS");
    reply_free(&x);
    gl_request qb = {.op = GL_OP_LEASE_QUERY};
    qb.u.auth = b;
    x = call(q, &qb);
    expect(&x, GPULEASE_LEASE_EXPIRED, "lost with its shared CUDA context");
    reply_free(&x);
    gl_request qa = {.op = GL_OP_LEASE_QUERY};
    qa.u.auth = a;
    x = call(q, &qa);
    expect(&x, GPULEASE_LEASE_EXPIRED, NULL);
    reply_free(&x);
  }
  gl_qclient_del(q);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * Large transfers through the daemon's arena (src/daemon/bulk.h)
 * ==================================================================== */

/* The arena's segment id, from the daemon's debug log; 0 if none. */
static uint64_t arena_segment(const gl_test_daemon *d) {
  char path[300];
  snprintf(path, sizeof path, "%s/daemon.log", d->dir);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[1024];
  uint64_t id = 0;
  while (fgets(line, sizeof line, f)) {
    const char *at = strstr(line, "arena attached as segment 0x");
    if (at) id = strtoull(at + strlen("arena attached as segment 0x"), NULL, 16);
  }
  fclose(f);
  return id;
}

/* A MEM_WRITE then a MEM_READ of n bytes (pattern k) at offset 0 of buf,
 * checked byte for byte; the replies carry the client's ops. */
static void round_trip(const peer *p, uint64_t *seq, uint64_t buf, uint32_t n, uint8_t k) {
  uint8_t *data = malloc(n);
  assert_non_null(data);
  for (uint32_t i = 0; i < n; i++) data[i] = (uint8_t)(i * 7 + k);
  gl_request w = r_write(p, (*seq)++, buf, data, n);
  reply x = call(p->q, &w);
  expect(&x, GPULEASE_OK, NULL);
  assert_int_equal(x.r.op, GL_OP_MEM_WRITE);
  reply_free(&x);
  gl_request r = r_read(p, (*seq)++, buf, n);
  x = call(p->q, &r);
  expect(&x, GPULEASE_OK, NULL);
  assert_int_equal(x.r.op, GL_OP_MEM_READ);
  assert_int_equal(x.r.u.mem_read.data_len, n);
  assert_memory_equal(x.r.u.mem_read.data, data, n);
  reply_free(&x);
  free(data);
}

/* Transfers of 1 MiB and more from QUIC cross through the lease's arena
 * (the daemon logs its segment); the bytes come back exact, small ones
 * and over-sized ones too; a client naming the arena's segment is
 * refused; a failing transfer keeps its op and the session's failure. */
static void test_bulk_arena(void **state) {
  (void)state;
  gl_test_daemon d;
  start(&d, "5000");
  peer p = open_peer(&d, 32u << 20);
  uint64_t seq = 1;
  uint64_t buf = alloc_buf(&p, seq++, 24u << 20, NULL);
  round_trip(&p, &seq, buf, 2u << 20, 1);
  uint64_t arena = arena_segment(&d);
  assert_true(arena != 0);
  round_trip(&p, &seq, buf, 4096, 2);      /* small: through the pipe */
  round_trip(&p, &seq, buf, 8u << 20, 3);  /* one full slot */
  round_trip(&p, &seq, buf, 16u << 20, 4); /* more than a slot: through the pipe */
  /* Pipelined: more transfers in flight than the arena has slots. */
  enum { N = 12 };
  uint32_t n = 1u << 20;
  uint8_t *data = malloc(n);
  assert_non_null(data);
  uint64_t tok[N];
  for (int i = 0; i < N; i++) {
    memset(data, 0x40 + i, n);
    gl_request w = r_write(&p, seq++, buf, data, n);
    w.u.mem_write.offset = (uint64_t)i * n;
    tok[i] = send_req(p.q, &w);
  }
  for (int i = 0; i < N; i++) wait_ok(p.q, tok[i]);
  for (int i = 0; i < N; i++) {
    gl_request r = r_read(&p, seq++, buf, n);
    r.u.mem_read.offset = (uint64_t)i * n;
    tok[i] = send_req(p.q, &r);
  }
  for (int i = 0; i < N; i++) {
    reply x = wait_reply(p.q, tok[i]);
    expect(&x, GPULEASE_OK, NULL);
    memset(data, 0x40 + i, n);
    assert_memory_equal(x.r.u.mem_read.data, data, n);
    reply_free(&x);
  }
  free(data);
  /* The arena is the daemon's: not a segment the client may use. */
  gl_request q = {.op = GL_OP_MEM_READ_SHM};
  q.u.mem_shm.s = ref(&p, 0);
  q.u.mem_shm.buffer = buf;
  q.u.mem_shm.segment = arena;
  q.u.mem_shm.size_bytes = 4096;
  reply x = call(p.q, &q);
  expect(&x, GPULEASE_INVALID_HANDLE, "is not one of the lease's");
  reply_free(&x);
  /* Its internal ops are the daemon's alone. */
  q.op = GL_OP_MEM_WRITE_ARENA;
  q.u.mem_shm.s = ref(&p, 0);
  x = call(p.q, &q);
  expect(&x, GPULEASE_UNSUPPORTED, "not served over the network");
  reply_free(&x);
  gl_request warm = {.op = GL_OP_WORKER_WARM}; /* nor may a client warm a worker */
  x = call(p.q, &warm);
  expect(&x, GPULEASE_UNSUPPORTED, "not served over the network");
  reply_free(&x);
  gl_request rel = {.op = GL_OP_WORKER_RELEASE}; /* nor end a lease in a worker */
  rel.u.worker_init.lease_id = p.auth.lease_id;
  x = call(p.q, &rel);
  expect(&x, GPULEASE_UNSUPPORTED, "not served over the network");
  reply_free(&x);
  /* Refused on the header alone: a WORKER_INIT whose body is cut short
   * (8 of its 29 bytes) is UNSUPPORTED, not a decoding error. */
  {
    uint8_t m[GL_WIRE_HEADER_SIZE + 8] = {GL_WIRE_MAGIC0, GL_WIRE_MAGIC1, GL_WIRE_VERSION,
                                          GL_WIRE_KIND_REQUEST, 0x7F, 0x01, 0, 0, 0, 0, 0, 8};
    uint64_t itok;
    char err[256];
    assert_int_equal(gl_qclient_send(p.q, m, sizeof m, &itok, err, sizeof err), GL_QC_OK);
    x = wait_reply(p.q, itok);
    expect(&x, GPULEASE_UNSUPPORTED, "internal to the daemon");
    assert_int_equal(x.r.op, GL_OP_WORKER_INIT);
    reply_free(&x);
  }
  gl_request det = {.op = GL_OP_SHM_DETACH};
  det.u.shm_detach.auth = p.auth;
  det.u.shm_detach.segment = arena;
  x = call(p.q, &det);
  expect(&x, GPULEASE_INVALID_HANDLE, "is not one of the lease's");
  reply_free(&x);
  /* Out of the buffer: refused under the client's op, and the session's
   * failure from then on. */
  gl_request r = r_read(&p, seq++, buf, 2u << 20);
  r.u.mem_read.offset = 23u << 20;
  x = call(p.q, &r);
  expect(&x, GPULEASE_INVALID_ARGUMENT, NULL);
  assert_int_equal(x.r.op, GL_OP_MEM_READ);
  reply_free(&x);
  gl_request sy = r_sync(&p, seq++, GL_SYNC_ACK_ANY);
  call_ok(p.q, &sy);
  round_trip(&p, &seq, buf, 2u << 20, 5); /* the arena still works */
  close_peer(&p, seq++);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* Over the --max-pinned budget there is no arena: the same transfers go
 * through the pipe, exact. */
static void test_bulk_without_arena(void **state) {
  (void)state;
  gl_test_daemon d;
  const char *extra[] = {"--max-pinned", "1M", NULL};
  const char *dev = getenv("GL_TEST_DEVICE");
  bool on_gpu = dev && strcmp(dev, "cuda") == 0;
  assert_int_equal(gl_test_daemon_start(&d, on_gpu ? NULL : "64M", extra), 0);
  peer p = open_peer(&d, 16u << 20);
  uint64_t seq = 1;
  uint64_t buf = alloc_buf(&p, seq++, 8u << 20, NULL);
  round_trip(&p, &seq, buf, 2u << 20, 6);
  round_trip(&p, &seq, buf, 8u << 20, 7);
  assert_true(arena_segment(&d) == 0);
  close_peer(&p, seq++);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unordered_runs_after_held_ops),
      cmocka_unit_test(test_missing_seq_times_out),
      cmocka_unit_test(test_refused_request_leaves_seq_unused),
      cmocka_unit_test(test_pipeline_past_the_window),
      cmocka_unit_test(test_held_limit_is_busy),
      cmocka_unit_test(test_lost_context_ends_sessions),
      cmocka_unit_test(test_region_offsets),
      cmocka_unit_test(test_mem_alloc_address_contract),
      cmocka_unit_test(test_smaller_rules),
      cmocka_unit_test(test_batch_rules),
      cmocka_unit_test(test_doc_messages),
      cmocka_unit_test(test_decoder_limits_table),
      cmocka_unit_test(test_launch_ex_refused_up_front),
      cmocka_unit_test(test_decoder_refusals_leave_seq_unused),
      cmocka_unit_test(test_op_statuses),
      cmocka_unit_test(test_shared_fault_ends_siblings_first),
      cmocka_unit_test(test_delegate_identity),
      cmocka_unit_test(test_bulk_arena),
      cmocka_unit_test(test_bulk_without_arena),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
