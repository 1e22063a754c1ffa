/*
 * early.h - the daemon's verdict on a request's 12-byte header, given by
 * the transports (quic.h's on_header, local.h's) before the body is read:
 * what can be refused on the header alone is refused at once.
 */
#ifndef GL_DAEMON_EARLY_H
#define GL_DAEMON_EARLY_H

#include <stddef.h>
#include <stdint.h>

/* gl_qserver_header_cb (and the local socket's on_header) with user the
 * gl_daemon: an internal op (0x7Fxx) is UNSUPPORTED, a request whose
 * header declares more than --max-message-bytes, its 12-byte header
 * included, is TOO_LARGE. Writes the error response into reply (cap
 * bytes) and returns its length, or 0 when the request goes on to the
 * daemon (a header it cannot read, too: the whole request says why).
 * Reads only what does not change while the daemon runs, so the network
 * threads call it on theirs. */
size_t gl_daemon_on_header(void *user, const uint8_t *hdr, uint8_t *reply, size_t cap);

#endif /* GL_DAEMON_EARLY_H */
