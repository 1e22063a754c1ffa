/*
 * client.c - libgpulease: the public API of include/gpulease/gpulease.h on
 * top of the blocking QUIC client (src/net/) and the wire codec
 * (src/proto/): connections, inventory, leases and GPU_SUBMIT. Each call is
 * one request/response exchange on a new stream of the client's
 * connection. Sessions live in session.c and transfer.c, gpulease_call in
 * call.c, the renewer in renewer.c; client_internal.h is what they share.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "lib/client_internal.h"

#define DEFAULT_TIMEOUT_MS GL_LIB_DEFAULT_TIMEOUT_MS
#define MAX_RESPONSE_BYTES GL_LIB_MAX_RESPONSE_BYTES

/* ======================================================================
 * Errors
 * ==================================================================== */

gpulease_status gl_lib_set_err(gpulease_error *err, gpulease_status st, const char *fmt, ...) {
  if (err) {
    err->status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return st;
}

gpulease_status gl_lib_version_err(gpulease_error *err, const char *what, uint32_t version) {
  return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "%s of unknown version %" PRIu32, what,
                        version);
}

/* The header's version is the library's: src/lib/CMakeLists.txt checks
 * GPULEASE_VERSION_* against the top CMakeLists.txt's project(). */
const char *gpulease_version(uint32_t *major, uint32_t *minor, uint32_t *patch) {
  if (major) *major = GPULEASE_VERSION_MAJOR;
  if (minor) *minor = GPULEASE_VERSION_MINOR;
  if (patch) *patch = GPULEASE_VERSION_PATCH;
  return GPULEASE_VERSION_STRING;
}

gpulease_status gl_lib_ok(gpulease_error *err) {
  if (err) {
    err->status = GPULEASE_OK;
    err->message[0] = 0;
  }
  return GPULEASE_OK;
}

gpulease_status gl_lib_map_qc(int rc) {
  switch (rc) {
  case GL_QC_INVALID:
    return GPULEASE_INVALID_ARGUMENT;
  case GL_QC_TLS:
    return GPULEASE_TLS_FAILED;
  case GL_QC_TIMEOUT:
    return GPULEASE_TIMEOUT;
  case GL_QC_NOMEM:
    return GPULEASE_NO_MEMORY;
  case GL_QC_TOO_LARGE:
    return GPULEASE_PROTOCOL_ERROR;
  default:
    return GPULEASE_DISCONNECTED;
  }
}

/* ======================================================================
 * Connection
 * ==================================================================== */

void gpulease_connect_options_default(gpulease_connect_options *o) {
  memset(o, 0, sizeof *o);
  o->struct_version = GPULEASE_CONNECT_OPTIONS_VERSION;
  o->addr = "127.0.0.1:5701";
  o->timeout_ms = DEFAULT_TIMEOUT_MS;
}

gpulease_status gl_lib_connect_port(const gpulease_client *c, uint16_t to_port, gl_qclient **q,
                                    gpulease_error *err) {
  char host[256];
  uint16_t port;
  if (gl_parse_hostport(c->addr, GL_DEFAULT_PORT, host, sizeof host, &port) != 0 || port == 0)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT,
                          "bad address '%s': expected HOST:PORT or [IPv6]:PORT", c->addr);
  if (to_port) port = to_port;
  gl_qclient_config qc = {
      .host = host,
      .port = port,
      .ca_file = c->ca_file,
      .pin_sha256 = c->pin_sha256,
      .insecure = c->insecure != 0,
      .timeout_ms = c->timeout_ms,
      .max_response_bytes = MAX_RESPONSE_BYTES,
      .cert_file = c->cert_file,
      .key_file = c->key_file,
  };
  char why[sizeof err->message - 64];
  int rc = gl_qclient_connect(&qc, q, why, sizeof why);
  if (rc != GL_QC_OK)
    return gl_lib_set_err(err, gl_lib_map_qc(rc), "cannot connect to %s (port %u): %s", c->addr,
                          (unsigned)port, why);
  gpulease_status st = gl_lib_authenticate(c, *q, err);
  if (st != GPULEASE_OK) {
    gl_qclient_del(*q);
    *q = NULL;
  }
  return st;
}

gpulease_status gl_lib_authenticate(const gpulease_client *c, gl_qclient *q, gpulease_error *err) {
  if (!c->bearer_token) return GPULEASE_OK;
  gl_request req = {.op = GL_OP_AUTHENTICATE};
  snprintf(req.u.authenticate.token, sizeof req.u.authenticate.token, "%s", c->bearer_token);
  gl_buf b;
  gl_buf_init(&b);
  gpulease_status st = gl_lib_encode(&req, &b, err);
  if (st != GPULEASE_OK) {
    gl_buf_free(&b);
    return st;
  }
  uint8_t *raw = NULL;
  size_t len;
  char why[sizeof err->message - 64];
  int rc = gl_qclient_request(q, b.data, b.len, &raw, &len, why, sizeof why);
  gl_buf_free(&b);
  if (rc != GL_QC_OK)
    return gl_lib_set_err(err, gl_lib_map_qc(rc), "AUTHENTICATE: %s", why);
  gl_response resp;
  st = gl_lib_decode_reply(GL_OP_AUTHENTICATE, raw, len, &resp, err);
  free(raw);
  return st;
}

