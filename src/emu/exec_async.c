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
 *
 * st.async and red.async store or combine one value (or vector) into a
 * cluster block's shared memory and complete its bytes on the mbarrier
 * there.
 *
 * cp.reduce.async.bulk{.tensor} goes the same ways, each element combined
 * into the destination with the atomics' read-modify-write (several host
 * threads may reduce into one global buffer).
 *
 * cp.async.bulk.tensor (.tile, ranks 1-5) reads the tensor map the
 * program names (emu.h has its encoding), copies the box at the given
 * coordinates element by element, the elements outside the tensor read as
 * the map's fill value (G2S) or left alone (S2G), the shared side
 * swizzled as the map says, and completes the box's bytes on the mbarrier.
 */
#include <string.h>

#include "emu/exec_internal.h"
#include "emu/tensormap.h"

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
                      in->line,
                      in->op == GL_PTX_OP_CPASYNC    ? "cp.async"
                      : in->op == GL_PTX_OP_CPBULK   ? "cp.async.bulk"
                      : in->op == GL_PTX_OP_STASYNC  ? "st.async"
                      : in->op == GL_PTX_OP_REDASYNC ? "red.async"
                                                     : "cp.async.bulk.tensor",
                      what, (unsigned long long)v, t[0], t[1], t[2], b->ctaid[0], b->ctaid[1],
                      b->ctaid[2]);
}

/* Host pointer for size > 0 bytes at addr in space, aligned to align (a
 * power of two): its first bytes and its last byte checked like any
 * access, and both in one piece of memory. NULL after failing the launch. */
static uint8_t *span(gl_emu_block *b, gl_emu_warp *w, unsigned lane, const gl_ptx_insn *in,
                     unsigned space, uint64_t addr, uint64_t size, uint64_t align, int write) {
  if (addr & (align - 1)) {
    fail_copy(b, w, lane, in, "CUDA_ERROR_MISALIGNED_ADDRESS",
              align == 16 ? "address not 16-byte aligned:" : "address not aligned to its size:",
              addr);
    return NULL;
  }
  /* the first piece as one access (its message then names its size) */
  uint64_t first = 1;
  while (first * 2 <= size && first * 2 <= align)
    first *= 2;
  uint8_t *p = gl_emu__mem_ptr(b, w, lane, in, space, addr, first, write);
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

/* The offset inside its block of a .shared::cluster address. */
static inline uint64_t cta_offset(uint64_t a) {
  return a >= GL_EMU_CLUSTER_STRIDE ? (a & (GL_EMU_CLUSTER_STRIDE - 1)) : a;
}

/* The cluster ranks a ctaMask names, checked against the cluster. */
static int multicast_ranks(gl_emu_block *b, gl_emu_warp *w, unsigned lane,
                           const gl_ptx_insn *in, uint64_t mask, uint32_t *ranks) {
  uint32_t r = (uint32_t)(mask & 0xffffu);
  uint32_t n = b->L->cluster_size;
  if (r == 0 || (n < 16 && (r >> n)))
    return fail_copy(b, w, lane, in, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
                     "ctaMask names no block of the cluster or one outside it:", mask);
  *ranks = r;
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
  const uint64_t *mask =
      (in->flags & GL_PTX_F_MULTICAST) ? gl_emu__src_row(b, w, &in->dst[0], 0) : NULL;
  unsigned msp = in->mode == GL_PTX_BULK_S2S ? GL_PTX_SPACE_SHARED_CLUSTER : in->space;
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    uint64_t n = sz[l] & 0xffffffffu;
    if (n % 16)
      return fail_copy(b, w, l, in, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
                       "size not a multiple of 16:", n);
    uint64_t da = addr_of(b, w, &in->src[0], l), ma = addr_of(b, w, &in->src[3], l);
    uint32_t ranks = 1;
    if (mask && multicast_ranks(b, w, l, in, mask[l], &ranks))
      return -1;
    for (uint32_t rr = ranks; rr; rr &= rr - 1) {
      uint64_t d_r = da, m_r = ma;
      if (mask) { /* the same offset in each destination block */
        d_r = GL_EMU_CLUSTER_SHARED(__builtin_ctz(rr)) + cta_offset(da);
        m_r = GL_EMU_CLUSTER_SHARED(__builtin_ctz(rr)) + cta_offset(ma);
      }
      if (n) {
        uint8_t *d = span(b, w, l, in, dsp, d_r, n, 16, 1);
        if (!d)
          return -1;
        const uint8_t *s = span(b, w, l, in, ssp, addr_of(b, w, &in->src[1], l), n, 16, 0);
        if (!s)
          return -1;
        memmove(d, s, n);
        b->events++;
      }
      if (in->mode != GL_PTX_BULK_S2G && gl_emu__mbar_complete_tx(b, w, l, in, msp, m_r, n))
        return -1;
    }
  }
  return 0;
}

