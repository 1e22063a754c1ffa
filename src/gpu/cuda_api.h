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
 * exported names (cuMemAlloc_v2, ...) are looked up with dlsym(). Optional
 * entry points newer than 12.0 (cuFuncGetParamInfo, the conditional node
 * API) are asked for at the CUDA version that introduced the signature
 * declared here, and left NULL on a driver older than that.
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
typedef uint32_t cuuint32_t;
typedef uint64_t cuuint64_t;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef struct CUlinkState_st *CUlinkState;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUkern_st *CUkernel;
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
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_ECC_UNCORRECTABLE = 214,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
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
  CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
  CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
  CUDA_ERROR_INVALID_CLUSTER_SIZE = 912,
  CUDA_ERROR_UNKNOWN = 999,
};

typedef enum CUdevice_attribute_enum {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
  CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH = 120,
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
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET = 10,
  CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH = 11,
  CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT = 12,
  CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH = 13,
  CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14,
} CUfunction_attribute;

enum { CU_EVENT_DEFAULT = 0 };

enum { CU_STREAM_DEFAULT = 0, CU_STREAM_NON_BLOCKING = 1 };

typedef enum CUlimit_enum {
  CU_LIMIT_STACK_SIZE = 0,
  CU_LIMIT_PRINTF_FIFO_SIZE = 1,
  CU_LIMIT_MALLOC_HEAP_SIZE = 2,
} CUlimit;

enum { CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1 };

/* cuLaunchKernelEx's configuration (cuda.h's layout: each attribute is an
 * 8-byte id slot and a 64-byte value union). Only the attributes we set. */
typedef enum CUlaunchAttributeID_enum {
  CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2,
  CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
} CUlaunchAttributeID;

typedef union CUlaunchAttributeValue_union {
  char pad[64];
  int cooperative;
  struct {
    unsigned int x;
    unsigned int y;
    unsigned int z;
  } clusterDim;
} CUlaunchAttributeValue;

typedef struct CUlaunchAttribute_st {
  CUlaunchAttributeID id;
  char pad[8 - sizeof(CUlaunchAttributeID)];
  CUlaunchAttributeValue value;
} CUlaunchAttribute;

typedef struct CUlaunchConfig_st {
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned int numAttrs;
} CUlaunchConfig;

