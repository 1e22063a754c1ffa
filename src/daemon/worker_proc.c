/*
 * worker_proc.c - see worker_proc.h.
 *
 * I/O is non-blocking on the daemon's side of the socketpair: a write queue
 * drained by an ev_io write watcher, and a read buffer parsed into whole
 * messages (12-byte header, then body_len bytes) by an ev_io read watcher.
 * The process is reaped by an ev_child watcher; the object outlives the
 * process until then.
 */
#include "daemon/worker_proc.h"

#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/lat.h"
#include "common/log.h"
#include "common/util.h"
#include "proto/wire.h"
#include "worker/ipc.h"
#include "worker/worker.h"

extern char **environ;

/* Largest reply accepted from a worker (output bytes plus framing). */
#define WPROC_MAX_REPLY (((size_t)1 << 30) + 65536)

/* One call: its request bytes, on the write queue until sent, and its
 * callback, on the reply queue until answered. Freed once both are done;
 * the bytes are kept until then so that a call the worker never ran can
 * be handed back (BUSY) to be sent elsewhere. */
typedef struct wcall {
  gl_wproc_reply_cb cb;
  void *ctx;
  uint64_t tag;          /* the channel's call tag (ipc.h) */
  uint8_t *data;         /* tag + request message [+ decoded request] */
  size_t len, off;
  size_t msg_len;        /* the request message's bytes */
  int fd;                /* sent with the first bytes (SCM_RIGHTS), then closed; -1: none */
  bool queued;           /* on the write queue */
  bool answered;         /* cb called */
  bool cancelled;        /* answered by gl_wproc_cancel_lease: a late reply is dropped */
  struct wcall *prev, *next; /* waiting for a reply */
  struct wcall *next_out;    /* write queue */
} wcall;

static void call_release(wcall *c) {
  if (c->queued || !c->answered) return;
  if (c->fd >= 0) close(c->fd);
  free(c->data);
  free(c);
}

struct gl_wproc {
  struct ev_loop *loop;
  pid_t pid;
  int fd;
  ev_io rio, wio;
  ev_child cw;
  wcall *head, *tail;         /* waiting for a reply (any order) */
  uint64_t next_tag;
  wcall *out_head, *out_tail; /* waiting to be written */
  uint8_t *in;
  size_t in_len, in_cap;
  bool killed;  /* gl_wproc_kill called: owner no longer listens */
  bool retired; /* gl_wproc_retire called: owner no longer listens, replies still delivered */
  gpulease_status retire_status;
  char *retire_why;
  ev_timer retire_timer; /* after gl_wproc_retire: the wait for its exit */
  bool dead;    /* fd closed (EOF, error or kill) */
  gl_wproc_exit_cb on_exit;
  gl_wproc_notice_cb on_notice;
  void *owner;
  uint32_t tag;         /* gl_wproc_set_tag: the daemon's GPU index */
  bool let_go;          /* its teardown was reported begun (killed or retired) */
  int ctx_gpu;          /* gl_wproc_count_context: the GPU whose context it holds; -1 */
  bool ctx_ending;      /* counted in g_ctx_ending (killed or retired) */
  bool ctx_starting;    /* counted in g_ctx_starting: no reply yet (its context is being made) */
  bool answered_once;   /* it has sent a reply */
};

static size_t g_live;

/* The WORKER_HELD watch (gl_wproc_set_held_watch). */
static gl_wproc_held_cb g_held_cb;
static void *g_held_user;

void gl_wproc_set_held_watch(gl_wproc_held_cb cb, void *user) {
  g_held_cb = cb;
  g_held_user = user;
}

/* Isolated CUDA contexts held by live workers, and those ending, per GPU
 * (gl_wproc_count_context), and who hears of each reaped one. */
static unsigned g_ctx_held[GPULEASE_MAX_GPUS], g_ctx_ending[GPULEASE_MAX_GPUS];
static unsigned g_ctx_starting[GPULEASE_MAX_GPUS];
static void (*g_ctx_cb)(void *user, uint32_t gpu);
static void *g_ctx_user;

