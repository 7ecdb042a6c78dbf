#!/usr/bin/env bash
# demo.sh - fabrickit's main job, end to end on one machine without RDMA hardware.
#
# Installs what it needs, builds only the binaries the demo runs, boots a two-node
# soft-RoCE lab (QEMU VMs with rdma_rxe on one private L2 segment), and on that fabric:
# fabric-pfc plan/apply and fabric-probe lint on each node; a pod attached by fabric-cni as
# Multus would attach it; the probe agents (token and allow-list, as the DaemonSet runs
# them) with tcp, bw, lat and an all-pairs mesh; fabric-nccltest across the nodes;
# fabric-exporter on each node scraped by a real Prometheus. Then it tears everything
# down and writes a report folder: report.html (opens from disk), every step's log (logs/),
# JSON (json/) and record (steps/). Exits non-zero if any step failed.
#
#   scripts/demo.sh [--out DIR] [--nodes N]   (default build/demo-report, 2 nodes)
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$REPO/build/demo-report
nodes=2
while (($#)); do
  case $1 in
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --nodes) nodes=${2:?--nodes needs a number}; shift 2 ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo.sh: unknown argument '$1' (try --help)" >&2; exit 1 ;;
  esac
done
if ! [[ $nodes =~ ^[0-9]+$ ]] || ((nodes < 2 || nodes > 8)); then
  echo "demo.sh: --nodes must be 2 to 8 (the probes need a peer)" >&2
  exit 1
fi

# The binaries the demo runs, and nothing else: the test programs are test.sh's business.
readonly TARGETS=(fabric-probe fabric-cni fabric-pfc fabric-nccltest fabric-exporter)

# shellcheck source=scripts/lab/demo-lib.sh
source "$REPO/scripts/lab/demo-lib.sh"
START=$(demo_now)
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
export DEMO_STEPS=$out DEMO_WHERE=host
shared=$(mktemp -d)
trap 'rm -rf "$shared"' EXIT

# Prefixes each line of the lab with the time since the demo started, so the user sees
# which step runs and how long everything takes.
with_elapsed() {
  local line
  while IFS= read -r line; do printf '[%6ss] %s\n' "$(demo_elapsed "$START")" "$line"; done
}

build_demo() {
  local dir
  dir=$("$REPO/scripts/build.sh" release "${TARGETS[@]}") || return
  ln -sfn "$dir" "$shared/build"
}

run_lab() {
  mkdir -p "$shared/report"
  # The probe agents' token, as a Kubernetes Secret would hold it.
  (umask 077 && head -c 32 /dev/urandom | base64 >"$shared/agent-token")
  # The lab's own timeout bounds the whole run; the nodes' steps bound every wait.
  "$REPO/scripts/lab.sh" --nodes "$nodes" --timeout 900 --shared "$shared" -- \
    "$REPO/scripts/lab/demo-node.sh" "$(readlink -f "$shared/build")" "$REPO" 2>&1 | with_elapsed
  return "${PIPESTATUS[0]}"
}

step setup "installing what the demo needs (scripts/setup.sh --demo)" -- "$REPO/scripts/setup.sh" --demo
step build "building ${TARGETS[*]}" -- build_demo
if [[ -e $shared/build ]]; then
  step lab "the $nodes-node soft-RoCE lab booted and every node ran its steps" --live -- run_lab
  # The nodes' records join the host's; a node that never ran leaves a gap the report shows.
  cp -r "$shared/report/." "$out/" 2>/dev/null
fi

# The page counts this step too: its record is written once the page exists.
step report "writing report.html" -- "$REPO/scripts/lab/demo-report.sh" "$out" \
  "$(demo_elapsed "$START")" 1
failed=$(jq -s '[.[] | select(.verdict == "fail")] | length' "$out"/steps/*.json)
total=$(jq -s 'length' "$out"/steps/*.json)

printf '\n== fabrickit demo: %d steps, %d failed, %ss\n' "$total" "$failed" \
  "$(demo_elapsed "$START")"
jq -rs 'sort_by(.where, .seq)[] | "  \(.verdict | ascii_upcase | .[0:4])  \(.where)  \(.title)"' \
  "$out"/steps/*.json | grep -v '^  PASS' || echo "  every step passed"
printf 'report: %s/report.html\n' "$out"
((failed == 0))
