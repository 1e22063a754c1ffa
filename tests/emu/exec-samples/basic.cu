// Executor samples: indexing, divergence, loops, 64-bit integer and double.
extern "C" __global__ void index3d(unsigned *out) {
  unsigned bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned tx = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned n = blockDim.x * blockDim.y * blockDim.z;
  unsigned i = bx * n + tx;
  out[4 * i + 0] = threadIdx.x | (threadIdx.y << 10) | (threadIdx.z << 20);
  out[4 * i + 1] = blockIdx.x | (blockIdx.y << 10) | (blockIdx.z << 20);
  out[4 * i + 2] = blockDim.x | (blockDim.y << 10) | (blockDim.z << 20);
  out[4 * i + 3] = gridDim.x | (gridDim.y << 10) | (gridDim.z << 20);
}

// Nested divergence, early exits, data-dependent loops.
extern "C" __global__ void diverge(const int *in, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  int acc = 0;
  if (v % 3 == 0) {
    for (int k = 0; k < v; k++) acc += k * (i & 7);
    if (v & 1) acc = -acc;
  } else if (v % 3 == 1) {
    int k = v;
    while (k > 1) { k = (k & 1) ? 3 * k + 1 : k / 2; acc++; }
  } else {
    if (i & 1) { out[i] = 12345; return; }
    acc = v * 7;
  }
  out[i] = acc;
}

extern "C" __global__ void wide(const long long *a, const double *d, long long *o, double *od) {
  int i = threadIdx.x;
  long long x = a[i];
  unsigned long long u = (unsigned long long)x * 0x9E3779B97F4A7C15ull;
  o[2 * i] = x / 7 + (x % 5) - (x >> 3);
  o[2 * i + 1] = (long long)(u ^ (u >> 29));
  double y = d[i];
  od[i] = y * y + 1.0 / (y + 3.0) - (double)i;
}

// Module data: a .global counter and a .const table.
__device__ int counter;
__device__ int table[4] = {5, 6, 7, 8};
__constant__ int lut[4] = {1, 2, 3, 4};
extern "C" __global__ void globals(int *out) {
  int t = threadIdx.x;
  atomicAdd(&counter, 1);
  out[t] = lut[t & 3] * 10 + table[t & 3];
  __syncthreads();
  if (t == 0) table[0] += 100;
}
extern "C" __global__ void read_counter(int *out) { out[0] = counter; out[1] = table[0]; }

// Special registers the compiler does not expose directly.
extern "C" __global__ void sregs(unsigned *out) {
  unsigned lane, warp, nwarp, lt, ge, dyn, tot;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  asm("mov.u32 %0, %%warpid;" : "=r"(warp));
  asm("mov.u32 %0, %%nwarpid;" : "=r"(nwarp));
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
  asm("mov.u32 %0, %%lanemask_ge;" : "=r"(ge));
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
  asm("mov.u32 %0, %%total_smem_size;" : "=r"(tot));
  unsigned long long c0 = clock64();
  unsigned long long g0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
  unsigned *o = out + 10 * threadIdx.x;
  o[0] = lane; o[1] = warp; o[2] = nwarp; o[3] = lt; o[4] = ge; o[5] = dyn; o[6] = tot;
  unsigned long long c1 = clock64();
  o[7] = c1 > c0;
  o[8] = g0 != 0;
  o[9] = 0;
}
