/* start_fault.c - see start_fault.h. TEST-ONLY. */
#include "worker/start_fault.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"

void gl_start_fault_delay(void) {
  const char *v = getenv("GL_FAULT_WORKER_START_DELAY_MS");
  if (!v || !*v) return;
  uint64_t ms;
  if (gl_parse_u64(v, 60000, &ms) != 0) {
    GL_WARN("GL_FAULT_WORKER_START_DELAY_MS: expected 0..60000, got '%s'; ignored", v);
    return;
  }
  GL_DEBUG("worker: test fault: waiting %llu ms before the device opens", (unsigned long long)ms);
  struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}
