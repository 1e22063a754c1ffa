/*
 * call.c - gpulease_call(): one kernel as a pure function, in ONE
 * GPU_SUBMIT, retried on a new connection when the connection fails.
 *
 * Layout in the lease's VRAM: every IN, INOUT and OUT buffer at its own
 * 256-byte aligned offset, in argument order from offset 0. The submit's
 * input is the whole block [0, end of the last buffer): IN/INOUT bytes at
 * their offsets and zeros everywhere else, so OUT buffers start zeroed and
 * no earlier contents of the region leak into the kernel. Its output is the
 * smallest range covering every OUT and INOUT buffer; each is copied from
 * there into its arg's `out`. Pointer params are the buffers' offsets,
 * scalars are passed inline.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/client_internal.h"

#define set_err gl_lib_set_err

#define CALL_ALIGN 256u
#define DEFAULT_FRESH_TTL_S 60
#define DEFAULT_MAX_ATTEMPTS 4
#define DEFAULT_BACKOFF_MS 100

void gpulease_call_desc_default(gpulease_call_desc *d) {
  if (!d) return;
  memset(d, 0, sizeof *d);
  d->struct_version = GPULEASE_CALL_DESC_VERSION;
  d->grid[0] = d->grid[1] = d->grid[2] = 1;
  d->block[0] = d->block[1] = d->block[2] = 1;
  d->fresh_ttl_s = DEFAULT_FRESH_TTL_S;
  d->fresh_gpu_index = GPULEASE_ANY_GPU;
  d->max_attempts = DEFAULT_MAX_ATTEMPTS;
  d->backoff_ms = DEFAULT_BACKOFF_MS;
}

static bool is_buffer(gpulease_call_arg_kind k) {
  return k == GPULEASE_CALL_IN || k == GPULEASE_CALL_OUT || k == GPULEASE_CALL_INOUT;
}

static bool is_output(gpulease_call_arg_kind k) {
  return k == GPULEASE_CALL_OUT || k == GPULEASE_CALL_INOUT;
}

/* The prepared submit: built once, resent on every attempt. */
typedef struct call_plan {
  uint8_t *block;     /* the input block (NULL when empty) */
  uint64_t block_size;
  uint64_t *offsets;  /* per arg: the buffer's offset (buffers only) */
  gpulease_param *params;
  uint64_t out_lo, out_hi; /* output range; out_lo == out_hi: none */
  gpulease_submit_desc sd;
} call_plan;

static void plan_free(call_plan *p) {
  free(p->block);
  free(p->offsets);
  free(p->params);
}

static gpulease_status plan_build(const gpulease_call_desc *d, call_plan *p,
                                  gpulease_error *err) {
  memset(p, 0, sizeof *p);
  size_t n = d->arg_count;
  p->offsets = calloc(n ? n : 1, sizeof *p->offsets);
  p->params = calloc(n ? n : 1, sizeof *p->params);
  if (!p->offsets || !p->params) return set_err(err, GPULEASE_NO_MEMORY, "out of memory");
  uint64_t end = 0;
  bool have_out = false;
  for (size_t i = 0; i < n; i++) {
    const gpulease_call_arg *a = &d->args[i];
    if (a->kind == GPULEASE_CALL_SCALAR) {
      if (a->size == 0 || a->size > GPULEASE_MAX_SCALAR_BYTES || !a->data)
        return set_err(err, GPULEASE_INVALID_ARGUMENT,
                       "arg %zu: a scalar needs data and a size of 1..%d bytes (got %" PRIu64 ")",
                       i, GPULEASE_MAX_SCALAR_BYTES, a->size);
      p->params[i] = gpulease_param_scalar(a->data, (uint32_t)a->size);
      continue;
    }
    if (!is_buffer(a->kind))
      return set_err(err, GPULEASE_INVALID_ARGUMENT, "arg %zu: unknown kind %d", i, (int)a->kind);
    if (a->size && a->kind != GPULEASE_CALL_OUT && !a->data)
      return set_err(err, GPULEASE_INVALID_ARGUMENT, "arg %zu: data is NULL", i);
    if (a->size && is_output(a->kind) && !a->out)
      return set_err(err, GPULEASE_INVALID_ARGUMENT, "arg %zu: out is NULL", i);
    uint64_t off = (end + CALL_ALIGN - 1) / CALL_ALIGN * CALL_ALIGN;
    if (off < end || a->size > UINT32_MAX || off + a->size > UINT32_MAX)
      return set_err(err, GPULEASE_INVALID_ARGUMENT,
                     "the buffers need more than 4 GiB (arg %zu), above one submit's input", i);
    p->offsets[i] = off;
    p->params[i] = gpulease_param_pointer(off);
    end = off + a->size;
    if (is_output(a->kind) && a->size) {
      if (!have_out || off < p->out_lo) p->out_lo = off;
      if (!have_out || end > p->out_hi) p->out_hi = end;
      have_out = true;
    }
  }
  if (p->out_hi - p->out_lo > GL_LIB_MAX_RESPONSE_BYTES - 65536)
    return set_err(err, GPULEASE_INVALID_ARGUMENT,
                   "the outputs span %" PRIu64 " bytes: at most 1 GiB comes back in one reply",
                   p->out_hi - p->out_lo);
  p->block_size = end;
  if (end) {
    p->block = calloc(1, (size_t)end); /* zeros between and in OUT buffers */
    if (!p->block) return set_err(err, GPULEASE_NO_MEMORY, "out of memory for %" PRIu64 " bytes", end);
    for (size_t i = 0; i < n; i++) {
      const gpulease_call_arg *a = &d->args[i];
      if ((a->kind == GPULEASE_CALL_IN || a->kind == GPULEASE_CALL_INOUT) && a->size)
        memcpy(p->block + p->offsets[i], a->data, (size_t)a->size);
    }
  }
  gpulease_submit_desc *sd = &p->sd;
  gpulease_submit_desc_default(sd);
  sd->image = d->image;
  sd->image_size = d->image_size;
  sd->format = d->format;
  sd->kernel = d->kernel;
  memcpy(sd->grid, d->grid, sizeof sd->grid);
  memcpy(sd->block, d->block, sizeof sd->block);
  sd->shared_mem_bytes = d->shared_mem_bytes;
  sd->input = p->block;
  sd->input_size = (size_t)p->block_size;
  sd->input_offset = 0;
  sd->output_offset = p->out_lo;
  sd->output_size = p->out_hi - p->out_lo;
  sd->params = p->params;
  sd->param_count = n;
  sd->use_params = 1; /* the args are the whole list, even when empty */
  return GPULEASE_OK;
}

