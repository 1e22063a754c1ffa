/*
 * session_bench.c - the speed table of issue 9: gpulease against the local
 * CUDA driver, measured in the same run on the same node.
 *
 *   gl_bench_session --addr HOST:PORT --pin-sha256 HEX [--mib N] [--launches N]
 *                    [--iters N] [--batch N] [--local-mib N] [--stripes N] [--only WHAT]
 *
 * Rows (medians of several rounds), gpulease beside the local driver:
 *   - MEM_WRITE and MEM_READ of N MiB from pageable host memory over one
 *     QUIC connection, in GB/s (local: cuMemcpyHtoD / cuMemcpyDtoH,
 *     pageable and pinned), and of --local-mib MiB striped over the
 *     daemon's stripe ports (the library's default);
 *   - LAUNCH then SYNC of an empty kernel in one round trip
 *     (gpulease_launch_sync), in us (local: cuLaunchKernel +
 *     cuCtxSynchronize); the same as two calls is printed below the table;
 *   - pipelined launches per second from one session (local: N
 *     cuLaunchKernel, one cuCtxSynchronize);
 *   - GPU_SUBMIT on a warm lease, module cached: a 256-thread kernel and
 *     1 KiB read back, round trip in us (local: launch + sync + read).
 * Each row also gives the target and whether it is met.
 *
 * Without a GPU in this process (CI, a laptop) the local column says so;
 * the remote one is then whatever device the daemon offers (the emulated
 * one), and the transfers are printed next to a loopback TCP transfer of
 * the same bytes measured in the same run, so a regression of the data
 * path shows on any machine.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "gpu/cuda_api.h"
#include "gpulease/gpulease.h"
#include "iota_ptx.h"
#include "median.h"

static const char k_empty_ptx[] = ".version 7.0\n.target sm_70\n.address_size 64\n"
                                  ".visible .entry empty()\n{\n  ret;\n}\n";


static double now_s(void) { return (double)gl_mono_ns() / 1e9; }

typedef struct figures {
  double write_gbs, read_gbs;             /* pageable */
  /* Same host, through the local socket's shared memory: from pageable
   * memory (staged) and from gpulease_host_alloc memory. */
  double lwrite_gbs, lread_gbs, hwrite_gbs, hread_gbs;
  double write_pinned_gbs, read_pinned_gbs; /* local only */
  /* Where a round trip's time goes (remote only): LEASE_QUERY (answered by
   * the daemon alone), SYNC with nothing pending (daemon, worker, no
   * kernel). */
  double query_us, sync_us;
  double launch_then_sync_us; /* gpulease_launch, then gpulease_session_sync: two requests */
  double swrite_gbs, sread_gbs;   /* striped over the daemon's stripe ports */
  double launch_sync_us;
  double launches_per_s;
  double submit_us;
} figures;

#define ROUNDS 5

/* ---- local: the CUDA driver in this process ---- */

