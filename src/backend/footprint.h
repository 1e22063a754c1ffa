/*
 * footprint.h - the device memory a module image declares, read from the
 * image without the CUDA driver, so that a load which would take a lease
 * past its VRAM can be refused before it runs (docs/security.md,
 * "Resources a lease can make the node spend").
 *
 * What an image declares, by format:
 *  - PTX: every `.global` and `.const` variable it defines (not `.extern`),
 *    at module scope or in a function body: element size (.b8 .. .b64,
 *    .u/.s/.f types, .v2/.v4/.v8 vectors of them) times the array's
 *    dimensions, an unsized dimension taken from its initializer, each
 *    aligned to its `.align` (or its element size). Code is known only
 *    once the JIT has compiled it: code_bytes is 0.
 *  - cubin (ELF): the sizes of its `.nv.global` (zero-filled) and
 *    `.nv.global.init` sections (global_bytes), of its `.nv.constantN`
 *    banks but a kernel's parameter bank `.nv.constant0.<kernel>`
 *    (const_bytes), and of its `.text.<function>` sections (code_bytes).
 *  - fatbin: the image the device of compute capability `sm` loads, as the
 *    driver picks it (a cubin of that SM, else of the same major and a
 *    lower minor, else the PTX of the highest SM not above it); with sm 0,
 *    the largest over every image, an upper bound whatever the device.
 * The driver adds its own per-module overhead (a few KiB, rounded to its
 * allocation granularity); that is the context's, not the image's.
 */
#ifndef GL_BACKEND_FOOTPRINT_H
#define GL_BACKEND_FOOTPRINT_H

#include <stddef.h>
#include <stdint.h>

#include "gpulease/gpulease.h"

typedef struct gl_footprint {
  uint64_t global_bytes; /* .global variables, zero-filled and initialised */
  uint64_t const_bytes;  /* .const variables, the module's constant banks */
  uint64_t code_bytes;   /* machine code (cubins); 0 for PTX */
} gl_footprint;

/* Reads what image (len bytes, fmt: PTX, CUBIN or FATBIN; AUTO detects
 * it as gl_image_resolve does) declares into *out, for a device of
 * compute capability sm (major * 10 + minor, 90 for sm_90; 0: the largest
 * over a fatbin's images). Sizes saturate at UINT64_MAX. 0 on success;
 * -1 with why in err when the image cannot be read (an ELF whose section
 * table is out of the file, a fatbin that does not parse or holds no image
 * for sm). A PTX text is always readable: what it declares and the
 * scanner does not understand counts 0, and the driver's JIT refuses it
 * later. The image is only read; nothing is kept. */
int gl_footprint_of(const uint8_t *image, size_t len, gpulease_image_format fmt, unsigned sm,
                    gl_footprint *out, char *err, size_t errlen);

/* global_bytes + const_bytes + code_bytes, saturating. */
uint64_t gl_footprint_total(const gl_footprint *f);

#endif /* GL_BACKEND_FOOTPRINT_H */
