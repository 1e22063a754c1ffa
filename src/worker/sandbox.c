/*
 * sandbox.c - see sandbox.h.
 *
 * The seccomp filter is an allow-list: the system calls a worker and the
 * CUDA driver under it make (file and memory calls, threads, futexes,
 * polling, the socket to the daemon, ioctls on /dev/nvidia*), checked
 * against what workers really call on a GPU node (tests/gpu/
 * syscall_census.c, run by the GPU check); every other call fails with
 * EPERM, those named in k_refused among them. The file system
 * is closed by Landlock (raw system calls: there is no library for it in
 * the distributions we build on), down to what the driver reads and the
 * device nodes it opens. docs/security.md says what this does and does
 * not stop.
 */
#include "worker/sandbox.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <link.h>
#include <pwd.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<linux/landlock.h>)
#include <linux/landlock.h>
#endif
#endif

#include "common/log.h"

/* Under AddressSanitizer, LeakSanitizer's check at exit stops the
 * process's threads with ptrace: the sanitizer builds (tests only) keep it. */
#if defined(__SANITIZE_ADDRESS__)
#define GL_SANDBOX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GL_SANDBOX_ASAN 1
#endif
#endif

/* ---- Landlock's ABI (include/uapi/linux/landlock.h) ---------------------
 * The kernel's ABI is stable; a header older than the running kernel lacks
 * the newer names, so they are spelled out here. */
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef LANDLOCK_ACCESS_FS_EXECUTE /* ABI 1 */
#define LANDLOCK_ACCESS_FS_EXECUTE (1ULL << 0)
#define LANDLOCK_ACCESS_FS_WRITE_FILE (1ULL << 1)
#define LANDLOCK_ACCESS_FS_READ_FILE (1ULL << 2)
#define LANDLOCK_ACCESS_FS_READ_DIR (1ULL << 3)
#define LANDLOCK_ACCESS_FS_REMOVE_DIR (1ULL << 4)
#define LANDLOCK_ACCESS_FS_REMOVE_FILE (1ULL << 5)
#define LANDLOCK_ACCESS_FS_MAKE_CHAR (1ULL << 6)
#define LANDLOCK_ACCESS_FS_MAKE_DIR (1ULL << 7)
#define LANDLOCK_ACCESS_FS_MAKE_REG (1ULL << 8)
#define LANDLOCK_ACCESS_FS_MAKE_SOCK (1ULL << 9)
#define LANDLOCK_ACCESS_FS_MAKE_FIFO (1ULL << 10)
#define LANDLOCK_ACCESS_FS_MAKE_BLOCK (1ULL << 11)
#define LANDLOCK_ACCESS_FS_MAKE_SYM (1ULL << 12)
#endif
#ifndef LANDLOCK_ACCESS_FS_REFER /* ABI 2 */
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE /* ABI 3 */
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV /* ABI 5 */
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP /* ABI 4 */
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL /* ABI 6 */
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif
#define GL_LL_RULE_PATH_BENEATH 1 /* enum landlock_rule_type */

/* struct landlock_ruleset_attr as of ABI 6; the size passed to the kernel
 * covers the fields its ABI knows (an older kernel refuses a larger one
 * only when the extra fields are not zero). */
typedef struct gl_ll_ruleset_attr {
  uint64_t handled_access_fs;  /* ABI 1 */
  uint64_t handled_access_net; /* ABI 4 */
  uint64_t scoped;             /* ABI 6 */
} gl_ll_ruleset_attr;

/* struct landlock_path_beneath_attr (packed: 12 bytes). */
typedef struct __attribute__((packed)) gl_ll_path_beneath {
  uint64_t allowed_access;
  int32_t parent_fd;
} gl_ll_path_beneath;

#define LL_FS_ABI1                                                                            \
  (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE | \
   LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR |                               \
   LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |                             \
   LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |  \
   LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM)
/* The rights that apply to a file (the others only to a directory). */
#define LL_FILE_RIGHTS                                                                        \
  (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE | \
   LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)
#define LL_READ (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define LL_RX (LL_READ | LANDLOCK_ACCESS_FS_EXECUTE)
/* Device nodes: open, read, write, ioctl; nothing made or removed. */
#define LL_DEV (LL_READ | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |         \
                LANDLOCK_ACCESS_FS_IOCTL_DEV)
