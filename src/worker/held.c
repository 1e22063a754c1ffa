/*
 * held.c - WORKER_HELD notices: see held.h.
 */
#include "worker/held.h"

#include "worker/wk_reply.h"

void gl_wk_held_report(gl_wk *w) {
  if (!w || !w->initialised) return;
  pthread_mutex_lock(&w->held_mu);
  uint64_t module = w->modtab ? gl_modtab_bytes(w->modtab) : 0;
  uint64_t local = gl_lmem_held(&w->lmem);
  if (module != w->held_module_sent || local != w->held_local_sent) {
    gl_response r = {.op = GL_OP_WORKER_HELD, .status = GPULEASE_OK};
    r.u.worker_held.lease_id = w->lease_id;
    r.u.worker_held.module_bytes = module;
    r.u.worker_held.local_bytes = local;
    gl_buf b;
    gl_buf_init(&b);
    if (gl_response_encode(&r, &b) != GPULEASE_OK) b.oom = true;
    if (gl_wkproc_send(w->p, GL_IPC_NOTICE_TAG, &b) == 0) {
      w->held_module_sent = module;
      w->held_local_sent = local;
    }
  }
  pthread_mutex_unlock(&w->held_mu);
}

void gl_wk_held_hook(void *w) { gl_wk_held_report(w); }
