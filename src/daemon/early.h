/*
 * early.h - the daemon's verdict on a request's 12-byte header, given by
 * the transports (quic.h's on_header, local.h's) before the body is read:
 * what can be refused on the header alone is refused at once, and what is
 * let through counts as its tenant's unfinished until it ends (admit.h).
 */
#ifndef GL_DAEMON_EARLY_H
#define GL_DAEMON_EARLY_H

#include <stddef.h>
#include <stdint.h>

#include "net/origin.h"

/* gl_qserver_header_cb (and the local socket's on_header) with user the
 * gl_daemon, in this order: an internal op (0x7Fxx) is UNSUPPORTED; a
 * request whose header declares more than --max-message bytes, its
 * 12-byte header included, is TOO_LARGE; so is one whose body_len is over
 * its op's limit (gl_request_body_limit: the message names the op, the
 * declared size and the limit); one more unfinished request of a
 * connection that has some, past --max-buffered-per-connection bytes
 * declared, is BUSY; so is one of a tenant that has
 * --max-requests-per-tenant unfinished, or has some and would pass
 * --max-buffered-per-tenant bytes. Writes the error response into reply
 * (cap bytes), queues it for the audit log and the metrics (hdrlog.h) and
 * returns its length; or returns 0 when the request goes on to the daemon
 * (a header it cannot read, too: the whole request says why), having
 * admitted it: *ticket is then the tenant's, for gl_daemon_on_header_end.
 * Reads only what does not change while the daemon runs, and the
 * thread-safe admit table, so the network threads call it on theirs. */
size_t gl_daemon_on_header(void *user, const gl_req_origin *from, const uint8_t *hdr,
                           uint8_t *reply, size_t cap, void **ticket);

/* gl_req_end_cb with user the gl_daemon: the request admitted with
 * ticket (NULL: none) has ended; its tenant's count and bytes (whole)
 * are given back. Any thread. */
void gl_daemon_on_header_end(void *user, void *ticket, uint64_t whole);

#endif /* GL_DAEMON_EARLY_H */
