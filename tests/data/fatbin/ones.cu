// A kernel that writes 1..n into p (thread i writes i + 1): the images of
// the fatbins beside it (gen.sh).
extern "C" __global__ void k(unsigned *p) { p[threadIdx.x] = threadIdx.x + 1; }
