/*
 * pool.c - the client pool's nodes: where they come from (a list, a nodes
 * file, DNS SRV records re-resolved periodically), how each is reached
 * and verified, their health (down with exponential backoff, probed
 * again), and the pool's inventory of every node. The fan-out engine is
 * pool_map.c. docs/scale-out.md describes both.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "common/util.h"
#include "net/tls.h"
#include "pool_internal.h"
#include "srv.h"

#define DEFAULT_PER_NODE 4u
#define DEFAULT_MAX_LEASES 64u
#define DEFAULT_TTL_S 60u
#define DEFAULT_BACKOFF_MS 500u
#define DEFAULT_SRV_REFRESH_S 30u
#define MAX_NODES 4096u

void gpulease_pool_options_default(gpulease_pool_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_version = GPULEASE_POOL_OPTIONS_VERSION;
  o->srv_refresh_s = DEFAULT_SRV_REFRESH_S;
  o->max_leases_per_node = DEFAULT_PER_NODE;
  o->max_leases = DEFAULT_MAX_LEASES;
  o->lease_class = GPULEASE_CLASS_ISOLATED;
  o->lease_ttl_s = DEFAULT_TTL_S;
  o->down_backoff_ms = DEFAULT_BACKOFF_MS;
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* ---- the node list ------------------------------------------------------ */

/* Adds addr (checked) with pin ("" or 64 hex digits, checked) unless a
 * live node has that address; a removed node of that address comes back. */
static gpulease_status add_node(gpulease_pool *p, const char *addr, const char *pin,
                                const char *where, gpulease_error *err) {
  char host[256];
  uint16_t port;
  if (gl_parse_hostport(addr, 5701, host, sizeof host, &port) != 0 || port == 0 ||
      strlen(addr) >= sizeof p->nodes[0]->addr)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT,
                          "%s'%s' is not HOST:PORT or [IPv6]:PORT", where, addr);
  char fp[GL_TLS_FP_HEX_LEN];
  if (pin[0] && gl_tls_parse_fingerprint(pin, fp) != 0)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT,
                          "%s'%s' is not a SHA-256 pin (64 hex digits, colons allowed)", where,
                          pin);
  for (size_t i = 0; i < p->count; i++) {
    gl_pool_node *n = p->nodes[i];
    if (strcmp(n->addr, addr) == 0) {
      n->removed = false;
      snprintf(n->pin, sizeof n->pin, "%s", pin);
      return GPULEASE_OK;
    }
  }
  if (p->count >= MAX_NODES)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "more than %u nodes", MAX_NODES);
  if (p->count == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 8;
    gl_pool_node **nn = realloc(p->nodes, cap * sizeof *nn);
    if (!nn) return gl_lib_set_err(err, GPULEASE_NO_MEMORY, "out of memory");
    p->nodes = nn;
    p->cap = cap;
  }
  gl_pool_node *n = calloc(1, sizeof *n);
  if (!n) return gl_lib_set_err(err, GPULEASE_NO_MEMORY, "out of memory");
  snprintf(n->addr, sizeof n->addr, "%s", addr);
  snprintf(n->pin, sizeof n->pin, "%s", pin);
  p->nodes[p->count++] = n;
  return GPULEASE_OK;
}

static gpulease_status parse_list(gpulease_pool *p, const char *list, gpulease_error *err) {
  const char *s = list;
  while (*s) {
    const char *e = strchr(s, ',');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    char item[300];
    if (len >= sizeof item)
      return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "nodes: an entry is too long");
    memcpy(item, s, len);
    item[len] = 0;
    char *a = item;
    while (isspace((unsigned char)*a)) a++;
    char *z = a + strlen(a);
    while (z > a && isspace((unsigned char)z[-1])) *--z = 0;
    if (*a) {
      gpulease_status st = add_node(p, a, "", "nodes: ", err);
      if (st != GPULEASE_OK) return st;
    }
    if (!e) break;
    s = e + 1;
  }
  if (p->count == 0)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "nodes: no HOST:PORT in '%s'", list);
  return GPULEASE_OK;
}

