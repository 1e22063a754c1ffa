/*
 * pool_map.c - gpulease_pool_map: one kernel over N chunks on the pool's
 * nodes (docs/scale-out.md).
 *
 * The job: a queue of chunk indices, and slots. A slot is a thread with a
 * connection to one node and, once it has one, a lease there; it takes
 * chunks from the queue and runs each with one GPU_SUBMIT (input slice
 * in, kernel, output slice out) until none are left. The plan: each
 * node's room (its inventory: free VRAM for a lease of the chunk's
 * slices, and the lease class's context overhead) bounds its slots, with
 * max_leases_per_node and max_leases, handed out one at a time to the
 * node with the most room left (spread).
 *
 * Failures: a chunk whose submit fails for a reason of the node, the
 * connection or the lease (gl_pool_status_retryable) goes back to the
 * queue, marked to avoid that node, until max_attempts; any other status
 * is the kernel's and ends the job. A connection failure marks the node
 * down (pool.c: exponential backoff), and its slots wait to probe it
 * again; a lease lost is replaced; a node without room for a lease loses
 * that slot. At the end, with the queue empty, an idle slot runs a backup
 * copy of a chunk that has run long on another node (hedge_locked): the
 * first copy to finish is kept, and when the job is over the waits still
 * running (a loser, a copy stuck on a node that stopped answering) are
 * aborted (gl_lib_client_abort), so the map returns without waiting out
 * the reply timeout. The job fails when no slot is left, when every node stayed
 * down for GL_POOL_ALL_DOWN_MS, or at the deadline.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_internal.h"
#include "common/util.h"
#include "pool_internal.h"

#define DEFAULT_ATTEMPTS 3u
#define DEFAULT_DEADLINE_MS 600000u
/* Every node down this long, with chunks left: the job fails. */
#define GL_POOL_ALL_DOWN_MS 10000u
/* How far into the queue a slot looks for a chunk that did not fail on
 * its node. */
#define PICK_WINDOW 64u
#define SLICE_ALIGN 256u

/* The tail: a chunk running this many times a chunk's mean submit time
 * (and at least HEDGE_MIN_MS) when the queue is empty gets a backup copy on
 * another node; the first to finish wins (chunks are idempotent). */
#define HEDGE_FACTOR 4.0
#define HEDGE_MIN_MS 20.0

enum { CH_PENDING = 0, CH_RUNNING = 1, CH_WRITING = 2, CH_DONE = 3 };

typedef struct job job;

typedef struct {
  job *j;
  size_t node; /* index into j->nodes */
  pthread_t th;
  bool started;
  /* Under j->mu: the slot's connection (for gpulease_pool_map to abort a
   * wait stuck on a node that stopped answering), and the chunk it runs. */
  gpulease_client *client;
  uint64_t cur;    /* UINT64_MAX: none */
  uint64_t cur_t0; /* mono ns when it took it */
} slot;

typedef struct {
  gl_pool_node *n;
  gpulease_map_node_stats st;
  uint32_t planned;  /* slots the plan gave it */
  uint32_t live;     /* slots still running */
  uint64_t capacity; /* leases its inventory has room for */
  gpulease_client *probe_client; /* from the plan's probe, for its first slot */
  gpulease_inventory inv;
  bool probed_ok;
  gpulease_status probe_status;
  char probe_msg[256];
} job_node;

struct job {
  gpulease_pool *p;
  const gpulease_map_desc *d;
  uint64_t nchunks;
  uint64_t out_off, lease_bytes;
  uint32_t max_attempts;
  uint64_t deadline_ns;
  uint64_t t0;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint8_t *state;
  uint8_t *copies; /* tries of a chunk running now: 1, or 2 with a backup */
  uint32_t *attempts;
  int32_t *avoid; /* the job-node index of a chunk's last failure, or -1 */
  uint64_t *queue; /* pending chunks, a ring */
  uint64_t qhead, qlen;
  uint64_t done, running, retries, hedges;
  double lat_avg_ms; /* a chunk's submit time, smoothed */
  bool stop, failed;
  gpulease_status fail_st;
  char fail_msg[1024];
  double *lat_ms;
  uint64_t nlat;
  job_node *nodes; /* nodes_cap entries, never moved: slots hold pointers */
  size_t nnodes, nodes_cap;
  slot *slots;
  size_t nslots, slots_cap;
  uint64_t all_down_since;
};

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* Ends the job with st and a message, unless it already ended. Under mu. */
static void fail_locked(job *j, gpulease_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail_locked(job *j, gpulease_status st, const char *fmt, ...) {
  if (!j->failed) {
    j->failed = true;
    j->fail_st = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->fail_msg, sizeof j->fail_msg, fmt, ap);
    va_end(ap);
  }
  j->stop = true;
  pthread_cond_broadcast(&j->cv);
}

static void timed_wait_locked(job *j, uint64_t ms) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t ns = (uint64_t)ts.tv_nsec + ms * 1000000ull;
  ts.tv_sec += (time_t)(ns / 1000000000ull);
  ts.tv_nsec = (long)(ns % 1000000000ull);
  pthread_cond_timedwait(&j->cv, &j->mu, &ts);
}

