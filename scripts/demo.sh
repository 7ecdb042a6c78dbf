#!/usr/bin/env bash
# demo.sh - fabrickit's main job, end to end on a machine without RDMA hardware: build,
# boot a two-node soft-RoCE lab (QEMU VMs with rdma_rxe on one private L2 segment), list
# each node's RDMA devices and the RoCE v2 GID of its address; then, from node 2, lint the
# node, probe TCP, RDMA bandwidth and latency against node 1's agent, and attach a pod to
# the RoCE network with fabric-cni (its GID proven, checked, detached).
#   scripts/demo.sh [--nodes N]     (default 2; 1 lists devices only)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
nodes=2
case "${1:-}" in
  "") ;;
  --nodes) nodes=${2:?--nodes needs a number} ;;
  -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "demo.sh: unknown argument '$1' (try --help)" >&2; exit 1 ;;
esac

say() { printf '\n== %s\n' "$*"; }

"$REPO/scripts/setup.sh"
say "building"
build=$("$REPO/scripts/build.sh" release)
probe=$build/probes/fabric-probe
"$probe" --version

say "this host (no RDMA hardware expected)"
"$probe" devices

say "booting a $nodes-node soft-RoCE lab: devices on every node; probes and a pod from node 2"
# Runs on every node; the lab prefixes each line with its node.
"$REPO/scripts/lab.sh" --nodes "$nodes" -- "$REPO/scripts/lab/demo-node.sh" \
  "$probe" "$build/cni/fabric-cni"