static int local_figures(size_t bytes, int launches, int iters, figures *f) {
  gl_cuda cu;
  char err[256];
  if (gl_cuda_load(&cu, err, sizeof err) != 0) {
    printf("local: no CUDA driver here (%s)\n", err);
    return -1;
  }
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod, imod;
  CUfunction fn, iota;
  CUdeviceptr d, out;
  if (cu.cuInit(0) || cu.cuDeviceGet(&dev, 0) || cu.cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cu.cuCtxSetCurrent(ctx) || cu.cuModuleLoadDataEx(&mod, k_empty_ptx, 0, NULL, NULL) ||
      cu.cuModuleGetFunction(&fn, mod, "empty") ||
      cu.cuModuleLoadDataEx(&imod, k_iota_ptx, 0, NULL, NULL) ||
      cu.cuModuleGetFunction(&iota, imod, "iota") || cu.cuMemAlloc(&d, bytes) ||
      cu.cuMemAlloc(&out, 1024)) {
    printf("local: CUDA setup failed\n");
    return -1;
  }
  double *v = calloc((size_t)iters, sizeof *v), r[ROUNDS], w[ROUNDS], rd[ROUNDS];
  for (int i = 0; i < iters + 20; i++) {
    double t0 = now_s();
    cu.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    cu.cuCtxSynchronize();
    if (i >= 20) v[i - 20] = (now_s() - t0) * 1e6;
  }
  f->launch_sync_us = median(v, (size_t)iters);
  uint8_t small[1024];
  void *args[] = {&out};
  for (int i = 0; i < iters + 20; i++) {
    double t0 = now_s();
    cu.cuLaunchKernel(iota, 1, 1, 1, 256, 1, 1, 0, NULL, args, NULL);
    cu.cuCtxSynchronize();
    cu.cuMemcpyDtoH(small, out, sizeof small);
    if (i >= 20) v[i - 20] = (now_s() - t0) * 1e6;
  }
  f->submit_us = median(v, (size_t)iters);
  for (int k = 0; k < ROUNDS; k++) {
    double t0 = now_s();
    for (int i = 0; i < launches; i++) cu.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    cu.cuCtxSynchronize();
    r[k] = launches / (now_s() - t0);
  }
  f->launches_per_s = median(r, ROUNDS);
  uint8_t *host = malloc(bytes);
  memset(host, 0x5A, bytes);
  for (int k = 0; k < ROUNDS; k++) {
    double t0 = now_s();
    cu.cuMemcpyHtoD(d, host, bytes);
    w[k] = bytes / (now_s() - t0) / 1e9;
    t0 = now_s();
    cu.cuMemcpyDtoH(host, d, bytes);
    rd[k] = bytes / (now_s() - t0) / 1e9;
  }
  f->write_gbs = median(w, ROUNDS);
  f->read_gbs = median(rd, ROUNDS);
  if (cu.cuMemHostRegister(host, bytes, 0) == CUDA_SUCCESS) {
    for (int k = 0; k < ROUNDS; k++) {
      double t0 = now_s();
      cu.cuMemcpyHtoD(d, host, bytes);
      w[k] = bytes / (now_s() - t0) / 1e9;
      t0 = now_s();
      cu.cuMemcpyDtoH(host, d, bytes);
      rd[k] = bytes / (now_s() - t0) / 1e9;
    }
    f->write_pinned_gbs = median(w, ROUNDS);
    f->read_pinned_gbs = median(rd, ROUNDS);
    cu.cuMemHostUnregister(host);
  }
  free(host);
  free(v);
  cu.cuMemFree(d);
  cu.cuMemFree(out);
  cu.cuModuleUnload(mod);
  cu.cuModuleUnload(imod);
  cu.cuDevicePrimaryCtxRelease(dev);
  return 0;
}

/* ---- loopback TCP: the same bytes through the kernel's TCP, one thread
 * each side (the baseline on machines without a GPU) ---- */

typedef struct tcp_sink {
  int fd;
  size_t bytes;
} tcp_sink;

static void *tcp_drain(void *arg) {
  tcp_sink *t = arg;
  int c = accept(t->fd, NULL, NULL);
  if (c < 0) return NULL;
  size_t got = 0, cap = 1 << 20;
  uint8_t *buf = malloc(cap);
  while (got < t->bytes * ROUNDS) {
    ssize_t n = read(c, buf, cap);
    if (n <= 0) break;
    got += (size_t)n;
  }
  free(buf);
  close(c);
  return NULL;
}

static double tcp_gbs(size_t bytes) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0 ||
      getsockname(l, (struct sockaddr *)&a, &alen) != 0)
    return 0;
  tcp_sink t = {.fd = l, .bytes = bytes};
  pthread_t th;
  pthread_create(&th, NULL, tcp_drain, &t);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) return 0;
  uint8_t *buf = malloc(bytes);
  memset(buf, 0x3C, bytes);
  double v[ROUNDS];
  for (int k = 0; k < ROUNDS; k++) {
    double t0 = now_s();
    size_t sent = 0;
    while (sent < bytes) {
      ssize_t n = write(s, buf + sent, bytes - sent);
      if (n <= 0) break;
      sent += (size_t)n;
    }
    v[k] = bytes / (now_s() - t0) / 1e9;
  }
  close(s);
  pthread_join(th, NULL);
  close(l);
  free(buf);
  return median(v, ROUNDS);
}

/* ---- remote: a session on a lease, and GPU_SUBMIT ---- */

#define TRY(call)                                                                       \
  do {                                                                                  \
    if ((call) != GPULEASE_OK) {                                                        \
      fprintf(stderr, "bench: %s: %s: %s\n", #call, gpulease_status_name(err.status),   \
              err.message);                                                             \
      return -1;                                                                        \
    }                                                                                   \
  } while (0)

