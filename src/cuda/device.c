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

/* The attribute's value, or -1 when the shim cannot tell it. */
static long long attribute(int attrib) {
  const cc_limits *l = limits();
  switch (attrib) {
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
  case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 65536;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    return gl_cu.gpu.sm_count ? (long long)gl_cu.gpu.sm_count : -1;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return gl_cu.gpu.cc_major;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return gl_cu.gpu.cc_minor;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return l ? l->threads_per_sm : -1;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return l ? l->blocks_per_sm : -1;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return l ? l->smem_per_sm : -1;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    return l ? l->smem_per_block_optin : -1;
  case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
  case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: return gl_cu.gpu.cc_major >= 9;
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
  case CU_DEVICE_ATTRIBUTE_INTEGRATED: return 0;
  case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: return 0;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: return 0;           /* default: shared */
  /* What the shim does not offer, said as the attribute. */
  case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 0;    /* no mapped host memory */
  case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 0;         /* no cuMemAllocManaged */
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 0;
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 0; /* no cuMemAllocAsync yet */
  default: return -1;
  }
}

GL_CU_API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev);
CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  if (dev != 0) return gl_cu_leave(CUDA_ERROR_INVALID_DEVICE);
  long long v = attribute((int)attrib);
  if (v < 0) {
    char why[96];
    snprintf(why, sizeof why, "device attribute %d is not known to the shim", (int)attrib);
    gl_cu_unlock();
    return gl_cu_unsupported("cuDeviceGetAttribute", why);
  }
  *pi = (int)v;
  return gl_cu_leave(CUDA_SUCCESS);
}
