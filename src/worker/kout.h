/*
 * kout.h - kernel output (device-side printf and assert text) in the
 * worker: the capture of the process's stdout and stderr, and each lease's
 * pending output (docs/protocol.md, "Kernel output").
 *
 * Capture. The CUDA driver prints a kernel's printf text (and the text of
 * a failed device-side assert) on the process's own stdout when the host
 * synchronizes; the emulated backend does the same (backend_emu.c). A
 * worker that captures (gl_kout_capture_start, run once at start-up) has
 * fd 1 and fd 2 on a pipe: a thread of its own keeps the pipe drained into
 * a staging buffer (bounded; the writers never block), and the worker's
 * log goes to a copy of the original stderr (gl_log_set_stream). After
 * each synchronization the worker moves what was staged to the lease
 * whose kernel ran (gl_kout_drain); a worker of shared leases cannot tell
 * whose kernel printed and discards it. Nothing captured reaches a log.
 *
 * Pending output. Each lease keeps at most GL_KOUT_MAX bytes (wire.h)
 * until a reply takes them; bytes beyond are dropped and counted, and the
 * next delivery says so.
 */
#ifndef GL_WORKER_KOUT_H
#define GL_WORKER_KOUT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes the capture stages between two drains; beyond, dropped and counted. */
#define GL_KOUT_STAGE_MAX ((size_t)1 << 20)

/* A lease's pending kernel output. */
typedef struct gl_kout_buf {
  pthread_mutex_t mu;
  char *buf;        /* GL_KOUT_MAX bytes once used */
  size_t len;
  uint64_t dropped; /* bytes dropped since the last take */
} gl_kout_buf;

/* Empty; gl_kout_buf_free releases it. */
void gl_kout_buf_init(gl_kout_buf *b);
void gl_kout_buf_free(gl_kout_buf *b);

/* Appends n bytes, as many as GL_KOUT_MAX leaves room for; the rest (and
 * extra_dropped, bytes already dropped upstream) count as dropped. */
void gl_kout_buf_append(gl_kout_buf *b, const char *s, size_t n, uint64_t extra_dropped);

/* Takes everything pending: *text (malloc'd, the caller frees; NULL when
 * *len is 0), *len bytes, *dropped bytes dropped since the last take. */
void gl_kout_buf_take(gl_kout_buf *b, char **text, uint32_t *len, uint64_t *dropped);

/* Starts the capture in this process: fd 1 and fd 2 onto a pipe drained by
 * a thread, the log onto a copy of the former stderr. Call once, after
 * the sandbox (it starts a thread) and before any device work. 0, or -1
 * with err written (the process then captures nothing). */
int gl_kout_capture_start(char *err, size_t errlen);

/* True once gl_kout_capture_start succeeded. */
bool gl_kout_capturing(void);

/* Moves the text printed since the last drain (stdio buffers flushed
 * first) into dst, or discards it when dst is NULL. Lines of a failed
 * device-side assert ("... Assertion `EXPR` failed.") go to asserts
 * instead when it is not NULL (appended without their newline, "; "
 * between two, NUL-terminated, at most cap bytes). No-op without a capture. Safe from any thread. */
void gl_kout_drain(gl_kout_buf *dst, char *asserts, size_t cap);

#endif /* GL_WORKER_KOUT_H */
