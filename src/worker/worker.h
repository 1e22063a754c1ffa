/*
 * worker.h - the per-lease worker process.
 *
 * Each lease's device context lives in a process of its own that the
 * daemon spawns (`gpuleased --worker FD`) and supervises: if a kernel hangs
 * the daemon SIGKILLs the worker and the driver reclaims the context and
 * its VRAM; if a kernel faults, only that lease's process is lost.
 *
 * The worker serves requests read from FD, each behind an 8-byte call tag
 * (worker/ipc.h) and answered by exactly one response carrying that tag
 * (src/proto/wire.h framing). GPU_SUBMITs run one at a time in the order
 * received; each session's ops run in seq order on a thread of their own
 * (session.h), so replies may come back in any order:
 *
 *   WORKER_PROBE  list the CUDA devices (uuid, name, compute capability,
 *                 SMs, memory); NO_DEVICE with the reason when the driver
 *                 cannot be loaded or initialised. Allowed at any time.
 *   WORKER_INIT   open CUDA device cuda_ordinal, reserve vram_bytes for the
 *                 lease's region and zero it (no earlier tenant's data is
 *                 ever visible); reply region_base and the device name.
 *                 Once per worker.
 *   GPU_SUBMIT    validate against the region, load the image (cached),
 *                 copy input, launch, wait, read output back; reply the
 *                 output and the kernel's GPU time. Only after INIT.
 *   SESSION_OPEN ... LAUNCH   the session ops (docs/protocol.md, "Sessions").
 *
 * Any other op is answered UNSUPPORTED; a body that does not decode is
 * answered with the decoder's status (MALFORMED, ...) and the worker goes
 * on. The lease auth in GPU_SUBMIT is the daemon's business and is ignored
 * here.
 */
#ifndef GL_WORKER_WORKER_H
#define GL_WORKER_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* The worker's return values, meant to become its process exit status. */
#define GL_WORKER_EXIT_OK 0           /* the daemon closed the stream */
#define GL_WORKER_EXIT_IO 1           /* read/write error or undecodable framing */
#define GL_WORKER_EXIT_CONTEXT_LOST 3 /* a kernel fault killed the CUDA context;
                                         the failing request was answered */

/* Largest GPU_SUBMIT output_size the worker reads back (the response must
 * fit in one message of at most GL_IPC_MAX_BODY bytes). */
#define GL_WORKER_MAX_OUTPUT ((1u << 30) - 4096u)

/* The directory where compiled PTX is cached across restarts (the daemon
 * passes <state-dir>/jit-cache); NULL (the default) disables the cache.
 * Call before gl_worker_run; the string is borrowed. */
void gl_worker_set_jit_cache_dir(const char *dir);

/* How long a session's held ops wait for a missing seq before it is given
 * up (docs/protocol.md, "Ordering"); 0 keeps the default (10 s). Call
 * before gl_worker_run. */
void gl_worker_set_seq_timeout_ms(unsigned ms);

/* The message of an op that fails fast behind a session's failure (op,
 * seq, message: the failure), in the forms docs/protocol.md ("Failures")
 * gives. */
void gl_session_fail_fast_msg(char *buf, size_t len, uint16_t op, uint64_t seq, const char *msg);

/* The message of an op on a session that ended with a lost context (the
 * daemon answers those ops once the worker is gone). */
void gl_session_ended_msg(char *buf, size_t len, uint64_t session_id, uint16_t op, uint64_t seq,
                          const char *msg);

/* Runs the worker loop on fd (a connected SOCK_STREAM socket; blocking)
 * with the CUDA backend until the daemon closes the stream. Returns one of
 * GL_WORKER_EXIT_*; the caller exits the process with it, i.e.
 * `return gl_worker_main(fd);` from main(). fd is not closed. */
int gl_worker_main(int fd);

/* The same loop with the given backend (borrowed; not destroyed). For other
 * backends and for tests. */
int gl_worker_run(int fd, gl_backend *backend);

#endif /* GL_WORKER_WORKER_H */
