/* notify.c - see notify.h. */
#include "daemon/notify.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <systemd/sd-daemon.h>

#include "common/log.h"

int gl_notify_enabled(void) {
  const char *s = getenv("NOTIFY_SOCKET");
  return s && *s;
}

/* Sends text; a failure is logged once at debug level (the manager may be
 * gone while we stop). */
static void notify_send(const char *text) {
  if (!gl_notify_enabled()) return;
  int rc = sd_notify(0, text);
  if (rc < 0) GL_DEBUG("sd_notify: error %d", rc);
}

void gl_notify_ready(const char *status) {
  char text[600];
  if (status) snprintf(text, sizeof text, "READY=1\nSTATUS=%.500s", status);
  else snprintf(text, sizeof text, "READY=1");
  notify_send(text);
}

void gl_notify_reloading(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  char text[96];
  snprintf(text, sizeof text, "RELOADING=1\nMONOTONIC_USEC=%llu",
           (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000);
  notify_send(text);
}

void gl_notify_stopping(void) { notify_send("STOPPING=1\nSTATUS=stopping: freeing every lease"); }

void gl_notify_status(const char *fmt, ...) {
  if (!gl_notify_enabled()) return;
  char text[600] = "STATUS=";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text + 7, sizeof text - 7, fmt, ap);
  va_end(ap);
  notify_send(text);
}
