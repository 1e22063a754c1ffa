"""quickstart.py - c = a + b on a leased GPU, from Python.

    python3 quickstart.py HOST:PORT PIN_SHA256 vector_add.ptx [N]

HOST:PORT and PIN_SHA256 are what gpuleased prints at start-up (its ready
file holds "PORT FINGERPRINT"); vector_add.ptx is built from
examples/kernels/vector_add.cu (build/kernels/vector_add.ptx). On a node
without a GPU, `gpuleased --device emu` runs the kernel on the CPU.
"""

import pathlib
import sys

import numpy as np

import gpulease


def main(argv: list) -> int:
    if len(argv) < 4:
        print(f"usage: {argv[0]} HOST:PORT PIN_SHA256 vector_add.ptx [N]", file=sys.stderr)
        return 2
    addr, pin, ptx = argv[1], argv[2], pathlib.Path(argv[3])
    n = int(argv[4]) if len(argv) > 4 else 1_000_000
    a = np.arange(n, dtype=np.float32) * 0.5
    b = np.arange(n, 0, -1, dtype=np.float32)

    with gpulease.connect(addr, pin_sha256=pin) as client:
        gpu = client.inventory().gpus[0]
        print(f"node {addr}: GPU 0 is {gpu.name}, {gpu.free_vram_bytes >> 20} MiB free")
        # Three buffers of n floats, a bit of room; freed when the block ends.
        with client.lease(3 * a.nbytes + (1 << 20), ttl=60) as lease:
            # a and b are copied in; out() is read back; n takes the type of
            # the kernel's PTX parameter (.u32).
            c = lease.call(ptx, "vector_add", grid=(n + 255) // 256, block=256,
                           args=[a, b, gpulease.out(n, np.float32), n])
    wrong = int(np.count_nonzero(c != a + b))
    print(f"vector_add: {n} elements on lease {lease.id}, {wrong} wrong")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
