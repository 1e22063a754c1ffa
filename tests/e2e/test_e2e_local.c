/*
 * test_e2e_local.c - the same-host fast path (docs/protocol.md, "The local
 * socket"): a real gpuleased on the emulated device, its local socket, and
 * the library on the same machine.
 *
 * Checked: transfers through the staging segment and from
 * gpulease_host_alloc memory, with the data compared and the segment seen
 * mapped in the lease's worker; what the daemon refuses (a wrong secret,
 * no descriptor, an unsealed or short file, SHM_ATTACH over QUIC, unknown
 * segments and ranges outside them, attaches past --max-pinned); the
 * socket's file mode keeping other users out while the library falls back
 * to QUIC for them (as root only, which can switch users); and a client killed in the middle of a
 * transfer, whose segments the worker unmaps while the lease goes on.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "daemon_harness.h"
#include "lib_check.h"
#include "gpulease/gpulease.h"
#include "net/local.h"
#include "net/quic.h"
#include "proto/wire.h"


static gpulease_client *connect_opts(const gl_test_daemon *d, int no_local) {
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = d->addr;
  o.pin_sha256 = d->fingerprint;
  o.timeout_ms = 60000;
  o.no_local = no_local;
  gpulease_client *c = NULL;
  gpulease_error err;
  if (gpulease_client_connect(&o, &c, &err) != GPULEASE_OK)
    fprintf(stderr, "connect: %s\n", err.message);
  return c;
}

/* True when a worker of d maps a segment made by the library. */
static bool worker_maps_segment(const gl_test_daemon *d) {
  pid_t pids[8];
  int n = gl_test_daemon_child_pids(d, pids, 8);
  for (int i = 0; i < n; i++) {
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pids[i]);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    bool hit = false;
    while (!hit && fgets(line, sizeof line, f)) hit = strstr(line, "gpulease-segment") != NULL;
    fclose(f);
    if (hit) return true;
  }
  return false;
}

/* The emulated device with `emu_vram`, or with GL_TEST_DEVICE=cuda the
 * node's GPUs (tests/gpu/check.sh). */
static int start_daemon(gl_test_daemon *d, const char *emu_vram, const char *const *extra) {
  const char *dev = getenv("GL_TEST_DEVICE");
  bool gpu = dev && strcmp(dev, "cuda") == 0;
  return gl_test_daemon_start(d, gpu ? NULL : emu_vram, extra);
}

static void fill(uint8_t *p, size_t n, unsigned seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    p[i] = (uint8_t)x;
  }
}

/* ======================================================================
 * Transfers
 * ==================================================================== */

static void test_local_transfers(void **state) {
  (void)state;
  gl_test_daemon d;
  assert_int_equal(start_daemon(&d, "512M", NULL), 0);
  gpulease_client *c = connect_opts(&d, 0);
  assert_non_null(c);
  gpulease_lease l;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 160 * MiB, 120, &l, E));
  gpulease_session *s;
  CHECK(gpulease_session_open(c, &l, &s, E));
  size_t n = 150 * MiB + 12345; /* several staging slots and a ragged end */
  gpulease_buffer b;
  CHECK(gpulease_mem_alloc(s, n, &b, E));
  uint8_t *src = malloc(n), *dst = malloc(n);
  fill(src, n, 1);
  double t0 = (double)gl_mono_ns() / 1e9;
  CHECK(gpulease_mem_write(s, b, 0, src, n, E));
  memset(dst, 0, n);
  CHECK(gpulease_mem_read(s, b, 0, dst, n, E));
  printf("staged round trip of %zu bytes: %.3f s\n", n, (double)gl_mono_ns() / 1e9 - t0);
  assert_memory_equal(src, dst, n);
  assert_true(worker_maps_segment(&d)); /* it went through shared memory */

  /* From and to gpulease_host_alloc memory: no staging copy. */
  uint8_t *pin = NULL;
  CHECK(gpulease_host_alloc(c, n, (void **)&pin, E));
  fill(pin, n, 2);
  memcpy(src, pin, n);
  CHECK(gpulease_mem_write(s, b, 0, pin, n, E));
  memset(pin, 0, n);
  CHECK(gpulease_mem_read(s, b, 0, pin, n, E));
  assert_memory_equal(src, pin, n);
  /* An offset inside the allocation, into the middle of the buffer. */
  CHECK(gpulease_mem_write(s, b, 4096, pin + 8192, 2 * MiB, E));
  CHECK(gpulease_mem_read(s, b, 4096, dst, 2 * MiB, E));
  assert_memory_equal(dst, src + 8192, 2 * MiB);
  gpulease_error err;
  assert_int_equal(gpulease_host_free(c, dst, &err), GPULEASE_INVALID_ARGUMENT);
  CHECK(gpulease_host_free(c, pin, E));

  /* Small transfers and the rest of the session keep working over QUIC,
   * in order with the shared memory ones. */
  uint32_t v = 0;
  CHECK(gpulease_mem_set(s, b, 0, 4, 0xABCD1234u, 1, E));
  CHECK(gpulease_mem_read(s, b, 0, &v, 4, E));
  assert_int_equal(v, 0xABCD1234u);
  CHECK(gpulease_session_close(s, E));
  /* Closing the session detached its staging segment. */
  for (int i = 0; i < 50 && worker_maps_segment(&d); i++) usleep(20000);
  assert_false(worker_maps_segment(&d));
  free(src);
  free(dst);
  gpulease_lease_free(c, &l, NULL);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * Refusals
 * ==================================================================== */

