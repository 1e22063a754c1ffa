/*
 * transfer.c - gpulease_mem_write() and gpulease_mem_read(): a transfer is
 * split into MEM_WRITE / MEM_READ ops of GL_SESSION_CHUNK bytes, each with
 * its own sequence number, and up to GL_SESSION_CHUNKS_IN_FLIGHT of them
 * are outstanding at once (the next chunk is sent while the oldest reply is
 * awaited). Both calls wait for every chunk they sent; the session's other
 * pipelined replies stay queued in its FIFO.
 *
 * After the first failed chunk no further chunk is sent; the chunks already
 * sent are still awaited, and the first failure is returned.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/client_internal.h"

#define set_err gl_lib_set_err

typedef struct chunk {
  uint64_t token;
  uint64_t seq;
  uint64_t pos; /* bytes from the start of the transfer */
  uint32_t len;
} chunk;

typedef struct transfer {
  gpulease_session *s;
  uint16_t op;
  gpulease_buffer buffer;
  uint64_t offset;
  const uint8_t *src; /* MEM_WRITE */
  uint8_t *dst;       /* MEM_READ */
  uint64_t total;
  uint64_t sent;      /* bytes sent */
  uint64_t done;      /* bytes acknowledged */
  chunk ring[GL_SESSION_CHUNKS_IN_FLIGHT];
  size_t head, len;
  gpulease_status first;     /* first failed chunk, OK if none */
  gpulease_error first_err;
} transfer;

static gpulease_status send_chunk(transfer *t, gpulease_error *err) {
  uint64_t left = t->total - t->sent;
  chunk c = {.pos = t->sent, .len = left < GL_SESSION_CHUNK ? (uint32_t)left : GL_SESSION_CHUNK};
  gl_request req = {.op = t->op};
  if (t->op == GL_OP_MEM_WRITE) {
    req.u.mem_write.buffer = t->buffer;
    req.u.mem_write.offset = t->offset + c.pos;
    req.u.mem_write.data = t->src + c.pos;
    req.u.mem_write.data_len = c.len;
  } else {
    req.u.mem_read.buffer = t->buffer;
    req.u.mem_read.offset = t->offset + c.pos;
    req.u.mem_read.size_bytes = c.len;
  }
  gpulease_status st = gl_session_send(t->s, &req, &c.token, &c.seq, err);
  if (st != GPULEASE_OK) return st;
  t->ring[(t->head + t->len) % GL_SESSION_CHUNKS_IN_FLIGHT] = c;
  t->len++;
  t->sent += c.len;
  return GPULEASE_OK;
}

/* Abandons the chunks still outstanding (after a connection error). */
static void cancel_rest(transfer *t) {
  for (size_t i = 0; i < t->len; i++)
    gl_qclient_cancel(t->s->client->q, t->ring[(t->head + i) % GL_SESSION_CHUNKS_IN_FLIGHT].token);
  t->len = 0;
}

/* Waits for the oldest chunk's reply. Returns a transport error only; a
 * failed chunk is recorded in t->first. */
static gpulease_status wait_chunk(transfer *t, gpulease_error *err) {
  chunk c = t->ring[t->head];
  t->head = (t->head + 1) % GL_SESSION_CHUNKS_IN_FLIGHT;
  t->len--;
  gl_response resp;
  uint8_t *raw;
  gpulease_error e;
  gpulease_status st = gl_session_wait(t->s, c.token, t->op, &resp, &raw, &e);
  if (st != GPULEASE_OK && !raw) { /* the transport failed */
    cancel_rest(t);
    if (err) *err = e;
    return st;
  }
  if (st == GPULEASE_OK && t->op == GL_OP_MEM_READ) {
    if (resp.u.mem_read.data_len != c.len)
      st = set_err(&e, GPULEASE_PROTOCOL_ERROR,
                   "MEM_READ (seq %" PRIu64 ") returned %" PRIu32 " bytes, not %" PRIu32, c.seq,
                   resp.u.mem_read.data_len, c.len);
    else
      memcpy(t->dst + c.pos, resp.u.mem_read.data, c.len);
  }
  /* The connection reuses the (warm) buffer of a large answer. */
  if (raw && st == GPULEASE_OK && t->op == GL_OP_MEM_READ)
    gl_qclient_release(t->s->client->q, raw, (size_t)(resp.u.mem_read.data + c.len - raw));
  else
    free(raw);
  if (st != GPULEASE_OK) {
    if (t->first == GPULEASE_OK) {
      t->first = st;
      t->first_err = e;
    }
    gl_session_note_failure(t->s, t->op, c.seq, &e);
    return GPULEASE_OK;
  }
  t->done += c.len;
  if (t->s->progress) t->s->progress(t->done, t->total, t->s->progress_user);
  return GPULEASE_OK;
}

