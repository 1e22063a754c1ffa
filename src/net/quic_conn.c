/*
 * quic_conn.c - see quic_conn.h: the connection ID and address tables,
 * the queue of streams with bytes to write and the write round.
 */
#include "net/quic_conn.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "net/quic_internal.h"

/* ======================================================================
 * Connection ID table
 * ==================================================================== */

struct gl_q_cid_ent {
  gl_q_cid_ent *next;
  void *value;
  uint8_t len;
  uint8_t data[NGTCP2_MAX_CIDLEN];
};

/* FNV-1a with a random basis (see quic_conn.h); the address table uses
 * it too. */
static uint64_t key_hash(uint64_t key, const uint8_t *data, size_t len) {
  uint64_t h = 0xcbf29ce484222325ull ^ key;
  for (size_t i = 0; i < len; i++) {
    h ^= data[i];
    h *= 0x100000001b3ull;
  }
  return h ^ (h >> 29);
}

int gl_q_cidtab_init(gl_q_cidtab *t, uint64_t key) {
  t->nbuckets = 64;
  t->nents = 0;
  t->key = key;
  t->buckets = calloc(t->nbuckets, sizeof *t->buckets);
  return t->buckets ? 0 : -1;
}

void gl_q_cidtab_free(gl_q_cidtab *t) {
  if (!t->buckets) return;
  for (size_t i = 0; i < t->nbuckets; i++) {
    gl_q_cid_ent *e = t->buckets[i];
    while (e) {
      gl_q_cid_ent *next = e->next;
      free(e);
      e = next;
    }
  }
  free(t->buckets);
  t->buckets = NULL;
}

static gl_q_cid_ent **cid_slot(const gl_q_cidtab *t, const uint8_t *data, size_t len) {
  gl_q_cid_ent **pp = &t->buckets[key_hash(t->key, data, len) & (t->nbuckets - 1)];
  for (; *pp; pp = &(*pp)->next)
    if ((*pp)->len == len && memcmp((*pp)->data, data, len) == 0) return pp;
  return pp;
}

void *gl_q_cidtab_get(const gl_q_cidtab *t, const uint8_t *data, size_t len) {
  if (len > NGTCP2_MAX_CIDLEN) return NULL;
  gl_q_cid_ent *e = *cid_slot(t, data, len);
  return e ? e->value : NULL;
}

static void cid_grow(gl_q_cidtab *t) {
  size_t nb = t->nbuckets * 2;
  gl_q_cid_ent **b = calloc(nb, sizeof *b);
  if (!b) return; /* keep the longer chains */
  for (size_t i = 0; i < t->nbuckets; i++) {
    gl_q_cid_ent *e = t->buckets[i];
    while (e) {
      gl_q_cid_ent *next = e->next;
      size_t at = key_hash(t->key, e->data, e->len) & (nb - 1);
      e->next = b[at];
      b[at] = e;
      e = next;
    }
  }
  free(t->buckets);
  t->buckets = b;
  t->nbuckets = nb;
}

int gl_q_cidtab_put(gl_q_cidtab *t, const ngtcp2_cid *cid, void *value) {
  if (cid->datalen == 0 || cid->datalen > NGTCP2_MAX_CIDLEN) return -1;
  gl_q_cid_ent **pp = cid_slot(t, cid->data, cid->datalen);
  if (*pp) return (*pp)->value == value ? 0 : -1;
  gl_q_cid_ent *e = calloc(1, sizeof *e);
  if (!e) return -1;
  e->value = value;
  e->len = (uint8_t)cid->datalen;
  memcpy(e->data, cid->data, cid->datalen);
  *pp = e;
  if (++t->nents > t->nbuckets) cid_grow(t);
  return 0;
}

void gl_q_cidtab_del(gl_q_cidtab *t, const ngtcp2_cid *cid) {
  gl_q_cid_ent **pp = cid_slot(t, cid->data, cid->datalen);
  if (!*pp) return;
  gl_q_cid_ent *e = *pp;
  *pp = e->next;
  free(e);
  t->nents--;
}

/* ======================================================================
 * Connections per IP address
 * ==================================================================== */

struct gl_q_addr_ent {
  gl_q_addr_ent *next;
  uint8_t ip[16];
  size_t n;
};

