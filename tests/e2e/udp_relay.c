/* udp_relay.c - see udp_relay.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "udp_relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* One datagram more than UDP carries, so that MSG_TRUNC shows an
 * oversized one. */
#define RX_BYTES 65536
/* Datagrams read from one socket before the other gets its turn. */
#define RX_BURST 64

typedef struct held {
  uint8_t *buf; /* RX_BYTES, kept for reuse */
  size_t len;
  uint64_t deadline_ns;
  uint32_t left;  /* datagrams still to overtake it */
  bool overtaken; /* at least one did */
} held;

typedef struct relay_dir {
  uint64_t rng;
  held q[GL_UDP_RELAY_MAX_HELD]; /* q[0..n) in arrival order */
  int n;
} relay_dir;

struct gl_udp_relay {
  gl_udp_relay_opts o;
  int cfd;     /* client side, bound to 127.0.0.1:0 */
  int dfd;     /* daemon side, connected to the daemon */
  int wake[2]; /* a byte on wake[1] stops the thread */
  uint16_t port;
  struct sockaddr_storage client;
  socklen_t clientlen; /* 0 until the client's first datagram */
  relay_dir dir[2];
  uint8_t *rx;
  pthread_t thread;
  bool started;
  pthread_mutex_t mu; /* guards st */
  gl_udp_relay_counters st;
};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* xorshift64*: a draw in [0, 1000000). */
static uint32_t draw_ppm(relay_dir *d) {
  uint64_t x = d->rng;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  d->rng = x;
  return (uint32_t)(((x * 0x2545f4914f6cdd1dull) >> 32) % 1000000u);
}

void gl_udp_relay_opts_default(gl_udp_relay_opts *o) {
  memset(o, 0, sizeof *o);
  o->seed = 0x5eed1e55c0ffee01ull;
  o->reorder_after = 1;
  o->reorder_delay_us = 2000;
}

static void stat_add(gl_udp_relay *r, uint64_t *field, uint64_t n) {
  pthread_mutex_lock(&r->mu);
  *field += n;
  pthread_mutex_unlock(&r->mu);
}

/* Sends one datagram in direction dir. A failed send is a loss too. */
static void send_dgram(gl_udp_relay *r, int dir, const uint8_t *p, size_t len) {
  ssize_t n;
  do {
    if (dir == GL_RELAY_C2D)
      n = send(r->dfd, p, len, 0);
    else
      n = sendto(r->cfd, p, len, 0, (const struct sockaddr *)&r->client, r->clientlen);
  } while (n < 0 && errno == EINTR);
  pthread_mutex_lock(&r->mu);
  if (n == (ssize_t)len) {
    r->st.forwarded[dir]++;
    r->st.bytes[dir] += len;
  } else {
    r->st.send_errors[dir]++;
  }
  pthread_mutex_unlock(&r->mu);
}

/* Sends q[i] and removes it from the queue (keeping the buffer). */
static void release(gl_udp_relay *r, int dir, int i) {
  relay_dir *d = &r->dir[dir];
  held h = d->q[i];
  send_dgram(r, dir, h.buf, h.len);
  stat_add(r, h.overtaken ? &r->st.reordered[dir] : &r->st.held_timeout[dir], 1);
  memmove(&d->q[i], &d->q[i + 1], (size_t)(d->n - i - 1) * sizeof d->q[0]);
  d->n--;
  d->q[d->n] = (held){.buf = h.buf};
}

/* Releases the held datagrams whose time is up. */
static void release_due(gl_udp_relay *r, uint64_t now) {
  for (int dir = 0; dir < 2; dir++)
    for (int i = 0; i < r->dir[dir].n;)
      if (r->dir[dir].q[i].deadline_ns <= now)
        release(r, dir, i);
      else
        i++;
}

/* A datagram of len bytes in r->rx came in, going in direction dir. */
static void on_dgram(gl_udp_relay *r, int dir, size_t len) {
  relay_dir *d = &r->dir[dir];
  const gl_udp_relay_opts *o = &r->o;
  uint32_t u = draw_ppm(d);
  pthread_mutex_lock(&r->mu);
  r->st.received[dir]++;
  if (len > r->st.max_dgram[dir]) r->st.max_dgram[dir] = len;
  pthread_mutex_unlock(&r->mu);
  if (u < o->drop_ppm[dir]) {
    stat_add(r, &r->st.dropped[dir], 1);
    return;
  }
  u -= o->drop_ppm[dir];
  if (u < o->dup_ppm[dir]) {
    send_dgram(r, dir, r->rx, len);
    send_dgram(r, dir, r->rx, len);
    stat_add(r, &r->st.duplicated[dir], 1);
  } else if (u - o->dup_ppm[dir] < o->reorder_ppm[dir] && d->n < GL_UDP_RELAY_MAX_HELD) {
    held *h = &d->q[d->n];
    if (!h->buf && !(h->buf = malloc(RX_BYTES))) {
      send_dgram(r, dir, r->rx, len);
    } else {
      memcpy(h->buf, r->rx, len);
      h->len = len;
      h->deadline_ns = now_ns() + (uint64_t)o->reorder_delay_us * 1000u;
      h->left = o->reorder_after;
      h->overtaken = false;
      d->n++;
    }
    return;
  } else {
    send_dgram(r, dir, r->rx, len);
  }
  /* It went out ahead of the held ones. */
  for (int i = 0; i < d->n;) {
    d->q[i].overtaken = true;
    if (--d->q[i].left == 0)
      release(r, dir, i);
    else
      i++;
  }
}

