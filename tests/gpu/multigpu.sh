#!/usr/bin/env bash
# On a machine with several GPUs (issue 17; issue 16's pool on a GPU node),
# from a build folder carried there (scripts/carry.sh):
#   LD_LIBRARY_PATH=.carry/lib tests/gpu/multigpu.sh .carry
# Prints the GPUs, the table of tests/gpu/multigpu_check.c (inventory
# against nvidia-smi, placement, concurrency, isolation, accounting, the
# pool over the node's GPUs and over two daemons with one killed), then
# the pool benchmark (bench/pool_bench.c) over 1, 2 and 4 daemons against
# serial submits and the local driver, same run.
set -uo pipefail
B=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
echo "== GPUs"
nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.free,compute_cap,driver_version \
  --format=csv
echo "== one daemon, every GPU (tests/gpu/multigpu_check.c)"
"$B/tests/multigpu_check" "$B"
rc=$?
echo "== the pool benchmark (bench/pool_bench.c): 1,000 chunks of 4 KiB, shared leases"
"$here/../../scripts/bench_pool.sh" "$B" --daemons 4 -- --reps 5 || rc=1
exit $rc
