/*
 * median.h - the median the benchmarks print: sorts v (n values, n > 0) in
 * place and returns its middle value (the mean of the two middle ones when
 * n is even).
 */
#ifndef GL_BENCH_MEDIAN_H
#define GL_BENCH_MEDIAN_H

#include <stddef.h>
#include <stdlib.h>

static int gl_bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static inline double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, gl_bench_cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The p-th quantile (0..1) of v (n values, n > 0), nearest rank; sorts v. */
static inline double percentile(double *v, size_t n, double p) {
  qsort(v, n, sizeof *v, gl_bench_cmp_double);
  return v[(size_t)(p * (double)(n - 1) + 0.5)];
}

#endif
