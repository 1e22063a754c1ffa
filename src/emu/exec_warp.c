/*
 * exec_warp.c - instructions that look across lanes or warps: shfl.sync,
 * vote.sync, match.sync, the block barriers (bar/barrier .sync, .arrive,
 * .red) and the cluster barrier (barrier.cluster.arrive/.wait).
 *
 * Under lockstep every lane that executes one of the warp-level
 * instructions is at the same PC, so the values read from other lanes are
 * the ones they hold at this instruction. The participants are the lanes
 * executing it (the group, less lanes whose guard is false) that are also
 * in membermask; lanes named in membermask that are elsewhere would
 * deadlock or be undefined on hardware, and are simply not counted here.
 *
 * Barriers count threads. A barrier without a count completes when every
 * non-exited thread of the block has arrived; exits re-check that
 * (gl_emu__bar_recheck). Parked lanes keep in lane_pc[] the instruction
 * after the barrier; releasing them writes bar.red's result and hands the
 * warp back to the scheduler with its group cleared.
 */
#include <string.h>

#include "emu/exec_internal.h"

/* Writes a value (dst[0]) and a predicate (dst[1], when written) for the
 * lanes in m; an absent or '_' destination goes to a sink row. */
static void write_pair(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m,
                       const uint64_t *val, const uint64_t *pred) {
  uint64_t *d0 = in->dst[0].kind == GL_PTX_O_REG && in->dst[0].reg != GL_PTX_NOREG
                     ? gl_emu__row(b, w, in->dst[0].reg)
                     : b->sink[0];
  uint64_t *d1 = in->ndst > 1 && in->dst[1].kind == GL_PTX_O_REG &&
                         in->dst[1].reg != GL_PTX_NOREG
                     ? gl_emu__row(b, w, in->dst[1].reg)
                     : b->sink[1];
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    d0[l] = val[l];
    d1[l] = pred[l];
  }
}

/* ---- shfl.sync ---------------------------------------------------------- */

int gl_emu__exec_shfl(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m) {
  const uint64_t *a = gl_emu__src_row(b, w, &in->src[0], 0);
  const uint64_t *bb = gl_emu__src_row(b, w, &in->src[1], 1);
  const uint64_t *cc = gl_emu__src_row(b, w, &in->src[2], 2);
  uint64_t val[GL_EMU_WARP], ok[GL_EMU_WARP];
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned lane = (unsigned)__builtin_ctz(mm);
    uint32_t bval = (uint32_t)bb[lane] & 31u;
    uint32_t c = (uint32_t)cc[lane];
    uint32_t clampv = c & 31u;
    uint32_t segmask = (c >> 8) & 31u;
    int32_t max_lane = (int32_t)((lane & segmask) | (clampv & ~segmask));
    int32_t min_lane = (int32_t)(lane & segmask);
    int32_t j;
    int p;
    switch (in->mode) {
    case GL_PTX_SHFL_UP:
      j = (int32_t)lane - (int32_t)bval;
      p = j >= max_lane;
      break;
    case GL_PTX_SHFL_DOWN:
      j = (int32_t)lane + (int32_t)bval;
      p = j <= max_lane;
      break;
    case GL_PTX_SHFL_BFLY:
      j = (int32_t)(lane ^ bval);
      p = j <= max_lane;
      break;
    default: /* idx */
      j = min_lane | (int32_t)(bval & ~segmask);
      p = j <= max_lane;
      break;
    }
    if (!p)
      j = (int32_t)lane;
    /* 0 <= j <= 31 here: a source outside the warp is never in range */
    val[lane] = a[(unsigned)j & 31u] & 0xffffffffull;
    ok[lane] = (uint64_t)p;
  }
  write_pair(b, w, in, m, val, ok);
  return 0;
}

/* ---- vote.sync / match.sync --------------------------------------------- */

/* The participants: executing lanes in lane l's membermask (the executing
 * lanes themselves when the mask names none of them). */
static inline uint32_t members(const uint64_t *maskrow, unsigned l, uint32_t m) {
  uint32_t p = m & (uint32_t)maskrow[l];
  return p ? p : m;
}

