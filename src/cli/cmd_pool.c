/*
 * cmd_pool.c - `gpulease pool map` and `gpulease pool inventory`: one job
 * over many daemons through the library's client pool (src/lib/pool*.c,
 * docs/scale-out.md).
 *
 *   gpulease pool map (--nodes LIST | --nodes-file FILE | --srv NAME)
 *       --binary FILE --kernel NAME --input FILE --chunk-bytes N
 *       --output-bytes-per-chunk M --output FILE [--grid X,Y,Z]
 *       [--block X,Y,Z] [--shared-mem BYTES] [--arg ...] [--class shared]
 *       [--ttl S] [--max-leases-per-node N] [--max-leases N]
 *       [--attempts N] [--deadline S] [--dns-server IP:PORT] [--quiet]
 *   gpulease pool inventory (--nodes LIST | --nodes-file FILE | --srv NAME)
 *
 * A map's --arg may name the chunk: ptr:@in, ptr:@out, u32:@bytes,
 * u32:@index; other --arg values are scalars as for submit.
 */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/util.h"

#define MAX_FILE_BYTES (16ull << 30)
#define POOL_SOURCES (OPT_NODES | OPT_NODES_FILE | OPT_SRV | OPT_DNS_SERVER)

static int pool_open(gl_cli *cli, const char *cmd, gpulease_pool **out) {
  int sources = (cli->nodes != NULL) + (cli->nodes_file != NULL) + (cli->srv_name != NULL);
  if (sources != 1)
    return cli_usage_error("pool %s needs one of --nodes HOST:PORT,..., --nodes-file FILE and "
                           "--srv NAME",
                           cmd);
  if (cli->dns_server && !cli->srv_name) return cli_usage_error("--dns-server goes with --srv");
  gpulease_connect_options co;
  gpulease_connect_options_default(&co);
  co.ca_file = cli->ca_file;
  co.pin_sha256 = cli->pin_sha256;
  co.insecure = cli->insecure;
  co.cert_file = cli->cert_file;
  co.key_file = cli->key_file;
  co.bearer_token = cli->bearer_token;
  if (cli->timeout_ms) co.timeout_ms = cli->timeout_ms;
  if (cli->insecure)
    fprintf(stderr, "gpulease: warning: --insecure: the nodes' certificates are NOT verified\n");
  gpulease_pool_options po;
  gpulease_pool_options_default(&po);
  po.nodes = cli->nodes;
  po.nodes_file = cli->nodes_file;
  po.srv_name = cli->srv_name;
  po.dns_server = cli->dns_server;
  po.connect = &co;
  if (cli->max_leases_per_node) po.max_leases_per_node = cli->max_leases_per_node;
  if (cli->max_leases) po.max_leases = cli->max_leases;
  if (cli->given & OPT_CLASS) po.lease_class = cli->lease_opts.lease_class;
  if (cli->given & OPT_TTL) po.lease_ttl_s = cli->ttl_s;
  gpulease_error err;
  if (gpulease_pool_open(&po, out, &err) != GPULEASE_OK) {
    char what[64];
    snprintf(what, sizeof what, "pool %s", cmd);
    return err.status == GPULEASE_INVALID_ARGUMENT && !cli->json
               ? cli_usage_error("%s", err.message)
               : cli_fail(cli, what, &err);
  }
  return EXIT_OK;
}

/* ---- pool inventory ----------------------------------------------------- */

