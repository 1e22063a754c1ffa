/*
 * exec_mbar.c - mbarrier objects: mbarrier.init/inval/arrive{_drop}
 * {.noComplete}{.expect_tx}/expect_tx/complete_tx/test_wait/try_wait
 * {.parity}/pending_count, cp.async.mbarrier.arrive{.noinc}, the tx bytes
 * that cp.async.bulk completes, and what happens to waiting lanes.
 *
 * The object is the 8 bytes the program names in shared memory, read and
 * written there on every operation (so a program that copies or inspects
 * them sees this encoding; the PTX ISA calls it opaque):
 *   bits  0-19  pending arrivals of the current phase
 *   bits 20-39  expected arrivals a phase (init's count, less arrive_drops)
 *   bits 40-60  tx-count, 21-bit two's complement (-(2^20-1)..2^20-1)
 *   bit  61     0
 *   bit  62     1 once initialised (init sets it, inval clears it)
 *   bit  63     the current phase's parity
 * The state an arrive returns: bits 0-19 the phase's pending arrivals just
 * before it (its own count included: what pending_count reads, as an H200
 * answers), bit 62 set, bit 63 the parity of the phase it arrived in;
 * other bits 0.
 *
 * A phase completes when its pending arrivals and its tx-count are both
 * zero: the parity flips, pending becomes expected and tx-count 0. A wait
 * on a state (or on a parity P) is complete when the current parity
 * differs from the state's (from P): that phase is over.
 *
 * Waiting. A lane whose test_wait or try_wait finds its phase incomplete
 * parks (bar_id GL_EMU_MBAR_WAIT) with its PC still at the wait, and is
 * woken, to run the wait again, whenever a phase of any mbarrier of its
 * block or cluster completes. try_wait may suspend the thread up to a time
 * limit and test_wait does not, but a thread that spins on either cannot
 * tell a wait that returned false and was retried from one that slept:
 * parking instead of spinning lets the other warps run (the producer),
 * keeps spin loops off the no-progress guard, and makes a wait that can
 * never complete a detectable deadlock. When no warp of the block (of the
 * co-resident group) can run, every parked wait returns false, as after
 * its time limit (gl_emu__mbar_stalled): a program that does other work
 * when a wait fails keeps going; after MB_STALL_LIMIT time-outs in a row
 * with nothing stored, arrived or exited in between, the launch fails,
 * naming the wait and the object's state.
 *
 * Errors that are undefined behaviour in PTX fail the launch with
 * CUDA_ERROR_ILLEGAL_INSTRUCTION and the line: an object used before init
 * (or after inval), counts outside 1..2^20-1, more arrivals than pending,
 * a tx-count out of range, a .noComplete arrive that completes the phase.
 */
#include <stdio.h>
#include <string.h>

#include "emu/exec_internal.h"

#define MB_MAX ((1u << 20) - 1)
#define MB_VALID (1ull << 62)
#define MB_PHASE (1ull << 63)
/* Time-outs in a row, with nothing stored, arrived or exited in between,
 * before the waits count as never completing: a loop may retry a failed
 * wait a bounded number of times before it does something else. */
#define MB_STALL_LIMIT 1024u

typedef struct mbar {
  uint32_t pending, expected;
  int32_t tx;
  unsigned phase;
} mbar;

static mbar mb_unpack(uint64_t v) {
  mbar o = {0, 0, 0, 0};
  o.pending = (uint32_t)(v & MB_MAX);
  o.expected = (uint32_t)((v >> 20) & MB_MAX);
  int32_t t = (int32_t)((v >> 40) & 0x1fffff);
  o.tx = t & 0x100000 ? t - 0x200000 : t;
  o.phase = (unsigned)(v >> 63);
  return o;
}

static uint64_t mb_pack(const mbar *o) {
  return (uint64_t)o->pending | (uint64_t)o->expected << 20 |
         ((uint64_t)(uint32_t)o->tx & 0x1fffff) << 40 | MB_VALID |
         (o->phase ? MB_PHASE : 0);
}

static int fail_mb(gl_emu_block *b, gl_emu_warp *w, unsigned lane, const gl_ptx_insn *in,
                   uint64_t addr, const char *what) {
  uint32_t t[3];
  gl_emu__thread_of(b, w, lane, t);
  return gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                      "CUDA_ERROR_ILLEGAL_INSTRUCTION: line %u: mbarrier at 0x%llx: %s "
                      "(thread (%u,%u,%u), block (%u,%u,%u))",
                      in->line, (unsigned long long)addr, what, t[0], t[1], t[2],
                      b->ctaid[0], b->ctaid[1], b->ctaid[2]);
}

