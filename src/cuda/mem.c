/*
 * mem.c - device and host memory: cuMemAlloc gives a session buffer at its
 * real device address (MEM_ALLOC with the address flag), so that programs
 * do pointer arithmetic and kernels take raw pointers; copies and memsets
 * find the buffer holding the range (a sorted table) and refuse a range
 * that no allocation holds with CUDA_ERROR_INVALID_VALUE, copying nothing
 * (the daemon checks the range again). Host memory of cuMemHostAlloc is
 * gpulease_host_alloc's: memory a daemon on this machine reads directly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/entry.h"

/* Index of the first allocation whose address is > ptr. */
static size_t upper(CUdeviceptr ptr) {
  size_t lo = 0, hi = gl_cu.nallocs;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (gl_cu.allocs[mid].addr <= ptr) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const gl_cu_alloc *gl_cu_find_alloc(CUdeviceptr ptr, uint64_t len) {
  size_t i = upper(ptr);
  if (i == 0) return NULL;
  const gl_cu_alloc *a = &gl_cu.allocs[i - 1];
  uint64_t off = ptr - a->addr;
  if (off >= a->size || len > a->size - off) return NULL;
  return a;
}

const gl_cu_host *gl_cu_find_host(const void *p, size_t len) {
  uintptr_t u = (uintptr_t)p;
  for (size_t i = 0; i < gl_cu.nhosts; i++) {
    uintptr_t b = (uintptr_t)gl_cu.hosts[i].ptr;
    if (u >= b && u - b < gl_cu.hosts[i].size && len <= gl_cu.hosts[i].size - (u - b))
      return &gl_cu.hosts[i];
  }
  return NULL;
}

static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return true;
  size_t n = *cap ? *cap * 2 : 64;
  while (n < need) n *= 2;
  void *q = realloc(*p, n * elem);
  if (!q) return false;
  *p = q;
  *cap = n;
  return true;
}

/* Says why a range is refused, once per call site's name, and gives
 * CUDA_ERROR_INVALID_VALUE. */
static CUresult bad_range(const char *call, CUdeviceptr p, uint64_t len) {
  fprintf(stderr,
          "gpulease: %s: [0x%llx, +%llu bytes) is not inside one allocation of this "
          "context: nothing copied\n",
          call, (unsigned long long)p, (unsigned long long)len);
  return CUDA_ERROR_INVALID_VALUE;
}

GL_CU_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
  if (!dptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER_CTX();
  if (!grow((void **)&gl_cu.allocs, &gl_cu.cap_allocs, gl_cu.nallocs + 1, sizeof(gl_cu_alloc)))
    return gl_cu_leave(CUDA_ERROR_OUT_OF_MEMORY);
  gpulease_buffer b = 0;
  uint64_t off = 0, addr = 0;
  gpulease_error err;
  if (gpulease_mem_alloc_address(gl_cu.session, bytesize, &b, &off, &addr, &err) !=
      GPULEASE_OK)
    return gl_cu_leave(gl_cu_fail("cuMemAlloc", &err));
  size_t i = upper(addr);
  memmove(&gl_cu.allocs[i + 1], &gl_cu.allocs[i], (gl_cu.nallocs - i) * sizeof(gl_cu_alloc));
  gl_cu.allocs[i] = (gl_cu_alloc){.addr = addr, .size = bytesize,
                                  .charged = (bytesize + 255) & ~(uint64_t)255, .buffer = b};
  gl_cu.nallocs++;
  gl_cu.charged += gl_cu.allocs[i].charged;
  *dptr = addr;
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
                                      size_t height, unsigned int elem_bytes);
CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                            unsigned int elem_bytes) {
  if (!pitch || width == 0 || height == 0 ||
      (elem_bytes != 4 && elem_bytes != 8 && elem_bytes != 16))
    return CUDA_ERROR_INVALID_VALUE;
  size_t p = (width + 511) & ~(size_t)511; /* rows start 512-byte aligned */
  if (height > SIZE_MAX / p) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = cuMemAlloc_v2(dptr, p * height);
  if (r == CUDA_SUCCESS) *pitch = p;
  return r;
}

