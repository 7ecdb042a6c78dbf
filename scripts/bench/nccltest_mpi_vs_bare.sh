#!/usr/bin/env bash
# nccltest_mpi_vs_bare.sh - fabric-nccltest's mpi backend against a bare timed loop of the
# same MPI_Allreduce (tests/bench/bare_mpi_allreduce.c): the same ranks, sizes, iterations,
# warm-up and buffer rotation (each call at its slot of the -e sized buffers, as nccl-tests
# does), alternating in one run; per-size median busbw of each and their ratio, the same
# ratio from each size's fastest round of each (interference only slows), the geometric
# mean of the ratios per round (its spread says what the figure can resolve), and
# the start-up time to the first timed iteration of each (launch to the first result row
# of an 8-byte run).
#
#   scripts/bench/nccltest_mpi_vs_bare.sh [ROUNDS] [RANKS] [MAX_BYTES] [ITERS] [WARMUP] [SMALL_ITERS]
#     defaults: 7 rounds, 2 ranks, 64 MiB, 20 iterations, 1 warm-up call per size,
#     20000 iterations up to 64 KiB (sizes 8 B doubling to MAX_BYTES)
# Two sweeps a round, as two runs of each program: 8 B to 64 KiB at SMALL_ITERS calls a
# size, then 128 KiB to MAX_BYTES at ITERS. At 20 calls a size a small size is timed over
# 10 to 60 us, and one preemption of a rank on a busy two-core machine moved it by more
# than the 2% goal (medians 0.84 to 1.26 over four runs); at 20,000 the same comparison
# repeated within a few percent and found a real gap of 0.1 to 0.7 us a call.
# Like with like: the bare loop issues the calls fabric-nccltest -c 0 issues, in its order
# (-w calls at every size first, then per size out of place and in place, each after one
# untimed call and a barrier; only out of place is compared), each rank has a core of its
# own (more ranks than cores is refused: an oversubscribed Open MPI yields when idle and its
# figures measure the scheduler), both run on shared memory only (no TCP transport), and the order of the two
# alternates from round to round. Builds nothing: uses build/release (FABRIC_BUILD to
# change it). Run it on a quiet machine; it prints the load average at its start.
set -euo pipefail

ROUNDS=${1:-7}
RANKS=${2:-2}
MAX_BYTES=${3:-67108864}
ITERS=${4:-20}
WARMUP=${5:-1}
SMALL_ITERS=${6:-20000}
SMALL_MAX=65536
((MAX_BYTES > SMALL_MAX)) || SMALL_MAX=$MAX_BYTES
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
if ((RANKS > $(nproc))); then
  echo "nccltest_mpi_vs_bare.sh: $RANKS ranks on $(nproc) cores would be oversubscribed; use at most $(nproc)" >&2
  exit 2
fi
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
# Shared memory only, one rank per core, busy-polling as an MPI job on its own cores does.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader \
  OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_plm=isolated OMPI_MCA_mpi_yield_when_idle=0
launch=("$MPIRUN" -np "$RANKS" --bind-to core --map-by core)
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

# sweeps: "min max iters" of each sweep of a round, read on fd 3 (mpirun reads stdin).
sweeps() {
  echo 8 "$SMALL_MAX" "$SMALL_ITERS"
  ((MAX_BYTES > SMALL_MAX)) && echo $((SMALL_MAX * 2)) "$MAX_BYTES" "$ITERS"
  return 0
}
run_bare() {
  local min max iters
  while read -r -u 3 min max iters; do
    "${launch[@]}" "$BARE" "$min" "$max" "$iters" "$WARMUP" | awk -v r="$1" '{ print r, $1, $2 }' >>"$WORK/bare"
  done 3< <(sweeps)
}
# Out-of-place column, no data check; busbw is computed from the time per call with the same
# formula for both, so that the table's two decimals of GB/s do not hide small sizes.
run_nccltest() {
  local min max iters
  while read -r -u 3 min max iters; do
    "${launch[@]}" "$NCCLTEST" --backend mpi -b "$min" -e "$max" -f 2 -n "$iters" -w "$WARMUP" -c 0 |
      awk -v r="$1" '!/^#/ && NF == 13 { print r, $1, $6 }' >>"$WORK/nccltest"
  done 3< <(sweeps)
}

for ((round = 0; round < ROUNDS; round++)); do
  if ((round % 2 == 0)); then
    run_bare "$round"
    run_nccltest "$round"
  else
    run_nccltest "$round"
    run_bare "$round"
  fi
  first_row_us "${launch[@]}" "$BARE" 8 8 1 0 >>"$WORK/bare.start"
  first_row_us "${launch[@]}" "$NCCLTEST" --backend mpi -b 8 -e 8 -n 1 -w 0 -c 0 >>"$WORK/nccltest.start"
done

printf 'fabric-nccltest (mpi backend) against a bare MPI_Allreduce loop: %d ranks, float sum,\n' "$RANKS"
printf '%d iterations a size to %d B, %d above, %d warm-up calls per size, median of %d alternating rounds; load average %s\n' \
  "$SMALL_ITERS" "$SMALL_MAX" "$ITERS" "$WARMUP" "$ROUNDS" "$(cut -d' ' -f1-3 /proc/loadavg)"
summarize_allreduce "$WORK" "$RANKS"
summarize_best "$WORK"
summarize_rounds "$WORK"
# Each sweep on its own: a figure over both would hide what each can resolve.
for part in small large; do
  mkdir -p "$WORK/$part"
  for loop in bare nccltest; do
    awk -v m="$SMALL_MAX" -v p="$part" '(p == "small") == ($2 <= m)' "$WORK/$loop" >"$WORK/$part/$loop"
  done
  [[ -s $WORK/$part/bare ]] || continue
  if [[ $part == small ]]; then
    echo "sizes 8 B to $SMALL_MAX B, $SMALL_ITERS calls a size:"
  else
    echo "sizes above $SMALL_MAX B, $ITERS calls a size:"
  fi
  summarize_medians "$WORK/$part" | sed 's/^/  /'
  summarize_best "$WORK/$part" | sed 's/^/  /'
  summarize_rounds "$WORK/$part" | sed 's/^/  /'
done
bs=$(median <"$WORK/bare.start")
ns=$(median <"$WORK/nccltest.start")
awk -v bs="$bs" -v ns="$ns" -v r="$RANKS" 'BEGIN {
  printf "start-up to the first timed iteration, %d ranks: bare %.1f ms, nccltest %.1f ms, ratio %.2f\n", r, bs / 1e3, ns / 1e3, ns / bs
}'
