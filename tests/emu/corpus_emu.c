/*
 * corpus_emu.c - the emulated device as a corpus runner (see corpus_emu.h).
 */
#include "corpus_emu.h"

#include <stdio.h>
#include <string.h>

static int emu_alloc(void *self, size_t bytes, uint64_t *addr, char *err, size_t errlen) {
  gl_corpus_emu *e = self;
  uint64_t need = (bytes + 255u) & ~(uint64_t)255u;
  if (need > e->region_bytes - e->used) {
    snprintf(err, errlen, "emulator region full (%zu bytes wanted)", bytes);
    return -1;
  }
  *addr = GL_EMU_REGION_BASE + e->used;
  e->used += need ? need : 256u;
  return 0;
}

static int emu_write(void *self, uint64_t addr, const void *src, size_t bytes, char *err,
                     size_t errlen) {
  gl_corpus_emu *e = self;
  uint8_t *p = gl_emu_device_ptr(e->dev, addr, bytes);
  if (!p) {
    snprintf(err, errlen, "write outside the region");
    return -1;
  }
  memcpy(p, src, bytes);
  return 0;
}

static int emu_read(void *self, void *dst, uint64_t addr, size_t bytes, char *err,
                    size_t errlen) {
  gl_corpus_emu *e = self;
  const uint8_t *p = gl_emu_device_ptr(e->dev, addr, bytes);
  if (!p) {
    snprintf(err, errlen, "read outside the region");
    return -1;
  }
  memcpy(dst, p, bytes);
  return 0;
}

static int emu_load(void *self, const char *ptx, size_t len, void **mod, char *err,
                    size_t errlen) {
  gl_corpus_emu *e = self;
  if (e->nmods == GL_CORPUS_EMU_MAX_MODULES) {
    snprintf(err, errlen, "too many modules");
    return -1;
  }
  gl_emu_module *m = NULL;
  char msg[512] = "";
  gpulease_status st = gl_emu_module_load(e->dev, ptx, len, &m, msg, sizeof msg);
  if (st != GPULEASE_OK || !m) {
    snprintf(err, errlen, "module load failed (status %d): %s", (int)st, msg);
    return -1;
  }
  e->mods[e->nmods++] = m;
  *mod = m;
  return 0;
}

static int emu_launch(void *self, void *mod, const char *kernel, const uint32_t grid[3],
                      const uint32_t block[3], uint32_t shared_bytes, bool cooperative,
                      const uint32_t cluster[3], void **args, const size_t *sizes,
                      size_t nparams, char *err, size_t errlen) {
  gl_corpus_emu *e = self;
  const gl_emu_function *fn = gl_emu_module_function(mod, kernel);
  if (!fn) {
    snprintf(err, errlen, "no kernel %s in the module", kernel);
    return -1;
  }
  size_t have[32];
  size_t np = gl_emu_function_params(fn, have, 32);
  if (np != nparams) {
    snprintf(err, errlen, "kernel %s has %zu parameters, the case passes %zu", kernel, np,
             nparams);
    return -1;
  }
  for (size_t i = 0; i < np && i < 32; i++)
    if (have[i] != sizes[i]) {
      snprintf(err, errlen, "kernel %s parameter %zu is %zu bytes, the case passes %zu", kernel,
               i, have[i], sizes[i]);
      return -1;
    }
  gl_emu_launch_cfg cfg;
  memset(&cfg, 0, sizeof cfg);
  memcpy(cfg.grid, grid, sizeof cfg.grid);
  memcpy(cfg.block, block, sizeof cfg.block);
  cfg.shared_bytes = shared_bytes;
  cfg.args = args;
  cfg.threads = e->threads;
  cfg.cooperative = cooperative;
  memcpy(cfg.cluster, cluster, sizeof cfg.cluster);
  cfg.sm_count = e->sm_count;
  gl_emu_stats st = {0, 0};
  char msg[512] = "";
  gpulease_status rc = gl_emu_launch(e->dev, fn, &cfg, &st, msg, sizeof msg);
  if (rc != GPULEASE_OK) {
    snprintf(err, errlen, "launch failed (status %d): %s", (int)rc, msg);
    return -1;
  }
  e->stats.thread_insns += st.thread_insns;
  e->stats.warp_insns += st.warp_insns;
  return 0;
}

static void emu_reset(void *self) {
  gl_corpus_emu *e = self;
  for (unsigned i = 0; i < e->nmods; i++) gl_emu_module_unload(e->dev, e->mods[i]);
  e->nmods = 0;
  e->used = 0;
}

int gl_corpus_emu_init(gl_corpus_emu *e, gl_corpus_dev *dev, uint64_t region_bytes,
                       unsigned threads) {
  memset(e, 0, sizeof *e);
  e->dev = gl_emu_device_new(region_bytes);
  if (!e->dev) return -1;
  e->region_bytes = region_bytes;
  e->threads = threads;
  e->sm_count = GL_CORPUS_EMU_SM_COUNT;
  dev->self = e;
  dev->name = "emulator";
  dev->alloc = emu_alloc;
  dev->write = emu_write;
  dev->read = emu_read;
  dev->load = emu_load;
  dev->launch = emu_launch;
  dev->reset = emu_reset;
  return 0;
}

void gl_corpus_emu_fini(gl_corpus_emu *e) {
  if (e->dev) {
    emu_reset(e);
    gl_emu_device_free(e->dev);
  }
  memset(e, 0, sizeof *e);
}