/* A directory the worker keeps files in (/dev/shm, the JIT cache). */
#define LL_FILES (LL_READ | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |       \
                  LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_REMOVE_FILE)

/* Read (and run) only: the system's programs, libraries and settings. A
 * path this system lacks is skipped. */
static const char *const k_read_exec[] = {"/usr", "/lib", "/lib64", "/lib32", "/bin",
                                          "/sbin", "/etc", "/opt"};

static long ll_create_ruleset(const void *attr, size_t size, uint32_t flags) {
  return syscall(__NR_landlock_create_ruleset, attr, size, flags);
}

static long ll_add_rule(int ruleset, const gl_ll_path_beneath *pb) {
  return syscall(__NR_landlock_add_rule, ruleset, GL_LL_RULE_PATH_BENEATH, pb, 0);
}

static long ll_restrict_self(int ruleset) {
  return syscall(__NR_landlock_restrict_self, ruleset, 0);
}

/* ---- small helpers ------------------------------------------------------ */

static const char *errno_name(int e) {
  switch (e) {
  case 0: return "no error";
  case EACCES: return "EACCES";
  case EPERM: return "EPERM";
  case ENOENT: return "ENOENT";
  case ENOTDIR: return "ENOTDIR";
  case ENOSYS: return "ENOSYS";
  case EOPNOTSUPP: return "EOPNOTSUPP";
  default: return strerror(e);
  }
}

/* mkdir -p, mode 0700 for each directory made. 0 or -1 (errno). */
static int mkdir_p(const char *dir) {
  char p[PATH_MAX];
  if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) {
    errno = ENAMETOOLONG;
    return -1;
  }
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = 0;
    if (mkdir(p, 0700) != 0 && errno != EEXIST) return -1;
    *s = '/';
  }
  return mkdir(p, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

/* Appends a printf-formatted piece to buf (cut when full). */
static void __attribute__((format(printf, 3, 4)))
append(char *buf, size_t len, const char *fmt, ...) {
  size_t n = strlen(buf);
  if (n + 1 >= len) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, len - n, fmt, ap);
  va_end(ap);
}

/* The directory part of path (an absolute path) in out; "" when none. */
static void dir_of(const char *path, char *out, size_t len) {
  out[0] = 0;
  const char *slash = strrchr(path, '/');
  if (!slash || path[0] != '/') return;
  size_t n = slash == path ? 1 : (size_t)(slash - path);
  if (n >= len) return;
  memcpy(out, path, n);
  out[n] = 0;
}

/* ---- the daemon's side -------------------------------------------------- */

/* Gives <state_dir>/jit-cache to uid:gid: the directory, and the entries
 * a worker running as root left there (regular files with one link, taken
 * through a descriptor, so that nothing placed there can redirect the
 * chown). Problems are logged: the workers then run without the cache. */
static void give_jit_dir(const char *state_dir, uid_t uid, gid_t gid) {
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/jit-cache", state_dir) >= (int)sizeof path) return;
  if (mkdir_p(path) != 0) {
    GL_WARN("cannot create the JIT cache directory %s: %s", path, strerror(errno));
    return;
  }
  int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0 || fchown(dfd, uid, gid) != 0 || fchmod(dfd, 0700) != 0) {
    GL_WARN("cannot give the JIT cache directory %s to uid %u: %s; workers will not use it",
            path, (unsigned)uid, strerror(errno));
    if (dfd >= 0) close(dfd);
    return;
  }
  int lfd = dup(dfd);
  DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
  unsigned given = 0;
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    int fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 && st.st_uid != uid &&
        fchown(fd, uid, gid) == 0)
      given++;
    close(fd);
  }
  if (d) closedir(d);
  else if (lfd >= 0) close(lfd);
  close(dfd);
  GL_DEBUG("JIT cache %s belongs to uid %u (%u entries given)", path, (unsigned)uid, given);
}

