/*
 * ops.c - gpuleased's request handlers: one function per op.
 *
 * Every request is decoded here (untrusted bytes from the network), checked
 * against the lease table (id + secret), and either answered at once or
 * forwarded to the lease's worker process. Each request gets exactly one
 * response; a request whose worker is killed (expiry, free) is answered with
 * the reason.
 *
 * A live lease's runtime record (its worker, sessions, segments) is
 * lease_rt.h's; the replies are built by reply.h.
 */
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/lat.h"
#include "common/log.h"
#include "common/util.h"
#include "daemon/daemon.h"
#include "daemon/access.h"
#include "daemon/metrics.h"
#include "daemon/ops_internal.h"
#include "daemon/vram_watch.h"
#include "daemon/reply.h"
#include "daemon/bulk.h"
#include "daemon/dreq.h"
#include "daemon/ended.h"
#include "daemon/ctx_admit.h"
#include "daemon/lease_admit.h"
#include "daemon/lease_rt.h"
#include "daemon/shared.h"
#include "daemon/worker_proc.h"
#include "proto/wire.h"

/* ======================================================================
 * Pending calls and the lease's worker
 * ==================================================================== */

/* A request waiting for a worker's reply. */
typedef struct call {
  gl_daemon *d;
  gl_dreq *req;
  uint16_t op;
  uint64_t lease_id;
  bool resent; /* GPU_SUBMIT, SESSION_OPEN: sent again once already (see submit_done) */
  bool quota_session; /* SESSION_OPEN: a session counted in the quota ahead of the answer */
  bool closes;        /* a SESSION_CLOSE, or a BATCH holding one (quota_settle) */
  gl_lease_alloc_req alloc; /* LEASE_ALLOC: the request, to wait again (alloc_wait) */
} call;

static call *call_new(gl_daemon *d, gl_dreq *req, uint16_t op, uint64_t lease_id) {
  call *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->d = d;
  c->req = req;
  c->op = op;
  c->lease_id = lease_id;
  return c;
}

void gl_daemon_on_shared_lost(void *user, uint32_t gpu, const uint64_t *ids, size_t n,
                              const char *why) {
  gl_daemon *d = user;
  char msg[1300];
  snprintf(msg, sizeof msg,
           "the shared CUDA context of GPU %" PRIu32 " was lost with its %zu lease%s (%s)", gpu, n,
           n == 1 ? "" : "s", why);
  for (size_t i = 0; i < n; i++) {
    gl_lease *l = gl_lease_table_find(d->leases, ids[i]);
    if (!l) continue;
    bool pending = l->state == GL_LEASE_PENDING;
    gl_daemon_end_lease(d, l, GPULEASE_LEASE_EXPIRED, msg);
    if (pending) { /* its LEASE_ALLOC is answered by its WORKER_INIT's callback */
      continue;
    }
    l->end_reason = GL_LEASE_END_LOST;
    gl_metrics_lease_dropped(d->metrics, GL_DROP_FAULT);
    gl_lease_table_bury(d->leases, l, gl_mono_ns());
  }
}

static void on_worker_exit(void *owner, int code, int signo) {
  lease_rt *rt = owner;
  gl_metrics_worker_fault(rt->d->metrics);
  gl_lease *l = gl_lease_table_find(rt->d->leases, rt->lease_id);
  if (l) gl_lease_rt_release_sessions(rt, l->tenant);
  /* Its segments went with it (a fresh worker has none). */
  gl_lease_rt_segs_gone(rt);
  gl_bulk_worker_gone(rt->bulk);
  GL_WARN("worker of lease %" PRIu64 " ended on its own (code %d, signal %d); a fresh CUDA "
          "context will be created on its next use",
          rt->lease_id, code, signo);
  rt->w = NULL;
}

static void on_worker_notice(void *owner, const uint8_t *msg, size_t len) {
  lease_rt *rt = owner;
  gl_lease *l = gl_lease_table_find(rt->d->leases, rt->lease_id);
  if (l) gl_lease_rt_release_sessions(rt, l->tenant);
  GL_WARN("lease %" PRIu64 ": its worker lost the CUDA context; a fresh one will serve its next "
          "SESSION_OPEN or GPU_SUBMIT", rt->lease_id);
  gl_ended_add_notice(&rt->ended, msg, len);
}

/* The context limits a lease asked for, or the daemon's small defaults. */
#define DEFAULT_PRINTF_FIFO_BYTES (64u << 10)
#define DEFAULT_MALLOC_HEAP_BYTES (1ull << 20)

static int encode_worker_init(const gl_daemon *d, const gl_lease *l, const lease_rt *rt,
                              gl_buf *b) {
  gl_request r = {.op = GL_OP_WORKER_INIT};
  /* A MIG instance is its worker's CUDA device 0 (CUDA_VISIBLE_DEVICES). */
  r.u.worker_init.cuda_ordinal =
      rt->mig >= 0 ? 0 : (uint32_t)d->node.gpus[l->gpu_index].cuda_ordinal;
  r.u.worker_init.vram_bytes = l->vram_bytes;
  r.u.worker_init.lease_id = l->id;
  r.u.worker_init.flags = rt->shared ? GL_WORKER_INIT_SHARED : 0;
  r.u.worker_init.printf_fifo_bytes = rt->printf_fifo_bytes ? rt->printf_fifo_bytes
                                                            : DEFAULT_PRINTF_FIFO_BYTES;
  r.u.worker_init.malloc_heap_bytes = rt->malloc_heap_bytes ? rt->malloc_heap_bytes
                                                            : DEFAULT_MALLOC_HEAP_BYTES;
  gl_node_worker_uuid(&d->node, l->gpu_index, rt->mig >= 0, r.u.worker_init.gpu_uuid,
                      sizeof r.u.worker_init.gpu_uuid);
  gl_buf_init(b);
  return gl_request_encode(&r, b) == GPULEASE_OK ? 0 : -1;
}

/* Starts a worker for lease l and queues WORKER_INIT on it; the reply goes
 * to cb(ctx). 0 or -1 with err. */
static int start_worker(gl_daemon *d, gl_lease *l, lease_rt *rt, gl_wproc_reply_cb cb, void *ctx,
                        char *err, size_t errlen) {
  if (rt->shared) {
    /* The GPU's shared context: started for its first member. */
    rt->w = gl_shared_join(d->shared, l->gpu_index, l->id, err, errlen);
    if (!rt->w) return -1;
  } else if (rt->mig >= 0) {
    /* A worker of its own, bound to the MIG instance. */
    if (gl_wproc_spawn(d->loop, d->cfg.worker_exe, d->cfg.log_level,
                       gl_node_mig_worker_args(&d->node, l->gpu_index, (unsigned)rt->mig),
                       on_worker_exit, on_worker_notice, rt, &rt->w, err, errlen) != 0)
      return -1;
  } else {
    /* A warm worker has its device open already: it only reserves VRAM. */
    bool own_limits = rt->printf_fifo_bytes || rt->malloc_heap_bytes || rt->fresh;
    rt->w = own_limits
                ? gl_pool_take_fresh(d->pool, l->gpu_index, on_worker_exit, on_worker_notice, rt)
                : gl_pool_take(d->pool, l->gpu_index, on_worker_exit, on_worker_notice, rt);
    if (rt->w) GL_DEBUG("lease %" PRIu64 " takes a warm worker", l->id);
    if (!rt->w && gl_wproc_spawn(d->loop, d->cfg.worker_exe, d->cfg.log_level,
                                 gl_node_worker_args(&d->node, l->gpu_index), on_worker_exit,
                                 on_worker_notice, rt, &rt->w, err, errlen) != 0)
      return -1;
  }
  gl_wproc_set_tag(rt->w, l->gpu_index); /* its teardown is watched for its GPU (fence.h) */
  if (rt->mig < 0) gl_wproc_count_context(rt->w, l->gpu_index); /* lease_admit.h */
  gl_buf b;
  if (encode_worker_init(d, l, rt, &b) != 0 || gl_wproc_call(rt->w, b.data, b.len, cb, ctx) != 0) {
    gl_buf_free(&b);
    if (rt->shared)
      gl_shared_leave(d->shared, l->gpu_index, l->id, GPULEASE_INTERNAL, "cannot start");
    else
      gl_wproc_kill(rt->w, GPULEASE_INTERNAL, "cannot start the worker");
    rt->w = NULL;
    snprintf(err, errlen, "cannot send WORKER_INIT to the worker");
    return -1;
  }
  gl_buf_free(&b);
  return 0;
}

