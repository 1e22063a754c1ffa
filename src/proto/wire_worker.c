/*
 * wire_worker.c - the codec of the internal worker ops, which only the
 * daemon and its worker processes speak, over their socketpair (the daemon
 * refuses them from the network): WORKER_INIT (the device and the lease's
 * VRAM region), WORKER_WARM (the device alone, ahead of a lease),
 * WORKER_RELEASE (one lease of a shared worker ends),
 * WORKER_PROBE (the GPUs present), WORKER_LOST (a notice
 * the worker sends after a lost context: its sessions and their failures)
 * and WORKER_HELD (a notice of what a lease makes its context hold beyond
 * its region),
 * requests and results: one codec per op (gl_wire__op_<NAME>, at the
 * end, called by wire.c's entry points). Layouts in wire.h.
 *
 * Their requests are fixed fields with no range to check (WORKER_PROBE,
 * WORKER_LOST and WORKER_HELD have empty bodies: the notices' request
 * forms are one),
 * the validators of WORKER_INIT and WORKER_WARM only that gpu_uuid fits
 * its str8; the results refuse a gpu count over 64, a str8 string that
 * does not fit its array, more than 64 lost sessions, a session id 0 and a
 * failure status that is OK or not a wire status.
 */
#include "proto/wire_internal.h"

/* ========================================================================
 * Requests
 * ====================================================================== */

/* WORKER_INIT and WORKER_WARM: the gpu_uuid must fit the str8. */
static void uuid_validate(gl_wire__rd *r, const gl_request *q) {
  if (!gl_wire__str_fits(q->u.worker_init.gpu_uuid, sizeof q->u.worker_init.gpu_uuid))
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "gpu_uuid: longer than %zu bytes",
                     sizeof q->u.worker_init.gpu_uuid - 1);
}

static void init_decode(gl_wire__rd *r, gl_request *q) {
  gl_worker_init_req *w = &q->u.worker_init;
  w->cuda_ordinal = gl_wire__rd_u32(r, "cuda_ordinal");
  w->vram_bytes = gl_wire__rd_u64(r, "vram_bytes");
  w->lease_id = gl_wire__rd_u64(r, "lease_id");
  w->flags = gl_wire__rd_u8(r, "flags");
  w->printf_fifo_bytes = gl_wire__rd_u32(r, "printf_fifo_bytes");
  w->malloc_heap_bytes = gl_wire__rd_u64(r, "malloc_heap_bytes");
  gl_wire__rd_str8(r, "gpu_uuid", w->gpu_uuid, sizeof w->gpu_uuid);
}

static void init_put(gl_buf *b, const gl_request *q) {
  const gl_worker_init_req *w = &q->u.worker_init;
  gl_wire__put_u32(b, w->cuda_ordinal);
  gl_wire__put_u64(b, w->vram_bytes);
  gl_wire__put_u64(b, w->lease_id);
  gl_wire__put_u8(b, w->flags);
  gl_wire__put_u32(b, w->printf_fifo_bytes);
  gl_wire__put_u64(b, w->malloc_heap_bytes);
  gl_wire__put_str8(b, w->gpu_uuid, sizeof w->gpu_uuid);
}

static void warm_decode(gl_wire__rd *r, gl_request *q) {
  q->u.worker_init.cuda_ordinal = gl_wire__rd_u32(r, "cuda_ordinal");
  gl_wire__rd_str8(r, "gpu_uuid", q->u.worker_init.gpu_uuid, sizeof q->u.worker_init.gpu_uuid);
}

static void warm_put(gl_buf *b, const gl_request *q) {
  gl_wire__put_u32(b, q->u.worker_init.cuda_ordinal);
  gl_wire__put_str8(b, q->u.worker_init.gpu_uuid, sizeof q->u.worker_init.gpu_uuid);
}

static void release_decode(gl_wire__rd *r, gl_request *q) {
  q->u.worker_init.lease_id = gl_wire__rd_u64(r, "lease_id");
}

static void release_put(gl_buf *b, const gl_request *q) {
  gl_wire__put_u64(b, q->u.worker_init.lease_id);
}

/* ========================================================================
 * Results
 * ====================================================================== */