GL_CU_API CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemFree_v2(CUdeviceptr dptr) {
  GL_CU_ENTER();
  if (dptr == 0) return gl_cu_leave(CUDA_SUCCESS);
  size_t i = upper(dptr);
  if (i == 0 || gl_cu.allocs[i - 1].addr != dptr) return gl_cu_leave(CUDA_ERROR_INVALID_VALUE);
  gl_cu_alloc a = gl_cu.allocs[i - 1];
  memmove(&gl_cu.allocs[i - 1], &gl_cu.allocs[i], (gl_cu.nallocs - i) * sizeof(gl_cu_alloc));
  gl_cu.nallocs--;
  gl_cu.charged -= a.charged;
  gpulease_error err;
  if (gpulease_mem_free(gl_cu.session, a.buffer, &err) != GPULEASE_OK)
    return gl_cu_leave(gl_cu_fail("cuMemFree", &err));
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes);
CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
  if (!free_bytes || !total_bytes) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER_CTX();
  /* The lease's view: its VRAM, less what this context allocated. */
  uint64_t total = gl_cu.lease.vram_bytes;
  *total_bytes = (size_t)total;
  *free_bytes = (size_t)(gl_cu.charged < total ? total - gl_cu.charged : 0);
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr);
CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr) {
  GL_CU_ENTER();
  const gl_cu_alloc *a = gl_cu_find_alloc(dptr, 1);
  if (!a) return gl_cu_leave(CUDA_ERROR_NOT_FOUND);
  if (pbase) *pbase = a->addr;
  if (psize) *psize = (size_t)a->size;
  return gl_cu_leave(CUDA_SUCCESS);
}

/* The copies, under the lock with the session open. */
CUresult gl_cu_htod(const char *call, CUdeviceptr dst, const void *src, size_t n) {
  if (n == 0) return CUDA_SUCCESS;
  if (!src) return CUDA_ERROR_INVALID_VALUE;
  const gl_cu_alloc *a = gl_cu_find_alloc(dst, n);
  if (!a) return bad_range(call, dst, n);
  gpulease_error err;
  if (gpulease_mem_write(gl_cu.session, a->buffer, dst - a->addr, src, n, &err) != GPULEASE_OK)
    return gl_cu_fail(call, &err);
  return CUDA_SUCCESS;
}

CUresult gl_cu_dtoh(const char *call, void *dst, CUdeviceptr src, size_t n) {
  if (n == 0) return CUDA_SUCCESS;
  if (!dst) return CUDA_ERROR_INVALID_VALUE;
  const gl_cu_alloc *a = gl_cu_find_alloc(src, n);
  if (!a) return bad_range(call, src, n);
  gpulease_error err;
  if (gpulease_mem_read(gl_cu.session, a->buffer, src - a->addr, dst, n, &err) != GPULEASE_OK)
    return gl_cu_fail(call, &err);
  return CUDA_SUCCESS;
}

CUresult gl_cu_dtod(const char *call, CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (n == 0) return CUDA_SUCCESS;
  const gl_cu_alloc *d = gl_cu_find_alloc(dst, n), *s = gl_cu_find_alloc(src, n);
  if (!d) return bad_range(call, dst, n);
  if (!s) return bad_range(call, src, n);
  gpulease_error err;
  if (gpulease_mem_copy(gl_cu.session, d->buffer, dst - d->addr, s->buffer, src - s->addr, n,
                        &err) != GPULEASE_OK)
    return gl_cu_fail(call, &err);
  return CUDA_SUCCESS;
}

/* Unified addressing (cuMemcpy): a pointer inside an allocation is the
 * device's, any other the host's. */
CUresult gl_cu_unified(const char *call, CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (n == 0) return CUDA_SUCCESS;
  bool dd = gl_cu_find_alloc(dst, 1) != NULL, sd = gl_cu_find_alloc(src, 1) != NULL;
  if (dd && sd) return gl_cu_dtod(call, dst, src, n);
  if (dd) return gl_cu_htod(call, dst, (const void *)(uintptr_t)src, n);
  if (sd) return gl_cu_dtoh(call, (void *)(uintptr_t)dst, src, n);
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  return CUDA_SUCCESS;
}

