/*
 * udp_io.h - fast UDP datagram I/O for the QUIC transport, kept apart from
 * the protocol code (as Knot DNS keeps packet I/O apart from its QUIC
 * logic): quic_server.c and quic_client.c hand it finished packets and get
 * datagrams back; it knows nothing of QUIC.
 *
 * Sending: the caller writes datagrams back to back into one buffer and
 * passes their lengths. Runs of equal size (the last of a run may be
 * shorter) leave as one message with UDP generic segmentation offload
 * (a UDP_SEGMENT cmsg: the kernel cuts it into datagrams), several such
 * messages in one sendmmsg. When the kernel refuses GSO (EIO or EINVAL on
 * a message that then goes out without it), the object remembers and sends
 * one datagram per message from then on, still batched by sendmmsg.
 *
 * Receiving: recvmmsg into a set of 64 KiB slots; with UDP_GRO on, one slot
 * may hold several datagrams of one sender coalesced by the kernel (the
 * cmsg gives their size), which the caller walks with gl_udp_msg_next().
 *
 * One gl_udp belongs to one thread at a time. Nothing here logs above
 * DEBUG: every socket option is best effort (containers may refuse the
 * buffer sizes, old kernels GSO or GRO); gl_udp_info() says what took.
 */
#ifndef GL_NET_UDP_IO_H
#define GL_NET_UDP_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Largest UDP payload of one datagram (IPv6 without jumbograms). */
#define GL_UDP_MAX_PAYLOAD 65527
/* Largest payload of one GSO message (what IPv4 allows for the whole
 * train), and the most datagrams in one (UDP_MAX_SEGMENTS of the first
 * kernels with GSO; later ones allow more). */
#define GL_UDP_GSO_MAX_BYTES 65507
#define GL_UDP_GSO_MAX_SEGS 64
/* Default SO_SNDBUF / SO_RCVBUF: room for a few milliseconds at several
 * GB/s. */
#define GL_UDP_DEFAULT_BUFFER (32u << 20)

typedef struct gl_udp gl_udp;

typedef struct gl_udp_opts {
  size_t buffer_bytes; /* SO_SNDBUF and SO_RCVBUF wanted (0: GL_UDP_DEFAULT_BUFFER); past
                          net.core.[rw]mem_max only with CAP_NET_ADMIN (SO_*BUFFORCE) */
  unsigned rx_slots;   /* messages per recvmmsg (0: 16), 64 KiB each */
  bool no_gso;         /* never send with UDP_SEGMENT (sendmmsg only) */
  bool no_gro;         /* leave UDP_GRO off (one datagram per message) */
  bool pktinfo;        /* report each datagram's destination address (for a
                          socket bound to a wildcard address) and accept a
                          source address per send */
} gl_udp_opts;

/* What a gl_udp does, for tests, logs and benchmarks. */
typedef struct gl_udp_info {
  bool gso;           /* sends use UDP_SEGMENT */
  bool gro;           /* UDP_GRO is on */
  size_t sndbuf, rcvbuf; /* what the kernel granted (getsockopt, i.e. doubled) */
  uint64_t send_calls;   /* sendmsg/sendmmsg system calls */
  uint64_t gso_msgs;     /* messages sent with UDP_SEGMENT */
  uint64_t dgrams_sent;  /* datagrams handed to the kernel */
  uint64_t recv_calls;   /* recvmmsg system calls */
  uint64_t gro_msgs;     /* messages received holding more than one datagram */
  uint64_t dgrams_received;
} gl_udp_info;

/* Takes fd (a UDP socket, already bound or connected, non-blocking) and
 * sets it up: buffers, UDP_GRO, IP_PKTINFO/IPV6_RECVPKTINFO when asked,
 * and "don't fragment" without heeding cached path MTUs
 * (IP_PMTUDISC_PROBE), so QUIC's path MTU discovery sees oversized probes
 * fail rather than fragment. o may be NULL (defaults). The fd belongs to
 * the object from then on, even when this fails. 0, or -1 with errno. */
int gl_udp_new(int fd, const gl_udp_opts *o, gl_udp **out);

/* Closes the socket and frees u. NULL ignored. */
void gl_udp_del(gl_udp *u);

int gl_udp_fd(const gl_udp *u);

/* The socket's own address (getsockname after gl_udp_new). */
const struct sockaddr *gl_udp_local(const gl_udp *u, socklen_t *len);

void gl_udp_info_get(const gl_udp *u, gl_udp_info *out);

/* The largest UDP payload the route to a connected socket's peer carries
 * in one unfragmented datagram (the route's MTU less the IP and UDP
 * headers: 65488 or 65508 over loopback, 1452 or 1472 over Ethernet), or 0
 * when the kernel does not say (an unconnected socket). */
size_t gl_udp_path_max_payload(const gl_udp *u);

/* Datagrams to send: count of them, lens[i] bytes each, back to back in
 * data, all to remote (NULL on a connected socket) from local (a source
 * address for IP_PKTINFO, or NULL: the kernel picks; ignored unless the
 * object was made with pktinfo). */
typedef struct gl_udp_tx {
  const uint8_t *data;
  const size_t *lens;
  size_t count;
  const struct sockaddr *remote;
  socklen_t remotelen;
  const struct sockaddr *local;
} gl_udp_tx;

/* Sends the datagrams of tx in as few system calls as it can. Returns how
 * many (from the first) are done with: sent, or dropped on an error other
 * than a full socket, such as EMSGSIZE for a path MTU probe larger than the
 * interface, or a pending ICMP error on a connected socket (*hard_err: the
 * first such errno, else 0). Fewer than tx->count only when the socket is
 * full (EAGAIN, ENOBUFS): send the rest once it is writable. */
size_t gl_udp_send(gl_udp *u, const gl_udp_tx *tx, int *hard_err);

/* One received message: one datagram, or several of seg bytes from the
 * same sender (GRO; the last may be shorter). */
typedef struct gl_udp_msg {
  uint8_t *data;
  size_t len;
  size_t seg; /* datagram size; == len for a single datagram */
  struct sockaddr_storage remote;
  socklen_t remotelen;
  /* Where it was sent to: the socket's address, with the destination
   * address of the datagram when pktinfo is on. */
  struct sockaddr_storage local;
  socklen_t locallen;
} gl_udp_msg;

/* Reads what the socket holds, up to rx_slots messages, without blocking.
 * Returns the number of messages in *msgs (0: nothing queued), or -1 with
 * errno: an error the socket reported (e.g. ECONNREFUSED after an ICMP
 * port unreachable), with no message this time; what is queued behind it
 * comes with the next call. Empty or truncated datagrams are dropped. The
 * messages (and their bytes, which the caller may modify) stay valid
 * until the next gl_udp_recv or gl_udp_del. */
int gl_udp_recv(gl_udp *u, gl_udp_msg **msgs);

/* Walks the datagrams of m: *off starts at 0; returns the next datagram's
 * bytes and length, or NULL when done. */
static inline uint8_t *gl_udp_msg_next(const gl_udp_msg *m, size_t *off, size_t *len) {
  if (*off >= m->len) return NULL;
  size_t n = m->len - *off;
  if (m->seg && n > m->seg) n = m->seg;
  uint8_t *p = m->data + *off;
  *off += n;
  *len = n;
  return p;
}

#endif /* GL_NET_UDP_IO_H */