static void probe_decode(gl_wire__rd *r, gl_probe_resp *pr) {
  pr->count = gl_wire__rd_u16(r, "count");
  gl_wire__check_gpu_count(r, "count", pr->count);
  r->elem = "gpu";
  for (unsigned i = 0; i < pr->count && gl_wire__rd_ok(r); i++) {
    gl_probe_gpu *g = &pr->gpus[i];
    r->idx = i;
    gl_wire__rd_str8(r, "uuid", g->uuid, sizeof g->uuid);
    gl_wire__rd_str8(r, "name", g->name, sizeof g->name);
    g->cc_major = gl_wire__rd_u8(r, "cc_major");
    g->cc_minor = gl_wire__rd_u8(r, "cc_minor");
    g->sm_count = gl_wire__rd_u32(r, "sm_count");
    g->total_vram_bytes = gl_wire__rd_u64(r, "total_vram_bytes");
  }
  r->elem = NULL;
  pr->cuda_driver_version = gl_wire__rd_u32(r, "cuda_driver_version");
  pr->ptx_isa_driver[0] = gl_wire__rd_u8(r, "ptx_isa_driver_major");
  pr->ptx_isa_driver[1] = gl_wire__rd_u8(r, "ptx_isa_driver_minor");
  pr->ptx_isa_nvjitlink[0] = gl_wire__rd_u8(r, "ptx_isa_nvjitlink_major");
  pr->ptx_isa_nvjitlink[1] = gl_wire__rd_u8(r, "ptx_isa_nvjitlink_minor");
}

static bool probe_valid(const gl_probe_resp *pr) {
  if (pr->count > GPULEASE_MAX_GPUS) return false;
  for (unsigned i = 0; i < pr->count; i++)
    if (!gl_wire__str_fits(pr->gpus[i].uuid, sizeof pr->gpus[i].uuid) ||
        !gl_wire__str_fits(pr->gpus[i].name, sizeof pr->gpus[i].name))
      return false;
  return true;
}

static void probe_put(gl_buf *b, const gl_probe_resp *pr) {
  gl_wire__put_u16(b, pr->count);
  for (unsigned i = 0; i < pr->count; i++) {
    const gl_probe_gpu *g = &pr->gpus[i];
    gl_wire__put_str8(b, g->uuid, sizeof g->uuid);
    gl_wire__put_str8(b, g->name, sizeof g->name);
    gl_wire__put_u8(b, g->cc_major);
    gl_wire__put_u8(b, g->cc_minor);
    gl_wire__put_u32(b, g->sm_count);
    gl_wire__put_u64(b, g->total_vram_bytes);
  }
  gl_wire__put_u32(b, pr->cuda_driver_version);
  gl_wire__put_u8(b, pr->ptx_isa_driver[0]);
  gl_wire__put_u8(b, pr->ptx_isa_driver[1]);
  gl_wire__put_u8(b, pr->ptx_isa_nvjitlink[0]);
  gl_wire__put_u8(b, pr->ptx_isa_nvjitlink[1]);
}

static void check_lost_count(gl_wire__rd *r, unsigned n) {
  if (gl_wire__rd_ok(r) && n > GL_WIRE_MAX_LOST_SESSIONS)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "count %u exceeds %d sessions", n,
                     GL_WIRE_MAX_LOST_SESSIONS);
}

static void check_lost_entry(gl_wire__rd *r, const gl_lost_session *e) {
  if (!gl_wire__rd_ok(r)) return;
  if (e->session_id == 0)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "session %u: session_id 0", (unsigned)r->idx);
  else if (e->status == GPULEASE_OK || e->status >= 100)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "session %u: status %u is not a failure",
                     (unsigned)r->idx, e->status);
}

static void lost_decode(gl_wire__rd *r, gl_worker_lost_resp *wl) {
  wl->count = gl_wire__rd_u16(r, "count");
  check_lost_count(r, wl->count);
  r->elem = "session";
  for (unsigned i = 0; i < wl->count && gl_wire__rd_ok(r); i++) {
    gl_lost_session *e = &wl->sessions[i];
    r->idx = i;
    e->session_id = gl_wire__rd_u64(r, "session_id");
    e->status = gl_wire__rd_u16(r, "status");
    e->op = gl_wire__rd_u16(r, "op");
    e->seq = gl_wire__rd_u64(r, "seq");
    e->msg_len = gl_wire__rd_u16(r, "msg_len");
    e->msg = (const char *)gl_wire__rd_take(r, e->msg_len, "msg");
    check_lost_entry(r, e);
  }
  r->elem = NULL;
}

