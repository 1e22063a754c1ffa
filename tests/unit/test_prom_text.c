/*
 * test_prom_text.c - the Prometheus text parser of `gpulease top`
 * (src/cli/prom_text.c): samples with and without labels, escapes,
 * special values and timestamps; comments; every kind of malformed line
 * refused without a partial sample; a whole exposition with a bad line in
 * it; the bounds (line length, labels, samples); no read past the length.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/prom_text.h"

static int parse(const char *line, gl_prom_sample *s) {
  return gl_prom_parse_line(line, strlen(line), s);
}

static void test_plain_and_labels(void **state) {
  (void)state;
  gl_prom_sample s;
  assert_int_equal(parse("gpulease_submits_total 42", &s), 1);
  assert_string_equal(s.name, "gpulease_submits_total");
  assert_int_equal(s.label_count, 0);
  assert_true(s.value == 42);
  assert_false(s.has_timestamp);
  gl_prom_sample_free(&s);

  assert_int_equal(parse("gpulease_leases{gpu=\"0\",uuid=\"GPU-1a\"} 3", &s), 1);
  assert_string_equal(s.name, "gpulease_leases");
  assert_int_equal(s.label_count, 2);
  assert_string_equal(s.labels[0].name, "gpu");
  assert_string_equal(s.labels[0].value, "0");
  assert_string_equal(gl_prom_label_value(&s, "uuid"), "GPU-1a");
  assert_null(gl_prom_label_value(&s, "op"));
  assert_true(s.value == 3);
  gl_prom_sample_free(&s);

  /* blanks between the parts, a trailing comma, a colon in the name, a timestamp */
  assert_int_equal(parse("  ns:metric_x { a = \"1\" , b=\"\", }\t-1.5e3   1700000000000  ", &s), 1);
  assert_string_equal(s.name, "ns:metric_x");
  assert_int_equal(s.label_count, 2);
  assert_string_equal(s.labels[1].name, "b");
  assert_string_equal(s.labels[1].value, "");
  assert_true(s.value == -1500);
  assert_true(s.has_timestamp);
  assert_true(s.timestamp_ms == 1700000000000);
  gl_prom_sample_free(&s);

  assert_int_equal(parse("m{} 7 -12", &s), 1); /* empty braces, negative timestamp */
  assert_int_equal(s.label_count, 0);
  assert_true(s.timestamp_ms == -12);
  gl_prom_sample_free(&s);

  assert_int_equal(parse("m 1\r", &s), 1); /* a CRLF line */
  assert_true(s.value == 1);
  gl_prom_sample_free(&s);
}

static void test_escapes(void **state) {
  (void)state;
  gl_prom_sample s;
  assert_int_equal(parse("m{v=\"a\\\\b\\\"c\\nd,}e=\"} 1", &s), 1);
  assert_int_equal(s.label_count, 1);
  assert_string_equal(s.labels[0].value, "a\\b\"c\nd,}e=");
  gl_prom_sample_free(&s);
  /* a value that is nothing but escapes */
  assert_int_equal(parse("m{v=\"\\\"\\\"\"} 2", &s), 1);
  assert_string_equal(s.labels[0].value, "\"\"");
  gl_prom_sample_free(&s);
}

static void test_special_values(void **state) {
  (void)state;
  gl_prom_sample s;
  assert_int_equal(parse("m NaN", &s), 1);
  assert_true(isnan(s.value));
  gl_prom_sample_free(&s);
  assert_int_equal(parse("m +Inf", &s), 1);
  assert_true(isinf(s.value) && s.value > 0);
  gl_prom_sample_free(&s);
  assert_int_equal(parse("m -Inf", &s), 1);
  assert_true(isinf(s.value) && s.value < 0);
  gl_prom_sample_free(&s);
  assert_int_equal(parse("m{le=\"+Inf\"} 0.000000001", &s), 1);
  assert_string_equal(s.labels[0].value, "+Inf");
  assert_true(s.value == 1e-9);
  gl_prom_sample_free(&s);
  assert_int_equal(parse("m 18446744073709551615", &s), 1);
  assert_true(s.value == 18446744073709551615.0);
  gl_prom_sample_free(&s);
}

static void test_comments_and_blanks(void **state) {
  (void)state;
  gl_prom_sample s;
  assert_int_equal(parse("# HELP gpulease_leases Live leases, by GPU.", &s), 0);
  assert_null(s.storage);
  assert_int_equal(parse("# TYPE gpulease_leases gauge", &s), 0);
  assert_int_equal(parse("   # indented comment", &s), 0);
  assert_int_equal(parse("", &s), 0);
  assert_int_equal(parse(" \t ", &s), 0);
  assert_int_equal(parse("\r", &s), 0);
}

