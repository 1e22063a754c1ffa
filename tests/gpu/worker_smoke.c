/*
 * worker_smoke.c - the worker on a real GPU, without the daemon.
 *
 *   gl_worker_smoke [KERNEL_DIR | path/to/iota.ptx]
 *
 * KERNEL_DIR holds the PTX built by the gl_kernels target (iota, vector_add,
 * scale, oob, spin); given iota.ptx's path, its folder is used. Forks
 * workers over socketpairs exactly as the daemon does and checks:
 *   PROBE                 devices listed with uuid, name, cc, SMs, memory
 *   INIT 64 MiB           region base and device name; region zeroed
 *   INIT too large        CAPACITY_EXCEEDED naming the sizes
 *   iota                  out[i] == i + 1, then cached (no reload)
 *   vector_add            three pointer params + scalar n, input a and b
 *   scale                 pointer + float + int, in place
 *   param mismatch        INVALID_ARGUMENT (when the driver can tell)
 *   bad PTX               LOAD_FAILED with the JIT log (printed)
 *   missing function      LAUNCH_FAILED naming CUDA_ERROR_NOT_FOUND
 *   oob                   LAUNCH_FAILED (CUDA_ERROR_ILLEGAL_ADDRESS), the
 *                         context is lost and the worker exits 3
 *   spin                  hangs; SIGKILL reclaims it and a new worker gets
 *                         the memory again
 * Prints timings. Exit status 0 when every check passed, 1 otherwise. Not
 * registered with ctest: it needs a GPU.
 */
#include <errno.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "proto/wire.h"
#include "worker/ipc.h"
#include "worker/worker.h"

static int g_failures;

#define CHECK(cond, ...)                                                                        \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      g_failures++;                                                                             \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                                               \
      printf(__VA_ARGS__);                                                                      \
      printf("\n");                                                                             \
    }                                                                                           \
  } while (0)

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- a worker process ------------------------------------------------------ */

typedef struct wk {
  pid_t pid;
  int fd;
} wk;

static wk wk_start(void) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    perror("socketpair");
    exit(1);
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    perror("fork");
    exit(1);
  }
  if (pid == 0) {
    close(sv[0]);
    _exit(gl_worker_main(sv[1]));
  }
  close(sv[1]);
  return (wk){pid, sv[0]};
}

