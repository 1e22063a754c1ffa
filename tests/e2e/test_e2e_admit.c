/*
 * test_e2e_admit.c - admission of isolated CUDA contexts (issue 34;
 * docs/protocol.md "Isolated contexts") against a real gpuleased on the
 * emulated device, with a small --max-isolated-contexts.
 *
 * Checked:
 *   - with the limit held by leases, further isolated LEASE_ALLOCs wait
 *     (none answered, no worker started past the limit) and are served,
 *     in order, as leases are freed; the daemon never has more workers
 *     than the limit;
 *   - past --isolated-queue-ms a waiting request gets CAPACITY_EXCEEDED
 *     with the figures, within the deadline; with --isolated-queue-ms 0
 *     or a full queue, at once;
 *   - the warm pool (--warm-workers above the limit) never takes the
 *     count past the limit, and makes room for leases; the inventory and
 *     the metrics show the limit and the counts;
 *   - two tenants: one with several requests queued first does not get
 *     the next contexts ahead of the other (round robin);
 *   - a driver that refuses a context below the limit (the emulated
 *     device's GL_EMU_CONTEXT_SLOTS) teaches the daemon the limit: the
 *     refused request waits and is served, never the driver's error;
 *   - a reload (SIGHUP) applies a new --max-isolated-contexts.
 */
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "daemon_harness.h"
#include "gpulease/gpulease.h"
#include "lib_check.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static gpulease_client *connect_as(const gl_test_daemon *d, const char *token) {
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = d->addr;
  o.pin_sha256 = d->fingerprint;
  o.timeout_ms = 60000;
  o.no_local = 1;
  o.bearer_token = token;
  gpulease_client *c = NULL;
  gpulease_error err;
  gpulease_status st = gpulease_client_connect(&o, &c, &err);
  if (st != GPULEASE_OK) fprintf(stderr, "connect: %s: %s\n", gpulease_status_name(st), err.message);
  assert_int_equal(st, GPULEASE_OK);
  return c;
}

static gpulease_status alloc_isolated(gpulease_client *c, gpulease_lease *l, gpulease_error *err) {
  gpulease_lease_opts o = {.struct_version = GPULEASE_LEASE_OPTS_VERSION,
                           .lease_class = GPULEASE_CLASS_ISOLATED};
  return gpulease_lease_alloc_opts(c, GPULEASE_ANY_GPU, 4 * MiB, 60, &o, l, err);
}

/* ---- a waiting client, on a thread of its own ------------------------- */

static atomic_int g_order; /* the order in which waiting clients were served */

typedef struct waiter {
  const gl_test_daemon *d;
  const char *token;
  pthread_t th;
  atomic_bool done;     /* answered */
  atomic_bool release;  /* free the lease and end */
  gpulease_status st;
  char msg[1024];
  double waited_s;
  int order;
  gpulease_client *c;
  gpulease_lease l;
} waiter;

static void *waiter_main(void *arg) {
  waiter *w = arg;
  double t0 = now_s();
  gpulease_error err;
  memset(&err, 0, sizeof err);
  w->st = alloc_isolated(w->c, &w->l, &err);
  w->waited_s = now_s() - t0;
  snprintf(w->msg, sizeof w->msg, "%s", err.message);
  w->order = atomic_fetch_add(&g_order, 1);
  atomic_store(&w->done, true);
  while (!atomic_load(&w->release)) sleep_ms(10);
  if (w->st == GPULEASE_OK) CHECK(gpulease_lease_free(w->c, &w->l, E));
  return NULL;
}

/* Connects first (so that a connect does not count in the wait), then
 * asks on a thread. */
static void waiter_start(waiter *w, const gl_test_daemon *d, const char *token) {
  memset(w, 0, sizeof *w);
  w->d = d;
  w->token = token;
  w->c = connect_as(d, token);
  assert_int_equal(pthread_create(&w->th, NULL, waiter_main, w), 0);
}

static void waiter_end(waiter *w) {
  atomic_store(&w->release, true);
  pthread_join(w->th, NULL);
  gpulease_client_close(w->c);
}

