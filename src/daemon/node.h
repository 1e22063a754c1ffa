/*
 * node.h - what GPUs this node has.
 *
 * Discovery joins two sources: NVML (loaded at run time) for the list, the
 * UUIDs, names and live free VRAM; and a one-off probe worker process for
 * what only CUDA knows (SM count, the CUDA ordinal of each UUID), so the
 * daemon's own process never initialises CUDA. Either source may be missing:
 * without NVML the probe's list is used (free VRAM then unknown); without
 * the CUDA driver there is nothing real to lease and `no_gpu_reason` says
 * why.
 *
 * The emulated device (PTX on the CPU, src/emu/) is offered as one more GPU,
 * flagged GPULEASE_GPU_EMULATED: always with device mode "emu", and in mode
 * "auto" (the default) when the node has no real GPU. Its VRAM is a budget
 * of host memory (--emu-vram).
 */
#ifndef GL_DAEMON_NODE_H
#define GL_DAEMON_NODE_H

#include <stdbool.h>
#include <stdint.h>

#include "gpulease/gpulease.h"

struct gl_nvml;

/* MIG instances a GPU holds at most (an H100 makes up to 7). */
#define GL_NODE_MAX_MIG 8

/* A MIG instance: a lease of class partition takes one whole. */
typedef struct gl_node_mig {
  char uuid[96];          /* "MIG-...": the worker's CUDA_VISIBLE_DEVICES */
  uint64_t memory_bytes;  /* its VRAM */
} gl_node_mig;

typedef struct gl_node_gpu {
  uint32_t index;      /* the daemon's GPU index (NVML order) */
  int cuda_ordinal;    /* CUDA device ordinal in a worker */
  char uuid[96];
  char name[96];
  uint8_t cc_major, cc_minor;
  uint32_t sm_count;
  uint64_t total_vram_bytes;
  uint32_t flags;      /* GPULEASE_GPU_* (GPULEASE_GPU_MIG with instances) */
  /* The newest PTX ISA (major, minor) its workers load: through the
   * driver's JIT (the emulated device: its parser's), through nvJitLink
   * (0, 0: none). From the probe worker. */
  uint8_t ptx_isa_driver[2], ptx_isa_nvjitlink[2];
  unsigned mig_count;  /* MIG instances (MIG mode); 0: the GPU is leased whole */
  gl_node_mig migs[GL_NODE_MAX_MIG];
} gl_node_gpu;

/* Which devices the daemon offers (gpuleased --device). */
typedef enum gl_device_mode {
  GL_DEVICE_AUTO = 0, /* real GPUs; the emulated device when there are none */
  GL_DEVICE_CUDA,     /* real GPUs only */
  GL_DEVICE_EMU       /* the emulated device only */
} gl_device_mode;

typedef struct gl_node_config {
  const char *worker_exe; /* the program run as worker (the daemon's binary) */
  const char *log_level;
  gl_device_mode mode;
  uint64_t emu_vram_bytes; /* the emulated device's VRAM (host memory) */
  unsigned emu_threads;    /* host threads per emulated launch */
  unsigned emu_gpus;       /* emulated GPUs (EMU-0 ...), each of emu_vram_bytes */
  const char *jit_cache_dir; /* where workers keep compiled PTX; NULL: none */
  unsigned seq_timeout_ms;   /* held session ops wait this long for a missing seq */
} gl_node_config;

typedef struct gl_node {
  struct gl_nvml *nvml;   /* NULL without NVML */
  uint32_t gpu_count;
  gl_node_gpu gpus[GPULEASE_MAX_GPUS];
  char driver_version[64];
  char no_gpu_reason[512]; /* set when no real GPU was found */
  /* the worker arguments for each kind of device (gl_node_worker_args) */
  const char *cuda_args[7];
  const char *emu_args[11];
  char emu_vram_arg[24], emu_threads_arg[12], seq_timeout_arg[12];
  /* gl_node_mig_worker_args's: the device arguments, then the instance */
  const char *mig_args[16];
  char mig_vram_arg[24];
  char jit_cache_dir[1100];
} gl_node;

/* Discovers the GPUs (cfg is only read during the call). Never fails: with
 * nothing to offer, gpu_count is 0 and no_gpu_reason explains. A GPU in
 * MIG mode (NVML) is offered with its MIG instances, for partition leases
 * only. The environment variable GPULEASED_MIG_TABLE may name a file that
 * gives the MIG instances instead of NVML, one per line, "GPU_INDEX
 * MIG_UUID MEMORY_BYTES" ('#' starts a comment): for tests and dry runs on
 * machines without MIG; no GPU's setting is ever changed. */
void gl_node_discover(gl_node *n, const gl_node_config *cfg);

/* The extra worker arguments (NULL-terminated, owned by n) that make a
 * worker run GPU `index`'s device layer: "--device cuda" or "--device emu
 * --emu-vram N --emu-threads T", then "--seq-timeout-ms MS", then
 * "--jit-cache DIR" when configured. */
const char *const *gl_node_worker_args(const gl_node *n, uint32_t index);

/* The UUID a worker for GPU `index` binds to (WORKER_INIT, WORKER_WARM:
 * the worker finds its own CUDA ordinal for it), into out (len bytes): the
 * GPU's UUID, or "" for an emulated GPU, a MIG instance (mig: the worker
 * sees only that instance, as device 0) or an index out of range. */
void gl_node_worker_uuid(const gl_node *n, uint32_t index, bool mig, char *out, size_t len);

/* The worker arguments for MIG instance k of GPU index: the GPU's, then
 * "--cuda-visible-devices MIG-..." (the worker sets CUDA_VISIBLE_DEVICES,
 * and the instance is its CUDA device 0), and for an emulated device
 * "--emu-vram" the instance's size. Valid until the next call. NULL when
 * there is no such instance. */
const char *const *gl_node_mig_worker_args(gl_node *n, uint32_t index, unsigned k);

/* Free VRAM of GPU `index` now: NVML's figure, or `fallback` without NVML.
 * Blocks on NVML (milliseconds under load): the main loop reads
 * vram_watch.h's figure instead. */
uint64_t gl_node_free_vram(const gl_node *n, uint32_t index, uint64_t fallback);
/* The same into *free_bytes (bytes): 0, or -1 when NVML has no figure for
 * the GPU (no NVML, an emulated GPU, an index out of range). */
int gl_node_read_free_vram(const gl_node *n, uint32_t index, uint64_t *free_bytes);

void gl_node_close(gl_node *n);

#endif /* GL_DAEMON_NODE_H */
