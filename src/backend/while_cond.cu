// while_cond.cu - the kernel that ends each pass of a graph WHILE loop
// (backend_cuda.c, graph_build with a while_flag): the loop's conditional
// node runs its body again while the u32 at `flag` is not 0.
//
// cudaGraphSetConditional is a device runtime function, so this is built
// relocatable (-rdc) and device-linked with libcudadevrt when gpulease is
// built, not at run time (a worker has no toolkit): scripts/gen_while_cond.sh
// compiles it for each GPU architecture into src/backend/while_cond_cubins.c,
// which is checked in. Run that script after editing this file.
extern "C" __global__ void gl_while_cond(cudaGraphConditionalHandle h, const unsigned *flag) {
  cudaGraphSetConditional(h, *flag != 0u);
}
