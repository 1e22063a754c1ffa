/* kout.c - see kout.h. */
#include "worker/kout.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "proto/wire.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GL_KOUT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(GL_KOUT_ASAN)
#define GL_KOUT_ASAN 1
#endif
#ifdef GL_KOUT_ASAN
/* The sanitizers' reports stay on the log's stream, not the pipe. */
void __sanitizer_set_report_fd(void *fd);
#endif

/* ---- a lease's pending output ------------------------------------------- */

void gl_kout_buf_init(gl_kout_buf *b) {
  memset(b, 0, sizeof *b);
  pthread_mutex_init(&b->mu, NULL);
}

void gl_kout_buf_free(gl_kout_buf *b) {
  free(b->buf);
  b->buf = NULL;
  pthread_mutex_destroy(&b->mu);
}

void gl_kout_buf_append(gl_kout_buf *b, const char *s, size_t n, uint64_t extra_dropped) {
  pthread_mutex_lock(&b->mu);
  size_t take = 0;
  if (n > 0 && !b->buf) b->buf = malloc(GL_KOUT_MAX);
  if (b->buf) {
    size_t room = GL_KOUT_MAX - b->len;
    take = n < room ? n : room;
    if (take) memcpy(b->buf + b->len, s, take);
    b->len += take;
  }
  b->dropped += (n - take) + extra_dropped;
  pthread_mutex_unlock(&b->mu);
}

void gl_kout_buf_take(gl_kout_buf *b, char **text, uint32_t *len, uint64_t *dropped) {
  pthread_mutex_lock(&b->mu);
  *text = NULL;
  *len = 0;
  if (b->len > 0 && (*text = malloc(b->len))) {
    memcpy(*text, b->buf, b->len);
    *len = (uint32_t)b->len;
  } else if (b->len > 0) {
    b->dropped += b->len; /* out of memory: counted as dropped */
  }
  *dropped = b->dropped;
  b->len = 0;
  b->dropped = 0;
  pthread_mutex_unlock(&b->mu);
}

/* ---- the capture -------------------------------------------------------- */

static struct {
  bool on;
  int rfd;             /* the pipe's read end (non-blocking) */
  pthread_mutex_t mu;  /* stage */
  char *stage;         /* GL_KOUT_STAGE_MAX */
  size_t len;
  uint64_t dropped;
  pthread_t thread;
} g_cap = {.rfd = -1, .mu = PTHREAD_MUTEX_INITIALIZER};

/* Reads what the pipe holds into the stage. Call with g_cap.mu held. */
static void stage_read_locked(void) {
  char tmp[16384];
  for (;;) {
    ssize_t n = read(g_cap.rfd, tmp, sizeof tmp);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    size_t room = GL_KOUT_STAGE_MAX - g_cap.len;
    size_t take = (size_t)n < room ? (size_t)n : room;
    memcpy(g_cap.stage + g_cap.len, tmp, take);
    g_cap.len += take;
    g_cap.dropped += (size_t)n - take;
  }
}

/* Keeps the pipe from filling up, so a writer never blocks. */
static void *stage_thread(void *arg) {
  (void)arg;
  for (;;) {
    struct pollfd pf = {.fd = g_cap.rfd, .events = POLLIN};
    int rc = poll(&pf, 1, -1);
    if (rc < 0 && errno != EINTR) return NULL;
    if (rc > 0 && (pf.revents & (POLLERR | POLLNVAL))) return NULL;
    pthread_mutex_lock(&g_cap.mu);
    stage_read_locked();
    pthread_mutex_unlock(&g_cap.mu);
  }
}

int gl_kout_capture_start(char *err, size_t errlen) {
  if (g_cap.on) return 0;
  int fds[2] = {-1, -1};
  int log_fd = -1;
  FILE *log = NULL;
  if (!(g_cap.stage = malloc(GL_KOUT_STAGE_MAX))) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (pipe2(fds, O_CLOEXEC) != 0 || (log_fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3)) < 0 ||
      !(log = fdopen(log_fd, "w"))) {
    snprintf(err, errlen, "cannot set up the capture of kernel output: %s", strerror(errno));
    goto fail;
  }
  setvbuf(log, NULL, _IOLBF, 0);
  (void)fcntl(fds[0], F_SETPIPE_SZ, 1 << 20); /* best effort: fewer wake-ups */
  if (fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0) {
    snprintf(err, errlen, "fcntl: %s", strerror(errno));
    goto fail;
  }
  fflush(stdout);
  fflush(stderr);
  gl_log_set_stream(log); /* the worker's own log: the daemon's stderr, as before */
