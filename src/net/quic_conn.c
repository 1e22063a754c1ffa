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
 * One hash table for both: keys of up to NGTCP2_MAX_CIDLEN bytes (a
 * connection ID, an IP address), each with a pointer or a count
 * ==================================================================== */

#define KEY_MAX NGTCP2_MAX_CIDLEN
_Static_assert(KEY_MAX >= 16, "an IPv6 address is a key");

typedef struct gl_q_tab_ent {
  struct gl_q_tab_ent *next;
  void *value; /* connection IDs */
  size_t n;    /* addresses */
  uint8_t len;
  uint8_t key[KEY_MAX];
} gl_q_tab_ent;

/* FNV-1a with a random basis (see quic_conn.h). */
static uint64_t key_hash(uint64_t key, const uint8_t *data, size_t len) {
  uint64_t h = 0xcbf29ce484222325ull ^ key;
  for (size_t i = 0; i < len; i++) {
    h ^= data[i];
    h *= 0x100000001b3ull;
  }
  return h ^ (h >> 29);
}

static int tab_init(gl_q_tab_ent ***buckets, size_t *nbuckets, size_t *nents) {
  *nbuckets = 64;
  *nents = 0;
  *buckets = calloc(*nbuckets, sizeof **buckets);
  return *buckets ? 0 : -1;
}

static void tab_free(gl_q_tab_ent **buckets, size_t nbuckets) {
  if (!buckets) return;
  for (size_t i = 0; i < nbuckets; i++) {
    gl_q_tab_ent *e = buckets[i];
    while (e) {
      gl_q_tab_ent *next = e->next;
      free(e);
      e = next;
    }
  }
  free(buckets);
}

/* Where the entry of key (len bytes) is, or goes. */
static gl_q_tab_ent **tab_slot(gl_q_tab_ent **buckets, size_t nbuckets, uint64_t hkey,
                               const uint8_t *data, size_t len) {
  gl_q_tab_ent **pp = &buckets[key_hash(hkey, data, len) & (nbuckets - 1)];
  for (; *pp; pp = &(*pp)->next)
    if ((*pp)->len == len && memcmp((*pp)->key, data, len) == 0) return pp;
  return pp;
}

/* A new entry at *pp (its slot), the table twice as wide when it holds
 * more entries than buckets. NULL when out of memory. */
static gl_q_tab_ent *tab_add(gl_q_tab_ent ***buckets, size_t *nbuckets, size_t *nents,
                             uint64_t hkey, gl_q_tab_ent **pp, const uint8_t *data, size_t len) {
  gl_q_tab_ent *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->len = (uint8_t)len;
  memcpy(e->key, data, len);
  *pp = e;
  if (++*nents <= *nbuckets) return e;
  size_t nb = *nbuckets * 2;
  gl_q_tab_ent **b = calloc(nb, sizeof *b);
  if (!b) return e; /* keep the longer chains */
  for (size_t i = 0; i < *nbuckets; i++) {
    gl_q_tab_ent *x = (*buckets)[i];
    while (x) {
      gl_q_tab_ent *next = x->next;
      size_t at = key_hash(hkey, x->key, x->len) & (nb - 1);
      x->next = b[at];
      b[at] = x;
      x = next;
    }
  }
  free(*buckets);
  *buckets = b;
  *nbuckets = nb;
  return e;
}

static void tab_del(size_t *nents, gl_q_tab_ent **pp) {
  gl_q_tab_ent *e = *pp;
  *pp = e->next;
  free(e);
  --*nents;
}

/* ---- connection IDs ---------------------------------------------------- */

int gl_q_cidtab_init(gl_q_cidtab *t, uint64_t key) {
  t->key = key;
  return tab_init(&t->buckets, &t->nbuckets, &t->nents);
}

void gl_q_cidtab_free(gl_q_cidtab *t) {
  tab_free(t->buckets, t->nbuckets);
  t->buckets = NULL;
}

void *gl_q_cidtab_get(const gl_q_cidtab *t, const uint8_t *data, size_t len) {
  if (len > KEY_MAX) return NULL;
  gl_q_tab_ent *e = *tab_slot(t->buckets, t->nbuckets, t->key, data, len);
  return e ? e->value : NULL;
}

int gl_q_cidtab_put(gl_q_cidtab *t, const ngtcp2_cid *cid, void *value) {
  if (cid->datalen == 0 || cid->datalen > KEY_MAX) return -1;
  gl_q_tab_ent **pp = tab_slot(t->buckets, t->nbuckets, t->key, cid->data, cid->datalen);
  if (*pp) return (*pp)->value == value ? 0 : -1;
  gl_q_tab_ent *e =
      tab_add(&t->buckets, &t->nbuckets, &t->nents, t->key, pp, cid->data, cid->datalen);
  if (!e) return -1;
  e->value = value;
  return 0;
}

void gl_q_cidtab_del(gl_q_cidtab *t, const ngtcp2_cid *cid) {
  if (cid->datalen > KEY_MAX) return;
  gl_q_tab_ent **pp = tab_slot(t->buckets, t->nbuckets, t->key, cid->data, cid->datalen);
  if (*pp) tab_del(&t->nents, pp);
}

/* ---- connections per IP address ---------------------------------------- */

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
  t->key = key;
  return tab_init(&t->buckets, &t->nbuckets, &t->nents);
}

void gl_q_addrtab_free(gl_q_addrtab *t) {
  tab_free(t->buckets, t->nbuckets);
  t->buckets = NULL;
}

size_t gl_q_addrtab_count(const gl_q_addrtab *t, const uint8_t ip[16]) {
  const gl_q_tab_ent *e = *tab_slot(t->buckets, t->nbuckets, t->key, ip, 16);
  return e ? e->n : 0;
}

int gl_q_addrtab_ref(gl_q_addrtab *t, const uint8_t ip[16]) {
  gl_q_tab_ent **pp = tab_slot(t->buckets, t->nbuckets, t->key, ip, 16);
  gl_q_tab_ent *e = *pp ? *pp : tab_add(&t->buckets, &t->nbuckets, &t->nents, t->key, pp, ip, 16);
  if (!e) return -1;
  e->n++;
  return 0;
}

void gl_q_addrtab_unref(gl_q_addrtab *t, const uint8_t ip[16]) {
  gl_q_tab_ent **pp = tab_slot(t->buckets, t->nbuckets, t->key, ip, 16);
  if (*pp && --(*pp)->n == 0) tab_del(&t->nents, pp);
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
