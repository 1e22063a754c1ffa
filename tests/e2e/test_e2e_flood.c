/*
 * test_e2e_flood.c - issue 30, address validation under load: a flood of
 * 1,000 client Initials from 127.0.0.1 that never finish their handshake
 * (initial_flood.c) must not lock out a real client from the same
 * address, nor make the daemon hold a connection (or memory) for each.
 * gpuleased runs with its defaults (--retry-above-handshakes 64,
 * --retry-above-address-handshakes 8, --handshake-timeout-ms 5000,
 * --max-connections-per-address 64); /metrics counts its handshakes,
 * connections and Retries.
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
#include "initial_flood.h"

enum { FLOOD = 1000 };

/* The metrics port from the daemon's log line "metrics: http://H:P/metrics". */
static int metrics_port(const gl_test_daemon *d) {
  char path[300], line[1024];
  snprintf(path, sizeof path, "%s/daemon.log", d->dir);
  FILE *f = fopen(path, "r");
  int port = 0;
  const char *tag = "metrics: http://127.0.0.1:";
  while (f && fgets(line, sizeof line, f)) {
    const char *p = strstr(line, tag);
    if (p) port = atoi(p + strlen(tag));
  }
  if (f) fclose(f);
  return port;
}

/* The value of the sample `name` (no labels) in /metrics, or -1. */
static double metric(int port, const char *name) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  static const char req[] = "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
  assert_int_equal(write(fd, req, sizeof req - 1), (ssize_t)(sizeof req - 1));
  static char body[1 << 20];
  size_t got = 0;
  ssize_t r;
  while (got + 1 < sizeof body && (r = read(fd, body + got, sizeof body - 1 - got)) > 0)
    got += (size_t)r;
  body[got] = 0;
  close(fd);
  size_t n = strlen(name);
  for (const char *p = body; (p = strstr(p, name)); p += n)
    if (p[-1] == '\n' && p[n] == ' ') return atof(p + n + 1);
  return -1;
}

/* The daemon's resident memory (VmRSS), KiB; -1 when unknown. */
static long rss_kib(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0) kib = atol(line + 6);
  if (f) fclose(f);
  return kib;
}

static uint64_t ms_since(uint64_t t0) { return (gl_mono_ns() - t0) / 1000000; }

/* /metrics is a snapshot the daemon takes each second: waits for the next. */
static void settle(void) { usleep(1300 * 1000); }

/* A real client (QUIC, certificate pinned): connect and the inventory.
 * GPULEASE_OK or the failure, with its message on stderr. */
static gpulease_status connect_and_inventory(const gl_test_daemon *d) {
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = d->addr;
  o.pin_sha256 = d->fingerprint;
  o.timeout_ms = 3000;
  o.no_local = 1;
  gpulease_client *c = NULL;
  gpulease_error err;
  gpulease_status st = gpulease_client_connect(&o, &c, &err);
  if (st != GPULEASE_OK) {
    fprintf(stderr, "connect: %s\n", err.message);
    return st;
  }
  gpulease_inventory *inv = calloc(1, sizeof *inv);
  assert_non_null(inv);
  gpulease_inventory_init(inv);
  st = gpulease_inventory_get(c, inv, &err);
  if (st != GPULEASE_OK) fprintf(stderr, "inventory: %s\n", err.message);
  else assert_true(inv->gpu_count >= 1);
  free(inv);
  gpulease_client_close(c);
  return st;
}

static void test_initial_flood(void **state) {
  (void)state;
  const char *extra[] = {"--metrics-listen", "127.0.0.1:0", NULL};
  gl_test_daemon d;
  assert_int_equal(gl_test_daemon_start(&d, gl_test_on_gpu() ? NULL : "64M", extra), 0);
  int mport = metrics_port(&d);
  assert_true(mport > 0);
  /* d.addr is 127.0.0.1:PORT. */
  const char *colon = strrchr(d.addr, ':');
  assert_non_null(colon);
  struct sockaddr_in to = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)atoi(colon + 1)),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  struct sockaddr_in from = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

  assert_int_equal(connect_and_inventory(&d), GPULEASE_OK); /* warm: first-use costs */
  settle();
  long rss0 = rss_kib(d.pid);
  double retries0 = metric(mport, "gpulease_quic_retries_total");

  uint64_t t0 = gl_mono_ns();
  int sent = gl_test_initial_flood((struct sockaddr *)&to, sizeof to, (struct sockaddr *)&from,
                                   FLOOD, 16, 25);
  uint64_t flood_ms = ms_since(t0);
  assert_int_equal(sent, FLOOD);

  /* A real client from the same address, at once: it answers the Retry
   * and gets in, handshake and inventory within 1 s. */
  t0 = gl_mono_ns();
  gpulease_status st = connect_and_inventory(&d);
  uint64_t client_ms = ms_since(t0);
  fprintf(stderr, "flood: %d Initials in %llu ms; then connect + inventory in %llu ms\n", sent,
          (unsigned long long)flood_ms, (unsigned long long)client_ms);
  assert_int_equal(st, GPULEASE_OK);
  assert_true(client_ms < 1000);

  /* The flood holds no more than the per-address handshake limit (8):
   * the rest got a Retry and left nothing behind. */
  settle();
  double hs = metric(mport, "gpulease_quic_handshakes");
  double conns = metric(mport, "gpulease_connections");
  double retries = metric(mport, "gpulease_quic_retries_total") - retries0;
  long rss1 = rss_kib(d.pid);
  fprintf(stderr,
          "after the flood: %.0f handshakes under way, %.0f connections, %.0f Retries, "
          "RSS %ld -> %ld KiB\n",
          hs, conns, retries, rss0, rss1);
  assert_true(hs >= 1 && hs <= 8); /* the first few got connections: the flood arrived */
  assert_true(conns >= 1 && conns <= 8 + 1);
  assert_true(retries >= FLOOD / 2); /* the kernel may drop some of the flood */
  if (rss0 > 0 && rss1 > 0) assert_true(rss1 - rss0 < 32 * 1024);

  /* A second flood changes none of it, and the client still gets in. */
  sent = gl_test_initial_flood((struct sockaddr *)&to, sizeof to, (struct sockaddr *)&from, FLOOD,
                               16, 25);
  assert_int_equal(sent, FLOOD);
  uint64_t flood_end = gl_mono_ns();
  t0 = gl_mono_ns();
  assert_int_equal(connect_and_inventory(&d), GPULEASE_OK);
  client_ms = ms_since(t0);
  settle();
  hs = metric(mport, "gpulease_quic_handshakes");
  long rss2 = rss_kib(d.pid);
  fprintf(stderr, "second flood: connect + inventory in %llu ms, %.0f handshakes, RSS %ld KiB\n",
          (unsigned long long)client_ms, hs, rss2);
  assert_true(client_ms < 1000);
  assert_true(hs >= 0 && hs <= 8);
  if (rss0 > 0 && rss2 > 0) assert_true(rss2 - rss0 < 32 * 1024);

  /* The half-open connections go at the handshake timeout (5 s after
   * their first packet, so at most that long after the second flood);
   * /metrics shows it within a second more. */
  while ((hs = metric(mport, "gpulease_quic_handshakes")) > 0 && ms_since(flood_end) < 15000)
    usleep(100 * 1000);
  uint64_t gone_ms = ms_since(flood_end);
  fprintf(stderr, "half-open handshakes gone %llu ms after the second flood\n",
          (unsigned long long)gone_ms);
  assert_true(hs == 0);
  assert_true(gone_ms < 5000 + 2500);
  gl_test_flood_close();
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_initial_flood),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
