/*
 * local_server.c - the daemon's side of the local socket (local.h): a Unix
 * stream socket on the daemon's libev loop. Each connection reads tagged
 * messages (recvmsg, keeping the descriptors that come with them), hands
 * each whole request to the callback, and writes the answers, tagged, in
 * the order they are given (non-blocking, with a write watcher when the
 * socket is full). A request holds a reference to its connection (the
 * connection's memory outlives its close until every request is
 * answered) and a copy of the identity the connection had when the
 * request came (gl_lreq_set_identity).
 */
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/lat.h"
#include "common/log.h"
#include "net/local.h"
#include "proto/wire.h"

#define TAG_BYTES 8
#define MAX_QUEUED_FDS 16
#define DEFAULT_MAX_CONNECTIONS 256
#define IN_KEEP 131072 /* a connection's read buffer, kept between messages */

typedef struct lout {
  struct lout *next;
  uint8_t *data; /* tag + message */
  size_t len, off;
} lout;

typedef struct lconn {
  gl_lserver *srv;
  struct lconn *prev, *next; /* in srv->conns */
  int fd;
  uint64_t id;
  uid_t uid;
  pid_t pid;
  ev_io rio, wio;
  uint8_t *in;
  size_t in_len, in_cap;
  int fds[MAX_QUEUED_FDS];
  size_t nfds;
  lout *out_head, *out_tail;
  bool hdr_judged; /* on_header passed the message at the front of in */
  bool admitted;   /* ... and on_header_end is owed for it (conn_unadmit) */
  void *ticket;    /*   on_header's ticket */
  uint64_t whole;  /*   what its header declared (12 + body_len) */
  uint64_t skip;   /* body bytes of a request refused on its header, to drop */
  unsigned refs; /* the server's (while open) and each pending request's */
  bool closed;
  char identity[GL_IDENTITY_MAX]; /* gl_lreq_set_identity's; idlen 0: none */
  size_t idlen;
} lconn;

struct gl_lreq {
  lconn *c; /* kept (refs) until the reply */
  uint64_t tag;
  char identity[GL_IDENTITY_MAX]; /* c's when the request came (up to its NUL) */
};

/* A request of c with tag, holding a reference to c; identity copied. */
static gl_lreq *lreq_new(lconn *c, uint64_t tag) {
  gl_lreq *r = malloc(sizeof *r);
  if (!r) return NULL;
  r->c = c;
  r->tag = tag;
  if (c->idlen) memcpy(r->identity, c->identity, c->idlen + 1);
  else r->identity[0] = 0;
  c->refs++;
  return r;
}

struct gl_lserver {
  struct ev_loop *loop;
  gl_lserver_config cfg;
  char path[108];
  int fd;
  ev_io aio;
  lconn *conns;
  size_t nconns;
  uint64_t next_id;
};

static void conn_unref(lconn *c) {
  if (--c->refs) return;
  free(c->in);
  free(c);
}

/* The request on_header let through has ended (delivered, or the
 * connection closed first): on_header_end is told, once. */
static void conn_unadmit(lconn *c) {
  if (!c->admitted) return;
  c->admitted = false;
  gl_lserver *s = c->srv;
  if (s->cfg.on_header_end) s->cfg.on_header_end(s->cfg.user, c->ticket, c->whole);
  c->ticket = NULL;
}

static void conn_close(lconn *c) {
  if (c->closed) return;
  gl_lserver *s = c->srv;
  c->closed = true;
  conn_unadmit(c);
  ev_io_stop(s->loop, &c->rio);
  ev_io_stop(s->loop, &c->wio);
  close(c->fd);
  for (size_t i = 0; i < c->nfds; i++) close(c->fds[i]);
  c->nfds = 0;
  for (lout *o = c->out_head; o;) {
    lout *n = o->next;
    free(o->data);
    free(o);
    o = n;
  }
  c->out_head = c->out_tail = NULL;
  if (c->prev) c->prev->next = c->next;
  else s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  s->nconns--;
  GL_DEBUG("local: connection %llu closed", (unsigned long long)c->id);
  if (s->cfg.on_close) s->cfg.on_close(s->cfg.user, c->id);
  conn_unref(c);
}

