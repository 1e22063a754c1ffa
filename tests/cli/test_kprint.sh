#!/usr/bin/env bash
# Kernel output end to end (emulated device, no GPU): a kernel's printf text
# reaches the CLI's stderr ("kernel: " lines) through GPU_SUBMIT's kernel
# output, never the daemon's log; the lease's 64 KiB bound and its
# truncation mark; two leases never see each other's output; a shared
# lease's output is discarded, and says so; assert gives LAUNCH_FAILED with
# CUDA's assertion text. Kernels: tests/emu/kprint/kprint.ptx.
# Usage: test_kprint.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1
src=$2
bin=$build/src
ptx=$src/tests/emu/kprint/kprint.ptx
dir=$(mktemp -d /tmp/gl-kprint-XXXXXX)
"$bin/daemon/gpuleased" --device emu --emu-vram 64M --listen 127.0.0.1:0 --state-dir "$dir" \
  --ready-file "$dir/ready" --max-ttl 60 --log-level debug 2> "$dir/daemon.log" &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 300); do [ -s "$dir/ready" ] && break; sleep 0.1; done
read -r port fp < "$dir/ready"
cli() { "$bin/cli/gpulease" --addr "127.0.0.1:$port" --pin-sha256 "$fp" "$@"; }
pass=0 fail=0
ok() { pass=$((pass+1)); echo "ok   $1"; }
bad() { fail=$((fail+1)); echo "FAIL $1"; shift; for f in "$@"; do echo "--- $f"; cat "$f"; done; }
out=$dir/out err=$dir/err
alloc() { # alloc VAR_PREFIX ARGS...: lease id and secret into ${1}_id, ${1}_secret
  local p=$1; shift
  cli --json lease alloc --ttl 60 "$@" > $out 2> $err || { bad "lease alloc $*" $err; return 1; }
  eval "${p}_id=$(sed -n 's/.*"lease_id": \([0-9]*\).*/\1/p' $out)"
  eval "${p}_secret=$(sed -n 's/.*"secret": "\([0-9a-f]*\)".*/\1/p' $out)"
}

# 1. printf text on stderr, in order, prefixed; return value per thread.
cli submit --binary "$ptx" --kernel hello --grid 2 --block 3 --arg ptr:0 --output-size 24 \
  --format i32 > $out 2> $err
rc=$?
want=$dir/want
for b in 0 1; do for t in 0 1 2; do echo "kernel: hello from thread $t of block $b"; done; done > $want
if [ $rc = 0 ] && grep '^kernel: ' $err | diff - $want > /dev/null; then ok "printf reaches stderr, in order"
else bad "printf reaches stderr, in order (rc $rc)" $err; fi
if grep -q '^\[    0\] *2 *2 *2 *2 *2 *2$' $out; then ok "printf returns the argument count"
else bad "printf returns the argument count" $out; fi
if grep -q 'hello from thread' $out; then bad "kernel text kept off stdout" $out; else ok "kernel text kept off stdout"; fi

# 2. the bound: 5000 lines of 16 bytes on a lease whose FIFO holds them all
alloc big --vram 1M --printf-fifo 1048576 || true
cli submit --lease "$big_id" --secret "$big_secret" --binary "$ptx" --kernel lines --arg i32:5000 \
  > $out 2> $err
rc=$?
lines=$(grep -c '^kernel: line ' $err)
kept=$((lines * 16))
if [ $rc = 0 ] && [ $kept -le 65536 ] && [ $kept -gt 65000 ] &&
   grep -q "^kernel: \[$((5000 * 16 - 65536)) bytes of kernel output dropped" $err &&
   grep -q '^kernel: line 0000000 ..$' $err; then ok "64 KiB bound, truncation marked"
else bad "64 KiB bound, truncation marked (rc $rc, $lines lines)" $err; fi
# the next submit starts afresh: nothing left, nothing dropped
cli submit --lease "$big_id" --secret "$big_secret" --binary "$ptx" --kernel lines --arg i32:2 \
  > $out 2> $err
