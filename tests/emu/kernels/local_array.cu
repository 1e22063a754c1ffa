// local_array.cu - per-thread arrays indexed by data-dependent indices, so
// they live in local memory (ld.local/st.local), int and float.
extern "C" __global__ void local_array(const int *in, const int *idx, int *out, float *fout,
                                       int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int arr[24];
  float fa[10];
  int v = in[i], s = idx[i];
  for (int k = 0; k < 24; k++) arr[k] = (v * (k + 1)) ^ k;
  for (int k = 0; k < 10; k++) fa[k] = (float)(v % 1000) * 0.5f + (float)k;
  int acc = 0;
  for (int j = 0; j < 8; j++) {
    int p = (unsigned)(s + j * 7) % 24u;
    acc += arr[p];
    arr[(p * 5 + 1) % 24] = acc;
    fa[(unsigned)(s ^ j) % 10u] = __fadd_rn(fa[(unsigned)(s + j) % 10u], (float)acc);
  }
  out[i] = acc ^ arr[(unsigned)s % 24u];
  fout[i] = fa[(unsigned)(s >> 4) % 10u];
}
