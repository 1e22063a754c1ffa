/*
 * segments.h - shared memory segments of a lease (docs/protocol.md, "The
 * local socket"): a client on the GPU node hands the daemon a memfd
 * (SHM_ATTACH), the daemon passes it to the lease's worker, which maps it,
 * page-locks it for the device (cuMemHostRegister, once), and copies
 * between it and session buffers (MEM_WRITE_SHM, MEM_READ_SHM) without
 * the bytes ever crossing a socket.
 *
 * The main thread attaches and detaches; lanes use a segment between
 * gl_segments_get and gl_segments_put. A segment detached while a lane
 * copies is unmapped when that copy ends.
 */
#ifndef GL_WORKER_SEGMENTS_H
#define GL_WORKER_SEGMENTS_H

#include <stddef.h>
#include <stdint.h>

#include "worker/wk_types.h"

/* Segments a lease may have attached at once. */
#define GL_WK_MAX_SEGMENTS 16

typedef struct gl_wseg {
  uint64_t id;
  uint8_t *ptr;
  uint64_t size;
  unsigned refs;  /* the table's, and each lane's between get and put */
  bool registered; /* page-locked with the backend */
} gl_wseg;

/* Main thread: maps size bytes of fd (taken: closed in every case),
 * registers them with the backend and gives the segment's new id.
 * INVALID_ARGUMENT (the file is smaller, or cannot be mapped),
 * CAPACITY_EXCEEDED (GL_WK_MAX_SEGMENTS), INTERNAL; err says why. */
gpulease_status gl_segments_attach(gl_wk *w, int fd, uint64_t size, uint64_t *id, char *err,
                                   size_t errlen);

/* Main thread: detaches segment id (NOT_FOUND when there is none). */
gpulease_status gl_segments_detach(gl_wk *w, uint64_t id, char *err, size_t errlen);

/* Lanes: the segment id with a reference taken, or NULL. */
gl_wseg *gl_segments_get(gl_wk *w, uint64_t id);
void gl_segments_put(gl_wk *w, gl_wseg *s);

/* At exit: detaches every segment. */
void gl_segments_free_all(gl_wk *w);

#endif /* GL_WORKER_SEGMENTS_H */
