/*
 * stripe.c - a large MEM_WRITE or MEM_READ over several QUIC connections at
 * once (gpulease.h, connect options "Striping"; docs/protocol.md NET_INFO).
 *
 * One connection's bytes are encrypted and decrypted on one core at each
 * end; the daemon serves each stripe port on a thread of its own, and here
 * each stripe is driven by a thread of its own. The transfer is cut into
 * GL_SESSION_CHUNK chunks, and each stripe takes a contiguous run of them
 * with GL_STRIPE_CHUNKS_IN_FLIGHT in flight. The chunks go with seq 0
 * ("after the ops the daemon has received"), once every earlier op of the
 * session is answered, and the call returns when every chunk is answered:
 * the transfer keeps its place in the session's order without taking seqs
 * that other connections would have to deliver in turn.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lib/client_internal.h"

#define set_err gl_lib_set_err

void gl_lib_stripes_close(gpulease_client *c) {
  for (unsigned i = 0; i < c->nstripe; i++) gl_qclient_del(c->stripe[i]);
  c->nstripe = 0;
  c->stripe_state = 0;
}

/* Opens the stripe connections at the first striped transfer: true when
 * there are at least two. */
static bool stripes_ready(gpulease_client *c) {
  if (c->stripe_state == 1) {
    bool dead = false;
    for (unsigned i = 0; i < c->nstripe; i++) dead |= gl_qclient_dead(c->stripe[i]);
    if (!dead) return true;
    gl_lib_stripes_close(c); /* and open them again */
  }
  if (c->stripe_state != 0) return false;
  c->stripe_state = -1;
  if (c->stripes_max < 2) return false;
  gl_request q = {.op = GL_OP_NET_INFO};
  gl_response r;
  uint8_t *raw = NULL;
  if (gl_lib_exchange(c, &q, &r, &raw, NULL) != GPULEASE_OK) { /* an older daemon */
    free(raw);
    return false;
  }
  unsigned n = r.u.net_info.stripe_count;
  uint16_t ports[GL_WIRE_MAX_STRIPES];
  memcpy(ports, r.u.net_info.stripe_ports, sizeof ports);
  free(raw);
  if (n > c->stripes_max) n = c->stripes_max;
  for (unsigned i = 0; i < n; i++)
    if (gl_lib_connect_port(c, ports[i], &c->stripe[c->nstripe], NULL) == GPULEASE_OK)
      c->nstripe++;
  if (c->nstripe < 2) {
    gl_lib_stripes_close(c);
    c->stripe_state = -1;
    return false;
  }
  c->stripe_state = 1;
  return true;
}

typedef struct part {
  gpulease_session *s;
  gl_qclient *q;
  uint16_t op;
  gpulease_buffer buffer;
  uint64_t offset; /* in the buffer, where this part starts */
  const uint8_t *src;
  uint8_t *dst;
  uint64_t len;
  _Atomic uint64_t *done; /* bytes answered, all parts */
  atomic_bool *stop;      /* a part failed: send no more */
  bool report;            /* the caller's thread: calls the progress function */
  unsigned window;        /* chunks in flight */
  uint64_t total;
  gpulease_status st;
  bool transport; /* st is the connection's, not the op's */
  gpulease_error err;
  pthread_t thread;
} part;

typedef struct inflight {
  uint64_t token, pos;
  uint32_t len;
} inflight;

static gpulease_status send_chunk(part *p, inflight *f, gpulease_error *err) {
  gl_request req = {.op = p->op};
  gl_session_ref ref = {.auth = p->s->auth, .session_id = p->s->id, .seq = 0};
  if (p->op == GL_OP_MEM_WRITE) {
    req.u.mem_write.s = ref;
    req.u.mem_write.buffer = p->buffer;
    req.u.mem_write.offset = p->offset + f->pos;
    req.u.mem_write.data = p->src + f->pos;
    req.u.mem_write.data_len = f->len;
    return gl_lib_send_write(p->q, &req, &f->token, err);
  }
  req.u.mem_read.s = ref;
  req.u.mem_read.buffer = p->buffer;
  req.u.mem_read.offset = p->offset + f->pos;
  req.u.mem_read.size_bytes = f->len;
  gl_buf b;
  gl_buf_init(&b);
  gpulease_status st = gl_lib_encode(&req, &b, err);
  char why[sizeof err->message - 64];
  int rc = st == GPULEASE_OK ? gl_qclient_send(p->q, b.data, b.len, &f->token, why, sizeof why)
                             : GL_QC_OK;
  gl_buf_free(&b);
  if (st != GPULEASE_OK) return st;
  if (rc != GL_QC_OK) return set_err(err, gl_lib_map_qc(rc), "MEM_READ: %s", why);
  return GPULEASE_OK;
}

/* The first failure of the part wins. */
static void fail(part *p, gpulease_status st, bool transport, const gpulease_error *e) {
  atomic_store(p->stop, true);
  if (p->st != GPULEASE_OK) return;
  p->st = st;
  p->transport = transport;
  p->err = *e;
}

