/*
 * launch.c - gl_emu_launch: checks a launch against a real GPU's limits,
 * builds the parameter buffer, and runs the grid's blocks, on the calling
 * thread or on a pool of host threads that take block numbers from one
 * atomic counter. The first error stops every thread: it is recorded once
 * (gl_emu__fail) and the others see `failed` at their next check.
 *
 * Cooperative and cluster launches run groups of co-resident blocks
 * instead (gl_emu__group_run): the whole grid as one group on one host
 * thread for a cooperative launch, one cluster a group otherwise, the host
 * threads taking group numbers from the counter. Also here: the occupancy
 * figures (gl_emu_occupancy, gl_emu_max_cluster_size) and the cluster and
 * co-residency checks.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "emu/exec_internal.h"

#define MAX_STATIC_SHARED (48u * 1024u)
#define MAX_HOST_THREADS 256u
#define MAX_BLOCK_STATE (1ull << 31) /* registers + local memory of one block */
#define MAX_GROUP_STATE (1ull << 34) /* all blocks of a co-resident group */

/* An H100's SM (sm_90), for the occupancy figures. */
#define SM_MAX_WARPS 64u            /* 2048 threads */
#define SM_MAX_BLOCKS 32u
#define SM_SHARED_BYTES (228u * 1024u)
#define SM_SHARED_RESERVED 1024u    /* a block's system share */
#define SM_REGS 65536u
#define THREAD_MAX_REGS 255u
#define REG_UNIT 8u                 /* a thread's registers go by 8 (256 a warp) */

int gl_emu__fail(gl_emu_block *b, gpulease_status st, const char *fmt, ...) {
  gl_emu_launch_state *L = b->L;
  b->failed = 1;
  int expect = 0;
  if (atomic_compare_exchange_strong(&L->failed, &expect, 1)) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(L->err, sizeof L->err, fmt, ap);
    va_end(ap);
    L->status = st;
  }
  return -1;
}

/* ---- Per-host-thread block state ---------------------------------------- */

static void block_free(gl_emu_block *b) {
  if (!b)
    return;
  free(b->regs);
  free(b->shared);
  free(b->local);
  free(b->stacks);
  free(b->warps);
  free(b);
}

static gl_emu_block *block_new(gl_emu_launch_state *L, unsigned host_index) {
  gl_emu_block *b = calloc(1, sizeof *b);
  if (!b)
    return NULL;
  b->L = L;
  b->host_index = host_index;
  size_t rows = (size_t)L->nwarps * L->nregs;
  b->regs = calloc(rows, GL_EMU_WARP * sizeof(uint64_t));
  b->shared = calloc(L->shared_alloc ? L->shared_alloc : 1, 1);
  b->local = calloc((size_t)L->nwarps * GL_EMU_WARP * L->local_bytes + 1, 1);
  b->stacks = calloc((size_t)L->nwarps * GL_EMU_WARP * L->max_depth, sizeof(uint32_t));
  b->warps = calloc(L->nwarps, sizeof *b->warps);
  if (!b->regs || !b->shared || !b->local || !b->stacks || !b->warps) {
    block_free(b);
    return NULL;
  }
  for (uint32_t i = 0; i < L->nwarps; i++) {
    gl_emu_warp *w = &b->warps[i];
    w->regs = b->regs + (size_t)i * L->nregs * GL_EMU_WARP;
    w->local = b->local + (size_t)i * GL_EMU_WARP * L->local_bytes;
    w->stack = b->stacks + (size_t)i * GL_EMU_WARP * L->max_depth;
  }
  return b;
}

static void block_clear(gl_emu_block *b) {
  const gl_emu_launch_state *L = b->L;
  memset(b->regs, 0, (size_t)L->nwarps * L->nregs * GL_EMU_WARP * sizeof(uint64_t));
  memset(b->shared, 0, L->shared_alloc);
  memset(b->local, 0, (size_t)L->nwarps * GL_EMU_WARP * L->local_bytes);
  b->clock = 0;
}

/* Runs block number idx (linear, x fastest) with fresh state. */
static int run_block(gl_emu_block *b, uint64_t idx) {
  const gl_emu_launch_state *L = b->L;
  b->ctaid[0] = (uint32_t)(idx % L->grid[0]);
  b->ctaid[1] = (uint32_t)((idx / L->grid[0]) % L->grid[1]);
  b->ctaid[2] = (uint32_t)(idx / ((uint64_t)L->grid[0] * L->grid[1]));
  b->peers = NULL;
  b->cl_rank = 0;
  block_clear(b);
  return gl_emu__block_run(b);
}

