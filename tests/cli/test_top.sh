#!/usr/bin/env bash
# `gpulease top` against a real gpuleased (emulated device, no GPU) with
# its Prometheus endpoint: the GPU row and the JSON frame after a lease, a
# session and some submits; a nonzero submit rate while submits run; an
# unreachable, wrong or absent metrics endpoint (a note, exit 0); the live
# view until SIGINT; usage errors. Usage: test_top.sh BUILD_DIR
set -uo pipefail
build=$1
bin=$build/src
dir=$(mktemp -d /tmp/gl-top-XXXXXX)
"$bin/daemon/gpuleased" --device emu --emu-vram 64M --listen 127.0.0.1:0 \
  --metrics-listen 127.0.0.1:0 --state-dir "$dir" --ready-file "$dir/ready" --max-ttl 60 \
  2> "$dir/daemon.log" &
daemon=$!
loop=
cleanup() {
  [ -n "$loop" ] && kill "$loop" 2>/dev/null && wait "$loop" 2>/dev/null
  kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$dir"
}
trap cleanup EXIT
for _ in $(seq 1 300); do [ -s "$dir/ready" ] && break; sleep 0.1; done
read -r port fp < "$dir/ready"
mport=$(sed -n 's|.*metrics: http://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' "$dir/daemon.log")
if [ -z "$mport" ]; then echo "FAIL no metrics line in the daemon's log"; cat "$dir/daemon.log"; exit 1; fi
url=http://127.0.0.1:$mport/metrics
cli() { "$bin/cli/gpulease" --addr "127.0.0.1:$port" --pin-sha256 "$fp" "$@"; }
pass=0 fail=0
check() { # check NAME EXPECTED_RC ACTUAL_RC [PATTERN FILE]
  local ok=1
  [ "$2" = "$3" ] || ok=0
  if [ $# -ge 5 ] && ! grep -Eq -- "$4" "$5"; then ok=0; fi
  if [ $ok = 1 ]; then pass=$((pass+1)); echo "ok   $1";
  else fail=$((fail+1)); echo "FAIL $1 (rc $3, want $2; pattern: ${4:-})"; [ $# -ge 5 ] && cat "$5"; fi
}
expect() { # expect NAME CONDITION-RC [FILE]: a check without a command's rc
  if [ "$2" = 0 ]; then pass=$((pass+1)); echo "ok   $1";
  else fail=$((fail+1)); echo "FAIL $1"; [ $# -ge 3 ] && cat "$3"; fi
}
out=$dir/out err=$dir/err

# ---- a lease, a session, some submits; then one frame ----
cli --json lease alloc --vram 1M --ttl 60 > $out 2> $err
check "lease alloc" 0 $? '"secret"' $out
id=$(sed -n 's/.*"lease_id": \([0-9]*\).*/\1/p' $out)
secret=$(sed -n 's/.*"secret": "\([0-9a-f]*\)".*/\1/p' $out)
submit() {
  cli submit --lease "$id" --secret "$secret" --binary "$build/kernels/iota.ptx" --kernel iota \
    --grid 1 --block 8 --output-size 32 --format f32
}
for _ in 1 2 3; do submit > $out 2> $err || { echo "FAIL submit"; cat $err; exit 1; }; done
cli session open --lease "$id" --secret "$secret" > $out 2> $err
check "session open" 0 $? '^[0-9]+$' $out
sleep 1.2 # the daemon renders its metrics once a second
row='^0 +gpulease emulated device.* 64\.0 MiB +1\.0 MiB +63\.0 MiB +1 +1 +- +- +no +\(emulated\)$'

# (a slow machine may render the session's snapshot late: a few tries)
for _ in 1 2 3 4 5; do
  cli top --once --interval 0.5 --metrics "$url" > $out 2> $err
  rc=$?
  grep -Eq "$row" $out && break
  sleep 0.5
done
check "top --once" 0 $rc "^gpulease top: node 127\.0\.0\.1:$port, 1 GPU, [0-9]+ connections?, [0-9]{4}-" $out
# GPU 0: 64 MiB total, 1 MiB allocated, 63 MiB free, 1 lease, 1 session, not fenced
check "top row: lease, VRAM, session" 0 0 "$row" $out
check "top rates over the interval" 0 0 '^over the last [0-9]+\.[0-9]{2} s: submits [0-9.]+/s' $out
check "top bytes" 0 0 '^bytes in [0-9.]+ [KMG]?i?B/s, out' $out
if grep -q $'\033' $out; then expect "no ANSI codes when stdout is no terminal" 1 $out
else expect "no ANSI codes when stdout is no terminal" 0; fi

cli --json top --once --interval 0.5 --metrics "$url" > $out 2> $err
check "top --json: total" 0 $? '"total_vram_bytes": 67108864,' $out
check "top --json: allocated" 0 0 '"allocated_vram_bytes": 1048576,' $out
check "top --json: free" 0 0 '"free_vram_bytes": 66060288,' $out
check "top --json: leases" 0 0 '"leases": 1,' $out
check "top --json: sessions" 0 0 '"sessions": 1,' $out
check "top --json: fenced" 0 0 '"fenced": false,' $out
check "top --json: metrics read" 0 0 '"ok": true,' $out
check "top --json: interval" 0 0 '"interval_s": [0-9]' $out
check "top --json: warm workers" 0 0 '"warm_workers_ready": [0-9]+,' $out
check "top --json: GPU_SUBMIT listed" 0 0 '"op": "GPU_SUBMIT"' $out

# ---- submits running during the interval: a submit rate above zero ----
( while [ ! -e "$dir/stop" ]; do submit > /dev/null 2>&1; done ) &
loop=$!
sleep 0.5
cli --json top --once --interval 1.5 --metrics "$url" > $out 2> $err
rc=$?
cli top --once --interval 1.5 --metrics "$url" > $dir/text 2> $err
rc2=$?
touch "$dir/stop"; wait $loop; loop=
check "top --json during submits" 0 $rc '"rates": \{' $out
rate=$(sed -n 's/.*"submits_per_s": \([0-9.e+-]*\).*/\1/p' $out)
awk -v r="$rate" 'BEGIN { exit !(r + 0 > 0) }'
expect "submit rate above zero ($rate/s)" $? $out
op_rate=$(grep -A1 '"op": "GPU_SUBMIT"' $out | sed -n 's/.*"per_s": \([0-9.e+-]*\).*/\1/p')
awk -v r="$op_rate" 'BEGIN { exit !(r + 0 > 0) }'
expect "GPU_SUBMIT requests/s above zero ($op_rate/s)" $? $out
# the ops come busiest first
sed -n 's/.*"per_s": \([0-9.e+-]*\).*/\1/p' $out |
  awk 'NR > 1 && $1 + 0 > prev + 0 { bad = 1 } { prev = $1 } END { exit bad }'
expect "requests sorted busiest first" $? $out
check "top text during submits" 0 $rc2 '^over the last [0-9.]+ s: submits ([1-9][0-9]*\.[0-9]|0\.[1-9])/s' $dir/text
check "top text lists GPU_SUBMIT" 0 0 '^  GPU_SUBMIT +[0-9.]+/s  mean [0-9.]+ ms' $dir/text

# ---- metrics that cannot be read: the inventory part and a note ----
cli top --once --interval 0.2 --metrics http://127.0.0.1:1/metrics > $out 2> $err
check "unreachable metrics: exit 0" 0 $? '^metrics: cannot read http://127\.0\.0\.1:1/metrics: ' $out
check "unreachable metrics: GPU row" 0 0 '^0 +gpulease emulated device.* 1\.0 MiB +63\.0 MiB +1 +- ' $out
check "unreachable metrics: the table" 0 0 '^GPU +NAME +VRAM +ALLOC +FREE +LEASES +SESSIONS +UTIL +TEMP +FENCED$' $out
if grep -q '^over the last' $out; then expect "unreachable metrics: no rates line" 1 $out
else expect "unreachable metrics: no rates line" 0; fi
cli --json top --once --interval 0.2 --metrics http://127.0.0.1:1/metrics > $out 2> $err
check "unreachable metrics --json" 0 $? '"ok": false,' $out
check "unreachable metrics --json: rates null" 0 0 '"rates": null' $out
check "unreachable metrics --json: inventory" 0 0 '"allocated_vram_bytes": 1048576,' $out
cli top --once --interval 0.2 --metrics "http://127.0.0.1:$mport/nope" > $out 2> $err
check "metrics 404" 0 $? "answered HTTP 404" $out
cli top --once --interval 0.2 --metrics "http://127.0.0.1:$mport/healthz" > $out 2> $err
check "not an exposition" 0 $? "has no samples \(1 malformed line\(s\)\)" $out
cli top --once --interval 0.2 --metrics none > $out 2> $err
check "--metrics none" 0 $? '^metrics: none' $out
check "--metrics none: GPU row" 0 0 '^0 +gpulease emulated device.* 64\.0 MiB +1\.0 MiB +63\.0 MiB +1 +- +- +- +no' $out

# ---- the live view: frames until SIGINT, exit 0 ----
# live OUT ARGS...: starts a live view, waits for its third frame (a line
# that starts a frame: '^gpulease top: node' or '^{'), sends SIGINT, and
# gives it 20 s to exit; its exit status is the function's (124: it did
# not stop). Signalling after the frames, not after a fixed time, keeps a
# slow start (a loaded machine, sanitizers) from meeting the signal before
# the tool's handler exists.
live() {
  local o=$1; shift
  "$bin/cli/gpulease" --addr "127.0.0.1:$port" --pin-sha256 "$fp" "$@" > "$o" 2> $err &
  local pid=$! i
  for i in $(seq 1 600); do
    [ "$(grep -cE '^(gpulease top: node|\{)' "$o")" -ge 3 ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
  done
  kill -INT $pid 2>/dev/null
  for i in $(seq 1 400); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
  if kill -0 $pid 2>/dev/null; then
    echo "live view still running 20 s after SIGINT"; kill -KILL $pid; wait $pid 2>/dev/null
    return 124
  fi
  wait $pid
}
live $out top --interval 0.3 --metrics "$url"
check "live view ends on SIGINT with 0" 0 $? '^rates: from the next frame on' $out
frames=$(grep -c '^gpulease top: node' $out)
[ "$frames" -ge 3 ]; expect "live view: $frames frames before SIGINT" $? $out
check "live view: rates from the second frame" 0 0 '^over the last [0-9.]+ s' $out
live $out --json top --interval 0.3 --metrics "$url"
check "live --json: a line per frame" 0 $? '^\{"node":"127\.0\.0\.1:[0-9]+",.*"rates":\{"interval_s"' $out
head -1 $out | grep -q '"rates":null}$'
expect "live --json: the first frame has no rates" $? $out
[ "$(grep -c '^{' $out)" = "$(wc -l < $out)" ] && [ "$(wc -l < $out)" -ge 2 ]
expect "live --json: one object a line" $? $out

# on a terminal (a pty from script(1), where there is one) each frame clears the screen
if command -v script > /dev/null; then
  script -qec "'$bin/cli/gpulease' --addr 127.0.0.1:$port --pin-sha256 $fp top --once \
    --interval 0.2 --metrics none" /dev/null > $out 2> $err
  check "on a terminal: clear and home" 0 $? $'^\033\\[H\033\\[2Jgpulease top: node' $out
else
  echo "skip on a terminal: no script(1)"
fi

# ---- usage and failures ----
cli top --once --interval 0 > $out 2> $err;       check "usage: --interval 0" 2 $? "from 0\.1 to 3600" $err
cli top --once --interval x > $out 2> $err;       check "usage: --interval x" 2 $? "not a number of seconds" $err
cli top --interval > $out 2> $err;                check "usage: --interval needs a value" 2 $? "needs a value" $err
cli top --metrics ftp://x > $out 2> $err;         check "usage: --metrics ftp" 2 $? "http:// or https://" $err
cli top now > $out 2> $err;                       check "usage: top takes options only" 2 $? "options only" $err
cli top --vram 1M > $out 2> $err;                 check "usage: --vram not for top" 2 $? "does not apply to 'top'" $err
cli inventory --once > $out 2> $err;              check "usage: --once not for inventory" 2 $? "--once does not apply" $err
cli inventory --metrics none > $out 2> $err;      check "usage: --metrics not for inventory" 2 $? "--metrics does not apply" $err
"$bin/cli/gpulease" --addr 127.0.0.1:1 --insecure --timeout 2 top --once --interval 0.2 \
  --metrics none > $out 2> $err
check "no daemon: exit 1" 1 $? "gpulease: top: connect failed: [A-Z_]+: " $err
"$bin/cli/gpulease" --addr 127.0.0.1:1 --insecure --timeout 2 --json top --once --interval 0.2 \
  --metrics none > $out 2> $err
check "no daemon --json: an error object" 1 $? '"operation": "top: connect"' $out
echo "$pass passed, $fail failed"
[ $fail = 0 ]
