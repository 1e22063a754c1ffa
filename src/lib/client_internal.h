/*
 * client_internal.h - libgpulease internals shared by its source files
 * (client.c, session.c, transfer.c, call.c, renewer.c) and by the gpulease
 * CLI, which links the static library and drives sessions op by op.
 *
 * Nothing here is exported from libgpulease.so (the version script exports
 * gpulease_* only); names are gl_lib_* / gl_session_*.
 */
#ifndef GL_LIB_CLIENT_INTERNAL_H
#define GL_LIB_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/ptx_header.h"
#include "gpulease/gpulease.h"
#include "net/local.h"
#include "net/quic.h"
#include "proto/wire.h"

#define GL_LIB_DEFAULT_TIMEOUT_MS 30000
/* Largest reply accepted: output bytes of a submit plus framing. */
#define GL_LIB_MAX_RESPONSE_BYTES (((size_t)1 << 30) + 65536)

/* One GPU's PTX caps from the inventory (ptx_check.c). */
typedef struct gl_lib_ptx_caps {
  uint32_t index;
  gl_ptx_caps caps;
} gl_lib_ptx_caps;

struct gpulease_client {
  gl_qclient *q;
  /* The options it was connected with (strings owned), for reconnects. */
  char *addr, *ca_file, *pin_sha256;
  char *cert_file, *key_file, *bearer_token; /* identity (version 4 options) */
  int insecure;
  uint32_t timeout_ms;
  /* Bumped by every successful reconnect: sessions holding tokens of the
   * previous connection drop them (the old gl_qclient is gone). */
  uint64_t generation;
  /* The daemon's local socket (local.c): 0 not tried yet, 1 connected,
   * -1 not available; local_off: never (no_local). */
  gl_lclient *local;
  int local_state;
  bool local_off;
  void *host_segs; /* gpulease_host_alloc's segments (local.c) */
  /* Striping (stripe.c): connections to the daemon's stripe ports; state
   * 0 not tried yet, 1 open, -1 none offered (or stripes_max < 2). */
  gl_qclient *stripe[GL_WIRE_MAX_STRIPES];
  unsigned nstripe, stripes_max;
  int stripe_state;
  uint64_t stripe_min;
  /* What each GPU of the node loads (ptx_check.c): state 0 not asked,
   * 1 known, -1 not to be had; for connection generation caps_gen. */
  pthread_mutex_t caps_mu;
  bool ptx_check_off; /* $GPULEASE_PTX_CHECK=0 when the client connected */
  int caps_state;
  uint64_t caps_gen;
  unsigned ncaps;
  gl_lib_ptx_caps caps[GPULEASE_MAX_GPUS];
  /* Kernel output (gpulease_client_set_kernel_output): the callback, and
   * whether the daemon refused to carry output (an older one). */
  gpulease_kernel_output_fn kout_fn;
  void *kout_user;
  bool kout_refused;
  bool kout_known; /* a KERNEL_OUTPUT was answered: the daemon has it */
};

/* Checks a PTX image (len bytes; another image, which has no PTX header,
 * passes) against GPU gpu_index of c's node before
 * it is sent (GET_INVENTORY, asked once per connection): OK when it can
 * load as far as its header tells, or when the inventory cannot be had or
 * $GPULEASE_PTX_CHECK is 0; else LOAD_FAILED with what the node takes and
 * what to send instead (common/ptx_header.h). */
gpulease_status gl_lib_ptx_precheck(gpulease_client *c, uint32_t gpu_index, const void *image,
                                    size_t len, gpulease_error *err);

/* Whether the environment turns the check off (GPULEASE_PTX_CHECK=0):
 * read once, when a client connects. */
bool gl_lib_ptx_check_off(void);

/* Sends AUTHENTICATE with c's bearer token on q (a fresh connection),
 * or nothing when c has none. OK, or the daemon's refusal. */
gpulease_status gl_lib_authenticate(const gpulease_client *c, gl_qclient *q, gpulease_error *err);

/* Opens a QUIC connection with c's options to port (0: c's own), and
 * authenticates it with c's bearer token, if any. */
gpulease_status gl_lib_connect_port(const gpulease_client *c, uint16_t port, gl_qclient **q,
                                    gpulease_error *err);

/* ---- striping (stripe.c) ------------------------------------------------ */

