/*
 * wire_submit.c - the codec of GPU_SUBMIT, the one-shot op (image, kernel,
 * params, input and output in one message): its request, checked field by
 * field, and its result (gl_wire__op_GPU_SUBMIT, called by wire.c's
 * entry points). The param list it carries is read by wire_params.c. Layouts in
 * wire.h and docs/protocol.md.
 */
#include "proto/wire_internal.h"

/* Body bytes of a GPU_SUBMIT request besides the kernel name, the param
 * list, the image and the input (see wire.h). */
#define SUBMIT_FIXED_BYTES 114

/* ========================================================================
 * GPU_SUBMIT request
 * ====================================================================== */

static void params_scan(gl_wire__rd *r, unsigned count) {
  gl_wire__param_list_scan(r, count, false);
}

static void check_flags(gl_wire__rd *r, uint8_t flags) {
  if (gl_wire__rd_ok(r) && (flags & ~GL_SUBMIT_F_ALL))
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "flags 0x%02x has unknown bits 0x%02x (only bits 0-3 are defined)", flags,
                     flags & ~GL_SUBMIT_F_ALL & 0xFF);
}

static void check_param_count(gl_wire__rd *r, uint8_t flags, uint16_t count) {
  if (!gl_wire__rd_ok(r)) return;
  if (count > GPULEASE_MAX_PARAMS)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "param_count %u exceeds %d", count,
                     GPULEASE_MAX_PARAMS);
  else if (count > 0 && !(flags & GL_SUBMIT_F_PARAMS))
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "param_count %u but flags bit 0 (use the param list) is clear", count);
}

static void submit_decode(gl_wire__rd *r, gl_request *q) {
  gl_submit_req *s = &q->u.submit;
  gl_wire__auth_decode(r, &s->auth);
  s->image_format = gl_wire__rd_u8(r, "image_format");
  gl_wire__check_image_format(r, s->image_format);
  s->flags = gl_wire__rd_u8(r, "flags");
  check_flags(r, s->flags);
  s->kernel_name_len = gl_wire__rd_u16(r, "kernel_name_len");
  gl_wire__check_kernel_name_len(r, s->kernel_name_len);
  s->kernel_name = (const char *)gl_wire__rd_take(r, s->kernel_name_len, "kernel_name");
  if (s->kernel_name) gl_wire__check_kernel_name(r, s->kernel_name, s->kernel_name_len);
  gl_wire__rd_dims(r, s->grid, s->block);
  s->shared_mem_bytes = gl_wire__rd_u32(r, "shared_mem_bytes");
  if (s->flags & GL_SUBMIT_F_CLUSTER) {
    s->cluster[0] = gl_wire__rd_u32(r, "cluster_x");
    s->cluster[1] = gl_wire__rd_u32(r, "cluster_y");
    s->cluster[2] = gl_wire__rd_u32(r, "cluster_z");
    gl_wire__check_cluster(r, s->cluster);
  }
  s->input_offset = gl_wire__rd_u64(r, "input_offset");
  s->output_offset = gl_wire__rd_u64(r, "output_offset");
  s->output_size = gl_wire__rd_u64(r, "output_size");
  s->param_count = gl_wire__rd_u16(r, "param_count");
  check_param_count(r, s->flags, s->param_count);
  if (gl_wire__rd_ok(r)) {
    size_t start = r->pos;
    params_scan(r, s->param_count);
    s->params_raw = r->p + start;
    s->params_raw_len = r->pos - start;
  }
  s->image_len = gl_wire__rd_u32(r, "image_len");
  gl_wire__check_image_len(r, s->image_len);
  s->image = gl_wire__rd_take(r, s->image_len, "image");
  s->input_len = gl_wire__rd_u32(r, "input_len");
  s->input = gl_wire__rd_take(r, s->input_len, "input");
}

/* The encoder's side: the same checks on a struct a caller filled. */
static void submit_validate(gl_wire__rd *r, const gl_request *q) {
  const gl_submit_req *s = &q->u.submit;
  gl_wire__check_image_format(r, s->image_format);
  check_flags(r, s->flags);
  if (s->flags & GL_SUBMIT_F_CLUSTER) gl_wire__check_cluster(r, s->cluster);
  gl_wire__check_kernel_name_len(r, s->kernel_name_len);
  if (gl_wire__rd_ok(r) && !s->kernel_name)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "kernel_name is NULL");
  if (gl_wire__rd_ok(r)) gl_wire__check_kernel_name(r, s->kernel_name, s->kernel_name_len);
  check_param_count(r, s->flags, s->param_count);
  if (gl_wire__rd_ok(r) && s->params_raw_len > 0 && !s->params_raw)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "params_raw is NULL");
  if (gl_wire__rd_ok(r)) {
    gl_wire__rd pr;
    gl_wire__rd_init(&pr, s->params_raw, s->params_raw_len, r->op, r->err, r->errlen);
    params_scan(&pr, s->param_count);
    if (pr.st != GPULEASE_OK)
      r->st = GPULEASE_INVALID_ARGUMENT; /* message already written */
    else if (pr.pos != s->params_raw_len)
      gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                       "params_raw_len %zu but the %u params take %zu bytes",
                       s->params_raw_len, s->param_count, pr.pos);
  }
  gl_wire__check_image_len(r, s->image_len);
  if (gl_wire__rd_ok(r) && !s->image)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "image is NULL");
  if (gl_wire__rd_ok(r) && s->input_len > 0 && !s->input)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "input is NULL but input_len is %u",
                     s->input_len);
  if (gl_wire__rd_ok(r)) {
    uint64_t body = (uint64_t)SUBMIT_FIXED_BYTES + (s->flags & GL_SUBMIT_F_CLUSTER ? 12 : 0) +
                    s->kernel_name_len + s->params_raw_len +
                    s->image_len + s->input_len;
    if (body > UINT32_MAX)
      gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "body of %llu bytes does not fit body_len",
                       (unsigned long long)body);
  }
}