static gpulease_status parse_file(gpulease_pool *p, const char *path, gpulease_error *err) {
  FILE *f = fopen(path, "r");
  if (!f)
    return gl_lib_set_err(err, GPULEASE_NOT_FOUND, "nodes file %s: %s", path, strerror(errno));
  char line[1024];
  unsigned lineno = 0;
  gpulease_status st = GPULEASE_OK;
  while (st == GPULEASE_OK && fgets(line, sizeof line, f)) {
    lineno++;
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    char addr[300] = "", pin[128] = "", extra[8] = "";
    int k = sscanf(line, "%299s %127s %7s", addr, pin, extra);
    if (k <= 0) continue;
    char where[320];
    snprintf(where, sizeof where, "%.256s:%u: ", path, lineno);
    if (k == 3) {
      st = gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT,
                          "%sexpected 'HOST:PORT [PIN-SHA256]', got more", where);
      break;
    }
    st = add_node(p, addr, k == 2 ? pin : "", where, err);
  }
  fclose(f);
  if (st == GPULEASE_OK && p->count == 0)
    st = gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "nodes file %s lists no node", path);
  return st;
}

/* Resolves the SRV name (without the pool's mutex: a resolution may take
 * seconds, and a map's threads need the mutex meanwhile), then, under it,
 * updates the node list: nodes no longer listed are marked removed, new
 * ones added. A name that does not resolve changes nothing. */
static gpulease_status resolve(gpulease_pool *p, gpulease_error *err) {
  gl_srv_target *t = NULL;
  size_t nt = 0;
  char why[512];
  int rc = gl_srv_resolve(p->srv_name, p->dns_server, &t, &nt, why, sizeof why);
  pthread_mutex_lock(&p->mu);
  p->resolved_at_ns = gl_mono_ns(); /* a failure waits a period before the next try too */
  if (rc != 0) {
    pthread_mutex_unlock(&p->mu);
    if (rc == -2) return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "SRV: %s", why);
    return gl_lib_set_err(err, GPULEASE_NOT_FOUND, "SRV: %s", why);
  }
  for (size_t i = 0; i < p->count; i++) p->nodes[i]->removed = true;
  gpulease_status st = GPULEASE_OK;
  for (size_t i = 0; i < nt && st == GPULEASE_OK; i++) {
    char addr[300];
    bool v6 = strchr(t[i].host, ':') != NULL;
    snprintf(addr, sizeof addr, "%s%s%s:%u", v6 ? "[" : "", t[i].host, v6 ? "]" : "",
             (unsigned)t[i].port);
    st = add_node(p, addr, "", "SRV target ", err);
  }
  pthread_mutex_unlock(&p->mu);
  free(t);
  return st;
}

int gl_pool_refresh_due(gpulease_pool *p, bool force, gpulease_error *err) {
  if (!p->srv_name) return 0;
  pthread_mutex_lock(&p->mu);
  uint64_t due = p->resolved_at_ns + (uint64_t)p->srv_refresh_s * 1000000000ull;
  bool now = force || gl_mono_ns() >= due;
  if (now) p->resolved_at_ns = gl_mono_ns(); /* one resolution at a time */
  pthread_mutex_unlock(&p->mu);
  if (!now) return 0;
  return resolve(p, err) == GPULEASE_OK ? 0 : -1;
}

/* ---- open, close, refresh ----------------------------------------------- */

