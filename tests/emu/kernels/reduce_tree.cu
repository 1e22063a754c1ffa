// reduce_tree.cu - per-block sum in shared memory, halving the stride each
// step (s = blockDim/2, ..., 1): out[block] = sum of its blockDim inputs.
extern "C" __global__ void reduce_tree(const float *in, float *out, int n) {
  extern __shared__ float s[];
  unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = i < (unsigned)n ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned st = blockDim.x / 2; st > 0; st >>= 1) {
    if (t < st) s[t] += s[t + st];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}
