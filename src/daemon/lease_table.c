/*
 * lease_table.c - see lease_table.h.
 *
 * Leases live in a flat array of pointers (for the expiry walk and foreach)
 * and in an id -> lease map (common/hmap.h), so that the per-request
 * paths are O(1): lookup and find by id, remove (each lease knows its array
 * index, tab_slot), and the capacity check of an alloc, which reads per-GPU
 * aggregates of the live leases kept up to date as leases join (alloc),
 * leave (bury, remove, expire) and change what they hold (set_held). With a
 * thousand clients the scans this replaced were most of the main loop's
 * time per LEASE_ALLOC and LEASE_FREE. Pointers stay stable because each
 * lease is its own allocation. gl_lease_table_check recomputes everything
 * by scanning (for the unit test).
 */
#include "daemon/lease_table.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hmap.h"
#include "common/util.h"

#define NS_PER_S 1000000000ull

/* A tenant with live shared leases on a GPU, and how many. */
typedef struct shared_tenant {
  uint32_t count;
  char name[GL_LEASE_TENANT_MAX];
} shared_tenant;

typedef struct gpu_slot {
  uint64_t capacity_bytes;
  uint64_t overhead_bytes; /* a context's own VRAM */
  bool present;
  bool mig; /* MIG mode: partition leases only */
  bool fenced; /* a teardown failed: no new leases (gl_lease_table_fence) */
  char fence_why[256];
  /* Aggregates of its live leases (what usage() reports). */
  uint32_t live;      /* live leases */
  uint32_t shared;    /* of which shared */
  uint32_t devices;   /* of which device leases (at most 1 by class_fits) */
  uint64_t holds;     /* sum of gl_lease_holds, modulo 2^64 like the scan's sum */
  uint64_t device_id; /* a live device lease, or 0 */
  /* Tenants of its live shared leases, each with its count (normally one:
   * a shared context is one tenant's). */
  shared_tenant *tenants;
  uint32_t ntenants, captenants;
} gpu_slot;

struct gl_lease_table {
  gl_lease_table_config cfg;
  gl_lease **leases; /* live leases and tombstones */
  size_t count, cap;
  size_t live; /* live (pending + active) leases */
  gl_hmap by_id; /* id -> lease, every lease of leases[] (tombstones included) */
  uint64_t next_id;
  gpu_slot gpus[GPULEASE_MAX_GPUS];
  uint32_t gpu_count;
};

void gl_lease_table_fence(gl_lease_table *t, uint32_t index, const char *why) {
  if (index >= GPULEASE_MAX_GPUS) return;
  t->gpus[index].fenced = true;
  snprintf(t->gpus[index].fence_why, sizeof t->gpus[index].fence_why, "%s", why);
}

void gl_lease_table_unfence(gl_lease_table *t, uint32_t index) {
  if (index < GPULEASE_MAX_GPUS) t->gpus[index].fenced = false;
}

const char *gl_lease_table_fenced(const gl_lease_table *t, uint32_t index) {
  return index < GPULEASE_MAX_GPUS && t->gpus[index].fenced ? t->gpus[index].fence_why : NULL;
}

gl_lease_table *gl_lease_table_new(const gl_lease_table_config *cfg) {
  gl_lease_table *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  gl_hmap_init(&t->by_id);
  t->cfg = *cfg;
  t->next_id = 1;
  return t;
}

void gl_lease_table_del(gl_lease_table *t) {
  if (!t) return;
  for (size_t i = 0; i < t->count; i++) free(t->leases[i]);
  free(t->leases);
  gl_hmap_free(&t->by_id);
  for (size_t i = 0; i < GPULEASE_MAX_GPUS; i++) free(t->gpus[i].tenants);
  free(t);
}

int gl_lease_table_set_gpu(gl_lease_table *t, uint32_t index, uint64_t capacity_bytes) {
  if (index >= GPULEASE_MAX_GPUS) return -1;
  t->gpus[index].capacity_bytes = capacity_bytes;
  t->gpus[index].present = true;
  if (index + 1 > t->gpu_count) t->gpu_count = index + 1;
  return 0;
}

