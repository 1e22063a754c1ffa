// grid_stride.cu - a grid-stride loop: a small grid covers n elements.
extern "C" __global__ void grid_stride(const unsigned *in, unsigned *out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    out[i] = in[i] * 2654435761u + (unsigned)i;
}
