/*
 * backend_emu.c - the worker backend on the emulated device; see
 * backend_emu.h and src/emu/emu.h.
 *
 * The emulator reports faults with the name of the CUDA error they stand
 * for, and this backend then behaves as the CUDA one does after a sticky
 * error: the context is lost, the worker exits after replying, and the
 * lease's next request gets a fresh worker with a zeroed region. Code that
 * handles faults is therefore tested the same way on both.
 */
#include "worker/backend_emu.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "emu/emu.h"

typedef struct emu_backend {
  gl_backend base;
  uint64_t capacity;
  unsigned threads;
  gl_emu_device *dev;
  uint64_t region_bytes;
  bool lost;
} emu_backend;

static emu_backend *as_emu(gl_backend *b) { return (emu_backend *)b; }

static void fill_info(const emu_backend *e, gl_probe_gpu *g) {
  snprintf(g->uuid, sizeof g->uuid, "EMU-0");
  snprintf(g->name, sizeof g->name, "%s", GL_EMU_NAME);
  g->cc_major = GL_EMU_CC_MAJOR;
  g->cc_minor = GL_EMU_CC_MINOR;
  g->sm_count = e->threads;
  g->total_vram_bytes = e->capacity;
}

static gpulease_status emu_probe(gl_backend *b, gl_probe_resp *out, char *err, size_t errlen) {
  (void)err, (void)errlen;
  memset(out, 0, sizeof *out);
  out->count = 1;
  fill_info(as_emu(b), &out->gpus[0]);
  return GPULEASE_OK;
}

static gpulease_status emu_init(gl_backend *b, uint32_t ordinal, uint64_t vram_bytes,
                                uint64_t *region_base, char *device_name, size_t name_len,
                                char *err, size_t errlen) {
  emu_backend *e = as_emu(b);
  if (ordinal != 0) {
    snprintf(err, errlen, "the emulated device has ordinal 0 only, not %" PRIu32, ordinal);
    return GPULEASE_NO_DEVICE;
  }
  if (vram_bytes > e->capacity) {
    snprintf(err, errlen, "%" PRIu64 " bytes is more than the emulated device's %" PRIu64,
             vram_bytes, e->capacity);
    return GPULEASE_CAPACITY_EXCEEDED;
  }
  e->dev = gl_emu_device_new(vram_bytes);
  if (!e->dev) {
    snprintf(err, errlen, "cannot reserve %" PRIu64 " bytes of host memory for the emulated "
                          "device", vram_bytes);
    return GPULEASE_CAPACITY_EXCEEDED;
  }
  e->region_bytes = vram_bytes;
  *region_base = GL_EMU_REGION_BASE;
  snprintf(device_name, name_len, "%s", GL_EMU_NAME);
  return GPULEASE_OK;
}

static gpulease_status emu_load(gl_backend *b, const uint8_t *image, size_t len,
                                gpulease_image_format format, void **module, char *err,
                                size_t errlen) {
  emu_backend *e = as_emu(b);
  if (format != GPULEASE_IMAGE_PTX) {
    snprintf(err, errlen, "the emulated device runs PTX only: a %s image needs a real GPU",
             format == GPULEASE_IMAGE_CUBIN ? "cubin" : "fatbin");
    return GPULEASE_UNSUPPORTED;
  }
  gl_emu_module *m = NULL;
  gpulease_status st = gl_emu_module_load(e->dev, (const char *)image, len, &m, err, errlen);
  if (st == GPULEASE_OK) *module = m;
  return st;
}

static void emu_unload(gl_backend *b, void *module) {
  gl_emu_module_unload(as_emu(b)->dev, module);
}

static gpulease_status emu_get_function(gl_backend *b, void *module, const char *name,
                                        void **fn, char *err, size_t errlen) {
  (void)b;
  const gl_emu_function *f = gl_emu_module_function(module, name);
  if (!f) {
    snprintf(err, errlen, "no kernel named '%s' in the module (CUDA_ERROR_NOT_FOUND)", name);
    return GPULEASE_LAUNCH_FAILED;
  }
  *fn = (void *)f;
  return GPULEASE_OK;
}

