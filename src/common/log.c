/* log.c - see log.h. */
#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static char g_program[32] = "gpulease";
static enum gl_log_level g_level = GL_LOG_INFO;

void gl_log_init(const char *program, enum gl_log_level level) {
  snprintf(g_program, sizeof g_program, "%s", program);
  g_level = level;
}

int gl_log_level_parse(const char *s) {
  static const char *names[] = {"error", "warn", "info", "debug"};
  for (int i = 0; i < 4; i++)
    if (strcasecmp(s, names[i]) == 0) return i;
  return -1;
}

void gl_log(enum gl_log_level level, const char *fmt, ...) {
  if (level > g_level) return;
  static const char *tags[] = {"ERROR", "WARN", "INFO", "DEBUG"};
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  char line[2048];
  int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s[%d] %s ",
                   tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                   tm.tm_sec, (long)(tv.tv_usec / 1000), g_program, (int)getpid(), tags[level]);
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof line) vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  /* One fputs per line keeps lines whole across threads and processes. */
  size_t len = strlen(line);
  if (len + 1 < sizeof line) {
    line[len] = '\n';
    line[len + 1] = 0;
  }
  fputs(line, stderr);
}
