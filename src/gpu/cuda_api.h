/*
 * cuda_api.h - the CUDA driver API, loaded at run time.
 *
 * gpulease builds and runs on machines without the CUDA toolkit or driver:
 * nothing here includes cuda.h and nothing links libcuda. gl_cuda_load()
 * dlopen()s libcuda.so.1 and fills ONE table of function pointers; callers
 * use the table (cu->cuInit(0)) and nothing else.
 *
 * The types and constants below are our own copies of the few that we use,
 * with the names and values of cuda.h (CUDA 12/13). They are ABI-identical:
 * tests/unit/test_cuda_abi.c checks every value and every function
 * signature against cuda.h wherever the toolkit is installed. When cuda.h
 * has been included before this header (only that test does so), cuda.h's
 * own declarations are used instead of ours.
 *
 * Entry points are resolved with cuGetProcAddress_v2 asking for the ABI of
 * CUDA 12.0 (GL_CUDA_ABI_VERSION), so the signatures below stay right on
 * newer drivers (CUDA 13 turned cuCtxCreate into _v4 and cuEventElapsedTime
 * into _v2; we ask for the 12.0 versions, which every 12+ driver serves).
 * Without cuGetProcAddress_v2 (drivers older than 12.0) the versioned
 * exported names (cuMemAlloc_v2, ...) are looked up with dlsym().
 *
 * We never create contexts with cuCtxCreate: each lease is its own worker
 * process, so the device's primary context (cuDevicePrimaryCtxRetain +
 * cuCtxSetCurrent) is the lease's private context.
 */
#ifndef GL_GPU_CUDA_API_H
#define GL_GPU_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

/* The CUDA version whose ABI we request from cuGetProcAddress (12.0). */
#define GL_CUDA_ABI_VERSION 12000

#ifndef __cuda_cuda_h__ /* cuda.h's include guard */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef uint64_t cuuint64_t;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef struct CUlinkState_st *CUlinkState;
typedef struct CUuuid_st {
  char bytes[16];
} CUuuid;

/* CUresult values we test for (cuGetErrorName names all of them). */
enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_ECC_UNCORRECTABLE = 214,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_LAUNCH_TIMEOUT = 702,
  CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
  CUDA_ERROR_ASSERT = 710,
  CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
  CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
  CUDA_ERROR_MISALIGNED_ADDRESS = 716,
  CUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
  CUDA_ERROR_INVALID_PC = 718,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_UNKNOWN = 999,
};

typedef enum CUdevice_attribute_enum {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
} CUdevice_attribute;

typedef enum CUjit_option_enum {
  CU_JIT_WALL_TIME = 2,
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CU_JIT_TARGET_FROM_CUCONTEXT = 8,
  CU_JIT_LOG_VERBOSE = 12,
} CUjit_option;

typedef enum CUjitInputType_enum {
  CU_JIT_INPUT_CUBIN = 0,
  CU_JIT_INPUT_PTX = 1,
} CUjitInputType;

typedef enum CUfunction_attribute_enum {
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2,
  CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
  CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
  CU_FUNC_ATTRIBUTE_PTX_VERSION = 5,
  CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6,
} CUfunction_attribute;

enum { CU_EVENT_DEFAULT = 0 };

enum { CU_STREAM_DEFAULT = 0, CU_STREAM_NON_BLOCKING = 1 };

typedef enum CUlimit_enum {
  CU_LIMIT_STACK_SIZE = 0,
  CU_LIMIT_PRINTF_FIFO_SIZE = 1,
  CU_LIMIT_MALLOC_HEAP_SIZE = 2,
} CUlimit;

enum { CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1 };

typedef enum CUdriverProcAddressQueryResult_enum {
  CU_GET_PROC_ADDRESS_SUCCESS = 0,
  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
} CUdriverProcAddressQueryResult;

#endif /* __cuda_cuda_h__ */

/* The table. Field names are the unversioned API names; the comment gives
 * the exported symbol that backs each one. All are non-NULL after a
 * successful gl_cuda_load() except those marked optional. */
