/*
 * alu.h - the emulated device's arithmetic: every ALU opcode of ptx_ir.h
 * (GL_PTX_OP_MOV .. GL_PTX_OP_SLCT), applied lane-wise to a warp.
 *
 * The executor resolves operands to rows of 32 lane values before calling:
 * a register's row in the warp's register file, or a scratch row holding a
 * broadcast immediate or special register, with '!' on predicate operands
 * already applied. The ALU has no other state and touches no memory.
 *
 * Semantics follow the PTX ISA: integer wrap-around, .sat clamping, .hi
 * and .wide products, IEEE 754 results for .rn/.rz/.rm/.rp float ops
 * (fma and mad.f32/f64 fused, one rounding), .ftz flushing subnormal
 * inputs and results to sign-preserving zero for f32, PTX's canonical NaN
 * (0x7fffffff for f32) from arithmetic, cvt's float-to-int saturation
 * (NaN -> 0) and .rni/.rzi/.rmi/.rpi. The .approx forms (rcp, sqrt, rsqrt,
 * sin, cos, lg2, ex2, tanh, div.approx/full) are computed in double and
 * rounded, which is within the ulp bounds the PTX ISA documents for them
 * (the bound for each is listed in alu.c).
 */
#ifndef GL_EMU_ALU_H
#define GL_EMU_ALU_H

#include <stdint.h>

#include "emu/ptx_ir.h"

#define GL_EMU_WARP 32

/* Runs ALU instruction `in` for every lane whose bit is set in `mask`.
 * src[i] points at 32 values for in->src[i] (i < in->nsrc); dst[i] at the
 * 32 destination slots for in->dst[i] (i < in->ndst; dst[1] for a second
 * predicate or the carry); cc points at the carry register's row (used
 * with GL_PTX_F_CARRY_IN). dst rows may alias src rows. Lanes not in mask
 * are left untouched. Returns 0, or -1 when the opcode/type combination is
 * not an ALU operation it knows (the parser should have refused it). */
int gl_emu_alu_exec(const gl_ptx_insn *in, uint64_t *const dst[2],
                    const uint64_t *const src[4], const uint64_t *cc, uint32_t mask);

/* Scalar helpers shared with the executor (atomics on f16/f32/f64). */
uint16_t gl_emu_f32_to_f16_rn(float f);
float gl_emu_f16_to_f32(uint16_t h);

#endif /* GL_EMU_ALU_H */
