// scale.cu - x[i] *= alpha for i < n, in place.
//
// Param list: a pointer (offset of x), a 4-byte float alpha, a 4-byte int n.
extern "C" __global__ void scale(float *x, float alpha, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= alpha;
}