static void requeue_locked(job *j, uint64_t c) {
  j->state[c] = CH_PENDING;
  j->queue[(j->qhead + j->qlen) % j->nchunks] = c;
  j->qlen++;
}

/* Whether a node other than `me` is up with a slot running. Under mu. */
static bool other_node_serving_locked(job *j, size_t me) {
  for (size_t i = 0; i < j->nnodes; i++)
    if (i != me && j->nodes[i].live > 0 && !j->nodes[i].n->down && !j->nodes[i].n->removed)
      return true;
  return false;
}

/* A backup of a chunk that runs long on another node, for slot `sl` when
 * the queue is empty; UINT64_MAX: none. Under mu. */
static uint64_t hedge_locked(job *j, slot *sl) {
  double after_ms = HEDGE_FACTOR * j->lat_avg_ms;
  if (after_ms < HEDGE_MIN_MS) after_ms = HEDGE_MIN_MS;
  uint64_t now = gl_mono_ns(), after_ns = (uint64_t)(after_ms * 1e6);
  for (size_t i = 0; i < j->nslots; i++) {
    slot *o = &j->slots[i];
    if (o == sl || o->cur == UINT64_MAX || o->node == sl->node) continue;
    uint64_t c = o->cur;
    if (j->state[c] != CH_RUNNING || j->copies[c] != 1 || now - o->cur_t0 < after_ns) continue;
    j->copies[c]++;
    j->running++;
    j->hedges++;
    return c;
  }
  return UINT64_MAX;
}

/* Takes a chunk for slot `sl` on node `me`: the first pending one in the
 * window that did not fail there, or, when no other node serves, any; with
 * the queue empty, a backup of a straggler elsewhere (hedge_locked).
 * UINT64_MAX: none now. Under mu. */
static uint64_t take_locked(job *j, slot *sl) {
  size_t me = sl->node;
  if (j->qlen == 0) return hedge_locked(j, sl);
  uint64_t win = j->qlen < PICK_WINDOW ? j->qlen : PICK_WINDOW;
  uint64_t pick = UINT64_MAX;
  for (uint64_t k = 0; k < win; k++) {
    uint64_t c = j->queue[(j->qhead + k) % j->nchunks];
    if (j->avoid[c] != (int32_t)me) {
      pick = k;
      break;
    }
  }
  if (pick == UINT64_MAX) {
    if (other_node_serving_locked(j, me)) return UINT64_MAX;
    pick = 0;
  }
  uint64_t at = (j->qhead + pick) % j->nchunks;
  uint64_t c = j->queue[at];
  /* close the gap: move the entries before it one place on */
  for (uint64_t k = pick; k > 0; k--)
    j->queue[(j->qhead + k) % j->nchunks] = j->queue[(j->qhead + k - 1) % j->nchunks];
  j->qhead = (j->qhead + 1) % j->nchunks;
  j->qlen--;
  j->state[c] = CH_RUNNING;
  j->copies[c] = 1;
  j->running++;
  return c;
}

/* A chunk's try failed on node `me` with a retryable status: back to the
 * queue, or the job's end after max_attempts. Under mu. */
static void chunk_failed_locked(job *j, size_t me, uint64_t c, gpulease_status st,
                                const char *msg) {
  j->running--;
  j->attempts[c]++;
  job_node *jn = &j->nodes[me];
  jn->st.failures++;
  if (j->attempts[c] >= j->max_attempts) {
    fail_locked(j, st, "chunk %llu failed %u times; the last on %s: %s: %s",
                (unsigned long long)c, j->attempts[c], jn->n->addr, gpulease_status_name(st),
                msg);
    return;
  }
  jn->st.retries++;
  j->retries++;
  j->avoid[c] = (int32_t)me;
  requeue_locked(j, c);
  pthread_cond_broadcast(&j->cv);
}

/* Builds the kernel parameters of chunk c (bytes: its input bytes). */
static void chunk_params(const job *j, uint64_t c, uint32_t bytes, gpulease_param *params) {
  const gpulease_map_desc *d = j->d;
  for (size_t i = 0; i < d->arg_count; i++) {
    const gpulease_map_arg *a = &d->args[i];
    uint32_t u;
    switch (a->kind) {
    case GPULEASE_MAP_IN: params[i] = gpulease_param_pointer(0); break;
    case GPULEASE_MAP_OUT: params[i] = gpulease_param_pointer(j->out_off); break;
    case GPULEASE_MAP_BYTES:
      u = bytes;
      params[i] = gpulease_param_scalar(&u, sizeof u);
      break;
    case GPULEASE_MAP_INDEX:
      u = (uint32_t)c;
      params[i] = gpulease_param_scalar(&u, sizeof u);
      break;
    default: params[i] = gpulease_param_scalar(a->value, a->size); break;
    }
  }
}

typedef struct {
  gpulease_client *c;
  gpulease_lease lease;
  bool have_lease;
  uint64_t lease_renew_at; /* mono ns: renew before the next submit after this */
} slot_conn;