/* ROUNDS round trips of `bytes`: MEM_WRITE from src into b, then MEM_READ
 * back into dst (zeroed first), compared with ref. Median GB/s each way in
 * *write_gbs and *read_gbs; *bad set when a read differs. -1 when a call
 * fails. */
static int round_trips(gpulease_session *s, gpulease_buffer b, const uint8_t *src, uint8_t *dst,
                       const uint8_t *ref, size_t bytes, double *write_gbs, double *read_gbs,
                       int *bad) {
  gpulease_error err;
  double w[ROUNDS], rd[ROUNDS];
  for (int k = 0; k < ROUNDS; k++) {
    double t0 = now_s();
    TRY(gpulease_mem_write(s, b, 0, src, bytes, &err));
    w[k] = bytes / (now_s() - t0) / 1e9;
    memset(dst, 0, bytes);
    t0 = now_s();
    TRY(gpulease_mem_read(s, b, 0, dst, bytes, &err));
    rd[k] = bytes / (now_s() - t0) / 1e9;
    *bad |= memcmp(ref, dst, bytes) != 0;
  }
  *write_gbs = median(w, ROUNDS);
  *read_gbs = median(rd, ROUNDS);
  return 0;
}

/* The empty kernel loaded in session s: *fn. -1 when a call fails. */
static int empty_kernel(gpulease_session *s, gpulease_function *fn) {
  gpulease_error err;
  gpulease_module m;
  TRY(gpulease_module_load(s, k_empty_ptx, sizeof k_empty_ptx - 1, GPULEASE_IMAGE_PTX, &m, NULL,
                           &err));
  TRY(gpulease_function_get(s, m, "empty", fn, NULL, &err));
  return 0;
}

/* Median us of iters LAUNCH-then-SYNC round trips of fn (after 20 warm-up
 * ones); -1 when a call fails. */
static double launch_sync_rtt(gpulease_session *s, gpulease_function fn, int iters, double *v,
                              int one_trip) {
  gpulease_error err;
  gpulease_op_failure fl = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  const uint32_t one[3] = {1, 1, 1};
  for (int i = 0; i < iters + 20; i++) {
    double t0 = now_s();
    if (one_trip) {
      TRY(gpulease_launch_sync(s, fn, one, one, 0, NULL, 0, &fl, &err));
    } else {
      TRY(gpulease_launch(s, fn, one, one, 0, NULL, 0, &err));
      TRY(gpulease_session_sync(s, &fl, &err));
    }
    if (i >= 20) v[i - 20] = (now_s() - t0) * 1e6;
  }
  return median(v, (size_t)iters);
}

/* Median us of iters GPU_SUBMITs of the iota kernel (1 KiB out, checked)
 * on lease l, after 20 warm-up ones (the first loads the module). */
static double submit_rtt(gpulease_client *c, const gpulease_lease *l, int iters, double *v) {
  gpulease_error err;
  gpulease_submit_desc d;
  gpulease_submit_desc_default(&d);
  d.image = k_iota_ptx;
  d.image_size = sizeof k_iota_ptx - 1;
  d.kernel = "iota";
  d.block[0] = 256;
  d.output_size = 1024;
  for (int i = 0; i < iters + 20; i++) {
    gpulease_submit_result res = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
    double t0 = now_s();
    TRY(gpulease_submit(c, l, &d, &res, &err));
    double dt = now_s() - t0;
    float last;
    memcpy(&last, (uint8_t *)res.output + 1020, 4);
    gpulease_submit_result_release(&res);
    if (last != 256.0f) {
      fprintf(stderr, "bench: GPU_SUBMIT's output is wrong\n");
      return -1;
    }
    if (i >= 20) v[i - 20] = dt * 1e6;
  }
  return median(v, (size_t)iters);
}

