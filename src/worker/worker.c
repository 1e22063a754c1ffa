/*
 * worker.c - the worker loop: the channel, dispatch to the leases, and the
 * process's and leases' own ops (WORKER_PROBE, WORKER_WARM, WORKER_INIT,
 * WORKER_RELEASE, SHM_ATTACH, SHM_DETACH).
 *
 * Everything device-specific is behind gl_backend (backend.h). The main
 * thread reads tagged requests and answers PROBE, WARM, INIT and RELEASE
 * itself; every other request names its lease (lease_auth) and goes to
 * it: session ops go to their session's lane (session.c), and each
 * GPU_SUBMIT to the lane of the lease's implicit session (submit.c: its
 * checks, then module, function and the one launch that LAUNCH uses too,
 * with its input and output). A worker of isolated leases serves one
 * lease; a shared worker adds one per WORKER_INIT with the shared flag and
 * drops one per WORKER_RELEASE. Every request gets exactly one reply, with
 * its tag.
 *
 * Its floor: the state in wk_types.h, the replies in wk_reply.h; what it
 * calls of the sessions is declared in session.h, of GPU_SUBMIT in
 * submit.h, of BATCH in batch.h, of segments in segments.h.
 */
#include "worker/worker.h"
#include "worker/held.h"
#include "worker/start_fault.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/lat.h"
#include "common/log.h"
#include "common/util.h"
#include "backend/backend_view.h"
#include "worker/batch.h"
#include "worker/ipc.h"
#include "worker/segments.h"
#include "worker/session.h"
#include "worker/submit.h"
#include "worker/wk_reply.h"

static const char *g_jit_dir;
static unsigned g_seq_timeout_ms;

void gl_worker_set_jit_cache_dir(const char *dir) { g_jit_dir = dir; }
void gl_worker_set_seq_timeout_ms(unsigned ms) { g_seq_timeout_ms = ms; }

/* ---- the lease's own ops ----------------------------------------------- */

static void do_probe(gl_wkproc *p, uint64_t tag) {
  gl_response *resp = calloc(1, sizeof *resp);
  char err[1024] = "";
  if (!resp) {
    gl_wkproc_reply_error(p, tag, GL_OP_WORKER_PROBE, GPULEASE_INTERNAL, "out of memory");
    return;
  }
  gpulease_status st = p->be->ops->probe(p->be, &resp->u.probe, err, sizeof err);
  if (st != GPULEASE_OK) {
    gl_wkproc_reply_error(p, tag, GL_OP_WORKER_PROBE, st, err);
  } else {
    resp->op = GL_OP_WORKER_PROBE;
    resp->status = GPULEASE_OK;
    resp->msg = "";
    gl_wkproc_reply(p, tag, resp);
  }
  free(resp);
}

/* Binds a WORKER_INIT or WORKER_WARM to its GPU by UUID: sets
 * req->cuda_ordinal to this worker's own CUDA ordinal of req->gpu_uuid,
 * which may differ from the daemon's (another CUDA_DEVICE_ORDER or
 * CUDA_VISIBLE_DEVICES in the worker's environment); the UUID does not.
 * "" keeps the ordinal (an emulated GPU, a MIG instance). OK, or NO_DEVICE
 * when no device of the worker has that UUID. */
static gpulease_status bind_uuid(gl_wkproc *p, gl_worker_init_req *req, char *err, size_t errlen) {
  if (!req->gpu_uuid[0] || !p->be->ops->probe) return GPULEASE_OK;
  if (!p->probe) { /* one probe a worker: its devices do not change */
    gl_probe_resp *pr = calloc(1, sizeof *pr);
    if (!pr) {
      snprintf(err, errlen, "worker out of memory");
      return GPULEASE_INTERNAL;
    }
    gpulease_status st = p->be->ops->probe(p->be, pr, err, errlen);
    if (st != GPULEASE_OK) {
      free(pr);
      return st;
    }
    p->probe = pr;
  }
  const gl_probe_resp *pr = p->probe;
  for (unsigned k = 0; k < pr->count; k++)
    if (strcmp(pr->gpus[k].uuid, req->gpu_uuid) == 0) {
      if (k != req->cuda_ordinal)
        GL_INFO("worker: GPU %s is this worker's CUDA device %u (the daemon's %u)",
                req->gpu_uuid, k, (unsigned)req->cuda_ordinal);
      req->cuda_ordinal = k;
      return GPULEASE_OK;
    }
  snprintf(err, errlen, "GPU %s is not among the %u CUDA device%s this worker sees",
           req->gpu_uuid, pr->count, pr->count == 1 ? "" : "s");
  return GPULEASE_NO_DEVICE;
}