/* A graph's kernel node (CUDA_KERNEL_NODE_PARAMS_v2, CUDA 12.0+). */
typedef struct CUDA_KERNEL_NODE_PARAMS_v2_st {
  CUfunction func;
  unsigned int gridDimX, gridDimY, gridDimZ;
  unsigned int blockDimX, blockDimY, blockDimZ;
  unsigned int sharedMemBytes;
  void **kernelParams;
  void **extra;
  CUkernel kern;
  CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS;

typedef enum CUgraphNodeType_enum {
  CU_GRAPH_NODE_TYPE_KERNEL = 0,
  CU_GRAPH_NODE_TYPE_MEMCPY = 1,
  CU_GRAPH_NODE_TYPE_MEMSET = 2,
  CU_GRAPH_NODE_TYPE_EMPTY = 5,
  CU_GRAPH_NODE_TYPE_CONDITIONAL = 13,
} CUgraphNodeType;

/* Conditional nodes (CUDA 12.3+): a WHILE node runs its body graph while
 * its condition, set by cudaGraphSetConditional in device code (and to the
 * handle's default value at each launch with CU_GRAPH_COND_ASSIGN_DEFAULT),
 * is not 0. */
typedef cuuint64_t CUgraphConditionalHandle;

enum { CU_GRAPH_COND_ASSIGN_DEFAULT = 0x1 }; /* a #define in cuda.h */

typedef enum CUgraphConditionalNodeType_enum {
  CU_GRAPH_COND_TYPE_IF = 0,
  CU_GRAPH_COND_TYPE_WHILE = 1,
} CUgraphConditionalNodeType;

typedef struct CUDA_CONDITIONAL_NODE_PARAMS {
  CUgraphConditionalHandle handle;
  CUgraphConditionalNodeType type;
  unsigned int size;    /* bodies: 1 for WHILE */
  CUgraph *phGraph_out; /* written by cuGraphAddNode: the body graphs, owned by the node */
  CUcontext ctx;
} CUDA_CONDITIONAL_NODE_PARAMS;

/* An edge's annotation (cuGraphAddNode_v2, cuStreamBeginCaptureToGraph);
 * all zero: an ordinary dependency. */
typedef struct CUgraphEdgeData_st {
  unsigned char from_port;
  unsigned char to_port;
  unsigned char type;
  unsigned char reserved[5];
} CUgraphEdgeData;

/* cuGraphAddNode's parameters: 256 bytes, a union of every node type's
 * parameters of which we declare only the conditional node's. Unused
 * bytes must be zero. */
typedef struct CUgraphNodeParams_st {
  CUgraphNodeType type;
  int reserved0[3];
  union {
    long long reserved1[29];
    CUDA_CONDITIONAL_NODE_PARAMS conditional;
  };
  long long reserved2;
} CUgraphNodeParams;
_Static_assert(sizeof(CUgraphNodeParams) == 256, "CUgraphNodeParams is 256 bytes in cuda.h");

/* Tensor maps (CUDA 12.0+, compute capability 9.0+): the 128-byte
 * descriptor of a tiled tensor in global memory that the Hopper TMA unit
 * reads (cp.async.bulk.tensor), filled by cuTensorMapEncodeTiled and
 * passed to a kernel by value. The driver needs 64-byte alignment; CUDA
 * 13's cuda.h declares 128, which we follow. */
typedef struct CUtensorMap_st {
  _Alignas(128) cuuint64_t opaque[16];
} CUtensorMap;

/* Element types, numbered as the driver numbers them. */
typedef enum CUtensorMapDataType_enum {
  CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0,
  CU_TENSOR_MAP_DATA_TYPE_UINT16 = 1,
  CU_TENSOR_MAP_DATA_TYPE_UINT32 = 2,
  CU_TENSOR_MAP_DATA_TYPE_INT32 = 3,
  CU_TENSOR_MAP_DATA_TYPE_UINT64 = 4,
  CU_TENSOR_MAP_DATA_TYPE_INT64 = 5,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT64 = 8,
  CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ = 10,
  CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 = 11,
  CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ = 12,
} CUtensorMapDataType;

typedef enum CUtensorMapInterleave_enum {
  CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
  CU_TENSOR_MAP_INTERLEAVE_16B = 1,
  CU_TENSOR_MAP_INTERLEAVE_32B = 2,
} CUtensorMapInterleave;

typedef enum CUtensorMapSwizzle_enum {
  CU_TENSOR_MAP_SWIZZLE_NONE = 0,
  CU_TENSOR_MAP_SWIZZLE_32B = 1,
  CU_TENSOR_MAP_SWIZZLE_64B = 2,
  CU_TENSOR_MAP_SWIZZLE_128B = 3,
} CUtensorMapSwizzle;

typedef enum CUtensorMapL2promotion_enum {
  CU_TENSOR_MAP_L2_PROMOTION_NONE = 0,
  CU_TENSOR_MAP_L2_PROMOTION_L2_64B = 1,
  CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2,
  CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3,
} CUtensorMapL2promotion;

typedef enum CUtensorMapFloatOOBfill_enum {
  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0,
  CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA = 1,
} CUtensorMapFloatOOBfill;

typedef enum CUstreamCaptureMode_enum {
  CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_STREAM_CAPTURE_MODE_RELAXED = 2,
} CUstreamCaptureMode;

typedef enum CUdriverProcAddressQueryResult_enum {
  CU_GET_PROC_ADDRESS_SUCCESS = 0,
  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
} CUdriverProcAddressQueryResult;

#endif /* __cuda_cuda_h__ */

/* The table. Field names are the unversioned API names; the comment gives
 * the exported symbol that backs each one. All are non-NULL after a
 * successful gl_cuda_load() except those marked optional, which are NULL
 * where the driver lacks them or is older than the CUDA version whose
 * signature we declare (cuGetProcAddress would give an older driver's
 * older version of the function). */
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

  /* Launches with attributes (cooperative, cluster dimensions), CUDA 12.0. */
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig *config, CUfunction f, void **kernel_params,
                               void **extra);
  CUresult (*cuFuncSetAttribute)(CUfunction hfunc, CUfunction_attribute attrib, int value);
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *num_blocks, CUfunction func,
                                                          int block_size, size_t dyn_smem);
  CUresult (*cuOccupancyMaxPotentialClusterSize)(int *cluster_size, CUfunction func,
                                                 const CUlaunchConfig *config);

  /* CUDA graphs: stream capture, explicit kernel nodes, instantiate,
   * update a kernel node's parameters, replay. */
  CUresult (*cuStreamBeginCapture)(CUstream hstream, CUstreamCaptureMode mode); /* _v2 */
  CUresult (*cuStreamEndCapture)(CUstream hstream, CUgraph *graph);
  CUresult (*cuGraphCreate)(CUgraph *graph, unsigned int flags);
  CUresult (*cuGraphAddKernelNode)(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                                   size_t num_deps,
                                   const CUDA_KERNEL_NODE_PARAMS *params); /* _v2 */
  CUresult (*cuGraphGetNodes)(CUgraph graph, CUgraphNode *nodes, size_t *num_nodes);
  CUresult (*cuGraphNodeGetType)(CUgraphNode node, CUgraphNodeType *type);
  CUresult (*cuGraphKernelNodeGetParams)(CUgraphNode node,
                                         CUDA_KERNEL_NODE_PARAMS *params); /* _v2 */
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *exec, CUgraph graph,
                                 unsigned long long flags);
  CUresult (*cuGraphExecKernelNodeSetParams)(CUgraphExec exec, CUgraphNode node,
                                             const CUDA_KERNEL_NODE_PARAMS *params); /* _v2 */
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream hstream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec);
  CUresult (*cuGraphDestroy)(CUgraph graph);

  /* Optional (CUDA 12.3+; NULL on older drivers): conditional nodes, for
   * graph WHILE loops. cuGraphAddNode is cuGraphAddNode_v2 (edge data,
   * 12.3); cuStreamBeginCaptureToGraph captures into an existing graph (a
   * conditional node's body). */
  CUresult (*cuGraphAddNode)(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
                             const CUgraphEdgeData *dep_data, size_t num_deps,
                             CUgraphNodeParams *params); /* _v2 */
  CUresult (*cuGraphConditionalHandleCreate)(CUgraphConditionalHandle *handle, CUgraph graph,
                                             CUcontext ctx, unsigned int default_launch_value,
                                             unsigned int flags);
  CUresult (*cuStreamBeginCaptureToGraph)(CUstream hstream, CUgraph graph,
                                          const CUgraphNode *deps,
                                          const CUgraphEdgeData *dep_data, size_t num_deps,
                                          CUstreamCaptureMode mode);

  CUresult (*cuEventCreate)(CUevent *phevent, unsigned int flags);
  CUresult (*cuEventRecord)(CUevent hevent, CUstream hstream);
  CUresult (*cuEventSynchronize)(CUevent hevent);
  CUresult (*cuEventQuery)(CUevent hevent);
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

  /* Optional (CUDA 12.0+; NULL where the driver lacks it): encodes the
   * tensor map of a tiled tensor at globalAddress (16-byte aligned);
   * globalStrides are in bytes, rank - 1 of them; dims and box in
   * elements. CUDA_ERROR_INVALID_VALUE for arguments it refuses. */
  CUresult (*cuTensorMapEncodeTiled)(CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
                                     cuuint32_t tensorRank, void *globalAddress,
                                     const cuuint64_t *globalDim,
                                     const cuuint64_t *globalStrides,
                                     const cuuint32_t *boxDim,
                                     const cuuint32_t *elementStrides,
                                     CUtensorMapInterleave interleave,
                                     CUtensorMapSwizzle swizzle,
                                     CUtensorMapL2promotion l2Promotion,
                                     CUtensorMapFloatOOBfill oobFill);
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
