/*
 * worker.c - the worker loop: framing, validation and dispatch.
 *
 * Everything device-specific is behind gl_backend (backend.h); this file
 * reads requests, checks them (submit_check.h), builds kernel arguments,
 * calls the backend and writes one response per request.
 */
#include "worker/worker.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/log.h"
#include "worker/ipc.h"
#include "worker/module_cache.h"
#include "worker/submit_check.h"

/* Room for a message with a JIT log in it; the wire caps messages at
 * GL_WIRE_MAX_MESSAGE bytes anyway. */
#define ERR_MAX 24576

/* Each argument is copied into its own 64-byte slot of the argument area
 * (a scalar is at most GPULEASE_MAX_SCALAR_BYTES = 64). */
#define SLOT_BYTES 64
#define SLOT_AREA (GPULEASE_MAX_PARAMS * SLOT_BYTES)

/* ---- state ----------------------------------------------------------------- */

typedef struct worker {
  int fd;
  gl_backend *be;
  gl_module_cache cache;
  bool initialised;
  uint64_t vram_bytes;
  uint64_t region_base;
  char device_name[96];
  uint64_t submits;
  char *err;            /* ERR_MAX bytes */
  uint8_t *arg_area;    /* SLOT_AREA + GL_BACKEND_ARG_READABLE bytes */
  void **args;          /* GL_BACKEND_ARG_SLOTS pointers */
  size_t arg_sizes[GPULEASE_MAX_PARAMS + 1];
  size_t kernel_sizes[GPULEASE_MAX_PARAMS + 1];
} worker;

/* ---- replies --------------------------------------------------------------- */

/* Writes one encoded response. 0, or -1 when the daemon is gone. */
static int send_buf(worker *w, gl_buf *b) {
  int rc = gl_ipc_write_all(w->fd, b->data, b->len);
  gl_buf_free(b);
  if (rc != 0) GL_WARN("worker: cannot write a reply: the daemon is gone");
  return rc;
}

static int reply_error(worker *w, uint16_t op, gpulease_status st, const char *msg) {
  gl_buf b;
  gl_buf_init(&b);
  if (gl_response_encode_error(op, st, &b, "%s", msg) != GPULEASE_OK) {
    gl_buf_free(&b);
    return -1;
  }
  GL_DEBUG("worker: %s -> %s: %s", gl_op_name(op), gpulease_status_name((int)st), msg);
  return send_buf(w, &b);
}

static int reply(worker *w, const gl_response *resp) {
  gl_buf b;
  gl_buf_init(&b);
  if (gl_response_encode(resp, &b) != GPULEASE_OK) {
    gl_buf_free(&b);
    return reply_error(w, resp->op, GPULEASE_INTERNAL, "worker out of memory encoding a reply");
  }
  return send_buf(w, &b);
}

/* ---- ops ----------------------------------------------------------------- */

static int do_probe(worker *w) {
  gl_response *resp = calloc(1, sizeof *resp);
  if (!resp) return reply_error(w, GL_OP_WORKER_PROBE, GPULEASE_INTERNAL, "out of memory");
  gpulease_status st = w->be->ops->probe(w->be, &resp->u.probe, w->err, ERR_MAX);
  int rc;
  if (st != GPULEASE_OK) {
    rc = reply_error(w, GL_OP_WORKER_PROBE, st, w->err);
  } else {
    resp->op = GL_OP_WORKER_PROBE;
    resp->status = GPULEASE_OK;
    resp->msg = "";
    rc = reply(w, resp);
  }
  free(resp);
  return rc;
}

