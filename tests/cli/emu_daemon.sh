# emu_daemon.sh - sourced by the CLI tests: starts gpuleased on the emulated
# device (64 MiB, TTLs up to 60 s, its log in $dir/daemon.log) in a fresh
# folder $dir that goes when the test exits, and gives cli (the gpulease
# CLI against it), check and the counters pass and fail.
# Before sourcing: build (the build folder). After: port, fp, daemon, dir.
bin=$build/src
dir=$(mktemp -d /tmp/gl-cli-XXXXXX)
"$bin/daemon/gpuleased" --device emu --emu-vram 64M --listen 127.0.0.1:0 --state-dir "$dir" \
  --ready-file "$dir/ready" --max-ttl 60 ${GL_DAEMON_ARGS:-} 2> "$dir/daemon.log" &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 300); do [ -s "$dir/ready" ] && break; sleep 0.1; done
read -r port fp < "$dir/ready"
cli() { "$bin/cli/gpulease" --addr "127.0.0.1:$port" --pin-sha256 "$fp" "$@"; }
pass=0 fail=0
check() { # check NAME EXPECTED_RC ACTUAL_RC [PATTERN FILE]
  local ok=1
  [ "$2" = "$3" ] || ok=0
  if [ $# -ge 5 ] && ! grep -q -- "$4" "$5"; then ok=0; fi
  if [ $ok = 1 ]; then pass=$((pass+1)); echo "ok   $1";
  else fail=$((fail+1)); echo "FAIL $1 (rc $3, want $2)"; [ $# -ge 5 ] && cat "$5"; fi
}
