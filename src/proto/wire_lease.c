/*
 * wire_lease.c - the codec of the lease ops: GET_INVENTORY, AUTHENTICATE,
 * LEASE_ALLOC, LEASE_RENEW, LEASE_QUERY, LEASE_FREE, LEASE_DELEGATE and
 * LEASE_REVOKE, and ADMIN_UNFENCE, requests and results
 * (gl_wire__lease, called by wire.c's entry points; layouts in wire.h and
 * docs/protocol.md).
 *
 * Their requests are fixed fields; the one with a range to check is
 * LEASE_ALLOC's lease_class. The inventory is the one result with
 * something to refuse (its gpu count and its str8 strings).
 */
#include <string.h>

#include "proto/wire_internal.h"

/* ========================================================================
 * Requests
 * ====================================================================== */

static void lease_validate(gl_wire__rd *r, const gl_request *q);

static void lease_decode(gl_wire__rd *r, gl_request *q) {
  switch (q->op) {
  case GL_OP_LEASE_ALLOC:
    q->u.alloc.gpu_index = gl_wire__rd_u32(r, "gpu_index");
    q->u.alloc.vram_bytes = gl_wire__rd_u64(r, "vram_bytes");
    q->u.alloc.ttl_s = gl_wire__rd_u32(r, "ttl_s");
    q->u.alloc.lease_class = gl_wire__rd_u8(r, "lease_class");
    if (gl_wire__rd_ok(r) && q->u.alloc.lease_class > GPULEASE_CLASS_PARTITION)
      gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                       "lease_class %u is not a class (0 isolated, 1 shared, 2 device, 3 partition)",
                       q->u.alloc.lease_class);
    q->u.alloc.printf_fifo_bytes = gl_wire__rd_u32(r, "printf_fifo_bytes");
    q->u.alloc.malloc_heap_bytes = gl_wire__rd_u64(r, "malloc_heap_bytes");
    break;
  case GL_OP_LEASE_RENEW:
    gl_wire__auth_decode(r, &q->u.renew.auth);
    q->u.renew.ttl_s = gl_wire__rd_u32(r, "ttl_s");
    q->u.renew.flags = gl_wire__rd_u8(r, "flags");
    break;
  case GL_OP_LEASE_DELEGATE:
    gl_wire__auth_decode(r, &q->u.delegate.auth);
    q->u.delegate.rights = gl_wire__rd_u32(r, "rights");
    q->u.delegate.ttl_s = gl_wire__rd_u32(r, "ttl_s");
    gl_wire__rd_str8(r, "audience", q->u.delegate.audience, sizeof q->u.delegate.audience);
    break;
  case GL_OP_LEASE_REVOKE:
    q->u.revoke.lease_id = gl_wire__rd_u64(r, "lease_id");
    gl_wire__rd_str8(r, "reason", q->u.revoke.reason, sizeof q->u.revoke.reason);
    break;
  case GL_OP_AUTHENTICATE:
    gl_wire__rd_str8(r, "bearer_token", q->u.authenticate.token, sizeof q->u.authenticate.token);
    break;
  case GL_OP_ADMIN_UNFENCE:
    q->u.unfence.gpu_index = gl_wire__rd_u32(r, "gpu_index");
    break;
  case GL_OP_LEASE_QUERY:
  case GL_OP_LEASE_FREE:
    gl_wire__auth_decode(r, &q->u.auth);
    break;
  default: /* GET_INVENTORY: empty body */
    break;
  }
  lease_validate(r, q); /* RENEW's flags, DELEGATE's rights, AUTHENTICATE's token */
}

