/*
 * lease_env.c - the lease in a program's environment, connected to and
 * read (lease_env.h). The variables are docs/cuda-driver.md's table.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/lease_env.h"

static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

static bool env_on(const char *name) {
  const char *v = env(name);
  return v && strcmp(v, "0") != 0;
}

static gl_lease_env_failure fail(gl_lease_env *e, gl_lease_env_failure f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static gl_lease_env_failure fail(gl_lease_env *e, gl_lease_env_failure f, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  if (e->client) gpulease_client_close(e->client);
  e->client = NULL;
  return f;
}

/* The connect options the environment asks for; the strings point into
 * the environment, read by gpulease_client_connect at once. */
static void options(gpulease_connect_options *o) {
  gpulease_connect_options_default(o);
  if (env("GPULEASE_ADDR")) o->addr = env("GPULEASE_ADDR");
  o->ca_file = env("GPULEASE_CA");
  o->pin_sha256 = env("GPULEASE_PIN_SHA256");
  o->insecure = env_on("GPULEASE_INSECURE");
  o->cert_file = env("GPULEASE_CERT");
  o->key_file = env("GPULEASE_KEY");
  o->bearer_token = env("GPULEASE_TOKEN");
  /* GPULEASE_STRIPES=N: connections a large copy takes (1: no striping). */
  if (env("GPULEASE_STRIPES")) o->stripes = (unsigned)strtoul(env("GPULEASE_STRIPES"), NULL, 10);
  /* GPULEASE_NO_LOCAL=1: QUIC even to a daemon on this machine. */
  o->no_local = env_on("GPULEASE_NO_LOCAL");
  if (env("GPULEASE_TIMEOUT_MS"))
    o->timeout_ms = (uint32_t)strtoul(env("GPULEASE_TIMEOUT_MS"), NULL, 10);
}

gl_lease_env_failure gl_lease_env_open(gl_lease_env *e) {
  memset(e, 0, sizeof *e);
  const char *lease_id = env("GPULEASE_LEASE"), *secret = env("GPULEASE_SECRET");
  if (!lease_id || !secret)
    return fail(e, GL_LEASE_ENV_NO_LEASE,
                "no lease: run the program under `gpulease exec`, or set GPULEASE_ADDR, "
                "GPULEASE_LEASE and GPULEASE_SECRET (docs/cuda-driver.md)");
  char *end = NULL;
  errno = 0;
  unsigned long long id = strtoull(lease_id, &end, 10);
  if (errno || !end || *end || id == 0)
    return fail(e, GL_LEASE_ENV_MALFORMED, "GPULEASE_LEASE is not a lease id: \"%s\"", lease_id);
  e->lease.id = id;
  if (gpulease_secret_from_hex(secret, e->lease.secret) != GPULEASE_OK)
    return fail(e, GL_LEASE_ENV_MALFORMED, "GPULEASE_SECRET is not %d hex digits",
                2 * GPULEASE_SECRET_BYTES);
  gpulease_connect_options o;
  options(&o);
  gpulease_error err;
  if (gpulease_client_connect(&o, &e->client, &err) != GPULEASE_OK) {
    e->client = NULL;
    e->status = err.status;
    return fail(e, GL_LEASE_ENV_UNREACHABLE, "cannot reach the daemon at %s: %s: %s",
                o.addr ? o.addr : "(default)", gpulease_status_name(err.status), err.message);
  }
  if (gpulease_lease_query(e->client, &e->lease, &err) != GPULEASE_OK) {
    e->status = err.status;
    return fail(e, GL_LEASE_ENV_LEASE, "lease %llu: %s: %s", id,
                gpulease_status_name(err.status), err.message);
  }
  gpulease_inventory *inv = malloc(sizeof *inv); /* large: not on the caller's stack */
  if (!inv) return fail(e, GL_LEASE_ENV_NO_MEMORY, "out of memory");
  gpulease_inventory_init(inv);
  gl_lease_env_failure f = GL_LEASE_ENV_OK;
  if (gpulease_inventory_get(e->client, inv, &err) != GPULEASE_OK) {
    e->status = err.status;
    f = fail(e, GL_LEASE_ENV_INVENTORY, "inventory: %s: %s", gpulease_status_name(err.status),
             err.message);
  } else {
    bool found = false;
    for (size_t i = 0; i < inv->gpu_count && i < GPULEASE_MAX_GPUS; i++)
      if (inv->gpus[i].index == e->lease.gpu_index) {
        e->gpu = inv->gpus[i];
        found = true;
      }
    snprintf(e->driver_version, sizeof e->driver_version, "%.63s", inv->driver_version);
    if (!found)
      f = fail(e, GL_LEASE_ENV_INVENTORY, "the daemon lists no GPU %u (the lease's)",
               e->lease.gpu_index);
  }
  free(inv);
  return f;
}
