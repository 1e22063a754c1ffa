/*
 * daemon_harness.h - starts a real gpuleased for a test: its own state
 * directory, a free loopback port, and the certificate fingerprint to pin.
 */
#ifndef GL_TESTS_DAEMON_HARNESS_H
#define GL_TESTS_DAEMON_HARNESS_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct gl_test_daemon {
  pid_t pid;
  char dir[256];
  char addr[64];
  char fingerprint[80];
  char emu_vram[24];         /* as given to start ("" for real GPUs) */
  const char *extra[16];     /* as given to start (borrowed) */
} gl_test_daemon;

/* Starts $GL_TEST_BIN_DIR/src/daemon/gpuleased with extra arguments (NULL
 * terminated), and with --warm-workers 0 before them (tests count worker
 * processes; a test of the pool passes its own --warm-workers). With emu_vram non-NULL the daemon offers only the emulated
 * device, with that much VRAM ("64M"); with NULL only real GPUs
 * (--device cuda: none on a CI machine). Waits until it serves. 0 or -1. */
int gl_test_daemon_start(gl_test_daemon *d, const char *emu_vram, const char *const *extra);

/* True when GL_TEST_DEVICE=cuda (the GPU check): tests then lease the
 * node's GPUs (gl_test_daemon_start with emu_vram NULL). */
bool gl_test_on_gpu(void);

/* Stops the daemon (SIGTERM) and starts it again with the same state
 * directory, arguments and address (the certificate, kept in the
 * directory, stays the same). 0 or -1. */
int gl_test_daemon_restart(gl_test_daemon *d);

/* SIGTERMs it, waits, removes its directory. Returns its exit status
 * (0 for a clean shutdown). */
int gl_test_daemon_stop(gl_test_daemon *d);

/* A libgpulease client connected to d with its certificate pinned;
 * timeout_ms per request; over QUIC only (no_local). Fails the running
 * cmocka test on error. */
struct gpulease_client *gl_test_connect(const gl_test_daemon *d, int timeout_ms);

/* Runs the CLI ($GL_TEST_BIN_DIR/src/cli/gpulease) against d with the
 * printf-formatted arguments; its stdout and stderr go to out (outlen
 * bytes, NUL-terminated, the rest dropped) and to stderr for the test's
 * log. Returns its exit status (-1 when it could not run). */
int gl_test_cli(const gl_test_daemon *d, char *out, size_t outlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The PTX of kernel file `name` (name.ptx): from $GL_TEST_PTX_DIR, the
 * source tree's emulator corpus (sm_90), or the build's kernels/. malloc'd
 * (caller frees), NUL-terminated, *len bytes; NULL when none is found. */
char *gl_test_read_ptx(const char *name, size_t *len);

/* Lines of the daemon's log (it logs at debug level) that hold needle. */
int gl_test_daemon_log_count(const gl_test_daemon *d, const char *needle);

/* Number of live child processes (workers) of the daemon. */
int gl_test_daemon_children(const gl_test_daemon *d);

/* Waits up to timeout_ms for the daemon to have n worker processes;
 * returns how many it has at the end (n, unless the wait ran out). */
int gl_test_daemon_wait_children(const gl_test_daemon *d, int n, int timeout_ms);

/* The pids of the daemon's live children (workers), at most max: the
 * count. */
int gl_test_daemon_child_pids(const gl_test_daemon *d, pid_t *pids, int max);

#endif