uint32_t gl_lease_table_gpu_count(const gl_lease_table *t) { return t->gpu_count; }

static bool is_live(const gl_lease *l) { return l->state != GL_LEASE_EXPIRED; }

/* The id map holds every lease of leases[] (tombstones included). */
static gl_lease *map_get(const gl_lease_table *t, uint64_t id) {
  return id == 0 || id == UINT64_MAX ? NULL : gl_hmap_get(&t->by_id, id);
}

/* --- per-GPU aggregates ---------------------------------------------- */

static shared_tenant *tenant_entry(const gpu_slot *g, const char *name) {
  for (uint32_t i = 0; i < g->ntenants; i++)
    if (strcmp(g->tenants[i].name, name) == 0) return &g->tenants[i];
  return NULL;
}

/* Makes sure a shared lease of `name` can join GPU g without allocating.
 * 0, or -1 out of memory. */
static int tenant_reserve(gpu_slot *g, const char *name) {
  if (tenant_entry(g, name) || g->ntenants < g->captenants) return 0;
  uint32_t ncap = g->captenants ? g->captenants * 2 : 2;
  shared_tenant *n = realloc(g->tenants, ncap * sizeof *n);
  if (!n) return -1;
  g->tenants = n;
  g->captenants = ncap;
  return 0;
}

/* Lease l (live, on a present GPU) enters its GPU's aggregates. For a
 * shared lease, tenant_reserve must have succeeded. */
static void join(gl_lease_table *t, const gl_lease *l) {
  gpu_slot *g = &t->gpus[l->gpu_index];
  t->live++;
  g->live++;
  g->holds += gl_lease_holds(l);
  if (l->lease_class == GPULEASE_CLASS_SHARED) {
    g->shared++;
    shared_tenant *e = tenant_entry(g, l->tenant);
    if (!e) {
      e = &g->tenants[g->ntenants++];
      e->count = 0;
      snprintf(e->name, sizeof e->name, "%s", l->tenant);
    }
    e->count++;
  }
  if (l->lease_class == GPULEASE_CLASS_DEVICE) {
    g->devices++;
    g->device_id = l->id;
  }
}

/* Lease l (live until now) leaves its GPU's aggregates. */
static void leave(gl_lease_table *t, const gl_lease *l) {
  gpu_slot *g = &t->gpus[l->gpu_index];
  t->live--;
  g->live--;
  g->holds -= gl_lease_holds(l);
  if (l->lease_class == GPULEASE_CLASS_SHARED) {
    g->shared--;
    shared_tenant *e = tenant_entry(g, l->tenant);
    if (e && --e->count == 0) *e = g->tenants[--g->ntenants];
  }
  if (l->lease_class == GPULEASE_CLASS_DEVICE) {
    g->devices--;
    g->device_id = 0;
    /* Never more than one (class_fits); should there be, name another. */
    for (size_t i = 0; g->devices && i < t->count; i++) {
      const gl_lease *o = t->leases[i];
      if (o != l && is_live(o) && o->gpu_index == l->gpu_index &&
          o->lease_class == GPULEASE_CLASS_DEVICE)
        g->device_id = o->id;
    }
  }
}


size_t gl_lease_table_live_count(const gl_lease_table *t) { return t->live; }

void gl_lease_table_set_overhead(gl_lease_table *t, uint32_t index, uint64_t bytes) {
  if (index < GPULEASE_MAX_GPUS) t->gpus[index].overhead_bytes = bytes;
}

uint64_t gl_lease_table_overhead(const gl_lease_table *t, uint32_t index) {
  return index < GPULEASE_MAX_GPUS ? t->gpus[index].overhead_bytes : 0;
}

void gl_lease_table_set_mig(gl_lease_table *t, uint32_t index, bool mig) {
  if (index < GPULEASE_MAX_GPUS) t->gpus[index].mig = mig;
}

/* What GPU index holds now: its live leases, and how they use it. */
typedef struct gpu_use {
  uint64_t vram;     /* the leases' own regions, and what they hold beyond them */
  uint64_t bytes;    /* regions and contexts */
  uint32_t leases;
  uint32_t shared;   /* shared leases (one context between them) */
  uint64_t device_id; /* a live device lease, or 0 */
} gpu_use;

