/*
 * node.c - GPU discovery for the daemon; see node.h.
 */
#include "daemon/node.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "daemon/worker_proc.h"
#include "gpu/nvml.h"
#include "proto/wire.h"
#include "emu/emu.h"
#include "worker/ipc.h"

#define PROBE_TIMEOUT_MS 60000

/* Runs WORKER_PROBE in a throw-away worker. Returns the worker's status;
 * on failure `why` says what went wrong. */
static gpulease_status probe(const gl_node *n, const char *exe, const char *log_level,
                             gl_probe_resp *out, char *why, size_t whylen) {
  pid_t pid;
  int fd;
  if (gl_worker_spawn_raw(exe, log_level, n->cuda_args, &pid, &fd, why, whylen) != 0)
    return GPULEASE_INTERNAL;
  gpulease_status st = GPULEASE_INTERNAL;
  gl_buf req;
  gl_buf_init(&req);
  gl_request r = {.op = GL_OP_WORKER_PROBE};
  uint8_t *msg = NULL;
  size_t len = 0;
  /* A driver that hangs in cuInit must not hang the daemon's start. */
  struct timeval tv = {.tv_sec = PROBE_TIMEOUT_MS / 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (gl_request_encode(&r, &req) != GPULEASE_OK ||
      gl_ipc_write_call(fd, 1, req.data, req.len) != 0) {
    snprintf(why, whylen, "cannot send the probe to the worker");
    goto done;
  }
  gl_header h;
  uint64_t tag = 0;
  if (gl_ipc_read_call(fd, 1u << 20, &tag, &h, &msg, &len, NULL) != GL_IPC_MESSAGE || tag != 1) {
    snprintf(why, whylen, "the probe worker gave no valid reply within %d s",
             PROBE_TIMEOUT_MS / 1000);
    goto done;
  }
  gl_response *resp = malloc(sizeof *resp);
  if (!resp) goto done;
  char err[256];
  if (gl_response_decode(msg, len, 1u << 20, resp, err, sizeof err) !=
      GPULEASE_OK) {
    snprintf(why, whylen, "the probe worker's reply is malformed: %s", err);
  } else if (resp->status != GPULEASE_OK) {
    st = resp->status;
    snprintf(why, whylen, "%.*s", (int)resp->msg_len, resp->msg);
  } else {
    *out = resp->u.probe;
    st = GPULEASE_OK;
  }
  free(resp);
done:
  free(msg);
  gl_buf_free(&req);
  close(fd);
  int status;
  for (int i = 0; i < 50 && waitpid(pid, &status, WNOHANG) == 0; i++) usleep(100000);
  if (waitpid(pid, &status, WNOHANG) == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  return st;
}

static void read_mig_table(gl_node *n, const char *path);

static void add_gpu(gl_node *n, const gl_node_gpu *g) {
  if (n->gpu_count < GPULEASE_MAX_GPUS) n->gpus[n->gpu_count++] = *g;
}

/* The emulated GPUs: EMU-0, EMU-1, ... (stable names), each with a VRAM
 * budget of its own; every lease's worker emulates its device apart. */
static void add_emulated(gl_node *n, const gl_node_config *cfg) {
  unsigned count = cfg->emu_gpus ? cfg->emu_gpus : 1;
  for (unsigned k = 0; k < count && n->gpu_count < GPULEASE_MAX_GPUS; k++) {
    gl_node_gpu g = {.index = n->gpu_count,
                     .cuda_ordinal = 0,
                     .flags = GPULEASE_GPU_EMULATED | GPULEASE_GPU_ARCH_SPECIFIC};
    snprintf(g.uuid, sizeof g.uuid, "EMU-%u", k);
    snprintf(g.name, sizeof g.name, "%s", GL_EMU_NAME);
    g.cc_major = GL_EMU_CC_MAJOR;
    g.cc_minor = GL_EMU_CC_MINOR;
    g.sm_count = cfg->emu_threads;
    g.total_vram_bytes = cfg->emu_vram_bytes;
    g.ptx_isa_driver[0] = GL_EMU_PTX_ISA_MAJOR;
    g.ptx_isa_driver[1] = GL_EMU_PTX_ISA_MINOR;
    add_gpu(n, &g);
  }
  GL_INFO("offering %u emulated device(s) (PTX on the CPU): %" PRIu64 " bytes of host memory "
          "as VRAM each, %u host thread(s) per launch",
          count, cfg->emu_vram_bytes, cfg->emu_threads);
}

/* What PTX the probe worker says the node loads, and the GPU's
 * arch-specific target (sm_90a: compute capability 9.0 and up). */
static void set_ptx_isa(gl_node_gpu *g, const gl_probe_resp *pr) {
  if (pr) {
    memcpy(g->ptx_isa_driver, pr->ptx_isa_driver, sizeof g->ptx_isa_driver);
    memcpy(g->ptx_isa_nvjitlink, pr->ptx_isa_nvjitlink, sizeof g->ptx_isa_nvjitlink);
  }
  if (g->cc_major >= 9) g->flags |= GPULEASE_GPU_ARCH_SPECIFIC;
}

/* Real GPUs: NVML's list joined with the probe worker's CUDA view. */
static void discover_cuda(gl_node *n, const gl_node_config *cfg) {
  char nvml_err[256];
  if (gl_nvml_open(&n->nvml, nvml_err, sizeof nvml_err) != 0) n->nvml = NULL;

  gl_probe_resp *pr = calloc(1, sizeof *pr);
  char probe_err[300] = "";
  gpulease_status pst = pr ? probe(n, cfg->worker_exe, cfg->log_level, pr, probe_err,
                                   sizeof probe_err)
                           : GPULEASE_INTERNAL;
  if (pst != GPULEASE_OK && pr) pr->count = 0;

  if (n->nvml) {
    gl_nvml_driver_version(n->nvml, n->driver_version, sizeof n->driver_version);
    unsigned count = gl_nvml_count(n->nvml);
    for (unsigned i = 0; i < count && i < GPULEASE_MAX_GPUS; i++) {
      gl_nvml_device d;
      if (gl_nvml_device_info(n->nvml, i, &d) != 0) continue;
      gl_node_gpu g = {.index = i, .cuda_ordinal = -1};
      snprintf(g.uuid, sizeof g.uuid, "%s", d.uuid);
      snprintf(g.name, sizeof g.name, "%s", d.name);
      g.cc_major = (uint8_t)d.cc_major;
      g.cc_minor = (uint8_t)d.cc_minor;
      g.total_vram_bytes = d.total_bytes;
      for (unsigned k = 0; pr && k < pr->count; k++) {
        if (strcmp(pr->gpus[k].uuid, d.uuid) == 0) {
          g.cuda_ordinal = (int)k;
          g.sm_count = pr->gpus[k].sm_count;
        }
      }
      /* A GPU in MIG mode: CUDA sees its instances, not the GPU. */
      gl_nvml_mig migs[GL_NODE_MAX_MIG];
      int nm = gl_nvml_mig_list(n->nvml, i, migs, GL_NODE_MAX_MIG);
      for (int k = 0; k < nm && k < GL_NODE_MAX_MIG; k++) {
        _Static_assert(sizeof g.migs[k].uuid == sizeof migs[k].uuid, "uuid sizes");
        memcpy(g.migs[k].uuid, migs[k].uuid, sizeof g.migs[k].uuid);
        g.migs[k].memory_bytes = migs[k].memory_bytes;
      }
      g.mig_count = nm > 0 ? (unsigned)nm : 0;
      if (g.cuda_ordinal < 0 && g.mig_count == 0) {
        GL_WARN("GPU %u (%s) is not visible to CUDA; not offered for lease", i, d.uuid);
        continue;
      }
      g.index = n->gpu_count;
      set_ptx_isa(&g, pst == GPULEASE_OK ? pr : NULL);
      add_gpu(n, &g);
    }
  } else if (pr) {
    for (unsigned k = 0; k < pr->count; k++) {
      gl_node_gpu g = {.index = n->gpu_count, .cuda_ordinal = (int)k};
      snprintf(g.uuid, sizeof g.uuid, "%s", pr->gpus[k].uuid);
      snprintf(g.name, sizeof g.name, "%s", pr->gpus[k].name);
      g.cc_major = pr->gpus[k].cc_major;
      g.cc_minor = pr->gpus[k].cc_minor;
      g.sm_count = pr->gpus[k].sm_count;
      g.total_vram_bytes = pr->gpus[k].total_vram_bytes;
      set_ptx_isa(&g, pr);
      add_gpu(n, &g);
    }
  }
  if (n->gpu_count == 0) {
    snprintf(n->no_gpu_reason, sizeof n->no_gpu_reason, "no GPU on this node (NVML: %s; CUDA: %s)",
             n->nvml ? "no devices" : nvml_err,
             pst == GPULEASE_OK ? "no devices" : probe_err);
  }
  free(pr);
}

void gl_node_discover(gl_node *n, const gl_node_config *cfg) {
  memset(n, 0, sizeof *n);
  snprintf(n->emu_vram_arg, sizeof n->emu_vram_arg, "%" PRIu64, cfg->emu_vram_bytes);
  snprintf(n->emu_threads_arg, sizeof n->emu_threads_arg, "%u", cfg->emu_threads);
  snprintf(n->seq_timeout_arg, sizeof n->seq_timeout_arg, "%u",
           cfg->seq_timeout_ms ? cfg->seq_timeout_ms : 10000u);
  const char *cuda[] = {"--device", "cuda", "--seq-timeout-ms", n->seq_timeout_arg,
                        NULL, NULL, NULL};
  const char *emu[] = {"--device", "emu", "--emu-vram", n->emu_vram_arg,
                       "--emu-threads", n->emu_threads_arg, "--seq-timeout-ms",
                       n->seq_timeout_arg, NULL, NULL, NULL};
  memcpy(n->cuda_args, cuda, sizeof cuda);
  memcpy(n->emu_args, emu, sizeof emu);
  if (cfg->jit_cache_dir && cfg->jit_cache_dir[0]) {
    snprintf(n->jit_cache_dir, sizeof n->jit_cache_dir, "%s", cfg->jit_cache_dir);
    n->cuda_args[4] = n->emu_args[8] = "--jit-cache";
    n->cuda_args[5] = n->emu_args[9] = n->jit_cache_dir;
  }

  if (cfg->mode != GL_DEVICE_EMU) discover_cuda(n, cfg);
  else snprintf(n->no_gpu_reason, sizeof n->no_gpu_reason, "real GPUs not used (--device emu)");
  if (n->gpu_count && n->gpus[0].ptx_isa_driver[0]) {
    const gl_node_gpu *g0 = &n->gpus[0];
    if (g0->ptx_isa_nvjitlink[0])
      GL_INFO("PTX: the driver loads ISA up to %u.%u, nvJitLink up to %u.%u",
              g0->ptx_isa_driver[0], g0->ptx_isa_driver[1], g0->ptx_isa_nvjitlink[0],
              g0->ptx_isa_nvjitlink[1]);
    else
      GL_INFO("PTX: the driver loads ISA up to %u.%u; no nvJitLink for newer PTX",
              g0->ptx_isa_driver[0], g0->ptx_isa_driver[1]);
  }
  if (cfg->mode == GL_DEVICE_EMU || (cfg->mode == GL_DEVICE_AUTO && n->gpu_count == 0)) {
    if (cfg->mode == GL_DEVICE_AUTO) GL_INFO("%s", n->no_gpu_reason);
    add_emulated(n, cfg);
  }
  const char *table = getenv("GPULEASED_MIG_TABLE");
  if (table && table[0]) read_mig_table(n, table);
  for (uint32_t i = 0; i < n->gpu_count; i++) {
    gl_node_gpu *g = &n->gpus[i];
    if (!g->mig_count) continue;
    g->flags |= GPULEASE_GPU_MIG;
    for (unsigned k = 0; k < g->mig_count; k++)
      GL_INFO("GPU %" PRIu32 ": MIG instance %u: %s, %" PRIu64 " MiB (partition leases only)", i,
              k, g->migs[k].uuid, g->migs[k].memory_bytes >> 20);
  }
}

/* GPULEASED_MIG_TABLE: MIG instances from a file instead of NVML. */
static void read_mig_table(gl_node *n, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    GL_WARN("GPULEASED_MIG_TABLE: cannot open %s: %s", path, strerror(errno));
    return;
  }
  for (uint32_t i = 0; i < n->gpu_count; i++) n->gpus[i].mig_count = 0;
  char line[256];
  for (unsigned lineno = 1; fgets(line, sizeof line, f); lineno++) {
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    unsigned gpu;
    char uuid[96];
    unsigned long long bytes;
    char extra;
    int got = sscanf(line, "%u %95s %llu %c", &gpu, uuid, &bytes, &extra);
    if (got <= 0) continue; /* blank */
    if (got != 3 || gpu >= n->gpu_count || bytes == 0 ||
        n->gpus[gpu].mig_count >= GL_NODE_MAX_MIG) {
      GL_WARN("GPULEASED_MIG_TABLE %s:%u: expected \"GPU_INDEX MIG_UUID MEMORY_BYTES\" for one "
              "of %u GPUs, at most %d instances each; line ignored",
              path, lineno, n->gpu_count, GL_NODE_MAX_MIG);
      continue;
    }
    gl_node_gpu *g = &n->gpus[gpu];
    gl_node_mig *m = &g->migs[g->mig_count++];
    snprintf(m->uuid, sizeof m->uuid, "%s", uuid);
    m->memory_bytes = bytes;
  }
  fclose(f);
}

const char *const *gl_node_mig_worker_args(gl_node *n, uint32_t index, unsigned k) {
  if (index >= n->gpu_count || k >= n->gpus[index].mig_count) return NULL;
  const gl_node_gpu *g = &n->gpus[index];
  const char *const *base = gl_node_worker_args(n, index);
  size_t i = 0;
  for (; base[i] && i < 10; i++) n->mig_args[i] = base[i];
  n->mig_args[i++] = "--cuda-visible-devices";
  n->mig_args[i++] = g->migs[k].uuid;
  if (g->flags & GPULEASE_GPU_EMULATED) {
    /* The emulated device stands for the instance: its size. The later
     * --emu-vram wins over the GPU's. */
    snprintf(n->mig_vram_arg, sizeof n->mig_vram_arg, "%" PRIu64, g->migs[k].memory_bytes);
    n->mig_args[i++] = "--emu-vram";
    n->mig_args[i++] = n->mig_vram_arg;
  }
  n->mig_args[i] = NULL;
  return n->mig_args;
}

const char *const *gl_node_worker_args(const gl_node *n, uint32_t index) {
  if (index < n->gpu_count && (n->gpus[index].flags & GPULEASE_GPU_EMULATED)) return n->emu_args;
  return n->cuda_args;
}

int gl_node_read_free_vram(const gl_node *n, uint32_t index, uint64_t *free_bytes) {
  if (!n->nvml || index >= n->gpu_count) return -1;
  uint64_t total, used;
  return gl_nvml_memory_by_uuid(n->nvml, n->gpus[index].uuid, &total, free_bytes, &used) == 0
             ? 0
             : -1;
}

uint64_t gl_node_free_vram(const gl_node *n, uint32_t index, uint64_t fallback) {
  uint64_t free_bytes;
  return gl_node_read_free_vram(n, index, &free_bytes) == 0 ? free_bytes : fallback;
}

void gl_node_close(gl_node *n) {
  if (n->nvml) gl_nvml_close(n->nvml);
  n->nvml = NULL;
}

void gl_node_worker_uuid(const gl_node *n, uint32_t index, bool mig, char *out, size_t len) {
  if (len == 0) return;
  out[0] = 0;
  if (mig || index >= n->gpu_count || (n->gpus[index].flags & GPULEASE_GPU_EMULATED)) return;
  snprintf(out, len, "%s", n->gpus[index].uuid);
}
