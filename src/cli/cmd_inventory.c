/*
 * cmd_inventory.c - `gpulease inventory`: the node's GPUs (GET_INVENTORY).
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

/* The warm workers of GPU index in pool; false when the daemon did not
 * say (pool NULL, or no entry). */
static bool pool_of(const gpulease_warm_pool_info *pool, uint32_t index, uint32_t *target,
                           uint32_t *ready, uint32_t *starting) {
  for (uint32_t i = 0; pool && i < pool->gpu_count; i++)
    if (pool->gpus[i].index == index) {
      *target = pool->gpus[i].target;
      *ready = pool->gpus[i].ready;
      *starting = pool->gpus[i].starting;
      return true;
    }
  return false;
}

/* A quota value for people: "unlimited" for all ones. */
static const char *limit_str(uint64_t v, uint64_t all_ones, const char *unit, char *buf,
                             size_t len) {
  if (v == all_ones) return "unlimited";
  snprintf(buf, len, "%" PRIu64 "%s", v, unit);
  return buf;
}

static json_object *json_limit(uint64_t v, uint64_t all_ones) {
  return v == all_ones ? NULL : json_object_new_uint64(v);
}

static json_object *tenant_json(const gpulease_tenant_info *t) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "name", json_object_new_string(t->name));
  json_object_object_add(o, "admin", json_object_new_boolean((t->flags & GPULEASE_TENANT_ADMIN) != 0));
  json_object *q = json_object_new_object(); /* null: unlimited */
  json_object_object_add(q, "vram_bytes", json_limit(t->quota_vram_bytes, UINT64_MAX));
  json_object_object_add(q, "leases", json_limit(t->quota_leases, UINT32_MAX));
  json_object_object_add(q, "sessions", json_limit(t->quota_sessions, UINT32_MAX));
  json_object_object_add(q, "max_ttl_s", json_limit(t->quota_max_ttl_s, UINT32_MAX));
  json_object_object_add(q, "gpu_seconds_per_hour",
                         json_limit(t->quota_gpu_seconds_per_hour, UINT64_MAX));
  json_object_object_add(o, "quota", q);
  json_object *u = json_object_new_object();
  json_object_object_add(u, "vram_bytes", json_object_new_uint64(t->used_vram_bytes));
  json_object_object_add(u, "leases", json_object_new_uint64(t->used_leases));
  json_object_object_add(u, "sessions", json_object_new_uint64(t->used_sessions));
  json_object_object_add(u, "gpu_seconds_last_hour", json_object_new_uint64(t->used_gpu_seconds));
  json_object_object_add(o, "used", u);
  return o;
}

static void print_tenant_text(const gpulease_tenant_info *t) {
  char a[32], b[32], c[32], d[32], e[32];
  printf("tenant %s%s: VRAM %" PRIu64 " MiB of %s, leases %" PRIu32 " of %s, sessions %" PRIu32
         " of %s, max TTL %s, GPU-seconds %" PRIu64 " of %s in the last hour\n",
         t->name[0] ? t->name : "(anonymous)", (t->flags & GPULEASE_TENANT_ADMIN) ? " (admin)" : "",
         t->used_vram_bytes >> 20,
         t->quota_vram_bytes == UINT64_MAX ? "unlimited"
                                           : (snprintf(a, sizeof a, "%" PRIu64 " MiB",
                                                       t->quota_vram_bytes >> 20), a),
         t->used_leases, limit_str(t->quota_leases, UINT32_MAX, "", b, sizeof b),
         t->used_sessions, limit_str(t->quota_sessions, UINT32_MAX, "", c, sizeof c),
         limit_str(t->quota_max_ttl_s, UINT32_MAX, " s", d, sizeof d), t->used_gpu_seconds,
         limit_str(t->quota_gpu_seconds_per_hour, UINT64_MAX, "", e, sizeof e));
}

/* The SM targets whose cubins and PTX a GPU runs: "sm_90", and its
 * arch-specific "sm_90a" where it has one (else t2 is ""). */
static void targets_of(const gpulease_gpu_info *g, char *t1, char *t2, size_t len) {
  snprintf(t1, len, "sm_%u%u", g->cc_major, g->cc_minor);
  if (g->flags & GPULEASE_GPU_ARCH_SPECIFIC) snprintf(t2, len, "sm_%u%ua", g->cc_major, g->cc_minor);
  else t2[0] = 0;
}

/* GPU i's admission figures, or NULL (an older daemon). */
static const gpulease_gpu_admission *admission_of(const gpulease_admission_info *adm, uint32_t i) {
  return adm && i < adm->gpu_count && i < GPULEASE_MAX_GPUS ? &adm->gpus[i] : NULL;
}