int gl_worker_user_setup(const char *user, bool sandbox, const char *state_dir, char *err,
                         size_t errlen) {
  unsetenv("GL_WORKER_USER");
  unsetenv("GL_WORKER_PROBE_PATH");
  if (!sandbox) {
    if (user)
      GL_WARN("--worker-user %s ignored: with --no-worker-sandbox workers keep the daemon's user",
              user);
    return 0;
  }
  if (state_dir && state_dir[0] && setenv("GL_WORKER_PROBE_PATH", state_dir, 1) != 0) {
    snprintf(err, errlen, "setenv: %s", strerror(errno));
    return -1;
  }
  uid_t me = geteuid();
  if (!user && me != 0) {
    GL_DEBUG("workers run as the daemon's user (uid %u): gpuleased does not run as root, so it "
             "cannot give them a user of their own",
             (unsigned)me);
    return 0;
  }
  const char *name = user ? user : "nobody";
  struct passwd *pw = getpwnam(name);
  if (!pw) {
    snprintf(err, errlen, "--worker-user: there is no user '%s' on this system%s", name,
             user ? "" : " (the workers' default user when gpuleased runs as root; name "
                         "another with --worker-user)");
    return -1;
  }
  if (me != 0) {
    if (pw->pw_uid == me) return 0;
    snprintf(err, errlen,
             "--worker-user %s: gpuleased runs as uid %u, not as root, so it cannot start "
             "workers as another user",
             name, (unsigned)me);
    return -1;
  }
  if (pw->pw_uid == 0) {
    GL_WARN("workers run as root (--worker-user %s): only the rest of the sandbox confines them",
            name);
    return 0;
  }
  char val[256];
  if (snprintf(val, sizeof val, "%s:%u:%u", pw->pw_name, (unsigned)pw->pw_uid,
               (unsigned)pw->pw_gid) >= (int)sizeof val ||
      setenv("GL_WORKER_USER", val, 1) != 0) {
    snprintf(err, errlen, "--worker-user %s: name too long", name);
    return -1;
  }
  GL_INFO("workers run as user %s (uid %u, gid %u)", pw->pw_name, (unsigned)pw->pw_uid,
          (unsigned)pw->pw_gid);
  if (state_dir && state_dir[0]) give_jit_dir(state_dir, pw->pw_uid, pw->pw_gid);
  return 0;
}

/* ---- the worker's side: limits and user ---------------------------------- */

static int set_limits(rlim_t *nofile, char *err, size_t errlen) {
  struct rlimit core = {0, 0};
  struct rlimit fsize = {4ull << 30, 4ull << 30};
  struct rlimit files = {GL_WORKER_MAX_FILES, GL_WORKER_MAX_FILES};
  struct rlimit cur;
  if (getrlimit(RLIMIT_FSIZE, &cur) == 0 && cur.rlim_max != RLIM_INFINITY &&
      cur.rlim_max < fsize.rlim_max)
    fsize = cur;
  if (getrlimit(RLIMIT_NOFILE, &cur) == 0 && cur.rlim_max != RLIM_INFINITY &&
      cur.rlim_max < files.rlim_max)
    files.rlim_cur = files.rlim_max = cur.rlim_max;
  if (setrlimit(RLIMIT_CORE, &core) != 0 || setrlimit(RLIMIT_FSIZE, &fsize) != 0 ||
      setrlimit(RLIMIT_NOFILE, &files) != 0) {
    snprintf(err, errlen, "setrlimit: %s", strerror(errno));
    return -1;
  }
  *nofile = files.rlim_cur;
  return 0;
}

typedef struct wuser {
  char name[128];
  uid_t uid;
  gid_t gid;
} wuser;

/* GL_WORKER_USER: "NAME:UID:GID". */
static int parse_user(const char *s, wuser *u) {
  const char *c2 = strrchr(s, ':');
  if (!c2 || c2 == s) return -1;
  const char *c1 = c2 - 1;
  while (c1 > s && *c1 != ':') c1--;
  if (*c1 != ':' || c1 == s || (size_t)(c1 - s) >= sizeof u->name) return -1;
  char *end;
  errno = 0;
  unsigned long uid = strtoul(c1 + 1, &end, 10);
  if (errno || end != c2 || end == c1 + 1) return -1;
  unsigned long gid = strtoul(c2 + 1, &end, 10);
  if (errno || *end || end == c2 + 1) return -1;
  memcpy(u->name, s, (size_t)(c1 - s));
  u->name[c1 - s] = 0;
  u->uid = (uid_t)uid;
  u->gid = (gid_t)gid;
  /* (uid_t)-1 would mean "unchanged" to setresuid. */
  return (unsigned long)u->uid == uid && (unsigned long)u->gid == gid && u->uid != (uid_t)-1 &&
                 u->gid != (gid_t)-1
             ? 0
             : -1;
}