static void pool_free(gpulease_pool *p) {
  if (!p) return;
  for (size_t i = 0; i < p->count; i++) free(p->nodes[i]);
  free(p->nodes);
  free(p->ca_file);
  free(p->pin_sha256);
  free(p->cert_file);
  free(p->key_file);
  free(p->bearer_token);
  free(p->srv_name);
  free(p->dns_server);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

/* The caller's connect options, each field as far as its struct_version
 * goes (an older caller's struct ends before the later fields); the rest
 * are the defaults. */
static void copts_copy(gpulease_connect_options *to, const gpulease_connect_options *from) {
  gpulease_connect_options_default(to);
  to->addr = from->addr;
  to->ca_file = from->ca_file;
  to->pin_sha256 = from->pin_sha256;
  to->insecure = from->insecure;
  to->timeout_ms = from->timeout_ms;
  if (from->struct_version >= 2) to->no_local = from->no_local;
  if (from->struct_version >= 3) {
    to->stripes = from->stripes;
    to->stripe_min_bytes = from->stripe_min_bytes;
  }
  if (from->struct_version >= 4) {
    to->cert_file = from->cert_file;
    to->key_file = from->key_file;
    to->bearer_token = from->bearer_token;
  }
}

gpulease_status gpulease_pool_open(const gpulease_pool_options *o, gpulease_pool **out,
                                   gpulease_error *err) {
  if (out) *out = NULL;
  if (!o || !out)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "pool: options and out are required");
  if (!gl_lib_version_ok(o->struct_version, GPULEASE_POOL_OPTIONS_VERSION))
    return gl_lib_version_err(err, "pool options", o->struct_version);
  if (o->connect &&
      !gl_lib_version_ok(o->connect->struct_version, GPULEASE_CONNECT_OPTIONS_VERSION))
    return gl_lib_version_err(err, "pool: connect options", o->connect->struct_version);
  int sources = (o->nodes != NULL) + (o->nodes_file != NULL) + (o->srv_name != NULL);
  if (sources != 1)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT,
                          "pool: give exactly one of a node list, a nodes file and an SRV name "
                          "(got %d)",
                          sources);
  if (o->lease_class != GPULEASE_CLASS_ISOLATED && o->lease_class != GPULEASE_CLASS_SHARED)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT,
                          "pool: leases are isolated or shared, not %s",
                          gpulease_lease_class_name(o->lease_class));
  gpulease_pool *p = calloc(1, sizeof *p);
  if (!p) return gl_lib_set_err(err, GPULEASE_NO_MEMORY, "out of memory");
  pthread_mutex_init(&p->mu, NULL);
  if (o->connect) copts_copy(&p->copts, o->connect);
  else gpulease_connect_options_default(&p->copts);
  p->ca_file = dup_or_null(p->copts.ca_file);
  p->pin_sha256 = dup_or_null(p->copts.pin_sha256);
  p->cert_file = dup_or_null(p->copts.cert_file);
  p->key_file = dup_or_null(p->copts.key_file);
  p->bearer_token = dup_or_null(p->copts.bearer_token);
  p->copts.addr = NULL;
  p->copts.ca_file = p->ca_file;
  p->copts.pin_sha256 = p->pin_sha256;
  p->copts.cert_file = p->cert_file;
  p->copts.key_file = p->key_file;
  p->copts.bearer_token = p->bearer_token;
  p->srv_name = dup_or_null(o->srv_name);
  p->dns_server = dup_or_null(o->dns_server);
  p->srv_refresh_s = o->srv_refresh_s ? o->srv_refresh_s : DEFAULT_SRV_REFRESH_S;
  p->max_per_node = o->max_leases_per_node ? o->max_leases_per_node : DEFAULT_PER_NODE;
  p->max_leases = o->max_leases ? o->max_leases : DEFAULT_MAX_LEASES;
  p->lease_ttl_s = o->lease_ttl_s ? o->lease_ttl_s : DEFAULT_TTL_S;
  p->backoff_ms = o->down_backoff_ms ? o->down_backoff_ms : DEFAULT_BACKOFF_MS;
  p->lease_class = o->lease_class;
  gpulease_status st;
  if (o->nodes) st = parse_list(p, o->nodes, err);
  else if (o->nodes_file) st = parse_file(p, o->nodes_file, err);
  else st = resolve(p, err);
  if (st != GPULEASE_OK) {
    pool_free(p);
    return st;
  }
  *out = p;
  return gl_lib_ok(err);
}

