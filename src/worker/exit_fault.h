/*
 * exit_fault.h - TEST-ONLY fault injection: a worker that takes long to
 * exit once its daemon lets it go, as one does whose CUDA context the
 * driver tears down slowly (many contexts ending at once, each torn down
 * in turn). The tests of fencing use it (tests/e2e/test_e2e_teardown.c,
 * docs/security.md "Fenced GPUs"); never set these on a node that serves.
 *
 *   GL_FAULT_WORKER_EXIT_DELAY_MS=N  once its channel to the daemon is
 *       closed, the worker waits N ms (0..60000) before it exits. The
 *       daemon, seeing the variable, sends its ended workers no SIGKILL
 *       (which would not wait): it closes their channel only, so a worker
 *       whose kernel still runs ends only after it (not for such tests).
 *   GL_FAULT_WORKER_EXIT_LOCK=FILE   the wait is taken holding an
 *       exclusive flock(2) on FILE (opened at start, before the sandbox),
 *       so the waits of workers ending together run one after another, as
 *       the driver's teardowns of their contexts do.
 *
 * Unset (always, outside tests), neither function does anything.
 */
#ifndef GL_WORKER_EXIT_FAULT_H
#define GL_WORKER_EXIT_FAULT_H

/* Reads the variables and opens the lock file; call it at the worker's
 * start, before it confines itself. A bad value is logged and ignored. */
void gl_exit_fault_prepare(void);

/* The delay, when configured: waits (under the lock, when one is named)
 * and returns. Call it when the worker's loop is over, before it exits. */
void gl_exit_fault_delay(void);

#endif /* GL_WORKER_EXIT_FAULT_H */