/* Becomes u for good: groups, gid, uid (real, effective and saved), then
 * checks that root cannot be had back. */
static int drop_user(const wuser *u, char *err, size_t errlen) {
  if (initgroups(u->name, u->gid) != 0) {
    int why = errno;
    if (setgroups(1, &u->gid) != 0) {
      snprintf(err, errlen, "setgroups: %s", strerror(errno));
      return -1;
    }
    GL_DEBUG("worker: initgroups(%s): %s; only group %u kept", u->name, strerror(why),
             (unsigned)u->gid);
  }
  if (setresgid(u->gid, u->gid, u->gid) != 0) {
    snprintf(err, errlen, "setresgid(%u): %s", (unsigned)u->gid, strerror(errno));
    return -1;
  }
  if (setresuid(u->uid, u->uid, u->uid) != 0) {
    snprintf(err, errlen, "setresuid(%u): %s", (unsigned)u->uid, strerror(errno));
    return -1;
  }
  uid_t r, e, s;
  gid_t gr, ge, gs;
  if (getresuid(&r, &e, &s) != 0 || r != u->uid || e != u->uid || s != u->uid ||
      getresgid(&gr, &ge, &gs) != 0 || gr != u->gid || ge != u->gid || gs != u->gid) {
    snprintf(err, errlen, "the user ids did not change to %u:%u", (unsigned)u->uid,
             (unsigned)u->gid);
    return -1;
  }
  if (u->uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) {
    snprintf(err, errlen, "became user %s but could become root again", u->name);
    return -1;
  }
  if (u->gid != 0 && (setgid(0) == 0 || setegid(0) == 0)) {
    snprintf(err, errlen, "became user %s but could take group 0 again", u->name);
    return -1;
  }
#ifdef GL_SANDBOX_ASAN
  /* The uid change made the process non-dumpable: LeakSanitizer could not
   * trace its threads. */
  prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
#endif
  return 0;
}

/* Loads the CUDA driver library (gl_cuda_load's dlopen later finds it
 * loaded) and puts the directory it came from, and that of the file it
 * links to, in dirs (up to two, "" when none). */
static void load_cuda_driver(char dirs[2][PATH_MAX]) {
  dirs[0][0] = dirs[1][0] = 0;
  void *dl = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char *why = dlerror();
    GL_DEBUG("worker: CUDA driver not loaded before the sandbox: %s", why ? why : "?");
    return;
  }
  /* Never closed: the driver does not support being unloaded. */
  struct link_map *lm = NULL;
  if (dlinfo(dl, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name || lm->l_name[0] != '/')
    return;
  dir_of(lm->l_name, dirs[0], PATH_MAX);
  char real[PATH_MAX];
  if (realpath(lm->l_name, real)) {
    dir_of(real, dirs[1], PATH_MAX);
    if (strcmp(dirs[0], dirs[1]) == 0) dirs[1][0] = 0;
  }
}

/* Threads of this process (Landlock confines only the calling one). */
static int thread_count(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return -1;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) n += de->d_name[0] != '.';
  closedir(d);
  return n;
}

/* ---- the worker's side: Landlock ----------------------------------------- */

typedef struct ll_result {
  int abi;          /* in force with this ABI; 0: not */
  int why;          /* errno when not in force */
  bool no_tcp;      /* TCP bind and connect refused (ABI 4) */
  bool no_signals;  /* signals to outside processes refused (ABI 6) */
  char allowed[2048];
} ll_result;

/* Allows `access` (masked to what the ruleset handles and, for a file, to
 * file rights) beneath the object fd refers to. */
