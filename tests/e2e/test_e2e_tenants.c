/*
 * test_e2e_tenants.c - tenants end to end on the emulated device: bearer
 * tokens and client certificates, capability secrets (rights, delegation,
 * expiry, rotation, revocation, another tenant's lease), quotas per tenant,
 * the inventory's tenant section, the audit log, and --auth none beyond
 * loopback. Every refusal is checked for its status and reason, and for
 * leaving the lease as it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "common/util.h"
#include "daemon_harness.h"
#include "gpulease/gpulease.h"
#include "lib_check.h"
#include "net/quic.h"
#include "net/tls.h"
#include "proto/wire.h"

#define TOKEN_ALICE "alice-0123456789abcdef0123456789abcdef"
#define TOKEN_BOB "bob-0123456789abcdef0123456789abcdef0"
#define TOKEN_CAROL "carol-0123456789abcdef0123456789abcdef"
#define TOKEN_ROOT "root-0123456789abcdef0123456789abcdef00"

static const char tenants_ini[] =
    "[tenant alice]\n"
    "token = " TOKEN_ALICE "\n"
    "leases = 3\n"
    "vram = 48MiB\n"
    "max_ttl = 120\n"
    "sessions = 2\n"
    "\n"
    "[tenant bob]\n"
    "token = " TOKEN_BOB "\n"
    "leases = 1\n"
    "\n"
    "[tenant carol]\n"
    "token = " TOKEN_CAROL "\n"
    "gpu_seconds_per_hour = 100\n"
    "\n"
    "[tenant root]\n"
    "token = " TOKEN_ROOT "\n"
    "admin = true\n";

/* GL_TEST_DEVICE=cuda (the GPU check): the node's GPUs, else the emulated
 * device with vram. */
typedef struct fixture {
  gl_test_daemon d;
  char tenants[300], audit[300];
} fixture;

static fixture F;

static int start_token_daemon(void **state) {
  (void)state;
  snprintf(F.tenants, sizeof F.tenants, "/tmp/gl-tenants-%d.ini", (int)getpid());
  snprintf(F.audit, sizeof F.audit, "/tmp/gl-audit-%d.jsonl", (int)getpid());
  FILE *f = fopen(F.tenants, "w");
  assert_non_null(f);
  fputs(tenants_ini, f);
  fclose(f);
  unlink(F.audit);
  static const char *extra[] = {"--auth", "token", "--tenants", NULL, "--audit-log", NULL,
                                "--max-ttl", "300", NULL};
  extra[3] = F.tenants;
  extra[5] = F.audit;
  return gl_test_daemon_start(&F.d, gl_test_on_gpu() ? NULL : "256M", extra);
}

static int stop_token_daemon(void **state) {
  (void)state;
  int rc = gl_test_daemon_stop(&F.d);
  unlink(F.tenants);
  unlink(F.audit);
  return rc;
}

/* A client of tenant `token` (NULL: none); NULL when connect fails, with
 * the status in *st and the message in err. */
static gpulease_client *connect_as(const gl_test_daemon *d, const char *token,
                                   const char *cert, const char *key, gpulease_status *st,
                                   gpulease_error *err) {
  gpulease_connect_options o;
  gpulease_connect_options_default(&o);
  o.addr = d->addr;
  o.pin_sha256 = d->fingerprint;
  o.timeout_ms = 30000;
  o.no_local = 1;
  o.bearer_token = token;
  o.cert_file = cert;
  o.key_file = key;
  gpulease_client *c = NULL;
  *st = gpulease_client_connect(&o, &c, err);
  return *st == GPULEASE_OK ? c : NULL;
}

static gpulease_client *as_d(const gl_test_daemon *d, const char *token) {
  gpulease_status st;
  gpulease_error err;
  gpulease_client *c = connect_as(d, token, NULL, NULL, &st, &err);
  if (!c) fprintf(stderr, "connect: %s: %s\n", gpulease_status_name(st), err.message);
  assert_non_null(c);
  return c;
}

static gpulease_client *as(const char *token) {
  gpulease_status st;
  gpulease_error err;
  gpulease_client *c = connect_as(&F.d, token, NULL, NULL, &st, &err);
  if (!c) fprintf(stderr, "connect: %s: %s\n", gpulease_status_name(st), err.message);
  assert_non_null(c);
  return c;
}

/* Asserts status `want` and that the message holds `needle`. */
static void expect_status(gpulease_status got, const gpulease_error *err, gpulease_status want,
                          const char *needle) {
  if (got != want || (needle && !strstr(err->message, needle)))
    fprintf(stderr, "got %s '%s', want %s with '%s'\n", gpulease_status_name(got),
            got == GPULEASE_OK ? "" : err->message, gpulease_status_name(want),
            needle ? needle : "");
  assert_int_equal(got, want);
  if (needle) assert_non_null(strstr(err->message, needle));
}

/* lease with its secret replaced by `secret`. */
static gpulease_lease with_secret(const gpulease_lease *l, const uint8_t *secret) {
  gpulease_lease x = *l;
  memcpy(x.secret, secret, GPULEASE_SECRET_BYTES);
  return x;
}

static gpulease_lease delegate(gpulease_client *c, const gpulease_lease *l, uint32_t rights,
                               uint32_t ttl_s, const char *to) {
  uint8_t s[GPULEASE_SECRET_BYTES];
  CHECK(gpulease_lease_delegate(c, l, rights, ttl_s, to, s, E));
  return with_secret(l, s);
}

/* ======================================================================
 * Identities
 * ==================================================================== */

static void test_identity_required(void **state) {
  (void)state;
  gpulease_status st;
  gpulease_error err;
  /* No token: connected, but every op is refused on its header. */
  gpulease_client *anon = connect_as(&F.d, NULL, NULL, NULL, &st, &err);
  assert_non_null(anon);
  static gpulease_inventory inv = {.struct_version = GPULEASE_INVENTORY_VERSION};
  expect_status(gpulease_inventory_get(anon, &inv, &err), &err, GPULEASE_UNAUTHORIZED,
                "no identity: this daemon runs --auth token");
  gpulease_lease l;
  expect_status(gpulease_lease_alloc(anon, GPULEASE_ANY_GPU, MiB, 10, &l, &err), &err,
                GPULEASE_UNAUTHORIZED, "no identity");
  gpulease_client_close(anon);
  /* A token the daemon does not know: connect itself fails. */
  assert_null(connect_as(&F.d, "mallory-0123456789abcdef0123456789abcdef", NULL, NULL, &st, &err));
  expect_status(st, &err, GPULEASE_UNAUTHORIZED, "unknown bearer token");
  /* A known one: the inventory names the tenant and its quota. */
  gpulease_client *c = as(TOKEN_ALICE);
  CHECK(gpulease_inventory_get(c, &inv, E));
  assert_string_equal(inv.tenant.name, "alice");
  assert_int_equal(inv.tenant.quota_leases, 3);
  assert_int_equal(inv.tenant.quota_sessions, 2);
  assert_int_equal(inv.tenant.quota_max_ttl_s, 120);
  assert_int_equal(inv.tenant.quota_vram_bytes, 48 * MiB);
  assert_int_equal(inv.tenant.quota_gpu_seconds_per_hour, UINT64_MAX);
  assert_true(inv.tenant.flags & GPULEASE_TENANT_LISTED);
  assert_false(inv.tenant.flags & GPULEASE_TENANT_ADMIN);
  gpulease_client_close(c);
  c = as(TOKEN_ROOT);
  CHECK(gpulease_inventory_get(c, &inv, E));
  assert_string_equal(inv.tenant.name, "root");
  assert_true(inv.tenant.flags & GPULEASE_TENANT_ADMIN);
  gpulease_client_close(c);
}

