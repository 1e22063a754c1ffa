/*
 * backend_stream_smoke.c - the CUDA backend's session ops on a real GPU,
 * without the worker or the daemon.
 *
 *   gl_backend_stream_smoke PTX_FILE      (kernels/vector_add.ptx)
 *
 * PTX_FILE must hold vector_add(const float *a, const float *b, float *c,
 * int n) (examples/kernels/vector_add.cu). Checks, printing one PASS or
 * FAIL line each:
 *   probe, init of device 0 with 64 MiB, cache_tag
 *   load_module (PTX), get_function, param_sizes, func_info (values printed)
 *   two threads, each with its own stream and never having made the
 *     context current itself: write_async (the host buffer is scribbled
 *     over right after the call: the driver must have staged it), memset
 *     D8/D16/D32, copy_async, launch_async vector_add, stream_sync,
 *     read_sync, results checked; then the synchronous write/launch/read
 *     from the same threads at once
 *   shared leases: a second backend on the same device opened with
 *     open_shared (region_base 0), set_limits, two region_add of 64 MiB
 *     (zeroed, disjoint), a view onto each: writes land in the view's own
 *     range, vector_add through a view's stream and through launch_read,
 *     a write past a view's range refused; region_remove, and a range
 *     added again reads zero
 *   launch_async with a 2048-thread block: INVALID_ARGUMENT
 *   compile_ptx: an ELF cubin; loaded as CUBIN and launched from a stream
 *   compile_ptx of bad PTX: LOAD_FAILED with the JIT log (printed)
 *   a kernel storing to address 16: launch_async queues it, stream_sync
 *     reports LAUNCH_FAILED naming the CUDA error (ILLEGAL_ADDRESS
 *     expected), context_lost() is true, the other stream and read_sync
 *     fail too
 * Exit status 0 when every check passed, 1 otherwise (2: usage or setup).
 * Not registered with ctest: it needs a GPU.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "backend/backend.h"
#include "backend/backend_view.h"

#define VRAM (64ull << 20)
#define N 100000 /* elements per vector */
#define ROUNDS 20

static atomic_int g_failures;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (!ok) atomic_fetch_add(&g_failures, 1);
  printf("%s %s\n", ok ? "PASS" : "FAIL", msg);
  fflush(stdout);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (!buf) return NULL;
  buf[n] = 0;
  *len = (size_t)n;
  return buf;
}

/* A kernel that faults: a store to device address 16 (tests/gpu/kernels/
 * oob.cu, inline so that one PTX file is all the program needs). */
static const char k_oob_ptx[] = ".version 7.0\n"
                                ".target sm_75\n"
                                ".address_size 64\n"
                                ".visible .entry oob(.param .u64 p)\n"
                                "{\n"
                                "  .reg .b32 %r<2>;\n"
                                "  .reg .b64 %rd<2>;\n"
                                "  mov.u64 %rd1, 16;\n"
                                "  mov.u32 %r1, -559038737;\n"
                                "  st.volatile.u32 [%rd1], %r1;\n"
                                "  ret;\n"
                                "}\n";

static const char k_bad_ptx[] = ".version 7.0\n"
                                ".target sm_75\n"
                                ".address_size 64\n"
                                ".visible .entry broken()\n"
                                "{\n"
                                "  frobnicate.u32 %r1;\n"
                                "}\n";

static gl_backend *g_b;
static uint64_t g_base;

/* vector_add(a, b, c, n) over n elements. */
typedef struct va_args {
  uint64_t a, b, c;
  int32_t n;
  void *args[4];
  size_t sizes[4];
  gl_launch l;
} va_args;

/* Pointers are base + the offsets. */
static void va_setup_at(va_args *v, uint64_t base, uint64_t a_off, uint64_t b_off, uint64_t c_off,
                        int32_t n) {
  v->a = base + a_off, v->b = base + b_off, v->c = base + c_off, v->n = n;
  v->args[0] = &v->a, v->args[1] = &v->b, v->args[2] = &v->c, v->args[3] = &v->n;
  v->sizes[0] = v->sizes[1] = v->sizes[2] = 8, v->sizes[3] = 4;
  v->l = (gl_launch){.kernel_name = "vector_add",
                     .grid = {(uint32_t)(n + 255) / 256, 1, 1},
                     .block = {256, 1, 1},
                     .args = v->args,
                     .arg_sizes = v->sizes,
                     .arg_count = 4};
}

