// Thread-block clusters (sm_90 only: cluster_sm90.ptx): distributed shared
// memory through cooperative_groups' cluster API and through inline PTX.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Each block loads its slice into shared memory; after cluster.sync() every
// thread sums the same element of every block of its cluster, weighted by
// rank + 1, and reads the next rank's element atomically bumped by its
// predecessor. out holds 8 words a thread: the sum, the bumped counter,
// and the cluster registers.
extern "C" __global__ void cluster_sum(const int *in, int *out) {
  __shared__ int s[128];
  __shared__ int bumps;
  cg::cluster_group c = cg::this_cluster();
  unsigned t = threadIdx.x, n = blockDim.x;
  unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned rank = c.block_rank(), nr = c.num_blocks();
  s[t] = in[b * n + t];
  if (t == 0) bumps = 0;
  c.sync();
  int acc = 0;
  for (unsigned k = 0; k < nr; k++) {
    int *peer = c.map_shared_rank(s, k);
    acc += peer[t] * (int)(k + 1);
  }
  atomicAdd(c.map_shared_rank(&bumps, (rank + 1) % nr), (int)t + 1);
  c.sync();
  dim3 bi = c.block_index(), cd = c.dim_blocks();
  unsigned cid, ncid;
  asm("mov.u32 %0, %%clusterid.x;" : "=r"(cid));
  asm("mov.u32 %0, %%nclusterid.y;" : "=r"(ncid));
  int *o = out + 8 * (b * n + t);
  o[0] = acc;
  o[1] = bumps;
  o[2] = (int)rank;
  o[3] = (int)nr;
  o[4] = (int)(bi.x + 10 * bi.y + 100 * bi.z);
  o[5] = (int)(cd.x + 10 * cd.y + 100 * cd.z);
  o[6] = (int)(cid + 10 * ncid);
  o[7] = (int)c.query_shared_rank(c.map_shared_rank(s, (rank + 1) % nr));
  c.sync(); // no block leaves while others may read its shared memory
}

// Compiled with its cluster shape: 2 blocks along x.
extern "C" __global__ void __cluster_dims__(2, 1, 1) cluster_fixed(int *out) {
  __shared__ int s[64];
  cg::cluster_group c = cg::this_cluster();
  s[threadIdx.x] = (int)(threadIdx.x + 1000 * c.block_rank());
  c.sync();
  int *peer = c.map_shared_rank(s, c.block_rank() ^ 1);
  out[blockIdx.x * blockDim.x + threadIdx.x] = peer[threadIdx.x];
  c.sync();
}

// The same through inline PTX: mapa and ld/st/atom/red on .shared::cluster
// addresses, getctarank, %is_explicit_cluster, the split barrier.
extern "C" __global__ void cluster_ptx(unsigned *out) {
  __shared__ unsigned s[64];
  unsigned t = threadIdx.x, rank, nrank, peer, v, got, r, ex;
  s[t] = t;
  asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
               "barrier.cluster.wait.acquire.aligned;" ::: "memory");
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(nrank));
  unsigned a = (unsigned)__cvta_generic_to_shared(&s[t]);
  asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(peer) : "r"(a), "r"((rank + 1) % nrank));
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(peer) : "memory");
  asm volatile("atom.shared::cluster.add.u32 %0, [%1], 100;" : "=r"(got) : "r"(peer) : "memory");
  asm volatile("red.shared::cluster.add.u32 [%0], 1000;" ::"r"(peer) : "memory");
  asm("getctarank.shared::cluster.u32 %0, %1;" : "=r"(r) : "r"(peer));
  asm("{ .reg .pred p; mov.pred p, %%is_explicit_cluster; selp.u32 %0, 1, 0, p; }" : "=r"(ex));
  asm volatile("fence.acq_rel.cluster;" ::: "memory");
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\t"
               "barrier.cluster.wait.aligned;" ::: "memory");
  unsigned mine = s[t];
  asm volatile("barrier.cluster.arrive;\n\tbarrier.cluster.wait;" ::: "memory");
  asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(peer), "r"(v + 7) : "memory");
  asm volatile("barrier.cluster.arrive;\n\tbarrier.cluster.wait;" ::: "memory");
  unsigned *o = out + 8 * (blockIdx.x * blockDim.x + t);
  o[0] = v;
  o[1] = got;
  o[2] = mine;
  o[3] = s[t];
  o[4] = r;
  o[5] = ex;
  o[6] = rank;
  o[7] = nrank;
}

// A cluster barrier that cannot complete: in rank 0's block the first warp
// waits at __syncthreads() for the rest, which wait at the cluster barrier
// for it.
extern "C" __global__ void cluster_stuck(int *out) {
  cg::cluster_group c = cg::this_cluster();
  if (c.block_rank() == 0 && threadIdx.x < 32)
    __syncthreads();
  else
    c.sync();
  out[blockIdx.x] = 1;
}
