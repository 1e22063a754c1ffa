/*
 * cmd_exec.c - `gpulease exec [lease options] -- COMMAND [ARGS...]`: run an
 * unmodified program with gpulease's CUDA driver shim as its libcuda.so.1
 * and a lease of its own.
 *
 * exec leases a GPU as `lease alloc` does, keeps the lease alive with a
 * renewer thread while the program runs, and starts COMMAND (PATH lookup)
 * with the shim's directory first in LD_LIBRARY_PATH and the lease and the
 * connection in its environment, which the shim reads at cuInit
 * (docs/cuda-driver.md):
 *
 *   GPULEASE_ADDR        the daemon's address (--addr, or the library's default)
 *   GPULEASE_LEASE       the lease id, decimal
 *   GPULEASE_SECRET      the lease's secret, 80 hex digits (never on a command line)
 *   GPULEASE_CA, GPULEASE_PIN_SHA256, GPULEASE_INSECURE=1, GPULEASE_CERT,
 *   GPULEASE_KEY, GPULEASE_TOKEN, GPULEASE_TIMEOUT_MS
 *                        each only when its option was given (files as
 *                        absolute paths), else removed from the environment
 *   GPULEASE_CUDA_SHIM   the shim's full path; NUMBA_CUDA_DRIVER too, unless set
 *
 * The shim's directory is $GPULEASE_CUDA_LIBDIR, else the installed one
 * (GL_CLI_SHIM_REL_DIR from the executable's directory), else, for the
 * gpulease of the build tree only, the build tree's (GL_CLI_SHIM_BUILD_DIR).
 *
 * SIGINT, SIGTERM, SIGHUP and SIGQUIT are passed on to the program; when it
 * ends, the lease is freed and exec exits with its status (128+N for a
 * program killed by signal N). A command that cannot be found exits 127,
 * one that cannot be run 126, as in the shell.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"

extern char **environ;

enum { EXIT_CANNOT_RUN = 126, EXIT_NOT_FOUND = 127 };

#define SHIM_NAME "libcuda.so.1"

/* ------------------------------------------------------------------------
 * Where the shim is
 * ---------------------------------------------------------------------- */

/* 0 when dir holds a readable SHIM_NAME. */
static int has_shim(const char *dir) {
  char path[PATH_MAX];
  if ((size_t)snprintf(path, sizeof path, "%s/" SHIM_NAME, dir) >= sizeof path) return -1;
  return access(path, R_OK);
}

/* The directory of the running executable (its real path) into dir. 0 or -1. */
static int exe_dir(char dir[PATH_MAX]) {
  char *p = realpath("/proc/self/exe", NULL);
  if (!p) return -1;
  char *slash = strrchr(p, '/');
  if (slash) *slash = '\0';
  int rc = strlen(p) < PATH_MAX ? 0 : -1;
  if (rc == 0) snprintf(dir, PATH_MAX, "%s", p);
  free(p);
  return rc;
}

/* Finds the shim's directory (see the top of the file) into dir. EXIT_OK,
 * or EXIT_FAILED with what was tried on stderr. */
