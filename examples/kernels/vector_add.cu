// vector_add.cu - c[i] = a[i] + b[i] for i < n.
//
// Submit with a param list: three pointer params (offsets of a, b and c in
// the lease region) and a 4-byte scalar n; send a and b as input bytes.
extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
