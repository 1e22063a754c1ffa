// Warp-level primitives.
extern "C" __global__ void shfl_all(const int *in, int *out, int width) {
  unsigned t = threadIdx.x;
  int v = in[t];
  int *o = out + 8 * t;
  o[0] = __shfl_sync(0xffffffffu, v, (t * 7 + 3) & 63, width);
  o[1] = __shfl_up_sync(0xffffffffu, v, 3, width);
  o[2] = __shfl_down_sync(0xffffffffu, v, 5, width);
  o[3] = __shfl_xor_sync(0xffffffffu, v, 6, width);
  o[4] = __shfl_sync(0xffffffffu, v, 2, width);
  int acc = v;
  for (int k = 16; k > 0; k >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, k);
  o[5] = acc;
  int pref = v;
  for (int k = 1; k < 32; k <<= 1) {
    int y = __shfl_up_sync(0xffffffffu, pref, k);
    if ((int)(t & 31) >= k) pref += y;
  }
  o[6] = pref;
  o[7] = __shfl_down_sync(0xffffffffu, v, 1, 32);
}

extern "C" __global__ void votes(const int *in, unsigned *out) {
  unsigned t = threadIdx.x;
  int v = in[t];
  unsigned *o = out + 8 * t;
  o[0] = __ballot_sync(0xffffffffu, v > 10);
  o[1] = __any_sync(0xffffffffu, v == 77);
  o[2] = __all_sync(0xffffffffu, v >= 0);
  o[3] = __match_any_sync(0xffffffffu, v % 4);
  int pred;
  o[4] = __match_all_sync(0xffffffffu, v / 1000, &pred);
  o[5] = pred;
  if (v & 1) o[6] = __activemask();
  else o[6] = 0xdead;
  o[7] = __match_any_sync(0xffffffffu, (unsigned long long)(v % 3) << 40);
}