#define GL_STRIPES_DEFAULT 8
#define GL_STRIPE_MIN_DEFAULT (64ull << 20)
/* Chunks each stripe keeps in flight, and in all (the daemon's arena has
 * 16 slots: src/daemon/bulk.h). */
#define GL_STRIPE_CHUNKS_IN_FLIGHT 4
#define GL_STRIPE_CHUNKS_TOTAL 16

/* Runs a MEM_WRITE (src) or MEM_READ (dst) of size bytes striped over the
 * client's stripe connections when it is large enough and the daemon
 * offers them: true, with the outcome in *st and err; false when it is
 * not for striping (nothing was sent). */
bool gl_lib_striped_transfer(gpulease_session *s, uint16_t op, gpulease_buffer buffer,
                             uint64_t offset, const uint8_t *src, uint8_t *dst, uint64_t size,
                             gpulease_status *st, gpulease_error *err);

/* Closes the stripe connections (they are opened again when needed). */
void gl_lib_stripes_close(gpulease_client *c);

/* Ends whatever wait c's connections are in, from another thread (the
 * client pool stops a submit stuck on a node that stopped answering): the
 * call in progress returns DISCONNECTED soon, and the connection is dead.
 * The daemon's local socket is not covered (its waits keep their timeout). */
void gl_lib_client_abort(gpulease_client *c);

/* ---- errors ------------------------------------------------------------ */

