/*
 * wire_session.c - the codec of the session ops, SESSION_OPEN .. LAUNCH:
 * their requests, each (but SESSION_OPEN's) opening with a session_ref,
 * and their results: one codec per op (gl_wire__op_<NAME>, at the end,
 * called by wire.c's entry points), ops of one layout sharing functions
 * (SESSION_CLOSE and KERNEL_OUTPUT the session_ref alone, which GRAPH_END
 * uses too; MEM_FREE and MODULE_UNLOAD a session_ref and a handle). Which
 * ops are session ops is the op table's (ops.def). Layouts in wire.h and
 * docs/protocol.md; LAUNCH's param list is read by wire_params.c.
 *
 * Handles in requests (buffers, modules, functions) are not checked here:
 * the worker checks them. Ids and handles in results are never 0.
 */
#include "proto/wire_internal.h"

/* Body bytes of a MODULE_LOAD request besides the image: session_ref (48 +
 * 8 + 8), image_format, image_len. */
#define MODULE_LOAD_FIXED_BYTES 69

/* ========================================================================
 * Checks
 * ====================================================================== */

/* Session ids and the handles a response issues are never 0. (Handles in
 * requests are not checked here: the worker checks them.) */
static void check_id(gl_wire__rd *r, const char *field, uint64_t v) {
  if (gl_wire__rd_ok(r) && v == 0)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "%s 0 is not valid (ids and handles start at 1)", field);
}

/* A size or count that must be at least 1 (`unit`: "byte", "element"). */
static void check_at_least_1(gl_wire__rd *r, const char *field, uint64_t v, const char *unit) {
  if (gl_wire__rd_ok(r) && v == 0)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "%s 0: at least 1 %s is required", field,
                     unit);
}

/* MEM_WRITE data_len, MEM_READ size_bytes and the MEM_READ result. */
static void check_chunk(gl_wire__rd *r, const char *field, uint32_t n, bool may_be_0) {
  if (gl_wire__rd_ok(r) && ((n == 0 && !may_be_0) || n > GL_WIRE_MAX_CHUNK))
    gl_wire__rd_fail(
        r, GPULEASE_INVALID_ARGUMENT,
        "%s %u out of range %d..%u (one op moves at most 64 MiB; split larger transfers)", field,
        n, may_be_0 ? 0 : 1, GL_WIRE_MAX_CHUNK);
}

static void check_element_size(gl_wire__rd *r, uint8_t n) {
  if (gl_wire__rd_ok(r) && n != 1 && n != 2 && n != 4)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "element_size %u is not 1, 2 or 4", n);
}

/* After check_element_size: size is 1, 2 or 4. */
static void check_memset_value(gl_wire__rd *r, uint8_t size, uint32_t value) {
  if (gl_wire__rd_ok(r) && size < 4 && (value >> (8 * size)) != 0)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "value 0x%x does not fit element_size %u (at most 0x%x)", value, size,
                     (1u << (8 * size)) - 1);
}


/* ========================================================================
 * Requests
 * ====================================================================== */

void gl_wire__session_ref_decode(gl_wire__rd *r, gl_session_ref *s) {
  gl_wire__auth_decode(r, &s->auth);
  s->session_id = gl_wire__rd_u64(r, "session_id");
  check_id(r, "session_id", s->session_id);
  s->seq = gl_wire__rd_u64(r, "seq");
}

void gl_wire__session_ref_put(gl_buf *b, const gl_session_ref *s) {
  gl_wire__auth_put(b, &s->auth);
  gl_wire__put_u64(b, s->session_id);
  gl_wire__put_u64(b, s->seq);
}

/* SESSION_CLOSE, KERNEL_OUTPUT, GRAPH_END: the session_ref alone. The
 * validator also serves the ops whose one check is the session_id. */
void gl_wire__ref_only_decode(gl_wire__rd *r, gl_request *q) {
  gl_wire__session_ref_decode(r, (gl_session_ref *)gl_request_session(q));
}

void gl_wire__ref_only_validate(gl_wire__rd *r, const gl_request *q) {
  check_id(r, "session_id", gl_request_session(q)->session_id);
}