void gl_wproc_count_context(gl_wproc *w, uint32_t gpu) {
  if (!w || w->ctx_gpu >= 0 || gpu >= GPULEASE_MAX_GPUS) return;
  w->ctx_gpu = (int)gpu;
  g_ctx_held[gpu]++;
  if (w->killed || w->retired) {
    w->ctx_ending = true;
    g_ctx_ending[gpu]++;
  } else if (!w->answered_once) {
    w->ctx_starting = true;
    g_ctx_starting[gpu]++;
  }
}

/* w's context is no longer being made (it answered, or it goes away):
 * out of g_ctx_starting; the watcher hears of it when `tell`. */
static void ctx_started(gl_wproc *w, bool tell) {
  if (!w->ctx_starting) return;
  w->ctx_starting = false;
  g_ctx_starting[w->ctx_gpu]--;
  if (tell && g_ctx_cb) g_ctx_cb(g_ctx_user, (uint32_t)w->ctx_gpu);
}

unsigned gl_wproc_contexts_starting(uint32_t gpu) {
  return gpu < GPULEASE_MAX_GPUS ? g_ctx_starting[gpu] : 0;
}

void gl_wproc_contexts(uint32_t gpu, unsigned *held, unsigned *ending) {
  bool ok = gpu < GPULEASE_MAX_GPUS;
  if (held) *held = ok ? g_ctx_held[gpu] : 0;
  if (ending) *ending = ok ? g_ctx_ending[gpu] : 0;
}

void gl_wproc_set_context_watch(void (*cb)(void *user, uint32_t gpu), void *user) {
  g_ctx_cb = cb;
  g_ctx_user = user;
}

/* w is going away (killed or retired): its context counts as ending. */
static void context_ending(gl_wproc *w) {
  if (w->ctx_gpu >= 0) ctx_started(w, false);
  if (w->ctx_gpu < 0 || w->ctx_ending) return;
  w->ctx_ending = true;
  g_ctx_ending[w->ctx_gpu]++;
}

/* The teardown watch (gl_wproc_set_teardown_watch). */
static gl_wproc_teardown_cb g_teardown_cb;
static void *g_teardown_user;

void gl_wproc_set_teardown_watch(gl_wproc_teardown_cb cb, void *user) {
  g_teardown_cb = cb;
  g_teardown_user = user;
}

void gl_wproc_set_tag(gl_wproc *w, uint32_t tag) {
  w->tag = tag;
}

/* The daemon lets w go: its teardown begins (reported once). */
static void teardown_begins(gl_wproc *w) {
  if (w->let_go) return;
  w->let_go = true;
  if (g_teardown_cb) g_teardown_cb(g_teardown_user, w->tag, w->pid, false);
}

/* Busy polling: for GL_WPROC_SPIN_NS after a call goes to a worker or a
 * reply comes back, an idle watcher keeps the loop polling without
 * sleeping, so the worker's reply (or the client's next request) is read
 * at once instead of after a wake-up. The loop sleeps as usual otherwise,
 * also while a long kernel runs. A millisecond covers a burst of a
 * thousand small kernels (the SYNC behind it answered without a wake-up),
 * as cuStreamSynchronize spins by default. */
#define GL_WPROC_SPIN_NS 1000000ull
static ev_idle g_spin;
static uint64_t g_spin_until;

static void on_spin(struct ev_loop *loop, ev_idle *w, int revents) {
  (void)revents;
  if (gl_mono_ns() > g_spin_until) ev_idle_stop(loop, w);
}

static void spin_a_while(struct ev_loop *loop) {
  g_spin_until = gl_mono_ns() + GL_WPROC_SPIN_NS;
  if (!ev_is_active(&g_spin)) {
    ev_idle_init(&g_spin, on_spin);
    ev_idle_start(loop, &g_spin);
  }
}

