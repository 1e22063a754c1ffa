/*
 * lease_table.h - the daemon's book of VRAM leases.
 *
 * Pure bookkeeping: ids, secrets, TTLs, per-GPU capacity. It does no I/O and
 * never reads a clock: every call that depends on time takes `now_ns`
 * (CLOCK_MONOTONIC nanoseconds), so tests drive it with a fake clock. The
 * daemon attaches a worker process to each lease through `owner`.
 *
 * A lease is PENDING between alloc and the worker's confirmation that the
 * VRAM is reserved on the device, then ACTIVE. When it expires it becomes a
 * tombstone for `tombstone_ns` so that late requests with the right secret
 * hear LEASE_EXPIRED instead of NOT_FOUND. A freed lease leaves no tombstone.
 *
 * Cost: lookup, find, remove, set_held, shared_owner and the capacity check
 * of alloc on a named GPU are O(1) (amortised; alloc for any GPU is O(GPUs));
 * expire and foreach walk every lease.
 */
#ifndef GL_DAEMON_LEASE_TABLE_H
#define GL_DAEMON_LEASE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpulease/gpulease.h"

enum gl_lease_state { GL_LEASE_PENDING = 1, GL_LEASE_ACTIVE = 2, GL_LEASE_EXPIRED = 3 };

#define GL_LEASE_TENANT_MAX 256 /* a tenant name's bytes, NUL included */

typedef struct gl_lease {
  uint64_t id;
  char tenant[GL_LEASE_TENANT_MAX]; /* the owner's identity; "" anonymous */
  uint32_t generation;              /* of its secrets: 1, bumped by rotation */
  uint8_t verified[GPULEASE_SECRET_BYTES]; /* the last secret whose MAC checked out */
  bool has_verified;
  char end_note[600];               /* a revoked tombstone's: by whom, why */
  uint32_t gpu_index;
  uint64_t vram_bytes;
  /* What it makes the GPU hold beyond its region (docs/security.md,
   * "Device memory outside the region"), counted with vram_bytes in the
   * GPU's leased figure: its context's heap and printf FIFO past the
   * defaults (set at LEASE_ALLOC), its modules and its kernels' local
   * memory (as its worker last said, WORKER_HELD). Read-only outside the
   * table: set them with gl_lease_table_set_held, which keeps the GPU's
   * figure. The same holds for id, tenant, gpu_index, vram_bytes,
   * lease_class and state, which only the table sets. */
  uint64_t held_limits_bytes, held_module_bytes, held_local_bytes;
  uint32_t ttl_s;
  uint64_t expires_ns; /* PENDING/ACTIVE: expiry; EXPIRED: tombstone end */
  uint64_t submits;
  enum gl_lease_state state;
  uint8_t lease_class; /* gpulease_lease_class */
  uint8_t end_reason;  /* a tombstone's: GL_LEASE_END_* */
  void *owner; /* the daemon's per-lease data (lease_rt.h) */
  size_t tab_slot; /* the table's own: the lease's index in its array */
} gl_lease;

/* Why a lease became a tombstone (what later requests with its secret
 * hear). */
enum { GL_LEASE_END_EXPIRED = 0, GL_LEASE_END_LOST = 1, GL_LEASE_END_REVOKED = 2 };

/* vram_bytes plus what the lease holds beyond its region (saturating). */
uint64_t gl_lease_holds(const gl_lease *l);

typedef struct gl_lease_table gl_lease_table;

/* Where a lease asked for any GPU goes (gpuleased --placement). */
typedef enum gl_placement {
  GL_PLACEMENT_SPREAD = 0, /* the GPU with the most VRAM left after the lease: even load */
  GL_PLACEMENT_PACK = 1,   /* the GPU with the least VRAM left that still takes it (lowest
                              index on a tie): as few GPUs as can hold the leases */
} gl_placement;

typedef struct gl_lease_table_config {
  uint32_t max_ttl_s;     /* TTLs above are INVALID_ARGUMENT */
  gl_placement placement; /* for LEASE_ALLOC without a GPU */
  size_t max_leases;      /* live (pending + active) leases; above: CAPACITY_EXCEEDED */
  uint64_t tombstone_ns;  /* how long expired ids are remembered */
} gl_lease_table_config;