/* Reads up to RX_BURST datagrams from fd (dir's source). */
static void drain(gl_udp_relay *r, int fd, int dir) {
  for (int k = 0; k < RX_BURST; k++) {
    struct sockaddr_storage from;
    socklen_t fromlen = sizeof from;
    ssize_t n = recvfrom(fd, r->rx, RX_BYTES, MSG_DONTWAIT | MSG_TRUNC,
                         (struct sockaddr *)&from, &fromlen);
    if (n < 0) {
      if (errno == EINTR) continue;
      return; /* EAGAIN, or an ICMP error on the daemon side: nothing to relay */
    }
    if (n >= RX_BYTES) {
      stat_add(r, &r->st.truncated, 1);
      continue;
    }
    if (dir == GL_RELAY_C2D) {
      if (!r->clientlen) {
        memcpy(&r->client, &from, fromlen);
        r->clientlen = fromlen;
      } else if (fromlen != r->clientlen || memcmp(&from, &r->client, fromlen) != 0) {
        stat_add(r, &r->st.foreign, 1);
        continue;
      }
    } else if (!r->clientlen) {
      stat_add(r, &r->st.foreign, 1);
      continue;
    }
    on_dgram(r, dir, (size_t)n);
  }
}

static void *relay_main(void *arg) {
  gl_udp_relay *r = arg;
  for (;;) {
    int timeout = -1;
    uint64_t now = now_ns(), next = UINT64_MAX;
    for (int dir = 0; dir < 2; dir++)
      for (int i = 0; i < r->dir[dir].n; i++)
        if (r->dir[dir].q[i].deadline_ns < next) next = r->dir[dir].q[i].deadline_ns;
    if (next != UINT64_MAX) timeout = next <= now ? 0 : (int)((next - now + 999999) / 1000000);
    struct pollfd p[3] = {{.fd = r->cfd, .events = POLLIN},
                          {.fd = r->dfd, .events = POLLIN},
                          {.fd = r->wake[0], .events = POLLIN}};
    int n = poll(p, 3, timeout);
    if (n < 0 && errno != EINTR) {
      perror("udp_relay: poll");
      break;
    }
    if (n > 0 && p[2].revents) break;
    if (n > 0 && p[0].revents) drain(r, r->cfd, GL_RELAY_C2D);
    if (n > 0 && p[1].revents) drain(r, r->dfd, GL_RELAY_D2C);
    release_due(r, now_ns());
  }
  return NULL;
}

static void set_buffers(int fd, int bytes) {
  /* FORCE passes net.core.[rw]mem_max with CAP_NET_ADMIN; else capped. */
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0 &&
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes) != 0)
    perror("udp_relay: SO_RCVBUF");
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) != 0 &&
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes) != 0)
    perror("udp_relay: SO_SNDBUF");
  /* Sends block while the socket is full (the receiver catches up), but
   * never for long: a peer that stopped reading costs a lost datagram. */
  struct timeval tv = {0, 100000};
  if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0)
    perror("udp_relay: SO_SNDTIMEO");
}

/* "HOST:PORT" or "[V6]:PORT" into an address. 0 or -1. */
static int resolve(const char *hp, struct sockaddr_storage *ss, socklen_t *len) {
  char host[256];
  const char *port;
  if (hp[0] == '[') {
    const char *e = strchr(hp, ']');
    if (!e || e[1] != ':' || (size_t)(e - hp - 1) >= sizeof host) return -1;
    memcpy(host, hp + 1, (size_t)(e - hp - 1));
    host[e - hp - 1] = 0;
    port = e + 2;
  } else {
    const char *c = strrchr(hp, ':');
    if (!c || (size_t)(c - hp) >= sizeof host) return -1;
    memcpy(host, hp, (size_t)(c - hp));
    host[c - hp] = 0;
    port = c + 1;
  }
  struct addrinfo hints = {.ai_socktype = SOCK_DGRAM, .ai_flags = AI_NUMERICSERV}, *ai = NULL;
  int rc = getaddrinfo(host, port, &hints, &ai);
  if (rc != 0 || !ai) {
    fprintf(stderr, "udp_relay: %s: %s\n", hp, gai_strerror(rc));
    return -1;
  }
  memcpy(ss, ai->ai_addr, ai->ai_addrlen);
  *len = ai->ai_addrlen;
  freeaddrinfo(ai);
  return 0;
}

