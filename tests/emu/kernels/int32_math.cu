// int32_math.cu - 32-bit integer arithmetic, 16 results per element:
// mul lo/hi, 24-bit multiplies, sad, div/rem, halving adds, abs, mad.
// Inputs avoid b == 0 and INT_MIN / -1.
extern "C" __global__ void int32_math(const int *a, const int *b, const int *c, unsigned *out,
                                      int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i], z = c[i];
  unsigned ux = x, uy = y, uz = z;
  unsigned *o = out + 16 * i;
  o[0] = ux * uy;
  o[1] = (unsigned)__mulhi(x, y);
  o[2] = __umulhi(ux, uy);
  o[3] = (unsigned)__mul24(x, y);
  o[4] = __umul24(ux, uy);
  o[5] = __sad(x, y, uz);
  o[6] = __usad(ux, uy, uz);
  o[7] = (unsigned)(x / y);
  o[8] = (unsigned)(x % y);
  o[9] = ux / uy;
  o[10] = ux % uy;
  o[11] = (unsigned)__hadd(x, y);
  o[12] = (unsigned)__rhadd(x, y);
  o[13] = __uhadd(ux, uy) ^ __urhadd(ux, uz);
  o[14] = (unsigned)abs(x);
  o[15] = ux * uy + uz;
}
