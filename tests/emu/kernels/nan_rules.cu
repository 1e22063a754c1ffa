// nan_rules.cu - which NaN each floating-point instruction returns: the
// default NaN of invalid operations, payload propagation (and which operand
// wins), neg/abs/min/max/cvt of NaNs, for f64 and f32. PTX leaves these
// bits open; the reference holds what an NVIDIA H200 returned, and the
// comparison is bit for bit (U64 outputs), so the emulator must match it.
// Only one operand of each operation is a NaN: with two, which one the GPU
// returns depends on the operand order ptxas picks for commutative
// instructions, which the PTX does not fix.
// Inline PTX keeps nvcc from rewriting the operations. One thread.
#include <cstdint>
__device__ double d(uint64_t u) { return __longlong_as_double(u); }
__device__ float f(uint32_t u) { return __uint_as_float(u); }
extern "C" __global__ void nan_rules(const uint64_t *in64, const uint32_t *in32, uint64_t *o) {
  double inf = d(in64[0]), zero = d(in64[1]), one = d(in64[2]), qn = d(in64[3]), nqn = d(in64[4]), pn = d(in64[5]);
  float finf = f(in32[0]), fzero = f(in32[1]), fone = f(in32[2]), fqn = f(in32[3]), fnqn = f(in32[4]), fpn = f(in32[5]);
  double r; float s; int i = 0;
#define D1(ins, a) asm(ins " %0, %1;" : "=d"(r) : "d"(a)); o[i++] = __double_as_longlong(r);
#define D2(ins, a, b) asm(ins " %0, %1, %2;" : "=d"(r) : "d"(a), "d"(b)); o[i++] = __double_as_longlong(r);
#define D3(ins, a, b, c) asm(ins " %0, %1, %2, %3;" : "=d"(r) : "d"(a), "d"(b), "d"(c)); o[i++] = __double_as_longlong(r);
#define F1(ins, a) asm(ins " %0, %1;" : "=f"(s) : "f"(a)); o[i++] = __float_as_uint(s);
#define F2(ins, a, b) asm(ins " %0, %1, %2;" : "=f"(s) : "f"(a), "f"(b)); o[i++] = __float_as_uint(s);
#define F3(ins, a, b, c) asm(ins " %0, %1, %2, %3;" : "=f"(s) : "f"(a), "f"(b), "f"(c)); o[i++] = __float_as_uint(s);
  D2("add.rn.f64", inf, -inf)      // 0
  D2("mul.rn.f64", inf, zero)      // 1
  D3("fma.rn.f64", inf, zero, one) // 2
  D2("div.rn.f64", zero, zero)     // 3
  D1("sqrt.rn.f64", -one)          // 4
  D2("add.rn.f64", pn, one)        // 5 payload NaN in
  D2("add.rn.f64", nqn, one)       // 6
  D1("neg.f64", pn)                // 7
  D1("abs.f64", nqn)               // 8
  D2("min.f64", qn, one)           // 9
  D3("fma.rn.f64", one, one, pn)   // 10
  D2("mul.rn.f64", pn, one)        // 11
  D1("rcp.rn.f64", pn)             // 12
  D2("sub.rn.f64", inf, inf)       // 13
  F2("add.rn.f32", finf, -finf)    // 14
  F2("mul.rn.f32", finf, fzero)    // 15
  F3("fma.rn.f32", finf, fzero, fone) // 16
  F2("div.rn.f32", fzero, fzero)   // 17
  F1("sqrt.rn.f32", -fone)         // 18
  F2("add.rn.f32", fpn, fone)      // 19
  F1("neg.f32", fpn)               // 20
  F1("abs.f32", fnqn)              // 21
  F2("min.f32", fqn, fnqn)         // 22
  F1("neg.f32", fnqn)              // 23
  F1("abs.f32", fpn)               // 24
  F2("copysign.f32", fpn, fone)    // 25
  { float t; asm("cvt.rn.f32.f64 %0, %1;" : "=f"(t) : "d"(pn)); o[i++] = __float_as_uint(t); } // 26
  { double t; asm("cvt.f64.f32 %0, %1;" : "=d"(t) : "f"(fpn)); o[i++] = __double_as_longlong(t); } // 27
  F1("neg.ftz.f32", fpn)           // 28
  F1("abs.ftz.f32", fpn)           // 29
  { double t; asm("neg.f64 %0, %1;" : "=d"(t) : "d"(nqn)); o[i++] = __double_as_longlong(t); } // 30
  { double t; asm("abs.f64 %0, %1;" : "=d"(t) : "d"(pn)); o[i++] = __double_as_longlong(t); } // 31
  F1("rcp.rn.f32", fpn)            // 32
  F1("sqrt.approx.f32", -fone)     // 33
  F1("rcp.approx.f32", fpn)        // 34
  { float t; asm("cvt.rni.f32.f32 %0, %1;" : "=f"(t) : "f"(fpn)); o[i++] = __float_as_uint(t); } // 35
  D2("max.f64", pn, one)           // 36
  F2("max.f32", fpn, fone)         // 37
  { float t; asm("cvt.rn.f32.f64 %0, %1;" : "=f"(t) : "d"(nqn)); o[i++] = __float_as_uint(t); } // 38
  D2("div.rn.f64", pn, one)        // 39
  D1("sqrt.rn.f64", pn)            // 40
  F2("div.rn.f32", fpn, fone)      // 41
  F1("sqrt.rn.f32", fpn)           // 42
  D2("div.rn.f64", inf, inf)       // 43
  D2("div.rn.f64", one, zero)      // 44
  // conversions of NaN to integers
  {
    double fd = d(in64[9]);
    float fa = f(in32[6]);
    o[63] = i;
    int s; unsigned u; short h; unsigned short uh; long long l; unsigned long long ul;
    i = 64;
    asm("cvt.rzi.u32.f64 %0, %1;" : "=r"(u) : "d"(fd)); o[i++] = u;                     // 64
    asm("cvt.rzi.s16.f64 %0, %1;" : "=h"(h) : "d"(fd)); o[i++] = (uint16_t)h;           // 65
    asm("cvt.rzi.u16.f64 %0, %1;" : "=h"(uh) : "d"(fd)); o[i++] = uh;                   // 66
    asm("cvt.rzi.s16.f32 %0, %1;" : "=h"(h) : "f"(fa)); o[i++] = (uint16_t)h;           // 67
    asm("cvt.rzi.u16.f32 %0, %1;" : "=h"(uh) : "f"(fa)); o[i++] = uh;                   // 68
    asm("cvt.rni.s32.f64 %0, %1;" : "=r"(s) : "d"(fd)); o[i++] = (uint32_t)s;           // 69
    asm("cvt.rni.u32.f64 %0, %1;" : "=r"(u) : "d"(fd)); o[i++] = u;                     // 70
    asm("cvt.rzi.s32.f32 %0, %1;" : "=r"(s) : "f"(fa)); o[i++] = (uint32_t)s;           // 71
    { unsigned short hv = 0x7e00; asm("cvt.rzi.s32.f16 %0, %1;" : "=r"(s) : "h"(hv)); o[i++] = (uint32_t)s; } // 72
    { unsigned short hv = 0x7e00; asm("cvt.rzi.s64.f16 %0, %1;" : "=l"(l) : "h"(hv)); o[i++] = l; }          // 73
    { unsigned short hv = 0x7e00; asm("cvt.rzi.u16.f16 %0, %1;" : "=h"(uh) : "h"(hv)); o[i++] = uh; }        // 74
    asm("cvt.rzi.sat.s8.f64 %0, %1;" : "=h"(h) : "d"(fd)); o[i++] = (uint16_t)h;        // 75
    asm("cvt.rzi.s64.f32 %0, %1;" : "=l"(l) : "f"(fa)); o[i++] = l;                     // 76
    asm("cvt.rni.u64.f32 %0, %1;" : "=l"(ul) : "f"(fa)); o[i++] = ul;                   // 77
    asm("cvt.rmi.s64.f64 %0, %1;" : "=l"(l) : "d"(fd)); o[i++] = l;                     // 78
    asm("cvt.rzi.u64.f64 %0, %1;" : "=l"(ul) : "d"(fd)); o[i++] = ul;                   // 79
  }
}
