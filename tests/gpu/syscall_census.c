/*
 * syscall_census.c - which system calls gpulease's workers make: runs a
 * command under ptrace, following every fork, clone and exec, and counts
 * the system calls of the processes whose command line holds "--worker"
 * (gpuleased's workers), by name (libseccomp's table). It is how the
 * worker's seccomp allow-list (src/worker/sandbox.c) is checked against
 * what the CUDA driver really calls on a GPU node:
 *
 *   gl_syscall_census OUT -- COMMAND ARGS...
 *
 * OUT gets a line per system call: "name count", and "REFUSED name count"
 * for each one the worker's seccomp filter does not allow (gl_worker_
 * seccomp_allows) but perf_event_open, which the sandbox's self-check
 * calls to see it refused. Exits with the command's status, or 3 when a
 * refused call was made. A tool the GPU check runs (tests/gpu/check.sh).
 */
#include <errno.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "worker/sandbox.h"

#define MAX_NR 1024
#define MAX_TIDS 65536

static unsigned long counts[MAX_NR];
static signed char is_worker[MAX_TIDS]; /* 0 unknown, 1 yes, -1 no */
static bool in_call[MAX_TIDS];
static pid_t tgid_of[MAX_TIDS];         /* 0 unknown */
static bool filtered[MAX_TIDS];         /* by tgid: its seccomp filter is loaded */

/* The process (thread group) of thread tid. */
static pid_t tgid(pid_t tid) {
  if (tgid_of[tid]) return tgid_of[tid];
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)tid);
  FILE *f = fopen(path, "r");
  pid_t g = tid;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "Tgid:", 5)) g = (pid_t)atoi(line + 5);
  if (f) fclose(f);
  return tgid_of[tid] = g > 0 && g < MAX_TIDS ? g : tid;
}

static bool worker_pid(pid_t tid) {
  if (tid <= 0 || tid >= MAX_TIDS) return false;
  if (is_worker[tid]) return is_worker[tid] > 0;
  char path[64], buf[4096];
  snprintf(path, sizeof path, "/proc/%d/cmdline", (int)tid);
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f) fclose(f);
  bool w = false;
  for (size_t i = 0; i + 8 <= n; i++)
    if (!memcmp(buf + i, "--worker", 8) && (i + 8 == n || buf[i + 8] == 0)) w = true;
  is_worker[tid] = w ? 1 : -1;
  return w;
}

int main(int argc, char **argv) {
  if (argc < 4 || strcmp(argv[2], "--")) {
    fprintf(stderr, "usage: %s OUT -- COMMAND ARGS...\n", argv[0]);
    return 2;
  }
  pid_t child = fork();
  if (child == 0) {
    ptrace(PTRACE_TRACEME, 0, 0, 0);
    raise(SIGSTOP);
    execvp(argv[3], argv + 3);
    _exit(127);
  }
  int st;
  waitpid(child, &st, 0);
  ptrace(PTRACE_SETOPTIONS, child, 0,
         PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
             PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL);
  ptrace(PTRACE_SYSCALL, child, 0, 0);
  int code = 0;
  for (;;) {
    pid_t tid = waitpid(-1, &st, __WALL);
    if (tid < 0) break;
    if (WIFEXITED(st) || WIFSIGNALED(st)) {
      if (tid == child) code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      if (tid > 0 && tid < MAX_TIDS) {
        if (tgid_of[tid] == tid) filtered[tid] = false;
        is_worker[tid] = 0, in_call[tid] = false, tgid_of[tid] = 0;
      }
      continue;
    }
    if (!WIFSTOPPED(st)) continue;
    int sig = WSTOPSIG(st), deliver = 0;
    if (sig == (SIGTRAP | 0x80)) {
      if (tid < MAX_TIDS) {
        in_call[tid] = !in_call[tid];
        if (in_call[tid] && worker_pid(tid)) {
          struct user_regs_struct r;
          pid_t g = tgid(tid);
          /* Only what runs under the filter: the calls after the worker
           * loaded it (its sandbox set-up before that is not filtered). */
          if (ptrace(PTRACE_GETREGS, tid, 0, &r) == 0 && r.orig_rax < MAX_NR) {
            if (filtered[g]) counts[r.orig_rax]++;
            else if ((long)r.orig_rax == SCMP_SYS(seccomp)) filtered[g] = true;
          }
        }
      }
    } else if (sig == SIGTRAP) {
      int ev = st >> 16;
      if (ev == PTRACE_EVENT_EXEC && tid < MAX_TIDS) is_worker[tid] = 0; /* a new command line */
    } else if (sig != SIGSTOP || (st >> 16) != 0) {
      deliver = (st >> 16) == PTRACE_EVENT_STOP ? 0 : sig;
    }
    ptrace(PTRACE_SYSCALL, tid, 0, deliver);
  }
  FILE *out = fopen(argv[1], "w");
  if (!out) return 1;
  int refused = 0;
  for (int nr = 0; nr < MAX_NR; nr++) {
    if (!counts[nr]) continue;
    char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    bool ok = name && (gl_worker_seccomp_allows(name) || !strcmp(name, "perf_event_open"));
    fprintf(out, "%s%s %lu\n", ok ? "" : "REFUSED ", name ? name : "?", counts[nr]);
    refused += !ok;
    free(name);
  }
  fclose(out);
  return code ? code : refused ? 3 : 0;
}