static int find_shim_dir(char dir[PATH_MAX]) {
  const char *env = getenv("GPULEASE_CUDA_LIBDIR");
  if (env && *env) {
    char *real = realpath(env, NULL);
    int ok = real && strlen(real) < PATH_MAX && has_shim(real) == 0;
    if (ok) snprintf(dir, PATH_MAX, "%s", real);
    free(real);
    if (ok) return EXIT_OK;
    fprintf(stderr, "gpulease exec: no " SHIM_NAME " in $GPULEASE_CUDA_LIBDIR (%s)\n", env);
    return EXIT_FAILED;
  }
  char exe[PATH_MAX], tried[2 * PATH_MAX + 64] = "";
  if (exe_dir(exe) != 0) {
    fprintf(stderr, "gpulease exec: cannot find the gpulease executable's directory: %s\n",
            strerror(errno));
    return EXIT_FAILED;
  }
  char inst[PATH_MAX + sizeof GL_CLI_SHIM_REL_DIR + 1];
  snprintf(inst, sizeof inst, "%s/%s", exe, GL_CLI_SHIM_REL_DIR);
  char *real = realpath(inst, NULL);
  int ok = real && strlen(real) < PATH_MAX && has_shim(real) == 0;
  if (ok) snprintf(dir, PATH_MAX, "%s", real);
  free(real);
  if (ok) return EXIT_OK;
  snprintf(tried, sizeof tried, "%s", inst);
#ifdef GL_CLI_SHIM_BUILD_DIR
  /* The build tree's shim, for the build tree's gpulease only: an installed
   * copy never reaches into the tree it was built in. */
  char *build_cli = realpath(GL_CLI_BUILD_DIR, NULL);
  bool in_tree = build_cli && strcmp(build_cli, exe) == 0;
  free(build_cli);
  if (in_tree) {
    if (has_shim(GL_CLI_SHIM_BUILD_DIR) == 0) {
      snprintf(dir, PATH_MAX, "%s", GL_CLI_SHIM_BUILD_DIR);
      return EXIT_OK;
    }
    snprintf(tried + strlen(tried), sizeof tried - strlen(tried), " and %s",
             GL_CLI_SHIM_BUILD_DIR);
  }
#endif
  fprintf(stderr,
          "gpulease exec: the CUDA driver shim " SHIM_NAME " is not installed: looked in %s "
          "(set $GPULEASE_CUDA_LIBDIR to its directory)\n",
          tried);
  return EXIT_FAILED;
}

/* ------------------------------------------------------------------------
 * The program's environment
 * ---------------------------------------------------------------------- */

/* Every variable exec sets or removes; the parent's values of these never
 * reach the program (NUMBA_CUDA_DRIVER is kept when set). */
static const char *const owned_vars[] = {
    "GPULEASE_ADDR", "GPULEASE_LEASE", "GPULEASE_SECRET", "GPULEASE_CA", "GPULEASE_PIN_SHA256",
    "GPULEASE_INSECURE", "GPULEASE_CERT", "GPULEASE_KEY", "GPULEASE_TOKEN", "GPULEASE_TIMEOUT_MS",
    "GPULEASE_CUDA_SHIM", "LD_LIBRARY_PATH",
};

typedef struct {
  char **v; /* NULL-terminated; the strings we made are owned by made[] */
  size_t n, cap;
  char **made;
  size_t nmade;
} env_list;

static bool owned(const char *entry) {
  for (size_t i = 0; i < sizeof owned_vars / sizeof owned_vars[0]; i++) {
    size_t l = strlen(owned_vars[i]);
    if (strncmp(entry, owned_vars[i], l) == 0 && entry[l] == '=') return true;
  }
  return false;
}

/* Appends NAME=VALUE (copied). 0 or -1 (no memory). */
static int env_put(env_list *e, const char *name, const char *value) {
  size_t l = strlen(name) + strlen(value) + 2;
  char *s = malloc(l);
  if (!s) return -1;
  snprintf(s, l, "%s=%s", name, value);
  e->made[e->nmade++] = s;
  e->v[e->n++] = s;
  e->v[e->n] = NULL;
  return 0;
}

static void env_free(env_list *e) {
  for (size_t i = 0; i < e->nmade; i++) {
    explicit_bzero(e->made[i], strlen(e->made[i])); /* one of them is the secret */
    free(e->made[i]);
  }
  free(e->made);
  free(e->v);
}

/* A file option's absolute path into out. 0, or -1 with the reason printed. */
static int abs_path(const char *opt, const char *file, char **out) {
  *out = realpath(file, NULL);
  if (*out) return 0;
  fprintf(stderr, "gpulease exec: %s %s: %s\n", opt, file, strerror(errno));
  return -1;
}

/* The program's environment: the parent's without owned_vars, then exec's
 * own. EXIT_OK or EXIT_FAILED (reported). */
