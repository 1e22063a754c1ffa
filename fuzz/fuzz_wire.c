/*
 * fuzz_wire.c - libFuzzer harness for the gpulease/1 codec (src/proto).
 *
 * Every input is fed to gl_request_decode() (and gl_request_decode_entries(),
 * which must agree, a BATCH's entries included) and gl_response_decode(). The
 * sanitizers catch out-of-bounds reads and undefined behaviour; on top of
 * that the harness checks properties and abort()s when one fails:
 *
 *   - a failed decode returns a known error status and a non-empty,
 *     NUL-terminated message;
 *   - a message that decodes re-encodes (status OK), the encoding is
 *     canonical, so the re-encoded bytes equal the input, and they decode
 *     again to the same struct;
 *   - gl_param_next() walks a decoded GPU_SUBMIT param list, and
 *     gl_launch_param_next() a decoded LAUNCH list, in exactly param_count
 *     steps and ends at params_raw_len; gl_launch_param_put() rebuilds the
 *     LAUNCH list byte for byte;
 *   - gl_request_session() is non-NULL exactly for the session ops other
 *     than SESSION_OPEN, and their session_id is never 0; the ids and
 *     handles of decoded session results are never 0 either;
 *   - gl_response_decode_for() a MEM_ALLOC request with and without the
 *     device address flag takes a MEM_ALLOC result only of the layout the
 *     request asked for, and anything else as gl_response_decode() does.
 *
 * Built two ways: with -fsanitize=fuzzer by fuzz/CMakeLists.txt (GL_FUZZ),
 * and with fuzz/replay_main.c as a plain program that replays the seed
 * corpus under ctest (tests/fuzz-corpus/CMakeLists.txt, test
 * fuzz_wire_replay).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/wire.h"

#define MAX_BODY (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void die(const char *what) {
  fprintf(stderr, "fuzz_wire: property violated: %s\n", what);
  abort();
}

static void check(int cond, const char *what) {
  if (!cond) die(what);
}

/* Equal length and equal bytes; pointers themselves differ (borrowed). */
static int same_bytes(const void *a, const void *b, size_t n) {
  return n == 0 || (a && b && memcmp(a, b, n) == 0);
}

static void check_err(gpulease_status st, const char *err, size_t errlen) {
  check(st == GPULEASE_MALFORMED || st == GPULEASE_UNSUPPORTED || st == GPULEASE_TOO_LARGE ||
            st == GPULEASE_INVALID_ARGUMENT,
        "decode returned an unexpected status");
  check(memchr(err, 0, errlen) != NULL, "error message not NUL-terminated");
  check(err[0] != '\0', "error message empty");
}

static int submit_equal(const gl_submit_req *a, const gl_submit_req *b) {
  return memcmp(&a->auth, &b->auth, sizeof a->auth) == 0 && a->image_format == b->image_format &&
         a->flags == b->flags && a->kernel_name_len == b->kernel_name_len &&
         same_bytes(a->kernel_name, b->kernel_name, a->kernel_name_len) &&
         memcmp(a->grid, b->grid, sizeof a->grid) == 0 &&
         memcmp(a->block, b->block, sizeof a->block) == 0 &&
         a->shared_mem_bytes == b->shared_mem_bytes && a->input_offset == b->input_offset &&
         a->output_offset == b->output_offset && a->output_size == b->output_size &&
         a->param_count == b->param_count && a->params_raw_len == b->params_raw_len &&
         same_bytes(a->params_raw, b->params_raw, a->params_raw_len) &&
         a->image_len == b->image_len && same_bytes(a->image, b->image, a->image_len) &&
         a->input_len == b->input_len && same_bytes(a->input, b->input, a->input_len);
}

static int ref_equal(const gl_session_ref *a, const gl_session_ref *b) {
  return memcmp(&a->auth, &b->auth, sizeof a->auth) == 0 && a->session_id == b->session_id &&
         a->seq == b->seq;
}