static void print_json(const gpulease_inventory *inv, const gpulease_warm_pool_info *pool,
                       const gpulease_admission_info *adm) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "driver_version", json_object_new_string(inv->driver_version));
  json_object_object_add(o, "max_ttl_s", json_object_new_int64(inv->max_ttl_s));
  json_object *arr = json_object_new_array();
  for (uint32_t i = 0; i < inv->gpu_count; i++) {
    const gpulease_gpu_info *g = &inv->gpus[i];
    json_object *j = json_object_new_object();
    json_object_object_add(j, "index", json_object_new_int64(g->index));
    json_object_object_add(j, "uuid", json_object_new_string(g->uuid));
    json_object_object_add(j, "name", json_object_new_string(g->name));
    char cc[16];
    snprintf(cc, sizeof cc, "%u.%u", g->cc_major, g->cc_minor);
    json_object_object_add(j, "compute_capability", json_object_new_string(cc));
    json_object_object_add(j, "sm_count", json_object_new_int64(g->sm_count));
    json_object *targets = json_object_new_array();
    char t1[24], t2[24];
    targets_of(g, t1, t2, sizeof t1);
    json_object_array_add(targets, json_object_new_string(t1));
    if (t2[0]) json_object_array_add(targets, json_object_new_string(t2));
    json_object_object_add(j, "sm_targets", targets);
    char isa[16];
    snprintf(isa, sizeof isa, "%u.%u", g->ptx_isa_driver_major, g->ptx_isa_driver_minor);
    json_object_object_add(j, "ptx_isa_driver",
                           g->ptx_isa_driver_major ? json_object_new_string(isa) : NULL);
    snprintf(isa, sizeof isa, "%u.%u", g->ptx_isa_nvjitlink_major, g->ptx_isa_nvjitlink_minor);
    json_object_object_add(j, "ptx_isa_nvjitlink",
                           g->ptx_isa_nvjitlink_major ? json_object_new_string(isa) : NULL);
    json_object_object_add(j, "total_vram_bytes", json_object_new_uint64(g->total_vram_bytes));
    json_object_object_add(j, "free_vram_bytes", json_object_new_uint64(g->free_vram_bytes));
    json_object_object_add(j, "leased_vram_bytes", json_object_new_uint64(g->leased_vram_bytes));
    json_object_object_add(j, "active_leases", json_object_new_int64(g->active_leases));
    json_object_object_add(j, "context_overhead_bytes",
                           json_object_new_uint64(g->context_overhead_bytes));
    json_object_object_add(j, "emulated",
                           json_object_new_boolean((g->flags & GPULEASE_GPU_EMULATED) != 0));
    json_object_object_add(j, "mig", json_object_new_boolean((g->flags & GPULEASE_GPU_MIG) != 0));
    json_object_object_add(j, "fenced",
                           json_object_new_boolean((g->flags & GPULEASE_GPU_FENCED) != 0));
    uint32_t t, r, st;
    if (pool_of(pool, g->index, &t, &r, &st)) {
      json_object *w = json_object_new_object();
      json_object_object_add(w, "target", json_object_new_int64(t));
      json_object_object_add(w, "ready", json_object_new_int64(r));
      json_object_object_add(w, "starting", json_object_new_int64(st));
      json_object_object_add(j, "warm_workers", w);
    }
    const gpulease_gpu_admission *a = admission_of(adm, i);
    if (a) {
      json_object_object_add(j, "max_isolated_contexts",
                             json_object_new_int64(a->max_isolated_contexts));
      json_object_object_add(
          j, "max_isolated_contexts_learned",
          json_object_new_boolean((a->flags & GPULEASE_ADMISSION_LEARNED) != 0));
      json_object_object_add(j, "isolated_contexts", json_object_new_int64(a->isolated_contexts));
      json_object_object_add(j, "isolated_leased", json_object_new_int64(a->leased));
      json_object_object_add(j, "isolated_warm", json_object_new_int64(a->warm));
      json_object_object_add(j, "isolated_spare", json_object_new_int64(a->spare));
      json_object_object_add(j, "isolated_tearing_down", json_object_new_int64(a->tearing_down));
      json_object_object_add(j, "isolated_queued", json_object_new_int64(a->queued));
    }
    json_object_array_add(arr, j);
  }
  json_object_object_add(o, "gpus", arr);
  if (adm) {
    json_object_object_add(o, "isolated_queue_max", json_object_new_int64(adm->isolated_queue_max));
    json_object_object_add(o, "isolated_queue_ms", json_object_new_int64(adm->isolated_queue_ms));
  }
  json_object_object_add(o, "tenant", tenant_json(&inv->tenant));
  puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
  json_object_put(o);
}