static void flush_out(lconn *c) {
  while (c->out_head) {
    lout *o = c->out_head;
    ssize_t n = send(c->fd, o->data + o->off, o->len - o->off, MSG_NOSIGNAL);
    GL_LAT(GL_LAT_D_SEND);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        ev_io_start(c->srv->loop, &c->wio);
        return;
      }
      conn_close(c);
      return;
    }
    o->off += (size_t)n;
    if (o->off < o->len) continue;
    c->out_head = o->next;
    if (!c->out_head) c->out_tail = NULL;
    free(o->data);
    free(o);
  }
  ev_io_stop(c->srv->loop, &c->wio);
}

static void on_writable(struct ev_loop *loop, ev_io *w, int revents) {
  (void)loop, (void)revents;
  flush_out(w->data);
}

/* Hands every whole message in the read buffer to the callback. */
static void deliver(lconn *c) {
  gl_lserver *s = c->srv;
  size_t off = 0;
  for (;;) {
    if (c->skip) { /* the rest of a request answered on its header */
      size_t n = c->in_len - off < c->skip ? c->in_len - off : (size_t)c->skip;
      off += n;
      c->skip -= n;
      if (c->skip) break;
    }
    if (c->closed || c->in_len - off < TAG_BYTES + GL_WIRE_HEADER_SIZE) break;
    const uint8_t *p = c->in + off;
    uint64_t tag = 0;
    for (int i = 0; i < TAG_BYTES; i++) tag = tag << 8 | p[i];
    gl_header h;
    char why[160];
    gpulease_status st = gl_header_decode_msg(p + TAG_BYTES, GL_WIRE_HEADER_SIZE, &h, why,
                                              sizeof why);
    size_t total = GL_WIRE_HEADER_SIZE + (size_t)h.body_len;
    if (st == GPULEASE_OK && s->cfg.on_header && !c->hdr_judged) {
      uint8_t answer[GL_LSERVER_HEADER_REPLY_MAX];
      char peer[64];
      snprintf(peer, sizeof peer, "unix:pid=%ld,uid=%lu", (long)c->pid, (unsigned long)c->uid);
      /* One message at a time: nothing else of c is unfinished. */
      gl_req_origin from = {.identity = c->idlen ? c->identity : "", .peer = peer};
      void *ticket = NULL;
      size_t n = s->cfg.on_header(s->cfg.user, &from, p + TAG_BYTES, answer, sizeof answer,
                                  &ticket);
      if (n && n <= sizeof answer) {
        gl_lreq *r = lreq_new(c, tag);
        if (r) gl_lreq_reply(r, answer, n);
        if (total > s->cfg.max_message_bytes) { /* not worth following */
          flush_out(c);
          conn_close(c);
          return;
        }
        off += TAG_BYTES + GL_WIRE_HEADER_SIZE;
        c->skip = h.body_len;
        continue;
      }
      c->hdr_judged = true;
      c->admitted = true;
      c->ticket = ticket;
      c->whole = total;
    }
    if (st != GPULEASE_OK || total > s->cfg.max_message_bytes) {
      /* The stream cannot be followed: answer, then close. */
      gl_buf b;
      gl_buf_init(&b);
      if (st != GPULEASE_OK)
        gl_response_encode_error(h.op, st, &b, "%s", why); /* section 6's text */
      else
        gl_response_encode_error(h.op, GPULEASE_TOO_LARGE, &b,
                                 "request of %zu bytes exceeds the local socket's limit of %zu "
                                 "(use a shared memory segment for bulk data)",
                                 total, s->cfg.max_message_bytes);
      gl_lreq *r = lreq_new(c, tag);
      if (r) gl_lreq_reply(r, b.data, b.len);
      gl_buf_free(&b);
      flush_out(c);
      conn_close(c);
      return;
    }
    if (c->in_len - off - TAG_BYTES < total) break;
    gl_lreq *r = lreq_new(c, tag);
    if (!r) {
      GL_ERROR("local: out of memory; closing connection %llu", (unsigned long long)c->id);
      conn_close(c);
      return;
    }
    c->hdr_judged = false;
    conn_unadmit(c);
    s->cfg.on_request(s->cfg.user, r, p + TAG_BYTES, total);
    off += TAG_BYTES + total;
  }
  if (c->closed) return;
  memmove(c->in, c->in + off, c->in_len - off);
  c->in_len -= off;
  /* A large message's room is given back once it is through. */
  if (c->in_cap > IN_KEEP && c->in_len <= IN_KEEP / 2) {
    uint8_t *n = realloc(c->in, IN_KEEP);
    if (n) {
      c->in = n;
      c->in_cap = IN_KEEP;
    }
  }
}

