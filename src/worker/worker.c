/*
 * worker.c - the worker loop: the channel, dispatch, and the lease's own
 * ops (WORKER_PROBE, WORKER_INIT, GPU_SUBMIT).
 *
 * Everything device-specific is behind gl_backend (backend.h). The main
 * thread reads tagged requests and answers PROBE and INIT itself; each
 * GPU_SUBMIT runs on the submit lane (checks in submit_check.h, then load,
 * copy, launch, wait, read back) and session ops go to their session's
 * lane (session.c). Every request gets exactly one reply, with its tag.
 */
#include "worker/worker.h"

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
#include "worker/batch.h"
#include "worker/ipc.h"
#include "worker/segments.h"
#include "worker/session.h"
#include "worker/submit_check.h"
#include "worker/worker_internal.h"

/* ---- replies (any thread) ------------------------------------------------ */

int gl_wk_send(gl_wk *w, uint64_t tag, gl_buf *b) {
  if (b->oom) {
    gl_buf_free(b);
    return -1;
  }
  pthread_mutex_lock(&w->write_mu);
  int rc = gl_ipc_write_call(w->fd, tag, b->data, b->len);
  GL_LAT(GL_LAT_W_REPLY);
  pthread_mutex_unlock(&w->write_mu);
  gl_buf_free(b);
  if (rc != 0) GL_WARN("worker: cannot write a reply: the daemon is gone");
  return rc;
}

/* An error reply of op in b (initialised here). 0, or -1 out of memory. */
static int encode_error(gl_buf *b, uint16_t op, gpulease_status st, const char *msg) {
  gl_buf_init(b);
  if (gl_response_encode_error(op, st, b, "%s", msg) != GPULEASE_OK) {
    gl_buf_free(b);
    return -1;
  }
  GL_DEBUG("worker: %s -> %s: %s", gl_op_name(op), gpulease_status_name((int)st), msg);
  return 0;
}

int gl_wk_reply_error(gl_wk *w, uint64_t tag, uint16_t op, gpulease_status st, const char *msg) {
  gl_buf b;
  return encode_error(&b, op, st, msg) != 0 ? -1 : gl_wk_send(w, tag, &b);
}

int gl_wk_reply(gl_wk *w, uint64_t tag, const gl_response *resp) {
  gl_buf b;
  gl_buf_init(&b);
  if (gl_response_encode(resp, &b) != GPULEASE_OK) {
    gl_buf_free(&b);
    return gl_wk_reply_error(w, tag, resp->op, GPULEASE_INTERNAL,
                             "worker out of memory encoding a reply");
  }
  return gl_wk_send(w, tag, &b);
}

int gl_wk_reply_ok(gl_wk *w, uint64_t tag, uint16_t op) {
  gl_response r = {.op = op, .status = GPULEASE_OK, .msg = ""};
  return gl_wk_reply(w, tag, &r);
}

/* A job's reply goes to its daemon call, or to its batch's collector. */
static int job_send(gl_wk *w, gl_job *job, gl_buf *b) {
  if (!job->batch) return gl_wk_send(w, job->tag, b);
  if (b->oom) {
    gl_buf_free(b);
    gl_response_encode_error(job->req.op, GPULEASE_INTERNAL, b, "worker out of memory");
  }
  gl_wbatch_put(job, b);
  return 0;
}

int gl_wk_job_error(gl_wk *w, gl_job *job, uint16_t op, gpulease_status st, const char *msg) {
  gl_buf b;
  return encode_error(&b, op, st, msg) != 0 ? -1 : job_send(w, job, &b);
}

int gl_wk_job_reply(gl_wk *w, gl_job *job, const gl_response *resp) {
  gl_buf b;
  gl_buf_init(&b);
  if (gl_response_encode(resp, &b) != GPULEASE_OK) {
    gl_buf_free(&b);
    return gl_wk_job_error(w, job, resp->op, GPULEASE_INTERNAL,
                           "worker out of memory encoding a reply");
  }
  return job_send(w, job, &b);
}

