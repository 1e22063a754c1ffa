/*
 * exec_mma.c - the warp-wide matrix instructions: ldmatrix, stmatrix,
 * movmatrix and mma.sync (encoding: mma.h). wgmma is in exec_wgmma.c.
 *
 * All are .sync.aligned: every lane of the warp must execute them together.
 * The executor keeps lanes in lockstep, so the lanes at this instruction
 * are the ones that reached it; anything short of all 32 (divergence, a
 * false guard in some lanes, a block of fewer threads) fails the launch as
 * an illegal instruction rather than guessing what the hardware would do.
 *
 * Fragment layouts are the PTX ISA's. With lane l, g = l / 4 (the "group")
 * and t = l % 4 (the thread in the group):
 *   C/D of m16n8 and m8n8, element i:  row g + 8 * (i / 2), col 2t + i % 2
 *   A (row-major M x K), element i, u = elements a 32-bit register holds
 *   (2 for f16/bf16, 4 for s8/u8, 1 for tf32 and f64), M16 = (M == 16):
 *     row g + 8 * ((i / u) % 2 if M16 else 0),
 *     col t*u + i % u + 4u * (i / (u * (M16 ? 2 : 1)))
 *   B (K x N, "col"), element i:  row t*u + i % u + 4u * (i / u), col g
 * Elements fill registers from the low bits; f64 takes one register each.
 *
 * Arithmetic (float types): every product of f16, bf16 or tf32 inputs is
 * exact in double, and the K products and C are summed in double in
 * k order, then rounded once to the destination (f32: round to nearest;
 * f16 accumulators: to nearest f16). The result is the correctly rounded
 * exact sum except when the double sum itself rounded (terms spanning more
 * than ~29 bits of magnitude), so it is within 1 ulp of the exactly rounded
 * value. GPUs align and truncate the products inside the tensor core, so a
 * GPU's result may differ from this one by a few f32 ulps of the largest
 * term: on an H200 (tests/emu/mma/gpu) every f16, bf16 and tf32 result was
 * within 4 * 2^-24 of |c| + sum |a_k * b_k| of the emulator's (about half
 * of the f16/bf16 results, a sixth of the tf32 ones, bit-identical), and
 * every f16-accumulator and f64 result identical. tf32 inputs are f32 registers whose low
 * 13 mantissa bits are ignored, as the hardware does. f64 (m8n8k4) is a
 * chain of fused multiply-adds in k order. Integer mma is exact (s32
 * wraps, or clamps with .satfinite). A NaN result is the canonical NaN.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emu/alu_internal.h"
#include "emu/exec_internal.h"
#include "emu/exec_mma.h"
#include "emu/mma.h"

static int fail_matrix(gl_emu_block *b, const gl_ptx_insn *in, const char *what) {
  return gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                      "CUDA_ERROR_ILLEGAL_INSTRUCTION: line %u: %s", in->line, what);
}

unsigned gl_emu__mma_reglist(const gl_ptx_insn *in, uint32_t *regs, unsigned max) {
  unsigned n = 0;
  for (unsigned c = 1; c <= in->mode; c++) {
    const gl_ptx_insn *car = in + c;
    for (unsigned s = 0; s < 6; s++) {
      const gl_ptx_operand *o = s < 2 ? &car->dst[s] : &car->src[s - 2];
      if (o->kind != GL_PTX_O_VEC)
        continue;
      for (unsigned k = 0; k < o->vec_n && n < max; k++)
        regs[n++] = o->vec[k];
    }
  }
  return n;
}

double gl_emu__mma_elem(uint64_t bits, unsigned type) {
  switch (type) {
  case GL_MMA_T_F16: return (double)gl_emu__h2f((uint16_t)bits);
  case GL_MMA_T_BF16: return (double)gl_emu__f32((uint32_t)(bits & 0xffffu) << 16);
  case GL_MMA_T_TF32: return (double)gl_emu__f32((uint32_t)bits & 0xffffe000u);
  case GL_MMA_T_F32: return (double)gl_emu__f32((uint32_t)bits);
  case GL_MMA_T_F64: {
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
  }
  case GL_MMA_T_S8: return (double)(int8_t)bits;
  case GL_MMA_T_U8: return (double)(uint8_t)bits;
  default: return (double)(int32_t)bits;
  }
}

uint64_t gl_emu__mma_round(double x, unsigned type) {
  if (type == GL_MMA_T_F16)
    return isnan(x) ? 0x7fffu : gl_emu__from_f64(x, &gl_emu__fmt_f16, GL_PTX_RND_RN, 0x7fffu);
  if (type == GL_MMA_T_F64) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
  }
  if (isnan(x))
    return 0x7fffffffu;
  float f = (float)x;
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* Element i of a fragment: its register index and bit offset. */
static inline void elem_pos(unsigned type, unsigned i, unsigned *reg, unsigned *shift) {
  unsigned bits = gl_mma_type_bits(type);
  unsigned per = bits >= 32 ? 1 : 32 / bits;
  *reg = i / per;
  *shift = (i % per) * bits;
}

