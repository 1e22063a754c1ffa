/*
 * access.c - rights of ops, and the check of a lease's secret (access.h).
 */
#include "daemon/access.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

static const char *const mode_names[] = {"none", "mtls", "token"};

const char *gl_auth_mode_name(gl_auth_mode m) {
  return (unsigned)m < 3 ? mode_names[m] : "?";
}

int gl_auth_mode_parse(const char *s, gl_auth_mode *out) {
  for (unsigned i = 0; i < 3; i++)
    if (!strcmp(s, mode_names[i])) {
      *out = (gl_auth_mode)i;
      return 0;
    }
  return -1;
}

/* The rights of one op, by its code (BATCH entries and plain requests):
 * the op table's RIGHTS column; 0 for an op it does not have. */
static uint32_t rights_of_op(uint16_t op) {
  const gl_op_info *i = gl_op_info_of(op);
  return i ? i->rights : 0;
}

uint32_t gl_access_op_rights(const gl_request *r) {
  if (r->op == GL_OP_LEASE_RENEW && (r->u.renew.flags & GL_RENEW_F_ROTATE))
    return GPULEASE_RIGHT_RENEW | GPULEASE_RIGHT_DELEGATE;
  if (r->op != GL_OP_BATCH) return rights_of_op(r->op);
  uint32_t need = 0;
  size_t pos = 0;
  const uint8_t *m;
  size_t n;
  while (gl_batch_next(r->u.batch.ops, r->u.batch.ops_len, &pos, &m, &n))
    need |= rights_of_op(gl_message_peek_op(m, n));
  return need ? need : GPULEASE_RIGHT_SESSION;
}

void gl_access_mint(const gl_cap_key *key, const gl_lease *l, uint32_t rights,
                    uint64_t not_after_s, uint64_t audience,
                    uint8_t out[GPULEASE_SECRET_BYTES]) {
  gl_cap c = {.generation = l->generation,
              .rights = rights,
              .not_after_s = not_after_s,
              .audience = audience};
  gl_cap_seal(key, l->id, &c);
  gl_cap_pack(&c, out);
}

gpulease_status gl_access_check(const gl_cap_key *key, gl_lease_table *t, const char *caller,
                                uint16_t op, uint32_t need, const gl_lease_auth *auth,
                                uint64_t now_unix_s, gl_lease **out, gl_cap *cap, char *err,
                                size_t errlen) {
  gl_lease *l = NULL;
  gpulease_status st = gl_lease_table_lookup(t, auth->lease_id, &l);
  if (st == GPULEASE_NOT_FOUND) {
    snprintf(err, errlen, "no lease with id %" PRIu64, auth->lease_id);
    return st;
  }
  /* The MAC first, in constant time: nothing about the lease is told to
   * a caller without a genuine secret of it. The last secret that passed
   * is remembered, so a lease's steady stream of ops costs one compare. */
  bool cached = l->has_verified && gl_ct_equal(l->verified, auth->secret, GPULEASE_SECRET_BYTES);
  if (!cached) {
    if (!gl_cap_mac_ok(key, l->id, auth->secret)) {
      snprintf(err, errlen, "wrong secret for lease %" PRIu64, auth->lease_id);
      return GPULEASE_UNAUTHORIZED;
    }
    memcpy(l->verified, auth->secret, GPULEASE_SECRET_BYTES);
    l->has_verified = true;
  }
  if (st == GPULEASE_LEASE_EXPIRED) {
    if (l->end_reason == GL_LEASE_END_REVOKED) {
      snprintf(err, errlen, "lease %" PRIu64 " was revoked%s%s; its secrets are void",
               l->id, l->end_note[0] ? " " : "", l->end_note);
      return GPULEASE_UNAUTHORIZED;
    }
    if (l->end_reason == GL_LEASE_END_LOST)
      snprintf(err, errlen,
               "lease %" PRIu64 " was lost with its shared CUDA context after a device fault "
               "in a lease sharing it (class shared); its GPU memory was freed",
               l->id);
    else
      snprintf(err, errlen, "lease %" PRIu64 " has expired; its GPU memory was freed", l->id);
    return GPULEASE_LEASE_EXPIRED;
  }
  gl_cap c;
  gl_cap_unpack(auth->secret, &c);
  gl_cap_lease cl = {.lease_id = l->id, .generation = l->generation, .tenant = l->tenant};
  st = gl_cap_check(&c, &cl, caller, need, gl_op_name(op), now_unix_s, err, errlen);
  if (st != GPULEASE_OK) return st;
  *out = l;
  if (cap) *cap = c;
  return GPULEASE_OK;
}