static void print_text(const gpulease_inventory *inv, const gpulease_warm_pool_info *pool,
                       const gpulease_admission_info *adm) {
  printf("driver %s, max TTL %" PRIu32 " s, %" PRIu32 " GPU(s)\n",
         inv->driver_version[0] ? inv->driver_version : "(none)", inv->max_ttl_s, inv->gpu_count);
  print_tenant_text(&inv->tenant);
  if (inv->gpu_count == 0) {
    printf("no GPU on this node\n");
    return;
  }
  int w = 20; /* the NAME column fits the longest name */
  for (uint32_t i = 0; i < inv->gpu_count; i++) {
    int n = (int)strnlen(inv->gpus[i].name, sizeof inv->gpus[i].name);
    if (n > w) w = n;
  }
  printf("%-3s %-*s %-5s %-4s %11s %11s %11s %6s\n", "GPU", w, "NAME", "CC", "SMS", "TOTAL MiB",
         "FREE MiB", "LEASED MiB", "LEASES");
  for (uint32_t i = 0; i < inv->gpu_count; i++) {
    const gpulease_gpu_info *g = &inv->gpus[i];
    char cc[16];
    snprintf(cc, sizeof cc, "%u.%u", g->cc_major, g->cc_minor);
    printf("%-3" PRIu32 " %-*s %-5s %-4" PRIu32 " %11" PRIu64 " %11" PRIu64 " %11" PRIu64
           " %6" PRIu32 "%s\n",
           g->index, w, g->name, cc, g->sm_count, g->total_vram_bytes >> 20,
           g->free_vram_bytes >> 20, g->leased_vram_bytes >> 20, g->active_leases,
           (g->flags & GPULEASE_GPU_EMULATED) ? "  (emulated)" : "");
    printf("    %s\n", g->uuid);
    char t1[24], t2[24];
    targets_of(g, t1, t2, sizeof t1);
    printf("    targets %s%s%s", t1, t2[0] ? ", " : "", t2);
    if (g->ptx_isa_driver_major)
      printf("; PTX ISA up to %u.%u", g->ptx_isa_driver_major, g->ptx_isa_driver_minor);
    if (g->ptx_isa_nvjitlink_major)
      printf(", %u.%u through nvJitLink", g->ptx_isa_nvjitlink_major, g->ptx_isa_nvjitlink_minor);
    else if (!(g->flags & GPULEASE_GPU_EMULATED) && g->ptx_isa_driver_major)
      printf(" (no nvJitLink for newer PTX)");
    printf("\n");
    if (g->flags & GPULEASE_GPU_FENCED)
      printf("    FENCED: a worker's teardown failed; no new leases until its memory comes back "
             "or an admin clears it (gpulease admin unfence %" PRIu32 ")\n",
             g->index);
    if (g->flags & GPULEASE_GPU_MIG)
      printf("    in MIG mode: only partition leases (--class partition), a MIG instance each\n");
    if (g->context_overhead_bytes)
      printf("    an isolated lease takes %" PRIu64 " MiB of VRAM beyond its size (its CUDA "
             "context); shared leases share one\n",
             g->context_overhead_bytes >> 20);
    uint32_t t, r, st;
    if (pool_of(pool, g->index, &t, &r, &st) && t > 0)
      printf("    warm workers: %" PRIu32 " ready, %" PRIu32 " starting (pool of %" PRIu32 ")\n",
             r, st, t);
    const gpulease_gpu_admission *a = admission_of(adm, i);
    if (a && !(g->flags & GPULEASE_GPU_MIG))
      printf("    isolated contexts: %" PRIu32 " of %" PRIu32 "%s (%" PRIu32 " leased, %" PRIu32
             " warm, %" PRIu32 " spare, %" PRIu32 " tearing down); %" PRIu32
             " request(s) waiting for one\n",
             a->isolated_contexts, a->max_isolated_contexts,
             (a->flags & GPULEASE_ADMISSION_LEARNED) ? " (learned from the driver)" : "",
             a->leased, a->warm, a->spare, a->tearing_down, a->queued);
  }
}

int cmd_inventory(gl_cli *cli) {
  if (cli->nwords != 1) return cli_usage_error("inventory takes no arguments");
  int rc = cli_only(cli, 0, "inventory");
  if (rc) return rc;
  gpulease_client *c = cli_connect(cli);
  if (!c) return EXIT_FAILED;
  static gpulease_inventory inv;
  static gpulease_warm_pool_info pool;
  static gpulease_admission_info adm;
  gpulease_inventory_init(&inv);
  gpulease_warm_pool_info_init(&pool);
  gpulease_admission_info_init(&adm);
  gpulease_error err;
  if (gpulease_inventory_get(c, &inv, &err) != GPULEASE_OK) {
    rc = cli_fail(cli, "inventory", &err);
  } else {
    /* An older daemon has no POOL_INFO: the inventory without the pool. */
    const gpulease_warm_pool_info *p = gpulease_warm_pool_get(c, &pool, NULL) == GPULEASE_OK ? &pool : NULL;
    /* An older daemon has no admission block: the inventory without it. */
    const gpulease_admission_info *a =
        gpulease_admission_get(c, &adm, NULL) == GPULEASE_OK ? &adm : NULL;
    if (cli->json) print_json(&inv, p, a);
    else print_text(&inv, p, a);
  }
  gpulease_client_close(c);
  return rc;
}