static inline uint64_t elem_mask(unsigned type) {
  unsigned bits = gl_mma_type_bits(type);
  return bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
}

/* ---- mma.sync ----------------------------------------------------------- */

static unsigned unit_of(unsigned type) {
  unsigned bits = gl_mma_type_bits(type);
  return bits >= 32 ? 1 : 32 / bits;
}

static int exec_mma(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in) {
  gl_mma_info mi;
  gl_mma_info_get(in, &mi);
  uint32_t regs[GL_MMA_MAX_REGS];
  unsigned nr = gl_emu__mma_reglist(in, regs, GL_MMA_MAX_REGS);
  if (nr != (unsigned)mi.nd + mi.na + mi.nb + mi.nc)
    return fail_matrix(b, in, "malformed mma");
  const uint32_t *rd = regs, *ra = rd + mi.nd, *rb = ra + mi.na, *rc = rb + mi.nb;
  unsigned M = mi.m, N = mi.n, K = mi.k;
  double A[16][32], B[32][8], C[16][8];
  int64_t IA[16][32], IB[32][8], IC[16][8];
  int integer = mi.dtype == GL_MMA_T_S32;
  unsigned ua = unit_of(mi.atype), ub = unit_of(mi.btype), mdup = M == 16 ? 2 : 1;
  unsigned ea = M * K / 32, eb = K * N / 32, ec = M * N / 32;
  for (unsigned l = 0; l < GL_EMU_WARP; l++) {
    unsigned g = l / 4, t = l % 4;
    for (unsigned i = 0; i < ea; i++) {
      unsigned r, sh;
      elem_pos(mi.atype, i, &r, &sh);
      uint64_t v = (gl_emu__row(b, w, ra[r])[l] >> sh) & elem_mask(mi.atype);
      unsigned row = g + 8 * ((i / ua) % mdup);
      unsigned col = t * ua + i % ua + 4 * ua * (i / (ua * mdup));
      A[row][col] = gl_emu__mma_elem(v, mi.atype);
      if (integer) /* s8/u8: exact */
        IA[row][col] = (int64_t)A[row][col];
    }
    for (unsigned i = 0; i < eb; i++) {
      unsigned r, sh;
      elem_pos(mi.btype, i, &r, &sh);
      uint64_t v = (gl_emu__row(b, w, rb[r])[l] >> sh) & elem_mask(mi.btype);
      unsigned row = t * ub + i % ub + 4 * ub * (i / ub);
      B[row][g] = gl_emu__mma_elem(v, mi.btype);
      if (integer)
        IB[row][g] = (int64_t)B[row][g];
    }
    for (unsigned i = 0; i < ec; i++) {
      unsigned r, sh;
      elem_pos(mi.ctype, i, &r, &sh);
      uint64_t v = (gl_emu__row(b, w, rc[r])[l] >> sh) & elem_mask(mi.ctype);
      unsigned row = g + 8 * (i / 2), col = 2 * t + i % 2;
      C[row][col] = gl_emu__mma_elem(v, mi.ctype);
      IC[row][col] = (int64_t)(int32_t)v;
    }
  }
  /* D: rows of lanes; all sources were read above, so D may alias them */
  uint64_t out[GL_EMU_WARP][8];
  memset(out, 0, sizeof out);
  for (unsigned l = 0; l < GL_EMU_WARP; l++) {
    unsigned g = l / 4, t = l % 4;
    for (unsigned i = 0; i < ec; i++) {
      unsigned row = g + 8 * (i / 2), col = 2 * t + i % 2;
      uint64_t bits;
      if (integer) {
        int64_t s = IC[row][col];
        for (unsigned k = 0; k < K; k++)
          s += IA[row][k] * IB[k][col];
        if (mi.flags & GL_MMA_F_SATFINITE)
          s = s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : s;
        bits = (uint32_t)(int32_t)(uint32_t)(uint64_t)s;
      } else if (mi.dtype == GL_MMA_T_F64) {
        double s = C[row][col];
        for (unsigned k = 0; k < K; k++)
          s = fma(A[row][k], B[k][col], s);
        bits = gl_emu__mma_round(s, GL_MMA_T_F64);
      } else {
        double s = C[row][col];
        for (unsigned k = 0; k < K; k++)
          s += A[row][k] * B[k][col];
        bits = gl_emu__mma_round(s, mi.dtype);
      }
      unsigned r, sh;
      elem_pos(mi.dtype, i, &r, &sh);
      out[l][r] |= bits << sh;
    }
  }
  for (unsigned r = 0; r < mi.nd; r++) {
    if (rd[r] == GL_PTX_NOREG)
      continue;
    uint64_t *row = gl_emu__row(b, w, rd[r]);
    for (unsigned l = 0; l < GL_EMU_WARP; l++)
      row[l] = out[l][r];
  }
  return 0;
}

