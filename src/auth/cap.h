/*
 * cap.h - capability tokens for leases.
 *
 * A lease's secret (GPULEASE_SECRET_BYTES, carried in every lease_auth) is a
 * capability token: it names the rights its holder has on the lease, the
 * lease's generation it was minted for, an optional expiry, and optionally
 * the tenant it was handed to, all sealed with a MAC that only the daemon
 * can make (HMAC-SHA-256 under the daemon's key, libsodium). The daemon
 * keeps no state per token: it recomputes the MAC and compares the fields
 * with the lease's (docs/protocol.md, section 3, "lease_auth";
 * docs/security.md).
 *
 * Layout of the 40 bytes, all big-endian:
 *   0  u32 generation   the lease's generation when minted (rotation bumps it)
 *   4  u32 rights       GPULEASE_RIGHT_* bits; others 0
 *   8  u64 not_after_s  Unix time (seconds) after which the token is refused; 0: none
 *  16  u64 audience     0: the lease's own tenant; else gl_cap_audience(tenant)
 *  24  bytes[16] mac    the first 16 bytes of HMAC-SHA-256(key, "gpulease-cap-1" ||
 *                       u64 lease_id || bytes 0..23)
 *
 * Pure code: no clocks (callers pass the time), no I/O.
 */
#ifndef GL_AUTH_CAP_H
#define GL_AUTH_CAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpulease/gpulease.h"

#define GL_CAP_BYTES 40
#define GL_CAP_MAC_BYTES 16
#define GL_CAP_KEY_BYTES 32

/* Rights are gpulease.h's GPULEASE_RIGHT_* bits. */

typedef struct gl_cap {
  uint32_t generation;
  uint32_t rights;
  uint64_t not_after_s;
  uint64_t audience;
  uint8_t mac[GL_CAP_MAC_BYTES];
} gl_cap;

typedef struct gl_cap_key {
  uint8_t k[GL_CAP_KEY_BYTES];
} gl_cap_key;

/* Draws a fresh random key (libsodium's randombytes). 0, or -1 when
 * libsodium cannot start. */
int gl_cap_key_init(gl_cap_key *key);

/* Unpacks / packs the 40 bytes (no check of the MAC). */
void gl_cap_unpack(const uint8_t b[GL_CAP_BYTES], gl_cap *c);
void gl_cap_pack(const gl_cap *c, uint8_t b[GL_CAP_BYTES]);

/* Seals c for lease_id: computes c->mac from its other fields. */
void gl_cap_seal(const gl_cap_key *key, uint64_t lease_id, gl_cap *c);

/* True when the token's MAC is right for lease_id. Constant time in the
 * token's bytes (sodium_memcmp). */
bool gl_cap_mac_ok(const gl_cap_key *key, uint64_t lease_id, const uint8_t b[GL_CAP_BYTES]);

/* The audience value of a tenant name (never 0): the first 8 bytes of
 * SHA-256(name), big-endian, with 0 mapped to 1. */
uint64_t gl_cap_audience(const char *tenant);

/* What the daemon knows of a live lease, for gl_cap_check. */
typedef struct gl_cap_lease {
  uint64_t lease_id;
  uint32_t generation; /* current */
  const char *tenant;  /* the owner's; "" when the daemon runs without identities */
} gl_cap_lease;

/* Checks a token whose MAC gl_cap_mac_ok accepted against the lease, the
 * caller's tenant ("" without identities), the rights the op needs and the
 * time (Unix seconds). OK, or UNAUTHORIZED with the reason in err: another
 * tenant's lease and the token not handed to the caller, a rotated-out
 * generation, an expired token, or a right missing (op names the op for the
 * message). */
gpulease_status gl_cap_check(const gl_cap *c, const gl_cap_lease *l, const char *caller,
                             uint32_t need, const char *op, uint64_t now_unix_s, char *err,
                             size_t errlen);

#endif /* GL_AUTH_CAP_H */
