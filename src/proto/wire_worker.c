/*
 * wire_worker.c - the codec of the internal worker ops, which only the
 * daemon and its worker processes speak, over their socketpair (the daemon
 * refuses them from the network): WORKER_INIT (the device and the lease's
 * VRAM region), WORKER_WARM (the device alone, ahead of a lease),
 * WORKER_RELEASE (one lease of a shared worker ends),
 * WORKER_PROBE (the GPUs present), and WORKER_LOST (a notice
 * the worker sends after a lost context: its sessions and their failures),
 * requests and results (gl_wire__worker, called by wire.c's entry points).
 * Layouts in wire.h.
 *
 * Their requests are fixed fields with no range to check (WORKER_LOST has
 * no request: its request form is an empty body), so the family has no
 * validator; the results refuse a gpu count over 64, a str8 string that
 * does not fit its array, more than 64 lost sessions, a session id 0 and a
 * failure status that is OK or not a wire status.
 */
#include "proto/wire_internal.h"

/* ========================================================================
 * Requests
 * ====================================================================== */

static void worker_decode(gl_wire__rd *r, gl_request *q) {
  if (q->op == GL_OP_WORKER_INIT) {
    q->u.worker_init.cuda_ordinal = gl_wire__rd_u32(r, "cuda_ordinal");
    q->u.worker_init.vram_bytes = gl_wire__rd_u64(r, "vram_bytes");
    q->u.worker_init.lease_id = gl_wire__rd_u64(r, "lease_id");
    q->u.worker_init.flags = gl_wire__rd_u8(r, "flags");
    q->u.worker_init.printf_fifo_bytes = gl_wire__rd_u32(r, "printf_fifo_bytes");
    q->u.worker_init.malloc_heap_bytes = gl_wire__rd_u64(r, "malloc_heap_bytes");
    gl_wire__rd_str8(r, "gpu_uuid", q->u.worker_init.gpu_uuid, sizeof q->u.worker_init.gpu_uuid);
  } else if (q->op == GL_OP_WORKER_WARM) {
    q->u.worker_init.cuda_ordinal = gl_wire__rd_u32(r, "cuda_ordinal");
    gl_wire__rd_str8(r, "gpu_uuid", q->u.worker_init.gpu_uuid, sizeof q->u.worker_init.gpu_uuid);
  } else if (q->op == GL_OP_WORKER_RELEASE) {
    q->u.worker_init.lease_id = gl_wire__rd_u64(r, "lease_id");
  } /* WORKER_PROBE: empty body */
}

static void worker_put(gl_buf *b, const gl_request *q) {
  if (q->op == GL_OP_WORKER_INIT) {
    gl_wire__put_u32(b, q->u.worker_init.cuda_ordinal);
    gl_wire__put_u64(b, q->u.worker_init.vram_bytes);
    gl_wire__put_u64(b, q->u.worker_init.lease_id);
    gl_wire__put_u8(b, q->u.worker_init.flags);
    gl_wire__put_u32(b, q->u.worker_init.printf_fifo_bytes);
    gl_wire__put_u64(b, q->u.worker_init.malloc_heap_bytes);
    gl_wire__put_str8(b, q->u.worker_init.gpu_uuid, sizeof q->u.worker_init.gpu_uuid);
  } else if (q->op == GL_OP_WORKER_WARM) {
    gl_wire__put_u32(b, q->u.worker_init.cuda_ordinal);
    gl_wire__put_str8(b, q->u.worker_init.gpu_uuid, sizeof q->u.worker_init.gpu_uuid);
  } else if (q->op == GL_OP_WORKER_RELEASE) {
    gl_wire__put_u64(b, q->u.worker_init.lease_id);
  } /* WORKER_PROBE: empty body */
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

static void worker_result_decode(gl_wire__rd *r, gl_response *out) {
  if (out->op == GL_OP_WORKER_WARM || out->op == GL_OP_WORKER_RELEASE) return; /* empty */
  if (out->op == GL_OP_WORKER_LOST) {
    lost_decode(r, &out->u.worker_lost);
  } else if (out->op == GL_OP_WORKER_INIT) {
    out->u.worker_init.region_base = gl_wire__rd_u64(r, "region_base");
    gl_wire__rd_str8(r, "device_name", out->u.worker_init.device_name,
                     sizeof out->u.worker_init.device_name);
  } else { /* WORKER_PROBE */
    probe_decode(r, &out->u.probe);
  }
}

static bool worker_result_valid(const gl_response *resp) {
  if (resp->op == GL_OP_WORKER_WARM || resp->op == GL_OP_WORKER_RELEASE) return true;
  if (resp->op == GL_OP_WORKER_LOST) return lost_valid(&resp->u.worker_lost);
  if (resp->op == GL_OP_WORKER_INIT)
    return gl_wire__str_fits(resp->u.worker_init.device_name,
                             sizeof resp->u.worker_init.device_name);
  return probe_valid(&resp->u.probe); /* WORKER_PROBE */
}

static void worker_result_put(gl_buf *b, const gl_response *resp) {
  if (resp->op == GL_OP_WORKER_WARM || resp->op == GL_OP_WORKER_RELEASE) return; /* empty */
  if (resp->op == GL_OP_WORKER_LOST) {
    lost_put(b, &resp->u.worker_lost);
  } else if (resp->op == GL_OP_WORKER_INIT) {
    gl_wire__put_u64(b, resp->u.worker_init.region_base);
    gl_wire__put_str8(b, resp->u.worker_init.device_name,
                      sizeof resp->u.worker_init.device_name);
  } else { /* WORKER_PROBE */
    probe_put(b, &resp->u.probe);
  }
}

static void worker_validate(gl_wire__rd *r, const gl_request *q) {
  if ((q->op == GL_OP_WORKER_INIT || q->op == GL_OP_WORKER_WARM) &&
      !gl_wire__str_fits(q->u.worker_init.gpu_uuid, sizeof q->u.worker_init.gpu_uuid))
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "gpu_uuid: longer than %zu bytes",
                     sizeof q->u.worker_init.gpu_uuid - 1);
}

const gl_wire__family gl_wire__worker = {
    .decode = worker_decode,
    .validate = worker_validate,
    .put = worker_put,
    .result_decode = worker_result_decode,
    .result_valid = worker_result_valid,
    .result_put = worker_result_put,
};
