/*
 * device.c - the leased GPU as the CUDA driver shows it: one device
 * (ordinal 0), its name, UUID and compute capability from the daemon's
 * inventory, its memory the lease's VRAM; the attributes the node's
 * compute capability fixes; the driver's version.
 */
#include <stdio.h>
#include <string.h>

#include "cuda/entry.h"

/* The CUDA API version the shim implements (cuDriverGetVersion): the
 * 13.0 runtime asks for at least its own. */
#define GL_CU_DRIVER_VERSION 13000

GL_CU_API CUresult cuDriverGetVersion(int *version);
CUresult cuDriverGetVersion(int *version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = GL_CU_DRIVER_VERSION;
  return CUDA_SUCCESS;
}

GL_CU_API CUresult cuDeviceGetCount(int *count);
CUresult cuDeviceGetCount(int *count) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  *count = 1;
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  if (ordinal != 0) return gl_cu_leave(CUDA_ERROR_INVALID_DEVICE);
  *device = 0;
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev);
CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  if (dev != 0) return gl_cu_leave(CUDA_ERROR_INVALID_DEVICE);
  snprintf(name, (size_t)len, "%s", gl_cu.gpu.name);
  return gl_cu_leave(CUDA_SUCCESS);
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" into 16 bytes; an emulated
 * device's other names hash into a stable id. */
static void uuid_bytes(const char *s, unsigned char out[16]) {
  const char *p = strncmp(s, "GPU-", 4) == 0 ? s + 4 : s;
  int n = 0;
  for (; *p && n < 32; p++) {
    if (*p == '-') continue;
    int v = hexval(*p);
    if (v < 0) break;
    if (n % 2 == 0) out[n / 2] = (unsigned char)(v << 4);
    else out[n / 2] |= (unsigned char)v;
    n++;
  }
  if (n == 32) return;
  uint64_t h1 = 1469598103934665603ull, h2 = 1099511628211ull;
  for (const char *q = s; *q; q++) {
    h1 = (h1 ^ (unsigned char)*q) * 1099511628211ull;
    h2 = (h2 ^ (unsigned char)*q) * 1469598103934665603ull;
  }
  memcpy(out, &h1, 8);
  memcpy(out + 8, &h2, 8);
}

GL_CU_API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
GL_CU_API CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev);
CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) {
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  if (dev != 0) return gl_cu_leave(CUDA_ERROR_INVALID_DEVICE);
  uuid_bytes(gl_cu.gpu.uuid, (unsigned char *)uuid->bytes);
  return gl_cu_leave(CUDA_SUCCESS);
}
CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) { return cuDeviceGetUuid_v2(uuid, dev); }

GL_CU_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev);
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  if (dev != 0) return gl_cu_leave(CUDA_ERROR_INVALID_DEVICE);
  *bytes = (size_t)gl_cu.lease.vram_bytes; /* the lease's view */
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev);
CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev) {
  if (!major || !minor) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  if (dev != 0) return gl_cu_leave(CUDA_ERROR_INVALID_DEVICE);
  *major = (int)gl_cu.gpu.cc_major;
  *minor = (int)gl_cu.gpu.cc_minor;
  return gl_cu_leave(CUDA_SUCCESS);
}

/* What the compute capability fixes (the CUDA programming guide's table
 * of features and technical specifications), per architecture. */
typedef struct cc_limits {
  int cc;                 /* major * 10 + minor */
  int threads_per_sm;
  int blocks_per_sm;
  int smem_per_sm;        /* bytes */
  int smem_per_block_optin;
} cc_limits;

static const cc_limits CC_TABLE[] = {
    {70, 2048, 32, 98304, 98304},    {72, 2048, 32, 98304, 98304},
    {75, 1024, 16, 65536, 65536},    {80, 2048, 32, 167936, 166912},
    {86, 1536, 16, 102400, 101376},  {87, 2048, 16, 167936, 166912},
    {89, 1536, 24, 102400, 101376},  {90, 2048, 32, 233472, 232448},
    {100, 2048, 32, 233472, 232448}, {103, 2048, 32, 233472, 232448},
    {120, 1536, 32, 102400, 101376},
};

static const cc_limits *limits(void) {
  int cc = (int)(gl_cu.gpu.cc_major * 10 + gl_cu.gpu.cc_minor);
  for (size_t i = 0; i < sizeof CC_TABLE / sizeof CC_TABLE[0]; i++)
    if (CC_TABLE[i].cc == cc) return &CC_TABLE[i];
  return NULL;
}