/* ---- ldmatrix / stmatrix / movmatrix ------------------------------------ */

/* The row addresses: lane 8j + r gives row r of matrix j. */
static int row_ptrs(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, int write,
                    uint8_t *rows[32]) {
  const gl_ptx_operand *a = &in->src[0];
  unsigned n = 8u * in->vec;
  for (unsigned l = 0; l < n; l++) {
    uint64_t base = a->reg != GL_PTX_NOREG ? gl_emu__row(b, w, a->reg)[l] : 0;
    rows[l] = gl_emu__mem_ptr(b, w, l, in, in->space, base + (uint64_t)a->imm, 16, write);
    if (!rows[l])
      return -1;
  }
  return 0;
}

static inline uint16_t get16(const uint8_t *p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return v;
}

static int exec_ldmatrix(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in) {
  uint8_t *rows[32];
  if (row_ptrs(b, w, in, 0, rows))
    return -1;
  uint64_t val[4][GL_EMU_WARP];
  for (unsigned j = 0; j < in->vec; j++)
    for (unsigned l = 0; l < GL_EMU_WARP; l++) {
      unsigned g = l / 4, t = l % 4;
      uint16_t lo, hi;
      if (in->mode) { /* .trans: column g of rows 2t, 2t+1 */
        lo = get16(rows[8 * j + 2 * t] + 2 * g);
        hi = get16(rows[8 * j + 2 * t + 1] + 2 * g);
      } else {
        lo = get16(rows[8 * j + g] + 4 * t);
        hi = get16(rows[8 * j + g] + 4 * t + 2);
      }
      val[j][l] = (uint64_t)lo | (uint64_t)hi << 16;
    }
  for (unsigned j = 0; j < in->vec; j++) {
    if (in->dst[0].vec[j] == GL_PTX_NOREG)
      continue;
    uint64_t *d = gl_emu__row(b, w, in->dst[0].vec[j]);
    memcpy(d, val[j], sizeof val[j]);
  }
  return 0;
}

static int exec_stmatrix(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in) {
  uint8_t *rows[32];
  if (row_ptrs(b, w, in, 1, rows))
    return -1;
  for (unsigned j = 0; j < in->vec; j++) {
    uint32_t r = in->src[1].vec[j];
    const uint64_t *s = r != GL_PTX_NOREG ? gl_emu__row(b, w, r) : b->scratch[4];
    for (unsigned l = 0; l < GL_EMU_WARP; l++) {
      unsigned g = l / 4, t = l % 4;
      uint16_t lo = (uint16_t)s[l], hi = (uint16_t)(s[l] >> 16);
      if (in->mode) {
        memcpy(rows[8 * j + 2 * t] + 2 * g, &lo, 2);
        memcpy(rows[8 * j + 2 * t + 1] + 2 * g, &hi, 2);
      } else {
        memcpy(rows[8 * j + g] + 4 * t, &lo, 2);
        memcpy(rows[8 * j + g] + 4 * t + 2, &hi, 2);
      }
    }
  }
  b->events++;
  return 0;
}

static int exec_movmatrix(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in) {
  const uint64_t *s = gl_emu__row(b, w, in->src[0].reg);
  uint64_t val[GL_EMU_WARP];
  for (unsigned l = 0; l < GL_EMU_WARP; l++) {
    unsigned g = l / 4, t = l % 4;
    uint64_t x = 0;
    for (unsigned e = 0; e < 2; e++) {
      /* element (g, 2t+e) of the transpose is (2t+e, g) of the source,
       * which lane (2t+e)*4 + g/2 holds in half g%2 */
      unsigned src = (2 * t + e) * 4 + g / 2;
      x |= ((s[src] >> (16 * (g % 2))) & 0xffffu) << (16 * e);
    }
    val[l] = x;
  }
  if (in->dst[0].reg != GL_PTX_NOREG)
    memcpy(gl_emu__row(b, w, in->dst[0].reg), val, sizeof val);
  return 0;
}

int gl_emu__exec_matrix(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m) {
  if (m != UINT32_MAX) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "a .sync.aligned matrix instruction needs all 32 lanes of the warp together "
             "(lanes 0x%08x executed it)", m);
    return fail_matrix(b, in, msg);
  }
  switch (in->op) {
  case GL_PTX_OP_MMA: return exec_mma(b, w, in);
  case GL_PTX_OP_WGMMA: return gl_emu__exec_wgmma(b, w, in);
  case GL_PTX_OP_LDMATRIX: return exec_ldmatrix(b, w, in);
  case GL_PTX_OP_STMATRIX: return exec_stmatrix(b, w, in);
  case GL_PTX_OP_MOVMATRIX: return exec_movmatrix(b, w, in);
  default: return fail_matrix(b, in, "unknown matrix instruction");
  }
}