void gl_wire__ref_only_put(gl_buf *b, const gl_request *q) {
  gl_wire__session_ref_put(b, gl_request_session(q));
}

/* SESSION_OPEN: the lease_auth alone. */
static void open_decode(gl_wire__rd *r, gl_request *q) { gl_wire__auth_decode(r, &q->u.auth); }
static void open_put(gl_buf *b, const gl_request *q) { gl_wire__auth_put(b, &q->u.auth); }

static void sync_decode(gl_wire__rd *r, gl_request *q) {
  gl_wire__session_ref_decode(r, &q->u.sync.s);
  q->u.sync.ack_seq = gl_wire__rd_u64(r, "ack_seq");
}

static void sync_put(gl_buf *b, const gl_request *q) {
  gl_wire__session_ref_put(b, &q->u.sync.s);
  gl_wire__put_u64(b, q->u.sync.ack_seq);
}

/* MEM_ALLOC: session_ref, size_bytes, then flags (added in 0.2; a body
 * that ends after size_bytes, the previous release's, is flags 0). */
static void check_alloc_flags(gl_wire__rd *r, uint32_t flags) {
  if (gl_wire__rd_ok(r) && (flags & ~GL_MEM_ALLOC_F_ADDRESS))
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "flags 0x%08x: only bit 0 (the device address) is defined", flags);
}

static void mem_alloc_decode(gl_wire__rd *r, gl_request *q) {
  gl_wire__session_ref_decode(r, &q->u.mem_alloc.s);
  q->u.mem_alloc.size_bytes = gl_wire__rd_u64(r, "size_bytes");
  check_at_least_1(r, "size_bytes", q->u.mem_alloc.size_bytes, "byte");
  q->u.mem_alloc.has_flags = gl_wire__rd_ok(r) && r->pos < r->len;
  q->u.mem_alloc.flags = 0;
  if (q->u.mem_alloc.has_flags) q->u.mem_alloc.flags = gl_wire__rd_u32(r, "flags");
  check_alloc_flags(r, q->u.mem_alloc.flags);
}

static void mem_alloc_validate(gl_wire__rd *r, const gl_request *q) {
  check_id(r, "session_id", q->u.mem_alloc.s.session_id);
  check_at_least_1(r, "size_bytes", q->u.mem_alloc.size_bytes, "byte");
  if (gl_wire__rd_ok(r) && !q->u.mem_alloc.has_flags && q->u.mem_alloc.flags != 0)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "flags 0x%08x without has_flags (the 72-byte body has none)",
                     q->u.mem_alloc.flags);
  check_alloc_flags(r, q->u.mem_alloc.flags);
}

static void mem_alloc_put(gl_buf *b, const gl_request *q) {
  gl_wire__session_ref_put(b, &q->u.mem_alloc.s);
  gl_wire__put_u64(b, q->u.mem_alloc.size_bytes);
  if (q->u.mem_alloc.has_flags) gl_wire__put_u32(b, q->u.mem_alloc.flags);
}

/* MEM_FREE, MODULE_UNLOAD: the session_ref and a handle, named `field`. */
static void handle_decode(gl_wire__rd *r, gl_request *q, const char *field) {
  gl_wire__session_ref_decode(r, &q->u.handle.s);
  q->u.handle.handle = gl_wire__rd_u64(r, field);
}

static void mem_free_decode(gl_wire__rd *r, gl_request *q) { handle_decode(r, q, "buffer"); }
static void module_unload_decode(gl_wire__rd *r, gl_request *q) { handle_decode(r, q, "module"); }

static void handle_put(gl_buf *b, const gl_request *q) {
  gl_wire__session_ref_put(b, &q->u.handle.s);
  gl_wire__put_u64(b, q->u.handle.handle);
}

static void mem_write_decode(gl_wire__rd *r, gl_request *q) {
  gl_mem_write_req *w = &q->u.mem_write;
  gl_wire__session_ref_decode(r, &w->s);
  w->buffer = gl_wire__rd_u64(r, "buffer");
  w->offset = gl_wire__rd_u64(r, "offset");
  w->data_len = gl_wire__rd_u32(r, "data_len");
  check_chunk(r, "data_len", w->data_len, false);
  w->data = gl_wire__rd_take(r, w->data_len, "data");
}