/* ======================================================================
 * GET_INVENTORY
 * ==================================================================== */

static void op_inventory(gl_daemon *d, gl_dreq *req, const gl_request *q) {
  gl_response *r = calloc(1, sizeof *r);
  if (!r) {
    gl_ops_reply_error(req, GL_OP_GET_INVENTORY, GPULEASE_INTERNAL, "daemon out of memory");
    return;
  }
  r->op = GL_OP_GET_INVENTORY;
  r->status = GPULEASE_OK;
  gl_inventory *inv = &r->u.inventory;
  inv->max_ttl_s = d->cfg.max_ttl_s;
  snprintf(inv->driver_version, sizeof inv->driver_version, "%s", d->node.driver_version);
  inv->gpu_count = (uint16_t)d->node.gpu_count;
  for (uint32_t i = 0; i < d->node.gpu_count; i++) {
    const gl_node_gpu *g = &d->node.gpus[i];
    gl_gpu_entry *e = &inv->gpus[i];
    e->index = i;
    snprintf(e->uuid, sizeof e->uuid, "%s", g->uuid);
    snprintf(e->name, sizeof e->name, "%s", g->name);
    e->cc_major = g->cc_major;
    e->cc_minor = g->cc_minor;
    e->sm_count = g->sm_count;
    e->total_vram_bytes = g->total_vram_bytes;
    gl_lease_table_gpu_usage(d->leases, i, &e->leased_vram_bytes, &e->active_leases);
    uint64_t fallback =
        g->total_vram_bytes > e->leased_vram_bytes ? g->total_vram_bytes - e->leased_vram_bytes : 0;
    /* NVML's figure now: a client that just leased or freed sees it. */
    e->free_vram_bytes = gl_vram_watch_read_now(d->vram_watch, i, fallback);
    e->flags = g->flags | (gl_lease_table_fenced(d->leases, i) ? GPULEASE_GPU_FENCED : 0);
    e->context_overhead_bytes = gl_lease_table_overhead(d->leases, i);
    memcpy(e->ptx_isa_driver, g->ptx_isa_driver, sizeof e->ptx_isa_driver);
    memcpy(e->ptx_isa_nvjitlink, g->ptx_isa_nvjitlink, sizeof e->ptx_isa_nvjitlink);
  }
  gl_ops_tenant_info(d, gl_dreq_identity(req), &inv->tenant);
  /* The admission block only for a client that asked (protocol.md's
   * compatibility rule 3). */
  if (q->u.inventory.flags & GL_INVENTORY_F_ADMISSION) {
    inv->has_admission = true;
    inv->isolated_queue_max = gl_ctx_admit_queue_max(d->ctx_admit);
    inv->isolated_queue_ms = gl_ctx_admit_queue_ms(d->ctx_admit);
    for (uint32_t i = 0; i < d->node.gpu_count; i++) {
      gl_lease_admit_figures f;
      gl_lease_admit_figures_of(d, i, &f);
      inv->admission[i] = (gl_gpu_admission){
          .max_isolated_contexts = f.limit, .isolated_contexts = f.held, .leased = f.leased,
          .warm = f.warm, .spare = f.spares, .tearing_down = f.ending, .queued = f.queued,
          .flags = f.learned ? GL_ADMISSION_F_LEARNED : 0};
    }
  }
  gl_buf b;
  gl_buf_init(&b);
  gl_response_encode(r, &b);
  free(r);
  gl_ops_reply_bytes(req, &b);
}

/* ======================================================================
 * LEASE_ALLOC
 * ==================================================================== */

static void alloc_wait(gl_daemon *d, gl_dreq *req, const gl_lease_alloc_req *a,
                       const char *tenant);

/* Whether a worker's refusal is the driver's: no room for another CUDA
 * context (cuda_device.c: cuDevicePrimaryCtxRetain out of memory), not
 * the lease's VRAM. */
static bool context_refused(const gl_response *resp) {
  static const char what[] = "cuDevicePrimaryCtxRetain";
  if (resp->status != GPULEASE_CAPACITY_EXCEEDED || !resp->msg) return false;
  size_t n = sizeof what - 1;
  for (size_t i = 0; i + n <= resp->msg_len; i++)
    if (memcmp(resp->msg + i, what, n) == 0) return true;
  return false;
}

static void alloc_done(void *ctx, gpulease_status status, const uint8_t *msg, size_t len,
                       const char *why) {
  call *c = ctx;
  gl_daemon *d = c->d;
  gl_lease *l = gl_lease_table_find(d->leases, c->lease_id);
  gl_response resp;
  char err[256];
  lease_rt *rt = gl_lease_rt_of(l);
  if (status != GPULEASE_OK && status != GPULEASE_LEASE_EXPIRED && rt && !rt->shared &&
      !c->resent) {
    /* The worker ended before the lease was set up (a reused one whose
     * last lease would not end, or one that died): once more, on a fresh
     * worker. */
    GL_INFO("lease %" PRIu64 ": its worker ended during setup (%s); starting another", l->id,
            why ? why : "");
    c->resent = true;
    rt->w = NULL;
    rt->fresh = true;
    if (start_worker(d, l, rt, alloc_done, c, err, sizeof err) == 0) return;
  }
  if (status != GPULEASE_OK) { /* worker killed (expired) or died */
    if (l) {
      gl_daemon_end_lease(d, l, status, why);
      gl_lease_table_remove(d->leases, l);
    }
    gl_ops_reply_error(c->req, GL_OP_LEASE_ALLOC, status == GPULEASE_LEASE_EXPIRED ? status : GPULEASE_INTERNAL,
                "could not set up the lease: %s", why);
  } else if (gl_response_decode(msg, len, 1 << 20, &resp, err, sizeof err) != GPULEASE_OK) {
    if (l) {
      gl_daemon_end_lease(d, l, GPULEASE_INTERNAL, "lease setup failed");
      gl_lease_table_remove(d->leases, l);
    }
    gl_ops_reply_error(c->req, GL_OP_LEASE_ALLOC, GPULEASE_INTERNAL, "worker reply malformed: %s", err);
  } else if (l && rt && !rt->shared && rt->mig < 0 && context_refused(&resp)) {
    /* The driver holds no more contexts on this GPU: the limit is learned
     * from the others (lease_admit.h), and the request waits for one
     * instead of getting the driver's error. */
    char tenant[GL_LEASE_TENANT_MAX];
    snprintf(tenant, sizeof tenant, "%s", l->tenant);
    gl_lease_admit_context_refused(d, l->gpu_index);
    gl_daemon_end_lease(d, l, GPULEASE_INTERNAL, "no room for the lease's CUDA context");
    gl_lease_table_remove(d->leases, l);
    alloc_wait(d, c->req, &c->alloc, tenant);
  } else if (resp.status != GPULEASE_OK) {
    if (l) {
      gl_daemon_end_lease(d, l, GPULEASE_INTERNAL, "lease setup failed");
      gl_lease_table_remove(d->leases, l);
    }
    gl_ops_reply_error(c->req, GL_OP_LEASE_ALLOC, (gpulease_status)resp.status, "%.*s",
                (int)resp.msg_len, resp.msg);
  } else if (!l) {
    gl_ops_reply_error(c->req, GL_OP_LEASE_ALLOC, GPULEASE_INTERNAL, "lease vanished during setup");
  } else if (gl_dreq_orphaned(c->req)) {
    GL_INFO("lease %" PRIu64 ": client left before the grant; freeing it", l->id);
    gl_daemon_end_lease(d, l, GPULEASE_INTERNAL, "client gone");
    gl_lease_table_remove(d->leases, l);
    gl_dreq_reply(c->req, NULL, 0);
  } else {
    gl_lease_table_activate(d->leases, l, gl_mono_ns());
    GL_INFO("lease %" PRIu64 ": %" PRIu64 " bytes on GPU %" PRIu32 " for %" PRIu32 " s", l->id,
            l->vram_bytes, l->gpu_index, l->ttl_s);
    uint8_t secret[GPULEASE_SECRET_BYTES];
    gl_access_mint(&d->cap_key, l, GPULEASE_RIGHTS_ALL, 0, 0, secret);
    gl_metrics_lease_acquired(d->metrics);
    gl_ops_reply_lease(c->req, GL_OP_LEASE_ALLOC, l, secret);
  }
  free(c);
}