static void lease_put(gl_buf *b, const gl_request *q) {
  switch (q->op) {
  case GL_OP_LEASE_ALLOC:
    gl_wire__put_u32(b, q->u.alloc.gpu_index);
    gl_wire__put_u64(b, q->u.alloc.vram_bytes);
    gl_wire__put_u32(b, q->u.alloc.ttl_s);
    gl_wire__put_u8(b, q->u.alloc.lease_class);
    gl_wire__put_u32(b, q->u.alloc.printf_fifo_bytes);
    gl_wire__put_u64(b, q->u.alloc.malloc_heap_bytes);
    break;
  case GL_OP_LEASE_RENEW:
    gl_wire__auth_put(b, &q->u.renew.auth);
    gl_wire__put_u32(b, q->u.renew.ttl_s);
    gl_wire__put_u8(b, q->u.renew.flags);
    break;
  case GL_OP_LEASE_DELEGATE:
    gl_wire__auth_put(b, &q->u.delegate.auth);
    gl_wire__put_u32(b, q->u.delegate.rights);
    gl_wire__put_u32(b, q->u.delegate.ttl_s);
    gl_wire__put_str8(b, q->u.delegate.audience, sizeof q->u.delegate.audience);
    break;
  case GL_OP_LEASE_REVOKE:
    gl_wire__put_u64(b, q->u.revoke.lease_id);
    gl_wire__put_str8(b, q->u.revoke.reason, sizeof q->u.revoke.reason);
    break;
  case GL_OP_AUTHENTICATE:
    gl_wire__put_str8(b, q->u.authenticate.token, sizeof q->u.authenticate.token);
    break;
  case GL_OP_ADMIN_UNFENCE:
    gl_wire__put_u32(b, q->u.unfence.gpu_index);
    break;
  case GL_OP_LEASE_QUERY:
  case GL_OP_LEASE_FREE:
    gl_wire__auth_put(b, &q->u.auth);
    break;
  default: /* GET_INVENTORY: empty body */
    break;
  }
}

/* Ranges: LEASE_ALLOC's class, LEASE_RENEW's flags, LEASE_DELEGATE's
 * rights, AUTHENTICATE's token length. */
static void lease_validate(gl_wire__rd *r, const gl_request *q) {
  if (!gl_wire__rd_ok(r)) return;
  if (q->op == GL_OP_LEASE_ALLOC && q->u.alloc.lease_class > GPULEASE_CLASS_PARTITION)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "lease_class %u is not a class (0 isolated, 1 shared, 2 device, 3 partition)",
                     q->u.alloc.lease_class);
  else if (q->op == GL_OP_LEASE_RENEW && (q->u.renew.flags & ~GL_RENEW_F_ROTATE))
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "flags 0x%02x: only bit 0 (rotate) is defined", q->u.renew.flags);
  else if (q->op == GL_OP_LEASE_DELEGATE &&
           (q->u.delegate.rights == 0 || (q->u.delegate.rights & ~(uint32_t)GPULEASE_RIGHTS_ALL)))
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "rights 0x%08x: at least one right, only bits 0..7 are rights",
                     q->u.delegate.rights);
  else if (q->op == GL_OP_AUTHENTICATE && !q->u.authenticate.token[0])
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "bearer_token is empty");
}

/* ========================================================================
 * Results: the inventory and lease_info
 * ====================================================================== */

