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
  X(sizeof(CUlimit))                                                                         \
  X(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)                                                 \
  X(CUDA_ERROR_NOT_SUPPORTED)                                                                \
  X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)                                                   \
  X(CUDA_ERROR_INVALID_CLUSTER_SIZE)                                                         \
  X(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)                                      \
  X(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)                                                  \
  X(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)                                   \
  X(CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)                                                      \
  X(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)                                         \
  X(CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET)                                              \
  X(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH)                                                \
  X(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT)                                               \
  X(CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH)                                                \
  X(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED)                                     \
  X(CU_LAUNCH_ATTRIBUTE_COOPERATIVE)                                                         \
  X(CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)                                                   \
  X(CU_GRAPH_NODE_TYPE_KERNEL)                                                               \
  X(CU_GRAPH_NODE_TYPE_MEMCPY)                                                               \
  X(CU_GRAPH_NODE_TYPE_MEMSET)                                                               \
  X(CU_GRAPH_NODE_TYPE_EMPTY)                                                                \
  X(CU_STREAM_CAPTURE_MODE_GLOBAL)                                                           \
  X(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)                                                     \
  X(CU_STREAM_CAPTURE_MODE_RELAXED)                                                          \
  X(sizeof(CUlaunchAttribute))                                                               \
  X(sizeof(CUlaunchAttributeValue))                                                          \
  X(sizeof(CUlaunchConfig))                                                                  \
  X(offsetof(CUlaunchAttribute, value))                                                      \
  X(offsetof(CUlaunchConfig, hStream))                                                       \
  X(offsetof(CUlaunchConfig, attrs))                                                         \
  X(offsetof(CUlaunchConfig, numAttrs))                                                      \
  X(sizeof(CUDA_KERNEL_NODE_PARAMS))                                                         \
  X(offsetof(CUDA_KERNEL_NODE_PARAMS, kernelParams))                                         \
  X(offsetof(CUDA_KERNEL_NODE_PARAMS, kern))                                                 \
  X(offsetof(CUDA_KERNEL_NODE_PARAMS, ctx))                                                  \
  X(sizeof(CUgraphNodeType))                                                                 \
  X(sizeof(CUstreamCaptureMode))                                                             \
  X(CU_GRAPH_NODE_TYPE_CONDITIONAL)                                                          \
  X(CU_GRAPH_COND_ASSIGN_DEFAULT)                                                            \
  X(CU_GRAPH_COND_TYPE_IF)                                                                   \
  X(CU_GRAPH_COND_TYPE_WHILE)                                                                \
  X(sizeof(CUgraphConditionalHandle))                                                        \
  X(sizeof(CUgraphConditionalNodeType))                                                      \
  X(sizeof(CUDA_CONDITIONAL_NODE_PARAMS))                                                    \
  X(offsetof(CUDA_CONDITIONAL_NODE_PARAMS, type))                                            \
  X(offsetof(CUDA_CONDITIONAL_NODE_PARAMS, size))                                            \
  X(offsetof(CUDA_CONDITIONAL_NODE_PARAMS, phGraph_out))                                     \
  X(offsetof(CUDA_CONDITIONAL_NODE_PARAMS, ctx))                                             \
  X(sizeof(CUgraphEdgeData))                                                                 \
  X(offsetof(CUgraphEdgeData, to_port))                                                      \
  X(offsetof(CUgraphEdgeData, type))                                                         \
  X(offsetof(CUgraphEdgeData, reserved))                                                     \
  X(sizeof(CUgraphNodeParams))                                                               \
  X(offsetof(CUgraphNodeParams, reserved0))                                                  \
  X(offsetof(CUgraphNodeParams, conditional))                                                \
  X(offsetof(CUgraphNodeParams, reserved2))                                                  \
  X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)                                                   \
  X(sizeof(CUtensorMap))                                                                     \
  X(_Alignof(CUtensorMap))                                                                   \
  X(sizeof(CUtensorMapDataType))                                                             \
  X(CU_TENSOR_MAP_DATA_TYPE_UINT8)                                                           \
  X(CU_TENSOR_MAP_DATA_TYPE_FLOAT16)                                                         \
  X(CU_TENSOR_MAP_DATA_TYPE_FLOAT32)                                                         \
  X(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16)                                                        \
  X(CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ)                                                    \
  X(CU_TENSOR_MAP_INTERLEAVE_NONE)                                                           \
  X(CU_TENSOR_MAP_INTERLEAVE_32B)                                                            \
  X(CU_TENSOR_MAP_SWIZZLE_NONE)                                                              \
  X(CU_TENSOR_MAP_SWIZZLE_128B)                                                              \
  X(CU_TENSOR_MAP_L2_PROMOTION_NONE)                                                         \
  X(CU_TENSOR_MAP_L2_PROMOTION_L2_256B)                                                      \
  X(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)                                                       \
  X(CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