static void submit_put(gl_buf *b, const gl_request *q) {
  const gl_submit_req *s = &q->u.submit;
  gl_wire__auth_put(b, &s->auth);
  gl_wire__put_u8(b, s->image_format);
  gl_wire__put_u8(b, s->flags);
  gl_wire__put_u16(b, s->kernel_name_len);
  gl_wire__put_bytes(b, s->kernel_name, s->kernel_name_len);
  for (int i = 0; i < 3; i++) gl_wire__put_u32(b, s->grid[i]);
  for (int i = 0; i < 3; i++) gl_wire__put_u32(b, s->block[i]);
  gl_wire__put_u32(b, s->shared_mem_bytes);
  if (s->flags & GL_SUBMIT_F_CLUSTER)
    for (int i = 0; i < 3; i++) gl_wire__put_u32(b, s->cluster[i]);
  gl_wire__put_u64(b, s->input_offset);
  gl_wire__put_u64(b, s->output_offset);
  gl_wire__put_u64(b, s->output_size);
  gl_wire__put_u16(b, s->param_count);
  gl_wire__put_bytes(b, s->params_raw, s->params_raw_len);
  gl_wire__put_u32(b, s->image_len);
  gl_wire__put_bytes(b, s->image, s->image_len);
  gl_wire__put_u32(b, s->input_len);
  gl_wire__put_bytes(b, s->input, s->input_len);
}

/* ========================================================================
 * GPU_SUBMIT result: u64 gpu_time_ns, u32 output_len, output
 * ====================================================================== */

void gl_wire__kout_decode(gl_wire__rd *r, gl_kout *k) {
  k->flags = gl_wire__rd_u8(r, "kout_flags");
  if (gl_wire__rd_ok(r) && (k->flags & ~GL_KOUT_F_ALL))
    gl_wire__rd_fail(r, GPULEASE_MALFORMED, "kout_flags 0x%02x has unknown bits", k->flags);
  k->dropped = gl_wire__rd_u64(r, "kout_dropped");
  if (gl_wire__rd_ok(r) && !(k->flags & GL_KOUT_F_TRUNCATED) != (k->dropped == 0))
    gl_wire__rd_fail(r, GPULEASE_MALFORMED,
                     "kout_flags bit 0 (truncated) must be set exactly when kout_dropped > 0");
  k->len = gl_wire__rd_u32(r, "kout_len");
  if (gl_wire__rd_ok(r) && k->len > GL_KOUT_MAX)
    gl_wire__rd_fail(r, GPULEASE_MALFORMED, "kout_len %u is over the %u bytes a lease keeps",
                     k->len, GL_KOUT_MAX);
  k->text = gl_wire__rd_take(r, k->len, "kout");
}

bool gl_wire__kout_valid(const gl_kout *k) {
  return !(k->flags & ~GL_KOUT_F_ALL) && !(k->flags & GL_KOUT_F_TRUNCATED) == (k->dropped == 0) &&
         k->len <= GL_KOUT_MAX && (k->len == 0 || k->text);
}

void gl_wire__kout_put(gl_buf *b, const gl_kout *k) {
  gl_wire__put_u8(b, k->flags);
  gl_wire__put_u64(b, k->dropped);
  gl_wire__put_u32(b, k->len);
  gl_wire__put_bytes(b, k->text, k->len);
}

/* The kernel output follows when the request asked for it (flags bit 3):
 * gl_response_decode_for sets has_kout from the request before this runs. */
static void submit_result_decode(gl_wire__rd *r, gl_response *out) {
  out->u.submit.gpu_time_ns = gl_wire__rd_u64(r, "gpu_time_ns");
  out->u.submit.output_len = gl_wire__rd_u32(r, "output_len");
  out->u.submit.output = gl_wire__rd_take(r, out->u.submit.output_len, "output");
  if (out->u.submit.has_kout) gl_wire__kout_decode(r, &out->u.submit.kout);
}

static bool submit_result_valid(const gl_response *resp) {
  return (resp->u.submit.output_len == 0 || resp->u.submit.output) &&
         (!resp->u.submit.has_kout || gl_wire__kout_valid(&resp->u.submit.kout));
}

static void submit_result_put(gl_buf *b, const gl_response *resp) {
  gl_wire__put_u64(b, resp->u.submit.gpu_time_ns);
  gl_wire__put_u32(b, resp->u.submit.output_len);
  gl_wire__put_bytes(b, resp->u.submit.output, resp->u.submit.output_len);
  if (resp->u.submit.has_kout) gl_wire__kout_put(b, &resp->u.submit.kout);
}

const gl_wire__codec gl_wire__op_GPU_SUBMIT = {
    .last_field = "input",
    .decode = submit_decode,
    .validate = submit_validate,
    .put = submit_put,
    .result_decode = submit_result_decode,
    .result_valid = submit_result_valid,
    .result_put = submit_result_put,
};
