/*
 * test_tenants.c - the tenants file: every field of a good file, [defaults]
 * filling in, each kind of error with its file:line, token lookup by
 * digest, unlisted names, loading from disk.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "auth/tenants.h"

#define GiB (1ull << 30)

#define TOK_A1 "alice-token-0123456789abcdef0123456789"
#define TOK_A2 "alice-second-token-zyxwvutsrqponmlkjihg"
#define TOK_B "bob;token=with:odd#chars/0123456789abcdef"
#define SPIFFE "spiffe://example.org/ns/ml/sa/carol"

static const char GOOD[] =
    "# the tenants of the test node\n"
    "; another comment\n"
    "\n"
    "[tenant alice]\n"
    "token = " TOK_A1 "\n"
    "  token = " TOK_A2 "   ; indented, with a comment\n"
    "vram = 16GiB\n"
    "leases = 8\n"
    "sessions = 32\n"
    "max_ttl = 3600\n"
    "gpu_seconds_per_hour = 7200\n"
    "admin = false\n"
    "\n"
    "[tenant bob]  ; an inline comment after the header\n"
    "token: " TOK_B "\n"
    "vram = 1500MB\n"
    "max_ttl = 15m\n"
    "admin = true\n"
    "\r\n"
    "[tenant " SPIFFE "]\r\n"
    "leases = unlimited\r\n"
    "max_ttl = 2h\r\n"
    "\n"
    "[defaults]\n"
    "vram = 8GiB\n"
    "leases = 2\n"
    "sessions = 4\n"
    "gpu_seconds_per_hour = 600\n";

static gl_tenants *parse_ok(const char *text) {
  char err[512] = "unset";
  gl_tenants *t = gl_tenants_parse(text, "t.ini", err, sizeof err);
  if (!t) fail_msg("parse failed: %s", err);
  assert_string_equal(err, "");
  return t;
}

static void test_good_file_every_field(void **state) {
  (void)state;
  gl_tenants *t = parse_ok(GOOD);
  assert_int_equal(gl_tenants_count(t), 3);

  const gl_tenant *a = gl_tenants_at(t, 0);
  assert_string_equal(a->name, "alice");
  assert_true(a->listed);
  assert_false(a->admin);
  assert_int_equal(a->limits.vram_bytes, 16 * GiB);
  assert_int_equal(a->limits.leases, 8);
  assert_int_equal(a->limits.sessions, 32);
  assert_int_equal(a->limits.max_ttl_s, 3600);
  assert_int_equal(a->limits.gpu_seconds_per_hour, 7200);

  /* bob sets vram and max_ttl; [defaults] (after him in the file) fills the rest */
  const gl_tenant *b = gl_tenants_at(t, 1);
  assert_string_equal(b->name, "bob");
  assert_true(b->admin);
  assert_int_equal(b->limits.vram_bytes, 1500000000ull);
  assert_int_equal(b->limits.max_ttl_s, 900);
  assert_int_equal(b->limits.leases, 2);
  assert_int_equal(b->limits.sessions, 4);
  assert_int_equal(b->limits.gpu_seconds_per_hour, 600);

  /* "unlimited" overrides a default; what neither sets is unlimited */
  const gl_tenant *c = gl_tenants_at(t, 2);
  assert_string_equal(c->name, SPIFFE);
  assert_false(c->admin);
  assert_int_equal(c->limits.leases, UINT32_MAX);
  assert_int_equal(c->limits.max_ttl_s, 7200);
  assert_int_equal(c->limits.vram_bytes, 8 * GiB);

  const gl_quota_limits *d = gl_tenants_defaults(t);
  assert_int_equal(d->vram_bytes, 8 * GiB);
  assert_int_equal(d->leases, 2);
  assert_int_equal(d->sessions, 4);
  assert_int_equal(d->max_ttl_s, UINT32_MAX);
  assert_int_equal(d->gpu_seconds_per_hour, 600);
  assert_null(gl_tenants_at(t, 3));
  gl_tenants_free(t);
}

