/*
 * bulk.c - see bulk.h.
 *
 * Lifetimes: the arena is counted (the bulk path holds one reference, each
 * slot in use another), so a slot lent to a QUIC stream outlives the lease
 * safely; the bulk path is counted too (the lease holds one reference, each
 * call waiting for the worker another), so a worker's late answer finds it.
 */
#include "daemon/bulk.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"
#include "common/parcopy.h"

/* A slot: room for the reply's header in front of the data, which starts
 * at a 64-byte boundary. */
#define HEAD_ROOM 64u
#define SLOT_BYTES (HEAD_ROOM + GL_BULK_SLOT_DATA)
#define ARENA_BYTES ((uint64_t)SLOT_BYTES * GL_BULK_SLOTS)

typedef struct arena {
  int fd;
  uint8_t *base;
  unsigned refs;
  uint32_t busy; /* a bit a slot */
  uint64_t *pinned_in_use; /* given back when the arena goes */
} arena;

enum attach_state { DETACHED, ATTACHING, ATTACHED, REFUSED };

struct gl_bulk {
  gl_lease_auth auth;
  gl_bulk_budget budget;
  unsigned refs;
  bool ended;
  arena *a;
  enum attach_state state;
  uint64_t segment;
  unsigned generation; /* worker changes, so a late SHM_ATTACH answer is ignored */
};

/* ---- arena ---------------------------------------------------------------- */

static void arena_unref(arena *a) {
  if (--a->refs) return;
  munmap(a->base, ARENA_BYTES);
  close(a->fd);
  *a->pinned_in_use -= ARENA_BYTES;
  free(a);
}

