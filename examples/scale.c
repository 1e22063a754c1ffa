/*
 * scale.c - x *= alpha in place on a leased GPU, with a float scalar
 * parameter; the lease is renewed before the call to show renewal.
 *
 *   example_scale HOST:PORT PIN_SHA256 scale.ptx [N] [ALPHA]
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
    fprintf(stderr, "usage: %s HOST:PORT PIN_SHA256 scale.ptx [N] [ALPHA]\n", argv[0]);
    return 2;
  }
  int32_t n = argc > 4 ? atoi(argv[4]) : 4096;
  float alpha = argc > 5 ? strtof(argv[5], NULL) : 2.5f;
  size_t bytes = (size_t)n * sizeof(float), ptx_len;
  void *ptx = read_all(argv[3], &ptx_len);
  float *x = malloc(bytes);
  if (!ptx || !x || n <= 0) return fprintf(stderr, "bad input\n"), 1;
  for (int32_t i = 0; i < n; i++) x[i] = (float)i - 100.0f;

  gpulease_connect_options opts;
  gpulease_connect_options_default(&opts);
  opts.addr = argv[1];
  opts.pin_sha256 = argv[2];
  gpulease_client *client;
  gpulease_lease lease;
  gpulease_error err;
  if (gpulease_client_connect(&opts, &client, &err) != GPULEASE_OK ||
      gpulease_lease_alloc(client, GPULEASE_ANY_GPU, bytes, 10, &lease, &err) != GPULEASE_OK ||
      gpulease_lease_renew(client, &lease, 30, &err) != GPULEASE_OK) {
    fprintf(stderr, "%s: %s\n", gpulease_status_name(err.status), err.message);
    return 1;
  }
  gpulease_param params[3] = {gpulease_param_pointer(0), gpulease_param_scalar(&alpha, sizeof alpha),
                              gpulease_param_scalar(&n, sizeof n)};
  gpulease_submit_desc desc;
  gpulease_submit_desc_default(&desc);
  desc.image = ptx;
  desc.image_size = ptx_len;
  desc.kernel = "scale";
  desc.block[0] = 128;
  desc.grid[0] = (uint32_t)((n + 127) / 128);
  desc.input = x;
  desc.input_size = bytes;
  desc.output_size = bytes;
  desc.params = params;
  desc.param_count = 3;
  gpulease_submit_result res;
  gpulease_submit_result_init(&res);
  long bad = 0;
  if (gpulease_submit(client, &lease, &desc, &res, &err) != GPULEASE_OK) {
    fprintf(stderr, "submit: %s: %s\n", gpulease_status_name(err.status), err.message);
    bad = 1;
  } else {
    const float *y = res.output;
    for (int32_t i = 0; i < n; i++) bad += y[i] != x[i] * alpha;
    printf("scale: %d elements by %g, kernel %.1f us, %ld wrong\n", n, (double)alpha,
           (double)res.gpu_time_ns / 1e3, bad);
    gpulease_submit_result_release(&res);
  }
  gpulease_lease_free(client, &lease, &err);
  gpulease_client_close(client);
  free(x);
  free(ptx);
  return bad ? 1 : 0;
}
