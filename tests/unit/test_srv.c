/*
 * test_srv.c - src/lib/srv.c against a real DNS server on loopback: a
 * dnsmasq of its own (Debian's dnsmasq-base, which scripts/deps.sh
 * installs), started in the foreground on 127.0.0.1 at a free port with
 * --srv-host records and nothing else (no resolv.conf, no hosts file, no
 * upstream; example.org answered locally only, so unknown names there are
 * NXDOMAIN).
 *
 * Checked: several targets come back sorted by priority, then weight
 * (descending), then host, then port; a name with no records is NXDOMAIN,
 * a name with only an A record has no SRV records, a "." target means no
 * service, each naming the name; a closed port and a server that never
 * answers give "did not answer" within a few seconds; bad server strings
 * and names are -2; an answer too large for UDP comes over TCP; dnsmasq
 * restarted with one record fewer gives one target fewer (as a pool
 * re-resolving would see); an IPv6 server on ::1; parallel calls from
 * several threads.
 *
 * Without dnsmasq the tests that need it are skipped, saying so
 * (GL_TEST_DNSMASQ names another binary; set empty, it tries that path).
 * Every dnsmasq started is ended in the test's teardown with the helpers
 * it forked (and, should this process die, by PR_SET_PDEATHSIG); their
 * logs live in a temporary directory under /tmp, removed at the end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/srv.h"

#define SVC "_gl._udp.example.org"
#define MAX_RECORDS 48
#define MAX_DNSMASQ 2

/* ======================================================================
 * Helpers
 * ==================================================================== */

static char g_dnsmasq[256]; /* the binary, or "" when not installed */
static char g_tmp[64];      /* temporary directory */
static unsigned g_runs;     /* dnsmasq runs so far (names their logs) */

typedef struct dns {
  pid_t pid; /* 0: not running */
  uint16_t port;
  char log[128], errlog[128];
} dns;

static dns g_dns[MAX_DNSMASQ];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* A port that was free a moment ago on the loopback address of family
 * (UDP, bound to port 0 and closed); 0 when that family is unusable. */
static uint16_t free_udp_port(int family) {
  int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  struct sockaddr_storage a;
  memset(&a, 0, sizeof a);
  socklen_t alen;
  if (family == AF_INET) {
    struct sockaddr_in *a4 = (struct sockaddr_in *)&a;
    a4->sin_family = AF_INET;
    a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    alen = sizeof *a4;
  } else {
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&a;
    a6->sin6_family = AF_INET6;
    a6->sin6_addr = in6addr_loopback;
    alen = sizeof *a6;
  }
  uint16_t port = 0;
  if (bind(fd, (struct sockaddr *)&a, alen) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
    port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&a)->sin_port
                                   : ((struct sockaddr_in6 *)&a)->sin6_port);
  close(fd);
  return port;
}

static void print_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) print_message("  | %s", line);
  fclose(f);
}

/* Ends d's dnsmasq (SIGTERM, then SIGKILL after 3 s) and reaps it, and
 * ends what it forked (its TCP helpers), which share its process group. */
static void dns_stop(dns *d) {
  if (d->pid <= 0) return;
  kill(-d->pid, SIGTERM);
  int st;
  bool reaped = false;
  for (int i = 0; i < 300 && !reaped; i++) {
    reaped = waitpid(d->pid, &st, WNOHANG) == d->pid;
    if (!reaped) sleep_ms(10);
  }
  kill(-d->pid, SIGKILL);
  if (!reaped) waitpid(d->pid, &st, 0);
  d->pid = 0;
}

/* Reaps every child left, dnsmasq's orphaned helpers included (this
 * process is their subreaper), for up to 3 s. */
static void reap_all(void) {
  for (int i = 0; i < 300; i++) {
    int st;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p < 0) return; /* ECHILD: none left */
    if (p == 0) sleep_ms(10);
  }
  print_message("children still running after 3 s\n");
}

