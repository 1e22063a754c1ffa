/*
 * srv.c - DNS SRV lookups through glibc's resolver (srv.h).
 *
 * Each call has a struct __res_state of its own (res_ninit .. res_nclose),
 * which makes it thread-safe. With a server given, the state's server list
 * is replaced by that one server: an IPv4 address goes in nsaddr_list[0];
 * an IPv6 one the way res_ninit itself stores one read from resolv.conf
 * (nsaddr_list[0].sin_family 0 and a malloc'd sockaddr_in6 in
 * _u._ext.nsaddrs[0], which res_nclose frees). The answer is walked with
 * ns_initparse / ns_parserr and the target names expanded with dn_expand.
 */
#include "lib/srv.h"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/util.h"

/* Per-try timeout of each server (seconds) and tries. */
#define SRV_RETRANS_S 1
#define SRV_RETRY 2
/* Largest DNS message (over TCP). */
#define SRV_ANSWER_MAX 65536
/* Longest name in presentation form without its trailing dot. */
#define SRV_NAME_MAX 253

typedef struct srv_server {
  bool v6;
  struct sockaddr_in sin;
  struct sockaddr_in6 sin6;
  char text[64]; /* "127.0.0.1:53", "[::1]:53" */
} srv_server;

/* A port: 1..65535 in decimal digits only. */
static bool parse_port(const char *s, uint16_t *port) {
  if (*s == '\0' || strlen(s) > 5) return false;
  unsigned long v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9') return false;
    v = v * 10 + (unsigned long)(*p - '0');
  }
  if (v == 0 || v > 65535) return false;
  *port = (uint16_t)v;
  return true;
}

/* Parses "IPv4", "IPv4:PORT", "[IPv6]", "[IPv6]:PORT" or a bare IPv6
 * address. NULL with the reason when it is none of them. */
static const char *parse_server(const char *s, srv_server *sv) {
  memset(sv, 0, sizeof *sv);
  char buf[80];
  size_t len = strlen(s);
  if (len == 0) return "empty DNS server address";
  if (len >= sizeof buf) return "DNS server address too long";
  memcpy(buf, s, len + 1);
  uint16_t port = 53;
  const char *host = buf;
  if (buf[0] == '[') {
    char *rb = strchr(buf, ']');
    if (!rb) return "no ']' after the IPv6 address";
    *rb = '\0';
    host = buf + 1;
    if (rb[1] == ':') {
      if (!parse_port(rb + 2, &port)) return "bad port (1-65535)";
    } else if (rb[1] != '\0') {
      return "expected ':PORT' after ']'";
    }
    if (inet_pton(AF_INET6, host, &sv->sin6.sin6_addr) != 1) return "not an IPv6 address";
    sv->v6 = true;
  } else {
    char *colon = strchr(buf, ':');
    if (colon && strchr(colon + 1, ':')) { /* two or more: a bare IPv6 address */
      if (inet_pton(AF_INET6, buf, &sv->sin6.sin6_addr) != 1)
        return "not an IPv4 or IPv6 address (write IPv6 as [ADDRESS]:PORT)";
      sv->v6 = true;
    } else {
      if (colon) {
        *colon = '\0';
        if (!parse_port(colon + 1, &port)) return "bad port (1-65535)";
      }
      if (inet_pton(AF_INET, buf, &sv->sin.sin_addr) != 1)
        return "not an IPv4 address (IPv4:PORT, [IPv6]:PORT, or an address alone for port 53)";
    }
  }
  char addr[INET6_ADDRSTRLEN];
  if (sv->v6) {
    sv->sin6.sin6_family = AF_INET6;
    sv->sin6.sin6_port = htons(port);
    inet_ntop(AF_INET6, &sv->sin6.sin6_addr, addr, sizeof addr);
    snprintf(sv->text, sizeof sv->text, "[%s]:%u", addr, (unsigned)port);
  } else {
    sv->sin.sin_family = AF_INET;
    sv->sin.sin_port = htons(port);
    inet_ntop(AF_INET, &sv->sin.sin_addr, addr, sizeof addr);
    snprintf(sv->text, sizeof sv->text, "%s:%u", addr, (unsigned)port);
  }
  return NULL;
}

