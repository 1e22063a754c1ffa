/*
 * launch_args.h - the one builder of kernel arguments for the backend's
 * launch (gl_launch's args[] and arg_sizes[], backend.h), used by the
 * worker's one launch (gl_sop_launch, session_ops.c) for GPU_SUBMIT (from
 * its param list of pointer offsets and scalars) and for a session's
 * LAUNCH and LAUNCH_EX (from buffers + offsets and scalars), and by a
 * launch recorded in a graph.
 *
 * The callers read their own param lists and check them (offsets against
 * the region or the buffer, sizes against the kernel's); this file lays
 * the arguments out: argument k in slot k of an argument area, every slot
 * past the last argument reading as zero. No device calls, no I/O.
 */
#ifndef GL_WORKER_LAUNCH_ARGS_H
#define GL_WORKER_LAUNCH_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "gpulease/gpulease.h"

/* Each kernel argument is copied into its own slot of an argument area,
 * as large as the largest scalar (GPULEASE_MAX_SCALAR_BYTES = 128, a
 * CUtensorMap). */
#define GL_WK_SLOT_BYTES GPULEASE_MAX_SCALAR_BYTES
#define GL_WK_SLOT_AREA (GPULEASE_MAX_PARAMS * GL_WK_SLOT_BYTES)

/* Where kernel arguments are built: cuLaunchKernel's args[] and the bytes
 * they point at (see gl_launch in backend.h). One per thread that
 * launches. */
typedef struct gl_argbuf {
  uint8_t *area; /* GL_WK_SLOT_AREA + GL_BACKEND_ARG_READABLE bytes */
  void **args;   /* GL_BACKEND_ARG_SLOTS pointers */
  size_t sizes[GPULEASE_MAX_PARAMS + 1];
  size_t kernel_sizes[GPULEASE_MAX_PARAMS + 1];
  size_t count; /* arguments of the launch being built */
  size_t dirty; /* argument slots written since the area was last zeroed */
} gl_argbuf;

/* 0, or -1 when out of memory (nothing left to free). */
int gl_argbuf_init(gl_argbuf *a);
void gl_argbuf_free(gl_argbuf *a);

/* Starts a launch's arguments: zeroes the slots the last launch wrote, so
 * that every slot past this launch's arguments reads as zero, and sets
 * count to 0. */
void gl_launch_args_begin(gl_argbuf *a);

/* Appends a device address (8 bytes) as the next argument. The caller
 * keeps count < GPULEASE_MAX_PARAMS. */
void gl_launch_args_pointer(gl_argbuf *a, uint64_t ptr);

/* Appends size bytes of value (size <= GL_WK_SLOT_BYTES, as the decoder
 * checked) as the next argument, as gl_launch_args_pointer. */
void gl_launch_args_value(gl_argbuf *a, const uint8_t *value, size_t size);

#endif /* GL_WORKER_LAUNCH_ARGS_H */