/* Closes the stream and returns the exit status (128+signal if killed). */
static int wk_finish(wk *w) {
  if (w->fd >= 0) close(w->fd);
  w->fd = -1;
  int status = 0;
  if (waitpid(w->pid, &status, 0) != w->pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* One call. *resp borrows from *buf (free it). Returns the response's
 * status, or -1 when the worker gave no reply. *ms: wall time. */
static int wk_call(wk *w, const gl_request *req, gl_response *resp, uint8_t **buf, double *ms) {
  *buf = NULL;
  gl_buf b;
  gl_buf_init(&b);
  if (gl_request_encode(req, &b) != GPULEASE_OK) {
    printf("cannot encode the request\n");
    return -1;
  }
  double t0 = now_ms();
  int rc = gl_ipc_write_call(w->fd, 1, b.data, b.len);
  gl_buf_free(&b);
  if (rc != 0) return -1;
  gl_header h;
  size_t len;
  uint64_t tag;
  if (gl_ipc_read_call(w->fd, GL_IPC_MAX_BODY, &tag, &h, buf, &len, NULL) != GL_IPC_MESSAGE)
    return -1;
  if (ms) *ms = now_ms() - t0;
  char err[256];
  if (gl_response_decode(*buf, len, GL_IPC_MAX_BODY, resp, err, sizeof err) != GPULEASE_OK) {
    printf("undecodable response: %s\n", err);
    return -1;
  }
  return resp->status;
}

static const char *msg_of(const gl_response *r, char *out, size_t outlen) {
  snprintf(out, outlen, "%.*s", (int)r->msg_len, r->msg ? r->msg : "");
  return out;
}

/* ---- requests ------------------------------------------------------------------ */

typedef struct image {
  uint8_t *data;
  size_t len;
} image;

static image load_ptx(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.ptx", dir, name);
  image im = {NULL, 0};
  if (gl_read_file(path, 64u << 20, &im.data, &im.len) != 0) {
    printf("cannot read %s: %s\n", path, strerror(errno));
    exit(1);
  }
  return im;
}

static gl_request submit_req(const char *kernel, const image *im, uint32_t grid, uint32_t block,
                             uint64_t output_size) {
  gl_request req;
  memset(&req, 0, sizeof req);
  req.op = GL_OP_GPU_SUBMIT;
  gl_submit_req *s = &req.u.submit;
  s->image_format = GPULEASE_IMAGE_AUTO;
  s->kernel_name = kernel;
  s->kernel_name_len = (uint16_t)strlen(kernel);
  s->grid[0] = grid;
  s->grid[1] = s->grid[2] = 1;
  s->block[0] = block;
  s->block[1] = s->block[2] = 1;
  s->output_size = output_size;
  s->image = im->data;
  s->image_len = (uint32_t)im->len;
  return req;
}

static gpulease_param ptr_param(uint64_t off) {
  gpulease_param p;
  memset(&p, 0, sizeof p);
  p.kind = GPULEASE_PARAM_POINTER;
  p.offset = off;
  return p;
}

static gpulease_param scalar_param(const void *v, uint32_t size) {
  gpulease_param p;
  memset(&p, 0, sizeof p);
  p.kind = GPULEASE_PARAM_SCALAR;
  p.size = size;
  memcpy(p.value, v, size);
  return p;
}

static void set_params(gl_request *req, const gpulease_param *p, size_t n, gl_buf *pb) {
  gl_buf_init(pb);
  if (gl_params_encode(p, n, pb) != GPULEASE_OK) {
    printf("cannot encode params\n");
    exit(1);
  }
  req->u.submit.flags = GL_SUBMIT_F_PARAMS;
  req->u.submit.param_count = (uint16_t)n;
  req->u.submit.params_raw = pb->data;
  req->u.submit.params_raw_len = pb->len;
}

/* ---- the checks ------------------------------------------------------------------ */

#define VRAM (64ull << 20)

int main(int argc, char **argv) {
  gl_log_init("smoke", GL_LOG_WARN);
  signal(SIGPIPE, SIG_IGN);
  char dir[4096] = "kernels";
  if (argc > 1) {
    snprintf(dir, sizeof dir, "%s", argv[1]);
    size_t n = strlen(dir);
    if (n > 4 && strcmp(dir + n - 4, ".ptx") == 0) {
      char tmp[4096];
      snprintf(tmp, sizeof tmp, "%s", argv[1]);
      snprintf(dir, sizeof dir, "%s", dirname(tmp));
    }
  }
  image iota = load_ptx(dir, "iota"), vadd = load_ptx(dir, "vector_add"),
        scale = load_ptx(dir, "scale"), oob = load_ptx(dir, "oob"), spin = load_ptx(dir, "spin");
  gl_response *resp = calloc(1, sizeof *resp);
  char m[GL_WIRE_MAX_MESSAGE + 1];
  uint8_t *buf;
  double ms;
  int st;

  /* ---- PROBE -------------------------------------------------------------- */
  wk w = wk_start();
  gl_request probe = {.op = GL_OP_WORKER_PROBE};
  st = wk_call(&w, &probe, resp, &buf, &ms);
  CHECK(st == GPULEASE_OK, "PROBE: %s: %s", gpulease_status_name(st), msg_of(resp, m, sizeof m));
  if (st != GPULEASE_OK) return 1;
  printf("PROBE: %u device(s) in %.1f ms\n", resp->u.probe.count, ms);
  for (unsigned i = 0; i < resp->u.probe.count; i++) {
    const gl_probe_gpu *g = &resp->u.probe.gpus[i];
    printf("  [%u] %s  %s  cc %u.%u  %u SMs  %.1f GiB\n", i, g->uuid, g->name, g->cc_major,
           g->cc_minor, g->sm_count, (double)g->total_vram_bytes / (1 << 30));
    CHECK(strncmp(g->uuid, "GPU-", 4) == 0 && strlen(g->uuid) == 40, "uuid format: %s",
          g->uuid);
    CHECK(g->sm_count > 0 && g->cc_major >= 7 && g->total_vram_bytes > 0, "device facts");
  }
  CHECK(resp->u.probe.count > 0, "no device");
  free(buf);

  /* ---- INIT --------------------------------------------------------------- */
  gl_request init = {.op = GL_OP_WORKER_INIT};
  init.u.worker_init.cuda_ordinal = 0;
  init.u.worker_init.vram_bytes = VRAM;
  st = wk_call(&w, &init, resp, &buf, &ms);
  CHECK(st == GPULEASE_OK, "INIT: %s: %s", gpulease_status_name(st), msg_of(resp, m, sizeof m));
  if (st != GPULEASE_OK) return 1;
  printf("INIT: 64 MiB at 0x%llx on %s in %.1f ms\n",
         (unsigned long long)resp->u.worker_init.region_base, resp->u.worker_init.device_name,
         ms);
  free(buf);

  /* The region starts zeroed: a no-op kernel (vector_add, n = 0) and read
   * back all of it. */
  {
    int32_t zero = 0;
    gpulease_param p[4] = {ptr_param(0), ptr_param(0), ptr_param(0), scalar_param(&zero, 4)};
    gl_buf pb;
    gl_request req = submit_req("vector_add", &vadd, 1, 32, VRAM);
    set_params(&req, p, 4, &pb);
    st = wk_call(&w, &req, resp, &buf, &ms);
    CHECK(st == GPULEASE_OK, "zero check: %s: %s", gpulease_status_name(st),
          msg_of(resp, m, sizeof m));
    if (st == GPULEASE_OK) {
      size_t nonzero = 0;
      for (size_t i = 0; i < resp->u.submit.output_len; i++) nonzero += resp->u.submit.output[i] != 0;
      CHECK(resp->u.submit.output_len == VRAM && nonzero == 0, "region not zeroed: %zu bytes",
            nonzero);
      printf("zeroed region: 64 MiB read back, all zero (%.1f ms incl. JIT + 64 MiB copy)\n", ms);
    }
    free(buf);
    gl_buf_free(&pb);
  }

  /* ---- iota ---------------------------------------------------------------- */
  for (int round = 0; round < 2; round++) {
    gl_request req = submit_req("iota", &iota, 1, 256, 1024);
    st = wk_call(&w, &req, resp, &buf, &ms);
    CHECK(st == GPULEASE_OK, "iota: %s: %s", gpulease_status_name(st), msg_of(resp, m, sizeof m));
    if (st == GPULEASE_OK) {
      float out[256];
      CHECK(resp->u.submit.output_len == sizeof out, "iota output_len %u",
            resp->u.submit.output_len);
      memcpy(out, resp->u.submit.output, sizeof out);
      int bad = 0;
      for (int i = 0; i < 256; i++) bad += out[i] != (float)(i + 1);
      CHECK(bad == 0, "iota: %d wrong values (out[0]=%g out[255]=%g)", bad, out[0], out[255]);
      printf("iota %s: 256 values ok, gpu %llu ns, round trip %.2f ms\n",
             round == 0 ? "(load+JIT)" : "(cached)  ",
             (unsigned long long)resp->u.submit.gpu_time_ns, ms);
    }
    free(buf);
  }

  /* ---- vector_add --------------------------------------------------------- */
  {
    enum { N = 1 << 16 };
    const uint64_t off_a = 0, off_b = N * 4, off_c = 2 * N * 4;
    float *in = malloc(2 * N * 4);
    for (int i = 0; i < N; i++) {
      in[i] = (float)i;
      in[N + i] = 2.0f * (float)i;
    }
    int32_t n = N;
    gpulease_param p[4] = {ptr_param(off_a), ptr_param(off_b), ptr_param(off_c),
                           scalar_param(&n, 4)};
    gl_buf pb;
    gl_request req = submit_req("vector_add", &vadd, N / 256, 256, N * 4);
    set_params(&req, p, 4, &pb);
    req.u.submit.input = (const uint8_t *)in;
    req.u.submit.input_len = 2 * N * 4;
    req.u.submit.output_offset = off_c;
    st = wk_call(&w, &req, resp, &buf, &ms);
    CHECK(st == GPULEASE_OK, "vector_add: %s: %s", gpulease_status_name(st),
          msg_of(resp, m, sizeof m));
    if (st == GPULEASE_OK) {
      const float *c = (const float *)resp->u.submit.output;
      int bad = 0;
      for (int i = 0; i < N; i++) bad += c[i] != 3.0f * (float)i;
      CHECK(bad == 0, "vector_add: %d wrong values", bad);
      printf("vector_add: %d elements ok, gpu %llu ns, round trip %.2f ms\n", N,
             (unsigned long long)resp->u.submit.gpu_time_ns, ms);
    }
    free(buf);
    gl_buf_free(&pb);

    /* scale c in place by 0.5: c = 1.5 i */
    float alpha = 0.5f;
    gpulease_param sp[3] = {ptr_param(off_c), scalar_param(&alpha, 4), scalar_param(&n, 4)};
    req = submit_req("scale", &scale, N / 256, 256, N * 4);
    set_params(&req, sp, 3, &pb);
    req.u.submit.output_offset = off_c;
    st = wk_call(&w, &req, resp, &buf, &ms);
    CHECK(st == GPULEASE_OK, "scale: %s: %s", gpulease_status_name(st),
          msg_of(resp, m, sizeof m));
    if (st == GPULEASE_OK) {
      const float *c = (const float *)resp->u.submit.output;
      int bad = 0;
      for (int i = 0; i < N; i++) bad += c[i] != 1.5f * (float)i;
      CHECK(bad == 0, "scale: %d wrong values", bad);
      printf("scale: %d elements ok, gpu %llu ns, round trip %.2f ms\n", N,
             (unsigned long long)resp->u.submit.gpu_time_ns, ms);
    }
    free(buf);
    gl_buf_free(&pb);

    /* vector_add with one parameter missing. */
    req = submit_req("vector_add", &vadd, 1, 32, 0);
    set_params(&req, p, 3, &pb);
    st = wk_call(&w, &req, resp, &buf, &ms);
    printf("param mismatch: %s: %s\n", gpulease_status_name(st), msg_of(resp, m, sizeof m));
    CHECK(st == GPULEASE_INVALID_ARGUMENT, "param mismatch gave %s", gpulease_status_name(st));
    free(buf);
    gl_buf_free(&pb);
    free(in);
  }

  /* ---- errors --------------------------------------------------------------- */
  {
    static const char bad_ptx[] = ".version 8.0\n.target sm_75\n.address_size 64\n"
                                  ".visible .entry broken(.param .u64 p)\n{\n"
                                  "  mov.u32 %r1, 1;\n  frobnicate.b32 %r1;\n  ret;\n}\n";
    image bad = {(uint8_t *)bad_ptx, sizeof bad_ptx - 1};
    gl_request req = submit_req("broken", &bad, 1, 32, 0);
    st = wk_call(&w, &req, resp, &buf, &ms);
    printf("bad PTX: %s:\n  %s\n", gpulease_status_name(st), msg_of(resp, m, sizeof m));
    CHECK(st == GPULEASE_LOAD_FAILED && strstr(m, "CUDA_ERROR_"), "bad PTX gave %s",
          gpulease_status_name(st));
    free(buf);

    req = submit_req("no_such_kernel", &iota, 1, 32, 0);
    st = wk_call(&w, &req, resp, &buf, &ms);
    printf("missing function: %s: %s\n", gpulease_status_name(st), msg_of(resp, m, sizeof m));
    CHECK(st == GPULEASE_LAUNCH_FAILED && strstr(m, "CUDA_ERROR_NOT_FOUND"), "missing fn");
    free(buf);

    req = submit_req("iota", &iota, 1, 32, 128);
    req.u.submit.output_offset = VRAM - 64;
    st = wk_call(&w, &req, resp, &buf, &ms);
    printf("range: %s: %s\n", gpulease_status_name(st), msg_of(resp, m, sizeof m));
    CHECK(st == GPULEASE_INVALID_ARGUMENT, "range check");
    free(buf);

    /* Too much shared memory: a launch error that leaves the context
     * usable. */
    req = submit_req("iota", &iota, 1, 32, 128);
    req.u.submit.shared_mem_bytes = 1u << 30;
    st = wk_call(&w, &req, resp, &buf, &ms);
    printf("launch error: %s: %s\n", gpulease_status_name(st), msg_of(resp, m, sizeof m));
    CHECK(st == GPULEASE_LAUNCH_FAILED, "shared mem launch");
    free(buf);
    req = submit_req("iota", &iota, 1, 32, 128);
    st = wk_call(&w, &req, resp, &buf, &ms);
    CHECK(st == GPULEASE_OK, "context still usable after a launch error: %s",
          msg_of(resp, m, sizeof m));
    free(buf);

    /* A fault: reply, then exit 3. */
    req = submit_req("oob", &oob, 1, 32, 0);
    st = wk_call(&w, &req, resp, &buf, &ms);
    printf("oob: %s: %s\n", gpulease_status_name(st), msg_of(resp, m, sizeof m));
    CHECK(st == GPULEASE_LAUNCH_FAILED && strstr(m, "context is lost"), "oob");
    if (!strstr(m, "CUDA_ERROR_ILLEGAL_ADDRESS"))
      printf("NOTE: oob faulted, but not with CUDA_ERROR_ILLEGAL_ADDRESS\n");
    free(buf);
    int code = wk_finish(&w);
    printf("oob: worker exit status %d\n", code);
    CHECK(code == GL_WORKER_EXIT_CONTEXT_LOST, "worker exit %d after a fault, expected 3", code);
  }

  /* ---- capacity ------------------------------------------------------------- */
  {
    wk w2 = wk_start();
    gl_request big = init;
    big.u.worker_init.vram_bytes = 1ull << 42; /* 4 TiB */
    st = wk_call(&w2, &big, resp, &buf, &ms);
    printf("INIT 4 TiB: %s: %s\n", gpulease_status_name(st), msg_of(resp, m, sizeof m));
    CHECK(st == GPULEASE_CAPACITY_EXCEEDED, "huge INIT gave %s", gpulease_status_name(st));
    free(buf);
    gl_request bad_dev = init;
    bad_dev.u.worker_init.cuda_ordinal = 999;
    st = wk_call(&w2, &bad_dev, resp, &buf, &ms);
    printf("INIT device 999: %s: %s\n", gpulease_status_name(st), msg_of(resp, m, sizeof m));
    CHECK(st == GPULEASE_NO_DEVICE, "bad ordinal gave %s", gpulease_status_name(st));
    free(buf);
    CHECK(wk_finish(&w2) == 0, "clean exit");
  }

  /* ---- a hung kernel is killed ---------------------------------------------- */
  {
    wk w3 = wk_start();
    gl_request big = init;
    big.u.worker_init.vram_bytes = 1ull << 30;
    st = wk_call(&w3, &big, resp, &buf, &ms);
    CHECK(st == GPULEASE_OK, "INIT 1 GiB for spin: %s", msg_of(resp, m, sizeof m));
    free(buf);
    gl_request req = submit_req("spin", &spin, 1, 1, 0);
    gl_buf b;
    gl_buf_init(&b);
    gl_request_encode(&req, &b);
    gl_ipc_write_all(w3.fd, b.data, b.len);
    gl_buf_free(&b);
    struct pollfd pfd = {.fd = w3.fd, .events = POLLIN};
    int ready = poll(&pfd, 1, 2000);
    CHECK(ready == 0, "spin answered?");
    double t0 = now_ms();
    kill(w3.pid, SIGKILL);
    int code = wk_finish(&w3);
    printf("spin: no reply after 2 s; SIGKILL reaped in %.1f ms (status %d)\n", now_ms() - t0,
           code);
    CHECK(code == 128 + SIGKILL, "spin exit %d", code);

    /* The memory comes back: a new worker gets the same 1 GiB at once. */
    wk w4 = wk_start();
    t0 = now_ms();
    st = wk_call(&w4, &big, resp, &buf, &ms);
    printf("after kill: INIT 1 GiB %s in %.1f ms\n", gpulease_status_name(st), now_ms() - t0);
    CHECK(st == GPULEASE_OK, "INIT after kill: %s", msg_of(resp, m, sizeof m));
    free(buf);
    CHECK(wk_finish(&w4) == 0, "clean exit");
  }

  free(resp);
  free(iota.data);
  free(vadd.data);
  free(scale.data);
  free(oob.data);
  free(spin.data);
  printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "PASSED", g_failures);
  return g_failures ? 1 : 0;
}
