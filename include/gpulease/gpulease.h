/*
 * gpulease.h - the public API of libgpulease, the gpulease client library.
 *
 * libgpulease leases a slice of a remote NVIDIA GPU from a gpuleased daemon
 * (VRAM in bytes, for a time-to-live in seconds) and runs compiled CUDA
 * kernels (PTX, cubin or fatbin) on it over QUIC with TLS 1.3. The client
 * needs no CUDA toolkit and no CUDA driver; this header needs no header but
 * the C standard library's.
 *
 * Conventions, stated once:
 *   - Every function that can fail returns a gpulease_status. GPULEASE_OK
 *     (0) is success. Codes below 100 are the daemon's wire status codes
 *     (docs/protocol.md, "Status codes"); codes from 100 up arise in the
 *     client only and never travel on the wire.
 *   - The last parameter of such a function is an optional `gpulease_error
 *     *err` owned by the caller. When non-NULL it receives the status and a
 *     human-readable message (the daemon's message for wire errors). It is
 *     written on failure and set to GPULEASE_OK with an empty message on
 *     success.
 *   - Sizes and offsets are in bytes, times in the unit their name says
 *     (`_s` seconds, `_ms` milliseconds, `_ns` nanoseconds).
 *   - Pointers passed in are borrowed for the duration of the call only;
 *     nothing is retained after a function returns unless its comment says
 *     so.
 *   - Versioned structs: every options, description and result struct that
 *     the caller hands in starts with `uint32_t struct_version`, set to its
 *     GPULEASE_<STRUCT>_VERSION by the struct's *_default() (options and
 *     descriptions: the defaults too) or *_init() (results: zeroes) before
 *     the call. New fields are only ever appended, each saying the version
 *     that added it; the library reads and writes only the fields of the
 *     version the caller gives, so a program built against an older header
 *     keeps working with a newer library. A struct_version of 0 or above
 *     the library's own is INVALID_ARGUMENT ("... of unknown version N"),
 *     before anything is sent. Plain values copied freely (gpulease_lease,
 *     gpulease_error), the entries of parameter and argument arrays (made
 *     by their helpers), and the arrays the library allocates
 *     (gpulease_pool_node, gpulease_map_node_stats) carry none.
 *
 * Thread safety: a gpulease_client is one QUIC connection and is NOT safe to
 * use from several threads at once; give each thread its own client (the
 * daemon accepts many concurrent connections), or serialise calls with a
 * lock of your own. Distinct clients share no state and may be used
 * concurrently. gpulease_status_name(), gpulease_version() and the secret
 * helpers are thread-safe.
 */
#ifndef GPULEASE_GPULEASE_H
#define GPULEASE_GPULEASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(GPULEASE_STATIC_BUILD)
#define GPULEASE_API __attribute__((visibility("default")))
#else
#define GPULEASE_API
#endif

/* Marks a name kept for one release after its rename: a use warns
 * (-Wdeprecated-declarations) with what to use instead. Define
 * GPULEASE_NO_DEPRECATION_WARNINGS to silence it. */
#if defined(__GNUC__) && !defined(GPULEASE_NO_DEPRECATION_WARNINGS)
#define GPULEASE_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define GPULEASE_DEPRECATED(msg)
#endif

/* ------------------------------------------------------------------------
 * Version
 * ---------------------------------------------------------------------- */

/* The version of this header: the project's version (CMakeLists.txt's
 * project(), which the build checks these against). 0.x releases may
 * rename functions, keeping the old name as a deprecated alias for one
 * release. GPULEASE_VERSION_NUMBER is 0xMMmmpp, to compare with #if. */
#define GPULEASE_VERSION_MAJOR 0
#define GPULEASE_VERSION_MINOR 2
#define GPULEASE_VERSION_PATCH 0
#define GPULEASE_VERSION_STRING "0.2.0"
#define GPULEASE_VERSION_NUMBER \
  ((GPULEASE_VERSION_MAJOR << 16) | (GPULEASE_VERSION_MINOR << 8) | GPULEASE_VERSION_PATCH)

/* The version of the library loaded at run time, which may be newer than
 * the header a program was compiled with (compare with
 * GPULEASE_VERSION_*). Writes its parts to *major, *minor and *patch (each
 * may be NULL) and returns it as "MAJOR.MINOR.PATCH" (static storage,
 * never NULL). Thread-safe; needs no client and sends nothing. */
GPULEASE_API const char *gpulease_version(uint32_t *major, uint32_t *minor, uint32_t *patch);

/* ------------------------------------------------------------------------
 * Status codes
 * ---------------------------------------------------------------------- */

/* Wire status codes (0..99) and client-side codes (100..). Numbers are
 * never reused; a retired code keeps its number. */
typedef enum gpulease_status {
  GPULEASE_OK = 0,
  /* A field of the request is out of range or inconsistent. */
  GPULEASE_INVALID_ARGUMENT = 1,
  /* No identity where the daemon needs one, or the lease's secret (its
   * capability token) is wrong, expired, rotated out, revoked, another
   * tenant's, or lacks the right the op needs; the message says which. */
  GPULEASE_UNAUTHORIZED = 2,
  /* The module image could not be loaded (the message carries the JIT log). */
  GPULEASE_LOAD_FAILED = 3,
  /* The kernel could not be found, launched, or it faulted (the message
   * names the CUDA error, e.g. CUDA_ERROR_ILLEGAL_ADDRESS). */
  GPULEASE_LAUNCH_FAILED = 4,
  /* No lease with that id exists (never existed, or freed long ago). */
  GPULEASE_NOT_FOUND = 5,
  /* Reading the output back from device memory failed. */
  GPULEASE_READ_FAILED = 6,
  /* The lease's TTL ran out; everything it held has been freed. */
  GPULEASE_LEASE_EXPIRED = 7,
  /* The GPU lacks the free VRAM, or a daemon budget (leases) is full. */
  GPULEASE_CAPACITY_EXCEEDED = 8,
  /* Unknown op, unsupported protocol version or image format. */
  GPULEASE_UNSUPPORTED = 9,
  /* The node has no usable GPU, or no GPU with the requested index. */
  GPULEASE_NO_DEVICE = 10,
  /* The request frame is truncated or malformed. */
  GPULEASE_MALFORMED = 11,
  /* The request is larger than the daemon accepts. */
  GPULEASE_TOO_LARGE = 12,
  /* The daemon is overloaded (connection or request budget); retry later. */
  GPULEASE_BUSY = 13,
  /* Copying input bytes into device memory failed. */
  GPULEASE_WRITE_FAILED = 14,
  /* An unexpected failure inside the daemon or its worker. */
  GPULEASE_INTERNAL = 15,
  /* A buffer, module or function handle that does not name a live object
   * of this session (never issued, freed, or another session's). An
   * unknown session is NOT_FOUND. */
  GPULEASE_INVALID_HANDLE = 16,
  /* A session op with a lower sequence number never arrived: the ops after
   * it waited the daemon's seq timeout (10 s by default), then the missing
   * seq was given up and became the session's failure (the message names
   * it). Acknowledge it like any failure. */
  GPULEASE_MISSING_SEQ = 17,
  /* The tenant's quota (VRAM, live leases or sessions, longest TTL,
   * GPU-seconds per hour) would be exceeded; the message gives the limit,
   * the use and what was asked. */
  GPULEASE_QUOTA_EXCEEDED = 18,

  /* Client-side only. */
  /* Could not connect, or the connection was lost or closed. */
  GPULEASE_DISCONNECTED = 100,
  /* TLS handshake failed or the server's certificate did not verify. */
  GPULEASE_TLS_FAILED = 101,
  /* The daemon's reply could not be decoded. */
  GPULEASE_PROTOCOL_ERROR = 102,
  /* The client ran out of memory. */
  GPULEASE_NO_MEMORY = 103,
  /* No reply within the client's timeout. */
  GPULEASE_TIMEOUT = 104,
} gpulease_status;

/* Returns the status's upper-case name ("LEASE_EXPIRED"), or "UNKNOWN" for a
 * number this library does not know. The string is static. */
GPULEASE_API const char *gpulease_status_name(int status);

/* Caller-owned error details; see the conventions above. */
typedef struct gpulease_error {
  gpulease_status status;
  char message[1024];
} gpulease_error;

/* ------------------------------------------------------------------------
 * Client connection
 * ---------------------------------------------------------------------- */

typedef struct gpulease_client gpulease_client;

#define GPULEASE_CONNECT_OPTIONS_VERSION 4

/* How to reach and verify a daemon. Fill with
 * gpulease_connect_options_default() and then set fields; new fields are only
 * ever appended. Exactly one of ca_file, pin_sha256 or insecure should be
 * set; if none is, the system trust store is used. */
typedef struct gpulease_connect_options {
  uint32_t struct_version; /* GPULEASE_CONNECT_OPTIONS_VERSION */
  /* "HOST:PORT", "[IPv6]:PORT" or "HOST" (port 5701). Default
   * "127.0.0.1:5701". */
  const char *addr;
  /* PEM file of CA certificates that the daemon's certificate must chain to;
   * the host part of addr must match the certificate. */
  const char *ca_file;
  /* SHA-256 fingerprint of the daemon's DER certificate, 64 hex digits
   * (colons allowed), as gpuleased prints at start-up. */
  const char *pin_sha256;
  /* Non-zero: skip certificate verification (encryption only). The CLI says
   * so on stderr; the library does not print. */
  int insecure;
  /* Reply timeout in milliseconds for each request, and the connect/
   * handshake timeout. Default 30000. 0 means the default. */
  uint32_t timeout_ms;
  /* Version 2. Non-zero: never use the daemon's local socket. By default a
   * client on the daemon's own machine (same boot, NODE_INFO) moves
   * transfers of 1 MiB and more through shared memory over that socket,
   * when the socket's file mode admits it, and over QUIC otherwise. */
  int no_local;
  /* Version 3. Striping: a MEM_WRITE or MEM_READ over QUIC of at least
   * stripe_min_bytes (0: the default, 64 MiB) goes over up to `stripes`
   * connections at once (0: the default, 8; 1: never), one to each of
   * the daemon's stripe ports (NET_INFO; gpuleased --net-threads), each
   * driven by a thread of its own, so that several cores on both sides
   * carry it. The connections are opened at the first such transfer and
   * kept. The session's earlier ops are answered first; the transfer's
   * chunks then go unordered (seq 0), and the call returns when all are
   * answered, so its place in the session's order is kept. A daemon
   * without stripe ports gets the transfer over the one connection. */
  unsigned stripes;
  uint64_t stripe_min_bytes;
  /* Version 4. Who the client is, for a daemon that runs with tenants
   * (gpuleased --auth, docs/security.md):
   * - cert_file and key_file (PEM, both or neither): a client certificate
   *   for mutual TLS (--auth mtls); the tenant is its URI SAN or subject
   *   CN. A client with a certificate and no bearer token does not use
   *   the daemon's local socket, which carries no certificates.
   * - bearer_token: a token from the daemon's tenants file (--auth
   *   token), sent in AUTHENTICATE on every connection the client opens
   *   (docs/protocol.md). UNAUTHORIZED from connect when the daemon does
   *   not know it. */
  const char *cert_file;
  const char *key_file;
  const char *bearer_token;
} gpulease_connect_options;

GPULEASE_API void gpulease_connect_options_default(gpulease_connect_options *opts);

/* Opens a QUIC connection (ALPN "gpulease/1") to the daemon and completes the
 * TLS 1.3 handshake with the verification that opts asks for, presenting
 * the client certificate or bearer token of opts, if any.
 *   opts: borrowed; *out receives a client to close with
 *   gpulease_client_close().
 * Errors: INVALID_ARGUMENT (bad address or options, an unreadable
 * certificate or key), DISCONNECTED (cannot resolve or reach, handshake
 * timeout), TLS_FAILED (verification failed, or a daemon that requires a
 * client certificate refused ours), UNAUTHORIZED (the daemon does not know
 * the bearer token), UNSUPPORTED (a bearer token for a daemon that takes
 * none), NO_MEMORY. */
GPULEASE_API gpulease_status gpulease_client_connect(const gpulease_connect_options *opts,
                                                     gpulease_client **out,
                                                     gpulease_error *err);

