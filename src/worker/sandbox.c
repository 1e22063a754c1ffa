/*
 * sandbox.c - see sandbox.h. The filter is a deny-list on purpose: the
 * CUDA driver's own system calls (ioctls on /dev/nvidia*, mmap of device
 * memory, threads, eventfds, files under /proc, /sys and the driver's
 * libraries) vary between driver versions, while the calls refused here
 * are ones a process that runs kernels for a tenant has no business
 * making. docs/security.md says what this does and does not stop.
 */
#include "worker/sandbox.h"

#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Under AddressSanitizer, LeakSanitizer's check at exit stops the
 * process's threads with ptrace: the sanitizer builds (tests only) keep it. */
#if defined(__SANITIZE_ADDRESS__)
#define GL_SANDBOX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GL_SANDBOX_ASAN 1
#endif
#endif

/* Refused with EPERM; names unknown on this architecture are skipped. */
static const char *const k_refused[] = {
    /* other processes */
#ifndef GL_SANDBOX_ASAN
    "ptrace",
#endif
    "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    /* the kernel's own interfaces */
    "bpf", "perf_event_open", "userfaultfd", "init_module", "finit_module", "delete_module",
    "kexec_load", "kexec_file_load", "keyctl", "add_key", "request_key", "lookup_dcookie",
    "uselib", "syslog", "iopl", "ioperm", "quotactl", "fanotify_init", "open_by_handle_at",
    "name_to_handle_at",
    /* mounts, roots and namespaces */
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "fsopen", "fsmount",
    "fsconfig", "move_mount", "open_tree", "mount_setattr",
    /* the host's settings */
    "reboot", "swapon", "swapoff", "acct", "settimeofday", "clock_settime", "clock_adjtime",
    "adjtimex", "sethostname", "setdomainname", "vhangup",
    /* new programs */
    "execve", "execveat",
};

int gl_worker_sandbox(char *err, size_t errlen) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    snprintf(err, errlen, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
    return -1;
  }
  struct rlimit core = {0, 0};
  struct rlimit fsize = {4ull << 30, 4ull << 30};
  struct rlimit cur;
  if (getrlimit(RLIMIT_FSIZE, &cur) == 0 && cur.rlim_max != RLIM_INFINITY &&
      cur.rlim_max < fsize.rlim_max)
    fsize = cur;
  if (setrlimit(RLIMIT_CORE, &core) != 0 || setrlimit(RLIMIT_FSIZE, &fsize) != 0) {
    snprintf(err, errlen, "setrlimit: %s", strerror(errno));
    return -1;
  }
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) {
    snprintf(err, errlen, "seccomp_init failed");
    return -1;
  }
  int refused = 0, rc = 0;
  for (size_t i = 0; i < sizeof k_refused / sizeof k_refused[0] && rc == 0; i++) {
    int nr = seccomp_syscall_resolve_name(k_refused[i]);
    if (nr == __NR_SCMP_ERROR) continue;
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
    if (rc == 0) refused++;
  }
  /* Every thread of the process, should one exist already. */
  if (rc == 0) rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
  if (rc == 0) rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0) {
    snprintf(err, errlen, "seccomp filter: %s", strerror(-rc));
    return -1;
  }
  return refused;
}

int gl_worker_sandbox_active(void) {
  if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) return 0;
  long r = syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0);
  return r == -1 && errno == EPERM;
}