/* A partition lease's MIG instance: the smallest free one that holds
 * vram_bytes, on *gpu (or any GPU in MIG mode for GPULEASE_ANY_GPU; *gpu is
 * then set). A GPU without instances is left to the lease table to refuse.
 * 0, or -1 when it replied (no free instance fits). */
static int pick_instance(gl_daemon *d, gl_dreq *req, uint64_t vram_bytes, uint32_t *gpu,
                         int *mig) {
  uint32_t best_gpu = 0;
  int best = -1;
  unsigned instances = 0, free_ones = 0;
  for (uint32_t i = 0; i < d->node.gpu_count; i++) {
    if (*gpu != GPULEASE_ANY_GPU && *gpu != i) continue;
    const gl_node_gpu *g = &d->node.gpus[i];
    for (unsigned k = 0; k < g->mig_count; k++) {
      instances++;
      if (d->mig_lease[i][k]) continue;
      free_ones++;
      if (g->migs[k].memory_bytes < vram_bytes) continue;
      if (best < 0 || g->migs[k].memory_bytes < d->node.gpus[best_gpu].migs[best].memory_bytes) {
        best_gpu = i;
        best = (int)k;
      }
    }
  }
  if (instances == 0) return 0; /* the table says why */
  if (best < 0) {
    gl_ops_reply_error(req, GL_OP_LEASE_ALLOC, GPULEASE_CAPACITY_EXCEEDED,
                "no free MIG instance holds %" PRIu64 " bytes (%u of %u instance%s free)",
                vram_bytes, free_ones, instances, instances == 1 ? "" : "s");
    return -1;
  }
  *gpu = best_gpu;
  *mig = best;
  return 0;
}

/* A LEASE_ALLOC waiting for a CUDA context (lease_admit.h). */
typedef struct alloc_waiter {
  gl_daemon *d;
  gl_dreq *req;
  gl_lease_alloc_req a;
  uint32_t gpu; /* GL_CTX_ADMIT_ANY for any */
  char tenant[GL_LEASE_TENANT_MAX];
} alloc_waiter;

static void op_lease_alloc(gl_daemon *d, gl_dreq *req, const gl_lease_alloc_req *a,
                           const char *tenant, bool admitted);

static bool alloc_fresh(const gl_lease_alloc_req *a) {
  return a->printf_fifo_bytes || a->malloc_heap_bytes;
}

/* The waiter's end (ctx_admit.h): room came, or its deadline passed. */
static void alloc_wait_done(void *ctx, bool admitted) {
  alloc_waiter *w = ctx;
  gl_daemon *d = w->d;
  if (gl_dreq_orphaned(w->req)) {
    gl_dreq_reply(w->req, NULL, 0); /* the client left while it waited */
  } else if (d->stopping) {
    gl_ops_reply_error(w->req, GL_OP_LEASE_ALLOC, GPULEASE_BUSY,
                       "the daemon is shutting down: no lease was granted");
  } else if (admitted) {
    op_lease_alloc(d, w->req, &w->a, w->tenant, true);
  } else {
    char fig[512];
    gl_lease_admit_describe(d, w->gpu, fig, sizeof fig);
    gl_ops_reply_error(w->req, GL_OP_LEASE_ALLOC, GPULEASE_CAPACITY_EXCEEDED,
                       "no isolated CUDA context came free within the %u ms a request waits "
                       "(--isolated-queue-ms): %s",
                       gl_ctx_admit_queue_ms(d->ctx_admit), fig);
  }
  free(w);
}

/* Queues a LEASE_ALLOC that found no room for its context, or answers it
 * CAPACITY_EXCEEDED with the figures when it cannot wait. A lease that
 * needs a fresh context has a spare ended to make room for it. */
static void alloc_wait(gl_daemon *d, gl_dreq *req, const gl_lease_alloc_req *a,
                       const char *tenant) {
  uint32_t gpu = a->gpu_index == GPULEASE_ANY_GPU ? GL_CTX_ADMIT_ANY : a->gpu_index;
  bool fresh = alloc_fresh(a);
  const char *why = "daemon out of memory";
  alloc_waiter *w = calloc(1, sizeof *w);
  if (w) {
    w->d = d;
    w->req = req;
    w->a = *a;
    w->gpu = gpu;
    snprintf(w->tenant, sizeof w->tenant, "%s", tenant ? tenant : "");
    if (gl_ctx_admit_wait(d->ctx_admit, w->tenant, gpu, fresh, alloc_wait_done, w, &why) == 0) {
      GL_DEBUG("LEASE_ALLOC waits for an isolated CUDA context (%u waiting)",
               gl_ctx_admit_waiting(d->ctx_admit, GL_CTX_ADMIT_ANY));
      for (uint32_t g = 0; fresh && d->pool && g < d->node.gpu_count; g++)
        if ((gpu == GL_CTX_ADMIT_ANY || gpu == g) && !gl_pool_has_idle(d->pool, g, true) &&
            gl_pool_end_spare(d->pool, g))
          break;
      return;
    }
    free(w);
  }
  gl_ctx_admit_count_refusal(d->ctx_admit);
  char fig[512];
  gl_lease_admit_describe(d, gpu, fig, sizeof fig);
  gl_ops_reply_error(req, GL_OP_LEASE_ALLOC, GPULEASE_CAPACITY_EXCEEDED,
                     "no isolated CUDA context is free and the request cannot wait (%s): %s", why,
                     fig);
}

