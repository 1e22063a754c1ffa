/*
 * cli.h - shared state of the gpulease command-line tool.
 *
 * main.c parses every option in one pass (options may come before or after
 * the subcommand words) into a gl_cli; each cmd_*.c runs one subcommand and
 * returns the process exit code: 0 success, 1 the operation failed, 2 bad
 * usage.
 */
#ifndef GL_CLI_CLI_H
#define GL_CLI_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gpulease/gpulease.h"

#define CLI_MAX_ARGS GPULEASE_MAX_PARAMS

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };

typedef struct gl_cli {
  /* global */
  const char *addr, *ca_file, *pin_sha256;
  const char *cert_file, *key_file, *bearer_token; /* --cert, --key, --token / $GPULEASE_TOKEN */
  bool insecure, json;
  uint32_t timeout_ms;
  /* lease */
  bool have_vram, have_ttl, have_gpu;
  uint64_t vram_bytes;
  uint32_t ttl_s, gpu_index;
  const char *gpu_uuid;   /* --gpu UUID: gpu_index comes from the inventory (cli_pick_gpu) */
  gpulease_lease_opts lease_opts; /* --class, --printf-fifo, --malloc-heap */
  const char *secret_hex; /* --secret or $GPULEASE_SECRET */
  bool rotate;            /* lease renew --rotate */
  const char *rights;     /* lease delegate --rights */
  const char *to_tenant;  /* lease delegate --to */
  const char *reason;     /* lease revoke --reason */
  const char *lease_id_str;
  /* submit */
  const char *binary, *kernel, *input_file, *output_file, *format, *image_format;
  uint32_t grid[3], block[3];
  uint32_t shared_mem_bytes;
  gpulease_launch_attrs attrs; /* --cooperative, --cluster (submit and launch) */
  uint64_t input_offset, output_offset, output_size;
  bool have_output_size;
  gpulease_param params[CLI_MAX_ARGS];
  size_t param_count;
  /* the same --arg list for a session launch: buf:HANDLE[+OFFSET] and the
   * scalar types (ptr: is submit's only, buf: launch's only) */
  gpulease_arg launch_args[CLI_MAX_ARGS];
  bool have_ptr_arg, have_buf_arg;
  /* sessions */
  const char *session_str, *module_str;
  uint64_t size_bytes, offset;
  bool have_size, have_offset, have_ack;
  uint64_t ack_seq;
  bool quiet; /* no transfer progress on stderr */
  /* top */
  const char *metrics_url; /* --metrics URL or "none" */
  double interval_s;       /* --interval; 0: the default */
  bool once;               /* --once */
  bool help;               /* --help: print help, run nothing */
  /* pool */
  const char *nodes, *nodes_file, *srv_name, *dns_server; /* --nodes, --nodes-file, --srv, --dns-server */
  uint64_t chunk_bytes, output_bytes_per_chunk;           /* --chunk-bytes, --output-bytes-per-chunk */
  uint32_t max_leases_per_node, max_leases, attempts;     /* 0: the library's defaults */
  double deadline_s;                                      /* --deadline; 0: the default */
  const char *arg_text[CLI_MAX_ARGS]; /* each --arg as given (pool map's @in, @out ...) */
  bool have_chunk_arg;                /* an --arg naming the chunk (TYPE:@NAME) */
  /* positionals after the subcommand */
  char **words;
  int nwords;
  /* -1, or the number of words before the first "--": every argument after
   * it is a word, even one that looks like an option (exec's COMMAND) */
  int dashdash;
  /* bit set of options given, for "does not apply" checks */
  uint64_t given;
} gl_cli;

/* Option bits for gl_cli.given. */
enum {
  OPT_VRAM = 1 << 0, OPT_TTL = 1 << 1, OPT_GPU = 1 << 2, OPT_SECRET = 1 << 3,
  OPT_BINARY = 1 << 4, OPT_KERNEL = 1 << 5, OPT_GRID = 1 << 6, OPT_BLOCK = 1 << 7,
  OPT_SHMEM = 1 << 8, OPT_INPUT = 1 << 9, OPT_INPUT_OFF = 1 << 10, OPT_OUTPUT_OFF = 1 << 11,
  OPT_OUTPUT_SIZE = 1 << 12, OPT_FORMAT = 1 << 13, OPT_ARG = 1 << 14, OPT_LEASE = 1 << 15,
  OPT_IMAGE_FORMAT = 1 << 16, OPT_OUTPUT = 1 << 17, OPT_SESSION = 1 << 18, OPT_SIZE = 1 << 19,
  OPT_OFFSET = 1 << 20, OPT_MODULE = 1 << 21, OPT_ACK = 1 << 22, OPT_CLASS = 1 << 23,
  OPT_PRINTF_FIFO = 1 << 24, OPT_MALLOC_HEAP = 1 << 25, OPT_COOP = 1 << 26,
  OPT_CLUSTER = 1 << 27, OPT_ROTATE = 1 << 28, OPT_RIGHTS = 1 << 29, OPT_TO = 1 << 30,
};
#define OPT_REASON (1ull << 31)
#define OPT_METRICS (1ull << 32)
#define OPT_INTERVAL (1ull << 33)
#define OPT_ONCE (1ull << 34)
#define OPT_NODES (1ull << 35)
#define OPT_NODES_FILE (1ull << 36)
#define OPT_SRV (1ull << 37)
#define OPT_DNS_SERVER (1ull << 38)
#define OPT_CHUNK_BYTES (1ull << 39)
#define OPT_OUT_PER_CHUNK (1ull << 40)
#define OPT_MAX_PER_NODE (1ull << 41)
#define OPT_MAX_LEASES (1ull << 42)
#define OPT_ATTEMPTS (1ull << 43)
#define OPT_DEADLINE (1ull << 44)

