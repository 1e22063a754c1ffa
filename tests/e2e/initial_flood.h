/*
 * initial_flood.h - a flood of QUIC client Initials that never finish
 * their handshake (issue 30): each is the first flight of a real client
 * connection (ngtcp2 and GnuTLS, ALPN gpulease/1, a fresh connection ID),
 * sent and then forgotten; nothing the server answers is read.
 */
#ifndef GL_TESTS_INITIAL_FLOOD_H
#define GL_TESTS_INITIAL_FLOOD_H

#include <stddef.h>
#include <sys/socket.h>

/* Sends n Initials to `to` (tolen bytes; AF_INET or AF_INET6) from nsock
 * UDP sockets bound to from (an address of to's family; its port is
 * ignored, each socket gets its own), round robin, pausing 1 ms after each
 * burst of `burst` datagrams (0: no pause) so that the receiver's socket
 * buffer is not what drops them. The sockets are kept open (and unread)
 * until gl_test_flood_close, so that the server's answers have somewhere
 * to go. Returns the number sent (fewer on an error, said on stderr), or
 * -1 when nothing could be set up. */
int gl_test_initial_flood(const struct sockaddr *to, socklen_t tolen,
                          const struct sockaddr *from, int n, int nsock, int burst);

/* Closes the sockets of the last gl_test_initial_flood. */
void gl_test_flood_close(void);

#endif