/* The fields after the session_ref (compared by the caller). */
static int session_req_equal(const gl_request *a, const gl_request *b) {
  switch (a->op) {
  case GL_OP_SESSION_OPEN: return memcmp(&a->u.auth, &b->u.auth, sizeof a->u.auth) == 0;
  case GL_OP_SYNC: return a->u.sync.ack_seq == b->u.sync.ack_seq;
  case GL_OP_BATCH:
    return a->u.batch.count == b->u.batch.count && a->u.batch.ops_len == b->u.batch.ops_len &&
           same_bytes(a->u.batch.ops, b->u.batch.ops, a->u.batch.ops_len);
  case GL_OP_MEM_WRITE_SHM:
  case GL_OP_MEM_READ_SHM:
    return a->u.mem_shm.buffer == b->u.mem_shm.buffer && a->u.mem_shm.offset == b->u.mem_shm.offset &&
           a->u.mem_shm.segment == b->u.mem_shm.segment &&
           a->u.mem_shm.segment_offset == b->u.mem_shm.segment_offset &&
           a->u.mem_shm.size_bytes == b->u.mem_shm.size_bytes;
  case GL_OP_MEM_ALLOC:
    return a->u.mem_alloc.size_bytes == b->u.mem_alloc.size_bytes &&
           a->u.mem_alloc.has_flags == b->u.mem_alloc.has_flags &&
           a->u.mem_alloc.flags == b->u.mem_alloc.flags;
  case GL_OP_MEM_FREE:
  case GL_OP_MODULE_UNLOAD: return a->u.handle.handle == b->u.handle.handle;
  case GL_OP_MEM_WRITE: {
    const gl_mem_write_req *x = &a->u.mem_write, *y = &b->u.mem_write;
    return x->buffer == y->buffer && x->offset == y->offset && x->data_len == y->data_len &&
           same_bytes(x->data, y->data, x->data_len);
  }
  case GL_OP_MEM_READ: {
    const gl_mem_read_req *x = &a->u.mem_read, *y = &b->u.mem_read;
    return x->buffer == y->buffer && x->offset == y->offset && x->size_bytes == y->size_bytes;
  }
  case GL_OP_MEM_COPY: {
    const gl_mem_copy_req *x = &a->u.mem_copy, *y = &b->u.mem_copy;
    return x->dst_buffer == y->dst_buffer && x->dst_offset == y->dst_offset &&
           x->src_buffer == y->src_buffer && x->src_offset == y->src_offset &&
           x->size_bytes == y->size_bytes;
  }
  case GL_OP_MEMSET: {
    const gl_memset_req *x = &a->u.memset, *y = &b->u.memset;
    return x->buffer == y->buffer && x->offset == y->offset &&
           x->element_size == y->element_size && x->value == y->value && x->count == y->count;
  }
  case GL_OP_MODULE_LOAD: {
    const gl_module_load_req *x = &a->u.module_load, *y = &b->u.module_load;
    return x->image_format == y->image_format && x->image_len == y->image_len &&
           same_bytes(x->image, y->image, x->image_len);
  }
  case GL_OP_FUNC_INFO: {
    const gl_func_info_req *x = &a->u.func_info, *y = &b->u.func_info;
    return x->module == y->module && x->kernel_name_len == y->kernel_name_len &&
           same_bytes(x->kernel_name, y->kernel_name, x->kernel_name_len);
  }
  case GL_OP_LAUNCH: {
    const gl_launch_req *x = &a->u.launch, *y = &b->u.launch;
    return x->function == y->function && memcmp(x->grid, y->grid, sizeof x->grid) == 0 &&
           memcmp(x->block, y->block, sizeof x->block) == 0 &&
           x->shared_mem_bytes == y->shared_mem_bytes && x->param_count == y->param_count &&
           x->params_raw_len == y->params_raw_len &&
           same_bytes(x->params_raw, y->params_raw, x->params_raw_len);
  }
  default: return 1; /* SESSION_CLOSE: the session_ref only */
  }
}

