/*
 * alu.c - gl_emu_alu_exec: the one entry point of the emulated device's
 * arithmetic. It looks at the opcode and type once per warp instruction and
 * hands the whole warp to the file that knows that kind of arithmetic:
 *
 *   alu_int.c    integers, bits, predicates, mov/selp/slct (any type)
 *   alu_float.c  f32 and f64 arithmetic, compares and approximations
 *   alu_half.c   f16, f16x2, bf16, bf16x2
 *   alu_cvt.c    cvt between every pair of scalar types
 *   alu_round.c  exact rounding to f16/bf16/f32/f64 (shared by the above)
 *
 * Each of those switches once more on the opcode, then runs one tight loop
 * over the lanes of the mask, so no lane pays for a per-lane opcode switch.
 *
 * Choices where PTX leaves results unspecified (tests/unit/test_emu_alu.c
 * checks each):
 *   - div.u by zero gives all ones, div.s by zero gives -1; rem by zero
 *     gives the dividend (what the GPU's quotient/remainder identity gives
 *     with an all-ones quotient for unsigned). INT_MIN / -1 wraps to
 *     INT_MIN, INT_MIN % -1 is 0 (the host never traps).
 *   - f64 results that are NaN keep the first NaN input's payload
 *     (quieted), fma/mad looking at c first; NaN from non-NaN inputs is
 *     0xfff8000000000000; neg and abs of an f64 NaN give it quieted,
 *     sign unchanged. f32
 *     results are PTX's canonical 0x7fffffff, except cvt.f32.f64 of a
 *     NaN, which keeps its sign and the top of its payload (both as
 *     measured on an H200); f16/bf16 results 0x7fff.
 *   - abs/neg of non-NaN floats act on the sign bit only; abs/neg of an
 *     f32 NaN give 0x7fffffff.
 *
 * Error bounds of the .approx/.full forms, all computed in double and
 * rounded once to the destination (so normally correctly rounded):
 *   op                     ours (f32 result)           PTX documents
 *   rcp.approx.f32         <= 0.5 ulp + 2^-29 ulp      1 ulp
 *   sqrt.approx.f32        correctly rounded           2^-23 rel (~1 ulp)
 *   rsqrt.approx.f32       <= 0.5 ulp + 2^-28 ulp      2^-22.9 rel
 *   div.approx.f32         <= 0.5 ulp + 2^-29 ulp      2 ulp (|b| <= 2^126;
 *                          (|b| > 2^126: 0, or NaN for a = inf, as PTX)
 *   div.full.f32           <= 0.5 ulp + 2^-29 ulp      2 ulp
 *   sin/cos.approx.f32     <= 0.5 ulp + 2^-29 ulp      2^-20.5 abs in [-pi,pi]
 *   lg2.approx.f32         <= 0.5 ulp + 2^-29 ulp      2^-22 abs/rel
 *   ex2.approx.f32         <= 0.5 ulp + 2^-29 ulp      2 ulp
 *   tanh.approx.f32        <= 0.5 ulp + 2^-29 ulp      2^-10.987 rel
 *   rcp.approx.ftz.f64     correctly rounded (ftz)     a coarse approximation
 *   rsqrt.approx.f64       <= 1 ulp (two roundings)    a coarse approximation
 *   ex2/tanh.approx f16/bf16  <= 0.5 ulp + 2^-40 ulp   ~1-2 ulp
 * (the host libm's exp2/log2/sin/cos/tanh in double are within 1 ulp of
 * double, which is 2^-29 of an f32 ulp). These results match a GPU's
 * bit for bit only where both are correctly rounded; kernels compared bit
 * for bit must not depend on .approx results.
 */
#include "emu/alu_internal.h"

#include <fenv.h>

int gl_emu__rnd_enter(unsigned rnd) {
  int mode;
  switch (rnd) {
  case GL_PTX_RND_RZ:
  case GL_PTX_RND_RZI:
    mode = FE_TOWARDZERO;
    break;
  case GL_PTX_RND_RM:
  case GL_PTX_RND_RMI:
    mode = FE_DOWNWARD;
    break;
  case GL_PTX_RND_RP:
  case GL_PTX_RND_RPI:
    mode = FE_UPWARD;
    break;
  default:
    return -1;
  }
  int saved = fegetround();
  fesetround(mode);
  return saved;
}

void gl_emu__rnd_leave(int saved) {
  if (saved >= 0)
    fesetround(saved);
}

static int is_half_type(unsigned t) {
  return t == GL_PTX_T_F16 || t == GL_PTX_T_F16X2 || t == GL_PTX_T_BF16 ||
         t == GL_PTX_T_BF16X2;
}

int gl_emu_alu_exec(const gl_ptx_insn *in, uint64_t *const dst[2],
                    const uint64_t *const src[4], const uint64_t *cc, uint32_t mask) {
  if (in->op == GL_PTX_OP_NOP || in->op > GL_PTX_OP_ALU_LAST)
    return -1;
  unsigned t = in->type;
  switch (in->op) {
  case GL_PTX_OP_CVT:
    return gl_emu__alu_cvt(in, dst, src, cc, mask);
  case GL_PTX_OP_MOV:
  case GL_PTX_OP_SELP:
  case GL_PTX_OP_SLCT:
    return gl_emu__alu_int(in, dst, src, cc, mask);
  case GL_PTX_OP_SET:
    t = in->type2; /* the compared type */
    break;
  default:
    break;
  }
  if (t == GL_PTX_T_F32 || t == GL_PTX_T_F64)
    return gl_emu__alu_float(in, dst, src, cc, mask);
  if (is_half_type(t))
    return gl_emu__alu_half(in, dst, src, cc, mask);
  return gl_emu__alu_int(in, dst, src, cc, mask);
}

static inline uint64_t boolop(unsigned op, uint64_t r, uint64_t c) {
  switch (op) {
  case GL_PTX_BOOL_AND:
    return r & c;
  case GL_PTX_BOOL_OR:
    return r | c;
  case GL_PTX_BOOL_XOR:
    return r ^ c;
  default:
    return r;
  }
}

int gl_emu__write_cmp(const gl_ptx_insn *in, uint64_t *const dst[2],
                      const uint64_t *const src[4], uint32_t mask, uint32_t rbits) {
  const unsigned bop = in->boolop;
  const uint64_t *c = bop && in->nsrc > 2 ? src[2] : NULL;
  if (bop && !c)
    return -1;
  if (in->op == GL_PTX_OP_SETP) {
    uint64_t *d = dst[0], *q = in->ndst > 1 ? dst[1] : NULL;
    if (!bop && !q) {
      GL_EMU__LANES(mask, l) { d[l] = (rbits >> l) & 1u; }
      return 0;
    }
    GL_EMU__LANES(mask, l) {
      uint64_t r = (rbits >> l) & 1u, cv = bop ? (c[l] != 0) : 0;
      if (d)
        d[l] = boolop(bop, r, cv);
      if (q)
        q[l] = boolop(bop, r ^ 1u, cv);
    }
    return 0;
  }
  uint64_t one;
  switch (in->type) {
  case GL_PTX_T_U32:
  case GL_PTX_T_B32:
    one = 0xffffffffull;
    break;
  case GL_PTX_T_S32:
    one = UINT64_MAX;
    break;
  case GL_PTX_T_F32:
    one = 0x3f800000ull;
    break;
  default:
    return -1;
  }
  uint64_t *d = dst[0];
  GL_EMU__LANES(mask, l) {
    uint64_t r = (rbits >> l) & 1u;
    if (bop)
      r = boolop(bop, r, c[l] != 0);
    d[l] = r ? one : 0;
  }
  return 0;
}