/* ======================================================================
 * Capability secrets
 * ==================================================================== */

/* Each op refused with a secret that lacks its right, and the lease
 * unchanged. */
static void test_rights(void **state) {
  (void)state;
  gpulease_client *c = as(TOKEN_ALICE);
  gpulease_lease root;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 4 * MiB, 60, &root, E));
  uint32_t gen, rights;
  uint64_t not_after;
  gpulease_secret_describe(root.secret, &gen, &rights, &not_after, NULL);
  assert_int_equal(gen, 1);
  assert_int_equal(rights, GPULEASE_RIGHTS_ALL);
  assert_int_equal(not_after, 0);

  gpulease_error err;
  /* query only */
  gpulease_lease q = delegate(c, &root, GPULEASE_RIGHT_QUERY, 0, NULL);
  CHECK(gpulease_lease_query(c, &q, E));
  expect_status(gpulease_lease_renew(c, &q, 30, &err), &err, GPULEASE_UNAUTHORIZED,
                "LEASE_RENEW needs the right 'renew'");
  expect_status(gpulease_lease_free(c, &q, &err), &err, GPULEASE_UNAUTHORIZED,
                "LEASE_FREE needs the right 'free'");
  expect_status(gl_test_submit_iota(c, &q, &err), &err, GPULEASE_UNAUTHORIZED,
                "GPU_SUBMIT needs the right 'submit'");
  gpulease_session *s = NULL;
  expect_status(gpulease_session_open(c, &q, &s, &err), &err, GPULEASE_UNAUTHORIZED,
                "SESSION_OPEN needs the right 'session'");
  uint8_t more[GPULEASE_SECRET_BYTES];
  expect_status(gpulease_lease_delegate(c, &q, GPULEASE_RIGHT_QUERY, 0, NULL, more, &err), &err,
                GPULEASE_UNAUTHORIZED, "needs the right 'delegate'");
  /* Nothing changed: the TTL was not renewed, the lease lives. */
  CHECK(gpulease_lease_query(c, &root, E));
  assert_int_equal(root.ttl_s, 60);
  assert_int_equal(root.submits, 0);

  /* submit only */
  gpulease_lease sub = delegate(c, &root, GPULEASE_RIGHT_SUBMIT, 0, NULL);
  assert_int_equal(gl_test_submit_iota(c, &sub, &err), GPULEASE_OK);
  expect_status(gpulease_lease_query(c, &sub, &err), &err, GPULEASE_UNAUTHORIZED,
                "needs the right 'query', which");

  /* session without read or write: work runs, memory stays put */
  gpulease_lease ses = delegate(c, &root, GPULEASE_RIGHT_SESSION, 0, NULL);
  CHECK(gpulease_session_open(c, &ses, &s, E));
  gpulease_buffer b;
  CHECK(gpulease_mem_alloc(s, 4096, &b, E));
  uint8_t buf[4096] = {7};
  expect_status(gpulease_mem_write(s, b, 0, buf, sizeof buf, &err), &err,
                GPULEASE_UNAUTHORIZED, "needs the right 'write'");
  expect_status(gpulease_mem_read(s, b, 0, buf, sizeof buf, &err), &err, GPULEASE_UNAUTHORIZED,
                "needs the right 'read'");
  gpulease_session_close(s, NULL);
  /* session, read and write together */
  gpulease_lease rw = delegate(c, &root,
                               GPULEASE_RIGHT_SESSION | GPULEASE_RIGHT_READ | GPULEASE_RIGHT_WRITE,
                               0, NULL);
  CHECK(gpulease_session_open(c, &rw, &s, E));
  CHECK(gpulease_mem_alloc(s, 4096, &b, E));
  for (int i = 0; i < 4096; i++) buf[i] = (uint8_t)i;
  CHECK(gpulease_mem_write(s, b, 0, buf, sizeof buf, E));
  uint8_t back[4096];
  CHECK(gpulease_mem_read(s, b, 0, back, sizeof back, E));
  assert_memory_equal(back, buf, sizeof buf);
  CHECK(gpulease_session_close(s, E));

  /* A derived secret cannot be stronger than the one presented. */
  gpulease_lease dq = delegate(c, &root, GPULEASE_RIGHT_DELEGATE | GPULEASE_RIGHT_QUERY, 0, NULL);
  expect_status(gpulease_lease_delegate(c, &dq, GPULEASE_RIGHT_FREE, 0, NULL, more, &err), &err,
                GPULEASE_UNAUTHORIZED, "cannot delegate 'free'");
  CHECK(gpulease_lease_delegate(c, &dq, GPULEASE_RIGHT_QUERY, 0, NULL, more, E));

  /* A wrong secret (one bit of the MAC), a missing one (zeros). */
  gpulease_lease bad = root;
  bad.secret[GPULEASE_SECRET_BYTES - 1] ^= 1;
  expect_status(gpulease_lease_query(c, &bad, &err), &err, GPULEASE_UNAUTHORIZED,
                "wrong secret for lease");
  memset(bad.secret, 0, sizeof bad.secret);
  expect_status(gpulease_lease_free(c, &bad, &err), &err, GPULEASE_UNAUTHORIZED,
                "wrong secret for lease");
  /* A forged secret: the rights of a query-only secret raised, MAC kept. */
  bad = q;
  bad.secret[7] = 0xFF;
  expect_status(gpulease_lease_free(c, &bad, &err), &err, GPULEASE_UNAUTHORIZED,
                "wrong secret for lease");
  CHECK(gpulease_lease_query(c, &root, E));
  CHECK(gpulease_lease_free(c, &root, E));
  gpulease_client_close(c);
}