typedef struct raw {
  gl_lclient *l;
} raw;

static gl_response exchange(gl_lclient *l, const gl_request *q, int fd, uint8_t **buf) {
  gl_buf b;
  gl_buf_init(&b);
  assert_int_equal(gl_request_encode(q, &b), GPULEASE_OK);
  uint64_t token;
  size_t len;
  char why[256];
  assert_int_equal(gl_lclient_send(l, b.data, b.len, fd, &token, why, sizeof why), 0);
  gl_buf_free(&b);
  assert_int_equal(gl_lclient_wait(l, token, buf, &len, why, sizeof why), 0);
  gl_response r;
  assert_int_equal(gl_response_decode(*buf, len, len, &r, NULL, 0), GPULEASE_OK);
  return r;
}

static void expect(const gl_response *r, gpulease_status st, const char *needle) {
  if (r->status != st || (needle && !memmem(r->msg, r->msg_len, needle, strlen(needle))))
    fprintf(stderr, "%s: got %s '%.*s', want %s with '%s'\n", gl_op_name(r->op),
            gpulease_status_name(r->status), (int)r->msg_len, r->msg, gpulease_status_name(st),
            needle ? needle : "");
  assert_int_equal(r->status, st);
  if (needle) assert_non_null(memmem(r->msg, r->msg_len, needle, strlen(needle)));
}

static int memfd(size_t size, bool seal) {
  int fd = memfd_create("gpulease-segment", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, (off_t)size), 0);
  if (seal) assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  return fd;
}

