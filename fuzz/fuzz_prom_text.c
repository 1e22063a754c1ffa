/*
 * fuzz_prom_text.c - libFuzzer harness for the Prometheus text parser of
 * `gpulease top` (src/cli/prom_text.c), which reads whatever a /metrics
 * endpoint sends.
 *
 * Every input is parsed as a whole exposition (gl_prom_parse) and line by
 * line (gl_prom_parse_line). The sanitizers catch out-of-bounds reads and
 * undefined behaviour; on top of that the harness checks properties and
 * abort()s when one fails:
 *
 *   - the whole-text parse and the line-by-line parse agree: as many
 *     samples, as many malformed lines, the same samples in the same order;
 *   - every sample has a well-formed name, at most GL_PROM_MAX_LABELS
 *     labels with well-formed, distinct names, and gl_prom_find finds a
 *     sample of its name and first label;
 *   - a sample written back in the canonical form (labels escaped, the
 *     value as %.17g, NaN, +Inf or -Inf) parses again to the same sample.
 *
 * Built with -fsanitize=fuzzer by fuzz/CMakeLists.txt (GL_FUZZ; fuzz/run.sh
 * runs it as target "prom").
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/prom_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int cond, const char *what) {
  if (!cond) {
    fprintf(stderr, "fuzz_prom_text: property violated: %s\n", what);
    abort();
  }
}

static int name_ok(const char *s, int metric) {
  if (!s || !*s || strlen(s) > GL_PROM_MAX_NAME) return 0;
  for (size_t i = 0; s[i]; i++) {
    char c = s[i];
    int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (metric && c == ':');
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return 0;
  }
  return 1;
}

static int same_value(double a, double b) {
  return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0 || (a == b && a == 0);
}

static int same_sample(const gl_prom_sample *a, const gl_prom_sample *b) {
  if (strcmp(a->name, b->name) || a->label_count != b->label_count) return 0;
  for (size_t i = 0; i < a->label_count; i++)
    if (strcmp(a->labels[i].name, b->labels[i].name) || strcmp(a->labels[i].value, b->labels[i].value))
      return 0;
  return same_value(a->value, b->value) && a->has_timestamp == b->has_timestamp &&
         (!a->has_timestamp || a->timestamp_ms == b->timestamp_ms);
}

static void put(char **p, size_t *left, const char *s, size_t n) {
  check(n < *left, "canonical form larger than its buffer");
  memcpy(*p, s, n);
  *p += n;
  *left -= n;
}

/* The canonical form of s into buf; its length. */
static size_t canonical(const gl_prom_sample *s, char *buf, size_t cap) {
  char *p = buf, num[64];
  size_t left = cap;
  put(&p, &left, s->name, strlen(s->name));
  if (s->label_count) {
    put(&p, &left, "{", 1);
    for (size_t i = 0; i < s->label_count; i++) {
      if (i) put(&p, &left, ",", 1);
      put(&p, &left, s->labels[i].name, strlen(s->labels[i].name));
      put(&p, &left, "=\"", 2);
      for (const char *v = s->labels[i].value; *v; v++) {
        if (*v == '\\') put(&p, &left, "\\\\", 2);
        else if (*v == '"') put(&p, &left, "\\\"", 2);
        else if (*v == '\n') put(&p, &left, "\\n", 2);
        else put(&p, &left, v, 1);
      }
      put(&p, &left, "\"", 1);
    }
    put(&p, &left, "}", 1);
  }
  int n;
  if (isnan(s->value)) n = snprintf(num, sizeof num, " NaN");
  else if (isinf(s->value)) n = snprintf(num, sizeof num, " %cInf", s->value > 0 ? '+' : '-');
  else n = snprintf(num, sizeof num, " %.17g", s->value);
  put(&p, &left, num, (size_t)n);
  if (s->has_timestamp) {
    n = snprintf(num, sizeof num, " %lld", (long long)s->timestamp_ms);
    put(&p, &left, num, (size_t)n);
  }
  return (size_t)(p - buf);
}

static void check_sample(const gl_prom_set *set, const gl_prom_sample *s) {
  check(name_ok(s->name, 1), "a sample's name is not a metric name");
  check(s->label_count <= GL_PROM_MAX_LABELS, "too many labels");
  for (size_t i = 0; i < s->label_count; i++) {
    check(name_ok(s->labels[i].name, 0), "a label's name is not a label name");
    check(s->labels[i].value != NULL, "a label without a value");
    for (size_t j = 0; j < i; j++)
      check(strcmp(s->labels[i].name, s->labels[j].name) != 0, "a label given twice");
  }
  const char *l = s->label_count ? s->labels[0].name : NULL;
  const char *v = s->label_count ? s->labels[0].value : NULL;
  check(gl_prom_find(set, s->name, l, v) != NULL, "gl_prom_find misses a parsed sample");
  /* every byte of a label value may double when escaped */
  size_t cap = GL_PROM_MAX_LINE * 2 + 128;
  char *buf = malloc(cap);
  if (!buf) return;
  size_t n = canonical(s, buf, cap);
  gl_prom_sample again;
  int r = gl_prom_parse_line(buf, n, &again);
  /* escaping may push a line over GL_PROM_MAX_LINE: then refused, fine */
  if (n <= GL_PROM_MAX_LINE) {
    check(r == 1, "the canonical form of a sample does not parse");
    check(same_sample(s, &again), "the canonical form parses to another sample");
    gl_prom_sample_free(&again);
  } else {
    check(r == -1, "a line over GL_PROM_MAX_LINE parsed");
  }
  free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  gl_prom_set set;
  if (gl_prom_parse(text, size, &set) != 0) return 0; /* out of memory */
  size_t pos = 0, samples = 0, malformed = 0;
  while (pos < size) {
    const char *nl = memchr(text + pos, '\n', size - pos);
    size_t n = nl ? (size_t)(nl - (text + pos)) : size - pos;
    gl_prom_sample s;
    int r = gl_prom_parse_line(text + pos, n, &s);
    check(r >= -1 && r <= 1, "gl_prom_parse_line returned something else");
    if (r == 1) {
      if (samples < set.count) /* the rest were dropped (GL_PROM_MAX_SAMPLES) */
        check(same_sample(&s, &set.samples[samples]), "the line parse and the text parse differ");
      samples++;
      gl_prom_sample_free(&s);
    } else {
      check(s.storage == NULL && s.name == NULL, "a refused line left a sample behind");
      malformed += r < 0;
    }
    pos += n + (nl != NULL);
  }
  check(samples == set.count + set.dropped, "sample counts differ");
  check(malformed == set.malformed, "malformed counts differ");
  check((set.malformed == 0) == (set.first_bad == 0), "first_bad without malformed lines");
  for (size_t i = 0; i < set.count; i++) check_sample(&set, &set.samples[i]);
  gl_prom_set_free(&set);
  return 0;
}
