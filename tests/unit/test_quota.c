/*
 * test_quota.c - per-tenant usage against limits with a fake clock: two
 * tenants each refused at their own limit while the other goes on (leases,
 * VRAM, max_ttl, sessions, GPU-seconds), refunds, the hour sliding, the
 * bound on tracked tenants.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "auth/quota.h"

#define S (1000000000ull)
#define MIN (60 * S)
#define GiB (1ull << 30)
#define MiB (1ull << 20)

static gl_quota_limits lim(uint64_t vram, uint32_t leases, uint32_t sessions, uint32_t max_ttl,
                           uint64_t gpu_s) {
  return (gl_quota_limits){.vram_bytes = vram, .leases = leases, .sessions = sessions,
                           .max_ttl_s = max_ttl, .gpu_seconds_per_hour = gpu_s};
}

static gl_quota_limits unlimited(void) {
  gl_quota_limits l;
  gl_quota_limits_unlimited(&l);
  return l;
}

static gl_quota_charge begin_ok(gl_quota *q, const char *who, const gl_quota_limits *l,
                                uint64_t vram, uint32_t ttl, uint64_t now) {
  gl_quota_charge c = {0};
  char err[256] = "";
  gpulease_status st = gl_quota_lease_begin(q, who, l, vram, ttl, now, &c, err, sizeof err);
  if (st != GPULEASE_OK) fail_msg("%s: lease refused (%d): %s", who, st, err);
  assert_int_equal(c.at_ns, now);
  assert_int_equal(c.seconds, ttl);
  return c;
}

static void test_lease_count_per_tenant(void **state) {
  (void)state;
  gl_quota *q = gl_quota_new();
  assert_non_null(q);
  gl_quota_limits a = lim(UINT64_MAX, 2, UINT32_MAX, UINT32_MAX, UINT64_MAX);
  gl_quota_limits b = lim(UINT64_MAX, 3, UINT32_MAX, UINT32_MAX, UINT64_MAX);
  gl_quota_charge ca[2], cb[3];
  for (int i = 0; i < 2; i++) ca[i] = begin_ok(q, "alice", &a, MiB, 60, 0);
  char err[256];
  gl_quota_charge c;
  assert_int_equal(gl_quota_lease_begin(q, "alice", &a, MiB, 60, 0, &c, err, sizeof err),
                   GPULEASE_QUOTA_EXCEEDED);
  assert_string_equal(err, "tenant alice: lease quota 2, 2 leases live");
  /* bob goes on to his own limit */
  for (int i = 0; i < 3; i++) cb[i] = begin_ok(q, "bob", &b, MiB, 60, 0);
  assert_int_equal(gl_quota_lease_begin(q, "bob", &b, MiB, 60, 0, &c, err, sizeof err),
                   GPULEASE_QUOTA_EXCEEDED);
  assert_string_equal(err, "tenant bob: lease quota 3, 3 leases live");
  /* one of alice's ends: she may take one more, bob still may not */
  gl_quota_lease_end(q, "alice", MiB, &ca[0], 10 * S);
  begin_ok(q, "alice", &a, MiB, 60, 10 * S);
  assert_int_equal(gl_quota_lease_begin(q, "bob", &b, MiB, 60, 10 * S, &c, err, sizeof err),
                   GPULEASE_QUOTA_EXCEEDED);
  gl_quota_usage u;
  gl_quota_usage_of(q, "alice", 10 * S, &u);
  assert_int_equal(u.leases, 2);
  assert_int_equal(u.vram_bytes, 2 * MiB);
  gl_quota_usage_of(q, "bob", 10 * S, &u);
  assert_int_equal(u.leases, 3);
  (void)cb;
  /* leases = 0 refuses every lease */
  gl_quota_limits none = lim(UINT64_MAX, 0, UINT32_MAX, UINT32_MAX, UINT64_MAX);
  assert_int_equal(gl_quota_lease_begin(q, "carol", &none, 1, 1, 0, &c, err, sizeof err),
                   GPULEASE_QUOTA_EXCEEDED);
  assert_string_equal(err, "tenant carol: lease quota 0, 0 leases live");
  gl_quota_free(q);
}

