/*
 * ptx_header.h - what a PTX module's header says (.version, .target), and
 * whether a GPU can load it: shared by the worker (nvJitLink's fallback,
 * src/backend/cuda_compat.c) and the client library, which checks a PTX
 * against the node's inventory before sending it (src/lib/ptx_check.c).
 * docs/protocol.md, GET_INVENTORY, gives the rules.
 */
#ifndef GL_COMMON_PTX_HEADER_H
#define GL_COMMON_PTX_HEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a PTX module's header says: its ISA version (".version 9.4": 9, 4)
 * and first target (".target sm_90a": "sm_90a"). 0, or -1 when the text
 * (len bytes, need not be NUL-terminated) has no ".version" line.
 * Comments are skipped. */
int gl_ptx_header(const uint8_t *ptx, size_t len, unsigned *major, unsigned *minor, char *target,
                  size_t target_len);

/* What one GPU of a node loads (GET_INVENTORY's entry). */
typedef struct gl_ptx_caps {
  uint8_t cc_major, cc_minor;
  bool arch_specific;        /* takes sm_<cc>a as well */
  uint8_t isa_driver[2];     /* newest ISA through the driver's JIT; 0.0 unknown */
  uint8_t isa_nvjitlink[2];  /* through nvJitLink; 0.0 none */
} gl_ptx_caps;

/* Checks a PTX (len bytes) against caps: 0 when the GPU can load it as far
 * as its header tells (or the header or caps are unknown), -1 with why and
 * what to send instead in err. Refused: a .version above both ISA
 * versions; a .target of a newer GPU; an arch-specific target (sm_90a)
 * other than the GPU's own; a family target (sm_100f) of another major. */
int gl_ptx_check(const uint8_t *ptx, size_t len, const gl_ptx_caps *caps, char *err,
                 size_t errlen);

#endif /* GL_COMMON_PTX_HEADER_H */
