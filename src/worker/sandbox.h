/*
 * sandbox.h - what a worker process gives up before it serves a lease.
 */
#ifndef GL_WORKER_SANDBOX_H
#define GL_WORKER_SANDBOX_H

#include <stddef.h>

/* Confines the calling process (a worker, before it starts any thread or
 * opens the device): no new privileges (prctl PR_SET_NO_NEW_PRIVS), no
 * core dumps (RLIMIT_CORE 0: a crash does not write a tenant's memory to
 * disk), files of at most 4 GiB (RLIMIT_FSIZE), and a seccomp filter
 * (libseccomp) under which the system calls a GPU worker never makes fail
 * with EPERM: tracing and reading other processes' memory (ptrace,
 * process_vm_readv/writev, kcmp), kernel-facing calls (bpf,
 * perf_event_open, userfaultfd, modules, kexec, keyrings), mounts and
 * namespaces, the clock and host settings, and execve. Everything the CUDA
 * driver uses (device ioctls, mmap, threads, files) stays allowed. Returns
 * the number of calls refused, or -1 with the reason in err (nothing is
 * half-applied but the earlier steps). */
int gl_worker_sandbox(char *err, size_t errlen);

/* True when the filter is in force in this process: a refused call
 * (perf_event_open with a NULL attribute, otherwise EFAULT) fails with
 * EPERM, and no_new_privs is set. */
int gl_worker_sandbox_active(void);

#endif
