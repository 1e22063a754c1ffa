/*
 * test_optable.c - the op table (src/proto/ops.def, optable.c): its rows
 * agree with each other and with what the codec does, docs/protocol.md's op
 * table and rights tables agree with it, and a decoded request survives
 * the trip to another address (gl_request_detach/attach: decode once).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/wire.h"

#define MAX_BODY (256u << 20)

static const char *src_dir(void) {
  const char *src = getenv("GL_TEST_SRC_DIR");
  return src ? src : GL_SOURCE_DIR;
}

/* The whole of a file, NUL-terminated (the caller frees it). */
static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  buf[n] = 0;
  if (len) *len = (size_t)n;
  return buf;
}

static const gl_op_info *by_name(const char *name, size_t n) {
  size_t count;
  const gl_op_info *t = gl_op_table(&count);
  for (size_t i = 0; i < count; i++)
    if (strlen(t[i].name) == n && !strncmp(t[i].name, name, n)) return &t[i];
  return NULL;
}

/* ---- the rows among themselves ------------------------------------------ */

static void test_rows_consistent(void **state) {
  (void)state;
  size_t n;
  const gl_op_info *t = gl_op_table(&n);
  assert_int_equal(n, GL_OP_COUNT);
  assert_true(n >= 49);
  for (size_t i = 0; i < n; i++) {
    const gl_op_info *o = &t[i];
    /* The lookup finds each row by its code, and the name round-trips. */
    assert_ptr_equal(gl_op_info_of(o->code), o);
    assert_string_equal(gl_op_name(o->code), o->name);
    for (size_t j = 0; j < i; j++) {
      assert_int_not_equal(t[j].code, o->code);
      assert_string_not_equal(t[j].name, o->name);
    }
    /* Internal ops are exactly the 0x7Fxx codes. */
    assert_int_equal(o->served == GL_OP_SERVED_INTERNAL, (o->code & 0xFF00) == 0x7F00);
    /* An op of the network needs rights exactly when it names a lease. */
    if (o->served != GL_OP_SERVED_INTERNAL)
      assert_int_equal(o->rights != 0, o->target != GL_OP_TARGET_NONE);
    assert_int_equal(o->rights & ~0xFFu, 0);
    /* Session ops name a session, but SESSION_OPEN (its lease); batchable
     * ops are session ops, but never SESSION_OPEN or BATCH itself. */
    if (o->flags & GL_OPF_SESSION)
      assert_int_equal(o->target, o->code == GL_OP_SESSION_OPEN ? GL_OP_TARGET_LEASE
                                                                : GL_OP_TARGET_SESSION);
    if (o->flags & GL_OPF_BATCH) {
      assert_true(o->flags & GL_OPF_SESSION);
      assert_int_not_equal(o->code, GL_OP_SESSION_OPEN);
      assert_int_not_equal(o->code, GL_OP_BATCH);
      assert_int_not_equal(o->served, GL_OP_SERVED_INTERNAL);
    }
    /* What runs in the daemon names no session. */
    if (o->where == GL_OP_WHERE_DAEMON) assert_int_not_equal(o->target, GL_OP_TARGET_SESSION);
    assert_non_null(o->since);
    assert_true(strchr(o->since, '.') != NULL);
  }
  assert_null(gl_op_info_of(0));
  assert_null(gl_op_info_of(0x7F7F));
  assert_string_equal(gl_op_name(0x0999), "UNKNOWN");
}

/* The REF column points where the codec puts the lease_auth: decode a
 * request with a recognisable lease id and read it back through the
 * table. */
static void test_refs_match_codec(void **state) {
  (void)state;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/tests/fuzz-corpus/wire", src_dir());
  DIR *d = opendir(dir);
  assert_non_null(d);
  static gl_request req;
  unsigned seen_lease = 0, seen_session = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, "req-", 4)) continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t n;
    char *m = slurp(path, &n);
    if (gl_request_decode((const uint8_t *)m, n, MAX_BODY, &req, NULL, NULL, 0) == GPULEASE_OK) {
      const gl_op_info *o = gl_op_info_of(req.op);
      assert_non_null(o);
      const gl_lease_auth *a = gl_request_auth(&req);
      uint64_t peek = 0;
      bool peeked = gl_request_peek_lease((const uint8_t *)m, n, &peek);
      if (o->target == GL_OP_TARGET_NONE) {
        assert_null(a);
        assert_false(peeked);
      } else {
        assert_non_null(a);
        /* The body's first 8 bytes are the lease id. */
        uint64_t want = 0;
        for (int k = 0; k < 8; k++) want = want << 8 | (uint8_t)m[GL_WIRE_HEADER_SIZE + k];
        assert_int_equal(a->lease_id, want);
        assert_int_equal(peeked, o->where == GL_OP_WHERE_WORKER);
        if (peeked) assert_int_equal(peek, want);
        seen_lease++;
      }
      if (o->target == GL_OP_TARGET_SESSION) {
        assert_non_null(gl_request_session(&req));
        assert_ptr_equal(&gl_request_session(&req)->auth, a);
        seen_session++;
      } else {
        assert_null(gl_request_session(&req));
      }
    }
    free(m);
  }
  closedir(d);
  assert_true(seen_lease >= 20);
  assert_true(seen_session >= 15);
}

