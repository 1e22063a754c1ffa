// rt_fault.cu - a CUDA runtime program for the gpulease CUDA driver shim:
// a kernel that writes far out of bounds gives cudaErrorIllegalAddress at
// the synchronisation, sticky (later calls give it too); prints "ok".
#include <cstdio>

__global__ void poke(int *p, long long off) { p[off] = 7; }

int main() {
  int *d = nullptr;
  if (cudaMalloc(&d, 256) != cudaSuccess) {
    std::printf("FAIL cudaMalloc\n");
    return 1;
  }
  poke<<<1, 1>>>(d, 1ll << 36); // 256 GiB past the allocation
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaErrorIllegalAddress) {
    std::printf("FAIL sync gave %s\n", cudaGetErrorName(e));
    return 1;
  }
  int h = 0;
  e = cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
  if (e != cudaErrorIllegalAddress) {
    std::printf("FAIL the error is not sticky: %s\n", cudaGetErrorName(e));
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
