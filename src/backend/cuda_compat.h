/*
 * cuda_compat.h - PTX newer than the node's driver (CUDA minor version
 * compatibility): when the driver's JIT refuses a PTX's ISA version
 * (CUDA_ERROR_UNSUPPORTED_PTX_VERSION), the CUDA backend compiles it with
 * nvJitLink (src/gpu/nvjitlink.h) for the device's SM and loads the cubin;
 * without nvJitLink, or when it refuses too, the PTX gets LOAD_FAILED with
 * advice: what the node takes and what to send instead.
 */
#ifndef GL_BACKEND_CUDA_COMPAT_H
#define GL_BACKEND_CUDA_COMPAT_H

#include <stddef.h>
#include <stdint.h>

#include "gpulease/gpulease.h"

/* Loads nvJitLink from path (gpuleased --nvjitlink: a file or folder) now,
 * before the worker's sandbox closes the file system; NULL or "": nothing
 * now, and the first PTX that needs it searches the usual places
 * (nvjitlink.h), which the sandbox leaves readable. */
void gl_cuda_compat_preload(const char *path);

/* The driver refused ptx (len bytes) for its ISA version: compiles it with
 * nvJitLink for sm_<cc_major><cc_minor> (with the "a" suffix when the PTX
 * targets that architecture-specific variant). driver_version is
 * cuDriverGetVersion's (13000); driver_log is the JIT's error log ("" when
 * none), which names the newest ISA it takes. OK with *cubin (malloc'd)
 * and *cubin_len; LOAD_FAILED with the advice in err. */
gpulease_status gl_cuda_compat_compile(const uint8_t *ptx, size_t len, int cc_major, int cc_minor,
                                       int driver_version, const char *driver_log,
                                       uint8_t **cubin, size_t *cubin_len, char *err,
                                       size_t errlen);

/* The newest PTX ISA version a driver takes (cuDriverGetVersion 13000:
 * 9.0), from NVIDIA's release notes; 0.0 for a version it does not know. */
void gl_cuda_driver_max_ptx(int driver_version, unsigned *major, unsigned *minor);

/* The newest PTX ISA version nvJitLink takes (it compiles the ISA of its
 * own CUDA release: nvJitLink 13.0, ISA 9.0; 12.8, 8.7), loading it as a
 * PTX that needs it would; 0.0 when none is found. */
void gl_cuda_compat_nvjitlink_max_ptx(unsigned *major, unsigned *minor);

#endif /* GL_BACKEND_CUDA_COMPAT_H */
