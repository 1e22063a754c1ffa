#!/bin/sh
# TENSORMAP_ENCODE on the node's GPU (H100/H200): a 2D TMA copy through the
# client library with a tensor map the daemon builds (tests/gpu/tmap_check.c).
# Needs only BUILD_DIR's gpuleased and tmap_check (cmake --build BUILD_DIR
# --target tmap_check: BUILD_DIR/tests/tmap_check) and the checked-in tests/emu/async/async_sm90a.ptx.
# Prints the rows and a last line PASS or FAIL; exit status 0 on PASS.
#   tests/gpu/tmap_check.sh BUILD_DIR [--emu]
set -u
build=${1:?usage: tmap_check.sh BUILD_DIR [--emu]}
here=$(cd "$(dirname "$0")" && pwd)
ptx=$here/../emu/async/async_sm90a.ptx
for f in "$build/src/daemon/gpuleased" "$build/tests/tmap_check" "$ptx"; do
  if [ ! -e "$f" ]; then
    echo "missing $f"
    echo FAIL
    exit 1
  fi
done
exec "$build/tests/tmap_check" "$build" "$ptx" ${2:-}
