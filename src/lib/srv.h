/*
 * srv.h - DNS SRV lookups for the client library: which daemons serve a
 * name such as "_gpulease._udp.example.org", at which ports, in which order
 * of preference (RFC 2782).
 *
 * The query goes through glibc's resolver (libresolv: res_ninit,
 * res_nquery, ns_initparse, ns_parserr, dn_expand), with a resolver state
 * of its own per call, so calls are thread-safe and may run in parallel.
 * Each call is bounded in time: every server is given 1 s per try, 2 tries
 * (about 2 s with one server, up to about 6 s with /etc/resolv.conf's
 * three); a truncated UDP answer is asked again over TCP, as the resolver
 * does.
 *
 * Nothing here is exported from libgpulease.so (names are gl_srv_*).
 */
#ifndef GL_LIB_SRV_H
#define GL_LIB_SRV_H

#include <stddef.h>
#include <stdint.h>

/* One SRV target. */
typedef struct gl_srv_target {
  char host[256];    /* target name without the trailing dot */
  uint16_t port;     /* UDP/TCP port at host */
  uint16_t priority; /* lower is preferred */
  uint16_t weight;   /* among equal priorities, higher takes more load */
} gl_srv_target;

/* Resolves the SRV records of name (e.g. "_gpulease._udp.example.org";
 * absolute: no search domains are appended; a trailing dot is allowed).
 *
 * dns_server: the one DNS server to ask, "IPv4:PORT", "[IPv6]:PORT",
 * "IPv4" or "[IPv6]" (port 53), or NULL for the system's resolvers
 * (/etc/resolv.conf, with its options, but the timeouts above).
 *
 * On success returns 0 with *out a malloc'd array of *count >= 1 targets,
 * which the caller frees with free(), sorted by priority ascending, then
 * weight descending, then host, then port. A target "." (the service is
 * explicitly not available there) is left out. err is untouched.
 *
 * Returns -1 when the name does not resolve to any target: NXDOMAIN, no
 * SRV records, only "." targets, SERVFAIL or another error code, no answer
 * in time, an answer that does not parse; -2 for bad arguments (name
 * empty, too long or not a DNS name; dns_server not one of the forms
 * above; out or count NULL). Either way *out is NULL, *count 0, and err
 * (errlen bytes, always NUL-terminated; may be NULL) says why, naming the
 * name and the server, e.g. "_x._udp.example.org: no such name
 * (NXDOMAIN)", "_x._udp.example.org: no SRV records",
 * "_x._udp.example.org: DNS server 127.0.0.1:5353 did not answer". */
int gl_srv_resolve(const char *name, const char *dns_server, gl_srv_target **out, size_t *count,
                   char *err, size_t errlen);

#endif
