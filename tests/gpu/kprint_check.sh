#!/usr/bin/env bash
# Kernel output (printf, assert) on a real GPU, from a build folder carried
# to a machine with an NVIDIA GPU (sm_90: H100/H200); builds nothing:
#   tests/gpu/kprint_check.sh BUILD_DIR
# Kernels: tests/emu/kprint/kprint.cu, compiled here with
#   nvcc --cubin -arch=sm_90 -o kprint_sm90.cubin kprint.cu
#   nvcc --ptx -arch=sm_90 -o kprint_sm90.ptx kprint.cu
# Starts gpuleased on the GPU and checks, with PASS/FAIL lines: a kernel's
# printf text reaches the client's stderr as "kernel: " lines (cubin; PTX
# too, when the driver takes PTX ISA 9.0); it is absent from the daemon's
# log; the 64 KiB bound and its mark; a session's text comes with its
# sync; a shared lease's output is discarded and said so; a failed assert
# is LAUNCH_FAILED naming CUDA_ERROR_ASSERT with CUDA's assertion text.
# On FAIL it prints what it saw: the client's stderr and the daemon's log.
# A dry run without a GPU (the script's own logic, on the emulated device):
#   KPRINT_DAEMON_ARGS="--device emu --emu-vram 64M" KPRINT_IMAGE=kprint_sm90.ptx \
#     tests/gpu/kprint_check.sh BUILD_DIR
set -uo pipefail
B=$(cd "${1:?BUILD_DIR}" && pwd)
S=$(cd "$(dirname "$0")/../.." && pwd)
K=$S/tests/emu/kprint
IMG=$K/${KPRINT_IMAGE:-kprint_sm90.cubin}
W=$(mktemp -d /tmp/gl-kprint-gpu-XXXXXX)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; [ -n "$pid" ] && wait $pid 2>/dev/null; rm -rf "$W"' EXIT
PASS=0 FAIL=0
result() { # result NAME RC [FILES TO SHOW ON FAIL]
  local n=$1 rc=$2; shift 2
  if [ "$rc" = 0 ]; then PASS=$((PASS+1)); echo "PASS $n"
  else FAIL=$((FAIL+1)); echo "FAIL $n"; for f in "$@"; do echo "--- $f"; tail -40 "$f"; done; fi
}
"$B/src/daemon/gpuleased" --listen 127.0.0.1:0 --state-dir "$W/state" --ready-file "$W/ready" \
  --warm-workers 0 --log-level debug ${KPRINT_DAEMON_ARGS:-} 2> "$W/daemon.log" &
pid=$!
for _ in $(seq 1 300); do [ -s "$W/ready" ] && break; sleep 0.1; done
[ -s "$W/ready" ] || { echo "FAIL daemon did not start"; cat "$W/daemon.log"; exit 1; }
read -r P F < "$W/ready"
cli() { "$B/src/cli/gpulease" --addr 127.0.0.1:$P --pin-sha256 "$F" "$@"; }
cli inventory | head -5
alloc() { # alloc PREFIX ARGS...: ${PREFIX}_id, ${PREFIX}_secret
  local p=$1; shift
  cli --json lease alloc --ttl 120 "$@" > "$W/alloc.json" 2> "$W/alloc.err" || { cat "$W/alloc.err"; return 1; }
  eval "${p}_id=$(sed -n 's/.*"lease_id": \([0-9]*\).*/\1/p' "$W/alloc.json")"
  eval "${p}_secret=$(sed -n 's/.*"secret": "\([0-9a-f]*\)".*/\1/p' "$W/alloc.json")"
}

# 1. printf from a cubin: six lines, each once (threads may print in any order on a GPU)
cli submit --binary "$IMG" --kernel hello --grid 2 --block 3 --arg ptr:0 \
  --output-size 24 --format i32 > "$W/h.out" 2> "$W/h.err"
rc=$?
for b in 0 1; do for t in 0 1 2; do echo "kernel: hello from thread $t of block $b"; done; done | sort > "$W/want"
grep '^kernel: ' "$W/h.err" | sort | diff - "$W/want" > /dev/null
r=$?; [ $rc = 0 ] && [ $r = 0 ]
result "printf text reaches the client ($(basename "$IMG"), 6 'kernel: ' lines)" $? "$W/h.err" "$W/daemon.log"
grep -q '^\[    0\] *2 *2 *2 *2 *2 *2$' "$W/h.out"
result "printf returns the argument count (2 per thread)" $? "$W/h.out"

