/*
 * corpus.c - the kernel corpus's machinery: building instances, running
 * them on a gl_corpus_dev, comparing results. The cases themselves (input
 * generators and C references) are in corpus_cases.c.
 */
#include "corpus.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

size_t gl_corpus_elem_size(gl_corpus_elem e) {
  switch (e) {
  case GL_CORPUS_U8: return 1;
  case GL_CORPUS_U16:
  case GL_CORPUS_F16: return 2;
  case GL_CORPUS_U32:
  case GL_CORPUS_F32: return 4;
  case GL_CORPUS_U64:
  case GL_CORPUS_F64: return 8;
  }
  return 1;
}

void gl_corpus_inst_build(const gl_corpus_case *c, gl_corpus_inst *inst) {
  memset(inst, 0, sizeof *inst);
  inst->c = c;
  inst->grid[0] = inst->grid[1] = inst->grid[2] = 1;
  inst->block[0] = inst->block[1] = inst->block[2] = 1;
  c->setup(inst);
}

void gl_corpus_inst_free(gl_corpus_inst *inst) {
  for (unsigned i = 0; i < inst->nbufs; i++) free(inst->init[i]);
  for (unsigned i = 0; i < inst->nouts; i++) free(inst->outs[i].expect);
  memset(inst, 0, sizeof *inst);
}

bool gl_corpus_runs_on(const gl_corpus_inst *inst, const char *arch) {
  unsigned sm = 0;
  if (strncmp(arch, "sm_", 3) == 0) sm = (unsigned)strtoul(arch + 3, NULL, 10);
  return sm >= inst->min_sm;
}

int gl_corpus_read_ptx(const char *dir, const char *arch, const char *name, char **text,
                       size_t *len) {
  char path[4096];
  int n = snprintf(path, sizeof path, "%s/%s/%s.ptx", dir, arch, name);
  if (n < 0 || (size_t)n >= sizeof path) return -1;
  uint8_t *data;
  size_t l;
  if (gl_read_file(path, 16u << 20, &data, &l) != 0) return -1;
  char *t = realloc(data, l + 1);
  if (!t) {
    free(data);
    return -1;
  }
  t[l] = 0;
  *text = t;
  *len = l;
  return 0;
}

/* ==========================================================================
 * Running an instance
 * ======================================================================== */

int gl_corpus_exec(const gl_corpus_inst *inst, const gl_corpus_dev *dev, const char *ptx,
                   size_t ptx_len, uint8_t *outs[GL_CORPUS_MAX_OUTS], char *err,
                   size_t errlen) {
  uint64_t addr[GL_CORPUS_MAX_BUFS] = {0};
  void *args[GL_CORPUS_MAX_PARAMS];
  size_t sizes[GL_CORPUS_MAX_PARAMS];
  uint64_t ptrs[GL_CORPUS_MAX_PARAMS];
  void *mod = NULL;
  int rc = -1;
  for (unsigned k = 0; k < GL_CORPUS_MAX_OUTS; k++) outs[k] = NULL;

  for (unsigned i = 0; i < inst->nbufs; i++) {
    if (dev->alloc(dev->self, inst->buf_bytes[i], &addr[i], err, errlen) != 0) goto out;
    if (dev->write(dev->self, addr[i], inst->init[i], inst->buf_bytes[i], err, errlen) != 0)
      goto out;
  }
  if (dev->load(dev->self, ptx, ptx_len, &mod, err, errlen) != 0) goto out;
  for (unsigned i = 0; i < inst->nparams; i++) {
    const gl_corpus_param *p = &inst->params[i];
    if (p->buf >= 0) {
      ptrs[i] = addr[p->buf];
      args[i] = &ptrs[i];
    } else {
      args[i] = (void *)p->bytes;
    }
    sizes[i] = p->size;
  }
  if (dev->launch(dev->self, mod, inst->c->kernel, inst->grid, inst->block, inst->shared_bytes,
                  inst->cooperative, inst->cluster, args, sizes, inst->nparams, err,
                  errlen) != 0)
    goto out;
  for (unsigned k = 0; k < inst->nouts; k++) {
    unsigned b = inst->outs[k].buf;
    outs[k] = malloc(inst->buf_bytes[b]);
    if (!outs[k]) {
      snprintf(err, errlen, "out of host memory");
      goto out;
    }
    if (dev->read(dev->self, outs[k], addr[b], inst->buf_bytes[b], err, errlen) != 0) goto out;
  }
  rc = 0;
out:
  dev->reset(dev->self);
  if (rc != 0) gl_corpus_outs_free(inst, outs);
  return rc;
}

void gl_corpus_outs_free(const gl_corpus_inst *inst, uint8_t *outs[GL_CORPUS_MAX_OUTS]) {
  (void)inst;
  for (unsigned k = 0; k < GL_CORPUS_MAX_OUTS; k++) {
    free(outs[k]);
    outs[k] = NULL;
  }
}

/* ==========================================================================
 * Comparing
 * ======================================================================== */