bool gl_q_addr_key(const struct sockaddr *sa, uint8_t ip[16]) {
  static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (sa->sa_family == AF_INET) {
    memcpy(ip, v4mapped, sizeof v4mapped);
    memcpy(ip + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    return true;
  }
  if (sa->sa_family == AF_INET6) {
    memcpy(ip, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    return true;
  }
  return false;
}

int gl_q_addrtab_init(gl_q_addrtab *t, uint64_t key) {
  t->nbuckets = 64;
  t->nents = 0;
  t->key = key;
  t->buckets = calloc(t->nbuckets, sizeof *t->buckets);
  return t->buckets ? 0 : -1;
}

void gl_q_addrtab_free(gl_q_addrtab *t) {
  if (!t->buckets) return;
  for (size_t i = 0; i < t->nbuckets; i++) {
    gl_q_addr_ent *e = t->buckets[i];
    while (e) {
      gl_q_addr_ent *next = e->next;
      free(e);
      e = next;
    }
  }
  free(t->buckets);
  t->buckets = NULL;
}

static size_t addr_bucket(const gl_q_addrtab *t, const uint8_t ip[16], size_t nbuckets) {
  return (size_t)(key_hash(t->key, ip, 16) & (nbuckets - 1));
}

static gl_q_addr_ent *addr_find(const gl_q_addrtab *t, const uint8_t ip[16]) {
  for (gl_q_addr_ent *e = t->buckets[addr_bucket(t, ip, t->nbuckets)]; e; e = e->next)
    if (memcmp(e->ip, ip, 16) == 0) return e;
  return NULL;
}

size_t gl_q_addrtab_count(const gl_q_addrtab *t, const uint8_t ip[16]) {
  const gl_q_addr_ent *e = addr_find(t, ip);
  return e ? e->n : 0;
}

static void addr_grow(gl_q_addrtab *t) {
  size_t nb = t->nbuckets * 2;
  gl_q_addr_ent **b = calloc(nb, sizeof *b);
  if (!b) return; /* keep the longer chains */
  for (size_t i = 0; i < t->nbuckets; i++) {
    gl_q_addr_ent *e = t->buckets[i];
    while (e) {
      gl_q_addr_ent *next = e->next;
      size_t at = addr_bucket(t, e->ip, nb);
      e->next = b[at];
      b[at] = e;
      e = next;
    }
  }
  free(t->buckets);
  t->buckets = b;
  t->nbuckets = nb;
}

int gl_q_addrtab_ref(gl_q_addrtab *t, const uint8_t ip[16]) {
  gl_q_addr_ent *e = addr_find(t, ip);
  if (e) {
    e->n++;
    return 0;
  }
  e = calloc(1, sizeof *e);
  if (!e) return -1;
  memcpy(e->ip, ip, 16);
  e->n = 1;
  size_t at = addr_bucket(t, ip, t->nbuckets);
  e->next = t->buckets[at];
  t->buckets[at] = e;
  if (++t->nents > t->nbuckets) addr_grow(t);
  return 0;
}

void gl_q_addrtab_unref(gl_q_addrtab *t, const uint8_t ip[16]) {
  for (gl_q_addr_ent **pp = &t->buckets[addr_bucket(t, ip, t->nbuckets)]; *pp;
       pp = &(*pp)->next) {
    gl_q_addr_ent *e = *pp;
    if (memcmp(e->ip, ip, 16) != 0) continue;
    if (--e->n == 0) {
      *pp = e->next;
      free(e);
      t->nents--;
    }
    return;
  }
}

/* ======================================================================
 * Streams with bytes to write
 * ==================================================================== */

static void out_append(gl_q_out **head, gl_q_out **tail, gl_q_out *o) {
  o->next = NULL;
  o->prev = *tail;
  if (*tail) (*tail)->next = o;
  else *head = o;
  *tail = o;
}

void gl_q_outq_remove(gl_q_outq *q, gl_q_out *o) {
  if (o->where == GL_Q_OUT_NONE) return;
  gl_q_out **head = o->where == GL_Q_OUT_READY ? &q->head : &q->bhead;
  gl_q_out **tail = o->where == GL_Q_OUT_READY ? &q->tail : &q->btail;
  if (o->prev) o->prev->next = o->next;
  else *head = o->next;
  if (o->next) o->next->prev = o->prev;
  else *tail = o->prev;
  o->prev = o->next = NULL;
  o->where = GL_Q_OUT_NONE;
}

void gl_q_outq_add(gl_q_outq *q, gl_q_out *o) {
  if (o->where != GL_Q_OUT_NONE) return;
  out_append(&q->head, &q->tail, o);
  o->where = GL_Q_OUT_READY;
}

/* o to the back of list where (taken off its own first). */
static void out_move(gl_q_outq *q, gl_q_out *o, uint8_t where) {
  gl_q_outq_remove(q, o);
  if (where == GL_Q_OUT_READY) out_append(&q->head, &q->tail, o);
  else out_append(&q->bhead, &q->btail, o);
  o->where = where;
}

/* Puts the streams blocked during a round back in front of the ready ones
 * (they were there first). */
static void out_unblock_all(gl_q_outq *q) {
  if (!q->bhead) return;
  for (gl_q_out *o = q->bhead; o; o = o->next) o->where = GL_Q_OUT_READY;
  q->btail->next = q->head;
  if (q->head) q->head->prev = q->btail;
  else q->tail = q->btail;
  q->head = q->bhead;
  q->bhead = q->btail = NULL;
}

/* ======================================================================
 * The write round
 * ==================================================================== */

int gl_q_write(const gl_q_writer *w, uint64_t now) {
  ngtcp2_conn *conn = w->conn;
  gl_q_outq *q = w->q;
  /* Packets are at most the path's size, but each write offers room for
   * the largest we allow, so a path MTU probe fits. */
  size_t maxlen = ngtcp2_conn_get_max_tx_udp_payload_size(conn);
  size_t pathlen = ngtcp2_conn_get_path_max_tx_udp_payload_size(conn);
  if (maxlen > w->max_udp || maxlen == 0) maxlen = w->max_udp;
  if (pathlen > maxlen || pathlen == 0) pathlen = maxlen;
  size_t quantum = ngtcp2_conn_get_send_quantum(conn);
  if (quantum < pathlen) quantum = pathlen;
  ngtcp2_path_storage ps, bps; /* the packet's path; the batch's */
  ngtcp2_path_storage_zero(&ps);
  ngtcp2_path_storage_zero(&bps);
  ngtcp2_pkt_info pi;
  size_t off = 0, npkts = 0, burst = 0, total = 0;
  int rc = 0;
  for (;;) {
    if (npkts == GL_Q_TX_PKTS || GL_Q_TX_BYTES - off < pathlen) {
      bool sent = w->send(w->ctx, &bps.path, w->buf, w->lens, npkts);
      off = npkts = 0;
      if (!sent) break;
    }
    gl_q_out *o = q->head;
    int64_t sid = -1;
    ngtcp2_vec v = {0};
    size_t vcnt = 0;
    uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_NONE;
    if (o) {
      sid = o->id;
      v.base = (uint8_t *)(uintptr_t)(o->data + o->off);
      v.len = o->len - o->off;
      vcnt = 1;
      flags = NGTCP2_WRITE_STREAM_FLAG_MORE |
              (o->no_fin ? NGTCP2_WRITE_STREAM_FLAG_NONE : NGTCP2_WRITE_STREAM_FLAG_FIN);
    }
    ngtcp2_ssize ndata = -1;
    ngtcp2_ssize n = ngtcp2_conn_writev_stream(conn, &ps.path, &pi, w->buf + off,
                                               GL_Q_TX_BYTES - off < maxlen ? pathlen : maxlen,
                                               &ndata, flags, sid, &v, vcnt, now);
    if (o && ndata >= 0) {
      o->off += (size_t)ndata;
      if (o->off == o->len) { /* all of it went out (with FIN): ngtcp2 owns the rest */
        o->over = true;
        gl_q_outq_remove(q, o);
      }
    }
    if (n < 0) {
      if (n == NGTCP2_ERR_WRITE_MORE) continue; /* room left: the head again */
      if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED && o) {
        out_move(q, o, GL_Q_OUT_BLOCKED);
        continue;
      }
      if ((n == NGTCP2_ERR_STREAM_SHUT_WR || n == NGTCP2_ERR_STREAM_NOT_FOUND) && o) {
        /* The peer refused the rest (STOP_SENDING): reading goes on. */
        o->refused = o->over = true;
        gl_q_outq_remove(q, o);
        continue;
      }
      if (npkts) (void)w->send(w->ctx, &bps.path, w->buf, w->lens, npkts);
      out_unblock_all(q);
      return (int)n;
    }
    if (n == 0) break;
    if (npkts == 0) {
      ngtcp2_path_copy(&bps.path, &ps.path);
    } else if (!ngtcp2_path_eq(&bps.path, &ps.path)) {
      /* A packet for another path (migration): send the batch so far,
       * then start a new one with it. */
      bool sent = w->send(w->ctx, &bps.path, w->buf, w->lens, npkts);
      size_t at = off;
      off = npkts = 0;
      if (!sent) break; /* blocked: this packet is lost, as if on the wire */
      memmove(w->buf, w->buf + at, (size_t)n);
      ngtcp2_path_copy(&bps.path, &ps.path);
    }
    w->lens[npkts++] = (size_t)n;
    off += (size_t)n;
    burst += (size_t)n;
    total += (size_t)n;
    /* Take turns: a stream that filled the packet goes to the back. */
    if (o && o->where == GL_Q_OUT_READY && o->next) out_move(q, o, GL_Q_OUT_READY);
    if (burst >= quantum) {
      /* A send quantum: let pacing set the next departure. */
      ngtcp2_conn_update_pkt_tx_time(conn, now);
      burst = 0;
      if (total >= GL_Q_ROUND_BYTES) {
        rc = 1;
        break;
      }
    }
  }
  if (npkts) (void)w->send(w->ctx, &bps.path, w->buf, w->lens, npkts);
  out_unblock_all(q);
  ngtcp2_conn_update_pkt_tx_time(conn, now);
  return rc;
}
