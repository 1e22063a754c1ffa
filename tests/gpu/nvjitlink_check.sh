#!/usr/bin/env bash
# PTX newer than the node's driver (issue 18), on a machine with an NVIDIA
# GPU, from a build folder carried there:
#   tests/gpu/nvjitlink_check.sh BUILD_DIR NVJITLINK
# NVJITLINK: libnvJitLink.so, a folder holding it, or a pip
# nvidia-nvjitlink wheel (unpacked here). The iota kernel's PTX with its
# .version raised above what the driver takes: a daemon without nvJitLink
# answers LOAD_FAILED with the advice (what the driver takes, what to
# send); a daemon with --nvjitlink runs it right, and the second submit
# comes from the JIT cache (nvJitLink ran once). The client library refuses
# that PTX before sending it to a node without nvJitLink, with the same
# advice. The inventory says what each node loads. Fatbins
# (tests/data/fatbin/): the driver runs the cubin of one holding several
# images; one whose only PTX is newer than the driver runs through
# nvJitLink, and without it gets LOAD_FAILED.
set -uo pipefail
B=$(cd "${1:?BUILD_DIR}" && pwd)
NJ=${2:?NVJITLINK}
W=$(mktemp -d /tmp/gl-njl-XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill $p 2>/dev/null; done; for p in "${pids[@]}"; do wait $p 2>/dev/null; done; rm -rf "$W"' EXIT
PASS=0 FAIL=0
result() { if [ "$2" = 0 ]; then PASS=$((PASS+1)); echo "PASS $1"; else FAIL=$((FAIL+1)); echo "FAIL $1"; fi; }
case $NJ in
  *.whl)
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$NJ" "$W/whl"
    NJ=$(ls -d "$W"/whl/nvidia/*/lib | head -1) ;;
esac
echo "nvJitLink: $(ls "$NJ" 2>/dev/null | head -3 | tr '\n' ' ')"
start() { # start NAME [ARGS...]: port and fingerprint in NAME.ready
  local n=$1; shift
  "$B/src/daemon/gpuleased" --listen 127.0.0.1:0 --state-dir "$W/$n" --ready-file "$W/$n.ready" \
    --warm-workers 0 "$@" 2> "$W/$n.log" &
  pids+=($!)
  for _ in $(seq 1 300); do [ -s "$W/$n.ready" ] && break; sleep 0.1; done
}
start plain
start njl --nvjitlink "$NJ"
read -r P1 F1 < "$W/plain.ready"
read -r P2 F2 < "$W/njl.ready"
# One ISA version above the driver's: the driver's JIT refuses it.
max=$("$B/src/cli/gpulease" --addr 127.0.0.1:$P1 --pin-sha256 "$F1" --json inventory |
  python3 -c 'import json,sys; v=json.load(sys.stdin)["driver_version"]; print(v)')
echo "driver $max"
sed 's/^\.version 9\.0$/.version 9.2/' "$B/kernels/iota.ptx" > "$W/iota_new.ptx"
grep -m1 '^\.version' "$W/iota_new.ptx"
sub() { # sub PORT FP OUT
  "$B/src/cli/gpulease" --addr 127.0.0.1:$1 --pin-sha256 "$2" submit --binary "$W/iota_new.ptx" \
    --kernel iota --block 256 --output-size 1024 --format raw --output "$3"
}
cli() { local p=$1 f=$2; shift 2; "$B/src/cli/gpulease" --addr 127.0.0.1:$p --pin-sha256 "$f" "$@"; }
cli $P1 "$F1" inventory > "$W/inv1" 2>&1; cli $P2 "$F2" inventory > "$W/inv2" 2>&1
grep targets "$W/inv1" | head -1; grep targets "$W/inv2" | head -1
# (the node's own toolkit may give the first daemon an nvJitLink as well)
grep -q "targets sm_90, sm_90a; PTX ISA up to 9.0" "$W/inv1" &&
  grep -q "targets sm_90, sm_90a; PTX ISA up to 9.0, 9\.[1-9][0-9]* through nvJitLink" "$W/inv2"
result "inventory: targets, the driver's ISA, nvJitLink's" $?
sub $P1 "$F1" "$W/o1.bin" > "$W/s1.out" 2> "$W/s1.err"
rc=$?
cat "$W/s1.err"
[ $rc = 1 ] && grep -q "LOAD_FAILED: GPU 0: PTX ISA 9.2 (.target sm_75) is newer than the node loads: its driver takes ISA up to 9.0" "$W/s1.err" &&
  grep -q "checked before sending" "$W/s1.err"
result "without a new enough nvJitLink: the library refuses it before sending, with the advice" $?
GPULEASE_PTX_CHECK=0 sub $P1 "$F1" "$W/o1.bin" > "$W/s1.out" 2> "$W/s1.err"
rc=$?
cat "$W/s1.err"
[ $rc = 1 ] && grep -q "LOAD_FAILED" "$W/s1.err" && grep -q "is newer than this node's driver takes" "$W/s1.err" &&
  grep -q "send a cubin for sm_" "$W/s1.err"
result "without nvJitLink, sent anyway: the node's LOAD_FAILED with the advice" $?
check_iota() { python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read(); v=struct.unpack("<256f",d); sys.exit(0 if v==tuple(float(i+1) for i in range(256)) else 1)' "$1"; }
sub $P2 "$F2" "$W/o2.bin" > "$W/s2.out" 2> "$W/s2.err"
rc=$?
cat "$W/s2.err"
[ $rc = 0 ] && check_iota "$W/o2.bin"
result "with --nvjitlink: the PTX runs, output right (256 floats 1..256)" $?
sub $P2 "$F2" "$W/o3.bin" > /dev/null 2>&1 && check_iota "$W/o3.bin"
result "again: right" $?
n=$(grep -c "compiled by nvJitLink" "$W/njl.log")
grep -m1 "compiled by nvJitLink" "$W/njl.log"
[ "$n" = 1 ]
result "nvJitLink ran once, the second load came from the JIT cache ($n)" $?
grep -i "nvjitlink" "$W/njl.log" | grep -iv "compiled by" | head -3

# Fatbins.
FB=$(cd "$(dirname "$0")/../data/fatbin" && pwd)
fbsub() { cli "$1" "$2" submit --binary "$FB/$3" --kernel k --block 4 --output-size 16 --format u32; }
fbsub $P1 "$F1" multi.fatbin > "$W/f1" 2>&1
cat "$W/f1"
grep -q "\[    0\] *1 *2 *3 *4$" "$W/f1"
result "fatbin of cubins sm_75, sm_90 and PTX compute_90 runs" $?
cli $P1 "$F1" --json lease alloc --vram 1M --ttl 60 > "$W/lease" 2>&1
LID=$(sed -n 's/.*"lease_id": \([0-9]*\).*/\1/p' "$W/lease")
LS=$(sed -n 's/.*"secret": "\([0-9a-f]*\)".*/\1/p' "$W/lease")
SID=$(cli $P1 "$F1" session open --lease "$LID" --secret "$LS" 2>&1 | grep -o '[0-9]*' | head -1)
cli $P1 "$F1" --json module load --session "$SID" --binary "$FB/cubin90_ptx75.fatbin" --lease "$LID" --secret "$LS" > "$W/mod" 2>&1
MOD=$(sed -n 's/.*"module": "\([0-9a-fx]*\)".*/\1/p' "$W/mod")
cli $P1 "$F1" func info --session "$SID" --module "$MOD" --kernel k --lease "$LID" --secret "$LS" > "$W/fi" 2>&1
cat "$W/fi"
grep -q "PTX version *9.0" "$W/fi" && grep -q "binary version sm_90" "$W/fi"
result "fatbin of a cubin sm_90 and PTX compute_75: the driver runs the cubin (PTX version 9.0)" $?
fbsub $P1 "$F1" isa94.fatbin > "$W/f2" 2>&1
cat "$W/f2"
grep -q "LOAD_FAILED" "$W/f2" && grep -q "PTX ISA 9.4 (.target sm_90) is newer than this node's driver takes" "$W/f2"
result "fatbin whose PTX is ISA 9.4, without nvJitLink: LOAD_FAILED with the advice" $?
fbsub $P2 "$F2" isa94.fatbin > "$W/f3" 2>&1
cat "$W/f3"
grep -q "\[    0\] *1 *2 *3 *4$" "$W/f3" && grep -q "fatbin: its PTX for sm_90 compiled by nvJitLink" "$W/njl.log"
result "the same fatbin with --nvjitlink: its PTX compiled by nvJitLink, output right" $?
echo "nvjitlink_check: $PASS passed, $FAIL failed"
[ $FAIL = 0 ]