/* WORKER_WARM: open the device ahead of a lease (the backend's warm). */
static void do_warm(gl_wkproc *p, uint64_t tag, uint32_t ordinal) {
  const uint16_t op = GL_OP_WORKER_WARM;
  char err[2048] = "";
  if (p->opened || p->warmed) {
    gl_wkproc_reply_error(p, tag, op, GPULEASE_INTERNAL, "worker already warmed or initialised");
    return;
  }
  gl_start_fault_delay(); /* test-only: nothing unless set */
  if (p->be->ops->warm) {
    gpulease_status st = p->be->ops->warm(p->be, ordinal, err, sizeof err);
    if (st != GPULEASE_OK) {
      gl_wkproc_reply_error(p, tag, op, st, err);
      return;
    }
  }
  p->warmed = true;
  GL_DEBUG("worker: device %u open, waiting for a lease", ordinal);
  gl_wkproc_reply_ok(p, tag, op);
}

/* The lease served by the worker with id lease_id, or NULL. */
static gl_wk *find_lease(gl_wkproc *p, uint64_t lease_id) {
  return lease_id == UINT64_MAX ? NULL : gl_hmap_get(&p->by_id, lease_id + 1);
}

/* Takes w out of the leases (it was added with lease_add). */
static void lease_remove(gl_wkproc *p, gl_wk *w) {
  gl_hmap_del(&p->by_id, w->lease_id + 1);
  for (size_t i = 0; i < p->nleases; i++)
    if (p->leases[i] == w) {
      p->leases[i] = p->leases[--p->nleases];
      return;
    }
}

/* A lease's state: everything but the region (be, region_base and
 * vram_bytes are the caller's). NULL when out of memory. */
static gl_wk *lease_new(gl_wkproc *p, uint64_t lease_id) {
  gl_wk *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->p = p;
  w->lease_id = lease_id;
  w->seq_timeout_ms = p->seq_timeout_ms;
  pthread_mutex_init(&w->sess_mu, NULL);
  pthread_mutex_init(&w->seg_mu, NULL);
  pthread_mutex_init(&w->held_mu, NULL);
  gl_lmem_init(&w->lmem, NULL, 0);
  gl_kout_buf_init(&w->kout);
  gl_kout_drain(NULL, NULL, 0); /* nothing an earlier lease printed */
  return w;
}

/* Starts what a lease with its backend and region set needs: its buffers
 * and module table (its implicit session waits for the first
 * GPU_SUBMIT). 0 or -1 (out of memory). */
static int lease_start(gl_wk *w) {
  w->alloc = gl_suballoc_new(w->vram_bytes, 256);
  w->modtab = w->p->jit ? gl_modtab_new(w->be, w->p->jit) : NULL;
  if (!w->alloc || !w->modtab) return -1;
  gl_modtab_charge_to(w->modtab, w->alloc, w->vram_bytes); /* modules count in the lease */
  gl_modtab_on_change(w->modtab, gl_wk_held_hook, w);      /* and the daemon hears of them */
  w->lmem.alloc = w->alloc;                                  /* so does local memory */
  w->lmem.vram_bytes = w->vram_bytes;
  w->initialised = true;
  return 0;
}

/* Ends a lease: its lanes stop (each finishing the op it runs), its
 * sessions (the implicit one too), segments and modules go, then its range
 * of a shared context (the process's own region goes with the process).
 * A lost context cannot unload anything; the process exit frees it all. */
