/*
 * quic_transfer.c - benchmark: bulk bytes over one QUIC connection of
 * src/net (gl_qserver on a libev loop in a thread, gl_qclient in the main
 * thread, one process, loopback) beside a plain loopback TCP transfer of the
 * same bytes measured in the same run.
 *
 *   gl_bench_quic [--runs N] [--mib A,B,...] [--max-udp-payload BYTES]
 *                 [--host 127.0.0.1|::1] [--no-gso] [--copy] [--only up|down]
 *                 [--no-tcp] [--verbose]
 *
 * For each size (default 64 and 256 MiB) and direction it prints the
 * median GB/s (10^9 bytes per second) over N runs (default 5):
 *   upload    one request of SIZE bytes, a 16-byte reply;
 *   download  a 9-byte request, one reply of SIZE bytes;
 * each timed from the call to the whole reply in hand, on a connection that
 * has already carried one transfer (warm: congestion window and path MTU
 * found). Requests and replies are handed over without a copy
 * (gl_qclient_send_take, gl_qreq_reply_take) and responses handed back for
 * reuse (gl_qclient_release), as a caller moving bulk data should; the
 * server reuses its request buffers by itself. The TCP column moves the
 * same bytes one way over a loopback TCP connection between two threads,
 * into a buffer of the whole size (reused). The ratio is QUIC / TCP.
 *
 * --max-udp-payload caps the UDP datagrams (e.g. 1452, an Ethernet path);
 * --no-gso turns UDP GSO off (sendmmsg only); --copy uses the copying calls
 * (gl_qclient_send, gl_qreq_reply) as callers do today; --only and --no-tcp narrow
 * the run (for a profiler); --verbose logs each connection's path MTU,
 * congestion window and system calls. A benchmark prints figures; it is
 * never a timed test.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "common/log.h"
#include "common/util.h"
#include "net/quic.h"
#include "net/tls.h"
#include "median.h"

#define DEFAULT_RUNS 5
#define MAX_SIZES 8
#define TCP_CHUNK (1u << 20)

/* CPU time of a thread (pthread_self(): the calling one), in seconds. */
static double thread_cpu_s(pthread_t t) {
  clockid_t id = CLOCK_THREAD_CPUTIME_ID;
  struct timespec ts;
  if (!pthread_equal(t, pthread_self()) && pthread_getcpuclockid(t, &id) != 0) return 0.0;
  if (clock_gettime(id, &ts) != 0) return 0.0;
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *why) {
  fprintf(stderr, "gl_bench_quic: %s: %s\n", what, why);
  exit(1);
}

/* ======================================================================
 * QUIC server: a libev loop in a thread
 * ==================================================================== */

typedef struct server {
  struct ev_loop *loop;
  gl_qserver *srv;
  pthread_t thread;
  ev_async stop;
  _Atomic(uint8_t *) reply; /* the next download reply (malloc'd, ready) */
  const uint8_t *payload;   /* --copy: replies are copied from here */
  bool copy;
} server;

/* "U" + bytes: reply the byte count (8 bytes, little endian) and 8 zero
 * bytes. "D" + u64 n: reply n bytes, the buffer main() made ready. */
static void on_request(void *user, gl_qreq *req, const uint8_t *msg, size_t len, int err) {
  server *s = user;
  if (err != GL_QREQ_OK || len == 0) {
    (void)gl_qreq_reply(req, (const uint8_t *)"ERR", 3);
    return;
  }
  if (msg[0] == 'D' && len == 9) {
    uint64_t n;
    memcpy(&n, msg + 1, 8);
    if (s->copy) {
      (void)gl_qreq_reply(req, s->payload, (size_t)n);
      return;
    }
    uint8_t *r = atomic_exchange(&s->reply, NULL);
    (void)gl_qreq_reply_take(req, r, r ? (size_t)n : 0);
    return;
  }
  uint8_t out[16] = {0};
  uint64_t got = len - 1;
  memcpy(out, &got, 8);
  (void)gl_qreq_reply(req, out, sizeof out);
}