static void inventory_decode(gl_wire__rd *r, gl_inventory *inv) {
  inv->max_ttl_s = gl_wire__rd_u32(r, "max_ttl_s");
  gl_wire__rd_str8(r, "driver_version", inv->driver_version, sizeof inv->driver_version);
  inv->gpu_count = gl_wire__rd_u16(r, "gpu_count");
  gl_wire__check_gpu_count(r, "gpu_count", inv->gpu_count);
  r->elem = "gpu";
  for (unsigned i = 0; i < inv->gpu_count && gl_wire__rd_ok(r); i++) {
    gl_gpu_entry *g = &inv->gpus[i];
    r->idx = i;
    g->index = gl_wire__rd_u32(r, "index");
    gl_wire__rd_str8(r, "uuid", g->uuid, sizeof g->uuid);
    gl_wire__rd_str8(r, "name", g->name, sizeof g->name);
    g->cc_major = gl_wire__rd_u8(r, "cc_major");
    g->cc_minor = gl_wire__rd_u8(r, "cc_minor");
    g->sm_count = gl_wire__rd_u32(r, "sm_count");
    g->total_vram_bytes = gl_wire__rd_u64(r, "total_vram_bytes");
    g->free_vram_bytes = gl_wire__rd_u64(r, "free_vram_bytes");
    g->leased_vram_bytes = gl_wire__rd_u64(r, "leased_vram_bytes");
    g->active_leases = gl_wire__rd_u32(r, "active_leases");
    g->flags = gl_wire__rd_u32(r, "flags");
    g->context_overhead_bytes = gl_wire__rd_u64(r, "context_overhead_bytes");
    g->ptx_isa_driver[0] = gl_wire__rd_u8(r, "ptx_isa_driver_major");
    g->ptx_isa_driver[1] = gl_wire__rd_u8(r, "ptx_isa_driver_minor");
    g->ptx_isa_nvjitlink[0] = gl_wire__rd_u8(r, "ptx_isa_nvjitlink_major");
    g->ptx_isa_nvjitlink[1] = gl_wire__rd_u8(r, "ptx_isa_nvjitlink_minor");
  }
  r->elem = NULL;
  gl_tenant_info *t = &inv->tenant;
  gl_wire__rd_str8(r, "tenant", t->tenant, sizeof t->tenant);
  t->flags = gl_wire__rd_u32(r, "tenant_flags");
  t->quota_vram_bytes = gl_wire__rd_u64(r, "quota_vram_bytes");
  t->quota_leases = gl_wire__rd_u32(r, "quota_leases");
  t->quota_sessions = gl_wire__rd_u32(r, "quota_sessions");
  t->quota_max_ttl_s = gl_wire__rd_u32(r, "quota_max_ttl_s");
  t->quota_gpu_seconds_per_hour = gl_wire__rd_u64(r, "quota_gpu_seconds_per_hour");
  t->used_vram_bytes = gl_wire__rd_u64(r, "used_vram_bytes");
  t->used_leases = gl_wire__rd_u32(r, "used_leases");
  t->used_sessions = gl_wire__rd_u32(r, "used_sessions");
  t->used_gpu_seconds = gl_wire__rd_u64(r, "used_gpu_seconds");
}

static bool inventory_valid(const gl_inventory *inv) {
  if (inv->gpu_count > GPULEASE_MAX_GPUS) return false;
  if (!gl_wire__str_fits(inv->driver_version, sizeof inv->driver_version)) return false;
  if (!gl_wire__str_fits(inv->tenant.tenant, sizeof inv->tenant.tenant)) return false;
  for (unsigned i = 0; i < inv->gpu_count; i++)
    if (!gl_wire__str_fits(inv->gpus[i].uuid, sizeof inv->gpus[i].uuid) ||
        !gl_wire__str_fits(inv->gpus[i].name, sizeof inv->gpus[i].name))
      return false;
  return true;
}

static void inventory_put(gl_buf *b, const gl_inventory *inv) {
  gl_wire__put_u32(b, inv->max_ttl_s);
  gl_wire__put_str8(b, inv->driver_version, sizeof inv->driver_version);
  gl_wire__put_u16(b, inv->gpu_count);
  for (unsigned i = 0; i < inv->gpu_count; i++) {
    const gl_gpu_entry *g = &inv->gpus[i];
    gl_wire__put_u32(b, g->index);
    gl_wire__put_str8(b, g->uuid, sizeof g->uuid);
    gl_wire__put_str8(b, g->name, sizeof g->name);
    gl_wire__put_u8(b, g->cc_major);
    gl_wire__put_u8(b, g->cc_minor);
    gl_wire__put_u32(b, g->sm_count);
    gl_wire__put_u64(b, g->total_vram_bytes);
    gl_wire__put_u64(b, g->free_vram_bytes);
    gl_wire__put_u64(b, g->leased_vram_bytes);
    gl_wire__put_u32(b, g->active_leases);
    gl_wire__put_u32(b, g->flags);
    gl_wire__put_u64(b, g->context_overhead_bytes);
    gl_wire__put_u8(b, g->ptx_isa_driver[0]);
    gl_wire__put_u8(b, g->ptx_isa_driver[1]);
    gl_wire__put_u8(b, g->ptx_isa_nvjitlink[0]);
    gl_wire__put_u8(b, g->ptx_isa_nvjitlink[1]);
  }
  const gl_tenant_info *t = &inv->tenant;
  gl_wire__put_str8(b, t->tenant, sizeof t->tenant);
  gl_wire__put_u32(b, t->flags);
  gl_wire__put_u64(b, t->quota_vram_bytes);
  gl_wire__put_u32(b, t->quota_leases);
  gl_wire__put_u32(b, t->quota_sessions);
  gl_wire__put_u32(b, t->quota_max_ttl_s);
  gl_wire__put_u64(b, t->quota_gpu_seconds_per_hour);
  gl_wire__put_u64(b, t->used_vram_bytes);
  gl_wire__put_u32(b, t->used_leases);
  gl_wire__put_u32(b, t->used_sessions);
  gl_wire__put_u64(b, t->used_gpu_seconds);
}