int gl_wk_job_ok(gl_wk *w, gl_job *job, uint16_t op) {
  if (job->batch) {
    gl_wbatch_put_ok(job, op);
    return 0;
  }
  gl_response r = {.op = op, .status = GPULEASE_OK, .msg = ""};
  return gl_wk_job_reply(w, job, &r);
}

bool gl_wk_check_lost(gl_wk *w, const char *why) {
  if (!w->be->ops->context_lost(w->be)) return atomic_load(&w->lost);
  pthread_mutex_lock(&w->lost_mu);
  if (!atomic_load(&w->lost)) {
    snprintf(w->lost_msg, sizeof w->lost_msg, "%s", why && why[0] ? why : "device fault");
    atomic_store(&w->lost, true);
    GL_ERROR("worker: the CUDA context is lost after a device fault: %s", w->lost_msg);
    /* The main thread stops reading requests and winds down. */
    if (eventfd_write(w->wake_fd, 1) != 0) GL_WARN("worker: cannot wake the main thread");
  }
  pthread_mutex_unlock(&w->lost_mu);
  return true;
}

/* ---- argument areas --------------------------------------------------------- */

int gl_argbuf_init(gl_argbuf *a) {
  a->area = calloc(1, GL_WK_SLOT_AREA + GL_BACKEND_ARG_READABLE);
  a->args = malloc(GL_BACKEND_ARG_SLOTS * sizeof *a->args);
  if (!a->area || !a->args) {
    gl_argbuf_free(a);
    return -1;
  }
  /* Argument i lives in slot i; pointers past the last slot all point at
   * the zero padding, readable GL_BACKEND_ARG_READABLE bytes. */
  for (size_t i = 0; i < GL_BACKEND_ARG_SLOTS; i++)
    a->args[i] = a->area + (i < GPULEASE_MAX_PARAMS ? i * GL_WK_SLOT_BYTES : GL_WK_SLOT_AREA);
  return 0;
}

void gl_argbuf_free(gl_argbuf *a) {
  free(a->area);
  free(a->args);
  a->area = NULL;
  a->args = NULL;
}

static const char *g_jit_dir;
static unsigned g_seq_timeout_ms;

void gl_worker_set_jit_cache_dir(const char *dir) { g_jit_dir = dir; }
void gl_worker_set_seq_timeout_ms(unsigned ms) { g_seq_timeout_ms = ms; }

/* ---- the lease's own ops ----------------------------------------------- */

static void do_probe(gl_wk *w, uint64_t tag) {
  gl_response *resp = calloc(1, sizeof *resp);
  char err[1024] = "";
  if (!resp) {
    gl_wk_reply_error(w, tag, GL_OP_WORKER_PROBE, GPULEASE_INTERNAL, "out of memory");
    return;
  }
  gpulease_status st = w->be->ops->probe(w->be, &resp->u.probe, err, sizeof err);
  if (st != GPULEASE_OK) {
    gl_wk_reply_error(w, tag, GL_OP_WORKER_PROBE, st, err);
  } else {
    resp->op = GL_OP_WORKER_PROBE;
    resp->status = GPULEASE_OK;
    resp->msg = "";
    gl_wk_reply(w, tag, resp);
  }
  free(resp);
}

/* WORKER_WARM: open the device ahead of a lease (the backend's warm). */
static void do_warm(gl_wk *w, uint64_t tag, uint32_t ordinal) {
  const uint16_t op = GL_OP_WORKER_WARM;
  char err[2048] = "";
  if (w->initialised || w->warmed) {
    gl_wk_reply_error(w, tag, op, GPULEASE_INTERNAL, "worker already warmed or initialised");
    return;
  }
  if (w->be->ops->warm) {
    gpulease_status st = w->be->ops->warm(w->be, ordinal, err, sizeof err);
    if (st != GPULEASE_OK) {
      gl_wk_reply_error(w, tag, op, st, err);
      return;
    }
  }
  w->warmed = true;
  GL_DEBUG("worker: device %u open, waiting for a lease", ordinal);
  gl_wk_reply_ok(w, tag, op);
}