/* Starts dnsmasq for listen (an address) at port with the given
 * --srv-host values (nrec of them) plus an A record for a.example.org.
 * Returns true once it answers queries; false when it exited (the port
 * was taken, say) or never answered within 5 s. */
static bool dns_try_start(dns *d, const char *listen, uint16_t port, const char *const *rec,
                          size_t nrec) {
  unsigned run = ++g_runs;
  snprintf(d->log, sizeof d->log, "%s/dnsmasq-%u.log", g_tmp, run);
  snprintf(d->errlog, sizeof d->errlog, "%s/dnsmasq-%u.err", g_tmp, run);
  char a_port[32], a_listen[96], a_user[160], a_group[160], a_log[160];
  char a_rec[MAX_RECORDS][192];
  snprintf(a_port, sizeof a_port, "--port=%u", (unsigned)port);
  snprintf(a_listen, sizeof a_listen, "--listen-address=%s", listen);
  snprintf(a_log, sizeof a_log, "--log-facility=%s", d->log);
  /* dnsmasq drops root for the user "dnsmasq" unless told otherwise:
   * stay who we are. */
  const struct passwd *pw = getpwuid(geteuid());
  const struct group *gr = getgrgid(getegid());
  snprintf(a_user, sizeof a_user, "--user=%s", pw ? pw->pw_name : "root");
  snprintf(a_group, sizeof a_group, "--group=%s", gr ? gr->gr_name : "root");
  const char *argv[32 + MAX_RECORDS];
  size_t n = 0;
  argv[n++] = g_dnsmasq;
  argv[n++] = "--keep-in-foreground";
  argv[n++] = "--conf-file=/dev/null";
  argv[n++] = "--no-resolv";
  argv[n++] = "--no-hosts";
  argv[n++] = "--no-poll";
  argv[n++] = "--bind-interfaces";
  argv[n++] = a_listen;
  argv[n++] = a_port;
  argv[n++] = a_user;
  argv[n++] = a_group;
  argv[n++] = "--pid-file=";
  argv[n++] = a_log;
  argv[n++] = "--log-queries";
  argv[n++] = "--local=/example.org/";
  argv[n++] = "--host-record=a.example.org,127.0.0.2";
  assert_true(nrec <= MAX_RECORDS);
  for (size_t i = 0; i < nrec; i++) {
    snprintf(a_rec[i], sizeof a_rec[i], "--srv-host=%s", rec[i]);
    argv[n++] = a_rec[i];
  }
  argv[n] = NULL;

  pid_t parent = getpid();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* Ends with this test process, whatever becomes of it. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(127);
    setpgid(0, 0);
    int fd = open(d->errlog, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (nul >= 0) dup2(nul, 0);
    execv(g_dnsmasq, (char *const *)argv);
    _exit(127);
  }
  setpgid(pid, pid); /* as the child does: no race with dns_stop */
  d->pid = pid;
  d->port = port;

  /* Ready when it answers anything (dnsmasq opens its sockets before it
   * logs "started"; a query settles it). */
  char server[80];
  if (strchr(listen, ':'))
    snprintf(server, sizeof server, "[%s]:%u", listen, (unsigned)port);
  else
    snprintf(server, sizeof server, "%s:%u", listen, (unsigned)port);
  double until = now_s() + 5;
  while (now_s() < until) {
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      print_message("dnsmasq on %s exited (%s %d):\n", server,
                    WIFEXITED(st) ? "status" : "signal",
                    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
      print_file(d->errlog);
      d->pid = 0;
      return false;
    }
    gl_srv_target *t = NULL;
    size_t count = 0;
    char err[512];
    int rc = gl_srv_resolve("_ready._udp.example.org", server, &t, &count, err, sizeof err);
    free(t);
    if (rc == 0 || (rc == -1 && !strstr(err, "did not answer"))) return true;
    sleep_ms(20);
  }
  print_message("dnsmasq on %s did not answer within 5 s:\n", server);
  print_file(d->errlog);
  dns_stop(d);
  return false;
}