static int do_init(worker *w, const gl_worker_init_req *req) {
  const uint16_t op = GL_OP_WORKER_INIT;
  if (w->initialised)
    return reply_error(w, op, GPULEASE_INTERNAL, "worker already initialised (one WORKER_INIT "
                                                 "per worker)");
  if (req->vram_bytes == 0)
    return reply_error(w, op, GPULEASE_INVALID_ARGUMENT, "vram_bytes must be at least 1");
  uint64_t base = 0;
  char name[96] = "";
  gpulease_status st = w->be->ops->init(w->be, req->cuda_ordinal, req->vram_bytes, &base, name,
                                        sizeof name, w->err, ERR_MAX);
  if (st != GPULEASE_OK) return reply_error(w, op, st, w->err);
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
  return reply(w, &resp);
}

/* Fills w->args / w->arg_sizes from the request: without a param list the
 * region's base pointer is the only argument. Returns the argument count. */
static size_t build_args(worker *w, const gl_submit_req *req) {
  memset(w->arg_area, 0, SLOT_AREA);
  size_t n = 0;
  if (!(req->flags & GL_SUBMIT_F_PARAMS)) {
    uint64_t base = w->region_base;
    memcpy(w->arg_area, &base, sizeof base);
    w->arg_sizes[0] = sizeof base;
    return 1;
  }
  size_t pos = 0;
  gl_param p;
  while (n < GPULEASE_MAX_PARAMS && gl_param_next(req, &pos, &p)) {
    uint8_t *slot = w->arg_area + n * SLOT_BYTES;
    if (p.kind == GPULEASE_PARAM_POINTER) {
      uint64_t ptr = w->region_base + p.offset; /* offset < vram: checked */
      memcpy(slot, &ptr, sizeof ptr);
      w->arg_sizes[n] = sizeof ptr;
    } else {
      memcpy(slot, p.value, p.size);
      w->arg_sizes[n] = p.size;
    }
    n++;
  }
  return n;
}

/* When the backend knows the kernel's parameter sizes, refuses a list that
 * does not match them. OK when it matches or cannot be checked. */
static gpulease_status check_args(worker *w, void *fn, const gl_submit_req *req,
                                  const char *name, size_t n) {
  if (!w->be->ops->param_sizes) return GPULEASE_OK;
  size_t count = 0;
  gpulease_status st = w->be->ops->param_sizes(w->be, fn, w->kernel_sizes,
                                               GPULEASE_MAX_PARAMS + 1, &count, w->err, ERR_MAX);
  if (st != GPULEASE_OK) return GPULEASE_OK; /* cannot tell: launch as asked */
  if (count != n) {
    snprintf(w->err, ERR_MAX, "kernel '%s' takes %zu parameter%s but the request passes %zu%s",
             name, count, count == 1 ? "" : "s", n,
             (req->flags & GL_SUBMIT_F_PARAMS)
                 ? ""
                 : " (without a param list the region's pointer is the only parameter)");
    return GPULEASE_INVALID_ARGUMENT;
  }
  for (size_t i = 0; i < n && i <= GPULEASE_MAX_PARAMS; i++) {
    if (w->kernel_sizes[i] != w->arg_sizes[i]) {
      snprintf(w->err, ERR_MAX,
               "parameter %zu of kernel '%s' is %zu bytes but the request passes %zu bytes "
               "(pointers are 8 bytes)",
               i, name, w->kernel_sizes[i], w->arg_sizes[i]);
      return GPULEASE_INVALID_ARGUMENT;
    }
  }
  return GPULEASE_OK;
}

/* Runs one submit. On failure returns the status with w->err filled; on
 * success *output (malloc'd, may be NULL for 0 bytes) and *gpu_time_ns. */