static void mem_write_validate(gl_wire__rd *r, const gl_request *q) {
  check_id(r, "session_id", q->u.mem_write.s.session_id);
  check_chunk(r, "data_len", q->u.mem_write.data_len, false);
  if (gl_wire__rd_ok(r) && !q->u.mem_write.data)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "data is NULL");
}

static void mem_write_put(gl_buf *b, const gl_request *q) {
  const gl_mem_write_req *w = &q->u.mem_write;
  gl_wire__session_ref_put(b, &w->s);
  gl_wire__put_u64(b, w->buffer);
  gl_wire__put_u64(b, w->offset);
  gl_wire__put_u32(b, w->data_len);
  gl_wire__put_bytes(b, w->data, w->data_len);
}

static void mem_read_decode(gl_wire__rd *r, gl_request *q) {
  gl_mem_read_req *m = &q->u.mem_read;
  gl_wire__session_ref_decode(r, &m->s);
  m->buffer = gl_wire__rd_u64(r, "buffer");
  m->offset = gl_wire__rd_u64(r, "offset");
  m->size_bytes = gl_wire__rd_u32(r, "size_bytes");
  check_chunk(r, "size_bytes", m->size_bytes, false);
}

static void mem_read_validate(gl_wire__rd *r, const gl_request *q) {
  check_id(r, "session_id", q->u.mem_read.s.session_id);
  check_chunk(r, "size_bytes", q->u.mem_read.size_bytes, false);
}

static void mem_read_put(gl_buf *b, const gl_request *q) {
  const gl_mem_read_req *m = &q->u.mem_read;
  gl_wire__session_ref_put(b, &m->s);
  gl_wire__put_u64(b, m->buffer);
  gl_wire__put_u64(b, m->offset);
  gl_wire__put_u32(b, m->size_bytes);
}

static void mem_copy_decode(gl_wire__rd *r, gl_request *q) {
  gl_mem_copy_req *c = &q->u.mem_copy;
  gl_wire__session_ref_decode(r, &c->s);
  c->dst_buffer = gl_wire__rd_u64(r, "dst_buffer");
  c->dst_offset = gl_wire__rd_u64(r, "dst_offset");
  c->src_buffer = gl_wire__rd_u64(r, "src_buffer");
  c->src_offset = gl_wire__rd_u64(r, "src_offset");
  c->size_bytes = gl_wire__rd_u64(r, "size_bytes");
  check_at_least_1(r, "size_bytes", c->size_bytes, "byte");
}

static void mem_copy_validate(gl_wire__rd *r, const gl_request *q) {
  check_id(r, "session_id", q->u.mem_copy.s.session_id);
  check_at_least_1(r, "size_bytes", q->u.mem_copy.size_bytes, "byte");
}

static void mem_copy_put(gl_buf *b, const gl_request *q) {
  const gl_mem_copy_req *c = &q->u.mem_copy;
  gl_wire__session_ref_put(b, &c->s);
  gl_wire__put_u64(b, c->dst_buffer);
  gl_wire__put_u64(b, c->dst_offset);
  gl_wire__put_u64(b, c->src_buffer);
  gl_wire__put_u64(b, c->src_offset);
  gl_wire__put_u64(b, c->size_bytes);
}

static void memset_decode(gl_wire__rd *r, gl_request *q) {
  gl_memset_req *m = &q->u.memset;
  gl_wire__session_ref_decode(r, &m->s);
  m->buffer = gl_wire__rd_u64(r, "buffer");
  m->offset = gl_wire__rd_u64(r, "offset");
  m->element_size = gl_wire__rd_u8(r, "element_size");
  check_element_size(r, m->element_size);
  m->value = gl_wire__rd_u32(r, "value");
  check_memset_value(r, m->element_size, m->value);
  m->count = gl_wire__rd_u64(r, "count");
  check_at_least_1(r, "count", m->count, "element");
}