static int remote_figures(gpulease_client *c, size_t bytes, int launches, int iters, int batch,
                          figures *f) {
  gpulease_error err;
  gpulease_lease l;
  gpulease_session *s;
  gpulease_function fn;
  gpulease_buffer b;
  gpulease_op_failure fl = {.struct_version = GPULEASE_OP_FAILURE_VERSION};
  TRY(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, bytes + (1 << 20), 120, &l, &err));
  TRY(gpulease_session_open(c, &l, &s, &err));
  if (batch > 0) TRY(gpulease_session_set_batch(s, (unsigned)batch, &err));
  if (empty_kernel(s, &fn) != 0) return -1;
  TRY(gpulease_mem_alloc(s, bytes, &b, &err));
  const uint32_t one[3] = {1, 1, 1};
  double *v = calloc((size_t)iters, sizeof *v), r[ROUNDS];
  if ((f->launch_sync_us = launch_sync_rtt(s, fn, iters, v, 1)) < 0) return -1;
  if ((f->launch_then_sync_us = launch_sync_rtt(s, fn, iters, v, 0)) < 0) return -1;
  for (int i = 0; i < iters + 20; i++) {
    double t0 = now_s();
    TRY(gpulease_lease_query(c, &l, &err));
    if (i >= 20) v[i - 20] = (now_s() - t0) * 1e6;
  }
  f->query_us = median(v, (size_t)iters);
  for (int i = 0; i < iters + 20; i++) {
    double t0 = now_s();
    TRY(gpulease_session_sync(s, &fl, &err));
    if (i >= 20) v[i - 20] = (now_s() - t0) * 1e6;
  }
  f->sync_us = median(v, (size_t)iters);
  for (int k = 0; k < ROUNDS; k++) {
    double t0 = now_s();
    for (int i = 0; i < launches; i++) TRY(gpulease_launch(s, fn, one, one, 0, NULL, 0, &err));
    TRY(gpulease_session_sync(s, &fl, &err));
    r[k] = launches / (now_s() - t0);
  }
  f->launches_per_s = median(r, ROUNDS);
  uint8_t *host = malloc(bytes), *back = malloc(bytes);
  for (size_t i = 0; i < bytes; i++) host[i] = (uint8_t)(i * 131 + 7);
  int bad = 0;
  if (round_trips(s, b, host, back, host, bytes, &f->write_gbs, &f->read_gbs, &bad) != 0)
    return -1;
  free(host);
  free(back);
  gpulease_session_close(s, NULL);

  if ((f->submit_us = submit_rtt(c, &l, iters, v)) < 0) return -1;
  free(v);
  gpulease_lease_free(c, &l, NULL);
  if (bad) {
    fprintf(stderr, "bench: data read back differs from what was written\n");
    return -1;
  }
  return 0;
}

/* --only WHAT: one kind of round trip alone (for GL_LAT_TRACE,
 * scripts/lat_report.py): launch-sync (gpulease_launch_sync),
 * launch-then-sync (two calls), submit (GPU_SUBMIT). Median us in *us. */
static int only_one(gpulease_client *c, const char *what, int iters, double *us) {
  gpulease_error err;
  gpulease_lease l;
  gpulease_session *s;
  gpulease_function fn;
  TRY(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 1 << 20, 120, &l, &err));
  double *v = calloc((size_t)iters, sizeof *v);
  if (!strcmp(what, "submit")) {
    *us = submit_rtt(c, &l, iters, v);
  } else {
    TRY(gpulease_session_open(c, &l, &s, &err));
    if (empty_kernel(s, &fn) != 0) return -1;
    *us = launch_sync_rtt(s, fn, iters, v, strcmp(what, "launch-then-sync") != 0);
    gpulease_session_close(s, NULL);
  }
  free(v);
  gpulease_lease_free(c, &l, NULL);
  return *us < 0 ? -1 : 0;
}

/* On a fresh lease: ROUNDS round trips of `bytes` from pageable memory
 * (median GB/s in *w, *r) and, with hw, from gpulease_host_alloc memory
 * (*hw, *hr), all compared with what was written; `what` names the path
 * in a complaint. -1 when a call fails or the bytes differ. */
