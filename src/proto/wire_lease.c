/*
 * wire_lease.c - the codec of the lease ops: GET_INVENTORY, AUTHENTICATE,
 * LEASE_ALLOC, LEASE_RENEW, LEASE_QUERY, LEASE_FREE, LEASE_DELEGATE and
 * LEASE_REVOKE, and ADMIN_UNFENCE, requests and results: one codec per
 * op (gl_wire__op_<NAME>, at the end, called by wire.c's entry points;
 * layouts in wire.h and docs/protocol.md).
 *
 * Their requests are fixed fields; those with something to check are
 * LEASE_ALLOC's lease_class, LEASE_RENEW's flags, LEASE_DELEGATE's rights
 * and AUTHENTICATE's token. The results with something to refuse are the
 * inventory (its gpu count and its str8 strings) and AUTHENTICATE's
 * tenant. LEASE_QUERY and LEASE_FREE share their request (a lease_auth),
 * LEASE_ALLOC, LEASE_RENEW and LEASE_QUERY their result (a lease_info).
 */
#include <string.h>

#include "proto/wire_internal.h"

/* ========================================================================
 * Requests
 * ====================================================================== */

static void check_lease_class(gl_wire__rd *r, uint8_t c) {
  if (gl_wire__rd_ok(r) && c > GPULEASE_CLASS_PARTITION)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "lease_class %u is not a class (0 isolated, 1 shared, 2 device, 3 partition)",
                     c);
}

static void alloc_decode(gl_wire__rd *r, gl_request *q) {
  gl_lease_alloc_req *a = &q->u.alloc;
  a->gpu_index = gl_wire__rd_u32(r, "gpu_index");
  a->vram_bytes = gl_wire__rd_u64(r, "vram_bytes");
  a->ttl_s = gl_wire__rd_u32(r, "ttl_s");
  a->lease_class = gl_wire__rd_u8(r, "lease_class");
  check_lease_class(r, a->lease_class);
  a->printf_fifo_bytes = gl_wire__rd_u32(r, "printf_fifo_bytes");
  a->malloc_heap_bytes = gl_wire__rd_u64(r, "malloc_heap_bytes");
}

static void alloc_validate(gl_wire__rd *r, const gl_request *q) {
  check_lease_class(r, q->u.alloc.lease_class);
}

static void alloc_put(gl_buf *b, const gl_request *q) {
  const gl_lease_alloc_req *a = &q->u.alloc;
  gl_wire__put_u32(b, a->gpu_index);
  gl_wire__put_u64(b, a->vram_bytes);
  gl_wire__put_u32(b, a->ttl_s);
  gl_wire__put_u8(b, a->lease_class);
  gl_wire__put_u32(b, a->printf_fifo_bytes);
  gl_wire__put_u64(b, a->malloc_heap_bytes);
}

/* The decoder checks the flags after the last field, as the validator. */
static void renew_validate(gl_wire__rd *r, const gl_request *q) {
  if (gl_wire__rd_ok(r) && (q->u.renew.flags & ~GL_RENEW_F_ROTATE))
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "flags 0x%02x: only bit 0 (rotate) is defined", q->u.renew.flags);
}

static void renew_decode(gl_wire__rd *r, gl_request *q) {
  gl_wire__auth_decode(r, &q->u.renew.auth);
  q->u.renew.ttl_s = gl_wire__rd_u32(r, "ttl_s");
  q->u.renew.flags = gl_wire__rd_u8(r, "flags");
  renew_validate(r, q);
}

static void renew_put(gl_buf *b, const gl_request *q) {
  gl_wire__auth_put(b, &q->u.renew.auth);
  gl_wire__put_u32(b, q->u.renew.ttl_s);
  gl_wire__put_u8(b, q->u.renew.flags);
}

/* The decoder checks the rights after the last field, as the validator. */
static void delegate_validate(gl_wire__rd *r, const gl_request *q) {
  const gl_lease_delegate_req *d = &q->u.delegate;
  if (gl_wire__rd_ok(r) && (d->rights == 0 || (d->rights & ~(uint32_t)GPULEASE_RIGHTS_ALL)))
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "rights 0x%08x: at least one right, only bits 0..7 are rights", d->rights);
}

static void delegate_decode(gl_wire__rd *r, gl_request *q) {
  gl_lease_delegate_req *d = &q->u.delegate;
  gl_wire__auth_decode(r, &d->auth);
  d->rights = gl_wire__rd_u32(r, "rights");
  d->ttl_s = gl_wire__rd_u32(r, "ttl_s");
  gl_wire__rd_str8(r, "audience", d->audience, sizeof d->audience);
  delegate_validate(r, q);
}