static void memset_validate(gl_wire__rd *r, const gl_request *q) {
  const gl_memset_req *m = &q->u.memset;
  check_id(r, "session_id", m->s.session_id);
  check_element_size(r, m->element_size);
  check_memset_value(r, m->element_size, m->value);
  check_at_least_1(r, "count", m->count, "element");
}

static void memset_put(gl_buf *b, const gl_request *q) {
  const gl_memset_req *m = &q->u.memset;
  gl_wire__session_ref_put(b, &m->s);
  gl_wire__put_u64(b, m->buffer);
  gl_wire__put_u64(b, m->offset);
  gl_wire__put_u8(b, m->element_size);
  gl_wire__put_u32(b, m->value);
  gl_wire__put_u64(b, m->count);
}

static void module_load_decode(gl_wire__rd *r, gl_request *q) {
  gl_module_load_req *m = &q->u.module_load;
  gl_wire__session_ref_decode(r, &m->s);
  m->image_format = gl_wire__rd_u8(r, "image_format");
  gl_wire__check_image_format(r, m->image_format);
  m->image_len = gl_wire__rd_u32(r, "image_len");
  gl_wire__check_image_len(r, m->image_len);
  m->image = gl_wire__rd_take(r, m->image_len, "image");
}

static void module_load_validate(gl_wire__rd *r, const gl_request *q) {
  const gl_module_load_req *m = &q->u.module_load;
  check_id(r, "session_id", m->s.session_id);
  gl_wire__check_image_format(r, m->image_format);
  gl_wire__check_image_len(r, m->image_len);
  if (gl_wire__rd_ok(r) && !m->image)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "image is NULL");
  if (gl_wire__rd_ok(r) && (uint64_t)MODULE_LOAD_FIXED_BYTES + m->image_len > UINT32_MAX)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "body of %llu bytes does not fit body_len",
                     (unsigned long long)MODULE_LOAD_FIXED_BYTES + m->image_len);
}

static void module_load_put(gl_buf *b, const gl_request *q) {
  const gl_module_load_req *m = &q->u.module_load;
  gl_wire__session_ref_put(b, &m->s);
  gl_wire__put_u8(b, m->image_format);
  gl_wire__put_u32(b, m->image_len);
  gl_wire__put_bytes(b, m->image, m->image_len);
}

static void func_info_decode(gl_wire__rd *r, gl_request *q) {
  gl_func_info_req *f = &q->u.func_info;
  gl_wire__session_ref_decode(r, &f->s);
  f->module = gl_wire__rd_u64(r, "module");
  f->kernel_name_len = gl_wire__rd_u16(r, "kernel_name_len");
  gl_wire__check_kernel_name_len(r, f->kernel_name_len);
  f->kernel_name = (const char *)gl_wire__rd_take(r, f->kernel_name_len, "kernel_name");
  if (f->kernel_name) gl_wire__check_kernel_name(r, f->kernel_name, f->kernel_name_len);
}

static void func_info_validate(gl_wire__rd *r, const gl_request *q) {
  const gl_func_info_req *f = &q->u.func_info;
  check_id(r, "session_id", f->s.session_id);
  gl_wire__check_kernel_name_len(r, f->kernel_name_len);
  if (gl_wire__rd_ok(r) && !f->kernel_name)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "kernel_name is NULL");
  if (gl_wire__rd_ok(r)) gl_wire__check_kernel_name(r, f->kernel_name, f->kernel_name_len);
}

static void func_info_put(gl_buf *b, const gl_request *q) {
  const gl_func_info_req *f = &q->u.func_info;
  gl_wire__session_ref_put(b, &f->s);
  gl_wire__put_u64(b, f->module);
  gl_wire__put_u16(b, f->kernel_name_len);
  gl_wire__put_bytes(b, f->kernel_name, f->kernel_name_len);
}

static void launch_decode(gl_wire__rd *r, gl_request *q) {
  gl_wire__session_ref_decode(r, &q->u.launch.s);
  gl_wire__launch_body_decode(r, &q->u.launch, false);
}

static void launch_validate(gl_wire__rd *r, const gl_request *q) {
  check_id(r, "session_id", q->u.launch.s.session_id);
  gl_wire__launch_body_validate(r, &q->u.launch, false);
}