static void test_vram_per_tenant(void **state) {
  (void)state;
  gl_quota *q = gl_quota_new();
  gl_quota_limits a = lim(8 * GiB, UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT64_MAX);
  gl_quota_limits b = lim(20 * GiB, UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT64_MAX);
  gl_quota_charge c1 = begin_ok(q, "alice", &a, 2 * GiB, 60, 0);
  begin_ok(q, "alice", &a, 2 * GiB, 60, 0);
  begin_ok(q, "alice", &a, 2 * GiB, 60, 0);
  char err[256];
  gl_quota_charge c;
  assert_int_equal(gl_quota_lease_begin(q, "alice", &a, 4 * GiB, 60, 0, &c, err, sizeof err),
                   GPULEASE_QUOTA_EXCEEDED);
  assert_string_equal(err, "tenant alice: VRAM quota 8.0 GiB, 6.0 GiB held by 3 leases, 4.0 GiB asked");
  /* exactly up to the limit is fine */
  gl_quota_charge c4 = begin_ok(q, "alice", &a, 2 * GiB, 60, 0);
  assert_int_equal(gl_quota_lease_begin(q, "alice", &a, 1, 60, 0, &c, err, sizeof err),
                   GPULEASE_QUOTA_EXCEEDED);
  assert_string_equal(err, "tenant alice: VRAM quota 8.0 GiB, 8.0 GiB held by 4 leases, 1 byte asked");
  /* bob, meanwhile, holds 16 GiB */
  begin_ok(q, "bob", &b, 16 * GiB, 60, 0);
  assert_int_equal(gl_quota_lease_begin(q, "bob", &b, 5 * GiB, 60, 0, &c, err, sizeof err),
                   GPULEASE_QUOTA_EXCEEDED);
  assert_string_equal(err, "tenant bob: VRAM quota 20.0 GiB, 16.0 GiB held by 1 lease, 5.0 GiB asked");
  begin_ok(q, "bob", &b, 4 * GiB, 60, 0);
  /* a huge ask does not wrap around */
  assert_int_equal(gl_quota_lease_begin(q, "bob", &b, UINT64_MAX - 1, 60, 0, &c, err, sizeof err),
                   GPULEASE_QUOTA_EXCEEDED);
  /* alice frees two: 4 GiB room */
  gl_quota_lease_end(q, "alice", 2 * GiB, &c1, 5 * S);
  gl_quota_lease_end(q, "alice", 2 * GiB, &c4, 5 * S);
  begin_ok(q, "alice", &a, 4 * GiB, 60, 5 * S);
  gl_quota_usage u;
  gl_quota_usage_of(q, "alice", 5 * S, &u);
  assert_int_equal(u.vram_bytes, 8 * GiB);
  assert_int_equal(u.leases, 3);
  /* inexact sizes show their bytes */
  assert_int_equal(gl_quota_lease_begin(q, "alice", &a, 1000000000, 60, 5 * S, &c, err, sizeof err),
                   GPULEASE_QUOTA_EXCEEDED);
  assert_string_equal(err, "tenant alice: VRAM quota 8.0 GiB, 8.0 GiB held by 3 leases, "
                           "953.7 MiB (1000000000 bytes) asked");
  gl_quota_free(q);
}

static void test_max_ttl_per_tenant(void **state) {
  (void)state;
  gl_quota *q = gl_quota_new();
  gl_quota_limits a = lim(UINT64_MAX, UINT32_MAX, UINT32_MAX, 3600, UINT64_MAX);
  gl_quota_limits b = lim(UINT64_MAX, UINT32_MAX, UINT32_MAX, 7200, UINT64_MAX);
  char err[256];
  gl_quota_charge c;
  assert_int_equal(gl_quota_lease_begin(q, "alice", &a, MiB, 3601, 0, &c, err, sizeof err),
                   GPULEASE_QUOTA_EXCEEDED);
  assert_string_equal(err, "tenant alice: max_ttl 3600 s, 3601 s asked");
  gl_quota_usage u;
  gl_quota_usage_of(q, "alice", 0, &u);
  assert_int_equal(u.leases, 0); /* nothing counted on a refusal */
  assert_int_equal(u.gpu_seconds_last_hour, 0);
  c = begin_ok(q, "alice", &a, MiB, 3600, 0);
  begin_ok(q, "bob", &b, MiB, 7200, 0);
  /* renewing above max_ttl is refused and changes nothing */
  gl_quota_charge before = c;
  assert_int_equal(gl_quota_lease_renew(q, "alice", &a, 4000, &c, 10 * S, err, sizeof err),
                   GPULEASE_QUOTA_EXCEEDED);
  assert_string_equal(err, "tenant alice: max_ttl 3600 s, 4000 s asked");
  assert_memory_equal(&c, &before, sizeof c);
  assert_int_equal(gl_quota_lease_renew(q, "alice", &a, 3600, &c, 10 * S, err, sizeof err),
                   GPULEASE_OK);
  assert_int_equal(c.at_ns, 10 * S);
  gl_quota_free(q);
}

