/*
 * copy2d.c - pitched copies and memsets (cuMemcpy2D, cuMemcpy3D,
 * cuMemsetD2D*) between host and device memory, made of the 1D copies of
 * mem.c: a side that is contiguous (pitch = width) takes one copy, its
 * rows packed or unpacked in client memory; otherwise one copy a row.
 * Nothing outside the described rows is written, as with CUDA. CUDA
 * arrays are not supported (CUDA_ERROR_NOT_SUPPORTED).
 */
#include <stdlib.h>
#include <string.h>

#include "cuda/entry.h"

/* One side of a copy: memory type resolved (unified: by the allocation
 * table), its base address and pitch. */
typedef struct side {
  bool device;
  uintptr_t base; /* host pointer or device address of row 0, x 0 */
  size_t pitch;
} side;

static CUresult resolve(const char *call, int type, const void *host, CUdeviceptr dev,
                        size_t x, size_t y, size_t pitch, side *out) {
  switch (type) {
  case CU_MEMORYTYPE_HOST:
    if (!host) return CUDA_ERROR_INVALID_VALUE;
    out->device = false;
    out->base = (uintptr_t)host;
    break;
  case CU_MEMORYTYPE_DEVICE:
    out->device = true;
    out->base = (uintptr_t)dev;
    break;
  case CU_MEMORYTYPE_UNIFIED:
    out->device = gl_cu_find_alloc(dev, 1) != NULL;
    out->base = (uintptr_t)dev;
    break;
  case CU_MEMORYTYPE_ARRAY: return gl_cu_unsupported(call, "CUDA arrays");
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  out->base += x + y * pitch;
  out->pitch = pitch;
  return CUDA_SUCCESS;
}

/* height rows of width bytes from s to d, under the lock. */
static CUresult rows(const char *call, const side *d, const side *s, size_t width,
                     size_t height) {
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  if ((height > 1 && (d->pitch < width || s->pitch < width)) ||
      height > SIZE_MAX / (width > d->pitch ? width : d->pitch))
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r = CUDA_SUCCESS;
  if (!d->device && !s->device) {
    for (size_t y = 0; y < height; y++)
      memmove((void *)(d->base + y * d->pitch), (const void *)(s->base + y * s->pitch), width);
    return CUDA_SUCCESS;
  }
  bool dcont = height == 1 || d->pitch == width, scont = height == 1 || s->pitch == width;
  if (d->device && !s->device && dcont) { /* pack the host rows, one write */
    uint8_t *tmp = scont ? NULL : malloc(width * height);
    if (!scont && !tmp) return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t y = 0; tmp && y < height; y++)
      memcpy(tmp + y * width, (const void *)(s->base + y * s->pitch), width);
    r = gl_cu_htod(call, d->base, tmp ? tmp : (const void *)s->base, width * height);
    free(tmp);
    return r;
  }
  if (!d->device && s->device && scont) { /* one read, then the rows apart */
    uint8_t *tmp = dcont ? NULL : malloc(width * height);
    if (!dcont && !tmp) return CUDA_ERROR_OUT_OF_MEMORY;
    r = gl_cu_dtoh(call, tmp ? (void *)tmp : (void *)d->base, s->base, width * height);
    for (size_t y = 0; r == CUDA_SUCCESS && tmp && y < height; y++)
      memcpy((void *)(d->base + y * d->pitch), tmp + y * width, width);
    free(tmp);
    return r;
  }
  if (d->device && s->device && dcont && scont) return gl_cu_dtod(call, d->base, s->base, width * height);
  for (size_t y = 0; r == CUDA_SUCCESS && y < height; y++) {
    uintptr_t dp = d->base + y * d->pitch, sp = s->base + y * s->pitch;
    if (d->device && s->device) r = gl_cu_dtod(call, dp, sp, width);
    else if (d->device) r = gl_cu_htod(call, dp, (const void *)sp, width);
    else r = gl_cu_dtoh(call, (void *)dp, sp, width);
  }
  return r;
}

