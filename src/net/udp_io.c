/*
 * udp_io.c - see udp_io.h. Linux only (sendmmsg, recvmmsg, UDP_SEGMENT,
 * UDP_GRO); each feature the kernel lacks is turned off, not fatal.
 */
#include "net/udp_io.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/log.h"

/* Messages per sendmmsg. */
#define TX_MSGS 64
/* One receive slot: any datagram, or a GRO train (at most 64 KiB). */
#define RX_SLOT_BYTES 65536
#define DEFAULT_RX_SLOTS 16
#define MAX_RX_SLOTS 1024

/* Control data of one message: a source or destination address and a
 * segment size. */
typedef union ctlbuf {
  char buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) + CMSG_SPACE(sizeof(struct in_pktinfo)) +
           CMSG_SPACE(sizeof(int))];
  struct cmsghdr align;
} ctlbuf;

struct gl_udp {
  int fd;
  int family;
  struct sockaddr_storage self;
  socklen_t selflen;
  bool gso, gro, pktinfo;
  bool pktinfo_broken; /* the kernel refused a source address once */
  gl_udp_info st;

  /* Sending: scratch for one sendmmsg. */
  struct mmsghdr txmm[TX_MSGS];
  struct iovec txiov[TX_MSGS];
  size_t txdgrams[TX_MSGS]; /* datagrams in each message */
  ctlbuf txctl[TX_MSGS];

  /* Receiving: nslots slots of RX_SLOT_BYTES. */
  unsigned nslots;
  uint8_t *rxbuf;
  struct mmsghdr *rxmm;
  struct iovec *rxiov;
  struct sockaddr_storage *rxaddr;
  ctlbuf *rxctl;
  gl_udp_msg *msgs;
};

/* ======================================================================
 * Setting up
 * ==================================================================== */

/* Asks for want bytes of buffer; when the kernel's limit
 * (net.core.[rw]mem_max) grants less, tries the FORCE variant, which
 * needs CAP_NET_ADMIN (EPERM otherwise: ignored). Returns what the
 * kernel granted (it reports double the request). */
static size_t set_buffer(int fd, int opt, int force_opt, size_t want) {
  int v = want > (size_t)(INT32_MAX / 2) ? INT32_MAX / 2 : (int)want;
  int got = 0;
  socklen_t len = sizeof got;
  (void)setsockopt(fd, SOL_SOCKET, opt, &v, sizeof v);
  if (getsockopt(fd, SOL_SOCKET, opt, &got, &len) == 0 && got / 2 >= v) return (size_t)got;
  if (setsockopt(fd, SOL_SOCKET, force_opt, &v, sizeof v) != 0)
    GL_DEBUG("udp: %s of %d bytes not granted (%s); have %d",
             opt == SO_RCVBUF ? "SO_RCVBUF" : "SO_SNDBUF", v, strerror(errno), got);
  len = sizeof got;
  if (getsockopt(fd, SOL_SOCKET, opt, &got, &len) != 0) got = 0;
  return got > 0 ? (size_t)got : 0;
}

