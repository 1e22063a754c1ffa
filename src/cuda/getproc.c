/*
 * getproc.c - cuGetProcAddress (the table in proc.c) and cuGetExportTable
 * (the CUDA runtime's private tables, export_tables.c). With
 * GPULEASE_CUDA_TRACE=1 each table asked for and each name that resolves
 * to a NOT_SUPPORTED stub is traced on stderr.
 */
#include <stdio.h>

#include "cuda/cu.h"

static CUresult proc(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                     CUdriverProcAddressQueryResult *status) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  bool stub = false;
  void *fn = gl_cu_proc_lookup(symbol, cudaVersion, flags, &stub);
  *pfn = fn;
  if (status)
    *status = fn ? CU_GET_PROC_ADDRESS_SUCCESS
                 : (gl_cu_proc_lookup(symbol, 1 << 30, flags, NULL)
                        ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                        : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  if (gl_cu_tracing() && (stub || !fn))
    gl_cu_trace("cuGetProcAddress %s (CUDA %d, flags %llu): %s", symbol, cudaVersion,
                (unsigned long long)flags, fn ? "a NOT_SUPPORTED stub" : "not found");
  return fn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

__attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
    CUdriverProcAddressQueryResult *symbolStatus);
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus) {
  return proc(symbol, pfn, cudaVersion, flags, symbolStatus);
}

__attribute__((visibility("default"))) CUresult cuGetProcAddress(const char *symbol, void **pfn,
                                                                 int cudaVersion,
                                                                 cuuint64_t flags);
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
  return proc(symbol, pfn, cudaVersion, flags, NULL);
}

/* A table the shim does not have is CUDA_ERROR_NOT_FOUND, as the driver
 * answers for a UUID it does not know: the runtime then goes on without it
 * (CUDA 13.0's asks first for f8cff951-..., which it may go without). */
__attribute__((visibility("default"))) CUresult cuGetExportTable(const void **ppExportTable,
                                                                 const CUuuid *pExportTableId);
CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId) {
  if (!ppExportTable || !pExportTableId) return CUDA_ERROR_INVALID_VALUE;
  const unsigned char *b = (const unsigned char *)pExportTableId->bytes;
  const void *t = gl_cu_export_table(b);
  *ppExportTable = t;
  if (gl_cu_tracing())
    gl_cu_trace("cuGetExportTable %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
                "%02x%02x%02x%02x%02x%02x: %s",
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                b[13], b[14], b[15], t ? "given" : "not known (CUDA_ERROR_NOT_FOUND)");
  return t ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