gl_udp_relay *gl_udp_relay_start(const char *daemon_addr, const gl_udp_relay_opts *o) {
  gl_udp_relay *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->cfd = r->dfd = r->wake[0] = r->wake[1] = -1;
  pthread_mutex_init(&r->mu, NULL);
  if (o)
    r->o = *o;
  else
    gl_udp_relay_opts_default(&r->o);
  if (!r->o.seed) r->o.seed = 0x5eed1e55c0ffee01ull;
  if (!r->o.reorder_after) r->o.reorder_after = 1;
  if (!r->o.reorder_delay_us) r->o.reorder_delay_us = 2000;
  if (!r->o.socket_buffer) r->o.socket_buffer = 8u << 20;
  for (int dir = 0; dir < 2; dir++) {
    uint64_t s = r->o.seed ^ (dir ? 0xd2c0d2c0d2c0d2c0ull : 0xc2d0c2d0c2d0c2d0ull);
    r->dir[dir].rng = splitmix64(&s) | 1; /* xorshift's state is never 0 */
    if ((uint64_t)r->o.drop_ppm[dir] + r->o.dup_ppm[dir] + r->o.reorder_ppm[dir] > 1000000u) {
      fprintf(stderr, "udp_relay: probabilities add up to more than 1\n");
      goto fail;
    }
  }
  struct sockaddr_storage daddr;
  socklen_t dlen;
  if (resolve(daemon_addr, &daddr, &dlen) != 0) goto fail;
  r->rx = malloc(RX_BYTES);
  if (!r->rx || pipe2(r->wake, O_CLOEXEC) != 0) goto fail;

  r->cfd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  r->dfd = socket(daddr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (r->cfd < 0 || r->dfd < 0) {
    perror("udp_relay: socket");
    goto fail;
  }
  set_buffers(r->cfd, (int)r->o.socket_buffer);
  set_buffers(r->dfd, (int)r->o.socket_buffer);
  struct sockaddr_in ca = {.sin_family = AF_INET, .sin_port = 0};
  ca.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t calen = sizeof ca;
  if (bind(r->cfd, (struct sockaddr *)&ca, sizeof ca) != 0 ||
      getsockname(r->cfd, (struct sockaddr *)&ca, &calen) != 0) {
    perror("udp_relay: bind");
    goto fail;
  }
  r->port = ntohs(ca.sin_port);
  if (connect(r->dfd, (struct sockaddr *)&daddr, dlen) != 0) {
    perror("udp_relay: connect");
    goto fail;
  }
  if (pthread_create(&r->thread, NULL, relay_main, r) != 0) {
    fprintf(stderr, "udp_relay: no thread\n");
    goto fail;
  }
  r->started = true;
  return r;
fail:
  gl_udp_relay_stop(r);
  return NULL;
}

uint16_t gl_udp_relay_port(const gl_udp_relay *r) { return r->port; }

void gl_udp_relay_stats(const gl_udp_relay *r, gl_udp_relay_counters *out) {
  gl_udp_relay *m = (gl_udp_relay *)r; /* the mutex only */
  pthread_mutex_lock(&m->mu);
  *out = r->st;
  pthread_mutex_unlock(&m->mu);
}

void gl_udp_relay_print(const gl_udp_relay *r, const char *label) {
  gl_udp_relay_counters s;
  gl_udp_relay_stats(r, &s);
  static const char *const name[2] = {"client->daemon", "daemon->client"};
  for (int d = 0; d < 2; d++)
    printf("relay %s %s: received %llu forwarded %llu (%.1f MiB) dropped %llu reordered %llu "
           "held-timeout %llu duplicated %llu send-errors %llu largest %llu B\n",
           label, name[d], (unsigned long long)s.received[d],
           (unsigned long long)s.forwarded[d], (double)s.bytes[d] / (1 << 20),
           (unsigned long long)s.dropped[d], (unsigned long long)s.reordered[d],
           (unsigned long long)s.held_timeout[d], (unsigned long long)s.duplicated[d],
           (unsigned long long)s.send_errors[d], (unsigned long long)s.max_dgram[d]);
  if (s.foreign || s.truncated)
    printf("relay %s: foreign %llu truncated %llu\n", label, (unsigned long long)s.foreign,
           (unsigned long long)s.truncated);
  fflush(stdout);
}

void gl_udp_relay_stop(gl_udp_relay *r) {
  if (!r) return;
  if (r->started) {
    char b = 1;
    while (write(r->wake[1], &b, 1) < 0 && errno == EINTR) {
    }
    pthread_join(r->thread, NULL);
  }
  for (int dir = 0; dir < 2; dir++)
    for (int i = 0; i < GL_UDP_RELAY_MAX_HELD; i++) free(r->dir[dir].q[i].buf);
  if (r->cfd >= 0) close(r->cfd);
  if (r->dfd >= 0) close(r->dfd);
  if (r->wake[0] >= 0) close(r->wake[0]);
  if (r->wake[1] >= 0) close(r->wake[1]);
  free(r->rx);
  pthread_mutex_destroy(&r->mu);
  free(r);
}