static void launch_put(gl_buf *b, const gl_request *q) {
  gl_wire__session_ref_put(b, &q->u.launch.s);
  gl_wire__launch_body_put(b, &q->u.launch, false);
}

/* ========================================================================
 * Results
 * ====================================================================== */

static void check_sync_error_status(gl_wire__rd *r, uint16_t st) {
  if (gl_wire__rd_ok(r) && st >= 100)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                     "error_status %u is not a wire status (codes from 100 up are client-side)",
                     st);
}

static void check_cache(gl_wire__rd *r, uint8_t cache) {
  if (gl_wire__rd_ok(r) && cache > GL_MODULE_CACHE_DISK)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "cache %u out of range 0..%d", cache,
                     GL_MODULE_CACHE_DISK);
}

static void check_func_param_count(gl_wire__rd *r, uint16_t n) {
  if (gl_wire__rd_ok(r) && n > GPULEASE_MAX_PARAMS && n != GL_WIRE_PARAMS_UNKNOWN)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "param_count %u exceeds %d (0x%04X: unknown)",
                     n, GPULEASE_MAX_PARAMS, GL_WIRE_PARAMS_UNKNOWN);
}


/* SESSION_OPEN: the session's id. */
static void open_result_decode(gl_wire__rd *r, gl_response *out) {
  out->u.handle = gl_wire__rd_u64(r, "session_id");
  check_id(r, "session_id", out->u.handle);
}

static bool open_result_valid(const gl_response *resp) { return resp->u.handle != 0; }

static void open_result_put(gl_buf *b, const gl_response *resp) {
  gl_wire__put_u64(b, resp->u.handle);
}

/* MEM_ALLOC's result: buffer, region_offset, and device_address for a
 * request with GL_MEM_ALLOC_F_ADDRESS (16 or 24 bytes; which one the
 * request asked for is gl_response_decode_for's check). */
static void mem_alloc_result_decode(gl_wire__rd *r, gl_response *out) {
  out->u.mem_alloc.buffer = gl_wire__rd_u64(r, "buffer");
  check_id(r, "buffer", out->u.mem_alloc.buffer);
  out->u.mem_alloc.region_offset = gl_wire__rd_u64(r, "region_offset");
  out->u.mem_alloc.has_device_address = gl_wire__rd_ok(r) && r->pos < r->len;
  if (out->u.mem_alloc.has_device_address)
    out->u.mem_alloc.device_address = gl_wire__rd_u64(r, "device_address");
}

static bool mem_alloc_result_valid(const gl_response *resp) {
  return resp->u.mem_alloc.buffer != 0;
}

static void mem_alloc_result_put(gl_buf *b, const gl_response *resp) {
  gl_wire__put_u64(b, resp->u.mem_alloc.buffer);
  gl_wire__put_u64(b, resp->u.mem_alloc.region_offset);
  if (resp->u.mem_alloc.has_device_address)
    gl_wire__put_u64(b, resp->u.mem_alloc.device_address);
}

static void kout_result_decode(gl_wire__rd *r, gl_response *out) {
  gl_wire__kout_decode(r, &out->u.kout);
}

static bool kout_result_valid(const gl_response *resp) {
  return gl_wire__kout_valid(&resp->u.kout);
}

static void kout_result_put(gl_buf *b, const gl_response *resp) {
  gl_wire__kout_put(b, &resp->u.kout);
}

static void sync_result_decode(gl_wire__rd *r, gl_response *out) {
  out->u.sync.error_status = gl_wire__rd_u16(r, "error_status");
  check_sync_error_status(r, out->u.sync.error_status);
  out->u.sync.error_op = gl_wire__rd_u16(r, "error_op");
  out->u.sync.error_seq = gl_wire__rd_u64(r, "error_seq");
}

static bool sync_result_valid(const gl_response *resp) {
  return resp->u.sync.error_status < 100; /* check_sync_error_status */
}

static void sync_result_put(gl_buf *b, const gl_response *resp) {
  gl_wire__put_u16(b, resp->u.sync.error_status);
  gl_wire__put_u16(b, resp->u.sync.error_op);
  gl_wire__put_u64(b, resp->u.sync.error_seq);
}

