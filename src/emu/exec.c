/*
 * exec.c - the interpreter: warps in lockstep, control flow, calls, and the
 * round-robin scheduler that runs one block's warps.
 *
 * A warp executes the instruction at the lowest PC among its runnable lanes
 * (not exited, not parked at a barrier), for every runnable lane at that PC
 * (the "group", exec_internal.h). Guards mask the group; lanes whose guard
 * is false just move on. Branches split the group when only some lanes
 * take them; the lanes meet again when the lower one catches up with the
 * higher one's PC, which for compiler-structured code is the join point.
 *
 * One escape from strict lockstep: lanes spinning on a lock that a lane of
 * their own warp holds (at a higher PC) would spin forever under "lowest
 * PC first". When a warp has issued STARVE_LIMIT instructions in a row
 * while diverged, the lanes at the next-lowest PC run alone (the others
 * suspended) for up to FORCED_SLICE instructions, until they park, exit,
 * or reach a warp-synchronous instruction (shfl, vote, match,
 * activemask), where they wait for the rest as lockstep would have it.
 * Race-free code computes the same results either way.
 *
 * The scheduler runs the warps of a block round-robin, each until none of
 * its lanes can run (all parked or exited) or its time slice ends; a round
 * in which no warp can run while some thread is still alive is a barrier
 * that can never complete, and fails the launch.
 *
 * Co-resident blocks (cooperative grids, clusters) run as a group: the
 * blocks take turns in slot order, each one round of its warps with a
 * short slice (GL_EMU_GROUP_WARP_SLICE; nanosleep ends a warp's slice), so
 * a block spinning on a grid barrier lets the others reach it. A pass in
 * which no block issues anything is a barrier deadlock; a group that keeps
 * issuing without any store, atomic, barrier completion or exit for
 * gl_emu__no_progress_limit warp instructions is spinning forever, and
 * fails too.
 */
#include <string.h>

#include "common/util.h"
#include "emu/exec_internal.h"
#include "emu/mma.h"

#define WARP_SLICE 20000u     /* warp instructions before the next warp runs */
#define CHECK_EVERY 8192u     /* warp instructions between deadline checks */
#define STARVE_LIMIT 65536u   /* diverged instructions before others run alone */
#define FORCED_SLICE 16384u   /* how long they may */

/* ---- Operands ----------------------------------------------------------- */

void gl_emu__thread_of(const gl_emu_block *b, const gl_emu_warp *w, unsigned lane,
                       uint32_t tid[3]) {
  const gl_emu_launch_state *L = b->L;
  uint32_t t = w->index * GL_EMU_WARP + lane;
  tid[0] = t % L->block[0];
  tid[1] = (t / L->block[0]) % L->block[1];
  tid[2] = t / (L->block[0] * L->block[1]);
}