static int request_equal(const gl_request *a, const gl_request *b) {
  if (a->op != b->op) return 0;
  if (gl_op_is_session(a->op)) {
    const gl_session_ref *x = gl_request_session(a), *y = gl_request_session(b);
    if (x && (!y || !ref_equal(x, y))) return 0;
    return session_req_equal(a, b);
  }
  switch (a->op) {
  case GL_OP_LEASE_ALLOC:
    return a->u.alloc.gpu_index == b->u.alloc.gpu_index &&
           a->u.alloc.vram_bytes == b->u.alloc.vram_bytes && a->u.alloc.ttl_s == b->u.alloc.ttl_s;
  case GL_OP_LEASE_RENEW:
    return memcmp(&a->u.renew.auth, &b->u.renew.auth, sizeof a->u.renew.auth) == 0 &&
           a->u.renew.ttl_s == b->u.renew.ttl_s;
  case GL_OP_LEASE_QUERY:
  case GL_OP_LEASE_FREE: return memcmp(&a->u.auth, &b->u.auth, sizeof a->u.auth) == 0;
  case GL_OP_GPU_SUBMIT: return submit_equal(&a->u.submit, &b->u.submit);
  case GL_OP_WORKER_INIT:
    return a->u.worker_init.cuda_ordinal == b->u.worker_init.cuda_ordinal &&
           a->u.worker_init.vram_bytes == b->u.worker_init.vram_bytes;
  case GL_OP_SHM_ATTACH:
    return memcmp(&a->u.shm_attach.auth, &b->u.shm_attach.auth, sizeof a->u.shm_attach.auth) == 0 &&
           a->u.shm_attach.size_bytes == b->u.shm_attach.size_bytes;
  case GL_OP_SHM_DETACH:
    return memcmp(&a->u.shm_detach.auth, &b->u.shm_detach.auth, sizeof a->u.shm_detach.auth) == 0 &&
           a->u.shm_detach.segment == b->u.shm_detach.segment;
  default: return 1; /* empty bodies */
  }
}

static int gpu_equal(const gl_gpu_entry *a, const gl_gpu_entry *b) {
  return a->index == b->index && strcmp(a->uuid, b->uuid) == 0 &&
         strcmp(a->name, b->name) == 0 && a->cc_major == b->cc_major &&
         a->cc_minor == b->cc_minor && a->sm_count == b->sm_count &&
         a->total_vram_bytes == b->total_vram_bytes && a->free_vram_bytes == b->free_vram_bytes &&
         a->leased_vram_bytes == b->leased_vram_bytes && a->active_leases == b->active_leases &&
         a->flags == b->flags;
}

static int inventory_equal(const gl_inventory *a, const gl_inventory *b) {
  if (a->max_ttl_s != b->max_ttl_s || strcmp(a->driver_version, b->driver_version) != 0 ||
      a->gpu_count != b->gpu_count)
    return 0;
  for (unsigned i = 0; i < a->gpu_count; i++)
    if (!gpu_equal(&a->gpus[i], &b->gpus[i])) return 0;
  return 1;
}

static int probe_equal(const gl_probe_resp *a, const gl_probe_resp *b) {
  if (a->count != b->count) return 0;
  for (unsigned i = 0; i < a->count; i++) {
    const gl_probe_gpu *x = &a->gpus[i], *y = &b->gpus[i];
    if (strcmp(x->uuid, y->uuid) != 0 || strcmp(x->name, y->name) != 0 ||
        x->cc_major != y->cc_major || x->cc_minor != y->cc_minor || x->sm_count != y->sm_count ||
        x->total_vram_bytes != y->total_vram_bytes)
      return 0;
  }
  return 1;
}

static int lease_equal(const gl_lease_info *a, const gl_lease_info *b) {
  return a->lease_id == b->lease_id && memcmp(a->secret, b->secret, sizeof a->secret) == 0 &&
         a->gpu_index == b->gpu_index && a->vram_bytes == b->vram_bytes &&
         a->ttl_s == b->ttl_s && a->remaining_ms == b->remaining_ms && a->submits == b->submits;
}