static void mem_read_result_decode(gl_wire__rd *r, gl_response *out) {
  out->u.mem_read.data_len = gl_wire__rd_u32(r, "data_len");
  check_chunk(r, "data_len", out->u.mem_read.data_len, true);
  out->u.mem_read.data = gl_wire__rd_take(r, out->u.mem_read.data_len, "data");
}

static bool mem_read_result_valid(const gl_response *resp) {
  gl_wire__rd r;
  gl_wire__rd_init(&r, NULL, 0, resp->op, NULL, 0);
  check_chunk(&r, "data_len", resp->u.mem_read.data_len, true);
  return gl_wire__rd_ok(&r) && (resp->u.mem_read.data_len == 0 || resp->u.mem_read.data);
}

static void mem_read_result_put(gl_buf *b, const gl_response *resp) {
  gl_wire__put_u32(b, resp->u.mem_read.data_len);
  gl_wire__put_bytes(b, resp->u.mem_read.data, resp->u.mem_read.data_len);
}

static void module_load_result_decode(gl_wire__rd *r, gl_response *out) {
  out->u.module_load.module = gl_wire__rd_u64(r, "module");
  check_id(r, "module", out->u.module_load.module);
  out->u.module_load.cache = gl_wire__rd_u8(r, "cache");
  check_cache(r, out->u.module_load.cache);
}

static bool module_load_result_valid(const gl_response *resp) {
  gl_wire__rd r;
  gl_wire__rd_init(&r, NULL, 0, resp->op, NULL, 0);
  check_id(&r, "module", resp->u.module_load.module);
  check_cache(&r, resp->u.module_load.cache);
  return gl_wire__rd_ok(&r);
}

static void module_load_result_put(gl_buf *b, const gl_response *resp) {
  gl_wire__put_u64(b, resp->u.module_load.module);
  gl_wire__put_u8(b, resp->u.module_load.cache);
}

static void func_info_result_decode(gl_wire__rd *r, gl_response *out) {
  gl_func_info_resp *f = &out->u.func_info;
  f->function = gl_wire__rd_u64(r, "function");
  check_id(r, "function", f->function);
  f->num_regs = gl_wire__rd_u32(r, "num_regs");
  f->max_threads_per_block = gl_wire__rd_u32(r, "max_threads_per_block");
  f->static_shared_bytes = gl_wire__rd_u32(r, "static_shared_bytes");
  f->local_bytes = gl_wire__rd_u32(r, "local_bytes");
  f->const_bytes = gl_wire__rd_u32(r, "const_bytes");
  f->ptx_version = gl_wire__rd_u32(r, "ptx_version");
  f->binary_version = gl_wire__rd_u32(r, "binary_version");
  f->param_count = gl_wire__rd_u16(r, "param_count");
  check_func_param_count(r, f->param_count);
  if (f->param_count == GL_WIRE_PARAMS_UNKNOWN) return;
  r->elem = "param";
  for (unsigned i = 0; i < f->param_count && gl_wire__rd_ok(r); i++) {
    r->idx = i;
    f->param_sizes[i] = gl_wire__rd_u16(r, "size");
  }
  r->elem = NULL;
}

static bool func_info_result_valid(const gl_response *resp) {
  gl_wire__rd r;
  gl_wire__rd_init(&r, NULL, 0, resp->op, NULL, 0);
  check_id(&r, "function", resp->u.func_info.function);
  check_func_param_count(&r, resp->u.func_info.param_count);
  return gl_wire__rd_ok(&r);
}

static void func_info_result_put(gl_buf *b, const gl_response *resp) {
  const gl_func_info_resp *f = &resp->u.func_info;
  gl_wire__put_u64(b, f->function);
  gl_wire__put_u32(b, f->num_regs);
  gl_wire__put_u32(b, f->max_threads_per_block);
  gl_wire__put_u32(b, f->static_shared_bytes);
  gl_wire__put_u32(b, f->local_bytes);
  gl_wire__put_u32(b, f->const_bytes);
  gl_wire__put_u32(b, f->ptx_version);
  gl_wire__put_u32(b, f->binary_version);
  gl_wire__put_u16(b, f->param_count);
  if (f->param_count != GL_WIRE_PARAMS_UNKNOWN)
    for (unsigned i = 0; i < f->param_count; i++) gl_wire__put_u16(b, f->param_sizes[i]);
}