/* Asynchronous copies run at once, in the stream's order: an HtoD has
 * taken its source when it returns and a DtoH has filled its destination
 * (CUDA allows both; the source may be reused at once, as from pageable
 * memory). */
#define GL_CU_COPY(NAME, PARAMS, CHECK, DO)                                \
  GL_CU_API CUresult NAME PARAMS;                                                     \
  CUresult NAME PARAMS {                                                              \
    CHECK;                                                                            \
    GL_CU_ENTER_CTX();                                                                \
    return gl_cu_leave(DO);                                                           \
  }

#define NOSTREAM (void)0
#define STREAMCHK \
  if (!gl_cu_stream_ok(hStream)) return CUDA_ERROR_INVALID_HANDLE

GL_CU_COPY(cuMemcpyHtoD_v2, (CUdeviceptr dst, const void *src, size_t n),
           NOSTREAM, gl_cu_htod("cuMemcpyHtoD", dst, src, n))
GL_CU_COPY(cuMemcpyDtoH_v2, (void *dst, CUdeviceptr src, size_t n), NOSTREAM,
           gl_cu_dtoh("cuMemcpyDtoH", dst, src, n))
GL_CU_COPY(cuMemcpyDtoD_v2, (CUdeviceptr dst, CUdeviceptr src, size_t n),
           NOSTREAM, gl_cu_dtod("cuMemcpyDtoD", dst, src, n))
GL_CU_COPY(cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t n), NOSTREAM,
           gl_cu_unified("cuMemcpy", dst, src, n))
GL_CU_COPY(cuMemcpyHtoDAsync_v2,
           (CUdeviceptr dst, const void *src, size_t n, CUstream hStream), STREAMCHK,
           gl_cu_htod("cuMemcpyHtoDAsync", dst, src, n))
GL_CU_COPY(cuMemcpyDtoHAsync_v2,
           (void *dst, CUdeviceptr src, size_t n, CUstream hStream), STREAMCHK,
           gl_cu_dtoh("cuMemcpyDtoHAsync", dst, src, n))
GL_CU_COPY(cuMemcpyDtoDAsync_v2,
           (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream), STREAMCHK,
           gl_cu_dtod("cuMemcpyDtoDAsync", dst, src, n))
GL_CU_COPY(cuMemcpyAsync,
           (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream), STREAMCHK,
           gl_cu_unified("cuMemcpyAsync", dst, src, n))
/* The per-thread default stream's variants: one stream order anyway. */
GL_CU_COPY(cuMemcpyHtoD_v2_ptds, (CUdeviceptr dst, const void *src, size_t n),
           NOSTREAM, gl_cu_htod("cuMemcpyHtoD", dst, src, n))
GL_CU_COPY(cuMemcpyDtoH_v2_ptds, (void *dst, CUdeviceptr src, size_t n),
           NOSTREAM, gl_cu_dtoh("cuMemcpyDtoH", dst, src, n))
GL_CU_COPY(cuMemcpyDtoD_v2_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t n),
           NOSTREAM, gl_cu_dtod("cuMemcpyDtoD", dst, src, n))
GL_CU_COPY(cuMemcpy_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t n), NOSTREAM,
           gl_cu_unified("cuMemcpy", dst, src, n))
GL_CU_COPY(cuMemcpyHtoDAsync_v2_ptsz,
           (CUdeviceptr dst, const void *src, size_t n, CUstream hStream), STREAMCHK,
           gl_cu_htod("cuMemcpyHtoDAsync", dst, src, n))
GL_CU_COPY(cuMemcpyDtoHAsync_v2_ptsz,
           (void *dst, CUdeviceptr src, size_t n, CUstream hStream), STREAMCHK,
           gl_cu_dtoh("cuMemcpyDtoHAsync", dst, src, n))
GL_CU_COPY(cuMemcpyDtoDAsync_v2_ptsz,
           (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream), STREAMCHK,
           gl_cu_dtod("cuMemcpyDtoDAsync", dst, src, n))