static int lease_round_trips(gpulease_client *c, size_t bytes, double *w, double *r, double *hw,
                             double *hr, const char *what) {
  gpulease_error err;
  gpulease_lease l;
  gpulease_session *s;
  gpulease_buffer b;
  TRY(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, bytes + (1 << 20), 120, &l, &err));
  TRY(gpulease_session_open(c, &l, &s, &err));
  TRY(gpulease_mem_alloc(s, bytes, &b, &err));
  uint8_t *host = malloc(bytes), *back = malloc(bytes), *pin = NULL;
  for (size_t i = 0; i < bytes; i++) host[i] = (uint8_t)(i * 151 + 3);
  int bad = 0;
  if (round_trips(s, b, host, back, host, bytes, w, r, &bad) != 0) return -1;
  if (hw) {
    TRY(gpulease_host_alloc(c, bytes, (void **)&pin, &err));
    memcpy(pin, host, bytes);
    if (round_trips(s, b, pin, pin, host, bytes, hw, hr, &bad) != 0) return -1;
    gpulease_host_free(c, pin, NULL);
  }
  free(host);
  free(back);
  gpulease_session_close(s, NULL);
  gpulease_lease_free(c, &l, NULL);
  if (bad) {
    fprintf(stderr, "bench: data read back %s differs\n", what);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *addr = "127.0.0.1:5701", *pin = NULL;
  const char *token = NULL;
  size_t mib = 256;
  int launches = 10000, iters = 500, batch = 0, local_mib = 1024;
  const char *only = NULL; /* see only_one() */
  unsigned stripes = 0;     /* the striped figures: 0, the library's default */
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--addr")) addr = argv[i + 1];
    else if (!strcmp(argv[i], "--pin-sha256")) pin = argv[i + 1];
    else if (!strcmp(argv[i], "--token")) token = argv[i + 1];
    else if (!strcmp(argv[i], "--mib")) mib = (size_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--launches")) launches = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--batch")) batch = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--local-mib")) local_mib = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--only")) only = argv[i + 1];
    else if (!strcmp(argv[i], "--stripes")) stripes = (unsigned)atoi(argv[i + 1]);
  }
  if (mib < 1 || launches < 1 || iters < 1) {
    fprintf(stderr,
            "usage: %s --addr HOST:PORT --pin-sha256 HEX [--mib N] [--launches N] [--iters N] "
            "[--batch N] [--local-mib N] [--stripes N] [--only launch-sync|launch-then-sync|submit]\n",
            argv[0]);
    return 2;
  }
  size_t bytes = mib << 20;
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = addr;
  o.pin_sha256 = pin;
  o.bearer_token = token; /* a daemon run with --auth token */
  o.insecure = pin == NULL;
  o.timeout_ms = 120000;
  o.no_local = 1; /* QUIC first, even on the daemon's machine */
  o.stripes = 1;  /* and one connection */
  gpulease_client *c;
  gpulease_error err;
  if (gpulease_client_connect(&o, &c, &err) != GPULEASE_OK) {
    fprintf(stderr, "bench: %s\n", err.message);
    return 1;
  }
  figures rem = {0}, loc = {0};
  if (only) {
    double us;
    int rc = only_one(c, only, iters, &us);
    if (rc == 0) printf("%s: %.1f us (median of %d)\n", only, us, iters);
    gpulease_client_close(c);
    return rc != 0;
  }
  if (remote_figures(c, bytes, launches, iters, batch, &rem) != 0) return 1;
  gpulease_client_close(c);
  size_t lbytes = (size_t)local_mib << 20;
  o.stripes = stripes; /* 0: the default, striped over the daemon's stripe ports */
  int have_striped = 0;
  if (gpulease_client_connect(&o, &c, &err) == GPULEASE_OK) {
    have_striped = lease_round_trips(c, lbytes, &rem.swrite_gbs, &rem.sread_gbs, NULL, NULL,
                                     "over the stripes") == 0;
    gpulease_client_close(c);
  }
  o.no_local = 0;
  int have_same_host = 0;
  if (gpulease_client_connect(&o, &c, &err) == GPULEASE_OK) {
    have_same_host = lease_round_trips(c, lbytes, &rem.lwrite_gbs, &rem.lread_gbs, &rem.hwrite_gbs,
                                       &rem.hread_gbs, "through shared memory") == 0;
    gpulease_client_close(c);
  }
  int have_local = local_figures(bytes, launches, iters, &loc) == 0;
  printf("\ngpulease over QUIC (loopback, one connection) vs the local CUDA driver, same run; "
         "medians\n");
  printf("| figure | gpulease | local | gpulease/local | target | met |\n");
  printf("| --- | ---: | ---: | ---: | ---: | :---: |\n");