static void lease_end(gl_wk *w) {
  bool lost = atomic_load(&w->p->lost);
  gl_session_implicit_end(w);
  gl_session_close_all(w);
  gl_segments_free_all(w);
  gl_modtab_free(w->modtab, lost);
  gl_lmem_destroy(&w->lmem);
  gl_suballoc_free(w->alloc);
  if (w->be && w->be != w->p->be) {
    if (!lost) w->p->be->ops->region_remove(w->p->be, w->range_offset);
    w->be->ops->destroy(w->be);
  }
  gl_kout_drain(NULL, NULL, 0); /* never to the next lease of this process */
  gl_kout_buf_free(&w->kout);
  pthread_mutex_destroy(&w->sess_mu);
  pthread_mutex_destroy(&w->seg_mu);
  pthread_mutex_destroy(&w->held_mu);
  free(w);
}

static int lease_add(gl_wkproc *p, gl_wk *w) {
  if (w->lease_id == UINT64_MAX || gl_hmap_put(&p->by_id, w->lease_id + 1, w) != 0) return -1;
  if (p->nleases == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 4;
    gl_wk **n = realloc(p->leases, cap * sizeof *n);
    if (!n) {
      gl_hmap_del(&p->by_id, w->lease_id + 1);
      return -1;
    }
    p->leases = n;
    p->cap = cap;
  }
  p->leases[p->nleases++] = w;
  return 0;
}

/* Opens the device for the first WORKER_INIT: the lease's own region
 * (isolated) or a shared context without one; then the context's limits. */
static gpulease_status open_device(gl_wkproc *p, const gl_worker_init_req *req,
                                   uint64_t *base, char *err, size_t errlen) {
  gpulease_status st;
  if (!p->warmed) gl_start_fault_delay(); /* test-only: nothing unless set */
  p->shared = (req->flags & GL_WORKER_INIT_SHARED) != 0;
  if (p->shared) {
    if (!p->be->ops->open_shared) {
      snprintf(err, errlen, "the %s device has no shared contexts", p->be->ops->name);
      return GPULEASE_UNSUPPORTED;
    }
    st = p->be->ops->open_shared(p->be, req->cuda_ordinal, &p->region_base, p->device_name,
                                 sizeof p->device_name, err, errlen);
  } else {
    st = p->be->ops->init(p->be, req->cuda_ordinal, req->vram_bytes, base, p->device_name,
                          sizeof p->device_name, err, errlen);
  }
  if (st != GPULEASE_OK) return st;
  p->opened = true;
  if (!p->jit) p->jit = gl_jit_cache_open(g_jit_dir, GL_WK_JIT_CACHE_BYTES);
  /* A reused worker keeps the limits it has; the daemon reuses a worker
   * only for a lease that asks for the same. */
  bool same = p->printf_fifo_bytes == req->printf_fifo_bytes &&
              p->malloc_heap_bytes == req->malloc_heap_bytes;
  if (!same && p->be->ops->set_limits && (req->printf_fifo_bytes || req->malloc_heap_bytes))
    st = p->be->ops->set_limits(p->be, req->printf_fifo_bytes, req->malloc_heap_bytes, err,
                                errlen);
  if (st == GPULEASE_OK) {
    p->printf_fifo_bytes = req->printf_fifo_bytes;
    p->malloc_heap_bytes = req->malloc_heap_bytes;
  }
  return st;
}

