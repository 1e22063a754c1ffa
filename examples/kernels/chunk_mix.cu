// chunk_mix.cu - a pool map's kernel (gpulease pool map, docs/scale-out.md):
// one chunk of 32-bit words in, the same number of words out.
//
//   out[i] = in[i] * 2654435761 + index    for i < bytes / 4
//   out[i] = 0                             for bytes / 4 <= i < out_words
//
// Param list: the chunk's input slice (ptr:@in), its output slice
// (ptr:@out), its input bytes (u32:@bytes; the last chunk may be short),
// its index (u32:@index) and the output slice's words (u32). Every output
// word is written, so a retried or short chunk leaves nothing stale.
extern "C" __global__ void chunk_mix(const unsigned *in, unsigned *out, unsigned bytes,
                                     unsigned index, unsigned out_words) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= out_words) return;
  out[i] = i < bytes / 4 ? in[i] * 2654435761u + index : 0u;
}