static void op_lease_alloc(gl_daemon *d, gl_dreq *req, const gl_lease_alloc_req *a,
                           const char *tenant, bool admitted) {
  char err[512];
  if (d->node.gpu_count == 0) {
    gl_ops_reply_error(req, GL_OP_LEASE_ALLOC, GPULEASE_NO_DEVICE, "%s", d->node.no_gpu_reason);
    return;
  }
  if (a->lease_class == GPULEASE_CLASS_SHARED && (a->printf_fifo_bytes || a->malloc_heap_bytes)) {
    gl_ops_reply_error(req, GL_OP_LEASE_ALLOC, GPULEASE_INVALID_ARGUMENT,
                "printf_fifo_bytes and malloc_heap_bytes are a context's; shared leases share "
                "one context and take its defaults (leave them 0)");
    return;
  }
  /* The context's heap and printf FIFO are VRAM beyond the region: past
   * the defaults, the lease must hold as much VRAM as they take, so what a
   * lease makes the GPU hold stays within twice its size (security.md). */
  uint64_t fifo = a->printf_fifo_bytes, heap = a->malloc_heap_bytes;
  uint64_t extra = (fifo > DEFAULT_PRINTF_FIFO_BYTES ? fifo - DEFAULT_PRINTF_FIFO_BYTES : 0) +
                   (heap > DEFAULT_MALLOC_HEAP_BYTES ? heap - DEFAULT_MALLOC_HEAP_BYTES : 0);
  if (extra > a->vram_bytes) {
    gl_ops_reply_error(req, GL_OP_LEASE_ALLOC, GPULEASE_CAPACITY_EXCEEDED,
                       "printf_fifo_bytes %llu and malloc_heap_bytes %llu take %llu bytes of the "
                       "context's VRAM beyond the defaults (64 KiB, 1 MiB), more than the lease's "
                       "vram_bytes %llu: lease at least that much VRAM",
                       (unsigned long long)fifo, (unsigned long long)heap,
                       (unsigned long long)extra, (unsigned long long)a->vram_bytes);
    return;
  }
  uint32_t gpu_index = a->gpu_index;
  int mig = -1;
  if (a->lease_class == GPULEASE_CLASS_PARTITION &&
      pick_instance(d, req, a->vram_bytes, &gpu_index, &mig) != 0)
    return;
  gl_lease *l;
  gpulease_status st = gl_lease_table_alloc(d->leases, gl_mono_ns(), gpu_index,
                                            a->lease_class, a->vram_bytes, a->ttl_s, tenant, &l,
                                            err, sizeof err);
  /* A shared context is one tenant's: a kernel of one shared lease can
   * address the others' memory. */
  if (st == GPULEASE_OK && l->lease_class == GPULEASE_CLASS_SHARED) {
    uint32_t gpu = l->gpu_index;
    if (gl_lease_table_shared_owner(d->leases, gpu, tenant, l->id)) {
      gl_lease_table_remove(d->leases, l);
      gl_ops_reply_error(req, GL_OP_LEASE_ALLOC, GPULEASE_BUSY,
                         "GPU %" PRIu32 "'s shared CUDA context serves another tenant's shared "
                         "leases; shared leases of different tenants never share a context "
                         "(ask for an isolated lease, or another GPU)",
                         gpu);
      return;
    }
  }
  if (st != GPULEASE_OK) {
    gl_ops_reply_error(req, GL_OP_LEASE_ALLOC, st, "%s", err);
    return;
  }
  /* A context of its own: within its GPU's limit, or the request waits
   * (lease_admit.h). One that did not wait yet queues behind the waiters. */
  if (l->lease_class != GPULEASE_CLASS_SHARED && mig < 0) {
    bool fresh = alloc_fresh(a);
    bool behind = !admitted && gl_ctx_admit_waiting(d->ctx_admit, l->gpu_index) > 0;
    if (behind || !gl_lease_admit_room(d, l->gpu_index, fresh)) {
      uint32_t other = behind || a->gpu_index != GPULEASE_ANY_GPU
                           ? UINT32_MAX
                           : gl_lease_admit_find_room(d, l->gpu_index, fresh);
      gl_lease_table_remove(d->leases, l);
      l = NULL;
      if (other != UINT32_MAX &&
          gl_lease_table_alloc(d->leases, gl_mono_ns(), other, a->lease_class, a->vram_bytes,
                               a->ttl_s, tenant, &l, err, sizeof err) != GPULEASE_OK)
        l = NULL;
      if (!l) {
        alloc_wait(d, req, a, tenant);
        return;
      }
    }
  }
  /* the context holds them beyond the region */
  gl_lease_table_set_held(d->leases, l, extra, l->held_module_bytes, l->held_local_bytes);
  /* NVML's figure, read off the main loop (vram_watch.h); a refusal on a
   * figure nobody asked for lately is confirmed with a reading now. */
  bool stale = false;
  uint64_t free_now = gl_vram_watch_free(d->vram_watch, l->gpu_index, UINT64_MAX, &stale);
  if (l->vram_bytes > free_now && stale)
    free_now = gl_vram_watch_read_now(d->vram_watch, l->gpu_index, UINT64_MAX);
  if (l->vram_bytes > free_now) {
    gl_ops_reply_error(req, GL_OP_LEASE_ALLOC, GPULEASE_CAPACITY_EXCEEDED,
                "GPU %" PRIu32 " has %" PRIu64 " bytes of VRAM free, %" PRIu64 " requested",
                l->gpu_index, free_now, l->vram_bytes);
    gl_lease_table_remove(d->leases, l);
    return;
  }
  gl_tenant scratch;
  const gl_quota_limits *limits = gl_daemon_limits(d, tenant, &scratch);
  gl_quota_charge charge;
  st = gl_quota_lease_begin(d->quota, tenant, limits, l->vram_bytes, l->ttl_s, gl_mono_ns(),
                            &charge, err, sizeof err);
  if (st != GPULEASE_OK) {
    gl_lease_table_remove(d->leases, l);
    gl_ops_reply_error(req, GL_OP_LEASE_ALLOC, st, "%s", err);
    return;
  }
  call *c = call_new(d, req, GL_OP_LEASE_ALLOC, l->id);
  if (c) c->alloc = *a;
  gl_lease_auth auth = {.lease_id = l->id};
  gl_access_mint(&d->cap_key, l, GPULEASE_RIGHTS_ALL, 0, 0, auth.secret);
  gl_bulk *bulk = gl_bulk_new(&auth, (gl_bulk_budget){&d->pinned_bytes, d->cfg.max_pinned_bytes});
  lease_rt *rt = c && bulk ? gl_lease_rt_new(d, l, a, mig, &charge, bulk) : NULL;
  if (!rt) {
    gl_bulk_del(bulk);
    free(c);
    gl_quota_lease_end(d->quota, tenant, l->vram_bytes, &charge, gl_mono_ns());
    gl_lease_table_remove(d->leases, l);
    gl_ops_reply_error(req, GL_OP_LEASE_ALLOC, GPULEASE_INTERNAL, "daemon out of memory");
    return;
  }
  if (start_worker(d, l, rt, alloc_done, c, err, sizeof err) != 0) {
    /* A shared context still ending after a fault is a moment's wait. */
    gpulease_status st2 = rt->shared && gl_shared_ending(d->shared, l->gpu_index)
                              ? GPULEASE_BUSY
                              : GPULEASE_INTERNAL;
    free(c);
    gl_daemon_end_lease(d, l, GPULEASE_INTERNAL, err);
    gl_lease_table_remove(d->leases, l);
    gl_ops_reply_error(req, GL_OP_LEASE_ALLOC, st2, "%s", err);
  }
}

/* ======================================================================
 * LEASE_RENEW, LEASE_QUERY, LEASE_FREE
 * ==================================================================== */

/* Checks the request's lease secret for the rights its op needs (access.h);
 * on failure replies and returns NULL. */
gl_lease *gl_ops_auth(gl_daemon *d, gl_dreq *req, const gl_request *r, const gl_lease_auth *a) {
  gl_lease *l = NULL;
  char err[512];
  gpulease_status st =
      gl_access_check(&d->cap_key, d->leases, gl_dreq_identity(req), r->op,
                      gl_access_op_rights(r), a, gl_unix_s(), &l, NULL, err, sizeof err);
  if (st == GPULEASE_OK) return gl_ops_lease_tenant_ok(d, req, r->op, l) ? l : NULL;
  gl_ops_reply_error(req, r->op, st, "%s", err);
  return NULL;
}

void gl_ops_lease_renew(gl_daemon *d, gl_dreq *req, const gl_request *r) {
  const gl_lease_renew_req *rn = &r->u.renew;
  gl_lease *l = gl_ops_auth(d, req, r, &rn->auth);
  if (!l) return;
  char err[512];
  uint64_t now = gl_mono_ns();
  /* The lease table checks the daemon's TTL limit first, the quota then. */
  gpulease_status st = gl_lease_table_renew_check(d->leases, rn->ttl_s, err, sizeof err);
  lease_rt *rt = gl_lease_rt_of(l);
  if (st == GPULEASE_OK && rt && rt->charged) {
    gl_tenant scratch;
    gl_quota_charge charge = rt->charge;
    st = gl_quota_lease_renew(d->quota, l->tenant, gl_daemon_limits(d, l->tenant, &scratch),
                              rn->ttl_s, &charge, now, err, sizeof err);
    if (st == GPULEASE_OK) rt->charge = charge;
  }
  if (st == GPULEASE_OK) st = gl_lease_table_renew(d->leases, l, now, rn->ttl_s, err, sizeof err);
  if (st != GPULEASE_OK) {
    gl_ops_reply_error(req, GL_OP_LEASE_RENEW, st, "%s", err);
    return;
  }
  if (!(rn->flags & GL_RENEW_F_ROTATE)) {
    gl_ops_reply_lease(req, GL_OP_LEASE_RENEW, l, NULL);
    return;
  }
  /* Rotation: every secret of an older generation is void from now on. */
  l->generation++;
  l->has_verified = false;
  uint8_t secret[GPULEASE_SECRET_BYTES];
  gl_access_mint(&d->cap_key, l, GPULEASE_RIGHTS_ALL, 0, 0, secret);
  GL_INFO("lease %" PRIu64 ": secrets rotated to generation %" PRIu32, l->id, l->generation);
  gl_ops_reply_lease(req, GL_OP_LEASE_RENEW, l, secret);
}

static void op_lease_query(gl_daemon *d, gl_dreq *req, const gl_request *r) {
  gl_lease *l = gl_ops_auth(d, req, r, &r->u.auth);
  if (l) gl_ops_reply_lease(req, GL_OP_LEASE_QUERY, l, NULL);
}

static void op_lease_free(gl_daemon *d, gl_dreq *req, const gl_request *r) {
  gl_lease *l = gl_ops_auth(d, req, r, &r->u.auth);
  if (!l) return;
  char why[128];
  snprintf(why, sizeof why, "lease %" PRIu64 " was freed while this request was running", l->id);
  GL_INFO("lease %" PRIu64 " freed by its holder", l->id);
  gl_metrics_lease_dropped(d->metrics, GL_DROP_FREED);
  gl_daemon_end_lease(d, l, GPULEASE_LEASE_EXPIRED, why);
  gl_lease_table_remove(d->leases, l);
  gl_response resp = {.op = GL_OP_LEASE_FREE, .status = GPULEASE_OK};
  gl_buf b;
  gl_buf_init(&b);
  gl_response_encode(&resp, &b);
  gl_ops_reply_bytes(req, &b);
}

