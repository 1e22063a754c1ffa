// scan_warp.cu - inclusive block scan of ints: warp scans with
// __shfl_up_sync, warp totals scanned by warp 0, then added back.
extern "C" __global__ void scan_warp(const int *in, int *out, int n) {
  __shared__ int totals[32];
  unsigned t = threadIdx.x, lane = t & 31, w = t >> 5, i = blockIdx.x * blockDim.x + t;
  int v = i < (unsigned)n ? in[i] : 0;
  for (int d = 1; d < 32; d <<= 1) {
    int u = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= (unsigned)d) v += u;
  }
  if (lane == 31) totals[w] = v;
  __syncthreads();
  if (w == 0) {
    int s = lane < blockDim.x / 32 ? totals[lane] : 0;
    for (int d = 1; d < 32; d <<= 1) {
      int u = __shfl_up_sync(0xffffffffu, s, d);
      if (lane >= (unsigned)d) s += u;
    }
    totals[lane] = s;
  }
  __syncthreads();
  if (w > 0) v += totals[w - 1];
  if (i < (unsigned)n) out[i] = v;
}
