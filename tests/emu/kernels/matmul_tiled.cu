// matmul_tiled.cu - C = A * B (f32, row-major; A is m x k, B is k x n) with
// 16x16 tiles in static shared memory. Each C element accumulates in order
// p = 0..k-1 with one fma per step (the reference does the same).
#define T 16
extern "C" __global__ void matmul_tiled(const float *A, const float *B, float *C, int m, int n,
                                        int k) {
  __shared__ float As[T][T];
  __shared__ float Bs[T][T];
  int row = blockIdx.y * T + threadIdx.y;
  int col = blockIdx.x * T + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < (k + T - 1) / T; t++) {
    int ac = t * T + threadIdx.x, br = t * T + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = (row < m && ac < k) ? A[row * k + ac] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = (br < k && col < n) ? B[br * n + col] : 0.0f;
    __syncthreads();
    for (int p = 0; p < T; p++) acc = fmaf(As[threadIdx.y][p], Bs[p][threadIdx.x], acc);
    __syncthreads();
  }
  if (row < m && col < n) C[row * n + col] = acc;
}
