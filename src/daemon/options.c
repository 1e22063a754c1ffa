/* options.c - see options.h. */
#include "daemon/options.h"

#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "daemon/config_file.h"
#include "daemon/ctx_admit.h"
#include "daemon/shards.h"
#include "proto/wire.h"

void gl_options_usage(FILE *f) {
  fputs("usage: gpuleased [options]\n"
        "  --config FILE         read options from FILE, an INI file of `key = value` lines\n"
        "                        in [gpuleased], a key for every flag here (its name without\n"
        "                        the dashes; true/false for a flag without a value); flags\n"
        "                        on the command line win over it (default:\n"
        "                        " GL_CONFIG_DEFAULT_PATH " when it exists; \"none\": no file)\n"
        "  --check-config        check the configuration file and the command line, print\n"
        "                        \"FILE: OK\" and exit (0; 2 with the error), starting nothing\n"
        "  --listen HOST:PORT    UDP address to serve QUIC on (default 127.0.0.1:5701)\n"
        "  --cert FILE           PEM certificate chain (with --key)\n"
        "  --key FILE            PEM private key\n"
        "  --state-dir DIR       state directory; holds the self-signed certificate made\n"
        "                        when no --cert is given (default $STATE_DIRECTORY,\n"
        "                        /var/lib/gpuleased as root, else ~/.local/state/gpuleased)\n"
        "  --max-ttl SECONDS     longest lease TTL granted (default 300)\n"
        "  --max-leases N        live leases at most (default 1024)\n"
        "  --max-message BYTES   largest request or response (default 256M)\n"
        "  --log-level LEVEL     error, warn, info (default) or debug\n"
        "  --ready-file FILE     write \"PORT FINGERPRINT\" there once serving\n"
        "  --device MODE         auto (default): the node's GPUs, or the emulated device\n"
        "                        when it has none; cuda: real GPUs only; emu: only the\n"
        "                        emulated device, which runs PTX on the CPU\n"
        "  --emu-vram BYTES      the emulated device's VRAM, taken from host memory as\n"
        "                        leases need it (default 1G)\n"
        "  --emu-threads N       host threads an emulated launch may use (default 1:\n"
        "                        blocks run in order, results are deterministic)\n"
        "  --emu-gpus N          emulated GPUs offered, EMU-0 .. EMU-(N-1), each with\n"
        "                        --emu-vram of its own (1..64; default 1)\n"
        "  --placement POLICY    where a lease asked for any GPU goes: spread (default;\n"
        "                        the GPU with the most VRAM left, so load evens out) or\n"
        "                        pack (the GPU with the least VRAM left that still takes\n"
        "                        it: as few GPUs as the leases need)\n"
        "  --seq-timeout-ms MS   how long a session's ops held for a lower seq wait for it\n"
        "                        before that seq is given up (default 10000)\n"
        "  --max-streams N       request streams a connection may have open at once\n"
        "                        (default 1024; the window a client may pipeline)\n"
        "  --local-socket PATH   Unix socket for clients on this node, which may hand over\n"
        "                        shared memory for fast transfers (default\n"
        "                        <state-dir>/gpuleased.sock; \"none\": no such socket)\n"
        "  --local-socket-mode MODE  its file mode, octal (default 0660: owner and group)\n"
        "  --max-pinned BYTES    shared memory the daemon page-locks for all leases together:\n"
        "                        clients' segments, and a 128 MiB arena a lease for large\n"
        "                        QUIC transfers (default: half of physical memory)\n"
        "  --net-threads N       network threads, each serving a stripe port of its own,\n"
        "                        over which clients stripe large transfers (0..16; default\n"
        "                        8 on 16 or more cores, 4 on 8 to 15, 2 on 4 to 7, else 0)\n"
        "  --control-threads N   threads that serve the main port together (SO_REUSEPORT):\n"
        "                        TLS, QUIC and decoding of many connections on N cores,\n"
        "                        leases and sessions on the main loop (1..16; default 1:\n"
        "                        the main loop serves it)\n"
        "  --stripe-port PORT    the first stripe port, the others follow it (default: the\n"
        "                        listen port + 1, or free ports when that is 0)\n"
        "  --warm-workers N      worker processes a GPU kept started, device open, ahead of\n"
        "                        leases, so that a lease does not wait for CUDA's start\n"
        "                        (0..16; default 2; each holds a CUDA context)\n"
        "  --context-overhead BYTES  the VRAM a CUDA context takes, counted once per\n"
        "                        isolated lease in the capacity check (default: measured\n"
        "                        over the warm workers at start, else 330M)\n"
        "  --auth MODE           who clients are (docs/security.md): none (default; every\n"
        "                        client is the anonymous tenant, refused beyond loopback\n"
        "                        without --allow-anonymous), mtls (client certificates\n"
        "                        from --client-ca; the tenant is the URI SAN, else the\n"
        "                        CN) or token (bearer tokens of --tenants, AUTHENTICATE)\n"
        "  --client-ca FILE      PEM CA certificates that client certificates chain to\n"
        "  --client-crl FILE     CRLs (PEM or DER, signed by a --client-ca CA): client\n"
        "                        certificates they list are refused, open connections\n"
        "                        closed when a reload adds them\n"
        "  --tenants FILE        tenants: bearer tokens, quotas and admins (INI; see\n"
        "                        docs/security.md); quotas apply under every --auth\n"
        "  --allow-anonymous     serve --auth none on an address beyond loopback\n"
        "  --max-requests-per-tenant N  requests one tenant may have in flight, and\n"
        "                        unfinished (header in, body not); beyond: BUSY on the\n"
        "                        header (default 16384)\n"
        "  --max-buffered-per-connection BYTES  what the headers of a connection's\n"
        "                        unfinished requests may declare in all; one more past\n"
        "                        it: BUSY on its header (default 512M)\n"
        "  --max-buffered-per-tenant BYTES  the same for all of a tenant's connections\n"
        "                        (default 1G)\n"
        "  --max-connections-per-address N  QUIC connections from one IP address that\n"
        "                        completed their handshake (default 64)\n"
        "  --retry-above-handshakes N  answer new connections with a QUIC Retry (address\n"
        "                        validation) while N handshakes are under way (default\n"
        "                        64; 0: never)\n"
        "  --retry-above-address-handshakes N  the same while N handshakes from the\n"
        "                        client's IP address are under way (default 8; with\n"
        "                        Retry off such Initials are dropped); a client that\n"
        "                        answers the Retry is still admitted\n"
        "  --handshake-timeout-ms MS  a QUIC connection whose handshake has not completed\n"
        "                        this long after its first packet is dropped (100..60000;\n"
        "                        default 5000)\n"
        "  --teardown-timeout-ms MS  how long an ended lease's worker, tearing down alone,\n"
        "                        may take to exit before its GPU is fenced if its memory\n"
        "                        has not come back (NVML): no new leases until it does or\n"
        "                        an admin unfences it (10..3600000; default 10000)\n"
        "  --teardown-per-context-ms MS  added to that deadline, and to a freed lease's 2 s\n"
        "                        to release its worker, for each other worker of the GPU\n"
        "                        tearing down at the same time (or twice the measured time\n"
        "                        a context takes, when longer); 0..60000, default 250\n"
        "  --max-isolated-contexts N  CUDA contexts of its own a GPU holds at once: warm\n"
        "                        workers, spares, isolated and device leases' workers, the\n"
        "                        shared context, and those being torn down (1..4096;\n"
        "                        default 16: an H200 holds about 100, but each one more\n"
        "                        slows the driver's work in all; lowered by itself when\n"
        "                        the driver refuses one below it). A LEASE_ALLOC beyond\n"
        "                        it waits, then gets\n"
        "                        CAPACITY_EXCEEDED\n"
        "  --isolated-queue-max N  LEASE_ALLOCs that may wait for a context, all GPUs and\n"
        "                        tenants (0..65536; default 256; a tenant at most half);\n"
        "                        beyond: CAPACITY_EXCEEDED at once\n"
        "  --isolated-queue-ms MS  how long each waits, served round robin across tenants\n"
        "                        (0..600000; default 1000; 0: CAPACITY_EXCEEDED at once)\n"
        "  --max-contexts-starting N  new CUDA contexts made at once on a GPU for leases;\n"
        "                        beyond, a LEASE_ALLOC waits for a spare or for one of\n"
        "                        them (0..4096, 0: no cap; default 4)\n"
        "  --audit-log FILE      append a JSON line per lease op, session open and close,\n"
        "                        module load and refused request (\"-\": stderr)\n"
        "  --worker-user USER    the user workers run as (default: nobody when gpuleased\n"
        "                        runs as root, else gpuleased's own user)\n"
        "  --nvjitlink PATH      nvJitLink (libnvJitLink.so, or a folder holding it) for PTX\n"
        "                        newer than the driver takes (default: the CUDA toolkit's,\n"
        "                        or a pip nvidia-nvjitlink wheel's, when installed)\n"
        "  --no-worker-sandbox   workers keep every privilege (debugging only; by default\n"
        "                        each takes the worker user, no_new_privs, limits, a\n"
        "                        seccomp filter and Landlock file rules before it opens the\n"
        "                        device: docs/security.md)\n"
        "  --metrics-listen HOST:PORT  serve Prometheus metrics over HTTP at /metrics there\n"
        "                        (default: none)\n"
        "  --help\n",
        f);
}