static void test_no_defaults_means_unlimited(void **state) {
  (void)state;
  gl_tenants *t = parse_ok("[tenant x]\nvram = 1K\n[tenant y]\n");
  const gl_tenant *x = gl_tenants_at(t, 0), *y = gl_tenants_at(t, 1);
  assert_int_equal(x->limits.vram_bytes, 1024);
  assert_int_equal(x->limits.leases, UINT32_MAX);
  assert_int_equal(y->limits.vram_bytes, UINT64_MAX);
  assert_int_equal(y->limits.sessions, UINT32_MAX);
  assert_int_equal(y->limits.max_ttl_s, UINT32_MAX);
  assert_int_equal(y->limits.gpu_seconds_per_hour, UINT64_MAX);
  gl_tenant scratch;
  const gl_tenant *u = gl_tenants_lookup(t, "nobody", &scratch);
  assert_int_equal(u->limits.vram_bytes, UINT64_MAX);
  gl_tenants_free(t);

  t = parse_ok("");
  assert_int_equal(gl_tenants_count(t), 0);
  assert_null(gl_tenants_by_token(t, TOK_A1, strlen(TOK_A1)));
  gl_tenants_free(t);
}

static void test_tokens_find_their_tenant(void **state) {
  (void)state;
  gl_tenants *t = parse_ok(GOOD);
  const gl_tenant *a = gl_tenants_by_token(t, TOK_A1, strlen(TOK_A1));
  assert_non_null(a);
  assert_string_equal(a->name, "alice");
  assert_ptr_equal(gl_tenants_by_token(t, TOK_A2, strlen(TOK_A2)), a);
  const gl_tenant *b = gl_tenants_by_token(t, TOK_B, strlen(TOK_B));
  assert_non_null(b);
  assert_string_equal(b->name, "bob");

  /* one byte off, a prefix, a longer string, empty, NULL: nobody */
  char wrong[] = TOK_A1;
  wrong[5] ^= 1;
  assert_null(gl_tenants_by_token(t, wrong, strlen(wrong)));
  assert_null(gl_tenants_by_token(t, TOK_A1, strlen(TOK_A1) - 1));
  assert_null(gl_tenants_by_token(t, TOK_A1 "x", strlen(TOK_A1) + 1));
  assert_null(gl_tenants_by_token(t, "short", 5));
  assert_null(gl_tenants_by_token(t, "", 0));
  assert_null(gl_tenants_by_token(t, NULL, 0));
  /* not NUL-terminated: len decides */
  char buf[64];
  memcpy(buf, TOK_B, strlen(TOK_B));
  memset(buf + strlen(TOK_B), 'Z', sizeof buf - strlen(TOK_B));
  assert_ptr_equal(gl_tenants_by_token(t, buf, strlen(TOK_B)), b);
  /* a section name is not a token */
  assert_null(gl_tenants_by_token(t, SPIFFE, strlen(SPIFFE)));
  gl_tenants_free(t);
}

static void test_lookup_listed_and_unlisted(void **state) {
  (void)state;
  gl_tenants *t = parse_ok(GOOD);
  gl_tenant scratch;
  const gl_tenant *c = gl_tenants_lookup(t, SPIFFE, &scratch);
  assert_ptr_equal(c, gl_tenants_at(t, 2));
  assert_true(c->listed);
  assert_ptr_equal(gl_tenants_lookup(t, "bob", &scratch), gl_tenants_at(t, 1));
  assert_ptr_equal(gl_tenants_lookup(t, "alice", NULL), gl_tenants_at(t, 0));

  const gl_tenant *u = gl_tenants_lookup(t, "CN=Dave Example,O=Lab", &scratch);
  assert_ptr_equal(u, &scratch);
  assert_string_equal(u->name, "CN=Dave Example,O=Lab");
  assert_false(u->listed);
  assert_false(u->admin);
  assert_int_equal(u->limits.vram_bytes, 8 * GiB);
  assert_int_equal(u->limits.leases, 2);
  assert_int_equal(u->limits.sessions, 4);
  assert_int_equal(u->limits.max_ttl_s, UINT32_MAX);
  assert_int_equal(u->limits.gpu_seconds_per_hour, 600);
  /* a prefix of a listed name is another name */
  assert_false(gl_tenants_lookup(t, "alic", &scratch)->listed);
  assert_null(gl_tenants_lookup(t, "nobody", NULL));

  /* names that can never be listed */
  char longname[300];
  memset(longname, 'n', sizeof longname - 1);
  longname[sizeof longname - 1] = 0;
  assert_null(gl_tenants_lookup(t, longname, &scratch));
  longname[GL_TENANT_NAME_MAX] = 0;
  assert_non_null(gl_tenants_lookup(t, longname, &scratch));
  assert_null(gl_tenants_lookup(t, "", &scratch));
  assert_null(gl_tenants_lookup(t, NULL, &scratch));
  assert_null(gl_tenants_lookup(t, "new\nline", &scratch));
  assert_null(gl_tenants_lookup(t, " alice", &scratch));
  assert_null(gl_tenants_lookup(t, "caf\xc3\xa9", &scratch));
  gl_tenants_free(t);
}