/* Publishes the slot's connection (gpulease_pool_map may abort its wait). */
static void set_client(slot *sl, gpulease_client *c) {
  pthread_mutex_lock(&sl->j->mu);
  sl->client = c;
  pthread_mutex_unlock(&sl->j->mu);
}

static void drop_conn(slot *sl, slot_conn *sc) {
  if (!sc->c) return;
  set_client(sl, NULL);
  gpulease_client_close(sc->c);
  sc->c = NULL;
}

/* Frees the slot's lease. When the connection fails (its wait was aborted
 * at the job's end, or the node went away) the lease is kept, with the
 * connection dropped: the next reconnect asks after it, or the slot's end
 * frees it on a new connection. */
static void drop_lease(slot *sl, slot_conn *sc) {
  if (!sc->have_lease) return;
  gpulease_error e;
  gpulease_status st = sc->c ? gpulease_lease_free(sc->c, &sc->lease, &e) : GPULEASE_DISCONNECTED;
  if (gl_pool_status_connection(st)) drop_conn(sl, sc);
  else sc->have_lease = false;
}

static void note_lease(job *j, slot_conn *sc) {
  uint64_t ms = sc->lease.remaining_ms ? sc->lease.remaining_ms : (uint64_t)sc->lease.ttl_s * 1000;
  sc->lease_renew_at = gl_mono_ns() + ms * 1000000ull / 3 * 2;
  (void)j;
}

