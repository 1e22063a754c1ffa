/*
 * test_audit.c - the audit log: records written to a temporary file, read
 * back line by line and parsed with json-c; field order and omission,
 * escaping of hostile strings, invalid UTF-8, truncation, reopen after
 * rotation, append mode.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "auth/audit.h"

/* 2026-11-25T19:08:17.123456789Z */
#define T_NS 1795633697123456789ll

typedef struct tmpfile_s {
  char path[64];
} tmpfile_s;

static void make_tmp(tmpfile_s *t) {
  snprintf(t->path, sizeof t->path, "/tmp/test_audit_XXXXXX");
  int fd = mkstemp(t->path);
  assert_true(fd >= 0);
  close(fd);
}

/* Reads the whole file into lines (at most max); returns the count. Every
 * line must end in '\n'. Caller frees each line. */
static size_t read_lines(const char *path, char **lines, size_t max) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = 0;
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  while ((len = getline(&line, &cap, f)) > 0) {
    assert_true(n < max);
    assert_int_equal(line[len - 1], '\n');
    line[len - 1] = 0;
    assert_null(strchr(line, '\n'));
    lines[n++] = strdup(line);
  }
  free(line);
  fclose(f);
  return n;
}

static json_object *parse(const char *line) {
  json_object *o = json_tokener_parse(line);
  if (!o) fail_msg("not JSON: %s", line);
  assert_true(json_object_is_type(o, json_type_object));
  return o;
}

static const char *get_str(json_object *o, const char *key) {
  json_object *v;
  if (!json_object_object_get_ex(o, key, &v)) fail_msg("no key %s", key);
  assert_true(json_object_is_type(v, json_type_string));
  return json_object_get_string(v);
}

