/* ipc.c - see ipc.h. */
#include "worker/ipc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Reads up to n bytes, stopping early only at EOF; file descriptors that
 * come with the bytes (SCM_RIGHTS) go to q (closed when q is NULL or full).
 * Returns the bytes read, or -1 on error. */
static ssize_t read_full_q(int fd, uint8_t *p, size_t n, gl_ipc_fdq *q) {
  size_t got = 0;
  while (got < n) {
    union {
      struct cmsghdr h;
      char buf[CMSG_SPACE(sizeof(int) * GL_IPC_MAX_FDS)];
    } c;
    struct iovec iov = {.iov_base = p + got, .iov_len = n - got};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
                       .msg_controllen = sizeof c.buf};
    ssize_t r = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
    if (r < 0 && errno == ENOTSOCK) r = read(fd, p + got, n - got); /* a pipe (tests) */
    else if (r >= 0)
      for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
        size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int fds[GL_IPC_MAX_FDS];
        memcpy(fds, CMSG_DATA(h), k * sizeof(int));
        for (size_t i = 0; i < k; i++) {
          if (q && q->n < GL_IPC_MAX_FDS) q->fd[q->n++] = fds[i];
          else close(fds[i]);
        }
      }
    if (r < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (r == 0) break;
    got += (size_t)r;
  }
  return (ssize_t)got;
}

static ssize_t read_full(int fd, uint8_t *p, size_t n) { return read_full_q(fd, p, n, NULL); }

int gl_ipc_fdq_take(gl_ipc_fdq *q) {
  if (!q || q->n == 0) return -1;
  int fd = q->fd[0];
  memmove(q->fd, q->fd + 1, (q->n - 1) * sizeof q->fd[0]);
  q->n--;
  return fd;
}

void gl_ipc_fdq_clear(gl_ipc_fdq *q) {
  while (q && q->n) close(q->fd[--q->n]);
}

static int discard(int fd, uint64_t n) {
  uint8_t sink[65536];
  while (n > 0) {
    size_t want = n < sizeof sink ? (size_t)n : sizeof sink;
    ssize_t r = read_full(fd, sink, want);
    if (r < 0) return -1;
    if ((size_t)r != want) {
      errno = ECONNRESET;
      return -1;
    }
    n -= want;
  }
  return 0;
}

/* The rest of a message whose 12-byte header h was read. */
static gl_ipc_result read_rest(int fd, const uint8_t h[GL_WIRE_HEADER_SIZE], size_t max_body,
                               gl_header *hdr, uint8_t **msg, size_t *len,
                               gpulease_status *hdr_status) {
  ssize_t r;
  gpulease_status st = gl_header_decode(h, GL_WIRE_HEADER_SIZE, hdr);
  if (st != GPULEASE_OK) {
    if (hdr_status) *hdr_status = st;
    return GL_IPC_BAD_HEADER;
  }
  if (hdr->body_len > max_body) {
    if (discard(fd, hdr->body_len) != 0) return GL_IPC_IO_ERROR;
    return GL_IPC_TOO_LARGE;
  }
  size_t total = GL_WIRE_HEADER_SIZE + hdr->body_len;
  uint8_t *buf = malloc(total);
  if (!buf) {
    /* Keep the stream in step so the caller can still answer. */
    if (discard(fd, hdr->body_len) != 0) return GL_IPC_IO_ERROR;
    return GL_IPC_TOO_LARGE;
  }
  memcpy(buf, h, GL_WIRE_HEADER_SIZE);
  r = read_full(fd, buf + GL_WIRE_HEADER_SIZE, hdr->body_len);
  if (r < 0 || (size_t)r != hdr->body_len) {
    int e = r < 0 ? errno : ECONNRESET;
    free(buf);
    errno = e;
    return GL_IPC_IO_ERROR;
  }
  *msg = buf;
  *len = total;
  return GL_IPC_MESSAGE;
}

