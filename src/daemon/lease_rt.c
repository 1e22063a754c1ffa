/*
 * lease_rt.c - see lease_rt.h. Also the end of a live lease
 * (gl_daemon_end_lease: its worker torn down, recycled or left, its record
 * freed) and the sessions of each GPU's leases for the metrics
 * (gl_daemon_sessions_by_gpu), both declared in daemon.h.
 */
#include "daemon/lease_rt.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "daemon/pool.h"
#include "daemon/lease_admit.h"
#include "daemon/reply.h"
#include "daemon/shared.h"

lease_rt *gl_lease_rt_of(const gl_lease *l) { return l ? l->owner : NULL; }

lease_rt *gl_lease_rt_new(gl_daemon *d, gl_lease *l, const gl_lease_alloc_req *a, int mig,
                          const gl_quota_charge *charge, gl_bulk *bulk) {
  lease_rt *rt = calloc(1, sizeof *rt);
  if (!rt) return NULL;
  rt->d = d;
  rt->lease_id = l->id;
  rt->gpu_index = l->gpu_index;
  rt->shared = l->lease_class == GPULEASE_CLASS_SHARED;
  rt->printf_fifo_bytes = a->printf_fifo_bytes;
  rt->malloc_heap_bytes = a->malloc_heap_bytes;
  rt->mig = mig;
  rt->charged = true;
  rt->charge = *charge;
  if (mig >= 0) d->mig_lease[l->gpu_index][mig] = l->id;
  rt->bulk = bulk;
  l->owner = rt;
  return rt;
}

void gl_lease_rt_release_sessions(lease_rt *rt, const char *tenant) {
  for (; rt->sessions; rt->sessions--) gl_quota_session_end(rt->d->quota, tenant);
}

void gl_lease_rt_segs_gone(lease_rt *rt) {
  for (size_t i = 0; i < rt->nsegs; i++) rt->d->pinned_bytes -= rt->segs[i].size_bytes;
  rt->nsegs = 0;
}

void gl_lease_rt_seg_forget(lease_rt *rt, uint64_t id) {
  for (size_t i = 0; i < rt->nsegs; i++)
    if (rt->segs[i].id == id) {
      rt->d->pinned_bytes -= rt->segs[i].size_bytes;
      rt->segs[i] = rt->segs[--rt->nsegs];
      return;
    }
}

bool gl_lease_rt_answer_if_ended(lease_rt *rt, gl_dreq *req, const gl_request *r) {
  const gl_session_ref *ref = gl_request_session(r);
  const gl_ended_session *es = ref ? gl_ended_find(&rt->ended, ref->session_id) : NULL;
  if (!es) return false;
  gl_buf b;
  gl_buf_init(&b);
  gl_ended_answer(&rt->ended, es, r, &b);
  gl_ops_reply_bytes(req, &b);
  return true;
}

void gl_daemon_end_lease(gl_daemon *d, gl_lease *l, gpulease_status why_status,
                         const char *why) {
  lease_rt *rt = l->owner;
  if (!rt) return;
  gl_lease_rt_release_sessions(rt, l->tenant);
  if (rt->charged) gl_quota_lease_end(d->quota, l->tenant, l->vram_bytes, &rt->charge, gl_mono_ns());
  if (rt->mig >= 0) d->mig_lease[rt->gpu_index][rt->mig] = 0;
  if (rt->shared) {
    gl_shared_leave(d->shared, rt->gpu_index, rt->lease_id, why_status, why);
  } else if (rt->w && d->pool && !d->stopping && rt->mig < 0 && gl_wproc_usable(rt->w) &&
             gl_wproc_pending(rt->w) == 0 && !rt->printf_fifo_bytes && !rt->malloc_heap_bytes &&
             l->held_local_bytes == 0) {
    /* Nothing runs in it: the worker serves the next lease (pool.h). Not
     * one whose context set aside local memory for this lease's kernels:
     * the context keeps that until it ends. */
    gl_pool_recycle(d->pool, rt->gpu_index, rt->w, rt->lease_id);
  } else if (rt->w) {
    gl_wproc_kill(rt->w, why_status, why);
  }
  gl_bulk_del(rt->bulk);
  gl_ended_free(&rt->ended);
  gl_lease_rt_segs_gone(rt);
  free(rt);
  l->owner = NULL;
  gl_lease_admit_poke(d); /* its worker may serve a waiting lease (lease_admit.h) */
}

static void add_sessions(void *user, gl_lease *l) {
  uint32_t *per_gpu = user;
  const lease_rt *rt = l->owner;
  if (rt && l->gpu_index < GPULEASE_MAX_GPUS) per_gpu[l->gpu_index] += rt->sessions;
}

void gl_daemon_sessions_by_gpu(gl_daemon *d, uint32_t per_gpu[GPULEASE_MAX_GPUS]) {
  memset(per_gpu, 0, GPULEASE_MAX_GPUS * sizeof *per_gpu);
  gl_lease_table_foreach(d->leases, add_sessions, per_gpu);
}
