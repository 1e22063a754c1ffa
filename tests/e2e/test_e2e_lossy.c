/*
 * test_e2e_lossy.c - the library and the daemon over a lossy, reordering
 * link (issue 9, "Lossy networks"). CI has no netem, so a UDP relay in this
 * process (udp_relay.h) sits between the client and a real gpuleased on
 * the emulated device, dropping about 1% of the datagrams each way,
 * holding some back behind the next one, and duplicating a few, from a
 * fixed seed. Through it: a 64 MiB MEM_WRITE and MEM_READ round trip
 * compared by checksum and byte for byte; thousands of pipelined launches
 * of an order-sensitive kernel, batched and one op per request, then one
 * sync and an exact check; and a few GPU_SUBMITs with their outputs
 * checked. The relay's counters must show drops both ways and reorders,
 * and the transfer's bytes must all have crossed it (the client is told
 * not to use the same-host fast path), so the test cannot pass over a
 * clean link. test_relay_itself checks the relay alone with plain UDP
 * sockets: every datagram accounted for, intact up to 65507 bytes, the
 * same seed giving the same decisions.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "daemon_harness.h"
#include "lib_check.h"
#include "gpulease/gpulease.h"
#include "udp_relay.h"


/* Sizes: a 64 MiB round trip, LAUNCHES launches twice (batched, then one
 * op per request), SUBMITS submits of SUBMIT_BYTES in and out. */
#define XFER_BYTES (64 * MiB)
#define LAUNCHES 3000
#define THREADS 64
#define SUBMITS 6
#define SUBMIT_BYTES (256u << 10)
/* Per request; far above what any op needs here, so a stall in loss
 * recovery shows as a TIMEOUT rather than a hung test. */
#define CLIENT_TIMEOUT_MS 60000

/* a[tid] = a[tid] * 31 + k + tid: the result depends on the order of the
 * launches, so one run twice, skipped or out of order shows. */
