/*
 * quota.c - see quota.h.
 *
 * Tenants live in an open-addressing hash table (linear probing, twice as
 * many slots as GL_QUOTA_MAX_TENANTS) of pointers to entries, hashed with
 * SipHash (crypto_shorthash) under a random key, so names cannot be chosen
 * to collide. Entries are only removed when the table is full: every idle
 * one is freed and the table rebuilt, which keeps the probing simple.
 */
#include "auth/quota.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#define NS_PER_S 1000000000ull
#define NS_PER_MIN (60ull * NS_PER_S)
#define WINDOW_MINUTES 60
#define SLOTS (2 * GL_QUOTA_MAX_TENANTS) /* a power of two */

typedef struct bucket {
  uint64_t minute;  /* now_ns / NS_PER_MIN of its charges */
  uint64_t seconds; /* charged minus refunded */
} bucket;

typedef struct entry {
  char name[GL_TENANT_NAME_MAX + 1];
  uint64_t vram_bytes;
  uint32_t leases, sessions;
  bucket b[WINDOW_MINUTES]; /* minute m in b[m % 60] */
} entry;

struct gl_quota {
  entry **slots; /* SLOTS of them; NULL: free */
  size_t count;
  uint8_t key[crypto_shorthash_KEYBYTES];
};

/* ---- the table ---- */

static size_t slot_of(const gl_quota *q, const char *name, size_t len) {
  uint8_t h[crypto_shorthash_BYTES];
  crypto_shorthash(h, (const unsigned char *)name, len, q->key);
  uint64_t v;
  memcpy(&v, h, sizeof v);
  return (size_t)(v & (SLOTS - 1));
}

static entry *find(const gl_quota *q, const char *name) {
  size_t len = strlen(name);
  if (len > GL_TENANT_NAME_MAX) return NULL;
  for (size_t i = slot_of(q, name, len);; i = (i + 1) & (SLOTS - 1)) {
    entry *e = q->slots[i];
    if (!e) return NULL;
    if (strcmp(e->name, name) == 0) return e;
  }
}

static void insert(gl_quota *q, entry *e) {
  size_t i = slot_of(q, e->name, strlen(e->name));
  while (q->slots[i]) i = (i + 1) & (SLOTS - 1);
  q->slots[i] = e;
  q->count++;
}

/* ---- the GPU-seconds window ---- */

static bool in_window(uint64_t minute, uint64_t now_minute) {
  return minute <= now_minute && now_minute - minute < WINDOW_MINUTES;
}

static uint64_t window_sum(const entry *e, uint64_t now_ns) {
  uint64_t now_minute = now_ns / NS_PER_MIN, sum = 0;
  for (int i = 0; i < WINDOW_MINUTES; i++) {
    const bucket *b = &e->b[i];
    if (b->seconds && in_window(b->minute, now_minute))
      sum = b->seconds > UINT64_MAX - sum ? UINT64_MAX : sum + b->seconds;
  }
  return sum;
}

static void charge_at(entry *e, uint64_t now_ns, uint64_t seconds) {
  uint64_t m = now_ns / NS_PER_MIN;
  bucket *b = &e->b[m % WINDOW_MINUTES];
  if (b->minute != m) {
    b->minute = m;
    b->seconds = 0;
  }
  b->seconds = seconds > UINT64_MAX - b->seconds ? UINT64_MAX : b->seconds + seconds;
}

/* The seconds of charge c not used by now_ns (elapsed time rounded up). */
static uint64_t unused_of(const gl_quota_charge *c, uint64_t now_ns) {
  if (now_ns <= c->at_ns) return c->seconds;
  uint64_t d = now_ns - c->at_ns;
  uint64_t used = d / NS_PER_S + (d % NS_PER_S != 0);
  return used >= c->seconds ? 0 : c->seconds - used;
}

/* What a refund of c's unused part at now_ns takes off the window: 0 when
 * c's bucket has left it (or was reused). */