static uint64_t addr_of(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_operand *o,
                        unsigned lane) {
  uint64_t base = o->reg == GL_PTX_NOREG ? 0 : gl_emu__row(b, w, o->reg)[lane];
  return base + (uint64_t)o->imm;
}

/* The object's 8 bytes, or NULL after failing the launch. */
static uint8_t *mb_ptr(gl_emu_block *b, gl_emu_warp *w, unsigned lane, const gl_ptx_insn *in,
                       unsigned space, uint64_t addr) {
  if (space == GL_PTX_SPACE_GENERIC && addr - GL_EMU_SHARED_WINDOW >= GL_EMU_WINDOW_SIZE) {
    fail_mb(b, w, lane, in, addr, "the address is not in shared memory");
    return NULL;
  }
  if (space != GL_PTX_SPACE_GENERIC && space != GL_PTX_SPACE_SHARED &&
      space != GL_PTX_SPACE_SHARED_CLUSTER)
    space = GL_PTX_SPACE_SHARED;
  return gl_emu__mem_ptr(b, w, lane, in, space, addr, 8, 1);
}

/* Reads an initialised object into *o; -1 after failing the launch. */
static int mb_load(gl_emu_block *b, gl_emu_warp *w, unsigned lane, const gl_ptx_insn *in,
                   const uint8_t *p, uint64_t addr, mbar *o) {
  uint64_t v;
  memcpy(&v, p, 8);
  if (!(v & MB_VALID))
    return fail_mb(b, w, lane, in, addr, "used before mbarrier.init (or after inval)");
  *o = mb_unpack(v);
  return 0;
}

/* Wakes every lane parked in an mbarrier wait in b's cluster (b alone
 * without one): they run their wait again. */