static void test_expiry_rotation_revocation(void **state) {
  (void)state;
  gpulease_client *c = as(TOKEN_ALICE);
  gpulease_error err;
  gpulease_lease root;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 4 * MiB, 60, &root, E));
  /* A secret that expires after a second. */
  gpulease_lease brief = delegate(c, &root, GPULEASE_RIGHT_QUERY, 1, NULL);
  CHECK(gpulease_lease_query(c, &brief, E));
  sleep(2);
  expect_status(gpulease_lease_query(c, &brief, &err), &err, GPULEASE_UNAUTHORIZED,
                "expired at");

  /* Rotation voids the old root secret and everything derived from it. */
  gpulease_lease old = root;
  gpulease_lease kid = delegate(c, &root, GPULEASE_RIGHT_QUERY, 0, NULL);
  CHECK(gpulease_lease_rotate(c, &root, 60, E));
  assert_memory_not_equal(root.secret, old.secret, GPULEASE_SECRET_BYTES);
  uint32_t gen;
  gpulease_secret_describe(root.secret, &gen, NULL, NULL, NULL);
  assert_int_equal(gen, 2);
  expect_status(gpulease_lease_query(c, &old, &err), &err, GPULEASE_UNAUTHORIZED,
                "rotated to generation 2");
  expect_status(gpulease_lease_query(c, &kid, &err), &err, GPULEASE_UNAUTHORIZED,
                "rotated to generation 2");
  CHECK(gpulease_lease_query(c, &root, E));
  /* Rotating takes renew and delegate. */
  gpulease_lease renew_only = delegate(c, &root, GPULEASE_RIGHT_RENEW, 0, NULL);
  expect_status(gpulease_lease_rotate(c, &renew_only, 60, &err), &err, GPULEASE_UNAUTHORIZED,
                "'delegate'");

  /* Revocation by the owning tenant, without the secret. */
  gpulease_lease kid2 = delegate(c, &root, GPULEASE_RIGHT_QUERY, 0, NULL);
  gpulease_client *bob = as(TOKEN_BOB);
  expect_status(gpulease_lease_revoke(bob, root.id, "not mine", &err), &err, GPULEASE_NOT_FOUND,
                "no live lease");
  CHECK(gpulease_lease_query(c, &root, E)); /* bob changed nothing */
  CHECK(gpulease_lease_revoke(c, root.id, "key leaked", E));
  expect_status(gpulease_lease_query(c, &root, &err), &err, GPULEASE_UNAUTHORIZED,
                "was revoked by 'alice': key leaked");
  expect_status(gpulease_lease_query(c, &kid2, &err), &err, GPULEASE_UNAUTHORIZED, "revoked");
  expect_status(gl_test_submit_iota(c, &root, &err), &err, GPULEASE_UNAUTHORIZED, "revoked");

  /* An admin revokes another tenant's lease. */
  gpulease_lease bl;
  CHECK(gpulease_lease_alloc(bob, GPULEASE_ANY_GPU, 4 * MiB, 60, &bl, E));
  gpulease_client *admin = as(TOKEN_ROOT);
  CHECK(gpulease_lease_revoke(admin, bl.id, "maintenance", E));
  expect_status(gpulease_lease_query(bob, &bl, &err), &err, GPULEASE_UNAUTHORIZED,
                "revoked by 'root': maintenance");
  gpulease_client_close(admin);
  gpulease_client_close(bob);
  gpulease_client_close(c);
}

static void test_foreign_tenant(void **state) {
  (void)state;
  gpulease_client *alice = as(TOKEN_ALICE), *bob = as(TOKEN_BOB);
  gpulease_error err;
  gpulease_lease root;
  CHECK(gpulease_lease_alloc(alice, GPULEASE_ANY_GPU, 4 * MiB, 60, &root, E));
  /* The right secret, the wrong tenant. */
  expect_status(gpulease_lease_query(bob, &root, &err), &err, GPULEASE_UNAUTHORIZED,
                "belongs to tenant 'alice'; this connection is tenant 'bob'");
  expect_status(gpulease_lease_free(bob, &root, &err), &err, GPULEASE_UNAUTHORIZED,
                "belongs to tenant 'alice'");
  expect_status(gl_test_submit_iota(bob, &root, &err), &err, GPULEASE_UNAUTHORIZED, "tenant 'alice'");
  /* A secret delegated within alice's tenant is still not bob's. */
  gpulease_lease mine = delegate(alice, &root, GPULEASE_RIGHT_SUBMIT, 0, NULL);
  expect_status(gl_test_submit_iota(bob, &mine, &err), &err, GPULEASE_UNAUTHORIZED, "not delegated");
  /* Handed to bob: bob may use it, for its rights only. */
  gpulease_lease for_bob =
      delegate(alice, &root, GPULEASE_RIGHT_SUBMIT | GPULEASE_RIGHT_QUERY, 0, "bob");
  int other = 0;
  gpulease_secret_describe(for_bob.secret, NULL, NULL, NULL, &other);
  assert_true(other);
  assert_int_equal(gl_test_submit_iota(bob, &for_bob, &err), GPULEASE_OK);
  CHECK(gpulease_lease_query(bob, &for_bob, E));
  assert_int_equal(for_bob.submits, 1);
  expect_status(gpulease_lease_free(bob, &for_bob, &err), &err, GPULEASE_UNAUTHORIZED,
                "'free'");
  /* ... and carol may not. */
  gpulease_client *carol = as(TOKEN_CAROL);
  expect_status(gpulease_lease_query(carol, &for_bob, &err), &err, GPULEASE_UNAUTHORIZED,
                "tenant 'carol'");
  gpulease_client_close(carol);
  CHECK(gpulease_lease_free(alice, &root, E));
  gpulease_client_close(bob);
  gpulease_client_close(alice);
}

/* ======================================================================
 * Every op with every bad credential
 * ==================================================================== */

/* The ops that carry a lease secret, each encoded with lease id and
 * secret; the handles inside need not exist (the secret is checked first). */
static const uint16_t matrix_ops[] = {
    GL_OP_LEASE_RENEW,  GL_OP_LEASE_QUERY,    GL_OP_LEASE_FREE,     GL_OP_LEASE_DELEGATE,
    GL_OP_GPU_SUBMIT,   GL_OP_SESSION_OPEN,   GL_OP_SESSION_CLOSE,  GL_OP_SYNC,
    GL_OP_MEM_ALLOC,    GL_OP_MEM_FREE,       GL_OP_MEM_WRITE,      GL_OP_MEM_READ,
    GL_OP_MEM_COPY,     GL_OP_MEMSET,         GL_OP_MODULE_LOAD,    GL_OP_MODULE_UNLOAD,
    GL_OP_FUNC_INFO,    GL_OP_LAUNCH,         GL_OP_LAUNCH_EX,      GL_OP_BURST,
    GL_OP_EVENT_RECORD, GL_OP_EVENT_ELAPSED,  GL_OP_GRAPH_BEGIN,    GL_OP_GRAPH_END,
    GL_OP_GRAPH_LAUNCH, GL_OP_GRAPH_DESTROY,  GL_OP_BATCH,          GL_OP_MEM_WRITE_SHM,
    GL_OP_MEM_READ_SHM, GL_OP_SHM_DETACH,
};