static uint64_t sreg_value(const gl_emu_block *b, const gl_emu_warp *w, unsigned sreg,
                           unsigned lane, uint64_t now_ns) {
  const gl_emu_launch_state *L = b->L;
  uint32_t tid[3];
  switch (sreg) {
  case GL_PTX_SR_TID_X:
  case GL_PTX_SR_TID_Y:
  case GL_PTX_SR_TID_Z:
    gl_emu__thread_of(b, w, lane, tid);
    return tid[sreg - GL_PTX_SR_TID_X];
  case GL_PTX_SR_NTID_X:
  case GL_PTX_SR_NTID_Y:
  case GL_PTX_SR_NTID_Z:
    return L->block[sreg - GL_PTX_SR_NTID_X];
  case GL_PTX_SR_CTAID_X:
  case GL_PTX_SR_CTAID_Y:
  case GL_PTX_SR_CTAID_Z:
    return b->ctaid[sreg - GL_PTX_SR_CTAID_X];
  case GL_PTX_SR_NCTAID_X:
  case GL_PTX_SR_NCTAID_Y:
  case GL_PTX_SR_NCTAID_Z:
    return L->grid[sreg - GL_PTX_SR_NCTAID_X];
  case GL_PTX_SR_LANEID:
    return lane;
  case GL_PTX_SR_WARPID:
    return w->index;
  case GL_PTX_SR_NWARPID:
    return L->nwarps;
  case GL_PTX_SR_SMID:
    return b->host_index;
  case GL_PTX_SR_NSMID:
    return L->host_threads;
  case GL_PTX_SR_GRIDID:
    return 1;
  case GL_PTX_SR_CLOCK:
    return (uint32_t)b->clock;
  case GL_PTX_SR_CLOCK64:
    return b->clock;
  case GL_PTX_SR_CLOCK_HI:
    return (uint32_t)(b->clock >> 32);
  case GL_PTX_SR_GLOBALTIMER:
    return now_ns;
  case GL_PTX_SR_GLOBALTIMER_LO:
    return (uint32_t)now_ns;
  case GL_PTX_SR_GLOBALTIMER_HI:
    return (uint32_t)(now_ns >> 32);
  case GL_PTX_SR_LANEMASK_EQ:
    return (uint32_t)(1u << lane);
  case GL_PTX_SR_LANEMASK_LE:
    return (uint32_t)((2ull << lane) - 1);
  case GL_PTX_SR_LANEMASK_LT:
    return (uint32_t)((1ull << lane) - 1);
  case GL_PTX_SR_LANEMASK_GE:
    return (uint32_t)~((1ull << lane) - 1);
  case GL_PTX_SR_LANEMASK_GT:
    return (uint32_t)~((2ull << lane) - 1);
  case GL_PTX_SR_DYNAMIC_SMEM_SIZE:
    return L->dyn_shared;
  case GL_PTX_SR_TOTAL_SMEM_SIZE:
    return L->total_smem;
  case GL_PTX_SR_ENVREG1: /* the driver's ABI: %envreg1 high, %envreg2 low */
    return (uint32_t)(L->workspace_addr >> 32);
  case GL_PTX_SR_ENVREG2:
    return (uint32_t)L->workspace_addr;
  case GL_PTX_SR_CLUSTER_CTARANK:
    return b->cl_rank;
  case GL_PTX_SR_CLUSTER_NCTARANK:
    return L->cluster_size;
  case GL_PTX_SR_CLUSTER_CTAID_X:
  case GL_PTX_SR_CLUSTER_CTAID_Y:
  case GL_PTX_SR_CLUSTER_CTAID_Z: {
    unsigned i = sreg - GL_PTX_SR_CLUSTER_CTAID_X;
    return b->ctaid[i] % L->cluster[i];
  }
  case GL_PTX_SR_CLUSTER_NCTAID_X:
  case GL_PTX_SR_CLUSTER_NCTAID_Y:
  case GL_PTX_SR_CLUSTER_NCTAID_Z:
    return L->cluster[sreg - GL_PTX_SR_CLUSTER_NCTAID_X];
  case GL_PTX_SR_CLUSTERID_X:
  case GL_PTX_SR_CLUSTERID_Y:
  case GL_PTX_SR_CLUSTERID_Z: {
    unsigned i = sreg - GL_PTX_SR_CLUSTERID_X;
    return b->ctaid[i] / L->cluster[i];
  }
  case GL_PTX_SR_NCLUSTERID_X:
  case GL_PTX_SR_NCLUSTERID_Y:
  case GL_PTX_SR_NCLUSTERID_Z: {
    unsigned i = sreg - GL_PTX_SR_NCLUSTERID_X;
    return L->grid[i] / L->cluster[i];
  }
  case GL_PTX_SR_IS_EXPLICIT_CLUSTER:
    return L->explicit_cluster != 0;
  default: /* GL_PTX_SR_ENVREG_ZERO */
    return 0;
  }
}

const uint64_t *gl_emu__src_row(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_operand *o,
                                unsigned k) {
  uint64_t *s = b->scratch[k];
  switch (o->kind) {
  case GL_PTX_O_REG:
    if (o->reg == GL_PTX_NOREG)
      break;
    if (o->neg) {
      const uint64_t *r = gl_emu__row(b, w, o->reg);
      for (unsigned l = 0; l < GL_EMU_WARP; l++)
        s[l] = r[l] == 0;
      return s;
    }
    return gl_emu__row(b, w, o->reg);
  case GL_PTX_O_IMM:
  case GL_PTX_O_FRAME:
  case GL_PTX_O_LABEL: {
    uint64_t v = (uint64_t)o->imm;
    for (unsigned l = 0; l < GL_EMU_WARP; l++)
      s[l] = v;
    return s;
  }
  case GL_PTX_O_SREG: {
    uint64_t now = (o->sreg >= GL_PTX_SR_GLOBALTIMER && o->sreg <= GL_PTX_SR_GLOBALTIMER_HI)
                       ? gl_mono_ns()
                       : 0;
    for (unsigned l = 0; l < GL_EMU_WARP; l++)
      s[l] = sreg_value(b, w, o->sreg, l, now);
    return s;
  }
  default:
    break;
  }
  memset(s, 0, sizeof b->scratch[k]);
  return s;
}

