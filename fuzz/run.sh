#!/bin/sh
# fuzz/run.sh [SECONDS] - fuzz the gpulease/1 wire codec (fuzz_wire), the
# emulated device's PTX parser (fuzz_ptx) and the lease secrets' checks
# (fuzz_cap) with libFuzzer, ASan and UBSan, each for SECONDS (default 30).
#
# Configures a clang build in build-fuzz/ with -DGL_FUZZ=ON, builds both
# harnesses, and runs each over a scratch copy of its seed corpus
# (tests/fuzz-corpus/wire/ and tests/fuzz-corpus/ptx/; the checked-in
# corpora are never modified). Exits non-zero when a fuzzer finds a crash,
# a leak or a violated property; the reproducer is left in
# build-fuzz/artifacts/ - copy it into the harness's corpus directory once
# fixed so fuzz_wire_replay / fuzz_ptx_replay keep testing it.
#
# Environment: CC (default clang), FUZZ_JOBS (build parallelism, default 2),
# FUZZ_ARGS (extra libFuzzer flags), FUZZ_TARGETS (default "wire ptx cap").
set -eu

secs=${1:-30}
case $secs in
  '' | *[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-fuzz
targets=${FUZZ_TARGETS:-wire ptx cap}

CC=${CC:-clang} cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGL_FUZZ=ON -DGL_WERROR=ON -DGL_BUILD_TESTS=OFF >/dev/null
for t in $targets; do
  cmake --build "$build" -j"${FUZZ_JOBS:-2}" --target "fuzz_$t"
done

mkdir -p "$build/artifacts"
for t in $targets; do
  case $t in
    wire) maxlen=20000 ;;
    ptx) maxlen=65536 ;;
    cap) maxlen=512 ;;
    *) echo "unknown fuzz target $t" >&2; exit 2 ;;
  esac
  work=$build/corpus-$t
  rm -rf "$work"
  mkdir -p "$work"
  cp "$root"/tests/fuzz-corpus/"$t"/* "$work"/

  echo "fuzz_$t: ${secs}s over $(ls "$work" | wc -l) seeds"
  # libFuzzer exits non-zero on any crash, leak or abort, which set -e
  # turns into this script's failure.
  # shellcheck disable=SC2086
  "$build/fuzz/fuzz_$t" -max_total_time="$secs" -print_final_stats=1 \
    -max_len="$maxlen" -artifact_prefix="$build/artifacts/" ${FUZZ_ARGS:-} "$work"
  echo "fuzz_$t: no crash in ${secs}s"
done