/* ========================================================================
 * The codecs
 * ====================================================================== */

const gl_wire__codec gl_wire__op_SESSION_OPEN = {
    .last_field = "secret",
    .decode = open_decode,
    .put = open_put,
    .result_decode = open_result_decode,
    .result_valid = open_result_valid,
    .result_put = open_result_put,
};

const gl_wire__codec gl_wire__op_SESSION_CLOSE = {
    .last_field = "seq",
    .decode = gl_wire__ref_only_decode,
    .validate = gl_wire__ref_only_validate,
    .put = gl_wire__ref_only_put,
};

const gl_wire__codec gl_wire__op_SYNC = {
    .last_field = "ack_seq",
    .decode = sync_decode,
    .validate = gl_wire__ref_only_validate,
    .put = sync_put,
    .result_decode = sync_result_decode,
    .result_valid = sync_result_valid,
    .result_put = sync_result_put,
};

const gl_wire__codec gl_wire__op_KERNEL_OUTPUT = {
    .last_field = "seq",
    .decode = gl_wire__ref_only_decode,
    .validate = gl_wire__ref_only_validate,
    .put = gl_wire__ref_only_put,
    .result_decode = kout_result_decode,
    .result_valid = kout_result_valid,
    .result_put = kout_result_put,
};

const gl_wire__codec gl_wire__op_MEM_ALLOC = {
    .last_field = "flags",
    .decode = mem_alloc_decode,
    .validate = mem_alloc_validate,
    .put = mem_alloc_put,
    .result_decode = mem_alloc_result_decode,
    .result_valid = mem_alloc_result_valid,
    .result_put = mem_alloc_result_put,
};

const gl_wire__codec gl_wire__op_MEM_FREE = {
    .last_field = "buffer",
    .decode = mem_free_decode,
    .validate = gl_wire__ref_only_validate,
    .put = handle_put,
};

const gl_wire__codec gl_wire__op_MEM_WRITE = {
    .last_field = "data",
    .decode = mem_write_decode,
    .validate = mem_write_validate,
    .put = mem_write_put,
};

const gl_wire__codec gl_wire__op_MEM_READ = {
    .last_field = "size_bytes",
    .decode = mem_read_decode,
    .validate = mem_read_validate,
    .put = mem_read_put,
    .result_decode = mem_read_result_decode,
    .result_valid = mem_read_result_valid,
    .result_put = mem_read_result_put,
};

const gl_wire__codec gl_wire__op_MEM_COPY = {
    .last_field = "size_bytes",
    .decode = mem_copy_decode,
    .validate = mem_copy_validate,
    .put = mem_copy_put,
};

const gl_wire__codec gl_wire__op_MEMSET = {
    .last_field = "count",
    .decode = memset_decode,
    .validate = memset_validate,
    .put = memset_put,
};

const gl_wire__codec gl_wire__op_MODULE_LOAD = {
    .last_field = "image",
    .decode = module_load_decode,
    .validate = module_load_validate,
    .put = module_load_put,
    .result_decode = module_load_result_decode,
    .result_valid = module_load_result_valid,
    .result_put = module_load_result_put,
};

const gl_wire__codec gl_wire__op_MODULE_UNLOAD = {
    .last_field = "module",
    .decode = module_unload_decode,
    .validate = gl_wire__ref_only_validate,
    .put = handle_put,
};

const gl_wire__codec gl_wire__op_FUNC_INFO = {
    .last_field = "kernel_name",
    .decode = func_info_decode,
    .validate = func_info_validate,
    .put = func_info_put,
    .result_decode = func_info_result_decode,
    .result_valid = func_info_result_valid,
    .result_put = func_info_result_put,
};

const gl_wire__codec gl_wire__op_LAUNCH = {
    .last_field = "params",
    .decode = launch_decode,
    .validate = launch_validate,
    .put = launch_put,
};
