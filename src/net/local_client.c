/*
 * local_client.c - the client's side of the local socket (local.h):
 * blocking, one thread at a time, like libgpulease's QUIC client. Requests
 * are written whole (a descriptor, if any, rides with the first bytes);
 * answers are read whole and kept by tag until their wait.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/lat.h"
#include "common/util.h"
#include "net/local.h"
#include "proto/wire.h"

#define TAG_BYTES 8
/* Largest answer accepted (a MEM_READ or GPU_SUBMIT inline: 1 GiB). */
#define MAX_ANSWER (((size_t)1 << 30) + 65536)

typedef struct kept {
  struct kept *next;
  uint64_t tag;
  uint8_t *msg;
  size_t len;
} kept;

struct gl_lclient {
  int fd;
  uint32_t timeout_ms;
  uint64_t next_tag;
  bool dead;
  kept *answers;
};

static void set_msg(char *err, size_t errlen, const char *msg) {
  if (err && errlen) snprintf(err, errlen, "%s", msg);
}

int gl_lclient_connect(const char *path, uint32_t timeout_ms, gl_lclient **out, char *err,
                       size_t errlen) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (!path || strlen(path) >= sizeof a.sun_path) {
    set_msg(err, errlen, "local socket path too long");
    errno = ENAMETOOLONG;
    return -1;
  }
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    int e = errno;
    if (err && errlen) snprintf(err, errlen, "local socket %s: %s", path, strerror(e));
    if (fd >= 0) close(fd);
    errno = e;
    return -1;
  }
  gl_lclient *c = calloc(1, sizeof *c);
  if (!c) {
    close(fd);
    set_msg(err, errlen, "out of memory");
    return -1;
  }
  c->fd = fd;
  c->timeout_ms = timeout_ms ? timeout_ms : 30000;
  *out = c;
  return 0;
}

