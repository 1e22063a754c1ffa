/*
 * test_cuda_abi.c - src/gpu/cuda_api.h against the real cuda.h.
 *
 * cuda_api.h declares its own copies of the CUDA driver API types,
 * constants and function signatures so gpulease builds without the
 * toolkit. Built only where cuda.h is found, this test proves the copies
 * are ABI-identical: every table entry's type is checked at compile time
 * against the function cuda.h declares (after cuda.h's own #define
 * mapping, e.g. cuMemAlloc -> cuMemAlloc_v2), and every constant at run
 * time against cuda_abi_ours.c (compiled without cuda.h).
 */
#include <cuda.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "gpu/cuda_api.h"
#include "unit/cuda_abi_list.h"

/* Field `f` of gl_cuda has the type of a pointer to cuda.h's function `f`.
 * Both names go through cuda.h's macros, so the versioned symbol the
 * unversioned name means in this CUDA version is what is compared. For
 * functions whose CUDA 12.0 ABI differs from the newest header's mapping,
 * name the 12.0 symbol explicitly. */
#define SAME(field, fn)                                                                    \
  _Static_assert(__builtin_types_compatible_p(__typeof__(((gl_cuda *)0)->field),           \
                                              __typeof__(&fn)),                             \
                 "gl_cuda." #field " does not match cuda.h's " #fn)

SAME(cuGetErrorName, cuGetErrorName);
SAME(cuGetErrorString, cuGetErrorString);
SAME(cuInit, cuInit);
SAME(cuDriverGetVersion, cuDriverGetVersion);
SAME(cuDeviceGetCount, cuDeviceGetCount);
SAME(cuDeviceGet, cuDeviceGet);
SAME(cuDeviceGetName, cuDeviceGetName);
SAME(cuDeviceGetUuid, cuDeviceGetUuid_v2);
SAME(cuDeviceTotalMem, cuDeviceTotalMem_v2);
SAME(cuDeviceGetAttribute, cuDeviceGetAttribute);
SAME(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain);
SAME(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2);
SAME(cuCtxGetCurrent, cuCtxGetCurrent);
SAME(cuCtxSetCurrent, cuCtxSetCurrent);
SAME(cuCtxSynchronize, cuCtxSynchronize);
SAME(cuCtxSetLimit, cuCtxSetLimit);
SAME(cuCtxGetLimit, cuCtxGetLimit);
SAME(cuMemAlloc, cuMemAlloc_v2);
SAME(cuMemFree, cuMemFree_v2);
SAME(cuMemcpyHtoD, cuMemcpyHtoD_v2);
SAME(cuMemcpyDtoH, cuMemcpyDtoH_v2);
SAME(cuMemsetD8, cuMemsetD8_v2);
SAME(cuStreamCreate, cuStreamCreate);
SAME(cuStreamDestroy, cuStreamDestroy_v2);
SAME(cuStreamSynchronize, cuStreamSynchronize);
SAME(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2);
SAME(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2);
SAME(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2);
SAME(cuMemHostRegister, cuMemHostRegister_v2);
SAME(cuMemHostUnregister, cuMemHostUnregister);
SAME(cuMemsetD8Async, cuMemsetD8Async);
SAME(cuMemsetD16Async, cuMemsetD16Async);
SAME(cuMemsetD32Async, cuMemsetD32Async);
SAME(cuModuleLoadDataEx, cuModuleLoadDataEx);
SAME(cuModuleUnload, cuModuleUnload);
SAME(cuModuleGetFunction, cuModuleGetFunction);
SAME(cuFuncGetAttribute, cuFuncGetAttribute);
SAME(cuLaunchKernel, cuLaunchKernel);
SAME(cuEventCreate, cuEventCreate);
SAME(cuEventRecord, cuEventRecord);
SAME(cuEventSynchronize, cuEventSynchronize);
SAME(cuEventElapsedTime, cuEventElapsedTime); /* v1 and v2 share the signature */
SAME(cuEventDestroy, cuEventDestroy_v2);
SAME(cuLinkCreate, cuLinkCreate_v2);
SAME(cuLinkAddData, cuLinkAddData_v2);
SAME(cuLinkComplete, cuLinkComplete);
SAME(cuLinkDestroy, cuLinkDestroy);
SAME(cuFuncGetParamInfo, cuFuncGetParamInfo);
SAME(cuEventQuery, cuEventQuery);
SAME(cuLaunchKernelEx, cuLaunchKernelEx);
SAME(cuFuncSetAttribute, cuFuncSetAttribute);
SAME(cuOccupancyMaxActiveBlocksPerMultiprocessor, cuOccupancyMaxActiveBlocksPerMultiprocessor);
SAME(cuOccupancyMaxPotentialClusterSize, cuOccupancyMaxPotentialClusterSize);
SAME(cuStreamBeginCapture, cuStreamBeginCapture_v2);
SAME(cuStreamEndCapture, cuStreamEndCapture);
SAME(cuGraphCreate, cuGraphCreate);
SAME(cuGraphAddKernelNode, cuGraphAddKernelNode_v2);
SAME(cuGraphGetNodes, cuGraphGetNodes);
SAME(cuGraphNodeGetType, cuGraphNodeGetType);
SAME(cuGraphKernelNodeGetParams, cuGraphKernelNodeGetParams_v2);
SAME(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags);
SAME(cuGraphExecKernelNodeSetParams, cuGraphExecKernelNodeSetParams_v2);
SAME(cuGraphLaunch, cuGraphLaunch);
SAME(cuGraphExecDestroy, cuGraphExecDestroy);
SAME(cuGraphDestroy, cuGraphDestroy);
SAME(cuGraphAddNode, cuGraphAddNode_v2); /* the field's name is mapped to _v2 too */
SAME(cuGraphConditionalHandleCreate, cuGraphConditionalHandleCreate);
SAME(cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph);
SAME(cuTensorMapEncodeTiled, cuTensorMapEncodeTiled);

extern const long long gl_abi_ours[];
extern const size_t gl_abi_ours_count;

#define THEIRS(c) (long long)(c),
#define NAME(c) #c,
static const long long k_theirs[] = {GL_CUDA_ABI_CONSTANTS(THEIRS)};
static const char *const k_names[] = {GL_CUDA_ABI_CONSTANTS(NAME)};

static void test_constants(void **state) {
  (void)state;
  assert_int_equal(gl_abi_ours_count, sizeof k_theirs / sizeof k_theirs[0]);
  for (size_t i = 0; i < gl_abi_ours_count; i++) {
    if (gl_abi_ours[i] != k_theirs[i])
      fail_msg("%s: ours %lld, cuda.h %lld", k_names[i], gl_abi_ours[i], k_theirs[i]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_constants)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