if [ $? = 0 ] && [ "$(grep -c '^kernel: ' $err)" = 2 ]; then ok "pending output delivered once"
else bad "pending output delivered once" $err; fi

# 3. two leases: each sees only its own kernels' text
alloc a --vram 1M || true
alloc b --vram 1M || true
cli submit --lease "$a_id" --secret "$a_secret" --binary "$ptx" --kernel hello --arg ptr:0 > $out 2> $dir/err_a
cli submit --lease "$b_id" --secret "$b_secret" --binary "$ptx" --kernel lines --arg i32:1 > $out 2> $dir/err_b
if grep -q '^kernel: hello from thread 0 of block 0$' $dir/err_a && ! grep -q 'line 0000000' $dir/err_a &&
   grep -q '^kernel: line 0000000 ..$' $dir/err_b && ! grep -q 'hello' $dir/err_b; then
  ok "two leases, separate output"
else bad "two leases, separate output" $dir/err_a $dir/err_b; fi

# 4. a shared lease: discarded, and said so
alloc s --vram 1M --class shared || true
cli submit --lease "$s_id" --secret "$s_secret" --binary "$ptx" --kernel hello --arg ptr:0 > $out 2> $err
if [ $? = 0 ] && grep -q '^kernel: \[kernel output is not captured on a lease of class shared\]' $err &&
   ! grep -q 'hello from' $err; then ok "shared lease: discarded, said so"
else bad "shared lease: discarded, said so" $err; fi

# 5. assert: LAUNCH_FAILED with CUDA's text (thread 4 of block 1 fails)
head -c 64 /dev/zero > $dir/zeros
printf '\001\000\000\000' | dd of=$dir/zeros bs=1 seek=28 conv=notrunc 2> /dev/null
line=$(grep -n '^  assert(p\[' "$src/tests/emu/kprint/kprint.cu" | cut -d: -f1)
cli submit --binary "$ptx" --kernel check --grid 2 --block 4 --arg ptr:0 --input $dir/zeros > $out 2> $err
rc=$?
if [ $rc = 1 ] && grep -qF "submit failed: LAUNCH_FAILED: " $err &&
   grep -qF "CUDA_ERROR_ASSERT" $err &&
   grep -qF "kprint.cu:$line: void check(const int *): block: [1,0,0], thread: [3,0,0] Assertion \`p[blockIdx.x * blockDim.x + threadIdx.x] == 0\` failed." $err
then ok "assert: LAUNCH_FAILED with the assertion text"
else bad "assert: LAUNCH_FAILED with the assertion text (rc $rc)" $err; fi

# 6. a session through the CLI: the lines come with the launch or the sync
alloc se --vram 1M || true
L="--lease $se_id --secret $se_secret"
cli session open $L > $out 2> $err; sid=$(awk '{print $1; exit}' $out)
cli module load --session "$sid" --binary "$ptx" $L > $out 2> $err; mod=$(awk '{print $1; exit}' $out)
cli launch --session "$sid" --module "$mod" --kernel lines --arg i32:2 $L > $out 2> $dir/err1
cli session sync "$sid" $L > $out 2> $dir/err2
cat $dir/err1 $dir/err2 > $err
if [ "$(grep -c '^kernel: line 000000[01] ..$' $err)" = 2 ]; then ok "session via the CLI: kernel lines once"
else bad "session via the CLI: kernel lines once (session $sid, module $mod)" $err; fi

# 7. none of it in the daemon's log (debug level)
if grep -q 'hello from thread\|line 0000000\|checking [0-9]' "$dir/daemon.log"; then
  bad "kernel text absent from the daemon's log" "$dir/daemon.log"
else ok "kernel text absent from the daemon's log"; fi
echo "$pass passed, $fail failed"
[ $fail = 0 ]
