/*
 * device.c - the emulated device object: its region (the lease's VRAM),
 * loading and unloading modules, and looking up kernels.
 *
 * A module's .global/.const data is one image mapped at its own device
 * address between GL_EMU_MODULE_DATA_BASE and GL_EMU_REGION_BASE. The
 * parser needs that address before it knows the image's size, so we parse
 * at the start of the largest free gap and check afterwards that the image
 * fits there (if it does not, it fits nowhere). Segments are 64 KiB
 * aligned with at least 64 KiB unmapped between them, so a small overrun of
 * one module's data faults instead of landing in another's.
 *
 * At load the module's code is checked and each kernel gets its own copy
 * in the executor's form (exec_internal.h: struct gl_emu_function), so the
 * interpreter can index registers, labels and calls without checks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/exec_internal.h"
#include "emu/ptx_parse.h"

/* ---- Device ------------------------------------------------------------- */

gl_emu_device *gl_emu_device_new(uint64_t region_bytes) {
  /* The region must stay below the shared/local/param windows. */
  if (region_bytes > GL_EMU_SHARED_WINDOW - GL_EMU_REGION_BASE || region_bytes > SIZE_MAX - 1)
    return NULL;
  gl_emu_device *dev = calloc(1, sizeof *dev);
  if (!dev)
    return NULL;
  dev->region = calloc(1, region_bytes ? (size_t)region_bytes : 1);
  dev->kout = gl_emu__kout_new();
  if (!dev->region || !dev->kout) {
    free(dev->region);
    gl_emu__kout_free(dev->kout);
    free(dev);
    return NULL;
  }
  dev->region_bytes = region_bytes;
  return dev;
}

static void module_free(gl_emu_module *m) {
  if (!m)
    return;
  if (m->fns && m->pm)
    for (uint32_t f = 0; f < m->pm->nfuncs; f++) {
      free(m->fns[f].code);
      free(m->fns[f].func_pc);
    }
  gl_ptx_module_free(m->pm);
  free(m->fns);
  free(m);
}

void gl_emu_device_free(gl_emu_device *dev) {
  if (!dev)
    return;
  gl_emu_module *m = dev->modules;
  while (m) {
    gl_emu_module *next = m->next;
    module_free(m);
    m = next;
  }
  free(dev->region);
  gl_emu__kout_free(dev->kout);
  free(dev);
}

uint8_t *gl_emu_device_ptr(gl_emu_device *dev, uint64_t addr, uint64_t len) {
  if (!dev || addr < GL_EMU_REGION_BASE)
    return NULL;
  uint64_t off = addr - GL_EMU_REGION_BASE;
  if (off > dev->region_bytes || len > dev->region_bytes - off)
    return NULL;
  return dev->region + off;
}

gl_emu_seg *gl_emu__device_segments(gl_emu_device *dev, size_t *n) {
  size_t count = 1;
  for (gl_emu_module *m = dev->modules; m; m = m->next)
    count++;
  gl_emu_seg *s = calloc(count, sizeof *s);
  if (!s)
    return NULL;
  s[0] = (gl_emu_seg){GL_EMU_REGION_BASE, dev->region_bytes, dev->region};
  size_t i = 1;
  for (gl_emu_module *m = dev->modules; m; m = m->next, i++)
    s[i] = (gl_emu_seg){m->data_base, m->pm->data ? m->pm->data_bytes : 0, m->pm->data};
  *n = count;
  return s;
}

/* ---- Address space for modules' data ------------------------------------ */

static uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

/* The largest gap for a new segment: *base and its usable *room. The list
 * is sorted by data_base. */
static void largest_gap(const gl_emu_device *dev, uint64_t *base, uint64_t *room) {
  uint64_t best_base = 0, best_room = 0;
  uint64_t cur = GL_EMU_MODULE_DATA_BASE;
  for (const gl_emu_module *m = dev->modules;; m = m->next) {
    uint64_t end = m ? m->data_base : GL_EMU_REGION_BASE;
    /* keep a guard gap below the next segment (and below the region) */
    uint64_t limit = end >= GL_EMU_SEG_ALIGN ? end - GL_EMU_SEG_ALIGN : 0;
    if (limit > cur && limit - cur > best_room) {
      best_room = limit - cur;
      best_base = cur;
    }
    if (!m)
      break;
    cur = m->data_base + m->data_span + GL_EMU_SEG_ALIGN;
  }
  *base = best_base;
  *room = best_room;
}

