/* tenant_load.c - see tenant_load.h. */
#include "daemon/tenant_load.h"

#include <stdlib.h>
#include <string.h>

#define SLOTS (2 * GL_TENANT_LOAD_MAX) /* open addressing, at most half full */

typedef struct slot {
  char *name; /* NULL: empty */
  uint32_t inflight;
} slot;

struct gl_tenant_load {
  slot *s;
  size_t used;
};

static size_t hash(const char *p) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
  return (size_t)(h % SLOTS);
}

gl_tenant_load *gl_tenant_load_new(void) {
  gl_tenant_load *t = calloc(1, sizeof *t);
  if (t && !(t->s = calloc(SLOTS, sizeof *t->s))) {
    free(t);
    return NULL;
  }
  return t;
}

void gl_tenant_load_free(gl_tenant_load *t) {
  if (!t) return;
  for (size_t i = 0; i < SLOTS; i++) free(t->s[i].name);
  free(t->s);
  free(t);
}

/* Drops the idle tenants and places the busy ones again. */
static void compact(gl_tenant_load *t) {
  slot *old = t->s;
  slot *fresh = calloc(SLOTS, sizeof *fresh);
  if (!fresh) return;
  t->s = fresh;
  t->used = 0;
  for (size_t i = 0; i < SLOTS; i++) {
    if (!old[i].name) continue;
    if (!old[i].inflight) {
      free(old[i].name);
      continue;
    }
    size_t j = hash(old[i].name);
    while (fresh[j].name) j = (j + 1) % SLOTS;
    fresh[j] = old[i];
    t->used++;
  }
  free(old);
}

uint32_t *gl_tenant_load_counter(gl_tenant_load *t, const char *tenant) {
  for (int pass = 0; pass < 2; pass++) {
    size_t j = hash(tenant);
    while (t->s[j].name) {
      if (!strcmp(t->s[j].name, tenant)) return &t->s[j].inflight;
      j = (j + 1) % SLOTS;
    }
    if (t->used < GL_TENANT_LOAD_MAX) {
      if (!(t->s[j].name = strdup(tenant))) return NULL;
      t->s[j].inflight = 0;
      t->used++;
      return &t->s[j].inflight;
    }
    if (pass == 0) compact(t);
  }
  return NULL;
}