/* ======================================================================
 * GPU_SUBMIT
 * ==================================================================== */

static void respawn_done(void *ctx, gpulease_status status, const uint8_t *msg, size_t len,
                         const char *why) {
  uint64_t *id = ctx;
  gl_header h;
  if (status != GPULEASE_OK)
    GL_WARN("lease %" PRIu64 ": new worker failed: %s", *id, why);
  else if (gl_header_decode(msg, len, &h) == GPULEASE_OK && h.status != GPULEASE_OK)
    GL_WARN("lease %" PRIu64 ": new worker could not set up its context (%s)", *id,
            gpulease_status_name(h.status));
  free(id);
}

/* Makes sure lease l has a live worker: after a fatal device error the last
 * one is exiting or gone, and the lease gets a fresh context. 0, or -1 with
 * err. */
static int ensure_worker(gl_daemon *d, gl_lease *l, char *err, size_t errlen) {
  lease_rt *rt = gl_lease_rt_of(l);
  if (rt->shared) { /* never restarted: a lost shared context ends its leases */
    if (rt->w && gl_wproc_usable(rt->w)) return 0;
    snprintf(err, errlen, "the shared CUDA context of lease %" PRIu64 " was lost", l->id);
    return -1;
  }
  if (rt->w && !gl_wproc_usable(rt->w)) { /* exiting after a fatal device error */
    /* Detach first: the kill hands its unrun calls back (BUSY) and their
     * callbacks come here again to start the fresh worker. */
    gl_wproc *old = rt->w;
    rt->w = NULL;
    gl_wproc_kill(old, GPULEASE_BUSY, "the lease's worker ended");
  }
  if (rt->w) return 0;
  uint64_t *id = malloc(sizeof *id);
  if (!id) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  *id = l->id;
  if (start_worker(d, l, rt, respawn_done, id, err, errlen) != 0) {
    free(id);
    return -1;
  }
  return 0;
}

static void submit_done(void *ctx, gpulease_status status, const uint8_t *msg, size_t len,
                        const char *why) {
  call *c = ctx;
  if (status == GPULEASE_BUSY && !c->resent) {
    /* The worker died of an earlier request's device fault before reading
     * this one, which therefore never ran: run it on a fresh worker. */
    gl_lease *l = gl_lease_table_find(c->d->leases, c->lease_id);
    char err[512];
    c->resent = true;
    if (gl_lease_rt_of(l) && ensure_worker(c->d, l, err, sizeof err) == 0 &&
        gl_wproc_call(gl_lease_rt_of(l)->w, msg, len, submit_done, c) == 0)
      return;
    status = GPULEASE_INTERNAL;
  }
  if (status != GPULEASE_OK) {
    gl_ops_reply_error(c->req, GL_OP_GPU_SUBMIT, status, "%s", why);
  } else {
    /* The worker's reply is a complete GPU_SUBMIT response; count
     * successes and pass it through unchanged. */
    gl_header h;
    if (gl_header_decode(msg, len, &h) == GPULEASE_OK && h.status == GPULEASE_OK) {
      gl_lease *l = gl_lease_table_find(c->d->leases, c->lease_id);
      if (l) l->submits++;
    }
    gl_dreq_reply(c->req, msg, len);
  }
  free(c);
}

static void op_submit(gl_daemon *d, gl_dreq *req, const gl_request *r, const uint8_t *msg,
                      size_t len) {
  const gl_submit_req *s = &r->u.submit;
  gl_lease *l = gl_ops_auth(d, req, r, &s->auth);
  if (!l) return;
  /* room for the kernel output block when it is asked for (flags bit 3) */
  size_t kout_room = s->flags & GL_SUBMIT_F_KOUT ? GL_KOUT_MAX + 13 : 0;
  if (s->output_size > d->cfg.max_message_bytes - 4096 - kout_room) {
    gl_ops_reply_error(req, GL_OP_GPU_SUBMIT, GPULEASE_INVALID_ARGUMENT,
                "output_size %" PRIu64 " exceeds the daemon's message limit of %zu bytes%s",
                s->output_size, d->cfg.max_message_bytes - 4096 - kout_room,
                kout_room ? " (with room for the kernel output)" : "");
    return;
  }
  char err[512];
  if (ensure_worker(d, l, err, sizeof err) != 0) {
    gl_ops_reply_error(req, GL_OP_GPU_SUBMIT, GPULEASE_INTERNAL, "cannot restart the lease's worker: %s",
                err);
    return;
  }
  call *c = call_new(d, req, GL_OP_GPU_SUBMIT, l->id);
  if (!c || gl_wproc_call_req(gl_lease_rt_of(l)->w, msg, len, r, submit_done, c) != 0) {
    free(c);
    gl_ops_reply_error(req, GL_OP_GPU_SUBMIT, GPULEASE_INTERNAL, "cannot reach the lease's worker");
  }
}

/* ======================================================================
 * Session ops (SESSION_OPEN ... LAUNCH)
 *
 * The daemon authenticates the lease and passes the request to the lease's
 * worker unchanged; the worker checks sessions, handles and order, and its
 * reply goes back unchanged.
 * ==================================================================== */

/* Keeps the tenant's count of live sessions: a SESSION_OPEN counted ahead
 * becomes a session or is given back; an answered SESSION_CLOSE (alone or
 * in a BATCH) gives one back. resp: the worker's answer, or NULL when the
 * op never ran. */
static void quota_settle(call *c, gl_lease *l, const uint8_t *resp, size_t len) {
  if (!c->quota_session && !c->closes) return; /* most session ops */
  lease_rt *rt = gl_lease_rt_of(l);
  gl_header h;
  bool ok = resp && gl_header_decode(resp, len, &h) == GPULEASE_OK && h.status == GPULEASE_OK;
  if (c->quota_session) {
    c->quota_session = false;
    if (ok && rt) rt->sessions++;
    else if (l) gl_quota_session_end(c->d->quota, l->tenant);
    return;
  }
  if (!ok || !rt) return;
  unsigned closed = 0;
  if (c->op == GL_OP_SESSION_CLOSE) {
    closed = 1;
  } else { /* a BATCH with a SESSION_CLOSE: which of them were answered OK */
    gl_response *br = malloc(sizeof *br);
    char err[128];
    if (br && gl_response_decode(resp, len, len, br, err, sizeof err) == GPULEASE_OK &&
        br->status == GPULEASE_OK) {
      size_t pos = 0;
      const uint8_t *m;
      size_t n;
      while (gl_batch_next(br->u.batch.replies, br->u.batch.replies_len, &pos, &m, &n))
        closed += gl_header_decode(m, n, &h) == GPULEASE_OK && h.op == GL_OP_SESSION_CLOSE &&
                  h.status == GPULEASE_OK;
    }
    free(br);
  }
  for (; closed && rt->sessions; closed--, rt->sessions--)
    gl_quota_session_end(c->d->quota, l->tenant);
}

static void session_done(void *ctx, gpulease_status status, const uint8_t *msg, size_t len,
                         const char *why) {
  call *c = ctx;
  gl_lease *l = gl_lease_table_find(c->d->leases, c->lease_id);
  lease_rt *rt = gl_lease_rt_of(l);
  if (status == GPULEASE_OK) {
    uint64_t id;
    /* A new session's id is no ended one's. */
    if (c->op == GL_OP_SESSION_OPEN && rt && gl_response_peek_session_id(msg, len, &id))
      gl_ended_remove(&rt->ended, id);
    quota_settle(c, l, msg, len);
    gl_dreq_reply(c->req, msg, len);
    free(c);
    return;
  }
  if (status == GPULEASE_BUSY) {
    /* The worker exited after a device fault without running this op. */
    gl_request *r = malloc(sizeof *r);
    char err[512];
    if (r && rt &&
        gl_request_decode(msg, len, len, r, NULL, err, sizeof err) == GPULEASE_OK) {
      if (r->op == GL_OP_SESSION_OPEN && !c->resent) { /* open it on a fresh worker */
        c->resent = true;
        if (ensure_worker(c->d, l, err, sizeof err) == 0 &&
            gl_wproc_call(rt->w, msg, len, session_done, c) == 0) {
          free(r);
          return;
        }
      } else if (gl_lease_rt_answer_if_ended(rt, c->req, r)) {
        free(r);
        free(c);
        return;
      }
    }
    free(r);
    quota_settle(c, l, NULL, 0); /* the op did not run */
    gl_ops_reply_error(c->req, c->op, GPULEASE_NOT_FOUND,
                "the lease's worker ended after a device fault; its sessions are gone");
  } else {
    quota_settle(c, l, NULL, 0);
    gl_ops_reply_error(c->req, c->op, status, "%s", why);
  }
  free(c);
}