typedef struct gl_cuda {
  void *dl; /* dlopen handle (kept open for the life of the process) */
  int driver_version; /* cuDriverGetVersion, e.g. 13000 */

  CUresult (*cuGetErrorName)(CUresult error, const char **pstr);
  CUresult (*cuGetErrorString)(CUresult error, const char **pstr);
  CUresult (*cuInit)(unsigned int flags);
  CUresult (*cuDriverGetVersion)(int *version);

  CUresult (*cuDeviceGetCount)(int *count);
  CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
  CUresult (*cuDeviceGetName)(char *name, int len, CUdevice dev);
  CUresult (*cuDeviceGetUuid)(CUuuid *uuid, CUdevice dev);          /* _v2 */
  CUresult (*cuDeviceTotalMem)(size_t *bytes, CUdevice dev);        /* _v2 */
  CUresult (*cuDeviceGetAttribute)(int *pi, CUdevice_attribute attrib, CUdevice dev);

  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *pctx, CUdevice dev);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice dev);              /* _v2 */
  CUresult (*cuCtxGetCurrent)(CUcontext *pctx);
  CUresult (*cuCtxSetCurrent)(CUcontext ctx);
  CUresult (*cuCtxSynchronize)(void);
  CUresult (*cuCtxSetLimit)(CUlimit limit, size_t value);
  CUresult (*cuCtxGetLimit)(size_t *pvalue, CUlimit limit);

  CUresult (*cuMemAlloc)(CUdeviceptr *dptr, size_t bytesize);       /* _v2 */
  CUresult (*cuMemFree)(CUdeviceptr dptr);                          /* _v2 */
  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes); /* _v2 */
  CUresult (*cuMemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);       /* _v2 */
  CUresult (*cuMemsetD8)(CUdeviceptr dst, unsigned char uc, size_t n);     /* _v2 */
  /* Page-locks host memory for fast, truly asynchronous copies (flags 0:
   * portable to this context only). */
  CUresult (*cuMemHostRegister)(void *p, size_t bytes, unsigned int flags); /* _v2 */
  CUresult (*cuMemHostUnregister)(void *p);

  /* Streams and stream-ordered copies (legacy default-stream semantics:
   * the non-_ptsz variants). */
  CUresult (*cuStreamCreate)(CUstream *phstream, unsigned int flags);
  CUresult (*cuStreamDestroy)(CUstream hstream);                    /* _v2 */
  CUresult (*cuStreamSynchronize)(CUstream hstream);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t bytes,
                                CUstream hstream);                  /* _v2 */
  CUresult (*cuMemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes,
                                CUstream hstream);                  /* _v2 */
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                CUstream hstream);                  /* _v2 */
  CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char uc, size_t n, CUstream hstream);
  CUresult (*cuMemsetD16Async)(CUdeviceptr dst, unsigned short us, size_t n, CUstream hstream);
  CUresult (*cuMemsetD32Async)(CUdeviceptr dst, unsigned int ui, size_t n, CUstream hstream);

  CUresult (*cuModuleLoadDataEx)(CUmodule *module, const void *image, unsigned int num_options,
                                 CUjit_option *options, void **option_values);
  CUresult (*cuModuleUnload)(CUmodule hmod);
  CUresult (*cuModuleGetFunction)(CUfunction *hfunc, CUmodule hmod, const char *name);
  CUresult (*cuFuncGetAttribute)(int *pi, CUfunction_attribute attrib, CUfunction hfunc);
  CUresult (*cuLaunchKernel)(CUfunction f, unsigned int grid_x, unsigned int grid_y,
                             unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                             unsigned int block_z, unsigned int shared_mem_bytes,
                             CUstream stream, void **kernel_params, void **extra);

  CUresult (*cuEventCreate)(CUevent *phevent, unsigned int flags);
  CUresult (*cuEventRecord)(CUevent hevent, CUstream hstream);
  CUresult (*cuEventSynchronize)(CUevent hevent);
  CUresult (*cuEventElapsedTime)(float *ms, CUevent hstart, CUevent hend);
  CUresult (*cuEventDestroy)(CUevent hevent);                       /* _v2 */

  /* The JIT linker: PTX -> cubin without loading it. */
  CUresult (*cuLinkCreate)(unsigned int num_options, CUjit_option *options,
                           void **option_values, CUlinkState *state_out); /* _v2 */
  CUresult (*cuLinkAddData)(CUlinkState state, CUjitInputType type, void *data, size_t size,
                            const char *name, unsigned int num_options, CUjit_option *options,
                            void **option_values);                  /* _v2 */
  CUresult (*cuLinkComplete)(CUlinkState state, void **cubin_out, size_t *size_out);
  CUresult (*cuLinkDestroy)(CUlinkState state);

  /* Optional (CUDA 12.4+; NULL on older drivers): size of a kernel's
   * parameter paramIndex; CUDA_ERROR_INVALID_VALUE past the last one. */
  CUresult (*cuFuncGetParamInfo)(CUfunction func, size_t param_index, size_t *param_offset,
                                 size_t *param_size);
} gl_cuda;

/* Loads libcuda.so.1 and resolves every entry point of the table.
 * Does NOT call cuInit. Safe to call again after a failure.
 *   out: caller-owned, fully written on success (zeroed on failure).
 *   err/errlen: on failure receives a message such as
 *     "CUDA driver not available: libcuda.so.1: cannot open shared object
 *      file: No such file or directory"
 * Returns 0 or -1. The library stays loaded for the process's lifetime
 * (unloading a CUDA driver is not supported). */
int gl_cuda_load(gl_cuda *out, char *err, size_t errlen);

/* "CUDA_ERROR_ILLEGAL_ADDRESS" for r, via cuGetErrorName, or
 * "CUDA_ERROR_<r>" when the driver does not know r. cu may be NULL. Writes
 * into buf and returns buf. */
const char *gl_cuda_error_name(const gl_cuda *cu, CUresult r, char *buf, size_t buflen);

/* The driver's description ("an illegal memory access was encountered"),
 * or "unknown error". Static string owned by the driver. cu may be NULL. */
const char *gl_cuda_error_string(const gl_cuda *cu, CUresult r);

/* Formats a device UUID the way NVML prints it:
 * "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (41 bytes with the NUL). */
void gl_cuda_uuid_format(const CUuuid *uuid, char *out, size_t outlen);

#endif /* GL_GPU_CUDA_API_H */