/* The slot's loop. See the file's comment. */
static void *slot_main(void *arg) {
  slot *sl = arg;
  job *j = sl->j;
  gpulease_pool *p = j->p;
  const gpulease_map_desc *d = j->d;
  job_node *jn = &j->nodes[sl->node];
  gl_pool_node *n = jn->n;
  slot_conn sc = {0};
  gpulease_param params[GPULEASE_MAX_PARAMS];
  gpulease_error err;
  bool retire = false;

  pthread_mutex_lock(&j->mu);
  if (jn->probe_client) { /* the plan's connection */
    sc.c = jn->probe_client;
    sl->client = sc.c;
    jn->probe_client = NULL;
  }
  pthread_mutex_unlock(&j->mu);

  while (!retire) {
    pthread_mutex_lock(&j->mu);
    if (j->stop || j->done == j->nchunks) {
      pthread_mutex_unlock(&j->mu);
      break;
    }
    if (n->removed) { /* gone from the SRV records */
      pthread_mutex_unlock(&j->mu);
      break;
    }
    /* Health is the pool's, under its own mutex. */
    pthread_mutex_lock(&p->mu);
    bool wait_node = false;
    if (!sc.c && n->down) {
      if (n->probing || gl_mono_ns() < n->retry_at_ns) wait_node = true;
      else n->probing = true; /* this slot probes it */
    }
    pthread_mutex_unlock(&p->mu);
    if (wait_node) {
      timed_wait_locked(j, 20);
      pthread_mutex_unlock(&j->mu);
      continue;
    }
    pthread_mutex_unlock(&j->mu);

    if (!sc.c) {
      if (gl_pool_connect(p, n, n->down, &sc.c, &err) != GPULEASE_OK) {
        sc.c = NULL;
        pthread_mutex_lock(&j->mu);
        jn->st.failures++;
        pthread_mutex_unlock(&j->mu);
        continue;
      }
      set_client(sl, sc.c);
      if (sc.have_lease) { /* still there? (a connection lost, the daemon alive) */
        if (gpulease_lease_query(sc.c, &sc.lease, &err) == GPULEASE_OK) note_lease(j, &sc);
        else sc.have_lease = false;
      }
    }
    if (!sc.have_lease) {
      gpulease_lease_opts lo;
      gpulease_lease_opts_default(&lo);
      lo.lease_class = p->lease_class;
      gpulease_status st = gpulease_lease_alloc_opts(sc.c, GPULEASE_ANY_GPU, j->lease_bytes,
                                                     p->lease_ttl_s, &lo, &sc.lease, &err);
      pthread_mutex_lock(&j->mu);
      if (st == GPULEASE_OK) {
        jn->st.leases++;
        sc.have_lease = true;
        note_lease(j, &sc);
      } else {
        jn->st.failures++;
        if (gl_pool_status_connection(st)) {
          pthread_mutex_lock(&p->mu);
          gl_pool_node_failed_locked(p, n, st, err.message);
          pthread_mutex_unlock(&p->mu);
          pthread_mutex_unlock(&j->mu);
          drop_conn(sl, &sc);
          continue;
        } else if (st == GPULEASE_INVALID_ARGUMENT || st == GPULEASE_UNSUPPORTED) {
          fail_locked(j, st, "lease of %llu bytes on %s: %s: %s",
                      (unsigned long long)j->lease_bytes, n->addr, gpulease_status_name(st),
                      err.message);
        } else { /* no room there (CAPACITY_EXCEEDED, QUOTA_EXCEEDED, BUSY ...) */
          retire = true;
          pthread_mutex_lock(&p->mu);
          n->last_status = st;
          snprintf(n->last_msg, sizeof n->last_msg, "%.255s", err.message);
          pthread_mutex_unlock(&p->mu);
        }
      }
      pthread_mutex_unlock(&j->mu);
      continue;
    }

    /* A chunk. */
    pthread_mutex_lock(&j->mu);
    uint64_t c = UINT64_MAX;
    while (!j->stop && j->done < j->nchunks && !n->removed) {
      c = take_locked(j, sl);
      if (c != UINT64_MAX) break;
      timed_wait_locked(j, 20); /* the others may still fail and hand chunks back */
    }
    if (c != UINT64_MAX) {
      sl->cur = c;
      sl->cur_t0 = gl_mono_ns();
    }
    pthread_mutex_unlock(&j->mu);
    if (c == UINT64_MAX) continue;

    gpulease_status st = GPULEASE_OK;
    if (gl_mono_ns() >= sc.lease_renew_at) {
      st = gpulease_lease_renew(sc.c, &sc.lease, p->lease_ttl_s, &err);
      if (st == GPULEASE_OK) note_lease(j, &sc);
    }
    uint64_t off = c * d->chunk_bytes;
    uint64_t bytes = d->input_bytes - off < d->chunk_bytes ? d->input_bytes - off : d->chunk_bytes;
    gpulease_submit_result res;
    gpulease_submit_result_init(&res);
    uint64_t t0 = gl_mono_ns();
    if (st == GPULEASE_OK) {
      chunk_params(j, c, (uint32_t)bytes, params);
      gpulease_submit_desc sd;
      gpulease_submit_desc_default(&sd);
      sd.image = d->image;
      sd.image_size = d->image_size;
      sd.format = d->format;
      sd.kernel = d->kernel;
      memcpy(sd.grid, d->grid, sizeof sd.grid);
      memcpy(sd.block, d->block, sizeof sd.block);
      sd.shared_mem_bytes = d->shared_mem_bytes;
      sd.input = (const uint8_t *)d->input + off;
      sd.input_size = (size_t)bytes;
      sd.input_offset = 0;
      sd.output_offset = j->out_off;
      sd.output_size = d->output_bytes_per_chunk;
      sd.params = params;
      sd.param_count = d->arg_count;
      sd.use_params = 1;
      st = gpulease_submit(sc.c, &sc.lease, &sd, &res, &err);
    }
    double ms = (double)(gl_mono_ns() - t0) / 1e6;
    pthread_mutex_lock(&j->mu);
    sl->cur = UINT64_MAX;
    j->copies[c]--;
    /* The other copy of a hedged chunk finished first, or the job ended. */
    bool moot = j->state[c] != CH_RUNNING || j->stop;
    if (st == GPULEASE_OK && !moot) j->state[c] = CH_WRITING; /* this copy's output lands */
    pthread_mutex_unlock(&j->mu);
    if (st == GPULEASE_OK && moot) {
      gpulease_submit_result_release(&res);
      pthread_mutex_lock(&j->mu);
      j->running--;
      jn->st.seconds += ms / 1e3;
      pthread_cond_broadcast(&j->cv);
      pthread_mutex_unlock(&j->mu);
      continue;
    }
    if (st == GPULEASE_OK) {
      if (d->output_bytes_per_chunk)
        memcpy((uint8_t *)d->output + c * d->output_bytes_per_chunk, res.output,
               d->output_bytes_per_chunk);
      gpulease_submit_result_release(&res);
      pthread_mutex_lock(&j->mu);
      j->state[c] = CH_DONE;
      j->running--;
      j->done++;
      j->lat_ms[j->nlat++] = ms;
      j->lat_avg_ms = j->lat_avg_ms == 0 ? ms : 0.9 * j->lat_avg_ms + 0.1 * ms;
      jn->st.chunks++;
      jn->st.bytes_in += bytes;
      jn->st.bytes_out += d->output_bytes_per_chunk;
      jn->st.seconds += ms / 1e3;
      if (d->progress) d->progress(j->done, j->nchunks, d->progress_user);
      pthread_cond_broadcast(&j->cv);
      pthread_mutex_unlock(&j->mu);
      continue;
    }
    gpulease_submit_result_release(&res);
    pthread_mutex_lock(&j->mu);
    jn->st.seconds += ms / 1e3;
    if (moot || j->copies[c] > 0) {
      /* done by the other copy, the job over (its wait maybe aborted), or
       * the other copy still runs: only this slot's lease is its concern */
      j->running--;
    } else if (!gl_pool_status_retryable(st)) {
      j->running--;
      jn->st.failures++;
      fail_locked(j, st, "chunk %llu on %s: %s: %s", (unsigned long long)c, n->addr,
                  gpulease_status_name(st), err.message);
      pthread_mutex_unlock(&j->mu);
      break;
    } else {
      chunk_failed_locked(j, sl->node, c, st, err.message);
    }
    pthread_mutex_unlock(&j->mu);
    if (gl_pool_status_connection(st)) {
      if (!moot) {
        pthread_mutex_lock(&p->mu);
        gl_pool_node_failed_locked(p, n, st, err.message);
        pthread_mutex_unlock(&p->mu);
      }
      drop_conn(sl, &sc); /* the lease is asked about after the reconnect */
    } else {
      drop_lease(sl, &sc); /* lost, or in doubt: a new one */
    }
  }
  if (sc.have_lease) {
    gpulease_status fs =
        sc.c ? gpulease_lease_free(sc.c, &sc.lease, &err) : GPULEASE_DISCONNECTED;
    if (gl_pool_status_connection(fs) && !n->down) {
      /* its connection was cut (a wait aborted at the job's end) on a node
       * still up: a new one (a short handshake) to free the lease */
      drop_conn(sl, &sc);
      if (gl_pool_connect(p, n, true, &sc.c, &err) == GPULEASE_OK) {
        set_client(sl, sc.c);
        (void)gpulease_lease_free(sc.c, &sc.lease, &err);
      } else {
        sc.c = NULL;
      }
    }
    sc.have_lease = false;
  }
  drop_conn(sl, &sc);
  pthread_mutex_lock(&j->mu);
  jn->live--;
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
  return NULL;
}