/* Field by field (structs have padding); borrowed ranges by content. */
static int response_equal(const gl_response *a, const gl_response *b) {
  if (a->op != b->op || a->status != b->status || a->msg_len != b->msg_len ||
      !same_bytes(a->msg, b->msg, a->msg_len))
    return 0;
  if (a->status != GPULEASE_OK) return 1;
  switch (a->op) {
  case GL_OP_GET_INVENTORY: return inventory_equal(&a->u.inventory, &b->u.inventory);
  case GL_OP_LEASE_ALLOC:
  case GL_OP_LEASE_RENEW:
  case GL_OP_LEASE_QUERY: return lease_equal(&a->u.lease, &b->u.lease);
  case GL_OP_GPU_SUBMIT:
    return a->u.submit.gpu_time_ns == b->u.submit.gpu_time_ns &&
           a->u.submit.output_len == b->u.submit.output_len &&
           same_bytes(a->u.submit.output, b->u.submit.output, a->u.submit.output_len);
  case GL_OP_WORKER_INIT:
    return a->u.worker_init.region_base == b->u.worker_init.region_base &&
           strcmp(a->u.worker_init.device_name, b->u.worker_init.device_name) == 0;
  case GL_OP_WORKER_PROBE: return probe_equal(&a->u.probe, &b->u.probe);
  case GL_OP_WORKER_LOST: {
    const gl_worker_lost_resp *x = &a->u.worker_lost, *y = &b->u.worker_lost;
    if (x->count != y->count) return 0;
    for (unsigned i = 0; i < x->count; i++) {
      const gl_lost_session *p = &x->sessions[i], *q = &y->sessions[i];
      if (p->session_id != q->session_id || p->status != q->status || p->op != q->op ||
          p->seq != q->seq || p->msg_len != q->msg_len || !same_bytes(p->msg, q->msg, p->msg_len))
        return 0;
    }
    return 1;
  }
  case GL_OP_SESSION_OPEN:
  case GL_OP_SHM_ATTACH: return a->u.handle == b->u.handle;
  case GL_OP_NODE_INFO:
    return strcmp(a->u.node_info.local_socket, b->u.node_info.local_socket) == 0 &&
           memcmp(a->u.node_info.boot_id, b->u.node_info.boot_id, 16) == 0;
  case GL_OP_BATCH:
    return a->u.batch.count == b->u.batch.count &&
           a->u.batch.replies_len == b->u.batch.replies_len &&
           same_bytes(a->u.batch.replies, b->u.batch.replies, a->u.batch.replies_len);
  case GL_OP_MEM_ALLOC:
    return a->u.mem_alloc.buffer == b->u.mem_alloc.buffer &&
           a->u.mem_alloc.region_offset == b->u.mem_alloc.region_offset &&
           a->u.mem_alloc.has_device_address == b->u.mem_alloc.has_device_address &&
           a->u.mem_alloc.device_address == b->u.mem_alloc.device_address;
  case GL_OP_SYNC:
    return a->u.sync.error_status == b->u.sync.error_status &&
           a->u.sync.error_op == b->u.sync.error_op && a->u.sync.error_seq == b->u.sync.error_seq;
  case GL_OP_MEM_READ:
    return a->u.mem_read.data_len == b->u.mem_read.data_len &&
           same_bytes(a->u.mem_read.data, b->u.mem_read.data, a->u.mem_read.data_len);
  case GL_OP_MODULE_LOAD:
    return a->u.module_load.module == b->u.module_load.module &&
           a->u.module_load.cache == b->u.module_load.cache;
  case GL_OP_FUNC_INFO: {
    const gl_func_info_resp *x = &a->u.func_info, *y = &b->u.func_info;
    if (x->function != y->function || x->num_regs != y->num_regs ||
        x->max_threads_per_block != y->max_threads_per_block ||
        x->static_shared_bytes != y->static_shared_bytes || x->local_bytes != y->local_bytes ||
        x->const_bytes != y->const_bytes || x->ptx_version != y->ptx_version ||
        x->binary_version != y->binary_version || x->param_count != y->param_count)
      return 0;
    if (x->param_count == GL_WIRE_PARAMS_UNKNOWN) return 1;
    return memcmp(x->param_sizes, y->param_sizes, x->param_count * sizeof x->param_sizes[0]) == 0;
  }
  default: return 1; /* empty results */
  }
}

