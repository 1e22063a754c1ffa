/*
 * vector_add.c - c = a + b on a leased GPU, with explicit kernel parameters:
 * three pointers into the lease's VRAM and the element count.
 *
 *   example_vector_add HOST:PORT PIN_SHA256 vector_add.ptx [N]
 *
 * VRAM layout of the lease: a at 0, b at 4N, c at 8N (bytes).
 */
#include <gpulease/gpulease.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static void *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  void *p = malloc((size_t)n);
  *len = p ? fread(p, 1, (size_t)n, f) : 0;
  fclose(f);
  return p;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s HOST:PORT PIN_SHA256 vector_add.ptx [N]\n", argv[0]);
    return 2;
  }
  int32_t n = argc > 4 ? atoi(argv[4]) : 1000000;
  size_t bytes = (size_t)n * sizeof(float), ptx_len;
  void *ptx = read_all(argv[3], &ptx_len);
  float *ab = malloc(2 * bytes); /* a then b: one input copy */
  if (!ptx || !ab || n <= 0) return fprintf(stderr, "bad input\n"), 1;
  for (int32_t i = 0; i < n; i++) {
    ab[i] = (float)i * 0.5f;
    ab[n + i] = (float)(n - i);
  }

  gpulease_connect_options opts;
  gpulease_connect_options_default(&opts);
  opts.addr = argv[1];
  opts.pin_sha256 = argv[2];
  gpulease_client *client;
  gpulease_lease lease;
  gpulease_error err;
  if (gpulease_client_connect(&opts, &client, &err) != GPULEASE_OK ||
      gpulease_lease_alloc(client, GPULEASE_ANY_GPU, 3 * bytes, 60, &lease, &err) != GPULEASE_OK) {
    fprintf(stderr, "%s: %s\n", gpulease_status_name(err.status), err.message);
    return 1;
  }
  gpulease_param params[4] = {
      gpulease_param_pointer(0),         /* const float *a */
      gpulease_param_pointer(bytes),     /* const float *b */
      gpulease_param_pointer(2 * bytes), /* float *c */
      gpulease_param_scalar(&n, sizeof n),
  };
  gpulease_submit_desc desc;
  gpulease_submit_desc_default(&desc);
  desc.image = ptx;
  desc.image_size = ptx_len;
  desc.kernel = "vector_add";
  desc.block[0] = 256;
  desc.grid[0] = (uint32_t)((n + 255) / 256);
  desc.input = ab;
  desc.input_size = 2 * bytes;
  desc.output_offset = 2 * bytes;
  desc.output_size = bytes;
  desc.params = params;
  desc.param_count = 4;
  gpulease_submit_result res;
  gpulease_submit_result_init(&res);
  long bad = 0;
  if (gpulease_submit(client, &lease, &desc, &res, &err) != GPULEASE_OK) {
    fprintf(stderr, "submit: %s: %s\n", gpulease_status_name(err.status), err.message);
    bad = 1;
  } else {
    const float *c = res.output;
    for (int32_t i = 0; i < n; i++) bad += c[i] != ab[i] + ab[n + i];
    printf("vector_add: %d elements, kernel %.1f us, %ld wrong\n", n,
           (double)res.gpu_time_ns / 1e3, bad);
    gpulease_submit_result_release(&res);
  }
  gpulease_lease_free(client, &lease, &err);
  gpulease_client_close(client);
  free(ab);
  free(ptx);
  return bad ? 1 : 0;
}