static void default_state_dir(char *out, size_t len) {
  const char *sd = getenv("STATE_DIRECTORY");
  const char *home = getenv("HOME");
  if (sd && *sd) snprintf(out, len, "%s", sd);
  else if (geteuid() == 0) snprintf(out, len, "/var/lib/gpuleased");
  else if (home && *home) snprintf(out, len, "%s/.local/state/gpuleased", home);
  else snprintf(out, len, "/tmp/gpuleased-%d", (int)geteuid());
}

static int copy_arg(char *dst, size_t len, const char *src, const char *name, char *err,
                    size_t errlen) {
  if (strlen(src) >= len) {
    snprintf(err, errlen, "%s: value too long (at most %zu bytes)", name, len - 1);
    return -1;
  }
  snprintf(dst, len, "%s", src);
  return 0;
}

enum { O_LISTEN = 256, O_CERT, O_KEY, O_STATE, O_TTL, O_LEASES, O_MSG, O_LOG, O_READY, O_WORKER,
       O_DEVICE, O_EMU_VRAM, O_EMU_THREADS, O_JIT_CACHE, O_SEQ_TIMEOUT, O_MAX_STREAMS,
       O_LOCAL_SOCKET, O_LOCAL_MODE, O_MAX_PINNED, O_NET_THREADS, O_CONTROL_THREADS,
       O_STRIPE_PORT, O_WARM,
       O_CTX_OVERHEAD, O_CUDA_VISIBLE, O_NO_SANDBOX, O_AUTH, O_CLIENT_CA, O_CLIENT_CRL, O_TENANTS,
       O_ALLOW_ANON, O_AUDIT, O_WORKER_USER, O_NVJITLINK, O_MAX_REQ_TENANT, O_MAX_CONN_ADDR, O_RETRY_ABOVE,
       O_RETRY_ABOVE_ADDR, O_HS_TIMEOUT, O_TEARDOWN, O_TEARDOWN_STEP, O_METRICS, O_CONFIG, O_CHECK_CONFIG,
       O_EMU_GPUS, O_PLACEMENT, O_BUF_CONN, O_BUF_TENANT, O_MAX_ISO_CTX, O_ISO_QUEUE_MAX,
       O_ISO_QUEUE_MS, O_CTX_STARTING };

