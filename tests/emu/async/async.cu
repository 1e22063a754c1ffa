// Asynchronous copies, mbarriers, redux and elect on the emulated device
// (tests/unit/test_emu_async.c checks every kernel against a C reference).
// PTX checked in next to this file, made by tests/emu/async/regen.sh:
//   nvcc --ptx -arch=sm_80  -diag-suppress 20054 -o async_sm80.ptx  async.cu
//   nvcc --ptx -arch=sm_90a -diag-suppress 20054 -o async_sm90a.ptx async.cu
#include <cooperative_groups.h>
#include <cuda.h>
#include <cuda/barrier>
#include <cuda_pipeline.h>
#include <stdint.h>

static __device__ __forceinline__ unsigned smem(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

// ---- cp.async: every cp-size, zero-fill, ignore-src, cache hints --------

// 64 threads. n ints valid at in; bogus: an address that must never be
// read (the copies that read nothing name it).
extern "C" __global__ void cp_async_fill(const int *in, int *out, int n, const int *bogus) {
  __shared__ __align__(16) int s16[256];
  __shared__ __align__(16) int s8[128];
  __shared__ __align__(16) int s4[64];
  __shared__ __align__(16) int sh[64];
  unsigned t = threadIdx.x;
  for (int i = t; i < 256; i += 64) s16[i] = -1;
  for (int i = t; i < 128; i += 64) s8[i] = -1;
  s4[t] = -1;
  sh[t] = -1;
  __syncthreads();
  int b16 = t * 4, v16 = min(max(n - b16, 0), 4);
  const int *p16 = v16 ? in + b16 : bogus;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem(&s16[b16])),
               "l"(p16), "r"(v16 * 4)
               : "memory");
  int b8 = t * 2, v8 = min(max(n - b8, 0), 2);
  const int *p8 = v8 ? in + b8 : bogus;
  asm volatile("cp.async.ca.shared.global.L2::128B [%0], [%1], 8, %2;" ::"r"(smem(&s8[b8])),
               "l"(p8), "r"(v8 * 4)
               : "memory");
  // cp-size 4, ignore-src on odd threads (zeros written)
  asm volatile("{ .reg .pred p; setp.ne.b32 p, %2, 0;\n"
               "cp.async.ca.shared::cta.global [%0], [%1], 4, p; }" ::"r"(smem(&s4[t])),
               "l"((t & 1) ? bogus : in + t), "r"(t & 1)
               : "memory");
  asm volatile("cp.async.commit_group;" ::: "memory");
  // an immediate src-size of 3 (one byte zeroed)
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, 3;" ::"r"(smem(&sh[t])), "l"(in + t)
               : "memory");
  asm volatile("cp.async.commit_group;" ::: "memory");
  asm volatile("cp.async.wait_group 1;" ::: "memory");
  asm volatile("cp.async.wait_all;" ::: "memory");
  __syncthreads();
  for (int i = t; i < 256; i += 64) out[i] = s16[i];
  for (int i = t; i < 128; i += 64) out[256 + i] = s8[i];
  out[384 + t] = s4[t];
  out[448 + t] = sh[t];
}

// A cache policy from createpolicy on a cp.async (emulator only: an H200
// traps when this copy shares a kernel with cp_async_fill's .cg copy).
// out[t] = in[t] with its top byte zeroed (src-size 3).
extern "C" __global__ void cp_async_hint(const int *in, int *out) {
  __shared__ __align__(16) int sh[64];
  unsigned t = threadIdx.x;
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  asm volatile("cp.async.ca.shared.global.L2::cache_hint [%0], [%1], 4, 3, %2;" ::"r"(
                   smem(&sh[t])),
               "l"(in + t), "l"(policy)
               : "memory");
  asm volatile("cp.async.wait_all;" ::: "memory");
  out[t] = sh[t];
}

// cuda_pipeline.h's primitives, double-buffered: block sums of tiles of
// 128 floats (one float4 per thread of 32), tile k of block b at
// in[(b * ntiles + k) * 128].
extern "C" __global__ void pipeline_sum(const float4 *in, float *out, int ntiles) {
  __shared__ float4 buf[2][32];
  unsigned t = threadIdx.x;
  const float4 *base = in + (size_t)blockIdx.x * ntiles * 32;
  float acc = 0.f;
  __pipeline_memcpy_async(&buf[0][t], &base[t], sizeof(float4));
  __pipeline_commit();
  for (int k = 0; k < ntiles; k++) {
    if (k + 1 < ntiles)
      __pipeline_memcpy_async(&buf[(k + 1) & 1][t], &base[(k + 1) * 32 + t], sizeof(float4));
    __pipeline_commit();
    __pipeline_wait_prior(1);
    __syncwarp();
    float4 v = buf[k & 1][(t + k) & 31];
    acc += v.x + v.y + v.z + v.w;
    __syncwarp();
  }
  out[blockIdx.x * 32 + t] = acc;
}

