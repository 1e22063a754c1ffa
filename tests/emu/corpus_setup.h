/*
 * corpus_setup.h - what the corpus's case files share (corpus_cases.c,
 * corpus_triton.c): building an instance (buffers, parameters, outputs),
 * pseudo-random data seeded per case, and half precision with IEEE
 * rounding. Every function is static: each case file has its own copy.
 */
#ifndef GL_TESTS_EMU_CORPUS_SETUP_H
#define GL_TESTS_EMU_CORPUS_SETUP_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "corpus.h"

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#endif

/* ---- Instance building -------------------------------------------------- */

static void launch1(gl_corpus_inst *in, uint32_t grid, uint32_t block) {
  in->grid[0] = grid;
  in->block[0] = block;
}

/* A new device buffer of `bytes`, zeroed; returns its host initial contents. */
static void *buf_new(gl_corpus_inst *in, size_t bytes, unsigned *idx) {
  unsigned i = in->nbufs++;
  if (i >= GL_CORPUS_MAX_BUFS) abort();
  in->buf_bytes[i] = bytes;
  in->init[i] = calloc(1, bytes ? bytes : 1);
  if (!in->init[i]) abort();
  *idx = i;
  return in->init[i];
}

static void param_buf(gl_corpus_inst *in, unsigned buf) {
  if (in->nparams >= GL_CORPUS_MAX_PARAMS) abort();
  gl_corpus_param *p = &in->params[in->nparams++];
  p->buf = (int)buf;
  p->size = 8;
}

static void param_raw(gl_corpus_inst *in, const void *v, size_t size) {
  if (in->nparams >= GL_CORPUS_MAX_PARAMS) abort();
  gl_corpus_param *p = &in->params[in->nparams++];
  if (size > sizeof p->bytes) abort();
  p->buf = -1;
  p->size = size;
  memcpy(p->bytes, v, size);
}

static void param_i32(gl_corpus_inst *in, int32_t v) { param_raw(in, &v, 4); }
static void param_f32(gl_corpus_inst *in, float v) { param_raw(in, &v, 4); }

/* Declares buffer `buf` an output; returns the expected contents, which
 * start as a copy of the buffer's initial contents. */
static void *out_new(gl_corpus_inst *in, unsigned buf, gl_corpus_elem elem, gl_corpus_cmp cmp,
                     const char *what) {
  if (in->nouts >= GL_CORPUS_MAX_OUTS) abort();
  gl_corpus_out *o = &in->outs[in->nouts++];
  o->buf = buf;
  o->elem = elem;
  o->cmp = cmp;
  o->what = what;
  o->expect = malloc(in->buf_bytes[buf] ? in->buf_bytes[buf] : 1);
  if (!o->expect) abort();
  memcpy(o->expect, in->init[buf], in->buf_bytes[buf]);
  return o->expect;
}

static gl_corpus_out *last_out(gl_corpus_inst *in) { return &in->outs[in->nouts - 1]; }

/* ---- Random data (splitmix64, seeded per case) ---------------------------- */

typedef struct rng {
  uint64_t s;
} rng;

static rng rng_seed(const char *name) {
  uint64_t h = 0x243f6a8885a308d3ull; /* FNV-style mix of the case name */
  for (const char *p = name; *p; p++) h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
  rng r = {h};
  return r;
}

static uint64_t rng_u64(rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static uint32_t rng_u32(rng *r) { return (uint32_t)(rng_u64(r) >> 32); }
static uint32_t rng_below(rng *r, uint32_t n) { return (uint32_t)(((rng_u64(r) >> 32) * n) >> 32); }
static int32_t rng_range(rng *r, int32_t lo, int32_t hi) { /* [lo, hi] */
  return (int32_t)((int64_t)lo + rng_below(r, (uint32_t)((int64_t)hi - lo + 1)));
}
static float rng_f32(rng *r, float lo, float hi) {
  return lo + (hi - lo) * (float)(rng_u32(r) >> 8) * 0x1p-24f;
}

static float f32_bits(uint32_t b) {
  float f;
  memcpy(&f, &b, 4);
  return f;
}
static uint32_t bits_f32(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}
static double f64_bits(uint64_t b) {
  double d;
  memcpy(&d, &b, 8);
  return d;
}

/* ---- Half precision ----------------------------------------------------- */

static double h2d(uint16_t h) {
  int ex = (h >> 10) & 31, m = h & 0x3ff;
  double v = ex == 0 ? ldexp(m, -24) : ex == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, ex - 25);
  return (h & 0x8000u) ? -v : v;
}

/* Rounds s + e to half (nearest, ties to even), where s is the double
 * nearest to the exact value s + e and e is the (exact) rest. */
static uint16_t d2h(double s, double e) {
  if (isnan(s)) return 0x7fff;
  uint16_t sign = signbit(s) ? 0x8000u : 0;
  double a = fabs(s), ea = signbit(s) ? -e : e;
  if (isinf(a)) return sign | 0x7c00u;
  if (a == 0.0) return sign;
  int ex;
  frexp(a, &ex); /* a in [2^(ex-1), 2^ex) */
  int qe = ex - 11;
  if (qe < -24) qe = -24;
  double n = ldexp(a, -qe), fl = floor(n), frac = n - fl;
  int up = frac > 0.5 || (frac == 0.5 && (ea > 0 || (ea == 0 && fmod(fl, 2.0) != 0.0)));
  double r = ldexp(fl + up, qe);
  if (r >= 65536.0) return sign | 0x7c00u;
  if (r == 0.0) return sign;
  if (r < 0x1p-14) return sign | (uint16_t)ldexp(r, 24);
  frexp(r, &ex);
  uint16_t mant = (uint16_t)(ldexp(r, 11 - ex) - 1024.0);
  return sign | (uint16_t)((ex - 1 + 15) << 10) | mant;
}
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#endif /* GL_TESTS_EMU_CORPUS_SETUP_H */
