/*
 * test_emu_kprintf.c - device-side printf and assert on the emulated
 * device (src/emu/kprintf.c), with the kernels of tests/emu/kprint/
 * kprint.cu compiled by nvcc (PTX for sm_75 checked in beside it):
 *   - every case of kprint_cases.h, formatted by the kernel, equals the
 *     host snprintf's text for the same values (C's rules, which CUDA's
 *     printf follows for these conversions);
 *   - a launch's output is ordered by block, then thread; printf returns
 *     the number of arguments;
 *   - the device keeps at most its limit and counts what it dropped;
 *   - assert fails the launch with LAUNCH_FAILED and CUDA's assertion text
 *     (file, line, function, block, thread, expression).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "emu/emu.h"
#include "emu/kprint/kprint_cases.h"

#define REGION (1u << 20)

static char *read_file(const char *rel, size_t *len) {
  const char *src = getenv("GL_TEST_SRC_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", src ? src : GL_SOURCE_DIR, rel);
  FILE *f = fopen(path, "rb");
  if (!f)
    fail_msg("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = '\0';
  fclose(f);
  *len = (size_t)n;
  return buf;
}

typedef struct env {
  gl_emu_device *dev;
  gl_emu_module *mod;
  char err[1024];
} env;

static void env_open(env *e) {
  memset(e, 0, sizeof *e);
  e->dev = gl_emu_device_new(REGION);
  assert_non_null(e->dev);
  size_t len;
  char *ptx = read_file("tests/emu/kprint/kprint.ptx", &len);
  gpulease_status st = gl_emu_module_load(e->dev, ptx, len, &e->mod, e->err, sizeof e->err);
  free(ptx);
  if (st != GPULEASE_OK)
    fail_msg("load: %d %s", st, e->err);
}

static void env_close(env *e) {
  gl_emu_module_unload(e->dev, e->mod);
  gl_emu_device_free(e->dev);
}

static gpulease_status run(env *e, const char *kernel, uint32_t grid, uint32_t block,
                           void **args) {
  const gl_emu_function *fn = gl_emu_module_function(e->mod, kernel);
  if (!fn)
    fail_msg("no kernel %s", kernel);
  gl_emu_launch_cfg cfg = {.grid = {grid, 1, 1}, .block = {block, 1, 1}, .args = args,
                           .threads = 1};
  e->err[0] = 0;
  return gl_emu_launch(e->dev, fn, &cfg, NULL, e->err, sizeof e->err);
}

/* What the device has written since the last take, NUL-terminated. */
static char *take(env *e, uint64_t *dropped) {
  size_t n;
  char *t = gl_emu_device_take_output(e->dev, &n, dropped);
  char *s = malloc(n + 1);
  assert_non_null(s);
  if (n)
    memcpy(s, t, n);
  s[n] = 0;
  free(t);
  return s;
}

/* Appends snprintf(fmt, ...) to a growing string. */
static void cat(char **acc, size_t *len, const char *piece) {
  size_t n = strlen(piece);
  *acc = realloc(*acc, *len + n + 1);
  assert_non_null(*acc);
  memcpy(*acc + *len, piece, n + 1);
  *len += n;
}

#define HOST_CALL(fmt, ...)                                                                    \
  do {                                                                                         \
    char piece[4096];                                                                          \
    snprintf(piece, sizeof piece, fmt, __VA_ARGS__);                                           \
    cat(&want, &wlen, piece);                                                                  \
  } while (0);

/* Runs formats() with one set of values; compares with the host. */
static void check_formats(int i, unsigned u, long long ll, unsigned long long ull, double d,
                          float f, char c, short h, const char *s, int w, int pr) {
  env e;
  env_open(&e);
  size_t slen = strlen(s) + 1;
  uint64_t sdev = GL_EMU_REGION_BASE + 4096;
  memcpy(gl_emu_device_ptr(e.dev, sdev, slen), s, slen);
  void *p = (void *)(uintptr_t)(GL_EMU_REGION_BASE + 0x1230);
  uint64_t pdev = (uint64_t)(uintptr_t)p;
  uint64_t nan_bits = 0x7ff8000000000000ull; /* a quiet NaN, sign clear */
  double n;
  memcpy(&n, &nan_bits, sizeof n);
  void *args[] = {&i, &u, &ll, &ull, &d, &f, &c, &h, &sdev, &pdev, &w, &pr, &n};
  assert_int_equal(run(&e, "formats", 1, 1, args), GPULEASE_OK);
  char *got = take(&e, NULL);
  char *want = NULL;
  size_t wlen = 0;
  cat(&want, &wlen, "plain text, no arguments\n");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-extra-args"
/* %hd and %hhd with an int, as C's (and CUDA's) default promotions pass it */
#pragma GCC diagnostic ignored "-Wformat"
  KP_CASES(HOST_CALL)
#pragma GCC diagnostic pop
  /* line by line, for a readable failure */
  char *gs = got, *ws = want;
  while (*gs || *ws) {
    char *ge = strchr(gs, '\n'), *we = strchr(ws, '\n');
    size_t gn = ge ? (size_t)(ge - gs) : strlen(gs), wn = we ? (size_t)(we - ws) : strlen(ws);
    if (gn != wn || memcmp(gs, ws, gn) != 0)
      fail_msg("kernel: '%.*s'\nhost:   '%.*s'", (int)gn, gs, (int)wn, ws);
    gs += gn + (ge != NULL);
    ws += wn + (we != NULL);
  }
  assert_string_equal(got, want);
  if (getenv("GL_TEST_VERBOSE"))
    fputs(got, stderr);
  free(got);
  free(want);
  env_close(&e);
}