static void insert_sorted(gl_emu_device *dev, gl_emu_module *mod) {
  gl_emu_module **pp = &dev->modules;
  while (*pp && (*pp)->data_base < mod->data_base)
    pp = &(*pp)->next;
  mod->next = *pp;
  *pp = mod;
}

/* ---- The executor's copy of the code ------------------------------------ */

static int bad(char *err, size_t errlen, uint32_t line, const char *what) {
  snprintf(err, errlen, "line %u: emulator cannot run this instruction (%s)", line, what);
  return -1;
}

static int check_operand(const gl_ptx_module *pm, const gl_ptx_operand *o) {
  switch (o->kind) {
  case GL_PTX_O_NONE:
  case GL_PTX_O_IMM:
  case GL_PTX_O_FRAME:
  case GL_PTX_O_LABEL:
    return 0;
  case GL_PTX_O_SREG:
    return o->sreg < GL_PTX_SR_COUNT ? 0 : -1;
  case GL_PTX_O_REG:
  case GL_PTX_O_ADDR: /* GL_PTX_NOREG: '_' sink, or [imm] */
    return o->reg == GL_PTX_NOREG || o->reg < pm->nregs ? 0 : -1;
  case GL_PTX_O_VEC:
    if (o->vec_n < 1 || o->vec_n > 4)
      return -1;
    for (unsigned i = 0; i < o->vec_n; i++)
      if (o->vec[i] != GL_PTX_NOREG && o->vec[i] >= pm->nregs)
        return -1;
    return 0;
  default:
    return -1;
  }
}

/* Checks what the interpreter relies on without checking again: register
 * numbers, branch targets inside the function, call sites, memory operand
 * shapes. The parser should never produce anything else. */
static int check_insn(const gl_ptx_module *pm, const gl_ptx_func *fn, const gl_ptx_insn *in,
                      char *err, size_t errlen) {
  if (in->op >= GL_PTX_OP_COUNT || in->ndst > 2 || in->nsrc > 4)
    return bad(err, errlen, in->line, "opcode");
  if (in->guard != GL_PTX_NOREG && in->guard >= pm->nregs)
    return bad(err, errlen, in->line, "guard register");
  for (unsigned k = 0; k < 2; k++)
    if (check_operand(pm, &in->dst[k]))
      return bad(err, errlen, in->line, "operand");
  for (unsigned k = 0; k < 4; k++)
    if (check_operand(pm, &in->src[k]))
      return bad(err, errlen, in->line, "operand");
  switch (in->op) {
  case GL_PTX_OP_BRA:
    if (in->src[0].kind != GL_PTX_O_LABEL || in->src[0].imm < (int64_t)fn->first_insn ||
        in->src[0].imm > (int64_t)fn->first_insn + fn->insn_count)
      return bad(err, errlen, in->line, "branch target outside its function");
    return 0;
  case GL_PTX_OP_CALL: {
    if (in->src[0].imm < 0 || (uint64_t)in->src[0].imm >= pm->ncalls)
      return bad(err, errlen, in->line, "call site");
    const gl_ptx_call *c = &pm->calls[in->src[0].imm];
    if (c->func >= pm->nfuncs || c->nargs > GL_PTX_MAX_CALL_ARGS)
      return bad(err, errlen, in->line, "call target");
    return 0;
  }
  case GL_PTX_OP_LD:
  case GL_PTX_OP_ST: {
    const gl_ptx_operand *v = in->op == GL_PTX_OP_LD ? &in->dst[0] : &in->src[1];
    unsigned sz = gl_ptx_type_size((gl_ptx_type)in->type);
    if ((in->vec != 1 && in->vec != 2 && in->vec != 4) || sz == 0 || sz > 8 ||
        in->src[0].kind != GL_PTX_O_ADDR ||
        (in->vec > 1 && (v->kind != GL_PTX_O_VEC || v->vec_n != in->vec)))
      return bad(err, errlen, in->line, "memory operand");
    return 0;
  }
  case GL_PTX_OP_ATOM:
  case GL_PTX_OP_RED: {
    unsigned sz = gl_ptx_type_size((gl_ptx_type)in->type);
    if (in->src[0].kind != GL_PTX_O_ADDR || (sz != 2 && sz != 4 && sz != 8))
      return bad(err, errlen, in->line, "atomic operand size");
    return 0;
  }
  default:
    return 0;
  }
}