/* Opens a gl_qclient with the options remembered in c. */
static gpulease_status connect_q(const gpulease_client *c, gl_qclient **q, gpulease_error *err) {
  return gl_lib_connect_port(c, 0, q, err);
}

static void client_free(gpulease_client *c) {
  gl_lib_stripes_close(c);
  gl_lib_host_free_all(c);
  gl_lib_local_close(c);
  pthread_mutex_destroy(&c->caps_mu);
  free(c->addr);
  free(c->ca_file);
  free(c->pin_sha256);
  free(c->cert_file);
  free(c->key_file);
  if (c->bearer_token) {
    explicit_bzero(c->bearer_token, strlen(c->bearer_token));
    free(c->bearer_token);
  }
  free(c);
}

/* strdup that keeps NULL; false when out of memory. */
static bool dup_opt(const char *s, char **out) {
  *out = NULL;
  if (!s) return true;
  *out = strdup(s);
  return *out != NULL;
}

gpulease_status gpulease_client_connect(const gpulease_connect_options *opts,
                                        gpulease_client **out, gpulease_error *err) {
  if (!opts || !out || opts->struct_version == 0 ||
      opts->struct_version > GPULEASE_CONNECT_OPTIONS_VERSION)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT,
                          "connect options missing or of unknown version");
  const char *addr = opts->addr ? opts->addr : "127.0.0.1:5701";
  char host[256];
  uint16_t port;
  if (gl_parse_hostport(addr, GL_DEFAULT_PORT, host, sizeof host, &port) != 0 || port == 0)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT,
                          "bad address '%s': expected HOST:PORT or [IPv6]:PORT", addr);
  bool v4 = opts->struct_version >= 4;
  if (v4 && !opts->cert_file != !opts->key_file)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT,
                          "a client certificate needs both cert_file and key_file");
  if (v4 && opts->bearer_token && (!opts->bearer_token[0] || strlen(opts->bearer_token) > 255))
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT,
                          "a bearer token is 1 to 255 bytes");
  gpulease_client *c = calloc(1, sizeof *c);
  if (c) {
    pthread_mutex_init(&c->caps_mu, NULL);
    c->ptx_check_off = gl_lib_ptx_check_off();
  }
  if (!c || !dup_opt(addr, &c->addr) || !dup_opt(opts->ca_file, &c->ca_file) ||
      !dup_opt(opts->pin_sha256, &c->pin_sha256) ||
      (v4 && (!dup_opt(opts->cert_file, &c->cert_file) || !dup_opt(opts->key_file, &c->key_file) ||
              !dup_opt(opts->bearer_token, &c->bearer_token)))) {
    if (c) client_free(c);
    return gl_lib_set_err(err, GPULEASE_NO_MEMORY, "out of memory");
  }
  c->insecure = opts->insecure;
  c->local_off = opts->struct_version >= 2 && opts->no_local;
  /* The local socket carries no certificates: a client known only by its
   * certificate stays on QUIC. */
  if (c->cert_file && !c->bearer_token) c->local_off = true;
  c->stripes_max = GL_STRIPES_DEFAULT;
  c->stripe_min = GL_STRIPE_MIN_DEFAULT;
  if (opts->struct_version >= 3) {
    if (opts->stripes) c->stripes_max = opts->stripes;
    if (opts->stripe_min_bytes) c->stripe_min = opts->stripe_min_bytes;
  }
  if (c->stripes_max > GL_WIRE_MAX_STRIPES) c->stripes_max = GL_WIRE_MAX_STRIPES;
  c->timeout_ms = opts->timeout_ms ? opts->timeout_ms : DEFAULT_TIMEOUT_MS;
  gpulease_status st = connect_q(c, &c->q, err);
  if (st != GPULEASE_OK) {
    client_free(c);
    return st;
  }
  *out = c;
  return gl_lib_ok(err);
}

gpulease_status gpulease_client_reconnect(gpulease_client *client, gpulease_error *err) {
  if (!client) return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "client is NULL");
  gl_qclient *q = NULL;
  gpulease_status st = connect_q(client, &q, err);
  if (st != GPULEASE_OK) return st; /* the old connection stays (dead or not) */
  gl_qclient_del(client->q);
  client->q = q;
  client->generation++;
  return gl_lib_ok(err);
}

void gpulease_client_close(gpulease_client *client) {
  if (!client) return;
  gl_qclient_del(client->q);
  client_free(client);
}

