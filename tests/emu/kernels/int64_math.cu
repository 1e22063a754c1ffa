// int64_math.cu - 64-bit integer arithmetic, 16 results per element:
// mul, signed and unsigned div/rem, shifts (logical and arithmetic),
// mul.hi, abs, min/max, and mixes of 32- and 64-bit, signed and unsigned.
// Inputs avoid b == 0 and INT64_MIN / -1 (undefined in C and PTX).
extern "C" __global__ void int64_math(const long long *a, const long long *b, const int *c,
                                      long long *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  long long x = a[i], y = b[i];
  int z = c[i];
  unsigned long long ux = x, uy = y;
  long long *o = out + 16 * i;
  o[0] = (long long)(ux * uy);
  o[1] = x / y;
  o[2] = x % y;
  o[3] = (long long)(ux / uy);
  o[4] = (long long)(ux % uy);
  o[5] = (long long)(ux << (z & 63));
  o[6] = x >> (z & 63);
  o[7] = (long long)(ux >> (z & 63));
  o[8] = __mul64hi(x, y);
  o[9] = (long long)__umul64hi(ux, uy);
  o[10] = (long long)((unsigned long long)x + (unsigned long long)((long long)z * (unsigned)z));
  o[11] = (long long)((unsigned)z * (unsigned)x);
  o[12] = llabs(x);
  o[13] = x < y ? y : x;
  o[14] = (long long)(ux < uy ? ux : uy);
  o[15] = (long long)z * (long long)(int)(y >> 32) + x / ((long long)(z | 1));
}
