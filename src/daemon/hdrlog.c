/* hdrlog.c - see hdrlog.h. A mutex-guarded FIFO of records and an
 * ev_async that wakes the main loop to drain it. */
#include "daemon/hdrlog.h"

#include <ev.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth/audit.h"
#include "common/log.h"
#include "daemon/daemon.h"
#include "daemon/metrics.h"
#include "proto/wire.h"

typedef struct rec {
  struct rec *next;
  uint16_t op;
  uint64_t in_bytes;
  int64_t unix_ns;
  char tenant[GL_IDENTITY_MAX];
  char peer[64];
  size_t len;
  uint8_t answer[]; /* the whole response */
} rec;

struct gl_hdrlog {
  struct ev_loop *loop;
  gl_daemon *d;
  ev_async wake;
  pthread_mutex_t mu;
  rec *head, *tail;
  size_t n;
  uint64_t dropped;
};

/* One record into the audit log (as dreq.c's audit_answer writes a
 * refusal) and the metrics (as gl_dreq_meter's gl_metrics_answer). */
static void write_rec(gl_hdrlog *l, const rec *r) {
  gl_daemon *d = l->d;
  gl_header h;
  if (gl_header_decode(r->answer, r->len, &h) != GPULEASE_OK) return;
  if (d->metrics) gl_metrics_answer(d->metrics, r->op, r->answer, r->len, r->in_bytes, 0.0);
  if (!d->audit) return;
  size_t body = r->len - GL_WIRE_HEADER_SIZE;
  const uint8_t *b = r->answer + GL_WIRE_HEADER_SIZE;
  size_t mlen = body >= 2 ? (size_t)(b[0] << 8 | b[1]) : 0;
  if (mlen > body - 2) mlen = body >= 2 ? body - 2 : 0;
  char text[1024];
  snprintf(text, sizeof text, "%.*s", (int)(mlen < sizeof text ? mlen : sizeof text - 1),
           (const char *)b + 2);
  gl_audit_rec a = {.unix_ns = r->unix_ns,
                    .tenant = r->tenant,
                    .peer = r->peer,
                    .op = gl_op_name(r->op),
                    .lease_id = 0,
                    .status = gpulease_status_name(h.status),
                    .message = text};
  gl_audit_write(d->audit, &a);
}

void gl_hdrlog_drain(gl_hdrlog *l) {
  if (!l) return;
  pthread_mutex_lock(&l->mu);
  rec *r = l->head;
  uint64_t dropped = l->dropped;
  l->head = l->tail = NULL;
  l->n = 0;
  l->dropped = 0;
  pthread_mutex_unlock(&l->mu);
  if (dropped)
    GL_WARN("%llu refusals on the header were neither audited nor counted (more than %d "
            "queued)",
            (unsigned long long)dropped, GL_HDRLOG_MAX);
  while (r) {
    rec *n = r->next;
    write_rec(l, r);
    free(r);
    r = n;
  }
}

static void on_wake(struct ev_loop *loop, ev_async *w, int revents) {
  (void)loop, (void)revents;
  gl_hdrlog_drain(w->data);
}

gl_hdrlog *gl_hdrlog_new(struct ev_loop *loop, gl_daemon *d) {
  gl_hdrlog *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->loop = loop;
  l->d = d;
  pthread_mutex_init(&l->mu, NULL);
  ev_async_init(&l->wake, on_wake);
  l->wake.data = l;
  ev_async_start(loop, &l->wake);
  return l;
}

void gl_hdrlog_free(gl_hdrlog *l) {
  if (!l) return;
  gl_hdrlog_drain(l);
  ev_async_stop(l->loop, &l->wake);
  pthread_mutex_destroy(&l->mu);
  free(l);
}

void gl_hdrlog_note(gl_hdrlog *l, const gl_req_origin *from, uint16_t op, uint64_t in_bytes,
                    const uint8_t *answer, size_t len) {
  if (!l || len < GL_WIRE_HEADER_SIZE) return;
  rec *r = malloc(sizeof *r + len);
  if (!r) return;
  r->next = NULL;
  r->op = op;
  r->in_bytes = in_bytes;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  r->unix_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  snprintf(r->tenant, sizeof r->tenant, "%s", from && from->identity ? from->identity : "");
  snprintf(r->peer, sizeof r->peer, "%s", from && from->peer ? from->peer : "");
  r->len = len;
  memcpy(r->answer, answer, len);
  pthread_mutex_lock(&l->mu);
  if (l->n >= GL_HDRLOG_MAX) {
    l->dropped++;
    pthread_mutex_unlock(&l->mu);
    free(r);
    return;
  }
  if (l->tail) l->tail->next = r;
  else l->head = r;
  l->tail = r;
  l->n++;
  pthread_mutex_unlock(&l->mu);
  ev_async_send(l->loop, &l->wake);
}