/* The command line; the configuration file's keys are the same names. */
static const struct option opts[] = {
    {"listen", required_argument, 0, O_LISTEN},  {"cert", required_argument, 0, O_CERT},
    {"key", required_argument, 0, O_KEY},        {"state-dir", required_argument, 0, O_STATE},
    {"max-ttl", required_argument, 0, O_TTL},    {"max-leases", required_argument, 0, O_LEASES},
    {"max-message", required_argument, 0, O_MSG}, {"log-level", required_argument, 0, O_LOG},
    {"ready-file", required_argument, 0, O_READY}, {"worker", required_argument, 0, O_WORKER},
    {"device", required_argument, 0, O_DEVICE},  {"emu-vram", required_argument, 0, O_EMU_VRAM},
    {"emu-threads", required_argument, 0, O_EMU_THREADS},
    {"jit-cache", required_argument, 0, O_JIT_CACHE}, /* worker only */
    {"seq-timeout-ms", required_argument, 0, O_SEQ_TIMEOUT},
    {"max-streams", required_argument, 0, O_MAX_STREAMS},
    {"local-socket", required_argument, 0, O_LOCAL_SOCKET},
    {"local-socket-mode", required_argument, 0, O_LOCAL_MODE},
    {"max-pinned", required_argument, 0, O_MAX_PINNED},
    {"net-threads", required_argument, 0, O_NET_THREADS},
    {"control-threads", required_argument, 0, O_CONTROL_THREADS},
    {"stripe-port", required_argument, 0, O_STRIPE_PORT},
    {"warm-workers", required_argument, 0, O_WARM},
    {"context-overhead", required_argument, 0, O_CTX_OVERHEAD},
    {"cuda-visible-devices", required_argument, 0, O_CUDA_VISIBLE}, /* worker only */
    {"no-worker-sandbox", no_argument, 0, O_NO_SANDBOX},
    {"worker-user", required_argument, 0, O_WORKER_USER},
    {"nvjitlink", required_argument, 0, O_NVJITLINK},
    {"max-requests-per-tenant", required_argument, 0, O_MAX_REQ_TENANT},
    {"max-buffered-per-connection", required_argument, 0, O_BUF_CONN},
    {"max-buffered-per-tenant", required_argument, 0, O_BUF_TENANT},
    {"max-connections-per-address", required_argument, 0, O_MAX_CONN_ADDR},
    {"retry-above-handshakes", required_argument, 0, O_RETRY_ABOVE},
    {"retry-above-address-handshakes", required_argument, 0, O_RETRY_ABOVE_ADDR},
    {"handshake-timeout-ms", required_argument, 0, O_HS_TIMEOUT},
    {"teardown-timeout-ms", required_argument, 0, O_TEARDOWN},
    {"teardown-per-context-ms", required_argument, 0, O_TEARDOWN_STEP},
    {"max-isolated-contexts", required_argument, 0, O_MAX_ISO_CTX},
    {"isolated-queue-max", required_argument, 0, O_ISO_QUEUE_MAX},
    {"isolated-queue-ms", required_argument, 0, O_ISO_QUEUE_MS},
    {"max-contexts-starting", required_argument, 0, O_CTX_STARTING},
    {"auth", required_argument, 0, O_AUTH},
    {"client-ca", required_argument, 0, O_CLIENT_CA},
    {"client-crl", required_argument, 0, O_CLIENT_CRL},
    {"tenants", required_argument, 0, O_TENANTS},
    {"allow-anonymous", no_argument, 0, O_ALLOW_ANON},
    {"audit-log", required_argument, 0, O_AUDIT},
    {"metrics-listen", required_argument, 0, O_METRICS},
    {"emu-gpus", required_argument, 0, O_EMU_GPUS},
    {"placement", required_argument, 0, O_PLACEMENT},
    {"config", required_argument, 0, O_CONFIG},
    {"check-config", no_argument, 0, O_CHECK_CONFIG},
    {"help", no_argument, 0, 'h'},               {0, 0, 0, 0}};