/* ---- the plan ----------------------------------------------------------- */

static void *plan_probe(void *arg) {
  job_node *jn = ((void **)arg)[0];
  job *j = ((void **)arg)[1];
  gpulease_error err = {0};
  gpulease_client *c = NULL;
  gpulease_status st = gl_pool_probe(j->p, jn->n, &jn->inv, &c, &err);
  jn->probe_client = c;
  jn->probed_ok = st == GPULEASE_OK;
  jn->probe_status = st;
  snprintf(jn->probe_msg, sizeof jn->probe_msg, "%.255s", st == GPULEASE_OK ? "" : err.message);
  return NULL;
}

/* Leases of j->lease_bytes the node's inventory has room for. */
static uint64_t node_room(const job *j, const gpulease_inventory *inv) {
  uint64_t room = 0;
  for (uint32_t g = 0; g < inv->gpu_count && g < GPULEASE_MAX_GPUS; g++) {
    const gpulease_gpu_info *gi = &inv->gpus[g];
    if (gi->flags & (GPULEASE_GPU_FENCED | GPULEASE_GPU_MIG)) continue;
    uint64_t free_b = gi->free_vram_bytes;
    uint64_t unleased =
        gi->total_vram_bytes > gi->leased_vram_bytes ? gi->total_vram_bytes - gi->leased_vram_bytes : 0;
    if (unleased < free_b) free_b = unleased;
    uint64_t per = j->lease_bytes;
    if (j->p->lease_class == GPULEASE_CLASS_ISOLATED) per += gi->context_overhead_bytes;
    room += free_b / per;
  }
  return room;
}

static gpulease_status start_slot(job *j, size_t node, gpulease_error *err) {
  if (j->nslots == j->slots_cap) return gl_lib_set_err(err, GPULEASE_INTERNAL, "too many slots");
  slot *sl = &j->slots[j->nslots];
  *sl = (slot){.j = j, .node = node, .cur = UINT64_MAX};
  j->nodes[node].live++;
  if (pthread_create(&sl->th, NULL, slot_main, sl) != 0) {
    j->nodes[node].live--;
    return gl_lib_set_err(err, GPULEASE_INTERNAL, "cannot start a thread");
  }
  sl->started = true;
  j->nslots++;
  return GPULEASE_OK;
}