static int pool_inventory(gl_cli *cli) {
  int rc = cli_only(cli, POOL_SOURCES, "pool inventory");
  if (rc) return rc;
  gpulease_pool *p;
  if ((rc = pool_open(cli, "inventory", &p))) return rc;
  gpulease_pool_node *nodes;
  size_t n;
  gpulease_error err;
  if (gpulease_pool_inventory(p, &nodes, &n, &err) != GPULEASE_OK) {
    gpulease_pool_close(p);
    return cli_fail(cli, "pool inventory", &err);
  }
  size_t up = 0;
  for (size_t i = 0; i < n; i++) up += nodes[i].up != 0;
  if (cli->json) {
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
      const gpulease_pool_node *x = &nodes[i];
      json_object *o = json_object_new_object();
      json_object_object_add(o, "node", json_object_new_string(x->addr));
      json_object_object_add(o, "up", json_object_new_boolean(x->up));
      if (!x->up) {
        json_object_object_add(o, "status", json_object_new_string(gpulease_status_name(x->status)));
        json_object_object_add(o, "message", json_object_new_string(x->message));
      } else {
        json_object *g = json_object_new_array();
        for (uint32_t k = 0; k < x->inventory.gpu_count; k++) {
          const gpulease_gpu_info *gi = &x->inventory.gpus[k];
          json_object *go = json_object_new_object();
          json_object_object_add(go, "index", json_object_new_int((int)gi->index));
          json_object_object_add(go, "uuid", json_object_new_string(gi->uuid));
          json_object_object_add(go, "name", json_object_new_string(gi->name));
          char cc[16];
          snprintf(cc, sizeof cc, "%u.%u", gi->cc_major, gi->cc_minor);
          json_object_object_add(go, "compute_capability", json_object_new_string(cc));
          json_object_object_add(go, "total_vram_bytes", json_object_new_uint64(gi->total_vram_bytes));
          json_object_object_add(go, "free_vram_bytes", json_object_new_uint64(gi->free_vram_bytes));
          json_object_object_add(go, "leased_vram_bytes", json_object_new_uint64(gi->leased_vram_bytes));
          json_object_object_add(go, "active_leases", json_object_new_int((int)gi->active_leases));
          json_object_object_add(go, "fenced", json_object_new_boolean((gi->flags & GPULEASE_GPU_FENCED) != 0));
          json_object_array_add(g, go);
        }
        json_object_object_add(o, "gpus", g);
      }
      json_object_array_add(arr, o);
    }
    json_object *top = json_object_new_object();
    json_object_object_add(top, "nodes", arr);
    json_object_object_add(top, "up", json_object_new_uint64(up));
    puts(json_object_to_json_string_ext(top, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                 JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(top);
  } else {
    printf("%-24s %3s  %-40s %-28s %4s %10s %10s %10s %6s\n", "NODE", "GPU", "UUID", "NAME", "CC",
           "TOTAL-MiB", "FREE-MiB", "LEASED-MiB", "LEASES");
    for (size_t i = 0; i < n; i++) {
      const gpulease_pool_node *x = &nodes[i];
      if (!x->up) {
        printf("%-24s down: %s: %s\n", x->addr, gpulease_status_name(x->status), x->message);
        continue;
      }
      for (uint32_t k = 0; k < x->inventory.gpu_count; k++) {
        const gpulease_gpu_info *gi = &x->inventory.gpus[k];
        printf("%-24s %3u  %-40s %-28.28s %2u.%-1u %10.1f %10.1f %10.1f %6u%s\n", x->addr, gi->index,
               gi->uuid, gi->name, gi->cc_major, gi->cc_minor,
               (double)gi->total_vram_bytes / 1048576.0, (double)gi->free_vram_bytes / 1048576.0,
               (double)gi->leased_vram_bytes / 1048576.0, gi->active_leases,
               gi->flags & GPULEASE_GPU_FENCED ? " fenced" : "");
      }
    }
    printf("%zu node(s), %zu up\n", n, up);
  }
  gpulease_pool_nodes_release(nodes, n);
  gpulease_pool_close(p);
  return up ? EXIT_OK : EXIT_FAILED;
}

/* ---- pool map ----------------------------------------------------------- */

/* Parses an --arg of a map: TYPE:@NAME, or a scalar as submit's. */
static int map_arg(const char *s, gpulease_map_arg *a) {
  memset(a, 0, sizeof *a);
  if (strcmp(s, "ptr:@in") == 0) a->kind = GPULEASE_MAP_IN;
  else if (strcmp(s, "ptr:@out") == 0) a->kind = GPULEASE_MAP_OUT;
  else if (strcmp(s, "u32:@bytes") == 0) a->kind = GPULEASE_MAP_BYTES;
  else if (strcmp(s, "u32:@index") == 0) a->kind = GPULEASE_MAP_INDEX;
  else if (strchr(s, '@'))
    return cli_usage_error("--arg '%s': a chunk's values are ptr:@in, ptr:@out, u32:@bytes and "
                           "u32:@index",
                           s);
  else {
    gpulease_param prm;
    char why[256];
    if (cli_parse_arg(s, &prm, why, sizeof why) != 0) return cli_usage_error("%s", why);
    if (prm.kind == GPULEASE_PARAM_POINTER)
      return cli_usage_error("--arg '%s': a map's pointers are ptr:@in and ptr:@out", s);
    a->kind = GPULEASE_MAP_SCALAR;
    a->size = prm.size;
    memcpy(a->value, prm.value, prm.size);
  }
  return 0;
}

typedef struct {
  bool bar;
  uint64_t last_ns;
} progress_state;

static void on_progress(uint64_t done, uint64_t total, void *user) {
  progress_state *ps = user;
  uint64_t now = gl_mono_ns();
  if (done != total && now - ps->last_ns < 100000000ull) return; /* 10 frames a second */
  ps->last_ns = now;
  int width = 40, fill = total ? (int)(done * (uint64_t)width / total) : width;
  fprintf(stderr, "\r[%.*s%*s] %llu/%llu chunks", fill,
          "########################################", width - fill, "",
          (unsigned long long)done, (unsigned long long)total);
  if (done == total) fputc('\n', stderr);
  fflush(stderr);
}

static void print_summary(const gl_cli *cli, const gpulease_map_stats *s, uint64_t in_bytes,
                          uint64_t out_bytes, gpulease_status st, const gpulease_error *err) {
  double rate = s->seconds > 0 ? (double)s->done / s->seconds : 0;
  if (cli->json) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "status", json_object_new_string(gpulease_status_name(st)));
    if (st != GPULEASE_OK) json_object_object_add(o, "message", json_object_new_string(err->message));
    json_object_object_add(o, "chunks", json_object_new_uint64(s->chunks));
    json_object_object_add(o, "done", json_object_new_uint64(s->done));
    json_object_object_add(o, "retries", json_object_new_uint64(s->retries));
    json_object_object_add(o, "backups", json_object_new_uint64(s->backups));
    json_object_object_add(o, "input_bytes", json_object_new_uint64(in_bytes));
    json_object_object_add(o, "output_bytes", json_object_new_uint64(out_bytes));
    json_object_object_add(o, "seconds", json_object_new_double(s->seconds));
    json_object_object_add(o, "chunks_per_s", json_object_new_double(rate));
    json_object_object_add(o, "chunk_p50_ms", json_object_new_double(s->chunk_p50_ms));
    json_object_object_add(o, "chunk_p99_ms", json_object_new_double(s->chunk_p99_ms));
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < s->node_count; i++) {
      const gpulease_map_node_stats *x = &s->nodes[i];
      json_object *n = json_object_new_object();
      json_object_object_add(n, "node", json_object_new_string(x->addr));
      json_object_object_add(n, "chunks", json_object_new_uint64(x->chunks));
      json_object_object_add(n, "retries", json_object_new_uint64(x->retries));
      json_object_object_add(n, "failures", json_object_new_uint64(x->failures));
      json_object_object_add(n, "leases", json_object_new_uint64(x->leases));
      json_object_object_add(n, "bytes_in", json_object_new_uint64(x->bytes_in));
      json_object_object_add(n, "bytes_out", json_object_new_uint64(x->bytes_out));
      json_object_object_add(n, "seconds", json_object_new_double(x->seconds));
      json_object_array_add(arr, n);
    }
    json_object_object_add(o, "nodes", arr);
    puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                               JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
    return;
  }
  FILE *f = st == GPULEASE_OK ? stdout : stderr;
  fprintf(f,
          "pool map: %llu of %llu chunks in %.3f s (%.0f chunks/s), chunk p50 %.3f ms, p99 "
          "%.3f ms, %llu backups, %llu retries\n",
          (unsigned long long)s->done, (unsigned long long)s->chunks, s->seconds, rate,
          s->chunk_p50_ms, s->chunk_p99_ms, (unsigned long long)s->backups,
          (unsigned long long)s->retries);
  fprintf(f, "%-24s %8s %8s %9s %7s %12s %12s %9s\n", "NODE", "CHUNKS", "RETRIES", "FAILURES",
          "LEASES", "BYTES-IN", "BYTES-OUT", "SECONDS");
  for (size_t i = 0; i < s->node_count; i++) {
    const gpulease_map_node_stats *x = &s->nodes[i];
    fprintf(f, "%-24s %8llu %8llu %9llu %7llu %12llu %12llu %9.3f\n", x->addr,
            (unsigned long long)x->chunks, (unsigned long long)x->retries,
            (unsigned long long)x->failures, (unsigned long long)x->leases,
            (unsigned long long)x->bytes_in, (unsigned long long)x->bytes_out, x->seconds);
  }
}