static void *part_run(void *arg) {
  part *p = arg;
  inflight ring[GL_STRIPE_CHUNKS_IN_FLIGHT];
  const size_t w = p->window;
  size_t head = 0, n = 0;
  uint64_t sent = 0;
  gpulease_error e;
  while (n || (sent < p->len && !atomic_load(p->stop))) {
    if (sent < p->len && !atomic_load(p->stop) && n < w) {
      inflight *f = &ring[(head + n) % w];
      f->pos = sent;
      f->len = (uint32_t)(p->len - sent < GL_SESSION_CHUNK ? p->len - sent : GL_SESSION_CHUNK);
      gpulease_status st = send_chunk(p, f, &e);
      if (st != GPULEASE_OK) {
        fail(p, st, gl_lib_conn_error(st), &e);
        continue; /* the chunks in flight are still awaited */
      }
      n++;
      sent += f->len;
      continue;
    }
    inflight f = ring[head];
    head = (head + 1) % w;
    n--;
    uint8_t *raw = NULL;
    size_t rlen = 0;
    char why[sizeof e.message - 64];
    int rc = gl_qclient_wait(p->q, f.token, &raw, &rlen, why, sizeof why);
    if (rc != GL_QC_OK) {
      set_err(&e, gl_lib_map_qc(rc), "%s: %s", gl_op_name(p->op), why);
      fail(p, e.status, true, &e);
      while (n) { /* the connection is gone: abandon the rest */
        gl_qclient_cancel(p->q, ring[head].token);
        head = (head + 1) % w;
        n--;
      }
      break;
    }
    gl_response resp;
    gpulease_status st = gl_lib_decode_reply(p->op, raw, rlen, &resp, &e);
    if (st == GPULEASE_OK && p->op == GL_OP_MEM_READ) {
      if (resp.u.mem_read.data_len != f.len) {
        st = set_err(&e, GPULEASE_PROTOCOL_ERROR, "MEM_READ returned %" PRIu32 " bytes, not %" PRIu32,
                     resp.u.mem_read.data_len, f.len);
      } else {
        memcpy(p->dst + f.pos, resp.u.mem_read.data, f.len);
        gl_qclient_release(p->q, raw, (size_t)(resp.u.mem_read.data + f.len - raw));
        raw = NULL;
      }
    }
    free(raw);
    if (st != GPULEASE_OK) {
      fail(p, st, false, &e);
      continue;
    }
    uint64_t done = atomic_fetch_add(p->done, f.len) + f.len;
    if (p->report && p->s->progress) p->s->progress(done, p->total, p->s->progress_user);
  }
  return NULL;
}

bool gl_lib_striped_transfer(gpulease_session *s, uint16_t op, gpulease_buffer buffer,
                             uint64_t offset, const uint8_t *src, uint8_t *dst, uint64_t size,
                             gpulease_status *st, gpulease_error *err) {
  gpulease_client *c = s->client;
  if (size < c->stripe_min || !stripes_ready(c)) return false;
  /* Every earlier op answered first: the chunks, with seq 0, come after. */
  if ((*st = gl_session_drain(s, err)) != GPULEASE_OK) return true;
  unsigned k = c->nstripe;
  uint64_t chunks = (size + GL_SESSION_CHUNK - 1) / GL_SESSION_CHUNK;
  if (chunks < k) k = (unsigned)chunks;
  part parts[GL_WIRE_MAX_STRIPES];
  /* At most GL_STRIPE_CHUNKS_TOTAL chunks in flight in all (the daemon's
   * arena has as many slots), at least 2 a stripe. */
  unsigned window = GL_STRIPE_CHUNKS_TOTAL / k;
  if (window > GL_STRIPE_CHUNKS_IN_FLIGHT) window = GL_STRIPE_CHUNKS_IN_FLIGHT;
  if (window < 2) window = 2;
  _Atomic uint64_t done = 0;
  atomic_bool stop = false;
  uint64_t first = 0;
  for (unsigned i = 0; i < k; i++) {
    uint64_t last = chunks * (i + 1) / k; /* chunks [first, last) */
    uint64_t from = first * GL_SESSION_CHUNK, to = last * GL_SESSION_CHUNK;
    if (to > size) to = size;
    parts[i] = (part){.s = s, .q = c->stripe[i], .op = op, .buffer = buffer,
                      .offset = offset + from, .src = src ? src + from : NULL,
                      .dst = dst ? dst + from : NULL, .len = to - from, .done = &done,
                      .stop = &stop, .report = i == 0, .total = size, .st = GPULEASE_OK,
                      .window = window};
    first = last;
  }
  unsigned started = 1;
  for (; started < k; started++)
    if (pthread_create(&parts[started].thread, NULL, part_run, &parts[started]) != 0) break;
  for (unsigned i = started; i < k; i++) part_run(&parts[i]); /* no thread: run it here */
  part_run(&parts[0]);
  for (unsigned i = 1; i < started; i++) pthread_join(parts[i].thread, NULL);
  *st = GPULEASE_OK;
  bool transport = false;
  gpulease_error e;
  for (unsigned i = 0; i < k && *st == GPULEASE_OK; i++) {
    if (parts[i].st == GPULEASE_OK) continue;
    *st = parts[i].st;
    transport = parts[i].transport;
    e = parts[i].err;
  }
  if (*st == GPULEASE_OK) {
    /* The other stripes may have finished last: the total, once more. */
    if (s->progress) s->progress(atomic_load(&done), size, s->progress_user);
    gl_lib_ok(err);
    return true;
  }
  if (err) *err = e;
  if (transport) gl_lib_stripes_close(c); /* opened again at the next striped transfer */
  else gl_session_note_failure(s, op, 0, &e);
  return true;
}
