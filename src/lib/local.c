/*
 * local.c - libgpulease's same-host fast path (docs/protocol.md, "The
 * local socket"): when the daemon runs on this machine, MEM_WRITE and
 * MEM_READ of large transfers go through shared memory instead of QUIC.
 *
 * The first large transfer asks the daemon (NODE_INFO) where its local
 * socket is and which boot of which machine it runs on; when the boot
 * matches this one and the socket admits us, the client connects to it.
 * Each session then keeps a staging segment (a sealed memfd of
 * GL_LOCAL_SLOTS slots) that the daemon's worker page-locks once: a write
 * copies a chunk of the caller's memory into a free slot (with several
 * threads) and sends MEM_WRITE_SHM, while the worker's DMA drains the
 * slots before; a read runs the other way. Host memory from
 * gpulease_host_alloc() is a segment of its own: transfers from and to it
 * skip the staging copy. Whatever fails on the way (no socket, another
 * machine, the daemon's page-locking budget) falls back to QUIC.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/parcopy.h"
#include "common/util.h"
#include "lib/client_internal.h"

#define set_err gl_lib_set_err

/* ======================================================================
 * The local connection
 * ==================================================================== */

static gpulease_status local_exchange(gpulease_client *c, const gl_request *req, int fd,
                                      gl_response *resp, uint8_t **raw, gpulease_error *err);

gl_lclient *gl_lib_local(gpulease_client *c) {
  if (c->local_state) return c->local_state > 0 ? c->local : NULL;
  c->local_state = -1;
  if (c->local_off) return NULL;
  gl_request req = {.op = GL_OP_NODE_INFO};
  gl_response resp;
  uint8_t *raw = NULL;
  gpulease_error e;
  if (gl_lib_exchange(c, &req, &resp, &raw, &e) != GPULEASE_OK) {
    free(raw);
    return NULL; /* an older daemon, or none reachable: QUIC it is */
  }
  uint8_t mine[16], zero[16] = {0};
  gl_boot_id(mine);
  bool same = memcmp(mine, zero, 16) != 0 && memcmp(mine, resp.u.node_info.boot_id, 16) == 0;
  char path[sizeof resp.u.node_info.local_socket];
  snprintf(path, sizeof path, "%s", resp.u.node_info.local_socket);
  free(raw);
  if (!same || !path[0]) return NULL;
  char why[256];
  if (gl_lclient_connect(path, c->timeout_ms, &c->local, why, sizeof why) != 0) return NULL;
  if (c->bearer_token) { /* the socket's connection is a tenant's too */
    gl_request a = {.op = GL_OP_AUTHENTICATE};
    snprintf(a.u.authenticate.token, sizeof a.u.authenticate.token, "%s", c->bearer_token);
    if (local_exchange(c, &a, -1, &resp, &raw, &e) != GPULEASE_OK) {
      gl_lclient_del(c->local);
      c->local = NULL;
      return NULL;
    }
    free(raw);
  }
  c->local_state = 1;
  return c->local;
}

void gl_lib_local_close(gpulease_client *c) {
  gl_lclient_del(c->local);
  c->local = NULL;
  c->local_state = 0;
}

/* One request and its answer over the local socket, fd beside it (or -1).
 * *raw backs *resp; the caller frees it. */
static gpulease_status local_exchange(gpulease_client *c, const gl_request *req, int fd,
                                      gl_response *resp, uint8_t **raw, gpulease_error *err) {
  *raw = NULL;
  gl_buf b;
  gl_buf_init(&b);
  gpulease_status st = gl_lib_encode(req, &b, err);
  if (st != GPULEASE_OK) {
    gl_buf_free(&b);
    return st;
  }
  uint64_t token;
  size_t len;
  char why[512];
  int rc = gl_lclient_send(c->local, b.data, b.len, fd, &token, why, sizeof why);
  gl_buf_free(&b);
  if (rc == 0) rc = gl_lclient_wait(c->local, token, raw, &len, why, sizeof why);
  if (rc != 0) return set_err(err, GPULEASE_DISCONNECTED, "%s: %s", gl_op_name(req->op), why);
  st = gl_lib_decode_reply_for(req, *raw, len, resp, err);
  if (st != GPULEASE_OK) {
    free(*raw);
    *raw = NULL;
  }
  return st;
}

