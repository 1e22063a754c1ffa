#!/usr/bin/env python3
"""gen_wire_corpus.py - writes the seed corpus of fuzz_wire.

Usage: fuzz/gen_wire_corpus.py [OUTDIR]   (default tests/fuzz-corpus/wire)

The frames are built here with Python's struct module straight from the
byte layout in docs/protocol.md, independently of the C encoder, so the
corpus also cross-checks the codec: test_wire asserts the C side's view of
the same layout. Files named req-* / resp-* are valid messages, bad-* are
refused by the decoder. Inputs a fuzzer crashed on are added by hand as
crash-<sha1> and are not touched by this script. The op codes come from
the op table, src/proto/ops.def.
"""
import os
import re
import struct
import sys

REQ, RESP = 0, 1


def read_op_table():
    """The op codes from the op table, src/proto/ops.def (one GL_OP row per op)."""
    here = os.path.dirname(os.path.abspath(__file__))
    ops = {}
    with open(os.path.join(here, "..", "src", "proto", "ops.def")) as f:
        for line in f:
            m = re.match(r"GL_OP\((\w+),\s*(0x[0-9A-Fa-f]+),", line)
            if m:
                ops[m.group(1)] = int(m.group(2), 16)
    if len(ops) < 49:
        sys.exit("gen_wire_corpus.py: src/proto/ops.def gave only %d ops" % len(ops))
    return ops


OPS = read_op_table()


def cap(generation=1, rights=0xFF, not_after=0, audience=0, mac=bytes(range(0xA0, 0xB0))):
    """A lease secret: a capability token of 40 bytes (docs/protocol.md, lease_auth)."""
    return struct.pack(">IIQQ", generation, rights, not_after, audience) + mac


SECRET = cap()


def frame(kind, op, body, status=0, version=1, body_len=None):
    if body_len is None:
        body_len = len(body)
    return b"GL" + struct.pack(">BBHHI", version, kind, op, status, body_len) + body


def str8(s):
    return struct.pack(">B", len(s)) + s


def auth(lease_id=7):
    return struct.pack(">Q", lease_id) + SECRET


def submit_body(name=b"vadd", fmt=1, flags=1, params=None, image=b".version 8.0\n",
                inp=b"\x01\x02\x03\x04"):
    if params is None:
        params = [("ptr", 0), ("ptr", 4096), ("scalar", struct.pack("<I", 1024))]
    plist = b""
    for kind, v in params:
        if kind == "ptr":
            plist += struct.pack(">BQ", 1, v)
        else:
            plist += struct.pack(">BB", 2, len(v)) + v
    return (auth() + struct.pack(">BBH", fmt, flags, len(name)) + name +
            struct.pack(">7I", 4, 1, 1, 256, 1, 1, 0) +
            struct.pack(">3Q", 0, 4096, 4096) +
            struct.pack(">H", len(params)) + plist +
            struct.pack(">I", len(image)) + image +
            struct.pack(">I", len(inp)) + inp)


def lease_info(secret=SECRET, cls=0):
    return struct.pack(">Q", 7) + secret + struct.pack(">IQIQQB", 0, 1 << 30, 300, 299500, 3, cls)


def tenant_info(name=b"team-a", flags=3):
    return (str8(name) + struct.pack(">IQIIIQQIIQ", flags, (1 << 64) - 1, 16, 0xFFFFFFFF, 3600,
                                     36000, 2 << 30, 2, 5, 1234))


def gpu_entry(i):
    return (struct.pack(">I", i) + str8(b"GPU-%08x-0000-0000-0000-000000000000" % i) +
            str8(b"NVIDIA H100 80GB HBM3") + struct.pack(">BBI", 9, 0, 132) +
            struct.pack(">QQQIIQ", 85 << 30, 80 << 30, 1 << 30, 1, 8, 327 << 20) +
            struct.pack(">BBBB", 9, 0, 9, 5))


def resp(op, result=b"", status=0, msg=b""):
    return frame(RESP, op, struct.pack(">H", len(msg)) + msg + result, status=status)


# ---- session ops (docs/protocol.md section 4, "Sessions") ----

PTX = b".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n ret;\n}\n"
BUF1, BUF2, MOD, FUNC = 0x0100000000000001, 0x0100000000000002, 0x0200000000000001, 0x0300000000000001


def sref(session_id=1, seq=1):
    return auth() + struct.pack(">QQ", session_id, seq)