static const char k_ptx_step[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry step(.param .u64 p, .param .u32 k)\n{\n"
    "  .reg .b64 %rd<4>;\n  .reg .b32 %r<6>;\n"
    "  ld.param.u64 %rd1, [p];\n  ld.param.u32 %r1, [k];\n  mov.u32 %r2, %tid.x;\n"
    "  mul.wide.u32 %rd2, %r2, 4;\n  add.s64 %rd3, %rd1, %rd2;\n"
    "  ld.global.u32 %r3, [%rd3];\n  mad.lo.s32 %r4, %r3, 31, %r1;\n"
    "  add.s32 %r5, %r4, %r2;\n  st.global.u32 [%rd3], %r5;\n  ret;\n}\n";

static uint32_t step_ref(uint32_t a, uint32_t k, uint32_t tid) { return a * 31u + k + tid; }

typedef struct fixture {
  gl_test_daemon d;
  gl_udp_relay *relay;
  gpulease_client *c;
} fixture;

static double secs(uint64_t t0) { return (double)(gl_mono_ns() - t0) / 1e9; }

/* A client connected through the relay, the daemon's certificate pinned. */
static gpulease_client *connect_via(const gl_test_daemon *d, const gl_udp_relay *r) {
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%u", (unsigned)gl_udp_relay_port(r));
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = addr;
  o.pin_sha256 = d->fingerprint;
  o.timeout_ms = CLIENT_TIMEOUT_MS;
#if GPULEASE_CONNECT_OPTIONS_VERSION >= 2
  o.no_local = 1; /* the same-host fast path would skip the relay */
#endif
#if GPULEASE_CONNECT_OPTIONS_VERSION >= 3
  o.stripes = 1; /* and so would the stripe ports: one connection, relayed */
#endif
  gpulease_client *c = NULL;
  gpulease_error err;
  gpulease_status st = gpulease_client_connect(&o, &c, &err);
  if (st != GPULEASE_OK) fprintf(stderr, "connect via relay: %s\n", err.message);
  assert_int_equal(st, GPULEASE_OK);
  return c;
}

/* By hand, GL_TEST_LOSSY_LINK="seed=7,drop=50000,reorder=100000,dup=0,
 * after=3,delay_us=20000,sockbuf=106496" (ppm, both directions) changes
 * the link; CI runs the fixed one. */
static void link_from_env(gl_udp_relay_opts *o) {
  const char *env = getenv("GL_TEST_LOSSY_LINK");
  char key[32];
  unsigned long long v;
  int used;
  while (env && sscanf(env, " %31[a-z_] = %lli%n", key, &v, &used) == 2) {
    if (!strcmp(key, "seed")) o->seed = v;
    else if (!strcmp(key, "after")) o->reorder_after = (uint32_t)v;
    else if (!strcmp(key, "delay_us")) o->reorder_delay_us = (uint32_t)v;
    else if (!strcmp(key, "sockbuf")) o->socket_buffer = (uint32_t)v;
    for (int dir = 0; dir < 2; dir++) {
      if (!strcmp(key, "drop")) o->drop_ppm[dir] = (uint32_t)v;
      else if (!strcmp(key, "reorder")) o->reorder_ppm[dir] = (uint32_t)v;
      else if (!strcmp(key, "dup")) o->dup_ppm[dir] = (uint32_t)v;
    }
    env += used;
    if (*env == ',') env++;
  }
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  assert_int_equal(gl_test_daemon_start(&f->d, "256M", NULL), 0);
  gl_udp_relay_opts o;
  gl_udp_relay_opts_default(&o);
  o.seed = 0x10557ull; /* with this seed the first drop of each direction
                        * comes within its first 110 datagrams */
  for (int dir = 0; dir < 2; dir++) {
    o.drop_ppm[dir] = 10000;    /* 1% */
    o.reorder_ppm[dir] = 20000; /* 2%, each overtaken by the next datagram */
    o.dup_ppm[dir] = 2000;      /* 0.2% */
  }
  o.reorder_after = 1;
  o.reorder_delay_us = 3000;
  link_from_env(&o);
  f->relay = gl_udp_relay_start(f->d.addr, &o);
  assert_non_null(f->relay);
  uint64_t t0 = gl_mono_ns();
  f->c = connect_via(&f->d, f->relay);
  printf("daemon %s, relay 127.0.0.1:%u (seed %#llx; ppm: drop %u, reorder %u, dup %u; "
         "held for %u dgram(s) or %u us), connected in %.3f s\n",
         f->d.addr, (unsigned)gl_udp_relay_port(f->relay), (unsigned long long)o.seed,
         o.drop_ppm[0], o.reorder_ppm[0], o.dup_ppm[0], o.reorder_after, o.reorder_delay_us,
         secs(t0));
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  if (!f) return 0;
  gpulease_client_close(f->c);
  gl_udp_relay_print(f->relay, "total");
  gl_udp_relay_stop(f->relay);
  int rc = gl_test_daemon_stop(&f->d);
  free(f);
  return rc == 0 ? 0 : -1;
}

/* The counters since *before, printed under label; *before moves on, and
 * *delta (may be NULL) receives the difference. */
static void phase_stats(const fixture *f, gl_udp_relay_counters *before, const char *label,
                        gl_udp_relay_counters *delta) {
  gl_udp_relay_counters s;
  gl_udp_relay_stats(f->relay, &s);
  if (delta) {
    /* Every field is a uint64_t. */
    const uint64_t *a = (const uint64_t *)&s, *b = (const uint64_t *)before;
    uint64_t *out = (uint64_t *)delta;
    for (size_t i = 0; i < sizeof s / sizeof(uint64_t); i++) out[i] = a[i] - b[i];
  }
  printf("  %-22s c->d: %6llu dgrams, %4llu dropped, %4llu reordered | d->c: %6llu dgrams, "
         "%4llu dropped, %4llu reordered\n",
         label, (unsigned long long)(s.received[0] - before->received[0]),
         (unsigned long long)(s.dropped[0] - before->dropped[0]),
         (unsigned long long)(s.reordered[0] - before->reordered[0]),
         (unsigned long long)(s.received[1] - before->received[1]),
         (unsigned long long)(s.dropped[1] - before->dropped[1]),
         (unsigned long long)(s.reordered[1] - before->reordered[1]));
  fflush(stdout);
  *before = s;
}

static uint64_t fnv1a(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static void test_lossy_link(void **state) {
  fixture *f = *state;
  gpulease_client *c = f->c;
  gl_udp_relay_counters mark = {0};
  phase_stats(f, &mark, "handshake", NULL);
  uint64_t t_all = gl_mono_ns();

  gpulease_lease l;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, XFER_BYTES + 16 * MiB, 300, &l, E));
  gpulease_session *s = NULL;
  CHECK(gpulease_session_open(c, &l, &s, E));

  /* (a) A 64 MiB round trip. */
  uint8_t *src = malloc(XFER_BYTES), *dst = malloc(XFER_BYTES);
  assert_non_null(src);
  assert_non_null(dst);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < XFER_BYTES; i += 8) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    memcpy(src + i, &x, 8);
  }
  memset(dst, 0, XFER_BYTES);
  gpulease_buffer big;
  CHECK(gpulease_mem_alloc(s, XFER_BYTES, &big, E));
  uint64_t t0 = gl_mono_ns();
  CHECK(gpulease_mem_write(s, big, 0, src, XFER_BYTES, E));
  double tw = secs(t0);
  t0 = gl_mono_ns();
  CHECK(gpulease_mem_read(s, big, 0, dst, XFER_BYTES, E));
  double tr = secs(t0);
  uint64_t hs = fnv1a(src, XFER_BYTES), hd = fnv1a(dst, XFER_BYTES);
  printf("(a) 64 MiB MEM_WRITE %.3f s (%.1f MB/s), MEM_READ %.3f s (%.1f MB/s), "
         "checksum %016llx / %016llx\n",
         tw, XFER_BYTES / tw / 1e6, tr, XFER_BYTES / tr / 1e6, (unsigned long long)hs,
         (unsigned long long)hd);
  gl_udp_relay_counters dt;
  phase_stats(f, &mark, "(a) transfers", &dt);
  /* Every byte went through the relay (no fast path around it). */
  assert_true(dt.bytes[GL_RELAY_C2D] >= XFER_BYTES);
  assert_true(dt.bytes[GL_RELAY_D2C] >= XFER_BYTES);
  assert_true(hs == hd);
  assert_memory_equal(src, dst, XFER_BYTES);
  free(src);
  free(dst);
  CHECK(gpulease_mem_free(s, big, E));

  /* (b) Pipelined launches: batched (the library's default), then one op
   * per request (thousands of streams in flight, the window full). */
  gpulease_module m;
  CHECK(gpulease_module_load(s, k_ptx_step, sizeof k_ptx_step - 1, GPULEASE_IMAGE_PTX, &m, NULL,
                             E));
  gpulease_function fn;
  CHECK(gpulease_function_get(s, m, "step", &fn, NULL, E));
  gpulease_buffer acc;
  CHECK(gpulease_mem_alloc(s, THREADS * 4, &acc, E));
  uint32_t want[THREADS], got[THREADS];
  for (uint32_t i = 0; i < THREADS; i++) want[i] = i * 7u + 1u;
  CHECK(gpulease_mem_write(s, acc, 0, want, sizeof want, E));
  const uint32_t grid[3] = {1, 1, 1}, block[3] = {THREADS, 1, 1};
  static const unsigned batches[2] = {64, 1};
  uint32_t k = 0;
  for (int pass = 0; pass < 2; pass++) {
    CHECK(gpulease_session_set_batch(s, batches[pass], E));
    t0 = gl_mono_ns();
    for (int i = 0; i < LAUNCHES; i++) {
      k = k * 1103515245u + 12345u;
      gpulease_arg args[2] = {gpulease_arg_buffer(acc, 0), gpulease_arg_scalar(&k, 4)};
      CHECK(gpulease_launch(s, fn, grid, block, 0, args, 2, E));
      for (uint32_t t = 0; t < THREADS; t++) want[t] = step_ref(want[t], k, t);
    }
    double tl = secs(t0);
    gpulease_op_failure fl = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
    CHECK(gpulease_session_sync(s, &fl, E));
    assert_int_equal(fl.status, GPULEASE_OK);
    double ts = secs(t0);
    CHECK(gpulease_mem_read(s, acc, 0, got, sizeof got, E));
    printf("(b) %d launches, batch %u: issued in %.3f s, synced at %.3f s (%.0f launches/s)\n",
           LAUNCHES, batches[pass], tl, ts, LAUNCHES / ts);
    phase_stats(f, &mark, pass ? "(b) launches, batch 1" : "(b) launches, batch 64", NULL);
    assert_memory_equal(got, want, sizeof want);
  }
  CHECK(gpulease_session_close(s, E));

  /* (c) GPU_SUBMITs: SUBMIT_BYTES in, the kernel steps the first THREADS
   * words, SUBMIT_BYTES out. */
  uint32_t *in = malloc(SUBMIT_BYTES), *ref = malloc(SUBMIT_BYTES);
  assert_non_null(in);
  assert_non_null(ref);
  t0 = gl_mono_ns();
  for (uint32_t r = 0; r < SUBMITS; r++) {
    for (uint32_t i = 0; i < SUBMIT_BYTES / 4; i++) in[i] = ref[i] = i * 2654435761u + r;
    uint32_t kk = 1000u + r;
    for (uint32_t t = 0; t < THREADS; t++) ref[t] = step_ref(ref[t], kk, t);
    const uint64_t off = (uint64_t)r * SUBMIT_BYTES; /* a fresh place each time */
    gpulease_param p[2] = {gpulease_param_pointer(off), gpulease_param_scalar(&kk, 4)};
    gpulease_submit_desc sd;
    gpulease_submit_desc_default(&sd);
    sd.image = k_ptx_step;
    sd.image_size = sizeof k_ptx_step - 1;
    sd.format = GPULEASE_IMAGE_PTX;
    sd.kernel = "step";
    sd.grid[0] = 1;
    sd.block[0] = THREADS;
    sd.input = in;
    sd.input_size = SUBMIT_BYTES;
    sd.input_offset = off;
    sd.output_offset = off;
    sd.output_size = SUBMIT_BYTES;
    sd.params = p;
    sd.param_count = 2;
    sd.use_params = 1;
    gpulease_submit_result res = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
    CHECK(gpulease_submit(c, &l, &sd, &res, E));
    assert_int_equal(res.output_size, SUBMIT_BYTES);
    assert_memory_equal(res.output, ref, SUBMIT_BYTES);
    gpulease_submit_result_release(&res);
  }
  printf("(c) %d GPU_SUBMITs of %u KiB in and out: %.3f s\n", SUBMITS, SUBMIT_BYTES >> 10,
         secs(t0));
  phase_stats(f, &mark, "(c) submits", NULL);
  free(in);
  free(ref);
  CHECK(gpulease_lease_query(c, &l, E));
  assert_int_equal(l.submits, SUBMITS);
  CHECK(gpulease_lease_free(c, &l, E));
  printf("all through the relay in %.3f s\n", secs(t_all));

  /* The link really was lossy both ways, and reordered. */
  gl_udp_relay_counters st;
  gl_udp_relay_stats(f->relay, &st);
  assert_true(st.dropped[GL_RELAY_C2D] > 0);
  assert_true(st.dropped[GL_RELAY_D2C] > 0);
  assert_true(st.reordered[GL_RELAY_C2D] + st.reordered[GL_RELAY_D2C] > 0);
  assert_int_equal(st.truncated, 0);
  assert_int_equal(st.foreign, 0);
}

