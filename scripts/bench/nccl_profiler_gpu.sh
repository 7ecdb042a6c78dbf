#!/usr/bin/env bash
# nccl_profiler_gpu.sh - what the NCCL profiler plugin costs a real job: fabric-nccltest's
# nccl backend, all-reduce at 8 B and at 64 MiB, eager and captured in a CUDA graph,
# without the plugin and with it under each event set (FABRIC_NCCL_EVENTS=counted, timed),
# alternating in one run; per mode and size the median time of each and the ratio to the
# run without (goal: within 1%). Needs a GPU machine: elsewhere it says so and exits 77,
# so a GPU check can call it and report the skip.
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

# The event sets the plugin offers (FABRIC_NCCL_EVENTS), each against a run without it.
SETS=(counted timed)

# run LABEL ROUND [mpirun -x ...]: both sizes, eager and graph-captured (-G: the timed
# iterations captured once in a CUDA graph, launched 5 times), out-of-place time (us) per
# size, as "round mode size time" lines in $WORK/LABEL.
run() {
  local label=$1 round=$2 size mode
  shift 2
  for mode in eager graph; do
    local graph=()
    [[ $mode == graph ]] && graph=(-G 5)
    for size in 8 64M; do
      "${launch[@]}" "$@" "$NCCLTEST" --backend nccl -b "$size" -e "$size" -n "$ITERS" -w 20 -c 0 \
        "${graph[@]}" |
        awk -v r="$round" -v m="$mode" '!/^#/ && NF == 13 { print r, m, $1, $6 }' >>"$WORK/$label"
    done
  done
}
with_plugin() {
  run "$1" "$2" -x "NCCL_PROFILER_PLUGIN=$PLUGIN" -x "FABRIC_NCCL_DIR=$WORK" -x "FABRIC_NCCL_EVENTS=$1"
}
# Alternating, the order turned every round, so that drift hits every variant alike.
for ((round = 0; round < ROUNDS; round++)); do
  if ((round % 2 == 0)); then
    run without "$round"
    for set in "${SETS[@]}"; do with_plugin "$set" "$round"; done
  else
    for set in "${SETS[@]}"; do with_plugin "$set" "$round"; done
    run without "$round"
  fi
done
ls "$WORK"/nccl-*.prof >/dev/null 2>&1 || { echo "nccl_profiler_gpu.sh: the plugin wrote no file: was it loaded?" >&2; exit 1; }

printf 'all-reduce with and without the fabric NCCL profiler plugin: %d ranks, %d iterations,\n' "$RANKS" "$ITERS"
printf 'median of %d alternating rounds; load average %s; ratio = with / without (goal <= 1.010)\n' \
  "$ROUNDS" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%6s  %12s  %14s' "mode" "size (B)" "without (us)"
for set in "${SETS[@]}"; do printf '  %12s  %7s' "$set (us)" "ratio"; done
printf '\n'
for mode in eager graph; do
  for size in $(awk -v m="$mode" '$2 == m { print $3 }' "$WORK/without" | sort -un); do
    a=$(awk -v m="$mode" -v s="$size" '$2 == m && $3 == s { print $4 }' "$WORK/without" | median)
    printf '%6s  %12d  %14.2f' "$mode" "$size" "$a"
    for set in "${SETS[@]}"; do
      b=$(awk -v m="$mode" -v s="$size" '$2 == m && $3 == s { print $4 }' "$WORK/$set" | median)
      awk -v a="$a" -v b="$b" 'BEGIN { printf "  %12.2f  %7.3f", b, b / a }'
    done
    printf '\n'
  done
done
