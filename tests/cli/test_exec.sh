#!/usr/bin/env bash
# `gpulease exec` (src/cli/cmd_exec.c) against a daemon on the emulated
# device: the program's environment (the lease, the connection, the CUDA
# shim's directory first in LD_LIBRARY_PATH, stale variables removed), the
# lease live while it runs and renewed, freed after, exit statuses, signals
# passed on, usage errors. No program here calls CUDA.
# Usage: test_exec.sh BUILD_DIR
set -uo pipefail
build=$(cd "$1" && pwd) # absolute: some commands here run in other folders
GL_DAEMON_ARGS="--max-ttl 300" # exec's default TTL is 300 s
. "$(dirname "$0")/emu_daemon.sh"
out=$dir/out err=$dir/err
export GL_CLI=$bin/cli/gpulease GL_ADDR=127.0.0.1:$port GL_FP=$fp GL_DIR=$dir
# The lease's freed: `lease show` with the id and secret the program saw.
gone() { GPULEASE_SECRET=$(cat "$dir/secret") cli lease show "$(cat "$dir/lease")" > "$dir/gone" 2>&1; }

# What the program sees: it prints "ok   NAME" or "bad  NAME: why" a check.
cat > $dir/child.sh <<'EOF'
ok() { echo "ok   $1"; }
bad() { echo "bad  $1: $2"; }
printf %s "$GPULEASE_LEASE" > "$GL_DIR/lease"
printf %s "$GPULEASE_SECRET" > "$GL_DIR/secret"
printf %s "$GPULEASE_LEASE" | grep -Eqx '[1-9][0-9]*' && ok "GPULEASE_LEASE is a number" ||
  bad "GPULEASE_LEASE is a number" "$GPULEASE_LEASE"
printf %s "$GPULEASE_SECRET" | grep -Eqx '[0-9a-f]{80}' && ok "GPULEASE_SECRET is 80 hex digits" ||
  bad "GPULEASE_SECRET is 80 hex digits" "${#GPULEASE_SECRET} characters"
[ "$GPULEASE_SECRET" != "$GL_STALE_SECRET" ] && ok "GPULEASE_SECRET is the new lease's" ||
  bad "GPULEASE_SECRET is the new lease's" "the parent's"
[ "$GPULEASE_ADDR" = "$GL_ADDR" ] && ok "GPULEASE_ADDR" || bad "GPULEASE_ADDR" "$GPULEASE_ADDR"
[ "${GPULEASE_PIN_SHA256-}" = "$GL_FP" ] && ok "GPULEASE_PIN_SHA256" ||
  bad "GPULEASE_PIN_SHA256" "${GPULEASE_PIN_SHA256-unset}"
shimdir=${LD_LIBRARY_PATH%%:*}
[ -f "$shimdir/libcuda.so.1" ] && ok "LD_LIBRARY_PATH starts with the shim's directory" ||
  bad "LD_LIBRARY_PATH starts with the shim's directory" "$LD_LIBRARY_PATH"
[ "${LD_LIBRARY_PATH#*:}" = /opt/keep/lib ] && ok "LD_LIBRARY_PATH keeps the old value after it" ||
  bad "LD_LIBRARY_PATH keeps the old value after it" "$LD_LIBRARY_PATH"
[ "${GPULEASE_CUDA_SHIM-}" = "$shimdir/libcuda.so.1" ] && ok "GPULEASE_CUDA_SHIM" ||
  bad "GPULEASE_CUDA_SHIM" "${GPULEASE_CUDA_SHIM-unset}"
[ "${NUMBA_CUDA_DRIVER-}" = "$shimdir/libcuda.so.1" ] && ok "NUMBA_CUDA_DRIVER" ||
  bad "NUMBA_CUDA_DRIVER" "${NUMBA_CUDA_DRIVER-unset}"
for v in GPULEASE_INSECURE GPULEASE_CA GPULEASE_CERT GPULEASE_KEY GPULEASE_TOKEN GPULEASE_TIMEOUT_MS; do
  if printenv "$v" > /dev/null; then bad "$v removed" "$v=$(printenv "$v")"; else ok "$v removed"; fi
done
[ "$*" = "--vram 2M --help -x" ] && ok "the words after -- are the command's" ||
  bad "the words after -- are the command's" "$*"
tr '\0' ' ' < /proc/$$/cmdline > "$GL_DIR/cmdline"
tr '\0' ' ' < /proc/$PPID/cmdline > "$GL_DIR/exec-cmdline"
grep -q "exec --vram 1MiB" "$GL_DIR/exec-cmdline" && ok "the parent is gpulease exec" ||
  bad "the parent is gpulease exec" "$(cat "$GL_DIR/exec-cmdline")"
