/*
 * tmap_check.c - TENSORMAP_ENCODE on a real GPU (compute capability 9.0+):
 * starts BUILD_DIR's gpuleased on the node's GPUs (--emu: on the emulated
 * device), and through the client library runs tests/gpu/tmap_cases.h's 2D
 * TMA copy (the map built by the daemon with cuTensorMapEncodeTiled,
 * async_sm90a.ptx's tma_load_2d) for several boxes and swizzles, on an
 * isolated and on a shared lease; then the refusals that do not depend on
 * the device (extent past the buffer, another session's buffer). Prints a
 * PASS or FAIL row per check and a last line "PASS" or "FAIL"; exit 0 when
 * every row passes.
 *
 *   tmap_check BUILD_DIR ASYNC_SM90A_PTX [--emu]
 */
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "gpulease/gpulease.h"
#include "spawn_daemon.h"
#include "tmap_cases.h"

static int g_fail, g_pass;

static void row(bool ok, const char *item, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void row(bool ok, const char *item, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("%-4s %-28s ", ok ? "PASS" : "FAIL", item);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
  if (ok) g_pass++;
  else g_fail++;
}

/* The daemon: a child gpuleased listening on a free port of 127.0.0.1. */
typedef struct {
  pid_t pid;
  char dir[64], addr[64], fp[80];
} daemon_t;

static int daemon_start(daemon_t *d, const char *build, bool emu) {
  memset(d, 0, sizeof *d);
  snprintf(d->dir, sizeof d->dir, "/tmp/gl-tmap-XXXXXX");
  if (!mkdtemp(d->dir)) return -1;
  char ready[128], logf[128], bin[512];
  snprintf(ready, sizeof ready, "%s/ready", d->dir);
  snprintf(logf, sizeof logf, "%s/log", d->dir);
  snprintf(bin, sizeof bin, "%s/src/daemon/gpuleased", build);
  const char *argv[] = {bin,      "--listen",  "127.0.0.1:0", "--state-dir", d->dir,
                        "--ready-file", ready, "--device",    emu ? "emu" : "cuda",
                        emu ? "--emu-vram" : NULL, "256M", NULL};
  if (gl_spawn_daemon(argv, ready, logf, &d->pid, d->addr, sizeof d->addr, d->fp) == 0)
    return 0;
  fprintf(stderr, "gpuleased did not start (see %s)\n", logf);
  return -1;
}

static void daemon_stop(daemon_t *d) {
  if (d->pid <= 0) return;
  kill(d->pid, SIGTERM);
  int st;
  waitpid(d->pid, &st, 0);
  d->pid = 0;
}

/* A session on l with the tensor written and tma_load_2d loaded; NULL
 * (a FAIL row) when a step fails. */
static gpulease_session *open_rig(gpulease_client *c, const gpulease_lease *l, const char *ptx,
                                  size_t len, gpulease_buffer *buf, gpulease_buffer *out,
                                  gpulease_function *fn) {
  gpulease_session *s = NULL;
  gpulease_module m;
  gpulease_error e;
  gpulease_status st = gpulease_session_open(c, l, &s, &e);
  if (st == GPULEASE_OK) st = gpulease_mem_alloc(s, TMAP_BUF_BYTES, buf, &e);
  if (st == GPULEASE_OK) st = gpulease_mem_alloc(s, TMAP_TILE * 4, out, &e);
  if (st == GPULEASE_OK) st = tmap_write_tensor(s, *buf, &e);
  if (st == GPULEASE_OK) st = gpulease_module_load(s, ptx, len, GPULEASE_IMAGE_PTX, &m, NULL, &e);
  if (st == GPULEASE_OK) st = gpulease_function_get(s, m, "tma_load_2d", fn, NULL, &e);
  if (st != GPULEASE_OK) {
    row(false, "session setup", "%s: %s", gpulease_status_name(st), e.message);
    if (s) gpulease_session_close(s, &e);
    return NULL;
  }
  return s;
}

static void copies(gpulease_session *s, gpulease_function fn, gpulease_buffer buf,
                   gpulease_buffer out, const char *label) {
  static const struct {
    int x, y;
    uint32_t swz;
  } k_cases[] = {{0, 0, 0},  {8, 3, 0},  {80, 30, 0}, {-4, -2, 0},
                 {88, 35, 3}, {4, 1, 3}, {16, 8, 2},  {24, 5, 1}};
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
    char why[256], item[64];
    int rc = tmap_copy_case(s, fn, buf, out, k_cases[i].x, k_cases[i].y, k_cases[i].swz, why,
                            sizeof why);
    snprintf(item, sizeof item, "%s copy %zu", label, i);
    row(rc == 0, item, "%s", why);
    if (rc != 0) {
      gpulease_error e;
      gpulease_session_acknowledge(s, UINT64_MAX, &e);
    }
  }
}