// cuda::barrier with cuda::memcpy_async: libcu++ picks cp.async with
// cp.async.mbarrier.arrive on sm_80 and cp.async.bulk with expect_tx on
// sm_90. n ints, a multiple of 4, at most 1024; blockDim.x threads.
extern "C" __global__ void cuda_barrier_copy(const int *in, int *out, int n) {
  using barrier = cuda::barrier<cuda::thread_scope_block>;
  __shared__ alignas(16) int buf[1024];
  __shared__ barrier bar;
  auto block = cooperative_groups::this_thread_block();
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  cuda::memcpy_async(block, buf, in, cuda::aligned_size_t<16>(sizeof(int) * n), bar);
  bar.arrive_and_wait();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = buf[n - 1 - i] + i;
  barrier::arrival_token tok = bar.arrive();
  bar.wait(std::move(tok));
}

// ---- redux.sync ---------------------------------------------------------

extern "C" __global__ void redux_all(const int *in, int *out) {
  unsigned t = threadIdx.x;
  int v = in[t];
  unsigned u = (unsigned)v;
  int *o = out + 8 * t;
  o[0] = (int)__reduce_add_sync(0xffffffffu, u);
  o[1] = __reduce_min_sync(0xffffffffu, v);
  o[2] = (int)__reduce_max_sync(0xffffffffu, u);
  o[3] = (int)__reduce_and_sync(0xffffffffu, u);
  o[4] = (int)__reduce_or_sync(0xffffffffu, u);
  o[5] = (int)__reduce_xor_sync(0xffffffffu, u);
  o[6] = __reduce_max_sync(0xffffffffu, v);
  if (t & 1)
    o[7] = (int)__reduce_add_sync(0xaaaaaaaau, u);
  else
    o[7] = (int)__reduce_min_sync(0x55555555u, u);
}

// ---- mbarrier helpers ----------------------------------------------------

static __device__ __forceinline__ void mb_init(uint64_t *b, unsigned n) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(smem(b)), "r"(n) : "memory");
}
static __device__ __forceinline__ uint64_t mb_arrive(uint64_t *b) {
  uint64_t st;
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(st) : "r"(smem(b)) : "memory");
  return st;
}
static __device__ __forceinline__ uint64_t mb_arrive_n(uint64_t *b, unsigned n) {
  uint64_t st;
  asm volatile("mbarrier.arrive.shared.b64 %0, [%1], %2;"
               : "=l"(st)
               : "r"(smem(b)), "r"(n)
               : "memory");
  return st;
}
static __device__ __forceinline__ int mb_test(uint64_t *b, uint64_t st) {
  unsigned r;
  asm volatile("{ .reg .pred p; mbarrier.test_wait.shared.b64 p, [%1], %2;\n"
               "selp.u32 %0, 1, 0, p; }"
               : "=r"(r)
               : "r"(smem(b)), "l"(st)
               : "memory");
  return (int)r;
}
static __device__ __forceinline__ int mb_test_parity(uint64_t *b, unsigned par) {
  unsigned r;
  asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared.b64 p, [%1], %2;\n"
               "selp.u32 %0, 1, 0, p; }"
               : "=r"(r)
               : "r"(smem(b)), "r"(par)
               : "memory");
  return (int)r;
}
// try_wait on sm_90 (may suspend), test_wait before
static __device__ __forceinline__ int mb_try_parity(uint64_t *b, unsigned par) {
#if __CUDA_ARCH__ >= 900
  unsigned r;
  asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], "
               "%2, 1000000;\n"
               "selp.u32 %0, 1, 0, p; }"
               : "=r"(r)
               : "r"(smem(b)), "r"(par)
               : "memory");
  return (int)r;
#else
  return mb_test_parity(b, par);
