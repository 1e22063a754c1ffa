// iota.cu - the smallest useful gpulease kernel.
//
// Submitted without a param list, a kernel's only parameter is the lease
// region's device pointer; iota writes 1, 2, 3, ... as floats there:
//   out[i] = (float)(i + 1),  i = blockIdx.x * blockDim.x + threadIdx.x
// Read back (grid x block) * 4 bytes to see them.
extern "C" __global__ void iota(float *out) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = (float)(i + 1);
}
