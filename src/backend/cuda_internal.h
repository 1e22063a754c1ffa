/*
 * cuda_internal.h - what the CUDA backend's files share: the backend's
 * state (cuda_backend), a session stream's (cuda_stream, with its BURST
 * graphs), the helpers every op calls (the lease's context made current,
 * CUDA errors into messages, sticky faults) and the ops each file gives the
 * table in backend_cuda.c. Internal names use the prefix gl_cuda__;
 * nothing here is a public API (backend.h is). Internal to src/backend.
 */
#ifndef GL_BACKEND_CUDA_INTERNAL_H
#define GL_BACKEND_CUDA_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/cuda_api.h"
#include "backend/backend.h"

typedef struct cuda_backend {
  gl_backend base;
  gl_cuda cu;
  bool loaded;      /* cu is filled */
  bool initialised; /* cuInit succeeded */
  bool have_device; /* init succeeded */
  atomic_bool lost;  /* a sticky error: the context is unusable */
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr region;
  uint64_t region_bytes;
  int cc_major, cc_minor;
  int sm_count;    /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT; 0: unknown */
  int coop_launch; /* CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH */
  int threads_per_sm; /* CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR; 0: unknown */
  size_t start_stack; /* the stack a thread has from the context's start (set_start_stack) */
  /* Bumped by every unload_module: a BURST graph built before refers to
   * function handles that the driver may hand out again. */
  atomic_uint_fast64_t unload_gen;
  pthread_mutex_t launch_mu; /* the synchronous launch and its events */
  CUevent ev_start, ev_stop;
  /* GPU_SUBMIT's own stream (input, kernel, output in order, apart from
   * the sessions' streams), and pinned memory for a small output: the
   * kernel and the copy back are waited for together. */
  CUstream submit_stream;
  uint8_t *staging;
  bool staging_pinned;
  /* The device opened (WORKER_WARM, or the first part of init). */
  bool opened;
  uint32_t opened_ordinal;
  char name[96];
  size_t total;
  /* Shared leases: open_shared was called; the ranges region_add reserved. */
  bool shared;
  pthread_mutex_t ranges_mu; /* ranges */
  CUdeviceptr *ranges;
  size_t nranges, cap_ranges;
  /* Graph WHILE loops' condition kernel (while_cond_cubins.c), loaded at
   * the first loop graph; NULL until then. */
  pthread_mutex_t cond_mu; /* cond_mod, cond_fn */
  CUmodule cond_mod;
  CUfunction cond_fn;
} cuda_backend;

/* Outputs up to this size come back through the pinned staging buffer. */
#define SUBMIT_STAGING_BYTES (64u << 10)

static inline cuda_backend *as_cuda(gl_backend *b) { return (cuda_backend *)b; }

static inline bool is_lost(cuda_backend *c) { return atomic_load(&c->lost); }

/* True when the launch needs cuLaunchKernelEx. */
static inline bool has_attrs(const gl_launch *l) {
  return (l->flags | l->cluster[0] | l->cluster[1] | l->cluster[2]) != 0;
}

/* ---- session streams and their BURST graphs (cuda_stream.c, cuda_burst.c) ---- */

/* One BURST shape's graph (see cuda_burst.c). exec NULL: an empty slot. */
typedef struct burst_key { /* one launch's shape; no padding, compared with memcmp */
  CUfunction fn;
  uint32_t grid[3], block[3];
  uint32_t shared_mem_bytes;
  uint32_t flags;
  uint32_t cluster[3];
  uint32_t zero;
  uint64_t arg_count;
} burst_key;
_Static_assert(sizeof(burst_key) == sizeof(CUfunction) + 12 * sizeof(uint32_t) + sizeof(uint64_t),
               "burst_key has padding");

typedef struct burst_graph {
  CUgraphExec exec;
  CUgraph graph;
  CUgraphNode *nodes;  /* n, node i is launch i */
  burst_key *keys;     /* n */
  size_t n;
  size_t *arg_sizes;   /* every launch's argument sizes, in order */
  size_t nargs;
  uint8_t *arg_bytes;  /* every launch's argument bytes, in order, as last set */
  size_t nbytes;
  uint64_t hash;
  uint_fast64_t gen;   /* unload_gen when built */
  uint64_t used;       /* the stream's tick at its last use */
} burst_graph;

#define BURST_CACHE 8

/* What the backend's stream handles point at. */
typedef struct cuda_stream {
  CUstream s;
  uint64_t tick;
  burst_graph bursts[BURST_CACHE];
  /* The entry the last burst ran (its `used` then): a burst the worker
   * says is the same goes straight to it. */
  size_t last_slot;
  uint64_t last_used;
} cuda_stream;