int gl_ipc_write_all(int fd, const void *buf, size_t len) {
  const uint8_t *p = buf;
  int use_send = 1;
  while (len > 0) {
    ssize_t n = use_send ? send(fd, p, len, MSG_NOSIGNAL) : write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (use_send && errno == ENOTSOCK) {
        use_send = 0; /* a pipe or file: plain write */
        continue;
      }
      return -1;
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

void gl_ipc_put_tag(uint8_t out[GL_IPC_TAG_BYTES], uint64_t tag) {
  for (int i = 0; i < GL_IPC_TAG_BYTES; i++) out[i] = (uint8_t)(tag >> (56 - 8 * i));
}

uint64_t gl_ipc_get_tag(const uint8_t in[GL_IPC_TAG_BYTES]) {
  uint64_t t = 0;
  for (int i = 0; i < GL_IPC_TAG_BYTES; i++) t = (t << 8) | in[i];
  return t;
}

gl_ipc_result gl_ipc_read(int fd, size_t max_body, gl_header *hdr, uint8_t **msg, size_t *len,
                          gpulease_status *hdr_status) {
  *msg = NULL;
  *len = 0;
  memset(hdr, 0, sizeof *hdr);
  if (max_body > GL_IPC_MAX_BODY) max_body = GL_IPC_MAX_BODY;
  uint8_t h[GL_WIRE_HEADER_SIZE];
  ssize_t r = read_full(fd, h, sizeof h);
  if (r < 0) return GL_IPC_IO_ERROR;
  if (r == 0) return GL_IPC_EOF;
  if ((size_t)r < sizeof h) {
    errno = ECONNRESET;
    return GL_IPC_IO_ERROR;
  }
  return read_rest(fd, h, max_body, hdr, msg, len, hdr_status);
}

gl_ipc_result gl_ipc_read_call(int fd, size_t max_body, uint64_t *tag, gl_header *hdr,
                               uint8_t **msg, size_t *len, gpulease_status *hdr_status) {
  return gl_ipc_read_call_fds(fd, max_body, tag, hdr, msg, len, hdr_status, NULL);
}

gl_ipc_result gl_ipc_read_call_fds(int fd, size_t max_body, uint64_t *tag, gl_header *hdr,
                                   uint8_t **msg, size_t *len, gpulease_status *hdr_status,
                                   gl_ipc_fdq *fdq) {
  *msg = NULL;
  *len = 0;
  *tag = 0;
  memset(hdr, 0, sizeof *hdr);
  if (max_body > GL_IPC_MAX_BODY) max_body = GL_IPC_MAX_BODY;
  /* The tag and the header in one read; a message's descriptors come with
   * its first bytes. */
  uint8_t t[GL_IPC_TAG_BYTES + GL_WIRE_HEADER_SIZE];
  ssize_t r = read_full_q(fd, t, sizeof t, fdq);
  if (r < 0) return GL_IPC_IO_ERROR;
  if (r == 0) return GL_IPC_EOF;
  if ((size_t)r < sizeof t) {
    if ((size_t)r >= GL_IPC_TAG_BYTES) *tag = gl_ipc_get_tag(t);
    errno = ECONNRESET; /* a tag without its message */
    return GL_IPC_IO_ERROR;
  }
  *tag = gl_ipc_get_tag(t);
  return read_rest(fd, t + GL_IPC_TAG_BYTES, max_body, hdr, msg, len, hdr_status);
}

int gl_ipc_read_exact(int fd, void *buf, size_t n) {
  ssize_t r = read_full(fd, buf, n);
  if (r < 0) return -1;
  if ((size_t)r != n) {
    errno = ECONNRESET;
    return -1;
  }
  return 0;
}

int gl_ipc_write_call(int fd, uint64_t tag, const void *msg, size_t len) {
  uint8_t t[GL_IPC_TAG_BYTES];
  gl_ipc_put_tag(t, tag);
  if (gl_ipc_write_all(fd, t, sizeof t) != 0) return -1;
  return gl_ipc_write_all(fd, msg, len);
}