/* Probes every node at once and starts the planned slots. */
static gpulease_status plan(job *j, gpulease_error *err) {
  pthread_t *th = calloc(j->nnodes, sizeof *th);
  void *(*args)[2] = calloc(j->nnodes, sizeof *args);
  bool *started = calloc(j->nnodes, sizeof *started);
  if (!th || !args || !started) {
    free(th);
    free(args);
    free(started);
    return gl_lib_set_err(err, GPULEASE_NO_MEMORY, "out of memory");
  }
  for (size_t i = 0; i < j->nnodes; i++) {
    args[i][0] = &j->nodes[i];
    args[i][1] = j;
    started[i] = pthread_create(&th[i], NULL, plan_probe, args[i]) == 0;
    if (!started[i]) plan_probe(args[i]);
  }
  for (size_t i = 0; i < j->nnodes; i++)
    if (started[i]) pthread_join(th[i], NULL);
  free(th);
  free(args);
  free(started);

  size_t up = 0;
  char why[900] = "";
  size_t wl = 0;
  for (size_t i = 0; i < j->nnodes; i++) {
    job_node *jn = &j->nodes[i];
    if (!jn->probed_ok) {
      if (wl < sizeof why)
        wl += (size_t)snprintf(why + wl, sizeof why - wl, "%s%s: %s: %s", wl ? "; " : "",
                               jn->n->addr, gpulease_status_name(jn->probe_status),
                               jn->probe_msg);
      continue;
    }
    up++;
    jn->capacity = node_room(j, &jn->inv);
    if (jn->capacity > j->p->max_per_node) jn->capacity = j->p->max_per_node;
  }
  if (up == 0)
    return gl_lib_set_err(err, GPULEASE_DISCONNECTED, "no reachable node: %s", why);
  uint64_t limit = j->p->max_leases < j->nchunks ? j->p->max_leases : j->nchunks;
  uint64_t total = 0;
  for (;;) { /* one slot at a time to the node with the most room left */
    if (total >= limit) break;
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < j->nnodes; i++) {
      job_node *jn = &j->nodes[i];
      if (!jn->probed_ok || jn->planned >= jn->capacity) continue;
      if (best == SIZE_MAX || jn->capacity - jn->planned > j->nodes[best].capacity - j->nodes[best].planned)
        best = i;
    }
    if (best == SIZE_MAX) break;
    j->nodes[best].planned++;
    total++;
  }
  if (total == 0) {
    wl = 0;
    for (size_t i = 0; i < j->nnodes; i++) {
      job_node *jn = &j->nodes[i];
      if (!jn->probed_ok || wl >= sizeof why) continue;
      uint64_t free_b = 0;
      for (uint32_t g = 0; g < jn->inv.gpu_count && g < GPULEASE_MAX_GPUS; g++)
        free_b += jn->inv.gpus[g].free_vram_bytes;
      wl += (size_t)snprintf(why + wl, sizeof why - wl, "%s%s: %llu bytes free on %u GPU(s)",
                             wl ? "; " : "", jn->n->addr, (unsigned long long)free_b,
                             jn->inv.gpu_count);
    }
    return gl_lib_set_err(err, GPULEASE_CAPACITY_EXCEEDED,
                          "no node has room for a lease of %llu bytes (%s): %s",
                          (unsigned long long)j->lease_bytes,
                          gpulease_lease_class_name(j->p->lease_class), why);
  }
  for (size_t i = 0; i < j->nnodes; i++) {
    job_node *jn = &j->nodes[i];
    for (uint32_t k = 0; k < jn->planned; k++) {
      pthread_mutex_lock(&j->mu);
      gpulease_status st = start_slot(j, i, err);
      pthread_mutex_unlock(&j->mu);
      if (st != GPULEASE_OK) return st;
    }
    if (jn->planned == 0 && jn->probe_client) {
      gpulease_client_close(jn->probe_client);
      jn->probe_client = NULL;
    }
  }
  return GPULEASE_OK;
}

/* ---- the call ----------------------------------------------------------- */

void gpulease_map_desc_default(gpulease_map_desc *d) {
  if (!d) return;
  memset(d, 0, sizeof *d);
  d->struct_version = GPULEASE_MAP_DESC_VERSION;
  d->grid[0] = d->grid[1] = d->grid[2] = 1;
  d->block[0] = d->block[1] = d->block[2] = 1;
  d->max_attempts = DEFAULT_ATTEMPTS;
  d->deadline_ms = DEFAULT_DEADLINE_MS;
}

static gpulease_status check_desc(const gpulease_map_desc *d, gpulease_error *err) {
  if (!d) return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "map: a description is required");
  if (!gl_lib_version_ok(d->struct_version, GPULEASE_MAP_DESC_VERSION))
    return gl_lib_version_err(err, "map desc", d->struct_version);
  if (!d->image || d->image_size == 0 || !d->kernel || !d->kernel[0])
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "map: an image and a kernel name are required");
  if (d->input_bytes == 0 || !d->input)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "map: no input: no chunk to run");
  if (d->chunk_bytes == 0 || d->chunk_bytes > UINT32_MAX)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT,
                          "map: chunk_bytes must be 1 to %u bytes", UINT32_MAX);
  if (d->output_bytes_per_chunk && !d->output)
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "map: output_bytes_per_chunk without an output buffer");
  if (d->output_bytes_per_chunk > (1ull << 30))
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT,
                          "map: output_bytes_per_chunk above 1 GiB (a submit's output limit)");
  if (d->arg_count > GPULEASE_MAX_PARAMS || (d->arg_count && !d->args))
    return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "map: 0 to %d arguments",
                          GPULEASE_MAX_PARAMS);
  uint64_t nchunks = (d->input_bytes + d->chunk_bytes - 1) / d->chunk_bytes;
  for (size_t i = 0; i < d->arg_count; i++) {
    const gpulease_map_arg *a = &d->args[i];
    if (a->kind < GPULEASE_MAP_IN || a->kind > GPULEASE_MAP_SCALAR)
      return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "map: argument %zu: unknown kind %d",
                            i, (int)a->kind);
    if (a->kind == GPULEASE_MAP_SCALAR && (a->size == 0 || a->size > GPULEASE_MAX_SCALAR_BYTES))
      return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT,
                            "map: argument %zu: a scalar of 1 to %d bytes", i,
                            GPULEASE_MAX_SCALAR_BYTES);
    if (a->kind == GPULEASE_MAP_OUT && d->output_bytes_per_chunk == 0)
      return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT,
                            "map: argument %zu is the output slice, but output_bytes_per_chunk is 0", i);
    if (a->kind == GPULEASE_MAP_INDEX && nchunks > (uint64_t)UINT32_MAX + 1)
      return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT,
                            "map: argument %zu: chunk indices above a u32", i);
  }
  return GPULEASE_OK;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double percentile(double *v, uint64_t n, double q) {
  if (n == 0) return 0;
  double want = q * (double)n; /* nearest rank: the smallest k >= q n */
  uint64_t k = (uint64_t)want;
  if ((double)k < want) k++;
  if (k == 0) k = 1;
  return v[k - 1];
}