def launch_params(params):
    out = b""
    for kind, a, b in params:
        if kind == "buf":
            out += struct.pack(">BQQ", 1, a, b)
        else:
            out += struct.pack(">BB", 2, len(a)) + a
    return out


def launch_body(params=None, count=None, session_id=1, seq=7):
    if params is None:
        params = [("buf", BUF1, 0), ("buf", BUF2, 256), ("scalar", struct.pack("<I", 1024), None)]
    if count is None:
        count = len(params)
    return (sref(session_id, seq) + struct.pack(">Q", FUNC) +
            struct.pack(">7I", 4, 1, 1, 256, 1, 1, 0) + struct.pack(">H", count) +
            launch_params(params))


def func_info_result(sizes=(8, 8, 4), count=None):
    if count is None:
        count = len(sizes)
    return (struct.pack(">Q7IH", FUNC, 16, 1024, 0, 0, 0, 80, 90, count) +
            b"".join(struct.pack(">H", n) for n in sizes))


def tmap_body(rank=2):
    return (sref(1, 15) + struct.pack(">IIQQ", 7, rank, BUF1, 0) +
            struct.pack(">5Q", 64, 32, 0, 0, 0) + struct.pack(">4Q", 256, 0, 0, 0) +
            struct.pack(">5I", 16, 8, 0, 0, 0) + struct.pack(">5I", 1, 1, 0, 0, 0) +
            struct.pack(">4I", 0, 0, 0, 0))