static void delegate_put(gl_buf *b, const gl_request *q) {
  const gl_lease_delegate_req *d = &q->u.delegate;
  gl_wire__auth_put(b, &d->auth);
  gl_wire__put_u32(b, d->rights);
  gl_wire__put_u32(b, d->ttl_s);
  gl_wire__put_str8(b, d->audience, sizeof d->audience);
}

static void revoke_decode(gl_wire__rd *r, gl_request *q) {
  q->u.revoke.lease_id = gl_wire__rd_u64(r, "lease_id");
  gl_wire__rd_str8(r, "reason", q->u.revoke.reason, sizeof q->u.revoke.reason);
}

static void revoke_put(gl_buf *b, const gl_request *q) {
  gl_wire__put_u64(b, q->u.revoke.lease_id);
  gl_wire__put_str8(b, q->u.revoke.reason, sizeof q->u.revoke.reason);
}

static void authenticate_validate(gl_wire__rd *r, const gl_request *q) {
  if (gl_wire__rd_ok(r) && !q->u.authenticate.token[0])
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "bearer_token is empty");
}

static void authenticate_decode(gl_wire__rd *r, gl_request *q) {
  gl_wire__rd_str8(r, "bearer_token", q->u.authenticate.token, sizeof q->u.authenticate.token);
  authenticate_validate(r, q);
}

static void authenticate_put(gl_buf *b, const gl_request *q) {
  gl_wire__put_str8(b, q->u.authenticate.token, sizeof q->u.authenticate.token);
}

static void unfence_decode(gl_wire__rd *r, gl_request *q) {
  q->u.unfence.gpu_index = gl_wire__rd_u32(r, "gpu_index");
}

static void unfence_put(gl_buf *b, const gl_request *q) {
  gl_wire__put_u32(b, q->u.unfence.gpu_index);
}

/* LEASE_QUERY, LEASE_FREE: the lease_auth alone. */
static void auth_only_decode(gl_wire__rd *r, gl_request *q) { gl_wire__auth_decode(r, &q->u.auth); }
static void auth_only_put(gl_buf *b, const gl_request *q) { gl_wire__auth_put(b, &q->u.auth); }

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
  /* The admission block: there for a request that asked (flags bit 0). */
  inv->has_admission = gl_wire__rd_ok(r) && r->pos < r->len;
  if (!inv->has_admission) return;
  inv->isolated_queue_max = gl_wire__rd_u32(r, "isolated_queue_max");
  inv->isolated_queue_ms = gl_wire__rd_u32(r, "isolated_queue_ms");
  r->elem = "admission";
  for (unsigned i = 0; i < inv->gpu_count && gl_wire__rd_ok(r); i++) {
    gl_gpu_admission *a = &inv->admission[i];
    r->idx = i;
    a->max_isolated_contexts = gl_wire__rd_u32(r, "max_isolated_contexts");
    a->isolated_contexts = gl_wire__rd_u32(r, "isolated_contexts");
    a->leased = gl_wire__rd_u32(r, "leased");
    a->warm = gl_wire__rd_u32(r, "warm");
    a->spare = gl_wire__rd_u32(r, "spare");
    a->tearing_down = gl_wire__rd_u32(r, "tearing_down");
    a->queued = gl_wire__rd_u32(r, "queued");
    a->flags = gl_wire__rd_u32(r, "flags");
  }
  r->elem = NULL;
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
  if (!inv->has_admission) return;
  gl_wire__put_u32(b, inv->isolated_queue_max);
  gl_wire__put_u32(b, inv->isolated_queue_ms);
  for (unsigned i = 0; i < inv->gpu_count; i++) {
    const gl_gpu_admission *a = &inv->admission[i];
    gl_wire__put_u32(b, a->max_isolated_contexts);
    gl_wire__put_u32(b, a->isolated_contexts);
    gl_wire__put_u32(b, a->leased);
    gl_wire__put_u32(b, a->warm);
    gl_wire__put_u32(b, a->spare);
    gl_wire__put_u32(b, a->tearing_down);
    gl_wire__put_u32(b, a->queued);
    gl_wire__put_u32(b, a->flags);
  }
}

/* GET_INVENTORY's request: empty, or flags (added in 0.2). */
static void inventory_req_validate(gl_wire__rd *r, const gl_request *q) {
  if (gl_wire__rd_ok(r) && (q->u.inventory.flags & ~GL_INVENTORY_F_ADMISSION))
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "flags 0x%08x: only bit 0 (the admission block) is defined",
                     q->u.inventory.flags);
}

