/*
 * held.c - WORKER_HELD notices into the lease table: see held.h.
 */
#include "daemon/held.h"

#include <inttypes.h>

#include "common/log.h"
#include "daemon/daemon.h"
#include "daemon/lease_rt.h"
#include "daemon/lease_table.h"
#include "proto/wire.h"

void gl_daemon_on_held(void *user, gl_wproc *w, const uint8_t *msg, size_t len) {
  gl_daemon *d = user;
  gl_response r;
  char err[200];
  if (gl_response_decode(msg, len, len, &r, err, sizeof err) != GPULEASE_OK ||
      r.op != GL_OP_WORKER_HELD || r.status != GPULEASE_OK) {
    GL_ERROR("a worker sent a WORKER_HELD notice that does not decode (%s); ignored", err);
    return;
  }
  const gl_worker_held_resp *h = &r.u.worker_held;
  gl_lease *l = gl_lease_table_find(d->leases, h->lease_id);
  const lease_rt *rt = l ? l->owner : NULL;
  if (!rt || rt->w != w) {
    /* A lease that ended meanwhile (its worker still reports the unloads
     * of its end), or a worker speaking of a lease it does not serve. */
    GL_DEBUG("WORKER_HELD for lease %" PRIu64 ", which this worker does not serve; ignored",
             h->lease_id);
    return;
  }
  gl_lease_table_set_held(d->leases, l, l->held_limits_bytes, h->module_bytes, h->local_bytes);
  GL_DEBUG("lease %" PRIu64 " holds %" PRIu64 " bytes of modules and %" PRIu64
           " of local memory beyond its region",
           h->lease_id, h->module_bytes, h->local_bytes);
}
