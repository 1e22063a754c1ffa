/*
 * nvjitlink.h - NVIDIA's nvJitLink library, loaded at run time, to compile
 * PTX newer than the node's driver takes (CUDA minor version
 * compatibility): the worker hands it PTX the driver's JIT refused with
 * CUDA_ERROR_UNSUPPORTED_PTX_VERSION, and loads the cubin it returns.
 *
 * Nothing here includes nvJitLink.h or links the library. gl_nvjitlink_load
 * dlopen()s the first of:
 *   - the path given (gpuleased --nvjitlink PATH: a file, or a folder that
 *     holds libnvJitLink.so*);
 *   - $CUDA_HOME/lib64 and /usr/local/cuda/lib64 (the CUDA toolkit's);
 *   - a pip-installed wheel's folder, nvidia/cu13/lib or nvidia/nvjitlink/lib
 *     under the Python site-packages folders of /usr/lib, /usr/local/lib
 *     and /opt (nvidia-nvjitlink, nvidia-nvjitlink-cu12);
 *   - libnvJitLink.so.13 and .so.12 by name (LD_LIBRARY_PATH, ld.so.cache).
 * The entry points are the library's exported plain names (nvJitLinkCreate
 * ...), whose signatures have been the same since CUDA 12.0.
 */
#ifndef GL_GPU_NVJITLINK_H
#define GL_GPU_NVJITLINK_H

#include <stddef.h>
#include <stdint.h>

#include "common/ptx_header.h" /* gl_ptx_header */

typedef struct gl_nvjitlink gl_nvjitlink;

/* Loads nvJitLink (see above; path may be NULL). NULL when none is found or
 * it lacks an entry point, with why in err (every place tried). */
gl_nvjitlink *gl_nvjitlink_load(const char *path, char *err, size_t errlen);

void gl_nvjitlink_free(gl_nvjitlink *nj);

/* The library's version (nvJitLinkVersion: 13, 5) and the file it was
 * loaded from. */
void gl_nvjitlink_version(const gl_nvjitlink *nj, unsigned *major, unsigned *minor);
const char *gl_nvjitlink_path(const gl_nvjitlink *nj);

/* Compiles PTX (len bytes, need not be NUL-terminated) for arch ("sm_90",
 * "sm_90a") into a cubin: *cubin is malloc'd (caller frees), *cubin_len
 * bytes. 0, or -1 with nvJitLink's error log (or the failing call) in err. */
int gl_nvjitlink_compile(gl_nvjitlink *nj, const uint8_t *ptx, size_t len, const char *arch,
                         uint8_t **cubin, size_t *cubin_len, char *err, size_t errlen);


#endif /* GL_GPU_NVJITLINK_H */
