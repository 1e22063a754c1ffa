/*
 * fuzz_ptx.c - libFuzzer harness for the emulated device's PTX parser
 * (src/emu/ptx_*.c).
 *
 * Every input is parsed with gl_ptx_parse() as untrusted module text (not
 * NUL-terminated) and the module freed. The sanitizers catch out-of-bounds
 * reads, leaks and undefined behaviour; on top of that the harness checks
 * properties and abort()s when one fails:
 *
 *   - a failure is LOAD_FAILED, UNSUPPORTED or NO_MEMORY, with a
 *     NUL-terminated message that starts with "line ";
 *   - a module that parses is self-consistent: every function's
 *     instructions lie inside the array, every branch target is an
 *     instruction, every call names a call record and a function, every
 *     register operand is below nregs, and the data image has data_bytes.
 *
 * Built two ways: with -fsanitize=fuzzer by fuzz/CMakeLists.txt (GL_FUZZ),
 * and with fuzz/replay_main.c as fuzz_ptx_replay, which replays the seed
 * corpus tests/fuzz-corpus/ptx/ under ctest
 * (tests/fuzz-corpus/CMakeLists.txt).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/ptx_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fuzz_ptx: property violated: %s\n", what);
    abort();
  }
}

static void check_reg(const gl_ptx_module *m, uint32_t r) {
  check(r == GL_PTX_NOREG || r < m->nregs, "register index below nregs");
}

static void check_operand(const gl_ptx_module *m, const gl_ptx_operand *o) {
  switch (o->kind) {
  case GL_PTX_O_REG:
  case GL_PTX_O_ADDR: check_reg(m, o->reg); break;
  case GL_PTX_O_VEC:
    check(o->vec_n >= 1 && o->vec_n <= 4, "vector of 1..4");
    for (int i = 0; i < o->vec_n; i++) check_reg(m, o->vec[i]);
    break;
  case GL_PTX_O_SREG: check(o->sreg < GL_PTX_SR_COUNT, "special register"); break;
  case GL_PTX_O_LABEL: check(o->imm >= 0 && (uint64_t)o->imm < m->ninsns, "label target"); break;
  default: break;
  }
}

static void check_module(const gl_ptx_module *m) {
  check(m->nregs >= 1, "register 0 reserved");
  check(m->data != NULL, "data image present");
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    const gl_ptx_func *f = &m->funcs[i];
    check((uint64_t)f->first_insn + f->insn_count <= m->ninsns, "function range");
    check(f->nparams == 0 || f->params != NULL, "params present");
  }
  for (uint32_t i = 0; i < m->ninsns; i++) {
    const gl_ptx_insn *in = &m->insns[i];
    check(in->op < GL_PTX_OP_COUNT, "opcode");
    check(in->ndst <= 2 && in->nsrc <= 4, "operand counts");
    check_reg(m, in->guard);
    for (int k = 0; k < in->ndst; k++) check_operand(m, &in->dst[k]);
    for (int k = 0; k < in->nsrc; k++) check_operand(m, &in->src[k]);
    if (in->op == GL_PTX_OP_CALL) {
      check(in->src[0].imm >= 0 && (uint64_t)in->src[0].imm < m->ncalls, "call record");
      check(m->calls[in->src[0].imm].func < m->nfuncs, "call target");
    }
  }
  /* touch the whole data image so ASan sees its bounds */
  volatile uint8_t sum = 0;
  for (uint64_t i = 0; i < m->data_bytes; i += 4096) sum = (uint8_t)(sum + m->data[i]);
  (void)sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* A heap copy of exactly size bytes: no terminator to lean on. */
  char *text = malloc(size ? size : 1);
  if (!text) return 0;
  if (size) memcpy(text, data, size);
  gl_ptx_module *m = NULL;
  char err[256];
  memset(err, 'x', sizeof err);
  gpulease_status st = gl_ptx_parse(text, size, 0x100000000ull, &m, err, sizeof err);
  if (st == GPULEASE_OK) {
    check(m != NULL, "module on success");
    check_module(m);
    gl_ptx_module_free(m);
  } else {
    check(m == NULL, "no module on failure");
    check(st == GPULEASE_LOAD_FAILED || st == GPULEASE_UNSUPPORTED || st == GPULEASE_NO_MEMORY,
          "known error status");
    check(memchr(err, '\0', sizeof err) != NULL, "terminated message");
    check(strncmp(err, "line ", 5) == 0, "message names a line");
  }
  free(text);
  return 0;
}