static void on_readable(struct ev_loop *loop, ev_io *w, int revents) {
  (void)loop, (void)revents;
  lconn *c = w->data;
  c->refs++; /* deliver() may close it */
  for (;;) {
    if (c->in_cap - c->in_len < 65536) {
      size_t ncap = c->in_cap ? c->in_cap * 2 : IN_KEEP;
      uint8_t *n = realloc(c->in, ncap);
      if (!n) {
        conn_close(c);
        break;
      }
      c->in = n;
      c->in_cap = ncap;
    }
    union {
      struct cmsghdr h;
      char buf[CMSG_SPACE(sizeof(int) * 4)];
    } cm;
    struct iovec iov = {.iov_base = c->in + c->in_len, .iov_len = c->in_cap - c->in_len};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
                       .msg_controllen = sizeof cm.buf};
    ssize_t n = recvmsg(c->fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n > 0) {
      GL_LAT(GL_LAT_D_RECV);
      for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
        size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int fds[4];
        memcpy(fds, CMSG_DATA(h), k * sizeof(int));
        for (size_t i = 0; i < k; i++) {
          if (c->nfds < MAX_QUEUED_FDS) c->fds[c->nfds++] = fds[i];
          else close(fds[i]);
        }
      }
      c->in_len += (size_t)n;
      deliver(c);
      if (c->closed) break;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    conn_close(c); /* EOF or error */
    break;
  }
  conn_unref(c);
}

static void on_accept(struct ev_loop *loop, ev_io *w, int revents) {
  (void)revents;
  gl_lserver *s = w->data;
  for (;;) {
    int fd = accept4(s->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    struct ucred cred;
    socklen_t cl = sizeof cred;
    if (s->nconns >= s->cfg.max_connections ||
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0) {
      GL_WARN("local: connection refused (%zu open)", s->nconns);
      close(fd);
      continue;
    }
    lconn *c = calloc(1, sizeof *c);
    if (!c) {
      close(fd);
      continue;
    }
    c->srv = s;
    c->fd = fd;
    c->id = ++s->next_id;
    c->uid = cred.uid;
    c->pid = cred.pid;
    c->refs = 1;
    c->next = s->conns;
    if (s->conns) s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    ev_io_init(&c->rio, on_readable, fd, EV_READ);
    ev_io_init(&c->wio, on_writable, fd, EV_WRITE);
    c->rio.data = c->wio.data = c;
    ev_io_start(loop, &c->rio);
    GL_DEBUG("local: connection %llu from uid %u pid %d", (unsigned long long)c->id,
             (unsigned)cred.uid, (int)cred.pid);
  }
}

int gl_lserver_new(struct ev_loop *loop, const gl_lserver_config *cfg, gl_lserver **out,
                   char *err, size_t errlen) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (!cfg->path || strlen(cfg->path) >= sizeof a.sun_path) {
    snprintf(err, errlen, "local socket path too long (at most %zu bytes)",
             sizeof a.sun_path - 1);
    return -1;
  }
  gl_lserver *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  s->loop = loop;
  s->cfg = *cfg;
  if (!s->cfg.max_connections) s->cfg.max_connections = DEFAULT_MAX_CONNECTIONS;
  snprintf(s->path, sizeof s->path, "%s", cfg->path);
  snprintf(a.sun_path, sizeof a.sun_path, "%s", cfg->path);
  s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->fd < 0) {
    snprintf(err, errlen, "socket: %s", strerror(errno));
    free(s);
    return -1;
  }
  struct stat st;
  if (lstat(cfg->path, &st) == 0 && S_ISSOCK(st.st_mode)) unlink(cfg->path); /* a stale one */
  /* Created with no access for anyone, then opened up to the mode asked. */
  mode_t old = umask(0777);
  int rc = bind(s->fd, (struct sockaddr *)&a, sizeof a);
  umask(old);
  if (rc != 0 || chmod(cfg->path, cfg->mode) != 0 || listen(s->fd, 64) != 0) {
    snprintf(err, errlen, "local socket %s: %s", cfg->path, strerror(errno));
    close(s->fd);
    free(s);
    return -1;
  }
  ev_io_init(&s->aio, on_accept, s->fd, EV_READ);
  s->aio.data = s;
  ev_io_start(loop, &s->aio);
  GL_INFO("local socket %s (mode %04o)", cfg->path, cfg->mode);
  *out = s;
  return 0;
}