/* Makes sv the only server of res (initialized by res_ninit). */
static bool use_server(res_state res, const srv_server *sv) {
  /* res_ninit leaves a malloc'd copy of each IPv6 server of resolv.conf
   * here (NULL for IPv4 ones); res_nclose frees only those below
   * nscount, so free them now. */
  for (int i = 0; i < MAXNS; i++) {
    free(res->_u._ext.nsaddrs[i]);
    res->_u._ext.nsaddrs[i] = NULL;
    res->_u._ext.nssocks[i] = -1;
  }
  /* res_send rebuilds its private copy from the public list when this
   * count differs from nscount; 0 forces it. */
  res->_u._ext.nscount = 0;
  memset(&res->nsaddr_list[0], 0, sizeof res->nsaddr_list[0]);
  if (sv->v6) {
    struct sockaddr_in6 *a = malloc(sizeof *a);
    if (!a) return false;
    *a = sv->sin6;
    res->_u._ext.nsaddrs[0] = a; /* nsaddr_list[0].sin_family == 0 says "use this" */
  } else {
    res->nsaddr_list[0] = sv->sin;
  }
  res->nscount = 1;
  return true;
}

static const char *rcode_name(int rcode) {
  switch (rcode) {
  case ns_r_noerror: return "NOERROR";
  case ns_r_formerr: return "FORMERR";
  case ns_r_servfail: return "SERVFAIL";
  case ns_r_nxdomain: return "NXDOMAIN";
  case ns_r_notimpl: return "NOTIMP";
  case ns_r_refused: return "REFUSED";
  default: return "an error code";
  }
}

static int cmp_target(const void *pa, const void *pb) {
  const gl_srv_target *a = pa, *b = pb;
  if (a->priority != b->priority) return a->priority < b->priority ? -1 : 1;
  if (a->weight != b->weight) return a->weight > b->weight ? -1 : 1;
  int c = strcmp(a->host, b->host);
  if (c != 0) return c < 0 ? -1 : 1;
  if (a->port != b->port) return a->port < b->port ? -1 : 1;
  return 0;
}

/* Collects the SRV records of the answer section of ans (len bytes) into
 * t (room for the answer count). Returns how many, or -1 when the message
 * does not parse. *dot: some target was ".". */
static long collect(const unsigned char *ans, int len, gl_srv_target **t, bool *dot,
                    bool *malformed) {
  ns_msg msg;
  if (ns_initparse(ans, len, &msg) < 0) return -1;
  int an = ns_msg_count(msg, ns_s_an);
  *t = an > 0 ? calloc((size_t)an, sizeof **t) : NULL;
  if (an > 0 && !*t) return -2;
  long n = 0;
  for (int i = 0; i < an; i++) {
    ns_rr rr;
    if (ns_parserr(&msg, ns_s_an, i, &rr) < 0) {
      *malformed = true;
      break; /* the rest cannot be located either */
    }
    if (ns_rr_type(rr) != ns_t_srv || ns_rr_class(rr) != ns_c_in) continue; /* e.g. a CNAME */
    const unsigned char *rd = ns_rr_rdata(rr);
    unsigned rdlen = ns_rr_rdlen(rr);
    if (rdlen < 7) {
      *malformed = true;
      continue;
    }
    gl_srv_target *x = &(*t)[n];
    x->priority = (uint16_t)ns_get16(rd);
    x->weight = (uint16_t)ns_get16(rd + 2);
    x->port = (uint16_t)ns_get16(rd + 4);
    int used = dn_expand(ns_msg_base(msg), ns_msg_end(msg), rd + 6, x->host, sizeof x->host);
    if (used < 0 || (unsigned)used > rdlen - 6) {
      *malformed = true;
      continue;
    }
    if (x->host[0] == '\0' || strcmp(x->host, ".") == 0) {
      *dot = true;
      continue;
    }
    n++;
  }
  return n;
}

