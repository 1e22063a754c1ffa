/*
 * test_e2e_metrics.c - gpuleased --metrics-listen: /metrics in the
 * Prometheus text format counts what the daemon did (leases acquired and
 * dropped by reason, submits, their output bytes and errors, request
 * latency by op, VRAM and sessions by GPU), and /healthz answers while it serves. On
 * the emulated device in CI, on the GPU from the GPU check.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "daemon_harness.h"
#include "gpulease/gpulease.h"
#include "lib_check.h"

/* The metrics port from the daemon's log line "metrics: http://H:P/metrics". */
static int metrics_port(const gl_test_daemon *d) {
  char path[300], line[1024];
  snprintf(path, sizeof path, "%s/daemon.log", d->dir);
  FILE *f = fopen(path, "r");
  int port = 0;
  while (f && fgets(line, sizeof line, f)) {
    const char *p = strstr(line, "metrics: http://127.0.0.1:");
    if (p) port = atoi(p + strlen("metrics: http://127.0.0.1:"));
  }
  if (f) fclose(f);
  return port;
}

/* GET path from 127.0.0.1:port; the HTTP status, the body in out. */
static int http_get(int port, const char *path, char *out, size_t outlen) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  char req[256];
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n", path);
  assert_int_equal(write(fd, req, (size_t)n), n);
  size_t got = 0;
  ssize_t r;
  while (got + 1 < outlen && (r = read(fd, out + got, outlen - 1 - got)) > 0) got += (size_t)r;
  out[got] = 0;
  close(fd);
  int status = 0;
  sscanf(out, "HTTP/1.%*d %d", &status);
  char *body = strstr(out, "\r\n\r\n");
  if (body) memmove(out, body + 4, strlen(body + 4) + 1);
  return status;
}

/* The value of the sample `series` (name and labels, exactly) in text. */
static double sample(const char *text, const char *series) {
  size_t n = strlen(series);
  for (const char *p = text; (p = strstr(p, series)); p += n)
    if ((p == text || p[-1] == '\n') && p[n] == ' ') return atof(p + n + 1);
  return -1;
}

/* Validates the exposition with promtool (Debian's prometheus package),
 * which CI installs; the GPU node has none, and says so. */
static void check_exposition(const char *text) {
  if (system("command -v promtool >/dev/null 2>&1") != 0) {
    if (!gl_test_on_gpu()) fail_msg("promtool (Debian package prometheus) is not installed");
    fprintf(stderr, "promtool not found: the exposition is not validated here\n");
    return;
  }
  char path[64];
  snprintf(path, sizeof path, "/tmp/gl-metrics-%d.txt", (int)getpid());
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_true(fputs(text, f) >= 0);
  assert_int_equal(fclose(f), 0);
  char cmd[200];
  snprintf(cmd, sizeof cmd, "promtool check metrics < %s 1>&2", path);
  int rc = system(cmd);
  unlink(path);
  assert_int_equal(rc, 0);
}