static void stop_cb(struct ev_loop *loop, ev_async *w, int revents) {
  (void)revents;
  server *s = w->data;
  gl_qserver_del(s->srv);
  s->srv = NULL;
  ev_async_stop(loop, w);
  ev_break(loop, EVBREAK_ALL);
}

static void *server_main(void *arg) {
  server *s = arg;
  (void)pthread_setname_np(pthread_self(), "gl-qserver");
  ev_run(s->loop, 0);
  return NULL;
}

/* ======================================================================
 * TCP baseline
 * ==================================================================== */

typedef struct tcp_side {
  int fd;
  uint8_t *buf;
  size_t len;
  bool sender;
} tcp_side;

static void tcp_write_all(int fd, const uint8_t *p, size_t len) {
  while (len) {
    size_t n = len < TCP_CHUNK ? len : TCP_CHUNK;
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) die("tcp write", strerror(errno));
    p += w;
    len -= (size_t)w;
  }
}

static void tcp_read_all(int fd, uint8_t *p, size_t len) {
  while (len) {
    ssize_t r = read(fd, p, len < TCP_CHUNK ? len : TCP_CHUNK);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) die("tcp read", r == 0 ? "closed" : strerror(errno));
    p += r;
    len -= (size_t)r;
  }
}

/* The far end: receives len bytes then answers one byte, or waits for a
 * byte then sends len bytes. */
static void *tcp_peer(void *arg) {
  tcp_side *t = arg;
  uint8_t b = 0;
  if (t->sender) {
    tcp_read_all(t->fd, &b, 1);
    tcp_write_all(t->fd, t->buf, t->len);
  } else {
    tcp_read_all(t->fd, t->buf, t->len);
    tcp_write_all(t->fd, &b, 1);
  }
  return NULL;
}

/* One TCP transfer of len bytes (upload: we send; download: we receive),
 * in seconds. */
static double tcp_once(size_t len, bool upload, uint8_t *src, uint8_t *dst) {
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 1) != 0 ||
      getsockname(ls, (struct sockaddr *)&a, &al) != 0)
    die("tcp listen", strerror(errno));
  int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0)
    die("tcp connect", strerror(errno));
  int p = accept(ls, NULL, NULL);
  if (p < 0) die("tcp accept", strerror(errno));
  close(ls);
  int one = 1;
  (void)setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  (void)setsockopt(p, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  tcp_side peer = {.fd = p, .buf = upload ? dst : src, .len = len, .sender = !upload};
  pthread_t th;
  if (pthread_create(&th, NULL, tcp_peer, &peer) != 0) die("pthread_create", "failed");
  uint8_t b = 0;
  uint64_t t0 = gl_mono_ns();
  if (upload) {
    tcp_write_all(c, src, len);
    tcp_read_all(c, &b, 1);
  } else {
    tcp_write_all(c, &b, 1);
    tcp_read_all(c, dst, len);
  }
  double dt = (double)(gl_mono_ns() - t0) / 1e9;
  pthread_join(th, NULL);
  close(c);
  close(p);
  return dt;
}

/* ======================================================================
 * QUIC transfers
 * ==================================================================== */

/* A malloc'd copy of len bytes at src (made before the clock starts). */
static uint8_t *copy_of(const uint8_t *src, size_t len) {
  uint8_t *p = malloc(len);
  if (!p) die("malloc", "out of memory");
  memcpy(p, src, len);
  return p;
}

/* One QUIC transfer, in seconds; checks the reply's size. upmsg: "U" and
 * the payload; payload: what download replies hold. */
