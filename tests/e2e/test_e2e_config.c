/*
 * test_e2e_config.c - gpuleased's configuration file (--config FILE, INI,
 * src/daemon/config_file.c): its keys configure a daemon, the command line
 * wins over them, --check-config checks a file without starting anything,
 * and an unknown key, an unknown section or a bad value stops the daemon
 * with the file's name and line (exit 2); --config none reads no file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon_harness.h"
#include "gpulease/gpulease.h"

#define MiB (1ull << 20)

static char tmpdir[256];

static int setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/gl-test-config-XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

/* Writes text to tmpdir/name; its path in path. */
static void write_conf(const char *name, const char *text, char *path, size_t len) {
  snprintf(path, len, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_int_equal(fputs(text, f) >= 0, 1);
  assert_int_equal(fclose(f), 0);
}

/* Runs gpuleased with the printf-formatted arguments; stdout and stderr to
 * out. Returns its exit status (-1 when it did not exit). */
static int gpuleased(char *out, size_t outlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int gpuleased(char *out, size_t outlen, const char *fmt, ...) {
  char args[2048], cmd[2600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  const char *bin = getenv("GL_TEST_BIN_DIR");
  snprintf(cmd, sizeof cmd, "%s/src/daemon/gpuleased %s 2>&1", bin ? bin : ".", args);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t n = fread(out, 1, outlen - 1, p);
  out[n] = 0;
  char rest[256];
  while (fread(rest, 1, sizeof rest, p) > 0) {}
  int st = pclose(p);
  fprintf(stderr, "$ gpuleased %s\n%s(exit %d)\n", args, out,
          WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static uint32_t max_ttl_of(const gl_test_daemon *d, uint64_t *vram) {
  gpulease_client *c = gl_test_connect(d, 10000);
  gpulease_inventory *inv = calloc(1, sizeof *inv);
  gpulease_inventory_init(inv);
  assert_non_null(inv);
  gpulease_error err;
  assert_int_equal(gpulease_inventory_get(c, inv, &err), GPULEASE_OK);
  uint32_t ttl = inv->max_ttl_s;
  assert_int_equal(inv->gpu_count, 1);
  *vram = inv->gpus[0].total_vram_bytes;
  free(inv);
  gpulease_client_close(c);
  return ttl;
}

/* Keys configure the daemon; the harness's flags (--listen, --emu-vram,
 * --log-level...) win over the file's. */
static void test_file_configures_daemon(void **state) {
  (void)state;
  char path[512];
  write_conf("good.conf",
             "# gpuleased's configuration\n"
             "listen = 127.0.0.1:1\n"
             "max-ttl = 42\n"
             "\n"
             "[gpuleased]\n"
             "log-level = warn\n"
             "emu-vram = 32M\n"
             "device = emu   ; inline comment\n"
             "no-worker-sandbox = no\n"
             "allow-anonymous = false\n",
             path, sizeof path);
  gl_test_daemon d;
  const char *extra[] = {"--config", path, NULL};
  assert_int_equal(gl_test_daemon_start(&d, "64M", extra), 0);
  assert_int_not_equal(strcmp(strrchr(d.addr, ':'), ":1"), 0); /* the harness's port */
  uint64_t vram = 0;
  assert_int_equal(max_ttl_of(&d, &vram), 42);  /* the file's */
  assert_int_equal(vram, 64 * MiB);               /* --emu-vram 64M over the file's 32M */
  assert_true(gl_test_daemon_log_count(&d, "") > 0); /* --log-level debug: the harness's */
  assert_int_equal(gl_test_daemon_stop(&d), 0);

  /* A flag over its key. */
  const char *extra2[] = {"--config", path, "--max-ttl", "7", NULL};
  assert_int_equal(gl_test_daemon_start(&d, "64M", extra2), 0);
  assert_int_equal(max_ttl_of(&d, &vram), 7);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* --check-config: OK, exit 0, and nothing started (not even the state
 * directory made). */
static void test_check_config_ok(void **state) {
  (void)state;
  char path[512], out[4096], expect[600], sd[400];
  write_conf("check.conf",
             "max-ttl = 600\nwarm-workers = 2\nauth = token\ntenants = /nonexistent/tenants.ini\n"
             "no-worker-sandbox = true\nmetrics-listen = 127.0.0.1:9701\n",
             path, sizeof path);
  snprintf(sd, sizeof sd, "%s/state-not-made", tmpdir);
  assert_int_equal(gpuleased(out, sizeof out, "--check-config --config %s --state-dir %s "
                             "--listen 127.0.0.1:0", path, sd), 0);
  snprintf(expect, sizeof expect, "%s: OK\n", path);
  assert_non_null(strstr(out, expect));
  struct stat st;
  assert_int_not_equal(stat(sd, &st), 0);

  /* The command line is checked too. */
  assert_int_equal(gpuleased(out, sizeof out, "--check-config --config %s --max-ttl 0", path), 2);
  assert_non_null(strstr(out, "--max-ttl: expected 1..604800 seconds, got '0'"));
}

static void test_unknown_key(void **state) {
  (void)state;
  char path[512], out[4096], expect[600];
  write_conf("unknown.conf", "[gpuleased]\nmax-ttl = 60\nvrma = 1G\n", path, sizeof path);
  assert_int_equal(gpuleased(out, sizeof out, "--check-config --config %s", path), 2);
  snprintf(expect, sizeof expect, "gpuleased: %s:3: unknown key 'vrma'", path);
  assert_non_null(strstr(out, expect));
  /* The daemon itself refuses to start, the same way. */
  assert_int_equal(gpuleased(out, sizeof out, "--config %s --state-dir %s/sd --listen 127.0.0.1:0",
                             path, tmpdir), 2);
  assert_non_null(strstr(out, expect));

  /* A worker's flag is no key. */
  write_conf("worker.conf", "jit-cache = /tmp\n", path, sizeof path);
  assert_int_equal(gpuleased(out, sizeof out, "--check-config --config %s", path), 2);
  assert_non_null(strstr(out, ":1: 'jit-cache' is for the command line only"));

  /* Nor are help and config. */
  write_conf("config.conf", "\nconfig = /etc/x\n", path, sizeof path);
  assert_int_equal(gpuleased(out, sizeof out, "--check-config --config %s", path), 2);
  assert_non_null(strstr(out, ":2: 'config' is for the command line only"));
}

static void test_unknown_section(void **state) {
  (void)state;
  char path[512], out[4096];
  write_conf("section.conf", "max-ttl = 60\n\n[gpuleasd]\n", path, sizeof path);
  assert_int_equal(gpuleased(out, sizeof out, "--check-config --config %s", path), 2);
  assert_non_null(strstr(out, ":3: unknown section '[gpuleasd]'"));
  write_conf("syntax.conf", "max-ttl = 60\nmax-leases\n", path, sizeof path);
  assert_int_equal(gpuleased(out, sizeof out, "--check-config --config %s", path), 2);
  assert_non_null(strstr(out, ":2: expected key = value"));
}

static void test_bad_value(void **state) {
  (void)state;
  char path[512], out[4096], expect[600];
  write_conf("bad.conf", "; comment\n[gpuleased]\nlog-level = info\nmax-ttl = abc\n", path,
             sizeof path);
  assert_int_equal(gpuleased(out, sizeof out, "--check-config --config %s", path), 2);
  snprintf(expect, sizeof expect, "gpuleased: %s:4: max-ttl: expected 1..604800 seconds, got 'abc'",
           path);
  assert_non_null(strstr(out, expect));
  /* A bad value on the command line does not excuse the file's. */
  assert_int_equal(gpuleased(out, sizeof out, "--check-config --config %s --max-ttl 5", path), 2);
  assert_non_null(strstr(out, expect));

  write_conf("bool.conf", "allow-anonymous = perhaps\n", path, sizeof path);
  assert_int_equal(gpuleased(out, sizeof out, "--check-config --config %s", path), 2);
  assert_non_null(strstr(out, ":1: allow-anonymous: expected true or false, got 'perhaps'"));

  write_conf("listen.conf", "metrics-listen = 127.0.0.1:99999\n", path, sizeof path);
  assert_int_equal(gpuleased(out, sizeof out, "--check-config --config %s", path), 2);
  assert_non_null(strstr(out, ":1: metrics-listen: expected HOST:PORT"));

  write_conf("gpus.conf", "emu-gpus = 3\nplacement = pack\n", path, sizeof path);
  assert_int_equal(gpuleased(out, sizeof out, "--check-config --config %s", path), 0);
  assert_int_equal(gpuleased(out, sizeof out, "--check-config --config none --emu-gpus 0"), 2);
  assert_non_null(strstr(out, "--emu-gpus: expected 1..64, got '0'"));
  assert_int_equal(gpuleased(out, sizeof out, "--check-config --config none --emu-gpus 65"), 2);
  assert_non_null(strstr(out, "--emu-gpus: expected 1..64, got '65'"));
  assert_int_equal(gpuleased(out, sizeof out, "--check-config --config none --placement fill"), 2);
  assert_non_null(strstr(out, "--placement: expected spread or pack, got 'fill'"));

  assert_int_equal(gpuleased(out, sizeof out, "--check-config --config %s/missing.conf", tmpdir),
                   2);
  assert_non_null(strstr(out, "missing.conf: cannot read"));
}

/* --config none: no file, not even /etc/gpulease/gpuleased.conf. */
static void test_config_none(void **state) {
  (void)state;
  static char out[16384];
  assert_int_equal(gpuleased(out, sizeof out, "--config none --check-config"), 0);
  assert_non_null(strstr(out, "no configuration file; command line: OK"));
  assert_null(strstr(out, "/etc/gpulease"));
  assert_int_equal(gpuleased(out, sizeof out, "--help"), 0);
  assert_non_null(strstr(out, "--config FILE"));
  assert_non_null(strstr(out, "--check-config"));
  assert_non_null(strstr(out, "--metrics-listen HOST:PORT"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_file_configures_daemon),
      cmocka_unit_test(test_check_config_ok),
      cmocka_unit_test(test_unknown_key),
      cmocka_unit_test(test_unknown_section),
      cmocka_unit_test(test_bad_value),
      cmocka_unit_test(test_config_none),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