static void test_many_tenants_sorted_lookup(void **state) {
  (void)state;
  size_t n = 500, cap = n * 120 + 1, len = 0;
  char *text = malloc(cap);
  assert_non_null(text);
  for (size_t i = 0; i < n; i++)
    len += (size_t)snprintf(text + len, cap - len,
                            "[tenant t%zu]\nleases = %zu\ntoken = token-number-%06zu-0123456789abcdef\n",
                            (i * 7919) % n, i, i);
  gl_tenants *t = parse_ok(text);
  assert_int_equal(gl_tenants_count(t), n);
  for (size_t i = 0; i < n; i++) {
    char name[32], tok[64];
    snprintf(name, sizeof name, "t%zu", (i * 7919) % n);
    const gl_tenant *x = gl_tenants_lookup(t, name, NULL);
    assert_non_null(x);
    assert_int_equal(x->limits.leases, i);
    snprintf(tok, sizeof tok, "token-number-%06zu-0123456789abcdef", i);
    assert_ptr_equal(gl_tenants_by_token(t, tok, strlen(tok)), x);
  }
  gl_tenants_free(t);
  free(text);
}

/* Parsing `text` fails with exactly `want` as the message. */
static void expect_error(const char *text, const char *want) {
  char err[512] = "";
  gl_tenants *t = gl_tenants_parse(text, "/etc/gpulease/tenants.ini", err, sizeof err);
  if (t) {
    gl_tenants_free(t);
    fail_msg("parsed, expected error: %s", want);
  }
  if (strcmp(err, want) != 0) fail_msg("got error   \"%s\"\nwanted error \"%s\"", err, want);
}

#define F "/etc/gpulease/tenants.ini:"