/* Whether a BATCH holds a SESSION_CLOSE (its answer then ends sessions in
 * the quota); a walk of the entries' headers. */
static bool batch_has_close(const gl_batch_req *b) {
  size_t pos = 0;
  const uint8_t *m;
  size_t n;
  while (gl_batch_next(b->ops, b->ops_len, &pos, &m, &n))
    if (gl_message_peek_op(m, n) == GL_OP_SESSION_CLOSE) return true;
  return false;
}

static void op_session(gl_daemon *d, gl_dreq *req, const gl_request *r, const uint8_t *msg,
                       size_t len) {
  gl_lease *l = gl_ops_auth(d, req, r, gl_request_auth(r));
  if (!l) return;
  lease_rt *rt = gl_lease_rt_of(l);
  char err[512];
  bool quota_session = false;
  if (r->op == GL_OP_SESSION_OPEN) {
    if (ensure_worker(d, l, err, sizeof err) != 0) {
      gl_ops_reply_error(req, r->op, GPULEASE_INTERNAL, "cannot restart the lease's worker: %s", err);
      return;
    }
    gl_tenant scratch;
    gpulease_status qs = gl_quota_session_begin(
        d->quota, l->tenant, gl_daemon_limits(d, l->tenant, &scratch), gl_mono_ns(), err,
        sizeof err);
    if (qs != GPULEASE_OK) {
      gl_ops_reply_error(req, r->op, qs, "%s", err);
      return;
    }
    quota_session = true;
  } else if (gl_lease_rt_answer_if_ended(rt, req, r)) {
    return;
  } else if (!rt->w || !gl_wproc_usable(rt->w)) {
    gl_ops_reply_error(req, r->op, GPULEASE_NOT_FOUND,
                "no session %" PRIu64 " on lease %" PRIu64
                " (the lease's worker ended; its sessions are gone)",
                gl_request_session(r)->session_id, l->id);
    return;
  }
  if ((r->op == GL_OP_MEM_WRITE_SHM || r->op == GL_OP_MEM_READ_SHM) &&
      gl_bulk_owns_segment(rt->bulk, r->u.mem_shm.segment)) {
    gl_ops_reply_error(req, r->op, GPULEASE_INVALID_HANDLE,
                "segment 0x%016" PRIx64 " is not one of the lease's (SHM_ATTACH)",
                r->u.mem_shm.segment);
    return;
  }
  /* Large QUIC transfers: through the lease's shared arena. */
  if ((r->op == GL_OP_MEM_WRITE || r->op == GL_OP_MEM_READ) &&
      gl_bulk_forward(rt->bulk, rt->w, req, r))
    return;
  call *c = call_new(d, req, r->op, l->id);
  if (c) {
    c->quota_session = quota_session;
    c->closes = r->op == GL_OP_SESSION_CLOSE ||
                (r->op == GL_OP_BATCH && batch_has_close(&r->u.batch));
  }
  if (!c || gl_wproc_call_req(rt->w, msg, len, r, session_done, c) != 0) {
    free(c);
    if (quota_session) gl_quota_session_end(d->quota, l->tenant);
    gl_ops_reply_error(req, r->op, GPULEASE_INTERNAL, "cannot reach the lease's worker");
  }
}

/* ======================================================================
 * The local socket: NODE_INFO, SHM_ATTACH, SHM_DETACH
 * ==================================================================== */

/* POOL_INFO: the warm workers of each GPU (a size of 0 without a pool). */
static void op_pool_info(gl_daemon *d, gl_dreq *req) {
  gl_response r = {.op = GL_OP_POOL_INFO, .status = GPULEASE_OK, .msg = ""};
  gl_pool_info *p = &r.u.pool_info;
  p->gpu_count = (uint16_t)d->node.gpu_count;
  for (uint32_t i = 0; i < d->node.gpu_count && i < GPULEASE_MAX_GPUS; i++) {
    p->gpus[i].index = i;
    p->gpus[i].target =
        (uint16_t)(d->pool && !d->node.gpus[i].mig_count ? d->cfg.warm_workers : 0);
    p->gpus[i].ready = (uint16_t)gl_pool_ready(d->pool, i);
    p->gpus[i].starting = (uint16_t)gl_pool_starting(d->pool, i);
  }
  gl_buf b;
  gl_buf_init(&b);
  if (gl_response_encode(&r, &b) != GPULEASE_OK) b.oom = true;
  gl_ops_reply_bytes(req, &b);
}

/* NET_INFO: the stripe ports (none without network threads). */
static void op_net_info(gl_daemon *d, gl_dreq *req) {
  gl_response r = {.op = GL_OP_NET_INFO, .status = GPULEASE_OK, .msg = ""};
  unsigned n = gl_shards_count(d->shards);
  r.u.net_info.stripe_count = (uint8_t)n;
  for (unsigned i = 0; i < n; i++) r.u.net_info.stripe_ports[i] = gl_shards_port(d->shards, i);
  gl_buf b;
  gl_buf_init(&b);
  if (gl_response_encode(&r, &b) != GPULEASE_OK) b.oom = true;
  gl_ops_reply_bytes(req, &b);
}

static void op_node_info(gl_daemon *d, gl_dreq *req) {
  gl_response r = {.op = GL_OP_NODE_INFO, .status = GPULEASE_OK, .msg = ""};
  snprintf(r.u.node_info.local_socket, sizeof r.u.node_info.local_socket, "%s",
           d->local ? d->cfg.local_socket : "");
  memcpy(r.u.node_info.boot_id, d->boot_id, sizeof d->boot_id);
  gl_buf b;
  gl_buf_init(&b);
  gl_response_encode(&r, &b);
  gl_ops_reply_bytes(req, &b);
}

/* A call that attaches or detaches a segment: what to record on success. */
typedef struct seg_call {
  gl_daemon *d;
  gl_dreq *req;
  uint16_t op;
  uint64_t lease_id;
  uint64_t size_bytes; /* SHM_ATTACH */
  uint64_t conn;       /* SHM_ATTACH */
  uint64_t segment;    /* SHM_DETACH */
} seg_call;

static void seg_done(void *ctx, gpulease_status status, const uint8_t *msg, size_t len,
                     const char *why);

/* Asks the lease's worker to detach a segment nobody can use any more (its
 * local connection closed). The daemon stops counting it at once, whatever
 * the worker answers. */
static void seg_detach_orphan(gl_daemon *d, gl_lease *l, uint64_t id, uint64_t conn) {
  lease_rt *rt = gl_lease_rt_of(l);
  GL_DEBUG("local connection %" PRIu64 " closed: detaching segment 0x%016" PRIx64
           " of lease %" PRIu64, conn, id, l->id);
  gl_request q = {.op = GL_OP_SHM_DETACH};
  q.u.shm_detach.auth.lease_id = l->id;
  gl_access_mint(&d->cap_key, l, GPULEASE_RIGHTS_ALL, 0, 0, q.u.shm_detach.auth.secret);
  q.u.shm_detach.segment = id;
  gl_buf b;
  gl_buf_init(&b);
  seg_call *c = calloc(1, sizeof *c);
  if (c && rt->w && gl_request_encode(&q, &b) == GPULEASE_OK) {
    c->d = d;
    c->op = GL_OP_SHM_DETACH;
    c->lease_id = l->id;
    c->segment = id;
    if (gl_wproc_call(rt->w, b.data, b.len, seg_done, c) == 0) c = NULL;
  }
  free(c);
  gl_buf_free(&b);
  gl_lease_rt_seg_forget(rt, id);
}

