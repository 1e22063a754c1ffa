// Device-side printf and assert on the emulated device (src/emu/kprintf.c):
// tests/unit/test_emu_kprintf.c runs these kernels; tests/gpu/kprint_check.sh
// runs hello and check on a GPU. Regenerate with (in this directory):
//   nvcc --ptx -arch=sm_75 -o kprint.ptx kprint.cu
//   nvcc --ptx -arch=sm_90 -o kprint_sm90.ptx kprint.cu
//   nvcc --cubin -arch=sm_90 -o kprint_sm90.cubin kprint.cu
#include <cassert>
#include <cstdio>

#include "kprint_cases.h"

#define KP_CALL(fmt, ...) printf(fmt, __VA_ARGS__);

// Every case of kprint_cases.h, once.
extern "C" __global__ void formats(int i, unsigned u, long long ll, unsigned long long ull,
                                   double d, float f, char c, short h, const char *s, void *p,
                                   int w, int pr, double n) {
  printf("plain text, no arguments\n");
  KP_CASES(KP_CALL)
}

// Each thread says who it is; printf's return value (arguments parsed) is
// stored per thread.
extern "C" __global__ void hello(int *ret) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  ret[t] = printf("hello from thread %u of block %u\n", threadIdx.x, blockIdx.x);
}

// n lines of 16 bytes each ("line 0000000 ..\n"), from one thread.
extern "C" __global__ void lines(int n) {
  for (int k = 0; k < n; k++) printf("line %07d ..\n", k);
}

// Fails for the threads whose element is not 0, after one printf.
extern "C" __global__ void check(const int *p) {
  printf("checking %u\n", blockIdx.x * blockDim.x + threadIdx.x);
  assert(p[blockIdx.x * blockDim.x + threadIdx.x] == 0);
}
