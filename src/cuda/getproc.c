/*
 * getproc.c - cuGetProcAddress (the table in proc.c) and cuGetExportTable.
 * The CUDA runtime's private tables are not there yet: a runtime that
 * asks for one is told so on stderr and stops with its own error.
 */
#include <stdio.h>

#include "cuda/cu.h"

static CUresult proc(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                     CUdriverProcAddressQueryResult *status) {
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  void *fn = gl_cu_proc_lookup(symbol, cudaVersion, flags);
  *pfn = fn;
  if (status)
    *status = fn ? CU_GET_PROC_ADDRESS_SUCCESS
                 : (gl_cu_proc_lookup(symbol, 1 << 30, flags) ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                                                              : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
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

__attribute__((visibility("default"))) CUresult cuGetExportTable(const void **ppExportTable,
                                                                 const CUuuid *pExportTableId);
CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId) {
  if (ppExportTable) *ppExportTable = NULL;
  char why[160] = "the CUDA runtime's private tables are not implemented yet";
  if (pExportTableId) {
    const unsigned char *b = (const unsigned char *)pExportTableId->bytes;
    snprintf(why, sizeof why,
             "table %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x: the CUDA "
             "runtime's private tables are not implemented yet; use the driver API",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
             b[13], b[14], b[15]);
  }
  return gl_cu_unsupported("cuGetExportTable", why);
}