/* The attributes beyond cu.h's, by cuda.h's values (CUdevice_attribute). */
enum {
  A_MAX_PITCH = 11, A_CLOCK_RATE = 13, A_TEXTURE_ALIGNMENT = 14, A_GPU_OVERLAP = 15,
  A_KERNEL_EXEC_TIMEOUT = 17, A_TEX1D_WIDTH = 21, A_TEX2D_WIDTH = 22, A_TEX2D_HEIGHT = 23,
  A_TEX3D_WIDTH = 24, A_TEX3D_HEIGHT = 25, A_TEX3D_DEPTH = 26, A_TEX2D_LAYERED_WIDTH = 27,
  A_TEX2D_LAYERED_HEIGHT = 28, A_TEX2D_LAYERED_LAYERS = 29, A_SURFACE_ALIGNMENT = 30,
  A_ECC_ENABLED = 32, A_PCI_BUS_ID = 33, A_PCI_DEVICE_ID = 34, A_TCC_DRIVER = 35,
  A_MEMORY_CLOCK_RATE = 36, A_GLOBAL_MEMORY_BUS_WIDTH = 37, A_L2_CACHE_SIZE = 38,
  A_ASYNC_ENGINE_COUNT = 40, A_TEX1D_LAYERED_WIDTH = 42, A_TEX1D_LAYERED_LAYERS = 43,
  A_CAN_TEX2D_GATHER = 44, A_TEX2D_GATHER_WIDTH = 45, A_TEX2D_GATHER_HEIGHT = 46,
  A_TEX3D_WIDTH_ALT = 47, A_TEX3D_HEIGHT_ALT = 48, A_TEX3D_DEPTH_ALT = 49, A_PCI_DOMAIN_ID = 50,
  A_TEXTURE_PITCH_ALIGNMENT = 51, A_TEXCUBE_WIDTH = 52, A_TEXCUBE_LAYERED_WIDTH = 53,
  A_TEXCUBE_LAYERED_LAYERS = 54, A_SURF1D_WIDTH = 55, A_SURF2D_WIDTH = 56, A_SURF2D_HEIGHT = 57,
  A_SURF3D_WIDTH = 58, A_SURF3D_HEIGHT = 59, A_SURF3D_DEPTH = 60, A_SURF1D_LAYERED_WIDTH = 61,
  A_SURF1D_LAYERED_LAYERS = 62, A_SURF2D_LAYERED_WIDTH = 63, A_SURF2D_LAYERED_HEIGHT = 64,
  A_SURF2D_LAYERED_LAYERS = 65, A_SURFCUBE_WIDTH = 66, A_SURFCUBE_LAYERED_WIDTH = 67,
  A_SURFCUBE_LAYERED_LAYERS = 68, A_TEX1D_LINEAR_WIDTH = 69, A_TEX2D_LINEAR_WIDTH = 70,
  A_TEX2D_LINEAR_HEIGHT = 71, A_TEX2D_LINEAR_PITCH = 72, A_TEX2D_MIPMAPPED_WIDTH = 73,
  A_TEX2D_MIPMAPPED_HEIGHT = 74, A_TEX1D_MIPMAPPED_WIDTH = 77, A_STREAM_PRIORITIES = 78,
  A_GLOBAL_L1_CACHE = 79, A_LOCAL_L1_CACHE = 80, A_MULTI_GPU_BOARD_GROUP_ID = 85,
  A_HOST_NATIVE_ATOMIC = 86, A_SINGLE_TO_DOUBLE_PERF_RATIO = 87, A_PAGEABLE_MEMORY_ACCESS = 88,
  A_COMPUTE_PREEMPTION = 90, A_HOST_POINTER_FOR_REGISTERED_MEM = 91, A_STREAM_MEM_OPS_V1 = 92,
  A_STREAM_MEM_OPS_64_V1 = 93, A_STREAM_WAIT_VALUE_NOR_V1 = 94, A_COOP_MULTI_DEVICE = 96,
  A_CAN_FLUSH_REMOTE_WRITES = 98, A_HOST_REGISTER = 99, A_PAGEABLE_USES_HOST_PAGE_TABLES = 100,
  A_DIRECT_MANAGED_FROM_HOST = 101, A_VMM = 102, A_HANDLE_POSIX_FD = 103, A_HANDLE_WIN32 = 104,
  A_HANDLE_WIN32_KMT = 105, A_GENERIC_COMPRESSION = 107, A_MAX_PERSISTING_L2 = 108,
  A_MAX_ACCESS_POLICY_WINDOW = 109, A_RDMA_WITH_VMM = 110, A_RESERVED_SMEM_PER_BLOCK = 111,
  A_SPARSE_ARRAY = 112, A_READ_ONLY_HOST_REGISTER = 113, A_TIMELINE_SEMAPHORE = 114,
  A_RDMA = 116, A_RDMA_FLUSH_OPTIONS = 117, A_RDMA_WRITES_ORDERING = 118,
  A_MEMPOOL_HANDLE_TYPES = 119, A_DEFERRED_MAPPING = 121, A_STREAM_MEM_OPS_64 = 122,
  A_STREAM_WAIT_VALUE_NOR = 123, A_DMA_BUF = 124, A_IPC_EVENT = 125, A_MEM_SYNC_DOMAINS = 126,
  A_TENSOR_MAP_ACCESS = 127, A_HANDLE_FABRIC = 128, A_UNIFIED_FUNCTION_POINTERS = 129,
  A_NUMA_CONFIG = 130, A_NUMA_ID = 131, A_MULTICAST = 132, A_MPS_ENABLED = 133,
  A_HOST_NUMA_ID = 134, A_D3D12_CIG = 135, A_DECOMPRESS_MASK = 136, A_DECOMPRESS_MAX = 137,
  A_VULKAN_CIG = 138, A_GPU_PCI_DEVICE_ID = 139, A_GPU_PCI_SUBSYSTEM_ID = 140,
  A_HOST_NUMA_VMM = 141, A_HOST_NUMA_POOLS = 142, A_HOST_NUMA_MULTINODE_IPC = 143,
  A_HOST_POOLS = 144, A_HOST_VMM = 145, A_HOST_ALLOC_DMA_BUF = 146,
  A_ONLY_PARTIAL_HOST_ATOMIC = 147,
};