/* ======================================================================
 * The relay on its own: plain UDP sockets on both sides
 * ==================================================================== */

#define SELF_DGRAMS 1500

typedef struct self_run {
  uint8_t seen_d[SELF_DGRAMS]; /* copies that reached the "daemon" */
  uint8_t seen_c[SELF_DGRAMS]; /* echoes that came back */
  uint64_t late;               /* arrived after a later seq */
  gl_udp_relay_counters st;
} self_run;

static int udp_bound(uint16_t *port) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  assert_true(fd >= 0);
  int big = 8 << 20;
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
  *port = ntohs(a.sin_port);
  return fd;
}

/* Datagram seq: its size (now and then the largest UDP over IPv4 takes),
 * then its bytes (seq in the first 4, a pattern). */
static size_t self_len(uint32_t seq) {
  return seq % 25 == 0 ? 65507 : seq % 3 == 0 ? 1200 : 8 + (seq * 977u) % 9000;
}
static uint8_t self_byte(uint32_t seq, size_t i) { return (uint8_t)(seq * 13u + i * 7u); }

/* Reads every datagram queued on fd, checks it; the "daemon" side (echo)
 * echoes each back to its sender. */
static void self_drain(int fd, bool echo, uint8_t *seen, uint32_t *last, uint64_t *late,
                       uint8_t *buf) {
  for (;;) {
    struct sockaddr_storage from;
    socklen_t fl = sizeof from;
    ssize_t n = recvfrom(fd, buf, 65536, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
    if (n < 0) return;
    uint32_t seq;
    assert_true(n >= 8);
    memcpy(&seq, buf, 4);
    assert_true(seq < SELF_DGRAMS);
    assert_int_equal((size_t)n, self_len(seq));
    for (size_t i = 4; i < (size_t)n; i++)
      if (buf[i] != self_byte(seq, i)) fail_msg("seq %u byte %zu corrupt", seq, i);
    if (seq < *last) (*late)++; /* overtaken (or a late duplicate) */
    if (seq > *last) *last = seq;
    seen[seq]++;
    if (echo) assert_int_equal(sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&from, fl), n);
  }
}