static void do_init(gl_wk *w, uint64_t tag, const gl_worker_init_req *req) {
  const uint16_t op = GL_OP_WORKER_INIT;
  char err[2048] = "";
  if (w->initialised) {
    gl_wk_reply_error(w, tag, op, GPULEASE_INTERNAL,
                      "worker already initialised (one WORKER_INIT per worker)");
    return;
  }
  if (req->vram_bytes == 0) {
    gl_wk_reply_error(w, tag, op, GPULEASE_INVALID_ARGUMENT, "vram_bytes must be at least 1");
    return;
  }
  uint64_t base = 0;
  char name[96] = "";
  gpulease_status st = w->be->ops->init(w->be, req->cuda_ordinal, req->vram_bytes, &base, name,
                                        sizeof name, err, sizeof err);
  if (st != GPULEASE_OK) {
    gl_wk_reply_error(w, tag, op, st, err);
    return;
  }
  w->alloc = gl_suballoc_new(req->vram_bytes, 256);
  w->jit = gl_jit_cache_open(g_jit_dir, GL_WK_JIT_CACHE_BYTES);
  w->modtab = w->jit ? gl_modtab_new(w->be, w->jit) : NULL;
  if (!w->alloc || !w->modtab) {
    gl_wk_reply_error(w, tag, op, GPULEASE_INTERNAL, "worker out of memory");
    return;
  }
  w->initialised = true;
  w->vram_bytes = req->vram_bytes;
  w->region_base = base;
  snprintf(w->device_name, sizeof w->device_name, "%s", name);
  GL_INFO("worker: device %u (%s): %llu bytes of VRAM reserved at 0x%llx", req->cuda_ordinal,
          w->device_name, (unsigned long long)req->vram_bytes, (unsigned long long)base);

  gl_response resp;
  memset(&resp, 0, sizeof resp);
  resp.op = op;
  resp.status = GPULEASE_OK;
  resp.msg = "";
  resp.u.worker_init.region_base = base;
  snprintf(resp.u.worker_init.device_name, sizeof resp.u.worker_init.device_name, "%s",
           w->device_name);
  gl_wk_reply(w, tag, &resp);
}

/* Fills w->args / w->submit_args.sizes from the request: without a param list the
 * region's base pointer is the only argument. Returns the argument count. */
static size_t build_args(gl_wk *w, const gl_submit_req *req) {
  memset(w->submit_args.area, 0, GL_WK_SLOT_AREA);
  size_t n = 0;
  if (!(req->flags & GL_SUBMIT_F_PARAMS)) {
    uint64_t base = w->region_base;
    memcpy(w->submit_args.area, &base, sizeof base);
    w->submit_args.sizes[0] = sizeof base;
    return 1;
  }
  size_t pos = 0;
  gl_param p;
  while (n < GPULEASE_MAX_PARAMS && gl_param_next(req, &pos, &p)) {
    uint8_t *slot = w->submit_args.area + n * GL_WK_SLOT_BYTES;
    if (p.kind == GPULEASE_PARAM_POINTER) {
      uint64_t ptr = w->region_base + p.offset; /* offset < vram: checked */
      memcpy(slot, &ptr, sizeof ptr);
      w->submit_args.sizes[n] = sizeof ptr;
    } else {
      memcpy(slot, p.value, p.size);
      w->submit_args.sizes[n] = p.size;
    }
    n++;
  }
  return n;
}

/* When the backend knows the kernel's parameter sizes, refuses a list that
 * does not match them. OK when it matches or cannot be checked. */