/* Walks a decoded LAUNCH list and rebuilds it with gl_launch_param_put. */
static void check_launch_params(const gl_launch_req *l) {
  size_t pos = 0, n = 0;
  gl_launch_param p;
  gl_buf b;
  gl_buf_init(&b);
  while (gl_launch_param_next(l, &pos, &p)) {
    check(p.kind == GL_LAUNCH_PARAM_BUFFER || p.kind == GL_LAUNCH_PARAM_SCALAR,
          "gl_launch_param_next returned a bad kind");
    check(gl_launch_param_put(&b, &p) == GPULEASE_OK, "gl_launch_param_put refused a param");
    n++;
  }
  check(n == l->param_count, "gl_launch_param_next count differs from param_count");
  check(pos == l->params_raw_len, "gl_launch_param_next did not end at params_raw_len");
  check(b.len == l->params_raw_len && same_bytes(b.data, l->params_raw, b.len),
        "gl_launch_param_put does not rebuild the list");
  gl_buf_free(&b);
}

static void check_session_req(const gl_request *req) {
  const gl_session_ref *s = gl_request_session(req);
  int want = gl_op_is_session(req->op) && req->op != GL_OP_SESSION_OPEN;
  check((s != NULL) == want, "gl_request_session disagrees with the op");
  if (s) check(s->session_id != 0, "decoded session_id 0");
  if (req->op == GL_OP_LAUNCH) check_launch_params(&req->u.launch);
}

static void check_session_resp(const gl_response *r) {
  if (r->status != GPULEASE_OK) return;
  switch (r->op) {
  case GL_OP_SESSION_OPEN: check(r->u.handle != 0, "decoded handle 0"); break;
  case GL_OP_MEM_ALLOC: check(r->u.mem_alloc.buffer != 0, "decoded handle 0"); break;
  case GL_OP_WORKER_LOST:
    check(r->u.worker_lost.count <= GL_WIRE_MAX_LOST_SESSIONS, "decoded WORKER_LOST count > 64");
    for (unsigned i = 0; i < r->u.worker_lost.count; i++)
      check(r->u.worker_lost.sessions[i].session_id != 0 &&
                r->u.worker_lost.sessions[i].status != 0 &&
                r->u.worker_lost.sessions[i].status < 100,
            "decoded WORKER_LOST entry out of range");
    break;
  case GL_OP_MODULE_LOAD:
    check(r->u.module_load.module != 0 && r->u.module_load.cache <= GL_MODULE_CACHE_DISK,
          "decoded MODULE_LOAD result out of range");
    break;
  case GL_OP_FUNC_INFO:
    check(r->u.func_info.function != 0 &&
              (r->u.func_info.param_count <= GPULEASE_MAX_PARAMS ||
               r->u.func_info.param_count == GL_WIRE_PARAMS_UNKNOWN),
          "decoded FUNC_INFO result out of range");
    break;
  case GL_OP_SYNC: check(r->u.sync.error_status < 100, "decoded SYNC error_status >= 100"); break;
  case GL_OP_MEM_READ:
    check(r->u.mem_read.data_len <= GL_WIRE_MAX_CHUNK, "decoded MEM_READ data_len too large");
    break;
  default: break;
  }
}

static void check_params(const gl_submit_req *s) {
  size_t pos = 0, n = 0;
  gl_param p;
  while (gl_param_next(s, &pos, &p)) {
    check(p.kind == GPULEASE_PARAM_POINTER || p.kind == GPULEASE_PARAM_SCALAR,
          "gl_param_next returned a bad kind");
    n++;
  }
  check(n == s->param_count, "gl_param_next count differs from param_count");
  check(pos == s->params_raw_len, "gl_param_next did not end at params_raw_len");
}

