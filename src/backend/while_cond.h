/*
 * while_cond.h - the kernel that ends each pass of a graph WHILE loop,
 * compiled ahead for each GPU architecture (src/backend/while_cond.cu;
 * the cubins are in while_cond_cubins.c, which the build writes from nvcc's
 * cubins or the checked-in src/backend/while_cond/sm_XX.cubin; see
 * src/backend/CMakeLists.txt).
 *
 *   extern "C" __global__ void gl_while_cond(cudaGraphConditionalHandle h,
 *                                            const unsigned *flag);
 *
 * sets the loop's condition to *flag != 0.
 */
#ifndef GL_BACKEND_WHILE_COND_H
#define GL_BACKEND_WHILE_COND_H

#include <stddef.h>

/* The kernel's name in every cubin. */
#define GL_WHILE_COND_KERNEL "gl_while_cond"

/* One architecture's cubin: sm_<major><minor>. */
typedef struct gl_while_cond_cubin {
  int major, minor;
  const unsigned char *bytes;
  size_t len;
} gl_while_cond_cubin;

extern const gl_while_cond_cubin gl_while_cond_cubins[];
extern const size_t gl_while_cond_cubin_count;

#endif /* GL_BACKEND_WHILE_COND_H */
