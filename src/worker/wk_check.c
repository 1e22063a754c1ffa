/*
 * wk_check.c - the lost-context check after a backend call (wk_check.h):
 * the first reason is kept, a shared worker's daemon hears WORKER_LOST at
 * once, and the main thread is woken to wind down.
 */
#include "worker/wk_check.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>

#include "common/log.h"
#include "worker/ipc.h"
#include "worker/wk_reply.h"

bool gl_wk_check_lost(gl_wk *w, const char *why) {
  gl_wkproc *p = w->p;
  if (!w->be->ops->context_lost(w->be)) return atomic_load(&p->lost);
  pthread_mutex_lock(&p->lost_mu);
  if (!atomic_load(&p->lost)) {
    if (p->shared)
      snprintf(p->lost_msg, sizeof p->lost_msg,
               "%s (in lease %llu; shared leases share one CUDA context and its fate)",
               why && why[0] ? why : "device fault", (unsigned long long)w->lease_id);
    else
      snprintf(p->lost_msg, sizeof p->lost_msg, "%s", why && why[0] ? why : "device fault");
    atomic_store(&p->lost, true);
    GL_ERROR("worker: the CUDA context is lost after a device fault: %s", p->lost_msg);
    /* A shared context ends every lease of it: the daemon hears so before
     * any reply of this failure goes out, so that no other lease's request
     * it reads after that reply is served (docs/protocol.md, LEASE_ALLOC
     * class shared). Its sessions need no list: they all end. */
    if (p->shared) {
      gl_response r = {.op = GL_OP_WORKER_LOST, .status = GPULEASE_OK, .msg = p->lost_msg};
      r.msg_len = (uint16_t)strlen(p->lost_msg);
      gl_buf b;
      gl_buf_init(&b);
      if (gl_response_encode(&r, &b) != GPULEASE_OK) b.oom = true;
      p->notice_sent = gl_wkproc_send(p, GL_IPC_NOTICE_TAG, &b) == 0;
    }
    /* The main thread stops reading requests and winds down. */
    if (eventfd_write(p->wake_fd, 1) != 0) GL_WARN("worker: cannot wake the main thread");
  }
  pthread_mutex_unlock(&p->lost_mu);
  return true;
}
