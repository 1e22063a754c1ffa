/*
 * test_cap.c - capability tokens (src/auth/cap.c): a sealed secret
 * verifies, any change to it does not; the checks of tenant, generation,
 * expiry and rights each refuse with their reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "auth/cap.h"

static gl_cap_key key_of(uint8_t fill) {
  gl_cap_key k;
  memset(k.k, fill, sizeof k.k);
  return k;
}

static void test_seal_and_verify(void **state) {
  (void)state;
  gl_cap_key k = key_of(7), other = key_of(8);
  gl_cap c = {.generation = 3, .rights = GPULEASE_RIGHT_SUBMIT, .not_after_s = 1234,
              .audience = 0};
  gl_cap_seal(&k, 42, &c);
  uint8_t b[GL_CAP_BYTES];
  gl_cap_pack(&c, b);
  /* the layout of docs/protocol.md: generation, rights, not_after, audience */
  static const uint8_t head[24] = {0, 0, 0, 3, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0x04, 0xD2,
                                   0, 0, 0, 0, 0, 0, 0, 0};
  assert_memory_equal(b, head, sizeof head);
  assert_true(gl_cap_mac_ok(&k, 42, b));
  assert_false(gl_cap_mac_ok(&k, 43, b));     /* another lease */
  assert_false(gl_cap_mac_ok(&other, 42, b)); /* another daemon */
  for (size_t i = 0; i < GL_CAP_BYTES * 8; i++) {
    b[i / 8] ^= (uint8_t)(1u << (i % 8));
    assert_false(gl_cap_mac_ok(&k, 42, b));
    b[i / 8] ^= (uint8_t)(1u << (i % 8));
  }
  gl_cap u;
  gl_cap_unpack(b, &u);
  assert_int_equal(u.generation, 3);
  assert_int_equal(u.rights, GPULEASE_RIGHT_SUBMIT);
  assert_int_equal(u.not_after_s, 1234);
  assert_memory_equal(u.mac, c.mac, GL_CAP_MAC_BYTES);
  /* the same fields seal to the same secret (no state, no randomness) */
  gl_cap again = {.generation = 3, .rights = GPULEASE_RIGHT_SUBMIT, .not_after_s = 1234};
  gl_cap_seal(&k, 42, &again);
  assert_memory_equal(again.mac, c.mac, GL_CAP_MAC_BYTES);
}