void gpulease_pool_close(gpulease_pool *pool) { pool_free(pool); }

gpulease_status gpulease_pool_refresh(gpulease_pool *pool, gpulease_error *err) {
  if (!pool) return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "pool: NULL");
  if (gl_pool_refresh_due(pool, true, err) != 0) return err ? err->status : GPULEASE_NOT_FOUND;
  return gl_lib_ok(err);
}

/* ---- reaching a node ---------------------------------------------------- */

void gl_pool_node_options(const gpulease_pool *p, const gl_pool_node *n,
                          gpulease_connect_options *o) {
  *o = p->copts;
  o->addr = n->addr;
  if (n->pin[0]) {
    o->pin_sha256 = n->pin;
    o->ca_file = NULL;
    o->insecure = 0;
  }
}

void gl_pool_node_failed_locked(gpulease_pool *p, gl_pool_node *n, gpulease_status st,
                                const char *msg) {
  n->last_status = st;
  snprintf(n->last_msg, sizeof n->last_msg, "%s", msg);
  uint64_t now = gl_mono_ns();
  if (n->down && !n->probing && now < n->retry_at_ns) return; /* already waiting */
  n->down = true;
  n->probing = false;
  n->failures++;
  n->backoff_ms = n->backoff_ms ? n->backoff_ms * 2 : p->backoff_ms;
  if (n->backoff_ms > GL_POOL_MAX_BACKOFF_MS) n->backoff_ms = GL_POOL_MAX_BACKOFF_MS;
  n->retry_at_ns = now + (uint64_t)n->backoff_ms * 1000000ull;
}

void gl_pool_node_up_locked(gl_pool_node *n) {
  n->down = false;
  n->probing = false;
  n->backoff_ms = 0;
  n->failures = 0;
  n->last_status = GPULEASE_OK;
  n->last_msg[0] = 0;
}

gpulease_status gl_pool_connect(gpulease_pool *p, gl_pool_node *n, bool probe,
                                gpulease_client **out, gpulease_error *err) {
  gpulease_connect_options o;
  gl_pool_node_options(p, n, &o);
  gpulease_status st = GPULEASE_OK;
  uint32_t full = o.timeout_ms ? o.timeout_ms : GL_LIB_DEFAULT_TIMEOUT_MS;
  if (probe && full > GL_POOL_PROBE_TIMEOUT_MS) {
    gpulease_connect_options q = o;
    q.timeout_ms = GL_POOL_PROBE_TIMEOUT_MS;
    gpulease_client *c = NULL;
    st = gpulease_client_connect(&q, &c, err);
    gpulease_client_close(c);
  }
  if (st == GPULEASE_OK) st = gpulease_client_connect(&o, out, err);
  pthread_mutex_lock(&p->mu);
  if (st == GPULEASE_OK) gl_pool_node_up_locked(n);
  else gl_pool_node_failed_locked(p, n, st, err ? err->message : "");
  pthread_mutex_unlock(&p->mu);
  return st;
}

bool gl_pool_status_connection(gpulease_status st) {
  return st == GPULEASE_DISCONNECTED || st == GPULEASE_TIMEOUT || st == GPULEASE_TLS_FAILED ||
         st == GPULEASE_PROTOCOL_ERROR;
}

bool gl_pool_status_retryable(gpulease_status st) {
  switch (st) {
  case GPULEASE_DISCONNECTED:
  case GPULEASE_TIMEOUT:
  case GPULEASE_TLS_FAILED:
  case GPULEASE_PROTOCOL_ERROR:
  case GPULEASE_LEASE_EXPIRED:   /* its lease ran out, or was revoked */
  case GPULEASE_NOT_FOUND:       /* its lease is gone (a restarted daemon) */
  case GPULEASE_UNAUTHORIZED:    /* its lease's secret is no longer good */
  case GPULEASE_CAPACITY_EXCEEDED:
  case GPULEASE_QUOTA_EXCEEDED:
  case GPULEASE_BUSY:
  case GPULEASE_INTERNAL:        /* the worker faulted */
  case GPULEASE_READ_FAILED:     /* the device or its context failed */
  case GPULEASE_WRITE_FAILED:
  case GPULEASE_MISSING_SEQ:
    return true;
  default:
    return false;
  }
}

