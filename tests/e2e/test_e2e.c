/*
 * test_e2e.c - gpuleased and libgpulease over loopback QUIC, on a machine
 * without a GPU: inventory, leases on a node with no GPU (--device cuda),
 * the whole lease life cycle on the emulated device (worker processes
 * included),
 * authentication, malformed and oversized frames, TLS pinning, and 50
 * concurrent clients.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon_harness.h"
#include "gpulease/gpulease.h"
#include "net/quic.h"
#include "proto/wire.h"

#define MiB (1ull << 20)

/* ---------------------------------------------------------------- no GPU */

static void test_no_gpu_node(void **state) {
  (void)state;
  gl_test_daemon d;
  assert_int_equal(gl_test_daemon_start(&d, NULL, NULL), 0);
  gpulease_client *c = gl_test_connect(&d, 10000);
  gpulease_inventory *inv = calloc(1, sizeof *inv);
  gpulease_inventory_init(inv);
  gpulease_error err;
  assert_int_equal(gpulease_inventory_get(c, inv, &err), GPULEASE_OK);
  if (inv->gpu_count > 0) { /* run where there is a GPU: nothing to check here */
    printf("skipped: this machine has %u GPU(s)\n", (unsigned)inv->gpu_count);
    free(inv);
    gpulease_client_close(c);
    assert_int_equal(gl_test_daemon_stop(&d), 0);
    skip();
    return;
  }
  assert_int_equal(inv->gpu_count, 0);
  assert_int_equal(inv->max_ttl_s, 300);
  free(inv);

  gpulease_lease l;
  assert_int_equal(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, MiB, 10, &l, &err),
                   GPULEASE_NO_DEVICE);
  assert_int_equal(err.status, GPULEASE_NO_DEVICE);
  assert_non_null(strstr(err.message, "no GPU on this node"));
  assert_non_null(strstr(err.message, "CUDA"));

  memset(&l, 0, sizeof l);
  l.id = 12345;
  assert_int_equal(gpulease_lease_query(c, &l, &err), GPULEASE_NOT_FOUND);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ----------------------------------------------------------- lease cycle */

