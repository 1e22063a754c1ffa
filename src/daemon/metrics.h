/*
 * metrics.h - gpuleased's Prometheus metrics and health check
 * (gpuleased --metrics-listen HOST:PORT; docs/operations in README).
 *
 * The daemon's main loop counts as it goes (gl_metrics_* below, main
 * thread only) and renders the text exposition format into a snapshot once
 * a second; libmicrohttpd serves the latest snapshot at /metrics from its
 * own thread, and /healthz (200 "ok" while the daemon serves, 503 once it
 * stops). Gauges are therefore at most a second old; counters are exact
 * as of the snapshot.
 */
#ifndef GL_DAEMON_METRICS_H
#define GL_DAEMON_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct gl_daemon;
typedef struct gl_metrics gl_metrics;

/* Why a lease ended, for gpulease_leases_dropped_total{reason}. */
enum gl_drop_reason { GL_DROP_FREED, GL_DROP_EXPIRED, GL_DROP_FAULT, GL_DROP_REVOKED, GL_DROP_N };

/* Starts serving on listen ("HOST:PORT"; port 0 picks one, see
 * gl_metrics_port). NULL with err when the address cannot be bound. */
gl_metrics *gl_metrics_start(struct gl_daemon *d, const char *listen, char *err, size_t errlen);
/* Stops the server (health answers 503 meanwhile) and frees m. NULL ok. */
void gl_metrics_stop(gl_metrics *m);
uint16_t gl_metrics_port(const gl_metrics *m);

/* Counting, main thread; m may be NULL (no metrics). */
void gl_metrics_lease_acquired(gl_metrics *m);
void gl_metrics_lease_dropped(gl_metrics *m, enum gl_drop_reason why);
/* A GPU_SUBMIT answered: its status and, for OK, the output bytes. */
void gl_metrics_submit(gl_metrics *m, int status, uint64_t output_bytes);
/* Any request answered: op, status, request and answer bytes, and the
 * seconds from its arrival to its answer. */
void gl_metrics_request(gl_metrics *m, uint16_t op, int status, uint64_t in_bytes,
                        uint64_t out_bytes, double seconds);
/* The same from a whole answer message (a gl_dreq_meter_fn, user: m):
 * its status, and for GPU_SUBMIT its output bytes (gl_metrics_submit). */
void gl_metrics_answer(void *m, uint16_t op, const uint8_t *msg, size_t len, uint64_t in_bytes,
                       double seconds);
/* A worker ended on its own (a device fault, a crash). */
void gl_metrics_worker_fault(gl_metrics *m);

#endif /* GL_DAEMON_METRICS_H */
