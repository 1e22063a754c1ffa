#!/usr/bin/env bash
# Before and after in one run: the session, GPU_SUBMIT and warm-lease
# benchmarks of two builds (A: the baseline, B: the change), interleaved
# A B A B on one GPU so that drift hits both, each against the local CUDA
# driver measured in the same program:
#   tests/gpu/bench_ab.sh A_DIR B_DIR [ROUNDS]
# A_DIR and B_DIR are build folders (or scripts/carry.sh copies). Prints
# each program's own table; compare the medians it prints.
set -uo pipefail
A=$(cd "$1" && pwd)
B=$(cd "$2" && pwd)
ROUNDS=${3:-2}

daemon() { # BUILD WARM -> sets DPID, DADDR, DFP, DDIR
  DDIR=$(mktemp -d /tmp/gl-ab-XXXXXX)
  "$1/src/daemon/gpuleased" --listen 127.0.0.1:0 --state-dir "$DDIR" --ready-file "$DDIR/ready" \
    --max-ttl 120 --warm-workers "$2" 2> "$DDIR/daemon.log" &
  DPID=$!
  for _ in $(seq 1 300); do [ -s "$DDIR/ready" ] && break; sleep 0.1; done
  read -r port DFP < "$DDIR/ready" || { cat "$DDIR/daemon.log"; return 1; }
  DADDR=127.0.0.1:$port
}
stop() { kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; rm -rf "$DDIR"; }

one() { # LABEL BUILD
  echo "=== $1 ($2)"
  daemon "$2" 0 || return 1
  "$2/bench/gl_bench_session" --addr "$DADDR" --pin-sha256 "$DFP" --mib 1024 --launches 10000 \
    --local-mib 1024
  "$2/bench/gl_bench_submit" --addr "$DADDR" --pin-sha256 "$DFP" --ptx "$2/kernels/iota.ptx" --iters 200
  stop
  daemon "$2" 2 || return 1
  "$2/bench/gl_bench_lease" --addr "$DADDR" --pin-sha256 "$DFP" --iters 30 --gap-ms 300 --label "warm $1"
  stop
}

for r in $(seq 1 "$ROUNDS"); do
  one "A round $r" "$A"
  one "B round $r" "$B"
done