static int ll_allow_fd(int ruleset, int fd, uint64_t access, uint64_t handled) {
  struct stat st;
  if (fstat(fd, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) access &= LL_FILE_RIGHTS;
  access &= handled;
  if (!access) return 0;
  gl_ll_path_beneath pb = {.allowed_access = access, .parent_fd = fd};
  return ll_add_rule(ruleset, &pb) == 0 ? 0 : -1;
}

/* As ll_allow_fd, by path; a path that cannot be opened is skipped. */
static int ll_allow(int ruleset, const char *path, uint64_t access, uint64_t handled,
                    const char *tag, ll_result *res) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) {
    GL_DEBUG("worker: sandbox: %s skipped: %s", path, strerror(errno));
    return 0;
  }
  int rc = ll_allow_fd(ruleset, fd, access, handled);
  int why = errno;
  close(fd);
  if (rc != 0) {
    errno = why;
    return -1;
  }
  append(res->allowed, sizeof res->allowed, " %s(%s)", path, tag);
  return 0;
}

/* Closes the file system but for the worker's paths. 0 (also when the
 * kernel has no Landlock: res->abi 0) or -1 with err. */
static int landlock_apply(const char *const *extra_rx, size_t nextra, int jit_fd,
                          const char *jit_dir, ll_result *res, char *err, size_t errlen) {
  memset(res, 0, sizeof *res);
  long abi = ll_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi <= 0) {
    res->why = errno;
    return 0;
  }
  gl_ll_ruleset_attr attr = {.handled_access_fs = LL_FS_ABI1};
  size_t size = sizeof attr.handled_access_fs;
  if (abi >= 2) attr.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) attr.handled_access_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
  if (abi >= 4) {
    attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
    size = offsetof(gl_ll_ruleset_attr, scoped);
  }
  if (abi >= 5) attr.handled_access_fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
  if (abi >= 6) {
    attr.scoped = LANDLOCK_SCOPE_SIGNAL;
    size = sizeof attr;
  }
  uint64_t h = attr.handled_access_fs;
  int rs = (int)ll_create_ruleset(&attr, size, 0);
  if (rs < 0) {
    snprintf(err, errlen, "landlock_create_ruleset (ABI %ld): %s", abi, strerror(errno));
    return -1;
  }
  int rc = 0;
  const char *failed = NULL;
  for (size_t i = 0; rc == 0 && i < sizeof k_read_exec / sizeof k_read_exec[0]; i++)
    if ((rc = ll_allow(rs, k_read_exec[i], LL_RX, h, "rx", res)) != 0) failed = k_read_exec[i];
  for (size_t i = 0; rc == 0 && i < nextra; i++)
    if ((rc = ll_allow(rs, extra_rx[i], LL_RX, h, "rx", res)) != 0) failed = extra_rx[i];
  /* The driver names its threads in /proc/self/task/TID/comm (cuInit fails
   * without): files under /proc may be written (their permissions say
   * which); nothing made there. */
  if (rc == 0 && (rc = ll_allow(rs, "/proc",
                                LL_READ | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                    LANDLOCK_ACCESS_FS_TRUNCATE,
                                h, "rw", res)) != 0)
    failed = "/proc";
  if (rc == 0 && (rc = ll_allow(rs, "/sys", LL_READ, h, "r", res)) != 0) failed = "/sys";
  if (rc == 0 && (rc = ll_allow(rs, "/dev", LL_DEV, h, "rw,ioctl", res)) != 0) failed = "/dev";
  if (rc == 0 && (rc = ll_allow(rs, "/dev/shm", LL_FILES, h, "rw,create", res)) != 0)
    failed = "/dev/shm";
  /* The JIT cache: its entries, and the CUDA driver's cache in a tree of
   * directories under cuda/. */
  if (rc == 0 && jit_fd >= 0) {
    uint64_t jit = LL_FILES | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                   LANDLOCK_ACCESS_FS_REFER;
    if ((rc = ll_allow_fd(rs, jit_fd, jit, h)) != 0) failed = jit_dir;
    else append(res->allowed, sizeof res->allowed, " %s(rw,create)", jit_dir);
  }
  if (rc != 0) {
    snprintf(err, errlen, "landlock_add_rule(%s): %s", failed, strerror(errno));
    close(rs);
    return -1;
  }
  int threads = thread_count();
  if (threads > 1)
    GL_WARN("worker: %d threads before the sandbox: Landlock confines only this one", threads);
  if (ll_restrict_self(rs) != 0) {
    snprintf(err, errlen, "landlock_restrict_self: %s", strerror(errno));
    close(rs);
    return -1;
  }
  close(rs);
  res->abi = (int)abi;
  res->no_tcp = abi >= 4;
  res->no_signals = abi >= 6;
  return 0;
}