void gl_lserver_del(gl_lserver *s) {
  if (!s) return;
  while (s->conns) conn_close(s->conns);
  ev_io_stop(s->loop, &s->aio);
  close(s->fd);
  unlink(s->path);
  free(s);
}

int gl_lreq_reply(gl_lreq *r, const uint8_t *msg, size_t len) {
  lconn *c = r->c;
  int rc = -1;
  if (!c->closed) {
    lout *o = malloc(sizeof *o);
    uint8_t *d = malloc(TAG_BYTES + len);
    if (o && d) {
      for (int i = 0; i < TAG_BYTES; i++) d[i] = (uint8_t)(r->tag >> (56 - 8 * i));
      memcpy(d + TAG_BYTES, msg, len);
      o->data = d;
      o->len = TAG_BYTES + len;
      o->off = 0;
      o->next = NULL;
      bool idle = !c->out_head;
      if (c->out_tail) c->out_tail->next = o;
      else c->out_head = o;
      c->out_tail = o;
      if (idle) flush_out(c);
      rc = 0;
    } else {
      free(o);
      free(d);
      conn_close(c);
    }
  }
  free(r);
  conn_unref(c);
  return rc;
}

bool gl_lreq_orphaned(const gl_lreq *r) { return r->c->closed; }

int gl_lreq_take_fd(gl_lreq *r) {
  lconn *c = r->c;
  if (c->closed || c->nfds == 0) return -1;
  int fd = c->fds[0];
  memmove(c->fds, c->fds + 1, (c->nfds - 1) * sizeof c->fds[0]);
  c->nfds--;
  return fd;
}

uint64_t gl_lreq_conn_id(const gl_lreq *r) { return r->c->id; }

uid_t gl_lreq_peer_uid(const gl_lreq *r) { return r->c->uid; }

const char *gl_lreq_identity(const gl_lreq *r) { return r ? r->identity : ""; }

int gl_lreq_set_identity(gl_lreq *r, const char *identity) {
  if (!r || !identity) return -1;
  size_t n = strnlen(identity, GL_IDENTITY_MAX);
  lconn *c = r->c;
  if (n == 0 || n == GL_IDENTITY_MAX || c->closed || c->idlen) return -1;
  memcpy(c->identity, identity, n + 1);
  c->idlen = n;
  memcpy(r->identity, identity, n + 1);
  GL_DEBUG("local: connection %llu was given an identity (%zu bytes)", (unsigned long long)c->id,
           n);
  return 0;
}

void gl_lreq_peer(const gl_lreq *r, char *buf, size_t len) {
  if (buf && len)
    snprintf(buf, len, "unix:pid=%ld,uid=%lu", (long)r->c->pid, (unsigned long)r->c->uid);
}
