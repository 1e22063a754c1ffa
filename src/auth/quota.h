/*
 * quota.h - what each tenant uses, checked against its limits
 * (gl_quota_limits, from the tenants file).
 *
 * Pure bookkeeping: no I/O, no clock reads. Every call that depends on time
 * takes `now_ns` (CLOCK_MONOTONIC nanoseconds), so tests drive it with a
 * fake clock. Not thread-safe: the caller serializes calls on one gl_quota.
 *
 * Per tenant (keyed by name, at most GL_QUOTA_MAX_TENANTS tracked at once)
 * it counts the VRAM bytes of live leases, live leases, live sessions and
 * the GPU-seconds reserved in the last hour.
 *
 * GPU-seconds: a lease counts one GPU-second per second it is held,
 * whatever its size. Granting or renewing a lease reserves its whole TTL at
 * once (a charge), so a long TTL cannot overrun the budget; when the lease
 * ends, or is renewed, the part of the charge it did not use is refunded.
 * The caller keeps each lease's last charge (gl_quota_charge) and hands it
 * back on renew and end.
 *
 * The sliding hour is 60 one-minute buckets (minute = now_ns / 60 s). A
 * charge lands in the bucket of the minute it is made; "the last hour" is
 * the current minute and the 59 before it, so a charge counts in full from
 * the moment it is made until 59 to 60 minutes later, then drops out all at
 * once - even if the lease it paid for still runs (a 2 h lease's charge
 * leaves the window after an hour). A refund is taken from the bucket of
 * the charge it belongs to while that bucket is still in the window, and
 * is dropped once the charge has left it. So the limit bounds the
 * lease-seconds a tenant reserves per hour, not how many of its leases run
 * at once (`leases` and `vram` do that). Elapsed time is rounded up to
 * whole seconds: a lease held 0.2 s uses 1 GPU-second.
 */
#ifndef GL_AUTH_QUOTA_H
#define GL_AUTH_QUOTA_H

#include <stddef.h>
#include <stdint.h>

#include "auth/tenants.h"
#include "gpulease/gpulease.h"

/* The most tenants with usage tracked at once. A tenant whose leases,
 * sessions and GPU-seconds in the window are all zero is forgotten when
 * room is needed. */
#define GL_QUOTA_MAX_TENANTS 4096

typedef struct gl_quota gl_quota;

/* A lease's last GPU-seconds charge: when it was made and how many
 * seconds (its TTL). Plain data; the caller keeps one per lease. */
typedef struct gl_quota_charge {
  uint64_t at_ns;   /* now_ns of the grant or renew that made it */
  uint32_t seconds; /* reserved */
} gl_quota_charge;

/* A tenant's usage at some now_ns. */
typedef struct gl_quota_usage {
  uint64_t vram_bytes;            /* held by its live leases */
  uint32_t leases;                /* live */
  uint32_t sessions;              /* live */
  uint64_t gpu_seconds_last_hour; /* charged minus refunded, in the window */
} gl_quota_usage;

/* An empty book. NULL when out of memory or libsodium fails to start (it
 * keys the hash of tenant names). Free with gl_quota_free(). */
gl_quota *gl_quota_new(void);
void gl_quota_free(gl_quota *q);

/* Checks a new lease of vram_bytes for ttl_s seconds for `tenant`
 * (NUL-terminated, 0..255 bytes; "" is the anonymous tenant) against
 * *limits (NULL: unlimited), in this order: live leases, VRAM, max_ttl,
 * GPU-seconds in the last hour. On OK it counts the lease and its VRAM and
 * charges ttl_s GPU-seconds at now_ns, and fills *charge (the caller keeps
 * it for renew and end). Errors, with a message in err (errlen bytes) that
 * names the tenant, the limit, the use and the ask, e.g. "tenant alice:
 * VRAM quota 8.0 GiB, 6.0 GiB held by 3 leases, 4.0 GiB asked":
 * QUOTA_EXCEEDED (nothing changed), INVALID_ARGUMENT (name longer than
 * 255 bytes), CAPACITY_EXCEEDED (GL_QUOTA_MAX_TENANTS busy tenants
 * tracked), NO_MEMORY. */
gpulease_status gl_quota_lease_begin(gl_quota *q, const char *tenant,
                                     const gl_quota_limits *limits, uint64_t vram_bytes,
                                     uint32_t ttl_s, uint64_t now_ns, gl_quota_charge *charge,
                                     char *err, size_t errlen);

/* A live lease of `tenant` asks for ttl_s seconds from now_ns. *charge is
 * its last charge: the part of it not yet used is refunded and ttl_s
 * charged anew, after checking max_ttl and the GPU-seconds (use - refund +
 * ttl_s within the limit). On OK *charge is the new charge; on
 * QUOTA_EXCEEDED nothing changed (the lease keeps its old TTL and
 * charge). Other errors as gl_quota_lease_begin(). */
gpulease_status gl_quota_lease_renew(gl_quota *q, const char *tenant,
                                     const gl_quota_limits *limits, uint32_t ttl_s,
                                     gl_quota_charge *charge, uint64_t now_ns, char *err,
                                     size_t errlen);

/* A lease that gl_quota_lease_begin() granted ended (freed, expired,
 * revoked, or the grant failed further on): its VRAM and count are
 * released and the unused part of *charge (NULL: none) refunded. Counts
 * never go below zero on an end that matches no begin. */
void gl_quota_lease_end(gl_quota *q, const char *tenant, uint64_t vram_bytes,
                        const gl_quota_charge *charge, uint64_t now_ns);

/* Checks and counts a new session of `tenant` against limits->sessions
 * (NULL: unlimited). OK, QUOTA_EXCEEDED ("tenant alice: session quota
 * 32, 32 sessions live"), or as gl_quota_lease_begin(). now_ns only tells
 * which tracked tenants are idle when room is needed. */
gpulease_status gl_quota_session_begin(gl_quota *q, const char *tenant,
                                       const gl_quota_limits *limits, uint64_t now_ns,
                                       char *err, size_t errlen);

/* A session of `tenant` ended. Never below zero. */
void gl_quota_session_end(gl_quota *q, const char *tenant);

/* The usage of `tenant` at now_ns into *out (all zero for a tenant not
 * tracked). */
void gl_quota_usage_of(const gl_quota *q, const char *tenant, uint64_t now_ns,
                       gl_quota_usage *out);

/* The number of tenants tracked now (idle ones included until evicted). */
size_t gl_quota_tracked(const gl_quota *q);

/* Formats bytes for messages: "8.0 GiB", "1.5 MiB", "512 bytes", with the
 * exact bytes in parentheses when one decimal is not exact ("953.7 MiB
 * (1000000000 bytes)"). Returns out (outlen bytes, NUL-terminated). */
const char *gl_quota_fmt_bytes(uint64_t bytes, char *out, size_t outlen);

#endif /* GL_AUTH_QUOTA_H */
