/*
 * main.c - gpuleased: the GPU-node daemon, and (`--worker FD`, started by
 * the daemon itself, never by hand) the per-lease worker. The options are
 * options.h's; with --device cuda|emu and, for emu, --emu-vram and
 * --emu-threads a worker knows which device layer it runs.
 */
#include <limits.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend_emu.h"
#include "backend/cuda_compat.h"
#include "common/log.h"
#include "daemon/daemon.h"
#include "daemon/options.h"
#include "daemon/reload.h"
#include "worker/counters.h"
#include "worker/exit_fault.h"
#include "worker/kout.h"
#include "worker/sandbox.h"
#include "worker/worker.h"

/* Bulk messages (8 MiB transfer chunks, many in flight) pass through the
 * daemon and its workers all the time: keep freed memory for reuse rather
 * than giving it back to the kernel and faulting fresh zeroed pages in for
 * the next message (which halved a transfer's speed). What is kept is
 * bounded by the messages in flight at the busiest moment. */
static void tune_malloc(void) {
  mallopt(M_MMAP_THRESHOLD, 32 << 20); /* glibc's ceiling on 64-bit systems */
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

/* With control threads, every connection's TLS session, QUIC state and
 * request buffers are allocated on the thread that serves it. glibc would
 * give each such thread an arena of its own, and malloc_trim cannot
 * shrink the top of an arena other than the main one. Measured with 3
 * control threads (tests/e2e/test_e2e_buffered.c: 17,000 half-sent
 * requests, 92 MB at the peak, then their connections closed): 15 MB
 * left 8 s later with an arena per thread, 10 MB 3.5 s later with one
 * (the daemon started at 8 MB). So the threads share the main arena,
 * whose freed memory the daemon's trim after a peak hands back
 * (daemon.c); small blocks still come from each thread's cache without a
 * lock. MALLOC_ARENA_MAX in the environment overrides it. */
static void share_arena(const gl_daemon_config *cfg) {
  if (cfg->control_threads > 1 && !getenv("MALLOC_ARENA_MAX")) mallopt(M_ARENA_MAX, 1);
}

static int worker_main(gl_options *o) {
  gl_daemon_config *cfg = &o->cfg;
  /* Notices to systemd are the daemon's alone. */
  unsetenv("NOTIFY_SOCKET");
  gl_worker_counters_attach();
  gl_log_init("gpulease-worker", (enum gl_log_level)gl_log_level_parse(cfg->log_level));
  const char *jit_cache_dir = o->jit_cache_dir[0] ? o->jit_cache_dir : NULL;
  bool emu = o->device_given && cfg->device_mode == GL_DEVICE_EMU;
  /* nvJitLink named by gpuleased --nvjitlink: opened before the sandbox. */
  if (!emu) gl_cuda_compat_preload(getenv("GL_NVJITLINK"));
  gl_exit_fault_prepare(); /* test-only; nothing unless its variables are set */
  /* Before any thread or the device: see src/worker/sandbox.h. */
  const char *nosb = getenv("GL_WORKER_NO_SANDBOX");
  char jit_path[PATH_MAX];
  if (nosb && *nosb && strcmp(nosb, "0") != 0) {
    GL_WARN("worker: no sandbox (gpuleased --no-worker-sandbox)");
  } else {
    char why[512];
    if (gl_worker_confine(jit_cache_dir, !emu, jit_path, sizeof jit_path, why, sizeof why) != 0) {
      GL_ERROR("worker: cannot confine itself: %s", why);
      return 1;
    }
    if (jit_path[0]) jit_cache_dir = jit_path; /* maybe through a descriptor */
  }
  {
    /* Kernel printf/assert text: captured per lease, never into the log. */
    char why[256];
    if (gl_kout_capture_start(why, sizeof why) != 0)
      GL_WARN("worker: kernel output is not captured: %s", why);
  }
  if (o->visible[0]) GL_INFO("worker: bound to %s (CUDA_VISIBLE_DEVICES)", o->visible);
  gl_worker_set_jit_cache_dir(jit_cache_dir);
  gl_worker_set_seq_timeout_ms(cfg->seq_timeout_ms);
  int rc;
  if (emu) {
    gl_backend *b = gl_backend_emu_new(cfg->emu_vram_bytes, cfg->emu_threads);
    if (!b) return 1;
    rc = gl_worker_run(o->worker_fd, b);
    if (rc != GL_WORKER_EXIT_CONTEXT_LOST) b->ops->destroy(b);
  } else {
    rc = gl_worker_main(o->worker_fd);
  }
  /* Fault injection for the tests of fencing (src/daemon/fence.h): a
   * worker whose daemon let it go does not exit, as a process stuck in
   * the driver does not; only SIGKILL from outside ends it. */
  if (getenv("GL_FAULT_WORKER_KILL_IGNORED"))
    for (;;) pause();
  gl_exit_fault_delay(); /* test-only, as above (src/worker/exit_fault.h) */
  /* After a device fault the session threads may still be inside the
   * dead context: leave without running exit handlers. */
  if (rc == GL_WORKER_EXIT_CONTEXT_LOST) {
    fflush(NULL);
    _exit(rc);
  }
  return rc;
}

/* The command line as main() got it, read again at each reload. */
static int g_argc;
static char **g_argv;

/* gl_daemon_config_fn: the options again, as at start. */
static int reread_options(void *user, gl_daemon_config *out, char *err, size_t errlen) {
  (void)user;
  static gl_options o; /* large: off the stack */
  int rc = gl_options_parse(g_argc, g_argv, &o, err, errlen);
  if (rc != 0) return -1;
  *out = o.cfg;
  return 0;
}

int main(int argc, char **argv) {
  tune_malloc();
  static gl_options o;
  char err[1024];
  int rc = gl_options_parse(argc, argv, &o, err, sizeof err);
  if (rc == GL_OPTIONS_HELP) {
    gl_options_usage(stdout);
    return 0;
  }
  if (rc != 0) {
    fprintf(stderr, "gpuleased: %s\n", err);
    if (rc == GL_OPTIONS_USAGE) gl_options_usage(stderr);
    return 2;
  }
  if (o.check_config) {
    if (o.config_file[0]) printf("%s: OK\n", o.config_file);
    else printf("no configuration file; command line: OK\n");
    return 0;
  }
  /* The workers, this daemon's children, inherit it. */
  if (!o.worker_sandbox) setenv("GL_WORKER_NO_SANDBOX", "1", 1);
  if (o.worker_fd >= 0) return worker_main(&o);

  gl_daemon_config *cfg = &o.cfg;
  share_arena(cfg); /* before any thread starts */
  gl_log_init("gpuleased", (enum gl_log_level)gl_log_level_parse(cfg->log_level));
  /* The workers inherit the environment: each loads nvJitLink from there
   * before its sandbox closes the file system (src/backend/cuda_compat.h). */
  if (o.nvjitlink[0]) setenv("GL_NVJITLINK", o.nvjitlink, 1);
  {
    bool worker_sandbox = o.worker_sandbox;
    const char *nosb = getenv("GL_WORKER_NO_SANDBOX"); /* the flag's, or inherited */
    if (nosb && *nosb && strcmp(nosb, "0") != 0) worker_sandbox = false;
    char why[512];
    if (gl_worker_user_setup(o.worker_user_given ? o.worker_user : NULL, worker_sandbox,
                             cfg->state_dir, why, sizeof why) != 0) {
      GL_ERROR("%s", why);
      return 2;
    }
  }
  if (!o.local_socket_given && !cfg->local_socket[0])
    GL_WARN("no local socket: %s/gpuleased.sock is too long a path (use --local-socket)",
            cfg->state_dir);
  ssize_t n = readlink("/proc/self/exe", cfg->worker_exe, sizeof cfg->worker_exe - 1);
  if (n <= 0) {
    GL_ERROR("cannot find my own executable (/proc/self/exe)");
    return 1;
  }
  cfg->worker_exe[n] = 0;

  static gl_daemon d;
  if (gl_daemon_start(&d, cfg, err, sizeof err) != 0) {
    GL_ERROR("%s", err);
    gl_daemon_stop(&d);
    return 1;
  }
  g_argc = argc;
  g_argv = argv;
  gl_daemon_set_reload(&d, reread_options, NULL);
  gl_daemon_run(&d);
  gl_daemon_stop(&d);
  GL_INFO("stopped");
  return 0;
}