def session_corpus():
    o = OPS
    yield "req-session-open", frame(REQ, o["SESSION_OPEN"], auth())
    yield "req-session-close", frame(REQ, o["SESSION_CLOSE"], sref(1, 12))
    yield "req-sync", frame(REQ, o["SYNC"], sref(1, 9) + struct.pack(">Q", 0))
    yield "req-sync-ack", frame(REQ, o["SYNC"], sref(1, 11) + struct.pack(">Q", 7))
    yield "req-mem-alloc", frame(REQ, o["MEM_ALLOC"], sref(1, 1) + struct.pack(">Q", 1 << 20))
    # 0.2: flags (u32) after size_bytes; bit 0 asks for the device address
    yield "req-mem-alloc-address", frame(REQ, o["MEM_ALLOC"], sref(1, 1) + struct.pack(">QI", 1 << 20, 1))
    yield "bad-mem-alloc-flags-2", frame(REQ, o["MEM_ALLOC"], sref(1, 1) + struct.pack(">QI", 1 << 20, 2))
    yield "req-mem-free", frame(REQ, o["MEM_FREE"], sref(1, 10) + struct.pack(">Q", BUF1))
    yield "req-mem-write", frame(REQ, o["MEM_WRITE"], sref(1, 2) + struct.pack(">QQI", BUF1, 0, 16) +
                                 bytes(range(16)))
    yield "req-mem-read", frame(REQ, o["MEM_READ"], sref(1, 8) + struct.pack(">QQI", BUF2, 0, 4096))
    yield "req-mem-copy", frame(REQ, o["MEM_COPY"], sref(1, 3) + struct.pack(">5Q", BUF2, 0, BUF1, 0, 16))
    yield "req-memset", frame(REQ, o["MEMSET"], sref(1, 4) + struct.pack(">QQBIQ", BUF2, 16, 2, 0xFFFF, 8))
    yield "req-memset-unordered", frame(REQ, o["MEMSET"], sref(1, 0) +
                                        struct.pack(">QQBIQ", BUF1, 0, 4, 0xDEADBEEF, 1))
    yield "req-module-load", frame(REQ, o["MODULE_LOAD"], sref(1, 5) + struct.pack(">BI", 1, len(PTX)) + PTX)
    yield "req-module-unload", frame(REQ, o["MODULE_UNLOAD"], sref(1, 13) + struct.pack(">Q", MOD))
    yield "req-func-info", frame(REQ, o["FUNC_INFO"], sref(1, 6) + struct.pack(">QH", MOD, 1) + b"k")
    yield "req-launch", frame(REQ, o["LAUNCH"], launch_body())
    yield "req-launch-noparams", frame(REQ, o["LAUNCH"], launch_body(params=[]))
    yield "resp-session-open", resp(o["SESSION_OPEN"], struct.pack(">Q", 1))
    yield "resp-session-close", resp(o["SESSION_CLOSE"])
    yield "resp-sync-ok", resp(o["SYNC"], struct.pack(">HHQ", 0, 0, 0))
    yield "resp-sync-failure", resp(o["SYNC"], struct.pack(">HHQ", 4, o["LAUNCH"], 7),
                                    msg=b"op 7 (LAUNCH) failed: CUDA_ERROR_ILLEGAL_ADDRESS")
    yield "resp-mem-alloc", resp(o["MEM_ALLOC"], struct.pack(">QQ", BUF1, 0x1200))
    yield "resp-mem-alloc-address", resp(o["MEM_ALLOC"], struct.pack(">QQQ", BUF1, 0x1200, 0x7F0000201200))
    yield "resp-mem-free", resp(o["MEM_FREE"])
    yield "resp-mem-write", resp(o["MEM_WRITE"])
    yield "resp-mem-read", resp(o["MEM_READ"], struct.pack(">I", 16) + bytes(range(16, 32)))
    yield "resp-mem-copy", resp(o["MEM_COPY"])
    yield "resp-memset", resp(o["MEMSET"])
    yield "resp-module-load", resp(o["MODULE_LOAD"], struct.pack(">QB", MOD, 2))
    yield "resp-module-unload", resp(o["MODULE_UNLOAD"])
    yield "resp-func-info", resp(o["FUNC_INFO"], func_info_result())
    yield "resp-func-info-unknown", resp(o["FUNC_INFO"], func_info_result(sizes=(), count=0xFFFF))
    yield "resp-launch", resp(o["LAUNCH"])
    yield "resp-error-invalid-handle", resp(o["MEM_FREE"], status=16, msg=b"no buffer 0x1 in session 1")
    # BATCH: whole messages behind u32 lengths, seqs following the batch's.
    ops = [frame(REQ, o["LAUNCH"], launch_body(seq=7)),
           frame(REQ, o["MEMSET"], sref(1, 8) + struct.pack(">QQBIQ", BUF2, 0, 4, 7, 8)),
           frame(REQ, o["SYNC"], sref(1, 9) + struct.pack(">Q", 0))]
    lst = b"".join(struct.pack(">I", len(m)) + m for m in ops)
    yield "req-batch", frame(REQ, o["BATCH"], sref(1, 7) + struct.pack(">H", 3) + lst)
    yield "bad-batch-seq", frame(REQ, o["BATCH"], sref(1, 6) + struct.pack(">H", 3) + lst)
    reps = [resp(o["LAUNCH"]), resp(o["MEMSET"], status=16, msg=b"no buffer"),
            resp(o["SYNC"], struct.pack(">HHQ", 16, o["MEMSET"], 8))]
    yield "resp-batch", resp(o["BATCH"], struct.pack(">H", 3) +
                             b"".join(struct.pack(">I", len(m)) + m for m in reps))
    # The same-host ops.
    yield "req-node-info", frame(REQ, o["NODE_INFO"], b"")
    yield "req-net-info", frame(REQ, o["NET_INFO"], b"")
    yield "resp-net-info", resp(o["NET_INFO"], struct.pack(">BHH", 2, 5702, 5703))
    yield "req-pool-info", frame(REQ, o["POOL_INFO"], b"")
    yield "resp-pool-info", resp(o["POOL_INFO"], struct.pack(">HIHHH", 1, 0, 2, 1, 1))
    path = b"/var/lib/gpuleased/gpuleased.sock"
    yield "resp-node-info", resp(o["NODE_INFO"], struct.pack(">H", len(path)) + path + bytes(range(16)))
    yield "req-shm-attach", frame(REQ, o["SHM_ATTACH"], auth() + struct.pack(">Q", 64 << 20))
    yield "resp-shm-attach", resp(o["SHM_ATTACH"], struct.pack(">Q", 0x5E00000000000011))
    yield "req-shm-detach", frame(REQ, o["SHM_DETACH"], auth() + struct.pack(">Q", 0x5E00000000000011))
    yield "req-mem-write-shm", frame(REQ, o["MEM_WRITE_SHM"], sref(1, 11) +
                                     struct.pack(">QQQQQ", BUF1, 0, 0x5E00000000000011, 0, 1 << 20))
    yield "req-mem-read-shm", frame(REQ, o["MEM_READ_SHM"], sref(1, 12) +
                                    struct.pack(">QQQQQ", BUF1, 0, 0x5E00000000000011, 0, 1 << 20))
    yield "req-mem-read-arena", frame(REQ, o["MEM_READ_ARENA"], sref(1, 12) +
                                    struct.pack(">QQQQQ", BUF1, 0, 0x5E00000000000011, 0, 1 << 20))
    yield "bad-shm-attach-size-0", frame(REQ, o["SHM_ATTACH"], auth() + struct.pack(">Q", 0))
    yield "bad-session-id-0", frame(REQ, o["SESSION_CLOSE"], sref(0, 1))
    yield "bad-mem-write-short", frame(REQ, o["MEM_WRITE"], sref(1, 2) +
                                       struct.pack(">QQI", BUF1, 0, 16) + bytes(15))
    yield "bad-memset-value", frame(REQ, o["MEMSET"], sref(1, 4) +
                                    struct.pack(">QQBIQ", BUF2, 0, 1, 0x100, 8))
    yield "bad-launch-kind-3", frame(REQ, o["LAUNCH"], launch_body(count=4) + b"\x03" + bytes(16))
    # LAUNCH_EX: LAUNCH's body with flags and cluster after shared_mem_bytes.
    lb = launch_body()
    ex = lb[:100] + struct.pack(">B3I", 1, 2, 1, 1) + lb[100:]
    yield "req-launch-ex", frame(REQ, o["LAUNCH_EX"], ex)
    yield "bad-launch-ex-cluster", frame(REQ, o["LAUNCH_EX"],
                                         lb[:100] + struct.pack(">B3I", 0, 2, 0, 1) + lb[100:])
    one = lb[64:]
    yield "req-burst", frame(REQ, o["BURST"], sref(1, 8) + struct.pack(">H", 3) + one * 3)
    yield "bad-burst-count", frame(REQ, o["BURST"], sref(1, 8) + struct.pack(">H", 4) + one * 3)
    yield "req-event-record", frame(REQ, o["EVENT_RECORD"], sref(1, 9) + struct.pack(">H", 3))
    yield "req-event-elapsed", frame(REQ, o["EVENT_ELAPSED"], sref(1, 10) + struct.pack(">HH", 3, 4))
    yield "resp-event-elapsed", resp(o["EVENT_ELAPSED"], struct.pack(">Q", 123456))
    yield "req-graph-begin-while", frame(REQ, o["GRAPH_BEGIN"], sref(1, 11) + struct.pack(">BQQ", 1, BUF1, 8))
    yield "req-graph-end", frame(REQ, o["GRAPH_END"], sref(1, 12))
    yield "req-graph-launch", frame(REQ, o["GRAPH_LAUNCH"], sref(1, 13) + struct.pack(">Q", 0x6A01))
    yield "req-graph-set-args", frame(REQ, o["GRAPH_SET_ARGS"], sref(1, 14) +
                                      struct.pack(">QIH", 0x6A01, 3, 1) + launch_params([("buf", BUF1, 0)]))
    yield "resp-graph-end", resp(o["GRAPH_END"], struct.pack(">QII", 0x6A01, 100, 102))
    yield "bad-func-info-count", resp(o["FUNC_INFO"], func_info_result(sizes=(), count=257))
    yield "bad-module-load-cache-3", resp(o["MODULE_LOAD"], struct.pack(">QB", MOD, 3))
    # TENSORMAP_ENCODE: a 2D FLOAT32 tensor of 64 x 32 in BUF1, boxes of 16 x 8.
    yield "req-tensormap-encode", frame(REQ, o["TENSORMAP_ENCODE"], tmap_body())
    yield "resp-tensormap-encode", resp(o["TENSORMAP_ENCODE"], bytes(range(128)))
    yield "bad-tensormap-rank-6", frame(REQ, o["TENSORMAP_ENCODE"], tmap_body(rank=6))
    yield "bad-tensormap-unused-slot", frame(REQ, o["TENSORMAP_ENCODE"], tmap_body(rank=1))


