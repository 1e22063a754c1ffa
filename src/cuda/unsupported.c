/*
 * unsupported.c - every entry point of the CUDA driver that the shim does
 * not implement (unsupported.def): it answers CUDA_ERROR_NOT_SUPPORTED and
 * says once on stderr which call it was, so that a program linked against
 * libcuda.so.1 loads, and fails clearly, never silently, where it calls
 * one. The stubs read no argument, so one definition fits every
 * signature; this file sees no CUDA prototype.
 */
#include "cuda/cu.h"

#define GL_CU_STUB(name)                                              \
  __attribute__((visibility("default"))) int name(void);            \
  int name(void) { return gl_cu_unsupported(#name, NULL); }
#include "cuda/unsupported.def"