static gpulease_status check_args(gl_wk *w, void *fn, const gl_submit_req *req,
                                  const char *name, size_t n) {
  if (!w->be->ops->param_sizes) return GPULEASE_OK;
  size_t count = 0;
  gpulease_status st = w->be->ops->param_sizes(w->be, fn, w->submit_args.kernel_sizes,
                                               GPULEASE_MAX_PARAMS + 1, &count, w->err, GL_WK_ERR_MAX);
  if (st != GPULEASE_OK) return GPULEASE_OK; /* cannot tell: launch as asked */
  if (count != n) {
    snprintf(w->err, GL_WK_ERR_MAX, "kernel '%s' takes %zu parameter%s but the request passes %zu%s",
             name, count, count == 1 ? "" : "s", n,
             (req->flags & GL_SUBMIT_F_PARAMS)
                 ? ""
                 : " (without a param list the region's pointer is the only parameter)");
    return GPULEASE_INVALID_ARGUMENT;
  }
  for (size_t i = 0; i < n && i <= GPULEASE_MAX_PARAMS; i++) {
    if (w->submit_args.kernel_sizes[i] != w->submit_args.sizes[i]) {
      snprintf(w->err, GL_WK_ERR_MAX,
               "parameter %zu of kernel '%s' is %zu bytes but the request passes %zu bytes "
               "(pointers are 8 bytes)",
               i, name, w->submit_args.kernel_sizes[i], w->submit_args.sizes[i]);
      return GPULEASE_INVALID_ARGUMENT;
    }
  }
  return GPULEASE_OK;
}

/* Runs one submit. On failure returns the status with w->err filled; on
 * success *output (malloc'd, may be NULL for 0 bytes) and *gpu_time_ns. */
static gpulease_status run_submit(gl_wk *w, const gl_submit_req *req, uint8_t **output,
                                  uint64_t *gpu_time_ns) {
  gpulease_status st = gl_submit_check(req, w->vram_bytes, GL_WORKER_MAX_OUTPUT, w->err,
                                       GL_WK_ERR_MAX);
  if (st != GPULEASE_OK) return st;

  gpulease_image_format fmt;
  size_t text_len;
  st = gl_image_resolve(req->image_format, req->image, req->image_len, &fmt, &text_len, w->err,
                        GL_WK_ERR_MAX);
  if (st != GPULEASE_OK) return st;

  char name[GL_WIRE_MAX_KERNEL_NAME + 1];
  memcpy(name, req->kernel_name, req->kernel_name_len);
  name[req->kernel_name_len] = 0;

  void *module = NULL, *fn = NULL;
  st = gl_module_cache_get(&w->cache, req->image, text_len, fmt, &module, w->err, GL_WK_ERR_MAX);
  if (st != GPULEASE_OK) return st;
  st = w->be->ops->get_function(w->be, module, name, &fn, w->err, GL_WK_ERR_MAX);
  if (st != GPULEASE_OK) return st;

  size_t n = build_args(w, req);
  st = check_args(w, fn, req, name, n);
  if (st != GPULEASE_OK) return st;
  GL_LAT(GL_LAT_W_DONE);

  if (req->input_len > 0) {
    st = w->be->ops->write(w->be, req->input_offset, req->input, req->input_len, w->err,
                           GL_WK_ERR_MAX);
    if (st != GPULEASE_OK) return st;
  }

  gl_launch l;
  memset(&l, 0, sizeof l);
  l.kernel_name = name;
  memcpy(l.grid, req->grid, sizeof l.grid);
  memcpy(l.block, req->block, sizeof l.block);
  l.shared_mem_bytes = req->shared_mem_bytes;
  l.args = w->submit_args.args;
  l.arg_sizes = w->submit_args.sizes;
  l.arg_count = n;
  *output = NULL;
  uint8_t *out = NULL;
  if (req->output_size > 0 && !(out = malloc((size_t)req->output_size))) {
    snprintf(w->err, GL_WK_ERR_MAX, "worker out of memory for %llu bytes of output",
             (unsigned long long)req->output_size);
    return GPULEASE_INTERNAL;
  }
  if (w->be->ops->launch_read) { /* kernel and output with one wait */
    st = w->be->ops->launch_read(w->be, fn, &l, gpu_time_ns, req->output_offset, out,
                                 (size_t)req->output_size, w->err, GL_WK_ERR_MAX);
  } else {
    st = w->be->ops->launch(w->be, fn, &l, gpu_time_ns, w->err, GL_WK_ERR_MAX);
    if (st == GPULEASE_OK && out)
      st = w->be->ops->read(w->be, req->output_offset, out, (size_t)req->output_size, w->err,
                            GL_WK_ERR_MAX);
  }
  GL_LAT(GL_LAT_W_DONE);
  if (st != GPULEASE_OK) {
    free(out);
    return st;
  }
  *output = out;
  return GPULEASE_OK;
}

