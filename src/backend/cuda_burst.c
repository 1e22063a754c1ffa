/*
 * cuda_burst.c - the CUDA backend's BURST: n launches as one cached
 * CUDA graph of the session's stream.
 *
 * A stream handle (void *) is a cuda_stream: the CUstream and the stream's
 * BURST graphs. A BURST of n launches is one CUDA graph of n kernel nodes
 * in a chain (node i depends on node i-1), instantiated once per shape and
 * kept in a small cache of the stream (BURST_CACHE entries, least recently
 * used goes). The shape is n and, per launch, the function, grid, block,
 * shared memory, flags, cluster, argument count and argument sizes: looked
 * up by a 64-bit hash, then compared in full against the entry's stored
 * shape. An entry also keeps its graph's node handles and a copy of every
 * launch's argument bytes (concatenated); a burst of a known shape
 * compares each launch's bytes with the copy, sets the parameters of the
 * nodes that differ (cuGraphExecKernelNodeSetParams, which affects later
 * launches only) and relaunches (cuGraphLaunch). A miss builds the whole
 * entry before touching the cache, so a failure (cuGraphAddKernelNode of
 * launch i, cuGraphInstantiateWithFlags) frees everything it made and
 * leaves the cache as it was. Function handles may be reused by the driver
 * once a module is unloaded, so every unload_module bumps a generation and
 * entries built before it are dropped at the next lookup. Only the
 * stream's session thread touches its cache: no lock. stream_destroy waits
 * for the stream, then destroys the entries' execs and graphs and the
 * stream.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda_internal.h"

/* Frees one burst graph's host memory, and its exec and graph when
 * `device` (not after the context is lost), leaving an empty slot. An exec
 * still running is freed by the driver when it completes. */
void gl_cuda__burst_free(cuda_backend *c, burst_graph *g, bool device) {
  if (device) {
    if (g->exec) c->cu.cuGraphExecDestroy(g->exec);
    if (g->graph) c->cu.cuGraphDestroy(g->graph);
  }
  free(g->nodes);
  free(g->keys);
  free(g->arg_sizes);
  free(g->arg_bytes);
  memset(g, 0, sizeof *g);
}

/* ---- sessions: BURST as a cached CUDA graph ------------------------------------ */

static uint64_t hash_mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

static void burst_key_of(burst_key *k, void *fn, const gl_launch *l) {
  memset(k, 0, sizeof *k);
  k->fn = (CUfunction)fn;
  for (int d = 0; d < 3; d++) {
    k->grid[d] = l->grid[d];
    k->block[d] = l->block[d];
    k->cluster[d] = l->cluster[d];
  }
  k->shared_mem_bytes = l->shared_mem_bytes;
  k->flags = l->flags;
  k->arg_count = l->arg_count;
}

/* The shape's hash: n, and each launch's key and argument sizes. */
static uint64_t burst_hash(void *const *fns, const gl_launch *ls, size_t n) {
  uint64_t h = hash_mix(0, n);
  for (size_t i = 0; i < n; i++) {
    const gl_launch *l = &ls[i];
    h = hash_mix(h, (uint64_t)(uintptr_t)fns[i]);
    h = hash_mix(h, (uint64_t)l->grid[0] | (uint64_t)l->grid[1] << 32);
    h = hash_mix(h, (uint64_t)l->grid[2] | (uint64_t)l->block[0] << 32);
    h = hash_mix(h, (uint64_t)l->block[1] | (uint64_t)l->block[2] << 32);
    h = hash_mix(h, (uint64_t)l->shared_mem_bytes | (uint64_t)l->flags << 32);
    h = hash_mix(h, (uint64_t)l->cluster[0] | (uint64_t)l->cluster[1] << 32);
    h = hash_mix(h, (uint64_t)l->cluster[2] | (uint64_t)l->arg_count << 32);
    for (size_t j = 0; j < l->arg_count; j++) h = hash_mix(h, l->arg_sizes[j]);
  }
  return h;
}

/* True when entry g was built for exactly this shape. */
static bool burst_same_shape(const burst_graph *g, void *const *fns, const gl_launch *ls,
                             size_t n) {
  if (g->n != n) return false;
  size_t a = 0;
  for (size_t i = 0; i < n; i++) {
    const gl_launch *l = &ls[i];
    burst_key k;
    burst_key_of(&k, fns[i], l);
    if (memcmp(&g->keys[i], &k, sizeof k) != 0) return false;
    if (l->arg_count > g->nargs - a) return false;
    if (l->arg_count &&
        memcmp(&g->arg_sizes[a], l->arg_sizes, l->arg_count * sizeof *l->arg_sizes) != 0)
      return false;
    a += l->arg_count;
  }
  return a == g->nargs;
}

/* A kernel node's parameters for launch l of fn: the current context, the
 * arguments copied by the driver at the call. */