static void job_free(job *j) {
  free(j->state);
  free(j->copies);
  free(j->attempts);
  free(j->avoid);
  free(j->queue);
  free(j->lat_ms);
  if (j->nodes)
    for (size_t i = 0; i < j->nnodes; i++) gpulease_client_close(j->nodes[i].probe_client);
  free(j->nodes);
  free(j->slots);
  pthread_cond_destroy(&j->cv);
  pthread_mutex_destroy(&j->mu);
}

/* Starts slots on nodes that a re-resolution added. Under j->mu. */
static void adopt_new_nodes_locked(job *j) {
  gpulease_pool *p = j->p;
  pthread_mutex_lock(&p->mu);
  size_t count = p->count;
  pthread_mutex_unlock(&p->mu);
  for (size_t k = 0; k < count; k++) {
    gl_pool_node *n = p->nodes[k];
    bool known = false;
    for (size_t i = 0; i < j->nnodes && !known; i++) known = j->nodes[i].n == n;
    if (known || n->removed) continue;
    if (j->nnodes == j->nodes_cap) return;
    memset(&j->nodes[j->nnodes], 0, sizeof *j->nodes);
    j->nodes[j->nnodes].n = n;
    snprintf(j->nodes[j->nnodes].st.addr, sizeof j->nodes[j->nnodes].st.addr, "%s", n->addr);
    size_t idx = j->nnodes++;
    uint32_t live = 0;
    for (size_t i = 0; i < j->nnodes; i++) live += j->nodes[i].live;
    for (uint32_t s = 0; s < p->max_per_node && live < p->max_leases; s++, live++) {
      gpulease_error e;
      if (start_slot(j, idx, &e) != GPULEASE_OK) break;
    }
  }
}