static void test_sessions_per_tenant(void **state) {
  (void)state;
  gl_quota *q = gl_quota_new();
  gl_quota_limits a = lim(UINT64_MAX, UINT32_MAX, 1, UINT32_MAX, UINT64_MAX);
  gl_quota_limits b = lim(UINT64_MAX, UINT32_MAX, 2, UINT32_MAX, UINT64_MAX);
  char err[256];
  assert_int_equal(gl_quota_session_begin(q, "alice", &a, 0, err, sizeof err), GPULEASE_OK);
  assert_int_equal(gl_quota_session_begin(q, "alice", &a, 0, err, sizeof err), GPULEASE_QUOTA_EXCEEDED);
  assert_string_equal(err, "tenant alice: session quota 1, 1 session live");
  assert_int_equal(gl_quota_session_begin(q, "bob", &b, 0, err, sizeof err), GPULEASE_OK);
  assert_int_equal(gl_quota_session_begin(q, "bob", &b, 0, err, sizeof err), GPULEASE_OK);
  assert_int_equal(gl_quota_session_begin(q, "bob", &b, 0, err, sizeof err), GPULEASE_QUOTA_EXCEEDED);
  assert_string_equal(err, "tenant bob: session quota 2, 2 sessions live");
  gl_quota_session_end(q, "alice");
  assert_int_equal(gl_quota_session_begin(q, "alice", &a, 0, err, sizeof err), GPULEASE_OK);
  assert_int_equal(gl_quota_session_begin(q, "bob", &b, 0, err, sizeof err), GPULEASE_QUOTA_EXCEEDED);
  /* spurious ends never go below zero */
  gl_quota_session_end(q, "alice");
  gl_quota_session_end(q, "alice");
  gl_quota_session_end(q, "alice");
  gl_quota_session_end(q, "nobody");
  gl_quota_usage u;
  gl_quota_usage_of(q, "alice", 0, &u);
  assert_int_equal(u.sessions, 0);
  assert_int_equal(gl_quota_session_begin(q, "alice", &a, 0, err, sizeof err), GPULEASE_OK);
  assert_int_equal(gl_quota_session_begin(q, "alice", &a, 0, err, sizeof err), GPULEASE_QUOTA_EXCEEDED);
  /* the anonymous tenant and NULL limits (unlimited) */
  for (int i = 0; i < 100; i++)
    assert_int_equal(gl_quota_session_begin(q, "", NULL, 0, err, sizeof err), GPULEASE_OK);
  gl_quota_usage_of(q, "", 0, &u);
  assert_int_equal(u.sessions, 100);
  gl_quota_limits z = lim(UINT64_MAX, UINT32_MAX, 0, UINT32_MAX, UINT64_MAX);
  assert_int_equal(gl_quota_session_begin(q, "", &z, 0, err, sizeof err), GPULEASE_QUOTA_EXCEEDED);
  assert_string_equal(err, "tenant (anonymous): session quota 0, 100 sessions live");
  gl_quota_free(q);
}

