// compare_select.cu - float comparisons (ordered and unordered), NaN
// handling of fminf/fmaxf, selects, signed and unsigned integer min/max.
extern "C" __global__ void compare_select(const float *a, const float *b, const int *x,
                                          const int *y, float *fout, int *iout, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float p = a[i], q = b[i];
  int u = x[i], v = y[i];
  float *f = fout + 6 * i;
  int *o = iout + 12 * i;
  f[0] = fminf(p, q);
  f[1] = fmaxf(p, q);
  f[2] = p < q ? p : q;
  f[3] = fabsf(p);
  f[4] = copysignf(p, q);
  f[5] = -q;
  o[0] = p < q;
  o[1] = p <= q;
  o[2] = p == q;
  o[3] = p != q;
  o[4] = !(p >= q);
  o[5] = isnan(p) | (isinf(q) << 1) | (signbit(p) ? 4 : 0);
  o[6] = p > q ? u : v;
  o[7] = min(u, v);
  o[8] = max(u, v);
  o[9] = (int)min((unsigned)u, (unsigned)v);
  o[10] = (int)max((unsigned)u, (unsigned)v);
  o[11] = (u < v) + 2 * ((unsigned)u < (unsigned)v);
}