uint64_t gl_lease_holds(const gl_lease *l) {
  uint64_t n = l->vram_bytes;
  const uint64_t more[] = {l->held_limits_bytes, l->held_module_bytes, l->held_local_bytes};
  for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
    n = n > UINT64_MAX - more[i] ? UINT64_MAX : n + more[i];
  return n;
}

/* GPU index's use, from the aggregates: O(1). */
static gpu_use usage(const gl_lease_table *t, uint32_t index) {
  const gpu_slot *g = &t->gpus[index];
  uint64_t ctx = g->overhead_bytes;
  gpu_use u = {.vram = g->holds, .leases = g->live, .shared = g->shared,
               .device_id = g->device_id};
  /* the scan's sum, term for term (modulo 2^64 like it) */
  u.bytes = g->holds + ctx * (uint64_t)(g->live - g->shared) + (g->shared ? ctx : 0);
  return u;
}

/* GPU index's use, recomputed by scanning every lease (the self-check). */
static gpu_use usage_scan(const gl_lease_table *t, uint32_t index) {
  gpu_use u = {0};
  uint64_t ctx = t->gpus[index].overhead_bytes;
  for (size_t i = 0; i < t->count; i++) {
    const gl_lease *l = t->leases[i];
    if (!is_live(l) || l->gpu_index != index) continue;
    u.leases++;
    u.vram += gl_lease_holds(l);
    u.bytes += gl_lease_holds(l);
    if (l->lease_class == GPULEASE_CLASS_SHARED) u.shared++;
    else u.bytes += ctx;
    if (l->lease_class == GPULEASE_CLASS_DEVICE) u.device_id = l->id;
  }
  if (u.shared) u.bytes += ctx;
  return u;
}

void gl_lease_table_gpu_usage(const gl_lease_table *t, uint32_t index, uint64_t *leased_bytes,
                              uint32_t *count) {
  gpu_use u = index < GPULEASE_MAX_GPUS ? usage(t, index) : (gpu_use){0};
  if (leased_bytes) *leased_bytes = u.vram;
  if (count) *count = u.leases;
}

/* VRAM of GPU index not yet leased, given its use u. */
static uint64_t unleased(const gl_lease_table *t, uint32_t index, const gpu_use *u) {
  uint64_t cap = t->gpus[index].capacity_bytes;
  return u->bytes >= cap ? 0 : cap - u->bytes;
}

/* What a new lease of the class adds on GPU index (use u): its region, and
 * a context unless it joins the GPU's shared one. */
static uint64_t need_bytes(const gl_lease_table *t, uint32_t index, const gpu_use *u,
                           uint8_t lease_class, uint64_t vram_bytes) {
  uint64_t ctx = t->gpus[index].overhead_bytes;
  if (lease_class == GPULEASE_CLASS_SHARED && u->shared) ctx = 0;
  return vram_bytes > UINT64_MAX - ctx ? UINT64_MAX : vram_bytes + ctx;
}

/* Whether the class may go on GPU index (use u) now: MIG mode, device
 * leases; the status and the reason otherwise. */
static gpulease_status class_fits(const gl_lease_table *t, uint32_t index, const gpu_use *u,
                                  uint8_t lease_class, char *err, size_t errlen) {
  bool partition = lease_class == GPULEASE_CLASS_PARTITION;
  if (t->gpus[index].fenced) {
    snprintf(err, errlen,
             "GPU %" PRIu32 " is fenced (%s): it takes no new leases until its memory comes "
             "back or an admin clears it (gpulease admin unfence %" PRIu32 ")",
             index, t->gpus[index].fence_why, index);
    return GPULEASE_BUSY;
  }
  if (t->gpus[index].mig && !partition) {
    snprintf(err, errlen,
             "GPU %" PRIu32 " is in MIG mode: only partition leases (a whole MIG instance each) "
             "are granted on it",
             index);
    return GPULEASE_INVALID_ARGUMENT;
  }
  if (!t->gpus[index].mig && partition) {
    snprintf(err, errlen, "GPU %" PRIu32 " is not in MIG mode: it has no MIG instance to lease",
             index);
    return GPULEASE_UNSUPPORTED;
  }
  if (u->device_id) {
    snprintf(err, errlen, "GPU %" PRIu32 " is held whole by device lease %" PRIu64, index,
             u->device_id);
    return GPULEASE_BUSY;
  }
  if (lease_class == GPULEASE_CLASS_DEVICE && u->leases) {
    snprintf(err, errlen,
             "GPU %" PRIu32 " has %" PRIu32 " live lease%s; a device lease needs the whole GPU",
             index, u->leases, u->leases == 1 ? "" : "s");
    return GPULEASE_BUSY;
  }
  return GPULEASE_OK;
}

