/* daemon_harness.c - see daemon_harness.h. */
#include "daemon_harness.h"

#include "common/util.h"

#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "gpulease/gpulease.h"

/* Daemons still running when the test program exits (a failed assertion
 * skips gl_test_daemon_stop) are killed, so none outlives the test and
 * holds ctest's output pipe open. */
static pid_t g_started[64];

static void kill_leftovers(void) {
  for (int i = 0; i < 64; i++)
    if (g_started[i] > 0) {
      kill(g_started[i], SIGKILL);
      waitpid(g_started[i], NULL, 0);
    }
}

static void track(pid_t pid, pid_t replace) {
  static int registered;
  if (!registered) registered = atexit(kill_leftovers) == 0;
  for (int i = 0; i < 64; i++)
    if (g_started[i] == replace) {
      g_started[i] = pid;
      return;
    }
}

static int spawn(gl_test_daemon *d, const char *emu_vram, const char *const *extra);

int gl_test_daemon_start(gl_test_daemon *d, const char *emu_vram, const char *const *extra) {
  memset(d, 0, sizeof *d);
  snprintf(d->dir, sizeof d->dir, "/tmp/gl-e2e-XXXXXX");
  if (!mkdtemp(d->dir)) return -1;
  snprintf(d->emu_vram, sizeof d->emu_vram, "%s", emu_vram ? emu_vram : "");
  for (int i = 0; extra && extra[i] && i < 15; i++) d->extra[i] = extra[i];
  return spawn(d, emu_vram, extra);
}

int gl_test_daemon_restart(gl_test_daemon *d) {
  if (d->pid > 0) {
    int status;
    kill(d->pid, SIGTERM);
    waitpid(d->pid, &status, 0);
    track(0, d->pid);
    d->pid = 0;
  }
  char ready[300];
  snprintf(ready, sizeof ready, "%s/ready", d->dir);
  unlink(ready);
  return spawn(d, d->emu_vram[0] ? d->emu_vram : NULL, d->extra);
}

static int spawn(gl_test_daemon *d, const char *emu_vram, const char *const *extra) {
  const char *bin_dir = getenv("GL_TEST_BIN_DIR");
  char exe[512], ready[300], log[300];
  snprintf(exe, sizeof exe, "%s/src/daemon/gpuleased", bin_dir ? bin_dir : ".");
  snprintf(ready, sizeof ready, "%s/ready", d->dir);
  snprintf(log, sizeof log, "%s/daemon.log", d->dir);
  /* A restart listens where the first daemon did, so clients reconnect. */
  const char *listen = d->addr[0] ? d->addr : "127.0.0.1:0";
  /* No warm workers unless a test asks (extra comes later and wins): the
   * tests count the daemon's worker processes. */
  const char *argv[32] = {exe, "--listen", listen, "--state-dir", d->dir,
                          "--ready-file", ready, "--log-level", "debug", "--warm-workers", "0"};
  int n = 11;
  if (emu_vram) {
    argv[n++] = "--device";
    argv[n++] = "emu";
    argv[n++] = "--emu-vram";
    argv[n++] = emu_vram;
  } else {
    argv[n++] = "--device";
    argv[n++] = "cuda";
  }
  /* GL_TEST_CONTROL_THREADS=N runs every test's daemon with N control
   * threads (the main port on the threads of shards.h; extra still wins). */
  const char *ct = getenv("GL_TEST_CONTROL_THREADS");
  if (ct && *ct) {
    argv[n++] = "--control-threads";
    argv[n++] = ct;
  }
  for (int i = 0; extra && extra[i] && n < 30; i++) argv[n++] = extra[i];
  argv[n] = NULL;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    FILE *f = freopen(log, "w", stderr);
    FILE *o = freopen("/dev/null", "w", stdout);
    (void)f, (void)o;
    execv(exe, (char *const *)argv);
    _exit(127);
  }
  d->pid = pid;
  track(pid, 0);
  for (int i = 0; i < 300; i++) { /* up to 30 s */
    FILE *f = fopen(ready, "r");
    if (f) {
      unsigned port;
      int ok = fscanf(f, "%u %79s", &port, d->fingerprint) == 2;
      fclose(f);
      if (ok) {
        snprintf(d->addr, sizeof d->addr, "127.0.0.1:%u", port);
        return 0;
      }
    }
    if (waitpid(pid, NULL, WNOHANG) == pid) break;
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "daemon did not start; its log:\n");
  char cmd[400];
  snprintf(cmd, sizeof cmd, "cat %s >&2", log);
  if (system(cmd) != 0) fprintf(stderr, "(no log)\n");
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return -1;
}

