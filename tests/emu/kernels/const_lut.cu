// const_lut.cu - lookup tables in __constant__ and __device__ globals with
// initializers (module data, not kernel parameters).
__constant__ float c_scale[8] = {1.0f, -2.5f, 0.125f, 3.0e10f, -1.0e-30f, 7.0f, 0.1f, -0.0f};
__constant__ int c_perm[16] = {3, 14, 1, 5, 9, 2, 6, 13, 0, 15, 8, 12, 7, 4, 11, 10};
__device__ unsigned d_mix[8] = {0x01234567u, 0x89abcdefu, 0xdeadbeefu, 0x0badf00du,
                                0xffffffffu, 0u,          0x80000000u, 0x7fffffffu};
__device__ short d_small[4] = {-3, 300, -32768, 32767};
extern "C" __global__ void const_lut(const unsigned *in, const float *x, float *fout,
                                     unsigned *uout, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned k = in[i];
  fout[i] = __fmul_rn(c_scale[k & 7], x[i]);
  uout[2 * i] = (unsigned)c_perm[(k >> 3) & 15] ^ d_mix[(k >> 7) & 7];
  uout[2 * i + 1] = (unsigned)(int)d_small[k & 3] + (unsigned)c_perm[c_perm[k & 15]];
}
