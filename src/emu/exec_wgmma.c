/*
 * exec_wgmma.c - wgmma.mma_async: D (64 x N) = A (64 x K) * B (K x N) + D
 * over a warpgroup (4 consecutive warps, the first a multiple of 4).
 *
 * Each warp of the warpgroup owns 16 rows of D (warp index % 4 picks them)
 * and computes them alone: its rows of A (from the shared-memory
 * descriptor, or its own registers) and all of B are read when the warp
 * executes the instruction, so no rendezvous is needed. That is the
 * synchronous reading of an asynchronous operation: a program that follows
 * the rules (operands in shared memory written and fenced before, not
 * changed and D not touched until wgmma.wait_group) sees the same result;
 * wgmma.fence, commit_group and wait_group are no-ops.
 *
 * Accumulator fragment (lane l, g = l / 4, t = l % 4, warp w of the group),
 * element i (f32: one a register; f16: two, low half first):
 *   row 16w + g + 8 * ((i / 2) % 2), col 8 * (i / 4) + 2t + i % 2
 * A in registers: the m16n8k16 (f16/bf16) or m16n8k8 (tf32) A fragment of
 * the warp's 16 rows.
 *
 * Matrix descriptor (64 bits): start address >> 4 in bits 0-13, leading
 * dimension byte offset (LBO) >> 4 in bits 16-29, stride dimension byte
 * offset (SBO) >> 4 in bits 32-45, swizzle in bits 62-63 (0 none, 1 128B,
 * 2 64B, 3 32B). The base offset (bits 49-51) is taken as 0: the swizzle is
 * applied to the absolute shared address, which is what the hardware does
 * for a pattern-aligned matrix. Element (mn, k) of an operand (mn: the row
 * of A or column of B), es bytes an element, W the swizzle width:
 *   K-major, none:     start + (mn%8)*16 + (mn/8)*SBO + kb%16 + (kb/16)*LBO
 *   K-major, W:        start + (mn%8)*W + (mn/8)*SBO + kb
 *   MN-major, none:    start + mb%16 + (mb/16)*SBO + (k%8)*16 + (k/8)*LBO
 *   MN-major, W:       start + mb%W + (mb/W)*LBO + (k%8)*W + (k/8)*SBO
 * with kb = k*es, mb = mn*es, and then, for W, address bits 4.. XORed with
 * bits 7.. (log2(W/16) of them). A is K-major unless imm-trans-a is 1, B
 * is K-major unless imm-trans-b is 1 (tf32: always K-major).
 *
 * Arithmetic: as mma (exec_mma.c): exact products summed in double in k
 * order with D (when scale-d is true), rounded once.
 */
#include <stdio.h>
#include <string.h>

#include "emu/exec_mma.h"
#include "emu/mma.h"

static int fail_w(gl_emu_block *b, const gl_ptx_insn *in, const char *what) {
  return gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                      "CUDA_ERROR_ILLEGAL_INSTRUCTION: line %u: wgmma.mma_async: %s", in->line,
                      what);
}

/* Shared offset of element (mn, k) of the operand desc describes. */
static uint64_t desc_addr(uint64_t desc, unsigned mn, unsigned k, unsigned es, int mn_major) {
  uint64_t start = (desc & 0x3fffu) << 4;
  uint64_t lbo = ((desc >> 16) & 0x3fffu) << 4;
  uint64_t sbo = ((desc >> 32) & 0x3fffu) << 4;
  unsigned sw = (unsigned)(desc >> 62) & 3u;
  uint64_t W = sw == 1 ? 128 : sw == 2 ? 64 : sw == 3 ? 32 : 0;
  uint64_t a;
  if (!mn_major) {
    uint64_t kb = (uint64_t)k * es;
    if (W == 0)
      a = start + (mn % 8) * 16u + (mn / 8) * sbo + kb % 16 + (kb / 16) * lbo;
    else
      a = start + (mn % 8) * W + (mn / 8) * sbo + kb;
  } else {
    uint64_t mb = (uint64_t)mn * es;
    if (W == 0)
      a = start + mb % 16 + (mb / 16) * sbo + (k % 8) * 16u + (k / 8) * lbo;
    else
      a = start + mb % W + (mb / W) * lbo + (k % 8) * W + (k / 8) * sbo;
  }
  if (W)
    a ^= ((a >> 7) & (W / 16 - 1)) << 4;
  return a;
}

/* Reads an operand from shared memory: v[mn * K + k] for mn in
 * [mn0, mn0 + nmn). */
