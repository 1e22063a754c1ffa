/*
 * test_emu_alu.c - unit tests of the emulated device's ALU
 * (src/emu/alu*.c, API in src/emu/alu.h).
 *
 * Most tests are tables: one hand-built PTX instruction, its operands and
 * the bits the PTX ISA says it must produce (worked out by hand from the
 * ISA's definitions, never by running the code under test). Every row is
 * run with the operands broadcast to all 32 lanes but a mask of two
 * lanes; both must hold the expected value and every other lane its
 * sentinel. Further tests feed different values to every lane (and check
 * each lane against a one-lane run), alias destination and source rows,
 * check that a directed rounding mode never leaks out, compare the f16
 * conversions exhaustively against their definitions, and check that
 * unknown combinations are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fenv.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "emu/alu.h"

/* Table rows leave their trailing fields (second destination, carry in)
 * to default to zero. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define SENTINEL 0x5a5a5a5a5a5a5a5aull
#define TEST_MASK ((1u << 7) | (1u << 20))

/* ========================================================================
 * Helpers
 * ====================================================================== */

static uint64_t F(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static uint64_t D(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}
static uint64_t S(int64_t v) { /* a signed value as its sign-extended slot */
  return (uint64_t)v;
}

/* One table row. */
typedef struct tcase {
  const char *name;
  uint16_t op;
  uint8_t t, t2, rnd, mode, bop, ns;
  uint16_t fl;
  uint64_t a, b, c, e;
  uint64_t want;
  int hq;          /* has a second destination (pred q or carry out) */
  uint64_t want_q;
  uint64_t cin;    /* carry-in row value */
} tcase;

static gl_ptx_insn mk(const tcase *c) {
  gl_ptx_insn in;
  memset(&in, 0, sizeof in);
  in.op = c->op;
  in.type = c->t;
  in.type2 = c->t2;
  in.rnd = c->rnd;
  in.mode = c->mode;
  in.boolop = c->bop;
  in.flags = c->fl;
  in.nsrc = c->ns;
  in.ndst = c->hq ? 2 : 1;
  in.guard = GL_PTX_NOREG;
  return in;
}

typedef struct rows {
  uint64_t d[2][GL_EMU_WARP];
  uint64_t s[4][GL_EMU_WARP];
  uint64_t cc[GL_EMU_WARP];
} rows;

static int exec_rows(const gl_ptx_insn *in, rows *r, uint32_t mask) {
  uint64_t *const dst[2] = {r->d[0], r->d[1]};
  const uint64_t *const src[4] = {r->s[0], r->s[1], r->s[2], r->s[3]};
  return gl_emu_alu_exec(in, dst, src, r->cc, mask);
}

static int run_table(const tcase *cs, size_t n) {
  int failures = 0;
  for (size_t i = 0; i < n; i++) {
    const tcase *c = &cs[i];
    gl_ptx_insn in = mk(c);
    rows r;
    for (unsigned l = 0; l < GL_EMU_WARP; l++) {
      r.d[0][l] = r.d[1][l] = SENTINEL;
      r.s[0][l] = c->a;
      r.s[1][l] = c->b;
      r.s[2][l] = c->c;
      r.s[3][l] = c->e;
      r.cc[l] = c->cin;
    }
    int rc = exec_rows(&in, &r, TEST_MASK);
    if (rc != 0) {
      print_error("FAIL %s: returned %d\n", c->name, rc);
      failures++;
      continue;
    }
    for (unsigned l = 0; l < GL_EMU_WARP; l++) {
      int on = (TEST_MASK >> l) & 1u;
      uint64_t w0 = on ? c->want : SENTINEL;
      uint64_t w1 = on && c->hq ? c->want_q : SENTINEL;
      if (r.d[0][l] != w0 || r.d[1][l] != w1) {
        print_error("FAIL %s lane %u: got %#llx/%#llx want %#llx/%#llx\n", c->name, l,
                    (unsigned long long)r.d[0][l], (unsigned long long)r.d[1][l],
                    (unsigned long long)w0, (unsigned long long)w1);
        failures++;
        break;
      }
    }
  }
  return failures;
}

#define RUN(tab) assert_int_equal(run_table(tab, sizeof tab / sizeof tab[0]), 0)

/* Short names for the table rows. */
#define T(x) GL_PTX_T_##x
#define OP(x) GL_PTX_OP_##x
#define R(x) GL_PTX_RND_##x
#define CMP(x) GL_PTX_CMP_##x
#define FL(x) GL_PTX_F_##x

/* ========================================================================
 * Integer arithmetic
 * ====================================================================== */

static void test_int_add_sub(void **state) {
  (void)state;
  const tcase t[] = {
      {"add.s32 wraps", OP(ADD), T(S32), 0, 0, 0, 0, 2, 0, 0x7fffffff, 1, 0, 0, S(INT32_MIN)},
      {"add.u32 wraps", OP(ADD), T(U32), 0, 0, 0, 0, 2, 0, 0xffffffff, 1, 0, 0, 0},
      {"add.u32 ignores high bits", OP(ADD), T(U32), 0, 0, 0, 0, 2, 0, 0x1700000001ull, 2, 0, 0, 3},
      {"add.s16 sign-extends", OP(ADD), T(S16), 0, 0, 0, 0, 2, 0, 0x7fff, 1, 0, 0, S(-32768)},
      {"add.u64", OP(ADD), T(U64), 0, 0, 0, 0, 2, 0, UINT64_MAX, 2, 0, 0, 1},
      {"sub.u16", OP(SUB), T(U16), 0, 0, 0, 0, 2, 0, 0, 1, 0, 0, 0xffff},
      {"sub.s64", OP(SUB), T(S64), 0, 0, 0, 0, 2, 0, S(INT64_MIN), 1, 0, 0, S(INT64_MAX)},
      {"add.sat.s32 high", OP(ADD), T(S32), 0, 0, 0, 0, 2, FL(SAT), 0x7fffffff, 1, 0, 0, 0x7fffffff},
      {"add.sat.s32 low", OP(ADD), T(S32), 0, 0, 0, 0, 2, FL(SAT), S(INT32_MIN), S(-1), 0, 0, S(INT32_MIN)},
      {"sub.sat.s32", OP(SUB), T(S32), 0, 0, 0, 0, 2, FL(SAT), S(-2), 0x7fffffff, 0, 0, S(INT32_MIN)},
      {"add.sat.s32 in range", OP(ADD), T(S32), 0, 0, 0, 0, 2, FL(SAT), S(-2), 5, 0, 0, 3},
      /* carries: add.cc writes CF, addc reads it; sub.cc/subc a borrow */
      {"add.cc.u32", OP(ADD), T(U32), 0, 0, 0, 0, 2, FL(CC), 0xffffffff, 1, 0, 0, 0, 1, 1},
      {"add.cc.u32 no carry", OP(ADD), T(U32), 0, 0, 0, 0, 2, FL(CC), 5, 6, 0, 0, 11, 1, 0},
      {"addc.u32", OP(ADD), T(U32), 0, 0, 0, 0, 2, FL(CARRY_IN), 1, 1, 0, 0, 3, 0, 0, 1},
      {"addc.cc.u32", OP(ADD), T(U32), 0, 0, 0, 0, 2, FL(CARRY_IN) | FL(CC), 0xffffffff, 0, 0, 0, 0, 1, 1, 1},
      {"add.cc.u64", OP(ADD), T(U64), 0, 0, 0, 0, 2, FL(CC), UINT64_MAX, 1, 0, 0, 0, 1, 1},
      {"addc.cc.s64", OP(ADD), T(S64), 0, 0, 0, 0, 2, FL(CARRY_IN) | FL(CC), UINT64_MAX, UINT64_MAX, 0, 0, UINT64_MAX, 1, 1, 1},
      {"sub.cc.u32 borrow", OP(SUB), T(U32), 0, 0, 0, 0, 2, FL(CC), 0, 1, 0, 0, 0xffffffff, 1, 1},
      {"sub.cc.u32 equal", OP(SUB), T(U32), 0, 0, 0, 0, 2, FL(CC), 5, 5, 0, 0, 0, 1, 0},
      {"subc.cc.u32 equal", OP(SUB), T(U32), 0, 0, 0, 0, 2, FL(CARRY_IN) | FL(CC), 5, 4, 0, 0, 0, 1, 0, 1},
      {"sub.cc.u32 none", OP(SUB), T(U32), 0, 0, 0, 0, 2, FL(CC), 5, 1, 0, 0, 4, 1, 0},
      {"subc.u32", OP(SUB), T(U32), 0, 0, 0, 0, 2, FL(CARRY_IN), 5, 2, 0, 0, 2, 0, 0, 1},
      {"subc.cc.u32 borrow", OP(SUB), T(U32), 0, 0, 0, 0, 2, FL(CARRY_IN) | FL(CC), 2, 2, 0, 0, 0xffffffff, 1, 1, 1},
      {"subc.cc.s32 sign", OP(SUB), T(S32), 0, 0, 0, 0, 2, FL(CARRY_IN) | FL(CC), 0, 0, 0, 0, S(-1), 1, 1, 1},
  };
  RUN(t);
}

static void test_int_mul_mad(void **state) {
  (void)state;
  const uint8_t LO = GL_PTX_MUL_LO, HI = GL_PTX_MUL_HI, WIDE = GL_PTX_MUL_WIDE;
  const tcase t[] = {
      {"mul.lo.s32", OP(MUL), T(S32), 0, 0, LO, 0, 2, 0, 0x10000, 0x10000, 0, 0, 0},
      {"mul.lo.s32 neg", OP(MUL), T(S32), 0, 0, LO, 0, 2, 0, S(-3), 7, 0, 0, S(-21)},
      {"mul.lo.u16", OP(MUL), T(U16), 0, 0, LO, 0, 2, 0, 0x100, 0x101, 0, 0, 0x100},
      {"mul.hi.u32", OP(MUL), T(U32), 0, 0, HI, 0, 2, 0, 0xffffffff, 0xffffffff, 0, 0, 0xfffffffe},
      {"mul.hi.s32 -1*-1", OP(MUL), T(S32), 0, 0, HI, 0, 2, 0, S(-1), S(-1), 0, 0, 0},
      {"mul.hi.s32 min*2", OP(MUL), T(S32), 0, 0, HI, 0, 2, 0, S(INT32_MIN), 2, 0, 0, S(-1)},
      {"mul.hi.u16", OP(MUL), T(U16), 0, 0, HI, 0, 2, 0, 0xffff, 0xffff, 0, 0, 0xfffe},
      {"mul.hi.s16", OP(MUL), T(S16), 0, 0, HI, 0, 2, 0, S(-2), 3, 0, 0, S(-1)},
      {"mul.hi.u64", OP(MUL), T(U64), 0, 0, HI, 0, 2, 0, UINT64_MAX, UINT64_MAX, 0, 0, 0xfffffffffffffffeull},
      {"mul.hi.u64 2^63*4", OP(MUL), T(U64), 0, 0, HI, 0, 2, 0, 1ull << 63, 4, 0, 0, 2},
      {"mul.hi.s64 min*min", OP(MUL), T(S64), 0, 0, HI, 0, 2, 0, S(INT64_MIN), S(INT64_MIN), 0, 0, 1ull << 62},
      {"mul.hi.s64 -1*5", OP(MUL), T(S64), 0, 0, HI, 0, 2, 0, S(-1), 5, 0, 0, S(-1)},
      {"mul.wide.s32", OP(MUL), T(S32), 0, 0, WIDE, 0, 2, 0, S(-2), 3, 0, 0, S(-6)},
      {"mul.wide.u32", OP(MUL), T(U32), 0, 0, WIDE, 0, 2, 0, 0xffffffff, 0xffffffff, 0, 0, 0xfffffffe00000001ull},
      {"mul.wide.s32 min*min", OP(MUL), T(S32), 0, 0, WIDE, 0, 2, 0, S(INT32_MIN), S(INT32_MIN), 0, 0, 1ull << 62},
      {"mul.wide.u16", OP(MUL), T(U16), 0, 0, WIDE, 0, 2, 0, 0xffff, 0xffff, 0, 0, 0xfffe0001},
      {"mul.wide.s16", OP(MUL), T(S16), 0, 0, WIDE, 0, 2, 0, S(-2), 0x7fff, 0, 0, S(-65534)},
      {"mad.lo.s32", OP(MAD), T(S32), 0, 0, LO, 0, 3, 0, 3, 4, 5, 0, 17},
      {"mad.lo.u64", OP(MAD), T(U64), 0, 0, LO, 0, 3, 0, 1ull << 32, 1ull << 32, 7, 0, 7},
      {"mad.hi.u32", OP(MAD), T(U32), 0, 0, HI, 0, 3, 0, 0x80000000, 4, 1, 0, 3},
      {"mad.hi.sat.s32", OP(MAD), T(S32), 0, 0, HI, 0, 3, FL(SAT), 0x7fffffff, 0x7fffffff, 0x7fffffff, 0, 0x7fffffff},
      {"mad.hi.sat.s32 low", OP(MAD), T(S32), 0, 0, HI, 0, 3, FL(SAT), S(INT32_MIN), 0x7fffffff, S(INT32_MIN), 0, S(INT32_MIN)},
      {"mad.wide.s32", OP(MAD), T(S32), 0, 0, WIDE, 0, 3, 0, S(-2), 3, 100, 0, 94},
      {"mad.wide.u32", OP(MAD), T(U32), 0, 0, WIDE, 0, 3, 0, 0xffffffff, 2, 1ull << 32, 0, 0x2fffffffeull},
      {"mad.lo.cc.u32", OP(MAD), T(U32), 0, 0, LO, 0, 3, FL(CC), 0xffffffff, 1, 1, 0, 0, 1, 1},
      {"madc.hi.cc.u32", OP(MAD), T(U32), 0, 0, HI, 0, 3, FL(CC) | FL(CARRY_IN), 0x80000000, 2, 0xfffffffe, 0, 0, 1, 1, 1},
      {"mul24.lo.u32", OP(MUL24), T(U32), 0, 0, LO, 0, 2, 0, 0x1000001, 2, 0, 0, 2},
      {"mul24.hi.u32", OP(MUL24), T(U32), 0, 0, HI, 0, 2, 0, 0xffffff, 0xffffff, 0, 0, 0xfffffe00},
      {"mul24.lo.s32", OP(MUL24), T(S32), 0, 0, LO, 0, 2, 0, 0xffffff, 2, 0, 0, S(-2)},
      {"mul24.hi.s32", OP(MUL24), T(S32), 0, 0, HI, 0, 2, 0, 0xffffff, 1, 0, 0, S(-1)},
      {"mad24.lo.u32", OP(MAD24), T(U32), 0, 0, LO, 0, 3, 0, 0x1000003, 3, 1, 0, 10},
      {"mad24.hi.sat.s32", OP(MAD24), T(S32), 0, 0, HI, 0, 3, FL(SAT), 0x7fffff, 0x7fffff, 0x7fffffff, 0, 0x7fffffff},
      {"sad.s32", OP(SAD), T(S32), 0, 0, 0, 0, 3, 0, S(-5), 3, 10, 0, 18},
      {"sad.u32", OP(SAD), T(U32), 0, 0, 0, 0, 3, 0, 3, 5, 1, 0, 3},
      {"sad.u32 huge", OP(SAD), T(U32), 0, 0, 0, 0, 3, 0, 0xffffffff, 0, 0, 0, 0xffffffff},
  };
  RUN(t);
}

static void test_int_div_rem_misc(void **state) {
  (void)state;
  const tcase t[] = {
      {"div.u32 by 0", OP(DIV), T(U32), 0, 0, 0, 0, 2, 0, 7, 0, 0, 0, 0xffffffff},
      {"div.s32 by 0", OP(DIV), T(S32), 0, 0, 0, 0, 2, 0, 7, 0, 0, 0, S(-1)},
      {"div.u64 by 0", OP(DIV), T(U64), 0, 0, 0, 0, 2, 0, 7, 0, 0, 0, UINT64_MAX},
      {"div.s32 min/-1", OP(DIV), T(S32), 0, 0, 0, 0, 2, 0, S(INT32_MIN), S(-1), 0, 0, S(INT32_MIN)},
      {"div.s64 min/-1", OP(DIV), T(S64), 0, 0, 0, 0, 2, 0, S(INT64_MIN), S(-1), 0, 0, S(INT64_MIN)},
      {"rem.s64 min%-1", OP(REM), T(S64), 0, 0, 0, 0, 2, 0, S(INT64_MIN), S(-1), 0, 0, 0},
      {"rem.s32 min%-1", OP(REM), T(S32), 0, 0, 0, 0, 2, 0, S(INT32_MIN), S(-1), 0, 0, 0},
      {"div.s32 -7/2", OP(DIV), T(S32), 0, 0, 0, 0, 2, 0, S(-7), 2, 0, 0, S(-3)},
      {"rem.s32 -7%2", OP(REM), T(S32), 0, 0, 0, 0, 2, 0, S(-7), 2, 0, 0, S(-1)},
      {"rem.s32 7%-2", OP(REM), T(S32), 0, 0, 0, 0, 2, 0, 7, S(-2), 0, 0, 1},
      {"rem.u32 by 0", OP(REM), T(U32), 0, 0, 0, 0, 2, 0, 7, 0, 0, 0, 7},
      {"div.u32", OP(DIV), T(U32), 0, 0, 0, 0, 2, 0, 0xffffffff, 2, 0, 0, 0x7fffffff},
      {"div.u16", OP(DIV), T(U16), 0, 0, 0, 0, 2, 0, 0xffff, 0x10, 0, 0, 0xfff},
      {"abs.s32 min", OP(ABS), T(S32), 0, 0, 0, 0, 1, 0, S(INT32_MIN), 0, 0, 0, S(INT32_MIN)},
      {"abs.s16", OP(ABS), T(S16), 0, 0, 0, 0, 1, 0, S(-5), 0, 0, 0, 5},
      {"abs.s64", OP(ABS), T(S64), 0, 0, 0, 0, 1, 0, S(-5), 0, 0, 0, 5},
      {"neg.s32", OP(NEG), T(S32), 0, 0, 0, 0, 1, 0, 5, 0, 0, 0, S(-5)},
      {"neg.s32 min", OP(NEG), T(S32), 0, 0, 0, 0, 1, 0, S(INT32_MIN), 0, 0, 0, S(INT32_MIN)},
      {"min.s32", OP(MIN), T(S32), 0, 0, 0, 0, 2, 0, S(-1), 1, 0, 0, S(-1)},
      {"min.u32", OP(MIN), T(U32), 0, 0, 0, 0, 2, 0, 0xffffffff, 1, 0, 0, 1},
      {"max.s16", OP(MAX), T(S16), 0, 0, 0, 0, 2, 0, 0x8000, 0x7fff, 0, 0, 0x7fff},
      {"max.u64", OP(MAX), T(U64), 0, 0, 0, 0, 2, 0, UINT64_MAX, 1, 0, 0, UINT64_MAX},
      {"max.s64", OP(MAX), T(S64), 0, 0, 0, 0, 2, 0, UINT64_MAX, 1, 0, 0, 1},
      {"max.relu.s32", OP(MAX), T(S32), 0, 0, 0, 0, 2, FL(RELU), S(-5), S(-3), 0, 0, 0},
      {"min.relu.s32 pos", OP(MIN), T(S32), 0, 0, 0, 0, 2, FL(RELU), 9, 4, 0, 0, 4},
  };
  RUN(t);
}

static void test_int_logic_shift(void **state) {
  (void)state;
  const tcase t[] = {
      {"and.b32", OP(AND), T(B32), 0, 0, 0, 0, 2, 0, 0xff00ff, 0x0ff0f0, 0, 0, 0x0f00f0},
      {"or.b64", OP(OR), T(B64), 0, 0, 0, 0, 2, 0, 1ull << 63, 1, 0, 0, (1ull << 63) | 1},
      {"xor.b16", OP(XOR), T(B16), 0, 0, 0, 0, 2, 0, 0xf0f0f, 0xffff, 0, 0, 0x0f0f0},
      {"not.b16", OP(NOT), T(B16), 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0xffff},
      {"not.b32", OP(NOT), T(B32), 0, 0, 0, 0, 1, 0, 0xf, 0, 0, 0, 0xfffffff0},
      {"cnot.b32 0", OP(CNOT), T(B32), 0, 0, 0, 0, 1, 0, 0x100000000ull, 0, 0, 0, 1},
      {"cnot.b32 5", OP(CNOT), T(B32), 0, 0, 0, 0, 1, 0, 5, 0, 0, 0, 0},
      {"and.pred", OP(AND), T(PRED), 0, 0, 0, 0, 2, 0, 1, 1, 0, 0, 1},
      {"or.pred", OP(OR), T(PRED), 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0},
      {"xor.pred", OP(XOR), T(PRED), 0, 0, 0, 0, 2, 0, 1, 1, 0, 0, 0},
      {"not.pred", OP(NOT), T(PRED), 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0},
      {"not.pred 0", OP(NOT), T(PRED), 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1},
      {"shl.b32 by 32", OP(SHL), T(B32), 0, 0, 0, 0, 2, 0, 1, 32, 0, 0, 0},
      {"shl.b32 by 31", OP(SHL), T(B32), 0, 0, 0, 0, 2, 0, 1, 31, 0, 0, 0x80000000},
      {"shl.b16 by 15", OP(SHL), T(B16), 0, 0, 0, 0, 2, 0, 1, 15, 0, 0, 0x8000},
      {"shl.b64 by 64", OP(SHL), T(B64), 0, 0, 0, 0, 2, 0, 1, 64, 0, 0, 0},
      {"shl.b64 amount is u32", OP(SHL), T(B64), 0, 0, 0, 0, 2, 0, 1, 0x100000001ull, 0, 0, 2},
      {"shr.s32 by 40", OP(SHR), T(S32), 0, 0, 0, 0, 2, 0, 0x80000000, 40, 0, 0, S(-1)},
      {"shr.s32 pos by 40", OP(SHR), T(S32), 0, 0, 0, 0, 2, 0, 0x7fffffff, 40, 0, 0, 0},
      {"shr.u32 by 40", OP(SHR), T(U32), 0, 0, 0, 0, 2, 0, 0x80000000, 40, 0, 0, 0},
      {"shr.s32 -8>>1", OP(SHR), T(S32), 0, 0, 0, 0, 2, 0, S(-8), 1, 0, 0, S(-4)},
      {"shr.b32 logical", OP(SHR), T(B32), 0, 0, 0, 0, 2, 0, 0x80000000, 4, 0, 0, 0x08000000},
      {"shr.s16", OP(SHR), T(S16), 0, 0, 0, 0, 2, 0, 0x8000, 15, 0, 0, S(-1)},
      {"shr.s64 by 63", OP(SHR), T(S64), 0, 0, 0, 0, 2, 0, 1ull << 63, 63, 0, 0, S(-1)},
      {"shr.u64 by 0xffffffff", OP(SHR), T(U64), 0, 0, 0, 0, 2, 0, UINT64_MAX, 0xffffffff, 0, 0, 0},
  };
  RUN(t);
}

static void test_int_bits(void **state) {
  (void)state;
  const uint16_t AMT = FL(SHIFTAMT);
  const tcase t[] = {
      {"popc.b64", OP(POPC), T(B64), 0, 0, 0, 0, 1, 0, UINT64_MAX, 0, 0, 0, 64},
      {"popc.b32", OP(POPC), T(B32), 0, 0, 0, 0, 1, 0, 0xff000000f0ull, 0, 0, 0, 4},
      {"clz.b32 0", OP(CLZ), T(B32), 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 32},
      {"clz.b32 1", OP(CLZ), T(B32), 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 31},
      {"clz.b64 1", OP(CLZ), T(B64), 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 63},
      {"clz.b64 0", OP(CLZ), T(B64), 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 64},
      {"brev.b32", OP(BREV), T(B32), 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0x80000000},
      {"brev.b32 pattern", OP(BREV), T(B32), 0, 0, 0, 0, 1, 0, 0x12345678, 0, 0, 0, 0x1e6a2c48},
      {"brev.b64", OP(BREV), T(B64), 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1ull << 63},
      {"bfe.u32", OP(BFE), T(U32), 0, 0, 0, 0, 3, 0, 0x12345678, 8, 8, 0, 0x56},
      {"bfe.s32 sign fill", OP(BFE), T(S32), 0, 0, 0, 0, 3, 0, 0xff00, 8, 8, 0, S(-1)},
      {"bfe.s32 positive", OP(BFE), T(S32), 0, 0, 0, 0, 3, 0, 0x3000, 12, 3, 0, 3},
      {"bfe.s32 field msb set", OP(BFE), T(S32), 0, 0, 0, 0, 3, 0, 0x7000, 12, 3, 0, S(-1)},
      {"bfe.s32 pos past msb", OP(BFE), T(S32), 0, 0, 0, 0, 3, 0, 0x80000000, 40, 5, 0, S(-1)},
      {"bfe.u32 pos past msb", OP(BFE), T(U32), 0, 0, 0, 0, 3, 0, 0x80000000, 40, 5, 0, 0},
      {"bfe.s32 len 0", OP(BFE), T(S32), 0, 0, 0, 0, 3, 0, 0xffffffff, 4, 0, 0, 0},
      {"bfe.s32 len past msb", OP(BFE), T(S32), 0, 0, 0, 0, 3, 0, 0xf0000000, 28, 10, 0, S(-1)},
      {"bfe.u32 len past msb", OP(BFE), T(U32), 0, 0, 0, 0, 3, 0, 0xf0000000, 28, 10, 0, 0xf},
      {"bfe.u32 pos/len bytes only", OP(BFE), T(U32), 0, 0, 0, 0, 3, 0, 0x12345678, 0x108, 0x208, 0, 0x56},
      {"bfe.s64 clipped field", OP(BFE), T(S64), 0, 0, 0, 0, 3, 0, 1ull << 63, 60, 8, 0, S(-8)},
      {"bfe.u64", OP(BFE), T(U64), 0, 0, 0, 0, 3, 0, 0xabcdef0000000000ull, 40, 16, 0, 0xcdef},
      {"bfi.b32", OP(BFI), T(B32), 0, 0, 0, 0, 4, 0, 0xff, 0, 4, 4, 0xf0},
      {"bfi.b32 clipped", OP(BFI), T(B32), 0, 0, 0, 0, 4, 0, 0xff, 0, 30, 8, 0xc0000000},
      {"bfi.b32 len 0", OP(BFI), T(B32), 0, 0, 0, 0, 4, 0, 0xff, 0x1234, 4, 0, 0x1234},
      {"bfi.b64", OP(BFI), T(B64), 0, 0, 0, 0, 4, 0, 0x5, UINT64_MAX, 60, 3, 0xdfffffffffffffffull},
      {"bfind.u32 0", OP(BFIND), T(U32), 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0xffffffff},
      {"bfind.u32", OP(BFIND), T(U32), 0, 0, 0, 0, 1, 0, 0x10, 0, 0, 0, 4},
      {"bfind.shiftamt.u32", OP(BFIND), T(U32), 0, 0, 0, 0, 1, AMT, 0x10, 0, 0, 0, 27},
      {"bfind.shiftamt.u32 0", OP(BFIND), T(U32), 0, 0, 0, 0, 1, AMT, 0, 0, 0, 0, 0xffffffff},
      {"bfind.s32 -1", OP(BFIND), T(S32), 0, 0, 0, 0, 1, 0, 0xffffffff, 0, 0, 0, 0xffffffff},
      {"bfind.s32 -2", OP(BFIND), T(S32), 0, 0, 0, 0, 1, 0, 0xfffffffe, 0, 0, 0, 0},
      {"bfind.s32 pos", OP(BFIND), T(S32), 0, 0, 0, 0, 1, 0, 0x40000000, 0, 0, 0, 30},
      {"bfind.s64", OP(BFIND), T(S64), 0, 0, 0, 0, 1, 0, 1ull << 40, 0, 0, 0, 40},
      {"bfind.u64 top", OP(BFIND), T(U64), 0, 0, 0, 0, 1, 0, 1ull << 63, 0, 0, 0, 63},
  };
  RUN(t);
}

static void test_prmt_shf_dp(void **state) {
  (void)state;
  const uint64_t A = 0x33221100, B = 0x77665544;
  const tcase t[] = {
      {"prmt identity", OP(PRMT), T(B32), 0, 0, 0, 0, 3, 0, A, B, 0x3210, 0, 0x33221100},
      {"prmt b", OP(PRMT), T(B32), 0, 0, 0, 0, 3, 0, A, B, 0x7654, 0, 0x77665544},
      {"prmt reverse", OP(PRMT), T(B32), 0, 0, 0, 0, 3, 0, A, B, 0x0123, 0, 0x00112233},
      {"prmt mixed", OP(PRMT), T(B32), 0, 0, 0, 0, 3, 0, A, B, 0x4715, 0, 0x44771155},
      {"prmt sign replicate", OP(PRMT), T(B32), 0, 0, 0, 0, 3, 0, 0x807f, 0, 0x8989, 0, 0x00ff00ff},
      {"prmt.f4e 1", OP(PRMT), T(B32), 0, 0, GL_PTX_PRMT_F4E, 0, 3, 0, A, B, 1, 0, 0x44332211},
      {"prmt.f4e 3", OP(PRMT), T(B32), 0, 0, GL_PTX_PRMT_F4E, 0, 3, 0, A, B, 3, 0, 0x66554433},
      {"prmt.b4e 0", OP(PRMT), T(B32), 0, 0, GL_PTX_PRMT_B4E, 0, 3, 0, A, B, 0, 0, 0x55667700},
      {"prmt.b4e 3", OP(PRMT), T(B32), 0, 0, GL_PTX_PRMT_B4E, 0, 3, 0, A, B, 3, 0, 0x00112233},
      {"prmt.rc8 2", OP(PRMT), T(B32), 0, 0, GL_PTX_PRMT_RC8, 0, 3, 0, A, B, 2, 0, 0x22222222},
      {"prmt.ecl 1", OP(PRMT), T(B32), 0, 0, GL_PTX_PRMT_ECL, 0, 3, 0, A, B, 1, 0, 0x33221111},
      {"prmt.ecr 2", OP(PRMT), T(B32), 0, 0, GL_PTX_PRMT_ECR, 0, 3, 0, A, B, 2, 0, 0x22221100},
      {"prmt.rc16 1", OP(PRMT), T(B32), 0, 0, GL_PTX_PRMT_RC16, 0, 3, 0, A, B, 1, 0, 0x33223322},
      {"prmt.rc16 2", OP(PRMT), T(B32), 0, 0, GL_PTX_PRMT_RC16, 0, 3, 0, A, B, 2, 0, 0x11001100},
      {"shf.l.wrap", OP(SHF), T(B32), 0, 0, GL_PTX_SHF_L, 0, 3, 0, 0x80000000, 1, 1, 0, 3},
      {"shf.l.wrap 33", OP(SHF), T(B32), 0, 0, GL_PTX_SHF_L, 0, 3, 0, 0x80000000, 1, 33, 0, 3},
      {"shf.l.clamp 33", OP(SHF), T(B32), 0, 0, GL_PTX_SHF_L, 0, 3, FL(CLAMP), 0x80000000, 1, 33, 0, 0x80000000},
      {"shf.l.wrap 0", OP(SHF), T(B32), 0, 0, GL_PTX_SHF_L, 0, 3, 0, 0x80000000, 1, 0, 0, 1},
      {"shf.r.clamp 40", OP(SHF), T(B32), 0, 0, GL_PTX_SHF_R, 0, 3, FL(CLAMP), 1, 0x80000001, 40, 0, 0x80000001},
      {"shf.r.wrap 36", OP(SHF), T(B32), 0, 0, GL_PTX_SHF_R, 0, 3, 0, 1, 0x80000001, 36, 0, 0x10000000},
      {"shf.r.wrap 8", OP(SHF), T(B32), 0, 0, GL_PTX_SHF_R, 0, 3, 0, 0x12345678, 0xabcdef01, 8, 0, 0x01123456},
      {"dp4a.u32.u32", OP(DP4A), T(U32), T(U32), 0, 0, 0, 3, 0, 0x01020304, 0x01010101, 10, 0, 20},
      {"dp4a.s32.s32", OP(DP4A), T(S32), T(S32), 0, 0, 0, 3, 0, 0xff, 0x02, 0, 0, S(-2)},
      {"dp4a.s32.u32", OP(DP4A), T(S32), T(U32), 0, 0, 0, 3, 0, 0xff, 0xff, 0, 0, S(-255)},
      {"dp4a.u32.u32 wraps", OP(DP4A), T(U32), T(U32), 0, 0, 0, 3, 0, 0xff, 0xff, 0xffffffff, 0, 0xfe00},
      {"dp2a.lo", OP(DP2A), T(U32), T(U32), 0, 0, 0, 3, 0, 0x00020001, 0x04030201, 0, 0, 5},
      {"dp2a.hi", OP(DP2A), T(U32), T(U32), 0, 1, 0, 3, 0, 0x00020001, 0x04030201, 1, 0, 12},
      {"dp2a.lo.s32.s32", OP(DP2A), T(S32), T(S32), 0, 0, 0, 3, 0, 0xffff0001, 0x0000ff01, 0, 0, 2},
  };
  RUN(t);
}

static void test_int_compare_select(void **state) {
  (void)state;
  const uint8_t AND = GL_PTX_BOOL_AND, OR = GL_PTX_BOOL_OR, XOR = GL_PTX_BOOL_XOR;
  const tcase t[] = {
      {"setp.lt.s32", OP(SETP), T(S32), 0, 0, CMP(LT), 0, 2, 0, S(-1), 1, 0, 0, 1},
      {"setp.lt.u32", OP(SETP), T(U32), 0, 0, CMP(LT), 0, 2, 0, 0xffffffff, 1, 0, 0, 0},
      {"setp.lo.s32", OP(SETP), T(S32), 0, 0, CMP(LO), 0, 2, 0, S(-1), 1, 0, 0, 0},
      {"setp.hi.s32", OP(SETP), T(S32), 0, 0, CMP(HI), 0, 2, 0, S(-1), 1, 0, 0, 1},
      {"setp.ge.s64", OP(SETP), T(S64), 0, 0, CMP(GE), 0, 2, 0, S(INT64_MIN), 0, 0, 0, 0},
      {"setp.le.u16", OP(SETP), T(U16), 0, 0, CMP(LE), 0, 2, 0, 0xffff, 0x1ffff, 0, 0, 1},
      {"setp.eq.b16 low bits", OP(SETP), T(B16), 0, 0, CMP(EQ), 0, 2, 0, 0x10001, 1, 0, 0, 1},
      {"setp.ne.b64", OP(SETP), T(B64), 0, 0, CMP(NE), 0, 2, 0, 1ull << 40, 0, 0, 0, 1},
      {"setp.gt.s32 d|q", OP(SETP), T(S32), 0, 0, CMP(GT), 0, 2, 0, 2, 1, 0, 0, 1, 1, 0},
      {"setp.lt.and c=0", OP(SETP), T(S32), 0, 0, CMP(LT), AND, 3, 0, 1, 2, 0, 0, 0, 1, 0},
      {"setp.lt.and c=1", OP(SETP), T(S32), 0, 0, CMP(LT), AND, 3, 0, 1, 2, 1, 0, 1, 1, 0},
      {"setp.lt.or c=1", OP(SETP), T(S32), 0, 0, CMP(LT), OR, 3, 0, 3, 2, 1, 0, 1, 1, 1},
      {"setp.lt.or c=0", OP(SETP), T(S32), 0, 0, CMP(LT), OR, 3, 0, 3, 2, 0, 0, 0, 1, 1},
      {"setp.lt.xor c=1", OP(SETP), T(S32), 0, 0, CMP(LT), XOR, 3, 0, 1, 2, 1, 0, 0, 1, 1},
      {"set.lt.u32.s32", OP(SET), T(U32), T(S32), 0, CMP(LT), 0, 2, 0, S(-1), 0, 0, 0, 0xffffffff},
      {"set.lt.s32.s32", OP(SET), T(S32), T(S32), 0, CMP(LT), 0, 2, 0, S(-1), 0, 0, 0, UINT64_MAX},
      {"set.lt.f32.s32", OP(SET), T(F32), T(S32), 0, CMP(LT), 0, 2, 0, S(-1), 0, 0, 0, F(1.0f)},
      {"set.gt.f32.u32 false", OP(SET), T(F32), T(U32), 0, CMP(GT), 0, 2, 0, 1, 2, 0, 0, 0},
      {"set.eq.and.u32.u32", OP(SET), T(U32), T(U32), 0, CMP(EQ), AND, 3, 0, 1, 1, 0, 0, 0},
      {"selp.s32 true", OP(SELP), T(S32), 0, 0, 0, 0, 3, 0, 0xffffffff, 5, 1, 0, UINT64_MAX},
      {"selp.b32 false", OP(SELP), T(B32), 0, 0, 0, 0, 3, 0, 4, 0x1ffffffffull, 0, 0, 0xffffffff},
      {"selp.f64", OP(SELP), T(F64), 0, 0, 0, 0, 3, 0, D(1.5), D(2.5), 1, 0, D(1.5)},
      {"slct.s32.s32 neg", OP(SLCT), T(S32), T(S32), 0, 0, 0, 3, 0, 1, 2, S(-1), 0, 2},
      {"slct.s32.s32 zero", OP(SLCT), T(S32), T(S32), 0, 0, 0, 3, 0, 1, 2, 0, 0, 1},
      {"slct.u32.f32 -0", OP(SLCT), T(U32), T(F32), 0, 0, 0, 3, 0, 1, 2, F(-0.0f), 0, 1},
      {"slct.u32.f32 NaN", OP(SLCT), T(U32), T(F32), 0, 0, 0, 3, 0, 1, 2, F(NAN), 0, 2},
      {"slct.u32.f32 -denorm", OP(SLCT), T(U32), T(F32), 0, 0, 0, 3, 0, 1, 2, 0x80000001, 0, 2},
      {"slct.ftz.u32.f32 -denorm", OP(SLCT), T(U32), T(F32), 0, 0, 0, 3, FL(FTZ), 1, 2, 0x80000001, 0, 1},
      {"mov.s16", OP(MOV), T(S16), 0, 0, 0, 0, 1, 0, 0x8000, 0, 0, 0, S(-32768)},
      {"mov.u16", OP(MOV), T(U16), 0, 0, 0, 0, 1, 0, 0x18000, 0, 0, 0, 0x8000},
      {"mov.b64", OP(MOV), T(B64), 0, 0, 0, 0, 1, 0, UINT64_MAX, 0, 0, 0, UINT64_MAX},
      {"mov.f32", OP(MOV), T(F32), 0, 0, 0, 0, 1, 0, 0xffffffff3f800000ull, 0, 0, 0, 0x3f800000},
      {"mov.pred", OP(MOV), T(PRED), 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1},
  };
  RUN(t);
}

/* ========================================================================
 * f32 / f64
 * ====================================================================== */

static void test_float_add_mul(void **state) {
  (void)state;
  const uint64_t one_p = F(1.0f), tiny = 0x33c00000; /* 1.5 * 2^-24 */
  const tcase t[] = {
      {"add.rn.f32", OP(ADD), T(F32), 0, R(RN), 0, 0, 2, 0, one_p, tiny, 0, 0, 0x3f800001},
      {"add.rz.f32", OP(ADD), T(F32), 0, R(RZ), 0, 0, 2, 0, one_p, tiny, 0, 0, 0x3f800000},
      {"add.rm.f32", OP(ADD), T(F32), 0, R(RM), 0, 0, 2, 0, one_p, tiny, 0, 0, 0x3f800000},
      {"add.rp.f32", OP(ADD), T(F32), 0, R(RP), 0, 0, 2, 0, one_p, tiny, 0, 0, 0x3f800001},
      {"add.rm.f32 neg", OP(ADD), T(F32), 0, R(RM), 0, 0, 2, 0, F(-1.0f), tiny | 0x80000000, 0, 0, 0xbf800001},
      {"add.rz.f32 neg", OP(ADD), T(F32), 0, R(RZ), 0, 0, 2, 0, F(-1.0f), tiny | 0x80000000, 0, 0, 0xbf800000},
      {"add.f32 tie even", OP(ADD), T(F32), 0, 0, 0, 0, 2, 0, one_p, 0x33800000, 0, 0, 0x3f800000},
      {"add.f32 NaN canonical", OP(ADD), T(F32), 0, 0, 0, 0, 2, 0, 0xffc00001, one_p, 0, 0, 0x7fffffff},
      {"sub.f32 inf-inf", OP(SUB), T(F32), 0, 0, 0, 0, 2, 0, F(INFINITY), F(INFINITY), 0, 0, 0x7fffffff},
      {"add.rz.f32 overflow", OP(ADD), T(F32), 0, R(RZ), 0, 0, 2, 0, 0x7f7fffff, 0x7f7fffff, 0, 0, 0x7f7fffff},
      {"add.sat.f32 >1", OP(ADD), T(F32), 0, 0, 0, 0, 2, FL(SAT), F(0.5f), F(0.75f), 0, 0, F(1.0f)},
      {"add.sat.f32 <0", OP(ADD), T(F32), 0, 0, 0, 0, 2, FL(SAT), F(-3.0f), F(1.0f), 0, 0, 0},
      {"add.sat.f32 NaN", OP(ADD), T(F32), 0, 0, 0, 0, 2, FL(SAT), F(NAN), F(1.0f), 0, 0, 0},
      {"add.sat.f32 -0", OP(ADD), T(F32), 0, 0, 0, 0, 2, FL(SAT), F(-0.0f), F(-0.0f), 0, 0, 0},
      {"add.f32 denorm kept", OP(ADD), T(F32), 0, 0, 0, 0, 2, 0, 0x00000001, 0, 0, 0, 0x00000001},
      {"add.ftz.f32 denorm in", OP(ADD), T(F32), 0, 0, 0, 0, 2, FL(FTZ), 0x00400000, 0, 0, 0, 0},
      {"mul.f32 denorm out", OP(MUL), T(F32), 0, 0, 0, 0, 2, 0, F(0x1p-70f), F(-0x1p-70f), 0, 0, 0x80000200},
      {"mul.ftz.f32 denorm out", OP(MUL), T(F32), 0, 0, 0, 0, 2, FL(FTZ), F(0x1p-70f), F(-0x1p-70f), 0, 0, 0x80000000},
      {"mul.rz.f32", OP(MUL), T(F32), 0, R(RZ), 0, 0, 2, 0, 0x3f800001, 0x3f800001, 0, 0, 0x3f800002},
      {"mul.rp.f32", OP(MUL), T(F32), 0, R(RP), 0, 0, 2, 0, 0x3f800001, 0x3f800001, 0, 0, 0x3f800003},
      {"mul.f32 0*inf", OP(MUL), T(F32), 0, 0, 0, 0, 2, 0, 0, F(INFINITY), 0, 0, 0x7fffffff},
      {"mul.sat.f32", OP(MUL), T(F32), 0, 0, 0, 0, 2, FL(SAT), F(0.5f), F(0.5f), 0, 0, F(0.25f)},
      {"add.rn.f64", OP(ADD), T(F64), 0, R(RN), 0, 0, 2, 0, D(1.0), D(0x1.8p-53), 0, 0, D(1.0 + 0x1p-52)},
      {"add.rz.f64", OP(ADD), T(F64), 0, R(RZ), 0, 0, 2, 0, D(1.0), D(0x1.8p-53), 0, 0, D(1.0)},
      {"add.rm.f64 neg", OP(ADD), T(F64), 0, R(RM), 0, 0, 2, 0, D(-1.0), D(-0x1p-60), 0, 0, D(-1.0 - 0x1p-52)},
      {"sub.rp.f64", OP(SUB), T(F64), 0, R(RP), 0, 0, 2, 0, D(1.0), D(-0x1p-60), 0, 0, D(1.0 + 0x1p-52)},
      {"mul.rn.f64", OP(MUL), T(F64), 0, R(RN), 0, 0, 2, 0, D(3.0), D(0.5), 0, 0, D(1.5)},
      {"add.f64 NaN payload kept", OP(ADD), T(F64), 0, 0, 0, 0, 2, 0, D(1.0), 0x7ff0000000000123ull, 0, 0, 0x7ff8000000000123ull},
      {"add.f64 inf-inf", OP(ADD), T(F64), 0, 0, 0, 0, 2, 0, D(INFINITY), D(-INFINITY), 0, 0, 0xfff8000000000000ull},
  };
  RUN(t);
  assert_int_equal(fegetround(), FE_TONEAREST);
}

static void test_float_fma(void **state) {
  (void)state;
  /* (1+2^-23)^2 = 1 + 2^-22 + 2^-46: fused keeps the 2^-46 that mul then
   * add would lose. */
  const uint64_t a = 0x3f800001, c = 0xbf800002;
  const tcase t[] = {
      {"fma.rn.f32 exact", OP(FMA), T(F32), 0, R(RN), 0, 0, 3, 0, a, a, c, 0, F(0x1p-46f)},
      {"mad.rn.f32 fused", OP(MAD), T(F32), 0, R(RN), 0, 0, 3, 0, a, a, c, 0, F(0x1p-46f)},
      {"fma.rn.f32 round", OP(FMA), T(F32), 0, R(RN), 0, 0, 3, 0, a, a, 0, 0, 0x3f800002},
      {"fma.rp.f32", OP(FMA), T(F32), 0, R(RP), 0, 0, 3, 0, a, a, 0, 0, 0x3f800003},
      {"fma.rz.f32", OP(FMA), T(F32), 0, R(RZ), 0, 0, 3, 0, a, a, 0, 0, 0x3f800002},
      {"fma.rm.f32 neg", OP(FMA), T(F32), 0, R(RM), 0, 0, 3, 0, a, a | 0x80000000, 0, 0, 0xbf800003},
      {"fma.rn.sat.f32", OP(FMA), T(F32), 0, R(RN), 0, 0, 3, FL(SAT), F(2.0f), F(2.0f), F(-1.0f), 0, F(1.0f)},
      {"fma.rn.ftz.f32", OP(FMA), T(F32), 0, R(RN), 0, 0, 3, FL(FTZ), F(0x1p-100f), F(0x1p-40f), 0, 0, 0},
      {"fma.rn.f32 denorm", OP(FMA), T(F32), 0, R(RN), 0, 0, 3, 0, F(0x1p-100f), F(0x1p-40f), 0, 0, F(0x1p-140f)},
      {"fma.rn.f32 NaN", OP(FMA), T(F32), 0, R(RN), 0, 0, 3, 0, F(INFINITY), 0, F(1.0f), 0, 0x7fffffff},
      {"fma.rn.f64 exact", OP(FMA), T(F64), 0, R(RN), 0, 0, 3, 0, D(1.0 + 0x1p-52), D(1.0 + 0x1p-52), D(-(1.0 + 0x1p-51)), 0, D(0x1p-104)},
      {"fma.rp.f64", OP(FMA), T(F64), 0, R(RP), 0, 0, 3, 0, D(1.0 + 0x1p-52), D(1.0 + 0x1p-52), 0, 0, D(1.0 + 0x1p-51 + 0x1p-52)},
  };
  RUN(t);
  assert_int_equal(fegetround(), FE_TONEAREST);
}

static void test_float_div_sqrt(void **state) {
  (void)state;
  const uint16_t AP = FL(APPROX), FU = FL(FULL);
  const tcase t[] = {
      {"div.rn.f32", OP(DIV), T(F32), 0, R(RN), 0, 0, 2, 0, F(1.0f), F(3.0f), 0, 0, 0x3eaaaaab},
      {"div.rz.f32", OP(DIV), T(F32), 0, R(RZ), 0, 0, 2, 0, F(1.0f), F(3.0f), 0, 0, 0x3eaaaaaa},
      {"div.rp.f32", OP(DIV), T(F32), 0, R(RP), 0, 0, 2, 0, F(1.0f), F(3.0f), 0, 0, 0x3eaaaaab},
      {"div.rm.f32", OP(DIV), T(F32), 0, R(RM), 0, 0, 2, 0, F(1.0f), F(3.0f), 0, 0, 0x3eaaaaaa},
      {"div.rn.f32 0/0", OP(DIV), T(F32), 0, R(RN), 0, 0, 2, 0, 0, 0, 0, 0, 0x7fffffff},
      {"div.rn.f32 1/-0", OP(DIV), T(F32), 0, R(RN), 0, 0, 2, 0, F(1.0f), F(-0.0f), 0, 0, F(-INFINITY)},
      {"div.approx.f32", OP(DIV), T(F32), 0, 0, 0, 0, 2, AP, F(1.0f), F(4.0f), 0, 0, F(0.25f)},
      {"div.approx.f32 huge b", OP(DIV), T(F32), 0, 0, 0, 0, 2, AP, F(1.0f), F(0x1p127f), 0, 0, 0},
      {"div.approx.f32 inf/huge", OP(DIV), T(F32), 0, 0, 0, 0, 2, AP, F(INFINITY), F(0x1p127f), 0, 0, 0x7fffffff},
      {"div.full.f32", OP(DIV), T(F32), 0, 0, 0, 0, 2, FU, F(1.0f), F(3.0f), 0, 0, 0x3eaaaaab},
      {"div.full.f32 huge b", OP(DIV), T(F32), 0, 0, 0, 0, 2, FU, F(0x1p127f), F(0x1p127f), 0, 0, F(1.0f)},
      {"div.rn.f64", OP(DIV), T(F64), 0, R(RN), 0, 0, 2, 0, D(1.0), D(3.0), 0, 0, 0x3fd5555555555555ull},
      {"div.rp.f64", OP(DIV), T(F64), 0, R(RP), 0, 0, 2, 0, D(1.0), D(3.0), 0, 0, 0x3fd5555555555556ull},
      {"rcp.rn.f32", OP(RCP), T(F32), 0, R(RN), 0, 0, 1, 0, F(3.0f), 0, 0, 0, 0x3eaaaaab},
      {"rcp.rz.f32", OP(RCP), T(F32), 0, R(RZ), 0, 0, 1, 0, F(3.0f), 0, 0, 0, 0x3eaaaaaa},
      {"rcp.approx.f32", OP(RCP), T(F32), 0, 0, 0, 0, 1, AP, F(4.0f), 0, 0, 0, F(0.25f)},
      {"rcp.approx.ftz.f32 denorm", OP(RCP), T(F32), 0, 0, 0, 0, 1, AP | FL(FTZ), 0x80000001, 0, 0, 0, F(-INFINITY)},
      {"rcp.approx.ftz.f64", OP(RCP), T(F64), 0, 0, 0, 0, 1, AP | FL(FTZ), D(0.5), 0, 0, 0, D(2.0)},
      {"rcp.rn.f64", OP(RCP), T(F64), 0, R(RN), 0, 0, 1, 0, D(3.0), 0, 0, 0, 0x3fd5555555555555ull},
      {"sqrt.rn.f32", OP(SQRT), T(F32), 0, R(RN), 0, 0, 1, 0, F(2.0f), 0, 0, 0, 0x3fb504f3},
      {"sqrt.rp.f32", OP(SQRT), T(F32), 0, R(RP), 0, 0, 1, 0, F(2.0f), 0, 0, 0, 0x3fb504f4},
      {"sqrt.rn.f32 -1", OP(SQRT), T(F32), 0, R(RN), 0, 0, 1, 0, F(-1.0f), 0, 0, 0, 0x7fffffff},
      {"sqrt.rn.f32 -0", OP(SQRT), T(F32), 0, R(RN), 0, 0, 1, 0, F(-0.0f), 0, 0, 0, F(-0.0f)},
      {"sqrt.approx.f32", OP(SQRT), T(F32), 0, 0, 0, 0, 1, AP, F(16.0f), 0, 0, 0, F(4.0f)},
      {"sqrt.rn.f64", OP(SQRT), T(F64), 0, R(RN), 0, 0, 1, 0, D(2.0), 0, 0, 0, 0x3ff6a09e667f3bcdull},
      {"sqrt.rp.f64", OP(SQRT), T(F64), 0, R(RP), 0, 0, 1, 0, D(2.0), 0, 0, 0, 0x3ff6a09e667f3bcdull},
      {"sqrt.rz.f64", OP(SQRT), T(F64), 0, R(RZ), 0, 0, 1, 0, D(2.0), 0, 0, 0, 0x3ff6a09e667f3bccull},
      {"rsqrt.approx.f32 4", OP(RSQRT), T(F32), 0, 0, 0, 0, 1, AP, F(4.0f), 0, 0, 0, F(0.5f)},
      {"rsqrt.approx.f32 +0", OP(RSQRT), T(F32), 0, 0, 0, 0, 1, AP, 0, 0, 0, 0, F(INFINITY)},
      {"rsqrt.approx.f32 -0", OP(RSQRT), T(F32), 0, 0, 0, 0, 1, AP, F(-0.0f), 0, 0, 0, F(-INFINITY)},
      {"rsqrt.approx.f32 inf", OP(RSQRT), T(F32), 0, 0, 0, 0, 1, AP, F(INFINITY), 0, 0, 0, 0},
      {"rsqrt.approx.f64", OP(RSQRT), T(F64), 0, 0, 0, 0, 1, AP, D(0.25), 0, 0, 0, D(2.0)},
  };
  RUN(t);
  assert_int_equal(fegetround(), FE_TONEAREST);
}

static void test_float_approx(void **state) {
  (void)state;
  const uint16_t AP = FL(APPROX), FZ = FL(FTZ);
  const tcase t[] = {
      {"ex2.approx.ftz.f32 -inf", OP(EX2), T(F32), 0, 0, 0, 0, 1, AP | FZ, F(-INFINITY), 0, 0, 0, 0},
      {"ex2.approx.f32 1", OP(EX2), T(F32), 0, 0, 0, 0, 1, AP, F(1.0f), 0, 0, 0, F(2.0f)},
      {"ex2.approx.f32 -3", OP(EX2), T(F32), 0, 0, 0, 0, 1, AP, F(-3.0f), 0, 0, 0, F(0.125f)},
      {"ex2.approx.f32 inf", OP(EX2), T(F32), 0, 0, 0, 0, 1, AP, F(INFINITY), 0, 0, 0, F(INFINITY)},
      {"ex2.approx.f32 denorm out", OP(EX2), T(F32), 0, 0, 0, 0, 1, AP, F(-140.0f), 0, 0, 0, 0x200},
      {"ex2.approx.ftz.f32 denorm out", OP(EX2), T(F32), 0, 0, 0, 0, 1, AP | FZ, F(-140.0f), 0, 0, 0, 0},
      {"lg2.approx.f32 0", OP(LG2), T(F32), 0, 0, 0, 0, 1, AP, 0, 0, 0, 0, F(-INFINITY)},
      {"lg2.approx.f32 -0", OP(LG2), T(F32), 0, 0, 0, 0, 1, AP, F(-0.0f), 0, 0, 0, F(-INFINITY)},
      {"lg2.approx.f32 8", OP(LG2), T(F32), 0, 0, 0, 0, 1, AP, F(8.0f), 0, 0, 0, F(3.0f)},
      {"lg2.approx.f32 -1", OP(LG2), T(F32), 0, 0, 0, 0, 1, AP, F(-1.0f), 0, 0, 0, 0x7fffffff},
      {"lg2.approx.ftz.f32 denorm", OP(LG2), T(F32), 0, 0, 0, 0, 1, AP | FZ, 0x1, 0, 0, 0, F(-INFINITY)},
      {"lg2.approx.f32 denorm", OP(LG2), T(F32), 0, 0, 0, 0, 1, AP, 0x1, 0, 0, 0, F(-149.0f)},
      {"sin.approx.f32 0", OP(SIN), T(F32), 0, 0, 0, 0, 1, AP, 0, 0, 0, 0, 0},
      {"sin.approx.f32 inf", OP(SIN), T(F32), 0, 0, 0, 0, 1, AP, F(INFINITY), 0, 0, 0, 0x7fffffff},
      {"cos.approx.f32 0", OP(COS), T(F32), 0, 0, 0, 0, 1, AP, F(-0.0f), 0, 0, 0, F(1.0f)},
      {"tanh.approx.f32 inf", OP(TANH), T(F32), 0, 0, 0, 0, 1, AP, F(-INFINITY), 0, 0, 0, F(-1.0f)},
      {"tanh.approx.f32 0", OP(TANH), T(F32), 0, 0, 0, 0, 1, AP, F(-0.0f), 0, 0, 0, F(-0.0f)},
  };
  RUN(t);
  /* Approximate values: within a few ulp of the libm double result. */
  const struct {
    uint16_t op;
    float x;
    double want;
  } ap[] = {
      {OP(SIN), 1.0f, 0.8414709848078965}, {OP(COS), 1.0f, 0.5403023058681398},
      {OP(SIN), 100.0f, -0.5063656411097588}, {OP(LG2), 10.0f, 3.321928094887362},
      {OP(EX2), 0.5f, 1.4142135623730951}, {OP(TANH), 0.5f, 0.46211715726000974},
  };
  for (size_t i = 0; i < sizeof ap / sizeof ap[0]; i++) {
    tcase c = {"approx", ap[i].op, T(F32), 0, 0, 0, 0, 1, AP, F(ap[i].x), 0, 0, 0, 0};
    gl_ptx_insn in = mk(&c);
    rows r;
    memset(&r, 0, sizeof r);
    r.s[0][0] = F(ap[i].x);
    assert_int_equal(exec_rows(&in, &r, 1), 0);
    uint32_t u = (uint32_t)r.d[0][0];
    float got;
    memcpy(&got, &u, 4);
    assert_true(fabs((double)got - ap[i].want) <= 2.0 * fabs(ap[i].want) * 0x1p-24);
  }
}

static void test_float_minmax_bits(void **state) {
  (void)state;
  const uint16_t NN = FL(NAN);
  const uint64_t nan = 0x7fc00001;
  const tcase t[] = {
      {"min.f32 NaN,1", OP(MIN), T(F32), 0, 0, 0, 0, 2, 0, nan, F(1.0f), 0, 0, F(1.0f)},
      {"min.f32 1,NaN", OP(MIN), T(F32), 0, 0, 0, 0, 2, 0, F(1.0f), nan, 0, 0, F(1.0f)},
      {"max.f32 NaN,-1", OP(MAX), T(F32), 0, 0, 0, 0, 2, 0, nan, F(-1.0f), 0, 0, F(-1.0f)},
      {"min.f32 NaN,NaN", OP(MIN), T(F32), 0, 0, 0, 0, 2, 0, nan, nan, 0, 0, 0x7fffffff},
      {"min.NaN.f32", OP(MIN), T(F32), 0, 0, 0, 0, 2, NN, nan, F(1.0f), 0, 0, 0x7fffffff},
      {"max.NaN.f32", OP(MAX), T(F32), 0, 0, 0, 0, 2, NN, F(1.0f), nan, 0, 0, 0x7fffffff},
      {"min.f32 -0,+0", OP(MIN), T(F32), 0, 0, 0, 0, 2, 0, F(-0.0f), 0, 0, 0, F(-0.0f)},
      {"min.f32 +0,-0", OP(MIN), T(F32), 0, 0, 0, 0, 2, 0, 0, F(-0.0f), 0, 0, F(-0.0f)},
      {"max.f32 -0,+0", OP(MAX), T(F32), 0, 0, 0, 0, 2, 0, F(-0.0f), 0, 0, 0, 0},
      {"max.f32 +0,-0", OP(MAX), T(F32), 0, 0, 0, 0, 2, 0, 0, F(-0.0f), 0, 0, 0},
      {"min.f32", OP(MIN), T(F32), 0, 0, 0, 0, 2, 0, F(-2.0f), F(3.0f), 0, 0, F(-2.0f)},
      {"max.f32", OP(MAX), T(F32), 0, 0, 0, 0, 2, 0, F(-2.0f), F(3.0f), 0, 0, F(3.0f)},
      {"min.ftz.f32 denorm", OP(MIN), T(F32), 0, 0, 0, 0, 2, FL(FTZ), 0x80000001, 0, 0, 0, F(-0.0f)},
      {"min.xorsign.abs.f32", OP(MIN), T(F32), 0, 0, 0, 0, 2, FL(XORSIGN_ABS), F(-2.0f), F(3.0f), 0, 0, F(-2.0f)},
      {"max.xorsign.abs.f32", OP(MAX), T(F32), 0, 0, 0, 0, 2, FL(XORSIGN_ABS), F(-2.0f), F(-3.0f), 0, 0, F(3.0f)},
      {"min.f64 NaN,1", OP(MIN), T(F64), 0, 0, 0, 0, 2, 0, D(NAN), D(1.0), 0, 0, D(1.0)},
      {"max.f64 -0,+0", OP(MAX), T(F64), 0, 0, 0, 0, 2, 0, D(-0.0), 0, 0, 0, 0},
      {"min.f64 +0,-0", OP(MIN), T(F64), 0, 0, 0, 0, 2, 0, 0, D(-0.0), 0, 0, D(-0.0)},
      {"abs.f32", OP(ABS), T(F32), 0, 0, 0, 0, 1, 0, F(-1.5f), 0, 0, 0, F(1.5f)},
      {"abs.ftz.f32 denorm", OP(ABS), T(F32), 0, 0, 0, 0, 1, FL(FTZ), 0x80000001, 0, 0, 0, 0},
      {"abs.f32 denorm", OP(ABS), T(F32), 0, 0, 0, 0, 1, 0, 0x80000001, 0, 0, 0, 1},
      {"neg.f32 0", OP(NEG), T(F32), 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0x80000000},
      {"neg.f64", OP(NEG), T(F64), 0, 0, 0, 0, 1, 0, D(2.0), 0, 0, 0, D(-2.0)},
      {"abs.f64", OP(ABS), T(F64), 0, 0, 0, 0, 1, 0, D(-0.0), 0, 0, 0, 0},
      /* NaN operands: what an H200 returned (tests/emu/kernels/nan_rules.cu
       * runs the same instructions on the GPU) */
      {"neg.f32 NaN", OP(NEG), T(F32), 0, 0, 0, 0, 1, 0, 0x7fa01234, 0, 0, 0, 0x7fffffff},
      {"abs.f32 -NaN", OP(ABS), T(F32), 0, 0, 0, 0, 1, 0, 0xffc00000, 0, 0, 0, 0x7fffffff},
      {"neg.f64 NaN", OP(NEG), T(F64), 0, 0, 0, 0, 1, 0, 0x7ff4000000001234ull, 0, 0, 0, 0x7ffc000000001234ull},
      {"neg.f64 -NaN", OP(NEG), T(F64), 0, 0, 0, 0, 1, 0, 0xfff8000000000000ull, 0, 0, 0, 0xfff8000000000000ull},
      {"abs.f64 -NaN", OP(ABS), T(F64), 0, 0, 0, 0, 1, 0, 0xfff8000000000000ull, 0, 0, 0, 0xfff8000000000000ull},
      {"fma.rn.f64 NaN b and c", OP(FMA), T(F64), 0, R(RN), 0, 0, 3, 0, D(3.0), 0xfff8000000000000ull, 0x7ff8000000000000ull, 0, 0x7ff8000000000000ull},
      {"fma.rn.f64 inf*0+1", OP(FMA), T(F64), 0, R(RN), 0, 0, 3, 0, D(INFINITY), 0, D(1.0), 0, 0xfff8000000000000ull},
      {"mul.rn.f64 NaN, -NaN", OP(MUL), T(F64), 0, R(RN), 0, 0, 2, 0, 0x7ff4000000001234ull, 0xfff8000000000000ull, 0, 0, 0x7ffc000000001234ull},
      {"min.f64 NaN, -NaN", OP(MIN), T(F64), 0, 0, 0, 0, 2, 0, 0x7ff8000000000000ull, 0xfff8000000000000ull, 0, 0, 0xfff8000000000000ull},
      {"copysign.f32", OP(COPYSIGN), T(F32), 0, 0, 0, 0, 2, 0, F(-1.0f), F(2.0f), 0, 0, F(-2.0f)},
      {"copysign.f64", OP(COPYSIGN), T(F64), 0, 0, 0, 0, 2, 0, D(1.0), D(-2.0), 0, 0, D(2.0)},
      {"testp.finite.f32 inf", OP(TESTP), T(F32), 0, 0, GL_PTX_TESTP_FINITE, 0, 1, 0, F(INFINITY), 0, 0, 0, 0},
      {"testp.finite.f32 0", OP(TESTP), T(F32), 0, 0, GL_PTX_TESTP_FINITE, 0, 1, 0, 0, 0, 0, 0, 1},
      {"testp.infinite.f64", OP(TESTP), T(F64), 0, 0, GL_PTX_TESTP_INFINITE, 0, 1, 0, D(-INFINITY), 0, 0, 0, 1},
      {"testp.number.f32 inf", OP(TESTP), T(F32), 0, 0, GL_PTX_TESTP_NUMBER, 0, 1, 0, F(INFINITY), 0, 0, 0, 1},
      {"testp.notanumber.f32", OP(TESTP), T(F32), 0, 0, GL_PTX_TESTP_NOTANUMBER, 0, 1, 0, nan, 0, 0, 0, 1},
      {"testp.normal.f32 0", OP(TESTP), T(F32), 0, 0, GL_PTX_TESTP_NORMAL, 0, 1, 0, 0, 0, 0, 0, 0},
      {"testp.normal.f32 1", OP(TESTP), T(F32), 0, 0, GL_PTX_TESTP_NORMAL, 0, 1, 0, F(1.0f), 0, 0, 0, 1},
      {"testp.subnormal.f32", OP(TESTP), T(F32), 0, 0, GL_PTX_TESTP_SUBNORMAL, 0, 1, 0, 1, 0, 0, 0, 1},
      {"testp.subnormal.f64 0", OP(TESTP), T(F64), 0, 0, GL_PTX_TESTP_SUBNORMAL, 0, 1, 0, 0, 0, 0, 0, 0},
  };
  RUN(t);
}

static void test_float_compare(void **state) {
  (void)state;
  const uint64_t n = F(NAN), one = F(1.0f), two = F(2.0f);
  const tcase t[] = {
      {"setp.equ NaN", OP(SETP), T(F32), 0, 0, CMP(EQU), 0, 2, 0, n, one, 0, 0, 1},
      {"setp.eq NaN", OP(SETP), T(F32), 0, 0, CMP(EQ), 0, 2, 0, n, n, 0, 0, 0},
      {"setp.ne NaN", OP(SETP), T(F32), 0, 0, CMP(NE), 0, 2, 0, n, one, 0, 0, 0},
      {"setp.neu NaN", OP(SETP), T(F32), 0, 0, CMP(NEU), 0, 2, 0, n, one, 0, 0, 1},
      {"setp.lt NaN", OP(SETP), T(F32), 0, 0, CMP(LT), 0, 2, 0, n, one, 0, 0, 0},
      {"setp.ltu NaN", OP(SETP), T(F32), 0, 0, CMP(LTU), 0, 2, 0, n, one, 0, 0, 1},
      {"setp.leu NaN", OP(SETP), T(F32), 0, 0, CMP(LEU), 0, 2, 0, one, n, 0, 0, 1},
      {"setp.gtu 1,2", OP(SETP), T(F32), 0, 0, CMP(GTU), 0, 2, 0, one, two, 0, 0, 0},
      {"setp.geu 2,2", OP(SETP), T(F32), 0, 0, CMP(GEU), 0, 2, 0, two, two, 0, 0, 1},
      {"setp.num", OP(SETP), T(F32), 0, 0, CMP(NUM), 0, 2, 0, one, two, 0, 0, 1},
      {"setp.num NaN", OP(SETP), T(F32), 0, 0, CMP(NUM), 0, 2, 0, one, n, 0, 0, 0},
      {"setp.nan", OP(SETP), T(F32), 0, 0, CMP(NAN), 0, 2, 0, one, n, 0, 0, 1},
      {"setp.ge", OP(SETP), T(F32), 0, 0, CMP(GE), 0, 2, 0, two, two, 0, 0, 1},
      {"setp.ne", OP(SETP), T(F32), 0, 0, CMP(NE), 0, 2, 0, one, two, 0, 0, 1},
      {"setp.eq -0 +0", OP(SETP), T(F32), 0, 0, CMP(EQ), 0, 2, 0, F(-0.0f), 0, 0, 0, 1},
      {"setp.eq denorm", OP(SETP), T(F32), 0, 0, CMP(EQ), 0, 2, 0, 1, 0, 0, 0, 0},
      {"setp.eq.ftz denorm", OP(SETP), T(F32), 0, 0, CMP(EQ), 0, 2, FL(FTZ), 1, 0, 0, 0, 1},
      {"setp.lt d|q NaN", OP(SETP), T(F32), 0, 0, CMP(LT), 0, 2, 0, n, one, 0, 0, 0, 1, 1},
      {"setp.lt.and.f32", OP(SETP), T(F32), 0, 0, CMP(LT), GL_PTX_BOOL_AND, 3, 0, one, two, 1, 0, 1, 1, 0},
      {"setp.gtu.f64 NaN", OP(SETP), T(F64), 0, 0, CMP(GTU), 0, 2, 0, D(NAN), D(1.0), 0, 0, 1},
      {"setp.lt.f64", OP(SETP), T(F64), 0, 0, CMP(LT), 0, 2, 0, D(1.0), D(1.0 + 0x1p-52), 0, 0, 1},
      {"set.eq.f32.f32", OP(SET), T(F32), T(F32), 0, CMP(EQ), 0, 2, 0, one, one, 0, 0, F(1.0f)},
      {"set.eq.u32.f32 NaN", OP(SET), T(U32), T(F32), 0, CMP(EQ), 0, 2, 0, n, n, 0, 0, 0},
      {"set.nan.u32.f64", OP(SET), T(U32), T(F64), 0, CMP(NAN), 0, 2, 0, D(NAN), 0, 0, 0, 0xffffffff},
  };
  RUN(t);
}

/* ========================================================================
 * f16 / bf16
 * ====================================================================== */

static void test_half(void **state) {
  (void)state;
  const uint16_t FZ = FL(FTZ);
  const tcase t[] = {
      {"add.f16 tie to even", OP(ADD), T(F16), 0, R(RN), 0, 0, 2, 0, 0x3c00, 0x1000, 0, 0, 0x3c00},
      {"add.f16 above half", OP(ADD), T(F16), 0, R(RN), 0, 0, 2, 0, 0x3c00, 0x1200, 0, 0, 0x3c01},
      {"add.f16 tie up to even", OP(ADD), T(F16), 0, R(RN), 0, 0, 2, 0, 0x3c01, 0x1000, 0, 0, 0x3c02},
      {"add.f16 overflow", OP(ADD), T(F16), 0, R(RN), 0, 0, 2, 0, 0x7bff, 0x7bff, 0, 0, 0x7c00},
      {"add.f16 65520 tie -> inf", OP(ADD), T(F16), 0, R(RN), 0, 0, 2, 0, 0x7bff, 0x4c00, 0, 0, 0x7c00},
      {"add.f16 65512 -> max", OP(ADD), T(F16), 0, R(RN), 0, 0, 2, 0, 0x7bff, 0x4800, 0, 0, 0x7bff},
      {"add.f16 NaN", OP(ADD), T(F16), 0, R(RN), 0, 0, 2, 0, 0x7e01, 0x3c00, 0, 0, 0x7fff},
      {"add.f16 inf-inf", OP(ADD), T(F16), 0, R(RN), 0, 0, 2, 0, 0x7c00, 0xfc00, 0, 0, 0x7fff},
      {"sub.f16", OP(SUB), T(F16), 0, R(RN), 0, 0, 2, 0, 0x4000, 0x3c00, 0, 0, 0x3c00},
      {"mul.f16 denorm", OP(MUL), T(F16), 0, R(RN), 0, 0, 2, 0, 0x0400, 0x3800, 0, 0, 0x0200},
      {"mul.ftz.f16 denorm", OP(MUL), T(F16), 0, R(RN), 0, 0, 2, FZ, 0x0400, 0x3800, 0, 0, 0},
      {"mul.f16 min denorm tie", OP(MUL), T(F16), 0, R(RN), 0, 0, 2, 0, 0x0001, 0x3800, 0, 0, 0},
      {"mul.f16 denorm tie even", OP(MUL), T(F16), 0, R(RN), 0, 0, 2, 0, 0x0003, 0x3800, 0, 0, 0x0002},
      {"mul.f16 neg denorm", OP(MUL), T(F16), 0, R(RN), 0, 0, 2, 0, 0x8003, 0x3800, 0, 0, 0x8002},
      {"mul.sat.f16", OP(MUL), T(F16), 0, R(RN), 0, 0, 2, FL(SAT), 0x4000, 0x4000, 0, 0, 0x3c00},
      {"add.sat.f16 neg", OP(ADD), T(F16), 0, R(RN), 0, 0, 2, FL(SAT), 0xc000, 0x3c00, 0, 0, 0},
      {"fma.rn.f16 fused", OP(FMA), T(F16), 0, R(RN), 0, 0, 3, 0, 0x3c01, 0x3c01, 0xbc02, 0, 0x0010},
      {"fma.rn.f16", OP(FMA), T(F16), 0, R(RN), 0, 0, 3, 0, 0x4000, 0x4200, 0x3c00, 0, 0x4700},
      {"fma.rn.relu.f16", OP(FMA), T(F16), 0, R(RN), 0, 0, 3, FL(RELU), 0x4000, 0xc200, 0x3c00, 0, 0},
      {"fma.rn.f16 0*inf", OP(FMA), T(F16), 0, R(RN), 0, 0, 3, 0, 0, 0x7c00, 0x3c00, 0, 0x7fff},
      {"fma.rn.f16x2", OP(FMA), T(F16X2), 0, R(RN), 0, 0, 3, 0, 0x40003c00, 0x42004000, 0x3c003c00, 0, 0x47004200},
      {"add.f16x2", OP(ADD), T(F16X2), 0, R(RN), 0, 0, 2, 0, 0x3c004000, 0x3c00bc00, 0, 0, 0x40003c00},
      {"neg.f16", OP(NEG), T(F16), 0, 0, 0, 0, 1, 0, 0x3c00, 0, 0, 0, 0xbc00},
      {"abs.f16x2", OP(ABS), T(F16X2), 0, 0, 0, 0, 1, 0, 0x8001bc00, 0, 0, 0, 0x00013c00},
      {"abs.ftz.f16x2", OP(ABS), T(F16X2), 0, 0, 0, 0, 1, FZ, 0x8001bc00, 0, 0, 0, 0x00003c00},
      {"neg.bf16", OP(NEG), T(BF16), 0, 0, 0, 0, 1, 0, 0x3f80, 0, 0, 0, 0xbf80},
      {"min.f16 NaN,1", OP(MIN), T(F16), 0, 0, 0, 0, 2, 0, 0x7e00, 0x3c00, 0, 0, 0x3c00},
      {"min.NaN.f16", OP(MIN), T(F16), 0, 0, 0, 0, 2, FL(NAN), 0x7e00, 0x3c00, 0, 0, 0x7fff},
      {"min.f16 -0,+0", OP(MIN), T(F16), 0, 0, 0, 0, 2, 0, 0x0000, 0x8000, 0, 0, 0x8000},
      {"max.relu.f16", OP(MAX), T(F16), 0, 0, 0, 0, 2, FL(RELU), 0xbc00, 0xc000, 0, 0, 0},
      {"max.f16x2", OP(MAX), T(F16X2), 0, 0, 0, 0, 2, 0, 0x3c00c000, 0x40007e00, 0, 0, 0x4000c000},
      {"min.xorsign.abs.f16", OP(MIN), T(F16), 0, 0, 0, 0, 2, FL(XORSIGN_ABS), 0xc000, 0x4200, 0, 0, 0xc000},
      {"setp.lt.f16x2", OP(SETP), T(F16X2), 0, 0, CMP(LT), 0, 2, 0, 0x40003c00, 0x3c004000, 0, 0, 1, 1, 0},
      {"setp.lt.or.f16x2", OP(SETP), T(F16X2), 0, 0, CMP(LT), GL_PTX_BOOL_OR, 3, 0, 0x40003c00, 0x3c004000, 1, 0, 1, 1, 1},
      {"setp.gt.f16 d|q", OP(SETP), T(F16), 0, 0, CMP(GT), 0, 2, 0, 0x4000, 0x3c00, 0, 0, 1, 1, 0},
      {"setp.equ.f16 NaN", OP(SETP), T(F16), 0, 0, CMP(EQU), 0, 2, 0, 0x7e00, 0x3c00, 0, 0, 1},
      {"setp.eq.f16 NaN", OP(SETP), T(F16), 0, 0, CMP(EQ), 0, 2, 0, 0x7e00, 0x7e00, 0, 0, 0},
      {"set.lt.u32.f16x2", OP(SET), T(U32), T(F16X2), 0, CMP(LT), 0, 2, 0, 0x40003c00, 0x3c004000, 0, 0, 0x0000ffff},
      {"set.lt.f16x2.f16x2", OP(SET), T(F16X2), T(F16X2), 0, CMP(LT), 0, 2, 0, 0x40003c00, 0x3c004000, 0, 0, 0x00003c00},
      {"set.lt.s32.f16x2 both", OP(SET), T(S32), T(F16X2), 0, CMP(LT), 0, 2, 0, 0x3c003c00, 0x40004000, 0, 0, UINT64_MAX},
      {"set.lt.s32.f16", OP(SET), T(S32), T(F16), 0, CMP(LT), 0, 2, 0, 0x3c00, 0x4000, 0, 0, UINT64_MAX},
      {"set.lt.u32.f16", OP(SET), T(U32), T(F16), 0, CMP(LT), 0, 2, 0, 0x3c00, 0x4000, 0, 0, 0xffffffff},
      {"set.nan.f16.f16", OP(SET), T(F16), T(F16), 0, CMP(NAN), 0, 2, 0, 0x7e00, 0x7e00, 0, 0, 0x3c00},
      {"set.num.f16.f16", OP(SET), T(F16), T(F16), 0, CMP(NUM), 0, 2, 0, 0x7e00, 0x7e00, 0, 0, 0},
      {"ex2.approx.f16", OP(EX2), T(F16), 0, 0, 0, 0, 1, FL(APPROX), 0x4000, 0, 0, 0, 0x4400},
      {"tanh.approx.f16 0", OP(TANH), T(F16), 0, 0, 0, 0, 1, FL(APPROX), 0x8000, 0, 0, 0, 0x8000},
      {"add.rn.bf16 tie", OP(ADD), T(BF16), 0, R(RN), 0, 0, 2, 0, 0x3f80, 0x3b80, 0, 0, 0x3f80},
      {"mul.rn.bf16", OP(MUL), T(BF16), 0, R(RN), 0, 0, 2, 0, 0x3f81, 0x3f81, 0, 0, 0x3f82},
      {"fma.rn.bf16 fused", OP(FMA), T(BF16), 0, R(RN), 0, 0, 3, 0, 0x3f81, 0x3f81, 0xbf82, 0, 0x3880},
      /* 1.75 * 0.578125 = 1 + 3*2^-8, a bf16 tie; the 2^-100 addend must
       * decide it although a double cannot hold the exact sum */
      {"fma.rn.bf16 tie broken down", OP(FMA), T(BF16), 0, R(RN), 0, 0, 3, 0, 0x3fe0, 0x3f14, 0x8d80, 0, 0x3f81},
      {"fma.rn.bf16 tie broken up", OP(FMA), T(BF16), 0, R(RN), 0, 0, 3, 0, 0x3fe0, 0x3f14, 0x0d80, 0, 0x3f82},
      {"fma.rn.bf16 tie above even", OP(FMA), T(BF16), 0, R(RN), 0, 0, 3, 0, 0x3f90, 0x3f68, 0x0d80, 0, 0x3f83},
      {"fma.rn.bf16 exact tie", OP(FMA), T(BF16), 0, R(RN), 0, 0, 3, 0, 0x3f90, 0x3f68, 0, 0, 0x3f82},
      {"add.rn.bf16x2", OP(ADD), T(BF16X2), 0, R(RN), 0, 0, 2, 0, 0x3f803f80, 0x3f804000, 0, 0, 0x40004040},
      {"min.bf16 NaN", OP(MIN), T(BF16), 0, 0, 0, 0, 2, 0, 0x7fc0, 0x3f80, 0, 0, 0x3f80},
      {"setp.gt.bf16", OP(SETP), T(BF16), 0, 0, CMP(GT), 0, 2, 0, 0x4000, 0x3f80, 0, 0, 1},
      {"selp.f16", OP(SELP), T(F16), 0, 0, 0, 0, 3, 0, 0x3c00, 0x4000, 0, 0, 0x4000},
      {"mov.b32 f16x2", OP(MOV), T(F16X2), 0, 0, 0, 0, 1, 0, 0x1234567840003c00ull, 0, 0, 0, 0x40003c00},
  };
  RUN(t);
}

/* ========================================================================
 * cvt
 * ====================================================================== */

static void test_cvt_int(void **state) {
  (void)state;
  const uint16_t SAT = FL(SAT);
  const tcase t[] = {
      {"cvt.sat.u8.s32 300", OP(CVT), T(U8), T(S32), 0, 0, 0, 1, SAT, 300, 0, 0, 0, 255},
      {"cvt.sat.u8.s32 -5", OP(CVT), T(U8), T(S32), 0, 0, 0, 1, SAT, S(-5), 0, 0, 0, 0},
      {"cvt.u8.s32 300", OP(CVT), T(U8), T(S32), 0, 0, 0, 1, 0, 300, 0, 0, 0, 44},
      {"cvt.s8.s32 200", OP(CVT), T(S8), T(S32), 0, 0, 0, 1, 0, 200, 0, 0, 0, S(-56)},
      {"cvt.sat.s8.s32 200", OP(CVT), T(S8), T(S32), 0, 0, 0, 1, SAT, 200, 0, 0, 0, 127},
      {"cvt.sat.s8.s32 -200", OP(CVT), T(S8), T(S32), 0, 0, 0, 1, SAT, S(-200), 0, 0, 0, S(-128)},
      {"cvt.sat.u32.s64 -1", OP(CVT), T(U32), T(S64), 0, 0, 0, 1, SAT, S(-1), 0, 0, 0, 0},
      {"cvt.sat.s32.u32 max", OP(CVT), T(S32), T(U32), 0, 0, 0, 1, SAT, 0xffffffff, 0, 0, 0, 0x7fffffff},
      {"cvt.sat.s64.u64 max", OP(CVT), T(S64), T(U64), 0, 0, 0, 1, SAT, UINT64_MAX, 0, 0, 0, S(INT64_MAX)},
      {"cvt.sat.u64.s64 -1", OP(CVT), T(U64), T(S64), 0, 0, 0, 1, SAT, S(-1), 0, 0, 0, 0},
      {"cvt.s64.s32 -1", OP(CVT), T(S64), T(S32), 0, 0, 0, 1, 0, 0xffffffff, 0, 0, 0, UINT64_MAX},
      {"cvt.u64.s32 -1", OP(CVT), T(U64), T(S32), 0, 0, 0, 1, 0, 0xffffffff, 0, 0, 0, UINT64_MAX},
      {"cvt.u64.u32", OP(CVT), T(U64), T(U32), 0, 0, 0, 1, 0, 0xffffffffffffffffull, 0, 0, 0, 0xffffffff},
      {"cvt.s32.s8", OP(CVT), T(S32), T(S8), 0, 0, 0, 1, 0, 0x80, 0, 0, 0, S(-128)},
      {"cvt.u32.u8", OP(CVT), T(U32), T(U8), 0, 0, 0, 1, 0, 0x1ff, 0, 0, 0, 0xff},
      {"cvt.u16.s8", OP(CVT), T(U16), T(S8), 0, 0, 0, 1, 0, 0x80, 0, 0, 0, 0xff80},
      {"cvt.s16.b32", OP(CVT), T(S16), T(B32), 0, 0, 0, 1, 0, 0x18000, 0, 0, 0, S(-32768)},
      {"cvt.sat.u16.u32", OP(CVT), T(U16), T(U32), 0, 0, 0, 1, SAT, 0x10000, 0, 0, 0, 0xffff},
  };
  RUN(t);
}

static void test_cvt_f2i(void **state) {
  (void)state;
  const tcase t[] = {
      {"cvt.rni.s32.f32 2.5", OP(CVT), T(S32), T(F32), R(RNI), 0, 0, 1, 0, F(2.5f), 0, 0, 0, 2},
      {"cvt.rni.s32.f32 -2.5", OP(CVT), T(S32), T(F32), R(RNI), 0, 0, 1, 0, F(-2.5f), 0, 0, 0, S(-2)},
      {"cvt.rni.s32.f32 3.5", OP(CVT), T(S32), T(F32), R(RNI), 0, 0, 1, 0, F(3.5f), 0, 0, 0, 4},
      {"cvt.rzi.s32.f32 -2.7", OP(CVT), T(S32), T(F32), R(RZI), 0, 0, 1, 0, F(-2.7f), 0, 0, 0, S(-2)},
      {"cvt.rmi.s32.f32 -2.1", OP(CVT), T(S32), T(F32), R(RMI), 0, 0, 1, 0, F(-2.1f), 0, 0, 0, S(-3)},
      {"cvt.rpi.s32.f32 2.1", OP(CVT), T(S32), T(F32), R(RPI), 0, 0, 1, 0, F(2.1f), 0, 0, 0, 3},
      {"cvt.rzi.s32.f32 NaN", OP(CVT), T(S32), T(F32), R(RZI), 0, 0, 1, 0, F(NAN), 0, 0, 0, 0},
      /* NaN to integers as an H200 gives: the top bit alone from f64, or
       * to 64 bits */
      {"cvt.rzi.s64.f32 NaN", OP(CVT), T(S64), T(F32), R(RZI), 0, 0, 1, 0, F(NAN), 0, 0, 0, 0x8000000000000000ull},
      {"cvt.rni.u64.f32 NaN", OP(CVT), T(U64), T(F32), R(RNI), 0, 0, 1, 0, 0x7fc12345, 0, 0, 0, 0x8000000000000000ull},
      {"cvt.rzi.s32.f64 NaN", OP(CVT), T(S32), T(F64), R(RZI), 0, 0, 1, 0, 0x7ff8000000005678ull, 0, 0, 0, 0xffffffff80000000ull},
      {"cvt.rzi.u32.f64 NaN", OP(CVT), T(U32), T(F64), R(RZI), 0, 0, 1, 0, 0x7ff8000000005678ull, 0, 0, 0, 0x80000000ull},
      {"cvt.rzi.u16.f32 NaN", OP(CVT), T(U16), T(F32), R(RZI), 0, 0, 1, 0, 0x7fc12345, 0, 0, 0, 0},
      {"cvt.rzi.s32.f32 3e9", OP(CVT), T(S32), T(F32), R(RZI), 0, 0, 1, 0, F(3e9f), 0, 0, 0, 0x7fffffff},
      {"cvt.rzi.s32.f32 -3e9", OP(CVT), T(S32), T(F32), R(RZI), 0, 0, 1, 0, F(-3e9f), 0, 0, 0, S(INT32_MIN)},
      {"cvt.rzi.s32.f32 inf", OP(CVT), T(S32), T(F32), R(RZI), 0, 0, 1, 0, F(INFINITY), 0, 0, 0, 0x7fffffff},
      {"cvt.rzi.u32.f32 -1.5", OP(CVT), T(U32), T(F32), R(RZI), 0, 0, 1, 0, F(-1.5f), 0, 0, 0, 0},
      {"cvt.rzi.u32.f32 5e9", OP(CVT), T(U32), T(F32), R(RZI), 0, 0, 1, 0, F(5e9f), 0, 0, 0, 0xffffffff},
      {"cvt.rzi.u64.f64 1e30", OP(CVT), T(U64), T(F64), R(RZI), 0, 0, 1, 0, D(1e30), 0, 0, 0, UINT64_MAX},
      {"cvt.rzi.s64.f64 -1e30", OP(CVT), T(S64), T(F64), R(RZI), 0, 0, 1, 0, D(-1e30), 0, 0, 0, S(INT64_MIN)},
      {"cvt.rni.s64.f64 2^63", OP(CVT), T(S64), T(F64), R(RNI), 0, 0, 1, 0, D(0x1p63), 0, 0, 0, S(INT64_MAX)},
      {"cvt.rni.s64.f64 -2^63", OP(CVT), T(S64), T(F64), R(RNI), 0, 0, 1, 0, D(-0x1p63), 0, 0, 0, S(INT64_MIN)},
      {"cvt.rzi.u64.f32 2^63", OP(CVT), T(U64), T(F32), R(RZI), 0, 0, 1, 0, F(0x1p63f), 0, 0, 0, 1ull << 63},
      {"cvt.rzi.u8.f32 300", OP(CVT), T(U8), T(F32), R(RZI), 0, 0, 1, 0, F(300.0f), 0, 0, 0, 255},
      {"cvt.rzi.s16.f32 -40000", OP(CVT), T(S16), T(F32), R(RZI), 0, 0, 1, 0, F(-40000.0f), 0, 0, 0, S(-32768)},
      {"cvt.rmi.s32.f32 -denorm", OP(CVT), T(S32), T(F32), R(RMI), 0, 0, 1, 0, 0x80000001, 0, 0, 0, S(-1)},
      {"cvt.rmi.ftz.s32.f32 -denorm", OP(CVT), T(S32), T(F32), R(RMI), 0, 0, 1, FL(FTZ), 0x80000001, 0, 0, 0, 0},
      {"cvt.rzi.s32.f16 -2.5", OP(CVT), T(S32), T(F16), R(RZI), 0, 0, 1, 0, 0xc100, 0, 0, 0, S(-2)},
      {"cvt.rni.u16.f16 inf", OP(CVT), T(U16), T(F16), R(RNI), 0, 0, 1, 0, 0x7c00, 0, 0, 0, 0xffff},
      {"cvt.rni.s32.bf16", OP(CVT), T(S32), T(BF16), R(RNI), 0, 0, 1, 0, 0xc020, 0, 0, 0, S(-2)},
      {"cvt.rni.s32.f64 tie", OP(CVT), T(S32), T(F64), R(RNI), 0, 0, 1, 0, D(-3.5), 0, 0, 0, S(-4)},
  };
  RUN(t);
}

static void test_cvt_i2f(void **state) {
  (void)state;
  const tcase t[] = {
      {"cvt.rn.f32.s32 2^24+1", OP(CVT), T(F32), T(S32), R(RN), 0, 0, 1, 0, 16777217, 0, 0, 0, 0x4b800000},
      {"cvt.rp.f32.s32 2^24+1", OP(CVT), T(F32), T(S32), R(RP), 0, 0, 1, 0, 16777217, 0, 0, 0, 0x4b800001},
      {"cvt.rn.f32.s32 2^24+3", OP(CVT), T(F32), T(S32), R(RN), 0, 0, 1, 0, 16777219, 0, 0, 0, 0x4b800002},
      {"cvt.rm.f32.s64 -(2^24+1)", OP(CVT), T(F32), T(S64), R(RM), 0, 0, 1, 0, S(-16777217), 0, 0, 0, 0xcb800001},
      {"cvt.rz.f32.s64 -(2^24+1)", OP(CVT), T(F32), T(S64), R(RZ), 0, 0, 1, 0, S(-16777217), 0, 0, 0, 0xcb800000},
      {"cvt.rn.f32.u64 max", OP(CVT), T(F32), T(U64), R(RN), 0, 0, 1, 0, UINT64_MAX, 0, 0, 0, 0x5f800000},
      {"cvt.rz.f32.u64 max", OP(CVT), T(F32), T(U64), R(RZ), 0, 0, 1, 0, UINT64_MAX, 0, 0, 0, 0x5f7fffff},
      {"cvt.rn.f32.u32 max", OP(CVT), T(F32), T(U32), R(RN), 0, 0, 1, 0, 0xffffffff, 0, 0, 0, 0x4f800000},
      {"cvt.rn.f32.s32 min", OP(CVT), T(F32), T(S32), R(RN), 0, 0, 1, 0, S(INT32_MIN), 0, 0, 0, 0xcf000000},
      {"cvt.rn.f32.s16", OP(CVT), T(F32), T(S16), R(RN), 0, 0, 1, 0, 0xffff, 0, 0, 0, F(-1.0f)},
      {"cvt.rn.f64.s64 2^53+1", OP(CVT), T(F64), T(S64), R(RN), 0, 0, 1, 0, (1ull << 53) + 1, 0, 0, 0, D(0x1p53)},
      {"cvt.rp.f64.s64 2^53+1", OP(CVT), T(F64), T(S64), R(RP), 0, 0, 1, 0, (1ull << 53) + 1, 0, 0, 0, D(0x1p53 + 2)},
      {"cvt.rn.f64.s64 min", OP(CVT), T(F64), T(S64), R(RN), 0, 0, 1, 0, S(INT64_MIN), 0, 0, 0, D(-0x1p63)},
      {"cvt.rn.f64.u32", OP(CVT), T(F64), T(U32), R(RN), 0, 0, 1, 0, 0xffffffff, 0, 0, 0, D(4294967295.0)},
      {"cvt.rn.f16.s32 2049", OP(CVT), T(F16), T(S32), R(RN), 0, 0, 1, 0, 2049, 0, 0, 0, 0x6800},
      {"cvt.rn.f16.u32 70000", OP(CVT), T(F16), T(U32), R(RN), 0, 0, 1, 0, 70000, 0, 0, 0, 0x7c00},
      {"cvt.rz.f16.u32 70000", OP(CVT), T(F16), T(U32), R(RZ), 0, 0, 1, 0, 70000, 0, 0, 0, 0x7bff},
      {"cvt.rn.bf16.s32 257", OP(CVT), T(BF16), T(S32), R(RN), 0, 0, 1, 0, 257, 0, 0, 0, 0x4380},
      {"cvt.rn.sat.f32.s32 5", OP(CVT), T(F32), T(S32), R(RN), 0, 0, 1, FL(SAT), 5, 0, 0, 0, F(1.0f)},
      {"cvt.rn.sat.f32.s32 -5", OP(CVT), T(F32), T(S32), R(RN), 0, 0, 1, FL(SAT), S(-5), 0, 0, 0, 0},
      {"cvt.rn.f32.s32 0", OP(CVT), T(F32), T(S32), R(RN), 0, 0, 1, 0, 0, 0, 0, 0, 0},
  };
  RUN(t);
}

static void test_cvt_float(void **state) {
  (void)state;
  const uint16_t FZ = FL(FTZ);
  const tcase t[] = {
      {"cvt.rn.f16.f32 tie", OP(CVT), T(F16), T(F32), R(RN), 0, 0, 1, 0, F(1.0f + 0x1p-11f), 0, 0, 0, 0x3c00},
      {"cvt.rn.f16.f32 tie up", OP(CVT), T(F16), T(F32), R(RN), 0, 0, 1, 0, F(1.0f + 0x3p-11f), 0, 0, 0, 0x3c02},
      {"cvt.rz.f16.f32", OP(CVT), T(F16), T(F32), R(RZ), 0, 0, 1, 0, F(1.0f + 0x3p-11f), 0, 0, 0, 0x3c01},
      {"cvt.rp.f16.f32", OP(CVT), T(F16), T(F32), R(RP), 0, 0, 1, 0, F(1.0f + 0x1p-20f), 0, 0, 0, 0x3c01},
      {"cvt.rm.f16.f32 neg", OP(CVT), T(F16), T(F32), R(RM), 0, 0, 1, 0, F(-1.0f - 0x1p-20f), 0, 0, 0, 0xbc01},
      {"cvt.rn.f16.f32 65520", OP(CVT), T(F16), T(F32), R(RN), 0, 0, 1, 0, F(65520.0f), 0, 0, 0, 0x7c00},
      {"cvt.rz.f16.f32 65520", OP(CVT), T(F16), T(F32), R(RZ), 0, 0, 1, 0, F(65520.0f), 0, 0, 0, 0x7bff},
      {"cvt.rz.f16.f32 inf", OP(CVT), T(F16), T(F32), R(RZ), 0, 0, 1, 0, F(INFINITY), 0, 0, 0, 0x7c00},
      {"cvt.rn.f16.f32 NaN", OP(CVT), T(F16), T(F32), R(RN), 0, 0, 1, 0, 0xffc00001, 0, 0, 0, 0x7fff},
      {"cvt.rn.f16.f32 2^-25", OP(CVT), T(F16), T(F32), R(RN), 0, 0, 1, 0, F(0x1p-25f), 0, 0, 0, 0},
      {"cvt.rn.f16.f32 >2^-25", OP(CVT), T(F16), T(F32), R(RN), 0, 0, 1, 0, F(0x1p-25f + 0x1p-30f), 0, 0, 0, 0x0001},
      {"cvt.rn.f16.f32 -2^-24", OP(CVT), T(F16), T(F32), R(RN), 0, 0, 1, 0, F(-0x1p-24f), 0, 0, 0, 0x8001},
      {"cvt.rn.f16.f32 denorm", OP(CVT), T(F16), T(F32), R(RN), 0, 0, 1, 0, F(0x1.8p-15f), 0, 0, 0, 0x0300},
      {"cvt.rm.f16.f32 1e-10", OP(CVT), T(F16), T(F32), R(RM), 0, 0, 1, 0, F(1e-10f), 0, 0, 0, 0},
      {"cvt.rp.f16.f32 1e-10", OP(CVT), T(F16), T(F32), R(RP), 0, 0, 1, 0, F(1e-10f), 0, 0, 0, 0x0001},
      {"cvt.rn.f16.f64", OP(CVT), T(F16), T(F64), R(RN), 0, 0, 1, 0, D(1.0 + 0x1p-11 + 0x1p-40), 0, 0, 0, 0x3c01},
      {"cvt.rn.relu.f16.f32", OP(CVT), T(F16), T(F32), R(RN), 0, 0, 1, FL(RELU), F(-3.0f), 0, 0, 0, 0},
      {"cvt.f32.f16 denorm", OP(CVT), T(F32), T(F16), 0, 0, 0, 1, 0, 0x0001, 0, 0, 0, 0x33800000},
      {"cvt.f32.f16 -inf", OP(CVT), T(F32), T(F16), 0, 0, 0, 1, 0, 0xfc00, 0, 0, 0, F(-INFINITY)},
      {"cvt.f32.f16 NaN", OP(CVT), T(F32), T(F16), 0, 0, 0, 1, 0, 0x7e00, 0, 0, 0, 0x7fffffff},
      {"cvt.f32.f16 max", OP(CVT), T(F32), T(F16), 0, 0, 0, 1, 0, 0x7bff, 0, 0, 0, F(65504.0f)},
      {"cvt.f64.f16", OP(CVT), T(F64), T(F16), 0, 0, 0, 1, 0, 0xbc00, 0, 0, 0, D(-1.0)},
      {"cvt.rn.bf16.f32 tie", OP(CVT), T(BF16), T(F32), R(RN), 0, 0, 1, 0, 0x3f808000, 0, 0, 0, 0x3f80},
      {"cvt.rn.bf16.f32 tie up", OP(CVT), T(BF16), T(F32), R(RN), 0, 0, 1, 0, 0x3f818000, 0, 0, 0, 0x3f82},
      {"cvt.rn.bf16.f32 above", OP(CVT), T(BF16), T(F32), R(RN), 0, 0, 1, 0, 0x3f808001, 0, 0, 0, 0x3f81},
      {"cvt.rz.bf16.f32", OP(CVT), T(BF16), T(F32), R(RZ), 0, 0, 1, 0, 0x3f80ffff, 0, 0, 0, 0x3f80},
      {"cvt.rn.bf16.f32 NaN", OP(CVT), T(BF16), T(F32), R(RN), 0, 0, 1, 0, 0x7f800001, 0, 0, 0, 0x7fff},
      {"cvt.rn.bf16.f32 max", OP(CVT), T(BF16), T(F32), R(RN), 0, 0, 1, 0, 0x7f7fffff, 0, 0, 0, 0x7f80},
      {"cvt.f32.bf16", OP(CVT), T(F32), T(BF16), 0, 0, 0, 1, 0, 0xbf80, 0, 0, 0, F(-1.0f)},
      {"cvt.rn.f16x2.f32", OP(CVT), T(F16X2), T(F32), R(RN), 0, 0, 2, 0, F(1.0f), F(2.0f), 0, 0, 0x3c004000},
      {"cvt.rn.relu.f16x2.f32", OP(CVT), T(F16X2), T(F32), R(RN), 0, 0, 2, FL(RELU), F(-1.0f), F(NAN), 0, 0, 0x00007fff},
      {"cvt.rn.bf16x2.f32", OP(CVT), T(BF16X2), T(F32), R(RN), 0, 0, 2, 0, F(-2.0f), 0x3f808001, 0, 0, 0xc0003f81},
      {"cvt.rn.f32.f64", OP(CVT), T(F32), T(F64), R(RN), 0, 0, 1, 0, D(1.0 / 3.0), 0, 0, 0, 0x3eaaaaab},
      {"cvt.rz.f32.f64", OP(CVT), T(F32), T(F64), R(RZ), 0, 0, 1, 0, D(1.0 / 3.0), 0, 0, 0, 0x3eaaaaaa},
      {"cvt.rn.f32.f64 1e300", OP(CVT), T(F32), T(F64), R(RN), 0, 0, 1, 0, D(1e300), 0, 0, 0, 0x7f800000},
      {"cvt.rz.f32.f64 1e300", OP(CVT), T(F32), T(F64), R(RZ), 0, 0, 1, 0, D(1e300), 0, 0, 0, 0x7f7fffff},
      {"cvt.rm.f32.f64 -1e300", OP(CVT), T(F32), T(F64), R(RM), 0, 0, 1, 0, D(-1e300), 0, 0, 0, 0xff800000},
      {"cvt.rp.f32.f64 -1e300", OP(CVT), T(F32), T(F64), R(RP), 0, 0, 1, 0, D(-1e300), 0, 0, 0, 0xff7fffff},
      /* NaN keeps its sign and the payload's top 22 bits, quieted (H200) */
      {"cvt.rn.f32.f64 NaN", OP(CVT), T(F32), T(F64), R(RN), 0, 0, 1, 0, 0x7ff0000000000001ull, 0, 0, 0, 0x7fc00000},
      {"cvt.rn.f32.f64 -NaN payload", OP(CVT), T(F32), T(F64), R(RN), 0, 0, 1, 0, 0xfff4000000000000ull, 0, 0, 0, 0xffe00000},
      {"cvt.rn.f32.f64 denorm", OP(CVT), T(F32), T(F64), R(RN), 0, 0, 1, 0, D(1e-45), 0, 0, 0, 0x00000001},
      {"cvt.rn.ftz.f32.f64 denorm", OP(CVT), T(F32), T(F64), R(RN), 0, 0, 1, FZ, D(-1e-45), 0, 0, 0, 0x80000000},
      {"cvt.f64.f32 NaN payload", OP(CVT), T(F64), T(F32), 0, 0, 0, 1, 0, 0x7fc00001, 0, 0, 0, 0x7ff8000020000000ull},
      {"cvt.f64.f32 denorm", OP(CVT), T(F64), T(F32), 0, 0, 0, 1, 0, 0x00000001, 0, 0, 0, D(0x1p-149)},
      {"cvt.ftz.f64.f32 denorm", OP(CVT), T(F64), T(F32), 0, 0, 0, 1, FZ, 0x80000001, 0, 0, 0, D(-0.0)},
      {"cvt.rni.f32.f32 2.5", OP(CVT), T(F32), T(F32), R(RNI), 0, 0, 1, 0, F(2.5f), 0, 0, 0, F(2.0f)},
      {"cvt.rmi.f32.f32 -0.5", OP(CVT), T(F32), T(F32), R(RMI), 0, 0, 1, 0, F(-0.5f), 0, 0, 0, F(-1.0f)},
      {"cvt.rzi.f32.f32 -0.5", OP(CVT), T(F32), T(F32), R(RZI), 0, 0, 1, 0, F(-0.5f), 0, 0, 0, F(-0.0f)},
      {"cvt.rpi.f64.f64 1.2", OP(CVT), T(F64), T(F64), R(RPI), 0, 0, 1, 0, D(1.2), 0, 0, 0, D(2.0)},
      {"cvt.rni.f64.f64 NaN", OP(CVT), T(F64), T(F64), R(RNI), 0, 0, 1, 0, 0x7ff0000000000001ull, 0, 0, 0, 0x7ff8000000000001ull},
      {"cvt.sat.f32.f32 2", OP(CVT), T(F32), T(F32), 0, 0, 0, 1, FL(SAT), F(2.0f), 0, 0, 0, F(1.0f)},
      {"cvt.sat.f32.f32 NaN", OP(CVT), T(F32), T(F32), 0, 0, 0, 1, FL(SAT), F(NAN), 0, 0, 0, 0},
      {"cvt.ftz.f32.f32 denorm", OP(CVT), T(F32), T(F32), 0, 0, 0, 1, FZ, 0x00000005, 0, 0, 0, 0},
      {"cvt.f32.f32 denorm kept", OP(CVT), T(F32), T(F32), 0, 0, 0, 1, 0, 0x00000005, 0, 0, 0, 5},
  };
  RUN(t);
}

/* ========================================================================
 * Lanes, masks, aliasing, refusals, f16 conversion helpers
 * ====================================================================== */

/* Every lane gets its own operands; a full-mask run must give each lane
 * the result a one-lane run gives, and a partial mask must leave the other
 * lanes alone. */
static void test_lanes_independent(void **state) {
  (void)state;
  const tcase ops[] = {
      {"add.u32", OP(ADD), T(U32), 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0},
      {"mul.wide.s32", OP(MUL), T(S32), 0, 0, GL_PTX_MUL_WIDE, 0, 2, 0, 0, 0, 0, 0, 0},
      {"mad.lo.s64", OP(MAD), T(S64), 0, 0, GL_PTX_MUL_LO, 0, 3, 0, 0, 0, 0, 0, 0},
      {"shl.b32", OP(SHL), T(B32), 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0},
      {"setp.lt.s32", OP(SETP), T(S32), 0, 0, CMP(LT), 0, 2, 0, 0, 0, 0, 0, 0},
      {"add.f32", OP(ADD), T(F32), 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0},
      {"add.rz.f32", OP(ADD), T(F32), 0, R(RZ), 0, 0, 2, 0, 0, 0, 0, 0, 0},
      {"fma.rn.f32", OP(FMA), T(F32), 0, R(RN), 0, 0, 3, 0, 0, 0, 0, 0, 0},
      {"fma.rn.f16x2", OP(FMA), T(F16X2), 0, R(RN), 0, 0, 3, 0, 0, 0, 0, 0, 0},
      {"cvt.rni.s32.f32", OP(CVT), T(S32), T(F32), R(RNI), 0, 0, 1, 0, 0, 0, 0, 0, 0},
      {"cvt.rn.f16.f32", OP(CVT), T(F16), T(F32), R(RN), 0, 0, 1, 0, 0, 0, 0, 0, 0},
      {"prmt.b32", OP(PRMT), T(B32), 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0},
      {"bfe.s32", OP(BFE), T(S32), 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0},
      {"div.s32", OP(DIV), T(S32), 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0},
      {"min.f32", OP(MIN), T(F32), 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0},
  };
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    gl_ptx_insn in = mk(&ops[k]);
    rows full, part;
    for (unsigned l = 0; l < GL_EMU_WARP; l++) {
      for (unsigned s = 0; s < 4; s++) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        /* keep shift amounts and bfe fields small some of the time */
        full.s[s][l] = (l & 1) ? (seed & 0x3f3f3f3f) : seed;
      }
      /* floats: sane values in the low 32 bits for half the lanes */
      if (l % 3 == 0)
        full.s[0][l] = F((float)l * 0.75f - 5.0f);
      /* small second operands (shift amounts, divisors) in some lanes */
      if (l % 4 == 1)
        full.s[1][l] = l;
      full.d[0][l] = full.d[1][l] = SENTINEL;
      full.cc[l] = 0;
    }
    part = full;
    assert_int_equal(exec_rows(&in, &full, UINT32_MAX), 0);
    const uint32_t pmask = 0xa5a5a5a5u;
    assert_int_equal(exec_rows(&in, &part, pmask), 0);
    int differ = 0;
    for (unsigned l = 0; l < GL_EMU_WARP; l++) {
      rows one = full;
      one.d[0][l] = SENTINEL;
      assert_int_equal(exec_rows(&in, &one, 1u << l), 0);
      if (one.d[0][l] != full.d[0][l])
        print_error("FAIL %s lane %u\n", ops[k].name, l);
      assert_int_equal(one.d[0][l], full.d[0][l]);
      if ((pmask >> l) & 1u)
        assert_int_equal(part.d[0][l], full.d[0][l]);
      else
        assert_int_equal(part.d[0][l], SENTINEL);
      assert_int_equal(part.d[1][l], SENTINEL);
      if (l && full.d[0][l] != full.d[0][0])
        differ = 1;
    }
    if (!differ)
      print_error("FAIL %s: every lane got the same value\n", ops[k].name);
    assert_true(differ); /* the lanes really computed different values */
  }
}

