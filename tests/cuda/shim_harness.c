/*
 * shim_harness.c - the shim tests' shared helpers (shim_harness.h).
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cuda/shim_harness.h"

const char *gl_shim_path(const char *file, const char *built) {
  static char path[4096];
  const char *bin = getenv("GL_TEST_BIN_DIR");
  if (bin) {
    snprintf(path, sizeof path, "%s/src/cuda/%s", bin, file);
    if (access(path, R_OK) == 0) return path;
  }
  return built;
}

void *gl_shim_open(const char *file, const char *built) {
  const char *p = gl_shim_path(file, built);
  void *so = dlopen(p, RTLD_NOW | RTLD_LOCAL);
  if (!so) fail_msg("dlopen %s: %s", p, dlerror());
  return so;
}

void *gl_shim_sym(void *so, const char *name) {
  void *p = dlsym(so, name);
  if (!p) fail_msg("the shim does not export %s", name);
  return p;
}

int gl_shim_in_child(void (*fn)(void), char *buf, size_t len) {
  char path[] = "/tmp/gl_shim_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd, 2);
    fn();
    _exit(99);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  ssize_t n = pread(fd, buf, len - 1, 0);
  buf[n > 0 ? n : 0] = 0;
  close(fd);
  unlink(path);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void gl_shim_lease_env(const gl_test_daemon *dm, const gpulease_lease *l) {
  char hex[2 * GPULEASE_SECRET_BYTES + 1], id[32];
  gpulease_secret_to_hex(l->secret, hex);
  snprintf(id, sizeof id, "%llu", (unsigned long long)l->id);
  setenv("GPULEASE_ADDR", dm->addr, 1);
  setenv("GPULEASE_PIN_SHA256", dm->fingerprint, 1);
  setenv("GPULEASE_LEASE", id, 1);
  setenv("GPULEASE_SECRET", hex, 1);
}