/* The submit lane's run function: one GPU_SUBMIT. */
static void run_submit_job(void *ctx, gl_job *job) {
  gl_wk *w = ctx;
  const uint16_t op = GL_OP_GPU_SUBMIT;
  const gl_submit_req *req = &job->req.u.submit;
  w->err[0] = 0;
  if (atomic_load(&w->lost)) {
    /* Left unanswered: once this worker has exited, the daemon sends the
     * request, which never ran, to a fresh worker. */
    gl_job_free(job);
    return;
  }
  uint8_t *output = NULL;
  uint64_t ns = 0;
  gpulease_status st = run_submit(w, req, &output, &ns);
  if (st != GPULEASE_OK) {
    gl_wk_check_lost(w, w->err);
    gl_wk_reply_error(w, job->tag, op, st, w->err);
  } else {
    w->submits++;
    gl_response resp;
    memset(&resp, 0, sizeof resp);
    resp.op = op;
    resp.status = GPULEASE_OK;
    resp.msg = "";
    resp.u.submit.gpu_time_ns = ns;
    resp.u.submit.output = output;
    resp.u.submit.output_len = (uint32_t)req->output_size;
    gl_wk_reply(w, job->tag, &resp);
    free(output);
  }
  gl_job_free(job);
}

/* Main thread: SHM_ATTACH (its descriptor came with the message, in
 * w->fdq) and SHM_DETACH. */