static CUresult copy2d(const char *call, const CUDA_MEMCPY2D *p, CUstream stream) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  if (!gl_cu_stream_ok(stream)) return CUDA_ERROR_INVALID_HANDLE;
  GL_CU_ENTER_CTX();
  side d = {0}, s = {0};
  CUresult r = resolve(call, (int)p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes,
                       p->dstY, p->dstPitch, &d);
  if (r == CUDA_SUCCESS)
    r = resolve(call, (int)p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY,
                p->srcPitch, &s);
  if (r == CUDA_SUCCESS) r = rows(call, &d, &s, p->WidthInBytes, p->Height);
  return gl_cu_leave(r);
}

static CUresult copy3d(const char *call, const CUDA_MEMCPY3D *p, CUstream stream) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  if (!gl_cu_stream_ok(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (p->srcLOD || p->dstLOD) return gl_cu_unsupported(call, "mipmap levels (CUDA arrays)");
  GL_CU_ENTER_CTX();
  side d = {0}, s = {0};
  /* A slice is pitch x height bytes; z moves by slices. */
  CUresult r = resolve(call, (int)p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes,
                       p->dstY + p->dstZ * p->dstHeight, p->dstPitch, &d);
  if (r == CUDA_SUCCESS)
    r = resolve(call, (int)p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes,
                p->srcY + p->srcZ * p->srcHeight, p->srcPitch, &s);
  size_t depth = p->Depth ? p->Depth : 1;
  if (r == CUDA_SUCCESS && depth > 1 &&
      ((p->Height > p->dstHeight || p->Height > p->srcHeight)))
    r = CUDA_ERROR_INVALID_VALUE;
  for (size_t z = 0; r == CUDA_SUCCESS && z < depth; z++) {
    side dz = d, sz = s;
    dz.base += z * p->dstPitch * p->dstHeight;
    sz.base += z * p->srcPitch * p->srcHeight;
    r = rows(call, &dz, &sz, p->WidthInBytes, p->Height);
  }
  return gl_cu_leave(r);
}

/* The declaration and the head of a definition. */
#define GL_CU_2D(NAME, T, ASYNC)                                              \
  GL_CU_API CUresult NAME(const T *p ASYNC);                                  \
  CUresult NAME(const T *p ASYNC)

#define NOSTREAM_ARG
#define STREAM_ARG , CUstream hStream

GL_CU_2D(cuMemcpy2D_v2, CUDA_MEMCPY2D, NOSTREAM_ARG) {
  return copy2d("cuMemcpy2D", p, NULL);
}
GL_CU_2D(cuMemcpy2D_v2_ptds, CUDA_MEMCPY2D, NOSTREAM_ARG) {
  return copy2d("cuMemcpy2D", p, NULL);
}
GL_CU_2D(cuMemcpy2DUnaligned_v2, CUDA_MEMCPY2D, NOSTREAM_ARG) {
  return copy2d("cuMemcpy2DUnaligned", p, NULL);
}
GL_CU_2D(cuMemcpy2DUnaligned_v2_ptds, CUDA_MEMCPY2D, NOSTREAM_ARG) {
  return copy2d("cuMemcpy2DUnaligned", p, NULL);
}
GL_CU_2D(cuMemcpy2DAsync_v2, CUDA_MEMCPY2D, STREAM_ARG) {
  return copy2d("cuMemcpy2DAsync", p, hStream);
}
GL_CU_2D(cuMemcpy2DAsync_v2_ptsz, CUDA_MEMCPY2D, STREAM_ARG) {
  return copy2d("cuMemcpy2DAsync", p, hStream);
}
GL_CU_2D(cuMemcpy3D_v2, CUDA_MEMCPY3D, NOSTREAM_ARG) {
  return copy3d("cuMemcpy3D", p, NULL);
}
GL_CU_2D(cuMemcpy3D_v2_ptds, CUDA_MEMCPY3D, NOSTREAM_ARG) {
  return copy3d("cuMemcpy3D", p, NULL);
}
GL_CU_2D(cuMemcpy3DAsync_v2, CUDA_MEMCPY3D, STREAM_ARG) {
  return copy3d("cuMemcpy3DAsync", p, hStream);
}
GL_CU_2D(cuMemcpy3DAsync_v2_ptsz, CUDA_MEMCPY3D, STREAM_ARG) {
  return copy3d("cuMemcpy3DAsync", p, hStream);
}

/* Pitched memsets: one MEMSET a row (pipelined), or one for the whole
 * block when the rows are contiguous. */
static CUresult memset2d(const char *call, CUdeviceptr dst, size_t pitch, uint32_t elem,
                         uint32_t value, size_t width, size_t height, CUstream stream) {
  if (!gl_cu_stream_ok(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  if (height > 1 && pitch < width * elem) return CUDA_ERROR_INVALID_VALUE;
  GL_CU_ENTER_CTX();
  CUresult r;
  if (height == 1 || pitch == width * elem) {
    r = height > SIZE_MAX / width ? CUDA_ERROR_INVALID_VALUE
                                  : gl_cu_memset_n(call, dst, elem, value, width * height);
  } else {
    r = CUDA_SUCCESS;
    for (size_t y = 0; r == CUDA_SUCCESS && y < height; y++)
      r = gl_cu_memset_n(call, dst + y * pitch, elem, value, width);
  }
  return gl_cu_leave(r);
}

#define GL_CU_MEMSET2D(NAME, CALL, T, ELEM)                                                  \
  GL_CU_API CUresult NAME(CUdeviceptr dst, size_t pitch, T v, size_t w, size_t h);         \
  CUresult NAME(CUdeviceptr dst, size_t pitch, T v, size_t w, size_t h) {                  \
    return memset2d(CALL, dst, pitch, ELEM, v, w, h, NULL);                                \
  }
#define GL_CU_MEMSET2D_ASYNC(NAME, CALL, T, ELEM)                                            \
  GL_CU_API CUresult NAME(CUdeviceptr dst, size_t pitch, T v, size_t w, size_t h,          \
                          CUstream hStream);                                                 \
  CUresult NAME(CUdeviceptr dst, size_t pitch, T v, size_t w, size_t h, CUstream hStream) { \
    return memset2d(CALL, dst, pitch, ELEM, v, w, h, hStream);                             \
  }
GL_CU_MEMSET2D(cuMemsetD2D8_v2, "cuMemsetD2D8", unsigned char, 1)
GL_CU_MEMSET2D(cuMemsetD2D16_v2, "cuMemsetD2D16", unsigned short, 2)
GL_CU_MEMSET2D(cuMemsetD2D32_v2, "cuMemsetD2D32", unsigned int, 4)
GL_CU_MEMSET2D(cuMemsetD2D8_v2_ptds, "cuMemsetD2D8", unsigned char, 1)
GL_CU_MEMSET2D(cuMemsetD2D16_v2_ptds, "cuMemsetD2D16", unsigned short, 2)
GL_CU_MEMSET2D(cuMemsetD2D32_v2_ptds, "cuMemsetD2D32", unsigned int, 4)
GL_CU_MEMSET2D_ASYNC(cuMemsetD2D8Async, "cuMemsetD2D8Async", unsigned char, 1)
GL_CU_MEMSET2D_ASYNC(cuMemsetD2D16Async, "cuMemsetD2D16Async", unsigned short, 2)
GL_CU_MEMSET2D_ASYNC(cuMemsetD2D32Async, "cuMemsetD2D32Async", unsigned int, 4)
GL_CU_MEMSET2D_ASYNC(cuMemsetD2D8Async_ptsz, "cuMemsetD2D8Async", unsigned char, 1)
GL_CU_MEMSET2D_ASYNC(cuMemsetD2D16Async_ptsz, "cuMemsetD2D16Async", unsigned short, 2)
GL_CU_MEMSET2D_ASYNC(cuMemsetD2D32Async_ptsz, "cuMemsetD2D32Async", unsigned int, 4)
