#!/usr/bin/env bash
# The gpulease CLI against a real gpuleased (emulated device, no GPU):
# output formats, exit codes and error messages. Usage: test_cli.sh BUILD_DIR
set -uo pipefail
build=$1
. "$(dirname "$0")/emu_daemon.sh"
out=$dir/out err=$dir/err

cli inventory > $out 2> $err;                 check "inventory text" 0 $? "(emulated)" $out
cli --json inventory > $out 2> $err;          check "inventory json" 0 $? '"total_vram_bytes": 67108864' $out
cli lease alloc --vram 1M --ttl 30 --json > $out 2> $err
check "lease alloc json" 0 $? '"secret"' $out
id=$(sed -n 's/.*"lease_id": \([0-9]*\).*/\1/p' $out)
secret=$(sed -n 's/.*"secret": "\([0-9a-f]*\)".*/\1/p' $out)
cli lease show "$id" --secret "$secret" > $out 2> $err;  check "lease show" 0 $? "vram       1048576 bytes" $out
GPULEASE_SECRET=$secret cli lease renew "$id" --ttl 50 > $out 2> $err
check "lease renew (secret from env)" 0 $? "ttl        50 s" $out
cli lease show "$id" --secret 00000000000000000000000000000000000000000000000000000000000000000000000000000000 > $out 2> $err
check "wrong secret" 1 $? "lease show failed: UNAUTHORIZED: wrong secret" $err
cli --json lease show "$id" --secret 00000000000000000000000000000000000000000000000000000000000000000000000000000000 > $out 2> $err
check "wrong secret json" 1 $? '"status": "UNAUTHORIZED"' $out
cli lease renew "$id" --secret "$secret" --ttl 61 > $out 2> $err
check "ttl above max" 1 $? "INVALID_ARGUMENT: ttl_s 61 out of range 1..60" $err
cli lease alloc --vram 65M --ttl 10 > $out 2> $err
check "capacity" 1 $? "CAPACITY_EXCEEDED" $err
cli lease free "$id" --secret "$secret" > $out 2> $err;  check "lease free" 0 $? "freed" $out
cli lease show "$id" --secret "$secret" > $out 2> $err;  check "after free" 1 $? "NOT_FOUND" $err
printf '.version 8.0\n.target sm_75\n.address_size 64\n' > $dir/k.ptx
cli submit --binary $dir/k.ptx --kernel k --output-size 16 > $out 2> $err
check "one-shot submit reaches the worker" 1 $? "submit failed: LAUNCH_FAILED: .*no kernel named 'k'" $err
cli submit --binary "$build/kernels/iota.ptx" --kernel iota --grid 2 --block 4 --output-size 32 --format f32 > $out 2> $err
check "one-shot submit on the emulated device" 0 $? "\[    0\] *1 *2 *3 *4 *5 *6 *7 *8$" $out
cli --json inventory > $out 2> $err
check "one-shot lease freed afterwards" 0 $? '"active_leases": 0' $out
cli lease alloc --vram 1M > $out 2> $err;     check "usage: missing --ttl" 2 $? "needs --vram BYTES and --ttl" $err
cli inventory --vram 1M > $out 2> $err;       check "usage: option not for command" 2 $? "does not apply" $err
cli submit --binary $dir/k.ptx --kernel k --arg q32:1 > $out 2> $err
check "usage: bad --arg" 2 $? "unknown type" $err
cli frobnicate > $out 2> $err;                check "usage: unknown command" 2 $? "unknown command" $err
cli lease alloc --vram 1M --ttl 5 --class exclusive > $out 2> $err
check "usage: unknown lease class" 2 $? "is not isolated, shared, device or partition" $err
cli inventory --class shared > $out 2> $err;  check "usage: --class not for inventory" 2 $? "does not apply" $err
"$bin/cli/gpulease" --addr "127.0.0.1:$port" --insecure inventory > $out 2> $err
check "insecure warns" 0 $? "NOT verified" $err
"$bin/cli/gpulease" --addr "127.0.0.1:$port" --pin-sha256 "$(echo $fp | tr 0-9a-f 1-9a-f0)" inventory > $out 2> $err
check "wrong pin" 1 $? "TLS_FAILED" $err
echo "$pass passed, $fail failed"
[ $fail = 0 ]
