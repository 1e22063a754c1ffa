/*
 * cuda_launch.c - the CUDA backend's launches: GPU_SUBMIT's synchronous
 * one (the input written, the kernel timed by two events, the output read,
 * on the submit stream) and a session's on its stream, with the launch
 * attributes (cooperative, clusters) checked first.
 *
 * Launch attributes: a launch with GL_LAUNCH_F_COOPERATIVE or cluster
 * dimensions goes through cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_
 * COOPERATIVE / _CLUSTER_DIMENSION, after checks that give a clear error
 * where the driver's is terse (attrs_check): a cooperative grid must fit
 * on the device at once (cuOccupancyMaxActiveBlocksPerMultiprocessor x the
 * SM count, read at open time), a cluster needs compute capability 9.0,
 * grid dimensions that are multiples of the cluster's, the kernel's
 * compiled cluster dimensions if it has them, and no more blocks than
 * cuOccupancyMaxPotentialClusterSize allows. The checks are best effort
 * (a query that fails leaves the verdict to the launch); the driver's own
 * COOPERATIVE_LAUNCH_TOO_LARGE and INVALID_CLUSTER_SIZE are mapped the same
 * way. A plain launch (no flags, no cluster) is a cuLaunchKernel as ever:
 * one test of the launch's flags and cluster on the way.
 */
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backend/cuda_internal.h"

/* ---- memory and launch ----------------------------------------------------- */

gpulease_status gl_cuda__write(gl_backend *b, uint64_t offset, const void *src, size_t len,
                               char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUresult r = gl_cuda__make_current(c);
  /* On the submit stream, before the kernel that reads it; from pageable
   * memory the driver stages src before returning. */
  if (r == CUDA_SUCCESS)
    r = c->cu.cuMemcpyHtoDAsync(c->region + offset, src, len, c->submit_stream);
  if (r != CUDA_SUCCESS) {
    char what[96];
    snprintf(what, sizeof what, "cuMemcpyHtoDAsync(%zu bytes at offset %" PRIu64 ")", len,
             offset);
    gl_cuda__cu_msg(c, r, what, err, errlen);
    gl_cuda__note_failure(c, r);
    return GPULEASE_WRITE_FAILED;
  }
  return GPULEASE_OK;
}

gpulease_status gl_cuda__read(gl_backend *b, uint64_t offset, void *dst, size_t len,
                              char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  CUresult r = gl_cuda__make_current(c);
  if (r == CUDA_SUCCESS)
    r = c->cu.cuMemcpyDtoHAsync(dst, c->region + offset, len, c->submit_stream);
  if (r == CUDA_SUCCESS) r = c->cu.cuStreamSynchronize(c->submit_stream);
  if (r != CUDA_SUCCESS) {
    char what[96];
    snprintf(what, sizeof what, "cuMemcpyDtoHAsync(%zu bytes at offset %" PRIu64 ")", len,
             offset);
    gl_cuda__cu_msg(c, r, what, err, errlen);
    gl_cuda__note_failure(c, r);
    return GPULEASE_READ_FAILED;
  }
  return GPULEASE_OK;
}

/* ---- launch attributes (cooperative, clusters) ------------------------------- */

static bool has_cluster(const gl_launch *l) {
  return (l->cluster[0] | l->cluster[1] | l->cluster[2]) != 0;
}

/* "CALL('name', grid XxYxZ, block XxYxZ, N bytes of shared memory[,
 * cooperative][, cluster XxYxZ])". */
void gl_cuda__launch_desc(const gl_launch *l, const char *call, char *what, size_t len) {
  char attrs[64] = "";
  if (l->flags & GL_LAUNCH_F_COOPERATIVE) snprintf(attrs, sizeof attrs, ", cooperative");
  if (has_cluster(l)) {
    size_t n = strlen(attrs);
    snprintf(attrs + n, sizeof attrs - n, ", cluster %ux%ux%u", l->cluster[0], l->cluster[1],
             l->cluster[2]);
  }
  snprintf(what, len, "%s('%s', grid %ux%ux%u, block %ux%ux%u, %u bytes of shared memory%s)",
           call, l->kernel_name, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
           l->block[2], l->shared_mem_bytes, attrs);
}