/* ---- decode once: a decoded request carried to another address --------- */

static void test_detach_attach_corpus(void **state) {
  (void)state;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/tests/fuzz-corpus/wire", src_dir());
  DIR *d = opendir(dir);
  assert_non_null(d);
  static gl_request req, carried;
  unsigned done = 0, with_ptrs = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, "req-", 4)) continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t n;
    uint8_t *m = (uint8_t *)slurp(path, &n);
    bool burst = gl_message_peek_op(m, n) == GL_OP_BURST;
    gpulease_status st = gl_request_decode(m, n, MAX_BODY, &req, NULL, NULL, 0);
    if (st != GPULEASE_OK) {
      free(m);
      continue;
    }
    (void)burst;
    carried = req;
    assert_int_equal(gl_request_detach(&carried, m, n), GPULEASE_OK);
    with_ptrs += memcmp(&carried, &req, sizeof req) != 0;
    /* The receiver's copy, at another address; the sender's bytes are
     * poisoned, so a pointer left pointing there re-encodes differently. */
    uint8_t *copy = malloc(n);
    memcpy(copy, m, n);
    memset(m, 0xA5, n);
    assert_int_equal(gl_request_attach(&carried, copy, n), GPULEASE_OK);
    gl_buf b;
    gl_buf_init(&b);
    assert_int_equal(gl_request_encode(&carried, &b), GPULEASE_OK);
    if (b.len != n || memcmp(b.data, copy, n) != 0)
      fail_msg("%s: re-encoded after detach/attach differs", e->d_name);
    gl_buf_free(&b);
    free(copy);
    free(m);
    done++;
  }
  closedir(d);
  assert_true(done >= 30);
  assert_true(with_ptrs >= 8);
}

static void test_detach_attach_bounds(void **state) {
  (void)state;
  uint8_t img[] = ".version 8.0\n";
  gl_request q = {.op = GL_OP_MODULE_LOAD};
  q.u.module_load.s.session_id = 1;
  q.u.module_load.image_format = 1;
  q.u.module_load.image_len = sizeof img;
  q.u.module_load.image = img;
  gl_buf b;
  gl_buf_init(&b);
  assert_int_equal(gl_request_encode(&q, &b), GPULEASE_OK);
  gl_request r;
  assert_int_equal(gl_request_decode(b.data, b.len, MAX_BODY, &r, NULL, NULL, 0), GPULEASE_OK);
  /* A pointer outside the message is refused. */
  gl_request bad = r;
  bad.u.module_load.image = img;
  assert_int_equal(gl_request_detach(&bad, b.data, b.len), GPULEASE_INVALID_ARGUMENT);
  /* An offset past the receiver's copy is refused. */
  gl_request c = r;
  assert_int_equal(gl_request_detach(&c, b.data, b.len), GPULEASE_OK);
  assert_int_equal(gl_request_attach(&c, b.data, 10), GPULEASE_INVALID_ARGUMENT);
  /* An unknown op is refused. */
  gl_request u = {.op = 0x0999};
  assert_int_equal(gl_request_attach(&u, b.data, b.len), GPULEASE_INVALID_ARGUMENT);
  gl_buf_free(&b);
}

/* A BATCH holds only the ops the table marks BATCH: an internal op
 * smuggled into one (its entry's op bytes patched) is refused by the
 * decoder, and gl_batch_add refuses to add one. */