/* WORKER_INIT: the device (first time) and one lease's region. */
static void do_init(gl_wkproc *p, uint64_t tag, const gl_worker_init_req *req) {
  const uint16_t op = GL_OP_WORKER_INIT;
  char err[2048] = "";
  bool shared = (req->flags & GL_WORKER_INIT_SHARED) != 0;
  if (p->opened && (!p->shared || !shared)) {
    gl_wkproc_reply_error(p, tag, op, GPULEASE_INTERNAL,
                     p->shared ? "a shared worker takes only shared leases"
                               : "worker already initialised (one WORKER_INIT per worker)");
    return;
  }
  if (req->vram_bytes == 0) {
    gl_wkproc_reply_error(p, tag, op, GPULEASE_INVALID_ARGUMENT, "vram_bytes must be at least 1");
    return;
  }
  if (find_lease(p, req->lease_id) || p->nleases >= GL_WK_MAX_LEASES) {
    gl_wkproc_reply_error(p, tag, op, GPULEASE_INTERNAL, "lease already served, or too many leases");
    return;
  }
  gl_wk *w = lease_new(p, req->lease_id);
  if (!w || lease_add(p, w) != 0) {
    if (w) lease_end(w);
    gl_wkproc_reply_error(p, tag, op, GPULEASE_INTERNAL, "worker out of memory");
    return;
  }
  uint64_t base = 0;
  gpulease_status st = p->opened ? GPULEASE_OK : open_device(p, req, &base, err, sizeof err);
  if (st == GPULEASE_OK && p->shared) {
    st = p->be->ops->region_add(p->be, req->vram_bytes, &w->range_offset, err, sizeof err);
    if (st == GPULEASE_OK) {
      w->be = gl_backend_view_new(p->be, w->range_offset, req->vram_bytes, &p->submit_mu);
      base = p->region_base + w->range_offset;
      if (!w->be) {
        p->be->ops->region_remove(p->be, w->range_offset);
        snprintf(err, sizeof err, "worker out of memory");
        st = GPULEASE_INTERNAL;
      }
    }
  } else if (st == GPULEASE_OK) {
    w->be = p->be;
  }
  w->vram_bytes = req->vram_bytes;
  w->region_base = base;
  if (st == GPULEASE_OK && lease_start(w) != 0) {
    snprintf(err, sizeof err, "worker out of memory");
    st = GPULEASE_INTERNAL;
  }
  if (st != GPULEASE_OK) {
    lease_remove(p, w);
    lease_end(w);
    gl_wkproc_reply_error(p, tag, op, st, err);
    return;
  }
  GL_INFO("worker: device %u (%s): %llu bytes of VRAM reserved at 0x%llx for lease %llu%s",
          req->cuda_ordinal, p->device_name, (unsigned long long)req->vram_bytes,
          (unsigned long long)base, (unsigned long long)req->lease_id,
          p->shared ? " (shared context)" : "");

  gl_response resp;
  memset(&resp, 0, sizeof resp);
  resp.op = op;
  resp.status = GPULEASE_OK;
  resp.msg = "";
  resp.u.worker_init.region_base = base;
  snprintf(resp.u.worker_init.device_name, sizeof resp.u.worker_init.device_name, "%s",
           p->device_name);
  gl_wkproc_reply(p, tag, &resp);
}

/* WORKER_RELEASE: one lease of a shared worker ends and the others go on;
 * an isolated worker's one lease ends and the worker waits for the next,
 * its device open as after WORKER_WARM (the daemon reuses it). */
static void do_release(gl_wkproc *p, uint64_t tag, uint64_t lease_id) {
  const uint16_t op = GL_OP_WORKER_RELEASE;
  gl_wk *w = find_lease(p, lease_id);
  if (!w) {
    char msg[96];
    snprintf(msg, sizeof msg, "lease %llu is not served by this worker",
             (unsigned long long)lease_id);
    gl_wkproc_reply_error(p, tag, op, GPULEASE_NOT_FOUND, msg);
    return;
  }
  lease_remove(p, w);
  lease_end(w);
  if (!p->shared) {
    char err[512] = "";
    gpulease_status st = p->be->ops->reset ? p->be->ops->reset(p->be, err, sizeof err)
                                           : GPULEASE_UNSUPPORTED;
    if (st != GPULEASE_OK) {
      gl_wkproc_reply_error(p, tag, op, st, err[0] ? err : "this device cannot be reused");
      return;
    }
    p->opened = false;
    p->warmed = true;
    GL_INFO("worker: lease %llu released; the device stays open for the next lease",
            (unsigned long long)lease_id);
    gl_wkproc_reply_ok(p, tag, op);
    return;
  }
  GL_INFO("worker: lease %llu released; %zu lease%s left", (unsigned long long)lease_id,
          p->nleases, p->nleases == 1 ? "" : "s");
  gl_wkproc_reply_ok(p, tag, op);
}

/* Main thread: SHM_ATTACH (its descriptor came with the message, in
 * p->fdq) and SHM_DETACH. */