/* Closes the connection and frees the client. Leases are not freed: they
 * live on the daemon until freed or expired. NULL is ignored. */
GPULEASE_API void gpulease_client_close(gpulease_client *client);

/* ------------------------------------------------------------------------
 * Kernel output (device-side printf and assert; docs/protocol.md "Kernel
 * output")
 * ---------------------------------------------------------------------- */

/* Flags of a gpulease_kernel_output_fn call. */
#define GPULEASE_KOUT_TRUNCATED 0x1u /* `dropped` bytes were lost: the lease
                                        keeps at most 64 KiB pending */
#define GPULEASE_KOUT_DISCARDED 0x2u /* the lease is of class shared: its
                                        worker serves other leases too, so
                                        its kernels' output is not captured
                                        (it is thrown away, never shown to
                                        another lease) */

/* Receives what a lease's kernels printed (CUDA printf) since the last
 * delivery, in the order they printed it.
 *   user: as given to gpulease_client_set_kernel_output.
 *   lease_id: the lease whose kernels printed.
 *   text: len bytes, not NUL-terminated, as the kernels wrote them (not
 *     necessarily UTF-8, not necessarily ending in a newline); borrowed for
 *     the call only. len is 0 when only flags have news.
 *   dropped: bytes lost over the lease's bound (64 KiB pending) since the
 *     last delivery; flags has GPULEASE_KOUT_TRUNCATED exactly when it is
 *     not 0.
 *   flags: GPULEASE_KOUT_*.
 * Called on the thread that called gpulease_submit, gpulease_session_sync
 * or gpulease_session_kernel_output, before that returns, and only when
 * there is something to say (text, dropped bytes, or DISCARDED). The text of a failed device-side assert is not delivered
 * here: it is in the error message of the submit's LAUNCH_FAILED. */
typedef void (*gpulease_kernel_output_fn)(void *user, uint64_t lease_id, const char *text,
                                          size_t len, uint64_t dropped, uint32_t flags);

/* Asks for the kernels' printf output of every later gpulease_submit
 * (GPU_SUBMIT with flags bit 3, docs/protocol.md) and gpulease_session_sync
 * (a KERNEL_OUTPUT after the SYNC) on this client, handed to
 * fn(user, ...); fn NULL stops asking (the daemon then keeps a lease's
 * output pending, at most 64 KiB, until a submit asks for it). Without a
 * callback nothing is asked and nothing changes on the wire. A daemon that
 * predates kernel output refuses the flag (INVALID_ARGUMENT, "flags 0x..
 * has unknown bits 0x08") before running anything: the library then sends
 * the submit again without it and stops asking on this client.
 * client: borrowed; fn and user are kept until replaced. Not thread-safe
 * against submits running on the same client. */
GPULEASE_API void gpulease_client_set_kernel_output(gpulease_client *client,
                                                    gpulease_kernel_output_fn fn, void *user);

/* ------------------------------------------------------------------------
 * Inventory and warm workers (GET_INVENTORY, POOL_INFO, docs/protocol.md)
 * ---------------------------------------------------------------------- */

#define GPULEASE_MAX_GPUS 64
#define GPULEASE_ANY_GPU UINT32_MAX

/* gpulease_gpu_info.flags */
#define GPULEASE_GPU_EMULATED 0x1u /* an emulated device (PTX on the CPU) */
#define GPULEASE_GPU_MIG 0x2u      /* in MIG mode: only partition leases, a MIG instance each */
#define GPULEASE_GPU_FENCED 0x4u   /* a worker's teardown failed: no new leases until its memory
                                      comes back or an admin clears it (gpulease_admin_unfence) */
#define GPULEASE_GPU_ARCH_SPECIFIC 0x8u /* takes its arch-specific target as well (sm_90a on
                                           compute capability 9.0: wgmma, setmaxnreg) */

typedef struct gpulease_gpu_info {
  uint32_t index;           /* the daemon's GPU index (NVML order) */
  char uuid[96];            /* "GPU-xxxxxxxx-..." NUL-terminated */
  char name[96];            /* "NVIDIA H100 80GB HBM3" NUL-terminated */
  uint32_t cc_major;        /* compute capability, e.g. 9 */
  uint32_t cc_minor;        /* e.g. 0 */
  uint32_t sm_count;        /* streaming multiprocessors; 0 if unknown */
  uint64_t total_vram_bytes;
  uint64_t free_vram_bytes;   /* as NVML reports now */
  uint64_t leased_vram_bytes; /* held by live leases: their VRAM, and what their contexts
                                 hold for them beyond it (heap and printf FIFO past the
                                 defaults, modules, kernels' local memory) */
  uint32_t active_leases;
  uint32_t flags;           /* GPULEASE_GPU_* */
  /* VRAM a CUDA context of its own takes beyond the lease's size (an
   * isolated or device lease's; the shared leases of the GPU share one),
   * as the daemon measured it; it counts in LEASE_ALLOC's capacity check.
   * 0 for an emulated device. */
  uint64_t context_overhead_bytes;
  /* The newest PTX ISA version (major, minor) the node loads for this
   * GPU: through the CUDA driver's JIT (9.0 for driver 13.0; the emulated
   * device: 9.9, every 9.x), and through nvJitLink, which compiles PTX
   * newer than the driver takes (0, 0: not installed on the node). A PTX
   * whose .version is above both gets LOAD_FAILED. */
  uint8_t ptx_isa_driver_major, ptx_isa_driver_minor;
  uint8_t ptx_isa_nvjitlink_major, ptx_isa_nvjitlink_minor;
} gpulease_gpu_info;

/* gpulease_tenant_info.flags */
#define GPULEASE_TENANT_ADMIN 0x1u  /* may revoke any lease (and clear fenced GPUs) */
#define GPULEASE_TENANT_LISTED 0x2u /* named in the daemon's tenants file (else its defaults) */

/* The caller's tenant, as the daemon sees it (GET_INVENTORY): its quota
 * and its use now. A limit of all ones (UINT32_MAX, UINT64_MAX) is no
 * limit. */
typedef struct gpulease_tenant_info {
  char name[256];           /* "" for an anonymous caller (gpuleased --auth none) */
  uint32_t flags;           /* GPULEASE_TENANT_* */
  uint64_t quota_vram_bytes;            /* VRAM of all its live leases together */
  uint32_t quota_leases;                /* live leases */
  uint32_t quota_sessions;              /* live sessions */
  uint32_t quota_max_ttl_s;             /* longest TTL of one lease, seconds */
  uint64_t quota_gpu_seconds_per_hour;  /* lease-seconds in any hour */
  uint64_t used_vram_bytes;
  uint32_t used_leases;
  uint32_t used_sessions;
  uint64_t used_gpu_seconds;            /* in the last hour */
} gpulease_tenant_info;

#define GPULEASE_INVENTORY_VERSION 1

/* What GET_INVENTORY answers. Caller-owned; set struct_version with
 * gpulease_inventory_init() before gpulease_inventory_get(). */
typedef struct gpulease_inventory {
  uint32_t struct_version; /* GPULEASE_INVENTORY_VERSION */
  char driver_version[64]; /* NVIDIA driver version, or "" with no driver */
  uint32_t max_ttl_s;      /* longest TTL the daemon grants */
  uint32_t gpu_count;
  gpulease_gpu_info gpus[GPULEASE_MAX_GPUS];
  gpulease_tenant_info tenant; /* the caller's */
} gpulease_inventory;

/* Zeroes *inv (caller-owned) and sets its struct_version, ready for
 * gpulease_inventory_get(). NULL is ignored. */
GPULEASE_API void gpulease_inventory_init(gpulease_inventory *inv);

/* Lists the node's GPUs, its driver and TTL limit, and the caller's tenant
 * with its quota and use (GET_INVENTORY, docs/protocol.md
 * "GET_INVENTORY"). out: caller-owned, struct_version set
 * (gpulease_inventory_init()); every field of that version is written on
 * success (gpu_count entries of gpus, the rest zero), struct_version kept.
 * Errors: INVALID_ARGUMENT (out NULL or of unknown version, nothing
 * sent), DISCONNECTED, TIMEOUT, PROTOCOL_ERROR, and any wire status. */
GPULEASE_API gpulease_status gpulease_inventory_get(gpulease_client *client,
                                                    gpulease_inventory *out,
                                                    gpulease_error *err);

#define GPULEASE_ADMISSION_INFO_VERSION 1
#define GPULEASE_ADMISSION_LEARNED 0x1u /* the limit was learned from the driver's refusal */

/* The daemon's admission of isolated CUDA contexts (gpuleased
 * --max-isolated-contexts; docs/protocol.md "Isolated contexts"): for each
 * GPU, the contexts of their own it may hold and holds now, and the
 * LEASE_ALLOCs waiting for one. Counts are of contexts (worker
 * processes). */
typedef struct gpulease_gpu_admission {
  uint32_t max_isolated_contexts; /* the limit */
  uint32_t isolated_contexts;     /* held now: the four below together */
  uint32_t leased;                /* by leases' workers (isolated, device, shared) */
  uint32_t warm;                  /* by warm workers, ready or starting */
  uint32_t spare;                 /* by released workers of ended leases */
  uint32_t tearing_down;          /* by workers being torn down */
  uint32_t queued;                /* LEASE_ALLOCs waiting (those for any GPU included) */
  uint32_t flags;                 /* GPULEASE_ADMISSION_* */
} gpulease_gpu_admission;

typedef struct gpulease_admission_info {
  uint32_t struct_version;     /* GPULEASE_ADMISSION_INFO_VERSION */
  uint32_t isolated_queue_max; /* requests that may wait, all GPUs */
  uint32_t isolated_queue_ms;  /* how long each waits, milliseconds (0: none waits) */
  uint32_t gpu_count;
  gpulease_gpu_admission gpus[GPULEASE_MAX_GPUS]; /* by the daemon's GPU index */
} gpulease_admission_info;

/* Zeroes *info (caller-owned) and sets its struct_version, ready for
 * gpulease_admission_get(). NULL is ignored. */
GPULEASE_API void gpulease_admission_info_init(gpulease_admission_info *info);

/* Reads each GPU's admission of isolated contexts (GET_INVENTORY with
 * flags bit 0, docs/protocol.md "GET_INVENTORY"). out: caller-owned,
 * struct_version set (gpulease_admission_info_init()); written on success
 * (gpu_count entries, struct_version kept). Errors: INVALID_ARGUMENT (out
 * NULL or of unknown version, nothing sent), UNSUPPORTED from a daemon
 * older than 0.2 (no admission), DISCONNECTED, TIMEOUT, PROTOCOL_ERROR. */
GPULEASE_API gpulease_status gpulease_admission_get(gpulease_client *client,
                                                    gpulease_admission_info *out,
                                                    gpulease_error *err);

#define GPULEASE_WARM_POOL_INFO_VERSION 1

/* The daemon's warm workers (gpuleased --warm-workers): for each GPU, the
 * warm pool's size and the workers ready now and starting. A lease taken
 * while one is ready skips CUDA's start (a few hundred milliseconds). Not
 * the client pool (gpulease_pool, below), which spreads work over many
 * daemons. */
typedef struct gpulease_warm_pool_info {
  uint32_t struct_version; /* GPULEASE_WARM_POOL_INFO_VERSION */
  uint32_t gpu_count;
  struct {
    uint32_t index;    /* the daemon's GPU index, as in the inventory */
    uint32_t target;   /* the warm pool's size, workers; 0: no warm workers */
    uint32_t ready;    /* started, the device open, waiting for a lease */
    uint32_t starting; /* being started */
  } gpus[GPULEASE_MAX_GPUS];
} gpulease_warm_pool_info;

/* Deprecated (0.2): the name before the rename; removed in 0.3. */
typedef gpulease_warm_pool_info gpulease_pool_info
    GPULEASE_DEPRECATED("use gpulease_warm_pool_info");

/* Zeroes *info (caller-owned) and sets its struct_version, ready for
 * gpulease_warm_pool_get(). NULL is ignored. */
GPULEASE_API void gpulease_warm_pool_info_init(gpulease_warm_pool_info *info);