/* ======================================================================
 * One exchange
 * ==================================================================== */

gpulease_status gl_lib_encode(const gl_request *req, gl_buf *b, gpulease_error *err) {
  gpulease_status st = gl_request_encode(req, b);
  if (st == GPULEASE_OK) return GPULEASE_OK;
  char why[256] = "out of memory";
  if (st == GPULEASE_INVALID_ARGUMENT) gl_request_validate(req, why, sizeof why);
  return gl_lib_set_err(err, st, "%s: %s", gl_op_name(req->op), why);
}

gpulease_status gl_lib_send_write(gl_qclient *q, const gl_request *req, uint64_t *token,
                                  gpulease_error *err) {
  gl_buf b = {0};
  b.data = gl_qclient_buf(q, GL_WIRE_HEADER_SIZE + 128 + req->u.mem_write.data_len, &b.cap);
  if (!b.data) return gl_lib_set_err(err, GPULEASE_NO_MEMORY, "MEM_WRITE: out of memory");
  gpulease_status st = gl_lib_encode(req, &b, err);
  if (st != GPULEASE_OK) {
    gl_buf_free(&b);
    return st;
  }
  char why[sizeof err->message - 64];
  int rc = gl_qclient_send_take(q, b.data, b.len, token, why, sizeof why);
  if (rc != GL_QC_OK) return gl_lib_set_err(err, gl_lib_map_qc(rc), "MEM_WRITE: %s", why);
  return GPULEASE_OK;
}

gpulease_status gl_lib_decode_reply(uint16_t op, const uint8_t *raw, size_t len,
                                    gl_response *resp, gpulease_error *err) {
  gl_request only_op = {.op = op};
  return gl_lib_decode_reply_for(&only_op, raw, len, resp, err);
}

gpulease_status gl_lib_decode_reply_for(const gl_request *req, const uint8_t *raw, size_t len,
                                        gl_response *resp, gpulease_error *err) {
  uint16_t op = req->op;
  char derr[256];
  if (gl_response_decode_for(req, raw, len, MAX_RESPONSE_BYTES, resp, derr, sizeof derr) !=
      GPULEASE_OK)
    return gl_lib_set_err(err, GPULEASE_PROTOCOL_ERROR, "%s: bad reply from the daemon: %s",
                          gl_op_name(op), derr);
  if (resp->op != op && resp->status == GPULEASE_OK)
    return gl_lib_set_err(err, GPULEASE_PROTOCOL_ERROR, "reply is for op 0x%04x, not %s",
                          resp->op, gl_op_name(op));
  if (resp->status != GPULEASE_OK)
    return gl_lib_set_err(err, (gpulease_status)resp->status, "%.*s", (int)resp->msg_len,
                          resp->msg);
  return gl_lib_ok(err);
}

/* Sends req, decodes the reply into *resp (which borrows *raw: the caller
 * frees *raw afterwards). Maps every failure, including a non-OK status
 * from the daemon, to a status with a message. */
gpulease_status gl_lib_exchange(gpulease_client *c, const gl_request *req, gl_response *resp,
                                uint8_t **raw, gpulease_error *err) {
  *raw = NULL;
  if (!c) return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "client is NULL");
  gl_buf b;
  gl_buf_init(&b);
  gpulease_status st = gl_lib_encode(req, &b, err);
  if (st != GPULEASE_OK) {
    gl_buf_free(&b);
    return st;
  }
  size_t len;
  char why[sizeof err->message - 64];
  int rc = gl_qclient_request(c->q, b.data, b.len, raw, &len, why, sizeof why);
  gl_buf_free(&b);
  if (rc != GL_QC_OK)
    return gl_lib_set_err(err, gl_lib_map_qc(rc), "%s: %s", gl_op_name(req->op), why);
  st = gl_lib_decode_reply_for(req, *raw, len, resp, err);
  if (st != GPULEASE_OK) {
    free(*raw);
    *raw = NULL;
  }
  return st;
}

/* ======================================================================
 * Inventory and leases
 * ==================================================================== */

void gpulease_warm_pool_info_init(gpulease_warm_pool_info *info) {
  if (!info) return;
  memset(info, 0, sizeof *info);
  info->struct_version = GPULEASE_WARM_POOL_INFO_VERSION;
}