static void encode_op(uint16_t op, uint64_t id, const uint8_t *secret, gl_buf *out) {
  static const uint8_t data[4] = {1, 2, 3, 4};
  static const uint8_t image[1] = {'x'};
  gl_request *r = calloc(1, sizeof *r);
  assert_non_null(r);
  r->op = op;
  gl_lease_auth a = {.lease_id = id};
  memcpy(a.secret, secret, GPULEASE_SECRET_BYTES);
  gl_session_ref ref = {.auth = a, .session_id = 1, .seq = 0};
  gl_buf list;
  gl_buf_init(&list);
  gl_launch_req launch = {.s = ref, .function = 1, .grid = {1, 1, 1}, .block = {1, 1, 1}};
  switch (op) {
  case GL_OP_LEASE_RENEW: r->u.renew.auth = a; r->u.renew.ttl_s = 30; break;
  case GL_OP_LEASE_QUERY: case GL_OP_LEASE_FREE: case GL_OP_SESSION_OPEN: r->u.auth = a; break;
  case GL_OP_LEASE_DELEGATE:
    r->u.delegate.auth = a;
    r->u.delegate.rights = GPULEASE_RIGHT_QUERY;
    break;
  case GL_OP_GPU_SUBMIT:
    r->u.submit.auth = a;
    r->u.submit.image_format = GPULEASE_IMAGE_PTX;
    r->u.submit.kernel_name = "k";
    r->u.submit.kernel_name_len = 1;
    for (int i = 0; i < 3; i++) r->u.submit.grid[i] = r->u.submit.block[i] = 1;
    r->u.submit.image = image;
    r->u.submit.image_len = 1;
    r->u.submit.output_size = 4;
    break;
  case GL_OP_SESSION_CLOSE: case GL_OP_GRAPH_END: r->u.session = ref; break;
  case GL_OP_SYNC: r->u.sync.s = ref; break;
  case GL_OP_MEM_ALLOC: r->u.mem_alloc.s = ref; r->u.mem_alloc.size_bytes = 64; break;
  case GL_OP_MEM_FREE: case GL_OP_MODULE_UNLOAD: r->u.handle.s = ref; r->u.handle.handle = 1; break;
  case GL_OP_MEM_WRITE:
    r->u.mem_write.s = ref;
    r->u.mem_write.buffer = 1;
    r->u.mem_write.data = data;
    r->u.mem_write.data_len = 4;
    break;
  case GL_OP_MEM_READ:
    r->u.mem_read.s = ref;
    r->u.mem_read.buffer = 1;
    r->u.mem_read.size_bytes = 4;
    break;
  case GL_OP_MEM_COPY:
    r->u.mem_copy.s = ref;
    r->u.mem_copy.dst_buffer = r->u.mem_copy.src_buffer = 1;
    r->u.mem_copy.size_bytes = 4;
    break;
  case GL_OP_MEMSET:
    r->u.memset.s = ref;
    r->u.memset.buffer = 1;
    r->u.memset.element_size = 4;
    r->u.memset.count = 1;
    break;
  case GL_OP_MODULE_LOAD:
    r->u.module_load.s = ref;
    r->u.module_load.image_format = GPULEASE_IMAGE_PTX;
    r->u.module_load.image = image;
    r->u.module_load.image_len = 1;
    break;
  case GL_OP_FUNC_INFO:
    r->u.func_info.s = ref;
    r->u.func_info.module = 1;
    r->u.func_info.kernel_name = "k";
    r->u.func_info.kernel_name_len = 1;
    break;
  case GL_OP_LAUNCH: case GL_OP_LAUNCH_EX: r->u.launch = launch; break;
  case GL_OP_BURST:
    assert_int_equal(gl_burst_add(&list, &launch), GPULEASE_OK);
    r->u.burst.s = ref;
    r->u.burst.count = 1;
    r->u.burst.launches = list.data;
    r->u.burst.launches_len = list.len;
    r->u.burst.checked = true;
    break;
  case GL_OP_EVENT_RECORD: case GL_OP_EVENT_ELAPSED:
    r->u.event.s = ref;
    r->u.event.end_event = 1;
    break;
  case GL_OP_GRAPH_BEGIN: r->u.graph_begin.s = ref; break;
  case GL_OP_GRAPH_LAUNCH: case GL_OP_GRAPH_DESTROY: r->u.graph.s = ref; r->u.graph.graph = 1; break;
  case GL_OP_BATCH: {
    gl_request m = {.op = GL_OP_MEMSET};
    m.u.memset.s = ref;
    m.u.memset.buffer = 1;
    m.u.memset.element_size = 4;
    m.u.memset.count = 1;
    assert_int_equal(gl_batch_add(&list, &m), GPULEASE_OK);
    r->u.batch.s = ref;
    r->u.batch.count = 1;
    r->u.batch.ops = list.data;
    r->u.batch.ops_len = list.len;
    break;
  }
  case GL_OP_MEM_WRITE_SHM: case GL_OP_MEM_READ_SHM:
    r->u.mem_shm.s = ref;
    r->u.mem_shm.buffer = r->u.mem_shm.segment = 1;
    r->u.mem_shm.size_bytes = 4;
    break;
  case GL_OP_SHM_DETACH: r->u.shm_detach.auth = a; r->u.shm_detach.segment = 1; break;
  default: fail();
  }
  gl_buf_init(out);
  gpulease_status st = gl_request_encode(r, out);
  if (st != GPULEASE_OK) fprintf(stderr, "encode %s failed\n", gl_op_name(op));
  assert_int_equal(st, GPULEASE_OK);
  gl_buf_free(&list);
  free(r);
}

/* Sends each op with the secret and checks UNAUTHORIZED with `reason`. */
static int refuse_all(gl_qclient *q, uint64_t id, const uint8_t *secret, const char *what,
                      const char *reason) {
  int n = 0;
  for (size_t i = 0; i < sizeof matrix_ops / sizeof matrix_ops[0]; i++) {
    gl_buf b;
    encode_op(matrix_ops[i], id, secret, &b);
    uint8_t *raw = NULL;
    size_t len = 0;
    char err[256];
    assert_int_equal(gl_qclient_request(q, b.data, b.len, &raw, &len, err, sizeof err), GL_QC_OK);
    gl_buf_free(&b);
    gl_response resp;
    assert_int_equal(gl_response_decode(raw, len, 1 << 20, &resp, err, sizeof err), GPULEASE_OK);
    bool ok = resp.status == GPULEASE_UNAUTHORIZED &&
              memmem(resp.msg, resp.msg_len, reason, strlen(reason)) != NULL;
    if (!ok)
      fprintf(stderr, "%s with a %s secret: %s '%.*s', want UNAUTHORIZED '%s'\n",
              gl_op_name(matrix_ops[i]), what, gpulease_status_name(resp.status),
              (int)resp.msg_len, resp.msg, reason);
    assert_true(ok);
    free(raw);
    n++;
  }
  return n;
}

/* A raw QUIC client of d (requests built by hand), authenticated as token
 * (NULL: no identity). */
static gl_qclient *raw_client(const gl_test_daemon *d, const char *token) {
  char host[64], err[256];
  uint16_t port;
  assert_int_equal(gl_parse_hostport(d->addr, 5701, host, sizeof host, &port), 0);
  gl_qclient_config qc = {.host = host, .port = port, .pin_sha256 = d->fingerprint,
                          .timeout_ms = 30000, .max_response_bytes = 1 << 20};
  gl_qclient *q = NULL;
  assert_int_equal(gl_qclient_connect(&qc, &q, err, sizeof err), GL_QC_OK);
  if (token) {
    gl_request a = {.op = GL_OP_AUTHENTICATE};
    snprintf(a.u.authenticate.token, sizeof a.u.authenticate.token, "%s", token);
    gl_buf b;
    gl_buf_init(&b);
    assert_int_equal(gl_request_encode(&a, &b), GPULEASE_OK);
    uint8_t *raw = NULL;
    size_t len;
    assert_int_equal(gl_qclient_request(q, b.data, b.len, &raw, &len, err, sizeof err), GL_QC_OK);
    gl_buf_free(&b);
    free(raw);
  }
  return q;
}

/* Every op that takes a lease secret, with a wrong, missing, expired,
 * rotated-out, revoked, attenuated and another tenant's secret, and with
 * no identity: each refused with its reason, and the lease as it was. */
