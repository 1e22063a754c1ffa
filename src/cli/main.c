/*
 * main.c - the gpulease command-line tool: option parsing and dispatch.
 *
 *   gpulease [global options] inventory
 *   gpulease [global options] lease alloc --vram BYTES --ttl SECONDS [--gpu N]
 *            [--class isolated|shared|device|partition] [--printf-fifo BYTES]
 *            [--malloc-heap BYTES]
 *   gpulease [global options] lease renew ID --secret S --ttl SECONDS [--rotate]
 *   gpulease [global options] lease show|free ID --secret S
 *   gpulease [global options] lease delegate ID --secret S --rights LIST [--ttl S]
 *            [--to TENANT]
 *   gpulease [global options] lease revoke ID [--reason TEXT]
 *   gpulease [global options] admin unfence GPU
 *   gpulease [global options] submit --binary FILE --kernel NAME ...
 *   gpulease [global options] session open|close|sync ...
 *   gpulease [global options] mem alloc|free|write|read ...
 *   gpulease [global options] module load|unload ...
 *   gpulease [global options] func info ...
 *   gpulease [global options] launch --session SID --module HANDLE ...
 *   gpulease [global options] top [--metrics URL|none] [--interval SECONDS] [--once]
 *   gpulease [global options] pool map (--nodes LIST | --nodes-file FILE | --srv NAME) ...
 *   gpulease [global options] pool inventory (--nodes LIST | --nodes-file FILE | --srv NAME)
 *   gpulease [global options] exec --vram BYTES [lease options] -- COMMAND [ARGS...]
 *   gpulease help [COMMAND], gpulease [COMMAND] --help
 *
 * Options may stand before or after the subcommand words, up to the first
 * "--": every argument after it is a word (exec's COMMAND and its options).
 * The help texts are in help.c.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/util.h"

enum {
  O_ADDR = 256, O_CA, O_PIN, O_INSECURE, O_JSON, O_TIMEOUT, O_VRAM, O_TTL, O_GPU, O_SECRET,
  O_BINARY, O_KERNEL, O_GRID, O_BLOCK, O_SHMEM, O_INPUT, O_INPUT_OFF, O_OUTPUT_OFF,
  O_OUTPUT_SIZE, O_FORMAT, O_ARG, O_LEASE, O_IMAGE_FORMAT, O_OUTPUT, O_SESSION, O_SIZE,
  O_OFFSET, O_MODULE, O_ACK, O_QUIET, O_CLASS, O_PRINTF_FIFO, O_MALLOC_HEAP, O_COOP,
  O_CLUSTER, O_CERT, O_KEY, O_TOKEN, O_ROTATE, O_RIGHTS, O_TO, O_REASON, O_METRICS, O_INTERVAL,
  O_ONCE, O_NODES, O_NODES_FILE, O_SRV, O_DNS_SERVER, O_CHUNK_BYTES, O_OUT_PER_CHUNK,
  O_MAX_PER_NODE, O_MAX_LEASES, O_ATTEMPTS, O_DEADLINE,
};

static int parse_size_opt(const char *name, const char *v, uint64_t max, uint64_t *out) {
  if (gl_parse_size(v, out) != 0 || *out > max)
    return cli_usage_error("%s: '%s' is not a size in bytes (K/M/G suffixes allowed)", name, v);
  return 0;
}

static int parse_u32_opt(const char *name, const char *v, uint32_t lo, uint32_t *out) {
  uint64_t x;
  if (gl_parse_u64(v, UINT32_MAX, &x) != 0 || x < lo)
    return cli_usage_error("%s: '%s' is not a whole number >= %u", name, v, lo);
  *out = (uint32_t)x;
  return 0;
}

static int parse_options(int argc, char **argv, gl_cli *cli) {
  static const struct option opts[] = {
      {"addr", required_argument, 0, O_ADDR},
      {"ca-file", required_argument, 0, O_CA},
      {"pin-sha256", required_argument, 0, O_PIN},
      {"insecure", no_argument, 0, O_INSECURE},
      {"cert", required_argument, 0, O_CERT},
      {"key", required_argument, 0, O_KEY},
      {"token", required_argument, 0, O_TOKEN},
      {"rotate", no_argument, 0, O_ROTATE},
      {"rights", required_argument, 0, O_RIGHTS},
      {"to", required_argument, 0, O_TO},
      {"reason", required_argument, 0, O_REASON},
      {"json", no_argument, 0, O_JSON},
      {"timeout", required_argument, 0, O_TIMEOUT},
      {"vram", required_argument, 0, O_VRAM},
      {"ttl", required_argument, 0, O_TTL},
      {"gpu", required_argument, 0, O_GPU},
      {"secret", required_argument, 0, O_SECRET},
      {"binary", required_argument, 0, O_BINARY},
      {"kernel", required_argument, 0, O_KERNEL},
      {"grid", required_argument, 0, O_GRID},
      {"block", required_argument, 0, O_BLOCK},
      {"shared-mem", required_argument, 0, O_SHMEM},
      {"cooperative", no_argument, 0, O_COOP},
      {"cluster", required_argument, 0, O_CLUSTER},
      {"input", required_argument, 0, O_INPUT},
      {"input-offset", required_argument, 0, O_INPUT_OFF},
      {"output-offset", required_argument, 0, O_OUTPUT_OFF},
      {"output-size", required_argument, 0, O_OUTPUT_SIZE},
      {"output", required_argument, 0, O_OUTPUT},
      {"format", required_argument, 0, O_FORMAT},
      {"arg", required_argument, 0, O_ARG},
      {"lease", required_argument, 0, O_LEASE},
      {"image-format", required_argument, 0, O_IMAGE_FORMAT},
      {"session", required_argument, 0, O_SESSION},
      {"size", required_argument, 0, O_SIZE},
      {"offset", required_argument, 0, O_OFFSET},
      {"module", required_argument, 0, O_MODULE},
      {"ack", required_argument, 0, O_ACK},
      {"quiet", no_argument, 0, O_QUIET},
      {"class", required_argument, 0, O_CLASS},
      {"printf-fifo", required_argument, 0, O_PRINTF_FIFO},
      {"malloc-heap", required_argument, 0, O_MALLOC_HEAP},
      {"metrics", required_argument, 0, O_METRICS},
      {"interval", required_argument, 0, O_INTERVAL},
      {"once", no_argument, 0, O_ONCE},
      {"nodes", required_argument, 0, O_NODES},
      {"nodes-file", required_argument, 0, O_NODES_FILE},
      {"srv", required_argument, 0, O_SRV},
      {"dns-server", required_argument, 0, O_DNS_SERVER},
      {"chunk-bytes", required_argument, 0, O_CHUNK_BYTES},
      {"output-bytes-per-chunk", required_argument, 0, O_OUT_PER_CHUNK},
      {"max-leases-per-node", required_argument, 0, O_MAX_PER_NODE},
      {"max-leases", required_argument, 0, O_MAX_LEASES},
      {"attempts", required_argument, 0, O_ATTEMPTS},
      {"deadline", required_argument, 0, O_DEADLINE},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0},
  };
  int c, rc;
  uint64_t v;
  char err[256];
  opterr = 0;
  cli->dashdash = -1;
  /* "+": stop at words (kept below); ":": a missing value is ':', not '?' */
  for (;;) {
    int at = optind;
    c = getopt_long(argc, argv, "+:h", opts, NULL);
    if (c == -1 && optind == at + 1 && strcmp(argv[at], "--") == 0) {
      /* "--" ends the options: the rest are words, whatever they look like */
      cli->dashdash = cli->nwords;
      while (optind < argc) cli->words[cli->nwords++] = argv[optind++];
      break;
    }
    if (c == -1 && optind >= argc) break;
    if (c == -1) { /* a word: keep it and go on past it */
      cli->words[cli->nwords++] = argv[optind++];
      continue;
    }
    switch (c) {
    case O_ADDR: cli->addr = optarg; break;
    case O_CA: cli->ca_file = optarg; break;
    case O_PIN: cli->pin_sha256 = optarg; break;
    case O_INSECURE: cli->insecure = true; break;
    case O_CERT: cli->cert_file = optarg; break;
    case O_KEY: cli->key_file = optarg; break;
    case O_TOKEN: cli->bearer_token = optarg; break;
    case O_ROTATE: cli->rotate = true; cli->given |= OPT_ROTATE; break;
    case O_RIGHTS: cli->rights = optarg; cli->given |= OPT_RIGHTS; break;
    case O_TO: cli->to_tenant = optarg; cli->given |= OPT_TO; break;
    case O_REASON: cli->reason = optarg; cli->given |= OPT_REASON; break;
    case O_JSON: cli->json = true; break;
    case O_TIMEOUT:
      if ((rc = parse_u32_opt("--timeout", optarg, 1, &cli->timeout_ms))) return rc;
      if (cli->timeout_ms > 86400) return cli_usage_error("--timeout: at most 86400 seconds");
      cli->timeout_ms *= 1000;
      break;
    case O_VRAM:
      if ((rc = parse_size_opt("--vram", optarg, UINT64_MAX, &cli->vram_bytes))) return rc;
      cli->have_vram = true;
      cli->given |= OPT_VRAM;
      break;
    case O_TTL:
      if ((rc = parse_u32_opt("--ttl", optarg, 1, &cli->ttl_s))) return rc;
      cli->have_ttl = true;
      cli->given |= OPT_TTL;
      break;
    case O_GPU: /* an index, or a GPU's UUID (resolved through the inventory) */
      if (optarg[0] >= '0' && optarg[0] <= '9') {
        if ((rc = parse_u32_opt("--gpu", optarg, 0, &cli->gpu_index))) return rc;
      } else {
        cli->gpu_uuid = optarg;
      }
      cli->have_gpu = true;
      cli->given |= OPT_GPU;
      break;
    case O_SECRET: cli->secret_hex = optarg; cli->given |= OPT_SECRET; break;
    case O_BINARY: cli->binary = optarg; cli->given |= OPT_BINARY; break;
    case O_KERNEL: cli->kernel = optarg; cli->given |= OPT_KERNEL; break;
    case O_GRID:
      if (cli_parse_dim3(optarg, cli->grid) != 0)
        return cli_usage_error("--grid: expected X[,Y[,Z]] of positive numbers, got '%s'", optarg);
      cli->given |= OPT_GRID;
      break;
    case O_BLOCK:
      if (cli_parse_dim3(optarg, cli->block) != 0)
        return cli_usage_error("--block: expected X[,Y[,Z]] of positive numbers, got '%s'", optarg);
      cli->given |= OPT_BLOCK;
      break;
    case O_SHMEM:
      if ((rc = parse_size_opt("--shared-mem", optarg, UINT32_MAX, &v))) return rc;
      cli->shared_mem_bytes = (uint32_t)v;
      cli->given |= OPT_SHMEM;
      break;
    case O_COOP:
      cli->attrs.flags |= GPULEASE_LAUNCH_COOPERATIVE;
      cli->given |= OPT_COOP;
      break;
    case O_CLUSTER:
      if (cli_parse_dim3(optarg, cli->attrs.cluster) != 0)
        return cli_usage_error("--cluster: expected X[,Y[,Z]] of positive numbers, got '%s'",
                               optarg);
      cli->given |= OPT_CLUSTER;
      break;
    case O_INPUT: cli->input_file = optarg; cli->given |= OPT_INPUT; break;
    case O_INPUT_OFF:
      if ((rc = parse_size_opt("--input-offset", optarg, UINT64_MAX, &cli->input_offset))) return rc;
      cli->given |= OPT_INPUT_OFF;
      break;
    case O_OUTPUT_OFF:
      if ((rc = parse_size_opt("--output-offset", optarg, UINT64_MAX, &cli->output_offset))) return rc;
      cli->given |= OPT_OUTPUT_OFF;
      break;
    case O_OUTPUT_SIZE:
      if ((rc = parse_size_opt("--output-size", optarg, UINT64_MAX, &cli->output_size))) return rc;
      cli->have_output_size = true;
      cli->given |= OPT_OUTPUT_SIZE;
      break;
    case O_OUTPUT: cli->output_file = optarg; cli->given |= OPT_OUTPUT; break;
    case O_FORMAT: cli->format = optarg; cli->given |= OPT_FORMAT; break;
    case O_IMAGE_FORMAT: cli->image_format = optarg; cli->given |= OPT_IMAGE_FORMAT; break;
    case O_LEASE: cli->lease_id_str = optarg; cli->given |= OPT_LEASE; break;
    case O_SESSION: cli->session_str = optarg; cli->given |= OPT_SESSION; break;
    case O_MODULE: cli->module_str = optarg; cli->given |= OPT_MODULE; break;
    case O_SIZE:
      if ((rc = parse_size_opt("--size", optarg, UINT64_MAX, &cli->size_bytes))) return rc;
      cli->have_size = true;
      cli->given |= OPT_SIZE;
      break;
    case O_OFFSET:
      if ((rc = parse_size_opt("--offset", optarg, UINT64_MAX, &cli->offset))) return rc;
      cli->have_offset = true;
      cli->given |= OPT_OFFSET;
      break;
    case O_ACK:
      if (strcmp(optarg, "any") == 0) cli->ack_seq = UINT64_MAX; /* the CLI's ops have no seq */
      else if (gl_parse_u64(optarg, UINT64_MAX, &cli->ack_seq) != 0)
        return cli_usage_error("--ack: '%s' is not a sequence number (or 'any')", optarg);
      cli->have_ack = true;
      cli->given |= OPT_ACK;
      break;
    case O_QUIET: cli->quiet = true; break;
    case O_CLASS:
      if (gpulease_lease_class_parse(optarg, &cli->lease_opts.lease_class) != GPULEASE_OK)
        return cli_usage_error("--class: '%s' is not isolated, shared, device or partition",
                               optarg);
      cli->given |= OPT_CLASS;
      break;
    case O_PRINTF_FIFO:
      if ((rc = parse_size_opt("--printf-fifo", optarg, UINT32_MAX, &v))) return rc;
      cli->lease_opts.printf_fifo_bytes = (uint32_t)v;
      cli->given |= OPT_PRINTF_FIFO;
      break;
    case O_MALLOC_HEAP:
      if ((rc = parse_size_opt("--malloc-heap", optarg, UINT64_MAX, &cli->lease_opts.malloc_heap_bytes)))
        return rc;
      cli->given |= OPT_MALLOC_HEAP;
      break;
    case O_ARG: {
      size_t n = cli->param_count;
      if (n == CLI_MAX_ARGS)
        return cli_usage_error("at most %d --arg", CLI_MAX_ARGS);
      cli->arg_text[n] = optarg;
      const char *colon = strchr(optarg, ':');
      if (colon && colon[1] == '@') { /* names the chunk: pool map parses it */
        cli->have_chunk_arg = true;
      } else if (strncmp(optarg, "buf:", 4) == 0) {
        if (cli_parse_launch_arg(optarg, &cli->launch_args[n], err, sizeof err) != 0)
          return cli_usage_error("%s", err);
        cli->have_buf_arg = true;
      } else {
        if (cli_parse_arg(optarg, &cli->params[n], err, sizeof err) != 0)
          return cli_usage_error("%s", err);
        if (cli->params[n].kind == GPULEASE_PARAM_POINTER)
          cli->have_ptr_arg = true;
        else
          cli->launch_args[n] = gpulease_arg_scalar(cli->params[n].value, cli->params[n].size);
      }
      cli->param_count++;
      cli->given |= OPT_ARG;
      break;
    }
    case O_METRICS: cli->metrics_url = optarg; cli->given |= OPT_METRICS; break;
    case O_INTERVAL: {
      char *end;
      errno = 0;
      double x = strtod(optarg, &end);
      if (errno || end == optarg || *end || !(x >= 0.1 && x <= 3600))
        return cli_usage_error("--interval: '%s' is not a number of seconds from 0.1 to 3600",
                               optarg);
      cli->interval_s = x;
      cli->given |= OPT_INTERVAL;
      break;
    }
    case O_ONCE: cli->once = true; cli->given |= OPT_ONCE; break;
    case O_NODES: cli->nodes = optarg; cli->given |= OPT_NODES; break;
    case O_NODES_FILE: cli->nodes_file = optarg; cli->given |= OPT_NODES_FILE; break;
    case O_SRV: cli->srv_name = optarg; cli->given |= OPT_SRV; break;
    case O_DNS_SERVER: cli->dns_server = optarg; cli->given |= OPT_DNS_SERVER; break;
    case O_CHUNK_BYTES:
      if ((rc = parse_size_opt("--chunk-bytes", optarg, UINT32_MAX, &cli->chunk_bytes))) return rc;
      cli->given |= OPT_CHUNK_BYTES;
      break;
    case O_OUT_PER_CHUNK:
      if ((rc = parse_size_opt("--output-bytes-per-chunk", optarg, 1ull << 30,
                               &cli->output_bytes_per_chunk)))
        return rc;
      cli->given |= OPT_OUT_PER_CHUNK;
      break;
    case O_MAX_PER_NODE:
      if ((rc = parse_u32_opt("--max-leases-per-node", optarg, 1, &cli->max_leases_per_node)))
        return rc;
      cli->given |= OPT_MAX_PER_NODE;
      break;
    case O_MAX_LEASES:
      if ((rc = parse_u32_opt("--max-leases", optarg, 1, &cli->max_leases))) return rc;
      cli->given |= OPT_MAX_LEASES;
      break;
    case O_ATTEMPTS:
      if ((rc = parse_u32_opt("--attempts", optarg, 1, &cli->attempts))) return rc;
      cli->given |= OPT_ATTEMPTS;
      break;
    case O_DEADLINE: {
      char *end;
      errno = 0;
      double x = strtod(optarg, &end);
      if (errno || end == optarg || *end || !(x > 0 && x <= 4000000))
        return cli_usage_error("--deadline: '%s' is not a number of seconds above 0", optarg);
      cli->deadline_s = x;
      cli->given |= OPT_DEADLINE;
      break;
    }
    case 'h': cli->help = true; break;
    case ':':
      return cli_usage_error("%s needs a value", argv[optind - 1]);
    default:
      return cli_usage_error("unknown option '%s'", argv[optind - 1]);
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  static gl_cli cli; /* large (kernel params): keep it off the stack */
  cli.words = calloc((size_t)argc + 1, sizeof *cli.words);
  if (!cli.words) return EXIT_FAILED;
  if (!cli.secret_hex) cli.secret_hex = getenv("GPULEASE_SECRET");
  cli.bearer_token = getenv("GPULEASE_TOKEN");
  cli.grid[0] = cli.grid[1] = cli.grid[2] = 1;
  cli.block[0] = cli.block[1] = cli.block[2] = 1;
  gpulease_lease_opts_default(&cli.lease_opts);
  gpulease_launch_attrs_default(&cli.attrs);
  int rc = parse_options(argc, argv, &cli);
  if (rc) goto out;
  if (cli.help || (cli.nwords > 0 && strcmp(cli.words[0], "help") == 0)) {
    /* gpulease --help, gpulease COMMAND --help, gpulease help [COMMAND] */
    const char *topic = NULL;
    int first = cli.nwords > 0 && strcmp(cli.words[0], "help") == 0 ? 1 : 0;
    if (cli.nwords > first) topic = cli.words[first];
    if (first && cli.nwords > 2) {
      rc = cli_usage_error("help takes one COMMAND");
    } else if (!topic) {
      cli_help_all(stdout);
      rc = EXIT_OK;
    } else if (cli_help_command(stdout, topic) == 0) {
      rc = EXIT_OK;
    } else {
      rc = cli_usage_error("unknown command '%s'", topic);
    }
  } else if (!cli.cert_file != !cli.key_file) {
    rc = cli_usage_error("--cert and --key go together");
  } else if (cli.nwords == 0) {
    cli_help_all(stderr);
    rc = EXIT_USAGE;
  } else if (strcmp(cli.words[0], "inventory") == 0) {
    rc = cmd_inventory(&cli);
  } else if (strcmp(cli.words[0], "lease") == 0) {
    rc = cmd_lease(&cli);
  } else if (strcmp(cli.words[0], "admin") == 0) {
    rc = cmd_admin(&cli);
  } else if (strcmp(cli.words[0], "submit") == 0) {
    rc = cmd_submit(&cli);
  } else if (strcmp(cli.words[0], "session") == 0) {
    rc = cmd_session(&cli);
  } else if (strcmp(cli.words[0], "mem") == 0) {
    rc = cmd_mem(&cli);
  } else if (strcmp(cli.words[0], "module") == 0) {
    rc = cmd_module(&cli);
  } else if (strcmp(cli.words[0], "func") == 0) {
    rc = cmd_func(&cli);
  } else if (strcmp(cli.words[0], "launch") == 0) {
    rc = cmd_launch(&cli);
  } else if (strcmp(cli.words[0], "top") == 0) {
    rc = cmd_top(&cli);
  } else if (strcmp(cli.words[0], "pool") == 0) {
    rc = cmd_pool(&cli);
  } else if (strcmp(cli.words[0], "exec") == 0) {
    rc = cmd_exec(&cli);
  } else {
    rc = cli_usage_error("unknown command '%s'", cli.words[0]);
  }
out:
  free(cli.words);
  return rc;
}