/* Applies one option (from the command line, or a key of the file): name
 * is how the messages call it ("--max-ttl", "max-ttl"); value its argument,
 * for an option without one "true" or "false" (NULL: true). 0, or -1 with
 * a message in err. */
static int apply_option(gl_options *cl, int code, const char *name, const char *value, char *err,
                        size_t errlen) {
  gl_daemon_config *cfg = &cl->cfg;
  bool on = !value || strcmp(value, "false") != 0;
  if (!value) value = "";
  uint64_t v;
  switch (code) {
  case O_LISTEN:
    if (gl_parse_hostport(value, GL_DEFAULT_PORT, cfg->listen_host, sizeof cfg->listen_host,
                          &cfg->listen_port) != 0) {
      snprintf(err, errlen, "%s: expected HOST:PORT, got '%s'", name, value);
      return -1;
    }
    break;
  case O_CERT:
    if (copy_arg(cfg->cert_file, sizeof cfg->cert_file, value, name, err, errlen)) return -1;
    break;
  case O_AUTH:
    if (gl_auth_mode_parse(value, &cfg->auth_mode) != 0) {
      snprintf(err, errlen, "%s: expected none, mtls or token, got '%s'", name, value);
      return -1;
    }
    break;
  case O_CLIENT_CA:
    if (copy_arg(cfg->client_ca, sizeof cfg->client_ca, value, name, err, errlen)) return -1;
    break;
  case O_CLIENT_CRL:
    if (copy_arg(cfg->client_crl, sizeof cfg->client_crl, value, name, err, errlen)) return -1;
    break;
  case O_TENANTS:
    if (copy_arg(cfg->tenants_file, sizeof cfg->tenants_file, value, name, err, errlen)) return -1;
    break;
  case O_ALLOW_ANON:
    cfg->allow_anonymous = on;
    break;
  case O_MAX_REQ_TENANT:
    if (gl_parse_u64(value, 1u << 24, &v) != 0 || v == 0) {
      snprintf(err, errlen, "%s: expected 1..16777216, got '%s'", name,
              value);
      return -1;
    }
    cfg->max_requests_per_tenant = (uint32_t)v;
    break;
  case O_BUF_CONN:
  case O_BUF_TENANT:
    if (gl_parse_size(value, &v) != 0 || v < (1u << 20) || v > (1ull << 40)) {
      snprintf(err, errlen, "%s: expected 1M..1T, got '%s'", name, value);
      return -1;
    }
    if (code == O_BUF_CONN) cfg->max_buffered_per_connection = v;
    else cfg->max_buffered_per_tenant = v;
    break;
  case O_MAX_CONN_ADDR:
    if (gl_parse_u64(value, 1u << 20, &v) != 0 || v == 0) {
      snprintf(err, errlen, "%s: expected 1..1048576, got '%s'", name,
              value);
      return -1;
    }
    cfg->max_connections_per_address = (uint32_t)v;
    break;
  case O_TEARDOWN:
    if (gl_parse_u64(value, 3600000, &v) != 0 || v < 10) {
      snprintf(err, errlen, "%s: expected 10..3600000, got '%s'", name,
              value);
      return -1;
    }
    cfg->teardown_timeout_ms = (uint32_t)v;
    break;
  case O_TEARDOWN_STEP:
    if (gl_parse_u64(value, 60000, &v) != 0) {
      snprintf(err, errlen, "%s: expected 0..60000, got '%s'", name, value);
      return -1;
    }
    cfg->teardown_per_context_ms = (uint32_t)v;
    break;
  case O_MAX_ISO_CTX:
    if (gl_parse_u64(value, GL_CTX_ADMIT_MAX_LIMIT, &v) != 0 || v == 0) {
      snprintf(err, errlen, "%s: expected 1..%u, got '%s'", name, GL_CTX_ADMIT_MAX_LIMIT, value);
      return -1;
    }
    cfg->max_isolated_contexts = (unsigned)v;
    break;
  case O_ISO_QUEUE_MAX:
    if (gl_parse_u64(value, GL_CTX_ADMIT_MAX_QUEUE, &v) != 0) {
      snprintf(err, errlen, "%s: expected 0..%u, got '%s'", name, GL_CTX_ADMIT_MAX_QUEUE, value);
      return -1;
    }
    cfg->isolated_queue_max = (unsigned)v;
    break;
  case O_ISO_QUEUE_MS:
    if (gl_parse_u64(value, GL_CTX_ADMIT_MAX_QUEUE_MS, &v) != 0) {
      snprintf(err, errlen, "%s: expected 0..%u, got '%s'", name, GL_CTX_ADMIT_MAX_QUEUE_MS,
               value);
      return -1;
    }
    cfg->isolated_queue_ms = (unsigned)v;
    break;
  case O_CTX_STARTING:
    if (gl_parse_u64(value, GL_CTX_ADMIT_MAX_LIMIT, &v) != 0) {
      snprintf(err, errlen, "%s: expected 0..%u, got '%s'", name, GL_CTX_ADMIT_MAX_LIMIT, value);
      return -1;
    }
    cfg->max_contexts_starting = (unsigned)v;
    break;
  case O_RETRY_ABOVE:
    if (gl_parse_u64(value, UINT32_MAX, &v) != 0) {
      snprintf(err, errlen, "%s: expected a number, got '%s'", name,
              value);
      return -1;
    }
    cfg->retry_above_handshakes = v == 0 ? UINT32_MAX : (uint32_t)v;
    break;
  case O_RETRY_ABOVE_ADDR:
    if (gl_parse_u64(value, 1u << 20, &v) != 0 || v == 0) {
      snprintf(err, errlen, "%s: expected 1..1048576, got '%s'", name, value);
      return -1;
    }
    cfg->retry_above_address_handshakes = (uint32_t)v;
    break;
  case O_HS_TIMEOUT:
    if (gl_parse_u64(value, 60000, &v) != 0 || v < 100) {
      snprintf(err, errlen, "%s: expected 100..60000, got '%s'", name, value);
      return -1;
    }
    cfg->handshake_timeout_ms = (uint32_t)v;
    break;
  case O_AUDIT:
    if (copy_arg(cfg->audit_log, sizeof cfg->audit_log, value, name, err, errlen)) return -1;
    break;
  case O_KEY:
    if (copy_arg(cfg->key_file, sizeof cfg->key_file, value, name, err, errlen)) return -1;
    break;
  case O_STATE:
    if (copy_arg(cfg->state_dir, sizeof cfg->state_dir, value, name, err, errlen)) return -1;
    break;
  case O_READY:
    if (copy_arg(cfg->ready_file, sizeof cfg->ready_file, value, name, err, errlen)) return -1;
    break;
  case O_TTL:
    if (gl_parse_u64(value, 7 * 24 * 3600, &v) != 0 || v == 0) {
      snprintf(err, errlen, "%s: expected 1..604800 seconds, got '%s'", name, value);
      return -1;
    }
    cfg->max_ttl_s = (uint32_t)v;
    break;
  case O_LEASES:
    if (gl_parse_u64(value, 100000, &v) != 0 || v == 0) {
      snprintf(err, errlen, "%s: expected 1..100000, got '%s'", name, value);
      return -1;
    }
    cfg->max_leases = (size_t)v;
    break;
  case O_MSG:
    if (gl_parse_size(value, &v) != 0 || v < 65536 || v > (2ull << 30)) {
      snprintf(err, errlen, "%s: expected 64K..2G, got '%s'", name, value);
      return -1;
    }
    cfg->max_message_bytes = (size_t)v;
    break;
  case O_LOG:
    if (gl_log_level_parse(value) < 0) {
      snprintf(err, errlen, "%s: expected error|warn|info|debug, got '%s'", name, value);
      return -1;
    }
    snprintf(cfg->log_level, sizeof cfg->log_level, "%s", value);
    break;
  case O_DEVICE:
    if (strcmp(value, "auto") == 0) cfg->device_mode = GL_DEVICE_AUTO;
    else if (strcmp(value, "cuda") == 0) cfg->device_mode = GL_DEVICE_CUDA;
    else if (strcmp(value, "emu") == 0) cfg->device_mode = GL_DEVICE_EMU;
    else {
      snprintf(err, errlen, "%s: expected auto, cuda or emu, got '%s'", name, value);
      return -1;
    }
    cl->device_given = true;
    break;
  case O_EMU_VRAM:
    if (gl_parse_size(value, &v) != 0 || v < 4096 || v > (1ull << 40)) {
      snprintf(err, errlen, "%s: expected 4K..1T bytes, got '%s'", name, value);
      return -1;
    }
    cfg->emu_vram_bytes = v;
    break;
  case O_EMU_THREADS:
    if (gl_parse_u64(value, 1024, &v) != 0 || v == 0) {
      snprintf(err, errlen, "%s: expected 1..1024, got '%s'", name, value);
      return -1;
    }
    cfg->emu_threads = (unsigned)v;
    break;
  case O_SEQ_TIMEOUT:
    if (gl_parse_u64(value, 3600000, &v) != 0 || v < 10) {
      snprintf(err, errlen, "%s: expected 10..3600000, got '%s'", name, value);
      return -1;
    }
    cfg->seq_timeout_ms = (unsigned)v;
    break;
  case O_MAX_STREAMS:
    if (gl_parse_u64(value, 65536, &v) != 0 || v < 16) {
      snprintf(err, errlen, "%s: expected 16..65536, got '%s'", name, value);
      return -1;
    }
    cfg->max_streams_per_conn = (unsigned)v;
    break;
  case O_LOCAL_SOCKET:
    if (strcmp(value, "none") == 0) cl->local_socket_given = 2;
    else if (copy_arg(cfg->local_socket, sizeof cfg->local_socket, value, name, err, errlen))
      return -1;
    else cl->local_socket_given = 1;
    break;
  case O_LOCAL_MODE: {
    char *end;
    unsigned long m = strtoul(value, &end, 8);
    if (!*value || *end || m > 0777) {
      snprintf(err, errlen, "%s: expected an octal mode such as 0660, "
              "got '%s'", name, value);
      return -1;
    }
    cfg->local_socket_mode = (unsigned)m;
    break;
  }
  case O_MAX_PINNED:
    if (gl_parse_size(value, &v) != 0) {
      snprintf(err, errlen, "%s: expected BYTES (K, M, G suffixes), got '%s'", name,
              value);
      return -1;
    }
    cfg->max_pinned_bytes = v;
    break;
  case O_NET_THREADS:
    if (gl_parse_u64(value, GL_WIRE_MAX_STRIPES, &v) != 0) {
      snprintf(err, errlen, "%s: expected 0..%d, got '%s'", name,
              GL_WIRE_MAX_STRIPES, value);
      return -1;
    }
    cfg->net_threads = (unsigned)v;
    break;
  case O_CONTROL_THREADS:
    if (gl_parse_u64(value, GL_SHARDS_MAX, &v) != 0 || v == 0) {
      snprintf(err, errlen, "%s: expected 1..%d, got '%s'", name, GL_SHARDS_MAX, value);
      return -1;
    }
    cfg->control_threads = (unsigned)v;
    break;
  case O_STRIPE_PORT:
    if (gl_parse_u64(value, 65535, &v) != 0 || v == 0) {
      snprintf(err, errlen, "%s: expected 1..65535, got '%s'", name, value);
      return -1;
    }
    cfg->stripe_port = (uint16_t)v;
    break;
  case O_WARM:
    if (gl_parse_u64(value, 16, &v) != 0) {
      snprintf(err, errlen, "%s: expected 0..16, got '%s'", name, value);
      return -1;
    }
    cfg->warm_workers = (unsigned)v;
    break;
  case O_CUDA_VISIBLE: /* a worker bound to a MIG instance: before cuInit */
    if (copy_arg(cl->visible, sizeof cl->visible, value, name, err, errlen)) return -1;
    if (setenv("CUDA_VISIBLE_DEVICES", value, 1) != 0) {
      snprintf(err, errlen, "%s: cannot set CUDA_VISIBLE_DEVICES", name);
      return -1;
    }
    break;
  case O_CTX_OVERHEAD:
    if (gl_parse_size(value, &v) != 0 || v >= (1ull << 40)) {
      snprintf(err, errlen, "%s: expected BYTES (K, M, G suffixes), "
                      "got '%s'", name, value);
      return -1;
    }
    cfg->context_overhead_bytes = v;
    break;
  case O_WORKER:
    if (gl_parse_u64(value, INT_MAX, &v) != 0) {
      snprintf(err, errlen, "%s: expected a descriptor, got '%s'", name, value);
      return -1;
    }
    cl->worker_fd = (int)v;
    break;
  case O_JIT_CACHE:
    if (copy_arg(cl->jit_cache_dir, sizeof cl->jit_cache_dir, value, name, err, errlen))
      return -1;
    break;
  case O_NO_SANDBOX: /* main() tells the workers (GL_WORKER_NO_SANDBOX) */
    cl->worker_sandbox = !on;
    break;
  case O_NVJITLINK:
    if (copy_arg(cl->nvjitlink, sizeof cl->nvjitlink, value, name, err, errlen)) return -1;
    break;
  case O_WORKER_USER:
    if (copy_arg(cl->worker_user, sizeof cl->worker_user, value, name, err, errlen)) return -1;
    cl->worker_user_given = true;
    break;
  case O_EMU_GPUS:
    if (gl_parse_u64(value, GPULEASE_MAX_GPUS, &v) != 0 || v == 0) {
      snprintf(err, errlen, "%s: expected 1..%d, got '%s'", name, GPULEASE_MAX_GPUS, value);
      return -1;
    }
    cfg->emu_gpus = (unsigned)v;
    break;
  case O_PLACEMENT:
    if (strcmp(value, "spread") == 0) cfg->placement = GL_PLACEMENT_SPREAD;
    else if (strcmp(value, "pack") == 0) cfg->placement = GL_PLACEMENT_PACK;
    else {
      snprintf(err, errlen, "%s: expected spread or pack, got '%s'", name, value);
      return -1;
    }
    break;
  case O_METRICS: {
    char host[256];
    uint16_t port;
    if (value[0] && gl_parse_hostport(value, 0, host, sizeof host, &port) != 0) {
      snprintf(err, errlen, "%s: expected HOST:PORT, got '%s'", name, value);
      return -1;
    }
    if (copy_arg(cfg->metrics_listen, sizeof cfg->metrics_listen, value, name, err, errlen))
      return -1;
    break;
  }
  default:
    snprintf(err, errlen, "%s: not an option here", name);
    return -1;
  }
  return 0;
}