if grep -q "$GPULEASE_SECRET" "$GL_DIR/cmdline" "$GL_DIR/exec-cmdline"; then
  bad "the secret is on no command line" "$(cat "$GL_DIR/cmdline")"
else
  ok "the secret is on no command line"
fi
"$GL_CLI" --addr "$GL_ADDR" --pin-sha256 "$GL_FP" lease show "$GPULEASE_LEASE" > "$GL_DIR/show" 2>&1
grep -q "vram       1048576 bytes" "$GL_DIR/show" && ok "the lease is live while the program runs" ||
  bad "the lease is live while the program runs" "$(cat "$GL_DIR/show")"
grep -q "ttl        300 s" "$GL_DIR/show" && ok "its TTL is the default 300 s" ||
  bad "its TTL is the default 300 s" "$(cat "$GL_DIR/show")"
EOF
unset NUMBA_CUDA_DRIVER GPULEASE_CUDA_LIBDIR GPULEASE_TOKEN
export GL_STALE_SECRET=$(printf '0%.0s' $(seq 80))
GPULEASE_INSECURE=1 GPULEASE_CA=/stale/ca.pem GPULEASE_CERT=/stale/c.pem GPULEASE_KEY=/stale/k.pem \
  GPULEASE_TIMEOUT_MS=1 LD_LIBRARY_PATH=/opt/keep/lib GPULEASE_SECRET=$GL_STALE_SECRET \
  cli exec --vram 1MiB -- sh -c "$(cat $dir/child.sh)" sh --vram 2M --help -x > $out 2> $err
check "exec runs the command" 0 $? "gpulease exec: lease [0-9]* (1 MiB, isolated, GPU 0) for sh" $err
while read -r line; do
  case $line in
    ok*) pass=$((pass+1)); echo "$line" ;;
    *) fail=$((fail+1)); echo "FAIL ${line#bad  }" ;;
  esac
done < $out
n=$(grep -c '^ok ' $out)
[ "$n" = 20 ] && check "the program made its 20 checks" 0 0 || check "the program made its 20 checks ($n ok)" 0 1
gone; check "the lease is freed when exec returns" 1 $? "lease show failed: NOT_FOUND" $dir/gone

# NUMBA_CUDA_DRIVER: set to the shim unless the parent has it.
cli exec --vram 1M --quiet -- sh -c 'printf %s "$NUMBA_CUDA_DRIVER"' > $out 2> $err
check "NUMBA_CUDA_DRIVER is the shim" 0 $? "/libcuda.so.1$" $out
[ -s $err ] && check "--quiet: nothing on stderr" 0 1 $err || check "--quiet: nothing on stderr" 0 0
NUMBA_CUDA_DRIVER=/my/libcuda.so cli exec --vram 1M -- sh -c 'printf %s "$NUMBA_CUDA_DRIVER"' > $out 2> $err
check "NUMBA_CUDA_DRIVER kept when set" 0 $? "^/my/libcuda.so$" $out

# Options given: in the environment, files as absolute paths.
(cd "$dir" && "$bin/cli/gpulease" --addr "127.0.0.1:$port" --insecure --cert cert.pem --key key.pem \
  --timeout 7 exec --vram 1M -- sh -c 'echo "$GPULEASE_INSECURE $GPULEASE_CERT $GPULEASE_KEY $GPULEASE_TIMEOUT_MS ${GPULEASE_PIN_SHA256-nopin}"') > $out 2> $err
check "given options reach the program" 0 $? "^1 $dir/cert.pem $dir/key.pem 7000 nopin$" $out

# Exit statuses.
cli exec --vram 1M -- sh -c 'printf %s "$GPULEASE_LEASE" > "$GL_DIR/lease"; printf %s "$GPULEASE_SECRET" > "$GL_DIR/secret"; exit 7' > $out 2> $err
check "the program's exit status" 7 $?
gone; check "freed after a failing program" 1 $? "NOT_FOUND" $dir/gone
cli exec --vram 1M -- sh -c 'kill -TERM $$' > $out 2> $err
check "killed by SIGTERM: 128+15" 143 $?
cli exec --vram 1M -- no-such-command-here > $out 2> $err
check "a missing command: 127" 127 $? "gpulease exec: no-such-command-here: command not found" $err
printf 'echo hi\n' > $dir/not-exec; chmod 644 $dir/not-exec
cli exec --vram 1M -- $dir/not-exec > $out 2> $err
check "a command that is not executable: 126" 126 $? "not-exec: Permission denied" $err
cli --json inventory > $out 2> $err
check "no lease left behind" 0 $? '"active_leases": 0' $out

