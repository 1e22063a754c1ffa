# tests of src/net: loopback QUIC client/server and TLS helpers, and the
# UDP batch I/O under them. test_quic also builds in the daemon's network
# threads and request wrapper (shards.c, dreq.c) to test client identities
# through them.
gl_add_test(test_quic
  SOURCES unit/test_quic.c
          ${PROJECT_SOURCE_DIR}/src/daemon/shards.c ${PROJECT_SOURCE_DIR}/src/daemon/dreq.c
  LIBS gl_net_server gl_net_client gl_tenancy Threads::Threads
  TIMEOUT 180
  LABELS net)
gl_add_test(test_udp_io
  SOURCES unit/test_udp_io.c
  LIBS gl_net_client
  TIMEOUT 60
  LABELS net)
# src/lib/srv.c (DNS SRV lookups through glibc's libresolv) against a
# dnsmasq on loopback (skipped when dnsmasq is not installed). srv.c is
# built in here so the test does not wait on the whole library.
gl_add_test(test_srv
  SOURCES unit/test_srv.c ${PROJECT_SOURCE_DIR}/src/lib/srv.c
  LIBS gl_common resolv Threads::Threads
  TIMEOUT 120
  LABELS net)
