/*
 * optable.c - the op table as data (wire.h's gl_op_info), built from
 * src/proto/ops.def, and the lookups every part of gpulease makes by op:
 * its name, whether it is a session op, the lease_auth or session_ref a
 * decoded request carries, and the lease an encoded request names.
 */
#include <stddef.h>

#include "proto/wire.h"

/* The columns' words, for the rows below. */
#define R(x) GPULEASE_RIGHT_##x
#define F(x) GL_OPF_##x
#define GL_OPDEF_REF_NONE(m) 0
#define GL_OPDEF_REF_LEASE(m) offsetof(gl_request, m)
#define GL_OPDEF_REF_SESSION(m) offsetof(gl_request, m)

static const gl_op_info k_ops[GL_OP_COUNT] = {
#define GL_OP(NAME, CODE, FAMILY, SERVED, TARGET, REF, RIGHTS, WHERE, FLAGS, SINCE)               \
  [GL_OPI_##NAME] = {.code = CODE,                                                               \
                     .name = #NAME,                                                              \
                     .served = GL_OP_SERVED_##SERVED,                                            \
                     .target = GL_OP_TARGET_##TARGET,                                            \
                     .ref = GL_OPDEF_REF_##TARGET(REF),                                          \
                     .rights = (RIGHTS),                                                         \
                     .where = GL_OP_WHERE_##WHERE,                                               \
                     .flags = (FLAGS),                                                           \
                     .since = SINCE},
#include "proto/ops.def"
#undef GL_OP
};

#undef R
#undef F

const gl_op_info *gl_op_info_of(uint16_t op) {
  /* The compiler makes this a jump table or a short search. */
  switch (op) {
#define GL_OP(NAME, CODE, ...)                                                                   \
  case CODE: return &k_ops[GL_OPI_##NAME];
#include "proto/ops.def"
#undef GL_OP
  default: return NULL;
  }
}

const gl_op_info *gl_op_table(size_t *n) {
  if (n) *n = GL_OP_COUNT;
  return k_ops;
}

const char *gl_op_name(uint16_t op) {
  const gl_op_info *i = gl_op_info_of(op);
  return i ? i->name : "UNKNOWN";
}

bool gl_op_is_session(uint16_t op) {
  const gl_op_info *i = gl_op_info_of(op);
  return i && (i->flags & GL_OPF_SESSION);
}

const gl_session_ref *gl_request_session(const gl_request *r) {
  const gl_op_info *i = r ? gl_op_info_of(r->op) : NULL;
  if (!i || i->target != GL_OP_TARGET_SESSION) return NULL;
  return (const gl_session_ref *)((const char *)r + i->ref);
}

const gl_lease_auth *gl_request_auth(const gl_request *r) {
  const gl_op_info *i = r ? gl_op_info_of(r->op) : NULL;
  if (!i || i->target == GL_OP_TARGET_NONE) return NULL;
  const void *p = (const char *)r + i->ref;
  return i->target == GL_OP_TARGET_LEASE ? (const gl_lease_auth *)p
                                         : &((const gl_session_ref *)p)->auth;
}

bool gl_request_peek_lease(const uint8_t *msg, size_t len, uint64_t *lease_id) {
  gl_header h;
  if (gl_header_decode(msg, len, &h) != GPULEASE_OK || len < GL_WIRE_HEADER_SIZE + 8) return false;
  const gl_op_info *i = gl_op_info_of(h.op);
  /* The ops a worker serves for a lease: their bodies start with its
   * lease_auth (a session_ref starts with one too). */
  if (!i || i->target == GL_OP_TARGET_NONE || i->where != GL_OP_WHERE_WORKER) return false;
  uint64_t v = 0;
  for (int k = 0; k < 8; k++) v = v << 8 | msg[GL_WIRE_HEADER_SIZE + k];
  *lease_id = v;
  return true;
}
