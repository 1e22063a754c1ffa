/*
 * node.h - what GPUs this node has.
 *
 * Discovery joins two sources: NVML (loaded at run time) for the list, the
 * UUIDs, names and live free VRAM; and a one-off probe worker process for
 * what only CUDA knows (SM count, the CUDA ordinal of each UUID), so the
 * daemon's own process never initialises CUDA. Either source may be missing:
 * without NVML the probe's list is used (free VRAM then unknown); without
 * the CUDA driver there is nothing to lease and `no_gpu_reason` says why.
 */
#ifndef GL_DAEMON_NODE_H
#define GL_DAEMON_NODE_H

#include <stdbool.h>
#include <stdint.h>

#include "gpulease/gpulease.h"

struct gl_nvml;

typedef struct gl_node_gpu {
  uint32_t index;      /* the daemon's GPU index (NVML order) */
  int cuda_ordinal;    /* CUDA device ordinal in a worker */
  char uuid[96];
  char name[96];
  uint8_t cc_major, cc_minor;
  uint32_t sm_count;
  uint64_t total_vram_bytes;
  uint32_t flags;      /* GPULEASE_GPU_* */
} gl_node_gpu;

typedef struct gl_node {
  struct gl_nvml *nvml;   /* NULL without NVML */
  uint32_t gpu_count;
  gl_node_gpu gpus[GPULEASE_MAX_GPUS];
  char driver_version[64];
  char no_gpu_reason[512]; /* set when gpu_count == 0 */
} gl_node;

/* Discovers the GPUs. worker_exe/log_level start the probe worker.
 * Never fails: with no GPU, gpu_count is 0 and no_gpu_reason explains. */
void gl_node_discover(gl_node *n, const char *worker_exe, const char *log_level);

/* Free VRAM of GPU `index` now: NVML's figure, or `fallback` without NVML. */
uint64_t gl_node_free_vram(const gl_node *n, uint32_t index, uint64_t fallback);

void gl_node_close(gl_node *n);

#endif /* GL_DAEMON_NODE_H */