/* The destination row may be a source row (add r1, r1, r2). */
static void test_alias(void **state) {
  (void)state;
  uint64_t a[GL_EMU_WARP], b[GL_EMU_WARP];
  for (unsigned l = 0; l < GL_EMU_WARP; l++) {
    a[l] = l;
    b[l] = 100 + l;
  }
  tcase c = {"add.u32", OP(ADD), T(U32), 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0};
  gl_ptx_insn in = mk(&c);
  uint64_t *const dst[2] = {a, NULL};
  const uint64_t *const src[4] = {a, b, NULL, NULL};
  assert_int_equal(gl_emu_alu_exec(&in, dst, src, NULL, UINT32_MAX), 0);
  for (unsigned l = 0; l < GL_EMU_WARP; l++)
    assert_int_equal(a[l], 100 + 2 * l);
  /* cvt.rn.f16x2.f32 d, a, b with d == b */
  uint64_t x[GL_EMU_WARP], y[GL_EMU_WARP];
  for (unsigned l = 0; l < GL_EMU_WARP; l++) {
    x[l] = F(1.0f);
    y[l] = F(2.0f);
  }
  tcase cv = {"cvt", OP(CVT), T(F16X2), T(F32), R(RN), 0, 0, 2, 0, 0, 0, 0, 0, 0};
  gl_ptx_insn in2 = mk(&cv);
  uint64_t *const dst2[2] = {y, NULL};
  const uint64_t *const src2[4] = {x, y, NULL, NULL};
  assert_int_equal(gl_emu_alu_exec(&in2, dst2, src2, NULL, UINT32_MAX), 0);
  for (unsigned l = 0; l < GL_EMU_WARP; l++)
    assert_int_equal(y[l], 0x3c004000);
}