static const struct option *option_by_name(const char *name) {
  for (const struct option *o = opts; o->name; o++)
    if (strcmp(o->name, name) == 0) return o;
  return NULL;
}

static const struct option *option_by_code(int code) {
  for (const struct option *o = opts; o->name; o++)
    if (o->val == code) return o;
  return NULL;
}

/* A key of the configuration file (gl_config_apply_fn). */
static int apply_key(void *user, const char *key, const char *value, char *err, size_t errlen) {
  const struct option *o = option_by_name(key);
  if (!o || o->val == 'h') {
    snprintf(err, errlen, "unknown key '%.64s'", key);
    return -1;
  }
  switch (o->val) {
  case O_WORKER: /* a worker's, which never reads the file */
  case O_JIT_CACHE:
  case O_CUDA_VISIBLE:
  case O_CONFIG:
  case O_CHECK_CONFIG:
    snprintf(err, errlen, "'%s' is for the command line only, not a key of the file", key);
    return -1;
  default:
    break;
  }
  if (o->has_arg == no_argument) {
    bool b;
    if (gl_config_parse_bool(value, &b) != 0) {
      snprintf(err, errlen, "%s: expected true or false, got '%.64s'", key, value);
      return -1;
    }
    value = b ? "true" : "false";
  }
  return apply_option(user, o->val, key, value, err, errlen);
}
int gl_options_parse(int argc, char **argv, gl_options *o, char *err, size_t errlen) {
  memset(o, 0, sizeof *o);
  gl_daemon_config_default(&o->cfg);
  default_state_dir(o->cfg.state_dir, sizeof o->cfg.state_dir);
  o->worker_fd = -1;
  o->worker_sandbox = true;

  /* The command line first, kept: the file's keys apply before it, so that
   * a flag wins over its key. */
  struct given {
    int code;
    const char *arg;
  } *given = calloc((size_t)argc + 1, sizeof *given);
  if (!given) {
    snprintf(err, errlen, "out of memory");
    return GL_OPTIONS_BAD;
  }
  size_t ngiven = 0;
  const char *config = NULL; /* --config */
  bool worker = false;
  int c, rc = 0;
  optind = 0; /* glibc: start afresh (a reload parses again) */
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    switch (c) {
    case 'h':
      rc = GL_OPTIONS_HELP;
      goto out;
    case '?':
      if (optopt) snprintf(err, errlen, "%s needs a value", argv[optind - 1]);
      else snprintf(err, errlen, "unknown option '%s'", argv[optind - 1]);
      rc = GL_OPTIONS_USAGE;
      goto out;
    case ':':
      snprintf(err, errlen, "%s needs a value", argv[optind - 1]);
      rc = GL_OPTIONS_USAGE;
      goto out;
    case O_CONFIG:
      config = optarg;
      break;
    case O_CHECK_CONFIG:
      o->check_config = true;
      break;
    default:
      if (c == O_WORKER) worker = true;
      given[ngiven++] = (struct given){c, optarg};
      break;
    }
  }
  if (optind != argc) {
    snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
    rc = GL_OPTIONS_USAGE;
    goto out;
  }
  /* The configuration file: the daemon's alone (a worker is told what it
   * needs on its command line). */
  const char *file = NULL;
  if (!worker) {
    if (config) {
      if (strcmp(config, "none") != 0) file = config;
    } else if (access(GL_CONFIG_DEFAULT_PATH, F_OK) == 0) {
      file = GL_CONFIG_DEFAULT_PATH;
    }
  }
  if (file && copy_arg(o->config_file, sizeof o->config_file, file, "--config", err, errlen)) {
    rc = GL_OPTIONS_BAD;
    goto out;
  }
  if (file && gl_config_file_parse(file, apply_key, o, err, errlen) != 0) {
    rc = GL_OPTIONS_BAD;
    goto out;
  }
  for (size_t i = 0; i < ngiven; i++) {
    char flag[64];
    const struct option *op = option_by_code(given[i].code);
    snprintf(flag, sizeof flag, "--%s", op ? op->name : "?");
    if (apply_option(o, given[i].code, flag, given[i].arg, err, errlen) != 0) {
      rc = GL_OPTIONS_BAD;
      goto out;
    }
  }
  gl_daemon_config *cfg = &o->cfg;
  if (o->local_socket_given == 2) {
    cfg->local_socket[0] = 0;
  } else if (!o->local_socket_given &&
             snprintf(cfg->local_socket, sizeof cfg->local_socket, "%s/gpuleased.sock",
                      cfg->state_dir) >= (int)sizeof cfg->local_socket) {
    cfg->local_socket[0] = 0; /* main() says why */
  }
out:
  free(given);
  return rc;
}