/* ---- Tensor copies ------------------------------------------------------- */

/* The shared address a swizzle moves off to: the 16-byte chunk index
 * (bits 4-6) XOR the 128-byte row (bits 7-9), as many bits as the mode. */
static inline uint64_t swizzle(uint64_t off, unsigned mode) {
  static const uint64_t mask[4] = {0, 1, 3, 7};
  return off ^ (((off >> 7) & mask[mode & 3]) << 4);
}

static void fill_value(const gl_emu_tmap *t, uint8_t *v) {
  memset(v, 0, 8);
  if (!t->oob_nan)
    return;
  static const uint64_t nan[] = {0, 0x7fffu, 0x7fffffffu, 0, 0x7fffffffffffffffull};
  uint64_t x = nan[t->esize == 8 ? 4 : t->esize == 4 ? 2 : 1];
  memcpy(v, &x, 8);
}

static int tensor_box(gl_emu_block *b, gl_emu_warp *w, unsigned l, const gl_ptx_insn *in,
                      const gl_emu_tmap *tm, const int64_t *c, uint64_t sa,
                      uint64_t box_bytes, int g2s, const gl_ptx_insn *red);

/* The tensor map src[1] names and the coordinates (src[2], dst[1]) of
 * lane l. 0, or -1 after failing the launch. */
static int tensor_args(gl_emu_block *b, gl_emu_warp *w, unsigned l, const gl_ptx_insn *in,
                       gl_emu_tmap *t, int64_t *c) {
  uint64_t ta = addr_of(b, w, &in->src[1], l);
  const uint8_t *h0 = gl_emu__mem_ptr(b, w, l, in, GL_PTX_SPACE_GENERIC, ta, 64, 0);
  if (!h0)
    return -1;
  const uint8_t *h1 = gl_emu__mem_ptr(b, w, l, in, GL_PTX_SPACE_GENERIC, ta + 64, 64, 0);
  if (!h1)
    return -1;
  uint8_t raw[GL_EMU_TMAP_BYTES];
  memcpy(raw, h0, 64);
  memcpy(raw + 64, h1, 64);
  if (gl_emu__tmap_load(raw, t))
    return fail_copy(b, w, l, in, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
                     "names no tensor map (gl_emu_tensormap_encode_tiled makes them) at", ta);
  if (t->rank != in->vec)
    return fail_copy(b, w, l, in, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
                     "dimension differs from the rank of the tensor map at", ta);
  for (unsigned k = 0; k < 5; k++) {
    uint32_t r = k < 4 ? in->src[2].vec[k] : in->dst[1].reg;
    c[k] = k < in->vec ? (int32_t)gl_emu__row(b, w, r)[l] : 0;
  }
  /* the box starts on a 16-byte boundary of dimension 0 (an H200 traps
   * otherwise, also outside the tensor) */
  if ((c[0] * t->esize) % 16)
    return fail_copy(b, w, l, in, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
                     "coordinate 0 is not a multiple of 16 bytes:", (uint64_t)c[0]);
  return 0;
}

/* dst (sz bytes) = dst op src, atomically, with red's operation and type. */
static int reduce_elem(gl_emu_block *b, gl_emu_warp *w, unsigned l, const gl_ptx_insn *in,
                       const gl_ptx_insn *red, uint8_t *dst, const uint8_t *src, unsigned sz) {
  uint64_t v = 0;
  memcpy(&v, src, sz);
  int ok = sz == 2 || sz == 4 || sz == 8;
  if (ok)
    (void)gl_emu__atom_rmw(red, dst, sz, v, &ok);
  if (!ok)
    return fail_copy(b, w, l, in, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
                     "reduction the element type does not have, type", red->type);
  return 0;
}

