#!/usr/bin/env bash
# nccl_profiler_gpu.sh - what the NCCL profiler plugin costs a real job: fabric-nccltest's
# nccl backend, all-reduce at 8 B and at 64 MiB, with NCCL_PROFILER_PLUGIN naming the
# built plugin and without it, alternating in one run; per size the median time of each
# and their ratio (goal: within 1%). Needs a GPU machine: elsewhere it says so and exits 77.
#
#   scripts/bench/nccl_profiler_gpu.sh [ROUNDS] [RANKS] [ITERS]
#     defaults: 9 rounds, one rank per visible GPU, 200 iterations
# Extra mpirun arguments (hosts, transports) go in MPIRUN_ARGS.
set -euo pipefail

ROUNDS=${1:-9}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib/nccltest_compare.sh
. "$ROOT/scripts/bench/lib/nccltest_compare.sh"
BUILD=${FABRIC_BUILD:-$ROOT/build/release}
NCCLTEST=$BUILD/nccltest/fabric-nccltest
PLUGIN=$BUILD/exporters/nccl_profiler/libnccl-profiler-fabric.so
MPIRUN=$(realpath "$(command -v mpirun)")
require_nccl_backend nccl_profiler_gpu.sh "$NCCLTEST" "$PLUGIN" "$MPIRUN"
GPUS=$(nvidia-smi -L 2>/dev/null | wc -l)
RANKS=${2:-${GPUS:-1}}
ITERS=${3:-200}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck disable=SC2206 # MPIRUN_ARGS is a list of words by design
launch=("$MPIRUN" -np "$RANKS" ${MPIRUN_ARGS:-})

# run LABEL [mpirun -x ...]: both sizes, out-of-place time (us) per size, to $WORK/LABEL.
run() {
  local label=$1 round=$2 size
  shift 2
  for size in 8 64M; do
    "${launch[@]}" "$@" "$NCCLTEST" --backend nccl -b "$size" -e "$size" -n "$ITERS" -w 20 -c 0 |
      awk -v r="$round" '!/^#/ && NF == 13 { print r, $1, $6 }' >>"$WORK/$label"
  done
}
for ((round = 0; round < ROUNDS; round++)); do
  if ((round % 2 == 0)); then
    run without "$round"
    run with "$round" -x "NCCL_PROFILER_PLUGIN=$PLUGIN" -x "FABRIC_NCCL_DIR=$WORK"
  else
    run with "$round" -x "NCCL_PROFILER_PLUGIN=$PLUGIN" -x "FABRIC_NCCL_DIR=$WORK"
    run without "$round"
  fi
done
ls "$WORK"/nccl-*.prof >/dev/null 2>&1 || { echo "nccl_profiler_gpu.sh: the plugin wrote no file: was it loaded?" >&2; exit 1; }

printf 'all-reduce with and without the fabric NCCL profiler plugin: %d ranks, %d iterations,\n' "$RANKS" "$ITERS"
printf 'median of %d alternating rounds; load average %s\n' "$ROUNDS" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%12s  %14s  %14s  %7s\n' "size (B)" "without (us)" "with (us)" "ratio"
for size in $(awk '{ print $2 }' "$WORK/without" | sort -un); do
  a=$(awk -v s="$size" '$2 == s { print $3 }' "$WORK/without" | median)
  b=$(awk -v s="$size" '$2 == s { print $3 }' "$WORK/with" | median)
  awk -v s="$size" -v a="$a" -v b="$b" 'BEGIN { printf "%12d  %14.2f  %14.2f  %7.3f\n", s, a, b, b / a }'
done
