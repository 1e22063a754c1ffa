/*
 * shards.c - see shards.h.
 *
 * Two queues of items (a mutex each) and two kinds of ev_async: shard ->
 * main carries requests and the release of lent buffers; main -> shard
 * carries replies and request buffers to reuse. A lent buffer's release
 * always runs on the main loop, where its owner lives.
 */
#include "daemon/shards.h"

#include <ev.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "net/quic_group.h"
#include "proto/wire.h"

typedef enum { IT_REQ, IT_RELEASE, IT_REPLY, IT_LENT, IT_RECYCLE } item_kind;

typedef struct item {
  struct item *next;
  item_kind kind;
  gl_shard *sh;
  gl_qreq *q;
  uint8_t *buf; /* IT_REQ, IT_REPLY, IT_RECYCLE: owned; IT_LENT: lent */
  size_t len, cap;
  int err;
  void (*release)(void *ctx); /* IT_LENT, IT_RELEASE */
  void *ctx;
  char *identity; /* IT_REPLY: given to q's connection first (owned), or NULL */
} item;

typedef struct queue {
  pthread_mutex_t mu;
  item *head, *tail;
} queue;

struct gl_shard {
  gl_shards *all;
  pthread_t thread;
  bool running;
  struct ev_loop *loop;
  gl_qserver *srv;
  ev_async wake;
  queue out; /* main -> shard */
  atomic_bool stop;
};

struct gl_shards {
  struct ev_loop *main;
  ev_async wake;
  queue in; /* shards -> main */
  gl_shards_request_fn on_request;
  void *user;
  unsigned n;
  bool closed; /* gl_shards_close: no threads, no servers; replies go nowhere */
  gl_qgroup *grp; /* gl_shards_start_shared: the servers' one port */
  gl_shard *sh[GL_SHARDS_MAX];
};

static void q_init(queue *q) {
  pthread_mutex_init(&q->mu, NULL);
  q->head = q->tail = NULL;
}

static void q_push(queue *q, item *it) {
  it->next = NULL;
  pthread_mutex_lock(&q->mu);
  if (q->tail) q->tail->next = it;
  else q->head = it;
  q->tail = it;
  pthread_mutex_unlock(&q->mu);
}

static item *q_take_all(queue *q) {
  pthread_mutex_lock(&q->mu);
  item *all = q->head;
  q->head = q->tail = NULL;
  pthread_mutex_unlock(&q->mu);
  return all;
}

/* ---- on a shard's thread -------------------------------------------------- */

static void to_main(gl_shards *all, item *it) {
  q_push(&all->in, it);
  ev_async_send(all->main, &all->wake);
}

static void shard_request(void *user, gl_qreq *req, uint8_t *msg, size_t len, size_t cap,
                          int err) {
  gl_shard *sh = user;
  item *it = calloc(1, sizeof *it);
  if (!it) {
    GL_ERROR("shard: out of memory for a request");
    free(msg);
    gl_qreq_reply(req, NULL, 0); /* drops it: the stream closes empty */
    return;
  }
  *it = (item){.kind = IT_REQ, .sh = sh, .q = req, .buf = msg, .len = len, .cap = cap,
               .err = err};
  to_main(sh->all, it);
}

/* A lent reply buffer is done with: its release goes to the main loop. */
static void lent_done(void *ctx) {
  item *it = ctx;
  it->kind = IT_RELEASE;
  to_main(it->sh->all, it);
}

static void run_out(gl_shard *sh) {
  for (item *it = q_take_all(&sh->out), *next; it; it = next) {
    next = it->next;
    switch (it->kind) {
    case IT_REPLY:
      if (it->identity) {
        /* A connection that is gone needs none; one that has an identity
         * already keeps it (another request gave it one since). */
        if (gl_qreq_set_identity(it->q, it->identity) != 0 && !gl_qreq_orphaned(it->q))
          GL_WARN("shard: a connection kept the identity it had; the new one was dropped");
        free(it->identity);
      }
      gl_qreq_reply_take(it->q, it->buf, it->len);
      free(it);
      break;
    case IT_LENT:
      gl_qreq_reply_lent(it->q, it->buf, it->len, lent_done, it); /* it lives on */
      break;
    default: /* IT_RECYCLE */
      if (sh->srv) gl_qserver_recycle(sh->srv, it->buf, it->cap);
      else free(it->buf);
      free(it);
    }
  }
}

static void shard_wake(struct ev_loop *loop, ev_async *w, int revents) {
  (void)revents;
  gl_shard *sh = w->data;
  if (atomic_load(&sh->stop)) {
    ev_break(loop, EVBREAK_ALL);
    return;
  }
  run_out(sh);
}

static void *shard_main(void *arg) {
  gl_shard *sh = arg;
  ev_run(sh->loop, 0);
  return NULL;
}

/* ---- on the main loop ----------------------------------------------------- */

static void to_shard(gl_shard *sh, item *it) {
  q_push(&sh->out, it);
  ev_async_send(sh->loop, &sh->wake);
}