/* The launch as the error messages name it. */
void gl_cuda__launch_what(const gl_launch *l, char *what, size_t len) {
  gl_cuda__launch_desc(l, has_attrs(l) ? "cuLaunchKernelEx" : "cuLaunchKernel", what, len);
}

static uint64_t grid_blocks(const gl_launch *l) {
  return (uint64_t)l->grid[0] * l->grid[1] * l->grid[2];
}

static uint64_t block_threads(const gl_launch *l) {
  return (uint64_t)l->block[0] * l->block[1] * l->block[2];
}

/* How many blocks of the launch one SM holds at once (*per_sm), by the
 * occupancy calculator. */
static CUresult blocks_per_sm(cuda_backend *c, CUfunction f, const gl_launch *l, int *per_sm) {
  *per_sm = 0;
  uint64_t threads = block_threads(l);
  if (threads == 0 || threads > INT_MAX) return CUDA_ERROR_INVALID_VALUE;
  return c->cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, f, (int)threads,
                                                            l->shared_mem_bytes);
}

/* "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: a cooperative grid of N blocks
 * cannot be co-resident: at most M blocks (K per SM x S SMs) of T threads
 * and D bytes of dynamic shared memory". */
static void coop_msg(cuda_backend *c, const gl_launch *l, int per_sm, char *err, size_t errlen) {
  snprintf(err, errlen,
           "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: a cooperative grid of %" PRIu64
           " blocks cannot be co-resident: at most %" PRIu64 " blocks (%d per SM x %d SMs) of %"
           PRIu64 " threads and %u bytes of dynamic shared memory (kernel '%s', grid %ux%ux%u)",
           grid_blocks(l), (uint64_t)per_sm * (uint64_t)c->sm_count, per_sm, c->sm_count,
           block_threads(l), l->shared_mem_bytes, l->kernel_name, l->grid[0], l->grid[1],
           l->grid[2]);
}

/* cuLaunchKernelEx's configuration of launch l on stream, with nattrs
 * attributes. */
static void launch_config(CUlaunchConfig *cfg, const gl_launch *l, CUstream stream,
                          CUlaunchAttribute *attrs, unsigned nattrs) {
  memset(cfg, 0, sizeof *cfg);
  cfg->gridDimX = l->grid[0];
  cfg->gridDimY = l->grid[1];
  cfg->gridDimZ = l->grid[2];
  cfg->blockDimX = l->block[0];
  cfg->blockDimY = l->block[1];
  cfg->blockDimZ = l->block[2];
  cfg->sharedMemBytes = l->shared_mem_bytes;
  cfg->hStream = stream;
  cfg->attrs = attrs;
  cfg->numAttrs = nattrs;
}

/* Checks a launch with attributes before it is queued: known flags, a
 * cooperative grid that can be co-resident, a cluster the device and the
 * kernel can run. GPULEASE_OK, or the status with err written. A query
 * that fails (other than by a sticky error) leaves the verdict to the
 * launch itself. */
