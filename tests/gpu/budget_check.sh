#!/usr/bin/env bash
# The GPU check of device memory beyond a lease's region (docs/security.md),
# run by tests/gpu/check.sh against a build folder on a GPU node:
#   tests/gpu/budget_check.sh BUILD_DIR
# tests/e2e/test_e2e_held.c on the GPU (a kernel of 64 KiB of local memory
# a thread refused on a 1 MiB lease and charged on a 24 GiB one, a 1 GiB
# module, a heap; NVML's used VRAM held to the leased figure plus the
# contexts at each step), then six modules of 1 GiB of globals each on a
# 1 MiB lease: each refused, and NVML's used VRAM stays within the lease,
# its context and 64 MiB of slack.
set -uo pipefail
B=$(cd "${1:-build}" && pwd)
W=$(mktemp -d /tmp/gl-budget-XXXXXX)
FAIL=0
result() { if [ "$2" = 0 ]; then echo "PASS $1"; else FAIL=1; echo "FAIL $1"; fi; }
used_mib() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0; }

GL_TEST_DEVICE=cuda GL_TEST_BIN_DIR=$B "$B/tests/test_e2e_held" 2>&1 | grep -v "^\[ *RUN "
result "local memory refused on 1 MiB and charged on 24 GiB, a 1 GiB module, a heap: leased figure and NVML agree" ${PIPESTATUS[0]}

"$B/src/daemon/gpuleased" --listen 127.0.0.1:0 --state-dir "$W" --ready-file "$W/ready" \
  --max-ttl 120 --warm-workers 0 2> "$W/daemon.log" &
DAEMON=$!
trap 'kill $DAEMON 2>/dev/null; wait $DAEMON 2>/dev/null; rm -rf "$W"' EXIT
for _ in $(seq 1 300); do [ -s "$W/ready" ] && break; sleep 0.1; done
read -r PORT FP < "$W/ready" || { cat "$W/daemon.log"; exit 1; }
cli() { "$B/src/cli/gpulease" --addr "127.0.0.1:$PORT" --pin-sha256 "$FP" "$@"; }
mk() {
  printf '.version 8.0\n.target sm_90\n.address_size 64\n.visible .global .align 4 .b8 g[%s];\n.visible .entry k(.param .u64 p)\n{\n.reg .b64 %%rd<4>;\n.reg .b32 %%r<2>;\nld.param.u64 %%rd1, [p];\ncvta.to.global.u64 %%rd2, %%rd1;\nmov.u64 %%rd3, g;\nld.global.u32 %%r1, [%%rd3];\nst.global.u32 [%%rd2], %%r1;\nret;\n}\n' "$1" > "$2"
}
BASE=$(used_mib)
cli --json lease alloc --vram 1M --ttl 60 > "$W/l.json" || FAIL=1
LID=$(python3 -c "import json; print(json.load(open('$W/l.json'))['lease_id'])")
LSEC=$(python3 -c "import json; print(json.load(open('$W/l.json'))['secret'])")
mk 524288 "$W/small.ptx"
cli submit --lease "$LID" --secret "$LSEC" --binary "$W/small.ptx" --kernel k --block 1 \
  --output-size 4 --format raw > /dev/null
result "a module of 512 KiB of globals runs on a 1 MiB lease" $?
CTX=$(( $(used_mib) - BASE ))
echo "NVML used: $BASE MiB before, +$CTX MiB with the lease and its context"
REFUSED=0 MAXUSED=0
for i in 1 2 3 4 5 6; do
  mk $((1073741824 + i * 4)) "$W/big$i.ptx"
  cli submit --lease "$LID" --secret "$LSEC" --binary "$W/big$i.ptx" --kernel k --block 1 \
    --output-size 4 --format raw > /dev/null 2> "$W/big$i.err"
  grep -q CAPACITY_EXCEEDED "$W/big$i.err" && REFUSED=$((REFUSED + 1))
  u=$(used_mib); [ "$u" -gt "$MAXUSED" ] && MAXUSED=$u
done
head -c 400 "$W/big1.err"; echo
echo "modules of 1 GiB refused: $REFUSED of 6; NVML used at most $MAXUSED MiB (lease and context: $((BASE + CTX)) MiB)"
[ "$REFUSED" = 6 ] && [ "$MAXUSED" -le $((BASE + CTX + 64)) ]
result "six 1 GiB modules on a 1 MiB lease: each refused, NVML's used VRAM never past the lease and its context" $?
cli lease free "$LID" --secret "$LSEC" > /dev/null
exit $FAIL