static inline const uint64_t *src_row(gl_emu_block *b, gl_emu_warp *w,
                                      const gl_ptx_operand *o, unsigned k) {
  if (o->kind == GL_PTX_O_REG && !o->neg && o->reg != GL_PTX_NOREG)
    return gl_emu__row(b, w, o->reg);
  return gl_emu__src_row(b, w, o, k);
}

static inline uint64_t *dst_row(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_operand *o,
                                unsigned k) {
  if (o->kind == GL_PTX_O_REG && o->reg != GL_PTX_NOREG)
    return gl_emu__row(b, w, o->reg);
  return b->sink[k];
}

/* mov with a vector on either side: pack {a, b, ...} into one register, or
 * unpack one register into {a, b, ...}. Elements are equal slices of the
 * type's width, element 0 lowest. */
static int exec_mov_vec(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m) {
  unsigned bits = gl_ptx_type_size((gl_ptx_type)in->type) * 8;
  const gl_ptx_operand *d = &in->dst[0], *s = &in->src[0];
  const gl_ptx_operand *v = d->kind == GL_PTX_O_VEC ? d : s;
  unsigned n = v->vec_n;
  if (bits == 0 || bits > 64 || n == 0 || bits % n)
    return gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                        "CUDA_ERROR_ILLEGAL_INSTRUCTION: line %u: unsupported vector mov",
                        in->line);
  unsigned eb = bits / n;
  uint64_t emask = eb == 64 ? UINT64_MAX : (1ull << eb) - 1;
  if (d->kind == GL_PTX_O_VEC && s->kind != GL_PTX_O_VEC) {
    const uint64_t *sr = src_row(b, w, s, 0);
    for (uint32_t mm = m; mm; mm &= mm - 1) {
      unsigned l = (unsigned)__builtin_ctz(mm);
      uint64_t x = sr[l];
      for (unsigned i = 0; i < n; i++)
        if (d->vec[i] != GL_PTX_NOREG)
          gl_emu__row(b, w, d->vec[i])[l] = (x >> (i * eb)) & emask;
    }
    return 0;
  }
  if (s->kind == GL_PTX_O_VEC && d->kind == GL_PTX_O_REG) {
    uint64_t *dr = dst_row(b, w, d, 0);
    for (uint32_t mm = m; mm; mm &= mm - 1) {
      unsigned l = (unsigned)__builtin_ctz(mm);
      uint64_t x = 0;
      for (unsigned i = 0; i < n; i++)
        if (s->vec[i] != GL_PTX_NOREG)
          x |= (gl_emu__row(b, w, s->vec[i])[l] & emask) << (i * eb);
      dr[l] = x;
    }
    return 0;
  }
  return gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                      "CUDA_ERROR_ILLEGAL_INSTRUCTION: line %u: unsupported vector mov",
                      in->line);
}

/* ---- Lockstep bookkeeping ----------------------------------------------- */

/* Picks the group: the runnable lanes at the lowest PC. 0 if none. */
static int warp_reselect(gl_emu_warp *w) {
  uint32_t run = w->live & ~w->parked & ~w->suspended;
  if (!run && w->suspended) { /* the lanes run alone are done: back to all */
    w->suspended = 0;
    w->starve = 0;
    run = w->live & ~w->parked;
  }
  if (!run)
    return 0;
  uint32_t minpc = UINT32_MAX;
  for (uint32_t r = run; r; r &= r - 1) {
    unsigned l = (unsigned)__builtin_ctz(r);
    if (w->lane_pc[l] < minpc)
      minpc = w->lane_pc[l];
  }
  uint32_t g = 0, omin = UINT32_MAX;
  for (uint32_t r = run; r; r &= r - 1) {
    unsigned l = (unsigned)__builtin_ctz(r);
    uint32_t p = w->lane_pc[l];
    if (p == minpc)
      g |= 1u << l;
    else if (p < omin)
      omin = p;
  }
  w->pc = minpc;
  w->group = g;
  w->others = run & ~g;
  w->others_min = omin;
  return 1;
}

/* The others that sit at w->pc join the group. */
static void warp_merge(gl_emu_warp *w) {
  uint32_t omin = UINT32_MAX, join = 0;
  for (uint32_t r = w->others; r; r &= r - 1) {
    unsigned l = (unsigned)__builtin_ctz(r);
    uint32_t p = w->lane_pc[l];
    if (p == w->pc)
      join |= 1u << l;
    else if (p < omin)
      omin = p;
  }
  w->group |= join;
  w->others &= ~join;
  w->others_min = omin;
}