#endif
}
static __device__ __forceinline__ void mb_wait_parity(uint64_t *b, unsigned par) {
  while (!mb_try_parity(b, par)) {
  }
}
static __device__ __forceinline__ unsigned mb_pending(uint64_t st) {
  unsigned r;
  asm volatile("mbarrier.pending_count.b64 %0, %1;" : "=r"(r) : "l"(st));
  return r;
}

// ---- mbarrier producer/consumer across warps ------------------------------

// 128 threads: warp 0 produces chunks of 96 ints into a two-stage ring,
// warps 1-3 consume them (thread c of 96 takes element c of each chunk).
// full[s]: 32 producer arrivals; empty[s]: 96 consumer arrivals.
extern "C" __global__ void mbar_pipeline(const int *in, int *out, int nchunks) {
  __shared__ int ring[2][96];
  __shared__ uint64_t full[2], empty[2];
  unsigned t = threadIdx.x;
  if (t == 0) {
    mb_init(&full[0], 32);
    mb_init(&full[1], 32);
    mb_init(&empty[0], 96);
    mb_init(&empty[1], 96);
  }
  __syncthreads();
  if (t < 32) {
    for (int c = 0; c < nchunks; c++) {
      int s = c & 1;
      mb_wait_parity(&empty[s], ((c >> 1) & 1) ^ 1);
      for (int i = t; i < 96; i += 32) ring[s][i] = in[c * 96 + i] * 3 + c;
      mb_arrive(&full[s]);
    }
  } else {
    unsigned me = t - 32;
    long long acc = 0;
    for (int c = 0; c < nchunks; c++) {
      int s = c & 1;
      mb_wait_parity(&full[s], (c >> 1) & 1);
      acc += (long long)ring[s][me] * (c + 1);
      mb_arrive(&empty[s]);
    }
    out[me] = (int)acc;
  }
}

// ---- mbarrier state machine ---------------------------------------------

// One thread walks an mbarrier through its phases; out[i] records what it
// observes (-1 where the architecture lacks the operation).
extern "C" __global__ void mbar_states(long long *out) {
  __shared__ uint64_t bar, raw;
  for (int i = 0; i < 20; i++) out[i] = -1;
  mb_init(&bar, 3);
  out[0] = (long long)*(volatile uint64_t *)&bar; // the object as stored
  uint64_t s0 = mb_arrive(&bar);
  out[1] = mb_pending(s0);         // 2
  out[2] = mb_test(&bar, s0);      // 0
  uint64_t s1;
  asm volatile("mbarrier.arrive.noComplete.shared.b64 %0, [%1], 1;"
               : "=l"(s1)
               : "r"(smem(&bar))
               : "memory");
  out[3] = mb_pending(s1);         // 1
  out[4] = mb_test_parity(&bar, 0); // 0: phase 0 runs
  out[5] = mb_test_parity(&bar, 1); // 1: "phase -1" is over
  uint64_t s2 = mb_arrive(&bar);   // completes phase 0
  out[6] = mb_test(&bar, s2);      // 1
  out[7] = mb_test(&bar, s0);      // 1
  out[8] = mb_test_parity(&bar, 0); // 1
  uint64_t s3;
  asm volatile("mbarrier.arrive_drop.shared.b64 %0, [%1];" : "=l"(s3) : "r"(smem(&bar)) : "memory");
  out[9] = mb_pending(s3);         // 2 (phase 1: 3 expected)
  uint64_t s4 = mb_arrive_n(&bar, 2); // completes phase 1; expected now 2
  out[10] = mb_test(&bar, s4);     // 1
  uint64_t s5 = mb_arrive(&bar);
  out[11] = mb_pending(s5);        // 1
#if __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], 64;" ::"r"(smem(&bar))
               : "memory");
  uint64_t s6 = mb_arrive(&bar);   // pending 0, tx 64: still open
  out[12] = mb_test(&bar, s6);     // 0
  asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], 48;" ::"r"(smem(&bar))
               : "memory");
  out[13] = mb_test(&bar, s6);     // 0
  asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], 16;" ::"r"(smem(&bar))
               : "memory");
  out[14] = mb_test(&bar, s6);     // 1 (phase 2 over)
  uint64_t s7;
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 %0, [%1], 32;"
               : "=l"(s7)
               : "r"(smem(&bar))
               : "memory");
  out[15] = mb_pending(s7);        // 1
  asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], 32;" ::"r"(smem(&bar))
               : "memory");
  uint64_t s8 = mb_arrive(&bar);
  out[16] = mb_test(&bar, s8);     // 1 (phase 3 over)