static inline CUstream cstream(void *stream) { return ((cuda_stream *)stream)->s; }

/* ---- cuda_device.c: the device, its context, errors ---- */

/* Errors after which the context is unusable: every later call fails. */
bool gl_cuda__is_sticky(CUresult r);
/* Records whether failure r of an operation on a live context killed it:
 * a known sticky error, or a context that no longer synchronises. */
void gl_cuda__note_failure(cuda_backend *c, CUresult r);
/* The same for the session ops: only a known sticky error marks the
 * context lost. */
void gl_cuda__note_sticky(cuda_backend *c, CUresult r);
/* Makes the lease's context current on the calling thread. */
CUresult gl_cuda__make_current(cuda_backend *c);
/* Formats "<what>: CUDA_ERROR_X (description)" into err. */
void gl_cuda__cu_msg(cuda_backend *c, CUresult r, const char *what, char *err, size_t errlen);
/* Appends the context-lost note to a failure message. */
void gl_cuda__lost_note(cuda_backend *c, char *err, size_t errlen);
/* The failure of a stream-ordered op: LAUNCH_FAILED and context lost for a
 * sticky error, else `status`. */
gpulease_status gl_cuda__stream_fail(cuda_backend *c, CUresult r, const char *what,
                                     gpulease_status status, char *err, size_t errlen);
/* Undoes a partial init (and gives back a whole one). */
void gl_cuda__release_device(cuda_backend *c);

gpulease_status gl_cuda__probe(gl_backend *b, gl_probe_resp *out, char *err, size_t errlen);
gpulease_status gl_cuda__warm(gl_backend *b, uint32_t ordinal, char *err, size_t errlen);
gpulease_status gl_cuda__init(gl_backend *b, uint32_t ordinal, uint64_t vram_bytes,
                              uint64_t *region_base, char *device_name, size_t name_len,
                              char *err, size_t errlen);
gpulease_status gl_cuda__reset(gl_backend *b, char *err, size_t errlen);
gpulease_status gl_cuda__open_shared(gl_backend *b, uint32_t ordinal, uint64_t *region_base,
                                     char *device_name, size_t name_len, char *err,
                                     size_t errlen);
gpulease_status gl_cuda__region_add(gl_backend *b, uint64_t bytes, uint64_t *offset, char *err,
                                    size_t errlen);
void gl_cuda__region_remove(gl_backend *b, uint64_t offset);
gpulease_status gl_cuda__set_limits(gl_backend *b, uint64_t printf_fifo_bytes,
                                    uint64_t malloc_heap_bytes, char *err, size_t errlen);

/* ---- cuda_module.c: modules and functions ---- */

gpulease_status gl_cuda__load_module(gl_backend *b, const uint8_t *image, size_t len,
                                     gpulease_image_format format, void **module, char *err,
                                     size_t errlen);
void gl_cuda__unload_module(gl_backend *b, void *module);
gpulease_status gl_cuda__get_function(gl_backend *b, void *module, const char *name, void **fn,
                                      char *err, size_t errlen);
gpulease_status gl_cuda__param_sizes(gl_backend *b, void *fn, size_t *sizes, size_t max,
                                     size_t *count, char *err, size_t errlen);
gpulease_status gl_cuda__tensormap_encode(gl_backend *b, uint64_t offset, const gl_tmap_req *t,
                                          uint8_t out[GL_TMAP_BYTES], char *err, size_t errlen);
gpulease_status gl_cuda__local_memory(gl_backend *b, uint64_t *threads, uint32_t *free_per_thread,
                                      char *err, size_t errlen);
gpulease_status gl_cuda__func_info(gl_backend *b, void *fn, gl_func_info_resp *out, char *err,
                                   size_t errlen);
gpulease_status gl_cuda__compile_ptx(gl_backend *b, const uint8_t *ptx, size_t len,
                                     uint8_t **bin, size_t *bin_len, char *err, size_t errlen);
gpulease_status gl_cuda__host_register(gl_backend *b, void *p, size_t len, char *err,
                                       size_t errlen);
void gl_cuda__host_unregister(gl_backend *b, void *p);
void gl_cuda__cache_tag(gl_backend *b, char *buf, size_t len);

/* ---- cuda_launch.c: launches (GPU_SUBMIT's, a session's, their attributes) ---- */

/* "CALL('name', grid XxYxZ, block XxYxZ, N bytes of shared memory[,
 * cooperative][, cluster XxYxZ])". */
void gl_cuda__launch_desc(const gl_launch *l, const char *call, char *what, size_t len);
/* The launch as the error messages name it. */
void gl_cuda__launch_what(const gl_launch *l, char *what, size_t len);
/* Checks a launch with attributes before it is queued; GPULEASE_OK, or the
 * status with err written. */