int gl_emu__exec_cptensor(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in,
                          uint32_t m) {
  const uint64_t *mask =
      (in->flags & GL_PTX_F_MULTICAST) ? gl_emu__src_row(b, w, &in->dst[0], 0) : NULL;
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    gl_emu_tmap t;
    int64_t c[5];
    if (tensor_args(b, w, l, in, &t, c))
      return -1;
    uint64_t box_bytes = (uint64_t)t.esize * t.box[0] * t.box[1] * t.box[2] * t.box[3] * t.box[4];
    uint64_t sa = addr_of(b, w, &in->src[0], l), ma = 0;
    int g2s = in->mode == GL_PTX_BULK_G2S;
    if (g2s)
      ma = addr_of(b, w, &in->src[3], l);
    uint32_t ranks = 1;
    if (mask && multicast_ranks(b, w, l, in, mask[l], &ranks))
      return -1;
    for (uint32_t rr = ranks; rr; rr &= rr - 1) {
      uint64_t s_r = sa, m_r = ma;
      if (mask) {
        s_r = GL_EMU_CLUSTER_SHARED(__builtin_ctz(rr)) + cta_offset(sa);
        m_r = GL_EMU_CLUSTER_SHARED(__builtin_ctz(rr)) + cta_offset(ma);
      }
      if (tensor_box(b, w, l, in, &t, c, s_r, box_bytes, g2s, NULL))
        return -1;
      if (g2s && gl_emu__mbar_complete_tx(b, w, l, in, in->space, m_r, box_bytes))
        return -1;
    }
  }
  return 0;
}

/* Copies the box at coordinates c between the tensor and shared address
 * sa (in->space): into shared memory when g2s, else out of it, each
 * element combined into the tensor by red's atomic operation when red is
 * not NULL. 0, or -1 after failing the launch. */
static int tensor_box(gl_emu_block *b, gl_emu_warp *w, unsigned l, const gl_ptx_insn *in,
                      const gl_emu_tmap *tm, const int64_t *c, uint64_t sa,
                      uint64_t box_bytes, int g2s, const gl_ptx_insn *red) {
  const gl_emu_tmap t = *tm;
  /* Stores and reductions (as an H200): no coordinate below 0, and
   * dimension 0 written in whole 16-byte pieces, so the elements past its
   * end inside its last 16 bytes are written too. */
  uint64_t dim0 = t.dim[0];
  if (!g2s) {
    for (unsigned k = 0; k < t.rank; k++)
      if (c[k] < 0)
        return fail_copy(b, w, l, in, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
                         "tensor store or reduction at a negative coordinate:", (uint64_t)c[k]);
    dim0 = (dim0 * t.esize + 15) / 16 * 16 / t.esize;
  }
  uint8_t *sh = span(b, w, l, in, in->space, sa, box_bytes, 128, g2s);
  if (!sh)
    return -1;
  uint8_t fill[8];
  fill_value(&t, fill);
  uint64_t row = 0; /* the box row (k1..k4 linearised) */
  for (uint32_t k4 = 0; k4 < t.box[4]; k4++)
    for (uint32_t k3 = 0; k3 < t.box[3]; k3++)
      for (uint32_t k2 = 0; k2 < t.box[2]; k2++)
        for (uint32_t k1 = 0; k1 < t.box[1]; k1++, row++) {
          int64_t g[5] = {0, c[1] + k1, c[2] + k2, c[3] + k3, c[4] + k4};
          int row_in = 1;
          uint64_t gbase = t.addr;
          for (unsigned k = 1; k < 5; k++) {
            if (g[k] < 0 || g[k] >= (int64_t)t.dim[k])
              row_in = 0;
            else
              gbase += (uint64_t)g[k] * t.stride[k - 1];
          }
          /* the elements of the row inside dimension 0: [lo, hi) */
          int64_t lo = c[0] < 0 ? -c[0] : 0, hi = (int64_t)dim0 - c[0];
          if (hi > (int64_t)t.box[0])
            hi = t.box[0];
          if (!row_in || lo >= hi)
            lo = hi = 0;
          uint8_t *gp = NULL;
          if (hi > lo) {
            gp = span(b, w, l, in, GL_PTX_SPACE_GLOBAL,
                      gbase + (uint64_t)(c[0] + lo) * t.esize,
                      (uint64_t)(hi - lo) * t.esize, t.esize, !g2s);
            if (!gp)
              return -1;
          }
          for (uint32_t k0 = 0; k0 < t.box[0]; k0++) {
            uint64_t lin = (row * t.box[0] + k0) * t.esize;
            uint64_t off = swizzle(sa + lin, t.swizzle) - sa;
            if (off + t.esize > box_bytes)
              return fail_copy(b, w, l, in, "CUDA_ERROR_MISALIGNED_ADDRESS",
                               "swizzled box leaves its shared memory at", sa);
            int inside = (int64_t)k0 >= lo && (int64_t)k0 < hi;
            uint8_t *ge = inside ? gp + (uint64_t)((int64_t)k0 - lo) * t.esize : NULL;
            if (g2s)
              memcpy(sh + off, inside ? ge : fill, t.esize);
            else if (inside && !red)
              memcpy(ge, sh + off, t.esize);
            else if (inside && reduce_elem(b, w, l, in, red, ge, sh + off, t.esize))
              return -1;
          }
        }
  b->events++;
  return 0;
}

