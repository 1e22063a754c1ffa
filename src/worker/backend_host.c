/*
 * backend_host.c - a TEST DOUBLE device: a region of host memory that can
 * be leased, written and read, but runs no kernels (load and launch answer
 * UNSUPPORTED).
 *
 * It exists so the loopback tests on machines without a GPU drive the
 * daemon's real lease paths end to end: worker processes, WORKER_INIT,
 * secrets, renew, expiry, free. gpuleased selects it only when the
 * environment variable GPULEASE_TEST_HOST_DEVICE holds a size in bytes (the
 * device's "VRAM"); it is not a user-facing feature. The emulated device
 * that runs PTX is a separate backend.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/backend_host.h"

typedef struct host_backend {
  gl_backend base;
  uint64_t capacity;
  uint8_t *region;
  uint64_t size;
} host_backend;

static gpulease_status h_probe(gl_backend *b, gl_probe_resp *out, char *err, size_t errlen) {
  (void)err;
  (void)errlen;
  host_backend *h = (host_backend *)b;
  memset(out, 0, sizeof *out);
  out->count = 1;
  snprintf(out->gpus[0].uuid, sizeof out->gpus[0].uuid, "TEST-host-device-0");
  snprintf(out->gpus[0].name, sizeof out->gpus[0].name, "test host device (runs no kernels)");
  out->gpus[0].total_vram_bytes = h->capacity;
  return GPULEASE_OK;
}

static gpulease_status h_init(gl_backend *b, uint32_t ordinal, uint64_t vram_bytes,
                              uint64_t *region_base, char *device_name, size_t name_len,
                              char *err, size_t errlen) {
  host_backend *h = (host_backend *)b;
  if (ordinal != 0) {
    snprintf(err, errlen, "no device with ordinal %u", ordinal);
    return GPULEASE_NO_DEVICE;
  }
  if (vram_bytes > h->capacity || !(h->region = calloc(1, vram_bytes))) {
    snprintf(err, errlen, "cannot reserve %llu bytes on the test host device",
             (unsigned long long)vram_bytes);
    return GPULEASE_CAPACITY_EXCEEDED;
  }
  h->size = vram_bytes;
  *region_base = 0x7e0000000000ull; /* an address no kernel will see */
  snprintf(device_name, name_len, "test host device");
  return GPULEASE_OK;
}

static gpulease_status h_load(gl_backend *b, const uint8_t *image, size_t len,
                              gpulease_image_format format, void **module, char *err,
                              size_t errlen) {
  (void)b, (void)image, (void)len, (void)format, (void)module;
  snprintf(err, errlen, "the test host device cannot load modules");
  return GPULEASE_UNSUPPORTED;
}

static void h_unload(gl_backend *b, void *module) { (void)b, (void)module; }

static gpulease_status h_get_function(gl_backend *b, void *module, const char *name, void **fn,
                                      char *err, size_t errlen) {
  (void)b, (void)module, (void)name, (void)fn;
  snprintf(err, errlen, "the test host device has no functions");
  return GPULEASE_UNSUPPORTED;
}

static gpulease_status h_write(gl_backend *b, uint64_t offset, const void *src, size_t len,
                               char *err, size_t errlen) {
  (void)err, (void)errlen;
  host_backend *h = (host_backend *)b;
  memcpy(h->region + offset, src, len);
  return GPULEASE_OK;
}

static gpulease_status h_launch(gl_backend *b, void *fn, const gl_launch *launch,
                                uint64_t *gpu_time_ns, char *err, size_t errlen) {
  (void)b, (void)fn, (void)launch, (void)gpu_time_ns;
  snprintf(err, errlen, "the test host device cannot run kernels");
  return GPULEASE_UNSUPPORTED;
}

static gpulease_status h_read(gl_backend *b, uint64_t offset, void *dst, size_t len, char *err,
                              size_t errlen) {
  (void)err, (void)errlen;
  host_backend *h = (host_backend *)b;
  memcpy(dst, h->region + offset, len);
  return GPULEASE_OK;
}

static bool h_context_lost(gl_backend *b) {
  (void)b;
  return false;
}

static void h_destroy(gl_backend *b) {
  host_backend *h = (host_backend *)b;
  free(h->region);
  free(h);
}

static const gl_backend_ops host_ops = {
    .name = "test-host",
    .probe = h_probe,
    .init = h_init,
    .load_module = h_load,
    .unload_module = h_unload,
    .get_function = h_get_function,
    .param_sizes = NULL,
    .write = h_write,
    .launch = h_launch,
    .read = h_read,
    .context_lost = h_context_lost,
    .destroy = h_destroy,
};

gl_backend *gl_backend_host_new(uint64_t capacity_bytes) {
  host_backend *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  h->base.ops = &host_ops;
  h->capacity = capacity_bytes;
  return &h->base;
}
