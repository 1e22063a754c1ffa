/*
 * proc.c - the table behind cuGetProcAddress (getproc.c), which takes
 * an API name without its version ("cuMemAlloc"), the CUDA version the
 * caller was built for and whether it uses the per-thread default stream;
 * it answers the exported symbol of the newest ABI of that name that the
 * version has (cuMemAlloc_v2 from 3.2 on), its _ptds/_ptsz variant where
 * asked and there is one. Every entry point is in the table: those the
 * shim implements (implemented.def) and its NOT_SUPPORTED stubs
 * (unsupported.def). This file sees no CUDA prototype, only the symbols'
 * addresses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cu.h"

/* The table sees no prototypes: only the symbols' addresses. */
#define GL_CU_IMPL(name) extern void name(void);
#define GL_CU_STUB(name) extern void name(void);
#include "cuda/implemented.def"
#include "cuda/unsupported.def"
#undef GL_CU_IMPL
#undef GL_CU_STUB

typedef struct proc_entry {
  const char *name;
  void (*fn)(void);
  bool stub;
} proc_entry;

#define GL_CU_IMPL(name) {#name, name, false},
#define GL_CU_STUB(name) {#name, name, true},
static const proc_entry TABLE[] = {
#include "cuda/implemented.def"
#include "cuda/unsupported.def"
};
#undef GL_CU_IMPL
#undef GL_CU_STUB

#define TABLE_LEN (sizeof TABLE / sizeof TABLE[0])

/* The CUDA version that introduced a versioned symbol's ABI: _v2 of most
 * entry points came with 3.2, of the context and object destructors with
 * 4.0, of the primary-context calls with 11.0; the exceptions by name. */
static int since(const char *base, int v) {
  static const struct { const char *base; int v; int since; } X[] = {
      {"cuCtxDestroy", 2, 4000}, {"cuCtxPushCurrent", 2, 4000}, {"cuCtxPopCurrent", 2, 4000},
      {"cuStreamDestroy", 2, 4000}, {"cuEventDestroy", 2, 4000},
      {"cuDevicePrimaryCtxRelease", 2, 11000}, {"cuDevicePrimaryCtxSetFlags", 2, 11000},
      {"cuDevicePrimaryCtxReset", 2, 11000}, {"cuDeviceGetUuid", 2, 11040},
      {"cuMemHostRegister", 2, 6050}, {"cuGetProcAddress", 2, 12000},
      {"cuEventElapsedTime", 2, 12080}, {"cuCtxCreate", 3, 11040}, {"cuCtxCreate", 4, 12050},
      {"cuGraphInstantiate", 2, 11000}, {"cuStreamBeginCapture", 2, 10010},
      {"cuStreamGetCaptureInfo", 2, 11030}, {"cuStreamGetCaptureInfo", 3, 12030},
      {"cuGraphAddKernelNode", 2, 12000}, {"cuGraphKernelNodeGetParams", 2, 12000},
      {"cuGraphKernelNodeSetParams", 2, 12000}, {"cuGraphExecKernelNodeSetParams", 2, 12000},
      {"cuGraphExecUpdate", 2, 12000}, {"cuStreamUpdateCaptureDependencies", 2, 12030},
      {"cuGraphGetEdges", 2, 12030}, {"cuGraphNodeGetDependencies", 2, 12030},
      {"cuGraphNodeGetDependentNodes", 2, 12030}, {"cuGraphAddDependencies", 2, 12030},
      {"cuGraphRemoveDependencies", 2, 12030}, {"cuGraphAddNode", 2, 12030},
      {"cuStreamWaitValue32", 2, 11070}, {"cuStreamWaitValue64", 2, 11070},
      {"cuStreamWriteValue32", 2, 11070}, {"cuStreamWriteValue64", 2, 11070},
      {"cuStreamBatchMemOp", 2, 11070}, {"cuDeviceGetGraphMemAttribute", 2, 0},
      {"cuMemcpyPeer", 2, 0}, {"cuLinkCreate", 2, 6050}, {"cuLinkAddData", 2, 6050},
      {"cuLinkAddFile", 2, 6050}, {"cuTexRefSetAddress2D", 3, 4010},
      {"cuMemAdvise", 2, 12020}, {"cuMemPrefetchAsync", 2, 12020},
      {"cuCtxGetDevice", 2, 13000}, {"cuMemGetAttribute", 2, 0},
      {"cuCtxSynchronize", 2, 13000}, {"cuStreamGetId", 2, 0},
  };
  for (size_t i = 0; i < sizeof X / sizeof X[0]; i++)
    if (X[i].v == v && strcmp(X[i].base, base) == 0) return X[i].since;
  return v == 2 ? 3020 : 1000000; /* an unknown later version: never picked */
}

/* Splits "cuMemcpyHtoD_v2_ptds" into its base, version (1 when none) and
 * whether it is a per-thread variant. */
static void split(const char *sym, char *base, size_t baselen, int *v, bool *per_thread) {
  snprintf(base, baselen, "%s", sym);
  *per_thread = false;
  size_t n = strlen(base);
  if (n > 5 && (strcmp(base + n - 5, "_ptds") == 0 || strcmp(base + n - 5, "_ptsz") == 0)) {
    *per_thread = true;
    base[n -= 5] = 0;
  }
  *v = 1;
  char *u = strrchr(base, '_');
  if (u && u[1] == 'v' && u[2] >= '2' && u[2] <= '9' && u[3] == 0) {
    *v = u[2] - '0';
    *u = 0;
  }
}

void *gl_cu_proc_lookup(const char *symbol, int cuda_version, uint64_t flags, bool *stub) {
  bool want_pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const proc_entry *best = NULL;
  int best_v = -1;
  bool best_pt = false;
  for (size_t i = 0; i < TABLE_LEN; i++) {
    char base[128];
    int v;
    bool pt;
    split(TABLE[i].name, base, sizeof base, &v, &pt);
    if (strcmp(base, symbol) != 0) continue;
    int from = v == 1 ? 0 : since(base, v);
    if (from > cuda_version) continue;
    if (pt && !want_pt) continue;
    /* The newest version; at one version, the per-thread variant when asked. */
    if (v > best_v || (v == best_v && pt && !best_pt)) {
      best = &TABLE[i];
      best_v = v;
      best_pt = pt;
    }
  }
  if (stub) *stub = best && best->stub;
  return best ? (void *)best->fn : NULL;
}

