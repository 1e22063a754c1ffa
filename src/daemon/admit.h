/*
 * admit.h - each tenant's unfinished requests: those whose 12-byte header
 * has arrived and been let through (early.c) but whose body is not whole
 * yet, and the bytes their headers declared. Bounded per tenant, so that
 * one tenant's half-sent requests cannot make the daemon hold without end
 * (docs/protocol.md, "Load"); the transports give each back when it ends
 * (origin.h's gl_req_end_cb). Thread-safe: the network threads' servers
 * admit on their own threads.
 */
#ifndef GL_DAEMON_ADMIT_H
#define GL_DAEMON_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gl_admit gl_admit;

/* An empty table that lets each tenant have at most max_requests
 * unfinished requests declaring max_bytes in all (gl_admit_set_limits).
 * NULL when out of memory. Free with gl_admit_free. */
gl_admit *gl_admit_new(uint32_t max_requests, uint64_t max_bytes);

/* Frees a (NULL ignored); tickets it gave out are void from then on. */
void gl_admit_free(gl_admit *a);

/* Changes the bounds for the requests that come next (a reload); those
 * already admitted stay. Any thread. */
void gl_admit_set_limits(gl_admit *a, uint32_t max_requests, uint64_t max_bytes);

/* What a refusal says. */
typedef struct gl_admit_refusal {
  uint32_t requests;     /* the tenant's unfinished requests */
  uint64_t bytes;        /* and the bytes their headers declared */
  uint32_t max_requests; /* the bounds it met */
  uint64_t max_bytes;
  bool by_bytes;         /* the byte bound (else the count) */
} gl_admit_refusal;

/* Admits one more unfinished request of tenant (NUL-terminated, "" the
 * anonymous one; copied) declaring whole bytes (12 + body_len): true, and
 * *ticket names it for gl_admit_end. false when the tenant already has
 * max_requests unfinished, or when it has any and whole would take its
 * bytes past max_bytes (a lone request always fits: the message limit
 * bounds it), or out of memory (then *why is all 0): *why says which.
 * Any thread. */
bool gl_admit_begin(gl_admit *a, const char *tenant, uint64_t whole, void **ticket,
                    gl_admit_refusal *why);

/* The request of ticket (from gl_admit_begin, whole as given there) has
 * ended: its tenant counts it no more. NULL ticket ignored. Any thread. */
void gl_admit_end(gl_admit *a, void *ticket, uint64_t whole);

/* All tenants' unfinished requests and their declared bytes, now. */
void gl_admit_totals(gl_admit *a, uint64_t *requests, uint64_t *bytes);

/* Requests ended since the last call, and their declared bytes (for the
 * daemon's malloc_trim after a flood). */
void gl_admit_take_released(gl_admit *a, uint64_t *requests, uint64_t *bytes);

#endif /* GL_DAEMON_ADMIT_H */