static void serve_segment(gl_wk *w, gl_job *job) {
  char err[512] = "";
  gl_response r = {.op = job->req.op, .status = GPULEASE_OK, .msg = ""};
  gpulease_status st;
  if (job->req.op == GL_OP_SHM_ATTACH) {
    int fd = gl_ipc_fdq_take(&w->p->fdq);
    if (fd < 0) {
      snprintf(err, sizeof err, "SHM_ATTACH came without a file descriptor (it needs the "
               "daemon's local socket)");
      st = GPULEASE_INVALID_ARGUMENT;
    } else {
      st = gl_segments_attach(w, fd, job->req.u.shm_attach.size_bytes, &r.u.handle, err,
                              sizeof err);
    }
  } else {
    st = gl_segments_detach(w, job->req.u.shm_detach.segment, err, sizeof err);
  }
  if (st == GPULEASE_OK) gl_wk_reply(w, job->tag, &r);
  else gl_wk_reply_error(w, job->tag, job->req.op, st, err);
}

/* The lease a request names (its lease_auth); 0 for the ops that name none. */
static uint64_t request_lease(const gl_request *q) {
  const gl_lease_auth *a = gl_request_auth(q);
  return a ? a->lease_id : 0;
}

/* The lease a request goes to: a worker of one isolated lease serves it
 * whatever id it names (the daemon checked the secret); a shared worker
 * serves only the leases it holds. NULL with msg filled otherwise. */
static gl_wk *route(gl_wkproc *p, const gl_request *q, char *msg, size_t len) {
  if (!p->shared) {
    if (p->nleases == 1 && p->leases[0]->initialised) return p->leases[0];
    snprintf(msg, len, "worker not initialised (no WORKER_INIT yet)");
    return NULL;
  }
  uint64_t id = request_lease(q);
  gl_wk *w = find_lease(p, id);
  if (!w)
    snprintf(msg, len, "lease %llu was freed or expired while this request was waiting",
             (unsigned long long)id);
  return w;
}

/* Main thread: serves or routes one whole message (ownership of msg
 * passes here). decoded: the request as the daemon decoded it, its
 * pointers still offsets into msg (GL_IPC_TAG_DECODED), or NULL for a
 * message to decode here. 0 to go on, -1 when a reply could not be
 * written. */
static int serve(gl_wkproc *p, uint64_t tag, uint8_t *msg, size_t len, gl_request *decoded,
                 gl_request *entries) {
  gl_job *job = calloc(1, sizeof *job);
  if (!job) {
    free(msg);
    free(entries);
    return gl_wkproc_reply_error(p, tag, 0, GPULEASE_INTERNAL, "worker out of memory");
  }
  job->tag = tag;
  job->msg = msg;
  job->len = len;
  uint16_t op = 0;
  char err[512] = "";
  /* A BURST's launches are checked on its lane (session_exec.c), where a
   * loop's repeated burst is recognised without walking them again. */
  gpulease_status st;
  if (decoded) {
    /* Decoded once, by the daemon (a BURST's launches as far as
     * gl_request_decode_ref goes, as below). */
    job->req = *decoded;
    op = job->req.op;
    st = gl_request_attach(&job->req, msg, len);
    if (st == GPULEASE_OK && op == GL_OP_BATCH) { /* and its entries */
      job->entries = entries;
      entries = NULL;
      for (uint16_t i = 0; st == GPULEASE_OK && i < job->req.u.batch.count; i++) {
        st = gl_request_attach(&job->entries[i], msg, len);
        const gl_op_info *ei = gl_op_info_of(job->entries[i].op);
        if (st == GPULEASE_OK && (!ei || !(ei->flags & GL_OPF_BATCH)))
          st = GPULEASE_MALFORMED; /* the daemon's decoder lets through only these */
      }
      job->req.u.batch.entries = job->entries;
    }
    if (st != GPULEASE_OK) snprintf(err, sizeof err, "the daemon's decoded request does not fit its message");
  } else if (gl_message_peek_op(msg, len) == GL_OP_BURST) {
    st = gl_request_decode_ref(msg, len, GL_IPC_MAX_BODY, &job->req, &op, err, sizeof err);
  } else {
    st = gl_request_decode(msg, len, GL_IPC_MAX_BODY, &job->req, &op, err, sizeof err);
  }
  free(entries); /* a BATCH's went to the job above; NULL otherwise */
  if (st != GPULEASE_OK) {
    gl_job_free(job);
    return gl_wkproc_reply_error(p, tag, op, st, err[0] ? err : "malformed request");
  }
  switch (job->req.op) {
  case GL_OP_WORKER_PROBE:
    do_probe(p, tag);
    gl_job_free(job);
    return 0;
  case GL_OP_WORKER_INIT:
  case GL_OP_WORKER_WARM: {
    char berr[512] = "";
    gpulease_status bst = bind_uuid(p, &job->req.u.worker_init, berr, sizeof berr);
    if (bst != GPULEASE_OK) {
      int rc = gl_wkproc_reply_error(p, tag, job->req.op, bst, berr);
      gl_job_free(job);
      return rc;
    }
    if (job->req.op == GL_OP_WORKER_INIT) do_init(p, tag, &job->req.u.worker_init);
    else do_warm(p, tag, job->req.u.worker_init.cuda_ordinal);
    gl_job_free(job);
    return 0;
  }
  case GL_OP_WORKER_RELEASE:
    do_release(p, tag, job->req.u.worker_init.lease_id);
    gl_job_free(job);
    return 0;
  default:
    break;
  }
  bool routed = job->req.op == GL_OP_SHM_ATTACH || job->req.op == GL_OP_SHM_DETACH ||
                job->req.op == GL_OP_GPU_SUBMIT || gl_op_is_session(job->req.op);
  if (!routed) {
    snprintf(err, sizeof err, "op %s (0x%04x) is not served by a worker", gl_op_name(op), op);
    gl_job_free(job);
    return gl_wkproc_reply_error(p, tag, op, GPULEASE_UNSUPPORTED, err);
  }
  gl_wk *w = route(p, &job->req, err, sizeof err);
  if (!w) {
    gl_job_free(job);
    return gl_wkproc_reply_error(p, tag, op, p->shared ? GPULEASE_LEASE_EXPIRED : GPULEASE_INTERNAL,
                            err);
  }
  switch (job->req.op) {
  case GL_OP_SHM_ATTACH:
  case GL_OP_SHM_DETACH:
    serve_segment(w, job);
    gl_job_free(job);
    return 0;
  case GL_OP_GPU_SUBMIT:
    gl_submit_dispatch(w, job);
    return 0;
  default:
    gl_session_dispatch(w, job);
    gl_session_reap(w);
    return 0;
  }
}