static inline uint32_t map_reg(uint32_t *map, uint32_t *next, uint32_t r) {
  if (r == GL_PTX_NOREG)
    return r;
  if (map[r] == UINT32_MAX)
    map[r] = (*next)++;
  return map[r];
}

static void map_operand(gl_ptx_operand *o, uint32_t *map, uint32_t *next) {
  switch (o->kind) {
  case GL_PTX_O_REG:
  case GL_PTX_O_ADDR:
    o->reg = map_reg(map, next, o->reg);
    break;
  case GL_PTX_O_VEC:
    for (unsigned i = 0; i < o->vec_n; i++)
      o->vec[i] = map_reg(map, next, o->vec[i]);
    break;
  default:
    break;
  }
}

/* Builds entry e's code (struct gl_emu_function). map: pm->nregs slots,
 * seen/order: nfuncs slots of scratch. */
static int build_entry(gl_emu_module *mod, uint32_t e, uint32_t *map, uint8_t *seen,
                       uint32_t *order) {
  const gl_ptx_module *pm = mod->pm;
  uint32_t nf = pm->nfuncs;
  gl_emu_function *fn = &mod->fns[e];
  /* the functions it reaches, the kernel first */
  memset(seen, 0, nf);
  uint32_t n = 0;
  order[n++] = e;
  seen[e] = 1;
  uint64_t total = 0;
  for (uint32_t k = 0; k < n; k++) {
    const gl_ptx_func *gf = &pm->funcs[order[k]];
    total += (uint64_t)gf->insn_count + 1;
    for (uint32_t i = 0; i < gf->insn_count; i++) {
      const gl_ptx_insn *in = &pm->insns[gf->first_insn + i];
      if (in->op != GL_PTX_OP_CALL)
        continue;
      uint32_t callee = pm->calls[in->src[0].imm].func;
      if (!seen[callee]) {
        seen[callee] = 1;
        order[n++] = callee;
      }
    }
  }
  if (total >= UINT32_MAX / 2)
    return -1;
  fn->func_pc = malloc((size_t)nf * sizeof *fn->func_pc);
  fn->code = calloc((size_t)total, sizeof *fn->code);
  if (!fn->func_pc || !fn->code)
    return -2;
  for (uint32_t f = 0; f < nf; f++)
    fn->func_pc[f] = UINT32_MAX;
  uint32_t pc = 0;
  for (uint32_t k = 0; k < n; k++) {
    fn->func_pc[order[k]] = pc;
    pc += pm->funcs[order[k]].insn_count + 1;
  }
  fn->ncode = pc;
  for (uint32_t r = 0; r < pm->nregs; r++)
    map[r] = UINT32_MAX;
  uint32_t next = 0;
  map_reg(map, &next, GL_PTX_REG_CC); /* the carry flag stays register 0 */
  for (uint32_t k = 0; k < n; k++) {
    const gl_ptx_func *gf = &pm->funcs[order[k]];
    uint32_t base = fn->func_pc[order[k]];
    uint32_t last_line = 0;
    for (uint32_t i = 0; i < gf->insn_count; i++) {
      gl_ptx_insn *in = &fn->code[base + i];
      *in = pm->insns[gf->first_insn + i];
      last_line = in->line;
      in->guard = map_reg(map, &next, in->guard);
      for (unsigned j = 0; j < 2; j++)
        map_operand(&in->dst[j], map, &next);
      for (unsigned j = 0; j < 4; j++)
        map_operand(&in->src[j], map, &next);
      if (in->op == GL_PTX_OP_BRA)
        in->src[0].imm = base + (uint32_t)(in->src[0].imm - gf->first_insn);
    }
    gl_ptx_insn *r = &fn->code[base + gf->insn_count];
    r->op = GL_PTX_OP_RET;
    r->guard = GL_PTX_NOREG;
    r->line = last_line;
  }
  fn->nregs = next;
  return 0;
}

