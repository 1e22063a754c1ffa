/* exit_fault.c - see exit_fault.h. TEST-ONLY. */
#include "worker/exit_fault.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

static long g_delay_ms = -1; /* -1: no fault */
static int g_lock_fd = -1;

void gl_exit_fault_prepare(void) {
  const char *v = getenv("GL_FAULT_WORKER_EXIT_DELAY_MS");
  uint64_t ms;
  if (!v) return;
  if (gl_parse_u64(v, 60000, &ms) != 0) {
    GL_WARN("worker: GL_FAULT_WORKER_EXIT_DELAY_MS '%s' is not 0..60000; ignored", v);
    return;
  }
  g_delay_ms = (long)ms;
  const char *lock = getenv("GL_FAULT_WORKER_EXIT_LOCK");
  if (lock && *lock) {
    g_lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (g_lock_fd < 0)
      GL_WARN("worker: GL_FAULT_WORKER_EXIT_LOCK %s: %s; waiting without it", lock,
              strerror(errno));
  }
  GL_WARN("worker: fault injection: exits %ld ms after its daemon lets it go%s", g_delay_ms,
          g_lock_fd >= 0 ? ", one worker at a time" : "");
}

void gl_exit_fault_delay(void) {
  if (g_delay_ms < 0) return;
  if (g_lock_fd >= 0)
    while (flock(g_lock_fd, LOCK_EX) != 0 && errno == EINTR) {
    }
  struct timespec ts = {.tv_sec = g_delay_ms / 1000, .tv_nsec = (g_delay_ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  if (g_lock_fd >= 0) close(g_lock_fd); /* releases the lock */
}