/* Copies each OUT/INOUT slice of the submit's output into its arg. */
static gpulease_status deliver(const gpulease_call_desc *d, const call_plan *p,
                               const gpulease_submit_result *r, gpulease_error *err) {
  if (r->output_size != p->out_hi - p->out_lo)
    return set_err(err, GPULEASE_PROTOCOL_ERROR,
                   "the daemon returned %zu output bytes, not %" PRIu64, r->output_size,
                   p->out_hi - p->out_lo);
  const uint8_t *out = r->output;
  for (size_t i = 0; i < d->arg_count; i++) {
    const gpulease_call_arg *a = &d->args[i];
    if (is_output(a->kind) && a->size)
      memcpy(a->out, out + (p->offsets[i] - p->out_lo), (size_t)a->size);
  }
  return GPULEASE_OK;
}

/* One try. *reconnected says whether it already made a fresh connection
 * (to free its lease after the connection failed). */
static gpulease_status call_once(gpulease_client *c, const gpulease_lease *lease,
                                 const gpulease_call_desc *d, const call_plan *p,
                                 uint64_t *gpu_time_ns, bool *reconnected, gpulease_error *err) {
  *reconnected = false;
  gpulease_lease fresh;
  const gpulease_lease *use = lease;
  gpulease_status st;
  if (!lease) {
    uint64_t vram = (p->block_size + CALL_ALIGN - 1) / CALL_ALIGN * CALL_ALIGN;
    if (vram < CALL_ALIGN) vram = CALL_ALIGN;
    st = gpulease_lease_alloc(c, d->fresh_gpu_index, vram, d->fresh_ttl_s, &fresh, err);
    if (st != GPULEASE_OK) return st;
    use = &fresh;
  }
  gpulease_submit_result r;
  gpulease_submit_result_init(&r);
  st = gpulease_submit(c, use, &p->sd, &r, err);
  if (st == GPULEASE_OK) {
    st = deliver(d, p, &r, err);
    if (st == GPULEASE_OK && gpu_time_ns) *gpu_time_ns = r.gpu_time_ns;
    gpulease_submit_result_release(&r);
  }
  if (!lease) {
    /* Free the call's own lease whatever happened; on a new connection
     * when this one failed (else it simply expires after fresh_ttl_s). */
    gpulease_error ferr;
    if (gl_lib_conn_error(st) || gl_qclient_dead(c->q))
      *reconnected = gpulease_client_reconnect(c, &ferr) == GPULEASE_OK;
    gpulease_lease_free(c, &fresh, &ferr);
  }
  return st;
}

static void sleep_ms(uint64_t ms) {
  struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

gpulease_status gpulease_call(gpulease_client *client, const gpulease_lease *lease,
                              const gpulease_call_desc *d, uint64_t *gpu_time_ns,
                              gpulease_error *err) {
  if (!client || !d) return set_err(err, GPULEASE_INVALID_ARGUMENT, "client and desc are required");
  if (d->struct_version == 0 || d->struct_version > GPULEASE_CALL_DESC_VERSION)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "call desc of unknown version %" PRIu32,
                   d->struct_version);
  if (!d->image || d->image_size == 0 || d->image_size > UINT32_MAX)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "image missing or larger than 4 GiB");
  if (!d->kernel || !*d->kernel || strlen(d->kernel) > GL_WIRE_MAX_KERNEL_NAME)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "kernel name missing or longer than %d bytes",
                   GL_WIRE_MAX_KERNEL_NAME);
  if (d->arg_count > GPULEASE_MAX_PARAMS || (d->arg_count && !d->args))
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "arg list missing or over %d entries",
                   GPULEASE_MAX_PARAMS);
  if (!lease && d->fresh_ttl_s == 0)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "fresh_ttl_s must be >= 1 without a lease");
  call_plan p;
  gpulease_status st = plan_build(d, &p, err);
  if (st != GPULEASE_OK) {
    plan_free(&p);
    return st;
  }
  uint32_t attempts = d->max_attempts ? d->max_attempts : 1;
  uint64_t backoff = d->backoff_ms;
  bool reconnected = false;
  for (uint32_t a = 1;; a++) {
    st = call_once(client, lease, d, &p, gpu_time_ns, &reconnected, err);
    if (!gl_lib_conn_error(st) || a >= attempts) break;
    sleep_ms(backoff);
    backoff = backoff > UINT32_MAX ? backoff : backoff * 2;
    if (!reconnected) {
      gpulease_error rerr;
      gpulease_status rst = gpulease_client_reconnect(client, &rerr);
      if (rst != GPULEASE_OK && !gl_lib_conn_error(rst)) { /* TLS, bad options: final */
        if (err) *err = rerr;
        st = rst;
        break;
      }
      /* A reconnect lost to the network: the next try fails fast on the
       * dead connection and waits longer. */
    }
  }
  plan_free(&p);
  return st;
}