/* Starts dnsmasq on listen at a free port (several tries); fails the test
 * when it cannot. */
static void dns_start(dns *d, const char *listen, const char *const *rec, size_t nrec) {
  int family = strchr(listen, ':') ? AF_INET6 : AF_INET;
  for (int attempt = 0; attempt < 10; attempt++) {
    uint16_t port = free_udp_port(family);
    assert_true(port != 0);
    if (dns_try_start(d, listen, port, rec, nrec)) return;
  }
  fail_msg("could not start dnsmasq on %s", listen);
}

/* Restarts d's dnsmasq with other records, on the same port when it can
 * be had again (as a DNS server's would be), else on another. */
static void dns_restart(dns *d, const char *listen, const char *const *rec, size_t nrec) {
  uint16_t port = d->port;
  dns_stop(d);
  for (int attempt = 0; attempt < 5; attempt++) {
    if (dns_try_start(d, listen, port, rec, nrec)) return;
    sleep_ms(100);
  }
  dns_start(d, listen, rec, nrec);
  print_message("dnsmasq restarted on port %u (%u was taken)\n", (unsigned)d->port,
                (unsigned)port);
}

static void server_of(const dns *d, char *buf, size_t len) {
  snprintf(buf, len, "127.0.0.1:%u", (unsigned)d->port);
}

static void need_dnsmasq(void) {
  if (g_dnsmasq[0] == '\0') {
    print_message("dnsmasq not installed (Debian: dnsmasq-base, see scripts/deps.sh): skipped\n");
    skip();
  }
}

/* ======================================================================
 * Fixtures
 * ==================================================================== */

static int group_setup(void **state) {
  (void)state;
  signal(SIGPIPE, SIG_IGN);
  /* dnsmasq forks a helper per TCP connection: should one outlive
   * dnsmasq, it becomes ours to reap, not init's. */
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  /* GL_TEST_DNSMASQ: another binary ("" to try the skip path). */
  const char *env = getenv("GL_TEST_DNSMASQ");
  const char *cands[] = {"/usr/sbin/dnsmasq", "/sbin/dnsmasq", "/usr/local/sbin/dnsmasq",
                         "/usr/bin/dnsmasq"};
  if (env && env[0] && access(env, X_OK) == 0) snprintf(g_dnsmasq, sizeof g_dnsmasq, "%s", env);
  for (size_t i = 0; !env && i < sizeof cands / sizeof cands[0]; i++)
    if (access(cands[i], X_OK) == 0) {
      snprintf(g_dnsmasq, sizeof g_dnsmasq, "%s", cands[i]);
      break;
    }
  snprintf(g_tmp, sizeof g_tmp, "/tmp/gl_test_srv.XXXXXX");
  if (!mkdtemp(g_tmp)) return -1;
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  for (size_t i = 0; i < MAX_DNSMASQ; i++) dns_stop(&g_dns[i]);
  reap_all();
  DIR *dir = opendir(g_tmp);
  if (dir) {
    struct dirent *e;
    char path[512];
    while ((e = readdir(dir))) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      snprintf(path, sizeof path, "%s/%s", g_tmp, e->d_name);
      unlink(path);
    }
    closedir(dir);
  }
  rmdir(g_tmp);
  return 0;
}

/* After every test, pass or fail: no dnsmasq left running. */
static int teardown(void **state) {
  (void)state;
  for (size_t i = 0; i < MAX_DNSMASQ; i++) dns_stop(&g_dns[i]);
  reap_all();
  return 0;
}

/* ======================================================================
 * Tests
 * ==================================================================== */

/* Five targets over two priorities come back in order: priority
 * ascending, weight descending, then host, then port. */