gpulease_status gpulease_warm_pool_get(gpulease_client *client, gpulease_warm_pool_info *out,
                                       gpulease_error *err) {
  if (!out) return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "out is NULL");
  if (!gl_lib_version_ok(out->struct_version, GPULEASE_WARM_POOL_INFO_VERSION))
    return gl_lib_version_err(err, "warm pool info", out->struct_version);
  gl_request req = {.op = GL_OP_POOL_INFO};
  gl_response *resp = malloc(sizeof *resp);
  if (!resp) return gl_lib_set_err(err, GPULEASE_NO_MEMORY, "out of memory");
  uint8_t *raw;
  gpulease_status st = gl_lib_exchange(client, &req, resp, &raw, err);
  if (st == GPULEASE_OK) {
    const gl_pool_info *p = &resp->u.pool_info;
    GL_LIB_CLEAR_KEEP_VERSION(out);
    out->gpu_count = p->gpu_count;
    for (uint32_t i = 0; i < p->gpu_count && i < GPULEASE_MAX_GPUS; i++) {
      out->gpus[i].index = p->gpus[i].index;
      out->gpus[i].target = p->gpus[i].target;
      out->gpus[i].ready = p->gpus[i].ready;
      out->gpus[i].starting = p->gpus[i].starting;
    }
  }
  free(raw);
  free(resp);
  return st;
}

/* Deprecated alias (0.2): the caller compiled against a header where
 * gpulease_pool_info is gpulease_warm_pool_info, so it is of the current
 * version. */
gpulease_status gpulease_pool_get(gpulease_client *client, gpulease_warm_pool_info *out,
                                  gpulease_error *err) {
  if (out) out->struct_version = GPULEASE_WARM_POOL_INFO_VERSION;
  return gpulease_warm_pool_get(client, out, err);
}

void gpulease_admission_info_init(gpulease_admission_info *info) {
  if (!info) return;
  memset(info, 0, sizeof *info);
  info->struct_version = GPULEASE_ADMISSION_INFO_VERSION;
}

gpulease_status gpulease_admission_get(gpulease_client *client, gpulease_admission_info *out,
                                       gpulease_error *err) {
  if (!out) return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "out is NULL");
  if (!gl_lib_version_ok(out->struct_version, GPULEASE_ADMISSION_INFO_VERSION))
    return gl_lib_version_err(err, "admission info", out->struct_version);
  gl_request req = {.op = GL_OP_GET_INVENTORY};
  req.u.inventory.has_flags = true;
  req.u.inventory.flags = GL_INVENTORY_F_ADMISSION;
  gl_response *resp = malloc(sizeof *resp);
  if (!resp) return gl_lib_set_err(err, GPULEASE_NO_MEMORY, "out of memory");
  uint8_t *raw;
  gpulease_status st = gl_lib_exchange(client, &req, resp, &raw, err);
  if (st == GPULEASE_OK && !resp->u.inventory.has_admission)
    st = gl_lib_set_err(err, GPULEASE_PROTOCOL_ERROR,
                        "GET_INVENTORY: the daemon left out the admission block it was asked for");
  if (st == GPULEASE_OK) {
    const gl_inventory *inv = &resp->u.inventory;
    GL_LIB_CLEAR_KEEP_VERSION(out);
    out->isolated_queue_max = inv->isolated_queue_max;
    out->isolated_queue_ms = inv->isolated_queue_ms;
    out->gpu_count = inv->gpu_count;
    for (uint32_t i = 0; i < inv->gpu_count && i < GPULEASE_MAX_GPUS; i++) {
      const gl_gpu_admission *a = &inv->admission[i];
      out->gpus[i].max_isolated_contexts = a->max_isolated_contexts;
      out->gpus[i].isolated_contexts = a->isolated_contexts;
      out->gpus[i].leased = a->leased;
      out->gpus[i].warm = a->warm;
      out->gpus[i].spare = a->spare;
      out->gpus[i].tearing_down = a->tearing_down;
      out->gpus[i].queued = a->queued;
      out->gpus[i].flags = a->flags;
    }
  }
  free(raw);
  free(resp);
  return st;
}

void gpulease_inventory_init(gpulease_inventory *inv) {
  if (!inv) return;
  memset(inv, 0, sizeof *inv);
  inv->struct_version = GPULEASE_INVENTORY_VERSION;
}

