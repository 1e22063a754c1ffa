#include <cuda_fp16.h>
#include <cstdint>
__constant__ float coef[4] = {1.0f, 2.0f, 3.5f, -1.0f};
__device__ int gcount = 7;
__device__ int garr[5] = {1, 2, 3};
__device__ int *gptr = garr;
__device__ double gd = 3.25;
__device__ unsigned long long g64 = 0x123456789abcdefULL;
struct S { int a; double b; char c[5]; };

extern "C" __global__ void vadd(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i] * coef[i & 3];
}
extern "C" __global__ void structk(S s, char x, short y, double *out) {
  out[0] = s.a + s.b + s.c[3] + x + y + gd + *gptr + g64;
}
#define T 16
extern "C" __global__ void matmul(const float *A, const float *B, float *C, int N) {
  __shared__ float As[T][T]; __shared__ float Bs[T][T];
  int r = blockIdx.y * T + threadIdx.y, c = blockIdx.x * T + threadIdx.x;
  float acc = 0;
  for (int k = 0; k < N; k += T) {
    As[threadIdx.y][threadIdx.x] = A[r * N + k + threadIdx.x];
    Bs[threadIdx.y][threadIdx.x] = B[(k + threadIdx.y) * N + c];
    __syncthreads();
    for (int j = 0; j < T; j++) acc += As[threadIdx.y][j] * Bs[j][threadIdx.x];
    __syncthreads();
  }
  C[r * N + c] = acc;
}
extern "C" __global__ void dynsh(const int *in, int *out) {
  extern __shared__ int sh[];
  sh[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = sh[blockDim.x - 1 - threadIdx.x];
}
extern "C" __global__ void reduce(const float *in, float *out, int n) {
  float v = 0;
  for (int i = threadIdx.x + blockIdx.x * blockDim.x; i < n; i += blockDim.x * gridDim.x) v += in[i];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
  v += __shfl_xor_sync(0xffffffff, v, 1);
  v += __shfl_up_sync(0xffffffff, v, 1);
  v += __shfl_sync(0xffffffff, v, 3);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}
extern "C" __global__ void votes(const int *in, unsigned *out) {
  int x = in[threadIdx.x];
  unsigned b = __ballot_sync(0xffffffff, x > 0);
  int an = __any_sync(0xffffffff, x > 1);
  int al = __all_sync(0xffffffff, x > 2);
  unsigned m = __match_any_sync(__activemask(), x);
  int pred; unsigned ma = __match_all_sync(0xffffffff, x, &pred);
  out[threadIdx.x] = b + an + al + m + ma + pred;
  __syncwarp();
}
extern "C" __global__ void atoms(int *p, unsigned *u, unsigned long long *q, double *d, float *f) {
  __shared__ int s[32];
  s[threadIdx.x & 31] = 0;
  atomicAdd(p, 1); atomicSub(p + 1, 2); atomicMin(p + 2, (int)threadIdx.x); atomicMax(p + 3, 4);
  atomicExch(p + 4, 5); atomicCAS(p + 5, 0, 1); atomicAnd(p + 6, 3); atomicOr(p + 7, 3); atomicXor(p + 8, 3);
  atomicInc(u, 10); atomicDec(u + 1, 10);
  atomicAdd(q, 1ull); atomicCAS(q + 1, 1ull, 2ull); atomicMin(q+2, 5ull);
  atomicAdd(d, 1.0); atomicAdd(f, 1.0f); atomicExch(f+1, 2.0f);
  int old = atomicAdd(&s[threadIdx.x % 7], 1);
  atomicMax(&s[3], old);
  p[9] = old;
}
__device__ __noinline__ int foo(int x, float y) { return x * 3 + (int)y; }
__device__ __noinline__ void bar(int *p) { *p = 5; }
__device__ __noinline__ S bigret(int x) { S s; s.a = x; s.b = x; s.c[0]=1; return s; }
extern "C" __global__ void calls(int *p) {
  p[threadIdx.x] = foo(threadIdx.x, 2.5f);
  bar(p + 100);
  S s = bigret(threadIdx.x);
  p[200] = s.a + s.c[0];
}
extern "C" __global__ void localarr(int *p, int n) {
  int a[64];
  for (int i = 0; i < 64; i++) a[i] = p[i] * n;
  p[threadIdx.x] = a[p[threadIdx.x+64] & 63];
}
extern "C" __global__ void halfk(const __half *a, const __half *b, __half *c, float *f) {
  int i = threadIdx.x;
  __half x = __hadd(a[i], b[i]);
  x = __hmul(x, b[i]);
  f[i] = __half2float(x);
  c[i] = __float2half(f[i] * 2.0f);
  __half2 h2 = __halves2half2(a[i], b[i]);
  h2 = __hadd2(h2, h2);
  c[i+32] = __low2half(h2);
}
extern "C" __global__ void i64d(long long *a, double *d, unsigned long long *u, int n) {
  int i = threadIdx.x;
  a[i] = a[i] / (n + 1) + a[i] % 3 + (a[i] >> 3) + __clzll(a[i]) + __popcll(u[i]) + __umul64hi(u[i], u[i+1]);
  d[i] = sqrt(d[i]) + sin(d[i]) + exp(d[i]) / (d[i] + 1.0) + fma(d[i], 2.0, 1.0) + (double)a[i];
  u[i] = (unsigned long long)d[i] + __brevll(u[i]);
}
extern "C" __global__ void mathf(float *f, int *k) {
  int i = threadIdx.x;
  f[i] = sinf(f[i]) + __expf(f[i]) + sqrtf(f[i]) + rsqrtf(f[i]) + __fdividef(f[i], 3.0f) + f[i]/f[i+1] + powf(f[i], 2.3f) + logf(f[i]) + tanhf(f[i]) + fminf(f[i], 1) + copysignf(1, f[i]) + floorf(f[i]) + truncf(f[i]) + roundf(f[i]) + __saturatef(f[i]);
  k[i] = __float2int_rn(f[i]) + (int)f[i] + __brev(k[i]) + __ffs(k[i]) + __byte_perm(k[i], k[i+1], 0x5410) + __funnelshift_l(k[i], k[i+1], 5) + __mul24(k[i], 3) + __sad(k[i], k[1], 2) + __dp4a(k[i], k[2], 3);
  k[i+1] = isnan(f[i]) + isinf(f[i]) + (k[i] / k[3]) + (k[i] % k[4]) + max(k[i], 5) + abs(k[5]) + __hadd(k[i], k[i+2]);
}
extern "C" __global__ __launch_bounds__(256, 2) void hist(const unsigned char *d, unsigned *h, int n) {
  __shared__ unsigned sh[256];
  sh[threadIdx.x] = 0; __syncthreads();
  for (int i = threadIdx.x; i < n; i += 256) atomicAdd(&sh[d[i]], 1);
  __syncthreads();
  atomicAdd(&h[threadIdx.x], sh[threadIdx.x]);
}
extern "C" __global__ void scan(int *d) {
  __shared__ int t[512];
  int i = threadIdx.x; t[i] = d[i]; __syncthreads();
  for (int o = 1; o < 512; o *= 2) { int v = i >= o ? t[i - o] : 0; __syncthreads(); t[i] += v; __syncthreads(); }
  d[i] = t[i];
  unsigned lm; asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lm)); d[i+512] = lm + clock() + (int)clock64();
}
