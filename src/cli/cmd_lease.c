/*
 * cmd_lease.c - `gpulease lease alloc|renew|show|free`.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static int lease_alloc(gl_cli *cli, gpulease_client *c) {
  gpulease_lease l;
  gpulease_error err;
  uint32_t gpu = cli->have_gpu ? cli->gpu_index : GPULEASE_ANY_GPU;
  if (gpulease_lease_alloc_opts(c, gpu, cli->vram_bytes, cli->ttl_s, &cli->lease_opts, &l,
                                &err) != GPULEASE_OK)
    return cli_fail(cli, "lease alloc", &err);
  cli_print_lease(cli, &l, true);
  return EXIT_OK;
}

int cmd_lease(gl_cli *cli) {
  const char *sub = cli->nwords > 1 ? cli->words[1] : NULL;
  int rc;
  gpulease_lease l;
  if (!sub) return cli_usage_error("lease needs alloc, renew, show or free");
  if (strcmp(sub, "alloc") == 0) {
    if ((rc = cli_only(cli, OPT_VRAM | OPT_TTL | OPT_GPU | OPT_CLASS | OPT_PRINTF_FIFO |
                                OPT_MALLOC_HEAP, "lease alloc")))
      return rc;
    if (cli->nwords != 2) return cli_usage_error("lease alloc takes no ID");
    if (!cli->have_vram || !cli->have_ttl)
      return cli_usage_error("lease alloc needs --vram BYTES and --ttl SECONDS");
  } else if (strcmp(sub, "renew") == 0 || strcmp(sub, "show") == 0 || strcmp(sub, "free") == 0) {
    bool renew = sub[0] == 'r';
    if ((rc = cli_only(cli, OPT_SECRET | (renew ? OPT_TTL : 0), "lease"))) return rc;
    if (cli->nwords != 3) return cli_usage_error("lease %s takes exactly one lease ID", sub);
    if (renew && !cli->have_ttl) return cli_usage_error("lease renew needs --ttl SECONDS");
    if ((rc = cli_lease_from_args(cli, cli->words[2], &l))) return rc;
  } else {
    return cli_usage_error("unknown lease command '%s' (alloc, renew, show, free)", sub);
  }

  gpulease_client *c = cli_connect(cli);
  if (!c) return EXIT_FAILED;
  gpulease_error err;
  if (sub[0] == 'a') {
    rc = lease_alloc(cli, c);
  } else if (sub[0] == 'r') {
    rc = gpulease_lease_renew(c, &l, cli->ttl_s, &err) == GPULEASE_OK
             ? (cli_print_lease(cli, &l, false), EXIT_OK)
             : cli_fail(cli, "lease renew", &err);
  } else if (sub[0] == 's') {
    rc = gpulease_lease_query(c, &l, &err) == GPULEASE_OK ? (cli_print_lease(cli, &l, false), EXIT_OK)
                                                           : cli_fail(cli, "lease show", &err);
  } else {
    rc = gpulease_lease_free(c, &l, &err) == GPULEASE_OK ? EXIT_OK : cli_fail(cli, "lease free", &err);
    if (rc == EXIT_OK) {
      if (cli->json) printf("{ \"lease_id\": %s, \"freed\": true }\n", cli->words[2]);
      else printf("lease %s freed\n", cli->words[2]);
    }
  }
  gpulease_client_close(c);
  return rc;
}
