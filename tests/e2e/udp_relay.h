/*
 * udp_relay.h - a lossy UDP relay on loopback for tests: CI has no netem,
 * so a test puts this between a client and a daemon to drop, reorder and
 * duplicate datagrams of a QUIC connection.
 *
 * The relay runs in a thread of the test process. It binds a UDP socket on
 * 127.0.0.1:0 for the client (gl_udp_relay_port) and forwards every
 * datagram from the client to the daemon's address through a second
 * socket, and every datagram from the daemon back to the client. One
 * client: the sender of the first datagram on the client side; datagrams
 * from any other address are dropped (counted as foreign).
 *
 * Each direction decides from its own xorshift PRNG seeded from the seed,
 * one decision per datagram in arrival order, so a run's decisions depend
 * only on the seed and the sequence of datagrams (not on timing):
 *   - drop it (drop_ppm[dir] parts per million);
 *   - else duplicate it (dup_ppm: it is sent twice);
 *   - else hold it back (reorder_ppm): it leaves after the next
 *     reorder_after datagrams of its direction have been forwarded, or
 *     reorder_delay_us after it came in, whichever is first; at most
 *     GL_UDP_RELAY_MAX_HELD are held per direction (a datagram that would
 *     be one more is forwarded at once).
 * Datagrams of up to 65535 bytes pass intact: the relay reads each one on
 * its own (it never turns UDP_GRO on, so GSO trains from the peers arrive
 * as separate datagrams) and sends each on its own.
 */
#ifndef GL_TESTS_UDP_RELAY_H
#define GL_TESTS_UDP_RELAY_H

#include <stdint.h>

#define GL_UDP_RELAY_MAX_HELD 16

/* Directions: indexes of the per-direction options and counters. */
enum { GL_RELAY_C2D = 0, GL_RELAY_D2C = 1 };

typedef struct gl_udp_relay_opts {
  uint64_t seed;               /* 0: a fixed default seed */
  uint32_t drop_ppm[2];        /* per direction, parts per million */
  uint32_t reorder_ppm[2];     /* per direction */
  uint32_t dup_ppm[2];         /* per direction */
  uint32_t reorder_after;      /* datagrams that overtake a held one (0: 1) */
  uint32_t reorder_delay_us;   /* most time a datagram is held (0: 2000) */
  uint32_t socket_buffer;      /* SO_RCVBUF/SO_SNDBUF wanted (0: 8 MiB; the kernel may cap it) */
} gl_udp_relay_opts;

typedef struct gl_udp_relay_counters {
  uint64_t received[2];    /* datagrams read, per direction */
  uint64_t forwarded[2];   /* datagrams sent (duplicates counted twice) */
  uint64_t bytes[2];       /* payload bytes sent */
  uint64_t dropped[2];     /* dropped on purpose */
  uint64_t reordered[2];   /* held back and overtaken by a later datagram */
  uint64_t held_timeout[2]; /* held back, released by the timer, not overtaken */
  uint64_t duplicated[2];  /* sent twice */
  uint64_t send_errors[2]; /* sendto failed (full socket, ...): lost too */
  uint64_t foreign;        /* from another address than the one client, or before it */
  uint64_t truncated;      /* larger than 65535 bytes (never expected) */
  uint64_t max_dgram[2];   /* largest datagram seen */
} gl_udp_relay_counters;

typedef struct gl_udp_relay gl_udp_relay;

/* Fills o with no loss at all (a plain relay) and the default seed. */
void gl_udp_relay_opts_default(gl_udp_relay_opts *o);

/* Starts a relay to daemon_addr ("HOST:PORT" or "[IPv6]:PORT", numeric)
 * with options o (NULL: defaults). NULL on error (printed to stderr). */
gl_udp_relay *gl_udp_relay_start(const char *daemon_addr_host_port, const gl_udp_relay_opts *o);

/* The client-side port on 127.0.0.1. */
uint16_t gl_udp_relay_port(const gl_udp_relay *r);

/* A snapshot of the counters (safe while it runs). */
void gl_udp_relay_stats(const gl_udp_relay *r, gl_udp_relay_counters *out);

/* One line of the counters, for a test's output. */
void gl_udp_relay_print(const gl_udp_relay *r, const char *label);

/* Stops the thread (held datagrams are discarded), closes the sockets and
 * frees r. NULL ignored. */
void gl_udp_relay_stop(gl_udp_relay *r);

#endif