static void seg_done(void *ctx, gpulease_status status, const uint8_t *msg, size_t len,
                     const char *why) {
  seg_call *c = ctx;
  gl_lease *l = gl_lease_table_find(c->d->leases, c->lease_id);
  lease_rt *rt = gl_lease_rt_of(l);
  gl_response resp;
  bool ok = status == GPULEASE_OK &&
            gl_response_decode(msg, len, len, &resp, NULL, 0) == GPULEASE_OK &&
            resp.status == GPULEASE_OK;
  if (c->op == GL_OP_SHM_ATTACH) {
    if (ok && rt && rt->nsegs < MAX_SEGS) {
      rt->segs[rt->nsegs++] = (seg_rec){resp.u.handle, c->size_bytes, c->conn};
      /* The connection closed while the worker attached: nobody will detach
       * the segment, so the daemon does it now. */
      if (c->req && gl_dreq_orphaned(c->req))
        seg_detach_orphan(c->d, l, resp.u.handle, c->conn);
    } else if (c->d) {
      c->d->pinned_bytes -= c->size_bytes; /* reserved when the call was made */
    }
  } else if (ok && rt) {
    gl_lease_rt_seg_forget(rt, c->segment);
  }
  if (c->req) {
    if (status == GPULEASE_OK) gl_dreq_reply(c->req, msg, len);
    else gl_ops_reply_error(c->req, c->op, status == GPULEASE_BUSY ? GPULEASE_INTERNAL : status, "%s",
                     why ? why : "the lease's worker ended");
  }
  free(c);
}

static void op_shm(gl_daemon *d, gl_dreq *req, const gl_request *r, const uint8_t *msg,
                   size_t len) {
  const gl_lease_auth *auth =
      r->op == GL_OP_SHM_ATTACH ? &r->u.shm_attach.auth : &r->u.shm_detach.auth;
  int fd = r->op == GL_OP_SHM_ATTACH ? gl_dreq_take_fd(req) : -1;
  if (r->op == GL_OP_SHM_ATTACH && !gl_dreq_is_local(req)) {
    gl_ops_reply_error(req, r->op, GPULEASE_UNSUPPORTED,
                "SHM_ATTACH hands over a file descriptor: it works only on the daemon's local "
                "socket (NODE_INFO says where it is)");
    return;
  }
  gl_lease *l = gl_ops_auth(d, req, r, auth);
  lease_rt *rt = gl_lease_rt_of(l);
  char err[512];
  if (!l) {
    if (fd >= 0) close(fd);
    return;
  }
  if (r->op == GL_OP_SHM_ATTACH) {
    uint64_t size = r->u.shm_attach.size_bytes;
    struct stat st;
    int seals = fd >= 0 ? fcntl(fd, F_GET_SEALS) : -1;
    const char *bad = fd < 0 ? "no file descriptor came with SHM_ATTACH"
                      : fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)
                          ? "the descriptor is not a regular file (use memfd_create)"
                      : (uint64_t)st.st_size < size ? "the file is smaller than size_bytes"
                      : seals < 0 || !(seals & F_SEAL_SHRINK)
                          ? "the file is not sealed against shrinking (F_SEAL_SHRINK), so the "
                            "daemon could fault on it"
                          : NULL;
    if (bad) {
      if (fd >= 0) close(fd);
      gl_ops_reply_error(req, r->op, GPULEASE_INVALID_ARGUMENT, "%s", bad);
      return;
    }
    if (size > d->cfg.max_pinned_bytes - d->pinned_bytes || rt->nsegs >= MAX_SEGS) {
      close(fd);
      gl_ops_reply_error(req, r->op, GPULEASE_CAPACITY_EXCEEDED,
                  "%" PRIu64 " bytes of shared memory asked; the daemon page-locks at most %" PRIu64
                  " bytes and %" PRIu64 " are in use (lease %" PRIu64 ": %zu of %d segments)",
                  size, (uint64_t)d->cfg.max_pinned_bytes, d->pinned_bytes, l->id, rt->nsegs,
                  MAX_SEGS);
      return;
    }
  }
  if (r->op == GL_OP_SHM_DETACH && gl_bulk_owns_segment(rt->bulk, r->u.shm_detach.segment)) {
    gl_ops_reply_error(req, r->op, GPULEASE_INVALID_HANDLE,
                "segment 0x%016" PRIx64 " is not one of the lease's (SHM_ATTACH)",
                r->u.shm_detach.segment);
    return;
  }
  if (ensure_worker(d, l, err, sizeof err) != 0) {
    if (fd >= 0) close(fd);
    gl_ops_reply_error(req, r->op, GPULEASE_INTERNAL, "cannot restart the lease's worker: %s", err);
    return;
  }
  seg_call *c = calloc(1, sizeof *c);
  if (c) {
    c->d = d;
    c->req = req;
    c->op = r->op;
    c->lease_id = l->id;
    c->conn = gl_dreq_conn(req);
    if (r->op == GL_OP_SHM_ATTACH) c->size_bytes = r->u.shm_attach.size_bytes;
    else c->segment = r->u.shm_detach.segment;
  }
  if (!c || gl_wproc_call_fd(rt->w, msg, len, fd, seg_done, c) != 0) {
    free(c);
    gl_ops_reply_error(req, r->op, GPULEASE_INTERNAL, "cannot reach the lease's worker");
  } else if (r->op == GL_OP_SHM_ATTACH) {
    d->pinned_bytes += c->size_bytes; /* reserved until the worker answers */
  }
  if (fd >= 0) close(fd);
}

typedef struct conn_closed {
  gl_daemon *d;
  uint64_t conn;
} conn_closed;

/* A local connection closed: the segments it attached are detached. */
static void detach_conn(void *user, gl_lease *l) {
  const conn_closed *cc = user;
  lease_rt *rt = gl_lease_rt_of(l);
  if (!rt) return;
  for (size_t i = 0; i < rt->nsegs;) {
    if (rt->segs[i].conn != cc->conn) i++;
    else seg_detach_orphan(cc->d, l, rt->segs[i].id, cc->conn);
  }
}

void gl_daemon_on_local_close(void *user, uint64_t conn_id) {
  gl_daemon *d = user;
  conn_closed cc = {d, conn_id};
  gl_lease_table_foreach(d->leases, detach_conn, &cc);
}

/* ======================================================================
 * Entry point
 * ==================================================================== */

/* What the audit log records of a decoded request: every answer of the ops
 * the op table marks AUDIT (the lease ops, AUTHENTICATE, GPU_SUBMIT,
 * SHM_ATTACH/DETACH, SESSION_OPEN, SESSION_CLOSE, MODULE_LOAD); only the
 * refusals of the others (the node queries, and a session's steady stream
 * of launches and transfers). */
static void audit_mark(gl_daemon *d, gl_dreq *req, const gl_request *r) {
  const gl_lease_auth *a = gl_request_auth(r);
  uint64_t lease = r->op == GL_OP_LEASE_REVOKE ? r->u.revoke.lease_id : a ? a->lease_id : 0;
  const gl_op_info *i = gl_op_info_of(r->op);
  gl_dreq_audit(req, d->audit, r->op, lease, i && (i->flags & GL_OPF_AUDIT));
}

/* The daemon's handler of each op it answers itself or hands to a worker
 * other than as a session op, by the op table's index; the session ops
 * (GL_OPF_SESSION) go to op_session, the internal ops are refused. */
typedef void (*daemon_op)(gl_daemon *d, gl_dreq *req, const gl_request *r, const uint8_t *msg,
                          size_t len);

#define GL_DAEMON_OP2(fn)                                                                        \
  static void h_##fn(gl_daemon *d, gl_dreq *req, const gl_request *r, const uint8_t *msg,        \
                     size_t len) {                                                               \
    (void)r, (void)msg, (void)len;                                                               \
    fn(d, req);                                                                                  \
  }
#define GL_DAEMON_OP3(fn)                                                                        \
  static void h_##fn(gl_daemon *d, gl_dreq *req, const gl_request *r, const uint8_t *msg,        \
                     size_t len) {                                                               \
    (void)msg, (void)len;                                                                        \
    fn(d, req, r);                                                                               \
  }
GL_DAEMON_OP3(op_inventory)
GL_DAEMON_OP2(op_node_info)
GL_DAEMON_OP2(op_net_info)
GL_DAEMON_OP2(op_pool_info)
GL_DAEMON_OP3(gl_ops_lease_renew)
GL_DAEMON_OP3(op_lease_query)
GL_DAEMON_OP3(op_lease_free)
GL_DAEMON_OP3(gl_ops_lease_delegate)
GL_DAEMON_OP3(gl_ops_lease_revoke)
GL_DAEMON_OP3(gl_ops_authenticate)
GL_DAEMON_OP3(gl_ops_admin_unfence)
#undef GL_DAEMON_OP2
#undef GL_DAEMON_OP3