static arena *arena_new(uint64_t *pinned_in_use) {
  arena *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  a->fd = memfd_create("gpulease-bulk", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (a->fd < 0 || ftruncate(a->fd, (off_t)ARENA_BYTES) != 0 ||
      fcntl(a->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
    GL_WARN("bulk: cannot make a %" PRIu64 "-byte arena: %s", ARENA_BYTES, strerror(errno));
    if (a->fd >= 0) close(a->fd);
    free(a);
    return NULL;
  }
  a->base = mmap(NULL, ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
  if (a->base == MAP_FAILED) {
    GL_WARN("bulk: cannot map the arena: %s", strerror(errno));
    close(a->fd);
    free(a);
    return NULL;
  }
  a->refs = 1;
  a->pinned_in_use = pinned_in_use;
  *pinned_in_use += ARENA_BYTES;
  return a;
}

/* A free slot's index, marked busy, or -1. */
static int slot_take(arena *a) {
  for (int i = 0; i < GL_BULK_SLOTS; i++)
    if (!(a->busy & (1u << i))) {
      a->busy |= 1u << i;
      a->refs++;
      return i;
    }
  return -1;
}

static void slot_put(arena *a, int i) {
  a->busy &= ~(1u << i);
  arena_unref(a);
}

static uint8_t *slot_data(const arena *a, int i) {
  return a->base + (size_t)i * SLOT_BYTES + HEAD_ROOM;
}

/* ---- the bulk path -------------------------------------------------------- */

gl_bulk *gl_bulk_new(const gl_lease_auth *auth, gl_bulk_budget budget) {
  gl_bulk *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->auth = *auth;
  b->budget = budget;
  b->refs = 1;
  return b;
}

static void bulk_unref(gl_bulk *b) {
  if (--b->refs) return;
  if (b->a) arena_unref(b->a);
  free(b);
}

void gl_bulk_del(gl_bulk *b) {
  if (!b) return;
  b->ended = true;
  bulk_unref(b);
}

void gl_bulk_worker_gone(gl_bulk *b) {
  if (!b) return;
  b->state = DETACHED;
  b->segment = 0;
  b->generation++;
}

bool gl_bulk_owns_segment(const gl_bulk *b, uint64_t segment) {
  return b && b->state == ATTACHED && segment == b->segment;
}

typedef struct attach_call {
  gl_bulk *b;
  unsigned generation;
} attach_call;

static void attach_done(void *ctx, gpulease_status status, const uint8_t *msg, size_t len,
                        const char *why) {
  attach_call *c = ctx;
  gl_bulk *b = c->b;
  gl_response resp;
  bool ok = status == GPULEASE_OK &&
            gl_response_decode(msg, len, len, &resp, NULL, 0) == GPULEASE_OK &&
            resp.status == GPULEASE_OK;
  if (!b->ended && c->generation == b->generation) {
    if (ok) {
      b->state = ATTACHED;
      b->segment = resp.u.handle;
      GL_DEBUG("bulk: lease %" PRIu64 ": arena attached as segment 0x%016" PRIx64,
               b->auth.lease_id, b->segment);
    } else {
      /* Not again for this worker: its transfers go through the pipe. */
      b->state = REFUSED;
      GL_WARN("bulk: lease %" PRIu64 ": the worker did not attach the arena: %s",
              b->auth.lease_id, why ? why : "refused");
    }
  }
  bulk_unref(b);
  free(c);
}

/* Starts attaching the arena (made first if need be) to w. */
static void attach(gl_bulk *b, gl_wproc *w) {
  if (!b->a) {
    if (ARENA_BYTES > b->budget.max - *b->budget.in_use) {
      b->state = REFUSED; /* over the page-locking budget: the pipe it is */
      return;
    }
    if (!(b->a = arena_new(b->budget.in_use))) {
      b->state = REFUSED;
      return;
    }
  }
  gl_request q = {.op = GL_OP_SHM_ATTACH};
  q.u.shm_attach.auth = b->auth;
  q.u.shm_attach.size_bytes = ARENA_BYTES;
  gl_buf m;
  gl_buf_init(&m);
  attach_call *c = calloc(1, sizeof *c);
  if (!c || gl_request_encode(&q, &m) != GPULEASE_OK) {
    free(c);
    gl_buf_free(&m);
    return; /* tried again at the next transfer */
  }
  c->b = b;
  c->generation = b->generation;
  b->refs++;
  if (gl_wproc_call_fd(w, m.data, m.len, b->a->fd, attach_done, c) != 0) {
    b->refs--;
    free(c);
  } else {
    b->state = ATTACHING;
  }
  gl_buf_free(&m);
}

typedef struct xfer_call {
  gl_bulk *b;
  arena *a;
  int slot;
  gl_dreq *req;
  uint16_t op;   /* the client's: MEM_WRITE or MEM_READ */
  uint32_t size; /* MEM_READ: the bytes asked for */
} xfer_call;

static void slot_release(void *ctx) {
  xfer_call *c = ctx;
  slot_put(c->a, c->slot);
  free(c);
}

/* Answers with the worker's message under the client's op (bytes 4-5 of
 * the header; an error's body does not depend on the op). */
static void reply_as(gl_dreq *req, uint16_t op, const uint8_t *msg, size_t len) {
  uint8_t *copy = malloc(len);
  if (!copy) {
    gl_buf e;
    gl_buf_init(&e);
    gl_response_encode_error(op, GPULEASE_INTERNAL, &e, "daemon out of memory");
    gl_dreq_reply(req, e.data, e.len);
    gl_buf_free(&e);
    return;
  }
  memcpy(copy, msg, len);
  copy[4] = (uint8_t)(op >> 8);
  copy[5] = (uint8_t)op;
  gl_dreq_reply(req, copy, len);
  free(copy);
}

static void xfer_done(void *ctx, gpulease_status status, const uint8_t *msg, size_t len,
                      const char *why) {
  xfer_call *c = ctx;
  gl_bulk *b = c->b;
  c->b = NULL;
  gl_header h;
  bool ok = status == GPULEASE_OK && gl_header_decode(msg, len, &h) == GPULEASE_OK;
  if (!ok) {
    gl_buf e;
    gl_buf_init(&e);
    gl_response_encode_error(c->op, status == GPULEASE_BUSY ? GPULEASE_INTERNAL : status, &e,
                             "%s", why ? why : "the lease's worker ended");
    gl_dreq_reply(c->req, e.data, e.len);
    gl_buf_free(&e);
  } else if (c->op == GL_OP_MEM_READ && h.status == GPULEASE_OK) {
    /* The bytes are in the slot: the reply is built in front of them and
     * lent to the stream, which gives the slot back when done. */
    uint8_t *data = slot_data(c->a, c->slot);
    gl_buf head;
    gl_buf_init(&head);
    gl_response r = {.op = GL_OP_MEM_READ, .status = GPULEASE_OK, .msg = ""};
    r.u.mem_read.data = data;
    r.u.mem_read.data_len = c->size;
    if (gl_response_encode_head(&r, &head) == GPULEASE_OK && head.len <= HEAD_ROOM) {
      size_t prefix = head.len;
      memcpy(data - prefix, head.data, prefix);
      gl_buf_free(&head);
      gl_dreq_reply_lent(c->req, data - prefix, prefix + c->size, slot_release, c);
      bulk_unref(b);
      return;
    }
    gl_buf_free(&head);
    gl_buf e; /* never: the head is 18 bytes */
    gl_buf_init(&e);
    gl_response_encode_error(c->op, GPULEASE_INTERNAL, &e, "daemon out of memory");
    gl_dreq_reply(c->req, e.data, e.len);
    gl_buf_free(&e);
  } else {
    reply_as(c->req, c->op, msg, len);
  }
  slot_put(c->a, c->slot);
  free(c);
  bulk_unref(b);
}

bool gl_bulk_forward(gl_bulk *b, gl_wproc *w, gl_dreq *req, const gl_request *r) {
  if (!b || b->ended || !w || gl_dreq_is_local(req)) return false;
  uint64_t size = r->op == GL_OP_MEM_WRITE  ? r->u.mem_write.data_len
                  : r->op == GL_OP_MEM_READ ? r->u.mem_read.size_bytes
                                            : 0;
  if (size < GL_BULK_MIN_BYTES || size > GL_BULK_SLOT_DATA) return false;
  if (b->state == DETACHED) attach(b, w);
  if (b->state != ATTACHED) return false;
  int slot = slot_take(b->a);
  if (slot < 0) return false;
  gl_request q = {.op = r->op == GL_OP_MEM_WRITE ? GL_OP_MEM_WRITE_ARENA : GL_OP_MEM_READ_ARENA};
  gl_mem_shm_req *m = &q.u.mem_shm;
  uint8_t *data = slot_data(b->a, slot);
  if (r->op == GL_OP_MEM_WRITE) {
    m->s = r->u.mem_write.s;
    m->buffer = r->u.mem_write.buffer;
    m->offset = r->u.mem_write.offset;
    gl_par_memcpy(data, r->u.mem_write.data, size); /* the main loop's: several cores */
  } else {
    m->s = r->u.mem_read.s;
    m->buffer = r->u.mem_read.buffer;
    m->offset = r->u.mem_read.offset;
  }
  m->segment = b->segment;
  m->segment_offset = (uint64_t)(data - b->a->base);
  m->size_bytes = size;
  gl_buf enc;
  gl_buf_init(&enc);
  xfer_call *c = calloc(1, sizeof *c);
  if (!c || gl_request_encode(&q, &enc) != GPULEASE_OK) {
    free(c);
    gl_buf_free(&enc);
    slot_put(b->a, slot);
    return false;
  }
  *c = (xfer_call){.b = b, .a = b->a, .slot = slot, .req = req, .op = r->op,
                   .size = (uint32_t)size};
  b->refs++;
  if (gl_wproc_call(w, enc.data, enc.len, xfer_done, c) != 0) {
    b->refs--;
    free(c);
    gl_buf_free(&enc);
    slot_put(b->a, slot);
    return false;
  }
  gl_buf_free(&enc);
  return true;
}
