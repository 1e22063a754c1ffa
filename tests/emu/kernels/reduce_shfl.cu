// reduce_shfl.cu - warp sums with __shfl_down_sync (offsets 16, 8, 4, 2, 1),
// then warp 0 sums the per-warp results the same way.
extern "C" __global__ void reduce_shfl(const float *in, float *out, int n) {
  __shared__ float warp_sums[32];
  unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  float v = i < (unsigned)n ? in[i] : 0.0f;
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  if ((t & 31) == 0) warp_sums[t >> 5] = v;
  __syncthreads();
  if (t < 32) {
    v = t < blockDim.x / 32 ? warp_sums[t] : 0.0f;
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    if (t == 0) out[blockIdx.x] = v;
  }
}
