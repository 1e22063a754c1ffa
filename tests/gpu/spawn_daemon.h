/*
 * spawn_daemon.h - the GPU check programs' gpuleased (multigpu_check.c,
 * tmap_check.c): a child process with its stderr appended to a log file,
 * waited for until its ready file names its port and certificate
 * fingerprint. Every function is static.
 */
#ifndef GL_TESTS_GPU_SPAWN_DAEMON_H
#define GL_TESTS_GPU_SPAWN_DAEMON_H

#include <fcntl.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs argv (argv[0] the daemon's path; it must write `ready`) with stderr
 * appended to logf, and waits up to 60 s for the ready file. 0 with *pid,
 * addr ("127.0.0.1:PORT") and fp (the SHA-256 fingerprint, 80 bytes);
 * -1 when it exited or never got ready (*pid is still set, for the caller
 * to reap). */
static int gl_spawn_daemon(const char *const *argv, const char *ready, const char *logf,
                           pid_t *pid, char *addr, size_t addrlen, char fp[80]) {
  pid_t p = fork();
  if (p == 0) {
    int fd = open(logf, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) dup2(fd, 2);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  *pid = p;
  if (p < 0) return -1;
  for (int i = 0; i < 1200; i++) {
    FILE *f = fopen(ready, "r");
    unsigned port;
    if (f && fscanf(f, "%u %79s", &port, fp) == 2) {
      fclose(f);
      snprintf(addr, addrlen, "127.0.0.1:%u", port);
      return 0;
    }
    if (f) fclose(f);
    int st;
    if (waitpid(p, &st, WNOHANG) == p) break;
    usleep(50000);
  }
  return -1;
}

#endif /* GL_TESTS_GPU_SPAWN_DAEMON_H */
