// matmul_dyn.cu - the tiled matmul with a tile width chosen at launch and
// both tiles in extern (dynamic) shared memory: 2 * tw * tw floats.
extern "C" __global__ void matmul_dyn(const float *A, const float *B, float *C, int m, int n,
                                      int k) {
  extern __shared__ float smem[];
  int tw = blockDim.x;
  float *As = smem, *Bs = smem + tw * tw;
  int row = blockIdx.y * tw + threadIdx.y;
  int col = blockIdx.x * tw + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < (k + tw - 1) / tw; t++) {
    int ac = t * tw + threadIdx.x, br = t * tw + threadIdx.y;
    As[threadIdx.y * tw + threadIdx.x] = (row < m && ac < k) ? A[row * k + ac] : 0.0f;
    Bs[threadIdx.y * tw + threadIdx.x] = (br < k && col < n) ? B[br * n + col] : 0.0f;
    __syncthreads();
    for (int p = 0; p < tw; p++) acc = fmaf(As[threadIdx.y * tw + p], Bs[p * tw + threadIdx.x], acc);
    __syncthreads();
  }
  if (row < m && col < n) C[row * n + col] = acc;
}
