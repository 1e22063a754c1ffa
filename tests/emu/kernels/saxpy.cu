// saxpy.cu - y[i] = a * x[i] + y[i], element-wise f32.
// nvcc contracts a*x+y into one fma.rn.f32 (default --fmad=true), so the
// reference is fmaf(a, x, y): one rounding.
extern "C" __global__ void saxpy(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
