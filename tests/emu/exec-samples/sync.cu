// Barriers and shared memory.
extern "C" __global__ void reduce(const float *in, float *out) {
  __shared__ float s[256];
  unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// Dynamic shared memory: reverse a block's slice.
extern "C" __global__ void reverse_dyn(int *data) {
  extern __shared__ int d[];
  unsigned t = threadIdx.x, n = blockDim.x;
  d[t] = data[blockIdx.x * n + t];
  __syncthreads();
  data[blockIdx.x * n + t] = d[n - 1 - t];
}

// Threads that exit early do not block a later __syncthreads.
extern "C" __global__ void exit_then_sync(int *out) {
  __shared__ int s[64];
  unsigned t = threadIdx.x;
  if (t >= 40) return;
  s[t] = (int)t * 2;
  __syncthreads();
  out[t] = s[39 - t];
}

extern "C" __global__ void sync_count(int *out) {
  int p = threadIdx.x % 3 == 0;
  out[threadIdx.x] = __syncthreads_count(p) * 1000 + __syncthreads_and(threadIdx.x < 1000) * 10 +
                     __syncthreads_or(threadIdx.x == 5);
}

// Warps wait at different barriers: never completes.
extern "C" __global__ void deadlock(int *out) {
  if (threadIdx.x < 32) asm volatile("bar.sync 1;");
  else asm volatile("bar.sync 2;");
  out[threadIdx.x] = 1;
}