static void inventory_req_decode(gl_wire__rd *r, gl_request *q) {
  q->u.inventory.has_flags = r->pos < r->len;
  q->u.inventory.flags = 0;
  if (q->u.inventory.has_flags) q->u.inventory.flags = gl_wire__rd_u32(r, "flags");
  inventory_req_validate(r, q);
}

static void inventory_req_put(gl_buf *b, const gl_request *q) {
  if (q->u.inventory.has_flags) gl_wire__put_u32(b, q->u.inventory.flags);
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

static void inventory_result_decode(gl_wire__rd *r, gl_response *out) {
  inventory_decode(r, &out->u.inventory);
}
static bool inventory_result_valid(const gl_response *resp) {
  return inventory_valid(&resp->u.inventory);
}
static void inventory_result_put(gl_buf *b, const gl_response *resp) {
  inventory_put(b, &resp->u.inventory);
}

/* LEASE_ALLOC, LEASE_RENEW, LEASE_QUERY: a lease_info. */
static void lease_result_decode(gl_wire__rd *r, gl_response *out) {
  lease_info_decode(r, &out->u.lease);
}
static void lease_result_put(gl_buf *b, const gl_response *resp) {
  lease_info_put(b, &resp->u.lease);
}

/* LEASE_DELEGATE: the delegated secret. */
static void secret_result_decode(gl_wire__rd *r, gl_response *out) {
  const uint8_t *p = gl_wire__rd_take(r, GPULEASE_SECRET_BYTES, "secret");
  if (p) memcpy(out->u.secret, p, GPULEASE_SECRET_BYTES);
}
static void secret_result_put(gl_buf *b, const gl_response *resp) {
  gl_wire__put_bytes(b, resp->u.secret, GPULEASE_SECRET_BYTES);
}

/* AUTHENTICATE: the tenant's name. */
static void tenant_result_decode(gl_wire__rd *r, gl_response *out) {
  gl_wire__rd_str8(r, "tenant", out->u.tenant, sizeof out->u.tenant);
}
static bool tenant_result_valid(const gl_response *resp) {
  return gl_wire__str_fits(resp->u.tenant, sizeof resp->u.tenant);
}
static void tenant_result_put(gl_buf *b, const gl_response *resp) {
  gl_wire__put_str8(b, resp->u.tenant, sizeof resp->u.tenant);
}

/* ========================================================================
 * The codecs
 * ====================================================================== */

const gl_wire__codec gl_wire__op_GET_INVENTORY = {
    .last_field = "flags",
    .decode = inventory_req_decode,
    .validate = inventory_req_validate,
    .put = inventory_req_put,
    .result_decode = inventory_result_decode,
    .result_valid = inventory_result_valid,
    .result_put = inventory_result_put,
};

const gl_wire__codec gl_wire__op_AUTHENTICATE = {
    .last_field = "bearer_token",
    .decode = authenticate_decode,
    .validate = authenticate_validate,
    .put = authenticate_put,
    .result_decode = tenant_result_decode,
    .result_valid = tenant_result_valid,
    .result_put = tenant_result_put,
};

const gl_wire__codec gl_wire__op_LEASE_ALLOC = {
    .last_field = "malloc_heap_bytes",
    .decode = alloc_decode,
    .validate = alloc_validate,
    .put = alloc_put,
    .result_decode = lease_result_decode,
    .result_put = lease_result_put,
};

const gl_wire__codec gl_wire__op_LEASE_RENEW = {
    .last_field = "flags",
    .decode = renew_decode,
    .validate = renew_validate,
    .put = renew_put,
    .result_decode = lease_result_decode,
    .result_put = lease_result_put,
};

const gl_wire__codec gl_wire__op_LEASE_QUERY = {
    .last_field = "secret",
    .decode = auth_only_decode,
    .put = auth_only_put,
    .result_decode = lease_result_decode,
    .result_put = lease_result_put,
};

const gl_wire__codec gl_wire__op_LEASE_FREE = {
    .last_field = "secret",
    .decode = auth_only_decode,
    .put = auth_only_put,
};

const gl_wire__codec gl_wire__op_LEASE_DELEGATE = {
    .last_field = "audience",
    .decode = delegate_decode,
    .validate = delegate_validate,
    .put = delegate_put,
    .result_decode = secret_result_decode,
    .result_put = secret_result_put,
};

const gl_wire__codec gl_wire__op_LEASE_REVOKE = {
    .last_field = "reason",
    .decode = revoke_decode,
    .put = revoke_put,
};

const gl_wire__codec gl_wire__op_ADMIN_UNFENCE = {
    .last_field = "gpu_index",
    .decode = unfence_decode,
    .put = unfence_put,
};