static int build_env(const gl_cli *cli, const gpulease_lease *l, const char *shim_dir,
                     env_list *e) {
  size_t parent = 0;
  while (environ[parent]) parent++;
  e->cap = parent + 32;
  e->v = calloc(e->cap + 1, sizeof *e->v);
  e->made = calloc(32, sizeof *e->made);
  e->n = e->nmade = 0;
  if (!e->v || !e->made) goto nomem;
  for (size_t i = 0; i < parent; i++)
    if (!owned(environ[i])) e->v[e->n++] = environ[i];

  gpulease_connect_options o;
  cli_connect_options(cli, &o);
  char num[32], hex[2 * GPULEASE_SECRET_BYTES + 1], shim[PATH_MAX + sizeof SHIM_NAME + 1];
  if (env_put(e, "GPULEASE_ADDR", o.addr)) goto nomem;
  snprintf(num, sizeof num, "%" PRIu64, l->id);
  if (env_put(e, "GPULEASE_LEASE", num)) goto nomem;
  gpulease_secret_to_hex(l->secret, hex);
  int rc = env_put(e, "GPULEASE_SECRET", hex);
  memset(hex, 0, sizeof hex);
  if (rc) goto nomem;
  const struct { const char *opt, *var, *file; } files[] = {
      {"--ca-file", "GPULEASE_CA", cli->ca_file},
      {"--cert", "GPULEASE_CERT", cli->cert_file},
      {"--key", "GPULEASE_KEY", cli->key_file},
  };
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    if (!files[i].file) continue;
    char *abs;
    if (abs_path(files[i].opt, files[i].file, &abs) != 0) return EXIT_FAILED;
    rc = env_put(e, files[i].var, abs);
    free(abs);
    if (rc) goto nomem;
  }
  if (cli->pin_sha256 && env_put(e, "GPULEASE_PIN_SHA256", cli->pin_sha256)) goto nomem;
  if (cli->insecure && env_put(e, "GPULEASE_INSECURE", "1")) goto nomem;
  if (cli->bearer_token && env_put(e, "GPULEASE_TOKEN", cli->bearer_token)) goto nomem;
  if (cli->timeout_ms) {
    snprintf(num, sizeof num, "%" PRIu32, cli->timeout_ms);
    if (env_put(e, "GPULEASE_TIMEOUT_MS", num)) goto nomem;
  }
  const char *ld = getenv("LD_LIBRARY_PATH");
  if (ld && *ld) {
    size_t n = strlen(shim_dir) + strlen(ld) + 2;
    char *s = malloc(n);
    if (!s) goto nomem;
    snprintf(s, n, "%s:%s", shim_dir, ld);
    rc = env_put(e, "LD_LIBRARY_PATH", s);
    free(s);
    if (rc) goto nomem;
  } else if (env_put(e, "LD_LIBRARY_PATH", shim_dir)) {
    goto nomem;
  }
  snprintf(shim, sizeof shim, "%s/" SHIM_NAME, shim_dir);
  if (env_put(e, "GPULEASE_CUDA_SHIM", shim)) goto nomem;
  if (!getenv("NUMBA_CUDA_DRIVER") && env_put(e, "NUMBA_CUDA_DRIVER", shim)) goto nomem;
  return EXIT_OK;
nomem:
  fprintf(stderr, "gpulease exec: out of memory\n");
  return EXIT_FAILED;
}

/* ------------------------------------------------------------------------
 * Signals
 * ---------------------------------------------------------------------- */

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define NFORWARDED (sizeof forwarded / sizeof forwarded[0])

static _Atomic pid_t child_pid;         /* 0 until the program runs */
static volatile sig_atomic_t early_sig; /* a signal that came before it ran */

static void on_signal(int sig, siginfo_t *info, void *uctx) {
  (void)uctx;
  pid_t pid = atomic_load(&child_pid);
  if (pid <= 0) {
    early_sig = sig;
    return;
  }
  /* The terminal sends its signals (Ctrl-C, Ctrl-\, hangup) to the whole
   * foreground process group, the program included: it has this one. */
  if (info && info->si_code == SI_KERNEL) return;
  int saved = errno;
  kill(pid, sig);
  errno = saved;
}

/* Catches the forwarded signals (those not ignored when exec started: a
 * program under nohup keeps SIGHUP ignored), keeping their old actions. */