static void test_gpu_seconds_refunds_and_window(void **state) {
  (void)state;
  gl_quota *q = gl_quota_new();
  gl_quota_limits a = lim(UINT64_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX, 1000);
  gl_quota_limits b = lim(UINT64_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX, 5000);
  uint64_t t0 = 1000 * MIN; /* some time after boot */
  char err[256];
  gl_quota_charge c, c1, c2;
  gl_quota_usage u;

  /* the whole TTL is reserved up front */
  c1 = begin_ok(q, "alice", &a, MiB, 600, t0);
  gl_quota_usage_of(q, "alice", t0, &u);
  assert_int_equal(u.gpu_seconds_last_hour, 600);
  assert_int_equal(gl_quota_lease_begin(q, "alice", &a, MiB, 401, t0 + S, &c, err, sizeof err),
                   GPULEASE_QUOTA_EXCEEDED);
  assert_string_equal(err, "tenant alice: GPU-second quota 1000 per hour, 600 used in the last hour, 401 asked");
  /* a single TTL over the budget is never granted */
  assert_int_equal(gl_quota_lease_begin(q, "bob", &b, MiB, 5001, t0, &c, err, sizeof err),
                   GPULEASE_QUOTA_EXCEEDED);
  assert_string_equal(err, "tenant bob: GPU-second quota 5000 per hour, 0 used in the last hour, 5001 asked");
  c2 = begin_ok(q, "alice", &a, MiB, 400, t0 + S);
  /* bob is not affected by alice's budget */
  begin_ok(q, "bob", &b, MiB, 3000, t0 + S);

  /* alice frees the first lease after 100.5 s: 499 s come back (rounded up: 101 used) */
  gl_quota_lease_end(q, "alice", MiB, &c1, t0 + 100 * S + S / 2);
  gl_quota_usage_of(q, "alice", t0 + 101 * S, &u);
  assert_int_equal(u.gpu_seconds_last_hour, 101 + 400);
  assert_int_equal(u.leases, 1);
  c = begin_ok(q, "alice", &a, MiB, 499, t0 + 101 * S);
  assert_int_equal(gl_quota_lease_begin(q, "alice", &a, MiB, 1, t0 + 102 * S, &c1, err, sizeof err),
                   GPULEASE_QUOTA_EXCEEDED);

  /* renew: the unused part of the old charge is refunded first. c2 (400 s
   * at t0+1 s) has run 201 s at t0+202 s: 199 unused, and 1000 are used, so
   * 199 more fit exactly */
  assert_int_equal(gl_quota_lease_renew(q, "alice", &a, 200, &c2, t0 + 202 * S, err, sizeof err),
                   GPULEASE_QUOTA_EXCEEDED);
  assert_string_equal(err, "tenant alice: GPU-second quota 1000 per hour, 1000 used in the last hour "
                           "(199 of them unused by this lease), 200 asked");
  assert_int_equal(c2.at_ns, t0 + S); /* unchanged */
  assert_int_equal(gl_quota_lease_renew(q, "alice", &a, 199, &c2, t0 + 202 * S, err, sizeof err),
                   GPULEASE_OK);
  assert_int_equal(c2.at_ns, t0 + 202 * S);
  assert_int_equal(c2.seconds, 199);
  gl_quota_usage_of(q, "alice", t0 + 202 * S, &u);
  assert_int_equal(u.gpu_seconds_last_hour, 101 + 201 + 499 + 199);
  /* renewing early to a shorter TTL gives time back */
  assert_int_equal(gl_quota_lease_renew(q, "alice", &a, 9, &c2, t0 + 203 * S, err, sizeof err),
                   GPULEASE_OK);
  gl_quota_usage_of(q, "alice", t0 + 203 * S, &u);
  assert_int_equal(u.gpu_seconds_last_hour, 101 + 201 + 499 + 1 + 9);
  /* 8 of those 9 unused: 1000 - 811 + 8 = 197 fit */
  assert_int_equal(gl_quota_lease_renew(q, "alice", &a, 198, &c2, t0 + 204 * S, err, sizeof err),
                   GPULEASE_QUOTA_EXCEEDED);
  assert_int_equal(gl_quota_lease_renew(q, "alice", &a, 197, &c2, t0 + 204 * S, err, sizeof err),
                   GPULEASE_OK);

  /* the window slides. Buckets now: minute t0 holds 101 + 201 (c1's use,
   * c2's first 201 s), minute t0+1 c's 499, minute t0+3 c2's 1 + 1 + 197 */
  gl_quota_usage_of(q, "alice", t0 + 59 * MIN, &u);
  assert_int_equal(u.gpu_seconds_last_hour, 1000);
  /* at t0 + 60 min the first minute is gone */
  gl_quota_usage_of(q, "alice", t0 + 60 * MIN, &u);
  assert_int_equal(u.gpu_seconds_last_hour, 499 + 199);
  /* at t0 + 61 min c's minute too, at t0 + 63 min everything */
  gl_quota_usage_of(q, "alice", t0 + 61 * MIN, &u);
  assert_int_equal(u.gpu_seconds_last_hour, 199);
  gl_quota_usage_of(q, "alice", t0 + 62 * MIN, &u);
  assert_int_equal(u.gpu_seconds_last_hour, 199);
  gl_quota_usage_of(q, "alice", t0 + 63 * MIN, &u);
  assert_int_equal(u.gpu_seconds_last_hour, 0);
  c1 = begin_ok(q, "alice", &a, MiB, 1000, t0 + 63 * MIN);

  /* a refund for a charge that has left the window is dropped: c was
   * charged at t0+101 s (minute t0+1); ending it now refunds nothing and
   * does not eat into the new charge */
  gl_quota_lease_end(q, "alice", MiB, &c, t0 + 63 * MIN);
  gl_quota_usage_of(q, "alice", t0 + 63 * MIN, &u);
  assert_int_equal(u.gpu_seconds_last_hour, 1000);
  /* a refund within the window, in another minute than now, comes off its own bucket */
  gl_quota_lease_end(q, "alice", MiB, &c1, t0 + 65 * MIN); /* 120 s used */
  gl_quota_usage_of(q, "alice", t0 + 65 * MIN, &u);
  assert_int_equal(u.gpu_seconds_last_hour, 120);
  gl_quota_usage_of(q, "alice", t0 + 63 * MIN + 60 * MIN, &u);
  assert_int_equal(u.gpu_seconds_last_hour, 0);

  /* bob still has his 3000 from long ago... gone after the hour */
  gl_quota_usage_of(q, "bob", t0 + S, &u);
  assert_int_equal(u.gpu_seconds_last_hour, 3000);
  gl_quota_usage_of(q, "bob", t0 + 60 * MIN, &u);
  assert_int_equal(u.gpu_seconds_last_hour, 0);
  gl_quota_free(q);
}