gpulease_status gl_cuda__attrs_check(cuda_backend *c, CUfunction f, const gl_launch *l,
                                     CUstream stream, char *err, size_t errlen) {
  const gl_cuda *cu = &c->cu;
  CUresult r;
  if (l->flags & ~GL_LAUNCH_F_COOPERATIVE) {
    snprintf(err, errlen, "kernel '%s': launch flags 0x%02x: only 0x%02x (cooperative) is known",
             l->kernel_name, l->flags, GL_LAUNCH_F_COOPERATIVE);
    return GPULEASE_INVALID_ARGUMENT;
  }
  if (has_cluster(l)) {
    const uint32_t *k = l->cluster;
    if (c->cc_major < 9) {
      snprintf(err, errlen,
               "thread-block clusters need compute capability 9.0 or newer; this GPU is %d.%d "
               "(kernel '%s', cluster %ux%ux%u)",
               c->cc_major, c->cc_minor, l->kernel_name, k[0], k[1], k[2]);
      return GPULEASE_UNSUPPORTED;
    }
    if (!k[0] || !k[1] || !k[2] || l->grid[0] % k[0] || l->grid[1] % k[1] ||
        l->grid[2] % k[2]) {
      snprintf(err, errlen,
               "CUDA_ERROR_INVALID_CLUSTER_SIZE: kernel '%s': grid %ux%ux%u is not a whole "
               "number of clusters of %ux%ux%u blocks (each cluster dimension must be at least 1 "
               "and divide the grid's)",
               l->kernel_name, l->grid[0], l->grid[1], l->grid[2], k[0], k[1], k[2]);
      return GPULEASE_INVALID_ARGUMENT;
    }
    /* Compiled cluster dimensions (.reqnctapercluster): all 0 when none. */
    int req[3] = {0, 0, 0};
    if (cu->cuFuncGetAttribute(&req[0], CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, f) ==
            CUDA_SUCCESS &&
        cu->cuFuncGetAttribute(&req[1], CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, f) ==
            CUDA_SUCCESS &&
        cu->cuFuncGetAttribute(&req[2], CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, f) ==
            CUDA_SUCCESS &&
        req[0] > 0 &&
        ((uint32_t)req[0] != k[0] || (uint32_t)req[1] != k[1] || (uint32_t)req[2] != k[2])) {
      snprintf(err, errlen,
               "CUDA_ERROR_INVALID_CLUSTER_SIZE: kernel '%s' was compiled for clusters of "
               "%dx%dx%d blocks (.reqnctapercluster); the launch gives %ux%ux%u",
               l->kernel_name, req[0], req[1], req[2], k[0], k[1], k[2]);
      return GPULEASE_INVALID_ARGUMENT;
    }
    /* The configuration without the cluster attribute: with it, a cluster
     * above the limit makes the query itself fail with
     * CUDA_ERROR_INVALID_CLUSTER_SIZE instead of telling the limit (H100,
     * driver 580); the compiled dimensions were checked above. */
    CUlaunchConfig cfg;
    launch_config(&cfg, l, stream, NULL, 0);
    int max = 0;
    r = cu->cuOccupancyMaxPotentialClusterSize(&max, f, &cfg);
    if (r != CUDA_SUCCESS && gl_cuda__is_sticky(r))
      return gl_cuda__stream_fail(c, r, "cuOccupancyMaxPotentialClusterSize",
                                  GPULEASE_LAUNCH_FAILED, err, errlen);
    uint64_t blocks = (uint64_t)k[0] * k[1] * k[2];
    if (r == CUDA_SUCCESS && max > 0 && blocks > (uint64_t)max) {
      snprintf(err, errlen,
               "CUDA_ERROR_INVALID_CLUSTER_SIZE: a cluster of %" PRIu64 " blocks (%ux%ux%u) "
               "exceeds the %d this kernel can run (cuOccupancyMaxPotentialClusterSize for "
               "kernel '%s' with %" PRIu64 " threads and %u bytes of dynamic shared memory a "
               "block%s)",
               blocks, k[0], k[1], k[2], max, l->kernel_name, block_threads(l),
               l->shared_mem_bytes,
               max == 8 ? "; more than 8 is a non-portable cluster size, not enabled here" : "");
      return GPULEASE_INVALID_ARGUMENT;
    }
  }
  if (l->flags & GL_LAUNCH_F_COOPERATIVE) {
    if (!c->coop_launch) {
      snprintf(err, errlen,
               "cooperative launches are not supported by this GPU (%s: "
               "CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH is 0; kernel '%s')",
               c->name, l->kernel_name);
      return GPULEASE_UNSUPPORTED;
    }
    int per_sm = 0;
    r = blocks_per_sm(c, f, l, &per_sm);
    if (r != CUDA_SUCCESS && gl_cuda__is_sticky(r))
      return gl_cuda__stream_fail(c, r, "cuOccupancyMaxActiveBlocksPerMultiprocessor",
                                  GPULEASE_LAUNCH_FAILED, err, errlen);
    /* 0 per SM: the block itself cannot run (too many threads, too much
     * shared memory): the launch says which. */
    if (r == CUDA_SUCCESS && per_sm > 0 && c->sm_count > 0 &&
        grid_blocks(l) > (uint64_t)per_sm * (uint64_t)c->sm_count) {
      coop_msg(c, l, per_sm, err, errlen);
      return GPULEASE_INVALID_ARGUMENT;
    }
  }
  return GPULEASE_OK;
}