static void va_setup(va_args *v, uint64_t a_off, uint64_t b_off, uint64_t c_off, int32_t n) {
  va_setup_at(v, g_base, a_off, b_off, c_off, n);
}

/* ---- shared leases ---------------------------------------------------------------- */

#define RANGE (64ull << 20)
#define PROBE_BYTES (1u << 20)

/* True when len bytes at the view's offset read back as zero. */
static int view_zero(gl_backend *v, uint64_t off, size_t len, char *err, size_t errlen) {
  uint8_t *buf = malloc(len);
  int ok = buf && v->ops->read(v, off, buf, len, err, errlen) == GPULEASE_OK;
  for (size_t i = 0; ok && i < len; i++)
    if (buf[i]) {
      snprintf(err, errlen, "byte %zu is 0x%02x", i, buf[i]);
      ok = 0;
    }
  free(buf);
  return ok;
}

/* A second backend on device 0 for shared leases (the primary context is
 * the same one as g_b's), ranges and views onto them. */
static void shared_checks(const char *ptx, size_t ptx_len) {
  char err[4096], name[128];
  pthread_mutex_t submit_mu = PTHREAD_MUTEX_INITIALIZER;
  gl_backend *sb = gl_backend_cuda_new(), *v[2] = {NULL, NULL};
  if (!sb) return;
  const gl_backend_ops *o = sb->ops;
  uint64_t base = 1, off[2] = {0, 0};
  void *mod = NULL, *fn = NULL, *s = NULL;
  gpulease_status st = o->open_shared(sb, 0, &base, name, sizeof name, err, sizeof err);
  check(st == GPULEASE_OK && base == 0, "shared: open_shared device 0: %s (region_base %" PRIu64
        ")", st == GPULEASE_OK ? name : err, base);
  if (st != GPULEASE_OK) goto out;
  st = o->set_limits(sb, 1u << 20, 16u << 20, err, sizeof err);
  check(st == GPULEASE_OK, "shared: set_limits (printf FIFO 1 MiB, malloc heap 16 MiB)%s%s",
        st == GPULEASE_OK ? "" : ": ", st == GPULEASE_OK ? "" : err);
  for (int i = 0; i < 2; i++) {
    st = o->region_add(sb, RANGE, &off[i], err, sizeof err);
    check(st == GPULEASE_OK && off[i] % 256 == 0, "shared: region_add %d of 64 MiB: 0x%" PRIx64
          "%s%s", i, off[i], st == GPULEASE_OK ? "" : ": ", st == GPULEASE_OK ? "" : err);
    if (st != GPULEASE_OK || !(v[i] = gl_backend_view_new(sb, off[i], RANGE, &submit_mu)))
      goto out;
  }
  check(off[0] + RANGE <= off[1] || off[1] + RANGE <= off[0], "shared: the ranges are disjoint");
  for (int i = 0; i < 2; i++) {
    int ok = view_zero(v[i], RANGE - PROBE_BYTES, PROBE_BYTES, err, sizeof err);
    check(ok, "shared: range %d reads zero at its end%s%s", i, ok ? "" : ": ", ok ? "" : err);
  }

  /* each view's writes land in its own range */
  {
    static uint8_t pat[2][4096], got[4096];
    for (int i = 0; i < 2; i++) memset(pat[i], 0xa0 + i, sizeof pat[i]);
    int ok = 1;
    for (int i = 0; ok && i < 2; i++)
      ok = v[i]->ops->write(v[i], 4096, pat[i], sizeof pat[i], err, sizeof err) == GPULEASE_OK;
    for (int i = 0; ok && i < 2; i++) {
      ok = o->read(sb, off[i] + 4096, got, sizeof got, err, sizeof err) == GPULEASE_OK;
      if (ok && memcmp(got, pat[i], sizeof got) != 0) {
        snprintf(err, sizeof err, "range %d holds other bytes", i);
        ok = 0;
      }
    }
    check(ok, "shared: writes through two views, read back from the ranges%s%s", ok ? "" : ": ",
          ok ? "" : err);
    st = v[0]->ops->write(v[0], RANGE - 8, pat[0], 16, err, sizeof err);
    check(st == GPULEASE_WRITE_FAILED, "shared: a write past a view's range: %s: %s",
          gpulease_status_name(st), err);
  }

  /* vector_add through view 0: on a stream of the view, then launch_read */
  st = v[0]->ops->load_module(v[0], (const uint8_t *)ptx, ptx_len, GPULEASE_IMAGE_PTX, &mod, err,
                              sizeof err);
  if (st == GPULEASE_OK)
    st = v[0]->ops->get_function(v[0], mod, "vector_add", &fn, err, sizeof err);
  if (st == GPULEASE_OK) st = v[0]->ops->stream_create(v[0], &s, err, sizeof err);
  check(st == GPULEASE_OK, "shared: load, get_function, stream_create through a view%s%s",
        st == GPULEASE_OK ? "" : ": ", st == GPULEASE_OK ? "" : err);
  if (st == GPULEASE_OK) {
    enum { M = 4096 };
    static float a[M], b[M], c[M];
    for (int i = 0; i < M; i++) a[i] = (float)i, b[i] = 0.5f;
    va_args va;
    va_setup_at(&va, base + off[0], 1u << 20, 2u << 20, 3u << 20, M);
    const gl_backend_ops *vo = v[0]->ops;
    int ok = vo->write_async(v[0], s, 1u << 20, a, sizeof a, err, sizeof err) == GPULEASE_OK &&
             vo->write_async(v[0], s, 2u << 20, b, sizeof b, err, sizeof err) == GPULEASE_OK &&
             vo->launch_async(v[0], s, fn, &va.l, err, sizeof err) == GPULEASE_OK &&
             vo->read_sync(v[0], s, 3u << 20, c, sizeof c, err, sizeof err) == GPULEASE_OK;
    for (int i = 0; ok && i < M; i++)
      if (c[i] != (float)i + 0.5f) {
        snprintf(err, sizeof err, "c[%d] = %g", i, (double)c[i]);
        ok = 0;
      }
    check(ok, "shared: vector_add on a view's stream%s%s", ok ? "" : ": ", ok ? "" : err);
    memset(c, 0, sizeof c);
    uint64_t ns = 0;
    ok = vo->memset_async(v[0], s, 3u << 20, 4, 0, M, err, sizeof err) == GPULEASE_OK &&
         vo->stream_sync(v[0], s, err, sizeof err) == GPULEASE_OK &&
         vo->launch_read(v[0], fn, &va.l, &ns, 3u << 20, c, sizeof c, err, sizeof err) ==
             GPULEASE_OK;
    for (int i = 0; ok && i < M; i++)
      if (c[i] != (float)i + 0.5f) {
        snprintf(err, sizeof err, "c[%d] = %g", i, (double)c[i]);
        ok = 0;
      }
    check(ok, "shared: vector_add by launch_read through a view%s%s", ok ? "" : ": ",
          ok ? "" : err);
    vo->stream_destroy(v[0], s);
  }
  if (mod) v[0]->ops->unload_module(v[0], mod);
  check(!o->context_lost(sb), "shared: context not lost");

  /* removed, and a range added again reads zero (destroy frees it) */
  for (int i = 0; i < 2; i++) {
    v[i]->ops->destroy(v[i]);
    v[i] = NULL;
    o->region_remove(sb, off[i]);
  }
  st = o->region_add(sb, RANGE, &off[0], err, sizeof err);
  if (st == GPULEASE_OK && (v[0] = gl_backend_view_new(sb, off[0], RANGE, &submit_mu))) {
    int ok = view_zero(v[0], 0, 4096 + PROBE_BYTES, err, sizeof err);
    check(ok, "shared: region_remove, region_add again: zero%s%s", ok ? "" : ": ", ok ? "" : err);
  } else {
    check(0, "shared: region_add after region_remove: %s", err);
  }
out:
  for (int i = 0; i < 2; i++)
    if (v[i]) v[i]->ops->destroy(v[i]);
  o->destroy(sb);
}