static void test_every_op_every_bad_secret(void **state) {
  (void)state;
  gpulease_client *alice = as(TOKEN_ALICE);
  gpulease_lease l, gone;
  CHECK(gpulease_lease_alloc(alice, GPULEASE_ANY_GPU, 4 * MiB, 90, &l, E));
  gpulease_lease old = l;
  CHECK(gpulease_lease_rotate(alice, &l, 90, E)); /* old: generation 1, rotated out */
  gpulease_lease brief = delegate(alice, &l, GPULEASE_RIGHTS_ALL, 1, NULL);
  CHECK(gpulease_lease_alloc(alice, GPULEASE_ANY_GPU, 4 * MiB, 60, &gone, E));
  CHECK(gpulease_lease_revoke(alice, gone.id, "matrix", E));
  sleep(2); /* brief expires */
  gl_qclient *qa = raw_client(&F.d, TOKEN_ALICE), *qb = raw_client(&F.d, TOKEN_BOB), *qn = raw_client(&F.d, NULL);
  uint8_t wrong[GPULEASE_SECRET_BYTES], zero[GPULEASE_SECRET_BYTES] = {0};
  memcpy(wrong, l.secret, sizeof wrong);
  wrong[30] ^= 0x40;
  int n = 0;
  n += refuse_all(qa, l.id, wrong, "wrong", "wrong secret for lease");
  n += refuse_all(qa, l.id, zero, "missing (zero)", "wrong secret for lease");
  n += refuse_all(qa, l.id, brief.secret, "expired", "expired at");
  n += refuse_all(qa, l.id, old.secret, "rotated-out", "rotated to generation 2");
  n += refuse_all(qa, gone.id, gone.secret, "revoked", "was revoked by 'alice': matrix");
  n += refuse_all(qb, l.id, l.secret, "another tenant's", "belongs to tenant 'alice'");
  n += refuse_all(qn, l.id, l.secret, "no identity", "no identity");
  /* Attenuated: for each op, a secret with every right but the ones it needs. */
  for (size_t i = 0; i < sizeof matrix_ops / sizeof matrix_ops[0]; i++) {
    uint32_t need;
    switch (matrix_ops[i]) {
    case GL_OP_LEASE_RENEW: need = GPULEASE_RIGHT_RENEW; break;
    case GL_OP_LEASE_QUERY: need = GPULEASE_RIGHT_QUERY; break;
    case GL_OP_LEASE_FREE: need = GPULEASE_RIGHT_FREE; break;
    case GL_OP_LEASE_DELEGATE: need = GPULEASE_RIGHT_DELEGATE; break;
    case GL_OP_GPU_SUBMIT: need = GPULEASE_RIGHT_SUBMIT; break;
    case GL_OP_MEM_WRITE: case GL_OP_MEM_WRITE_SHM: need = GPULEASE_RIGHT_WRITE; break;
    case GL_OP_MEM_READ: case GL_OP_MEM_READ_SHM: need = GPULEASE_RIGHT_READ; break;
    case GL_OP_SHM_DETACH: need = GPULEASE_RIGHT_READ | GPULEASE_RIGHT_WRITE; break;
    default: need = GPULEASE_RIGHT_SESSION;
    }
    gpulease_lease att = delegate(alice, &l, GPULEASE_RIGHTS_ALL & ~need, 0, NULL);
    gl_buf b;
    encode_op(matrix_ops[i], l.id, att.secret, &b);
    uint8_t *raw = NULL;
    size_t len;
    char err[256];
    assert_int_equal(gl_qclient_request(qa, b.data, b.len, &raw, &len, err, sizeof err), GL_QC_OK);
    gl_buf_free(&b);
    gl_response resp;
    assert_int_equal(gl_response_decode(raw, len, 1 << 20, &resp, err, sizeof err), GPULEASE_OK);
    bool ok = resp.status == GPULEASE_UNAUTHORIZED &&
              memmem(resp.msg, resp.msg_len, "needs the right", 15) != NULL;
    if (!ok)
      fprintf(stderr, "%s attenuated: %s '%.*s'\n", gl_op_name(matrix_ops[i]),
              gpulease_status_name(resp.status), (int)resp.msg_len, resp.msg);
    assert_true(ok);
    free(raw);
    n++;
  }
  fprintf(stderr, "%d refusals checked (%zu ops x 8 kinds of bad secret)\n", n,
          sizeof matrix_ops / sizeof matrix_ops[0]);
  /* Nothing changed: the lease lives, its TTL was not renewed, no submit. */
  CHECK(gpulease_lease_query(alice, &l, E));
  assert_int_equal(l.ttl_s, 90);
  assert_int_equal(l.submits, 0);
  assert_true(l.remaining_ms < 90000 - 1500);
  gpulease_session *s;
  CHECK(gpulease_session_open(alice, &l, &s, E)); /* the lease's worker is fine */
  CHECK(gpulease_session_close(s, E));
  gl_qclient_del(qa);
  gl_qclient_del(qb);
  gl_qclient_del(qn);
  CHECK(gpulease_lease_free(alice, &l, E));
  gpulease_client_close(alice);
}

/* A GPU's shared context serves one tenant at a time. */
static void test_shared_context_per_tenant(void **state) {
  (void)state;
  gpulease_client *alice = as(TOKEN_ALICE), *bob = as(TOKEN_BOB);
  gpulease_error err;
  gpulease_lease_opts shared = {.struct_version = GPULEASE_LEASE_OPTS_VERSION,
                                .lease_class = GPULEASE_CLASS_SHARED};
  gpulease_lease a1, a2, b1;
  CHECK(gpulease_lease_alloc_opts(alice, 0, 4 * MiB, 60, &shared, &a1, E));
  expect_status(gpulease_lease_alloc_opts(bob, 0, 4 * MiB, 60, &shared, &b1, &err), &err,
                GPULEASE_BUSY, "shared leases of different tenants never share a context");
  CHECK(gpulease_lease_alloc_opts(alice, 0, 4 * MiB, 60, &shared, &a2, E));
  assert_int_equal(gl_test_submit_iota(alice, &a2, &err), GPULEASE_OK);
  CHECK(gpulease_lease_free(alice, &a1, E));
  CHECK(gpulease_lease_free(alice, &a2, E));
  CHECK(gpulease_lease_alloc_opts(bob, 0, 4 * MiB, 60, &shared, &b1, E));
  assert_int_equal(gl_test_submit_iota(bob, &b1, &err), GPULEASE_OK);
  CHECK(gpulease_lease_free(bob, &b1, E));
  gpulease_client_close(bob);
  gpulease_client_close(alice);
}

/* ======================================================================
 * Quotas
 * ==================================================================== */

