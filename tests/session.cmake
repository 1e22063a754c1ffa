# Sessions end to end (tests/e2e/test_e2e_session.c): a real gpuleased on
# the emulated device (GL_TEST_DEVICE=cuda: on real GPUs), libgpulease.
gl_add_test(test_e2e_session SOURCES e2e/test_e2e_session.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common Threads::Threads m TIMEOUT 600 LABELS emu)
add_dependencies(test_e2e_session gpuleased gl_kernels)
# The session rules of docs/protocol.md, from a raw client (the wire codec
# over the QUIC transport): ordering, missing seqs, the window, a lost
# context, region offsets.
gl_add_test(test_e2e_contract SOURCES e2e/test_e2e_contract.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common Threads::Threads TIMEOUT 300 LABELS emu)
add_dependencies(test_e2e_contract gpuleased)
# The daemon's verdict on a request's header (internal ops, the size
# limit), before its body is read, over QUIC, a stripe port and the local
# socket.
gl_add_test(test_e2e_early SOURCES e2e/test_e2e_early.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common Threads::Threads TIMEOUT 120 LABELS emu)
add_dependencies(test_e2e_early gpuleased)
# Sessions, transfers and GPU_SUBMIT through a lossy, reordering UDP relay
# on loopback (tests/e2e/udp_relay.c): issue 9's "lossy networks".
gl_add_test(test_e2e_lossy SOURCES e2e/test_e2e_lossy.c e2e/udp_relay.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common Threads::Threads TIMEOUT 300 LABELS emu)
add_dependencies(test_e2e_lossy gpuleased)
# The same-host fast path: the local socket, shared memory segments, the
# library's staging and gpulease_host_alloc, refusals, a killed client.
gl_add_test(test_e2e_local SOURCES e2e/test_e2e_local.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common Threads::Threads TIMEOUT 300 LABELS emu)
add_dependencies(test_e2e_local gpuleased)
# Striped transfers: a daemon with network threads (--net-threads), the
# library striping large MEM_WRITEs and MEM_READs over its stripe ports.
gl_add_test(test_e2e_stripe SOURCES e2e/test_e2e_stripe.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common Threads::Threads TIMEOUT 300 LABELS emu)
add_dependencies(test_e2e_stripe gpuleased)
# Warm workers (gpuleased --warm-workers): leases from the pool, refills,
# a killed warm worker replaced.
gl_add_test(test_e2e_pool SOURCES e2e/test_e2e_pool.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common Threads::Threads TIMEOUT 300 LABELS emu)
add_dependencies(test_e2e_pool gpuleased gl_kernels)
# Lease classes (isolated, shared, device, partition): shared contexts, a
# fault in one, device exclusivity, and 10,000 alloc/free cycles leaving
# nothing behind.
gl_add_test(test_e2e_classes SOURCES e2e/test_e2e_classes.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common Threads::Threads TIMEOUT 600 LABELS emu)
add_dependencies(test_e2e_classes gpuleased gl_kernels)
# Launches beyond LAUNCH: bursts, events, cooperative and cluster launches
# (tests/e2e/test_e2e_exec.c), on the emulated device (GL_TEST_DEVICE=cuda:
# on a GPU).
gl_add_test(test_e2e_exec SOURCES e2e/test_e2e_exec.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common Threads::Threads TIMEOUT 300 LABELS emu)
add_dependencies(test_e2e_exec gpuleased)
# Workers confine themselves (no_new_privs, no core dumps, seccomp) while
# they run kernels; --no-worker-sandbox leaves them be.
gl_add_test(test_e2e_sandbox SOURCES e2e/test_e2e_sandbox.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common Threads::Threads TIMEOUT 120 LABELS emu)
add_dependencies(test_e2e_sandbox gpuleased gl_kernels)
gl_add_test(test_e2e_tenants SOURCES e2e/test_e2e_tenants.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common gl_net_client gl_dep_jsonc Threads::Threads TIMEOUT 180 LABELS emu)
add_dependencies(test_e2e_tenants gpuleased gpulease gl_kernels)
gl_add_test(test_e2e_metrics SOURCES e2e/test_e2e_metrics.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common Threads::Threads TIMEOUT 120 LABELS emu)
add_dependencies(test_e2e_metrics gpuleased gl_kernels)
# The configuration file (gpuleased --config FILE, --check-config): keys,
# the command line over them, errors with the file's line.
gl_add_test(test_e2e_config SOURCES e2e/test_e2e_config.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common Threads::Threads TIMEOUT 120 LABELS emu)
add_dependencies(test_e2e_config gpuleased)
# Under a service manager: sd_notify readiness, SIGHUP reloads of the
# configuration, certificate, tenants and audit log, keeping leases.
gl_add_test(test_e2e_reload SOURCES e2e/test_e2e_reload.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common gl_net_server Threads::Threads TIMEOUT 120 LABELS emu)
add_dependencies(test_e2e_reload gpuleased)
# Every GPU of a node (gpuleased --emu-gpus 3): the inventory, --placement
# spread and pack, a GPU by index, a fault on one GPU beside a lease on
# another.
gl_add_test(test_e2e_multigpu SOURCES e2e/test_e2e_multigpu.c e2e/daemon_harness.c
  LIBS gpulease_static gl_common Threads::Threads TIMEOUT 120 LABELS emu)
add_dependencies(test_e2e_multigpu gpuleased gl_kernels)
