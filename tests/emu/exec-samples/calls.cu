// .func calls with parameters and return values; local memory.
__device__ __noinline__ int mix(int a, int b, long long c) {
  return a * 31 + b - (int)(c >> 2);
}
__device__ __noinline__ float twice(float x) { return x + x; }
__device__ __noinline__ float scale(float x, int k) {
  if (k > 0) return x * (float)k + twice(x);
  return -x;
}
struct pair { int a; double b; };
__device__ __noinline__ pair mkpair(int i) { pair p; p.a = i * 3; p.b = i * 0.5; return p; }

extern "C" __global__ void calls(int *oi, float *of, double *od) {
  int t = threadIdx.x;
  oi[t] = mix(t, t * 2, (long long)t << 20);
  // divergent calls to the same function from two sites
  if (t & 1) of[t] = scale((float)t, t % 4);
  else of[t] = scale((float)t * 0.5f, -1) + 1.0f;
  pair p = mkpair(t);
  od[t] = p.b + p.a;
}

// A local array indexed by data: lives in local memory.
extern "C" __global__ void local_array(const int *idx, int *out) {
  int a[16];
  int t = threadIdx.x;
  for (int k = 0; k < 16; k++) a[k] = t * 100 + k;
  out[t] = a[idx[t] & 15] + a[(idx[t] >> 4) & 15];
}

// Local array indexed without a bound: out of bounds when i is large.
extern "C" __global__ void local_oob(const int *idx, int *out) {
  volatile int a[8];
  int t = threadIdx.x;
  for (int k = 0; k < 8; k++) a[k] = k;
  out[t] = a[idx[t]];
}