static void test_local_refusals(void **state) {
  (void)state;
  gl_test_daemon d;
  assert_int_equal(start_daemon(&d, "64M", NULL), 0);
  gpulease_client *c = connect_opts(&d, 1);
  gpulease_lease lease;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 4 * MiB, 120, &lease, E));
  gpulease_session *s;
  CHECK(gpulease_session_open(c, &lease, &s, E));
  gpulease_buffer b;
  CHECK(gpulease_mem_alloc(s, 1 * MiB, &b, E));

  char path[400];
  snprintf(path, sizeof path, "%s/gpuleased.sock", d.dir);
  gl_lclient *l = NULL;
  char why[256];
  assert_int_equal(gl_lclient_connect(path, 30000, &l, why, sizeof why), 0);
  uint8_t *buf;
  /* NODE_INFO names this socket. */
  gl_request ni = {.op = GL_OP_NODE_INFO};
  gl_response r = exchange(l, &ni, -1, &buf);
  expect(&r, GPULEASE_OK, NULL);
  assert_string_equal(r.u.node_info.local_socket, path);
  free(buf);

  gl_request at = {.op = GL_OP_SHM_ATTACH};
  at.u.shm_attach.auth.lease_id = lease.id;
  memcpy(at.u.shm_attach.auth.secret, lease.secret, sizeof lease.secret);
  at.u.shm_attach.size_bytes = 1 * MiB;
  int fd = memfd(1 * MiB, true);
  gl_request bad = at;
  bad.u.shm_attach.auth.secret[0] ^= 1;
  r = exchange(l, &bad, fd, &buf);
  expect(&r, GPULEASE_UNAUTHORIZED, NULL);
  free(buf);
  r = exchange(l, &at, -1, &buf);
  expect(&r, GPULEASE_INVALID_ARGUMENT, "no file descriptor");
  free(buf);
  int loose = memfd(1 * MiB, false);
  r = exchange(l, &at, loose, &buf);
  expect(&r, GPULEASE_INVALID_ARGUMENT, "F_SEAL_SHRINK");
  free(buf);
  close(loose);
  int small = memfd(4096, true);
  r = exchange(l, &at, small, &buf);
  expect(&r, GPULEASE_INVALID_ARGUMENT, "smaller");
  free(buf);
  close(small);
  r = exchange(l, &at, fd, &buf);
  expect(&r, GPULEASE_OK, NULL);
  uint64_t seg = r.u.handle;
  free(buf);
  close(fd);
  /* Copies name a segment of the lease, and stay inside it. */
  gl_request w = {.op = GL_OP_MEM_WRITE_SHM};
  w.u.mem_shm.s.auth = at.u.shm_attach.auth;
  w.u.mem_shm.s.session_id = gpulease_session_id(s);
  w.u.mem_shm.buffer = b;
  w.u.mem_shm.segment = seg ^ 1;
  w.u.mem_shm.size_bytes = 4096;
  r = exchange(l, &w, -1, &buf);
  expect(&r, GPULEASE_INVALID_HANDLE, "is not a segment");
  free(buf);
  gl_request ack = {.op = GL_OP_SYNC};
  ack.u.sync.s = w.u.mem_shm.s;
  ack.u.sync.ack_seq = GL_SYNC_ACK_ANY;
  r = exchange(l, &ack, -1, &buf);
  expect(&r, GPULEASE_OK, NULL);
  free(buf);
  w.u.mem_shm.segment = seg;
  w.u.mem_shm.segment_offset = 1 * MiB - 100;
  r = exchange(l, &w, -1, &buf);
  expect(&r, GPULEASE_INVALID_ARGUMENT, "outside segment");
  free(buf);
  r = exchange(l, &ack, -1, &buf);
  free(buf);
  gl_request det = {.op = GL_OP_SHM_DETACH};
  det.u.shm_detach.auth = at.u.shm_attach.auth;
  det.u.shm_detach.segment = seg;
  r = exchange(l, &det, -1, &buf);
  expect(&r, GPULEASE_OK, NULL);
  free(buf);
  r = exchange(l, &det, -1, &buf);
  expect(&r, GPULEASE_NOT_FOUND, NULL);
  free(buf);
  gl_lclient_del(l);

  /* A header that does not decode gets the decoder's own text (protocol.md
   * section 6), then the connection closes. */
  static const struct {
    uint8_t hdr[GL_WIRE_HEADER_SIZE];
    gpulease_status st;
    const char *needle;
  } bad_hdrs[] = {
      {{'X', 'Y', 1, 0, 0, 1, 0, 0, 0, 0, 0, 0}, GPULEASE_MALFORMED, "bad magic 0x5859"},
      {{'G', 'L', 2, 0, 0, 1, 0, 0, 0, 0, 0, 0}, GPULEASE_UNSUPPORTED,
       "unsupported protocol version 2"},
  };
  for (size_t i = 0; i < sizeof bad_hdrs / sizeof bad_hdrs[0]; i++) {
    assert_int_equal(gl_lclient_connect(path, 30000, &l, why, sizeof why), 0);
    uint64_t token;
    assert_int_equal(
        gl_lclient_send(l, bad_hdrs[i].hdr, sizeof bad_hdrs[i].hdr, -1, &token, why, sizeof why),
        0);
    size_t blen;
    assert_int_equal(gl_lclient_wait(l, token, &buf, &blen, why, sizeof why), 0);
    gl_header h;
    assert_int_equal(gl_header_decode(buf, blen, &h), GPULEASE_OK);
    assert_int_equal(h.status, bad_hdrs[i].st);
    assert_non_null(memmem(buf, blen, bad_hdrs[i].needle, strlen(bad_hdrs[i].needle)));
    free(buf);
    gl_lclient_del(l);
  }

  /* SHM_ATTACH over QUIC cannot carry a descriptor. */
  char host[64];
  snprintf(host, sizeof host, "%s", d.addr);
  *strrchr(host, ':') = 0;
  gl_qclient_config qc = {.host = host,
                          .port = (uint16_t)atoi(strrchr(d.addr, ':') + 1),
                          .pin_sha256 = d.fingerprint,
                          .timeout_ms = 30000,
                          .max_response_bytes = 1 << 20};
  gl_qclient *q;
  assert_int_equal(gl_qclient_connect(&qc, &q, why, sizeof why), GL_QC_OK);
  gl_buf eb;
  gl_buf_init(&eb);
  assert_int_equal(gl_request_encode(&at, &eb), GPULEASE_OK);
  size_t len;
  assert_int_equal(gl_qclient_request(q, eb.data, eb.len, &buf, &len, why, sizeof why), GL_QC_OK);
  gl_buf_free(&eb);
  assert_int_equal(gl_response_decode(buf, len, len, &r, NULL, 0), GPULEASE_OK);
  expect(&r, GPULEASE_UNSUPPORTED, "local socket");
  free(buf);
  gl_qclient_del(q);

  CHECK(gpulease_session_close(s, E));
  gpulease_lease_free(c, &lease, NULL);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* --max-pinned bounds the shared memory the daemon page-locks for all
 * leases: an attach past it is CAPACITY_EXCEEDED, and a detach gives its
 * bytes back. */