static void test_sorted_targets(void **state) {
  (void)state;
  need_dnsmasq();
  const char *rec[] = {
      SVC ",c.example.org,5703,20,5",  SVC ",a.example.org,5701,10,10",
      SVC ",d.example.org,5704,10,60", SVC ",b.example.org,5702,10,60",
      SVC ",b.example.org,5700,10,60",
  };
  dns_start(&g_dns[0], "127.0.0.1", rec, 5);
  char server[64], err[512] = "";
  server_of(&g_dns[0], server, sizeof server);
  gl_srv_target *t = NULL;
  size_t n = 0;
  int rc = gl_srv_resolve(SVC, server, &t, &n, err, sizeof err);
  if (rc != 0) print_message("error: %s\n", err);
  assert_int_equal(rc, 0);
  assert_int_equal(n, 5);
  const struct {
    const char *host;
    uint16_t port, prio, weight;
  } want[] = {{"b.example.org", 5700, 10, 60},
              {"b.example.org", 5702, 10, 60},
              {"d.example.org", 5704, 10, 60},
              {"a.example.org", 5701, 10, 10},
              {"c.example.org", 5703, 20, 5}};
  for (size_t i = 0; i < 5; i++) {
    assert_string_equal(t[i].host, want[i].host);
    assert_int_equal(t[i].port, want[i].port);
    assert_int_equal(t[i].priority, want[i].prio);
    assert_int_equal(t[i].weight, want[i].weight);
  }
  free(t);

  /* The same with a trailing dot, and one target alone. */
  t = NULL;
  assert_int_equal(gl_srv_resolve(SVC ".", server, &t, &n, err, sizeof err), 0);
  assert_int_equal(n, 5);
  assert_string_equal(t[0].host, "b.example.org");
  free(t);
}

/* NXDOMAIN, a name with no SRV records, a "." target: -1, naming the
 * name; *out NULL and *count 0. */
static void test_no_records(void **state) {
  (void)state;
  need_dnsmasq();
  const char *rec[] = {SVC ",a.example.org,5701,10,10", "_off._udp.example.org"};
  dns_start(&g_dns[0], "127.0.0.1", rec, 2);
  char server[64], err[512];
  server_of(&g_dns[0], server, sizeof server);
  gl_srv_target *t = (gl_srv_target *)&t; /* must come back NULL */
  size_t n = 99;

  assert_int_equal(gl_srv_resolve("_none._udp.example.org", server, &t, &n, err, sizeof err), -1);
  print_message("NXDOMAIN: %s\n", err);
  assert_null(t);
  assert_int_equal(n, 0);
  assert_non_null(strstr(err, "_none._udp.example.org"));
  assert_non_null(strstr(err, "NXDOMAIN"));

  /* a.example.org has an A record and nothing else. */
  assert_int_equal(gl_srv_resolve("a.example.org", server, &t, &n, err, sizeof err), -1);
  print_message("NODATA: %s\n", err);
  assert_null(t);
  assert_non_null(strstr(err, "a.example.org"));
  assert_non_null(strstr(err, "no SRV records"));

  /* --srv-host without a target: the service is not available. */
  assert_int_equal(gl_srv_resolve("_off._udp.example.org", server, &t, &n, err, sizeof err), -1);
  print_message("target \".\": %s\n", err);
  assert_null(t);
  assert_non_null(strstr(err, "_off._udp.example.org"));
  assert_non_null(strstr(err, "not available"));

  /* Outside example.org dnsmasq has no upstream: it refuses. */
  assert_int_equal(gl_srv_resolve("_gl._udp.other.test", server, &t, &n, err, sizeof err), -1);
  print_message("refused: %s\n", err);
  assert_non_null(strstr(err, "_gl._udp.other.test"));
  assert_non_null(strstr(err, server));

  /* A small err buffer is cut, NUL-terminated; NULL is fine too. */
  char small[8];
  assert_int_equal(gl_srv_resolve("_none._udp.example.org", server, &t, &n, small, sizeof small),
                   -1);
  assert_int_equal(strlen(small), sizeof small - 1);
  assert_int_equal(gl_srv_resolve("_none._udp.example.org", server, &t, &n, NULL, 0), -1);
}