/* Queues a launch with its attributes (cuLaunchKernelEx). */
CUresult gl_cuda__launch_ex(cuda_backend *c, CUfunction f, const gl_launch *l, CUstream stream) {
  CUlaunchAttribute attrs[2];
  memset(attrs, 0, sizeof attrs);
  unsigned n = 0;
  if (l->flags & GL_LAUNCH_F_COOPERATIVE) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[n].value.cooperative = 1;
    n++;
  }
  if (has_cluster(l)) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = l->cluster[0];
    attrs[n].value.clusterDim.y = l->cluster[1];
    attrs[n].value.clusterDim.z = l->cluster[2];
    n++;
  }
  CUlaunchConfig cfg;
  launch_config(&cfg, l, stream, attrs, n);
  return c->cu.cuLaunchKernelEx(&cfg, f, l->args, NULL);
}

/* The driver's refusal of a cooperative or cluster launch (r is
 * CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE or CUDA_ERROR_INVALID_CLUSTER_SIZE):
 * INVALID_ARGUMENT, the message led by the error's name; a cooperative
 * grid's message names the most blocks that fit where the occupancy
 * calculator tells. */
static gpulease_status attrs_refused(cuda_backend *c, CUresult r, CUfunction f,
                                     const gl_launch *l, const char *what, char *err,
                                     size_t errlen) {
  char name[64];
  gl_cuda_error_name(&c->cu, r, name, sizeof name);
  snprintf(err, errlen, "%s: %s: %s", name, what, gl_cuda_error_string(&c->cu, r));
  int per_sm = 0;
  if (r == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE && c->sm_count > 0 &&
      blocks_per_sm(c, f, l, &per_sm) == CUDA_SUCCESS) {
    size_t n = strlen(err);
    if (n < errlen)
      snprintf(err + n, errlen - n,
               "; at most %" PRIu64 " blocks (%d per SM x %d SMs) of %" PRIu64 " threads and %u "
               "bytes of dynamic shared memory fit by the occupancy calculator, fewer in "
               "clusters",
               (uint64_t)per_sm * (uint64_t)c->sm_count, per_sm, c->sm_count, block_threads(l),
               l->shared_mem_bytes);
  }
  return GPULEASE_INVALID_ARGUMENT;
}

static bool is_attrs_refusal(CUresult r) {
  return r == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE || r == CUDA_ERROR_INVALID_CLUSTER_SIZE;
}

/* GPU_SUBMIT: on the submit stream, events around the kernel (its device
 * time), then the output's copy; one wait. A pageable output larger than
 * the staging buffer is copied after the wait instead, so that a fault of
 * the kernel is reported as the kernel's. */
gpulease_status gl_cuda__launch_read(gl_backend *b, void *fn, const gl_launch *l,
                                     uint64_t *gpu_time_ns, uint64_t out_offset, void *out,
                                     size_t out_len, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  const gl_cuda *cu = &c->cu;
  char what[GL_WIRE_MAX_KERNEL_NAME + 256];
  CUstream stream = c->submit_stream;
  CUresult r = gl_cuda__make_current(c);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuCtxSetCurrent");
    gl_cuda__cu_msg(c, r, what, err, errlen);
    return GPULEASE_LAUNCH_FAILED;
  }
  bool attrs = has_attrs(l);
  if (attrs) {
    gpulease_status st = gl_cuda__attrs_check(c, (CUfunction)fn, l, stream, err, errlen);
    if (st != GPULEASE_OK) return st;
  }
  bool staged = out_len > 0 && out_len <= SUBMIT_STAGING_BYTES && c->staging_pinned;
  /* The events and the staging buffer are the backend's: one synchronous
   * launch at a time. */
  pthread_mutex_lock(&c->launch_mu);
  r = cu->cuEventRecord(c->ev_start, stream);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuEventRecord");
    goto fail;
  }
  if (attrs)
    r = gl_cuda__launch_ex(c, (CUfunction)fn, l, stream);
  else
    r = cu->cuLaunchKernel((CUfunction)fn, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                           l->block[1], l->block[2], l->shared_mem_bytes, stream, l->args, NULL);
  if (r != CUDA_SUCCESS) {
    gl_cuda__launch_what(l, what, sizeof what);
    if (is_attrs_refusal(r)) {
      pthread_mutex_unlock(&c->launch_mu);
      return attrs_refused(c, r, (CUfunction)fn, l, what, err, errlen);
    }
    goto fail;
  }
  r = cu->cuEventRecord(c->ev_stop, stream);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuEventRecord");
    goto fail;
  }
  CUresult copy = CUDA_SUCCESS;
  if (staged) copy = cu->cuMemcpyDtoHAsync(c->staging, c->region + out_offset, out_len, stream);
  r = cu->cuStreamSynchronize(stream);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "kernel '%s' failed", l->kernel_name);
    goto fail;
  }
  float ms = 0.0f;
  r = cu->cuEventElapsedTime(&ms, c->ev_start, c->ev_stop);
  if (r != CUDA_SUCCESS) {
    snprintf(what, sizeof what, "cuEventElapsedTime");
    goto fail;
  }
  *gpu_time_ns = ms > 0.0f ? (uint64_t)((double)ms * 1e6) : 0;
  if (staged && copy == CUDA_SUCCESS) memcpy(out, c->staging, out_len);
  pthread_mutex_unlock(&c->launch_mu);
  if (out_len > 0 && (!staged || copy != CUDA_SUCCESS))
    return b->ops->read(b, out_offset, out, out_len, err, errlen);
  return GPULEASE_OK;

