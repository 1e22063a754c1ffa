/*
 * launch.c - gl_emu_launch: checks a launch against a real GPU's limits,
 * builds the parameter buffer, and runs the grid's blocks, on the calling
 * thread or on a pool of host threads that take block numbers from one
 * atomic counter. The first error stops every thread: it is recorded once
 * (gl_emu__fail) and the others see `failed` at their next check.
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

/* Runs block number idx (linear, x fastest) with fresh state. */
static int run_block(gl_emu_block *b, uint64_t idx) {
  const gl_emu_launch_state *L = b->L;
  b->ctaid[0] = (uint32_t)(idx % L->grid[0]);
  b->ctaid[1] = (uint32_t)((idx / L->grid[0]) % L->grid[1]);
  b->ctaid[2] = (uint32_t)(idx / ((uint64_t)L->grid[0] * L->grid[1]));
  memset(b->regs, 0, (size_t)L->nwarps * L->nregs * GL_EMU_WARP * sizeof(uint64_t));
  memset(b->shared, 0, L->shared_alloc);
  memset(b->local, 0, (size_t)L->nwarps * GL_EMU_WARP * L->local_bytes);
  b->clock = 0;
  return gl_emu__block_run(b);
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
  gl_emu_block *b;
  int started;
} worker;

static void *worker_main(void *arg) {
  run_blocks(arg);
  return NULL;
}

static void add_stats(gl_emu_launch_state *L, const gl_emu_block *b) {
  atomic_fetch_add(&L->thread_insns, b->thread_insns);
  atomic_fetch_add(&L->warp_insns, b->warp_insns);
}

/* ---- Checks ------------------------------------------------------------- */

static gpulease_status invalid(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static gpulease_status invalid(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    int n = snprintf(err, errlen, "CUDA_ERROR_INVALID_VALUE: ");
    if (n > 0 && (size_t)n < errlen) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
      va_end(ap);
    }
  }
  return GPULEASE_INVALID_ARGUMENT;
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
  L->nblocks = (uint64_t)cfg->grid[0] * cfg->grid[1] * cfg->grid[2];
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
  L->host_threads = cfg->threads > 1 ? cfg->threads : 1;
  if (L->host_threads > MAX_HOST_THREADS)
    L->host_threads = MAX_HOST_THREADS;
  if ((uint64_t)L->host_threads > L->nblocks)
    L->host_threads = (unsigned)L->nblocks;
  L->param_bytes = f->param_bytes;
  L->params = calloc(f->param_bytes ? f->param_bytes : 1, 1);
  L->segs = gl_emu__device_segments(dev, &L->nsegs);
  uint64_t per_block = (uint64_t)L->nwarps * L->nregs * GL_EMU_WARP * 8 +
                       (uint64_t)L->nwarps * GL_EMU_WARP * L->local_bytes;
  worker *ws = NULL;
  gl_emu_block **blocks = NULL;
  if (!L->params || !L->segs || per_block > MAX_BLOCK_STATE) {
    st = GPULEASE_NO_MEMORY;
    snprintf(err, errlen, "out of host memory for the launch (%llu bytes of registers and "
             "local memory a block)", (unsigned long long)per_block);
    goto done;
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

  blocks = calloc(L->host_threads, sizeof *blocks);
  ws = calloc(L->host_threads, sizeof *ws);
  if (!blocks || !ws) {
    st = GPULEASE_NO_MEMORY;
    snprintf(err, errlen, "out of host memory");
    goto done;
  }
  for (unsigned i = 0; i < L->host_threads; i++) {
    blocks[i] = block_new(L, i);
    if (!blocks[i]) {
      st = GPULEASE_NO_MEMORY;
      snprintf(err, errlen, "out of host memory for a block's registers, shared and local "
               "memory");
      goto done;
    }
  }
  for (unsigned i = 1; i < L->host_threads; i++) {
    ws[i].b = blocks[i];
    ws[i].started = pthread_create(&ws[i].tid, NULL, worker_main, blocks[i]) == 0;
  }
  run_blocks(blocks[0]);
  for (unsigned i = 1; i < L->host_threads; i++)
    if (ws[i].started)
      pthread_join(ws[i].tid, NULL);
  for (unsigned i = 0; i < L->host_threads; i++)
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
    for (unsigned i = 0; i < L->host_threads; i++)
      block_free(blocks[i]);
  free(blocks);
  free(ws);
  free(L->params);
  free(L->segs);
  free(L);
  return st;
}