static void mb_wake(gl_emu_block *b) {
  uint32_t nb = b->peers ? b->L->cluster_size : 1;
  for (uint32_t r = 0; r < nb; r++) {
    gl_emu_block *pb = b->peers ? (gl_emu_block *)b->peers[r] : b;
    for (uint32_t i = 0; i < pb->L->nwarps; i++) {
      gl_emu_warp *w = &pb->warps[i];
      uint32_t wake = 0;
      for (uint32_t pk = w->parked; pk; pk &= pk - 1) {
        unsigned l = (unsigned)__builtin_ctz(pk);
        if (w->bar_id[l] == GL_EMU_MBAR_WAIT)
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

/* Completes the phase if nothing is pending; stores the object. */
static void mb_settle(gl_emu_block *b, uint8_t *p, mbar *o) {
  if (o->pending == 0 && o->tx == 0) {
    o->phase ^= 1u;
    o->pending = o->expected;
    mb_wake(b);
  }
  uint64_t v = mb_pack(o);
  memcpy(p, &v, 8);
  b->events++;
}

/* Adds d to the tx-count, checking its range. */
static int mb_add_tx(gl_emu_block *b, gl_emu_warp *w, unsigned lane, const gl_ptx_insn *in,
                     uint64_t addr, mbar *o, int64_t d) {
  int64_t t = (int64_t)o->tx + d;
  if (t > (int64_t)MB_MAX || t < -(int64_t)MB_MAX)
    return fail_mb(b, w, lane, in, addr, "tx-count out of range -(2^20-1)..2^20-1");
  o->tx = (int32_t)t;
  return 0;
}

int gl_emu__mbar_complete_tx(gl_emu_block *b, gl_emu_warp *w, unsigned lane,
                             const gl_ptx_insn *in, unsigned space, uint64_t addr,
                             uint64_t bytes) {
  uint8_t *p = mb_ptr(b, w, lane, in, space, addr);
  mbar o = {0, 0, 0, 0};
  if (!p || mb_load(b, w, lane, in, p, addr, &o))
    return -1;
  if (bytes > MB_MAX)
    return fail_mb(b, w, lane, in, addr, "tx count out of range 0..2^20-1");
  if (mb_add_tx(b, w, lane, in, addr, &o, -(int64_t)bytes))
    return -1;
  mb_settle(b, p, &o);
  return 0;
}

/* arrive{_drop}{.noComplete}{.expect_tx} and cp.async.mbarrier.arrive
 * (.noinc: an arrival of 1; without: +1 then -1, no change). */
static int mb_arrive(gl_emu_block *b, gl_emu_warp *w, unsigned lane, const gl_ptx_insn *in,
                     uint8_t *p, uint64_t addr, uint64_t count, uint64_t txc,
                     uint64_t *state) {
  unsigned mode = in->mode, op = GL_PTX_MBAR_OP(mode);
  mbar o = {0, 0, 0, 0};
  if (mb_load(b, w, lane, in, p, addr, &o))
    return -1;
  if (count == 0 || count > MB_MAX)
    return fail_mb(b, w, lane, in, addr, "arrival count out of range 1..2^20-1");
  if (op == GL_PTX_MBAR_ARRIVE && (mode & GL_PTX_MBAR_WITH_TX)) {
    if (txc > MB_MAX)
      return fail_mb(b, w, lane, in, addr, "tx count out of range 0..2^20-1");
    if (mb_add_tx(b, w, lane, in, addr, &o, (int64_t)txc))
      return -1;
  }
  uint64_t st = MB_VALID | (o.phase ? MB_PHASE : 0) | o.pending;
  if (op == GL_PTX_MBAR_CP_ARRIVE) {
    *state = st;
    b->events++;
    return 0;
  }
  if (count > o.pending)
    return fail_mb(b, w, lane, in, addr, "more arrivals than the phase has pending");
  o.pending -= (uint32_t)count;
  if (op == GL_PTX_MBAR_ARRIVE && (mode & GL_PTX_MBAR_DROP)) {
    if (count > o.expected)
      return fail_mb(b, w, lane, in, addr, "arrive_drop below zero expected arrivals");
    o.expected -= (uint32_t)count;
  }
  if (op == GL_PTX_MBAR_ARRIVE && (mode & GL_PTX_MBAR_NOCOMPLETE) && o.pending == 0 &&
      o.tx == 0)
    return fail_mb(b, w, lane, in, addr, "a .noComplete arrive would complete the phase");
  *state = st;
  mb_settle(b, p, &o);
  return 0;
}

int gl_emu__exec_mbarrier(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m) {
  unsigned op = GL_PTX_MBAR_OP(in->mode);
  const uint64_t *s1 = in->nsrc > 1 ? gl_emu__src_row(b, w, &in->src[1], 1) : NULL;
  const uint64_t *s2 = in->nsrc > 2 ? gl_emu__src_row(b, w, &in->src[2], 2) : NULL;
  uint64_t *d = in->ndst && in->dst[0].reg != GL_PTX_NOREG ? gl_emu__row(b, w, in->dst[0].reg)
                                                           : b->sink[0];
  if (op == GL_PTX_MBAR_PENDING_COUNT) {
    const uint64_t *st = gl_emu__src_row(b, w, &in->src[0], 0);
    for (uint32_t mm = m; mm; mm &= mm - 1) {
      unsigned l = (unsigned)__builtin_ctz(mm);
      d[l] = st[l] & MB_MAX;
    }
    return 0;
  }
  uint32_t park = 0;
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    uint64_t addr = addr_of(b, w, &in->src[0], l);
    uint8_t *p = mb_ptr(b, w, l, in, in->space, addr);
    if (!p)
      return -1;
    mbar o = {0, 0, 0, 0};
    switch (op) {
    case GL_PTX_MBAR_INIT: {
      uint64_t n = s1[l] & 0xffffffffu;
      if (n == 0 || n > MB_MAX)
        return fail_mb(b, w, l, in, addr, "init count out of range 1..2^20-1");
      o.pending = o.expected = (uint32_t)n;
      o.tx = 0;
      o.phase = 0;
      uint64_t v = mb_pack(&o);
      memcpy(p, &v, 8);
      b->events++;
      break;
    }
    case GL_PTX_MBAR_INVAL:
      memset(p, 0, 8);
      b->events++;
      break;
    case GL_PTX_MBAR_ARRIVE:
      if (mb_arrive(b, w, l, in, p, addr, s1[l] & 0xffffffffu,
                    s2 ? s2[l] & 0xffffffffu : 0, &d[l]))
        return -1;
      break;
    case GL_PTX_MBAR_CP_ARRIVE:
    case GL_PTX_MBAR_CP_ARRIVE_NOINC: {
      uint64_t scratch;
      if (mb_arrive(b, w, l, in, p, addr, 1, 0, &scratch))
        return -1;
      break;
    }
    case GL_PTX_MBAR_EXPECT_TX:
    case GL_PTX_MBAR_COMPLETE_TX: {
      uint64_t n = s1[l] & 0xffffffffu;
      if (mb_load(b, w, l, in, p, addr, &o))
        return -1;
      if (n > MB_MAX)
        return fail_mb(b, w, l, in, addr, "tx count out of range 0..2^20-1");
      if (mb_add_tx(b, w, l, in, addr, &o, op == GL_PTX_MBAR_EXPECT_TX ? (int64_t)n
                                                                       : -(int64_t)n))
        return -1;
      mb_settle(b, p, &o);
      break;
    }
    default: { /* test_wait, try_wait */
      if (mb_load(b, w, l, in, p, addr, &o))
        return -1;
      unsigned want = (in->mode & GL_PTX_MBAR_PARITY) ? (unsigned)(s1[l] & 1u)
                                                       : (unsigned)(s1[l] >> 63);
      if (o.phase != want) {
        d[l] = 1;
      } else {
        park |= 1u << l;
      }
      break;
    }
    }
  }
  if (park) {
    w->parked |= park;
    for (uint32_t mm = park; mm; mm &= mm - 1) {
      unsigned l = (unsigned)__builtin_ctz(mm);
      w->bar_id[l] = (uint8_t)GL_EMU_MBAR_WAIT;
      w->lane_pc[l] = w->pc;
    }
  }
  return 0;
}

/* ---- Time-outs ---------------------------------------------------------- */

static int fail_stalled(gl_emu_block *b, gl_emu_warp *w, unsigned lane) {
  const gl_ptx_insn *in = &b->L->code[w->lane_pc[lane]];
  uint64_t addr = addr_of(b, w, &in->src[0], lane);
  char what[160];
  uint8_t *p = mb_ptr(b, w, lane, in, in->space, addr);
  if (!p)
    return -1;
  uint64_t v;
  memcpy(&v, p, 8);
  mbar o = mb_unpack(v);
  snprintf(what, sizeof what,
           "the wait can never complete: the phase of parity %u has %u of %u arrivals "
           "pending and tx-count %d, and every thread waits or has exited",
           o.phase, o.pending, o.expected, (int)o.tx);
  return fail_mb(b, w, lane, in, addr, what);
}

int gl_emu__mbar_stalled(gl_emu_block *const *blocks, uint32_t n) {
  uint64_t events = 0;
  gl_emu_block *fb = NULL;
  gl_emu_warp *fw = NULL;
  unsigned fl = 0;
  for (uint32_t i = 0; i < n; i++) {
    gl_emu_block *b = blocks[i];
    events += b->events;
    for (uint32_t k = 0; k < b->L->nwarps && !fw; k++) {
      gl_emu_warp *w = &b->warps[k];
      for (uint32_t pk = w->parked & w->live; pk; pk &= pk - 1) {
        unsigned l = (unsigned)__builtin_ctz(pk);
        if (w->bar_id[l] == GL_EMU_MBAR_WAIT) {
          fb = b;
          fw = w;
          fl = l;
          break;
        }
      }
    }
  }
  if (!fw)
    return 0;
  gl_emu_block *b0 = blocks[0];
  if (b0->mbar_stall_mark != events + 1) {
    b0->mbar_stall_mark = events + 1;
    b0->mbar_stalls = 0;
  }
  if (++b0->mbar_stalls > MB_STALL_LIMIT)
    return fail_stalled(fb, fw, fl);
  for (uint32_t i = 0; i < n; i++) {
    gl_emu_block *b = blocks[i];
    for (uint32_t k = 0; k < b->L->nwarps; k++) {
      gl_emu_warp *w = &b->warps[k];
      uint32_t wake = 0;
      for (uint32_t pk = w->parked; pk; pk &= pk - 1) {
        unsigned l = (unsigned)__builtin_ctz(pk);
        if (w->bar_id[l] != GL_EMU_MBAR_WAIT)
          continue;
        const gl_ptx_insn *in = &b->L->code[w->lane_pc[l]];
        if (in->dst[0].reg != GL_PTX_NOREG)
          gl_emu__row(b, w, in->dst[0].reg)[l] = 0;
        w->lane_pc[l]++;
        wake |= 1u << l;
      }
      if (wake) {
        if (w->group)
          gl_emu__warp_flush(w);
        w->parked &= ~wake;
      }
    }
  }
  return 1;
}