/* A retired worker that has not exited: killed, its calls answered. */
static void on_retire_late(struct ev_loop *loop, ev_timer *t, int revents) {
  (void)loop;
  (void)revents;
  gl_wproc *w = t->data;
  GL_WARN("worker %d did not exit within 1 s of its last notice; killing it", (int)w->pid);
  char why[1200];
  snprintf(why, sizeof why, "%s", w->retire_why ? w->retire_why : "the worker ended");
  gl_wproc_kill(w, w->retire_status, why);
}

size_t gl_wproc_live_count(void) { return g_live; }
pid_t gl_wproc_pid(const gl_wproc *w) { return w->pid; }

static void fail_pending(gl_wproc *w, gpulease_status status, const char *why) {
  wcall *p = w->head;
  w->head = w->tail = NULL;
  while (p) {
    wcall *next = p->next;
    if (p->cancelled) {
      call_release(p);
      p = next;
      continue;
    }
    p->answered = true;
    if (status == GPULEASE_BUSY)
      p->cb(p->ctx, status, p->data + GL_IPC_TAG_BYTES, p->msg_len, why);
    else p->cb(p->ctx, status, NULL, 0, why);
    call_release(p);
    p = next;
  }
}

static void close_channel(gl_wproc *w) {
  if (w->dead) return;
  w->dead = true;
  ev_io_stop(w->loop, &w->rio);
  ev_io_stop(w->loop, &w->wio);
  close(w->fd);
  w->fd = -1;
  for (wcall *o = w->out_head; o;) {
    wcall *next = o->next_out;
    o->queued = false;
    call_release(o);
    o = next;
  }
  w->out_head = w->out_tail = NULL;
  free(w->in);
  w->in = NULL;
  w->in_len = w->in_cap = 0;
}

static void destroy(gl_wproc *w) {
  close_channel(w);
  ev_child_stop(w->loop, &w->cw);
  ev_timer_stop(w->loop, &w->retire_timer);
  free(w->retire_why);
  int gpu = w->ctx_gpu;
  if (gpu >= 0) {
    ctx_started(w, false); /* the callback below tells */
    g_ctx_held[gpu]--;
    if (w->ctx_ending) g_ctx_ending[gpu]--;
  }
  free(w);
  g_live--;
  if (gpu >= 0 && g_ctx_cb) g_ctx_cb(g_ctx_user, (uint32_t)gpu);
}

static void drain(gl_wproc *w);

static void on_child(struct ev_loop *loop, ev_child *cw, int revents) {
  (void)loop;
  (void)revents;
  gl_wproc *w = cw->data;
  int status = cw->rstatus;
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  GL_DEBUG("worker %d exited (code %d, signal %d)", (int)w->pid, code, sig);
  if (w->retired && !w->killed) {
    if (!w->dead) drain(w); /* replies the worker wrote before exiting */
    close_channel(w);
    fail_pending(w, w->retire_status, w->retire_why ? w->retire_why : "the worker ended");
    /* As after a kill: the daemon checks its memory came back. */
    if (g_teardown_cb && w->let_go) g_teardown_cb(g_teardown_user, w->tag, w->pid, true);
  } else if (!w->killed) {
    char why[128];
    if (sig)
      snprintf(why, sizeof why, "the lease's worker process died (signal %d)", sig);
    else
      snprintf(why, sizeof why, "the lease's worker process exited (code %d)", code);
    if (!w->dead) drain(w); /* replies the worker wrote before exiting */
    close_channel(w);
    /* The owner learns first, so the callbacks below may start a new
     * worker. After a device fault the worker answers the failing request
     * and exits without reading another: the calls still pending never
     * ran (BUSY: safe to send again). */
    if (w->on_exit) w->on_exit(w->owner, code, sig);
    if (!sig && code == GL_WORKER_EXIT_CONTEXT_LOST)
      fail_pending(w, GPULEASE_BUSY,
                   "the lease's worker ended after a device fault without running this request");
    else
      fail_pending(w, GPULEASE_INTERNAL, why);
  } else if (g_teardown_cb && w->let_go) {
    /* A torn-down worker is gone: the daemon checks its memory came back. */
    g_teardown_cb(g_teardown_user, w->tag, w->pid, true);
  }
  destroy(w);
}

