#!/usr/bin/env python3
"""Writes the matrix-instruction test kernels (mma_sm80.cu, mma_sm90.cu) and
compiles them to the PTX checked in beside this script:

    python3 tests/emu/mma/gen.py          # needs nvcc (CUDA 12.x or 13.x)

which runs
    nvcc --ptx -arch=sm_80  -o mma_sm80.ptx mma_sm80.cu
    nvcc --ptx -arch=sm_90a -o mma_sm90.ptx mma_sm90.cu

Every kernel moves raw register values between global memory and the
instruction under test, one warp (mma, ldmatrix, stmatrix, movmatrix) or
one warpgroup (wgmma) a block; test_emu_mma.c builds the inputs and checks
the outputs against its own reading of the PTX ISA's fragment layouts.
"""
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def regs(first, n):
    return "{" + ",".join("%%%d" % (first + i) for i in range(n)) + "}"


# name, instruction, (nd, na, nb, nc), f64
MMAS = [
    ("mma_f16_16816_f32", "m16n8k16.row.col.f32.f16.f16.f32", (4, 4, 2, 4)),
    ("mma_f16_16816_f16", "m16n8k16.row.col.f16.f16.f16.f16", (2, 4, 2, 2)),
    ("mma_f16_1688_f32", "m16n8k8.row.col.f32.f16.f16.f32", (4, 2, 1, 4)),
    ("mma_bf16_16816", "m16n8k16.row.col.f32.bf16.bf16.f32", (4, 4, 2, 4)),
    ("mma_bf16_1688", "m16n8k8.row.col.f32.bf16.bf16.f32", (4, 2, 1, 4)),
    ("mma_tf32_1688", "m16n8k8.row.col.f32.tf32.tf32.f32", (4, 4, 2, 4)),
    ("mma_tf32_1684", "m16n8k4.row.col.f32.tf32.tf32.f32", (4, 2, 1, 4)),
    ("mma_f64_884", "m8n8k4.row.col.f64.f64.f64.f64", (2, 1, 1, 2)),
    ("mma_s8_16832", "m16n8k32.row.col.s32.s8.s8.s32", (4, 4, 2, 4)),
    ("mma_u8s8_16832_sat", "m16n8k32.row.col.satfinite.s32.u8.s8.s32", (4, 4, 2, 4)),
    ("mma_s8u8_16816", "m16n8k16.row.col.s32.s8.u8.s32", (4, 2, 1, 4)),
    ("mma_s8_8816", "m8n8k16.row.col.s32.s8.s8.s32", (2, 1, 1, 2)),
]


def mma_kernel(name, insn, counts):
    nd, na, nb, nc = counts
    f64 = "f64" in insn
    t, cd = ("double", "d") if f64 else ("unsigned", "r")
    s = 'extern "C" __global__ void %s(const %s *a, const %s *b, const %s *c, %s *d) {\n' % (
        name, t, t, t, t)
    s += "  unsigned l = threadIdx.x;\n"
    s += "  %s A[%d], B[%d], C[%d], D[%d];\n" % (t, na, nb, nc, nd)
    for v, n in (("A", na), ("B", nb), ("C", nc)):
        s += "  for (int i = 0; i < %d; i++) %s[i] = %s[l * %d + i];\n" % (n, v, v.lower(), n)
    ops = ["=%s" % cd] * nd + [cd] * (na + nb + nc)
    text = "mma.sync.aligned.%s %s, %s, %s, %s;" % (
        insn, regs(0, nd), regs(nd, na), regs(nd + na, nb), regs(nd + na + nb, nc))
    outs = ", ".join('"=%s"(D[%d])' % (cd, i) for i in range(nd))
    ins = ", ".join(['"%s"(A[%d])' % (cd, i) for i in range(na)] +
                    ['"%s"(B[%d])' % (cd, i) for i in range(nb)] +
                    ['"%s"(C[%d])' % (cd, i) for i in range(nc)])
    del ops
    s += '  asm volatile("%s" : %s : %s);\n' % (text, outs, ins)
    s += "  for (int i = 0; i < %d; i++) d[l * %d + i] = D[i];\n}\n\n" % (nd, nd)
    return s