/* Reads the warm-worker pool of every GPU of the daemon (POOL_INFO,
 * docs/protocol.md "POOL_INFO"): its size and the workers ready and
 * starting, in workers. out: caller-owned, struct_version set
 * (gpulease_warm_pool_info_init()); written on success (gpu_count
 * entries, struct_version kept). Errors: INVALID_ARGUMENT (out NULL or of
 * unknown version, nothing sent), UNSUPPORTED from a daemon without warm
 * workers at all (older), DISCONNECTED, TIMEOUT, PROTOCOL_ERROR. */
GPULEASE_API gpulease_status gpulease_warm_pool_get(gpulease_client *client,
                                                    gpulease_warm_pool_info *out,
                                                    gpulease_error *err);

/* Deprecated (0.2; removed in 0.3): gpulease_warm_pool_get() under its old
 * name. The caller compiled against this header, so out is taken to be of
 * the current GPULEASE_WARM_POOL_INFO_VERSION: its struct_version is set,
 * not checked. Errors as gpulease_warm_pool_get(). */
GPULEASE_API gpulease_status gpulease_pool_get(gpulease_client *client,
                                               gpulease_warm_pool_info *out,
                                               gpulease_error *err)
    GPULEASE_DEPRECATED("use gpulease_warm_pool_get");

/* ------------------------------------------------------------------------
 * Leases (LEASE_ALLOC, LEASE_RENEW, LEASE_QUERY, LEASE_FREE)
 * ---------------------------------------------------------------------- */

/* A lease's secret is a capability token of 40 bytes that the daemon
 * mints (docs/protocol.md, "lease_auth"): the rights it gives, the lease's
 * generation it belongs to, when it expires and which tenant may use it,
 * sealed by the daemon's MAC. LEASE_ALLOC returns one with every right;
 * gpulease_lease_delegate() derives weaker ones. Keep it as secret as a
 * password: whoever holds it has its rights (within its tenant). */
#define GPULEASE_SECRET_BYTES 40

/* Rights a lease's secret carries, one bit each. */
enum {
  GPULEASE_RIGHT_QUERY = 0x01,   /* LEASE_QUERY: read the lease's state */
  GPULEASE_RIGHT_RENEW = 0x02,   /* LEASE_RENEW: extend the TTL */
  GPULEASE_RIGHT_FREE = 0x04,    /* LEASE_FREE: end the lease */
  GPULEASE_RIGHT_SUBMIT = 0x08,  /* GPU_SUBMIT: one-shot kernels */
  GPULEASE_RIGHT_SESSION = 0x10, /* sessions: open, allocate, load modules, launch, sync */
  GPULEASE_RIGHT_READ = 0x20,    /* MEM_READ, MEM_READ_SHM: device memory back to the client */
  GPULEASE_RIGHT_WRITE = 0x40,   /* MEM_WRITE, MEM_WRITE_SHM: client bytes into device memory */
  GPULEASE_RIGHT_DELEGATE = 0x80, /* derive weaker secrets; with RENEW, rotate */
  GPULEASE_RIGHTS_ALL = 0xFF,
};

/* Writes rights as comma-separated lower-case names ("submit,read"; "all"
 * for every right, "none" for 0) into buf (len bytes, truncated, always
 * NUL-terminated). */
GPULEASE_API void gpulease_rights_format(uint32_t rights, char *buf, size_t len);

/* Parses comma-separated right names (as gpulease_rights_format writes
 * them: "all" for every right, "none" alone for 0) into *rights. OK, or
 * INVALID_ARGUMENT for an unknown or empty name. */
GPULEASE_API gpulease_status gpulease_rights_parse(const char *text, uint32_t *rights);

/* A lease's exclusivity class (LEASE_ALLOC's lease_class, docs/protocol.md).
 * ISOLATED: a worker process and CUDA context of the lease's own (about
 *   260 MiB of VRAM beyond the lease's size on an H100); a fault ends only
 *   this lease's work.
 * SHARED: a region in one CUDA context that the GPU's other SHARED leases
 *   also use: a few MiB of overhead, but a kernel can address the other
 *   shared leases' memory, and a device fault ends every lease of that
 *   context. Never the default.
 * DEVICE: the whole GPU: refused while other leases live on it; no other
 *   lease is granted on it while it lives.
 * PARTITION: a whole MIG instance of a GPU in MIG mode, with the lease's
 *   context bound to it; a GPU in MIG mode takes only these. */
typedef enum gpulease_lease_class {
  GPULEASE_CLASS_ISOLATED = 0,
  GPULEASE_CLASS_SHARED = 1,
  GPULEASE_CLASS_DEVICE = 2,
  GPULEASE_CLASS_PARTITION = 3,
} gpulease_lease_class;

/* Lower-case name of a class ("isolated", "shared", "device", "partition");
 * "unknown" for anything else. Static storage. */
GPULEASE_API const char *gpulease_lease_class_name(int lease_class);

/* Parses a class name as gpulease_lease_class_name writes it. OK, or
 * INVALID_ARGUMENT. */
GPULEASE_API gpulease_status gpulease_lease_class_parse(const char *name,
                                                        gpulease_lease_class *out);

/* A lease: its id and its secret are the capability for every op on it.
 * Plain data; copy it freely. */
typedef struct gpulease_lease {
  uint64_t id;
  uint8_t secret[GPULEASE_SECRET_BYTES];
  uint32_t gpu_index;   /* the GPU the VRAM is on */
  uint64_t vram_bytes;  /* VRAM reserved on the device for this lease */
  uint32_t ttl_s;       /* TTL granted by the last alloc or renew */
  uint64_t remaining_ms; /* time left when the daemon answered */
  uint64_t submits;     /* GPU_SUBMITs completed (filled by query) */
  gpulease_lease_class lease_class; /* as granted */
} gpulease_lease;

#define GPULEASE_LEASE_OPTS_VERSION 1

/* What a LEASE_ALLOC asks for beyond GPU, size and TTL. Fill with
 * gpulease_lease_opts_default() and then set fields; new fields are only
 * ever appended. The defaults (or a NULL pointer) are an isolated lease
 * with the daemon's small printf FIFO and device malloc heap. */
typedef struct gpulease_lease_opts {
  uint32_t struct_version; /* GPULEASE_LEASE_OPTS_VERSION */
  gpulease_lease_class lease_class;
  /* Bytes for the context's kernel printf FIFO (CU_LIMIT_PRINTF_FIFO_SIZE)
   * and device malloc heap (CU_LIMIT_MALLOC_HEAP_SIZE); 0: the daemon's
   * default (64 KiB and 1 MiB). Not for SHARED leases (one context serves
   * them all): INVALID_ARGUMENT there. */
  uint32_t printf_fifo_bytes;
  uint64_t malloc_heap_bytes;
} gpulease_lease_opts;

/* Fills *opts (caller-owned) with struct_version and the defaults: class
 * ISOLATED, both limits 0 (the daemon's). NULL is ignored. */
GPULEASE_API void gpulease_lease_opts_default(gpulease_lease_opts *opts);

/* Asks for vram_bytes of VRAM on GPU gpu_index (GPULEASE_ANY_GPU: the GPU
 * with the most free VRAM) for ttl_s seconds. The daemon reserves the VRAM
 * on the device, in a CUDA context of the lease's own, before answering.
 * *out is caller-owned. Errors: INVALID_ARGUMENT (zero size or TTL, TTL above
 * the daemon's maximum), NO_DEVICE, CAPACITY_EXCEEDED, INTERNAL, and the
 * connection errors. */
GPULEASE_API gpulease_status gpulease_lease_alloc(gpulease_client *client, uint32_t gpu_index,
                                                  uint64_t vram_bytes, uint32_t ttl_s,
                                                  gpulease_lease *out, gpulease_error *err);

/* As gpulease_lease_alloc, with the class and context limits of *opts
 * (LEASE_ALLOC's lease_class, printf_fifo_bytes and malloc_heap_bytes,
 * docs/protocol.md "LEASE_ALLOC"). opts: NULL for the defaults, else
 * filled by gpulease_lease_opts_default(); borrowed for the call. *out is
 * caller-owned. Errors: those of gpulease_lease_alloc; INVALID_ARGUMENT
 * for opts of unknown version (nothing sent), an unknown class or limits
 * on a SHARED lease, or a class other than PARTITION naming a GPU in MIG
 * mode; BUSY when a DEVICE lease holds the GPU, or when a DEVICE
 * lease is asked for a GPU other leases use; UNSUPPORTED for PARTITION on
 * a GPU (or node) without MIG instances; CAPACITY_EXCEEDED when no free
 * instance holds vram_bytes. */
GPULEASE_API gpulease_status gpulease_lease_alloc_opts(gpulease_client *client,
                                                       uint32_t gpu_index, uint64_t vram_bytes,
                                                       uint32_t ttl_s,
                                                       const gpulease_lease_opts *opts,
                                                       gpulease_lease *out, gpulease_error *err);

/* Extends the lease to expire ttl_s seconds from now; updates lease->ttl_s
 * and lease->remaining_ms. Needs the right RENEW. Errors: UNAUTHORIZED,
 * NOT_FOUND, LEASE_EXPIRED, INVALID_ARGUMENT (TTL), QUOTA_EXCEEDED (the
 * tenant's longest TTL or GPU-seconds), and the connection errors. */
GPULEASE_API gpulease_status gpulease_lease_renew(gpulease_client *client, gpulease_lease *lease,
                                                  uint32_t ttl_s, gpulease_error *err);

/* Reads the lease's state from the daemon into *lease (id and secret are
 * the input; the other fields are overwritten). Errors as renew. */
GPULEASE_API gpulease_status gpulease_lease_query(gpulease_client *client, gpulease_lease *lease,
                                                  gpulease_error *err);

/* Frees the lease now: the daemon ends its worker process and with it the
 * CUDA context and all its VRAM. Needs the right FREE. Errors: UNAUTHORIZED,
 * NOT_FOUND, LEASE_EXPIRED, and the connection errors. */
GPULEASE_API gpulease_status gpulease_lease_free(gpulease_client *client,
                                                 const gpulease_lease *lease,
                                                 gpulease_error *err);

/* As gpulease_lease_renew, and rotates the lease's secret (LEASE_RENEW with
 * rotate): the daemon bumps the lease's generation, so every secret minted
 * before (the old one, and all delegated from it) is refused from now on,
 * and lease->secret receives the new one. Needs the rights RENEW and
 * DELEGATE. Errors as gpulease_lease_renew. */
GPULEASE_API gpulease_status gpulease_lease_rotate(gpulease_client *client, gpulease_lease *lease,
                                                   uint32_t ttl_s, gpulease_error *err);

/* Derives a weaker secret for the lease (LEASE_DELEGATE), to hand to
 * someone else: it carries only `rights` (GPULEASE_RIGHT_* bits, a subset
 * of the presented secret's), expires ttl_s seconds from now (0: when the
 * presented secret does; never later than it), and may be used by the
 * tenant named `audience` (NULL or "": the presented secret's, which for
 * one from LEASE_ALLOC is the lease's own tenant). The
 * daemon keeps no state for it; rotation, revocation or the lease's end
 * void it. out_secret (GPULEASE_SECRET_BYTES) is caller-owned. Needs the
 * right DELEGATE. Errors: UNAUTHORIZED (the presented secret lacks a right
 * asked for, or DELEGATE), INVALID_ARGUMENT (no rights, an audience over
 * 255 bytes), NOT_FOUND, LEASE_EXPIRED, and the connection errors. */
GPULEASE_API gpulease_status gpulease_lease_delegate(gpulease_client *client,
                                                     const gpulease_lease *lease,
                                                     uint32_t rights, uint32_t ttl_s,
                                                     const char *audience,
                                                     uint8_t out_secret[GPULEASE_SECRET_BYTES],
                                                     gpulease_error *err);

/* Revokes lease lease_id by identity, without its secret (LEASE_REVOKE):
 * the caller's tenant must own the lease, or be an admin of the daemon.
 * The lease ends as if freed, and every secret of it is refused from then
 * on with UNAUTHORIZED naming the revocation and `reason` (NULL or up to
 * 255 bytes). Errors: UNAUTHORIZED (anonymous caller, another tenant's
 * lease), NOT_FOUND, INVALID_ARGUMENT, and the connection errors. */