static void test_errors_name_file_and_line(void **state) {
  (void)state;
  expect_error("[tenant a]\nvram = 1G\ncolour = blue\n",
               F "3: unknown key \"colour\" (expected token, vram, leases, sessions, max_ttl, "
                 "gpu_seconds_per_hour or admin)");
  expect_error("[tenant a]\nVRAM = 1G\n",
               F "2: unknown key \"VRAM\" (expected token, vram, leases, sessions, max_ttl, "
                 "gpu_seconds_per_hour or admin)");
  expect_error("# c\n\n[tenants a]\n",
               F "3: unknown section [tenants a] (expected [tenant NAME], [defaults] or [deny])");
  expect_error("[global]\nx = 1\n", F "1: unknown section [global] (expected [tenant NAME], [defaults] or [deny])");
  expect_error("vram = 1G\n[tenant a]\n",
               F "1: key \"vram\" outside a section (start with [tenant NAME] or [defaults])");
  expect_error("[tenant a]\n[tenant b]\n\n[tenant a]\n", F "4: duplicate tenant a (first at line 1)");
  expect_error("[defaults]\n[tenant a]\n[defaults]\n", F "3: duplicate [defaults] (first at line 1)");
  expect_error("[tenant a]\nleases = 1\nleases = 2\n", F "3: duplicate key leases (first at line 2)");
  expect_error("[tenant a]\ntoken = " TOK_A1 "\n[tenant b]\ntoken = " TOK_A1 "\n",
               F "4: duplicate token: tenant a has it already (line 2)");
  expect_error("[tenant a]\ntoken = " TOK_A1 "\ntoken = " TOK_A1 "\n",
               F "3: duplicate token: tenant a has it already (line 2)");
  expect_error("[tenant a]\ntoken = 0123456789abcdef0123456789abcde\n",
               F "2: token too short (31 bytes; at least 32)");
  expect_error("[tenant a]\ntoken = 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
               "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0\n",
               F "2: token too long (129 bytes; at most 128)");
  expect_error("[tenant a]\ntoken = 0123456789abcdef 0123456789abcdef\n",
               F "2: token byte 17 is not printable ASCII or is a space");
  expect_error("[tenant a]\ntoken = 0123456789abcdef\x01" "0123456789abcdef\n",
               F "2: token byte 17 is not printable ASCII or is a space");
  expect_error("[tenant a]\nvram = 16 GiB\n",
               F "2: bad vram \"16 GiB\": expected bytes such as 8589934592, 512M, 16GiB, 10GB, or "
                 "unlimited");
  expect_error("[tenant a]\nvram = 99999999999T\n",
               F "2: bad vram \"99999999999T\": expected bytes such as 8589934592, 512M, 16GiB, "
                 "10GB, or unlimited");
  expect_error("[tenant a]\nleases = -1\n",
               F "2: bad leases \"-1\": expected a whole number 0..4294967295, or unlimited");
  expect_error("[tenant a]\nsessions = 4294967296\n",
               F "2: bad sessions \"4294967296\": expected a whole number 0..4294967295, or "
                 "unlimited");
  expect_error("[tenant a]\nmax_ttl = 0\n",
               F "2: bad max_ttl \"0\": expected seconds (1 or more) such as 3600, 90s, 15m, 2h, "
                 "or unlimited");
  expect_error("[tenant a]\nmax_ttl = 3d\n",
               F "2: bad max_ttl \"3d\": expected seconds (1 or more) such as 3600, 90s, 15m, 2h, "
                 "or unlimited");
  expect_error("[tenant a]\nmax_ttl = 2000000h\n",
               F "2: bad max_ttl \"2000000h\": expected seconds (1 or more) such as 3600, 90s, 15m, "
                 "2h, or unlimited");
  expect_error("[tenant a]\ngpu_seconds_per_hour = 1e6\n",
               F "2: bad gpu_seconds_per_hour \"1e6\": expected a whole number, or unlimited");
  expect_error("[tenant a]\nadmin = maybe\n", F "2: bad admin \"maybe\": expected true or false");
  expect_error("[defaults]\ntoken = " TOK_A1 "\n",
               F "2: token is not allowed in [defaults], only in [tenant NAME]");
  expect_error("[defaults]\nadmin = true\n",
               F "2: admin is not allowed in [defaults], only in [tenant NAME]");
  expect_error("[tenant]\n", F "1: [tenant] needs a name: [tenant NAME]");
  expect_error("[tenant   ]\n", F "1: [tenant] needs a name: [tenant NAME]");
  expect_error("[tenant a\nvram = 1\n", F "1: section header without ']'");
  expect_error("[tenant a] vram = 1\n", F "1: unexpected text after ']'");
  expect_error("[tenant a\x7f]\n", F "1: tenant name \"a?\" is not printable ASCII");
  expect_error("[tenant a]\njust some words\n",
               F "2: expected key = value, [tenant NAME], [defaults] or [deny]");
  /* the first error wins, whichever way it was found */
  expect_error("[tenant a]\n[tenant b]\nx = 1\n[tenant a]\n",
               F "3: unknown key \"x\" (expected token, vram, leases, sessions, max_ttl, "
                 "gpu_seconds_per_hour or admin)");
  expect_error("[tenant a]\n[tenant a]\nx = 1\n", F "2: duplicate tenant a (first at line 1)");
  expect_error("[tenant a]\ntoken = " TOK_A1 "\n[tenant b]\ntoken = " TOK_A1 "\nnonsense\n",
               F "4: duplicate token: tenant a has it already (line 2)");
  expect_error("[tenant a]\nnonsense\nx = 1\n",
               F "2: expected key = value, [tenant NAME], [defaults] or [deny]");
  expect_error("[tenant a]\nnonsense\n[tenant a]\n",
               F "2: expected key = value, [tenant NAME], [defaults] or [deny]");
  /* no default name */
  char err[256];
  assert_null(gl_tenants_parse("[x]\n", NULL, err, sizeof err));
  assert_string_equal(err, "tenants:1: unknown section [x] (expected [tenant NAME], [defaults] or [deny])");
  /* errlen 0: no message, no crash */
  assert_null(gl_tenants_parse("[x]\n", NULL, NULL, 0));
}

