/*
 * test_e2e_sandbox.c - a worker confines itself before it opens the device
 * (src/worker/sandbox.c), while it runs kernels: its own user (nobody when
 * the daemon runs as root, as in CI), no_new_privs, no core dumps, at most
 * GL_WORKER_MAX_FILES files, a seccomp filter (as /proc shows them), and
 * Landlock (its log line: the daemon's state directory refused), with its
 * JIT cache still working; `--worker-user root` shows Landlock refusing
 * what the file's permissions allow; `--no-worker-sandbox` leaves workers
 * unconfined; a worker user that does not exist stops the daemon. On the
 * emulated device in CI, with GL_TEST_DEVICE=cuda on a GPU (the CUDA driver
 * at work under the sandbox).
 */
#include <dirent.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<linux/landlock.h>)
#include <linux/landlock.h>
#endif
#endif

#include <cmocka.h>

#include "common/util.h"
#include "daemon_harness.h"
#include "lib_check.h"
#include "gpulease/gpulease.h"
#include "worker/sandbox.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

/* The Landlock ABI of this kernel; 0 without Landlock. */
static int landlock_abi(void) {
  long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return v > 0 ? (int)v : 0;
}

/* The value after `key` on its line of /proc/PID/FILE ("" when absent). */
static void proc_field(pid_t pid, const char *file, const char *key, char *out, size_t len) {
  char path[64], line[512];
  snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
  out[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, key, strlen(key)) != 0) continue;
    const char *v = line + strlen(key);
    while (*v == ' ' || *v == '\t' || *v == ':') v++;
    snprintf(out, len, "%s", v);
    out[strcspn(out, "\n")] = 0;
    break;
  }
  fclose(f);
}

/* The four ids of a /proc status "Uid:" or "Gid:" line, all equal to id. */
static bool ids_are(const char *v, unsigned id) {
  unsigned a, b, c, d;
  return sscanf(v, "%u %u %u %u", &a, &b, &c, &d) == 4 && a == id && b == id && c == id &&
         d == id;
}

typedef struct workers {
  int n;
  int seccomp;           /* all workers' mode; -1 when they differ */
  bool ids_ok;           /* every worker's Uid and Gid are the expected ones */
  bool files_ok;         /* every confined worker: at most GL_WORKER_MAX_FILES files */
  int module_source[2];  /* MODULE_LOAD's source in the first and the second lease */
} workers;

/* Loads iota.ptx into a session of lease l; returns where it came from. */
static int load_iota(gpulease_client *c, const gpulease_lease *l) {
  const char *bin = getenv("GL_TEST_BIN_DIR");
  char path[512];
  snprintf(path, sizeof path, "%s/kernels/iota.ptx", bin ? bin : ".");
  uint8_t *ptx = NULL;
  size_t len = 0;
  assert_int_equal(gl_read_file(path, 1 << 20, &ptx, &len), 0);
  gpulease_session *s = NULL;
  CHECK(gpulease_session_open(c, l, &s, E));
  gpulease_module m;
  gpulease_module_source src = GPULEASE_MODULE_LOADED;
  CHECK(gpulease_module_load(s, ptx, len, GPULEASE_IMAGE_PTX, &m, &src, E));
  CHECK(gpulease_session_close(s, E));
  free(ptx);
  return (int)src;
}

/* Starts a daemon (extra: its flags), and twice: takes a lease, runs iota
 * and loads iota.ptx into a session, and looks at its worker(s): the
 * first session load compiles the PTX into the JIT cache, where the next
 * round's worker finds it (each round loads before its GPU_SUBMIT, which
 * would otherwise hold the module in the context: a load after it finds
 * it there).
 * uid, gid: the ids expected of the workers. */