int gl_udp_new(int fd, const gl_udp_opts *o, gl_udp **out) {
  static const gl_udp_opts defaults = {0};
  if (!o) o = &defaults;
  *out = NULL;
  gl_udp *u = calloc(1, sizeof *u);
  if (!u) {
    close(fd);
    errno = ENOMEM;
    return -1;
  }
  u->fd = fd;
  u->selflen = sizeof u->self;
  if (getsockname(fd, (struct sockaddr *)&u->self, &u->selflen) != 0) goto fail;
  u->family = u->self.ss_family;
  if (u->family != AF_INET && u->family != AF_INET6) {
    errno = EAFNOSUPPORT;
    goto fail;
  }

  size_t want = o->buffer_bytes ? o->buffer_bytes : GL_UDP_DEFAULT_BUFFER;
  u->st.sndbuf = set_buffer(fd, SO_SNDBUF, SO_SNDBUFFORCE, want);
  u->st.rcvbuf = set_buffer(fd, SO_RCVBUF, SO_RCVBUFFORCE, want);

  /* Don't fragment, and don't heed cached path MTUs either: QUIC's own
   * path MTU discovery decides the datagram size. An IPv6 socket may
   * carry IPv4 (v4-mapped) traffic too, so it gets both options. */
  int probe = IP_PMTUDISC_PROBE, probe6 = IPV6_PMTUDISC_PROBE, one = 1;
  if (u->family == AF_INET6)
    (void)setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &probe6, sizeof probe6);
  (void)setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &probe, sizeof probe);

  if (o->pktinfo) {
    u->pktinfo = true;
    if (u->family == AF_INET6)
      (void)setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one);
    else
      (void)setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
  }
  if (!o->no_gso) {
    /* Kernels with GSO know the option (4.18 and later). */
    int seg = 0;
    socklen_t len = sizeof seg;
    u->gso = getsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, &len) == 0;
  }
  if (!o->no_gro) u->gro = setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one) == 0;
  u->st.gso = u->gso;
  u->st.gro = u->gro;

  u->nslots = o->rx_slots ? o->rx_slots : DEFAULT_RX_SLOTS;
  if (u->nslots > MAX_RX_SLOTS) u->nslots = MAX_RX_SLOTS;
  u->rxbuf = malloc((size_t)u->nslots * RX_SLOT_BYTES);
  u->rxmm = calloc(u->nslots, sizeof *u->rxmm);
  u->rxiov = calloc(u->nslots, sizeof *u->rxiov);
  u->rxaddr = calloc(u->nslots, sizeof *u->rxaddr);
  u->rxctl = calloc(u->nslots, sizeof *u->rxctl);
  u->msgs = calloc(u->nslots, sizeof *u->msgs);
  if (!u->rxbuf || !u->rxmm || !u->rxiov || !u->rxaddr || !u->rxctl || !u->msgs) {
    errno = ENOMEM;
    goto fail;
  }
  for (unsigned i = 0; i < u->nslots; i++) {
    u->rxiov[i].iov_base = u->rxbuf + (size_t)i * RX_SLOT_BYTES;
    u->rxmm[i].msg_hdr.msg_name = &u->rxaddr[i];
    u->rxmm[i].msg_hdr.msg_iov = &u->rxiov[i];
    u->rxmm[i].msg_hdr.msg_iovlen = 1;
    u->rxmm[i].msg_hdr.msg_control = u->rxctl[i].buf;
  }
  GL_DEBUG("udp: socket ready: GSO %s, GRO %s, SO_SNDBUF %zu, SO_RCVBUF %zu",
           u->gso ? "on" : "off", u->gro ? "on" : "off", u->st.sndbuf, u->st.rcvbuf);
  *out = u;
  return 0;

fail:;
  int e = errno;
  gl_udp_del(u);
  errno = e;
  return -1;
}

void gl_udp_del(gl_udp *u) {
  if (!u) return;
  if (u->fd >= 0) close(u->fd);
  free(u->rxbuf);
  free(u->rxmm);
  free(u->rxiov);
  free(u->rxaddr);
  free(u->rxctl);
  free(u->msgs);
  free(u);
}

int gl_udp_fd(const gl_udp *u) { return u->fd; }

const struct sockaddr *gl_udp_local(const gl_udp *u, socklen_t *len) {
  if (len) *len = u->selflen;
  return (const struct sockaddr *)&u->self;
}

void gl_udp_info_get(const gl_udp *u, gl_udp_info *out) {
  *out = u->st;
  out->gso = u->gso;
  out->gro = u->gro;
}

size_t gl_udp_path_max_payload(const gl_udp *u) {
  int mtu = 0;
  socklen_t len = sizeof mtu;
  int rc = u->family == AF_INET6 ? getsockopt(u->fd, IPPROTO_IPV6, IPV6_MTU, &mtu, &len)
                                 : getsockopt(u->fd, IPPROTO_IP, IP_MTU, &mtu, &len);
  size_t hdr = u->family == AF_INET6 ? 48 : 28;
  if (rc != 0 || mtu <= (int)hdr) return 0;
  size_t max = (size_t)mtu - hdr;
  size_t cap = u->family == AF_INET6 ? GL_UDP_MAX_PAYLOAD : GL_UDP_GSO_MAX_BYTES;
  return max > cap ? cap : max;
}

/* ======================================================================
 * Sending
 * ==================================================================== */

/* Adds a source address cmsg for local at cm; returns its space, or 0
 * when local is a wildcard or of the other family. */