GPULEASE_API gpulease_status gpulease_lease_revoke(gpulease_client *client, uint64_t lease_id,
                                                   const char *reason, gpulease_error *err);

/* Clears the fence of GPU gpu_index (ADMIN_UNFENCE): a GPU is fenced when
 * a worker's teardown failed (its process did not exit, or its memory did
 * not come back, in time); it then takes no new leases. Only for an admin
 * tenant of the daemon's tenants file; the operator's word that the
 * memory is back. Errors: UNAUTHORIZED (not an admin), NO_DEVICE (no such
 * GPU), INVALID_ARGUMENT (not fenced), and the connection errors. */
GPULEASE_API gpulease_status gpulease_admin_unfence(gpulease_client *client, uint32_t gpu_index,
                                                    gpulease_error *err);

/* What a secret says of itself (read, not verified: only the daemon can
 * tell whether it is genuine): the lease generation it belongs to, its
 * rights, its expiry (Unix seconds; 0: none of its own) and whether it was
 * handed to another tenant. Any out pointer may be NULL. */
GPULEASE_API void gpulease_secret_describe(const uint8_t secret[GPULEASE_SECRET_BYTES],
                                           uint32_t *generation, uint32_t *rights,
                                           uint64_t *not_after_s, int *delegated_to_other);

/* Writes the secret as 80 lower-case hex digits and a NUL into hex[81]. */
GPULEASE_API void gpulease_secret_to_hex(const uint8_t secret[GPULEASE_SECRET_BYTES],
                                         char hex[2 * GPULEASE_SECRET_BYTES + 1]);

/* Parses 80 hex digits into secret. Returns GPULEASE_OK or
 * GPULEASE_INVALID_ARGUMENT. */
GPULEASE_API gpulease_status gpulease_secret_from_hex(const char *hex,
                                                      uint8_t secret[GPULEASE_SECRET_BYTES]);

/* ------------------------------------------------------------------------
 * One-shot kernel execution (GPU_SUBMIT)
 * ---------------------------------------------------------------------- */

typedef enum gpulease_image_format {
  GPULEASE_IMAGE_AUTO = 0,   /* the daemon detects PTX, cubin (ELF), fatbin */
  GPULEASE_IMAGE_PTX = 1,
  GPULEASE_IMAGE_CUBIN = 2,
  GPULEASE_IMAGE_FATBIN = 3,
} gpulease_image_format;

typedef enum gpulease_param_kind {
  /* A device pointer: the lease region's base address plus `offset`. */
  GPULEASE_PARAM_POINTER = 1,
  /* `size` bytes of `value`, copied as the parameter's bytes (host byte
   * order of the GPU, i.e. little-endian). */
  GPULEASE_PARAM_SCALAR = 2,
} gpulease_param_kind;

/* The largest by-value parameter: 128 bytes holds a CUtensorMap (see
 * gpulease_tensormap_encode_tiled). */
#define GPULEASE_MAX_SCALAR_BYTES 128
#define GPULEASE_MAX_PARAMS 256

/* One kernel parameter. */
typedef struct gpulease_param {
  gpulease_param_kind kind;
  uint32_t size;     /* SCALAR: 1..GPULEASE_MAX_SCALAR_BYTES bytes */
  uint64_t offset;   /* POINTER: bytes from the region's start */
  uint8_t value[GPULEASE_MAX_SCALAR_BYTES]; /* SCALAR: the bytes */
} gpulease_param;

/* Helpers that fill a parameter; they return the parameter by value. */
GPULEASE_API gpulease_param gpulease_param_pointer(uint64_t offset);
GPULEASE_API gpulease_param gpulease_param_scalar(const void *value, uint32_t size);

#define GPULEASE_SUBMIT_DESC_VERSION 2

/* What GPU_SUBMIT runs. Fill with gpulease_submit_desc_default(); every
 * pointer is borrowed for the call. */
typedef struct gpulease_submit_desc {
  uint32_t struct_version;       /* GPULEASE_SUBMIT_DESC_VERSION */
  const void *image;             /* PTX text, cubin or fatbin bytes */
  size_t image_size;             /* bytes; PTX need not be NUL-terminated */
  gpulease_image_format format;
  const char *kernel;            /* the function's (mangled) name */
  uint32_t grid[3];              /* grid dimensions in blocks */
  uint32_t block[3];             /* block dimensions in threads */
  uint32_t shared_mem_bytes;     /* dynamic shared memory per block */
  const void *input;             /* optional bytes copied to the region */
  size_t input_size;             /*   before the launch, at input_offset */
  uint64_t input_offset;
  uint64_t output_offset;        /* bytes read back from the region after */
  uint64_t output_size;          /*   the kernel, at output_offset */
  /* Kernel parameters. With param_count == 0 and use_params == 0 the
   * region's device pointer is the only parameter (seed recipe 29). */
  const gpulease_param *params;
  size_t param_count;
  int use_params;
  /* struct_version 2: launch attributes, as gpulease_launch_ex() takes
   * them (GPULEASE_LAUNCH_COOPERATIVE; cluster dimensions, all 0: none). */
  uint32_t launch_flags;
  uint32_t cluster[3];
} gpulease_submit_desc;

GPULEASE_API void gpulease_submit_desc_default(gpulease_submit_desc *desc);

#define GPULEASE_SUBMIT_RESULT_VERSION 1

/* GPU_SUBMIT's result. Caller-owned; set struct_version with
 * gpulease_submit_result_init() before gpulease_submit(). output is
 * malloc'd by the library and owned by the caller: release it with
 * gpulease_submit_result_release(), after which the struct can be used
 * again. */
typedef struct gpulease_submit_result {
  uint32_t struct_version; /* GPULEASE_SUBMIT_RESULT_VERSION */
  void *output;          /* output_size bytes */
  size_t output_size;
  uint64_t gpu_time_ns;  /* kernel time measured with CUDA events */
} gpulease_submit_result;

/* Zeroes *result (caller-owned) and sets its struct_version, ready for
 * gpulease_submit(). NULL is ignored. */
GPULEASE_API void gpulease_submit_result_init(gpulease_submit_result *result);

/* Runs one kernel on the lease's GPU and waits for it (GPU_SUBMIT,
 * docs/protocol.md "GPU_SUBMIT"; needs the right SUBMIT): loads the image
 * (cuModuleLoadDataEx), finds the function (cuModuleGetFunction), copies the
 * input (cuMemcpyHtoD), launches (cuLaunchKernel), synchronizes and reads
 * the output (cuMemcpyDtoH). result: struct_version set
 * (gpulease_submit_result_init()), and written on success (struct_version
 * kept; a previous output must have been released).
 * Errors: INVALID_ARGUMENT (desc or result of unknown version, nothing
 * sent), UNAUTHORIZED, NOT_FOUND, LEASE_EXPIRED (also when the TTL ran out
 * during the kernel: the daemon killed it), INVALID_ARGUMENT (ranges outside
 * the lease, dimensions), LOAD_FAILED (with the JIT log; or locally, before
 * sending, for PTX the lease's GPU cannot load, as gpulease_module_load
 * says), LAUNCH_FAILED (with the CUDA error name), WRITE_FAILED,
 * READ_FAILED, TOO_LARGE, and the connection errors. */
GPULEASE_API gpulease_status gpulease_submit(gpulease_client *client, const gpulease_lease *lease,
                                             const gpulease_submit_desc *desc,
                                             gpulease_submit_result *result,
                                             gpulease_error *err);

/* Frees result->output and zeroes the result's other fields
 * (struct_version is kept, so it can take another submit). NULL is
 * ignored. */
GPULEASE_API void gpulease_submit_result_release(gpulease_submit_result *result);

/* ------------------------------------------------------------------------
 * Sessions (SESSION_OPEN ... LAUNCH, docs/protocol.md "Sessions")
 *
 * A session keeps data and modules on the lease's GPU between kernels:
 * open it, allocate buffers, write them, load a module, launch kernels
 * (many, without waiting), synchronize once, read the results, close it.
 * The session's ops run on the daemon in the order this library issued
 * them, like the work of one CUDA stream, even though most calls return
 * before the daemon answers. Several sessions on one lease run
 * concurrently; they share the lease's VRAM and CUDA context.
 *
 * Failures: an op that fails on the daemon is the session's *failure*
 * until acknowledged; every later op of the session fails fast with the
 * same status (without running). Calls marked "pipelined" below send their
 * op and return GPULEASE_OK without waiting for its result (only local
 * checks and connection errors are reported at once);
 * gpulease_session_sync() waits for all of them and reports the first
 * failure: its status, its op and its sequence number.
 *
 * Handles (gpulease_buffer, gpulease_module, gpulease_function) are opaque
 * 64-bit values issued by the daemon for one session; 0 is never a valid
 * handle. The daemon checks each on every use: a freed, forged or other
 * session's handle is GPULEASE_INVALID_HANDLE. Closing the session frees
 * every buffer and module it holds; freeing the lease (or its expiry)
 * frees every session on it.
 *
 * Ownership: a gpulease_session borrows its gpulease_client, which must
 * stay open until gpulease_session_close(); a session is used from one
 * thread at a time, like its client. If the client reconnects
 * (gpulease_client_reconnect, gpulease_call), replies the session was
 * still waiting for are lost; sync before reconnecting.
 *
 * Timeouts: every call that waits (sync, reads, allocations) is bounded by
 * the client's timeout_ms; a SYNC behind kernels that run longer returns
 * GPULEASE_TIMEOUT, so set timeout_ms above the longest wait expected.
 * ---------------------------------------------------------------------- */

typedef struct gpulease_session gpulease_session;
typedef uint64_t gpulease_buffer;
typedef uint64_t gpulease_module;
typedef uint64_t gpulease_function;

/* Opens a session on the lease (SESSION_OPEN). *out is freed by
 * gpulease_session_close(). The lease's id and secret are copied.
 * Errors: UNAUTHORIZED, NOT_FOUND, LEASE_EXPIRED, CAPACITY_EXCEEDED (the
 * lease has 64 sessions open), INTERNAL, NO_MEMORY, connection errors. */
GPULEASE_API gpulease_status gpulease_session_open(gpulease_client *client,
                                                   const gpulease_lease *lease,
                                                   gpulease_session **out, gpulease_error *err);

/* Closes the session (SESSION_CLOSE, after its earlier ops) and frees
 * every buffer and module it holds on the GPU, then frees session (always,
 * even on error). Closing a session that ended with a lost context is OK.
 * Errors: those of the daemon's answer (NOT_FOUND when the session or the
 * lease is gone), connection errors. NULL is ignored (OK). */
GPULEASE_API gpulease_status gpulease_session_close(gpulease_session *session,
                                                    gpulease_error *err);

/* The session's id on the daemon (for the CLI and logs). */
GPULEASE_API uint64_t gpulease_session_id(const gpulease_session *session);

#define GPULEASE_OP_FAILURE_VERSION 1

/* A failed op, as gpulease_session_sync() reports it. Caller-owned; set
 * struct_version with gpulease_op_failure_init() before the call. */
typedef struct gpulease_op_failure {
  uint32_t struct_version; /* GPULEASE_OP_FAILURE_VERSION */
  gpulease_status status; /* OK when there is none */
  uint16_t op;            /* the op's code (docs/protocol.md), 0 if none */
  char op_name[32];       /* "LAUNCH", "MEM_WRITE" ... */
  uint64_t seq;           /* the op's sequence number in the session */
} gpulease_op_failure;

/* Zeroes *failure (caller-owned) and sets its struct_version, ready for
 * gpulease_session_sync() and gpulease_launch_sync(). NULL is ignored. */
GPULEASE_API void gpulease_op_failure_init(gpulease_op_failure *failure);

/* Waits until every earlier op of the session has finished on the GPU
 * (SYNC; cuStreamSynchronize), then reports the session's failure, if any
 * (docs/protocol.md "SYNC"): the return value is its status (GPULEASE_OK
 * when none), failure (may be NULL; else caller-owned with struct_version
 * set by gpulease_op_failure_init()) receives the op and its sequence
 * number (status OK, op 0 when there is none), err the daemon's message.
 * The failure stays (later ops fail fast) until
 * gpulease_session_acknowledge(). Also returns INVALID_ARGUMENT for a
 * failure struct of unknown version (nothing sent) and connection
 * errors. */
