/* dreq.c - see dreq.h. */
#include "daemon/dreq.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/util.h"
#include "proto/wire.h"

struct gl_dreq {
  gl_qreq *q;
  gl_lreq *l;
  gl_shard *sh; /* with q: the shard that owns q */
  gl_audit *audit; /* gl_dreq_audit: where its answer is recorded, or NULL */
  uint16_t op;
  bool audit_always;
  uint64_t lease_id;
  uint32_t *inflight; /* gl_dreq_hold: a counter to decrement when answered */
  gl_dreq_meter_fn meter_fn; /* gl_dreq_meter: told of the answer, or NULL */
  void *meter_user;
  uint16_t metered_op;
  uint64_t in_bytes, t0_ns;
};

void gl_dreq_meter(gl_dreq *r, gl_dreq_meter_fn fn, void *user, uint16_t op, size_t in_bytes) {
  r->meter_fn = fn;
  r->meter_user = user;
  r->metered_op = op;
  r->in_bytes = in_bytes;
  r->t0_ns = gl_mono_ns();
}

/* Tells r's meter of the answer msg (once). */
static void meter(gl_dreq *r, const uint8_t *msg, size_t len) {
  if (!r->meter_fn) return;
  double s = (double)(gl_mono_ns() - r->t0_ns) / 1e9;
  r->meter_fn(r->meter_user, r->metered_op, msg, len, r->in_bytes, s);
  r->meter_fn = NULL;
}

void gl_dreq_hold(gl_dreq *r, uint32_t *counter) {
  r->inflight = counter;
  (*counter)++;
}

/* The answer is going out: r no longer counts. */
static void unhold(gl_dreq *r) {
  if (r->inflight) (*r->inflight)--;
  r->inflight = NULL;
}

void gl_dreq_audit(gl_dreq *r, gl_audit *a, uint16_t op, uint64_t lease_id, bool always) {
  r->audit = a;
  r->op = op;
  r->lease_id = lease_id;
  r->audit_always = always;
}

/* Writes r's audit line for the answer msg (tenant: the caller's, or the
 * one AUTHENTICATE is binding). */
static void audit_answer(const gl_dreq *r, const char *tenant, const uint8_t *msg, size_t len) {
  gl_header h;
  if (gl_header_decode(msg, len, &h) != GPULEASE_OK) return;
  if (h.status == GPULEASE_OK && !r->audit_always) return;
  char text[1024] = "";
  size_t body = len - GL_WIRE_HEADER_SIZE;
  const uint8_t *b = msg + GL_WIRE_HEADER_SIZE;
  size_t mlen = body >= 2 ? (size_t)(b[0] << 8 | b[1]) : 0;
  if (mlen > body - 2) mlen = body >= 2 ? body - 2 : 0;
  if (h.status != GPULEASE_OK)
    snprintf(text, sizeof text, "%.*s", (int)(mlen < sizeof text ? mlen : sizeof text - 1),
             (const char *)b + 2);
  uint64_t lease = r->lease_id;
  if (!lease && h.status == GPULEASE_OK && r->op == GL_OP_LEASE_ALLOC && body >= 2 + mlen + 8)
    for (int i = 0; i < 8; i++) lease = lease << 8 | b[2 + mlen + i];
  char peer[128];
  gl_dreq_peer(r, peer, sizeof peer);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  gl_audit_rec rec = {.unix_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec,
                      .tenant = tenant,
                      .peer = peer,
                      .op = gl_op_name(r->op),
                      .lease_id = lease,
                      .status = gpulease_status_name(h.status),
                      .message = text};
  gl_audit_write(r->audit, &rec);
}

gl_dreq *gl_dreq_quic(gl_qreq *q) {
  gl_dreq *r = calloc(1, sizeof *r);
  if (r) r->q = q;
  return r;
}

gl_dreq *gl_dreq_shard(gl_shard *sh, gl_qreq *q) {
  gl_dreq *r = calloc(1, sizeof *r);
  if (r) {
    r->q = q;
    r->sh = sh;
  }
  return r;
}

gl_dreq *gl_dreq_local(gl_lreq *l) {
  gl_dreq *r = calloc(1, sizeof *r);
  if (r) r->l = l;
  return r;
}

int gl_dreq_reply(gl_dreq *r, const uint8_t *msg, size_t len) {
  if (r->audit) audit_answer(r, gl_dreq_identity(r), msg, len);
  unhold(r);
  meter(r, msg, len);
  int rc = r->sh  ? gl_shard_reply(r->sh, r->q, msg, len)
           : r->q ? gl_qreq_reply(r->q, msg, len)
                  : gl_lreq_reply(r->l, msg, len);
  free(r);
  return rc;
}

int gl_dreq_reply_lent(gl_dreq *r, const uint8_t *msg, size_t len, void (*release)(void *ctx),
                       void *ctx) {
  if (r->audit) audit_answer(r, gl_dreq_identity(r), msg, len);
  unhold(r);
  meter(r, msg, len);
  int rc;
  if (r->sh) {
    rc = gl_shard_reply_lent(r->sh, r->q, msg, len, release, ctx);
  } else if (r->q) {
    rc = gl_qreq_reply_lent(r->q, msg, len, release, ctx);
  } else {
    rc = gl_lreq_reply(r->l, msg, len);
    release(ctx);
  }
  free(r);
  return rc;
}

int gl_dreq_reply_identity(gl_dreq *r, const char *identity, const uint8_t *msg, size_t len) {
  if (r->audit) {
    audit_answer(r, identity, msg, len);
    r->audit = NULL; /* once */
  }
  unhold(r);
  meter(r, msg, len);
  if (r->sh) { /* set on the shard's thread, just before it sends msg */
    int rc = gl_shard_reply_identity(r->sh, r->q, identity, msg, len);
    free(r);
    return rc;
  }
  int set = r->q ? gl_qreq_set_identity(r->q, identity) : gl_lreq_set_identity(r->l, identity);
  int rc = gl_dreq_reply(r, msg, len);
  return set != 0 ? -1 : rc;
}

const char *gl_dreq_identity(const gl_dreq *r) {
  return r->q ? gl_qreq_identity(r->q) : gl_lreq_identity(r->l);
}

void gl_dreq_peer(const gl_dreq *r, char *buf, size_t len) {
  if (r->q) gl_qreq_peer(r->q, buf, len);
  else gl_lreq_peer(r->l, buf, len);
}

bool gl_dreq_orphaned(const gl_dreq *r) {
  if (r->sh) return gl_qreq_gone(r->q); /* q lives on the shard's thread */
  return r->q ? gl_qreq_orphaned(r->q) : gl_lreq_orphaned(r->l);
}

bool gl_dreq_is_local(const gl_dreq *r) { return r->l != NULL; }

int gl_dreq_take_fd(gl_dreq *r) { return r->l ? gl_lreq_take_fd(r->l) : -1; }

uint64_t gl_dreq_conn(const gl_dreq *r) { return r->l ? gl_lreq_conn_id(r->l) : 0; }
