/* worker_mem.c - see worker_mem.h. */
#include "daemon/worker_mem.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gpu/nvml.h"

/* The process's state letter from /proc/PID/stat, 0 when it is gone. */
static char proc_state(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *close_paren = strrchr(buf, ')'); /* the name may hold anything */
  if (!close_paren || close_paren[1] != ' ') return 0;
  return close_paren[2];
}

/* VmRSS of pid, bytes (0 unknown). */
static uint64_t proc_rss(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  uint64_t kib = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %" SCNu64, &kib) == 1) break;
  fclose(f);
  return kib * 1024;
}

bool gl_worker_mem_check(const gl_node *n, uint32_t gpu, pid_t pid, bool reaped,
                         gl_worker_mem *out) {
  memset(out, 0, sizeof *out);
  if (n->nvml && gpu < n->gpu_count) {
    const char *uuid = n->gpus[gpu].uuid;
    uint64_t total = 0;
    out->gpu_known = gl_nvml_memory_by_uuid(n->nvml, uuid, &total, &out->gpu_free_bytes,
                                            &out->gpu_used_bytes) == 0;
    uint64_t bytes = 0;
    int r = gl_nvml_process_memory(n->nvml, uuid, (unsigned)pid, &bytes);
    if (r >= 0) {
      out->by_nvml = true;
      out->held = r == 0;
      out->bytes = out->held ? bytes : 0;
      return out->held;
    }
  }
  if (reaped) return false;
  char st = proc_state(pid);
  if (st == 0 || st == 'Z' || st == 'X') return false;
  out->held = true;
  out->bytes = proc_rss(pid);
  return true;
}

void gl_worker_mem_describe(const gl_worker_mem *m, char *buf, size_t len) {
  char gpu[96];
  if (m->gpu_known)
    snprintf(gpu, sizeof gpu, "the GPU has %" PRIu64 " MiB used, %" PRIu64 " MiB free (NVML)",
             m->gpu_used_bytes >> 20, m->gpu_free_bytes >> 20);
  else
    snprintf(gpu, sizeof gpu, "the GPU's used/free memory unknown (no NVML)");
  if (m->by_nvml && m->held)
    snprintf(buf, len, "NVML lists %" PRIu64 " MiB of it; %s", m->bytes >> 20, gpu);
  else if (m->by_nvml)
    snprintf(buf, len, "NVML no longer lists its memory; %s", gpu);
  else if (m->held)
    snprintf(buf, len,
             "the process has not exited and holds %" PRIu64 " MiB of host memory (no NVML "
             "figure for this GPU: its memory is back when the process exits); %s",
             m->bytes >> 20, gpu);
  else
    snprintf(buf, len, "the process has exited; %s", gpu);
}
