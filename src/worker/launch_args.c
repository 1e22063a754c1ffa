/*
 * launch_args.c - the kernel argument areas and the one builder of a
 * launch's arguments (launch_args.h), for GPU_SUBMIT and session LAUNCH
 * (gl_sop_launch).
 */
#include "worker/launch_args.h"

#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"

int gl_argbuf_init(gl_argbuf *a) {
  a->area = calloc(1, GL_WK_SLOT_AREA + GL_BACKEND_ARG_READABLE);
  a->args = malloc(GL_BACKEND_ARG_SLOTS * sizeof *a->args);
  a->count = 0;
  a->dirty = 0;
  if (!a->area || !a->args) {
    gl_argbuf_free(a);
    return -1;
  }
  /* Argument i lives in slot i; pointers past the last slot all point at
   * the zero padding, readable GL_BACKEND_ARG_READABLE bytes. */
  for (size_t i = 0; i < GL_BACKEND_ARG_SLOTS; i++)
    a->args[i] = a->area + (i < GPULEASE_MAX_PARAMS ? i * GL_WK_SLOT_BYTES : GL_WK_SLOT_AREA);
  return 0;
}

void gl_argbuf_free(gl_argbuf *a) {
  free(a->area);
  free(a->args);
  a->area = NULL;
  a->args = NULL;
}

void gl_launch_args_begin(gl_argbuf *a) {
  memset(a->area, 0, a->dirty * GL_WK_SLOT_BYTES);
  a->dirty = 0;
  a->count = 0;
}

void gl_launch_args_pointer(gl_argbuf *a, uint64_t ptr) {
  memcpy(a->area + a->count * GL_WK_SLOT_BYTES, &ptr, sizeof ptr);
  a->sizes[a->count++] = sizeof ptr;
  a->dirty = a->count;
}

void gl_launch_args_value(gl_argbuf *a, const uint8_t *value, size_t size) {
  memcpy(a->area + a->count * GL_WK_SLOT_BYTES, value, size);
  a->sizes[a->count++] = size;
  a->dirty = a->count;
}
