/*
 * backend.h - what a worker needs from a device: the backend interface.
 *
 * worker.c does framing, validation and dispatch; everything that touches a
 * device goes through a gl_backend, a table of operations in the style of a
 * driver vtable. backend_cuda.c implements it on the CUDA driver API,
 * backend_emu.c on the emulated device (PTX run on the CPU, src/emu/), and
 * the unit tests use a fake one.
 *
 * Conventions for every operation:
 *   - Returns a gpulease_status: GPULEASE_OK, or the wire status the worker
 *     replies with, having written a human-readable reason into err (which
 *     names the device error, e.g. "CUDA_ERROR_ILLEGAL_ADDRESS").
 *   - Offsets are bytes from the start of the lease's region and have been
 *     range-checked by the worker (src/worker/submit_check.h).
 *   - Operations other than probe, init, open_shared and destroy are called
 *     only after a successful init or open_shared.
 *
 * Shared leases: several leases in one worker process and one context,
 * each with its own range of VRAM. The worker opens the device with
 * open_shared, reserves a range per lease with region_add, and gives each
 * lease a view (backend_view.h) that adds the range's start to every
 * offset, so a lease's code sees its own range as its region.
 */
#ifndef GL_WORKER_BACKEND_H
#define GL_WORKER_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpulease/gpulease.h"
#include "proto/wire.h"

typedef struct gl_backend gl_backend;

/* One kernel launch. args follows cuLaunchKernel's convention: args[i]
 * points at the bytes of parameter i, arg_sizes[i] of them. The driver
 * reads as many parameters, of the sizes, that the compiled kernel
 * declares, whatever the client sent; so the worker guarantees that
 * args[i] is a valid pointer for every i < GL_BACKEND_ARG_SLOTS and that
 * each is readable for GL_BACKEND_ARG_READABLE bytes (the worker's own
 * argument area: later arguments, then zeros). A mismatched parameter list
 * therefore gives the kernel wrong values, never the worker a crash or a
 * read of foreign memory (and backends that know the kernel's parameter
 * sizes let the worker refuse it first: param_sizes below). */
typedef struct gl_launch {
  const char *kernel_name; /* NUL-terminated, for messages */
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_mem_bytes;
  void **args;
  const size_t *arg_sizes;
  size_t arg_count;
  uint8_t flags;       /* GL_LAUNCH_F_* */
  uint32_t cluster[3]; /* thread-block cluster dimensions in blocks; 0,0,0: none given */
} gl_launch;

/* gl_launch.flags. */
#define GL_LAUNCH_F_COOPERATIVE 0x01u /* every block co-resident; grid-wide sync works */

/* A cooperative launch (cuLaunchKernelEx, CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
 * whose grid cannot be co-resident is INVALID_ARGUMENT, the message
 * starting "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: " and naming the most
 * blocks that fit (occupancy per SM x SMs). A cluster launch
 * (CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) on a device below compute
 * capability 9.0 is UNSUPPORTED; a cluster the kernel cannot run in (a grid
 * dimension not a multiple of the cluster's, more blocks than
 * cuOccupancyMaxPotentialClusterSize allows, dimensions other than the
 * kernel's compiled .reqnctapercluster) is INVALID_ARGUMENT, the message
 * starting "CUDA_ERROR_INVALID_CLUSTER_SIZE: ". launch, launch_read,
 * launch_async and burst_async all take these attributes. */

#define GL_BACKEND_ARG_READABLE 32768 /* CUDA 12.1+ kernel parameter limit */
#define GL_BACKEND_ARG_SLOTS 32768    /* one-byte parameters filling it */

/* One op of a graph's recipe (graph_build). */
typedef enum gl_graph_op_kind {
  GL_GRAPH_KERNEL = 1, /* fn with launch (args: exactly the kernel's parameters) */
  GL_GRAPH_MEMSET = 2, /* memset_async's fields */
  GL_GRAPH_COPY = 3,   /* copy_async's fields */
} gl_graph_op_kind;

typedef struct gl_graph_op {
  gl_graph_op_kind kind;
  void *fn;
  gl_launch launch;
  uint64_t offset;       /* MEMSET: region offset; COPY: destination */
  uint64_t src_offset;   /* COPY */
  uint64_t count;        /* MEMSET: elements; COPY: bytes */
  unsigned element_size; /* MEMSET: 1, 2, 4 */
  uint32_t value;        /* MEMSET */
} gl_graph_op;