static void unlink_pending(gl_wproc *w, wcall *c) {
  if (c->prev) c->prev->next = c->next;
  else w->head = c->next;
  if (c->next) c->next->prev = c->prev;
  else w->tail = c->prev;
  c->prev = c->next = NULL;
}

/* Parses whole tagged messages out of the read buffer and hands each to the
 * call with its tag. */
static void deliver(gl_wproc *w) {
  size_t off = 0;
  while (w->in_len - off >= GL_IPC_TAG_BYTES + GL_WIRE_HEADER_SIZE) {
    const uint8_t *p = w->in + off + GL_IPC_TAG_BYTES;
    uint64_t tag = gl_ipc_get_tag(w->in + off);
    gl_header h;
    size_t total = 0;
    if (gl_header_decode(p, w->in_len - off - GL_IPC_TAG_BYTES, &h) == GPULEASE_OK)
      total = GL_WIRE_HEADER_SIZE + (size_t)h.body_len;
    if (total == 0 || total > WPROC_MAX_REPLY) {
      GL_ERROR("worker %d sent a bad or oversized reply header; killing it", (int)w->pid);
      kill(w->pid, SIGKILL);
      close_channel(w);
      return;
    }
    if (w->in_len - off - GL_IPC_TAG_BYTES < total) break;
    if (tag == GL_IPC_NOTICE_TAG && gl_message_peek_op(p, total) == GL_OP_WORKER_HELD) {
      if (g_held_cb && !w->killed) g_held_cb(g_held_user, w, p, total);
      off += GL_IPC_TAG_BYTES + total;
      continue;
    }
    if (tag == GL_IPC_NOTICE_TAG) {
      if (w->on_notice && !w->killed && !w->retired) w->on_notice(w->owner, p, total);
      if (w->dead) return; /* the owner killed the worker */
      off += GL_IPC_TAG_BYTES + total;
      continue;
    }
    /* Replies mostly come back in order: search from the oldest. */
    wcall *pd = w->head;
    while (pd && pd->tag != tag) pd = pd->next;
    if (!pd) {
      GL_ERROR("worker %d sent a reply with unknown tag %llu; killing it", (int)w->pid,
               (unsigned long long)tag);
      kill(w->pid, SIGKILL);
      close_channel(w);
      return;
    }
    unlink_pending(w, pd);
    if (pd->cancelled) { /* its lease was released: already answered */
      call_release(pd);
      off += GL_IPC_TAG_BYTES + total;
      continue;
    }
    pd->answered = true;
    if (!w->answered_once) { /* its context is made (or refused): no longer starting */
      w->answered_once = true;
      if (w->ctx_gpu >= 0) ctx_started(w, true);
    }
    spin_a_while(w->loop);
    pd->cb(pd->ctx, GPULEASE_OK, p, total, NULL);
    call_release(pd);
    off += GL_IPC_TAG_BYTES + total;
    if (w->dead) return; /* the callback killed the worker */
  }
  memmove(w->in, w->in + off, w->in_len - off);
  w->in_len -= off;
}

/* Reads everything available now; delivers whole messages. On EOF or a
 * read error the channel is closed (on_child reports the exit). */
