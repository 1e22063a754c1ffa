/*
 * optable.c - the op table as data (wire.h's gl_op_info), built from
 * src/proto/ops.def, and the lookups every part of gpulease makes by op:
 * its name, whether it is a session op, and the lease_auth or session_ref
 * a decoded request carries. (What an encoded message says without a full
 * decode is wire_peek.c's.)
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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

/* ---- carrying a decoded request to another process ---------------------- */

/* Where each op's borrowed pointers are (ops.def's GL_OP_PTR rows). */
typedef struct op_ptr {
  uint16_t op;
  size_t off; /* offsetof(gl_request, member) */
} op_ptr;

static const op_ptr k_ptrs[] = {
#define GL_OP_PTR(NAME, MEMBER) {GL_OP_##NAME, offsetof(gl_request, MEMBER)},
#include "proto/ops.def"
#undef GL_OP_PTR
};

/* A pointer slot's value, read and written as bytes (the members are
 * `const uint8_t *` or `const char *`: pointers of one representation). */
static uintptr_t slot_get(const gl_request *r, size_t off) {
  const void *p;
  memcpy(&p, (const char *)r + off, sizeof p);
  return (uintptr_t)p;
}

static void slot_set(gl_request *r, size_t off, uintptr_t v) {
  const void *p = (const void *)v;
  memcpy((char *)r + off, &p, sizeof p);
}

gpulease_status gl_request_detach(gl_request *r, const uint8_t *msg, size_t len) {
  for (size_t i = 0; i < sizeof k_ptrs / sizeof k_ptrs[0]; i++) {
    if (k_ptrs[i].op != r->op) continue;
    uintptr_t v = slot_get(r, k_ptrs[i].off);
    if (!v) continue; /* NULL stays 0 */
    if (v < (uintptr_t)msg || v > (uintptr_t)msg + len) return GPULEASE_INVALID_ARGUMENT;
    slot_set(r, k_ptrs[i].off, v - (uintptr_t)msg + 1);
  }
  return GPULEASE_OK;
}

gpulease_status gl_request_attach(gl_request *r, const uint8_t *msg, size_t len) {
  if (!gl_op_info_of(r->op)) return GPULEASE_INVALID_ARGUMENT;
  for (size_t i = 0; i < sizeof k_ptrs / sizeof k_ptrs[0]; i++) {
    if (k_ptrs[i].op != r->op) continue;
    uintptr_t v = slot_get(r, k_ptrs[i].off);
    if (!v) continue;
    if (v - 1 > len) return GPULEASE_INVALID_ARGUMENT;
    slot_set(r, k_ptrs[i].off, (uintptr_t)msg + (v - 1));
  }
  return GPULEASE_OK;
}
