/* dreq.c - see dreq.h. */
#include "daemon/dreq.h"

#include <stdlib.h>

struct gl_dreq {
  gl_qreq *q;
  gl_lreq *l;
  gl_shard *sh; /* with q: the shard that owns q */
};

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
  int rc = r->sh  ? gl_shard_reply(r->sh, r->q, msg, len)
           : r->q ? gl_qreq_reply(r->q, msg, len)
                  : gl_lreq_reply(r->l, msg, len);
  free(r);
  return rc;
}

int gl_dreq_reply_lent(gl_dreq *r, const uint8_t *msg, size_t len, void (*release)(void *ctx),
                       void *ctx) {
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
  if (r->sh) return false;
  return r->q ? gl_qreq_orphaned(r->q) : gl_lreq_orphaned(r->l);
}

bool gl_dreq_is_local(const gl_dreq *r) { return r->l != NULL; }

int gl_dreq_take_fd(gl_dreq *r) { return r->l ? gl_lreq_take_fd(r->l) : -1; }

uint64_t gl_dreq_conn(const gl_dreq *r) { return r->l ? gl_lreq_conn_id(r->l) : 0; }