/* graph_build's while_flag when the graph is not a loop. */
#define GL_GRAPH_NO_LOOP UINT64_MAX

typedef struct gl_backend_ops {
  const char *name; /* "cuda", "emulated" */

  /* Lists the devices. May be called before or without init. NO_DEVICE
   * when the device layer is unavailable (driver missing), with the
   * reason. */
  gpulease_status (*probe)(gl_backend *b, gl_probe_resp *out, char *err, size_t errlen);

  /* Optional (NULL: nothing to do ahead): opens device `ordinal` ahead of
   * a lease, everything but the region (cuInit, the context), so that a
   * later init only reserves. WORKER_WARM. */
  gpulease_status (*warm)(gl_backend *b, uint32_t ordinal, char *err, size_t errlen);

  /* Opens device `ordinal` (unless warm did), reserves a region of vram_bytes, zeroes it.
   * *region_base receives the region's device address, device_name the
   * device's name. Called at most once. */
  gpulease_status (*init)(gl_backend *b, uint32_t ordinal, uint64_t vram_bytes,
                          uint64_t *region_base, char *device_name, size_t name_len, char *err,
                          size_t errlen);

  /* Optional (NULL: no shared contexts). Opens device `ordinal` (unless
   * warm did) for SHARED leases: the context but no region; region_add
   * then reserves one range per lease. *region_base receives the device
   * address that the offsets of every op (region_add's included) count
   * from; device_name the device's name. Called at most once, instead of
   * init. NO_DEVICE, INTERNAL (with the CUDA error). */
  gpulease_status (*open_shared)(gl_backend *b, uint32_t ordinal, uint64_t *region_base,
                                 char *device_name, size_t name_len, char *err, size_t errlen);

  /* After open_shared: reserves `bytes` (> 0) of VRAM for one lease and
   * zeroes it (CUDA: cuMemAlloc, cuMemsetD8). *offset receives the range's
   * start, relative to region_base and a multiple of 256. CAPACITY_EXCEEDED
   * when it does not fit (naming the CUDA error, or the emulated device's
   * free bytes); INVALID_ARGUMENT for 0 bytes; INTERNAL. */
  gpulease_status (*region_add)(gl_backend *b, uint64_t bytes, uint64_t *offset, char *err,
                                size_t errlen);

  /* Gives back a range region_add returned (CUDA: cuMemFree). The caller
   * has stopped every stream that used it. destroy gives back the ranges
   * still reserved. */
  void (*region_remove)(gl_backend *b, uint64_t offset);

  /* Optional (NULL: a worker is never reused). After init, once every
   * module is unloaded and every stream destroyed, with the context not
   * lost: frees the region (cuMemFree) and sets the stack back to its
   * small start, leaving the device open as warm does, so that init may
   * run again for the next lease of the same worker process. INTERNAL
   * when that cannot be done (the worker is then not reused). */
  gpulease_status (*reset)(gl_backend *b, char *err, size_t errlen);

  /* Optional (NULL: nothing to set). After init or open_shared, before any
   * launch: the context's printf FIFO and device malloc heap, in bytes
   * (cuCtxSetLimit CU_LIMIT_PRINTF_FIFO_SIZE, CU_LIMIT_MALLOC_HEAP_SIZE);
   * 0 leaves that limit as it is. INVALID_ARGUMENT with the CUDA error when
   * the driver refuses a value. */
  gpulease_status (*set_limits)(gl_backend *b, uint64_t printf_fifo_bytes,
                                uint64_t malloc_heap_bytes, char *err, size_t errlen);

  /* Loads a module. image has len bytes and a NUL byte at image[len] (PTX
   * needs it); it is only borrowed for the call. *module receives an opaque
   * handle for get_function and unload_module. LOAD_FAILED with the
   * compiler's log on failure. */
  gpulease_status (*load_module)(gl_backend *b, const uint8_t *image, size_t len,
                                 gpulease_image_format format, void **module, char *err,
                                 size_t errlen);
  void (*unload_module)(gl_backend *b, void *module);

  /* Finds kernel `name` (NUL-terminated) in module. LAUNCH_FAILED when it
   * is not there. */
  gpulease_status (*get_function)(gl_backend *b, void *module, const char *name, void **fn,
                                  char *err, size_t errlen);

  /* Optional (may be NULL): the sizes in bytes of fn's parameters, as the
   * compiled kernel declares them, so the worker can refuse a mismatched
   * parameter list. Writes at most max sizes and *count = the number of
   * parameters. UNSUPPORTED when the device layer cannot tell. */
  gpulease_status (*param_sizes)(gl_backend *b, void *fn, size_t *sizes, size_t max,
                                 size_t *count, char *err, size_t errlen);

  /* Copies len bytes from host src to region offset. WRITE_FAILED. */
  gpulease_status (*write)(gl_backend *b, uint64_t offset, const void *src, size_t len,
                           char *err, size_t errlen);

  /* Runs fn and waits for it; *gpu_time_ns receives the kernel's device
   * time. LAUNCH_FAILED (with the device error name). */
  gpulease_status (*launch)(gl_backend *b, void *fn, const gl_launch *launch,
                            uint64_t *gpu_time_ns, char *err, size_t errlen);

  /* Copies len bytes from region offset to host dst. READ_FAILED. */
  gpulease_status (*read)(gl_backend *b, uint64_t offset, void *dst, size_t len, char *err,
                          size_t errlen);

  /* Optional (NULL: launch, then read): launch as above, then copy out_len
   * bytes (may be 0) from region out_offset to host out, with one wait for
   * both (GPU_SUBMIT's output). The statuses of launch, then read. */
  gpulease_status (*launch_read)(gl_backend *b, void *fn, const gl_launch *launch,
                                 uint64_t *gpu_time_ns, uint64_t out_offset, void *out,
                                 size_t out_len, char *err, size_t errlen);

  /* True once a device error has made the context unusable (a kernel
   * faulted: every later call would fail too). The worker then replies and
   * exits with GL_WORKER_EXIT_CONTEXT_LOST. */
  bool (*context_lost)(gl_backend *b);

  /* Releases everything (modules must have been unloaded first). */
  void (*destroy)(gl_backend *b);

  /* ---- sessions (docs/protocol.md "Sessions") ----------------------------
   * A session's work goes to a stream: an in-order queue on the device
   * (cuStreamCreate with CU_STREAM_NON_BLOCKING). Each session's ops are
   * called from that session's own thread of the worker, so these must be
   * safe to call concurrently for different streams (the lease's context
   * is made current on the calling thread by the backend). load_module,
   * unload_module, get_function, param_sizes and func_info may also be
   * called from several threads at once. Offsets are bytes from the
   * region's start, checked by the worker against the session's buffers.
   * An error that surfaces asynchronously (a kernel fault) is reported by
   * the next call on the stream that waits, and by stream_sync, and makes
   * context_lost() true when it is sticky. */

  /* Creates a stream. INTERNAL on failure. */
  gpulease_status (*stream_create)(gl_backend *b, void **stream, char *err, size_t errlen);
  /* Waits for the stream's work, then destroys it (never fails). */
  void (*stream_destroy)(gl_backend *b, void *stream);

  /* True when launch_async runs the kernel before returning (the emulated
   * device): the worker then answers LAUNCH ("queued") before calling it. */
  bool launch_runs_inline;

  /* Queues a launch of fn on stream (cuLaunchKernel); returns once queued.
   * Errors at enqueue: INVALID_ARGUMENT (launch configuration:
   * CUDA_ERROR_INVALID_VALUE ...), LAUNCH_FAILED. A backend with
   * launch_runs_inline returns the kernel's own result. */
  gpulease_status (*launch_async)(gl_backend *b, void *stream, void *fn, const gl_launch *launch,
                                  char *err, size_t errlen);

  /* Copies len bytes of host src to region offset, in stream order; src may
   * be reused when it returns (cuMemcpyHtoDAsync from pageable memory is
   * staged). WRITE_FAILED, or an earlier asynchronous error. */
  gpulease_status (*write_async)(gl_backend *b, void *stream, uint64_t offset, const void *src,
                                 size_t len, char *err, size_t errlen);

  /* Waits for the stream's earlier work, then copies len bytes from region
   * offset to host dst. READ_FAILED, or an earlier asynchronous error. */
  gpulease_status (*read_sync)(gl_backend *b, void *stream, uint64_t offset, void *dst,
                               size_t len, char *err, size_t errlen);

  /* Device-to-device copy of len bytes within the region, queued
   * (cuMemcpyDtoDAsync); ranges may overlap only if equal. WRITE_FAILED. */
  gpulease_status (*copy_async)(gl_backend *b, void *stream, uint64_t dst_offset,
                                uint64_t src_offset, size_t len, char *err, size_t errlen);

  /* Sets count elements of element_size (1, 2, 4) bytes at offset to value,
   * queued (cuMemsetD8/D16/D32Async; offset is element-aligned).
   * WRITE_FAILED. */
  gpulease_status (*memset_async)(gl_backend *b, void *stream, uint64_t offset,
                                  unsigned element_size, uint32_t value, size_t count,
                                  char *err, size_t errlen);

  /* Optional (NULL: the worker queues each launch with launch_async).
   * Queues n >= 1 launches on stream, run back to back in order (BURST):
   * fns[i] with launches[i]. launches[i].args holds exactly the kernel's
   * parameters (the worker has checked their count and sizes) and is only
   * borrowed for the call. CUDA: one CUDA graph of n kernel nodes in a
   * chain, instantiated once per shape (functions, dimensions, shared
   * memory, parameter sizes) and kept with the stream; a burst of a known
   * shape with other argument values updates only the nodes whose values
   * changed (cuGraphExecKernelNodeSetParams) and relaunches
   * (cuGraphLaunch). same_as_last: the worker knows these are exactly
   * the launches (functions, dimensions, argument values) of the last
   * burst_async on this stream, which succeeded; the backend may relaunch
   * what it ran then without comparing. Errors as launch_async, naming the
   * launch's index. */
  gpulease_status (*burst_async)(gl_backend *b, void *stream, void *const *fns,
                                 const gl_launch *launches, size_t n, bool same_as_last,
                                 char *err, size_t errlen);

  /* Events (docs/protocol.md EVENT_RECORD): record_event marks the point
   * the stream's work has reached (cuEventRecord), creating the event
   * first when *event is NULL (cuEventCreate); event_elapsed waits for end
   * (cuEventSynchronize) and gives the time between the two points in
   * nanoseconds (cuEventElapsedTime, about 0.5 us resolution);
   * event_destroy frees one (cuEventDestroy). INTERNAL, or a failed
   * stream's LAUNCH_FAILED. The emulated device, which runs each op when
   * it is queued, stamps the host's monotonic clock. */
  gpulease_status (*event_record)(gl_backend *b, void *stream, void **event, char *err,
                                  size_t errlen);
  gpulease_status (*event_elapsed)(gl_backend *b, void *start, void *end, uint64_t *ns,
                                   char *err, size_t errlen);
  void (*event_destroy)(gl_backend *b, void *event);

  /* ---- graphs (docs/protocol.md GRAPH_BEGIN .. GRAPH_DESTROY) ---------
   * The worker records a session's ops between GRAPH_BEGIN and GRAPH_END
   * as a list of gl_graph_op (the graph's "recipe", in stream order) and
   * hands it to graph_build, which makes an executable graph of it. All
   * four are optional together: a backend without them (the emulated
   * device) has its recipe replayed by the worker through the stream ops
   * above, with the same results. */

  /* Builds and instantiates a graph of the n >= 1 ops, in order, by
   * stream capture (CUDA: cuStreamBeginCapture in thread-local mode on a
   * stream of its own, the ops issued as the *_async ops issue them,
   * cuStreamEndCapture, cuGraphInstantiateWithFlags). The graph's kernel
   * nodes are numbered 0, 1, ... in the order of the GL_GRAPH_KERNEL ops
   * (graph_set_args names them so). With while_flag != GL_GRAPH_NO_LOOP
   * the ops are the body of a WHILE conditional node (CUDA 12.4+:
   * cuGraphConditionalHandleCreate with default value 1, the body
   * captured into the node's body graph) that runs the body, then reads
   * the u32 at region offset while_flag and runs it again while that is
   * not 0 (do-while). ops[i].launch.args are only borrowed. *graph
   * receives an opaque handle. Errors: UNSUPPORTED (a WHILE loop on a
   * driver without conditional nodes), INVALID_ARGUMENT, LAUNCH_FAILED or
   * INTERNAL naming the CUDA error and the op's index. */
  gpulease_status (*graph_build)(gl_backend *b, const struct gl_graph_op *ops, size_t n,
                                 uint64_t while_flag, void **graph, char *err, size_t errlen);
  /* Replays the graph on stream (cuGraphLaunch); returns once queued. */
  gpulease_status (*graph_launch)(gl_backend *b, void *stream, void *graph, char *err,
                                  size_t errlen);
  /* Replaces kernel node `node`'s parameter values with l->args (same
   * function, dimensions and parameter sizes as built; the worker has
   * checked them) for later replays (cuGraphExecKernelNodeSetParams). */
  gpulease_status (*graph_set_args)(gl_backend *b, void *graph, uint32_t node,
                                    const gl_launch *l, char *err, size_t errlen);
  /* Frees the graph (cuGraphExecDestroy, cuGraphDestroy); the caller has
   * waited for its replays. */
  void (*graph_destroy)(gl_backend *b, void *graph);

  /* Waits for all of the stream's work (cuStreamSynchronize). The first
   * asynchronous error (LAUNCH_FAILED naming the CUDA error). */
  gpulease_status (*stream_sync)(gl_backend *b, void *stream, char *err, size_t errlen);

  /* A kernel's attributes (cuFuncGetAttribute); param sizes are left to
   * param_sizes. */
  gpulease_status (*func_info)(gl_backend *b, void *fn, gl_func_info_resp *out, char *err,
                               size_t errlen);

  /* Optional (NULL: kernels' local memory is not charged). How the device
   * holds kernels' local memory (docs/security.md, "Device memory outside
   * the region"): the context sets aside, at a launch, the kernel's
   * per-thread local size (CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES) past
   * *free_per_thread for each of *threads threads, and keeps the most it
   * has set aside until the context ends. CUDA: *threads is the SMs times
   * the resident threads per SM, *free_per_thread the stack size limit
   * (CU_LIMIT_STACK_SIZE, which the context holds from its start); as
   * measured on an H200 with driver 580. The emulated device: its host
   * threads times the largest block, 1024 bytes free, in host memory.
   * INTERNAL when the device cannot tell. */
  gpulease_status (*local_memory)(gl_backend *b, uint64_t *threads, uint32_t *free_per_thread,
                                  char *err, size_t errlen);

  /* Optional (may be NULL): compiles PTX text (len bytes plus a NUL at
   * ptx[len]) for this device into a loadable binary (cuLinkCreate /
   * cuLinkAddData / cuLinkComplete: a cubin), for the worker's disk JIT
   * cache. *bin is malloc'd (caller frees). LOAD_FAILED with the log. */
  gpulease_status (*compile_ptx)(gl_backend *b, const uint8_t *ptx, size_t len, uint8_t **bin,
                                 size_t *bin_len, char *err, size_t errlen);

  /* Page-locks len bytes of host memory at p (a shared memory segment) so
   * copies from and to it run at the device's full speed
   * (cuMemHostRegister), and undoes it. INTERNAL with the reason. Both may
   * be NULL: nothing to lock. */
  gpulease_status (*host_register)(gl_backend *b, void *p, size_t len, char *err, size_t errlen);
  void (*host_unregister)(gl_backend *b, void *p);

  /* Optional (NULL: UNSUPPORTED). Encodes a tiled tensor map
   * (cuTensorMapEncodeTiled) of the tensor at region offset `offset` (the
   * backend adds the region's device address) into out, GL_TMAP_BYTES
   * bytes, with t's fields as cuTensorMapEncodeTiled's arguments (t->s,
   * t->buffer and t->offset are not read: the worker has resolved them to
   * `offset` and checked the tensor's extent against the buffer). Touches
   * no memory and no stream. INVALID_ARGUMENT with the encoder's reason
   * (naming the CUDA error); UNSUPPORTED when the device cannot (a driver
   * without cuTensorMapEncodeTiled, the emulated device's interleaved
   * layouts). */
  gpulease_status (*tensormap_encode)(gl_backend *b, uint64_t offset, const gl_tmap_req *t,
                                      uint8_t out[GL_TMAP_BYTES], char *err, size_t errlen);

  /* Writes a short string naming what a compiled binary depends on (device
   * kind, compute capability, driver version), e.g. "cuda-sm90-drv13000",
   * for the disk cache's keys. */
  void (*cache_tag)(gl_backend *b, char *buf, size_t len);
} gl_backend_ops;

struct gl_backend {
  const gl_backend_ops *ops;
};

/* The CUDA driver backend (backend_cuda.c). The driver is loaded lazily by
 * probe or init, so creating it never fails for lack of a GPU. NULL only
 * when out of memory. */
gl_backend *gl_backend_cuda_new(void);

#endif /* GL_WORKER_BACKEND_H */
