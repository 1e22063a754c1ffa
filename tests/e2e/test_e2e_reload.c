/*
 * test_e2e_reload.c - gpuleased under a service manager: readiness and
 * reload notices on $NOTIFY_SOCKET (sd_notify: READY=1, RELOADING=1 then
 * READY=1, STOPPING=1), and SIGHUP, which reads the configuration file and
 * the tenants file again and applies what may change while serving (the
 * TLS certificate, max-ttl, the tenants, the audit log) without dropping
 * leases or open connections; a broken file changes nothing, and a key
 * that needs a restart is logged as such. Under --auth mtls a reload
 * applies the tenants file, its [deny] list and --client-crl to open
 * connections (closed) and new handshakes (refused). On the emulated
 * device.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon_harness.h"
#include "gpulease/gpulease.h"
#include "lib_check.h"
#include "net/tls.h"
#include "net/tls_crl.h"

static char tmpdir[64];
static int notify_fd = -1;

static int setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/gl-test-reload-XXXXXX");
  if (!mkdtemp(tmpdir)) return -1;
  /* The service manager's end: a datagram socket named in $NOTIFY_SOCKET,
   * which the daemons started here inherit. */
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  snprintf(a.sun_path, sizeof a.sun_path, "%s/notify", tmpdir);
  notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (notify_fd < 0 || bind(notify_fd, (struct sockaddr *)&a, sizeof a) != 0) return -1;
  struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
  setsockopt(notify_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return setenv("NOTIFY_SOCKET", a.sun_path, 1);
}

