// transpose_naive.cu - out[x][y] = in[y][x] with a 2D grid of 2D blocks.
extern "C" __global__ void transpose_naive(const float *in, float *out, int rows, int cols) {
  int x = blockIdx.x * blockDim.x + threadIdx.x; // column of in
  int y = blockIdx.y * blockDim.y + threadIdx.y; // row of in
  if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x];
}
