/*
 * hdrlog.h - the bookkeeping of the refusals made on a request's header
 * (early.c), which come on the network threads as well as the main one:
 * each is queued here and, on the daemon's main loop, written to the
 * audit log and counted in the metrics exactly as handle() (ops.c) does
 * for the refusals it makes, so that a request refused early shows as
 * any other refused request.
 */
#ifndef GL_DAEMON_HDRLOG_H
#define GL_DAEMON_HDRLOG_H

#include <stddef.h>
#include <stdint.h>

#include "net/origin.h"

struct gl_daemon;
struct ev_loop;
typedef struct gl_hdrlog gl_hdrlog;

/* Most refusals queued and not yet written; beyond, one is dropped (and
 * counted in the log's next line about it). */
#define GL_HDRLOG_MAX 16384

/* Starts the queue on d's loop (main thread): its records go to d->audit
 * and d->metrics as they are then. NULL when out of memory. Free with
 * gl_hdrlog_free on the same thread. */
gl_hdrlog *gl_hdrlog_new(struct ev_loop *loop, struct gl_daemon *d);

/* Writes what is queued, stops and frees l (NULL ignored). */
void gl_hdrlog_free(gl_hdrlog *l);

/* Queues a refusal: from (copied: identity and peer), the header's op,
 * the bytes received when it was made (in_bytes: the header) and the
 * answer (a whole error response, copied). Any thread. */
void gl_hdrlog_note(gl_hdrlog *l, const gl_req_origin *from, uint16_t op, uint64_t in_bytes,
                    const uint8_t *answer, size_t len);

/* Writes and counts what is queued now (main thread; the loop does it on
 * its own soon after each gl_hdrlog_note). */
void gl_hdrlog_drain(gl_hdrlog *l);

#endif /* GL_DAEMON_HDRLOG_H */