GL_CU_COPY(cuMemcpyAsync_ptsz,
           (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream), STREAMCHK,
           gl_cu_unified("cuMemcpyAsync", dst, src, n))

/* Memsets of n elements of 1, 2 or 4 bytes (MEMSET, pipelined). */
CUresult gl_cu_memset_n(const char *call, CUdeviceptr dst, uint32_t elem, uint32_t value,
                         size_t n) {
  if (n == 0) return CUDA_SUCCESS;
  if (dst % elem) return CUDA_ERROR_INVALID_VALUE;
  if (n > UINT64_MAX / elem) return CUDA_ERROR_INVALID_VALUE;
  const gl_cu_alloc *a = gl_cu_find_alloc(dst, (uint64_t)n * elem);
  if (!a) return bad_range(call, dst, (uint64_t)n * elem);
  gpulease_error err;
  if (gpulease_mem_set(gl_cu.session, a->buffer, dst - a->addr, elem, value, n, &err) !=
      GPULEASE_OK)
    return gl_cu_fail(call, &err);
  return CUDA_SUCCESS;
}

GL_CU_COPY(cuMemsetD8_v2, (CUdeviceptr dst, unsigned char v, size_t n), NOSTREAM,
           gl_cu_memset_n("cuMemsetD8", dst, 1, v, n))
GL_CU_COPY(cuMemsetD16_v2, (CUdeviceptr dst, unsigned short v, size_t n),
           NOSTREAM, gl_cu_memset_n("cuMemsetD16", dst, 2, v, n))
GL_CU_COPY(cuMemsetD32_v2, (CUdeviceptr dst, unsigned int v, size_t n),
           NOSTREAM, gl_cu_memset_n("cuMemsetD32", dst, 4, v, n))
GL_CU_COPY(cuMemsetD8Async,
           (CUdeviceptr dst, unsigned char v, size_t n, CUstream hStream), STREAMCHK,
           gl_cu_memset_n("cuMemsetD8Async", dst, 1, v, n))
GL_CU_COPY(cuMemsetD16Async,
           (CUdeviceptr dst, unsigned short v, size_t n, CUstream hStream), STREAMCHK,
           gl_cu_memset_n("cuMemsetD16Async", dst, 2, v, n))
GL_CU_COPY(cuMemsetD32Async,
           (CUdeviceptr dst, unsigned int v, size_t n, CUstream hStream), STREAMCHK,
           gl_cu_memset_n("cuMemsetD32Async", dst, 4, v, n))
GL_CU_COPY(cuMemsetD8_v2_ptds, (CUdeviceptr dst, unsigned char v, size_t n),
           NOSTREAM, gl_cu_memset_n("cuMemsetD8", dst, 1, v, n))
GL_CU_COPY(cuMemsetD16_v2_ptds, (CUdeviceptr dst, unsigned short v, size_t n),
           NOSTREAM, gl_cu_memset_n("cuMemsetD16", dst, 2, v, n))
GL_CU_COPY(cuMemsetD32_v2_ptds, (CUdeviceptr dst, unsigned int v, size_t n),
           NOSTREAM, gl_cu_memset_n("cuMemsetD32", dst, 4, v, n))
GL_CU_COPY(cuMemsetD8Async_ptsz,
           (CUdeviceptr dst, unsigned char v, size_t n, CUstream hStream), STREAMCHK,
           gl_cu_memset_n("cuMemsetD8Async", dst, 1, v, n))
GL_CU_COPY(cuMemsetD16Async_ptsz,
           (CUdeviceptr dst, unsigned short v, size_t n, CUstream hStream), STREAMCHK,
           gl_cu_memset_n("cuMemsetD16Async", dst, 2, v, n))
GL_CU_COPY(cuMemsetD32Async_ptsz,
           (CUdeviceptr dst, unsigned int v, size_t n, CUstream hStream), STREAMCHK,
           gl_cu_memset_n("cuMemsetD32Async", dst, 4, v, n))