static workers run_workers(const char *const *extra, gl_test_daemon *d, unsigned uid,
                           unsigned gid) {
  workers w = {.seccomp = -2, .ids_ok = true, .files_ok = true};
  assert_int_equal(gl_test_daemon_start(d, gl_test_on_gpu() ? NULL : "64M", extra), 0);
  gpulease_client *c = gl_test_connect(d, 60000);
  for (int round = 0; round < 2; round++) {
    gpulease_lease l;
    CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 16 * MiB, 60, &l, E));
    w.module_source[round] = load_iota(c, &l);
    gl_test_run_iota(c, &l);
    pid_t pids[16];
    int n = gl_test_daemon_child_pids(d, pids, 16);
    assert_true(n >= 1);
    w.n = n;
    for (int i = 0; i < n; i++) {
      char v[128], nnp[16], core[128], files[128], uids[128], gids[128];
      proc_field(pids[i], "status", "Seccomp", v, sizeof v);
      int m = atoi(v);
      proc_field(pids[i], "status", "NoNewPrivs", nnp, sizeof nnp);
      proc_field(pids[i], "status", "Uid", uids, sizeof uids);
      proc_field(pids[i], "status", "Gid", gids, sizeof gids);
      proc_field(pids[i], "limits", "Max core file size", core, sizeof core);
      proc_field(pids[i], "limits", "Max open files", files, sizeof files);
      fprintf(stderr, "worker %d: Seccomp %d, NoNewPrivs %s, Uid %s, Gid %s, core %s, files %s\n",
              (int)pids[i], m, nnp, uids, gids, core, files);
      if (m == 2) {
        assert_string_equal(nnp, "1");
        assert_int_equal(strncmp(core, "0 ", 2), 0);
        w.files_ok = w.files_ok && atoi(files) > 0 && atoi(files) <= GL_WORKER_MAX_FILES;
      }
      w.ids_ok = w.ids_ok && ids_are(uids, uid) && ids_are(gids, gid);
      w.seccomp = w.seccomp == -2 || w.seccomp == m ? m : -1;
    }
    CHECK(gpulease_lease_free(c, &l, E));
    /* The next lease gets a worker of its own. */
    assert_int_equal(gl_test_daemon_wait_children(d, 0, 10000), 0);
  }
  gpulease_client_close(c);
  return w;
}

/* The owner of the JIT cache's first entry (-1: none). */
static long jit_entry_owner(const gl_test_daemon *d) {
  char dir[400];
  snprintf(dir, sizeof dir, "%s/jit-cache", d->dir);
  DIR *dd = opendir(dir);
  if (!dd) return -1;
  long owner = -1;
  struct dirent *de;
  while (owner < 0 && (de = readdir(dd)) != NULL) {
    if (de->d_name[0] == '.') continue;
    char path[700];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) owner = (long)st.st_uid;
  }
  closedir(dd);
  return owner;
}

/* Prints the first line of the daemon's log that holds each needle (to
 * see on a GPU node what the workers allowed and logged). */
static void print_log_lines(const gl_test_daemon *d) {
  static const char *const needles[] = {"workers run as", "worker: landlock allows:",
                                        "worker: sandbox: user ", "not restricted on this kernel",
                                        "CUDA driver not loaded before the sandbox",
                                        "threads before the sandbox"};
  bool seen[sizeof needles / sizeof needles[0]] = {false};
  char path[400], line[4096];
  snprintf(path, sizeof path, "%s/daemon.log", d->dir);
  FILE *f = fopen(path, "r");
  if (!f) return;
  while (fgets(line, sizeof line, f))
    for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++)
      if (!seen[i] && strstr(line, needles[i])) {
        seen[i] = true;
        fprintf(stderr, "log: %s", line);
        break;
      }
  fclose(f);
}

/* What the worker's log line says of Landlock and the state directory. */
static void check_landlock_line(const gl_test_daemon *d, bool permissions_refuse) {
  print_log_lines(d);
  /* Landlock confines the thread that applies it: there must be no other. */
  assert_int_equal(gl_test_daemon_log_count(d, "threads before the sandbox"), 0);
  char refused[400];
  snprintf(refused, sizeof refused, "%s refused (EACCES)", d->dir);
  assert_true(gl_test_daemon_log_count(d, "worker: sandbox: user ") >= 1);
  if (landlock_abi() > 0) {
    fprintf(stderr, "Landlock ABI %d: expecting \"%s\"\n", landlock_abi(), refused);
    assert_true(gl_test_daemon_log_count(d, "no_new_privs, seccomp") >= 1);
    assert_true(gl_test_daemon_log_count(d, ", landlock ABI ") >= 1);
    assert_true(gl_test_daemon_log_count(d, refused) >= 1);
    assert_int_equal(gl_test_daemon_log_count(d, "not restricted on this kernel"), 0);
    /* Refused by Landlock alone, or also by the directory's mode. */
    assert_int_equal(gl_test_daemon_log_count(d, "its permissions alone refuse it too") >= 1,
                     permissions_refuse);
  } else {
    fprintf(stderr, "this kernel has no Landlock: expecting the \"not restricted\" line\n");
    assert_true(gl_test_daemon_log_count(d, "file access is not restricted on this kernel") >=
                1);
    assert_int_equal(gl_test_daemon_log_count(d, ", landlock ABI "), 0);
  }
}

