/*
 * exec_internal.h - what the executor's files share: the device and module
 * objects behind emu.h's handles, the per-launch and per-block state, and
 * the entry points that launch.c, exec.c, exec_mem.c and exec_warp.c call
 * in each other. Internal names use the prefix gl_emu__; nothing here is a
 * public API.
 *
 * Layout of a running block (one host thread runs one block at a time):
 *   registers  warp w, register r, lane l at
 *              regs[((w * nregs) + r) * 32 + l]: one row of 32 lanes per
 *              register, so an ALU instruction is a loop over 32 slots
 *   shared     shared_alloc bytes, zeroed when the block starts
 *   local      local_bytes per thread, zeroed when the block starts; a
 *              .func's parameters (FPARAM) live there too
 *
 * Cooperative and cluster launches run a group of blocks interleaved on one
 * host thread (gl_emu__group_run): every block of the group has its state,
 * and a block reaches its cluster peers' shared memory through peers[].
 *
 * Lockstep: a warp keeps its "group", the runnable lanes at the lowest PC,
 * with that PC held once for all of them (w->pc). The other runnable lanes
 * ("others") keep their own PC in lane_pc[] and are all above w->pc;
 * others_min caches the lowest. Sequential execution only increments w->pc
 * and merges the others that sit at the new PC. A divergent branch, call or
 * return writes the group's PCs back to lane_pc[] and clears the group;
 * the next step picks a new one (warp_reselect in exec.c).
 */
#ifndef GL_EMU_EXEC_INTERNAL_H
#define GL_EMU_EXEC_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/alu.h"
#include "emu/emu.h"
#include "emu/ptx_ir.h"

#define GL_EMU_NBARRIERS 16
#define GL_EMU_CLUSTER_BAR GL_EMU_NBARRIERS /* bar_id of lanes at barrier.cluster.wait */
#define GL_EMU_MBAR_WAIT (GL_EMU_NBARRIERS + 1) /* bar_id of lanes in an mbarrier wait */
#define GL_EMU_GROUP_WARP_SLICE 1024u /* a warp's turn when blocks are interleaved */
/* Warp instructions a group of co-resident blocks may issue without a
 * store, atomic, barrier completion or exit before the launch fails as
 * spinning forever. A variable so tests can lower it. */
extern uint64_t gl_emu__no_progress_limit;
#define GL_EMU_NO_PROGRESS_DEFAULT (1ull << 30)
#define GL_EMU_SEG_ALIGN 0x10000ull /* modules' data segments: 64 KiB apart */

/* ---- Device and modules (device.c) -------------------------------------- */

/* A kernel as the interpreter runs it: its own copy of its code and of
 * every .func it can reach, each function's instructions in a row with one
 * implicit `ret` after its last one (so falling off the end, or branching
 * to a label at the closing brace, returns), labels renumbered, and the
 * registers it uses renumbered densely from 1 (0 stays the carry flag):
 * PTX numbers registers module-wide, and a warp's register file only needs
 * this kernel's. */
struct gl_emu_function {
  const gl_emu_module *mod;
  uint32_t index;      /* in mod->pm->funcs */
  gl_ptx_insn *code;   /* entries only; NULL for a .func */
  uint32_t ncode;
  uint32_t *func_pc;   /* per module function: first instruction in code,
                          UINT32_MAX when the kernel cannot reach it */
  uint32_t nregs;      /* register rows a warp needs */
};

struct gl_emu_module {
  gl_emu_device *dev;
  gl_emu_module *next; /* the device's list, sorted by data_base */
  gl_ptx_module *pm;
  gl_emu_function *fns; /* per function; only entries are handed out */
  uint32_t max_depth;   /* call stack slots a lane needs */
  uint64_t data_base;   /* device address of pm->data */
  uint64_t data_span;   /* address space reserved for it (>= data_bytes) */
};

struct gl_emu_device {
  uint8_t *region;
  uint64_t region_bytes;
  gl_emu_module *modules;
  struct gl_emu_kout *kout; /* kernel output not yet taken (kprintf.c) */
};

/* ---- A launch ----------------------------------------------------------- */

/* A piece of global memory: [base, base+size) at host address host. */
typedef struct gl_emu_seg {
  uint64_t base, size;
  uint8_t *host;
} gl_emu_seg;

