// busy.cu - a kernel that keeps its GPU busy for `cycles` SM clock cycles
// (clock64), then writes 1 to *done: tests/gpu/multigpu_check.c runs one on
// each GPU at once to show they run concurrently (about 1 s each).
extern "C" __global__ void busy(unsigned long long *done, unsigned long long cycles) {
  long long start = clock64();
  while ((unsigned long long)(clock64() - start) < cycles) {
  }
  if (threadIdx.x == 0) *done = 1;
}
