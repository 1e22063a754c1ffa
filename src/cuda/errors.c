/*
 * errors.c - cuGetErrorName and cuGetErrorString: every CUresult of CUDA
 * 12/13 by its name, with a description of our own.
 */
#include <stddef.h>

#include "cuda/cu.h"

typedef struct err_entry {
  int code;
  const char *name;
  const char *text;
} err_entry;

#define E(code, name, text) {code, name, text},
static const err_entry ERRORS[] = {
    E(0, "CUDA_SUCCESS", "no error")
    E(1, "CUDA_ERROR_INVALID_VALUE", "an argument is out of range or invalid")
    E(2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory (the lease's VRAM or the node's)")
    E(3, "CUDA_ERROR_NOT_INITIALIZED", "cuInit has not been called")
    E(4, "CUDA_ERROR_DEINITIALIZED", "the driver is shutting down")
    E(5, "CUDA_ERROR_PROFILER_DISABLED", "profiler disabled")
    E(6, "CUDA_ERROR_PROFILER_NOT_INITIALIZED", "profiler not initialized")
    E(7, "CUDA_ERROR_PROFILER_ALREADY_STARTED", "profiler already started")
    E(8, "CUDA_ERROR_PROFILER_ALREADY_STOPPED", "profiler already stopped")
    E(34, "CUDA_ERROR_STUB_LIBRARY", "a stub library was loaded instead of a driver")
    E(36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", "the call needs a newer driver")
    E(46, "CUDA_ERROR_DEVICE_UNAVAILABLE",
      "the device is unavailable (the lease ended, or its daemon cannot be reached)")
    E(100, "CUDA_ERROR_NO_DEVICE", "no device: no lease, or its daemon has none")
    E(101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal")
    E(102, "CUDA_ERROR_DEVICE_NOT_LICENSED", "device not licensed")
    E(200, "CUDA_ERROR_INVALID_IMAGE", "the module image is not valid")
    E(201, "CUDA_ERROR_INVALID_CONTEXT", "invalid context")
    E(202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT", "context already current")
    E(205, "CUDA_ERROR_MAP_FAILED", "mapping failed")
    E(206, "CUDA_ERROR_UNMAP_FAILED", "unmapping failed")
    E(207, "CUDA_ERROR_ARRAY_IS_MAPPED", "array is mapped")
    E(208, "CUDA_ERROR_ALREADY_MAPPED", "already mapped")
    E(209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "the image has no code for the device")
    E(210, "CUDA_ERROR_ALREADY_ACQUIRED", "already acquired")
    E(211, "CUDA_ERROR_NOT_MAPPED", "not mapped")
    E(212, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY", "not mapped as an array")
    E(213, "CUDA_ERROR_NOT_MAPPED_AS_POINTER", "not mapped as a pointer")
    E(214, "CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error")
    E(215, "CUDA_ERROR_UNSUPPORTED_LIMIT", "limit not supported")
    E(216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE", "context already in use")
    E(217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access not supported")
    E(218, "CUDA_ERROR_INVALID_PTX", "the PTX could not be compiled")
    E(219, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT", "invalid graphics context")
    E(220, "CUDA_ERROR_NVLINK_UNCORRECTABLE", "uncorrectable NVLink error")
    E(221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "no PTX JIT compiler")
    E(222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the PTX version is newer than the node takes")
    E(223, "CUDA_ERROR_JIT_COMPILATION_DISABLED", "PTX JIT compilation disabled")
    E(224, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY", "execution affinity not supported")
    E(225, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC", "device-side synchronisation not supported")
    E(226, "CUDA_ERROR_CONTAINED", "an error contained by the device")
    E(300, "CUDA_ERROR_INVALID_SOURCE", "invalid source")
    E(301, "CUDA_ERROR_FILE_NOT_FOUND", "file not found")
    E(302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND", "shared object symbol not found")
    E(303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED", "shared object initialisation failed")
    E(304, "CUDA_ERROR_OPERATING_SYSTEM", "an operating system call failed")
    E(400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle")
    E(401, "CUDA_ERROR_ILLEGAL_STATE", "the resource is in an illegal state")
    E(402, "CUDA_ERROR_LOSSY_QUERY", "lossy query")
    E(500, "CUDA_ERROR_NOT_FOUND", "named symbol not found")
    E(600, "CUDA_ERROR_NOT_READY", "not ready yet")
    E(700, "CUDA_ERROR_ILLEGAL_ADDRESS", "a kernel accessed an illegal memory address")
    E(701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources asked for the launch")
    E(702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the kernel ran past the device's time limit")
    E(703, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING", "incompatible texturing")
    E(704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access already enabled")
    E(705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", "peer access not enabled")
    E(708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", "primary context already active")
    E(709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "the context is destroyed")
    E(710, "CUDA_ERROR_ASSERT", "a device-side assert failed")
    E(711, "CUDA_ERROR_TOO_MANY_PEERS", "too many peers")
    E(712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "host memory already registered")
    E(713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "host memory not registered")
    E(714, "CUDA_ERROR_HARDWARE_STACK_ERROR", "a kernel's hardware stack failed")
    E(715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "a kernel ran an illegal instruction")
    E(716, "CUDA_ERROR_MISALIGNED_ADDRESS", "a kernel used a misaligned address")
    E(717, "CUDA_ERROR_INVALID_ADDRESS_SPACE", "a kernel used the wrong address space")
    E(718, "CUDA_ERROR_INVALID_PC", "a kernel's program counter went invalid")
    E(719, "CUDA_ERROR_LAUNCH_FAILED", "a kernel failed")
    E(720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
      "the cooperative grid cannot be resident at once")
    E(721, "CUDA_ERROR_TENSOR_MEMORY_LEAK", "tensor memory was not freed")
    E(800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted")
    E(801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported (by the gpulease CUDA driver)")
    E(802, "CUDA_ERROR_SYSTEM_NOT_READY", "system not ready")
    E(803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "driver and kernel module versions differ")
    E(804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "forward compatibility not supported")
    E(805, "CUDA_ERROR_MPS_CONNECTION_FAILED", "MPS connection failed")
    E(806, "CUDA_ERROR_MPS_RPC_FAILURE", "MPS RPC failure")
    E(807, "CUDA_ERROR_MPS_SERVER_NOT_READY", "MPS server not ready")
    E(808, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED", "MPS client limit reached")
    E(809, "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED", "MPS connection limit reached")
    E(810, "CUDA_ERROR_MPS_CLIENT_TERMINATED", "MPS client terminated")
    E(811, "CUDA_ERROR_CDP_NOT_SUPPORTED", "dynamic parallelism not supported")
    E(812, "CUDA_ERROR_CDP_VERSION_MISMATCH", "dynamic parallelism version mismatch")
    E(900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "not allowed while the stream captures")
    E(901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "the stream capture was invalidated")
    E(902, "CUDA_ERROR_STREAM_CAPTURE_MERGE", "stream capture merge not allowed")
    E(903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", "the capture was not begun in this stream")
    E(904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", "the capture did not rejoin its origin stream")
    E(905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION", "dependency across a capture boundary")
    E(906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", "implicit dependency on a capturing stream")
    E(907, "CUDA_ERROR_CAPTURED_EVENT", "the event was captured")
    E(908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", "capture begun on another thread")
    E(909, "CUDA_ERROR_TIMEOUT", "timed out")
    E(910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE", "the graph update was not applied")
    E(911, "CUDA_ERROR_EXTERNAL_DEVICE", "an external device failed")
    E(912, "CUDA_ERROR_INVALID_CLUSTER_SIZE", "invalid cluster size")
    E(913, "CUDA_ERROR_FUNCTION_NOT_LOADED", "the function is not loaded")
    E(914, "CUDA_ERROR_INVALID_RESOURCE_TYPE", "invalid resource type")
    E(915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION", "invalid resource configuration")
    E(916, "CUDA_ERROR_KEY_ROTATION", "key rotation")
    E(999, "CUDA_ERROR_UNKNOWN", "unknown error")
};
#undef E

static const err_entry *find(CUresult error) {
  for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++)
    if (ERRORS[i].code == (int)error) return &ERRORS[i];
  return NULL;
}

__attribute__((visibility("default"))) CUresult cuGetErrorName(CUresult error, const char **pStr);
CUresult cuGetErrorName(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const err_entry *e = find(error);
  *pStr = e ? e->name : NULL;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

__attribute__((visibility("default"))) CUresult cuGetErrorString(CUresult error,
                                                                 const char **pStr);
CUresult cuGetErrorString(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const err_entry *e = find(error);
  *pStr = e ? e->text : NULL;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
