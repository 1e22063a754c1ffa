/*
 * image.h - the extent of a module image given without its size
 * (cuModuleLoadData, cuModuleLoadFatBinary, cuLibraryLoadData).
 * Internal to src/cuda.
 */
#ifndef GL_CUDA_IMAGE_H
#define GL_CUDA_IMAGE_H

#include <stdbool.h>
#include <stddef.h>

/* Where the image's bytes start (a fatbin wrapper's data, else image) and
 * in *size how many there are; NULL (and *size 0) for an image whose
 * headers make no sense. The bytes are read, never written. */
const void *gl_cu_image_span(const void *image, size_t *size);

/* Whether the image's kernels may print (device printf): its bytes name
 * vprintf, or a compressed fatbin entry hides them. Then the shim asks
 * the daemon for kernel output at each synchronisation; an image that
 * cannot print costs no such request. */
bool gl_cu_image_may_print(const void *bytes, size_t size);

#endif /* GL_CUDA_IMAGE_H */