/* Sets up the block in slot s of the launch: slots go cluster by cluster
 * (clusters in linear order, x fastest), rank by rank within a cluster
 * (x fastest); gb is the group's block array and k the slot's place in it. */
static void group_slot(gl_emu_block *const *gb, uint32_t k, uint64_t s) {
  gl_emu_block *b = gb[k];
  const gl_emu_launch_state *L = b->L;
  const uint32_t *cd = L->cluster;
  uint64_t c = s / L->cluster_size;
  uint32_t r = (uint32_t)(s % L->cluster_size);
  uint64_t nx = L->grid[0] / cd[0], ny = L->grid[1] / cd[1];
  uint32_t cid[3] = {(uint32_t)(c % nx), (uint32_t)((c / nx) % ny), (uint32_t)(c / (nx * ny))};
  uint32_t rc[3] = {r % cd[0], (r / cd[0]) % cd[1], r / (cd[0] * cd[1])};
  for (int i = 0; i < 3; i++)
    b->ctaid[i] = cid[i] * cd[i] + rc[i];
  b->cl_rank = r;
  b->peers = gb + (k - r);
  block_clear(b);
}

/* Takes groups from the shared counter until none is left or the launch
 * failed; gb holds L->group_blocks blocks. */
static void run_groups(gl_emu_block *const *gb) {
  gl_emu_launch_state *L = gb[0]->L;
  for (;;) {
    if (atomic_load_explicit(&L->failed, memory_order_relaxed))
      return;
    if (L->deadline_ns && gl_mono_ns() >= L->deadline_ns) {
      gl_emu__fail(gb[0], GPULEASE_LAUNCH_FAILED,
                   "CUDA_ERROR_LAUNCH_TIMEOUT: the kernel ran past its deadline");
      return;
    }
    uint64_t g = atomic_fetch_add(&L->next_block, 1);
    if (g >= L->ngroups)
      return;
    for (uint32_t k = 0; k < L->group_blocks; k++)
      group_slot(gb, k, g * L->group_blocks + k);
    if (gl_emu__group_run(gb, L->group_blocks))
      return;
  }
}

/* Takes blocks from the shared counter until none is left or the launch
 * failed. */
static void run_blocks(gl_emu_block *b) {
  gl_emu_launch_state *L = b->L;
  for (;;) {
    if (atomic_load_explicit(&L->failed, memory_order_relaxed))
      return;
    if (L->deadline_ns && gl_mono_ns() >= L->deadline_ns) {
      gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                   "CUDA_ERROR_LAUNCH_TIMEOUT: the kernel ran past its deadline");
      return;
    }
    uint64_t idx = atomic_fetch_add(&L->next_block, 1);
    if (idx >= L->nblocks)
      return;
    if (run_block(b, idx))
      return;
  }
}

typedef struct worker {
  pthread_t tid;
  gl_emu_block **b; /* its block, or its group's blocks */
  int started;
} worker;

static void *worker_main(void *arg) {
  worker *wk = arg;
  if (wk->b[0]->L->grouped)
    run_groups(wk->b);
  else
    run_blocks(wk->b[0]);
  return NULL;
}

static void add_stats(gl_emu_launch_state *L, const gl_emu_block *b) {
  atomic_fetch_add(&L->thread_insns, b->thread_insns);
  atomic_fetch_add(&L->warp_insns, b->warp_insns);
}

/* ---- Checks ------------------------------------------------------------- */

static gpulease_status vinvalid(char *err, size_t errlen, const char *code, const char *fmt,
                                va_list ap) __attribute__((format(printf, 4, 0)));
static gpulease_status vinvalid(char *err, size_t errlen, const char *code, const char *fmt,
                                va_list ap) {
  if (err && errlen) {
    int n = snprintf(err, errlen, "%s: ", code);
    if (n > 0 && (size_t)n < errlen)
      vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
  }
  return GPULEASE_INVALID_ARGUMENT;
}

