/*
 * iota.c - the smallest libgpulease program: lease 1 KiB of VRAM, run the
 * iota kernel (out[i] = i + 1) on it, print and check the result, free.
 *
 *   example_iota HOST:PORT PIN_SHA256 iota.ptx
 */
#include <gpulease/gpulease.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  if (argc != 4) {
    fprintf(stderr, "usage: %s HOST:PORT PIN_SHA256 iota.ptx\n", argv[0]);
    return 2;
  }
  size_t ptx_len;
  void *ptx = read_all(argv[3], &ptx_len);
  if (!ptx) return perror(argv[3]), 1;

  gpulease_connect_options opts;
  gpulease_connect_options_default(&opts);
  opts.addr = argv[1];
  opts.pin_sha256 = argv[2];
  gpulease_client *client;
  gpulease_lease lease;
  gpulease_error err;
  if (gpulease_client_connect(&opts, &client, &err) != GPULEASE_OK ||
      gpulease_lease_alloc(client, GPULEASE_ANY_GPU, 256 * sizeof(float), 30, &lease, &err) !=
          GPULEASE_OK) {
    fprintf(stderr, "%s: %s\n", gpulease_status_name(err.status), err.message);
    return 1;
  }

  gpulease_submit_desc desc;
  gpulease_submit_desc_default(&desc);
  desc.image = ptx;
  desc.image_size = ptx_len;
  desc.kernel = "iota";
  desc.block[0] = 256;                   /* grid 1x1x1, block 256x1x1 */
  desc.output_size = 256 * sizeof(float); /* the lease's pointer is the only parameter */
  gpulease_submit_result res;
  gpulease_submit_result_init(&res);
  int bad = 0;
  if (gpulease_submit(client, &lease, &desc, &res, &err) != GPULEASE_OK) {
    fprintf(stderr, "submit: %s: %s\n", gpulease_status_name(err.status), err.message);
    bad = 1;
  } else {
    const float *out = res.output;
    for (int i = 0; i < 256; i++) bad += out[i] != (float)(i + 1);
    printf("iota: out[0]=%g out[255]=%g, kernel %.1f us, %s\n", (double)out[0],
           (double)out[255], (double)res.gpu_time_ns / 1e3, bad ? "WRONG" : "correct");
    gpulease_submit_result_release(&res);
  }
  gpulease_lease_free(client, &lease, &err);
  gpulease_client_close(client);
  free(ptx);
  return bad ? 1 : 0;
}
