/*
 * exec_mma.h - what exec_mma.c and exec_wgmma.c share: the register list
 * of an mma/wgmma (mma.h's carriers), element conversions, and the wgmma
 * executor. Internal to the executor.
 */
#ifndef GL_EMU_EXEC_MMA_H
#define GL_EMU_EXEC_MMA_H

#include <stdint.h>

#include "emu/exec_internal.h"

/* Copies the register list carried after `in` (at most max) into regs;
 * returns how many. */
unsigned gl_emu__mma_reglist(const gl_ptx_insn *in, uint32_t *regs, unsigned max);

/* The value of one element (its bits, low-aligned) of GL_MMA_T_* type:
 * exact for every type (tf32: the low 13 mantissa bits dropped). */
double gl_emu__mma_elem(uint64_t bits, unsigned type);

/* x rounded to nearest in GL_MMA_T_F32 / F16 / F64 bits; NaN gives the
 * canonical NaN. */
uint64_t gl_emu__mma_round(double x, unsigned type);

/* wgmma.mma_async for one warp of its warpgroup (all 32 lanes). 0, or -1
 * after gl_emu__fail. */
int gl_emu__exec_wgmma(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in);

#endif /* GL_EMU_EXEC_MMA_H */