/* ---- a session thread ------------------------------------------------------- */

typedef struct session {
  int index;
  void *fn;
  void *stream; /* left for the fault checks */
  double ms;
} session;

static void *session_main(void *p) {
  session *ss = p;
  const gl_backend_ops *o = g_b->ops;
  char err[4096];
  const uint64_t area = 16ull << 20; /* each session its own 16 MiB */
  const uint64_t ao = area * (uint64_t)(ss->index + 1), bo = ao + 4 * N, co = bo + 4 * N,
                 mo = co + 4 * N, ko = mo + 4096;
  float *a = malloc(4 * N), *b = malloc(4 * N), *c = malloc(4 * N);
  if (!a || !b || !c) {
    check(0, "session %d: out of memory", ss->index);
    goto out;
  }
  gpulease_status st = o->stream_create(g_b, &ss->stream, err, sizeof err);
  check(st == GPULEASE_OK, "session %d: stream_create on a thread of its own: %s", ss->index,
        st == GPULEASE_OK ? "ok" : err);
  if (st != GPULEASE_OK) goto out;
  double t0 = now_ms();
  int bad_rounds = 0;
  char first[4096 + 256] = "";
  for (int r = 0; r < ROUNDS; r++) {
    for (int i = 0; i < N; i++) a[i] = (float)(i % 1000) * 0.5f, b[i] = (float)(ss->index + r);
    va_args v;
    va_setup(&v, ao, bo, co, N);
    const char *what = "write_async a";
    if ((st = o->write_async(g_b, ss->stream, ao, a, 4 * N, err, sizeof err)) != GPULEASE_OK)
      goto round_fail;
    /* the driver staged the pageable source: reusing it must not matter */
    for (int i = 0; i < N; i++) a[i] = -12345.0f;
    what = "write_async b";
    if ((st = o->write_async(g_b, ss->stream, bo, b, 4 * N, err, sizeof err)) != GPULEASE_OK)
      goto round_fail;
    what = "memset_async D32 c";
    if ((st = o->memset_async(g_b, ss->stream, co, 4, 0xffffffffu, N, err, sizeof err)) !=
        GPULEASE_OK)
      goto round_fail;
    what = "launch_async";
    if ((st = o->launch_async(g_b, ss->stream, ss->fn, &v.l, err, sizeof err)) != GPULEASE_OK)
      goto round_fail;
    what = "stream_sync";
    if ((st = o->stream_sync(g_b, ss->stream, err, sizeof err)) != GPULEASE_OK) goto round_fail;
    what = "read_sync c";
    if ((st = o->read_sync(g_b, ss->stream, co, c, 4 * N, err, sizeof err)) != GPULEASE_OK)
      goto round_fail;
    for (int i = 0; i < N; i++) {
      float want = (float)(i % 1000) * 0.5f + (float)(ss->index + r);
      if (c[i] != want) {
        snprintf(err, sizeof err, "c[%d] = %g, want %g", i, (double)c[i], (double)want);
        what = "result";
        st = GPULEASE_INTERNAL;
        goto round_fail;
      }
    }
    continue;
  round_fail:
    if (!bad_rounds++) snprintf(first, sizeof first, "round %d: %s: %s: %s", r, what,
                                gpulease_status_name(st), err);
  }
  ss->ms = now_ms() - t0;
  check(bad_rounds == 0, "session %d: %d rounds of write/memset/launch/sync/read of %d floats "
        "(%.1f ms)%s%s", ss->index, ROUNDS, N, ss->ms, bad_rounds ? ": " : "", first);

  /* memsets of each size and a device-to-device copy */
  {
    uint8_t pattern[64], got[64], want[64];
    memset(pattern, 0x11, sizeof pattern);
    int ok = o->write_async(g_b, ss->stream, mo, pattern, 64, err, sizeof err) == GPULEASE_OK &&
             o->memset_async(g_b, ss->stream, mo + 4, 1, 0x1ab, 5, err, sizeof err) ==
                 GPULEASE_OK &&
             o->memset_async(g_b, ss->stream, mo + 16, 2, 0xf1234, 3, err, sizeof err) ==
                 GPULEASE_OK &&
             o->memset_async(g_b, ss->stream, mo + 32, 4, 0xdeadbeefu, 4, err, sizeof err) ==
                 GPULEASE_OK &&
             o->copy_async(g_b, ss->stream, ko, mo, 64, err, sizeof err) == GPULEASE_OK &&
             o->read_sync(g_b, ss->stream, ko, got, 64, err, sizeof err) == GPULEASE_OK;
    memset(want, 0x11, sizeof want);
    memset(want + 4, 0xab, 5);
    for (int i = 0; i < 3; i++) want[16 + 2 * i] = 0x34, want[17 + 2 * i] = 0x12;
    for (int i = 0; i < 4; i++)
      want[32 + 4 * i] = 0xef, want[33 + 4 * i] = 0xbe, want[34 + 4 * i] = 0xad,
                    want[35 + 4 * i] = 0xde;
    if (ok && memcmp(got, want, 64) != 0) {
      ok = 0;
      snprintf(err, sizeof err, "bytes differ from the expected pattern");
    }
    check(ok, "session %d: memset D8/D16/D32 + copy_async + read_sync%s%s", ss->index,
          ok ? "" : ": ", ok ? "" : err);
  }

  /* the synchronous ops, from this thread, while the other session runs */
  {
    va_args v;
    va_setup(&v, ao, bo, co, N);
    for (int i = 0; i < N; i++) a[i] = 1.0f, b[i] = (float)i;
    uint64_t ns = 0;
    int ok = g_b->ops->write(g_b, ao, a, 4 * N, err, sizeof err) == GPULEASE_OK &&
             g_b->ops->write(g_b, bo, b, 4 * N, err, sizeof err) == GPULEASE_OK &&
             g_b->ops->launch(g_b, ss->fn, &v.l, &ns, err, sizeof err) == GPULEASE_OK &&
             g_b->ops->read(g_b, co, c, 4 * N, err, sizeof err) == GPULEASE_OK;
    for (int i = 0; ok && i < N; i++)
      if (c[i] != 1.0f + (float)i) {
        ok = 0;
        snprintf(err, sizeof err, "c[%d] = %g", i, (double)c[i]);
      }
    check(ok, "session %d: synchronous write/launch/read from a session thread (%.3f ms GPU)%s%s",
          ss->index, (double)ns / 1e6, ok ? "" : ": ", ok ? "" : err);
  }
out:
  free(a), free(b), free(c);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PTX_FILE   (vector_add.ptx)\n", argv[0]);
    return 2;
  }
  gl_log_init("backend_stream_smoke", GL_LOG_INFO);
  size_t ptx_len = 0;
  char *ptx = read_file(argv[1], &ptx_len);
  if (!ptx) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }
  char err[8192];
  g_b = gl_backend_cuda_new();
  if (!g_b) return 2;
  const gl_backend_ops *o = g_b->ops;

  gl_probe_resp probe;
  gpulease_status st = o->probe(g_b, &probe, err, sizeof err);
  check(st == GPULEASE_OK && probe.count > 0, "probe: %u device(s)%s%s", probe.count,
        st == GPULEASE_OK ? "" : ": ", st == GPULEASE_OK ? "" : err);
  if (st != GPULEASE_OK || probe.count == 0) return 1;
  char name[128];
  st = o->init(g_b, 0, VRAM, &g_base, name, sizeof name, err, sizeof err);
  check(st == GPULEASE_OK, "init device 0, 64 MiB: %s (region at 0x%" PRIx64 ")",
        st == GPULEASE_OK ? name : err, g_base);
  if (st != GPULEASE_OK) return 1;
  char tag[64];
  o->cache_tag(g_b, tag, sizeof tag);
  char want_tag[32];
  snprintf(want_tag, sizeof want_tag, "cuda-sm%u%u-drv", probe.gpus[0].cc_major,
           probe.gpus[0].cc_minor);
  check(strncmp(tag, want_tag, strlen(want_tag)) == 0, "cache_tag: %s", tag);

  void *mod = NULL, *fn = NULL;
  st = o->load_module(g_b, (const uint8_t *)ptx, ptx_len, GPULEASE_IMAGE_PTX, &mod, err,
                      sizeof err);
  check(st == GPULEASE_OK, "load_module %s (PTX)%s%s", argv[1], st == GPULEASE_OK ? "" : ": ",
        st == GPULEASE_OK ? "" : err);
  if (st != GPULEASE_OK) return 1;
  st = o->get_function(g_b, mod, "vector_add", &fn, err, sizeof err);
  check(st == GPULEASE_OK, "get_function vector_add%s%s", st == GPULEASE_OK ? "" : ": ",
        st == GPULEASE_OK ? "" : err);
  if (st != GPULEASE_OK) return 1;
  size_t psizes[8], pcount = 0;
  st = o->param_sizes(g_b, fn, psizes, 8, &pcount, err, sizeof err);
  if (st == GPULEASE_OK)
    check(pcount == 4 && psizes[0] == 8 && psizes[3] == 4, "param_sizes: %zu params", pcount);
  else
    printf("SKIP param_sizes: %s\n", err);

  gl_func_info_resp fi;
  memset(&fi, 0, sizeof fi);
  st = o->func_info(g_b, fn, &fi, err, sizeof err);
  unsigned cc = probe.gpus[0].cc_major * 10u + probe.gpus[0].cc_minor;
  check(st == GPULEASE_OK && fi.num_regs > 0 && fi.max_threads_per_block > 0 &&
            fi.binary_version == cc,
        "func_info vector_add: num_regs %u, max_threads_per_block %u, shared %u, local %u, "
        "const %u, ptx_version %u, binary_version %u (device sm_%u)%s%s",
        fi.num_regs, fi.max_threads_per_block, fi.static_shared_bytes, fi.local_bytes,
        fi.const_bytes, fi.ptx_version, fi.binary_version, cc, st == GPULEASE_OK ? "" : ": ",
        st == GPULEASE_OK ? "" : err);
  printf("INFO ptx_version for .target sm_75 PTX is %u (the emulated device reports the "
         ".target's number, 75)\n", fi.ptx_version);

  shared_checks(ptx, ptx_len);

  /* two sessions on two threads */
  session ss[2] = {{.index = 0, .fn = fn}, {.index = 1, .fn = fn}};
  pthread_t tid[2];
  double t0 = now_ms();
  for (int i = 0; i < 2; i++) pthread_create(&tid[i], NULL, session_main, &ss[i]);
  for (int i = 0; i < 2; i++) pthread_join(tid[i], NULL);
  printf("INFO two sessions took %.1f ms in all\n", now_ms() - t0);
  void *s1 = ss[0].stream, *s2 = ss[1].stream;
  if (!s1 || !s2) return 1;

  /* a bad configuration is refused at enqueue */
  {
    va_args v;
    va_setup(&v, 0, 4096, 8192, 16);
    v.l.block[0] = 2048;
    st = o->launch_async(g_b, s1, fn, &v.l, err, sizeof err);
    check(st == GPULEASE_INVALID_ARGUMENT && strstr(err, "CUDA_ERROR_INVALID_VALUE"),
          "launch_async with a 2048-thread block: %s: %s", gpulease_status_name(st), err);
    check(!o->context_lost(g_b), "context not lost by a bad configuration");
  }

  /* compile_ptx, then the cubin loaded and run */
  {
    uint8_t *bin = NULL;
    size_t bin_len = 0;
    double c0 = now_ms();
    st = o->compile_ptx(g_b, (const uint8_t *)ptx, ptx_len, &bin, &bin_len, err, sizeof err);
    check(st == GPULEASE_OK && bin_len > 4 && memcmp(bin, "\x7f" "ELF", 4) == 0,
          "compile_ptx: %zu-byte ELF cubin in %.1f ms%s%s", bin_len, now_ms() - c0,
          st == GPULEASE_OK ? "" : ": ", st == GPULEASE_OK ? "" : err);
    void *cmod = NULL, *cfn = NULL;
    if (st == GPULEASE_OK) {
      st = o->load_module(g_b, bin, bin_len, GPULEASE_IMAGE_CUBIN, &cmod, err, sizeof err);
      check(st == GPULEASE_OK, "load_module of the cubin (CUBIN)%s%s",
            st == GPULEASE_OK ? "" : ": ", st == GPULEASE_OK ? "" : err);
    }
    if (st == GPULEASE_OK) st = o->get_function(g_b, cmod, "vector_add", &cfn, err, sizeof err);
    if (st == GPULEASE_OK) {
      enum { M = 1000 };
      float a[M], b[M], c[M];
      for (int i = 0; i < M; i++) a[i] = (float)i, b[i] = 2.0f * (float)i;
      va_args v;
      va_setup(&v, 0, 4096, 8192, M);
      int ok = (st = o->write_async(g_b, s2, 0, a, sizeof a, err, sizeof err)) == GPULEASE_OK &&
               (st = o->write_async(g_b, s2, 4096, b, sizeof b, err, sizeof err)) ==
                   GPULEASE_OK &&
               (st = o->launch_async(g_b, s2, cfn, &v.l, err, sizeof err)) == GPULEASE_OK &&
               (st = o->read_sync(g_b, s2, 8192, c, sizeof c, err, sizeof err)) == GPULEASE_OK;
      for (int i = 0; ok && i < M; i++)
        if (c[i] != 3.0f * (float)i) {
          ok = 0;
          snprintf(err, sizeof err, "c[%d] = %g", i, (double)c[i]);
        }
      check(ok, "vector_add from the cubin on a stream%s%s", ok ? "" : ": ", ok ? "" : err);
    }
    if (cmod) o->unload_module(g_b, cmod);
    free(bin);

    bin = NULL;
    st = o->compile_ptx(g_b, (const uint8_t *)k_bad_ptx, sizeof k_bad_ptx - 1, &bin, &bin_len,
                        err, sizeof err);
    check(st == GPULEASE_LOAD_FAILED && !bin, "compile_ptx of bad PTX: %s: %s",
          gpulease_status_name(st), err);
    free(bin);
    check(!o->context_lost(g_b), "context not lost by a compile error");
  }

  /* a fault: reported by the stream's sync, sticky for everything */
  {
    void *omod = NULL, *ofn = NULL;
    st = o->load_module(g_b, (const uint8_t *)k_oob_ptx, sizeof k_oob_ptx - 1,
                        GPULEASE_IMAGE_PTX, &omod, err, sizeof err);
    if (st == GPULEASE_OK) st = o->get_function(g_b, omod, "oob", &ofn, err, sizeof err);
    check(st == GPULEASE_OK, "load the faulting kernel%s%s", st == GPULEASE_OK ? "" : ": ",
          st == GPULEASE_OK ? "" : err);
    if (st == GPULEASE_OK) {
      uint64_t region = g_base;
      void *args[1] = {&region};
      size_t sizes[1] = {8};
      gl_launch l = {.kernel_name = "oob", .grid = {1, 1, 1}, .block = {32, 1, 1},
                     .args = args, .arg_sizes = sizes, .arg_count = 1};
      st = o->launch_async(g_b, s1, ofn, &l, err, sizeof err);
      check(st == GPULEASE_OK, "launch_async of the faulting kernel is queued%s%s",
            st == GPULEASE_OK ? "" : ": ", st == GPULEASE_OK ? "" : err);
      st = o->stream_sync(g_b, s1, err, sizeof err);
      check(st == GPULEASE_LAUNCH_FAILED && strstr(err, "CUDA_ERROR_"),
            "stream_sync after the fault: %s: %s", gpulease_status_name(st), err);
      if (!strstr(err, "CUDA_ERROR_ILLEGAL_ADDRESS"))
        printf("INFO the fault was not CUDA_ERROR_ILLEGAL_ADDRESS (see tests/gpu/kernels/oob.cu "
               "on how GPUs differ)\n");
      check(o->context_lost(g_b), "context_lost() after the fault");
      st = o->stream_sync(g_b, s2, err, sizeof err);
      check(st == GPULEASE_LAUNCH_FAILED, "stream_sync on the other stream: %s: %s",
            gpulease_status_name(st), err);
      uint8_t buf[8];
      st = o->read_sync(g_b, s2, 0, buf, sizeof buf, err, sizeof err);
      check(st == GPULEASE_LAUNCH_FAILED, "read_sync after the fault: %s: %s",
            gpulease_status_name(st), err);
    }
    /* modules are not unloaded from a lost context (the worker exits) */
  }
  o->stream_destroy(g_b, s1);
  o->stream_destroy(g_b, s2);
  o->unload_module(g_b, mod);
  o->destroy(g_b);
  free(ptx);
  int failures = atomic_load(&g_failures);
  printf("%s: %d failure%s\n", failures ? "FAILED" : "ALL PASSED", failures,
         failures == 1 ? "" : "s");
  return failures ? 1 : 0;
}
