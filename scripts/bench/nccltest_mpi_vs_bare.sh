#!/usr/bin/env bash
# nccltest_mpi_vs_bare.sh - fabric-nccltest's mpi backend against a bare timed loop of the
# same MPI_Allreduce (tests/bench/bare_mpi_allreduce.c): the same ranks, sizes and
# iterations, alternating in one run; per-size median busbw of each and their ratio, and
# the start-up time to the first timed iteration of each (launch to the first result row
# of an 8-byte run).
#
#   scripts/bench/nccltest_mpi_vs_bare.sh [ROUNDS] [RANKS] [MAX_BYTES] [ITERS]
#     defaults: 5 rounds, 4 ranks, 64 MiB, 20 iterations (sizes 8 B doubling to MAX_BYTES)
# Builds nothing: uses build/release (FABRIC_BUILD to change it). Open MPI on loopback.
set -euo pipefail

ROUNDS=${1:-5}
RANKS=${2:-4}
MAX_BYTES=${3:-67108864}
ITERS=${4:-20}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib/nccltest_compare.sh
. "$ROOT/scripts/bench/lib/nccltest_compare.sh"
BUILD=${FABRIC_BUILD:-$ROOT/build/release}
NCCLTEST=$BUILD/nccltest/fabric-nccltest
BARE=$BUILD/tests/fabric_bench_bare_mpi_allreduce
MPIRUN=$(realpath "$(command -v mpirun)")
for tool in "$NCCLTEST" "$BARE" "$MPIRUN"; do
  [[ -x $tool ]] || { echo "nccltest_mpi_vs_bare.sh: $tool is missing (build the release tree)" >&2; exit 2; }
done
# Loopback only, as the mpi test tier runs.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader,tcp \
  OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_plm=isolated \
  OMPI_MCA_rmaps_base_oversubscribe=1
launch=("$MPIRUN" -np "$RANKS" --oversubscribe)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# Microseconds from launch to the first result row on stdout.
first_row_us() {
  local start=$EPOCHREALTIME line first=""
  while IFS= read -r line; do
    if [[ -z $first && $line =~ ^[[:space:]]*[0-9] ]]; then first=$EPOCHREALTIME; fi
  done < <("$@" 2>/dev/null)
  awk -v a="$start" -v b="$first" 'BEGIN { printf "%.0f\n", (b - a) * 1e6 }'
}

for ((round = 0; round < ROUNDS; round++)); do
  # Bandwidth: the bare loop, then fabric-nccltest (out-of-place columns, no data check,
  # one untimed call per size as both do).
  # Both report the time per call (us); busbw is computed here from it, with the same
  # formula, so that the table's two decimals of GB/s do not hide small sizes.
  "${launch[@]}" "$BARE" 8 "$MAX_BYTES" "$ITERS" 1 | awk -v r="$round" '{ print r, $1, $2 }' >>"$WORK/bare"
  "${launch[@]}" "$NCCLTEST" --backend mpi -b 8 -e "$MAX_BYTES" -f 2 -n "$ITERS" -w 0 -c 0 |
    awk -v r="$round" '!/^#/ && NF == 13 { print r, $1, $6 }' >>"$WORK/nccltest"
  first_row_us "${launch[@]}" "$BARE" 8 8 1 0 >>"$WORK/bare.start"
  first_row_us "${launch[@]}" "$NCCLTEST" --backend mpi -b 8 -e 8 -n 1 -w 0 -c 0 >>"$WORK/nccltest.start"
done

printf 'fabric-nccltest (mpi backend) against a bare MPI_Allreduce loop: %d ranks, float sum,\n' "$RANKS"
printf '%d iterations per size, median of %d alternating rounds; load average %s\n' \
  "$ITERS" "$ROUNDS" "$(cut -d' ' -f1-3 /proc/loadavg)"
summarize_allreduce "$WORK" "$RANKS"
bs=$(median <"$WORK/bare.start")
ns=$(median <"$WORK/nccltest.start")
awk -v bs="$bs" -v ns="$ns" -v r="$RANKS" 'BEGIN {
  printf "start-up to the first timed iteration, %d ranks: bare %.1f ms, nccltest %.1f ms, ratio %.2f\n", r, bs / 1e3, ns / 1e3, ns / bs
}'