static void drain(gl_wproc *w) {
  for (;;) {
    if (w->in_cap - w->in_len < 65536) {
      size_t ncap = w->in_cap ? w->in_cap * 2 : 131072;
      uint8_t *n = realloc(w->in, ncap);
      if (!n) {
        GL_ERROR("out of memory reading from worker %d", (int)w->pid);
        return;
      }
      w->in = n;
      w->in_cap = ncap;
    }
    size_t room = w->in_cap - w->in_len;
    ssize_t r = read(w->fd, w->in + w->in_len, room);
    if (r > 0) {
      w->in_len += (size_t)r;
      if ((size_t)r < room) break; /* all there was: no read just to see EAGAIN */
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    /* EOF or error: the worker is going away; on_child reports it. */
    deliver(w);
    close_channel(w);
    return;
  }
  deliver(w);
}

static void on_read(struct ev_loop *loop, ev_io *io, int revents) {
  (void)loop;
  (void)revents;
  GL_LAT(GL_LAT_D_WREPLY);
  drain(io->data);
}

/* Writes queued calls until done or the socket is full (then the write
 * watcher finishes the job). */
static void flush_out(gl_wproc *w) {
  struct ev_loop *loop = w->loop;
  ev_io *io = &w->wio;
  while (w->out_head) {
    wcall *o = w->out_head;
    ssize_t n;
    if (o->fd >= 0 && o->off == 0) { /* the descriptor rides with the first bytes */
      union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
      } cm;
      memset(&cm, 0, sizeof cm);
      struct iovec iov = {.iov_base = o->data, .iov_len = o->len};
      struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.buf,
                         .msg_controllen = sizeof cm.buf};
      struct cmsghdr *h = CMSG_FIRSTHDR(&m);
      h->cmsg_level = SOL_SOCKET;
      h->cmsg_type = SCM_RIGHTS;
      h->cmsg_len = CMSG_LEN(sizeof(int));
      memcpy(CMSG_DATA(h), &o->fd, sizeof o->fd);
      n = sendmsg(w->fd, &m, MSG_NOSIGNAL);
      if (n > 0) {
        close(o->fd);
        o->fd = -1;
      }
    } else {
      n = send(w->fd, o->data + o->off, o->len - o->off, MSG_NOSIGNAL);
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        ev_io_start(loop, io);
        return;
      }
      GL_WARN("write to worker %d failed: %s", (int)w->pid, strerror(errno));
      ev_io_stop(loop, io);
      return; /* the read side sees EOF and on_child reports the exit */
    }
    o->off += (size_t)n;
    if (o->off < o->len) continue;
    GL_LAT(GL_LAT_D_FWD);
    w->out_head = o->next_out;
    if (!w->out_head) w->out_tail = NULL;
    o->queued = false;
    call_release(o);
  }
  ev_io_stop(loop, io);
}

static void on_write(struct ev_loop *loop, ev_io *io, int revents) {
  (void)loop;
  (void)revents;
  flush_out(io->data);
}

int gl_worker_spawn_raw(const char *worker_exe, const char *log_level,
                        const char *const *device_args, pid_t *pid_out, int *fd_out, char *err,
                        size_t errlen) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    snprintf(err, errlen, "socketpair: %s", strerror(errno));
    return -1;
  }
  /* The child's end must survive exec: dup it without CLOEXEC. */
  int child_fd = fcntl(sv[1], F_DUPFD, 3);
  close(sv[1]);
  if (child_fd < 0) {
    close(sv[0]);
    snprintf(err, errlen, "fcntl: %s", strerror(errno));
    return -1;
  }
  char fdstr[16];
  snprintf(fdstr, sizeof fdstr, "%d", child_fd);
  char *argv[24] = {(char *)worker_exe, "--worker", fdstr, "--log-level", (char *)log_level};
  int argc = 5;
  for (int i = 0; device_args && device_args[i] && argc < 23; i++)
    argv[argc++] = (char *)device_args[i];
  argv[argc] = NULL;
  pid_t pid;
  int rc = posix_spawn(&pid, worker_exe, NULL, NULL, argv, environ);
  close(child_fd);
  if (rc != 0) {
    close(sv[0]);
    snprintf(err, errlen, "cannot start worker %s: %s", worker_exe, strerror(rc));
    return -1;
  }
  *pid_out = pid;
  *fd_out = sv[0];
  return 0;
}