static void test_fields_and_order(void **state) {
  (void)state;
  tmpfile_s t;
  make_tmp(&t);
  unlink(t.path); /* gl_audit_open creates it */
  char err[256];
  gl_audit *a = gl_audit_open(t.path, err, sizeof err);
  assert_non_null(a);
  gl_audit_rec r1 = {.unix_ns = T_NS, .tenant = "alice", .peer = "192.0.2.7:40123",
                     .op = "LEASE_ALLOC", .lease_id = 7, .status = "OK",
                     .message = "16.0 GiB on GPU 0"};
  assert_int_equal(gl_audit_write(a, &r1), 0);
  gl_audit_rec r2 = {.unix_ns = T_NS + 1000, .tenant = "", .peer = "unix:pid=42,uid=1000",
                     .op = "NODE_INFO", .lease_id = 0, .status = "UNAUTHORIZED", .message = ""};
  assert_int_equal(gl_audit_write(a, &r2), 0);
  gl_audit_rec r3 = {.unix_ns = T_NS, .tenant = NULL, .peer = NULL, .op = "LEASE_FREE",
                     .lease_id = UINT64_MAX, .status = "NOT_FOUND", .message = NULL};
  assert_int_equal(gl_audit_write(a, &r3), 0);
  gl_audit_close(a);

  char *lines[8];
  assert_int_equal(read_lines(t.path, lines, 8), 3);
  /* the exact bytes of the first line: keys in order, no spaces */
  assert_string_equal(lines[0],
                      "{\"time\":\"2026-11-25T19:08:17.123456Z\",\"tenant\":\"alice\","
                      "\"peer\":\"192.0.2.7:40123\",\"op\":\"LEASE_ALLOC\",\"lease\":7,"
                      "\"status\":\"OK\",\"message\":\"16.0 GiB on GPU 0\"}");
  json_object *o = parse(lines[1]);
  assert_string_equal(get_str(o, "time"), "2026-11-25T19:08:17.123457Z");
  assert_string_equal(get_str(o, "tenant"), "");
  assert_string_equal(get_str(o, "peer"), "unix:pid=42,uid=1000");
  assert_string_equal(get_str(o, "op"), "NODE_INFO");
  assert_string_equal(get_str(o, "status"), "UNAUTHORIZED");
  json_object *v;
  assert_false(json_object_object_get_ex(o, "lease", &v));   /* 0: left out */
  assert_false(json_object_object_get_ex(o, "message", &v)); /* "": left out */
  assert_int_equal(json_object_object_length(o), 5);
  json_object_put(o);

  o = parse(lines[2]);
  assert_string_equal(get_str(o, "tenant"), "");
  assert_string_equal(get_str(o, "peer"), "");
  assert_true(json_object_object_get_ex(o, "lease", &v));
  assert_int_equal(json_object_get_uint64(v), UINT64_MAX); /* all 64 bits */
  assert_false(json_object_object_get_ex(o, "message", &v));
  json_object_put(o);
  for (int i = 0; i < 3; i++) free(lines[i]);

  /* created private: 0600 */
  struct stat st;
  assert_int_equal(stat(t.path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  unlink(t.path);
}

static void test_hostile_strings_escaped(void **state) {
  (void)state;
  tmpfile_s t;
  make_tmp(&t);
  char err[256];
  gl_audit *a = gl_audit_open(t.path, err, sizeof err);
  assert_non_null(a);
  const char *evil_tenant = "al\"ice\n{\"op\":\"FAKE\"}\\\r\t\x01";
  const char *evil_msg = "line1\nline2\",\"status\":\"OK</script>/";
  gl_audit_rec r = {.unix_ns = T_NS, .tenant = evil_tenant, .peer = "[2001:db8::1]:5701",
                    .op = "LEASE_RENEW", .lease_id = 3, .status = "QUOTA_EXCEEDED",
                    .message = evil_msg};
  assert_int_equal(gl_audit_write(a, &r), 0);
  /* invalid UTF-8 becomes U+FFFD; valid multi-byte text stays */
  gl_audit_rec r2 = {.unix_ns = T_NS, .tenant = "caf\xc3\xa9 \xe6\x97\xa5", .peer = "p",
                     .op = "X", .status = "OK",
                     .message = "bad \xff\xfe end \xc3 \xed\xa0\x80 \xf0\x9f\x98\x80"};
  assert_int_equal(gl_audit_write(a, &r2), 0);
  gl_audit_close(a);

  char *lines[4];
  assert_int_equal(read_lines(t.path, lines, 4), 2); /* the newlines did not split a record */
  json_object *o = parse(lines[0]);
  assert_string_equal(get_str(o, "tenant"), evil_tenant);
  assert_string_equal(get_str(o, "message"), evil_msg);
  assert_string_equal(get_str(o, "status"), "QUOTA_EXCEEDED");
  assert_string_equal(get_str(o, "op"), "LEASE_RENEW");
  assert_int_equal(json_object_object_length(o), 7);
  json_object_put(o);
  assert_non_null(strstr(lines[0], "\"tenant\":\"al\\\"ice\\n{\\\"op\\\":\\\"FAKE\\\"}\\\\\\r\\t\\u0001\""));

  o = parse(lines[1]);
  assert_string_equal(get_str(o, "tenant"), "caf\xc3\xa9 \xe6\x97\xa5");
  assert_string_equal(get_str(o, "message"), "bad \xef\xbf\xbd\xef\xbf\xbd end \xef\xbf\xbd "
                                             "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xf0\x9f\x98\x80");
  json_object_put(o);
  for (int i = 0; i < 2; i++) free(lines[i]);
  unlink(t.path);
}

static void test_message_truncated(void **state) {
  (void)state;
  tmpfile_s t;
  make_tmp(&t);
  char err[256];
  gl_audit *a = gl_audit_open(t.path, err, sizeof err);
  assert_non_null(a);
  static char big[5000], exact[GL_AUDIT_FIELD_MAX + 1], utf[3000];
  memset(big, 'm', sizeof big - 1);
  memset(exact, 'e', sizeof exact - 1);
  /* 2-byte characters from an odd offset: the cut must not split one */
  utf[0] = 'x';
  for (size_t i = 1; i + 2 < sizeof utf; i += 2) memcpy(utf + i, "\xc3\xa9", 2);
  gl_audit_rec r = {.unix_ns = T_NS, .tenant = "t", .peer = "p", .op = "o", .status = "OK"};
  r.message = big;
  assert_int_equal(gl_audit_write(a, &r), 0);
  r.message = exact;
  assert_int_equal(gl_audit_write(a, &r), 0);
  r.message = utf;
  assert_int_equal(gl_audit_write(a, &r), 0);
  gl_audit_close(a);

  char *lines[4];
  assert_int_equal(read_lines(t.path, lines, 4), 3);
  json_object *o = parse(lines[0]);
  const char *m = get_str(o, "message");
  assert_int_equal(strlen(m), GL_AUDIT_FIELD_MAX);
  assert_memory_equal(m, big, GL_AUDIT_FIELD_MAX - 3);
  assert_string_equal(m + GL_AUDIT_FIELD_MAX - 3, "...");
  json_object_put(o);
  o = parse(lines[1]);
  assert_string_equal(get_str(o, "message"), exact); /* exactly the limit: untouched */
  json_object_put(o);
  o = parse(lines[2]);
  m = get_str(o, "message");
  size_t n = strlen(m);
  assert_true(n <= GL_AUDIT_FIELD_MAX && n >= GL_AUDIT_FIELD_MAX - 4);
  assert_string_equal(m + n - 3, "...");
  assert_memory_equal(m, utf, n - 3);
  assert_int_equal((n - 3 - 1) % 2, 0); /* whole characters only */
  json_object_put(o);
  for (int i = 0; i < 3; i++) free(lines[i]);
  unlink(t.path);
}

static void test_append_and_reopen(void **state) {
  (void)state;
  tmpfile_s t;
  make_tmp(&t);
  FILE *f = fopen(t.path, "w");
  assert_non_null(f);
  fputs("{\"earlier\":true}\n", f);
  fclose(f);
  char err[256];
  gl_audit *a = gl_audit_open(t.path, err, sizeof err);
  assert_non_null(a);
  gl_audit_rec r = {.unix_ns = T_NS, .tenant = "a", .peer = "p", .op = "ONE", .status = "OK"};
  assert_int_equal(gl_audit_write(a, &r), 0);
  /* logrotate moves the file away; the log keeps writing there until reopened */
  char rotated[80];
  snprintf(rotated, sizeof rotated, "%s.1", t.path);
  assert_int_equal(rename(t.path, rotated), 0);
  r.op = "TWO";
  assert_int_equal(gl_audit_write(a, &r), 0);
  assert_int_equal(gl_audit_reopen(a, err, sizeof err), 0);
  r.op = "THREE";
  assert_int_equal(gl_audit_write(a, &r), 0);

  char *lines[8];
  assert_int_equal(read_lines(rotated, lines, 8), 3);
  assert_string_equal(lines[0], "{\"earlier\":true}"); /* appended, not truncated */
  json_object *o = parse(lines[1]);
  assert_string_equal(get_str(o, "op"), "ONE");
  json_object_put(o);
  o = parse(lines[2]);
  assert_string_equal(get_str(o, "op"), "TWO");
  json_object_put(o);
  for (int i = 0; i < 3; i++) free(lines[i]);
  assert_int_equal(read_lines(t.path, lines, 8), 1);
  o = parse(lines[0]);
  assert_string_equal(get_str(o, "op"), "THREE");
  json_object_put(o);
  free(lines[0]);

  /* a reopen that fails keeps the old file */
  unlink(rotated);
  unlink(t.path);
  assert_int_equal(mkdir(t.path, 0700), 0); /* the path is now a directory */
  assert_int_equal(gl_audit_reopen(a, err, sizeof err), -1);
  char want[128];
  snprintf(want, sizeof want, "%s: Is a directory", t.path);
  assert_string_equal(err, want);
  assert_int_equal(gl_audit_write(a, &r), 0);
  gl_audit_close(a);
  rmdir(t.path);

  /* open errors name the path */
  assert_null(gl_audit_open("/nonexistent-dir/audit.log", err, sizeof err));
  assert_string_equal(err, "/nonexistent-dir/audit.log: No such file or directory");
  assert_null(gl_audit_open("", err, sizeof err));
  assert_int_equal(gl_audit_write(NULL, &r), -1);
}

static void test_stderr_target(void **state) {
  (void)state;
  char err[256];
  gl_audit *a = gl_audit_open("-", err, sizeof err);
  assert_non_null(a);
  assert_int_equal(gl_audit_reopen(a, err, sizeof err), 0);
  gl_audit_close(a); /* does not close fd 2 */
  struct stat st;
  assert_int_equal(fstat(STDERR_FILENO, &st), 0);
}

static void test_time_format(void **state) {
  (void)state;
  char b[48];
  assert_string_equal(gl_audit_time(0, b, sizeof b), "1970-01-01T00:00:00.000000Z");
  assert_string_equal(gl_audit_time(T_NS, b, sizeof b), "2026-11-25T19:08:17.123456Z");
  assert_string_equal(gl_audit_time(-1000, b, sizeof b), "1969-12-31T23:59:59.999999Z");
  assert_string_equal(gl_audit_time(951782400000000000ll, b, sizeof b), "2000-02-29T00:00:00.000000Z");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fields_and_order),  cmocka_unit_test(test_hostile_strings_escaped),
      cmocka_unit_test(test_message_truncated), cmocka_unit_test(test_append_and_reopen),
      cmocka_unit_test(test_stderr_target),     cmocka_unit_test(test_time_format),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