/* The whole group moves to target. */
static inline void move_group(gl_emu_warp *w, uint32_t target) {
  if (!w->others || target < w->others_min) {
    w->pc = target;
  } else if (target == w->others_min) {
    w->pc = target;
    warp_merge(w);
  } else {
    w->pc = target;
    gl_emu__warp_flush(w);
  }
}

/* Lanes `gone` of the group have left it (exited or parked, their state
 * already updated); the rest move on to pc + 1. */
static inline void group_leave_rest_next(gl_emu_warp *w, uint32_t gone) {
  w->group &= ~gone;
  if (w->group)
    move_group(w, w->pc + 1);
  else
    w->pc++; /* nothing left here; reselect happens on the next step */
}

/* Ends a forced slice: every lane competes again. */
static void warp_end_forced(gl_emu_warp *w) {
  gl_emu__warp_flush(w);
  w->suspended = 0;
  w->starve = 0;
}

/* The group has starved the others: the lanes at the next-lowest PC run
 * alone for a while. */
static void warp_force_switch(gl_emu_warp *w) {
  uint32_t target = w->others_min;
  gl_emu__warp_flush(w);
  uint32_t run = w->live & ~w->parked, keep = 0;
  for (uint32_t r = run; r; r &= r - 1) {
    unsigned l = (unsigned)__builtin_ctz(r);
    if (w->lane_pc[l] == target)
      keep |= 1u << l;
  }
  w->suspended = run & ~keep;
  w->forced_left = FORCED_SLICE;
  w->starve = 0;
}

static inline int is_warp_sync(unsigned op) {
  return op == GL_PTX_OP_SHFL || op == GL_PTX_OP_VOTE || op == GL_PTX_OP_MATCH ||
         op == GL_PTX_OP_ACTIVEMASK || op == GL_PTX_OP_REDUX || op == GL_PTX_OP_ELECT ||
         gl_mma_is_matrix_op(op);
}

/* ---- Calls -------------------------------------------------------------- */

static int copy_local(gl_emu_block *b, gl_emu_warp *w, unsigned lane, uint64_t to,
                      uint64_t from, uint64_t n, uint32_t line) {
  if (n == 0)
    return 0;
  uint8_t *src = gl_emu__local_ptr(b, w, lane, from, n, line);
  if (!src)
    return -1;
  uint8_t *dst = gl_emu__local_ptr(b, w, lane, to, n, line);
  if (!dst)
    return -1;
  memmove(dst, src, n);
  return 0;
}

static int exec_call(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m) {
  const gl_emu_launch_state *L = b->L;
  const gl_ptx_call *c = &L->calls[in->src[0].imm];
  const gl_ptx_func *callee = &L->funcs[c->func];
  uint32_t target = L->func_pc[c->func];
  uint32_t nargs = c->nargs < callee->nparams ? c->nargs : callee->nparams;
  if (callee->builtin) { /* vprintf, __assertfail: kprintf.c */
    if (gl_emu__builtin_call(b, w, in, c, callee->builtin, m))
      return -1;
    move_group(w, w->pc + 1);
    return 0;
  }
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    if (w->depth[l] >= L->max_depth)
      return gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                          "CUDA_ERROR_HARDWARE_STACK_ERROR: line %u: call stack overflow",
                          in->line);
    for (uint32_t i = 0; i < nargs; i++) {
      uint32_t n = c->arg_size[i] < callee->params[i].size ? c->arg_size[i]
                                                            : callee->params[i].size;
      if (copy_local(b, w, l, callee->params[i].offset, c->arg_off[i], n, in->line))
        return -1;
    }
    w->stack[l * L->max_depth + w->depth[l]++] = w->pc;
  }
  if (m == w->group) {
    move_group(w, target);
  } else {
    for (uint32_t g = w->group; g; g &= g - 1) {
      unsigned l = (unsigned)__builtin_ctz(g);
      w->lane_pc[l] = (m >> l) & 1 ? target : w->pc + 1;
    }
    w->group = 0;
  }
  return 0;
}

/* ---- Exits -------------------------------------------------------------- */

/* Lanes e (in the group) end. */
static void lanes_exit(gl_emu_block *b, gl_emu_warp *w, uint32_t e) {
  if (!e)
    return;
  w->live &= ~e;
  b->live_threads -= (uint32_t)__builtin_popcount(e);
  b->events++;
  group_leave_rest_next(w, e);
  gl_emu__bar_recheck(b);
}