static void test_quotas(void **state) {
  (void)state;
  gpulease_client *alice = as(TOKEN_ALICE), *bob = as(TOKEN_BOB), *carol = as(TOKEN_CAROL);
  gpulease_error err;
  gpulease_lease a[3], b, b2;
  /* alice: 48 MiB of VRAM in at most 3 leases, TTL at most 120 s. */
  expect_status(gpulease_lease_alloc(alice, GPULEASE_ANY_GPU, 4 * MiB, 121, &a[0], &err), &err,
                GPULEASE_QUOTA_EXCEEDED, "120");
  CHECK(gpulease_lease_alloc(alice, GPULEASE_ANY_GPU, 32 * MiB, 60, &a[0], E));
  expect_status(gpulease_lease_alloc(alice, GPULEASE_ANY_GPU, 20 * MiB, 60, &a[1], &err), &err,
                GPULEASE_QUOTA_EXCEEDED, "VRAM");
  CHECK(gpulease_lease_alloc(alice, GPULEASE_ANY_GPU, 8 * MiB, 60, &a[1], E));
  CHECK(gpulease_lease_alloc(alice, GPULEASE_ANY_GPU, 4 * MiB, 60, &a[2], E));
  gpulease_lease extra;
  expect_status(gpulease_lease_alloc(alice, GPULEASE_ANY_GPU, MiB, 60, &extra, &err), &err,
                GPULEASE_QUOTA_EXCEEDED, "lease");
  expect_status(gpulease_lease_renew(alice, &a[0], 200, &err), &err, GPULEASE_QUOTA_EXCEEDED,
                "120");
  /* bob is held to his own limit (1 lease), not alice's. */
  CHECK(gpulease_lease_alloc(bob, GPULEASE_ANY_GPU, 40 * MiB, 200, &b, E));
  expect_status(gpulease_lease_alloc(bob, GPULEASE_ANY_GPU, MiB, 60, &b2, &err), &err,
                GPULEASE_QUOTA_EXCEEDED, "tenant bob");
  static gpulease_inventory inv = {.struct_version = GPULEASE_INVENTORY_VERSION};
  CHECK(gpulease_inventory_get(alice, &inv, E));
  assert_int_equal(inv.tenant.used_leases, 3);
  assert_int_equal(inv.tenant.used_vram_bytes, 44 * MiB);
  CHECK(gpulease_inventory_get(bob, &inv, E));
  assert_int_equal(inv.tenant.used_leases, 1);
  assert_int_equal(inv.tenant.used_vram_bytes, 40 * MiB);

  /* Sessions: 2 for alice; a closed one gives its place back. */
  gpulease_session *s[3];
  CHECK(gpulease_session_open(alice, &a[0], &s[0], E));
  CHECK(gpulease_session_open(alice, &a[1], &s[1], E));
  expect_status(gpulease_session_open(alice, &a[2], &s[2], &err), &err, GPULEASE_QUOTA_EXCEEDED,
                "session");
  CHECK(gpulease_inventory_get(alice, &inv, E));
  assert_int_equal(inv.tenant.used_sessions, 2);
  CHECK(gpulease_session_close(s[0], E));
  CHECK(gpulease_session_open(alice, &a[2], &s[2], E));
  CHECK(gpulease_session_close(s[1], E));
  CHECK(gpulease_session_close(s[2], E));

  /* Freeing gives VRAM and the lease count back. */
  CHECK(gpulease_lease_free(alice, &a[0], E));
  CHECK(gpulease_lease_alloc(alice, GPULEASE_ANY_GPU, 30 * MiB, 60, &a[0], E));

  /* carol: 100 GPU-seconds an hour; a lease reserves its TTL, a free gives
   * back what it did not use. */
  gpulease_lease c1, c2;
  CHECK(gpulease_lease_alloc(carol, GPULEASE_ANY_GPU, MiB, 60, &c1, E));
  expect_status(gpulease_lease_alloc(carol, GPULEASE_ANY_GPU, MiB, 60, &c2, &err), &err,
                GPULEASE_QUOTA_EXCEEDED, "GPU-second quota 100 per hour");
  CHECK(gpulease_lease_free(carol, &c1, E));
  CHECK(gpulease_lease_alloc(carol, GPULEASE_ANY_GPU, MiB, 60, &c2, E));
  CHECK(gpulease_inventory_get(carol, &inv, E));
  assert_true(inv.tenant.used_gpu_seconds >= 60 && inv.tenant.used_gpu_seconds <= 70);
  CHECK(gpulease_lease_free(carol, &c2, E));

  for (int i = 0; i < 3; i++) CHECK(gpulease_lease_free(alice, &a[i], E));
  CHECK(gpulease_lease_free(bob, &b, E));
  CHECK(gpulease_inventory_get(alice, &inv, E));
  assert_int_equal(inv.tenant.used_leases, 0);
  assert_int_equal(inv.tenant.used_vram_bytes, 0);
  assert_int_equal(inv.tenant.used_sessions, 0);
  gpulease_client_close(carol);
  gpulease_client_close(bob);
  gpulease_client_close(alice);
}

/* ======================================================================
 * The CLI and the audit log
 * ==================================================================== */

/* The value after "key" on its line of CLI output, into out. */
static void field(const char *text, const char *key, char *out, size_t len) {
  const char *p = strstr(text, key);
  assert_non_null(p);
  p += strlen(key);
  while (*p == ' ') p++;
  size_t n = strcspn(p, "\n");
  snprintf(out, len, "%.*s", (int)n, p);
}

static void test_cli(void **state) {
  (void)state;
  static char out[8192];
  char id[32], secret[128], weak[128];
  const gl_test_daemon *d = &F.d;
  assert_int_equal(gl_test_cli(d, out, sizeof out, "inventory"), 1);
  assert_non_null(strstr(out, "no identity"));
  assert_int_equal(gl_test_cli(d, out, sizeof out, "--token %s inventory", TOKEN_ALICE), 0);
  assert_non_null(strstr(out, "tenant alice: VRAM 0 MiB of 48 MiB, leases 0 of 3"));
  assert_int_equal(
      gl_test_cli(d, out, sizeof out, "--token %s lease alloc --vram 1M --ttl 30", TOKEN_ALICE),
      0);
  field(out, "lease", id, sizeof id);
  field(out, "secret", secret, sizeof secret);
  assert_int_equal(strlen(secret), 2 * GPULEASE_SECRET_BYTES);
  assert_int_equal(gl_test_cli(d, out, sizeof out,
                               "--token %s lease delegate %s --secret %s --rights query --ttl 20",
                               TOKEN_ALICE, id, secret),
                   0);
  assert_non_null(strstr(out, "rights     query"));
  field(out, "secret", weak, sizeof weak);
  assert_int_equal(
      gl_test_cli(d, out, sizeof out, "--token %s lease show %s --secret %s", TOKEN_ALICE, id, weak),
      0);
  assert_int_equal(
      gl_test_cli(d, out, sizeof out, "--token %s lease free %s --secret %s", TOKEN_ALICE, id, weak),
      1);
  assert_non_null(strstr(out, "UNAUTHORIZED"));
  assert_non_null(strstr(out, "'free'"));
  assert_int_equal(gl_test_cli(d, out, sizeof out, "--token %s lease renew %s --secret %s --ttl 30 --rotate",
                               TOKEN_ALICE, id, secret),
                   0);
  assert_int_equal(
      gl_test_cli(d, out, sizeof out, "--token %s lease show %s --secret %s", TOKEN_ALICE, id, weak),
      1);
  assert_non_null(strstr(out, "rotated"));
  assert_int_equal(gl_test_cli(d, out, sizeof out, "--token %s lease revoke %s --reason done",
                               TOKEN_ALICE, id),
                   0);
  assert_non_null(strstr(out, "revoked"));
}

