/*
 * worker_mem.h - whether an ended worker's memory is back: the check a
 * fence waits on (fence.h, docs/security.md "Fenced GPUs").
 *
 * On a GPU that NVML knows, NVML's word is taken: the memory is held while
 * NVML lists the worker's PID among the GPU's compute processes, whether or
 * not the process has exited (a process may linger after the driver gave
 * its context back, and the driver may hold a context after its process
 * is gone).
 *
 * Where NVML cannot tell (no NVML on the node, an emulated device, whose
 * VRAM is the worker's own host memory, or an NVML error), the process
 * itself is the measure: its memory is back once it has exited (reaped, or
 * a zombie, whose memory the kernel has already taken back), held while it
 * runs. So there a worker that exits late is held until it does.
 */
#ifndef GL_DAEMON_WORKER_MEM_H
#define GL_DAEMON_WORKER_MEM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon/node.h"

/* What the check saw. */
typedef struct gl_worker_mem {
  bool held;         /* the memory is not back */
  bool by_nvml;      /* NVML answered (else the process was looked at) */
  uint64_t bytes;    /* NVML: the GPU memory it lists for the PID; else the
                        process's resident host memory (VmRSS), 0 unknown */
  /* The GPU's memory as NVML sees it now (gpu_known false without it). */
  bool gpu_known;
  uint64_t gpu_used_bytes, gpu_free_bytes;
} gl_worker_mem;

/* Checks worker pid of the daemon's GPU gpu (node n, borrowed; the GPU
 * index may be out of range: then only the process is looked at). reaped:
 * the daemon has reaped the process already. Fills *out and returns
 * out->held. Reads NVML and /proc; never blocks for long. */
bool gl_worker_mem_check(const gl_node *n, uint32_t gpu, pid_t pid, bool reaped,
                         gl_worker_mem *out);

/* Writes what *m says into buf (len bytes, NUL-terminated), e.g. "NVML
 * lists 812 MiB of it; the GPU has 1024 MiB used, 139000 MiB free" or "the
 * process has not exited and holds 35 MiB of host memory (no NVML figure
 * for this GPU: its memory is back when the process exits); the GPU's
 * used/free memory unknown (no NVML)". */
void gl_worker_mem_describe(const gl_worker_mem *m, char *buf, size_t len);

#endif /* GL_DAEMON_WORKER_MEM_H */