int gl_test_daemon_children(const gl_test_daemon *d) {
  return gl_test_daemon_child_pids(d, NULL, 0);
}

int gl_test_daemon_child_pids(const gl_test_daemon *d, pid_t *pids, int max) {
  DIR *dir = opendir("/proc");
  if (!dir) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(dir))) {
    char path[300], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    char *rp = strrchr(buf, ')'); /* comm may hold spaces */
    int ppid;
    char state;
    if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && ppid == d->pid && state != 'Z') {
      if (pids && n < max) pids[n] = (pid_t)atoi(e->d_name);
      n++;
    }
  }
  closedir(dir);
  return n;
}

int gl_test_daemon_stop(gl_test_daemon *d) {
  int status = -1;
  if (d->pid > 0) {
    kill(d->pid, SIGTERM);
    for (int i = 0; i < 100; i++) {
      if (waitpid(d->pid, &status, WNOHANG) == d->pid) break;
      struct timespec ts = {0, 100000000};
      nanosleep(&ts, NULL);
      if (i == 99) {
        kill(d->pid, SIGKILL);
        waitpid(d->pid, &status, 0);
      }
    }
  }
  if (getenv("GL_TEST_KEEP")) {
    fprintf(stderr, "kept %s\n", d->dir);
  } else {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", d->dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", d->dir);
  }
  track(0, d->pid);
  d->pid = 0;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

gpulease_client *gl_test_connect(const gl_test_daemon *d, int timeout_ms) {
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = d->addr;
  o.pin_sha256 = d->fingerprint;
  o.timeout_ms = timeout_ms;
  o.no_local = 1; /* QUIC: the local socket has tests of its own (test_e2e_local.c) */
  gpulease_client *c = NULL;
  gpulease_error err;
  gpulease_status st = gpulease_client_connect(&o, &c, &err);
  if (st != GPULEASE_OK) fprintf(stderr, "connect: %s\n", err.message);
  assert_int_equal(st, GPULEASE_OK);
  return c;
}

int gl_test_daemon_log_count(const gl_test_daemon *d, const char *needle) {
  char path[300], line[2048];
  snprintf(path, sizeof path, "%s/daemon.log", d->dir);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int n = 0;
  while (fgets(line, sizeof line, f)) n += strstr(line, needle) != NULL;
  fclose(f);
  return n;
}

int gl_test_daemon_wait_children(const gl_test_daemon *d, int n, int timeout_ms) {
  int have = gl_test_daemon_children(d);
  for (int waited = 0; have != n && waited < timeout_ms; waited += 20) {
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    have = gl_test_daemon_children(d);
  }
  return have;
}

int gl_test_cli(const gl_test_daemon *d, char *out, size_t outlen, const char *fmt, ...) {
  char args[2048], cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  const char *bin = getenv("GL_TEST_BIN_DIR");
  snprintf(cmd, sizeof cmd, "%s/src/cli/gpulease --addr %s --pin-sha256 %s %s 2>&1",
           bin ? bin : ".", d->addr, d->fingerprint, args);
  out[0] = 0;
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  size_t n = fread(out, 1, outlen - 1, p);
  out[n] = 0;
  char sink[4096];
  while (fread(sink, 1, sizeof sink, p) > 0) {
  }
  int st = pclose(p);
  int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  fprintf(stderr, "$ gpulease %s -> %d\n%s", args, rc, out);
  return rc;
}

char *gl_test_read_ptx(const char *name, size_t *len) {
  const char *dir = getenv("GL_TEST_PTX_DIR");
  const char *src = getenv("GL_TEST_SRC_DIR");
  const char *bin = getenv("GL_TEST_BIN_DIR");
  char cands[3][1024], path[4200];
  snprintf(cands[0], sizeof cands[0], "%s", dir ? dir : "");
  snprintf(cands[1], sizeof cands[1], "%s/tests/emu/kernels/ptx/sm_90", src ? src : ".");
  snprintf(cands[2], sizeof cands[2], "%s/kernels", bin ? bin : ".");
  for (int i = 0; i < 3; i++) {
    if (!cands[i][0]) continue;
    snprintf(path, sizeof path, "%s/%s.ptx", cands[i], name);
    uint8_t *data = NULL;
    if (gl_read_file(path, 1 << 24, &data, len) == 0) return (char *)data;
  }
  fprintf(stderr, "cannot find %s.ptx\n", name);
  return NULL;
}

bool gl_test_on_gpu(void) {
  const char *d = getenv("GL_TEST_DEVICE");
  return d && strcmp(d, "cuda") == 0;
}