/* Reads the count decoded entries that follow a decoded BATCH on the
 * channel (GL_IPC_TAG_DECODED) into *out (malloc'd, caller frees). 0, or
 * -1 on a count out of range, out of memory or a failed read (the stream
 * cannot be followed). */
static int read_batch_entries(int fd, uint16_t count, gl_request **out) {
  *out = NULL;
  if (count == 0 || count > GL_WIRE_MAX_BATCH) return -1;
  gl_request *e = malloc((size_t)count * sizeof *e);
  if (!e || gl_ipc_read_exact(fd, e, (size_t)count * sizeof *e) != 0) {
    free(e);
    return -1;
  }
  *out = e;
  return 0;
}

/* ---- loop ------------------------------------------------------------------ */

static int worker_setup(gl_wkproc *p, int fd, gl_backend *be) {
  memset(p, 0, sizeof *p);
  gl_hmap_init(&p->by_id);
  p->fd = fd;
  p->be = be;
  p->seq_timeout_ms = g_seq_timeout_ms ? g_seq_timeout_ms : GL_WS_DEFAULT_SEQ_TIMEOUT_MS;
  p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  pthread_mutex_init(&p->write_mu, NULL);
  pthread_mutex_init(&p->lost_mu, NULL);
  pthread_mutex_init(&p->submit_mu, NULL);
  atomic_init(&p->lost, false);
  return p->wake_fd < 0 ? -1 : 0;
}

static void worker_teardown(gl_wkproc *p) {
  while (p->nleases > 0) lease_end(p->leases[--p->nleases]);
  free(p->leases);
  free(p->probe);
  gl_hmap_free(&p->by_id);
  gl_ipc_fdq_clear(&p->fdq);
  gl_jit_cache_close(p->jit);
  pthread_mutex_destroy(&p->write_mu);
  pthread_mutex_destroy(&p->lost_mu);
  pthread_mutex_destroy(&p->submit_mu);
  if (p->wake_fd >= 0) close(p->wake_fd);
}

enum wait_result { WAIT_REQUEST, WAIT_TIMER, WAIT_LOST };

/* How long the main thread watches the channel before it sleeps in poll():
 * requests come in bursts, and a wake-up costs more than a short spin. */