static void h_lease_alloc(gl_daemon *d, gl_dreq *req, const gl_request *r, const uint8_t *msg,
                          size_t len) {
  (void)msg, (void)len;
  op_lease_alloc(d, req, &r->u.alloc, gl_dreq_identity(req), false);
}

static const daemon_op k_daemon_ops[GL_OP_COUNT] = {
    [GL_OPI_GET_INVENTORY] = h_op_inventory,
    [GL_OPI_NODE_INFO] = h_op_node_info,
    [GL_OPI_NET_INFO] = h_op_net_info,
    [GL_OPI_POOL_INFO] = h_op_pool_info,
    [GL_OPI_AUTHENTICATE] = h_gl_ops_authenticate,
    [GL_OPI_LEASE_ALLOC] = h_lease_alloc,
    [GL_OPI_LEASE_RENEW] = h_gl_ops_lease_renew,
    [GL_OPI_LEASE_QUERY] = h_op_lease_query,
    [GL_OPI_LEASE_FREE] = h_op_lease_free,
    [GL_OPI_LEASE_DELEGATE] = h_gl_ops_lease_delegate,
    [GL_OPI_LEASE_REVOKE] = h_gl_ops_lease_revoke,
    [GL_OPI_ADMIN_UNFENCE] = h_gl_ops_admin_unfence,
    [GL_OPI_GPU_SUBMIT] = op_submit,
    [GL_OPI_SHM_ATTACH] = op_shm,
    [GL_OPI_SHM_DETACH] = op_shm,
};

static void handle(gl_daemon *d, gl_dreq *req, const uint8_t *msg, size_t len, int err) {
  GL_LAT(GL_LAT_D_REQ);
  gl_header h = {0};
  if (err == GL_QREQ_TOO_LARGE) {
    uint16_t op = gl_header_decode(msg, len, &h) == GPULEASE_OK ? h.op : 0;
    gl_ops_reply_error(req, op, GPULEASE_TOO_LARGE,
                "request larger than the daemon's limit of %zu bytes", d->cfg.max_message_bytes);
    return;
  }
  gl_request *r = malloc(sizeof *r);
  if (!r) {
    gl_ops_reply_error(req, 0, GPULEASE_INTERNAL, "daemon out of memory");
    return;
  }
  uint16_t op = 0;
  char why[512];
  /* Internal ops (0x7Fxx, the daemon's own channel to its workers) are
   * refused on their header: an untrusted peer's body is never decoded
   * as one. */
  bool framed = gl_header_decode(msg, len, &h) == GPULEASE_OK;
  if (d->audit) gl_dreq_audit(req, d->audit, framed ? h.op : 0, 0, false);
  if (d->metrics) gl_dreq_meter(req, gl_metrics_answer, d->metrics, framed ? h.op : 0, len);
  if (framed && h.kind == GL_WIRE_KIND_REQUEST && gl_op_code_internal(h.op)) {
    gl_ops_reply_internal(req, h.op);
    free(r);
    return;
  }
  /* Under --auth mtls or token every op but AUTHENTICATE needs an
   * identity; refused on the header, before the body is decoded. */
  if (framed && d->cfg.auth_mode != GL_AUTH_NONE && h.op != GL_OP_AUTHENTICATE &&
      !gl_dreq_identity(req)[0]) {
    gl_ops_reply_error(req, h.op, GPULEASE_UNAUTHORIZED, "%s", gl_daemon_no_identity_msg(d, req));
    free(r);
    return;
  }
  /* A tenant taken out of the tenants file by a reload loses the
   * connections it opened before: a token's may authenticate again, an
   * mTLS tenant's are closed by the servers (client_auth.h). */
  if (framed && d->tenants_reloaded && gl_ops_tenant_gone(d, gl_dreq_identity(req)) &&
      h.op != GL_OP_AUTHENTICATE) {
    gl_ops_reply_error(req, h.op, GPULEASE_UNAUTHORIZED,
                       "tenant '%s' is no longer in the daemon's tenants file (reloaded); %s",
                       gl_dreq_identity(req),
                       d->cfg.auth_mode == GL_AUTH_TOKEN
                           ? "authenticate with a current token"
                           : "its connections are closed");
    free(r);
    return;
  }
  /* One tenant's requests in flight are bounded (overload, not a quota). */
  if (framed) {
    uint32_t *inflight = gl_tenant_load_counter(d->load, gl_dreq_identity(req));
    if (!inflight || *inflight >= d->cfg.max_requests_per_tenant) {
      gl_ops_reply_error(req, h.op, GPULEASE_BUSY,
                         "%s has %u requests in flight, the most a tenant may (gpuleased "
                         "--max-requests-per-tenant); retry later",
                         gl_dreq_identity(req)[0] ? "this tenant" : "the anonymous tenant",
                         inflight ? *inflight : 0);
      free(r);
      return;
    }
    gl_dreq_hold(req, inflight);
  }
  /* A BURST (thousands of launches) is checked in full by the worker it
   * goes to; the daemon reads its frame and session_ref. */
  /* A BATCH's entries, as its decoder decodes them, go to the worker with
   * it (worker_proc.c), which then decodes nothing (decode once). */
  gl_request *entries = NULL;
  gpulease_status st =
      framed && h.op == GL_OP_BURST
          ? gl_request_decode_ref(msg, len, d->cfg.max_message_bytes, r, &op, why, sizeof why)
      : h.op == GL_OP_BATCH ? gl_request_decode_entries(msg, len, d->cfg.max_message_bytes, r,
                                                         &op, &entries, why, sizeof why)
                            : gl_request_decode(msg, len, d->cfg.max_message_bytes, r, &op, why,
                                                sizeof why);
  /* Its count is the decoder's limit all the same (section 6): refused here,
   * like every decoder refusal it leaves the seq unused ("Ordering"). */
  if (st == GPULEASE_OK && r->op == GL_OP_BURST &&
      (r->u.burst.count < 1 || r->u.burst.count > GL_WIRE_MAX_BURST)) {
    snprintf(why, sizeof why, "BURST: count %u out of range 1..%d", r->u.burst.count,
             GL_WIRE_MAX_BURST);
    st = GPULEASE_INVALID_ARGUMENT;
  }
  if (st != GPULEASE_OK) {
    gl_ops_reply_error(req, op, st, "%s", why);
    free(r);
    return;
  }
  GL_DEBUG("request %s (%zu bytes)", gl_op_name(r->op), len);
  if (d->audit) audit_mark(d, req, r);
  const gl_op_info *info = gl_op_info_of(r->op);
  daemon_op fn = k_daemon_ops[info - gl_op_table(NULL)];
  if (info->served == GL_OP_SERVED_INTERNAL) gl_ops_reply_internal(req, r->op);
  else if (fn) fn(d, req, r, msg, len);
  else if (info->flags & GL_OPF_SESSION) op_session(d, req, r, msg, len);
  else gl_ops_reply_internal(req, r->op);
  free(entries); /* copied onto the worker's channel, if it went there */
  free(r);
}

void gl_daemon_on_request(void *user, gl_qreq *q, const uint8_t *msg, size_t len, int err) {
  gl_dreq *r = gl_dreq_quic(q);
  if (!r) {
    gl_buf b;
    gl_ops_encode_oom(&b);
    gl_qreq_reply(q, b.data, b.len);
    gl_buf_free(&b);
    return;
  }
  handle(user, r, msg, len, err);
}

void gl_daemon_on_shard_request(void *user, gl_shard *shard, gl_qreq *q, const uint8_t *msg,
                                size_t len, int err) {
  gl_dreq *r = gl_dreq_shard(shard, q);
  if (!r) {
    gl_buf b;
    gl_ops_encode_oom(&b);
    gl_shard_reply(shard, q, b.data, b.len);
    gl_buf_free(&b);
    return;
  }
  handle(user, r, msg, len, err);
}

void gl_daemon_on_local_request(void *user, gl_lreq *l, const uint8_t *msg, size_t len) {
  gl_dreq *r = gl_dreq_local(l);
  if (!r) {
    gl_buf b;
    gl_ops_encode_oom(&b);
    gl_lreq_reply(l, b.data, b.len);
    gl_buf_free(&b);
    return;
  }
  handle(user, r, msg, len, GL_QREQ_OK);
}