static void test_long_names_and_lines(void **state) {
  (void)state;
  /* 255 bytes of name: fine (inih alone would cut section names at 49) */
  char text[1024], name[300];
  memset(name, 'a', GL_TENANT_NAME_MAX);
  name[GL_TENANT_NAME_MAX] = 0;
  name[100] = '/';
  name[200] = ':';
  snprintf(text, sizeof text, "[tenant %s]\nleases = 3\n", name);
  gl_tenants *t = parse_ok(text);
  const gl_tenant *x = gl_tenants_lookup(t, name, NULL);
  assert_non_null(x);
  assert_int_equal(x->limits.leases, 3);
  gl_tenants_free(t);
  /* two names that agree in their first 49 bytes stay two tenants */
  char a[80], b[80];
  memset(a, 'q', 60);
  a[60] = 0;
  memcpy(b, a, 61);
  b[59] = 'r';
  snprintf(text, sizeof text, "[tenant %s]\nleases=1\n[tenant %s]\nleases=2\n", a, b);
  t = parse_ok(text);
  assert_int_equal(gl_tenants_lookup(t, a, NULL)->limits.leases, 1);
  assert_int_equal(gl_tenants_lookup(t, b, NULL)->limits.leases, 2);
  gl_tenants_free(t);

  name[GL_TENANT_NAME_MAX] = 'b';
  name[GL_TENANT_NAME_MAX + 1] = 0;
  snprintf(text, sizeof text, "[tenant x]\n[tenant %s]\n", name);
  expect_error(text, F "2: tenant name of 256 bytes (at most 255)");

  /* a long comment is fine, a long key line is not (and is not split) */
  char comment[400];
  memset(comment, 'c', sizeof comment - 1);
  comment[0] = '#';
  comment[sizeof comment - 1] = 0;
  snprintf(text, sizeof text, "%s\n[tenant a]\nleases = 1\n", comment);
  t = parse_ok(text);
  gl_tenants_free(t);
  char value[250];
  memset(value, '1', sizeof value - 1);
  value[sizeof value - 1] = 0;
  snprintf(text, sizeof text, "[tenant a]\nleases = %s\n", value);
  expect_error(text, F "2: line too long (258 bytes; at most 190)");
}

static void test_load_from_disk(void **state) {
  (void)state;
  char path[] = "/tmp/test_tenants_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, GOOD, strlen(GOOD)), (ssize_t)strlen(GOOD));
  close(fd);
  char err[512];
  gl_tenants *t = gl_tenants_load(path, err, sizeof err);
  assert_non_null(t);
  assert_int_equal(gl_tenants_count(t), 3);
  assert_string_equal(gl_tenants_by_token(t, TOK_B, strlen(TOK_B))->name, "bob");
  gl_tenants_free(t);

  /* errors name the path */
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("[tenant a]\nleases = 1\nleases = x\n", f);
  fclose(f);
  assert_null(gl_tenants_load(path, err, sizeof err));
  char want[512];
  snprintf(want, sizeof want, "%s:3: duplicate key leases (first at line 2)", path);
  assert_string_equal(err, want);

  /* a NUL byte */
  f = fopen(path, "w");
  assert_non_null(f);
  fwrite("[tenant a]\nleases = 1\0\n", 1, 23, f);
  fclose(f);
  assert_null(gl_tenants_load(path, err, sizeof err));
  snprintf(want, sizeof want, "%s:2: NUL byte", path);
  assert_string_equal(err, want);

  unlink(path);
  assert_null(gl_tenants_load(path, err, sizeof err));
  snprintf(want, sizeof want, "%s: No such file or directory", path);
  assert_string_equal(err, want);
  assert_null(gl_tenants_load("/tmp", err, sizeof err));
  assert_string_equal(err, "/tmp: not a regular file");
}

