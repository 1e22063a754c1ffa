/*
 * cuda_abi_list.h - the constants of src/gpu/cuda_api.h that must equal
 * cuda.h's, as an X-macro list. test_cuda_abi.c expands it once against
 * cuda.h and cuda_abi_ours.c once against our header.
 */
#define GL_CUDA_ABI_CONSTANTS(X)                                                               \
  X(CUDA_SUCCESS)                                                                              \
  X(CUDA_ERROR_INVALID_VALUE)                                                                  \
  X(CUDA_ERROR_OUT_OF_MEMORY)                                                                  \
  X(CUDA_ERROR_NOT_INITIALIZED)                                                                \
  X(CUDA_ERROR_DEINITIALIZED)                                                                  \
  X(CUDA_ERROR_NO_DEVICE)                                                                      \
  X(CUDA_ERROR_INVALID_DEVICE)                                                                 \
  X(CUDA_ERROR_ECC_UNCORRECTABLE)                                                              \
  X(CUDA_ERROR_NOT_FOUND)                                                                      \
  X(CUDA_ERROR_ILLEGAL_ADDRESS)                                                                \
  X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)                                                        \
  X(CUDA_ERROR_LAUNCH_TIMEOUT)                                                                 \
  X(CUDA_ERROR_CONTEXT_IS_DESTROYED)                                                           \
  X(CUDA_ERROR_ASSERT)                                                                         \
  X(CUDA_ERROR_HARDWARE_STACK_ERROR)                                                           \
  X(CUDA_ERROR_ILLEGAL_INSTRUCTION)                                                            \
  X(CUDA_ERROR_MISALIGNED_ADDRESS)                                                             \
  X(CUDA_ERROR_INVALID_ADDRESS_SPACE)                                                          \
  X(CUDA_ERROR_INVALID_PC)                                                                     \
  X(CUDA_ERROR_LAUNCH_FAILED)                                                                  \
  X(CUDA_ERROR_UNKNOWN)                                                                        \
  X(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)                                                 \
  X(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)                                                  \
  X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)                                              \
  X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)                                              \
  X(CU_JIT_WALL_TIME)                                                                          \
  X(CU_JIT_INFO_LOG_BUFFER)                                                                    \
  X(CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)                                                         \
  X(CU_JIT_ERROR_LOG_BUFFER)                                                                   \
  X(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)                                                        \
  X(CU_JIT_TARGET_FROM_CUCONTEXT)                                                              \
  X(CU_JIT_LOG_VERBOSE)                                                                        \
  X(CU_EVENT_DEFAULT)                                                                          \
  X(CU_STREAM_DEFAULT)                                                                         \
  X(CU_STREAM_NON_BLOCKING)                                                                    \
  X(CU_LIMIT_STACK_SIZE)                                                                       \
  X(CU_LIMIT_PRINTF_FIFO_SIZE)                                                                 \
  X(CU_LIMIT_MALLOC_HEAP_SIZE)                                                                 \
  X(CU_JIT_INPUT_CUBIN)                                                                        \
  X(CU_JIT_INPUT_PTX)                                                                          \
  X(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)                                                   \
  X(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)                                                       \
  X(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)                                                        \
  X(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)                                                        \
  X(CU_FUNC_ATTRIBUTE_NUM_REGS)                                                                \
  X(CU_FUNC_ATTRIBUTE_PTX_VERSION)                                                             \
  X(CU_FUNC_ATTRIBUTE_BINARY_VERSION)                                                          \
  X(CU_GET_PROC_ADDRESS_LEGACY_STREAM)                                                         \
  X(CU_GET_PROC_ADDRESS_SUCCESS)                                                               \
  X(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)                                                      \
  X(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)                                                \
  X(sizeof(CUresult))                                                                          \
  X(sizeof(CUdevice))                                                                          \
  X(sizeof(CUdeviceptr))                                                                       \
  X(sizeof(CUuuid))                                                                            \
  X(sizeof(CUjit_option))                                                                      \
  X(sizeof(CUdevice_attribute))                                                                \
  X(sizeof(CUjitInputType))                                                                    \
  X(sizeof(CUfunction_attribute))                                                              \
  X(sizeof(CUlimit))