# 2. the same from PTX, when the driver's JIT takes ISA 9.0 (else SKIP)
cli submit --binary "$K/kprint_sm90.ptx" --kernel hello --arg ptr:0 --output-size 4 > "$W/p.out" 2> "$W/p.err"
if grep -q 'LOAD_FAILED' "$W/p.err"; then echo "SKIP PTX: $(head -c 200 "$W/p.err")"
else grep -q '^kernel: hello from thread 0 of block 0$' "$W/p.err"
  result "printf text reaches the client (PTX)" $? "$W/p.err"; fi

# 3. the bound: 5000 lines of 16 bytes; 64 KiB kept, the rest counted
alloc big --vram 1M --printf-fifo 4194304
cli submit --lease "$big_id" --secret "$big_secret" --binary "$IMG" --kernel lines \
  --arg i32:5000 > "$W/l.out" 2> "$W/l.err"
rc=$?
n=$(grep -c '^kernel: line ' "$W/l.err")
[ $rc = 0 ] && [ $((n * 16)) -le 65536 ] && [ $((n * 16)) -gt 65000 ] &&
  grep -q "^kernel: \[$((5000 * 16 - 65536)) bytes of kernel output dropped" "$W/l.err"
result "64 KiB bound, truncation marked ($n lines kept)" $? "$W/l.err"

# 4. a session: the text comes with the launch's wait or the sync
alloc se --vram 1M
L="--lease $se_id --secret $se_secret"
cli session open $L > "$W/so" 2>&1; sid=$(awk '{print $1; exit}' "$W/so")
cli module load --session "$sid" --binary "$IMG" $L > "$W/mo" 2>&1; mod=$(awk '{print $1; exit}' "$W/mo")
cli launch --session "$sid" --module "$mod" --kernel lines --arg i32:3 $L > /dev/null 2> "$W/s1.err"
cli session sync "$sid" $L > /dev/null 2> "$W/s2.err"
cat "$W/s1.err" "$W/s2.err" > "$W/s.err"
[ "$(grep -c '^kernel: line 000000[012] ..$' "$W/s.err")" = 3 ]
result "session: 3 lines, once" $? "$W/so" "$W/mo" "$W/s.err"

# 5. a shared lease: discarded, and said so
if alloc sh --vram 1M --class shared; then
  cli submit --lease "$sh_id" --secret "$sh_secret" --binary "$IMG" --kernel hello \
    --arg ptr:0 --output-size 4 > /dev/null 2> "$W/sh.err"
  rc=$?
  [ $rc = 0 ] && grep -q 'not captured on a lease of class shared' "$W/sh.err" && ! grep -q 'hello from' "$W/sh.err"
  result "shared lease: output discarded, said so" $? "$W/sh.err"
else echo "SKIP shared lease: the daemon gave none"; fi

# 6. assert: LAUNCH_FAILED, CUDA_ERROR_ASSERT, the assertion text (thread 3 of block 1 fails)
head -c 64 /dev/zero > "$W/zeros"
printf '\001\000\000\000' | dd of="$W/zeros" bs=1 seek=28 conv=notrunc 2> /dev/null
line=$(grep -n '^  assert(p\[' "$K/kprint.cu" | cut -d: -f1)
cli submit --binary "$IMG" --kernel check --grid 2 --block 4 --arg ptr:0 \
  --input "$W/zeros" > /dev/null 2> "$W/a.err"
rc=$?
[ $rc = 1 ] && grep -q 'LAUNCH_FAILED' "$W/a.err" && grep -q 'CUDA_ERROR_ASSERT' "$W/a.err"
result "assert: LAUNCH_FAILED naming CUDA_ERROR_ASSERT" $? "$W/a.err" "$W/daemon.log"
grep -qF "kprint.cu:$line: void check(const int *): block: [1,0,0], thread: [3,0,0] Assertion \`p[blockIdx.x * blockDim.x + threadIdx.x] == 0\` failed." "$W/a.err"
result "assert: the message carries CUDA's assertion text" $? "$W/a.err" "$W/daemon.log"

# 7. none of the printf text in the daemon's log (debug level)
! grep -q 'hello from thread\|line 0000000\|checking [0-9]' "$W/daemon.log"
result "printf text absent from the daemon's log" $? "$W/daemon.log"
grep -q 'kernel output is not captured' "$W/daemon.log" && { echo "NOTE: a worker could not capture:"; grep 'kernel output is not captured' "$W/daemon.log" | head -2; }
echo "kprint_check: $PASS passed, $FAIL failed"
[ $FAIL = 0 ]
