/*
 * cmd_admin.c - `gpulease admin unfence GPU`: the operator's commands,
 * for an admin tenant of the daemon's tenants file (docs/security.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/util.h"

int cmd_admin(gl_cli *cli) {
  const char *sub = cli->nwords > 1 ? cli->words[1] : NULL;
  if (!sub || strcmp(sub, "unfence") != 0)
    return cli_usage_error("admin needs a command: unfence GPU");
  int rc = cli_only(cli, 0, "admin unfence");
  if (rc) return rc;
  uint64_t gpu;
  if (cli->nwords != 3 || gl_parse_u64(cli->words[2], UINT32_MAX - 1, &gpu) != 0)
    return cli_usage_error("admin unfence takes one GPU index");
  gpulease_client *c = cli_connect(cli);
  if (!c) return EXIT_FAILED;
  gpulease_error err;
  if (gpulease_admin_unfence(c, (uint32_t)gpu, &err) != GPULEASE_OK) {
    rc = cli_fail(cli, "admin unfence", &err);
  } else {
    if (cli->json) printf("{ \"gpu\": %" PRIu64 ", \"fenced\": false }\n", gpu);
    else printf("GPU %" PRIu64 " unfenced\n", gpu);
    rc = EXIT_OK;
  }
  gpulease_client_close(c);
  return rc;
}