/* Every refusal above left a line; so did every grant. */
static void test_audit_log(void **state) {
  (void)state;
  FILE *f = fopen(F.audit, "r");
  assert_non_null(f);
  char line[4096];
  int lines = 0, auth_ok = 0, alloc_alice = 0, unauthorized = 0, quota = 0, revoke = 0,
      anon_refused = 0;
  while (fgets(line, sizeof line, f)) {
    json_object *o = json_tokener_parse(line);
    assert_non_null(o);
    json_object *v;
    assert_true(json_object_object_get_ex(o, "time", &v));
    assert_true(json_object_object_get_ex(o, "peer", &v));
    assert_non_null(strstr(json_object_get_string(v), "127.0.0.1:"));
    const char *tenant = json_object_object_get_ex(o, "tenant", &v) ? json_object_get_string(v) : "";
    const char *op = json_object_object_get_ex(o, "op", &v) ? json_object_get_string(v) : "";
    const char *status = json_object_object_get_ex(o, "status", &v) ? json_object_get_string(v) : "";
    bool has_lease = json_object_object_get_ex(o, "lease", &v);
    auth_ok += !strcmp(op, "AUTHENTICATE") && !strcmp(status, "OK");
    alloc_alice += !strcmp(op, "LEASE_ALLOC") && !strcmp(tenant, "alice") &&
                   !strcmp(status, "OK") && has_lease;
    unauthorized += !strcmp(status, "UNAUTHORIZED");
    quota += !strcmp(status, "QUOTA_EXCEEDED");
    revoke += !strcmp(op, "LEASE_REVOKE") && !strcmp(status, "OK");
    anon_refused += !tenant[0] && !strcmp(status, "UNAUTHORIZED");
    lines++;
    json_object_put(o);
  }
  fclose(f);
  fprintf(stderr, "audit: %d lines, %d AUTHENTICATE, %d alice allocs, %d UNAUTHORIZED, %d "
                  "QUOTA_EXCEEDED, %d revocations, %d anonymous refusals\n",
          lines, auth_ok, alloc_alice, unauthorized, quota, revoke, anon_refused);
  assert_true(auth_ok >= 5);
  assert_true(alloc_alice >= 5);
  assert_true(unauthorized >= 20);
  assert_true(quota >= 6);
  assert_true(revoke >= 3);
  assert_true(anon_refused >= 2);
}

/* ======================================================================
 * Mutual TLS, and --auth none beyond loopback
 * ==================================================================== */

static void test_mtls(void **state) {
  (void)state;
  char dir[] = "/tmp/gl-mtls-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char ca[300], cak[300], other[300], otherk[300], alice[300], alicek[300], uri[300], urik[300],
      stranger[300], strangerk[300], err[512];
  snprintf(ca, sizeof ca, "%s/ca.pem", dir);
  snprintf(cak, sizeof cak, "%s/ca.key", dir);
  snprintf(other, sizeof other, "%s/other.pem", dir);
  snprintf(otherk, sizeof otherk, "%s/other.key", dir);
  snprintf(alice, sizeof alice, "%s/alice.pem", dir);
  snprintf(alicek, sizeof alicek, "%s/alice.key", dir);
  snprintf(uri, sizeof uri, "%s/uri.pem", dir);
  snprintf(urik, sizeof urik, "%s/uri.key", dir);
  snprintf(stranger, sizeof stranger, "%s/stranger.pem", dir);
  snprintf(strangerk, sizeof strangerk, "%s/stranger.key", dir);
  assert_int_equal(gl_tls_make_ca("test CA", ca, cak, err, sizeof err), 0);
  assert_int_equal(gl_tls_make_ca("other CA", other, otherk, err, sizeof err), 0);
  assert_int_equal(gl_tls_issue_client_cert(ca, cak, "alice", NULL, false, alice, alicek, err,
                                            sizeof err),
                   0);
  assert_int_equal(gl_tls_issue_client_cert(ca, cak, "svc", "spiffe://example.org/ns/ml/sa/svc",
                                            false, uri, urik, err, sizeof err),
                   0);
  assert_int_equal(gl_tls_issue_client_cert(other, otherk, "alice", NULL, false, stranger,
                                            strangerk, err, sizeof err),
                   0);
  gl_test_daemon d;
  const char *extra[] = {"--auth", "mtls", "--client-ca", ca, NULL};
  assert_int_equal(gl_test_daemon_start(&d, gl_test_on_gpu() ? NULL : "64M", extra), 0);
  gpulease_status st;
  gpulease_error e;
  /* No certificate, or one of another CA: the handshake fails. */
  assert_null(connect_as(&d, NULL, NULL, NULL, &st, &e));
  assert_true(st == GPULEASE_TLS_FAILED || st == GPULEASE_DISCONNECTED);
  assert_null(connect_as(&d, NULL, stranger, strangerk, &st, &e));
  assert_true(st == GPULEASE_TLS_FAILED || st == GPULEASE_DISCONNECTED);
  /* The CN names the tenant; a URI SAN does, when there is one. */
  static gpulease_inventory inv = {.struct_version = GPULEASE_INVENTORY_VERSION};
  gpulease_client *c = connect_as(&d, NULL, alice, alicek, &st, &e);
  assert_non_null(c);
  CHECK(gpulease_inventory_get(c, &inv, E));
  assert_string_equal(inv.tenant.name, "alice");
  gpulease_lease l;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, 4 * MiB, 30, &l, E));
  gpulease_client *svc = connect_as(&d, NULL, uri, urik, &st, &e);
  assert_non_null(svc);
  CHECK(gpulease_inventory_get(svc, &inv, E));
  assert_string_equal(inv.tenant.name, "spiffe://example.org/ns/ml/sa/svc");
  gpulease_error err2;
  expect_status(gpulease_lease_query(svc, &l, &err2), &err2, GPULEASE_UNAUTHORIZED,
                "belongs to tenant 'alice'");
  /* A bearer token means nothing to an mTLS daemon. */
  assert_null(connect_as(&d, TOKEN_ALICE, alice, alicek, &st, &e));
  expect_status(st, &e, GPULEASE_UNSUPPORTED, "takes no bearer tokens");
  assert_int_equal(gl_test_submit_iota(c, &l, &err2), GPULEASE_OK);
  CHECK(gpulease_lease_free(c, &l, E));
  gpulease_client_close(svc);
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* gpuleased with --auth none on a wildcard address: refused, unless
 * --allow-anonymous. */
static void test_anonymous_beyond_loopback(void **state) {
  (void)state;
  char cmd[1024], out[2048];
  snprintf(cmd, sizeof cmd,
           "%s/src/daemon/gpuleased --listen 0.0.0.0:0 --device emu --state-dir /tmp/gl-anon-%d "
           "--local-socket none 2>&1",
           getenv("GL_TEST_BIN_DIR"), (int)getpid());
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = 0;
  int st = pclose(p);
  fprintf(stderr, "%s", out);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
  assert_non_null(strstr(out, "--auth none on 0.0.0.0"));
  assert_non_null(strstr(out, "--allow-anonymous"));
  gl_test_daemon d;
  const char *extra[] = {"--allow-anonymous", NULL};
  /* The harness listens on loopback; --allow-anonymous must not break it. */
  assert_int_equal(gl_test_daemon_start(&d, "64M", extra), 0);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
  snprintf(cmd, sizeof cmd, "rm -rf /tmp/gl-anon-%d", (int)getpid());
  assert_int_equal(system(cmd), 0);
}

/* --max-requests-per-tenant 2: a tenant's third request in flight is BUSY
 * at once; the first two are served. Five LEASE_ALLOCs pipelined on one
 * connection (each waits for its worker to start). */