static void test_batch_flag(void **state) {
  (void)state;
  gl_request rd = {.op = GL_OP_MEM_READ};
  rd.u.mem_read.s.auth.lease_id = 3;
  rd.u.mem_read.s.session_id = 4;
  rd.u.mem_read.s.seq = 1;
  rd.u.mem_read.buffer = 1;
  rd.u.mem_read.size_bytes = 16;
  gl_buf list;
  gl_buf_init(&list);
  assert_int_equal(gl_batch_add(&list, &rd), GPULEASE_OK);
  gl_request arena = {.op = GL_OP_MEM_READ_ARENA};
  arena.u.mem_shm.s = rd.u.mem_read.s;
  arena.u.mem_shm.size_bytes = 16;
  size_t before = list.len;
  assert_int_equal(gl_batch_add(&list, &arena), GPULEASE_INVALID_ARGUMENT);
  assert_int_equal(list.len, before);
  gl_request b = {.op = GL_OP_BATCH};
  b.u.batch.s = rd.u.mem_read.s;
  b.u.batch.count = 1;
  b.u.batch.ops = list.data;
  b.u.batch.ops_len = list.len;
  gl_buf m;
  gl_buf_init(&m);
  assert_int_equal(gl_request_encode(&b, &m), GPULEASE_OK);
  static gl_request out;
  char err[256];
  gpulease_status st = gl_request_decode(m.data, m.len, MAX_BODY, &out, NULL, err, sizeof err);
  if (st != GPULEASE_OK) fail_msg("the plain batch: %s", err);
  /* The same batch by hand, its one entry a well-formed MEM_READ_ARENA:
   * the batch's header, session_ref and count, then u32 len + message. */
  gl_buf am;
  gl_buf_init(&am);
  assert_int_equal(gl_request_encode(&arena, &am), GPULEASE_OK);
  size_t head = GL_WIRE_HEADER_SIZE + 64 + 2;
  size_t total = head + 4 + am.len;
  uint8_t *raw = malloc(total);
  memcpy(raw, m.data, head);
  for (int k = 0; k < 4; k++) raw[head + k] = (uint8_t)(am.len >> (8 * (3 - k)));
  memcpy(raw + head + 4, am.data, am.len);
  uint32_t body = (uint32_t)(total - GL_WIRE_HEADER_SIZE);
  for (int k = 0; k < 4; k++) raw[8 + k] = (uint8_t)(body >> (8 * (3 - k)));
  assert_int_equal(gl_request_decode(raw, total, MAX_BODY, &out, NULL, err, sizeof err),
                   GPULEASE_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "MEM_READ_ARENA cannot be in a batch"));
  free(raw);
  gl_buf_free(&am);
  gl_buf_free(&m);
  gl_buf_free(&list);
}

/* ---- docs/protocol.md against the table --------------------------------- */

/* The text between the heading line starting with `start` and the next
 * line starting with "## " (NUL-terminated copy; the caller frees it). */
static char *section(const char *doc, const char *start) {
  const char *a = strstr(doc, start);
  if (!a) fail_msg("docs/protocol.md has no '%s'", start);
  const char *b = strstr(a + strlen(start), "\n## ");
  size_t n = b ? (size_t)(b - a) : strlen(a);
  char *s = malloc(n + 1);
  memcpy(s, a, n);
  s[n] = 0;
  return s;
}

/* Splits a markdown table row "| a | b | c |" into up to max trimmed cells
 * (pointers into line, which is modified). Returns the count. */
static int cells(char *line, char **out, int max) {
  int n = 0;
  char *p = strchr(line, '|');
  while (p && n < max) {
    char *q = strchr(p + 1, '|');
    if (!q) break;
    *q = 0;
    char *c = p + 1;
    while (*c == ' ') c++;
    char *end = c + strlen(c);
    while (end > c && end[-1] == ' ') *--end = 0;
    out[n++] = c;
    p = q;
  }
  return n;
}

static void test_doc_op_table(void **state) {
  (void)state;
  char path[4096];
  snprintf(path, sizeof path, "%s/docs/protocol.md", src_dir());
  char *doc = slurp(path, NULL);
  char *sec = section(doc, "## 4. Operations");
  bool seen[GL_OP_COUNT] = {false};
  size_t rows = 0;
  for (char *line = strtok(sec, "\n"); line; line = strtok(NULL, "\n")) {
    if (strncmp(line, "| `0x", 5)) continue;
    char *c[5];
    if (cells(line, c, 5) != 5) fail_msg("op table row with fewer than 5 cells");
    unsigned code;
    if (sscanf(c[0], "`0x%x`", &code) != 1) fail_msg("op table code '%s'", c[0]);
    const gl_op_info *o = gl_op_info_of((uint16_t)code);
    if (!o) fail_msg("docs/protocol.md lists op 0x%04x (%s), which ops.def lacks", code, c[1]);
    if (strcmp(o->name, c[1]))
      fail_msg("op 0x%04x is %s in ops.def, %s in the doc", code, o->name, c[1]);
    const char *want = o->served == GL_OP_SERVED_NET     ? "network"
                       : o->served == GL_OP_SERVED_LOCAL ? "local socket"
                                                         : "internal";
    if (strncmp(c[2], want, strlen(want)))
      fail_msg("%s is served to '%s' in the doc, %s in ops.def", o->name, c[2], want);
    size_t idx = (size_t)(o - gl_op_table(NULL));
    if (seen[idx]) fail_msg("%s listed twice", o->name);
    seen[idx] = true;
    rows++;
  }
  for (size_t i = 0; i < GL_OP_COUNT; i++)
    if (!seen[i]) fail_msg("docs/protocol.md's op table lacks %s", gl_op_table(NULL)[i].name);
  assert_int_equal(rows, GL_OP_COUNT);
  /* Every op has a section of its own, or shares one that names it. */
  for (size_t i = 0; i < GL_OP_COUNT; i++) {
    const gl_op_info *o = &gl_op_table(NULL)[i];
    char want[64];
    snprintf(want, sizeof want, "%s (0x%04X)", o->name, o->code);
    if (!strstr(doc, want) && o->code != GL_OP_GRAPH_END && o->code != GL_OP_GRAPH_LAUNCH &&
        o->code != GL_OP_GRAPH_SET_ARGS) /* within "GRAPH_BEGIN (0x0361) .. GRAPH_DESTROY" */
      fail_msg("docs/protocol.md has no heading '%s'", want);
  }
  free(sec);
  free(doc);
}

