/*
 * ipc.h - whole wire messages over a blocking stream socket.
 *
 * The daemon and a worker talk over a SOCK_STREAM socketpair carrying
 * gpulease/1 messages (src/proto/wire.h) back to back: a 12-byte header,
 * then body_len bytes. These helpers read and write whole messages,
 * retrying on EINTR and short transfers. They block; the worker has nothing
 * else to do. Writes use MSG_NOSIGNAL, so a vanished peer is an error
 * return (EPIPE), never a SIGPIPE.
 */
#ifndef GL_WORKER_IPC_H
#define GL_WORKER_IPC_H

#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

/* Largest body a worker accepts (1 GiB). */
#define GL_IPC_MAX_BODY (1u << 30)

typedef enum gl_ipc_result {
  GL_IPC_MESSAGE = 0,  /* *msg holds a whole message (header + body) */
  GL_IPC_EOF = 1,      /* the peer closed the stream between messages */
  GL_IPC_IO_ERROR = 2, /* read error, or EOF inside a message (errno set) */
  GL_IPC_BAD_HEADER = 3, /* the header does not decode: the stream cannot be
                            resynchronised; *hdr holds what could be read */
  GL_IPC_TOO_LARGE = 4,  /* body_len > max_body: the body was read and
                            discarded, the stream is still in step; *hdr set */
} gl_ipc_result;

/* Reads one message.
 *   max_body: largest body_len accepted (at most GL_IPC_MAX_BODY).
 *   hdr: receives the decoded header (MESSAGE, BAD_HEADER, TOO_LARGE).
 *   msg, len: on MESSAGE, a malloc'd buffer of the whole message (the
 *     caller frees it) and its size; NULL and 0 otherwise.
 *   hdr_status: on BAD_HEADER, what gl_header_decode said (MALFORMED or
 *     UNSUPPORTED); may be NULL. */
gl_ipc_result gl_ipc_read(int fd, size_t max_body, gl_header *hdr, uint8_t **msg, size_t *len,
                          gpulease_status *hdr_status);

/* Writes all len bytes. 0, or -1 with errno set. */
int gl_ipc_write_all(int fd, const void *buf, size_t len);

/* ---- tagged calls (the daemon-worker channel, docs/protocol.md section 7)
 * Each message on the channel is preceded by an 8-byte call tag (u64,
 * big-endian) that the daemon picks and the worker echoes in the reply, so
 * replies may come back in any order. */
#define GL_IPC_TAG_BYTES 8
/* The tag of a message the worker sends unasked (WORKER_LOST); the daemon's
 * calls use tags from 1 up. */
#define GL_IPC_NOTICE_TAG 0

/* A daemon's call whose tag has this bit carries, after its message, the
 * request as the daemon decoded it: sizeof(gl_request) bytes with its
 * borrowed pointers as offsets (gl_request_detach), so the worker does not
 * decode it again (docs/protocol.md section 7); for a BATCH, its count
 * entries follow, each as another sizeof(gl_request) bytes detached the
 * same way. The worker's reply echoes the tag without the bit. */
#define GL_IPC_TAG_DECODED (1ull << 63)

/* Reads exactly n bytes (after a message: a decoded request). 0, or -1
 * with errno set (ECONNRESET at an early end). */
int gl_ipc_read_exact(int fd, void *buf, size_t n);

/* Reads a tag and the message after it; results as gl_ipc_read (GL_IPC_EOF
 * only at a clean end before a tag). *tag is set whenever the tag was read.
 * A file descriptor sent with the message is closed. */
gl_ipc_result gl_ipc_read_call(int fd, size_t max_body, uint64_t *tag, gl_header *hdr,
                               uint8_t **msg, size_t *len, gpulease_status *hdr_status);

/* File descriptors that came with a message (SCM_RIGHTS: SHM_ATTACH's
 * segment), in the order they came. */
#define GL_IPC_MAX_FDS 4
typedef struct gl_ipc_fdq {
  int fd[GL_IPC_MAX_FDS];
  size_t n;
} gl_ipc_fdq;

/* As gl_ipc_read_call, keeping the descriptors that come with the message
 * (sent with its tag's bytes) in fdq; the caller takes or closes them. */
gl_ipc_result gl_ipc_read_call_fds(int fd, size_t max_body, uint64_t *tag, gl_header *hdr,
                                   uint8_t **msg, size_t *len, gpulease_status *hdr_status,
                                   gl_ipc_fdq *fdq);

/* The oldest descriptor of q (the caller owns it), or -1 when none. */
int gl_ipc_fdq_take(gl_ipc_fdq *q);
/* Closes every descriptor left in q. */
void gl_ipc_fdq_clear(gl_ipc_fdq *q);

/* Writes tag and the len bytes of msg. Not atomic: writers sharing fd
 * serialise calls themselves. 0, or -1 with errno set. */
int gl_ipc_write_call(int fd, uint64_t tag, const void *msg, size_t len);

/* Encodes / decodes the 8-byte tag. */
void gl_ipc_put_tag(uint8_t out[GL_IPC_TAG_BYTES], uint64_t tag);
uint64_t gl_ipc_get_tag(const uint8_t in[GL_IPC_TAG_BYTES]);

#endif /* GL_WORKER_IPC_H */