def corpus():
    o = OPS
    sub = submit_body()
    yield "req-get-inventory", frame(REQ, o["GET_INVENTORY"], b"")
    yield "req-lease-alloc", frame(REQ, o["LEASE_ALLOC"],
                                   struct.pack(">IQIBIQ", 0xFFFFFFFF, 1 << 30, 300, 0, 0, 0))
    yield "req-lease-alloc-shared", frame(REQ, o["LEASE_ALLOC"],
                                          struct.pack(">IQIBIQ", 0xFFFFFFFF, 256 << 20, 60, 1, 0, 0))
    yield "req-lease-alloc-limits", frame(REQ, o["LEASE_ALLOC"],
                                          struct.pack(">IQIBIQ", 0, 1 << 30, 300, 2, 1 << 20, 8 << 20))
    yield "bad-lease-alloc-16-bytes", frame(REQ, o["LEASE_ALLOC"],
                                            struct.pack(">IQI", 0xFFFFFFFF, 1 << 30, 300))
    yield "bad-lease-class-4", frame(REQ, o["LEASE_ALLOC"],
                                     struct.pack(">IQIBIQ", 0xFFFFFFFF, 1 << 30, 300, 4, 0, 0))
    yield "req-lease-renew", frame(REQ, o["LEASE_RENEW"], auth() + struct.pack(">IB", 600, 0))
    yield "req-lease-renew-rotate", frame(REQ, o["LEASE_RENEW"], auth() + struct.pack(">IB", 600, 1))
    yield "bad-renew-flags-2", frame(REQ, o["LEASE_RENEW"], auth() + struct.pack(">IB", 600, 2))
    yield "bad-renew-no-flags", frame(REQ, o["LEASE_RENEW"], auth() + struct.pack(">I", 600))
    yield "req-lease-delegate", frame(REQ, o["LEASE_DELEGATE"], auth() + struct.pack(">II", 0x28, 600) +
                                      str8(b"team-b"))
    yield "req-lease-delegate-own", frame(REQ, o["LEASE_DELEGATE"], auth() + struct.pack(">II", 0xFF, 0) +
                                          str8(b""))
    yield "bad-delegate-rights-0", frame(REQ, o["LEASE_DELEGATE"], auth() + struct.pack(">II", 0, 600) +
                                         str8(b""))
    yield "bad-delegate-rights-0x100", frame(REQ, o["LEASE_DELEGATE"], auth() +
                                             struct.pack(">II", 0x100, 600) + str8(b""))
    yield "req-lease-revoke", frame(REQ, o["LEASE_REVOKE"], struct.pack(">Q", 7) + str8(b"compromised"))
    yield "req-authenticate", frame(REQ, o["AUTHENTICATE"], str8(b"tok-123456"))
    yield "req-admin-unfence", frame(REQ, o["ADMIN_UNFENCE"], struct.pack(">I", 1))
    yield "bad-admin-unfence-short", frame(REQ, o["ADMIN_UNFENCE"], struct.pack(">H", 1))
    yield "bad-authenticate-empty", frame(REQ, o["AUTHENTICATE"], str8(b""))
    yield "bad-lease-query-16-byte-secret", frame(REQ, o["LEASE_QUERY"], struct.pack(">Q", 7) +
                                                  bytes(range(0xA0, 0xB0)))
    yield "req-lease-query", frame(REQ, o["LEASE_QUERY"], auth())
    yield "req-lease-free", frame(REQ, o["LEASE_FREE"], auth())
    yield "req-gpu-submit-params", frame(REQ, o["GPU_SUBMIT"], sub)
    yield "req-gpu-submit-noparams", frame(REQ, o["GPU_SUBMIT"], submit_body(flags=0, params=[], inp=b""))
    yield "req-worker-init", frame(REQ, o["WORKER_INIT"],
                                   struct.pack(">IQQBIQ", 0, 1 << 30, 7, 0, 64 << 10, 1 << 20) +
                                   str8(b"GPU-f8797ab0-36ca-eda1-5eee-c2a666713a44"))
    yield "req-worker-init-shared", frame(REQ, o["WORKER_INIT"],
                                          struct.pack(">IQQBIQ", 0, 256 << 20, 8, 1, 64 << 10, 1 << 20) + str8(b""))
    yield "req-worker-release", frame(REQ, o["WORKER_RELEASE"], struct.pack(">Q", 8))
    yield "resp-worker-release", resp(o["WORKER_RELEASE"])
    yield "resp-worker-held", resp(o["WORKER_HELD"], struct.pack(">QQQ", 8, 33 << 20, 64 << 20))
    yield "bad-worker-held-short", resp(o["WORKER_HELD"], struct.pack(">QQ", 8, 33 << 20))
    yield "req-worker-warm", frame(REQ, o["WORKER_WARM"], struct.pack(">I", 0) + str8(b"GPU-1"))
    yield "req-worker-probe", frame(REQ, o["WORKER_PROBE"], b"")
    yield "resp-inventory-2gpus", resp(o["GET_INVENTORY"], struct.pack(">I", 3600) + str8(b"550.54.15") +
                                       struct.pack(">H", 2) + gpu_entry(0) + gpu_entry(1) + tenant_info())
    yield "resp-inventory-anonymous", resp(o["GET_INVENTORY"], struct.pack(">I", 300) + str8(b"") +
                                           struct.pack(">H", 0) + tenant_info(b"", 0))
    yield "bad-inventory-no-tenant", resp(o["GET_INVENTORY"], struct.pack(">I", 3600) + str8(b"550.54.15") +
                                          struct.pack(">H", 1) + gpu_entry(0))
    yield "resp-authenticate", resp(o["AUTHENTICATE"], str8(b"team-a"))
    yield "resp-lease-delegate", resp(o["LEASE_DELEGATE"], cap(1, 0x28, 1800000000, 0x1122334455667788,
                                                               bytes(range(0xC0, 0xD0))))
    yield "resp-lease-revoke", resp(o["LEASE_REVOKE"])
    yield "resp-admin-unfence", resp(o["ADMIN_UNFENCE"])
    yield "resp-lease-renew-rotated", resp(o["LEASE_RENEW"], lease_info(secret=cap(2)))
    yield "resp-error-quota", resp(o["LEASE_ALLOC"], status=18,
                                   msg=b"tenant team-a: lease quota 2, 2 leases live")
    yield "resp-error-unauthorized", resp(o["LEASE_FREE"], status=2,
                                          msg=b"LEASE_FREE needs the right 'free', which the token "
                                              b"for lease 7 lacks (it carries: submit,read)")
    yield "resp-lease-alloc", resp(o["LEASE_ALLOC"], lease_info())
    yield "resp-lease-query-shared", resp(o["LEASE_QUERY"], lease_info(secret=bytes(40), cls=1))
    yield "resp-lease-free", resp(o["LEASE_FREE"])
    yield "resp-gpu-submit", resp(o["GPU_SUBMIT"], struct.pack(">QI", 12345, 8) + bytes(range(8)))
    yield "resp-error-expired", resp(o["GPU_SUBMIT"], status=7, msg=b"lease 7 expired during the kernel")
    yield "resp-worker-probe", resp(o["WORKER_PROBE"], struct.pack(">H", 1) + str8(b"GPU-0") +
                                    str8(b"NVIDIA H100") + struct.pack(">BBIQ", 9, 0, 132, 85 << 30) +
                                    struct.pack(">IBBBB", 13000, 9, 0, 9, 5))
    yield "resp-worker-init", resp(o["WORKER_INIT"], struct.pack(">Q", 0x7F0000000000) + str8(b"NVIDIA H100"))
    lost = (struct.pack(">QHHQH", 0x55, 4, o["LAUNCH"], 9, 5) + b"fault" +
            struct.pack(">QHHQH", 0x66, 4, 0, 0, 0))
    yield "resp-worker-lost", resp(o["WORKER_LOST"], struct.pack(">H", 2) + lost,
                                   msg=b"CUDA_ERROR_ILLEGAL_ADDRESS")
    yield "bad-worker-lost-status-0", resp(o["WORKER_LOST"], struct.pack(">H", 1) +
                                           struct.pack(">QHHQH", 0x55, 0, 0, 0, 0))
    yield "bad-submit-truncated", frame(REQ, o["GPU_SUBMIT"], sub[:50], body_len=len(sub))
    yield "bad-version-2", frame(REQ, o["LEASE_QUERY"], auth(), version=2)
    yield "bad-kernel-name-0", frame(REQ, o["GPU_SUBMIT"], submit_body(name=b""))
    yield "bad-trailing-byte", frame(REQ, o["LEASE_FREE"], auth() + b"\x00")
    yield "bad-scalar-size-129", frame(REQ, o["GPU_SUBMIT"], submit_body(params=[("scalar", bytes(129))]))
    yield from session_corpus()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "tests", "fuzz-corpus", "wire")
    os.makedirs(out, exist_ok=True)
    for name, data in corpus():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print("wrote %d files to %s" % (len(list(corpus())), out))


if __name__ == "__main__":
    main()
