/*
 * prom_text.h - a parser of the Prometheus text exposition format (0.0.4),
 * as `gpulease top` reads it from a daemon's /metrics.
 *
 * The input comes from the network and is not trusted: every size is
 * bounded, a malformed line is counted and skipped (never a crash, never a
 * partial sample), and parsing never reads past the given length (the text
 * need not be NUL-terminated).
 *
 * A sample line is
 *
 *     name [ '{' label '=' '"' value '"' { ',' label '=' '"' value '"' } [','] '}' ]
 *          value [ timestamp ]
 *
 * with blanks (spaces, tabs) between the parts. Names match
 * [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*; a label
 * value escapes backslash, double quote and line feed as \\, \" and \n
 * (other escapes, raw NUL bytes and a label given twice are malformed).
 * The value is a float ("NaN", "+Inf", "-Inf" too), the timestamp an
 * integer of milliseconds. Lines end with '\n' (a '\r' before it is
 * dropped); '#' lines (HELP, TYPE, comments) and blank lines are skipped.
 */
#ifndef GL_CLI_PROM_TEXT_H
#define GL_CLI_PROM_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GL_PROM_MAX_LINE 8192      /* bytes of one line, '\n' excluded */
#define GL_PROM_MAX_NAME 256       /* bytes of a metric or label name */
#define GL_PROM_MAX_LABELS 16      /* labels of one sample */
#define GL_PROM_MAX_SAMPLES 100000 /* samples kept from one text; more are counted as dropped */

typedef struct gl_prom_label {
  const char *name;
  const char *value; /* unescaped, NUL-terminated */
} gl_prom_label;

typedef struct gl_prom_sample {
  const char *name;
  gl_prom_label labels[GL_PROM_MAX_LABELS];
  size_t label_count;
  double value;
  bool has_timestamp;
  int64_t timestamp_ms;
  char *storage; /* owns name and the labels' strings */
} gl_prom_sample;

typedef struct gl_prom_set {
  gl_prom_sample *samples;
  size_t count, cap;
  size_t malformed;  /* lines skipped as malformed */
  size_t dropped;    /* well-formed samples beyond GL_PROM_MAX_SAMPLES */
  size_t first_bad;  /* 1-based line number of the first malformed line; 0: none */
} gl_prom_set;

/* Parses one line (without its '\n') into *out. Returns 1 for a sample
 * (out->storage is malloc'd: free it with gl_prom_sample_free), 0 for a
 * blank or '#' line, -1 for a malformed line or out of memory (*out then
 * owns nothing). */
int gl_prom_parse_line(const char *line, size_t len, gl_prom_sample *out);

void gl_prom_sample_free(gl_prom_sample *s);

/* Parses a whole text into *set (which it clears first). Malformed lines
 * are counted in set->malformed. 0, or -1 when out of memory (set is then
 * empty). */
int gl_prom_parse(const char *text, size_t len, gl_prom_set *set);

void gl_prom_set_free(gl_prom_set *set);

/* The value of a label of s, or NULL when s has no such label. */
const char *gl_prom_label_value(const gl_prom_sample *s, const char *label);

/* The first sample named name whose label `label` is `value` (label NULL:
 * any labels), or NULL. */
const gl_prom_sample *gl_prom_find(const gl_prom_set *set, const char *name, const char *label,
                                   const char *value);

/* The sum of the values of every sample named name whose label `label` is
 * `value` (label NULL: all samples of that name); *found is how many were
 * summed (may be NULL). */
double gl_prom_sum(const gl_prom_set *set, const char *name, const char *label, const char *value,
                   size_t *found);

#endif