#endif
  asm volatile("mbarrier.inval.shared.b64 [%0];" ::"r"(smem(&bar)) : "memory");
  out[17] = (long long)*(volatile uint64_t *)&bar;
  raw = 0;
  out[18] = (long long)raw;
}

// ---- cp.async.mbarrier.arrive ---------------------------------------------

// 64 threads copy 16 bytes each and signal an mbarrier when their copies
// land (.noinc: the arrival counts against init's 64; without it the count
// is raised first, so a plain arrive follows).
extern "C" __global__ void cp_async_mbar(const int4 *in, int4 *out) {
  __shared__ int4 buf[64];
  __shared__ uint64_t bar[2];
  unsigned t = threadIdx.x;
  if (t == 0) {
    mb_init(&bar[0], 64);
    mb_init(&bar[1], 64);
  }
  __syncthreads();
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem(&buf[t])), "l"(in + t)
               : "memory");
  asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" ::"r"(smem(&bar[0]))
               : "memory");
  mb_wait_parity(&bar[0], 0);
  int4 v = buf[(t + 1) & 63];
  __syncthreads();
  v.x += 1;
  buf[t] = v;
  asm volatile("cp.async.mbarrier.arrive.shared.b64 [%0];" ::"r"(smem(&bar[1])) : "memory");
  mb_arrive(&bar[1]);
  mb_wait_parity(&bar[1], 0);
  out[t] = buf[t];
}

// ---- waits that end by time-out, and waits that never end ------------------

// Every lane waits before anyone has arrived; when a wait fails, it
// arrives itself (once) and waits again. out[t]: the failed waits (>= 1).
extern "C" __global__ void mbar_selfarrive(int *out) {
  __shared__ uint64_t bar;
  unsigned t = threadIdx.x;
  if (t == 0) mb_init(&bar, blockDim.x);
  __syncthreads();
  int fails = 0;
  while (!mb_try_parity(&bar, 0)) {
    if (fails++ == 0) mb_arrive(&bar);
  }
  out[t] = fails;
}

// Waits a bounded number of times, then arrives itself: every wait of
// the first 200 fails, as nobody else arrives. out[t] = 200.
extern "C" __global__ void mbar_bounded_spin(int *out) {
  __shared__ uint64_t bar;
  unsigned t = threadIdx.x;
  if (t == 0) mb_init(&bar, blockDim.x);
  __syncthreads();
  int spins = 0;
  while (spins < 200 && !mb_try_parity(&bar, 0)) spins++;
  if (spins == 200) mb_arrive(&bar);
  mb_wait_parity(&bar, 0);
  out[t] = spins;
}

// Expects 64 arrivals from 32 threads: the wait can never complete.
extern "C" __global__ void mbar_deadlock(int *out) {
  __shared__ uint64_t bar;
  unsigned t = threadIdx.x;
  if (t == 0) mb_init(&bar, 64);
  __syncthreads();
  mb_arrive(&bar);
  mb_wait_parity(&bar, 0);
  out[t] = 1;
}

#if __CUDA_ARCH__ >= 900
// ---- sm_90: cp.async.bulk, elect, setmaxnreg, griddepcontrol --------------

// 128 threads stream nchunks chunks of 256 ints: thread 0 loads each with
// a bulk copy completing on full[s], everyone transforms it into obuf, and
// thread 0 stores obuf with a bulk store.
extern "C" __global__ void bulk_stream(const int *in, int *out, int nchunks) {
  __shared__ __align__(128) int buf[2][256];
  __shared__ __align__(128) int obuf[256];
  __shared__ uint64_t full[2];
  unsigned t = threadIdx.x;
  if (t == 0) {
    mb_init(&full[0], 1);
    mb_init(&full[1], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  for (int c = 0; c < nchunks; c++) {
    int s = c & 1;
    if (t == 0) {
      asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], 1024;" ::"r"(
                       smem(&full[s]))
                   : "memory");
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], "
                   "[%1], 1024, [%2];" ::"r"(smem(&buf[s][0])),
                   "l"(in + c * 256), "r"(smem(&full[s]))
                   : "memory");
    }
    mb_wait_parity(&full[s], (c >> 1) & 1);
    obuf[t] = buf[s][255 - t] * 2 + c;
    obuf[t + 128] = buf[s][127 - t] - c;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (t == 0) {
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], 1024;" ::"l"(
                       out + c * 256),
                   "r"(smem(obuf))
                   : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
    __syncthreads();
  }
}