int gl_wproc_spawn(struct ev_loop *loop, const char *worker_exe, const char *log_level,
                   const char *const *device_args, gl_wproc_exit_cb on_exit,
                   gl_wproc_notice_cb on_notice, void *owner, gl_wproc **out, char *err,
                   size_t errlen) {
  pid_t pid;
  int fd;
  if (gl_worker_spawn_raw(worker_exe, log_level, device_args, &pid, &fd, err, errlen) != 0)
    return -1;
  gl_wproc *w = calloc(1, sizeof *w);
  if (!w) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(fd);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  w->ctx_gpu = -1;
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  w->loop = loop;
  w->pid = pid;
  w->fd = fd;
  w->on_exit = on_exit;
  w->on_notice = on_notice;
  w->owner = owner;
  w->tag = UINT32_MAX;
  ev_timer_init(&w->retire_timer, on_retire_late, 0, 0); /* started by gl_wproc_retire */
  w->retire_timer.data = w;
  ev_io_init(&w->rio, on_read, w->fd, EV_READ);
  ev_io_init(&w->wio, on_write, w->fd, EV_WRITE);
  w->rio.data = w->wio.data = w;
  ev_io_start(loop, &w->rio);
  ev_child_init(&w->cw, on_child, pid, 0);
  w->cw.data = w;
  ev_child_start(loop, &w->cw);
  g_live++;
  GL_DEBUG("started worker %d", (int)pid);
  *out = w;
  return 0;
}

void gl_wproc_set_owner(gl_wproc *w, gl_wproc_exit_cb on_exit, gl_wproc_notice_cb on_notice,
                        void *owner) {
  w->on_exit = on_exit;
  w->on_notice = on_notice;
  w->owner = owner;
}

bool gl_wproc_usable(gl_wproc *w) {
  /* No read here (one system call less per request): a worker that closed
   * its end shows as dead once the loop has seen it, and a call sent to it
   * meanwhile is handed back as never run (BUSY) when it exits. */
  return !w->dead && !w->killed && !w->retired;
}

int gl_wproc_call(gl_wproc *w, const uint8_t *msg, size_t len, gl_wproc_reply_cb cb, void *ctx) {
  return gl_wproc_call_fd(w, msg, len, -1, cb, ctx);
}

/* The call itself: msg, then (decoded non-NULL) the decoded request. */
static int call_send(gl_wproc *w, const uint8_t *msg, size_t len, const gl_request *decoded,
                     int fd, gl_wproc_reply_cb cb, void *ctx);

int gl_wproc_call_fd(gl_wproc *w, const uint8_t *msg, size_t len, int fd, gl_wproc_reply_cb cb,
                     void *ctx) {
  return call_send(w, msg, len, NULL, fd, cb, ctx);
}

int gl_wproc_call_req(gl_wproc *w, const uint8_t *msg, size_t len, const gl_request *decoded,
                      gl_wproc_reply_cb cb, void *ctx) {
  return call_send(w, msg, len, decoded, -1, cb, ctx);
}

