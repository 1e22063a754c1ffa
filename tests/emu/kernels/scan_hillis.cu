// scan_hillis.cu - inclusive Hillis-Steele scan of each block's slice, f32,
// double-buffered in shared memory: at step d, x[i] = x[i] + x[i-d] (i >= d).
extern "C" __global__ void scan_hillis(const float *in, float *out, int n) {
  extern __shared__ float buf[]; // 2 * blockDim.x floats
  unsigned t = threadIdx.x, nb = blockDim.x, i = blockIdx.x * nb + t;
  int cur = 0;
  buf[t] = i < (unsigned)n ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned d = 1; d < nb; d <<= 1) {
    float v = buf[cur * nb + t];
    if (t >= d) v = buf[cur * nb + t - d] + v;
    buf[(1 - cur) * nb + t] = v;
    cur = 1 - cur;
    __syncthreads();
  }
  if (i < (unsigned)n) out[i] = buf[cur * nb + t];
}