static int exec_ret(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m) {
  const gl_emu_launch_state *L = b->L;
  uint32_t exiting = 0, first_target = UINT32_MAX, same = 1;
  uint32_t targets[GL_EMU_WARP];
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    if (w->depth[l] == 0) {
      exiting |= 1u << l;
      continue;
    }
    uint32_t site = w->stack[l * L->max_depth + --w->depth[l]];
    const gl_ptx_call *c = &L->calls[L->code[site].src[0].imm];
    const gl_ptx_func *callee = &L->funcs[c->func];
    if (c->ret_off >= 0 && callee->ret_off >= 0 &&
        copy_local(b, w, l, (uint32_t)c->ret_off, (uint32_t)callee->ret_off, callee->ret_size,
                   in->line))
      return -1;
    targets[l] = site + 1;
    if (first_target == UINT32_MAX)
      first_target = site + 1;
    else if (first_target != site + 1)
      same = 0;
  }
  if (exiting == 0 && m == w->group && same && first_target != UINT32_MAX) {
    move_group(w, first_target);
    return 0;
  }
  uint32_t ret_lanes = m & ~exiting;
  if (ret_lanes) {
    /* spread the group: returning lanes to their sites, guarded-off lanes on */
    for (uint32_t g = w->group & ~exiting; g; g &= g - 1) {
      unsigned l = (unsigned)__builtin_ctz(g);
      w->lane_pc[l] = (ret_lanes >> l) & 1 ? targets[l] : w->pc + 1;
    }
    w->group = 0;
    if (exiting) {
      w->live &= ~exiting;
      b->live_threads -= (uint32_t)__builtin_popcount(exiting);
      b->events++;
      gl_emu__bar_recheck(b);
    }
    return 0;
  }
  lanes_exit(b, w, exiting);
  return 0;
}

/* ---- The interpreter loop ----------------------------------------------- */

static int fail_illegal(gl_emu_block *b, const gl_ptx_insn *in, const char *what) {
  return gl_emu__fail(b, GPULEASE_LAUNCH_FAILED, "CUDA_ERROR_ILLEGAL_INSTRUCTION: line %u: %s",
                      in->line, what);
}

/* Runs warp w until none of its lanes can run or `budget` instructions were
 * issued. *issued receives the count. 0, or -1 on a launch error. */