typedef struct gl_emu_launch_state {
  const gl_emu_module *mod;
  const gl_emu_function *fn;
  const gl_ptx_insn *code;  /* fn->code */
  const uint32_t *func_pc;  /* fn->func_pc */
  const gl_ptx_call *calls;
  const gl_ptx_func *funcs;
  uint32_t nregs;
  uint32_t max_depth;
  uint32_t grid[3], block[3];
  uint32_t nthreads, nwarps;
  uint64_t nblocks;
  uint8_t *params;
  uint32_t param_bytes;
  uint32_t shared_alloc;  /* bytes of shared memory a block gets: the
                             module's static layout + dynamic */
  uint32_t dyn_shared;    /* the dynamic part */
  uint32_t total_smem;    /* %total_smem_size: the kernel's own static
                             bytes (16-aligned) + dynamic */
  uint32_t local_bytes;   /* per thread */
  gl_emu_seg *segs;       /* [0] the region, then modules' data */
  size_t nsegs;
  uint64_t deadline_ns;
  unsigned host_threads;
  /* clusters and co-resident groups */
  uint32_t cluster[3];    /* cluster dimensions; 1,1,1 without clusters */
  uint32_t cluster_size;  /* blocks a cluster */
  int explicit_cluster;   /* %is_explicit_cluster */
  int cooperative;        /* a cooperative launch */
  int grouped;            /* blocks run interleaved in groups (gl_emu__group_run) */
  uint32_t group_blocks;  /* blocks a group: the grid (cooperative) or a cluster */
  uint64_t ngroups;
  uint64_t workspace_addr; /* %envreg1/2: the grid-sync workspace, 0 = none */
  _Atomic uint64_t next_block; /* the next block, or group when grouped */
  atomic_int failed;      /* set once by the first error */
  gpulease_status status; /* written by the thread that set failed */
  char err[512];
  _Atomic uint64_t thread_insns, warp_insns;
} gl_emu_launch_state;

typedef struct gl_emu_warp {
  uint32_t pc;         /* the group's PC */
  uint32_t group;      /* runnable lanes at pc: the ones that execute */
  uint32_t others;     /* runnable lanes elsewhere (lane_pc, > pc) */
  uint32_t others_min; /* min lane_pc over others */
  uint32_t live;       /* lanes that exist and have not exited */
  uint32_t parked;     /* lanes waiting at a barrier */
  uint32_t index;      /* warp number in the block */
  uint32_t suspended;  /* lanes set aside while another PC runs alone */
  uint32_t starve;     /* instructions issued while diverged (see exec.c) */
  uint32_t forced_left; /* instructions left for the lanes run alone */
  uint32_t lane_pc[GL_EMU_WARP];
  uint8_t bar_id[GL_EMU_WARP]; /* GL_EMU_CLUSTER_BAR: barrier.cluster.wait */
  uint8_t depth[GL_EMU_WARP];
  uint32_t *stack;     /* [lane * max_depth + d]: pc of the call insn */
  uint64_t *regs;      /* nregs rows of 32 */
  uint8_t *local;      /* 32 * local_bytes */
  uint32_t cl_pending; /* lanes that did barrier.cluster.arrive, not yet .wait */
  uint32_t cl_phase[GL_EMU_WARP]; /* the cluster barrier phase each arrived in */
} gl_emu_warp;

typedef struct gl_emu_barrier {
  uint32_t arrived;  /* threads so far */
  uint32_t expected; /* 0: every non-exited thread of the block */
  uint32_t red_popc; /* bar.red accumulators */
  uint32_t red_and, red_or;
} gl_emu_barrier;

typedef struct gl_emu_block {
  gl_emu_launch_state *L;
  unsigned host_index;  /* %smid */
  uint32_t ctaid[3];
  /* the cluster's blocks by rank (grouped launches); NULL: a cluster of
   * this block alone */
  struct gl_emu_block *const *peers;
  uint32_t cl_rank;      /* %cluster_ctarank */
  uint32_t cl_arrived;   /* rank 0 keeps the cluster barrier: threads arrived */
  uint32_t cl_phase;     /* and completed phases */
  uint64_t events;       /* stores, atomics, barrier completions, exits */
  uint64_t mbar_stall_mark; /* events + 1 when mbarrier waits last timed out */
  uint32_t mbar_stalls;  /* time-outs in a row with mbar_stall_mark unchanged */
  int done;              /* grouped: every thread exited */
  uint64_t *regs;
  uint8_t *shared;
  uint8_t *local;
  uint32_t *stacks;
  gl_emu_warp *warps;
  uint32_t live_threads; /* non-exited threads of the block */
  gl_emu_barrier bars[GL_EMU_NBARRIERS];
  uint64_t clock;        /* warp instructions issued by this block */
  uint64_t thread_insns, warp_insns; /* this host thread's totals */
  uint64_t since_check;  /* warp instructions since the last deadline check */
  int failed;            /* this block hit an error (L->err written) */
  /* scratch rows for immediates, special registers, negated predicates,
   * '_' destinations */
  uint64_t scratch[6][GL_EMU_WARP];
  uint64_t sink[2][GL_EMU_WARP];
} gl_emu_block;