static gpulease_status check_ttl(const gl_lease_table *t, uint32_t ttl_s, char *err,
                                 size_t errlen) {
  if (ttl_s == 0 || ttl_s > t->cfg.max_ttl_s) {
    snprintf(err, errlen, "ttl_s %" PRIu32 " out of range 1..%" PRIu32, ttl_s,
             t->cfg.max_ttl_s);
    return GPULEASE_INVALID_ARGUMENT;
  }
  return GPULEASE_OK;
}

static gpulease_status pick_gpu(const gl_lease_table *t, uint32_t want, uint8_t lease_class,
                                uint64_t vram_bytes, uint32_t *out, char *err, size_t errlen) {
  if (t->gpu_count == 0) {
    snprintf(err, errlen, "this node has no GPU to lease");
    return GPULEASE_NO_DEVICE;
  }
  if (want != GPULEASE_ANY_GPU) {
    if (want >= t->gpu_count || !t->gpus[want].present) {
      snprintf(err, errlen, "no GPU with index %" PRIu32 " (this node has %" PRIu32 ")", want,
               t->gpu_count);
      return GPULEASE_NO_DEVICE;
    }
    gpu_use u = usage(t, want);
    gpulease_status st = class_fits(t, want, &u, lease_class, err, errlen);
    if (st != GPULEASE_OK) return st;
    uint64_t free_bytes = unleased(t, want, &u);
    uint64_t need = need_bytes(t, want, &u, lease_class, vram_bytes);
    if (need > free_bytes) {
      snprintf(err, errlen,
               "GPU %" PRIu32 " has %" PRIu64 " bytes of VRAM left to lease, %" PRIu64
               " requested (%" PRIu64 " with the CUDA context's own)",
               want, free_bytes, vram_bytes, need);
      return GPULEASE_CAPACITY_EXCEEDED;
    }
    *out = want;
    return GPULEASE_OK;
  }
  uint64_t best_free = 0;
  uint32_t best = UINT32_MAX;
  gpulease_status why = GPULEASE_CAPACITY_EXCEEDED, refused = GPULEASE_OK;
  char busy[256] = "", refusal[256] = "";
  unsigned eligible = 0; /* GPUs the class may use */
  for (uint32_t i = 0; i < t->gpu_count; i++) {
    if (!t->gpus[i].present) continue;
    gpu_use u = usage(t, i);
    gpulease_status fit = class_fits(t, i, &u, lease_class, refusal, sizeof refusal);
    if (fit == GPULEASE_BUSY) {
      why = GPULEASE_BUSY;
      snprintf(busy, sizeof busy, "%s", refusal);
    }
    if (fit == GPULEASE_INVALID_ARGUMENT || fit == GPULEASE_UNSUPPORTED) refused = fit;
    else eligible++;
    if (fit != GPULEASE_OK) continue;
    uint64_t f = unleased(t, i, &u);
    bool better = t->cfg.placement == GL_PLACEMENT_PACK ? f < best_free : f > best_free;
    if (f >= need_bytes(t, i, &u, lease_class, vram_bytes) && (best == UINT32_MAX || better)) {
      best = i;
      best_free = f;
    }
  }
  if (best == UINT32_MAX) {
    if (eligible == 0) { /* no GPU takes the class at all */
      if (lease_class == GPULEASE_CLASS_PARTITION)
        snprintf(err, errlen, "no GPU of this node is in MIG mode: there is no MIG instance to "
                              "lease");
      else if (t->gpu_count == 1)
        snprintf(err, errlen, "%s", refusal);
      else
        snprintf(err, errlen, "every GPU of this node is in MIG mode: only partition leases are "
                              "granted");
      return refused;
    }
    if (why == GPULEASE_BUSY && t->gpu_count == 1) {
      snprintf(err, errlen, "%s", busy);
      return GPULEASE_BUSY;
    }
    snprintf(err, errlen,
             "no GPU has %" PRIu64 " bytes of VRAM left to lease with its CUDA context%s",
             vram_bytes, why == GPULEASE_BUSY ? " (or is free of device leases)" : "");
    return GPULEASE_CAPACITY_EXCEEDED;
  }
  *out = best;
  return GPULEASE_OK;
}

