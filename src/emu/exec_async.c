/*
 * exec_async.c - asynchronous copies: cp.async.ca/.cg (4, 8 or 16 bytes
 * from global to shared memory, zero-filled past src-size) and
 * cp.async.bulk (global -> shared with an mbarrier's tx bytes, shared::cta
 * -> a cluster peer's shared memory, shared -> global).
 *
 * The copies happen when the instruction issues. PTX promises only that a
 * copy is complete once a wait says so (cp.async.wait_group/wait_all, the
 * mbarrier's phase, cp.async.bulk.wait_group), and that reading the
 * destination or writing the source before then is undefined: a program
 * that keeps to the rules cannot tell an early copy from a late one, so
 * the groups and waits are no-ops (ptx_insn_async.c) and the bulk copy
 * completes its bytes on the mbarrier at once.
 */
#include <string.h>

#include "emu/exec_internal.h"

static uint64_t addr_of(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_operand *o,
                        unsigned lane) {
  uint64_t base = o->reg == GL_PTX_NOREG ? 0 : gl_emu__row(b, w, o->reg)[lane];
  return base + (uint64_t)o->imm;
}

static int fail_copy(gl_emu_block *b, gl_emu_warp *w, unsigned lane, const gl_ptx_insn *in,
                     const char *err, const char *what, uint64_t v) {
  uint32_t t[3];
  gl_emu__thread_of(b, w, lane, t);
  return gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                      "%s: line %u: %s %s 0x%llx (thread (%u,%u,%u), block (%u,%u,%u))", err,
                      in->line, in->op == GL_PTX_OP_CPASYNC ? "cp.async" : "cp.async.bulk",
                      what, (unsigned long long)v, t[0], t[1], t[2], b->ctaid[0], b->ctaid[1],
                      b->ctaid[2]);
}

/* Host pointer for size > 0 bytes at addr in space, aligned to align (a
 * power of two): its first and last byte checked like any access, and
 * both in one piece of memory. NULL after failing the launch. */
static uint8_t *span(gl_emu_block *b, gl_emu_warp *w, unsigned lane, const gl_ptx_insn *in,
                     unsigned space, uint64_t addr, uint64_t size, uint64_t align, int write) {
  if (addr & (align - 1)) {
    fail_copy(b, w, lane, in, "CUDA_ERROR_MISALIGNED_ADDRESS",
              align == 16 ? "address not 16-byte aligned:" : "address not aligned to its size:",
              addr);
    return NULL;
  }
  uint8_t *p = gl_emu__mem_ptr(b, w, lane, in, space, addr, 1, write);
  if (!p)
    return NULL;
  if (size > 1) {
    uint8_t *q = gl_emu__mem_ptr(b, w, lane, in, space, addr + size - 1, 1, write);
    if (!q)
      return NULL;
    if (q != p + size - 1) {
      fail_copy(b, w, lane, in, "CUDA_ERROR_ILLEGAL_ADDRESS",
                "range crosses the end of its memory at", addr);
      return NULL;
    }
  }
  return p;
}

int gl_emu__exec_cpasync(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m) {
  unsigned cp = in->mode;
  const uint64_t *ssz =
      in->src[2].kind != GL_PTX_O_NONE ? gl_emu__src_row(b, w, &in->src[2], 2) : NULL;
  const uint64_t *ign =
      in->src[3].kind != GL_PTX_O_NONE ? gl_emu__src_row(b, w, &in->src[3], 3) : NULL;
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    uint64_t n = ssz ? (ssz[l] & 0xffffffffu) : cp;
    if (ign && ign[l])
      n = 0;
    if (n > cp)
      return fail_copy(b, w, l, in, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
                       "src-size larger than cp-size:", n);
    uint8_t *d = span(b, w, l, in, GL_PTX_SPACE_SHARED, addr_of(b, w, &in->src[0], l), cp, cp,
                      1);
    if (!d)
      return -1;
    if (n) {
      const uint8_t *s = span(b, w, l, in, GL_PTX_SPACE_GLOBAL,
                              addr_of(b, w, &in->src[1], l), n, cp, 0);
      if (!s)
        return -1;
      memmove(d, s, n);
    }
    memset(d + n, 0, cp - n);
  }
  return 0;
}

int gl_emu__exec_cpbulk(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m) {
  const uint64_t *sz = gl_emu__src_row(b, w, &in->src[2], 2);
  unsigned dsp, ssp;
  switch (in->mode) {
  case GL_PTX_BULK_G2S:
    dsp = in->space;
    ssp = GL_PTX_SPACE_GLOBAL;
    break;
  case GL_PTX_BULK_S2S:
    dsp = GL_PTX_SPACE_SHARED_CLUSTER;
    ssp = GL_PTX_SPACE_SHARED;
    break;
  default:
    dsp = GL_PTX_SPACE_GLOBAL;
    ssp = GL_PTX_SPACE_SHARED;
    break;
  }
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    uint64_t n = sz[l] & 0xffffffffu;
    if (n % 16)
      return fail_copy(b, w, l, in, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
                       "size not a multiple of 16:", n);
    if (n) {
      uint8_t *d = span(b, w, l, in, dsp, addr_of(b, w, &in->src[0], l), n, 16, 1);
      if (!d)
        return -1;
      const uint8_t *s = span(b, w, l, in, ssp, addr_of(b, w, &in->src[1], l), n, 16, 0);
      if (!s)
        return -1;
      memmove(d, s, n);
      b->events++;
    }
    if (in->mode != GL_PTX_BULK_S2G &&
        gl_emu__mbar_complete_tx(b, w, l, in, in->mode == GL_PTX_BULK_S2S
                                                  ? GL_PTX_SPACE_SHARED_CLUSTER
                                                  : in->space,
                                 addr_of(b, w, &in->src[3], l), n))
      return -1;
  }
  return 0;
}