static gpulease_status emu_param_sizes(gl_backend *b, void *fn, size_t *sizes, size_t max,
                                       size_t *count, char *err, size_t errlen) {
  (void)b, (void)err, (void)errlen;
  *count = gl_emu_function_params(fn, sizes, max);
  return GPULEASE_OK;
}

static gpulease_status emu_write(gl_backend *b, uint64_t offset, const void *src, size_t len,
                                 char *err, size_t errlen) {
  emu_backend *e = as_emu(b);
  uint8_t *p = gl_emu_device_ptr(e->dev, GL_EMU_REGION_BASE + offset, len);
  if (!p) {
    snprintf(err, errlen, "write of %zu bytes at offset %" PRIu64 " is outside the region",
             len, offset);
    return GPULEASE_WRITE_FAILED;
  }
  memcpy(p, src, len);
  return GPULEASE_OK;
}

static gpulease_status emu_read(gl_backend *b, uint64_t offset, void *dst, size_t len,
                                char *err, size_t errlen) {
  emu_backend *e = as_emu(b);
  const uint8_t *p = gl_emu_device_ptr(e->dev, GL_EMU_REGION_BASE + offset, len);
  if (!p) {
    snprintf(err, errlen, "read of %zu bytes at offset %" PRIu64 " is outside the region", len,
             offset);
    return GPULEASE_READ_FAILED;
  }
  memcpy(dst, p, len);
  return GPULEASE_OK;
}

static gpulease_status emu_launch(gl_backend *b, void *fn, const gl_launch *l,
                                  uint64_t *gpu_time_ns, char *err, size_t errlen) {
  emu_backend *e = as_emu(b);
  gl_emu_launch_cfg cfg = {.shared_bytes = l->shared_mem_bytes, .args = l->args,
                           .threads = e->threads};
  memcpy(cfg.grid, l->grid, sizeof cfg.grid);
  memcpy(cfg.block, l->block, sizeof cfg.block);
  char why[900];
  uint64_t t0 = gl_mono_ns();
  gpulease_status st = gl_emu_launch(e->dev, fn, &cfg, NULL, why, sizeof why);
  *gpu_time_ns = gl_mono_ns() - t0;
  if (st == GPULEASE_OK) return GPULEASE_OK;
  /* Faults in the kernel are sticky, as on a GPU; bad launch settings
   * (INVALID_ARGUMENT) are not. */
  if (st == GPULEASE_LAUNCH_FAILED) e->lost = true;
  snprintf(err, errlen, "kernel '%s' failed: %s%s", l->kernel_name, why,
           e->lost ? "; the lease's emulated context is lost: its next request gets a fresh "
                     "one, with the region zeroed"
                   : "");
  return st == GPULEASE_NO_MEMORY ? GPULEASE_LAUNCH_FAILED : st;
}

static bool emu_context_lost(gl_backend *b) { return as_emu(b)->lost; }

static void emu_destroy(gl_backend *b) {
  emu_backend *e = as_emu(b);
  gl_emu_device_free(e->dev);
  free(e);
}

static const gl_backend_ops k_emu_ops = {
    .name = "emulated",
    .probe = emu_probe,
    .init = emu_init,
    .load_module = emu_load,
    .unload_module = emu_unload,
    .get_function = emu_get_function,
    .param_sizes = emu_param_sizes,
    .write = emu_write,
    .launch = emu_launch,
    .read = emu_read,
    .context_lost = emu_context_lost,
    .destroy = emu_destroy,
};

gl_backend *gl_backend_emu_new(uint64_t capacity_bytes, unsigned threads) {
  emu_backend *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->base.ops = &k_emu_ops;
  e->capacity = capacity_bytes;
  e->threads = threads ? threads : 1;
  return &e->base;
}
