/*
 * ptx_check.c - a PTX checked against the node before it is sent: its
 * .version against the newest ISA the node loads (through the driver or
 * nvJitLink) and its .target against the GPU's (docs/protocol.md,
 * GET_INVENTORY). The inventory is asked for once per connection, at the
 * first PTX sent, and kept.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "common/ptx_header.h"

/* Asks for the inventory and keeps each GPU's caps; false when it cannot
 * be had (the check is then skipped, and the node has the last word). */
static bool fetch_caps(gpulease_client *c, uint64_t gen) {
  gpulease_inventory *inv = malloc(sizeof *inv);
  if (!inv) return false;
  gpulease_inventory_init(inv);
  gpulease_error e;
  bool ok = gpulease_inventory_get(c, inv, &e) == GPULEASE_OK;
  pthread_mutex_lock(&c->caps_mu);
  c->caps_gen = gen;
  c->caps_state = ok ? 1 : -1;
  c->ncaps = 0;
  for (uint32_t i = 0; ok && i < inv->gpu_count && i < GPULEASE_MAX_GPUS; i++) {
    const gpulease_gpu_info *g = &inv->gpus[i];
    gl_lib_ptx_caps *k = &c->caps[c->ncaps++];
    k->index = g->index;
    k->caps.cc_major = (uint8_t)g->cc_major;
    k->caps.cc_minor = (uint8_t)g->cc_minor;
    k->caps.arch_specific = (g->flags & GPULEASE_GPU_ARCH_SPECIFIC) != 0;
    k->caps.isa_driver[0] = g->ptx_isa_driver_major;
    k->caps.isa_driver[1] = g->ptx_isa_driver_minor;
    k->caps.isa_nvjitlink[0] = g->ptx_isa_nvjitlink_major;
    k->caps.isa_nvjitlink[1] = g->ptx_isa_nvjitlink_minor;
  }
  pthread_mutex_unlock(&c->caps_mu);
  free(inv);
  return ok;
}

bool gl_lib_ptx_check_off(void) {
  const char *v = getenv("GPULEASE_PTX_CHECK");
  return v && strcmp(v, "0") == 0;
}

gpulease_status gl_lib_ptx_precheck(gpulease_client *c, uint32_t gpu_index, const void *image,
                                    size_t len, gpulease_error *err) {
  if (c->ptx_check_off) return GPULEASE_OK;
  pthread_mutex_lock(&c->caps_mu);
  uint64_t gen = c->generation;
  bool have = c->caps_state != 0 && c->caps_gen == gen;
  pthread_mutex_unlock(&c->caps_mu);
  if (!have && !fetch_caps(c, gen)) return GPULEASE_OK;
  gl_ptx_caps caps;
  bool found = false;
  pthread_mutex_lock(&c->caps_mu);
  for (unsigned i = 0; i < c->ncaps && !found; i++)
    if (c->caps[i].index == gpu_index) {
      caps = c->caps[i].caps;
      found = true;
    }
  pthread_mutex_unlock(&c->caps_mu);
  if (!found) return GPULEASE_OK;
  char why[sizeof err->message];
  if (gl_ptx_check(image, len, &caps, why, sizeof why) == 0) return GPULEASE_OK;
  return gl_lib_set_err(err, GPULEASE_LOAD_FAILED, "GPU %u: %s (checked before sending; "
                        "GPULEASE_PTX_CHECK=0 sends it anyway)", gpu_index, why);
}