// Clusters of 2 blocks of 64 threads: each thread writes a value into the
// peer block's shared memory and arrives on the peer's mbarrier (remote
// arrive); each block waits for its 64 remote arrivals, then reads. Block 1
// also bulk-copies its own 256 bytes into block 0's buffer, completing on
// block 0's second mbarrier.
extern "C" __global__ void __cluster_dims__(2, 1, 1) cluster_mbar(const int *in, int *out) {
  __shared__ int slot[64];
  __shared__ __align__(16) int bulk[64];
  __shared__ uint64_t bar[2];
  unsigned t = threadIdx.x, rank, peer;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  peer = rank ^ 1;
  bulk[t] = in[blockIdx.x * 64 + t] + 1000;
  if (t == 0) {
    mb_init(&bar[0], 64);
    mb_init(&bar[1], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
  unsigned rslot, rbar, rbar1, rbulk;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rslot) : "r"(smem(&slot[t])), "r"(peer));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rbar) : "r"(smem(&bar[0])), "r"(peer));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rbar1) : "r"(smem(&bar[1])), "r"(peer));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rbulk) : "r"(smem(bulk)), "r"(peer));
  asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(rslot), "r"(in[blockIdx.x * 64 + t] * 7)
               : "memory");
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(rbar)
               : "memory");
  if (rank == 1 && t == 0) {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.expect_tx.relaxed.cluster.shared::cluster.b64 [%0], 256;" ::"r"(rbar1)
                 : "memory");
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(rbar1)
                 : "memory");
    asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], "
                 "[%1], 256, [%2];" ::"r"(rbulk),
                 "r"(smem(bulk)), "r"(rbar1)
                 : "memory");
  }
  mb_wait_parity(&bar[0], 0);
  out[blockIdx.x * 128 + t] = slot[t];
  if (rank == 0) {
    mb_wait_parity(&bar[1], 0);
    out[blockIdx.x * 128 + 64 + t] = bulk[t];
  } else {
    out[blockIdx.x * 128 + 64 + t] = -1;
  }
  // nobody may exit while its shared memory can still be reached
  asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}

// Tensor copies (TMA). tma_load_2d: a box of 16 rows of 32 floats at
// (x0, y0) (box_bytes: 16 rows of 32, 16 or 8) lands in a 1024-aligned tile; out gets the tile's raw words
// (swizzled as the map says). 128 threads.
extern "C" __global__ void tma_load_2d(const __grid_constant__ CUtensorMap tmap, float *out,
                                       int x0, int y0, int box_bytes) {
  __shared__ alignas(1024) float tile[16 * 32];
  __shared__ uint64_t bar;
  unsigned t = threadIdx.x;
  for (int i = t; i < 16 * 32; i += blockDim.x) tile[i] = -7.0f;
  if (t == 0) {
    mb_init(&bar, 1);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  if (t == 0) {
    asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];" ::"l"(&tmap),
                 "r"(x0), "r"(y0)
                 : "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(&bar)),
                 "r"(box_bytes)
                 : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem(tile)),
                 "l"(&tmap), "r"(x0), "r"(y0), "r"(smem(&bar))
                 : "memory");
  }
  mb_wait_parity(&bar, 0);
  for (int i = t; i < 16 * 32; i += blockDim.x) out[i] = tile[i];
}

// tma_store_3d: fills a box of 4 x 8 x 8 ints (z, y, x) with box index *
// 10 + base and stores it at (x0, y0, z0); elements outside the tensor are
// not written. 64 threads.
extern "C" __global__ void tma_store_3d(const __grid_constant__ CUtensorMap tmap, int x0, int y0,
                                        int z0, int base) {
  __shared__ alignas(128) int box[4 * 8 * 8];
  unsigned t = threadIdx.x;
  for (int i = t; i < 256; i += blockDim.x) box[i] = i * 10 + base;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (t == 0) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group"
                 " [%0, {%1, %2, %3}], [%4];" ::"l"(&tmap),
                 "r"(x0), "r"(y0), "r"(z0), "r"(smem(box))
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
}

