// Atomics under contention, global and shared.
extern "C" __global__ void atom_mix(unsigned *g, float *gf, double *gd, unsigned long long *g64,
                                    int *gi) {
  __shared__ unsigned s[4];
  unsigned t = threadIdx.x;
  if (t < 4) s[t] = 0;
  __syncthreads();
  atomicAdd(&s[0], 1u);
  atomicAdd(&s[1], t);
  atomicMax(&s[2], t * 3);
  atomicInc(&s[3], 9u);
  __syncthreads();
  if (t < 4) atomicAdd(&g[t], s[t]);
  atomicAdd(&g[4], 1u);
  atomicInc(&g[5], 16u);
  atomicDec(&g[6], 5u);
  atomicAdd(gf, 0.5f);
  atomicAdd(gd, 0.25);
  atomicAdd(g64, 1ull << 33);
  atomicMin(&gi[0], -(int)(t + blockIdx.x * blockDim.x));
  atomicMax(&gi[1], (int)(t ^ 0x55));
  atomicOr((unsigned *)&gi[2], 1u << (t & 31));
  atomicXor((unsigned *)&gi[3], t);
  atomicAnd((unsigned *)&gi[4], ~(1u << (t & 31)));
  unsigned old = atomicCAS(&g[7], t, t + 1);  // increments only in order
  (void)old;
  atomicExch(&g[8], 42u);
}

// A counter every thread of every block bumps: the total is exact.
extern "C" __global__ void count(unsigned *c, unsigned long long *sum) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(c, 1u);
  atomicAdd(sum, (unsigned long long)i);
}
