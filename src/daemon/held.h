/*
 * held.h - what leases hold beyond their regions, as their workers tell
 * (WORKER_HELD, docs/protocol.md section 7): kept on each lease
 * (lease_table.h) and counted in its GPU's leased figure.
 */
#ifndef GL_DAEMON_HELD_H
#define GL_DAEMON_HELD_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/worker_proc.h"

/* The daemon's WORKER_HELD callback (gl_wproc_set_held_watch, user the
 * gl_daemon): decodes the notice and records its figures on the lease it
 * names, if that lease is live and served by w; a notice that does not
 * decode, or names another worker's lease, is logged and ignored. */
void gl_daemon_on_held(void *user, gl_wproc *w, const uint8_t *msg, size_t len);

#endif /* GL_DAEMON_HELD_H */
