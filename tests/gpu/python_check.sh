#!/usr/bin/env bash
# The Python package on a GPU node: its pytest suite with GL_TEST_DEVICE=cuda
# (a daemon of BUILD_DIR on the node's GPUs), the package installed from a
# wheel built elsewhere (`make check-wheel`) into a folder of its own on
# PYTHONPATH, for the node's python3 and its numpy; cffi and pytest come
# from WHEEL_DIR when the node has none (no package index there):
#   tests/gpu/python_check.sh BUILD_DIR WHEEL_DIR
# libgpulease's own libraries (ngtcp2) travel in BUILD_DIR/lib.
set -uo pipefail
B=$(cd "${1:?BUILD_DIR}" && pwd)
WH=$(cd "${2:?WHEEL_DIR}" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/gl-pysite-XXXXXX)
trap 'rm -rf "$T"' EXIT
py=$(command -v python3)
export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH=$T
echo "== $($py --version) at $py; numpy $($py -c 'import numpy; print(numpy.__version__)' 2>&1)"
need=()
$py -c 'import cffi' 2>/dev/null || need+=(cffi)
$py -c 'import pytest' 2>/dev/null || need+=(pytest)
[ ${#need[@]} -eq 0 ] || $py -m pip install -q --no-index --find-links "$WH" --target "$T" "${need[@]}" || exit 1
$py -m pip install -q --no-index --no-deps --target "$T" "$WH"/gpulease-*.whl || exit 1
$py -c 'import gpulease, cffi; print("gpulease", gpulease.__version__, "with", gpulease.LIBRARY_PATH, "; cffi", cffi.__version__)' || exit 1
cd "$T" && GL_TEST_DEVICE=cuda GL_TEST_BIN_DIR="$B" $py -m pytest -q -p no:cacheprovider -rs "$src/python/tests"