static size_t put_source(const gl_udp *u, const struct sockaddr *local, struct cmsghdr *cm) {
  if (u->family == AF_INET6 && local->sa_family == AF_INET6) {
    const struct sockaddr_in6 *l6 = (const struct sockaddr_in6 *)local;
    if (IN6_IS_ADDR_UNSPECIFIED(&l6->sin6_addr)) return 0;
    struct in6_pktinfo pi = {.ipi6_addr = l6->sin6_addr, .ipi6_ifindex = l6->sin6_scope_id};
    cm->cmsg_level = IPPROTO_IPV6;
    cm->cmsg_type = IPV6_PKTINFO;
    cm->cmsg_len = CMSG_LEN(sizeof pi);
    memcpy(CMSG_DATA(cm), &pi, sizeof pi);
    return CMSG_SPACE(sizeof pi);
  }
  if (u->family == AF_INET && local->sa_family == AF_INET) {
    const struct sockaddr_in *l4 = (const struct sockaddr_in *)local;
    if (l4->sin_addr.s_addr == htonl(INADDR_ANY)) return 0;
    struct in_pktinfo pi = {.ipi_spec_dst = l4->sin_addr};
    cm->cmsg_level = IPPROTO_IP;
    cm->cmsg_type = IP_PKTINFO;
    cm->cmsg_len = CMSG_LEN(sizeof pi);
    memcpy(CMSG_DATA(cm), &pi, sizeof pi);
    return CMSG_SPACE(sizeof pi);
  }
  return 0;
}

/* Fills u->txmm with up to TX_MSGS messages for the datagrams of tx from
 * index first (at byte off): with gso, a run of equal size (the last may
 * be shorter) per message. Returns the number of messages. */
static unsigned build_msgs(gl_udp *u, const gl_udp_tx *tx, size_t first, size_t off, bool gso,
                           bool src) {
  unsigned m = 0;
  size_t i = first;
  while (m < TX_MSGS && i < tx->count) {
    size_t seg = tx->lens[i], bytes = seg, start = i++;
    if (gso) {
      while (i < tx->count && i - start < GL_UDP_GSO_MAX_SEGS && tx->lens[i] <= seg &&
             bytes + tx->lens[i] <= GL_UDP_GSO_MAX_BYTES) {
        bool shorter = tx->lens[i] < seg;
        bytes += tx->lens[i++];
        if (shorter) break; /* a shorter datagram ends the run */
      }
    }
    struct msghdr *h = &u->txmm[m].msg_hdr;
    memset(h, 0, sizeof *h);
    u->txiov[m].iov_base = (void *)(tx->data + off);
    u->txiov[m].iov_len = bytes;
    h->msg_iov = &u->txiov[m];
    h->msg_iovlen = 1;
    h->msg_name = (void *)tx->remote;
    h->msg_namelen = tx->remote ? tx->remotelen : 0;
    size_t ctl = 0;
    struct cmsghdr *cm = (struct cmsghdr *)u->txctl[m].buf;
    if (src) {
      size_t n = put_source(u, tx->local, cm);
      ctl += n;
      cm = (struct cmsghdr *)(u->txctl[m].buf + ctl);
    }
    u->txdgrams[m] = i - start;
    if (i - start > 1) {
      uint16_t s = (uint16_t)seg;
      cm->cmsg_level = SOL_UDP;
      cm->cmsg_type = UDP_SEGMENT;
      cm->cmsg_len = CMSG_LEN(sizeof s);
      memcpy(CMSG_DATA(cm), &s, sizeof s);
      ctl += CMSG_SPACE(sizeof s);
    }
    if (ctl) {
      h->msg_control = u->txctl[m].buf;
      h->msg_controllen = ctl;
    }
    off += bytes;
    m++;
  }
  return m;
}

static bool errno_busy(int e) { return e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS; }