// tma_load_5d: a box of 2 x 2 x 2 x 2 x 4 ints at (c0..c4); out gets the
// 64 words of shared memory. 32 threads.
extern "C" __global__ void tma_load_5d(const __grid_constant__ CUtensorMap tmap, int *out, int c0,
                                       int c1, int c2, int c3, int c4) {
  __shared__ alignas(128) int box[64];
  __shared__ uint64_t bar;
  unsigned t = threadIdx.x;
  if (t == 0) {
    mb_init(&bar, 1);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 256;" ::"r"(smem(&bar))
                 : "memory");
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];" ::"r"(smem(box)),
                 "l"(&tmap), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(smem(&bar))
                 : "memory");
  }
  mb_wait_parity(&bar, 0);
  out[t] = box[t];
  out[t + 32] = box[t + 32];
}

// Clusters of 2 blocks of 32 threads: rank 0 multicasts a 2-d tile of 16
// rows of 32 floats at (x0, y0) to both blocks, rank 1 multicasts 512
// bytes of src with a bulk copy; every block arrives with its own
// expect_tx and waits. out[block * 1024 + ...]: the tile, then the bytes.
extern "C" __global__ void __cluster_dims__(2, 1, 1)
    tma_multicast(const __grid_constant__ CUtensorMap tmap, const float *src, float *out, int x0,
                  int y0) {
  __shared__ alignas(1024) float tile[16 * 32];
  __shared__ alignas(128) float raw[128];
  __shared__ uint64_t bar[2];
  unsigned t = threadIdx.x, rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  if (t == 0) {
    mb_init(&bar[0], 1);
    mb_init(&bar[1], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
  if (t == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 2048;" ::"r"(smem(&bar[0]))
                 : "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 512;" ::"r"(smem(&bar[1]))
                 : "memory");
    unsigned short mask = 3;
    if (rank == 0)
      asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::"
                   "bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem(tile)),
                   "l"(&tmap), "r"(x0), "r"(y0), "r"(smem(&bar[0])), "h"(mask)
                   : "memory");
    else
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
                   ".multicast::cluster [%0], [%1], 512, [%2], %3;" ::"r"(smem(raw)),
                   "l"(src), "r"(smem(&bar[1])), "h"(mask)
                   : "memory");
  }
  mb_wait_parity(&bar[0], 0);
  mb_wait_parity(&bar[1], 0);
  for (int i = t; i < 512; i += 32) out[blockIdx.x * 1024 + i] = tile[i];
  for (int i = t; i < 128; i += 32) out[blockIdx.x * 1024 + 512 + i] = raw[i];
  asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}

// Bulk reductions into global memory: every block adds its 128 floats
// into fsum, takes the minimum of its 64 ints into imin and ands its 32
// 64-bit words into band. 128 threads.
extern "C" __global__ void bulk_reduce(const float *fin, const int *iin,
                                       const unsigned long long *bin, float *fsum, int *imin,
                                       unsigned long long *band) {
  __shared__ alignas(16) float f[128];
  __shared__ alignas(16) int v[64];
  __shared__ alignas(16) unsigned long long u[32];
  unsigned t = threadIdx.x, blk = blockIdx.x;
  f[t] = fin[blk * 128 + t];
  if (t < 64) v[t] = iin[blk * 64 + t];
  if (t < 32) u[t] = bin[blk * 32 + t];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (t == 0) {
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], 512;" ::"l"(
                     fsum),
                 "r"(smem(f))
                 : "memory");
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.min.s32 [%0], [%1], 256;" ::"l"(
                     imin),
                 "r"(smem(v))
                 : "memory");
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.and.b64 [%0], [%1], 256;" ::"l"(
                     band),
                 "r"(smem(u))
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  }
}

