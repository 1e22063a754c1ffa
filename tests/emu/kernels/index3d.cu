// index3d.cu - 3D grid of 3D blocks: every thread writes its packed
// coordinates at its linear global index.
extern "C" __global__ void index3d(unsigned *out) {
  unsigned bx = blockIdx.x, by = blockIdx.y, bz = blockIdx.z;
  unsigned tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
  unsigned block = (bz * gridDim.y + by) * gridDim.x + bx;
  unsigned nthr = blockDim.x * blockDim.y * blockDim.z;
  unsigned t = (tz * blockDim.y + ty) * blockDim.x + tx;
  unsigned g = block * nthr + t;
  out[2 * g] = (bx << 24) | (by << 16) | (bz << 8) | (tx << 4) | (ty << 2) | tz;
  out[2 * g + 1] = (gridDim.x << 24) | (gridDim.y << 16) | (gridDim.z << 8) |
                   (blockDim.x << 4) | (blockDim.y << 2) | blockDim.z;
}