static bool lost_valid(const gl_worker_lost_resp *wl) {
  gl_wire__rd r;
  gl_wire__rd_init(&r, NULL, 0, GL_OP_WORKER_LOST, NULL, 0);
  check_lost_count(&r, wl->count);
  for (unsigned i = 0; i < wl->count && gl_wire__rd_ok(&r); i++) {
    r.idx = i;
    check_lost_entry(&r, &wl->sessions[i]);
    if (wl->sessions[i].msg_len && !wl->sessions[i].msg) return false;
  }
  return gl_wire__rd_ok(&r);
}

static void lost_put(gl_buf *b, const gl_worker_lost_resp *wl) {
  gl_wire__put_u16(b, wl->count);
  for (unsigned i = 0; i < wl->count; i++) {
    const gl_lost_session *e = &wl->sessions[i];
    gl_wire__put_u64(b, e->session_id);
    gl_wire__put_u16(b, e->status);
    gl_wire__put_u16(b, e->op);
    gl_wire__put_u64(b, e->seq);
    gl_wire__put_u16(b, e->msg_len);
    gl_wire__put_bytes(b, e->msg, e->msg_len);
  }
}

static void probe_result_decode(gl_wire__rd *r, gl_response *out) {
  probe_decode(r, &out->u.probe);
}
static bool probe_result_valid(const gl_response *resp) { return probe_valid(&resp->u.probe); }
static void probe_result_put(gl_buf *b, const gl_response *resp) { probe_put(b, &resp->u.probe); }

static void lost_result_decode(gl_wire__rd *r, gl_response *out) {
  lost_decode(r, &out->u.worker_lost);
}
static bool lost_result_valid(const gl_response *resp) {
  return lost_valid(&resp->u.worker_lost);
}
static void lost_result_put(gl_buf *b, const gl_response *resp) {
  lost_put(b, &resp->u.worker_lost);
}

/* WORKER_HELD: three u64s, any value. */
static void held_result_decode(gl_wire__rd *r, gl_response *out) {
  gl_worker_held_resp *h = &out->u.worker_held;
  h->lease_id = gl_wire__rd_u64(r, "lease_id");
  h->module_bytes = gl_wire__rd_u64(r, "module_bytes");
  h->local_bytes = gl_wire__rd_u64(r, "local_bytes");
}
static bool held_result_valid(const gl_response *resp) {
  (void)resp;
  return true;
}
static void held_result_put(gl_buf *b, const gl_response *resp) {
  const gl_worker_held_resp *h = &resp->u.worker_held;
  gl_wire__put_u64(b, h->lease_id);
  gl_wire__put_u64(b, h->module_bytes);
  gl_wire__put_u64(b, h->local_bytes);
}

/* WORKER_INIT: the region's base and the device's name. */
static void init_result_decode(gl_wire__rd *r, gl_response *out) {
  out->u.worker_init.region_base = gl_wire__rd_u64(r, "region_base");
  gl_wire__rd_str8(r, "device_name", out->u.worker_init.device_name,
                   sizeof out->u.worker_init.device_name);
}

static bool init_result_valid(const gl_response *resp) {
  return gl_wire__str_fits(resp->u.worker_init.device_name,
                           sizeof resp->u.worker_init.device_name);
}

static void init_result_put(gl_buf *b, const gl_response *resp) {
  gl_wire__put_u64(b, resp->u.worker_init.region_base);
  gl_wire__put_str8(b, resp->u.worker_init.device_name, sizeof resp->u.worker_init.device_name);
}

/* ========================================================================
 * The codecs
 * ====================================================================== */

const gl_wire__codec gl_wire__op_WORKER_INIT = {
    .decode = init_decode,
    .validate = uuid_validate,
    .put = init_put,
    .result_decode = init_result_decode,
    .result_valid = init_result_valid,
    .result_put = init_result_put,
};

const gl_wire__codec gl_wire__op_WORKER_PROBE = {
    .result_decode = probe_result_decode,
    .result_valid = probe_result_valid,
    .result_put = probe_result_put,
};

const gl_wire__codec gl_wire__op_WORKER_LOST = {
    .result_decode = lost_result_decode,
    .result_valid = lost_result_valid,
    .result_put = lost_result_put,
};

const gl_wire__codec gl_wire__op_WORKER_WARM = {
    .decode = warm_decode,
    .validate = uuid_validate,
    .put = warm_put,
};

const gl_wire__codec gl_wire__op_WORKER_RELEASE = {
    .decode = release_decode,
    .put = release_put,
};

const gl_wire__codec gl_wire__op_WORKER_HELD = {
    .result_decode = held_result_decode,
    .result_valid = held_result_valid,
    .result_put = held_result_put,
};
