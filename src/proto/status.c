/*
 * status.c - names of gpulease status codes and of wire ops.
 *
 * gpulease_status_name() is part of the public API (gpulease.h) but lives
 * with the codec because the daemon, the worker and the CLI print the same
 * names; keeping the table next to gl_op_name() keeps both in one place.
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

const char *gl_op_name(uint16_t op) {
  switch (op) {
  case GL_OP_GET_INVENTORY: return "GET_INVENTORY";
  case GL_OP_NODE_INFO: return "NODE_INFO";
  case GL_OP_NET_INFO: return "NET_INFO";
  case GL_OP_POOL_INFO: return "POOL_INFO";
  case GL_OP_AUTHENTICATE: return "AUTHENTICATE";
  case GL_OP_LEASE_DELEGATE: return "LEASE_DELEGATE";
  case GL_OP_LEASE_REVOKE: return "LEASE_REVOKE";
  case GL_OP_ADMIN_UNFENCE: return "ADMIN_UNFENCE";
  case GL_OP_SHM_ATTACH: return "SHM_ATTACH";
  case GL_OP_SHM_DETACH: return "SHM_DETACH";
  case GL_OP_MEM_WRITE_SHM: return "MEM_WRITE_SHM";
  case GL_OP_MEM_READ_SHM: return "MEM_READ_SHM";
  case GL_OP_LEASE_ALLOC: return "LEASE_ALLOC";
  case GL_OP_LEASE_RENEW: return "LEASE_RENEW";
  case GL_OP_LEASE_QUERY: return "LEASE_QUERY";
  case GL_OP_LEASE_FREE: return "LEASE_FREE";
  case GL_OP_SESSION_OPEN: return "SESSION_OPEN";
  case GL_OP_SESSION_CLOSE: return "SESSION_CLOSE";
  case GL_OP_SYNC: return "SYNC";
  case GL_OP_KERNEL_OUTPUT: return "KERNEL_OUTPUT";
  case GL_OP_TENSORMAP_ENCODE: return "TENSORMAP_ENCODE";
  case GL_OP_MEM_ALLOC: return "MEM_ALLOC";
  case GL_OP_MEM_FREE: return "MEM_FREE";
  case GL_OP_MEM_WRITE: return "MEM_WRITE";
  case GL_OP_MEM_READ: return "MEM_READ";
  case GL_OP_MEM_COPY: return "MEM_COPY";
  case GL_OP_MEMSET: return "MEMSET";
  case GL_OP_MODULE_LOAD: return "MODULE_LOAD";
  case GL_OP_MODULE_UNLOAD: return "MODULE_UNLOAD";
  case GL_OP_FUNC_INFO: return "FUNC_INFO";
  case GL_OP_LAUNCH: return "LAUNCH";
  case GL_OP_LAUNCH_EX: return "LAUNCH_EX";
  case GL_OP_BURST: return "BURST";
  case GL_OP_EVENT_RECORD: return "EVENT_RECORD";
  case GL_OP_EVENT_ELAPSED: return "EVENT_ELAPSED";
  case GL_OP_GRAPH_BEGIN: return "GRAPH_BEGIN";
  case GL_OP_GRAPH_END: return "GRAPH_END";
  case GL_OP_GRAPH_LAUNCH: return "GRAPH_LAUNCH";
  case GL_OP_GRAPH_SET_ARGS: return "GRAPH_SET_ARGS";
  case GL_OP_GRAPH_DESTROY: return "GRAPH_DESTROY";
  case GL_OP_BATCH: return "BATCH";
  case GL_OP_GPU_SUBMIT: return "GPU_SUBMIT";
  case GL_OP_WORKER_INIT: return "WORKER_INIT";
  case GL_OP_WORKER_PROBE: return "WORKER_PROBE";
  case GL_OP_WORKER_LOST: return "WORKER_LOST";
  case GL_OP_MEM_WRITE_ARENA: return "MEM_WRITE_ARENA";
  case GL_OP_MEM_READ_ARENA: return "MEM_READ_ARENA";
  case GL_OP_WORKER_WARM: return "WORKER_WARM";
  case GL_OP_WORKER_RELEASE: return "WORKER_RELEASE";
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