static void test_checks(void **state) {
  (void)state;
  gl_cap_lease l = {.lease_id = 5, .generation = 2, .tenant = "alice"};
  gl_cap c = {.generation = 2, .rights = GPULEASE_RIGHT_QUERY | GPULEASE_RIGHT_READ};
  char err[512];
  assert_int_equal(gl_cap_check(&c, &l, "alice", GPULEASE_RIGHT_QUERY, "LEASE_QUERY", 100, err,
                                sizeof err),
                   GPULEASE_OK);
  /* a right missing */
  assert_int_equal(gl_cap_check(&c, &l, "alice", GPULEASE_RIGHT_FREE, "LEASE_FREE", 100, err,
                                sizeof err),
                   GPULEASE_UNAUTHORIZED);
  assert_non_null(strstr(err, "LEASE_FREE needs the right 'free'"));
  assert_non_null(strstr(err, "it carries: query,read"));
  /* another tenant, and the token not handed to it */
  assert_int_equal(gl_cap_check(&c, &l, "bob", GPULEASE_RIGHT_QUERY, "LEASE_QUERY", 100, err,
                                sizeof err),
                   GPULEASE_UNAUTHORIZED);
  assert_non_null(strstr(err, "belongs to tenant 'alice'; this connection is tenant 'bob'"));
  assert_int_equal(gl_cap_check(&c, &l, "", GPULEASE_RIGHT_QUERY, "LEASE_QUERY", 100, err,
                                sizeof err),
                   GPULEASE_UNAUTHORIZED);
  assert_non_null(strstr(err, "anonymous"));
  /* handed to bob: bob may, carol may not */
  c.audience = gl_cap_audience("bob");
  assert_int_not_equal(c.audience, 0);
  assert_int_equal(gl_cap_check(&c, &l, "bob", GPULEASE_RIGHT_QUERY, "LEASE_QUERY", 100, err,
                                sizeof err),
                   GPULEASE_OK);
  assert_int_equal(gl_cap_check(&c, &l, "carol", GPULEASE_RIGHT_QUERY, "LEASE_QUERY", 100, err,
                                sizeof err),
                   GPULEASE_UNAUTHORIZED);
  c.audience = 0;
  /* rotated out */
  c.generation = 1;
  assert_int_equal(gl_cap_check(&c, &l, "alice", GPULEASE_RIGHT_QUERY, "LEASE_QUERY", 100, err,
                                sizeof err),
                   GPULEASE_UNAUTHORIZED);
  assert_non_null(strstr(err, "generation 1"));
  assert_non_null(strstr(err, "rotated to generation 2"));
  c.generation = 2;
  /* expired: valid up to and including not_after */
  c.not_after_s = 1000;
  assert_int_equal(gl_cap_check(&c, &l, "alice", GPULEASE_RIGHT_QUERY, "LEASE_QUERY", 1000, err,
                                sizeof err),
                   GPULEASE_OK);
  assert_int_equal(gl_cap_check(&c, &l, "alice", GPULEASE_RIGHT_QUERY, "LEASE_QUERY", 1001, err,
                                sizeof err),
                   GPULEASE_UNAUTHORIZED);
  assert_non_null(strstr(err, "expired at 1970-01-01T00:16:40Z (1 s ago)"));
  /* without identities everyone is "" and owns every lease */
  gl_cap_lease anon = {.lease_id = 5, .generation = 2, .tenant = ""};
  c.not_after_s = 0;
  assert_int_equal(gl_cap_check(&c, &anon, "", GPULEASE_RIGHT_READ, "MEM_READ", 1, err,
                                sizeof err),
                   GPULEASE_OK);
}

static void test_audience(void **state) {
  (void)state;
  assert_int_equal(gl_cap_audience("bob"), gl_cap_audience("bob"));
  assert_int_not_equal(gl_cap_audience("bob"), gl_cap_audience("bob "));
  assert_int_not_equal(gl_cap_audience(""), 0);
}

static void test_rights_names(void **state) {
  (void)state;
  char buf[128];
  uint32_t r = 0;
  gpulease_rights_format(GPULEASE_RIGHT_SUBMIT | GPULEASE_RIGHT_READ, buf, sizeof buf);
  assert_string_equal(buf, "submit,read");
  gpulease_rights_format(GPULEASE_RIGHTS_ALL, buf, sizeof buf);
  assert_string_equal(buf, "all");
  gpulease_rights_format(0, buf, sizeof buf);
  assert_string_equal(buf, "none");
  assert_int_equal(gpulease_rights_parse("session,write,delegate", &r), GPULEASE_OK);
  assert_int_equal(r, GPULEASE_RIGHT_SESSION | GPULEASE_RIGHT_WRITE | GPULEASE_RIGHT_DELEGATE);
  assert_int_equal(gpulease_rights_parse("all", &r), GPULEASE_OK);
  assert_int_equal(r, 0xFF);
  assert_int_equal(gpulease_rights_parse("read,,write", &r), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(gpulease_rights_parse("admin", &r), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(gpulease_rights_parse("", &r), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(gpulease_rights_parse("none", &r), GPULEASE_OK);
  assert_int_equal(r, 0);
  assert_int_equal(gpulease_rights_parse("none,read", &r), GPULEASE_INVALID_ARGUMENT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_seal_and_verify),
      cmocka_unit_test(test_checks),
      cmocka_unit_test(test_audience),
      cmocka_unit_test(test_rights_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