/* Host memory. */
GL_CU_API CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags);
CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags) {
  if (!pp || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (flags & CU_MEMHOSTALLOC_DEVICEMAP)
    return gl_cu_unsupported("cuMemHostAlloc",
                             "CU_MEMHOSTALLOC_DEVICEMAP: a remote GPU cannot map client memory");
  GL_CU_ENTER();
  if (!grow((void **)&gl_cu.hosts, &gl_cu.cap_hosts, gl_cu.nhosts + 1, sizeof(gl_cu_host)))
    return gl_cu_leave(CUDA_ERROR_OUT_OF_MEMORY);
  void *p = NULL;
  gpulease_error err;
  if (gpulease_host_alloc(gl_cu.client, bytesize, &p, &err) != GPULEASE_OK)
    return gl_cu_leave(CUDA_ERROR_OUT_OF_MEMORY);
  gl_cu.hosts[gl_cu.nhosts++] = (gl_cu_host){.ptr = p, .size = bytesize};
  *pp = p;
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuMemAllocHost_v2(void **pp, size_t bytesize);
CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) { return cuMemHostAlloc(pp, bytesize, 0); }

GL_CU_API CUresult cuMemFreeHost(void *p);
CUresult cuMemFreeHost(void *p) {
  GL_CU_ENTER();
  for (size_t i = 0; i < gl_cu.nhosts; i++)
    if (gl_cu.hosts[i].ptr == p) {
      gpulease_error err;
      gpulease_host_free(gl_cu.client, p, &err);
      gl_cu.hosts[i] = gl_cu.hosts[--gl_cu.nhosts];
      return gl_cu_leave(CUDA_SUCCESS);
    }
  return gl_cu_leave(CUDA_ERROR_INVALID_VALUE);
}

GL_CU_API CUresult cuMemHostGetFlags(unsigned int *flags, void *p);
CUresult cuMemHostGetFlags(unsigned int *flags, void *p) {
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  if (!gl_cu_find_host(p, 1)) return gl_cu_leave(CUDA_ERROR_INVALID_VALUE);
  *flags = 0;
  return gl_cu_leave(CUDA_SUCCESS);
}

/* Registering pins memory for DMA; the library stages client memory
 * anyway, so a registration changes nothing but is accepted. Mapping it
 * into the device is not possible. */
GL_CU_API CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int flags);
CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int flags) {
  if (!p || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (flags & (CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY))
    return gl_cu_unsupported("cuMemHostRegister",
                             "DEVICEMAP and IOMEMORY: a remote GPU cannot map client memory");
  GL_CU_ENTER();
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuMemHostUnregister(void *p);
CUresult cuMemHostUnregister(void *p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  return gl_cu_leave(CUDA_SUCCESS);
}

GL_CU_API CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                                         CUdeviceptr ptr);
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER();
  const gl_cu_alloc *a = gl_cu_find_alloc(ptr, 1);
  const gl_cu_host *h = a ? NULL : gl_cu_find_host((const void *)(uintptr_t)ptr, 1);
  if (!a && !h) return gl_cu_leave(CUDA_ERROR_INVALID_VALUE);
  switch ((int)attribute) {
  case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = &gl_cu.ctx; break;
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *(unsigned *)data = a ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    break;
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    if (!a) return gl_cu_leave(CUDA_ERROR_INVALID_VALUE); /* host memory is not mapped */
    *(CUdeviceptr *)data = ptr;
    break;
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    if (!h) return gl_cu_leave(CUDA_ERROR_INVALID_VALUE);
    *(void **)data = (void *)(uintptr_t)ptr;
    break;
  case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned *)data = 0; break;
  case CU_POINTER_ATTRIBUTE_MAPPED: *(unsigned *)data = a != NULL; break;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = 0; break;
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    *(CUdeviceptr *)data = a ? a->addr : (CUdeviceptr)(uintptr_t)h->ptr;
    break;
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = a ? (size_t)a->size : h->size; break;
  default:
    gl_cu_unlock();
    return gl_cu_unsupported("cuPointerGetAttribute", "that attribute");
  }
  return gl_cu_leave(CUDA_SUCCESS);
}