static int warp_run(gl_emu_block *b, gl_emu_warp *w, uint32_t budget, uint32_t *issued) {
  const gl_ptx_insn *code = b->L->code;
  uint32_t n = 0;
  uint64_t tins = 0;
  int rc = 0;
  while (n < budget) {
    if (!w->group && !warp_reselect(w))
      break;
    const gl_ptx_insn *in = &code[w->pc];
    if (__builtin_expect(w->suspended != 0, 0)) {
      if (w->forced_left == 0 || is_warp_sync(in->op)) {
        warp_end_forced(w);
        continue;
      }
      w->forced_left--;
    } else if (w->others) {
      if (++w->starve >= STARVE_LIMIT && w->group) {
        warp_force_switch(w);
        continue;
      }
    } else {
      w->starve = 0;
    }
    uint32_t g = w->group, m = g;
    if (in->guard != GL_PTX_NOREG) {
      const uint64_t *p = gl_emu__row(b, w, in->guard);
      uint32_t t = 0;
      for (unsigned l = 0; l < GL_EMU_WARP; l++)
        t |= (uint32_t)(p[l] != 0) << l;
      m &= in->guard_neg ? ~t : t;
    }
    n++;
    b->clock++;
    tins += (uint64_t)__builtin_popcount(g);
    uint16_t op = in->op;
    if (op <= GL_PTX_OP_ALU_LAST) {
      if (m) {
        if (op == GL_PTX_OP_NOP) {
          /* nothing */
        } else if (op == GL_PTX_OP_MOV &&
                   (in->dst[0].kind == GL_PTX_O_VEC || in->src[0].kind == GL_PTX_O_VEC)) {
          if ((rc = exec_mov_vec(b, w, in, m)))
            break;
        } else {
          const uint64_t *s[4];
          uint64_t *d[2];
          unsigned ns = in->nsrc;
          for (unsigned i = 0; i < 4; i++)
            s[i] = i < ns ? src_row(b, w, &in->src[i], i) : b->scratch[4];
          d[0] = dst_row(b, w, &in->dst[0], 0);
          d[1] = in->ndst > 1 ? dst_row(b, w, &in->dst[1], 1) : b->sink[1];
          if (in->dst[0].kind == GL_PTX_O_VEC ||
              gl_emu_alu_exec(in, d, s, gl_emu__row(b, w, GL_PTX_REG_CC), m) < 0) {
            rc = fail_illegal(b, in, "instruction not supported by the ALU");
            break;
          }
        }
      }
      move_group(w, w->pc + 1);
      continue;
    }
    switch (op) {
    case GL_PTX_OP_LD:
      if (m && (rc = gl_emu__exec_ld(b, w, in, m)))
        goto out;
      move_group(w, w->pc + 1);
      break;
    case GL_PTX_OP_ST:
      if (m) {
        if ((rc = gl_emu__exec_st(b, w, in, m)))
          goto out;
        b->events++;
      }
      move_group(w, w->pc + 1);
      break;
    case GL_PTX_OP_ATOM:
    case GL_PTX_OP_RED:
      if (m) {
        if ((rc = gl_emu__exec_atom(b, w, in, m)))
          goto out;
        b->events++;
      }
      move_group(w, w->pc + 1);
      break;
    case GL_PTX_OP_MAPA:
    case GL_PTX_OP_GETCTARANK:
      if (m && (rc = gl_emu__exec_mapa(b, w, in, m)))
        goto out;
      move_group(w, w->pc + 1);
      break;
    case GL_PTX_OP_CVTA:
      if (m && (rc = gl_emu__exec_cvta(b, w, in, m)))
        goto out;
      move_group(w, w->pc + 1);
      break;
    case GL_PTX_OP_BRA: {
      uint32_t target = (uint32_t)in->src[0].imm;
      if (m == 0) {
        move_group(w, w->pc + 1);
      } else if (m == g) {
        move_group(w, target);
      } else {
        for (uint32_t gg = g; gg; gg &= gg - 1) {
          unsigned l = (unsigned)__builtin_ctz(gg);
          w->lane_pc[l] = (m >> l) & 1 ? target : w->pc + 1;
        }
        w->group = 0;
      }
      break;
    }
    case GL_PTX_OP_CALL:
      if (m == 0)
        move_group(w, w->pc + 1);
      else if ((rc = exec_call(b, w, in, m)))
        goto out;
      break;
    case GL_PTX_OP_RET:
      if (m == 0)
        move_group(w, w->pc + 1);
      else if ((rc = exec_ret(b, w, in, m)))
        goto out;
      break;
    case GL_PTX_OP_EXIT:
      if (m == 0)
        move_group(w, w->pc + 1);
      else
        lanes_exit(b, w, m);
      break;
    case GL_PTX_OP_BAR:
    case GL_PTX_OP_BARCLUSTER:
    case GL_PTX_OP_MBARRIER:
    case GL_PTX_OP_CPBULK:
    case GL_PTX_OP_CPTENSOR:
    case GL_PTX_OP_CPREDUCE:
    case GL_PTX_OP_STASYNC:
    case GL_PTX_OP_REDASYNC: {
      uint32_t next = w->pc + 1;
      for (uint32_t gg = g; gg; gg &= gg - 1)
        w->lane_pc[__builtin_ctz(gg)] = next;
      w->group = 0;
      if (m && (rc = op == GL_PTX_OP_BAR        ? gl_emu__exec_bar(b, w, in, m)
                     : op == GL_PTX_OP_MBARRIER ? gl_emu__exec_mbarrier(b, w, in, m)
                     : op == GL_PTX_OP_CPBULK   ? gl_emu__exec_cpbulk(b, w, in, m)
                     : op == GL_PTX_OP_CPTENSOR ? gl_emu__exec_cptensor(b, w, in, m)
                     : op == GL_PTX_OP_CPREDUCE ? gl_emu__exec_cpreduce(b, w, in, m)
                     : op == GL_PTX_OP_STASYNC || op == GL_PTX_OP_REDASYNC
                         ? gl_emu__exec_stasync(b, w, in, m)
                                                : gl_emu__exec_barcluster(b, w, in, m)))
        goto out;
      break;
    }
    case GL_PTX_OP_CPASYNC:
      if (m) {
        if ((rc = gl_emu__exec_cpasync(b, w, in, m)))
          goto out;
        b->events++;
      }
      move_group(w, w->pc + 1);
      break;
    case GL_PTX_OP_REDUX:
    case GL_PTX_OP_ELECT:
      if (m && (rc = op == GL_PTX_OP_REDUX ? gl_emu__exec_redux(b, w, in, m)
                                           : gl_emu__exec_elect(b, w, in, m)))
        goto out;
      move_group(w, w->pc + 1);
      break;
    case GL_PTX_OP_SHFL:
      if (m && (rc = gl_emu__exec_shfl(b, w, in, m)))
        goto out;
      move_group(w, w->pc + 1);
      break;
    case GL_PTX_OP_VOTE:
      if (m && (rc = gl_emu__exec_vote(b, w, in, m)))
        goto out;
      move_group(w, w->pc + 1);
      break;
    case GL_PTX_OP_MATCH:
      if (m && (rc = gl_emu__exec_match(b, w, in, m)))
        goto out;
      move_group(w, w->pc + 1);
      break;
    case GL_PTX_OP_ACTIVEMASK: {
      uint64_t *d = dst_row(b, w, &in->dst[0], 0);
      for (uint32_t mm = m; mm; mm &= mm - 1)
        d[__builtin_ctz(mm)] = g;
      move_group(w, w->pc + 1);
      break;
    }
    case GL_PTX_OP_TRAP:
      if (m) {
        rc = fail_illegal(b, in, "trap");
        goto out;
      }
      move_group(w, w->pc + 1);
      break;
    case GL_PTX_OP_NANOSLEEP:
      move_group(w, w->pc + 1);
      if (b->L->grouped) /* a spin-wait's back-off: let the other blocks run */
        budget = n;
      break;
    case GL_PTX_OP_MEMBAR:
    case GL_PTX_OP_PREFETCH:
      move_group(w, w->pc + 1);
      break;
    case GL_PTX_OP_MMA:
    case GL_PTX_OP_WGMMA:
    case GL_PTX_OP_LDMATRIX:
    case GL_PTX_OP_STMATRIX:
    case GL_PTX_OP_MOVMATRIX:
      /* mma/wgmma: skip the register-list carriers that follow (mma.h) */
      if (m && (rc = gl_emu__exec_matrix(b, w, in, m)))
        goto out;
      move_group(w, w->pc + gl_mma_next(in));
      break;
    default:
      rc = fail_illegal(b, in, "unknown opcode");
      goto out;
    }
  }
out:
  *issued = n;
  b->warp_insns += n;
  b->thread_insns += tins;
  return rc;
}