# Usage errors: no lease is taken.
cli exec -- true > $out 2> $err;             check "usage: no --vram" 2 $? "exec needs --vram BYTES" $err
cli exec --vram 1M > $out 2> $err;           check "usage: no command" 2 $? "exec needs a command" $err
cli exec --vram 1M -- > $out 2> $err;        check "usage: nothing after --" 2 $? "exec needs a command" $err
cli exec --vram 1M true > $out 2> $err;      check "usage: the command without --" 2 $? "goes after '--'" $err
cli exec --vram 1M --kernel k -- true > $out 2> $err
check "usage: an option not for exec" 2 $? "does not apply to 'exec'" $err
cli exec --help > $out 2> $err;              check "exec --help" 0 $? "COMMAND \[ARGS...\]" $out
cli exec --vram 1M -- sh -c 'echo "$1"' sh --help > $out 2> $err
check "--help after -- is the command's" 0 $? "^--help$" $out

# The shim's directory.
mkdir -p $dir/empty $dir/shim
: > $dir/shim/libcuda.so.1
GPULEASE_CUDA_LIBDIR=$dir/empty cli exec --vram 1M -- true > $out 2> $err
check "no shim in \$GPULEASE_CUDA_LIBDIR: exit 1" 1 $? "no libcuda.so.1 in \$GPULEASE_CUDA_LIBDIR ($dir/empty)" $err
GPULEASE_CUDA_LIBDIR=$dir/shim LD_LIBRARY_PATH= cli exec --vram 1M -- sh -c 'echo "$LD_LIBRARY_PATH"' > $out 2> $err
check "\$GPULEASE_CUDA_LIBDIR is the shim's directory" 0 $? "^$dir/shim$" $out
cp "$bin/cli/gpulease" $dir/gpulease-copy
"$dir/gpulease-copy" --addr "127.0.0.1:$port" --pin-sha256 "$fp" exec --vram 1M -- true > $out 2> $err
check "a copy outside the build tree does not take the tree's shim" 1 $? "is not installed: looked in $dir/" $err

# The renewer keeps a short lease alive; a lease lost while the program runs
# is reported and the program runs on.
cli exec --vram 1M --ttl 2 -- sh -c 'sleep 3.5; "$GL_CLI" --addr "$GL_ADDR" --pin-sha256 "$GL_FP" lease show "$GPULEASE_LEASE"' > $out 2> $err
check "a 2 s lease renewed past its TTL" 0 $? "ttl        2 s" $out
cli exec --vram 1M --ttl 2 -- sh -c '"$GL_CLI" --addr "$GL_ADDR" --pin-sha256 "$GL_FP" lease free "$GPULEASE_LEASE" && sleep 3 && echo ran-on' > $out 2> $err
check "a lost lease: reported" 0 $? "gpulease exec: the lease was lost: [A-Z_]*: " $err
check "a lost lease: the program ran on" 0 0 "^ran-on$" $out
grep -q "freeing lease" $err && check "a lost lease: not freed again" 0 1 $err || check "a lost lease: not freed again" 0 0

# Signals go to the program; exec then frees the lease and exits with the
# program's status. (exec itself, not through cli(), so that $! is its pid.)
rm -f $dir/lease $dir/secret
"$GL_CLI" --addr "$GL_ADDR" --pin-sha256 "$GL_FP" exec --vram 1M -- sh -c 'trap "exit 9" TERM; printf %s "$GPULEASE_SECRET" > "$GL_DIR/secret"; printf %s "$GPULEASE_LEASE" > "$GL_DIR/lease"; while :; do sleep 0.1; done' > $out 2> $err &
epid=$!
for _ in $(seq 1 100); do [ -s $dir/lease ] && break; sleep 0.1; done
kill -TERM $epid
wait $epid
check "SIGTERM goes to the program (it exits 9)" 9 $?
gone; check "freed after a signal" 1 $? "NOT_FOUND" $dir/gone
rm -f $dir/lease
"$GL_CLI" --addr "$GL_ADDR" --pin-sha256 "$GL_FP" exec --vram 1M -- sh -c 'printf %s "$GPULEASE_LEASE" > "$GL_DIR/lease"; while :; do sleep 0.1; done' > $out 2> $err &
epid=$!
for _ in $(seq 1 100); do [ -s $dir/lease ] && break; sleep 0.1; done
kill -HUP $epid
wait $epid
check "SIGHUP kills the program: 128+1" 129 $?
cli --json inventory > $out 2> $err
check "no lease left behind at the end" 0 $? '"active_leases": 0' $out

echo "$pass passed, $fail failed"
[ $fail = 0 ]
