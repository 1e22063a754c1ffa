/*
 * start_fault.h - TEST-ONLY fault injection: a worker whose CUDA context
 * takes long to make, as under a driver making many at once (each in
 * turn). The tests of admission use it (tests/e2e/test_e2e_admit.c,
 * --max-contexts-starting); never set it on a node that serves.
 *
 *   GL_FAULT_WORKER_START_DELAY_MS=N  the worker waits N ms (0..60000)
 *       before it opens its device, at its first WORKER_WARM or
 *       WORKER_INIT.
 *
 * Unset (always, outside tests), it does nothing.
 */
#ifndef GL_WORKER_START_FAULT_H
#define GL_WORKER_START_FAULT_H

/* The delay, when configured: waits and returns. A bad value is logged
 * and ignored. */
void gl_start_fault_delay(void);

#endif /* GL_WORKER_START_FAULT_H */