static void test_workers_confined(void **state) {
  (void)state;
  gl_test_daemon d;
  unsigned uid = (unsigned)getuid(), gid = (unsigned)getgid();
  bool root = geteuid() == 0;
  if (root) {
    struct passwd *pw = getpwnam("nobody");
    assert_non_null(pw); /* the workers' default user under root */
    uid = (unsigned)pw->pw_uid;
    gid = (unsigned)pw->pw_gid;
  } else {
    fprintf(stderr, "not root: the workers keep this user (uid %u); no user change to check\n",
            uid);
  }
  workers w = run_workers(NULL, &d, uid, gid);
  assert_int_equal(w.seccomp, 2); /* SECCOMP_MODE_FILTER */
  assert_true(w.ids_ok);
  assert_true(w.files_ok);
  /* The worker checked it: a refused call (perf_event_open) fails. */
  assert_true(gl_test_daemon_log_count(&d, "sandbox in force") >= 1);
  assert_int_equal(gl_test_daemon_log_count(&d, "perf_event_open ALLOWED"), 0);
  assert_true(gl_test_daemon_log_count(&d, "perf_event_open refused") >= 1);
  if (root) assert_true(gl_test_daemon_log_count(&d, "sandbox: user nobody (uid ") >= 1);
  check_landlock_line(&d, root);
  /* The JIT cache works under the sandbox, written as the worker's user:
   * the first round's session load compiled the PTX and stored it, which
   * the next round's worker found on disk. */
  assert_int_equal(w.module_source[0], GPULEASE_MODULE_LOADED);
  assert_int_equal(w.module_source[1], GPULEASE_MODULE_DISK_CACHE);
  assert_int_equal(jit_entry_owner(&d), (long)uid);
  assert_int_equal(gl_test_daemon_log_count(&d, "JIT cache disabled"), 0);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* As root, `--worker-user root`: the worker's Landlock rules alone keep
 * the state directory (root's, mode 0700) from it. */
static void test_worker_user_root(void **state) {
  (void)state;
  if (geteuid() != 0) {
    fprintf(stderr, "not root: --worker-user root is not for this test run; skipped\n");
    skip();
  }
  gl_test_daemon d;
  static const char *const extra[] = {"--worker-user", "root", NULL};
  workers w = run_workers(extra, &d, 0, 0);
  assert_int_equal(w.seccomp, 2);
  assert_true(w.ids_ok);
  assert_true(gl_test_daemon_log_count(&d, "workers run as root (--worker-user root)") >= 1);
  assert_true(gl_test_daemon_log_count(&d, "sandbox: user root (uid 0, the daemon's)") >= 1);
  check_landlock_line(&d, false);
  assert_int_equal(w.module_source[1], GPULEASE_MODULE_DISK_CACHE);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

static void test_no_worker_sandbox(void **state) {
  (void)state;
  gl_test_daemon d;
  static const char *const extra[] = {"--no-worker-sandbox", NULL};
  workers w = run_workers(extra, &d, (unsigned)getuid(), (unsigned)getgid());
  assert_int_equal(w.seccomp, 0);
  assert_true(w.ids_ok); /* the daemon's user, root included */
  assert_true(gl_test_daemon_log_count(&d, "no sandbox") >= 1);
  assert_int_equal(gl_test_daemon_log_count(&d, "worker: sandbox: user "), 0);
  assert_int_equal(gl_test_daemon_log_count(&d, "landlock"), 0);
  assert_int_equal(gl_test_daemon_log_count(&d, "workers run as user"), 0);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* A worker user that does not exist: the daemon does not start. */
static void test_worker_user_missing(void **state) {
  (void)state;
  gl_test_daemon d;
  static const char *const extra[] = {"--worker-user", "gl-no-such-user", NULL};
  fprintf(stderr, "(the daemon is expected not to start)\n");
  assert_int_not_equal(gl_test_daemon_start(&d, gl_test_on_gpu() ? NULL : "64M", extra), 0);
  assert_int_equal(
      gl_test_daemon_log_count(&d, "--worker-user: there is no user 'gl-no-such-user'"), 1);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", d.dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_workers_confined),
      cmocka_unit_test(test_worker_user_root),
      cmocka_unit_test(test_no_worker_sandbox),
      cmocka_unit_test(test_worker_user_missing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
