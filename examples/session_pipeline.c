/*
 * session_pipeline.c - a session: data and modules stay on the leased GPU
 * between kernels, and kernels are queued without waiting for each.
 *
 *   example_session_pipeline HOST:PORT PIN_SHA256 vector_add.ptx scale.ptx [N]
 *
 * Computes c = (a + b) * 2 with two kernels on buffers that live on the GPU:
 *   1. lease VRAM, open a session, allocate buffers a, b, c;
 *   2. write a and b (chunked and pipelined by the library);
 *   3. load both modules and look up their kernels;
 *   4. launch vector_add(a, b, c, n) and scale(c, 2, n): both calls return
 *      at once, the daemon runs them in order, like one CUDA stream;
 *   5. sync once: wait for both and learn whether any op failed;
 *   6. read c back, check it, close the session and free the lease.
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
  void *p = n > 0 ? malloc((size_t)n) : NULL;
  *len = p ? fread(p, 1, (size_t)n, f) : 0;
  fclose(f);
  return p;
}

/* Prints a failed call's status and message; returns 1 for main. */
static int report(const char *what, const gpulease_error *err) {
  fprintf(stderr, "%s: %s: %s\n", what, gpulease_status_name(err->status), err->message);
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s HOST:PORT PIN_SHA256 vector_add.ptx scale.ptx [N]\n", argv[0]);
    return 2;
  }
  int32_t n = argc > 5 ? atoi(argv[5]) : 1 << 20;
  size_t add_len, scale_len;
  void *add_ptx = read_all(argv[3], &add_len), *scale_ptx = read_all(argv[4], &scale_len);
  if (n <= 0 || !add_ptx || !scale_ptx) return fprintf(stderr, "bad arguments\n"), 2;
  const uint64_t bytes = (uint64_t)n * sizeof(float);
  float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
  if (!a || !b || !c) return fprintf(stderr, "out of memory\n"), 1;
  for (int32_t i = 0; i < n; i++) {
    a[i] = (float)i;
    b[i] = (float)(n - i) * 0.25f;
  }

  /* Connect, pinning the daemon's certificate, and lease enough VRAM for
   * three buffers (plus room for the allocator's alignment). */
  gpulease_connect_options opts;
  gpulease_connect_options_default(&opts);
  opts.addr = argv[1];
  opts.pin_sha256 = argv[2];
  gpulease_client *client;
  gpulease_lease lease;
  gpulease_error err;
  if (gpulease_client_connect(&opts, &client, &err) != GPULEASE_OK) return report("connect", &err);
  if (gpulease_lease_alloc(client, GPULEASE_ANY_GPU, 3 * bytes + (1 << 20), 120, &lease, &err) !=
      GPULEASE_OK) {
    gpulease_client_close(client);
    return report("lease alloc", &err);
  }

  int rc = 1;
  gpulease_session *s = NULL;
  if (gpulease_session_open(client, &lease, &s, &err) != GPULEASE_OK) {
    report("session open", &err);
    goto free_lease;
  }

  /* Buffers, then the inputs: mem_write returns once the daemon has
   * taken every chunk, so a and b may be reused right after. */
  gpulease_buffer da, db, dc;
  if (gpulease_mem_alloc(s, bytes, &da, &err) || gpulease_mem_alloc(s, bytes, &db, &err) ||
      gpulease_mem_alloc(s, bytes, &dc, &err)) {
    report("mem alloc", &err);
    goto close;
  }
  if (gpulease_mem_write(s, da, 0, a, bytes, &err) || gpulease_mem_write(s, db, 0, b, bytes, &err)) {
    report("mem write", &err);
    goto close;
  }

  /* Modules are compiled once per lease (and cached on the daemon's disk);
   * `source` says which cache, if any, had this one. */
  gpulease_module m_add, m_scale;
  gpulease_module_source source;
  gpulease_function f_add, f_scale;
  if (gpulease_module_load(s, add_ptx, add_len, GPULEASE_IMAGE_PTX, &m_add, &source, &err) ||
      gpulease_module_load(s, scale_ptx, scale_len, GPULEASE_IMAGE_PTX, &m_scale, NULL, &err)) {
    report("module load", &err);
    goto close;
  }
  printf("vector_add module: %s\n", source == GPULEASE_MODULE_LOADED       ? "compiled now"
                                    : source == GPULEASE_MODULE_IN_CONTEXT ? "already loaded"
                                                                           : "from the disk cache");
  if (gpulease_function_get(s, m_add, "vector_add", &f_add, NULL, &err) ||
      gpulease_function_get(s, m_scale, "scale", &f_scale, NULL, &err)) {
    report("function get", &err);
    goto close;
  }

  /* Two launches, neither waits: a failure (a fault, a bad handle) would
   * only show at the sync below. */
  const uint32_t grid[3] = {(uint32_t)((n + 255) / 256), 1, 1}, block[3] = {256, 1, 1};
  const float two = 2.0f;
  gpulease_arg add_args[] = {gpulease_arg_buffer(da, 0), gpulease_arg_buffer(db, 0),
                             gpulease_arg_buffer(dc, 0), gpulease_arg_scalar(&n, sizeof n)};
  gpulease_arg scale_args[] = {gpulease_arg_buffer(dc, 0), gpulease_arg_scalar(&two, sizeof two),
                               gpulease_arg_scalar(&n, sizeof n)};
  if (gpulease_launch(s, f_add, grid, block, 0, add_args, 4, &err) ||
      gpulease_launch(s, f_scale, grid, block, 0, scale_args, 3, &err)) {
    report("launch", &err);
    goto close;
  }

  /* One round trip for both kernels. */
  gpulease_op_failure failure;
  gpulease_op_failure_init(&failure);
  if (gpulease_session_sync(s, &failure, &err) != GPULEASE_OK) {
    fprintf(stderr, "op %s (seq %llu) failed: %s: %s\n", failure.op_name,
            (unsigned long long)failure.seq, gpulease_status_name(err.status), err.message);
    goto close;
  }

  if (gpulease_mem_read(s, dc, 0, c, bytes, &err) != GPULEASE_OK) {
    report("mem read", &err);
    goto close;
  }
  long wrong = 0;
  for (int32_t i = 0; i < n; i++) wrong += c[i] != (a[i] + b[i]) * 2.0f;
  printf("session_pipeline: %d elements, c = (a + b) * 2, %ld wrong\n", n, wrong);
  rc = wrong != 0;

close:
  /* Closing frees the session's buffers and modules on the GPU. */
  if (gpulease_session_close(s, &err) != GPULEASE_OK) {
    report("session close", &err);
    rc = 1;
  }
free_lease:
  gpulease_lease_free(client, &lease, &err);
  gpulease_client_close(client);
  free(a);
  free(b);
  free(c);
  free(add_ptx);
  free(scale_ptx);
  return rc;
}