/* A closed port, and a socket that takes queries and never answers: -1
 * with "did not answer" naming the server, within a few seconds. */
static void test_no_answer(void **state) {
  (void)state;
  char server[64], err[512];
  gl_srv_target *t = NULL;
  size_t n = 0;

  uint16_t port = free_udp_port(AF_INET);
  assert_true(port != 0);
  snprintf(server, sizeof server, "127.0.0.1:%u", (unsigned)port);
  double t0 = now_s();
  assert_int_equal(gl_srv_resolve(SVC, server, &t, &n, err, sizeof err), -1);
  double took = now_s() - t0;
  print_message("closed port (%.3f s): %s\n", took, err);
  assert_true(took < 5);
  assert_null(t);
  assert_non_null(strstr(err, "did not answer"));
  assert_non_null(strstr(err, server));
  assert_non_null(strstr(err, SVC));

  /* Bound, never read: no ICMP either, so only the timeouts end it
   * (1 s a try, 2 tries). */
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  assert_int_equal(bind(fd, (struct sockaddr *)&a, alen), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
  snprintf(server, sizeof server, "127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
  t0 = now_s();
  int rc = gl_srv_resolve(SVC, server, &t, &n, err, sizeof err);
  took = now_s() - t0;
  close(fd);
  print_message("silent server (%.3f s): %s\n", took, err);
  assert_int_equal(rc, -1);
  assert_true(took >= 0.9);
  assert_true(took < 5);
  assert_non_null(strstr(err, "did not answer"));
  assert_non_null(strstr(err, server));
}

/* Unparsable servers, bad names, missing out/count: -2 with a reason,
 * before any query. */
static void test_bad_arguments(void **state) {
  (void)state;
  const char *bad_servers[] = {"",
                               "localhost",
                               "localhost:53",
                               "127.0.0.1:",
                               "127.0.0.1:0",
                               "127.0.0.1:65536",
                               "127.0.0.1:53x",
                               "127.0.0.1:-53",
                               "127.0.0.1:+53",
                               "127.0.0.1:5 3",
                               "1.2.3",
                               "1.2.3.4.5",
                               "256.1.1.1",
                               " 127.0.0.1",
                               "[::1",
                               "[::1]:",
                               "[::1]53",
                               "[::1]:99999",
                               "[127.0.0.1]:53",
                               "[]:53",
                               "::1:53:x",
                               ("01234567890123456789012345678901234567890123456789"
                                "012345678901234567890123456789")};
  gl_srv_target *t = NULL;
  size_t n = 0;
  char err[512];
  for (size_t i = 0; i < sizeof bad_servers / sizeof bad_servers[0]; i++) {
    err[0] = '\0';
    int rc = gl_srv_resolve(SVC, bad_servers[i], &t, &n, err, sizeof err);
    if (rc != -2) print_message("server \"%s\": %d %s\n", bad_servers[i], rc, err);
    assert_int_equal(rc, -2);
    assert_null(t);
    assert_int_equal(n, 0);
    assert_true(strlen(err) > 0);
  }
  print_message("e.g. %s\n", err);

  char long_name[400];
  memset(long_name, 'a', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  for (size_t i = 50; i < sizeof long_name - 1; i += 51) long_name[i] = '.';
  char long_label[80];
  memset(long_label, 'b', 64);
  snprintf(long_label + 64, sizeof long_label - 64, ".example.org");
  const char *bad_names[] = {"", long_name, long_label, "a..example.org", ".example.org"};
  for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
    err[0] = '\0';
    int rc = gl_srv_resolve(bad_names[i], "127.0.0.1:53", &t, &n, err, sizeof err);
    if (rc != -2) print_message("name \"%.60s\": %d %s\n", bad_names[i], rc, err);
    assert_int_equal(rc, -2);
    assert_null(t);
    assert_true(strlen(err) > 0);
    print_message("%s\n", err);
  }
  assert_int_equal(gl_srv_resolve(NULL, "127.0.0.1:53", &t, &n, err, sizeof err), -2);
  assert_int_equal(gl_srv_resolve(SVC, "127.0.0.1:53", NULL, &n, err, sizeof err), -2);
  assert_int_equal(gl_srv_resolve(SVC, "127.0.0.1:53", &t, NULL, err, sizeof err), -2);
}

/* dnsmasq restarted with one record fewer: one target fewer, the rest
 * unchanged; and back. */
static void test_restart_one_fewer(void **state) {
  (void)state;
  need_dnsmasq();
  const char *rec[] = {SVC ",n1.example.org,5701,10,10", SVC ",n2.example.org,5701,10,10",
                       SVC ",n3.example.org,5701,10,10"};
  dns_start(&g_dns[0], "127.0.0.1", rec, 3);
  char server[64], err[512];
  server_of(&g_dns[0], server, sizeof server);
  gl_srv_target *t = NULL;
  size_t n = 0;
  assert_int_equal(gl_srv_resolve(SVC, server, &t, &n, err, sizeof err), 0);
  assert_int_equal(n, 3);
  assert_string_equal(t[0].host, "n1.example.org");
  assert_string_equal(t[1].host, "n2.example.org");
  assert_string_equal(t[2].host, "n3.example.org");
  free(t);

  const char *fewer[] = {rec[0], rec[2]}; /* n2 gone */
  dns_restart(&g_dns[0], "127.0.0.1", fewer, 2);
  server_of(&g_dns[0], server, sizeof server);
  assert_int_equal(gl_srv_resolve(SVC, server, &t, &n, err, sizeof err), 0);
  assert_int_equal(n, 2);
  assert_string_equal(t[0].host, "n1.example.org");
  assert_string_equal(t[1].host, "n3.example.org");
  free(t);

  dns_restart(&g_dns[0], "127.0.0.1", rec, 3);
  server_of(&g_dns[0], server, sizeof server);
  assert_int_equal(gl_srv_resolve(SVC, server, &t, &n, err, sizeof err), 0);
  assert_int_equal(n, 3);
  free(t);
}

/* 40 targets with long names (about 2.5 KB) do not fit a 512-byte UDP
 * answer: dnsmasq sets TC and the resolver asks again over TCP. */
static void test_tcp_fallback(void **state) {
  (void)state;
  need_dnsmasq();
  enum { N = 40 };
  static char recs[N][128];
  const char *rec[N];
  for (int i = 0; i < N; i++) {
    snprintf(recs[i], sizeof recs[i],
             SVC ",gpu-node-%02d.rack-with-a-rather-long-name.example.org,%d,%d,%d", i, 6000 + i,
             i % 4, 100 - i);
    rec[i] = recs[i];
  }
  dns_start(&g_dns[0], "127.0.0.1", rec, N);
  char server[64], err[512];
  server_of(&g_dns[0], server, sizeof server);
  gl_srv_target *t = NULL;
  size_t n = 0;
  int rc = gl_srv_resolve(SVC, server, &t, &n, err, sizeof err);
  if (rc != 0) print_message("error: %s\n", err);
  assert_int_equal(rc, 0);
  assert_int_equal(n, N);
  for (size_t i = 1; i < n; i++) {
    assert_true(t[i - 1].priority <= t[i].priority);
    if (t[i - 1].priority == t[i].priority) assert_true(t[i - 1].weight > t[i].weight);
  }
  /* priority 0: i = 0, 4, .., 36, heaviest (i = 0) first */
  assert_string_equal(t[0].host, "gpu-node-00.rack-with-a-rather-long-name.example.org");
  assert_int_equal(t[0].port, 6000);
  assert_string_equal(t[N - 1].host, "gpu-node-39.rack-with-a-rather-long-name.example.org");
  free(t);
}

/* An IPv6 server: "[::1]:PORT". Skipped where loopback has no IPv6. */
static void test_ipv6_server(void **state) {
  (void)state;
  need_dnsmasq();
  if (free_udp_port(AF_INET6) == 0) {
    print_message("no IPv6 on loopback: skipped\n");
    skip();
  }
  const char *rec[] = {SVC ",v6.example.org,5705,1,2"};
  dns_start(&g_dns[0], "::1", rec, 1);
  char server[64], err[512];
  snprintf(server, sizeof server, "[::1]:%u", (unsigned)g_dns[0].port);
  gl_srv_target *t = NULL;
  size_t n = 0;
  int rc = gl_srv_resolve(SVC, server, &t, &n, err, sizeof err);
  if (rc != 0) print_message("error: %s\n", err);
  assert_int_equal(rc, 0);
  assert_int_equal(n, 1);
  assert_string_equal(t[0].host, "v6.example.org");
  assert_int_equal(t[0].port, 5705);
  assert_int_equal(t[0].priority, 1);
  assert_int_equal(t[0].weight, 2);
  free(t);
  assert_int_equal(gl_srv_resolve("_none._udp.example.org", server, &t, &n, err, sizeof err), -1);
  assert_non_null(strstr(err, "NXDOMAIN"));
}

/* Calls from several threads at once, each with its own resolver state,
 * some of them to a server that does not answer. */
typedef struct par_arg {
  const char *server, *closed;
  int failures;
} par_arg;

static void *par_main(void *p) {
  par_arg *a = p;
  for (int i = 0; i < 25; i++) {
    gl_srv_target *t = NULL;
    size_t n = 0;
    char err[512];
    if (gl_srv_resolve(SVC, a->server, &t, &n, err, sizeof err) != 0 || n != 2 ||
        strcmp(t[0].host, "p1.example.org") != 0 || t[1].port != 5702)
      a->failures++;
    free(t);
    if (gl_srv_resolve("_none._udp.example.org", a->server, &t, &n, err, sizeof err) != -1 ||
        !strstr(err, "NXDOMAIN"))
      a->failures++;
    if (i % 5 == 0 && (gl_srv_resolve(SVC, a->closed, &t, &n, err, sizeof err) != -1 ||
                       !strstr(err, "did not answer")))
      a->failures++;
  }
  return NULL;
}

static void test_threads(void **state) {
  (void)state;
  need_dnsmasq();
  const char *rec[] = {SVC ",p1.example.org,5701,1,1", SVC ",p2.example.org,5702,2,1"};
  dns_start(&g_dns[0], "127.0.0.1", rec, 2);
  char server[64], closed[64];
  server_of(&g_dns[0], server, sizeof server);
  snprintf(closed, sizeof closed, "127.0.0.1:%u", (unsigned)free_udp_port(AF_INET));
  enum { NT = 8 };
  pthread_t th[NT];
  par_arg args[NT];
  for (int i = 0; i < NT; i++) {
    args[i] = (par_arg){.server = server, .closed = closed};
    assert_int_equal(pthread_create(&th[i], NULL, par_main, &args[i]), 0);
  }
  int failures = 0;
  for (int i = 0; i < NT; i++) {
    pthread_join(th[i], NULL);
    failures += args[i].failures;
  }
  assert_int_equal(failures, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_sorted_targets, teardown),
      cmocka_unit_test_teardown(test_no_records, teardown),
      cmocka_unit_test_teardown(test_no_answer, teardown),
      cmocka_unit_test_teardown(test_bad_arguments, teardown),
      cmocka_unit_test_teardown(test_restart_one_fewer, teardown),
      cmocka_unit_test_teardown(test_tcp_fallback, teardown),
      cmocka_unit_test_teardown(test_ipv6_server, teardown),
      cmocka_unit_test_teardown(test_threads, teardown),
  };
  if (getenv("GL_TEST_FILTER")) cmocka_set_test_filter(getenv("GL_TEST_FILTER"));
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