static double quic_once(gl_qclient *c, server *s, size_t len, bool upload, const uint8_t *upmsg,
                        const uint8_t *payload, double *cpu_c, double *cpu_s) {
  uint8_t dreq[9] = {'D'};
  uint64_t n = len;
  memcpy(dreq + 1, &n, 8);
  uint8_t *msg = NULL;
  if (!s->copy) {
    msg = upload ? copy_of(upmsg, len + 1) : copy_of(dreq, sizeof dreq);
    if (!upload) atomic_store(&s->reply, copy_of(payload, len));
  }
  uint8_t *resp = NULL;
  size_t rlen = 0;
  uint64_t token;
  char err[512];
  double c0 = thread_cpu_s(pthread_self()), s0 = thread_cpu_s(s->thread);
  uint64_t t0 = gl_mono_ns();
  size_t mlen = upload ? len + 1 : sizeof dreq;
  int rc = s->copy ? gl_qclient_send(c, upload ? upmsg : dreq, mlen, &token, err, sizeof err)
                   : gl_qclient_send_take(c, msg, mlen, &token, err, sizeof err);
  if (rc == GL_QC_OK) rc = gl_qclient_wait(c, token, &resp, &rlen, err, sizeof err);
  double dt = (double)(gl_mono_ns() - t0) / 1e9;
  *cpu_c += thread_cpu_s(pthread_self()) - c0;
  *cpu_s += thread_cpu_s(s->thread) - s0;
  if (rc != GL_QC_OK) die("quic request", err);
  uint64_t got = 0;
  if (upload && rlen == 16) memcpy(&got, resp, 8);
  if ((upload && got != len) || (!upload && rlen != len)) die("quic request", "short reply");
  gl_qclient_release(c, resp, rlen);
  return dt;
}