GPULEASE_API gpulease_status gpulease_session_sync(gpulease_session *session,
                                                   gpulease_op_failure *failure,
                                                   gpulease_error *err);

/* Acknowledges the failure of op `failed_seq` (as sync reported it;
 * UINT64_MAX: whatever failed): ops issued after this call run normally
 * again. Waits like sync. Returns OK, or the status of a failure that is
 * still unacknowledged (another op), or connection errors. A failure that
 * lost the lease's CUDA context cannot be acknowledged: the session ended
 * with the context, and acknowledge returns the failure's status
 * (LAUNCH_FAILED) with a message saying so; close the session and open a
 * new one, which gets a fresh context at once. */
GPULEASE_API gpulease_status gpulease_session_acknowledge(gpulease_session *session,
                                                          uint64_t failed_seq,
                                                          gpulease_error *err);

/* Fetches the lease's pending kernel output now (KERNEL_OUTPUT,
 * docs/protocol.md): waits for the session's earlier ops, as sync does,
 * and hands what their kernels printed (and anything else the lease's
 * kernels printed since the last delivery) to the client's
 * gpulease_client_set_kernel_output callback, on this thread, before it
 * returns. Does nothing without a callback. gpulease_session_sync does the
 * same after its SYNC whenever a callback is set, so a caller that syncs
 * needs this only to see output sooner. A daemon that predates kernel
 * output answers UNSUPPORTED: the call returns OK, and the client stops
 * asking. Errors: the lease's (NOT_FOUND, UNAUTHORIZED, LEASE_EXPIRED),
 * the session's (NOT_FOUND after close), connection errors. */
GPULEASE_API gpulease_status gpulease_session_kernel_output(gpulease_session *session,
                                                            gpulease_error *err);

/* Sends the session's pipelined ops that the library still holds (see
 * gpulease_session_set_batch) without waiting for them. Every call that
 * waits (sync, reads, allocations, close) sends them first anyway; flush
 * is for a caller that launches, then does other work before it waits,
 * and wants the kernels started meanwhile. Errors: connection errors. */
GPULEASE_API gpulease_status gpulease_session_flush(gpulease_session *session,
                                                    gpulease_error *err);

/* Pipelined ops (launch, memset, copy, free, unload) go to the daemon in
 * batches (BATCH, docs/protocol.md): a call sends its op at once when none
 * of the session's requests is in flight, and otherwise adds it to a batch
 * that is sent when it holds max_ops ops (default 64) or 64 KiB, at the
 * next call that waits (with that call's op in the same request: launch
 * then sync is one round trip), or at gpulease_session_flush(). max_ops 1
 * sends every op on its own. Sends what is batched first. Errors:
 * INVALID_ARGUMENT (max_ops outside 1..1024), connection errors. */
GPULEASE_API gpulease_status gpulease_session_set_batch(gpulease_session *session,
                                                        unsigned max_ops, gpulease_error *err);

/* Progress of gpulease_mem_write()/gpulease_mem_read(): called after each
 * chunk with the bytes done so far and the total. */
typedef void (*gpulease_progress_fn)(uint64_t done_bytes, uint64_t total_bytes, void *user);

/* Sets (or with NULL clears) the session's transfer progress callback. */
GPULEASE_API void gpulease_session_set_progress(gpulease_session *session,
                                                gpulease_progress_fn fn, void *user);

/* Allocates size_bytes (>= 1) of host memory that a daemon on this machine
 * can read and write directly (a sealed memfd, shared over its local
 * socket and page-locked by the daemon when first used with a lease):
 * gpulease_mem_write() from it and gpulease_mem_read() into it skip the
 * staging copy, like cuMemHostAlloc'd memory with the CUDA driver. With a
 * daemon elsewhere it is ordinary memory. *ptr is owned by the client:
 * release it with gpulease_host_free() (gpulease_client_close() frees what
 * is left). Errors: INVALID_ARGUMENT, NO_MEMORY. */
GPULEASE_API gpulease_status gpulease_host_alloc(gpulease_client *client, size_t size_bytes,
                                                 void **ptr, gpulease_error *err);

/* Releases memory of gpulease_host_alloc() (detaching it from the leases
 * that used it). INVALID_ARGUMENT for a pointer it did not give. NULL is
 * ignored. */
GPULEASE_API gpulease_status gpulease_host_free(gpulease_client *client, void *ptr,
                                                gpulease_error *err);

/* Allocates size_bytes (>= 1) of device memory out of the lease's VRAM
 * (MEM_ALLOC). The contents are undefined (zeros or this lease's own
 * earlier data, never another lease's). Waits for the answer.
 * Errors: INVALID_ARGUMENT, CAPACITY_EXCEEDED (the lease's VRAM cannot
 * hold it: the message gives the free bytes), the session's failure,
 * connection errors. */
GPULEASE_API gpulease_status gpulease_mem_alloc(gpulease_session *session, uint64_t size_bytes,
                                                gpulease_buffer *out, gpulease_error *err);

/* As gpulease_mem_alloc(), and also gives where the buffer starts in the
 * lease's region (*region_offset, bytes): the offset GPU_SUBMIT's
 * input_offset, output_offset and pointer params use, so that
 * gpulease_submit() can work on a session's buffers or keep clear of them
 * (docs/protocol.md, "Memory"). The offset stays valid until the buffer is
 * freed. Sends MEM_ALLOC's 72-byte body of 0.1 (no flags). Errors: as
 * gpulease_mem_alloc() (which calls it); PROTOCOL_ERROR for a result with
 * a device address, which the request did not ask for. */
GPULEASE_API gpulease_status gpulease_mem_alloc_region(gpulease_session *session,
                                                       uint64_t size_bytes, gpulease_buffer *out,
                                                       uint64_t *region_offset,
                                                       gpulease_error *err);

/* As gpulease_mem_alloc_region(), and also gives the buffer's device
 * address (*device_address): the GPU's own virtual address of the
 * buffer's first byte in the lease's CUDA context (on the emulated device,
 * the emulated device's address), the lease region's base plus
 * *region_offset. A kernel may take it, or it plus an offset into the
 * buffer, as a raw 8-byte pointer argument (gpulease_arg_scalar(&addr, 8))
 * and do pointer arithmetic on it. Valid until the buffer is freed
 * (gpulease_mem_free()); for a shared lease it is an address in the
 * context the GPU's shared leases share. region_offset may be NULL;
 * device_address is required; all three are caller-owned, written on
 * success only. Sends MEM_ALLOC with flags bit 0 (docs/protocol.md,
 * "MEM_ALLOC (0x0311)"; the ops batched before it go first, on their own)
 * and waits for the answer. Errors: as gpulease_mem_alloc(); UNSUPPORTED
 * from a daemon older than the field (gpulease 0.2), with a message
 * saying that the daemon does not give device addresses (the request used
 * no seq there: the library fills it, so the session goes on);
 * PROTOCOL_ERROR for a result without the address. */
GPULEASE_API gpulease_status gpulease_mem_alloc_address(gpulease_session *session,
                                                        uint64_t size_bytes, gpulease_buffer *out,
                                                        uint64_t *region_offset,
                                                        uint64_t *device_address,
                                                        gpulease_error *err);

/* Frees a buffer (MEM_FREE) once the earlier ops are done. Pipelined. */
GPULEASE_API gpulease_status gpulease_mem_free(gpulease_session *session, gpulease_buffer buffer,
                                               gpulease_error *err);

/* Copies size_bytes from host src into buffer at offset (MEM_WRITE, in
 * chunks of at most 8 MiB, several in flight; cuMemcpyHtoD). Returns once
 * the daemon has taken every chunk; src is only borrowed for the call.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (range outside the buffer),
 * WRITE_FAILED, the session's failure, connection errors. */
GPULEASE_API gpulease_status gpulease_mem_write(gpulease_session *session, gpulease_buffer buffer,
                                                uint64_t offset, const void *src,
                                                uint64_t size_bytes, gpulease_error *err);

/* Copies size_bytes from buffer at offset into host dst, after every
 * earlier op has finished (MEM_READ in chunks; cuMemcpyDtoH). Errors as
 * gpulease_mem_write, READ_FAILED instead of WRITE_FAILED. */
GPULEASE_API gpulease_status gpulease_mem_read(gpulease_session *session, gpulease_buffer buffer,
                                               uint64_t offset, void *dst, uint64_t size_bytes,
                                               gpulease_error *err);

/* Copies size_bytes from src_buffer+src_offset to dst_buffer+dst_offset on
 * the device (MEM_COPY; cuMemcpyDtoDAsync). Pipelined. */
GPULEASE_API gpulease_status gpulease_mem_copy(gpulease_session *session, gpulease_buffer dst,
                                               uint64_t dst_offset, gpulease_buffer src,
                                               uint64_t src_offset, uint64_t size_bytes,
                                               gpulease_error *err);

/* Sets count elements of element_size bytes (1, 2 or 4) at buffer+offset
 * (offset in bytes) to value (MEMSET, docs/protocol.md "MEMSET";
 * cuMemsetD8/D16/D32Async), once the session's earlier ops are done.
 * Pipelined: the daemon's refusal (INVALID_HANDLE, INVALID_ARGUMENT for a
 * range outside the buffer) is the session's failure, seen at the next
 * call that waits. Local errors, nothing sent: INVALID_ARGUMENT (session
 * NULL, an element size other than 1, 2 or 4, a value that does not fit
 * it, count 0, offset + count x element_size past 2^64), INVALID_HANDLE
 * (buffer 0); also the session's failure, connection errors. */
GPULEASE_API gpulease_status gpulease_mem_set(gpulease_session *session, gpulease_buffer buffer,
                                              uint64_t offset, uint32_t element_size,
                                              uint32_t value, uint64_t count, gpulease_error *err);

/* Deprecated (0.2; removed in 0.3): gpulease_mem_set() under its old name,
 * the same call. */
GPULEASE_API gpulease_status gpulease_memset(gpulease_session *session, gpulease_buffer buffer,
                                             uint64_t offset, uint32_t element_size,
                                             uint32_t value, uint64_t count, gpulease_error *err)
    GPULEASE_DEPRECATED("use gpulease_mem_set");

/* Where MODULE_LOAD found the module. */
typedef enum gpulease_module_source {
  GPULEASE_MODULE_LOADED = 0,     /* loaded now (PTX compiled now) */
  GPULEASE_MODULE_IN_CONTEXT = 1, /* already loaded in the lease's context */
  GPULEASE_MODULE_DISK_CACHE = 2, /* PTX compiled earlier, from the daemon's disk cache */
} gpulease_module_source;

/* Loads a module image (PTX, cubin, fatbin; image_size bytes, borrowed) into
 * the session (MODULE_LOAD; cuModuleLoadDataEx). source (may be NULL)
 * says whether a cache had it. Waits for the answer.
 * A PTX image (or an auto-detected one that is PTX) is first checked
 * against the lease's GPU (its .version and .target against the inventory,
 * asked once per connection): LOAD_FAILED locally, with what the node
 * takes, when it cannot load (docs/protocol.md, GET_INVENTORY;
 * GPULEASE_PTX_CHECK=0 in the environment when the client connected
 * sends it unchecked).
 * Errors: LOAD_FAILED (with the JIT log), UNSUPPORTED, INVALID_ARGUMENT,
 * TOO_LARGE, the session's failure, connection errors. */
GPULEASE_API gpulease_status gpulease_module_load(gpulease_session *session, const void *image,
                                                  size_t image_size,
                                                  gpulease_image_format format,
                                                  gpulease_module *out,
                                                  gpulease_module_source *source,
                                                  gpulease_error *err);

/* Unloads a module (MODULE_UNLOAD) once earlier ops are done; its
 * functions become invalid handles. Pipelined. */
GPULEASE_API gpulease_status gpulease_module_unload(gpulease_session *session,
                                                    gpulease_module module,
                                                    gpulease_error *err);