/* The attribute's value in *v, or false when the shim cannot tell it.
 * Three kinds: what the compute capability fixes (the programming guide's
 * limits, the same for every architecture 7.0 to 12.0 where no `l` is
 * read); what the shim offers or not (0 for a feature it lacks: what CUDA
 * says of a device without it); and what only the node's hardware knows
 * and the daemon does not say (clocks, memory bus, L2 size, ECC, PCI
 * location), answered 0, "not known", since the CUDA runtime's start-up
 * asks for each and fails when one fails (docs/cuda-driver.md). */
static bool attribute(int attrib, long long *v) {
  const cc_limits *l = limits();
  int cc = (int)(gl_cu.gpu.cc_major * 10 + gl_cu.gpu.cc_minor);
  long long r;
  switch (attrib) {
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: r = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: r = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: r = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: r = 64; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: r = 2147483647; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: r = 65535; break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: r = 65535; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: r = 49152; break;
  case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: r = 65536; break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: r = 32; break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: r = 65536; break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: r = 65536; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    if (!gl_cu.gpu.sm_count) return false;
    r = gl_cu.gpu.sm_count;
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: r = gl_cu.gpu.cc_major; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: r = gl_cu.gpu.cc_minor; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
    if (!l) return false;
    r = l->threads_per_sm;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
    if (!l) return false;
    r = l->blocks_per_sm;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
    if (!l) return false;
    r = l->smem_per_sm;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    if (!l) return false;
    r = l->smem_per_block_optin;
    break;
  case A_RESERVED_SMEM_PER_BLOCK:
    if (!l) return false;
    r = cc >= 80 ? 1024 : 0;
    break;
  case A_SINGLE_TO_DOUBLE_PERF_RATIO:
    if (!l) return false;
    /* The data-centre parts (x.0) run doubles at half rate; the others at 1/32 or 1/64. */
    r = gl_cu.gpu.cc_minor == 0 ? 2 : cc == 75 ? 32 : 64;
    break;
  case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: r = 1; break;
  case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: r = gl_cu.gpu.cc_major >= 9; break;
  case A_TENSOR_MAP_ACCESS: r = gl_cu.gpu.cc_major >= 9; break;
  case A_MEM_SYNC_DOMAINS: r = gl_cu.gpu.cc_major >= 9 ? 4 : 1; break;
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: r = 1; break;
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: r = 1; break;
  case CU_DEVICE_ATTRIBUTE_INTEGRATED: r = 0; break;
  case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: r = 0; break;
  case A_MULTI_GPU_BOARD_GROUP_ID: r = 0; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: r = 0; break; /* default: shared */
  case A_MAX_PITCH: r = 2147483647; break;
  case A_TEXTURE_ALIGNMENT: r = 512; break;
  case A_TEXTURE_PITCH_ALIGNMENT: r = 32; break;
  case A_SURFACE_ALIGNMENT: r = 512; break;
  case A_GPU_OVERLAP: r = 1; break;
  case A_GLOBAL_L1_CACHE: case A_LOCAL_L1_CACHE: r = 1; break;
  case A_COMPUTE_PREEMPTION: r = 1; break;
  /* Texture and surface limits (the same from 7.0 to 12.0). */
  case A_TEX1D_WIDTH: r = 131072; break;
  case A_TEX2D_WIDTH: r = 131072; break;
  case A_TEX2D_HEIGHT: r = 65536; break;
  case A_TEX3D_WIDTH: case A_TEX3D_HEIGHT: case A_TEX3D_DEPTH: r = 16384; break;
  case A_TEX3D_WIDTH_ALT: case A_TEX3D_HEIGHT_ALT: r = 8192; break;
  case A_TEX3D_DEPTH_ALT: r = 32768; break;
  case A_TEX2D_LAYERED_WIDTH: case A_TEX2D_LAYERED_HEIGHT: r = 32768; break;
  case A_TEX2D_LAYERED_LAYERS: case A_TEX1D_LAYERED_LAYERS: r = 2048; break;
  case A_TEX1D_LAYERED_WIDTH: r = 32768; break;
  case A_CAN_TEX2D_GATHER: r = 1; break;
  case A_TEX2D_GATHER_WIDTH: case A_TEX2D_GATHER_HEIGHT: r = 32768; break;
  case A_TEXCUBE_WIDTH: case A_TEXCUBE_LAYERED_WIDTH: r = 32768; break;
  case A_TEXCUBE_LAYERED_LAYERS: r = 2046; break;
  case A_SURF1D_WIDTH: case A_SURF2D_WIDTH: r = 32768; break;
  case A_SURF2D_HEIGHT: r = 65536; break;
  case A_SURF3D_WIDTH: case A_SURF3D_HEIGHT: r = 32768; break;
  case A_SURF3D_DEPTH: r = 16384; break;
  case A_SURF1D_LAYERED_WIDTH: r = 32768; break;
  case A_SURF1D_LAYERED_LAYERS: case A_SURF2D_LAYERED_LAYERS: r = 2048; break;
  case A_SURF2D_LAYERED_WIDTH: r = 32768; break;
  case A_SURF2D_LAYERED_HEIGHT: r = 32768; break;
  case A_SURFCUBE_WIDTH: case A_SURFCUBE_LAYERED_WIDTH: r = 32768; break;
  case A_SURFCUBE_LAYERED_LAYERS: r = 2046; break;
  case A_TEX1D_LINEAR_WIDTH: r = 268435456; break;
  case A_TEX2D_LINEAR_WIDTH: case A_TEX2D_LINEAR_HEIGHT: r = 131072; break;
  case A_TEX2D_LINEAR_PITCH: r = 2097120; break;
  case A_TEX2D_MIPMAPPED_WIDTH: r = 32768; break;
  case A_TEX2D_MIPMAPPED_HEIGHT: r = 32768; break;
  case A_TEX1D_MIPMAPPED_WIDTH: r = 32768; break;
  /* What the shim does not offer, said as the attribute. */
  case A_ASYNC_ENGINE_COUNT: r = 0; break;  /* copies and kernels run in one order */
  case A_STREAM_PRIORITIES: r = 0; break;   /* one priority */
  case A_HOST_REGISTER: r = 1; break;       /* cuMemHostRegister is taken */
  case A_KERNEL_EXEC_TIMEOUT: case A_TCC_DRIVER: case A_HOST_NATIVE_ATOMIC:
  case A_PAGEABLE_MEMORY_ACCESS: case A_HOST_POINTER_FOR_REGISTERED_MEM:
  case A_STREAM_MEM_OPS_V1: case A_STREAM_MEM_OPS_64_V1: case A_STREAM_WAIT_VALUE_NOR_V1:
  case A_COOP_MULTI_DEVICE: case A_CAN_FLUSH_REMOTE_WRITES: case A_PAGEABLE_USES_HOST_PAGE_TABLES:
  case A_DIRECT_MANAGED_FROM_HOST: case A_VMM: case A_HANDLE_POSIX_FD: case A_HANDLE_WIN32:
  case A_HANDLE_WIN32_KMT: case A_GENERIC_COMPRESSION: case A_MAX_PERSISTING_L2:
  case A_MAX_ACCESS_POLICY_WINDOW: case A_RDMA_WITH_VMM: case A_SPARSE_ARRAY:
  case A_READ_ONLY_HOST_REGISTER: case A_TIMELINE_SEMAPHORE: case A_RDMA: case A_RDMA_FLUSH_OPTIONS:
  case A_RDMA_WRITES_ORDERING: case A_MEMPOOL_HANDLE_TYPES: case A_DEFERRED_MAPPING:
  case A_STREAM_MEM_OPS_64: case A_STREAM_WAIT_VALUE_NOR: case A_DMA_BUF: case A_IPC_EVENT:
  case A_HANDLE_FABRIC: case A_UNIFIED_FUNCTION_POINTERS: case A_NUMA_CONFIG: case A_MULTICAST:
  case A_MPS_ENABLED: case A_D3D12_CIG: case A_DECOMPRESS_MASK: case A_DECOMPRESS_MAX:
  case A_VULKAN_CIG: case A_HOST_NUMA_VMM: case A_HOST_NUMA_POOLS: case A_HOST_NUMA_MULTINODE_IPC:
  case A_HOST_POOLS: case A_HOST_VMM: case A_HOST_ALLOC_DMA_BUF: case A_ONLY_PARTIAL_HOST_ATOMIC:
  case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: /* no mapped host memory */
  case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:      /* no cuMemAllocManaged */
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: /* no cuMemAllocAsync yet */
    r = 0;
    break;
  case A_NUMA_ID: case A_HOST_NUMA_ID: r = -1; break; /* no NUMA node */
  /* Only the node's hardware knows these; the daemon does not say: 0. */
  case A_CLOCK_RATE: case A_MEMORY_CLOCK_RATE: case A_GLOBAL_MEMORY_BUS_WIDTH:
  case A_L2_CACHE_SIZE: case A_ECC_ENABLED: case A_PCI_BUS_ID: case A_PCI_DEVICE_ID:
  case A_PCI_DOMAIN_ID: case A_GPU_PCI_DEVICE_ID: case A_GPU_PCI_SUBSYSTEM_ID:
    r = 0;
    break;
  default: return false;
  }
  *v = r;
  return true;
}

