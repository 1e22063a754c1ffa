/*
 * wire_pool.c - the codec of POOL_INFO (docs/protocol.md): the daemon's
 * warm workers for each GPU (gpuleased --warm-workers). Request: empty;
 * result: per GPU its index, the pool's size, the workers ready and those
 * starting. (gl_wire__op_POOL_INFO, called by wire.c's entry points;
 * layout in wire.h.)
 */
#include "proto/wire_internal.h"

static void pool_result_decode(gl_wire__rd *r, gl_response *out) {
  gl_pool_info *p = &out->u.pool_info;
  p->gpu_count = gl_wire__rd_u16(r, "gpu_count");
  if (gl_wire__rd_ok(r) && p->gpu_count > GPULEASE_MAX_GPUS)
    gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT, "gpu_count %u out of range 0..%d",
                     (unsigned)p->gpu_count, GPULEASE_MAX_GPUS);
  for (unsigned i = 0; gl_wire__rd_ok(r) && i < p->gpu_count; i++) {
    gl_pool_gpu *g = &p->gpus[i];
    g->index = gl_wire__rd_u32(r, "index");
    g->target = gl_wire__rd_u16(r, "target");
    g->ready = gl_wire__rd_u16(r, "ready");
    g->starting = gl_wire__rd_u16(r, "starting");
    if (gl_wire__rd_ok(r) && g->ready + g->starting > g->target)
      gl_wire__rd_fail(r, GPULEASE_INVALID_ARGUMENT,
                       "ready %u + starting %u exceed the pool's size %u", (unsigned)g->ready,
                       (unsigned)g->starting, (unsigned)g->target);
  }
}

static bool pool_result_valid(const gl_response *resp) {
  const gl_pool_info *p = &resp->u.pool_info;
  if (p->gpu_count > GPULEASE_MAX_GPUS) return false;
  for (unsigned i = 0; i < p->gpu_count; i++)
    if (p->gpus[i].ready + p->gpus[i].starting > p->gpus[i].target) return false;
  return true;
}

static void pool_result_put(gl_buf *b, const gl_response *resp) {
  const gl_pool_info *p = &resp->u.pool_info;
  gl_wire__put_u16(b, p->gpu_count);
  for (unsigned i = 0; i < p->gpu_count; i++) {
    gl_wire__put_u32(b, p->gpus[i].index);
    gl_wire__put_u16(b, p->gpus[i].target);
    gl_wire__put_u16(b, p->gpus[i].ready);
    gl_wire__put_u16(b, p->gpus[i].starting);
  }
}

const gl_wire__codec gl_wire__op_POOL_INFO = {
    .last_field = "",
    .result_decode = pool_result_decode,
    .result_valid = pool_result_valid,
    .result_put = pool_result_put,
};
