/*
 * wk_check.h - the check every worker file makes after a backend call:
 * whether the device lost the context (a CUDA sticky error), which ends
 * the process.
 */
#ifndef GL_WORKER_WK_CHECK_H
#define GL_WORKER_WK_CHECK_H

#include <stdbool.h>

#include "worker/wk_types.h"

/* Notes a lost context (first reason wins) after a backend call, and wakes
 * the main thread, which then stops reading requests, lists the sessions
 * for the daemon (WORKER_LOST) and exits. True when the context is lost
 * now. */
bool gl_wk_check_lost(gl_wk *w, const char *why);

#endif /* GL_WORKER_WK_CHECK_H */