/* Checks the module's code and builds every kernel's copy. 0, -1 (err
 * written) or -2 (out of memory). */
static int build_code(gl_emu_module *mod, char *err, size_t errlen) {
  const gl_ptx_module *pm = mod->pm;
  uint32_t nf = pm->nfuncs;
  for (uint32_t f = 0; f < nf; f++) {
    const gl_ptx_func *fn = &pm->funcs[f];
    if (fn->first_insn > pm->ninsns || fn->insn_count > pm->ninsns - fn->first_insn ||
        fn->insn_count >= UINT32_MAX / 4) {
      snprintf(err, errlen, "emulator: function %.64s has a bad instruction range", fn->name);
      return -1;
    }
    for (uint32_t i = 0; i < fn->insn_count; i++)
      if (check_insn(pm, fn, &pm->insns[fn->first_insn + i], err, errlen))
        return -1;
  }
  mod->max_depth = nf + 1;
  mod->fns = calloc(nf ? nf : 1, sizeof *mod->fns);
  uint32_t *map = calloc(pm->nregs ? pm->nregs : 1, sizeof *map);
  uint8_t *seen = calloc(nf ? nf : 1, 1);
  uint32_t *order = calloc(nf ? nf : 1, sizeof *order);
  int rc = 0;
  if (!mod->fns || !map || !seen || !order)
    rc = -2;
  for (uint32_t f = 0; f < nf && rc == 0; f++) {
    mod->fns[f].mod = mod;
    mod->fns[f].index = f;
    if (pm->funcs[f].is_entry)
      rc = build_entry(mod, f, map, seen, order);
  }
  if (rc == -1)
    snprintf(err, errlen, "emulator: module too large");
  else if (rc == -2)
    snprintf(err, errlen, "out of memory");
  free(map);
  free(seen);
  free(order);
  return rc;
}

/* ---- Modules ------------------------------------------------------------ */

/* What a GPU's compiler would refuse, and what would let one module take
 * the host's memory block by block: local memory above CUDA's 512 KiB a
 * thread, and more static shared memory in all than
 * GL_EMU_MAX_MODULE_SHARED_BYTES. Both are laid out module-wide (every
 * function's local frame and every .shared variable has its own offset),
 * so these are the module's totals, which a module with several big
 * kernels can pass where each of its kernels alone would not. 0 or -1. */
static int check_limits(const gl_ptx_module *pm, char *err, size_t errlen) {
  for (uint32_t i = 0; i < pm->nfuncs; i++) {
    const gl_ptx_func *f = &pm->funcs[i];
    if (f->is_entry && f->local_bytes > GL_EMU_MAX_LOCAL_BYTES) {
      snprintf(err, errlen, "the module's functions need %u bytes of local memory a thread "
                            "(the emulated device lays out every function's frame together); "
                            "at most %u, as on CUDA GPUs", f->local_bytes,
               GL_EMU_MAX_LOCAL_BYTES);
      return -1;
    }
  }
  if (pm->shared_bytes > GL_EMU_MAX_MODULE_SHARED_BYTES) {
    snprintf(err, errlen, "the module declares %u bytes of static shared memory in all; the "
                          "emulated device takes at most %u a module",
             pm->shared_bytes, GL_EMU_MAX_MODULE_SHARED_BYTES);
    return -1;
  }
  return 0;
}

