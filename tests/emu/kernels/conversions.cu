// conversions.cu - float -> int with every rounding and saturation, NaN,
// int -> float with every rounding, 64-bit conversions, __saturatef.
extern "C" __global__ void conversions(const float *f, const int *k, const long long *l,
                                       int *iout, float *fout, long long *lout, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = f[i];
  int m = k[i];
  long long q = l[i];
  int *o = iout + 8 * i;
  o[0] = __float2int_rn(x);
  o[1] = __float2int_rz(x);
  o[2] = __float2int_rd(x);
  o[3] = __float2int_ru(x);
  o[4] = (int)__float2uint_rn(x);
  o[5] = (int)x;
  o[6] = (int)(unsigned)x;
  o[7] = (int)__float2uint_rd(x);
  float *g = fout + 8 * i;
  g[0] = __int2float_rn(m);
  g[1] = __int2float_rz(m);
  g[2] = __int2float_rd(m);
  g[3] = __int2float_ru(m);
  g[4] = __uint2float_rn((unsigned)m);
  g[5] = __ll2float_rn(q);
  g[6] = __saturatef(x);
  g[7] = (float)(unsigned)m;
  long long *r = lout + 3 * i;
  r[0] = (long long)x;
  r[1] = __float2ll_rn(x);
  r[2] = (long long)__float2ull_rz(x);
}