static void test_malformed(void **state) {
  (void)state;
  static const char *bad[] = {
      "m",                       /* no value */
      "m{a=\"1\"}",              /* no value after labels */
      "1m 1",                    /* name starts with a digit */
      "m-x 1",                   /* name runs into a dash */
      "m{a=\"1} 1",              /* unterminated value */
      "m{a=\"1\" 1",             /* unterminated braces */
      "m{a=1} 1",                /* unquoted value */
      "m{a\"1\"} 1",             /* no '=' */
      "m{1a=\"1\"} 1",           /* label name starts with a digit */
      "m{a:b=\"1\"} 1",          /* a colon in a label name */
      "m{a=\"1\" b=\"2\"} 1",    /* no comma */
      "m{a=\"1\",a=\"2\"} 1",    /* a label given twice */
      "m{a=\"\\t\"} 1",          /* unknown escape */
      "m{a=\"x\\",               /* escape at the end */
      "m{,} 1",                  /* a comma alone */
      "m 1x",                    /* junk after the number */
      "m 0x10",                  /* hex */
      "m infinity",              /* not a value of the format */
      "m nan(1)",                /* nor this */
      "m 1e999",                 /* out of range */
      "m 1 2 3",                 /* junk after the timestamp */
      "m 1 1.5",                 /* a timestamp is an integer */
      "m 1 99999999999999999999", /* and fits 64 bits */
      "m 1 -",                   /* a sign alone */
      "m{a=\"1\"}} 1",           /* a stray brace */
      "{a=\"1\"} 1",             /* no name */
      "m 1 # comment",           /* no trailing comments */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gl_prom_sample s;
    memset(&s, 0xAB, sizeof s);
    int r = parse(bad[i], &s);
    if (r != -1) fail_msg("accepted a malformed line: %s", bad[i]);
    assert_null(s.storage); /* nothing left to free */
    assert_null(s.name);
    assert_int_equal(s.label_count, 0);
  }
  /* a NUL byte inside a line */
  gl_prom_sample s;
  assert_int_equal(gl_prom_parse_line("m{a=\"x\0y\"} 1", 13, &s), -1);
  assert_int_equal(gl_prom_parse_line("m 1\0", 4, &s), -1);
}

static void test_bounds(void **state) {
  (void)state;
  gl_prom_sample s;
  /* 16 labels are fine, 17 are not */
  char line[1024];
  size_t n = (size_t)snprintf(line, sizeof line, "m{");
  for (int i = 0; i < GL_PROM_MAX_LABELS; i++)
    n += (size_t)snprintf(line + n, sizeof line - n, "l%d=\"%d\",", i, i);
  snprintf(line + n, sizeof line - n, "} 1");
  assert_int_equal(parse(line, &s), 1);
  assert_int_equal(s.label_count, GL_PROM_MAX_LABELS);
  assert_string_equal(gl_prom_label_value(&s, "l15"), "15");
  gl_prom_sample_free(&s);
  snprintf(line + n, sizeof line - n, "l16=\"16\"} 1");
  assert_int_equal(parse(line, &s), -1);

  /* a name of GL_PROM_MAX_NAME bytes is fine, one more is not */
  char name[GL_PROM_MAX_NAME + 8];
  memset(name, 'a', GL_PROM_MAX_NAME);
  snprintf(name + GL_PROM_MAX_NAME, 8, " 1");
  assert_int_equal(parse(name, &s), 1);
  assert_int_equal(strlen(s.name), GL_PROM_MAX_NAME);
  gl_prom_sample_free(&s);
  memset(name, 'a', GL_PROM_MAX_NAME + 1);
  snprintf(name + GL_PROM_MAX_NAME + 1, 7, " 1");
  assert_int_equal(parse(name, &s), -1);

  /* a line longer than GL_PROM_MAX_LINE: refused, although well-formed */
  size_t big = GL_PROM_MAX_LINE + 16;
  char *long_line = malloc(big + 1);
  assert_non_null(long_line);
  n = (size_t)snprintf(long_line, big + 1, "m{v=\"");
  memset(long_line + n, 'x', big - n - 6);
  memcpy(long_line + big - 6, "\"} 1  ", 6);
  long_line[big] = 0;
  assert_int_equal(gl_prom_parse_line(long_line, big, &s), -1);
  /* the same shortened to the limit is a sample with all of its value */
  memcpy(long_line + GL_PROM_MAX_LINE - 6, "\"} 1  ", 6);
  assert_int_equal(gl_prom_parse_line(long_line, GL_PROM_MAX_LINE, &s), 1);
  assert_int_equal(strlen(s.labels[0].value), GL_PROM_MAX_LINE - 6 - 5);
  gl_prom_sample_free(&s);
  free(long_line);

  /* the parser stops at len: no read past it, no NUL needed */
  char unterminated[8] = {'m', ' ', '1', '2', '3', '4', '5', '6'};
  assert_int_equal(gl_prom_parse_line(unterminated, 4, &s), 1);
  assert_true(s.value == 12);
  gl_prom_sample_free(&s);
}

