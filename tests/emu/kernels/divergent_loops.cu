// divergent_loops.cu - per-thread trip counts: nested loops with break and
// continue, a data-dependent while (Collatz steps, capped), early return.
extern "C" __global__ void divergent_loops(const int *in, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  if (v % 7 == 3) {
    out[2 * i] = -1;
    out[2 * i + 1] = -1;
    return;
  }
  int trips = (v & 0x7fffffff) % 40, acc = 0;
  for (int a = 0; a < trips; a++) {
    if ((a ^ v) % 3 == 0) continue;
    for (int b = a; b < trips; b += 1 + (v & 3)) {
      acc += a * b + (v >> 4);
      if (acc > 100000) break;
    }
    if ((acc & 255) == (v & 255)) break;
  }
  unsigned c = (unsigned)(v & 0xffff) + 1u;
  int steps = 0;
  while (c != 1u && steps < 300) {
    c = (c & 1u) ? 3u * c + 1u : c >> 1;
    steps++;
  }
  out[2 * i] = acc;
  out[2 * i + 1] = steps;
}
