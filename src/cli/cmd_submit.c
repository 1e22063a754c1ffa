/*
 * cmd_submit.c - `gpulease submit`: run one kernel (GPU_SUBMIT) and print
 * its output. Without --lease it leases just the VRAM the call needs, for
 * the call only, and frees it afterwards (also when the call fails).
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/util.h"

#define MAX_FILE_BYTES ((size_t)1 << 30)
#define ONESHOT_TTL_S 60

/* The VRAM a one-shot call needs: the end of the furthest range it
 * touches, at least 1 byte. */
static uint64_t vram_needed(const gl_cli *cli, size_t input_size) {
  uint64_t need = 1;
  uint64_t in_end = cli->input_offset + input_size;
  uint64_t out_end = cli->output_offset + cli->output_size;
  if (in_end > need) need = in_end;
  if (out_end > need) need = out_end;
  for (size_t i = 0; i < cli->param_count; i++)
    if (cli->params[i].kind == GPULEASE_PARAM_POINTER && cli->params[i].offset + 1 > need)
      need = cli->params[i].offset + 1;
  return need;
}

static void print_json(const gl_cli *cli, const gpulease_submit_result *r, enum cli_out_format f,
                       uint64_t lease_id) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "lease_id", json_object_new_uint64(lease_id));
  json_object_object_add(o, "kernel", json_object_new_string(cli->kernel));
  json_object_object_add(o, "gpu_time_ns", json_object_new_uint64(r->gpu_time_ns));
  json_object_object_add(o, "output_size", json_object_new_uint64(r->output_size));
  const uint8_t *p = r->output;
  cli_json_add_output(o, p, r->output_size, f);
  puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
  json_object_put(o);
}

static int write_output(const gl_cli *cli, const gpulease_submit_result *r, enum cli_out_format f,
                        uint64_t lease_id) {
  if (cli->output_file) {
    FILE *fp = fopen(cli->output_file, "wb");
    if (!fp || fwrite(r->output, 1, r->output_size, fp) != r->output_size || fclose(fp) != 0) {
      fprintf(stderr, "gpulease: cannot write %s: %s\n", cli->output_file, strerror(errno));
      return EXIT_FAILED;
    }
  }
  if (cli->json) {
    print_json(cli, r, f, lease_id);
  } else if (f == CLI_F_RAW) {
    if (!cli->output_file) fwrite(r->output, 1, r->output_size, stdout);
  } else {
    printf("%s: %zu bytes of output, kernel time %.3f us\n", cli->kernel, r->output_size,
           (double)r->gpu_time_ns / 1000.0);
    if (f == CLI_F_HEX) cli_print_hex_text(r->output, r->output_size);
    else cli_print_values_text(r->output, r->output_size, f);
  }
  return EXIT_OK;
}

