/*
 * cu.h - what the shim's files share: the CUDA types and constants they
 * need beyond gpu/cuda_api.h (cuda.h's names and values; with cuda.h
 * included first, as the ABI check builds the shim, cuda.h's own), the
 * process-wide state (one lease, one connection, one session) and the
 * helpers every entry point calls. Internal names use the prefix gl_cu_;
 * the exported names are CUDA's own (docs/cuda-driver.md lists them).
 *
 * Every entry point takes gl_cu.mu for its whole call: libgpulease's
 * session is one ordered stream of ops, and CUDA's API is thread-safe.
 */
#ifndef GL_CUDA_CU_H
#define GL_CUDA_CU_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/cuda_api.h"
#include "gpulease/gpulease.h"

#ifndef __cuda_cuda_h__
/* cuda.h's values of what the shim answers or takes beyond cuda_api.h. */
enum {
  CUDA_ERROR_PROFILER_DISABLED = 5,
  CUDA_ERROR_STUB_LIBRARY = 34,
  CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_CONTEXT_ALREADY_CURRENT = 202,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_INVALID_SOURCE = 300,
  CUDA_ERROR_FILE_NOT_FOUND = 301,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
  CUDA_ERROR_OPERATING_SYSTEM = 304,
  CUDA_ERROR_SYSTEM_NOT_READY = 802,
  CUDA_ERROR_ILLEGAL_STATE = 401,
  CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING = 703,
  CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
  CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE = 708,
  CUDA_ERROR_TOO_MANY_PEERS = 711,
  CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
  CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
  CUDA_ERROR_NOT_PERMITTED = 800,
  CUDA_ERROR_TIMEOUT = 909,
};

/* Device attributes the shim answers (CUdevice_attribute's values). */
enum {
  CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
  CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
  CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY = 9,
  CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12,
  CU_DEVICE_ATTRIBUTE_INTEGRATED = 18,
  CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19,
  CU_DEVICE_ATTRIBUTE_COMPUTE_MODE = 20,
  CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS = 31,
  CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
  CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
  CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83,
  CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD = 84,
  CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 89,
  CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR = 106,
  CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
};

/* cuCtxCreate/cuDevicePrimaryCtxSetFlags scheduling flags, cuMemHostAlloc
 * and cuMemHostRegister flags, cuPointerGetAttribute's attributes and
 * memory types, cuLaunchKernel's `extra` markers. */
enum { CU_CTX_SCHED_AUTO = 0, CU_CTX_SCHED_MASK = 0x07, CU_CTX_MAP_HOST = 0x08 };
enum { CU_MEMHOSTALLOC_PORTABLE = 0x01, CU_MEMHOSTALLOC_DEVICEMAP = 0x02,
       CU_MEMHOSTALLOC_WRITECOMBINED = 0x04 };
enum { CU_MEMHOSTREGISTER_PORTABLE = 0x01, CU_MEMHOSTREGISTER_DEVICEMAP = 0x02,
       CU_MEMHOSTREGISTER_IOMEMORY = 0x04, CU_MEMHOSTREGISTER_READ_ONLY = 0x08 };
typedef enum CUpointer_attribute_enum {
  CU_POINTER_ATTRIBUTE_CONTEXT = 1,
  CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 3,
  CU_POINTER_ATTRIBUTE_HOST_POINTER = 4,
  CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
  CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
  CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12,
  CU_POINTER_ATTRIBUTE_MAPPED = 13,
} CUpointer_attribute;
typedef enum CUmemorytype_enum {
  CU_MEMORYTYPE_HOST = 1,
  CU_MEMORYTYPE_DEVICE = 2,
  CU_MEMORYTYPE_ARRAY = 3,
  CU_MEMORYTYPE_UNIFIED = 4,
} CUmemorytype;
typedef struct CUarray_st *CUarray;
/* cuMemcpy2D's and cuMemcpy3D's descriptions (cuda.h's layout). */
typedef struct CUDA_MEMCPY2D_st {
  size_t srcXInBytes, srcY;
  CUmemorytype srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  CUmemorytype dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  size_t dstPitch;
  size_t WidthInBytes, Height;
} CUDA_MEMCPY2D;
typedef struct CUDA_MEMCPY3D_st {
  size_t srcXInBytes, srcY, srcZ, srcLOD;
  CUmemorytype srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  void *reserved0;
  size_t srcPitch, srcHeight;
  size_t dstXInBytes, dstY, dstZ, dstLOD;
  CUmemorytype dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  void *reserved1;
  size_t dstPitch, dstHeight;
  size_t WidthInBytes, Height, Depth;
} CUDA_MEMCPY3D;
typedef void (*CUhostFn)(void *userData);
typedef void (*CUstreamCallback)(CUstream hStream, CUresult status, void *userData);
#define CU_LAUNCH_PARAM_END ((void *)0x00)
#define CU_LAUNCH_PARAM_BUFFER_POINTER ((void *)0x01)
#define CU_LAUNCH_PARAM_BUFFER_SIZE ((void *)0x02)
enum { CU_GET_PROC_ADDRESS_DEFAULT = 0, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 2 };
enum { CU_EVENT_BLOCKING_SYNC = 0x1, CU_EVENT_DISABLE_TIMING = 0x2,
       CU_EVENT_INTERPROCESS = 0x4 };