gpulease_status gpulease_pool_map(gpulease_pool *p, const gpulease_map_desc *d,
                                  gpulease_map_stats *stats, gpulease_error *err) {
  if (stats && !gl_lib_version_ok(stats->struct_version, GPULEASE_MAP_STATS_VERSION))
    return gl_lib_version_err(err, "map stats", stats->struct_version);
  if (stats) GL_LIB_CLEAR_KEEP_VERSION(stats);
  if (!p) return gl_lib_set_err(err, GPULEASE_INVALID_ARGUMENT, "map: no pool");
  gpulease_status st = check_desc(d, err);
  if (st != GPULEASE_OK) return st;
  gpulease_error rerr;
  (void)gl_pool_refresh_due(p, false, &rerr);

  job j;
  memset(&j, 0, sizeof j);
  j.p = p;
  j.d = d;
  j.t0 = gl_mono_ns();
  j.nchunks = (d->input_bytes + d->chunk_bytes - 1) / d->chunk_bytes;
  j.out_off = align_up(d->chunk_bytes, SLICE_ALIGN);
  j.lease_bytes = j.out_off + align_up(d->output_bytes_per_chunk ? d->output_bytes_per_chunk : 1,
                                       SLICE_ALIGN);
  j.max_attempts = d->max_attempts ? d->max_attempts : DEFAULT_ATTEMPTS;
  j.deadline_ns = j.t0 + (uint64_t)(d->deadline_ms ? d->deadline_ms : DEFAULT_DEADLINE_MS) * 1000000ull;
  pthread_mutex_init(&j.mu, NULL);
  pthread_cond_init(&j.cv, NULL);
  j.state = calloc(j.nchunks, 1);
  j.copies = calloc(j.nchunks, 1);
  j.attempts = calloc(j.nchunks, sizeof *j.attempts);
  j.avoid = malloc(j.nchunks * sizeof *j.avoid);
  j.queue = malloc(j.nchunks * sizeof *j.queue);
  j.lat_ms = malloc(j.nchunks * sizeof *j.lat_ms);
  pthread_mutex_lock(&p->mu);
  size_t live_nodes = 0;
  for (size_t i = 0; i < p->count; i++) live_nodes += !p->nodes[i]->removed;
  j.nodes_cap = live_nodes + 256; /* and room for nodes a re-resolution adds */
  j.nodes = calloc(j.nodes_cap, sizeof *j.nodes);
  if (j.nodes)
    for (size_t i = 0; i < p->count; i++)
      if (!p->nodes[i]->removed) {
        j.nodes[j.nnodes].n = p->nodes[i];
        snprintf(j.nodes[j.nnodes].st.addr, sizeof j.nodes[j.nnodes].st.addr, "%s",
                 p->nodes[i]->addr);
        j.nnodes++;
      }
  pthread_mutex_unlock(&p->mu);
  /* Room for a slot per lease allowed, and for later nodes. */
  j.slots_cap = (size_t)p->max_leases + 64;
  j.slots = calloc(j.slots_cap, sizeof *j.slots);
  if (!j.state || !j.copies || !j.attempts || !j.avoid || !j.queue || !j.lat_ms || !j.nodes || !j.slots) {
    job_free(&j);
    return gl_lib_set_err(err, GPULEASE_NO_MEMORY, "map: out of memory for %llu chunks",
                          (unsigned long long)j.nchunks);
  }
  for (uint64_t c = 0; c < j.nchunks; c++) {
    j.avoid[c] = -1;
    j.queue[c] = c;
  }
  j.qlen = j.nchunks;

  st = j.nnodes ? plan(&j, err)
                : gl_lib_set_err(err, GPULEASE_DISCONNECTED, "no node: the pool lists none now");
  pthread_mutex_lock(&j.mu);
  if (st != GPULEASE_OK) fail_locked(&j, st, "%s", err ? err->message : "");
  while (!j.stop && j.done < j.nchunks) {
    uint64_t now = gl_mono_ns();
    if (now >= j.deadline_ns) {
      fail_locked(&j, GPULEASE_TIMEOUT, "deadline of %u ms passed with %llu of %llu chunks done",
                  d->deadline_ms ? d->deadline_ms : DEFAULT_DEADLINE_MS,
                  (unsigned long long)j.done, (unsigned long long)j.nchunks);
      break;
    }
    uint32_t live = 0;
    bool any_up = false;
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < j.nnodes; i++) {
      live += j.nodes[i].live;
      if (j.nodes[i].live && !j.nodes[i].n->down && !j.nodes[i].n->removed) any_up = true;
    }
    pthread_mutex_unlock(&p->mu);
    if (live == 0) {
      char why[800] = "";
      size_t wl = 0;
      pthread_mutex_lock(&p->mu);
      for (size_t i = 0; i < j.nnodes && wl < sizeof why; i++)
        if (j.nodes[i].n->last_status != GPULEASE_OK)
          wl += (size_t)snprintf(why + wl, sizeof why - wl, "%s%s: %s: %s", wl ? "; " : "",
                                 j.nodes[i].n->addr, gpulease_status_name(j.nodes[i].n->last_status),
                                 j.nodes[i].n->last_msg);
      pthread_mutex_unlock(&p->mu);
      fail_locked(&j, GPULEASE_CAPACITY_EXCEEDED,
                  "no node can take a lease any more, %llu of %llu chunks done: %s",
                  (unsigned long long)j.done, (unsigned long long)j.nchunks, why);
      break;
    }
    if (!any_up) {
      if (!j.all_down_since) j.all_down_since = now;
      else if (now - j.all_down_since >= GL_POOL_ALL_DOWN_MS * 1000000ull) {
        fail_locked(&j, GPULEASE_DISCONNECTED,
                    "every node has been down for %u s, %llu of %llu chunks done",
                    GL_POOL_ALL_DOWN_MS / 1000, (unsigned long long)j.done,
                    (unsigned long long)j.nchunks);
        break;
      }
    } else {
      j.all_down_since = 0;
    }
    if (p->srv_name) {
      pthread_mutex_unlock(&j.mu);
      int changed = gl_pool_refresh_due(p, false, &rerr);
      pthread_mutex_lock(&j.mu);
      if (changed == 0) adopt_new_nodes_locked(&j);
    }
    timed_wait_locked(&j, 50);
  }
  j.stop = true;
  pthread_cond_broadcast(&j.cv);
  /* A submit still running now is a backup that lost, a copy stuck on a
   * node that stopped answering, or one the job no longer needs: end its
   * wait rather than wait out the reply timeout. */
  for (size_t i = 0; i < j.nslots; i++)
    if (j.slots[i].cur != UINT64_MAX && j.slots[i].client) gl_lib_client_abort(j.slots[i].client);
  pthread_mutex_unlock(&j.mu);
  for (size_t i = 0; i < j.nslots; i++)
    if (j.slots[i].started) pthread_join(j.slots[i].th, NULL);

  st = j.failed ? j.fail_st : GPULEASE_OK;
  if (j.failed) gl_lib_set_err(err, j.fail_st, "%s", j.fail_msg);
  else gl_lib_ok(err);
  if (stats) {
    stats->chunks = j.nchunks;
    stats->done = j.done;
    stats->retries = j.retries;
    stats->backups = j.hedges;
    stats->seconds = (double)(gl_mono_ns() - j.t0) / 1e9;
    qsort(j.lat_ms, j.nlat, sizeof *j.lat_ms, cmp_double);
    stats->chunk_p50_ms = percentile(j.lat_ms, j.nlat, 0.50);
    stats->chunk_p99_ms = percentile(j.lat_ms, j.nlat, 0.99);
    stats->nodes = calloc(j.nnodes ? j.nnodes : 1, sizeof *stats->nodes);
    if (stats->nodes) {
      stats->node_count = j.nnodes;
      for (size_t i = 0; i < j.nnodes; i++) stats->nodes[i] = j.nodes[i].st;
    }
  }
  job_free(&j);
  return st;
}

void gpulease_map_stats_init(gpulease_map_stats *stats) {
  if (!stats) return;
  memset(stats, 0, sizeof *stats);
  stats->struct_version = GPULEASE_MAP_STATS_VERSION;
}

void gpulease_map_stats_release(gpulease_map_stats *stats) {
  if (!stats) return;
  free(stats->nodes);
  stats->nodes = NULL;
  stats->node_count = 0;
}
