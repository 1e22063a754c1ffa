// half_math.cu - half precision: conversions (rn), add, mul, fma, the
// half2 forms, and comparisons.
#include <cuda_fp16.h>
extern "C" __global__ void half_math(const float *a, const float *b, const float *c,
                                     unsigned short *hout, float *fout, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half x = __float2half_rn(a[i]), y = __float2half_rn(b[i]), z = __float2half_rn(c[i]);
  __half r[8];
  r[0] = x;
  r[1] = __hadd(x, y);
  r[2] = __hmul(x, y);
  r[3] = __hfma(x, y, z);
  r[4] = __hsub(y, z);
  __half2 p = __halves2half2(x, y), q = __halves2half2(z, x);
  __half2 s = __hadd2(p, q), t = __hmul2(p, q), u = __hfma2(p, q, s);
  r[5] = __low2half(t);
  r[6] = __high2half(u);
  r[7] = __high2half(s);
  for (int j = 0; j < 8; j++) hout[8 * i + j] = __half_as_ushort(r[j]);
  fout[3 * i] = __half2float(r[3]);
  fout[3 * i + 1] = __low2float(u) + 0.0f;
  fout[3 * i + 2] = (float)(__hlt(x, y) + 2 * __hge(y, z) + 4 * __hisnan(x));
}
