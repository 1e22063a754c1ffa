// coop_grid_sync.cu - a cooperative launch: phases separated by grid-wide
// barriers (cooperative_groups grid.sync()), each reading what other blocks
// wrote before the barrier.
//   1. each block sums its slice of x (a tree in shared memory) into
//      partial[block];
//   2. every thread adds up all the partial sums in block order and writes
//      y[i] = x[i] / total;
//   3. `rounds` rounds of a ring stencil on integers, ping-ponging between
//      a and b: dst[i] = src[i] + 3 * src[(i + 1) % n], a barrier after each.
// n is the grid's thread count; blockDim.x is 128.
#include <cooperative_groups.h>

extern "C" __global__ void coop_grid_sync(const float *x, float *partial, float *y,
                                          unsigned *a, unsigned *b, int rounds) {
  cooperative_groups::grid_group g = cooperative_groups::this_grid();
  __shared__ float s[128];
  unsigned t = threadIdx.x, n = gridDim.x * blockDim.x;
  unsigned i = blockIdx.x * blockDim.x + t;
  s[t] = x[i];
  __syncthreads();
  for (unsigned st = blockDim.x / 2; st > 0; st >>= 1) {
    if (t < st) s[t] += s[t + st];
    __syncthreads();
  }
  if (t == 0) partial[blockIdx.x] = s[0];
  g.sync();
  float total = 0.0f;
  for (unsigned j = 0; j < gridDim.x; j++) total += partial[j];
  y[i] = x[i] / total;
  for (int r = 0; r < rounds; r++) {
    const unsigned *src = (r & 1) ? b : a;
    unsigned *dst = (r & 1) ? a : b;
    dst[i] = src[i] + 3u * src[(i + 1) % n];
    g.sync();
  }
}
