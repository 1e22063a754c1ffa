#include <cuda_fp16.h>
#include <cstdio>
struct P { int a; int *p; float f; };
__device__ int tgt[4];
__device__ P gp = {1, tgt + 1, 2.5f};
__device__ P garr2[2] = {{1, tgt, 1.f}, {2, tgt + 2, 3.f}};
__device__ char msg[] = "hi";
__device__ const char *msgp = "hello";
template <typename T, int N> __global__ void tk(T *p) { p[threadIdx.x] += (T)N; }
template __global__ void tk<double, 3>(double *);
extern "C" __global__ void hmore(__half *h, __half2 *h2, float *f) {
  int i = threadIdx.x;
  h[i] = __hmax(h[i], h[i+1]) ; h[i+2] = __hfma(h[i], h[i+1], h[i+3]);
  h2[i] = __hmul2(h2[i], h2[i+1]);
  atomicAdd(h + 100, h[i]);
  f[i] = __half2float(__hneg(h[i])) + __low2float(h2[i]);
  __nanosleep(100);
  if (h[i] > h[i+1]) __trap();
}
extern "C" __global__ void vol(volatile int *p, int *q) { while (p[0] == 0) {} __threadfence(); __threadfence_block(); __threadfence_system(); q[0] = __ldg(q+1) + __ldcg(q+2) + __ldcs(q+3); __stcs(q+4, 1); __stwt(q+5, 2); q[6] = atomicAdd_block(q+7, 1) + atomicAdd_system(q+8, 1); }
__global__ void ull(unsigned long long *p, long long *s) {
  unsigned long long v = p[threadIdx.x];
  p[0] = v * v + v / 7 + (v % 13) + (v << 3) + (v >> 5) + __ffsll(v) + max(v, 3ull);
  s[0] = llabs(s[1]) + llmin(s[2], s[3]) + __mul64hi(s[1], s[2]);
  unsigned m = __match_any_sync(0xffffffff, v);
  s[1] = m;
}