#define GL_WK_SPIN_NS 100000ull

/* The earliest deadline of a session's wait for a missing seq, 0 for none. */
static uint64_t next_deadline(gl_wkproc *p) {
  uint64_t first = 0;
  for (size_t i = 0; i < p->nleases; i++) {
    uint64_t d = gl_session_next_deadline(p->leases[i]);
    if (d && (!first || d < first)) first = d;
  }
  return first;
}

/* Waits until a request can be read, the context is lost, or a session's
 * wait for a missing seq runs out. */
static enum wait_result wait_for_work(gl_wkproc *p) {
  struct pollfd ch = {.fd = p->fd, .events = POLLIN};
  uint64_t until = gl_mono_ns() + GL_WK_SPIN_NS;
  for (unsigned n = 1; !atomic_load(&p->lost) && gl_mono_ns() < until; n++) {
    if (poll(&ch, 1, 0) > 0) return WAIT_REQUEST;
    if ((n & 15) == 0) sched_yield(); /* for machines with few cores */
    for (int i = 0; i < 16; i++) gl_cpu_relax();
  }
  for (;;) {
    if (atomic_load(&p->lost)) return WAIT_LOST;
    uint64_t deadline = next_deadline(p);
    int timeout_ms = -1;
    if (deadline) {
      uint64_t now = gl_mono_ns();
      if (deadline <= now) return WAIT_TIMER;
      uint64_t ms = (deadline - now + 999999) / 1000000;
      timeout_ms = ms > 60000 ? 60000 : (int)ms;
    }
    struct pollfd fds[2] = {{.fd = p->fd, .events = POLLIN}, {.fd = p->wake_fd, .events = POLLIN}};
    int n = poll(fds, 2, timeout_ms);
    if (n < 0 && errno != EINTR) return WAIT_REQUEST; /* the read reports the error */
    if (atomic_load(&p->lost)) return WAIT_LOST;
    if (n > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) return WAIT_REQUEST;
  }
}

/* After a lost context: stops every lease's lanes and sends WORKER_LOST
 * (tag 0) with the sessions of the first lease (the only one of an
 * isolated worker; the daemon ends every lease of a shared one). True when
 * every lane stopped (nothing runs in the worker any more). */
static bool send_lost_notice(gl_wkproc *p) {
  size_t busy = 0;
  gl_buf notice;
  gl_buf_init(&notice);
  for (size_t i = 0; i < p->nleases; i++) {
    gl_wk *w = p->leases[i];
    if (!gl_session_implicit_stop_within(w, 2000)) {
      GL_WARN("worker: the GPU_SUBMIT session of lease %llu is still busy",
              (unsigned long long)w->lease_id);
      busy++;
    }
    gl_buf b;
    gl_buf_init(&b);
    size_t busy_sessions = 0;
    if (gl_session_lost_notice(w, 2000, &b, &busy_sessions) != 0) {
      gl_buf_free(&b);
      gl_buf_free(&notice);
      GL_ERROR("worker: out of memory listing the sessions of the lost context");
      return false;
    }
    busy += busy_sessions;
    if (i == 0) notice = b;
    else gl_buf_free(&b);
  }
  if (p->nleases == 0) {
    gl_response r = {.op = GL_OP_WORKER_LOST, .status = GPULEASE_OK, .msg = p->lost_msg};
    r.msg_len = (uint16_t)strlen(p->lost_msg);
    if (gl_response_encode(&r, &notice) != GPULEASE_OK) notice.oom = true;
  }
  pthread_mutex_lock(&p->lost_mu);
  bool sent = p->notice_sent; /* a shared worker's went out at the loss */
  pthread_mutex_unlock(&p->lost_mu);
  if (sent) gl_buf_free(&notice);
  else gl_wkproc_send(p, GL_IPC_NOTICE_TAG, &notice);
  return busy == 0;
}