static void main_wake(struct ev_loop *loop, ev_async *w, int revents) {
  (void)loop;
  (void)revents;
  gl_shards *s = w->data;
  for (item *it = q_take_all(&s->in), *next; it; it = next) {
    next = it->next;
    if (it->kind == IT_RELEASE) {
      it->release(it->ctx);
      free(it);
      continue;
    }
    s->on_request(s->user, it->sh, it->q, it->buf ? it->buf : (const uint8_t *)"", it->len,
                  it->err);
    if (it->buf) { /* back to the shard's warm buffers */
      it->kind = IT_RECYCLE;
      to_shard(it->sh, it);
    } else {
      free(it);
    }
  }
}

/* After gl_shards_close: req's server is gone (req orphaned), so freeing
 * it is all its answer does, here on the main loop. */
static bool closed_answer(gl_shard *sh, gl_qreq *req) {
  if (!sh->all->closed) return false;
  gl_qreq_reply(req, NULL, 0);
  return true;
}

int gl_shard_reply(gl_shard *sh, gl_qreq *req, const uint8_t *msg, size_t len) {
  if (closed_answer(sh, req)) return 0;
  item *it = calloc(1, sizeof *it);
  uint8_t *copy = malloc(len ? len : 1);
  if (!it || !copy) {
    free(it);
    free(copy);
    GL_ERROR("shard: out of memory for a reply");
    return -1;
  }
  if (len) memcpy(copy, msg, len);
  *it = (item){.kind = IT_REPLY, .sh = sh, .q = req, .buf = copy, .len = len};
  to_shard(sh, it);
  return 0;
}

int gl_shard_reply_identity(gl_shard *sh, gl_qreq *req, const char *identity, const uint8_t *msg,
                            size_t len) {
  /* What is known here: gl_qreq_identity reads req's own copy, which the
   * shard's thread does not touch while the request is ours. */
  if (closed_answer(sh, req)) return 0;
  size_t n = identity ? strnlen(identity, GL_IDENTITY_MAX) : 0;
  if (n == 0 || n == GL_IDENTITY_MAX || gl_qreq_identity(req)[0]) {
    (void)gl_shard_reply(sh, req, msg, len);
    return -1;
  }
  item *it = calloc(1, sizeof *it);
  uint8_t *copy = malloc(len ? len : 1);
  char *id = malloc(n + 1);
  if (!it || !copy || !id) {
    free(it);
    free(copy);
    free(id);
    GL_ERROR("shard: out of memory for a reply");
    return -1;
  }
  if (len) memcpy(copy, msg, len);
  memcpy(id, identity, n + 1);
  *it = (item){.kind = IT_REPLY, .sh = sh, .q = req, .buf = copy, .len = len, .identity = id};
  to_shard(sh, it);
  return 0;
}

int gl_shard_reply_lent(gl_shard *sh, gl_qreq *req, const uint8_t *msg, size_t len,
                        void (*release)(void *ctx), void *ctx) {
  if (closed_answer(sh, req)) {
    release(ctx);
    return 0;
  }
  item *it = calloc(1, sizeof *it);
  if (!it) {
    release(ctx);
    GL_ERROR("shard: out of memory for a reply");
    return -1;
  }
  *it = (item){.kind = IT_LENT, .sh = sh, .q = req, .buf = (uint8_t *)msg, .len = len,
               .release = release, .ctx = ctx};
  to_shard(sh, it);
  return 0;
}

/* ---- start and stop --------------------------------------------------------- */

static void shard_close(gl_shard *sh) {
  if (sh->running) {
    atomic_store(&sh->stop, true);
    ev_async_send(sh->loop, &sh->wake);
    pthread_join(sh->thread, NULL);
    sh->running = false;
  }
  /* The thread is gone: its server and queue are ours now. Requests still
   * queued are orphaned by the server's end; their answers only free. */
  if (sh->srv) gl_qserver_del(sh->srv);
  sh->srv = NULL;
  run_out(sh);
}

static void shard_free(gl_shard *sh) {
  shard_close(sh);
  if (sh->loop) {
    ev_async_stop(sh->loop, &sh->wake);
    ev_loop_destroy(sh->loop);
  }
  pthread_mutex_destroy(&sh->out.mu);
  free(sh);
}

void gl_shards_close(gl_shards *s) {
  if (!s || s->closed) return;
  for (unsigned i = 0; i < s->n; i++) shard_close(s->sh[i]);
  /* Requests never handled: answered into the void; releases run. */
  for (item *it = q_take_all(&s->in), *next; it; it = next) {
    next = it->next;
    if (it->kind == IT_RELEASE) it->release(it->ctx);
    else gl_qreq_reply(it->q, NULL, 0);
    free(it->kind == IT_REQ ? it->buf : NULL);
    free(it);
  }
  s->closed = true;
}

void gl_shards_stop(gl_shards *s) {
  if (!s) return;
  gl_shards_close(s);
  for (unsigned i = 0; i < s->n; i++) shard_free(s->sh[i]);
  ev_async_stop(s->main, &s->wake);
  pthread_mutex_destroy(&s->in.mu);
  gl_qgroup_unref(s->grp);
  free(s);
}

