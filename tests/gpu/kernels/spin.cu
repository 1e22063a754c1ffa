// spin.cu - a kernel that never finishes on its own (test only).
//
// Spins while *flag == 0. Nothing ever sets the flag: the test checks that
// the daemon SIGKILLs a worker whose kernel hangs (lease freed or expired)
// and that the GPU's memory comes back.
extern "C" __global__ void spin(unsigned long long *flag) {
  while (*(volatile unsigned long long *)flag == 0) {
  }
}