static int send_all(gl_lclient *c, const uint8_t *p, size_t len, int fd) {
  bool first = true;
  while (len > 0) {
    union {
      struct cmsghdr h;
      char buf[CMSG_SPACE(sizeof(int))];
    } cm;
    struct iovec iov = {.iov_base = (void *)p, .iov_len = len};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (first && fd >= 0) {
      memset(&cm, 0, sizeof cm);
      m.msg_control = cm.buf;
      m.msg_controllen = sizeof cm.buf;
      struct cmsghdr *h = CMSG_FIRSTHDR(&m);
      h->cmsg_level = SOL_SOCKET;
      h->cmsg_type = SCM_RIGHTS;
      h->cmsg_len = CMSG_LEN(sizeof(int));
      memcpy(CMSG_DATA(h), &fd, sizeof fd);
    }
    ssize_t n = sendmsg(c->fd, &m, MSG_NOSIGNAL);
    GL_LAT(GL_LAT_C_SENT);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    first = false;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

int gl_lclient_send(gl_lclient *c, const uint8_t *req, size_t len, int fd, uint64_t *token,
                    char *err, size_t errlen) {
  GL_LAT(GL_LAT_C_SEND);
  if (c->dead) {
    set_msg(err, errlen, "the local connection is closed");
    return -1;
  }
  uint8_t *buf = malloc(TAG_BYTES + len);
  if (!buf) {
    set_msg(err, errlen, "out of memory");
    return -1;
  }
  uint64_t tag = ++c->next_tag;
  for (int i = 0; i < TAG_BYTES; i++) buf[i] = (uint8_t)(tag >> (56 - 8 * i));
  memcpy(buf + TAG_BYTES, req, len);
  int rc = send_all(c, buf, TAG_BYTES + len, fd);
  free(buf);
  if (rc != 0) {
    c->dead = true;
    if (err && errlen) snprintf(err, errlen, "local socket: %s", strerror(errno));
    return -1;
  }
  *token = tag;
  return 0;
}

/* How long a read watches the socket before it sleeps in poll(): an
 * answer usually comes within tens of microseconds, and a wake-up from
 * sleep costs several. */
#define GL_LOCAL_SPIN_NS 60000ull

/* Reads exactly n bytes before the deadline (ms of CLOCK_MONOTONIC). */
static int read_exact(gl_lclient *c, uint8_t *p, size_t n, uint64_t deadline_ns) {
  uint64_t spin_until = gl_mono_ns() + GL_LOCAL_SPIN_NS;
  while (n > 0) {
    uint64_t now = gl_mono_ns();
    if (now >= deadline_ns) {
      errno = ETIMEDOUT;
      return -1;
    }
    struct pollfd pf = {.fd = c->fd, .events = POLLIN};
    int ms = now < spin_until ? 0 : (int)((deadline_ns - now + 999999) / 1000000);
    int pr = poll(&pf, 1, ms);
    if (pr == 0 && ms == 0) sched_yield();
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    ssize_t r = read(c->fd, p, n);
    GL_LAT(GL_LAT_C_RECV);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = ECONNRESET;
      return -1;
    }
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

int gl_lclient_wait(gl_lclient *c, uint64_t token, uint8_t **resp, size_t *resp_len, char *err,
                    size_t errlen) {
  *resp = NULL;
  *resp_len = 0;
  for (kept **k = &c->answers; *k; k = &(*k)->next) {
    if ((*k)->tag != token) continue;
    kept *hit = *k;
    *k = hit->next;
    *resp = hit->msg;
    *resp_len = hit->len;
    free(hit);
    return 0;
  }
  if (c->dead) {
    set_msg(err, errlen, "the local connection is closed");
    return -1;
  }
  uint64_t deadline = gl_mono_ns() + (uint64_t)c->timeout_ms * 1000000ull;
  for (;;) {
    uint8_t head[TAG_BYTES + GL_WIRE_HEADER_SIZE];
    gl_header h;
    if (read_exact(c, head, sizeof head, deadline) != 0 ||
        gl_header_decode(head + TAG_BYTES, GL_WIRE_HEADER_SIZE, &h) != GPULEASE_OK ||
        GL_WIRE_HEADER_SIZE + (size_t)h.body_len > MAX_ANSWER) {
      if (err && errlen)
        snprintf(err, errlen, "local socket: %s",
                 errno == ETIMEDOUT ? "no answer within the timeout" : "bad or lost answer");
      c->dead = true;
      return -1;
    }
    size_t len = GL_WIRE_HEADER_SIZE + (size_t)h.body_len;
    uint8_t *msg = malloc(len);
    if (!msg) {
      set_msg(err, errlen, "out of memory");
      c->dead = true;
      return -1;
    }
    memcpy(msg, head + TAG_BYTES, GL_WIRE_HEADER_SIZE);
    if (read_exact(c, msg + GL_WIRE_HEADER_SIZE, h.body_len, deadline) != 0) {
      free(msg);
      set_msg(err, errlen, "local socket: the answer broke off");
      c->dead = true;
      return -1;
    }
    uint64_t tag = 0;
    for (int i = 0; i < TAG_BYTES; i++) tag = tag << 8 | head[i];
    if (tag == token) {
      *resp = msg;
      *resp_len = len;
      GL_LAT(GL_LAT_C_DONE);
      return 0;
    }
    kept *k = malloc(sizeof *k);
    if (!k) {
      free(msg);
      set_msg(err, errlen, "out of memory");
      c->dead = true;
      return -1;
    }
    k->tag = tag;
    k->msg = msg;
    k->len = len;
    k->next = c->answers;
    c->answers = k;
  }
}

bool gl_lclient_dead(const gl_lclient *c) { return !c || c->dead; }

void gl_lclient_del(gl_lclient *c) {
  if (!c) return;
  close(c->fd);
  while (c->answers) {
    kept *k = c->answers;
    c->answers = k->next;
    free(k->msg);
    free(k);
  }
  free(c);
}