/* ======================================================================
 * Segments: sealed memfds attached to a lease
 * ==================================================================== */

/* A memfd of size bytes, sealed against shrinking and growing, mapped. */
static int segment_new(size_t size, int *fd_out, void **ptr_out) {
  int fd = memfd_create("gpulease-segment", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  void *p = MAP_FAILED;
  if (ftruncate(fd, (off_t)size) == 0 &&
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  *fd_out = fd;
  *ptr_out = p;
  return 0;
}

/* Attaches the segment fd (size bytes) to the lease: *segment. */
static gpulease_status segment_attach(gpulease_client *c, const gl_lease_auth *auth, int fd,
                                      size_t size, uint64_t *segment, gpulease_error *err) {
  gl_request req = {.op = GL_OP_SHM_ATTACH};
  req.u.shm_attach.auth = *auth;
  req.u.shm_attach.size_bytes = size;
  gl_response resp;
  uint8_t *raw;
  gpulease_status st = local_exchange(c, &req, fd, &resp, &raw, err);
  if (st == GPULEASE_OK) *segment = resp.u.handle;
  free(raw);
  return st;
}

static void segment_detach(gpulease_client *c, const gl_lease_auth *auth, uint64_t segment) {
  if (!c->local) return;
  gl_request req = {.op = GL_OP_SHM_DETACH};
  req.u.shm_detach.auth = *auth;
  req.u.shm_detach.segment = segment;
  gl_response resp;
  uint8_t *raw;
  gpulease_error e;
  local_exchange(c, &req, -1, &resp, &raw, &e);
  free(raw);
}

/* ======================================================================
 * Host memory shared with the daemon (gpulease_host_alloc)
 * ==================================================================== */

typedef struct host_seg {
  struct host_seg *next;
  uint8_t *ptr;
  size_t size;
  int fd;
  /* The leases it is attached to, and the segment's id on each. */
  struct {
    gl_lease_auth auth;
    uint64_t segment;
  } on[8];
  size_t non;
} host_seg;

gpulease_status gpulease_host_alloc(gpulease_client *c, size_t size_bytes, void **ptr,
                                    gpulease_error *err) {
  if (!c || !ptr || size_bytes == 0)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "client, ptr and size_bytes >= 1 are needed");
  host_seg *h = calloc(1, sizeof *h);
  if (!h) return set_err(err, GPULEASE_NO_MEMORY, "out of memory");
  void *p;
  if (segment_new(size_bytes, &h->fd, &p) != 0) {
    free(h);
    return set_err(err, GPULEASE_NO_MEMORY, "cannot create %zu bytes of shared memory: %s",
                   size_bytes, strerror(errno));
  }
  h->ptr = p;
  h->size = size_bytes;
  h->next = c->host_segs;
  c->host_segs = h;
  *ptr = p;
  return gl_lib_ok(err);
}

gpulease_status gpulease_host_free(gpulease_client *c, void *ptr, gpulease_error *err) {
  if (!c || !ptr) return gl_lib_ok(err);
  for (host_seg **p = (host_seg **)&c->host_segs; *p; p = &(*p)->next) {
    host_seg *h = *p;
    if (h->ptr != ptr) continue;
    *p = h->next;
    for (size_t i = 0; i < h->non; i++) segment_detach(c, &h->on[i].auth, h->on[i].segment);
    munmap(h->ptr, h->size);
    close(h->fd);
    free(h);
    return gl_lib_ok(err);
  }
  return set_err(err, GPULEASE_INVALID_ARGUMENT, "%p was not given by gpulease_host_alloc",
                 ptr);
}

void gl_lib_host_free_all(gpulease_client *c) {
  while (c->host_segs) gpulease_host_free(c, ((host_seg *)c->host_segs)->ptr, NULL);
}

/* The host segment holding [p, p + n), attached to the lease (attached now
 * if needed): *segment and *offset in it. False when p is not host memory
 * of ours, or it cannot be attached. */
static bool host_lookup(gpulease_client *c, const gl_lease_auth *auth, const void *p, size_t n,
                        uint64_t *segment, uint64_t *offset) {
  for (host_seg *h = c->host_segs; h; h = h->next) {
    const uint8_t *b = p;
    if (b < h->ptr || b >= h->ptr + h->size || n > (size_t)(h->ptr + h->size - b)) continue;
    *offset = (uint64_t)(b - h->ptr);
    for (size_t i = 0; i < h->non; i++)
      if (h->on[i].auth.lease_id == auth->lease_id) {
        *segment = h->on[i].segment;
        return true;
      }
    if (h->non == sizeof h->on / sizeof h->on[0]) return false;
    gpulease_error e;
    if (segment_attach(c, auth, h->fd, h->size, segment, &e) != GPULEASE_OK) return false;
    h->on[h->non].auth = *auth;
    h->on[h->non++].segment = *segment;
    return true;
  }
  return false;
}

/* ======================================================================
 * Transfers
 * ==================================================================== */

struct gl_stage {
  uint8_t *ptr;
  int fd;
  uint64_t segment;
  uint64_t lease_id;
};

void gl_lib_stage_free(gpulease_session *s) {
  gl_stage *g = s->stage;
  if (!g) return;
  if (s->client->local) segment_detach(s->client, &s->auth, g->segment);
  munmap(g->ptr, GL_LOCAL_SLOTS * GL_LOCAL_SLOT);
  close(g->fd);
  free(g);
  s->stage = NULL;
}

/* The session's staging segment, made and attached on first use. */
static gl_stage *stage_get(gpulease_session *s) {
  if (s->stage) return s->stage;
  gl_stage *g = calloc(1, sizeof *g);
  void *p;
  if (!g || segment_new(GL_LOCAL_SLOTS * GL_LOCAL_SLOT, &g->fd, &p) != 0) {
    free(g);
    return NULL;
  }
  g->ptr = p;
  gpulease_error e;
  if (segment_attach(s->client, &s->auth, g->fd, GL_LOCAL_SLOTS * GL_LOCAL_SLOT, &g->segment,
                     &e) != GPULEASE_OK) {
    munmap(g->ptr, GL_LOCAL_SLOTS * GL_LOCAL_SLOT);
    close(g->fd);
    free(g);
    return NULL;
  }
  s->stage = g;
  return g;
}

typedef struct inflight {
  uint64_t token;
  uint64_t seq;
  uint64_t pos; /* in the transfer */
  size_t len;
  unsigned slot;
} inflight;

/* Sends one MEM_*_SHM op (the session's next seq) over the local socket. */
static gpulease_status send_shm(gpulease_session *s, uint16_t op, gpulease_buffer buffer,
                                uint64_t offset, uint64_t segment, uint64_t seg_offset, size_t len,
                                inflight *f, gpulease_error *err) {
  gl_request req = {.op = op};
  gl_mem_shm_req *m = &req.u.mem_shm;
  m->s.auth = s->auth;
  m->s.session_id = s->id;
  m->s.seq = s->next_seq;
  m->buffer = buffer;
  m->offset = offset;
  m->segment = segment;
  m->segment_offset = seg_offset;
  m->size_bytes = len;
  gl_buf b;
  gl_buf_init(&b);
  gpulease_status st = gl_lib_encode(&req, &b, err);
  char why[512];
  if (st == GPULEASE_OK &&
      gl_lclient_send(s->client->local, b.data, b.len, -1, &f->token, why, sizeof why) != 0)
    st = set_err(err, GPULEASE_DISCONNECTED, "%s: %s", gl_op_name(op), why);
  gl_buf_free(&b);
  if (st != GPULEASE_OK) return st;
  f->seq = s->next_seq++;
  return GPULEASE_OK;
}

static gpulease_status wait_shm(gpulease_session *s, uint16_t op, const inflight *f,
                                gpulease_error *err) {
  uint8_t *raw = NULL;
  size_t len;
  char why[512];
  if (gl_lclient_wait(s->client->local, f->token, &raw, &len, why, sizeof why) != 0)
    return set_err(err, GPULEASE_DISCONNECTED, "%s: %s", gl_op_name(op), why);
  gl_response resp;
  gpulease_status st = gl_lib_decode_reply(op, raw, len, &resp, err);
  free(raw);
  if (st != GPULEASE_OK && !gl_lib_conn_error(st)) gl_session_note_failure(s, op, f->seq, err);
  return st;
}

int gl_lib_local_transfer(gpulease_session *s, uint16_t op, gpulease_buffer buffer,
                          uint64_t offset, const uint8_t *src, uint8_t *dst, uint64_t total,
                          gpulease_status *st, gpulease_error *err) {
  gpulease_client *c = s->client;
  if (s->unordered || total < GL_LOCAL_MIN_BYTES || !gl_lib_local(c)) return 0;
  const bool writing = op == GL_OP_MEM_WRITE;
  const uint16_t shm_op = writing ? GL_OP_MEM_WRITE_SHM : GL_OP_MEM_READ_SHM;
  uint64_t hseg, hoff;
  /* The ops batched before go first (they have lower seqs). */
  gpulease_status fst = gl_session_flush_batch(s, err);
  if (fst != GPULEASE_OK) {
    *st = fst;
    return 1;
  }
  if (host_lookup(c, &s->auth, writing ? (const void *)src : (const void *)dst, (size_t)total,
                  &hseg, &hoff)) {
    /* Zero copy: the caller's memory is a segment. */
    uint64_t done = 0;
    *st = GPULEASE_OK;
    while (done < total && *st == GPULEASE_OK) {
      size_t len = total - done > GL_WIRE_MAX_SHM_COPY ? (size_t)GL_WIRE_MAX_SHM_COPY
                                                       : (size_t)(total - done);
      inflight f;
      *st = send_shm(s, shm_op, buffer, offset + done, hseg, hoff + done, len, &f, err);
      if (*st == GPULEASE_OK) *st = wait_shm(s, shm_op, &f, err);
      done += len;
      if (*st == GPULEASE_OK && s->progress) s->progress(done, total, s->progress_user);
    }
    if (*st == GPULEASE_OK) gl_lib_ok(err);
    return 1;
  }
  gl_stage *g = stage_get(s);
  if (!g) return 0; /* no staging (the daemon's budget, say): QUIC */
  inflight ring[GL_LOCAL_SLOTS];
  size_t head = 0, n = 0;
  uint64_t sent = 0, done = 0;
  *st = GPULEASE_OK;
  gpulease_status first = GPULEASE_OK;
  gpulease_error first_err = {0};
  unsigned next_slot = 0;
  while (n || (sent < total && first == GPULEASE_OK)) {
    if (sent < total && first == GPULEASE_OK && n < GL_LOCAL_SLOTS) {
      inflight f = {.pos = sent, .slot = next_slot};
      f.len = total - sent > GL_LOCAL_SLOT ? GL_LOCAL_SLOT : (size_t)(total - sent);
      uint8_t *slot = g->ptr + (size_t)f.slot * GL_LOCAL_SLOT;
      if (writing) gl_par_memcpy(slot, src + sent, f.len);
      gpulease_status t = send_shm(s, shm_op, buffer, offset + sent, g->segment,
                                   (uint64_t)f.slot * GL_LOCAL_SLOT, f.len, &f, err);
      if (t != GPULEASE_OK) {
        *st = t; /* the connection: what is in flight is lost with it */
        gl_lib_local_close(c);
        return 1;
      }
      ring[(head + n) % GL_LOCAL_SLOTS] = f;
      n++;
      sent += f.len;
      next_slot = (next_slot + 1) % GL_LOCAL_SLOTS;
      continue;
    }
    inflight f = ring[head];
    head = (head + 1) % GL_LOCAL_SLOTS;
    n--;
    gpulease_error e;
    gpulease_status t = wait_shm(s, shm_op, &f, &e);
    if (gl_lib_conn_error(t)) {
      *st = t;
      if (err) *err = e;
      gl_lib_local_close(c);
      return 1;
    }
    if (t != GPULEASE_OK && first == GPULEASE_OK) {
      first = t;
      first_err = e;
    }
    if (t == GPULEASE_OK) {
      if (!writing) gl_par_memcpy(dst + f.pos, g->ptr + (size_t)f.slot * GL_LOCAL_SLOT, f.len);
      done += f.len;
      if (s->progress) s->progress(done, total, s->progress_user);
    }
  }
  if (first != GPULEASE_OK) {
    *st = first;
    if (err) *err = first_err;
  } else {
    gl_lib_ok(err);
  }
  return 1;
}