/* --format of submit and mem read. */
enum cli_out_format { CLI_F_F32, CLI_F_I32, CLI_F_U32, CLI_F_HEX, CLI_F_RAW };

struct json_object;
/* Adds n output bytes p to JSON object o in format f (enum
 * cli_out_format): "output_hex" for hex/raw, else "format" and "values". */
void cli_json_add_output(struct json_object *o, const uint8_t *p, size_t n, int f);

/* Fills *o with the global connection options (--addr ... --timeout). */
void cli_connect_options(const gl_cli *cli, gpulease_connect_options *o);

/* Connects with the global options; on failure reports and returns NULL. */
gpulease_client *cli_connect(const gl_cli *cli);

/* Prints the kernels' printf output of c's later submits and session
 * syncs on stderr, each line prefixed "kernel: " (kout.c). cli_connect
 * does it for every command. */
void cli_kernel_output_on(gpulease_client *c);

/* Reports a failed call: "gpulease: WHAT: STATUS: message" on stderr, or a
 * JSON error object on stdout with --json. Returns EXIT_FAILED. */
int cli_fail(const gl_cli *cli, const char *what, const gpulease_error *err);

/* The GPU a lease asks for: --gpu's index, the index of --gpu's UUID in the
 * daemon's inventory, or GPULEASE_ANY_GPU without --gpu. EXIT_OK, or
 * EXIT_FAILED with the reason printed (an unknown UUID names the node's). */
int cli_pick_gpu(gl_cli *cli, gpulease_client *c, uint32_t *gpu);

/* Reports a usage error on stderr. Returns EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Refuses options in `given` that are not in `allowed`. 0 or EXIT_USAGE. */
int cli_only(const gl_cli *cli, uint64_t allowed, const char *cmd);

/* Parses a --arg value ("ptr:OFFSET", "i32:-5", "f32:2.5", "u64:7",
 * "bytes:HEX", ...). 0 or -1 with a message in err. */
int cli_parse_arg(const char *s, gpulease_param *out, char *err, size_t errlen);

/* Parses a launch --arg: "buf:HANDLE[+OFFSET]" or a scalar type as
 * cli_parse_arg ("ptr:" is refused). 0 or -1 with a message in err. */
int cli_parse_launch_arg(const char *s, gpulease_arg *out, char *err, size_t errlen);

/* Parses a handle or session id: decimal or 0x-prefixed hex, not 0. 0 or -1. */
int cli_parse_handle(const char *s, uint64_t *out);

/* Parses --format (f32, i32, u32, hex, raw). 0 or -1. */
int cli_parse_out_format(const char *s, enum cli_out_format *f);

/* Parses --image-format (auto, ptx, cubin, fatbin). 0 or -1. */
int cli_parse_image_format(const char *s, gpulease_image_format *f);

/* Prints n bytes as rows of 4-byte values (f32, i32, u32) or as a hex dump. */
void cli_print_values_text(const uint8_t *p, size_t n, enum cli_out_format f);
void cli_print_hex_text(const uint8_t *p, size_t n);

/* Parses "X", "X,Y" or "X,Y,Z" (missing ones are 1). 0 or -1. */
int cli_parse_dim3(const char *s, uint32_t out[3]);

/* Reads the lease from ID and --secret / $GPULEASE_SECRET. 0 or EXIT_USAGE. */
int cli_lease_from_args(const gl_cli *cli, const char *id_str, gpulease_lease *out);

/* Prints a lease (alloc/renew/show) as text or JSON. */
void cli_print_lease(const gl_cli *cli, const gpulease_lease *l, bool with_secret);

int cmd_inventory(gl_cli *cli);
int cmd_lease(gl_cli *cli);
int cmd_admin(gl_cli *cli);   /* admin unfence */
int cmd_submit(gl_cli *cli);
int cmd_session(gl_cli *cli); /* session open|close|sync */
int cmd_mem(gl_cli *cli);     /* mem alloc|free|write|read */
int cmd_module(gl_cli *cli);  /* module load|unload */
int cmd_func(gl_cli *cli);    /* func info */
int cmd_launch(gl_cli *cli);
int cmd_top(gl_cli *cli);     /* a live view of one node (cmd_top.c) */
int cmd_pool(gl_cli *cli);    /* pool map|inventory over many nodes (cmd_pool.c) */
int cmd_exec(gl_cli *cli);    /* a program under a fresh lease, with the CUDA shim (cmd_exec.c) */

/* help.c: the help texts. cli_help_all prints everything: usage, global
 * options, every command's section. */
void cli_help_all(FILE *f);
/* One command's usage and section. 0, or -1 when name is no command. */
int cli_help_command(FILE *f, const char *name);

#endif
