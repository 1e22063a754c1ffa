/*
 * cap.c - capability tokens for leases: sealing and checking (cap.h).
 */
#include "auth/cap.h"

#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/util.h"

static const char cap_domain[] = "gpulease-cap-1";

int gl_cap_key_init(gl_cap_key *key) {
  if (sodium_init() < 0) return -1;
  randombytes_buf(key->k, sizeof key->k);
  return 0;
}

static void put_be32(uint8_t *p, uint32_t v) {
  for (int i = 3; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
}
static void put_be64(uint8_t *p, uint64_t v) {
  for (int i = 7; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
}
static uint32_t get_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint64_t get_be64(const uint8_t *p) {
  return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

void gl_cap_unpack(const uint8_t b[GL_CAP_BYTES], gl_cap *c) {
  c->generation = get_be32(b);
  c->rights = get_be32(b + 4);
  c->not_after_s = get_be64(b + 8);
  c->audience = get_be64(b + 16);
  memcpy(c->mac, b + 24, GL_CAP_MAC_BYTES);
}

void gl_cap_pack(const gl_cap *c, uint8_t b[GL_CAP_BYTES]) {
  put_be32(b, c->generation);
  put_be32(b + 4, c->rights);
  put_be64(b + 8, c->not_after_s);
  put_be64(b + 16, c->audience);
  memcpy(b + 24, c->mac, GL_CAP_MAC_BYTES);
}

/* The MAC of the token's first 24 bytes for lease_id. */
static void compute_mac(const gl_cap_key *key, uint64_t lease_id, const uint8_t fields[24],
                        uint8_t out[crypto_auth_hmacsha256_BYTES]) {
  uint8_t id[8];
  put_be64(id, lease_id);
  crypto_auth_hmacsha256_state st;
  crypto_auth_hmacsha256_init(&st, key->k, sizeof key->k);
  crypto_auth_hmacsha256_update(&st, (const uint8_t *)cap_domain, sizeof cap_domain - 1);
  crypto_auth_hmacsha256_update(&st, id, sizeof id);
  crypto_auth_hmacsha256_update(&st, fields, 24);
  crypto_auth_hmacsha256_final(&st, out);
  sodium_memzero(&st, sizeof st);
}

void gl_cap_seal(const gl_cap_key *key, uint64_t lease_id, gl_cap *c) {
  uint8_t b[GL_CAP_BYTES], mac[crypto_auth_hmacsha256_BYTES];
  memset(c->mac, 0, sizeof c->mac);
  gl_cap_pack(c, b);
  compute_mac(key, lease_id, b, mac);
  memcpy(c->mac, mac, GL_CAP_MAC_BYTES);
}

bool gl_cap_mac_ok(const gl_cap_key *key, uint64_t lease_id, const uint8_t b[GL_CAP_BYTES]) {
  uint8_t mac[crypto_auth_hmacsha256_BYTES];
  compute_mac(key, lease_id, b, mac);
  return sodium_memcmp(mac, b + 24, GL_CAP_MAC_BYTES) == 0;
}

uint64_t gl_cap_audience(const char *tenant) {
  uint8_t h[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(h, (const uint8_t *)tenant, strlen(tenant));
  uint64_t v = get_be64(h);
  return v ? v : 1;
}

gpulease_status gl_cap_check(const gl_cap *c, const gl_cap_lease *l, const char *caller,
                             uint32_t need, const char *op, uint64_t now_unix_s, char *err,
                             size_t errlen) {
  /* A lease belongs to its tenant: the token must be used by that tenant
   * or by the one it was handed to. */
  bool own = strcmp(caller, l->tenant) == 0;
  if (!own && !(c->audience && caller[0] && c->audience == gl_cap_audience(caller))) {
    snprintf(err, errlen,
             "lease %" PRIu64 " belongs to tenant '%s'; this connection is %s%s%s and the token "
             "was not delegated to it",
             l->lease_id, l->tenant, caller[0] ? "tenant '" : "anonymous", caller,
             caller[0] ? "'" : "");
    return GPULEASE_UNAUTHORIZED;
  }
  if (c->generation != l->generation) {
    snprintf(err, errlen,
             "the token is of generation %" PRIu32 " of lease %" PRIu64
             ", which was rotated to generation %" PRIu32 " (LEASE_RENEW with rotate): older "
             "tokens are void",
             c->generation, l->lease_id, l->generation);
    return GPULEASE_UNAUTHORIZED;
  }
  if (c->not_after_s && now_unix_s > c->not_after_s) {
    char when[32] = "?";
    time_t t = (time_t)c->not_after_s;
    struct tm tm;
    if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(err, errlen, "the token for lease %" PRIu64 " expired at %s (%" PRIu64 " s ago)",
             l->lease_id, when, now_unix_s - c->not_after_s);
    return GPULEASE_UNAUTHORIZED;
  }
  uint32_t missing = need & ~c->rights;
  if (missing) {
    char want[128], has[128];
    gpulease_rights_format(missing, want, sizeof want);
    gpulease_rights_format(c->rights, has, sizeof has);
    snprintf(err, errlen, "%s needs the right '%s', which the token for lease %" PRIu64
             " lacks (it carries: %s)",
             op, want, l->lease_id, has);
    return GPULEASE_UNAUTHORIZED;
  }
  return GPULEASE_OK;
}
