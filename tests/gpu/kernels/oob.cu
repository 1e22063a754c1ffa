// oob.cu - a kernel that faults (test only).
//
// Stores to device address 16, in the never-mapped first page: a NULL
// dereference, which the driver reports as CUDA_ERROR_ILLEGAL_ADDRESS. (A
// store 1..32 GiB past the region's start was tried first: on an H200 it
// faulted as CUDA_ERROR_INVALID_ADDRESS_SPACE instead, so the exact error of
// far-away addresses depends on the GPU.) Either way the fault is sticky:
// the context is unusable and the worker must exit with status 3.
// Takes the region pointer like every parameterless gpulease kernel.
extern "C" __global__ void oob(unsigned *region) {
  (void)region;
  if (threadIdx.x == 0) *(volatile unsigned *)16ull = 0xdeadbeefu;
}