static void fuzz_request(const uint8_t *data, size_t size) {
  static gl_request req, again;
  char err[256];
  uint16_t op;
  gpulease_status st = gl_request_decode(data, size, MAX_BODY, &req, &op, err, sizeof err);
  if (st != GPULEASE_OK) {
    check_err(st, err, sizeof err);
    return;
  }
  if (req.op == GL_OP_GPU_SUBMIT) check_params(&req.u.submit);
  check_session_req(&req);
  /* The decoder that keeps a BATCH's entries agrees with the plain one,
   * and each entry with the entry's own decoding. */
  static gl_request with;
  gl_request *ents = NULL;
  check(gl_request_decode_entries(data, size, MAX_BODY, &with, &op, &ents, err, sizeof err) ==
            GPULEASE_OK,
        "decode_entries refuses what decode takes");
  check((req.op == GL_OP_BATCH) == (ents != NULL), "entries for a BATCH only");
  if (ents) {
    size_t pos = 0, n = 0;
    const uint8_t *m;
    static gl_request one;
    for (uint16_t i = 0; i < req.u.batch.count; i++) {
      check(gl_batch_next(req.u.batch.ops, req.u.batch.ops_len, &pos, &m, &n), "entry missing");
      check(gl_request_decode(m, n, n, &one, NULL, NULL, 0) == GPULEASE_OK, "entry decodes");
      check(request_equal(&one, &ents[i]), "entry differs from its own decoding");
    }
    free(ents);
  }
  check(gl_request_validate(&req, err, sizeof err) == GPULEASE_OK, "decoded request invalid");

  gl_buf b;
  gl_buf_init(&b);
  check(gl_request_encode(&req, &b) == GPULEASE_OK, "decoded request does not re-encode");
  check(b.len == size && memcmp(b.data, data, size) == 0, "request re-encoding not canonical");
  check(gl_request_decode(b.data, b.len, MAX_BODY, &again, &op, err, sizeof err) == GPULEASE_OK,
        "re-encoded request does not decode");
  check(request_equal(&req, &again), "re-decoded request differs");
  gl_buf_free(&b);
}

static void fuzz_response(const uint8_t *data, size_t size) {
  static gl_response resp, again; /* ~15 KiB each: keep off the stack */
  char err[256];
  gpulease_status st = gl_response_decode(data, size, MAX_BODY, &resp, err, sizeof err);
  if (st != GPULEASE_OK) {
    check_err(st, err, sizeof err);
    return;
  }
  check_session_resp(&resp);
  gl_buf b;
  gl_buf_init(&b);
  check(gl_response_encode(&resp, &b) == GPULEASE_OK, "decoded response does not re-encode");
  check(b.len == size && memcmp(b.data, data, size) == 0, "response re-encoding not canonical");
  check(gl_response_decode(b.data, b.len, MAX_BODY, &again, err, sizeof err) == GPULEASE_OK,
        "re-encoded response does not decode");
  check(response_equal(&resp, &again), "re-decoded response differs");
  gl_buf_free(&b);
  /* Decoded for a MEM_ALLOC request, asked for the device address or not,
   * an OK MEM_ALLOC result is taken exactly when it is the one asked for
   * (MALFORMED otherwise); any other response as by the plain decoder. */
  for (int ask = 0; ask < 2; ask++) {
    gl_request q = {.op = GL_OP_MEM_ALLOC};
    q.u.mem_alloc.has_flags = ask;
    q.u.mem_alloc.flags = ask ? GL_MEM_ALLOC_F_ADDRESS : 0;
    st = gl_response_decode_for(&q, data, size, MAX_BODY, &again, err, sizeof err);
    bool fits = resp.op != GL_OP_MEM_ALLOC || resp.status != GPULEASE_OK ||
                resp.u.mem_alloc.has_device_address == (ask != 0);
    check(fits ? st == GPULEASE_OK : st == GPULEASE_MALFORMED,
          "decode_for MEM_ALLOC disagrees with the result's layout");
    if (st == GPULEASE_OK) check(response_equal(&resp, &again), "decode_for differs");
    else check_err(st, err, sizeof err);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gl_header h;
  (void)gl_header_decode(data, size, &h);
  fuzz_request(data, size);
  fuzz_response(data, size);
  return 0;
}