static void catch_signals(struct sigaction old[NFORWARDED]) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < NFORWARDED; i++) {
    sigaction(forwarded[i], NULL, &old[i]);
    if (old[i].sa_handler != SIG_IGN) sigaction(forwarded[i], &sa, NULL);
  }
}

static void restore_signals(const struct sigaction old[NFORWARDED]) {
  for (size_t i = 0; i < NFORWARDED; i++) sigaction(forwarded[i], &old[i], NULL);
}

/* ------------------------------------------------------------------------
 * Running the program
 * ---------------------------------------------------------------------- */

static void on_lease_lost(const gpulease_lease *l, gpulease_status st, const char *message,
                          void *user) {
  (void)l;
  (void)user;
  fprintf(stderr, "gpulease exec: the lease was lost: %s: %s\n", gpulease_status_name(st),
          message);
}

/* Forks and runs argv with envp; waits for it. Returns the exit status the
 * shell would give: the program's, 128+N when killed by signal N, 127 or
 * 126 when it could not be started (reported). */
static int run_program(char **argv, char **envp, const struct sigaction old[NFORWARDED]) {
  int pfd[2]; /* the child's execvpe errno, if it fails; closed by a good exec */
  if (pipe2(pfd, O_CLOEXEC) != 0) {
    fprintf(stderr, "gpulease exec: pipe: %s\n", strerror(errno));
    return EXIT_FAILED;
  }
  sigset_t block, saved;
  sigemptyset(&block);
  for (size_t i = 0; i < NFORWARDED; i++) sigaddset(&block, forwarded[i]);
  pthread_sigmask(SIG_BLOCK, &block, &saved);
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    for (size_t i = 0; i < NFORWARDED; i++) sigaction(forwarded[i], &old[i], NULL);
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
    execvpe(argv[0], argv, envp);
    int e = errno;
    ssize_t w = write(pfd[1], &e, sizeof e);
    (void)w;
    _exit(e == ENOENT || e == ENOTDIR ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
  }
  int fork_errno = errno;
  if (pid > 0) atomic_store(&child_pid, pid);
  pthread_sigmask(SIG_SETMASK, &saved, NULL);
  close(pfd[1]);
  if (pid < 0) {
    close(pfd[0]);
    fprintf(stderr, "gpulease exec: fork: %s\n", strerror(fork_errno));
    return EXIT_FAILED;
  }
  /* A signal caught while the child was being made went nowhere: pass it on. */
  int early = early_sig;
  if (early) kill(pid, early);

  int exec_errno = 0;
  ssize_t r;
  do r = read(pfd[0], &exec_errno, sizeof exec_errno);
  while (r < 0 && errno == EINTR);
  close(pfd[0]);
  if (r != (ssize_t)sizeof exec_errno) exec_errno = 0;

  int status;
  pid_t w;
  do w = waitpid(pid, &status, 0);
  while (w < 0 && errno == EINTR);
  atomic_store(&child_pid, 0);
  if (w < 0) {
    fprintf(stderr, "gpulease exec: waitpid: %s\n", strerror(errno));
    return EXIT_FAILED;
  }
  if (exec_errno) {
    bool missing = exec_errno == ENOENT || exec_errno == ENOTDIR;
    fprintf(stderr, "gpulease exec: %s: %s\n", argv[0],
            missing && !strchr(argv[0], '/') ? "command not found" : strerror(exec_errno));
    return missing ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return EXIT_FAILED;
}

static void print_started(const gpulease_lease *l, const char *cmd) {
  const uint64_t mib = 1ull << 20;
  char size[48];
  if (l->vram_bytes % mib == 0)
    snprintf(size, sizeof size, "%" PRIu64 " MiB", l->vram_bytes / mib);
  else
    snprintf(size, sizeof size, "%.2f MiB", (double)l->vram_bytes / (double)mib);
  fprintf(stderr, "gpulease exec: lease %" PRIu64 " (%s, %s, GPU %" PRIu32 ") for %s\n", l->id,
          size, gpulease_lease_class_name(l->lease_class), l->gpu_index, cmd);
}

/* Frees the lease on c, connecting again when the connection went idle
 * while the program ran. Reports a failure; the exit status stays. */
static void free_lease(gpulease_client *c, const gpulease_lease *l) {
  gpulease_error err;
  gpulease_status st = gpulease_lease_free(c, l, &err);
  if (st == GPULEASE_DISCONNECTED || st == GPULEASE_TIMEOUT) {
    gpulease_error rerr;
    if (gpulease_client_reconnect(c, &rerr) == GPULEASE_OK) st = gpulease_lease_free(c, l, &err);
  }
  if (st != GPULEASE_OK)
    fprintf(stderr, "gpulease exec: freeing lease %" PRIu64 " failed: %s: %s\n", l->id,
            gpulease_status_name(st), err.message);
}

int cmd_exec(gl_cli *cli) {
  int rc;
  if ((rc = cli_only(cli, OPT_VRAM | OPT_TTL | OPT_GPU | OPT_CLASS | OPT_PRINTF_FIFO |
                              OPT_MALLOC_HEAP, "exec")))
    return rc;
  if (cli->json) return cli_usage_error("--json does not apply to 'exec'");
  if (cli->dashdash < 0 && cli->nwords > 1)
    return cli_usage_error("exec: '%s': the command goes after '--' (gpulease exec [options] "
                           "-- COMMAND [ARGS...])", cli->words[1]);
  if (cli->dashdash < 0 || cli->dashdash == cli->nwords)
    return cli_usage_error("exec needs a command: gpulease exec [options] -- COMMAND [ARGS...]");
  if (cli->dashdash != 1)
    return cli_usage_error("exec: '%s' before '--': the command goes after '--'",
                           cli->words[cli->dashdash > 1 ? 1 : 0]);
  if (!cli->have_vram) return cli_usage_error("exec needs --vram BYTES");
  char **argv = cli->words + cli->dashdash; /* NULL-terminated: words has argc+1 slots */
  uint32_t ttl_s = cli->have_ttl ? cli->ttl_s : 300;

  char shim_dir[PATH_MAX];
  if ((rc = find_shim_dir(shim_dir)) != EXIT_OK) return rc;

  struct sigaction old[NFORWARDED];
  atomic_store(&child_pid, 0);
  early_sig = 0;
  catch_signals(old); /* from here a signal ends exec before the program, or goes to it */

  gpulease_client *c = cli_connect(cli);
  if (!c) {
    restore_signals(old);
    return EXIT_FAILED;
  }
  gpulease_lease l;
  gpulease_error err;
  uint32_t gpu;
  gpulease_renewer *renewer = NULL;
  env_list env = {0};
  if ((rc = cli_pick_gpu(cli, c, &gpu)) != EXIT_OK) goto close;
  if (gpulease_lease_alloc_opts(c, gpu, cli->vram_bytes, ttl_s, &cli->lease_opts, &l, &err) !=
      GPULEASE_OK) {
    rc = cli_fail(cli, "lease alloc", &err);
    goto close;
  }
  if ((rc = build_env(cli, &l, shim_dir, &env)) != EXIT_OK) goto free;
  gpulease_connect_options o;
  cli_connect_options(cli, &o);
  if (gpulease_renewer_start(&o, &l, l.ttl_s, on_lease_lost, NULL, &renewer, &err) !=
      GPULEASE_OK) {
    rc = cli_fail(cli, "lease renewal", &err);
    goto free;
  }
  if (early_sig) { /* interrupted while leasing: the program never starts */
    rc = 128 + early_sig;
    goto free;
  }
  if (!cli->quiet) print_started(&l, argv[0]);
  rc = run_program(argv, env.v, old);

free:
  if (renewer) {
    gpulease_error rerr;
    bool kept = gpulease_renewer_status(renewer, &rerr) == GPULEASE_OK;
    gpulease_renewer_stop(renewer);
    if (kept) free_lease(c, &l); /* a lost lease is gone already, and was reported */
  } else {
    free_lease(c, &l);
  }
close:
  memset(&l, 0, sizeof l);
  env_free(&env);
  gpulease_client_close(c);
  restore_signals(old);
  return rc;
}
