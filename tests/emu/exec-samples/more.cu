// Executor samples, part two: vectors, sign extension, generic pointers to
// shared memory, named barriers with counts, shfl's predicate, 16-bit and
// 64-bit atomics.
#include <cuda_fp16.h>

extern "C" __global__ void vec_sext(const float4 *in, float4 *out, const signed char *c,
                                    const short *s, int *o) {
  int t = threadIdx.x;
  float4 v = in[t];
  out[t] = make_float4(v.w, v.z, v.y, v.x);
  o[2 * t] = c[t];
  o[2 * t + 1] = s[t];
}

// p points at shared or global memory depending on the data: generic ld/st.
extern "C" __global__ void generic_ptr(int *g, int which) {
  __shared__ int s[64];
  int t = threadIdx.x;
  s[t] = t;
  __syncthreads();
  int *p = ((t + which) & 1) ? s : g;
  p[t] += 1000;
  __syncthreads();
  if (((t + which) & 1)) g[t] = s[t];
}

// Warp 0 produces, warp 1 consumes: bar.arrive / bar.sync with a count.
extern "C" __global__ void producer_consumer(int *out) {
  __shared__ int buf[32];
  int t = threadIdx.x;
  if (t < 32) {
    buf[t] = t * t;
    asm volatile("bar.arrive 1, 64;");
  } else if (t < 64) {
    asm volatile("bar.sync 1, 64;");
    out[t - 32] = buf[63 - t];
  }
}

extern "C" __global__ void shfl_pred(int *out) {
  int t = threadIdx.x, v = t * 3, r, p;
  asm volatile("{ .reg .pred q; shfl.sync.up.b32 %0|q, %2, 4, 0x1000, 0xffffffff; selp.s32 %1, 1, 0, q; }"
               : "=r"(r), "=r"(p) : "r"(v));
  out[2 * t] = r;
  out[2 * t + 1] = p;
}

extern "C" __global__ void atom16_64(__half2 *h, unsigned long long *c, float *sf) {
  __shared__ float s;
  int t = threadIdx.x;
  if (t == 0) s = 0;
  __syncthreads();
  atomicAdd(h, __floats2half2_rn(1.0f, 0.5f));
  unsigned long long old = *c, seen;
  while ((seen = atomicCAS(c, old, old + 3)) != old) old = seen;
  atomicAdd(&s, 0.25f);
  __syncthreads();
  if (t == 0) *sf = s;
}

// A naive spin lock: lanes of one warp contend with each other. Under
// strict lowest-PC lockstep the losers would spin forever (the winner sits
// at a higher PC); the executor lets a starved PC run alone.
extern "C" __global__ void spinlock(int *mutex, volatile int *counter, int *out) {
  while (atomicCAS(mutex, 0, 1) != 0) { }
  int v = *counter;
  *counter = v + 1;
  __threadfence();
  atomicExch(mutex, 0);
  // afterwards the warp meets again for a shuffle
  int t = threadIdx.x;
  out[blockIdx.x * blockDim.x + t] = __shfl_xor_sync(0xffffffffu, t, 1);
}