fail:
  pthread_mutex_unlock(&c->launch_mu);
  gl_cuda__cu_msg(c, r, what, err, errlen);
  gl_cuda__note_failure(c, r);
  gl_cuda__lost_note(c, err, errlen);
  return GPULEASE_LAUNCH_FAILED;
}

gpulease_status gl_cuda__launch(gl_backend *b, void *fn, const gl_launch *l,
                                uint64_t *gpu_time_ns, char *err, size_t errlen) {
  return gl_cuda__launch_read(b, fn, l, gpu_time_ns, 0, NULL, 0, err, errlen);
}

/* ---- sessions: launches on a stream ------------------------------------------ */

/* A failed queueing of a launch (r, from `what`): the launch
 * configuration's fault (INVALID_ARGUMENT: nothing ran; cooperative and
 * cluster refusals lead with the CUDA error's name), else the stream's
 * (gl_cuda__stream_fail). */
gpulease_status gl_cuda__launch_refused(cuda_backend *c, CUresult r, CUfunction f,
                                        const gl_launch *l, const char *what, char *err,
                                        size_t errlen) {
  if (is_attrs_refusal(r)) return attrs_refused(c, r, f, l, what, err, errlen);
  if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) {
    gl_cuda__cu_msg(c, r, what, err, errlen);
    return GPULEASE_INVALID_ARGUMENT;
  }
  return gl_cuda__stream_fail(c, r, what, GPULEASE_LAUNCH_FAILED, err, errlen);
}

/* A launch with attributes, out of the common path. */
static gpulease_status launch_attrs_async(cuda_backend *c, CUstream stream, CUfunction f,
                                          const gl_launch *l, char *err, size_t errlen) {
  gpulease_status st = gl_cuda__attrs_check(c, f, l, stream, err, errlen);
  if (st != GPULEASE_OK) return st;
  CUresult r = gl_cuda__launch_ex(c, f, l, stream);
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  char what[GL_WIRE_MAX_KERNEL_NAME + 256];
  gl_cuda__launch_what(l, what, sizeof what);
  return gl_cuda__launch_refused(c, r, f, l, what, err, errlen);
}

gpulease_status gl_cuda__launch_async(gl_backend *b, void *stream, void *fn,
                                      const gl_launch *l, char *err, size_t errlen) {
  cuda_backend *c = as_cuda(b);
  char what[GL_WIRE_MAX_KERNEL_NAME + 256];
  CUresult r = gl_cuda__make_current(c);
  if (r != CUDA_SUCCESS) {
    gl_cuda__cu_msg(c, r, "cuLaunchKernel: cuCtxSetCurrent", err, errlen);
    return GPULEASE_LAUNCH_FAILED;
  }
  if (has_attrs(l)) return launch_attrs_async(c, cstream(stream), (CUfunction)fn, l, err, errlen);
  r = c->cu.cuLaunchKernel((CUfunction)fn, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                           l->block[1], l->block[2], l->shared_mem_bytes, cstream(stream),
                           l->args, NULL);
  if (r == CUDA_SUCCESS) return GPULEASE_OK;
  gl_cuda__launch_what(l, what, sizeof what);
  /* The launch configuration (dimensions, shared memory, registers for
   * that many threads) is the caller's to fix; nothing ran. */
  return gl_cuda__launch_refused(c, r, (CUfunction)fn, l, what, err, errlen);
}
