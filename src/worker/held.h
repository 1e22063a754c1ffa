/*
 * held.h - telling the daemon what a lease makes its context hold beyond
 * its region (WORKER_HELD, docs/protocol.md section 7): its modules'
 * memory (modtab.h) and its kernels' local memory (lmem.h). The daemon
 * counts it with the lease's VRAM in the GPU's leased figure, so the
 * inventory and the metrics show what leases really hold.
 */
#ifndef GL_WORKER_HELD_H
#define GL_WORKER_HELD_H

#include "worker/wk_types.h"

/* Sends WORKER_HELD (tag 0) with the lease's figures now, when they
 * differ from the last it sent; before the reply of the op that changed
 * them, when called from that op. Any thread; a daemon gone is ignored
 * (the worker finds out on its next read). */
void gl_wk_held_report(gl_wk *w);

/* gl_wk_held_report with w as a void pointer: modtab.h's change hook. */
void gl_wk_held_hook(void *w);

#endif /* GL_WORKER_HELD_H */
