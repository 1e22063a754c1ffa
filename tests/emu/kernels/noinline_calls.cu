// noinline_calls.cu - real calls: __noinline__ device functions with
// several parameters (a struct by value among them), return values of
// different types, and a call chain three deep (k -> f1 -> f2 -> f3).
struct pt {
  int x;
  float y;
  double z;
  short s;
};
__device__ __noinline__ unsigned f3(unsigned a, unsigned b, int c) {
  return (a * 31u + b) ^ (unsigned)(c >> 2);
}
__device__ __noinline__ float f2(struct pt p, float w, int k) {
  unsigned h = f3((unsigned)p.x, (unsigned)k, p.s);
  return __fadd_rn(__fmul_rn(p.y, w), (float)(h & 0xffffu));
}
__device__ __noinline__ double f1(struct pt p, int k, float w, long long *side) {
  float r = f2(p, w, k + 1);
  *side = (long long)f3((unsigned)k, (unsigned)p.x, -k) * (long long)p.s;
  return __dadd_rn(p.z, (double)r);
}
extern "C" __global__ void noinline_calls(const int *a, const float *b, double *out,
                                          long long *side, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  struct pt p;
  p.x = a[i];
  p.y = b[i];
  p.z = (double)a[i] * 0.5;
  p.s = (short)(a[i] >> 3);
  out[i] = f1(p, i, b[(i + 1) % n], &side[i]);
}