/* gl_shards_start, or with shared gl_shards_start_shared: every server
 * on first_port in one group. */
static int start(struct ev_loop *main, const gl_qserver_config *base, unsigned n,
                 uint16_t first_port, bool shared, gl_shards_request_fn on_request, void *user,
                 gl_shards **out, char *err, size_t errlen) {
  *out = NULL;
  if (n < 1 || n > GL_SHARDS_MAX) {
    snprintf(err, errlen, "%u network threads: 1 to %d", n, GL_SHARDS_MAX);
    return -1;
  }
  gl_shards *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  if (shared && !(s->grp = gl_qgroup_new())) {
    free(s);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  s->main = main;
  s->on_request = on_request;
  s->user = user;
  q_init(&s->in);
  ev_async_init(&s->wake, main_wake);
  s->wake.data = s;
  ev_async_start(main, &s->wake);
  for (unsigned i = 0; i < n; i++) {
    gl_shard *sh = calloc(1, sizeof *sh);
    if (!sh) {
      snprintf(err, errlen, "out of memory");
      gl_shards_stop(s);
      return -1;
    }
    s->sh[s->n++] = sh;
    sh->all = s;
    q_init(&sh->out);
    atomic_init(&sh->stop, false);
    sh->loop = ev_loop_new(EVFLAG_AUTO);
    if (!sh->loop) {
      snprintf(err, errlen, "cannot make an event loop for network thread %u", i);
      gl_shards_stop(s);
      return -1;
    }
    ev_async_init(&sh->wake, shard_wake);
    sh->wake.data = sh;
    ev_async_start(sh->loop, &sh->wake);
    gl_qserver_config c = *base;
    c.listen_port = shared ? first_port : first_port ? (uint16_t)(first_port + i) : 0;
    c.group = s->grp;
    c.on_request = NULL;
    c.on_request_take = shard_request;
    c.user = sh;
    char why[256];
    if (gl_qserver_new(sh->loop, &c, &sh->srv, why, sizeof why) != 0) {
      snprintf(err, errlen, "network thread %u (port %u): %s", i, (unsigned)c.listen_port, why);
      gl_shards_stop(s);
      return -1;
    }
    if (pthread_create(&sh->thread, NULL, shard_main, sh) != 0) {
      snprintf(err, errlen, "cannot start network thread %u", i);
      gl_shards_stop(s);
      return -1;
    }
    sh->running = true;
  }
  *out = s;
  return 0;
}

int gl_shards_start(struct ev_loop *main, const gl_qserver_config *base, unsigned n,
                    uint16_t first_port, gl_shards_request_fn on_request, void *user,
                    gl_shards **out, char *err, size_t errlen) {
  return start(main, base, n, first_port, false, on_request, user, out, err, errlen);
}

int gl_shards_start_shared(struct ev_loop *main, const gl_qserver_config *base, unsigned n,
                           gl_shards_request_fn on_request, void *user, gl_shards **out,
                           char *err, size_t errlen) {
  return start(main, base, n, base->listen_port, true, on_request, user, out, err, errlen);
}

unsigned gl_shards_count(const gl_shards *s) { return s ? s->n : 0; }

size_t gl_shards_connection_count(const gl_shards *s) {
  return s && s->grp ? gl_qgroup_connection_count(s->grp) : 0;
}

size_t gl_shards_connections_held(const gl_shards *s) {
  return s && s->grp ? gl_qgroup_held_count(s->grp) : 0;
}

size_t gl_shards_handshake_count(const gl_shards *s) {
  return s && s->grp ? gl_qgroup_handshake_count(s->grp) : 0;
}

size_t gl_shards_retries_sent(const gl_shards *s) {
  return s && s->grp ? gl_qgroup_retries_sent(s->grp) : 0;
}

uint16_t gl_shards_port(const gl_shards *s, unsigned i) {
  return s && i < s->n ? gl_qserver_port(s->sh[i]->srv) : 0;
}

int gl_shards_set_tls(gl_shards *s, const char *cert_file, const char *key_file,
                      const char *client_ca_file, const char *client_crl_file,
                      gl_client_policy *client_policy, char *err, size_t errlen) {
  for (unsigned i = 0; s && i < s->n; i++) {
    char why[256];
    if (gl_qserver_set_tls(s->sh[i]->srv, cert_file, key_file, client_ca_file, client_crl_file,
                           client_policy, why, sizeof why) != 0) {
      snprintf(err, errlen, "network thread %u: %s", i, why);
      return -1;
    }
  }
  return 0;
}

void gl_shards_set_limits(gl_shards *s, uint32_t max_connections_per_address,
                          uint32_t retry_above_handshakes) {
  for (unsigned i = 0; s && i < s->n; i++)
    gl_qserver_set_limits(s->sh[i]->srv, max_connections_per_address, retry_above_handshakes);
}