static void test_local_pinned_budget(void **state) {
  (void)state;
  gl_test_daemon d;
  const char *extra[] = {"--max-pinned", "3M", NULL};
  assert_int_equal(start_daemon(&d, "64M", extra), 0);
  gpulease_client *c = connect_opts(&d, 1);
  gpulease_lease lease;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 4 * MiB, 120, &lease, E));
  char path[400], why[256];
  snprintf(path, sizeof path, "%s/gpuleased.sock", d.dir);
  gl_lclient *l = NULL;
  assert_int_equal(gl_lclient_connect(path, 30000, &l, why, sizeof why), 0);
  gl_request at = {.op = GL_OP_SHM_ATTACH};
  at.u.shm_attach.auth.lease_id = lease.id;
  memcpy(at.u.shm_attach.auth.secret, lease.secret, sizeof lease.secret);
  uint8_t *buf;
  /* 4 MiB at once is over the budget. */
  at.u.shm_attach.size_bytes = 4 * MiB;
  int big = memfd(4 * MiB, true);
  gl_response r = exchange(l, &at, big, &buf);
  expect(&r, GPULEASE_CAPACITY_EXCEEDED, "page-locks at most 3145728 bytes");
  free(buf);
  /* 2 MiB fits; another 2 MiB does not while the first is attached. */
  at.u.shm_attach.size_bytes = 2 * MiB;
  int fd = memfd(2 * MiB, true);
  r = exchange(l, &at, fd, &buf);
  expect(&r, GPULEASE_OK, NULL);
  uint64_t seg = r.u.handle;
  free(buf);
  r = exchange(l, &at, fd, &buf);
  expect(&r, GPULEASE_CAPACITY_EXCEEDED, "2097152 are in use");
  free(buf);
  /* Detached, its bytes are free again. */
  gl_request det = {.op = GL_OP_SHM_DETACH};
  det.u.shm_detach.auth = at.u.shm_attach.auth;
  det.u.shm_detach.segment = seg;
  r = exchange(l, &det, -1, &buf);
  expect(&r, GPULEASE_OK, NULL);
  free(buf);
  r = exchange(l, &at, fd, &buf);
  expect(&r, GPULEASE_OK, NULL);
  free(buf);
  close(fd);
  close(big);
  gl_lclient_del(l);
  gpulease_lease_free(c, &lease, NULL);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ======================================================================
 * Who may connect: the socket's mode (root only: it can switch users)
 * ==================================================================== */

/* In a child that became uid 65534: tries the socket, and a transfer
 * with the library (which must fall back to QUIC). Exit 0: refused and
 * the transfer worked over QUIC; 1: the socket admitted it; 2: the
 * transfer failed. */