gpulease_status gpulease_inventory_get(gpulease_client *client, gpulease_inventory *out,
                                       gpulease_error *err) {
  if (!out) return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "out is NULL");
  if (!gl_lib_version_ok(out->struct_version, GPULEASE_INVENTORY_VERSION))
    return gl_lib_version_err(err, "inventory", out->struct_version);
  gl_request req = {.op = GL_OP_GET_INVENTORY};
  gl_response *resp = malloc(sizeof *resp);
  if (!resp) return gl_lib_set_err(err, GPULEASE_NO_MEMORY, "out of memory");
  uint8_t *raw;
  gpulease_status st = gl_lib_exchange(client, &req, resp, &raw, err);
  if (st == GPULEASE_OK) {
    const gl_inventory *inv = &resp->u.inventory;
    GL_LIB_CLEAR_KEEP_VERSION(out);
    snprintf(out->driver_version, sizeof out->driver_version, "%s", inv->driver_version);
    out->max_ttl_s = inv->max_ttl_s;
    out->gpu_count = inv->gpu_count;
    for (uint32_t i = 0; i < inv->gpu_count && i < GPULEASE_MAX_GPUS; i++) {
      const gl_gpu_entry *e = &inv->gpus[i];
      gpulease_gpu_info *g = &out->gpus[i];
      g->index = e->index;
      snprintf(g->uuid, sizeof g->uuid, "%s", e->uuid);
      snprintf(g->name, sizeof g->name, "%s", e->name);
      g->cc_major = e->cc_major;
      g->cc_minor = e->cc_minor;
      g->sm_count = e->sm_count;
      g->total_vram_bytes = e->total_vram_bytes;
      g->free_vram_bytes = e->free_vram_bytes;
      g->leased_vram_bytes = e->leased_vram_bytes;
      g->active_leases = e->active_leases;
      g->flags = e->flags;
      g->context_overhead_bytes = e->context_overhead_bytes;
      g->ptx_isa_driver_major = e->ptx_isa_driver[0];
      g->ptx_isa_driver_minor = e->ptx_isa_driver[1];
      g->ptx_isa_nvjitlink_major = e->ptx_isa_nvjitlink[0];
      g->ptx_isa_nvjitlink_minor = e->ptx_isa_nvjitlink[1];
    }
    const gl_tenant_info *t = &inv->tenant;
    gpulease_tenant_info *o = &out->tenant;
    snprintf(o->name, sizeof o->name, "%s", t->tenant);
    o->flags = t->flags;
    o->quota_vram_bytes = t->quota_vram_bytes;
    o->quota_leases = t->quota_leases;
    o->quota_sessions = t->quota_sessions;
    o->quota_max_ttl_s = t->quota_max_ttl_s;
    o->quota_gpu_seconds_per_hour = t->quota_gpu_seconds_per_hour;
    o->used_vram_bytes = t->used_vram_bytes;
    o->used_leases = t->used_leases;
    o->used_sessions = t->used_sessions;
    o->used_gpu_seconds = t->used_gpu_seconds;
  }
  free(raw);
  free(resp);
  return st;
}

static void lease_from_info(gpulease_lease *l, const gl_lease_info *li, bool take_secret) {
  l->id = li->lease_id;
  if (take_secret) memcpy(l->secret, li->secret, sizeof l->secret);
  l->gpu_index = li->gpu_index;
  l->vram_bytes = li->vram_bytes;
  l->ttl_s = li->ttl_s;
  l->remaining_ms = li->remaining_ms;
  l->submits = li->submits;
  l->lease_class = (gpulease_lease_class)li->lease_class;
}

static const char *const k_class_names[] = {"isolated", "shared", "device", "partition"};

const char *gpulease_lease_class_name(int lease_class) {
  if (lease_class < 0 || lease_class > GPULEASE_CLASS_PARTITION) return "unknown";
  return k_class_names[lease_class];
}

gpulease_status gpulease_lease_class_parse(const char *name, gpulease_lease_class *out) {
  for (int i = 0; name && out && i <= GPULEASE_CLASS_PARTITION; i++)
    if (strcmp(name, k_class_names[i]) == 0) {
      *out = (gpulease_lease_class)i;
      return GPULEASE_OK;
    }
  return GPULEASE_INVALID_ARGUMENT;
}

void gpulease_lease_opts_default(gpulease_lease_opts *opts) {
  if (!opts) return;
  memset(opts, 0, sizeof *opts);
  opts->struct_version = GPULEASE_LEASE_OPTS_VERSION;
  opts->lease_class = GPULEASE_CLASS_ISOLATED;
}

gpulease_status gpulease_lease_alloc(gpulease_client *client, uint32_t gpu_index,
                                     uint64_t vram_bytes, uint32_t ttl_s, gpulease_lease *out,
                                     gpulease_error *err) {
  return gpulease_lease_alloc_opts(client, gpu_index, vram_bytes, ttl_s, NULL, out, err);
}

gpulease_status gpulease_lease_alloc_opts(gpulease_client *client, uint32_t gpu_index,
                                          uint64_t vram_bytes, uint32_t ttl_s,
                                          const gpulease_lease_opts *opts, gpulease_lease *out,
                                          gpulease_error *err) {
  if (!out) return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "out is NULL");
  if (opts && !gl_lib_version_ok(opts->struct_version, GPULEASE_LEASE_OPTS_VERSION))
    return gl_lib_version_err(err, "lease options", opts->struct_version);
  if (opts && ((unsigned)opts->lease_class > GPULEASE_CLASS_PARTITION))
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "lease class %d is not a class",
                          (int)opts->lease_class);
  gl_request req = {.op = GL_OP_LEASE_ALLOC};
  req.u.alloc.gpu_index = gpu_index;
  req.u.alloc.vram_bytes = vram_bytes;
  req.u.alloc.ttl_s = ttl_s;
  if (opts) {
    req.u.alloc.lease_class = (uint8_t)opts->lease_class;
    req.u.alloc.printf_fifo_bytes = opts->printf_fifo_bytes;
    req.u.alloc.malloc_heap_bytes = opts->malloc_heap_bytes;
  }
  gl_response resp;
  uint8_t *raw;
  gpulease_status st = gl_lib_exchange(client, &req, &resp, &raw, err);
  if (st == GPULEASE_OK) {
    memset(out, 0, sizeof *out);
    lease_from_info(out, &resp.u.lease, true);
  }
  free(raw);
  return st;
}