static int pool_map(gl_cli *cli) {
  int rc = cli_only(cli,
                    POOL_SOURCES | OPT_BINARY | OPT_KERNEL | OPT_INPUT | OPT_CHUNK_BYTES |
                        OPT_OUT_PER_CHUNK | OPT_OUTPUT | OPT_GRID | OPT_BLOCK | OPT_SHMEM |
                        OPT_ARG | OPT_CLASS | OPT_TTL | OPT_MAX_PER_NODE | OPT_MAX_LEASES |
                        OPT_ATTEMPTS | OPT_DEADLINE | OPT_IMAGE_FORMAT,
                    "pool map");
  if (rc) return rc;
  if (!cli->binary || !cli->kernel || !cli->input_file || !(cli->given & OPT_CHUNK_BYTES))
    return cli_usage_error("pool map needs --binary FILE, --kernel NAME, --input FILE and "
                           "--chunk-bytes N");
  if (cli->chunk_bytes == 0) return cli_usage_error("--chunk-bytes: at least 1 byte");
  if (cli->output_bytes_per_chunk && !cli->output_file)
    return cli_usage_error("--output-bytes-per-chunk needs --output FILE");
  if (cli->output_file && !cli->output_bytes_per_chunk)
    return cli_usage_error("--output needs --output-bytes-per-chunk M");
  if ((cli->given & OPT_CLASS) && cli->lease_opts.lease_class != GPULEASE_CLASS_ISOLATED &&
      cli->lease_opts.lease_class != GPULEASE_CLASS_SHARED)
    return cli_usage_error("--class: a pool's leases are isolated or shared");
  gpulease_image_format ifmt = GPULEASE_IMAGE_AUTO;
  if (cli->image_format && cli_parse_image_format(cli->image_format, &ifmt) != 0)
    return cli_usage_error("--image-format: auto, ptx, cubin or fatbin");
  static gpulease_map_arg args[CLI_MAX_ARGS];
  for (size_t i = 0; i < cli->param_count; i++)
    if ((rc = map_arg(cli->arg_text[i], &args[i]))) return rc;

  gpulease_pool *p;
  if ((rc = pool_open(cli, "map", &p))) return rc;
  uint8_t *image = NULL, *input = NULL, *output = NULL;
  size_t image_size = 0, input_size = 0;
  rc = EXIT_FAILED;
  if (gl_read_file(cli->binary, MAX_FILE_BYTES, &image, &image_size) != 0) {
    fprintf(stderr, "gpulease: cannot read --binary %s: %s\n", cli->binary, strerror(errno));
    goto out;
  }
  if (gl_read_file(cli->input_file, MAX_FILE_BYTES, &input, &input_size) != 0) {
    fprintf(stderr, "gpulease: cannot read --input %s: %s\n", cli->input_file, strerror(errno));
    goto out;
  }
  if (input_size == 0) {
    rc = cli_usage_error("--input %s is empty: no chunk to run", cli->input_file);
    goto out;
  }
  uint64_t nchunks = (input_size + cli->chunk_bytes - 1) / cli->chunk_bytes;
  uint64_t out_total = nchunks * cli->output_bytes_per_chunk;
  if (out_total && !(output = malloc(out_total))) {
    fprintf(stderr, "gpulease: pool map: no memory for %llu output bytes\n",
            (unsigned long long)out_total);
    goto out;
  }
  gpulease_map_desc d;
  gpulease_map_desc_default(&d);
  d.image = image;
  d.image_size = image_size;
  d.format = ifmt;
  d.kernel = cli->kernel;
  memcpy(d.grid, cli->grid, sizeof d.grid);
  memcpy(d.block, cli->block, sizeof d.block);
  d.shared_mem_bytes = cli->shared_mem_bytes;
  d.args = args;
  d.arg_count = cli->param_count;
  d.input = input;
  d.input_bytes = input_size;
  d.chunk_bytes = cli->chunk_bytes;
  d.output = output;
  d.output_bytes_per_chunk = cli->output_bytes_per_chunk;
  if (cli->attempts) d.max_attempts = cli->attempts;
  if (cli->deadline_s > 0) {
    double ms = ceil(cli->deadline_s * 1000);
    d.deadline_ms = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
  }
  progress_state ps = {0};
  if (!cli->quiet && !cli->json && isatty(STDERR_FILENO)) {
    d.progress = on_progress;
    d.progress_user = &ps;
  }
  gpulease_map_stats stats;
  gpulease_map_stats_init(&stats);
  gpulease_error err;
  gpulease_status st = gpulease_pool_map(p, &d, &stats, &err);
  if (ps.last_ns && stats.done != stats.chunks) fputc('\n', stderr);
  if (st == GPULEASE_OK && output) {
    FILE *f = fopen(cli->output_file, "wb");
    if (!f || fwrite(output, 1, out_total, f) != out_total || fclose(f) != 0) {
      fprintf(stderr, "gpulease: cannot write --output %s: %s\n", cli->output_file,
              strerror(errno));
      gpulease_map_stats_release(&stats);
      goto out;
    }
  }
  print_summary(cli, &stats, input_size, out_total, st, &err);
  gpulease_map_stats_release(&stats);
  if (st != GPULEASE_OK) {
    if (!cli->json)
      fprintf(stderr, "gpulease: pool map failed: %s: %s\n", gpulease_status_name(st), err.message);
    goto out;
  }
  rc = EXIT_OK;
out:
  free(image);
  free(input);
  free(output);
  gpulease_pool_close(p);
  return rc;
}

int cmd_pool(gl_cli *cli) {
  if (cli->nwords == 2 && strcmp(cli->words[1], "map") == 0) return pool_map(cli);
  if (cli->nwords == 2 && strcmp(cli->words[1], "inventory") == 0) return pool_inventory(cli);
  return cli_usage_error("pool takes 'map' or 'inventory'");
}
