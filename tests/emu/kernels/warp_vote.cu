// warp_vote.cu - warp votes (ballot, any, all, activemask in converged and
// divergent code), match.any/match.all, and the block-wide counting
// barriers. Blocks of 48 threads: the second warp is half full.
extern "C" __global__ void warp_vote(const int *in, unsigned *out) {
  unsigned t = threadIdx.x, lane = t & 31;
  unsigned g = blockIdx.x * blockDim.x + t;
  int v = in[g];
  unsigned m = __activemask();
  int pred = v > 0;
  unsigned *o = out + 10 * g;
  o[0] = m;
  o[1] = __ballot_sync(m, pred);
  o[2] = __any_sync(m, v > 90);
  o[3] = __all_sync(m, v > -100);
  o[4] = __match_any_sync(m, v & 3);
  int all = 0;
  unsigned ma = __match_all_sync(m, (v & 0x100) != 0, &all);
  o[5] = ma ^ (all ? 0x80000000u : 0u);
  unsigned dm = 0xdeadu;
  if (lane & 1) dm = __activemask();
  o[6] = dm;
  o[7] = __syncthreads_count(pred);
  o[8] = __syncthreads_and(v > -90);
  o[9] = __syncthreads_or(v > 95);
}