/* ---- device.c ----------------------------------------------------------- */

/* Copies the global segments (region, then each module's data) for a
 * launch. Returns a malloc'd array (count in *n) or NULL. */
gl_emu_seg *gl_emu__device_segments(gl_emu_device *dev, size_t *n);

/* ---- launch.c ----------------------------------------------------------- */

/* Records the launch's first error (later ones are dropped) and marks the
 * block failed. Always returns -1 so callers can `return gl_emu__fail(...)`. */
int gl_emu__fail(gl_emu_block *b, gpulease_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- exec.c ------------------------------------------------------------- */

/* Runs one block (b->ctaid set, memory allocated) to completion. 0, or -1
 * after gl_emu__fail (or when another host thread failed the launch). */
int gl_emu__block_run(gl_emu_block *b);

/* Runs n blocks (ctaid, peers, cl_rank set, memory zeroed) interleaved to
 * completion: each takes turns of GL_EMU_GROUP_WARP_SLICE warp
 * instructions a warp. 0, or -1 after gl_emu__fail. */
int gl_emu__group_run(gl_emu_block *const *blocks, uint32_t n);

/* The row of register r of warp w. */
static inline uint64_t *gl_emu__row(const gl_emu_block *b, const gl_emu_warp *w, uint32_t r) {
  (void)b;
  return w->regs + (size_t)r * GL_EMU_WARP;
}

/* Reads source operand o into a row (a register's row, or scratch row k
 * filled with an immediate / special register / negated predicate). */
const uint64_t *gl_emu__src_row(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_operand *o,
                                unsigned k);

/* Thread coordinates of lane l of warp w, for messages. */
void gl_emu__thread_of(const gl_emu_block *b, const gl_emu_warp *w, unsigned lane,
                       uint32_t tid[3]);

/* ---- exec_mem.c --------------------------------------------------------- */

int gl_emu__exec_ld(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m);
int gl_emu__exec_st(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m);
int gl_emu__exec_atom(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m);
int gl_emu__exec_cvta(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m);
int gl_emu__exec_mapa(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m);
/* Host pointer for `size` bytes at `addr` in `space` (gl_ptx_space) for
 * lane `lane`, checked as ld/st check it (bounds, alignment to size, a
 * store to read-only memory when write); NULL after gl_emu__fail. */
uint8_t *gl_emu__mem_ptr(gl_emu_block *b, gl_emu_warp *w, unsigned lane,
                         const gl_ptx_insn *in, unsigned space, uint64_t addr, uint64_t size,
                         int write);
/* Host pointer for `size` bytes at local offset off of lane l, or NULL
 * after gl_emu__fail (line for the message). */
uint8_t *gl_emu__local_ptr(gl_emu_block *b, gl_emu_warp *w, unsigned lane, uint64_t off,
                           uint64_t size, uint32_t line);

/* One atomic read-modify-write of in->mode (gl_ptx_atom_op, not CAS) on
 * in->type at host memory p (sz bytes: 2, 4 or 8, aligned) with operand
 * bv; returns the old value. *ok = 0 (nothing written) for an operation
 * the type does not have. */
uint64_t gl_emu__atom_rmw(const gl_ptx_insn *in, uint8_t *p, unsigned sz, uint64_t bv,
                          int *ok);

/* ---- exec_async.c, exec_mbar.c, exec_redux.c ---------------------------- */

/* cp.async.ca/.cg for lanes m: copies (and zero-fills) at once. */
int gl_emu__exec_cpasync(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m);
/* cp.async.bulk for lanes m: copies at once and completes the bytes on
 * the mbarrier. The caller has flushed the group to the next instruction
 * (a completed phase wakes waiting lanes, as a barrier does). */
int gl_emu__exec_cpbulk(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m);
/* cp.reduce.async.bulk{.tensor} for lanes m: each element of the source
 * combined into the destination atomically (the caller has flushed the
 * group). */
int gl_emu__exec_cpreduce(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m);
/* st.async / red.async for lanes m: the store or reduction into cluster
 * shared memory, then its bytes completed on the mbarrier (the caller has
 * flushed the group). */
int gl_emu__exec_stasync(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m);
/* cp.async.bulk.tensor (.tile) for lanes m, as cp.async.bulk (the caller
 * has flushed the group). */
int gl_emu__exec_cptensor(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in,
                          uint32_t m);
/* mbarrier.* and cp.async.mbarrier.arrive for lanes m. The caller has
 * flushed the group to the next instruction; lanes whose wait is not
 * complete park (bar_id GL_EMU_MBAR_WAIT) with lane_pc[] back at this
 * instruction, to run it again once a phase completes. */
int gl_emu__exec_mbarrier(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m);
/* Subtracts `bytes` from the tx-count of the mbarrier at addr (space:
 * SHARED, SHARED_CLUSTER or GENERIC) for lane `lane`, completing its phase
 * when that ends it. 0, or -1 after gl_emu__fail. */
int gl_emu__mbar_complete_tx(gl_emu_block *b, gl_emu_warp *w, unsigned lane,
                             const gl_ptx_insn *in, unsigned space, uint64_t addr,
                             uint64_t bytes);
/* No warp of blocks[0..n) can run. Returns 0 when no lane waits on an
 * mbarrier (the caller reports its deadlock); 1 after ending every such
 * wait as timed out (the wait's predicate false, the lane at the next
 * instruction), as a try_wait's time limit would; -1 after failing the
 * launch when 1024 time-outs in a row saw nothing happen in between, so
 * that the waits can never complete. */
int gl_emu__mbar_stalled(gl_emu_block *const *blocks, uint32_t n);
/* redux.sync / elect.sync for lanes m: the participants are the executing
 * lanes in each lane's membermask (all executing lanes when it names
 * none). Always 0. */
int gl_emu__exec_redux(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m);
int gl_emu__exec_elect(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m);

/* ---- kprintf.c ---------------------------------------------------------- */

/* The device's kernel output buffer: a new empty one (limit
 * GL_EMU_KOUT_DEFAULT_LIMIT), or NULL when out of memory; freed by
 * gl_emu__kout_free (NULL is fine). */
struct gl_emu_kout *gl_emu__kout_new(void);
void gl_emu__kout_free(struct gl_emu_kout *k);

/* Runs builtin `kind` (GL_PTX_BUILTIN_*) of call site c for the lanes m, in
 * lane order: vprintf appends each lane's text to the device's output and
 * writes its return value; __assertfail fails the launch with
 * CUDA_ERROR_ASSERT and CUDA's assertion text. 0, or -1 after
 * gl_emu__fail. The caller moves the warp on. */
int gl_emu__builtin_call(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in,
                         const gl_ptx_call *c, int kind, uint32_t m);

/* ---- exec_warp.c -------------------------------------------------------- */

int gl_emu__exec_shfl(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m);
int gl_emu__exec_vote(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m);
int gl_emu__exec_match(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m);
/* bar.*: parks or counts the lanes m; releases the barrier when complete.
 * The caller has already flushed the group (w->group == 0 afterwards is
 * the caller's job). */
int gl_emu__exec_bar(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m);
/* After threads exited: completes barriers waiting for "all threads". */
void gl_emu__bar_recheck(gl_emu_block *b);
/* barrier.cluster.arrive / .wait for lanes m (the caller has flushed the
 * group to the next instruction, as for bar). */
int gl_emu__exec_barcluster(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in,
                            uint32_t m);

/* ---- exec_mma.c, exec_wgmma.c ------------------------------------------ */

/* mma, wgmma.mma_async, ldmatrix, stmatrix, movmatrix (mma.h) for the
 * lanes m, which must be the warp's 32 lanes. 0, or -1 after gl_emu__fail. */
int gl_emu__exec_matrix(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m);

/* Writes the group's PC back to lane_pc[] and clears the group. */
static inline void gl_emu__warp_flush(gl_emu_warp *w) {
  uint32_t g = w->group;
  while (g) {
    unsigned l = (unsigned)__builtin_ctz(g);
    g &= g - 1;
    w->lane_pc[l] = w->pc;
  }
  w->group = 0;
}

#endif /* GL_EMU_EXEC_INTERNAL_H */