int cmd_submit(gl_cli *cli) {
  int rc = cli_only(cli,
                    OPT_VRAM | OPT_TTL | OPT_GPU | OPT_SECRET | OPT_BINARY | OPT_KERNEL |
                        OPT_GRID | OPT_BLOCK | OPT_SHMEM | OPT_COOP | OPT_CLUSTER | OPT_INPUT |
                        OPT_INPUT_OFF | OPT_OUTPUT_OFF | OPT_OUTPUT_SIZE | OPT_FORMAT | OPT_ARG |
                        OPT_LEASE | OPT_IMAGE_FORMAT | OPT_OUTPUT,
                    "submit");
  if (rc) return rc;
  if (cli->nwords != 1) return cli_usage_error("submit takes options only");
  if (!cli->binary || !cli->kernel) return cli_usage_error("submit needs --binary FILE and --kernel NAME");
  if (cli->have_buf_arg)
    return cli_usage_error("--arg buf:HANDLE is for a session launch; submit takes ptr:OFFSET");
  if (cli->have_chunk_arg)
    return cli_usage_error("--arg TYPE:@NAME names a chunk of 'pool map'; submit takes ptr:OFFSET");
  enum cli_out_format fmt = CLI_F_HEX;
  if (cli->format && cli_parse_out_format(cli->format, &fmt) != 0)
    return cli_usage_error("--format: expected f32, i32, u32, hex or raw");
  gpulease_image_format ifmt = GPULEASE_IMAGE_AUTO;
  if (cli->image_format && cli_parse_image_format(cli->image_format, &ifmt) != 0)
    return cli_usage_error("--image-format: expected auto, ptx, cubin or fatbin");
  gpulease_lease lease;
  bool oneshot = cli->lease_id_str == NULL;
  if (oneshot && (cli->given & OPT_SECRET))
    return cli_usage_error("--secret goes with --lease ID");
  if (!oneshot) {
    if (cli->given & (OPT_VRAM | OPT_TTL | OPT_GPU))
      return cli_usage_error("--vram, --ttl and --gpu are for a one-shot lease, not with --lease");
    if ((rc = cli_lease_from_args(cli, cli->lease_id_str, &lease))) return rc;
  }

  uint8_t *image = NULL, *input = NULL;
  size_t image_size = 0, input_size = 0;
  if (gl_read_file(cli->binary, MAX_FILE_BYTES, &image, &image_size) != 0) {
    fprintf(stderr, "gpulease: cannot read --binary %s: %s\n", cli->binary, strerror(errno));
    return EXIT_FAILED;
  }
  if (cli->input_file && gl_read_file(cli->input_file, MAX_FILE_BYTES, &input, &input_size) != 0) {
    fprintf(stderr, "gpulease: cannot read --input %s: %s\n", cli->input_file, strerror(errno));
    free(image);
    return EXIT_FAILED;
  }

  gpulease_submit_desc d;
  gpulease_submit_desc_default(&d);
  d.image = image;
  d.image_size = image_size;
  d.format = ifmt;
  d.kernel = cli->kernel;
  memcpy(d.grid, cli->grid, sizeof d.grid);
  memcpy(d.block, cli->block, sizeof d.block);
  d.shared_mem_bytes = cli->shared_mem_bytes;
  d.launch_flags = cli->attrs.flags;
  memcpy(d.cluster, cli->attrs.cluster, sizeof d.cluster);
  d.input = input;
  d.input_size = input_size;
  d.input_offset = cli->input_offset;
  d.output_offset = cli->output_offset;
  d.output_size = cli->output_size;
  d.params = cli->params;
  d.param_count = cli->param_count;
  d.use_params = cli->param_count > 0;

  gpulease_client *c = cli_connect(cli);
  if (!c) {
    free(image);
    free(input);
    return EXIT_FAILED;
  }
  gpulease_error err;
  rc = EXIT_OK;
  if (oneshot) {
    uint64_t vram = cli->have_vram ? cli->vram_bytes : vram_needed(cli, input_size);
    uint32_t ttl = cli->have_ttl ? cli->ttl_s : ONESHOT_TTL_S;
    uint32_t gpu;
    rc = cli_pick_gpu(cli, c, &gpu);
    if (rc == EXIT_OK && gpulease_lease_alloc(c, gpu, vram, ttl, &lease, &err) != GPULEASE_OK)
      rc = cli_fail(cli, "lease alloc", &err);
  }
  if (rc == EXIT_OK) {
    gpulease_submit_result r;
    gpulease_submit_result_init(&r);
    if (gpulease_submit(c, &lease, &d, &r, &err) != GPULEASE_OK) {
      rc = cli_fail(cli, "submit", &err);
    } else {
      rc = write_output(cli, &r, fmt, lease.id);
      gpulease_submit_result_release(&r);
    }
    if (oneshot) {
      gpulease_error ferr;
      if (gpulease_lease_free(c, &lease, &ferr) != GPULEASE_OK &&
          ferr.status != GPULEASE_LEASE_EXPIRED)
        fprintf(stderr, "gpulease: warning: could not free the one-shot lease %" PRIu64
                        " (%s: %s); it expires in %u s\n",
                lease.id, gpulease_status_name(ferr.status), ferr.message, lease.ttl_s);
    }
  }
  gpulease_client_close(c);
  free(image);
  free(input);
  return rc;
}
