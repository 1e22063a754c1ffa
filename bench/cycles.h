/*
 * cycles.h - the lease cycle that gl_bench_lease, gl_bench_load and
 * test_e2e_load put under load: N clients, each on a thread of its own,
 * loop alloc -> GPU_SUBMIT of the iota kernel (iota_ptx.h, output checked)
 * -> free for a given time; the completed cycles' durations and the
 * failures by status. Also the clients themselves (connected a few at a
 * time, RLIMIT_NOFILE raised for a thousand of them) and a daemon's
 * process figures from /proc (RSS, open descriptors, children).
 */
#ifndef GL_BENCH_CYCLES_H
#define GL_BENCH_CYCLES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpulease/gpulease.h"

/* A monotonic clock in milliseconds. */
double gl_bench_now_ms(void);

/* Sleeps ms milliseconds. */
void gl_bench_pause_ms(int ms);

/* Non-zero for the statuses that mean the connection, not the request,
 * failed (DISCONNECTED, TLS_FAILED, PROTOCOL_ERROR, TIMEOUT). */
int gl_bench_conn_error(gpulease_status st);

enum { GL_CYCLE_NSTAT = 128 }; /* status buckets; the last takes any larger */

/* One pass of cycles, every client's figures together. */
typedef struct gl_cycle_stats {
  int clients;           /* threads that ran */
  double secs;           /* from the start to the last thread's end */
  size_t cycles;         /* completed cycles (alloc, submit with the right output, free) */
  double *ms;            /* their durations, ms (malloc'd; NULL when none) */
  uint64_t fails[GL_CYCLE_NSTAT]; /* failed steps by gpulease_status */
  uint64_t nfail;        /* all of them, wrong outputs included */
  uint64_t wrong;        /* submits whose output was wrong */
  int idle_clients;      /* clients that completed no cycle */
  int conn_failed;       /* some connection failed (and was reconnected or not) */
  int dead_clients;      /* clients whose reconnect failed: they stopped */
  char first_msg[256];   /* the first failure's status and message ("" when none) */
} gl_cycle_stats;

/* What each client of gl_cycles_run does. */
typedef struct gl_cycle_opts {
  gpulease_lease_class cls; /* the leases' class */
  uint64_t bytes;           /* each lease's VRAM */
  double secs;              /* each client cycles this long, */
  int min_cycles;           /* and on past it until it completed this many (0: none), */
  double max_secs;          /* but never past this (0: secs) */
} gl_cycle_opts;

/* Runs n threads, thread i on clients[i], each cycling leases of o->bytes
 * bytes (TTL 60 s) of class o->cls as *o says: LEASE_ALLOC, GPU_SUBMIT of
 * the iota kernel with its output checked, LEASE_FREE. A failed step is
 * counted by its status, the thread sleeps 5 ms and goes on; on a
 * connection error it reconnects (and stops when it cannot). Each thread
 * gets a stack of 1 MiB, so that a thousand of them are cheap. Fills *st
 * (gl_cycle_stats_free releases it). 0, or -1 when a thread could not be
 * started (the ones started are still run and counted) or memory ran out. */
int gl_cycles_run(gpulease_client **clients, int n, const gl_cycle_opts *o, gl_cycle_stats *st);

/* Frees what gl_cycles_run allocated in *st. */
void gl_cycle_stats_free(gl_cycle_stats *st);

/* The failures as "BUSY 12, CAPACITY_EXCEEDED 3" (statuses by name, in
 * status order, WRONG_OUTPUT last), or "0" when there were none, into buf. */
void gl_cycle_fails_format(const gl_cycle_stats *st, char *buf, size_t len);

/* The p-th quantile (0..1) of the cycles' durations in ms, nearest rank
 * (p = 0.5: the median); -1 when no cycle completed. Sorts st->ms. */
double gl_cycle_quantile(gl_cycle_stats *st, double p);

/* Connects n clients with options o, `parallel` handshakes at a time (1..64),
 * into clients[0..n-1]. Returns how many connected (n on success; the
 * others are NULL) and the first failure's message in err. */
int gl_clients_connect(const gpulease_connect_options *o, int n, int parallel,
                       gpulease_client **clients, gpulease_error *err);

/* Closes clients[0..n-1] (NULL entries are skipped), `parallel` at a time. */
void gl_clients_close(gpulease_client **clients, int n);

/* Raises this process's soft RLIMIT_NOFILE to at least want descriptors
 * (within the hard limit). Returns the soft limit in force afterwards. */
long gl_raise_nofile(long want);

/* A process's figures, from /proc. */
typedef struct gl_proc_figures {
  long rss_kib;  /* VmRSS of /proc/PID/status, -1 when unreadable */
  int fds;       /* entries of /proc/PID/fd, -1 when unreadable */
  int children;  /* live (not zombie) processes whose parent it is */
} gl_proc_figures;

/* Reads pid's figures into *f. 0, or -1 when the process is gone. */
int gl_proc_figures_read(pid_t pid, gl_proc_figures *f);

/* The live (not zombie) children of pid, from every /proc/N/stat's PPid. */
int gl_proc_children(pid_t pid);

#endif /* GL_BENCH_CYCLES_H */