static void test_lease_cycle(void **state) {
  (void)state;
  gl_test_daemon d;
  const char *extra[] = {"--max-ttl", "30", NULL};
  assert_int_equal(gl_test_daemon_start(&d, "64M", extra), 0);
  gpulease_client *c = gl_test_connect(&d, 10000);
  gpulease_error err;

  gpulease_inventory *inv = calloc(1, sizeof *inv);
  gpulease_inventory_init(inv);
  assert_int_equal(gpulease_inventory_get(c, inv, &err), GPULEASE_OK);
  assert_int_equal(inv->gpu_count, 1);
  assert_int_equal(inv->gpus[0].total_vram_bytes, 64 * MiB);
  assert_true(inv->gpus[0].flags & GPULEASE_GPU_EMULATED);
  assert_non_null(strstr(inv->gpus[0].name, "emulated"));
  assert_int_equal(inv->max_ttl_s, 30);

  gpulease_lease l;
  assert_int_equal(gpulease_lease_alloc(c, 0, 4 * MiB, 20, &l, &err), GPULEASE_OK);
  assert_int_not_equal(l.id, 0);
  assert_int_equal(l.vram_bytes, 4 * MiB);
  assert_int_equal(l.ttl_s, 20);
  assert_true(l.remaining_ms > 19000 && l.remaining_ms <= 20000);
  uint8_t zero[GPULEASE_SECRET_BYTES] = {0};
  assert_memory_not_equal(l.secret, zero, GPULEASE_SECRET_BYTES);
  assert_int_equal(gl_test_daemon_children(&d), 1); /* the lease's worker */

  assert_int_equal(gpulease_inventory_get(c, inv, &err), GPULEASE_OK);
  assert_int_equal(inv->gpus[0].leased_vram_bytes, 4 * MiB);
  assert_int_equal(inv->gpus[0].active_leases, 1);
  free(inv);

  /* right secret */
  gpulease_lease q = l;
  assert_int_equal(gpulease_lease_query(c, &q, &err), GPULEASE_OK);
  assert_int_equal(q.vram_bytes, 4 * MiB);
  /* wrong and missing secrets */
  gpulease_lease bad = l;
  bad.secret[0] ^= 0x80;
  assert_int_equal(gpulease_lease_query(c, &bad, &err), GPULEASE_UNAUTHORIZED);
  assert_non_null(strstr(err.message, "wrong secret"));
  memset(bad.secret, 0, sizeof bad.secret);
  assert_int_equal(gpulease_lease_query(c, &bad, &err), GPULEASE_UNAUTHORIZED);
  assert_int_equal(gpulease_lease_free(c, &bad, &err), GPULEASE_UNAUTHORIZED);
  assert_int_equal(gpulease_lease_renew(c, &bad, 10, &err), GPULEASE_UNAUTHORIZED);

  /* GPU_SUBMIT with a wrong secret never reaches the worker */
  gpulease_submit_desc sd;
  gpulease_submit_desc_default(&sd);
  static const char ptx[] = ".version 8.0\n.target sm_75\n";
  sd.image = ptx;
  sd.image_size = sizeof ptx - 1;
  sd.kernel = "iota";
  sd.output_size = 16;
  gpulease_submit_result r = {.struct_version = GPULEASE_SUBMIT_RESULT_VERSION};
  assert_int_equal(gpulease_submit(c, &bad, &sd, &r, &err), GPULEASE_UNAUTHORIZED);
  /* with the right secret it reaches the worker, which loads the (empty)
   * module and finds no such kernel */
  assert_int_equal(gpulease_submit(c, &l, &sd, &r, &err), GPULEASE_LAUNCH_FAILED);
  assert_non_null(strstr(err.message, "no kernel named 'iota'"));
  /* an output range past the lease is refused */
  sd.output_offset = 4 * MiB - 8;
  assert_int_equal(gpulease_submit(c, &l, &sd, &r, &err), GPULEASE_INVALID_ARGUMENT);

  /* renew, TTL bounds */
  assert_int_equal(gpulease_lease_renew(c, &l, 25, &err), GPULEASE_OK);
  assert_int_equal(l.ttl_s, 25);
  assert_true(l.remaining_ms > 24000);
  assert_int_equal(gpulease_lease_renew(c, &l, 31, &err), GPULEASE_INVALID_ARGUMENT);
  gpulease_lease l2;
  assert_int_equal(gpulease_lease_alloc(c, 0, MiB, 31, &l2, &err), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(gpulease_lease_alloc(c, 0, 0, 10, &l2, &err), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(gpulease_lease_alloc(c, 3, MiB, 10, &l2, &err), GPULEASE_NO_DEVICE);
  /* capacity: 60 MiB are left */
  assert_int_equal(gpulease_lease_alloc(c, 0, 61 * MiB, 10, &l2, &err),
                   GPULEASE_CAPACITY_EXCEEDED);
  assert_int_equal(gpulease_lease_alloc(c, 0, 60 * MiB, 10, &l2, &err), GPULEASE_OK);
  assert_int_equal(gl_test_daemon_children(&d), 2);
  assert_int_equal(gpulease_lease_free(c, &l2, &err), GPULEASE_OK);

  /* free: the worker goes, the id is gone */
  assert_int_equal(gpulease_lease_free(c, &l, &err), GPULEASE_OK);
  assert_int_equal(gpulease_lease_query(c, &l, &err), GPULEASE_NOT_FOUND);
  assert_int_equal(gl_test_daemon_wait_children(&d, 0, 5000), 0);

  /* expiry: a 1 s lease is gone after 1.5 s, and says so */
  assert_int_equal(gpulease_lease_alloc(c, 0, MiB, 1, &l, &err), GPULEASE_OK);
  assert_int_equal(gl_test_daemon_children(&d), 1);
  usleep(1500000);
  assert_int_equal(gpulease_lease_query(c, &l, &err), GPULEASE_LEASE_EXPIRED);
  assert_non_null(strstr(err.message, "expired"));
  assert_int_equal(gpulease_submit(c, &l, &sd, &r, &err), GPULEASE_LEASE_EXPIRED);
  assert_int_equal(gl_test_daemon_wait_children(&d, 0, 5000), 0);

  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ------------------------------------------------------------ raw frames */

static gl_qclient *raw_connect(const gl_test_daemon *d) {
  gl_qclient_config qc = {.host = "127.0.0.1",
                          .pin_sha256 = d->fingerprint,
                          .timeout_ms = 10000,
                          .max_response_bytes = 1 << 20};
  qc.port = (uint16_t)atoi(strchr(d->addr, ':') + 1);
  gl_qclient *q = NULL;
  char err[256];
  assert_int_equal(gl_qclient_connect(&qc, &q, err, sizeof err), GL_QC_OK);
  return q;
}

/* Sends bytes, returns the reply's status and op. */
static uint16_t raw_status(gl_qclient *q, const uint8_t *msg, size_t len, uint16_t *op) {
  uint8_t *resp = NULL;
  size_t rlen = 0;
  char err[256];
  int rc = gl_qclient_request(q, msg, len, &resp, &rlen, err, sizeof err);
  if (rc != GL_QC_OK) fprintf(stderr, "raw request: %s\n", err);
  assert_int_equal(rc, GL_QC_OK);
  gl_response r;
  assert_int_equal(gl_response_decode(resp, rlen, 1 << 20, &r, err, sizeof err), GPULEASE_OK);
  if (r.status != GPULEASE_OK) assert_true(r.msg_len > 0); /* every error says why */
  if (op) *op = r.op;
  free(resp);
  return r.status;
}

static void test_malformed_frames(void **state) {
  (void)state;
  gl_test_daemon d;
  const char *extra[] = {"--max-message", "1M", NULL};
  assert_int_equal(gl_test_daemon_start(&d, NULL, extra), 0);
  gl_qclient *q = raw_connect(&d);
  uint16_t op;

  gl_buf b;
  gl_buf_init(&b);
  gl_request req = {.op = GL_OP_LEASE_QUERY};
  req.u.auth.lease_id = 1;
  assert_int_equal(gl_request_encode(&req, &b), GPULEASE_OK);
  /* a valid frame first */
  assert_int_equal(raw_status(q, b.data, b.len, &op), GPULEASE_NOT_FOUND);
  assert_int_equal(op, GL_OP_LEASE_QUERY);
  /* truncated: every proper prefix is refused with a status */
  for (size_t n = 1; n < b.len; n += 3)
    assert_int_equal(raw_status(q, b.data, n, NULL), GPULEASE_MALFORMED);
  /* trailing byte */
  uint8_t big[64];
  memcpy(big, b.data, b.len);
  big[b.len] = 0;
  assert_int_equal(raw_status(q, big, b.len + 1, NULL), GPULEASE_MALFORMED);
  /* bad magic, version 2, unknown op */
  memcpy(big, b.data, b.len);
  big[0] = 'X';
  assert_int_equal(raw_status(q, big, b.len, NULL), GPULEASE_MALFORMED);
  memcpy(big, b.data, b.len);
  big[2] = 2;
  assert_int_equal(raw_status(q, big, b.len, NULL), GPULEASE_UNSUPPORTED);
  memcpy(big, b.data, b.len);
  big[4] = 0x55;
  assert_int_equal(raw_status(q, big, b.len, NULL), GPULEASE_UNSUPPORTED);
  gl_buf_free(&b);

  /* worker-internal ops are not served to the network */
  gl_buf_init(&b);
  gl_request probe = {.op = GL_OP_WORKER_PROBE};
  assert_int_equal(gl_request_encode(&probe, &b), GPULEASE_OK);
  assert_int_equal(raw_status(q, b.data, b.len, NULL), GPULEASE_UNSUPPORTED);
  gl_buf_free(&b);

  /* oversized: 2 MiB against a 1 MiB limit */
  size_t n = 2 * MiB;
  uint8_t *huge = calloc(1, n);
  huge[0] = 'G';
  huge[1] = 'L';
  huge[2] = 1;
  huge[5] = 0x01; /* GET_INVENTORY */
  uint32_t body = (uint32_t)(n - 12);
  huge[8] = (uint8_t)(body >> 24);
  huge[9] = (uint8_t)(body >> 16);
  huge[10] = (uint8_t)(body >> 8);
  huge[11] = (uint8_t)body;
  assert_int_equal(raw_status(q, huge, n, &op), GPULEASE_TOO_LARGE);
  free(huge);

  /* the connection and daemon are still fine */
  gl_buf_init(&b);
  gl_request inv = {.op = GL_OP_GET_INVENTORY};
  assert_int_equal(gl_request_encode(&inv, &b), GPULEASE_OK);
  assert_int_equal(raw_status(q, b.data, b.len, NULL), GPULEASE_OK);
  gl_buf_free(&b);
  gl_qclient_del(q);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ------------------------------------------------------------------- TLS */

static void test_tls_verification(void **state) {
  (void)state;
  gl_test_daemon d;
  assert_int_equal(gl_test_daemon_start(&d, NULL, NULL), 0);
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = d.addr;
  o.timeout_ms = 5000;
  char wrong[80];
  snprintf(wrong, sizeof wrong, "%s", d.fingerprint);
  wrong[0] = wrong[0] == 'a' ? 'b' : 'a';
  o.pin_sha256 = wrong;
  gpulease_client *c = NULL;
  gpulease_error err;
  assert_int_equal(gpulease_client_connect(&o, &c, &err), GPULEASE_TLS_FAILED);
  assert_null(c);
  /* the CA file: the self-signed certificate itself */
  char ca[300];
  snprintf(ca, sizeof ca, "%s/cert.pem", d.dir);
  o.pin_sha256 = NULL;
  o.ca_file = ca;
  assert_int_equal(gpulease_client_connect(&o, &c, &err), GPULEASE_OK);
  gpulease_client_close(c);
  /* insecure */
  o.ca_file = NULL;
  o.insecure = 1;
  assert_int_equal(gpulease_client_connect(&o, &c, &err), GPULEASE_OK);
  gpulease_client_close(c);
  /* nobody there */
  o.addr = "127.0.0.1:1";
  o.timeout_ms = 1000;
  assert_int_equal(gpulease_client_connect(&o, &c, &err), GPULEASE_DISCONNECTED);
  o.addr = "not an address:x";
  assert_int_equal(gpulease_client_connect(&o, &c, &err), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* ------------------------------------------------------ 50 clients at once */

#define CLIENTS 50
static gl_test_daemon g_d;
static int g_fail[CLIENTS];

static void *client_thread(void *arg) {
  int i = (int)(intptr_t)arg;
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = g_d.addr;
  o.pin_sha256 = g_d.fingerprint;
  o.timeout_ms = 30000;
  gpulease_client *c = NULL;
  gpulease_error err;
  if (gpulease_client_connect(&o, &c, &err) != GPULEASE_OK) {
    g_fail[i] = 1;
    return NULL;
  }
  gpulease_inventory *inv = malloc(sizeof *inv);
  gpulease_inventory_init(inv);
  gpulease_lease l;
  if (!inv || gpulease_inventory_get(c, inv, &err) != GPULEASE_OK || inv->gpu_count != 1)
    g_fail[i] = 2;
  else if (gpulease_lease_alloc(c, 0, MiB, 30, &l, &err) != GPULEASE_OK)
    g_fail[i] = 3;
  else if (gpulease_lease_query(c, &l, &err) != GPULEASE_OK || l.vram_bytes != MiB)
    g_fail[i] = 4;
  else if (gpulease_lease_free(c, &l, &err) != GPULEASE_OK)
    g_fail[i] = 5;
  if (g_fail[i]) fprintf(stderr, "client %d: step %d: %s\n", i, g_fail[i], err.message);
  free(inv);
  gpulease_client_close(c);
  return NULL;
}

static void test_concurrent_clients(void **state) {
  (void)state;
  assert_int_equal(gl_test_daemon_start(&g_d, "256M", NULL), 0);
  pthread_t t[CLIENTS];
  for (int i = 0; i < CLIENTS; i++)
    assert_int_equal(pthread_create(&t[i], NULL, client_thread, (void *)(intptr_t)i), 0);
  for (int i = 0; i < CLIENTS; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < CLIENTS; i++) assert_int_equal(g_fail[i], 0);
  assert_int_equal(gl_test_daemon_wait_children(&g_d, 0, 5000), 0);
  assert_int_equal(gl_test_daemon_stop(&g_d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_gpu_node),      cmocka_unit_test(test_lease_cycle),
      cmocka_unit_test(test_malformed_frames), cmocka_unit_test(test_tls_verification),
      cmocka_unit_test(test_concurrent_clients),
  };
  if (getenv("GL_TEST_FILTER")) cmocka_set_test_filter(getenv("GL_TEST_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