/* ---- Bulk reductions ------------------------------------------------------ */

/* The PTX type of a tensor map's elements (CUtensorMapDataType order). */
static uint8_t tmap_ptx_type(const gl_emu_tmap *t) {
  static const uint8_t ty[13] = {GL_PTX_T_U8,  GL_PTX_T_U16, GL_PTX_T_U32,  GL_PTX_T_S32,
                                 GL_PTX_T_U64, GL_PTX_T_S64, GL_PTX_T_F16,  GL_PTX_T_F32,
                                 GL_PTX_T_F64, GL_PTX_T_BF16, GL_PTX_T_F32, GL_PTX_T_NONE,
                                 GL_PTX_T_NONE};
  return t->data_type < 13 ? ty[t->data_type] : GL_PTX_T_NONE;
}

int gl_emu__exec_cpreduce(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in,
                          uint32_t m) {
  gl_ptx_insn red = *in; /* mode: the operation; type: the element's */
  if (in->vec) {         /* a tensor */
    for (uint32_t mm = m; mm; mm &= mm - 1) {
      unsigned l = (unsigned)__builtin_ctz(mm);
      gl_emu_tmap t;
      int64_t c[5];
      if (tensor_args(b, w, l, in, &t, c))
        return -1;
      red.type = tmap_ptx_type(&t);
      uint64_t box_bytes =
          (uint64_t)t.esize * t.box[0] * t.box[1] * t.box[2] * t.box[3] * t.box[4];
      if (tensor_box(b, w, l, in, &t, c, addr_of(b, w, &in->src[0], l), box_bytes, 0, &red))
        return -1;
    }
    return 0;
  }
  const uint64_t *sz = gl_emu__src_row(b, w, &in->src[2], 2);
  unsigned esz = gl_ptx_type_size((gl_ptx_type)in->type);
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    uint64_t n = sz[l] & 0xffffffffu;
    if (n % 16)
      return fail_copy(b, w, l, in, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
                       "size not a multiple of 16:", n);
    if (n) {
      uint8_t *d = span(b, w, l, in, in->space, addr_of(b, w, &in->src[0], l), n, 16, 1);
      if (!d)
        return -1;
      const uint8_t *s =
          span(b, w, l, in, GL_PTX_SPACE_SHARED, addr_of(b, w, &in->src[1], l), n, 16, 0);
      if (!s)
        return -1;
      for (uint64_t off = 0; off < n; off += esz)
        if (reduce_elem(b, w, l, in, &red, d + off, s + off, esz))
          return -1;
      b->events++;
    }
    if (in->space == GL_PTX_SPACE_SHARED_CLUSTER &&
        gl_emu__mbar_complete_tx(b, w, l, in, GL_PTX_SPACE_SHARED_CLUSTER,
                                 addr_of(b, w, &in->src[3], l), n))
      return -1;
  }
  return 0;
}

/* ---- st.async, red.async -------------------------------------------------- */

int gl_emu__exec_stasync(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m) {
  unsigned esz = gl_ptx_type_size((gl_ptx_type)in->type), n = in->vec;
  const gl_ptx_operand *v = &in->src[1];
  const uint64_t *val = v->kind == GL_PTX_O_VEC ? NULL : gl_emu__src_row(b, w, v, 1);
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    uint64_t a = addr_of(b, w, &in->src[0], l);
    uint8_t *p = gl_emu__mem_ptr(b, w, l, in, GL_PTX_SPACE_SHARED_CLUSTER, a, (uint64_t)esz * n, 1);
    if (!p)
      return -1;
    if (in->op == GL_PTX_OP_REDASYNC) {
      int ok;
      (void)gl_emu__atom_rmw(in, p, esz, val[l], &ok);
      if (!ok)
        return fail_copy(b, w, l, in, "CUDA_ERROR_ILLEGAL_INSTRUCTION",
                         "reduction the type does not have, type", in->type);
    } else {
      for (unsigned i = 0; i < n; i++) {
        uint64_t x = val ? val[l] : gl_emu__row(b, w, v->vec[i])[l];
        memcpy(p + (size_t)i * esz, &x, esz); /* little-endian: the low bytes */
      }
    }
    b->events++;
    if (gl_emu__mbar_complete_tx(b, w, l, in, GL_PTX_SPACE_SHARED_CLUSTER,
                                 addr_of(b, w, &in->src[2], l), (uint64_t)esz * n))
      return -1;
  }
  return 0;
}
