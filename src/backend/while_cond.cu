// while_cond.cu - the kernel that ends each pass of a graph WHILE loop
// (backend_cuda.c, graph_build with a while_flag): the loop's conditional
// node runs its body again while the u32 at `flag` is not 0.
//
// cudaGraphSetConditional is a device runtime function, so this is built
// relocatable (-rdc) and device-linked with libcudadevrt when gpulease is
// built, not at run time (a worker has no toolkit): the build compiles it
// with nvcc for each GPU architecture (src/backend/CMakeLists.txt), or copies
// the cubins checked in under src/backend/while_cond/ where nvcc is missing,
// and embeds them in while_cond_cubins.c. Run scripts/gen_while_cond.sh
// after editing this file (the ctest backend_while_cond_fresh says so too).
extern "C" __global__ void gl_while_cond(cudaGraphConditionalHandle h, const unsigned *flag) {
  cudaGraphSetConditional(h, *flag != 0u);
}