gpulease_status gl_emu_module_load(gl_emu_device *dev, const char *ptx, size_t len,
                                   gl_emu_module **out, char *err, size_t errlen) {
  if (err && errlen)
    err[0] = '\0';
  if (!dev || !ptx || !out) {
    snprintf(err, errlen, "invalid argument");
    return GPULEASE_INVALID_ARGUMENT;
  }
  *out = NULL;
  len = strnlen(ptx, len); /* a NUL inside ends the text */
  uint64_t base, room;
  largest_gap(dev, &base, &room);
  if (room == 0) {
    snprintf(err, errlen, "the emulated device's module data space is full");
    return GPULEASE_CAPACITY_EXCEEDED;
  }
  gl_ptx_module *pm = NULL;
  gpulease_status st = gl_ptx_parse(ptx, len, base, &pm, err, errlen);
  if (st != GPULEASE_OK) {
    gl_ptx_module_free(pm);
    return st;
  }
  if (!pm) {
    snprintf(err, errlen, "parser returned no module");
    return GPULEASE_INTERNAL;
  }
  if (check_limits(pm, err, errlen) != 0) {
    gl_ptx_module_free(pm);
    return GPULEASE_LOAD_FAILED;
  }
  uint64_t bytes = pm->data ? pm->data_bytes : 0;
  uint64_t span = round_up(bytes ? bytes : 1, GL_EMU_SEG_ALIGN);
  if (bytes > room || span > room) {
    gl_ptx_module_free(pm);
    snprintf(err, errlen, "the emulated device's module data space is full (%llu bytes asked)",
             (unsigned long long)bytes);
    return GPULEASE_CAPACITY_EXCEEDED;
  }
  gl_emu_module *mod = calloc(1, sizeof *mod);
  if (!mod) {
    gl_ptx_module_free(pm);
    snprintf(err, errlen, "out of memory");
    return GPULEASE_NO_MEMORY;
  }
  mod->dev = dev;
  mod->pm = pm;
  mod->data_base = base;
  mod->data_span = span;
  int rc = build_code(mod, err, errlen);
  if (rc) {
    module_free(mod);
    return rc == -2 ? GPULEASE_NO_MEMORY : GPULEASE_LOAD_FAILED;
  }
  insert_sorted(dev, mod);
  *out = mod;
  return GPULEASE_OK;
}

void gl_emu_module_unload(gl_emu_device *dev, gl_emu_module *mod) {
  if (!dev || !mod)
    return;
  for (gl_emu_module **pp = &dev->modules; *pp; pp = &(*pp)->next) {
    if (*pp == mod) {
      *pp = mod->next;
      module_free(mod);
      return;
    }
  }
}

const gl_emu_function *gl_emu_module_function(const gl_emu_module *mod, const char *name) {
  if (!mod || !name)
    return NULL;
  int i = gl_ptx_module_find(mod->pm, name);
  if (i < 0 || (uint32_t)i >= mod->pm->nfuncs || !mod->pm->funcs[i].is_entry)
    return NULL;
  return &mod->fns[i];
}

size_t gl_emu_function_params(const gl_emu_function *fn, size_t *sizes, size_t max) {
  if (!fn)
    return 0;
  const gl_ptx_func *f = &fn->mod->pm->funcs[fn->index];
  for (size_t i = 0; i < f->nparams && i < max && sizes; i++)
    sizes[i] = f->params[i].size;
  return f->nparams;
}

void gl_emu_function_info(const gl_emu_function *fn, uint32_t *shared_bytes,
                          uint32_t *local_bytes, uint32_t *nregs) {
  const gl_ptx_func *f = fn ? &fn->mod->pm->funcs[fn->index] : NULL;
  if (shared_bytes)
    *shared_bytes = f ? f->static_shared_bytes : 0;
  if (local_bytes)
    *local_bytes = f ? f->local_bytes : 0;
  if (nregs)
    *nregs = fn ? fn->nregs : 0;
}

void gl_emu_function_limits(const gl_emu_function *fn, uint32_t *max_threads,
                            uint32_t *target_sm, uint32_t *isa_version) {
  const gl_ptx_module *pm = fn ? fn->mod->pm : NULL;
  const gl_ptx_func *f = pm ? &pm->funcs[fn->index] : NULL;
  uint64_t mx = 1024;
  for (int k = 0; f && k < 2; k++) {
    const uint32_t *dims = k == 0 ? f->reqntid : f->maxntid;
    if (!dims[0])
      continue;
    uint64_t n = 1;
    for (int i = 0; i < 3; i++)
      n *= dims[i] ? dims[i] : 1;
    if (n < mx)
      mx = n;
  }
  if (max_threads)
    *max_threads = (uint32_t)mx;
  if (target_sm)
    *target_sm = pm && pm->target_sm > 0 ? (uint32_t)pm->target_sm : 0;
  if (isa_version)
    *isa_version = pm && pm->version_major >= 0 && pm->version_minor >= 0
                       ? (uint32_t)(pm->version_major * 10 + pm->version_minor)
                       : 0;
}
