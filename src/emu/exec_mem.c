/*
 * exec_mem.c - memory instructions: address translation with bounds and
 * alignment checks, ld, st, atom, red, cvta, and the cluster address
 * instructions mapa and getctarank (ptx_ir.h has the encoding).
 *
 * Every access is resolved to a host pointer only after checking that all
 * of its bytes lie inside one segment of the space it names (the device
 * region, a module's data, the block's shared memory, the thread's local
 * memory or the parameter buffer) and that the address is a multiple of
 * the access size. A failed check fails the launch with the PTX line, the
 * address, the space and the thread; nothing outside is read or written.
 *
 * Atomics use the host's atomic builtins on every space (one compare-and-
 * swap loop per operation), so global atomics stay atomic when blocks run
 * on several host threads. Lanes of a warp go in lane order, so results
 * are deterministic with one host thread.
 */
#include <math.h>
#include <string.h>

#include "emu/exec_internal.h"

enum { SP_GLOBAL, SP_SHARED, SP_LOCAL, SP_PARAM };
static const char *const sp_name[] = {"global", "shared", "local", "param"};

static const char *insn_name(const gl_ptx_insn *in) {
  switch (in->op) {
  case GL_PTX_OP_LD: return "ld";
  case GL_PTX_OP_ST: return "st";
  case GL_PTX_OP_ATOM: return "atom";
  case GL_PTX_OP_RED: return "red";
  case GL_PTX_OP_CPASYNC: return "cp.async";
  case GL_PTX_OP_CPBULK: return "cp.async.bulk";
  case GL_PTX_OP_CPTENSOR: return "cp.async.bulk.tensor";
  case GL_PTX_OP_CPREDUCE: return "cp.reduce.async.bulk";
  case GL_PTX_OP_STASYNC: return "st.async";
  case GL_PTX_OP_REDASYNC: return "red.async";
  case GL_PTX_OP_MBARRIER: return "mbarrier";
  default: return "access";
  }
}

static const char *space_suffix(unsigned space) {
  static const char *const names[] = {"", ".global", ".shared", ".local", ".const", ".param",
                                      ".param", ".shared::cluster"};
  return space < sizeof names / sizeof names[0] ? names[space] : "";
}

static int fail_addr(gl_emu_block *b, gl_emu_warp *w, unsigned lane, const gl_ptx_insn *in,
                     const char *err, const char *why, uint64_t addr, uint64_t size,
                     int space) {
  uint32_t t[3];
  gl_emu__thread_of(b, w, lane, t);
  return gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                      "%s: line %u: %s%s of %llu bytes at 0x%llx %s %s memory (thread "
                      "(%u,%u,%u), block (%u,%u,%u))",
                      err, in->line, insn_name(in), space_suffix(in->space),
                      (unsigned long long)size,
                      (unsigned long long)addr, why, sp_name[space], t[0], t[1], t[2],
                      b->ctaid[0], b->ctaid[1], b->ctaid[2]);
}

/* The shared memory of the cluster peer that a .shared::cluster offset at
 * or above GL_EMU_CLUSTER_STRIDE names (rank r's at (r + 1) * stride), with
 * *off made the offset in it; NULL for a rank outside the cluster. */
static __attribute__((noinline, cold)) uint8_t *cluster_shared(const gl_emu_block *b,
                                                              uint64_t *off) {
  uint64_t r = (*off >> GL_EMU_CLUSTER_SHIFT) - 1;
  if (r >= b->L->cluster_size)
    return NULL;
  *off &= GL_EMU_CLUSTER_STRIDE - 1;
  return (b->peers ? b->peers[r] : b)->shared;
}

/* Host pointer for `size` bytes at `addr` in `space` for lane `lane`, or
 * NULL after failing the launch. write: the access stores. */