/* A directed rounding mode is switched back after the instruction. */
static void test_rounding_restored(void **state) {
  (void)state;
  const tcase rz = {"add.rz.f32", OP(ADD), T(F32), 0, R(RZ), 0, 0, 2, 0, F(1.0f), 0x33c00000, 0, 0, 0};
  const tcase rn = {"add.f32", OP(ADD), T(F32), 0, 0, 0, 0, 2, 0, F(1.0f), 0x33c00000, 0, 0, 0};
  rows r;
  memset(&r, 0, sizeof r);
  r.s[0][0] = F(1.0f);
  r.s[1][0] = 0x33c00000;
  gl_ptx_insn i1 = mk(&rz), i2 = mk(&rn);
  assert_int_equal(exec_rows(&i1, &r, 1), 0);
  assert_int_equal(r.d[0][0], 0x3f800000);
  assert_int_equal(fegetround(), FE_TONEAREST);
  assert_int_equal(exec_rows(&i2, &r, 1), 0);
  assert_int_equal(r.d[0][0], 0x3f800001);
}

static void test_refused(void **state) {
  (void)state;
  const tcase bad[] = {
      {"nop", OP(NOP), T(U32), 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0},
      {"ld is not alu", OP(LD), T(U32), 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0},
      {"add.pred", OP(ADD), T(PRED), 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0},
      {"add.sat.u32", OP(ADD), T(U32), 0, 0, 0, 0, 2, FL(SAT), 0, 0, 0, 0, 0},
      {"mul.wide.u64", OP(MUL), T(U64), 0, 0, GL_PTX_MUL_WIDE, 0, 2, 0, 0, 0, 0, 0, 0},
      {"bfe.b16", OP(BFE), T(B16), 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0},
      {"cvt.pred.u32", OP(CVT), T(PRED), T(U32), 0, 0, 0, 1, 0, 0, 0, 0, 0, 0},
      {"cvt.f16x2.f64", OP(CVT), T(F16X2), T(F64), 0, 0, 0, 2, 0, 0, 0, 0, 0, 0},
      {"setp.lo.f32", OP(SETP), T(F32), 0, 0, CMP(LO), 0, 2, 0, 0, 0, 0, 0, 0},
      {"setp.equ.s32", OP(SETP), T(S32), 0, 0, CMP(EQU), 0, 2, 0, 0, 0, 0, 0, 0},
      {"set.eq.u16.u32", OP(SET), T(U16), T(U32), 0, CMP(EQ), 0, 2, 0, 0, 0, 0, 0, 0},
      {"div.f16", OP(DIV), T(F16), 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0},
      {"add b128", OP(ADD), T(B128), 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gl_ptx_insn in = mk(&bad[i]);
    rows r;
    memset(&r, 0, sizeof r);
    if (exec_rows(&in, &r, UINT32_MAX) != -1)
      print_error("FAIL %s accepted\n", bad[i].name);
    assert_int_equal(exec_rows(&in, &r, UINT32_MAX), -1);
  }
}

/* f16 -> f32 is exact and f32 -> f16 is round-to-nearest-even: checked
 * against their definitions on every f16 value and on floats around every
 * rounding boundary, and against the cvt instruction. */
static void test_f16_helpers(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = gl_emu_f16_to_f32((uint16_t)h);
    unsigned ex = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (ex == 0x1f && man) {
      assert_true(isnan(f));
      assert_int_equal(gl_emu_f32_to_f16_rn(f), 0x7fff);
      continue;
    }
    double want = ex == 0x1f ? INFINITY
                             : ex == 0 ? ldexp((double)man, -24)
                                       : ldexp((double)(man | 0x400), (int)ex - 25);
    if (h & 0x8000)
      want = -want;
    assert_true((double)f == want);
    assert_int_equal(signbit(f) != 0, (h & 0x8000) != 0);
    assert_int_equal(gl_emu_f32_to_f16_rn(f), h); /* round trip */
    /* midpoints to the next f16 up: ties go to the even neighbour, a hair
     * above goes up, a hair below goes down */
    if (ex < 0x1e || (ex == 0x1e && man < 0x3ff)) {
      float next = gl_emu_f16_to_f32((uint16_t)(h + 1));
      if (!(h & 0x8000) && isfinite(next)) {
        double mid = ((double)f + (double)next) / 2;
        uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        assert_int_equal(gl_emu_f32_to_f16_rn((float)mid), even);
        assert_int_equal(gl_emu_f32_to_f16_rn(nextafterf((float)mid, INFINITY)), h + 1);
        assert_int_equal(gl_emu_f32_to_f16_rn(nextafterf((float)mid, 0.0f)), h);
      }
    }
  }
  /* the f16 maximum's rounding boundary */
  assert_int_equal(gl_emu_f32_to_f16_rn(65519.996f), 0x7bff);
  assert_int_equal(gl_emu_f32_to_f16_rn(65520.0f), 0x7c00);
  assert_int_equal(gl_emu_f32_to_f16_rn(-1e30f), 0xfc00);
  assert_int_equal(gl_emu_f32_to_f16_rn(-0.0f), 0x8000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_int_add_sub),
      cmocka_unit_test(test_int_mul_mad),
      cmocka_unit_test(test_int_div_rem_misc),
      cmocka_unit_test(test_int_logic_shift),
      cmocka_unit_test(test_int_bits),
      cmocka_unit_test(test_prmt_shf_dp),
      cmocka_unit_test(test_int_compare_select),
      cmocka_unit_test(test_float_add_mul),
      cmocka_unit_test(test_float_fma),
      cmocka_unit_test(test_float_div_sqrt),
      cmocka_unit_test(test_float_approx),
      cmocka_unit_test(test_float_minmax_bits),
      cmocka_unit_test(test_float_compare),
      cmocka_unit_test(test_half),
      cmocka_unit_test(test_cvt_int),
      cmocka_unit_test(test_cvt_f2i),
      cmocka_unit_test(test_cvt_i2f),
      cmocka_unit_test(test_cvt_float),
      cmocka_unit_test(test_lanes_independent),
      cmocka_unit_test(test_alias),
      cmocka_unit_test(test_rounding_restored),
      cmocka_unit_test(test_refused),
      cmocka_unit_test(test_f16_helpers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