gpulease_status gl_pool_probe(gpulease_pool *p, gl_pool_node *n, gpulease_inventory *inv,
                              gpulease_client **keep, gpulease_error *err) {
  if (keep) *keep = NULL;
  gpulease_client *c = NULL;
  gpulease_status st = gl_pool_connect(p, n, false, &c, err);
  if (st != GPULEASE_OK) return st;
  inv->struct_version = GPULEASE_INVENTORY_VERSION;
  st = gpulease_inventory_get(c, inv, err);
  if (st != GPULEASE_OK) {
    pthread_mutex_lock(&p->mu);
    gl_pool_node_failed_locked(p, n, st, err ? err->message : "");
    pthread_mutex_unlock(&p->mu);
  }
  if (st == GPULEASE_OK && keep) *keep = c;
  else gpulease_client_close(c);
  return st;
}

/* ---- the inventory of every node ---------------------------------------- */

typedef struct {
  gpulease_pool *p;
  gl_pool_node *n;
  gpulease_pool_node *out;
  pthread_t th;
  bool started;
} probe;

static void *probe_main(void *arg) {
  probe *pr = arg;
  gpulease_error err = {0};
  snprintf(pr->out->addr, sizeof pr->out->addr, "%s", pr->n->addr);
  gpulease_status st = gl_pool_probe(pr->p, pr->n, &pr->out->inventory, NULL, &err);
  pr->out->up = st == GPULEASE_OK;
  pr->out->status = st;
  snprintf(pr->out->message, sizeof pr->out->message, "%.255s", st == GPULEASE_OK ? "" : err.message);
  return NULL;
}

gpulease_status gpulease_pool_inventory(gpulease_pool *pool, gpulease_pool_node **nodes,
                                        size_t *count, gpulease_error *err) {
  if (nodes) *nodes = NULL;
  if (count) *count = 0;
  if (!pool || !nodes || !count)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "pool inventory: NULL argument");
  gpulease_error rerr;
  (void)gl_pool_refresh_due(pool, false, &rerr); /* a failed resolution keeps the nodes */
  pthread_mutex_lock(&pool->mu);
  size_t live = 0;
  for (size_t i = 0; i < pool->count; i++) live += !pool->nodes[i]->removed;
  gl_pool_node **list = calloc(live ? live : 1, sizeof *list);
  if (list) {
    size_t k = 0;
    for (size_t i = 0; i < pool->count; i++)
      if (!pool->nodes[i]->removed) list[k++] = pool->nodes[i];
  }
  pthread_mutex_unlock(&pool->mu);
  gpulease_pool_node *out = calloc(live ? live : 1, sizeof *out);
  probe *pr = calloc(live ? live : 1, sizeof *pr);
  if (!list || !out || !pr) {
    free(list);
    free(out);
    free(pr);
    return gl_lib_set_err(err, GPULEASE_NO_MEMORY, "out of memory");
  }
  for (size_t i = 0; i < live; i++) {
    pr[i] = (probe){.p = pool, .n = list[i], .out = &out[i]};
    pr[i].started = pthread_create(&pr[i].th, NULL, probe_main, &pr[i]) == 0;
    if (!pr[i].started) probe_main(&pr[i]);
  }
  for (size_t i = 0; i < live; i++)
    if (pr[i].started) pthread_join(pr[i].th, NULL);
  free(pr);
  free(list);
  *nodes = out;
  *count = live;
  return gl_lib_ok(err);
}

void gpulease_pool_nodes_release(gpulease_pool_node *nodes, size_t count) {
  (void)count;
  free(nodes);
}