static inline __attribute__((always_inline)) uint8_t *xlat(gl_emu_block *b, gl_emu_warp *w, unsigned lane,
                            const gl_ptx_insn *in, unsigned space, uint64_t addr,
                            uint64_t size, int write) {
  const gl_emu_launch_state *L = b->L;
  int sp;
  uint64_t off = addr;
  int cluster_form = 0; /* a shared address that may name a cluster peer's memory */
  switch (space) {
  case GL_PTX_SPACE_SHARED:
    sp = SP_SHARED;
    break;
  case GL_PTX_SPACE_SHARED_CLUSTER:
    sp = SP_SHARED;
    cluster_form = 1;
    break;
  case GL_PTX_SPACE_LOCAL:
  case GL_PTX_SPACE_FPARAM:
    sp = SP_LOCAL;
    break;
  case GL_PTX_SPACE_PARAM:
    sp = SP_PARAM;
    break;
  case GL_PTX_SPACE_GENERIC:
    if (addr - GL_EMU_SHARED_WINDOW < GL_EMU_WINDOW_SIZE) {
      sp = SP_SHARED;
      off = addr - GL_EMU_SHARED_WINDOW;
      cluster_form = 1;
    } else if (addr - GL_EMU_LOCAL_WINDOW < GL_EMU_WINDOW_SIZE) {
      sp = SP_LOCAL;
      off = addr - GL_EMU_LOCAL_WINDOW;
    } else if (addr - GL_EMU_PARAM_WINDOW < GL_EMU_WINDOW_SIZE) {
      sp = SP_PARAM;
      off = addr - GL_EMU_PARAM_WINDOW;
    } else {
      sp = SP_GLOBAL;
    }
    break;
  default: /* global, const */
    sp = SP_GLOBAL;
    break;
  }
  uint8_t *host = NULL;
  uint64_t limit = 0;
  switch (sp) {
  case SP_GLOBAL: {
    const gl_emu_seg *s = L->segs;
    for (size_t i = 0; i < L->nsegs; i++, s++) {
      if (addr - s->base < s->size) {
        host = s->host;
        limit = s->size;
        off = addr - s->base;
        break;
      }
    }
    break;
  }
  case SP_SHARED:
    host = b->shared;
    limit = L->shared_alloc;
    if (__builtin_expect(cluster_form && off >= GL_EMU_CLUSTER_STRIDE, 0))
      host = cluster_shared(b, &off);
    break;
  case SP_LOCAL:
    host = w->local + (size_t)lane * L->local_bytes;
    limit = L->local_bytes;
    break;
  default:
    if (write)
      return fail_addr(b, w, lane, in, "CUDA_ERROR_ILLEGAL_ADDRESS",
                       "is a store to read-only", addr, size, sp),
             NULL;
    host = L->params;
    limit = L->param_bytes;
    break;
  }
  if (!host || off > limit || size > limit - off) {
    fail_addr(b, w, lane, in, "CUDA_ERROR_ILLEGAL_ADDRESS", "is outside", addr, size, sp);
    return NULL;
  }
  if (off & (size - 1)) {
    fail_addr(b, w, lane, in, "CUDA_ERROR_MISALIGNED_ADDRESS", "is misaligned in", addr,
              size, sp);
    return NULL;
  }
  return host + off;
}

uint8_t *gl_emu__mem_ptr(gl_emu_block *b, gl_emu_warp *w, unsigned lane, const gl_ptx_insn *in,
                         unsigned space, uint64_t addr, uint64_t size, int write) {
  return xlat(b, w, lane, in, space, addr, size, write);
}

uint8_t *gl_emu__local_ptr(gl_emu_block *b, gl_emu_warp *w, unsigned lane, uint64_t off,
                           uint64_t size, uint32_t line) {
  uint64_t limit = b->L->local_bytes;
  if (off > limit || size > limit - off) {
    uint32_t t[3];
    gl_emu__thread_of(b, w, lane, t);
    gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                 "CUDA_ERROR_ILLEGAL_ADDRESS: line %u: call parameter of %llu bytes at local "
                 "offset 0x%llx is outside local memory (thread (%u,%u,%u))",
                 line, (unsigned long long)size, (unsigned long long)off, t[0], t[1], t[2]);
    return NULL;
  }
  return w->local + (size_t)lane * b->L->local_bytes + off;
}

/* ---- Scalars in memory -------------------------------------------------- */

static inline uint64_t load_n(const uint8_t *p, unsigned sz) {
  switch (sz) {
  case 1:
    return *p;
  case 2: {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
  }
  case 4: {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
  }
  default: {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
  }
  }
}

