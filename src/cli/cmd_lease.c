/*
 * cmd_lease.c - `gpulease lease alloc|renew|show|free|delegate|revoke`.
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "common/util.h"

static int lease_alloc(gl_cli *cli, gpulease_client *c) {
  gpulease_lease l;
  gpulease_error err;
  uint32_t gpu;
  int rc = cli_pick_gpu(cli, c, &gpu);
  if (rc != EXIT_OK) return rc;
  if (gpulease_lease_alloc_opts(c, gpu, cli->vram_bytes, cli->ttl_s, &cli->lease_opts, &l,
                                &err) != GPULEASE_OK)
    return cli_fail(cli, "lease alloc", &err);
  cli_print_lease(cli, &l, true);
  return EXIT_OK;
}

/* lease delegate: a weaker secret of l. */
static int lease_delegate(gl_cli *cli, gpulease_client *c, const gpulease_lease *l,
                          uint32_t rights) {
  uint8_t secret[GPULEASE_SECRET_BYTES];
  gpulease_error err;
  if (gpulease_lease_delegate(c, l, rights, cli->have_ttl ? cli->ttl_s : 0, cli->to_tenant, secret,
                              &err) != GPULEASE_OK)
    return cli_fail(cli, "lease delegate", &err);
  char hex[2 * GPULEASE_SECRET_BYTES + 1], names[128];
  gpulease_secret_to_hex(secret, hex);
  uint64_t not_after;
  uint32_t got;
  gpulease_secret_describe(secret, NULL, &got, &not_after, NULL);
  gpulease_rights_format(got, names, sizeof names);
  if (cli->json) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "lease_id", json_object_new_uint64(l->id));
    json_object_object_add(o, "secret", json_object_new_string(hex));
    json_object_object_add(o, "rights", json_object_new_string(names));
    json_object_object_add(o, "not_after_unix_s", json_object_new_uint64(not_after));
    json_object_object_add(o, "to", json_object_new_string(cli->to_tenant ? cli->to_tenant : ""));
    puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
    json_object_put(o);
  } else {
    printf("lease      %" PRIu64 "\n", l->id);
    printf("secret     %s\n", hex);
    printf("rights     %s\n", names);
    if (not_after) printf("expires    in %" PRId64 " s\n", (int64_t)not_after - (int64_t)time(NULL));
    if (cli->to_tenant) printf("for tenant %s\n", cli->to_tenant);
  }
  return EXIT_OK;
}

int cmd_lease(gl_cli *cli) {
  const char *sub = cli->nwords > 1 ? cli->words[1] : NULL;
  int rc;
  gpulease_lease l;
  uint32_t rights = 0;
  uint64_t revoke_id = 0;
  if (!sub) return cli_usage_error("lease needs alloc, renew, show, free, delegate or revoke");
  if (strcmp(sub, "alloc") == 0) {
    if ((rc = cli_only(cli, OPT_VRAM | OPT_TTL | OPT_GPU | OPT_CLASS | OPT_PRINTF_FIFO |
                                OPT_MALLOC_HEAP, "lease alloc")))
      return rc;
    if (cli->nwords != 2) return cli_usage_error("lease alloc takes no ID");
    if (!cli->have_vram || !cli->have_ttl)
      return cli_usage_error("lease alloc needs --vram BYTES and --ttl SECONDS");
  } else if (strcmp(sub, "renew") == 0 || strcmp(sub, "show") == 0 || strcmp(sub, "free") == 0) {
    bool renew = sub[0] == 'r';
    if ((rc = cli_only(cli, OPT_SECRET | (renew ? OPT_TTL | OPT_ROTATE : 0), "lease"))) return rc;
    if (cli->nwords != 3) return cli_usage_error("lease %s takes exactly one lease ID", sub);
    if (renew && !cli->have_ttl) return cli_usage_error("lease renew needs --ttl SECONDS");
    if ((rc = cli_lease_from_args(cli, cli->words[2], &l))) return rc;
  } else if (strcmp(sub, "delegate") == 0) {
    if ((rc = cli_only(cli, OPT_SECRET | OPT_RIGHTS | OPT_TTL | OPT_TO, "lease delegate")))
      return rc;
    if (cli->nwords != 3) return cli_usage_error("lease delegate takes exactly one lease ID");
    if (!cli->rights) return cli_usage_error("lease delegate needs --rights LIST");
    if (gpulease_rights_parse(cli->rights, &rights) != GPULEASE_OK || !rights)
      return cli_usage_error("--rights: '%s' is not a list of query, renew, free, submit, "
                             "session, read, write, delegate, all", cli->rights);
    if ((rc = cli_lease_from_args(cli, cli->words[2], &l))) return rc;
  } else if (strcmp(sub, "revoke") == 0) {
    if ((rc = cli_only(cli, OPT_REASON, "lease revoke"))) return rc;
    if (cli->nwords != 3) return cli_usage_error("lease revoke takes exactly one lease ID");
    if (gl_parse_u64(cli->words[2], UINT64_MAX, &revoke_id) != 0 || revoke_id == 0)
      return cli_usage_error("lease ID '%s' is not a positive number", cli->words[2]);
  } else {
    return cli_usage_error("unknown lease command '%s' (alloc, renew, show, free, delegate, "
                           "revoke)", sub);
  }

  gpulease_client *c = cli_connect(cli);
  if (!c) return EXIT_FAILED;
  gpulease_error err;
  if (sub[0] == 'a') {
    rc = lease_alloc(cli, c);
  } else if (sub[0] == 'd') {
    rc = lease_delegate(cli, c, &l, rights);
  } else if (!strcmp(sub, "revoke")) {
    rc = gpulease_lease_revoke(c, revoke_id, cli->reason, &err) == GPULEASE_OK
             ? EXIT_OK
             : cli_fail(cli, "lease revoke", &err);
    if (rc == EXIT_OK) {
      if (cli->json) printf("{ \"lease_id\": %" PRIu64 ", \"revoked\": true }\n", revoke_id);
      else printf("lease %" PRIu64 " revoked\n", revoke_id);
    }
  } else if (sub[0] == 'r') {
    gpulease_status st = cli->rotate ? gpulease_lease_rotate(c, &l, cli->ttl_s, &err)
                                     : gpulease_lease_renew(c, &l, cli->ttl_s, &err);
    rc = st == GPULEASE_OK ? (cli_print_lease(cli, &l, cli->rotate), EXIT_OK)
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