/* A renew whose old charge has left the window gets nothing back for it:
 * that charge no longer counts, so refunding it would count it twice. */
static void test_renew_after_charge_left_window(void **state) {
  (void)state;
  gl_quota *q = gl_quota_new();
  gl_quota_limits a = lim(UINT64_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX, 8000);
  uint64_t t0 = 500 * MIN;
  char err[256];
  gl_quota_charge l = begin_ok(q, "alice", &a, MiB, 7200, t0); /* a 2 h lease */
  gl_quota_usage u;
  gl_quota_usage_of(q, "alice", t0 + 61 * MIN, &u);
  assert_int_equal(u.gpu_seconds_last_hour, 0); /* its charge left the window */
  begin_ok(q, "alice", &a, MiB, 7000, t0 + 61 * MIN);
  /* l has 3480 s unused, but none of it is in the window */
  assert_int_equal(gl_quota_lease_renew(q, "alice", &a, 1001, &l, t0 + 62 * MIN, err, sizeof err),
                   GPULEASE_QUOTA_EXCEEDED);
  assert_string_equal(err, "tenant alice: GPU-second quota 8000 per hour, 7000 used in the last hour, 1001 asked");
  assert_int_equal(gl_quota_lease_renew(q, "alice", &a, 1000, &l, t0 + 62 * MIN, err, sizeof err),
                   GPULEASE_OK);
  gl_quota_usage_of(q, "alice", t0 + 62 * MIN, &u);
  assert_int_equal(u.gpu_seconds_last_hour, 8000);
  gl_quota_free(q);
}

static void test_spurious_ends_clamp(void **state) {
  (void)state;
  gl_quota *q = gl_quota_new();
  gl_quota_limits a = unlimited();
  gl_quota_charge c = begin_ok(q, "alice", &a, 2 * MiB, 100, 0);
  gl_quota_charge big = {.at_ns = 0, .seconds = 4000000000u};
  gl_quota_lease_end(q, "alice", 10 * MiB, &big, 0); /* more than was ever held or charged */
  gl_quota_lease_end(q, "alice", MiB, &c, 0);
  gl_quota_lease_end(q, "nobody", MiB, &c, 0);
  gl_quota_lease_end(q, "alice", MiB, NULL, 0);
  gl_quota_usage u;
  gl_quota_usage_of(q, "alice", 0, &u);
  assert_int_equal(u.vram_bytes, 0);
  assert_int_equal(u.leases, 0);
  assert_int_equal(u.gpu_seconds_last_hour, 0);
  gl_quota_usage_of(q, "nobody", 0, &u);
  assert_int_equal(u.leases, 0);
  /* a name too long to be a tenant */
  char name[300], err[256];
  memset(name, 'x', sizeof name - 1);
  name[sizeof name - 1] = 0;
  assert_int_equal(gl_quota_session_begin(q, name, &a, 0, err, sizeof err), GPULEASE_INVALID_ARGUMENT);
  assert_string_equal(err, "tenant name of 299 bytes (at most 255)");
  gl_quota_free(q);
}