static gpulease_status run_transfer(transfer *t, gpulease_error *err) {
  gpulease_status st = gl_session_begin(t->s, err);
  if (st != GPULEASE_OK) return st;
  while (t->len || (t->sent < t->total && t->first == GPULEASE_OK)) {
    if (t->sent < t->total && t->first == GPULEASE_OK && t->len < GL_SESSION_CHUNKS_IN_FLIGHT) {
      st = send_chunk(t, err);
      if (st != GPULEASE_OK) {
        /* Not sent (no stream within the timeout, connection lost):
         * abandon the chunks in flight too. */
        cancel_rest(t);
        return st;
      }
      continue;
    }
    st = wait_chunk(t, err);
    if (st != GPULEASE_OK) return st;
  }
  if (t->first != GPULEASE_OK) {
    if (err) *err = t->first_err;
    return t->first;
  }
  return gl_lib_ok(err);
}

static gpulease_status check_args(gpulease_session *s, gpulease_buffer buffer, uint64_t offset,
                                  const void *p, uint64_t size, gpulease_error *err) {
  if (!s) return set_err(err, GPULEASE_INVALID_ARGUMENT, "session is NULL");
  if (buffer == 0) return set_err(err, GPULEASE_INVALID_HANDLE, "buffer handle 0 is never valid");
  if (size == 0) return set_err(err, GPULEASE_INVALID_ARGUMENT, "size_bytes must be >= 1");
  if (!p) return set_err(err, GPULEASE_INVALID_ARGUMENT, "host pointer is NULL");
  if (offset > UINT64_MAX - size)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "offset + size_bytes overflows");
  if (size > SIZE_MAX)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "size_bytes exceeds the address space");
  return GPULEASE_OK;
}

gpulease_status gpulease_mem_write(gpulease_session *s, gpulease_buffer buffer, uint64_t offset,
                                   const void *src, uint64_t size_bytes, gpulease_error *err) {
  gpulease_status st = check_args(s, buffer, offset, src, size_bytes, err);
  if (st != GPULEASE_OK) return st;
  if ((st = gl_session_begin(s, err)) != GPULEASE_OK) return st;
  if (gl_lib_local_transfer(s, GL_OP_MEM_WRITE, buffer, offset, src, NULL, size_bytes, &st, err))
    return st;
  if (gl_lib_striped_transfer(s, GL_OP_MEM_WRITE, buffer, offset, src, NULL, size_bytes, &st,
                              err))
    return st;
  transfer *t = calloc(1, sizeof *t);
  if (!t) return set_err(err, GPULEASE_NO_MEMORY, "out of memory");
  t->s = s;
  t->op = GL_OP_MEM_WRITE;
  t->buffer = buffer;
  t->offset = offset;
  t->src = src;
  t->total = size_bytes;
  st = run_transfer(t, err);
  free(t);
  return st;
}

gpulease_status gpulease_mem_read(gpulease_session *s, gpulease_buffer buffer, uint64_t offset,
                                  void *dst, uint64_t size_bytes, gpulease_error *err) {
  gpulease_status st = check_args(s, buffer, offset, dst, size_bytes, err);
  if (st != GPULEASE_OK) return st;
  if ((st = gl_session_begin(s, err)) != GPULEASE_OK) return st;
  if (gl_lib_local_transfer(s, GL_OP_MEM_READ, buffer, offset, NULL, dst, size_bytes, &st, err))
    return st;
  if (gl_lib_striped_transfer(s, GL_OP_MEM_READ, buffer, offset, NULL, dst, size_bytes, &st, err))
    return st;
  transfer *t = calloc(1, sizeof *t);
  if (!t) return set_err(err, GPULEASE_NO_MEMORY, "out of memory");
  t->s = s;
  t->op = GL_OP_MEM_READ;
  t->buffer = buffer;
  t->offset = offset;
  t->dst = dst;
  t->total = size_bytes;
  st = run_transfer(t, err);
  free(t);
  return st;
}
