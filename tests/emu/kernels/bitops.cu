// bitops.cu - integer bit operations: popc, clz, brev, byte_perm, funnel
// shifts (wrap and clamp), bit-field extract by shifts (unsigned and
// signed), field insert, ffs, and their 64-bit forms; prmt with the
// sign-replicating selector bit.
extern "C" __global__ void bitops(const unsigned *a, const unsigned *b, const unsigned *c,
                                  const unsigned long long *d, unsigned *out,
                                  unsigned long long *out64, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned x = a[i], y = b[i], s = c[i];
  unsigned long long w = d[i];
  unsigned *o = out + 16 * i;
  unsigned pos = s & 15, len = 1 + ((s >> 8) & 15);
  o[0] = __popc(x);
  o[1] = __clz(x);
  o[2] = __brev(x);
  o[3] = __byte_perm(x, y, s & 0x7777);
  // __byte_perm ignores selector bit 3 (nvcc masks it); the PTX prmt
  // itself replicates the byte's sign there: reached through inline asm.
  unsigned pr;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(pr) : "r"(x), "r"(y), "r"(s));
  o[4] = pr;
  o[5] = __funnelshift_l(x, y, s);
  o[6] = __funnelshift_r(x, y, s);
  o[7] = __funnelshift_lc(x, y, s & 63);
  o[8] = __funnelshift_rc(x, y, s & 63);
  o[9] = (x >> pos) & ((1u << len) - 1);
  o[10] = (unsigned)(((int)x << (32 - pos - len)) >> (32 - len));
  o[11] = (x & ~(((1u << len) - 1) << pos)) | ((y << pos) & (((1u << len) - 1) << pos));
  o[12] = __ffs(x);
  o[13] = __popcll(w);
  o[14] = __clzll(w);
  o[15] = __ffsll(w);
  out64[2 * i] = __brevll(w);
  out64[2 * i + 1] = (w << (s & 63)) | (w >> ((64 - (s & 63)) & 63));
}
