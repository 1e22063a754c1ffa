// A module that declares device memory of its own (tests/unit/test_footprint.c,
// gen.sh): 1 MiB of zero-filled globals, 16 initialised bytes, 256 bytes of
// constants, and a kernel that reads them all.
__device__ char big[1 << 20];
__device__ int init[4] = {1, 2, 3, 4};
__constant__ float c[64];
extern "C" __global__ void k(unsigned *p) {
  unsigned i = threadIdx.x;
  p[i] = (unsigned)big[i] + (unsigned)init[i & 3] + (unsigned)c[i & 63];
}