static void self_run_once(self_run *out) {
  memset(out, 0, sizeof *out);
  uint16_t dport, cport;
  int dfd = udp_bound(&dport), cfd = udp_bound(&cport);
  char addr[32];
  snprintf(addr, sizeof addr, "127.0.0.1:%u", (unsigned)dport);
  gl_udp_relay_opts o;
  gl_udp_relay_opts_default(&o);
  o.seed = 42;
  for (int dir = 0; dir < 2; dir++) {
    o.drop_ppm[dir] = 50000;
    o.reorder_ppm[dir] = 50000;
    o.dup_ppm[dir] = 20000;
  }
  o.reorder_delay_us = 20000;
  gl_udp_relay *r = gl_udp_relay_start(addr, &o);
  assert_non_null(r);
  struct sockaddr_in ra = {.sin_family = AF_INET, .sin_port = htons(gl_udp_relay_port(r))};
  ra.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  uint8_t *tx = malloc(65536), *rx = malloc(65536);
  assert_non_null(tx);
  assert_non_null(rx);
  uint32_t last_d = 0, last_c = 0;
  uint64_t late_c = 0;
  /* Two at a time; the next once the relay has read them, so that no
   * socket overflows even with net.core.rmem_max at its default (208 KiB)
   * and every loss is the relay's own decision. */
  uint64_t deadline = gl_mono_ns() + 60000000000ull;
  for (uint32_t seq = 0; seq < SELF_DGRAMS;) {
    for (int b = 0; b < 2 && seq < SELF_DGRAMS; b++, seq++) {
      size_t len = self_len(seq);
      memcpy(tx, &seq, 4);
      for (size_t i = 4; i < len; i++) tx[i] = self_byte(seq, i);
      assert_int_equal(sendto(cfd, tx, len, 0, (struct sockaddr *)&ra, sizeof ra), (ssize_t)len);
    }
    for (;;) {
      self_drain(dfd, true, out->seen_d, &last_d, &out->late, rx);
      self_drain(cfd, false, out->seen_c, &last_c, &late_c, rx);
      gl_udp_relay_stats(r, &out->st);
      if (out->st.received[0] == seq) break;
      if (gl_mono_ns() > deadline) fail_msg("the relay read %llu of %u datagrams",
                                            (unsigned long long)out->st.received[0], seq);
      usleep(20);
    }
  }
  /* The last held datagrams leave by the timer; everything settles. */
  for (int i = 0; i < 100; i++) {
    usleep(1000);
    self_drain(dfd, true, out->seen_d, &last_d, &out->late, rx);
    self_drain(cfd, false, out->seen_c, &last_c, &late_c, rx);
  }
  gl_udp_relay_stats(r, &out->st);
  gl_udp_relay_print(r, "self-test");
  gl_udp_relay_stop(r);
  close(dfd);
  close(cfd);
  free(tx);
  free(rx);
}

