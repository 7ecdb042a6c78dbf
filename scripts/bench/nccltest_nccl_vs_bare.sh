#!/usr/bin/env bash
# nccltest_nccl_vs_bare.sh - fabric-nccltest's nccl backend against a bare timed loop of the
# same ncclAllReduce (tests/bench/bare_nccl_allreduce.cpp): one rank per GPU, the same
# sizes and iterations, alternating in one run; per-size median busbw and their ratio.
# Needs a GPU machine: elsewhere it says so and exits 77.
#
#   scripts/bench/nccltest_nccl_vs_bare.sh [ROUNDS] [RANKS] [MAX_BYTES] [ITERS]
#     defaults: 5 rounds, one rank per visible GPU, 64 MiB, 20 iterations
# Extra mpirun arguments (hosts, transports) go in MPIRUN_ARGS.
set -euo pipefail

ROUNDS=${1:-5}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib/nccltest_compare.sh
. "$ROOT/scripts/bench/lib/nccltest_compare.sh"
BUILD=${FABRIC_BUILD:-$ROOT/build/release}
NCCLTEST=$BUILD/nccltest/fabric-nccltest
BARE=$BUILD/tests/fabric_bench_bare_nccl_allreduce
MPIRUN=$(realpath "$(command -v mpirun)")
require_nccl_backend nccltest_nccl_vs_bare.sh "$NCCLTEST" "$BARE" "$MPIRUN"
GPUS=$(nvidia-smi -L 2>/dev/null | wc -l)
RANKS=${2:-${GPUS:-1}}
MAX_BYTES=${3:-67108864}
ITERS=${4:-20}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck disable=SC2206 # MPIRUN_ARGS is a list of words by design
launch=("$MPIRUN" -np "$RANKS" ${MPIRUN_ARGS:-})
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

for ((round = 0; round < ROUNDS; round++)); do
  "${launch[@]}" "$BARE" 8 "$MAX_BYTES" "$ITERS" 1 | awk -v r="$round" '{ print r, $1, $2 }' >>"$WORK/bare"
  "${launch[@]}" "$NCCLTEST" --backend nccl -b 8 -e "$MAX_BYTES" -f 2 -n "$ITERS" -w 0 -c 0 |
    awk -v r="$round" '!/^#/ && NF == 13 { print r, $1, $6 }' >>"$WORK/nccltest"
done

printf 'fabric-nccltest (nccl backend) against a bare ncclAllReduce loop: %d ranks, float sum,\n' "$RANKS"
printf '%d iterations per size, median of %d alternating rounds; load average %s\n' \
  "$ITERS" "$ROUNDS" "$(cut -d' ' -f1-3 /proc/loadavg)"
summarize_allreduce "$WORK" "$RANKS"
