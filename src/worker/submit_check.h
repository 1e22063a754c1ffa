/*
 * submit_check.h - the checks the worker makes on a GPU_SUBMIT before any
 * device call: image format detection and range/dimension validation.
 *
 * Pure functions (no CUDA, no I/O), internal to src/worker/ and exposed
 * here so that tests/unit/test_submit_check.c can run them without a GPU.
 * Every refusal comes with a message precise enough for the client to see
 * which field is wrong and by how much.
 */
#ifndef GL_WORKER_SUBMIT_CHECK_H
#define GL_WORKER_SUBMIT_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "gpulease/gpulease.h"
#include "proto/wire.h"

/* Most threads per block CUDA allows on every GPU we support. */
#define GL_MAX_THREADS_PER_BLOCK 1024

/* Magic numbers of the binary image formats. */
#define GL_FATBIN_MAGIC 0xBA55ED50u /* little-endian u32 at offset 0 */

/* Detects an image's format from its bytes: FATBIN (magic 0xBA55ED50
 * little-endian at offset 0), CUBIN (ELF: 0x7f 'E' 'L' 'F'), PTX (text
 * whose first token after whitespace and // or block comments is
 * ".version"). Returns GPULEASE_IMAGE_AUTO when none matches. */
gpulease_image_format gl_image_detect(const uint8_t *image, size_t len);

/* Resolves the format a submit declares (AUTO is detected) and, for PTX,
 * the length of the text the driver will see (trailing NUL bytes are
 * dropped; a NUL before the end is refused, since the driver would silently
 * ignore everything after it).
 *   *format: PTX, CUBIN or FATBIN on success.
 *   *text_len: bytes of the image to hand over (== len except for PTX).
 * Returns OK, LOAD_FAILED (AUTO and not recognised), INVALID_ARGUMENT (a
 * PTX image with an embedded NUL, or an empty one) or UNSUPPORTED (an
 * unknown format number), with err filled. */
gpulease_status gl_image_resolve(uint8_t declared, const uint8_t *image, size_t len,
                                 gpulease_image_format *format, size_t *text_len, char *err,
                                 size_t errlen);

/* "PTX", "cubin", "fatbin" or "auto". Static string. */
const char *gl_image_format_name(gpulease_image_format f);

/* Checks a decoded submit request against a lease region of vram_bytes:
 *   - grid and block dimensions non-zero, block_x*block_y*block_z <= 1024;
 *   - input_offset + input_len <= vram_bytes;
 *   - output_offset + output_size <= vram_bytes, output_size <= max_output;
 *   - with GL_SUBMIT_F_PARAMS, every pointer param's offset < vram_bytes,
 *     and every param is a pointer or a 1..128 byte scalar;
 *   - the kernel name is 1..1024 bytes without a NUL.
 * All sums are overflow-safe. Returns OK, INVALID_ARGUMENT or TOO_LARGE
 * (output_size above max_output) with err filled. */
gpulease_status gl_submit_check(const gl_submit_req *req, uint64_t vram_bytes,
                                uint64_t max_output, char *err, size_t errlen);

/* True when [offset, offset + len) lies within [0, limit). Overflow-safe. */
static inline int gl_range_ok(uint64_t offset, uint64_t len, uint64_t limit) {
  return offset <= limit && len <= limit - offset;
}

#endif /* GL_WORKER_SUBMIT_CHECK_H */