static void test_relay_itself(void **state) {
  (void)state;
  self_run *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
  assert_non_null(a);
  assert_non_null(b);
  self_run_once(a);
  const gl_udp_relay_counters *s = &a->st;
  uint64_t got_d = 0, got_c = 0;
  for (int i = 0; i < SELF_DGRAMS; i++) got_d += a->seen_d[i], got_c += a->seen_c[i];
  /* Every datagram read is dropped, forwarded once or twice, or held. */
  assert_int_equal(s->received[0], SELF_DGRAMS);
  assert_int_equal(s->received[0] - s->dropped[0] + s->duplicated[0], s->forwarded[0]);
  assert_int_equal(got_d, s->forwarded[0]); /* the kernel lost none of them */
  assert_int_equal(s->received[1], got_d);  /* every copy was echoed */
  assert_int_equal(s->received[1] - s->dropped[1] + s->duplicated[1], s->forwarded[1]);
  assert_int_equal(got_c, s->forwarded[1]);
  for (int d = 0; d < 2; d++) {
    assert_true(s->dropped[d] > 0);
    assert_true(s->reordered[d] > 0);
    assert_true(s->duplicated[d] > 0);
    assert_int_equal(s->send_errors[d], 0);
  }
  assert_true(a->late > 0);
  assert_int_equal(s->max_dgram[0], 65507);
  /* The same seed, the same decisions. */
  self_run_once(b);
  assert_memory_equal(a->seen_d, b->seen_d, SELF_DGRAMS);
  assert_int_equal(a->st.dropped[0], b->st.dropped[0]);
  assert_int_equal(a->st.reordered[0] + a->st.held_timeout[0],
                   b->st.reordered[0] + b->st.held_timeout[0]);
  free(a);
  free(b);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_relay_itself),
      cmocka_unit_test_setup_teardown(test_lossy_link, setup, teardown),
  };
  if (getenv("GL_TEST_FILTER")) cmocka_set_test_filter(getenv("GL_TEST_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