static uint64_t load_elem(const uint8_t *p, gl_corpus_elem e, size_t i) {
  switch (gl_corpus_elem_size(e)) {
  case 1: return p[i];
  case 2: {
    uint16_t v;
    memcpy(&v, p + 2 * i, 2);
    return v;
  }
  case 4: {
    uint32_t v;
    memcpy(&v, p + 4 * i, 4);
    return v;
  }
  default: {
    uint64_t v;
    memcpy(&v, p + 8 * i, 8);
    return v;
  }
  }
}

static bool is_float(gl_corpus_elem e) {
  return e == GL_CORPUS_F16 || e == GL_CORPUS_F32 || e == GL_CORPUS_F64;
}

static bool bits_nan(uint64_t b, gl_corpus_elem e) {
  switch (e) {
  case GL_CORPUS_F16: return (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu);
  case GL_CORPUS_F32: return (b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu);
  case GL_CORPUS_F64:
    return (b & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (b & 0xfffffffffffffull);
  default: return false;
  }
}

static double bits_value(uint64_t b, gl_corpus_elem e) {
  switch (e) {
  case GL_CORPUS_F16: {
    int ex = (int)((b >> 10) & 31), m = (int)(b & 0x3ff);
    double v = ex == 0 ? ldexp(m, -24) : ex == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, ex - 25);
    return (b & 0x8000u) ? -v : v;
  }
  case GL_CORPUS_F32: {
    uint32_t u = (uint32_t)b;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  case GL_CORPUS_F64: {
    double d;
    memcpy(&d, &b, 8);
    return d;
  }
  default: return (double)b;
  }
}

/* Position of a float on the line of representable values (monotonic). */
static int64_t ordered(uint64_t b, gl_corpus_elem e) {
  unsigned bits = (unsigned)gl_corpus_elem_size(e) * 8;
  uint64_t sign = 1ull << (bits - 1);
  uint64_t mag = b & (sign - 1);
  return (b & sign) ? -(int64_t)mag : (int64_t)mag;
}

static uint64_t ulp_dist(uint64_t a, uint64_t b, gl_corpus_elem e) {
  int64_t x = ordered(a, e), y = ordered(b, e);
  return x > y ? (uint64_t)(x - y) : (uint64_t)(y - x);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Sorted copy of a buffer's elements as u64. */
static uint64_t *sorted(const uint8_t *p, gl_corpus_elem e, size_t n) {
  uint64_t *v = malloc((n ? n : 1) * sizeof *v);
  if (!v) abort();
  for (size_t i = 0; i < n; i++) v[i] = load_elem(p, e, i);
  qsort(v, n, sizeof *v, cmp_u64);
  return v;
}

static void fmt_elem(char *buf, size_t len, uint64_t b, gl_corpus_elem e) {
  if (is_float(e))
    snprintf(buf, len, "0x%0*" PRIx64 " (%.9g)", (int)gl_corpus_elem_size(e) * 2, b,
             bits_value(b, e));
  else
    snprintf(buf, len, "0x%0*" PRIx64 " (%" PRId64 ")", (int)gl_corpus_elem_size(e) * 2, b,
             gl_corpus_elem_size(e) == 8   ? (int64_t)b
             : gl_corpus_elem_size(e) == 4 ? (int64_t)(int32_t)(uint32_t)b
                                           : (int64_t)b);
}

/* One output against its expectation: number of mismatches; the first
 * one described in msg. */
static size_t check_out(const gl_corpus_out *o, const uint8_t *got, size_t bytes, char *msg,
                        size_t msglen) {
  size_t n = bytes / gl_corpus_elem_size(o->elem), bad = 0;
  if (o->cmp == GL_CORPUS_UNORDERED) {
    uint64_t *w = sorted(o->expect, o->elem, n), *g = sorted(got, o->elem, n);
    for (size_t i = 0; i < n; i++)
      if (w[i] != g[i]) {
        if (!bad++) {
          char a[64], b[64];
          fmt_elem(a, sizeof a, w[i], o->elem);
          fmt_elem(b, sizeof b, g[i], o->elem);
          snprintf(msg, msglen, "%s (as multiset) sorted[%zu]: expected %s got %s", o->what, i,
                   a, b);
        }
      }
    free(w);
    free(g);
    return bad;
  }
  for (size_t i = 0; i < n; i++) {
    uint64_t w = load_elem(o->expect, o->elem, i), g = load_elem(got, o->elem, i);
    bool ok = w == g;
    if (!ok && is_float(o->elem)) {
      bool wn = bits_nan(w, o->elem), gn = bits_nan(g, o->elem);
      if (wn || gn) {
        ok = wn && gn;
      } else if (o->cmp == GL_CORPUS_ULP) {
        double wv = bits_value(w, o->elem), gv = bits_value(g, o->elem);
        ok = (!isinf(wv) && !isinf(gv)) &&
             (ulp_dist(w, g, o->elem) <= o->ulp || fabs(wv - gv) <= o->abs_tol);
      } else if (o->cmp == GL_CORPUS_REL) {
        double wv = bits_value(w, o->elem), gv = bits_value(g, o->elem);
        double m = fmax(fabs(wv), fabs(gv));
        ok = fabs(wv - gv) <= o->rel_tol * m;
      }
    }
    if (!ok && !bad++) {
      char a[64], b[64];
      fmt_elem(a, sizeof a, w, o->elem);
      fmt_elem(b, sizeof b, g, o->elem);
      snprintf(msg, msglen, "%s[%zu]: expected %s got %s", o->what, i, a, b);
    }
  }
  return bad;
}

int gl_corpus_check(const gl_corpus_inst *inst, uint8_t *const outs[GL_CORPUS_MAX_OUTS],
                    char *msg, size_t msglen) {
  size_t n_exact = 0, n_tol = 0, n_multi = 0;
  for (unsigned k = 0; k < inst->nouts; k++) {
    const gl_corpus_out *o = &inst->outs[k];
    size_t bytes = inst->buf_bytes[o->buf], n = bytes / gl_corpus_elem_size(o->elem);
    char first[512] = "";
    size_t bad = check_out(o, outs[k], bytes, first, sizeof first);
    if (bad) {
      snprintf(msg, msglen, "%zu of %zu values differ; first: %s", bad, n, first);
      return -1;
    }
    if (o->cmp == GL_CORPUS_EXACT) n_exact += n;
    else if (o->cmp == GL_CORPUS_UNORDERED) n_multi += n;
    else n_tol += n;
  }
  int w = snprintf(msg, msglen, "%zu values exact", n_exact);
  if (w > 0 && (size_t)w < msglen && n_tol)
    w += snprintf(msg + w, msglen - (size_t)w, ", %zu within tolerance", n_tol);
  if (w > 0 && (size_t)w < msglen && n_multi)
    snprintf(msg + w, msglen - (size_t)w, ", %zu as a multiset", n_multi);
  return 0;
}

int gl_corpus_diff(const gl_corpus_inst *inst, uint8_t *const a[GL_CORPUS_MAX_OUTS],
                   uint8_t *const b[GL_CORPUS_MAX_OUTS], unsigned *n_exact, unsigned *n_same,
                   char *msg, size_t msglen) {
  int differ = 0;
  size_t w = 0;
  msg[0] = 0;
  for (unsigned k = 0; k < inst->nouts; k++) {
    const gl_corpus_out *o = &inst->outs[k];
    size_t bytes = inst->buf_bytes[o->buf], n = bytes / gl_corpus_elem_size(o->elem);
    char part[160];
    if (o->cmp == GL_CORPUS_EXACT || o->cmp == GL_CORPUS_UNORDERED) {
      bool same;
      if (o->cmp == GL_CORPUS_EXACT) {
        same = memcmp(a[k], b[k], bytes) == 0;
      } else {
        uint64_t *x = sorted(a[k], o->elem, n), *y = sorted(b[k], o->elem, n);
        same = memcmp(x, y, n * sizeof *x) == 0;
        free(x);
        free(y);
      }
      (*n_exact)++;
      if (same) (*n_same)++;
      else differ++;
      size_t nd = 0;
      if (!same && o->cmp == GL_CORPUS_EXACT)
        for (size_t i = 0; i < n; i++) {
          uint64_t x = load_elem(a[k], o->elem, i), y = load_elem(b[k], o->elem, i);
          if (x == y) continue;
          if (nd++ < 4) /* the first few, for whoever has to find out why */
            fprintf(stderr, "corpus: %s %s[%zu]: 0x%" PRIx64 " vs 0x%" PRIx64 "\n",
                    inst->c->name, o->what, i, x, y);
        }
      if (same)
        snprintf(part, sizeof part, "%s %s", o->what,
                 o->cmp == GL_CORPUS_EXACT ? "identical bits" : "same multiset");
      else if (o->cmp == GL_CORPUS_EXACT)
        snprintf(part, sizeof part, "%s DIFFERENT bits (%zu of %zu)", o->what, nd, n);
      else
        snprintf(part, sizeof part, "%s DIFFERENT multiset", o->what);
    } else {
      uint64_t worst = 0;
      double worst_abs = 0; /* ulps mislead near zero: the absolute gap too */
      size_t nan_mismatch = 0, same_bits = 0;
      for (size_t i = 0; i < n; i++) {
        uint64_t x = load_elem(a[k], o->elem, i), y = load_elem(b[k], o->elem, i);
        if (bits_nan(x, o->elem) || bits_nan(y, o->elem)) {
          nan_mismatch += bits_nan(x, o->elem) != bits_nan(y, o->elem);
          continue;
        }
        same_bits += x == y;
        uint64_t d = ulp_dist(x, y, o->elem);
        if (d > worst) worst = d;
        double gap = fabs(bits_value(x, o->elem) - bits_value(y, o->elem));
        if (gap > worst_abs) worst_abs = gap;
      }
      snprintf(part, sizeof part, "%s max %" PRIu64 " ulp, %.2g apart, %zu of %zu identical%s",
               o->what, worst, worst_abs, same_bits, n, nan_mismatch ? " (NaN mismatch)" : "");
    }
    int r = snprintf(msg + w, msglen - w, "%s%s", k ? ", " : "", part);
    if (r < 0 || (size_t)r >= msglen - w) break;
    w += (size_t)r;
  }
  return differ;
}
