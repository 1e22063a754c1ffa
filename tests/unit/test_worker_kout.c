/*
 * test_worker_kout.c - the worker's capture of kernel output
 * (src/worker/kout.c), in a child process (the capture takes over fd 1
 * and 2): printf and raw writes on fd 1 and fd 2 reach the lease's buffer
 * in order; CUDA's assertion lines go to the message instead; a drain to
 * NULL discards; the lease keeps GL_KOUT_MAX bytes and counts the rest;
 * the log goes to the former stderr (here a pipe the parent reads), never
 * into the capture; a writer never blocks on a full pipe (2 MiB written
 * before any drain: the stage keeps 1 MiB, the rest is counted).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/log.h"
#include "proto/wire.h"
#include "worker/kout.h"

/* The child's checks: exit status 0, or the failed check's line. */
#define WANT(cond)                                                                             \
  do {                                                                                         \
    if (!(cond)) _exit(__LINE__ & 0xFF ? __LINE__ & 0xFF : 1);                                 \
  } while (0)

static void child(void) {
  char err[256];
  WANT(gl_kout_capture_start(err, sizeof err) == 0);
  WANT(gl_kout_capturing());
  gl_log(GL_LOG_ERROR, "a log line of the worker");
  gl_kout_buf b;
  gl_kout_buf_init(&b);
  /* 1. stdout, stderr and raw writes, in order; assertion lines apart */
  printf("hello %d\n", 1);
  fflush(stdout); /* stdout is a pipe now: fully buffered */
  fprintf(stderr, "k.cu:7: void f(int *): block: [0,0,0], thread: [1,0,0] Assertion `x == 0` "
                  "failed.\n");
  WANT(write(STDOUT_FILENO, "raw\n", 4) == 4);
  printf("partial"); /* still buffered: the drain flushes it */
  char asserts[512] = "";
  gl_kout_drain(&b, asserts, sizeof asserts);
  char *text;
  uint32_t len;
  uint64_t dropped;
  gl_kout_buf_take(&b, &text, &len, &dropped);
  WANT(len == strlen("hello 1\nraw\npartial"));
  WANT(memcmp(text, "hello 1\nraw\npartial", len) == 0);
  WANT(dropped == 0);
  free(text);
  WANT(strcmp(asserts, "k.cu:7: void f(int *): block: [0,0,0], thread: [1,0,0] Assertion "
                       "`x == 0` failed.") == 0);
  /* 2. discarded: nothing left for the next drain */
  printf("not yours\n");
  gl_kout_drain(NULL, NULL, 0);
  gl_kout_drain(&b, NULL, 0);
  gl_kout_buf_take(&b, &text, &len, &dropped);
  WANT(len == 0 && text == NULL && dropped == 0);
  /* 3. the lease's bound */
  static char big[70000];
  memset(big, 'x', sizeof big);
  WANT(write(STDOUT_FILENO, big, sizeof big) == (ssize_t)sizeof big);
  gl_kout_drain(&b, NULL, 0);
  gl_kout_buf_take(&b, &text, &len, &dropped);
  WANT(len == GL_KOUT_MAX);
  WANT(dropped == sizeof big - GL_KOUT_MAX);
  free(text);
  /* 4. 2 MiB before any drain: the writer does not block; the stage keeps
   * 1 MiB, the lease 64 KiB, and every other byte is counted */
  size_t total = 0;
  for (int i = 0; i < 32; i++) {
    WANT(write(STDOUT_FILENO, big, 65536) == 65536);
    total += 65536;
  }
  usleep(200 * 1000);
  gl_kout_drain(&b, NULL, 0);
  gl_kout_buf_take(&b, &text, &len, &dropped);
  WANT(len == GL_KOUT_MAX);
  WANT(len + dropped == total);
  free(text);
  gl_kout_buf_free(&b);
  _exit(0);
}

static void test_capture(void **state) {
  (void)state;
  int logp[2];
  assert_int_equal(pipe(logp), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(logp[0]);
    dup2(logp[1], STDERR_FILENO); /* the "daemon's stderr" */
    close(logp[1]);
    gl_log_init("test-worker", GL_LOG_INFO);
    child();
  }
  close(logp[1]);
  char log[4096];
  size_t n = 0;
  ssize_t r;
  while (n < sizeof log - 1 && (r = read(logp[0], log + n, sizeof log - 1 - n)) > 0) n += (size_t)r;
  log[n] = 0;
  close(logp[0]);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail_msg("child failed at line (mod 256) %d; its log: %s", WEXITSTATUS(status), log);
  /* the log reached the former stderr; no kernel output did */
  assert_non_null(strstr(log, "a log line of the worker"));
  assert_null(strstr(log, "hello"));
  assert_null(strstr(log, "Assertion"));
  assert_null(strstr(log, "xxxx"));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_capture)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