size_t gl_udp_send(gl_udp *u, const gl_udp_tx *tx, int *hard_err) {
  *hard_err = 0;
  size_t i = 0, off = 0;
  /* Set after a GSO message was refused with EIO/EINVAL: the next try
   * sends its first datagram alone, and if that goes, GSO was the
   * trouble. */
  bool plain_try = false;
  while (i < tx->count) {
    bool gso = u->gso && !plain_try;
    bool src = u->pktinfo && !u->pktinfo_broken && tx->local;
    unsigned nm = build_msgs(u, tx, i, off, gso, src);
    if (plain_try) nm = 1;
    int r = sendmmsg(u->fd, u->txmm, nm, MSG_DONTWAIT);
    u->st.send_calls++;
    if (r > 0) {
      for (int k = 0; k < r; k++) {
        i += u->txdgrams[k];
        off += u->txiov[k].iov_len;
        u->st.dgrams_sent += u->txdgrams[k];
        if (u->txdgrams[k] > 1) u->st.gso_msgs++;
      }
      if (plain_try) {
        GL_DEBUG("udp: the kernel refuses UDP GSO on this socket; sending without it");
        u->gso = false;
        plain_try = false;
      }
      continue;
    }
    int e = errno;
    if (e == EINTR) continue;
    if (errno_busy(e)) break;
    if ((e == EIO || e == EINVAL) && gso && u->txdgrams[0] > 1) {
      plain_try = true;
      continue;
    }
    if (e == EINVAL && src && u->txmm[0].msg_hdr.msg_control) {
      /* Some kernels refuse a source address for v4-mapped peers. */
      GL_DEBUG("udp: sending with a source address failed, sending without");
      u->pktinfo_broken = true;
      plain_try = false;
      continue;
    }
    /* Drop the first message (QUIC recovers what mattered). */
    if (!*hard_err) *hard_err = e;
    i += u->txdgrams[0];
    off += u->txiov[0].iov_len;
    plain_try = false;
  }
  return i;
}

/* ======================================================================
 * Receiving
 * ==================================================================== */

/* The destination address of a datagram: the socket's, with the address
 * from IP_PKTINFO / IPV6_PKTINFO. */
static void msg_local(const gl_udp *u, struct msghdr *h, gl_udp_msg *m) {
  memcpy(&m->local, &u->self, u->selflen);
  m->locallen = u->selflen;
  for (struct cmsghdr *cm = CMSG_FIRSTHDR(h); cm; cm = CMSG_NXTHDR(h, cm)) {
    if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO) {
      int seg;
      memcpy(&seg, CMSG_DATA(cm), sizeof seg);
      if (seg > 0 && (size_t)seg < m->len) m->seg = (size_t)seg;
    } else if (cm->cmsg_level == IPPROTO_IPV6 && cm->cmsg_type == IPV6_PKTINFO &&
               u->family == AF_INET6) {
      struct in6_pktinfo pi;
      memcpy(&pi, CMSG_DATA(cm), sizeof pi);
      struct sockaddr_in6 *l6 = (struct sockaddr_in6 *)&m->local;
      l6->sin6_addr = pi.ipi6_addr;
      l6->sin6_scope_id = IN6_IS_ADDR_LINKLOCAL(&pi.ipi6_addr) ? pi.ipi6_ifindex : 0;
    } else if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO &&
               u->family == AF_INET) {
      struct in_pktinfo pi;
      memcpy(&pi, CMSG_DATA(cm), sizeof pi);
      ((struct sockaddr_in *)&m->local)->sin_addr = pi.ipi_addr;
    }
  }
}

int gl_udp_recv(gl_udp *u, gl_udp_msg **msgs) {
  *msgs = u->msgs;
  for (unsigned i = 0; i < u->nslots; i++) {
    struct msghdr *h = &u->rxmm[i].msg_hdr;
    h->msg_namelen = sizeof u->rxaddr[i];
    h->msg_controllen = sizeof u->rxctl[i].buf;
    h->msg_flags = 0;
    u->rxiov[i].iov_len = RX_SLOT_BYTES;
  }
  int n;
  do {
    n = recvmmsg(u->fd, u->rxmm, u->nslots, MSG_DONTWAIT, NULL);
    u->st.recv_calls++;
  } while (n < 0 && errno == EINTR);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
  int out = 0;
  for (int i = 0; i < n; i++) {
    struct msghdr *h = &u->rxmm[i].msg_hdr;
    size_t len = u->rxmm[i].msg_len;
    sa_family_t fam = u->rxaddr[i].ss_family;
    if (len == 0 || (h->msg_flags & MSG_TRUNC) || (fam != AF_INET && fam != AF_INET6)) {
      GL_DEBUG("udp: dropped a %zu-byte datagram (empty or truncated)", len);
      continue;
    }
    gl_udp_msg *m = &u->msgs[out++];
    m->data = u->rxiov[i].iov_base;
    m->len = len;
    m->seg = len;
    memcpy(&m->remote, &u->rxaddr[i], h->msg_namelen);
    m->remotelen = h->msg_namelen;
    msg_local(u, h, m);
    if (m->seg < m->len) {
      u->st.gro_msgs++;
      u->st.dgrams_received += (m->len + m->seg - 1) / m->seg;
    } else {
      u->st.dgrams_received++;
    }
  }
  return out;
}