static void test_tracked_tenants_bounded(void **state) {
  (void)state;
  gl_quota *q = gl_quota_new();
  gl_quota_limits l = unlimited();
  char name[32], err[256];
  for (int i = 0; i < GL_QUOTA_MAX_TENANTS; i++) {
    snprintf(name, sizeof name, "t%d", i);
    assert_int_equal(gl_quota_session_begin(q, name, &l, 0, err, sizeof err), GPULEASE_OK);
  }
  assert_int_equal(gl_quota_tracked(q), GL_QUOTA_MAX_TENANTS);
  assert_int_equal(gl_quota_session_begin(q, "late", &l, 0, err, sizeof err),
                   GPULEASE_CAPACITY_EXCEEDED);
  assert_string_equal(err, "tenant late: the daemon tracks 4096 busy tenants already; retry later");
  /* tracked tenants go on */
  assert_int_equal(gl_quota_session_begin(q, "t7", &l, 0, err, sizeof err), GPULEASE_OK);
  /* t5 goes idle: its slot is reused */
  gl_quota_session_end(q, "t5");
  assert_int_equal(gl_quota_session_begin(q, "late", &l, 0, err, sizeof err), GPULEASE_OK);
  assert_int_equal(gl_quota_tracked(q), GL_QUOTA_MAX_TENANTS);
  gl_quota_usage u;
  gl_quota_usage_of(q, "t7", 0, &u);
  assert_int_equal(u.sessions, 2);
  gl_quota_usage_of(q, "t5", 0, &u);
  assert_int_equal(u.sessions, 0);
  /* a tenant with GPU-seconds in the window is not idle until the hour passes */
  gl_quota_session_end(q, "t9");
  gl_quota_charge c = begin_ok(q, "t9", &l, MiB, 60, 0);
  gl_quota_lease_end(q, "t9", MiB, &c, 30 * S);
  assert_int_equal(gl_quota_session_begin(q, "later", &l, 30 * S, err, sizeof err),
                   GPULEASE_CAPACITY_EXCEEDED);
  assert_int_equal(gl_quota_session_begin(q, "later", &l, 61 * MIN, err, sizeof err), GPULEASE_OK);
  gl_quota_usage_of(q, "t9", 61 * MIN, &u);
  assert_int_equal(u.gpu_seconds_last_hour, 0);
  for (int i = 0; i < GL_QUOTA_MAX_TENANTS; i += 97) { /* the rest are all still there */
    if (i == 5 || i == 9) continue;
    snprintf(name, sizeof name, "t%d", i);
    gl_quota_usage_of(q, name, 0, &u);
    assert_int_equal(u.sessions, i == 7 ? 2 : 1);
  }
  gl_quota_free(q);
}

static void test_fmt_bytes(void **state) {
  (void)state;
  char b[64];
  assert_string_equal(gl_quota_fmt_bytes(8 * GiB, b, sizeof b), "8.0 GiB");
  assert_string_equal(gl_quota_fmt_bytes(3 * GiB / 2, b, sizeof b), "1.5 GiB");
  assert_string_equal(gl_quota_fmt_bytes(512, b, sizeof b), "512 bytes");
  assert_string_equal(gl_quota_fmt_bytes(1536, b, sizeof b), "1.5 KiB");
  assert_string_equal(gl_quota_fmt_bytes(1500000000ull, b, sizeof b), "1.4 GiB (1500000000 bytes)");
  assert_string_equal(gl_quota_fmt_bytes(2ull << 40, b, sizeof b), "2.0 TiB");
  assert_string_equal(gl_quota_fmt_bytes(UINT64_MAX, b, sizeof b), "unlimited");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lease_count_per_tenant),
      cmocka_unit_test(test_vram_per_tenant),
      cmocka_unit_test(test_max_ttl_per_tenant),
      cmocka_unit_test(test_sessions_per_tenant),
      cmocka_unit_test(test_gpu_seconds_refunds_and_window),
      cmocka_unit_test(test_renew_after_charge_left_window),
      cmocka_unit_test(test_spurious_ends_clamp),
      cmocka_unit_test(test_tracked_tenants_bounded),
      cmocka_unit_test(test_fmt_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
