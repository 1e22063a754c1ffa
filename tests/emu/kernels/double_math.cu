// double_math.cu - f64 arithmetic, all correctly rounded: fma, sqrt,
// division, +, -, *, conversion to f32, fmin/fmax, on edge values.
extern "C" __global__ void double_math(const double *a, const double *b, const double *c,
                                       double *out, float *fout, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = a[i], y = b[i], z = c[i];
  double *o = out + 8 * i;
  o[0] = fma(x, y, z);
  o[1] = sqrt(x);
  o[2] = x / y;
  o[3] = __dadd_rn(x, y);
  o[4] = __dsub_rn(x, z);
  o[5] = __dmul_rn(x, y);
  o[6] = fmin(x, y);
  o[7] = fmax(x, z);
  fout[2 * i] = (float)x;
  fout[2 * i + 1] = __double2float_rz(y);
}