gpulease_status gl_lib_set_err(gpulease_error *err, gpulease_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
gpulease_status gl_lib_ok(gpulease_error *err);
/* A gl_qclient_err to a status: TIMEOUT, TLS_FAILED, NO_MEMORY,
 * PROTOCOL_ERROR (reply too large), INVALID_ARGUMENT, else DISCONNECTED. */
gpulease_status gl_lib_map_qc(int rc);
/* A caller's struct_version, checked as every versioned struct of
 * gpulease.h is: 0 and anything above the library's own `max` are
 * unknown. gl_lib_version_err() says so in err (INVALID_ARGUMENT, "WHAT
 * of unknown version N"). */
static inline bool gl_lib_version_ok(uint32_t version, uint32_t max) {
  return version != 0 && version <= max;
}
gpulease_status gl_lib_version_err(gpulease_error *err, const char *what, uint32_t version);
/* Zeroes a caller's versioned result struct but its struct_version (the
 * first field, a uint32_t). */
#define GL_LIB_CLEAR_KEEP_VERSION(p)              \
  do {                                            \
    uint32_t gl_v_ = (p)->struct_version;         \
    memset((p), 0, sizeof *(p));                  \
    (p)->struct_version = gl_v_;                  \
  } while (0)

/* True for the statuses that mean "the connection failed", not the op. */
static inline bool gl_lib_conn_error(gpulease_status st) {
  return st == GPULEASE_DISCONNECTED || st == GPULEASE_TIMEOUT;
}

/* ---- one exchange ------------------------------------------------------- */

/* Encodes req into b (initialised by the caller), with a precise message
 * when the codec refuses a field. */
gpulease_status gl_lib_encode(const gl_request *req, gl_buf *b, gpulease_error *err);

/* Decodes the reply raw/len of a request of op `op` into *resp (borrowing
 * raw) and maps a non-OK status to the return value with the daemon's
 * message in err. The caller frees raw in every case. */
gpulease_status gl_lib_decode_reply(uint16_t op, const uint8_t *raw, size_t len,
                                    gl_response *resp, gpulease_error *err);
/* The same for the reply to req (borrowed): a result whose layout depends
 * on the request (GPU_SUBMIT's kernel output) decoded as req asked. */
gpulease_status gl_lib_decode_reply_for(const gl_request *req, const uint8_t *raw, size_t len,
                                        gl_response *resp, gpulease_error *err);

/* Sends a MEM_WRITE encoded straight into a warm buffer of q, which takes
 * it as it is (gl_qclient_buf, gl_qclient_send_take): one copy of the
 * data, not two. *token names the request. Encoding errors, NO_MEMORY and
 * the connection's errors. */
gpulease_status gl_lib_send_write(gl_qclient *q, const gl_request *req, uint64_t *token,
                                  gpulease_error *err);

/* Sends req and waits for its reply: *resp borrows *raw, which the caller
 * frees afterwards (NULL on failure). Every failure, a non-OK reply
 * included, becomes a status with a message. */
gpulease_status gl_lib_exchange(gpulease_client *c, const gl_request *req, gl_response *resp,
                                uint8_t **raw, gpulease_error *err);

/* ---- sessions ----------------------------------------------------------- */

/* Most pipelined requests a session keeps outstanding before it waits for
 * the oldest (the daemon's window is 1024 streams a connection; a transfer
 * adds its own chunks on top, and other sessions may share the client). */
#define GL_SESSION_WINDOW 192
/* MEM_WRITE / MEM_READ chunking. */
#define GL_SESSION_CHUNK (8u << 20)
#define GL_SESSION_CHUNKS_IN_FLIGHT 16
/* How long a SYNC's wait watches the connection before it sleeps (ns). */
#define GL_SESSION_SYNC_SPIN_NS 1000000ull

/* The session's send buffer is kept between ops up to this capacity. */
#define GL_SESSION_SENDBUF_KEEP (GL_SESSION_CHUNK + (1u << 20))
/* MEM_WRITEs from this size are encoded into a buffer the connection takes
 * over (gl_qclient_buf, gl_qclient_send_take): one copy of the data. */
#define GL_SESSION_TAKE_BYTES (256u << 10)
/* Pipelined ops batched into one BATCH request at most, by default and in
 * bytes (gpulease_session_set_batch). */
#define GL_SESSION_BATCH_OPS 64
/* Ops of a session in flight at most (in its FIFO, batches counted by
 * their ops): below the 4096 ops the daemon holds for a lower seq, since
 * requests on different streams may arrive in any order. */
#define GL_SESSION_INFLIGHT_OPS 2048
#define GL_SESSION_BATCH_BYTES (64u << 10)

typedef struct gl_pending {
  uint64_t token; /* gl_qclient_send's */
  uint64_t seq;   /* the op's, or a BATCH's first op's */
  uint16_t op;    /* GL_OP_BATCH for a batch */
  uint16_t count; /* ops in it */
} gl_pending;

struct gpulease_session {
  gpulease_client *client; /* borrowed */
  uint64_t generation;     /* client->generation the tokens belong to */
  gl_lease_auth auth;
  uint32_t gpu_index; /* the lease's GPU (the PTX check before MODULE_LOAD) */
  uint64_t id;
  uint64_t next_seq; /* starts at 1 */
  bool unordered;    /* every op goes with seq 0 (attached sessions) */
  gpulease_progress_fn progress;
  void *progress_user;
  /* FIFO (ring) of the pipelined requests whose replies are not read yet. */
  gl_pending *fifo;
  size_t fifo_cap, fifo_head, fifo_len;
  size_t fifo_ops; /* ops in the FIFO's requests */
  /* The first failed reply of a pipelined op seen by this client (the
   * daemon's SYNC is authoritative; this keeps the message). */
  gpulease_status fail_status;
  uint16_t fail_op;
  uint64_t fail_seq;
  char fail_msg[sizeof(((gpulease_error *)0)->message)];
  /* Pipelined ops not sent yet: a BATCH's list (session.c, "batching"). */
  gl_buf batch;
  gl_buf sendbuf; /* where ops sent alone are encoded (kept warm) */
  gl_buf burstbuf; /* a BURST's launches (session_exec.c), kept warm likewise */
  uint16_t batch_count, batch_max, batch_op0;
  uint64_t batch_seq; /* the first op's */
  struct gl_stage *stage; /* the staging segment of local transfers (local.c) */
};

/* Builds a session object for an existing session id without SESSION_OPEN.
 * With unordered every op is sent with seq 0 ("after the ops already
 * received"): for tools that open a new connection for each op and wait
 * for its reply (the CLI). Free it with gl_session_detach(). */
gpulease_status gl_session_attach(gpulease_client *client, const gpulease_lease *lease,
                                  uint64_t session_id, bool unordered, gpulease_session **out,
                                  gpulease_error *err);

/* Waits for every outstanding reply and frees the session object WITHOUT
 * closing the session on the daemon. Returns the first failure a
 * pipelined op's reply reported (status and message), a connection error,
 * or OK. NULL is ignored. */
gpulease_status gl_session_detach(gpulease_session *s, gpulease_error *err);

/* ---- the same-host fast path (local.c) ----------------------------------- */

/* Staging: GL_LOCAL_SLOTS slots of GL_LOCAL_SLOT bytes per session; used
 * for transfers of GL_LOCAL_MIN_BYTES and more. */
#define GL_LOCAL_SLOTS 4u
#define GL_LOCAL_SLOT (32u << 20)
#define GL_LOCAL_MIN_BYTES (1u << 20)

typedef struct gl_stage gl_stage;

/* The daemon's local socket, connected on first use; NULL when the daemon
 * offers none, runs on another machine, or refuses us. */
gl_lclient *gl_lib_local(gpulease_client *c);
void gl_lib_local_close(gpulease_client *c);
void gl_lib_host_free_all(gpulease_client *c);
void gl_lib_stage_free(gpulease_session *s);

/* Runs a MEM_WRITE (src) or MEM_READ (dst) of total bytes through shared
 * memory when it can: returns 1 with *st (and err) its outcome, or 0 when
 * the transfer should go over QUIC (nothing was sent then). */
int gl_lib_local_transfer(gpulease_session *s, uint16_t op, gpulease_buffer buffer,
                          uint64_t offset, const uint8_t *src, uint8_t *dst, uint64_t total,
                          gpulease_status *st, gpulease_error *err);

/* Sends the session's batched ops (session.c). */
gpulease_status gl_session_flush_batch(gpulease_session *s, gpulease_error *err);

/* Sends what is batched, then reads every outstanding reply of the
 * session's pipelined ops (failures are noted, not returned); a
 * connection error is returned. */
gpulease_status gl_session_drain(gpulease_session *s, gpulease_error *err);

/* Internal plumbing of session.c used by transfer.c. */

/* Fills the session_ref of req (auth, id, next seq) and sends it:
 * *token and *seq receive the request's token and seq. The seq is consumed
 * only when the send succeeded. */
gpulease_status gl_session_send(gpulease_session *s, gl_request *req, uint64_t *token,
                                uint64_t *seq, gpulease_error *err);

/* Waits for token's reply (an op of code op) and decodes it like
 * gl_lib_decode_reply: *raw (caller frees) backs *resp. *raw is NULL
 * exactly when the transport failed (connection error, timeout, unknown
 * token), i.e. when the status is not the op's own. */
gpulease_status gl_session_wait(gpulease_session *s, uint64_t token, uint16_t op,
                                gl_response *resp, uint8_t **raw, gpulease_error *err);

/* As gl_session_wait, the reply decoded for its request req (borrowed):
 * gl_lib_decode_reply_for, so that a result that is not the layout req
 * asked for (MEM_ALLOC's device_address) is PROTOCOL_ERROR. */
gpulease_status gl_session_wait_for(gpulease_session *s, uint64_t token, const gl_request *req,
                                    gl_response *resp, uint8_t **raw, gpulease_error *err);

/* Sends a pipelined op (batched where the session batches; see session.c
 * "batching"), returning once sent. */
gpulease_status gl_session_send_pipelined(gpulease_session *s, gl_request *req,
                                          gpulease_error *err);

/* Sends an op and waits for its own reply. *raw backs *resp; the caller
 * frees it. *seq_out (may be NULL) receives the op's seq. */
gpulease_status gl_session_send_wait(gpulease_session *s, gl_request *req, gl_response *resp,
                                     uint8_t **raw, uint64_t *seq_out, gpulease_error *err);

/* Checks a launch's arguments and builds its LAUNCH request in *req, the
 * encoded param list in *params (which req points into; the caller frees
 * params on success, on failure there is nothing to free). */
gpulease_status gl_session_launch_req(gpulease_session *s, gpulease_function fn,
                                      const uint32_t grid[3], const uint32_t block[3],
                                      uint32_t shared_mem_bytes, const gpulease_arg *args,
                                      size_t arg_count, gl_request *req, gl_buf *params,
                                      gpulease_error *err);

/* INVALID_HANDLE for handle 0 (`what` names it). */
gpulease_status gl_session_check_handle(uint64_t h, const char *what, gpulease_error *err);

/* Prepares a session for an op: drops tokens of a replaced connection.
 * Returns INVALID_ARGUMENT for a NULL session. */
gpulease_status gl_session_begin(gpulease_session *s, gpulease_error *err);

/* Records a pipelined op's failure as the first seen, if none is. */
void gl_session_note_failure(gpulease_session *s, uint16_t op, uint64_t seq,
                             const gpulease_error *e);

#endif /* GL_LIB_CLIENT_INTERNAL_H */