static uint64_t refundable(const entry *e, const gl_quota_charge *c, uint64_t now_ns) {
  uint64_t m = c->at_ns / NS_PER_MIN;
  const bucket *b = &e->b[m % WINDOW_MINUTES];
  if (b->minute != m || !in_window(m, now_ns / NS_PER_MIN)) return 0;
  uint64_t u = unused_of(c, now_ns);
  return u < b->seconds ? u : b->seconds;
}

static void refund(entry *e, const gl_quota_charge *c, uint64_t now_ns) {
  uint64_t r = refundable(e, c, now_ns);
  if (r) e->b[(c->at_ns / NS_PER_MIN) % WINDOW_MINUTES].seconds -= r;
}

static bool idle(const entry *e, uint64_t now_ns) {
  return e->leases == 0 && e->sessions == 0 && e->vram_bytes == 0 && window_sum(e, now_ns) == 0;
}

/* Frees every idle entry and rebuilds the table. */
static void evict_idle(gl_quota *q, uint64_t now_ns) {
  entry *keep[GL_QUOTA_MAX_TENANTS];
  size_t n = 0;
  for (size_t i = 0; i < SLOTS; i++) {
    entry *e = q->slots[i];
    if (!e) continue;
    q->slots[i] = NULL;
    if (idle(e, now_ns))
      free(e);
    else
      keep[n++] = e;
  }
  q->count = 0;
  for (size_t i = 0; i < n; i++) insert(q, keep[i]);
}

static const char *who(const char *tenant) { return *tenant ? tenant : "(anonymous)"; }

/* The entry of `tenant`, made when missing. NULL with a status and message
 * when the name is too long, the table is full of busy tenants or memory
 * ran out. */
static entry *get(gl_quota *q, const char *tenant, uint64_t now_ns, gpulease_status *st,
                  char *err, size_t errlen) {
  size_t len = strlen(tenant);
  if (len > GL_TENANT_NAME_MAX) {
    *st = GPULEASE_INVALID_ARGUMENT;
    if (errlen) snprintf(err, errlen, "tenant name of %zu bytes (at most %d)", len, GL_TENANT_NAME_MAX);
    return NULL;
  }
  entry *e = find(q, tenant);
  if (e) return e;
  if (q->count == GL_QUOTA_MAX_TENANTS) evict_idle(q, now_ns);
  if (q->count == GL_QUOTA_MAX_TENANTS) {
    *st = GPULEASE_CAPACITY_EXCEEDED;
    if (errlen)
      snprintf(err, errlen, "tenant %s: the daemon tracks %d busy tenants already; retry later",
               who(tenant), GL_QUOTA_MAX_TENANTS);
    return NULL;
  }
  e = calloc(1, sizeof *e);
  if (!e) {
    *st = GPULEASE_NO_MEMORY;
    if (errlen) snprintf(err, errlen, "out of memory");
    return NULL;
  }
  memcpy(e->name, tenant, len + 1);
  insert(q, e);
  return e;
}

/* ---- messages ---- */

const char *gl_quota_fmt_bytes(uint64_t bytes, char *out, size_t outlen) {
  static const struct { uint64_t unit; const char *name; } units[] = {
      {1ull << 40, "TiB"}, {1ull << 30, "GiB"}, {1ull << 20, "MiB"}, {1ull << 10, "KiB"}};
  if (!outlen) return out;
  if (bytes == UINT64_MAX) {
    snprintf(out, outlen, "unlimited");
    return out;
  }
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    uint64_t u = units[i].unit;
    if (bytes < u) continue;
    uint64_t rem = bytes % u;
    bool exact = (rem * 10) % u == 0;
    double v = (double)bytes / (double)u;
    if (exact)
      snprintf(out, outlen, "%.1f %s", v, units[i].name);
    else
      snprintf(out, outlen, "%.1f %s (%" PRIu64 " bytes)", v, units[i].name, bytes);
    return out;
  }
  snprintf(out, outlen, "%" PRIu64 " byte%s", bytes, bytes == 1 ? "" : "s");
  return out;
}