#define ROW(name, fmt, field, target, better_low)                                         \
  do {                                                                                    \
    int met_ = better_low ? rem.field <= (target) : rem.field >= (target);                \
    if (have_local)                                                                       \
      printf("| " name " | " fmt " | " fmt " | %.2fx | " fmt " | %s |\n", rem.field,       \
             loc.field, rem.field / loc.field, (double)(target), met_ ? "yes" : "no");    \
    else                                                                                  \
      printf("| " name " | " fmt " | (no GPU here) | | " fmt " | %s |\n", rem.field,       \
             (double)(target), met_ ? "yes" : "no");                                      \
  } while (0)
  ROW("MEM_WRITE GB/s (pageable), one connection", "%.2f", write_gbs, 2.0, 0);
  ROW("MEM_READ GB/s (pageable), one connection", "%.2f", read_gbs, 2.0, 0);
  if (have_striped) {
    printf("| MEM_WRITE %d MiB striped (GB/s) | %.2f | %.2f | %.2fx | 5.00 | %s |\n", local_mib,
           rem.swrite_gbs, loc.write_gbs, have_local ? rem.swrite_gbs / loc.write_gbs : 0,
           rem.swrite_gbs >= 5 ? "yes" : "no");
    printf("| MEM_READ %d MiB striped (GB/s) | %.2f | %.2f | %.2fx | 5.00 | %s |\n", local_mib,
           rem.sread_gbs, loc.read_gbs, have_local ? rem.sread_gbs / loc.read_gbs : 0,
           rem.sread_gbs >= 5 ? "yes" : "no");
  }
  ROW("LAUNCH then SYNC, empty kernel, one round trip (us)", "%.1f", launch_sync_us, 40.0, 1);
  ROW("pipelined launches per second", "%.0f", launches_per_s, 250000.0, 0);
  ROW("GPU_SUBMIT, warm lease, 1 KiB out (us)", "%.1f", submit_us, 40.0, 1);
  if (have_same_host) {
    /* Against the local driver from pinned memory where there is one. */
    double lw = loc.write_pinned_gbs, lr = loc.read_pinned_gbs;
    printf("| same host, MEM_WRITE %d MiB, pageable (GB/s) | %.2f | %.2f | %.2fx | 20.00 | %s |\n",
           local_mib, rem.lwrite_gbs, lw, lw > 0 ? rem.lwrite_gbs / lw : 0,
           rem.lwrite_gbs >= 20 ? "yes" : "no");
    printf("| same host, MEM_READ %d MiB, pageable (GB/s) | %.2f | %.2f | %.2fx | 20.00 | %s |\n",
           local_mib, rem.lread_gbs, lr, lr > 0 ? rem.lread_gbs / lr : 0,
           rem.lread_gbs >= 20 ? "yes" : "no");
    printf("| same host, MEM_WRITE %d MiB, gpulease_host_alloc (GB/s) | %.2f | %.2f | %.2fx | "
           "20.00 | %s |\n",
           local_mib, rem.hwrite_gbs, lw, lw > 0 ? rem.hwrite_gbs / lw : 0,
           rem.hwrite_gbs >= 20 ? "yes" : "no");
    printf("| same host, MEM_READ %d MiB, gpulease_host_alloc (GB/s) | %.2f | %.2f | %.2fx | "
           "20.00 | %s |\n",
           local_mib, rem.hread_gbs, lr, lr > 0 ? rem.hread_gbs / lr : 0,
           rem.hread_gbs >= 20 ? "yes" : "no");
  } else {
    printf("(same host: the daemon's local socket was not used)\n");
  }
  printf("(LAUNCH then SYNC as two calls, gpulease_launch and gpulease_session_sync: %.1f us)\n",
         rem.launch_then_sync_us);
  printf("(where a round trip goes: LEASE_QUERY, daemon only, %.1f us; SYNC with nothing "
         "pending, daemon and worker, %.1f us)\n",
         rem.query_us, rem.sync_us);
  if (have_local && loc.write_pinned_gbs > 0)
    printf("(local from pinned memory: write %.2f GB/s, read %.2f GB/s)\n", loc.write_pinned_gbs,
           loc.read_pinned_gbs);
  if (!have_local) {
    double tcp = tcp_gbs(bytes);
    printf("| loopback TCP, same bytes, same run (GB/s) | %.2f | | | | |\n", tcp);
    printf("(MEM_WRITE/TCP %.2fx, MEM_READ/TCP %.2fx)\n", rem.write_gbs / tcp,
           rem.read_gbs / tcp);
  }
  printf("(%d launches per round; %zu MiB per transfer; %d round trips; batch %d ops%s)\n",
         launches, mib, iters, batch > 0 ? batch : 64, batch > 0 ? "" : " (default)");
  return 0;
}
