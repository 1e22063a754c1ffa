/*
 * submit.c - GPU_SUBMIT as an implicit one-op session (submit.h).
 *
 * On the implicit session's lane a GPU_SUBMIT is its own checks
 * (submit_check.h: dimensions, the ranges within the lease's VRAM, the
 * output's size), then the session ops it is made of: the module (the
 * session's module cache, over the lease's module table that the client
 * sessions load through), the function (found once per module and name),
 * and the one launch of the worker (gl_sop_launch: the argument checks,
 * the input written, the kernel run and waited for, the output read; with
 * one wait where the backend fuses launch and read). Then what the kernel
 * printed, the lost-context check and the reply. A GPU_SUBMIT has no SYNC
 * to acknowledge a failure, so the session's failure is cleared after
 * each one: nothing carries over to the next.
 *
 * It stands on wk_types.h, wk_reply.h and wk_check.h, and on the sessions'
 * session.h and session_ops.h.
 */
#include "worker/submit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/lat.h"
#include "worker/session.h"
#include "worker/session_ops.h"
#include "worker/submit_check.h"
#include "worker/wk_check.h"
#include "worker/wk_reply.h"
#include "worker/worker.h"

/* The function `name` of the cached module e: found earlier, or now (and
 * kept with the module). */
static gpulease_status submit_function(gl_wsession *s, gl_module_entry *e, const char *name,
                                       size_t name_len, gl_wfunction **fo) {
  for (gl_wfunction *f = e->funcs; f; f = f->next)
    if (strlen(f->name) == name_len && memcmp(f->name, name, name_len) == 0) {
      *fo = f;
      return GPULEASE_OK;
    }
  gl_wfunction *f = calloc(1, sizeof *f);
  if (!f) return gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory");
  gpulease_status st = gl_sop_function_find(s, e->module, name, name_len, f);
  if (st != GPULEASE_OK) {
    free(f);
    return st;
  }
  f->next = e->funcs;
  e->funcs = f;
  *fo = f;
  return GPULEASE_OK;
}

/* The launch a GPU_SUBMIT asks for, as a session's LAUNCH_EX has it
 * (no function handle: the caller has the function). */
static void submit_launch_req(const gl_submit_req *req, gl_launch_req *r) {
  memset(r, 0, sizeof *r);
  memcpy(r->grid, req->grid, sizeof r->grid);
  memcpy(r->block, req->block, sizeof r->block);
  r->shared_mem_bytes = req->shared_mem_bytes;
  if (req->flags & GL_SUBMIT_F_COOPERATIVE) r->flags |= GL_LAUNCH_EX_COOPERATIVE;
  if (req->flags & GL_SUBMIT_F_CLUSTER) memcpy(r->cluster, req->cluster, sizeof r->cluster);
}

/* Runs one GPU_SUBMIT. On failure returns the status with s->err filled;
 * on success *output (malloc'd, NULL for 0 bytes) and *gpu_time_ns. */
