// reduce_atomic.cu - per-block tree sums, then one atomicAdd per block into
// a float total and an int total (the float total's order depends on
// block scheduling; the block partials and the int total do not).
extern "C" __global__ void reduce_atomic(const float *fin, const int *iin, float *partial,
                                         float *ftotal, int *itotal, int n) {
  __shared__ float fs[256];
  __shared__ int is[256];
  unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  fs[t] = i < (unsigned)n ? fin[i] : 0.0f;
  is[t] = i < (unsigned)n ? iin[i] : 0;
  __syncthreads();
  for (unsigned st = blockDim.x / 2; st > 0; st >>= 1) {
    if (t < st) {
      fs[t] += fs[t + st];
      is[t] += is[t + st];
    }
    __syncthreads();
  }
  if (t == 0) {
    partial[blockIdx.x] = fs[0];
    atomicAdd(ftotal, fs[0]);
    atomicAdd(itotal, is[0]);
  }
}