static void test_formats(void **state) {
  (void)state;
  check_formats(42, 3054198966u, -1234567890123ll, 18446744073709551615ull, 3.14159265358979,
                2.5f, 'Z', (short)-321, "hello", 7, 3);
  check_formats(0, 0, 0, 0, 0.0, 0.0f, ' ', 0, "", 0, 0);
  check_formats(-2147483647, 1u, 9223372036854775807ll, 1ull << 63, -1.5e-300,
                -3.4028235e38f, '\t', (short)32767, "a longer string, past widths", 30, 12);
  check_formats(123456, 0xdeadbeefu, 77, 0x0123456789abcdefull, 6.02214076e23, 1e-7f, '%',
                (short)-32768, "%d %s", -4, -1);
}

static void test_order_and_return(void **state) {
  (void)state;
  env e;
  env_open(&e);
  uint64_t ret = GL_EMU_REGION_BASE;
  void *args[] = {&ret};
  assert_int_equal(run(&e, "hello", 3, 40, args), GPULEASE_OK);
  char *got = take(&e, NULL);
  char *want = NULL;
  size_t wlen = 0;
  for (unsigned b = 0; b < 3; b++)
    for (unsigned t = 0; t < 40; t++) {
      char line[64];
      snprintf(line, sizeof line, "hello from thread %u of block %u\n", t, b);
      cat(&want, &wlen, line);
    }
  assert_string_equal(got, want);
  int32_t r[120];
  memcpy(r, gl_emu_device_ptr(e.dev, ret, sizeof r), sizeof r);
  for (int k = 0; k < 120; k++)
    assert_int_equal(r[k], 2);
  free(got);
  free(want);
  /* taken: nothing is left */
  size_t n = 1;
  assert_null(gl_emu_device_take_output(e.dev, &n, NULL));
  assert_int_equal(n, 0);
  env_close(&e);
}

static void test_limit(void **state) {
  (void)state;
  env e;
  env_open(&e);
  gl_emu_device_set_output_limit(e.dev, 1000);
  int n = 100;
  size_t line_len = strlen("line 0000000 ..\n");
  void *args[] = {&n};
  assert_int_equal(run(&e, "lines", 1, 1, args), GPULEASE_OK);
  uint64_t dropped = 0;
  char *got = take(&e, &dropped);
  assert_int_equal(strlen(got), 1000);
  assert_int_equal(dropped, 100 * line_len - 1000);
  assert_memory_equal(got, "line 0000000 ..\nline 0000001 ..\n", 32);
  free(got);
  /* the limit holds again after a take; a small launch fits */
  n = 2;
  assert_int_equal(run(&e, "lines", 1, 1, args), GPULEASE_OK);
  got = take(&e, &dropped);
  assert_string_equal(got, "line 0000000 ..\nline 0000001 ..\n");
  assert_int_equal(dropped, 0);
  free(got);
  env_close(&e);
}

/* The line of kprint.cu that holds the assert. */
static unsigned assert_line(void) {
  size_t len;
  char *src = read_file("tests/emu/kprint/kprint.cu", &len);
  unsigned line = 1, found = 0;
  for (char *q = src; *q && !found; q++) {
    if (strncmp(q, "  assert(p[", 11) == 0)
      found = line;
    if (*q == '\n')
      line++;
  }
  free(src);
  assert_true(found > 0);
  return found;
}

static void test_assert(void **state) {
  (void)state;
  env e;
  env_open(&e);
  uint64_t p = GL_EMU_REGION_BASE;
  int32_t *host = (int32_t *)gl_emu_device_ptr(e.dev, p, 64 * 4);
  memset(host, 0, 64 * 4);
  void *args[] = {&p};
  /* all zero: no assertion */
  assert_int_equal(run(&e, "check", 2, 32, args), GPULEASE_OK);
  free(take(&e, NULL));
  host[32 + 5] = 1; /* block 1, thread 5 */
  host[32 + 9] = 1;
  assert_int_equal(run(&e, "check", 2, 32, args), GPULEASE_LAUNCH_FAILED);
  char want[512];
  snprintf(want, sizeof want,
           "kprint.cu:%u: void check(const int *): block: [1,0,0], thread: [5,0,0] "
           "Assertion `p[blockIdx.x * blockDim.x + threadIdx.x] == 0` failed.",
           assert_line());
  if (!strstr(e.err, want))
    fail_msg("message '%s' lacks '%s'", e.err, want);
  assert_non_null(strstr(e.err, "CUDA_ERROR_ASSERT"));
  /* the printfs before it were written */
  char *got = take(&e, NULL);
  assert_non_null(strstr(got, "checking 0\n"));
  assert_non_null(strstr(got, "checking 37\n"));
  free(got);
  env_close(&e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_formats),
      cmocka_unit_test(test_order_and_return),
      cmocka_unit_test(test_limit),
      cmocka_unit_test(test_assert),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
