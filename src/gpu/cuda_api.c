/* cuda_api.c - see cuda_api.h. */
#include "gpu/cuda_api.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define GL_CUDA_LIBRARY "libcuda.so.1"

/* cuGetProcAddress_v2 (CUDA 12.0+). */
typedef CUresult (*gl_get_proc_fn)(const char *symbol, void **pfn, int cuda_version,
                                   cuuint64_t flags, CUdriverProcAddressQueryResult *status);

/* One entry point: the name cuGetProcAddress knows it by, the exported
 * symbol to dlsym() when cuGetProcAddress is missing or refuses, and where
 * it goes in the table. */
typedef struct sym {
  const char *name;
  const char *exported;
  size_t offset;
  int abi_version; /* the CUDA version whose ABI we ask for */
  int optional;    /* may be missing: the field stays NULL */
} sym;

#define SYM(field, exported) {#field, exported, offsetof(gl_cuda, field), GL_CUDA_ABI_VERSION, 0}
#define OPT(field, exported, version) {#field, exported, offsetof(gl_cuda, field), version, 1}

static const sym k_syms[] = {
    SYM(cuGetErrorName, "cuGetErrorName"),
    SYM(cuGetErrorString, "cuGetErrorString"),
    SYM(cuInit, "cuInit"),
    SYM(cuDriverGetVersion, "cuDriverGetVersion"),
    SYM(cuDeviceGetCount, "cuDeviceGetCount"),
    SYM(cuDeviceGet, "cuDeviceGet"),
    SYM(cuDeviceGetName, "cuDeviceGetName"),
    SYM(cuDeviceGetUuid, "cuDeviceGetUuid_v2"),
    SYM(cuDeviceTotalMem, "cuDeviceTotalMem_v2"),
    SYM(cuDeviceGetAttribute, "cuDeviceGetAttribute"),
    SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    SYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    SYM(cuCtxGetCurrent, "cuCtxGetCurrent"),
    SYM(cuCtxSetCurrent, "cuCtxSetCurrent"),
    SYM(cuCtxSynchronize, "cuCtxSynchronize"),
    SYM(cuCtxSetLimit, "cuCtxSetLimit"),
    SYM(cuCtxGetLimit, "cuCtxGetLimit"),
    SYM(cuMemAlloc, "cuMemAlloc_v2"),
    SYM(cuMemFree, "cuMemFree_v2"),
    SYM(cuMemcpyHtoD, "cuMemcpyHtoD_v2"),
    SYM(cuMemcpyDtoH, "cuMemcpyDtoH_v2"),
    SYM(cuMemsetD8, "cuMemsetD8_v2"),
    SYM(cuMemHostRegister, "cuMemHostRegister_v2"),
    SYM(cuMemHostUnregister, "cuMemHostUnregister"),
    SYM(cuStreamCreate, "cuStreamCreate"),
    SYM(cuStreamDestroy, "cuStreamDestroy_v2"),
    SYM(cuStreamSynchronize, "cuStreamSynchronize"),
    SYM(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
    SYM(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
    SYM(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
    SYM(cuMemsetD8Async, "cuMemsetD8Async"),
    SYM(cuMemsetD16Async, "cuMemsetD16Async"),
    SYM(cuMemsetD32Async, "cuMemsetD32Async"),
    SYM(cuModuleLoadDataEx, "cuModuleLoadDataEx"),
    SYM(cuModuleUnload, "cuModuleUnload"),
    SYM(cuModuleGetFunction, "cuModuleGetFunction"),
    SYM(cuFuncGetAttribute, "cuFuncGetAttribute"),
    SYM(cuLaunchKernel, "cuLaunchKernel"),
    SYM(cuLaunchKernelEx, "cuLaunchKernelEx"),
    SYM(cuFuncSetAttribute, "cuFuncSetAttribute"),
    SYM(cuOccupancyMaxActiveBlocksPerMultiprocessor,
        "cuOccupancyMaxActiveBlocksPerMultiprocessor"),
    SYM(cuOccupancyMaxPotentialClusterSize, "cuOccupancyMaxPotentialClusterSize"),
    SYM(cuStreamBeginCapture, "cuStreamBeginCapture_v2"),
    SYM(cuStreamEndCapture, "cuStreamEndCapture"),
    SYM(cuGraphCreate, "cuGraphCreate"),
    SYM(cuGraphAddKernelNode, "cuGraphAddKernelNode_v2"),
    SYM(cuGraphGetNodes, "cuGraphGetNodes"),
    SYM(cuGraphNodeGetType, "cuGraphNodeGetType"),
    SYM(cuGraphKernelNodeGetParams, "cuGraphKernelNodeGetParams_v2"),
    SYM(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags"),
    SYM(cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams_v2"),
    SYM(cuGraphLaunch, "cuGraphLaunch"),
    SYM(cuGraphExecDestroy, "cuGraphExecDestroy"),
    SYM(cuGraphDestroy, "cuGraphDestroy"),
    SYM(cuEventCreate, "cuEventCreate"),
    SYM(cuEventRecord, "cuEventRecord"),
    SYM(cuEventSynchronize, "cuEventSynchronize"),
    SYM(cuEventQuery, "cuEventQuery"),
    SYM(cuEventElapsedTime, "cuEventElapsedTime"),
    SYM(cuEventDestroy, "cuEventDestroy_v2"),
    SYM(cuLinkCreate, "cuLinkCreate_v2"),
    SYM(cuLinkAddData, "cuLinkAddData_v2"),
    SYM(cuLinkComplete, "cuLinkComplete"),
    SYM(cuLinkDestroy, "cuLinkDestroy"),
    OPT(cuFuncGetParamInfo, "cuFuncGetParamInfo", 12040),
    OPT(cuGraphAddNode, "cuGraphAddNode_v2", 12030),
    OPT(cuGraphConditionalHandleCreate, "cuGraphConditionalHandleCreate", 12030),
    OPT(cuStreamBeginCaptureToGraph, "cuStreamBeginCaptureToGraph", 12030),
    OPT(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled", 12000),
};

/* dlsym returns void *; converting that to a function pointer is what POSIX
 * guarantees works. The table's fields are function pointers of differing
 * types, so they are stored through a memcpy of the pointer value. */
static void store_fn(gl_cuda *cu, size_t offset, void *fn) {
  memcpy((char *)cu + offset, &fn, sizeof fn);
}

static void *resolve(void *dl, gl_get_proc_fn get_proc, const sym *s) {
  if (get_proc) {
    void *fn = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = get_proc(s->name, &fn, s->abi_version,
                          (cuuint64_t)CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st);
    if (r == CUDA_SUCCESS && st == CU_GET_PROC_ADDRESS_SUCCESS && fn) return fn;
  }
  return dlsym(dl, s->exported);
}

int gl_cuda_load(gl_cuda *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  void *dl = dlopen(GL_CUDA_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char *why = dlerror();
    if (err && errlen)
      snprintf(err, errlen, "CUDA driver not available: %s", why ? why : GL_CUDA_LIBRARY);
    return -1;
  }
  gl_get_proc_fn get_proc = NULL;
  void *gp = dlsym(dl, "cuGetProcAddress_v2");
  if (gp) memcpy(&get_proc, &gp, sizeof get_proc);

  gl_cuda cu;
  memset(&cu, 0, sizeof cu);
  for (size_t i = 0; i < sizeof k_syms / sizeof k_syms[0]; i++) {
    void *fn = resolve(dl, get_proc, &k_syms[i]);
    if (!fn && k_syms[i].optional) continue;
    if (!fn) {
      if (err && errlen)
        snprintf(err, errlen,
                 "CUDA driver not usable: %s lacks %s (driver too old? CUDA 12.0 or newer is "
                 "required)",
                 GL_CUDA_LIBRARY, k_syms[i].exported);
      /* The handle is deliberately not closed: unloading libcuda after a
       * partial load is not supported by the driver. */
      return -1;
    }
    store_fn(&cu, k_syms[i].offset, fn);
  }
  cu.dl = dl;
  int version = 0;
  if (cu.cuDriverGetVersion(&version) == CUDA_SUCCESS) cu.driver_version = version;
  /* An optional entry point newer than the driver: what an older driver
   * serves under its name (cuGetProcAddress's best match, or dlsym's) may
   * have another signature. */
  for (size_t i = 0; i < sizeof k_syms / sizeof k_syms[0]; i++)
    if (k_syms[i].optional && k_syms[i].abi_version > cu.driver_version)
      store_fn(&cu, k_syms[i].offset, NULL);
  *out = cu;
  return 0;
}

const char *gl_cuda_error_name(const gl_cuda *cu, CUresult r, char *buf, size_t buflen) {
  const char *name = NULL;
  if (cu && cu->cuGetErrorName && cu->cuGetErrorName(r, &name) != CUDA_SUCCESS) name = NULL;
  if (name)
    snprintf(buf, buflen, "%s", name);
  else
    snprintf(buf, buflen, "CUDA_ERROR_%d", (int)r);
  return buf;
}

const char *gl_cuda_error_string(const gl_cuda *cu, CUresult r) {
  const char *s = NULL;
  if (cu && cu->cuGetErrorString && cu->cuGetErrorString(r, &s) != CUDA_SUCCESS) s = NULL;
  return s ? s : "unknown error";
}

void gl_cuda_uuid_format(const CUuuid *uuid, char *out, size_t outlen) {
  const unsigned char *b = (const unsigned char *)uuid->bytes;
  snprintf(out, outlen,
           "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
           b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
           b[14], b[15]);
}