/* RENEW, QUERY and FREE share the lease_auth prefix. */
static gpulease_status lease_op(gpulease_client *client, uint16_t op, gpulease_lease *lease,
                                uint32_t ttl_s, uint8_t flags, gpulease_error *err) {
  if (!lease) return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "lease is NULL");
  gl_request req = {.op = op};
  gl_lease_auth *a = op == GL_OP_LEASE_RENEW ? &req.u.renew.auth : &req.u.auth;
  a->lease_id = lease->id;
  memcpy(a->secret, lease->secret, sizeof a->secret);
  if (op == GL_OP_LEASE_RENEW) {
    req.u.renew.ttl_s = ttl_s;
    req.u.renew.flags = flags;
  }
  gl_response resp;
  uint8_t *raw;
  gpulease_status st = gl_lib_exchange(client, &req, &resp, &raw, err);
  if (st == GPULEASE_OK && op != GL_OP_LEASE_FREE)
    lease_from_info(lease, &resp.u.lease, flags & GL_RENEW_F_ROTATE);
  free(raw);
  return st;
}

gpulease_status gpulease_lease_renew(gpulease_client *client, gpulease_lease *lease,
                                     uint32_t ttl_s, gpulease_error *err) {
  return lease_op(client, GL_OP_LEASE_RENEW, lease, ttl_s, 0, err);
}

gpulease_status gpulease_lease_rotate(gpulease_client *client, gpulease_lease *lease,
                                      uint32_t ttl_s, gpulease_error *err) {
  return lease_op(client, GL_OP_LEASE_RENEW, lease, ttl_s, GL_RENEW_F_ROTATE, err);
}

gpulease_status gpulease_lease_query(gpulease_client *client, gpulease_lease *lease,
                                     gpulease_error *err) {
  return lease_op(client, GL_OP_LEASE_QUERY, lease, 0, 0, err);
}

gpulease_status gpulease_lease_free(gpulease_client *client, const gpulease_lease *lease,
                                    gpulease_error *err) {
  if (!lease) return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "lease is NULL");
  gpulease_lease copy = *lease;
  return lease_op(client, GL_OP_LEASE_FREE, &copy, 0, 0, err);
}

gpulease_status gpulease_lease_delegate(gpulease_client *client, const gpulease_lease *lease,
                                        uint32_t rights, uint32_t ttl_s, const char *audience,
                                        uint8_t out_secret[GPULEASE_SECRET_BYTES],
                                        gpulease_error *err) {
  if (!lease || !out_secret)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "lease or out_secret is NULL");
  gl_request req = {.op = GL_OP_LEASE_DELEGATE};
  gl_lease_delegate_req *d = &req.u.delegate;
  d->auth.lease_id = lease->id;
  memcpy(d->auth.secret, lease->secret, sizeof d->auth.secret);
  d->rights = rights;
  d->ttl_s = ttl_s;
  if (audience && strlen(audience) >= sizeof d->audience)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "audience longer than 255 bytes");
  snprintf(d->audience, sizeof d->audience, "%s", audience ? audience : "");
  gl_response resp;
  uint8_t *raw;
  gpulease_status st = gl_lib_exchange(client, &req, &resp, &raw, err);
  if (st == GPULEASE_OK) memcpy(out_secret, resp.u.secret, GPULEASE_SECRET_BYTES);
  free(raw);
  return st;
}

gpulease_status gpulease_lease_revoke(gpulease_client *client, uint64_t lease_id,
                                      const char *reason, gpulease_error *err) {
  gl_request req = {.op = GL_OP_LEASE_REVOKE};
  req.u.revoke.lease_id = lease_id;
  if (reason && strlen(reason) >= sizeof req.u.revoke.reason)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "reason longer than 255 bytes");
  snprintf(req.u.revoke.reason, sizeof req.u.revoke.reason, "%s", reason ? reason : "");
  gl_response resp;
  uint8_t *raw;
  gpulease_status st = gl_lib_exchange(client, &req, &resp, &raw, err);
  free(raw);
  return st;
}

gpulease_status gpulease_admin_unfence(gpulease_client *client, uint32_t gpu_index,
                                       gpulease_error *err) {
  gl_request req = {.op = GL_OP_ADMIN_UNFENCE};
  req.u.unfence.gpu_index = gpu_index;
  gl_response resp;
  uint8_t *raw;
  gpulease_status st = gl_lib_exchange(client, &req, &resp, &raw, err);
  free(raw);
  return st;
}