gpulease_status gl_cuda__attrs_check(cuda_backend *c, CUfunction f, const gl_launch *l,
                                     CUstream stream, char *err, size_t errlen);
/* Queues a launch with its attributes (cuLaunchKernelEx). */
CUresult gl_cuda__launch_ex(cuda_backend *c, CUfunction f, const gl_launch *l, CUstream stream);
/* A failed queueing of a launch (r, from `what`): INVALID_ARGUMENT for the
 * launch configuration's fault, else gl_cuda__stream_fail's verdict. */
gpulease_status gl_cuda__launch_refused(cuda_backend *c, CUresult r, CUfunction f,
                                        const gl_launch *l, const char *what, char *err,
                                        size_t errlen);

gpulease_status gl_cuda__write(gl_backend *b, uint64_t offset, const void *src, size_t len,
                               char *err, size_t errlen);
gpulease_status gl_cuda__read(gl_backend *b, uint64_t offset, void *dst, size_t len, char *err,
                              size_t errlen);
gpulease_status gl_cuda__launch_read(gl_backend *b, void *fn, const gl_launch *l,
                                     uint64_t *gpu_time_ns, uint64_t out_offset, void *out,
                                     size_t out_len, char *err, size_t errlen);
gpulease_status gl_cuda__launch(gl_backend *b, void *fn, const gl_launch *l,
                                uint64_t *gpu_time_ns, char *err, size_t errlen);
gpulease_status gl_cuda__launch_async(gl_backend *b, void *stream, void *fn, const gl_launch *l,
                                      char *err, size_t errlen);

/* ---- cuda_stream.c: session streams and the copies on them ---- */

gpulease_status gl_cuda__stream_create(gl_backend *b, void **stream, char *err, size_t errlen);
void gl_cuda__stream_destroy(gl_backend *b, void *stream);
gpulease_status gl_cuda__write_async(gl_backend *b, void *stream, uint64_t offset,
                                     const void *src, size_t len, char *err, size_t errlen);
gpulease_status gl_cuda__read_sync(gl_backend *b, void *stream, uint64_t offset, void *dst,
                                   size_t len, char *err, size_t errlen);
gpulease_status gl_cuda__copy_async(gl_backend *b, void *stream, uint64_t dst_offset,
                                    uint64_t src_offset, size_t len, char *err, size_t errlen);
gpulease_status gl_cuda__memset_async(gl_backend *b, void *stream, uint64_t offset,
                                      unsigned element_size, uint32_t value, size_t count,
                                      char *err, size_t errlen);
gpulease_status gl_cuda__stream_sync(gl_backend *b, void *stream, char *err, size_t errlen);

/* ---- cuda_burst.c: BURST as a cached CUDA graph ---- */

/* Frees one burst graph's host memory, and its exec and graph when
 * `device`, leaving an empty slot. */
void gl_cuda__burst_free(cuda_backend *c, burst_graph *g, bool device);
/* A kernel node's parameters for launch l of fn. */
CUDA_KERNEL_NODE_PARAMS gl_cuda__node_params(void *fn, const gl_launch *l);
gpulease_status gl_cuda__burst_async(gl_backend *b, void *stream, void *const *fns,
                                     const gl_launch *ls, size_t n, bool same_as_last, char *err,
                                     size_t errlen);

/* ---- cuda_event.c: events ---- */

gpulease_status gl_cuda__event_record(gl_backend *b, void *stream, void **event, char *err,
                                      size_t errlen);
gpulease_status gl_cuda__event_elapsed(gl_backend *b, void *start, void *end, uint64_t *ns,
                                       char *err, size_t errlen);
void gl_cuda__event_destroy(gl_backend *b, void *event);

/* ---- cuda_graph.c: graphs and WHILE loops ---- */

/* Unloads the WHILE loops' condition kernel, if it was loaded. */
void gl_cuda__cond_unload(cuda_backend *c);
gpulease_status gl_cuda__graph_build(gl_backend *b, const gl_graph_op *ops, size_t n,
                                     uint64_t while_flag, void **graph, char *err, size_t errlen);
gpulease_status gl_cuda__graph_launch(gl_backend *b, void *stream, void *graph, char *err,
                                      size_t errlen);
gpulease_status gl_cuda__graph_set_args(gl_backend *b, void *graph, uint32_t node,
                                        const gl_launch *l, char *err, size_t errlen);
void gl_cuda__graph_destroy(gl_backend *b, void *graph);

#endif /* GL_BACKEND_CUDA_INTERNAL_H */