static const char *plural(uint64_t n) { return n == 1 ? "" : "s"; }

/* ---- the operations ---- */

gl_quota *gl_quota_new(void) {
  if (sodium_init() < 0) return NULL;
  gl_quota *q = calloc(1, sizeof *q);
  if (!q) return NULL;
  q->slots = calloc(SLOTS, sizeof *q->slots);
  if (!q->slots) {
    free(q);
    return NULL;
  }
  crypto_shorthash_keygen(q->key);
  return q;
}

void gl_quota_free(gl_quota *q) {
  if (!q) return;
  for (size_t i = 0; i < SLOTS; i++) free(q->slots[i]);
  free(q->slots);
  free(q);
}

/* max_ttl, then the GPU-seconds window: used - refund + ttl_s <= limit. */
static gpulease_status check_time(const entry *e, const char *tenant, const gl_quota_limits *l,
                                  uint32_t ttl_s, uint64_t refund_s, uint64_t now_ns,
                                  char *err, size_t errlen) {
  if (l->max_ttl_s != UINT32_MAX && ttl_s > l->max_ttl_s) {
    if (errlen)
      snprintf(err, errlen, "tenant %s: max_ttl %" PRIu32 " s, %" PRIu32 " s asked", who(tenant),
               l->max_ttl_s, ttl_s);
    return GPULEASE_QUOTA_EXCEEDED;
  }
  if (l->gpu_seconds_per_hour != UINT64_MAX) {
    uint64_t used = e ? window_sum(e, now_ns) : 0;
    uint64_t net = used - (refund_s < used ? refund_s : used);
    if (ttl_s > l->gpu_seconds_per_hour || net > l->gpu_seconds_per_hour - ttl_s) {
      if (errlen) {
        if (refund_s)
          snprintf(err, errlen,
                   "tenant %s: GPU-second quota %" PRIu64 " per hour, %" PRIu64
                   " used in the last hour (%" PRIu64 " of them unused by this lease), %" PRIu32
                   " asked",
                   who(tenant), l->gpu_seconds_per_hour, used, refund_s, ttl_s);
        else
          snprintf(err, errlen,
                   "tenant %s: GPU-second quota %" PRIu64 " per hour, %" PRIu64
                   " used in the last hour, %" PRIu32 " asked",
                   who(tenant), l->gpu_seconds_per_hour, used, ttl_s);
      }
      return GPULEASE_QUOTA_EXCEEDED;
    }
  }
  return GPULEASE_OK;
}

gpulease_status gl_quota_lease_begin(gl_quota *q, const char *tenant,
                                     const gl_quota_limits *limits, uint64_t vram_bytes,
                                     uint32_t ttl_s, uint64_t now_ns, gl_quota_charge *charge,
                                     char *err, size_t errlen) {
  gl_quota_limits unl;
  if (!limits) {
    gl_quota_limits_unlimited(&unl);
    limits = &unl;
  }
  if (errlen) err[0] = 0;
  const entry *e = find(q, tenant); /* NULL: nothing used yet */
  uint32_t leases = e ? e->leases : 0;
  uint64_t held = e ? e->vram_bytes : 0;
  if (limits->leases != UINT32_MAX && leases >= limits->leases) {
    if (errlen)
      snprintf(err, errlen, "tenant %s: lease quota %" PRIu32 ", %" PRIu32 " lease%s live",
               who(tenant), limits->leases, leases, plural(leases));
    return GPULEASE_QUOTA_EXCEEDED;
  }
  if (limits->vram_bytes != UINT64_MAX &&
      (vram_bytes > limits->vram_bytes || held > limits->vram_bytes - vram_bytes)) {
    if (errlen) {
      char lim[64], h[64], ask[64];
      snprintf(err, errlen, "tenant %s: VRAM quota %s, %s held by %" PRIu32 " lease%s, %s asked",
               who(tenant), gl_quota_fmt_bytes(limits->vram_bytes, lim, sizeof lim),
               gl_quota_fmt_bytes(held, h, sizeof h), leases, plural(leases),
               gl_quota_fmt_bytes(vram_bytes, ask, sizeof ask));
    }
    return GPULEASE_QUOTA_EXCEEDED;
  }
  gpulease_status st = check_time(e, tenant, limits, ttl_s, 0, now_ns, err, errlen);
  if (st != GPULEASE_OK) return st;
  entry *w = get(q, tenant, now_ns, &st, err, errlen);
  if (!w) return st;
  w->leases = w->leases == UINT32_MAX ? UINT32_MAX : w->leases + 1;
  w->vram_bytes = vram_bytes > UINT64_MAX - w->vram_bytes ? UINT64_MAX : w->vram_bytes + vram_bytes;
  charge_at(w, now_ns, ttl_s);
  if (charge) *charge = (gl_quota_charge){.at_ns = now_ns, .seconds = ttl_s};
  return GPULEASE_OK;
}