static gpulease_status run_submit(gl_wsession *s, const gl_submit_req *req, uint8_t **output,
                                  uint64_t *gpu_time_ns) {
  gl_wk *w = s->w;
  uint64_t kout_room = req->flags & GL_SUBMIT_F_KOUT ? GL_KOUT_MAX + 13 : 0;
  gpulease_status st = gl_submit_check(req, w->vram_bytes, GL_WORKER_MAX_OUTPUT - kout_room,
                                       s->err, GL_WK_ERR_MAX);
  if (st != GPULEASE_OK) return st;

  gpulease_image_format fmt;
  size_t text_len;
  st = gl_image_resolve(req->image_format, req->image, req->image_len, &fmt, &text_len, s->err,
                        GL_WK_ERR_MAX);
  if (st != GPULEASE_OK) return st;

  /* MODULE_LOAD, FUNC_INFO */
  gl_module_entry *e = NULL;
  st = gl_module_cache_get(s->submit_modules, req->image, text_len, fmt, &e, s->err,
                           GL_WK_ERR_MAX);
  if (st != GPULEASE_OK) return st;
  gl_wfunction *f = NULL;
  st = submit_function(s, e, req->kernel_name, req->kernel_name_len, &f);
  if (st != GPULEASE_OK) return st;

  uint8_t *out = NULL;
  if (req->output_size > 0 && !(out = malloc((size_t)req->output_size)))
    return gl_sop_errf(s, GPULEASE_INTERNAL, "worker out of memory for %llu bytes of output",
                       (unsigned long long)req->output_size);
  /* MEM_WRITE, LAUNCH_EX, SYNC, MEM_READ */
  gl_launch_req r;
  submit_launch_req(req, &r);
  gl_sop_sync sync = {.req = req, .out = out};
  st = gl_sop_launch(s, GL_OP_GPU_SUBMIT, &r, f, NULL, &sync);
  if (st != GPULEASE_OK) {
    free(out);
    return st;
  }
  *output = out;
  *gpu_time_ns = sync.gpu_time_ns;
  return GPULEASE_OK;
}

/* The implicit session's lane: one GPU_SUBMIT, answered. */
static void run_submit_job(void *ctx, gl_job *job) {
  gl_wsession *s = ctx;
  gl_wk *w = s->w;
  const uint16_t op = GL_OP_GPU_SUBMIT;
  const gl_submit_req *req = &job->req.u.submit;
  s->err[0] = 0;
  if (atomic_load(&w->p->lost)) {
    /* Left unanswered: once this worker has exited, the daemon sends the
     * request, which never ran, to a fresh worker. */
    gl_job_free(job);
    return;
  }
  uint8_t *output = NULL;
  uint64_t ns = 0;
  gpulease_status st = run_submit(s, req, &output, &ns);
  char asserts[2048] = "";
  gl_wk_kout_collect(w, st == GPULEASE_OK ? NULL : asserts, sizeof asserts);
  if (st != GPULEASE_OK && asserts[0]) {
    size_t n = strlen(s->err);
    snprintf(s->err + n, GL_WK_ERR_MAX - n, "%s%s", n ? ": " : "", asserts);
  }
  if (st != GPULEASE_OK) {
    if (gl_wk_check_lost(w, s->err) && w->p->shared) {
      size_t n = strlen(s->err);
      snprintf(s->err + n, GL_WK_ERR_MAX - n,
               " [this lease is of class shared: the lost CUDA context held every shared lease "
               "of the GPU, and they have all ended]");
    }
    gl_wk_reply_error(w, job->tag, op, st, s->err);
  } else {
    gl_response resp;
    memset(&resp, 0, sizeof resp);
    resp.op = op;
    resp.status = GPULEASE_OK;
    resp.msg = "";
    resp.u.submit.gpu_time_ns = ns;
    resp.u.submit.output = output;
    resp.u.submit.output_len = (uint32_t)req->output_size;
    char *kout = NULL;
    if (req->flags & GL_SUBMIT_F_KOUT) {
      resp.u.submit.has_kout = true;
      gl_wk_kout_take(w, &resp.u.submit.kout, &kout);
    }
    gl_wk_reply(w, job->tag, &resp);
    free(output);
    free(kout);
  }
  gl_sop_clear_failure(s); /* answered: no SYNC will acknowledge it */
  gl_job_free(job);
}

void gl_submit_dispatch(gl_wk *w, gl_job *job) {
  gl_wsession *s = gl_session_implicit(w, run_submit_job);
  if (!s) {
    gl_wk_reply_error(w, job->tag, GL_OP_GPU_SUBMIT, GPULEASE_INTERNAL,
                      "worker out of memory (cannot start the lease's GPU_SUBMIT session)");
    gl_job_free(job);
    return;
  }
  gl_lane_push(s->lane, job);
}