static inline void store_n(uint8_t *p, unsigned sz, uint64_t v) {
  switch (sz) {
  case 1:
    *p = (uint8_t)v;
    break;
  case 2: {
    uint16_t x = (uint16_t)v;
    memcpy(p, &x, 2);
    break;
  }
  case 4: {
    uint32_t x = (uint32_t)v;
    memcpy(p, &x, 4);
    break;
  }
  default:
    memcpy(p, &v, 8);
    break;
  }
}

/* Value of sz bytes extended to 64 bits as type t is stored in registers. */
static inline uint64_t extend(uint64_t v, unsigned sz, int is_signed) {
  if (!is_signed || sz >= 8)
    return v;
  unsigned sh = 64 - 8 * sz;
  return (uint64_t)((int64_t)(v << sh) >> sh);
}

static inline uint64_t addr_of(const gl_emu_block *b, const gl_emu_warp *w,
                               const gl_ptx_operand *a, unsigned lane) {
  uint64_t base = a->reg != GL_PTX_NOREG ? gl_emu__row(b, w, a->reg)[lane] : 0;
  return base + (uint64_t)a->imm;
}

/* ---- ld / st ------------------------------------------------------------ */

int gl_emu__exec_ld(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m) {
  unsigned sz = gl_ptx_type_size((gl_ptx_type)in->type);
  unsigned n = in->vec;
  int sgn = gl_ptx_type_is_signed((gl_ptx_type)in->type);
  uint64_t *rows[4];
  if (n == 1) {
    const gl_ptx_operand *d = &in->dst[0];
    if (d->kind == GL_PTX_O_VEC)
      rows[0] = d->vec[0] != GL_PTX_NOREG ? gl_emu__row(b, w, d->vec[0]) : b->sink[0];
    else
      rows[0] = d->kind == GL_PTX_O_REG && d->reg != GL_PTX_NOREG ? gl_emu__row(b, w, d->reg)
                                                                  : b->sink[0];
  } else {
    for (unsigned i = 0; i < n; i++)
      rows[i] = in->dst[0].vec[i] != GL_PTX_NOREG ? gl_emu__row(b, w, in->dst[0].vec[i])
                                                  : b->sink[0];
  }
  const gl_ptx_operand *a = &in->src[0];
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    const uint8_t *p = xlat(b, w, l, in, in->space, addr_of(b, w, a, l), (uint64_t)sz * n, 0);
    if (!p)
      return -1;
    for (unsigned i = 0; i < n; i++)
      rows[i][l] = extend(load_n(p + i * sz, sz), sz, sgn);
  }
  return 0;
}

int gl_emu__exec_st(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m) {
  unsigned sz = gl_ptx_type_size((gl_ptx_type)in->type);
  unsigned n = in->vec;
  const uint64_t *rows[4];
  const gl_ptx_operand *v = &in->src[1];
  memset(b->scratch[5], 0, sizeof b->scratch[5]);
  if (v->kind == GL_PTX_O_VEC) {
    for (unsigned i = 0; i < n; i++)
      rows[i] = v->vec[i] != GL_PTX_NOREG && i < v->vec_n ? gl_emu__row(b, w, v->vec[i])
                                                          : b->scratch[5];
  } else {
    rows[0] = gl_emu__src_row(b, w, v, 1);
    for (unsigned i = 1; i < n; i++)
      rows[i] = rows[0];
  }
  const gl_ptx_operand *a = &in->src[0];
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    uint8_t *p = xlat(b, w, l, in, in->space, addr_of(b, w, a, l), (uint64_t)sz * n, 1);
    if (!p)
      return -1;
    for (unsigned i = 0; i < n; i++)
      store_n(p + i * sz, sz, rows[i][l]);
  }
  return 0;
}

/* ---- Atomics ------------------------------------------------------------ */

