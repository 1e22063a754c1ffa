// approx_math.cu - the fast approximate intrinsics. Results are checked
// with the error bounds of the CUDA programming guide, not bit for bit.
extern "C" __global__ void approx_math(const float *x, const float *y, const float *z, float *out,
                                       int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float *o = out + 6 * i;
  o[0] = __expf(x[i]);
  o[1] = __logf(y[i]);
  o[2] = __sinf(z[i]);
  o[3] = __cosf(z[i]);
  o[4] = rsqrtf(y[i]);
  o[5] = __fdividef(x[i], y[i]);
}