gpulease_status gl_quota_lease_renew(gl_quota *q, const char *tenant,
                                     const gl_quota_limits *limits, uint32_t ttl_s,
                                     gl_quota_charge *charge, uint64_t now_ns, char *err,
                                     size_t errlen) {
  gl_quota_limits unl;
  if (!limits) {
    gl_quota_limits_unlimited(&unl);
    limits = &unl;
  }
  if (errlen) err[0] = 0;
  const entry *e = find(q, tenant);
  uint64_t back = e && charge ? refundable(e, charge, now_ns) : 0;
  gpulease_status st = check_time(e, tenant, limits, ttl_s, back, now_ns, err, errlen);
  if (st != GPULEASE_OK) return st;
  entry *w = get(q, tenant, now_ns, &st, err, errlen);
  if (!w) return st;
  if (charge) refund(w, charge, now_ns);
  charge_at(w, now_ns, ttl_s);
  if (charge) *charge = (gl_quota_charge){.at_ns = now_ns, .seconds = ttl_s};
  return GPULEASE_OK;
}

void gl_quota_lease_end(gl_quota *q, const char *tenant, uint64_t vram_bytes,
                        const gl_quota_charge *charge, uint64_t now_ns) {
  entry *e = find(q, tenant);
  if (!e) return; /* never began: nothing to release */
  if (e->leases) e->leases--;
  e->vram_bytes = vram_bytes < e->vram_bytes ? e->vram_bytes - vram_bytes : 0;
  if (charge) refund(e, charge, now_ns);
}

gpulease_status gl_quota_session_begin(gl_quota *q, const char *tenant,
                                       const gl_quota_limits *limits, uint64_t now_ns,
                                       char *err, size_t errlen) {
  if (errlen) err[0] = 0;
  const entry *e = find(q, tenant);
  uint32_t n = e ? e->sessions : 0;
  if (limits && limits->sessions != UINT32_MAX && n >= limits->sessions) {
    if (errlen)
      snprintf(err, errlen, "tenant %s: session quota %" PRIu32 ", %" PRIu32 " session%s live",
               who(tenant), limits->sessions, n, plural(n));
    return GPULEASE_QUOTA_EXCEEDED;
  }
  gpulease_status st;
  entry *w = get(q, tenant, now_ns, &st, err, errlen);
  if (!w) return st;
  if (w->sessions != UINT32_MAX) w->sessions++;
  return GPULEASE_OK;
}

void gl_quota_session_end(gl_quota *q, const char *tenant) {
  entry *e = find(q, tenant);
  if (e && e->sessions) e->sessions--;
}

void gl_quota_usage_of(const gl_quota *q, const char *tenant, uint64_t now_ns,
                       gl_quota_usage *out) {
  memset(out, 0, sizeof *out);
  const entry *e = find(q, tenant);
  if (!e) return;
  out->vram_bytes = e->vram_bytes;
  out->leases = e->leases;
  out->sessions = e->sessions;
  out->gpu_seconds_last_hour = window_sum(e, now_ns);
}

size_t gl_quota_tracked(const gl_quota *q) { return q->count; }
