// rt_basic.cu - a CUDA runtime program (nvcc, cudart static or shared) for
// the gpulease CUDA driver shim: it checks its own results and prints "ok".
// Run by test_cuda_runtime (tests/cuda/CMakeLists.txt) under `gpulease exec`.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      std::printf("FAIL %s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(e_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)
#define EXPECT(cond)                                                                  \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      std::printf("FAIL %s:%d %s\n", __FILE__, __LINE__, #cond);                      \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

struct Pair {
  int a;
  float b;
};

__global__ void axpb(float *out, const float *in, float a, Pair p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * in[i] + p.b + (float)p.a;
}

__global__ void scale(int *v, int k, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    v[i] *= k;
}

__global__ void hello(int x) {
  if (threadIdx.x == 0) printf("kernel printf %d\n", x);
}

int main() {
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  EXPECT(count == 1);
  CHECK(cudaSetDevice(0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  EXPECT(prop.warpSize == 32);
  EXPECT(prop.maxThreadsPerBlock == 1024);
  EXPECT(prop.major >= 7);
  EXPECT(std::strlen(prop.name) > 0);
  int smem = 0;
  CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlock, 0));
  EXPECT(smem == 49152);

  size_t free0 = 0, total = 0;
  CHECK(cudaMemGetInfo(&free0, &total));
  EXPECT(total == 64u << 20); // the lease's VRAM
  EXPECT(free0 <= total);

  const int n = 10000;
  float *din = nullptr, *dout = nullptr;
  CHECK(cudaMalloc(&din, n * sizeof(float)));
  CHECK(cudaMalloc(&dout, n * sizeof(float)));
  size_t free1 = 0;
  CHECK(cudaMemGetInfo(&free1, &total));
  EXPECT(free1 < free0);

  float *h = (float *)std::malloc(n * sizeof(float)), *g = (float *)std::malloc(n * sizeof(float));
  for (int i = 0; i < n; i++) h[i] = (float)i;
  CHECK(cudaMemcpy(din, h, n * sizeof(float), cudaMemcpyHostToDevice));
  Pair p = {3, 0.5f};
  axpb<<<(n + 255) / 256, 256>>>(dout, din, 2.0f, p, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(g, dout, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; i++) EXPECT(g[i] == 2.0f * (float)i + 3.5f);
  // Device to device, then back.
  CHECK(cudaMemcpy(din, dout, n * sizeof(float), cudaMemcpyDeviceToDevice));
  CHECK(cudaMemset(dout, 0, n * sizeof(float)));
  CHECK(cudaMemcpy(g, din, n * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT(g[n - 1] == 2.0f * (float)(n - 1) + 3.5f);
  CHECK(cudaMemcpy(g, dout, n * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT(g[17] == 0.0f);

  // A stream with async copies, a launch on it and events.
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  int *pin = nullptr, *dv = nullptr;
  CHECK(cudaMallocHost(&pin, n * sizeof(int)));
  CHECK(cudaMalloc(&dv, n * sizeof(int)));
  for (int i = 0; i < n; i++) pin[i] = i;
  CHECK(cudaEventRecord(e0, s));
  CHECK(cudaMemcpyAsync(dv, pin, n * sizeof(int), cudaMemcpyHostToDevice, s));
  scale<<<8, 128, 0, s>>>(dv, 3, n);
  CHECK(cudaMemcpyAsync(pin, dv, n * sizeof(int), cudaMemcpyDeviceToHost, s));
  CHECK(cudaEventRecord(e1, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaEventSynchronize(e1));
  float ms = -1;
  CHECK(cudaEventElapsedTime(&ms, e0, e1));
  EXPECT(ms >= 0);
  for (int i = 0; i < n; i++) EXPECT(pin[i] == 3 * i);
  CHECK(cudaEventDestroy(e0));
  CHECK(cudaEventDestroy(e1));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFreeHost(pin));

  // Kernel printf reaches stdout at the synchronisation.
  hello<<<1, 32>>>(42);
  CHECK(cudaDeviceSynchronize());
  std::fflush(stdout);

  CHECK(cudaFree(dv));
  CHECK(cudaFree(din));
  CHECK(cudaFree(dout));
  size_t free2 = 0;
  CHECK(cudaMemGetInfo(&free2, &total));
  EXPECT(free2 == free0);
  std::free(h);
  std::free(g);
  std::printf("ok\n");
  return 0;
}
