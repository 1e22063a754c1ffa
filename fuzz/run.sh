#!/bin/sh
# fuzz/run.sh [SECONDS] - fuzz the gpulease/1 wire codec (fuzz_wire), the
# emulated device's PTX parser (fuzz_ptx), the lease secrets' checks
# (fuzz_cap), a fatbin's container (fuzz_fatbin) and the Prometheus text
# parser of `gpulease top`
# (fuzz_prom_text) with libFuzzer, ASan and UBSan, each for SECONDS
# (default 30).
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
# FUZZ_ARGS (extra libFuzzer flags), FUZZ_TARGETS (default "wire ptx cap
# prom_text"). prom_text has no checked-in corpus: its seeds are written
# below.
set -eu

secs=${1:-30}
case $secs in
  '' | *[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-fuzz
targets=${FUZZ_TARGETS:-wire ptx cap fatbin prom_text}

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
    fatbin) maxlen=16384 ;;
    prom_text) maxlen=65536 ;;
    *) echo "unknown fuzz target $t" >&2; exit 2 ;;
  esac
  work=$build/corpus-$t
  rm -rf "$work"
  mkdir -p "$work"
  if [ "$t" = prom_text ]; then
    # seeds: the shapes of a gpuleased exposition, escapes, special values
    printf '# HELP gpulease_leases_acquired_total Leases granted.\n# TYPE gpulease_leases_acquired_total counter\ngpulease_leases_acquired_total 7\ngpulease_leases_dropped_total{reason="freed"} 2\n' > "$work/counters"
    printf 'gpulease_request_duration_seconds_bucket{op="GPU_SUBMIT",le="0.001"} 3\ngpulease_request_duration_seconds_bucket{op="GPU_SUBMIT",le="+Inf"} 4\ngpulease_request_duration_seconds_sum{op="GPU_SUBMIT"} 0.004100000\ngpulease_request_duration_seconds_count{op="GPU_SUBMIT"} 4\n' > "$work/histogram"
    printf 'gpulease_leases{gpu="0",uuid="GPU-1"} 1\r\ngpulease_gpu_utilization_ratio{gpu="0",uuid="GPU-1"} 0.25 1700000000000\nm{a="x\\\\y\\"z\\n",b=""} NaN\nm -Inf\nm{} 1e-3' > "$work/labels"
  else
    cp "$root"/tests/fuzz-corpus/"$t"/* "$work"/
  fi

  echo "fuzz_$t: ${secs}s over $(ls "$work" | wc -l) seeds"
  # libFuzzer exits non-zero on any crash, leak or abort, which set -e
  # turns into this script's failure.
  # shellcheck disable=SC2086
  "$build/fuzz/fuzz_$t" -max_total_time="$secs" -print_final_stats=1 \
    -max_len="$maxlen" -artifact_prefix="$build/artifacts/" ${FUZZ_ARGS:-} "$work"
  echo "fuzz_$t: no crash in ${secs}s"
done
