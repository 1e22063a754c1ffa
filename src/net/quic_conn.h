/*
 * quic_conn.h - connection and stream bookkeeping shared by quic_server.c
 * and quic_client.c: the tables a server finds its connections in (by
 * connection ID, by peer address), the queue of streams with bytes to
 * write, and the one write round both sides run (pacing, GSO batches),
 * as Knot DNS's knot_quic_send() serves its client and server. No API
 * promise; gl_q_ prefix.
 */
#ifndef GL_NET_QUIC_CONN_H
#define GL_NET_QUIC_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>

#include <ngtcp2/ngtcp2.h>

/* ---- connection IDs -> connections ------------------------------------
 * A hash table of connection IDs (FNV-1a under a random key: clients
 * choose the original DCID, so the bucket must not be predictable) to
 * their owner's value (a connection). */

struct gl_q_tab_ent;

typedef struct gl_q_cidtab {
  struct gl_q_tab_ent **buckets;
  size_t nbuckets, nents;
  uint64_t key;
} gl_q_cidtab;

/* An empty table hashing under key. 0, or -1 (out of memory). */
int gl_q_cidtab_init(gl_q_cidtab *t, uint64_t key);

/* Frees the table (not the values). */
void gl_q_cidtab_free(gl_q_cidtab *t);

/* The value of the ID of len bytes at data, or NULL. */
void *gl_q_cidtab_get(const gl_q_cidtab *t, const uint8_t *data, size_t len);

/* Maps cid to value: 0 (also when it maps to value already), or -1 (an
 * empty or too long ID, one mapped to another value, out of memory). */
int gl_q_cidtab_put(gl_q_cidtab *t, const ngtcp2_cid *cid, void *value);

/* Forgets cid (nothing when unknown). */
void gl_q_cidtab_del(gl_q_cidtab *t, const ngtcp2_cid *cid);

/* ---- connections per peer IP address -----------------------------------
 * The same kind of table, counting connections per address. */

typedef struct gl_q_addrtab {
  struct gl_q_tab_ent **buckets;
  size_t nbuckets, nents;
  uint64_t key;
} gl_q_addrtab;

/* The IP address of sa as 16 bytes, an IPv4 address as its v4-mapped IPv6
 * form (so both spellings count as one address). False for another
 * family. */
bool gl_q_addr_key(const struct sockaddr *sa, uint8_t ip[16]);

int gl_q_addrtab_init(gl_q_addrtab *t, uint64_t key);
void gl_q_addrtab_free(gl_q_addrtab *t);

/* How many are counted for ip. */
size_t gl_q_addrtab_count(const gl_q_addrtab *t, const uint8_t ip[16]);

/* Counts one more for ip. 0, or -1 (out of memory). */
int gl_q_addrtab_ref(gl_q_addrtab *t, const uint8_t ip[16]);

/* Counts one less for ip; forgets ip at none. */
void gl_q_addrtab_unref(gl_q_addrtab *t, const uint8_t ip[16]);

/* ---- streams with bytes to write ----------------------------------------
 * A stream's outgoing message (a request, or a reply), embedded in the
 * side's stream record: its bytes stay the owner's and must live until
 * the stream no longer needs them (ngtcp2 retransmits from them). The
 * queue holds the streams with bytes left to hand to ngtcp2; inside a
 * write round those blocked by flow control wait aside. */

enum { GL_Q_OUT_NONE, GL_Q_OUT_READY, GL_Q_OUT_BLOCKED };

typedef struct gl_q_out {
  struct gl_q_out *prev, *next;
  int64_t id;
  const uint8_t *data;
  size_t len, off;
  uint8_t where;  /* GL_Q_OUT_*: on which list of the queue */
  bool no_fin;    /* the bytes end without FIN (the stream stays open) */
  bool over;      /* all of it handed to ngtcp2 (FIN too), or refused */
  bool refused;   /* the peer refused the rest (STOP_SENDING, stream gone) */
} gl_q_out;

typedef struct gl_q_outq {
  gl_q_out *head, *tail;   /* ready */
  gl_q_out *bhead, *btail; /* blocked, during a round */
} gl_q_outq;

/* Puts o at the back of the ready streams (a no-op when queued). */
void gl_q_outq_add(gl_q_outq *q, gl_q_out *o);

/* Takes o off the queue (a no-op when not queued). */
void gl_q_outq_remove(gl_q_outq *q, gl_q_out *o);

/* ---- the write round ------------------------------------------------------ */

typedef struct gl_q_writer {
  ngtcp2_conn *conn;
  gl_q_outq *q;
  uint8_t *buf;   /* GL_Q_TX_BYTES */
  size_t *lens;   /* GL_Q_TX_PKTS */
  size_t max_udp; /* largest UDP payload this side sends */
  /* Hands n packets (lens[i] bytes each, back to back at data, all for
   * path) to the socket; false when it filled up (what it refused is the
   * side's to keep: the round stops). */
  bool (*send)(void *ctx, const ngtcp2_path *path, const uint8_t *data, const size_t *lens,
               size_t n);
  void *ctx;
} gl_q_writer;

/* Writes what ngtcp2 lets the connection send now (stream bytes of the
 * queue's streams, taking turns a packet each; ACKs, flow-control credit,
 * retransmissions, handshake packets), up to GL_Q_ROUND_BYTES: packets
 * gather in buf and go to send whenever it is full, when the path
 * changes (migration) and at the end (udp_io sends runs of equal size
 * with GSO). Each write offers room for the largest packet allowed, so a
 * path MTU probe fits; ngtcp2_conn_update_pkt_tx_time follows each send
 * quantum (pacing). A stream whose bytes all went out (or that the peer
 * refused) leaves the queue with over set. Returns 0 (nothing more now,
 * or the socket is full), 1 (stopped at GL_Q_ROUND_BYTES: more to write
 * once the side has read), or ngtcp2's error (the connection failed;
 * what was written before went to send). */
int gl_q_write(const gl_q_writer *w, uint64_t now);

#endif /* GL_NET_QUIC_CONN_H */
