/*
 * session_mem.c - a session's device memory: MEM_ALLOC (with the device
 * address when asked), MEM_FREE, MEM_COPY and MEMSET (docs/protocol.md,
 * "Memory"); the transfers are transfer.c's and stripe.c's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/client_internal.h"

#define set_err gl_lib_set_err

gpulease_status gl_session_check_handle(uint64_t h, const char *what, gpulease_error *err) {
  if (h == 0)
    return set_err(err, GPULEASE_INVALID_HANDLE, "%s handle 0 is never valid", what);
  return GPULEASE_OK;
}

gpulease_status gpulease_mem_alloc(gpulease_session *s, uint64_t size_bytes, gpulease_buffer *out,
                                   gpulease_error *err) {
  uint64_t region_offset;
  return gpulease_mem_alloc_region(s, size_bytes, out, &region_offset, err);
}

/* Sends SYNC (ack_seq 0) at seq, which a request the daemon refused
 * before its turn left unused (docs/protocol.md, "Which refusals use the
 * seq"), so that the session's next ops do not wait for it until the seq
 * timeout. Its answer (OK, or "already used") does not matter. */
static void fill_seq(gpulease_session *s, uint64_t seq) {
  if (s->unordered || seq == 0) return;
  gl_request q = {.op = GL_OP_SYNC};
  q.u.sync.s.auth = s->auth;
  q.u.sync.s.session_id = s->id;
  q.u.sync.s.seq = seq;
  gl_response r;
  uint8_t *raw = NULL;
  gpulease_error e;
  (void)gl_lib_exchange(s->client, &q, &r, &raw, &e);
  free(raw);
}

/* MEM_ALLOC: the 72-byte body of 0.1 (flags 0) unless device_address is
 * wanted, then flags with GL_MEM_ALLOC_F_ADDRESS. The reply is decoded for
 * the request (gl_session_send_wait), so a result other than the one asked
 * for (24 bytes to a request without the flag, 16 to one with it) is
 * PROTOCOL_ERROR there. */
static gpulease_status mem_alloc(gpulease_session *s, uint64_t size_bytes, gpulease_buffer *out,
                                 uint64_t *region_offset, uint64_t *device_address,
                                 gpulease_error *err) {
  gl_request req = {.op = GL_OP_MEM_ALLOC};
  req.u.mem_alloc.size_bytes = size_bytes;
  gpulease_status st;
  if (device_address) {
    req.u.mem_alloc.has_flags = true;
    req.u.mem_alloc.flags = GL_MEM_ALLOC_F_ADDRESS;
    /* Alone, not in a BATCH with the ops before it: an older daemon's
     * decoder would refuse the whole BATCH for this one entry. */
    st = gl_session_begin(s, err);
    if (st == GPULEASE_OK) st = gl_session_flush_batch(s, err);
    if (st != GPULEASE_OK) return st;
  }
  gl_response resp;
  uint8_t *raw;
  uint64_t seq = 0;
  gpulease_error e;
  e.message[0] = '\0';
  st = gl_session_send_wait(s, &req, &resp, &raw, &seq, &e);
  if (st != GPULEASE_OK) {
    /* A daemon that predates the flags: 0.2's decoder before them says
     * UNSUPPORTED ("4 bytes after the last field this daemon knows
     * (size_bytes)"), 0.1's MALFORMED ("4 trailing bytes"); either way the
     * request used no seq. (An UNSUPPORTED failing fast behind an earlier
     * op's failure says "failed earlier" instead, and is returned as is.) */
    bool older = device_address &&
                 (st == GPULEASE_MALFORMED ||
                  (st == GPULEASE_UNSUPPORTED &&
                   strstr(e.message, "after the last field this daemon knows")));
    if (!older) {
      if (err) *err = e;
      return st;
    }
    fill_seq(s, seq);
    return set_err(err, GPULEASE_UNSUPPORTED,
                   "MEM_ALLOC: the daemon does not give device addresses (it predates "
                   "MEM_ALLOC's flags, added in gpulease 0.2); it answered: %.900s",
                   e.message);
  }
  *out = resp.u.mem_alloc.buffer;
  if (region_offset) *region_offset = resp.u.mem_alloc.region_offset;
  if (device_address) *device_address = resp.u.mem_alloc.device_address;
  free(raw);
  return gl_lib_ok(err);
}