int gl_worker_run(int fd, gl_backend *backend) {
  gl_wkproc *p = malloc(sizeof *p);
  if (!p) return GL_WORKER_EXIT_IO;
  if (worker_setup(p, fd, backend) != 0) {
    GL_ERROR("worker: out of memory at start-up");
    worker_teardown(p);
    free(p);
    return GL_WORKER_EXIT_IO;
  }
  int rc = GL_WORKER_EXIT_OK;
  char why[160];
  for (;;) {
    switch (wait_for_work(p)) {
    case WAIT_LOST: rc = GL_WORKER_EXIT_CONTEXT_LOST; break;
    case WAIT_TIMER:
      for (size_t i = 0; i < p->nleases; i++) gl_session_expire_gaps(p->leases[i], gl_mono_ns());
      continue;
    case WAIT_REQUEST: break;
    }
    if (rc == GL_WORKER_EXIT_CONTEXT_LOST) break;
    gl_header h;
    uint8_t *msg = NULL;
    size_t len = 0;
    uint64_t tag = 0;
    gpulease_status hst = GPULEASE_MALFORMED;
    gl_ipc_fdq_clear(&p->fdq); /* a descriptor no message took */
    gl_ipc_result r =
        gl_ipc_read_call_fds(fd, GL_IPC_MAX_BODY, &tag, &h, &msg, &len, &hst, &p->fdq);
    GL_LAT(GL_LAT_W_READ);
    bool has_decoded = tag & GL_IPC_TAG_DECODED;
    tag &= ~GL_IPC_TAG_DECODED;
    gl_request decoded, *dp = NULL, *entries = NULL;
    if (has_decoded && (r == GL_IPC_MESSAGE || r == GL_IPC_TOO_LARGE)) {
      /* The request as the daemon decoded it follows the message. */
      if (gl_ipc_read_exact(fd, &decoded, sizeof decoded) != 0) {
        free(msg);
        GL_WARN("worker: reading a decoded request failed; exiting");
        rc = GL_WORKER_EXIT_IO;
        break;
      }
      dp = &decoded;
      if (decoded.op == GL_OP_BATCH &&
          read_batch_entries(fd, decoded.u.batch.count, &entries) != 0) {
        free(msg);
        GL_WARN("worker: reading a decoded batch's entries failed; exiting");
        rc = GL_WORKER_EXIT_IO;
        break;
      }
    }
    if (r == GL_IPC_EOF) break;
    if (r == GL_IPC_IO_ERROR) {
      if (!atomic_load(&p->lost)) GL_WARN("worker: reading a request failed; exiting");
      rc = GL_WORKER_EXIT_IO;
      break;
    }
    if (r == GL_IPC_BAD_HEADER) {
      /* body_len cannot be trusted, so the stream cannot be followed any
       * further: answer, then stop. */
      gl_wkproc_reply_error(p, tag, h.op, hst,
                       hst == GPULEASE_UNSUPPORTED
                           ? "unsupported protocol version in request header"
                           : "malformed request header (bad magic or kind)");
      rc = GL_WORKER_EXIT_IO;
      break;
    }
    if (r == GL_IPC_TOO_LARGE) {
      snprintf(why, sizeof why, "request body of %u bytes exceeds the worker's limit of %u",
               h.body_len, GL_IPC_MAX_BODY);
      free(entries);
      if (gl_wkproc_reply_error(p, tag, h.op, GPULEASE_TOO_LARGE, why) != 0) {
        rc = GL_WORKER_EXIT_IO;
        break;
      }
      continue;
    }
    if (serve(p, tag, msg, len, dp, entries) != 0) {
      rc = GL_WORKER_EXIT_IO;
      break;
    }
  }
  if (atomic_load(&p->lost)) {
    /* Tell the daemon which sessions ended with the context. The dead
     * context is left to the process exit; the worker's own memory is
     * freed unless a thread still runs in it. */
    if (send_lost_notice(p)) {
      worker_teardown(p);
      free(p);
    }
    return GL_WORKER_EXIT_CONTEXT_LOST;
  }
  worker_teardown(p);
  free(p);
  return rc;
}

int gl_worker_main(int fd) {
  gl_backend *be = gl_backend_cuda_new();
  if (!be) {
    GL_ERROR("worker: out of memory at start-up");
    return GL_WORKER_EXIT_IO;
  }
  int rc = gl_worker_run(fd, be);
  /* After a fault, leave the dead context to the process exit. */
  if (rc != GL_WORKER_EXIT_CONTEXT_LOST) be->ops->destroy(be);
  return rc;
}