/* ---- the worker's side: seccomp ------------------------------------------ */

/* Allowed; every other call fails with EPERM. Names unknown on this
 * architecture are skipped. */
static const char *const k_allowed[] = {
    /* threads, scheduling, time */
    "clone", "clone3", "exit", "exit_group", "set_tid_address", "set_robust_list",
    "get_robust_list", "rseq", "futex", "futex_waitv", "sched_yield", "sched_getaffinity",
    "sched_setaffinity", "sched_getparam", "sched_setparam", "sched_getscheduler",
    "sched_setscheduler", "sched_get_priority_max", "sched_get_priority_min", "getpriority",
    "setpriority", "gettid", "getpid", "getppid", "tgkill", "tkill", "membarrier", "nanosleep",
    "clock_nanosleep", "clock_gettime", "clock_getres", "gettimeofday", "time", "times",
    "getrusage", "getitimer", "setitimer", "alarm", "restart_syscall", "getcpu",
    /* identity and limits (read; changing them needs privileges it gave up) */
    "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups",
    "getrlimit", "setrlimit", "prlimit64", "capget", "uname", "sysinfo", "getrandom", "prctl",
    "getpgrp", "getpgid", "getsid", "setsid", "ioprio_get", "ioprio_set", "sched_setattr",
    "sched_getattr", "fork", "vfork", "wait4", "waitid",
    "arch_prctl", "umask", "personality",
    /* memory */
    "mmap", "munmap", "mprotect", "mremap", "madvise", "brk", "mlock", "mlock2", "munlock",
    "mlockall", "munlockall", "mincore", "msync", "get_mempolicy", "set_mempolicy", "mbind",
    "memfd_create", "shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop",
    "semctl",
    /* files (where Landlock lets it) */
    "read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev", "preadv2",
    "pwritev2", "open", "openat", "close", "close_range", "lseek", "stat", "fstat", "lstat",
    "newfstatat", "statx", "statfs", "fstatfs", "access", "faccessat", "faccessat2",
    "readlink", "readlinkat", "getdents64", "getcwd", "chdir", "fchdir", "mkdir", "mkdirat",
    "rename", "renameat", "renameat2", "unlink", "unlinkat", "rmdir", "fsync", "fdatasync",
    "ftruncate", "truncate", "fallocate", "fcntl", "flock", "dup", "dup2", "dup3", "pipe",
    "pipe2", "ioctl", "utimensat", "fchmod", "fadvise64", "sendfile", "copy_file_range",
    "inotify_init1", "inotify_add_watch", "inotify_rm_watch", "symlink", "symlinkat", "link",
    "linkat", "chmod", "fchmodat", "readahead", "sync_file_range", "syncfs", "sync", "getxattr",
    "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr",
    /* waiting and events */
    "poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1", "epoll_ctl",
    "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2", "timerfd_create",
    "timerfd_settime", "timerfd_gettime", "signalfd4",
    /* signals */
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait",
    "rt_sigqueueinfo", "sigaltstack", "pause", "kill",
    /* sockets: the daemon's socketpair (descriptors in SCM_RIGHTS), local ones the driver may
     * open (Landlock ABI 4 refuses TCP) */
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "sendto",
    "recvfrom", "sendmsg", "recvmsg",
    "sendmmsg", "recvmmsg", "shutdown", "getsockopt", "setsockopt", "getsockname",
    "getpeername",
    /* the sandbox's own checks */
    "seccomp", "landlock_create_ruleset",
#ifdef GL_SANDBOX_ASAN
    /* LeakSanitizer stops the process's threads to scan them */
    "ptrace",
#endif
};