gpulease_status gpulease_mem_alloc_region(gpulease_session *s, uint64_t size_bytes,
                                          gpulease_buffer *out, uint64_t *region_offset,
                                          gpulease_error *err) {
  if (!s || !out || !region_offset)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "session, out and region_offset are required");
  if (size_bytes == 0) return set_err(err, GPULEASE_INVALID_ARGUMENT, "size_bytes must be >= 1");
  return mem_alloc(s, size_bytes, out, region_offset, NULL, err);
}

gpulease_status gpulease_mem_alloc_address(gpulease_session *s, uint64_t size_bytes,
                                           gpulease_buffer *out, uint64_t *region_offset,
                                           uint64_t *device_address, gpulease_error *err) {
  if (!s || !out || !device_address)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "session, out and device_address are required");
  if (size_bytes == 0) return set_err(err, GPULEASE_INVALID_ARGUMENT, "size_bytes must be >= 1");
  return mem_alloc(s, size_bytes, out, region_offset, device_address, err);
}

gpulease_status gpulease_mem_free(gpulease_session *s, gpulease_buffer buffer,
                                  gpulease_error *err) {
  if (!s) return set_err(err, GPULEASE_INVALID_ARGUMENT, "session is NULL");
  gpulease_status st = gl_session_check_handle(buffer, "buffer", err);
  if (st != GPULEASE_OK) return st;
  gl_request req = {.op = GL_OP_MEM_FREE};
  req.u.handle.handle = buffer;
  return gl_session_send_pipelined(s, &req, err);
}

gpulease_status gpulease_mem_copy(gpulease_session *s, gpulease_buffer dst, uint64_t dst_offset,
                                  gpulease_buffer src, uint64_t src_offset, uint64_t size_bytes,
                                  gpulease_error *err) {
  if (!s) return set_err(err, GPULEASE_INVALID_ARGUMENT, "session is NULL");
  gpulease_status st = gl_session_check_handle(dst, "destination buffer", err);
  if (st == GPULEASE_OK) st = gl_session_check_handle(src, "source buffer", err);
  if (st != GPULEASE_OK) return st;
  if (size_bytes == 0) return set_err(err, GPULEASE_INVALID_ARGUMENT, "size_bytes must be >= 1");
  if (dst_offset > UINT64_MAX - size_bytes || src_offset > UINT64_MAX - size_bytes)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "offset + size_bytes overflows");
  gl_request req = {.op = GL_OP_MEM_COPY};
  req.u.mem_copy.dst_buffer = dst;
  req.u.mem_copy.dst_offset = dst_offset;
  req.u.mem_copy.src_buffer = src;
  req.u.mem_copy.src_offset = src_offset;
  req.u.mem_copy.size_bytes = size_bytes;
  return gl_session_send_pipelined(s, &req, err);
}

gpulease_status gpulease_mem_set(gpulease_session *s, gpulease_buffer buffer, uint64_t offset,
                                 uint32_t element_size, uint32_t value, uint64_t count,
                                 gpulease_error *err) {
  if (!s) return set_err(err, GPULEASE_INVALID_ARGUMENT, "session is NULL");
  gpulease_status st = gl_session_check_handle(buffer, "buffer", err);
  if (st != GPULEASE_OK) return st;
  if (element_size != 1 && element_size != 2 && element_size != 4)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "element_size %" PRIu32 " is not 1, 2 or 4",
                   element_size);
  if (element_size < 4 && value >> (8 * element_size))
    return set_err(err, GPULEASE_INVALID_ARGUMENT,
                   "value 0x%" PRIx32 " does not fit in %" PRIu32 " byte(s)", value, element_size);
  if (count == 0) return set_err(err, GPULEASE_INVALID_ARGUMENT, "count must be >= 1");
  if (count > (UINT64_MAX - offset) / element_size)
    return set_err(err, GPULEASE_INVALID_ARGUMENT, "offset + count * element_size overflows");
  gl_request req = {.op = GL_OP_MEMSET};
  req.u.memset.buffer = buffer;
  req.u.memset.offset = offset;
  req.u.memset.element_size = (uint8_t)element_size;
  req.u.memset.value = value;
  req.u.memset.count = count;
  return gl_session_send_pipelined(s, &req, err);
}

/* Deprecated alias (0.2), removed in 0.3. */
gpulease_status gpulease_memset(gpulease_session *s, gpulease_buffer buffer, uint64_t offset,
                                uint32_t element_size, uint32_t value, uint64_t count,
                                gpulease_error *err) {
  return gpulease_mem_set(s, buffer, offset, element_size, value, count, err);
}