static gpulease_status run_submit(worker *w, const gl_submit_req *req, uint8_t **output,
                                  uint64_t *gpu_time_ns) {
  gpulease_status st = gl_submit_check(req, w->vram_bytes, GL_WORKER_MAX_OUTPUT, w->err,
                                       ERR_MAX);
  if (st != GPULEASE_OK) return st;

  gpulease_image_format fmt;
  size_t text_len;
  st = gl_image_resolve(req->image_format, req->image, req->image_len, &fmt, &text_len, w->err,
                        ERR_MAX);
  if (st != GPULEASE_OK) return st;

  char name[GL_WIRE_MAX_KERNEL_NAME + 1];
  memcpy(name, req->kernel_name, req->kernel_name_len);
  name[req->kernel_name_len] = 0;

  void *module = NULL, *fn = NULL;
  st = gl_module_cache_get(&w->cache, req->image, text_len, fmt, &module, w->err, ERR_MAX);
  if (st != GPULEASE_OK) return st;
  st = w->be->ops->get_function(w->be, module, name, &fn, w->err, ERR_MAX);
  if (st != GPULEASE_OK) return st;

  size_t n = build_args(w, req);
  st = check_args(w, fn, req, name, n);
  if (st != GPULEASE_OK) return st;

  if (req->input_len > 0) {
    st = w->be->ops->write(w->be, req->input_offset, req->input, req->input_len, w->err,
                           ERR_MAX);
    if (st != GPULEASE_OK) return st;
  }

  gl_launch l;
  memset(&l, 0, sizeof l);
  l.kernel_name = name;
  memcpy(l.grid, req->grid, sizeof l.grid);
  memcpy(l.block, req->block, sizeof l.block);
  l.shared_mem_bytes = req->shared_mem_bytes;
  l.args = w->args;
  l.arg_sizes = w->arg_sizes;
  l.arg_count = n;
  st = w->be->ops->launch(w->be, fn, &l, gpu_time_ns, w->err, ERR_MAX);
  if (st != GPULEASE_OK) return st;

  *output = NULL;
  if (req->output_size > 0) {
    uint8_t *out = malloc((size_t)req->output_size);
    if (!out) {
      snprintf(w->err, ERR_MAX, "worker out of memory for %llu bytes of output",
               (unsigned long long)req->output_size);
      return GPULEASE_INTERNAL;
    }
    st = w->be->ops->read(w->be, req->output_offset, out, (size_t)req->output_size, w->err,
                          ERR_MAX);
    if (st != GPULEASE_OK) {
      free(out);
      return st;
    }
    *output = out;
  }
  return GPULEASE_OK;
}

static int do_submit(worker *w, const gl_submit_req *req) {
  const uint16_t op = GL_OP_GPU_SUBMIT;
  if (!w->initialised)
    return reply_error(w, op, GPULEASE_INTERNAL, "worker not initialised (no WORKER_INIT yet)");
  uint8_t *output = NULL;
  uint64_t ns = 0;
  gpulease_status st = run_submit(w, req, &output, &ns);
  if (st != GPULEASE_OK) return reply_error(w, op, st, w->err);
  w->submits++;
  gl_response resp;
  memset(&resp, 0, sizeof resp);
  resp.op = op;
  resp.status = GPULEASE_OK;
  resp.msg = "";
  resp.u.submit.gpu_time_ns = ns;
  resp.u.submit.output = output;
  resp.u.submit.output_len = (uint32_t)req->output_size;
  int rc = reply(w, &resp);
  free(output);
  return rc;
}

/* Serves one whole message. 0 to go on, -1 when the reply could not be
 * written. */
static int serve(worker *w, const uint8_t *msg, size_t len) {
  gl_request req;
  uint16_t op = 0;
  w->err[0] = 0;
  gpulease_status st = gl_request_decode(msg, len, GL_IPC_MAX_BODY, &req, &op, w->err, ERR_MAX);
  if (st != GPULEASE_OK) return reply_error(w, op, st, w->err[0] ? w->err : "malformed request");
  switch (req.op) {
  case GL_OP_WORKER_PROBE:
    return do_probe(w);
  case GL_OP_WORKER_INIT:
    return do_init(w, &req.u.worker_init);
  case GL_OP_GPU_SUBMIT:
    return do_submit(w, &req.u.submit);
  default:
    snprintf(w->err, ERR_MAX, "op %s (0x%04x) is not served by a worker", gl_op_name(req.op),
             req.op);
    return reply_error(w, req.op, GPULEASE_UNSUPPORTED, w->err);
  }
}

