/*
 * lease_table.c - see lease_table.h.
 *
 * Leases live in a flat array of pointers: a daemon holds at most a few
 * hundred, and a linear scan per request is cheaper than any hashing at that
 * size. Pointers stay stable because each lease is its own allocation.
 */
#include "daemon/lease_table.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define NS_PER_S 1000000000ull

typedef struct gpu_slot {
  uint64_t capacity_bytes;
  uint64_t overhead_bytes; /* a context's own VRAM */
  bool present;
  bool mig; /* MIG mode: partition leases only */
  bool fenced; /* a teardown failed: no new leases (gl_lease_table_fence) */
  char fence_why[256];
} gpu_slot;

struct gl_lease_table {
  gl_lease_table_config cfg;
  gl_lease **leases; /* live leases and tombstones */
  size_t count, cap;
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
  t->cfg = *cfg;
  t->next_id = 1;
  return t;
}

void gl_lease_table_del(gl_lease_table *t) {
  if (!t) return;
  for (size_t i = 0; i < t->count; i++) free(t->leases[i]);
  free(t->leases);
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


size_t gl_lease_table_live_count(const gl_lease_table *t) {
  size_t n = 0;
  for (size_t i = 0; i < t->count; i++) n += is_live(t->leases[i]);
  return n;
}

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

static gpu_use usage(const gl_lease_table *t, uint32_t index) {
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
  t->leases[t->count++] = l;
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
  for (size_t i = 0; i < t->count; i++) {
    gl_lease *l = t->leases[i];
    if (l->id != id) continue;
    *out = l;
    return is_live(l) ? GPULEASE_OK : GPULEASE_LEASE_EXPIRED;
  }
  return GPULEASE_NOT_FOUND;
}

gl_lease *gl_lease_table_find(gl_lease_table *t, uint64_t id) {
  for (size_t i = 0; i < t->count; i++)
    if (t->leases[i]->id == id && is_live(t->leases[i])) return t->leases[i];
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

static void remove_at(gl_lease_table *t, size_t i) {
  free(t->leases[i]);
  t->leases[i] = t->leases[--t->count];
}

void gl_lease_table_remove(gl_lease_table *t, gl_lease *l) {
  for (size_t i = 0; i < t->count; i++) {
    if (t->leases[i] == l) {
      remove_at(t, i);
      return;
    }
  }
}

void gl_lease_table_bury(gl_lease_table *t, gl_lease *l, uint64_t now_ns) {
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