static void test_metrics(void **state) {
  (void)state;
  gl_test_daemon d;
  const char *extra[] = {"--metrics-listen", "127.0.0.1:0", NULL};
  assert_int_equal(gl_test_daemon_start(&d, gl_test_on_gpu() ? NULL : "64M", extra), 0);
  int port = metrics_port(&d);
  assert_true(port > 0);
  static char body[1 << 20];
  assert_int_equal(http_get(port, "/healthz", body, sizeof body), 200);
  assert_string_equal(body, "ok\n");
  assert_int_equal(http_get(port, "/nope", body, sizeof body), 404);

  gpulease_client *c = gl_test_connect(&d, 60000);
  gpulease_lease l;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 4 * MiB, 60, &l, E));
  gpulease_session *s1, *s2;
  CHECK(gpulease_session_open(c, &l, &s1, E));
  CHECK(gpulease_session_open(c, &l, &s2, E));
  usleep(1300 * 1000); /* the next snapshot */
  static char early[1 << 16];
  assert_int_equal(http_get(port, "/metrics", early, sizeof early), 200);
  assert_non_null(strstr(early, "gpulease_leases{gpu=\"0\""));
  const char *sp = strstr(early, "\ngpulease_sessions{gpu=\"0\"");
  assert_non_null(sp);
  assert_true(atof(strchr(sp, '}') + 2) == 2);
  /* The gauges agree with the inventory taken at the same time: the VRAM
   * granted and the live leases exactly, NVML's total memory exactly and
   * its free memory within 1% (other processes, and the snapshot's age). */
  static gpulease_inventory inv = {.struct_version = GPULEASE_INVENTORY_VERSION};
  CHECK(gpulease_inventory_get(c, &inv, E));
  assert_true(inv.gpu_count >= 1);
  for (uint32_t g = 0; g < inv.gpu_count; g++) {
    const gpulease_gpu_info *gi = &inv.gpus[g];
    char series[200];
    snprintf(series, sizeof series, "gpulease_vram_allocated_bytes{gpu=\"%u\",uuid=\"%s\"}", g,
             gi->uuid);
    fprintf(stderr, "GPU %u: inventory leased %llu, total %llu, free %llu; %s %.0f\n", g,
            (unsigned long long)gi->leased_vram_bytes, (unsigned long long)gi->total_vram_bytes,
            (unsigned long long)gi->free_vram_bytes, series, sample(early, series));
    assert_true(sample(early, series) == (double)gi->leased_vram_bytes);
    snprintf(series, sizeof series, "gpulease_leases{gpu=\"%u\",uuid=\"%s\"}", g, gi->uuid);
    assert_true(sample(early, series) == (double)gi->active_leases);
    snprintf(series, sizeof series, "gpulease_gpu_memory_total_bytes{gpu=\"%u\",uuid=\"%s\"}",
             g, gi->uuid);
    double total = sample(early, series);
    fprintf(stderr, "  %s %.0f\n", series, total);
    assert_true(total > 0);
    snprintf(series, sizeof series, "gpulease_gpu_memory_free_bytes{gpu=\"%u\",uuid=\"%s\"}",
             g, gi->uuid);
    double free_b = sample(early, series);
    fprintf(stderr, "  %s %.0f\n", series, free_b);
    double diff = free_b - (double)gi->free_vram_bytes;
    assert_true((diff < 0 ? -diff : diff) <= 0.01 * total);
    if (gl_test_on_gpu()) {
      snprintf(series, sizeof series,
               "gpulease_gpu_temperature_celsius{gpu=\"%u\",uuid=\"%s\"}", g, gi->uuid);
      assert_true(sample(early, series) > 0);
    }
  }
  /* Modules: the iota PTX loaded twice in a session of this lease (the
   * second time from the context: a module cache hit), then in a session
   * of a second lease, another worker (a miss; its compiled image comes
   * from the JIT cache on disk, stored by the first load). */
  size_t ptx_len;
  char *ptx = gl_test_read_ptx("iota", &ptx_len);
  assert_non_null(ptx);
  gpulease_module mod;
  gpulease_module_source src[3];
  CHECK(gpulease_module_load(s1, ptx, ptx_len, GPULEASE_IMAGE_PTX, &mod, &src[0], E));
  CHECK(gpulease_module_load(s1, ptx, ptx_len, GPULEASE_IMAGE_PTX, &mod, &src[1], E));
  gpulease_lease l2;
  gpulease_session *s3;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 4 * MiB, 60, &l2, E));
  CHECK(gpulease_session_open(c, &l2, &s3, E));
  CHECK(gpulease_module_load(s3, ptx, ptx_len, GPULEASE_IMAGE_PTX, &mod, &src[2], E));
  fprintf(stderr, "module sources: %d %d %d\n", (int)src[0], (int)src[1], (int)src[2]);
  assert_int_equal(src[1], GPULEASE_MODULE_IN_CONTEXT);
  assert_int_equal(src[2], GPULEASE_MODULE_DISK_CACHE);
  free(ptx);
  CHECK(gpulease_session_close(s3, E));
  CHECK(gpulease_lease_free(c, &l2, E));
  CHECK(gpulease_session_close(s1, E));
  CHECK(gpulease_session_close(s2, E));
  gl_test_run_iota(c, &l); /* 1024 bytes out */
  gl_test_run_iota(c, &l);
  gpulease_lease bad = l;
  bad.secret[5] ^= 1;
  gpulease_error err;
  assert_int_equal(gpulease_lease_query(c, &bad, &err), GPULEASE_UNAUTHORIZED);
  CHECK(gpulease_lease_free(c, &l, E));
  usleep(1300 * 1000); /* the next snapshot */
  assert_int_equal(http_get(port, "/metrics", body, sizeof body), 200);
  for (const char *p = body; (p = strstr(p, "\ngpulease_")); p++) /* the samples, not HELP */
    if (!strncmp(p + 1, "gpulease_gpu_", 13) || !strncmp(p + 1, "gpulease_leases", 15) ||
        !strncmp(p + 1, "gpulease_submit", 15) || !strncmp(p + 1, "gpulease_vram", 13))
      fprintf(stderr, "%.*s\n", (int)strcspn(p + 1, "\n"), p + 1);
  assert_true(sample(body, "gpulease_leases_acquired_total") == 2);
  assert_true(sample(body, "gpulease_leases_dropped_total{reason=\"freed\"}") == 2);
  assert_true(sample(body, "gpulease_leases_dropped_total{reason=\"expired\"}") == 0);
  assert_true(sample(body, "gpulease_submits_total") == 2);
  assert_true(sample(body, "gpulease_submit_output_bytes_total") == 2048);
  assert_true(sample(body, "gpulease_request_duration_seconds_count{op=\"GPU_SUBMIT\"}") == 2);
  assert_true(sample(body, "gpulease_request_errors_total{op=\"LEASE_QUERY\"}") == 1);
  assert_true(sample(body, "gpulease_request_bytes_total") > 2 * 200);   /* two PTX images */
  assert_true(sample(body, "gpulease_response_bytes_total") > 2 * 1024); /* two outputs */
  assert_non_null(strstr(body, "gpulease_vram_allocated_bytes{gpu=\"0\""));
  assert_non_null(strstr(body, "gpulease_leases{gpu=\"0\""));
  assert_non_null(strstr(body, "gpulease_gpu_teardowns{gpu=\"0\""));
  assert_non_null(strstr(body, "# TYPE gpulease_request_duration_seconds histogram"));
  assert_non_null(strstr(body, "gpulease_request_duration_seconds_bucket{op=\"GPU_SUBMIT\",le=\"+Inf\"} 2"));
  /* Module loads: the two submits (a miss, then a hit in the worker's
   * module cache) and the three session loads above (a miss, a hit from
   * the context, a miss in the second lease's worker). The first submit's
   * load of the PTX looked in the JIT cache on disk (a fresh state
   * directory: a miss) and stored the compiled image (the driver's cubin;
   * for the emulated device, the PTX once checked), which the first
   * session load and the second lease's load found (two hits). */
  fprintf(stderr, "module cache %.0f hits %.0f misses; JIT cache %.0f hits %.0f misses %.0f stores\n",
          sample(body, "gpulease_module_cache_hits_total"),
          sample(body, "gpulease_module_cache_misses_total"),
          sample(body, "gpulease_jit_cache_hits_total"),
          sample(body, "gpulease_jit_cache_misses_total"),
          sample(body, "gpulease_jit_cache_stores_total"));
  assert_true(sample(body, "gpulease_module_cache_misses_total") == 3);
  assert_true(sample(body, "gpulease_module_cache_hits_total") == 2);
  assert_true(sample(body, "gpulease_jit_cache_misses_total") == 1);
  assert_true(sample(body, "gpulease_jit_cache_stores_total") == 1);
  assert_true(sample(body, "gpulease_jit_cache_hits_total") == 2);
  check_exposition(body);
  /* A submit refused: counted by status. */
  gpulease_submit_desc sd;
  gpulease_submit_desc_default(&sd);
  sd.image = "x";
  sd.image_size = 1;
  sd.kernel = "k";
  gpulease_submit_result r = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
  assert_int_equal(gpulease_submit(c, &bad, &sd, &r, &err), GPULEASE_NOT_FOUND); /* freed */
  usleep(1300 * 1000);
  assert_int_equal(http_get(port, "/metrics", body, sizeof body), 200);
  assert_true(sample(body, "gpulease_submit_errors_total{status=\"NOT_FOUND\"}") == 1);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_metrics)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