static int as_nobody(const gl_test_daemon *d, const char *sock, const gpulease_lease *l) {
  if (setgid(65534) != 0 || setuid(65534) != 0) return 3;
  gl_lclient *lc;
  char why[256];
  if (gl_lclient_connect(sock, 5000, &lc, why, sizeof why) == 0) return 1;
  gpulease_client *c = connect_opts(d, 0);
  if (!c) return 2;
  gpulease_session *s;
  gpulease_buffer b;
  gpulease_error err;
  size_t n = 4 * MiB;
  uint8_t *p = malloc(n), *q = malloc(n);
  fill(p, n, 9);
  int rc = 0;
  if (gpulease_session_open(c, l, &s, &err) != GPULEASE_OK ||
      gpulease_mem_alloc(s, n, &b, &err) != GPULEASE_OK ||
      gpulease_mem_write(s, b, 0, p, n, &err) != GPULEASE_OK ||
      gpulease_mem_read(s, b, 0, q, n, &err) != GPULEASE_OK || memcmp(p, q, n) != 0) {
    fprintf(stderr, "nobody: %s\n", err.message);
    rc = 2;
  }
  return rc;
}

static void test_local_socket_mode(void **state) {
  (void)state;
  if (geteuid() != 0) {
    printf("not root: cannot switch users to try the socket's mode; skipped\n");
    return;
  }
  char dir[] = "/tmp/gl-sock-XXXXXX";
  assert_non_null(mkdtemp(dir));
  assert_int_equal(chmod(dir, 0755), 0);
  char sock[128];
  snprintf(sock, sizeof sock, "%s/gpuleased.sock", dir);
  const char *extra[] = {"--local-socket", sock, NULL};
  gl_test_daemon d;
  assert_int_equal(start_daemon(&d, "64M", extra), 0);
  struct stat st;
  assert_int_equal(stat(sock, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0660);
  gpulease_client *c = connect_opts(&d, 1);
  gpulease_lease l;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 8 * MiB, 120, &l, E));
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) _exit(as_nobody(&d, sock, &l));
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  printf("another user: %s\n", WEXITSTATUS(status) == 0
                                   ? "kept out of the local socket, served over QUIC"
                                   : "unexpected");
  assert_int_equal(WEXITSTATUS(status), 0);
  gpulease_lease_free(c, &l, NULL);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
  rmdir(dir);
}

/* ======================================================================
 * A client killed in the middle of a transfer
 * ==================================================================== */

static void test_local_client_killed(void **state) {
  (void)state;
  gl_test_daemon d;
  assert_int_equal(start_daemon(&d, "512M", NULL), 0);
  gpulease_client *c = connect_opts(&d, 1);
  gpulease_lease l;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 300 * MiB, 120, &l, E));
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) { /* transfers through shared memory until killed */
    gpulease_client *k = connect_opts(&d, 0);
    gpulease_session *s;
    gpulease_buffer b;
    gpulease_error err;
    size_t n = 256 * MiB;
    void *p = NULL;
    if (!k || gpulease_session_open(k, &l, &s, &err) != GPULEASE_OK ||
        gpulease_mem_alloc(s, n, &b, &err) != GPULEASE_OK ||
        gpulease_host_alloc(k, n, &p, &err) != GPULEASE_OK)
      _exit(2);
    for (;;)
      if (gpulease_mem_write(s, b, 0, p, n, &err) != GPULEASE_OK) _exit(3);
  }
  for (int i = 0; i < 500 && !worker_maps_segment(&d); i++) usleep(10000);
  assert_true(worker_maps_segment(&d));
  usleep(100000);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  /* Its connection closed: the worker unmaps its segment. */
  int waited = 0;
  for (; waited < 300 && worker_maps_segment(&d); waited++) usleep(10000);
  printf("segment gone %d ms after the client was killed\n", waited * 10);
  if (worker_maps_segment(&d)) { /* say why before failing */
    char cmd[600];
    snprintf(cmd, sizeof cmd,
             "grep -E 'local|segment|SHM|WARN|ERROR' %s/daemon.log | tail -25 >&2; "
             "for p in $(pgrep -P %d); do grep gpulease-segment /proc/$p/maps >&2; done",
             d.dir, (int)d.pid);
    if (system(cmd) != 0) fprintf(stderr, "(no log)\n");
  }
  assert_false(worker_maps_segment(&d));
  /* The lease goes on. */
  gpulease_session *s;
  CHECK(gpulease_session_open(c, &l, &s, E));
  gpulease_buffer b;
  CHECK(gpulease_mem_alloc(s, 1 * MiB, &b, E));
  CHECK(gpulease_session_close(s, E));
  gpulease_lease_free(c, &l, NULL);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_local_transfers),
      cmocka_unit_test(test_local_refusals),
      cmocka_unit_test(test_local_pinned_budget),
      cmocka_unit_test(test_local_socket_mode),
      cmocka_unit_test(test_local_client_killed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