LDM_BODY = """  __shared__ __align__(16) unsigned short buf[32 * 8];
  unsigned l = threadIdx.x;
  for (int i = 0; i < 8; i++) buf[l * 8 + i] = 0;
  __syncthreads();
  /* matrix j, row r lives in shared row (8j + r) * 5 % 32; lane 8j + r points at it */
  for (int i = l; i < 4 * 64; i += 32) {
    int j = i / 64, r = (i / 8) % 8, col = i % 8;
    buf[(((8 * j + r) * 5) % 32) * 8 + col] = mats[i];
  }
  __syncthreads();
  unsigned addr = (unsigned)__cvta_generic_to_shared(&buf[((l * 5) % 32) * 8]);
"""


def ldm_kernel(n, trans):
    name = "ldm_x%d%s" % (n, "_t" if trans else "")
    s = 'extern "C" __global__ void %s(const unsigned short *mats, unsigned *out) {\n' % name
    s += LDM_BODY
    s += "  unsigned R[4] = {0, 0, 0, 0};\n"
    outs = ", ".join('"=r"(R[%d])' % i for i in range(n))
    s += '  asm volatile("ldmatrix.sync.aligned.m8n8.x%d%s.shared.b16 %s, [%%%d];" : %s : "r"(addr));\n' % (
        n, ".trans" if trans else "", regs(0, n), n, outs)
    s += "  for (int i = 0; i < 4; i++) out[l * 4 + i] = R[i];\n}\n\n"
    return name, s


def stm_kernel(n, trans):
    name = "stm_x%d%s" % (n, "_t" if trans else "")
    s = 'extern "C" __global__ void %s(const unsigned *in, unsigned short *mats) {\n' % name
    s += """  __shared__ __align__(16) unsigned short buf[32 * 8];
  unsigned l = threadIdx.x;
  for (int i = 0; i < 8; i++) buf[l * 8 + i] = 0xdead;
  __syncthreads();
  unsigned addr = (unsigned)__cvta_generic_to_shared(&buf[((l * 5) % 32) * 8]);
"""
    ins = ", ".join('"r"(in[l * 4 + %d])' % i for i in range(n))
    s += '  asm volatile("stmatrix.sync.aligned.m8n8.x%d%s.shared.b16 [%%0], %s;" :: "r"(addr), %s : "memory");\n' % (
        n, ".trans" if trans else "", regs(1, n), ins)
    s += """  __syncthreads();
  for (int i = l; i < 4 * 64; i += 32) {
    int j = i / 64, r = (i / 8) % 8, col = i % 8;
    mats[i] = buf[(((8 * j + r) * 5) % 32) * 8 + col];
  }
}

"""
    return name, s


MOVM = """extern "C" __global__ void movm(const unsigned *in, unsigned *out) {
  unsigned l = threadIdx.x, r;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(r) : "r"(in[l]));
  out[l] = r;
}

"""

# name, shape/types, accumulator registers, A from registers, trans-a, trans-b, scale-a
WGMMAS = [
    ("wg_f16_n64_kk", "m64n64k16.f32.f16.f16", 32, False, 0, 0, 1),
    ("wg_f16_n64_mm", "m64n64k16.f32.f16.f16", 32, False, 1, 1, 1),
    ("wg_bf16_n16_km", "m64n16k16.f32.bf16.bf16", 8, False, 0, 1, 1),
    ("wg_f16_n256_kk", "m64n256k16.f32.f16.f16", 128, False, 0, 0, 1),
    ("wg_f16acc_n32", "m64n32k16.f16.f16.f16", 8, False, 0, 0, -1),
    ("wg_tf32_n24", "m64n24k8.f32.tf32.tf32", 12, False, None, None, 1),
    ("wg_f16_n8_ra", "m64n8k16.f32.f16.f16", 4, True, None, 0, 1),
    ("wg_bf16_n16_mm", "m64n16k16.f32.bf16.bf16", 8, False, 1, 1, 1),
    ("wg_tf32_n16_ra", "m64n16k8.f32.tf32.tf32", 8, True, None, None, 1),
]