gpulease_status gl_lease_table_alloc(gl_lease_table *t, uint64_t now_ns, uint32_t gpu_index,
                                     uint8_t lease_class, uint64_t vram_bytes, uint32_t ttl_s,
                                     const char *tenant, gl_lease **out, char *err,
                                     size_t errlen) {
  if (lease_class > GPULEASE_CLASS_PARTITION) {
    snprintf(err, errlen, "lease class %u is not a class", lease_class);
    return GPULEASE_INVALID_ARGUMENT;
  }
  if (vram_bytes == 0) {
    snprintf(err, errlen, "vram_bytes must be at least 1");
    return GPULEASE_INVALID_ARGUMENT;
  }
  gpulease_status st = check_ttl(t, ttl_s, err, errlen);
  if (st != GPULEASE_OK) return st;
  if (gl_lease_table_live_count(t) >= t->cfg.max_leases) {
    snprintf(err, errlen, "the daemon already holds its maximum of %zu leases",
             t->cfg.max_leases);
    return GPULEASE_CAPACITY_EXCEEDED;
  }
  uint32_t gpu;
  st = pick_gpu(t, gpu_index, lease_class, vram_bytes, &gpu, err, errlen);
  if (st != GPULEASE_OK) return st;

  if (t->count == t->cap) {
    size_t ncap = t->cap ? t->cap * 2 : 16;
    gl_lease **nl = realloc(t->leases, ncap * sizeof *nl);
    if (!nl) goto oom;
    t->leases = nl;
    t->cap = ncap;
  }
  gl_lease *l = calloc(1, sizeof *l);
  if (!l) goto oom;
  l->id = t->next_id++;
  snprintf(l->tenant, sizeof l->tenant, "%s", tenant ? tenant : "");
  l->generation = 1;
  l->gpu_index = gpu;
  l->vram_bytes = vram_bytes;
  l->ttl_s = ttl_s;
  l->lease_class = lease_class;
  l->expires_ns = now_ns + (uint64_t)ttl_s * NS_PER_S;
  l->state = GL_LEASE_PENDING;
  if (lease_class == GPULEASE_CLASS_SHARED && tenant_reserve(&t->gpus[gpu], l->tenant) != 0) {
    free(l);
    goto oom;
  }
  if (gl_hmap_put(&t->by_id, l->id, l) != 0) {
    free(l);
    goto oom;
  }
  l->tab_slot = t->count;
  t->leases[t->count++] = l;
  join(t, l);
  *out = l;
  return GPULEASE_OK;
oom:
  snprintf(err, errlen, "out of memory");
  return GPULEASE_INTERNAL;
}

void gl_lease_table_activate(gl_lease_table *t, gl_lease *l, uint64_t now_ns) {
  (void)t;
  l->state = GL_LEASE_ACTIVE;
  l->expires_ns = now_ns + (uint64_t)l->ttl_s * NS_PER_S;
}

gpulease_status gl_lease_table_lookup(gl_lease_table *t, uint64_t id, gl_lease **out) {
  gl_lease *l = map_get(t, id);
  if (!l) return GPULEASE_NOT_FOUND;
  *out = l;
  return is_live(l) ? GPULEASE_OK : GPULEASE_LEASE_EXPIRED;
}

