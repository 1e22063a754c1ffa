/* log.c - see log.h. */
#include "common/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static char g_program[32] = "gpulease";
static _Atomic int g_level = GL_LOG_INFO;
static bool g_journal; /* stderr is the journal: "<N>message" lines */
static FILE *_Atomic g_stream; /* where lines go; NULL: stderr */

void gl_log_set_stream(FILE *f) { atomic_store(&g_stream, f); }

/* True when stderr is the stream systemd connected to the journal:
 * $JOURNAL_STREAM is "DEVICE:INODE" of that stream (systemd.exec(5)), and
 * stderr must be that very file (not a redirection made since). */
static bool stderr_is_journal(void) {
  const char *js = getenv("JOURNAL_STREAM");
  unsigned long long dev, ino;
  if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st;
  if (fstat(STDERR_FILENO, &st) != 0) return false;
  return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void gl_log_init(const char *program, enum gl_log_level level) {
  snprintf(g_program, sizeof g_program, "%s", program);
  atomic_store(&g_level, (int)level);
  g_journal = stderr_is_journal();
}

void gl_log_set_level(enum gl_log_level level) { atomic_store(&g_level, (int)level); }

bool gl_log_to_journal(void) { return g_journal; }

int gl_log_level_parse(const char *s) {
  static const char *names[] = {"error", "warn", "info", "debug"};
  for (int i = 0; i < 4; i++)
    if (strcasecmp(s, names[i]) == 0) return i;
  return -1;
}

void gl_log(enum gl_log_level level, const char *fmt, ...) {
  if ((int)level > atomic_load_explicit(&g_level, memory_order_relaxed)) return;
  char line[2048];
  int n;
  if (g_journal) {
    /* The journal stamps time, program and pid itself; the prefix is the
     * line's syslog priority (sd-daemon(3)): err, warning, info, debug. */
    static const int prio[] = {3, 4, 6, 7};
    n = snprintf(line, sizeof line, "<%d>", prio[level]);
  } else {
    static const char *tags[] = {"ERROR", "WARN", "INFO", "DEBUG"};
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s[%d] %s ",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (long)(tv.tv_usec / 1000), g_program, (int)getpid(), tags[level]);
  }
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof line) vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  /* One line per message: a newline inside (a driver's message) would be
   * a second journal entry without a priority. */
  for (char *p = line; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  /* One fputs per line keeps lines whole across threads and processes. */
  size_t len = strlen(line);
  if (len + 1 < sizeof line) {
    line[len] = '\n';
    line[len + 1] = 0;
  }
  FILE *out = atomic_load(&g_stream);
  fputs(line, out ? out : stderr);
}
