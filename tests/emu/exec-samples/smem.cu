// Static shared memory counted per kernel, as ptxas does: the launch limits
// see only the .shared variables a kernel can reach. fill_a and fill_b own
// 32 KiB each (64 KiB in the module: nvcc declares them inside the entries'
// bodies); fill_b also calls pick() and, through it, mix(), the only users
// of the module-scope array `lut`. big_static needs 50 KiB (over the 48 KiB
// static limit), dyn40 40 KiB static plus dynamic.
// nvcc --ptx -arch=sm_75 -o smem.ptx smem.cu
// nvcc --ptx -arch=sm_90 -o smem_sm90.ptx smem.cu
#define N (32 * 1024 / 4)

__shared__ int lut[256]; // module scope: used by two functions, both
                         // reached only from fill_b

__device__ __noinline__ int mix(int i) { return lut[(i * 5) & 255] - lut[i & 255]; }

__device__ __noinline__ int pick(int i) {
  if (threadIdx.x < 256) lut[threadIdx.x] = (int)threadIdx.x * 7;
  __syncthreads();
  return lut[i & 255] + mix(i);
}

// Each thread writes a strided part of a[], then sums the part another
// thread wrote (the reversed stride), so the sums go through shared memory.
extern "C" __global__ void fill_a(int *out) {
  __shared__ int a[N];
  unsigned t = threadIdx.x, n = blockDim.x;
  for (unsigned i = t; i < N; i += n) a[i] = (int)(i * 3 + blockIdx.x);
  __syncthreads();
  int s = 0;
  for (unsigned i = n - 1 - t; i < N; i += n) s += a[i];
  out[blockIdx.x * n + t] = s;
}

extern "C" __global__ void fill_b(int *out) {
  __shared__ int b[N];
  unsigned t = threadIdx.x, n = blockDim.x;
  for (unsigned i = t; i < N; i += n) b[i] = (int)(N - i) ^ (int)blockIdx.x;
  __syncthreads();
  int s = pick((int)t + 1);
  for (unsigned i = n - 1 - t; i < N; i += n) s += b[i];
  out[blockIdx.x * n + t] = s;
}

extern "C" __global__ void big_static(int *out) {
  __shared__ int c[50 * 1024 / 4];
  unsigned t = threadIdx.x;
  c[t] = (int)t;
  __syncthreads();
  out[t] = c[blockDim.x - 1 - t];
}

// 40 KiB static, then the dynamic array: thread t writes d[t] and s[t],
// reads its neighbours' and reports %dynamic_smem_size / %total_smem_size.
extern "C" __global__ void dyn40(int *out) {
  __shared__ int s[40 * 1024 / 4];
  extern __shared__ int d[];
  unsigned t = threadIdx.x, n = blockDim.x, dyn, tot;
  s[t] = (int)t * 5;
  d[t] = (int)t + 1000;
  __syncthreads();
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
  asm("mov.u32 %0, %%total_smem_size;" : "=r"(tot));
  out[4 * t] = s[(t + 1) % n];
  out[4 * t + 1] = d[(t + 2) % n];
  out[4 * t + 2] = (int)dyn;
  out[4 * t + 3] = (int)tot;
}
