/*
 * iota_ptx.h - the benchmarks' GPU_SUBMIT kernel as PTX text: out[i] = i + 1
 * for i < 256 (f32), like examples/iota.cu, so a benchmark needs no file.
 */
#ifndef GL_BENCH_IOTA_PTX_H
#define GL_BENCH_IOTA_PTX_H

static const char k_iota_ptx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry iota(.param .u64 out)\n{\n"
    "  .reg .b32 %r<3>;\n  .reg .f32 %f<2>;\n  .reg .b64 %rd<4>;\n"
    "  ld.param.u64 %rd1, [out];\n  cvta.to.global.u64 %rd2, %rd1;\n"
    "  mov.u32 %r1, %tid.x;\n  add.s32 %r2, %r1, 1;\n  cvt.rn.f32.s32 %f1, %r2;\n"
    "  mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd2, %rd2, %rd3;\n  st.global.f32 [%rd2], %f1;\n"
    "  ret;\n}\n";

#endif /* GL_BENCH_IOTA_PTX_H */
