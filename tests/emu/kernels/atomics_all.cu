// atomics_all.cu - every atomic: add (int, unsigned, ull, float, double),
// min/max (signed, unsigned, 64-bit), exch, CAS loops, and/or/xor, inc/dec.
// Final values are order-independent; returned old values are recorded
// where their multiset is order-independent (tickets, inc, dec, exch).
// ctr (unsigned[16]) and ctr64 (ull[4]) come in with initial values.
__device__ unsigned cas_mul(unsigned *p, unsigned f) {
  unsigned old = *p, assumed;
  do {
    assumed = old;
    old = atomicCAS(p, assumed, assumed * f);
  } while (old != assumed);
  return old;
}
__device__ float cas_fmax(float *p, float v) {
  int *ip = (int *)p;
  int old = *ip, assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) >= v) break;
    old = atomicCAS(ip, assumed, __float_as_int(v));
  } while (old != assumed);
  return __int_as_float(old);
}
extern "C" __global__ void atomics_all(const int *in, unsigned *ctr, unsigned long long *ctr64,
                                       float *fsum, double *dsum, unsigned *olds,
                                       unsigned *exch) {
  unsigned g = blockIdx.x * blockDim.x + threadIdx.x, n = gridDim.x * blockDim.x;
  int v = in[g];
  atomicAdd((int *)&ctr[0], v);
  atomicAdd(&ctr[1], (unsigned)v * 2654435761u);
  atomicMin((int *)&ctr[2], v);
  atomicMax((int *)&ctr[3], v);
  atomicMin(&ctr[4], (unsigned)v);
  atomicMax(&ctr[5], (unsigned)v);
  atomicAnd(&ctr[6], ~(1u << (v & 31)));
  atomicOr(&ctr[7], 1u << ((v >> 5) & 31));
  atomicXor(&ctr[8], (unsigned)v * 0x9e3779b9u);
  olds[g] = atomicAdd(&ctr[9], 1u);
  olds[n + g] = atomicInc(&ctr[10], 100u);
  olds[2 * n + g] = atomicDec(&ctr[11], 37u);
  cas_mul(&ctr[12], 2u * (unsigned)v + 1u);
  if (atomicCAS(&ctr[13], 0u, 7u) == 0u) atomicAdd(&ctr[14], 1u);
  cas_fmax((float *)&ctr[15], (float)v * 0.5f);
  atomicAdd(&ctr64[0], (unsigned long long)(long long)v * 0x100000001ull);
  atomicMin((long long *)&ctr64[1], (long long)v * 1000000007ll);
  atomicMax(&ctr64[2], (unsigned long long)(long long)v);
  atomicOr(&ctr64[3], 1ull << (((unsigned)v) & 63));
  atomicAdd(fsum, (float)v * 0.25f);
  atomicAdd(dsum, (double)v * 0.0009765625);
  exch[8 + g] = atomicExch(&exch[g & 7], g + 1000u);
}