/* Named for docs/security.md: refused whatever the list above says. */
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
    "name_to_handle_at", "io_uring_setup", "io_uring_enter", "io_uring_register",
    /* mounts, roots and namespaces */
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "fsopen", "fsmount",
    "fsconfig", "move_mount", "open_tree", "mount_setattr",
    /* the host's settings */
    "reboot", "swapon", "swapoff", "acct", "settimeofday", "clock_settime", "clock_adjtime",
    "adjtimex", "sethostname", "setdomainname", "vhangup",
    /* new programs */
    "execve", "execveat",
};

int gl_worker_seccomp_allows(const char *name) {
  for (size_t j = 0; j < sizeof k_refused / sizeof k_refused[0]; j++)
    if (!strcmp(k_refused[j], name)) return 0;
  for (size_t i = 0; i < sizeof k_allowed / sizeof k_allowed[0]; i++)
    if (!strcmp(k_allowed[i], name)) return 1;
  return 0;
}

/* Loads the filter; the number of calls allowed, or -1 with err. */
static int seccomp_apply(char *err, size_t errlen) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
  if (!ctx) {
    snprintf(err, errlen, "seccomp_init failed");
    return -1;
  }
  int allowed = 0, rc = 0;
  for (size_t i = 0; i < sizeof k_allowed / sizeof k_allowed[0] && rc == 0; i++) {
    int nr = seccomp_syscall_resolve_name(k_allowed[i]);
    if (nr == __NR_SCMP_ERROR || !gl_worker_seccomp_allows(k_allowed[i])) continue;
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
    if (rc == 0) allowed++;
  }
  /* Every thread of the process, should one exist already. */
  if (rc == 0) rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
  if (rc == 0) rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0) {
    snprintf(err, errlen, "seccomp filter: %s", strerror(-rc));
    return -1;
  }
  return allowed;
}

int gl_worker_sandbox_active(void) {
  if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) return 0;
  long r = syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0);
  return r == -1 && errno == EPERM;
}

/* ---- the worker's side: all of it ---------------------------------------- */

/* 0 when path opens (read-only), else its errno. */
static int probe_open(const char *path) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return errno ? errno : EIO;
  close(fd);
  return 0;
}

