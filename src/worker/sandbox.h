/*
 * sandbox.h - what a worker process gives up before it serves a lease,
 * and what the daemon prepares for it. docs/security.md ("Workers confine
 * themselves") says what this stops and what it does not.
 *
 * The daemon tells its workers through the environment they inherit:
 *   GL_WORKER_NO_SANDBOX=1       none of this (gpuleased --no-worker-sandbox)
 *   GL_WORKER_USER=NAME:UID:GID  the user to become (gpuleased --worker-user)
 *   GL_WORKER_PROBE_PATH=PATH    a path the worker must not be able to open
 *                                (the daemon's state directory): its self-check
 */
#ifndef GL_WORKER_SANDBOX_H
#define GL_WORKER_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>

/* Open files a confined worker may hold at once (RLIMIT_NOFILE, soft and
 * hard), unless its limit is lower already. */
#define GL_WORKER_MAX_FILES 4096

/* ---- the daemon's side ------------------------------------------------- */

/* Picks the user workers run as and tells them (GL_WORKER_USER and
 * GL_WORKER_PROBE_PATH in this process's environment, which workers
 * inherit). user: `--worker-user`, or NULL for the default: "nobody" when
 * the daemon runs as root; otherwise the daemon's own user (a process that
 * is not root cannot start workers as another). With sandbox false
 * (--no-worker-sandbox) workers keep the daemon's user. When the workers
 * get a user of their own, <state_dir>/jit-cache is created (the state
 * directory with it, mode 0700) and given to that user, with the entries a
 * root worker left there. Returns 0, or -1 with err: no such user, or a
 * daemon that is not root asked for another user. */
int gl_worker_user_setup(const char *user, bool sandbox, const char *state_dir, char *err,
                         size_t errlen);

/* ---- the worker's side ------------------------------------------------- */

/* Confines the calling worker process; call it before it starts a thread
 * or opens the device, as root if the daemon is. In order:
 *  - limits: RLIMIT_CORE 0 (a crash writes no tenant memory to disk),
 *    RLIMIT_FSIZE 4 GiB, RLIMIT_NOFILE GL_WORKER_MAX_FILES;
 *  - the user of GL_WORKER_USER: its groups (initgroups), gid and uid, all
 *    three ids of each; then setuid(0) must fail. jit_dir (--jit-cache, may
 *    be NULL) is opened first, since the daemon's state directory that holds
 *    it is closed to that user: *jit_out is then the path the worker should
 *    use for it ("/proc/self/fd/N"), else jit_dir itself ("" for none);
 *  - for cuda, the CUDA driver library is loaded (its directory is allowed
 *    below, wherever it is) and the driver's own compute cache
 *    (~/.nv/ComputeCache) moved into the JIT cache directory
 *    (CUDA_CACHE_PATH=<jit>/cuda), or turned off without one
 *    (CUDA_CACHE_DISABLE=1); an operator's CUDA_CACHE_PATH or
 *    CUDA_CACHE_DISABLE stays;
 *  - no_new_privs;
 *  - Landlock (the kernel's newest ABI; none on kernels without it, which
 *    is logged and not an error): the file system is closed but for
 *    reading and running /usr /lib /lib64 /lib32 /bin /sbin /etc /opt, the
 *    executable's and the CUDA driver's directories; reading /sys;
 *    reading and writing files under /proc (the driver names its threads
 *    in /proc/self/task/TID/comm); reading, writing and ioctls of /dev
 *    (device nodes), creating files in /dev/shm; the JIT cache directory
 *    (files and directories in it).
 *    From ABI 4 no TCP bind or connect; from ABI 6 no signals to processes
 *    outside the worker;
 *  - the seccomp filter (libseccomp), under which the system calls a GPU
 *    worker never makes fail with EPERM: tracing and reading other
 *    processes' memory (ptrace, process_vm_readv/writev, kcmp), kernel-facing
 *    calls (bpf, perf_event_open, userfaultfd, modules, kexec, keyrings),
 *    mounts and namespaces, the clock and host settings, and execve;
 *  - the self-check: GL_WORKER_PROBE_PATH must not open. One line at info
 *    level says what is in force ("sandbox: user nobody (uid 65534),
 *    no_new_privs, seccomp, landlock ABI 6, ...: /var/lib/gpuleased refused
 *    (EACCES)").
 * 0, or -1 with err: the worker must not serve then. */
int gl_worker_confine(const char *jit_dir, bool cuda, char *jit_out, size_t jit_len, char *err,
                      size_t errlen);

/* True when the seccomp filter is in force in this process: a refused call
 * (perf_event_open with a NULL attribute, otherwise EFAULT) fails with
 * EPERM, and no_new_privs is set. */
int gl_worker_sandbox_active(void);

/* Whether the worker's seccomp filter allows the system call `name`
 * (libseccomp's name, e.g. "ioctl"): 1 allowed, 0 refused. For the GPU
 * check's census of what workers call (tests/gpu/syscall_census.c). */
int gl_worker_seccomp_allows(const char *name);

#endif