static inline float f32_of(uint64_t v) {
  uint32_t u = (uint32_t)v;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint64_t bits_f32(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline double f64_of(uint64_t v) {
  double d;
  memcpy(&d, &v, 8);
  return d;
}
static inline uint64_t bits_f64(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}
static inline float bf16_to_f32(uint16_t h) { return f32_of((uint64_t)h << 16); }
static inline uint16_t f32_to_bf16_rn(float f) {
  uint32_t u = (uint32_t)bits_f32(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return 0x7fff; /* canonical NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static float fmin_ptx(float a, float b) {
  if (isnan(a))
    return b;
  if (isnan(b))
    return a;
  if (a == b) /* -0 < +0 */
    return signbit(a) ? a : b;
  return a < b ? a : b;
}
static float fmax_ptx(float a, float b) {
  if (isnan(a))
    return b;
  if (isnan(b))
    return a;
  if (a == b)
    return signbit(a) ? b : a;
  return a > b ? a : b;
}

/* f16/bf16 pair helpers: apply add to each 16-bit half. */
static uint64_t add_halves(uint64_t old, uint64_t bv, unsigned halves, int bf) {
  uint64_t r = 0;
  for (unsigned i = 0; i < halves; i++) {
    uint16_t x = (uint16_t)(old >> (16 * i)), y = (uint16_t)(bv >> (16 * i));
    uint16_t z;
    if (bf)
      z = f32_to_bf16_rn(bf16_to_f32(x) + bf16_to_f32(y));
    else
      z = gl_emu_f32_to_f16_rn(gl_emu_f16_to_f32(x) + gl_emu_f16_to_f32(y));
    r |= (uint64_t)z << (16 * i);
  }
  return r;
}

/* The new value of an atomic op; *ok = 0 for an unsupported op/type. */
static uint64_t atom_apply(const gl_ptx_insn *in, uint64_t old, uint64_t bv, unsigned sz,
                           int *ok) {
  gl_ptx_type t = (gl_ptx_type)in->type;
  int sgn = gl_ptx_type_is_signed(t);
  unsigned bits = sz * 8;
  uint64_t mask = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
  old &= mask;
  bv &= mask;
  *ok = 1;
  switch (in->mode) {
  case GL_PTX_ATOM_ADD:
    switch (t) {
    case GL_PTX_T_F32:
      return bits_f32(f32_of(old) + f32_of(bv));
    case GL_PTX_T_F64:
      return bits_f64(f64_of(old) + f64_of(bv));
    case GL_PTX_T_F16:
      return add_halves(old, bv, 1, 0);
    case GL_PTX_T_F16X2:
      return add_halves(old, bv, 2, 0);
    case GL_PTX_T_BF16:
      return add_halves(old, bv, 1, 1);
    case GL_PTX_T_BF16X2:
      return add_halves(old, bv, 2, 1);
    default:
      return (old + bv) & mask;
    }
  case GL_PTX_ATOM_MIN:
  case GL_PTX_ATOM_MAX: {
    int mx = in->mode == GL_PTX_ATOM_MAX;
    if (t == GL_PTX_T_F32) {
      float a = f32_of(old), c = f32_of(bv);
      return bits_f32(mx ? fmax_ptx(a, c) : fmin_ptx(a, c));
    }
    if (t == GL_PTX_T_F64) {
      double a = f64_of(old), c = f64_of(bv);
      if (isnan(a))
        return bv;
      if (isnan(c))
        return old;
      return (mx ? c > a : c < a) ? bv : old;
    }
    if (gl_ptx_type_is_float(t))
      break;
    if (sgn) {
      int64_t a = (int64_t)extend(old, sz, 1), c = (int64_t)extend(bv, sz, 1);
      return ((mx ? c > a : c < a) ? bv : old) & mask;
    }
    return (mx ? bv > old : bv < old) ? bv : old;
  }
  case GL_PTX_ATOM_EXCH:
    return bv;
  case GL_PTX_ATOM_AND:
    return old & bv;
  case GL_PTX_ATOM_OR:
    return old | bv;
  case GL_PTX_ATOM_XOR:
    return old ^ bv;
  case GL_PTX_ATOM_INC:
    return (old >= bv ? 0 : old + 1) & mask;
  case GL_PTX_ATOM_DEC:
    return (old == 0 || old > bv ? bv : old - 1) & mask;
  default:
    break;
  }
  *ok = 0;
  return old;
}

/* One atomic read-modify-write on host memory p (aligned, sz bytes).
 * Returns the old value; *ok as atom_apply. */
static uint64_t atom_rmw(const gl_ptx_insn *in, uint8_t *p, unsigned sz, uint64_t bv,
                         uint64_t cv, int *ok) {
  *ok = 1;
  if (in->mode == GL_PTX_ATOM_CAS) {
    switch (sz) {
    case 2: {
      uint16_t e = (uint16_t)bv;
      __atomic_compare_exchange_n((uint16_t *)(void *)p, &e, (uint16_t)cv, 0, __ATOMIC_SEQ_CST,
                                  __ATOMIC_SEQ_CST);
      return e;
    }
    case 4: {
      uint32_t e = (uint32_t)bv;
      __atomic_compare_exchange_n((uint32_t *)(void *)p, &e, (uint32_t)cv, 0, __ATOMIC_SEQ_CST,
                                  __ATOMIC_SEQ_CST);
      return e;
    }
    default: {
      uint64_t e = bv;
      __atomic_compare_exchange_n((uint64_t *)(void *)p, &e, cv, 0, __ATOMIC_SEQ_CST,
                                  __ATOMIC_SEQ_CST);
      return e;
    }
    }
  }
  switch (sz) {
  case 2: {
    uint16_t *q = (uint16_t *)(void *)p;
    uint16_t old = __atomic_load_n(q, __ATOMIC_RELAXED);
    for (;;) {
      uint16_t nv = (uint16_t)atom_apply(in, old, bv, 2, ok);
      if (!*ok || __atomic_compare_exchange_n(q, &old, nv, 1, __ATOMIC_SEQ_CST,
                                              __ATOMIC_RELAXED))
        return old;
    }
  }
  case 4: {
    uint32_t *q = (uint32_t *)(void *)p;
    uint32_t old = __atomic_load_n(q, __ATOMIC_RELAXED);
    for (;;) {
      uint32_t nv = (uint32_t)atom_apply(in, old, bv, 4, ok);
      if (!*ok || __atomic_compare_exchange_n(q, &old, nv, 1, __ATOMIC_SEQ_CST,
                                              __ATOMIC_RELAXED))
        return old;
    }
  }
  default: {
    uint64_t *q = (uint64_t *)(void *)p;
    uint64_t old = __atomic_load_n(q, __ATOMIC_RELAXED);
    for (;;) {
      uint64_t nv = atom_apply(in, old, bv, 8, ok);
      if (!*ok || __atomic_compare_exchange_n(q, &old, nv, 1, __ATOMIC_SEQ_CST,
                                              __ATOMIC_RELAXED))
        return old;
    }
  }
  }
}

uint64_t gl_emu__atom_rmw(const gl_ptx_insn *in, uint8_t *p, unsigned sz, uint64_t bv,
                          int *ok) {
  return atom_rmw(in, p, sz, bv, 0, ok);
}

int gl_emu__exec_atom(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m) {
  unsigned sz = gl_ptx_type_size((gl_ptx_type)in->type);
  int is_red = in->op == GL_PTX_OP_RED;
  const uint64_t *brow = gl_emu__src_row(b, w, &in->src[1], 1);
  const uint64_t *crow = in->mode == GL_PTX_ATOM_CAS && !is_red
                             ? gl_emu__src_row(b, w, &in->src[2], 2)
                             : b->scratch[2];
  uint64_t *drow = b->sink[0];
  if (!is_red && in->dst[0].kind == GL_PTX_O_REG && in->dst[0].reg != GL_PTX_NOREG)
    drow = gl_emu__row(b, w, in->dst[0].reg);
  int sgn = gl_ptx_type_is_signed((gl_ptx_type)in->type);
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    uint8_t *p = xlat(b, w, l, in, in->space, addr_of(b, w, &in->src[0], l), sz, 1);
    if (!p)
      return -1;
    int ok;
    uint64_t old = atom_rmw(in, p, sz, brow[l], crow[l], &ok);
    if (!ok)
      return gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                          "CUDA_ERROR_ILLEGAL_INSTRUCTION: line %u: unsupported atomic "
                          "operation/type",
                          in->line);
    drow[l] = extend(old, sz, sgn);
  }
  return 0;
}

/* ---- cvta --------------------------------------------------------------- */

int gl_emu__exec_cvta(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m) {
  uint64_t win = 0;
  switch (in->space) {
  case GL_PTX_SPACE_SHARED:
  case GL_PTX_SPACE_SHARED_CLUSTER:
    win = GL_EMU_SHARED_WINDOW;
    break;
  case GL_PTX_SPACE_LOCAL:
  case GL_PTX_SPACE_FPARAM:
    win = GL_EMU_LOCAL_WINDOW;
    break;
  case GL_PTX_SPACE_PARAM:
    win = GL_EMU_PARAM_WINDOW;
    break;
  default: /* global, const: generic addresses are global addresses */
    break;
  }
  const uint64_t *s = gl_emu__src_row(b, w, &in->src[0], 0);
  uint64_t *d = b->sink[0];
  if (in->dst[0].kind == GL_PTX_O_REG && in->dst[0].reg != GL_PTX_NOREG)
    d = gl_emu__row(b, w, in->dst[0].reg);
  int narrow = gl_ptx_type_size((gl_ptx_type)in->type) == 4;
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    uint64_t v = in->mode == GL_PTX_CVTA_TO_SPACE ? s[l] - win : s[l] + win;
    d[l] = narrow ? (uint32_t)v : v;
  }
  return 0;
}