CUDA_KERNEL_NODE_PARAMS gl_cuda__node_params(void *fn, const gl_launch *l) {
  CUDA_KERNEL_NODE_PARAMS p;
  memset(&p, 0, sizeof p);
  p.func = (CUfunction)fn;
  p.gridDimX = l->grid[0];
  p.gridDimY = l->grid[1];
  p.gridDimZ = l->grid[2];
  p.blockDimX = l->block[0];
  p.blockDimY = l->block[1];
  p.blockDimZ = l->block[2];
  p.sharedMemBytes = l->shared_mem_bytes;
  p.kernelParams = l->args;
  p.extra = NULL;
  p.kern = NULL;
  p.ctx = NULL;
  return p;
}

/* The failure r of `call` on launch i of a burst: "launch i of the burst:
 * call('name', grid ..., ...): CUDA_ERROR_X (...)", mapped as a launch's. */
static gpulease_status burst_launch_fail(cuda_backend *c, CUresult r, size_t i, void *fn,
                                         const gl_launch *l, const char *call, char *err,
                                         size_t errlen) {
  char what[GL_WIRE_MAX_KERNEL_NAME + 320];
  int n = snprintf(what, sizeof what, "launch %zu of the burst: ", i);
  if (n < 0 || (size_t)n >= sizeof what) n = 0;
  gl_cuda__launch_desc(l, call, what + n, sizeof what - (size_t)n);
  return gl_cuda__launch_refused(c, r, (CUfunction)fn, l, what, err, errlen);
}

/* Builds the graph of a burst of a new shape into *g (empty on failure,
 * everything made freed). */
static gpulease_status burst_build(cuda_backend *c, void *const *fns, const gl_launch *ls,
                                   size_t n, burst_graph *g, char *err, size_t errlen) {
  const gl_cuda *cu = &c->cu;
  memset(g, 0, sizeof *g);
  size_t nargs = 0, nbytes = 0;
  for (size_t i = 0; i < n; i++) {
    const gl_launch *l = &ls[i];
    if (l->arg_count > SIZE_MAX - nargs) goto too_big;
    nargs += l->arg_count;
    for (size_t j = 0; j < l->arg_count; j++) {
      if (l->arg_sizes[j] > SIZE_MAX - nbytes) goto too_big;
      nbytes += l->arg_sizes[j];
    }
  }
  g->n = n;
  g->nargs = nargs;
  g->nbytes = nbytes;
  g->nodes = calloc(n, sizeof *g->nodes);
  g->keys = calloc(n, sizeof *g->keys);
  g->arg_sizes = calloc(nargs ? nargs : 1, sizeof *g->arg_sizes);
  g->arg_bytes = malloc(nbytes ? nbytes : 1);
  if (!g->nodes || !g->keys || !g->arg_sizes || !g->arg_bytes) {
    gl_cuda__burst_free(c, g, true);
    snprintf(err, errlen, "out of memory for the graph of a burst of %zu launches", n);
    return GPULEASE_INTERNAL;
  }
  size_t a = 0, off = 0;
  for (size_t i = 0; i < n; i++) {
    const gl_launch *l = &ls[i];
    burst_key_of(&g->keys[i], fns[i], l);
    for (size_t j = 0; j < l->arg_count; j++, a++) {
      g->arg_sizes[a] = l->arg_sizes[j];
      if (l->arg_sizes[j]) memcpy(g->arg_bytes + off, l->args[j], l->arg_sizes[j]);
      off += l->arg_sizes[j];
    }
  }
  CUresult r = cu->cuGraphCreate(&g->graph, 0);
  if (r != CUDA_SUCCESS) {
    g->graph = NULL;
    gl_cuda__burst_free(c, g, true);
    return gl_cuda__stream_fail(c, r, "cuGraphCreate (for a burst)", GPULEASE_LAUNCH_FAILED, err,
                                errlen);
  }
  for (size_t i = 0; i < n; i++) {
    CUDA_KERNEL_NODE_PARAMS p = gl_cuda__node_params(fns[i], &ls[i]);
    r = cu->cuGraphAddKernelNode(&g->nodes[i], g->graph, i ? &g->nodes[i - 1] : NULL, i ? 1 : 0,
                                 &p);
    if (r != CUDA_SUCCESS) {
      gl_cuda__burst_free(c, g, true); /* the graph's nodes go with it */
      return burst_launch_fail(c, r, i, fns[i], &ls[i], "cuGraphAddKernelNode", err, errlen);
    }
  }
  r = cu->cuGraphInstantiateWithFlags(&g->exec, g->graph, 0);
  if (r != CUDA_SUCCESS) {
    g->exec = NULL;
    gl_cuda__burst_free(c, g, true);
    char what[128];
    snprintf(what, sizeof what, "cuGraphInstantiateWithFlags (a burst of %zu launches)", n);
    if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) {
      gl_cuda__cu_msg(c, r, what, err, errlen);
      return GPULEASE_INVALID_ARGUMENT;
    }
    return gl_cuda__stream_fail(c, r, what, GPULEASE_LAUNCH_FAILED, err, errlen);
  }
  return GPULEASE_OK;