#ifdef GL_KOUT_ASAN
  __sanitizer_set_report_fd((void *)(intptr_t)log_fd);
#endif
  if (dup2(fds[1], STDOUT_FILENO) < 0 || dup2(fds[1], STDERR_FILENO) < 0) {
    gl_log_set_stream(NULL);
    snprintf(err, errlen, "dup2: %s", strerror(errno));
    goto fail;
  }
  close(fds[1]);
  g_cap.rfd = fds[0];
  if (pthread_create(&g_cap.thread, NULL, stage_thread, NULL) != 0) {
    /* fd 1 and 2 stay on the pipe: with no reader they must not block */
    (void)fcntl(STDOUT_FILENO, F_SETFL, O_NONBLOCK);
    snprintf(err, errlen, "cannot start the kernel output thread");
    g_cap.on = true; /* drains still read, from the worker's own threads */
    return -1;
  }
  pthread_detach(g_cap.thread);
  g_cap.on = true;
  return 0;
fail:
  if (fds[0] >= 0) close(fds[0]);
  if (fds[1] >= 0) close(fds[1]);
  if (log) fclose(log);
  else if (log_fd >= 0) close(log_fd);
  free(g_cap.stage);
  g_cap.stage = NULL;
  return -1;
}

bool gl_kout_capturing(void) { return g_cap.on; }

/* True when line [s, s+n) is CUDA's text of a failed assertion. */
static bool is_assert_line(const char *s, size_t n) {
  static const char k_a[] = "Assertion `", k_b[] = "` failed.";
  const char *a = memmem(s, n, k_a, sizeof k_a - 1);
  return a && memmem(a, n - (size_t)(a - s), k_b, sizeof k_b - 1) != NULL;
}

void gl_kout_drain(gl_kout_buf *dst, char *asserts, size_t cap) {
  if (!g_cap.on) return;
  flockfile(stdout);
  flockfile(stderr);
  fflush(stdout);
  fflush(stderr);
  clearerr(stdout);
  clearerr(stderr);
  pthread_mutex_lock(&g_cap.mu);
  stage_read_locked();
  char *text = NULL;
  size_t len = g_cap.len;
  uint64_t dropped = g_cap.dropped;
  if (len) { /* the stage is handed over whole: a fresh one for the writers */
    char *fresh = malloc(GL_KOUT_STAGE_MAX);
    if (fresh) {
      text = g_cap.stage;
      g_cap.stage = fresh;
    } else {
      dropped += len; /* out of memory: this text is given up */
    }
  }
  g_cap.len = 0;
  g_cap.dropped = 0;
  pthread_mutex_unlock(&g_cap.mu);
  funlockfile(stderr);
  funlockfile(stdout);
  if (len == 0 && dropped == 0) return;
  if (!dst) {
    free(text);
    return;
  }
  if (!text) {
    gl_kout_buf_append(dst, NULL, 0, dropped);
    return;
  }
  /* whole lines: assertion lines to asserts, the rest in order to dst */
  size_t i = 0, kept = 0;
  while (i < len) {
    const char *nl = memchr(text + i, '\n', len - i);
    size_t n = nl ? (size_t)(nl - (text + i)) + 1 : len - i;
    if (asserts && is_assert_line(text + i, n)) {
      size_t have = strnlen(asserts, cap);
      if (have + 1 < cap) {
        size_t put = n - (nl ? 1 : 0);
        if (have > 0 && have + 3 < cap) asserts[have++] = ';', asserts[have++] = ' ';
        if (put > cap - have - 1) put = cap - have - 1;
        memcpy(asserts + have, text + i, put);
        asserts[have + put] = 0;
      }
    } else {
      memmove(text + kept, text + i, n);
      kept += n;
    }
    i += n;
  }
  gl_kout_buf_append(dst, text, kept, dropped);
  free(text);
}
