// Cooperative launches: grid-wide barriers (cooperative_groups grid.sync(),
// which reads its workspace from %envreg1/%envreg2).
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Phase 1: each block sums its slice of in into partial[block]. Phase 2,
// after the grid barrier: out[block * n + t] = sum_j partial[j] * (j + 1)
// + partial[(block + 1) % blocks] * t, reading every other block's result.
extern "C" __global__ void coop_two_phase(const int *in, int *partial, int *out) {
  cg::grid_group g = cg::this_grid();
  __shared__ int s[256];
  unsigned t = threadIdx.x, n = blockDim.x, b = blockIdx.x, nb = gridDim.x;
  s[t] = in[b * n + t];
  __syncthreads();
  for (unsigned k = n / 2; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  if (t == 0) partial[b] = s[0];
  g.sync();
  int acc = 0;
  for (unsigned j = 0; j < nb; j++) acc += partial[j] * (int)(j + 1);
  out[b * n + t] = acc + partial[(b + 1) % nb] * (int)t;
}

// iters rounds of dst[i] = src[i] + 3 * src[(i + 1) % total], the buffers
// swapped between rounds, a grid barrier after each.
extern "C" __global__ void coop_rounds(unsigned *a, unsigned *bbuf, int iters) {
  cg::grid_group g = cg::this_grid();
  unsigned total = gridDim.x * blockDim.x;
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int it = 0; it < iters; it++) {
    unsigned *src = (it & 1) ? bbuf : a, *dst = (it & 1) ? a : bbuf;
    dst[i] = src[i] + 3u * src[(i + 1) % total];
    g.sync();
  }
}

// Block 0 leaves before the grid barrier: the others wait forever.
extern "C" __global__ void coop_deadlock(int *out) {
  cg::grid_group g = cg::this_grid();
  if (blockIdx.x == 0) return;
  g.sync();
  out[blockIdx.x] = 1;
}

// %envreg1/%envreg2 and the others, as the kernel sees them.
extern "C" __global__ void coop_envregs(unsigned *out) {
  unsigned r0, r1, r2, r3, r31;
  asm("mov.u32 %0, %%envreg0;" : "=r"(r0));
  asm("mov.u32 %0, %%envreg1;" : "=r"(r1));
  asm("mov.u32 %0, %%envreg2;" : "=r"(r2));
  asm("mov.u32 %0, %%envreg3;" : "=r"(r3));
  asm("mov.u32 %0, %%envreg31;" : "=r"(r31));
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    out[0] = r0;
    out[1] = r1;
    out[2] = r2;
    out[3] = r3;
    out[4] = r31;
    out[5] = cg::this_grid().is_valid();
  }
}
