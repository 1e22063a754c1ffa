"""pool_map.py - one kernel over 1,000 chunks on many gpuleased nodes, from
Python: what `gpulease pool map` does, through gpulease.Pool.

    python3 pool_map.py chunk_mix.ptx [NODE ...] [--words N] [--chunk-words W]
                        [--class shared] [--max-leases-per-node K] [--progress]

NODE is HOST:PORT=PIN_SHA256 (what gpuleased prints at start-up; its ready
file holds "PORT FINGERPRINT"), or HOST:PORT verified with $GPULEASE_PIN or
$GPULEASE_CA_FILE. Without NODEs the nodes are $GPULEASE_NODES
(comma-separated, the same forms), or --nodes-file FILE ("HOST:PORT
[PIN-SHA256]" a line, as the CLI's). chunk_mix.ptx is built from
examples/kernels/chunk_mix.cu (build/kernels/chunk_mix.ptx):

    out[i] = in[i] * 2654435761 + index   for i < bytes / 4, 0 after

The input is N random 32-bit words (default 249,999: 1,000 chunks of 250
words, the last one short); the result is checked against numpy.
"""

import argparse
import os
import pathlib
import sys
from typing import List, Tuple, Union

import numpy as np

import gpulease


def parse_nodes(items: List[str]) -> List[Union[str, Tuple[str, str]]]:
    """HOST:PORT=PIN -> (HOST:PORT, PIN); HOST:PORT stays as it is."""
    nodes: List[Union[str, Tuple[str, str]]] = []
    for item in items:
        addr, _, pin = item.strip().partition("=")
        if addr:
            nodes.append((addr, pin) if pin else addr)
    return nodes


def reference(x: np.ndarray, cw: int) -> np.ndarray:
    nch = -(-x.size // cw)
    ref = np.zeros(nch * cw, dtype=np.uint32)
    for c in range(nch):
        s = x[c * cw:(c + 1) * cw].astype(np.uint64)
        ref[c * cw:c * cw + s.size] = ((s * 2654435761 + c) & 0xFFFFFFFF).astype(np.uint32)
    return ref


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog=pathlib.Path(argv[0]).name,
                                 description="chunk_mix over a pool of gpuleased nodes")
    ap.add_argument("ptx", type=pathlib.Path, help="chunk_mix.ptx")
    ap.add_argument("nodes", nargs="*", help="HOST:PORT=PIN_SHA256 or HOST:PORT")
    ap.add_argument("--nodes-file", help='a file of "HOST:PORT [PIN-SHA256]" lines')
    ap.add_argument("--words", type=int, default=249_999, help="input words (default 249999)")
    ap.add_argument("--chunk-words", type=int, default=250, help="words a chunk (default 250)")
    ap.add_argument("--class", dest="lease_class", default="isolated",
                    choices=("isolated", "shared"))
    ap.add_argument("--max-leases-per-node", type=int, default=4)
    ap.add_argument("--progress", action="store_true", help="a tqdm bar")
    args = ap.parse_args(argv[1:])  # exits 2 with "usage: ..." on a bad command line

    nodes = parse_nodes(args.nodes or os.environ.get("GPULEASE_NODES", "").split(","))
    if not nodes and not args.nodes_file:
        ap.error("no nodes: give NODEs, $GPULEASE_NODES or --nodes-file")
    source = {"nodes_file": args.nodes_file} if args.nodes_file and not args.nodes \
        else {"nodes": nodes}

    cw = args.chunk_words
    x = np.random.default_rng(7).integers(0, 2**32, size=args.words, dtype=np.uint64)
    x = x.astype(np.uint32)
    with gpulease.Pool(**source, pin_sha256=os.environ.get("GPULEASE_PIN"),
                       ca_file=os.environ.get("GPULEASE_CA_FILE"),
                       lease_class=args.lease_class,
                       max_leases_per_node=args.max_leases_per_node) as pool:
        try:
            # One chunk: cw words in, cw words out (uint32, as the input);
            # the chunk's slices, size and index fill the kernel's
            # parameters; cw itself is a plain int, a .u32 in the PTX.
            y = pool.map(args.ptx, "chunk_mix", x, cw, grid=-(-cw // 256), block=256,
                         args=[gpulease.IN, gpulease.OUT, gpulease.CHUNK_BYTES,
                               gpulease.CHUNK_INDEX, cw],
                         progress=args.progress)
        except gpulease.GpuleaseError as e:
            print(f"pool map failed: {e}", file=sys.stderr)
            y = None
        s = pool.last_stats

    out = sys.stdout if y is not None else sys.stderr
    if s is not None:
        print(f"pool map: {s.done} of {s.chunks} chunks in {s.seconds:.3f} s "
              f"({s.chunks_per_s:.0f} chunks/s), chunk p50 {s.chunk_p50_ms:.3f} ms, "
              f"p99 {s.chunk_p99_ms:.3f} ms, {s.retries} retries", file=out)
        print(f"{'NODE':<24} {'CHUNKS':>8} {'RETRIES':>8} {'FAILURES':>9} {'LEASES':>7} "
              f"{'BYTES-IN':>12} {'BYTES-OUT':>12} {'SECONDS':>9}", file=out)
        for n in s.nodes:
            print(f"{n.addr:<24} {n.chunks:>8} {n.retries:>8} {n.failures:>9} {n.leases:>7} "
                  f"{n.bytes_in:>12} {n.bytes_out:>12} {n.seconds:>9.3f}", file=out)
    if y is None:
        return 1
    wrong = int(np.count_nonzero(y != reference(x, cw)))
    print(f"chunk_mix: {x.size} words in {s.chunks if s else '?'} chunks, {wrong} wrong")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