static int count_done(waiter *w, int n) {
  int k = 0;
  for (int i = 0; i < n; i++) k += atomic_load(&w[i].done);
  return k;
}

/* Waits up to ms for k of the n to be answered; the count answered. */
static int wait_done(waiter *w, int n, int k, int ms) {
  for (int t = 0; t < ms && count_done(w, n) < k; t += 10) sleep_ms(10);
  return count_done(w, n);
}

/* ---- the daemon's workers, sampled on a thread ------------------------ */

typedef struct sampler {
  const gl_test_daemon *d;
  pthread_t th;
  atomic_bool stop;
  atomic_int max;
} sampler;

static void *sampler_main(void *arg) {
  sampler *s = arg;
  while (!atomic_load(&s->stop)) {
    int n = gl_test_daemon_children(s->d);
    if (n > atomic_load(&s->max)) atomic_store(&s->max, n);
    sleep_ms(5);
  }
  return NULL;
}

static void sampler_start(sampler *s, const gl_test_daemon *d) {
  memset(s, 0, sizeof *s);
  s->d = d;
  assert_int_equal(pthread_create(&s->th, NULL, sampler_main, s), 0);
}

static int sampler_end(sampler *s) {
  atomic_store(&s->stop, true);
  pthread_join(s->th, NULL);
  return atomic_load(&s->max);
}

/* ---- tests -------------------------------------------------------------- */

/* Two leases hold the limit; four more wait, then are served one by one
 * as contexts come back. */