static gpulease_status invalid(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static gpulease_status invalid(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gpulease_status st = vinvalid(err, errlen, "CUDA_ERROR_INVALID_VALUE", fmt, ap);
  va_end(ap);
  return st;
}

static gpulease_status bad_cluster(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static gpulease_status bad_cluster(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  gpulease_status st = vinvalid(err, errlen, "CUDA_ERROR_INVALID_CLUSTER_SIZE", fmt, ap);
  va_end(ap);
  return st;
}

static gpulease_status check_cfg(const gl_ptx_func *f, const gl_emu_launch_cfg *cfg,
                                 char *err, size_t errlen) {
  static const uint32_t bmax[3] = {1024, 1024, 64};
  static const uint32_t gmax[3] = {0x7fffffffu, 65535, 65535};
  static const char axis[3] = {'x', 'y', 'z'};
  for (int i = 0; i < 3; i++) {
    if (cfg->block[i] == 0 || cfg->grid[i] == 0)
      return invalid(err, errlen, "%s dimension %c is 0", cfg->block[i] == 0 ? "block" : "grid",
                     axis[i]);
    if (cfg->block[i] > bmax[i])
      return invalid(err, errlen, "block dimension %c = %u exceeds %u", axis[i], cfg->block[i],
                     bmax[i]);
    if (cfg->grid[i] > gmax[i])
      return invalid(err, errlen, "grid dimension %c = %u exceeds %u", axis[i], cfg->grid[i],
                     gmax[i]);
  }
  uint64_t nt = (uint64_t)cfg->block[0] * cfg->block[1] * cfg->block[2];
  if (nt > 1024)
    return invalid(err, errlen, "%llu threads per block exceed 1024", (unsigned long long)nt);
  if (f->reqntid[0]) {
    uint32_t r[3];
    for (int i = 0; i < 3; i++)
      r[i] = f->reqntid[i] ? f->reqntid[i] : 1;
    if (r[0] != cfg->block[0] || r[1] != cfg->block[1] || r[2] != cfg->block[2])
      return invalid(err, errlen, "block (%u,%u,%u) differs from the kernel's .reqntid %u,%u,%u",
                     cfg->block[0], cfg->block[1], cfg->block[2], r[0], r[1], r[2]);
  }
  if (f->maxntid[0]) {
    uint64_t mx = 1;
    for (int i = 0; i < 3; i++)
      mx *= f->maxntid[i] ? f->maxntid[i] : 1;
    if (nt > mx)
      return invalid(err, errlen, "%llu threads per block exceed the kernel's .maxntid (%llu)",
                     (unsigned long long)nt, (unsigned long long)mx);
  }
  if (f->static_shared_bytes > MAX_STATIC_SHARED)
    return invalid(err, errlen, "%u bytes of static shared memory exceed %u",
                   f->static_shared_bytes, MAX_STATIC_SHARED);
  if ((uint64_t)f->static_shared_bytes + cfg->shared_bytes > GL_EMU_MAX_SHARED_BYTES)
    return invalid(err, errlen, "%u static + %u dynamic bytes of shared memory exceed %u",
                   f->static_shared_bytes, cfg->shared_bytes, GL_EMU_MAX_SHARED_BYTES);
  return GPULEASE_OK;
}

/* The launch's cluster dimensions into out (1,1,1 without clusters);
 * *explicit_cluster: clusters were asked for (by cfg or .reqnctapercluster). */
static gpulease_status check_cluster(const gl_ptx_func *f, const gl_emu_launch_cfg *cfg,
                                     uint32_t out[3], int *explicit_cluster, char *err,
                                     size_t errlen) {
  static const char axis[3] = {'x', 'y', 'z'};
  const uint32_t *given = cfg->cluster;
  int any = given[0] || given[1] || given[2];
  *explicit_cluster = 0;
  out[0] = out[1] = out[2] = 1;
  if (any) {
    for (int i = 0; i < 3; i++)
      if (given[i] == 0)
        return bad_cluster(err, errlen, "cluster dimension %c is 0", axis[i]);
    if (f->reqnctapercluster[0] &&
        (given[0] != f->reqnctapercluster[0] || given[1] != f->reqnctapercluster[1] ||
         given[2] != f->reqnctapercluster[2]))
      return bad_cluster(err, errlen,
                         "cluster (%u,%u,%u) differs from the kernel's .reqnctapercluster "
                         "%u,%u,%u",
                         given[0], given[1], given[2], f->reqnctapercluster[0],
                         f->reqnctapercluster[1], f->reqnctapercluster[2]);
    memcpy(out, given, 3 * sizeof *out);
  } else if (f->reqnctapercluster[0]) {
    memcpy(out, f->reqnctapercluster, 3 * sizeof *out);
  } else if (f->explicit_cluster) {
    return bad_cluster(err, errlen, "kernel %.64s must be launched with a cluster "
                       "(.explicitcluster) and none was given", f->name);
  } else {
    return GPULEASE_OK;
  }
  *explicit_cluster = 1;
  uint64_t size = (uint64_t)out[0] * out[1] * out[2];
  if (size > GL_EMU_MAX_CLUSTER_BLOCKS)
    return bad_cluster(err, errlen, "a cluster of %llu blocks (%u,%u,%u) exceeds %u, the "
                       "portable cluster size", (unsigned long long)size, out[0], out[1],
                       out[2], GL_EMU_MAX_CLUSTER_BLOCKS);
  if (f->maxclusterrank && size > f->maxclusterrank)
    return bad_cluster(err, errlen, "a cluster of %llu blocks exceeds the kernel's "
                       ".maxclusterrank %u", (unsigned long long)size, f->maxclusterrank);
  for (int i = 0; i < 3; i++)
    if (cfg->grid[i] % out[i])
      return bad_cluster(err, errlen, "grid dimension %c = %u is not a multiple of the "
                         "cluster dimension %u", axis[i], cfg->grid[i], out[i]);
  return GPULEASE_OK;
}

/* ---- Occupancy ---------------------------------------------------------- */

uint32_t gl_emu_occupancy(const gl_emu_function *fn, uint32_t block_threads,
                          uint32_t dyn_shared_bytes) {
  if (!fn || block_threads == 0)
    return 0;
  const gl_ptx_func *f = &fn->mod->pm->funcs[fn->index];
  if (!f->is_entry)
    return 0;
  uint32_t max_threads = 1024;
  gl_emu_function_limits(fn, &max_threads, NULL, NULL);
  if (block_threads > max_threads || f->static_shared_bytes > MAX_STATIC_SHARED ||
      (uint64_t)f->static_shared_bytes + dyn_shared_bytes > GL_EMU_MAX_SHARED_BYTES)
    return 0;
  uint32_t warps = (block_threads + GL_EMU_WARP - 1) / GL_EMU_WARP;
  uint32_t n = SM_MAX_WARPS / warps;
  if (n > SM_MAX_BLOCKS)
    n = SM_MAX_BLOCKS;
  uint32_t smem = f->static_shared_bytes + dyn_shared_bytes + SM_SHARED_RESERVED;
  if (SM_SHARED_BYTES / smem < n)
    n = SM_SHARED_BYTES / smem;
  /* registers: what the kernel uses, at most what ptxas may give a thread
   * (255, and for .maxntid/.reqntid what leaves room for that many) */
  uint32_t max_warps = (max_threads + GL_EMU_WARP - 1) / GL_EMU_WARP;
  uint32_t cap = SM_REGS / (max_warps * GL_EMU_WARP) / REG_UNIT * REG_UNIT;
  if (cap > THREAD_MAX_REGS)
    cap = THREAD_MAX_REGS;
  uint32_t regs = fn->nregs ? fn->nregs : 1;
  if (regs > cap)
    regs = cap;
  regs = (regs + REG_UNIT - 1) / REG_UNIT * REG_UNIT;
  uint32_t by_regs = SM_REGS / (regs * GL_EMU_WARP) / warps;
  if (by_regs < n)
    n = by_regs;
  return n;
}

uint32_t gl_emu_max_cluster_size(const gl_emu_function *fn, uint32_t block_threads,
                                 uint32_t dyn_shared_bytes) {
  if (gl_emu_occupancy(fn, block_threads, dyn_shared_bytes) == 0)
    return 0;
  const gl_ptx_func *f = &fn->mod->pm->funcs[fn->index];
  uint32_t n = GL_EMU_MAX_CLUSTER_BLOCKS;
  if (f->reqnctapercluster[0]) {
    uint64_t r = (uint64_t)f->reqnctapercluster[0] * f->reqnctapercluster[1] *
                 f->reqnctapercluster[2];
    n = r > GL_EMU_MAX_CLUSTER_BLOCKS ? 0 : (uint32_t)r;
  }
  if (f->maxclusterrank && n > f->maxclusterrank)
    n = f->maxclusterrank;
  return n;
}

/* ---- The launch --------------------------------------------------------- */

gpulease_status gl_emu_launch(gl_emu_device *dev, const gl_emu_function *fn,
                              const gl_emu_launch_cfg *cfg, gl_emu_stats *stats, char *err,
                              size_t errlen) {
  if (err && errlen)
    err[0] = '\0';
  if (stats)
    *stats = (gl_emu_stats){0, 0};
  if (!dev || !fn || !cfg)
    return invalid(err, errlen, "no device, function or configuration");
  const gl_emu_module *mod = fn->mod;
  const gl_ptx_module *pm = mod->pm;
  const gl_ptx_func *f = &pm->funcs[fn->index];
  if (!f->is_entry)
    return invalid(err, errlen, "%.64s is not a kernel", f->name);
  gpulease_status st = check_cfg(f, cfg, err, errlen);
  if (st != GPULEASE_OK)
    return st;
  uint32_t cluster[3];
  int explicit_cluster;
  st = check_cluster(f, cfg, cluster, &explicit_cluster, err, errlen);
  if (st != GPULEASE_OK)
    return st;
  uint64_t nblocks = (uint64_t)cfg->grid[0] * cfg->grid[1] * cfg->grid[2];
  if (cfg->cooperative) {
    uint32_t nt = cfg->block[0] * cfg->block[1] * cfg->block[2];
    uint64_t per_sm = gl_emu_occupancy(fn, nt, cfg->shared_bytes);
    uint64_t sms = cfg->sm_count ? cfg->sm_count : 1;
    if (nblocks > per_sm * sms) {
      if (err && errlen)
        snprintf(err, errlen, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: a cooperative grid of "
                 "%llu blocks of kernel %.64s cannot be co-resident: at most %llu blocks "
                 "(%llu per SM x %llu SMs)", (unsigned long long)nblocks, f->name,
                 (unsigned long long)(per_sm * sms), (unsigned long long)per_sm,
                 (unsigned long long)sms);
      return GPULEASE_INVALID_ARGUMENT;
    }
  }
  if (f->nparams && !cfg->args)
    return invalid(err, errlen, "kernel %.64s takes %u parameters and none were given",
                   f->name, f->nparams);

  gl_emu_launch_state *L = calloc(1, sizeof *L);
  if (!L) {
    snprintf(err, errlen, "out of host memory");
    return GPULEASE_NO_MEMORY;
  }
  L->mod = mod;
  L->fn = fn;
  L->code = fn->code;
  L->func_pc = fn->func_pc;
  L->calls = pm->calls;
  L->funcs = pm->funcs;
  L->nregs = fn->nregs;
  L->max_depth = mod->max_depth;
  memcpy(L->grid, cfg->grid, sizeof L->grid);
  memcpy(L->block, cfg->block, sizeof L->block);
  L->nthreads = cfg->block[0] * cfg->block[1] * cfg->block[2];
  L->nwarps = (L->nthreads + GL_EMU_WARP - 1) / GL_EMU_WARP;
  L->nblocks = nblocks;
  memcpy(L->cluster, cluster, sizeof L->cluster);
  L->cluster_size = cluster[0] * cluster[1] * cluster[2];
  L->explicit_cluster = explicit_cluster;
  L->cooperative = cfg->cooperative != 0;
  L->grouped = L->cooperative || L->cluster_size > 1;
  /* a cooperative grid that fits in host memory (checked below) has far
   * fewer than 2^32 blocks */
  L->group_blocks = L->cooperative ? (uint32_t)nblocks : L->cluster_size;
  L->ngroups = nblocks / L->group_blocks;
  /* Addresses are module-wide: the block gets every kernel's static
   * variables, then the dynamic part. The limits (check_cfg) and
   * %total_smem_size count only this kernel's. Both sums fit: the module's
   * static layout is at most GL_PTX_MAX_SHARED_BYTES (1 GiB), the dynamic
   * part at most GL_EMU_MAX_SHARED_BYTES. */
  L->dyn_shared = cfg->shared_bytes;
  L->shared_alloc = GL_PTX_DYN_SHARED_OFFSET(pm) + cfg->shared_bytes;
  L->total_smem = ((f->static_shared_bytes + 15u) & ~15u) + cfg->shared_bytes;
  L->local_bytes = f->local_bytes;
  L->deadline_ns = cfg->deadline_ns;
  L->host_threads = cfg->threads > 1 && !L->cooperative ? cfg->threads : 1;
  if (L->host_threads > MAX_HOST_THREADS)
    L->host_threads = MAX_HOST_THREADS;
  if ((uint64_t)L->host_threads > L->ngroups)
    L->host_threads = (unsigned)L->ngroups;
  L->param_bytes = f->param_bytes;
  L->params = calloc(f->param_bytes ? f->param_bytes : 1, 1);
  L->segs = gl_emu__device_segments(dev, &L->nsegs);
  uint64_t per_block = (uint64_t)L->nwarps * L->nregs * GL_EMU_WARP * 8 +
                       (uint64_t)L->nwarps * GL_EMU_WARP * L->local_bytes;
  worker *ws = NULL;
  gl_emu_block **blocks = NULL;
  uint8_t *workspace = NULL;
  size_t nblk = 0; /* entries of blocks[] */
  if (!L->params || !L->segs || per_block > MAX_BLOCK_STATE) {
    st = GPULEASE_NO_MEMORY;
    snprintf(err, errlen, "out of host memory for the launch (%llu bytes of registers and "
             "local memory a block)", (unsigned long long)per_block);
    goto done;
  }
  uint64_t coresident = L->cooperative ? nblocks : L->cluster_size;
  if (L->grouped &&
      (per_block + L->shared_alloc + sizeof(gl_emu_block)) * coresident > MAX_GROUP_STATE) {
    st = GPULEASE_NO_MEMORY;
    snprintf(err, errlen, "out of host memory for the launch: %llu co-resident blocks of %llu "
             "bytes of registers, shared and local memory", (unsigned long long)coresident,
             (unsigned long long)(per_block + L->shared_alloc));
    goto done;
  }
  if (L->cooperative) {
    /* the grid-sync workspace: one more global segment, outside the region */
    gl_emu_seg *segs = realloc(L->segs, (L->nsegs + 1) * sizeof *segs);
    workspace = calloc(1, GL_EMU_GRID_WORKSPACE_BYTES);
    if (segs)
      L->segs = segs;
    if (!segs || !workspace) {
      st = GPULEASE_NO_MEMORY;
      snprintf(err, errlen, "out of host memory");
      goto done;
    }
    L->segs[L->nsegs++] =
        (gl_emu_seg){GL_EMU_GRID_WORKSPACE_BASE, GL_EMU_GRID_WORKSPACE_BYTES, workspace};
    L->workspace_addr = GL_EMU_GRID_WORKSPACE_BASE;
  }
  for (uint32_t i = 0; i < f->nparams; i++) {
    const gl_ptx_param *p = &f->params[i];
    if (!cfg->args[i]) {
      st = invalid(err, errlen, "kernel parameter %u is NULL", i);
      goto done;
    }
    if (p->offset > f->param_bytes || p->size > f->param_bytes - p->offset) {
      snprintf(err, errlen, "kernel parameter %u lies outside the parameter buffer", i);
      st = GPULEASE_INTERNAL;
      goto done;
    }
    memcpy(L->params + p->offset, cfg->args[i], p->size);
  }

  /* host thread i owns blocks[i * per_host ...]: one block, or a group */
  size_t per_host = L->grouped ? L->group_blocks : 1;
  nblk = (size_t)L->host_threads * per_host;
  blocks = calloc(nblk, sizeof *blocks);
  ws = calloc(L->host_threads, sizeof *ws);
  if (!blocks || !ws) {
    st = GPULEASE_NO_MEMORY;
    snprintf(err, errlen, "out of host memory");
    goto done;
  }
  for (size_t i = 0; i < nblk; i++) {
    blocks[i] = block_new(L, (unsigned)(i / per_host));
    if (!blocks[i]) {
      st = GPULEASE_NO_MEMORY;
      snprintf(err, errlen, "out of host memory for a block's registers, shared and local "
               "memory");
      goto done;
    }
  }
  for (unsigned i = 0; i < L->host_threads; i++)
    ws[i].b = blocks + (size_t)i * per_host;
  for (unsigned i = 1; i < L->host_threads; i++)
    ws[i].started = pthread_create(&ws[i].tid, NULL, worker_main, &ws[i]) == 0;
  worker_main(&ws[0]);
  for (unsigned i = 1; i < L->host_threads; i++)
    if (ws[i].started)
      pthread_join(ws[i].tid, NULL);
  for (size_t i = 0; i < nblk; i++)
    add_stats(L, blocks[i]);
  /* a thread that could not start leaves its share to the others; only if
   * none ran at all would blocks be left, which cannot happen (the caller
   * runs too) */
  if (atomic_load(&L->failed)) {
    st = L->status;
    snprintf(err, errlen, "%s", L->err);
  }
  if (stats) {
    stats->thread_insns = atomic_load(&L->thread_insns);
    stats->warp_insns = atomic_load(&L->warp_insns);
  }

done:
  if (blocks)
    for (size_t i = 0; i < nblk; i++)
      block_free(blocks[i]);
  free(blocks);
  free(ws);
  free(workspace);
  free(L->params);
  free(L->segs);
  free(L);
  return st;
}