/* Returns NULL on allocation failure. cfg is copied. */
gl_lease_table *gl_lease_table_new(const gl_lease_table_config *cfg);
void gl_lease_table_del(gl_lease_table *t);

/* Changes the longest TTL granted from now on (a reload); leases granted
 * keep theirs until they are renewed. */
void gl_lease_table_set_max_ttl(gl_lease_table *t, uint32_t max_ttl_s);

/* Declares GPU `index` with `capacity_bytes` of leasable VRAM. Indices are
 * dense from 0; calling again updates the capacity. 0 or -1 (index too big). */
int gl_lease_table_set_gpu(gl_lease_table *t, uint32_t index, uint64_t capacity_bytes);
uint32_t gl_lease_table_gpu_count(const gl_lease_table *t);

/* Sets the VRAM a context of GPU `index` takes beyond its leases' regions:
 * counted once for each isolated or device lease, and once for all the
 * shared leases of the GPU together (their one context). 0 by default. */
void gl_lease_table_set_overhead(gl_lease_table *t, uint32_t index, uint64_t bytes);

/* Marks GPU index as in MIG mode: it takes partition leases only (and
 * partition leases take only such GPUs). */
void gl_lease_table_set_mig(gl_lease_table *t, uint32_t index, bool mig);
uint64_t gl_lease_table_overhead(const gl_lease_table *t, uint32_t index);

/* Fences GPU index (a worker's teardown failed: its memory may still be
 * held): it takes no new leases, of any class, until unfenced; LEASE_ALLOC
 * naming it is BUSY with `why` (copied, at most 255 bytes) in the message.
 * Its live leases go on. */
void gl_lease_table_fence(gl_lease_table *t, uint32_t index, const char *why);
void gl_lease_table_unfence(gl_lease_table *t, uint32_t index);
/* Why GPU index is fenced, or NULL when it is not. */
const char *gl_lease_table_fenced(const gl_lease_table *t, uint32_t index);

/* Creates a PENDING lease of class lease_class (gpulease_lease_class).
 * gpu_index GPULEASE_ANY_GPU picks the GPU with the most unleased capacity
 * that fits and that the class may use. A device lease needs a GPU without
 * live leases, and no lease goes to a GPU a device lease holds. `secret` is
 * copied (the caller draws it from a CSPRNG). The new id is never 0 and
 * never reused. Partition leases go only to GPUs in MIG mode, and those
 * take nothing else. Errors (message in err): INVALID_ARGUMENT (vram 0, TTL
 * 0 or > max, unknown class, a GPU in MIG mode named for another class),
 * UNSUPPORTED (partition without a GPU in MIG mode), NO_DEVICE (no GPUs,
 * index out of range),
 * CAPACITY_EXCEEDED (does not fit with the context's overhead, too many
 * leases), BUSY (a device lease holds the GPU, or a device lease asked for
 * a GPU with leases). *out points into the table; it stays valid until the
 * lease is removed. */
gpulease_status gl_lease_table_alloc(gl_lease_table *t, uint64_t now_ns, uint32_t gpu_index,
                                     uint8_t lease_class, uint64_t vram_bytes, uint32_t ttl_s,
                                     const char *tenant, gl_lease **out, char *err,
                                     size_t errlen);

/* Marks a PENDING lease ACTIVE; its TTL counts from now_ns. */
void gl_lease_table_activate(gl_lease_table *t, gl_lease *l, uint64_t now_ns);

/* Finds lease `id`, live or a tombstone. Returns OK (*out set, state
 * PENDING or ACTIVE), LEASE_EXPIRED (*out is the tombstone, for its
 * end_reason) or NOT_FOUND. Checking the caller's secret is the caller's
 * business (src/daemon/access.h). */
gpulease_status gl_lease_table_lookup(gl_lease_table *t, uint64_t id, gl_lease **out);

/* Finds a live lease by id alone (no secret): for the daemon's own
 * bookkeeping after a worker replied, never for serving a client. NULL when
 * there is no live lease with that id. */
