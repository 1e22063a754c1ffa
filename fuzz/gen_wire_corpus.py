#!/usr/bin/env python3
"""gen_wire_corpus.py - writes the seed corpus of fuzz_wire.

Usage: fuzz/gen_wire_corpus.py [OUTDIR]   (default tests/fuzz-corpus/wire)

The frames are built here with Python's struct module straight from the
byte layout in docs/protocol.md, independently of the C encoder, so the
corpus also cross-checks the codec: test_wire asserts the C side's view of
the same layout. Files named req-* / resp-* are valid messages, bad-* are
refused by the decoder. Inputs a fuzzer crashed on are added by hand as
crash-<sha1> and are not touched by this script.
"""
import os
import struct
import sys

REQ, RESP = 0, 1
OPS = dict(GET_INVENTORY=0x0001, LEASE_ALLOC=0x0101, LEASE_RENEW=0x0102,
           LEASE_QUERY=0x0103, LEASE_FREE=0x0104, GPU_SUBMIT=0x0201,
           WORKER_INIT=0x7F01, WORKER_PROBE=0x7F02)
SECRET = bytes(range(0xA0, 0xB0))


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


def lease_info(secret=SECRET):
    return struct.pack(">Q", 7) + secret + struct.pack(">IQIQQ", 0, 1 << 30, 300, 299500, 3)


def gpu_entry(i):
    return (struct.pack(">I", i) + str8(b"GPU-%08x-0000-0000-0000-000000000000" % i) +
            str8(b"NVIDIA H100 80GB HBM3") + struct.pack(">BBI", 9, 0, 132) +
            struct.pack(">QQQII", 85 << 30, 80 << 30, 1 << 30, 1, 0))


def resp(op, result=b"", status=0, msg=b""):
    return frame(RESP, op, struct.pack(">H", len(msg)) + msg + result, status=status)


def corpus():
    o = OPS
    sub = submit_body()
    yield "req-get-inventory", frame(REQ, o["GET_INVENTORY"], b"")
    yield "req-lease-alloc", frame(REQ, o["LEASE_ALLOC"], struct.pack(">IQI", 0xFFFFFFFF, 1 << 30, 300))
    yield "req-lease-renew", frame(REQ, o["LEASE_RENEW"], auth() + struct.pack(">I", 600))
    yield "req-lease-query", frame(REQ, o["LEASE_QUERY"], auth())
    yield "req-lease-free", frame(REQ, o["LEASE_FREE"], auth())
    yield "req-gpu-submit-params", frame(REQ, o["GPU_SUBMIT"], sub)
    yield "req-gpu-submit-noparams", frame(REQ, o["GPU_SUBMIT"], submit_body(flags=0, params=[], inp=b""))
    yield "req-worker-init", frame(REQ, o["WORKER_INIT"], struct.pack(">IQ", 0, 1 << 30))
    yield "req-worker-probe", frame(REQ, o["WORKER_PROBE"], b"")
    yield "resp-inventory-2gpus", resp(o["GET_INVENTORY"], struct.pack(">I", 3600) + str8(b"550.54.15") +
                                       struct.pack(">H", 2) + gpu_entry(0) + gpu_entry(1))
    yield "resp-lease-alloc", resp(o["LEASE_ALLOC"], lease_info())
    yield "resp-lease-free", resp(o["LEASE_FREE"])
    yield "resp-gpu-submit", resp(o["GPU_SUBMIT"], struct.pack(">QI", 12345, 8) + bytes(range(8)))
    yield "resp-error-expired", resp(o["GPU_SUBMIT"], status=7, msg=b"lease 7 expired during the kernel")
    yield "resp-worker-probe", resp(o["WORKER_PROBE"], struct.pack(">H", 1) + str8(b"GPU-0") +
                                    str8(b"NVIDIA H100") + struct.pack(">BBIQ", 9, 0, 132, 85 << 30))
    yield "resp-worker-init", resp(o["WORKER_INIT"], struct.pack(">Q", 0x7F0000000000) + str8(b"NVIDIA H100"))
    yield "bad-submit-truncated", frame(REQ, o["GPU_SUBMIT"], sub[:50], body_len=len(sub))
    yield "bad-version-2", frame(REQ, o["LEASE_QUERY"], auth(), version=2)
    yield "bad-kernel-name-0", frame(REQ, o["GPU_SUBMIT"], submit_body(name=b""))
    yield "bad-trailing-byte", frame(REQ, o["LEASE_FREE"], auth() + b"\x00")
    yield "bad-scalar-size-65", frame(REQ, o["GPU_SUBMIT"], submit_body(params=[("scalar", bytes(65))]))


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
