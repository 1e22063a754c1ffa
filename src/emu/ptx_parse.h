/*
 * ptx_parse.h - PTX text to gl_ptx_module (ptx_ir.h).
 *
 * Accepts the PTX that nvcc 12 and 13 emit for sm_50 to sm_90 (.version up
 * to 9.x), and is lenient about the forms newer targets use: typed .ptr
 * kernel parameters (.param .u64 .ptr .global .align 4 name), floats kept in
 * .b32 registers, literal operands where registers are usual. Everything
 * outside the emulator's instruction set (textures, surfaces, mma, wgmma,
 * tensor-map copies, ...) is refused here, at load time, never at launch.
 */
#ifndef GL_EMU_PTX_PARSE_H
#define GL_EMU_PTX_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "emu/ptx_ir.h"
#include "gpulease/gpulease.h"

/* Parses len bytes of PTX text (need not be NUL-terminated). data_base is
 * the device address where the module's .global/.const data image will be
 * mapped; addresses of those variables resolve against it. On success
 * *out receives a module owned by the caller (gl_ptx_module_free).
 * Errors, with a message naming the line ("line 42: ..."):
 *   GPULEASE_UNSUPPORTED   a valid instruction or directive the emulator
 *                          does not implement (names it: "line 42:
 *                          'tex.2d.v4.f32.f32' is not supported by the
 *                          emulated device"), recursion between .funcs
 *   GPULEASE_LOAD_FAILED   not PTX, a syntax error, an undefined name, a
 *                          .target above sm_90
 *   GPULEASE_NO_MEMORY     out of memory (client-side code reused) */
gpulease_status gl_ptx_parse(const char *text, size_t len, uint64_t data_base,
                             gl_ptx_module **out, char *err, size_t errlen);

/* Frees a module from gl_ptx_parse. NULL is fine. */
void gl_ptx_module_free(gl_ptx_module *m);

/* Looks up a function (.entry or .func) by name; -1 when absent. */
int gl_ptx_module_find(const gl_ptx_module *m, const char *name);

#endif /* GL_EMU_PTX_PARSE_H */