static uint64_t be64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | p[i];
  return v;
}

void gpulease_secret_describe(const uint8_t secret[GPULEASE_SECRET_BYTES], uint32_t *generation,
                              uint32_t *rights, uint64_t *not_after_s, int *delegated_to_other) {
  if (!secret) return;
  /* docs/protocol.md, "lease_auth": generation, rights, not_after_s,
   * audience, mac. */
  if (generation) *generation = (uint32_t)(be64(secret) >> 32);
  if (rights) *rights = (uint32_t)be64(secret);
  if (not_after_s) *not_after_s = be64(secret + 8);
  if (delegated_to_other) *delegated_to_other = be64(secret + 16) != 0;
}

void gpulease_secret_to_hex(const uint8_t secret[GPULEASE_SECRET_BYTES],
                            char hex[2 * GPULEASE_SECRET_BYTES + 1]) {
  gl_hex_encode(secret, GPULEASE_SECRET_BYTES, hex);
}

gpulease_status gpulease_secret_from_hex(const char *hex, uint8_t secret[GPULEASE_SECRET_BYTES]) {
  return gl_hex_decode(hex, secret, GPULEASE_SECRET_BYTES) == 0 ? GPULEASE_OK
                                                                : GPULEASE_INVALID_ARGUMENT;
}

/* ======================================================================
 * GPU_SUBMIT
 * ==================================================================== */

gpulease_param gpulease_param_pointer(uint64_t offset) {
  gpulease_param p;
  memset(&p, 0, sizeof p);
  p.kind = GPULEASE_PARAM_POINTER;
  p.offset = offset;
  return p;
}

gpulease_param gpulease_param_scalar(const void *value, uint32_t size) {
  gpulease_param p;
  memset(&p, 0, sizeof p);
  p.kind = GPULEASE_PARAM_SCALAR;
  p.size = size <= GPULEASE_MAX_SCALAR_BYTES ? size : 0; /* 0 is refused by submit */
  if (value && p.size) memcpy(p.value, value, p.size);
  return p;
}

void gpulease_submit_desc_default(gpulease_submit_desc *d) {
  memset(d, 0, sizeof *d);
  d->struct_version = GPULEASE_SUBMIT_DESC_VERSION;
  d->grid[0] = d->grid[1] = d->grid[2] = 1;
  d->block[0] = d->block[1] = d->block[2] = 1;
}

