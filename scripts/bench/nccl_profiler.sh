#!/usr/bin/env bash
# nccl_profiler.sh - what the NCCL profiler plugin costs per event, called through its
# ncclProfiler_v5 table exactly as NCCL calls it, beside a table of functions that do
# nothing (the floor: the indirect calls themselves). Prints medians over RUNS runs.
#
#   scripts/bench/nccl_profiler.sh [RUNS] [OPERATIONS] [THREADS]
# Needs a release tree with the plugin (scripts/build.sh release, NCCL found).
set -euo pipefail

RUNS=${1:-7}
OPERATIONS=${2:-2000000}
THREADS=${3:-1}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${FABRIC_BUILD_DIR:-$ROOT/build/release}
DRIVER=$BUILD/exporters/nccl_profiler/fabric-nccl-profiler-bench
PLUGIN=$BUILD/exporters/nccl_profiler/libnccl-profiler-fabric.so
for file in "$DRIVER" "$PLUGIN"; do
  [[ -e $file ]] || { echo "nccl_profiler.sh: $file is missing (scripts/build.sh release)" >&2; exit 2; }
done

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The plugin writes its file at finalize; the periodic flush stays out of the loop.
export FABRIC_NCCL_DIR=$WORK FABRIC_NCCL_FLUSH_S=3600

load=$(cut -d' ' -f1-3 /proc/loadavg)
for ((run = 0; run < RUNS; run++)); do
  "$DRIVER" "$PLUGIN" "$OPERATIONS" "$THREADS" >>"$WORK/samples"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
row() {
  local name=$1 label=$2 ours none
  ours=$(awk -v n="$name" '$1 == n {print $2}' "$WORK/samples" | median)
  none=$(awk -v n="$name" '$1 == n {print $3}' "$WORK/samples" | median)
  awk -v l="$label" -v o="$ours" -v z="$none" \
    'BEGIN {printf "| %s | %.1f ns | %.1f ns | %.1f ns |\n", l, o, z, o - z}'
}

echo "NCCL profiler plugin: median of $RUNS runs of $OPERATIONS operations, $THREADS thread(s);"
echo "load average $load before, $load_after after; $(nproc) CPUs"
echo
echo "| per operation | plugin | no-op table | plugin's own cost |"
echo "|---|---|---|---|"
row pair "Coll startEvent + stopEvent (goal < 200 ns)"
row collective "one collective: API, Group, Coll and 2 KernelCh events"