def wg_kernel(name, shape, nd, a_regs, ta, tb, sa):
    s = ('extern "C" __global__ void %s(const uint4 *img, unsigned img16, unsigned long long da,\n'
         '    unsigned long long db, unsigned astep, unsigned bstep, int ksteps, const unsigned *din,\n'
         '    unsigned *dout, int scale_d, const unsigned *areg) {\n') % name
    s += """  extern __shared__ __align__(1024) unsigned char smem[];
  unsigned t = threadIdx.x;
  for (unsigned i = t; i < img16; i += blockDim.x) ((uint4 *)smem)[i] = img[i];
  __syncthreads();
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  unsigned base = (unsigned)__cvta_generic_to_shared(smem) >> 4;
"""
    s += "  unsigned D[%d];\n" % nd
    s += "  for (int i = 0; i < %d; i++) D[i] = din[t * %d + i];\n" % (nd, nd)
    s += '  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");\n'
    s += "  for (int ks = 0; ks < ksteps; ks++) {\n"
    s += "    unsigned long long a = da + base + ks * astep, b = db + base + ks * bstep;\n"
    s += "    int sd = ks > 0 || scale_d;\n"
    dl = regs(0, nd)
    if a_regs:
        aop = regs(nd, 4)
        bop, pop = "%%%d" % (nd + 4), "%%%d" % (nd + 5)
        imms = "%d, 1" % sa if tb is None else "%d, 1, %d" % (sa, tb)
        ins = ", ".join(['"r"(areg[t * 4 + %d])' % i for i in range(4)] + ['"l"(b)', '"r"(sd)'])
    else:
        aop, bop, pop = "%%%d" % nd, "%%%d" % (nd + 1), "%%%d" % (nd + 2)
        imms = "%d, 1" % sa if ta is None else "%d, 1, %d, %d" % (sa, ta, tb)
        ins = '"l"(a), "l"(b), "r"(sd)'
    text = ("{ .reg .pred p; setp.ne.b32 p, %s, 0; "
            "wgmma.mma_async.sync.aligned.%s %s, %s, %s, p, %s; }") % (pop, shape, dl, aop, bop, imms)
    outs = ", ".join('"+r"(D[%d])' % i for i in range(nd))
    s += '    asm volatile("%s" : %s : %s);\n' % (text, outs, ins)
    s += "  }\n"
    s += '  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");\n'
    s += '  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");\n'
    s += "  for (int i = 0; i < %d; i++) dout[t * %d + i] = D[i];\n}\n\n" % (nd, nd)
    return s


HEAD = "// Generated by gen.py: matrix-instruction test kernels. Do not edit.\n\n"


def main():
    sm80 = HEAD
    for n in (1, 2, 4):
        for tr in (False, True):
            sm80 += ldm_kernel(n, tr)[1]
    sm80 += MOVM
    for m in MMAS:
        sm80 += mma_kernel(*m)
    sm90 = HEAD
    for n in (1, 2, 4):
        for tr in (False, True):
            sm90 += stm_kernel(n, tr)[1]
    for w in WGMMAS:
        sm90 += wg_kernel(*w)
    for name, text, arch in (("mma_sm80", sm80, "sm_80"), ("mma_sm90", sm90, "sm_90a")):
        cu = os.path.join(HERE, name + ".cu")
        with open(cu, "w") as f:
            f.write(text)
        subprocess.run(["nvcc", "--ptx", "-arch=" + arch, "-o", os.path.join(HERE, name + ".ptx"), cu],
                       check=True)


if __name__ == "__main__":
    main()
