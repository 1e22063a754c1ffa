#!/usr/bin/env bash
# `gpulease pool` (src/lib/pool*.c, src/cli/cmd_pool.c) over real daemons on
# loopback, on the emulated device (docs/scale-out.md):
# - 6 daemons, 2 of them with 3 GPUs: `pool map` of 1,000 chunks (the last
#   one short) matches a CPU reference byte for byte; leases spread over
#   the nodes and none is left;
# - the same while one daemon is killed (SIGKILL) and another stopped
#   (SIGTERM) and started again: every chunk right, retries in the summary,
#   no lease left on the daemons that lived;
# - the pool found through DNS SRV records served by dnsmasq on loopback; a
#   record removed there is gone at the next resolution;
# - errors: no reachable node, every node full, a kernel error (not
#   retried), an SRV name that does not resolve, the deadline, usage.
# Usage: test_pool.sh BUILD_DIR
set -uo pipefail
build=$1
bin=$build/src
cli=$bin/cli/gpulease
ptx=$build/kernels/chunk_mix.ptx
py=/usr/bin/python3
dir=$(mktemp -d /tmp/gl-pool-XXXXXX)
declare -A dpid dport
dns=
cleanup() {
  for p in "${dpid[@]}"; do kill -KILL "$p" 2>/dev/null; done
  for p in "${dpid[@]}"; do wait "$p" 2>/dev/null; done
  [ -n "$dns" ] && kill "$dns" 2>/dev/null && wait "$dns" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
pass=0 fail=0
check() { # check NAME EXPECTED_RC ACTUAL_RC [PATTERN FILE]
  local ok=1
  [ "$2" = "$3" ] || ok=0
  if [ $# -ge 5 ] && ! grep -Eq -- "$4" "$5"; then ok=0; fi
  if [ $ok = 1 ]; then pass=$((pass+1)); echo "ok   $1";
  else fail=$((fail+1)); echo "FAIL $1 (rc $3, want $2; pattern: ${4:-})"; [ $# -ge 5 ] && cat "$5"; fi
}
expect() { # expect NAME CONDITION-RC [FILE]
  if [ "$2" = 0 ]; then pass=$((pass+1)); echo "ok   $1";
  else fail=$((fail+1)); echo "FAIL $1"; [ $# -ge 3 ] && cat "$3"; fi
}

# start NAME [ARGS...]: a daemon on the emulated device; its port in
# dport[NAME] (kept across restarts), its fingerprint in $dir/NAME.fp.
start() {
  local name=$1; shift
  local listen=127.0.0.1:${dport[$name]:-0}
  rm -f "$dir/$name.ready"
  "$bin/daemon/gpuleased" --device emu --emu-vram 64M --listen "$listen" \
    --state-dir "$dir/$name" --ready-file "$dir/$name.ready" --max-ttl 120 "$@" \
    2>> "$dir/$name.log" &
  dpid[$name]=$!
  local i
  for i in $(seq 1 300); do [ -s "$dir/$name.ready" ] && break; sleep 0.05; done
  local port fp
  read -r port fp < "$dir/$name.ready"
  dport[$name]=$port
  echo "$fp" > "$dir/$name.fp"
}
stop() { # stop NAME SIGNAL
  kill "-$2" "${dpid[$1]}" 2>/dev/null
  wait "${dpid[$1]}" 2>/dev/null
  unset "dpid[$1]"
}
# leases_on NAME: live leases on the daemon, from its inventory
leases_on() {
  "$cli" --addr "127.0.0.1:${dport[$1]}" --pin-sha256 "$(cat "$dir/$1.fp")" --json inventory |
    $py -c 'import json,sys; print(sum(g["active_leases"] for g in json.load(sys.stdin)["gpus"]))'
}

for n in a b c d e f; do
  case $n in a|b) start $n --emu-gpus 3 ;; *) start $n ;; esac
done
: > "$dir/nodes"
for n in a b c d e f; do echo "127.0.0.1:${dport[$n]} $(cat "$dir/$n.fp")" >> "$dir/nodes"; done

# The input: 1,000 chunks of 1,000 bytes (250 words), the last one 996.
words=249999 cw=250
$py - "$dir" $words $cw <<'EOF'
import sys, numpy as np
d, n, cw = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(7)
x = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
x.tofile(d + "/in.bin")
nch = (n + cw - 1) // cw
ref = np.zeros(nch * cw, dtype=np.uint32)
for c in range(nch):
    s = x[c * cw:(c + 1) * cw].astype(np.uint64)
    ref[c * cw:c * cw + len(s)] = ((s * 2654435761 + c) & 0xffffffff).astype(np.uint32)
ref.tofile(d + "/ref.bin")
EOF
map() { # map OUT_PREFIX [EXTRA...]: pool map of the input with chunk_mix
  local o=$1; shift
  "$cli" pool map --binary "$ptx" --kernel chunk_mix --input "$dir/in.bin" \
    --chunk-bytes 1000 --output-bytes-per-chunk 1000 --output "$o.bin" --grid 1 --block 256 \
    --arg ptr:@in --arg ptr:@out --arg u32:@bytes --arg u32:@index --arg u32:$cw "$@" \
    > "$o.txt" 2> "$o.err"
}

# ---- 1. six daemons, 1,000 chunks ----
map "$dir/m1" --nodes-file "$dir/nodes" --class shared
check "map over 6 daemons" 0 $? '^pool map: 1000 of 1000 chunks in [0-9.]+ s' "$dir/m1.txt"
cmp -s "$dir/m1.bin" "$dir/ref.bin"; expect "output matches the CPU reference byte for byte" $? "$dir/m1.err"
used=$(awk '$1 ~ /^127\.0\.0\.1:/ && $2 > 0' "$dir/m1.txt" | wc -l)
[ "$used" = 6 ]; expect "every node ran chunks ($used of 6)" $? "$dir/m1.txt"
sum=$(awk '$1 ~ /^127\.0\.0\.1:/ {s += $2} END {print s}' "$dir/m1.txt")
[ "$sum" = 1000 ]; expect "per-node chunks add up to 1000 ($sum)" $? "$dir/m1.txt"
left=0; for n in a b c d e f; do left=$((left + $(leases_on $n))); done
[ "$left" = 0 ]; expect "no lease left after the map ($left)" $?
map "$dir/m1j" --nodes-file "$dir/nodes" --json
$py -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["status"]=="OK" and d["done"]==1000 and len(d["nodes"])==6 and d["input_bytes"]==999996 and d["output_bytes"]==1000000, d' "$dir/m1j.txt"
expect "--json summary (isolated leases)" $? "$dir/m1j.txt"
cmp -s "$dir/m1j.bin" "$dir/ref.bin"; expect "isolated leases: the same bytes" $?

# ---- 2. a daemon killed and another restarted while chunks run ----
# One lease per node, so the job runs long enough to be cut into.
map "$dir/m2" --nodes-file "$dir/nodes" --max-leases-per-node 1 --attempts 5 &
mp=$!
# Cut in once both nodes hold a lease of the map (not after a fixed time:
# on a loaded machine the map may not have reached them yet).
for _ in $(seq 1 200); do
  [ "$(leases_on c)" -ge 1 ] && [ "$(leases_on d)" -ge 1 ] && break
  sleep 0.05
done
kill -0 $mp 2>/dev/null; expect "the map is still running when the daemons fail" $?
stop c KILL
stop d TERM
sleep 0.3
start d
wait $mp
check "map through a kill and a restart" 0 $? '^pool map: 1000 of 1000 chunks' "$dir/m2.txt"
cmp -s "$dir/m2.bin" "$dir/ref.bin"; expect "every chunk right after the failures" $? "$dir/m2.err"
# A chunk on a failed node is retried elsewhere; one stuck on the killed
# node at the end of the job may instead be finished by a backup copy.
retries=$(sed -n 's/.*, \([0-9]*\) retries$/\1/p' "$dir/m2.txt")
backups=$(sed -n 's/.*, \([0-9]*\) backups, .*/\1/p' "$dir/m2.txt")
[ $((${retries:-0} + ${backups:-0})) -ge 1 ]
expect "the summary shows the retries ($retries) and backups ($backups)" $? "$dir/m2.txt"
dline=$(grep "^127\.0\.0\.1:${dport[d]} " "$dir/m2.txt")
[ "$(echo "$dline" | awk '{print $4}')" -ge 1 ]; expect "the stopped node shows failures" $? "$dir/m2.txt"
left=0; for n in a b d e f; do left=$((left + $(leases_on $n))); done
[ "$left" = 0 ]; expect "no lease left on the daemons that lived ($left)" $?
start c   # back for what follows

# ---- 3. DNS SRV through dnsmasq ----
if command -v dnsmasq > /dev/null || [ -x /usr/sbin/dnsmasq ]; then
  dnsmasq_bin=$(command -v dnsmasq || echo /usr/sbin/dnsmasq)
  dnsport=$($py -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  # start_dns NODE...: dnsmasq answering _gpulease._udp.pool.test with those nodes
  start_dns() {
    [ -n "$dns" ] && kill "$dns" 2>/dev/null && wait "$dns" 2>/dev/null
    local args=() n
    for n in "$@"; do args+=("--srv-host=_gpulease._udp.pool.test,127.0.0.1,${dport[$n]},0,10"); done
    "$dnsmasq_bin" --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts \
      --bind-interfaces --listen-address=127.0.0.1 --port="$dnsport" --user="$(id -un)" \
      --pid-file= --log-facility=- "${args[@]}" 2>> "$dir/dnsmasq.log" &
    dns=$!
    local i
    for i in $(seq 1 100); do
      "$cli" pool inventory --srv _gpulease._udp.pool.test --dns-server "127.0.0.1:$dnsport" \
        --pin-sha256 "$(cat "$dir/s1.fp")" > /dev/null 2>&1 && return 0
      sleep 0.05
    done
    return 0
  }
  # three daemons sharing one certificate, so one pin verifies them all
  start s1
  for n in s2 s3; do
    start $n --cert "$dir/s1/cert.pem" --key "$dir/s1/key.pem"
    cp "$dir/s1.fp" "$dir/$n.fp"
  done
  ls "$dir/s1/" > /dev/null
  start_dns s1 s2 s3
  srv=(--srv _gpulease._udp.pool.test --dns-server "127.0.0.1:$dnsport" --pin-sha256 "$(cat "$dir/s1.fp")")
  "$cli" pool inventory "${srv[@]}" > "$dir/i1.txt" 2> "$dir/i1.err"
  check "pool inventory through SRV" 0 $? '^3 node\(s\), 3 up' "$dir/i1.txt"
  map "$dir/m3" "${srv[@]}" --class shared
  check "map over the SRV records" 0 $? '^pool map: 1000 of 1000 chunks' "$dir/m3.txt"
  cmp -s "$dir/m3.bin" "$dir/ref.bin"; expect "SRV map: the same bytes" $?
  start_dns s1 s3
  "$cli" pool inventory "${srv[@]}" > "$dir/i2.txt" 2> "$dir/i2.err"
  check "a record removed is gone at the next resolution" 0 $? '^2 node\(s\), 2 up' "$dir/i2.txt"
  grep -q "127\.0\.0\.1:${dport[s2]} " "$dir/i2.txt"
  check "the removed node is not listed" 1 $?
  "$cli" pool inventory --srv _nothing._udp.pool.test --dns-server "127.0.0.1:$dnsport" \
    --insecure > "$dir/i3.txt" 2> "$dir/i3.err"
  check "an SRV name that does not resolve" 1 $? 'NOT_FOUND: SRV: .*_nothing\._udp\.pool\.test' "$dir/i3.err"
else
  echo "skip SRV: dnsmasq is not installed (scripts/deps.sh installs it)"
fi

# ---- 4. errors ----
"$cli" pool map --nodes 127.0.0.1:1,127.0.0.1:2 --insecure --timeout 1000 --binary "$ptx" \
  --kernel chunk_mix --input "$dir/in.bin" --chunk-bytes 1000 > "$dir/e1.txt" 2> "$dir/e1.err"
check "no reachable node" 1 $? 'DISCONNECTED: no reachable node: 127\.0\.0\.1:1: ' "$dir/e1.err"
map "$dir/e2" --nodes-file "$dir/nodes" --class shared --chunk-bytes 200M
check "every node full" 1 $? 'CAPACITY_EXCEEDED: no node has room for a lease of [0-9]+ bytes' "$dir/e2.err"
"$cli" pool map --nodes-file "$dir/nodes" --binary "$ptx" --kernel no_such_kernel \
  --input "$dir/in.bin" --chunk-bytes 1000 --class shared > "$dir/e3.txt" 2> "$dir/e3.err"
check "a kernel error fails the job, not retried" 1 $? \
  'pool map failed: (LAUNCH_FAILED|LOAD_FAILED): chunk [0-9]+ on 127\.0\.0\.1:[0-9]+: ' "$dir/e3.err"
grep -Eq ', 0 retries$' "$dir/e3.err"; expect "kernel error: 0 retries" $? "$dir/e3.err"
map "$dir/e4" --nodes-file "$dir/nodes" --max-leases 1 --deadline 0.05
check "the deadline" 1 $? 'TIMEOUT: deadline of 50 ms passed with [0-9]+ of 1000 chunks done' "$dir/e4.err"
printf '# nodes\n127.0.0.1:99999\n' > "$dir/bad-nodes"
"$cli" pool inventory --nodes-file "$dir/bad-nodes" > "$dir/e5.txt" 2> "$dir/e5.err"
check "a bad nodes file names its line" 2 $? "bad-nodes:2: '127\.0\.0\.1:99999' is not HOST:PORT" "$dir/e5.err"
"$cli" pool map --nodes-file "$dir/nodes" --binary "$ptx" --kernel chunk_mix \
  --input "$dir/in.bin" --chunk-bytes 1000 --arg ptr:@nope > "$dir/e6.txt" 2> "$dir/e6.err"
check "an unknown chunk value" 2 $? "ptr:@in, ptr:@out, u32:@bytes and u32:@index" "$dir/e6.err"
"$cli" pool map --nodes-file "$dir/nodes" --srv x --binary "$ptx" --kernel k --input "$dir/in.bin" \
  --chunk-bytes 1 > "$dir/e7.txt" 2> "$dir/e7.err"
check "one source of nodes" 2 $? "needs one of --nodes" "$dir/e7.err"
"$cli" submit --addr 127.0.0.1:1 --insecure --binary "$ptx" --kernel k --arg ptr:@in \
  > "$dir/e8.txt" 2> "$dir/e8.err"
check "submit refuses a chunk's --arg" 2 $? "names a chunk of 'pool map'" "$dir/e8.err"

echo "$pass passed, $fail failed"
[ $fail = 0 ]