int gl_srv_resolve(const char *name, const char *dns_server, gl_srv_target **out, size_t *count,
                   char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (out) *out = NULL;
  if (count) *count = 0;
  if (!out || !count) {
    gl_set_err(err, errlen, "gl_srv_resolve: out and count are required");
    return -2;
  }
  if (!name || name[0] == '\0') {
    gl_set_err(err, errlen, "empty SRV name");
    return -2;
  }
  size_t nlen = strlen(name);
  size_t bare = nlen > 1 && name[nlen - 1] == '.' ? nlen - 1 : nlen;
  if (bare > SRV_NAME_MAX) {
    gl_set_err(err, errlen, "%.40s...: name too long (%zu characters, at most %d)", name, bare,
               SRV_NAME_MAX);
    return -2;
  }
  unsigned char wire[NS_MAXCDNAME];
  if (ns_name_pton(name, wire, sizeof wire) < 0) {
    gl_set_err(err, errlen,
               "%s: not a valid DNS name (a label over 63 bytes, an empty label, or a bad escape)",
               name);
    return -2;
  }
  srv_server sv;
  if (dns_server) {
    const char *why = parse_server(dns_server, &sv);
    if (why) {
      gl_set_err(err, errlen, "DNS server \"%s\": %s", dns_server, why);
      return -2;
    }
  }

  struct __res_state res;
  memset(&res, 0, sizeof res);
  if (res_ninit(&res) != 0) {
    gl_set_err(err, errlen, "%s: cannot set up the resolver (res_ninit failed)", name);
    return -1;
  }
  res.retrans = SRV_RETRANS_S;
  res.retry = SRV_RETRY;
  if (dns_server && !use_server(&res, &sv)) {
    res_nclose(&res);
    gl_set_err(err, errlen, "%s: out of memory", name);
    return -1;
  }
  const char *server_text = dns_server ? sv.text : NULL;

  unsigned char *ans = calloc(1, SRV_ANSWER_MAX);
  if (!ans) {
    res_nclose(&res);
    gl_set_err(err, errlen, "%s: out of memory", name);
    return -1;
  }
  int len = res_nquery(&res, name, ns_c_in, ns_t_srv, ans, SRV_ANSWER_MAX);
  int herr = res.res_h_errno;
  res_nclose(&res);

  int rc = -1;
  gl_srv_target *t = NULL;
  if (len < 0) {
    /* A reply that res_send gave up on (SERVFAIL, REFUSED) stays in the
     * zeroed buffer: its QR bit tells it from silence. */
    const HEADER *h = (const HEADER *)ans;
    int rcode = h->qr ? (int)h->rcode : -1;
    if (herr == HOST_NOT_FOUND) {
      gl_set_err(err, errlen, "%s: no such name (NXDOMAIN)", name);
    } else if (herr == NO_DATA) {
      gl_set_err(err, errlen, "%s: no SRV records", name);
    } else if (rcode > 0) {
      if (server_text)
        gl_set_err(err, errlen, "%s: DNS server %s answered %s (rcode %d)", name, server_text,
                   rcode_name(rcode), rcode);
      else
        gl_set_err(err, errlen, "%s: the system's DNS servers answered %s (rcode %d)", name,
                   rcode_name(rcode), rcode);
    } else if (herr == TRY_AGAIN) {
      if (server_text)
        gl_set_err(err, errlen, "%s: DNS server %s did not answer", name, server_text);
      else
        gl_set_err(err, errlen, "%s: the system's DNS servers (/etc/resolv.conf) did not answer",
                   name);
    } else {
      gl_set_err(err, errlen, "%s: SRV query failed (%s)", name, hstrerror(herr));
    }
    goto done;
  }
  if (len > SRV_ANSWER_MAX) len = SRV_ANSWER_MAX;
  bool dot = false, malformed = false;
  long n = collect(ans, len, &t, &dot, &malformed);
  if (n == -2) {
    gl_set_err(err, errlen, "%s: out of memory", name);
  } else if (n < 0) {
    gl_set_err(err, errlen, "%s: the DNS answer does not parse", name);
  } else if (n == 0) {
    if (dot)
      gl_set_err(err, errlen, "%s: service not available (SRV target \".\")", name);
    else if (malformed)
      gl_set_err(err, errlen, "%s: malformed SRV records", name);
    else
      gl_set_err(err, errlen, "%s: no SRV records", name);
  } else {
    qsort(t, (size_t)n, sizeof *t, cmp_target);
    *out = t;
    *count = (size_t)n;
    t = NULL;
    rc = 0;
  }
done:
  free(t);
  free(ans);
  return rc;
}