int gl_emu__exec_vote(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m) {
  const uint64_t *pr = gl_emu__src_row(b, w, &in->src[0], 0);
  const uint64_t *mk = in->nsrc > 1 ? gl_emu__src_row(b, w, &in->src[1], 1) : NULL;
  uint32_t truth = 0;
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    truth |= (uint32_t)(pr[l] != 0) << l;
  }
  uint64_t *d = in->dst[0].kind == GL_PTX_O_REG && in->dst[0].reg != GL_PTX_NOREG
                    ? gl_emu__row(b, w, in->dst[0].reg)
                    : b->sink[0];
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    uint32_t part = mk ? members(mk, l, m) : m;
    uint32_t t = truth & part;
    switch (in->mode) {
    case GL_PTX_VOTE_ALL:
      d[l] = t == part;
      break;
    case GL_PTX_VOTE_ANY:
      d[l] = t != 0;
      break;
    case GL_PTX_VOTE_UNI:
      d[l] = t == 0 || t == part;
      break;
    default:
      d[l] = t;
      break;
    }
  }
  return 0;
}

int gl_emu__exec_match(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m) {
  const uint64_t *v = gl_emu__src_row(b, w, &in->src[0], 0);
  const uint64_t *mk = in->nsrc > 1 ? gl_emu__src_row(b, w, &in->src[1], 1) : NULL;
  uint64_t vmask = gl_ptx_type_size((gl_ptx_type)in->type) == 8 ? UINT64_MAX : 0xffffffffull;
  uint64_t res[GL_EMU_WARP], pred[GL_EMU_WARP];
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    uint32_t part = mk ? members(mk, l, m) : m;
    uint32_t same = 0;
    for (uint32_t pp = part; pp; pp &= pp - 1) {
      unsigned k = (unsigned)__builtin_ctz(pp);
      if (((v[k] ^ v[l]) & vmask) == 0)
        same |= 1u << k;
    }
    if (in->mode == GL_PTX_MATCH_ANY) {
      res[l] = same | (1u << l);
      pred[l] = 0;
    } else {
      int all = same == part;
      res[l] = all ? part : 0;
      pred[l] = (uint64_t)all;
    }
  }
  write_pair(b, w, in, m, res, pred);
  return 0;
}

/* ---- Barriers ----------------------------------------------------------- */

/* Wakes every lane of the block parked on barrier id. */
static void bar_release(gl_emu_block *b, unsigned id) {
  const gl_emu_launch_state *L = b->L;
  gl_emu_barrier *bar = &b->bars[id];
  for (uint32_t i = 0; i < L->nwarps; i++) {
    gl_emu_warp *w = &b->warps[i];
    uint32_t wake = 0;
    for (uint32_t pk = w->parked; pk; pk &= pk - 1) {
      unsigned l = (unsigned)__builtin_ctz(pk);
      if (w->bar_id[l] != id)
        continue;
      wake |= 1u << l;
      const gl_ptx_insn *in = &L->code[w->lane_pc[l] - 1];
      if (in->op == GL_PTX_OP_BAR && in->mode >= GL_PTX_BAR_RED_POPC &&
          in->dst[0].kind == GL_PTX_O_REG && in->dst[0].reg != GL_PTX_NOREG) {
        uint64_t r = in->mode == GL_PTX_BAR_RED_POPC  ? bar->red_popc
                     : in->mode == GL_PTX_BAR_RED_AND ? bar->red_and
                                                      : bar->red_or;
        gl_emu__row(b, w, in->dst[0].reg)[l] = r;
      }
    }
    if (wake) {
      if (w->group)
        gl_emu__warp_flush(w);
      w->parked &= ~wake;
    }
  }
  memset(bar, 0, sizeof *bar);
  b->events++;
}

static void bar_check(gl_emu_block *b, unsigned id) {
  gl_emu_barrier *bar = &b->bars[id];
  if (bar->arrived == 0)
    return;
  uint32_t want = bar->expected ? bar->expected : b->live_threads;
  if (bar->arrived >= want)
    bar_release(b, id);
}

static void cluster_bar_check(gl_emu_block *b);

void gl_emu__bar_recheck(gl_emu_block *b) {
  for (unsigned id = 0; id < GL_EMU_NBARRIERS; id++)
    if (b->bars[id].arrived && b->bars[id].expected == 0)
      bar_check(b, id);
  cluster_bar_check(b);
}