/* ---- Blocks ------------------------------------------------------------- */

static int check_time(gl_emu_block *b) {
  gl_emu_launch_state *L = b->L;
  if (atomic_load_explicit(&L->failed, memory_order_relaxed))
    return -1;
  if (L->deadline_ns && gl_mono_ns() >= L->deadline_ns)
    return gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                        "CUDA_ERROR_LAUNCH_TIMEOUT: the kernel ran past its deadline");
  return 0;
}

static int fail_deadlock(gl_emu_block *b) {
  const gl_emu_launch_state *L = b->L;
  for (uint32_t i = 0; i < L->nwarps; i++) {
    const gl_emu_warp *w = &b->warps[i];
    if (!w->parked)
      continue;
    unsigned l = (unsigned)__builtin_ctz(w->parked);
    unsigned id = w->bar_id[l];
    uint32_t line = L->code[w->lane_pc[l] - 1].line;
    if (id == GL_EMU_CLUSTER_BAR) {
      const gl_emu_block *lead = b->peers ? b->peers[0] : b;
      uint32_t want = 0;
      for (uint32_t r = 0; r < (b->peers ? L->cluster_size : 1); r++)
        want += (b->peers ? b->peers[r] : b)->live_threads;
      return gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                          "CUDA_ERROR_LAUNCH_FAILED: line %u: barrier.cluster can never "
                          "complete in the cluster of block (%u,%u,%u): %u of %u threads "
                          "arrived, every other thread exited or waits elsewhere",
                          line, b->ctaid[0], b->ctaid[1], b->ctaid[2], lead->cl_arrived, want);
    }
    const gl_emu_barrier *bar = &b->bars[id];
    uint32_t want = bar->expected ? bar->expected : b->live_threads;
    return gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                        "CUDA_ERROR_LAUNCH_FAILED: line %u: barrier %u can never complete "
                        "in block (%u,%u,%u): %u of %u threads arrived, every other thread "
                        "exited or waits elsewhere",
                        line, id, b->ctaid[0], b->ctaid[1], b->ctaid[2], bar->arrived, want);
  }
  return gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                      "CUDA_ERROR_LAUNCH_FAILED: block (%u,%u,%u) cannot make progress",
                      b->ctaid[0], b->ctaid[1], b->ctaid[2]);
}

