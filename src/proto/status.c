/*
 * status.c - names of gpulease status codes and of rights.
 *
 * gpulease_status_name() is part of the public API (gpulease.h) but lives
 * with the codec because the daemon, the worker and the CLI print the same
 * names (the ops' names are the op table's, optable.c).
 * Every name is the enumerator without its GPULEASE_ prefix, which is also
 * how docs/protocol.md spells them.
 */
#include <stdio.h>
#include <string.h>

#include "proto/wire.h"

GPULEASE_API const char *gpulease_status_name(int status) {
  switch (status) {
  case GPULEASE_OK: return "OK";
  case GPULEASE_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
  case GPULEASE_UNAUTHORIZED: return "UNAUTHORIZED";
  case GPULEASE_LOAD_FAILED: return "LOAD_FAILED";
  case GPULEASE_LAUNCH_FAILED: return "LAUNCH_FAILED";
  case GPULEASE_NOT_FOUND: return "NOT_FOUND";
  case GPULEASE_READ_FAILED: return "READ_FAILED";
  case GPULEASE_LEASE_EXPIRED: return "LEASE_EXPIRED";
  case GPULEASE_CAPACITY_EXCEEDED: return "CAPACITY_EXCEEDED";
  case GPULEASE_UNSUPPORTED: return "UNSUPPORTED";
  case GPULEASE_NO_DEVICE: return "NO_DEVICE";
  case GPULEASE_MALFORMED: return "MALFORMED";
  case GPULEASE_TOO_LARGE: return "TOO_LARGE";
  case GPULEASE_BUSY: return "BUSY";
  case GPULEASE_WRITE_FAILED: return "WRITE_FAILED";
  case GPULEASE_INTERNAL: return "INTERNAL";
  case GPULEASE_INVALID_HANDLE: return "INVALID_HANDLE";
  case GPULEASE_MISSING_SEQ: return "MISSING_SEQ";
  case GPULEASE_QUOTA_EXCEEDED: return "QUOTA_EXCEEDED";
  case GPULEASE_DISCONNECTED: return "DISCONNECTED";
  case GPULEASE_TLS_FAILED: return "TLS_FAILED";
  case GPULEASE_PROTOCOL_ERROR: return "PROTOCOL_ERROR";
  case GPULEASE_NO_MEMORY: return "NO_MEMORY";
  case GPULEASE_TIMEOUT: return "TIMEOUT";
  default: return "UNKNOWN";
  }
}

/* Right names, bit 0 first (GPULEASE_RIGHT_*). */
static const char *const right_names[] = {"query",   "renew", "free",  "submit",
                                          "session", "read",  "write", "delegate"};

GPULEASE_API void gpulease_rights_format(uint32_t rights, char *buf, size_t len) {
  if (!buf || !len) return;
  buf[0] = 0;
  if ((rights & GPULEASE_RIGHTS_ALL) == GPULEASE_RIGHTS_ALL) {
    snprintf(buf, len, "all");
    return;
  }
  size_t n = 0;
  for (unsigned i = 0; i < 8; i++) {
    if (!(rights & (1u << i))) continue;
    int w = snprintf(buf + n, len - n, "%s%s", n ? "," : "", right_names[i]);
    if (w < 0 || (size_t)w >= len - n) return;
    n += (size_t)w;
  }
  if (!n) snprintf(buf, len, "none");
}

GPULEASE_API gpulease_status gpulease_rights_parse(const char *text, uint32_t *rights) {
  if (!text || !rights) return GPULEASE_INVALID_ARGUMENT;
  uint32_t r = 0;
  const char *p = text;
  for (;;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    bool found = false;
    if (n == 4 && !strncmp(p, "none", 4) && p == text && !e) {
      found = true; /* gpulease_rights_format's word for 0, alone */
    } else if (n == 3 && !strncmp(p, "all", 3)) {
      r |= GPULEASE_RIGHTS_ALL;
      found = true;
    }
    for (unsigned i = 0; i < 8 && !found; i++)
      if (strlen(right_names[i]) == n && !strncmp(p, right_names[i], n)) {
        r |= 1u << i;
        found = true;
      }
    if (!found) return GPULEASE_INVALID_ARGUMENT;
    if (!e) break;
    p = e + 1;
  }
  *rights = r;
  return GPULEASE_OK;
}
