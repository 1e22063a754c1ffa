#!/usr/bin/env bash
# GPU benchmarks, run on a machine with an NVIDIA GPU against a build folder:
#   tests/gpu/bench.sh [BUILD_DIR]
# (tests/gpu/check.sh runs it at its end unless GL_CHECK_NO_BENCH=1.) The
# session and GPU_SUBMIT benchmarks against the local CUDA driver, bursts,
# QUIC transfers; the same session and lease benchmarks with tenants
# (--auth token) in the same run; the lease benchmark with and without warm
# workers (with them: 32 clients cycling leases of each class, the most
# concurrent 256 MiB leases of each); with GL_BENCH_LOAD=1 the load table
# (tests/gpu/load_check.sh); the emulator's benchmark. Exits
# non-zero when a benchmark's own checks fail.
set -uo pipefail
B=$(cd "${1:-build}" && pwd)
K=$B/kernels
W=$(mktemp -d /tmp/gl-gpubench-XXXXXX)
"$B/src/daemon/gpuleased" --listen 127.0.0.1:0 --state-dir "$W" --ready-file "$W/ready" \
  --max-ttl 120 --warm-workers 0 2> "$W/daemon.log" &
DAEMON=$!
trap 'kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null; rm -rf "$W"' EXIT
for _ in $(seq 1 300); do [ -s "$W/ready" ] && break; sleep 0.1; done
read -r PORT FP < "$W/ready" || { cat "$W/daemon.log"; exit 1; }
ADDR=127.0.0.1:$PORT
PASS=0 FAIL=0
result() { if [ "$2" = 0 ]; then PASS=$((PASS+1)); echo "PASS $1"; else FAIL=$((FAIL+1)); echo "FAIL $1"; fi; }

echo "== benchmark"
"$B/bench/gl_bench_burst" --addr "$ADDR" --pin-sha256 "$FP" --n 1000 --rounds 30
"$B/bench/gl_bench_session" --addr "$ADDR" --pin-sha256 "$FP" --mib 256 --launches 10000 --local-mib 1024
"$B/bench/gl_bench_quic" --runs 5 --mib 64,256
"$B/bench/gl_bench_submit" --addr "$ADDR" --pin-sha256 "$FP" --ptx "$K/iota.ptx" --iters 100
echo "== the lease path with tenants: --auth token, the same benchmarks, same run"
TW=$(mktemp -d /tmp/gl-tenants-XXXXXX)
TOKEN=bench-0123456789abcdef0123456789abcdef
printf '[tenant bench]\ntoken = %s\n' "$TOKEN" > "$TW/tenants.ini"
"$B/src/daemon/gpuleased" --listen 127.0.0.1:0 --state-dir "$TW" --ready-file "$TW/ready" \
  --warm-workers 0 --auth token --tenants "$TW/tenants.ini" --audit-log "$TW/audit.jsonl" \
  2> "$TW/daemon.log" &
TD=$!
for _ in $(seq 1 300); do [ -s "$TW/ready" ] && break; sleep 0.1; done
read -r TPORT TFP < "$TW/ready"
"$B/bench/gl_bench_session" --addr 127.0.0.1:$TPORT --pin-sha256 "$TFP" --token "$TOKEN" \
  --mib 256 --launches 10000 --local-mib 1024
result "session benchmark under --auth token" $?
"$B/bench/gl_bench_lease" --addr 127.0.0.1:$TPORT --pin-sha256 "$TFP" --token "$TOKEN" --iters 20 \
  --gap-ms 600 --label "cold, --auth token"
result "lease benchmark under --auth token" $?
echo "audit log: $(wc -l < "$TW/audit.jsonl") lines, e.g.:"; head -2 "$TW/audit.jsonl"
kill $TD; wait $TD 2>/dev/null; rm -rf "$TW"
echo "== leases: cold (--warm-workers 0) and warm (--warm-workers 2), 1 GiB, same run"
for warm in 0 2; do
  LW=$(mktemp -d /tmp/gl-lease-XXXXXX)
  "$B/src/daemon/gpuleased" --listen 127.0.0.1:0 --state-dir "$LW" --ready-file "$LW/ready" \
    --warm-workers $warm 2> "$LW/daemon.log" &
  LD=$!
  for _ in $(seq 1 300); do [ -s "$LW/ready" ] && break; sleep 0.1; done
  read -r LPORT LFP < "$LW/ready"
  grep -o "GPU 0: a CUDA context takes.*" "$LW/daemon.log" | tail -1
  if [ $warm != 0 ]; then
    "$B/src/cli/gpulease" --addr 127.0.0.1:$LPORT --pin-sha256 "$LFP" inventory | tee "$LW/inv.txt" | grep "warm workers"
    grep -q "warm workers: $warm ready" "$LW/inv.txt"; result "inventory shows the warm pool ($warm ready)" $?
  fi
  MORE=()
  [ $warm != 0 ] && MORE=(--classes isolated,shared --clients 32 --cycle-s 5 --max-mib 256 --max-leases 400)
  "$B/bench/gl_bench_lease" --addr 127.0.0.1:$LPORT --pin-sha256 "$LFP" --iters 20 \
    --gap-ms 600 --label "$([ $warm = 0 ] && echo cold || echo warm)" "${MORE[@]}"
  result "lease benchmark with --warm-workers $warm (every call's output checked)" $?
  kill $LD; wait $LD 2>/dev/null; rm -rf "$LW"
done
if [ -n "${GL_BENCH_LOAD:-}" ]; then
  # Issue 34's load table (4 to 5 minutes more; on its own: load_check.sh).
  "$(dirname "$0")/load_check.sh" "$B"
  result "load benchmark (tests/gpu/load_check.sh)" $?
fi
echo "== emulator benchmark (host CPU of the GPU node)"
"$B/bench/gl_bench_emu" "$B/emu-kernels/sm_75" 512 5
echo
echo "GPU benchmarks: $PASS passed, $FAIL failed"
[ $FAIL = 0 ]