// Tensor reduction: each block adds a box of 8 x 8 ints (value
// blockIdx.x * 1000 + index) at (x0 + 4 * blockIdx.x, y0) into the tensor.
extern "C" __global__ void tma_reduce_2d(const __grid_constant__ CUtensorMap tmap, int x0,
                                         int y0) {
  __shared__ alignas(128) int box[64];
  unsigned t = threadIdx.x;
  box[t] = blockIdx.x * 1000 + t;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (t == 0) {
    asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group"
                 " [%0, {%1, %2}], [%3];" ::"l"(&tmap),
                 "r"(x0 + 4 * (int)blockIdx.x), "r"(y0), "r"(smem(box))
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
}

// Clusters of 2 blocks of 64 threads: each block adds its 64 ints into the
// peer's buffer (which starts as its own input) with a bulk reduction that
// completes on the peer's mbarrier. out[block * 64 + t]: the sums.
extern "C" __global__ void __cluster_dims__(2, 1, 1) cluster_reduce(const int *in, int *out) {
  __shared__ alignas(16) int acc[64];
  __shared__ alignas(16) int mine[64];
  __shared__ uint64_t bar;
  unsigned t = threadIdx.x, rank, racc, rbar;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  acc[t] = in[blockIdx.x * 64 + t];
  mine[t] = in[blockIdx.x * 64 + t] * 3;
  if (t == 0) {
    mb_init(&bar, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
  if (t == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 256;" ::"r"(smem(&bar))
                 : "memory");
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(racc) : "r"(smem(acc)), "r"(rank ^ 1));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rbar) : "r"(smem(&bar)), "r"(rank ^ 1));
    asm volatile("cp.reduce.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes"
                 ".add.u32 [%0], [%1], 256, [%2];" ::"r"(racc),
                 "r"(smem(mine)), "r"(rbar)
                 : "memory");
  }
  mb_wait_parity(&bar, 0);
  out[blockIdx.x * 64 + t] = acc[t];
  asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}

// Clusters of 2 blocks of 64 threads: st.async and red.async into the
// peer block's shared memory, each completing its bytes on the peer's
// mbarrier (1024 bytes in all). out[block * 160 + ...]: slot[64],
// quad[64], counter[8], mx, then 23 unused.
extern "C" __global__ void __cluster_dims__(2, 1, 1) st_red_async(const int *in, int *out) {
  __shared__ alignas(16) int slot[64];
  __shared__ alignas(16) int quad[64];
  __shared__ unsigned counter[8];
  __shared__ int mx;
  __shared__ uint64_t bar;
  unsigned t = threadIdx.x, rank, peer, a;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  peer = rank ^ 1;
  if (t < 8) counter[t] = 0;
  if (t == 0) {
    mx = -2147483647 - 1;
    mb_init(&bar, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
  if (t == 0)
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 1024;" ::"r"(smem(&bar))
                 : "memory");
  unsigned rbar;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rbar) : "r"(smem(&bar)), "r"(peer));
  int v = in[blockIdx.x * 64 + t];
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(smem(&slot[t])), "r"(peer));
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(a),
               "r"(v * 5), "r"(rbar)
               : "memory");
  if (t < 16) {
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(smem(&quad[t * 4])), "r"(peer));
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], "
                 "{%1, %2, %3, %4}, [%5];" ::"r"(a),
                 "r"(t + rank), "r"(t + 1), "r"(t + 2), "r"(t + 3), "r"(rbar)
                 : "memory");
  }
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(smem(&counter[t % 8])), "r"(peer));
  asm volatile("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 "
               "[%0], %1, [%2];" ::"r"(a),
               "r"(t + 1), "r"(rbar)
               : "memory");
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(smem(&mx)), "r"(peer));
  asm volatile("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.max.s32 "
               "[%0], %1, [%2];" ::"r"(a),
               "r"(v), "r"(rbar)
               : "memory");
  mb_wait_parity(&bar, 0);
  int *o = out + blockIdx.x * 160;
  o[t] = slot[t];
  o[64 + t] = quad[t];
  if (t < 8) o[128 + t] = (int)counter[t];
  if (t == 0) o[136] = mx;
  asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}

// out[t * 4 + ...]: elect over the full warp, elect among the lanes of a
// divergent branch, and that setmaxnreg/griddepcontrol change nothing.
extern "C" __global__ void elect_misc(const int *in, int *out) {
  unsigned t = threadIdx.x;
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
  unsigned lane, pred;
  asm volatile("{ .reg .pred p; elect.sync %0|p, %2; selp.u32 %1, 1, 0, p; }"
               : "=r"(lane), "=r"(pred)
               : "r"(0xffffffffu));
  out[t * 4 + 0] = (int)lane;
  out[t * 4 + 1] = (int)pred;
  out[t * 4 + 2] = -1;
  if (in[t] % 3 == 1) {
    unsigned mask = __activemask();
    unsigned p2;
    asm volatile("{ .reg .pred p; elect.sync _|p, %1; selp.u32 %0, 1, 0, p; }"
                 : "=r"(p2)
                 : "r"(mask));
    out[t * 4 + 2] = (int)p2;
  }
  asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  out[t * 4 + 3] = in[t] * 5;
}
#endif