int gl_worker_confine(const char *jit_dir, bool cuda, char *jit_out, size_t jit_len, char *err,
                      size_t errlen) {
  jit_out[0] = 0;
  /* The JIT cache directory, while the way to it is open. */
  int jit_fd = -1;
  if (jit_dir && jit_dir[0]) {
    snprintf(jit_out, jit_len, "%s", jit_dir);
    jit_fd = open(jit_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (jit_fd < 0 && errno == ENOENT && mkdir_p(jit_dir) == 0)
      jit_fd = open(jit_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (jit_fd < 0)
      GL_WARN("worker: cannot open the JIT cache directory %s: %s", jit_dir, strerror(errno));
  }

  rlim_t nofile = 0;
  if (set_limits(&nofile, err, errlen) != 0) return -1;

  const char *spec = getenv("GL_WORKER_USER");
  bool switched = false;
  wuser u;
  if (spec && spec[0]) {
    if (parse_user(spec, &u) != 0) {
      snprintf(err, errlen, "GL_WORKER_USER: expected NAME:UID:GID, got '%s'", spec);
      return -1;
    }
    if (drop_user(&u, err, errlen) != 0) return -1;
    switched = true;
    /* The state directory that holds the cache is closed to this user:
     * reach the cache through the descriptor. */
    if (jit_fd >= 0) snprintf(jit_out, jit_len, "/proc/self/fd/%d", jit_fd);
  } else {
    u.uid = geteuid();
    u.gid = getegid();
    struct passwd *pw = getpwuid(u.uid);
    snprintf(u.name, sizeof u.name, "%s", pw ? pw->pw_name : "?");
  }

  char cuda_dirs[2][PATH_MAX];
  cuda_dirs[0][0] = cuda_dirs[1][0] = 0;
  if (cuda) {
    /* The device nodes are the driver's business, but a user that cannot
     * open them is a setting to point out (the GPUs would look absent). */
    if (switched && access("/dev/nvidiactl", F_OK) == 0 &&
        access("/dev/nvidiactl", R_OK | W_OK) != 0)
      GL_WARN("worker: user %s cannot open /dev/nvidiactl (%s): make it a member of the device "
              "nodes' group, or pick another --worker-user",
              u.name, strerror(errno));
    load_cuda_driver(cuda_dirs);
    /* The driver's own cache of compiled PTX (~/.nv/ComputeCache by
     * default) lies outside what the worker may open: it goes into the JIT
     * cache directory ("cuda/", which the JIT cache's own scan leaves
     * alone), or off without one. A setting of the operator's stays. */
    if (!getenv("CUDA_CACHE_PATH") && !getenv("CUDA_CACHE_DISABLE")) {
      char cc[PATH_MAX];
      if (jit_fd >= 0 && snprintf(cc, sizeof cc, "%s/cuda", jit_out) < (int)sizeof cc &&
          (mkdir(cc, 0700) == 0 || errno == EEXIST))
        setenv("CUDA_CACHE_PATH", cc, 1);
      else
        setenv("CUDA_CACHE_DISABLE", "1", 1);
    }
  }
  char exe[PATH_MAX], exe_dir[PATH_MAX] = "";
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = 0;
    dir_of(exe, exe_dir, sizeof exe_dir);
  }
  const char *extra[3];
  size_t nextra = 0;
  if (exe_dir[0]) extra[nextra++] = exe_dir;
  for (int i = 0; i < 2; i++)
    if (cuda_dirs[i][0]) extra[nextra++] = cuda_dirs[i];

  const char *probe = getenv("GL_WORKER_PROBE_PATH");
  if (probe && !probe[0]) probe = NULL;
  int probe_before = probe ? probe_open(probe) : -1;

  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    snprintf(err, errlen, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
    return -1;
  }
  ll_result ll;
  char jit_shown[PATH_MAX + 40] = "";
  if (jit_fd >= 0)
    snprintf(jit_shown, sizeof jit_shown, "%s%s%s%s", jit_dir, switched ? " (as " : "",
             switched ? jit_out : "", switched ? ")" : "");
  if (landlock_apply(extra, nextra, jit_fd, jit_shown, &ll, err, errlen) != 0)
    return -1;
  int allowed = seccomp_apply(err, errlen);
  if (allowed < 0) return -1;

  /* The self-check. */
  int probe_after = probe ? probe_open(probe) : -1;
  bool active = gl_worker_sandbox_active();
  if (!active) {
    snprintf(err, errlen, "the seccomp filter is not in force (perf_event_open allowed)");
    return -1;
  }
  GL_DEBUG("worker: sandbox in force: no new privileges, no core dumps, seccomp allows %d "
           "system calls (perf_event_open refused)",
           allowed);
  if (ll.abi) {
    GL_DEBUG("worker: landlock allows:%s; nothing else", ll.allowed);
  } else {
    GL_INFO("worker: file access is not restricted on this kernel (no Landlock: %s)",
            errno_name(ll.why));
  }
  char line[1024] = "";
  append(line, sizeof line,
         "sandbox: user %s (uid %u%s), no_new_privs, seccomp (allow-list of %d calls)", u.name,
         (unsigned)u.uid, switched ? "" : ", the daemon's", allowed);
  if (ll.abi)
    append(line, sizeof line, ", landlock ABI %d%s%s", ll.abi, ll.no_tcp ? ", no TCP" : "",
           ll.no_signals ? ", no signals out" : "");
  else
    append(line, sizeof line, ", no landlock (file access not restricted on this kernel)");
  append(line, sizeof line, ", %llu files, no core dumps", (unsigned long long)nofile);
  if (!probe) {
    GL_INFO("worker: %s", line);
  } else if (probe_after != 0) {
    GL_INFO("worker: %s: %s refused (%s)%s", line, probe, errno_name(probe_after),
            probe_before == 0 ? "" : "; its permissions alone refuse it too");
  } else {
    GL_INFO("worker: %s: %s opened", line, probe);
    if (ll.abi)
      GL_WARN("worker: the daemon's state directory %s lies under a path the sandbox allows",
              probe);
  }
  return 0;
}
