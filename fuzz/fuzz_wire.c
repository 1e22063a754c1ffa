/*
 * fuzz_wire.c - libFuzzer harness for the gpulease/1 codec (src/proto).
 *
 * Every input is fed to gl_request_decode() and gl_response_decode(). The
 * sanitizers catch out-of-bounds reads and undefined behaviour; on top of
 * that the harness checks properties and abort()s when one fails:
 *
 *   - a failed decode returns a known error status and a non-empty,
 *     NUL-terminated message;
 *   - a message that decodes re-encodes (status OK), the encoding is
 *     canonical, so the re-encoded bytes equal the input, and they decode
 *     again to the same struct;
 *   - gl_param_next() walks a decoded GPU_SUBMIT param list in exactly
 *     param_count steps and ends at params_raw_len.
 *
 * Built two ways: with -fsanitize=fuzzer by fuzz/CMakeLists.txt (GL_FUZZ),
 * and with fuzz/replay_main.c as a plain program that replays the seed
 * corpus under ctest (tests/proto.cmake, test fuzz_wire_replay).
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

static int request_equal(const gl_request *a, const gl_request *b) {
  if (a->op != b->op) return 0;
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
  default: return 1;
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
  gl_buf b;
  gl_buf_init(&b);
  check(gl_response_encode(&resp, &b) == GPULEASE_OK, "decoded response does not re-encode");
  check(b.len == size && memcmp(b.data, data, size) == 0, "response re-encoding not canonical");
  check(gl_response_decode(b.data, b.len, MAX_BODY, &again, err, sizeof err) == GPULEASE_OK,
        "re-encoded response does not decode");
  check(response_equal(&resp, &again), "re-decoded response differs");
  gl_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gl_header h;
  (void)gl_header_decode(data, size, &h);
  fuzz_request(data, size);
  fuzz_response(data, size);
  return 0;
}