static const char exposition[] =
    "# HELP gpulease_leases_acquired_total Leases granted.\n"
    "# TYPE gpulease_leases_acquired_total counter\n"
    "gpulease_leases_acquired_total 7\n"
    "gpulease_leases_dropped_total{reason=\"freed\"} 2\n"
    "gpulease_leases_dropped_total{reason=\"expired\"} 3\n"
    "\n"
    "gpulease_request_duration_seconds_count{op=\"GPU_SUBMIT\"} 10\r\n"
    "this line { is not a sample\n"
    "gpulease_request_duration_seconds_count{op=\"LEASE_ALLOC\"} 4\n"
    "gpulease_vram_allocated_bytes{gpu=\"0\",uuid=\"EMU-0\"} 1048576\n"
    "gpulease_vram_allocated_bytes{gpu=\"1\",uuid=\"EMU-1\"} 0\n"
    "gpulease_connections 2"; /* no newline at the end */

static void test_whole_text(void **state) {
  (void)state;
  gl_prom_set set;
  assert_int_equal(gl_prom_parse(exposition, strlen(exposition), &set), 0);
  assert_int_equal(set.count, 8);
  assert_int_equal(set.malformed, 1);
  assert_int_equal(set.first_bad, 8);
  assert_int_equal(set.dropped, 0);
  const gl_prom_sample *p = gl_prom_find(&set, "gpulease_leases_acquired_total", NULL, NULL);
  assert_non_null(p);
  assert_true(p->value == 7);
  p = gl_prom_find(&set, "gpulease_request_duration_seconds_count", "op", "LEASE_ALLOC");
  assert_non_null(p);
  assert_true(p->value == 4);
  assert_null(gl_prom_find(&set, "gpulease_request_duration_seconds_count", "op", "NOPE"));
  assert_null(gl_prom_find(&set, "gpulease_leases", NULL, NULL)); /* no prefix matches */
  p = gl_prom_find(&set, "gpulease_vram_allocated_bytes", "gpu", "0");
  assert_non_null(p);
  assert_true(p->value == 1048576);
  assert_true(gl_prom_find(&set, "gpulease_connections", NULL, NULL)->value == 2);
  size_t found;
  assert_true(gl_prom_sum(&set, "gpulease_leases_dropped_total", NULL, NULL, &found) == 5);
  assert_int_equal(found, 2);
  assert_true(gl_prom_sum(&set, "gpulease_leases_dropped_total", "reason", "expired", &found) == 3);
  assert_int_equal(found, 1);
  assert_true(gl_prom_sum(&set, "absent", NULL, NULL, &found) == 0);
  assert_int_equal(found, 0);
  gl_prom_set_free(&set);
  assert_int_equal(set.count, 0);
  assert_null(set.samples);

  /* an empty text, and one of comments only */
  assert_int_equal(gl_prom_parse("", 0, &set), 0);
  assert_int_equal(set.count, 0);
  gl_prom_set_free(&set);
  assert_int_equal(gl_prom_parse("# a\n# b\n", 8, &set), 0);
  assert_int_equal(set.count + set.malformed, 0);
  gl_prom_set_free(&set);
}

static void test_sample_limit(void **state) {
  (void)state;
  size_t lines = GL_PROM_MAX_SAMPLES + 3;
  char *text = malloc(lines * 16);
  assert_non_null(text);
  size_t n = 0;
  for (size_t i = 0; i < lines; i++) n += (size_t)sprintf(text + n, "m{i=\"%zu\"} 1\n", i);
  gl_prom_set set;
  assert_int_equal(gl_prom_parse(text, n, &set), 0);
  assert_int_equal(set.count, GL_PROM_MAX_SAMPLES);
  assert_int_equal(set.dropped, 3);
  assert_int_equal(set.malformed, 0);
  assert_true(gl_prom_sum(&set, "m", NULL, NULL, NULL) == GL_PROM_MAX_SAMPLES);
  gl_prom_set_free(&set);
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plain_and_labels), cmocka_unit_test(test_escapes),
      cmocka_unit_test(test_special_values),   cmocka_unit_test(test_comments_and_blanks),
      cmocka_unit_test(test_malformed),        cmocka_unit_test(test_bounds),
      cmocka_unit_test(test_whole_text),       cmocka_unit_test(test_sample_limit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