/* Sets up the warps of a block about to start. */
static void block_init(gl_emu_block *b) {
  const gl_emu_launch_state *L = b->L;
  uint32_t entry = 0; /* the kernel's code starts with its own body */
  for (uint32_t i = 0; i < L->nwarps; i++) {
    gl_emu_warp *w = &b->warps[i];
    uint32_t first = i * GL_EMU_WARP;
    uint32_t n = L->nthreads - first;
    if (n > GL_EMU_WARP)
      n = GL_EMU_WARP;
    w->live = n == GL_EMU_WARP ? UINT32_MAX : (1u << n) - 1;
    w->parked = 0;
    w->group = w->live;
    w->pc = entry;
    w->others = 0;
    w->others_min = UINT32_MAX;
    w->index = i;
    w->suspended = 0;
    w->starve = 0;
    w->forced_left = 0;
    w->cl_pending = 0;
    memset(w->depth, 0, sizeof w->depth);
  }
  b->live_threads = L->nthreads;
  b->cl_arrived = 0;
  b->cl_phase = 0;
  b->done = 0;
  memset(b->bars, 0, sizeof b->bars);
}

/* One turn of a block: every warp that can run runs until none of its
 * lanes can or for `slice` instructions. *alive: some thread has not
 * exited; *progress: some instruction was issued. 0 or -1 on an error. */
static inline int block_round(gl_emu_block *b, uint32_t slice, int *alive, int *progress) {
  const gl_emu_launch_state *L = b->L;
  int al = 0, pr = 0;
  for (uint32_t i = 0; i < L->nwarps; i++) {
    gl_emu_warp *w = &b->warps[i];
    if (!w->live)
      continue;
    al = 1;
    if (!(w->live & ~w->parked))
      continue;
    uint32_t issued = 0;
    if (warp_run(b, w, slice, &issued))
      return -1;
    pr |= issued != 0;
    b->since_check += issued;
    if (b->since_check >= CHECK_EVERY) {
      b->since_check = 0;
      if (check_time(b))
        return -1;
    }
  }
  *alive = al;
  *progress = pr;
  return 0;
}

int gl_emu__block_run(gl_emu_block *b) {
  block_init(b);
  for (;;) {
    int alive, progress;
    if (block_round(b, WARP_SLICE, &alive, &progress))
      return -1;
    if (!alive)
      return 0;
    if (!progress) {
      int st = gl_emu__mbar_stalled(&b, 1); /* mbarrier waits time out first */
      if (st < 0)
        return -1;
      if (st)
        continue;
      return fail_deadlock(b);
    }
  }
}

uint64_t gl_emu__no_progress_limit = GL_EMU_NO_PROGRESS_DEFAULT;

int gl_emu__group_run(gl_emu_block *const *blocks, uint32_t n) {
  const gl_emu_launch_state *L = blocks[0]->L;
  for (uint32_t i = 0; i < n; i++)
    block_init(blocks[i]);
  uint64_t quiet = 0, last_events = UINT64_MAX;
  for (;;) {
    int any_alive = 0, any_progress = 0;
    uint64_t issued = 0, events = 0;
    for (uint32_t i = 0; i < n; i++) {
      gl_emu_block *b = blocks[i];
      if (b->done)
        continue;
      int alive, progress;
      uint64_t before = b->warp_insns;
      if (block_round(b, GL_EMU_GROUP_WARP_SLICE, &alive, &progress))
        return -1;
      issued += b->warp_insns - before;
      if (!alive) {
        b->done = 1;
        continue;
      }
      any_alive = 1;
      any_progress |= progress;
    }
    if (!any_alive)
      return 0;
    if (!any_progress) {
      int st = gl_emu__mbar_stalled(blocks, n); /* mbarrier waits time out first */
      if (st < 0)
        return -1;
      if (st)
        continue;
      /* every block still alive waits at a barrier: report one */
      for (uint32_t i = 0; i < n; i++)
        if (!blocks[i]->done)
          return fail_deadlock(blocks[i]);
    }
    for (uint32_t i = 0; i < n; i++)
      events += blocks[i]->events;
    if (events != last_events) {
      last_events = events;
      quiet = 0;
    } else if ((quiet += issued) >= gl_emu__no_progress_limit) {
      return gl_emu__fail(
          blocks[0], GPULEASE_LAUNCH_FAILED,
          "CUDA_ERROR_LAUNCH_FAILED: the %s of %u co-resident blocks issued %llu warp "
          "instructions without a store, atomic, barrier or exit: its blocks spin on "
          "something that never comes (a grid or cluster barrier some block never reaches?)",
          L->cooperative ? "cooperative grid" : "cluster", n, (unsigned long long)quiet);
    }
  }
}