static void test_requests_in_flight(void **state) {
  (void)state;
  gl_test_daemon d;
  const char *extra[] = {"--max-requests-per-tenant", "2", NULL};
  assert_int_equal(gl_test_daemon_start(&d, gl_test_on_gpu() ? NULL : "64M", extra), 0);
  gl_qclient *q = raw_client(&d, NULL);
  char err[256];
  gl_request r = {.op = GL_OP_LEASE_ALLOC};
  r.u.alloc.gpu_index = GPULEASE_ANY_GPU;
  r.u.alloc.vram_bytes = MiB;
  r.u.alloc.ttl_s = 30;
  gl_buf b;
  gl_buf_init(&b);
  assert_int_equal(gl_request_encode(&r, &b), GPULEASE_OK);
  uint64_t tok[5];
  for (int i = 0; i < 5; i++)
    assert_int_equal(gl_qclient_send(q, b.data, b.len, &tok[i], err, sizeof err), GL_QC_OK);
  gl_buf_free(&b);
  int ok = 0, busy = 0;
  for (int i = 0; i < 5; i++) {
    uint8_t *raw = NULL;
    size_t len = 0;
    assert_int_equal(gl_qclient_wait(q, tok[i], &raw, &len, err, sizeof err), GL_QC_OK);
    gl_response resp;
    assert_int_equal(gl_response_decode(raw, len, 1 << 20, &resp, err, sizeof err), GPULEASE_OK);
    if (resp.status == GPULEASE_OK) ok++;
    if (resp.status == GPULEASE_BUSY) {
      busy++;
      assert_non_null(memmem(resp.msg, resp.msg_len, "--max-requests-per-tenant", 25));
    }
    free(raw);
  }
  fprintf(stderr, "5 pipelined LEASE_ALLOCs: %d granted, %d BUSY\n", ok, busy);
  assert_int_equal(ok + busy, 5);
  assert_true(ok >= 2);
  assert_true(busy >= 1);
  gl_qclient_del(q);
  /* Once answered they no longer count: a new request is served. */
  gpulease_client *c = gl_test_connect(&d, 30000);
  gpulease_lease l;
  CHECK(gpulease_lease_alloc(c, GPULEASE_ANY_GPU, MiB, 30, &l, E));
  gpulease_client_close(c);
  assert_int_equal(gl_test_daemon_stop(&d), 0);
}

/* Kills every worker of d (they ignore their daemon's kill here). */
static void kill_workers(const gl_test_daemon *d) {
  pid_t pids[16];
  int n = gl_test_daemon_child_pids(d, pids, 16);
  for (int i = 0; i < n; i++) kill(pids[i], SIGKILL);
}

static bool gpu0_fenced(gpulease_client *c) {
  static gpulease_inventory inv = {.struct_version = GPULEASE_INVENTORY_VERSION};
  CHECK(gpulease_inventory_get(c, &inv, E));
  return (inv.gpus[0].flags & GPULEASE_GPU_FENCED) != 0;
}

/* A worker that does not exit after its lease ends (fault injection: the
 * daemon's kill has no effect, GL_FAULT_WORKER_KILL_IGNORED) fences its GPU
 * after --teardown-timeout-ms: no new leases, the inventory says so; an
 * admin may clear it; once the worker is gone the fence lifts by itself. */
static void test_fenced_gpu(void **state) {
  (void)state;
  if (gl_test_on_gpu()) {
    skip(); /* the fault injection leaves workers behind: not on a real GPU */
  }
  gl_test_daemon d;
  const char *extra[] = {"--auth", "token", "--tenants", F.tenants, "--teardown-timeout-ms", "300",
                         NULL};
  FILE *f = fopen(F.tenants, "w");
  assert_non_null(f);
  fputs(tenants_ini, f);
  fclose(f);
  setenv("GL_FAULT_WORKER_KILL_IGNORED", "1", 1);
  int started = gl_test_daemon_start(&d, "64M", extra);
  unsetenv("GL_FAULT_WORKER_KILL_IGNORED");
  assert_int_equal(started, 0);
  gpulease_client *alice = as_d(&d, TOKEN_ALICE), *root = as_d(&d, TOKEN_ROOT);
  gpulease_error err;
  gpulease_lease l;
  CHECK(gpulease_lease_alloc(alice, 0, 4 * MiB, 60, &l, E));
  assert_false(gpu0_fenced(alice));
  CHECK(gpulease_lease_free(alice, &l, E));
  usleep(700 * 1000); /* past the deadline */
  assert_true(gpu0_fenced(alice));
  expect_status(gpulease_lease_alloc(alice, 0, 4 * MiB, 60, &l, &err), &err, GPULEASE_BUSY,
                "GPU 0 is fenced (its worker PID");
  expect_status(gpulease_admin_unfence(alice, 0, &err), &err, GPULEASE_UNAUTHORIZED,
                "for the daemon's admins");
  CHECK(gpulease_admin_unfence(root, 0, E));
  assert_false(gpu0_fenced(alice));
  expect_status(gpulease_admin_unfence(root, 0, &err), &err, GPULEASE_INVALID_ARGUMENT,
                "not fenced");
  CHECK(gpulease_lease_alloc(alice, 0, 4 * MiB, 60, &l, E));
  CHECK(gpulease_lease_free(alice, &l, E));
  usleep(700 * 1000);
  assert_true(gpu0_fenced(alice));
  /* The stuck workers finally go: the fence lifts by itself. */
  kill_workers(&d);
  for (int i = 0; i < 50 && gpu0_fenced(alice); i++) usleep(100 * 1000);
  assert_false(gpu0_fenced(alice));
  CHECK(gpulease_lease_alloc(alice, 0, 4 * MiB, 60, &l, E));
  assert_int_equal(gl_test_submit_iota(alice, &l, &err), GPULEASE_OK);
  CHECK(gpulease_lease_free(alice, &l, E));
  assert_int_equal(gl_test_daemon_log_count(&d, "GPU 0 fenced: its worker PID"), 2);
  assert_int_equal(gl_test_daemon_log_count(&d, "fence lifted"), 1);
  gpulease_client_close(root);
  gpulease_client_close(alice);
  kill_workers(&d);
  gl_test_daemon_stop(&d);
  unlink(F.tenants);
}

int main(void) {
  const struct CMUnitTest token_tests[] = {
      cmocka_unit_test(test_identity_required),
      cmocka_unit_test(test_rights),
      cmocka_unit_test(test_expiry_rotation_revocation),
      cmocka_unit_test(test_foreign_tenant),
      cmocka_unit_test(test_shared_context_per_tenant),
      cmocka_unit_test(test_every_op_every_bad_secret),
      cmocka_unit_test(test_quotas),
      cmocka_unit_test(test_cli),
      cmocka_unit_test(test_audit_log),
  };
  const struct CMUnitTest other_tests[] = {
      cmocka_unit_test(test_mtls),
      cmocka_unit_test(test_anonymous_beyond_loopback),
      cmocka_unit_test(test_requests_in_flight),
      cmocka_unit_test(test_fenced_gpu),
  };
  int failed = cmocka_run_group_tests(token_tests, start_token_daemon, stop_token_daemon);
  return failed + cmocka_run_group_tests(other_tests, NULL, NULL);
}