/* ---- loop ------------------------------------------------------------------ */

static int worker_setup(worker *w, int fd, gl_backend *be) {
  memset(w, 0, sizeof *w);
  w->fd = fd;
  w->be = be;
  gl_module_cache_init(&w->cache, be);
  w->err = malloc(ERR_MAX);
  w->arg_area = calloc(1, SLOT_AREA + GL_BACKEND_ARG_READABLE);
  w->args = malloc(GL_BACKEND_ARG_SLOTS * sizeof *w->args);
  if (!w->err || !w->arg_area || !w->args) return -1;
  /* Argument i lives in slot i; pointers past the last slot all point at
   * the zero padding, readable GL_BACKEND_ARG_READABLE bytes. */
  for (size_t i = 0; i < GL_BACKEND_ARG_SLOTS; i++)
    w->args[i] = w->arg_area + (i < GPULEASE_MAX_PARAMS ? i * SLOT_BYTES : SLOT_AREA);
  return 0;
}

static void worker_teardown(worker *w, bool context_lost) {
  /* A lost context cannot unload anything; the process exit frees it all. */
  if (context_lost)
    gl_module_cache_forget(&w->cache);
  else
    gl_module_cache_clear(&w->cache);
  free(w->err);
  free(w->arg_area);
  free(w->args);
}

int gl_worker_run(int fd, gl_backend *backend) {
  worker *w = malloc(sizeof *w);
  if (!w) return GL_WORKER_EXIT_IO;
  if (worker_setup(w, fd, backend) != 0) {
    GL_ERROR("worker: out of memory at start-up");
    worker_teardown(w, false);
    free(w);
    return GL_WORKER_EXIT_IO;
  }
  int rc = GL_WORKER_EXIT_OK;
  for (;;) {
    gl_header h;
    uint8_t *msg = NULL;
    size_t len = 0;
    gpulease_status hst = GPULEASE_MALFORMED;
    gl_ipc_result r = gl_ipc_read(fd, GL_IPC_MAX_BODY, &h, &msg, &len, &hst);
    if (r == GL_IPC_EOF) break;
    if (r == GL_IPC_IO_ERROR) {
      GL_WARN("worker: reading a request failed; exiting");
      rc = GL_WORKER_EXIT_IO;
      break;
    }
    if (r == GL_IPC_BAD_HEADER) {
      /* body_len cannot be trusted, so the stream cannot be followed any
       * further: answer, then stop. */
      reply_error(w, h.op, hst,
                  hst == GPULEASE_UNSUPPORTED ? "unsupported protocol version in request header"
                                              : "malformed request header (bad magic or kind)");
      rc = GL_WORKER_EXIT_IO;
      break;
    }
    if (r == GL_IPC_TOO_LARGE) {
      snprintf(w->err, ERR_MAX, "request body of %u bytes exceeds the worker's limit of %u",
               h.body_len, GL_IPC_MAX_BODY);
      if (reply_error(w, h.op, GPULEASE_TOO_LARGE, w->err) != 0) {
        rc = GL_WORKER_EXIT_IO;
        break;
      }
      continue;
    }
    int sr = serve(w, msg, len);
    free(msg);
    if (backend->ops->context_lost(backend)) {
      GL_ERROR("worker: the CUDA context is lost after a device fault; exiting with status %d",
               GL_WORKER_EXIT_CONTEXT_LOST);
      /* Tell the daemon at once (end of stream), before the slow teardown
       * of a faulted context, so it starts a fresh worker for the lease's
       * next request instead of queueing it here. */
      shutdown(fd, SHUT_RDWR);
      rc = GL_WORKER_EXIT_CONTEXT_LOST;
      break;
    }
    if (sr != 0) {
      rc = GL_WORKER_EXIT_IO;
      break;
    }
  }
  worker_teardown(w, rc == GL_WORKER_EXIT_CONTEXT_LOST);
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