/* Right names as protocol.md writes them, bit 0 first. */
static uint32_t right_of_word(const char *w, size_t n) {
  static const char *const names[] = {"query", "renew", "free", "submit",
                                      "session", "read", "write", "delegate"};
  for (unsigned i = 0; i < 8; i++)
    if (strlen(names[i]) == n && !strncmp(names[i], w, n)) return 1u << i;
  return 0;
}

static void test_doc_rights(void **state) {
  (void)state;
  char path[4096];
  snprintf(path, sizeof path, "%s/docs/protocol.md", src_dir());
  char *doc = slurp(path, NULL);
  const char *a = strstr(doc, "| op | rights needed |");
  assert_non_null(a);
  const char *b = strstr(a, "\n\n");
  assert_non_null(b);
  char *tab = strndup(a, (size_t)(b - a));
  bool covered[GL_OP_COUNT] = {false};
  uint32_t other_session = 0;
  for (char *line = strtok(tab, "\n"); line; line = strtok(NULL, "\n")) {
    char *c[2];
    if (cells(line, c, 2) != 2 || !strcmp(c[0], "op") || c[0][0] == '-') continue;
    /* The rights: the words before any ';' or ':', joined by "and". */
    uint32_t rights = 0;
    size_t stop = strcspn(c[1], ";:");
    for (const char *w = c[1]; w < c[1] + stop;) {
      size_t n = strcspn(w, " ,;:");
      if (n > (size_t)(c[1] + stop - w)) n = (size_t)(c[1] + stop - w);
      rights |= right_of_word(w, n);
      w += n;
      while (w < c[1] + stop && (*w == ' ' || *w == ',')) w++;
    }
    if (!strncmp(c[0], "every other session op", 22)) {
      other_session = rights;
      continue;
    }
    if (!strcmp(c[0], "BATCH")) { /* the union of its entries' */
      covered[GL_OPI_BATCH] = true;
      continue;
    }
    for (char *name = c[0]; *name;) {
      size_t n = strcspn(name, ",");
      const gl_op_info *o = by_name(name, n);
      if (!o) fail_msg("the rights table names '%.*s', which ops.def lacks", (int)n, name);
      if (o->rights != rights)
        fail_msg("%s needs 0x%02x in ops.def, 0x%02x in the doc's rights table", o->name,
                 o->rights, rights);
      covered[o - gl_op_table(NULL)] = true;
      name += n;
      while (*name == ',' || *name == ' ') name++;
    }
  }
  assert_int_equal(other_session, GPULEASE_RIGHT_SESSION);
  for (size_t i = 0; i < GL_OP_COUNT; i++) {
    const gl_op_info *o = &gl_op_table(NULL)[i];
    if (covered[i] || o->served == GL_OP_SERVED_INTERNAL) continue;
    if (!(o->flags & GL_OPF_SESSION))
      fail_msg("the doc's rights table does not give %s's rights", o->name);
    if (o->rights != other_session)
      fail_msg("%s: the doc says 'every other session op' needs session; ops.def 0x%02x",
               o->name, o->rights);
  }
  free(tab);
  free(doc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows_consistent),   cmocka_unit_test(test_refs_match_codec),
      cmocka_unit_test(test_detach_attach_corpus), cmocka_unit_test(test_detach_attach_bounds),
      cmocka_unit_test(test_batch_flag),        cmocka_unit_test(test_doc_op_table),
      cmocka_unit_test(test_doc_rights),
  };
  return cmocka_run_group_tests_name("optable", tests, NULL, NULL);
}