GL_CU_API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev);
CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  if (dev != 0) return gl_cu_leave(CUDA_ERROR_INVALID_DEVICE);
  long long v = 0;
  if (!attribute((int)attrib, &v)) {
    gl_cu_trace("cuDeviceGetAttribute %d: not known (CUDA_ERROR_NOT_SUPPORTED)", (int)attrib);
    char why[96];
    snprintf(why, sizeof why, "device attribute %d is not known to the shim", (int)attrib);
    gl_cu_unlock();
    return gl_cu_unsupported("cuDeviceGetAttribute", why);
  }
  *pi = (int)v;
  return gl_cu_leave(CUDA_SUCCESS);
}

/* The device is the node's, not on this machine's PCI bus: its location
 * is said as the attributes say it, 0000:00:00.0. */
GL_CU_API CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev);
CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev) {
  if (!pciBusId || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  if (dev != 0) return gl_cu_leave(CUDA_ERROR_INVALID_DEVICE);
  snprintf(pciBusId, (size_t)len, "0000:00:00.0");
  return gl_cu_leave(CUDA_SUCCESS);
}

/* A LUID is Windows' (WDDM): CUDA gives none on Linux. */
GL_CU_API CUresult cuDeviceGetLuid(char *luid, unsigned int *deviceNodeMask, CUdevice dev);
CUresult cuDeviceGetLuid(char *luid, unsigned int *deviceNodeMask, CUdevice dev) {
  (void)luid;
  (void)deviceNodeMask;
  (void)dev;
  return gl_cu_unsupported("cuDeviceGetLuid", "a LUID is Windows' (WDDM)");
}
