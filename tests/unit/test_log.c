/*
 * test_log.c - src/common/log.c: lines with a time, program, pid and level
 * on a plain stderr; with stderr the journal's stream ($JOURNAL_STREAM
 * names its device and inode) a syslog priority prefix per level and
 * nothing the journal adds itself; one line per message, newlines inside
 * folded; the level changed at run time (a reload).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/log.h"

/* Runs the logging calls in a child whose stderr is a fresh file, with
 * JOURNAL_STREAM naming that file (journal) or another one (not); returns
 * what the child wrote. */
static void run_child(bool journal, char *out, size_t outlen) {
  char path[] = "/tmp/gl-test-log-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(fd, STDERR_FILENO);
    struct stat st;
    fstat(fd, &st);
    char js[64];
    snprintf(js, sizeof js, "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino + (journal ? 0 : 1));
    setenv("JOURNAL_STREAM", js, 1);
    gl_log_init("gl-test", GL_LOG_INFO);
    if (gl_log_to_journal() != journal) _exit(3);
    GL_ERROR("broken %d", 1);
    GL_WARN("two\nlines");
    GL_INFO("told");
    GL_DEBUG("hidden");
    gl_log_set_level(GL_LOG_DEBUG);
    GL_DEBUG("shown");
    _exit(0);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  size_t n = (size_t)pread(fd, out, outlen - 1, 0);
  out[n < outlen ? n : 0] = 0;
  close(fd);
  unlink(path);
}

static void test_journal_lines(void **state) {
  (void)state;
  char out[4096];
  run_child(true, out, sizeof out);
  assert_string_equal(out, "<3>broken 1\n<4>two lines\n<6>told\n<7>shown\n");
}

static void test_plain_lines(void **state) {
  (void)state;
  char out[4096];
  run_child(false, out, sizeof out);
  /* "2026-11-25T22:05:20.123Z gl-test[PID] ERROR broken 1" and so on. */
  char *save = NULL;
  const char *want[] = {"ERROR broken 1", "WARN two lines", "INFO told", "DEBUG shown"};
  int i = 0;
  for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
    assert_true(i < 4);
    assert_int_equal(strlen(line) > 25, 1);
    assert_true(line[4] == '-' && line[10] == 'T' && line[23] == 'Z');
    assert_non_null(strstr(line, " gl-test["));
    const char *tail = strstr(line, "] ");
    assert_non_null(tail);
    assert_string_equal(tail + 2, want[i]);
  }
  assert_int_equal(i, 4);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_journal_lines),
                                     cmocka_unit_test(test_plain_lines)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