static void test_name_validity(void **state) {
  (void)state;
  assert_true(gl_tenant_name_valid("alice"));
  assert_true(gl_tenant_name_valid(SPIFFE));
  assert_true(gl_tenant_name_valid("user@example.org-1_2.3"));
  assert_true(gl_tenant_name_valid("CN=A B"));
  assert_false(gl_tenant_name_valid(""));
  assert_false(gl_tenant_name_valid("a "));
  assert_false(gl_tenant_name_valid("a]b"));
  assert_false(gl_tenant_name_valid("tab\there"));
  assert_false(gl_tenant_name_valid(NULL));
}

/* [deny]: fingerprints and serials, normalised (case, ':', a serial's
 * leading zeros), repeatable, in file order; bad values name their line. */
static void test_deny_list(void **state) {
  (void)state;
  gl_tenants *t = parse_ok("[tenant alice]\n"
                           "[deny]\n"
                           "fingerprint = AA:bb:" "0123456789abcdef0123456789abcdef"
                           "0123456789abcdef0123456789ab\n"
                           "serial = 00:0A:ff\n"
                           "serial = 0\n"
                           "[defaults]\nleases = 1\n"
                           "[deny]\n"
                           "fingerprint = ffffffffffffffffffffffffffffffff"
                           "ffffffffffffffffffffffffffffffff\n");
  assert_int_equal(gl_tenants_count(t), 1);
  assert_int_equal(gl_tenants_deny_count(t, GL_DENY_FINGERPRINT), 2);
  assert_string_equal(gl_tenants_deny_at(t, GL_DENY_FINGERPRINT, 0),
                      "aabb0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab");
  assert_string_equal(gl_tenants_deny_at(t, GL_DENY_FINGERPRINT, 1),
                      "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff");
  assert_int_equal(gl_tenants_deny_count(t, GL_DENY_SERIAL), 2);
  assert_string_equal(gl_tenants_deny_at(t, GL_DENY_SERIAL, 0), "aff");
  assert_string_equal(gl_tenants_deny_at(t, GL_DENY_SERIAL, 1), "0");
  assert_null(gl_tenants_deny_at(t, GL_DENY_SERIAL, 2));
  assert_int_equal(gl_tenants_defaults(t)->leases, 1);
  gl_tenants_free(t);
  assert_int_equal(gl_tenants_deny_count(NULL, GL_DENY_SERIAL), 0);
  expect_error("[deny]\nfingerprint = abc\n",
               F "2: bad fingerprint \"abc\": expected a certificate's SHA-256, 64 hex "
               "digits (':' between bytes allowed)");
  expect_error("[deny]\nserial = 12345678901234567890123456789012345678901\n",
               F "2: bad serial \"12345678901234567890123456789012345678901\": expected a "
               "certificate's serial number, 1 to 40 hex digits (':' between bytes allowed)");
  expect_error("[deny]\nserial = xyz\n",
               F "2: bad serial \"xyz\": expected a certificate's serial number, 1 to 40 "
               "hex digits (':' between bytes allowed)");
  expect_error("[deny]\nvram = 1G\n",
               F "2: unknown key \"vram\" in [deny] (expected fingerprint or serial)");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_good_file_every_field),
      cmocka_unit_test(test_no_defaults_means_unlimited),
      cmocka_unit_test(test_tokens_find_their_tenant),
      cmocka_unit_test(test_lookup_listed_and_unlisted),
      cmocka_unit_test(test_many_tenants_sorted_lookup),
      cmocka_unit_test(test_errors_name_file_and_line),
      cmocka_unit_test(test_long_names_and_lines),
      cmocka_unit_test(test_load_from_disk),
      cmocka_unit_test(test_name_validity),
      cmocka_unit_test(test_deny_list),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