typedef enum CUfunc_cache_enum {
  CU_FUNC_CACHE_PREFER_NONE = 0,
} CUfunc_cache;
typedef enum CUsharedconfig_enum {
  CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE = 0,
} CUsharedconfig;
typedef enum CUmoduleLoadingMode_enum {
  CU_MODULE_EAGER_LOADING = 0x1,
  CU_MODULE_LAZY_LOADING = 0x2,
} CUmoduleLoadingMode;
typedef struct CUlib_st *CUlibrary;
typedef enum CUlibraryOption_enum {
  CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE = 0,
} CUlibraryOption;
typedef size_t (*CUoccupancyB2DSize)(int blockSize);
#endif /* __cuda_cuda_h__ */

/* The layouts the ABI build (cuda.h's own structs) checks as well. */
_Static_assert(sizeof(CUDA_MEMCPY2D) == 128, "CUDA_MEMCPY2D is 128 bytes in cuda.h");
_Static_assert(sizeof(CUDA_MEMCPY3D) == 200, "CUDA_MEMCPY3D is 200 bytes in cuda.h");

/* The shim's own stream and event objects (CUstream, CUevent point at
 * them). Every stream is ordered on the session's one stream: what
 * CUDA allows to overlap runs in order, which CUDA's semantics permit. */
struct CUstream_st {
  uint32_t magic; /* GL_CU_STREAM_MAGIC while alive */
  unsigned flags;
  int priority;
};
struct CUevent_st {
  uint32_t magic; /* GL_CU_EVENT_MAGIC while alive */
  unsigned flags;
  unsigned slot;  /* the session's event slot (< GPULEASE_MAX_EVENTS) */
  bool recorded;
};
struct CUmod_st {
  uint32_t magic;
  gpulease_module module;
  struct CUfunc_st *funcs; /* the module's looked-up functions, a list */
};
struct CUfunc_st {
  uint32_t magic;
  gpulease_function function;
  struct CUmod_st *mod;
  struct CUfunc_st *next;
  gpulease_func_info info; /* attributes and parameter sizes (FUNC_INFO) */
  char name[256];
};
struct CUctx_st {
  uint32_t magic;
};
/* A library (cuLibraryLoadData) is one module of the context (the lease
 * has one); its kernels (CUkernel) are the module's functions, so a
 * CUkernel passes as a CUfunction to the launches, as CUDA allows. */
struct CUlib_st {
  uint32_t magic;
  struct CUmod_st *mod;
};
#define GL_CU_STREAM_MAGIC 0x53747265u
#define GL_CU_EVENT_MAGIC 0x45766e74u
#define GL_CU_MODULE_MAGIC 0x4d6f646cu
#define GL_CU_FUNC_MAGIC 0x46756e63u
#define GL_CU_CTX_MAGIC 0x43747820u
#define GL_CU_LIB_MAGIC 0x4c696272u

/* One device allocation (cuMemAlloc): a session buffer at its device
 * address. The table is sorted by address. */
typedef struct gl_cu_alloc {
  CUdeviceptr addr;
  uint64_t size;     /* as asked */
  uint64_t charged;  /* what it takes of the lease (rounded to 256) */
  gpulease_buffer buffer;
} gl_cu_alloc;

/* One block of host memory of cuMemHostAlloc/cuMemAllocHost. */
typedef struct gl_cu_host {
  void *ptr;
  size_t size;
} gl_cu_host;

typedef struct gl_cu_state {
  pthread_mutex_t mu;
  bool init_done;   /* cuInit ran (init_status is its answer) */
  CUresult init_status;
  char init_message[1200];
  gpulease_client *client;
  gpulease_lease lease;
  gpulease_gpu_info gpu;
  gpulease_session *session; /* opened with the primary context */
  unsigned primary_refs;     /* cuDevicePrimaryCtxRetain - Release */
  bool ctx_current;          /* a thread made the context current (any) */
  struct CUctx_st ctx;
  CUresult sticky;           /* a lost context's error: every later call */
  gl_cu_alloc *allocs;
  size_t nallocs, cap_allocs;
  uint64_t charged;          /* sum of allocs' charged bytes */
  gl_cu_host *hosts;
  size_t nhosts, cap_hosts;
  uint64_t event_slots[GPULEASE_MAX_EVENTS / 64]; /* bit set: slot taken */
  bool kout_on;              /* kernel output asked for (gl_cu_kernel_output_on) */
  struct CUmod_st **mods; /* live modules, for cuModuleUnload's checks */
  size_t nmods, cap_mods;
} gl_cu_state;

