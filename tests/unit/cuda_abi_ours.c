/* cuda_abi_ours.c - our side of test_cuda_abi.c: the constants of
 * src/gpu/cuda_api.h, without cuda.h. */
#include <stddef.h>

#include "gpu/cuda_api.h"
#include "unit/cuda_abi_list.h"

#define OURS(c) (long long)(c),
const long long gl_abi_ours[] = {GL_CUDA_ABI_CONSTANTS(OURS)};
const size_t gl_abi_ours_count = sizeof gl_abi_ours / sizeof gl_abi_ours[0];