#define GPULEASE_FUNC_INFO_VERSION 1

/* A kernel's attributes (cuFuncGetAttribute). Caller-owned; set
 * struct_version with gpulease_func_info_init() before the call. */
typedef struct gpulease_func_info {
  uint32_t struct_version;         /* GPULEASE_FUNC_INFO_VERSION */
  uint32_t num_regs;               /* registers per thread */
  uint32_t max_threads_per_block;  /* the most threads a block may have */
  uint32_t static_shared_bytes;    /* statically allocated shared memory */
  uint32_t local_bytes;            /* local memory per thread */
  uint32_t const_bytes;            /* user constant memory */
  uint32_t ptx_version;            /* e.g. 80 for PTX ISA 8.0 */
  uint32_t binary_version;         /* e.g. 90 for sm_90 */
  int32_t param_count;             /* -1 when the driver cannot tell */
  uint16_t param_sizes[GPULEASE_MAX_PARAMS]; /* bytes, param_count of them */
} gpulease_func_info;

/* Zeroes *info (caller-owned) and sets its struct_version, ready for
 * gpulease_function_get(). NULL is ignored. */
GPULEASE_API void gpulease_func_info_init(gpulease_func_info *info);

/* Finds kernel `name` (NUL-terminated, mangled unless extern "C", at most
 * 1024 bytes) in module (FUNC_INFO, docs/protocol.md "FUNC_INFO";
 * cuModuleGetFunction, cuFuncGetAttribute). *out
 * receives the function handle; info (may be NULL; else caller-owned with
 * struct_version set by gpulease_func_info_init()) its attributes. Waits.
 * Errors: INVALID_HANDLE, NOT_FOUND (no such kernel), INVALID_ARGUMENT
 * (also, nothing sent, for info of unknown version), the session's
 * failure, connection errors. */
GPULEASE_API gpulease_status gpulease_function_get(gpulease_session *session,
                                                   gpulease_module module, const char *name,
                                                   gpulease_function *out,
                                                   gpulease_func_info *info,
                                                   gpulease_error *err);

typedef enum gpulease_arg_kind {
  GPULEASE_ARG_BUFFER = 1, /* device pointer: a buffer's address + offset */
  GPULEASE_ARG_SCALAR = 2, /* size bytes of value, little-endian as on the GPU */
} gpulease_arg_kind;

/* One kernel parameter of a session launch. */
typedef struct gpulease_arg {
  gpulease_arg_kind kind;
  gpulease_buffer buffer; /* BUFFER */
  uint64_t offset;        /* BUFFER: bytes into the buffer (<= its size) */
  uint32_t size;          /* SCALAR: 1..GPULEASE_MAX_SCALAR_BYTES */
  uint8_t value[GPULEASE_MAX_SCALAR_BYTES];
} gpulease_arg;

GPULEASE_API gpulease_arg gpulease_arg_buffer(gpulease_buffer buffer, uint64_t offset);
GPULEASE_API gpulease_arg gpulease_arg_scalar(const void *value, uint32_t size);

/* ------------------------------------------------------------------------
 * Tensor maps (docs/protocol.md, "TENSORMAP_ENCODE")
 * ---------------------------------------------------------------------- */

#define GPULEASE_TENSORMAP_BYTES 128  /* a CUtensorMap */
#define GPULEASE_TENSORMAP_MAX_RANK 5

/* Element types of a tensor map: CUtensorMapDataType's values. */
typedef enum gpulease_tensormap_type {
  GPULEASE_TENSORMAP_UINT8 = 0,
  GPULEASE_TENSORMAP_UINT16 = 1,
  GPULEASE_TENSORMAP_UINT32 = 2,
  GPULEASE_TENSORMAP_INT32 = 3,
  GPULEASE_TENSORMAP_UINT64 = 4,
  GPULEASE_TENSORMAP_INT64 = 5,
  GPULEASE_TENSORMAP_FLOAT16 = 6,
  GPULEASE_TENSORMAP_FLOAT32 = 7,
  GPULEASE_TENSORMAP_FLOAT64 = 8,
  GPULEASE_TENSORMAP_BFLOAT16 = 9,
  GPULEASE_TENSORMAP_FLOAT32_FTZ = 10,
  GPULEASE_TENSORMAP_TFLOAT32 = 11,
  GPULEASE_TENSORMAP_TFLOAT32_FTZ = 12,
} gpulease_tensormap_type;

#define GPULEASE_TENSORMAP_DESC_VERSION 1

/* A tiled tensor as cuTensorMapEncodeTiled describes it, less its address.
 * Fill with gpulease_tensormap_desc_default() and then set fields; new
 * fields are only ever appended. Dimension 0 is the innermost
 * (contiguous) one. Only the first `rank` entries of each array are read
 * (global_strides: rank - 1). */
typedef struct gpulease_tensormap_desc {
  uint32_t struct_version; /* GPULEASE_TENSORMAP_DESC_VERSION */
  uint32_t data_type;  /* gpulease_tensormap_type */
  uint32_t rank;       /* 1..GPULEASE_TENSORMAP_MAX_RANK */
  /* Elements in each dimension, each >= 1. */
  uint64_t global_dim[GPULEASE_TENSORMAP_MAX_RANK];
  /* Bytes between consecutive indices of dimensions 1 .. rank - 1
   * (multiples of 16); dimension 0's stride is the element size. */
  uint64_t global_strides[GPULEASE_TENSORMAP_MAX_RANK - 1];
  uint32_t box_dim[GPULEASE_TENSORMAP_MAX_RANK];         /* elements one copy moves (1..256) */
  uint32_t element_strides[GPULEASE_TENSORMAP_MAX_RANK]; /* 1: every element of the box */
  uint32_t interleave;   /* CUtensorMapInterleave: 0 none, 1 16 bytes, 2 32 bytes */
  uint32_t swizzle;      /* CUtensorMapSwizzle: 0 none, 1 32 B, 2 64 B, 3 128 B */
  uint32_t l2_promotion; /* CUtensorMapL2promotion: 0 none, 1 64 B, 2 128 B, 3 256 B */
  uint32_t oob_fill;     /* CUtensorMapFloatOOBfill: 0 zeros, 1 NaN (float types) */
} gpulease_tensormap_desc;

/* Fills *desc (caller-owned) with struct_version, every element stride 1
 * and every other field 0 (type UINT8, rank 0: the caller sets the type,
 * rank, dimensions, strides and box). NULL is ignored. */
GPULEASE_API void gpulease_tensormap_desc_default(gpulease_tensormap_desc *desc);

/* Builds on the node the tensor map (CUtensorMap, GPULEASE_TENSORMAP_BYTES
 * bytes) of a tiled tensor that starts `offset` bytes into `buffer`, one of
 * this session's buffers (TENSORMAP_ENCODE; cuTensorMapEncodeTiled on a
 * GPU, the emulated device's own encoding on an emulated one), for a
 * client that has no CUDA driver of its own. Pass the bytes to a TMA
 * kernel (cp.async.bulk.tensor) as its `const __grid_constant__
 * CUtensorMap` parameter with gpulease_arg_scalar(out,
 * GPULEASE_TENSORMAP_BYTES). desc (filled by
 * gpulease_tensormap_desc_default(), then set) is only read during the
 * call; out (GPULEASE_TENSORMAP_BYTES bytes, caller-owned) receives the
 * map (meaningful to that lease's device only, and only while the buffer
 * lives). Waits for the daemon's answer, which needs no earlier op to
 * finish on the GPU. offset is in bytes. Errors: INVALID_ARGUMENT
 * (checked here, nothing sent: desc of unknown version, rank not 1..5,
 * data type not 0..12, NULL desc or out; from the daemon: a tensor whose
 * end, offset + the sum over dimensions of (global_dim[i] - 1) x stride_i + the element size with
 * stride_0 the element size, exceeds the buffer's size; what the encoder
 * refuses, with its reason), INVALID_HANDLE (0, or not a live buffer of
 * this session), UNSUPPORTED (a driver without cuTensorMapEncodeTiled,
 * the emulated device's interleaved layouts and element strides other
 * than 1, a daemon that predates the op), connection errors. As for every
 * session op, the daemon's refusal becomes the session's failure until
 * gpulease_session_acknowledge(). */
GPULEASE_API gpulease_status gpulease_tensormap_encode_tiled(
    gpulease_session *session, gpulease_buffer buffer, uint64_t offset,
    const gpulease_tensormap_desc *desc, uint8_t out[GPULEASE_TENSORMAP_BYTES],
    gpulease_error *err);

/* Launches fn (LAUNCH; cuLaunchKernel on the session's stream) with grid
 * and block dimensions (blocks, threads), shared_mem_bytes of dynamic
 * shared memory per block and arg_count parameters (<= 256), checked
 * against the kernel's parameter sizes where the driver reports them.
 * Pipelined: returns once sent; the daemon answers once the launch is
 * queued, and faults surface at gpulease_session_sync(). */
GPULEASE_API gpulease_status gpulease_launch(gpulease_session *session, gpulease_function fn,
                                             const uint32_t grid[3], const uint32_t block[3],
                                             uint32_t shared_mem_bytes, const gpulease_arg *args,
                                             size_t arg_count, gpulease_error *err);

/* Launches fn as gpulease_launch() does, then waits for it and every
 * earlier op of the session as gpulease_session_sync() does, in one round
 * trip: the LAUNCH and the SYNC travel in one BATCH request (with any ops
 * still batched before them) and come back in one reply (docs/protocol.md
 * BATCH). For a loop that launches then waits each step. An unordered
 * session, or one with batching off (gpulease_session_set_batch 1), sends
 * the two ops one after the other. failure: as gpulease_session_sync()
 * takes it (NULL, or struct_version set by gpulease_op_failure_init()).
 * Returns what gpulease_session_sync() returns (the session's failure,
 * failure filled in the same way), or, without sending anything, the
 * argument errors of gpulease_launch() and INVALID_ARGUMENT for a failure
 * struct of unknown version. */
GPULEASE_API gpulease_status gpulease_launch_sync(gpulease_session *session,
                                                  gpulease_function fn, const uint32_t grid[3],
                                                  const uint32_t block[3],
                                                  uint32_t shared_mem_bytes,
                                                  const gpulease_arg *args, size_t arg_count,
                                                  gpulease_op_failure *failure,
                                                  gpulease_error *err);

/* ------------------------------------------------------------------------
 * Launch attributes, bursts, events and graphs (docs/protocol.md, "LAUNCH_EX" to
 * "Graphs")
 * ---------------------------------------------------------------------- */

/* gpulease_launch_attrs.flags. */
#define GPULEASE_LAUNCH_COOPERATIVE 0x01u /* co-resident grid: grid-wide sync works */

#define GPULEASE_LAUNCH_ATTRS_VERSION 1

/* What a launch asks for beyond grid, block and shared memory. Fill with
 * gpulease_launch_attrs_default() and then set fields; new fields are
 * only ever appended. */
typedef struct gpulease_launch_attrs {
  uint32_t struct_version; /* GPULEASE_LAUNCH_ATTRS_VERSION */
  uint32_t flags;      /* GPULEASE_LAUNCH_* */
  uint32_t cluster[3]; /* thread-block cluster dimensions in blocks; all 0: none */
} gpulease_launch_attrs;

/* Fills *attrs (caller-owned) with struct_version and no attributes
 * (flags 0, no cluster). NULL is ignored. */
GPULEASE_API void gpulease_launch_attrs_default(gpulease_launch_attrs *attrs);

/* Launches fn as gpulease_launch() does, with attributes (LAUNCH_EX;
 * cuLaunchKernelEx): GPULEASE_LAUNCH_COOPERATIVE makes every block of the
 * grid co-resident, so that cooperative groups' grid-wide synchronisation
 * (this_grid().sync()) works (CU_LAUNCH_ATTRIBUTE_COOPERATIVE); a non-zero
 * cluster groups blocks into thread-block clusters that share distributed
 * shared memory (CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION; compute capability
 * 9.0 and up; each grid dimension a multiple of the cluster's). attrs:
 * NULL, or filled by gpulease_launch_attrs_default() and set; borrowed for
 * the call; NULL or no attribute: a plain LAUNCH. Pipelined. The daemon refuses, as the
 * session's failure: a cooperative grid that cannot be co-resident
 * (INVALID_ARGUMENT, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", naming the
 * most blocks that fit), a cluster the kernel cannot run in
 * (INVALID_ARGUMENT, "CUDA_ERROR_INVALID_CLUSTER_SIZE"), clusters on a GPU
 * below 9.0 (UNSUPPORTED). Local errors: those of gpulease_launch(), and
 * INVALID_ARGUMENT for attrs of unknown version, unknown flags or a
 * cluster with a 0 dimension but not all. */