/* ---- mapa, getctarank --------------------------------------------------- */

/* mapa: the address of the same shared variable in the block of cluster
 * rank b (the form GL_EMU_CLUSTER_SHARED(b) + offset, generic when the
 * instruction is); getctarank: the rank whose shared memory an address
 * names (the own rank for a .shared::cta-form address). An address that is
 * not in shared memory, or a rank outside the cluster, fails the launch
 * (undefined on a GPU). */
int gl_emu__exec_mapa(gl_emu_block *b, gl_emu_warp *w, const gl_ptx_insn *in, uint32_t m) {
  const gl_emu_launch_state *L = b->L;
  int is_mapa = in->op == GL_PTX_OP_MAPA;
  int generic = in->space == GL_PTX_SPACE_GENERIC;
  int narrow = gl_ptx_type_size((gl_ptx_type)in->type) == 4;
  const uint64_t *a = gl_emu__src_row(b, w, &in->src[0], 0);
  const uint64_t *rk = is_mapa ? gl_emu__src_row(b, w, &in->src[1], 1) : NULL;
  uint64_t *d = b->sink[0];
  if (in->dst[0].kind == GL_PTX_O_REG && in->dst[0].reg != GL_PTX_NOREG)
    d = gl_emu__row(b, w, in->dst[0].reg);
  const char *name = is_mapa ? "mapa" : "getctarank";
  for (uint32_t mm = m; mm; mm &= mm - 1) {
    unsigned l = (unsigned)__builtin_ctz(mm);
    uint64_t x = narrow ? (uint32_t)a[l] : a[l];
    uint64_t base = 0;
    if (generic) {
      if (x - GL_EMU_SHARED_WINDOW >= GL_EMU_WINDOW_SIZE)
        x = UINT64_MAX; /* not shared */
      else
        x -= GL_EMU_SHARED_WINDOW;
      base = GL_EMU_SHARED_WINDOW;
    }
    uint64_t rank_of = x < GL_EMU_CLUSTER_STRIDE ? b->cl_rank
                                                 : (x >> GL_EMU_CLUSTER_SHIFT) - 1;
    if (x >= GL_EMU_WINDOW_SIZE || rank_of >= L->cluster_size) {
      uint32_t t[3];
      gl_emu__thread_of(b, w, l, t);
      return gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                          "CUDA_ERROR_ILLEGAL_ADDRESS: line %u: %s of 0x%llx, which is not an "
                          "address in the cluster's shared memory (thread (%u,%u,%u), block "
                          "(%u,%u,%u))",
                          in->line, name, (unsigned long long)a[l], t[0], t[1], t[2],
                          b->ctaid[0], b->ctaid[1], b->ctaid[2]);
    }
    if (!is_mapa) {
      d[l] = rank_of;
      continue;
    }
    uint64_t r = (uint32_t)rk[l];
    if (r >= L->cluster_size) {
      uint32_t t[3];
      gl_emu__thread_of(b, w, l, t);
      return gl_emu__fail(b, GPULEASE_LAUNCH_FAILED,
                          "CUDA_ERROR_ILLEGAL_ADDRESS: line %u: mapa to block rank %llu of a "
                          "cluster of %u blocks (thread (%u,%u,%u), block (%u,%u,%u))",
                          in->line, (unsigned long long)r, L->cluster_size, t[0], t[1], t[2],
                          b->ctaid[0], b->ctaid[1], b->ctaid[2]);
    }
    uint64_t v = base + GL_EMU_CLUSTER_SHARED(r) + (x & (GL_EMU_CLUSTER_STRIDE - 1));
    d[l] = narrow ? (uint32_t)v : v;
  }
  return 0;
}
