// rounded_math.cu - correctly rounded f32: sqrtf, division, fmaf, and the
// explicitly rounded intrinsics (rn, rz, rd, ru), 12 results per element.
extern "C" __global__ void rounded_math(const float *a, const float *b, const float *c, float *out,
                                        int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i], y = b[i], z = c[i];
  float *o = out + 12 * i;
  o[0] = sqrtf(x);
  o[1] = x / y;
  o[2] = fmaf(x, y, z);
  o[3] = __fadd_rn(x, y);
  o[4] = __fmul_rn(x, z);
  o[5] = __fadd_rz(x, z);
  o[6] = __fmul_ru(x, y);
  o[7] = __fdiv_rd(y, z);
  o[8] = __fsqrt_ru(y);
  o[9] = __frcp_rn(z);
  o[10] = __fmaf_rz(x, y, z);
  o[11] = __fsub_rn(y, z);
}