gpulease_status gpulease_submit(gpulease_client *client, const gpulease_lease *lease,
                                const gpulease_submit_desc *d, gpulease_submit_result *result,
                                gpulease_error *err) {
  if (!lease || !d || !result)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "lease, desc and result are required");
  if (!gl_lib_version_ok(d->struct_version, GPULEASE_SUBMIT_DESC_VERSION))
    return gl_lib_version_err(err, "submit desc", d->struct_version);
  if (!gl_lib_version_ok(result->struct_version, GPULEASE_SUBMIT_RESULT_VERSION))
    return gl_lib_version_err(err, "submit result", result->struct_version);
  if (!d->image || d->image_size == 0 || d->image_size > UINT32_MAX)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "image missing or larger than 4 GiB");
  if (!d->kernel || !*d->kernel || strlen(d->kernel) > GL_WIRE_MAX_KERNEL_NAME)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "kernel name missing or longer than %d bytes",
                   GL_WIRE_MAX_KERNEL_NAME);
  if (d->input_size > UINT32_MAX || (d->input_size && !d->input))
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "input missing or larger than 4 GiB");
  if (d->param_count > GPULEASE_MAX_PARAMS || (d->param_count && !d->params))
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "param list missing or over %d entries",
                   GPULEASE_MAX_PARAMS);

  /* Launch attributes exist from struct_version 2 (a version 1 struct
   * ends before them). */
  uint32_t launch_flags = 0, cluster[3] = {0, 0, 0};
  if (d->struct_version >= 2) {
    launch_flags = d->launch_flags;
    memcpy(cluster, d->cluster, sizeof cluster);
  }
  if (launch_flags & ~GPULEASE_LAUNCH_COOPERATIVE)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "launch_flags 0x%x has unknown bits",
                          launch_flags);
  bool has_cluster = cluster[0] || cluster[1] || cluster[2];
  if (has_cluster && (!cluster[0] || !cluster[1] || !cluster[2]))
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT,
                          "cluster (%u,%u,%u): each dimension must be at least 1 (all 0: none)",
                          cluster[0], cluster[1], cluster[2]);
  gl_buf params;
  gl_buf_init(&params);
  if (d->use_params || d->param_count) {
    gpulease_status pst = gl_params_encode(d->params, d->param_count, &params);
    if (pst != GPULEASE_OK) {
      gl_buf_free(&params);
      return gl_lib_set_err(err, pst, "kernel parameters out of range (kind, or scalar size 1..%d)",
                     GPULEASE_MAX_SCALAR_BYTES);
    }
  }
  if (d->format == GPULEASE_IMAGE_PTX || d->format == GPULEASE_IMAGE_AUTO) {
    gpulease_status cst = gl_lib_ptx_precheck(client, lease->gpu_index, d->image, d->image_size, err);
    if (cst != GPULEASE_OK) {
      gl_buf_free(&params);
      return cst;
    }
  }
  gl_request req = {.op = GL_OP_GPU_SUBMIT};
  gl_submit_req *s = &req.u.submit;
  s->auth.lease_id = lease->id;
  memcpy(s->auth.secret, lease->secret, sizeof s->auth.secret);
  s->image_format = (uint8_t)d->format;
  s->flags = (d->use_params || d->param_count) ? GL_SUBMIT_F_PARAMS : 0;
  if (launch_flags & GPULEASE_LAUNCH_COOPERATIVE) s->flags |= GL_SUBMIT_F_COOPERATIVE;
  if (has_cluster) {
    s->flags |= GL_SUBMIT_F_CLUSTER;
    memcpy(s->cluster, cluster, sizeof s->cluster);
  }
  s->kernel_name = d->kernel;
  s->kernel_name_len = (uint16_t)strlen(d->kernel);
  memcpy(s->grid, d->grid, sizeof s->grid);
  memcpy(s->block, d->block, sizeof s->block);
  s->shared_mem_bytes = d->shared_mem_bytes;
  s->input_offset = d->input_offset;
  s->output_offset = d->output_offset;
  s->output_size = d->output_size;
  s->param_count = (uint16_t)d->param_count;
  s->params_raw = params.data;
  s->params_raw_len = params.len;
  s->image = d->image;
  s->image_len = (uint32_t)d->image_size;
  s->input = d->input;
  s->input_len = (uint32_t)d->input_size;

  bool want_kout = client && client->kout_fn && !client->kout_refused;
  if (want_kout) s->flags |= GL_SUBMIT_F_KOUT;
  gl_response resp;
  uint8_t *raw;
  gpulease_error first;
  gpulease_status st = gl_lib_exchange(client, &req, &resp, &raw, want_kout ? &first : err);
  if (want_kout && st == GPULEASE_INVALID_ARGUMENT && strstr(first.message, "has unknown bits 0x08")) {
    /* A daemon older than kernel output refuses flags bit 3 as it decodes
     * the request (which never ran): again without it, and not asked on
     * this client again. */
    client->kout_refused = true;
    want_kout = false;
    s->flags &= (uint8_t)~GL_SUBMIT_F_KOUT;
    st = gl_lib_exchange(client, &req, &resp, &raw, err);
  } else if (want_kout && err) {
    *err = first;
  }
  gl_buf_free(&params);
  if (st != GPULEASE_OK) return st;
  if (want_kout && resp.u.submit.has_kout) {
    const gl_kout *k = &resp.u.submit.kout;
    if (k->len || k->dropped || k->flags)
      client->kout_fn(client->kout_user, lease->id, (const char *)k->text, k->len, k->dropped,
                      k->flags);
  }
  GL_LIB_CLEAR_KEEP_VERSION(result);
  result->gpu_time_ns = resp.u.submit.gpu_time_ns;
  result->output_size = resp.u.submit.output_len;
  /* Hand out a buffer of exactly the output (at least 1 byte for malloc). */
  result->output = malloc(result->output_size ? result->output_size : 1);
  if (!result->output) {
    free(raw);
    return gl_lib_set_err(err, GPULEASE_NO_MEMORY, "out of memory for %zu output bytes",
                   result->output_size);
  }
  memcpy(result->output, resp.u.submit.output, result->output_size);
  free(raw);
  return GPULEASE_OK;
}

void gpulease_client_set_kernel_output(gpulease_client *client, gpulease_kernel_output_fn fn,
                                       void *user) {
  if (!client) return;
  client->kout_fn = fn;
  client->kout_user = user;
}

void gpulease_submit_result_init(gpulease_submit_result *result) {
  if (!result) return;
  memset(result, 0, sizeof *result);
  result->struct_version = GPULEASE_SUBMIT_RESULT_VERSION;
}

void gpulease_submit_result_release(gpulease_submit_result *result) {
  if (!result) return;
  free(result->output);
  GL_LIB_CLEAR_KEEP_VERSION(result);
}

void gl_lib_client_abort(gpulease_client *c) {
  if (!c) return;
  gl_qclient_abort(c->q);
  for (unsigned i = 0; i < GL_WIRE_MAX_STRIPES; i++) gl_qclient_abort(c->stripe[i]);
}