too_big:
  snprintf(err, errlen, "a burst of %zu launches: its arguments overflow size_t", n);
  return GPULEASE_INVALID_ARGUMENT;
}

/* A burst of g's shape: the nodes whose argument bytes differ from g's
 * copy get the new ones (the copy follows each node that was set). */
static gpulease_status burst_update(cuda_backend *c, burst_graph *g, void *const *fns,
                                    const gl_launch *ls, size_t n, char *err, size_t errlen) {
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    const gl_launch *l = &ls[i];
    size_t start = off;
    bool changed = false;
    for (size_t j = 0; j < l->arg_count; j++) {
      size_t len = l->arg_sizes[j];
      if (!changed && len && memcmp(g->arg_bytes + off, l->args[j], len) != 0) changed = true;
      off += len;
    }
    if (!changed) continue;
    CUDA_KERNEL_NODE_PARAMS p = gl_cuda__node_params(fns[i], l);
    CUresult r = c->cu.cuGraphExecKernelNodeSetParams(g->exec, g->nodes[i], &p);
    if (r != CUDA_SUCCESS)
      return burst_launch_fail(c, r, i, fns[i], l, "cuGraphExecKernelNodeSetParams", err, errlen);
    for (size_t j = 0, o = start; j < l->arg_count; j++) {
      if (l->arg_sizes[j]) memcpy(g->arg_bytes + o, l->args[j], l->arg_sizes[j]);
      o += l->arg_sizes[j];
    }
  }
  return GPULEASE_OK;
}

gpulease_status gl_cuda__burst_async(gl_backend *b, void *stream, void *const *fns,
                                     const gl_launch *ls, size_t n, bool same_as_last,
                                     char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  cuda_stream *cs = stream;
  if (n == 0) {
    snprintf(err, errlen, "a burst of 0 launches");
    return GPULEASE_INVALID_ARGUMENT;
  }
  for (size_t i = 0; i < n; i++)
    if (has_attrs(&ls[i])) {
      snprintf(err, errlen,
               "a BURST's launches are plain launches (no cooperative or cluster attributes): "
               "launch %zu of the burst ('%s') has flags 0x%02x, cluster %ux%ux%u",
               i, ls[i].kernel_name, ls[i].flags, ls[i].cluster[0], ls[i].cluster[1],
               ls[i].cluster[2]);
      return GPULEASE_UNSUPPORTED;
    }
  CUresult r = gl_cuda__make_current(c);
  if (r != CUDA_SUCCESS) {
    gl_cuda__cu_msg(c, r, "a burst: cuCtxSetCurrent", err, errlen);
    return GPULEASE_LAUNCH_FAILED;
  }
  uint_fast64_t gen = atomic_load(&c->unload_gen);
  burst_graph *g = NULL, *empty = NULL, *lru = NULL;
  if (same_as_last && cs->last_used) {
    burst_graph *e = &cs->bursts[cs->last_slot];
    if (e->exec && e->gen == gen && e->used == cs->last_used && e->n == n) {
      g = e;
      goto launch;
    }
  }
  uint64_t h = burst_hash(fns, ls, n);
  for (size_t k = 0; k < BURST_CACHE; k++) {
    burst_graph *e = &cs->bursts[k];
    /* Built before a module went: its function handles may be reused. */
    if (e->exec && e->gen != gen) gl_cuda__burst_free(c, e, true);
    if (!e->exec) {
      if (!empty) empty = e;
      continue;
    }
    if (!g && e->hash == h && burst_same_shape(e, fns, ls, n)) g = e;
    if (!lru || e->used < lru->used) lru = e;
  }
  gpulease_status st;
  if (g) {
    st = burst_update(c, g, fns, ls, n, err, errlen);
  } else {
    burst_graph fresh;
    st = burst_build(c, fns, ls, n, &fresh, err, errlen);
    if (st == GPULEASE_OK) {
      g = empty ? empty : lru; /* the cache is full when there is no empty slot */
      gl_cuda__burst_free(c, g, true);
      *g = fresh;
      g->hash = h;
      g->gen = gen;
    }
  }
  if (st != GPULEASE_OK) return st;
launch:
  g->used = ++cs->tick;
  cs->last_slot = (size_t)(g - cs->bursts);
  cs->last_used = g->used;
  r = c->cu.cuGraphLaunch(g->exec, cs->s);
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  cs->last_used = 0;
  char what[128];
  snprintf(what, sizeof what, "cuGraphLaunch (a burst of %zu launches)", n);
  if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) {
    gl_cuda__cu_msg(c, r, what, err, errlen);
    return GPULEASE_INVALID_ARGUMENT;
  }
  return gl_cuda__stream_fail(c, r, what, GPULEASE_LAUNCH_FAILED, err, errlen);
}