extern gl_cu_state gl_cu;

/* Exported entry points are declared with this (the map file exports
 * cu*; everything else stays hidden). */
#define GL_CU_API __attribute__((visibility("default")))

/* Lock and unlock gl_cu.mu (every entry point). */
void gl_cu_lock(void);
void gl_cu_unlock(void);

/* The checks most entry points start with, under the lock: cuInit done
 * and succeeded, and no sticky error. Returns CUDA_SUCCESS or the error. */
CUresult gl_cu_ready(void);

/* As gl_cu_ready(), and a session (the primary context, opened on first
 * use: cuDevicePrimaryCtxRetain, cuCtxSetCurrent, or any call that needs
 * the context while none is current, as the CUDA runtime does). */
CUresult gl_cu_need_session(void);

/* Maps a libgpulease failure into the CUresult CUDA would give, prints
 * one line "gpulease: CALL: STATUS: message" on stderr for the failures
 * that are not the caller's argument errors, and makes a lost context's
 * error sticky. call is the CUDA entry point's name. */
CUresult gl_cu_fail(const char *call, const gpulease_error *err);

/* Says once per entry point on stderr that it is not supported
 * ("gpulease: cuXxx is not supported by the gpulease CUDA driver (why)")
 * and returns CUDA_ERROR_NOT_SUPPORTED. why may be NULL. */
CUresult gl_cu_unsupported(const char *call, const char *why);

/* The allocation holding [ptr, ptr + len) (len >= 1), or NULL. */
const gl_cu_alloc *gl_cu_find_alloc(CUdeviceptr ptr, uint64_t len);

/* The copies and memsets of mem.c, under the lock with the session open:
 * host to device, device to host, device to device, unified (either side
 * a host pointer or one of an allocation), n elements of elem (1, 2, 4)
 * bytes set to value. A range no allocation holds is
 * CUDA_ERROR_INVALID_VALUE, nothing copied; call names the entry point in
 * messages. */
CUresult gl_cu_htod(const char *call, CUdeviceptr dst, const void *src, size_t n);
CUresult gl_cu_dtoh(const char *call, void *dst, CUdeviceptr src, size_t n);
CUresult gl_cu_dtod(const char *call, CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult gl_cu_unified(const char *call, CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult gl_cu_memset_n(const char *call, CUdeviceptr dst, uint32_t elem, uint32_t value,
                        size_t n);

/* The host block of cuMemHostAlloc holding [p, p + len), or NULL. */
const gl_cu_host *gl_cu_find_host(const void *p, size_t len);

/* Asks for the lease's kernel output at every later synchronisation,
 * written to stdout: from the first module that may print on. */
void gl_cu_kernel_output_on(void);

/* Waits for the session's work (SYNC; with the held-back launch, in one
 * BATCH: LAUNCH then SYNC) and reports its failure as a CUresult (the
 * context's sticky error when it is lost). */
CUresult gl_cu_sync(const char *call);

/* Sends the launch the shim holds back, if any (launch.c): each
 * cuLaunchKernel keeps its launch until the next call, so that a launch
 * followed by a synchronisation is one round trip. An error of the launch
 * itself is reported by the call that sends it. */
CUresult gl_cu_flush_launch(void);

/* The held-back launch sent with a SYNC (gpulease_launch_sync): false when
 * there is none (then *st is untouched). */
bool gl_cu_sync_launch(gpulease_status *st, gpulease_op_failure *f, gpulease_error *err);

/* Forgets the held-back launch (its session closed). */
void gl_cu_drop_launch(void);

/* The CUDA error a daemon message names ("... CUDA_ERROR_ILLEGAL_ADDRESS
 * ..."), or -1 when it names none. */
int gl_cu_error_in_message(const char *message);

/* The proc-address table (proc.c): fn for a name as cuGetProcAddress
 * asks (base name, CUDA version, per-thread stream flag), or NULL; *stub
 * (when not NULL) says whether fn is a NOT_SUPPORTED stub. */
void *gl_cu_proc_lookup(const char *symbol, int cuda_version, uint64_t flags, bool *stub);

/* GPULEASE_CUDA_TRACE=1: whether the shim traces what the CUDA runtime
 * asks of it (export tables, their slots, entry points that are stubs),
 * and one line "gpulease trace: ..." on stderr when it does. */
bool gl_cu_tracing(void);
void gl_cu_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The export tables (export_tables.c): the table of that UUID, or NULL. */
const void *gl_cu_export_table(const unsigned char uuid[16]);

/* Context-local storage (export_tables.c): the runtime's values of the
 * primary context whose session is closing are taken off (under gl_cu.mu,
 * from close_session), and their destructors run later, without the lock
 * (gl_cu_cls_run_dtors, by the entry point that closed the session). */
void gl_cu_cls_detach(void);
void gl_cu_cls_run_dtors(void);

#endif /* GL_CUDA_CU_H */
