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
BUILD=${FABRIC_BUILD:-$ROOT/build/release}
NCCLTEST=$BUILD/nccltest/fabric-nccltest
BARE=$BUILD/tests/fabric_bench_bare_nccl_allreduce
MPIRUN=$(realpath "$(command -v mpirun)")
for tool in "$NCCLTEST" "$BARE" "$MPIRUN"; do
  [[ -x $tool ]] || { echo "nccltest_nccl_vs_bare.sh: $tool is missing (a release tree built with NCCL)" >&2; exit 2; }
done
if ! probe=$("$NCCLTEST" --backend nccl -b 8 -e 8 -n 1 -w 0 -c 0 2>&1 >/dev/null); then
  echo "nccltest_nccl_vs_bare.sh: the nccl backend cannot run here: ${probe##*: }" >&2
  exit 77
fi
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
  "${launch[@]}" "$BARE" 8 "$MAX_BYTES" "$ITERS" 1 | awk -v r="$round" '{ print r, $1, $3 }' >>"$WORK/bare"
  "${launch[@]}" "$NCCLTEST" --backend nccl -b 8 -e "$MAX_BYTES" -f 2 -n "$ITERS" -w 0 -c 0 |
    awk -v r="$round" '!/^#/ && NF == 13 { print r, $1, $8 }' >>"$WORK/nccltest"
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf 'fabric-nccltest (nccl backend) against a bare ncclAllReduce loop: %d ranks, float sum,\n' "$RANKS"
printf '%d iterations per size, median of %d alternating rounds; load average %s\n' \
  "$ITERS" "$ROUNDS" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%12s  %12s  %12s  %7s\n' "size (B)" "bare GB/s" "nccltest GB/s" "ratio"
for size in $(awk '{ print $2 }' "$WORK/bare" | sort -un); do
  b=$(awk -v s="$size" '$2 == s { print $3 }' "$WORK/bare" | median)
  n=$(awk -v s="$size" '$2 == s { print $3 }' "$WORK/nccltest" | median)
  awk -v s="$size" -v b="$b" -v n="$n" 'BEGIN { printf "%12d  %12.4f  %12.4f  %7.3f\n", s, b, n, (b > 0 ? n / b : 0) }'
  awk -v b="$b" -v n="$n" 'BEGIN { if (b > 0 && n > 0) print log(n / b) }' >>"$WORK/logratio"
done
awk '{ s += $1 } END { printf "busbw ratio nccltest/bare, geometric mean over sizes: %.3f\n", exp(s / NR) }' "$WORK/logratio"