int gl_emu__exec_bar(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m) {
  unsigned first = (unsigned)__builtin_ctz(m);
  const uint64_t *idrow = gl_emu__src_row(b, w, &in->src[0], 0);
  uint64_t id = in->src[0].kind == GL_PTX_O_NONE ? 0 : idrow[first];
  if (id >= GL_EMU_NBARRIERS)
    return gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                        "CUDA_ERROR_ILLEGAL_INSTRUCTION: line %u: barrier id %llu is not 0-15",
                        in->line, (unsigned long long)id);
  uint32_t expected = 0;
  if (in->flags & GL_PTX_F_WAIT) {
    uint64_t cnt = gl_emu__src_row(b, w, &in->src[1], 1)[first];
    if (cnt == 0 || cnt > 1024 || cnt % GL_EMU_WARP)
      return gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                          "CUDA_ERROR_ILLEGAL_INSTRUCTION: line %u: barrier thread count %llu "
                          "is not a multiple of 32 in 32..1024",
                          in->line, (unsigned long long)cnt);
    expected = (uint32_t)cnt;
  }
  gl_emu_barrier *bar = &b->bars[id];
  if (bar->arrived == 0) {
    bar->expected = expected;
    bar->red_and = 1;
    bar->red_or = 0;
    bar->red_popc = 0;
  }
  if (in->mode >= GL_PTX_BAR_RED_POPC) {
    const uint64_t *p = gl_emu__src_row(b, w, &in->src[2], 2);
    for (uint32_t mm = m; mm; mm &= mm - 1) {
      unsigned l = (unsigned)__builtin_ctz(mm);
      int t = p[l] != 0;
      bar->red_popc += (uint32_t)t;
      bar->red_and &= (uint32_t)t;
      bar->red_or |= (uint32_t)t;
    }
  }
  bar->arrived += (uint32_t)__builtin_popcount(m);
  if (in->mode != GL_PTX_BAR_ARRIVE) {
    w->parked |= m;
    for (uint32_t mm = m; mm; mm &= mm - 1)
      w->bar_id[__builtin_ctz(mm)] = (uint8_t)id;
  }
  bar_check(b, (unsigned)id);
  return 0;
}

/* ---- Cluster barrier ---------------------------------------------------- */

/* barrier.cluster counts the threads of every block of the cluster. Rank
 * 0's block keeps the count of threads arrived and the number of completed
 * phases; each lane remembers the phase it arrived in (cl_phase) until its
 * wait. When every non-exited thread of the cluster has arrived the phase
 * advances and every lane parked at a wait in any block of the cluster is
 * released. A launch without clusters is a cluster of one block. */

static inline gl_emu_block *cluster_block(const gl_emu_block *b, uint32_t rank) {
  return b->peers ? (gl_emu_block *)b->peers[rank] : (gl_emu_block *)b;
}

static inline uint32_t cluster_blocks(const gl_emu_block *b) {
  return b->peers ? b->L->cluster_size : 1;
}

static void cluster_bar_check(gl_emu_block *b) {
  gl_emu_block *lead = cluster_block(b, 0);
  if (lead->cl_arrived == 0)
    return;
  uint32_t n = cluster_blocks(b), live = 0;
  for (uint32_t r = 0; r < n; r++)
    live += cluster_block(b, r)->live_threads;
  if (lead->cl_arrived < live)
    return;
  lead->cl_arrived = 0;
  lead->cl_phase++;
  for (uint32_t r = 0; r < n; r++) {
    gl_emu_block *pb = cluster_block(b, r);
    const gl_emu_launch_state *L = pb->L;
    for (uint32_t i = 0; i < L->nwarps; i++) {
      gl_emu_warp *w = &pb->warps[i];
      uint32_t wake = 0;
      for (uint32_t pk = w->parked; pk; pk &= pk - 1) {
        unsigned l = (unsigned)__builtin_ctz(pk);
        if (w->bar_id[l] == GL_EMU_CLUSTER_BAR)
          wake |= 1u << l;
      }
      if (wake) {
        if (w->group)
          gl_emu__warp_flush(w);
        w->parked &= ~wake;
      }
    }
    pb->events++;
  }
}

int gl_emu__exec_barcluster(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in,
                            uint32_t m) {
  gl_emu_block *lead = cluster_block(b, 0);
  if (in->mode == GL_PTX_BARCLUSTER_ARRIVE) {
    for (uint32_t mm = m; mm; mm &= mm - 1)
      w->cl_phase[__builtin_ctz(mm)] = lead->cl_phase;
    w->cl_pending |= m;
    lead->cl_arrived += (uint32_t)__builtin_popcount(m);
    cluster_bar_check(b);
    return 0;
  }
  /* wait: lanes whose phase has not completed park; the others go on */
  uint32_t park = 0;
  for (uint32_t mm = m & w->cl_pending; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    if (w->cl_phase[l] == lead->cl_phase)
      park |= 1u << l;
  }
  w->cl_pending &= ~m;
  if (park) {
    w->parked |= park;
    for (uint32_t mm = park; mm; mm &= mm - 1)
      w->bar_id[__builtin_ctz(mm)] = (uint8_t)GL_EMU_CLUSTER_BAR;
  }
  return 0;
}
