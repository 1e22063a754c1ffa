/*
 * backend.h - what a worker needs from a device: the backend interface.
 *
 * worker.c does framing, validation and dispatch; everything that touches a
 * device goes through a gl_backend, a table of operations in the style of a
 * driver vtable. backend_cuda.c implements it on the CUDA driver API,
 * backend_emu.c on the emulated device (PTX run on the CPU, src/emu/), and
 * the unit tests use a fake one.
 *
 * Conventions for every operation:
 *   - Returns a gpulease_status: GPULEASE_OK, or the wire status the worker
 *     replies with, having written a human-readable reason into err (which
 *     names the device error, e.g. "CUDA_ERROR_ILLEGAL_ADDRESS").
 *   - Offsets are bytes from the start of the lease's region and have been
 *     range-checked by the worker (src/worker/submit_check.h).
 *   - Operations other than probe, init and destroy are called only after
 *     a successful init.
 */
#ifndef GL_WORKER_BACKEND_H
#define GL_WORKER_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpulease/gpulease.h"
#include "proto/wire.h"

typedef struct gl_backend gl_backend;

/* One kernel launch. args follows cuLaunchKernel's convention: args[i]
 * points at the bytes of parameter i, arg_sizes[i] of them. The driver
 * reads as many parameters, of the sizes, that the compiled kernel
 * declares, whatever the client sent; so the worker guarantees that
 * args[i] is a valid pointer for every i < GL_BACKEND_ARG_SLOTS and that
 * each is readable for GL_BACKEND_ARG_READABLE bytes (the worker's own
 * argument area: later arguments, then zeros). A mismatched parameter list
 * therefore gives the kernel wrong values, never the worker a crash or a
 * read of foreign memory (and backends that know the kernel's parameter
 * sizes let the worker refuse it first: param_sizes below). */
typedef struct gl_launch {
  const char *kernel_name; /* NUL-terminated, for messages */
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_mem_bytes;
  void **args;
  const size_t *arg_sizes;
  size_t arg_count;
} gl_launch;

#define GL_BACKEND_ARG_READABLE 32768 /* CUDA 12.1+ kernel parameter limit */
#define GL_BACKEND_ARG_SLOTS 32768    /* one-byte parameters filling it */

typedef struct gl_backend_ops {
  const char *name; /* "cuda", "emulated" */

  /* Lists the devices. May be called before or without init. NO_DEVICE
   * when the device layer is unavailable (driver missing), with the
   * reason. */
  gpulease_status (*probe)(gl_backend *b, gl_probe_resp *out, char *err, size_t errlen);

  /* Opens device `ordinal`, reserves a region of vram_bytes, zeroes it.
   * *region_base receives the region's device address, device_name the
   * device's name. Called at most once. */
  gpulease_status (*init)(gl_backend *b, uint32_t ordinal, uint64_t vram_bytes,
                          uint64_t *region_base, char *device_name, size_t name_len, char *err,
                          size_t errlen);

  /* Loads a module. image has len bytes and a NUL byte at image[len] (PTX
   * needs it); it is only borrowed for the call. *module receives an opaque
   * handle for get_function and unload_module. LOAD_FAILED with the
   * compiler's log on failure. */
  gpulease_status (*load_module)(gl_backend *b, const uint8_t *image, size_t len,
                                 gpulease_image_format format, void **module, char *err,
                                 size_t errlen);
  void (*unload_module)(gl_backend *b, void *module);

  /* Finds kernel `name` (NUL-terminated) in module. LAUNCH_FAILED when it
   * is not there. */
  gpulease_status (*get_function)(gl_backend *b, void *module, const char *name, void **fn,
                                  char *err, size_t errlen);

  /* Optional (may be NULL): the sizes in bytes of fn's parameters, as the
   * compiled kernel declares them, so the worker can refuse a mismatched
   * parameter list. Writes at most max sizes and *count = the number of
   * parameters. UNSUPPORTED when the device layer cannot tell. */
  gpulease_status (*param_sizes)(gl_backend *b, void *fn, size_t *sizes, size_t max,
                                 size_t *count, char *err, size_t errlen);

  /* Copies len bytes from host src to region offset. WRITE_FAILED. */
  gpulease_status (*write)(gl_backend *b, uint64_t offset, const void *src, size_t len,
                           char *err, size_t errlen);

  /* Runs fn and waits for it; *gpu_time_ns receives the kernel's device
   * time. LAUNCH_FAILED (with the device error name). */
  gpulease_status (*launch)(gl_backend *b, void *fn, const gl_launch *launch,
                            uint64_t *gpu_time_ns, char *err, size_t errlen);

  /* Copies len bytes from region offset to host dst. READ_FAILED. */
  gpulease_status (*read)(gl_backend *b, uint64_t offset, void *dst, size_t len, char *err,
                          size_t errlen);

  /* True once a device error has made the context unusable (a kernel
   * faulted: every later call would fail too). The worker then replies and
   * exits with GL_WORKER_EXIT_CONTEXT_LOST. */
  bool (*context_lost)(gl_backend *b);

  /* Releases everything (modules must have been unloaded first). */
  void (*destroy)(gl_backend *b);
} gl_backend_ops;

struct gl_backend {
  const gl_backend_ops *ops;
};

/* The CUDA driver backend (backend_cuda.c). The driver is loaded lazily by
 * probe or init, so creating it never fails for lack of a GPU. NULL only
 * when out of memory. */
gl_backend *gl_backend_cuda_new(void);

#endif /* GL_WORKER_BACKEND_H */
