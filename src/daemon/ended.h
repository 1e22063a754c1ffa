/*
 * ended.h - sessions that ended with a lost CUDA context.
 *
 * When a device fault loses a lease's context (CUDA's sticky errors), the
 * lease's worker stops, lists every session that was open with its failure
 * (WORKER_LOST, docs/protocol.md section 7) and exits. The daemon keeps that
 * list with the lease and answers the ended sessions' later ops itself, as
 * docs/protocol.md ("Failures") says: SYNC reports the failure, SESSION_CLOSE
 * forgets the session, every other op fails with the failure's status and a
 * message saying to close the session and open a new one. Meanwhile the
 * lease goes on with a fresh worker and context.
 */
#ifndef GL_DAEMON_ENDED_H
#define GL_DAEMON_ENDED_H

#include <stddef.h>
#include <stdint.h>

#include "proto/wire.h"

/* Ended sessions a lease remembers; beyond, the oldest are forgotten (their
 * ops then get NOT_FOUND, as for a closed session). */
#define GL_ENDED_MAX 128

typedef struct gl_ended_session {
  uint64_t id;
  uint16_t status; /* the session's failure */
  uint16_t op;
  uint64_t seq;
  char msg[1024];
} gl_ended_session;

typedef struct gl_ended {
  gl_ended_session *v; /* oldest first */
  size_t n;
} gl_ended;

/* Adds the sessions a WORKER_LOST notice lists (msg: the whole message).
 * A notice that does not decode is logged and ignored. */
void gl_ended_add_notice(gl_ended *e, const uint8_t *msg, size_t len);

/* The ended session `id`, or NULL. */
const gl_ended_session *gl_ended_find(const gl_ended *e, uint64_t id);

/* Forgets session `id` (closed, or its id was given to a new session). */
void gl_ended_remove(gl_ended *e, uint64_t id);

void gl_ended_free(gl_ended *e);

/* Encodes into out the daemon's answer to req, a session op (not
 * SESSION_OPEN) naming ended session es, and forgets es when req is its
 * SESSION_CLOSE (es is then stale). */
void gl_ended_answer(gl_ended *e, const gl_ended_session *es, const gl_request *req, gl_buf *out);

#endif /* GL_DAEMON_ENDED_H */
