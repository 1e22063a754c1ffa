# tests of src/net: loopback QUIC client/server and TLS helpers.
gl_add_test(test_quic
  SOURCES unit/test_quic.c
  LIBS gl_net_server gl_net_client Threads::Threads
  TIMEOUT 180
  LABELS net)