static int call_send(gl_wproc *w, const uint8_t *msg, size_t len, const gl_request *decoded,
                     int fd, gl_wproc_reply_cb cb, void *ctx) {
  if (w->dead || w->killed || w->retired) return -1;
  wcall *p = calloc(1, sizeof *p);
  /* A decoded BATCH is followed by its count entries, as its decoder
   * decoded them; one that comes without them goes undecoded (the worker
   * decodes it). */
  if (decoded && decoded->op == GL_OP_BATCH && !decoded->u.batch.entries) decoded = NULL;
  const gl_request *ents = decoded && decoded->op == GL_OP_BATCH ? decoded->u.batch.entries : NULL;
  size_t nents = ents ? decoded->u.batch.count : 0;
  size_t extra = decoded ? sizeof *decoded + nents * sizeof *decoded : 0;
  uint8_t *copy = malloc(GL_IPC_TAG_BYTES + len + extra);
  if (!p || !copy) {
    free(p);
    free(copy);
    return -1;
  }
  p->fd = -1;
  if (fd >= 0 && (p->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
    free(p);
    free(copy);
    return -1;
  }
  p->tag = ++w->next_tag;
  gl_ipc_put_tag(copy, decoded ? p->tag | GL_IPC_TAG_DECODED : p->tag);
  memcpy(copy + GL_IPC_TAG_BYTES, msg, len);
  if (decoded) {
    gl_request r = *decoded;
    bool ok = gl_request_detach(&r, msg, len) == GPULEASE_OK;
    if (r.op == GL_OP_BATCH) r.u.batch.entries = NULL; /* they follow */
    memcpy(copy + GL_IPC_TAG_BYTES + len, &r, sizeof r);
    for (size_t i = 0; ok && i < nents; i++) {
      gl_request e = ents[i];
      ok = gl_request_detach(&e, msg, len) == GPULEASE_OK;
      memcpy(copy + GL_IPC_TAG_BYTES + len + (1 + i) * sizeof e, &e, sizeof e);
    }
    if (!ok) {
      if (p->fd >= 0) close(p->fd);
      free(p);
      free(copy);
      return -1;
    }
  }
  p->data = copy;
  p->len = GL_IPC_TAG_BYTES + len + extra;
  p->msg_len = len;
  p->cb = cb;
  p->ctx = ctx;
  p->queued = true;
  p->prev = w->tail;
  if (w->tail) w->tail->next = p;
  else w->head = p;
  w->tail = p;
  if (w->out_tail) w->out_tail->next_out = p;
  else w->out_head = p;
  w->out_tail = p;
  if (!ev_is_active(&w->wio)) flush_out(w); /* else the watcher writes it in turn */
  spin_a_while(w->loop);
  return 0;
}

size_t gl_wproc_pending(const gl_wproc *w) {
  size_t n = 0;
  for (const wcall *p = w->head; p; p = p->next) n += !p->answered;
  return n;
}

void gl_wproc_cancel_lease(gl_wproc *w, uint64_t lease_id, gpulease_status status,
                           const char *why) {
  /* Answered in order of sending; the calls stay listed (cancelled) until
   * their replies come or the worker exits. */
  for (wcall *p = w->head; p; p = p->next) {
    uint64_t id;
    if (p->answered || p->cancelled ||
        !gl_request_peek_lease(p->data + GL_IPC_TAG_BYTES, p->msg_len, &id) ||
        id != lease_id)
      continue;
    p->cancelled = true;
    p->answered = true;
    p->cb(p->ctx, status, NULL, 0, why);
  }
}

void gl_wproc_retire(gl_wproc *w, gpulease_status status, const char *why) {
  if (w->killed || w->retired) return;
  w->retired = true;
  context_ending(w);
  w->retire_status = status;
  w->retire_why = strdup(why ? why : "the worker ended");
  ev_timer_set(&w->retire_timer, 1.0, 0);
  ev_timer_start(w->loop, &w->retire_timer);
  teardown_begins(w);
}

void gl_wproc_kill(gl_wproc *w, gpulease_status status, const char *why) {
  if (w->killed) return;
  ev_timer_stop(w->loop, &w->retire_timer);
  w->killed = true;
  context_ending(w);
  /* Fault injection for the tests of fencing (docs/security.md, "Fenced
   * GPUs"): with GL_FAULT_WORKER_KILL_IGNORED the kill has no effect, as
   * for a process stuck in the driver; with GL_FAULT_WORKER_EXIT_DELAY_MS
   * none is sent either, and the worker, its channel closed, takes that
   * long to exit by itself (src/worker/exit_fault.h), as a process whose
   * context the driver tears down slowly. Test-only. */
  static int ignore = -1;
  if (ignore < 0)
    ignore = getenv("GL_FAULT_WORKER_KILL_IGNORED") != NULL ||
             getenv("GL_FAULT_WORKER_EXIT_DELAY_MS") != NULL;
  if (!ignore) kill(w->pid, SIGKILL);
  teardown_begins(w);
  close_channel(w);
  fail_pending(w, status, why);
  /* on_child frees w once the kernel has reaped the process. */
}