gl_lease *gl_lease_table_find(gl_lease_table *t, uint64_t id) {
  gl_lease *l = map_get(t, id);
  return l && is_live(l) ? l : NULL;
}

void gl_lease_table_set_held(gl_lease_table *t, gl_lease *l, uint64_t limits_bytes,
                             uint64_t module_bytes, uint64_t local_bytes) {
  bool live = is_live(l);
  if (live) t->gpus[l->gpu_index].holds -= gl_lease_holds(l);
  l->held_limits_bytes = limits_bytes;
  l->held_module_bytes = module_bytes;
  l->held_local_bytes = local_bytes;
  if (live) t->gpus[l->gpu_index].holds += gl_lease_holds(l);
}

const char *gl_lease_table_shared_owner(const gl_lease_table *t, uint32_t gpu,
                                        const char *tenant, uint64_t self_id) {
  if (gpu >= GPULEASE_MAX_GPUS) return NULL;
  const gpu_slot *g = &t->gpus[gpu];
  if (!g->ntenants) return NULL;
  const gl_lease *self = map_get(t, self_id);
  bool self_counts = self && is_live(self) && self->gpu_index == gpu &&
                     self->lease_class == GPULEASE_CLASS_SHARED;
  for (uint32_t i = 0; i < g->ntenants; i++) {
    const shared_tenant *e = &g->tenants[i];
    if (strcmp(e->name, tenant ? tenant : "") == 0) continue;
    uint32_t n = e->count - (self_counts && strcmp(self->tenant, e->name) == 0);
    if (n) return e->name;
  }
  return NULL;
}

gpulease_status gl_lease_table_renew(gl_lease_table *t, gl_lease *l, uint64_t now_ns,
                                     uint32_t ttl_s, char *err, size_t errlen) {
  gpulease_status st = check_ttl(t, ttl_s, err, errlen);
  if (st != GPULEASE_OK) return st;
  l->ttl_s = ttl_s;
  l->expires_ns = now_ns + (uint64_t)ttl_s * NS_PER_S;
  return GPULEASE_OK;
}

gpulease_status gl_lease_table_renew_check(const gl_lease_table *t, uint32_t ttl_s, char *err,
                                           size_t errlen) {
  return check_ttl(t, ttl_s, err, errlen);
}

/* Drops leases[i] (its aggregates already left, or a tombstone). */
static void remove_at(gl_lease_table *t, size_t i) {
  gl_lease *l = t->leases[i];
  gl_hmap_del(&t->by_id, l->id);
  free(l);
  if (i != --t->count) {
    t->leases[i] = t->leases[t->count];
    t->leases[i]->tab_slot = i;
  }
}

void gl_lease_table_remove(gl_lease_table *t, gl_lease *l) {
  size_t i = l->tab_slot;
  if (i >= t->count || t->leases[i] != l) return; /* not this table's */
  if (is_live(l)) leave(t, l);
  remove_at(t, i);
}

void gl_lease_table_bury(gl_lease_table *t, gl_lease *l, uint64_t now_ns) {
  if (is_live(l)) leave(t, l);
  l->state = GL_LEASE_EXPIRED;
  l->owner = NULL;
  l->expires_ns = now_ns + t->cfg.tombstone_ns;
}

size_t gl_lease_table_expire(gl_lease_table *t, uint64_t now_ns,
                             void (*on_expire)(void *user, gl_lease *l), void *user) {
  size_t expired = 0;
  for (size_t i = 0; i < t->count;) {
    gl_lease *l = t->leases[i];
    if (l->expires_ns > now_ns) {
      i++;
      continue;
    }
    if (!is_live(l)) { /* tombstone past its time */
      remove_at(t, i);
      continue;
    }
    if (on_expire) on_expire(user, l);
    gl_lease_table_bury(t, l, now_ns);
    expired++;
    i++;
  }
  return expired;
}

uint64_t gl_lease_remaining_ms(const gl_lease *l, uint64_t now_ns) {
  if (l->state == GL_LEASE_EXPIRED || l->expires_ns <= now_ns) return 0;
  return (l->expires_ns - now_ns) / 1000000ull;
}

