/*
 * init.c - placeholder while the shim is written (replaced in this change).
 */
#include "gpu/cuda_api.h"

__attribute__((visibility("default"))) CUresult cuInit(unsigned int flags);
CUresult cuInit(unsigned int flags) {
  (void)flags;
  return CUDA_ERROR_NOT_SUPPORTED;
}