static void serve_segment(gl_wk *w, gl_job *job) {
  char err[512] = "";
  gl_response r = {.op = job->req.op, .status = GPULEASE_OK, .msg = ""};
  gpulease_status st;
  if (job->req.op == GL_OP_SHM_ATTACH) {
    int fd = gl_ipc_fdq_take(&w->fdq);
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

/* Main thread: serves or routes one whole message (ownership of msg
 * passes here). 0 to go on, -1 when a reply could not be written. */
static int serve(gl_wk *w, uint64_t tag, uint8_t *msg, size_t len) {
  gl_job *job = calloc(1, sizeof *job);
  if (!job) {
    free(msg);
    return gl_wk_reply_error(w, tag, 0, GPULEASE_INTERNAL, "worker out of memory");
  }
  job->tag = tag;
  job->msg = msg;
  job->len = len;
  uint16_t op = 0;
  char err[512] = "";
  gpulease_status st =
      gl_request_decode(msg, len, GL_IPC_MAX_BODY, &job->req, &op, err, sizeof err);
  if (st != GPULEASE_OK) {
    gl_job_free(job);
    return gl_wk_reply_error(w, tag, op, st, err[0] ? err : "malformed request");
  }
  switch (job->req.op) {
  case GL_OP_WORKER_PROBE:
    do_probe(w, tag);
    gl_job_free(job);
    return 0;
  case GL_OP_WORKER_INIT:
    do_init(w, tag, &job->req.u.worker_init);
    gl_job_free(job);
    return 0;
  case GL_OP_WORKER_WARM:
    do_warm(w, tag, job->req.u.worker_init.cuda_ordinal);
    gl_job_free(job);
    return 0;
  case GL_OP_SHM_ATTACH:
  case GL_OP_SHM_DETACH:
    if (!w->initialised) {
      gl_job_free(job);
      return gl_wk_reply_error(w, tag, op, GPULEASE_INTERNAL, "worker not initialised");
    }
    serve_segment(w, job);
    gl_job_free(job);
    return 0;
  case GL_OP_GPU_SUBMIT:
    if (!w->initialised) {
      gl_job_free(job);
      return gl_wk_reply_error(w, tag, GL_OP_GPU_SUBMIT, GPULEASE_INTERNAL,
                               "worker not initialised (no WORKER_INIT yet)");
    }
    gl_lane_push(w->submit_lane, job);
    return 0;
  default:
    if (gl_op_is_session(job->req.op)) {
      if (!w->initialised) {
        gl_job_free(job);
        return gl_wk_reply_error(w, tag, op, GPULEASE_INTERNAL, "worker not initialised");
      }
      gl_session_dispatch(w, job);
      gl_session_reap(w);
      return 0;
    }
    snprintf(err, sizeof err, "op %s (0x%04x) is not served by a worker", gl_op_name(op), op);
    gl_job_free(job);
    return gl_wk_reply_error(w, tag, op, GPULEASE_UNSUPPORTED, err);
  }
}

/* ---- loop ------------------------------------------------------------------ */

static int worker_setup(gl_wk *w, int fd, gl_backend *be) {
  memset(w, 0, sizeof *w);
  w->fd = fd;
  w->be = be;
  w->seq_timeout_ms = g_seq_timeout_ms ? g_seq_timeout_ms : GL_WS_DEFAULT_SEQ_TIMEOUT_MS;
  w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  pthread_mutex_init(&w->write_mu, NULL);
  pthread_mutex_init(&w->lost_mu, NULL);
  pthread_mutex_init(&w->sess_mu, NULL);
  pthread_mutex_init(&w->seg_mu, NULL);
  atomic_init(&w->lost, false);
  gl_module_cache_init(&w->cache, be);
  w->err = malloc(GL_WK_ERR_MAX);
  if (w->wake_fd < 0 || !w->err || gl_argbuf_init(&w->submit_args) != 0) return -1;
  w->submit_lane = gl_lane_start(run_submit_job, w);
  return w->submit_lane ? 0 : -1;
}

static void worker_teardown(gl_wk *w) {
  bool lost = atomic_load(&w->lost);
  gl_lane_stop(w->submit_lane);
  gl_session_close_all(w);
  gl_segments_free_all(w);
  gl_ipc_fdq_clear(&w->fdq);
  /* A lost context cannot unload anything; the process exit frees it all. */
  if (lost)
    gl_module_cache_forget(&w->cache);
  else
    gl_module_cache_clear(&w->cache);
  gl_modtab_free(w->modtab, lost);
  gl_jit_cache_close(w->jit);
  gl_suballoc_free(w->alloc);
  free(w->err);
  gl_argbuf_free(&w->submit_args);
  pthread_mutex_destroy(&w->write_mu);
  pthread_mutex_destroy(&w->lost_mu);
  pthread_mutex_destroy(&w->sess_mu);
  pthread_mutex_destroy(&w->seg_mu);
  if (w->wake_fd >= 0) close(w->wake_fd);
}

enum wait_result { WAIT_REQUEST, WAIT_TIMER, WAIT_LOST };

/* How long the main thread watches the channel before it sleeps in poll():
 * requests come in bursts, and a wake-up costs more than a short spin. */
#define GL_WK_SPIN_NS 100000ull

/* Waits until a request can be read, the context is lost, or a session's
 * wait for a missing seq runs out. */
static enum wait_result wait_for_work(gl_wk *w) {
  struct pollfd ch = {.fd = w->fd, .events = POLLIN};
  uint64_t until = gl_mono_ns() + GL_WK_SPIN_NS;
  for (unsigned n = 1; !atomic_load(&w->lost) && gl_mono_ns() < until; n++) {
    if (poll(&ch, 1, 0) > 0) return WAIT_REQUEST;
    if ((n & 15) == 0) sched_yield(); /* for machines with few cores */
    for (int i = 0; i < 16; i++) gl_cpu_relax();
  }
  for (;;) {
    if (atomic_load(&w->lost)) return WAIT_LOST;
    uint64_t deadline = gl_session_next_deadline(w);
    int timeout_ms = -1;
    if (deadline) {
      uint64_t now = gl_mono_ns();
      if (deadline <= now) return WAIT_TIMER;
      uint64_t ms = (deadline - now + 999999) / 1000000;
      timeout_ms = ms > 60000 ? 60000 : (int)ms;
    }
    struct pollfd p[2] = {{.fd = w->fd, .events = POLLIN}, {.fd = w->wake_fd, .events = POLLIN}};
    int n = poll(p, 2, timeout_ms);
    if (n < 0 && errno != EINTR) return WAIT_REQUEST; /* the read reports the error */
    if (atomic_load(&w->lost)) return WAIT_LOST;
    if (n > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) return WAIT_REQUEST;
  }
}

/* After a lost context: stops the lanes and sends WORKER_LOST (tag 0).
 * True when every lane stopped (nothing runs in the worker any more). */
static bool send_lost_notice(gl_wk *w) {
  size_t busy = 0;
  if (!gl_lane_stop_within(w->submit_lane, 2000)) {
    GL_WARN("worker: the GPU_SUBMIT lane is still busy");
    busy++;
  }
  w->submit_lane = NULL;
  gl_buf b;
  gl_buf_init(&b);
  size_t busy_sessions = 0;
  if (gl_session_lost_notice(w, 2000, &b, &busy_sessions) != 0) {
    gl_buf_free(&b);
    GL_ERROR("worker: out of memory listing the sessions of the lost context");
    return false;
  }
  gl_wk_send(w, GL_IPC_NOTICE_TAG, &b);
  return busy + busy_sessions == 0;
}

int gl_worker_run(int fd, gl_backend *backend) {
  gl_wk *w = malloc(sizeof *w);
  if (!w) return GL_WORKER_EXIT_IO;
  if (worker_setup(w, fd, backend) != 0) {
    GL_ERROR("worker: out of memory at start-up");
    worker_teardown(w);
    free(w);
    return GL_WORKER_EXIT_IO;
  }
  int rc = GL_WORKER_EXIT_OK;
  for (;;) {
    switch (wait_for_work(w)) {
    case WAIT_LOST: rc = GL_WORKER_EXIT_CONTEXT_LOST; break;
    case WAIT_TIMER: gl_session_expire_gaps(w, gl_mono_ns()); continue;
    case WAIT_REQUEST: break;
    }
    if (rc == GL_WORKER_EXIT_CONTEXT_LOST) break;
    gl_header h;
    uint8_t *msg = NULL;
    size_t len = 0;
    uint64_t tag = 0;
    gpulease_status hst = GPULEASE_MALFORMED;
    gl_ipc_fdq_clear(&w->fdq); /* a descriptor no message took */
    gl_ipc_result r =
        gl_ipc_read_call_fds(fd, GL_IPC_MAX_BODY, &tag, &h, &msg, &len, &hst, &w->fdq);
    GL_LAT(GL_LAT_W_READ);
    if (r == GL_IPC_EOF) break;
    if (r == GL_IPC_IO_ERROR) {
      if (!atomic_load(&w->lost)) GL_WARN("worker: reading a request failed; exiting");
      rc = GL_WORKER_EXIT_IO;
      break;
    }
    if (r == GL_IPC_BAD_HEADER) {
      /* body_len cannot be trusted, so the stream cannot be followed any
       * further: answer, then stop. */
      gl_wk_reply_error(w, tag, h.op, hst,
                        hst == GPULEASE_UNSUPPORTED
                            ? "unsupported protocol version in request header"
                            : "malformed request header (bad magic or kind)");
      rc = GL_WORKER_EXIT_IO;
      break;
    }
    if (r == GL_IPC_TOO_LARGE) {
      snprintf(w->err, GL_WK_ERR_MAX, "request body of %u bytes exceeds the worker's limit of %u",
               h.body_len, GL_IPC_MAX_BODY);
      if (gl_wk_reply_error(w, tag, h.op, GPULEASE_TOO_LARGE, w->err) != 0) {
        rc = GL_WORKER_EXIT_IO;
        break;
      }
      continue;
    }
    if (serve(w, tag, msg, len) != 0) {
      rc = GL_WORKER_EXIT_IO;
      break;
    }
  }
  if (atomic_load(&w->lost)) {
    /* Tell the daemon which sessions ended with the context. The dead
     * context is left to the process exit; the worker's own memory is
     * freed unless a thread still runs in it. */
    if (send_lost_notice(w)) {
      worker_teardown(w);
      free(w);
    }
    return GL_WORKER_EXIT_CONTEXT_LOST;
  }
  worker_teardown(w);
  free(w);
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