GPULEASE_API gpulease_status gpulease_launch_ex(gpulease_session *session, gpulease_function fn,
                                                const uint32_t grid[3], const uint32_t block[3],
                                                uint32_t shared_mem_bytes,
                                                const gpulease_launch_attrs *attrs,
                                                const gpulease_arg *args, size_t arg_count,
                                                gpulease_error *err);

/* One launch of a burst (borrowed for the call). */
typedef struct gpulease_burst_launch {
  gpulease_function function;
  uint32_t grid[3];          /* blocks */
  uint32_t block[3];         /* threads */
  uint32_t shared_mem_bytes; /* dynamic shared memory per block */
  const gpulease_arg *args;
  size_t arg_count;          /* <= GPULEASE_MAX_PARAMS */
} gpulease_burst_launch;

/* The most launches one burst carries. */
#define GPULEASE_MAX_BURST 4096

/* Queues count (1..GPULEASE_MAX_BURST) launches in one op (BURST), run
 * back to back in order on the session's stream, each with its own
 * function, dimensions and arguments. On a GPU the daemon runs a burst as
 * a CUDA graph of kernel nodes, instantiated once per shape (functions,
 * dimensions, shared memory, parameter sizes) and relaunched
 * (cuGraphLaunch); a burst of a known shape with other argument values
 * updates only the nodes whose values changed
 * (cuGraphExecKernelNodeSetParams). Pipelined: faults surface at
 * gpulease_session_sync(). Bursts need the kernels' parameter sizes
 * (every driver from CUDA 12.4; UNSUPPORTED otherwise). Errors: those of
 * gpulease_launch() for each launch (the message names its index),
 * INVALID_ARGUMENT for count out of range. */
GPULEASE_API gpulease_status gpulease_burst(gpulease_session *session,
                                            const gpulease_burst_launch *launches, size_t count,
                                            gpulease_error *err);

/* Events a session has: slots 0..GPULEASE_MAX_EVENTS-1. */
#define GPULEASE_MAX_EVENTS 256

/* Records event slot `event` (< GPULEASE_MAX_EVENTS) at this point of the
 * session's stream (EVENT_RECORD; cuEventRecord), replacing what it held.
 * Pipelined: no round trip. Errors: INVALID_ARGUMENT for a slot out of
 * range, the session's failure, connection errors. */
GPULEASE_API gpulease_status gpulease_event_record(gpulease_session *session, unsigned event,
                                                   gpulease_error *err);

/* Waits until the stream has reached event slot `end` and gives the GPU
 * time between the points recorded in `start` and `end` in nanoseconds
 * (EVENT_ELAPSED; cuEventSynchronize, cuEventElapsedTime: about 0.5 us
 * resolution on a GPU; the host's clock on the emulated device). One
 * round trip for any number of kernels timed. Errors: INVALID_ARGUMENT (a
 * slot out of range or never recorded), the session's failure (a kernel
 * fault found while waiting), connection errors. */
GPULEASE_API gpulease_status gpulease_event_elapsed(gpulease_session *session, unsigned start,
                                                    unsigned end, uint64_t *elapsed_ns,
                                                    gpulease_error *err);

/* A recorded graph of a session (GRAPH_END); 0 is never valid. */
typedef uint64_t gpulease_graph;

/* Starts recording a graph (GRAPH_BEGIN; CUDA stream capture): the
 * session's launches (gpulease_launch, gpulease_launch_ex, gpulease_burst),
 * memsets and copies issued until gpulease_graph_end() are checked as
 * usual but recorded instead of run. Buffer allocations, module loads and
 * function look-ups go on as usual meanwhile; transfers to or from the
 * host, frees, unloads, events and other graph calls are refused
 * (INVALID_ARGUMENT, as the session's failure) and drop the recording.
 * Pipelined. */
GPULEASE_API gpulease_status gpulease_graph_begin(gpulease_session *session, gpulease_error *err);

/* As gpulease_graph_begin(), for a graph that loops: each replay runs the
 * recorded ops, then again while the u32 at byte `offset` (4-aligned) of
 * buffer `flag` is not 0 (a do-while; CUDA: a WHILE conditional node whose
 * condition a small kernel of the daemon's sets from the flag, CUDA 12.4+
 * driver). A kernel of the body clears the flag to end the loop: an
 * iterative solver runs to convergence in one replay. A flag never cleared
 * loops until the lease's TTL ends it. Pipelined; gpulease_graph_end()
 * reports UNSUPPORTED where the driver lacks conditional nodes. */
GPULEASE_API gpulease_status gpulease_graph_begin_while(gpulease_session *session,
                                                        gpulease_buffer flag, uint64_t offset,
                                                        gpulease_error *err);

/* Ends the recording and makes the graph (GRAPH_END; cuStreamEndCapture,
 * cuGraphInstantiate). *out receives its handle; kernel_nodes (may be
 * NULL) the number of kernel launches in it, numbered 0.. in the order
 * they were issued (gpulease_graph_set_args() names them so). Waits.
 * Errors: INVALID_ARGUMENT (no recording, nothing recorded), UNSUPPORTED,
 * CAPACITY_EXCEEDED (1024 graphs a session), the session's failure (also
 * one of a refused op during the recording), connection errors. */
GPULEASE_API gpulease_status gpulease_graph_end(gpulease_session *session, gpulease_graph *out,
                                                uint32_t *kernel_nodes, gpulease_error *err);

/* Replays the graph on the session's stream (GRAPH_LAUNCH;
 * cuGraphLaunch): all its ops in one op. Pipelined: faults surface at
 * gpulease_session_sync(). */
GPULEASE_API gpulease_status gpulease_graph_launch(gpulease_session *session, gpulease_graph graph,
                                                   gpulease_error *err);

/* Gives kernel node `node` of the graph new argument values for later
 * replays (GRAPH_SET_ARGS; cuGraphExecKernelNodeSetParams): the same
 * count and sizes as the kernel's parameters. Pipelined. Errors, as the
 * session's failure: INVALID_HANDLE, INVALID_ARGUMENT (node out of range,
 * arguments that do not fit the kernel). */
GPULEASE_API gpulease_status gpulease_graph_set_args(gpulease_session *session,
                                                     gpulease_graph graph, uint32_t node,
                                                     const gpulease_arg *args, size_t arg_count,
                                                     gpulease_error *err);

/* Frees the graph once the session's earlier ops are done (GRAPH_DESTROY).
 * A session's graphs are freed with it. Pipelined. */
GPULEASE_API gpulease_status gpulease_graph_destroy(gpulease_session *session,
                                                    gpulease_graph graph, gpulease_error *err);

/* ------------------------------------------------------------------------
 * Stateless calls: "the GPU as a function call"
 * ---------------------------------------------------------------------- */

typedef enum gpulease_call_arg_kind {
  GPULEASE_CALL_IN = 1,     /* device pointer to a copy of data (size bytes) */
  GPULEASE_CALL_OUT = 2,    /* device pointer to size bytes (zeroed) read back into out */
  GPULEASE_CALL_INOUT = 3,  /* both: data copied in, read back into out */
  GPULEASE_CALL_SCALAR = 4, /* size bytes of data passed by value
                               (1..GPULEASE_MAX_SCALAR_BYTES, 128) */
} gpulease_call_arg_kind;

typedef struct gpulease_call_arg {
  gpulease_call_arg_kind kind;
  const void *data; /* IN, INOUT, SCALAR: borrowed for the call */
  void *out;        /* OUT, INOUT: size bytes, written on success */
  uint64_t size;    /* bytes */
} gpulease_call_arg;

#define GPULEASE_CALL_DESC_VERSION 1

typedef struct gpulease_call_desc {
  uint32_t struct_version;  /* GPULEASE_CALL_DESC_VERSION */
  const void *image;        /* PTX, cubin or fatbin; borrowed */
  size_t image_size;
  gpulease_image_format format;
  const char *kernel;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_mem_bytes;
  const gpulease_call_arg *args; /* the kernel's parameters, in order */
  size_t arg_count;
  /* Without a lease: the call leases exactly the VRAM it needs for
   * fresh_ttl_s seconds (default 60) on fresh_gpu_index (default any) and
   * frees it afterwards. */
  uint32_t fresh_ttl_s;
  uint32_t fresh_gpu_index;
  /* Tries at most max_attempts times (default 4) when the connection is
   * lost or a reply times out, sleeping backoff_ms (default 100), then
   * twice as long each time, between tries. */
  uint32_t max_attempts;
  uint32_t backoff_ms;
} gpulease_call_desc;

GPULEASE_API void gpulease_call_desc_default(gpulease_call_desc *desc);

/* Runs one kernel as a pure function: copies the inputs in, launches, waits
 * and copies the outputs out, in one GPU_SUBMIT. With lease NULL it leases
 * just the VRAM the call needs and frees it afterwards. Because the call
 * has no state on the GPU, it is retried (with the backoff above, on a new
 * connection when the old one is lost) on DISCONNECTED and TIMEOUT.
 * gpu_time_ns may be NULL. Errors: those of gpulease_lease_alloc and
 * gpulease_submit; the last attempt's status when every try failed. */
GPULEASE_API gpulease_status gpulease_call(gpulease_client *client, const gpulease_lease *lease,
                                           const gpulease_call_desc *desc,
                                           uint64_t *gpu_time_ns, gpulease_error *err);

/* Reconnects a client whose connection was lost (same options). Errors as
 * gpulease_client_connect. gpulease_call() does this itself. */
GPULEASE_API gpulease_status gpulease_client_reconnect(gpulease_client *client,
                                                       gpulease_error *err);

/* ------------------------------------------------------------------------
 * Lease renewal helper
 * ---------------------------------------------------------------------- */

typedef struct gpulease_renewer gpulease_renewer;

/* Called from the renewer's thread when a renewal fails for good: the lease
 * has been taken back (status LEASE_EXPIRED, NOT_FOUND or UNAUTHORIZED), or
 * the daemon could not be reached before the lease ran out. */
typedef void (*gpulease_lease_lost_fn)(const gpulease_lease *lease, gpulease_status status,
                                       const char *message, void *user);

/* Starts a thread that keeps the lease alive: it renews it for ttl_s
 * seconds (0: the lease's current ttl_s) whenever about two thirds of the
 * TTL has passed, on a connection of its own made with opts (borrowed for
 * the call; its strings are copied). A renewal lost to a connection error
 * is retried until the lease would run out. When the lease is taken back
 * lost_fn (may be NULL) is called once and the thread stops.
 * *out is freed by gpulease_renewer_stop(). Errors: INVALID_ARGUMENT,
 * NO_MEMORY, INTERNAL (no thread), and those of the first renewal, which
 * happens before this function returns. */
GPULEASE_API gpulease_status gpulease_renewer_start(const gpulease_connect_options *opts,
                                                    const gpulease_lease *lease, uint32_t ttl_s,
                                                    gpulease_lease_lost_fn lost_fn, void *user,
                                                    gpulease_renewer **out,
                                                    gpulease_error *err);

/* GPULEASE_OK while the lease is being kept, else the status that ended it
 * (message in err). Thread-safe. */
GPULEASE_API gpulease_status gpulease_renewer_status(gpulease_renewer *renewer,
                                                     gpulease_error *err);

/* Stops the thread (it does not free the lease) and frees renewer. NULL is
 * ignored. */
GPULEASE_API void gpulease_renewer_stop(gpulease_renewer *renewer);

