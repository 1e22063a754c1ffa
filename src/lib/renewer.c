/*
 * renewer.c - gpulease_renewer_*: a thread that keeps one lease alive on a
 * connection of its own.
 *
 * The first renewal happens in gpulease_renewer_start(). The thread then
 * sleeps (on a condition variable, so stop is prompt) until two thirds of
 * the granted TTL have passed since the last successful renewal was sent,
 * and renews. A definite refusal (LEASE_EXPIRED, NOT_FOUND, UNAUTHORIZED,
 * INVALID_ARGUMENT) ends it at once. Any other failure (connection lost,
 * timeout, BUSY, ...) is retried about every second, on a new connection
 * after a connection error, until the lease's expiry (as the last renewal
 * reported it) has passed; then it ends with DISCONNECTED. Ending records
 * the status and message and calls lost_fn once, from the thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "lib/client_internal.h"

#define set_err gl_lib_set_err

#define RETRY_MS 1000

struct gpulease_renewer {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool stop;
  gpulease_client *client;
  gpulease_lease lease;
  uint32_t ttl_s;          /* asked for at each renewal */
  gpulease_lease_lost_fn lost_fn;
  void *user;
  uint64_t expiry_ms;      /* monotonic: when the lease runs out */
  uint64_t next_ms;        /* monotonic: next renewal */
  gpulease_status status;  /* OK while kept; under mu */
  char message[sizeof(((gpulease_error *)0)->message)];
};

static uint64_t now_ms(void) {
  return gl_mono_ns() / 1000000u;
}

/* Records a successful renewal sent at sent_ms. */
static void renewed(gpulease_renewer *r, uint64_t sent_ms) {
  uint64_t granted_ms = (uint64_t)r->lease.ttl_s * 1000u;
  uint64_t left = r->lease.remaining_ms ? r->lease.remaining_ms : granted_ms;
  r->expiry_ms = sent_ms + left;
  r->next_ms = sent_ms + granted_ms * 2 / 3;
}

static bool definite_refusal(gpulease_status st) {
  return st == GPULEASE_LEASE_EXPIRED || st == GPULEASE_NOT_FOUND ||
         st == GPULEASE_UNAUTHORIZED || st == GPULEASE_INVALID_ARGUMENT;
}

/* Sleeps until deadline (monotonic ms) or stop. Called with mu held.
 * Returns true when asked to stop. */
static bool wait_until(gpulease_renewer *r, uint64_t deadline) {
  while (!r->stop) {
    uint64_t now = now_ms();
    if (now >= deadline) break;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t wait = deadline - now;
    ts.tv_sec += (time_t)(wait / 1000);
    ts.tv_nsec += (long)(wait % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&r->cv, &r->mu, &ts);
  }
  return r->stop;
}

static void *renewer_main(void *arg) {
  gpulease_renewer *r = arg;
  gpulease_status end = GPULEASE_OK;
  gpulease_error err;
  pthread_mutex_lock(&r->mu);
  for (;;) {
    if (wait_until(r, r->next_ms)) break;
    pthread_mutex_unlock(&r->mu);

    uint64_t sent = now_ms();
    gpulease_status st = gpulease_lease_renew(r->client, &r->lease, r->ttl_s, &err);
    if (st == GPULEASE_OK) {
      pthread_mutex_lock(&r->mu);
      renewed(r, sent);
      continue;
    }
    if (definite_refusal(st)) {
      end = st;
    } else if (now_ms() >= r->expiry_ms) {
      end = GPULEASE_DISCONNECTED;
      char last[sizeof err.message];
      snprintf(last, sizeof last, "%s: %.900s", gpulease_status_name(st), err.message);
      set_err(&err, end,
              "lease probably taken back: could not renew before expiry (last error: %.900s)",
              last);
    } else if (gl_lib_conn_error(st) || gl_qclient_dead(r->client->q)) {
      gpulease_error rerr;
      gpulease_client_reconnect(r->client, &rerr); /* a failure retries below */
    }
    pthread_mutex_lock(&r->mu);
    if (end != GPULEASE_OK) {
      r->status = end;
      snprintf(r->message, sizeof r->message, "%s", err.message);
      break;
    }
    uint64_t retry = now_ms() + RETRY_MS;
    r->next_ms = retry < r->expiry_ms ? retry : r->expiry_ms;
    if (r->next_ms <= now_ms()) r->next_ms = now_ms() + 10; /* expiry: one last try */
  }
  pthread_mutex_unlock(&r->mu);
  if (end != GPULEASE_OK && r->lost_fn) r->lost_fn(&r->lease, end, err.message, r->user);
  return NULL;
}

gpulease_status gpulease_renewer_start(const gpulease_connect_options *opts,
                                       const gpulease_lease *lease, uint32_t ttl_s,
                                       gpulease_lease_lost_fn lost_fn, void *user,
                                       gpulease_renewer **out, gpulease_error *err) {
  if (!opts || !lease || !out)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "opts, lease and out are required");
  uint32_t ttl = ttl_s ? ttl_s : lease->ttl_s;
  if (ttl == 0)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "ttl_s is 0 and the lease has no ttl_s");
  gpulease_renewer *r = calloc(1, sizeof *r);
  if (!r) return set_err(err, GPULEASE_NO_MEMORY, "out of memory");
  r->lease = *lease;
  r->ttl_s = ttl;
  r->lost_fn = lost_fn;
  r->user = user;
  gpulease_status st = gpulease_client_connect(opts, &r->client, err);
  if (st != GPULEASE_OK) {
    free(r);
    return st;
  }
  uint64_t sent = now_ms();
  st = gpulease_lease_renew(r->client, &r->lease, ttl, err);
  if (st != GPULEASE_OK) {
    gpulease_client_close(r->client);
    free(r);
    return st;
  }
  renewed(r, sent);
  pthread_condattr_t ca;
  bool ok = pthread_condattr_init(&ca) == 0;
  ok = ok && pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0;
  ok = ok && pthread_cond_init(&r->cv, &ca) == 0;
  pthread_condattr_destroy(&ca);
  if (!ok || pthread_mutex_init(&r->mu, NULL) != 0) {
    if (ok) pthread_cond_destroy(&r->cv);
    gpulease_client_close(r->client);
    free(r);
    return set_err(err, GPULEASE_INTERNAL, "cannot initialise the renewer's lock");
  }
  int rc = pthread_create(&r->thread, NULL, renewer_main, r);
  if (rc != 0) {
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    gpulease_client_close(r->client);
    free(r);
    return set_err(err, GPULEASE_INTERNAL, "cannot start the renewer thread: %s", strerror(rc));
  }
  *out = r;
  return gl_lib_ok(err);
}

gpulease_status gpulease_renewer_status(gpulease_renewer *r, gpulease_error *err) {
  if (!r) return set_err(err, GPULEASE_INVALID_ARGUMENT, "renewer is NULL");
  pthread_mutex_lock(&r->mu);
  gpulease_status st = r->status;
  if (st != GPULEASE_OK) set_err(err, st, "%s", r->message);
  pthread_mutex_unlock(&r->mu);
  return st == GPULEASE_OK ? gl_lib_ok(err) : st;
}

void gpulease_renewer_stop(gpulease_renewer *r) {
  if (!r) return;
  pthread_mutex_lock(&r->mu);
  r->stop = true;
  pthread_cond_signal(&r->cv);
  pthread_mutex_unlock(&r->mu);
  pthread_join(r->thread, NULL);
  pthread_cond_destroy(&r->cv);
  pthread_mutex_destroy(&r->mu);
  gpulease_client_close(r->client);
  free(r);
}