static int teardown(void **state) {
  (void)state;
  close(notify_fd);
  unsetenv("NOTIFY_SOCKET");
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

/* Waits up to 20 s for a notice holding needle; true when one came. The
 * notices before it are dropped. */
static bool notice(const char *needle, char *got, size_t gotlen) {
  for (int i = 0; i < 100; i++) {
    char buf[1024];
    ssize_t n = recv(notify_fd, buf, sizeof buf - 1, 0);
    if (n <= 0) continue;
    buf[n] = 0;
    fprintf(stderr, "notice: %s\n", buf);
    if (strstr(buf, needle)) {
      if (got) snprintf(got, gotlen, "%s", buf);
      return true;
    }
  }
  return false;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_true(fputs(text, f) >= 0);
  assert_int_equal(fclose(f), 0);
}

/* SIGHUPs the daemon and waits for its log to say the reload ended (one
 * more "reload: done" or "reload failed" line than before). */
static void reload(const gl_test_daemon *d) {
  int before = gl_test_daemon_log_count(d, "reload: done") +
               gl_test_daemon_log_count(d, "reload failed");
  assert_int_equal(kill(d->pid, SIGHUP), 0);
  for (int i = 0; i < 500; i++) {
    if (gl_test_daemon_log_count(d, "reload: done") +
            gl_test_daemon_log_count(d, "reload failed") > before)
      return;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  fail_msg("the daemon did not finish its reload");
}

static gpulease_client *connect_pinned(const gl_test_daemon *d, const char *pin,
                                       const char *token, gpulease_status *st,
                                       gpulease_error *err) {
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = d->addr;
  o.pin_sha256 = pin;
  o.timeout_ms = 20000;
  o.no_local = 1;
  o.bearer_token = token;
  gpulease_client *c = NULL;
  *st = gpulease_client_connect(&o, &c, err);
  return *st == GPULEASE_OK ? c : NULL;
}

static void expect(gpulease_status got, const gpulease_error *err, gpulease_status want,
                   const char *needle) {
  if (got != want || (needle && !strstr(err->message, needle)))
    fprintf(stderr, "got %s '%s', want %s with '%s'\n", gpulease_status_name(got),
            got == GPULEASE_OK ? "" : err->message, gpulease_status_name(want),
            needle ? needle : "");
  assert_int_equal(got, want);
  if (needle) assert_non_null(strstr(err->message, needle));
}

/* READY=1 once serving; SIGHUP applies a new certificate and max-ttl with
 * RELOADING=1 / READY=1 around it, keeps the lease and the connection, and
 * logs a restart-only key; a broken file changes nothing; STOPPING=1 at
 * SIGTERM. */
static void test_reload_config(void **state) {
  (void)state;
  char conf[300], got[1024];
  snprintf(conf, sizeof conf, "%s/gpuleased.conf", tmpdir);
  write_file(conf, "[gpuleased]\nmax-ttl = 100\n");
  gl_test_daemon d;
  const char *extra[] = {"--config", conf, NULL};
  assert_int_equal(gl_test_daemon_start(&d, gl_test_on_gpu() ? NULL : "64M", extra), 0);
  assert_true(notice("READY=1", got, sizeof got));
  assert_non_null(strstr(got, "STATUS=serving on 127.0.0.1:"));

  gpulease_client *c = gl_test_connect(&d, 20000);
  gpulease_lease l;
  gpulease_error err;
  expect(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, MiB, 200, &l, &err), &err,
         GPULEASE_INVALID_ARGUMENT, "100");
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, MiB, 100, &l, E));

  /* A new certificate (another self-signed pair), a longer max-ttl, and a
   * key only a restart applies. */
  char certdir[300], cert[600], key[600], fp[GL_TLS_FP_HEX_LEN], why[256], text[2048];
  snprintf(certdir, sizeof certdir, "%s/newcert", tmpdir);
  assert_int_equal(mkdir(certdir, 0700), 0);
  int created = 0;
  assert_int_equal(
      gl_tls_ensure_self_signed(certdir, cert, key, sizeof cert, &created, why, sizeof why), 0);
  assert_int_equal(gl_tls_file_fingerprint(cert, fp, why, sizeof why), 0);
  assert_string_not_equal(fp, d.fingerprint);
  snprintf(text, sizeof text, "[gpuleased]\nmax-ttl = 300\ncert = %s\nkey = %s\nemu-threads = 2\n",
           cert, key);
  write_file(conf, text);
  reload(&d);
  assert_true(notice("RELOADING=1", NULL, 0));
  assert_true(notice("READY=1", got, sizeof got));
  assert_non_null(strstr(got, "STATUS=reloaded on 127.0.0.1:"));
  assert_non_null(strstr(got, "1 live lease"));
  assert_int_equal(gl_test_daemon_log_count(&d, "reload: emu-threads changed; it takes effect "
                                                "when gpuleased starts again"),
                   1);
  /* The open connection and the lease carry on; the longer TTL is granted. */
  CHECK(gpulease_lease_query(c, &l, E));
  CHECK(gpulease_lease_renew(c, &l, 250, E));
  assert_int_equal(l.ttl_s, 250);
  /* New connections meet the new certificate: the old pin fails. */
  gpulease_status st;
  assert_null(connect_pinned(&d, d.fingerprint, NULL, &st, &err));
  gpulease_client *c2 = connect_pinned(&d, fp, NULL, &st, &err);
  assert_non_null(c2);
  CHECK(gpulease_lease_query(c2, &l, E));
  gpulease_client_close(c2);
  /* The ready file names the new fingerprint. */
  char ready[400], line[200];
  snprintf(ready, sizeof ready, "%s/ready", d.dir);
  FILE *f = fopen(ready, "r");
  assert_non_null(f);
  assert_non_null(fgets(line, sizeof line, f));
  fclose(f);
  assert_non_null(strstr(line, fp));

  /* A broken file: the error with its line, and nothing changes. */
  write_file(conf, "[gpuleased]\nmax-ttl = 20\nmax-ttl = banana\n");
  reload(&d);
  assert_int_equal(gl_test_daemon_log_count(&d, "reload failed, nothing changed: "), 1);
  snprintf(text, sizeof text, "%s:3: max-ttl: expected 1..604800 seconds, got 'banana'", conf);
  assert_int_equal(gl_test_daemon_log_count(&d, text), 1);
  assert_true(notice("READY=1", got, sizeof got));
  assert_non_null(strstr(got, "reload failed; configuration unchanged"));
  CHECK(gpulease_lease_renew(c, &l, 300, E)); /* max-ttl is still 300, not 20 */
  c2 = connect_pinned(&d, fp, NULL, &st, &err);
  assert_non_null(c2);
  gpulease_client_close(c2);

  CHECK(gpulease_lease_free(c, &l, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
  assert_true(notice("STOPPING=1", NULL, 0));
}

#define TOKEN_ALICE "alice-0123456789abcdef0123456789abcdef"
#define TOKEN_BOB "bob-0123456789abcdef0123456789abcdef0"

/* SIGHUP reads the tenants file again: a tenant taken out loses even its
 * open connection, a tenant put in can connect, and the audit log moved
 * away (logrotate) is written anew. */
static void test_reload_tenants(void **state) {
  (void)state;
  char tenants[300], audit[300], rotated[320];
  snprintf(tenants, sizeof tenants, "%s/tenants.ini", tmpdir);
  snprintf(audit, sizeof audit, "%s/audit.jsonl", tmpdir);
  snprintf(rotated, sizeof rotated, "%s.1", audit);
  write_file(tenants, "[tenant alice]\ntoken = " TOKEN_ALICE "\n");
  gl_test_daemon d;
  const char *extra[] = {"--auth", "token", "--tenants", tenants, "--audit-log", audit,
                         "--config", "none", NULL};
  assert_int_equal(gl_test_daemon_start(&d, gl_test_on_gpu() ? NULL : "64M", extra), 0);
  gpulease_status st;
  gpulease_error err;
  gpulease_client *alice = connect_pinned(&d, d.fingerprint, TOKEN_ALICE, &st, &err);
  assert_non_null(alice);
  gpulease_lease l;
  CHECK(gpulease_lease_alloc(alice, GPULEASE_ANY_GPU, MiB, 60, &l, E));
  assert_null(connect_pinned(&d, d.fingerprint, TOKEN_BOB, &st, &err));
  expect(st, &err, GPULEASE_UNAUTHORIZED, "unknown bearer token");

  write_file(tenants, "[tenant bob]\ntoken = " TOKEN_BOB "\n");
  assert_int_equal(rename(audit, rotated), 0);
  reload(&d);
  assert_int_equal(gl_test_daemon_log_count(&d, "reload: tenants: 1 from "), 1);
  expect(gpulease_lease_query(alice, &l, &err), &err, GPULEASE_UNAUTHORIZED,
         "tenant 'alice' is no longer in the daemon's tenants file");
  gpulease_client *bob = connect_pinned(&d, d.fingerprint, TOKEN_BOB, &st, &err);
  assert_non_null(bob);
  gpulease_lease lb;
  CHECK(gpulease_lease_alloc(bob, GPULEASE_ANY_GPU, MiB, 60, &lb, E));
  /* The audit log is a new file at its path, with bob's lease in it. */
  struct stat sb;
  assert_int_equal(stat(audit, &sb), 0);
  FILE *f = fopen(audit, "r");
  assert_non_null(f);
  char line[2048];
  bool bob_seen = false;
  while (fgets(line, sizeof line, f))
    bob_seen |= strstr(line, "\"bob\"") != NULL && strstr(line, "LEASE_ALLOC") != NULL;
  fclose(f);
  assert_true(bob_seen);
  CHECK(gpulease_lease_free(bob, &lb, E));
  gpulease_client_close(bob);
  gpulease_client_close(alice);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ---- mTLS: tenants, the deny list and the CRL on a reload ---------------- */

typedef struct who {
  char cert[320], key[320];
} who;

static void issue(const char *ca, const char *cak, const char *cn, who *w) {
  char err[512];
  snprintf(w->cert, sizeof w->cert, "%s/%s.pem", tmpdir, cn);
  snprintf(w->key, sizeof w->key, "%s/%s.key", tmpdir, cn);
  if (gl_tls_issue_client_cert(ca, cak, cn, NULL, false, w->cert, w->key, err, sizeof err) != 0)
    fail_msg("issue %s: %s", cn, err);
}

static gpulease_client *connect_cert(const gl_test_daemon *d, const who *w, gpulease_status *st,
                                     gpulease_error *err) {
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = d->addr;
  o.pin_sha256 = d->fingerprint;
  o.timeout_ms = 20000;
  o.no_local = 1;
  o.cert_file = w->cert;
  o.key_file = w->key;
  gpulease_client *c = NULL;
  *st = gpulease_client_connect(&o, &c, err);
  if (*st != GPULEASE_OK) fprintf(stderr, "connect: %s: %s\n", gpulease_status_name(*st), err->message);
  return *st == GPULEASE_OK ? c : NULL;
}

/* The handshake of w fails, and the client is told why (needle). */
static void refused(const gl_test_daemon *d, const who *w, const char *needle) {
  gpulease_status st;
  gpulease_error err;
  assert_null(connect_cert(d, w, &st, &err));
  assert_int_equal(st, GPULEASE_TLS_FAILED);
  if (!strstr(err.message, needle)) fail_msg("'%s' lacks '%s'", err.message, needle);
}

/* A request on c fails now that the daemon closed c (the log said so):
 * DISCONNECTED, with application error 0x105 and the reason (why). */
static void cut(gpulease_client *c, gpulease_lease *l, const char *why) {
  gpulease_error err;
  gpulease_status st = gpulease_lease_query(c, l, &err);
  fprintf(stderr, "after the reload: %s: %s\n", gpulease_status_name(st), err.message);
  expect(st, &err, GPULEASE_DISCONNECTED,
         "(application error 0x105: client certificate refused after a reload: ");
  assert_non_null(strstr(err.message, why));
}

/* Waits up to 5 s for the daemon's log to hold needle n times. */
static void logged(const gl_test_daemon *d, const char *needle, int n) {
  for (int i = 0; i < 250 && gl_test_daemon_log_count(d, needle) < n; i++) {
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  if (gl_test_daemon_log_count(d, needle) < n) fail_msg("the log lacks '%s'", needle);
}

/* Under --auth mtls with a tenants file: a certificate of no tenant is
 * refused (no [defaults] tenant); a reload that takes alice out, puts
 * bob's fingerprint on [deny] and carol's serial on the CRL closes their
 * open connections, refuses their new handshakes with the reason and
 * alice's lease secrets, and leaves dave's connection be. */
static void test_reload_mtls(void **state) {
  (void)state;
  char ca[300], cak[300], crl[300], tenants[300], err[512], fp[GL_TLS_FP_HEX_LEN], text[1024];
  snprintf(ca, sizeof ca, "%s/mca.pem", tmpdir);
  snprintf(cak, sizeof cak, "%s/mca.key", tmpdir);
  snprintf(crl, sizeof crl, "%s/clients.crl", tmpdir);
  snprintf(tenants, sizeof tenants, "%s/mtenants.ini", tmpdir);
  assert_int_equal(gl_tls_make_ca("reload CA", ca, cak, err, sizeof err), 0);
  who alice, bob, carol, dave, erin;
  issue(ca, cak, "alice", &alice);
  issue(ca, cak, "bob", &bob);
  issue(ca, cak, "carol", &carol);
  issue(ca, cak, "dave", &dave);
  issue(ca, cak, "erin", &erin);
  if (gl_tls_make_crl(ca, cak, NULL, 0, crl, err, sizeof err) != 0) fail_msg("CRL: %s", err);
  write_file(tenants, "[tenant alice]\n[tenant bob]\n[tenant carol]\n[tenant dave]\n"
                      "[defaults]\nleases = 4\n");
  gl_test_daemon d;
  const char *extra[] = {"--auth", "mtls", "--client-ca", ca, "--client-crl", crl,
                         "--tenants", tenants, "--config", "none", NULL};
  assert_int_equal(gl_test_daemon_start(&d, gl_test_on_gpu() ? NULL : "64M", extra), 0);
  gpulease_status st;
  gpulease_error e;
  gpulease_client *ca_ = connect_cert(&d, &alice, &st, &e), *cb = connect_cert(&d, &bob, &st, &e),
                  *cc = connect_cert(&d, &carol, &st, &e), *cd = connect_cert(&d, &dave, &st, &e);
  assert_non_null(ca_);
  assert_non_null(cb);
  assert_non_null(cc);
  assert_non_null(cd);
  /* erin has a certificate of the CA but no [tenant]: not a default tenant. */
  refused(&d, &erin, "identity 'erin' is not a tenant of the tenants file");
  gpulease_lease la, lb, lc, ld;
  CHECK(gpulease_lease_alloc(ca_, GPULEASE_ANY_GPU, MiB, 60, &la, E));
  CHECK(gpulease_lease_alloc(cb, GPULEASE_ANY_GPU, MiB, 60, &lb, E));
  CHECK(gpulease_lease_alloc(cc, GPULEASE_ANY_GPU, MiB, 60, &lc, E));
  CHECK(gpulease_lease_alloc(cd, GPULEASE_ANY_GPU, MiB, 60, &ld, E));
  /* alice hands dave a secret of her lease. */
  gpulease_lease for_dave = la;
  CHECK(gpulease_lease_delegate(ca_, &la, GPULEASE_RIGHT_QUERY, 0, "dave", for_dave.secret, E));
  CHECK(gpulease_lease_query(cd, &for_dave, E));

  /* alice out, bob's fingerprint denied, carol's certificate revoked. */
  assert_int_equal(gl_tls_file_fingerprint(bob.cert, fp, err, sizeof err), 0);
  snprintf(text, sizeof text,
           "[tenant bob]\n[tenant carol]\n[tenant dave]\n[defaults]\nleases = 4\n"
           "[deny]\nfingerprint = %s\n",
           fp);
  write_file(tenants, text);
  const char *revoked[] = {carol.cert};
  if (gl_tls_make_crl(ca, cak, revoked, 1, crl, err, sizeof err) != 0) fail_msg("CRL: %s", err);
  reload(&d);
  logged(&d, "(client alice) closed: identity 'alice' is not a tenant of the tenants file", 1);
  logged(&d, "(client bob) closed: its certificate is on the deny list (SHA-256 fingerprint", 1);
  logged(&d, "(client carol) closed: its certificate is revoked", 1);
  cut(ca_, &la, "identity 'alice' is not a tenant of the tenants file");
  cut(cb, &lb, "its certificate is on the deny list");
  cut(cc, &lc, "its certificate is revoked");
  /* New handshakes: refused, with the reason. */
  refused(&d, &alice, "identity 'alice' is not a tenant of the tenants file");
  refused(&d, &bob, "is on the deny list");
  refused(&d, &carol, "its certificate is revoked");
  assert_true(gl_test_daemon_log_count(&d, "(alice) refused: identity 'alice' is not a tenant") >=
              1);
  /* dave carries on, but alice's secret is void. */
  CHECK(gpulease_lease_query(cd, &ld, E));
  expect(gpulease_lease_query(cd, &for_dave, &e), &e, GPULEASE_UNAUTHORIZED,
         "belongs to tenant 'alice', which is no longer in the daemon's tenants file");
  gpulease_client *cd2 = connect_cert(&d, &dave, &st, &e);
  assert_non_null(cd2);
  CHECK(gpulease_lease_free(cd2, &ld, E));
  gpulease_client_close(cd2);
  gpulease_client_close(ca_);
  gpulease_client_close(cb);
  gpulease_client_close(cc);
  gpulease_client_close(cd);

  /* A CRL signed by another CA fails the reload, and changes nothing. */
  char other[300], otherk[300];
  snprintf(other, sizeof other, "%s/oca.pem", tmpdir);
  snprintf(otherk, sizeof otherk, "%s/oca.key", tmpdir);
  assert_int_equal(gl_tls_make_ca("other CA", other, otherk, err, sizeof err), 0);
  if (gl_tls_make_crl(other, otherk, NULL, 0, crl, err, sizeof err) != 0) fail_msg("CRL: %s", err);
  reload(&d);
  assert_int_equal(gl_test_daemon_log_count(&d, "reload failed, nothing changed: "), 1);
  refused(&d, &carol, "its certificate is revoked");
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reload_config),
      cmocka_unit_test(test_reload_tenants),
      cmocka_unit_test(test_reload_mtls),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
