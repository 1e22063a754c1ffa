/*
 * lat.h - latency trace points for finding where a round trip's time goes
 * (a developer's tool; DEVELOPERS.md "Latency traces").
 *
 * With GL_LAT_TRACE=PREFIX in the environment, every process (client,
 * daemon, worker) records (point, CLOCK_MONOTONIC ns) at each GL_LAT() into
 * a file PREFIX.PID that is mapped into memory, so the record survives a
 * killed process. scripts/lat_report.py merges the files of one run and
 * prints the median gap between consecutive points. Without the variable a
 * trace point costs one predictable branch.
 */
#ifndef GL_COMMON_LAT_H
#define GL_COMMON_LAT_H

#include <stdint.h>

enum gl_lat_point {
  GL_LAT_C_SEND = 1,    /* client: a request handed to its transport */
  GL_LAT_C_RECV,        /* client: datagrams / bytes read */
  GL_LAT_C_DONE,        /* client: a response complete */
  GL_LAT_D_RECV,        /* daemon: datagrams / bytes read */
  GL_LAT_D_REQ,         /* daemon: a request complete, handed to ops */
  GL_LAT_D_FWD,         /* daemon: a call written to the worker */
  GL_LAT_D_WREPLY,      /* daemon: a worker's reply read */
  GL_LAT_D_SEND,        /* daemon: datagrams / bytes written */
  GL_LAT_W_READ,        /* worker: a request read */
  GL_LAT_W_RUN,         /* worker: a job starts on its lane */
  GL_LAT_W_DONE,        /* worker: a job's device work done */
  GL_LAT_W_REPLY,       /* worker: a reply written */
  GL_LAT_C_SENT,        /* client: datagrams / bytes written */
  GL_LAT_C_PKT,         /* client: packets built, about to be written */
  GL_LAT_D_PKT,         /* daemon: packets built, about to be written */
  GL_LAT_POINTS
};

extern int gl_lat_on; /* -1 not yet looked up, 0 off, 1 on */

void gl_lat_record(enum gl_lat_point p);

#define GL_LAT(p)                                     \
  do {                                                \
    if (__builtin_expect(gl_lat_on != 0, 0)) gl_lat_record(p); \
  } while (0)

#endif /* GL_COMMON_LAT_H */