void gl_lease_table_foreach(gl_lease_table *t, void (*fn)(void *user, gl_lease *l), void *user) {
  for (size_t i = 0; i < t->count; i++)
    if (is_live(t->leases[i])) fn(user, t->leases[i]);
}

void gl_lease_table_set_max_ttl(gl_lease_table *t, uint32_t max_ttl_s) {
  if (max_ttl_s > 0) t->cfg.max_ttl_s = max_ttl_s;
}

/* gl_lease_table_check's verdict on a mismatch: described in err, -1. */
#define CHECK_FAIL(...)                                   \
  do {                                                    \
    if (err && errlen) snprintf(err, errlen, __VA_ARGS__); \
    return -1;                                            \
  } while (0)

int gl_lease_table_check(const gl_lease_table *t, char *err, size_t errlen) {
  size_t live = 0, mapped = 0;
  for (size_t i = 0; i < t->count; i++) {
    const gl_lease *l = t->leases[i];
    live += is_live(l);
    if (l->tab_slot != i)
      CHECK_FAIL("lease %" PRIu64 " is at index %zu but has tab_slot %zu", l->id, i, l->tab_slot);
    if (map_get(t, l->id) != l) CHECK_FAIL("lease %" PRIu64 " is not in the id map", l->id);
  }
  mapped = t->by_id.count;
  if (mapped != t->count) CHECK_FAIL("the map holds %zu ids, the array %zu leases", mapped, t->count);
  if (live != t->live) CHECK_FAIL("live count %zu, a scan finds %zu", t->live, live);
  for (uint32_t g = 0; g < GPULEASE_MAX_GPUS; g++) {
    const gpu_slot *s = &t->gpus[g];
    gpu_use a = usage(t, g), b = usage_scan(t, g);
    if (a.vram != b.vram)
      CHECK_FAIL("GPU %" PRIu32 ": held %" PRIu64 ", a scan finds %" PRIu64, g, a.vram, b.vram);
    if (a.bytes != b.bytes)
      CHECK_FAIL("GPU %" PRIu32 ": bytes %" PRIu64 ", a scan finds %" PRIu64, g, a.bytes, b.bytes);
    if (a.leases != b.leases || a.shared != b.shared)
      CHECK_FAIL("GPU %" PRIu32 ": %" PRIu32 " leases (%" PRIu32 " shared), a scan finds %" PRIu32
                 " (%" PRIu32 ")", g, a.leases, a.shared, b.leases, b.shared);
    /* With more than one device lease (class_fits allows none) any may be named. */
    if ((a.device_id != 0) != (b.device_id != 0) || (s->devices <= 1 && a.device_id != b.device_id))
      CHECK_FAIL("GPU %" PRIu32 ": device lease %" PRIu64 ", a scan finds %" PRIu64, g,
                 a.device_id, b.device_id);
    uint32_t in_tenants = 0;
    for (uint32_t k = 0; k < s->ntenants; k++) {
      const shared_tenant *e = &s->tenants[k];
      uint32_t n = 0;
      for (size_t i = 0; i < t->count; i++) {
        const gl_lease *l = t->leases[i];
        n += is_live(l) && l->gpu_index == g && l->lease_class == GPULEASE_CLASS_SHARED &&
             strcmp(l->tenant, e->name) == 0;
      }
      if (n != e->count || n == 0)
        CHECK_FAIL("GPU %" PRIu32 ": tenant \"%s\" has %" PRIu32 " shared leases, a scan finds %"
                   PRIu32, g, e->name, e->count, n);
      for (uint32_t k2 = 0; k2 < k; k2++)
        if (strcmp(s->tenants[k2].name, e->name) == 0)
          CHECK_FAIL("GPU %" PRIu32 ": tenant \"%s\" listed twice", g, e->name);
      in_tenants += n;
    }
    if (in_tenants != b.shared)
      CHECK_FAIL("GPU %" PRIu32 ": its tenants count %" PRIu32 " shared leases, a scan finds %"
                 PRIu32, g, in_tenants, b.shared);
  }
  return 0;
}
