// Kernels that fault, and one that never ends.
extern "C" __global__ void load_at(const int *p, long long off, int *out) {
  out[threadIdx.x] = p[off + threadIdx.x];
}
extern "C" __global__ void store_at(int *p, long long off) { p[off + threadIdx.x] = 7; }
extern "C" __global__ void shared_at(int i, int *out) {
  __shared__ int s[64];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[i + threadIdx.x];
}
extern "C" __global__ void misaligned(char *p, int *out) {
  out[threadIdx.x] = *(int *)(p + 1);
}
extern "C" __global__ void trapper(int *out) {
  if (threadIdx.x == 3) __trap();
  out[threadIdx.x] = 1;
}
extern "C" __global__ void spin(volatile int *flag) {
  while (*flag == 0) { }
}