static int load_operand(gl_emu_block *b, const gl_ptx_insn *in, uint64_t desc, unsigned mn0,
                        unsigned nmn, unsigned K, unsigned type, int mn_major, int neg,
                        double *v) {
  unsigned es = type == GL_MMA_T_TF32 ? 4 : 2;
  uint64_t limit = b->L->shared_alloc;
  for (unsigned i = 0; i < nmn; i++)
    for (unsigned k = 0; k < K; k++) {
      uint64_t a = desc_addr(desc, mn0 + i, k, es, mn_major);
      if (a + es > limit) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "CUDA_ERROR_ILLEGAL_ADDRESS: descriptor 0x%016llx reaches shared offset "
                 "0x%llx, outside the block's %llu bytes",
                 (unsigned long long)desc, (unsigned long long)a, (unsigned long long)limit);
        return fail_w(b, in, msg);
      }
      uint64_t bits = 0;
      memcpy(&bits, b->shared + a, es); /* little-endian host */
      double x = gl_emu__mma_elem(bits, type);
      v[i * K + k] = neg ? -x : x;
    }
  return 0;
}

static uint64_t operand_value(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_operand *o) {
  if (o->kind == GL_PTX_O_IMM)
    return (uint64_t)o->imm;
  return gl_emu__row(b, w, o->reg)[0];
}

int gl_emu__exec_wgmma(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in) {
  gl_mma_info mi;
  gl_mma_info_get(in, &mi);
  if ((w->index | 3u) >= b->L->nwarps)
    return fail_w(b, in, "the block has no complete warpgroup (4 warps) for this warp");
  uint32_t regs[GL_MMA_MAX_REGS];
  unsigned nr = gl_emu__mma_reglist(in, regs, GL_MMA_MAX_REGS);
  if (nr != (unsigned)mi.nd + mi.na)
    return fail_w(b, in, "malformed instruction");
  unsigned N = mi.n, K = mi.k, wi = w->index % 4;
  /* descriptors and scale-d are warp-uniform: lane 0's */
  double Av[16 * 16], Bv[256 * 16];
  if (mi.flags & GL_MMA_F_A_REGS) {
    unsigned u = mi.atype == GL_MMA_T_TF32 ? 1 : 2, ne = 16 * K / 32;
    for (unsigned l = 0; l < GL_EMU_WARP; l++)
      for (unsigned i = 0; i < ne; i++) {
        unsigned bits = u == 1 ? 32 : 16, r = i / u, sh = (i % u) * bits;
        uint64_t v = (gl_emu__row(b, w, regs[mi.nd + r])[l] >> sh) &
                     (bits == 32 ? 0xffffffffull : 0xffffull);
        unsigned row = l / 4 + 8 * ((i / u) % 2);
        unsigned col = (l % 4) * u + i % u + 4 * u * (i / (2 * u));
        double x = gl_emu__mma_elem(v, mi.atype);
        Av[row * K + col] = (mi.flags & GL_MMA_F_NEG_A) ? -x : x;
      }
  } else if (load_operand(b, in, operand_value(b, w, &in->src[0]), 16 * wi, 16, K, mi.atype,
                          (mi.flags & GL_MMA_F_TRANS_A) != 0,
                          (mi.flags & GL_MMA_F_NEG_A) != 0, Av)) {
    return -1;
  }
  if (load_operand(b, in, operand_value(b, w, &in->src[1]), 0, N, K, mi.btype,
                   (mi.flags & GL_MMA_F_TRANS_B) != 0, (mi.flags & GL_MMA_F_NEG_B) != 0, Bv))
    return -1;
  int keep = operand_value(b, w, &in->src[2]) != 0;
  unsigned ne = N / 2; /* accumulator elements a lane */
  unsigned per = mi.dtype == GL_MMA_T_F32 ? 1 : 2;
  for (unsigned l = 0; l < GL_EMU_WARP; l++) {
    unsigned g = l / 4, t = l % 4;
    for (unsigned i = 0; i < ne; i++) {
      unsigned row = g + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * t + i % 2;
      uint64_t *dr = regs[i / per] != GL_PTX_NOREG ? gl_emu__row(b, w, regs[i / per]) : NULL;
      unsigned sh = (i % per) * 16;
      uint64_t old = dr ? dr[l] : 0;
      double s = 0;
      if (keep)
        s = gl_emu__mma_elem(per == 1 ? old : (old >> sh) & 0xffffu, mi.dtype);
      for (unsigned k = 0; k < K; k++)
        s += Av[row * K + k] * Bv[col * K + k];
      uint64_t bits = gl_emu__mma_round(s, mi.dtype);
      if (!dr)
        continue;
      if (per == 1)
        dr[l] = bits;
      else
        dr[l] = (old & ~(0xffffull << sh) & 0xffffffffull) | bits << sh;
    }
  }
  return 0;
}