gl_lease *gl_lease_table_find(gl_lease_table *t, uint64_t id);

/* Sets what lease l (of table t, live or a tombstone) holds beyond its
 * region, in bytes: its context's heap and printf FIFO past the defaults
 * (limits_bytes), its modules (module_bytes) and its kernels' local memory
 * (local_bytes); pass a field's current value to keep it. The only way to
 * change held_*_bytes: a live lease's GPU's leased figure (capacity checks,
 * gl_lease_table_gpu_usage) follows. Cannot fail. */
void gl_lease_table_set_held(gl_lease_table *t, gl_lease *l, uint64_t limits_bytes,
                             uint64_t module_bytes, uint64_t local_bytes);

/* Whether GPU `gpu`'s shared CUDA context serves another tenant: returns the
 * name of a tenant other than `tenant` (NUL-terminated; NULL is "") with a
 * live shared lease on that GPU, not counting lease self_id (the one just
 * allocated; 0 for none), or NULL when there is none (or gpu is out of
 * range). Which one, should there be several, is unspecified. The string
 * points into the table and stays valid until the table changes next. */
const char *gl_lease_table_shared_owner(const gl_lease_table *t, uint32_t gpu,
                                        const char *tenant, uint64_t self_id);

/* Sets the lease to expire ttl_s after now_ns. INVALID_ARGUMENT for a TTL of
 * 0 or above the maximum. */
gpulease_status gl_lease_table_renew(gl_lease_table *t, gl_lease *l, uint64_t now_ns,
                                     uint32_t ttl_s, char *err, size_t errlen);

/* The TTL check of gl_lease_table_renew alone: OK or INVALID_ARGUMENT. */
gpulease_status gl_lease_table_renew_check(const gl_lease_table *t, uint32_t ttl_s, char *err,
                                           size_t errlen);

/* Removes lease l of table t (live or a tombstone: a free, a failed alloc)
 * without a tombstone, in O(1); the lease is freed, l is invalid
 * afterwards. A pointer the table does not hold is ignored. */
void gl_lease_table_remove(gl_lease_table *t, gl_lease *l);

/* Turns a live lease into a tombstone now (e.g. its worker died); its
 * end_reason stays what the caller set (GL_LEASE_END_EXPIRED unless told). */
void gl_lease_table_bury(gl_lease_table *t, gl_lease *l, uint64_t now_ns);

/* Expires every live lease whose deadline is <= now_ns: calls
 * on_expire(user, lease) for each (while it is still live, so the daemon can
 * tear its worker down), then buries it. Also drops tombstones past their
 * time. Returns the number of leases expired. */
size_t gl_lease_table_expire(gl_lease_table *t, uint64_t now_ns,
                             void (*on_expire)(void *user, gl_lease *l), void *user);

/* Remaining milliseconds of a live lease at now_ns (0 when due). */
uint64_t gl_lease_remaining_ms(const gl_lease *l, uint64_t now_ns);

/* Per-GPU usage, O(1): in *leased_bytes the VRAM of GPU index's live leases
 * (gl_lease_holds: regions and what they hold beyond them), in *count their
 * number; 0 and 0 for an index out of range. Either pointer may be NULL. */
void gl_lease_table_gpu_usage(const gl_lease_table *t, uint32_t index, uint64_t *leased_bytes,
                              uint32_t *count);

/* Calls fn for every live lease (for shutdown). fn must not remove leases. */
void gl_lease_table_foreach(gl_lease_table *t, void (*fn)(void *user, gl_lease *l), void *user);

/* Live (pending + active) leases. O(1). */
size_t gl_lease_table_live_count(const gl_lease_table *t);

/* Self-check for tests and debugging, O(leases x GPUs): recomputes by
 * scanning every lease what the table keeps incrementally (the id map,
 * each lease's array index, the live count, each GPU's live, shared and
 * device leases, held bytes and shared tenants) and compares. 0 when all
 * agree; -1 with the first mismatch described in err (errlen bytes, may be
 * NULL/0). */
int gl_lease_table_check(const gl_lease_table *t, char *err, size_t errlen);

#endif /* GL_DAEMON_LEASE_TABLE_H */
