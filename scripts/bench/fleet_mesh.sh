#!/usr/bin/env bash
# fleet_mesh.sh - the fleet simulation (tests/netns/probe/fleet_netns_test.cpp) at several
# sizes: N agents in namespaces on simulated leaves of 8, every host link shaped to its
# share of 320 Mbit/s (at most 10 Mbit/s), a planted slow node found by `mesh --pattern
# ring` and a planted slow uplink found by `mesh --pattern cross-leaf`. Prints, per size
# and fault: the host rate, the pattern's and the follow-up rounds, the low results, wall
# time, the coordinator's CPU time and peak memory, and the verdict.
#
#   scripts/bench/fleet_mesh.sh [TEST_BINARY] [SIZES...]      (default sizes: 32 64 128 256)
# Needs root, and a machine running nothing else that creates namespaces.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TESTS=$(realpath "${1:-$ROOT/build/release/tests/fabric_probe_fleet_tests}")
shift || true
sizes=("$@")
((${#sizes[@]})) || sizes=(32 64 128 256)
[[ -x $TESTS ]] || { echo "fleet_mesh.sh: no test binary at $TESTS" >&2; exit 2; }

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
printf '%-6s %-9s %-7s %-11s %-8s %-9s %-4s %-7s %-8s %-9s %s\n' hosts rate_kbit fault pattern \
  p_rounds follow_up low wall_s cpu_s max_rss verdict
# A size that fails still prints its rows (each run prints its line before it is judged);
# its test output goes to stderr, and the script fails at the end.
failed=()
for n in "${sizes[@]}"; do
  out=$(FABRIC_FLEET_HOSTS=$n "$TESTS" --gtest_brief=1 2>&1) || {
    echo "$out" >&2
    failed+=("$n")
  }
  grep '^fleet:' <<<"$out" | while read -r line; do
    get() { sed -n "s/.* $1=\([^ \"]*\).*/\1/p" <<<"$line"; }
    verdict=$(sed -n 's/.*verdict="\([^"]*\)".*/\1/p' <<<"$line")
    printf '%-6s %-9s %-7s %-11s %-8s %-9s %-4s %-7s %-8s %-9s %s\n' "$(get hosts)" \
      "$(get rate_kbit)" "$(get fault)" "$(get pattern)" "$(get pattern_rounds)" \
      "$(get follow_up_rounds)" "$(get low_results)" "$(get wall_s)" "$(get coordinator_cpu_s)" \
      "$(get children_max_rss_kb)k" "${verdict%% (*}"
  done
done
if ((${#failed[@]})); then
  echo "fleet_mesh.sh: the simulation failed at ${failed[*]} hosts" >&2
  exit 1
fi
