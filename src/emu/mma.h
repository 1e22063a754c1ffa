/*
 * mma.h - how the matrix instructions (mma, wgmma.mma_async, ldmatrix,
 * stmatrix, movmatrix) are encoded in the IR: the contract between their
 * decoder (ptx_insn_mma.c) and their executor (exec_mma.c, exec_wgmma.c).
 *
 * An mma or wgmma names more registers than a gl_ptx_insn holds (up to 128
 * accumulators), so its decoder emits the main instruction followed by
 * `mode` carrier instructions (GL_PTX_OP_RLIST) that hold the register
 * list: 24 registers each, in dst[0], dst[1], src[0..3] (VEC operands of up
 * to 4, in that order). The list is D's registers, then A's (when A is in
 * registers), B's (mma), C's (mma). Carriers are never executed: the main
 * instruction moves the warp past them (a label can only name the main
 * instruction, which comes first). Register renumbering (device.c) sees
 * them as ordinary vector operands.
 *
 * The main instruction's dst[0].imm and dst[1].imm (kind GL_PTX_O_NONE)
 * carry a gl_mma_info (below). wgmma.mma_async: src[0] A's descriptor (REG
 * or IMM; NONE when A is in registers), src[1] B's descriptor, src[2]
 * scale-d (predicate REG or IMM).
 * ldmatrix: dst[0] VEC, src[0] ADDR; stmatrix: src[0] ADDR, src[1] VEC;
 * both: vec = matrices (1, 2, 4), mode = 1 for .trans. movmatrix: dst[0],
 * src[0] REGs. They have no gl_mma_info and no carriers.
 */
#ifndef GL_EMU_MMA_H
#define GL_EMU_MMA_H

#include <stdint.h>
#include <string.h>

#include "emu/ptx_ir.h"

/* Element types of matrix operands. */
enum { GL_MMA_T_NONE = 0, GL_MMA_T_F16, GL_MMA_T_BF16, GL_MMA_T_TF32, GL_MMA_T_F32,
       GL_MMA_T_F64, GL_MMA_T_S8, GL_MMA_T_U8, GL_MMA_T_S32 };

/* gl_mma_info.flags */
#define GL_MMA_F_SATFINITE 0x01u /* mma integer: clamp to s32 */
#define GL_MMA_F_TRANS 0x02u     /* ldmatrix/stmatrix .trans */
#define GL_MMA_F_A_REGS 0x04u    /* wgmma: A from registers */
#define GL_MMA_F_TRANS_A 0x08u   /* wgmma imm-trans-a = 1: A is M-major */
#define GL_MMA_F_TRANS_B 0x10u   /* wgmma imm-trans-b = 1: B is N-major */
#define GL_MMA_F_NEG_A 0x20u     /* wgmma imm-scale-a = -1 */
#define GL_MMA_F_NEG_B 0x40u     /* wgmma imm-scale-b = -1 */

#define GL_MMA_REGS_PER_CARRIER 24u
#define GL_MMA_MAX_REGS 160u

/* Shape, types and register counts of an mma or wgmma (m = 64). */
typedef struct gl_mma_info {
  uint8_t m, k;
  uint16_t n;
  uint8_t atype, btype, ctype, dtype; /* GL_MMA_T_* */
  uint8_t flags;                      /* GL_MMA_F_* */
  uint8_t nd, na, nb, nc;             /* registers in the list, per operand */
  uint8_t pad[3];
} gl_mma_info;

_Static_assert(sizeof(gl_mma_info) == 16, "gl_mma_info fits two immediates");

/* Stores / loads info in the main instruction's dst[0].imm, dst[1].imm. */
static inline void gl_mma_info_put(gl_ptx_insn *in, const gl_mma_info *mi) {
  memcpy(&in->dst[0].imm, mi, 8);
  memcpy(&in->dst[1].imm, (const uint8_t *)mi + 8, 8);
}
static inline void gl_mma_info_get(const gl_ptx_insn *in, gl_mma_info *mi) {
  memcpy(mi, &in->dst[0].imm, 8);
  memcpy((uint8_t *)mi + 8, &in->dst[1].imm, 8);
}

/* An opcode this header's encoding covers. */
static inline int gl_mma_is_matrix_op(unsigned op) {
  return op == GL_PTX_OP_MMA || op == GL_PTX_OP_WGMMA || op == GL_PTX_OP_LDMATRIX ||
         op == GL_PTX_OP_STMATRIX || op == GL_PTX_OP_MOVMATRIX;
}

/* Instructions from `in` to the one after it and its carriers. */
static inline unsigned gl_mma_next(const gl_ptx_insn *in) {
  return 1u + (in->op == GL_PTX_OP_MMA || in->op == GL_PTX_OP_WGMMA ? in->mode : 0u);
}

/* Bits of one element of type t in a register (tf32: a 32-bit slot). */
static inline unsigned gl_mma_type_bits(unsigned t) {
  switch (t) {
  case GL_MMA_T_F16:
  case GL_MMA_T_BF16: return 16;
  case GL_MMA_T_S8:
  case GL_MMA_T_U8: return 8;
  case GL_MMA_T_F64: return 64;
  default: return 32;
  }
}

#endif /* GL_EMU_MMA_H */
