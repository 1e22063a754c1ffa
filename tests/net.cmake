# tests of src/net: loopback QUIC client/server and TLS helpers, and the
# UDP batch I/O under them.
gl_add_test(test_quic
  SOURCES unit/test_quic.c
  LIBS gl_net_server gl_net_client Threads::Threads
  TIMEOUT 180
  LABELS net)
gl_add_test(test_udp_io
  SOURCES unit/test_udp_io.c
  LIBS gl_net_client
  TIMEOUT 60
  LABELS net)