int main(int argc, char **argv) {
  int runs = DEFAULT_RUNS;
  size_t sizes_mib[MAX_SIZES] = {64, 256};
  size_t nsizes = 2;
  size_t max_udp = 0;
  bool no_gso = false, verbose = false, no_tcp = false, copy = false;
  int only = -1; /* 1: uploads, 0: downloads */
  const char *host = "127.0.0.1";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--runs") && v) {
      runs = atoi(v);
      i++;
    } else if (!strcmp(a, "--mib") && v) {
      nsizes = 0;
      for (char *s = argv[++i], *end; *s && nsizes < MAX_SIZES; s = *end ? end + 1 : end) {
        sizes_mib[nsizes++] = (size_t)strtoul(s, &end, 10);
        if (end == s) die("--mib", "want a list like 64,256");
      }
    } else if (!strcmp(a, "--max-udp-payload") && v) {
      max_udp = (size_t)strtoul(argv[++i], NULL, 10);
    } else if (!strcmp(a, "--host") && v) {
      host = argv[++i];
    } else if (!strcmp(a, "--no-gso")) {
      no_gso = true;
    } else if (!strcmp(a, "--verbose")) {
      verbose = true;
    } else if (!strcmp(a, "--no-tcp")) {
      no_tcp = true;
    } else if (!strcmp(a, "--copy")) {
      copy = true;
    } else if (!strcmp(a, "--only") && v && (!strcmp(v, "up") || !strcmp(v, "down"))) {
      only = !strcmp(argv[++i], "up");
    } else {
      fprintf(stderr,
              "usage: gl_bench_quic [--runs N] [--mib A,B,...] [--max-udp-payload BYTES]\n"
              "                     [--host 127.0.0.1|::1] [--no-gso] [--copy] [--only up|down]\n"
              "                     [--no-tcp] [--verbose]\n");
      return 2;
    }
  }
  if (runs < 1 || nsizes == 0) die("arguments", "need at least one run and one size");
  size_t max_len = 0;
  for (size_t i = 0; i < nsizes; i++) {
    if (sizes_mib[i] == 0) die("--mib", "sizes must be at least 1");
    if (sizes_mib[i] << 20 > max_len) max_len = sizes_mib[i] << 20;
  }
  gl_log_init("gl_bench_quic", verbose ? GL_LOG_DEBUG : GL_LOG_WARN);

  /* A certificate for the server, in a temporary directory. */
  char dir[] = "/tmp/gl-bench-quic-XXXXXX";
  if (!mkdtemp(dir)) die("mkdtemp", strerror(errno));
  char cert[512], key[512], fp[GL_TLS_FP_HEX_LEN], err[512];
  int created = 0;
  if (gl_tls_ensure_self_signed(dir, cert, key, sizeof cert, &created, err, sizeof err) != 0 ||
      gl_tls_file_fingerprint(cert, fp, err, sizeof err) != 0)
    die("certificate", err);

  /* Payloads: what uploads send (tag byte first), what downloads return,
   * and where TCP receives. Touched once so no run pays page faults. */
  uint8_t *up = malloc(max_len + 1), *payload = malloc(max_len), *sink = malloc(max_len);
  if (!up || !payload || !sink) die("malloc", "out of memory");
  for (size_t i = 0; i < max_len; i++) payload[i] = (uint8_t)(i * 131u + (i >> 12));
  up[0] = 'U';
  memcpy(up + 1, payload, max_len);
  memset(sink, 0, max_len);

  server s = {.payload = payload, .copy = copy};
  s.loop = ev_loop_new(EVFLAG_AUTO);
  gl_qserver_config scfg = {
      .listen_host = strchr(host, ':') ? "::1" : "127.0.0.1",
      .cert_file = cert,
      .key_file = key,
      .max_message_bytes = max_len + 1,
      .max_streams_per_conn = 16,
      .max_udp_payload_bytes = max_udp,
      .no_gso = no_gso,
      .on_request = on_request,
      .user = &s,
  };
  if (!s.loop || gl_qserver_new(s.loop, &scfg, &s.srv, err, sizeof err) != 0)
    die("gl_qserver_new", err);
  ev_async_init(&s.stop, stop_cb);
  s.stop.data = &s;
  ev_async_start(s.loop, &s.stop);
  if (pthread_create(&s.thread, NULL, server_main, &s) != 0) die("pthread_create", "failed");

  gl_qclient_config ccfg = {
      .host = host,
      .port = gl_qserver_port(s.srv),
      .pin_sha256 = fp,
      .timeout_ms = 60000,
      .max_response_bytes = max_len,
      .max_udp_payload_bytes = max_udp,
      .no_gso = no_gso,
  };

  printf("gl_bench_quic: one QUIC connection over loopback (%s) vs loopback TCP, same bytes,\n"
         "median of %d runs; UDP payload %s%zu bytes%s%s\n",
         host, runs, max_udp ? "at most " : "up to ", max_udp ? max_udp : (size_t)65488,
         no_gso ? ", GSO off" : "", copy ? ", copying calls" : "");
  printf("%-9s %9s %12s %12s %8s\n", "direction", "size", "QUIC GB/s", "TCP GB/s", "QUIC/TCP");
  double *qv = calloc((size_t)runs, sizeof *qv), *tv = calloc((size_t)runs, sizeof *tv);
  if (!qv || !tv) die("calloc", "out of memory");
  for (size_t si = 0; si < nsizes; si++) {
    size_t len = sizes_mib[si] << 20;
    for (int dir_up = 1; dir_up >= 0; dir_up--) {
      bool upload = dir_up == 1;
      if (only >= 0 && only != dir_up) continue;
      gl_qclient *c = NULL;
      if (gl_qclient_connect(&ccfg, &c, err, sizeof err) != GL_QC_OK) die("connect", err);
      double cpu_c = 0, cpu_s = 0, busy = 0;
      (void)quic_once(c, &s, len, upload, up, payload, &cpu_c, &cpu_s); /* warm-up */
      cpu_c = cpu_s = 0;
      for (int r = 0; r < runs; r++) {
        double dt = quic_once(c, &s, len, upload, up, payload, &cpu_c, &cpu_s);
        busy += dt;
        qv[r] = (double)len / dt / 1e9;
        tv[r] = no_tcp ? 0.0 : (double)len / tcp_once(len, upload, up + 1, sink) / 1e9;
      }
      gl_qclient_del(c);
      double q = median(qv, (size_t)runs), t = median(tv, (size_t)runs);
      printf("%-9s %5zu MiB %12.2f %12.2f %8.2f\n", upload ? "upload" : "download",
             sizes_mib[si], q, t, t > 0 ? q / t : 0.0);
      if (verbose)
        printf("          CPU busy while QUIC ran: client thread %.0f%%, server thread %.0f%%\n",
               100 * cpu_c / busy, 100 * cpu_s / busy);
      fflush(stdout);
    }
  }

  ev_async_send(s.loop, &s.stop);
  pthread_join(s.thread, NULL);
  ev_loop_destroy(s.loop);
  free(qv);
  free(tv);
  free(up);
  free(payload);
  free(sink);
  unlink(cert);
  unlink(key);
  rmdir(dir);
  return 0;
}