/* ------------------------------------------------------------------------
 * Client pool: one job over many daemons (docs/scale-out.md)
 *
 * A pool is a set of daemons (nodes) found from a list, a file or DNS SRV
 * records, each verified as the pool's connect options say (a CA, or a
 * SHA-256 pin per node from the nodes file). gpulease_pool_map() runs one
 * kernel over N chunks of an input: it leases VRAM on the nodes (a lease
 * serves many chunks), submits each chunk with GPU_SUBMIT, and gathers the
 * outputs in chunk order. A chunk whose node is lost, whose lease ends, or
 * whose worker faults is retried elsewhere; a kernel's own error
 * (LOAD_FAILED, LAUNCH_FAILED, INVALID_ARGUMENT ...) fails the job.
 * Contract: a chunk's kernel must be idempotent (a retried chunk may have
 * run, in part or whole, on another node) and must write every output byte
 * it means to return (a lease's output slice holds what an earlier chunk
 * left there).
 *
 * Not to be confused with the warm pool (gpulease_warm_pool_get() and
 * gpulease_warm_pool_info above), one daemon's workers started ahead.
 *
 * Threads: a pool runs a thread and a connection per lease in flight
 * during gpulease_pool_map(). One gpulease_pool is used from one thread
 * at a time.
 * ---------------------------------------------------------------------- */

typedef struct gpulease_pool gpulease_pool;

#define GPULEASE_POOL_OPTIONS_VERSION 1

/* Where the pool's nodes come from and how it uses them. Fill with
 * gpulease_pool_options_default(); borrowed for gpulease_pool_open (the
 * strings are copied). Exactly one of nodes, nodes_file and srv_name. */
typedef struct gpulease_pool_options {
  uint32_t struct_version; /* GPULEASE_POOL_OPTIONS_VERSION */
  /* "HOST:PORT,HOST:PORT,...", each verified as `connect` says. */
  const char *nodes;
  /* A file with a node a line: "HOST:PORT [PIN-SHA256]"; blank lines and
   * '#' comments are skipped. A line's pin replaces connect's CA, pin or
   * insecure for that node. */
  const char *nodes_file;
  /* A DNS SRV name ("_gpulease._udp.gpuleased.gpu.svc.cluster.local"):
   * every target:port it lists is a node (resolved with glibc's
   * libresolv), verified as `connect` says (a CA, normally). */
  const char *srv_name;
  /* "IP:PORT" of the DNS server to ask for srv_name; NULL: the system's
   * (/etc/resolv.conf). */
  const char *dns_server;
  /* Seconds between resolutions of srv_name (default 30); nodes that
   * disappear are dropped and new ones used from the next resolution on. */
  uint32_t srv_refresh_s;
  /* How to verify and identify to every node (CA file, pin, insecure,
   * client certificate, token, timeout_ms); its addr is ignored. NULL:
   * gpulease_connect_options_default(). Borrowed; copied. */
  const gpulease_connect_options *connect;
  /* Leases held at once on one node (default 4) and in all (default 64);
   * each is a connection and a thread of gpulease_pool_map(). */
  uint32_t max_leases_per_node;
  uint32_t max_leases;
  /* The class of the pool's leases (default ISOLATED; SHARED costs a few
   * MiB instead of a CUDA context, docs/protocol.md) and their TTL in
   * seconds (default 60; renewed while a job runs). */
  gpulease_lease_class lease_class;
  uint32_t lease_ttl_s;
  /* A node that fails (cannot be reached, drops the connection, times
   * out) is marked down and probed again after down_backoff_ms (default
   * 500), doubled at each failure up to 30 s; a probe that succeeds marks
   * it up. */
  uint32_t down_backoff_ms;
} gpulease_pool_options;

/* Fills *opts (caller-owned) with the defaults above and struct_version;
 * every pointer NULL, so a source must still be set. NULL is ignored. */
GPULEASE_API void gpulease_pool_options_default(gpulease_pool_options *opts);

/* Makes a pool: reads the node list, the nodes file, or resolves the SRV
 * name (no connection yet: nodes are first contacted by a map or an
 * inventory). *out is freed with gpulease_pool_close(). Errors:
 * INVALID_ARGUMENT (opts or opts->connect of unknown version, none or
 * several of nodes, nodes_file, srv_name; a bad HOST:PORT or pin, with the
 * file and line), NOT_FOUND (the nodes file
 * cannot be read; the SRV name does not resolve or lists no target),
 * NO_MEMORY. */
GPULEASE_API gpulease_status gpulease_pool_open(const gpulease_pool_options *opts,
                                                gpulease_pool **out, gpulease_error *err);

/* Frees the pool. Leases of a finished map are already freed. NULL is
 * ignored. */
GPULEASE_API void gpulease_pool_close(gpulease_pool *pool);

/* Re-resolves the pool's SRV name now (a pool made from a list or a file
 * keeps its nodes). Errors: NOT_FOUND (the name does not resolve: the
 * nodes are kept), NO_MEMORY. */
GPULEASE_API gpulease_status gpulease_pool_refresh(gpulease_pool *pool, gpulease_error *err);

/* One node, as gpulease_pool_inventory() found it. */
typedef struct gpulease_pool_node {
  char addr[272];           /* "HOST:PORT" as listed or resolved */
  int up;                   /* 1: reached now; 0: down (status, message say why) */
  gpulease_status status;   /* OK, or why the node could not be read */
  char message[256];
  gpulease_inventory inventory; /* when up (struct_version set by the library) */
} gpulease_pool_node;

/* Reads every node's inventory, all at once (a thread each; SRV names
 * re-resolved when due). *nodes (count entries, in the pool's order)
 * is malloc'd: release it with gpulease_pool_nodes_release(). A node that
 * cannot be reached is listed down with its status, and is not an error.
 * Errors: NO_MEMORY. */
GPULEASE_API gpulease_status gpulease_pool_inventory(gpulease_pool *pool,
                                                     gpulease_pool_node **nodes, size_t *count,
                                                     gpulease_error *err);

/* Frees what gpulease_pool_inventory() returned (count entries). NULL is
 * ignored. */
GPULEASE_API void gpulease_pool_nodes_release(gpulease_pool_node *nodes, size_t count);

/* A kernel parameter of a map: chunk-relative, or a plain value. */
typedef enum gpulease_map_arg_kind {
  GPULEASE_MAP_IN = 1,     /* device pointer to the chunk's input slice */
  GPULEASE_MAP_OUT = 2,    /* device pointer to the chunk's output slice */
  GPULEASE_MAP_BYTES = 3,  /* u32: the chunk's input bytes (the last chunk may be short) */
  GPULEASE_MAP_INDEX = 4,  /* u32: the chunk's index, from 0 */
  GPULEASE_MAP_SCALAR = 5, /* size bytes of value, passed by value */
} gpulease_map_arg_kind;

typedef struct gpulease_map_arg {
  gpulease_map_arg_kind kind;
  uint32_t size;                            /* SCALAR: 1..GPULEASE_MAX_SCALAR_BYTES */
  uint8_t value[GPULEASE_MAX_SCALAR_BYTES]; /* SCALAR: the bytes */
} gpulease_map_arg;

/* Progress of a map: called from the map's threads (one at a time) after
 * each chunk finishes, with the chunks done and the total. */
typedef void (*gpulease_map_progress_fn)(uint64_t done_chunks, uint64_t total_chunks, void *user);

#define GPULEASE_MAP_DESC_VERSION 1

/* What gpulease_pool_map() runs. Fill with gpulease_map_desc_default();
 * every pointer is borrowed for the call. */
typedef struct gpulease_map_desc {
  uint32_t struct_version; /* GPULEASE_MAP_DESC_VERSION */
  const void *image;       /* PTX, cubin or fatbin */
  size_t image_size;
  gpulease_image_format format;
  const char *kernel;
  uint32_t grid[3];         /* per chunk */
  uint32_t block[3];
  uint32_t shared_mem_bytes;
  const gpulease_map_arg *args; /* the kernel's parameters, in order */
  size_t arg_count;
  /* The input, cut into ceil(input_bytes / chunk_bytes) chunks of
   * chunk_bytes (the last one holds the rest). */
  const void *input;
  uint64_t input_bytes;
  uint64_t chunk_bytes;
  /* Chunk i's output (output_bytes_per_chunk bytes read back from its
   * output slice) lands at output + i * output_bytes_per_chunk; output
   * holds chunks * output_bytes_per_chunk bytes, caller-owned. */
  void *output;
  uint64_t output_bytes_per_chunk;
  /* Tries per chunk, the first included (default 3). */
  uint32_t max_attempts;
  /* The whole job's bound in milliseconds (default 600000; 0: the
   * default). At the deadline the map stops taking chunks, aborts the
   * submits in flight and returns TIMEOUT. */
  uint32_t deadline_ms;
  gpulease_map_progress_fn progress; /* may be NULL */
  void *progress_user;
} gpulease_map_desc;

/* Fills *desc (caller-owned) with struct_version, grid and block 1x1x1,
 * max_attempts 3 and deadline_ms 600000; every pointer NULL and every size
 * 0, for the caller to set. NULL is ignored. */
GPULEASE_API void gpulease_map_desc_default(gpulease_map_desc *desc);

/* What one node did in a map. */
typedef struct gpulease_map_node_stats {
  char addr[272];
  uint64_t chunks;    /* chunks it completed */
  uint64_t retries;   /* chunks that failed there and went back to the queue */
  uint64_t failures;  /* failed ops there: submits, lease allocations, connections */
  uint64_t leases;    /* leases it granted */
  uint64_t bytes_in;  /* input bytes sent to it */
  uint64_t bytes_out; /* output bytes read from it */
  double seconds;     /* time its chunks' submits took, summed over its leases */
} gpulease_map_node_stats;

#define GPULEASE_MAP_STATS_VERSION 1

/* What a map did. Caller-owned; set struct_version with
 * gpulease_map_stats_init() before gpulease_pool_map(). nodes is malloc'd
 * by the library: gpulease_map_stats_release(). */
typedef struct gpulease_map_stats {
  uint32_t struct_version; /* GPULEASE_MAP_STATS_VERSION */
  uint64_t chunks;        /* chunks in the job */
  uint64_t done;          /* chunks completed */
  uint64_t retries;       /* chunk tries that failed and were retried */
  uint64_t backups;       /* chunks run twice at the end: a backup copy on another node of
                             one that ran long (a straggler), the first to finish kept */
  double seconds;         /* the job's wall time */
  double chunk_p50_ms;    /* a completed chunk's submit time: median */
  double chunk_p99_ms;    /*   and 99th percentile */
  size_t node_count;
  gpulease_map_node_stats *nodes;
} gpulease_map_stats;

/* Zeroes *stats (caller-owned) and sets its struct_version, ready for
 * gpulease_pool_map(). NULL is ignored. */
GPULEASE_API void gpulease_map_stats_init(gpulease_map_stats *stats);

/* Runs desc's kernel over every chunk of desc->input on the pool's nodes
 * and gathers the outputs in chunk order. Placement: leases go to the
 * nodes with the most room (free VRAM for a lease of the chunk's input
 * and output slices, live leases), at most max_leases_per_node each and
 * max_leases in all; each lease takes chunks from one queue until none
 * are left. stats (may be NULL; else struct_version set by
 * gpulease_map_stats_init()) is written whether or not the job succeeded,
 * once its version is checked. Every lease the map took is freed before it returns.
 * Errors: INVALID_ARGUMENT (desc or stats of unknown version, no chunk, a
 * chunk or output bigger than a lease can hold, a bad argument),
 * DISCONNECTED (no node could be
 * reached), CAPACITY_EXCEEDED (no node had room for a lease), TIMEOUT
 * (the deadline passed), the first non-retried status of a chunk
 * (LOAD_FAILED, LAUNCH_FAILED ... with the node's message), or the last
 * status of a chunk that failed max_attempts times; err's message names
 * the chunk and the node. */
GPULEASE_API gpulease_status gpulease_pool_map(gpulease_pool *pool, const gpulease_map_desc *desc,
                                               gpulease_map_stats *stats, gpulease_error *err);

/* Frees stats->nodes and zeroes node_count (the other fields stay). NULL is
 * ignored. */
GPULEASE_API void gpulease_map_stats_release(gpulease_map_stats *stats);

#ifdef __cplusplus
}
#endif
#endif /* GPULEASE_GPULEASE_H */
