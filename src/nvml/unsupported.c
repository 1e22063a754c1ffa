/*
 * unsupported.c - every entry point of the NVML library that the shim
 * does not implement (unsupported.def): it answers NVML_ERROR_NOT_SUPPORTED
 * and says once on stderr which call it was, so that a program or a
 * binding that looks every name up (nvidia-ml-py, nvidia-smi) loads, and
 * gets NVML's own answer for a feature the device lacks. The stubs read
 * no argument, so one definition fits every signature; this file sees no
 * NVML prototype.
 */
#include "nvml/nv.h"

#define GL_NV_STUB(name)                                  \
  GL_NV_API int name(void);                               \
  int name(void) {                                        \
    static atomic_bool said;                              \
    return (int)gl_nv_unsupported(#name, &said, NULL);    \
  }
#include "nvml/unsupported.def"
