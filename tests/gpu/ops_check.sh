#!/usr/bin/env bash
# Operating a node, on a machine with an NVIDIA GPU against a build folder
# (tests/gpu/check.sh runs it; it runs alone too):
#   tests/gpu/ops_check.sh [BUILD_DIR]
# /metrics scraped during real ops on the GPU, its gauges checked against
# the inventory and its module and JIT cache counts; the configuration file;
# sd_notify and SIGHUP reloads; `gpulease top` against a daemon with a live
# lease and submits running.
set -uo pipefail
B=$(cd "${1:-build}" && pwd)
K=$B/kernels
W=$(mktemp -d /tmp/gl-opscheck-XXXXXX)
"$B/src/daemon/gpuleased" --listen 127.0.0.1:0 --state-dir "$W" --ready-file "$W/ready" \
  --max-ttl 120 --warm-workers 0 --metrics-listen 127.0.0.1:0 2> "$W/daemon.log" &
DAEMON=$!
trap 'kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null; rm -rf "$W"' EXIT
for _ in $(seq 1 300); do [ -s "$W/ready" ] && break; sleep 0.1; done
read -r PORT FP < "$W/ready" || { cat "$W/daemon.log"; exit 1; }
ADDR=127.0.0.1:$PORT
cli() { "$B/src/cli/gpulease" --addr "$ADDR" --pin-sha256 "$FP" "$@"; }
PASS=0 FAIL=0
result() { if [ "$2" = 0 ]; then PASS=$((PASS+1)); echo "PASS $1"; else FAIL=$((FAIL+1)); echo "FAIL $1"; fi; }
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
export GL_TEST_DEVICE=cuda GL_TEST_BIN_DIR=$B GL_TEST_PTX_DIR=$B/emu-kernels/sm_90

echo "== metrics, configuration and reload on the GPU (tests/e2e/test_e2e_metrics.c, test_e2e_config.c, test_e2e_reload.c)"
"$B/tests/test_e2e_metrics" 2>&1 | grep -v "^\[ *RUN " | tail -30
result "Prometheus /metrics (leases, submits, latency, VRAM, module and JIT caches, NVML memory, utilisation, temperature; gauges = inventory) and /healthz" ${PIPESTATUS[0]}
"$B/tests/test_e2e_config" 2>&1 | grep -v "^\[ *RUN " | tail -4
result "configuration file, --check-config, precedence of flags" ${PIPESTATUS[0]}
"$B/tests/test_e2e_reload" 2>&1 | grep -v "^\[ *RUN \|^STATUS\|^MONOTONIC" | tail -8
result "sd_notify READY/RELOADING/STOPPING; SIGHUP reloads certificate, max-ttl, tenants, audit log; leases kept" ${PIPESTATUS[0]}
echo "== gpulease top against this check's daemon, a 256 MiB lease live"
MPORT=$(sed -n 's|.*metrics: http://127.0.0.1:\([0-9]*\)/metrics.*|\1|p' "$W/daemon.log" | head -1)
cli --json lease alloc --vram 256M --ttl 30 > "$W/top-lease.json"
( for _ in $(seq 1 20); do cli submit --binary "$K/iota.ptx" --kernel iota --block 256 \
    --output-size 1024 --format raw > /dev/null; done ) &
SUBMITS=$!
cli top --once --interval 1.5 --metrics "http://127.0.0.1:$MPORT/metrics"
cli --json top --once --interval 1.5 --metrics "http://127.0.0.1:$MPORT/metrics" > "$W/top.json"
wait $SUBMITS
python3 - "$W/top.json" <<'PY'
import json,sys
t=json.load(open(sys.argv[1])); g=t["gpus"][0]
print("top --json: GPU 0 %s, allocated %d MiB, leases %d, temperature %s C, metrics ok %s"
      % (g["name"], g["allocated_vram_bytes"]>>20, g["leases"], g["temperature_c"], t["metrics"]["ok"]))
sys.exit(0 if t["metrics"]["ok"] and g["leases"]>=1 and g["allocated_vram_bytes"]>=256<<20
         and not g["emulated"] and g["temperature_c"] else 1)
PY
result "gpulease top: the GPU's row (a live 256 MiB lease, NVML temperature) and rates from /metrics" $?
cli lease free "$(field lease_id < "$W/top-lease.json")" --secret "$(field secret < "$W/top-lease.json")"

echo "operations check: $PASS passed, $FAIL failed"
[ $FAIL = 0 ]