static void lease_info_decode(gl_wire__rd *r, gl_lease_info *l) {
  l->lease_id = gl_wire__rd_u64(r, "lease_id");
  const uint8_t *s = gl_wire__rd_take(r, GPULEASE_SECRET_BYTES, "secret");
  if (s) memcpy(l->secret, s, GPULEASE_SECRET_BYTES);
  l->gpu_index = gl_wire__rd_u32(r, "gpu_index");
  l->vram_bytes = gl_wire__rd_u64(r, "vram_bytes");
  l->ttl_s = gl_wire__rd_u32(r, "ttl_s");
  l->remaining_ms = gl_wire__rd_u64(r, "remaining_ms");
  l->submits = gl_wire__rd_u64(r, "submits");
  l->lease_class = gl_wire__rd_u8(r, "lease_class");
}

static void lease_info_put(gl_buf *b, const gl_lease_info *l) {
  gl_wire__put_u64(b, l->lease_id);
  gl_wire__put_bytes(b, l->secret, GPULEASE_SECRET_BYTES);
  gl_wire__put_u32(b, l->gpu_index);
  gl_wire__put_u64(b, l->vram_bytes);
  gl_wire__put_u32(b, l->ttl_s);
  gl_wire__put_u64(b, l->remaining_ms);
  gl_wire__put_u64(b, l->submits);
  gl_wire__put_u8(b, l->lease_class);
}

static void lease_result_decode(gl_wire__rd *r, gl_response *out) {
  switch (out->op) {
  case GL_OP_GET_INVENTORY:
    inventory_decode(r, &out->u.inventory);
    break;
  case GL_OP_LEASE_ALLOC:
  case GL_OP_LEASE_RENEW:
  case GL_OP_LEASE_QUERY:
    lease_info_decode(r, &out->u.lease);
    break;
  case GL_OP_LEASE_DELEGATE: {
    const uint8_t *p = gl_wire__rd_take(r, GPULEASE_SECRET_BYTES, "secret");
    if (p) memcpy(out->u.secret, p, GPULEASE_SECRET_BYTES);
    break;
  }
  case GL_OP_AUTHENTICATE:
    gl_wire__rd_str8(r, "tenant", out->u.tenant, sizeof out->u.tenant);
    break;
  default: /* LEASE_FREE, LEASE_REVOKE, ADMIN_UNFENCE: empty result */
    break;
  }
}

static bool lease_result_valid(const gl_response *resp) {
  if (resp->op == GL_OP_AUTHENTICATE) return gl_wire__str_fits(resp->u.tenant, sizeof resp->u.tenant);
  return resp->op != GL_OP_GET_INVENTORY || inventory_valid(&resp->u.inventory);
}

static void lease_result_put(gl_buf *b, const gl_response *resp) {
  switch (resp->op) {
  case GL_OP_GET_INVENTORY:
    inventory_put(b, &resp->u.inventory);
    break;
  case GL_OP_LEASE_ALLOC:
  case GL_OP_LEASE_RENEW:
  case GL_OP_LEASE_QUERY:
    lease_info_put(b, &resp->u.lease);
    break;
  case GL_OP_LEASE_DELEGATE:
    gl_wire__put_bytes(b, resp->u.secret, GPULEASE_SECRET_BYTES);
    break;
  case GL_OP_AUTHENTICATE:
    gl_wire__put_str8(b, resp->u.tenant, sizeof resp->u.tenant);
    break;
  default: /* LEASE_FREE, LEASE_REVOKE: empty result */
    break;
  }
}

const gl_wire__family gl_wire__lease = {
    .decode = lease_decode,
    .validate = lease_validate,
    .put = lease_put,
    .result_decode = lease_result_decode,
    .result_valid = lease_result_valid,
    .result_put = lease_result_put,
};
