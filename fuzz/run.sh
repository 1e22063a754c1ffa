#!/bin/sh
# fuzz/run.sh [SECONDS] - fuzz the gpulease/1 wire codec for SECONDS (default
# 30) with libFuzzer, ASan and UBSan.
#
# Configures a clang build in build-fuzz/ with -DGL_FUZZ=ON, builds
# fuzz_wire, and runs it over a scratch copy of tests/fuzz-corpus/wire/ (the
# checked-in corpus is never modified). Exits non-zero when the fuzzer finds
# a crash, a leak or a violated property; the reproducer is left in
# build-fuzz/artifacts/ - copy it into tests/fuzz-corpus/wire/ once fixed so
# fuzz_wire_replay keeps testing it.
#
# Environment: CC (default clang), FUZZ_JOBS (build parallelism, default 2),
# FUZZ_ARGS (extra libFuzzer flags).
set -eu

secs=${1:-30}
case $secs in
  '' | *[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-fuzz

CC=${CC:-clang} cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGL_FUZZ=ON -DGL_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j"${FUZZ_JOBS:-2}" --target fuzz_wire

work=$build/corpus-wire
rm -rf "$work"
mkdir -p "$work" "$build/artifacts"
cp "$root"/tests/fuzz-corpus/wire/* "$work"/

echo "fuzz_wire: ${secs}s over $(ls "$work" | wc -l) seeds"
# libFuzzer exits non-zero on any crash, leak or abort, which set -e turns
# into this script's failure.
# shellcheck disable=SC2086
"$build/fuzz/fuzz_wire" -max_total_time="$secs" -print_final_stats=1 \
  -max_len=20000 -artifact_prefix="$build/artifacts/" ${FUZZ_ARGS:-} "$work"
echo "fuzz_wire: no crash in ${secs}s"