static void test_wait_and_serve(void **state) {
  (void)state;
  gl_test_daemon d;
  const char *extra[] = {"--max-isolated-contexts", "2", "--isolated-queue-ms", "20000", NULL};
  assert_int_equal(gl_test_daemon_start(&d, "256M", extra), 0);
  sampler smp;
  sampler_start(&smp, &d);
  gpulease_client *c = connect_as(&d, NULL);
  gpulease_lease a, b;
  CHECK(alloc_isolated(c, &a, E));
  CHECK(alloc_isolated(c, &b, E));
  enum { N = 4 };
  waiter w[N];
  atomic_store(&g_order, 0);
  for (int i = 0; i < N; i++) {
    waiter_start(&w[i], &d, NULL);
    sleep_ms(150); /* they queue in this order */
  }
  sleep_ms(500);
  assert_int_equal(count_done(w, N), 0); /* all wait */
  assert_int_equal(gl_test_daemon_children(&d), 2);
  /* The CLI's inventory shows the limit and the queue. */
  char out[16384];
  assert_int_equal(gl_test_cli(&d, out, sizeof out, "inventory --json"), 0);
  assert_non_null(strstr(out, "\"max_isolated_contexts\": 2"));
  assert_non_null(strstr(out, "\"isolated_contexts\": 2"));
  assert_non_null(strstr(out, "\"isolated_queued\": 4"));
  /* A freed lease's context serves the oldest waiter, and only it. */
  CHECK(gpulease_lease_free(c, &a, E));
  assert_int_equal(wait_done(w, N, 1, 10000), 1);
  sleep_ms(300);
  assert_int_equal(count_done(w, N), 1);
  assert_true(atomic_load(&w[0].done));
  assert_int_equal(w[0].st, GPULEASE_OK);
  CHECK(gpulease_lease_free(c, &b, E));
  assert_int_equal(wait_done(w, N, 2, 10000), 2);
  assert_true(atomic_load(&w[1].done));
  /* Served ones freeing theirs serve the rest. */
  atomic_store(&w[0].release, true);
  assert_int_equal(wait_done(w, N, 3, 10000), 3);
  assert_true(atomic_load(&w[2].done));
  atomic_store(&w[1].release, true);
  assert_int_equal(wait_done(w, N, 4, 10000), 4);
  for (int i = 0; i < N; i++) {
    assert_int_equal(w[i].st, GPULEASE_OK);
    assert_int_equal(w[i].order, i); /* first come, first served */
  }
  for (int i = 0; i < N; i++) waiter_end(&w[i]);
  assert_true(sampler_end(&smp) <= 2);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* Past the deadline: CAPACITY_EXCEEDED with the figures, in time. */
static void test_deadline(void **state) {
  (void)state;
  gl_test_daemon d;
  const char *extra[] = {"--max-isolated-contexts", "2", "--isolated-queue-ms", "400",
                         "--isolated-queue-max", "3", NULL};
  assert_int_equal(gl_test_daemon_start(&d, "256M", extra), 0);
  gpulease_client *c = connect_as(&d, NULL);
  gpulease_lease a, b, x;
  CHECK(alloc_isolated(c, &a, E));
  CHECK(alloc_isolated(c, &b, E));
  gpulease_error err;
  double t0 = now_s();
  assert_int_equal(alloc_isolated(c, &x, &err), GPULEASE_CAPACITY_EXCEEDED);
  double took = now_s() - t0;
  fprintf(stderr, "refused after %.3f s: %s\n", took, err.message);
  assert_true(took >= 0.35);
  assert_true(took < 3.0);
  assert_non_null(strstr(err.message, "400 ms"));
  assert_non_null(strstr(err.message, "holds 2 of its limit of 2 isolated CUDA contexts"));
  assert_non_null(strstr(err.message, "2 leased"));
  assert_non_null(strstr(err.message, "0 warm"));
  assert_non_null(strstr(err.message, "tearing down"));
  assert_non_null(strstr(err.message, "queued"));
  /* The queue holds 3, the anonymous tenant half of it (1): its second
   * waiting request is refused at once. */
  enum { N = 2 };
  waiter w[N];
  waiter_start(&w[0], &d, NULL);
  sleep_ms(100);
  waiter_start(&w[1], &d, NULL);
  assert_int_equal(wait_done(&w[1], 1, 1, 5000), 1);
  assert_false(atomic_load(&w[0].done));
  assert_int_equal(w[1].st, GPULEASE_CAPACITY_EXCEEDED);
  assert_true(w[1].waited_s < 0.3);
  assert_non_null(strstr(w[1].msg, "cannot wait"));
  assert_int_equal(wait_done(w, N, 2, 5000), 2);
  assert_int_equal(w[0].st, GPULEASE_CAPACITY_EXCEEDED);
  for (int i = 0; i < N; i++) waiter_end(&w[i]);
  /* The inventory: nobody waits now. */
  char out[65536];
  assert_int_equal(gl_test_cli(&d, out, sizeof out, "inventory --json"), 0);
  assert_non_null(strstr(out, "\"isolated_queued\": 0"));
  /* A lease freed: room again, at once. */
  CHECK(gpulease_lease_free(c, &a, E));
  CHECK(alloc_isolated(c, &x, E));
  CHECK(gpulease_lease_free(c, &x, E));
  CHECK(gpulease_lease_free(c, &b, E));
  assert_true(gl_test_daemon_log_count(&d, "isolated CUDA contexts at once") >= 1);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);

  /* --isolated-queue-ms 0: no wait at all. */
  const char *now_args[] = {"--max-isolated-contexts", "1", "--isolated-queue-ms", "0", NULL};
  assert_int_equal(gl_test_daemon_start(&d, "256M", now_args), 0);
  c = connect_as(&d, NULL);
  CHECK(alloc_isolated(c, &a, E));
  t0 = now_s();
  assert_int_equal(alloc_isolated(c, &x, &err), GPULEASE_CAPACITY_EXCEEDED);
  assert_true(now_s() - t0 < 0.5);
  assert_non_null(strstr(err.message, "holds 1 of its limit of 1"));
  /* A freed lease's worker counts until it is reaped (no pool here to
   * keep it as a spare); then there is room again. */
  CHECK(gpulease_lease_free(c, &a, E));
  assert_int_equal(gl_test_daemon_wait_children(&d, 0, 10000), 0);
  /* The process is gone from /proc once the daemon's loop has reaped it;
   * its child callback, which gives the context back, may run after a
   * request read in the same loop iteration: a moment later at most. */
  gpulease_status st = GPULEASE_CAPACITY_EXCEEDED;
  for (int i = 0; i < 40 && st == GPULEASE_CAPACITY_EXCEEDED; i++) {
    st = alloc_isolated(c, &a, &err);
    if (st == GPULEASE_CAPACITY_EXCEEDED) sleep_ms(50);
  }
  assert_int_equal(st, GPULEASE_OK);
  CHECK(gpulease_lease_free(c, &a, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* A warm pool larger than the limit stays within it, and its workers
 * serve leases. */
static void test_warm_pool_within_limit(void **state) {
  (void)state;
  gl_test_daemon d;
  const char *extra[] = {"--warm-workers", "4", "--max-isolated-contexts", "2",
                         "--isolated-queue-ms", "10000", NULL};
  sampler smp;
  assert_int_equal(gl_test_daemon_start(&d, "256M", extra), 0);
  sampler_start(&smp, &d);
  assert_int_equal(gl_test_daemon_wait_children(&d, 2, 10000), 2);
  sleep_ms(1500); /* the other two slots stay empty */
  assert_int_equal(gl_test_daemon_children(&d), 2);
  gpulease_client *c = connect_as(&d, NULL);
  gpulease_lease l[3];
  CHECK(alloc_isolated(c, &l[0], E));
  CHECK(alloc_isolated(c, &l[1], E));
  sleep_ms(500); /* no replacements: the limit is held by the leases */
  assert_int_equal(gl_test_daemon_children(&d), 2);
  waiter w;
  atomic_store(&g_order, 0);
  waiter_start(&w, &d, NULL);
  sleep_ms(400);
  assert_false(atomic_load(&w.done));
  CHECK(gpulease_lease_free(c, &l[0], E));
  assert_int_equal(wait_done(&w, 1, 1, 10000), 1);
  assert_int_equal(w.st, GPULEASE_OK);
  waiter_end(&w);
  CHECK(gpulease_lease_free(c, &l[1], E));
  /* Spares and warm workers: still two at most. */
  sleep_ms(1000);
  assert_true(gl_test_daemon_children(&d) <= 2);
  assert_true(sampler_end(&smp) <= 2);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* A driver that holds 2 contexts (the emulated device's
 * GL_EMU_CONTEXT_SLOTS) under a limit of 8: the first refusal teaches the
 * daemon the limit, logged; the refused request waits and is served, no
 * driver error reaches the client; past the deadline it is
 * CAPACITY_EXCEEDED with the learned figures. */
static void test_learned_limit(void **state) {
  (void)state;
  char slots[300], env[320];
  snprintf(slots, sizeof slots, "/tmp/gl-admit-slots-%d", (int)getpid());
  assert_int_equal(mkdir(slots, 0700), 0);
  snprintf(env, sizeof env, "%s:2", slots);
  setenv("GL_EMU_CONTEXT_SLOTS", env, 1);
  gl_test_daemon d;
  const char *extra[] = {"--max-isolated-contexts", "8", "--isolated-queue-ms", "20000",
                         "--no-worker-sandbox", NULL};
  assert_int_equal(gl_test_daemon_start(&d, "256M", extra), 0);
  gpulease_client *c = connect_as(&d, NULL);
  gpulease_lease a, b;
  CHECK(alloc_isolated(c, &a, E));
  CHECK(alloc_isolated(c, &b, E));
  waiter w;
  atomic_store(&g_order, 0);
  waiter_start(&w, &d, NULL);
  sleep_ms(1500);
  assert_false(atomic_load(&w.done)); /* refused by the driver: it waits, no error */
  assert_int_equal(gl_test_daemon_log_count(&d, "the limit of isolated contexts goes from 8 to 2"),
                   1);
  char out[16384];
  assert_int_equal(gl_test_cli(&d, out, sizeof out, "inventory --json"), 0);
  assert_non_null(strstr(out, "\"max_isolated_contexts\": 2"));
  assert_non_null(strstr(out, "\"max_isolated_contexts_learned\": true"));
  CHECK(gpulease_lease_free(c, &a, E)); /* its worker ends: its context goes */
  assert_int_equal(wait_done(&w, 1, 1, 10000), 1);
  if (w.st != GPULEASE_OK) fprintf(stderr, "waiter: %s\n", w.msg);
  assert_int_equal(w.st, GPULEASE_OK);
  waiter_end(&w);
  CHECK(gpulease_lease_free(c, &b, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);

  /* With a short deadline: CAPACITY_EXCEEDED with the learned limit. */
  const char *short_args[] = {"--max-isolated-contexts", "8", "--isolated-queue-ms", "300",
                              "--no-worker-sandbox", NULL};
  assert_int_equal(gl_test_daemon_start(&d, "256M", short_args), 0);
  c = connect_as(&d, NULL);
  CHECK(alloc_isolated(c, &a, E));
  CHECK(alloc_isolated(c, &b, E));
  gpulease_lease x;
  gpulease_error err;
  assert_int_equal(alloc_isolated(c, &x, &err), GPULEASE_CAPACITY_EXCEEDED);
  fprintf(stderr, "refused: %s\n", err.message);
  assert_null(strstr(err.message, "cuDevicePrimaryCtxRetain")); /* not the driver's error */
  assert_non_null(strstr(err.message, "of its limit of 2 isolated CUDA contexts, learned"));
  CHECK(gpulease_lease_free(c, &a, E));
  CHECK(gpulease_lease_free(c, &b, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
  unsetenv("GL_EMU_CONTEXT_SLOTS");
  for (int k = 0; k < 2; k++) {
    char p[340];
    snprintf(p, sizeof p, "%s/slot-%d", slots, k);
    unlink(p);
  }
  rmdir(slots);
}

/* SIGHUP with the configuration file's limit raised: room at once. */
static void test_reload(void **state) {
  (void)state;
  char conf[300];
  snprintf(conf, sizeof conf, "/tmp/gl-admit-conf-%d.conf", (int)getpid());
  FILE *f = fopen(conf, "w");
  assert_non_null(f);
  fputs("max-isolated-contexts = 1\nisolated-queue-ms = 0\n", f);
  fclose(f);
  gl_test_daemon d;
  const char *extra[] = {"--config", conf, NULL};
  assert_int_equal(gl_test_daemon_start(&d, "256M", extra), 0);
  gpulease_client *c = connect_as(&d, NULL);
  gpulease_lease a, b;
  gpulease_error err;
  CHECK(alloc_isolated(c, &a, E));
  assert_int_equal(alloc_isolated(c, &b, &err), GPULEASE_CAPACITY_EXCEEDED);
  assert_non_null(strstr(err.message, "limit of 1"));
  f = fopen(conf, "w");
  assert_non_null(f);
  fputs("max-isolated-contexts = 2\nisolated-queue-ms = 0\n", f);
  fclose(f);
  assert_int_equal(kill(d.pid, SIGHUP), 0);
  for (int i = 0; i < 500 && gl_test_daemon_log_count(&d, "reload: max-isolated-contexts 2") < 1;
       i++)
    sleep_ms(20);
  assert_int_equal(gl_test_daemon_log_count(&d, "reload: max-isolated-contexts 2"), 1);
  CHECK(alloc_isolated(c, &b, E));
  CHECK(gpulease_lease_free(c, &a, E));
  CHECK(gpulease_lease_free(c, &b, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
  unlink(conf);
}

#define TOKEN_A "tenant-a-0123456789abcdef0123456789abcdef"
#define TOKEN_B "tenant-b-0123456789abcdef0123456789abcdef"

/* Tenant a queues three requests, then tenant b one: b's is served second,
 * not after all of a's. */
static void test_fair_across_tenants(void **state) {
  (void)state;
  char tenants[300];
  snprintf(tenants, sizeof tenants, "/tmp/gl-admit-tenants-%d.ini", (int)getpid());
  FILE *f = fopen(tenants, "w");
  assert_non_null(f);
  fputs("[tenant a]\ntoken = " TOKEN_A "\n\n[tenant b]\ntoken = " TOKEN_B "\n", f);
  fclose(f);
  gl_test_daemon d;
  const char *extra[] = {"--auth", "token", "--tenants", tenants, "--max-isolated-contexts", "1",
                         "--isolated-queue-ms", "20000", NULL};
  assert_int_equal(gl_test_daemon_start(&d, "256M", extra), 0);
  gpulease_client *c = connect_as(&d, TOKEN_A);
  gpulease_lease held;
  CHECK(alloc_isolated(c, &held, E));
  enum { N = 4 };
  waiter w[N];
  atomic_store(&g_order, 0);
  for (int i = 0; i < N; i++) {
    waiter_start(&w[i], &d, i < 3 ? TOKEN_A : TOKEN_B);
    sleep_ms(150);
  }
  sleep_ms(300);
  assert_int_equal(count_done(w, N), 0);
  CHECK(gpulease_lease_free(c, &held, E));
  /* One context: each served one frees it for the next. */
  for (int k = 1; k <= N; k++) {
    assert_int_equal(wait_done(w, N, k, 10000), k);
    sleep_ms(100);
    assert_int_equal(count_done(w, N), k);
    for (int i = 0; i < N; i++)
      if (atomic_load(&w[i].done) && !atomic_load(&w[i].release)) {
        assert_int_equal(w[i].st, GPULEASE_OK);
        atomic_store(&w[i].release, true);
      }
  }
  /* a's first, then b's (round robin), then a's others in their order. */
  assert_int_equal(w[0].order, 0);
  assert_int_equal(w[3].order, 1);
  assert_int_equal(w[1].order, 2);
  assert_int_equal(w[2].order, 3);
  for (int i = 0; i < N; i++) waiter_end(&w[i]);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
  unlink(tenants);
}

/* --max-contexts-starting: with contexts slow to make (600 ms each, a
 * test fault), one cap makes the three requests take new contexts one
 * after another; without a cap all three are made at once. */
static void run_starting(const char *cap, int *max_children, double *last_s) {
  gl_test_daemon d;
  const char *extra[] = {"--warm-workers", "0", "--max-contexts-starting", cap,
                         "--isolated-queue-ms", "10000", NULL};
  setenv("GL_FAULT_WORKER_START_DELAY_MS", "600", 1);
  assert_int_equal(gl_test_daemon_start(&d, "256M", extra), 0);
  unsetenv("GL_FAULT_WORKER_START_DELAY_MS");
  enum { N = 3 };
  waiter w[N];
  sampler smp;
  for (int i = 0; i < N; i++) w[i].c = NULL;
  atomic_store(&g_order, 0);
  for (int i = 0; i < N; i++) waiter_start(&w[i], &d, NULL);
  sampler_start(&smp, &d);
  sleep_ms(400);
  *max_children = sampler_end(&smp);
  assert_int_equal(wait_done(w, N, N, 15000), N);
  *last_s = 0;
  for (int i = 0; i < N; i++) {
    assert_int_equal(w[i].st, GPULEASE_OK);
    if (w[i].waited_s > *last_s) *last_s = w[i].waited_s;
  }
  for (int i = 0; i < N; i++) waiter_end(&w[i]);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

static void test_contexts_starting(void **state) {
  (void)state;
  int capped_max, free_max;
  double capped_last, free_last;
  run_starting("1", &capped_max, &capped_last);
  run_starting("0", &free_max, &free_last);
  fprintf(stderr, "cap 1: at most %d workers in the first 400 ms, the last served after %.2f s; "
          "no cap: %d, %.2f s\n", capped_max, capped_last, free_max, free_last);
  assert_int_equal(capped_max, 1);
  assert_true(capped_last >= 1.1); /* the third waited for two contexts made in turn */
  assert_int_equal(free_max, 3);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_wait_and_serve),
      cmocka_unit_test(test_deadline),
      cmocka_unit_test(test_warm_pool_within_limit),
      cmocka_unit_test(test_fair_across_tenants),
      cmocka_unit_test(test_learned_limit),
      cmocka_unit_test(test_reload),
      cmocka_unit_test(test_contexts_starting),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
