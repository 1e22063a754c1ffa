// shfl_width.cu - shuffles with widths below 32 (segments of 4, 8, 16),
// sources outside the segment, negative source lanes, float and double.
extern "C" __global__ void shfl_width(const int *in, const int *src, int *out) {
  unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[g], s = src[g];
  int *o = out + 8 * g;
  o[0] = __shfl_sync(0xffffffffu, v, s, 8);
  o[1] = __shfl_sync(0xffffffffu, v, s);
  o[2] = __shfl_up_sync(0xffffffffu, v, 3, 16);
  o[3] = __shfl_down_sync(0xffffffffu, v, 5, 8);
  o[4] = __shfl_xor_sync(0xffffffffu, v, 6, 4);
  o[5] = __shfl_xor_sync(0xffffffffu, v, 17);
  o[6] = __float_as_int(__shfl_down_sync(0xffffffffu, __int_as_float(v), 2, 4));
  double d = __shfl_up_sync(0xffffffffu, (double)v * 0.5, 1, 8);
  o[7] = (int)(d * 2.0);
}
