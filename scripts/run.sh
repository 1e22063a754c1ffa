#!/usr/bin/env bash
# The main job: start gpuleased on loopback, then lease a GPU and run the
# iota kernel on it through the CLI. On a machine without a GPU the daemon
# offers its emulated device (PTX run on the CPU) and the kernel runs there.
# Usage: scripts/run.sh [BUILD_DIR]
set -uo pipefail
build=${1:-build}
bin=$build/src
state=$(mktemp -d /tmp/gpulease-run.XXXXXX)
ready=$state/ready
"$bin/daemon/gpuleased" --listen 127.0.0.1:0 --state-dir "$state" --ready-file "$ready" \
  2> "$state/daemon.log" &
daemon=$!
cleanup() { kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; rm -rf "$state"; }
trap cleanup EXIT
for _ in $(seq 1 300); do [ -s "$ready" ] && break; sleep 0.1; done
if [ ! -s "$ready" ]; then
  echo "gpuleased did not start:" >&2; cat "$state/daemon.log" >&2; exit 1
fi
read -r port fp < "$ready"
cli=("$bin/cli/gpulease" --addr "127.0.0.1:$port" --pin-sha256 "$fp")
echo "== gpuleased on 127.0.0.1:$port (certificate $fp)"
echo "== gpulease inventory"
"${cli[@]}" inventory || exit 1
echo "== gpulease submit --binary iota.ptx --kernel iota --grid 1,1,1 --block 256,1,1 --output-size 1024 --format f32"
"${cli[@]}" submit --binary "$build/kernels/iota.ptx" --kernel iota \
  --grid 1,1,1 --block 256,1,1 --output-size 1024 --format f32
rc=$?
if [ $rc -eq 0 ] && "${cli[@]}" --json inventory | grep -q '"emulated": true'; then
  echo
  echo "No GPU on this machine: iota ran on gpuleased's emulated device (PTX interpreted"
  echo "on the CPU). On a node with an NVIDIA GPU the same command runs on the GPU."
fi
exit $rc