static void refusals(gpulease_client *c, const gpulease_lease *l, gpulease_session *s,
                     gpulease_buffer buf) {
  gpulease_tensormap_desc d = tmap_desc(32, 0);
  d.global_dim[1] = TMAP_H + 1;
  uint8_t map[GPULEASE_TENSORMAP_BYTES];
  gpulease_error e;
  gpulease_status st = gpulease_tensormap_encode_tiled(s, buf, TMAP_BASE, &d, map, &e);
  row(st == GPULEASE_INVALID_ARGUMENT && strstr(e.message, "outside buffer"),
      "extent past the buffer", "%s: %s", gpulease_status_name(st), e.message);
  gpulease_session_acknowledge(s, UINT64_MAX, &e);
  gpulease_session *s2 = NULL;
  gpulease_buffer other = 0;
  st = gpulease_session_open(c, l, &s2, &e);
  if (st == GPULEASE_OK) st = gpulease_mem_alloc(s2, TMAP_BUF_BYTES, &other, &e);
  if (st == GPULEASE_OK) {
    d = tmap_desc(32, 0);
    st = gpulease_tensormap_encode_tiled(s, other, TMAP_BASE, &d, map, &e);
  }
  row(st == GPULEASE_INVALID_HANDLE, "another session's buffer", "%s: %s",
      gpulease_status_name(st), e.message);
  gpulease_session_acknowledge(s, UINT64_MAX, &e);
  if (s2) gpulease_session_close(s2, &e);
  d = tmap_desc(32, 0);
  d.box_dim[1] = 257;
  st = gpulease_tensormap_encode_tiled(s, buf, TMAP_BASE, &d, map, &e);
  row(st == GPULEASE_INVALID_ARGUMENT && strstr(e.message, "CUDA_ERROR_INVALID_VALUE"),
      "encoder refusal", "%s: %s", gpulease_status_name(st), e.message);
  gpulease_session_acknowledge(s, UINT64_MAX, &e);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: tmap_check BUILD_DIR ASYNC_SM90A_PTX [--emu]\n");
    return 2;
  }
  bool emu = argc > 3 && strcmp(argv[3], "--emu") == 0;
  uint8_t *ptx = NULL;
  size_t len = 0;
  if (gl_read_file(argv[2], 1 << 24, &ptx, &len) != 0) {
    fprintf(stderr, "cannot read %s\n", argv[2]);
    return 2;
  }
  daemon_t d;
  if (daemon_start(&d, argv[1], emu) != 0) {
    printf("FAIL\n");
    return 1;
  }
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = d.addr;
  o.pin_sha256 = d.fp;
  o.timeout_ms = 60000;
  o.no_local = 1;
  gpulease_client *c = NULL;
  gpulease_error e;
  gpulease_status st = gpulease_client_connect(&o, &c, &e);
  row(st == GPULEASE_OK, "connect", "%s %s", d.addr, st == GPULEASE_OK ? "" : e.message);
  if (st == GPULEASE_OK) {
    gpulease_lease a;
    st = gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 16u << 20, 120, &a, &e);
    row(st == GPULEASE_OK, "isolated lease", "%s", st == GPULEASE_OK ? "" : e.message);
    gpulease_buffer buf, out;
    gpulease_function fn;
    gpulease_session *s = st == GPULEASE_OK ? open_rig(c, &a, (const char *)ptx, len, &buf,
                                                      &out, &fn)
                                            : NULL;
    if (s) {
      copies(s, fn, buf, out, "isolated");
      refusals(c, &a, s, buf);
      gpulease_session_close(s, &e);
    }
    gpulease_lease_opts lo = {.struct_version = GPULEASE_LEASE_OPTS_VERSION,
                              .lease_class = GPULEASE_CLASS_SHARED};
    gpulease_lease sh;
    st = gpulease_lease_alloc_opts(c, GPULEASE_ANY_GPU, 16u << 20, 120, &lo, &sh, &e);
    row(st == GPULEASE_OK, "shared lease", "%s", st == GPULEASE_OK ? "" : e.message);
    s = st == GPULEASE_OK ? open_rig(c, &sh, (const char *)ptx, len, &buf, &out, &fn) : NULL;
    if (s) {
      copies(s, fn, buf, out, "shared");
      gpulease_session_close(s, &e);
    }
    gpulease_client_close(c);
  }
  daemon_stop(&d);
  free(ptx);
  printf("%d passed, %d failed\n%s\n", g_pass, g_fail, g_fail || !g_pass ? "FAIL" : "PASS");
  return g_fail || !g_pass ? 1 : 0;
}
