/*
 * fuzz_tenants.c - libFuzzer harness for the tenants file parser
 * (src/auth/tenants.c, with libinih).
 *
 * Every input is parsed with gl_tenants_parse() as the text of a tenants
 * file (cut at its first NUL byte, as a C string is) and the set freed. The
 * sanitizers catch out-of-bounds reads, leaks and undefined behaviour; on
 * top of that the harness checks properties and abort()s when one fails:
 *
 *   - a failure has a NUL-terminated message "fuzz:LINE: ..." with LINE at
 *     least 1 and at most the input's line count, or "out of memory";
 *   - a set that parses is self-consistent: every tenant has a valid name,
 *     is listed, and is what gl_tenants_lookup() finds for its name (names
 *     are unique); max_ttl is at least 1 s; a token lookup with the input's
 *     bytes finds nothing or a tenant of the set; an unlisted name gets the
 *     [defaults] limits.
 *
 * Built two ways: with -fsanitize=fuzzer by fuzz/CMakeLists.txt (GL_FUZZ),
 * and with fuzz/replay_main.c as fuzz_tenants_replay, which replays a few
 * seeds under ctest (tests/fuzz-corpus/CMakeLists.txt).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/tenants.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fuzz_tenants: property violated: %s\n", what);
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  if (size) memcpy(text, data, size);
  text[size] = 0;
  size_t lines = 1;
  for (const char *c = text; *c; c++) lines += *c == '\n';

  char err[512];
  memset(err, 'x', sizeof err);
  gl_tenants *t = gl_tenants_parse(text, "fuzz", err, sizeof err);
  if (!t) {
    check(memchr(err, '\0', sizeof err) != NULL, "terminated message");
    if (strcmp(err, "out of memory") != 0) {
      check(strncmp(err, "fuzz:", 5) == 0, "message names the file");
      char *end;
      unsigned long line = strtoul(err + 5, &end, 10);
      check(end != err + 5 && end[0] == ':' && end[1] == ' ', "message names a line");
      check(line >= 1 && line <= lines, "line within the input");
    }
    free(text);
    return 0;
  }
  size_t n = gl_tenants_count(t);
  check(n <= GL_TENANTS_MAX, "tenant count bounded");
  for (size_t i = 0; i < n; i++) {
    const gl_tenant *x = gl_tenants_at(t, i);
    check(x != NULL, "tenant at i < count");
    check(gl_tenant_name_valid(x->name), "valid name");
    check(x->listed, "listed");
    check(x->limits.max_ttl_s >= 1, "max_ttl at least 1 s");
    check(gl_tenants_lookup(t, x->name, NULL) == x, "lookup finds the tenant by its name");
  }
  check(gl_tenants_at(t, n) == NULL, "nothing past count");
  const gl_tenant *b = gl_tenants_by_token(t, (const char *)data, size);
  if (b) {
    int in_set = 0;
    for (size_t i = 0; i < n; i++) in_set |= gl_tenants_at(t, i) == b;
    check(in_set, "token lookup gives a tenant of the set");
  }
  gl_tenant scratch;
  const gl_tenant *u = gl_tenants_lookup(t, "fuzz unlisted \x01", &scratch);
  check(u == NULL, "invalid name refused");
  u = gl_tenants_lookup(t, "zz-unlisted-zz", &scratch);
  check(u != NULL, "valid name looked up");
  if (u == &scratch) {
    check(!u->listed && !u->admin, "unlisted is not listed nor admin");
    const gl_quota_limits *d = gl_tenants_defaults(t);
    check(u->limits.vram_bytes == d->vram_bytes && u->limits.leases == d->leases &&
              u->limits.sessions == d->sessions && u->limits.max_ttl_s == d->max_ttl_s &&
              u->limits.gpu_seconds_per_hour == d->gpu_seconds_per_hour,
          "unlisted gets [defaults]");
  }
  gl_tenants_free(t);
  free(text);
  return 0;
}
