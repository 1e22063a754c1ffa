#!/usr/bin/env bash
# The Python example (python/examples/quickstart.py) against a gpuleased of
# this build, as scripts/run.sh does for the CLI: the daemon on loopback
# (the emulated device where there is no GPU), the package from python/src
# over this build's libgpulease, Debian's python3 and numpy.
# Usage: scripts/run_python.sh [BUILD_DIR]
set -uo pipefail
build=$(cd "${1:-build}" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
state=$(mktemp -d /tmp/gpulease-run.XXXXXX)
"$build/src/daemon/gpuleased" --listen 127.0.0.1:0 --state-dir "$state" \
  --ready-file "$state/ready" --config none 2> "$state/daemon.log" &
daemon=$!
cleanup() { kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; rm -rf "$state"; }
trap cleanup EXIT
for _ in $(seq 1 300); do [ -s "$state/ready" ] && break; sleep 0.1; done
if ! read -r port fp < "$state/ready"; then
  echo "gpuleased did not start:" >&2; cat "$state/daemon.log" >&2; exit 1
fi
echo "== python3 python/examples/quickstart.py 127.0.0.1:$port $fp build/kernels/vector_add.ptx"
PYTHONPATH="$root/python/src" GPULEASE_LIBRARY="$(ls "$build"/src/lib/libgpulease.so.1)" \
  /usr/bin/python3 "$root/python/examples/quickstart.py" "127.0.0.1:$port" "$fp" \
  "$build/kernels/vector_add.ptx"
